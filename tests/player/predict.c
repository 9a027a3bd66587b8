/*
 * predict.c - own-ship prediction, reconciliation and its error (predict.h).
 */
#include "predict.h"

#include <math.h>
#include <string.h>

#include "game/match_lifecycle.h"
#include "sys/banned.h"

#define TEAM_UNKNOWN 0xFF

bool pc_snapshot_view(const struct cc_wire_snapshot *snap, const uint8_t team_of[CC_WIRE_MAX_PLAYERS], int me,
		      int my_team, struct cc_sim *view)
{
	unsigned per_team[2] = { 0, 0 };
	memset(view, 0, sizeof *view);
	cc_wire_body_to_sim(&snap->ball, &view->ball);
	view->ball_live = true;
	view->last_touch = -1;
	view->tick = snap->tick;
	for (unsigned i = 0; i < snap->player_count; i++) {
		const struct cc_wire_player_state *ps = &snap->players[i];
		if (ps->slot >= CC_SIM_MAX_SHIPS)
			continue;
		struct cc_sim_ship *s = &view->ships[ps->slot];
		cc_wire_body_to_sim(&ps->body, &s->body);
		s->boost = cc_wire_boost_unpack(ps->boost);
		s->team = ps->slot == me ? (uint8_t)my_team : team_of[ps->slot];
		s->active = (ps->flags & (CC_WIRE_PF_CONNECTED | CC_WIRE_PF_BOT)) != 0 || ps->slot == me;
		if (ps->slot + 1u > view->ship_count)
			view->ship_count = (uint8_t)(ps->slot + 1u);
	}
	for (unsigned i = 0; i < view->ship_count; i++)
		if (view->ships[i].team < 2)
			view->ships[i].spawn = (uint8_t)per_team[view->ships[i].team]++;
	return me >= 0 && me < view->ship_count && view->ships[me].active;
}

void pc_predict_init(struct pc_predict *pp, int slot, int team, struct pc_predict_stats *stats)
{
	memset(pp, 0, sizeof *pp);
	pp->slot = slot;
	pp->team = team;
	pp->stats = stats;
}

/* Applies input seq (the one after world_seq) to the predicted match and keeps the own ship's position. */
static void step(struct pc_predict *pp, uint16_t seq)
{
	struct pc_predict_entry *e = &pp->hist[seq % PC_PREDICT_HISTORY];
	struct cc_sim_input in[CC_SIM_MAX_SHIPS];
	memset(in, 0, sizeof in); /* the others: we do not know their inputs */
	in[pp->slot] = e->in;
	if (cc_match_state_runs_sim((enum cc_match_state)pp->world_state))
		cc_sim_step(&pp->world, in, NULL);
	e->pos = pp->world.ships[pp->slot].body.pos;
	e->predicted = true;
	e->base_tick = pp->base_tick;
	e->base_offset = pp->base_offset;
	e->base_state = pp->world_state;
	pp->world_seq = seq;
}

void pc_predict_input(struct pc_predict *pp, uint16_t seq, const struct cc_wire_input *in)
{
	struct pc_predict_entry *e = &pp->hist[seq % PC_PREDICT_HISTORY];
	memset(e, 0, sizeof *e);
	e->recorded = true;
	e->seq = seq;
	cc_wire_input_to_sim(in, &e->in);
	pp->newest_seq = seq;
	pp->have_input = true;
	if (pp->have_world && seq == (uint16_t)(pp->world_seq + 1u))
		step(pp, seq);
	else
		pp->have_world = false; /* a gap: wait for the next snapshot to predict from */
}

static void settle(struct pc_predict *pp, unsigned i)
{
	pp->stats->used++;
	(void)pc_latency_add(&pp->stats->err_um, pp->pending[i].err_um);
}

/* Settles pending[0..n) and drops them (they are in tick order). */
static void settle_first(struct pc_predict *pp, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		settle(pp, i);
	memmove(pp->pending, pp->pending + n, (pp->n_pending - n) * sizeof pp->pending[0]);
	pp->n_pending -= n;
}

