#!/usr/bin/env bash
# `make serve`: catalake as Dagster's deployment guide runs it, on this machine: a PostgreSQL of
# its own (deploy/postgres.sh), a warm Spark Connect server every run connects to
# (deploy/spark-connect.sh; not started when CATALAKE_SPARK_MASTER is already a sc:// URL), the
# instance of deploy/dagster.yaml, the daemon (schedules, sensors, backfills, the run queue) and
# the webserver. Ctrl-C stops them all; `make serve-stop` stops what a backgrounded `make serve` left.
#   deploy/serve.sh start|stop      (BIN: the environment's bin folder, default .venv/bin)
set -euo pipefail
cmd=${1:-start}
state=$(realpath -m "${CATALAKE_SERVE_DIR:-.catalake/serve}")
port=${CATALAKE_PG_PORT:-5433}
ui=${CATALAKE_UI_PORT:-3000}
spark_port=${CATALAKE_SPARK_CONNECT_PORT:-15002}
spark_ui=${CATALAKE_SPARK_UI_PORT:-4040}
bin=${BIN:-.venv/bin}
export DAGSTER_HOME=$state/dagster_home DAGSTER_PG_HOST=127.0.0.1 DAGSTER_PG_PORT=$port DAGSTER_PG_USERNAME=catalake \
  DAGSTER_PG_PASSWORD=catalake DAGSTER_PG_DB=dagster DAGSTER_COMPUTE_LOGS=$state/dagster_home/compute_logs

stop() {
  [ -f "$state/daemon.pid" ] && kill "$(cat "$state/daemon.pid")" 2>/dev/null || true
  rm -f "$state/daemon.pid"
  BIN=$bin bash deploy/spark-connect.sh stop "$state/spark-connect"
  bash deploy/postgres.sh stop "$state/postgres"
}

case "$cmd" in
  start)
    mkdir -p "$DAGSTER_HOME"
    trap stop EXIT
    bash deploy/postgres.sh start "$state/postgres" "$port"
    cp deploy/dagster.yaml "$DAGSTER_HOME/dagster.yaml"
    case "${CATALAKE_SPARK_MASTER:-}" in
      sc://*) echo "runs connect to the Spark Connect server $CATALAKE_SPARK_MASTER" ;;
      *) BIN=$bin bash deploy/spark-connect.sh start "$state/spark-connect" "$spark_port" "$spark_ui"
         export CATALAKE_SPARK_MASTER=sc://127.0.0.1:$spark_port ;;
    esac
    # the code location's state, what every load of it reads (the daemon's, the webserver's, each run's)
    "$bin/catalake" state || echo "catalake state: see above; the code location reads its catalog as it loads"
    "$bin/dagster-daemon" run -w workspace.yaml >"$state/daemon.log" 2>&1 &
    echo $! >"$state/daemon.pid"
    echo "dagster-daemon running (log: $state/daemon.log); the UI: http://127.0.0.1:$ui (Ctrl-C stops everything)"
    "$bin/dagster-webserver" -w workspace.yaml -h 127.0.0.1 -p "$ui"
    ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
