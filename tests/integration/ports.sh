#!/usr/bin/env bash
# Every port the tests, the harness, the demo and the bench pick lies below
# the kernel's ephemeral range, where no outgoing connection can take it
# between the pick and the bind; and they all pick through the one helper,
# scripts/lib/ports.sh.
source "$(dirname "$0")/lib.sh"

read -r eph_start eph_end </proc/sys/net/ipv4/ip_local_port_range

# 1. free_port, 200 draws.
for _ in $(seq 200); do
	p=$(free_port)
	((p >= 10000 && p < eph_start)) || fail "free_port gave $p, outside 10000-$((eph_start - 1)) (ephemeral: $eph_start-$eph_end)"
done

# 2. The harness's PostgreSQL and Redis.
for var in CC_TEST_PG_PORT CC_TEST_REDIS_PORT; do
	p=${!var}
	((p >= 10000 && p < eph_start)) || fail "$var=$p is not below the ephemeral range ($eph_start-$eph_end)"
done

# 3. The range follows the kernel's setting, and falls back above it when
# there is no room below.
cases=(
	"32768 60999|10000 32767"
	"49152 65535|10000 49151"
	"5000 40000|40001 65535"
	"1024 65000|10000 65535"
)
for c in "${cases[@]}"; do
	printf '%s\n' "${c%%|*}" >"$T_DIR/range"
	got=$(CC_PORT_RANGE_FILE="$T_DIR/range" cc_port_range)
	expect_eq "port range for ephemeral ${c%%|*}" "${c#*|}" "$got"
done

# 4. One helper: nobody else draws ports of their own.
for f in tests/harness/with-services.sh tests/integration/lib.sh scripts/demo.sh scripts/bench.sh; do
	grep -q 'scripts/lib/ports.sh' "$TOP/$f" || fail "$f does not source scripts/lib/ports.sh"
done
own=$(grep -rlE 'RANDOM *%|^ *(free_port|pick_port) *\(\)' "$TOP/scripts" "$TOP/tests" | grep -v '/scripts/lib/ports.sh$' || true)
[[ -z "$own" ]] || fail "port pickers outside scripts/lib/ports.sh: $own"

pass "200 picks and the harness ports below $eph_start; the range follows ip_local_port_range"
