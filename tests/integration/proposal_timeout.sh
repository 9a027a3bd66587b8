#!/usr/bin/env bash
# A killed client never holds live players twice (SPEC 7, issue 14). In one
# proposal of each playlist, formed by a real cc-matcher from players queued
# over a real cc-api, one participant never answers (its client is gone: no
# response, no heartbeat) and every other participant accepts. Nobody reads
# the proposal afterwards: the matcher's own sweep expires it. Within one
# window plus one heartbeat timeout:
#  - the non-responder's ticket is EXPIRED with exactly one PROPOSAL_TIMEOUT;
#  - the players who accepted are proposed again, without it;
#  - it is never proposed again;
#  - the accepters kept their place (queued_at) and the heartbeat deadline
#    they had earned (the requeue did not extend it), and got no penalty.
# The non-responder is the oldest ticket, the queue's anchor: the worst case,
# since an anchor that comes back is proposed first every time.
source "$(dirname "$0")/lib.sh"

WINDOW=5  # --proposal-window-seconds
TTL=30    # cc-api's --ticket-ttl-seconds (its default)

# With PROPOSAL_TIMEOUT_INDEX=1 (proposal_timeout_index.sh) cc-api and the
# matchers share the harness's Redis candidate index, as in production: the
# matcher's sweep must then put the requeued accepters back into the index,
# whose head page would otherwise hide them behind newer tickets.
index=()
if [[ ${PROPOSAL_TIMEOUT_INDEX:-0} == 1 ]]; then
	index=(--redis-host="$CC_TEST_REDIS_HOST" --redis-port="$CC_TEST_REDIS_PORT")
fi
start_api A --regions=eu-west --ticket-ttl-seconds=$TTL "${index[@]}"
for playlist in ranked casual; do
	COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" start_bg "$T_DIR/matcher-$playlist.log" "$BIN/cc-matcher" \
		--playlist=$playlist --poll-interval-ms=100 --proposal-window-seconds=$WINDOW --admin-port="$(free_port)" \
		"${index[@]}"
	printf -v "MATCHER_$playlist" '%s' "$LAST_PID"
done

# ready NAME: a fresh player that logged in and probed; prints its token.
ready() {
	local t; t=$(login "$A_URL" "$1-$RANDOM$RANDOM")
	probe "$A_URL" "$t" eu-west
	echo "$t"
}

# enqueue TOKEN PLAYLIST BUILD KEY: the player queues; prints "token ticket player".
enqueue() {
	http POST "$A_URL/v1/queue" "$1" "{\"playlist\":\"$2\",\"protocol_version\":1,\"build\":\"$3\"}" \
		-H "Idempotency-Key: $4"
	expect_http "$4 queues" 201
	echo "$1 $(jq -r .id <<<"$BODY") $(jq -r .player_id <<<"$BODY")"
}

# in_list ITEMS...: "'a','b'" for SQL.
in_list() { local IFS=,; local q=("${@/#/\'}"); q=("${q[@]/%/\'}"); echo "${q[*]}"; }

