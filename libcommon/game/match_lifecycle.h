/*
 * match_lifecycle.h - the match state machine of SPEC 11 and its clock:
 *
 *   LOADING -> WARMUP -> PLAYING -> GOAL_PAUSE -> PLAYING -> ... -> FULL_TIME
 *           -> OVERTIME (golden goal, only on a draw) -> RESULTS -> LOBBY
 *
 * The integer values of enum cc_match_state are wire format (snapshots carry
 * them as one byte): they are explicit, and a new state is only ever
 * appended. The legal moves are the table in match_lifecycle.c
 * (cc_match_transition_allowed); nothing else moves a match.
 *
 * The clock: regulation time is a count of PLAYING ticks, not a deadline on
 * the server tick. remaining_ticks goes down by one for every tick spent in
 * PLAYING and is banked, untouched, through every stoppage (GOAL_PAUSE), so
 * a goal never costs regulation time (FAILURE-MODES, "a clock that does not
 * bank stoppages"): the match spends exactly regulation_ticks in PLAYING.
 *
 * One call per server tick, cc_match_tick(), given the goal (if any) that
 * cc_sim_step reported for that tick. The caller's loop (cc-gameserver):
 *
 *     if (cc_match_state_runs_sim(m.state)) cc_sim_step(&sim, inputs, &sev);
 *     cc_match_tick(&m, sev.goal_team, &mev);      // sev.goal_team = -1 if not stepped
 *     if (mev.kickoff) cc_sim_kickoff(&sim);        // then broadcast transforms
 *     if (mev.goal_team >= 0) log goal; if (mev.ended) report the result
 *
 * Per state, on each tick (state_ticks counts ticks spent in the state):
 *   LOADING    waits for cc_match_begin() (all players in, or the server's
 *              loading deadline); with loading_max_ticks > 0 it also moves
 *              on by itself after that many ticks.
 *   WARMUP     the sim runs; a goal does not count and resets with a
 *              kickoff; after warmup_ticks -> PLAYING with a kickoff.
 *   PLAYING    remaining_ticks -= 1; a goal scores and -> GOAL_PAUSE; else
 *              at 0 remaining -> FULL_TIME. A goal on the last tick counts.
 *   GOAL_PAUSE the sim runs (ball dead in the net); after goal_pause_ticks
 *              -> PLAYING with a kickoff, or FULL_TIME if the goal used up
 *              the last regulation tick.
 *   FULL_TIME  after full_time_ticks: a draw -> OVERTIME with a kickoff
 *              (when overtime is enabled), else -> RESULTS (ended).
 *   OVERTIME   the first goal scores and ends the match -> RESULTS (ended);
 *              with overtime_max_ticks > 0 the match also ends there as a
 *              draw.
 *   RESULTS    after results_ticks -> LOBBY.
 *   LOBBY      terminal for an allocated server: it reports and shuts down.
 * cc_match_abandon() ends a match at once from any state before RESULTS.
 *
 * Ownership: struct cc_match is a plain value; nothing allocates.
 */
#ifndef CC_MATCH_LIFECYCLE_H
#define CC_MATCH_LIFECYCLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sys/cc.h"

/* X-macro: name and wire value; append only, never renumber. */
#define CC_MATCH_STATES(X)  \
	X(LOADING, 0)       \
	X(WARMUP, 1)        \
	X(PLAYING, 2)       \
	X(GOAL_PAUSE, 3)    \
	X(FULL_TIME, 4)     \
	X(OVERTIME, 5)      \
	X(RESULTS, 6)       \
	X(LOBBY, 7)

enum cc_match_state {
#define CC__MATCH_ENUM(name, value) CC_MATCH_##name = value,
	CC_MATCH_STATES(CC__MATCH_ENUM)
#undef CC__MATCH_ENUM
	CC_MATCH_STATE_COUNT /* not a state: one past the highest value */
};

/* Why a match ended (the result's reason); values are wire format too. */
#define CC_MATCH_END_REASONS(X) \
	X(NONE, 0)              \
	X(REGULATION, 1)        \
	X(GOLDEN_GOAL, 2)       \
	X(OVERTIME_LIMIT, 3)    \
	X(ABANDONED, 4)

enum cc_match_end_reason {
#define CC__MATCH_END_ENUM(name, value) CC_MATCH_END_##name = value,
	CC_MATCH_END_REASONS(CC__MATCH_END_ENUM)
#undef CC__MATCH_END_ENUM
	CC_MATCH_END_REASON_COUNT
};

#define CC_MATCH_TICK_RATE 60u /* ticks per second, as CC_SIM_TICK_RATE */

