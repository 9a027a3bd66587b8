/*
 * game/chase: the policy plays. A lone ship of either team scores in the
 * goal it attacks from kickoff; one that starts goal-side of the ball
 * goes round it and still scores the right way; 3v3 matches of chasers
 * score for both teams, and two runs of one match are bit-identical
 * through every goal and kickoff (the determinism of game/sim under real
 * play, not only random input).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "support.h"
#include "game/chase.h"
#include "game/sim.h"
#include "sys/banned.h"

struct solo_case {
	const char *what;
	uint8_t team;
	struct cc_sim_vec3 ship; /* start; x = 99: the kickoff spawn */
	struct cc_sim_vec3 ball;
};

static const struct solo_case solo_cases[] = {
	{ "team 0 from kickoff", 0, { 99, 0, 0 }, { 0, 9, 0 } },
	{ "team 1 from kickoff", 1, { 99, 0, 0 }, { 0, 9, 0 } },
	{ "team 0 goal-side of the ball", 0, { 2, 9, 20 }, { 0, 9, 5 } },
	{ "team 1 goal-side of the ball", 1, { -2, 9, -20 }, { 0, 9, -5 } },
	{ "team 0, ball in a corner", 0, { 99, 0, 0 }, { 16, 2, -20 } },
	{ "team 1, ball up high", 1, { 99, 0, 0 }, { -5, 16, 10 } },
};

/* A style in [-1, 1] from a small LCG. */
static float draw_style(uint32_t *s)
{
	*s = *s * 1664525u + 1013904223u;
	return (float)((*s >> 8) % 2001u) / 1000.0f - 1.0f;
}

/* One chaser alone: it scores within 30 s, for its own team. */
START_TEST(solo_scores)
{
	const struct solo_case *c = &solo_cases[_i];
	struct cc_sim sim;
	struct cc_sim_input in;
	struct cc_sim_events ev;
	int at = -1;
	ck_assert_int_eq(cc_sim_init(&sim, 1, &c->team), 0);
	if (c->ship.x != 99)
		sim.ships[0].body.pos = c->ship;
	sim.ball.pos = c->ball;
	for (int t = 0; t < 30 * CC_SIM_TICK_RATE && at < 0; t++) {
		cc_chase_input(&sim.ships[0].body, sim.ships[0].boost, c->team, &sim.ball, &in);
		cc_sim_step(&sim, &in, &ev);
		if (ev.goal_team >= 0) {
			ck_assert_msg(ev.goal_team == c->team, "%s: scored for team %d", c->what, ev.goal_team);
			at = t;
		}
	}
	ck_assert_msg(at >= 0, "%s: no goal in 30 s; ball at (%.1f, %.1f, %.1f), ship at (%.1f, %.1f, %.1f)", c->what,
		      (double)sim.ball.pos.x, (double)sim.ball.pos.y, (double)sim.ball.pos.z,
		      (double)sim.ships[0].body.pos.x, (double)sim.ships[0].body.pos.y, (double)sim.ships[0].body.pos.z);
	printf("%s: scored after %.2f s\n", c->what, (double)at / CC_SIM_TICK_RATE);
}
END_TEST

/* Every input the policy gives is within the ranges game/sim and game/wire take. */
START_TEST(inputs_in_range)
{
	struct cc_sim_body ship, ball;
	struct cc_sim_input in;
	memset(&ship, 0, sizeof(ship));
	memset(&ball, 0, sizeof(ball));
	ship.rot.w = 1;
	ball.rot.w = 1;
	/* On top of the ball, fast, spinning: degenerate, still in range. */
	ship.vel = (struct cc_sim_vec3){ 30, -30, 30 };
	ship.angvel = (struct cc_sim_vec3){ 5, 5, 5 };
	cc_chase_input(&ship, 1.0f, 0, &ball, &in);
	const float *f = &in.thrust.x;
	for (int i = 0; i < 3; i++) {
		ck_assert(isfinite(f[i]) && fabsf(f[i]) <= 1.0f);
		ck_assert(isfinite((&in.torque.x)[i]) && fabsf((&in.torque.x)[i]) <= 1.0f);
	}
}
END_TEST

/*
 * A 3v3 of chasers for `seconds`, kicking off after each goal. Each player
 * draws a new style at every kickoff from a seeded LCG, as cc-player does:
 * with fixed styles every kickoff replays the same way.
 */
static void chase_match(struct cc_sim *sim, uint32_t seed, int seconds, int goals[2])
{
	static const uint8_t teams[] = { 0, 0, 0, 1, 1, 1 };
	struct cc_sim_input in[6];
	struct cc_sim_events ev;
	float styles[6];
	ck_assert_int_eq(cc_sim_init(sim, 6, teams), 0);
	goals[0] = goals[1] = 0;
	for (unsigned i = 0; i < 6; i++)
		styles[i] = draw_style(&seed);
	for (int t = 0; t < seconds * CC_SIM_TICK_RATE; t++) {
		for (unsigned i = 0; i < 6; i++)
			cc_chase_team_input(sim, i, styles[i], &in[i]);
		cc_sim_step(sim, in, &ev);
		if (ev.goal_team >= 0) {
			goals[ev.goal_team]++;
			cc_sim_kickoff(sim);
			for (unsigned i = 0; i < 6; i++)
				styles[i] = draw_style(&seed);
		}
	}
}

/*
 * Chasers score for both teams (the demo's matches are not all 0-0 nor
 * all one way), and a rerun is bit-identical through every goal and
 * kickoff.
 */
START_TEST(match_scores_and_repeats)
{
	struct cc_sim a, b;
	int ga[2], gb[2];
	uint32_t seed = (uint32_t)_i + 1;
	chase_match(&a, seed, 300, ga);
	chase_match(&b, seed, 300, gb);
	printf("3v3 chasers, seed %u, 5 min: %d-%d\n", seed, ga[0], ga[1]);
	ck_assert_int_ge(ga[0], 1);
	ck_assert_int_ge(ga[1], 1);
	ck_assert_int_ge(ga[0] + ga[1], 3);
	ck_assert_int_eq(ga[0], gb[0]);
	ck_assert_int_eq(ga[1], gb[1]);
	ck_assert_msg(memcmp(&a, &b, sizeof(a)) == 0, "two runs of one chase match differ");
}
END_TEST

static Suite *chase_suite(void)
{
	Suite *s = suite_create("chase");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, solo_scores, 0, CC_ARRAY_LEN(solo_cases));
	tcase_add_test(tc, inputs_in_range);
	tcase_add_loop_test(tc, match_scores_and_repeats, 0, 4);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return cc_test_run_suite(chase_suite());
}
