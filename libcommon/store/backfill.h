/*
 * backfill.h - the one owner of the backfill_offers table (migration 0021;
 * SPEC 9, issue 26): casual backfill of a human slot vacated for good.
 *
 * A vacancy is (match, slot, generation): the slot's current assignment,
 * whose player's reservation lapsed on the game server. It is offered to
 * one ticket at a time, the oldest QUEUED ticket that meets the rules
 * (struct cc_backfill_rules; ties by ticket id); the offer is OPEN for the
 * window, then the player accepts, declines (no penalty) or lets it
 * expire. A decline or an expiry offers the vacancy to the next ticket
 * (one never offered this vacancy). The playlist's cut-off holds for every
 * offer (migration 0023): the vacated report sets the vacancy's
 * offer_until (now() + remaining play - cut-off), every pass-on carries
 * it over, and no offer is made after it ("last minute"; an offer made
 * before it is still answered within its window). The races are fenced in SQL by the
 * table's partial unique indexes: one live (OPEN or ACCEPTED) offer per
 * vacancy, so two vacated reports make one offer and at most one accept
 * ever seats anybody; one OPEN offer per ticket; and every response and
 * the expiry are decided under the offer's row lock with PostgreSQL's
 * clock (an accept at or after expires_at is an expiry).
 *
 * The accept itself (the ticket QUEUED -> ASSIGNED, the newcomer's
 * match_players row, its assignment and the new roster) is composed by
 * cc-api (services/api/backfill.c) from the owners of those tables,
 * because the join token is signed in C; cc_backfill_settle() records the
 * offer's outcome in the same transaction.
 *
 * Every function runs inside the caller's (SERIALIZABLE) transaction. The
 * structs are plain values; *_view JSON is malloc'd for the caller to free.
 */
#ifndef CC_STORE_BACKFILL_H
#define CC_STORE_BACKFILL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sys/cc.h"
#include "sys/pg.h"

#define CC_BACKFILL_STATE_BUF 16

struct cc_backfill_offer {
	char id[CC_UUID_BUF];
	char match_id[CC_UUID_BUF];
	int slot;
	int team;
	int32_t generation; /* the vacated assignment's; the accept seats generation + 1 */
	char vacated_player_id[CC_UUID_BUF];
	char ticket_id[CC_UUID_BUF];
	char player_id[CC_UUID_BUF];
	char state[CC_BACKFILL_STATE_BUF]; /* OPEN, ACCEPTED, DECLINED, EXPIRED */
	int64_t revision;
	bool overdue; /* OPEN and now() >= expires_at (as read) */
	int64_t now_unix; /* PostgreSQL's now() when read (seconds): the clock new join tokens expire by */
};

/* Who may be offered a vacancy of a match (the match's own build, protocol and region). */
struct cc_backfill_rules {
	int window_seconds;   /* the offer's window: 1..3600 (SPEC 9: 10) */
	double max_rtt_ms;    /* the ticket's predicted RTT to the match's region must not exceed it (SPEC 6) */
	bool tolerance;       /* apply a rating tolerance around the match's mean (false: casual has none) */
	double tolerance_start, tolerance_growth_per_s, tolerance_cap; /* as game/formation.h, by the ticket's wait */
};

/*
 * The vacated report of slot (player_id at generation) in match_id: the
 * slot's current assignment must be that player at that generation (else
 * *current false: a stale or misdirected report). *team receives the
 * slot's team. When the vacancy already has a live offer (a second
 * report), *out receives it and *live is true.
 */
int cc_backfill_vacancy(struct cc_pg *pg, const char *match_id, int slot, const char *player_id, int32_t generation,
			bool *current, int *team, bool *live, struct cc_backfill_offer *out) CC_MUST_CHECK;

/* What cc_backfill_offer_next did. */
enum cc_backfill_outcome {
	CC_BACKFILL_OFFERED,      /* a new OPEN offer (*out) */
	CC_BACKFILL_NO_CANDIDATE, /* no ticket qualifies: the bot keeps the slot */
	CC_BACKFILL_LAST_MINUTE,  /* past the vacancy's offer_until: offered to nobody */
};

/* "offered", "no_candidate", "last_minute" (the vacated route's outcomes). */
const char *cc_backfill_outcome_name(enum cc_backfill_outcome o);

/*
 * Offers the vacancy to the next ticket (see the top) and announces
 * "backfill.offered" to its player, unless the vacancy is past its
 * offer_until (PostgreSQL's now()).
 *
 * offer_for_seconds: the vacated report's remaining play minus the
 * playlist's cut-off (-3600..86400; negative: already in the last
 * minute), which sets offer_until = now() + offer_for_seconds for this
 * offer. NULL: a pass-on after a decline or an expiry, which carries
 * over the offer_until of the vacancy's latest offer (none: nobody is
 * offered, CC_BACKFILL_LAST_MINUTE).
 *
 * Returns 0 with *outcome (*out set when CC_BACKFILL_OFFERED),
 * CC_ESERIALIZATION when a ticket qualified but a concurrent report made
 * the live offer first (the retry sees it), CC_EINVAL for bad arguments,
 * or a database error.
 */
int cc_backfill_offer_next(struct cc_pg *pg, const char *match_id, int slot, int team, int32_t generation,
			   const char *vacated_player_id, const struct cc_backfill_rules *rules,
			   const int64_t *offer_for_seconds, enum cc_backfill_outcome *outcome,
			   struct cc_backfill_offer *out) CC_MUST_CHECK;

/*
 * Locks offer_id for player_id (another player's offer is CC_ENOTFOUND):
 * its match's row first (FOR UPDATE), then the offer's, the order of the
 * vacated report, which locks the match and then expires the offer
 * (store/README.md "Lock order (matches and backfill offers)"). Returns 0
 * with *out (out->overdue says whether the window has passed).
 */
int cc_backfill_lock(struct cc_pg *pg, const char *offer_id, const char *player_id,
		     struct cc_backfill_offer *out) CC_MUST_CHECK;

/* Reads offer_id for player_id without a lock (CC_ENOTFOUND as cc_backfill_lock). */
int cc_backfill_get(struct cc_pg *pg, const char *offer_id, const char *player_id,
		    struct cc_backfill_offer *out) CC_MUST_CHECK;

/*
 * OPEN -> state (ACCEPTED, DECLINED or EXPIRED), revision + 1, under the
 * lock cc_backfill_lock took. Returns 0 (o updated), CC_ESTATE when the
 * offer is no longer OPEN, CC_EINVAL for another state.
 */
int cc_backfill_settle(struct cc_pg *pg, struct cc_backfill_offer *o, const char *state) CC_MUST_CHECK;

/* The contract's BackfillOffer object of offer_id (malloc'd JSON text). CC_ENOTFOUND. */
int cc_backfill_view(struct cc_pg *pg, const char *offer_id, char **json) CC_MUST_CHECK;

#endif
