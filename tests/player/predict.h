/*
 * predict.h - cc-player's client-side prediction and reconciliation of its
 * own ship, and the measure of how wrong the prediction was
 * (contracts/gameserver-protocol.md section 5, "Client reconciliation").
 *
 * Prediction: every input the player sends (one per tick, by u16 sequence)
 * is recorded as the server will apply it (the wire's quantised axes,
 * cc_wire_input_to_sim) and applied at once to a predicted copy of the
 * match (game/sim: the newest snapshot's ball and ships, the other ships
 * given no input, the ball dead in GOAL_PAUSE, nothing moves in a state
 * that does not run the simulation). The own ship's position after input
 * k is kept with k.
 *
 * Reconciliation, on each snapshot newer than the last: the snapshot's
 * state is the server's after the input it acknowledges (last_input_seq,
 * k); the predicted match restarts from it and every input after k that
 * the player has sent is replayed on it, so the prediction carries on from
 * the truth with the inputs the server has not applied yet.
 *
 * The error measure: when a snapshot acknowledges k, the distance between
 * the position predicted after k and the snapshot's position of the own
 * ship. A sample is used only when the prediction could have been exact
 * but for what the client cannot know (the other players' inputs); the
 * rest are counted by why:
 *   stalled  the snapshot has CC_WIRE_PF_INPUT_STALLED: the server ran out
 *            of our inputs and applied the last one again, so its state is
 *            not "after k" as we predicted it. The snapshot still rebases
 *            the prediction (its state is the truth; the replay restarts
 *            after k); only its error is not a prediction error.
 *   held     the server applied other than one input per tick between the
 *            snapshot the prediction was replayed from and this one (tick
 *            minus last_input_seq changed: it held an input through a stall
 *            that ended before the snapshot, or skipped inputs to shed a
 *            backlog). Same treatment as stalled.
 *   kickoff  a kickoff reset the bodies between the two snapshots (known
 *            from the reliable kickoff message; a sample is held back until
 *            a reliable message with a later tick, or PC_PREDICT_PENDING_MS,
 *            proves no kickoff lies in it).
 *   stopped  the two snapshots' match states differ or do not run the
 *            simulation (nothing to predict, or a transition).
 *   unmatched the acknowledged input is not one we predicted (too old, or
 *            no snapshot to predict from yet).
 *
 * Ownership: struct pc_predict is a plain value the caller embeds (about
 * 20 KB); the stats it writes live in the caller's struct pc_predict_stats,
 * whose error recorder the caller releases (pc_latency_release).
 */
#ifndef PC_PREDICT_H
#define PC_PREDICT_H

#include <stdbool.h>
#include <stdint.h>

#include "sys/cc.h"
#include "game/sim.h"
#include "game/wire.h"
#include "latency.h"

#define PC_PREDICT_HISTORY 256   /* inputs kept, by seq % this: 4 s of input lead */
#define PC_PREDICT_PENDING 128   /* error samples waiting for proof that no kickoff lies in them */
#define PC_PREDICT_PENDING_MS 2000

/* What the measure found; err_um holds the used samples in micrometres (pc_latency_percentile_ms reads metres). */
struct pc_predict_stats {
	struct pc_latency err_um;
	uint32_t snapshots;  /* snapshots taken that acknowledge one of our inputs */
	uint32_t used, stalled, held, kickoff, stopped, unmatched;
	uint64_t replayed;   /* inputs replayed by reconciliations */
};

struct pc_predict_entry {
	bool recorded;             /* an input with this seq is here */
	bool predicted;            /* pos holds the prediction after it */
	uint16_t seq;
	uint8_t base_state;        /* match state the prediction stepped in */
	uint16_t base_offset;      /* (u16)(base tick - base last_input_seq) */
	uint32_t base_tick;        /* the snapshot the prediction was replayed from */
	struct cc_sim_input in;    /* as the server applies it */
	struct cc_sim_vec3 pos;    /* own ship after this input, predicted */
};

struct pc_predict_pending {
	uint32_t base_tick, tick;  /* the interval a kickoff would spoil: (base_tick, tick] */
	uint64_t err_um;
	int64_t at_ms;
};

struct pc_predict {
	int slot;                  /* own slot; >= CC_SIM_MAX_SHIPS: nothing is predicted */
	int team;
	struct pc_predict_stats *stats;
	bool have_input;
	uint16_t newest_seq;       /* newest input recorded */
	bool have_world;
	struct cc_sim world;       /* the predicted match after input world_seq */
	uint16_t world_seq;
	uint8_t world_state;
	uint32_t base_tick;
	uint16_t base_offset;
	struct pc_predict_entry hist[PC_PREDICT_HISTORY];
	struct pc_predict_pending pending[PC_PREDICT_PENDING];
	unsigned n_pending;
};

/*
 * The match as a snapshot shows it, as a struct cc_sim: ships by slot
 * (slots past CC_SIM_MAX_SHIPS left out), teams from team_of (indexed by
 * slot; me's team is my_team), spawn index by slot order within a team,
 * a ship active when connected, a bot, or me. The ball is live. Returns
 * true when slot me is in the view.
 */
bool pc_snapshot_view(const struct cc_wire_snapshot *snap, const uint8_t team_of[CC_WIRE_MAX_PLAYERS], int me,
		      int my_team, struct cc_sim *view);

/* Starts with nothing predicted; stats is zeroed except its recorder (initialised by the caller). */
void pc_predict_init(struct pc_predict *pp, int slot, int team, struct pc_predict_stats *stats);

/* Records input seq (the next after the last one) and predicts one tick with it. */
void pc_predict_input(struct pc_predict *pp, uint16_t seq, const struct cc_wire_input *in);

/* A snapshot newer than every one before: measures, then reconciles. team_of as pc_snapshot_view. */
void pc_predict_snapshot(struct pc_predict *pp, const struct cc_wire_snapshot *s,
			 const uint8_t team_of[CC_WIRE_MAX_PLAYERS], int64_t now_ms);

/*
 * A reliable message with a server tick arrived (match_state, goal,
 * kickoff, match_end: the control channel is ordered, so every kickoff up
 * to it has arrived). kickoff: it was a kickoff message (the reset is at
 * tick - 1). Settles the pending samples it decides.
 */
void pc_predict_reliable(struct pc_predict *pp, uint32_t tick, bool kickoff);

/* Settles the pending samples older than PC_PREDICT_PENDING_MS. */
void pc_predict_poll(struct pc_predict *pp, int64_t now_ms);

/* Settles every pending sample (the game is over). */
void pc_predict_flush(struct pc_predict *pp);

#endif
