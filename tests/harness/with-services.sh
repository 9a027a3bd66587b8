#!/usr/bin/env bash
# with-services.sh CMD [ARGS...]
#
# Starts a disposable PostgreSQL (initdb in a temp dir, its own port and
# socket directory, run as the unprivileged "postgres" user when we are root)
# and a disposable Redis, applies the migrations with cc-migrate, runs CMD with
# their addresses in the environment, then stops both and deletes the temp
# dir, also after a failure or a signal. When CMD or the start-up fails, the
# servers' logs are printed before anything is deleted.
#
# CMD sees:
#   CC_TEST_PG_DSN        database with every migration applied
#   CC_TEST_PG_ADMIN_DSN  the "postgres" database, for creating scratch DBs
#   CC_TEST_PG_HOST/PORT  127.0.0.1 and the port
#   CC_TEST_PG_BIN        PostgreSQL's bin dir (pg_ctl, pg_dump, pgbench)
#   CC_TEST_PG_DATA       the data dir; stop, start or restart the server in a
#                         test with tests/harness/pg-ctl.sh (pg_ctl on it)
#   CC_TEST_PG_LOG        the server's log
#   CC_TEST_REDIS_HOST/PORT, CC_TEST_REDIS_PIDFILE, CC_TEST_REDIS_DIR: stop and
#                         start it in a test with tests/harness/redis-ctl.sh
#   CC_TEST_TMP           a scratch dir inside the temp dir
# Set CC_HARNESS_NO_MIGRATE=1 to skip migrations.
#
# PostgreSQL is started and stopped with pg_ctl (tests/harness/pg-ctl.sh),
# never by PID: a test may restart it, and the restarted postmaster is not
# our child, so a PID remembered from the start would be stale at cleanup.
set -Eeuo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
[[ $# -ge 1 ]] || { echo "usage: with-services.sh CMD [ARGS...]" >&2; exit 2; }

pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[[ -x "$pgbin/initdb" ]] || { echo "with-services: no PostgreSQL server under /usr/lib/postgresql (run scripts/ensure-deps.sh)" >&2; exit 1; }
command -v redis-server >/dev/null || { echo "with-services: redis-server is not installed (run scripts/ensure-deps.sh)" >&2; exit 1; }

root=$(mktemp -d "${TMPDIR:-/tmp}/cc-harness.XXXXXX")
chmod 0755 "$root"
mkdir -p "$root/pg" "$root/sock" "$root/redis" "$root/scratch"
pg_started=0
pg_initdb=0
redis_tried=0
redis_pidfile="$root/redis/redis.pid"
rc=0

as_pg() {
	if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}
print_logs() {
	echo "---- with-services: PostgreSQL log ($root/pg.log) ----" >&2
	tail -n 60 "$root/pg.log" >&2 2>/dev/null || true
	echo "---- with-services: Redis log ----" >&2
	tail -n 30 "$root/redis/redis.log" >&2 2>/dev/null || true
	echo "---- with-services: end of logs ----" >&2
}

cleanup() {
	rc=${rc:-$?}
	trap - EXIT INT TERM
	if [[ $rc -ne 0 ]]; then
		echo "with-services: exit status $rc" >&2
		print_logs
	fi
	if [[ $redis_tried -eq 1 ]]; then
		CC_TEST_REDIS_PORT="${rport:-0}" "$here/redis-ctl.sh" stop || true # by its pidfile: also one a test restarted
	fi
	if [[ $pg_initdb -eq 1 && -f "$root/pg/postmaster.pid" ]]; then
		# Immediate shutdown, nothing to keep; whichever postmaster runs now
		# (postmaster.pid), also one a test restarted.
		"$here/pg-ctl.sh" kill >>"$root/pg-ctl.log" 2>&1 ||
			echo "with-services: pg_ctl stop failed: $(tail -n 3 "$root/pg-ctl.log")" >&2
	fi
	rm -rf "$root"
	exit "$rc"
}
trap 'rc=$?; cleanup' EXIT
trap 'rc=130; cleanup' INT
trap 'rc=143; cleanup' TERM

# free_port: below the kernel's ephemeral range (scripts/lib/ports.sh).
source "$top/scripts/lib/ports.sh"

chown postgres "$root/pg" "$root/sock" 2>/dev/null || true
as_pg "$pgbin/initdb" -D "$root/pg" -U cc -A trust -E UTF8 --locale=C --no-sync >"$root/initdb.log" 2>&1 ||
	{ cat "$root/initdb.log" >&2; rc=1; exit 1; }
touch "$root/pg.log" && chown postgres "$root/pg.log" 2>/dev/null || true
pg_initdb=1
export CC_TEST_PG_BIN="$pgbin" CC_TEST_PG_DATA="$root/pg" CC_TEST_PG_LOG="$root/pg.log"

# Every setting goes into postgresql.conf, so pg-ctl.sh start (a test's
# restart too) brings back the same server; the last port line wins.
cat >>"$root/pg/postgresql.conf" <<CONF
# with-services.sh
listen_addresses = '127.0.0.1'
unix_socket_directories = '$root/sock'
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 300
shared_buffers = 128MB
CONF
for attempt in 1 2 3 4 5; do
	pgport=$(free_port)
	echo "port = $pgport" >>"$root/pg/postgresql.conf"
	# pg_ctl -w waits until it accepts connections, or fails when the server
	# dies first (e.g. the port was taken meanwhile: try another).
	if "$here/pg-ctl.sh" start >>"$root/pg-ctl.log" 2>&1; then
		pg_started=1
		break
	fi
	echo "with-services: PostgreSQL did not start on port $pgport (attempt $attempt)" >&2
	"$here/pg-ctl.sh" kill >>"$root/pg-ctl.log" 2>&1 || true
done
[[ $pg_started -eq 1 ]] || { cat "$root/pg-ctl.log" >&2; rc=1; exit 1; }
# As role cc on an existing database: pg_isready's defaults (our login name,
# as database too) make the server log a FATAL on every start.
"$pgbin/pg_isready" -q -h 127.0.0.1 -p "$pgport" -U cc -d postgres ||
	{ echo "with-services: pg_ctl says started, but pg_isready disagrees" >&2; rc=1; exit 1; }

admin_dsn="postgresql://cc@127.0.0.1:$pgport/postgres"
"$pgbin/psql" -qAtX -v ON_ERROR_STOP=1 "$admin_dsn" -c 'CREATE DATABASE cosmic_clash' >/dev/null
dsn="postgresql://cc@127.0.0.1:$pgport/cosmic_clash"

redis_started=0
export CC_TEST_REDIS_PIDFILE="$redis_pidfile" CC_TEST_REDIS_DIR="$root/redis"
for attempt in 1 2 3 4 5; do
	rport=$(free_port)
	redis_tried=1
	if CC_TEST_REDIS_PORT="$rport" "$here/redis-ctl.sh" start; then
		redis_started=1
		break
	fi
	echo "with-services: Redis did not answer on port $rport (attempt $attempt)" >&2
	CC_TEST_REDIS_PORT="$rport" "$here/redis-ctl.sh" stop || true
	rm -f "$redis_pidfile"
done
[[ $redis_started -eq 1 ]] || { rc=1; exit 1; }

export CC_TEST_PG_DSN="$dsn" CC_TEST_PG_ADMIN_DSN="$admin_dsn" CC_TEST_PG_HOST=127.0.0.1
export CC_TEST_PG_PORT="$pgport" CC_TEST_PG_SOCKDIR="$root/sock"
export CC_TEST_REDIS_HOST=127.0.0.1 CC_TEST_REDIS_PORT="$rport"
export CC_TEST_TMP="$root/scratch" CC_HARNESS_ROOT="$root"

if [[ "${CC_HARNESS_NO_MIGRATE:-0}" != 1 ]]; then
	# The DSN is a secret to cc-migrate (it may hold a password): environment only.
	COSMIC_CLASH_DATABASE_URL="$dsn" COSMIC_CLASH_MIGRATIONS_DIR="$top/migrations" \
		"$top/build/bin/cc-migrate" up >"$root/migrate.log" 2>&1 ||
		{ echo "with-services: cc-migrate up failed:" >&2; cat "$root/migrate.log" >&2; rc=1; exit 1; }
fi

set +e
"$@"
rc=$?
set -e
exit "$rc"
