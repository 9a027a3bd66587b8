/*
 * game/match_lifecycle without a server: the wire values and names, the
 * transition table, config validation, and scripted matches that prove
 * the clock banks every stoppage (regulation is exactly regulation_ticks
 * of PLAYING however many goals), draw -> overtime -> golden goal, warmup
 * practice goals, loading, abandoning, and the lifecycle driving the sim.
 */
#include <stdio.h>
#include <string.h>

#include "support.h"
#include "game/match_lifecycle.h"
#include "game/sim.h"
#include "sys/banned.h"

/* The wire values, written out by hand: a renumbered state must fail here. */
static const struct {
	const char *name;
	int value;
} wire_states[] = {
	{ "LOADING", 0 }, { "WARMUP", 1 },   { "PLAYING", 2 }, { "GOAL_PAUSE", 3 },
	{ "FULL_TIME", 4 }, { "OVERTIME", 5 }, { "RESULTS", 6 }, { "LOBBY", 7 },
};

START_TEST(wire_values)
{
	enum cc_match_state st;
	ck_assert_int_eq(CC_MATCH_STATE_COUNT, CC_ARRAY_LEN(wire_states));
	ck_assert_str_eq(cc_match_state_name((enum cc_match_state)wire_states[_i].value), wire_states[_i].name);
	ck_assert_int_eq(cc_match_state_parse(wire_states[_i].name, &st), 0);
	ck_assert_int_eq(st, wire_states[_i].value);
}
END_TEST

START_TEST(names_refuse)
{
	enum cc_match_state st = CC_MATCH_PLAYING;
	ck_assert_str_eq(cc_match_state_name(CC_MATCH_STATE_COUNT), "INVALID");
	ck_assert_str_eq(cc_match_state_name((enum cc_match_state)-1), "INVALID");
	ck_assert_int_eq(cc_match_state_parse("playing", &st), CC_EINVAL);
	ck_assert_int_eq(cc_match_state_parse("", &st), CC_EINVAL);
	ck_assert_int_eq(cc_match_state_parse(NULL, &st), CC_EINVAL);
	ck_assert_int_eq(st, CC_MATCH_PLAYING); /* untouched */
	ck_assert_str_eq(cc_match_end_reason_name(CC_MATCH_END_GOLDEN_GOAL), "GOLDEN_GOAL");
	ck_assert_int_eq(CC_MATCH_END_ABANDONED, 4);
	ck_assert_str_eq(cc_match_end_reason_name(CC_MATCH_END_REASON_COUNT), "INVALID");
}
END_TEST

struct move_case {
	enum cc_match_state from, to;
	bool allowed;
};

static const struct move_case move_cases[] = {
	{ CC_MATCH_LOADING, CC_MATCH_WARMUP, true },       { CC_MATCH_LOADING, CC_MATCH_PLAYING, false },
	{ CC_MATCH_LOADING, CC_MATCH_RESULTS, true },      { CC_MATCH_WARMUP, CC_MATCH_PLAYING, true },
	{ CC_MATCH_WARMUP, CC_MATCH_GOAL_PAUSE, false },   { CC_MATCH_PLAYING, CC_MATCH_GOAL_PAUSE, true },
	{ CC_MATCH_PLAYING, CC_MATCH_FULL_TIME, true },    { CC_MATCH_PLAYING, CC_MATCH_OVERTIME, false },
	{ CC_MATCH_PLAYING, CC_MATCH_PLAYING, false },     { CC_MATCH_GOAL_PAUSE, CC_MATCH_PLAYING, true },
	{ CC_MATCH_GOAL_PAUSE, CC_MATCH_FULL_TIME, true }, { CC_MATCH_GOAL_PAUSE, CC_MATCH_OVERTIME, false },
	{ CC_MATCH_FULL_TIME, CC_MATCH_OVERTIME, true },   { CC_MATCH_FULL_TIME, CC_MATCH_RESULTS, true },
	{ CC_MATCH_FULL_TIME, CC_MATCH_PLAYING, false },   { CC_MATCH_OVERTIME, CC_MATCH_RESULTS, true },
	{ CC_MATCH_OVERTIME, CC_MATCH_GOAL_PAUSE, false }, { CC_MATCH_RESULTS, CC_MATCH_LOBBY, true },
	{ CC_MATCH_RESULTS, CC_MATCH_WARMUP, false },      { CC_MATCH_LOBBY, CC_MATCH_LOADING, false },
	{ CC_MATCH_STATE_COUNT, CC_MATCH_LOBBY, false },   { CC_MATCH_RESULTS, CC_MATCH_STATE_COUNT, false },
};

