/*
 * operator.c - the operator routes behind the separate admin bearer secret:
 * ban and unban, view a player, queue statistics per playlist and region.
 *
 * A ban revokes the identity's sessions and cancels its waiting tickets in
 * the same transaction, so every replica refuses the player at once; lifting
 * a ban does not revive sessions. A ticket in an open proposal is cancelled
 * the way the player's own cancel would be: the proposal is declined and
 * the other participants requeued at once.
 *
 * The outbox's dead letters (SPEC 9): listed newest first, and replayed one
 * at a time, fenced by the replay count the operator saw, so a retried
 * request replays once (store/outbox.h, cc_outbox_replay).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "sys/crypto.h"
#include "sys/json.h"
#include "sys/log.h"
#include "store/console_reads.h"
#include "store/outbox.h"
#include "store/tickets.h"
#include "store/players.h"
#include "store/proposals.h"
#include "store/queue_stats.h"
#include "store/seasons.h"
#include "store/sessions.h"
#include "sys/banned.h"

/*
 * The documented PlayerView from the text cc_player_view built: its rating, when
 * present, carries only the stored numbers and becomes the full ranked
 * profile (tier, provisional, season_end) that GET /v1/profile/ranked
 * shows, with the running season's end; its active ticket, when present,
 * gets the estimated wait every Ticket answer carries (api_ticket_estimate)
 * (pg: the transaction's connection, when in one). Returns malloc'd JSON
 * text, or NULL when out of memory or the season or the wait history could
 * not be read.
 */
static char *player_view_text(const struct api *api, struct cc_pg *pg, const char *stored)
{
	cJSON *view = cJSON_Parse(stored);
	char *text = NULL;
	if (!view)
		return NULL;
	cJSON *ticket = cJSON_GetObjectItemCaseSensitive(view, "active_ticket");
	if (cJSON_IsObject(ticket)) {
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(ticket, "id");
		const cJSON *state = cJSON_GetObjectItemCaseSensitive(ticket, "state");
		struct cc_wait_estimate e;
		if (!cJSON_IsString(id) || !cJSON_IsString(state))
			CC_BUG("cc_player_view built an active ticket without id and state");
		if (api_ticket_estimate(pg, id->valuestring, state->valuestring, &e) != 0)
			goto out;
		if (!(e.method == CC_WAIT_RECENT_MATCHES ? cJSON_AddNumberToObject(ticket, "estimated_wait_seconds", e.seconds)
							 : cJSON_AddNullToObject(ticket, "estimated_wait_seconds")) ||
		    !cJSON_AddStringToObject(ticket, "estimated_wait_method", cc_wait_method_name(e.method)))
			goto out;
	}
	cJSON *rating = cJSON_GetObjectItemCaseSensitive(view, "rating");
	if (cJSON_IsObject(rating)) {
		const cJSON *r = cJSON_GetObjectItemCaseSensitive(rating, "rating");
		const cJSON *d = cJSON_GetObjectItemCaseSensitive(rating, "deviation");
		const cJSON *g = cJSON_GetObjectItemCaseSensitive(rating, "ranked_games");
		if (!cJSON_IsNumber(r) || !cJSON_IsNumber(d) || !cJSON_IsNumber(g))
			CC_BUG("cc_player_view built a rating without rating, deviation and ranked_games");
		struct cc_season season;
		if (cc_season_current(pg, &season) != 0)
			goto out; /* answered 503 like any database failure */
		cJSON *profile = api_ranked_profile(api, r->valuedouble, d->valuedouble, (long)g->valuedouble,
						    season.ends_at);
		if (!profile || !cJSON_ReplaceItemInObjectCaseSensitive(view, "rating", profile)) {
			cJSON_Delete(profile);
			goto out;
		}
	}
	text = cc_json_print(view);
out:
	cJSON_Delete(view);
	return text;
}

/* Reads {player_id}; answers 400 when it is not a UUID. */
static const char *player_param(const struct cc_http_request *req, struct cc_http_response *resp)
{
	const char *id = cc_http_param(req, "player_id");
	if (!id || !cc_uuid_valid(id)) {
		cc_http_error(resp, 400, "invalid_request", "player_id must be a lowercase UUID", false);
		return NULL;
	}
	return id;
}

