/*
 * servers.c - the game server's routes (SPEC 8, 9) and the player's
 * assignment:
 *   POST /v1/servers/{server_id}/register    process_ready | assignment_ready
 *   GET  /v1/servers/{server_id}/roster      the published roster manifest
 *   POST /v1/servers/{server_id}/connect     claim a player's connection lease
 *   POST /v1/servers/{server_id}/disconnect  end it
 *   POST /v1/servers/{server_id}/shutdown    release the allocation
 *   POST /v1/servers/{server_id}/result      complete the match, move ratings once
 *   POST /v1/servers/{server_id}/heartbeat   the liveness signal (phase "ended": RESULT_PENDING)
 *   POST /v1/servers/{server_id}/no_show     players who never connected in the connect window
 *   GET  /v1/matches/{match_id}/assignment   (player session) endpoint + join token
 *
 * Who is calling: the workload token (game/workload_token.h) says only
 * which allocation; its signature is checked against --workload-secret-file
 * before the database is asked, then the allocations row is read in the
 * route's transaction, locked, with PostgreSQL's clock (SPEC 2): the token
 * must not have expired by that clock and must carry the expiry the row
 * recorded, and the row's server must be the path's {server_id}. The match
 * is always the row's match_id; no body names a match. So a token for
 * allocation A cannot act on server B's path (403) nor on match B's
 * players (404 not_in_roster / 422 invalid_result), and a well-signed token
 * naming an allocation that was never recorded is 401.
 *
 * Every route is idempotent for identical replays (the recorded facts
 * answer again: a step's timestamp, a lease's connection id and
 * generation, the shutdown reason, the result's request hash) and answers
 * 409 for a conflicting one; every 409 is counted in
 * cosmic_clash_api_server_conflicts_total{kind = the route}, after the
 * transaction (a retried attempt counts once).
 *
 * The SQL is store/server_routes.h (allocation columns, leases, release),
 * store/matches.h and store/tickets.h (one function per transition, each
 * with its outbox event), store/ratings.h and store/results.h (the result's
 * exactly-once guards); the result's rules are game/match_result.h and the
 * arithmetic game/glicko2.h. A match ended by policy (a no-show, the
 * shutdown of a server without a result) goes through store/match_settle.h,
 * the same functions cc-maintenance's sweeps call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "game/glicko2.h"
#include "game/join_token.h"
#include "game/playlist.h"
#include "game/match_result.h"
#include "game/workload_token.h"
#include "store/match_settle.h"
#include "store/matches.h"
#include "store/penalties.h"
#include "store/ratings.h"
#include "store/results.h"
#include "store/seasons.h"
#include "store/server_routes.h"
#include "store/backfill.h"
#include "store/tickets.h"
#include "sys/charset.h"
#include "sys/crypto.h"
#include "sys/json.h"
#include "sys/log.h"
#include "sys/banned.h"

/* The routes, as the conflict counter's kind label. */
enum server_route { R_REGISTER, R_ROSTER, R_CONNECT, R_DISCONNECT, R_SHUTDOWN, R_RESULT, R_HEARTBEAT, R_NO_SHOW, R_VACATED, R_COUNT };
static const char *const route_names[R_COUNT] = { "register", "roster", "connect", "disconnect",
						  "shutdown", "result", "heartbeat", "no_show", "vacated" };

/*
 * Why a workload token was refused, the refusal counter's reason label:
 * missing, malformed, unknown_key, bad_signature, expired,
 * unknown_allocation, stale_token, wrong_server, not_configured.
 */
#define REFUSAL_REASONS 9

int api_servers_open(struct api *api)
{
	static const char *const kind[] = { "kind", NULL };
	static const char *const reason[] = { "reason", NULL };
	char err[256] = "";
	api->server_conflicts = cc_counter("cosmic_clash_api_server_conflicts_total",
					   "409 answers of the game-server routes, by route", kind, R_COUNT);
	api->workload_refusals = cc_counter("cosmic_clash_api_workload_token_refusals_total",
					    "workload tokens refused by the game-server routes, by reason", reason,
					    REFUSAL_REASONS);
	/* Series exist from the start, so a dashboard sees 0 rather than nothing. */
	for (int i = 0; i < R_COUNT; i++)
		cc_metric_add(api->server_conflicts, (const char *const[]){ route_names[i] }, 0);
	if (api->cfg->join_keys_file) {
		size_t len = 0;
		int rc = cc_keyset_load_file(api->cfg->join_keys_file, &api->join_keys, err, sizeof err);
		if (rc != 0) {
			fprintf(stderr, "cc-api: --join-keys-file: %s\n", err);
			return rc;
		}
		if (!cc_keyset_find(api->join_keys, api->cfg->join_key_id, &len)) {
			fprintf(stderr, "cc-api: --join-key-id: no key '%.64s' in --join-keys-file\n", api->cfg->join_key_id);
			return CC_EINVAL;
		}
	}
	if (!api->cfg->workload_secret_file)
		return 0;
	int rc = cc_keyset_load_file(api->cfg->workload_secret_file, &api->workload_keys, err, sizeof err);
	if (rc != 0)
		fprintf(stderr, "cc-api: --workload-secret-file: %s\n", err);
	return rc;
}

static void refused(struct api *api, const char *reason)
{
	cc_metric_add(api->workload_refusals, (const char *const[]){ reason }, 1);
}

/* ---- the caller ------------------------------------------------------------ */

/* What every server route's transaction shares. */
struct server_tx {
	struct api *api;
	enum server_route route;
	const char *server_id;             /* from the path */
	bool pending;                      /* the allocation has no server yet: a 409 "not yet", no conflict */
	struct cc_workload_claims claims;  /* signature checked; expiry and row checked in the transaction */
	struct cc_server_allocation alloc; /* the caller's allocation, as read (and locked) */
	struct cc_match match;             /* its match, when the route read it */
	const char *refusal;               /* the workload refusal reason decided in the transaction */
	struct api_answer answer;
};

/*
 * The part of the authentication that needs no database: configuration,
 * the header, the signature (expiry is judged later by PostgreSQL's
 * clock, so the clock passed here is 0). Answers and returns false when
 * refused.
 */
static bool server_token(struct api *api, const struct cc_http_request *req, struct cc_http_response *resp,
			 struct server_tx *tx)
{
	char token[CC_WORKLOAD_TOKEN_BUF];
	enum cc_token_refusal why = CC_TOKEN_OK;
	const char *id = cc_http_param(req, "server_id");
	if (!api->workload_keys) {
		refused(api, "not_configured");
		cc_http_error_unavailable(resp, "not_configured", "the server routes need --workload-secret-file");
		return false;
	}
	if (!id || !cc_charset_valid(id, 128, CC_CHARSET_ALNUM, "._-")) {
		cc_http_error(resp, 400, "invalid_request", "server_id must be 1-128 characters [A-Za-z0-9._-]", false);
		return false;
	}
	if (!api_bearer_token(req, token, sizeof token)) {
		/* Present but unparsable (oversized, two tokens, bad characters) is not "missing". */
		bool present = cc_http_header(req, "Authorization") != NULL;
		char msg[128];
		snprintf(msg, sizeof msg, "the Authorization header is not 'Bearer <workload token>' of at most %d characters",
			 (int)CC_WORKLOAD_TOKEN_MAX);
		refused(api, present ? "malformed" : "missing");
		cc_http_error(resp, 401, "unauthorized", present ? msg : "a workload bearer token is required", false);
		return false;
	}
	if (cc_workload_token_verify(api->workload_keys, token, 0, &tx->claims, &why) != 0) {
		const char *name = cc_token_refusal_name(why);
		refused(api, why == CC_TOKEN_UNKNOWN_KEY || why == CC_TOKEN_BAD_SIGNATURE ? name : "malformed");
		char msg[96];
		snprintf(msg, sizeof msg, "the workload token was refused: %s", name);
		cc_http_error(resp, 401, "unauthorized", msg, false);
		return false;
	}
	tx->server_id = id;
	return true;
}

/*
 * Reads (and locks) the caller's allocation and judges the rest of the
 * token against it. Returns 0 with *ok; when !*ok the answer is decided
 * (401/403) and the transaction has nothing to write.
 */
