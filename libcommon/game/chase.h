/*
 * chase.h - the simple ball-chasing policy: given one ship and the ball,
 * the input that steers the ship behind the ball and pushes it toward the
 * goal its team attacks. cc-player drives its ships with it (from
 * snapshots), tests use it to play whole matches, and bots (issue 12) can
 * start from it.
 *
 * The policy, per tick:
 *   - the attack direction a is from the ball to the centre of the goal
 *     mouth the team attacks (team 0: +z, team 1: -z; game/sim.h);
 *   - a ship goal-side of the ball (it would push the ball the wrong way)
 *     aims at a point CC_CHASE_BEHIND metres behind the ball on the attack
 *     line, shifted sideways by CC_CHASE_AROUND so it circles round the
 *     ball instead of through it; otherwise it aims at the ball's centre
 *     pulled back a little along a, so contact pushes along a;
 *   - thrust asks for a velocity toward the aim point (full speed when
 *     far, slowing when near) and corrects the error, in body axes;
 *   - torque turns the nose toward the aim point and damps the spin;
 *   - boost when the nose points at the aim point, the aim point is far
 *     and the meter holds more than a reserve.
 * Pure and deterministic: the same arguments give the same input.
 */
#ifndef CC_CHASE_H
#define CC_CHASE_H

#include "game/sim.h"

#define CC_CHASE_BEHIND 4.0f /* metres behind the ball a goal-side ship aims for */
#define CC_CHASE_AROUND 3.0f /* metres sideways of that point, to go round the ball */

/*
 * Fills *out with the policy's input for a ship (its body, boost meter and
 * team 0 or 1) chasing a ball. Never fails; a degenerate geometry (ship on
 * the ball) yields a push along the attack direction.
 */
void cc_chase_input(const struct cc_sim_body *ship, float boost, unsigned team, const struct cc_sim_body *ball,
		    struct cc_sim_input *out);

/*
 * The team version cc-player uses: of the active ships of a team, the one
 * nearest the ball (ties to the lower slot) chases it with
 * cc_chase_input(); the others support, holding a point SUPPORT_GAP
 * metres from the ball toward their own goal (spread sideways by spawn
 * index), without boost. style in [-1, 1] (clamped; NaN -1) is the
 * player's own habit: it shifts where the chaser strikes the ball (up to
 * 0.6 m) and how deep a supporter holds (up to 3 m). Give each player a
 * fixed style of its own: identical players on both teams play a
 * perfectly mirrored game that can stay 0-0 forever. slot must be <
 * sim->ship_count.
 */
void cc_chase_team_input(const struct cc_sim *sim, unsigned slot, float style, struct cc_sim_input *out);

#endif
