#!/usr/bin/env bash
# The disposable PostgreSQL/Redis harness removes everything it made: its
# temp dir, its processes and its ports, after success and after failure,
# and prints the server logs when the command failed; also after the
# command restarted PostgreSQL and Redis (their new processes are nobody's
# child, so the harness must find them by data dir and pidfile, not by the
# PIDs it started).
source "$(dirname "$0")/lib.sh"

# What a nested run made, as its command sees it (written again after a restart).
record='echo "$CC_HARNESS_ROOT $CC_TEST_PG_PORT $CC_TEST_REDIS_PORT $(cat $CC_TEST_REDIS_PIDFILE) $(head -n1 $CC_TEST_PG_DATA/postmaster.pid)" >'"$T_DIR/made"

run_nested() { # run_nested EXPECTED_RC CMD: runs a nested harness, records what it made
	local expected=$1; shift
	local rc=0
	CC_HARNESS_NO_MIGRATE=1 "$TOP/tests/harness/with-services.sh" bash -c "$record; $*" \
		>"$T_DIR/nested.out" 2>&1 || rc=$?
	T_LOGS+=("$T_DIR/nested.out")
	expect_eq "nested harness exit status for '$*'" "$expected" "$rc"
	read -r root pgport rport rpid pgpid <"$T_DIR/made"
	[[ ! -e "$root" ]] || fail "harness temp dir $root still exists"
	! running "$rpid" || fail "redis pid $rpid still running"
	! running "$pgpid" || fail "postgres pid $pgpid still running"
	[[ -z $(ss -Htln "( sport = :$pgport or sport = :$rport )") ]] || fail "ports $pgport/$rport still listening"
}

run_nested 0 'psql -qAtX "$CC_TEST_PG_DSN" -c "select 1" >/dev/null && redis-cli -p $CC_TEST_REDIS_PORT ping >/dev/null'
pass "clean exit removes dir, processes and ports"

run_nested 3 'exit 3'
grep -q 'PostgreSQL log' "$T_DIR/nested.out" || fail "failed run did not print the PostgreSQL log; output was: $(cat "$T_DIR/nested.out")"
pass "failed command: status kept, logs printed, everything removed"

# Restarted by the command: the harness must stop the new postmaster and Redis.
h="$TOP/tests/harness"
run_nested 0 'old=$(head -n1 $CC_TEST_PG_DATA/postmaster.pid) && '"$h"'/pg-ctl.sh restart && '"$h"'/redis-ctl.sh stop && '"$h"'/redis-ctl.sh start && [[ $(head -n1 $CC_TEST_PG_DATA/postmaster.pid) != $old ]] && psql -qAtX "$CC_TEST_PG_DSN" -c "select 1" >/dev/null && redis-cli -p $CC_TEST_REDIS_PORT ping >/dev/null && '"$record"
pass "after a PostgreSQL restart (pg_ctl) and a Redis stop/start: the new servers are stopped, everything removed"