/* Strict RFC 3339: YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM). */
static bool rfc3339_valid(const char *s)
{
	static const char shape[] = "dddd-dd-ddTdd:dd:dd";
	size_t i = 0;
	for (; shape[i]; i++) {
		char c = s[i];
		if (shape[i] == 'd' ? (c < '0' || c > '9') : c != shape[i])
			return false;
	}
	if (s[i] == '.') {
		size_t digits = 0;
		for (i++; s[i] >= '0' && s[i] <= '9'; i++)
			digits++;
		if (digits == 0 || digits > 9)
			return false;
	}
	if (s[i] == 'Z')
		return s[i + 1] == '\0';
	if (s[i] != '+' && s[i] != '-')
		return false;
	return s[i + 1] >= '0' && s[i + 1] <= '9' && s[i + 2] >= '0' && s[i + 2] <= '9' && s[i + 3] == ':' &&
	       s[i + 4] >= '0' && s[i + 4] <= '9' && s[i + 5] >= '0' && s[i + 5] <= '9' && s[i + 6] == '\0';
}

struct ban_tx {
	const struct api *api;
	const char *player_id;
	const char *until; /* NULL = unban */
	const char *reason;
	bool fenced;                   /* expected_banned_until was given */
	const char *expected;          /* the banned_until the operator saw; NULL = not banned */
	int ticket_ttl;                /* requeued tickets' fresh heartbeat deadline */
	struct api_answer answer;
	struct cc_ticket_moves moves;  /* tickets cancelled or requeued, for the index after the commit */
};

/*
 * The banned player's PROPOSED ticket (at most one active) leaves its
 * proposal as on the player's own cancel: an open proposal is declined
 * (the others requeued now, not when the window ends); an overdue one is
 * expired, which requeues the ticket for cc_ticket_cancel to cancel (or
 * ends it, when the player never answered).
 */
static int leave_proposals(struct cc_pg *pg, struct ban_tx *tx)
{
	struct cc_ticket_proposals proposed;
	int rc = cc_ticket_proposals_of_player(pg, tx->player_id, &proposed);
	for (size_t i = 0; rc == 0 && i < proposed.n; i++) {
		const char *proposal_id = proposed.id[i];
		bool expired = false;
		/* lock order: the player's party, the proposal, then tickets (store/README.md) */
		rc = cc_proposal_lock_as_decliner(pg, proposal_id, tx->player_id);
		if (rc == 0)
			rc = cc_proposal_expire_if_due(pg, proposal_id, &expired, &tx->moves);
		if (rc == 0 && !expired)
			rc = cc_proposal_decline_by_cancel(pg, proposal_id, tx->player_id, tx->ticket_ttl, &tx->moves);
		if (rc == CC_ESTATE)
			rc = CC_ESERIALIZATION; /* decided under us: the retry reads the new state */
	}
	return rc;
}