static int caller_allocation(struct cc_pg *pg, struct server_tx *tx, bool *ok)
{
	*ok = false;
	tx->pending = false;
	int rc = cc_server_allocation_get(pg, tx->claims.allocation_id, true, &tx->alloc);
	if (rc == CC_ENOTFOUND) {
		tx->refusal = "unknown_allocation";
		api_answer_error(&tx->answer, 401, "unauthorized", "the workload token names no recorded allocation");
		return 0;
	}
	if (rc != 0)
		return rc;
	if (tx->alloc.now >= tx->claims.expires_at) {
		tx->refusal = "expired";
		api_answer_error(&tx->answer, 401, "unauthorized", "the workload token has expired");
	} else if (tx->alloc.workload_expires_at != tx->claims.expires_at) {
		/* Signed for this allocation, but not the token its row records (a re-issue superseded it). */
		tx->refusal = "stale_token";
		api_answer_error(&tx->answer, 401, "unauthorized", "the workload token is not its allocation's current one");
	} else if (!tx->alloc.server_id[0]) {
		/*
		 * REQUESTED: the provider has not yet said which server serves it.
		 * Agones shows a GameServer its allocation as it answers the
		 * allocator, before this row records the server, so its
		 * supervisor may ask first: "not yet" (retry), not "not yours".
		 */
		tx->pending = true;
		api_answer_error(&tx->answer, 409, "invalid_state",
				 "the allocation has no server recorded yet; retry shortly");
	} else if (strcmp(tx->alloc.server_id, tx->server_id) != 0) {
		tx->refusal = "wrong_server";
		api_answer_error(&tx->answer, 403, "forbidden", "the workload token's allocation does not serve this server");
	} else {
		*ok = true;
	}
	return 0;
}

/* Runs fn as the route's SERIALIZABLE transaction and answers; counts refusals and 409s once. */
static void server_run(struct cc_pg *pg, struct server_tx *tx, cc_pg_tx_fn fn, struct cc_http_response *resp)
{
	int rc = cc_pg_run_serializable(pg, fn, tx);
	if (rc == 0 && tx->refusal)
		refused(tx->api, tx->refusal);
	if (rc == 0 && tx->answer.status == 409 && !tx->pending)
		cc_metric_add(tx->api->server_conflicts, (const char *const[]){ route_names[tx->route] }, 1);
	if (rc != 0 && rc != CC_ERETRY_EXHAUSTED)
		cc_log_warn("server_route_failed", CC_LOG_STR("route", route_names[tx->route]),
			    CC_LOG_STR("allocation_id", tx->claims.allocation_id), CC_LOG_STR("error", cc_errname(rc)));
	api_respond(resp, rc, &tx->answer);
}

/* Sets the answer to tree (200) and frees it; CC_ENOMEM when it could not be built. */
static int answer_json(struct server_tx *tx, cJSON *tree)
{
	char *text = tree ? cc_json_print(tree) : NULL;
	int rc = text ? api_answer_body(&tx->answer, 200, text) : CC_ENOMEM;
	free(text);
	cJSON_Delete(tree);
	return rc;
}

/* Starts a route: token, database, body (fields: NULL for none). Returns the connection or NULL (answered). */
static struct cc_pg *server_begin(struct api *api, const struct cc_http_request *req, struct cc_http_response *resp,
				  struct server_tx *tx, const char *const *fields, cJSON **body)
{
	if (!server_token(api, req, resp, tx))
		return NULL;
	if (fields && !(*body = api_body_object(req, resp, fields)))
		return NULL;
	struct cc_pg *pg = api_db(api, resp);
	if (!pg) {
		cJSON_Delete(*body);
		*body = NULL;
	}
	return pg;
}

/* A [a-z_]{1,32} reason field. */
static int reason_read(const cJSON *body, const char **out, struct cc_json_error *err)
{
	int rc = cc_json_get_string(body, "reason", true, 1, 32, out, err);
	if (rc != 0)
		return rc;
	if (!cc_charset_valid(*out, 32, CC_CHARSET_LOWER, "_")) {
		cc_json_error_set(err, "reason", "field 'reason' must be 1-32 characters [a-z_]");
		return CC_EINVAL;
	}
	return 0;
}

/* A lowercase-UUID player_id field. */
static int player_read(const cJSON *body, const char **out, struct cc_json_error *err)
{
	int rc = cc_json_get_string(body, "player_id", true, 36, 36, out, err);
	if (rc != 0)
		return rc;
	if (!cc_uuid_valid(*out)) {
		cc_json_error_set(err, "player_id", "field 'player_id' must be a lowercase UUID");
		return CC_EINVAL;
	}
	return 0;
}

/* ---- the bodies' readers (api.h; pure, fuzzed by tests/fuzz/fuzz_api_bodies.c) ---- */

const char *const api_register_fields[] = { "state", "protocol_version", "image_digest", NULL };

int api_register_read(const cJSON *body, const char **state, int64_t *protocol_version, const char **image_digest,
		      struct cc_json_error *err)
{
	int rc;
	if ((rc = cc_json_get_string(body, "state", true, 1, 32, state, err)) != 0 ||
	    (rc = cc_json_get_int(body, "protocol_version", true, 1, INT32_MAX, protocol_version, err)) != 0 ||
	    (rc = cc_json_get_string(body, "image_digest", true, 1, 200, image_digest, err)) != 0)
		return rc;
	if (strcmp(*state, "process_ready") != 0 && strcmp(*state, "assignment_ready") != 0) {
		cc_json_error_set(err, "state", "field 'state' must be process_ready or assignment_ready");
		return CC_EINVAL;
	}
	if (!cc_charset_valid(*image_digest, 200, CC_CHARSET_ALNUM, "._:@/+-")) {
		cc_json_error_set(err, "image_digest", "field 'image_digest' must be 1-200 characters [A-Za-z0-9._:@/+-]");
		return CC_EINVAL;
	}
	return 0;
}

const char *const api_connect_fields[] = { "player_id", "connection_id", NULL };

int api_connect_read(const cJSON *body, const char **player_id, const char **connection_id, struct cc_json_error *err)
{
	int rc;
	if ((rc = player_read(body, player_id, err)) != 0 ||
	    (rc = cc_json_get_string(body, "connection_id", true, 1, 64, connection_id, err)) != 0)
		return rc;
	if (!cc_charset_valid(*connection_id, 64, CC_CHARSET_ALNUM, "._:-")) {
		cc_json_error_set(err, "connection_id", "field 'connection_id' must be 1-64 characters [A-Za-z0-9._:-]");
		return CC_EINVAL;
	}
	return 0;
}

const char *const api_disconnect_fields[] = { "player_id", "generation", "reason", NULL };

int api_disconnect_read(const cJSON *body, const char **player_id, int64_t *generation, const char **reason,
			struct cc_json_error *err)
{
	int rc;
	if ((rc = player_read(body, player_id, err)) != 0 ||
	    (rc = cc_json_get_int(body, "generation", true, 1, INT32_MAX, generation, err)) != 0)
		return rc;
	return reason_read(body, reason, err);
}

const char *const api_shutdown_fields[] = { "reason", NULL };

int api_shutdown_read(const cJSON *body, const char **reason, struct cc_json_error *err)
{
	return reason_read(body, reason, err);
}

const char *const api_heartbeat_fields[] = { "phase", "tick", NULL };

int api_heartbeat_read(const cJSON *body, const char **phase, int64_t *tick, struct cc_json_error *err)
{
	int rc;
	if ((rc = cc_json_get_string(body, "phase", true, 1, 16, phase, err)) != 0 ||
	    (rc = cc_json_get_int(body, "tick", true, 0, (INT64_C(1) << 53) - 1, tick, err)) != 0)
		return rc;
	if (strcmp(*phase, "loading") != 0 && strcmp(*phase, "playing") != 0 && strcmp(*phase, "ended") != 0) {
		cc_json_error_set(err, "phase", "field 'phase' must be loading, playing or ended");
		return CC_EINVAL;
	}
	return 0;
}

