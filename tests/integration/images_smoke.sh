#!/usr/bin/env bash
# run-tests: early-background
# The images (issue 21): `scripts/images.sh build` makes every Dockerfile
# target with podman from the Debian archive alone (niced: the rest of the
# suite runs meanwhile), then each service image is checked from the outside:
#   - its --version answers, naming the revision the build was given;
#   - the OCI labels version, revision and source are set (Makefile VERSION, git HEAD);
#   - user 10001:10001; /usr/local/bin holds exactly its binaries; no compiler,
#     no testkit, no fake anywhere in it; ldd finds every library;
#   - cc-migrate's image applies every migration of migrations/ (the ones it
#     carries) to a scratch database;
#   - cc-api's image, read-only root and tmpfs HOME, started against the
#     harness PostgreSQL until /readyz answers.
# Cold (no base tarball, no layer cache) the build takes minutes: run-tests.sh
# starts this script first, in the background (see its header line above).
source "$(dirname "$0")/lib.sh"

command -v podman >/dev/null ||
	fail "podman is not installed: scripts/ensure-deps.sh (run by make test as root) installs podman, buildah, mmdebstrap and runc"
export CONTAINERS_CONF="$TOP/scripts/containers.conf"
REPO=localhost/cosmic-clash
LABEL="cosmic-clash.test=images-smoke-$$"
DB="images_smoke_$$"
admin_sql() { psql -qAtX -v ON_ERROR_STOP=1 "$CC_TEST_PG_ADMIN_DSN" -c "$1"; }
cleanup() {
	local status=$? ids
	ids=$(podman ps -aq --filter "label=$LABEL" 2>/dev/null || true)
	if [[ -n $ids ]]; then
		[[ $status -eq 0 ]] || for id in $ids; do echo "---- podman logs $id ----"; podman logs --tail 40 "$id" 2>&1 || true; done
		podman rm -f -t 2 $ids >/dev/null 2>&1 || true
	fi
	admin_sql "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true
	t_cleanup "$status"
}
trap cleanup EXIT

t0=$SECONDS
T_LOGS+=("$T_DIR/build.log")
nice -n 19 "$TOP/scripts/images.sh" build >"$T_DIR/build.log" 2>&1 || fail "scripts/images.sh build failed (exit $?)"
build_s=$((SECONDS - t0))

version=$(sed -n 's/^VERSION := *//p' "$TOP/Makefile")
revision=$(git -C "$TOP" rev-parse HEAD)
in_image() { local img=$1; shift; podman run --rm --label "$LABEL" --entrypoint "$1" "$REPO/$img" "${@:2}"; }

declare -A BINS=([cc-api]=cc-api [cc-matcher]=cc-matcher [cc-allocator]=cc-allocator
	[cc-maintenance]=cc-maintenance [cc-migrate]=cc-migrate [cc-gameserver]="cc-gameserver cc-supervisor"
	[fake-steam]=fake_steam)
