#!/usr/bin/env bash
# A throw-away PostgreSQL server for the store tests (never a real one): Debian's postgresql
# binaries, a cluster in a fresh private directory under /tmp, listening on 127.0.0.1 (a free
# port) and on a Unix socket in that directory, with password (SCRAM) authentication for the test
# role, whose password is only in a pgpass file (what libpq reads: the URL never holds it).
#
#   scripts/pg-test-server.sh start ENV_FILE   start it; write ENV_FILE (shell assignments:
#                                              KSTACKLAB_TEST_PG_URL, PGPASSFILE, the admin
#                                              connection, the cluster directory)
#   scripts/pg-test-server.sh stop ENV_FILE    stop it and remove the cluster and ENV_FILE
#
# Exit 77 when the PostgreSQL server binaries are not installed (scripts/install-deps.sh --test installs
# them), unless KSTACKLAB_REQUIRE_PG=1 (CI), which makes that a failure. As root the server runs
# as the `postgres` user (initdb refuses root); otherwise as the caller.
set -euo pipefail
cmd=${1:-}
env_file=${2:-}
if [ -z "$cmd" ] || [ -z "$env_file" ] || [ $# -ne 2 ]; then
  echo "usage: scripts/pg-test-server.sh start|stop ENV_FILE" >&2
  exit 2
fi

as_owner() {  # runs a server command as the cluster's owner
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

if [ "$cmd" = stop ]; then
  [ -f "$env_file" ] || exit 0
  # shellcheck disable=SC1090
  . "$env_file"
  as_owner "$KSTACKLAB_TEST_PG_BIN/pg_ctl" -D "$KSTACKLAB_TEST_PG_DIR/data" -m immediate -w stop \
    >/dev/null 2>&1 || true
  rm -rf "$KSTACKLAB_TEST_PG_DIR"
  rm -f "$env_file"
  exit 0
fi
[ "$cmd" = start ] || { echo "pg-test-server.sh: unknown command '$cmd' (start or stop)" >&2; exit 2; }

bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
  echo "pg-test-server.sh: no PostgreSQL server binaries (Debian package postgresql; scripts/install-deps.sh --test installs it)" >&2
  [ "${KSTACKLAB_REQUIRE_PG:-0}" = 1 ] && exit 1
  exit 77
fi
if [ "$(id -u)" -eq 0 ] && ! id postgres >/dev/null 2>&1; then
  echo "pg-test-server.sh: running as root needs the 'postgres' user (Debian's postgresql package makes it)" >&2
  exit 1
fi
# A leftover from a run that was killed: stop it first.
"$0" stop "$env_file"

dir=$(mktemp -d /tmp/kstacklab-pg-XXXXXX)
chmod 0700 "$dir"
[ "$(id -u)" -eq 0 ] && chown postgres: "$dir"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
password=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
pwfile="$dir/admin.pw"
head -c 18 /dev/urandom | base64 | tr -d '/+=' >"$pwfile"
[ "$(id -u)" -eq 0 ] && chown postgres: "$pwfile"
as_owner "$bin/initdb" -D "$dir/data" -U pgadmin --pwfile="$pwfile" -E UTF8 --locale=C.UTF-8 \
  --auth=scram-sha-256 >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
cat >>"$dir/data/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
max_connections = 60
fsync = off
EOF
as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null \
  || { cat "$dir/server.log" >&2; exit 1; }

# The client side belongs to the caller: a pgpass file of its own (libpq refuses one others can
# read), holding the test role's password and the administrator's.
client="$dir/client"
mkdir -p "$client"
[ "$(id -u)" -eq 0 ] && chown postgres: "$dir" && chmod 0711 "$dir"
chown "$(id -u):$(id -g)" "$client"
chmod 0700 "$client"
cat >"$client/pgpass" <<EOF
127.0.0.1:$port:*:kstacklab_test:$password
127.0.0.1:$port:*:kstacklab_reader:$password
$dir:$port:*:pgadmin:$(cat "$pwfile")
127.0.0.1:$port:*:pgadmin:$(cat "$pwfile")
EOF
chmod 0600 "$client/pgpass"
admin="host=$dir port=$port user=pgadmin dbname=postgres"
PGPASSFILE="$client/pgpass" psql -v ON_ERROR_STOP=1 -q "$admin" <<EOF >/dev/null
CREATE ROLE kstacklab_test LOGIN PASSWORD '$password';
CREATE ROLE kstacklab_reader LOGIN PASSWORD '$password';
CREATE DATABASE kstacklab_test OWNER kstacklab_test ENCODING 'UTF8' TEMPLATE template0;
CREATE DATABASE kstacklab_latin1 OWNER kstacklab_test ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0;
EOF
psql=$(command -v psql || echo "$bin/psql")
umask 077
cat >"$env_file" <<EOF
KSTACKLAB_TEST_PG_DIR='$dir'
KSTACKLAB_TEST_PG_BIN='$bin'
KSTACKLAB_TEST_PG_PSQL='$psql'
KSTACKLAB_TEST_PG_URL='postgresql://kstacklab_test@127.0.0.1:$port/kstacklab_test'
KSTACKLAB_TEST_PG_READER_URL='postgresql://kstacklab_reader@127.0.0.1:$port/kstacklab_test'
KSTACKLAB_TEST_PG_LATIN1_URL='postgresql://kstacklab_test@127.0.0.1:$port/kstacklab_latin1'
KSTACKLAB_TEST_PG_ADMIN='$admin'
KSTACKLAB_TEST_PG_PASSWORD='$password'
PGPASSFILE='$client/pgpass'
EOF
echo "pg-test-server.sh: PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port (cluster $dir)"
