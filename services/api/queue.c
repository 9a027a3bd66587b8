/*
 * queue.c - queue tickets (SPEC 4): create with an idempotency key,
 * read, heartbeat and cancel, each in one SERIALIZABLE transaction.
 *
 * Races are settled by the database: the partial unique index allows one
 * active ticket per player, the revision column makes heartbeats and cancels
 * compare-and-set (exactly one of several concurrent callers at a revision
 * wins; the others see the new revision on retry and get 409), and the
 * idempotency row is written in the same transaction as the ticket, so
 * concurrent replays of one key all return the one stored answer.
 *
 * Enqueue never checks-then-inserts: it inserts and lets the unique indexes
 * (idempotency key, one active ticket) report the conflict. Under
 * SERIALIZABLE a read of an index range takes a predicate lock on whole
 * btree pages, which on small tables every player shares, so "read my keys
 * and tickets, then insert" made enqueues of different players abort each
 * other; an insert's conflict check takes no such lock.
 *
 * Ticket expiry needs no sweeper to be correct: a QUEUED ticket whose
 * heartbeat deadline has passed is moved to EXPIRED by the first request
 * that touches it (cc-maintenance sweeps the rest). A request naming a
 * ticket expires that ticket, found by its primary key; enqueue expires the
 * player's overdue ticket that stands in the way of the new one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "sys/charset.h"
#include "sys/crypto.h"
#include "sys/json.h"
#include "sys/log.h"
#include "store/outbox.h"
#include "store/proposals.h"
#include "sys/banned.h"

/* The ticket JSON is API_TICKET_JSON_OBJECT (api.h), rendered as text. */
#define TICKET_JSON API_TICKET_JSON_OBJECT "::text"

/* The same for one ticket ($1) of the player ($2). */
static const char sql_expire_ticket[] =
	"UPDATE tickets SET state = 'EXPIRED', revision = revision + 1, updated_at = now() "
	"WHERE id = $1 AND player_id = $2 AND state = 'QUEUED' AND expires_at <= now() "
	"RETURNING id, revision, player_id, playlist";

/*
 * Claims the key with a placeholder (status 0, never committed: the same
 * transaction stores the answer over it or rolls back). No row back: the key
 * is taken, a replay. An insert takes no predicate lock, and the conflict
 * check reads past the snapshot, so claiming a key never conflicts with
 * other players' claims the way a check-then-insert read of the index does.
 */
static const char sql_idempotency_claim[] =
	"INSERT INTO idempotency_keys (player_id, key, request_hash, status, response) "
	"VALUES ($1, $2, $3, 0, '') ON CONFLICT (player_id, key) DO NOTHING RETURNING 1";

static const char sql_idempotency_get[] =
	"SELECT request_hash, status, response FROM idempotency_keys WHERE player_id = $1 AND key = $2";

/* Stores the answer over this transaction's own placeholder (found by the
 * same conflict check, so again without reading the index through a snapshot). */
static const char sql_idempotency_store[] =
	"INSERT INTO idempotency_keys AS k (player_id, key, request_hash, status, response) "
	"VALUES ($1, $2, $3, $4::int, $5) ON CONFLICT (player_id, key) DO UPDATE "
	"SET status = excluded.status, response = excluded.response WHERE k.status = 0 RETURNING 1";

/* The player's own row: a ban committed since api_authenticate read it. */
static const char sql_banned[] =
	"SELECT coalesce(banned_until > now(), false), " API_TS("banned_until") " FROM players WHERE id = $1";

static const char sql_cooldown[] =
	"SELECT ceil(extract(epoch FROM max(cooldown_until) - now()))::bigint "
	"FROM penalties WHERE player_id = $1 AND cooldown_until > now()";

static const char sql_active_ticket[] =
	"SELECT id, state FROM tickets "
	"WHERE player_id = $1 AND state IN ('QUEUED', 'PROPOSED', 'MATCHED', 'ASSIGNED')";