START_TEST(transition_table)
{
	const struct move_case *c = &move_cases[_i];
	ck_assert_msg(cc_match_transition_allowed(c->from, c->to) == c->allowed, "%s -> %s: want %s",
		      cc_match_state_name(c->from), cc_match_state_name(c->to), c->allowed ? "allowed" : "refused");
}
END_TEST

struct config_case {
	const char *what;
	void (*edit)(struct cc_match_config *);
	const char *want; /* NULL: valid */
};

static void cfg_none(struct cc_match_config *c) { (void)c; }
static void cfg_short(struct cc_match_config *c) { c->regulation_ticks = 1; c->warmup_ticks = 1; }
static void cfg_no_regulation(struct cc_match_config *c) { c->regulation_ticks = 0; }
static void cfg_no_pause(struct cc_match_config *c) { c->goal_pause_ticks = 0; }
static void cfg_huge(struct cc_match_config *c) { c->results_ticks = CC_MATCH_MAX_TICKS + 1; }
static void cfg_max(struct cc_match_config *c) { c->overtime_max_ticks = CC_MATCH_MAX_TICKS; }
static void cfg_two(struct cc_match_config *c) { c->warmup_ticks = 0; c->loading_max_ticks = UINT32_MAX; }

static const struct config_case config_cases[] = {
	{ "defaults", cfg_none, NULL },
	{ "one-tick match", cfg_short, NULL },
	{ "overtime cap at the maximum", cfg_max, NULL },
	{ "no regulation", cfg_no_regulation, "regulation_ticks 0 is outside 1..216000" },
	{ "no goal pause", cfg_no_pause, "goal_pause_ticks 0 is outside 1..216000" },
	{ "results past an hour", cfg_huge, "results_ticks 216001 is outside 1..216000" },
	{ "two problems", cfg_two, "warmup_ticks 0 is outside 1..216000; loading_max_ticks 4294967295 is outside 0..216000" },
};

START_TEST(config_table)
{
	const struct config_case *c = &config_cases[_i];
	struct cc_match_config cfg = cc_match_config_default();
	struct cc_match m;
	char err[256];
	c->edit(&cfg);
	int rc = cc_match_config_validate(&cfg, err, sizeof(err));
	if (!c->want) {
		ck_assert_msg(rc == 0, "%s: refused: %s", c->what, err);
		ck_assert_int_eq(cc_match_init(&m, &cfg), 0);
		return;
	}
	ck_assert_msg(rc == CC_EINVAL, "%s: accepted", c->what);
	ck_assert_msg(strcmp(err, c->want) == 0, "%s: message \"%s\", want \"%s\"", c->what, err, c->want);
	ck_assert_int_eq(cc_match_init(&m, &cfg), CC_EINVAL);
	/* A tiny buffer truncates, never overflows. */
	char tiny[8];
	ck_assert_int_eq(cc_match_config_validate(&cfg, tiny, sizeof(tiny)), CC_EINVAL);
	ck_assert_uint_eq(strlen(tiny), sizeof(tiny) - 1);
	ck_assert_int_eq(cc_match_config_validate(NULL, NULL, 0), CC_EINVAL);
}
END_TEST

/* Short durations for scripted matches. */
static struct cc_match_config short_config(void)
{
	struct cc_match_config cfg = cc_match_config_default();
	cfg.regulation_ticks = 600;
	cfg.warmup_ticks = 30;
	cfg.goal_pause_ticks = 120;
	cfg.full_time_ticks = 60;
	cfg.results_ticks = 90;
	return cfg;
}

/* What a scripted match saw. */
struct tally {
	uint32_t playing;      /* ticks that began in PLAYING */
	uint32_t paused;       /* ticks that began in GOAL_PAUSE */
	uint32_t overtime;     /* ticks that began in OVERTIME */
	int kickoffs;
	int goals[2];
	int ended;
	struct cc_match_events end; /* the ended event */
};

