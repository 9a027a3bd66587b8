/*
 * matches.c - the player's match routes (player session).
 *
 * GET /v1/matches/{match_id} (issue 20): the one read a post-match screen
 * needs (MatchSummary in contracts/v1/openapi.json): state, end reason,
 * times, the teams with each participant, the result once it is in, and in
 * a ranked match each rated participant's rating and deviation before and
 * after. A casual match shows no rating at all (its rating is hidden). The
 * SQL is store/match_summary.h (one statement, one snapshot).
 *
 * GET /v1/matches/{match_id}/assignment: where to connect and the join
 * token (store/server_routes.h, cc_player_assignment_get).
 *
 * Only the match's participants may read either; anyone else gets the same
 * 404 as for a match that does not exist, so a route tells a stranger
 * nothing.
 */
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "store/match_summary.h"
#include "store/server_routes.h"
#include "sys/crypto.h"
#include "sys/banned.h"

/*
 * What both match routes do first: a lowercase-UUID match_id (400
 * invalid_request), a database connection, the caller's session. Returns
 * the connection (release it with api_db_release) with *player and
 * *match_id set, or NULL when resp already holds the answer.
 */
static struct cc_pg *match_caller(struct api *api, const struct cc_http_request *req, struct cc_http_response *resp,
				  struct api_player *player, const char **match_id)
{
	const char *id = cc_http_param(req, "match_id");
	if (!id || !cc_uuid_valid(id)) {
		cc_http_error(resp, 400, "invalid_request", "match_id must be a lowercase UUID", false);
		return NULL;
	}
	struct cc_pg *pg = api_db(api, resp);
	if (!pg)
		return NULL;
	if (api_authenticate(api, pg, req, resp, player) != 0) {
		api_db_release(api, pg);
		return NULL;
	}
	*match_id = id;
	return pg;
}

int api_match_get(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	struct api *api = ctx;
	struct api_player player;
	const char *id;
	char *json = NULL;
	struct cc_pg *pg = match_caller(api, req, resp, &player, &id);
	if (!pg)
		return 0;
	int rc = cc_match_summary_get(pg, id, player.id, &json);
	if (rc == CC_ENOTFOUND)
		cc_http_error(resp, 404, "not_found", "no such match for this player", false);
	else if (rc != 0)
		cc_http_error_unavailable(resp, "unavailable", "the database is unavailable; retry shortly");
	else if (cc_http_respond_text(resp, 200, "application/json", json, strlen(json)) != 0)
		cc_http_error_unavailable(resp, "out_of_memory", "out of memory");
	free(json);
	api_db_release(api, pg);
	return 0;
}

/* ---- GET /v1/matches/{match_id}/assignment ------------------------------------- */

int api_match_assignment(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	struct api *api = ctx;
	struct api_player player;
	const char *id;
	enum cc_player_assignment_status status = CC_ASSIGNMENT_NOT_PARTICIPANT;
	char *json = NULL;
	struct cc_pg *pg = match_caller(api, req, resp, &player, &id);
	if (!pg)
		return 0;
	int rc = cc_player_assignment_get(pg, id, player.id, &status, &json);
	if (rc != 0)
		cc_http_error_unavailable(resp, "unavailable", "the database is unavailable; retry shortly");
	else if (status == CC_ASSIGNMENT_NOT_PARTICIPANT)
		cc_http_error(resp, 404, "not_found", "no such match for this player", false);
	else if (status == CC_ASSIGNMENT_PENDING)
		cc_http_error(resp, 409, "assignment_pending", "the match's server is not ready yet; retry shortly", true);
	else if (status == CC_ASSIGNMENT_CLOSED)
		cc_http_error(resp, 409, "match_closed", "the match is over", false);
	else if (cc_http_respond_text(resp, 200, "application/json", json, strlen(json)) != 0)
		cc_http_error_unavailable(resp, "out_of_memory", "out of memory");
	free(json);
	api_db_release(api, pg);
	return 0;
}
