#!/usr/bin/env bash
# Hostile or broken input gets a precise 4xx JSON error, and row counts prove
# nothing was written: malformed JSON, wrong types, unknown fields, an unknown
# playlist or region, a body too large, missing or forged auth, oversized
# headers, non-UUID and traversal ids, replayed and foreign probe nonces, and
# a protocol version below the floor.
source "$(dirname "$0")/lib.sh"

start_api A --regions=eu-west,us-east --min-protocol-version=3 --operator-token-file=<(echo optok-input-fixture)
U=$A_URL
tok=$(login "$U" "input-alice")
other=$(login "$U" "input-bob")
probe "$U" "$tok" eu-west
http POST "$U/v1/probes/eu-west/challenge" "$other" ""
foreign_nonce=$(jq -r .nonce <<<"$BODY")
http POST "$U/v1/probes/eu-west/challenge" "$tok" ""
used_nonce=$(jq -r .nonce <<<"$BODY")
http POST "$U/v1/probes/eu-west/answer" "$tok" "{\"nonce\":\"$used_nonce\"}"
expect_http "first answer" 200

counts() {
	sql "SELECT (SELECT count(*) FROM players) || ' ' || (SELECT count(*) FROM sessions) || ' ' ||
	            (SELECT count(*) FROM tickets) || ' ' || (SELECT count(*) FROM idempotency_keys) || ' ' ||
	            (SELECT count(*) FROM probe_challenges) || ' ' || (SELECT count(*) FROM region_rtts) || ' ' ||
	            (SELECT count(*) FROM outbox) || ' ' || (SELECT coalesce(sum(revision), 0) FROM tickets) || ' ' ||
	            (SELECT count(*) FROM probe_challenges WHERE answered_at IS NOT NULL)"
}
before=$(counts)
big=$(head -c 70000 /dev/zero | tr '\0' 'a')
q='{"playlist":"casual","protocol_version":3,"build":"b1"}'
ticket_ok=11111111-2222-4333-8444-555555555555

