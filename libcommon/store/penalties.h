/*
 * penalties.h - records matchmaking penalties (SPEC 7); the rules (kinds,
 * base cooldowns, escalation) are game/penalty_policy.h.
 *
 * A penalty blocks queueing until its cooldown ends. Infrastructure faults
 * never penalise players: callers record penalties only for a player's own
 * act.
 *
 * Exactly-once: (player_id, kind, source_id) is unique in the database, so
 * many requests racing to record the same penalty (e.g. eight readers
 * expiring one proposal) leave exactly one row.
 */
#ifndef CC_PENALTIES_H
#define CC_PENALTIES_H

#include <stdbool.h>
#include <stddef.h>

#include "sys/cc.h"
#include "sys/pg.h"
#include "game/penalty_policy.h"

/*
 * Records the penalty for source_id (the proposal or match the offence
 * belongs to) inside the caller's transaction, with the cooldown
 * game/penalty_policy.h gives for the player's offences in the rolling
 * window. *recorded (may be NULL) says whether a new row was written
 * (false: it already existed). Returns 0 or cc_pg_exec's error.
 */
int cc_penalty_record(struct cc_pg *pg, const char *player_id, enum cc_penalty_kind kind,
		      const char *source_id, bool *recorded) CC_MUST_CHECK;

/* Room for every participant of the largest match. */
#define CC_PENALTY_SOURCE_PLAYERS_MAX 16

/*
 * Which of players[0..n_players) (lowercase UUIDs, at most
 * CC_PENALTY_SOURCE_PLAYERS_MAX) have a penalty of kind for source_id: into
 * ids, by id, *n of them (the facts a replayed settlement answers with).
 * Returns 0, CC_EINVAL, or cc_pg_exec's error.
 */
int cc_penalties_of_source(struct cc_pg *pg, enum cc_penalty_kind kind, const char *source_id,
			   const char (*players)[CC_UUID_BUF], size_t n_players, char (*ids)[CC_UUID_BUF], size_t *n)
	CC_MUST_CHECK;

#endif