/* Durations in ticks (CC_MATCH_TICK_RATE per second). */
struct cc_match_config {
	uint32_t regulation_ticks;   /* PLAYING ticks in regulation, >= 1 */
	uint32_t warmup_ticks;       /* >= 1 */
	uint32_t goal_pause_ticks;   /* >= 1 */
	uint32_t full_time_ticks;    /* >= 1 */
	uint32_t results_ticks;      /* >= 1 */
	uint32_t loading_max_ticks;  /* 0: LOADING waits for cc_match_begin() */
	uint32_t overtime_max_ticks; /* 0: golden goal only, however long */
	bool overtime;               /* false: a draw at full time is the result */
};

/* Largest duration any field may hold: one hour. */
#define CC_MATCH_MAX_TICKS (60u * 60u * 60u)

/* Defaults: 5 min regulation, 10 s warmup, 3 s goal pause, 3 s full time, 5 s results, overtime on, unbounded. */
#define CC_MATCH_DEFAULT_REGULATION_TICKS (5u * 60u * 60u)
#define CC_MATCH_DEFAULT_WARMUP_TICKS (10u * 60u)
#define CC_MATCH_DEFAULT_GOAL_PAUSE_TICKS (3u * 60u)
#define CC_MATCH_DEFAULT_FULL_TIME_TICKS (3u * 60u)
#define CC_MATCH_DEFAULT_RESULTS_TICKS (5u * 60u)

/* What one call changed; every field is reset by each call that takes it. */
struct cc_match_events {
	bool state_changed;
	enum cc_match_state from, to; /* valid when state_changed (to is the state now) */
	int8_t goal_team;             /* a goal that counted this tick, or -1 */
	bool goal_ignored;            /* a goal outside PLAYING/OVERTIME (warmup practice) */
	bool kickoff;                 /* the caller must cc_sim_kickoff() now */
	bool ended;                   /* the match ended this tick: final_score and reason are set */
	uint16_t final_score[2];
	int8_t winner;                /* 0, 1, or -1 for a draw; valid when ended */
	enum cc_match_end_reason reason;
};

struct cc_match {
	struct cc_match_config cfg;
	enum cc_match_state state;
	uint32_t tick;            /* cc_match_tick calls so far */
	uint32_t state_ticks;     /* ticks spent in the current state */
	uint32_t remaining_ticks; /* regulation clock, banked across stoppages */
	uint32_t playing_ticks;   /* ticks spent in PLAYING so far (= regulation - remaining) */
	uint32_t overtime_ticks;  /* ticks spent in OVERTIME */
	uint16_t score[2];
	enum cc_match_end_reason end_reason; /* NONE until the match ends */
};

/* Returns the wire name ("GOAL_PAUSE"), or "INVALID" outside the enum. */
const char *cc_match_state_name(enum cc_match_state state);

/* Parses an exact name into *out. Returns 0 or CC_EINVAL (*out untouched). */
CC_MUST_CHECK int cc_match_state_parse(const char *text, enum cc_match_state *out);

/* Returns "REGULATION", ..., or "INVALID". */
const char *cc_match_end_reason_name(enum cc_match_end_reason reason);

/* True when the match may move from -> to (the table in the .c). */
bool cc_match_transition_allowed(enum cc_match_state from, enum cc_match_state to);

/* True in WARMUP, PLAYING, GOAL_PAUSE and OVERTIME: the states the caller steps the sim in. */
bool cc_match_state_runs_sim(enum cc_match_state state);

/* The defaults above. */
struct cc_match_config cc_match_config_default(void);

/*
 * Checks a config: every duration within its bounds (see the struct).
 * Returns 0, or CC_EINVAL with err (when err and errlen > 0) naming each
 * bad field and its value, e.g. "regulation_ticks 0 is outside 1..216000".
 */
CC_MUST_CHECK int cc_match_config_validate(const struct cc_match_config *cfg, char *err, size_t errlen);

/* Starts a match in LOADING with cfg (validated: CC_EINVAL, *m untouched). */
CC_MUST_CHECK int cc_match_init(struct cc_match *m, const struct cc_match_config *cfg);

/*
 * LOADING -> WARMUP (players are in, or the server gave up waiting).
 * Returns 0, or CC_ESTATE from any other state (nothing changes). ev may be NULL.
 */
CC_MUST_CHECK int cc_match_begin(struct cc_match *m, struct cc_match_events *ev);

/*
 * One server tick. goal_team is the team cc_sim_step reported scoring this
 * tick, or -1 (any other value is treated as -1). Fills ev (may be NULL).
 */
void cc_match_tick(struct cc_match *m, int goal_team, struct cc_match_events *ev);

/*
 * Ends the match now with the current score (everyone left, or the server
 * must stop): -> RESULTS with reason ABANDONED and ev->ended. Returns 0, or
 * CC_ESTATE once the match is in RESULTS or LOBBY.
 */
CC_MUST_CHECK int cc_match_abandon(struct cc_match *m, struct cc_match_events *ev);

/* Seconds of regulation left, rounded up, for a scoreboard. */
uint32_t cc_match_clock_seconds(const struct cc_match *m);

#endif
