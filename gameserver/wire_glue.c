/*
 * wire_glue.c - see wire_glue.h. Little-endian fields throughout.
 */
#include "wire_glue.h"

#include <stdio.h>
#include <string.h>

#include "match.h"
#include "sys/banned.h"

static const struct gs_msg_rule rules[] = {
	/* hello: u16 version, u16 tick rate, u8 kind (0 token, 1 name), u16 length, bytes */
	{ GS_MSG_HELLO, true, GS_CH_CONTROL, 7, 7 + CC_JOIN_TOKEN_MAX },
	{ GS_MSG_WELCOME, false, GS_CH_CONTROL, 0, 0 },
	{ GS_MSG_REFUSAL, false, GS_CH_CONTROL, 0, 0 },
	/* input: u32 newest seq, u8 count 1..4, count x 7 bytes */
	{ GS_MSG_INPUT, true, GS_CH_INPUT, 5 + 7, 5 + 7 * GS_INPUT_REDUNDANCY },
	{ GS_MSG_SNAPSHOT, false, GS_CH_SNAPSHOT, 0, 0 },
	{ GS_MSG_STATE, false, GS_CH_CONTROL, 0, 0 },
	{ GS_MSG_GOAL, false, GS_CH_CONTROL, 0, 0 },
	{ GS_MSG_ENDED, false, GS_CH_CONTROL, 0, 0 },
	/* ping: u32 client time */
	{ GS_MSG_PING, true, GS_CH_CONTROL, 4, 4 },
	{ GS_MSG_PONG, false, GS_CH_CONTROL, 0, 0 },
};

const struct gs_msg_rule *gs_wire_rule(uint16_t id)
{
	for (size_t i = 0; i < CC_ARRAY_LEN(rules); i++)
		if (rules[i].id == id)
			return &rules[i];
	return NULL;
}

static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t get32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static void put16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v) { put16(p, v); put16(p + 2, v >> 16); }

int gs_wire_hello_decode(const uint8_t *p, size_t len, struct gs_hello *out, const char **why)
{
	if (len < 7) {
		*why = "truncated";
		return CC_EINVAL;
	}
	memset(out, 0, sizeof *out);
	out->protocol_version = get16(p);
	out->tick_rate = get16(p + 2);
	uint8_t kind = p[4];
	size_t n = get16(p + 5);
	if (n != len - 7) {
		*why = "length field disagrees with the payload";
		return CC_EINVAL;
	}
	for (size_t i = 0; i < n; i++)
		if (p[7 + i] < 0x21 || p[7 + i] > 0x7e) {
			*why = kind == 0 ? "token is not printable ASCII" : "name has control characters";
			return CC_EINVAL;
		}
	if (kind == 0 && n >= 1 && n <= CC_JOIN_TOKEN_MAX) {
		memcpy(out->token, p + 7, n);
	} else if (kind == 1 && n >= 1 && n <= GS_NAME_MAX) {
		memcpy(out->name, p + 7, n);
	} else {
		*why = "unknown kind or bad length";
		return CC_EINVAL;
	}
	return 0;
}

void gs_input_state_init(struct gs_input_state *st)
{
	memset(st, 0, sizeof *st);
}

int gs_wire_input_receive(struct gs_input_state *st, const uint8_t *p, size_t len, const char **why)
{
	uint32_t newest = get32(p);
	size_t count = p[4];
	if (count < 1 || count > GS_INPUT_REDUNDANCY || len != 5 + 7 * count || newest < count) {
		*why = "bad_input";
		return CC_EINVAL;
	}
	for (size_t i = 0; i < count; i++) {
		uint32_t seq = newest - (uint32_t)i;
		if (seq <= st->last_consumed)
			break; /* already applied (or given up): redundancy we no longer need */
		const uint8_t *r = p + 5 + 7 * i;
		struct gs_input *in = &st->ring[seq % GS_INPUT_WINDOW];
		*in = (struct gs_input){ .seq = seq, .throttle = (int8_t)r[0], .strafe = (int8_t)r[1], .lift = (int8_t)r[2],
					 .pitch = (int8_t)r[3], .yaw = (int8_t)r[4], .roll = (int8_t)r[5], .buttons = r[6] };
		st->have[seq % GS_INPUT_WINDOW] = true;
	}
	if (newest > st->newest)
		st->newest = newest;
	return 0;
}

