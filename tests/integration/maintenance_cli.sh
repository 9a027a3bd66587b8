#!/usr/bin/env bash
# cc-maintenance's options: a bad table value of several flags at once is
# refused (exit 2) naming every one; the checks across flags (dead letters
# kept at least as long as published rows, the stalled deadline past the
# no-show window) are refused naming both flags, all at once; --help lists
# every sweep's flags with its SPEC default; --once against a database
# that is not there exits 1 after saying so, never hangs or exits 0.
source "$(dirname "$0")/lib.sh"

M="$BIN/cc-maintenance"
dsn="postgresql://nobody@127.0.0.1:1/none?connect_timeout=1"

rc=0
COSMIC_CLASH_DATABASE_URL=$dsn "$M" --batch=0 --stalled-after-seconds=abc --season-weeks=9999 --no-such-sweep=1 \
	--expiry-interval-ms=5 >"$T_DIR/out" 2>"$T_DIR/err" || rc=$?
expect_eq "bad table values: exit status" 2 "$rc"
for flag in --batch --stalled-after-seconds --season-weeks --no-such-sweep --expiry-interval-ms; do
	grep -q -- "$flag" "$T_DIR/err" || fail "bad table values: $flag not named; stderr: $(cat "$T_DIR/err")"
done
pass "five bad flags: exit 2 naming each"

rc=0
COSMIC_CLASH_DATABASE_URL=$dsn "$M" --outbox-dead-letter-retention-days=1 --outbox-published-retention-hours=48 \
	--stalled-after-seconds=30 --no-show-after-seconds=45 >"$T_DIR/out" 2>"$T_DIR/err" || rc=$?
expect_eq "cross-flag checks: exit status" 2 "$rc"
for flag in --outbox-dead-letter-retention-days --outbox-published-retention-hours --stalled-after-seconds \
	--no-show-after-seconds; do
	grep -q -- "$flag" "$T_DIR/err" || fail "cross-flag checks: $flag not named; stderr: $(cat "$T_DIR/err")"
done
pass "both cross-flag problems named in one run"

"$M" --help >"$T_DIR/help" 2>&1 || fail "--help exited non-zero"
while read -r flag dflt; do
	grep -qE -- "--$flag.*$dflt|--$flag" "$T_DIR/help" || fail "--help does not list --$flag"
	line=$(grep -A3 -- "--$flag" "$T_DIR/help" | tr '\n' ' ')
	[[ $line == *"$dflt"* ]] || fail "--help: --$flag should default to $dflt: $line"
done <<'FLAGS'
batch 500
stalled-after-seconds 120
server-silent-after-seconds 30
no-show-after-seconds 45
result-missing-after-seconds 300
season-weeks 12
idempotency-retention-hours 48
outbox-dead-letter-retention-days 30
finished-retention-days 30
once false
FLAGS
pass "--help lists the sweeps' flags with their defaults"

rc=0
start=$SECONDS
COSMIC_CLASH_DATABASE_URL=$dsn timeout 30 "$M" --once --admin-port=0 >"$T_DIR/out" 2>"$T_DIR/err" || rc=$?
expect_eq "--once without a database: exit status" 1 "$rc"
grep -q '"batch_failed"\|"db_unavailable"\|a batch failed' "$T_DIR/err" || fail "--once without a database said nothing: $(tail -5 "$T_DIR/err")"
pass "--once without a database exits 1 in $((SECONDS - start)) s, saying why"
