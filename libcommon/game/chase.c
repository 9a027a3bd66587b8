/*
 * chase.c - the ball-chasing policy (chase.h).
 */
#include "game/chase.h"

#include <math.h>

#include "sys/banned.h"

#define SLOW_RADIUS 6.0f   /* within this of the aim point the wanted speed falls off */
#define VEL_GAIN 0.25f     /* thrust per m/s of velocity error (full thrust at 4 m/s off) */
#define TURN_GAIN 3.0f     /* torque per unit of nose error */
#define SPIN_DAMP 0.8f     /* torque per rad/s of spin */
#define BOOST_ALIGN 0.9f   /* cos of the largest nose error boost is used at */
#define BOOST_DIST 10.0f   /* boost only farther than this from the aim point */
#define BOOST_RESERVE 0.2f /* meter kept back */
#define LEAD_MAX 0.6f      /* seconds of ball travel the aim point leads by, at most */
#define SUPPORT_GAP 12.0f  /* a supporting ship holds this far from the ball toward its own goal */
#define SUPPORT_SPREAD 4.0f /* and this far to one side (by spawn index), so two supporters do not stack */
#define STYLE_STRIKE 0.6f  /* metres a style of +-1 moves the chaser's strike point */
#define STYLE_GAP 3.0f     /* metres a style of +-1 moves a supporter's post */
#define APPROACH_SLIDE 0.5f /* the aim point sits this share of the distance to the ball behind it */

static struct cc_sim_vec3 v3(float x, float y, float z)
{
	struct cc_sim_vec3 v = { x, y, z };
	return v;
}

static struct cc_sim_vec3 sub(struct cc_sim_vec3 a, struct cc_sim_vec3 b)
{
	return v3(a.x - b.x, a.y - b.y, a.z - b.z);
}

static struct cc_sim_vec3 add_scaled(struct cc_sim_vec3 a, struct cc_sim_vec3 b, float s)
{
	return v3(a.x + b.x * s, a.y + b.y * s, a.z + b.z * s);
}

static float dot(struct cc_sim_vec3 a, struct cc_sim_vec3 b)
{
	return a.x * b.x + a.y * b.y + a.z * b.z;
}

/* a / |a|, or fallback when a is (nearly) zero. */
static struct cc_sim_vec3 unit_or(struct cc_sim_vec3 a, struct cc_sim_vec3 fallback)
{
	float len = cc_sim_length(a);
	if (!(len > 1e-4f))
		return fallback;
	return v3(a.x / len, a.y / len, a.z / len);
}

/* World to body: rotate by the conjugate. */
static struct cc_sim_vec3 to_body(struct cc_sim_quat q, struct cc_sim_vec3 v)
{
	struct cc_sim_quat c = { q.w, -q.x, -q.y, -q.z };
	return cc_sim_rotate(c, v);
}

static float clamp1(float a)
{
	return a < -1.0f ? -1.0f : a > 1.0f ? 1.0f : a;
}

void cc_chase_input(const struct cc_sim_body *ship, float boost, unsigned team, const struct cc_sim_body *ball,
		    struct cc_sim_input *out)
{
	float attack_z = team ? -1.0f : 1.0f;
	struct cc_sim_vec3 goal = v3(0.0f, CC_SIM_GOAL_CENTER_Y, attack_z * (CC_SIM_ARENA_HALF_Z + 1.0f));
	/* Lead the ball by the time it takes to get there (at most LEAD_MAX s). */
	float lead = cc_sim_length(sub(ball->pos, ship->pos)) / CC_SIM_SHIP_MAX_SPEED;
	struct cc_sim_vec3 target = add_scaled(ball->pos, ball->vel, lead < LEAD_MAX ? lead : LEAD_MAX);
	struct cc_sim_vec3 a = unit_or(sub(goal, target), v3(0.0f, 0.0f, attack_z));
	struct cc_sim_vec3 aim;

	/*
	 * Goal-side of the ball: circle round to behind it. Behind it: aim at
	 * a point on the attack line behind the ball that slides up to the
	 * ball as the ship closes in, so the ship arrives on the line and
	 * contact pushes along a.
	 */
	float gap = cc_sim_length(sub(target, ship->pos));
	bool behind = dot(sub(ship->pos, target), a) <= 0.0f;
	if (!behind) {
		float side = ship->pos.x >= target.x ? 1.0f : -1.0f;
		aim = add_scaled(target, a, -CC_CHASE_BEHIND);
		aim.x += side * CC_CHASE_AROUND;
	} else {
		float back = gap * APPROACH_SLIDE;
		aim = add_scaled(target, a, -(back < CC_CHASE_BEHIND * 1.5f ? back : CC_CHASE_BEHIND * 1.5f));
	}
	/* Never aim outside what the ship can reach. */
	const float lim_x = CC_SIM_ARENA_HALF_X - CC_SIM_SHIP_RADIUS, lim_z = CC_SIM_ARENA_HALF_Z - CC_SIM_SHIP_RADIUS;
	aim.x = aim.x < -lim_x ? -lim_x : aim.x > lim_x ? lim_x : aim.x;
	aim.y = aim.y < CC_SIM_SHIP_RADIUS ? CC_SIM_SHIP_RADIUS
		: aim.y > CC_SIM_ARENA_HEIGHT - CC_SIM_SHIP_RADIUS ? CC_SIM_ARENA_HEIGHT - CC_SIM_SHIP_RADIUS : aim.y;
	aim.z = aim.z < -lim_z ? -lim_z : aim.z > lim_z ? lim_z : aim.z;

