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
 * Whether a player may queue is game/enqueue_policy.h's verdict over facts
 * the store reads in the transaction; this file maps the verdict to HTTP.
 * Every ticket write is a store/tickets.h transition, which returns the rows
 * it changed for the answer and the candidate index.
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
#include "store/idempotency.h"
#include "store/proposals.h"
#include "store/sessions.h"
#include "sys/banned.h"

/* ---- POST /v1/queue ------------------------------------------------------ */

struct create_tx {
	struct api *api;
	const char *player_id;
	const char *key;
	const char *request_hash;
	const char *playlist;
	const char *build;
	int64_t protocol_version;
	struct api_answer answer;
	struct cc_ticket_moves moves; /* for the candidate index, applied after the commit */
};

/*
 * Claims the idempotency key; sets *claimed, or when the key was taken
 * answers the stored response (same request) or 409 (another request).
 */
static int claim_key(struct cc_pg *pg, struct create_tx *tx, bool *claimed)
{
	struct cc_idempotency_claim c;
	int rc = cc_idempotency_claim(pg, tx->player_id, tx->key, tx->request_hash, &c);
	*claimed = rc == 0 && c.claimed;
	if (rc != 0 || c.claimed)
		goto out;
	if (!c.same_request) {
		api_answer_error(&tx->answer, 409, "idempotency_conflict",
				 "this Idempotency-Key was used with a different request");
		rc = CC_ECONFLICT;
	} else {
		rc = api_answer_body(&tx->answer, c.status, c.response);
	}
out:
	cc_idempotency_claim_release(&c);
	return rc;
}

/* Answers a refusing verdict (the HTTP side of game/enqueue_policy.h); returns the rc that rolls back. */
static int refuse(struct create_tx *tx, const struct cc_enqueue_decision *d, const struct cc_enqueue_reading *r)
{
	switch (d->verdict) {
	case CC_ENQUEUE_OK:
		break;
	case CC_ENQUEUE_CLIENT_OUTDATED:
		api_answer_error(&tx->answer, 426, "client_outdated",
				 "protocol version %lld is below the minimum %lld; update the game",
				 (long long)r->facts.protocol_version, (long long)r->facts.min_protocol_version);
		return CC_EINVAL;
	case CC_ENQUEUE_BANNED:
		api_answer_error(&tx->answer, 403, "banned", "the player is banned until %s", r->banned_until);
		return CC_EFORBIDDEN;
	case CC_ENQUEUE_COOLDOWN:
		api_answer_error(&tx->answer, 429, "cooldown", "queueing is blocked by a penalty cooldown");
		tx->answer.retry_after = (unsigned)d->retry_after_seconds;
		return CC_ECONFLICT;
	case CC_ENQUEUE_NO_REGION_PROBED:
		api_answer_error(&tx->answer, 422, "no_region_probed",
				 "probe at least one region (POST /v1/probes/{region}/challenge) before queueing");
		return CC_EINVAL;
	}
	CC_BUG("refuse() called with an unknown verdict");
}

/*
 * The enqueue. Every read here is of the player's own rows (players,
 * penalties, region_rtts, ratings, in one statement); the writes go through
 * conflict checks that take no predicate locks. So concurrent enqueues of
 * different players form no read-write dependencies and never abort each
 * other under SERIALIZABLE, while a ban of the same player (which writes
 * the players row this reads and reads the tickets this writes) is
 * serialized against it. A ban (or an outdated client) refuses even a
 * replay; the other refusals judge only a request the key has not seen.
 */