const char *const api_no_show_fields[] = { "player_ids", NULL };

int api_no_show_read(const cJSON *body, char (*ids)[CC_UUID_BUF], size_t *n, struct cc_json_error *err)
{
	const cJSON *arr = NULL;
	*n = 0;
	int rc = cc_json_get_array(body, "player_ids", true, API_NO_SHOW_MAX, &arr, err);
	if (rc != 0)
		return rc;
	for (const cJSON *e = arr->child; e; e = e->next) {
		const char *id = cJSON_IsString(e) ? e->valuestring : NULL;
		if (!id || strlen(id) != 36 || !cc_uuid_valid(id)) {
			cc_json_error_set(err, "player_ids", "field 'player_ids' must hold lowercase UUIDs");
			return CC_EINVAL;
		}
		for (size_t i = 0; i < *n; i++)
			if (strcmp(ids[i], id) == 0) {
				cc_json_error_set(err, "player_ids", "field 'player_ids' names %s twice", id);
				return CC_EINVAL;
			}
		memcpy(ids[(*n)++], id, CC_UUID_BUF);
	}
	if (*n == 0) {
		cc_json_error_set(err, "player_ids", "field 'player_ids' must name 1-%d players", API_NO_SHOW_MAX);
		return CC_EINVAL;
	}
	return 0;
}

/* ---- register --------------------------------------------------------------- */

struct register_tx {
	struct server_tx s;
	bool assignment_ready;   /* else process_ready */
	int32_t protocol;
	const char *image_digest;
	struct cc_ticket_moves moves; /* tickets assigned (the candidate index drops them) */
};

static int registration_answer(struct register_tx *tx)
{
	const struct cc_server_allocation *a = &tx->s.alloc;
	cJSON *o = cJSON_CreateObject();
	if (o && (!cJSON_AddStringToObject(o, "allocation_id", a->id) || !cJSON_AddStringToObject(o, "match_id", a->match_id) ||
		  !cJSON_AddStringToObject(o, "server_id", a->server_id) ||
		  !cJSON_AddStringToObject(o, "state", tx->assignment_ready ? "assignment_ready" : "process_ready") ||
		  !cJSON_AddNumberToObject(o, "protocol_version", a->server_protocol) ||
		  !cJSON_AddStringToObject(o, "image_digest", a->image_digest) ||
		  !cJSON_AddStringToObject(o, "registered_at",
					   tx->assignment_ready ? a->assignment_ready_at : a->process_ready_at))) {
		cJSON_Delete(o);
		o = NULL;
	}
	return answer_json(&tx->s, o);
}

/*
 * The decision, in this order: a step recorded before answers again (the
 * digest and protocol must be the recorded ones); a server speaking
 * another protocol than the match is 422; then the step's own
 * preconditions (allocation live, previous step done, assignments live).
 */
static int register_run(struct cc_pg *pg, void *arg)
{
	struct register_tx *tx = arg;
	struct server_tx *s = &tx->s;
	struct cc_server_allocation *a = &s->alloc;
	bool ok;
	int rc, participants = 0, live = 0;

	api_answer_reset(&s->answer);
	s->refusal = NULL;
	cc_ticket_moves_reset(&tx->moves);
	if ((rc = caller_allocation(pg, s, &ok)) != 0 || !ok)
		return rc;
	if ((rc = cc_match_get(pg, a->match_id, true, &s->match)) != 0)
		return rc;
	if (a->process_ready_at[0] && (strcmp(a->image_digest, tx->image_digest) != 0 || a->server_protocol != tx->protocol)) {
		api_answer_error(&s->answer, 409, "replay_conflict",
				 "process_ready was recorded with image %s and protocol %ld", a->image_digest,
				 (long)a->server_protocol);
		return 0;
	}
	if ((tx->assignment_ready ? a->assignment_ready_at : a->process_ready_at)[0]) {
		/*
		 * An identical replay answers again only while the match is in
		 * the state its step produced: a supervisor restarted with the
		 * old allocation file must never run a second game server for
		 * a match that is in progress or over (issue 19).
		 */
		const char *produced = tx->assignment_ready ? "ASSIGNMENT_READY" : "PROCESS_READY";
		if (strcmp(s->match.state, produced) == 0)
			return registration_answer(tx);
		api_answer_error(&s->answer, 409, "invalid_state", "the match is %s, past %s: its game server must not start again",
				 s->match.state, tx->assignment_ready ? "assignment_ready" : "process_ready");
		return 0;
	}
	if (tx->protocol != s->match.protocol_version) {
		api_answer_error(&s->answer, 422, "protocol_mismatch", "the match is protocol %ld, the server speaks %ld",
				 (long)s->match.protocol_version, (long)tx->protocol);
		return 0;
	}
	bool live_allocation = strcmp(a->state, "ALLOCATED") == 0 || strcmp(a->state, "PUBLISHED") == 0;
	if (!tx->assignment_ready) {
		if (!live_allocation || strcmp(s->match.state, "ALLOCATING") != 0) {
			api_answer_error(&s->answer, 409, "invalid_state", "the match is %s; process_ready is over", s->match.state);
			return 0;
		}
		if ((rc = cc_server_record_process_ready(pg, a, tx->protocol, tx->image_digest)) != 0 ||
		    (rc = cc_match_mark_process_ready(pg, &s->match)) != 0)
			return rc == CC_ESTATE ? CC_ESERIALIZATION : rc;
		return registration_answer(tx);
	}
	if (!a->process_ready_at[0] || !live_allocation || strcmp(s->match.state, "PROCESS_READY") != 0) {
		api_answer_error(&s->answer, 409, "invalid_state", "the match is %s; register process_ready first", s->match.state);
		return 0;
	}
	if ((rc = cc_server_assignments_live(pg, a->match_id, &participants, &live)) != 0)
		return rc;
	if (strcmp(a->state, "PUBLISHED") != 0 || live < participants || participants == 0) {
		api_answer_error(&s->answer, 409, "assignments_not_live",
				 "%d of %d participants have a live assignment (allocation %s)",
				 strcmp(a->state, "PUBLISHED") == 0 ? live : 0, participants, a->state);
		return 0;
	}
	if ((rc = cc_server_record_assignment_ready(pg, a)) != 0 || (rc = cc_match_mark_assignment_ready(pg, &s->match)) != 0 ||
	    (rc = cc_tickets_assign(pg, a->match_id, NULL, &tx->moves)) != 0)
		return rc == CC_ESTATE ? CC_ESERIALIZATION : rc;
	return registration_answer(tx);
}

int api_server_register(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	struct api *api = ctx;
	struct register_tx tx = { .s = { .api = api, .route = R_REGISTER } };
	struct cc_json_error err = { 0 };
	cJSON *body = NULL;
	const char *state;
	int64_t protocol;

	struct cc_pg *pg = server_begin(api, req, resp, &tx.s, api_register_fields, &body);
	if (!pg)
		return 0;
	if (api_register_read(body, &state, &protocol, &tx.image_digest, &err) != 0) {
		api_bad_field(resp, &err);
		goto out;
	}
	tx.assignment_ready = state[0] == 'a';
	tx.protocol = (int32_t)protocol;
	server_run(pg, &tx.s, register_run, resp);
	if (resp->status == 200) {
		api_index_apply(api, &tx.moves);
		cc_log_info("server_registered", CC_LOG_STR("server_id", tx.s.server_id),
			    CC_LOG_STR("allocation_id", tx.s.claims.allocation_id), CC_LOG_STR("state", state));
	}
out:
	cJSON_Delete(body);
	api_db_release(api, pg);
	return 0;
}

/* ---- roster ------------------------------------------------------------------ */