/* Fresh RTT evidence for the configured regions, as the ticket's object. */
static const char sql_rtt_evidence[] =
	"SELECT coalesce(jsonb_object_agg(region, rtt_ms), '{}'::jsonb)::text, count(*) "
	"FROM region_rtts WHERE player_id = $1 AND region = ANY($2::text[]) "
	"AND measured_at > now() - make_interval(secs => $3::int)";

/* The rating is read here, inside the enqueue transaction, never from the client. */
static const char sql_rating[] =
	"SELECT coalesce((SELECT rating FROM ratings WHERE player_id = $1 AND playlist = $2), 1500), "
	"       coalesce((SELECT deviation FROM ratings WHERE player_id = $1 AND playlist = $2), 350)";

/*
 * The new QUEUED ticket, with the one-active-ticket index as the arbiter:
 * when the player already has an active ticket, that one is expired instead
 * if it is QUEUED and overdue (the row comes back EXPIRED: announce it and
 * run this again), else nothing happens and no row comes back (the player
 * has a live active ticket). The arbiter check takes no predicate lock, so
 * enqueues of different players never read what each other write.
 */
static const char sql_insert_ticket[] =
	"INSERT INTO tickets AS t (player_id, playlist, state, build, protocol_version, rating, "
	"  deviation, predicted_rtt, expires_at) "
	"VALUES ($1, $2, 'QUEUED', $3, $4::int, $5::float8, $6::float8, $7::jsonb, "
	"  now() + make_interval(secs => $8::int)) "
	"ON CONFLICT (player_id) WHERE state IN ('QUEUED', 'PROPOSED', 'MATCHED', 'ASSIGNED') "
	"DO UPDATE SET state = 'EXPIRED', revision = t.revision + 1, updated_at = now() "
	"  WHERE t.state = 'QUEUED' AND t.expires_at <= now() "
	"RETURNING t.id, t.revision, " TICKET_JSON ", " API_INDEX_COLUMNS;

static const char sql_get_ticket[] =
	"SELECT " TICKET_JSON " FROM tickets t WHERE t.id = $1 AND t.player_id = $2";

/*
 * The heartbeat compare-and-set with the expiry folded in, so the hottest
 * request (every player, every 10 s) is one statement on the primary key:
 * a QUEUED ticket past its deadline becomes EXPIRED whatever revision was
 * sent (RETURNING state says so); otherwise a ticket still waiting at
 * revision $3 gets the next revision and a new deadline. No row: the
 * revision or the state did not match (explain_miss says which).
 */
#define OVERDUE "(t.state = 'QUEUED' AND t.expires_at <= now())"
static const char sql_heartbeat[] =
	"UPDATE tickets AS t SET state = CASE WHEN " OVERDUE " THEN 'EXPIRED' ELSE t.state END, "
	"  revision = t.revision + 1, updated_at = now(), "
	"  expires_at = CASE WHEN " OVERDUE " THEN t.expires_at "
	"    ELSE now() + make_interval(secs => $4::int) END "
	"WHERE t.id = $1 AND t.player_id = $2 "
	"  AND (" OVERDUE " OR (t.revision = $3::bigint AND t.state IN ('QUEUED', 'PROPOSED'))) "
	"RETURNING t.state, t.revision, " TICKET_JSON ", " API_INDEX_COLUMNS;
#undef OVERDUE

static const char sql_lock_ticket[] =
	"SELECT state, revision, coalesce(proposal_id::text, '') FROM tickets "
	"WHERE id = $1 AND player_id = $2 FOR UPDATE";

static const char sql_cancel_queued[] =
	"UPDATE tickets AS t SET state = 'CANCELLED', revision = t.revision + 1, updated_at = now() "
	"WHERE t.id = $1 AND t.state = 'QUEUED' RETURNING t.revision, t.playlist";

static const char sql_ticket_state[] =
	"SELECT state, revision FROM tickets WHERE id = $1 AND player_id = $2";

