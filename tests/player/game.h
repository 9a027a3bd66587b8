/*
 * game.h - cc-player's game stage: simulated players connect to the game
 * servers their assignments name, play the match over ENet with the
 * ball-chasing policy (game/chase.h), check what they are sent, and leave
 * at match end. The wire is game/wire.h (contracts/gameserver-protocol.md).
 *
 * Shape: --game-threads threads, each with ONE ENet host holding a peer per
 * player it runs (players are dealt to threads round-robin as they are
 * added). Why one host per thread and not one per player: a host is a
 * socket plus a service loop; with one per player, a process of 300
 * players makes 300 enet_host_service calls (each several syscalls) every
 * 1/60 s and wakes on 300 sockets, while one host per thread sends and
 * receives every peer's packets in one service call on one socket, so one
 * core drives hundreds of players. ENet keeps each peer a separate
 * connection (its own peer id, session and sequence numbers), so the
 * server sees separate players; they only share a source address, which
 * the server must not (and per SPEC 11 does not) key anything on.
 *
 * Netcode (issue 12): each player predicts its own ship from its own
 * inputs and reconciles the prediction with every snapshot, measuring the
 * prediction error (predict.h); it pings 4 times a second and estimates
 * the server clock from the lowest-RTT pongs (clocksync.h). Both are
 * logged per player at the end ("prediction", "clock_sync" info lines)
 * and kept in the result for the summary.
 *
 * Per player: ENet connect -> hello {protocol version, tick rate, join
 * token} on the control channel -> welcome (slot and team must be the
 * assignment's) -> every tick an input message on the input channel
 * carrying the newest inputs (redundancy: up to PC_GAME_REDUNDANCY, at
 * most welcome.max_inputs) -> snapshots, goals, kickoffs, match_end.
 * After match_end it waits (up to PC_GAME_LINGER_MS) for a snapshot at or
 * past the end's tick, then checks it: that snapshot's score must equal
 * match_end's, the goal messages it received must add up to it, and the
 * snapshot score never went down; then it disconnects. A refusal, a kick,
 * a disconnect before match_end, a slot or team other than assigned, or
 * a deadline passing is a failure with a precise problem text.
 *
 * Threads: pc_game_add() may be called from any thread; a result is
 * written only by the game thread that owns its player, and read by the
 * caller after pc_game_finish() (whose join orders the writes before).
 *
 * Ownership: pc_game_start() allocates the engine, pc_game_free() frees it
 * (stopping threads first if pc_game_finish() was not called). The result
 * structs stay the caller's; the engine writes into them.
 */
#ifndef PC_GAME_H
#define PC_GAME_H

#include <stdbool.h>
#include <stdint.h>

#include "sys/cc.h"
#include "game/wire.h"
#include "clocksync.h"
#include "predict.h"

#define PC_GAME_REDUNDANCY 4          /* inputs per input message (the server may accept fewer) */
#define PC_GAME_LINGER_MS 3000        /* after match_end: wait this long for a snapshot that shows the end */
#define PC_GAME_CONNECT_TIMEOUT_MS 10000 /* ENet connect + hello until welcome */
/*
 * The ENet connect is sent again every this many ms until the server answers
 * (ENet's own schedule starts at 500 ms and doubles). The assignment is
 * published before the game server has bound its port (the allocator hands
 * the endpoint out while cc-supervisor starts cc-gameserver), so the first
 * attempts of a player who asks at once usually find nobody listening; with
 * ENet's schedule the next one came half a second later (issue 24).
 */
#define PC_GAME_CONNECT_RETRY_MS 20
#define PC_GAME_ADDRESS_MAX 64

/* What an assignment (GET /v1/matches/{id}/assignment) tells a player. */
struct pc_game_assignment {
	char match_id[CC_UUID_BUF];
	char address[PC_GAME_ADDRESS_MAX + 1]; /* IPv4 literal or host name */
	uint16_t port;
	char join_token[CC_WIRE_TOKEN_MAX + 1];
	int slot; /* as assigned */
	int team; /* 0 or 1 */
};

enum pc_game_outcome {
	PC_GAME_PENDING = 0, /* not finished (still playing when the deadline passed counts as FAILED) */
	PC_GAME_OK,          /* played to the end, and the end checked out */
	PC_GAME_FAILED       /* see problem */
};

