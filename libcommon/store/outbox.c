#include "store/outbox.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys/charset.h"
#include "sys/crypto.h"
#include "sys/log.h"
#include "store/purge.h"
#include "sys/banned.h"

/* The one writer of an outbox row and its notification (migrations/0006_claim_function.up.sql). */
static const char sql_append[] = "SELECT cc_outbox_append($1, $2, $3::uuid, $4::bigint, $5::uuid[], $6::jsonb)";

/* name matches first-char class [a-z] then up to max-1 of [a-z0-9_] (+ '.' when dots). */
static bool name_valid(const char *s, size_t max, bool dots)
{
	return cc_charset_valid(s, max, CC_CHARSET_LOWER | CC_CHARSET_DIGIT, dots ? "_." : "_") &&
	       cc_charset_has(s[0], CC_CHARSET_LOWER, NULL);
}

const char *cc_outbox_event_fault(const struct cc_outbox_event *ev)
{
	if (!ev)
		return "no envelope";
	if (!name_valid(ev->event, 64, true))
		return "event must match [a-z][a-z0-9_.]{0,63}";
	if (!name_valid(ev->resource_type, 32, false))
		return "resource_type must match [a-z][a-z0-9_]{0,31}";
	if (!ev->resource_id || !cc_uuid_valid(ev->resource_id))
		return "resource_id must be a lowercase UUID";
	if (ev->revision < 1)
		return "revision must be at least 1";
	if (ev->n_player_ids > CC_OUTBOX_MAX_PLAYERS)
		return "player_ids must be at most " CC_STRINGIFY(CC_OUTBOX_MAX_PLAYERS) " ids";
	if (ev->n_player_ids > 0 && !ev->player_ids)
		return "player_ids missing";
	for (size_t i = 0; i < ev->n_player_ids; i++)
		if (!ev->player_ids[i] || !cc_uuid_valid(ev->player_ids[i]))
			return "player_ids must be lowercase UUIDs, none of them null";
	return NULL;
}

bool cc_outbox_event_valid(const struct cc_outbox_event *ev)
{
	return cc_outbox_event_fault(ev) == NULL;
}

int cc_outbox_append(struct cc_pg *pg, const struct cc_outbox_event *ev)
{
	char players[CC_OUTBOX_MAX_PLAYERS * CC_UUID_BUF + 3];
	char revision[24];
	size_t used = 0;

	if (!cc_outbox_event_valid(ev)) {
		cc_log_error("outbox_invalid_envelope", CC_LOG_STR("event", ev ? ev->event : NULL),
			     CC_LOG_STR("resource_type", ev ? ev->resource_type : NULL));
		return CC_EINVAL;
	}
	players[used++] = '{';
	for (size_t i = 0; i < ev->n_player_ids; i++)
		used += (size_t)snprintf(players + used, sizeof players - used, "%s%s", i ? "," : "",
					 ev->player_ids[i]);
	players[used++] = '}';
	players[used] = '\0';
	snprintf(revision, sizeof revision, "%lld", (long long)ev->revision);
	const char *params[] = { ev->event, ev->resource_type, ev->resource_id, revision, players,
				 ev->payload_json };
	PGresult *res = NULL;
	int rc = cc_pg_exec(pg, sql_append, 6, params, &res);
	PQclear(res);
	return rc;
}

/* ---- retention -------------------------------------------------------------- */

static const char sql_purge_published_count[] =
	"SELECT count(*) FROM outbox WHERE published_at < now() - make_interval(secs => $1::float8)";

/*
 * Also raises outbox_purged (migration 0017) to the highest position it
 * deleted, in the same transaction: the resume floor (cc_outbox_resume_window).
 * One row per deleted row is returned, so cc_store_purge counts them.
 */
static const char sql_purge_published[] =
	"WITH gone AS (DELETE FROM outbox o USING (SELECT id FROM outbox "
	"    WHERE published_at < now() - make_interval(secs => $1::float8) "
	"    ORDER BY published_at LIMIT $2::int FOR UPDATE SKIP LOCKED) d WHERE o.id = d.id RETURNING o.position), "
	"raised AS (UPDATE outbox_purged SET position = greatest(position, (SELECT max(position) FROM gone)) "
	"  WHERE (SELECT max(position) FROM gone) > position) "
	"SELECT 1 FROM gone";

