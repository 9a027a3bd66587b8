/*
 * game/sim without a server: set-up refusals, kickoff transforms, the speed
 * and spin clamps, drag, walls, goals (exactly once, only through a mouth),
 * inactive slots, hostile input values and determinism.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "support.h"
#include "game/chase.h"
#include "game/sim.h"
#include "sys/banned.h"

#define EPS 1e-4f

static struct cc_sim_vec3 vec(float x, float y, float z)
{
	struct cc_sim_vec3 v = { x, y, z };
	return v;
}

/* A 3v3 match: slots 0-2 team 0, 3-5 team 1. */
static void sim_3v3(struct cc_sim *sim)
{
	static const uint8_t teams[] = { 0, 0, 0, 1, 1, 1 };
	ck_assert_int_eq(cc_sim_init(sim, 6, teams), 0);
}

/* A sim with one ship (team 0) and the ball; both may be placed by the test. */
static void sim_solo(struct cc_sim *sim)
{
	static const uint8_t teams[] = { 0 };
	ck_assert_int_eq(cc_sim_init(sim, 1, teams), 0);
}

struct init_case {
	const char *what;
	unsigned n;
	uint8_t teams[CC_SIM_MAX_SHIPS + 1];
	int want;
};

static const struct init_case init_cases[] = {
	{ "1v1", 2, { 0, 1 }, 0 },
	{ "3v3 interleaved", 6, { 0, 1, 0, 1, 0, 1 }, 0 },
	{ "4v4", 8, { 0, 0, 0, 0, 1, 1, 1, 1 }, 0 },
	{ "one ship", 1, { 1 }, 0 },
	{ "no ships", 0, { 0 }, CC_EINVAL },
	{ "nine ships", 9, { 0, 1, 0, 1, 0, 1, 0, 1, 0 }, CC_EINVAL },
	{ "team 2", 2, { 0, 2 }, CC_EINVAL },
	{ "team 255", 1, { 255 }, CC_EINVAL },
	{ "five on one team", 5, { 0, 0, 0, 0, 0 }, CC_EINVAL },
};

START_TEST(init_table)
{
	const struct init_case *c = &init_cases[_i];
	struct cc_sim sim;
	memset(&sim, 0xAB, sizeof(sim));
	int rc = cc_sim_init(&sim, c->n, c->teams);
	ck_assert_msg(rc == c->want, "%s: got %d want %d", c->what, rc, c->want);
	if (rc != 0) {
		/* Refused: *sim untouched. */
		ck_assert_uint_eq(((unsigned char *)&sim)[0], 0xAB);
		return;
	}
	ck_assert_uint_eq(sim.ship_count, c->n);
	for (unsigned i = 0; i < c->n; i++) {
		ck_assert_uint_eq(sim.ships[i].team, c->teams[i]);
		ck_assert(sim.ships[i].active);
	}
}
END_TEST

START_TEST(init_null)
{
	struct cc_sim sim;
	uint8_t teams[] = { 0, 1 };
	ck_assert_int_eq(cc_sim_init(NULL, 2, teams), CC_EINVAL);
	ck_assert_int_eq(cc_sim_init(&sim, 2, NULL), CC_EINVAL);
}
END_TEST