	struct cc_sim_vec3 to_aim = sub(aim, ship->pos);
	float dist = cc_sim_length(to_aim);
	struct cc_sim_vec3 dir = unit_or(to_aim, a);
	float speed = CC_SIM_SHIP_MAX_SPEED * (dist < SLOW_RADIUS ? dist / SLOW_RADIUS : 1.0f);
	/* Behind the ball: keep pushing through it rather than stopping on it. */
	if (behind)
		speed = CC_SIM_SHIP_MAX_SPEED;
	struct cc_sim_vec3 want = v3(dir.x * speed, dir.y * speed, dir.z * speed);
	struct cc_sim_vec3 thrust = to_body(ship->rot, sub(want, ship->vel));
	out->thrust = v3(clamp1(thrust.x * VEL_GAIN), clamp1(thrust.y * VEL_GAIN), clamp1(thrust.z * VEL_GAIN));

	/* Nose error in body axes: +x needs +yaw, +y needs -pitch (sim.h: right-hand rule about body axes). */
	struct cc_sim_vec3 d = to_body(ship->rot, dir);
	struct cc_sim_vec3 spin = to_body(ship->rot, ship->angvel);
	float tx = -d.y * TURN_GAIN - spin.x * SPIN_DAMP;
	float ty = d.x * TURN_GAIN - spin.y * SPIN_DAMP;
	/* Pointing straight away: any turn will do, so yaw. */
	if (d.z < -0.9f && fabsf(d.x) < 0.1f)
		ty = 1.0f;
	out->torque = v3(clamp1(tx), clamp1(ty), clamp1(-spin.z * SPIN_DAMP));
	out->boost = d.z > BOOST_ALIGN && dist > BOOST_DIST && boost > BOOST_RESERVE;
}

void cc_chase_team_input(const struct cc_sim *sim, unsigned slot, float style, struct cc_sim_input *out)
{
	const struct cc_sim_ship *me = &sim->ships[slot];
	float my_gap = cc_sim_length(sub(sim->ball.pos, me->body.pos));
	bool nearest = true;

	for (unsigned i = 0; i < sim->ship_count; i++) {
		const struct cc_sim_ship *o = &sim->ships[i];
		if (i == slot || !o->active || o->team != me->team)
			continue;
		float gap = cc_sim_length(sub(sim->ball.pos, o->body.pos));
		/* Ties go to the lower slot, so exactly one ship of a team chases. */
		if (gap < my_gap || (gap == my_gap && i < slot))
			nearest = false;
	}
	style = !(style >= -1.0f) ? -1.0f : style > 1.0f ? 1.0f : style; /* NaN too */
	if (nearest) {
		/* A player's style shifts where it strikes the ball: no two players (or teams) play alike. */
		struct cc_sim_body ball = sim->ball;
		ball.pos.x += style * STYLE_STRIKE;
		ball.pos.y -= style * STYLE_STRIKE;
		cc_chase_input(&me->body, me->boost, me->team, &ball, out);
		return;
	}
	/* Support: hold a point between the ball and our own goal, as a ball the chaser loses comes back. */
	float own_z = me->team ? CC_SIM_ARENA_HALF_Z : -CC_SIM_ARENA_HALF_Z;
	struct cc_sim_vec3 home = v3(0.0f, CC_SIM_GOAL_CENTER_Y, own_z);
	struct cc_sim_vec3 back = unit_or(sub(home, sim->ball.pos), v3(0.0f, 0.0f, me->team ? 1.0f : -1.0f));
	struct cc_sim_body post = sim->ball;
	post.pos = add_scaled(sim->ball.pos, back, SUPPORT_GAP + style * STYLE_GAP);
	/* Mirrored for team 1, so the two teams play the same game. */
	post.pos.x += ((me->spawn & 1u) ? -SUPPORT_SPREAD : SUPPORT_SPREAD) * (me->team ? -1.0f : 1.0f);
	post.vel = v3(0.0f, 0.0f, 0.0f);
	/* Chasing a still "ball" at the post from behind it parks the ship there, facing the play. */
	cc_chase_input(&me->body, me->boost, me->team, &post, out);
	out->boost = false;
}
