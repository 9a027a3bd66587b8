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

static const char sql_participants_many[] =
	"SELECT match_id, player_id, team FROM match_players WHERE match_id = ANY($1::uuid[]) "
	"ORDER BY match_id, team, player_id";

/*
 * A batch's publication, one statement: the rosters rows (manifests as one
 * JSON array, in the order of the other arrays), every seat, PUBLISHED
 * for the allocations whose roster was written (a row no longer ALLOCATED
 * is left alone: the caller counts the rows and rolls back), and one
 * outbox event per allocation. The last column counts the assignments.
 */
static const char sql_publish_many[] =
	"WITH r AS (INSERT INTO rosters (match_id, allocation_id, key_id, digest, manifest) "
	"  SELECT u.match_id, u.allocation_id, $3, u.digest, j.manifest "
	"  FROM unnest($1::uuid[], $2::uuid[], $4::text[]) WITH ORDINALITY AS u(match_id, allocation_id, digest, ord) "
	"  JOIN jsonb_array_elements($5::jsonb) WITH ORDINALITY AS j(manifest, ord) ON j.ord = u.ord "
	"  RETURNING allocation_id), "
	"s AS (INSERT INTO assignments (match_id, player_id, slot, team, generation, join_token, expires_at) "
	"  SELECT u.match_id, u.player_id, u.slot, u.team, u.generation, u.join_token, to_timestamp(u.expires) "
	"  FROM unnest($6::uuid[], $7::uuid[], $8::smallint[], $9::smallint[], $10::int[], $11::text[], $12::bigint[]) "
	"    AS u(match_id, player_id, slot, team, generation, join_token, expires) RETURNING 1), "
	"p AS (UPDATE allocations a SET state = 'PUBLISHED', revision = a.revision + 1, claimed_by = NULL, "
	"  claim_until = NULL, updated_at = now() FROM r WHERE a.id = r.allocation_id AND a.state = 'ALLOCATED' "
	"  RETURNING a.id, a.match_id, a.server_id, a.revision) "
	"SELECT p.id, cc_outbox_append('allocation.published', 'allocation', p.id, p.revision, "
	"    ARRAY(SELECT mp.player_id FROM match_players mp WHERE mp.match_id = p.match_id "
	"      ORDER BY mp.team, mp.player_id), "
	"    jsonb_build_object('match_id', p.match_id, 'server_id', p.server_id)), "
	"  (SELECT count(*) FROM s) "
	"FROM p ORDER BY p.id";

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

/* ids[0..n) as a uuid[] literal (malloc'd); NULL on a bad id or no memory. */
static char *uuid_list(const char *const *ids, size_t n)
{
	size_t cap = n * (CC_UUID_BUF + 1) + 3, used = 1;
	char *arr = malloc(cap);
	if (!arr)
		return NULL;
	arr[0] = '{';
	arr[1] = '\0';
	for (size_t i = 0; i < n; i++)
		if (!cc_uuid_valid(ids[i]) || array_add(arr, cap, &used, ids[i], false) != 0) {
			free(arr);
			return NULL;
		}
	arr[used++] = '}';
	arr[used] = '\0';
	return arr;
}

int cc_roster_participants_many(struct cc_pg *pg, const char *const *match_ids, size_t n,
				struct cc_roster_seat *seats, size_t per, size_t *counts)
{
	PGresult *res = NULL;
	if (!match_ids || !seats || !counts || n == 0 || n > 4096 || per == 0)
		return CC_EINVAL;
	char *arr = uuid_list(match_ids, n);
	if (!arr)
		return CC_EINVAL;
	const char *p[] = { arr };
	int rc = cc_pg_exec(pg, sql_participants_many, 1, p, &res);
	if (rc != 0)
		goto out;
	for (size_t i = 0; i < n; i++)
		counts[i] = 0;
	int rows = PQntuples(res);
	size_t at = 0; /* rows come grouped by match: remember the last one found */
	for (int k = 0; k < rows; k++) {
		const char *m = PQgetvalue(res, k, 0);
		if (strcmp(match_ids[at], m) != 0) {
			for (at = 0; at < n && strcmp(match_ids[at], m) != 0; at++)
				;
			if (at == n)
				CC_BUG("participants of a match not asked for");
		}
		/* The same match twice in the batch gets its seats once: the insert then refuses it. */
		if (counts[at] >= per) {
			rc = CC_ETOOBIG;
			goto out;
		}
		struct cc_roster_seat *s = &seats[at * per + counts[at]];
		memset(s, 0, sizeof *s);
		snprintf(s->player_id, sizeof s->player_id, "%s", PQgetvalue(res, k, 1));
		s->team = (int)strtol(PQgetvalue(res, k, 2), NULL, 10);
		s->slot = (int)counts[at];
		s->generation = 1;
		counts[at]++;
	}
	for (size_t i = 0; i < n; i++)
		if (counts[i] == 0) {
			rc = CC_ENOTFOUND;
			goto out;
		}
out:
	PQclear(res);
	free(arr);
	return rc;
}