/* One player's game, written by its game thread. Zero it before pc_game_add(). */
struct pc_game_result {
	enum pc_game_outcome outcome;
	char problem[192];             /* why it failed ("" when OK) */
	char match_id[CC_UUID_BUF];
	int slot, team;                /* from welcome */
	uint8_t final_score[2];        /* match_end's */
	uint8_t snapshot_score[2];     /* the last snapshot's */
	uint8_t winner;                /* match_end's (CC_WIRE_TEAM_NONE: draw) */
	uint8_t end_reason;            /* match_end's */
	bool score_agrees;             /* the end checked out (see the top) */
	uint32_t goals_seen;           /* goal messages received */
	uint32_t kickoffs;             /* kickoff messages received */
	uint32_t snapshots;            /* snapshots taken (newer than the last) */
	uint32_t stale_snapshots;      /* snapshots not newer than one already taken, ignored */
	uint32_t full_snapshots;       /* of the snapshots received, those that came as snapshot */
	uint32_t delta_snapshots;      /* and those that came as snapshot_delta, rebuilt (issue 24) */
	uint32_t inputs_sent;          /* input messages sent */
	uint32_t unknown_messages;     /* ids the codec does not know: skipped */
	uint32_t bad_messages;         /* packets the codec refused */
	uint64_t snapshot_bytes;       /* bytes of snapshot packets received */
	uint64_t assigned_ns;          /* monotonic time the assignment arrived (the caller's) */
	uint64_t connected_ns;         /* welcome received (0: never) */
	uint64_t first_snapshot_ns;    /* first snapshot received (0: never) */
	uint64_t ended_ns;             /* match_end received (0: never) */
	uint64_t left_ns;              /* disconnected */
	struct pc_predict_stats pred;  /* own-ship prediction error (predict.h); release with pc_game_result_release */
	bool clock_valid;              /* clock is set: at least one pong arrived */
	struct pc_clock_estimate clock; /* the server clock estimate at the end (clocksync.h) */
	uint32_t pongs;
};

/* Frees what a result holds (the prediction error samples). Zeroed results are fine. */
void pc_game_result_release(struct pc_game_result *r);

struct pc_game_options {
	int threads;          /* game threads, >= 1 */
	int max_players;      /* players pc_game_add() may add in all */
	int64_t deadline_ms;  /* a player still playing this long after being added fails */
	uint64_t seed;        /* seeds each player's chase style (redrawn at each kickoff) */
	/* Network simulation on every game packet, both directions (sys/netsim; all 0 = off). */
	int net_latency_ms, net_jitter_ms;
	double net_loss_pct, net_dup_pct;
	uint64_t net_seed;    /* thread i's link draws from a stream of its own, seeded from (net_seed, i) */
};

struct pc_game;

/*
 * Starts the game threads (each creates its ENet host on first use). The
 * caller has called enet_initialize(). Returns NULL on bad options, out of
 * memory or a thread that would not start (everything undone).
 */
struct pc_game *pc_game_start(const struct pc_game_options *opts);

/*
 * Hands player `index` with its assignment to a game thread, which
 * connects it at its next turn (within a tick). res must stay valid until
 * pc_game_finish() returns; it is zeroed and filled by the game thread.
 * Returns 0; CC_ETOOBIG past max_players; CC_EINVAL for a bad assignment
 * (no address, port 0, no token, team not 0/1) or a finished engine.
 */
CC_MUST_CHECK int pc_game_add(struct pc_game *g, int index, const struct pc_game_assignment *a, uint64_t assigned_ns,
			      struct pc_game_result *res);

/*
 * No more players will be added: waits until every added player is done
 * (OK or FAILED; a player past its deadline is failed), then stops and
 * joins the threads. Idempotent.
 */
void pc_game_finish(struct pc_game *g);

/* What the game threads cost, for the report. */
struct pc_game_stats {
	uint64_t cpu_ns;     /* CPU time of all game threads */
	uint64_t ticks;      /* input ticks they ran (each sends every playing player's input) */
	uint64_t late_ticks; /* ticks begun more than one tick period late (the thread could not keep up) */
	uint64_t net_packets, net_dropped, net_duplicated; /* the network simulation's, both directions (0: off) */
};

/* Fills *out after pc_game_finish() (zeros before it). */
void pc_game_stats(const struct pc_game *g, struct pc_game_stats *out);

/* Frees the engine (finishing it first). NULL is a no-op. */
void pc_game_free(struct pc_game *g);

#endif