/*
 * Ticks m until it reaches LOBBY or `limit` ticks, calling goal_at(playing
 * or overtime tick index) to decide each tick's goal. Every move is checked
 * against the table (cc_match_transition_allowed).
 */
static void play(struct cc_match *m, int (*goal_at)(const struct cc_match *, const void *), const void *arg,
		 uint32_t limit, struct tally *t)
{
	struct cc_match_events ev;
	memset(t, 0, sizeof(*t));
	for (uint32_t i = 0; i < limit && m->state != CC_MATCH_LOBBY; i++) {
		enum cc_match_state before = m->state;
		int goal = goal_at(m, arg);
		cc_match_tick(m, goal, &ev);
		t->playing += before == CC_MATCH_PLAYING;
		t->paused += before == CC_MATCH_GOAL_PAUSE;
		t->overtime += before == CC_MATCH_OVERTIME;
		t->kickoffs += ev.kickoff;
		if (ev.goal_team >= 0)
			t->goals[ev.goal_team]++;
		if (ev.state_changed) {
			ck_assert_msg(ev.from == before && ev.to == m->state, "event %s -> %s, match went %s -> %s",
				      cc_match_state_name(ev.from), cc_match_state_name(ev.to),
				      cc_match_state_name(before), cc_match_state_name(m->state));
			ck_assert(cc_match_transition_allowed(ev.from, ev.to));
		} else {
			ck_assert_int_eq(before, m->state);
		}
		if (ev.ended) {
			t->ended++;
			t->end = ev;
		}
	}
}

/* Goals scripted by PLAYING tick: goals[k] is the playing_ticks value (0-based) at which team team[k] scores. */
struct script {
	uint32_t at[8];
	int team[8];
	int n;
	uint32_t ot_at; /* overtime tick (0-based) of a golden goal; 0 = none */
	int ot_team;
};

static int scripted(const struct cc_match *m, const void *arg)
{
	const struct script *s = arg;
	if (m->state == CC_MATCH_PLAYING)
		for (int k = 0; k < s->n; k++)
			if (s->at[k] == m->playing_ticks)
				return s->team[k];
	if (m->state == CC_MATCH_OVERTIME && s->ot_at && m->overtime_ticks == s->ot_at)
		return s->ot_team;
	return -1;
}

struct clock_case {
	const char *what;
	struct script script;
	uint16_t score0, score1;
	enum cc_match_end_reason reason;
	int kickoffs; /* warmup start + warmup end + one per goal that resumes play (+ overtime) */
};

static const struct clock_case clock_cases[] = {
	{ "no goals, overtime cap", { { 0 }, { 0 }, 0, 0, 0 }, 0, 0, CC_MATCH_END_OVERTIME_LIMIT, 3 },
	{ "one goal", { { 100 }, { 0 }, 1, 0, 0 }, 1, 0, CC_MATCH_END_REGULATION, 3 },
	{ "four goals", { { 0, 150, 151, 400 }, { 1, 0, 0, 1 }, 4, 0, 0 }, 2, 3, CC_MATCH_END_GOLDEN_GOAL, 7 },
	{ "goal on the last tick", { { 10, 599 }, { 1, 1 }, 2, 0, 0 }, 0, 2, CC_MATCH_END_REGULATION, 3 },
	{ "goal on the first tick", { { 0 }, { 0 }, 1, 0, 0 }, 1, 0, CC_MATCH_END_REGULATION, 3 },
};

/*
 * The clock banks stoppages: however many goals (each followed by a 2 s
 * pause), the match spends exactly regulation_ticks in PLAYING, and the
 * pauses are all there on top.
 */