static const char sql_purge_dead_count[] =
	"SELECT count(*) FROM outbox WHERE dead_lettered_at < now() - make_interval(secs => $1::float8)";

static const char sql_purge_dead[] =
	"DELETE FROM outbox o USING (SELECT id FROM outbox WHERE dead_lettered_at < now() - make_interval(secs => $1::float8) "
	"  ORDER BY dead_lettered_at LIMIT $2::int FOR UPDATE SKIP LOCKED) d WHERE o.id = d.id";

int cc_outbox_purge_published(struct cc_pg *pg, int64_t older_than_s, int limit, int64_t *n, int64_t *lag)
{
	return cc_store_purge(pg, sql_purge_published_count, sql_purge_published, older_than_s, limit, n, lag);
}

int cc_outbox_purge_dead_letters(struct cc_pg *pg, int64_t older_than_s, int limit, int64_t *n, int64_t *lag)
{
	return cc_store_purge(pg, sql_purge_dead_count, sql_purge_dead, older_than_s, limit, n, lag);
}

/* ---- dispatch ------------------------------------------------------------ */

/*
 * The envelope and the reference of row alias d, as JSON text: the one
 * definition of what CC_OUTBOX_CHANNEL carries (contracts/outbox-events.md).
 * Names and ids are plain JSON strings; the payload is the stored object.
 */
#define ENVELOPE_NAMES(d)                                                                                   \
	"'event', " d ".event, 'resource_type', " d ".resource_type, 'resource_id', " d ".resource_id, "       \
	"'revision', " d ".revision, 'player_ids', to_json(" d ".player_ids)"
#define ENVELOPE(d)                                                                                         \
	"json_build_object('id', " d ".id, 'position', " d ".position, " ENVELOPE_NAMES(d) ", 'occurred_at', " \
	CC_PG_RFC3339(d ".occurred_at") ", 'payload', " d ".payload)::text"
#define REFERENCE(d) "json_build_object('id', " d ".id, 'position', " d ".position, 'ref', true, " ENVELOPE_NAMES(d) ")::text"

/* A row is pending while neither delivered nor dead-lettered (index outbox_pending). */
#define PENDING(o) o ".published_at IS NULL AND " o ".dead_lettered_at IS NULL"

/*
 * The heads that are due, in id order: heads is the lowest pending id of
 * every aggregate with a backlog (one pass over outbox_pending_by_resource,
 * O(pending rows)); the oldest due ones are locked, by primary key, the
 * LIMIT counting only rows locked (heads another dispatcher holds are
 * skipped, not counted, so two dispatchers split the heads instead of one
 * finding all of its picks taken). Materialized, so the plan is the same whatever
 * the statistics say (a planner free to fold the head test into a join
 * rescanned the backlog once per row, 1 s per batch at 12,000 rows).
 *
 * The head test reads the snapshot, and a head another dispatcher holds is
 * still pending in it: SKIP LOCKED skips that head, and the rows behind it
 * are not heads, so the aggregate waits for the other transaction instead
 * of being overtaken. When that transaction committed before our snapshot,
 * its row is no longer pending and the next row is the head; when it
 * commits after, our lock attempt on the row it changed fails with 40001
 * (SERIALIZABLE; READ COMMITTED would re-check the row and drop it) and
 * the batch retries. A head waiting for its retry time is still the head:
 * its aggregate waits with it.
 */
/*
 * The lock (and the publish UPDATE below) finds its rows by primary key:
 * "published_at IS NULL" alone implies no partial index's predicate, so
 * the planner cannot walk outbox_pending against a row estimate from when
 * the queue was empty (it did: 0.4 s per batch). dead_lettered_at is
 * returned instead of tested, for the same reason: under SERIALIZABLE the
 * snapshot's heads are never dead letters; under READ COMMITTED a head
 * dead-lettered by a transaction that committed while we waited for its
 * lock comes back (its newest version) and the claim drops it.
 */