# name | method | path | token | body | extra curl args | status | code
cases=(
	"malformed json|POST|/v1/queue|$tok|{\"playlist\":|-H Idempotency-Key:k1|400|invalid_json"
	"not an object (valid JSON: invalid_request)|POST|/v1/queue|$tok|[1,2]|-H Idempotency-Key:k1|400|invalid_request"
	"wrong type|POST|/v1/queue|$tok|{\"playlist\":\"casual\",\"protocol_version\":\"3\",\"build\":\"b1\"}|-H Idempotency-Key:k1|400|invalid_request"
	"unknown field|POST|/v1/queue|$tok|{\"playlist\":\"casual\",\"protocol_version\":3,\"build\":\"b1\",\"rating\":3000}|-H Idempotency-Key:k1|400|invalid_request"
	"bad build|POST|/v1/queue|$tok|{\"playlist\":\"casual\",\"protocol_version\":3,\"build\":\"b 1\"}|-H Idempotency-Key:k1|400|invalid_request"
	"missing idempotency key|POST|/v1/queue|$tok|$q||400|invalid_request"
	"hostile idempotency key|POST|/v1/queue|$tok|$q|-H Idempotency-Key:../../x|400|invalid_request"
	"unknown playlist|POST|/v1/queue|$tok|{\"playlist\":\"arcade\",\"protocol_version\":3,\"build\":\"b1\"}|-H Idempotency-Key:k1|422|unknown_playlist"
	"protocol below floor|POST|/v1/queue|$tok|{\"playlist\":\"casual\",\"protocol_version\":2,\"build\":\"b1\"}|-H Idempotency-Key:k1|426|client_outdated"
	"body too large|POST|/v1/queue|$tok|{\"build\":\"$big\"}|-H Idempotency-Key:k1|413|body_too_large"
	"no auth|POST|/v1/queue||$q|-H Idempotency-Key:k1|401|unauthorized"
	"forged auth|POST|/v1/queue|forged-token-0000000000000000000000000000000|$q|-H Idempotency-Key:k1|401|unauthorized"
	"auth with control bytes|GET|/v1/queue/$ticket_ok|bad\ttoken|||401|unauthorized"
	"non-uuid ticket id|GET|/v1/queue/not-a-uuid|$tok|||400|invalid_request"
	"upper-case uuid|POST|/v1/queue/11111111-2222-4333-8444-55555555555A/heartbeat|$tok|{\"revision\":1}||400|invalid_request"
	"traversal id|GET|/v1/queue/..%2f..%2fetc%2fpasswd|$tok|||400|invalid_path"
	"dot-dot path|GET|/v1/queue/../admin/queue/stats|$tok|||400|invalid_path"
	"unknown ticket|POST|/v1/queue/$ticket_ok/heartbeat|$tok|{\"revision\":1}||404|not_found"
	"revision not integer|POST|/v1/queue/$ticket_ok/heartbeat|$tok|{\"revision\":1.5}||400|invalid_request"
	"unknown region challenge|POST|/v1/probes/mars/challenge|$tok|||422|unknown_region"
	"unknown region answer|POST|/v1/probes/mars/answer|$tok|{\"nonce\":\"$used_nonce\"}||422|unknown_region"
	"replayed nonce|POST|/v1/probes/eu-west/answer|$tok|{\"nonce\":\"$used_nonce\"}||409|nonce_already_used"
	"foreign nonce|POST|/v1/probes/eu-west/answer|$tok|{\"nonce\":\"$foreign_nonce\"}||404|unknown_nonce"
	"nonce for another region|POST|/v1/probes/us-east/answer|$other|{\"nonce\":\"$foreign_nonce\"}||404|unknown_nonce"
	"made-up nonce|POST|/v1/probes/eu-west/answer|$tok|{\"nonce\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"}||404|unknown_nonce"
	"operator route without token|GET|/v1/admin/queue/stats|$tok|||401|unauthorized"
	"ban with garbage date|POST|/v1/admin/players/$ticket_ok/ban|optok-input-fixture|{\"until\":\"2099-13-45T99:00:00Z\",\"reason\":\"x\"}||400|invalid_request"
	"unknown route|GET|/v1/nothing|$tok|||404|not_found"
	"wrong method|DELETE|/v1/queue|$tok|||405|method_not_allowed"
)
for c in "${cases[@]}"; do
	IFS='|' read -r name method path token body extra status code <<<"$c"
	args=()
	[[ -n "$extra" ]] && read -r -a args <<<"$extra"
	http "$method" "$U$path" "$token" "$body" "${args[@]}" --path-as-is
	expect_http "$name ($method $path)" "$status" "$code"
	jq -e '.error.message | length > 0' <<<"$BODY" >/dev/null || fail "$name: no error message in $BODY"
done

# Oversized headers (one 40 KB header; 2,000 small ones) get the same
# precise JSON error as every other refusal, and the server stays healthy.
http GET "$U/v1/queue/$ticket_ok" "$tok" "" -H "X-Junk: $(head -c 40000 /dev/zero | tr '\0' 'h')"
expect_http "one 40 KB header" 431 headers_too_large
jq -e '.error.retryable == false and (.error.message | length > 0)' <<<"$BODY" >/dev/null ||
	fail "one 40 KB header: not the SPEC error shape: $BODY"
many=()
for i in $(seq 2000); do many+=(-H "X-H$i: 1"); done
http GET "$U/v1/queue/$ticket_ok" "$tok" "" "${many[@]}"
expect_http "2,000 small headers" 431 headers_too_large
http GET "$U/v1/queue/$ticket_ok" "$tok" ""
expect_http "a request after the oversized headers" 404 not_found

after=$(counts)
expect_eq "row counts (players sessions tickets idempotency_keys probe_challenges region_rtts outbox sum(revision) answered) after ${#cases[@]} refused requests" "$before" "$after"
pass "${#cases[@]} hostile requests refused with precise 4xx JSON errors; nothing written ($after)"