START_TEST(clock_banks_stoppages)
{
	const struct clock_case *c = &clock_cases[_i];
	struct cc_match_config cfg = short_config();
	struct script s = c->script;
	struct cc_match m;
	struct tally t;
	cfg.overtime_max_ticks = 300;
	if (c->reason == CC_MATCH_END_GOLDEN_GOAL) {
		s.ot_at = 50;
		s.ot_team = 1;
	}
	ck_assert_int_eq(cc_match_init(&m, &cfg), 0);
	ck_assert_int_eq(cc_match_begin(&m, NULL), 0);
	play(&m, scripted, &s, 100000, &t);
	/* begin()'s kickoff is not counted by play(). */
	t.kickoffs++;
	ck_assert_msg(t.playing == cfg.regulation_ticks, "%s: %u PLAYING ticks, want %u", c->what, t.playing,
		      cfg.regulation_ticks);
	ck_assert_uint_eq(m.playing_ticks, cfg.regulation_ticks);
	ck_assert_uint_eq(m.remaining_ticks, 0);
	ck_assert_msg(t.paused == (uint32_t)s.n * cfg.goal_pause_ticks, "%s: %u paused ticks for %d goals", c->what,
		      t.paused, s.n);
	ck_assert_int_eq(m.state, CC_MATCH_LOBBY);
	ck_assert_int_eq(t.ended, 1);
	ck_assert_msg(t.end.final_score[0] == c->score0 && t.end.final_score[1] == c->score1, "%s: %u-%u", c->what,
		      t.end.final_score[0], t.end.final_score[1]);
	ck_assert_msg(t.end.reason == c->reason, "%s: ended by %s", c->what, cc_match_end_reason_name(t.end.reason));
	ck_assert_int_eq(t.end.winner, c->score0 > c->score1 ? 0 : c->score1 > c->score0 ? 1 : -1);
	ck_assert_msg(t.kickoffs == c->kickoffs, "%s: %d kickoffs, want %d", c->what, t.kickoffs, c->kickoffs);
	ck_assert_int_eq(t.goals[0], c->score0);
	ck_assert_int_eq(t.goals[1], c->score1);
}
END_TEST

/* Draw at full time -> OVERTIME with a kickoff -> the first goal ends it -> RESULTS -> LOBBY. */
START_TEST(draw_overtime_golden_goal)
{
	struct cc_match_config cfg = short_config();
	struct cc_match m;
	struct cc_match_events ev;
	struct script s = { { 100, 300 }, { 0, 1 }, 2, 0, 0 };
	ck_assert_int_eq(cc_match_init(&m, &cfg), 0);
	ck_assert_int_eq(cc_match_begin(&m, NULL), 0);
	while (m.state != CC_MATCH_FULL_TIME)
		cc_match_tick(&m, scripted(&m, &s), &ev);
	ck_assert_uint_eq(m.score[0], 1);
	ck_assert_uint_eq(m.score[1], 1);
	for (uint32_t i = 1; i < cfg.full_time_ticks; i++) {
		cc_match_tick(&m, 0, &ev); /* a goal in FULL_TIME is a caller's slip: ignored */
		ck_assert(ev.goal_ignored && !ev.state_changed);
	}
	cc_match_tick(&m, -1, &ev);
	ck_assert_int_eq(m.state, CC_MATCH_OVERTIME);
	ck_assert(ev.kickoff && ev.state_changed && ev.from == CC_MATCH_FULL_TIME);
	for (int i = 0; i < 1000; i++) {
		cc_match_tick(&m, -1, &ev);
		ck_assert_int_eq(m.state, CC_MATCH_OVERTIME); /* no cap: golden goal only */
	}
	cc_match_tick(&m, 1, &ev);
	ck_assert(ev.ended);
	ck_assert_int_eq(ev.goal_team, 1);
	ck_assert_int_eq(ev.winner, 1);
	ck_assert_int_eq(ev.reason, CC_MATCH_END_GOLDEN_GOAL);
	ck_assert_uint_eq(ev.final_score[0], 1);
	ck_assert_uint_eq(ev.final_score[1], 2);
	ck_assert_int_eq(m.state, CC_MATCH_RESULTS);
	ck_assert_uint_eq(m.overtime_ticks, 1001);
	/* Nothing counts once the match is over. */
	cc_match_tick(&m, 0, &ev);
	ck_assert(ev.goal_ignored && ev.goal_team == -1 && !ev.ended);
	for (uint32_t i = 1; i < cfg.results_ticks; i++)
		cc_match_tick(&m, -1, &ev);
	ck_assert_int_eq(m.state, CC_MATCH_LOBBY);
	ck_assert(ev.state_changed && ev.from == CC_MATCH_RESULTS);
	cc_match_tick(&m, -1, &ev);
	ck_assert_int_eq(m.state, CC_MATCH_LOBBY);
	ck_assert_uint_eq(m.score[1], 2);
}
END_TEST