static void measure(struct pc_predict *pp, const struct cc_wire_snapshot *s, const struct cc_wire_player_state *me,
		    int64_t now_ms)
{
	uint16_t k = me->last_input_seq;
	uint16_t offset = (uint16_t)(s->tick - k);
	const struct pc_predict_entry *e = &pp->hist[k % PC_PREDICT_HISTORY];
	pp->stats->snapshots++;
	if (me->flags & CC_WIRE_PF_INPUT_STALLED) {
		pp->stats->stalled++;
		return;
	}
	if (!e->recorded || e->seq != k || !e->predicted || e->base_tick >= s->tick) {
		pp->stats->unmatched++;
		return;
	}
	if (e->base_offset != offset) {
		pp->stats->held++;
		return;
	}
	if (!cc_match_state_runs_sim((enum cc_match_state)e->base_state) || e->base_state != s->match_state) {
		pp->stats->stopped++;
		return;
	}
	struct cc_sim_body truth;
	cc_wire_body_to_sim(&me->body, &truth);
	double dx = (double)truth.pos.x - e->pos.x, dy = (double)truth.pos.y - e->pos.y, dz = (double)truth.pos.z - e->pos.z;
	if (pp->n_pending == PC_PREDICT_PENDING)
		settle_first(pp, 1); /* full: the oldest has waited longest */
	pp->pending[pp->n_pending++] = (struct pc_predict_pending){ .base_tick = e->base_tick, .tick = s->tick,
								     .err_um = (uint64_t)llround(sqrt(dx * dx + dy * dy + dz * dz) * 1e6),
								     .at_ms = now_ms };
}

void pc_predict_snapshot(struct pc_predict *pp, const struct cc_wire_snapshot *s,
			 const uint8_t team_of[CC_WIRE_MAX_PLAYERS], int64_t now_ms)
{
	const struct cc_wire_player_state *me = NULL;
	for (unsigned i = 0; i < s->player_count; i++)
		if (s->players[i].slot == pp->slot)
			me = &s->players[i];
	if (!me || !(me->flags & CC_WIRE_PF_HAS_INPUT) || pp->slot >= CC_SIM_MAX_SHIPS)
		return; /* the server has applied none of our inputs yet: nothing to reconcile with */
	measure(pp, s, me, now_ms);

	/* Reconcile: the snapshot is the truth after input k; replay what came after it. */
	uint16_t k = me->last_input_seq;
	if (!pc_snapshot_view(s, team_of, pp->slot, pp->team, &pp->world)) {
		pp->have_world = false;
		return;
	}
	pp->world.ball_live = s->match_state != CC_MATCH_GOAL_PAUSE; /* the ball rests in the net until the kickoff */
	pp->world_state = s->match_state;
	pp->base_tick = s->tick;
	pp->base_offset = (uint16_t)(s->tick - k);
	pp->world_seq = k;
	pp->have_world = true;
	int ahead = pp->have_input ? cc_wire_seq_diff(pp->newest_seq, k) : 0;
	if (ahead >= PC_PREDICT_HISTORY) {
		pp->have_world = false; /* more unacknowledged inputs than we keep: wait for a fresher snapshot */
		return;
	}
	for (int i = 1; i <= ahead; i++) {
		uint16_t seq = (uint16_t)(k + (unsigned)i);
		const struct pc_predict_entry *e = &pp->hist[seq % PC_PREDICT_HISTORY];
		if (!e->recorded || e->seq != seq) {
			pp->have_world = false;
			return;
		}
		step(pp, seq);
		pp->stats->replayed++;
	}
}

void pc_predict_reliable(struct pc_predict *pp, uint32_t tick, bool kickoff)
{
	if (kickoff && tick > 0) {
		uint32_t reset = tick - 1; /* the snapshot of this tick already shows the reset bodies */
		unsigned kept = 0;
		for (unsigned i = 0; i < pp->n_pending; i++) {
			const struct pc_predict_pending *q = &pp->pending[i];
			if (q->base_tick < reset && reset <= q->tick)
				pp->stats->kickoff++;
			else
				pp->pending[kept++] = *q;
		}
		pp->n_pending = kept;
	}
	/* Every kickoff before this message's tick has arrived: samples before it are settled. */
	unsigned n = 0;
	while (n < pp->n_pending && pp->pending[n].tick < tick)
		n++;
	settle_first(pp, n);
}

void pc_predict_poll(struct pc_predict *pp, int64_t now_ms)
{
	unsigned n = 0;
	while (n < pp->n_pending && now_ms - pp->pending[n].at_ms > PC_PREDICT_PENDING_MS)
		n++;
	settle_first(pp, n);
}

void pc_predict_flush(struct pc_predict *pp)
{
	settle_first(pp, pp->n_pending);
}
