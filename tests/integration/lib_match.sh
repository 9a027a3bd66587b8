# lib_match.sh - sourced by integration scripts after lib.sh: a match made
# the real way (players log in, probe, queue with a build of their own, a
# running cc-matcher proposes, everyone accepts over HTTP). Needs A_URL (a
# cc-testkit-api) and a cc-matcher for the playlist and team size.

# make_match NAME PLAYLIST TEAM_SIZE [RATINGS...]: 2 x TEAM_SIZE fresh players
# (rated "rating/deviation/volatility[/games]" in PLAYLIST first, when given) queue
# with a build of their own, accept the proposal; sets MATCH, PLAYERS[],
# TOKENS[] (by team, then id).
make_match() {
	local name=$1 playlist=$2 size=$3; shift 3
	local n=$((2 * size)) i tok pid
	local -a toks=() pids=()
	for ((i = 0; i < n; i++)); do
		tok=$(login "$A_URL" "$name-$i-$RANDOM$RANDOM")
		probe "$A_URL" "$tok" eu-west
		http POST "$A_URL/v1/queue" "$tok" "{\"playlist\":\"$playlist\",\"protocol_version\":1,\"build\":\"$name\"}" -H "Idempotency-Key: $name-$i"
		expect_http "$name: player $i queues" 201
		pid=$(jq -r .player_id <<<"$BODY")
		toks+=("$tok"); pids+=("$pid")
		# The rating a result will start from (read by the result, not from the ticket).
		if [[ -n ${1:-} ]]; then
			IFS=/ read -r r d v g <<<"$1"; shift
			sql "INSERT INTO ratings (player_id, playlist, rating, deviation, volatility, games) VALUES ('$pid', '$playlist', $r, $d, $v, ${g:-0})" >/dev/null
		fi
	done
	local deadline=$((SECONDS + 30)) proposal=""
	while ((SECONDS < deadline)); do
		proposal=$(sql "SELECT proposal_id FROM tickets WHERE player_id = '${pids[0]}' AND state = 'PROPOSED'")
		[[ -n $proposal ]] && break
		sleep 0.1
	done
	[[ -n $proposal ]] || fail "$name: no proposal within 30 s ($(sql "SELECT state FROM tickets WHERE player_id = '${pids[0]}'"))"
	for ((i = 0; i < n; i++)); do
		http POST "$A_URL/v1/proposals/$proposal/response" "${toks[$i]}" '{"response":"accept","revision":1}'
		expect_http "$name: player $i accepts" 200
	done
	MATCH=$(jq -r .match_id <<<"$BODY")
	[[ $MATCH =~ ^[0-9a-f-]{36}$ ]] || fail "$name: no match after every accept: $BODY"
	PLAYERS=() TOKENS=()
	while read -r p; do
		PLAYERS+=("$p")
		for ((i = 0; i < n; i++)); do
			if [[ ${pids[$i]} == "$p" ]]; then TOKENS+=("${toks[$i]}"); fi
		done
	done < <(sql "SELECT player_id FROM match_players WHERE match_id = '$MATCH' ORDER BY team, player_id")
}