static int roster_run(struct cc_pg *pg, void *arg)
{
	struct server_tx *s = arg;
	char *json = NULL;
	bool ok;
	api_answer_reset(&s->answer);
	s->refusal = NULL;
	int rc = caller_allocation(pg, s, &ok);
	if (rc != 0 || !ok)
		return rc;
	if (strcmp(s->alloc.state, "RELEASED") == 0 || strcmp(s->alloc.state, "FAILED") == 0) {
		api_answer_error(&s->answer, 409, "invalid_state", "the allocation is %s", s->alloc.state);
		return 0;
	}
	rc = strcmp(s->alloc.state, "PUBLISHED") == 0 ? cc_server_roster(pg, s->alloc.id, &json) : CC_ENOTFOUND;
	if (rc == CC_ENOTFOUND) {
		api_answer_error(&s->answer, 404, "roster_not_published", "the roster of this allocation is not published yet");
		return 0;
	}
	if (rc == 0)
		rc = api_answer_body(&s->answer, 200, json);
	free(json);
	return rc;
}

int api_server_roster(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	struct api *api = ctx;
	struct server_tx tx = { .api = api, .route = R_ROSTER };
	cJSON *none = NULL;
	struct cc_pg *pg = server_begin(api, req, resp, &tx, NULL, &none);
	if (!pg)
		return 0;
	server_run(pg, &tx, roster_run, resp);
	api_db_release(api, pg);
	return 0;
}

/* ---- connect and disconnect ----------------------------------------------------- */

struct lease_tx {
	struct server_tx s;
	const char *player_id;
	const char *connection_id; /* connect */
	int32_t generation;        /* disconnect */
	const char *reason;        /* disconnect */
	struct cc_server_connection conn;
};

static int lease_answer(struct lease_tx *tx)
{
	const struct cc_server_connection *c = &tx->conn;
	cJSON *o = cJSON_CreateObject();
	if (o && (!cJSON_AddStringToObject(o, "match_id", c->match_id) || !cJSON_AddStringToObject(o, "player_id", c->player_id) ||
		  !cJSON_AddNumberToObject(o, "slot", c->slot) || !cJSON_AddNumberToObject(o, "team", c->team) ||
		  !cJSON_AddNumberToObject(o, "generation", c->generation) || !cJSON_AddBoolToObject(o, "connected", c->connected) ||
		  !cJSON_AddStringToObject(o, "connection_id", c->connection_id) ||
		  !(c->disconnect_reason[0] ? cJSON_AddStringToObject(o, "disconnect_reason", c->disconnect_reason)
					    : cJSON_AddNullToObject(o, "disconnect_reason")))) {
		cJSON_Delete(o);
		o = NULL;
	}
	return answer_json(&tx->s, o);
}

/*
 * The caller's allocation and the player's assignment in its match; 0 with
 * *ok or an answer decided. Whether the allocation must still be live is
 * the route's call, after its replay check: an identical replay answers
 * whatever happened since.
 */
static int lease_load(struct cc_pg *pg, struct lease_tx *tx, bool *ok)
{
	struct server_tx *s = &tx->s;
	int rc = caller_allocation(pg, s, ok);
	if (rc != 0 || !*ok)
		return rc;
	*ok = false;
	rc = cc_server_connection_get(pg, s->alloc.match_id, tx->player_id, true, &tx->conn);
	if (rc == CC_ENOTFOUND && strcmp(s->alloc.state, "ALLOCATED") == 0) {
		api_answer_error(&s->answer, 409, "invalid_state", "the allocation is %s: no roster is published yet",
				 s->alloc.state);
		return 0;
	}
	if (rc == CC_ENOTFOUND) {
		api_answer_error(&s->answer, 404, "not_in_roster", "player %s is not in this match", tx->player_id);
		return 0;
	}
	*ok = rc == 0;
	return rc;
}

/*
 * A connection id claims the lease once: the same id again is a replay
 * (answered with the lease as it is now, never revived); another id while
 * the player is connected is a conflict.
 */
static int connect_run(struct cc_pg *pg, void *arg)
{
	struct lease_tx *tx = arg;
	struct server_tx *s = &tx->s;
	bool ok;
	api_answer_reset(&s->answer);
	s->refusal = NULL;
	int rc = lease_load(pg, tx, &ok);
	if (rc != 0 || !ok)
		return rc;
	if (strcmp(tx->conn.connection_id, tx->connection_id) == 0)
		return lease_answer(tx);
	if (strcmp(s->alloc.state, "PUBLISHED") != 0) {
		api_answer_error(&s->answer, 409, "invalid_state", "the allocation is %s, not PUBLISHED", s->alloc.state);
		return 0;
	}
	if ((rc = cc_match_get(pg, s->alloc.match_id, true, &s->match)) != 0)
		return rc;
	if (strcmp(s->match.state, "ASSIGNMENT_READY") != 0 && strcmp(s->match.state, "IN_PROGRESS") != 0) {
		api_answer_error(&s->answer, 409, "invalid_state", "the match is %s; players connect in ASSIGNMENT_READY or IN_PROGRESS",
			 s->match.state);
		return 0;
	}
	if (tx->conn.connected) {
		api_answer_error(&s->answer, 409, "already_connected",
				 "the player is connected under another connection id (generation %ld); disconnect it first",
				 (long)tx->conn.generation);
		return 0;
	}
	if ((rc = cc_server_connect(pg, &tx->conn, tx->connection_id)) != 0)
		return rc == CC_ESTATE ? CC_ESERIALIZATION : rc;
	/* The first connection starts the match. */
	if (strcmp(s->match.state, "ASSIGNMENT_READY") == 0 && (rc = cc_match_start(pg, &s->match)) != 0)
		return rc == CC_ESTATE ? CC_ESERIALIZATION : rc;
	return lease_answer(tx);
}

/* A lease can always be ended, even after the release: a server shutting down reports its players leaving. */
static int disconnect_run(struct cc_pg *pg, void *arg)
{
	struct lease_tx *tx = arg;
	struct server_tx *s = &tx->s;
	bool ok;
	api_answer_reset(&s->answer);
	s->refusal = NULL;
	int rc = lease_load(pg, tx, &ok);
	if (rc != 0 || !ok)
		return rc;
	if (tx->generation != tx->conn.generation) {
		api_answer_error(&s->answer, 409, "stale_generation", "the lease is at generation %ld, not %ld",
				 (long)tx->conn.generation, (long)tx->generation);
		return 0;
	}
	if (!tx->conn.connected) {
		if (strcmp(tx->conn.disconnect_reason, tx->reason) == 0)
			return lease_answer(tx);
		/*
		 * The match is over, and its end closed the lease (the result
		 * "match_over", a settlement its end reason): the server's own
		 * receipt, sent after, changes nothing and is answered with the
		 * lease as the end closed it.
		 */
		if ((rc = cc_match_get(pg, s->alloc.match_id, false, &s->match)) != 0)
			return rc;
		if (cc_match_state_terminal(s->match.state))
			return lease_answer(tx);
		api_answer_error(&s->answer, 409, "replay_conflict", "this lease already ended with reason %s", tx->conn.disconnect_reason);
		return 0;
	}
	if ((rc = cc_server_disconnect(pg, &tx->conn, tx->generation, tx->reason)) != 0)
		return rc == CC_ESTATE ? CC_ESERIALIZATION : rc;
	return lease_answer(tx);
}

static int lease_route(const struct cc_http_request *req, struct cc_http_response *resp, struct api *api, bool connect)
{
	struct lease_tx tx = { .s = { .api = api, .route = connect ? R_CONNECT : R_DISCONNECT } };
	struct cc_json_error err = { 0 };
	cJSON *body = NULL;
	int64_t generation = 0;

	struct cc_pg *pg = server_begin(api, req, resp, &tx.s, connect ? api_connect_fields : api_disconnect_fields, &body);
	if (!pg)
		return 0;
	if ((connect ? api_connect_read(body, &tx.player_id, &tx.connection_id, &err)
		     : api_disconnect_read(body, &tx.player_id, &generation, &tx.reason, &err)) != 0) {
		api_bad_field(resp, &err);
		goto out;
	}
	tx.generation = (int32_t)generation;
	server_run(pg, &tx.s, connect ? connect_run : disconnect_run, resp);
	if (resp->status == 200)
		cc_log_info(connect ? "player_connected" : "player_disconnected", CC_LOG_STR("server_id", tx.s.server_id),
			    CC_LOG_STR("player_id", tx.player_id), CC_LOG_INT("generation", tx.conn.generation));
out:
	cJSON_Delete(body);
	api_db_release(api, pg);
	return 0;
}

