#!/usr/bin/env bash
# bench-density.sh - game-server density measured for real (issue 24), part
# of `make bench`: how many concurrent 3v3 matches one core holds.
#
# At each level K: K cc-gameserver processes (allocated mode, each hosting
# one 3v3 match of its own minted roster) all pinned to CPU
# $DENSITY_SERVER_CPU (0) with taskset, and one `gsclient multi` process
# pinned to CPU $DENSITY_CLIENT_CPU (1) driving the 6K real ENet clients
# (60 Hz input, every snapshot acknowledged, delta snapshots rebuilt) in
# $DENSITY_CLIENT_PROCS (2) processes, each with whole matches: on a
# machine shared with other work the scheduler gives each process a share
# (one process with all 720 clients of K=120 was seen starved: every player
# kicked input_stalled at 3% client CPU); on a quiet machine one suffices.
# Once every client is playing and $DENSITY_SETTLE_SECONDS (2) have passed
# (warm-up), the counters are read at the start and at the end of a window
# of $DENSITY_WINDOW_SECONDS (10): each server's ticks and tick-lateness
# histogram (/metrics, cosmic_clash_gameserver_tick_lateness_seconds), and
# the utime+stime of each server and of the client (/proc/PID/stat). Every
# figure comes from those deltas, so start-up never leaks into it:
#   - ticks/s: a match's ticks over its window, mean over the K matches
#     (and the slowest);
#   - lateness p99: the upper bound of the bucket holding the 99th
#     percentile of the K histograms' merged deltas;
#   - CPU per match: the servers' summed CPU / window / K, in % of a core;
#   - client CPU: the client processes' CPU / window, so a reader sees it was not
#     the bottleneck (a level whose client used >= 90% of its core stops
#     the ramp as client-bound: its figures would measure the client),
#     and the client loop's worst lag (a client starved by other work on
#     its core shows there even when its own CPU is low).
# K ramps through $DENSITY_LEVELS ("1 5 10 20 40 80 160") until p99 tick
# lateness passes 3.3 ms or ticks/s fall below 59 (the level fails), the
# list ends (the cap) or $DENSITY_TIMEOUT_SECONDS (900) pass. The figure:
# matches per core = the largest level that held. DENSITY_RAMP_ALL=1 runs
# every level anyway (each still printed with its verdict; the figure is
# the same), to see how the cost scales on a machine too noisy to hold K=1.
#
# Output: one "density K=..." line per level, then "density: 3v3 matches
# per core ..." and "density: CPU per match ..."; build/bench-results/
# density/levels.jsonl (one JSON object per level) and result.json (the
# figure, read by bench-gameserver.sh); bench_row rows for make bench's
# summary (scripts/lib/bench-summary.sh). Exit 0 whether or not the target
# (>= 260 matches per core) is met: the summary judges it (BENCH_STRICT);
# exit 1 when the bench itself could not run (a server or a client failed).
#
# Needs: make all tests-build (build/bin/cc-gameserver, build/tests/gsclient),
# taskset, curl, jq and at least 2 CPUs.
set -Eeuo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN="$top/build/bin"
GSCLIENT="$top/build/tests/gsclient"
OUT=${DENSITY_OUT:-$top/build/bench-results/density}
LEVELS=${DENSITY_LEVELS:-1 5 10 20 40 80 160}
WINDOW=${DENSITY_WINDOW_SECONDS:-10}
SETTLE=${DENSITY_SETTLE_SECONDS:-2}
TIMEOUT=${DENSITY_TIMEOUT_SECONDS:-900}
SERVER_CPU=${DENSITY_SERVER_CPU:-0}
CLIENT_CPU=${DENSITY_CLIENT_CPU:-1}
P99_MAX=0.0033 # seconds: a fifth of a tick
MIN_TICKS=59
CLIENT_BOUND=90 # % of the client's core
RAMP_ALL=${DENSITY_RAMP_ALL:-0}
CLIENT_PROCS=${DENSITY_CLIENT_PROCS:-2}
source "$top/scripts/lib/ports.sh"
source "$top/scripts/lib/bench-summary.sh"

say() { echo "bench-density: $*" >&2; }
die() {
	say "$*"
	exit 1
}
for f in "$GSCLIENT" "$BIN/cc-gameserver"; do
	[[ -x $f ]] || die "$f is missing (make all tests-build)"
