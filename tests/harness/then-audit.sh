#!/usr/bin/env bash
# then-audit.sh CMD...: runs one integration test, then tests/integration/audit.sql
# on the shared database. The integration tests run one after another on one
# PostgreSQL, so a test that commits rows breaking an invariant (a seeded
# proposal with no outbox announcement, say) would fail the audit of every
# script after it, far from the cause; here the test that left them fails,
# with the rows named. Exit: the test's own status, else 1 when the audit
# reports anything or cannot run.
set -uo pipefail
"$@"
rc=$?
[[ $rc -ne 0 ]] && exit "$rc"
audit=$(psql -qAtX -v ON_ERROR_STOP=1 "$CC_TEST_PG_DSN" -f "${CC_TOP:-.}/tests/integration/audit.sql" 2>&1)
arc=$?
if [[ $arc -ne 0 || -n "$audit" ]]; then
	echo "then-audit: FAIL: $* passed but left the shared database failing audit.sql (psql exit $arc):"
	head -n 20 <<<"$audit"
	echo "then-audit: ($(wc -l <<<"$audit") rows; a committing test must delete what it seeded)"
	exit 1
fi
exit 0