static const char sql_claim[] =
	"WITH heads AS MATERIALIZED ("
	"  SELECT DISTINCT ON (resource_id) id, next_attempt_at FROM outbox WHERE " PENDING("outbox") " "
	"  ORDER BY resource_id, id), "
	"due AS MATERIALIZED ("
	"  SELECT id FROM heads WHERE next_attempt_at IS NULL OR next_attempt_at <= now()) "
	"SELECT o.id, o.attempts, o.event, o.resource_type, o.resource_id, o.revision, "
	"  cardinality(o.player_ids), array_to_string(o.player_ids[1:" CC_STRINGIFY(CC_OUTBOX_MAX_PLAYERS) " + 1], ',', ''), "
	"  o.dead_lettered_at IS NOT NULL "
	"FROM outbox o WHERE o.id = ANY (ARRAY(SELECT id FROM due)) AND o.published_at IS NULL "
	"ORDER BY o.id LIMIT $1 "
	"FOR UPDATE OF o SKIP LOCKED";

/*
 * Positions are taken under this transaction-level advisory lock, held to
 * the commit, so they grow in commit order across dispatchers (the
 * notification queue is in commit order too: PostgreSQL appends a
 * transaction's notifications under one lock at commit). It serializes
 * only the tail of a batch, which that commit lock serializes anyway.
 */
static const char sql_position_lock[] = "SELECT pg_advisory_xact_lock(7161132954061848438)"; /* "cc_evpos" */

/*
 * Marks the rows published at their positions and NOTIFYs each envelope, or
 * its reference when the envelope would not fit, in position order (a
 * volatile output is computed after ORDER BY).
 */
static const char sql_publish[] =
	"WITH d AS (UPDATE outbox o SET published_at = now(), position = nextval('outbox_position'), "
	"    next_attempt_at = NULL "
	"  WHERE o.id = ANY($1::bigint[]) AND o.published_at IS NULL "
	"  RETURNING o.id, o.position, o.event, o.resource_type, o.resource_id, o.revision, o.player_ids, "
	"    o.occurred_at, o.payload), "
	"e AS (SELECT d.id, d.position, " ENVELOPE("d") " AS envelope, " REFERENCE("d") " AS reference FROM d) "
	"SELECT e.id, octet_length(e.envelope) > " CC_STRINGIFY(CC_PG_NOTIFY_PAYLOAD_MAX) " AS as_ref, "
	"  pg_notify('" CC_OUTBOX_CHANNEL "', CASE WHEN octet_length(e.envelope) > "
	CC_STRINGIFY(CC_PG_NOTIFY_PAYLOAD_MAX) " THEN e.reference ELSE e.envelope END) "
	"FROM e ORDER BY e.position";

/* A failed delivery: counted, retried after $4 ms, dead-lettered at $3 attempts. */
static const char sql_fail[] =
	"UPDATE outbox SET attempts = attempts + 1, last_error = left($2, " CC_STRINGIFY(CC_OUTBOX_ERROR_MAX) "), "
	"  dead_lettered_at = CASE WHEN attempts + 1 >= $3::int THEN now() END, "
	"  next_attempt_at = CASE WHEN attempts + 1 >= $3::int THEN NULL "
	"    ELSE now() + make_interval(secs => $4::bigint / 1000.0) END "
	"WHERE id = $1 AND " PENDING("outbox") " "
	"RETURNING dead_lettered_at IS NOT NULL";

static const char sql_backlog[] =
	"SELECT count(*), count(*) FILTER (WHERE next_attempt_at IS NULL OR next_attempt_at <= now()) "
	"FROM outbox WHERE " PENDING("outbox");

static const char sql_dead_count[] = "SELECT count(*) FROM outbox WHERE dead_lettered_at IS NOT NULL";

static const char sql_envelope[] =
	"SELECT " ENVELOPE("d") " FROM outbox d WHERE d.id = $1 AND d.position IS NOT NULL";

