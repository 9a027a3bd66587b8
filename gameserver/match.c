/*
 * match.c - see match.h.
 */
#include "match.h"

#include <stdlib.h>
#include <string.h>

#include "wire_glue.h"
#include "sys/banned.h"

enum { S_LOADING, S_WARMUP, S_PLAYING, S_GOAL_PAUSE, S_FULL_TIME, S_OVERTIME, S_RESULTS, S_LOBBY };

struct gs_match {
	struct gs_match_options opts;
	uint32_t tick;
	int state;
	int64_t state_ticks;   /* ticks spent in the current state */
	int64_t clock_left;    /* regulation ticks left (banked across stoppages) */
	int score[2];
	bool present[GS_MATCH_MAX_SLOTS];
	int n_present;
	bool over;
};

struct gs_match *gs_match_create(const struct gs_match_options *opts)
{
	struct gs_match *m = calloc(1, sizeof *m);
	if (!m)
		return NULL;
	m->opts = *opts;
	m->clock_left = opts->match_seconds * 60;
	return m;
}

void gs_match_set_present(struct gs_match *m, int slot, int team, bool present)
{
	(void)team;
	if (slot < 0 || slot >= GS_MATCH_MAX_SLOTS || m->present[slot] == present)
		return;
	m->present[slot] = present;
	m->n_present += present ? 1 : -1;
}

void gs_match_input(struct gs_match *m, int slot, const struct gs_input *in)
{
	(void)m;
	(void)slot;
	(void)in;
}

static void enter(struct gs_match *m, int state, gs_event_fn fn, void *ctx)
{
	m->state = state;
	m->state_ticks = 0;
	struct gs_event ev = { .kind = GS_EVENT_STATE, .state = state };
	fn(ctx, &ev);
}

void gs_match_step(struct gs_match *m, gs_event_fn fn, void *ctx)
{
	m->tick++;
	m->state_ticks++;
	switch (m->state) {
	case S_LOADING:
		if (m->n_present >= 2 * m->opts.team_size || m->state_ticks >= m->opts.connect_window_seconds * 60)
			enter(m, S_WARMUP, fn, ctx);
		break;
	case S_WARMUP:
		if (m->state_ticks >= m->opts.warmup_seconds * 60) {
			struct gs_event ko = { .kind = GS_EVENT_KICKOFF };
			fn(ctx, &ko);
			enter(m, S_PLAYING, fn, ctx);
		}
		break;
	case S_PLAYING:
		if (--m->clock_left <= 0)
			enter(m, S_FULL_TIME, fn, ctx);
		break;
	case S_FULL_TIME:
		enter(m, S_RESULTS, fn, ctx);
		struct gs_event end = { .kind = GS_EVENT_ENDED, .score = { m->score[0], m->score[1] } };
		m->over = true;
		fn(ctx, &end);
		break;
	default:
		break;
	}
}

uint32_t gs_match_tick(const struct gs_match *m) { return m->tick; }
int gs_match_state(const struct gs_match *m) { return m->state; }
void gs_match_score(const struct gs_match *m, int score[2]) { score[0] = m->score[0]; score[1] = m->score[1]; }
bool gs_match_over(const struct gs_match *m) { return m->over; }
void gs_match_free(struct gs_match *m) { free(m); }