static int create_tx_run(struct cc_pg *pg, void *arg)
{
	struct create_tx *tx = arg;
	const struct api_config *cfg = tx->api->cfg;
	struct cc_enqueue_reading r = { 0 };
	struct cc_ticket ticket;
	char *json = NULL;
	bool claimed = false;
	int rc;

	api_answer_reset(&tx->answer);
	cc_ticket_moves_reset(&tx->moves);
	if ((rc = cc_ticket_enqueue_facts(pg, tx->player_id, tx->playlist, tx->api->regions_pg_array,
					  cfg->probe_freshness_seconds, &r)) != 0)
		goto out;
	r.facts.protocol_version = tx->protocol_version;
	r.facts.min_protocol_version = cfg->min_protocol_version;
	struct cc_enqueue_decision d = cc_enqueue_decide(&r.facts);
	if (d.verdict != CC_ENQUEUE_OK && cc_enqueue_verdict_before_replay(d.verdict)) {
		rc = refuse(tx, &d, &r);
		goto out;
	}
	if ((rc = claim_key(pg, tx, &claimed)) != 0 || !claimed)
		goto out;
	if (d.verdict != CC_ENQUEUE_OK) {
		rc = refuse(tx, &d, &r);
		goto out;
	}

	struct cc_ticket_new n = {
		.player_id = tx->player_id,
		.playlist = tx->playlist,
		.build = tx->build,
		.protocol_version = (int32_t)tx->protocol_version,
		.rating = r.rating,
		.deviation = r.deviation,
		.predicted_rtt = r.predicted_rtt,
		.ttl_seconds = cfg->ticket_ttl_seconds,
	};
	rc = cc_ticket_enqueue(pg, &n, &ticket, &json, &tx->moves);
	if (rc == CC_ECONFLICT)
		api_answer_error(&tx->answer, 409, "active_ticket_exists", "the player already has active ticket %s (%s)",
				 ticket.id, cc_ticket_state_name(ticket.state));
	if (rc != 0)
		goto out;
	if ((rc = api_answer_body(&tx->answer, 201, json)) != 0)
		goto out;

	/* CC_EDB: our placeholder is gone, which nothing should do to an
	 * uncommitted row; refuse to commit a ticket its key cannot replay. */
	rc = cc_idempotency_store(pg, tx->player_id, tx->key, tx->request_hash, 201, tx->answer.body);
out:
	free(json);
	cc_enqueue_reading_release(&r);
	return rc;
}

/* An Idempotency-Key is 1-128 bytes of [A-Za-z0-9_-]. */
bool api_idempotency_key_valid(const char *key)
{
	return cc_charset_valid(key, 128, CC_CHARSET_ALNUM, "_-");
}

static bool build_valid(const char *build)
{
	return cc_charset_valid(build, 64, CC_CHARSET_ALNUM, "._-");
}

const char *const api_enqueue_fields[] = { "playlist", "protocol_version", "build", NULL };

int api_enqueue_read(const cJSON *body, const char **playlist, int64_t *protocol_version,
		     const char **build, struct cc_json_error *err)
{
	int rc;

	if ((rc = cc_json_get_string(body, "playlist", true, 1, CC_PLAYLIST_NAME_MAX, playlist, err)) != 0 ||
	    (rc = cc_json_get_int(body, "protocol_version", true, 1, INT32_MAX, protocol_version, err)) != 0 ||
	    (rc = cc_json_get_string(body, "build", true, 1, 64, build, err)) != 0)
		return rc;
	if (!build_valid(*build)) {
		cc_json_error_set(err, "build", "field 'build' must be 1-64 characters [A-Za-z0-9._-]");
		return CC_EINVAL;
	}
	return 0;
}

const char *const api_revision_fields[] = { "revision", NULL };

int api_revision_read(const cJSON *body, int64_t *revision, struct cc_json_error *err)
{
	return cc_json_get_int(body, "revision", true, 1, INT64_MAX, revision, err);
}

int api_queue_create(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	static const char *const *const fields = api_enqueue_fields;
	struct api *api = ctx;
	struct cc_json_error err = { 0 };
	struct create_tx tx = { .api = api };
	struct api_player player;
	struct cc_pg *pg = NULL;
	cJSON *body = NULL;
	int64_t protocol_version;
	int rc;

	if (!api_rate_address(api, API_RL_ENQUEUE, req, resp))
		return 0;
	pg = api_db(api, resp);
	if (!pg)
		return 0;
	if (api_authenticate(api, pg, req, resp, &player) != 0)
		goto out;
	if (!api_rate_player(api, API_RL_ENQUEUE, player.id, resp))
		goto out;
	const char *key = cc_http_header(req, "Idempotency-Key");
	if (!api_idempotency_key_valid(key)) {
		cc_http_error(resp, 400, "invalid_request",
			      "an Idempotency-Key header of 1-128 characters [A-Za-z0-9_-] is required", false);
		goto out;
	}
	body = api_body_object(req, resp, fields);
	if (!body)
		goto out;
	if (api_enqueue_read(body, &tx.playlist, &protocol_version, &tx.build, &err) != 0) {
		api_bad_field(resp, &err);
		goto out;
	}
	if (!cc_playlist_find(tx.playlist)) {
		char names[128], msg[160];
		(void)cc_playlist_names(names, sizeof names, ", ");
		snprintf(msg, sizeof msg, "playlist must be one of: %s", names);
		cc_http_error(resp, 422, "unknown_playlist", msg, false);
		goto out;
	}
	/* The request's identity for replays: the canonical fields, hashed. */
	char canonical[160], request_hash[CC_SHA256_HEX_LEN + 1];
	tx.protocol_version = protocol_version;
	int n = snprintf(canonical, sizeof canonical, "%s\n%lld\n%s", tx.playlist, (long long)protocol_version, tx.build);
	cc_sha256_hex(canonical, (size_t)n, request_hash);
	tx.player_id = player.id;
	tx.key = key;
	tx.request_hash = request_hash;
	rc = cc_pg_run_serializable(pg, create_tx_run, &tx);
	if (rc == 0 && tx.answer.status == 201)
		cc_log_info("ticket_requested", CC_LOG_STR("player_id", player.id), CC_LOG_STR("playlist", tx.playlist));
	if (rc == 0)
		api_answer_estimate(pg, &tx.answer);
	api_respond(resp, rc, &tx.answer);
	if (rc == 0)
		api_index_apply(api, &tx.moves);
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
	struct cc_ticket_moves moves; /* lazy expiry, applied after the commit */
};

