#!/usr/bin/env bash
# The operator console in a real browser (issue 27): Debian's headless
# Chromium, driven by puppeteer-core (scripts/npm-tools.sh installs the
# pinned version; nothing downloads a browser), against the running system:
# cc-testkit-api, cc-allocator's local provider (cc-supervisor ->
# cc-gameserver) and cc-matcher, with cc-player's players.
# tests/integration/console_browser.js drives the page; this script starts
# the system, checks the page's assets (Content-Type, ETag and 304,
# Cache-Control, the CSP) and the 401/404 answers with curl, and moves the
# system on when the page says it saw each stage (files in $T_DIR/steps):
#   1. the page signed in shows queue depth 0; players queue (no matcher
#      yet); the page sees the depth rise to 6;
#   2. cc-matcher starts; the six play one casual match to its end; the page
#      finds the match by search, opens it and shows its stored result;
#   3. the page bans a player with a reason; that player's next request is
#      refused (403 banned) and their sessions are revoked;
#   4. a wrong token sees the login form and nothing else.
# Any console error, page error or CSP violation in the page fails it.
# Screenshots at 1280x720: build/test-output/console_browser/*.png.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib_loop.sh"

CHROMIUM=${CC_CHROMIUM:-/usr/bin/chromium}
[[ -x $CHROMIUM ]] || fail "no Chromium at $CHROMIUM (scripts/ensure-deps.sh installs Debian's chromium)"
PUPPETEER_SKIP_DOWNLOAD=1 "$TOP/scripts/npm-tools.sh" >"$T_DIR/npm.log" 2>&1 || fail "npm-tools: $(tail -5 "$T_DIR/npm.log")"
OUT="$TOP/build/test-output/console_browser"
rm -rf "$OUT" && mkdir -p "$OUT"

scratch_database console_browser
# Chromium's profile and scratch files, in a short path (its singleton socket
# must fit sockaddr_un), removed on exit beside what scratch_database removes.
CHROME_TMP=$(mktemp -d /tmp/ccb.XXXXXX)
trap 'status=$?; rm -rf "$CHROME_TMP"; admin_sql "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true; t_cleanup "$status"' EXIT
loop_secrets
TOKEN="optok-console-$RANDOM$RANDOM"
cat >"$T_DIR/gameserver.conf" <<CONF
match-seconds = 8
warmup-seconds = 1
goal-pause-seconds = 1
overtime-max-seconds = 4
connect-window-seconds = 20
CONF
start_api A --regions=eu-west --workload-secret-file="$T_DIR/workload.secret" --operator-token-file=<(echo "$TOKEN")
game_port=$(free_port)
start_pool "$T_DIR/allocator.log" "$game_port" "$game_port" cc-allocator
T_LOGS+=("$T_DIR/state/local-$game_port.log")

