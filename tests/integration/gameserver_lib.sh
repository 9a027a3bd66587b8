# gameserver_lib.sh - sourced after lib.sh by the cc-gameserver and
# cc-supervisor tests: a key set and a minted roster, the fake server
# routes, a game server, and waits on log lines and exits with deadlines.
# (Not executable: run-tests.sh runs only executable scripts.)

GSCLIENT="$TOP/build/tests/gsclient"
[[ -x $GSCLIENT ]] || fail "$GSCLIENT is missing (make tests-build builds it)"

# gs_mint PLAYERS: a key set (id k1) in $T_DIR/keys.json, a workload token
# in $T_DIR/workload, and in $T_DIR/mint a roster for server $GS_SERVER_ID
# with one token per slot plus the hostile ones (tests/gameserver/gsclient.c).
GS_SERVER_ID=${GS_SERVER_ID:-local-test}
gs_mint() {
	mkdir -p "$T_DIR/mint"
	printf '{"k1":"%s"}' "$(head -c 32 /dev/urandom | base64 -w0)" >"$T_DIR/keys.json"
	printf 'workload-%s' "$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$T_DIR/workload"
	"$GSCLIENT" mint --keys="$T_DIR/keys.json" --key-id=k1 --server-id="$GS_SERVER_ID" --players="$1" \
		--out="$T_DIR/mint" || fail "gsclient mint failed"
}

# gs_start_fake [FLAGS...]: fake server routes serving $T_DIR/mint/roster.json; sets FAKE_URL, FAKE_PID.
gs_start_fake() {
	local out="$T_DIR/fake.$RANDOM.out"
	T_LOGS+=("$out.log")
	"$TOP/build/fakes/fake_server_routes" --server-id="$GS_SERVER_ID" --roster-file="$T_DIR/mint/roster.json" \
		--workload-token-file="$T_DIR/workload" "$@" >"$out" 2>"$out.log" &
	T_PIDS+=("$!")
	FAKE_PID=$!
	local deadline=$((SECONDS + 20))
	while ! grep -q '^listening ' "$out" 2>/dev/null; do
		running "$FAKE_PID" || fail "fake_server_routes exited before listening: $(cat "$out.log")"
		((SECONDS < deadline)) || fail "fake_server_routes did not listen within 20 s"
		sleep 0.02
	done
	FAKE_URL="http://127.0.0.1:$(awk '/^listening/ {print $2}' "$out")"
}

# gs_start_server PORT [FLAGS...]: cc-gameserver on PORT (UDP, probe on TCP) with the minted roster; log $T_DIR/gs.log.
gs_start_server() {
	local port=$1; shift
	COSMIC_CLASH_JOIN_KEYS_FILE="$T_DIR/keys.json" COSMIC_CLASH_WORKLOAD_TOKEN_FILE="$T_DIR/workload" \
		start_bg "$T_DIR/gs.log" "$BIN/cc-gameserver" --bind=127.0.0.1 --game-port="$port" \
		--server-id="$GS_SERVER_ID" --roster-file="$T_DIR/mint/roster.json" --api-url="$FAKE_URL" "$@"
	wait_http "http://127.0.0.1:$port/readyz" "$LAST_PID" 20
}

# wait_log FILE PATTERN COUNT PID SECONDS: until FILE has COUNT lines matching PATTERN (grep -E);
# fails at once when PID exits first, or at the deadline, saying how many it saw.
wait_log() {
	local file=$1 pattern=$2 count=$3 pid=$4 deadline=$((SECONDS + $5)) seen=0
	while ((SECONDS < deadline)); do
		seen=$(grep -cE -- "$pattern" "$file" 2>/dev/null || true)
		((seen >= count)) && return 0
		running "$pid" || fail "process $pid exited with $seen of $count lines matching $pattern in $file"
		sleep 0.02
	done
	fail "$file: $seen of $count lines matching $pattern after $5 s"
}

# wait_exit PID SECONDS: waits for a child of this shell to exit; sets EXIT_STATUS.
wait_exit() {
	local pid=$1 deadline=$((SECONDS + $2))
	while running "$pid"; do
		((SECONDS < deadline)) || fail "process $pid still running after $2 s"
		sleep 0.05
	done
	EXIT_STATUS=0
	wait "$pid" || EXIT_STATUS=$?
}

# expect_whole_run_wakeups LOG WHO: the last "loop_wakeups" line of cc-gameserver's LOG (written as
# its loop returns) says at most 1.5 wake-ups per tick over the whole run (issue 24); WHO names the
# loop in the failure.
expect_whole_run_wakeups() {
	local line lw lt lp
	line=$(grep '"event":"loop_wakeups"' "$1" | tail -n 1)
	[[ -n $line ]] || fail "no loop_wakeups line as $2 stopped"
	read -r lw lt lp <<<"$(jq -r '"\(.wakeups) \(.ticks) \(.per_tick)"' <<<"$line")"
	((lt > 0)) || fail "loop_wakeups line with no ticks: $line"
	awk -v p="$lp" 'BEGIN { exit !(p <= 1.5) }' || fail "over the whole run $2 woke $lw times in $lt ticks ($lp per tick): $line"
	pass "whole run: $lw wake-ups over $lt ticks ($lp per tick)"
}

# gs_start_community PORT [FLAGS...]: cc-gameserver --mode=community on PORT (UDP, probe on TCP), no
# roster, keys or control plane (issue 23); log $T_DIR/gs.log, pid GS_PID.
gs_start_community() {
	local port=$1; shift
	start_bg "$T_DIR/gs.log" "$BIN/cc-gameserver" --mode=community --bind=127.0.0.1 --game-port="$port" "$@"
	GS_PID=$LAST_PID
	wait_http "http://127.0.0.1:$port/readyz" "$GS_PID" 20
}

# gs_community NAME OUT ARGS...: runs `gsclient ARGS` (a community-* scenario, tests/gameserver/
# community.c) into OUT; unless it exits 0 with a last line {"result":"ok"}, fails with the
# command, every failed check it printed and its last line (and the tails of OUT, of its --events
# file and of the other logs, as every failure does).
gs_community() {
	local name=$1 out=$2 rc=0 a; shift 2
	T_LOGS+=("$out")
	for a in "$@"; do [[ $a == --events=* ]] && T_LOGS+=("${a#--events=}"); done
	"$GSCLIENT" "$@" >"$out" 2>&1 || rc=$?
	if ((rc != 0)) || [[ $(tail -n1 "$out" | jq -r .result 2>/dev/null) != ok ]]; then
		echo "$T_NAME: failed checks of gsclient $*:"
		grep '"ok":false' "$out" | head -n 20
		fail "$name: gsclient $* exited $rc; last line: $(tail -n1 "$out")"
	fi
	pass "$name: $(jq -r 'select(.check != null) | .check' "$out" | wc -l) checks passed"
}
