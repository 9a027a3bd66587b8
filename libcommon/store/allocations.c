#include "store/allocations.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys/crypto.h"
#include "sys/banned.h"

/*
 * The allocation columns every statement returns (in this order), then the
 * match's, then PostgreSQL's clock; read by allocation_from_row.
 */
#define ALLOC_COLUMNS(a)                                                                                   \
	a ".id, " a ".match_id, " a ".state, " a ".revision, " a ".provider, coalesce(" a ".server_id, ''), " \
	"coalesce(" a ".address, ''), coalesce(" a ".port, 0), coalesce(" a ".node_name, ''), "              \
	"extract(epoch FROM " a ".workload_expires_at)::bigint, " a ".attempts"
#define MATCH_COLUMNS(m) m ".playlist, " m ".region, " m ".arena, " m ".build, " m ".protocol_version"
#define NOW_COLUMN "extract(epoch FROM now())::bigint"

/*
 * The claim, one statement: new rows for ALLOCATING matches without one
 * (the matches locked SKIP LOCKED so replicas take different ones; the
 * unique match_id is the final guard), and due, unclaimed rows taken over.
 * Both CTEs see one snapshot, so a fresh row is never also taken over; the
 * final SELECT cannot see the fresh rows in the table, so each CTE returns
 * the columns itself.
 */
static const char sql_claim[] =
	"WITH fresh AS ("
	"  INSERT INTO allocations AS a (match_id, state, provider, workload_expires_at, claimed_by, claim_until) "
	"  SELECT m.id, 'REQUESTED', $1, date_trunc('second', now()) + make_interval(secs => $4::float8), $2, "
	"    now() + make_interval(secs => $3::float8 / 1000) "
	"  FROM matches m WHERE m.id IN (SELECT m2.id FROM matches m2 WHERE m2.state = 'ALLOCATING' "
	"    AND NOT EXISTS (SELECT 1 FROM allocations x WHERE x.match_id = m2.id) "
	"    ORDER BY m2.created_at LIMIT $5::int FOR NO KEY UPDATE SKIP LOCKED) "
	"  ON CONFLICT (match_id) DO NOTHING "
	"  RETURNING " ALLOC_COLUMNS("a") "), "
	"taken AS ("
	"  UPDATE allocations a SET claimed_by = $2, claim_until = now() + make_interval(secs => $3::float8 / 1000), "
	"    updated_at = now() "
	"  WHERE a.id IN (SELECT y.id FROM allocations y JOIN matches ym ON ym.id = y.match_id "
	"    WHERE y.provider = $1 AND y.state IN ('REQUESTED', 'ALLOCATED') AND y.next_attempt_at <= now() "
	"    AND (y.claim_until IS NULL OR y.claim_until < now()) AND ym.state NOT IN ('COMPLETED', 'FAILED') "
	"    AND (y.state = 'REQUESTED' OR y.provider <> 'local' OR EXISTS (SELECT 1 FROM game_servers g "
	"      WHERE g.id = y.server_id AND g.owner = $6)) "
	"    ORDER BY y.next_attempt_at LIMIT $5::int FOR UPDATE OF y SKIP LOCKED) "
	"  RETURNING " ALLOC_COLUMNS("a") ") "
	"SELECT c.*, " MATCH_COLUMNS("m") ", " NOW_COLUMN " "
	"FROM (SELECT * FROM fresh UNION ALL SELECT * FROM taken) c JOIN matches m ON m.id = c.match_id";

/*
 * The endpoint, written once, by the replica that holds the claim, and its
 * outbox row in the same statement (the SQL constructor store/outbox.h
 * wraps; one round trip less per allocation).
 */
static const char sql_set_allocated[] =
	"WITH a AS (UPDATE allocations SET state = 'ALLOCATED', server_id = $3, address = $4, port = $5::int, "
	"  node_name = nullif($6, ''), revision = revision + 1, failure_reason = NULL, updated_at = now() "
	"  WHERE id = $1 AND state = 'REQUESTED' AND claimed_by = $2 "
	"  RETURNING *) "
	"SELECT " ALLOC_COLUMNS("a") ", " MATCH_COLUMNS("m") ", " NOW_COLUMN ", "
	"  cc_outbox_append('allocation.allocated', 'allocation', a.id, a.revision, '{}'::uuid[], NULL::jsonb) "
	"FROM a JOIN matches m ON m.id = a.match_id";