/* Every body at its documented kickoff transform: spawns, at rest, inside, apart, facing the right goal. */
static void assert_kickoff(const struct cc_sim *sim)
{
	for (unsigned i = 0; i < sim->ship_count; i++) {
		const struct cc_sim_ship *s = &sim->ships[i];
		struct cc_sim_vec3 pos;
		struct cc_sim_quat rot;
		cc_sim_spawn(s->team, s->spawn, &pos, &rot);
		ck_assert_msg(memcmp(&s->body.pos, &pos, sizeof(pos)) == 0, "ship %u not at its spawn", i);
		ck_assert_msg(memcmp(&s->body.rot, &rot, sizeof(rot)) == 0, "ship %u not facing its spawn way", i);
		ck_assert_float_eq(cc_sim_length(s->body.vel), 0.0f);
		ck_assert_float_eq(cc_sim_length(s->body.angvel), 0.0f);
		ck_assert_float_eq(s->boost, CC_SIM_BOOST_KICKOFF);
		struct cc_sim_vec3 nose = cc_sim_rotate(s->body.rot, vec(0, 0, 1));
		ck_assert_msg(fabsf(nose.z - (s->team ? -1.0f : 1.0f)) < EPS, "ship %u faces z %f", i, (double)nose.z);
		ck_assert(fabsf(pos.x) <= CC_SIM_ARENA_HALF_X - CC_SIM_SHIP_RADIUS);
		ck_assert(fabsf(pos.z) <= CC_SIM_ARENA_HALF_Z - CC_SIM_SHIP_RADIUS);
		for (unsigned j = 0; j < i; j++) {
			struct cc_sim_vec3 o = sim->ships[j].body.pos;
			float d = cc_sim_length(vec(o.x - pos.x, o.y - pos.y, o.z - pos.z));
			ck_assert_msg(d >= 2 * CC_SIM_SHIP_RADIUS, "ships %u and %u overlap at kickoff", j, i);
		}
	}
	ck_assert(sim->ball_live);
	ck_assert_int_eq(sim->last_touch, -1);
	ck_assert_float_eq(sim->ball.pos.x, 0.0f);
	ck_assert_float_eq(sim->ball.pos.y, CC_SIM_GOAL_CENTER_Y);
	ck_assert_float_eq(sim->ball.pos.z, 0.0f);
	ck_assert_float_eq(cc_sim_length(sim->ball.vel), 0.0f);
}

START_TEST(kickoff_transforms)
{
	static const uint8_t teams[] = { 0, 0, 0, 0, 1, 1, 1, 1 };
	struct cc_sim sim;
	ck_assert_int_eq(cc_sim_init(&sim, 8, teams), 0);
	assert_kickoff(&sim);
	/* Mirror image: team 1's spawn k is team 0's turned about the centre. */
	for (unsigned k = 0; k < CC_SIM_MAX_PER_TEAM; k++) {
		struct cc_sim_vec3 a, b;
		struct cc_sim_quat qa, qb;
		cc_sim_spawn(0, k, &a, &qa);
		cc_sim_spawn(1, k, &b, &qb);
		ck_assert_float_eq(a.x, -b.x);
		ck_assert_float_eq(a.z, -b.z);
		ck_assert_float_eq(a.y, b.y);
	}
}
END_TEST

#define SPIN_ONE_AXIS \
	(CC_SIM_SHIP_ANG_ACCEL * (1.0f - CC_SIM_SHIP_ANG_DRAG * CC_SIM_DT) / CC_SIM_SHIP_ANG_DRAG * 1.0001f)

struct clamp_case {
	const char *what;
	struct cc_sim_input in;
	float clamp;     /* |v| may never exceed this */
	float reach;     /* and reaches at least this at some tick */
	bool angular;    /* judge angular speed instead */
};

static const struct clamp_case clamp_cases[] = {
	{ "full forward thrust", { { 0, 0, 1 }, { 0, 0, 0 }, false }, CC_SIM_SHIP_MAX_SPEED, 0.98f * CC_SIM_SHIP_MAX_SPEED, false },
	{ "all three axes", { { 1, 1, 1 }, { 0, 0, 0 }, false }, CC_SIM_SHIP_MAX_SPEED, 0.98f * CC_SIM_SHIP_MAX_SPEED, false },
	{ "backwards", { { 0, 0, -1 }, { 0, 0, 0 }, false }, CC_SIM_SHIP_MAX_SPEED, 0.98f * CC_SIM_SHIP_MAX_SPEED, false },
	{ "boost and thrust", { { 0, 0, 1 }, { 0, 0, 0 }, true }, CC_SIM_SHIP_MAX_BOOST_SPEED, 0.98f * CC_SIM_SHIP_MAX_BOOST_SPEED, false },
	{ "out-of-range thrust", { { 0, 0, 1e9f }, { 0, 0, 0 }, false }, CC_SIM_SHIP_MAX_SPEED, 0.98f * CC_SIM_SHIP_MAX_SPEED, false },
	{ "full torque", { { 0, 0, 0 }, { 1, 1, 1 }, false }, CC_SIM_SHIP_MAX_ANG_SPEED, 0.98f * CC_SIM_SHIP_MAX_ANG_SPEED, true },
	/* One axis: drag holds it at its discrete terminal spin a (1 - d dt) / d, under the clamp. */
	{ "huge torque on one axis", { { 0, 0, 0 }, { -1e30f, 0, 0 }, false }, SPIN_ONE_AXIS, 0.98f * SPIN_ONE_AXIS, true },
};

