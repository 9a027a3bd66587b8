/*
 * penalty_policy.h - matchmaking penalties as rules (SPEC 7): the kinds,
 * their base cooldowns and how cooldowns escalate with repeat offences.
 * Pure: no I/O. store/penalties.h records penalties with these numbers.
 *
 * Escalation: a penalty's cooldown is base(kind) x 2^(offences of any kind
 * in the rolling window before this one), the factor capped at
 * CC_PENALTY_FACTOR_CAP and the cooldown at CC_PENALTY_COOLDOWN_CAP_SECONDS.
 * So the schedule stops growing after CC_PENALTY_ESCALATION_STEPS - 1 prior
 * offences; the store hands PostgreSQL the first CC_PENALTY_ESCALATION_STEPS
 * entries (cc_penalty_schedule) and lets it pick by the count it reads in
 * the same statement that inserts the penalty, so the count and the insert
 * stay one atomic step.
 */
#ifndef CC_GAME_PENALTY_POLICY_H
#define CC_GAME_PENALTY_POLICY_H

#include <stdint.h>

#include "sys/cc.h"

enum cc_penalty_kind {
	CC_PENALTY_DECLINE,
	CC_PENALTY_PROPOSAL_TIMEOUT,
	CC_PENALTY_INITIAL_CONNECT_NO_SHOW,
	CC_PENALTY_EARLY_LEAVE,
};

#define CC_PENALTY_WINDOW_SECONDS (24 * 3600)   /* offences counted for escalation */
#define CC_PENALTY_FACTOR_CAP 8                 /* at most base x 8 */
#define CC_PENALTY_COOLDOWN_CAP_SECONDS 7200    /* and never more than 2 hours */
#define CC_PENALTY_ESCALATION_STEPS 4           /* 2^3 = the factor cap: later offences add nothing */

/* The database name ("DECLINE"); "INVALID" outside the enum. */
const char *cc_penalty_kind_name(enum cc_penalty_kind kind);

/* Base cooldown in seconds before escalation. */
int cc_penalty_base_seconds(enum cc_penalty_kind kind);

/*
 * The cooldown in seconds of a new penalty of kind for a player with
 * prior_offences (any kind) in the rolling window; prior_offences < 0
 * counts as 0.
 */
int64_t cc_penalty_cooldown_seconds(enum cc_penalty_kind kind, int64_t prior_offences);

/*
 * Fills schedule[k] = cc_penalty_cooldown_seconds(kind, k) for k in
 * 0..CC_PENALTY_ESCALATION_STEPS-1; the last entry holds for any larger k.
 */
void cc_penalty_schedule(enum cc_penalty_kind kind, int64_t schedule[CC_PENALTY_ESCALATION_STEPS]);

#endif
