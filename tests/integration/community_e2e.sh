#!/usr/bin/env bash
# Community mode end to end (issue 23, SPEC 11, protocol section 11), the
# OpenPolytopia-style run: real ENet clients (gsclient community-e2e, six
# registered players and three others at once) against the real
# `cc-gameserver --mode=community`: a wrong protocol version is refused;
# a request before the hello is not_registered; full, double and
# unknown-lobby joins are refused with their results; renames reach every
# player in lobby_updated; ready -> countdown (match_starting) -> welcome
# -> a real match -> back to the lobby, open and not ready; the last
# not-ready player leaving, or another disconnecting, starts the countdown
# for the rest; a leave or an un-ready during the countdown re-opens the
# lobby and no solo match starts; a silent pre-handshake peer receives
# nothing and is dropped at the 10 s deadline. Then the server's log lines
# and its --results-log (one JSON line for the one match played).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gameserver_lib.sh"

port=$(free_port)
gs_start_community "$port" --match-seconds=5 --warmup-seconds=0 --overtime-max-seconds=1 --results-log="$T_DIR/results.jsonl"
gs_community "end-to-end run" "$T_DIR/e2e.out" community-e2e --port="$port" --events="$T_DIR/e2e.events" \
	--countdown-ms=5000 --prehandshake-ms=10000

# The log lines of SPEC 11 / issue 23, with the lobby, members and score.
for ev in lobby_created lobby_deleted match_starting match_ended; do
	grep -q "\"event\":\"$ev\"" "$T_DIR/gs.log" || fail "no $ev line in the server log"
done
line=$(grep '"event":"match_ended"' "$T_DIR/gs.log" | head -n1)
for field in lobby_id members; do
	jq -e "has(\"$field\")" <<<"$line" >/dev/null || fail "match_ended has no $field: $line"
done
jq -e 'has("score") or (has("score_0") and has("score_1"))' <<<"$line" >/dev/null || fail "match_ended has no score: $line"
pass "log lines lobby_created, lobby_deleted, match_starting, match_ended ($line)"

# One match was played: one results line, whose score is the one the players saw.
[[ -f $T_DIR/results.jsonl ]] || fail "--results-log wrote no file"
n=$(wc -l <"$T_DIR/results.jsonl")
expect_eq "results lines" 1 "$n"
seen=$(grep '"ev":"match_end"' "$T_DIR/e2e.events" | head -n1 | jq -c .ended_score)
logged=$(jq -c '.score // [.score_0, .score_1]' "$T_DIR/results.jsonl")
expect_eq "the logged score is the one the players saw" "$seen" "$logged"
pass "--results-log: one line, score $logged"

# The metrics of issue 23 saw the run: requests by result, broadcasts, the one match.
metrics=$(curl -sf "http://127.0.0.1:$port/metrics") || fail "GET /metrics failed"
metric() { awk -v k="$1" 'index($0, k) == 1 { s += $NF } END { print s + 0 }' <<<"$metrics"; }
expect_eq "matches started" 1 "$(metric 'cosmic_clash_gameserver_matches_started_total')"
for r in not_registered already_in_lobby lobby_full unknown_lobby already_started; do
	n=$(grep -E "^cosmic_clash_gameserver_lobby_requests_total\{.*result=\"$r\"" <<<"$metrics" | awk '{ s += $NF } END { print s + 0 }')
	((n >= 1)) || fail "no lobby request counted with result $r: $(grep lobby_requests_total <<<"$metrics")"
done
n=$(metric 'cosmic_clash_gameserver_lobby_broadcasts_total{message="lobby_updated"}')
((n > 0)) || fail "no lobby_updated broadcast counted"
pass "metrics: 1 match started, every refusal counted by result, $n lobby_updated broadcasts"