/*
 * Holding one input for 20 s: the speed never exceeds its clamp (through
 * wall bounces, boost running dry and the slow-down after it) and gets
 * close to it, so the clamp, not drag alone, is what holds it.
 */
START_TEST(speed_clamp_holds)
{
	const struct clamp_case *c = &clamp_cases[_i];
	struct cc_sim sim;
	float top = 0.0f;
	sim_solo(&sim);
	/* From the centre (the ball out of the way): room to reach the clamp before a wall. */
	sim.ships[0].body.pos = vec(0, 9, 0);
	sim.ball.pos = vec(12, 9, 20);
	for (int t = 0; t < 20 * CC_SIM_TICK_RATE; t++) {
		cc_sim_step(&sim, &c->in, NULL);
		const struct cc_sim_body *b = &sim.ships[0].body;
		float speed = cc_sim_length(c->angular ? b->angvel : b->vel);
		ck_assert_msg(speed <= c->clamp * (1.0f + 1e-5f), "%s: tick %d speed %f above %f", c->what, t,
			      (double)speed, (double)c->clamp);
		if (speed > top)
			top = speed;
		float q = b->rot.w * b->rot.w + b->rot.x * b->rot.x + b->rot.y * b->rot.y + b->rot.z * b->rot.z;
		ck_assert_msg(fabsf(q - 1.0f) < 1e-4f, "%s: orientation drifted from unit length (%f)", c->what, (double)q);
	}
	ck_assert_msg(top >= c->reach, "%s: top speed %f never reached %f", c->what, (double)top, (double)c->reach);
}
END_TEST

/* Boost drains in about 3 s and refills; the ship slows back under the unboosted clamp. */
START_TEST(boost_meter)
{
	struct cc_sim sim;
	struct cc_sim_input in = { { 0, 0, 0 }, { 0, 0, 0 }, true };
	int boosted = 0;
	sim_solo(&sim);
	while (sim.ships[0].boost > 0.0f && boosted < 10 * CC_SIM_TICK_RATE) {
		cc_sim_step(&sim, &in, NULL);
		boosted++;
	}
	ck_assert_int_ge(boosted, 3 * CC_SIM_TICK_RATE - 2);
	ck_assert_int_le(boosted, 3 * CC_SIM_TICK_RATE + 2);
	cc_sim_step(&sim, &in, NULL);
	ck_assert(!sim.ships[0].boosting); /* empty: asking is not enough */
	in.boost = false;
	for (int t = 0; t < 2 * CC_SIM_TICK_RATE; t++)
		cc_sim_step(&sim, &in, NULL);
	ck_assert_float_gt(sim.ships[0].boost, 0.2f);
	ck_assert_float_lt(sim.ships[0].boost, 0.3f);
}
END_TEST

struct drag_case {
	const char *what;
	int body;      /* 0 ship linear, 1 ship angular, 2 ball */
	float per_tick; /* the factor drag applies each tick */
};

static const struct drag_case drag_cases[] = {
	{ "ship velocity", 0, 1.0f - CC_SIM_SHIP_LIN_DRAG * CC_SIM_DT },
	{ "ship spin", 1, 1.0f - CC_SIM_SHIP_ANG_DRAG * CC_SIM_DT },
	{ "ball velocity", 2, 1.0f - CC_SIM_BALL_LIN_DRAG * CC_SIM_DT },
};