/* Announces in the outbox that ticket_id (of player_id) expired at revision. */
static int announce_expired(struct cc_pg *pg, const char *ticket_id, const char *revision, const char *player_id)
{
	const char *players[] = { player_id };
	struct cc_outbox_event ev = {
		.event = "ticket.expired",
		.resource_type = "ticket",
		.resource_id = ticket_id,
		.revision = strtoll(revision, NULL, 10),
		.player_ids = players,
		.n_player_ids = 1,
	};
	return cc_outbox_append(pg, &ev);
}

/*
 * Runs an expiry statement (rows: id, revision, player_id, playlist),
 * announcing each and noting it for removal from the candidate index.
 */
static int expire(struct cc_pg *pg, const char *sql, int n, const char *const *params,
		  struct api_index_changes *index)
{
	PGresult *res = NULL;
	int rc = cc_pg_exec(pg, sql, n, params, &res);
	for (int i = 0; rc == 0 && i < PQntuples(res); i++) {
		rc = announce_expired(pg, PQgetvalue(res, i, 0), PQgetvalue(res, i, 1), PQgetvalue(res, i, 2));
		api_index_note_remove(index, PQgetvalue(res, i, 3), PQgetvalue(res, i, 0));
	}
	PQclear(res);
	return rc;
}

/* Expires one ticket of the player if it is overdue. */
static int expire_ticket(struct cc_pg *pg, const char *ticket_id, const char *player_id,
			 struct api_index_changes *index)
{
	const char *p[] = { ticket_id, player_id };
	return expire(pg, sql_expire_ticket, 2, p, index);
}

/* ---- POST /v1/queue ------------------------------------------------------ */

struct create_tx {
	struct api *api;
	const char *player_id;
	const char *key;
	const char *request_hash;
	const char *playlist;
	const char *build;
	char protocol_version[24];
	struct api_answer answer;
	struct api_index_changes index; /* applied after the commit */
};

/* Refuses (403) a player banned since api_authenticate read the row. */
static int check_not_banned(struct cc_pg *pg, struct create_tx *tx)
{
	PGresult *res = NULL;
	const char *p[] = { tx->player_id };
	int rc = api_query_row(pg, sql_banned, 1, p, &res);
	if (rc == 0 && strcmp(PQgetvalue(res, 0, 0), "t") == 0) {
		api_answer_error(&tx->answer, 403, "banned", "the player is banned until %s", PQgetvalue(res, 0, 1));
		rc = CC_EFORBIDDEN;
	}
	PQclear(res);
	return rc;
}

/*
 * Claims the idempotency key; sets *claimed, or when the key was taken
 * answers the stored response (same request) or 409 (another request).
 */
static int claim_key(struct cc_pg *pg, struct create_tx *tx, bool *claimed)
{
	PGresult *res = NULL;
	const char *pc[] = { tx->player_id, tx->key, tx->request_hash };
	int rc = cc_pg_exec(pg, sql_idempotency_claim, 3, pc, &res);
	if (rc != 0)
		goto out;
	if (PQntuples(res) == 1) {
		*claimed = true;
		goto out;
	}
	*claimed = false;
	PQclear(res);
	res = NULL;
	/* Taken, and committed: a row in flight makes the claim wait, and a
	 * row committed after our snapshot fails it with 40001 (retried). */
	const char *pk[] = { tx->player_id, tx->key };
	if ((rc = api_query_row(pg, sql_idempotency_get, 2, pk, &res)) != 0)
		goto out;
	if (strcmp(PQgetvalue(res, 0, 0), tx->request_hash) != 0) {
		api_answer_error(&tx->answer, 409, "idempotency_conflict",
				 "this Idempotency-Key was used with a different request");
		rc = CC_ECONFLICT;
	} else {
		rc = api_answer_body(&tx->answer, (int)strtol(PQgetvalue(res, 0, 1), NULL, 10), PQgetvalue(res, 0, 2));
	}
out:
	PQclear(res);
	return rc;
}

