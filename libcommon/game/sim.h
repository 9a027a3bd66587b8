/*
 * sim.h - the match simulation of SPEC 11: ships with 6-DOF force/torque
 * flight and a ball in the arena, stepped at a fixed 1/60 s. Pure: no I/O,
 * no clock, no randomness, no allocation. cc-gameserver owns one struct
 * cc_sim per match and steps it once per tick; game/wire.h quantises its
 * bodies into snapshots; game/match_lifecycle.h decides when it runs and
 * when a kickoff resets it.
 *
 * Determinism: the same initial state and the same inputs, tick by tick,
 * give bit-identical states from the same binary (only +, -, *, / and
 * sqrtf, in a fixed order: ships by slot, then the ball; no transcendental
 * functions, no FMA contraction under -std=c11). The server never sends a
 * seed: kickoff resets are broadcast as the resulting transforms.
 *
 * Coordinates (world, right-handed, units are metres-ish, time in s):
 *   x across the arena, -18 .. +18          (CC_SIM_ARENA_HALF_X)
 *   y up, floor 0 .. ceiling 18             (CC_SIM_ARENA_HEIGHT)
 *   z along the arena, goal lines at +-27   (CC_SIM_ARENA_HALF_Z)
 * Team 0 defends the goal at z = -27 and attacks +z; team 1 defends +27 and
 * attacks -z. There is no gravity (space).
 *
 * Goal mouths: an opening in each end wall, centred on x = 0 and
 * y = CC_SIM_GOAL_CENTER_Y, CC_SIM_GOAL_HALF_WIDTH to each side and
 * CC_SIM_GOAL_HALF_HEIGHT above and below; behind it a box
 * CC_SIM_GOAL_DEPTH deep. The ball scores when its centre is a full radius
 * past the goal line (all of it over, as in football) inside a mouth.
 * Ships never leave the arena box (they cannot enter a goal). Clients learn
 * these constants and this rule from contracts/gameserver-protocol.md
 * section 6 (tests/unit/test_sim.c goal_line_rule pins it): change both.
 *
 * Body axes of a ship (rotated by its orientation): +x lateral, +y up,
 * +z forward (the nose). The identity orientation faces +z. Thrust acts
 * along these axes, torque about them (x pitch, y yaw, z roll, right-hand
 * rule). Boost adds forward thrust while the meter lasts and lifts the
 * speed clamp from CC_SIM_SHIP_MAX_SPEED to CC_SIM_SHIP_MAX_BOOST_SPEED.
 *
 * Per tick, for each active ship in slot order: inputs clamped to [-1, 1]
 * (non-finite -> 0); angular velocity += torque * CC_SIM_SHIP_ANG_ACCEL * dt
 * (world frame), damped by CC_SIM_SHIP_ANG_DRAG, clamped to
 * CC_SIM_SHIP_MAX_ANG_SPEED; orientation integrated and renormalised;
 * velocity += thrust * accel * dt, damped by CC_SIM_SHIP_LIN_DRAG, clamped;
 * position += velocity * dt. Then the ball (drag, clamp, move). Then
 * collisions: ship-ship and ship-ball as spheres (impulse with restitution,
 * overlap pushed apart by inverse mass; every ship touching the ball hits
 * it at once, each against the ball as it was, so no slot wins a tie by
 * being processed later), walls (position clamped, the
 * normal velocity reflected times a restitution). Then goal detection.
 * Drag is linear: v *= (1 - drag * dt) per tick.
 *
 * Collisions are deliberately simple: one pass per tick, no sweeping. At
 * the clamps a body moves at most 0.84 m per tick, less than any radius,
 * so nothing tunnels through a wall or another body.
 *
 * Ownership: struct cc_sim is a plain value (copy it to snapshot or
 * rewind); nothing here allocates or frees.
 */
#ifndef CC_SIM_H
#define CC_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "sys/cc.h"

#define CC_SIM_TICK_RATE 60 /* ticks per second */
#define CC_SIM_DT (1.0f / 60.0f)

#define CC_SIM_TEAMS 2
#define CC_SIM_MAX_SHIPS 8   /* slots 0..7 */
#define CC_SIM_MAX_PER_TEAM 4 /* spawn points per team */

/* Arena (SPEC 11). */
#define CC_SIM_ARENA_HALF_X 18.0f
#define CC_SIM_ARENA_HEIGHT 18.0f
#define CC_SIM_ARENA_HALF_Z 27.0f
#define CC_SIM_GOAL_HALF_WIDTH 7.0f  /* mouth spans x in [-7, 7] */
#define CC_SIM_GOAL_HALF_HEIGHT 5.0f /* mouth spans y in [4, 14] */
#define CC_SIM_GOAL_CENTER_Y 9.0f
#define CC_SIM_GOAL_DEPTH 4.0f /* box behind each line: |z| up to 31 */

/* Ships. */
#define CC_SIM_SHIP_RADIUS 1.0f
#define CC_SIM_SHIP_MASS 3.0f
#define CC_SIM_SHIP_THRUST_ACCEL 30.0f /* m/s^2 at full thrust on each axis */
#define CC_SIM_SHIP_BOOST_ACCEL 25.0f  /* extra forward m/s^2 while boosting */
#define CC_SIM_SHIP_LIN_DRAG 0.6f      /* 1/s */
#define CC_SIM_SHIP_MAX_SPEED 23.0f    /* m/s without boost */
#define CC_SIM_SHIP_MAX_BOOST_SPEED 35.0f /* m/s while boosting: the clamp of every ship speed */
#define CC_SIM_SHIP_ANG_ACCEL 12.0f    /* rad/s^2 at full torque on each axis */
#define CC_SIM_SHIP_ANG_DRAG 2.5f      /* 1/s: one axis alone spins up to 4.6 rad/s */
#define CC_SIM_SHIP_MAX_ANG_SPEED 5.5f /* rad/s */
#define CC_SIM_SHIP_WALL_RESTITUTION 0.3f
#define CC_SIM_BOOST_DRAIN 0.3333333f /* meter per second while boosting: 3 s from full */
#define CC_SIM_BOOST_REGEN 0.125f     /* meter per second while not boosting: 8 s to full */
#define CC_SIM_BOOST_KICKOFF 1.0f     /* meter after a kickoff reset */

