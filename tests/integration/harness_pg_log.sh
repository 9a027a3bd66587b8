#!/usr/bin/env bash
# The harness starts PostgreSQL without a FATAL in its log: its readiness
# probe connects as role cc to an existing database, not as whoever runs
# the tests (root in CI, which has no role) to a database of that name.
source "$(dirname "$0")/lib.sh"

[[ -r "$CC_TEST_PG_LOG" ]] || fail "no readable PostgreSQL log at CC_TEST_PG_LOG='$CC_TEST_PG_LOG'"
grep -q 'database system is ready to accept connections' "$CC_TEST_PG_LOG" ||
	fail "the log does not show the start-up, so its absence of errors proves nothing: $(tail -n 5 "$CC_TEST_PG_LOG")"
me=$(id -un)
bad=$(grep -E "FATAL: +(role \"$me\" does not exist|database \"(cc|$me)\" does not exist)" "$CC_TEST_PG_LOG" || true)
[[ -z "$bad" ]] || fail "the harness's readiness probe made PostgreSQL log: $bad"
pass "PostgreSQL started without a FATAL for role or database '$me'/cc"