# ---- the page's assets and refusals, over plain HTTP ------------------------------
head_of() { curl -s -D - -o "$T_DIR/asset.body" "$@"; }
for asset in "/console text/html" "/console/app.js text/javascript" "/console/ui.js text/javascript" \
	"/console/style.css text/css" "/console/icon.svg image/svg+xml"; do
	read -r path ctype <<<"$asset"
	h=$(head_of "$A_URL$path" | tr -d '\r')
	grep -q '^HTTP/1.1 200' <<<"$h" || fail "$path: not 200: $h"
	grep -qi "^content-type: $ctype" <<<"$h" || fail "$path: Content-Type is not $ctype: $h"
	grep -qi '^cache-control: no-cache$' <<<"$h" || fail "$path: Cache-Control is not no-cache: $h"
	grep -qi "^content-security-policy: default-src 'none'; script-src 'self';" <<<"$h" || fail "$path: no strict CSP: $h"
	grep -qi '^x-content-type-options: nosniff' <<<"$h" || fail "$path: no nosniff: $h"
	etag=$(sed -n 's/^[Ee][Tt][Aa][Gg]: //p' <<<"$h")
	[[ $etag =~ ^\"[0-9a-f]{32}\"$ ]] || fail "$path: ETag '$etag'"
	expect_eq "$path: 304 for its own ETag" 304 "$(curl -s -o /dev/null -w '%{http_code}' -H "If-None-Match: $etag" "$A_URL$path")"
done
for path in /console/nope.js /console/a/b /console/; do
	http GET "$A_URL$path"
	expect_http "$path" 404 not_found
	jq -e '.error.retryable == false and (.error.message | length > 0)' <<<"$BODY" >/dev/null || fail "$path: not the API's error shape: $BODY"
done
for route in overview matches servers "players?q=x" "matches/$(cat /proc/sys/kernel/random/uuid)" \
	"players/$(cat /proc/sys/kernel/random/uuid)/history"; do
	http GET "$A_URL/v1/admin/$route"
	expect_http "/v1/admin/$route without a token" 401 unauthorized
	http GET "$A_URL/v1/admin/$route" "wrong-token-$RANDOM"
	expect_http "/v1/admin/$route with a wrong token" 401 unauthorized
done

# The player the page bans: a session of its own, answered before the ban.
http POST "$A_URL/v1/session/steam" "" "{\"ticket\":\"console-victim-$RANDOM$RANDOM\"}"
expect_http "the victim logs in" 200
victim_token=$(jq -r .session_token <<<"$BODY") victim=$(jq -r .player_id <<<"$BODY")
http GET "$A_URL/v1/profile/ranked" "$victim_token"
expect_http "the victim before the ban" 404 no_rating

# ---- the browser ----------------------------------------------------------------------
steps="$T_DIR/steps"
mkdir -p "$steps"
T_LOGS+=("$T_DIR/browser.log")
TMPDIR="$CHROME_TMP" CONSOLE_URL="$A_URL/console" OPERATOR_TOKEN="$TOKEN" STEPS="$steps" OUT_DIR="$OUT" CHROMIUM="$CHROMIUM" \
	VICTIM="$victim" VICTIM_TOKEN="$victim_token" NODE_PATH="$TOP/build/node/node_modules" \
	node "$TOP/tests/integration/console_browser.js" >"$T_DIR/browser.log" 2>&1 &
browser=$!
T_PIDS+=("$browser")

# wait_step NAME SECONDS: the page wrote steps/NAME (or the browser ended: its verdict stands).
wait_step() {
	local deadline=$((SECONDS + $2))
	while [[ ! -e $steps/$1 ]]; do
		running "$browser" || { wait "$browser" || true; fail "the browser test ended before '$1': $(tail -20 "$T_DIR/browser.log")"; }
		((SECONDS < deadline)) || fail "the page did not reach '$1' within $2 s: $(tail -20 "$T_DIR/browser.log")"
		sleep 0.1
	done
}

wait_step signed-in 30
run=$((RANDOM * 32768 + RANDOM))
T_LOGS+=("$T_DIR/player.err")
"$BIN/cc-player" --mode=demo --api-url="$A_URL" --players=6 --threads=6 --regions=eu-west --ranked-percent=0 \
	--decline-percent=0 --seed="$run" --build="console-$run" --match-deadline-seconds=60 --play \
	--assignment-timeout-seconds=60 --game-deadline-seconds=60 --log-level=info \
	>"$T_DIR/player.out" 2>"$T_DIR/player.err" &
players=$!
T_PIDS+=("$players")

wait_step queue-seen 40
madmin=$(free_port)
COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" start_bg "$T_DIR/matcher.log" "$BIN/cc-matcher" \
	--playlist=casual --admin-port="$madmin" --poll-interval-ms=100
wait_http "http://127.0.0.1:$madmin/readyz" "$LAST_PID" 20
rc=0
wait "$players" || rc=$?
expect_eq "cc-player's exit status ($(cat "$T_DIR/player.out"))" 0 "$rc"
match=$(sql "SELECT DISTINCT match_id FROM tickets WHERE build = 'console-$run' AND state = 'COMPLETED'")
[[ $match =~ ^[0-9a-f-]{36}$ ]] || fail "no completed match of the six: '$match'"
score=$(sql "SELECT score_team0 || ' – ' || score_team1 FROM match_results WHERE match_id = '$match'")
printf '%s\n%s\n' "$match" "$score" >"$steps/match.tmp" && mv "$steps/match.tmp" "$steps/match-done"

wait_step banned 40
# What the page did, seen from outside it: the ban stored with its reason, every session revoked.
http GET "$A_URL/v1/profile/ranked" "$victim_token"
expect_http "the banned player's next request" 403 banned
expect_eq "the victim's live sessions after the ban" 0 \
	"$(sql "SELECT count(*) FROM sessions WHERE player_id = '$victim' AND revoked_at IS NULL")"
expect_eq "the stored ban reason" "console test: griefing" "$(sql "SELECT ban_reason FROM players WHERE id = '$victim'")"

rc=0
wait "$browser" || rc=$?
cat "$T_DIR/browser.log"
expect_eq "the browser test's exit status" 0 "$rc"
for shot in login overview matches match players player servers wrong-token; do
	[[ -s $OUT/$shot.png ]] || fail "no screenshot $OUT/$shot.png"
done
pass "console: assets with types, ETag/304, no-cache and the CSP; 401 without the token; queue depth seen rising, match $match's result $score found, the ban refused the player's next request, a wrong token sees only the login; screenshots in build/test-output/console_browser/"