/* Any number of rows in one statement: ids and delays are arrays of one length. */
static const char sql_defer[] =
	"UPDATE allocations a SET claimed_by = NULL, claim_until = NULL, "
	"  next_attempt_at = now() + make_interval(secs => u.delay_ms / 1000), "
	"  attempts = a.attempts + CASE WHEN $4::bool THEN 1 ELSE 0 END, "
	"  failure_reason = coalesce($5, a.failure_reason), updated_at = now() "
	"FROM unnest($1::uuid[], $3::float8[]) AS u(id, delay_ms) "
	"WHERE a.id = u.id AND a.claimed_by = $2 AND a.state IN ('REQUESTED', 'ALLOCATED') RETURNING a.id";

static const char sql_lock[] =
	"SELECT " ALLOC_COLUMNS("a") ", " MATCH_COLUMNS("m") ", " NOW_COLUMN " "
	"FROM allocations a JOIN matches m ON m.id = a.match_id WHERE a.id = $1 FOR UPDATE OF a";

static const char sql_live_local[] =
	"SELECT " ALLOC_COLUMNS("a") ", " MATCH_COLUMNS("m") ", " NOW_COLUMN " "
	"FROM game_servers g JOIN allocations a ON a.id = g.allocation_id JOIN matches m ON m.id = a.match_id "
	"WHERE g.provider = 'local' AND g.owner = $1 AND g.state = 'ALLOCATED' AND a.state IN ('ALLOCATED', 'PUBLISHED') "
	"ORDER BY g.port LIMIT $2::int";

/* PUBLISHED and its outbox row (every player of the match) in one statement. */
static const char sql_set_published[] =
	"WITH a AS (UPDATE allocations SET state = 'PUBLISHED', revision = revision + 1, claimed_by = NULL, "
	"  claim_until = NULL, updated_at = now() WHERE id = $1 AND state = 'ALLOCATED' RETURNING *) "
	"SELECT " ALLOC_COLUMNS("a") ", " MATCH_COLUMNS("m") ", " NOW_COLUMN ", "
	"  cc_outbox_append('allocation.published', 'allocation', a.id, a.revision, "
	"    ARRAY(SELECT p.player_id FROM match_players p WHERE p.match_id = a.match_id ORDER BY p.team, p.player_id), "
	"    jsonb_build_object('match_id', a.match_id, 'server_id', a.server_id)) "
	"FROM a JOIN matches m ON m.id = a.match_id";

/*
 * A batch's allocation by the local provider, one statement (see
 * cc_allocations_allocate_local): "mine" locks the claimed rows (FOR
 * UPDATE re-checks state and claim on the newest version), "idle" locks as
 * many IDLE servers (SKIP LOCKED: a racing batch takes others), and
 * row_number() pairs them in the batch's order and port order. The unique
 * index allocations_one_live_per_server and the transition triggers stay
 * the final guards. The last column is how many claimed rows were still
 * this replica's; the outbox row is written per ALLOCATED allocation.
 */
