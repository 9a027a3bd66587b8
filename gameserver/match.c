/*
 * match.c - see match.h. The loop per tick is the one game/match_lifecycle.h
 * prescribes: step the sim in the states that run it, tick the lifecycle
 * with the goal the sim saw, kick off when it says so.
 */
#include "match.h"

#include <stdlib.h>
#include <string.h>

#include "wire_glue.h"
#include "game/chase.h"
#include "game/match_lifecycle.h"
#include "game/sim.h"
#include "sys/banned.h"

struct gs_match {
	struct cc_sim sim;
	struct cc_match life;
	struct cc_sim_input inputs[CC_SIM_MAX_SHIPS]; /* by slot: what each ship does this tick */
	enum gs_driver driver[CC_SIM_MAX_SHIPS];
	bool queued[CC_SIM_MAX_SHIPS];            /* a driver change waits for the next kickoff */
	enum gs_driver queued_driver[CC_SIM_MAX_SHIPS];
	int n_slots, n_present, expected;         /* n_present: slots driven by their players */
	bool over;
};

static uint32_t ticks(int64_t seconds)
{
	int64_t t = seconds * CC_SIM_TICK_RATE;
	return t < 1 ? 1 : t > CC_MATCH_MAX_TICKS ? CC_MATCH_MAX_TICKS : (uint32_t)t;
}

struct gs_match *gs_match_create(const struct gs_match_options *opts)
{
	if (opts->n_slots < 1 || opts->n_slots > CC_SIM_MAX_SHIPS)
		return NULL;
	struct gs_match *m = calloc(1, sizeof *m);
	if (!m)
		return NULL;
	m->n_slots = opts->n_slots;
	m->expected = opts->expected;
	struct cc_match_config cfg = cc_match_config_default();
	cfg.regulation_ticks = ticks(opts->match_seconds);
	cfg.warmup_ticks = ticks(opts->warmup_seconds);
	cfg.loading_max_ticks = ticks(opts->connect_window_seconds);
	cfg.goal_pause_ticks = ticks(opts->goal_pause_seconds);
	cfg.full_time_ticks = ticks(1);
	cfg.results_ticks = ticks(1);
	cfg.overtime = true;
	cfg.overtime_max_ticks = opts->overtime_max_seconds > 0 ? ticks(opts->overtime_max_seconds) : 0;
	if (cc_sim_init(&m->sim, (unsigned)opts->n_slots, opts->teams) != 0 || cc_match_init(&m->life, &cfg) != 0) {
		free(m);
		return NULL;
	}
	/* Nobody is here yet: every ship parked until its player arrives. */
	for (int i = 0; i < opts->n_slots; i++)
		if (cc_sim_set_active(&m->sim, (unsigned)i, false) != 0)
			CC_BUG("slot below ship_count refused");
	return m;
}

void gs_match_set_driver(struct gs_match *m, int slot, enum gs_driver d)
{
	if (slot < 0 || slot >= m->n_slots || m->driver[slot] == d)
		return;
	m->n_present += (d == GS_DRIVER_PLAYER) - (m->driver[slot] == GS_DRIVER_PLAYER);
	m->driver[slot] = d;
	/* A new driver starts from neutral controls: an away ship coasts, a player's first input takes over. */
	memset(&m->inputs[slot], 0, sizeof m->inputs[slot]);
	if (cc_sim_set_active(&m->sim, (unsigned)slot, d != GS_DRIVER_NONE) != 0)
		CC_BUG("slot below ship_count refused");
}

void gs_match_set_present(struct gs_match *m, int slot, int team, bool present)
{
	(void)team; /* the roster fixed it at create */
	gs_match_set_driver(m, slot, present ? GS_DRIVER_PLAYER : GS_DRIVER_NONE);
}

void gs_match_driver_at_kickoff(struct gs_match *m, int slot, enum gs_driver d, bool cancel)
{
	if (slot < 0 || slot >= m->n_slots)
		return;
	m->queued[slot] = !cancel;
	m->queued_driver[slot] = d;
}

enum gs_driver gs_match_driver(const struct gs_match *m, int slot)
{
	return slot >= 0 && slot < m->n_slots ? m->driver[slot] : GS_DRIVER_NONE;
}

