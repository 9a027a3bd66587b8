/*
 * match_lifecycle.c - match states, legal moves and the banked clock
 * (match_lifecycle.h documents the rules per state).
 */
#include "game/match_lifecycle.h"

#include <stdio.h>
#include <string.h>

#include "sys/banned.h"

/* The wire values are the contract: a renumbering must fail the build, not a client. */
_Static_assert(CC_MATCH_LOADING == 0 && CC_MATCH_LOBBY == 7, "match state values are wire format");
_Static_assert(CC_MATCH_STATE_COUNT <= 256, "a match state travels in one byte");

static const char *const state_names[] = {
#define CC__MATCH_NAME(name, value) [value] = #name,
	CC_MATCH_STATES(CC__MATCH_NAME)
#undef CC__MATCH_NAME
};

static const char *const end_reason_names[] = {
#define CC__MATCH_END_NAME(name, value) [value] = #name,
	CC_MATCH_END_REASONS(CC__MATCH_END_NAME)
#undef CC__MATCH_END_NAME
};

#define S(x) (1u << CC_MATCH_##x)
/* Legal moves: allowed[from] is a set of destinations. Every state before RESULTS may be abandoned. */
static const unsigned allowed[CC_MATCH_STATE_COUNT] = {
	[CC_MATCH_LOADING] = S(WARMUP) | S(RESULTS),
	[CC_MATCH_WARMUP] = S(PLAYING) | S(RESULTS),
	[CC_MATCH_PLAYING] = S(GOAL_PAUSE) | S(FULL_TIME) | S(RESULTS),
	[CC_MATCH_GOAL_PAUSE] = S(PLAYING) | S(FULL_TIME) | S(RESULTS),
	[CC_MATCH_FULL_TIME] = S(OVERTIME) | S(RESULTS),
	[CC_MATCH_OVERTIME] = S(RESULTS),
	[CC_MATCH_RESULTS] = S(LOBBY),
	[CC_MATCH_LOBBY] = 0,
};
#undef S

const char *cc_match_state_name(enum cc_match_state state)
{
	if ((unsigned)state >= CC_MATCH_STATE_COUNT || !state_names[state])
		return "INVALID";
	return state_names[state];
}

int cc_match_state_parse(const char *text, enum cc_match_state *out)
{
	if (!text || !out)
		return CC_EINVAL;
	for (unsigned i = 0; i < CC_MATCH_STATE_COUNT; i++) {
		if (state_names[i] && strcmp(text, state_names[i]) == 0) {
			*out = (enum cc_match_state)i;
			return 0;
		}
	}
	return CC_EINVAL;
}

const char *cc_match_end_reason_name(enum cc_match_end_reason reason)
{
	if ((unsigned)reason >= CC_MATCH_END_REASON_COUNT || !end_reason_names[reason])
		return "INVALID";
	return end_reason_names[reason];
}

bool cc_match_transition_allowed(enum cc_match_state from, enum cc_match_state to)
{
	if ((unsigned)from >= CC_MATCH_STATE_COUNT || (unsigned)to >= CC_MATCH_STATE_COUNT)
		return false;
	return (allowed[from] >> to) & 1u;
}

bool cc_match_state_runs_sim(enum cc_match_state state)
{
	return state == CC_MATCH_WARMUP || state == CC_MATCH_PLAYING || state == CC_MATCH_GOAL_PAUSE ||
	       state == CC_MATCH_OVERTIME;
}

struct cc_match_config cc_match_config_default(void)
{
	struct cc_match_config cfg = {
		.regulation_ticks = CC_MATCH_DEFAULT_REGULATION_TICKS,
		.warmup_ticks = CC_MATCH_DEFAULT_WARMUP_TICKS,
		.goal_pause_ticks = CC_MATCH_DEFAULT_GOAL_PAUSE_TICKS,
		.full_time_ticks = CC_MATCH_DEFAULT_FULL_TIME_TICKS,
		.results_ticks = CC_MATCH_DEFAULT_RESULTS_TICKS,
		.loading_max_ticks = 0,
		.overtime_max_ticks = 0,
		.overtime = true,
	};
	return cfg;
}

