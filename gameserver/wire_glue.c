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

void gs_input_state_init(struct gs_input_state *st)
{
	memset(st, 0, sizeof *st);
}

void gs_input_receive(struct gs_input_state *st, const struct cc_wire_input_msg *in)
{
	/* Unwrap against the newest seen; the first message starts above 2^16 so 0 stays "none". */
	uint32_t newest = st->newest ? (uint32_t)((int64_t)st->newest + cc_wire_seq_diff(in->newest_seq, (uint16_t)st->newest))
				     : 65536u + in->newest_seq;
	for (uint16_t i = 0; i < in->count; i++) {
		uint32_t seq = newest - i;
		if (seq <= st->last_consumed)
			break; /* already applied or given up: redundancy we no longer need */
		const struct cc_wire_input *w = &in->inputs[i];
		st->ring[seq % GS_INPUT_WINDOW] = (struct gs_input){ .seq = seq, .strafe = w->thrust[0], .lift = w->thrust[1],
								     .throttle = w->thrust[2], .pitch = w->turn[0],
								     .yaw = w->turn[1], .roll = w->turn[2],
								     .buttons = w->buttons };
		st->have[seq % GS_INPUT_WINDOW] = true;
	}
	if (newest > st->newest)
		st->newest = newest;
}

const struct gs_input *gs_input_next(struct gs_input_state *st)
{
	if (st->newest <= st->last_consumed)
		return st->last_consumed ? &st->current : NULL;
	if (st->last_consumed == 0)
		st->last_consumed = st->newest - 1; /* the first input: start from the newest */
	if (st->newest - st->last_consumed > GS_INPUT_BACKLOG_MAX) {
		uint32_t skip_to = st->newest - GS_INPUT_BACKLOG_MAX;
		st->lost += skip_to - st->last_consumed;
		st->last_consumed = skip_to;
	}
	for (uint32_t seq = st->last_consumed + 1; seq <= st->newest; seq++) {
		struct gs_input *in = &st->ring[seq % GS_INPUT_WINDOW];
		if (st->have[seq % GS_INPUT_WINDOW] && in->seq == seq) {
			st->lost += seq - st->last_consumed - 1;
			st->have[seq % GS_INPUT_WINDOW] = false;
			st->current = *in;
			st->last_consumed = seq;
			return &st->current;
		}
	}
	return st->last_consumed ? &st->current : NULL;
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
		if (inputs[i] && inputs[i]->last_consumed) {
			p->flags |= CC_WIRE_PF_HAS_INPUT;
			p->last_input_seq = gs_input_ack(inputs[i]);
		}
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
