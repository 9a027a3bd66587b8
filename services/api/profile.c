/*
 * profile.c - GET /v1/profile/ranked: the player's ranked rating, tier and
 * provisional status; 404 until the player has a ranked rating row. The
 * same RankedProfile body is the rating of the operator's player view.
 * "Ranked" is the rating of the playlist marked profile (game/playlist.c).
 * season_end is the end of the season running now (the seasons table that
 * cc-maintenance's season sweep keeps), null when none is.
 */
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "api.h"
#include "game/tiers.h"
#include "store/ratings.h"
#include "store/seasons.h"
#include "sys/banned.h"

cJSON *api_ranked_profile(const struct api *api, double rating, double deviation, long ranked_games,
			  const char *season_end)
{
	const struct cc_tier_band *bands = atomic_load(&((struct api *)api)->tier_bands);
	size_t n_bands = api->n_tier_bands;
	if (!bands) /* not loaded yet: the caller answers 503 */
		return NULL;
	cJSON *out = cJSON_CreateObject();
	if (!out)
		return NULL;
	if (!cJSON_AddNumberToObject(out, "rating", rating) || !cJSON_AddNumberToObject(out, "deviation", deviation) ||
	    !cJSON_AddStringToObject(out, "tier", cc_tier_for(bands, n_bands, rating, ranked_games)) ||
	    !cJSON_AddBoolToObject(out, "provisional", ranked_games < CC_TIER_PROVISIONAL_GAMES) ||
	    !cJSON_AddNumberToObject(out, "ranked_games", (double)ranked_games) ||
	    !(season_end && *season_end ? cJSON_AddStringToObject(out, "season_end", season_end)
					: cJSON_AddNullToObject(out, "season_end"))) {
		cJSON_Delete(out);
		return NULL;
	}
	return out;
}

int api_profile_ranked(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	struct api *api = ctx;
	struct api_player player;
	struct cc_rating r;
	struct cc_season season;
	struct cc_pg *pg = api_db(api, resp);
	if (!pg)
		return 0;
	if (api_authenticate(api, pg, req, resp, &player) != 0)
		goto out;
	int rc = cc_rating_profile_get(pg, player.id, &r);
	if (rc == CC_ENOTFOUND) {
		cc_http_error(resp, 404, "no_rating", "the player has no ranked rating yet", false);
		goto out;
	}
	/* The season cc-maintenance keeps (store/seasons.h); none running: null. */
	if (rc == 0)
		rc = cc_season_current(pg, &season);
	if (rc != 0) {
		cc_http_error_unavailable(resp, "unavailable", "the database is unavailable; retry shortly");
		goto out;
	}
	if (!atomic_load(&api->tier_bands)) { /* start-up has not read tier_bands yet */
		cc_http_error_unavailable(resp, "unavailable", "tier bands are not loaded yet; retry shortly");
		goto out;
	}
	/* A NULL profile (out of memory) is answered 503 by cc_http_respond_json. */
	cc_http_respond_json(resp, 200, api_ranked_profile(api, r.rating, r.deviation, r.games, season.ends_at));
out:
	api_db_release(api, pg);
	return 0;
}
