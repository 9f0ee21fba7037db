#!/usr/bin/env bash
# End-to-end test of the PostgreSQL results store through the real binary: run, results
# list/show/export/import/copy and store ids in compare against a throw-away server (the ctest
# fixture scripts/pg-test-server.sh; its settings in the file KSTACKLAB_TEST_PG_ENV names). A
# connection killed while `run` records its result; passwords never on a command line, in output
# or in a result file; a server that is down refused before measuring.
# Usage: bash store_pg.sh KSTACKLAB_BINARY DATA_DIR. Exit 77 without a server, unless
# KSTACKLAB_REQUIRE_PG=1.
. "$(dirname "$0")/lib.bash"
bin=$KSTACKLAB
export HOME="$TMP/home"
mkdir -p "$HOME"
unset KSTACKLAB_STORE
env_file=${KSTACKLAB_TEST_PG_ENV:-}
if [ -z "$env_file" ] || [ ! -f "$env_file" ]; then
  echo "no PostgreSQL test server (KSTACKLAB_TEST_PG_ENV): scripts/pg-test-server.sh starts one"
  [ "${KSTACKLAB_REQUIRE_PG:-0}" = 1 ] && exit 1
  exit 77
fi
# shellcheck disable=SC1090
. "$env_file"
export PGPASSFILE
psql=$KSTACKLAB_TEST_PG_PSQL
schema="e2e_$$"
sql() { "$psql" -X -q -t -A -v ON_ERROR_STOP=1 "$KSTACKLAB_TEST_PG_URL" -c "SET client_min_messages = warning" -c "$1"; }
admin() { "$psql" -X -q -t -A "$KSTACKLAB_TEST_PG_ADMIN" -c "$1"; }
sql "DROP SCHEMA IF EXISTS $schema CASCADE" && sql "CREATE SCHEMA $schema" || { echo "cannot make a schema"; exit 1; }
trap 'sql "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1; rm -rf "$TMP"' EXIT
url="$KSTACKLAB_TEST_PG_URL?options=-csearch_path%3D$schema"
count() { sql "SELECT count(*) FROM $schema.$1"; }
# Every command's stdout and stderr, searched for the password at the end.
keep() { cat "$TMP/out" "$TMP/err" >>"$TMP/all-output"; }

# 1. Reading an empty database creates nothing.
expect_exit 0 "list of an empty database" -- "$bin" results list --store "$url" && keep
[ -s "$TMP/out" ] && fail "list of an empty database printed: $(cat "$TMP/out")"
[ "$(sql "SELECT to_regclass('$schema.runs') IS NULL")" = t ] || fail "list created tables"

# 2. import, list, show, export, compare by store id.
base="$DATA/store-plot/baseline.json"
var="$DATA/store-plot/variant.json"
expect_exit 0 "import two files" -- "$bin" results import --store "$url" "$base" "$var" && keep
expect_stdout "imported $base as id 1" "import reports id 1"
expect_stdout "imported $var as id 2" "import reports id 2"
[ "$(count runs)" = 2 ] || fail "import: $(count runs) runs stored, want 2"
expect_exit 0 "list" -- "$bin" results list --store "$url" && keep
expect_stdout "rndstack-off" "list shows the first run"
expect_exit 0 "list --format json" -- "$bin" results list --store "$url" --format json && keep
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert [r["id"] for r in d]==[1,2], d' "$TMP/out" \
  || fail "list --format json: ids not [1, 2]"
expect_exit 0 "show 2" -- "$bin" results show 2 --store "$url" && keep
expect_stdout "store id 2: rndstack-on" "show names the run"
expect_exit 0 "export 1" -- "$bin" results export 1 -o "$TMP/e1.json" --store "$url" && keep
expect_exit 0 "the exported file reads back" -- "$bin" show "$TMP/e1.json"
expect_exit 0 "compare by store ids" -- "$bin" compare 1 2 --store "$url" && keep
expect_stdout "rndstack-off" "compare's table names the baseline"
expect_exit 2 "a missing id" -- "$bin" results show 9 --store "$url"
expect_stderr "no result with id 9 in $url" "a missing id names the store"

