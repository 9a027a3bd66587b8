/*
 * matches.c - GET /v1/matches/{match_id} (player session, issue 20): the
 * one read a post-match screen needs (MatchSummary in
 * contracts/v1/openapi.json): state, end reason, times, the teams with
 * each participant, the result once it is in, and in a ranked match each
 * rated participant's rating and deviation before and after. A casual
 * match shows no rating at all (its rating is hidden).
 *
 * Only the match's participants may read it; anyone else gets the same
 * 404 as for a match that does not exist, so the route tells a stranger
 * nothing. The SQL is store/match_summary.h (one statement, one snapshot).
 */
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "store/match_summary.h"
#include "sys/crypto.h"
#include "sys/banned.h"

int api_match_get(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	struct api *api = ctx;
	struct api_player player;
	char *json = NULL;
	const char *id = cc_http_param(req, "match_id");
	if (!id || !cc_uuid_valid(id)) {
		cc_http_error(resp, 400, "invalid_request", "match_id must be a lowercase UUID", false);
		return 0;
	}
	struct cc_pg *pg = api_db(api, resp);
	if (!pg)
		return 0;
	if (api_authenticate(api, pg, req, resp, &player) != 0)
		goto out;
	int rc = cc_match_summary_get(pg, id, player.id, &json);
	if (rc == CC_ENOTFOUND)
		cc_http_error(resp, 404, "not_found", "no such match for this player", false);
	else if (rc != 0)
		cc_http_error_unavailable(resp, "unavailable", "the database is unavailable; retry shortly");
	else if (cc_http_respond_text(resp, 200, "application/json", json, strlen(json)) != 0)
		cc_http_error_unavailable(resp, "out_of_memory", "out of memory");
out:
	free(json);
	api_db_release(api, pg);
	return 0;
}
