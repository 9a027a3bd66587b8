#!/usr/bin/env bash
# Every binary: an unknown flag plus a wrongly typed value is a start-up
# error (exit 2) that names both problems; --help lists every option of the
# binary's declaration table; --version names the build.
source "$(dirname "$0")/lib.sh"

src_dir() { # the directory whose option table a binary is built from
	case $1 in
	cc-gameserver) echo "$TOP/gameserver" ;;
	cc-replay-dump) echo "$TOP/gameserver/tools" ;;
	cc-testkit-api) echo "$TOP/services/api" ;;
	cc-testkit-allocator) echo "$TOP/services/allocator" ;;
	cc-player) echo "$TOP/tests/player" ;;
	*) echo "$TOP/services/${1#cc-}" ;;
	esac
}

# The shared option rows, "GROUP NAME" per line, as sys/service.c declares
# them ("{ CC_SERVICE_LOG, { .name = "log-level"").
mapfile -t all_shared < <(grep -ohE '^\s*\{ CC_SERVICE_[A-Z_]+, \{ \.name = "[a-z0-9-]+"' "$TOP/libcommon/sys/service.c" |
	sed -E 's/.*(CC_SERVICE_[A-Z_]+), \{ \.name = "([a-z0-9-]+)".*/\1 \2/')
