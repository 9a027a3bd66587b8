#!/usr/bin/env bash
# Adding a playlist is one entry in libcommon/game/playlist.c (issue 8).
#
# build/third-playlist/bin/ holds cc-matcher and cc-testkit-api built with
# one more entry in that list (tests/integration/third_playlist.h: "duo",
# 2v2 ranked, ranked-eligible arenas) and nothing else changed. In a
# scratch database migrated by the stock cc-migrate:
#  - the stock binaries know nothing of duo: cc-matcher --playlist=duo
#    exits 2 naming the playlists it knows, cc-api answers 422;
#  - the third-playlist cc-api inserts the duo row at start-up, equal to
#    the definition; the stock services stay ready beside it (a row they
#    do not know is a newer release's);
#  - four players queue for duo through that cc-api; the third-playlist
#    cc-matcher (no --team-size) forms one 2v2 proposal on a ranked-eligible
#    arena through PostgreSQL and the candidate index in Redis; all accept
#    and a duo match is created; the operator's queue view lists duo;
#  - a duo row that differs from the definition: a cc-matcher reports not
#    ready naming it and proposes nothing, cc-api refuses to start; once
#    the row is fixed the waiting matcher becomes ready without a restart.
# Built without the entry, the first start-up already fails.
source "$(dirname "$0")/lib.sh"

: "${CC_TEST_PG_ADMIN_DSN:?run under tests/harness/with-services.sh}"
: "${CC_TEST_REDIS_PORT:?run under tests/harness/with-services.sh}"
TB="$TOP/build/third-playlist/bin"
[[ -x "$TB/cc-matcher" && -x "$TB/cc-testkit-api" ]] || fail "$TB lacks cc-matcher or cc-testkit-api (make tests-build)"
REDIS=(--redis-host=127.0.0.1 --redis-port="$CC_TEST_REDIS_PORT")

# A scratch database of our own: the duo rows must not reach the shared one,
# whose playlists table other tests compare with the stock list.
DB="third_playlist_$$"
admin_sql() { psql -qAtX -v ON_ERROR_STOP=1 "$CC_TEST_PG_ADMIN_DSN" -c "$1"; }
drop_scratch() {
	admin_sql "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true
	redis-cli -p "$CC_TEST_REDIS_PORT" DEL cc:cand:duo:h cc:cand:duo:z >/dev/null 2>&1 || true
}
# First the database (FORCE ends our services' sessions), then lib.sh's cleanup with the test's status.
trap 'status=$?; drop_scratch; t_cleanup "$status"' EXIT
admin_sql "CREATE DATABASE $DB" >/dev/null
export CC_TEST_PG_DSN="${CC_TEST_PG_ADMIN_DSN%/postgres}/$DB" # lib.sh's start_api and sql use it
COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" COSMIC_CLASH_MIGRATIONS_DIR="$TOP/migrations" \
	"$BIN/cc-migrate" up >"$T_DIR/migrate.log" 2>&1 || fail "cc-migrate up: $(tail -3 "$T_DIR/migrate.log")"

# start_matcher NAME BIN [FLAGS...]: a cc-matcher on the scratch database; sets <NAME>_ADMIN and <NAME>_PID.
start_matcher() {
	local name=$1 bin=$2 admin; shift 2
	admin=$(free_port)
	COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" start_bg "$T_DIR/$name.log" "$bin" --admin-port="$admin" \
		--poll-interval-ms=100 "${REDIS[@]}" "$@"
	wait_http "http://127.0.0.1:$admin/healthz" "$LAST_PID" 20
	printf -v "${name}_ADMIN" 'http://127.0.0.1:%s' "$admin"
	printf -v "${name}_PID" '%s' "$LAST_PID"
}
# readyz URL: prints "STATUS BODY" of the admin's /readyz.
readyz() { curl -s -w ' %{http_code}' "$1/readyz" | awk '{ s = $NF; $NF = ""; print s, $0 }'; }
# await WHAT PID SECONDS CMD...: polls CMD until it succeeds; fails if PID exits or at the deadline.
await() {
	local what=$1 pid=$2 within=$3 deadline=$((SECONDS + $3)); shift 3
	while ((SECONDS < deadline)); do
		kill -0 "$pid" 2>/dev/null || fail "process $pid exited while waiting for $what"
		"$@" && return 0
		sleep 0.1
	done
	fail "$what: not within $within s (process $pid still running)"
}
DUO_ROW="2|t|50|5|600|ranked_eligible|f"
duo_row() {
	sql "SELECT concat_ws('|', team_size, ranked, tolerance_start, tolerance_growth_per_second, tolerance_cap,
	     arenas, profile) FROM playlists WHERE name = 'duo'"
}