/* Splits "a,b,,c" (commas; "" for a NULL element) into row->player_ids. */
static void split_players(struct cc_outbox_row *row, int64_t cardinality, const char *text)
{
	size_t cap = CC_OUTBOX_MAX_PLAYERS + 1;
	row->n_player_ids = cardinality < 0 ? 0 : (size_t)cardinality < cap ? (size_t)cardinality : cap;
	for (size_t i = 0; i < row->n_player_ids; i++) {
		const char *end = strchr(text, ',');
		size_t len = end ? (size_t)(end - text) : strlen(text);
		if (len >= CC_UUID_BUF)
			len = 0; /* longer than any UUID: invalid, keep it empty */
		memcpy(row->player_ids[i], text, len);
		row->player_ids[i][len] = '\0';
		text = end ? end + 1 : text + strlen(text);
	}
}

int cc_outbox_claim(struct cc_pg *pg, int limit, struct cc_outbox_rows *out)
{
	char lim[16];
	PGresult *res = NULL;
	struct cc_outbox_row *rows = NULL;
	int rc;

	if (!pg || !out || limit < 1 || limit > CC_OUTBOX_CLAIM_MAX)
		return CC_EINVAL;
	snprintf(lim, sizeof lim, "%d", limit);
	const char *p[] = { lim };
	if ((rc = cc_pg_exec(pg, sql_claim, 1, p, &res)) != 0)
		return rc;
	int n = PQntuples(res);
	if (n > 0 && !(rows = calloc((size_t)n, sizeof *rows))) {
		rc = CC_ENOMEM;
		goto out;
	}
	size_t kept = 0;
	for (int i = 0; i < n; i++) {
		struct cc_outbox_row *r = &rows[kept];
		int64_t cardinality = 0;
		bool dead = false;
		if (cc_pg_get_bool(res, i, 8, &dead) != 0 || dead)
			continue; /* dead-lettered while we waited for its lock (READ COMMITTED) */
		if (cc_pg_get_int64(res, i, 0, &r->id) != 0 || cc_pg_get_int64(res, i, 1, &r->attempts) != 0 ||
		    cc_pg_get_int64(res, i, 5, &r->revision) != 0)
			CC_BUG("outbox claim: id, attempts or revision is not an integer");
		if (cc_pg_get_int64(res, i, 6, &cardinality) != 0)
			cardinality = 0; /* an empty array: cardinality 0 (NULL only for a NULL array) */
		snprintf(r->event, sizeof r->event, "%s", PQgetvalue(res, i, 2));
		snprintf(r->resource_type, sizeof r->resource_type, "%s", PQgetvalue(res, i, 3));
		snprintf(r->resource_id, sizeof r->resource_id, "%s", PQgetvalue(res, i, 4));
		split_players(r, cardinality, PQgetvalue(res, i, 7));
		kept++;
	}
	out->n = kept;
	out->row = rows;
	rows = NULL;
out:
	free(rows);
	PQclear(res);
	return rc;
}

void cc_outbox_rows_release(struct cc_outbox_rows *rows)
{
	if (!rows)
		return;
	free(rows->row);
	rows->row = NULL;
	rows->n = 0;
}

void cc_outbox_row_event(const struct cc_outbox_row *row, const char *player_ptrs[CC_OUTBOX_MAX_PLAYERS + 1],
			 struct cc_outbox_event *ev)
{
	for (size_t i = 0; i < row->n_player_ids; i++)
		player_ptrs[i] = row->player_ids[i];
	*ev = (struct cc_outbox_event){
		.event = row->event,
		.resource_type = row->resource_type,
		.resource_id = row->resource_id,
		.revision = row->revision,
		.player_ids = player_ptrs,
		.n_player_ids = row->n_player_ids,
		.payload_json = NULL,
	};
}

/* Writes "{1,2,3}" for ids into a malloc'd string (*out), or returns CC_ENOMEM. */
static int id_array(const int64_t *ids, size_t n, char **out)
{
	size_t cap = 3 + n * 21, used = 0;
	char *s = malloc(cap);
	if (!s)
		return CC_ENOMEM;
	s[used++] = '{';
	for (size_t i = 0; i < n; i++)
		used += (size_t)snprintf(s + used, cap - used, "%s%" PRId64, i ? "," : "", ids[i]);
	s[used++] = '}';
	s[used] = '\0';
	*out = s;
	return 0;
}