static int read_tx_run(struct cc_pg *pg, void *arg)
{
	struct read_tx *tx = arg;
	struct cc_ticket ticket;
	char *json = NULL;
	bool expired;
	int rc;

	api_answer_reset(&tx->answer);
	cc_ticket_moves_reset(&tx->moves);
	if ((rc = cc_ticket_expire_if_overdue(pg, tx->ticket_id, tx->player_id, &expired, &tx->moves)) != 0)
		return rc;
	rc = cc_ticket_get(pg, tx->ticket_id, tx->player_id, false, &ticket, &json);
	if (rc == CC_ENOTFOUND)
		api_answer_error(&tx->answer, 404, "not_found", "no such ticket");
	else if (rc == 0)
		rc = api_answer_body(&tx->answer, 200, json);
	free(json);
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
		if (rc == 0)
			api_answer_estimate(pg, &tx.answer);
		api_respond(resp, rc, &tx.answer);
		if (rc == 0)
			api_index_apply(api, &tx.moves);
	}
	api_db_release(api, pg);
	return 0;
}

/* ---- heartbeat and cancel ------------------------------------------------ */

struct revision_tx {
	struct api *api;
	const char *player_id;
	const char *ticket_id;
	int64_t revision;
	bool cancel;
	struct api_answer answer;
	struct cc_ticket_moves moves; /* every ticket moved, cascade included: applied after the commit */
};

/*
 * Explains why a compare-and-set on the ticket matched no row, from the
 * row as it is (found false: there is none). Returns 0: the transaction
 * commits, so an expiry decided before the miss sticks.
 */
static int explain_miss(struct revision_tx *tx, bool found, const struct cc_ticket *t)
{
	if (!found)
		api_answer_error(&tx->answer, 404, "not_found", "no such ticket");
	else if (t->state != CC_TICKET_QUEUED && t->state != CC_TICKET_PROPOSED)
		api_answer_error(&tx->answer, 409, "ticket_closed", "the ticket is %s and no longer waiting",
				 cc_ticket_state_name(t->state));
	else
		api_answer_error(&tx->answer, 409, "revision_conflict",
				 "the ticket is at revision %lld; re-read it and retry", (long long)t->revision);
	return 0;
}

/*
 * Cancel: a QUEUED ticket is cancelled; a PROPOSED one declines its OPEN
 * proposal in the same transaction (the others are requeued at once, the
 * canceller counts as the decliner) unless the proposal's window already
 * passed, in which case it is expired first: a canceller who had accepted
 * is requeued and then cancelled, one who never answered ends EXPIRED
 * (409 ticket_closed) like every other non-responder. The client's revision is checked against the ticket as read.
 */