/* Coasting with no input: speed falls every tick, by the documented factor, towards rest. */
START_TEST(drag_decays)
{
	const struct drag_case *c = &drag_cases[_i];
	struct cc_sim sim;
	struct cc_sim_vec3 *v;
	sim_solo(&sim);
	/* Across the arena, away from walls and the other body. */
	sim.ships[0].body.pos = vec(-10, 9, -20);
	sim.ball.pos = vec(10, 9, -10);
	v = c->body == 0 ? &sim.ships[0].body.vel : c->body == 1 ? &sim.ships[0].body.angvel : &sim.ball.vel;
	*v = c->body == 1 ? vec(0, 4, 0) : vec(0, 0, 20);
	float prev = cc_sim_length(*v), start = prev;
	for (int t = 0; t < 30; t++) {
		cc_sim_step(&sim, NULL, NULL);
		float now = cc_sim_length(*v);
		ck_assert_msg(now < prev, "%s: tick %d speed %f did not fall from %f", c->what, t, (double)now, (double)prev);
		ck_assert_msg(fabsf(now - prev * c->per_tick) < 1e-3f, "%s: tick %d speed %f, want %f", c->what, t,
			      (double)now, (double)(prev * c->per_tick));
		prev = now;
	}
	ck_assert_float_lt(prev, start);
}
END_TEST

struct goal_case {
	const char *what;
	struct cc_sim_vec3 pos, vel; /* the ball, launched */
	int want_team;               /* -1: no goal */
};

static const struct goal_case goal_cases[] = {
	{ "straight into +z", { 0, 9, 20 }, { 0, 0, 30 }, 0 },
	{ "straight into -z", { 0, 9, -20 }, { 0, 0, -30 }, 1 },
	{ "slow roll into -z", { 0, 9, -25 }, { 0, 0, -3 }, 1 },
	{ "angled into the corner of +z", { -3, 6, 10 }, { -0.5f, -0.3f, 25 }, 0 },
	{ "wide of the post", { 10, 9, 20 }, { 0, 0, 30 }, -1 },
	{ "over the bar", { 0, 15, 20 }, { 0, 0, 30 }, -1 },
	{ "under the mouth", { 0, 2, -20 }, { 0, 0, -30 }, -1 },
	{ "clipping a post", { 6.5f, 9, 20 }, { 0, 0, 30 }, -1 },
	{ "along the side wall", { 17, 9, 0 }, { 0, 0, 40 }, -1 },
};

/*
 * The ball launched at a goal scores exactly once in 10 s (then lies dead
 * in the net), or never when it misses the mouth. Then a kickoff puts every
 * body back.
 */
START_TEST(goal_scores_once)
{
	const struct goal_case *c = &goal_cases[_i];
	struct cc_sim sim;
	struct cc_sim_events ev;
	int goals = 0, team = -1;
	sim_3v3(&sim);
	for (unsigned i = 0; i < sim.ship_count; i++) /* out of the ball's way */
		ck_assert_int_eq(cc_sim_set_active(&sim, i, false), 0);
	sim.ball.pos = c->pos;
	sim.ball.vel = c->vel;
	for (int t = 0; t < 10 * CC_SIM_TICK_RATE; t++) {
		cc_sim_step(&sim, NULL, &ev);
		if (ev.goal_team >= 0) {
			goals++;
			team = ev.goal_team;
		}
		const struct cc_sim_vec3 *p = &sim.ball.pos;
		ck_assert_msg(fabsf(p->z) <= CC_SIM_ARENA_HALF_Z + CC_SIM_GOAL_DEPTH, "%s: ball out at z %f", c->what,
			      (double)p->z);
		ck_assert_msg(fabsf(p->x) <= CC_SIM_ARENA_HALF_X && p->y >= 0 && p->y <= CC_SIM_ARENA_HEIGHT,
			      "%s: ball through a wall at (%f, %f)", c->what, (double)p->x, (double)p->y);
	}
	ck_assert_msg(goals == (c->want_team >= 0 ? 1 : 0), "%s: %d goals", c->what, goals);
	ck_assert_msg(team == c->want_team, "%s: scored by %d, want %d", c->what, team, c->want_team);
	ck_assert(sim.ball_live == (c->want_team < 0));
	for (unsigned i = 0; i < sim.ship_count; i++)
		ck_assert_int_eq(cc_sim_set_active(&sim, i, true), 0);
	cc_sim_kickoff(&sim);
	assert_kickoff(&sim);
}
END_TEST