[[ ${#all_shared[@]} -ge 6 ]] || fail "found only ${#all_shared[@]} shared option rows in libcommon/sys/service.c: ${all_shared[*]}"
shared_rows() { # DIR: the names of the shared rows whose group a source file in DIR names
	local row
	for row in "${all_shared[@]}"; do
		if grep -qw -- "${row% *}" "$1"/*.c; then echo "${row#* }"; fi
	done
}

count=0
for bin in "$BIN"/cc-*; do
	name=$(basename "$bin")
	rc=0
	"$bin" --no-such-flag --port=abc >"$T_DIR/out" 2>"$T_DIR/err" </dev/null || rc=$?
	expect_eq "$name --no-such-flag --port=abc exit status" 2 "$rc"
	grep -q -- '--no-such-flag' "$T_DIR/err" || fail "$name did not name --no-such-flag; stderr: $(cat "$T_DIR/err")"
	grep -q -- '--port' "$T_DIR/err" || fail "$name did not name --port; stderr: $(cat "$T_DIR/err")"

	# The option names as declared in the binary's own table, plus the
	# shared rows (libcommon/sys/service.c) of every group its sources name.
	mapfile -t options < <(
		{
			grep -ohE '\{ \.name = "[a-z0-9-]+"' "$(src_dir "$name")"/*.c | sed -E 's/.*"(.*)"/\1/'
			shared_rows "$(src_dir "$name")"
		} | sort -u
	)
	[[ ${#options[@]} -gt 0 ]] || fail "$name: no option table found under $(src_dir "$name")"
	"$bin" --help >"$T_DIR/help" 2>&1 || fail "$name --help exited non-zero: $(cat "$T_DIR/help")"
	for opt in "${options[@]}"; do
		grep -q -- "--$opt" "$T_DIR/help" || fail "$name --help does not list --$opt; help was: $(cat "$T_DIR/help")"
	done
	version=$("$bin" --version)
	[[ "$version" == "$name "*git* ]] || fail "$name --version printed '$version'"
	count=$((count + 1))
	pass "$name: exit 2 naming both problems, --help lists ${#options[@]} options, --version '$version'"
done
[[ $count -ge 2 ]] || fail "expected at least cc-api and cc-migrate in $BIN, found $count binaries"

# cc-api and cc-testkit-api refuse at start-up an operator token that the
# bearer parser would refuse at every request (or that is short enough to
# guess): exit 2 naming --operator-token, never echoing the value (a binary
# that starts anyway is stopped after 20 s: exit 124). The edges (16 and
# 128 bytes, every allowed punctuation) are accepted.
long128=$(printf 'k%.0s' $(seq 128))
bad_tokens=(
	"fifteen-bytes-x"
	"${long128}k"
	"sixteen-bytes-ok with-a-space"
	"sixteen-bytes-ok!"
	"sixteen-bytes-ok\"quote"
	"sixteen-bytes-ok:colon"
)
for api_bin in cc-api cc-testkit-api; do
	for tok in "${bad_tokens[@]}"; do
		for how in env file; do
			rc=0
			if [[ $how == env ]]; then
				COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" COSMIC_CLASH_OPERATOR_TOKEN="$tok" \
					timeout 20 "$BIN/$api_bin" --port=0 --admin-port=0 >"$T_DIR/out" 2>"$T_DIR/err" </dev/null || rc=$?
			else
				printf '%s\n' "$tok" >"$T_DIR/optok"
				COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" timeout 20 "$BIN/$api_bin" --port=0 --admin-port=0 \
					--operator-token-file="$T_DIR/optok" >"$T_DIR/out" 2>"$T_DIR/err" </dev/null || rc=$?
			fi
			expect_eq "$api_bin with a ${#tok}-byte operator token '$tok' ($how): exit status" 2 "$rc"
			grep -q -- "^$api_bin: --operator-token: must be 16 to 128 characters" "$T_DIR/err" ||
				fail "$api_bin did not name --operator-token for '$tok' ($how); stderr: $(cat "$T_DIR/err")"
			if grep -qF -- "$tok" "$T_DIR/err" "$T_DIR/out"; then fail "$api_bin echoed the operator token '$tok'"; fi
		done
	done
done
for tok in "aZ09-._~+/=bcdef" "$long128"; do
	printf '%s\n' "$tok" >"$T_DIR/optok"
	start_api EDGE --operator-token-file="$T_DIR/optok"
	http GET "$EDGE_URL/v1/admin/queue/stats" "$tok" ""
	expect_http "an admin route with a ${#tok}-byte operator token" 200
	kill "$EDGE_PID"; wait "$EDGE_PID" 2>/dev/null || true
done
pass "cc-api and cc-testkit-api refuse ${#bad_tokens[@]} bad operator tokens (env and file) with exit 2; 16 and 128 bytes work"

# cc-matcher refuses settings that only make sense together: a tolerance cap
# below its start, and a lease timeout that would end a healthy replica's
# idle session (exit 2, naming the flags); the edge is accepted.
matcher_refuses() { # WHAT PATTERN FLAGS...
	local what=$1 pattern=$2 rc=0; shift 2
	COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" timeout 20 "$BIN/cc-matcher" --playlist=casual --admin-port=0 "$@" \
		>"$T_DIR/out" 2>"$T_DIR/err" </dev/null || rc=$?
	expect_eq "cc-matcher $what: exit status" 2 "$rc"
	grep -q -- "$pattern" "$T_DIR/err" || fail "cc-matcher $what: stderr lacks '$pattern': $(cat "$T_DIR/err")"
}
matcher_refuses "tolerance cap below start" "--tolerance-cap (100) must be >= --tolerance-start (200)" \
	--tolerance-start=200 --tolerance-cap=100
matcher_refuses "lease timeout under 2 x poll interval" "--lease-timeout-ms (1999) must be at least twice" \
	--lease-timeout-ms=1999 --poll-interval-ms=1000
matcher_refuses "lease timeout under 2 x Redis timeout" "--lease-timeout-ms (3000) must be at least twice" \
	--redis-timeout-ms=1501
# Issue 25's flags: a rule outside the enum and a rate reference outside its range.
matcher_refuses "an unknown formation rule" "--formation-rule: 'best' is not one of greedy|pairing|sweep" \
	--formation-rule=best
matcher_refuses "a negative rate reference" "--rate-reference-per-second: -1 is out of range \\[0, 1000\\]" \
	--rate-reference-per-second=-1
rc=0
COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" timeout 3 "$BIN/cc-matcher" --playlist=casual --admin-port=0 \
	--lease-timeout-ms=2000 --poll-interval-ms=1000 >"$T_DIR/out" 2>"$T_DIR/err" </dev/null || rc=$?
expect_eq "cc-matcher at the lease edge (2000 = 2 x 1000): runs until stopped (timeout's 124)" 124 "$rc"
pass "cc-matcher refuses a tolerance cap below its start, a lease timeout its own idle gaps would trip, an unknown formation rule and a negative rate reference"
