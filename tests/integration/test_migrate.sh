#!/usr/bin/env bash
# test_migrate.sh - cc-migrate end to end, through the real binary.
#
# Each case makes its own scratch database (CREATE DATABASE via
# CC_TEST_PG_ADMIN_DSN) and, when it edits migrations, its own copy of the
# migrations directory; everything is dropped at exit. Expected migration
# names come from the files, so new migrations do not break this test.
#
# The DSN carries a password (ignored: the harness trusts local users) so
# every run can check that no output ever contains it.
#
# On failure the script prints the case, the failing command or comparison
# (expected vs seen) and the last cc-migrate stdout/stderr.
set -Eeuo pipefail

: "${CC_TEST_PG_ADMIN_DSN:?run under tests/harness/with-services.sh}"
: "${CC_TEST_PG_BIN:?run under tests/harness/with-services.sh}"
top=${CC_TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
bin=$top/build/bin/cc-migrate
psql=$CC_TEST_PG_BIN/psql
pg_dump=$CC_TEST_PG_BIN/pg_dump
secret="pw-Zq8s3cret-$RANDOM"
work=$(mktemp -d "${CC_TEST_TMP:-${TMPDIR:-/tmp}}/test_migrate.XXXXXX")
dbs=()
case_name="(setup)"
checks=0
DSN=""
MRC=0

show_last() {
	local f
	for f in out err; do
		if [[ -s "$work/$f" ]]; then
			echo "---- last cc-migrate std$f ----"
			sed 's/^/    /' "$work/$f"
		fi
	done
}

on_err() {
	local rc=$1 line=$2 cmd=$3
	trap - ERR
	echo "FAIL [$case_name] line $line: command exited $rc: $cmd"
	show_last
	exit 1
}
trap 'on_err $? $LINENO "$BASH_COMMAND"' ERR

cleanup() {
	local db
	for db in "${dbs[@]}"; do
		"$psql" -qAtX "$CC_TEST_PG_ADMIN_DSN" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
	done
	rm -rf "$work"
}
trap cleanup EXIT

fail() {
	trap - ERR
	echo "FAIL [$case_name]: $*"
	show_last
	exit 1
}

ok() { checks=$((checks + 1)); }

expect_eq() { # WHAT EXPECTED SEEN
	[[ "$2" == "$3" ]] || fail "$1: expected [$2], saw [$3]"
	ok
}

expect_has() { # WHAT TEXT NEEDLE
	[[ "$2" == *"$3"* ]] || fail "$1: expected it to contain [$3], saw [$2]"
	ok
}

expect_lacks() { # WHAT TEXT NEEDLE
	[[ "$2" != *"$3"* ]] || fail "$1: expected no [$3], saw [$2]"
	ok
}

begin() { case_name=$1; echo "case: $1"; }

# new_db: creates a scratch database and points DSN at it.
new_db() {
	local db="mig_$$_${#dbs[@]}_$RANDOM"
	"$psql" -qAtX -v ON_ERROR_STOP=1 "$CC_TEST_PG_ADMIN_DSN" -c "CREATE DATABASE $db" >/dev/null
	dbs+=("$db")
	DSN="postgresql://cc:$secret@127.0.0.1:$CC_TEST_PG_PORT/$db"
}

q() { "$psql" -qAtX -v ON_ERROR_STOP=1 "$DSN" -c "$1"; }

# migrate DIR ARGS...: runs cc-migrate with the DSN in the environment (it is
# a secret: never a flag); MRC, $work/out, $work/err hold the outcome.
migrate() {
	local dir=$1
	shift
	MRC=0
	COSMIC_CLASH_DATABASE_URL="$DSN" COSMIC_CLASH_MIGRATIONS_DIR="$dir" \
		"$bin" "$@" >"$work/out" 2>"$work/err" || MRC=$?
	expect_lacks "output of cc-migrate $*" "$(cat "$work/out" "$work/err")" "$secret"
}

# copy_migrations NAME: a private copy of the repository's migrations.
copy_migrations() {
	rm -rf "${work:?}/$1"
	cp -r "$top/migrations" "$work/$1"
	echo "$work/$1"
}

# dump: schema and data (seed rows such as state_transitions matter), minus
# schema_migrations rows (applied_at differs) and pg_dump's per-run random
# \restrict key.
dump() {
	"$pg_dump" --exclude-table-data=schema_migrations "$DSN" | grep -Ev '^\\(un)?restrict '
}

# same_dump WHAT A B: fails showing the diff when the dumps differ.
same_dump() {
	diff -u "$2" "$3" >"$work/dump.diff" || { cat "$work/dump.diff"; fail "$1 (diff above)"; }
	ok
}

migrations=$(cd "$top/migrations" && ls -1 ./*.up.sql | sed -E 's#^\./##; s#\.up\.sql$##' | sort)
n_total=$(wc -l <<<"$migrations")
[[ $n_total -ge 2 ]] || fail "expected at least 2 migrations in $top/migrations, found $n_total"
expected_up=$(sed 's/^/applied /' <<<"$migrations")
expected_down=$(sort -r <<<"$migrations" | sed 's/^/rolled back /')
expected_rows=$(cd "$top/migrations" && for f in $(ls -1 ./*.up.sql | sort); do
	b=$(basename "$f" .up.sql)
	echo "$((10#${b%%_*}))|${b#*_}|$(sha256sum <"$f" | cut -d' ' -f1)"
done)

begin "up on an empty database, then again"
new_db
migrate "$top/migrations" up
expect_eq "exit status of up" 0 "$MRC"
expect_eq "progress lines of up" "$expected_up" "$(cat "$work/out")"
expect_eq "schema_migrations (version|name|sha256sum of the up file)" "$expected_rows" \
	"$(q 'SELECT version, name, checksum FROM schema_migrations ORDER BY version')"
migrate "$top/migrations" up
expect_eq "exit status of a second up" 0 "$MRC"
expect_eq "second up output" "nothing to apply: $n_total migrations applied" "$(cat "$work/out")"
migrate "$top/migrations" status
expect_eq "exit status of status" 0 "$MRC"
expect_eq "status labels" "$(sed 's/^/applied /' <<<"$migrations")" \
	"$(sed '$d' "$work/out" | awk '{print $1, $2}')"
expect_eq "status total" "$n_total applied, 0 pending, 0 problems" "$(tail -n 1 "$work/out")"

begin "each down step restores exactly the database before its up; re-up is identical"
new_db
full_dsn=$DSN
migrate "$top/migrations" up
expect_eq "exit status of up" 0 "$MRC"
dump >"$work/full.sql"
for k in $(seq 1 "$n_total"); do
	DSN=$full_dsn
	migrate "$top/migrations" down 1
	expect_eq "exit status of down 1 (step $k)" 0 "$MRC"
	expect_eq "down 1 (step $k) progress" "$(sed -n "${k}p" <<<"$expected_down")" "$(cat "$work/out")"
	dump >"$work/after_down_$k.sql"
	# The reference: a fresh database given only the migrations still applied.
	rm -rf "$work/prefix" && mkdir "$work/prefix"
	for m in $(head -n $((n_total - k)) <<<"$migrations"); do
		cp "$top/migrations/$m".*.sql "$work/prefix/"
	done
	new_db
	migrate "$work/prefix" up
	expect_eq "exit status of up of the first $((n_total - k)) migrations" 0 "$MRC"
	dump >"$work/prefix_$k.sql"
	same_dump "after rolling back $k step(s): differs from a database with only the first $((n_total - k)) applied" \
		"$work/prefix_$k.sql" "$work/after_down_$k.sql"
done
DSN=$full_dsn
expect_eq "CREATE statements left after rolling everything back" "CREATE TABLE public.schema_migrations (" \
	"$(grep -E '^CREATE ' "$work/after_down_$n_total.sql" || true)"
expect_eq "relations left after rolling everything back" "schema_migrations|r
schema_migrations_pkey|i" "$(q "SELECT c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
	WHERE n.nspname = 'public' ORDER BY 1")"
expect_eq "functions left after rolling everything back" "0" \
	"$(q "SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public'")"
expect_eq "schema_migrations rows after rolling everything back" "0" "$(q 'SELECT count(*) FROM schema_migrations')"
migrate "$top/migrations" up
expect_eq "exit status of re-up" 0 "$MRC"
dump >"$work/again.sql"
same_dump "schema after re-up differs from after the first up" "$work/full.sql" "$work/again.sql"
migrate "$top/migrations" down all
expect_eq "exit status of down all" 0 "$MRC"
expect_eq "down all progress, newest first" "$expected_down" "$(cat "$work/out")"
dump >"$work/down_all.sql"
same_dump "down all differs from rolling back one step at a time" "$work/after_down_$n_total.sql" "$work/down_all.sql"
migrate "$top/migrations" status
expect_eq "status after down all" "0 applied, $n_total pending, 0 problems" "$(tail -n 1 "$work/out")"

begin "an edited, already applied migration is refused and nothing changes"
dir=$(copy_migrations edited)
new_db
migrate "$dir" up
expect_eq "exit status of up" 0 "$MRC"
printf '\n-- an innocent-looking edit\n' >>"$dir/0002_tickets.up.sql"
printf 'CREATE TABLE must_not_exist (x int);\n' >"$dir/9000_after_edit.up.sql"
dump >"$work/before.sql"
migrate "$dir" up
expect_eq "exit status of up over an edited migration" 1 "$MRC"
expect_has "stderr" "$(cat "$work/err")" "cc-migrate: migration 0002_tickets.up.sql was edited after it was applied (checksum"
expect_eq "stdout (nothing applied)" "" "$(cat "$work/out")"
dump >"$work/after.sql"
same_dump "the database changed although up was refused" "$work/before.sql" "$work/after.sql"
expect_eq "the pending migration was not applied" "" "$(q "SELECT to_regclass('must_not_exist')")"
migrate "$dir" status
expect_eq "exit status of status with an edit" 1 "$MRC"
expect_has "status" "$(cat "$work/out")" "EDITED        0002_tickets  (migration 0002_tickets.up.sql was edited"
expect_has "status" "$(cat "$work/out")" "pending       9000_after_edit"
expect_has "status" "$(tail -n 1 "$work/out")" "1 pending, 1 problems"
migrate "$dir" down 1
expect_eq "exit status of down over an edited migration" 1 "$MRC"
expect_has "stderr of down" "$(cat "$work/err")" "was edited after it was applied"

begin "an applied migration whose file is gone is refused"
dir=$(copy_migrations gone)
new_db
migrate "$dir" up
rm "$dir/0002_tickets.up.sql" "$dir/0002_tickets.down.sql"
migrate "$dir" status
expect_eq "exit status of status" 1 "$MRC"
expect_has "status" "$(cat "$work/out")" "missing-file  0002_tickets  (migration 0002_tickets is applied but 0002_tickets.up.sql is not in $dir)"
migrate "$dir" up
expect_eq "exit status of up" 1 "$MRC"
expect_has "stderr" "$(cat "$work/err")" "migration 0002_tickets is applied but 0002_tickets.up.sql is not in"

begin "a pending migration older than an applied one is refused"
dir=$(copy_migrations order)
new_db
printf 'CREATE TABLE t9001 (x int);\n' >"$dir/9001_newer.up.sql"
migrate "$dir" up
expect_eq "exit status of up" 0 "$MRC"
printf 'CREATE TABLE t9000 (x int);\n' >"$dir/9000_older.up.sql"
migrate "$dir" up
expect_eq "exit status of up with an out-of-order file" 1 "$MRC"
expect_has "stderr" "$(cat "$work/err")" "migration 9000_older is pending but a newer version is already applied"
expect_eq "t9000 not created" "" "$(q "SELECT to_regclass('t9000')")"
migrate "$dir" status
expect_eq "exit status of status" 1 "$MRC"
expect_has "status" "$(cat "$work/out")" "OUT-OF-ORDER  9000_older"

begin "a missing down file among the N is an error and nothing is rolled back"
dir=$(copy_migrations nodown)
new_db
# 9000 is rolled back first; without the check up front it would be gone by
# the time 0002's missing down file is noticed.
printf 'CREATE TABLE t9000 (x int);\n' >"$dir/9000_extra.up.sql"
printf 'DROP TABLE t9000;\n' >"$dir/9000_extra.down.sql"
migrate "$dir" up
expect_eq "exit status of up" 0 "$MRC"
rm "$dir/0002_tickets.down.sql"
q 'SELECT version, name, checksum FROM schema_migrations ORDER BY version' >"$work/rows_before"
dump >"$work/before.sql"
# Reach back to 0002 (whatever was added after it), so 0002's down is needed.
migrate "$dir" down "$n_total"
expect_eq "exit status of down" 1 "$MRC"
expect_has "stderr" "$(cat "$work/err")" "cannot roll back 0002_tickets: 0002_tickets.down.sql is not in $dir; nothing was changed"
expect_eq "stdout (nothing rolled back)" "" "$(cat "$work/out")"
expect_eq "schema_migrations after the refused down" "$(cat "$work/rows_before")" \
	"$(q 'SELECT version, name, checksum FROM schema_migrations ORDER BY version')"
dump >"$work/after.sql"
same_dump "the database changed although down was refused" "$work/before.sql" "$work/after.sql"
# Only the N being rolled back need a down file.
dir=$(copy_migrations nodown_first)
new_db
migrate "$dir" up
rm "$dir/0001_state_machine.down.sql"
migrate "$dir" down $((n_total - 1))
expect_eq "exit status of down that stops above 0001" 0 "$MRC"
expect_eq "what is left applied" "1" "$(q "SELECT string_agg(version::text, ',') FROM schema_migrations")"

begin "down N beyond what is applied, and usage errors"
new_db
migrate "$top/migrations" up
migrate "$top/migrations" down $((n_total + 1))
expect_eq "exit status of down N+1" 1 "$MRC"
expect_has "stderr" "$(cat "$work/err")" "cannot roll back $((n_total + 1)) migrations: only $n_total are applied; nothing was changed"
expect_eq "still applied" "$n_total" "$(q 'SELECT count(*) FROM schema_migrations')"
for args in "" "down" "down 0" "down -1" "down 2x" "down 1 2" "up now" "sideways"; do
	# shellcheck disable=SC2086 # word splitting is the point
	migrate "$top/migrations" $args
	expect_eq "exit status of 'cc-migrate $args'" 2 "$MRC"
	expect_has "stderr of 'cc-migrate $args'" "$(cat "$work/err")" "usage: cc-migrate"
done
MRC=0
env -u COSMIC_CLASH_DATABASE_URL COSMIC_CLASH_MIGRATIONS_DIR="$top/migrations" "$bin" up >"$work/out" 2>"$work/err" || MRC=$?
expect_eq "exit status without a database URL" 2 "$MRC"
expect_has "stderr without a database URL" "$(cat "$work/err")" "database-url"

begin "a misnamed file stops everything before the database is touched"
dir=$(copy_migrations misnamed)
new_db
printf 'SELECT 1;\n' >"$dir/12_x.up.sql"
migrate "$dir" up
expect_eq "exit status" 1 "$MRC"
expect_has "stderr" "$(cat "$work/err")" "cc-migrate: migration file 12_x.up.sql is misnamed"
expect_eq "schema_migrations not even created" "" "$(q "SELECT to_regclass('schema_migrations')")"

begin "a failing step is rolled back whole; earlier steps stay"
dir=$(copy_migrations failing)
new_db
printf 'CREATE TABLE t9000 (x int);\n' >"$dir/9000_fine.up.sql"
printf 'CREATE TABLE t9001 (x int);\nSELECT no_such_column FROM t9001;\n' >"$dir/9001_broken.up.sql"
printf 'CREATE TABLE t9002 (x int);\n' >"$dir/9002_after.up.sql"
migrate "$dir" up
expect_eq "exit status" 1 "$MRC"
expect_has "stderr" "$(cat "$work/err")" "9001_broken.up.sql failed at line 2: column \"no_such_column\" does not exist (SQLSTATE 42703)"
expect_eq "last progress line" "applied 9000_fine" "$(tail -n 1 "$work/out")"
expect_eq "recorded versions >= 9000" "9000" "$(q "SELECT string_agg(version::text, ',') FROM schema_migrations WHERE version >= 9000")"
expect_eq "tables of 9000..9002" "t9000||" "$(q "SELECT format('%s|%s|%s', to_regclass('t9000'), to_regclass('t9001'), to_regclass('t9002'))")"
printf 'CREATE TABLE t9001 (x int);\nCOMMIT;\n' >"$dir/9001_broken.up.sql"
migrate "$dir" up
expect_eq "exit status with a COMMIT in the file" 1 "$MRC"
expect_has "stderr" "$(cat "$work/err")" "9001_broken.up.sql ended the transaction itself"
expect_eq "9001 not recorded" "9000" "$(q "SELECT string_agg(version::text, ',') FROM schema_migrations WHERE version >= 9000")"

begin "an unreachable database: clear error, no password"
DSN="postgresql://cc:$secret@127.0.0.1:1/nowhere?connect_timeout=5"
migrate "$top/migrations" up
expect_eq "exit status" 1 "$MRC"
expect_has "stderr" "$(cat "$work/err")" "cc-migrate: cannot connect to the database"

begin "concurrent ups apply each step exactly once"
for round in 1 2 3 4 5; do
	new_db
	rm -f "$work/gate"
	mkfifo "$work/gate"
	exec 3<>"$work/gate" # read-write: opening never blocks, and both children inherit it
	for i in 1 2; do
		(
			read -r -u 3 _
			exec 3>&-
			exec env COSMIC_CLASH_DATABASE_URL="$DSN" COSMIC_CLASH_MIGRATIONS_DIR="$top/migrations" "$bin" up
		) >"$work/out$i" 2>"$work/err$i" &
		eval "pid$i=\$!"
	done
	printf 'go\ngo\n' >&3 # one write releases both
	exec 3>&-
	rc1=0 rc2=0
	wait "$pid1" || rc1=$?
	wait "$pid2" || rc2=$?
	cat "$work/out1" "$work/err1" >"$work/out"
	cat "$work/out2" "$work/err2" >"$work/err"
	expect_eq "round $round: exit statuses of both ups" "0 0" "$rc1 $rc2"
	expect_eq "round $round: each step applied by exactly one process" "$expected_up" \
		"$(cat "$work/out1" "$work/out2" | grep '^applied ' | sort)"
	# stderr may carry JSON log lines; it must carry no error.
	for needle in "cc-migrate:" "already exists" "duplicate key" '"level":"error"'; do
		expect_lacks "round $round: output of both" "$(cat "$work"/out[12] "$work"/err[12])" "$needle"
	done
	expect_eq "round $round: schema_migrations" "$expected_rows" \
		"$(q 'SELECT version, name, checksum FROM schema_migrations ORDER BY version')"
done

echo "test_migrate.sh: all $checks checks passed"
