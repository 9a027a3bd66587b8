#!/usr/bin/env bash
# bench_summary.sh - make bench's one summary table (issue 24), without
# running a bench: rows recorded with bench_row (scripts/lib/bench-summary.sh)
# come out of `scripts/bench-summary.sh print` as one aligned table with a
# count of the misses; BENCH_STRICT=1 fails on a met=no row and on an empty
# or missing table, and passes when every target is met; bench_row refuses
# a malformed row and print a malformed file; bench_met never counts a
# non-number as met; bench-all.sh resets the table before its parts; and
# every part records rows and leaves BENCH_STRICT to the summary. No
# services, a second or two.
source "$(dirname "$0")/lib.sh"

summary=$TOP/scripts/bench-summary.sh
export BENCH_SUMMARY=$T_DIR/results/summary.tsv
unset BENCH_STRICT
source "$TOP/scripts/lib/bench-summary.sh"

# run_print [ENV...]: runs print; sets $out (stdout and stderr) and $rc.
run_print() {
	rc=0
	out=$(env "$@" "$summary" print 2>&1) || rc=$?
}

# ---- empty and missing ---------------------------------------------------------
run_print
expect_eq "print with no file, not strict: exit" 0 "$rc"
grep -q "no figure was recorded .* is missing" <<<"$out" || fail "print with no file: $out"
run_print BENCH_STRICT=1
expect_eq "print with no file, BENCH_STRICT=1: exit" 1 "$rc"
grep -q "BENCH_STRICT=1: an empty summary fails" <<<"$out" || fail "strict print with no file does not say why: $out"
"$summary" reset
[[ -f $BENCH_SUMMARY && ! -s $BENCH_SUMMARY ]] || fail "reset did not leave an empty $BENCH_SUMMARY"
run_print BENCH_STRICT=1
expect_eq "print of an empty table, BENCH_STRICT=1: exit" 1 "$rc"
grep -q "is empty" <<<"$out" || fail "strict print of an empty file: $out"
pass "empty and missing tables: printed as such, fail under BENCH_STRICT=1"

# ---- rows in, table out --------------------------------------------------------------
bench_row "heartbeats through cc-api, C=8" "3452 req/s" "pgbench, the same 1 statement: 5767 tps" \
	">= 0.90 x reference (ratio 0.60)" "$(bench_met "0.60 >= 0.9")"
bench_row "downstream bytes per client" "1435 B/s" "full snapshots: 3965 B/s" "<= 2000 B/s" "$(bench_met "1435 <= 2000")"
bench_row "CPU per allocation" "cc-allocator 250 us + PostgreSQL 1225 us" "-" "-" n/a
expect_eq "rows recorded" 3 "$(wc -l <"$BENCH_SUMMARY")"
run_print
expect_eq "print with a miss, not strict: exit" 0 "$rc"
for want in "| heartbeats through cc-api, C=8 *| 3452 req/s *| pgbench, the same 1 statement: 5767 tps *| >= 0.90 x reference (ratio 0.60) *| no *|" \
	"| downstream bytes per client *| 1435 B/s *| full snapshots: 3965 B/s *| <= 2000 B/s *| yes *|" \
	"| CPU per allocation *| cc-allocator 250 us + PostgreSQL 1225 us *| - *| - *| n/a *|" \
	"^| figure *| today *| reference (same run) *| target *| met *|$" \
	"^make bench summary, [0-9-]* [0-9:]* UTC, [0-9]* cores" \
	"^3 figures, 2 targets, 1 missed: heartbeats through cc-api, C=8$"; do
	grep -q -- "$want" <<<"$out" || fail "print: no line matching '$want' in:$(sed 's/^/\n    /' <<<"$out")"
done
widths=$(grep '^|' <<<"$out" | awk '{ print length($0) }' | sort -u)
expect_eq "every table line the same width (aligned)" 1 "$(wc -l <<<"$widths")"
expect_eq "table lines: header, rule, 3 rows" 5 "$(grep -c '^|' <<<"$out")"
run_print BENCH_STRICT=1
expect_eq "print with a miss, BENCH_STRICT=1: exit" 1 "$rc"
grep -q "BENCH_STRICT=1: 1 target(s) missed" <<<"$out" || fail "strict print does not say what failed: $out"
grep -q "| heartbeats through cc-api, C=8 " <<<"$out" || fail "strict print failed without printing the table: $out"
pass "rows come out as one aligned table; a miss fails only under BENCH_STRICT=1"