/* A ship that boosts through the ball from behind drives it into the +z goal; its touch is recorded. */
START_TEST(ship_drives_ball_in)
{
	struct cc_sim sim;
	struct cc_sim_events ev;
	struct cc_sim_input in = { { 0, 0, 1 }, { 0, 0, 0 }, true };
	int goals = 0, at = -1;
	sim_solo(&sim);
	sim.ships[0].body.pos = vec(0, 9, 8);
	sim.ball.pos = vec(0, 9, 12);
	for (int t = 0; t < 5 * CC_SIM_TICK_RATE; t++) {
		cc_sim_step(&sim, &in, &ev);
		if (ev.goal_team >= 0) {
			goals++;
			at = t;
			ck_assert_int_eq(ev.goal_team, 0);
			ck_assert_int_eq(ev.last_touch, 0);
		}
	}
	ck_assert_int_eq(goals, 1);
	ck_assert_int_lt(at, 3 * CC_SIM_TICK_RATE);
	/* The ship stayed in the arena: it pinned itself against the end wall, not in the net. */
	ck_assert_float_le(sim.ships[0].body.pos.z, CC_SIM_ARENA_HALF_Z - CC_SIM_SHIP_RADIUS);
}
END_TEST

/*
 * Two ships meeting the ball head-on at the same speed leave it where it
 * was, whichever slot is processed first: contacts with the ball are
 * simultaneous. (One after another, the last slot would win every tie,
 * and a kickoff of mirrored players would always go one team's way.)
 */
START_TEST(head_on_is_a_draw)
{
	static const uint8_t teams[] = { 0, 1 };
	struct cc_sim sim;
	ck_assert_int_eq(cc_sim_init(&sim, 2, teams), 0);
	sim.ships[0].body.pos = vec(0, 9, -2.6f);
	sim.ships[1].body.pos = vec(0, 9, 2.6f);
	sim.ships[0].body.vel = vec(0, 0, 20);
	sim.ships[1].body.vel = vec(0, 0, -20);
	for (int t = 0; t < 10; t++)
		cc_sim_step(&sim, NULL, NULL);
	ck_assert_msg(fabsf(sim.ball.vel.z) < 1e-3f && fabsf(sim.ball.pos.z) < 1e-3f,
		      "the ball went z %f at %f m/s", (double)sim.ball.pos.z, (double)sim.ball.vel.z);
	ck_assert_int_eq(sim.last_touch, 0); /* equal impulses: the lower slot */
}
END_TEST

/* A deterministic input stream: a small LCG, so the test needs no libc rand state. */
static uint32_t lcg(uint32_t *s)
{
	*s = *s * 1664525u + 1013904223u;
	return *s >> 8;
}

static float unit(uint32_t *s)
{
	return (float)(lcg(s) % 2001u) / 1000.0f - 1.0f;
}

static void random_inputs(uint32_t *seed, struct cc_sim_input *in, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		in[i].thrust = vec(unit(seed), unit(seed), unit(seed));
		in[i].torque = vec(unit(seed), unit(seed), unit(seed));
		in[i].boost = lcg(seed) % 4u == 0;
	}
}

/* One tick of a seeded 3v3 run, kicking off after each goal; perturb changes one input. */
static void random_tick(struct cc_sim *sim, uint32_t *seed, bool perturb, int *goals)
{
	struct cc_sim_input in[6];
	struct cc_sim_events ev;
	random_inputs(seed, in, 6);
	if (perturb)
		in[4].thrust.x = in[4].thrust.x > 0.0f ? in[4].thrust.x - 0.25f : in[4].thrust.x + 0.25f;
	cc_sim_step(sim, in, &ev);
	if (ev.goal_team >= 0) {
		(*goals)++;
		cc_sim_kickoff(sim);
	}
}

/*
 * Same inputs, same state to the bit at every tick of two minutes, goals
 * and kickoffs included. A third run with one input changed at tick 100
 * differs right after it, so the comparison can fail (a kickoff erases
 * history, so the runs are compared tick by tick, not only at the end).
 */