static const char sql_allocate_local[] =
	"WITH mine AS MATERIALIZED (SELECT a.id, u.ord FROM unnest($3::uuid[]) WITH ORDINALITY AS u(id, ord) "
	"  JOIN allocations a ON a.id = u.id WHERE a.state = 'REQUESTED' AND a.claimed_by = $2 FOR UPDATE OF a), "
	"idle AS MATERIALIZED (SELECT g.id, g.address, g.port FROM game_servers g "
	"  WHERE g.provider = 'local' AND g.owner = $1 AND g.state = 'IDLE' ORDER BY g.port "
	"  LIMIT (SELECT count(*) FROM mine) FOR UPDATE SKIP LOCKED), "
	"pair AS MATERIALIZED (SELECT w.id AS alloc_id, s.id AS server_id, s.address, s.port "
	"  FROM (SELECT id, row_number() OVER (ORDER BY ord) AS rn FROM mine) w "
	"  JOIN (SELECT id, address, port, row_number() OVER (ORDER BY port) AS rn FROM idle) s ON s.rn = w.rn), "
	"g AS (UPDATE game_servers g SET state = 'ALLOCATED', allocation_id = p.alloc_id, revision = g.revision + 1, "
	"  updated_at = now() FROM pair p WHERE g.id = p.server_id AND g.state = 'IDLE' RETURNING g.id), "
	"a AS (UPDATE allocations x SET state = 'ALLOCATED', server_id = p.server_id, address = p.address, "
	"  port = p.port, node_name = NULL, revision = x.revision + 1, failure_reason = NULL, updated_at = now() "
	"  FROM pair p WHERE x.id = p.alloc_id AND x.state = 'REQUESTED' RETURNING x.*) "
	"SELECT " ALLOC_COLUMNS("a") ", " MATCH_COLUMNS("m") ", " NOW_COLUMN ", "
	"  cc_outbox_append('allocation.allocated', 'allocation', a.id, a.revision, '{}'::uuid[], NULL::jsonb), "
	"  (SELECT count(*) FROM mine), (SELECT count(*) FROM g) "
	"FROM a JOIN matches m ON m.id = a.match_id";

/* The roster transaction's lock of a batch, in id order (one lock order for every batch). */
static const char sql_lock_many[] =
	"SELECT " ALLOC_COLUMNS("a") ", " MATCH_COLUMNS("m") ", " NOW_COLUMN " "
	"FROM allocations a JOIN matches m ON m.id = a.match_id WHERE a.id = ANY($1::uuid[]) "
	"ORDER BY a.id FOR UPDATE OF a";

/*
 * A match called off before any server was found (store/match_settle.h):
 * its REQUESTED row -> FAILED with the reason, the claim cleared (a replica
 * still asking a provider loses it: cc_allocation_set_allocated and the
 * local batch both re-check REQUESTED under the row lock), and its outbox
 * row in the same statement.
 */
static const char sql_fail_requested[] =
	"WITH a AS (UPDATE allocations SET state = 'FAILED', failure_reason = $2, revision = revision + 1, "
	"  claimed_by = NULL, claim_until = NULL, updated_at = now() "
	"  WHERE match_id = $1 AND state = 'REQUESTED' RETURNING *) "
	"SELECT " ALLOC_COLUMNS("a") ", " MATCH_COLUMNS("m") ", " NOW_COLUMN ", "
	"  cc_outbox_append('allocation.failed', 'allocation', a.id, a.revision, '{}'::uuid[], "
	"    jsonb_build_object('match_id', a.match_id, 'reason', a.failure_reason)) "
	"FROM a JOIN matches m ON m.id = a.match_id";

/*
 * A match called off before any allocator replica claimed it: a FAILED
 * row is its tombstone (inserted REQUESTED, the only legal first state,
 * then failed), so no replica can ever give it a server. ON CONFLICT DO
 * NOTHING is also the probe for a replica's row our snapshot cannot see:
 * under SERIALIZABLE a conflict with an invisible row is a serialization
 * failure, and the retry sees the row (and fails it by its state).
 */
static const char sql_tombstone[] =
	"INSERT INTO allocations (match_id, state, provider, workload_expires_at, failure_reason) "
	"VALUES ($1, 'REQUESTED', $2, now(), $3) ON CONFLICT (match_id) DO NOTHING RETURNING id";

#define NCOLUMNS 17