/*
 * Inserts the ticket (sql_insert_ticket). An overdue QUEUED ticket in the
 * way is expired and announced, then the insert runs once more; a live
 * active ticket answers 409. On success *out is the new ticket's row.
 */
static int insert_ticket(struct cc_pg *pg, struct create_tx *tx, const char *const params[8], PGresult **out)
{
	PGresult *res = NULL;
	int rc = 0;
	for (int round = 0; round < 2; round++) {
		if ((rc = cc_pg_exec(pg, sql_insert_ticket, 8, params, &res)) != 0)
			goto out;
		if (PQntuples(res) == 0)
			break;
		if (strcmp(PQgetvalue(res, 0, 3), "QUEUED") == 0) {
			*out = res;
			return 0;
		}
		/* The overdue ticket in the way, now EXPIRED. */
		rc = announce_expired(pg, PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 1), tx->player_id);
		api_index_note_row(&tx->index, res, 0, 3);
		PQclear(res);
		res = NULL;
		if (rc != 0)
			goto out;
	}
	PQclear(res);
	res = NULL;
	/* A live active ticket. Reading it is a range read, but this
	 * transaction rolls back, so it cannot hurt anyone else's. */
	const char *pp[] = { tx->player_id };
	if ((rc = cc_pg_exec(pg, sql_active_ticket, 1, pp, &res)) != 0)
		goto out;
	if (PQntuples(res) == 0) {
		rc = CC_ESERIALIZATION; /* committed after our snapshot: the retry sees it */
		goto out;
	}
	api_answer_error(&tx->answer, 409, "active_ticket_exists", "the player already has active ticket %s (%s)",
			 PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 1));
	rc = CC_ECONFLICT;
out:
	PQclear(res);
	return rc;
}

/*
 * The enqueue. Every read here is of the player's own rows (players,
 * penalties, region_rtts, ratings); the writes go through conflict checks
 * that take no predicate locks. So concurrent enqueues of different players
 * form no read-write dependencies and never abort each other under
 * SERIALIZABLE, while a ban of the same player (which writes the players row
 * this reads and reads the tickets this writes) is serialized against it.
 */
