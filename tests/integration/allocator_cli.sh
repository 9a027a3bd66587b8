#!/usr/bin/env bash
# cc-allocator's start-up checks and secrets (issue 10, SPEC 1 and 2):
#  - it refuses, with exit 2 naming the flag, what can never work: an active
#    key id missing from its key set, a port range smaller than the pool,
#    a server command that is not an executable, an agones claim lease
#    shorter than two request deadlines, an unreadable key file, a missing or
#    unreadable service-account token or CA (agones, in-cluster defaults);
#  - canary secrets in the join keys, the workload secret, the Kubernetes
#    token and the database password never reach stderr or a child's log;
#    a secret flag on the command line is refused without being echoed;
#  - a running allocator with a warm pool is ready, serves /metrics that
#    promtool accepts, and stops on SIGTERM with its children (no process
#    of the pool outlives it).
source "$(dirname "$0")/lib.sh"

canary="CANARY$RANDOM$RANDOM"
key_b64() { printf '%s' "$1" | head -c 32 | base64 -w0; }
printf '{"old":"%s","%s":"%s"}\n' "$(key_b64 "${canary}join-old-0123456789abcdefghij")" "k2" \
	"$(key_b64 "${canary}join-new-0123456789abcdefghij")" >"$T_DIR/join.json"
printf '%s-workload-secret-0123456789abcdef\n' "$canary" >"$T_DIR/workload.key"
printf '%s-k8s-token\n' "$canary" >"$T_DIR/k8s.token"
dsn_with_password=$(sed -E "s#postgresql://cc@#postgresql://cc:${canary}dbpw@#" <<<"$CC_TEST_PG_DSN")
printf '%s\n' "$dsn_with_password" >"$T_DIR/dsn"
standin="$TOP/build/fakes/standin_server"

base_flags=(--workload-secret-file="$T_DIR/workload.key" --local-state-dir="$T_DIR/state")
common=("${base_flags[@]}" --join-keys-file="$T_DIR/join.json" --join-key-id=k2 --local-server-command="$standin --idle")
# refuses adds --admin-port=0; the running pool below names its own.

# refuses WHAT PATTERN FLAGS...: exit 2 and PATTERN on stderr, no canary anywhere.
refuses() {
	local what=$1 pattern=$2 rc=0; shift 2
	COSMIC_CLASH_DATABASE_URL="$dsn_with_password" timeout 20 "$BIN/cc-allocator" --admin-port=0 "$@" \
		>"$T_DIR/out" 2>"$T_DIR/err" </dev/null || rc=$?
	expect_eq "cc-allocator $what: exit status" 2 "$rc"
	grep -qF -- "$pattern" "$T_DIR/err" || fail "cc-allocator $what: stderr lacks '$pattern': $(cat "$T_DIR/err")"
	if grep -q "$canary" "$T_DIR/err" "$T_DIR/out"; then fail "cc-allocator $what echoed a secret: $(cat "$T_DIR/err")"; fi
}
refuses "with an unknown active join key" "--join-key-id: no key 'k9' in --join-keys-file" "${base_flags[@]}" --join-keys-file="$T_DIR/join.json" --local-server-command="$standin --idle" --join-key-id=k9
refuses "with a raw-key id against a JSON key set" "--workload-key-id: no key 'w1' in --workload-secret-file" \
	"${common[@]}" --workload-key-id=w1
refuses "with fewer ports than servers" "has fewer ports than --local-capacity (5)" \
	"${common[@]}" --local-capacity=5 --local-port-min=20000 --local-port-max=20003
refuses "with a command that is not executable" "--local-server-command: '$T_DIR/join.json' is not an executable file" \
	"${base_flags[@]}" --join-keys-file="$T_DIR/join.json" --join-key-id=k2 --local-server-command="$T_DIR/join.json"
refuses "with an agones lease under two request deadlines" "--claim-lease-ms (5000) must be at least twice --k8s-timeout-ms (3000)" \
	"${common[@]}" --provider=agones --claim-lease-ms=5000 --k8s-timeout-ms=3000
refuses "with a missing key file" "--join-keys-file: $T_DIR/nope" "${base_flags[@]}" --join-key-id=k2 \
	--local-server-command="$standin --idle" --join-keys-file="$T_DIR/nope"
