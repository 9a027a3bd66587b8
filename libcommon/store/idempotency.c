/*
 * idempotency.c - the idempotency_keys statements. See idempotency.h.
 */
#include "store/idempotency.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/purge.h"
#include "sys/banned.h"

/* No row back: the key is taken, a replay (see idempotency.h for why an insert). */
static const char sql_claim[] =
	"INSERT INTO idempotency_keys (player_id, key, request_hash, status, response) "
	"VALUES ($1, $2, $3, 0, '') ON CONFLICT (player_id, key) DO NOTHING RETURNING 1";

static const char sql_get[] =
	"SELECT request_hash, status, response FROM idempotency_keys WHERE player_id = $1 AND key = $2";

/* Over this transaction's own placeholder, found by the same conflict check. */
static const char sql_store[] =
	"INSERT INTO idempotency_keys AS k (player_id, key, request_hash, status, response) "
	"VALUES ($1, $2, $3, $4::int, $5) ON CONFLICT (player_id, key) DO UPDATE "
	"SET status = excluded.status, response = excluded.response WHERE k.status = 0 RETURNING 1";

int cc_idempotency_claim(struct cc_pg *pg, const char *player_id, const char *key, const char *request_hash,
			 struct cc_idempotency_claim *out)
{
	PGresult *res = NULL;
	memset(out, 0, sizeof *out);
	const char *pc[] = { player_id, key, request_hash };
	int rc = cc_pg_exec(pg, sql_claim, 3, pc, &res);
	if (rc != 0)
		goto out;
	if (PQntuples(res) == 1) {
		out->claimed = true;
		goto out;
	}
	PQclear(res);
	res = NULL;
	const char *pk[] = { player_id, key };
	if ((rc = cc_pg_exec(pg, sql_get, 2, pk, &res)) != 0)
		goto out;
	if (PQntuples(res) != 1) {
		rc = CC_ENOTFOUND;
		goto out;
	}
	out->same_request = strcmp(PQgetvalue(res, 0, 0), request_hash) == 0;
	out->status = (int)strtol(PQgetvalue(res, 0, 1), NULL, 10);
	if (!(out->response = strdup(PQgetvalue(res, 0, 2))))
		rc = CC_ENOMEM;
out:
	PQclear(res);
	return rc;
}

void cc_idempotency_claim_release(struct cc_idempotency_claim *c)
{
	if (!c)
		return;
	free(c->response);
	c->response = NULL;
}

int cc_idempotency_store(struct cc_pg *pg, const char *player_id, const char *key, const char *request_hash,
			 int status, const char *response)
{
	PGresult *res = NULL;
	char st[16];
	snprintf(st, sizeof st, "%d", status);
	const char *ps[] = { player_id, key, request_hash, st, response };
	int rc = cc_pg_exec(pg, sql_store, 5, ps, &res);
	if (rc == 0 && PQntuples(res) != 1)
		rc = CC_EDB;
	PQclear(res);
	return rc;
}

/* ---- retention -------------------------------------------------------------- */

static const char sql_purge_count[] =
	"SELECT count(*) FROM idempotency_keys WHERE created_at < now() - make_interval(secs => $1::float8)";

static const char sql_purge[] =
	"DELETE FROM idempotency_keys k USING (SELECT player_id, key FROM idempotency_keys "
	"  WHERE created_at < now() - make_interval(secs => $1::float8) ORDER BY created_at LIMIT $2::int FOR UPDATE SKIP LOCKED) d "
	"WHERE k.player_id = d.player_id AND k.key = d.key";

int cc_idempotency_purge(struct cc_pg *pg, int64_t older_than_s, int limit, int64_t *n, int64_t *lag)
{
	return cc_store_purge(pg, sql_purge_count, sql_purge, older_than_s, limit, n, lag);
}