static int ban_tx_run(struct cc_pg *pg, void *arg)
{
	struct ban_tx *tx = arg;
	char *stored = NULL, *view = NULL;
	bool in_future = true;
	int rc;

	api_answer_reset(&tx->answer);
	cc_ticket_moves_reset(&tx->moves);
	if (tx->fenced) {
		/*
		 * The fence: the ban the operator saw must still be the ban in
		 * place, unless what they ask for already is (their own retry,
		 * answered as the first time, writing nothing).
		 */
		bool matches = false, applied = false;
		rc = cc_console_ban_fence(pg, tx->player_id, tx->expected, tx->until, tx->reason, &matches, &applied);
		if (rc == CC_EDB && tx->until) {
			api_answer_error(&tx->answer, 400, "invalid_request", "a timestamp is not valid");
			rc = CC_EINVAL;
			goto out;
		}
		if (rc == CC_ENOTFOUND) {
			api_answer_error(&tx->answer, 404, "not_found", "no such player");
			goto out;
		}
		if (rc != 0)
			goto out;
		if (applied)
			goto view;
		if (!matches) {
			api_answer_error(&tx->answer, 409, "revision_conflict",
					 "the player's ban changed since expected_banned_until was read; read the player again");
			rc = CC_ESTATE;
			goto out;
		}
	}
	if (tx->until)
		rc = cc_player_ban(pg, tx->player_id, tx->until, tx->reason, &in_future);
	else
		rc = cc_player_unban(pg, tx->player_id);
	if (rc == CC_EDB && tx->until) {
		/* The cast refused it (e.g. month 13): the client's error, not ours. */
		api_answer_error(&tx->answer, 400, "invalid_request", "field 'until' is not a valid timestamp");
		rc = CC_EINVAL;
		goto out;
	}
	if (rc == CC_ENOTFOUND) {
		api_answer_error(&tx->answer, 404, "not_found", "no such player");
		goto out;
	}
	if (rc != 0)
		goto out;
	if (tx->until && !in_future) {
		api_answer_error(&tx->answer, 422, "invalid_parameters", "field 'until' must be in the future");
		rc = CC_EINVAL;
		goto out;
	}
	if (tx->until) {
		if ((rc = cc_sessions_revoke_all(pg, tx->player_id, NULL)) != 0)
			goto out;
		if ((rc = leave_proposals(pg, tx)) != 0)
			goto out;
		bool cancelled;
		if ((rc = cc_ticket_cancel(pg, NULL, tx->player_id, "banned", &cancelled, NULL, &tx->moves)) != 0)
			goto out;
	}
view:
	if ((rc = cc_player_view(pg, tx->player_id, &stored)) != 0)
		goto out;
	view = player_view_text(tx->api, pg, stored);
	rc = view ? api_answer_body(&tx->answer, 200, view) : CC_ENOMEM;
out:
	free(view);
	free(stored);
	return rc;
}

static void run_ban(struct api *api, const struct cc_http_request *req, struct cc_http_response *resp,
		    struct ban_tx *tx)
{
	struct cc_pg *pg = api_db(api, resp);
	if (!pg)
		return;
	tx->ticket_ttl = (int)api->cfg->ticket_ttl_seconds;
	int rc = cc_pg_run_serializable(pg, ban_tx_run, tx);
	if (rc == 0)
		cc_log_info(tx->until ? "player_banned" : "player_unbanned", CC_LOG_STR("player_id", tx->player_id),
			    CC_LOG_STR("until", tx->until), CC_LOG_STR("request_id", req->request_id));
	api_respond(resp, rc, &tx->answer);
	if (rc == 0)
		api_index_apply(api, &tx->moves);
	api_db_release(api, pg);
}

const char *const api_ban_fields[] = { "until", "reason", "expected_banned_until", NULL };
const char *const api_unban_fields[] = { "expected_banned_until", NULL };

int api_ban_fence_read(const cJSON *body, bool *fenced, const char **expected, struct cc_json_error *err)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(body, "expected_banned_until");
	*fenced = item != NULL;
	*expected = NULL;
	if (!item || cJSON_IsNull(item))
		return 0;
	if (!cJSON_IsString(item) || strlen(item->valuestring) > 40 || !rfc3339_valid(item->valuestring)) {
		cc_json_error_set(err, "expected_banned_until",
				  "field 'expected_banned_until' must be null or an RFC 3339 timestamp");
		return CC_EINVAL;
	}
	*expected = item->valuestring;
	return 0;
}

int api_ban_read(const cJSON *body, const char **until, const char **reason,
		 struct cc_json_error *err)
{
	int rc;

	if ((rc = cc_json_get_string(body, "until", true, 20, 40, until, err)) != 0 ||
	    (rc = cc_json_get_text(body, "reason", true, 1, 256, reason, err)) != 0) /* characters, as maxLength */
		return rc;
	if (!rfc3339_valid(*until)) {
		cc_json_error_set(err, "until", "field 'until' must be an RFC 3339 timestamp");
		return CC_EINVAL;
	}
	return 0;
}

int api_operator_ban(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	static const char *const *const fields = api_ban_fields;
	struct api *api = ctx;
	struct cc_json_error err = { 0 };
	struct ban_tx tx = { .api = ctx };
	cJSON *body = NULL;

	if (!api_operator_authorized(api, req, resp))
		return 0;
	if (!(tx.player_id = player_param(req, resp)))
		return 0;
	if (!(body = api_body_object(req, resp, fields)))
		return 0;
	if (api_ban_read(body, &tx.until, &tx.reason, &err) != 0 ||
	    api_ban_fence_read(body, &tx.fenced, &tx.expected, &err) != 0) {
		api_bad_field(resp, &err);
		goto out;
	}
	run_ban(api, req, resp, &tx);
out:
	cJSON_Delete(body);
	return 0;
}

