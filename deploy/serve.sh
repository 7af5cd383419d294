#!/usr/bin/env bash
# `make serve`: catalake as Dagster's deployment guide runs it, on this machine: a PostgreSQL of
# its own (deploy/postgres.sh), the instance of deploy/dagster.yaml, the daemon (schedules,
# sensors, backfills, the run queue) and the webserver. Ctrl-C stops all three;
# `make serve-stop` stops what a backgrounded `make serve` left.
#   deploy/serve.sh start|stop      (BIN: the environment's bin folder, default .venv/bin)
set -euo pipefail
cmd=${1:-start}
state=$(realpath -m "${CATALAKE_SERVE_DIR:-.catalake/serve}")
port=${CATALAKE_PG_PORT:-5433}
ui=${CATALAKE_UI_PORT:-3000}
bin=${BIN:-.venv/bin}
export DAGSTER_HOME=$state/dagster_home DAGSTER_PG_HOST=127.0.0.1 DAGSTER_PG_PORT=$port DAGSTER_PG_USERNAME=catalake \
  DAGSTER_PG_PASSWORD=catalake DAGSTER_PG_DB=dagster DAGSTER_COMPUTE_LOGS=$state/dagster_home/compute_logs

stop() {
  [ -f "$state/daemon.pid" ] && kill "$(cat "$state/daemon.pid")" 2>/dev/null || true
  rm -f "$state/daemon.pid"
  bash deploy/postgres.sh stop "$state/postgres"
}

case "$cmd" in
  start)
    mkdir -p "$DAGSTER_HOME"
    bash deploy/postgres.sh start "$state/postgres" "$port"
    cp deploy/dagster.yaml "$DAGSTER_HOME/dagster.yaml"
    "$bin/dagster-daemon" run -w workspace.yaml >"$state/daemon.log" 2>&1 &
    echo $! >"$state/daemon.pid"
    trap stop EXIT
    echo "dagster-daemon running (log: $state/daemon.log); the UI: http://127.0.0.1:$ui (Ctrl-C stops everything)"
    "$bin/dagster-webserver" -w workspace.yaml -h 127.0.0.1 -p "$ui"
    ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
