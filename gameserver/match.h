/*
 * match.h - one match as the tick thread drives it: game/sim (ships, ball,
 * arena, goals, kickoffs) under game/match_lifecycle (states, clock
 * banking), plus who is present in which slot and the latest input of each.
 *
 * The server calls, once per tick: gs_match_input() for each input it
 * consumed, gs_match_step() to advance one tick (events come back through
 * the callback, in the order they happened), and on snapshot ticks
 * gs_match_snapshot(). Pure computation, no I/O: the simulation never
 * touches the database or the network (issue 11).
 *
 * Drivers (issue 12): each slot's ship is driven by nobody (parked at its
 * spawn, out of play), its player, nobody while its player is away (the
 * slot is reserved for a reconnect: the ship stays in play where it is,
 * with neutral controls, so a resumed player finds it where the server
 * left it), or a server bot (game/chase's team policy, computed here each
 * tick from the sim; a fixed style per slot). A driver change can take
 * effect at once or at the next kickoff, applied just before the kickoff
 * reset so an entering ship starts from its spawn like everyone else
 * (late joiners and players taking a slot back from a bot). LOADING ends
 * when `expected` slots are driven by their players.
 *
 * Ownership: the match owns its sim and lifecycle; gs_match_free() frees.
 */
#ifndef CC_GAMESERVER_MATCH_H
#define CC_GAMESERVER_MATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sys/cc.h"

#define GS_MATCH_MAX_SLOTS 16

struct gs_match_options {
	int n_slots;                    /* ships: roster slots 0..n_slots-1 (at most CC_SIM_MAX_SHIPS) */
	int expected;                   /* roster players: LOADING ends when this many are present */
	uint8_t teams[GS_MATCH_MAX_SLOTS]; /* team of each slot, 0 or 1 */
	int64_t match_seconds;          /* regulation length (PLAYING time: stoppages are banked) */
	int64_t warmup_seconds;         /* WARMUP before the first kickoff */
	int64_t connect_window_seconds; /* LOADING waits this long for everyone, then starts with who came */
	int64_t goal_pause_seconds;     /* GOAL_PAUSE after each goal */
	int64_t overtime_max_seconds;   /* golden-goal overtime ends as a draw after this (0 = never) */
};

enum gs_event_kind {
	GS_EVENT_STATE,   /* the lifecycle state changed: state */
	GS_EVENT_GOAL,    /* team scored (slot = last toucher, -1 none); score after it */
	GS_EVENT_KICKOFF, /* bodies were reset for a kickoff */
	GS_EVENT_ENDED,   /* the match reached RESULTS: score is final */
};

struct gs_event {
	enum gs_event_kind kind;
	int state;    /* STATE: new lifecycle state (wire value) */
	int team;     /* GOAL: scoring team */
	int slot;     /* GOAL: scorer slot or -1 */
	int score[2]; /* GOAL, ENDED: score after it */
	bool overtime; /* ENDED: decided in overtime */
	int winner;    /* ENDED: 0, 1, or -1 for a draw */
	const char *end_reason; /* ENDED: "REGULATION", "GOLDEN_GOAL", ... */
};

typedef void (*gs_event_fn)(void *ctx, const struct gs_event *ev);

struct gs_match;

/* NULL when the options do not fit the simulation (more slots than ships, a bad team) or out of memory. */
struct gs_match *gs_match_create(const struct gs_match_options *opts);

struct cc_sim;
struct cc_match;
/* The simulation and the lifecycle, read-only (snapshots, benchmarks). */
const struct cc_sim *gs_match_sim(const struct gs_match *m);
const struct cc_match *gs_match_lifecycle(const struct gs_match *m);

/* A player took (present) or left a slot on team: gs_match_set_driver(PLAYER or NONE). */
void gs_match_set_present(struct gs_match *m, int slot, int team, bool present);

enum gs_driver {
	GS_DRIVER_NONE,   /* parked at its spawn, inactive */
	GS_DRIVER_PLAYER, /* its connected player's inputs */
	GS_DRIVER_AWAY,   /* in play, neutral controls: its player may resume */
	GS_DRIVER_BOT,    /* the server's chase bot */
};

/* Sets slot's driver now (a queued change for the next kickoff stays queued). */
void gs_match_set_driver(struct gs_match *m, int slot, enum gs_driver d);

/*
 * Queues d for slot, applied just before the next kickoff reset (replacing
 * an earlier queued one); GS_DRIVER_NONE as `cancel` true drops the queued change.
 */
void gs_match_driver_at_kickoff(struct gs_match *m, int slot, enum gs_driver d, bool cancel);

enum gs_driver gs_match_driver(const struct gs_match *m, int slot);

/* True when slot has a driver change queued for the next kickoff. */
bool gs_match_entry_queued(const struct gs_match *m, int slot);

/* Applies one input for slot (throttle etc. as decoded by game/wire). */
struct gs_input;
void gs_match_input(struct gs_match *m, int slot, const struct gs_input *in);

/* Advances one tick; events go to fn(ctx, ev). */
void gs_match_step(struct gs_match *m, gs_event_fn fn, void *ctx);

uint32_t gs_match_tick(const struct gs_match *m);
int gs_match_state(const struct gs_match *m);
void gs_match_score(const struct gs_match *m, int score[2]);
bool gs_match_over(const struct gs_match *m);

void gs_match_free(struct gs_match *m);

#endif