/* Fills *out from row i of res (ALLOC_COLUMNS, MATCH_COLUMNS, NOW_COLUMN). */
static void allocation_from_row(const PGresult *res, int i, struct cc_allocation *out)
{
	memset(out, 0, sizeof *out);
	snprintf(out->id, sizeof out->id, "%s", PQgetvalue(res, i, 0));
	snprintf(out->match_id, sizeof out->match_id, "%s", PQgetvalue(res, i, 1));
	snprintf(out->state, sizeof out->state, "%s", PQgetvalue(res, i, 2));
	out->revision = strtoll(PQgetvalue(res, i, 3), NULL, 10);
	snprintf(out->provider, sizeof out->provider, "%s", PQgetvalue(res, i, 4));
	snprintf(out->server_id, sizeof out->server_id, "%s", PQgetvalue(res, i, 5));
	snprintf(out->address, sizeof out->address, "%s", PQgetvalue(res, i, 6));
	out->port = (int)strtol(PQgetvalue(res, i, 7), NULL, 10);
	snprintf(out->node_name, sizeof out->node_name, "%s", PQgetvalue(res, i, 8));
	out->workload_expires_unix = strtoll(PQgetvalue(res, i, 9), NULL, 10);
	out->attempts = (int)strtol(PQgetvalue(res, i, 10), NULL, 10);
	snprintf(out->playlist, sizeof out->playlist, "%s", PQgetvalue(res, i, 11));
	snprintf(out->region, sizeof out->region, "%s", PQgetvalue(res, i, 12));
	snprintf(out->arena, sizeof out->arena, "%s", PQgetvalue(res, i, 13));
	snprintf(out->build, sizeof out->build, "%s", PQgetvalue(res, i, 14));
	out->protocol_version = (int32_t)strtol(PQgetvalue(res, i, 15), NULL, 10);
	out->now_unix = strtoll(PQgetvalue(res, i, 16), NULL, 10);
}

/* Runs sql expecting one row (NCOLUMNS) into *out; no row is none. */
static int one_allocation(struct cc_pg *pg, const char *sql, int n, const char *const *p, int none,
			  struct cc_allocation *out)
{
	PGresult *res = NULL;
	int rc = cc_pg_exec(pg, sql, n, p, &res);
	if (rc == 0 && PQntuples(res) != 1)
		rc = none;
	if (rc == 0 && PQnfields(res) < NCOLUMNS)
		CC_BUG("allocation statement returned the wrong columns");
	if (rc == 0)
		allocation_from_row(res, 0, out);
	PQclear(res);
	return rc;
}

int cc_allocations_claim(struct cc_pg *pg, const struct cc_allocation_claim *req, struct cc_allocation *out,
			 size_t cap, size_t *n)
{
	char lease[24], ttl[24], limit[16];
	PGresult *res = NULL;

	if (!req || !req->provider || !req->replica || !req->replica[0] ||
	    strlen(req->replica) >= CC_ALLOCATION_OWNER_BUF || req->lease_ms < 1 || req->workload_ttl_s < 1 ||
	    req->limit < 1 || req->limit > 1000 || cap < 2 * (size_t)req->limit)
		return CC_EINVAL;
	snprintf(lease, sizeof lease, "%lld", (long long)req->lease_ms);
	snprintf(ttl, sizeof ttl, "%lld", (long long)req->workload_ttl_s);
	snprintf(limit, sizeof limit, "%d", req->limit);
	const char *p[] = { req->provider, req->replica, lease, ttl, limit, req->owner ? req->owner : "" };
	int rc = cc_pg_exec(pg, sql_claim, 6, p, &res);
	if (rc != 0)
		goto out;
	if (PQnfields(res) != NCOLUMNS)
		CC_BUG("claim returned the wrong columns");
	size_t rows = (size_t)PQntuples(res);
	for (size_t i = 0; i < rows && i < cap; i++)
		allocation_from_row(res, (int)i, &out[i]);
	*n = rows < cap ? rows : cap;
out:
	PQclear(res);
	return rc;
}

int cc_allocation_set_allocated(struct cc_pg *pg, const char *id, const char *replica,
				const struct cc_game_server *s, const char *node_name,
				struct cc_allocation *out)
{
	char port[16];
	if (!cc_uuid_valid(id) || !replica || !s || !cc_game_server_id_valid(s->id) || !s->address[0] ||
	    s->port < 1 || s->port > 65535)
		return CC_EINVAL;
	snprintf(port, sizeof port, "%d", s->port);
	const char *p[] = { id, replica, s->id, s->address, port, node_name ? node_name : "" };
	return one_allocation(pg, sql_set_allocated, 6, p, CC_ECONFLICT, out);
}

