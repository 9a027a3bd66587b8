#!/usr/bin/env bash
# run-tests: early-background
# The disposable stack (issue 21, SPEC 12): scripts/stack.sh up runs the whole
# system as containers of the images (PostgreSQL, Redis, the fake Steam,
# cc-migrate, cc-api with its real Steam login, both matchers, cc-allocator
# whose pool runs the game-server image's binaries, cc-maintenance), all
# read-only, as user 10001. cc-player --play (hex Steam tickets, through the
# fake Steam) plays casual and ranked matches against it: every matched player
# finishes, the matches reach COMPLETED and ratings move. Then stack.sh down
# must leave no container, pod, volume or network with the stack's label,
# listed before and after. Runs after images_smoke.sh in run-tests.sh's
# background chain; the image build here is then the layer cache's.
source "$(dirname "$0")/lib.sh"

command -v podman >/dev/null ||
	fail "podman is not installed: scripts/ensure-deps.sh (run by make test as root) installs podman, buildah, mmdebstrap and runc"
export CONTAINERS_CONF="$TOP/scripts/containers.conf"
NAME="ccst-$$"
# The probes' RTTs are measured by cc-api in its container; with the rest of
# make test running beside this script they can pass the 100 ms a playlist
# allows (lib.sh's probe() has the same concern), which would leave them unmatched.
export CC_STACK_DIR="$T_DIR/stack" CC_STACK_SERVERS=3 CC_STACK_MATCH_SECONDS=6 CC_STACK_MAX_RTT_MS=1000
LABEL="cosmic-clash.stack=$NAME"
objects() {
	{
		podman ps -a --filter "label=$LABEL" --format 'container {{.Names}}'
		podman pod ps --filter "label=$LABEL" --format 'pod {{.Name}}'
		podman volume ls --filter "label=$LABEL" --format 'volume {{.Name}}'
		podman network ls --filter "label=$LABEL" --format 'network {{.Name}}'
	} | sort
}
up=0
cleanup() {
	local status=$?
	if ((up)); then
		if [[ $status -ne 0 ]]; then
			"$TOP/scripts/stack.sh" logs "$NAME" 2>&1 | tail -n 200
			echo "---- the game servers' logs (in the allocator's container) ----"
			podman exec "$NAME-allocator" sh -c 'tail -n 20 /home/cc/servers/*.log' 2>&1 | tail -n 80 || true
		fi
		"$TOP/scripts/stack.sh" down "$NAME" >/dev/null 2>&1 || true
	fi
	t_cleanup "$status"
}
trap cleanup EXIT

T_LOGS+=("$T_DIR/build.log")
t0=$SECONDS
nice -n 19 "$TOP/scripts/images.sh" build stack-postgres stack-redis fake-steam cc-migrate cc-api cc-matcher \
	cc-allocator cc-maintenance cc-gameserver >"$T_DIR/build.log" 2>&1 || fail "scripts/images.sh build failed (exit $?)"
build_s=$((SECONDS - t0))

expect_eq "podman objects labelled $LABEL before up" "" "$(objects)"
T_LOGS+=("$T_DIR/up.log")
up=1
t1=$SECONDS
"$TOP/scripts/stack.sh" up "$NAME" >"$T_DIR/up.out" 2>"$T_DIR/up.log" || fail "stack.sh up exited $?"
up_s=$((SECONDS - t1))
source "$CC_STACK_DIR/stack.env"
[[ -n ${CC_STACK_API_URL:-} ]] || fail "stack.sh up printed no CC_STACK_API_URL: $(cat "$T_DIR/up.out")"
expect_eq "stack.sh up's output is stack.env" "$(cat "$CC_STACK_DIR/stack.env")" "$(cat "$T_DIR/up.out")"
during=$(objects)
expect_eq "containers of the stack" 9 "$(grep -c '^container ' <<<"$during")"
expect_eq "volumes of the stack" 1 "$(grep -c '^volume ' <<<"$during")"
# Every long-running container: read-only root, user 10001, all capabilities dropped.
for c in $(podman ps --filter "label=$LABEL" --format '{{.Names}}'); do
	expect_eq "$c: read-only root, user" "true 10001:10001" \
		"$(podman inspect --format '{{.HostConfig.ReadonlyRootfs}} {{.Config.User}}' "$c")"