refuses "with the database URL as a flag" "--database-url" "${common[@]}" --database-url="${canary}flag"
# In-cluster defaults (no --k8s-* flags): the service account's files are
# read at start-up, so a pod without them fails at once, naming the path,
# instead of retrying every match forever.
mkdir -p "$T_DIR/sa-empty" "$T_DIR/sa-dir-token/token" "$T_DIR/sa-no-ca"
cp "$T_DIR/k8s.token" "$T_DIR/sa-no-ca/token"
agones=("${common[@]}" --provider=agones)
COSMIC_CLASH_K8S_SERVICEACCOUNT_DIR="$T_DIR/sa-empty" refuses "without the service account's token" \
	"--k8s-token-file: $T_DIR/sa-empty/token: No such file or directory" "${agones[@]}"
COSMIC_CLASH_K8S_SERVICEACCOUNT_DIR="$T_DIR/sa-dir-token" refuses "with an unreadable service-account token" \
	"--k8s-token-file: $T_DIR/sa-dir-token/token: Is a directory" "${agones[@]}"
COSMIC_CLASH_K8S_SERVICEACCOUNT_DIR="$T_DIR/sa-no-ca" refuses "without the service account's CA" \
	"--k8s-ca-file: $T_DIR/sa-no-ca/ca.crt: No such file or directory" "${agones[@]}"
pass "cc-allocator refuses 10 unusable configurations with exit 2, naming the flag, echoing no secret"

# A running pool: ready, promtool-clean metrics, no secret in any log.
base=$((21000 + ($$ % 300) * 10))
admin=$(free_port)
start_bg "$T_DIR/allocator.err" "$BIN/cc-allocator" --database-url-file="$T_DIR/dsn" "${common[@]}" --admin-port="$admin" \
	--local-capacity=2 --local-port-min="$base" --local-port-max="$((base + 1))" --log-level=debug \
	--k8s-token-file="$T_DIR/k8s.token"
pid=$LAST_PID
wait_http "http://127.0.0.1:$admin/readyz" "$pid" 20
deadline=$((SECONDS + 20))
until [[ $(sql "SELECT count(*) FROM game_servers WHERE state = 'IDLE' AND port IN ($base, $((base + 1)))") == 2 ]]; do
	((SECONDS < deadline)) || fail "the pool's two servers were not IDLE within 20 s: $(sql "SELECT id, state FROM game_servers")"
	sleep 0.05
done
children=$(pgrep -P "$pid" -d ' ' || true)
[[ $(wc -w <<<"$children") == 2 ]] || fail "expected 2 children of cc-allocator, saw '$children'"
curl -sf "http://127.0.0.1:$admin/metrics" >"$T_DIR/metrics" || fail "GET /metrics failed"
grep -q '^cosmic_clash_allocator_passes_total{result="idle"}' "$T_DIR/metrics" ||
	fail "no idle pass counted; /metrics was: $(cat "$T_DIR/metrics")"
promtool check metrics <"$T_DIR/metrics" >"$T_DIR/promtool.out" 2>&1 ||
	fail "promtool check metrics refused /metrics: $(cat "$T_DIR/promtool.out")"
# A second allocator whose ports overlap the running pool's (the same
# flags on one host would share its ports, rows and files) refuses to start.
refuses "while another allocator serves its ports" "port $((base + 1)) is already served by another cc-allocator" \
	"${common[@]}" \
	--local-capacity=2 --local-port-min="$((base + 1))" --local-port-max="$((base + 2))" --k8s-token-file="$T_DIR/k8s.token"
[[ $(pgrep -P "$pid" -d ' ' || true) == "$children" ]] || fail "the refused twin disturbed the pool: children '$children' became '$(pgrep -P "$pid" -d ' ')'"
pass "a second allocator on the same ports is refused at start-up, naming the port; the running pool is untouched"
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
expect_eq "cc-allocator exit status after SIGTERM" 0 "$rc"
for c in $children; do
	deadline=$((SECONDS + 10))
	while running "$c"; do
		((SECONDS < deadline)) || fail "child $c of the pool outlived cc-allocator by 10 s"
		sleep 0.05
	done
done
if grep -rq "$canary" "$T_DIR/allocator.err" "$T_DIR/state"; then
	fail "a canary secret reached a log: $(grep -rl "$canary" "$T_DIR/allocator.err" "$T_DIR/state")"
fi
grep -q '"event":"child_started"' "$T_DIR/allocator.err" || fail "no child_started line (is the canary check blind?)"
pass "a pool of 2: ready, /metrics passes promtool, SIGTERM stops it and its children, no secret in any log"
