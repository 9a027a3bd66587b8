#include "game/playlist.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sys/charset.h"
#include "sys/banned.h"

/*
 * The playlists (SPEC 6). Adding one here is all it takes (playlist.h):
 * the services insert its `playlists` row at start-up.
 *
 * ranked's tolerance (50 rating points, +5 per second of the anchor's wait,
 * at most 600) was chosen with tests/bench/queue_sim.c (scripts/queue-sim.sh),
 * which reports it as "the defaults"; see README.
 */
static const struct cc_playlist playlists[] = {
	{ .name = "casual",
	  .team_size = 3,
	  .ranked = false,
	  .arenas = CC_PLAYLIST_ARENAS_ALL,
	  .requeue_on_server_loss = false,
	  .max_party_size = 3,
	  .backfill = true,
	  .backfill_cutoff_seconds = 60 },
	{ .name = "ranked",
	  .team_size = 1,
	  .ranked = true,
	  .tolerance_start = 50,
	  .tolerance_growth_per_s = 5,
	  .tolerance_cap = 600,
	  .arenas = CC_PLAYLIST_ARENAS_RANKED_ELIGIBLE,
	  .profile = true,
	  .requeue_on_server_loss = false,
	  .max_party_size = 1 },
/*
 * A test build appends entries here: tests/integration/third_playlist.h
 * defines this to one more initializer (the Makefile compiles this file
 * once more with it for build/third-playlist/), so the test adds a
 * playlist exactly as a developer would, in this list and nowhere else.
 */
#ifdef CC_PLAYLISTS_TEST_ENTRIES
	CC_PLAYLISTS_TEST_ENTRIES
#endif
};

const struct cc_playlist *cc_playlists(size_t *n)
{
	*n = CC_ARRAY_LEN(playlists);
	return playlists;
}

const struct cc_playlist *cc_playlist_find(const char *name)
{
	for (size_t i = 0; name && i < CC_ARRAY_LEN(playlists); i++)
		if (strcmp(playlists[i].name, name) == 0)
			return &playlists[i];
	return NULL;
}

const struct cc_playlist *cc_playlist_profile(void)
{
	const struct cc_playlist *found = NULL;
	for (size_t i = 0; i < CC_ARRAY_LEN(playlists); i++) {
		if (!playlists[i].profile)
			continue;
		if (found)
			return NULL; /* two: invalid, cc_playlists_check says so */
		found = &playlists[i];
	}
	return found;
}

bool cc_playlist_name_valid(const char *name)
{
	return cc_charset_valid(name, CC_PLAYLIST_NAME_MAX, CC_CHARSET_LOWER | CC_CHARSET_DIGIT, "_") &&
	       cc_charset_has(name[0], CC_CHARSET_LOWER, NULL);
}

/* Checks one entry; 0 or CC_EINVAL with why. */
static int check_one(const struct cc_playlist *pl, char *why, size_t whylen)
{
	if (!cc_playlist_name_valid(pl->name)) {
		snprintf(why, whylen, "playlist name '%.40s' is not [a-z][a-z0-9_]{0,31}", pl->name ? pl->name : "(null)");
		return CC_EINVAL;
	}
	if (pl->team_size < 1 || pl->team_size > CC_FORMATION_MAX_TEAM_SIZE) {
		snprintf(why, whylen, "playlist '%s': team_size %d is outside 1..%d", pl->name, pl->team_size,
			 CC_FORMATION_MAX_TEAM_SIZE);
		return CC_EINVAL;
	}
	double t[3] = { pl->tolerance_start, pl->tolerance_growth_per_s, pl->tolerance_cap };
	for (size_t k = 0; k < 3; k++) {
		if (!isfinite(t[k]) || t[k] < 0 || (!pl->ranked && t[k] != 0)) {
			snprintf(why, whylen, "playlist '%s': tolerances must be finite and >= 0, and 0 unless ranked",
				 pl->name);
			return CC_EINVAL;
		}
	}
	if (pl->tolerance_cap < pl->tolerance_start) {
		snprintf(why, whylen, "playlist '%s': tolerance_cap %g is below tolerance_start %g", pl->name,
			 pl->tolerance_cap, pl->tolerance_start);
		return CC_EINVAL;
	}
	if (!cc_playlist_arenas_name(pl->arenas)) {
		snprintf(why, whylen, "playlist '%s': arena rule %d is not one of the enum", pl->name, (int)pl->arenas);
		return CC_EINVAL;
	}
	if (pl->max_party_size < 0 || pl->max_party_size > pl->team_size) {
		snprintf(why, whylen, "playlist '%s': max_party_size %d is outside 0..team_size %d", pl->name,
			 pl->max_party_size, pl->team_size);
		return CC_EINVAL;
	}
	if ((pl->backfill && pl->ranked) || pl->backfill_cutoff_seconds < 0 || pl->backfill_cutoff_seconds > 3600) {
		snprintf(why, whylen, "playlist '%s': backfill is for unranked playlists, with a cut-off of 0..3600 s", pl->name);
		return CC_EINVAL;
	}
	if (pl->profile && !pl->ranked) {
		snprintf(why, whylen, "playlist '%s': the profile playlist must be ranked", pl->name);
		return CC_EINVAL;
	}
	return 0;
}

