#include "store/rosters.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys/crypto.h"
#include "sys/banned.h"

/* Slot order: team, then player id (the same deal every time). */
static const char sql_participants[] =
	"SELECT player_id, team FROM match_players WHERE match_id = $1 ORDER BY team, player_id";

/* The roster row and every seat in one statement: arrays of equal length, unnested together. */
static const char sql_insert[] =
	"WITH r AS (INSERT INTO rosters (match_id, allocation_id, key_id, digest, manifest) "
	"  VALUES ($1, $2, $3, $4, $5::jsonb) RETURNING match_id) "
	"INSERT INTO assignments (match_id, player_id, slot, team, generation, join_token, expires_at) "
	"SELECT r.match_id, u.player_id, u.slot, u.team, u.generation, u.join_token, to_timestamp(u.expires) "
	"FROM r, unnest($6::uuid[], $7::smallint[], $8::smallint[], $9::int[], $10::text[], $11::bigint[]) "
	"  AS u(player_id, slot, team, generation, join_token, expires)";

int cc_roster_participants(struct cc_pg *pg, const char *match_id, struct cc_roster_seat *seats, size_t cap,
			   size_t *n)
{
	PGresult *res = NULL;
	if (!cc_uuid_valid(match_id))
		return CC_EINVAL;
	const char *p[] = { match_id };
	int rc = cc_pg_exec(pg, sql_participants, 1, p, &res);
	if (rc != 0)
		goto out;
	size_t rows = (size_t)PQntuples(res);
	if (rows == 0) {
		rc = CC_ENOTFOUND;
		goto out;
	}
	if (rows > cap) {
		rc = CC_ETOOBIG;
		goto out;
	}
	for (size_t i = 0; i < rows; i++) {
		memset(&seats[i], 0, sizeof seats[i]);
		snprintf(seats[i].player_id, sizeof seats[i].player_id, "%s", PQgetvalue(res, (int)i, 0));
		seats[i].team = (int)strtol(PQgetvalue(res, (int)i, 1), NULL, 10);
		seats[i].slot = (int)i;
		seats[i].generation = 1;
	}
	*n = rows;
out:
	PQclear(res);
	return rc;
}

/*
 * Appends one element to a PostgreSQL array literal in buf (used bytes in
 * *used): quoted when quote, which the tokens and ids never need escaping
 * for (printable ASCII without '"' or '\\', checked by the caller).
 */
static int array_add(char *buf, size_t cap, size_t *used, const char *value, bool quote)
{
	int w = snprintf(buf + *used, cap - *used, "%s%s%s%s", *used > 1 ? "," : "", quote ? "\"" : "", value,
			 quote ? "\"" : "");
	if (w < 0 || (size_t)w >= cap - *used)
		return CC_ETOOBIG;
	*used += (size_t)w;
	return 0;
}

/* True when s is printable ASCII with nothing an array literal would need escaped. */
static bool plain_text(const char *s)
{
	if (!s || !*s)
		return false;
	for (; *s; s++)
		if (*s < 0x21 || *s > 0x7e || *s == '"' || *s == '\\' || *s == ',' || *s == '{' || *s == '}')
			return false;
	return true;
}

int cc_roster_insert(struct cc_pg *pg, const struct cc_roster_record *r, const struct cc_roster_seat *seats,
		     size_t n)
{
	enum { PLAYERS, SLOTS, TEAMS, GENS, TOKENS, EXPIRES, NARRAYS };
	static const size_t caps[NARRAYS] = { 64 * 40, 64 * 4, 64 * 4, 64 * 12, 64 * 1024, 64 * 24 };
	char *arr[NARRAYS] = { 0 };
	size_t used[NARRAYS];
	int rc = CC_EINVAL;

	if (!r || !cc_uuid_valid(r->match_id) || !cc_uuid_valid(r->allocation_id) || !r->key_id ||
	    !r->digest || strlen(r->digest) != CC_SHA256_HEX_LEN || !r->manifest_json || n == 0 || n > 64)
		return CC_EINVAL;
	for (int k = 0; k < NARRAYS; k++) {
		arr[k] = malloc(caps[k]);
		if (!arr[k]) {
			rc = CC_ENOMEM;
			goto out;
		}
		arr[k][0] = '{';
		arr[k][1] = '\0';
		used[k] = 1;
	}
	for (size_t i = 0; i < n; i++) {
		char num[4][24];
		if (!cc_uuid_valid(seats[i].player_id) || !plain_text(seats[i].join_token))
			goto out;
		snprintf(num[0], sizeof num[0], "%d", seats[i].slot);
		snprintf(num[1], sizeof num[1], "%d", seats[i].team);
		snprintf(num[2], sizeof num[2], "%d", seats[i].generation);
		snprintf(num[3], sizeof num[3], "%lld", (long long)seats[i].expires_unix);
		if ((rc = array_add(arr[PLAYERS], caps[PLAYERS], &used[PLAYERS], seats[i].player_id, false)) != 0 ||
		    (rc = array_add(arr[SLOTS], caps[SLOTS], &used[SLOTS], num[0], false)) != 0 ||
		    (rc = array_add(arr[TEAMS], caps[TEAMS], &used[TEAMS], num[1], false)) != 0 ||
		    (rc = array_add(arr[GENS], caps[GENS], &used[GENS], num[2], false)) != 0 ||
		    (rc = array_add(arr[TOKENS], caps[TOKENS], &used[TOKENS], seats[i].join_token, true)) != 0 ||
		    (rc = array_add(arr[EXPIRES], caps[EXPIRES], &used[EXPIRES], num[3], false)) != 0)
			goto out;
		rc = CC_EINVAL;
	}
	for (int k = 0; k < NARRAYS; k++) {
		if (used[k] + 2 > caps[k]) {
			rc = CC_ETOOBIG;
			goto out;
		}
		arr[k][used[k]++] = '}';
		arr[k][used[k]] = '\0';
	}
	const char *p[] = { r->match_id, r->allocation_id, r->key_id, r->digest, r->manifest_json,
			    arr[PLAYERS], arr[SLOTS], arr[TEAMS], arr[GENS], arr[TOKENS], arr[EXPIRES] };
	rc = cc_pg_exec(pg, sql_insert, 11, p, NULL);
out:
	for (int k = 0; k < NARRAYS; k++)
		free(arr[k]);
	return rc;
}