int api_server_connect(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	return lease_route(req, resp, ctx, true);
}

int api_server_disconnect(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	return lease_route(req, resp, ctx, false);
}

/* ---- shutdown ------------------------------------------------------------------ */

struct shutdown_tx {
	struct server_tx s;
	const char *reason;
	struct cc_ticket_moves moves;
	struct cc_settle_outcome settled;
};

static int shutdown_answer(struct shutdown_tx *tx)
{
	const struct cc_server_allocation *a = &tx->s.alloc;
	cJSON *o = cJSON_CreateObject();
	if (o && (!cJSON_AddStringToObject(o, "allocation_id", a->id) || !cJSON_AddStringToObject(o, "match_id", a->match_id) ||
		  !cJSON_AddStringToObject(o, "server_id", a->server_id) || !cJSON_AddStringToObject(o, "state", a->state) ||
		  !cJSON_AddStringToObject(o, "reason", a->shutdown_reason) ||
		  !cJSON_AddStringToObject(o, "match_state", tx->s.match.state))) {
		cJSON_Delete(o);
		o = NULL;
	}
	return answer_json(&tx->s, o);
}

/*
 * Releases the allocation and frees its server (store/server_routes.h); a
 * match without a result can never get one now, so it fails with its
 * tickets (no rating moves, no penalty).
 */
static int shutdown_run(struct cc_pg *pg, void *arg)
{
	struct shutdown_tx *tx = arg;
	struct server_tx *s = &tx->s;
	bool ok;
	api_answer_reset(&s->answer);
	s->refusal = NULL;
	cc_ticket_moves_reset(&tx->moves);
	int rc = caller_allocation(pg, s, &ok);
	if (rc != 0 || !ok)
		return rc;
	if ((rc = cc_match_get(pg, s->alloc.match_id, true, &s->match)) != 0)
		return rc;
	if (strcmp(s->alloc.state, "RELEASED") == 0) {
		if (strcmp(s->alloc.shutdown_reason, tx->reason) == 0)
			return shutdown_answer(tx);
		api_answer_error(&s->answer, 409, "replay_conflict", "the allocation was released with reason %s", s->alloc.shutdown_reason);
		return 0;
	}
	if (strcmp(s->alloc.state, "ALLOCATED") != 0 && strcmp(s->alloc.state, "PUBLISHED") != 0) {
		api_answer_error(&s->answer, 409, "invalid_state", "the allocation is %s", s->alloc.state);
		return 0;
	}
	if ((rc = cc_server_release(pg, &s->alloc, tx->reason)) != 0)
		return rc == CC_ESTATE ? CC_ESERIALIZATION : rc;
	/* The same ending as a sweep that finds the server lost (store/match_settle.h). */
	if ((rc = cc_match_settle_server_lost(pg, s->match.id, "server_shutdown", s->api->cfg->ticket_ttl_seconds,
					      &tx->settled, &tx->moves)) != 0)
		return rc == CC_ESTATE ? CC_ESERIALIZATION : rc;
	snprintf(s->match.state, sizeof s->match.state, "%s", tx->settled.match_state);
	/*
	 * The settlement closed the leases of a match it ended; a match that
	 * ended before (its result: "match_over") closed its own. Whatever is
	 * still open (a lease of a match ended before migration 0016 closed
	 * them all) ends here too, named after the end.
	 */
	if ((rc = cc_server_close_connections(pg, s->match.id,
					      strcmp(s->match.state, "COMPLETED") == 0 ? "match_over" : "server_shutdown",
					      NULL)) != 0)
		return rc;
	return shutdown_answer(tx);
}

int api_server_shutdown(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	struct api *api = ctx;
	struct shutdown_tx tx = { .s = { .api = api, .route = R_SHUTDOWN } };
	struct cc_json_error err = { 0 };
	cJSON *body = NULL;
	struct cc_pg *pg = server_begin(api, req, resp, &tx.s, api_shutdown_fields, &body);
	if (!pg)
		return 0;
	if (api_shutdown_read(body, &tx.reason, &err) != 0) {
		api_bad_field(resp, &err);
		goto out;
	}
	server_run(pg, &tx.s, shutdown_run, resp);
	if (resp->status == 200) {
		api_index_apply(api, &tx.moves);
		cc_log_info("server_shutdown", CC_LOG_STR("server_id", tx.s.server_id),
			    CC_LOG_STR("allocation_id", tx.s.claims.allocation_id), CC_LOG_STR("reason", tx.reason),
			    CC_LOG_STR("match_state", tx.s.match.state));
	}
out:
	cJSON_Delete(body);
	api_db_release(api, pg);
	return 0;
}

/* ---- result ---------------------------------------------------------------------- */

struct result_tx {
	struct server_tx s;
	struct cc_match_result result;
	char hash[CC_MATCH_RESULT_HASH_BUF];
	bool recorded; /* this attempt completed the match (not a replay) */
	bool called_off; /* this attempt settled a ranked no-show instead */
	struct cc_ticket_moves moves;
	/* Who never connected (connection_generation 0): never rated, like a bot. */
	size_t n_never;
	char never[CC_FORMATION_MAX_PLAYERS][CC_UUID_BUF];
};

static int result_answer(struct cc_pg *pg, struct result_tx *tx)
{
	char *json = NULL;
	int rc = cc_result_view(pg, tx->s.alloc.match_id, &json);
	if (rc == 0)
		rc = api_answer_body(&tx->s.answer, 200, json);
	free(json);
	return rc;
}

/* True when the result marks player_id as played by a bot (issue 12). */
static bool played_by_bot(const struct cc_match_result *r, const char *player_id)
{
	for (size_t i = 0; i < r->n_players; i++)
		if (strcmp(r->players[i].player_id, player_id) == 0)
			return r->players[i].bot;
	return false;
}

/* True when player_id never connected to the match (no connect receipt was ever taken). */
static bool never_connected(const struct result_tx *tx, const char *player_id)
{
	for (size_t i = 0; i < tx->n_never; i++)
		if (strcmp(tx->never[i], player_id) == 0)
			return true;
	return false;
}

/*
 * A profile-playlist game rates from the running season's numbers: a player
 * due that season's soft reset (cc-maintenance's season sweep has not
 * reached them yet) gets it now, through the sweep's own statement and
 * guard, before the rating is locked and moved.
 */
static int season_reset_first(struct cc_pg *pg, const char *playlist, const char (*ids)[CC_UUID_BUF], size_t n)
{
	const struct cc_playlist *profile = cc_playlist_profile();
	struct cc_season season;
	if (!profile || strcmp(profile->name, playlist) != 0 || n == 0)
		return 0;
	int rc = cc_season_current(pg, &season);
	if (rc != 0 || season.season < 2)
		return rc;
	return cc_ratings_season_reset_players(pg, season.season, ids, n, NULL);
}

/*
 * Every human participant's rating in the match's playlist, moved once:
 * each player of a team against the other team as a composite opponent
 * (cc_glicko2_rate_match), before and after recorded beside the result.
 * A participant marked "bot" (a server bot drove its slot), and one who
 * never connected (an initial-connect no-show, whose slot a bot took or
 * nobody played), is never rated: no rating moves for it, no
 * rating_changes row, and it is no part of the opponents' composite. When
 * a team has no human left, nobody is rated; nor when no participant ever
 * connected (a server nobody could reach: nobody played this match).
 */
