#!/usr/bin/env bash
# A warm Spark for the deployment: a Spark Connect server started with pyspark's own launcher
# (bin/spark-submit of the environment's pyspark, class SparkConnectServer), on the loopback.
# Runs then connect to it (CATALAKE_SPARK_MASTER=sc://127.0.0.1:PORT) instead of starting a JVM
# each. Its master is CATALAKE_SPARK_MASTER when that names one (local[*], spark://..., yarn),
# else local[*]; CATALAKE_SPARK_CONF is passed on. Used by `make serve`, a benchmark and a test.
#   deploy/spark-connect.sh start DIR PORT [UI_PORT]   start (log and pid in DIR), wait until it
#                                                     answers, warm its Python workers
#   deploy/spark-connect.sh stop DIR
set -euo pipefail
cmd=${1:?start or stop}
dir=$(realpath -m "${2:-.catalake/spark-connect}")
port=${3:-15002}
ui=${4:-4040}
bin=$(realpath -m "${BIN:-.venv/bin}")

stop() {
  if [ -f "$dir/server.pid" ]; then
    pid=$(cat "$dir/server.pid")
    kill -- "-$pid" 2>/dev/null || true  # the launcher's process group: spark-submit and its JVM
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -9 -- "-$pid" 2>/dev/null || true
    rm -f "$dir/server.pid"
  fi
}

case "$cmd" in
  start)
    mkdir -p "$dir"
    stop
    spark_home=$("$bin/python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')
    master=${CATALAKE_SPARK_MASTER:-local[*]}
    case "$master" in sc://*) master='local[*]' ;; esac
    conf=()
    for pair in ${CATALAKE_SPARK_CONF:-}; do conf+=(--conf "$pair"); done
    # the server's Python workers run catalake's classifier: this environment's interpreter
    SPARK_HOME=$spark_home PYSPARK_PYTHON=$bin/python SPARK_LOCAL_IP=127.0.0.1 setsid \
      "$spark_home/bin/spark-submit" --class org.apache.spark.sql.connect.service.SparkConnectServer \
      --name "catalake Spark Connect" --master "$master" --driver-memory 1g \
      --conf spark.connect.grpc.binding.address=127.0.0.1 --conf spark.connect.grpc.binding.port="$port" \
      --conf spark.ui.port="$ui" --conf spark.sql.session.timeZone=UTC --conf spark.ui.showConsoleProgress=false \
      "${conf[@]}" >"$dir/server.log" 2>&1 </dev/null &
    echo $! >"$dir/server.pid"
    for _ in $(seq 1 240); do
      grep -q "Spark Connect server started" "$dir/server.log" 2>/dev/null && break
      kill -0 "$(cat "$dir/server.pid")" 2>/dev/null || { tail -20 "$dir/server.log" >&2; exit 1; }
      sleep 0.5
    done
    grep -q "Spark Connect server started" "$dir/server.log" || { echo "Spark Connect did not start: $dir/server.log" >&2; stop; exit 1; }
    # one tiny job over every core: the server's Python workers start and import catalake now
    "$bin/python" -c "from catalake.platform.runs.tasks import warm_up; from catalake.platform.spark import build_session; warm_up(build_session('sc://127.0.0.1:$port'))"
    echo "Spark Connect on sc://127.0.0.1:$port (master $master; Spark UI http://127.0.0.1:$ui; log $dir/server.log)"
    ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop DIR [PORT [UI_PORT]]" >&2; exit 2 ;;
esac
