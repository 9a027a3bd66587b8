#!/usr/bin/env bash
# bench-events.sh - what the event stream (GET /v1/events, issue 22) buys:
# the demo (scripts/demo.sh: 60 players, --play) run twice, the same
# configuration and seed, once with every player on the stream
# (cc-player --events=stream) and once polling its ticket every 250 ms
# (--events=poll), each in its own disposable PostgreSQL + Redis. Prints,
# side by side, the median queue-to-connected of the players and cc-api's
# CPU per matched player (utime + stime of the cc-api process from
# /proc/PID/stat over the players' run, divided by the players matched),
# plus the ticket reads each cost. Called by scripts/bench.sh (`make
# bench`); runs alone too. Outputs stay in build/bench-results/events-*/.
#
# The stream's median is a row of make bench's summary table (bench_row,
# scripts/lib/bench-summary.sh) beside the polling run, against issue 24's
# target: queue -> connected <= 300 ms median; cc-api's CPU per matched
# player is a context row (no target).
#
# Environment: BENCH_EVENTS_ROUNDS (1): runs of each, interleaved; the
# figures are the medians over the rounds. The DEMO_* variables of demo.sh
# apply to both runs.
set -Eeuo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT="$top/build/bench-results"
ROUNDS=${BENCH_EVENTS_ROUNDS:-1}

say() { echo "bench-events: $*" >&2; }
# bench_row, bench_met: the rows of make bench's summary table.
source "$top/scripts/lib/bench-summary.sh"

# kv FILE KEY: the value of KEY=... in FILE.
kv() { sed -n "s/^$2=//p" "$1" | tail -n 1; }

# median of the arguments (numbers).
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

run() {
	local mode=$1 r=$2 dir="$OUT/events-$1-r$2"
	say "round $r: the demo with --events=$mode (logs $dir)"
	if ! DEMO_EVENTS=$mode DEMO_LOGS="$dir" "$top/scripts/demo.sh" >"$dir.out" 2>"$dir.err"; then
		say "the demo with --events=$mode failed: $(tail -n 1 "$dir.out" 2>/dev/null)"
		tail -n 40 "$dir.err" >&2
		return 1
	fi
	[[ -f "$dir/result.env" ]] || { say "$dir/result.env is missing"; return 1; }
}

main() {
	local r mode
	mkdir -p "$OUT"
	for ((r = 1; r <= ROUNDS; r++)); do
		for mode in stream poll; do
			run "$mode" "$r"
		done
	done
	local -A med cpu reads src
	for mode in stream poll; do
		local ms=() cs=() rs=() f
		for ((r = 1; r <= ROUNDS; r++)); do
			f="$OUT/events-$mode-r$r/result.env"
			ms+=("$(kv "$f" median_queue_to_connected_ms)")
			cs+=("$(kv "$f" api_cpu_ms_per_matched_player)")
			rs+=("$(sed -nE 's/.* ticket_reads=([0-9]+).*/\1/p' <<<"$(kv "$f" summary)")")
			src[$mode]=$(kv "$f" source)
		done
		med[$mode]=$(median "${ms[@]}")
		cpu[$mode]=$(median "${cs[@]}")
		reads[$mode]=$(median "${rs[@]}")
	done
	if [[ ${src[stream]} != *"poll:0" ]]; then
		say "the stream run did not stream every player (${src[stream]})"
		return 1
	fi
	echo "events bench: the demo (60 players, --play), median of $ROUNDS round(s), stream vs poll (every 250 ms)"
	printf '%-7s %-20s %26s %30s %13s\n' events source median_queue_to_connected_ms api_cpu_ms_per_matched_player ticket_reads |
		tee "$OUT/events-summary.txt"
	for mode in stream poll; do
		printf '%-7s %-20s %26s %30s %13s\n' "$mode" "${src[$mode]}" "${med[$mode]}" "${cpu[$mode]}" "${reads[$mode]}"
	done | tee -a "$OUT/events-summary.txt"
	bench_row "demo queue -> connected, median (event stream)" "${med[stream]} ms" \
		"the same demo polling every 250 ms: ${med[poll]} ms" "<= 300 ms" "$(bench_met "${med[stream]} <= 300")"
	bench_row "cc-api CPU per matched player (event stream)" "${cpu[stream]} ms" \
		"the same demo polling: ${cpu[poll]} ms" "-" n/a
}

main