static int rate_players(struct cc_pg *pg, struct result_tx *tx)
{
	const struct cc_match *m = &tx->s.match;
	struct cc_glicko2_rating before[CC_FORMATION_MAX_PLAYERS], after[CC_FORMATION_MAX_PLAYERS];
	struct cc_glicko2_rating team[2][CC_GLICKO2_TEAM_MAX], rated[2][CC_GLICKO2_TEAM_MAX];
	char ids[CC_FORMATION_MAX_PLAYERS][CC_UUID_BUF];
	uint8_t teams[CC_FORMATION_MAX_PLAYERS];
	size_t n[2] = { 0, 0 }, at[CC_FORMATION_MAX_PLAYERS], humans = 0;
	if (tx->n_never == m->n_players) {
		cc_log_info("rating_skipped", CC_LOG_STR("match_id", m->id), CC_LOG_STR("why", "no participant ever connected"),
			    CC_LOG_INT("humans", 0));
		return 0;
	}
	for (size_t i = 0; i < m->n_players && i < CC_FORMATION_MAX_PLAYERS; i++) {
		if (played_by_bot(&tx->result, m->player_ids[i]) || never_connected(tx, m->player_ids[i]))
			continue;
		memcpy(ids[humans], m->player_ids[i], CC_UUID_BUF);
		teams[humans++] = m->teams[i];
	}
	for (size_t i = 0; i < humans; i++)
		n[teams[i]]++;
	if (n[0] == 0 || n[1] == 0) {
		cc_log_info("rating_skipped", CC_LOG_STR("match_id", m->id), CC_LOG_STR("why", "a team has no human player"),
			    CC_LOG_INT("humans", (int64_t)humans));
		return 0;
	}
	n[0] = n[1] = 0;
	int rc = season_reset_first(pg, m->playlist, (const char (*)[CC_UUID_BUF])ids, humans);
	if (rc == 0)
		rc = cc_ratings_lock(pg, m->playlist, (const char (*)[CC_UUID_BUF])ids, humans, before, NULL);
	if (rc != 0)
		return rc;
	for (size_t i = 0; i < humans; i++) {
		int t = teams[i];
		if (n[t] == CC_GLICKO2_TEAM_MAX)
			return CC_EDB;
		at[i] = n[t];
		team[t][n[t]++] = before[i];
	}
	rc = cc_glicko2_rate_match(team[0], n[0], team[1], n[1], cc_match_result_score_team0(&tx->result),
				   tx->s.api->cfg->rating_tau, rated[0], rated[1]);
	if (rc != 0) {
		cc_log_error("rating_failed", CC_LOG_STR("match_id", m->id), CC_LOG_STR("error", cc_errname(rc)));
		return rc == CC_EINVAL ? CC_EDB : rc;
	}
	for (size_t i = 0; i < humans && rc == 0; i++) {
		after[i] = rated[teams[i]][at[i]];
		if ((rc = cc_result_rating_change(pg, m->id, ids[i], m->playlist, &before[i], &after[i])) == 0)
			rc = cc_rating_record(pg, ids[i], m->playlist, m->id, &after[i]);
	}
	return rc;
}

/*
 * Exactly once: a stored result answers every later submission (equal
 * hash: the same 200; another: 409, nothing changed). Otherwise, in this
 * one transaction: the result row (the guard), the ratings, the tickets
 * COMPLETED, the match IN_PROGRESS -> RESULT_PENDING -> COMPLETED, and
 * every lease still connected closed "match_over".
 */
static int result_run(struct cc_pg *pg, void *arg)
{
	struct result_tx *tx = arg;
	struct server_tx *s = &tx->s;
	char stored[CC_MATCH_RESULT_HASH_BUF], why[160];
	bool ok;
	api_answer_reset(&s->answer);
	s->refusal = NULL;
	tx->recorded = false;
	tx->called_off = false;
	tx->n_never = 0;
	cc_ticket_moves_reset(&tx->moves);
	int rc = caller_allocation(pg, s, &ok);
	if (rc != 0 || !ok)
		return rc;
	rc = cc_result_find(pg, s->alloc.match_id, stored);
	if (rc == 0) {
		if (strcmp(stored, tx->hash) == 0)
			return result_answer(pg, tx);
		api_answer_error(&s->answer, 409, "replay_conflict", "a different result was already recorded for this match");
		return 0;
	}
	if (rc != CC_ENOTFOUND)
		return rc;
	if ((rc = cc_match_get(pg, s->alloc.match_id, true, &s->match)) != 0)
		return rc;
	bool pending = strcmp(s->match.state, "RESULT_PENDING") == 0;
	if (strcmp(s->alloc.state, "PUBLISHED") != 0 || (!pending && strcmp(s->match.state, "IN_PROGRESS") != 0)) {
		api_answer_error(&s->answer, 409, "invalid_state",
				 "the match is %s; a result needs IN_PROGRESS (a player connected) or RESULT_PENDING", s->match.state);
		return 0;
	}
	if (cc_match_result_check(&tx->result, (const char (*)[CC_UUID_BUF])s->match.player_ids, s->match.teams,
				  s->match.n_players, why, sizeof why) != 0) {
		api_answer_error(&s->answer, 422, "invalid_result", "%s", why);
		return 0;
	}
	if ((rc = cc_server_never_connected(pg, s->match.id, tx->never, CC_FORMATION_MAX_PLAYERS, &tx->n_never)) != 0)
		return rc;
	bool some_never = tx->n_never > 0 && tx->n_never < s->match.n_players;
	const struct cc_playlist *pl = cc_playlist_find(s->match.playlist);
	if (some_never && pl && pl->ranked) {
		/*
		 * A ranked match with an initial-connect no-show is called off by
		 * policy, never played out and rated (SPEC 9): the same
		 * settlement as the no_show route and cc-maintenance's sweep.
		 */
		struct cc_settle_outcome o;
		rc = cc_match_settle_no_show(pg, s->match.id, (const char (*)[CC_UUID_BUF])tx->never, tx->n_never,
					     s->api->cfg->ticket_ttl_seconds, &o, &tx->moves);
		if (rc != 0)
			return rc == CC_ESTATE ? CC_ESERIALIZATION : rc;
		tx->called_off = true;
		api_answer_error(&s->answer, 409, "invalid_state",
				 "the match was called off: %zu ranked participant(s) never connected, so it is not rated",
				 tx->n_never);
		return 0;
	}
	/* Casual: each no-show is penalised, and never rated (the bots took the slots). */
	for (size_t i = 0; some_never && i < tx->n_never; i++)
		if ((rc = cc_penalty_record(pg, tx->never[i], CC_PENALTY_INITIAL_CONNECT_NO_SHOW, s->match.id, NULL)) != 0)
			return rc;
	rc = cc_result_insert(pg, s->match.id, s->alloc.id, &tx->result);
	if (rc == CC_ECONFLICT) /* a twin committed after our snapshot: the retry answers it as a replay */
		return CC_ESERIALIZATION;
	if (rc == 0)
		rc = rate_players(pg, tx);
	if (rc == 0)
		rc = cc_tickets_complete(pg, s->match.id, NULL, &tx->moves);
	if (rc == 0 && !pending)
		rc = cc_match_await_result(pg, &s->match);
	if (rc == 0)
		rc = cc_match_complete(pg, &s->match);
	/* The match is over: nobody is connected to it any more (issue 20). */
	if (rc == 0)
		rc = cc_server_close_connections(pg, s->match.id, "match_over", NULL);
	if (rc == CC_ESTATE)
		rc = CC_ESERIALIZATION;
	if (rc == 0)
		rc = result_answer(pg, tx);
	tx->recorded = rc == 0;
	return rc;
}

int api_server_result(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	struct api *api = ctx;
	struct result_tx tx = { .s = { .api = api, .route = R_RESULT } };
	struct cc_json_error err = { 0 };
	cJSON *body = NULL;
	struct cc_pg *pg = server_begin(api, req, resp, &tx.s, NULL, &body);
	if (!pg)
		return 0;
	/* The result's own parser checks the fields (game/match_result.h). */
	if (!(body = api_body_object(req, resp, NULL)))
		goto out;
	if (cc_match_result_parse(body, &tx.result, &err) != 0) {
		api_bad_field(resp, &err);
		goto out;
	}
	cc_match_result_hash(&tx.result, tx.hash);
	server_run(pg, &tx.s, result_run, resp);
	if (resp->status == 200 || tx.called_off)
		api_index_apply(api, &tx.moves);
	if (tx.called_off)
		cc_log_info("match_called_off", CC_LOG_STR("match_id", tx.s.alloc.match_id), CC_LOG_STR("why", "no_show"),
			    CC_LOG_INT("no_shows", (int64_t)tx.n_never));
	if (resp->status == 200 && tx.recorded)
		cc_log_info("match_completed", CC_LOG_STR("match_id", tx.s.alloc.match_id),
			    CC_LOG_STR("playlist", tx.s.match.playlist), CC_LOG_INT("score_team0", tx.result.score[0]),
			    CC_LOG_INT("score_team1", tx.result.score[1]));
out:
	cJSON_Delete(body);
	api_db_release(api, pg);
	return 0;
}