static int cancel_run(struct cc_pg *pg, struct revision_tx *tx)
{
	int ttl = (int)tx->api->cfg->ticket_ttl_seconds;
	struct cc_ticket ticket;
	char *json = NULL;
	bool cancelled = false;
	/*
	 * Lock order (store/README.md): the proposal before its tickets, as the
	 * accept path takes them. Locking the ticket first and the proposal
	 * second deadlocked against a concurrent last accept (issue 13). So: read
	 * the ticket, lock its proposal (and before it the ticket's party, which
	 * the decline changes), then lock the ticket and check it stayed in that
	 * proposal.
	 */
	int rc = cc_ticket_get(pg, tx->ticket_id, tx->player_id, false, &ticket, NULL);
	if (rc == 0 && ticket.state == CC_TICKET_PROPOSED && ticket.proposal_id[0]) {
		char held[sizeof ticket.proposal_id];
		memcpy(held, ticket.proposal_id, sizeof held);
		if ((rc = cc_proposal_lock_as_decliner(pg, held, tx->player_id)) != 0)
			return rc;
		rc = cc_ticket_get(pg, tx->ticket_id, tx->player_id, true, &ticket, NULL);
		if (rc == 0 && strcmp(ticket.proposal_id, held) != 0)
			return CC_ESERIALIZATION; /* it moved between the read and the lock: retry */
	} else if (rc == 0) {
		rc = cc_ticket_get(pg, tx->ticket_id, tx->player_id, true, &ticket, NULL);
	}
	if (rc != 0 && rc != CC_ENOTFOUND)
		return rc;
	if (rc == CC_ENOTFOUND || ticket.revision != tx->revision)
		return explain_miss(tx, rc == 0, &ticket);
	if (ticket.state == CC_TICKET_PROPOSED && ticket.proposal_id[0]) {
		bool expired = false;
		if ((rc = cc_proposal_expire_if_due(pg, ticket.proposal_id, &expired, &tx->moves)) != 0)
			return rc;
		if (!expired) {
			rc = cc_proposal_decline_by_cancel(pg, ticket.proposal_id, tx->player_id, ttl, &tx->moves);
			if (rc == CC_ESTATE)
				rc = CC_ESERIALIZATION; /* decided under us: retry reads the new state */
			if (rc != 0)
				return rc;
			/* The cascade moved this ticket among others; the answer shows it as it is now. */
			if ((rc = cc_ticket_get(pg, tx->ticket_id, tx->player_id, false, &ticket, &json)) == 0)
				rc = api_answer_body(&tx->answer, 200, json);
			free(json);
			return rc;
		}
		/* The expiry requeued it if it had accepted (cancelled below) or ended it if not (the cancel says so). */
		ticket.state = CC_TICKET_QUEUED;
	}
	if (ticket.state != CC_TICKET_QUEUED)
		return explain_miss(tx, true, &ticket);
	if ((rc = cc_ticket_cancel(pg, tx->ticket_id, tx->player_id, NULL, &cancelled, &json, &tx->moves)) != 0)
		goto out;
	if (!cancelled) {
		/* Not QUEUED after all (the expiry above ended it): say what it is. */
		if ((rc = cc_ticket_get(pg, tx->ticket_id, tx->player_id, false, &ticket, NULL)) == 0)
			rc = explain_miss(tx, true, &ticket);
		goto out;
	}
	rc = api_answer_body(&tx->answer, 200, json);
out:
	free(json);
	return rc;
}

static int revision_tx_run(struct cc_pg *pg, void *arg)
{
	struct revision_tx *tx = arg;
	struct cc_ticket ticket;
	char *json = NULL;
	bool expired;
	int rc;

	api_answer_reset(&tx->answer);
	cc_ticket_moves_reset(&tx->moves);
	if (tx->cancel) {
		if ((rc = cc_ticket_expire_if_overdue(pg, tx->ticket_id, tx->player_id, &expired, &tx->moves)) != 0)
			return rc;
		return cancel_run(pg, tx);
	}
	rc = cc_ticket_heartbeat(pg, tx->ticket_id, tx->player_id, tx->revision, tx->api->cfg->ticket_ttl_seconds,
				 &ticket, &json, &tx->moves);
	if (rc == CC_ENOTFOUND || rc == CC_ECONFLICT)
		rc = explain_miss(tx, rc == CC_ECONFLICT, &ticket);
	else if (rc == 0 && ticket.state == CC_TICKET_EXPIRED) /* too late: the expiry is the change to commit */
		api_answer_error(&tx->answer, 409, "ticket_closed", "the ticket is EXPIRED and no longer waiting");
	else if (rc == 0)
		rc = api_answer_body(&tx->answer, 200, json);
	free(json);
	return rc;
}

