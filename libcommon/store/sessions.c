/*
 * sessions.c - the sessions table's statements. See sessions.h.
 */
#include "store/sessions.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/purge.h"
#include "sys/banned.h"

/* The session, its player and whether each refusal applies, in one round trip. */
static const char sql_session[] = CC_SESSION_CHECK_SQL("$1");

static const char sql_insert_session[] =
	"INSERT INTO sessions (player_id, token_hash, expires_at) "
	"VALUES ($1, $2, now() + make_interval(secs => $3::int)) "
	"RETURNING json_build_object('session_token', $4::text, 'player_id', player_id, "
	"  'expires_at', " CC_PG_RFC3339("expires_at") ")::text";

static const char sql_revoke_all[] =
	"UPDATE sessions SET revoked_at = now() WHERE player_id = $1 AND revoked_at IS NULL";

void cc_session_check_from_row(const PGresult *res, int row, int col, struct cc_session_check *out)
{
	memset(out, 0, sizeof *out);
	snprintf(out->player_id, sizeof out->player_id, "%s", PQgetvalue(res, row, col));
	out->banned = strcmp(PQgetvalue(res, row, col + 1), "t") == 0;
	out->revoked = strcmp(PQgetvalue(res, row, col + 2), "t") == 0;
	out->expired = strcmp(PQgetvalue(res, row, col + 3), "t") == 0;
	snprintf(out->banned_until, sizeof out->banned_until, "%s", PQgetvalue(res, row, col + 4));
}

int cc_session_lookup(struct cc_pg *pg, const char *token_hash, struct cc_session_check *out)
{
	PGresult *res = NULL;
	const char *params[] = { token_hash };
	int rc = cc_pg_exec(pg, sql_session, 1, params, &res);
	if (rc != 0)
		return rc;
	if (PQntuples(res) != 1) {
		rc = CC_ENOTFOUND;
		goto out;
	}
	cc_session_check_from_row(res, 0, 0, out);
out:
	PQclear(res);
	return rc;
}

int cc_session_create(struct cc_pg *pg, const char *player_id, const char *token_hash, int64_t ttl_seconds,
		      const char *token, char **json)
{
	char ttl[24];
	snprintf(ttl, sizeof ttl, "%lld", (long long)ttl_seconds);
	const char *params[] = { player_id, token_hash, ttl, token };
	return cc_pg_exec_text(pg, sql_insert_session, 4, params, json);
}

int cc_sessions_revoke_all(struct cc_pg *pg, const char *player_id, int64_t *revoked)
{
	PGresult *res = NULL;
	const char *params[] = { player_id };
	int rc = cc_pg_exec(pg, sql_revoke_all, 1, params, &res);
	if (rc == 0 && revoked)
		*revoked = cc_pg_rows_affected(res);
	PQclear(res);
	return rc;
}

/* ---- retention -------------------------------------------------------------- */

/* Two index ranges (sessions_by_expiry, sessions_revoked_purge), as a union so each uses its index. */
static const char sql_purge_count[] =
	"SELECT count(*) FROM (SELECT id FROM sessions WHERE expires_at < now() - make_interval(secs => $1::float8) "
	"  UNION SELECT id FROM sessions WHERE revoked_at < now() - make_interval(secs => $1::float8)) d";

static const char sql_purge[] =
	"DELETE FROM sessions s USING (SELECT id FROM sessions WHERE id IN ("
	"    (SELECT id FROM sessions WHERE expires_at < now() - make_interval(secs => $1::float8) ORDER BY expires_at LIMIT $2::int) "
	"    UNION (SELECT id FROM sessions WHERE revoked_at < now() - make_interval(secs => $1::float8) ORDER BY revoked_at LIMIT $2::int)) "
	"  LIMIT $2::int FOR UPDATE SKIP LOCKED) d WHERE s.id = d.id";

int cc_sessions_purge_dead(struct cc_pg *pg, int64_t older_than_s, int limit, int64_t *n, int64_t *lag)
{
	return cc_store_purge(pg, sql_purge_count, sql_purge, older_than_s, limit, n, lag);
}

/* Which of the given token hashes (hex, no "\x") no longer admit their bearer, and why. */
static const char sql_sessions_ended[] =
	"SELECT h.i - 1, CASE WHEN s.token_hash IS NULL OR s.revoked_at IS NOT NULL "
	"                      OR coalesce(p.banned_until > now(), false) THEN 1 ELSE 2 END "
	"FROM unnest($1::text[]) WITH ORDINALITY AS h(hex, i) "
	"LEFT JOIN sessions s ON s.token_hash = decode(h.hex, 'hex') "
	"LEFT JOIN players p ON p.id = s.player_id "
	"WHERE s.token_hash IS NULL OR s.revoked_at IS NOT NULL OR coalesce(p.banned_until > now(), false) "
	"   OR s.expires_at <= now()";

int cc_sessions_ended(struct cc_pg *pg, const char *const *token_hashes, size_t n, uint8_t *verdict)
{
	if (!pg || (n && (!token_hashes || !verdict)) || n > CC_SESSIONS_CHECK_MAX)
		return CC_EINVAL;
	memset(verdict, 0, n);
	if (n == 0)
		return 0;
	size_t cap = 3 + n * 66;
	char *arr = malloc(cap), *w = arr;
	if (!arr)
		return CC_ENOMEM;
	*w++ = '{';
	for (size_t i = 0; i < n; i++) {
		const char *h = token_hashes[i];
		if (strncmp(h, "\\x", 2) != 0 || strlen(h) != 66 || strspn(h + 2, "0123456789abcdef") != 64) {
			free(arr);
			return CC_EINVAL;
		}
		if (i)
			*w++ = ',';
		memcpy(w, h + 2, 64);
		w += 64;
	}
	*w++ = '}';
	*w = '\0';
	PGresult *res = NULL;
	const char *params[] = { arr };
	int rc = cc_pg_exec(pg, sql_sessions_ended, 1, params, &res);
	free(arr);
	if (rc != 0)
		return rc;
	for (int r = 0; r < PQntuples(res); r++) {
		long i = strtol(PQgetvalue(res, r, 0), NULL, 10);
		if (i >= 0 && (size_t)i < n)
			verdict[i] = (uint8_t)strtol(PQgetvalue(res, r, 1), NULL, 10);
	}
	PQclear(res);
	return 0;
}