int cc_allocations_defer(struct cc_pg *pg, const char *replica, const char *const *ids, const int64_t *delay_ms,
			 size_t n, bool count_attempt, const char *reason, size_t *deferred)
{
	char why[CC_ALLOCATION_REASON_MAX + 1];
	char *id_arr = NULL, *delay_arr = NULL;
	PGresult *res = NULL;
	int rc = CC_ENOMEM;
	if (!replica || n == 0 || n > 4096)
		return CC_EINVAL;
	id_arr = malloc(n * (CC_UUID_BUF + 1) + 3);
	delay_arr = malloc(n * 24 + 3);
	if (!id_arr || !delay_arr)
		goto out;
	size_t ui = 0, ud = 0;
	id_arr[ui++] = '{';
	delay_arr[ud++] = '{';
	for (size_t i = 0; i < n; i++) {
		if (!cc_uuid_valid(ids[i]) || delay_ms[i] < 0) {
			rc = CC_EINVAL;
			goto out;
		}
		ui += (size_t)snprintf(id_arr + ui, CC_UUID_BUF + 2, "%s%s", i ? "," : "", ids[i]);
		ud += (size_t)snprintf(delay_arr + ud, 24, "%s%lld", i ? "," : "", (long long)delay_ms[i]);
	}
	id_arr[ui++] = '}';
	id_arr[ui] = '\0';
	delay_arr[ud++] = '}';
	delay_arr[ud] = '\0';
	if (reason)
		snprintf(why, sizeof why, "%s", reason);
	const char *p[] = { id_arr, replica, delay_arr, count_attempt ? "true" : "false", reason ? why : NULL };
	rc = cc_pg_exec(pg, sql_defer, 5, p, &res);
	if (rc == 0 && deferred)
		*deferred = (size_t)PQntuples(res);
out:
	PQclear(res);
	free(id_arr);
	free(delay_arr);
	return rc;
}

int cc_allocation_lock(struct cc_pg *pg, const char *id, struct cc_allocation *out)
{
	if (!cc_uuid_valid(id))
		return CC_EINVAL;
	const char *p[] = { id };
	return one_allocation(pg, sql_lock, 1, p, CC_ENOTFOUND, out);
}

int cc_allocations_live_local(struct cc_pg *pg, const char *owner, struct cc_allocation *out, size_t cap,
			      size_t *n)
{
	char limit[24];
	PGresult *res = NULL;
	if (!owner || !out || cap == 0)
		return CC_EINVAL;
	snprintf(limit, sizeof limit, "%zu", cap);
	const char *p[] = { owner, limit };
	int rc = cc_pg_exec(pg, sql_live_local, 2, p, &res);
	if (rc == 0) {
		if (PQnfields(res) != NCOLUMNS)
			CC_BUG("live allocations returned the wrong columns");
		size_t rows = (size_t)PQntuples(res);
		for (size_t i = 0; i < rows && i < cap; i++)
			allocation_from_row(res, (int)i, &out[i]);
		*n = rows < cap ? rows : cap;
	}
	PQclear(res);
	return rc;
}

int cc_allocation_set_published(struct cc_pg *pg, const char *id, struct cc_allocation *out)
{
	if (!cc_uuid_valid(id))
		return CC_EINVAL;
	const char *p[] = { id };
	return one_allocation(pg, sql_set_published, 1, p, CC_ECONFLICT, out);
}

/* ids[0..n) as a PostgreSQL uuid[] literal, malloc'd; NULL when one is not a uuid or out of memory (*rc says). */
static char *uuid_array(const char *const *ids, size_t n, int *rc)
{
	char *arr = malloc(n * (CC_UUID_BUF + 1) + 3);
	size_t u = 0;
	*rc = CC_ENOMEM;
	if (!arr)
		return NULL;
	arr[u++] = '{';
	for (size_t i = 0; i < n; i++) {
		if (!cc_uuid_valid(ids[i])) {
			free(arr);
			*rc = CC_EINVAL;
			return NULL;
		}
		u += (size_t)snprintf(arr + u, CC_UUID_BUF + 2, "%s%s", i ? "," : "", ids[i]);
	}
	arr[u++] = '}';
	arr[u] = '\0';
	*rc = 0;
	return arr;
}

