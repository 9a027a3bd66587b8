#!/usr/bin/env bash
# cc-api's profile is fed by the tier_bands table: a custom band shows in
# GET /v1/profile/ranked, and a malformed table (a band named PROVISIONAL,
# which is a status and never a band) stops start-up with a clear log line.
source "$(dirname "$0")/lib.sh"
restore() { sql "DELETE FROM tier_bands WHERE name IN ('PROVISIONAL', 'LEGEND')" >/dev/null; }
trap 'restore; t_cleanup' EXIT

sql "INSERT INTO tier_bands (name, min_rating) VALUES ('PROVISIONAL', 2700)" >/dev/null
rc=0
COSMIC_CLASH_DATABASE_URL="$CC_TEST_PG_DSN" timeout 20 "$BIN/cc-api" --port=0 --admin-port=0 >"$T_DIR/bad.out" 2>"$T_DIR/bad.err" || rc=$?
T_LOGS+=("$T_DIR/bad.err")
expect_eq "cc-api exit status with a PROVISIONAL band" 1 "$rc"
grep -q '"event":"tier_bands_invalid"' "$T_DIR/bad.err" || fail "no tier_bands_invalid log line: $(cat "$T_DIR/bad.err")"
grep -q 'PROVISIONAL' "$T_DIR/bad.err" || fail "the refusal does not name the bad band: $(cat "$T_DIR/bad.err")"
restore
pass "a malformed tier_bands table stops start-up (exit 1, the band named)"

sql "INSERT INTO tier_bands (name, min_rating) VALUES ('LEGEND', 2700)" >/dev/null
start_api A --regions=eu-west
tok=$(login "$A_URL" "tiers-$RANDOM")
player=$(sql "SELECT player_id FROM sessions ORDER BY created_at DESC LIMIT 1")
http GET "$A_URL/v1/profile/ranked" "$tok" ""
expect_http "profile before any ranked game" 404 no_rating
sql "INSERT INTO ratings (player_id, playlist, rating, deviation, games) VALUES ('$player', 'ranked', 2750, 60, 40)" >/dev/null
http GET "$A_URL/v1/profile/ranked" "$tok" ""
expect_http "profile" 200
expect_eq "tier from the table's custom band" LEGEND "$(jq -r .tier <<<"$BODY")"
expect_eq "provisional after 40 games" false "$(jq -r .provisional <<<"$BODY")"
sql "UPDATE ratings SET games = 3 WHERE player_id = '$player'" >/dev/null
http GET "$A_URL/v1/profile/ranked" "$tok" ""
expect_eq "tier with 3 ranked games" PROVISIONAL "$(jq -r .tier <<<"$BODY")"
pass "GET /v1/profile/ranked uses the tier_bands table and the provisional rule"