int cc_playlist_list_check(const struct cc_playlist *list, size_t n, char *why, size_t whylen)
{
	size_t profiles = 0;
	if (!list || n == 0) {
		snprintf(why, whylen, "no playlists");
		return CC_EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		if (check_one(&list[i], why, whylen) != 0)
			return CC_EINVAL;
		for (size_t j = 0; j < i; j++) {
			if (strcmp(list[i].name, list[j].name) == 0) {
				snprintf(why, whylen, "playlist '%s' is defined twice", list[i].name);
				return CC_EINVAL;
			}
		}
		profiles += list[i].profile;
	}
	if (profiles != 1) {
		snprintf(why, whylen, "%zu playlists are marked profile; exactly one must be", profiles);
		return CC_EINVAL;
	}
	return 0;
}

int cc_playlists_check(char *why, size_t whylen)
{
	return cc_playlist_list_check(playlists, CC_ARRAY_LEN(playlists), why, whylen);
}

const char *cc_playlist_arenas_name(enum cc_playlist_arenas a)
{
	switch (a) {
	case CC_PLAYLIST_ARENAS_ALL:
		return "all";
	case CC_PLAYLIST_ARENAS_RANKED_ELIGIBLE:
		return "ranked_eligible";
	}
	return NULL;
}

int cc_playlist_arenas_parse(const char *s, enum cc_playlist_arenas *out)
{
	static const enum cc_playlist_arenas all[] = { CC_PLAYLIST_ARENAS_ALL, CC_PLAYLIST_ARENAS_RANKED_ELIGIBLE };
	for (size_t i = 0; s && i < CC_ARRAY_LEN(all); i++) {
		if (strcmp(s, cc_playlist_arenas_name(all[i])) == 0) {
			*out = all[i];
			return 0;
		}
	}
	return CC_EINVAL;
}

bool cc_playlist_arena_allowed(const struct cc_playlist *pl, const struct cc_arena *a)
{
	if (!pl || !a)
		return false;
	return pl->arenas == CC_PLAYLIST_ARENAS_ALL || a->ranked_eligible;
}

size_t cc_playlist_names(char *buf, size_t len, const char *sep)
{
	size_t need = 0;
	if (len > 0)
		buf[0] = '\0';
	for (size_t i = 0; i < CC_ARRAY_LEN(playlists); i++) {
		int w = snprintf(need < len ? buf + need : NULL, need < len ? len - need : 0, "%s%s", i ? sep : "",
				 playlists[i].name);
		need += w > 0 ? (size_t)w : 0;
	}
	return need;
}

void cc_playlist_formation_params(const struct cc_playlist *pl, struct cc_formation_params *out)
{
	*out = (struct cc_formation_params){
		.team_size = pl->team_size,
		.ranked = pl->ranked,
		.tolerance_start = pl->tolerance_start,
		.tolerance_growth_per_s = pl->tolerance_growth_per_s,
		.tolerance_cap = pl->tolerance_cap,
		.max_rtt_ms = CC_FORMATION_DEFAULT_MAX_RTT_MS,
	};
}