int cc_rosters_publish_many(struct cc_pg *pg, const struct cc_roster_record *recs,
			    const struct cc_roster_seat *const *seats, const size_t *counts, size_t n)
{
	enum { R_MATCH, R_ALLOC, R_DIGEST, R_MANIFEST, S_MATCH, S_PLAYER, S_SLOT, S_TEAM, S_GEN, S_TOKEN, S_EXPIRES,
	       NARRAYS };
	char *arr[NARRAYS] = { 0 };
	size_t caps[NARRAYS], used[NARRAYS];
	size_t seats_total = 0, manifests = 0;
	PGresult *res = NULL;
	int rc = CC_EINVAL;

	if (!recs || !seats || !counts || n == 0 || n > 4096)
		return CC_EINVAL;
	for (size_t i = 0; i < n; i++) {
		const struct cc_roster_record *r = &recs[i];
		if (!cc_uuid_valid(r->match_id) || !cc_uuid_valid(r->allocation_id) || !r->key_id ||
		    strcmp(r->key_id, recs[0].key_id) != 0 || !r->digest || strlen(r->digest) != CC_SHA256_HEX_LEN ||
		    !plain_text(r->digest) || !r->manifest_json || counts[i] == 0 || counts[i] > 64 || !seats[i])
			return CC_EINVAL;
		seats_total += counts[i];
		manifests += strlen(r->manifest_json) + 1;
	}
	caps[R_MATCH] = caps[R_ALLOC] = caps[S_MATCH] = caps[S_PLAYER] = 0;
	caps[R_MATCH] = caps[R_ALLOC] = n * (CC_UUID_BUF + 1) + 3;
	caps[R_DIGEST] = n * (CC_SHA256_HEX_LEN + 3) + 3;
	caps[R_MANIFEST] = manifests + 3;
	caps[S_MATCH] = caps[S_PLAYER] = seats_total * (CC_UUID_BUF + 1) + 3;
	caps[S_SLOT] = caps[S_TEAM] = caps[S_GEN] = caps[S_EXPIRES] = seats_total * 24 + 3;
	caps[S_TOKEN] = seats_total * 1026 + 3;
	for (int k = 0; k < NARRAYS; k++) {
		arr[k] = malloc(caps[k]);
		if (!arr[k]) {
			rc = CC_ENOMEM;
			goto out;
		}
		arr[k][0] = k == R_MANIFEST ? '[' : '{';
		arr[k][1] = '\0';
		used[k] = 1;
	}
	for (size_t i = 0; i < n; i++) {
		const struct cc_roster_record *r = &recs[i];
		if ((rc = array_add(arr[R_MATCH], caps[R_MATCH], &used[R_MATCH], r->match_id, false)) != 0 ||
		    (rc = array_add(arr[R_ALLOC], caps[R_ALLOC], &used[R_ALLOC], r->allocation_id, false)) != 0 ||
		    (rc = array_add(arr[R_DIGEST], caps[R_DIGEST], &used[R_DIGEST], r->digest, true)) != 0 ||
		    (rc = array_add(arr[R_MANIFEST], caps[R_MANIFEST], &used[R_MANIFEST], r->manifest_json, false)) != 0)
			goto out;
		for (size_t j = 0; j < counts[i]; j++) {
			const struct cc_roster_seat *st = &seats[i][j];
			char num[4][24];
			rc = CC_EINVAL;
			if (!cc_uuid_valid(st->player_id) || !plain_text(st->join_token) || strlen(st->join_token) > 1000)
				goto out;
			snprintf(num[0], sizeof num[0], "%d", st->slot);
			snprintf(num[1], sizeof num[1], "%d", st->team);
			snprintf(num[2], sizeof num[2], "%d", st->generation);
			snprintf(num[3], sizeof num[3], "%lld", (long long)st->expires_unix);
			if ((rc = array_add(arr[S_MATCH], caps[S_MATCH], &used[S_MATCH], r->match_id, false)) != 0 ||
			    (rc = array_add(arr[S_PLAYER], caps[S_PLAYER], &used[S_PLAYER], st->player_id, false)) != 0 ||
			    (rc = array_add(arr[S_SLOT], caps[S_SLOT], &used[S_SLOT], num[0], false)) != 0 ||
			    (rc = array_add(arr[S_TEAM], caps[S_TEAM], &used[S_TEAM], num[1], false)) != 0 ||
			    (rc = array_add(arr[S_GEN], caps[S_GEN], &used[S_GEN], num[2], false)) != 0 ||
			    (rc = array_add(arr[S_TOKEN], caps[S_TOKEN], &used[S_TOKEN], st->join_token, true)) != 0 ||
			    (rc = array_add(arr[S_EXPIRES], caps[S_EXPIRES], &used[S_EXPIRES], num[3], false)) != 0)
				goto out;
		}
	}
	for (int k = 0; k < NARRAYS; k++) {
		if (used[k] + 2 > caps[k]) {
			rc = CC_ETOOBIG;
			goto out;
		}
		arr[k][used[k]++] = k == R_MANIFEST ? ']' : '}';
		arr[k][used[k]] = '\0';
	}
	const char *p[] = { arr[R_MATCH], arr[R_ALLOC], recs[0].key_id, arr[R_DIGEST], arr[R_MANIFEST], arr[S_MATCH],
			    arr[S_PLAYER], arr[S_SLOT], arr[S_TEAM], arr[S_GEN], arr[S_TOKEN], arr[S_EXPIRES] };
	rc = cc_pg_exec(pg, sql_publish_many, 12, p, &res);
	if (rc == 0 && (size_t)PQntuples(res) != n)
		rc = CC_ECONFLICT; /* an allocation was no longer ALLOCATED: the caller rolls back */
	if (rc == 0 && strtoull(PQgetvalue(res, 0, 2), NULL, 10) != seats_total)
		rc = CC_ECONFLICT;
out:
	PQclear(res);
	for (int k = 0; k < NARRAYS; k++)
		free(arr[k]);
	return rc;
}