static int create_tx_run(struct cc_pg *pg, void *arg)
{
	struct create_tx *tx = arg;
	const struct api_config *cfg = tx->api->cfg;
	PGresult *res = NULL;
	char *rtt = NULL;
	bool claimed = false;
	int rc;

	api_answer_reset(&tx->answer);
	api_index_changes_reset(&tx->index);
	if ((rc = check_not_banned(pg, tx)) != 0)
		goto out;
	if ((rc = claim_key(pg, tx, &claimed)) != 0 || !claimed)
		goto out;

	const char *pp[] = { tx->player_id };
	if ((rc = cc_pg_exec(pg, sql_cooldown, 1, pp, &res)) != 0)
		goto out;
	if (!PQgetisnull(res, 0, 0)) {
		long long wait = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
		api_answer_error(&tx->answer, 429, "cooldown", "queueing is blocked by a penalty cooldown");
		tx->answer.retry_after = wait > 0 ? (unsigned)wait : 1;
		rc = CC_ECONFLICT;
		goto out;
	}
	PQclear(res);
	res = NULL;

	char freshness[24];
	snprintf(freshness, sizeof freshness, "%lld", (long long)cfg->probe_freshness_seconds);
	const char *pr[] = { tx->player_id, tx->api->regions_pg_array, freshness };
	if ((rc = cc_pg_exec(pg, sql_rtt_evidence, 3, pr, &res)) != 0)
		goto out;
	if (strcmp(PQgetvalue(res, 0, 1), "0") == 0) {
		api_answer_error(&tx->answer, 422, "no_region_probed",
				 "probe at least one region (POST /v1/probes/{region}/challenge) before queueing");
		rc = CC_EINVAL;
		goto out;
	}
	if (!(rtt = strdup(PQgetvalue(res, 0, 0)))) {
		rc = CC_ENOMEM;
		goto out;
	}
	PQclear(res);
	res = NULL;

	const char *prt[] = { tx->player_id, tx->playlist };
	if ((rc = api_query_row(pg, sql_rating, 2, prt, &res)) != 0)
		goto out;
	char rating[40], deviation[40];
	snprintf(rating, sizeof rating, "%s", PQgetvalue(res, 0, 0));
	snprintf(deviation, sizeof deviation, "%s", PQgetvalue(res, 0, 1));
	PQclear(res);
	res = NULL;

	char ttl[24];
	snprintf(ttl, sizeof ttl, "%lld", (long long)cfg->ticket_ttl_seconds);
	const char *pi[] = { tx->player_id, tx->playlist, tx->build, tx->protocol_version,
			     rating, deviation, rtt, ttl };
	if ((rc = insert_ticket(pg, tx, pi, &res)) != 0)
		goto out;
	const char *players[] = { tx->player_id };
	struct cc_outbox_event ev = {
		.event = "ticket.queued",
		.resource_type = "ticket",
		.resource_id = PQgetvalue(res, 0, 0),
		.revision = strtoll(PQgetvalue(res, 0, 1), NULL, 10),
		.player_ids = players,
		.n_player_ids = 1,
	};
	if ((rc = cc_outbox_append(pg, &ev)) != 0)
		goto out;
	api_index_note_row(&tx->index, res, 0, 3);
	if ((rc = api_answer_body(&tx->answer, 201, PQgetvalue(res, 0, 2))) != 0)
		goto out;
	PQclear(res);
	res = NULL;

	const char *ps[] = { tx->player_id, tx->key, tx->request_hash, "201", tx->answer.body };
	/* No row: our placeholder is gone, which nothing should do to an
	 * uncommitted row; refuse to commit a ticket its key cannot replay. */
	if ((rc = cc_pg_exec(pg, sql_idempotency_store, 5, ps, &res)) == 0 && PQntuples(res) != 1)
		rc = CC_EDB;
out:
	free(rtt);
	PQclear(res);
	return rc;
}

/* An Idempotency-Key is 1-128 bytes of [A-Za-z0-9_-]. */
static bool idempotency_key_valid(const char *key)
{
	return cc_charset_valid(key, 128, CC_CHARSET_ALNUM, "_-");
}

static bool build_valid(const char *build)
{
	return cc_charset_valid(build, 64, CC_CHARSET_ALNUM, "._-");
}

