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
#include "store/tickets.h"
#include "sys/banned.h"

#define NONCE_BYTES 24

static const char sql_issue[] =
	"INSERT INTO probe_challenges (nonce_hash, player_id, region, issued_at, expires_at) "
	"VALUES ($1, $2, $3, clock_timestamp(), clock_timestamp() + make_interval(secs => $4::int)) "
	"RETURNING json_build_object('nonce', $5::text, 'region', region, "
	"  'issued_at', " API_TS("issued_at") ", 'expires_at', " API_TS("expires_at") ")::text";

/* Consumes the nonce if it is this player's, for this region, unused and unexpired. */
static const char sql_answer[] =
	"UPDATE probe_challenges SET answered_at = clock_timestamp() "
	"WHERE nonce_hash = $1 AND player_id = $2 AND region = $3 "
	"  AND answered_at IS NULL AND expires_at > clock_timestamp() "
	"RETURNING round((extract(epoch FROM answered_at - issued_at) * 1000)::numeric, 3)::float8";

/* Why the nonce was refused: foreign and unknown look the same to the caller. */
static const char sql_nonce_state[] =
	"SELECT answered_at IS NOT NULL, expires_at <= clock_timestamp() FROM probe_challenges "
	"WHERE nonce_hash = $1 AND player_id = $2 AND region = $3";

static const char sql_store_rtt[] =
	"INSERT INTO region_rtts (player_id, region, rtt_ms, measured_at) VALUES ($1, $2, $3::float8, now()) "
	"ON CONFLICT (player_id, region) DO UPDATE SET rtt_ms = EXCLUDED.rtt_ms, measured_at = now() "
	"RETURNING json_build_object('region', region, 'rtt_ms', rtt_ms, "
	"  'measured_at', " API_TS("measured_at") ")::text";

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
	const char *params[5];
	struct api_answer answer;
};

static int issue_tx_run(struct cc_pg *pg, void *arg)
{
	struct issue_tx *tx = arg;
	PGresult *res = NULL;
	api_answer_reset(&tx->answer);
	int rc = api_query_row(pg, sql_issue, 5, tx->params, &res);
	if (rc == 0)
		rc = api_answer_body(&tx->answer, 201, PQgetvalue(res, 0, 0));
	PQclear(res);
	return rc;
}

int api_probe_challenge(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	struct api *api = ctx;
	struct api_player player;
	struct issue_tx tx = { 0 };
	char nonce[CC_BASE64URL_LEN(NONCE_BYTES) + 1], hash[2 + 64 + 1], ttl[24];
	struct cc_pg *pg = api_db(api, resp);
	if (!pg)
		return 0;
	if (api_authenticate(api, pg, req, resp, &player) != 0)
		goto out;
	const char *region = region_param(api, req, resp);
	if (!region)
		goto out;
	if (cc_random_token(nonce, sizeof nonce, NONCE_BYTES) != 0) {
		cc_http_error_unavailable(resp, "unavailable", "could not create a nonce");
		goto out;
	}
	api_secret_hash_param(nonce, hash);
	snprintf(ttl, sizeof ttl, "%lld", (long long)api->cfg->probe_ttl_seconds);
	tx.params[0] = hash;
	tx.params[1] = player.id;
	tx.params[2] = region;
	tx.params[3] = ttl;
	tx.params[4] = nonce;
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
	PGresult *res = NULL;
	char rtt[40];
	double rtt_ms;
	int rc;

	api_answer_reset(&tx->answer);
	cc_ticket_moves_reset(&tx->moves);
	const char *p[] = { tx->hash, tx->player_id, tx->region };
	if ((rc = cc_pg_exec(pg, sql_answer, 3, p, &res)) != 0)
		goto out;
	if (PQntuples(res) == 0) {
		PQclear(res);
		res = NULL;
		if ((rc = cc_pg_exec(pg, sql_nonce_state, 3, p, &res)) != 0)
			goto out;
		if (PQntuples(res) == 0)
			api_answer_error(&tx->answer, 404, "unknown_nonce", "no such challenge for this player and region");
		else if (strcmp(PQgetvalue(res, 0, 0), "t") == 0)
			api_answer_error(&tx->answer, 409, "nonce_already_used", "this challenge was already answered");
		else
			api_answer_error(&tx->answer, 422, "nonce_expired", "the challenge expired; request a new one");
		rc = CC_EINVAL;
		goto out;
	}
	snprintf(rtt, sizeof rtt, "%s", PQgetvalue(res, 0, 0));
	rtt_ms = strtod(rtt, NULL);
	PQclear(res);
	res = NULL;
	const char *ps[] = { tx->player_id, tx->region, rtt };
	if ((rc = api_query_row(pg, sql_store_rtt, 3, ps, &res)) != 0)
		goto out;
	if ((rc = api_answer_body(&tx->answer, 200, PQgetvalue(res, 0, 0))) != 0)
		goto out;
	PQclear(res);
	res = NULL;
	rc = cc_ticket_set_rtt(pg, tx->player_id, tx->region, rtt_ms, &tx->moves);
out:
	PQclear(res);
	return rc;
}

int api_probe_answer(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	static const char *const fields[] = { "nonce", NULL };
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
	if (cc_json_get_string(body, "nonce", true, 1, 128, &nonce, &err) != 0) {
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