/* With overtime off a draw is the result. */
START_TEST(draw_without_overtime)
{
	struct cc_match_config cfg = short_config();
	struct cc_match m;
	struct tally t;
	struct script s = { { 0 }, { 0 }, 0, 0, 0 };
	cfg.overtime = false;
	ck_assert_int_eq(cc_match_init(&m, &cfg), 0);
	ck_assert_int_eq(cc_match_begin(&m, NULL), 0);
	play(&m, scripted, &s, 100000, &t);
	ck_assert_uint_eq(t.overtime, 0);
	ck_assert_int_eq(t.end.reason, CC_MATCH_END_REGULATION);
	ck_assert_int_eq(t.end.winner, -1);
}
END_TEST

/* Warmup goals do not count; each resets with a kickoff. */
START_TEST(warmup_goals_are_practice)
{
	struct cc_match_config cfg = short_config();
	struct cc_match m;
	struct cc_match_events ev;
	ck_assert_int_eq(cc_match_init(&m, &cfg), 0);
	ck_assert_int_eq(cc_match_begin(&m, &ev), 0);
	ck_assert(ev.kickoff && ev.state_changed && ev.to == CC_MATCH_WARMUP);
	cc_match_tick(&m, 1, &ev);
	ck_assert(ev.goal_ignored && ev.kickoff);
	ck_assert_int_eq(ev.goal_team, -1);
	ck_assert_uint_eq(m.score[1], 0);
	ck_assert_uint_eq(m.remaining_ticks, cfg.regulation_ticks);
}
END_TEST

/* LOADING waits for begin(), or moves on alone after loading_max_ticks; begin() elsewhere is refused. */
START_TEST(loading)
{
	struct cc_match_config cfg = short_config();
	struct cc_match m;
	struct cc_match_events ev;
	ck_assert_int_eq(cc_match_init(&m, &cfg), 0);
	for (int i = 0; i < 10000; i++)
		cc_match_tick(&m, -1, &ev);
	ck_assert_int_eq(m.state, CC_MATCH_LOADING);
	cfg.loading_max_ticks = 5;
	ck_assert_int_eq(cc_match_init(&m, &cfg), 0);
	for (int i = 0; i < 4; i++)
		cc_match_tick(&m, -1, &ev);
	ck_assert_int_eq(m.state, CC_MATCH_LOADING);
	cc_match_tick(&m, -1, &ev);
	ck_assert_int_eq(m.state, CC_MATCH_WARMUP);
	ck_assert(ev.kickoff);
	ck_assert_int_eq(cc_match_begin(&m, &ev), CC_ESTATE);
	ck_assert(!ev.state_changed);
	ck_assert_int_eq(m.state, CC_MATCH_WARMUP);
	ck_assert_int_eq(cc_match_begin(NULL, NULL), CC_ESTATE);
}
END_TEST

/* Abandon ends at once with the score as it stands, from any state before RESULTS. */
START_TEST(abandon)
{
	struct cc_match_config cfg = short_config();
	struct cc_match m;
	struct cc_match_events ev;
	struct script s = { { 5 }, { 1 }, 1, 0, 0 };
	ck_assert_int_eq(cc_match_init(&m, &cfg), 0);
	ck_assert_int_eq(cc_match_begin(&m, NULL), 0);
	while (m.state != CC_MATCH_GOAL_PAUSE)
		cc_match_tick(&m, scripted(&m, &s), &ev);
	ck_assert_int_eq(cc_match_abandon(&m, &ev), 0);
	ck_assert(ev.ended && ev.reason == CC_MATCH_END_ABANDONED && ev.winner == 1);
	ck_assert_int_eq(m.state, CC_MATCH_RESULTS);
	ck_assert_int_eq(cc_match_abandon(&m, &ev), CC_ESTATE);
	ck_assert(!ev.ended);
}
END_TEST