int api_queue_create(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	static const char *const fields[] = { "playlist", "protocol_version", "build", NULL };
	struct api *api = ctx;
	struct cc_json_error err = { 0 };
	struct create_tx tx = { .api = api };
	struct api_player player;
	struct cc_pg *pg = NULL;
	cJSON *body = NULL;
	int64_t protocol_version;
	int rc;

	pg = api_db(api, resp);
	if (!pg)
		return 0;
	if (api_authenticate(api, pg, req, resp, &player) != 0)
		goto out;
	const char *key = cc_http_header(req, "Idempotency-Key");
	if (!idempotency_key_valid(key)) {
		cc_http_error(resp, 400, "invalid_request",
			      "an Idempotency-Key header of 1-128 characters [A-Za-z0-9_-] is required", false);
		goto out;
	}
	body = api_body_object(req, resp, fields);
	if (!body)
		goto out;
	if (cc_json_get_string(body, "playlist", true, 1, CC_PLAYLIST_NAME_MAX, &tx.playlist, &err) != 0 ||
	    cc_json_get_int(body, "protocol_version", true, 1, INT32_MAX, &protocol_version, &err) != 0 ||
	    cc_json_get_string(body, "build", true, 1, 64, &tx.build, &err) != 0) {
		api_bad_field(resp, &err);
		goto out;
	}
	if (!build_valid(tx.build)) {
		cc_http_error(resp, 400, "invalid_request", "field 'build' must be 1-64 characters [A-Za-z0-9._-]", false);
		goto out;
	}
	if (!cc_playlist_find(tx.playlist)) {
		char names[128], msg[160];
		(void)cc_playlist_names(names, sizeof names, ", ");
		snprintf(msg, sizeof msg, "playlist must be one of: %s", names);
		cc_http_error(resp, 422, "unknown_playlist", msg, false);
		goto out;
	}
	if (protocol_version < api->cfg->min_protocol_version) {
		char msg[128];
		snprintf(msg, sizeof msg, "protocol version %lld is below the minimum %lld; update the game",
			 (long long)protocol_version, (long long)api->cfg->min_protocol_version);
		cc_http_error(resp, 426, "client_outdated", msg, false);
		goto out;
	}

	/* The request's identity for replays: the canonical fields, hashed. */
	char canonical[160], request_hash[CC_SHA256_HEX_LEN + 1];
	snprintf(tx.protocol_version, sizeof tx.protocol_version, "%lld", (long long)protocol_version);
	int n = snprintf(canonical, sizeof canonical, "%s\n%s\n%s", tx.playlist, tx.protocol_version, tx.build);
	cc_sha256_hex(canonical, (size_t)n, request_hash);
	tx.player_id = player.id;
	tx.key = key;
	tx.request_hash = request_hash;
	rc = cc_pg_run_serializable(pg, create_tx_run, &tx);
	if (rc == 0 && tx.answer.status == 201)
		cc_log_info("ticket_requested", CC_LOG_STR("player_id", player.id), CC_LOG_STR("playlist", tx.playlist));
	api_respond(resp, rc, &tx.answer);
	if (rc == 0)
		api_index_apply(api, &tx.index);
out:
	cJSON_Delete(body);
	api_db_release(api, pg);
	return 0;
}

/* ---- GET /v1/queue/{ticket_id} ------------------------------------------- */

struct read_tx {
	const char *player_id;
	const char *ticket_id;
	struct api_answer answer;
	struct api_index_changes index; /* lazy expiry, applied after the commit */
};

static int read_tx_run(struct cc_pg *pg, void *arg)
{
	struct read_tx *tx = arg;
	PGresult *res = NULL;
	int rc;

	api_answer_reset(&tx->answer);
	api_index_changes_reset(&tx->index);
	if ((rc = expire_ticket(pg, tx->ticket_id, tx->player_id, &tx->index)) != 0)
		return rc;
	const char *p[] = { tx->ticket_id, tx->player_id };
	rc = api_query_row(pg, sql_get_ticket, 2, p, &res);
	if (rc == CC_ENOTFOUND) {
		api_answer_error(&tx->answer, 404, "not_found", "no such ticket");
	} else if (rc == 0) {
		rc = api_answer_body(&tx->answer, 200, PQgetvalue(res, 0, 0));
	}
	PQclear(res);
	return rc;
}

/* Reads and validates the {ticket_id} path parameter; answers 400 when bad. */
static const char *ticket_id_param(const struct cc_http_request *req, struct cc_http_response *resp)
{
	const char *id = cc_http_param(req, "ticket_id");
	if (!id || !cc_uuid_valid(id)) {
		cc_http_error(resp, 400, "invalid_request", "ticket_id must be a lowercase UUID", false);
		return NULL;
	}
	return id;
}

int api_queue_get(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	struct api *api = ctx;
	struct read_tx tx = { 0 };
	struct api_player player;
	struct cc_pg *pg = NULL;

	const char *id = ticket_id_param(req, resp);
	if (!id)
		return 0;
	pg = api_db(api, resp);
	if (!pg)
		return 0;
	if (api_authenticate(api, pg, req, resp, &player) == 0) {
		tx.player_id = player.id;
		tx.ticket_id = id;
		int rc = cc_pg_run_serializable(pg, read_tx_run, &tx);
		api_respond(resp, rc, &tx.answer);
		if (rc == 0)
			api_index_apply(api, &tx.index);
	}
	api_db_release(api, pg);
	return 0;
}

/* ---- heartbeat and cancel ------------------------------------------------ */