for img in cc-api cc-matcher cc-allocator cc-maintenance cc-migrate cc-gameserver fake-steam; do
	# --version through the entrypoint (cc-supervisor for the game server), and every binary's.
	out=$(podman run --rm --label "$LABEL" "$REPO/$img" --version 2>&1) || fail "$img: --version exited $?: $out"
	[[ $out =~ ^(cc-[a-z]+|fake_steam)\ $version\ \(git\ ${revision:0:7} ]] ||
		fail "$img: --version says '$out', expected '<binary> $version (git ${revision:0:7}...)'"
	for b in ${BINS[$img]}; do
		out=$(in_image "$img" "/usr/local/bin/$b" --version 2>&1) || fail "$img: $b --version exited $?: $out"
		[[ $out == "$b $version"* ]] || fail "$img: $b --version says '$out'"
	done
	# Labels and user.
	fmt='{{index .Labels "org.opencontainers.image.version"}}|{{index .Labels "org.opencontainers.image.revision"}}|{{index .Labels "org.opencontainers.image.source"}}|{{.Config.User}}'
	IFS='|' read -r l_version l_revision l_source user < <(podman image inspect --format "$fmt" "$REPO/$img")
	expect_eq "$img: label org.opencontainers.image.version" "$version" "$l_version"
	[[ $l_revision == "$revision" || $l_revision == "$revision-dirty" ]] ||
		fail "$img: label org.opencontainers.image.revision is '$l_revision', expected $revision[-dirty]"
	[[ -n $l_source && $l_source != unknown ]] || fail "$img: label org.opencontainers.image.source is '$l_source'"
	expect_eq "$img: the image's user" "10001:10001" "$user"
	# Contents: exactly its binaries; no compiler, testkit or fake (the fake only in its own dev image).
	expect_eq "$img: /usr/local/bin" "$(tr ' ' '\n' <<<"${BINS[$img]}" | sort | tr '\n' ' ')" \
		"$(in_image "$img" /bin/ls /usr/local/bin | sort | tr '\n' ' ')"
	# (find as root, so that no directory is hidden from it; files only: gcc-12-base, libgcc's, is no compiler.)
	forbidden=$(podman run --rm --label "$LABEL" --user 0 --entrypoint /usr/bin/find "$REPO/$img" / -xdev -type f \
		\( -name 'cc-testkit*' -o -name 'fake_*' -o -name 'standin_server' -o -path '*/bin/gcc*' -o -path '*/bin/cc' \
		-o -name 'cc1' -o -name 'x86_64-linux-gnu-ld*' -o -name 'x86_64-linux-gnu-as' -o -name 'libcheck*' \) -print |
		grep -v -x /usr/local/bin/fake_steam || true)
	[[ -z $forbidden ]] || fail "$img: carries what no image may: $forbidden"
	missing=$(in_image "$img" /bin/sh -c 'for b in /usr/local/bin/*; do ldd "$b"; done' | grep 'not found' || true)
	[[ -z $missing ]] || fail "$img: ldd finds libraries missing: $missing"
done

# cc-migrate's image: its own migrations, applied to a scratch database.
admin_sql "CREATE DATABASE $DB" >/dev/null
dsn="${CC_TEST_PG_ADMIN_DSN%/postgres}/$DB"
T_LOGS+=("$T_DIR/migrate.log")
podman run --rm --label "$LABEL" --network=host --read-only -e COSMIC_CLASH_DATABASE_URL="$dsn" \
	"$REPO/cc-migrate" up >"$T_DIR/migrate.log" 2>&1 || fail "the cc-migrate image's 'up' exited $?"
expect_eq "migrations the cc-migrate image applied" "$(ls "$TOP"/migrations/*.up.sql | wc -l)" \
	"$(psql -qAtX "$dsn" -c 'SELECT count(*) FROM schema_migrations')"

# cc-api's image against PostgreSQL until /readyz answers: read-only root, HOME and /tmp on tmpfs.
port=$(free_port); admin=$(free_port)
podman run -d --name "images-smoke-api-$$" --label "$LABEL" --network=host --read-only \
	--tmpfs /home/cc:rw,mode=0700,U --cap-drop=all --security-opt=no-new-privileges \
	-e COSMIC_CLASH_DATABASE_URL="$dsn" "$REPO/cc-api" --listen=127.0.0.1 --port="$port" --admin-port="$admin" >/dev/null
deadline=$((SECONDS + 30))
until [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$admin/readyz") == 200 ]]; do
	[[ $(podman inspect --format '{{.State.Running}}' "images-smoke-api-$$") == true ]] ||
		fail "the cc-api container exited before /readyz answered"
	((SECONDS < deadline)) || fail "cc-api's image: http://127.0.0.1:$admin/readyz did not answer 200 within 30 s"
	sleep 0.1
done
ready_s=$((SECONDS - t0 - build_s))

echo "$T_NAME: sizes:"
"$TOP/scripts/images.sh" sizes | sed 's/^/    /'
pass "images built in ${build_s} s; every image's --version, labels, user, contents and libraries are right; the cc-migrate image applied every migration; the cc-api image answered /readyz (${ready_s} s of checks)"