int api_operator_unban(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	struct api *api = ctx;
	struct ban_tx tx = { .api = ctx };
	struct cc_json_error err = { 0 };
	cJSON *body = NULL;
	if (!api_operator_authorized(api, req, resp))
		return 0;
	if (!(tx.player_id = player_param(req, resp)))
		return 0;
	/* The body is optional: without one the unban is unfenced, as it always was. */
	if (req->body_len > 0) {
		if (!(body = api_body_object(req, resp, api_unban_fields)))
			return 0;
		if (api_ban_fence_read(body, &tx.fenced, &tx.expected, &err) != 0) {
			api_bad_field(resp, &err);
			goto out;
		}
	}
	run_ban(api, req, resp, &tx);
out:
	cJSON_Delete(body);
	return 0;
}

int api_operator_player(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	struct api *api = ctx;
	if (!api_operator_authorized(api, req, resp))
		return 0;
	const char *id = player_param(req, resp);
	if (!id)
		return 0;
	struct cc_pg *pg = api_db(api, resp);
	if (!pg)
		return 0;
	char *stored = NULL, *view = NULL;
	int rc = cc_player_view(pg, id, &stored);
	if (rc == CC_ENOTFOUND)
		cc_http_error(resp, 404, "not_found", "no such player", false);
	else if (rc == CC_ENOMEM)
		cc_http_error_unavailable(resp, "unavailable", "out of memory");
	else if (rc != 0)
		cc_http_error_unavailable(resp, "unavailable", "the database is unavailable; retry shortly");
	else if (!(view = player_view_text(api, pg, stored)) ||
		 cc_http_respond_text(resp, 200, "application/json", view, strlen(view)) != 0)
		cc_http_error_unavailable(resp, "unavailable", "out of memory");
	free(view);
	free(stored);
	api_db_release(api, pg);
	return 0;
}

int api_operator_queue_stats(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	struct api *api = ctx;
	if (!api_operator_authorized(api, req, resp))
		return 0;
	struct cc_pg *pg = api_db(api, resp);
	if (!pg)
		return 0;
	char *stats = NULL;
	int rc = cc_queue_stats_json(pg, api->regions_pg_array, &stats);
	if (rc == CC_ENOMEM)
		cc_http_error_unavailable(resp, "unavailable", "out of memory");
	else if (rc != 0)
		cc_http_error_unavailable(resp, "unavailable", "the database is unavailable; retry shortly");
	else if (cc_http_respond_text(resp, 200, "application/json", stats, strlen(stats)) != 0)
		cc_http_error_unavailable(resp, "unavailable", "out of memory");
	free(stats);
	api_db_release(api, pg);
	return 0;
}

/* ---- dead letters ----------------------------------------------------------- */

/*
 * Parses text as a decimal integer in [min, max]: digits only, no sign, no
 * spaces, at most 18 of them (OUTBOX_ID_MAX). Returns false for anything else.
 */
static bool decimal_in(const char *text, int64_t min, int64_t max, int64_t *out)
{
	int64_t v = 0;
	size_t n = 0;
	if (!text)
		return false;
	for (; text[n]; n++) {
		if (text[n] < '0' || text[n] > '9' || n >= 18)
			return false;
		v = v * 10 + (text[n] - '0');
	}
	if (n == 0 || v < min || v > max)
		return false;
	*out = v;
	return true;
}

#define DEAD_LETTERS_DEFAULT_LIMIT 50
#define OUTBOX_ID_MAX 999999999999999999LL /* 18 digits: what decimal_in reads */

