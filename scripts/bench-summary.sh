#!/usr/bin/env bash
# bench-summary.sh reset|print - the one summary table of `make bench`
# (issue 24). Every part of the bench records its figures with bench_row
# (scripts/lib/bench-summary.sh) in BENCH_SUMMARY
# (build/bench-results/summary.tsv): the figure, today's value, the
# reference measured in the same run, the target, and whether it is met.
#
#   reset  empties the file (the first step of `make bench`: rows of an
#          earlier run must not count);
#   print  prints every row as one aligned table (Markdown, so README.md
#          can quote it as it is), headed by the date and the machine, then
#          a line counting the missed targets. With BENCH_STRICT=1 it exits
#          1 when a row says met=no, and when no row was recorded at all
#          (an empty table proves nothing), saying why. A row that is not
#          five tab-separated fields, or whose met is not yes/no/n/a, is
#          refused (exit 2): the file is written by bench_row only.
set -Eeuo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$top/scripts/lib/bench-summary.sh"

say() { echo "bench-summary: $*" >&2; }
strict() { [[ -n ${BENCH_STRICT:-} && ${BENCH_STRICT} != 0 ]]; }

# machine: cores, CPU model, load average (the table's heading).
machine() {
	local model
	model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1)
	printf '%s cores (%s), load average %s' "$(nproc)" "${model:-$(uname -m)}" "$(cut -d' ' -f1-3 /proc/loadavg)"
}

print_table() {
	if [[ ! -s $BENCH_SUMMARY ]]; then
		echo "bench summary: no figure was recorded ($BENCH_SUMMARY is $([[ -e $BENCH_SUMMARY ]] && echo empty || echo missing))"
		if strict; then
			say "BENCH_STRICT=1: an empty summary fails (did every part run? they record their rows with bench_row)"
			return 1
		fi
		return 0
	fi
	local bad
	bad=$(awk -F'\t' 'NF != 5 || ($5 != "yes" && $5 != "no" && $5 != "n/a") { printf "line %d: %s\n", NR, $0 }' "$BENCH_SUMMARY")
	if [[ -n $bad ]]; then
		say "$BENCH_SUMMARY holds rows that are not 5 tab-separated fields ending in yes, no or n/a:"
		printf '%s\n' "$bad" >&2
		return 2
	fi
	echo "make bench summary, $(date -u '+%Y-%m-%d %H:%M UTC'), $(machine)"
	echo
	# One Markdown table, padded so it reads aligned in a terminal too.
	awk -F'\t' '
		BEGIN { h[1] = "figure"; h[2] = "today"; h[3] = "reference (same run)"; h[4] = "target"; h[5] = "met"
			for (i = 1; i <= 5; i++) w[i] = length(h[i]) }
		{ n++; for (i = 1; i <= 5; i++) { c[n, i] = $i; if (length($i) > w[i]) w[i] = length($i) } }
		function row(a1, a2, a3, a4, a5) {
			printf "| %-*s | %-*s | %-*s | %-*s | %-*s |\n", w[1], a1, w[2], a2, w[3], a3, w[4], a4, w[5], a5 }
		END {
			row(h[1], h[2], h[3], h[4], h[5])
			printf "|"; for (i = 1; i <= 5; i++) { printf "-"; for (k = 0; k < w[i]; k++) printf "-"; printf "-|" } printf "\n"
			for (r = 1; r <= n; r++) row(c[r, 1], c[r, 2], c[r, 3], c[r, 4], c[r, 5])
		}' "$BENCH_SUMMARY"
	echo
	local rows missed
	rows=$(wc -l <"$BENCH_SUMMARY")
	missed=$(awk -F'\t' '$5 == "no" { printf "%s%s", (n++ ? "; " : ""), $1 } END { if (n) printf "\n" }' "$BENCH_SUMMARY")
	if [[ -z $missed ]]; then
		echo "$rows figures, $(awk -F'\t' '$5 == "yes"' "$BENCH_SUMMARY" | wc -l) targets, 0 missed"
		return 0
	fi
	local n
	n=$(awk -F'\t' '$5 == "no"' "$BENCH_SUMMARY" | wc -l)
	echo "$rows figures, $(awk -F'\t' '$5 != "n/a"' "$BENCH_SUMMARY" | wc -l) targets, $n missed: $missed"
	if strict; then
		say "BENCH_STRICT=1: $n target(s) missed"
		return 1
	fi
}

case ${1:-} in
reset)
	mkdir -p "$(dirname "$BENCH_SUMMARY")"
	: >"$BENCH_SUMMARY"
	;;
print) print_table ;;
*)
	echo "usage: bench-summary.sh reset|print (rows: $BENCH_SUMMARY)" >&2
	exit 2
	;;
esac
