#!/usr/bin/env bash
# The production cc-api logs players in through Steam (a fake serving
# Steam's documented shapes over real HTTP) with the outcomes of SPEC 3:
# Steam's faults are 503, never 401; the ticket's faults are 401; shared and
# banned accounts are 403; a returning account keeps its player id. cc-api
# has no fake-login path: the testkit symbol is absent and made-up tickets
# are refused, while Steam is unconfigured the route answers 503.
source "$(dirname "$0")/lib.sh"

key="steamkey-$RANDOM$RANDOM$RANDOM-canary"
printf '%s\n' "$key" >"$T_DIR/steam.key"
"$TOP/build/fakes/fake_steam" --port=0 --app-id=480 --key-file="$T_DIR/steam.key" >"$T_DIR/fake.out" 2>"$T_DIR/fake.err" &
T_PIDS+=("$!"); T_LOGS+=("$T_DIR/fake.err")
fake_pid=$!
for _ in $(seq 200); do
	read -r word fake_port <"$T_DIR/fake.out" 2>/dev/null && [[ $word == listening ]] && break
	kill -0 "$fake_pid" 2>/dev/null || fail "fake_steam exited: $(cat "$T_DIR/fake.err")"
	sleep 0.02
done
[[ ${fake_port:-} =~ ^[0-9]+$ ]] || fail "fake_steam did not print its port: $(cat "$T_DIR/fake.out")"

# 1. cc-api has no testkit path.
# (symbol lists are read whole: grep -q would cut nm off and pipefail would
# report that as a failure)
api_syms=$(nm --defined-only "$BIN/cc-api"); testkit_syms=$(nm --defined-only "$BIN/cc-testkit-api")
[[ $api_syms != *api_testkit_login* ]] || fail "cc-api defines api_testkit_login"
[[ $testkit_syms == *api_testkit_login* ]] || fail "cc-testkit-api lacks api_testkit_login: the check above proves nothing"
API_BIN="$BIN/cc-api" start_api NOSTEAM
http POST "$NOSTEAM_URL/v1/session/steam" "" '{"ticket":"0a0b"}'
expect_http "cc-api without Steam configured" 503 not_configured
http POST "$NOSTEAM_URL/v1/session/steam" "" '{"ticket":"any-made-up-ticket"}'
[[ $STATUS != 200 ]] || fail "cc-api accepted a made-up ticket without Steam: $BODY"

# 2. Outcomes against the fake.
API_BIN="$BIN/cc-api" start_api S --steam-api-url="http://127.0.0.1:$fake_port" --steam-app-id=480 \
	--steam-publisher-key-file="$T_DIR/steam.key" --steam-timeout-ms=700
API_BIN="$BIN/cc-api" start_api WRONGKEY --steam-api-url="http://127.0.0.1:$fake_port" --steam-app-id=480 \
	--steam-publisher-key-file=<(echo "a-revoked-key-000000000000000000000")
API_BIN="$BIN/cc-api" start_api LENIENT --steam-api-url="http://127.0.0.1:$fake_port" --steam-app-id=480 \
	--steam-publisher-key-file="$T_DIR/steam.key" --steam-reject-vac-banned=false

cases=(
	"ok|S|0a11|200|"
	"family shared|S|fa11|403|family_shared"
	"vac banned|S|bb11|403|vac_banned"
	"vac banned, policy allows|LENIENT|bb12|200|"
	"publisher banned|S|cc11|403|publisher_banned"
	"invalid parameter|S|e011|401|invalid_ticket"
	"invalid ticket|S|e111|401|invalid_ticket"
	"ticket for another app|S|e211|401|invalid_ticket"
	"expired ticket|S|e311|401|invalid_ticket"
	"unknown steam error|S|ee11|503|steam_unavailable"
	"steam 429|S|2911|503|steam_unavailable"
	"steam 500|S|5011|503|steam_unavailable"
	"steam 503|S|5111|503|steam_unavailable"
	"slow steam|S|5d11|503|steam_unavailable"
	"garbage body|S|9a11|503|steam_unavailable"
	"wrong shape|S|9b11|503|steam_unavailable"
	"wrong types|S|9c11|503|steam_unavailable"
	"oversized reply|S|9f11|503|steam_unavailable"
	"revoked key|WRONGKEY|0a12|503|steam_unavailable"
	"malformed ticket (not hex)|S|zz|400|invalid_request"
	"malformed ticket (odd length)|S|0a1|400|invalid_request"
)
for c in "${cases[@]}"; do
	IFS='|' read -r name api ticket status code <<<"$c"
	url_var="${api}_URL"
	start=$SECONDS
	http POST "${!url_var}/v1/session/steam" "" "{\"ticket\":\"$ticket\"}"
	expect_http "$name (ticket $ticket)" "$status" "$code"
	((SECONDS - start <= 3)) || fail "$name took $((SECONDS - start)) s: the Steam timeout did not bound it"
done
first=$(login "$S_URL" 0a11)
http POST "$S_URL/v1/session/steam" "" '{"ticket":"0a11"}'
again=$(jq -r .player_id <<<"$BODY")
first_player=$(sql "SELECT player_id FROM sessions WHERE token_hash = sha256('$first'::bytea)")
expect_eq "a returning Steam account keeps its player id" "$first_player" "$again"

for f in "$T_DIR"/*.log "$T_DIR"/*.err; do
	if grep -q "$key" "$f"; then fail "the Steam publisher key appears in $f"; fi
done
pass "${#cases[@]} Steam outcomes map per SPEC 3; cc-api has no fake login; the publisher key never logged"