done

# cc-api's real Steam login (no testkit here): the fake Steam's VAC-banned ticket is refused.
http POST "$CC_STACK_API_URL/v1/session/steam" "" '{"ticket":"bb01"}'
expect_http "login with the fake Steam's VAC-banned ticket bb01" 403

# 6 casual players (one 3v3) and 2 ranked (one 1v1), logging in through the fake Steam.
q() { psql -qAtX -v ON_ERROR_STOP=1 "$CC_STACK_PG_DSN" -c "$1"; }
T_LOGS+=("$T_DIR/player.err")
rc=0
t2=$SECONDS
"$BIN/cc-player" --mode=demo --api-url="$CC_STACK_API_URL" --hex-tickets --players=8 --threads=4 \
	--regions="$CC_STACK_REGION" --ranked-percent=25 --decline-percent=0 --seed=$((RANDOM)) \
	--match-deadline-seconds=40 --play --assignment-timeout-seconds=60 --game-deadline-seconds=90 \
	--log-level=info >"$T_DIR/player.out" 2>"$T_DIR/player.err" || rc=$?
summary=$(tail -n 1 "$T_DIR/player.out")
expect_eq "cc-player's exit status ($summary)" 0 "$rc"
[[ $summary =~ play:\ played=([0-9]+)\ ok=([0-9]+)\ failed=0\ score_mismatch=0 ]] &&
	[[ ${BASH_REMATCH[1]} == 8 && ${BASH_REMATCH[2]} == 8 ]] ||
	fail "not all 8 players played their match to the end: $summary"
steam=$(curl -s "$CC_STACK_STEAM_URL/stats" | jq -r .requests)
((steam >= 8)) || fail "the fake Steam saw $steam verifications, expected one per player at least"

# The results: both matches COMPLETED (posted as the players leave), ratings moved.
deadline=$((SECONDS + 30))
until [[ $(q "SELECT count(*) FROM matches WHERE state = 'COMPLETED'") -ge 2 ]]; do
	((SECONDS < deadline)) || fail "matches did not reach COMPLETED: $(q "SELECT string_agg(playlist || ':' || state, ' ') FROM matches")"
	sleep 0.2
done
expect_eq "completed matches by playlist" "casual:1 ranked:1" \
	"$(q "SELECT string_agg(playlist || ':' || n, ' ' ORDER BY playlist) FROM (SELECT playlist, count(*) n FROM matches WHERE state = 'COMPLETED' GROUP BY playlist) s")"
# Glicko-2 moves the deviation of every player who played, the rating too unless a draw of equals.
moved=$(q "SELECT count(*) FROM rating_changes WHERE rating_after <> rating_before OR deviation_after <> deviation_before")
((moved == 8)) || fail "ratings moved for $moved players, expected all 8: $(q "SELECT string_agg(playlist || ' ' || rating_before || '/' || deviation_before || '->' || rating_after || '/' || deviation_after, ', ') FROM rating_changes")"
agree=$(q "SELECT count(*) FROM rating_changes rc JOIN ratings r ON r.player_id = rc.player_id AND r.playlist = rc.playlist WHERE r.rating = rc.rating_after")
expect_eq "players whose rating is the one their match gave them" 8 "$agree"
play_s=$((SECONDS - t2))

T_LOGS+=("$T_DIR/down.log")
t3=$SECONDS
"$TOP/scripts/stack.sh" down "$NAME" >"$T_DIR/down.log" 2>&1 || fail "stack.sh down exited $?"
up=0
expect_eq "podman objects labelled $LABEL after down" "" "$(objects)"
[[ ! -e $CC_STACK_DIR ]] || fail "stack.sh down left its directory $CC_STACK_DIR"
pass "build ${build_s} s (layer cache), up ${up_s} s, 8 players played a casual and a ranked match in ${play_s} s through $steam Steam logins, $moved ratings moved; down $((SECONDS - t3)) s left none of the $(awk '{print $1}' <<<"$during" | sort | uniq -c | awk '{printf "%s%s %ss", NR > 1 ? " and " : "", $1, $2}')"
