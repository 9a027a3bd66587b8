#!/usr/bin/env bash
# stack.sh up|down|status|logs [NAME] - the disposable stack (SPEC 12;
# `make stack-up` / `make stack-down`): the whole system as containers from
# the images `make images` builds, on loopback ports it prints.
#
#   up      PostgreSQL and Redis (the dev-only stack-postgres/stack-redis images:
#           Debian's packages), the fake Steam Web API (dev-only fake-steam),
#           cc-migrate once, cc-api (its Steam login against the fake), cc-matcher
#           casual and ranked, cc-allocator (local provider) and cc-maintenance.
#           Waits until each answers, then prints the ports as shell
#           assignments, also written to $CC_STACK_DIR/stack.env.
#   down    removes every container, pod, volume and network carrying the
#           stack's label (cosmic-clash.stack=NAME), then its directory.
#   status  lists the podman objects carrying the label.
#   logs    every container's log.
#
# NAME (default $CC_STACK_NAME, else "cc-stack") names the containers
# (NAME-api, ...) and the label, so stacks can live side by side.
#
# Every container: host network (so "loopback ports" are the host's 127.0.0.1),
# read-only root filesystem with /tmp, /run and HOME (/home/cc) on tmpfs, all
# capabilities dropped, no-new-privileges, the image's user 10001. The secrets
# (workload secret, join keys, the fake's Steam key) are files in the stack's
# directory, mode 0600 for uid 10001, mounted read-only where needed.
#
# Game servers: the local provider forks its pool (cc-supervisor, which runs
# cc-gameserver per match) and owns it through the process tree (allocation
# files in its state directory, PR_SET_PDEATHSIG), so the pool must live in
# the allocator's container. It runs the game-server IMAGE's binaries there:
# the cc-gameserver image is mounted read-only at /gs (podman --mount
# type=image) and the pool's command is its cc-supervisor with LD_LIBRARY_PATH
# on the image's own libraries (both images are built on the same base), so
# the stack plays its matches with exactly what the game-server image ships.
# (Game-server containers would need a provider that registers servers it did
# not start: that is the Agones mode, proven with fakes in its own test.)
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export CONTAINERS_CONF=${CONTAINERS_CONF:-$top/scripts/containers.conf}
source "$top/scripts/lib/ports.sh"

verb=${1:-}
NAME=${2:-${CC_STACK_NAME:-cc-stack}}
[[ $NAME =~ ^[a-z0-9][a-z0-9-]{0,40}$ ]] || { echo "stack: bad stack name '$NAME' (a-z, 0-9, '-')" >&2; exit 2; }
LABEL="cosmic-clash.stack=$NAME"
DIR=${CC_STACK_DIR:-$top/build/stack/$NAME}
REPO=localhost/cosmic-clash
SERVERS=${CC_STACK_SERVERS:-4}
REGION=${CC_STACK_REGION:-local}
MATCH_SECONDS=${CC_STACK_MATCH_SECONDS:-10}
WAIT=${CC_STACK_WAIT_SECONDS:-60}
MAX_RTT_MS=${CC_STACK_MAX_RTT_MS:-} # the matchers' --max-rtt-ms, when set (default: the playlist's)

say() { echo "stack: $*" >&2; }