START_TEST(determinism)
{
	struct cc_sim a, b, c;
	uint32_t sa = 7, sb = 7, sc = 7;
	int ga = 0, gb = 0, gc = 0;
	sim_3v3(&a);
	sim_3v3(&b);
	sim_3v3(&c);
	for (int t = 0; t < 120 * CC_SIM_TICK_RATE; t++) {
		random_tick(&a, &sa, false, &ga);
		random_tick(&b, &sb, false, &gb);
		random_tick(&c, &sc, t == 100, &gc);
		ck_assert_msg(memcmp(&a, &b, sizeof(a)) == 0, "tick %d: two runs of the same inputs differ", t);
		if (t == 100)
			ck_assert_msg(memcmp(&a, &c, sizeof(a)) != 0, "a perturbed run is identical: the comparison is blind");
	}
	ck_assert_int_eq(ga, gb);
	ck_assert_uint_eq(a.tick, 120 * CC_SIM_TICK_RATE);
	printf("determinism: %d goals in 2 min of random input\n", ga);
}
END_TEST

/* Under random input for 5 minutes, every body stays inside, finite, and within its clamps. */
START_TEST(bodies_stay_inside)
{
	struct cc_sim sim;
	struct cc_sim_input in[6];
	struct cc_sim_events ev;
	uint32_t seed = 12345;
	sim_3v3(&sim);
	for (int t = 0; t < 300 * CC_SIM_TICK_RATE; t++) {
		random_inputs(&seed, in, 6);
		cc_sim_step(&sim, in, &ev);
		for (unsigned i = 0; i < sim.ship_count; i++) {
			const struct cc_sim_body *b = &sim.ships[i].body;
			const float r = CC_SIM_SHIP_RADIUS;
			ck_assert_msg(fabsf(b->pos.x) <= CC_SIM_ARENA_HALF_X - r && b->pos.y >= r &&
					      b->pos.y <= CC_SIM_ARENA_HEIGHT - r && fabsf(b->pos.z) <= CC_SIM_ARENA_HALF_Z - r,
				      "tick %d ship %u out at (%f, %f, %f)", t, i, (double)b->pos.x, (double)b->pos.y,
				      (double)b->pos.z);
			ck_assert(cc_sim_length(b->vel) <= CC_SIM_SHIP_MAX_BOOST_SPEED * (1.0f + 1e-5f));
		}
		ck_assert(cc_sim_length(sim.ball.vel) <= CC_SIM_BALL_MAX_SPEED * (1.0f + 1e-5f));
		ck_assert(isfinite(sim.ball.pos.x) && isfinite(sim.ball.pos.y) && isfinite(sim.ball.pos.z));
		if (ev.goal_team >= 0)
			cc_sim_kickoff(&sim);
	}
}
END_TEST

/*
 * The goal rule as contracts/gameserver-protocol.md section 6 states it:
 * a goal is the whole ball over the line inside the mouth (centre at |z| >=
 * 27 + 1.5 = 28.5), checked every tick while the ball is live. A ball at
 * rest partly over the line (the one seen 1.12 m past it at FULL_TIME) is
 * no goal; the same ball rolling on scores on the first tick its centre
 * reaches 28.5, lies dead there, and the team credited is the attacker of
 * that goal (team 0 attacks +z).
 */
