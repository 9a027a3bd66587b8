#!/usr/bin/env bash
# The disposable PostgreSQL/Redis harness removes everything it made: its
# temp dir, its processes and its ports, after success and after failure,
# and prints the server logs when the command failed.
source "$(dirname "$0")/lib.sh"

run_nested() { # run_nested EXPECTED_RC CMD: runs a nested harness, records what it made
	local expected=$1; shift
	local rc=0
	CC_HARNESS_NO_MIGRATE=1 "$TOP/tests/harness/with-services.sh" bash -c \
		'echo "$CC_HARNESS_ROOT $CC_TEST_PG_PORT $CC_TEST_REDIS_PORT $(cat $CC_TEST_REDIS_PIDFILE) $(head -n1 $CC_TEST_PG_DATA/postmaster.pid)" >'"$T_DIR/made"'; '"$*" \
		>"$T_DIR/nested.out" 2>&1 || rc=$?
	T_LOGS+=("$T_DIR/nested.out")
	expect_eq "nested harness exit status for '$*'" "$expected" "$rc"
	read -r root pgport rport rpid pgpid <"$T_DIR/made"
	[[ ! -e "$root" ]] || fail "harness temp dir $root still exists"
	! kill -0 "$rpid" 2>/dev/null || fail "redis pid $rpid still running"
	! kill -0 "$pgpid" 2>/dev/null || fail "postgres pid $pgpid still running"
	[[ -z $(ss -Htln "( sport = :$pgport or sport = :$rport )") ]] || fail "ports $pgport/$rport still listening"
}

run_nested 0 'psql -qAtX "$CC_TEST_PG_DSN" -c "select 1" >/dev/null && redis-cli -p $CC_TEST_REDIS_PORT ping >/dev/null'
pass "clean exit removes dir, processes and ports"

run_nested 3 'exit 3'
grep -q 'PostgreSQL log' "$T_DIR/nested.out" || fail "failed run did not print the PostgreSQL log; output was: $(cat "$T_DIR/nested.out")"
pass "failed command: status kept, logs printed, everything removed"
