/*
 * session.c - POST /v1/session/steam: a verified login ticket becomes a
 * durable session. The ticket is verified by the login function of the
 * binary (Steam in cc-api, a fake in cc-testkit-api); a returning account
 * keeps its player id; a banned account cannot mint a session.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "sys/crypto.h"
#include "sys/json.h"
#include "sys/log.h"
#include "steam.h"
#include "store/players.h"
#include "store/sessions.h"
#include "sys/banned.h"

#define SESSION_TOKEN_BYTES 32

struct login_tx {
	const char *steam_id;
	const char *token;
	const char *token_hash;
	int64_t ttl_seconds;
	struct api_answer answer;
};

static int login_tx_run(struct cc_pg *pg, void *arg)
{
	struct login_tx *tx = arg;
	struct cc_player_status player;
	char *json = NULL;
	int rc;

	api_answer_reset(&tx->answer);
	if ((rc = cc_player_upsert_steam(pg, tx->steam_id, &player)) != 0)
		return rc;
	if (player.banned) {
		api_answer_error(&tx->answer, 403, "banned", "the player is banned until %s", player.banned_until);
		return CC_EFORBIDDEN;
	}
	rc = cc_session_create(pg, player.id, tx->token_hash, tx->ttl_seconds, tx->token, &json);
	if (rc == 0)
		rc = api_answer_body(&tx->answer, 200, json);
	free(json);
	return rc;
}

const char *const api_login_fields[] = { "ticket", NULL };

int api_login_read(const cJSON *body, const char **ticket, struct cc_json_error *err)
{
	return cc_json_get_string(body, "ticket", true, 1, 8192, ticket, err);
}

int api_session_steam(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	static const char *const *const fields = api_login_fields;
	struct api *api = ctx;
	struct cc_json_error err = { 0 };
	struct login_tx tx = { 0 };
	char steam_id[24];
	char token[CC_BASE64URL_LEN(SESSION_TOKEN_BYTES) + 1];
	char token_hash[2 + 64 + 1];
	const char *ticket;
	struct cc_pg *pg = NULL;
	int rc;

	if (!api_rate_address(api, API_RL_LOGIN, req, resp))
		return 0;
	cJSON *body = api_body_object(req, resp, fields);
	if (!body)
		return 0;
	if (api_login_read(body, &ticket, &err) != 0) {
		api_bad_field(resp, &err);
		goto out;
	}
	if (api->login(api->cfg, ticket, steam_id, resp) != 0)
		goto out; /* the login function answered */
	if (!api_rate_player(api, API_RL_LOGIN, steam_id, resp))
		goto out;
	if (cc_random_token(token, sizeof token, SESSION_TOKEN_BYTES) != 0) {
		cc_http_error_unavailable(resp, "unavailable", "could not create a session token");
		goto out;
	}
	api_secret_hash_param(token, token_hash);
	pg = api_db(api, resp);
	if (!pg)
		goto out;
	tx.steam_id = steam_id;
	tx.token = token;
	tx.token_hash = token_hash;
	tx.ttl_seconds = api->cfg->session_ttl_seconds;
	rc = cc_pg_run_serializable(pg, login_tx_run, &tx);
	if (rc == 0)
		cc_log_info("session_created", CC_LOG_STR("steam_id", steam_id));
	api_respond(resp, rc, &tx.answer);
out:
	api_db_release(api, pg);
	cJSON_Delete(body);
	return 0;
}

/* Production login: Steam's AuthenticateUserTicket, outcomes per SPEC 3. */
int api_steam_login(const struct api_config *cfg, const char *ticket, char steam_id[24],
		    struct cc_http_response *resp)
{
	struct steam_config sc = {
		.base_url = cfg->steam_api_url,
		.app_id = cfg->steam_app_id,
		.publisher_key = cfg->steam_publisher_key,
		.timeout_ms = cfg->steam_timeout_ms,
		.reject_vac_banned = cfg->steam_reject_vac_banned,
		.reject_publisher_banned = cfg->steam_reject_publisher_banned,
	};
	struct steam_identity id = { 0 };
	enum steam_outcome outcome = STEAM_UNAVAILABLE;

	if (steam_authenticate(&sc, ticket, &id, &outcome) != 0)
		outcome = STEAM_UNAVAILABLE;
	switch (outcome) {
	case STEAM_OK:
		snprintf(steam_id, 24, "%s", id.steamid);
		return 0;
	case STEAM_MALFORMED_TICKET:
		cc_http_error(resp, 400, "invalid_request", "the ticket must be 2-4096 hex digits", false);
		break;
	case STEAM_INVALID_TICKET:
		cc_http_error(resp, 401, "invalid_ticket", "Steam refused the ticket (invalid, expired or for another app)", false);
		break;
	case STEAM_FAMILY_SHARED:
		cc_http_error(resp, 403, "family_shared", "family-shared copies cannot play online", false);
		break;
	case STEAM_VAC_BANNED:
		cc_http_error(resp, 403, "vac_banned", "the account is VAC-banned", false);
		break;
	case STEAM_PUBLISHER_BANNED:
		cc_http_error(resp, 403, "publisher_banned", "the account is banned by the publisher", false);
		break;
	case STEAM_NOT_CONFIGURED:
		cc_http_error_unavailable(resp, "not_configured", "Steam login is not configured on this server");
		break;
	case STEAM_UNAVAILABLE:
	default:
		cc_http_error_unavailable(resp, "steam_unavailable", "Steam could not verify the ticket; retry shortly");
		break;
	}
	return CC_EUNAUTHORIZED;
}