int cc_allocations_allocate_local(struct cc_pg *pg, const char *owner, const char *replica, const char *const *ids,
				  size_t n, struct cc_allocation *out, size_t cap, size_t *allocated, size_t *held)
{
	PGresult *res = NULL;
	int rc;
	*allocated = 0;
	*held = 0;
	if (!owner || !replica || !replica[0] || n == 0 || n > 4096 || cap < n)
		return CC_EINVAL;
	char *arr = uuid_array(ids, n, &rc);
	if (!arr)
		return rc;
	const char *p[] = { owner, replica, arr };
	rc = cc_pg_exec(pg, sql_allocate_local, 3, p, &res);
	if (rc != 0)
		goto out;
	size_t rows = (size_t)PQntuples(res);
	if (rows > 0 && PQnfields(res) != NCOLUMNS + 3)
		CC_BUG("batch allocation returned the wrong columns");
	if (rows > n)
		CC_BUG("batch allocation returned more rows than asked");
	for (size_t i = 0; i < rows; i++)
		allocation_from_row(res, (int)i, &out[i]);
	*allocated = rows;
	if (rows > 0) {
		*held = (size_t)strtoull(PQgetvalue(res, 0, NCOLUMNS + 1), NULL, 10);
		/* A paired server that was not IDLE after all: roll back rather than keep half a pair. */
		if (strtoull(PQgetvalue(res, 0, NCOLUMNS + 2), NULL, 10) != rows)
			rc = CC_ECONFLICT;
	} else {
		/* No row at all: the pool is dry or none is ours; ask which (one cheap statement). */
		PQclear(res);
		res = NULL;
		const char *q[] = { arr, replica };
		rc = cc_pg_exec(pg,
				"SELECT count(*) FROM allocations WHERE id = ANY($1::uuid[]) AND state = 'REQUESTED' "
				"AND claimed_by = $2",
				2, q, &res);
		if (rc == 0)
			*held = (size_t)strtoull(PQgetvalue(res, 0, 0), NULL, 10);
	}
out:
	PQclear(res);
	free(arr);
	return rc;
}

int cc_allocations_lock_many(struct cc_pg *pg, const char *const *ids, size_t n, struct cc_allocation *out,
			     size_t cap, size_t *rows)
{
	PGresult *res = NULL;
	int rc;
	*rows = 0;
	if (n == 0 || n > 4096 || !out)
		return CC_EINVAL;
	char *arr = uuid_array(ids, n, &rc);
	if (!arr)
		return rc;
	const char *p[] = { arr };
	rc = cc_pg_exec(pg, sql_lock_many, 1, p, &res);
	if (rc == 0) {
		if (PQnfields(res) != NCOLUMNS)
			CC_BUG("batch lock returned the wrong columns");
		size_t k = (size_t)PQntuples(res);
		for (size_t i = 0; i < k && i < cap; i++)
			allocation_from_row(res, (int)i, &out[i]);
		*rows = k < cap ? k : cap;
	}
	PQclear(res);
	free(arr);
	return rc;
}

int cc_allocation_fail_requested(struct cc_pg *pg, const char *match_id, const char *reason, bool *failed,
				 struct cc_allocation *out)
{
	struct cc_allocation tmp;
	*failed = false;
	if (!cc_uuid_valid(match_id) || !reason || !reason[0] || strlen(reason) > CC_ALLOCATION_REASON_MAX)
		return CC_EINVAL;
	const char *p[] = { match_id, reason };
	int rc = one_allocation(pg, sql_fail_requested, 2, p, CC_ENOTFOUND, out ? out : &tmp);
	if (rc == CC_ENOTFOUND)
		return 0;
	*failed = rc == 0;
	return rc;
}

int cc_allocation_fail_unclaimed(struct cc_pg *pg, const char *match_id, const char *provider, const char *reason,
				 bool *failed)
{
	PGresult *res = NULL;
	*failed = false;
	if (!cc_uuid_valid(match_id) || !provider || (strcmp(provider, "local") != 0 && strcmp(provider, "agones") != 0) ||
	    !reason || !reason[0] || strlen(reason) > CC_ALLOCATION_REASON_MAX)
		return CC_EINVAL;
	const char *p[] = { match_id, provider, reason };
	int rc = cc_pg_exec(pg, sql_tombstone, 3, p, &res);
	bool inserted = rc == 0 && PQntuples(res) == 1;
	PQclear(res);
	if (rc != 0 || !inserted)
		return rc;
	return cc_allocation_fail_requested(pg, match_id, reason, failed, NULL);
}
