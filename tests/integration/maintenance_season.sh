#!/usr/bin/env bash
# Seasons end to end: before any season exists GET /v1/profile/ranked says
# season_end null; one cc-maintenance pass starts season 1 (today's UTC
# midnight + --season-weeks) and the profile shows its end; when it has
# ended, the next pass starts season 2 where season 1 ended, and the
# player's rating gets its one soft reset (pulled halfway to 1500, the
# deviation raised to 200), shown by the profile; another pass changes
# nothing. The operator's player view shows the same season_end.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib_loop.sh"

scratch_database maint_season
op_token=$(head -c 32 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 40)
printf '%s' "$op_token" >"$T_DIR/operator.token"
start_api A --regions=eu-west --operator-token-file="$T_DIR/operator.token"
tok=$(login "$A_URL" "season-$RANDOM$RANDOM")
pid=$(sql "SELECT id FROM players ORDER BY created_at DESC LIMIT 1")
sql "INSERT INTO ratings (player_id, playlist, rating, deviation, volatility, games) VALUES ('$pid', 'ranked', 1900, 80, 0.06, 12)" >/dev/null

profile() { http GET "$A_URL/v1/profile/ranked" "$tok"; expect_http "profile" 200; }
maint_once() {
	COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" "$BIN/cc-maintenance" --once --admin-port=0 --season-weeks=12 \
		>>"$T_DIR/maint.log" 2>&1 || { tail -5 "$T_DIR/maint.log"; fail "cc-maintenance --once exited $?"; }
}

profile
expect_eq "season_end before any season" "null" "$(jq -c .season_end <<<"$BODY")"

maint_once
expected=$(sql "SELECT to_char((date_trunc('day', now() AT TIME ZONE 'UTC') + interval '12 weeks'), 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')")
profile
expect_eq "season_end of season 1" "$expected" "$(jq -r .season_end <<<"$BODY")"
expect_eq "season 1 resets nobody" "1900 80" "$(jq -r '"\(.rating) \(.deviation)"' <<<"$BODY")"
http GET "$A_URL/v1/admin/players/$pid" "" "" -H "Authorization: Bearer $op_token"
expect_http "operator view" 200
expect_eq "operator view: season_end" "$expected" "$(jq -r .rating.season_end <<<"$BODY")"
pass "season 1 started by the first pass; the profile and the operator view show its end $expected"

# Season 1 ends (moved into the past); the rating row existed before season 2.
sql "UPDATE seasons SET starts_at = now() - interval '12 weeks 1 minute', ends_at = now() - interval '1 minute' WHERE season = 1" >/dev/null
sql "UPDATE ratings SET created_at = now() - interval '13 weeks' WHERE player_id = '$pid'" >/dev/null
maint_once
expect_eq "season 2 starts where season 1 ended" "t" "$(sql "SELECT (SELECT starts_at FROM seasons WHERE season = 2) = (SELECT ends_at FROM seasons WHERE season = 1)")"
profile
expect_eq "soft reset: halfway to 1500, deviation raised to 200" "1700 200" "$(jq -r '"\(.rating) \(.deviation)"' <<<"$BODY")"
expect_eq "season_end of season 2" "$(sql "SELECT to_char(ends_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"') FROM seasons WHERE season = 2")" \
	"$(jq -r .season_end <<<"$BODY")"
maint_once
profile
expect_eq "a second pass resets nobody again" "1700 200 1" "$(jq -r '"\(.rating) \(.deviation)"' <<<"$BODY") $(sql "SELECT count(*) FROM season_resets WHERE player_id = '$pid'")"
pass "season 2: one soft reset (1900/80 -> 1700/200), shown on the profile; a rerun changed nothing"