struct revision_tx {
	struct api *api;
	const char *player_id;
	const char *ticket_id;
	char revision[24];
	bool cancel;
	struct cc_proposal_changes changes; /* queue moves a cancel cascade made */
	struct api_answer answer;
	struct api_index_changes index;     /* applied after the commit */
};

/* Explains why a compare-and-set on the ticket matched no row. */
static int explain_miss(struct cc_pg *pg, struct revision_tx *tx)
{
	PGresult *res = NULL;
	const char *p[] = { tx->ticket_id, tx->player_id };
	int rc = cc_pg_exec(pg, sql_ticket_state, 2, p, &res);
	if (rc != 0)
		return rc;
	if (PQntuples(res) == 0) {
		api_answer_error(&tx->answer, 404, "not_found", "no such ticket");
	} else {
		const char *state = PQgetvalue(res, 0, 0);
		if (strcmp(state, "QUEUED") != 0 && strcmp(state, "PROPOSED") != 0)
			api_answer_error(&tx->answer, 409, "ticket_closed", "the ticket is %s and no longer waiting",
					 state);
		else
			api_answer_error(&tx->answer, 409, "revision_conflict",
					 "the ticket is at revision %s; re-read it and retry", PQgetvalue(res, 0, 1));
	}
	PQclear(res);
	return 0; /* commit: the expiry decided above must stick */
}

/*
 * Cancel: a QUEUED ticket is cancelled; a PROPOSED one declines its OPEN
 * proposal in the same transaction (the others are requeued at once, the
 * canceller counts as the decliner) unless the proposal's window already
 * passed, in which case it is expired first and the requeued ticket is
 * cancelled. The client's revision is checked against the ticket as read.
 */
static int cancel_run(struct cc_pg *pg, struct revision_tx *tx)
{
	PGresult *res = NULL;
	int ttl = (int)tx->api->cfg->ticket_ttl_seconds;
	char state[16], proposal_id[CC_UUID_BUF];
	const char *p[] = { tx->ticket_id, tx->player_id };
	int rc = cc_pg_exec(pg, sql_lock_ticket, 2, p, &res);
	if (rc != 0)
		goto out;
	if (PQntuples(res) == 0 || strcmp(PQgetvalue(res, 0, 1), tx->revision) != 0) {
		rc = explain_miss(pg, tx);
		goto out;
	}
	snprintf(state, sizeof state, "%s", PQgetvalue(res, 0, 0));
	snprintf(proposal_id, sizeof proposal_id, "%s", PQgetvalue(res, 0, 2));
	PQclear(res);
	res = NULL;
	if (strcmp(state, "PROPOSED") == 0 && proposal_id[0]) {
		bool expired = false;
		if ((rc = cc_proposal_expire_if_due(pg, proposal_id, ttl, &expired, &tx->changes)) != 0)
			goto out;
		if (!expired) {
			rc = cc_proposal_decline_by_cancel(pg, proposal_id, tx->player_id, ttl, &tx->changes);
			if (rc == CC_ESTATE)
				rc = CC_ESERIALIZATION; /* decided under us: retry reads the new state */
			goto view;
		}
		snprintf(state, sizeof state, "QUEUED");
	}
	if (strcmp(state, "QUEUED") != 0) {
		rc = explain_miss(pg, tx);
		goto out;
	}
	const char *pc[] = { tx->ticket_id };
	if ((rc = cc_pg_exec(pg, sql_cancel_queued, 1, pc, &res)) != 0)
		goto out;
	if (PQntuples(res) == 1) {
		const char *players[] = { tx->player_id };
		struct cc_outbox_event ev = {
			.event = "ticket.cancelled",
			.resource_type = "ticket",
			.resource_id = tx->ticket_id,
			.revision = strtoll(PQgetvalue(res, 0, 0), NULL, 10),
			.player_ids = players,
			.n_player_ids = 1,
		};
		if ((rc = cc_outbox_append(pg, &ev)) != 0)
			goto out;
		api_index_note_remove(&tx->index, PQgetvalue(res, 0, 1), tx->ticket_id);
	}
view:
	if (rc != 0)
		goto out;
	PQclear(res);
	res = NULL;
	if ((rc = api_query_row(pg, sql_get_ticket, 2, p, &res)) == 0)
		rc = api_answer_body(&tx->answer, 200, PQgetvalue(res, 0, 0));
out:
	PQclear(res);
	return rc;
}

