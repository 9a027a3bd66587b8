/*
 * wire_glue.c - see wire_glue.h.
 */
#include "wire_glue.h"

#include <string.h>

#include "match.h"
#include "game/match_lifecycle.h"
#include "game/sim.h"
#include "sys/banned.h"

uint16_t gs_wire_reason_for_refusal(const char *r)
{
	if (strcmp(r, "expired") == 0)
		return CC_REASON_EXPIRED_TOKEN;
	if (strcmp(r, "wrong_match") == 0 || strcmp(r, "wrong_server") == 0)
		return CC_REASON_WRONG_MATCH;
	if (strcmp(r, "not_in_roster") == 0 || strcmp(r, "wrong_slot") == 0 || strcmp(r, "wrong_generation") == 0)
		return CC_REASON_NOT_IN_ROSTER;
	if (strcmp(r, "token_replayed") == 0)
		return CC_REASON_TOKEN_REPLAYED;
	return CC_REASON_BAD_TOKEN; /* malformed, bad_version, unknown_key, bad_signature */
}

static void body_of(const struct cc_sim_body *b, struct cc_wire_body *out)
{
	struct cc_wire_pose p = { .pos = { b->pos.x, b->pos.y, b->pos.z },
				  .rot = { b->rot.w, b->rot.x, b->rot.y, b->rot.z },
				  .vel = { b->vel.x, b->vel.y, b->vel.z },
				  .angvel = { b->angvel.x, b->angvel.y, b->angvel.z } };
	cc_wire_quantise(&p, out);
}

static uint32_t clock_ticks(const struct cc_match *life)
{
	return life->state == CC_MATCH_OVERTIME ? life->overtime_ticks : life->remaining_ticks;
}

void gs_wire_snapshot(struct cc_wire_msg *m, const struct gs_match *match, const bool *connected,
		      const struct gs_input_state *const *inputs)
{
	const struct cc_sim *sim = gs_match_sim(match);
	const struct cc_match *life = gs_match_lifecycle(match);
	memset(m, 0, sizeof *m);
	m->id = CC_MSG_SNAPSHOT;
	struct cc_wire_snapshot *s = &m->u.snapshot;
	s->tick = life->tick;
	s->match_state = (uint8_t)life->state;
	s->score[0] = (uint8_t)(life->score[0] > 255 ? 255 : life->score[0]);
	s->score[1] = (uint8_t)(life->score[1] > 255 ? 255 : life->score[1]);
	s->clock_ticks = clock_ticks(life);
	body_of(&sim->ball, &s->ball);
	for (unsigned i = 0; i < sim->ship_count && i < CC_WIRE_MAX_PLAYERS; i++) {
		struct cc_wire_player_state *p = &s->players[s->player_count++];
		const struct cc_sim_ship *ship = &sim->ships[i];
		p->slot = (uint8_t)i;
		p->flags = (uint8_t)((connected[i] ? CC_WIRE_PF_CONNECTED : 0) | (ship->boosting ? CC_WIRE_PF_BOOSTING : 0));
		if (inputs[i] && gs_input_started(inputs[i])) {
			p->flags |= CC_WIRE_PF_HAS_INPUT;
			p->last_input_seq = gs_input_ack(inputs[i]);
		}
		/* Held input (or none yet) for a connected player: the client's prediction diverges from here. */
		if (connected[i] && inputs[i] && gs_input_stalled(inputs[i]))
			p->flags |= CC_WIRE_PF_INPUT_STALLED;
		float b = ship->boost < 0 ? 0 : ship->boost > 1 ? 1 : ship->boost;
		p->boost = (uint8_t)(b * 255.0f + 0.5f);
		body_of(&ship->body, &p->body);
	}
}

void gs_wire_kickoff(struct cc_wire_msg *m, const struct gs_match *match)
{
	const struct cc_sim *sim = gs_match_sim(match);
	memset(m, 0, sizeof *m);
	m->id = CC_MSG_KICKOFF;
	struct cc_wire_kickoff *k = &m->u.kickoff;
	k->tick = gs_match_lifecycle(match)->tick + 1; /* the first tick simulated from these transforms */
	body_of(&sim->ball, &k->ball);
	for (unsigned i = 0; i < sim->ship_count && i < CC_WIRE_MAX_PLAYERS; i++) {
		k->ships[k->ship_count].slot = (uint8_t)i;
		body_of(&sim->ships[i].body, &k->ships[k->ship_count].body);
		k->ship_count++;
	}
}

void gs_wire_match_state(struct cc_wire_msg *m, const struct gs_match *match)
{
	const struct cc_match *life = gs_match_lifecycle(match);
	memset(m, 0, sizeof *m);
	m->id = CC_MSG_MATCH_STATE;
	m->u.match_state.tick = life->tick;
	m->u.match_state.state = (uint8_t)life->state;
	m->u.match_state.score[0] = (uint8_t)(life->score[0] > 255 ? 255 : life->score[0]);
	m->u.match_state.score[1] = (uint8_t)(life->score[1] > 255 ? 255 : life->score[1]);
	m->u.match_state.clock_ticks = clock_ticks(life);
}

const char *gs_wire_state_name(int state)
{
	return cc_match_state_name((enum cc_match_state)state);
}