done
for t in taskset curl jq; do command -v "$t" >/dev/null || die "$t is not installed"; done
(($(nproc) >= 2)) || die "needs 2 CPUs (servers on one, clients on the other); this machine has $(nproc)"
[[ $WINDOW =~ ^[1-9][0-9]*$ && $SETTLE =~ ^[0-9]+$ && $TIMEOUT =~ ^[1-9][0-9]*$ ]] ||
	die "DENSITY_WINDOW_SECONDS, DENSITY_SETTLE_SECONDS and DENSITY_TIMEOUT_SECONDS must be whole seconds (window >= 1)"
[[ $CLIENT_PROCS =~ ^[1-9]$ ]] || die "DENSITY_CLIENT_PROCS must be 1 to 9"
for k in $LEVELS; do [[ $k =~ ^[1-9][0-9]*$ ]] || die "DENSITY_LEVELS: '$k' is not a positive whole number"; done
HZ=$(getconf CLK_TCK)

rm -rf "$OUT"
mkdir -p "$OUT/mint"
server_pids=()
client_pids=()
stop_level() {
	local p
	# A server stopped before its match's end exits 4: expected here.
	for p in "${client_pids[@]:-}" "${server_pids[@]:-}"; do [[ -n $p ]] && { kill -TERM "$p" 2>/dev/null || true; }; done
	for p in "${client_pids[@]:-}" "${server_pids[@]:-}"; do [[ -n $p ]] && { wait "$p" 2>/dev/null || true; }; done
	server_pids=()
	client_pids=()
	return 0
}
cleanup() {
	local rc=$?
	stop_level
	if ((rc != 0)); then
		say "FAILED (exit $rc); logs in $OUT:"
		tail -n 5 "$OUT"/*.log 2>/dev/null || true
	fi
	exit $rc
}
trap cleanup EXIT

printf '{"k1":"%s"}' "$(head -c 32 /dev/urandom | base64 -w0)" >"$OUT/keys.json"
printf 'bench-density-workload' >"$OUT/workload"
export COSMIC_CLASH_JOIN_KEYS_FILE="$OUT/keys.json" COSMIC_CLASH_WORKLOAD_TOKEN_FILE="$OUT/workload"
minted=0
# mint_upto K: a roster and six join tokens for matches 1..K (kept across levels: each level's servers are new).
mint_upto() {
	while ((minted < $1)); do
		minted=$((minted + 1))
		mkdir -p "$OUT/mint/$minted"
		"$GSCLIENT" mint --keys="$OUT/keys.json" --key-id=k1 --server-id="density-$minted" --players=6 \
			--out="$OUT/mint/$minted" || die "gsclient mint failed"
	done
}

# cpu_ticks PID...: utime+stime (clock ticks) of each process, one per line (comm has no spaces here).
cpu_ticks() {
	local p
	for p in "$@"; do awk '{ print $14 + $15 }' "/proc/$p/stat"; done
}
# cpu_busy: "busy total" jiffies of the servers' CPU from /proc/stat (every process on it, other helpers' too).
cpu_busy() {
	awk -v c="cpu$SERVER_CPU" '$1 == c { t = 0; for (i = 2; i <= NF; i++) t += $i; print t - $5 - $6, t }' /proc/stat
}
# scrape FILE PORT...: each server's ticks and lateness buckets, one line per server:
# "T_NS TICKS COUNT le=count le=count ... +Inf=count", T_NS midway between the request and its answer
# (a server on a busy core may answer late; the midpoint halves that error in its ticks/s).
scrape() {
	local file=$1 port body ta
	shift
	: >"$file"
	for port in "$@"; do
		ta=$(date +%s%N)
		body=$(curl -sf --max-time 5 "http://127.0.0.1:$port/metrics") || die "GET /metrics of the server on $port failed"
		awk -v t="$(((ta + $(date +%s%N)) / 2))" '
			/^cosmic_clash_gameserver_ticks_total / { ticks = $2 }
			/^cosmic_clash_gameserver_tick_lateness_seconds_bucket/ {
				match($0, /le="[^"]*"/); b = b " " substr($0, RSTART + 4, RLENGTH - 5) "=" $2 }
			/^cosmic_clash_gameserver_tick_lateness_seconds_count/ { count = $2 }
			END { if (ticks == "" || count == "" || b == "") exit 1; print t, ticks, count b }' <<<"$body" >>"$file" ||
			die "the server on $port has no ticks or lateness histogram in /metrics"
	done
}

ramp_start=$SECONDS
held=0 held_cpu="" held_json="" stop_reason="" last_k=0 first_cpu=""
for k in $LEVELS; do
	if ((SECONDS - ramp_start >= TIMEOUT)); then
		[[ -n $stop_reason ]] || stop_reason="timeout: ${TIMEOUT} s passed before K=$k"
		break
	fi
	last_k=$k
	mint_upto "$k"
	lvl="$OUT/k$k"
	mkdir -p "$lvl"
	ports=()
	procs=$((CLIENT_PROCS < k ? CLIENT_PROCS : k))
	for c in $(seq 0 $((procs - 1))); do : >"$lvl/clients.$c.list"; done
	for i in $(seq "$k"); do
		port=$(free_port)
		while [[ " ${ports[*]:-} " == *" $port "* ]]; do port=$(free_port); done
		ports+=("$port")
		taskset -c "$SERVER_CPU" "$BIN/cc-gameserver" --bind=127.0.0.1 --game-port="$port" --server-id="density-$i" \
			--roster-file="$OUT/mint/$i/roster.json" --api-url=http://127.0.0.1:9 --match-seconds=3600 \
			--warmup-seconds=1 --connect-window-seconds=120 --result-timeout-ms=200 --end-linger-ms=0 \
			>"$lvl/gs.$i.log" 2>&1 &
		server_pids+=("$!")
		for slot in 0 1 2 3 4 5; do echo "$port $OUT/mint/$i/token.$slot" >>"$lvl/clients.$((i % procs)).list"; done
	done
	deadline=$((SECONDS + 30 + k / 2))
	for i in $(seq 0 $((k - 1))); do
		until curl -sf --max-time 2 "http://127.0.0.1:${ports[$i]}/readyz" >/dev/null; do
			kill -0 "${server_pids[$i]}" 2>/dev/null || die "K=$k: server $((i + 1)) exited: $(tail -n 3 "$lvl/gs.$((i + 1)).log")"
			((SECONDS < deadline)) || die "K=$k: server $((i + 1)) not ready in time"
			sleep 0.05
		done
	done
	for c in $(seq 0 $((procs - 1))); do
		taskset -c "$CLIENT_CPU" "$GSCLIENT" multi --list="$lvl/clients.$c.list" --max-seconds=$((WINDOW + SETTLE + 600)) \
			>"$lvl/client.$c.out" 2>"$lvl/client.$c.log" &
		client_pids+=("$!")
	done
	deadline=$((SECONDS + 60 + k))
	for c in $(seq 0 $((procs - 1))); do
		until grep -q '"event":"connected"' "$lvl/client.$c.out" 2>/dev/null; do
			kill -0 "${client_pids[$c]}" 2>/dev/null ||
				die "K=$k: gsclient multi $c exited before connecting: $(tail -n 3 "$lvl/client.$c.log")"
			((SECONDS < deadline)) || die "K=$k: the clients did not all connect in time"
			sleep 0.05
		done
	done
	connected=$(cat "$lvl"/client.*.out | jq -sc 'map(select(.event == "connected")) |
		{clients: map(.clients) | add, playing: map(.playing) | add, failed: map(.failed) | add, ms: map(.ms) | max}')
	if (($(jq .failed <<<"$connected") > 0)); then
		stop_level # the clients print their results (the first failure's reason) as they stop
		echo "density K=$k: matches $k, STOP: only $(jq .playing <<<"$connected") of $((6 * k)) clients could join ($(cat "$lvl"/client.*.out | jq -rs 'map(.reason // empty | select(. != "")) | first // "no reason"'))"
		[[ -n $stop_reason ]] || stop_reason="K=$k: not every client could join"
		break
	fi
	sleep "$SETTLE" # the matches' warm-up (1 s) ends; nothing is measured yet

	# Window start: metrics first, then CPU; at the end CPU first, then metrics (scrapes stay outside the CPU window).
	scrape "$lvl/m0" "${ports[@]}"
	c0=$(cpu_ticks "${server_pids[@]}" | paste -sd' ')
	cl0=$(cpu_ticks "${client_pids[@]}" | awk '{ s += $1 } END { print s }')
	b0=$(cpu_busy)
	t0=$(date +%s%N)
	sleep "$WINDOW"
	t1=$(date +%s%N)
	c1=$(cpu_ticks "${server_pids[@]}" | paste -sd' ')
	cl1=$(cpu_ticks "${client_pids[@]}" | awk '{ s += $1 } END { print s }')
	b1=$(cpu_busy)
	scrape "$lvl/m1" "${ports[@]}"
	kill -TERM "${client_pids[@]}"
	for c in $(seq 0 $((procs - 1))); do
		wait "${client_pids[$c]}" || die "K=$k: gsclient multi $c exited $?: $(tail -n 3 "$lvl/client.$c.log")"
		grep -q '"result":"done"' "$lvl/client.$c.out" || die "K=$k: gsclient multi $c printed no result"
	done
	client_pids=()
	# The processes' results as one: sums, the worst lag, the first failure.
	done_line=$(cat "$lvl"/client.*.out | jq -sc 'map(select(.result == "done")) | {result: "done", processes: length,
		clients: map(.clients) | add, playing: map(.playing) | add, failed: map(.failed) | add, seconds: map(.seconds) | max,
		snapshots: map(.snapshots) | add, min_snapshots: map(.min_snapshots) | min, inputs: map(.inputs) | add,
		undecodable: map(.undecodable) | add, unknown_base: map(.unknown_base) | add,
		max_lag_ms: map(.max_lag_ms) | max, late_loops: map(.late_loops) | add,
		reason: (map(.reason | select(. != "")) | first // "")}')
	stop_level

	# Figures from the deltas.
	level=$(awk -v k="$k" -v hz="$HZ" -v t0="$t0" -v t1="$t1" -v c0="$c0" -v c1="$c1" -v cl0="$cl0" -v cl1="$cl1" \
		-v b0="$b0" -v b1="$b1" -v pmax="$P99_MAX" '
		FNR == 1 { f++ }
		{
			# $1 time, $2 ticks, $3 count, then le=count pairs (cumulative, in the same order each time)
			if (f == 1) { st[FNR] = $1; sk[FNR] = $2; sc[FNR] = $3; for (j = 4; j <= NF; j++) { split($j, p, "="); s0[FNR, j] = p[2] } next }
			dt = ($1 - st[FNR]) / 1e9
			tps = ($2 - sk[FNR]) / dt
			ticks += $2 - sk[FNR]
			sum_tps += tps
			if (min_tps == "" || tps < min_tps) min_tps = tps
			total += $3 - sc[FNR]
			for (j = 4; j <= NF; j++) { split($j, p, "="); le[j] = p[1]; cum[j] += p[2] - s0[FNR, j] }
			nb = NF
		}
		END {
			split(c0, a0, " "); split(c1, a1, " ")
			for (i = 1; i <= k; i++) cpu += a1[i] - a0[i]
			w = (t1 - t0) / 1e9
			cpu_match = cpu / hz / w / k * 100
			split(b0, x0, " "); split(b1, x1, " ")
			busy = (x1[2] > x0[2]) ? (x1[1] - x0[1]) * 100 / (x1[2] - x0[2]) : 0
			p99 = "+Inf"; within = 0
			for (j = 4; j <= nb; j++) {
				if (le[j] + 0 == pmax + 0) within = total ? cum[j] / total : 0
				if (p99 == "+Inf" && cum[j] >= 0.99 * total) p99 = le[j]
			}
			printf "{\"k\":%d,\"window_s\":%.3f,\"ticks_per_s\":%.2f,\"min_ticks_per_s\":%.2f,\"ticks\":%d,\"lateness_samples\":%d,", k, w, sum_tps / k, min_tps, ticks, total
			printf "\"lateness_p99_le_s\":\"%s\",\"within_3_3ms\":%.4f,\"cpu_per_match_pct\":%.3f,\"servers_cpu_pct\":%.2f,", p99, within, cpu_match, cpu / hz / w * 100
			printf "\"server_core_busy_pct\":%.2f,\"client_cpu_pct\":%.2f,\"clients\":%d}\n", busy, (cl1 - cl0) / hz / w * 100, 6 * k
		}' "$lvl/m0" "$lvl/m1")
	level=$(jq -c --argjson done "$done_line" '. + {client_result: $done}' <<<"$level")
	[[ -n $first_cpu ]] || first_cpu="K=$k: $(printf '%.2f' "$(jq .cpu_per_match_pct <<<"$level")")% of a core a match"
	echo "$level" >>"$OUT/levels.jsonl"
	read -r tps min_tps p99 within cpu_match srv_cpu busy cl_cpu playing cl_lag < <(jq -r \
		'[.ticks_per_s, .min_ticks_per_s, .lateness_p99_le_s, .within_3_3ms, .cpu_per_match_pct, .servers_cpu_pct,
		  .server_core_busy_pct, .client_cpu_pct, .client_result.playing, .client_result.max_lag_ms] | @tsv' <<<"$level")
	if [[ $p99 == +Inf ]]; then p99_txt="> 1000 ms"; else p99_txt="<= $(awk -v v="$p99" 'BEGIN { printf "%g", v * 1000 }') ms"; fi
	verdict=held
	if ((playing != 6 * k)); then
		verdict="STOP: only $playing of $((6 * k)) clients still playing at the end ($(jq -r .reason <<<"$done_line"))"
	elif awk -v c="$cl_cpu" -v m="$CLIENT_BOUND" 'BEGIN { exit !(c >= m) }'; then
		verdict="STOP: client-bound (client CPU ${cl_cpu}% >= ${CLIENT_BOUND}%: the figures would measure the client)"
	elif [[ $p99 == +Inf ]] || awk -v p="$p99" -v m="$P99_MAX" 'BEGIN { exit !(p > m) }'; then
		verdict="STOP: lateness p99 $p99_txt > 3.3 ms"
	elif awk -v t="$tps" -v m="$MIN_TICKS" 'BEGIN { exit !(t < m) }'; then
		verdict="STOP: ticks/s $tps < $MIN_TICKS"
	fi
	printf 'density K=%d: matches %d, CPU per match %.2f%% of a core, ticks/s %.2f (min %.2f), lateness p99 %s (%.1f%% within 3.3 ms), servers %.1f%% of their core (cpu%s busy %.1f%%, all processes), client CPU %.1f%% of a core (%d clients, loop max lag %.1f ms), %s\n' \
		"$k" "$k" "$cpu_match" "$tps" "$min_tps" "$p99_txt" "$(awk -v w="$within" 'BEGIN { print w * 100 }')" "$srv_cpu" \
		"$SERVER_CPU" "$busy" "$cl_cpu" "$((6 * k))" "$cl_lag" "$verdict"
	if [[ $verdict != held ]]; then
		[[ -n $stop_reason ]] || stop_reason="K=$k: ${verdict#STOP: }"
		[[ $RAMP_ALL == 1 && $verdict != *"clients still playing"* ]] && continue
		break
	fi
	[[ -z $stop_reason ]] || continue # DENSITY_RAMP_ALL: a level after the stop is printed, not counted
	held=$k
	held_cpu=$cpu_match
	held_json=$level
done
[[ -n $stop_reason ]] || stop_reason="cap: every level up to K=$last_k held (DENSITY_LEVELS)"

load="load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
echo "density: 3v3 matches per core (p99 lateness < 3.3 ms, >= 59 ticks/s): $held (largest level held; $stop_reason; $load)"
if [[ -n $held_cpu ]]; then
	printf 'density: CPU per match at K=%d: %.2f%% of a core\n' "$held" "$held_cpu"
else
	echo "density: CPU per match: none held (${first_cpu:-no level measured})"
fi
jq -n --argjson held "$held" --arg stop "$stop_reason" --arg load "$load" --argjson level "${held_json:-null}" \
	--arg at "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
	'{matches_per_core: $held, stop: $stop, load: $load, at: $at, level: $level}' >"$OUT/result.json"

bench_row "3v3 matches per core (p99 lateness <3.3 ms, ≥59 ticks/s)" "$held" \
	"Colyseus 65 rooms/core (issue 24, not run here)" "≥260 (4×)" "$(bench_met "$held >= 260")"
bench_row "CPU per match (3v3, real ENet clients)" \
	"$([[ -n $held_cpu ]] && printf '%.2f%% of a core at K=%d' "$held_cpu" "$held" || echo "none held (${first_cpu:-no level measured})")" \
	"Colyseus 0.91% of a core per room (issue 24, not run here)" "-" "n/a"