# 1. The stock binaries do not know duo.
rc=0
COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" timeout 20 "$BIN/cc-matcher" --playlist=duo --admin-port=0 \
	>"$T_DIR/stock-matcher.out" 2>&1 || rc=$?
expect_eq "exit status of the stock cc-matcher --playlist=duo" 2 "$rc"
grep -q -- "--playlist: 'duo' is not one of casual|ranked" "$T_DIR/stock-matcher.out" ||
	fail "stock cc-matcher --playlist=duo said: $(cat "$T_DIR/stock-matcher.out")"
# stock_matcher_refuses WHAT PATTERN FLAGS...: exit 2 with PATTERN on stderr.
stock_matcher_refuses() {
	local what=$1 pattern=$2 rc=0; shift 2
	COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" timeout 20 "$BIN/cc-matcher" --admin-port=0 "$@" \
		>"$T_DIR/out" 2>&1 </dev/null || rc=$?
	expect_eq "cc-matcher $what: exit status" 2 "$rc"
	grep -qF -- "$pattern" "$T_DIR/out" || fail "cc-matcher $what: output lacks '$pattern': $(cat "$T_DIR/out")"
}
stock_matcher_refuses "--playlist=arcade" "--playlist: 'arcade' is not one of casual|ranked" --playlist=arcade
stock_matcher_refuses "--playlist=Ranked" "--playlist: not a playlist name ([a-z][a-z0-9_]{0,31}); one of casual|ranked" \
	--playlist=Ranked
stock_matcher_refuses "a control byte in --playlist" \
	"--playlist: not a playlist name ([a-z][a-z0-9_]{0,31}); one of casual|ranked" --playlist=$'duo\x1b[2J'
stock_matcher_refuses "a cap below ranked's own start" "--tolerance-cap (40) must be >= --tolerance-start (50)" \
	--playlist=ranked --tolerance-cap=40
expect_eq "playlists before any third-playlist service" "casual ranked" "$(sql "SELECT string_agg(name, ' ' ORDER BY name) FROM playlists")"
pass "the stock cc-matcher refuses --playlist=duo (and arcade, Ranked, a control byte), naming casual|ranked; a flag's cap is checked against ranked's own start"

# 2. The third-playlist cc-api inserts the row; the stock ones stay ready beside it.
COSMIC_CLASH_OPERATOR_TOKEN="third-playlist-operator-token" API_BIN="$TB/cc-testkit-api" \
	start_api A --regions=eu-west "${REDIS[@]}"
wait_http "$A_ADMIN/readyz" "$A_PID" 20
expect_eq "the duo row the third-playlist cc-api inserted" "$DUO_ROW" "$(duo_row)"
grep -q '"event":"playlists_inserted".*"rows":1' "$T_DIR/A.log" || fail "cc-api did not log playlists_inserted rows 1"
start_api S --regions=eu-west
wait_http "$S_ADMIN/readyz" "$S_PID" 20
t=$(login "$S_URL" "third-stock-$RANDOM")
probe "$S_URL" "$t" eu-west
http POST "$S_URL/v1/queue" "$t" '{"playlist":"duo","protocol_version":1,"build":"third"}' -H "Idempotency-Key: stock-duo"
expect_http "the stock cc-api asked for duo" 422 unknown_playlist
expect_eq "its message" "playlist must be one of: casual, ranked" "$(jq -r .error.message <<<"$BODY")"
start_matcher STOCK "$BIN/cc-matcher" --playlist=casual
wait_http "$STOCK_ADMIN/readyz" "$STOCK_PID" 20
pass "the third-playlist cc-api inserted duo ($DUO_ROW); the stock cc-api refuses duo (422) and the stock cc-matcher is ready beside the row"

# 3. Four players queue for duo; the third-playlist cc-matcher forms a 2v2.
start_matcher DUO "$TB/cc-matcher" --playlist=duo --proposal-window-seconds=60
grep -q '"event":"started".*"playlist":"duo".*"team_size":2,"ranked":true,"tolerance_start":50,"tolerance_growth_per_second":5,"tolerance_cap":600,' "$T_DIR/DUO.log" ||
	fail "the duo matcher did not start with duo's definition (2v2 ranked, 50 + 5/s, cap 600): $(grep '"started"' "$T_DIR/DUO.log")"