static int revision_tx_run(struct cc_pg *pg, void *arg)
{
	struct revision_tx *tx = arg;
	PGresult *res = NULL;
	int rc;

	api_answer_reset(&tx->answer);
	memset(&tx->changes, 0, sizeof tx->changes);
	api_index_changes_reset(&tx->index);
	if (tx->cancel) {
		if ((rc = expire_ticket(pg, tx->ticket_id, tx->player_id, &tx->index)) != 0)
			return rc;
		return cancel_run(pg, tx);
	}
	char ttl[24];
	snprintf(ttl, sizeof ttl, "%lld", (long long)tx->api->cfg->ticket_ttl_seconds);
	const char *p[] = { tx->ticket_id, tx->player_id, tx->revision, ttl };
	if ((rc = cc_pg_exec(pg, sql_heartbeat, 4, p, &res)) != 0)
		goto out;
	if (PQntuples(res) == 0) {
		rc = explain_miss(pg, tx);
	} else if (strcmp(PQgetvalue(res, 0, 0), "EXPIRED") == 0) {
		/* Too late: the expiry is the change to commit and announce. */
		rc = announce_expired(pg, tx->ticket_id, PQgetvalue(res, 0, 1), tx->player_id);
		api_index_note_row(&tx->index, res, 0, 3);
		if (rc == 0)
			api_answer_error(&tx->answer, 409, "ticket_closed", "the ticket is EXPIRED and no longer waiting");
	} else {
		/* QUEUED: put with the new expiry; PROPOSED: not a candidate, make sure it is gone. */
		api_index_note_row(&tx->index, res, 0, 3);
		rc = api_answer_body(&tx->answer, 200, PQgetvalue(res, 0, 2));
	}
out:
	PQclear(res);
	return rc;
}

static int revision_route(const struct cc_http_request *req, struct cc_http_response *resp, struct api *api,
			  bool cancel)
{
	static const char *const fields[] = { "revision", NULL };
	struct revision_tx tx = { .api = api, .cancel = cancel };
	struct cc_json_error err = { 0 };
	struct api_player player;
	struct cc_pg *pg = NULL;
	cJSON *body = NULL;
	int64_t revision;

	const char *id = ticket_id_param(req, resp);
	if (!id)
		return 0;
	pg = api_db(api, resp);
	if (!pg)
		return 0;
	if (api_authenticate(api, pg, req, resp, &player) != 0)
		goto out;
	body = api_body_object(req, resp, fields);
	if (!body)
		goto out;
	if (cc_json_get_int(body, "revision", true, 1, INT64_MAX, &revision, &err) != 0) {
		api_bad_field(resp, &err);
		goto out;
	}
	tx.player_id = player.id;
	tx.ticket_id = id;
	snprintf(tx.revision, sizeof tx.revision, "%lld", (long long)revision);
	int rc = cc_pg_run_serializable(pg, revision_tx_run, &tx);
	if (rc == 0) {
		api_index_apply(api, &tx.index);
		api_index_apply_proposal(api, pg, &tx.changes);
	}
	if (rc == 0 && cancel && tx.answer.status == 200)
		cc_log_info("ticket_cancelled", CC_LOG_STR("ticket_id", id));
	api_respond(resp, rc, &tx.answer);
out:
	cJSON_Delete(body);
	api_db_release(api, pg);
	return 0;
}

int api_queue_heartbeat(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	return revision_route(req, resp, ctx, false);
}

int api_queue_cancel(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	return revision_route(req, resp, ctx, true);
}