int cc_outbox_publish(struct cc_pg *pg, const int64_t *ids, size_t n, size_t *refs)
{
	PGresult *res = NULL;
	char *array = NULL;
	size_t as_ref = 0;
	int rc;

	if (!pg || (n > 0 && !ids) || n > CC_OUTBOX_CLAIM_MAX)
		return CC_EINVAL;
	if (n == 0) {
		if (refs)
			*refs = 0;
		return 0;
	}
	if ((rc = id_array(ids, n, &array)) != 0)
		return rc;
	if ((rc = cc_pg_exec(pg, sql_position_lock, 0, NULL, NULL)) != 0)
		goto out;
	const char *p[] = { array };
	if ((rc = cc_pg_exec(pg, sql_publish, 1, p, &res)) != 0)
		goto out;
	if ((size_t)PQntuples(res) != n) {
		cc_log_error("outbox_publish_lost_rows", CC_LOG_INT("claimed", n), CC_LOG_INT("marked", PQntuples(res)));
		rc = CC_ESTATE;
		goto out;
	}
	for (int i = 0; i < PQntuples(res); i++) {
		bool big = false;
		if (cc_pg_get_bool(res, i, 1, &big) == 0 && big)
			as_ref++;
	}
	if (refs)
		*refs = as_ref;
out:
	PQclear(res);
	free(array);
	return rc;
}

int cc_outbox_fail(struct cc_pg *pg, int64_t id, const char *error, int64_t max_attempts, int64_t retry_ms,
		   bool *dead_lettered)
{
	char idt[24], maxt[24], retryt[24];
	PGresult *res = NULL;
	int rc;

	if (!pg || id < 1 || max_attempts < 1 || max_attempts > INT32_MAX || retry_ms < 0)
		return CC_EINVAL;
	snprintf(idt, sizeof idt, "%" PRId64, id);
	snprintf(maxt, sizeof maxt, "%" PRId64, max_attempts);
	snprintf(retryt, sizeof retryt, "%" PRId64, retry_ms);
	const char *p[] = { idt, error ? error : "delivery failed", maxt, retryt };
	if ((rc = cc_pg_exec(pg, sql_fail, 4, p, &res)) != 0)
		return rc;
	bool dead = false;
	if (PQntuples(res) != 1)
		rc = CC_ENOTFOUND;
	else if (cc_pg_get_bool(res, 0, 0, &dead) != 0)
		CC_BUG("outbox fail: RETURNING gave no boolean");
	else if (dead_lettered)
		*dead_lettered = dead;
	PQclear(res);
	return rc;
}

int cc_outbox_backlog_read(struct cc_pg *pg, bool count_dead, struct cc_outbox_backlog *out)
{
	PGresult *res = NULL;
	struct cc_outbox_backlog b = { .dead_lettered = -1 };
	int rc;

	if (!pg || !out)
		return CC_EINVAL;
	if ((rc = cc_pg_exec(pg, sql_backlog, 0, NULL, &res)) != 0)
		return rc;
	if (cc_pg_get_int64(res, 0, 0, &b.pending) != 0 || cc_pg_get_int64(res, 0, 1, &b.due) != 0)
		CC_BUG("outbox backlog: counts are not integers");
	PQclear(res);
	res = NULL;
	if (count_dead) {
		if ((rc = cc_pg_exec(pg, sql_dead_count, 0, NULL, &res)) != 0)
			return rc;
		if (cc_pg_get_int64(res, 0, 0, &b.dead_lettered) != 0)
			CC_BUG("outbox backlog: count is not an integer");
		PQclear(res);
	}
	*out = b;
	return 0;
}

int cc_outbox_envelope(struct cc_pg *pg, int64_t id, char **out)
{
	char idt[24];
	if (!pg || !out || id < 1)
		return CC_EINVAL;
	snprintf(idt, sizeof idt, "%" PRId64, id);
	const char *p[] = { idt };
	return cc_pg_exec_text(pg, sql_envelope, 1, p, out);
}