START_TEST(clock_seconds)
{
	struct cc_match_config cfg = short_config();
	struct cc_match m;
	ck_assert_int_eq(cc_match_init(&m, &cfg), 0);
	ck_assert_uint_eq(cc_match_clock_seconds(&m), 10);
	m.remaining_ticks = 61;
	ck_assert_uint_eq(cc_match_clock_seconds(&m), 2);
	m.remaining_ticks = 0;
	ck_assert_uint_eq(cc_match_clock_seconds(&m), 0);
}
END_TEST

/*
 * The loop cc-gameserver runs (match_lifecycle.h): each kickoff the ball is
 * sent at the +z goal; the sim scores it exactly once per kickoff, the
 * lifecycle counts each, and every kickoff restores the spawn transforms.
 */
START_TEST(drives_the_sim)
{
	static const uint8_t teams[] = { 0, 1 };
	struct cc_match_config cfg = short_config();
	struct cc_sim sim, fresh;
	struct cc_match m;
	struct cc_match_events mev;
	struct cc_sim_events sev;
	int kicked = 0, goals = 0;
	ck_assert_int_eq(cc_sim_init(&sim, 2, teams), 0);
	ck_assert_int_eq(cc_sim_init(&fresh, 2, teams), 0);
	/* Ships parked out of the ball's path (team 1's spawn is on it). */
	for (unsigned i = 0; i < 2; i++) {
		ck_assert_int_eq(cc_sim_set_active(&sim, i, false), 0);
		ck_assert_int_eq(cc_sim_set_active(&fresh, i, false), 0);
	}
	ck_assert_int_eq(cc_match_init(&m, &cfg), 0);
	ck_assert_int_eq(cc_match_begin(&m, &mev), 0);
	while (m.state != CC_MATCH_LOBBY) {
		sev.goal_team = -1;
		if (cc_match_state_runs_sim(m.state)) {
			if (m.state == CC_MATCH_PLAYING && sim.ball_live && sim.ball.vel.z == 0.0f)
				sim.ball.vel.z = 40.0f; /* the kickoff strike */
			cc_sim_step(&sim, NULL, &sev);
		}
		cc_match_tick(&m, sev.goal_team, &mev);
		goals += mev.goal_team == 0;
		if (mev.kickoff) {
			cc_sim_kickoff(&sim);
			kicked++;
			for (unsigned i = 0; i < sim.ship_count; i++)
				ck_assert(memcmp(&sim.ships[i].body, &fresh.ships[i].body, sizeof(fresh.ships[i].body)) == 0);
			ck_assert(memcmp(&sim.ball, &fresh.ball, sizeof(fresh.ball)) == 0);
		}
	}
	/* 600 playing ticks; the ball needs ~41 ticks from the centre: one goal per kickoff. */
	ck_assert_int_gt(goals, 5);
	ck_assert_uint_eq(m.score[0], goals);
	ck_assert_uint_eq(m.score[1], 0);
	/* Warmup's end, then one after each goal, unless the last goal used up the clock. */
	ck_assert_int_ge(kicked, goals);
	ck_assert_int_le(kicked, goals + 1);
	ck_assert_uint_eq(m.playing_ticks, cfg.regulation_ticks);
	ck_assert_int_eq(m.end_reason, CC_MATCH_END_REGULATION);
}
END_TEST

static Suite *lifecycle_suite(void)
{
	Suite *s = suite_create("match_lifecycle");
	TCase *tc = tcase_create("core");
	tcase_add_loop_test(tc, wire_values, 0, CC_ARRAY_LEN(wire_states));
	tcase_add_test(tc, names_refuse);
	tcase_add_loop_test(tc, transition_table, 0, CC_ARRAY_LEN(move_cases));
	tcase_add_loop_test(tc, config_table, 0, CC_ARRAY_LEN(config_cases));
	tcase_add_loop_test(tc, clock_banks_stoppages, 0, CC_ARRAY_LEN(clock_cases));
	tcase_add_test(tc, draw_overtime_golden_goal);
	tcase_add_test(tc, draw_without_overtime);
	tcase_add_test(tc, warmup_goals_are_practice);
	tcase_add_test(tc, loading);
	tcase_add_test(tc, abandon);
	tcase_add_test(tc, clock_seconds);
	tcase_add_test(tc, drives_the_sim);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return cc_test_run_suite(lifecycle_suite());
}