# 3. run records in the store; the message names the store id.
small=(--bench syscall/getpid --repetitions 2 --iterations 200 --warmup 10)
expect_exit 0 "run --store URL" -- "$bin" run "${small[@]}" --label pgrun -o "$TMP/r1.json" --store "$url" && keep
expect_stderr "recorded as store id 3 in $url" "run says where it is recorded"
[ "$(sql "SELECT label FROM $schema.runs WHERE id = 3")" = pgrun ] || fail "run's row is not id 3"

# 4. Refused before measuring: a password in the URL (exit 2), a parameter value libpq would
# refuse (exit 2, before connecting), a server that is down (exit 1).
pw_url="postgresql://kstacklab_test:$KSTACKLAB_TEST_PG_PASSWORD@${KSTACKLAB_TEST_PG_URL#*@}"
expect_exit 2 "run with a password in the URL" -- "$bin" run "${small[@]}" -o "$TMP/no1.json" --store "$pw_url"
keep
expect_stderr "put it in ~/.pgpass" "the password error names the pass file"
[ -e "$TMP/no1.json" ] && fail "a refused run wrote its file"
expect_exit 1 "run with a server that is down" -- "$bin" run "${small[@]}" -o "$TMP/no2.json" \
  --store "postgresql://kstacklab_test@127.0.0.1:1/kstacklab_test"
keep
expect_stderr "is the server running" "a server that is down is said so"
[ -e "$TMP/no2.json" ] && fail "a run refused for its store wrote its file"
for param in sslmode=junk connect_timeout=abc target_session_attrs=junk; do
  expect_exit 2 "run with ?$param" -- "$bin" run "${small[@]}" -o "$TMP/no3.json" --store "$url&$param"
  keep
  expect_stderr "the results store URL's ${param%%=*} is \"${param#*=}\": use " "?$param: the error names the parameter and its values"
  [ -e "$TMP/no3.json" ] && fail "a run refused for ?$param wrote its file"
  expect_exit 2 "results list with ?$param" -- "$bin" results list --store "$url&$param"
  keep
done
[ "$(count runs)" = 3 ] || fail "refused runs changed the store: $(count runs) runs"

# 5. The connection killed while run records: tried again on a new connection, and recorded once.
# Killed at every try: no partial run, the file kept, exit 1 with the error naming the file and
# the command that adds it later.
lock_benchmarks() {  # holds a lock the insert waits on, in the background; its pid in $locker
  PGAPPNAME=locker "$psql" -X -q "$KSTACKLAB_TEST_PG_URL" -c "BEGIN" -c "LOCK TABLE $schema.benchmarks IN ACCESS EXCLUSIVE MODE" -c "SELECT pg_sleep(60)" \
    >/dev/null 2>&1 &
  locker=$!
  for _ in $(seq 100); do
    [ "$(admin "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'locker' AND query LIKE '%pg_sleep%'")" = 1 ] && break
    sleep 0.1
  done
}
unlock_benchmarks() {
  admin "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'locker'" >/dev/null
  wait "$locker" 2>/dev/null
}
kill_waiting() {  # terminates the kstacklab sessions waiting on a lock; prints their pids
  # (in the select list, which is computed only for the rows the WHERE clause keeps)
  admin "SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'kstacklab' AND wait_event_type = 'Lock'" | cut -d'|' -f1
}
lock_benchmarks
"$bin" run "${small[@]}" --label retried -o "$TMP/retried.json" --store "$url" >"$TMP/out" 2>"$TMP/err" &
run=$!
killed=
for _ in $(seq 300); do   # the insert waits on the lock (lock_timeout 10 s): terminate it once
  killed=$(kill_waiting)
  [ -n "$killed" ] && break
  sleep 0.05
done
retried=
for _ in $(seq 300); do   # the next try waits on the lock too, on a new connection
  retried=$(admin "SELECT pid FROM pg_stat_activity WHERE application_name = 'kstacklab' AND wait_event_type = 'Lock' AND pid <> ${killed:-0}")
  [ -n "$retried" ] && break
  sleep 0.05
