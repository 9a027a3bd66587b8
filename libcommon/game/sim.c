/*
 * sim.c - ships, ball, arena, collisions and goals at a fixed 1/60 s
 * (sim.h documents the model and its constants).
 */
#include "game/sim.h"

#include <math.h>
#include <string.h>

#include "sys/banned.h"

/* Spawn x offsets by index for team 0; team 1 mirrors them. */
static const float spawn_x[CC_SIM_MAX_PER_TEAM] = { 0.0f, -7.0f, 7.0f, -14.0f };
#define SPAWN_Z_FIRST 18.0f /* |z| of spawn index 0 */
#define SPAWN_Z_OTHER 21.0f /* |z| of the others: behind, so nobody overlaps */
#define SPAWN_Y 9.0f

static struct cc_sim_vec3 v3(float x, float y, float z)
{
	struct cc_sim_vec3 v = { x, y, z };
	return v;
}

static struct cc_sim_vec3 v_add(struct cc_sim_vec3 a, struct cc_sim_vec3 b)
{
	return v3(a.x + b.x, a.y + b.y, a.z + b.z);
}

static struct cc_sim_vec3 v_sub(struct cc_sim_vec3 a, struct cc_sim_vec3 b)
{
	return v3(a.x - b.x, a.y - b.y, a.z - b.z);
}

static struct cc_sim_vec3 v_scale(struct cc_sim_vec3 a, float s)
{
	return v3(a.x * s, a.y * s, a.z * s);
}

static float v_dot(struct cc_sim_vec3 a, struct cc_sim_vec3 b)
{
	return a.x * b.x + a.y * b.y + a.z * b.z;
}