/* ---- heartbeat ------------------------------------------------------------------- */

struct heartbeat_tx {
	struct server_tx s;
	const char *phase;
	bool ended; /* this attempt moved the match IN_PROGRESS -> RESULT_PENDING */
};

static int heartbeat_answer(struct heartbeat_tx *tx)
{
	const struct cc_server_allocation *a = &tx->s.alloc;
	cJSON *o = cJSON_CreateObject();
	if (o && (!cJSON_AddStringToObject(o, "allocation_id", a->id) || !cJSON_AddStringToObject(o, "match_id", a->match_id) ||
		  !cJSON_AddStringToObject(o, "match_state", tx->s.match.state) ||
		  !cJSON_AddStringToObject(o, "allocation_state", a->state) ||
		  !cJSON_AddStringToObject(o, "heartbeat_at", a->last_heartbeat_at))) {
		cJSON_Delete(o);
		o = NULL;
	}
	return answer_json(&tx->s, o);
}

/*
 * The liveness signal cc-maintenance's silent-server sweep reads
 * (store/match_settle.h): last_heartbeat_at and last_phase on the
 * allocation, whatever the match's state, so a replay is naturally
 * idempotent. Phase "ended" moves an IN_PROGRESS match to RESULT_PENDING
 * (the result window starts). The answer carries the match's state: a
 * terminal one tells the server its match was called off, and it stops.
 */
static int heartbeat_run(struct cc_pg *pg, void *arg)
{
	struct heartbeat_tx *tx = arg;
	struct server_tx *s = &tx->s;
	bool ok;
	api_answer_reset(&s->answer);
	s->refusal = NULL;
	tx->ended = false;
	int rc = caller_allocation(pg, s, &ok);
	if (rc != 0 || !ok)
		return rc;
	bool ended = strcmp(tx->phase, "ended") == 0;
	/* Only "ended" may move the match, so only then is it locked. */
	if ((rc = cc_match_get(pg, s->alloc.match_id, ended, &s->match)) != 0)
		return rc;
	if ((rc = cc_server_record_heartbeat(pg, &s->alloc, tx->phase)) != 0)
		return rc == CC_ENOTFOUND ? CC_ESERIALIZATION : rc;
	if (ended && strcmp(s->match.state, "IN_PROGRESS") == 0) {
		if ((rc = cc_match_await_result(pg, &s->match)) != 0)
			return rc == CC_ESTATE ? CC_ESERIALIZATION : rc;
		tx->ended = true;
	}
	return heartbeat_answer(tx);
}

int api_server_heartbeat(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	struct api *api = ctx;
	struct heartbeat_tx tx = { .s = { .api = api, .route = R_HEARTBEAT } };
	struct cc_json_error err = { 0 };
	cJSON *body = NULL;
	int64_t tick = 0;
	struct cc_pg *pg = server_begin(api, req, resp, &tx.s, api_heartbeat_fields, &body);
	if (!pg)
		return 0;
	if (api_heartbeat_read(body, &tx.phase, &tick, &err) != 0) {
		api_bad_field(resp, &err);
		goto out;
	}
	server_run(pg, &tx.s, heartbeat_run, resp);
	if (resp->status == 200 && tx.ended)
		cc_log_info("match_ended", CC_LOG_STR("server_id", tx.s.server_id),
			    CC_LOG_STR("match_id", tx.s.alloc.match_id), CC_LOG_INT("tick", tick));
out:
	cJSON_Delete(body);
	api_db_release(api, pg);
	return 0;
}

/* ---- no_show -------------------------------------------------------------------- */

struct no_show_tx {
	struct server_tx s;
	size_t n_named;
	char named[API_NO_SHOW_MAX][CC_UUID_BUF];
	struct cc_settle_outcome settled;
	struct cc_ticket_moves moves;
	size_t n_no_shows, n_requeued;
	char no_shows[CC_FORMATION_MAX_PLAYERS][CC_UUID_BUF];
	char requeued[CC_FORMATION_MAX_PLAYERS][CC_UUID_BUF];
};

static int no_show_answer(struct no_show_tx *tx)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *ns = cJSON_CreateArray(), *rq = cJSON_CreateArray();
	bool good = o && ns && rq;
	for (size_t i = 0; good && i < tx->n_no_shows; i++)
		good = cJSON_AddItemToArray(ns, cJSON_CreateString(tx->no_shows[i]));
	for (size_t i = 0; good && i < tx->n_requeued; i++)
		good = cJSON_AddItemToArray(rq, cJSON_CreateString(tx->requeued[i]));
	if (good && cJSON_AddStringToObject(o, "match_id", tx->s.match.id) &&
	    cJSON_AddStringToObject(o, "match_state", tx->s.match.state) && cJSON_AddItemToObject(o, "no_show_player_ids", ns)) {
		ns = NULL;
		if (cJSON_AddItemToObject(o, "requeued_player_ids", rq))
			return answer_json(&tx->s, o);
	}
	cJSON_Delete(ns);
	cJSON_Delete(rq);
	cJSON_Delete(o);
	return answer_json(&tx->s, NULL);
}

/*
 * The game server reports who never connected within its connect window;
 * cc_match_settle_no_show decides (it settles at most once, whether this
 * route or cc-maintenance's sweep comes first). The answer is the durable
 * facts, so a replay after the settlement answers the same: the named
 * players penalised INITIAL_CONNECT_NO_SHOW for this match, and, when the
 * settlement called a ranked match off, everyone else (requeued by it).
 * A named player who did connect is simply not a no-show.
 */
static int no_show_run(struct cc_pg *pg, void *arg)
{
	struct no_show_tx *tx = arg;
	struct server_tx *s = &tx->s;
	char penalised[CC_FORMATION_MAX_PLAYERS][CC_UUID_BUF];
	size_t n_penalised = 0;
	bool ok;
	api_answer_reset(&s->answer);
	s->refusal = NULL;
	tx->n_no_shows = tx->n_requeued = 0;
	cc_ticket_moves_reset(&tx->moves);
	int rc = caller_allocation(pg, s, &ok);
	if (rc != 0 || !ok)
		return rc;
	if ((rc = cc_match_get(pg, s->alloc.match_id, true, &s->match)) != 0)
		return rc;
	for (size_t i = 0; i < tx->n_named; i++) {
		bool in = false;
		for (size_t k = 0; k < s->match.n_players && !in; k++)
			in = strcmp(s->match.player_ids[k], tx->named[i]) == 0;
		if (!in) {
			api_answer_error(&s->answer, 422, "not_in_roster", "player %s is not in this match", tx->named[i]);
			return 0;
		}
	}
	if (strcmp(s->match.state, "ALLOCATING") == 0 || strcmp(s->match.state, "PROCESS_READY") == 0) {
		api_answer_error(&s->answer, 409, "invalid_state", "the match is %s: no connect window has opened yet",
				 s->match.state);
		return 0;
	}
	if ((rc = cc_match_settle_no_show(pg, s->match.id, (const char (*)[CC_UUID_BUF])tx->named, tx->n_named,
					  s->api->cfg->ticket_ttl_seconds, &tx->settled, &tx->moves)) != 0)
		return rc == CC_ESTATE ? CC_ESERIALIZATION : rc;
	snprintf(s->match.state, sizeof s->match.state, "%s", tx->settled.match_state);
	if ((rc = cc_penalties_of_source(pg, CC_PENALTY_INITIAL_CONNECT_NO_SHOW, s->match.id,
					 (const char (*)[CC_UUID_BUF])s->match.player_ids, s->match.n_players, penalised,
					 &n_penalised)) != 0)
		return rc;
	const struct cc_playlist *pl = cc_playlist_find(s->match.playlist);
	bool called_off = pl && pl->ranked && n_penalised > 0 && strcmp(s->match.state, "FAILED") == 0;
	for (size_t k = 0; k < s->match.n_players; k++) {
		const char *id = s->match.player_ids[k];
		bool was_penalised = false, was_named = false;
		for (size_t j = 0; j < n_penalised && !was_penalised; j++)
			was_penalised = strcmp(penalised[j], id) == 0;
		for (size_t j = 0; j < tx->n_named && !was_named; j++)
			was_named = strcmp(tx->named[j], id) == 0;
		if (was_penalised && was_named)
			memcpy(tx->no_shows[tx->n_no_shows++], id, CC_UUID_BUF);
		else if (!was_penalised && called_off)
			memcpy(tx->requeued[tx->n_requeued++], id, CC_UUID_BUF);
	}
	return no_show_answer(tx);
}