static const char sql_lock[] = "SELECT manifest::text, key_id FROM rosters WHERE match_id = $1 FOR UPDATE";

int cc_roster_lock(struct cc_pg *pg, const char *match_id, char **manifest, char key_id[CC_ROSTER_KEY_ID_BUF])
{
	if (!cc_uuid_valid(match_id) || !manifest)
		return CC_EINVAL;
	const char *p[] = { match_id };
	PGresult *res = NULL;
	int rc = cc_pg_exec(pg, sql_lock, 1, p, &res);
	if (rc == 0 && PQntuples(res) != 1)
		rc = CC_ENOTFOUND;
	if (rc == 0 && !(*manifest = strdup(PQgetvalue(res, 0, 0))))
		rc = CC_ENOMEM;
	if (rc == 0)
		snprintf(key_id, CC_ROSTER_KEY_ID_BUF, "%s", PQgetvalue(res, 0, 1));
	PQclear(res);
	return rc;
}

/* The vacated assignment replaced, the newcomer's inserted, the roster rewritten: one statement. */
static const char sql_backfill_seat[] =
	"WITH old AS (UPDATE assignments SET replaced_at = now() WHERE match_id = $1 AND slot = $3::smallint "
	"  AND player_id = $2 AND generation = $4::int AND replaced_at IS NULL RETURNING match_id), "
	"ins AS (INSERT INTO assignments (match_id, player_id, slot, team, generation, join_token, expires_at) "
	"  SELECT old.match_id, $5, $3::smallint, $6::smallint, $7::int, $8, to_timestamp($9::bigint) FROM old RETURNING 1), "
	"r AS (UPDATE rosters SET digest = $10, manifest = $11::jsonb FROM old WHERE rosters.match_id = old.match_id "
	"  RETURNING 1) "
	"SELECT (SELECT count(*) FROM ins), (SELECT count(*) FROM r)";

int cc_roster_backfill_seat(struct cc_pg *pg, const char *match_id, const char *old_player_id, int old_generation,
			    const struct cc_roster_seat *s, const char *digest, const char *manifest_json)
{
	if (!cc_uuid_valid(match_id) || !cc_uuid_valid(old_player_id) || !s || !cc_uuid_valid(s->player_id) ||
	    s->generation != old_generation + 1 || !plain_text(s->join_token) || !digest ||
	    strlen(digest) != CC_SHA256_HEX_LEN || !manifest_json)
		return CC_EINVAL;
	char slot[8], og[16], team[4], gen[16], exp[24];
	snprintf(slot, sizeof slot, "%d", s->slot);
	snprintf(og, sizeof og, "%d", old_generation);
	snprintf(team, sizeof team, "%d", s->team);
	snprintf(gen, sizeof gen, "%d", s->generation);
	snprintf(exp, sizeof exp, "%lld", (long long)s->expires_unix);
	const char *p[] = { match_id, old_player_id, slot, og, s->player_id, team, gen, s->join_token, exp, digest,
			    manifest_json };
	PGresult *res = NULL;
	int rc = cc_pg_exec(pg, sql_backfill_seat, 11, p, &res);
	if (rc == 0 && (PQntuples(res) != 1 || strcmp(PQgetvalue(res, 0, 0), "1") != 0 ||
			strcmp(PQgetvalue(res, 0, 1), "1") != 0))
		rc = CC_ESTATE;
	PQclear(res);
	return rc;
}
