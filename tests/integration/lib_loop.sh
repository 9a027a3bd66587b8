# lib_loop.sh - sourced after lib.sh by the scripts that run the whole loop
# on one game server (player_play.sh, e2e_match.sh, player_netsim.sh):
# a scratch database, the secrets, cc-testkit-api, cc-allocator's local
# provider with one server, and cc-matcher (casual).
# (Not executable: run-tests.sh runs only executable scripts.)

# scratch_database PREFIX: a database of the test's own, migrated, dropped
# on exit (FORCE ends our services' sessions first), then lib.sh's cleanup
# with the test's status. Exports CC_TEST_PG_DSN (lib.sh's start_api and sql
# use it). Why: cc-allocator serves the oldest ALLOCATING match first, and
# the shared database holds the matches other tests left ALLOCATING
# (nothing allocates them there), which would take the test's one server.
scratch_database() {
	: "${CC_TEST_PG_ADMIN_DSN:?run under tests/harness/with-services.sh}"
	DB="$1_$$"
	admin_sql() { psql -qAtX -v ON_ERROR_STOP=1 "$CC_TEST_PG_ADMIN_DSN" -c "$1"; }
	trap 'status=$?; admin_sql "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true; t_cleanup "$status"' EXIT
	admin_sql "CREATE DATABASE $DB" >/dev/null
	export CC_TEST_PG_DSN="${CC_TEST_PG_ADMIN_DSN%/postgres}/$DB"
	COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" COSMIC_CLASH_MIGRATIONS_DIR="$TOP/migrations" \
		"$BIN/cc-migrate" up >"$T_DIR/migrate.log" 2>&1 || fail "cc-migrate up: $(tail -3 "$T_DIR/migrate.log")"
}

# loop_secrets: the workload secret ($T_DIR/workload.secret) and the join
# key set with key k1 ($T_DIR/join.json).
loop_secrets() {
	head -c 48 /dev/urandom | base64 | tr -d '\n=' >"$T_DIR/workload.secret"
	printf '{"k1":"%s"}\n' "$(head -c 32 /dev/urandom | base64 | tr -d '\n')" >"$T_DIR/join.json"
}

# start_loop SERVER_COMMAND: cc-testkit-api (A_URL; kept when already started), cc-allocator with one
# local server on game_port running SERVER_COMMAND (its log in GAME_LOG, kept
# with the test's logs), and a ready cc-matcher (casual). Call loop_secrets first.
start_loop() {
	mkdir -p "$T_DIR/state"
	[[ -n ${A_URL:-} ]] || start_api A --regions=eu-west --workload-secret-file="$T_DIR/workload.secret"
	game_port=$(free_port)
	COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" start_bg "$T_DIR/allocator.log" "$BIN/cc-allocator" \
		--workload-secret-file="$T_DIR/workload.secret" --join-keys-file="$T_DIR/join.json" --join-key-id=k1 \
		--local-capacity=1 --local-port-min="$game_port" --local-port-max="$game_port" --local-region=eu-west \
		--local-state-dir="$T_DIR/state" --local-server-command="$1" \
		--api-url="$A_URL" --poll-interval-ms=100 --admin-port="$(free_port)"
	GAME_LOG="$T_DIR/state/local-$game_port.log"
	T_LOGS+=("$GAME_LOG")
	local madmin
	madmin=$(free_port)
	COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" start_bg "$T_DIR/matcher.log" "$BIN/cc-matcher" \
		--playlist=casual --admin-port="$madmin" --poll-interval-ms=100
	wait_http "http://127.0.0.1:$madmin/readyz" "$LAST_PID" 20
}

# start_maint NAME: a cc-maintenance replica on its own admin port with the caller's
# FLAGS array (its log NAME.log); sets NAME_PID and NAME_ADMIN (its admin URL).
start_maint() {
	local name=$1 admin; admin=$(free_port)
	COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" start_bg "$T_DIR/$name.log" "$BIN/cc-maintenance" \
		--admin-port="$admin" "${FLAGS[@]}"
	printf -v "${name}_PID" '%s' "$LAST_PID"
	printf -v "${name}_ADMIN" 'http://127.0.0.1:%s' "$admin"
}

# wait_until WHAT SECONDS CHECK: polls the shell command CHECK until it holds; fails naming WHAT at the deadline.
wait_until() {
	local what=$1 deadline=$(($(date +%s%N) / 1000000 + $2 * 1000))
	while ! eval "$3"; do
		(($(date +%s%N) / 1000000 < deadline)) || fail "$what: not within $2 s ('$3' still false)"
		sleep 0.05
	done
}

# start_pool LOG PORT_MIN PORT_MAX BINARY [ENV=VALUE...]: BINARY (cc-allocator or
# cc-testkit-allocator, with the ENV given) serving A_URL from the local provider, one pool process
# per port of PORT_MIN..PORT_MAX in eu-west, each running cc-supervisor with
# $T_DIR/gameserver.conf; state in $T_DIR/state (the same each time, so a restart finds the same
# instances), a 2 s claim lease. Call loop_secrets first. Sets ALLOC_PID and ALLOC_LOG (LOG).
start_pool() {
	local min=$2 max=$3 bin=$4
	ALLOC_LOG=$1
	shift 4
	mkdir -p "$T_DIR/state"
	start_bg "$ALLOC_LOG" env COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" "$@" "$BIN/$bin" \
		--workload-secret-file="$T_DIR/workload.secret" --join-keys-file="$T_DIR/join.json" --join-key-id=k1 \
		--local-capacity=$((max - min + 1)) --local-port-min="$min" --local-port-max="$max" --local-region=eu-west \
		--local-state-dir="$T_DIR/state" --api-url="$A_URL" --poll-interval-ms=100 --admin-port="$(free_port)" \
		--claim-lease-ms=2000 \
		--local-server-command="$BIN/cc-supervisor --join-keys-file=$T_DIR/join.json --gameserver-config=$T_DIR/gameserver.conf"
	ALLOC_PID=$LAST_PID
}