/* ---- the stream's resume ------------------------------------------------------ */

/*
 * The player's rows are found first (outbox_by_player, a bitmap over the
 * player's retained rows), then sorted: materialized, so the LIMIT cannot
 * tempt the planner into walking outbox_by_position through every other
 * player's rows after $2.
 */
static const char sql_since[] =
	"WITH mine AS MATERIALIZED ("
	"  SELECT d.position, " ENVELOPE("d") " AS envelope FROM outbox d "
	"  WHERE d.player_ids @> ARRAY[$1::uuid] AND d.position IS NOT NULL AND d.position > $2::bigint), "
	"page AS (SELECT position, envelope FROM mine ORDER BY position LIMIT $3::int) "
	"SELECT coalesce(json_agg(page.envelope::json ORDER BY page.position), '[]'::json)::text FROM page";

int cc_outbox_since(struct cc_pg *pg, const char *player_id, int64_t after, int limit, char **out)
{
	char aftert[24], limt[16];
	if (!pg || !out || !player_id || !cc_uuid_valid(player_id) || after < 0 || limit < 1 ||
	    limit > CC_OUTBOX_SINCE_MAX)
		return CC_EINVAL;
	snprintf(aftert, sizeof aftert, "%" PRId64, after);
	snprintf(limt, sizeof limt, "%d", limit);
	const char *p[] = { player_id, aftert, limt };
	return cc_pg_exec_text(pg, sql_since, 3, p, out);
}

static const char sql_resume_window[] =
	"SELECT (SELECT position FROM outbox_purged), "
	"  (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM outbox_position), "
	"  (SELECT coalesce(max(position), 0) FROM outbox WHERE position IS NOT NULL)"; /* outbox_by_position */

int cc_outbox_resume_window(struct cc_pg *pg, int64_t *floor_pos, int64_t *newest, int64_t *committed)
{
	PGresult *res = NULL;
	int64_t purged = 0, top = 0, seen = 0;
	int rc;

	if (!pg || !floor_pos || !newest)
		return CC_EINVAL;
	if ((rc = cc_pg_exec(pg, sql_resume_window, 0, NULL, &res)) != 0)
		return rc;
	if (cc_pg_get_int64(res, 0, 1, &top) != 0)
		CC_BUG("outbox resume window: the sequence's last value is not an integer");
	if (cc_pg_get_int64(res, 0, 0, &purged) != 0)
		CC_BUG("outbox resume window: outbox_purged has no row (migration 0017)");
	if (cc_pg_get_int64(res, 0, 2, &seen) != 0)
		CC_BUG("outbox resume window: max(position) is not an integer");
	PQclear(res);
	*floor_pos = purged;
	*newest = top;
	if (committed) /* a purged row was delivered too */
		*committed = seen > purged ? seen : purged;
	return 0;
}

/* ---- dead letters ---------------------------------------------------------- */

/* One page, newest first, plus the next page's cursor when there is more. */
static const char sql_dead_letters[] =
	"WITH page AS (SELECT id, event, resource_type, resource_id, revision, occurred_at, dead_lettered_at, "
	"    attempts, last_error, replays, cardinality(player_ids) AS player_count, "
	"    row_number() OVER (ORDER BY id DESC) AS rn "
	"  FROM outbox WHERE dead_lettered_at IS NOT NULL AND id < $1::bigint "
	"  ORDER BY id DESC LIMIT $2::int + 1) "
	"SELECT json_build_object("
	"  'dead_letters', coalesce((SELECT json_agg(json_build_object('id', p.id, 'event', p.event, "
	"      'resource_type', p.resource_type, 'resource_id', p.resource_id, 'revision', p.revision, "
	"      'occurred_at', " CC_PG_RFC3339("p.occurred_at") ", "
	"      'dead_lettered_at', " CC_PG_RFC3339("p.dead_lettered_at") ", "
	"      'attempts', p.attempts, 'last_error', p.last_error, 'replays', p.replays, "
	"      'player_count', p.player_count) ORDER BY p.id DESC) FROM page p WHERE p.rn <= $2::int), '[]'::json), "
	"  'next_before', (SELECT min(p.id) FROM page p WHERE p.rn <= $2::int "
	"                  AND EXISTS (SELECT 1 FROM page q WHERE q.rn > $2::int)))::text";