done
unlock_benchmarks
wait "$run"
rc=$?
keep
[ -n "$killed" ] || fail "the run's insert never waited on the lock"
[ -n "$retried" ] || fail "the insert was not tried again after its connection was killed"
[ "$rc" -eq 0 ] || fail "killed once: exit $rc, want 0 (tried again); stderr: $(cat "$TMP/err")"
expect_stderr "recorded as store id" "killed once: the run is recorded"
[ "$(sql "SELECT count(*) FROM $schema.runs WHERE label = 'retried'")" = 1 ] || fail "killed once: the run is not stored exactly once"
[ "$(count runs)" = 4 ] || fail "killed once: $(count runs) runs, want 4"

before_bench=$(count benchmarks)
lock_benchmarks
"$bin" run "${small[@]}" --label killed -o "$TMP/killed.json" --store "$url" >"$TMP/out" 2>"$TMP/err" &
run=$!
kills=0
while kill -0 "$run" 2>/dev/null; do   # every try's connection, until the run gives up
  [ -n "$(kill_waiting)" ] && kills=$((kills + 1))
  sleep 0.05
done
wait "$run"
rc=$?
unlock_benchmarks
keep
[ "$kills" -ge 4 ] || fail "killed at every try: only $kills tries were killed, want 4"
[ "$rc" -eq 1 ] || fail "killed at every try: exit $rc, want 1 (not recorded); stderr: $(cat "$TMP/err")"
expect_stderr "error: not recorded in the store" "killed at every try: the run says it is not in the store"
expect_stderr "connection to the server was lost" "killed at every try: says why"
expect_stderr "tried 4 times" "killed at every try: says how often it tried"
expect_stderr "kstacklab results import $TMP/killed.json --store $url" "killed at every try: the command that adds it"
expect_exit 0 "killed at every try: the result file was written" -- "$bin" show "$TMP/killed.json"
[ "$(count runs)" = 4 ] || fail "killed at every try: $(count runs) runs, want 4 (no partial run)"
[ "$(count benchmarks)" = "$before_bench" ] || fail "killed at every try: benchmark rows changed"
[ "$(sql "SELECT count(*) FROM $schema.runs WHERE label = 'killed'")" = 0 ] || fail "the killed run is visible"
expect_exit 0 "the kept file imports afterwards" -- "$bin" results import "$TMP/killed.json" --store "$url" && keep
expect_stdout "as id" "import of the kept file"

# 6. results copy PostgreSQL -> SQLite -> PostgreSQL, twice each: no duplicates.
db="$TMP/copy.db"
expect_exit 0 "copy to SQLite" -- "$bin" results copy --from "$url" --to "$db" && keep
[ "$(grep -c '^copied id' "$TMP/out")" = 5 ] || fail "copy: $(cat "$TMP/out")"
expect_exit 0 "copy to SQLite again" -- "$bin" results copy --from "$url" --to "$db" && keep
[ -s "$TMP/out" ] && fail "a second copy copied: $(cat "$TMP/out")"
expect_stderr "copied 0 run(s)" "a second copy says it copied none"
expect_exit 0 "copy back" -- "$bin" results copy --from "$db" --to "$url" && keep
expect_exit 0 "copy back again" -- "$bin" results copy --from "$db" --to "$url" && keep
[ "$(count runs)" = 5 ] || fail "copies both ways: $(count runs) runs, want 5"
expect_exit 2 "copy onto itself" -- "$bin" results copy --from "$url" --to "$url"
keep
expect_exit 2 "copy from a missing store" -- "$bin" results copy --from "$TMP/none.db" --to "$url"
keep
expect_stderr "--from:" "copy's error names the flag"

# 7. KSTACKLAB_STORE names the default store.
expect_exit 0 "KSTACKLAB_STORE as the default" -- env KSTACKLAB_STORE="$url" "$bin" results list && keep
expect_stdout "pgrun" "the default store is the URL"

# 8. The password is nowhere: not in any output, result file or stored document.
if grep -rlF -- "$KSTACKLAB_TEST_PG_PASSWORD" "$TMP" 2>/dev/null | grep -q .; then
  fail "the password appears in: $(grep -rlF -- "$KSTACKLAB_TEST_PG_PASSWORD" "$TMP")"
else
  pass "the password is in no output or file"
fi
[ "$(sql "SELECT count(*) FROM $schema.runs WHERE document LIKE '%$KSTACKLAB_TEST_PG_PASSWORD%'")" = 0 ] \
  || fail "a stored document holds the password"
finish
