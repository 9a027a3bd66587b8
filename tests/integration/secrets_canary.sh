#!/usr/bin/env bash
# Canary secrets planted in configuration (environment, secret files, a
# refused command-line flag) and in requests (Authorization, query string,
# body) never reach any binary's stderr.
source "$(dirname "$0")/lib.sh"

canary="CANARY$RANDOM$RANDOM"
dsn_with_password=$(sed -E "s#postgresql://cc@#postgresql://cc:${canary}dbpw@#" <<<"$CC_TEST_PG_DSN")
printf '%s\n' "$dsn_with_password" >"$T_DIR/dsn"

# 1. A secret given as a flag is refused without being echoed.
rc=0
"$BIN/cc-api" --database-url="${canary}flag" >"$T_DIR/flag.out" 2>"$T_DIR/flag.err" || rc=$?
expect_eq "cc-api with a secret on the command line: exit status" 2 "$rc"
rc=0
"$BIN/cc-migrate" --database-url="${canary}flag" status >"$T_DIR/migrate-flag.out" 2>"$T_DIR/migrate-flag.err" || rc=$?
expect_eq "cc-migrate with a secret on the command line: exit status" 2 "$rc"

# 2. cc-migrate with the password in the environment, then from a file.
COSMIC_CLASH_DATABASE_URL="$dsn_with_password" "$BIN/cc-migrate" --migrations-dir="$TOP/migrations" status \
	>"$T_DIR/migrate-env.out" 2>"$T_DIR/migrate-env.err" || fail "cc-migrate status (env DSN) failed: $(cat "$T_DIR/migrate-env.err")"
"$BIN/cc-migrate" --database-url-file="$T_DIR/dsn" --migrations-dir="$TOP/migrations" status \
	>"$T_DIR/migrate-file.out" 2>"$T_DIR/migrate-file.err" || fail "cc-migrate status (DSN file) failed: $(cat "$T_DIR/migrate-file.err")"

# 3. cc-api running with the DSN from a file, taking requests that carry secrets.
port=$(free_port); admin=$(free_port)
start_bg "$T_DIR/api.err" "$BIN/cc-api" --database-url-file="$T_DIR/dsn" --port="$port" --admin-port="$admin" --log-level=debug
pid=$LAST_PID
wait_http "http://127.0.0.1:$admin/healthz" "$pid" 20
curl -s -o /dev/null -H "Authorization: Bearer ${canary}auth" -H "X-Api-Key: ${canary}hdr" \
	"http://127.0.0.1:$port/v1/session/steam?key=${canary}query" -H 'Content-Type: application/json' -d "{\"ticket\":\"${canary}body\"}"
curl -s -o /dev/null -H "Authorization: Bearer ${canary}auth2" "http://127.0.0.1:$port/v1/queue/x?token=${canary}q2"
curl -s -o /dev/null "http://127.0.0.1:$admin/readyz"
kill "$pid"; wait "$pid" 2>/dev/null || true
grep -q '"event":"http_request"' "$T_DIR/api.err" || fail "cc-api logged no request at all, so the canary check would prove nothing: $(cat "$T_DIR/api.err")"

# 4. cc-testkit-api with operator and Steam secrets in the environment,
# serving real logins, probes and queue calls: neither the configured
# secrets nor the session tokens and nonces it minted reach its log.
port=$(free_port); admin=$(free_port)
COSMIC_CLASH_DATABASE_URL="$dsn_with_password" COSMIC_CLASH_OPERATOR_TOKEN="${canary}-operator-token" \
	COSMIC_CLASH_STEAM_PUBLISHER_KEY="${canary}steam" start_bg "$T_DIR/testkit.err" \
	"$BIN/cc-testkit-api" --port="$port" --admin-port="$admin" --log-level=debug --regions=eu-west
pid=$LAST_PID
wait_http "http://127.0.0.1:$admin/healthz" "$pid" 20
U="http://127.0.0.1:$port"
tok=$(login "$U" "${canary}ticket")
nonce=$(curl -s -X POST -H "Authorization: Bearer $tok" "$U/v1/probes/eu-west/challenge" | jq -r .nonce)
curl -s -o /dev/null -H "Authorization: Bearer $tok" "$U/v1/probes/eu-west/answer" -H 'Content-Type: application/json' -d "{\"nonce\":\"$nonce\"}"
curl -s -o /dev/null -H "Authorization: Bearer $tok" -H "Idempotency-Key: ${canary}idem" "$U/v1/queue" \
	-H 'Content-Type: application/json' -d '{"playlist":"casual","protocol_version":1,"build":"b1"}'
# The event stream: the minted token as a browser's subprotocol, forged ones in both places.
deadline=$((SECONDS + 20))
until grep -q '"event":"events_listening"' "$T_DIR/testkit.err"; do
	((SECONDS < deadline)) || fail "cc-testkit-api's event listener never started: $(tail -3 "$T_DIR/testkit.err")"
	sleep 0.05
done
/usr/bin/python3 "$TOP/tests/integration/events_client.py" listen "$U" "$tok" "$T_DIR/stream.msgs" --subprotocol &
evpid=$!
deadline=$((SECONDS + 20))
until grep -q '"event":"stream.ready"' "$T_DIR/stream.msgs" 2>/dev/null; do
	((SECONDS < deadline)) || fail "no stream.ready over the subprotocol login"
	sleep 0.05
done
kill -TERM "$evpid"; wait "$evpid" || true
for auth in "Authorization: Bearer ${canary}wsauth" "Sec-WebSocket-Protocol: cc.v1, cc.v1.bearer.${canary}wsproto"; do
	expect_eq "a forged stream login ($auth)" 401 "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 -H "$auth" \
		-H 'Connection: Upgrade' -H 'Upgrade: websocket' -H 'Sec-WebSocket-Version: 13' \
		-H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' "$U/v1/events")"
done
curl -s -o /dev/null -H "Authorization: Bearer ${canary}-operator-token" "$U/v1/admin/queue/stats"
curl -s -o /dev/null -H "Authorization: Bearer ${canary}wrongop" "$U/v1/admin/queue/stats"
kill "$pid"; wait "$pid" 2>/dev/null || true
grep -q '"route":"/v1/queue"' "$T_DIR/testkit.err" || fail "cc-testkit-api logged no queue request: $(cat "$T_DIR/testkit.err")"
grep -q '"event":"ws_closed"' "$T_DIR/testkit.err" || fail "cc-testkit-api logged no event stream: $(cat "$T_DIR/testkit.err")"
for minted in "$tok" "$nonce"; do
	[[ ${#minted} -ge 20 ]] || fail "a minted secret is implausibly short: '$minted'"
	if grep -q -- "$minted" "$T_DIR"/*.err; then fail "a minted session token or nonce reached the log"; fi
done

leaks=$(grep -l "$canary" "$T_DIR"/*.err "$T_DIR"/*.out 2>/dev/null || true)
if [[ -n "$leaks" ]]; then
	for f in $leaks; do echo "---- $f"; grep -n "$canary" "$f"; done
	fail "a canary secret reached the output of: $leaks"
fi
pass "no canary in $(cat "$T_DIR"/*.err "$T_DIR"/*.out | wc -l) lines of output"
