/*
 * probes.c - region probes (SPEC 5). A challenge issues a durable,
 * single-use nonce (stored hashed, so any replica can check the answer);
 * the answer's RTT is the interval between issue and answer on
 * PostgreSQL's clock, so nothing the client reports reaches placement.
 * A result is kept per player and region, and copied into the player's
 * active ticket (without bumping its revision: probing must not break the
 * client's heartbeat compare-and-set) and, after the commit, into the
 * ticket's candidate-index entry.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "sys/crypto.h"
#include "sys/json.h"
#include "sys/log.h"
#include "store/probes.h"
#include "store/tickets.h"
#include "sys/banned.h"

#define NONCE_BYTES 24

/* Reads {region}; answers 422 unknown_region when this process does not serve it. */
static const char *region_param(struct api *api, const struct cc_http_request *req, struct cc_http_response *resp)
{
	const char *region = cc_http_param(req, "region");
	if (!region || !api_region_known(api, region)) {
		cc_http_error(resp, 422, "unknown_region", "this server does not probe that region", false);
		return NULL;
	}
	return region;
}

struct issue_tx {
	const char *hash;
	const char *player_id;
	const char *region;
	int64_t ttl_seconds;
	const char *nonce;
	const char *answer_url; /* added to the challenge: where to answer it */
	struct api_answer answer;
};

/* The challenge row's JSON with "answer_url" added; NULL when out of memory or not an object. */
static char *with_answer_url(const char *json, const char *answer_url)
{
	cJSON *obj = cJSON_Parse(json);
	char *out = NULL;
	if (cJSON_IsObject(obj) && cJSON_AddStringToObject(obj, "answer_url", answer_url))
		out = cJSON_PrintUnformatted(obj);
	cJSON_Delete(obj);
	return out;
}

static int issue_tx_run(struct cc_pg *pg, void *arg)
{
	struct issue_tx *tx = arg;
	char *json = NULL, *body = NULL;
	api_answer_reset(&tx->answer);
	int rc = cc_probe_issue(pg, tx->hash, tx->player_id, tx->region, tx->ttl_seconds, tx->nonce, &json);
	if (rc == 0)
		rc = (body = with_answer_url(json, tx->answer_url)) ? api_answer_body(&tx->answer, 201, body) : CC_ENOMEM;
	cJSON_free(body);
	free(json);
	return rc;
}

int api_probe_challenge(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	struct api *api = ctx;
	struct api_player player;
	struct issue_tx tx = { 0 };
	char nonce[CC_BASE64URL_LEN(NONCE_BYTES) + 1], hash[2 + 64 + 1], answer_url[API_ANSWER_URL_BUF];
	if (!api_rate_address(api, API_RL_PROBE, req, resp))
		return 0;
	struct cc_pg *pg = api_db(api, resp);
	if (!pg)
		return 0;
	if (api_authenticate(api, pg, req, resp, &player) != 0)
		goto out;
	if (!api_rate_player(api, API_RL_PROBE, player.id, resp))
		goto out;
	const char *region = region_param(api, req, resp);
	if (!region)
		goto out;
	if (cc_random_token(nonce, sizeof nonce, NONCE_BYTES) != 0) {
		cc_http_error_unavailable(resp, "unavailable", "could not create a nonce");
		goto out;
	}
	api_secret_hash_param(nonce, hash);
	tx.hash = hash;
	tx.player_id = player.id;
	tx.region = region;
	tx.ttl_seconds = api->cfg->probe_ttl_seconds;
	tx.nonce = nonce;
	api_probe_answer_url(api, region, answer_url);
	tx.answer_url = answer_url;
	api_respond(resp, cc_pg_run_serializable(pg, issue_tx_run, &tx), &tx.answer);
out:
	api_db_release(api, pg);
	return 0;
}

struct answer_tx {
	const char *hash;
	const char *player_id;
	const char *region;
	struct api_answer answer;
	struct cc_ticket_moves moves; /* the ticket's new RTT, for the index after the commit */
};

static int answer_tx_run(struct cc_pg *pg, void *arg)
{
	struct answer_tx *tx = arg;
	struct cc_probe_answer answer;
	char *json = NULL;
	int rc;

	api_answer_reset(&tx->answer);
	cc_ticket_moves_reset(&tx->moves);
	if ((rc = cc_probe_answer(pg, tx->hash, tx->player_id, tx->region, &answer)) != 0)
		goto out;
	switch (answer.outcome) {
	case CC_PROBE_ANSWERED:
		break;
	case CC_PROBE_UNKNOWN:
		api_answer_error(&tx->answer, 404, "unknown_nonce", "no such challenge for this player and region");
		rc = CC_EINVAL;
		goto out;
	case CC_PROBE_USED:
		api_answer_error(&tx->answer, 409, "nonce_already_used", "this challenge was already answered");
		rc = CC_EINVAL;
		goto out;
	case CC_PROBE_EXPIRED:
		api_answer_error(&tx->answer, 422, "nonce_expired", "the challenge expired; request a new one");
		rc = CC_EINVAL;
		goto out;
	}
	if ((rc = cc_region_rtt_store(pg, tx->player_id, tx->region, answer.rtt_ms, &json)) != 0)
		goto out;
	if ((rc = api_answer_body(&tx->answer, 200, json)) != 0)
		goto out;
	rc = cc_ticket_set_rtt(pg, tx->player_id, tx->region, answer.rtt_ms, &tx->moves);
out:
	free(json);
	return rc;
}

const char *const api_probe_answer_fields[] = { "nonce", NULL };

int api_probe_answer_read(const cJSON *body, const char **nonce, struct cc_json_error *err)
{
	return cc_json_get_string(body, "nonce", true, 1, 128, nonce, err);
}

int api_probe_answer(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	static const char *const *const fields = api_probe_answer_fields;
	struct api *api = ctx;
	struct api_player player;
	struct answer_tx tx = { 0 };
	struct cc_json_error err = { 0 };
	char hash[2 + 64 + 1];
	const char *nonce;
	cJSON *body = NULL;
	struct cc_pg *pg = api_db(api, resp);
	if (!pg)
		return 0;
	if (api_authenticate(api, pg, req, resp, &player) != 0)
		goto out;
	const char *region = region_param(api, req, resp);
	if (!region)
		goto out;
	body = api_body_object(req, resp, fields);
	if (!body)
		goto out;
	if (api_probe_answer_read(body, &nonce, &err) != 0) {
		api_bad_field(resp, &err);
		goto out;
	}
	api_secret_hash_param(nonce, hash);
	tx.hash = hash;
	tx.player_id = player.id;
	tx.region = region;
	int rc = cc_pg_run_serializable(pg, answer_tx_run, &tx);
	if (rc == 0)
		cc_log_info("probe_answered", CC_LOG_STR("player_id", player.id), CC_LOG_STR("region", region));
	api_respond(resp, rc, &tx.answer);
	if (rc == 0)
		api_index_apply(api, &tx.moves);
out:
	cJSON_Delete(body);
	api_db_release(api, pg);
	return 0;
}
