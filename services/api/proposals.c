/*
 * proposals.c - GET /v1/proposals/{proposal_id} and
 * POST /v1/proposals/{proposal_id}/response {response, revision} (SPEC 7).
 * The deciding logic lives in store/proposals.c (shared with the workers
 * that expire overdue proposals); this file maps it to HTTP. The store
 * returns every ticket it moved, and those rows refresh the candidate
 * index after the commit without being read again. Both
 * routes advance expiry: a read or a late response of an overdue proposal
 * expires it first, in the same transaction.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "game/formation.h"
#include "sys/crypto.h"
#include "sys/json.h"
#include "sys/log.h"
#include "store/proposals.h"
#include "sys/banned.h"

static const char *proposal_param(const struct cc_http_request *req, struct cc_http_response *resp)
{
	const char *id = cc_http_param(req, "proposal_id");
	if (!id || !cc_uuid_valid(id)) {
		cc_http_error(resp, 400, "invalid_request", "proposal_id must be a lowercase UUID", false);
		return NULL;
	}
	return id;
}

/*
 * The answers to one proposal lock its row in turn, and an answer that
 * waited there fails its SERIALIZABLE commit once per peer that committed
 * meanwhile (its snapshot predates the peer's answer, which its "all
 * accepted?" read then missed). Each peer commits once, so a budget of the
 * default plus one attempt per possible participant always ends the race;
 * with the default alone the sixth of six answers at once was a 503 (issue
 * 24: half a second more to the queue-to-connected median of the demo).
 */
#define RESPOND_ATTEMPTS (CC_PG_MAX_ATTEMPTS + CC_FORMATION_MAX_PLAYERS)

struct proposal_tx {
	struct api *api;
	const char *proposal_id;
	const char *player_id;
	bool respond;
	bool accept;
	int64_t revision;
	struct cc_ticket_moves moves; /* every ticket the decision moved */
	struct cc_match match;        /* set when this accept made the match */
	struct api_answer answer;
};

static int proposal_tx_run(struct cc_pg *pg, void *arg)
{
	struct proposal_tx *tx = arg;
	int ttl = (int)tx->api->cfg->ticket_ttl_seconds;
	enum cc_proposal_verdict verdict = CC_PROPOSAL_OK;
	char *json = NULL;
	int rc;

	api_answer_reset(&tx->answer);
	cc_ticket_moves_reset(&tx->moves);
	tx->match.id[0] = '\0';
	if (tx->respond) {
		rc = cc_proposal_respond(pg, tx->proposal_id, tx->player_id, tx->accept, tx->revision, ttl, &verdict,
					 &tx->moves, &tx->match);
	} else {
		bool expired;
		rc = cc_proposal_expire_if_due(pg, tx->proposal_id, &expired, &tx->moves);
	}
	if (rc != 0)
		return rc;
	switch (verdict) {
	case CC_PROPOSAL_OK:
		break;
	case CC_PROPOSAL_NOT_PARTICIPANT:
		api_answer_error(&tx->answer, 404, "not_found", "no such proposal for this player");
		return 0;
	case CC_PROPOSAL_CLOSED:
		api_answer_error(&tx->answer, 409, "proposal_closed", "the proposal was already decided or expired");
		return 0; /* commit: a lazy expiry must stick */
	case CC_PROPOSAL_REVISION:
		api_answer_error(&tx->answer, 409, "revision_conflict", "the proposal changed; re-read it and retry");
		return 0;
	case CC_PROPOSAL_ALREADY:
		api_answer_error(&tx->answer, 409, "already_responded", "a different response was already given");
		return 0;
	}
	rc = cc_proposal_view(pg, tx->proposal_id, tx->player_id, &json);
	if (rc == CC_ENOTFOUND) {
		api_answer_error(&tx->answer, 404, "not_found", "no such proposal for this player");
		return 0;
	}
	if (rc == 0)
		rc = api_answer_body(&tx->answer, 200, json);
	free(json);
	return rc;
}

const char *const api_proposal_response_fields[] = { "response", "revision", NULL };

int api_proposal_response_read(const cJSON *body, bool *accept, int64_t *revision,
			       struct cc_json_error *err)
{
	const char *response;
	int rc;

	if ((rc = cc_json_get_string(body, "response", true, 1, 16, &response, err)) != 0 ||
	    (rc = cc_json_get_int(body, "revision", true, 1, INT64_MAX, revision, err)) != 0)
		return rc;
	if (strcmp(response, "accept") != 0 && strcmp(response, "decline") != 0) {
		cc_json_error_set(err, "response", "field 'response' must be accept or decline");
		return CC_EINVAL;
	}
	*accept = response[0] == 'a';
	return 0;
}

static int proposal_route(const struct cc_http_request *req, struct cc_http_response *resp, struct api *api,
			  bool respond)
{
	static const char *const *const fields = api_proposal_response_fields;
	struct proposal_tx tx = { .api = api, .respond = respond };
	struct cc_json_error err = { 0 };
	struct api_player player;
	cJSON *body = NULL;

	if (respond && !api_rate_address(api, API_RL_RESPONSE, req, resp))
		return 0;
	if (!(tx.proposal_id = proposal_param(req, resp)))
		return 0;
	struct cc_pg *pg = api_db(api, resp);
	if (!pg)
		return 0;
	if (api_authenticate(api, pg, req, resp, &player) != 0)
		goto out;
	if (respond && !api_rate_player(api, API_RL_RESPONSE, player.id, resp))
		goto out;
	if (respond) {
		if (!(body = api_body_object(req, resp, fields)))
			goto out;
		if (api_proposal_response_read(body, &tx.accept, &tx.revision, &err) != 0) {
			api_bad_field(resp, &err);
			goto out;
		}
	}
	tx.player_id = player.id;
	int rc = respond ? cc_pg_run_serializable_budget(pg, RESPOND_ATTEMPTS, proposal_tx_run, &tx)
			 : cc_pg_run_serializable(pg, proposal_tx_run, &tx);
	if (rc == 0) {
		api_index_apply(api, &tx.moves);
		if (respond && tx.answer.status == 200)
			cc_log_info("proposal_response", CC_LOG_STR("proposal_id", tx.proposal_id),
				    CC_LOG_STR("player_id", player.id), CC_LOG_STR("response", tx.accept ? "accept" : "decline"),
				    CC_LOG_STR("match_id", tx.match.id[0] ? tx.match.id : NULL));
	}
	api_respond(resp, rc, &tx.answer);
out:
	cJSON_Delete(body);
	api_db_release(api, pg);
	return 0;
}

int api_proposal_get(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	return proposal_route(req, resp, ctx, false);
}

int api_proposal_respond(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	return proposal_route(req, resp, ctx, true);
}
