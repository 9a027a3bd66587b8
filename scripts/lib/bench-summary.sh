# shellcheck shell=bash
# bench-summary.sh - sourced (bash) by every part of `make bench`: the one
# summary table (issue 24). Each part records every figure it measures with
# bench_row, beside the reference measured in the same run and the target;
# scripts/bench-summary.sh prints them all as one table at the end of
# `make bench` and, with BENCH_STRICT=1, fails when a target was missed.
# A part never exits on a missed target itself: the table must be whole.
#
# The rows live in BENCH_SUMMARY (build/bench-results/summary.tsv), one
# line per figure, tab-separated: figure, today, reference, target, met
# (yes | no | n/a: a context figure with no target). scripts/bench-summary.sh
# reset empties it at the start of `make bench`; a part run alone appends to
# whatever is there.

BENCH_SUMMARY=${BENCH_SUMMARY:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/bench-results/summary.tsv}

# bench_row FIGURE TODAY REFERENCE TARGET MET: records one row. Tabs and
# newlines inside a field would break the table, so they are refused.
bench_row() {
	if (($# != 5)); then
		echo "bench_row: want 5 fields (figure today reference target met), got $#: $*" >&2
		return 2
	fi
	case $5 in yes | no | n/a) ;; *)
		echo "bench_row: met must be yes, no or n/a, got '$5' (figure '$1')" >&2
		return 2
		;;
	esac
	local f
	for f in "$@"; do
		if [[ $f == *$'\t'* || $f == *$'\n'* ]]; then
			echo "bench_row: a field holds a tab or newline (figure '$1')" >&2
			return 2
		fi
	done
	mkdir -p "$(dirname "$BENCH_SUMMARY")"
	printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$BENCH_SUMMARY"
}

# bench_met EXPR: "yes" when the awk condition EXPR holds, else "no"
# (e.g. bench_met "$ratio >= 0.9"). EXPR is numbers and operators only: a
# figure that came out as "nan" or empty must not pass as awk's 0, so a
# word in it (and any expression awk cannot parse) is "no", said on stderr.
bench_met() {
	if [[ ${1//[0-9][eE]/} == *[A-Za-z_]* ]]; then
		echo "bench_met: not a number in '$1': the target counts as missed" >&2
		echo no
		return 0
	fi
	if awk "BEGIN { exit !($1) }" 2>/dev/null; then echo yes; else echo no; fi
}