bool gs_match_entry_queued(const struct gs_match *m, int slot)
{
	return slot >= 0 && slot < m->n_slots && m->queued[slot];
}

void gs_match_input(struct gs_match *m, int slot, const struct gs_input *in)
{
	if (slot < 0 || slot >= m->n_slots || m->driver[slot] != GS_DRIVER_PLAYER)
		return; /* an away or bot-driven ship takes no player input */
	struct cc_sim_input *s = &m->inputs[slot];
	s->thrust = (struct cc_sim_vec3){ in->strafe / 127.0f, in->lift / 127.0f, in->throttle / 127.0f };
	s->torque = (struct cc_sim_vec3){ in->pitch / 127.0f, in->yaw / 127.0f, in->roll / 127.0f };
	s->boost = (in->buttons & 1) != 0;
}

/*
 * A bot's fixed style in [-0.9, 0.9], distinct per slot: identical bots on
 * both teams would mirror each other forever (game/chase.h).
 */
static float bot_style(int slot)
{
	return (float)((slot * 7) % 13) / 6.0f * 0.9f - 0.9f;
}

/* Turns one lifecycle call's events into ours, in the order they happened. */
static void emit(struct gs_match *m, const struct cc_match_events *mev, int last_touch, gs_event_fn fn, void *ctx)
{
	if (mev->goal_team >= 0) {
		struct gs_event ev = { .kind = GS_EVENT_GOAL, .team = mev->goal_team, .slot = last_touch,
				       .score = { m->life.score[0], m->life.score[1] } };
		fn(ctx, &ev);
	}
	if (mev->state_changed) {
		struct gs_event ev = { .kind = GS_EVENT_STATE, .state = mev->to };
		fn(ctx, &ev);
	}
	if (mev->kickoff) {
		/* Queued entries first, so an entering ship is reset to its spawn with the others. */
		for (int i = 0; i < m->n_slots; i++)
			if (m->queued[i]) {
				m->queued[i] = false;
				gs_match_set_driver(m, i, m->queued_driver[i]);
			}
		cc_sim_kickoff(&m->sim);
		struct gs_event ev = { .kind = GS_EVENT_KICKOFF };
		fn(ctx, &ev);
	}
	if (mev->ended) {
		m->over = true;
		struct gs_event ev = { .kind = GS_EVENT_ENDED, .score = { mev->final_score[0], mev->final_score[1] },
				       .overtime = mev->reason == CC_MATCH_END_GOLDEN_GOAL ||
						   mev->reason == CC_MATCH_END_OVERTIME_LIMIT,
				       .winner = mev->winner, .end_reason = cc_match_end_reason_name(mev->reason) };
		fn(ctx, &ev);
	}
}

void gs_match_step(struct gs_match *m, gs_event_fn fn, void *ctx)
{
	struct cc_match_events mev;
	if (m->life.state == CC_MATCH_LOADING && m->n_present >= m->expected && cc_match_begin(&m->life, &mev) == 0)
		emit(m, &mev, -1, fn, ctx);
	struct cc_sim_events sev = { .goal_team = -1, .last_touch = -1 };
	if (cc_match_state_runs_sim(m->life.state)) {
		for (int i = 0; i < m->n_slots; i++)
			if (m->driver[i] == GS_DRIVER_BOT)
				cc_chase_team_input(&m->sim, (unsigned)i, bot_style(i), &m->inputs[i]);
		cc_sim_step(&m->sim, m->inputs, &sev);
	}
	cc_match_tick(&m->life, sev.goal_team, &mev);
	emit(m, &mev, sev.last_touch, fn, ctx);
}

uint32_t gs_match_tick(const struct gs_match *m) { return m->life.tick; }
int gs_match_state(const struct gs_match *m) { return (int)m->life.state; }
void gs_match_score(const struct gs_match *m, int score[2]) { score[0] = m->life.score[0]; score[1] = m->life.score[1]; }
bool gs_match_over(const struct gs_match *m) { return m->over; }
const struct cc_sim *gs_match_sim(const struct gs_match *m) { return &m->sim; }
const struct cc_match *gs_match_lifecycle(const struct gs_match *m) { return &m->life; }
void gs_match_free(struct gs_match *m) { free(m); }
