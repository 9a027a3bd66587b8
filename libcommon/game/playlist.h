/*
 * playlist.h - playlists (SPEC 6): what a queue is. Pure: no I/O.
 *
 * The one definition of every playlist is the list in playlist.c: its
 * name, team size, whether it is ranked, the rating tolerance a ranked
 * matcher starts from, and which arenas its proposals may get. Everything
 * else follows from that list:
 *   - cc-api accepts exactly these names in POST /v1/queue;
 *   - cc-matcher --playlist=NAME takes its team size and tolerance
 *     defaults from the entry (its flags may still override them);
 *   - cc-api and cc-matcher insert every listed playlist the `playlists`
 *     table lacks at start-up (store/playlists.h). The playlist columns of
 *     tickets, ratings, proposals and matches are foreign keys to that
 *     table, and the SQL functions read the arena rule from it.
 * So adding a playlist is adding one entry (tests/integration/third_playlist.sh
 * proves it). Changing an existing entry also takes a migration: the
 * services never overwrite a row, and one that differs from its entry keeps
 * them from serving (see store/playlists.h for why).
 *
 * Ownership: every pointer returned here is into the static list; nothing
 * is allocated and nothing needs freeing.
 */
#ifndef CC_GAME_PLAYLIST_H
#define CC_GAME_PLAYLIST_H

#include <stdbool.h>
#include <stddef.h>

#include "game/arenas.h"
#include "game/formation.h"
#include "sys/cc.h"

#define CC_PLAYLIST_NAME_MAX 32                   /* bytes of a playlist name */
#define CC_PLAYLIST_BUF (CC_PLAYLIST_NAME_MAX + 1) /* a buffer that holds any playlist name */

/* Which arenas a playlist's proposals may be given (SPEC 6). */
enum cc_playlist_arenas {
	CC_PLAYLIST_ARENAS_ALL,             /* "all": every arena */
	CC_PLAYLIST_ARENAS_RANKED_ELIGIBLE, /* "ranked_eligible": only arenas marked ranked_eligible */
};

struct cc_playlist {
	const char *name;              /* [a-z][a-z0-9_]{0,31}: the wire, database and Redis name */
	int team_size;                 /* players per team, 1..CC_FORMATION_MAX_TEAM_SIZE (cc-matcher's default) */
	bool ranked;                   /* candidates must lie inside the anchor's rating tolerance */
	double tolerance_start;        /* rating points allowed at zero wait (0 unless ranked) */
	double tolerance_growth_per_s; /* added per second the anchor waits (0 unless ranked) */
	double tolerance_cap;          /* the tolerance never exceeds this (>= start; 0 unless ranked) */
	enum cc_playlist_arenas arenas; /* the arena rule */
	bool profile;                  /* its rating is the one GET /v1/profile/ranked shows (exactly one, ranked) */
	/*
	 * When a match's game server is lost (it stopped reporting, or a
	 * restarted supervisor found the match already in progress), its
	 * players' tickets go back to the queue (true) or end FAILED (false:
	 * the player queues again himself). Compiled only: no database column.
	 * False for casual and ranked: a server lost mid-match is usually
	 * noticed long after the players left it, and a ticket requeued for
	 * someone no longer watching would hold live players in a proposal
	 * (store/match_settle.h, cc_match_settle_server_lost).
	 */
	bool requeue_on_server_loss;
	/*
	 * The most players one party may queue with (issue 26; 0 or 1 =
	 * solo only), at most team_size: a party sits on one team
	 * (game/party.h, cc_party_cap).
	 * Compiled only, like requeue_on_server_loss: no database column.
	 */
	int max_party_size;
	/*
	 * Backfill (SPEC 9, issue 26; compiled only): a human slot vacated
	 * for good is offered to a queued ticket (store/backfill.h) when
	 * backfill is true (never for a ranked playlist: the check refuses
	 * it), unless fewer than backfill_cutoff_seconds of play remain:
	 * for every offer of the vacancy, the first and each one passed on
	 * after a decline or an expiry (offer_until, migration 0023).
	 */
	bool backfill;
	int backfill_cutoff_seconds; /* 0..3600 */
};

/* Every playlist in definition order; *n receives the count. Never NULL. */
const struct cc_playlist *cc_playlists(size_t *n);

/* The playlist named name (exact, case-sensitive), or NULL (also for NULL). */
const struct cc_playlist *cc_playlist_find(const char *name);

/*
 * The playlist whose rating is the player's ranked profile (SPEC 9), or
 * NULL when the list is invalid (cc_playlists_check says why).
 */
const struct cc_playlist *cc_playlist_profile(void);

/* True when name is a well-formed playlist name: [a-z][a-z0-9_]{0,31}. */
bool cc_playlist_name_valid(const char *name);

/*
 * Checks a list of playlists: names well-formed and distinct, team sizes in
 * range, tolerances finite, >= 0 and cap >= start, zero unless ranked, an
 * arena rule from the enum, and exactly one profile playlist, which is
 * ranked. Returns 0, or CC_EINVAL with why naming the first problem
 * ("playlist 'duo': team_size 9 is outside 1..8").
 */
CC_MUST_CHECK int cc_playlist_list_check(const struct cc_playlist *list, size_t n, char *why, size_t whylen);

/* cc_playlist_list_check over the compiled list: services call it at start-up. */
CC_MUST_CHECK int cc_playlists_check(char *why, size_t whylen);

/* "all" / "ranked_eligible" (the database's spelling), or NULL for a value outside the enum. */
const char *cc_playlist_arenas_name(enum cc_playlist_arenas a);

/* Parses the database's spelling: 0, or CC_EINVAL (*out untouched). */
CC_MUST_CHECK int cc_playlist_arenas_parse(const char *s, enum cc_playlist_arenas *out);

/* Whether a proposal of playlist pl may be played in arena a (NULL: false). */
bool cc_playlist_arena_allowed(const struct cc_playlist *pl, const struct cc_arena *a);

/*
 * Writes the names, in definition order, separated by sep, into buf (always
 * NUL-terminated when len > 0; cut short when it does not fit), for
 * messages and --help. Returns the length the full text needs, as snprintf.
 */
size_t cc_playlist_names(char *buf, size_t len, const char *sep);

/*
 * Formation parameters from pl's definition: its team size, ranked flag and
 * tolerances, and SPEC 6's RTT limit. A caller may override fields after.
 */
void cc_playlist_formation_params(const struct cc_playlist *pl, struct cc_formation_params *out);

#endif