"$summary" reset
[[ ! -s $BENCH_SUMMARY ]] || fail "reset left rows: $(cat "$BENCH_SUMMARY")"
bench_row "downstream bytes per client" "1435 B/s" "full snapshots: 3965 B/s" "<= 2000 B/s" yes
bench_row "CPU per allocation" "250 us" "-" "-" n/a
run_print BENCH_STRICT=1
expect_eq "print with every target met, BENCH_STRICT=1: exit" 0 "$rc"
grep -q "^2 figures, 1 targets, 0 missed$" <<<"$out" || fail "all met: $out"
pass "every target met: BENCH_STRICT=1 passes"

# ---- malformed rows are refused -------------------------------------------------------
before=$(cat "$BENCH_SUMMARY")
refused() { # WHY ARGS...: bench_row ARGS must exit 2 and record nothing
	local why=$1 r=0
	shift
	bench_row "$@" 2>"$T_DIR/row.err" || r=$?
	expect_eq "bench_row $why: exit" 2 "$r"
	[[ -s $T_DIR/row.err ]] || fail "bench_row $why: refused without saying why"
	expect_eq "bench_row $why: the table is unchanged" "$before" "$(cat "$BENCH_SUMMARY")"
}
refused "with 4 fields" "figure" "1" "2" "yes"
refused "with 6 fields" "figure" "1" "2" "3" "yes" "extra"
refused "with met=maybe" "figure" "1" "2" "3" "maybe"
refused "with an empty met" "figure" "1" "2" "3" ""
refused "with a tab in a field" "fig"$'\t'"ure" "1" "2" "3" "yes"
refused "with a newline in a field" "figure" "1"$'\n'"2" "2" "3" "no"
pass "bench_row refuses wrong field counts, a met other than yes/no/n/a, tabs and newlines"

printf 'figure\t1\t2\t3\n' >>"$BENCH_SUMMARY"
run_print
expect_eq "print of a 4-field line: exit" 2 "$rc"
grep -q "line 3: " <<<"$out" || fail "print of a malformed file does not name the line: $out"
"$summary" reset
printf 'figure\t1\t2\t3\tperhaps\n' >>"$BENCH_SUMMARY"
run_print
expect_eq "print of a line with met=perhaps: exit" 2 "$rc"
pass "print refuses a file bench_row did not write"

# ---- bench_met ---------------------------------------------------------------------------
expect_eq "bench_met 0.91 >= 0.9" yes "$(bench_met "0.91 >= 0.9")"
expect_eq "bench_met 0.89 >= 0.9" no "$(bench_met "0.89 >= 0.9")"
expect_eq "bench_met 1e3 >= 1000" yes "$(bench_met "1e3 >= 1000")"
expect_eq "bench_met nan <= 300 (a figure that came out as nan)" no "$(bench_met "nan <= 300" 2>/dev/null)"
expect_eq "bench_met ' < 20' (a figure that came out empty)" no "$(bench_met " < 20" 2>/dev/null)"
pass "bench_met: a condition that holds is yes; one that does not, a nan or an empty figure is no"

# ---- make bench's wiring ----------------------------------------------------------------
printf 'stale\t1\t2\t3\tno\n' >"$BENCH_SUMMARY"
rc=0
out=$(BENCH_PARTS=none "$TOP/scripts/bench-all.sh" 2>&1) || rc=$?
expect_eq "bench-all.sh with no part that records rows: exit" 0 "$rc"
grep -q "no figure was recorded" <<<"$out" || fail "bench-all.sh did not reset the table before its parts: $out"
rc=0
out=$(BENCH_PARTS=none BENCH_STRICT=1 "$TOP/scripts/bench-all.sh" 2>&1) || rc=$?
expect_eq "bench-all.sh, no rows, BENCH_STRICT=1: exit" 1 "$rc"
rc=0
BENCH_PARTS=nonsense "$TOP/scripts/bench-all.sh" >/dev/null 2>&1 || rc=$?
expect_eq "bench-all.sh with an unknown part: exit" 2 "$rc"
parts=(bench.sh bench-matcher.sh bench-allocator.sh bench-events.sh bench-gameserver.sh)
parts+=(bench-density.sh) # issue 24's density part
for p in "${parts[@]}"; do
	grep -q '^[[:space:]]*\(\[\[.*\]\] || \)\?bench_row ' "$TOP/scripts/$p" || fail "scripts/$p records no summary row (bench_row)"
	! grep -n 'BENCH_STRICT' "$TOP/scripts/$p" | grep -v ':[[:space:]]*#' | grep -q . ||
		fail "scripts/$p acts on BENCH_STRICT itself; a missed target is the summary's to fail: $(grep -n BENCH_STRICT "$TOP/scripts/$p")"
done
grep -q 'scripts/bench-all.sh' "$TOP/Makefile" || fail "make bench does not run scripts/bench-all.sh"
pass "bench-all.sh resets the table first; every part records rows and leaves BENCH_STRICT to the summary"