static int revision_route(const struct cc_http_request *req, struct cc_http_response *resp, struct api *api,
			  bool cancel)
{
	static const char *const *const fields = api_revision_fields;
	struct revision_tx tx = { .api = api, .cancel = cancel };
	struct cc_json_error err = { 0 };
	struct api_player player;
	struct cc_pg *pg = NULL;
	cJSON *body = NULL;

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
	if (api_revision_read(body, &tx.revision, &err) != 0) {
		api_bad_field(resp, &err);
		goto out;
	}
	tx.player_id = player.id;
	tx.ticket_id = id;
	int rc = cc_pg_run_serializable(pg, revision_tx_run, &tx);
	if (rc == 0)
		api_index_apply(api, &tx.moves);
	if (rc == 0 && cancel && tx.answer.status == 200)
		cc_log_info("ticket_cancelled", CC_LOG_STR("ticket_id", id));
	if (rc == 0)
		api_answer_estimate(pg, &tx.answer);
	api_respond(resp, rc, &tx.answer);
out:
	cJSON_Delete(body);
	api_db_release(api, pg);
	return 0;
}

/*
 * The heartbeat in one round trip: the session read and the compare-and-set
 * in one statement (cc_ticket_heartbeat_with_session), with the answers of
 * the transactional path, which still runs whenever the statement says so
 * (an overdue ticket, whose expiry is announced; a row changed under it)
 * and whenever the body is not a valid heartbeat (so a bad body behind a
 * bad session is answered in the same order as before: session first).
 */
int api_queue_heartbeat(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	struct api *api = ctx;
	/* Not zero-initialised whole: its moves hold CC_TICKET_MOVES_MAX tickets, reset below. */
	struct revision_tx tx;
	struct cc_json_error err = { 0 };
	enum cc_heartbeat_outcome outcome = CC_HEARTBEAT_NO_SESSION;
	struct cc_session_check session;
	struct api_player player;
	struct cc_ticket ticket;
	struct cc_pg *pg = NULL;
	cJSON *body = NULL;
	char hash[2 + 64 + 1], *json = NULL;
	int rc;

	tx.api = api;
	tx.player_id = tx.ticket_id = NULL;
	tx.cancel = false;
	tx.answer = (struct api_answer){ 0 };
	cc_ticket_moves_reset(&tx.moves);
	rc = api_body_parse(req->body, req->body_len, api_revision_fields, &body, &err);
	if (rc == 0)
		rc = api_revision_read(body, &tx.revision, &err);
	cJSON_Delete(body);
	if (rc != 0)
		return revision_route(req, resp, api, false);
	const char *id = ticket_id_param(req, resp);
	if (!id)
		return 0;
	pg = api_db(api, resp);
	if (!pg)
		return 0;
	if (!api_bearer_hash(req, resp, hash))
		goto out;
	api_answer_reset(&tx.answer);
	cc_ticket_moves_reset(&tx.moves);
	rc = cc_ticket_heartbeat_with_session(pg, hash, id, tx.revision, api->cfg->ticket_ttl_seconds, &outcome,
					      &session, &ticket, &json, &tx.moves);
	if (rc != 0 || outcome == CC_HEARTBEAT_NO_SESSION || outcome == CC_HEARTBEAT_SESSION) {
		rc = api_session_verdict(rc != 0 ? rc : outcome == CC_HEARTBEAT_NO_SESSION ? CC_ENOTFOUND : 0,
					 &session, resp, &player);
		goto out;
	}
	if (api_session_verdict(0, &session, resp, &player) != 0)
		goto out;
	tx.player_id = player.id;
	tx.ticket_id = id;
	switch (outcome) {
	case CC_HEARTBEAT_DONE:
		rc = api_answer_body(&tx.answer, 200, json);
		api_index_apply(api, &tx.moves);
		if (rc == 0)
			api_answer_estimate_shared(pg, &ticket, &tx.answer);
		break;
	case CC_HEARTBEAT_NOT_FOUND:
		rc = explain_miss(&tx, false, &ticket);
		break;
	case CC_HEARTBEAT_MISS:
		rc = explain_miss(&tx, true, &ticket);
		break;
	default: /* CC_HEARTBEAT_SLOW: the SERIALIZABLE transaction decides */
		rc = cc_pg_run_serializable(pg, revision_tx_run, &tx);
		if (rc == 0)
			api_index_apply(api, &tx.moves);
		if (rc == 0)
			api_answer_estimate(pg, &tx.answer);
		break;
	}
	api_respond(resp, rc, &tx.answer);
out:
	free(json);
	api_db_release(api, pg);
	return 0;
}

int api_queue_cancel(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	return revision_route(req, resp, ctx, true);
}