TOKS=() TICKETS=()
for i in 0 1 2 3; do
	t=$(login "$A_URL" "third-duo-$i-$RANDOM")
	probe "$A_URL" "$t" eu-west
	# Each probe spans two curl start-ups, which a busy machine stretches past
	# the matcher's 100 ms limit; playlists are what this test is about, so the
	# (scratch) evidence is pulled under it before the ticket copies it.
	sql "UPDATE region_rtts SET rtt_ms = 20 WHERE rtt_ms > 20" >/dev/null
	http POST "$A_URL/v1/queue" "$t" '{"playlist":"duo","protocol_version":1,"build":"third"}' -H "Idempotency-Key: duo-$i"
	expect_http "player $i queues for duo" 201
	expect_eq "player $i's ticket playlist" duo "$(jq -r .playlist <<<"$BODY")"
	TOKS+=("$t"); TICKETS+=("$(jq -r .id <<<"$BODY")")
done
proposed() {
	PROPOSAL=$(sql "SELECT proposal_id FROM tickets WHERE id = '${TICKETS[0]}' AND state = 'PROPOSED'")
	[[ -n "$PROPOSAL" ]]
}
await "a duo proposal" "$DUO_PID" 30 proposed
expect_eq "the proposal" "duo|2|OPEN" "$(sql "SELECT concat_ws('|', playlist, team_size, state) FROM proposals WHERE id = '$PROPOSAL'")"
expect_eq "players per team" "0:2 1:2" \
	"$(sql "SELECT string_agg(team || ':' || n, ' ' ORDER BY team) FROM (SELECT team, count(*) n FROM proposal_participants WHERE proposal_id = '$PROPOSAL' GROUP BY team) x")"
expect_eq "its tickets" "4" "$(sql "SELECT count(*) FROM tickets WHERE proposal_id = '$PROPOSAL' AND id IN ('${TICKETS[0]}','${TICKETS[1]}','${TICKETS[2]}','${TICKETS[3]}')")"
expect_eq "its arena is ranked-eligible" t "$(sql "SELECT a.ranked_eligible FROM proposals p JOIN arenas a ON a.name = p.arena WHERE p.id = '$PROPOSAL'")"
for i in 0 1 2 3; do
	http POST "$A_URL/v1/proposals/$PROPOSAL/response" "${TOKS[$i]}" '{"response":"accept","revision":1}'
	expect_http "player $i accepts" 200
done
expect_eq "after four accepts" ACCEPTED "$(jq -r .state <<<"$BODY")"
expect_eq "the match" "duo|2|ALLOCATING|4" "$(sql "SELECT concat_ws('|', m.playlist, m.team_size, m.state, (SELECT count(*) FROM match_players mp WHERE mp.match_id = m.id)) FROM matches m WHERE m.proposal_id = '$PROPOSAL'")"
http GET "$A_URL/v1/admin/queue/stats" "third-playlist-operator-token" ""
expect_http "operator queue view" 200
expect_eq "its playlists" "casual duo ranked" "$(jq -r '[.entries[].playlist] | unique | join(" ")' <<<"$BODY")"
pass "four players queued for duo; one 2v2 proposal on a ranked-eligible arena; all accepted: a duo match ALLOCATING; the operator view lists duo"

# 4. A duo row that differs from the definition stops both services.
sql "UPDATE playlists SET team_size = 3 WHERE name = 'duo'" >/dev/null
start_matcher DRIFT "$TB/cc-matcher" --playlist=casual
not_ready_on_duo() { local r; r=$(readyz "$DRIFT_ADMIN"); [[ $r == 503* && $r == *duo* && $r == *team_size* ]]; }
await "/readyz 503 naming the duo row" "$DRIFT_PID" 20 not_ready_on_duo
rc=0
port=$(free_port)
COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" timeout 20 "$TB/cc-testkit-api" --port="$port" --admin-port=0 \
	--regions=eu-west >"$T_DIR/drift-api.log" 2>&1 || rc=$?
[[ $rc -ne 0 && $rc -ne 124 ]] || fail "cc-api started over a differing duo row (exit $rc)"
grep -q '"event":"playlists_mismatch".*duo.*team_size' "$T_DIR/drift-api.log" ||
	fail "cc-api did not say why: $(tail -3 "$T_DIR/drift-api.log")"
sql "UPDATE playlists SET team_size = 2 WHERE name = 'duo'" >/dev/null
wait_http "$DRIFT_ADMIN/readyz" "$DRIFT_PID" 20
pass "a differing duo row: cc-matcher not ready naming it (ready again once fixed), cc-api refuses to start (exit $rc)"
