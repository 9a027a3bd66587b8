# ports.sh - sourced (bash) by the test harness, the integration tests,
# demo.sh and bench.sh: the one place that picks loopback ports for the
# servers they start.
#
# Ports are drawn below the kernel's ephemeral range
# (/proc/sys/net/ipv4/ip_local_port_range, 32768-60999 on Debian): a port
# inside it can be taken at any moment by some client's outgoing
# connection between our check and the server's bind, which showed up as
# rare "Address already in use" failures. When the range starts too low to
# leave room below it, the ports above it are used instead.

CC_PORT_FLOOR=10000 # below: well-known and registered services

# cc_port_range: prints "LOW HIGH", the range free_port draws from.
# CC_PORT_RANGE_FILE replaces the /proc file (tests).
cc_port_range() {
	local start=32768 end=60999
	local file=${CC_PORT_RANGE_FILE:-/proc/sys/net/ipv4/ip_local_port_range}
	read -r start end <"$file" 2>/dev/null || true
	if ((start - 1 - CC_PORT_FLOOR >= 1000)); then
		echo "$CC_PORT_FLOOR $((start - 1))"
	elif ((65535 - end >= 1000)); then
		echo "$((end + 1)) 65535"
	else
		echo "$CC_PORT_FLOOR 65535" # no room outside the ephemeral range: best effort
	fi
}

# free_port: prints a loopback TCP port no socket uses right now, from
# cc_port_range; returns 1 (with a message on stderr) after 100 tries.
free_port() {
	local low high p
	read -r low high < <(cc_port_range)
	for _ in $(seq 100); do
		p=$((low + (RANDOM * 32768 + RANDOM) % (high - low + 1)))
		[[ -z $(ss -Htan "( sport = :$p )" 2>/dev/null) ]] && { echo "$p"; return 0; }
	done
	echo "free_port: no free port in $low-$high after 100 tries" >&2
	return 1
}
