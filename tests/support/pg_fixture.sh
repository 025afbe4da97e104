#!/usr/bin/env bash
# A throwaway PostgreSQL 15 server on loopback for the test run:
#   pg_fixture.sh start DIR   initdb into a fresh directory under /tmp (the
#                             postgres user must reach it, and a checkout may sit
#                             under a private directory), start on a free port,
#                             write the port to DIR/port and the data directory
#                             to DIR/datadir
#   pg_fixture.sh start DIR PORT   the same on a given port
#   pg_fixture.sh stop DIR    stop it (immediate) and remove DIR
#   pg_fixture.sh pause DIR   stop the server (immediate: connections break as
#                             in a crash) but keep its data, port and DIR
#   pg_fixture.sh resume DIR  start a paused server again on the same port
# PostgreSQL refuses to run as root, so as root it runs as the `postgres` user
# (created by Debian's postgresql package). Tests create one fresh database
# each and drop it (tests/support/postgres_instance.h).
set -euo pipefail
cmd=${1:?start|stop|pause|resume}
dir=${2:?directory}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
pg_start() {  # DATA PORT
  as_pg "$bin/pg_ctl" -D "$1" -l "$(dirname "$1")/server.log" -w -t 60 \
    -o "-p $2 -c listen_addresses=127.0.0.1 -k $1 -c fsync=off -c max_connections=200" start >/dev/null
}
case "$cmd" in
  start)
    if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
      echo "pg_fixture: PostgreSQL is not installed (scripts/setup --tests installs it)" >&2
      exit 0  # the tests then skip with a message
    fi
    if [ -f "$dir/port" ]; then "$0" stop "$dir" || true; fi
    rm -rf "$dir" && mkdir -p "$dir"
    root=$(mktemp -d /tmp/pagoda-pg.XXXXXX)
    chmod 755 "$root"
    data="$root/data"
    mkdir -p "$data"
    if [ "$(id -u)" = 0 ]; then chown -R postgres "$root"; fi
    echo "$data" >"$dir/datadir"
    as_pg "$bin/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --no-instructions >"$dir/initdb.log" 2>&1
    port=${3:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')}
    pg_start "$data" "$port"
    echo "$port" >"$dir/port"
    ;;
  pause)
    as_pg "$bin/pg_ctl" -D "$(cat "$dir/datadir")" -m immediate -w stop >/dev/null
    ;;
  resume)
    pg_start "$(cat "$dir/datadir")" "$(cat "$dir/port")"
    ;;
  stop)
    if [ -f "$dir/datadir" ]; then
      data=$(cat "$dir/datadir")
      if [ -n "$bin" ] && [ -d "$data" ]; then
        as_pg "$bin/pg_ctl" -D "$data" -m immediate -w stop >/dev/null 2>&1 || true
      fi
      case "$data" in /tmp/pagoda-pg.*/data) rm -rf "$(dirname "$data")" ;; esac
    fi
    rm -rf "$dir"
    ;;
  *) echo "pg_fixture: start DIR [PORT] | stop DIR | pause DIR | resume DIR" >&2; exit 2 ;;
esac