START_TEST(goal_line_rule)
{
	const float line = CC_SIM_ARENA_HALF_Z + CC_SIM_BALL_RADIUS; /* 28.5 */
	for (int side = -1; side <= 1; side += 2) {
		struct cc_sim sim;
		struct cc_sim_events ev;
		sim_solo(&sim);
		ck_assert_int_eq(cc_sim_set_active(&sim, 0, false), 0);
		/* 1.12 m past the line, at rest: partly over, no goal however long it lies there. */
		sim.ball.pos = vec(2.0f, 7.0f, side * (CC_SIM_ARENA_HALF_Z + 1.12f));
		sim.ball.vel = vec(0, 0, 0);
		for (int t = 0; t < 5 * CC_SIM_TICK_RATE; t++) {
			cc_sim_step(&sim, NULL, &ev);
			ck_assert_msg(ev.goal_team == -1, "side %d: a ball 1.12 m past the line scored at tick %d", side, t);
		}
		ck_assert(sim.ball_live);
		ck_assert_float_eq_tol(sim.ball.pos.z, side * (CC_SIM_ARENA_HALF_Z + 1.12f), EPS);
		/* Just short of all-over, rolling in at 0.3 m/s: a goal on the tick the centre reaches 28.5, not before. */
		sim.ball.pos = vec(2.0f, 7.0f, side * (line - 0.02f));
		sim.ball.vel = vec(0, 0, side * 0.3f);
		int scored_at = -1;
		for (int t = 0; t < CC_SIM_TICK_RATE && scored_at < 0; t++) {
			float before = fabsf(sim.ball.pos.z);
			cc_sim_step(&sim, NULL, &ev);
			if (ev.goal_team >= 0) {
				scored_at = t;
				ck_assert_int_eq(ev.goal_team, side > 0 ? 0 : 1); /* +z is team 0's target */
				ck_assert_float_lt(before, line);
				ck_assert_float_ge(fabsf(sim.ball.pos.z), line);
			} else {
				ck_assert_float_lt(fabsf(sim.ball.pos.z), line);
			}
		}
		ck_assert_msg(scored_at > 0, "side %d: the rolling ball scored at tick %d", side, scored_at);
		/* Dead in the net: frozen where it scored, never scoring again. */
		struct cc_sim_vec3 at = sim.ball.pos;
		for (int t = 0; t < CC_SIM_TICK_RATE; t++) {
			cc_sim_step(&sim, NULL, &ev);
			ck_assert_int_eq(ev.goal_team, -1);
		}
		ck_assert(!sim.ball_live);
		ck_assert(sim.ball.pos.z == at.z && sim.ball.vel.z == 0.0f);
	}
}
END_TEST

/*
 * What a client may see (section 6): in three minutes of bot play (game/
 * chase, which attacks the goals), after every tick a live ball is short of
 * 28.5, a ball past 25.5 fits the mouth (the end wall stops any other),
 * and a dead ball lies between 28.5 and the back of the box. The run must
 * score, so the rule is exercised.
 */
START_TEST(goal_rule_under_play)
{
	struct cc_sim sim;
	struct cc_sim_input in[6];
	struct cc_sim_events ev;
	const float r = CC_SIM_BALL_RADIUS, line = CC_SIM_ARENA_HALF_Z + r;
	int goals = 0, deep = 0;
	sim_3v3(&sim);
	for (int t = 0; t < 180 * CC_SIM_TICK_RATE; t++) {
		for (unsigned i = 0; i < sim.ship_count; i++)
			cc_chase_team_input(&sim, i, (float)((i * 7) % 13) / 6.0f * 0.9f - 0.9f, &in[i]); /* cc-gameserver's bot styles */
		cc_sim_step(&sim, in, &ev);
		const struct cc_sim_vec3 b = sim.ball.pos;
		float z = fabsf(b.z);
		if (sim.ball_live)
			ck_assert_msg(z < line, "tick %d: a live ball at z %f, all over the line", t, (double)b.z);
		else
			ck_assert_msg(z >= line && z <= CC_SIM_ARENA_HALF_Z + CC_SIM_GOAL_DEPTH - r,
				      "tick %d: a dead ball at z %f", t, (double)b.z);
		if (z > CC_SIM_ARENA_HALF_Z - r) {
			deep++;
			ck_assert_msg(fabsf(b.x) <= CC_SIM_GOAL_HALF_WIDTH - r + EPS &&
					      b.y >= CC_SIM_GOAL_CENTER_Y - CC_SIM_GOAL_HALF_HEIGHT + r - EPS &&
					      b.y <= CC_SIM_GOAL_CENTER_Y + CC_SIM_GOAL_HALF_HEIGHT - r + EPS,
				      "tick %d: the ball at (%f, %f, %f) is past the end wall outside the mouth", t, (double)b.x,
				      (double)b.y, (double)b.z);
		}
		if (ev.goal_team >= 0) {
			goals++;
			ck_assert_int_eq(ev.goal_team, b.z > 0 ? 0 : 1);
			cc_sim_kickoff(&sim);
		}
	}
	printf("goal_rule_under_play: %d goals, %d ticks with the ball beyond 25.5 m\n", goals, deep);
	ck_assert_int_gt(goals, 0);
}
END_TEST