/* Appends one "; "-separated problem to err (truncating safely) for cc_match_config_validate. */
static void check_range(const char *name, uint32_t value, uint32_t min, char *err, size_t errlen, int *bad)
{
	if (value >= min && value <= CC_MATCH_MAX_TICKS)
		return;
	if (err && errlen > 0) {
		size_t used = strlen(err);
		if (used < errlen)
			snprintf(err + used, errlen - used, "%s%s %u is outside %u..%u", *bad ? "; " : "", name,
				 (unsigned)value, (unsigned)min, (unsigned)CC_MATCH_MAX_TICKS);
	}
	(*bad)++;
}

int cc_match_config_validate(const struct cc_match_config *cfg, char *err, size_t errlen)
{
	int bad = 0;
	if (err && errlen > 0)
		err[0] = '\0';
	if (!cfg) {
		if (err && errlen > 0)
			snprintf(err, errlen, "no config");
		return CC_EINVAL;
	}
	check_range("regulation_ticks", cfg->regulation_ticks, 1, err, errlen, &bad);
	check_range("warmup_ticks", cfg->warmup_ticks, 1, err, errlen, &bad);
	check_range("goal_pause_ticks", cfg->goal_pause_ticks, 1, err, errlen, &bad);
	check_range("full_time_ticks", cfg->full_time_ticks, 1, err, errlen, &bad);
	check_range("results_ticks", cfg->results_ticks, 1, err, errlen, &bad);
	check_range("loading_max_ticks", cfg->loading_max_ticks, 0, err, errlen, &bad);
	check_range("overtime_max_ticks", cfg->overtime_max_ticks, 0, err, errlen, &bad);
	return bad ? CC_EINVAL : 0;
}

int cc_match_init(struct cc_match *m, const struct cc_match_config *cfg)
{
	if (!m || cc_match_config_validate(cfg, NULL, 0) != 0)
		return CC_EINVAL;
	memset(m, 0, sizeof(*m));
	m->cfg = *cfg;
	m->state = CC_MATCH_LOADING;
	m->remaining_ticks = cfg->regulation_ticks;
	m->end_reason = CC_MATCH_END_NONE;
	return 0;
}

static void events_reset(struct cc_match_events *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->goal_team = -1;
	ev->winner = -1;
	ev->reason = CC_MATCH_END_NONE;
}

/* The one place a state changes: checks the table (a move it refuses is our bug) and records it. */
static void move(struct cc_match *m, enum cc_match_state to, struct cc_match_events *ev)
{
	if (!cc_match_transition_allowed(m->state, to))
		CC_BUG("match_lifecycle: a move the transition table refuses");
	if (!ev->state_changed)
		ev->from = m->state;
	ev->state_changed = true;
	ev->to = to;
	m->state = to;
	m->state_ticks = 0;
}

static void end(struct cc_match *m, enum cc_match_end_reason reason, struct cc_match_events *ev)
{
	move(m, CC_MATCH_RESULTS, ev);
	m->end_reason = reason;
	ev->ended = true;
	ev->reason = reason;
	ev->final_score[0] = m->score[0];
	ev->final_score[1] = m->score[1];
	ev->winner = m->score[0] > m->score[1] ? 0 : m->score[1] > m->score[0] ? 1 : -1;
}

/* A counted goal: the score saturates rather than wrap (65535 goals is not a match). */
static void score(struct cc_match *m, int team, struct cc_match_events *ev)
{
	if (m->score[team] < UINT16_MAX)
		m->score[team]++;
	ev->goal_team = (int8_t)team;
}

int cc_match_begin(struct cc_match *m, struct cc_match_events *ev)
{
	struct cc_match_events local;
	if (!ev)
		ev = &local;
	events_reset(ev);
	if (!m || m->state != CC_MATCH_LOADING)
		return CC_ESTATE;
	move(m, CC_MATCH_WARMUP, ev);
	ev->kickoff = true;
	return 0;
}