# run NAME-SUFFIX IMAGE [podman run options...] -- [ARGS...]: a detached, labelled,
# locked-down container on the host network.
run() {
	local suffix=$1 image=$2; shift 2
	local opts=()
	while (($#)) && [[ $1 != -- ]]; do opts+=("$1"); shift; done
	shift || true
	podman run -d --name "$NAME-$suffix" --label "$LABEL" --network=host \
		--read-only --read-only-tmpfs=true --tmpfs /home/cc:rw,mode=0700,U \
		--cap-drop=all --security-opt=no-new-privileges \
		"${opts[@]}" "$REPO/$image" "$@" >/dev/null
}

# wait_for WHAT CONTAINER CMD...: polls CMD until it succeeds; fails at once
# when the container has exited (broken, not slow), or after $WAIT seconds.
wait_for() {
	local what=$1 ctr=$2 deadline=$((SECONDS + WAIT)); shift 2
	while ! "$@" >/dev/null 2>&1; do
		if [[ $(podman inspect --format '{{.State.Running}}' "$ctr" 2>/dev/null) != true ]]; then
			say "$what: container $ctr is not running; its log:"
			podman logs --tail 40 "$ctr" >&2 || true
			return 1
		fi
		if ((SECONDS >= deadline)); then
			say "$what did not answer within $WAIT s ($*); the log of $ctr:"
			podman logs --tail 40 "$ctr" >&2 || true
			return 1
		fi
		sleep 0.2
	done
}
http_ok() { [[ $(curl -s -o /dev/null -w '%{http_code}' "$1") == 200 ]]; }

up() {
	local t missing=()
	for t in stack-postgres stack-redis fake-steam cc-migrate cc-api cc-matcher cc-allocator cc-maintenance cc-gameserver; do
		podman image exists "$REPO/$t" || missing+=("$t")
	done
	if ((${#missing[@]})); then
		say "building the missing images: ${missing[*]}"
		"$top/scripts/images.sh" build "${missing[@]}" >&2
	fi
	if [[ -n $(status) ]]; then
		say "a stack named $NAME exists already (stack.sh down $NAME first):"
		status >&2
		return 1
	fi
	# A stack that fails to come up is removed (its failing container's log
	# was printed); CC_STACK_KEEP_FAILED=1 keeps it for a look.
	trap 'rc=$?; if ((rc)) && [[ ${CC_STACK_KEEP_FAILED:-0} != 1 ]]; then say "up failed: removing what it made"; down >&2 || true; fi' EXIT
	rm -rf "$DIR" && mkdir -p "$DIR/secrets"
	chmod 0755 "$DIR"

	# Ports and secrets.
	local pg redis steam api api_admin casual ranked alloc_admin maint_admin game_min
	pg=$(free_port); redis=$(free_port); steam=$(free_port); api=$(free_port); api_admin=$(free_port)
	casual=$(free_port); ranked=$(free_port); alloc_admin=$(free_port); maint_admin=$(free_port)
	game_min=$(free_port)
	head -c 48 /dev/urandom | base64 | tr -d '\n=' >"$DIR/secrets/workload.secret"
	printf '{"stack":"%s"}\n' "$(head -c 32 /dev/urandom | base64 | tr -d '\n')" >"$DIR/secrets/join.json"
	head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$DIR/secrets/steam.key"
	chmod 0700 "$DIR/secrets" && chmod 0600 "$DIR/secrets"/*
	# Owned by the containers' user 10001 (rootless podman: 10001 of the user namespace).
	if ((EUID == 0)); then chown -R 10001:10001 "$DIR/secrets"; else podman unshare chown -R 10001:10001 "$DIR/secrets"; fi
	printf '%s\n' "match-seconds = $MATCH_SECONDS" "warmup-seconds = 2" "overtime-max-seconds = 5" \
		"connect-window-seconds = 30" "end-linger-ms = 500" >"$DIR/gameserver.conf"
	chmod 0644 "$DIR/gameserver.conf"
	local dsn="postgresql://cc@127.0.0.1:$pg/cosmic_clash"
	local sec="type=bind,source=$DIR/secrets,destination=/run/secrets,ro=true"

	# PostgreSQL: a fresh cluster on a labelled volume (trust on loopback: disposable).
	podman volume create --label "$LABEL" "$NAME-pgdata" >/dev/null
	run postgres stack-postgres -v "$NAME-pgdata:/var/lib/cc-pg:U" --entrypoint /bin/sh -- -c \
		"initdb -D /var/lib/cc-pg/data -U cc -A trust --no-sync >/tmp/initdb.log || { cat /tmp/initdb.log; exit 1; }
		 exec postgres -D /var/lib/cc-pg/data -c listen_addresses=127.0.0.1 -c port=$pg -c unix_socket_directories=/tmp -c fsync=off"
	wait_for PostgreSQL "$NAME-postgres" podman exec "$NAME-postgres" pg_isready -q -h 127.0.0.1 -p "$pg" -U cc -d postgres
	podman exec "$NAME-postgres" createdb -h 127.0.0.1 -p "$pg" -U cc cosmic_clash

	run redis stack-redis -- --bind 127.0.0.1 --port "$redis" --save '' --appendonly no --dir /tmp
	wait_for Redis "$NAME-redis" podman exec "$NAME-redis" redis-cli -h 127.0.0.1 -p "$redis" ping

	run fake-steam fake-steam --mount "$sec" -- --listen=127.0.0.1 --port="$steam" --app-id=480 \
		--key-file=/run/secrets/steam.key
	wait_for "the fake Steam" "$NAME-fake-steam" http_ok "http://127.0.0.1:$steam/stats"

	# cc-migrate, once (its container is kept until down: its log is the record).
	podman run --name "$NAME-migrate" --label "$LABEL" --network=host --read-only --cap-drop=all \
		--security-opt=no-new-privileges -e COSMIC_CLASH_DATABASE_URL="$dsn" "$REPO/cc-migrate" up >"$DIR/migrate.log" 2>&1 ||
		{ say "cc-migrate up failed:"; cat "$DIR/migrate.log" >&2; return 1; }

	local db=(-e COSMIC_CLASH_DATABASE_URL="$dsn") rd=(--redis-host=127.0.0.1 --redis-port="$redis")
	run api cc-api "${db[@]}" --mount "$sec" -- --listen=127.0.0.1 --port="$api" --admin-port="$api_admin" \
		--regions="$REGION" "${rd[@]}" --workload-secret-file=/run/secrets/workload.secret \
		--steam-api-url="http://127.0.0.1:$steam" --steam-app-id=480 \
		--steam-publisher-key-file=/run/secrets/steam.key
	wait_for cc-api "$NAME-api" http_ok "http://127.0.0.1:$api_admin/readyz"

	local p admin
	for p in casual ranked; do
		[[ $p == casual ]] && admin=$casual || admin=$ranked
		run "matcher-$p" cc-matcher "${db[@]}" -- --playlist="$p" --admin-port="$admin" \
			--matcher-id="$NAME-$p" --poll-interval-ms=200 "${rd[@]}" ${MAX_RTT_MS:+--max-rtt-ms="$MAX_RTT_MS"}
		wait_for "cc-matcher $p" "$NAME-matcher-$p" http_ok "http://127.0.0.1:$admin/readyz"
	done

	run allocator cc-allocator "${db[@]}" --mount "$sec" \
		--mount "type=bind,source=$DIR/gameserver.conf,destination=/etc/cosmic-clash/gameserver.conf,ro=true" \
		--mount "type=image,source=$REPO/cc-gameserver,destination=/gs" -- \
		--workload-secret-file=/run/secrets/workload.secret --join-keys-file=/run/secrets/join.json \
		--join-key-id=stack --api-url="http://127.0.0.1:$api" --admin-port="$alloc_admin" \
		--local-capacity="$SERVERS" --local-port-min="$game_min" --local-port-max="$((game_min + SERVERS + 20))" \
		--local-region="$REGION" --local-state-dir=/home/cc/servers --poll-interval-ms=100 \
		--local-server-command="/usr/bin/env LD_LIBRARY_PATH=/gs/usr/lib/x86_64-linux-gnu /gs/usr/local/bin/cc-supervisor --join-keys-file=/run/secrets/join.json --gameserver-config=/etc/cosmic-clash/gameserver.conf"
	wait_for cc-allocator "$NAME-allocator" http_ok "http://127.0.0.1:$alloc_admin/readyz"

	run maintenance cc-maintenance "${db[@]}" -- --admin-port="$maint_admin"
	wait_for cc-maintenance "$NAME-maintenance" http_ok "http://127.0.0.1:$maint_admin/readyz"

	cat >"$DIR/stack.env" <<-EOF
		CC_STACK_NAME=$NAME
		CC_STACK_API_URL=http://127.0.0.1:$api
		CC_STACK_API_ADMIN_URL=http://127.0.0.1:$api_admin
		CC_STACK_PG_DSN=$dsn
		CC_STACK_REDIS=127.0.0.1:$redis
		CC_STACK_STEAM_URL=http://127.0.0.1:$steam
		CC_STACK_MATCHER_CASUAL_ADMIN_URL=http://127.0.0.1:$casual
		CC_STACK_MATCHER_RANKED_ADMIN_URL=http://127.0.0.1:$ranked
		CC_STACK_ALLOCATOR_ADMIN_URL=http://127.0.0.1:$alloc_admin
		CC_STACK_MAINTENANCE_ADMIN_URL=http://127.0.0.1:$maint_admin
		CC_STACK_GAME_PORTS=$game_min-$((game_min + SERVERS + 20))
		CC_STACK_REGION=$REGION
	EOF
	trap - EXIT
	cat "$DIR/stack.env"
	say "up: log in through cc-api with hex Steam tickets (cc-player --hex-tickets); stack.sh down $NAME removes it all"
}

status() {
	local kind
	for kind in container pod volume network; do
		case $kind in
		container) podman ps -a --filter "label=$LABEL" --format "container {{.Names}} {{.Status}}" ;;
		pod) podman pod ps --filter "label=$LABEL" --format "pod {{.Name}}" ;;
		volume) podman volume ls --filter "label=$LABEL" --format "volume {{.Name}}" ;;
		network) podman network ls --filter "label=$LABEL" --format "network {{.Name}}" ;;
		esac
	done
}

down() {
	local ids
	ids=$(podman ps -aq --filter "label=$LABEL")
	[[ -z $ids ]] || podman rm -f -t 5 $ids >/dev/null
	ids=$(podman pod ps -q --filter "label=$LABEL")
	[[ -z $ids ]] || podman pod rm -f $ids >/dev/null
	ids=$(podman volume ls -q --filter "label=$LABEL")
	[[ -z $ids ]] || podman volume rm -f $ids >/dev/null
	ids=$(podman network ls -q --filter "label=$LABEL")
	[[ -z $ids ]] || podman network rm -f $ids >/dev/null
	if ((EUID == 0)); then rm -rf "$DIR"; else podman unshare rm -rf "$DIR"; fi
	local left; left=$(status)
	[[ -z $left ]] || { say "down: still there:"; echo "$left" >&2; return 1; }
	say "down: no container, pod, volume or network labelled $LABEL is left"
}

logs() {
	local c
	for c in $(podman ps -a --filter "label=$LABEL" --format '{{.Names}}'); do
		echo "---- $c ----"
		podman logs --tail "${CC_STACK_LOG_LINES:-60}" "$c" 2>&1 || true
	done
}

case "$verb" in
up) up ;;
down) down ;;
status) status ;;
logs) logs ;;
*) echo "usage: stack.sh up|down|status|logs [NAME]" >&2; exit 2 ;;
esac
