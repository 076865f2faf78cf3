#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests and benches.
#   .ci/pg_cluster.sh start DIR   → initdb in DIR, start on a free loopback port, print its URL
#   .ci/pg_cluster.sh stop DIR    → stop the cluster in DIR and delete DIR
# DIR should be a new path inside a fresh temp dir. The server runs as the `postgres` user when started by root (initdb refuses root), listens on
# 127.0.0.1 only, keeps its socket in DIR, and trusts local connections (it is a test cluster).
set -euo pipefail
cmd=${1:?usage: pg_cluster.sh start|stop DIR}
dir=${2:?usage: pg_cluster.sh start|stop DIR}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
  echo "pg_cluster.sh: PostgreSQL is not installed (apt-get install -y postgresql)" >&2
  exit 2
fi
as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
case "$cmd" in
  start)
    mkdir -p "$dir"
    if [ "$(id -u)" = 0 ]; then
      # The server user must reach DIR: let it traverse (not list) DIR's parent, a temp dir.
      chmod o+x "$(dirname "$dir")"
      chown postgres "$dir"
    fi
    as_owner "$bin/initdb" -D "$dir/data" -U postgres -A trust --no-sync >"$dir/initdb.log" 2>&1 || {
      cat "$dir/initdb.log" >&2
      exit 1
    }
    # A free port: bind port 0, read what the kernel chose, release it (a race is unlikely).
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null ||
      node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 -o \
      "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=on -c max_connections=200" start >/dev/null || {
      cat "$dir/server.log" >&2
      exit 1
    }
    echo "postgres://postgres@127.0.0.1:$port/postgres"
    ;;
  stop)
    if [ -d "$dir/data" ]; then as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true; fi
    rm -rf "$dir"
    ;;
  *)
    echo "usage: pg_cluster.sh start|stop DIR" >&2
    exit 2
    ;;
esac