/* NaN and infinity in an input are no input at all: the state stays finite and the ship at rest. */
START_TEST(non_finite_input)
{
	struct cc_sim sim;
	struct cc_sim_input in = { { NAN, INFINITY, -INFINITY }, { NAN, NAN, INFINITY }, false };
	sim_solo(&sim);
	struct cc_sim_vec3 start = sim.ships[0].body.pos;
	for (int t = 0; t < 60; t++)
		cc_sim_step(&sim, &in, NULL);
	ck_assert(memcmp(&sim.ships[0].body.pos, &start, sizeof(start)) == 0);
	ck_assert_float_eq(cc_sim_length(sim.ships[0].body.angvel), 0.0f);
}
END_TEST

/* An inactive slot is parked at its spawn, ignores input and collides with nothing; active again it flies. */
START_TEST(inactive_slot)
{
	struct cc_sim sim;
	struct cc_sim_input in[6];
	memset(in, 0, sizeof(in));
	in[1].thrust.z = 1.0f;
	sim_3v3(&sim);
	for (int t = 0; t < 30; t++)
		cc_sim_step(&sim, in, NULL);
	ck_assert_float_gt(cc_sim_length(sim.ships[1].body.vel), 1.0f);
	ck_assert_int_eq(cc_sim_set_active(&sim, 1, false), 0);
	ck_assert_float_eq(cc_sim_length(sim.ships[1].body.vel), 0.0f);
	struct cc_sim_vec3 parked = sim.ships[1].body.pos;
	/* The ball placed on the parked ship passes through it. */
	sim.ball.pos = parked;
	sim.ball.vel = vec(0, 0, 0);
	for (int t = 0; t < 30; t++)
		cc_sim_step(&sim, in, NULL);
	ck_assert(memcmp(&sim.ships[1].body.pos, &parked, sizeof(parked)) == 0);
	ck_assert_float_eq(cc_sim_length(sim.ball.vel), 0.0f);
	ck_assert_int_eq(cc_sim_set_active(&sim, 1, true), 0);
	cc_sim_step(&sim, in, NULL);
	ck_assert_float_gt(cc_sim_length(sim.ships[1].body.vel), 0.0f);
	ck_assert_int_eq(cc_sim_set_active(&sim, 6, true), CC_EINVAL);
}
END_TEST

/* The rotation helper: a quarter turn about y takes +z to +x. */
START_TEST(rotate_quarter_turn)
{
	float h = sqrtf(0.5f);
	struct cc_sim_quat q = { h, 0, h, 0 };
	struct cc_sim_vec3 v = cc_sim_rotate(q, vec(0, 0, 1));
	ck_assert(fabsf(v.x - 1.0f) < EPS && fabsf(v.y) < EPS && fabsf(v.z) < EPS);
}
END_TEST

static Suite *sim_suite(void)
{
	Suite *s = suite_create("sim");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, init_table, 0, CC_ARRAY_LEN(init_cases));
	tcase_add_test(tc, init_null);
	tcase_add_test(tc, kickoff_transforms);
	tcase_add_loop_test(tc, speed_clamp_holds, 0, CC_ARRAY_LEN(clamp_cases));
	tcase_add_test(tc, boost_meter);
	tcase_add_loop_test(tc, drag_decays, 0, CC_ARRAY_LEN(drag_cases));
	tcase_add_loop_test(tc, goal_scores_once, 0, CC_ARRAY_LEN(goal_cases));
	tcase_add_test(tc, goal_line_rule);
	tcase_add_test(tc, goal_rule_under_play);
	tcase_add_test(tc, ship_drives_ball_in);
	tcase_add_test(tc, head_on_is_a_draw);
	tcase_add_test(tc, determinism);
	tcase_add_test(tc, bodies_stay_inside);
	tcase_add_test(tc, non_finite_input);
	tcase_add_test(tc, inactive_slot);
	tcase_add_test(tc, rotate_quarter_turn);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return cc_test_run_suite(sim_suite());
}
