#!/usr/bin/env bash
# A PostgreSQL server of catalake's own, from Debian's `postgresql` package (installed here when
# missing and we are root): its data in a folder of its own (never the system cluster), on the
# loopback only, trusting local connections. Used by `make serve` and the tests.
#   deploy/postgres.sh start DIR PORT     initialise DIR if new, start, create the database `dagster`
#   deploy/postgres.sh stop DIR
set -euo pipefail
cmd=${1:?start or stop}
dir=$(realpath -m "${2:-.catalake/postgres}")
port=${3:-5433}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
if [ -z "$bin" ] && [ "$(id -u)" = 0 ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql >/dev/null 2>&1 || {
    apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql >/dev/null; }
  bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
fi
[ -n "$bin" ] || { echo "PostgreSQL is not installed: apt-get install postgresql (as root)" >&2; exit 1; }

# the server refuses to run as root: as root, it runs as Debian's `postgres` user
owner() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

case "$cmd" in
  start)
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres "$dir" && chmod 700 "$dir"
    [ -f "$dir/PG_VERSION" ] || owner "$bin/initdb" -D "$dir" -U catalake --auth=trust -E UTF8 >/dev/null
    if ! owner "$bin/pg_ctl" -D "$dir" status >/dev/null 2>&1; then
      owner "$bin/pg_ctl" -D "$dir" -l "$dir/server.log" -w -t 60 \
        -o "-p $port -k $dir -c listen_addresses=127.0.0.1" start >/dev/null
    fi
    owner "$bin/psql" -h 127.0.0.1 -p "$port" -U catalake -d postgres -tAc \
      "SELECT 1 FROM pg_database WHERE datname = 'dagster'" | grep -q 1 ||
      owner "$bin/createdb" -h 127.0.0.1 -p "$port" -U catalake dagster
    echo "PostgreSQL on 127.0.0.1:$port (data in $dir), database dagster, user catalake"
    ;;
  stop)
    [ -f "$dir/postmaster.pid" ] && owner "$bin/pg_ctl" -D "$dir" -m fast -w stop >/dev/null || true
    ;;
  *) echo "usage: $0 start|stop DIR [PORT]" >&2; exit 2 ;;
esac