static struct cc_sim_vec3 v_cross(struct cc_sim_vec3 a, struct cc_sim_vec3 b)
{
	return v3(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}

float cc_sim_length(struct cc_sim_vec3 v)
{
	return sqrtf(v_dot(v, v));
}

/* v scaled down to length max when longer; unchanged otherwise. */
static struct cc_sim_vec3 v_clamp(struct cc_sim_vec3 v, float max)
{
	float len2 = v_dot(v, v);
	if (len2 <= max * max)
		return v;
	return v_scale(v, max / sqrtf(len2));
}

struct cc_sim_vec3 cc_sim_rotate(struct cc_sim_quat q, struct cc_sim_vec3 v)
{
	/* v + 2w(u x v) + 2 u x (u x v), u the vector part: no matrix, no trig. */
	struct cc_sim_vec3 u = v3(q.x, q.y, q.z);
	struct cc_sim_vec3 t = v_scale(v_cross(u, v), 2.0f);
	return v_add(v_add(v, v_scale(t, q.w)), v_cross(u, t));
}

/* Input axis from the network-facing struct: finite and within [-1, 1]. */
static float axis(float a)
{
	if (!isfinite(a))
		return 0.0f;
	return a < -1.0f ? -1.0f : a > 1.0f ? 1.0f : a;
}

static struct cc_sim_vec3 axes(struct cc_sim_vec3 v)
{
	return v3(axis(v.x), axis(v.y), axis(v.z));
}

void cc_sim_spawn(unsigned team, unsigned spawn, struct cc_sim_vec3 *pos, struct cc_sim_quat *rot)
{
	float side = team ? 1.0f : -1.0f;
	if (spawn >= CC_SIM_MAX_PER_TEAM)
		spawn = CC_SIM_MAX_PER_TEAM - 1;
	*pos = v3(-side * spawn_x[spawn], SPAWN_Y, side * (spawn ? SPAWN_Z_OTHER : SPAWN_Z_FIRST));
	/* Team 1 turned half a turn about y, so both face the goal they attack. */
	*rot = team ? (struct cc_sim_quat){ 0.0f, 0.0f, 1.0f, 0.0f } : (struct cc_sim_quat){ 1.0f, 0.0f, 0.0f, 0.0f };
}

static void park(struct cc_sim_ship *s)
{
	memset(&s->body, 0, sizeof(s->body));
	cc_sim_spawn(s->team, s->spawn, &s->body.pos, &s->body.rot);
	s->boosting = false;
}

void cc_sim_kickoff(struct cc_sim *sim)
{
	for (unsigned i = 0; i < sim->ship_count; i++) {
		park(&sim->ships[i]);
		sim->ships[i].boost = CC_SIM_BOOST_KICKOFF;
	}
	memset(&sim->ball, 0, sizeof(sim->ball));
	sim->ball.pos = v3(0.0f, CC_SIM_GOAL_CENTER_Y, 0.0f);
	sim->ball.rot.w = 1.0f;
	sim->ball_live = true;
	sim->last_touch = -1;
}

int cc_sim_init(struct cc_sim *sim, unsigned n, const uint8_t teams[])
{
	unsigned per_team[CC_SIM_TEAMS] = { 0, 0 };
	struct cc_sim s;

	if (!sim || !teams || n == 0 || n > CC_SIM_MAX_SHIPS)
		return CC_EINVAL;
	/* memset, not an initialiser: padding is zero too, so two states compare with memcmp. */
	memset(&s, 0, sizeof(s));
	s.ship_count = (uint8_t)n;
	for (unsigned i = 0; i < n; i++) {
		if (teams[i] >= CC_SIM_TEAMS || per_team[teams[i]] >= CC_SIM_MAX_PER_TEAM)
			return CC_EINVAL;
		s.ships[i].team = teams[i];
		s.ships[i].spawn = (uint8_t)per_team[teams[i]]++;
		s.ships[i].active = true;
	}
	cc_sim_kickoff(&s);
	memcpy(sim, &s, sizeof(s)); /* padding included: see above */
	return 0;
}

int cc_sim_set_active(struct cc_sim *sim, unsigned slot, bool active)
{
	if (!sim || slot >= sim->ship_count)
		return CC_EINVAL;
	if (!active && sim->ships[slot].active)
		park(&sim->ships[slot]);
	sim->ships[slot].active = active;
	return 0;
}

/* One ship's flight for one tick: rotation, then thrust, boost, drag and the speed clamp. */
static void fly(struct cc_sim_ship *s, const struct cc_sim_input *in)
{
	struct cc_sim_body *b = &s->body;
	struct cc_sim_vec3 thrust = in ? axes(in->thrust) : v3(0, 0, 0);
	struct cc_sim_vec3 torque = in ? axes(in->torque) : v3(0, 0, 0);
	bool want_boost = in && in->boost;

	/* Angular: torque about body axes, applied in the world frame. */
	struct cc_sim_vec3 alpha = cc_sim_rotate(b->rot, v_scale(torque, CC_SIM_SHIP_ANG_ACCEL));
	b->angvel = v_add(b->angvel, v_scale(alpha, CC_SIM_DT));
	b->angvel = v_scale(b->angvel, 1.0f - CC_SIM_SHIP_ANG_DRAG * CC_SIM_DT);
	b->angvel = v_clamp(b->angvel, CC_SIM_SHIP_MAX_ANG_SPEED);

	/* dq/dt = 1/2 (0, w) q for a world-frame w; renormalised so error never accumulates. */
	struct cc_sim_quat q = b->rot;
	struct cc_sim_vec3 w = v_scale(b->angvel, 0.5f * CC_SIM_DT);
	struct cc_sim_quat dq = {
		-w.x * q.x - w.y * q.y - w.z * q.z,
		w.x * q.w + w.y * q.z - w.z * q.y,
		w.y * q.w + w.z * q.x - w.x * q.z,
		w.z * q.w + w.x * q.y - w.y * q.x,
	};
	q.w += dq.w;
	q.x += dq.x;
	q.y += dq.y;
	q.z += dq.z;
	float norm = sqrtf(q.w * q.w + q.x * q.x + q.y * q.y + q.z * q.z);
	b->rot = (struct cc_sim_quat){ q.w / norm, q.x / norm, q.y / norm, q.z / norm };

	/* Linear: thrust along body axes, plus forward boost while the meter lasts. */
	float old_speed = cc_sim_length(b->vel);
	struct cc_sim_vec3 accel = v_scale(thrust, CC_SIM_SHIP_THRUST_ACCEL);
	s->boosting = want_boost && s->boost > 0.0f;
	if (s->boosting) {
		accel.z += CC_SIM_SHIP_BOOST_ACCEL;
		s->boost -= CC_SIM_BOOST_DRAIN * CC_SIM_DT;
		if (s->boost < 0.0f)
			s->boost = 0.0f;
	} else {
		s->boost += CC_SIM_BOOST_REGEN * CC_SIM_DT;
		if (s->boost > 1.0f)
			s->boost = 1.0f;
	}
	b->vel = v_add(b->vel, v_scale(cc_sim_rotate(b->rot, accel), CC_SIM_DT));
	b->vel = v_scale(b->vel, 1.0f - CC_SIM_SHIP_LIN_DRAG * CC_SIM_DT);
	/*
	 * Without boost, thrust may not push past CC_SIM_SHIP_MAX_SPEED, but a
	 * ship faster than that (boost just ended, or a hit) is not snapped
	 * back: it keeps its speed and drag bleeds it off.
	 */
	if (!s->boosting) {
		float cap = old_speed > CC_SIM_SHIP_MAX_SPEED ? old_speed : CC_SIM_SHIP_MAX_SPEED;
		b->vel = v_clamp(b->vel, cap);
	}
	b->vel = v_clamp(b->vel, CC_SIM_SHIP_MAX_BOOST_SPEED);
	b->pos = v_add(b->pos, v_scale(b->vel, CC_SIM_DT));
}

static void roll_ball(struct cc_sim *sim)
{
	struct cc_sim_body *b = &sim->ball;
	if (!sim->ball_live)
		return;
	b->vel = v_scale(b->vel, 1.0f - CC_SIM_BALL_LIN_DRAG * CC_SIM_DT);
	b->vel = v_clamp(b->vel, CC_SIM_BALL_MAX_SPEED);
	b->pos = v_add(b->pos, v_scale(b->vel, CC_SIM_DT));
}

/*
 * Two spheres: when they overlap, push them apart along the line of
 * centres by inverse mass and, if they approach, exchange an impulse with
 * restitution CC_SIM_HIT_RESTITUTION. Returns true when they touched.
 */
static bool collide(struct cc_sim_body *a, float ra, float ia, struct cc_sim_body *b, float rb, float ib)
{
	struct cc_sim_vec3 d = v_sub(b->pos, a->pos);
	float rsum = ra + rb;
	float dist2 = v_dot(d, d);
	if (dist2 >= rsum * rsum)
		return false;
	float dist = sqrtf(dist2);
	/* Exactly coincident centres: any fixed normal will do; up keeps it deterministic. */
	struct cc_sim_vec3 n = dist > 1e-6f ? v_scale(d, 1.0f / dist) : v3(0.0f, 1.0f, 0.0f);
	float inv = ia + ib;
	float overlap = rsum - dist;
	a->pos = v_sub(a->pos, v_scale(n, overlap * ia / inv));
	b->pos = v_add(b->pos, v_scale(n, overlap * ib / inv));
	float approach = v_dot(v_sub(b->vel, a->vel), n);
	if (approach < 0.0f) {
		float j = -(1.0f + CC_SIM_HIT_RESTITUTION) * approach / inv;
		a->vel = v_sub(a->vel, v_scale(n, j * ia));
		b->vel = v_add(b->vel, v_scale(n, j * ib));
	}
	return true;
}

/* Keeps *p within [lo, hi]; a body leaving reflects its velocity times e. */
static void wall(float *p, float *v, float lo, float hi, float e)
{
	if (*p < lo) {
		*p = lo;
		if (*v < 0.0f)
			*v = -*v * e;
	} else if (*p > hi) {
		*p = hi;
		if (*v > 0.0f)
			*v = -*v * e;
	}
}

static void ship_walls(struct cc_sim_body *b)
{
	const float r = CC_SIM_SHIP_RADIUS, e = CC_SIM_SHIP_WALL_RESTITUTION;
	wall(&b->pos.x, &b->vel.x, -CC_SIM_ARENA_HALF_X + r, CC_SIM_ARENA_HALF_X - r, e);
	wall(&b->pos.y, &b->vel.y, r, CC_SIM_ARENA_HEIGHT - r, e);
	wall(&b->pos.z, &b->vel.z, -CC_SIM_ARENA_HALF_Z + r, CC_SIM_ARENA_HALF_Z - r, e);
}

/*
 * The ball against the arena and the goal boxes. Past a goal line (inside
 * a box) its x and y are held within the mouth; in the arena, within the
 * walls. The end wall stops it unless the whole ball fits through the
 * mouth, in which case it may travel into the box. Simple and stable: a
 * ball clipping a post bounces off the end wall.
 */
static void ball_walls(struct cc_sim_body *b)
{
	const float r = CC_SIM_BALL_RADIUS, e = CC_SIM_BALL_WALL_RESTITUTION;
	const float mouth_x = CC_SIM_GOAL_HALF_WIDTH - r;
	const float mouth_lo = CC_SIM_GOAL_CENTER_Y - CC_SIM_GOAL_HALF_HEIGHT + r;
	const float mouth_hi = CC_SIM_GOAL_CENTER_Y + CC_SIM_GOAL_HALF_HEIGHT - r;

	if (fabsf(b->pos.z) > CC_SIM_ARENA_HALF_Z) {
		wall(&b->pos.x, &b->vel.x, -mouth_x, mouth_x, e);
		wall(&b->pos.y, &b->vel.y, mouth_lo, mouth_hi, e);
	} else {
		wall(&b->pos.x, &b->vel.x, -CC_SIM_ARENA_HALF_X + r, CC_SIM_ARENA_HALF_X - r, e);
		wall(&b->pos.y, &b->vel.y, r, CC_SIM_ARENA_HEIGHT - r, e);
	}
	bool fits = fabsf(b->pos.x) <= mouth_x && b->pos.y >= mouth_lo && b->pos.y <= mouth_hi;
	float zmax = fits ? CC_SIM_ARENA_HALF_Z + CC_SIM_GOAL_DEPTH - r : CC_SIM_ARENA_HALF_Z - r;
	wall(&b->pos.z, &b->vel.z, -zmax, zmax, e);
}

/*
 * Every ship touching the ball hits it at once: each contact is resolved
 * against the ball as it was before any of them, and the ball takes the
 * sum. Resolving them one after another would let the last slot win every
 * tie (two ships meeting the ball head-on at a kickoff would always send
 * it toward team 0's goal). The ship that gave the largest impulse is the
 * last toucher; a tie goes to the lower slot.
 */
static void hit_ball(struct cc_sim *sim)
{
	const float ship_inv = 1.0f / CC_SIM_SHIP_MASS, ball_inv = 1.0f / CC_SIM_BALL_MASS;
	const struct cc_sim_body before = sim->ball;
	struct cc_sim_vec3 dpos = v3(0, 0, 0), dvel = v3(0, 0, 0);
	float strongest = -1.0f;
	for (unsigned i = 0; i < sim->ship_count; i++) {
		struct cc_sim_ship *s = &sim->ships[i];
		struct cc_sim_body ball = before;
		if (!s->active ||
		    !collide(&s->body, CC_SIM_SHIP_RADIUS, ship_inv, &ball, CC_SIM_BALL_RADIUS, ball_inv))
			continue;
		struct cc_sim_vec3 kick = v_sub(ball.vel, before.vel);
		dpos = v_add(dpos, v_sub(ball.pos, before.pos));
		dvel = v_add(dvel, kick);
		float strength = v_dot(kick, kick);
		if (strength > strongest) {
			strongest = strength;
			sim->last_touch = (int8_t)i;
		}
	}
	sim->ball.pos = v_add(before.pos, dpos);
	sim->ball.vel = v_add(before.vel, dvel);
}

void cc_sim_step(struct cc_sim *sim, const struct cc_sim_input *inputs, struct cc_sim_events *ev)
{
	const float ship_inv = 1.0f / CC_SIM_SHIP_MASS;
	int8_t goal = -1;

	for (unsigned i = 0; i < sim->ship_count; i++)
		if (sim->ships[i].active)
			fly(&sim->ships[i], inputs ? &inputs[i] : NULL);
	roll_ball(sim);

	for (unsigned i = 0; i < sim->ship_count; i++) {
		struct cc_sim_ship *a = &sim->ships[i];
		if (!a->active)
			continue;
		for (unsigned j = i + 1; j < sim->ship_count; j++)
			if (sim->ships[j].active)
				(void)collide(&a->body, CC_SIM_SHIP_RADIUS, ship_inv, &sim->ships[j].body,
					      CC_SIM_SHIP_RADIUS, ship_inv);
	}
	if (sim->ball_live)
		hit_ball(sim);
	for (unsigned i = 0; i < sim->ship_count; i++) {
		struct cc_sim_body *b = &sim->ships[i].body;
		if (!sim->ships[i].active)
			continue;
		ship_walls(b);
		/* An impulse may not lift a ship past the hard clamp. */
		b->vel = v_clamp(b->vel, CC_SIM_SHIP_MAX_BOOST_SPEED);
	}
	if (sim->ball_live) {
		ball_walls(&sim->ball);
		sim->ball.vel = v_clamp(sim->ball.vel, CC_SIM_BALL_MAX_SPEED);
		/* All of the ball over the line, inside the mouth (ball_walls holds it there). */
		if (sim->ball.pos.z >= CC_SIM_ARENA_HALF_Z + CC_SIM_BALL_RADIUS)
			goal = 0;
		else if (sim->ball.pos.z <= -(CC_SIM_ARENA_HALF_Z + CC_SIM_BALL_RADIUS))
			goal = 1;
		if (goal >= 0) {
			sim->ball_live = false;
			sim->ball.vel = v3(0.0f, 0.0f, 0.0f);
		}
	}
	sim->tick++;
	if (ev) {
		ev->goal_team = goal;
		ev->last_touch = sim->last_touch;
	}
}