int api_operator_dead_letters(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	struct api *api = ctx;
	int64_t limit = DEAD_LETTERS_DEFAULT_LIMIT, before = 0;
	if (!api_operator_authorized(api, req, resp))
		return 0;
	const char *limit_text = cc_http_query(req, "limit"), *before_text = cc_http_query(req, "before");
	if (limit_text && !decimal_in(limit_text, 1, CC_OUTBOX_DEAD_LETTERS_MAX, &limit)) {
		cc_http_error(resp, 400, "invalid_request",
			      "limit must be an integer from 1 to " CC_STRINGIFY(CC_OUTBOX_DEAD_LETTERS_MAX), false);
		return 0;
	}
	if (before_text && !decimal_in(before_text, 1, OUTBOX_ID_MAX, &before)) {
		cc_http_error(resp, 400, "invalid_request", "before must be an outbox id (a positive integer)", false);
		return 0;
	}
	struct cc_pg *pg = api_db(api, resp);
	if (!pg)
		return 0;
	char *page = NULL;
	int rc = cc_outbox_dead_letters(pg, before, (int)limit, &page);
	if (rc == CC_ENOMEM)
		cc_http_error_unavailable(resp, "unavailable", "out of memory");
	else if (rc != 0)
		cc_http_error_unavailable(resp, "unavailable", "the database is unavailable; retry shortly");
	else if (cc_http_respond_text(resp, 200, "application/json", page, strlen(page)) != 0)
		cc_http_error_unavailable(resp, "unavailable", "out of memory");
	free(page);
	api_db_release(api, pg);
	return 0;
}

const char *const api_replay_fields[] = { "replays", NULL };

int api_replay_read(const cJSON *body, int64_t *replays, struct cc_json_error *err)
{
	return cc_json_get_int(body, "replays", true, 0, INT32_MAX - 1, replays, err);
}

struct replay_tx {
	int64_t id;
	int64_t replays; /* the fence: the dead letter's replays as the operator saw them */
	enum cc_outbox_replay outcome;
	struct api_answer answer;
};

static int replay_tx_run(struct cc_pg *pg, void *arg)
{
	struct replay_tx *tx = arg;
	char *view = NULL;
	api_answer_reset(&tx->answer);
	int rc = cc_outbox_replay(pg, tx->id, tx->replays, &tx->outcome, &view);
	if (rc == CC_ENOTFOUND) {
		api_answer_error(&tx->answer, 404, "not_found", "no such dead letter");
		return rc;
	}
	if (rc != 0)
		return rc;
	switch (tx->outcome) {
	case CC_OUTBOX_REPLAYED:
	case CC_OUTBOX_ALREADY_REPLAYED:
		rc = api_answer_body(&tx->answer, 200, view);
		break;
	case CC_OUTBOX_NOT_DEAD_LETTERED:
		api_answer_error(&tx->answer, 409, "invalid_state",
				 "outbox row %lld is not dead-lettered (replays %lld)", (long long)tx->id,
				 (long long)tx->replays);
		rc = CC_ESTATE;
		break;
	case CC_OUTBOX_REPLAY_STALE:
		api_answer_error(&tx->answer, 409, "revision_conflict",
				 "dead letter %lld has not been replayed %lld times; list it again", (long long)tx->id,
				 (long long)tx->replays);
		rc = CC_ESTATE;
		break;
	}
	free(view);
	return rc;
}

int api_operator_replay(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	static const char *const *const fields = api_replay_fields;
	struct api *api = ctx;
	struct cc_json_error err = { 0 };
	struct replay_tx tx = { 0 };
	cJSON *body = NULL;

	if (!api_operator_authorized(api, req, resp))
		return 0;
	if (!decimal_in(cc_http_param(req, "outbox_id"), 1, OUTBOX_ID_MAX, &tx.id)) {
		cc_http_error(resp, 400, "invalid_request", "outbox_id must be a positive integer", false);
		return 0;
	}
	if (!(body = api_body_object(req, resp, fields)))
		return 0;
	if (api_replay_read(body, &tx.replays, &err) != 0) {
		api_bad_field(resp, &err);
		goto out;
	}
	struct cc_pg *pg = api_db(api, resp);
	if (!pg)
		goto out;
	int rc = cc_pg_run_serializable(pg, replay_tx_run, &tx);
	if (rc == 0)
		cc_log_info(tx.outcome == CC_OUTBOX_REPLAYED ? "outbox_dead_letter_replayed" : "outbox_dead_letter_replay_repeated",
			    CC_LOG_INT("outbox_id", tx.id), CC_LOG_INT("replays", tx.replays + 1),
			    CC_LOG_STR("request_id", req->request_id));
	api_respond(resp, rc, &tx.answer);
	api_db_release(api, pg);
out:
	cJSON_Delete(body);
	return 0;
}