const struct gs_input *gs_input_next(struct gs_input_state *st)
{
	if (st->newest <= st->last_consumed)
		return st->last_consumed ? &st->current : NULL; /* nothing new: hold the last controls */
	/* Too far behind: keep only the newest few, the rest count as lost. */
	if (st->newest - st->last_consumed > GS_INPUT_BACKLOG_MAX) {
		uint32_t skip_to = st->newest - GS_INPUT_BACKLOG_MAX;
		st->lost += skip_to - st->last_consumed;
		st->last_consumed = skip_to;
	}
	/* The next in order if present; else the oldest newer one present proves the gap lost. */
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

size_t gs_wire_refusal(uint8_t *buf, size_t cap, const char *reason, const char *detail)
{
	/* u8 reason length, reason, u8 detail length, detail */
	size_t rl = strlen(reason), dl = detail ? strlen(detail) : 0;
	if (rl > 64)
		rl = 64;
	if (dl > 160)
		dl = 160;
	if (cap < 4 + rl + dl)
		return 0;
	put16(buf, GS_MSG_REFUSAL);
	buf[2] = (uint8_t)rl;
	memcpy(buf + 3, reason, rl);
	buf[3 + rl] = (uint8_t)dl;
	if (dl)
		memcpy(buf + 4 + rl, detail, dl);
	return 4 + rl + dl;
}

size_t gs_wire_welcome(uint8_t *buf, size_t cap, int slot, int team, uint32_t tick, int state)
{
	if (cap < 12)
		return 0;
	put16(buf, GS_MSG_WELCOME);
	buf[2] = (uint8_t)slot;
	buf[3] = (uint8_t)team;
	put32(buf + 4, tick);
	buf[8] = (uint8_t)state;
	put16(buf + 9, 60);
	buf[11] = GS_PROTOCOL_VERSION;
	return 12;
}

size_t gs_wire_pong(uint8_t *buf, size_t cap, const uint8_t *ping, size_t ping_len, uint32_t tick)
{
	if (cap < 10 || ping_len != 4)
		return 0;
	put16(buf, GS_MSG_PONG);
	memcpy(buf + 2, ping, 4);
	put32(buf + 6, tick);
	return 10;
}

size_t gs_wire_state_event(uint8_t *buf, size_t cap, uint32_t tick, int state)
{
	if (cap < 7)
		return 0;
	put16(buf, GS_MSG_STATE);
	put32(buf + 2, tick);
	buf[6] = (uint8_t)state;
	return 7;
}

size_t gs_wire_goal_event(uint8_t *buf, size_t cap, uint32_t tick, int team, int slot, const int score[2])
{
	if (cap < 10)
		return 0;
	put16(buf, GS_MSG_GOAL);
	put32(buf + 2, tick);
	buf[6] = (uint8_t)team;
	buf[7] = (uint8_t)(slot < 0 ? 255 : slot);
	buf[8] = (uint8_t)score[0];
	buf[9] = (uint8_t)score[1];
	return 10;
}

size_t gs_wire_ended_event(uint8_t *buf, size_t cap, uint32_t tick, const int score[2], bool overtime)
{
	if (cap < 9)
		return 0;
	put16(buf, GS_MSG_ENDED);
	put32(buf + 2, tick);
	buf[6] = (uint8_t)score[0];
	buf[7] = (uint8_t)score[1];
	buf[8] = overtime;
	return 9;
}

size_t gs_wire_snapshot(uint8_t *buf, size_t cap, const struct gs_match *m, const uint32_t *acks)
{
	/* u32 tick, u8 state, u8 score0, u8 score1, u8 n, n x (u8 slot, u32 ack) */
	int score[2];
	gs_match_score(m, score);
	size_t n = 0;
	for (int i = 0; i < GS_MATCH_MAX_SLOTS; i++)
		n += acks[i] != 0;
	size_t need = 2 + 8 + 5 * n;
	if (cap < need)
		return 0;
	put16(buf, GS_MSG_SNAPSHOT);
	put32(buf + 2, gs_match_tick(m));
	buf[6] = (uint8_t)gs_match_state(m);
	buf[7] = (uint8_t)score[0];
	buf[8] = (uint8_t)score[1];
	buf[9] = (uint8_t)n;
	size_t off = 10;
	for (int i = 0; i < GS_MATCH_MAX_SLOTS; i++)
		if (acks[i]) {
			buf[off] = (uint8_t)i;
			put32(buf + off + 1, acks[i]);
			off += 5;
		}
	return off;
}

const char *gs_wire_state_name(int state)
{
	static const char *const names[] = { "LOADING", "WARMUP", "PLAYING", "GOAL_PAUSE", "FULL_TIME",
					     "OVERTIME", "RESULTS", "LOBBY" };
	return state >= 0 && state < (int)CC_ARRAY_LEN(names) ? names[state] : "UNKNOWN";
}