# run_case PLAYLIST PLAYERS
run_case() {
	local playlist=$1 n=$2 build="kill-$1-$RANDOM" matcher_var="MATCHER_$1"
	local tok=() ticket=() player=() line i
	# Everyone probes first: under load that takes seconds, which must not eat the window.
	local spare_tok; spare_tok=$(ready "$build-spare")
	for ((i = 0; i < n; i++)); do
		tok[$i]=$(ready "$build-$i")
	done
	for ((i = 0; i < n; i++)); do
		line=$(enqueue "${tok[$i]}" "$playlist" "$build" "$build-$i")
		read -r "tok[$i]" "ticket[$i]" "player[$i]" <<<"$line"
	done
	local all; all=$(in_list "${ticket[@]}")
	local dead=${ticket[0]} dead_player=${player[0]}
	local accepters; accepters=$(in_list "${ticket[@]:1}")

	# The first proposal holds all n tickets.
	local deadline=$((SECONDS + 20)) first=""
	while ((SECONDS < deadline)); do
		kill -0 "${!matcher_var}" 2>/dev/null || fail "$playlist: cc-matcher exited: $(tail -5 "$T_DIR/matcher-$playlist.log")"
		first=$(sql "SELECT CASE WHEN count(*) = $n AND count(DISTINCT proposal_id) = 1 THEN min(proposal_id::text) END
			FROM tickets WHERE id IN ($all) AND state = 'PROPOSED'")
		[[ -n "$first" ]] && break
		sleep 0.1
	done
	[[ -n "$first" ]] || fail "$playlist: no proposal of all $n players within 20 s: $(sql "SELECT string_agg(state, ' ') FROM tickets WHERE id IN ($all)")"

	# A spare player, so the accepters can form a match without the dead one.
	line=$(enqueue "$spare_tok" "$playlist" "$build" "$build-spare")
	local spare; spare=$(awk '{print $2}' <<<"$line")
	local before; before=$(sql "SELECT string_agg(id || '@' || queued_at || '@' || expires_at, ' ' ORDER BY id) FROM tickets WHERE id IN ($accepters)")

	for ((i = 1; i < n; i++)); do
		http POST "$A_URL/v1/proposals/$first/response" "${tok[$i]}" '{"response":"accept","revision":1}'
		expect_http "$playlist: player $i accepts" 200
	done

	# Until the dead ticket is EXPIRED and every accepter sits in a new
	# proposal; a second proposal with the dead ticket fails at once.
	deadline=$((SECONDS + WINDOW + TTL))
	local second="" dead_state=""
	while ((SECONDS < deadline)); do
		local times; times=$(sql "SELECT count(*) FROM proposal_participants WHERE ticket_id = '$dead'")
		((times == 1)) || fail "$playlist: the non-responder's ticket was proposed again ($times proposals: $(sql "SELECT string_agg(proposal_id::text || ' ' || p.state, ', ') FROM proposal_participants pp JOIN proposals p ON p.id = pp.proposal_id WHERE ticket_id = '$dead'"))"
		dead_state=$(sql "SELECT state FROM tickets WHERE id = '$dead'")
		second=$(sql "SELECT CASE WHEN count(*) = $((n - 1)) AND count(DISTINCT proposal_id) = 1 THEN min(proposal_id::text) END
			FROM tickets WHERE id IN ($accepters) AND state = 'PROPOSED' AND proposal_id <> '$first'")
		[[ $dead_state == EXPIRED && -n $second ]] && break
		sleep 0.1
	done
	[[ $dead_state == EXPIRED ]] || fail "$playlist: the non-responder's ticket is $dead_state, not EXPIRED, $((WINDOW + TTL)) s after the window opened"
	[[ -n $second ]] || fail "$playlist: the accepters were not proposed again within $((WINDOW + TTL)) s: $(sql "SELECT string_agg(state || ':' || coalesce(proposal_id::text, '-'), ' ') FROM tickets WHERE id IN ($accepters)")"

	expect_eq "$playlist: first proposal" EXPIRED "$(sql "SELECT state FROM proposals WHERE id = '$first'")"
	expect_eq "$playlist: PROPOSAL_TIMEOUT penalties of the non-responder" 1 \
		"$(sql "SELECT count(*) FROM penalties WHERE player_id = '$dead_player' AND kind = 'PROPOSAL_TIMEOUT'")"
	expect_eq "$playlist: penalties of the accepters" 0 \
		"$(sql "SELECT count(*) FROM penalties WHERE player_id IN ($(in_list "${player[@]:1}"))")"
	expect_eq "$playlist: the second proposal is the accepters and the spare" \
		"$(sql "SELECT string_agg(x, ' ' ORDER BY x) FROM unnest(ARRAY[$accepters, '$spare']) x")" \
		"$(sql "SELECT string_agg(ticket_id::text, ' ' ORDER BY ticket_id::text) FROM proposal_participants WHERE proposal_id = '$second'")"
	expect_eq "$playlist: the accepters' place and earned deadline" "$before" \
		"$(sql "SELECT string_agg(id || '@' || queued_at || '@' || expires_at, ' ' ORDER BY id) FROM tickets WHERE id IN ($accepters)")"
	expect_eq "$playlist: one ticket.expired event for the non-responder" 1 \
		"$(sql "SELECT count(*) FROM outbox WHERE resource_id = '$dead' AND event = 'ticket.expired'")"
	# Its ticket is terminal now, so it can never be proposed again; say so after the second proposal too.
	expect_eq "$playlist: proposals the non-responder was in" 1 \
		"$(sql "SELECT count(*) FROM proposal_participants WHERE ticket_id = '$dead'")"
	pass "$playlist: the killed client's ticket EXPIRED with one PROPOSAL_TIMEOUT; the $((n - 1)) accepters were proposed again without it, keeping place and deadline"
}

run_case ranked 2
run_case casual 6

violations=$(psql -qAtX "$CC_TEST_PG_DSN" -f "$TOP/tests/integration/audit.sql")
[[ -z "$violations" ]] || fail "audit found violations: $violations"
pass "audit query: no violations"