int cc_outbox_dead_letters(struct cc_pg *pg, int64_t before, int limit, char **out)
{
	char beforet[24], limt[16];
	if (!pg || !out || before < 0 || limit < 1 || limit > CC_OUTBOX_DEAD_LETTERS_MAX)
		return CC_EINVAL;
	snprintf(beforet, sizeof beforet, "%" PRId64, before > 0 ? before : INT64_MAX);
	snprintf(limt, sizeof limt, "%d", limit);
	const char *p[] = { beforet, limt };
	return cc_pg_exec_text(pg, sql_dead_letters, 2, p, out);
}

static const char sql_replay_lock[] =
	"SELECT dead_lettered_at IS NOT NULL, replays, published_at IS NOT NULL, attempts "
	"FROM outbox WHERE id = $1 FOR UPDATE";

static const char sql_replay[] =
	"UPDATE outbox SET dead_lettered_at = NULL, next_attempt_at = NULL, attempts = 0, "
	"  replays = replays + 1, replayed_at = now() "
	"WHERE id = $1 AND dead_lettered_at IS NOT NULL AND replays = $2::int";

int cc_outbox_replay(struct cc_pg *pg, int64_t id, int64_t replays, enum cc_outbox_replay *outcome, char **view)
{
	char idt[24], fencet[24];
	PGresult *res = NULL;
	bool dead = false, published = false;
	int64_t have = 0, attempts = 0;
	enum cc_outbox_replay what;
	int rc;

	if (!pg || !outcome || !view || id < 1 || replays < 0 || replays >= INT32_MAX)
		return CC_EINVAL;
	snprintf(idt, sizeof idt, "%" PRId64, id);
	snprintf(fencet, sizeof fencet, "%" PRId64, replays);
	const char *p[] = { idt, fencet };
	if ((rc = cc_pg_exec(pg, sql_replay_lock, 1, p, &res)) != 0)
		return rc;
	if (PQntuples(res) != 1)
		rc = CC_ENOTFOUND;
	else if (cc_pg_get_bool(res, 0, 0, &dead) != 0 || cc_pg_get_int64(res, 0, 1, &have) != 0 ||
		 cc_pg_get_bool(res, 0, 2, &published) != 0 || cc_pg_get_int64(res, 0, 3, &attempts) != 0)
		CC_BUG("outbox replay: unexpected column types");
	else if (!dead && have == 0)
		rc = CC_ENOTFOUND; /* never dead-lettered: no such dead letter */
	PQclear(res);
	res = NULL;
	if (rc != 0)
		return rc;
	if (have == replays && dead)
		what = CC_OUTBOX_REPLAYED;
	else if (have == replays + 1)
		what = CC_OUTBOX_ALREADY_REPLAYED;
	else if (have == replays)
		what = CC_OUTBOX_NOT_DEAD_LETTERED;
	else
		what = CC_OUTBOX_REPLAY_STALE;
	if (what == CC_OUTBOX_REPLAYED) {
		if ((rc = cc_pg_exec(pg, sql_replay, 2, p, &res)) != 0)
			return rc;
		int64_t changed = cc_pg_rows_affected(res);
		PQclear(res);
		if (changed != 1)
			CC_BUG("outbox replay: the locked dead letter did not change");
		dead = false;
		attempts = 0;
		have++;
	}
	const char *state = dead ? "dead_lettered" : published ? "published" : "pending";
	char buf[200];
	snprintf(buf, sizeof buf, "{\"id\":%" PRId64 ",\"state\":\"%s\",\"replays\":%" PRId64 ",\"attempts\":%" PRId64
		 ",\"replayed\":%s}", id, state, have, attempts, what == CC_OUTBOX_REPLAYED ? "true" : "false");
	char *copy = strdup(buf);
	if (!copy)
		return CC_ENOMEM;
	*outcome = what;
	*view = copy;
	return 0;
}