int api_server_no_show(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	struct api *api = ctx;
	struct no_show_tx tx = { .s = { .api = api, .route = R_NO_SHOW } };
	struct cc_json_error err = { 0 };
	cJSON *body = NULL;
	struct cc_pg *pg = server_begin(api, req, resp, &tx.s, api_no_show_fields, &body);
	if (!pg)
		return 0;
	if (api_no_show_read(body, tx.named, &tx.n_named, &err) != 0) {
		api_bad_field(resp, &err);
		goto out;
	}
	server_run(pg, &tx.s, no_show_run, resp);
	if (resp->status == 200) {
		api_index_apply(api, &tx.moves);
		if (tx.settled.changed)
			cc_log_info("no_show_settled", CC_LOG_STR("server_id", tx.s.server_id),
				    CC_LOG_STR("match_id", tx.s.match.id), CC_LOG_STR("match_state", tx.s.match.state),
				    CC_LOG_INT("no_shows", (int64_t)tx.settled.n_no_shows),
				    CC_LOG_INT("penalised", tx.settled.penalised), CC_LOG_INT("requeued", tx.settled.requeued));
	}
out:
	cJSON_Delete(body);
	api_db_release(api, pg);
	return 0;
}

/* ---- vacated (casual backfill, SPEC 9, issue 26) ------------------------------------ */

const char *const api_vacated_fields[] = { "player_id", "slot", "generation", "remaining_seconds", NULL };

struct vacated_tx {
	struct server_tx s;
	const char *player_id;
	int slot;
	int32_t generation;
	int64_t remaining;
	const char *outcome; /* offered, already_offered, no_candidate, not_backfilled, last_minute */
	struct cc_backfill_offer offer;
	bool has_offer;
};

static int vacated_answer(struct vacated_tx *tx)
{
	cJSON *o = cJSON_CreateObject();
	if (o && cJSON_AddStringToObject(o, "match_id", tx->s.match.id) && cJSON_AddNumberToObject(o, "slot", tx->slot) &&
	    cJSON_AddNumberToObject(o, "generation", tx->generation) && cJSON_AddStringToObject(o, "outcome", tx->outcome) &&
	    (tx->has_offer ? cJSON_AddStringToObject(o, "offer_id", tx->offer.id) != NULL
			   : cJSON_AddNullToObject(o, "offer_id") != NULL))
		return answer_json(&tx->s, o);
	cJSON_Delete(o);
	return answer_json(&tx->s, NULL);
}

/*
 * The game server says slot's player (at generation) left for good: its
 * reservation lapsed. Ranked never backfills; a casual match with less
 * than the playlist's cut-off left is not offered, now or by any pass-on
 * after a decline or an expiry (the report sets the vacancy's
 * offer_until); otherwise the vacancy goes to the oldest qualifying
 * ticket (store/backfill.h). A second report
 * of one vacancy answers its live offer ("already_offered"), so replays
 * and twins make one offer; an OPEN offer past its window is expired
 * first, so the game server's repeated report passes on an offer nobody
 * answered.
 */
static int vacated_run(struct cc_pg *pg, void *arg)
{
	struct vacated_tx *tx = arg;
	struct server_tx *s = &tx->s;
	bool ok, current = false, live = false;
	int team = -1;
	api_answer_reset(&s->answer);
	s->refusal = NULL;
	tx->has_offer = false;
	int rc = caller_allocation(pg, s, &ok);
	if (rc != 0 || !ok)
		return rc;
	if ((rc = cc_match_get(pg, s->alloc.match_id, true, &s->match)) != 0)
		return rc;
	if ((rc = cc_backfill_vacancy(pg, s->match.id, tx->slot, tx->player_id, tx->generation, &current, &team, &live,
				      &tx->offer)) != 0)
		return rc;
	if (live && tx->offer.overdue) {
		/* Its player never answered: the expiry is recorded and the vacancy passed on (the server re-reports). */
		if ((rc = cc_backfill_settle(pg, &tx->offer, "EXPIRED")) != 0)
			return rc == CC_ESTATE ? CC_ESERIALIZATION : rc;
		live = false;
	}
	if (live) {
		tx->has_offer = true;
		tx->outcome = "already_offered";
		return vacated_answer(tx);
	}
	if (team < 0) {
		api_answer_error(&s->answer, 422, "not_in_roster", "slot %d of this match was never player %s at generation %d",
				 tx->slot, tx->player_id, (int)tx->generation);
		return 0;
	}
	const struct cc_playlist *pl = cc_playlist_find(s->match.playlist);
	if (!pl || !pl->backfill || !s->api->join_keys) {
		tx->outcome = "not_backfilled";
		return vacated_answer(tx);
	}
	if (strcmp(s->match.state, "IN_PROGRESS") != 0) {
		api_answer_error(&s->answer, 409, "invalid_state", "the match is %s; only a match in progress is backfilled",
				 s->match.state);
		return 0;
	}
	if (!current) /* replaced without a live offer: cannot happen (a replacement is an ACCEPTED offer) */
		return CC_EDB;
	/* The store sets the vacancy's offer_until from this report and refuses past it (last_minute). */
	struct cc_backfill_rules rules;
	enum cc_backfill_outcome outcome = CC_BACKFILL_NO_CANDIDATE;
	int64_t offer_for = tx->remaining - pl->backfill_cutoff_seconds;
	api_backfill_rules(s->api, pl, &rules);
	if ((rc = cc_backfill_offer_next(pg, s->match.id, tx->slot, team, tx->generation, tx->player_id, &rules,
					 &offer_for, &outcome, &tx->offer)) != 0)
		return rc;
	tx->has_offer = outcome == CC_BACKFILL_OFFERED;
	tx->outcome = cc_backfill_outcome_name(outcome);
	return vacated_answer(tx);
}

int api_server_vacated(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	struct api *api = ctx;
	struct vacated_tx tx = { .s = { .api = api, .route = R_VACATED } };
	struct cc_json_error err = { 0 };
	cJSON *body = NULL;
	int64_t slot = 0, generation = 0;
	int rc;
	struct cc_pg *pg = server_begin(api, req, resp, &tx.s, api_vacated_fields, &body);
	if (!pg)
		return 0;
	if ((rc = player_read(body, &tx.player_id, &err)) != 0 ||
	    (rc = cc_json_get_int(body, "slot", true, 0, CC_JOIN_SLOT_MAX, &slot, &err)) != 0 ||
	    (rc = cc_json_get_int(body, "generation", true, 1, INT32_MAX, &generation, &err)) != 0 ||
	    (rc = cc_json_get_int(body, "remaining_seconds", true, 0, 86400, &tx.remaining, &err)) != 0) {
		api_bad_field(resp, &err);
		goto out;
	}
	tx.slot = (int)slot;
	tx.generation = (int32_t)generation;
	server_run(pg, &tx.s, vacated_run, resp);
	if (resp->status == 200)
		cc_log_info("slot_vacated", CC_LOG_STR("server_id", tx.s.server_id), CC_LOG_STR("match_id", tx.s.match.id),
			    CC_LOG_INT("slot", tx.slot), CC_LOG_STR("outcome", tx.outcome),
			    CC_LOG_STR("offer_id", tx.has_offer ? tx.offer.id : NULL),
			    CC_LOG_STR("ticket_id", tx.has_offer ? tx.offer.ticket_id : NULL));
out:
	cJSON_Delete(body);
	api_db_release(api, pg);
	return 0;
}