/* Ball. */
#define CC_SIM_BALL_RADIUS 1.5f
#define CC_SIM_BALL_MASS 1.0f
#define CC_SIM_BALL_LIN_DRAG 0.15f /* 1/s */
#define CC_SIM_BALL_MAX_SPEED 50.0f
#define CC_SIM_BALL_WALL_RESTITUTION 0.8f
#define CC_SIM_HIT_RESTITUTION 0.6f /* ship-ball and ship-ship */

struct cc_sim_vec3 {
	float x, y, z;
};

/* A unit quaternion; the identity {1, 0, 0, 0} faces +z. */
struct cc_sim_quat {
	float w, x, y, z;
};

/* One rigid body: everything a snapshot carries about it. */
struct cc_sim_body {
	struct cc_sim_vec3 pos;    /* centre, world frame */
	struct cc_sim_vec3 vel;    /* m/s, world frame; |vel| within the body's clamp */
	struct cc_sim_quat rot;    /* orientation (the ball's too: it spins only by being carried, so identity) */
	struct cc_sim_vec3 angvel; /* rad/s, world frame; zero for the ball */
};

struct cc_sim_ship {
	struct cc_sim_body body;
	float boost;   /* meter in [0, 1] */
	uint8_t team;  /* 0 or 1 */
	uint8_t spawn; /* spawn index within its team, 0..CC_SIM_MAX_PER_TEAM-1 */
	bool active;   /* simulated and collided; an inactive ship is parked at its spawn */
	bool boosting; /* boost was applied this tick (for effects) */
};

/* One player's input for one tick. Axes are the ship's body axes. */
struct cc_sim_input {
	struct cc_sim_vec3 thrust; /* each in [-1, 1]: x lateral, y up, z forward */
	struct cc_sim_vec3 torque; /* each in [-1, 1]: x pitch, y yaw, z roll */
	bool boost;
};

/* What one step produced. */
struct cc_sim_events {
	int8_t goal_team;  /* the team that scored this tick, or -1 */
	int8_t last_touch; /* slot that last touched the ball before the goal (or now), or -1 */
};

struct cc_sim {
	uint32_t tick; /* steps since cc_sim_init */
	uint8_t ship_count;
	struct cc_sim_ship ships[CC_SIM_MAX_SHIPS]; /* [0, ship_count) are slots */
	struct cc_sim_body ball;
	bool ball_live;     /* false from a goal until the next kickoff: the ball rests in the net */
	int8_t last_touch;  /* slot that touched the ball last since the kickoff, or -1 */
};

/*
 * Sets up a match of n ships, ship i on team teams[i], and places every
 * body at its kickoff transform (cc_sim_kickoff). Spawn indices follow slot
 * order within a team. Returns 0; CC_EINVAL for a NULL pointer, n of 0 or
 * above CC_SIM_MAX_SHIPS, a team other than 0 or 1, or more than
 * CC_SIM_MAX_PER_TEAM ships on one team (*sim untouched).
 */
CC_MUST_CHECK int cc_sim_init(struct cc_sim *sim, unsigned n, const uint8_t teams[]);

/*
 * Kickoff reset: every ship to its spawn transform (cc_sim_spawn), zero
 * velocities, boost meters to CC_SIM_BOOST_KICKOFF; the ball to
 * (0, CC_SIM_GOAL_CENTER_Y, 0) at rest and live; last touch cleared. The
 * caller broadcasts the resulting transforms.
 */
void cc_sim_kickoff(struct cc_sim *sim);

/*
 * The kickoff transform of spawn index `spawn` (0..CC_SIM_MAX_PER_TEAM-1)
 * on `team`: team 0 at z = -18 (index 0) or -21 (others), facing +z; team
 * 1 mirrored at +z facing -z; x offsets 0, -7, +7, -14 (mirrored for team
 * 1 so both teams' index 1 is on the same side of its own goal); y 9.
 * Out-of-range arguments are clamped.
 */
void cc_sim_spawn(unsigned team, unsigned spawn, struct cc_sim_vec3 *pos, struct cc_sim_quat *rot);

/*
 * Marks a slot active or not (a player absent or gone). Going inactive
 * parks the ship at its spawn at rest, out of every collision; going
 * active again leaves it there. Returns 0, or CC_EINVAL for a slot outside
 * [0, ship_count).
 */
CC_MUST_CHECK int cc_sim_set_active(struct cc_sim *sim, unsigned slot, bool active);

/*
 * Advances one tick of CC_SIM_DT. inputs has ship_count entries indexed by
 * slot (NULL: nobody gives input); inputs of inactive ships are ignored.
 * ev (may be NULL) receives whether a goal was scored this tick; after a
 * goal the ball is dead (frozen where it scored, never scores again) until
 * cc_sim_kickoff. Ships keep flying while the ball is dead.
 */
void cc_sim_step(struct cc_sim *sim, const struct cc_sim_input *inputs, struct cc_sim_events *ev);

/* Rotates v by the unit quaternion q (body to world). */
struct cc_sim_vec3 cc_sim_rotate(struct cc_sim_quat q, struct cc_sim_vec3 v);

/* |v| */
float cc_sim_length(struct cc_sim_vec3 v);

#endif