void cc_match_tick(struct cc_match *m, int goal_team, struct cc_match_events *ev)
{
	struct cc_match_events local;
	int goal = goal_team == 0 || goal_team == 1 ? goal_team : -1;

	if (!ev)
		ev = &local;
	events_reset(ev);
	m->tick++;
	m->state_ticks++;
	/* A goal reported in a state that does not count goals is practice (warmup) or a caller's slip. */
	if (goal >= 0 && m->state != CC_MATCH_PLAYING && m->state != CC_MATCH_OVERTIME)
		ev->goal_ignored = true;

	switch (m->state) {
	case CC_MATCH_LOADING:
		if (m->cfg.loading_max_ticks && m->state_ticks >= m->cfg.loading_max_ticks) {
			move(m, CC_MATCH_WARMUP, ev);
			ev->kickoff = true;
		}
		break;
	case CC_MATCH_WARMUP:
		if (goal >= 0)
			ev->kickoff = true; /* practice goal: put the ball back */
		if (m->state_ticks >= m->cfg.warmup_ticks) {
			move(m, CC_MATCH_PLAYING, ev);
			ev->kickoff = true;
		}
		break;
	case CC_MATCH_PLAYING:
		/* This tick was played: it comes off the clock whatever else happens in it. */
		if (m->remaining_ticks > 0) /* never 0 here: both ways in check it; no wrap if that breaks */
			m->remaining_ticks--;
		m->playing_ticks++;
		if (goal >= 0) {
			score(m, goal, ev);
			move(m, CC_MATCH_GOAL_PAUSE, ev); /* remaining_ticks is banked as it stands */
		} else if (m->remaining_ticks == 0) {
			move(m, CC_MATCH_FULL_TIME, ev);
		}
		break;
	case CC_MATCH_GOAL_PAUSE:
		if (m->state_ticks >= m->cfg.goal_pause_ticks) {
			if (m->remaining_ticks == 0) {
				move(m, CC_MATCH_FULL_TIME, ev);
			} else {
				move(m, CC_MATCH_PLAYING, ev);
				ev->kickoff = true;
			}
		}
		break;
	case CC_MATCH_FULL_TIME:
		if (m->state_ticks >= m->cfg.full_time_ticks) {
			if (m->score[0] == m->score[1] && m->cfg.overtime) {
				move(m, CC_MATCH_OVERTIME, ev);
				ev->kickoff = true;
			} else {
				end(m, CC_MATCH_END_REGULATION, ev);
			}
		}
		break;
	case CC_MATCH_OVERTIME:
		m->overtime_ticks++;
		if (goal >= 0) {
			score(m, goal, ev);
			end(m, CC_MATCH_END_GOLDEN_GOAL, ev);
		} else if (m->cfg.overtime_max_ticks && m->overtime_ticks >= m->cfg.overtime_max_ticks) {
			end(m, CC_MATCH_END_OVERTIME_LIMIT, ev);
		}
		break;
	case CC_MATCH_RESULTS:
		if (m->state_ticks >= m->cfg.results_ticks)
			move(m, CC_MATCH_LOBBY, ev);
		break;
	case CC_MATCH_LOBBY:
	case CC_MATCH_STATE_COUNT:
		break;
	}
}

int cc_match_abandon(struct cc_match *m, struct cc_match_events *ev)
{
	struct cc_match_events local;
	if (!ev)
		ev = &local;
	events_reset(ev);
	if (!m || m->state == CC_MATCH_RESULTS || m->state == CC_MATCH_LOBBY)
		return CC_ESTATE;
	end(m, CC_MATCH_END_ABANDONED, ev);
	return 0;
}

uint32_t cc_match_clock_seconds(const struct cc_match *m)
{
	return (m->remaining_ticks + CC_MATCH_TICK_RATE - 1) / CC_MATCH_TICK_RATE;
}
