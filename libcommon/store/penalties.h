/*
 * penalties.h - matchmaking penalties and their cooldowns (SPEC 7).
 *
 * Kinds: DECLINE, PROPOSAL_TIMEOUT, INITIAL_CONNECT_NO_SHOW, EARLY_LEAVE.
 * A penalty blocks queueing until its cooldown ends. Cooldowns escalate with
 * repeat offences: base(kind) x 2^(offences in the last 24 h), the factor
 * capped at 8 and the cooldown at 2 hours. Infrastructure faults never
 * penalise players: callers record penalties only for a player's own act.
 *
 * Exactly-once: (player_id, kind, source_id) is unique in the database, so
 * many requests racing to record the same penalty (e.g. eight readers
 * expiring one proposal) leave exactly one row.
 */
#ifndef CC_PENALTIES_H
#define CC_PENALTIES_H

#include <stdbool.h>

#include "sys/cc.h"
#include "sys/pg.h"

enum cc_penalty_kind {
	CC_PENALTY_DECLINE,
	CC_PENALTY_PROPOSAL_TIMEOUT,
	CC_PENALTY_INITIAL_CONNECT_NO_SHOW,
	CC_PENALTY_EARLY_LEAVE,
};

/* The database name ("DECLINE"). */
const char *cc_penalty_kind_name(enum cc_penalty_kind kind);

/* Base cooldown in seconds before escalation. */
int cc_penalty_base_seconds(enum cc_penalty_kind kind);

/*
 * Records the penalty for source_id (the proposal or match the offence
 * belongs to) inside the caller's transaction. *recorded (may be NULL) says
 * whether a new row was written (false: it already existed). Returns 0 or
 * cc_pg_exec's error.
 */
int cc_penalty_record(struct cc_pg *pg, const char *player_id, enum cc_penalty_kind kind,
		      const char *source_id, bool *recorded) CC_MUST_CHECK;

#endif
