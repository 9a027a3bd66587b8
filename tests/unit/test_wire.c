/*
 * wire.c, the game wire codec: every message round-trips byte for byte;
 * golden packets pin the byte order and layout; every strict prefix of
 * every sample is refused as truncated, a longer packet or a count/length
 * over its cap as oversized, a value out of range as malformed (with the
 * field named), an unknown id as unknown (CC_ENOTFOUND, to be skipped);
 * the encoder refuses what the decoder refuses and never writes past its
 * buffer; quantisation stays within the bounds wire.h documents; the table
 * equals contracts/gameserver-messages.json.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "support.h"
#include "game/join_token.h"
#include "game/wire.h"
#include "sys/file.h"
#include "sys/banned.h"

/* A join token always fits hello.credential, and is in its charset (base64url and '.': printable ASCII). */
_Static_assert(CC_JOIN_TOKEN_MAX <= CC_WIRE_TOKEN_MAX, "a join token must fit hello.credential");

/* ---- samples: one or more valid messages per id ---------------------------------- */

static void set_str(char *dst, uint16_t *len, const char *s)
{
	size_t n = strlen(s);
	memcpy(dst, s, n + 1);
	*len = (uint16_t)n;
}

static struct cc_wire_body sample_body(int k)
{
	struct cc_wire_body b = {
		.rot = 0x4ABCDEF1u ^ (uint32_t)k,
		.angvel = 0x3FFFFFFFu & (0x12345678u + (uint32_t)k),
		.pos = { (int16_t)(100 * k - 7), (int16_t)(-2000 + k), INT16_MAX },
		.vel = { INT16_MIN, (int16_t)k, -1 },
	};
	return b;
}

enum { SAMPLE_COUNT = 36 };

/* Fills *m with sample number i (0 .. SAMPLE_COUNT-1). */
static void sample(int i, struct cc_wire_msg *m)
{
	memset(m, 0, sizeof(*m));
	switch (i) {
	case 0:
		m->id = CC_MSG_HELLO;
		m->u.hello = (struct cc_wire_hello){ .protocol_version = 1, .tick_rate = 60, .auth = CC_WIRE_AUTH_TOKEN };
		set_str(m->u.hello.credential, &m->u.hello.credential_len, "v1.k1.abc-DEF_123~+/=");
		break;
	case 1:
		m->id = CC_MSG_HELLO;
		m->u.hello = (struct cc_wire_hello){ .protocol_version = 1, .tick_rate = 60, .auth = CC_WIRE_AUTH_NAME };
		set_str(m->u.hello.credential, &m->u.hello.credential_len, "Zo\xc3\xab \xe2\x9a\xbd");
		break;
	case 2: {
		m->id = CC_MSG_HELLO;
		struct cc_wire_hello *h = &m->u.hello;
		*h = (struct cc_wire_hello){ .protocol_version = 65535, .tick_rate = 0, .auth = CC_WIRE_AUTH_TOKEN };
		memset(h->credential, 'x', CC_WIRE_TOKEN_MAX);
		h->credential_len = CC_WIRE_TOKEN_MAX;
		break;
	}
	case 3: {
		m->id = CC_MSG_WELCOME;
		struct cc_wire_welcome *w = &m->u.welcome;
		*w = (struct cc_wire_welcome){ .protocol_version = 1, .tick_rate = 60, .snapshot_rate = 20,
					       .mode = CC_WIRE_MODE_ALLOCATED, .slot = 4, .team = 1, .max_players = 6,
					       .max_inputs = 16, .match_state = 0, .server_tick = 123456 };
		for (int k = 0; k < CC_WIRE_RESUME_KEY_LEN; k++)
			w->resume_key[k] = (uint8_t)(0xF0 + k);
		set_str(w->arena, &w->arena_len, "aurora_ring");
		break;
	}
	case 4: {
		m->id = CC_MSG_WELCOME;
		struct cc_wire_welcome *w = &m->u.welcome;
		*w = (struct cc_wire_welcome){ .protocol_version = 1, .tick_rate = 60, .snapshot_rate = 60,
					       .mode = CC_WIRE_MODE_COMMUNITY, .slot = CC_WIRE_SLOT_NONE,
					       .team = CC_WIRE_TEAM_NONE, .max_players = 16, .max_inputs = 1,
					       .match_state = 7, .server_tick = UINT32_MAX };
		set_str(w->arena, &w->arena_len, "abcdefghijklmnopqrstuvwxyz_01234");
		break;
	}
	case 5:
		m->id = CC_MSG_REFUSED;
		m->u.refused = (struct cc_wire_refused){ .reason = CC_REASON_PROTOCOL_MISMATCH, .protocol_version = 1 };
		set_str(m->u.refused.detail, &m->u.refused.detail_len, "client speaks 2, server speaks 1");
		break;
	case 6:
		m->id = CC_MSG_REFUSED;
		m->u.refused = (struct cc_wire_refused){ .reason = 65535, .protocol_version = 9 };
		break;
	case 7:
		m->id = CC_MSG_KICKED;
		m->u.kicked = (struct cc_wire_kicked){ .reason = CC_REASON_RATE_LIMITED };
		set_str(m->u.kicked.detail, &m->u.kicked.detail_len, "over 200 packets/s");
		break;
	case 8:
		m->id = CC_MSG_PING;
		m->u.ping.client_time = 0xDEADBEEFu;
		break;
	case 9:
		m->id = CC_MSG_PONG;
		m->u.pong = (struct cc_wire_pong){ .client_time = 7, .server_tick = 99999, .tick_fraction = 32768 };
		break;
	case 10:
		m->id = CC_MSG_PLAYER_INFO;
		m->u.player_info = (struct cc_wire_player_info){ .slot = 15, .team = 1, .flags = CC_WIRE_PI_BOT };
		set_str(m->u.player_info.name, &m->u.player_info.name_len, "Bot Alpha");
		break;
	case 11:
		m->id = CC_MSG_PLAYER_INFO;
		m->u.player_info = (struct cc_wire_player_info){ .slot = 0, .team = 0, .flags = 0 };
		break;
	case 12: {
		m->id = CC_MSG_INPUT;
		struct cc_wire_input_msg *in = &m->u.input;
		in->newest_seq = 2;
		in->last_snapshot_tick = 4000;
		in->count = CC_WIRE_MAX_INPUTS;
		for (int k = 0; k < CC_WIRE_MAX_INPUTS; k++)
			in->inputs[k] = (struct cc_wire_input){ { (int8_t)(k * 8 - 64), -127, 127 },
								 { 0, (int8_t)-k, (int8_t)k },
								 (uint8_t)(k & CC_WIRE_BTN_BOOST) };
		break;
	}
	case 13:
		m->id = CC_MSG_INPUT;
		m->u.input.newest_seq = 65535;
		m->u.input.count = 1;
		break;
	case 14: {
		m->id = CC_MSG_SNAPSHOT;
		struct cc_wire_snapshot *s = &m->u.snapshot;
		s->tick = 777;
		s->match_state = 2;
		s->score[0] = 3;
		s->score[1] = 255;
		s->clock_ticks = 18000;
		s->ball = sample_body(0);
		s->player_count = 6;
		for (int k = 0; k < 6; k++)
			s->players[k] = (struct cc_wire_player_state){ (uint8_t)(5 - k), (uint8_t)(k == 2 ? 0xFF : k),
								       (uint16_t)(65530 + k), (uint8_t)(40 * k),
								       sample_body(k + 1) };
		break;
	}
	case 15: {
		m->id = CC_MSG_SNAPSHOT;
		struct cc_wire_snapshot *s = &m->u.snapshot;
		s->player_count = CC_WIRE_MAX_PLAYERS;
		for (int k = 0; k < CC_WIRE_MAX_PLAYERS; k++) {
			s->players[k].slot = (uint8_t)k;
			s->players[k].body = sample_body(k);
		}
		break;
	}
	case 16:
		m->id = CC_MSG_MATCH_STATE;
		m->u.match_state = (struct cc_wire_match_state){ 500, 3, { 1, 0 }, 17999 };
		break;
	case 17:
		m->id = CC_MSG_GOAL;
		m->u.goal = (struct cc_wire_goal){ 501, 1, CC_WIRE_SLOT_NONE, { 0, 1 } };
		break;
	case 18: {
		m->id = CC_MSG_KICKOFF;
		struct cc_wire_kickoff *k = &m->u.kickoff;
		k->tick = 700;
		k->ball = sample_body(9);
		k->ship_count = 2;
		k->ships[0] = (struct cc_wire_kickoff_ship){ 1, sample_body(1) };
		k->ships[1] = (struct cc_wire_kickoff_ship){ 0, sample_body(2) };
		break;
	}
	case 19:
		m->id = CC_MSG_SPECTATE;
		m->u.spectate = (struct cc_wire_hello){ .protocol_version = 1, .tick_rate = 60, .auth = CC_WIRE_AUTH_NAME };
		set_str(m->u.spectate.credential, &m->u.spectate.credential_len, "Watcher");
		break;
	case 20: {
		m->id = CC_MSG_RESUME;
		struct cc_wire_resume *r = &m->u.resume;
		r->protocol_version = 1;
		r->tick_rate = 60;
		for (int k = 0; k < CC_WIRE_RESUME_KEY_LEN; k++)
			r->resume_key[k] = (uint8_t)(k * 17);
		r->auth = CC_WIRE_AUTH_TOKEN;
		set_str(r->credential, &r->credential_len, "token.sig");
		break;
	}
	case 21:
		m->id = CC_MSG_SET_NAME;
		m->u.set_name.request = 1;
		set_str(m->u.set_name.name, &m->u.set_name.name_len, "Ren\xc3\xa9" "e");
		break;
	case 22:
		m->id = CC_MSG_LOBBY_LIST_REQUEST;
		m->u.lobby_list_request = (struct cc_wire_lobby_list_request){ 2, 24 };
		break;
	case 23:
		m->id = CC_MSG_LOBBY_CREATE;
		m->u.lobby_create.request = 3;
		m->u.lobby_create.max_players = 6;
		set_str(m->u.lobby_create.name, &m->u.lobby_create.name_len, "Friday 3v3");
		break;
	case 24:
		m->id = CC_MSG_LOBBY_JOIN;
		m->u.lobby_join = (struct cc_wire_lobby_join){ 4, 0xCAFEF00Du };
		break;
	case 25:
		m->id = CC_MSG_LOBBY_LEAVE;
		m->u.lobby_leave.request = 65535;
		break;
	case 26:
		m->id = CC_MSG_LOBBY_SET_READY;
		m->u.lobby_set_ready = (struct cc_wire_lobby_set_ready){ 6, 1 };
		break;
	case 27:
		m->id = CC_MSG_LOBBY_RESULT;
		m->u.lobby_result = (struct cc_wire_lobby_result_msg){ 3, CC_MSG_LOBBY_CREATE, CC_LOBBY_TOO_MANY, 0, 77 };
		break;
	case 28: {
		m->id = CC_MSG_LOBBY_LIST;
		struct cc_wire_lobby_list *l = &m->u.lobby_list;
		l->request = 2;
		l->total = 100;
		l->first = 24;
		l->count = CC_WIRE_LOBBY_LIST_MAX;
		for (int k = 0; k < CC_WIRE_LOBBY_LIST_MAX; k++) {
			struct cc_wire_lobby_summary *e = &l->lobbies[k];
			e->lobby_id = (uint32_t)(1000 + k);
			e->state = (uint8_t)(k % 3);
			e->max_players = 16;
			e->members = (uint8_t)(k % 17);
			memset(e->name, 'a' + k % 26, CC_WIRE_LOBBY_NAME_MAX);
			e->name_len = CC_WIRE_LOBBY_NAME_MAX;
		}
		break;
	}
	case 29: {
		m->id = CC_MSG_LOBBY_UPDATED;
		struct cc_wire_lobby_updated *u = &m->u.lobby_updated;
		u->revision = 9;
		u->lobby_id = 1001;
		u->state = CC_LOBBY_STARTING;
		u->max_players = 16;
		set_str(u->name, &u->name_len, "Friday 3v3");
		u->member_count = CC_WIRE_LOBBY_MEMBERS_MAX;
		for (int k = 0; k < CC_WIRE_LOBBY_MEMBERS_MAX; k++) {
			u->members[k].member_id = (uint32_t)(k + 1);
			u->members[k].ready = 1;
			memset(u->members[k].name, 'A' + k, CC_WIRE_NAME_MAX);
			u->members[k].name_len = CC_WIRE_NAME_MAX;
		}
		break;
	}
	case 30:
		m->id = CC_MSG_LOBBY_DELETED;
		m->u.lobby_deleted = (struct cc_wire_lobby_deleted){ 10, 1001 };
		break;
	case 31:
		m->id = CC_MSG_MATCH_STARTING;
		m->u.match_starting = (struct cc_wire_match_starting){ 11, 1002, 123456, 5000 };
		break;
	case 32:
		m->id = CC_MSG_LOBBY_UPDATED;
		m->u.lobby_updated = (struct cc_wire_lobby_updated){ .revision = 12, .lobby_id = 5, .max_players = 2 };
		set_str(m->u.lobby_updated.name, &m->u.lobby_updated.name_len, "x");
		break;
	case 33: {
		/* A real delta: sample 14 four ticks later, the ball moved and one player's boost drained. */
		struct cc_wire_msg base, cur;
		sample(14, &base);
		cur = base;
		cur.u.snapshot.tick += 4;
		cur.u.snapshot.clock_ticks -= 4;
		cur.u.snapshot.ball.pos[0] += 3;
		cur.u.snapshot.players[1].boost = 7;
		m->id = CC_MSG_SNAPSHOT_DELTA;
		if (cc_wire_delta_encode(&base.u.snapshot, &cur.u.snapshot, &m->u.snapshot_delta) != 0)
			m->id = 0; /* fails every test that uses it */
		break;
	}
	case 34: {
		/* Framing only: the longest delta, any bytes. */
		m->id = CC_MSG_SNAPSHOT_DELTA;
		struct cc_wire_snapshot_delta *d = &m->u.snapshot_delta;
		d->tick = UINT32_MAX;
		d->base_age = 255;
		d->delta_len = CC_WIRE_DELTA_MAX;
		for (int k = 0; k < CC_WIRE_DELTA_MAX; k++)
			d->delta[k] = (uint8_t)(k * 7);
		break;
	}
	case 35:
		m->id = CC_MSG_SNAPSHOT_ACK;
		m->u.snapshot_ack.tick = 0x01020304;
		break;
	}
}

/* match_end is sample SAMPLE_COUNT (kept apart so the loop bound is one constant). */
static void sample_any(int i, struct cc_wire_msg *m)
{
	if (i < SAMPLE_COUNT) {
		sample(i, m);
		return;
	}
	memset(m, 0, sizeof(*m));
	m->id = CC_MSG_MATCH_END;
	m->u.match_end = (struct cc_wire_match_end){ 9000, { 2, 2 }, CC_WIRE_TEAM_NONE, 3 };
}
#define SAMPLES (SAMPLE_COUNT + 1)

static size_t encode_sample(int i, uint8_t *buf, struct cc_wire_msg *m)
{
	size_t len = 0;
	sample_any(i, m);
	int rc = cc_wire_encode(m, buf, CC_WIRE_MAX_PACKET, &len);
	ck_assert_msg(rc == 0, "sample %d (%s): encode: %s", i, cc_wire_msg_name(m->id), cc_strerror(rc));
	return len;
}

/* Every id in the table has a sample: adding a message without one fails here. */
START_TEST(every_message_has_a_sample)
{
	size_t n;
	const struct cc_wire_msg_info *t = cc_wire_messages(&n);
	for (size_t k = 0; k < n; k++) {
		bool found = false;
		for (int i = 0; i < SAMPLES && !found; i++) {
			struct cc_wire_msg m;
			sample_any(i, &m);
			found = m.id == t[k].id;
		}
		ck_assert_msg(found, "no sample of %s (0x%04x)", t[k].name, t[k].id);
	}
}
END_TEST

START_TEST(round_trip)
{
	uint8_t buf[CC_WIRE_MAX_PACKET], again[CC_WIRE_MAX_PACKET];
	struct cc_wire_msg m, got;
	struct cc_wire_fault f;
	size_t len = encode_sample(_i, buf, &m);
	memset(&got, 0xA5, sizeof(got));
	int rc = cc_wire_decode(buf, len, &got, &f);
	ck_assert_msg(rc == 0, "sample %d: decode: %s", _i, f.text);
	ck_assert_int_eq(f.kind, CC_WIRE_FAULT_NONE);
	ck_assert_uint_eq(got.id, m.id);
	/* The encoding is injective on field values, so equal bytes prove every field decoded as sent. */
	size_t len2 = 0;
	ck_assert_int_eq(cc_wire_encode(&got, again, sizeof(again), &len2), 0);
	ck_assert_uint_eq(len, len2);
	ck_assert(memcmp(buf, again, len) == 0);
	/* The sizes the table states bound every sample. */
	size_t lo, hi;
	cc_wire_msg_sizes(cc_wire_msg_info(m.id), &lo, &hi);
	ck_assert_msg(len >= lo && len <= hi && hi <= CC_WIRE_MAX_PACKET, "sample %d: %zu bytes outside %zu..%zu", _i,
		      len, lo, hi);
	/* A message on its own channel and direction passes decode_from; the other ones do not. */
	const struct cc_wire_msg_info *info = cc_wire_msg_info(m.id);
	ck_assert_int_eq(cc_wire_decode_from(buf, len, info->direction, (uint8_t)info->channel, &got, &f), 0);
	enum cc_wire_direction other = info->direction == CC_WIRE_TO_SERVER ? CC_WIRE_TO_CLIENT : CC_WIRE_TO_SERVER;
	ck_assert_int_eq(cc_wire_decode_from(buf, len, other, (uint8_t)info->channel, &got, &f), CC_EINVAL);
	ck_assert_int_eq(f.kind, CC_WIRE_FAULT_MALFORMED);
	ck_assert_msg(strstr(f.text, "wrong way"), "%s", f.text);
	ck_assert_int_eq(cc_wire_decode_from(buf, len, info->direction, (uint8_t)((info->channel + 1) % 3), &got, &f),
			 CC_EINVAL);
	ck_assert_msg(strstr(f.text, "wrong channel"), "%s", f.text);
}
END_TEST

/* Every strict prefix of every sample is truncated, and *out stays untouched. */
START_TEST(every_prefix_truncated)
{
	uint8_t buf[CC_WIRE_MAX_PACKET];
	struct cc_wire_msg m, got, untouched;
	size_t len = encode_sample(_i, buf, &m);
	memset(&untouched, 0x5A, sizeof(untouched));
	for (size_t cut = 0; cut < len; cut++) {
		struct cc_wire_fault f;
		memcpy(&got, &untouched, sizeof(got));
		/* A copy of exactly cut bytes on the heap, so ASan sees a read past it. */
		uint8_t *prefix = malloc(cut ? cut : 1);
		ck_assert_ptr_nonnull(prefix);
		memcpy(prefix, buf, cut);
		int rc = cc_wire_decode(cut ? prefix : NULL, cut, &got, &f);
		free(prefix);
		ck_assert_msg(rc == CC_EINVAL && f.kind == CC_WIRE_FAULT_TRUNCATED,
			      "sample %d (%s) cut to %zu of %zu bytes: rc %d, fault %s (%s)", _i, cc_wire_msg_name(m.id),
			      cut, len, rc, cc_wire_fault_name(f.kind), f.text);
		ck_assert(memcmp(&got, &untouched, sizeof(got)) == 0);
		ck_assert_msg(f.offset <= cut, "fault offset %zu past the %zu bytes", f.offset, cut);
	}
}
END_TEST

/* One byte more than the message is oversized, as is a packet over the global cap. */
START_TEST(trailing_bytes_oversized)
{
	uint8_t buf[CC_WIRE_MAX_PACKET + 8];
	struct cc_wire_msg m, got;
	struct cc_wire_fault f;
	size_t len = encode_sample(_i, buf, &m);
	buf[len] = 0;
	ck_assert_int_eq(cc_wire_decode(buf, len + 1, &got, &f), CC_EINVAL);
	ck_assert_msg(f.kind == CC_WIRE_FAULT_OVERSIZED, "sample %d: %s", _i, f.text);
	ck_assert_msg(strstr(f.text, "1 extra"), "%s", f.text);
	memset(buf + len, 0, sizeof(buf) - len);
	ck_assert_int_eq(cc_wire_decode(buf, CC_WIRE_MAX_PACKET + 1, &got, &f), CC_EINVAL);
	ck_assert_int_eq(f.kind, CC_WIRE_FAULT_OVERSIZED);
}
END_TEST

/* The encoder never writes past cap: each smaller buffer is CC_ETOOBIG, and the byte after it survives. */
START_TEST(encode_small_buffers)
{
	uint8_t full[CC_WIRE_MAX_PACKET];
	struct cc_wire_msg m;
	size_t len = encode_sample(_i, full, &m);
	for (size_t cap = 0; cap < len; cap++) {
		uint8_t *buf = malloc(cap + 1);
		ck_assert_ptr_nonnull(buf);
		buf[cap] = 0xEE;
		size_t got = 12345;
		ck_assert_int_eq(cc_wire_encode(&m, buf, cap, &got), CC_ETOOBIG);
		ck_assert_uint_eq(buf[cap], 0xEE);
		ck_assert_uint_eq(got, 12345);
		free(buf);
	}
}
END_TEST

/* ---- golden packets: byte order and layout, as the protocol document shows them ---- */

static void hex(const char *h, uint8_t *out, size_t *len)
{
	size_t n = 0;
	for (const char *p = h; *p;) {
		if (*p == ' ') {
			p++;
			continue;
		}
		unsigned v;
		ck_assert_int_eq(sscanf(p, "%2x", &v), 1);
		out[n++] = (uint8_t)v;
		p += 2;
	}
	*len = n;
}

START_TEST(golden_hello)
{
	struct cc_wire_msg m;
	memset(&m, 0, sizeof(m));
	m.id = CC_MSG_HELLO;
	m.u.hello = (struct cc_wire_hello){ .protocol_version = 1, .tick_rate = 60, .auth = CC_WIRE_AUTH_NAME };
	set_str(m.u.hello.credential, &m.u.hello.credential_len, "Ann");
	uint8_t buf[64], want[64];
	size_t len, wlen;
	ck_assert_int_eq(cc_wire_encode(&m, buf, sizeof(buf), &len), 0);
	hex("0100 0100 3c00 02 0300 416e6e", want, &wlen);
	ck_assert_uint_eq(len, wlen);
	ck_assert(memcmp(buf, want, len) == 0);
	uint16_t v = 0;
	ck_assert(cc_wire_peek_hello_version(buf, len, &v));
	ck_assert_uint_eq(v, 1);
	ck_assert(!cc_wire_peek_hello_version(buf, 3, &v));
	buf[0] = 2;
	ck_assert(!cc_wire_peek_hello_version(buf, len, &v));
}
END_TEST

START_TEST(golden_input)
{
	struct cc_wire_msg m;
	memset(&m, 0, sizeof(m));
	m.id = CC_MSG_INPUT;
	m.u.input.newest_seq = 0x1234;
	m.u.input.last_snapshot_tick = 0x01020304;
	m.u.input.count = 2;
	m.u.input.inputs[0] = (struct cc_wire_input){ { 1, -1, 127 }, { -127, 0, 2 }, 1 };
	m.u.input.inputs[1] = (struct cc_wire_input){ { 0, 0, 0 }, { 0, 0, 0 }, 0 };
	uint8_t buf[64], want[64];
	size_t len, wlen;
	ck_assert_int_eq(cc_wire_encode(&m, buf, sizeof(buf), &len), 0);
	hex("0001 3412 04030201 02 01ff7f 810002 01 000000 000000 00", want, &wlen);
	ck_assert_uint_eq(len, wlen);
	ck_assert(memcmp(buf, want, len) == 0);
}
END_TEST

START_TEST(golden_snapshot)
{
	struct cc_wire_msg m;
	memset(&m, 0, sizeof(m));
	m.id = CC_MSG_SNAPSHOT;
	struct cc_wire_snapshot *s = &m.u.snapshot;
	s->tick = 0x00010203;
	s->match_state = 2;
	s->score[0] = 1;
	s->score[1] = 2;
	s->clock_ticks = 18000;
	s->ball = (struct cc_wire_body){ .pos = { 0, 9216, -1 }, .rot = 0, .vel = { 256, 0, -256 }, .angvel = 0x10 };
	s->player_count = 1;
	s->players[0] = (struct cc_wire_player_state){ 3, CC_WIRE_PF_CONNECTED | CC_WIRE_PF_HAS_INPUT, 0xFFFE, 255,
						       { .pos = { 1, 2, 3 }, .rot = 0xC0000000u, .vel = { 4, 5, 6 },
							 .angvel = 0x3FF00000u } };
	uint8_t buf[128], want[128];
	size_t len, wlen;
	ck_assert_int_eq(cc_wire_encode(&m, buf, sizeof(buf), &len), 0);
	hex("0101 03020100 02 01 02 50460000"
	    " 0000 0024 ffff 00000000 0001 0000 00ff 10000000"
	    " 01 03 14 feff ff 0100 0200 0300 000000c0 0400 0500 0600 0000f03f",
	    want, &wlen);
	ck_assert_uint_eq(len, wlen);
	ck_assert(memcmp(buf, want, len) == 0);
	/* The ball: y = 9216 / 1024 = 9 m, vx = 1 m/s; angvel x = 16 / 16 = 1 rad/s; rot 0 = identity (w first). */
	struct cc_wire_pose p;
	cc_wire_dequantise(&s->ball, &p);
	ck_assert(p.pos[1] == 9.0f && p.vel[0] == 1.0f && p.vel[2] == -1.0f && p.angvel[0] == 1.0f);
	ck_assert(p.rot[0] == 1.0f && p.rot[1] == 0.0f && p.rot[2] == 0.0f && p.rot[3] == 0.0f);
	/* The ship's angvel z is -1 (0x3FF): -1/16 rad/s; its rot index 3 (z) with all others 0. */
	cc_wire_dequantise(&s->players[0].body, &p);
	ck_assert(p.angvel[2] == -0.0625f && p.angvel[0] == 0.0f);
	ck_assert(p.rot[3] == 1.0f && p.rot[0] == 0.0f);
}
END_TEST

/* The longest join token the tokens module can sign travels in a hello and comes back intact. */
START_TEST(real_join_token_in_hello)
{
	static const char set[] = "{\"kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk\":"
				  "\"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\"}";
	struct cc_keyset *keys = NULL;
	char err[256];
	ck_assert_int_eq(cc_keyset_parse("test", set, strlen(set), &keys, err, sizeof(err)), 0);
	struct cc_join_claims c = { .slot = 15, .generation = INT32_MAX, .expires_at = INT64_MAX / 2 };
	memset(c.key_id, 'k', 64);
	memcpy(c.match_id, "3f2b8c1e-9d4a-4b6e-8f00-123456789abc", 37);
	memset(c.server_id, 's', 128);
	memcpy(c.player_id, "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee", 37);
	struct cc_wire_msg m, got;
	memset(&m, 0, sizeof(m));
	m.id = CC_MSG_HELLO;
	m.u.hello.protocol_version = CC_WIRE_PROTOCOL_VERSION;
	m.u.hello.tick_rate = CC_WIRE_TICK_RATE;
	m.u.hello.auth = CC_WIRE_AUTH_TOKEN;
	ck_assert_int_eq(cc_join_token_sign(keys, &c, m.u.hello.credential, sizeof(m.u.hello.credential)), 0);
	m.u.hello.credential_len = (uint16_t)strlen(m.u.hello.credential);
	uint8_t buf[CC_WIRE_MAX_PACKET];
	size_t len;
	struct cc_wire_fault f;
	ck_assert_int_eq(cc_wire_encode(&m, buf, sizeof(buf), &len), 0);
	ck_assert_int_eq(cc_wire_decode(buf, len, &got, &f), 0);
	ck_assert_str_eq(got.u.hello.credential, m.u.hello.credential);
	struct cc_join_claims back;
	enum cc_token_refusal why;
	ck_assert_int_eq(cc_join_token_verify(keys, got.u.hello.credential, 0, &back, &why), 0);
	ck_assert_int_eq(back.slot, 15);
	cc_keyset_free(keys);
}
END_TEST

/* ---- refusals with the field named ----------------------------------------------- */

struct bad_case {
	const char *what;
	const char *packet; /* hex */
	int rc;
	enum cc_wire_fault_kind kind;
	const char *text; /* substring of the fault text */
};

static const struct bad_case bad_cases[] = {
	{ "snapshot_delta base_age 0", "0201 04000000 00 0100 00", CC_EINVAL, CC_WIRE_FAULT_MALFORMED,
	  "snapshot_delta: malformed at byte 6 (base_age): below its minimum" },
	{ "snapshot_delta empty delta", "0201 04000000 01 0000", CC_EINVAL, CC_WIRE_FAULT_MALFORMED,
	  "(delta): shorter than its minimum" },
	{ "snapshot_delta delta over cap", "0201 04000000 01 0104 00", CC_EINVAL, CC_WIRE_FAULT_OVERSIZED,
	  "(delta): length over its cap, 1025 bytes, cap 1024" },
	{ "snapshot_delta delta cut short", "0201 04000000 01 0300 0000", CC_EINVAL, CC_WIRE_FAULT_TRUNCATED,
	  "(delta): the packet ends inside the field" },
	{ "snapshot_ack cut short", "0202 040000", CC_EINVAL, CC_WIRE_FAULT_TRUNCATED, "snapshot_ack: truncated" },
	{ "empty packet", "", CC_EINVAL, CC_WIRE_FAULT_TRUNCATED, "no message id" },
	{ "one byte", "01", CC_EINVAL, CC_WIRE_FAULT_TRUNCATED, "an id needs 2" },
	{ "id 0", "0000", CC_ENOTFOUND, CC_WIRE_FAULT_UNKNOWN, "id 0x0000" },
	{ "unassigned in the issue 12 range", "ff02 0100", CC_ENOTFOUND, CC_WIRE_FAULT_UNKNOWN, "id 0x02ff" },
	{ "unassigned in the lobby range", "0603", CC_ENOTFOUND, CC_WIRE_FAULT_UNKNOWN, "id 0x0306 (2 bytes), skipped" },
	{ "unassigned range", "0004", CC_ENOTFOUND, CC_WIRE_FAULT_UNKNOWN, "id 0x0400" },
	{ "experimental id", "ffff 00", CC_ENOTFOUND, CC_WIRE_FAULT_UNKNOWN, "id 0xffff" },
	{ "hello auth 0", "0100 0100 3c00 00 0100 41", CC_EINVAL, CC_WIRE_FAULT_MALFORMED,
	  "hello: malformed at byte 6 (auth): below its minimum, value 0" },
	{ "hello auth 3", "0100 0100 3c00 03 0100 41", CC_EINVAL, CC_WIRE_FAULT_MALFORMED, "(auth): above its maximum" },
	{ "hello empty credential", "0100 0100 3c00 01 0000", CC_EINVAL, CC_WIRE_FAULT_MALFORMED,
	  "(credential): shorter than its minimum" },
	{ "hello token over cap", "0100 0100 3c00 01 0102 41", CC_EINVAL, CC_WIRE_FAULT_OVERSIZED,
	  "(credential): length over its cap, 513 bytes, cap 512" },
	{ "hello token with a space", "0100 0100 3c00 01 0300 412042", CC_EINVAL, CC_WIRE_FAULT_MALFORMED,
	  "(credential): a token is printable ASCII" },
	{ "hello name of 33 bytes", "0100 0100 3c00 02 2100 414141414141414141414141414141414141414141414141414141414141414141",
	  CC_EINVAL, CC_WIRE_FAULT_MALFORMED, "a name is at most 32 bytes" },
	{ "hello name with a newline", "0100 0100 3c00 02 0300 410a42", CC_EINVAL, CC_WIRE_FAULT_MALFORMED,
	  "without control characters" },
	{ "hello name with C1 control", "0100 0100 3c00 02 0200 c285", CC_EINVAL, CC_WIRE_FAULT_MALFORMED,
	  "without control characters" },
	{ "hello name with bad UTF-8", "0100 0100 3c00 02 0200 c0af", CC_EINVAL, CC_WIRE_FAULT_MALFORMED,
	  "well-formed UTF-8" },
	{ "hello name with NUL", "0100 0100 3c00 02 0200 4100", CC_EINVAL, CC_WIRE_FAULT_MALFORMED, "(credential): holds a NUL byte" },
	{ "input count 0", "0001 0100 00000000 00", CC_EINVAL, CC_WIRE_FAULT_MALFORMED,
	  "(inputs): count below its minimum" },
	{ "input count 17", "0001 0100 00000000 11", CC_EINVAL, CC_WIRE_FAULT_OVERSIZED, "(inputs): count over its cap, 17, cap 16" },
	{ "input count 255", "0001 0100 00000000 ff", CC_EINVAL, CC_WIRE_FAULT_OVERSIZED, "count over its cap" },
	{ "input axis -128", "0001 0100 00000000 02 000000000000 00 00800000000000", CC_EINVAL, CC_WIRE_FAULT_MALFORMED,
	  "input: malformed at byte 17 (inputs[1].thrust_y): below its minimum, value -128" },
	{ "input reserved button", "0001 0100 00000000 01 000000000000 02", CC_EINVAL, CC_WIRE_FAULT_MALFORMED,
	  "(inputs[0].buttons): reserved bits set" },
	{ "input short of its second input", "0001 0100 00000000 02 000000000000 00 0000", CC_EINVAL,
	  CC_WIRE_FAULT_TRUNCATED, "(inputs[1].thrust_z): the packet ends inside the field" },
	{ "ping with a byte too many", "0500 01020304 05", CC_EINVAL, CC_WIRE_FAULT_OVERSIZED,
	  "ping: oversized at byte 6: bytes after the end of the message, 1 extra" },
	{ "welcome slot above max_players",
	  "0200 0100 3c00 1400 01 06 00 06 10 00 00000000 00000000000000000000000000000000 01 61", CC_EINVAL,
	  CC_WIRE_FAULT_MALFORMED, "(slot): not below max_players" },
	{ "welcome snapshot_rate above tick_rate",
	  "0200 0100 3c00 3d00 01 00 00 06 10 00 00000000 00000000000000000000000000000000 01 61", CC_EINVAL,
	  CC_WIRE_FAULT_MALFORMED, "(snapshot_rate): above tick_rate" },
	{ "welcome arena upper case",
	  "0200 0100 3c00 1400 01 00 00 06 10 00 00000000 00000000000000000000000000000000 01 41", CC_EINVAL,
	  CC_WIRE_FAULT_MALFORMED, "(arena): holds a byte outside a-z, 0-9 and _" },
	{ "refused reason 0", "0300 0000 0100 00", CC_EINVAL, CC_WIRE_FAULT_MALFORMED, "(reason): below its minimum" },
	{ "kicked detail with a tab", "0400 0800 01 09", CC_EINVAL, CC_WIRE_FAULT_MALFORMED, "(detail): not printable ASCII" },
	{ "player_info slot 16", "0700 10 00 00 00", CC_EINVAL, CC_WIRE_FAULT_MALFORMED, "(slot): above its maximum, value 16" },
	{ "snapshot player count 17",
	  "0101 00000000 02 00 00 00000000 0000 0000 0000 00000000 0000 0000 0000 00000000 11", CC_EINVAL,
	  CC_WIRE_FAULT_OVERSIZED, "(players): count over its cap" },
	{ "snapshot ball angvel reserved bits",
	  "0101 00000000 02 00 00 00000000 0000 0000 0000 00000000 0000 0000 0000 00000040 00", CC_EINVAL,
	  CC_WIRE_FAULT_MALFORMED, "(ball.angvel): reserved bits set" },
	{ "snapshot duplicate slot",
	  "0101 00000000 02 00 00 00000000 0000 0000 0000 00000000 0000 0000 0000 00000000 02"
	  " 05 00 0000 00 0000 0000 0000 00000000 0000 0000 0000 00000000"
	  " 05 00 0000 00 0000 0000 0000 00000000 0000 0000 0000 00000000",
	  CC_EINVAL, CC_WIRE_FAULT_MALFORMED, "(players.slot): a slot appears twice" },
	{ "snapshot player truncated in its body",
	  "0101 00000000 02 00 00 00000000 0000 0000 0000 00000000 0000 0000 0000 00000000 02"
	  " 05 00 0000 00 0000 0000 0000 00000000 0000 0000 0000 00000000"
	  " 06 00 0000 00 0000 0000 0000 0000",
	  CC_EINVAL, CC_WIRE_FAULT_TRUNCATED, "snapshot: truncated at byte 70 (players[1].body.rot): the packet ends "
					      "inside the field, needs 4 bytes, 2 left" },
	{ "goal team 2", "1101 00000000 02 ff 00 00", CC_EINVAL, CC_WIRE_FAULT_MALFORMED, "(team): above its maximum" },
	{ "goal scorer 16", "1101 00000000 01 10 00 00", CC_EINVAL, CC_WIRE_FAULT_MALFORMED, "(scorer): neither a slot" },
	{ "match_end winner 2", "1301 00000000 00 00 02 00", CC_EINVAL, CC_WIRE_FAULT_MALFORMED, "(winner): neither 0, 1 nor 255" },
	{ "resume name with a tab", "0102 0100 3c00 00000000000000000000000000000000 02 0200 4109", CC_EINVAL,
	  CC_WIRE_FAULT_MALFORMED, "resume: malformed at byte 27 (credential): a name is well-formed UTF-8 without control" },
	{ "lobby_create max_players 1", "0203 0100 01 01 41", CC_EINVAL, CC_WIRE_FAULT_MALFORMED, "(max_players): below its minimum" },
	{ "lobby_create empty name", "0203 0100 06 00", CC_EINVAL, CC_WIRE_FAULT_MALFORMED, "(name): shorter than its minimum" },
	{ "lobby_set_ready 2", "0503 0100 02", CC_EINVAL, CC_WIRE_FAULT_MALFORMED, "(ready): above its maximum" },
	{ "lobby_result for a broadcast id", "8003 0100 8203 00 00000000 00000000", CC_EINVAL, CC_WIRE_FAULT_MALFORMED,
	  "(request_msg): above its maximum" },
	{ "lobby_list page over its cap", "8103 0000 0000 0000 19", CC_EINVAL, CC_WIRE_FAULT_OVERSIZED, "(lobbies): count over its cap, 25, cap 24" },
	{ "lobby_list more members than seats", "8103 0000 0100 0000 01 01000000 00 03 02 0141", CC_EINVAL,
	  CC_WIRE_FAULT_MALFORMED, "(lobbies[0].members): above max_players" },
	{ "lobby_updated duplicate member",
	  "8203 01000000 05000000 00 04 0141 02 07000000 01 0141 07000000 00 0142", CC_EINVAL, CC_WIRE_FAULT_MALFORMED,
	  "(members.member_id): a member appears twice" },
	{ "lobby_updated more members than seats",
	  "8203 01000000 05000000 00 02 0141 03 07000000 01 0141 08000000 00 0142 09000000 00 0143", CC_EINVAL,
	  CC_WIRE_FAULT_MALFORMED, "(members): more members than max_players" },
	{ "kickoff duplicate slot",
	  "1201 00000000 0000 0000 0000 00000000 0000 0000 0000 00000000 02"
	  " 01 0000 0000 0000 00000000 0000 0000 0000 00000000"
	  " 01 0000 0000 0000 00000000 0000 0000 0000 00000000",
	  CC_EINVAL, CC_WIRE_FAULT_MALFORMED, "(ships.slot): a slot appears twice" },
};

START_TEST(bad_packets)
{
	const struct bad_case *c = &bad_cases[_i];
	uint8_t buf[CC_WIRE_MAX_PACKET];
	size_t len;
	hex(c->packet, buf, &len);
	/* Exactly len bytes on the heap: a read past them is an ASan error. */
	uint8_t *pkt = malloc(len ? len : 1);
	ck_assert_ptr_nonnull(pkt);
	memcpy(pkt, buf, len);
	struct cc_wire_msg m, untouched;
	memset(&m, 0x77, sizeof(m));
	memcpy(&untouched, &m, sizeof(m));
	struct cc_wire_fault f;
	int rc = cc_wire_decode(len ? pkt : NULL, len, &m, &f);
	free(pkt);
	ck_assert_msg(rc == c->rc, "%s: rc %d, want %d (%s)", c->what, rc, c->rc, f.text);
	ck_assert_msg(f.kind == c->kind, "%s: fault %s, want %s (%s)", c->what, cc_wire_fault_name(f.kind),
		      cc_wire_fault_name(c->kind), f.text);
	ck_assert_msg(strstr(f.text, c->text), "%s: fault text \"%s\" lacks \"%s\"", c->what, f.text, c->text);
	ck_assert(memcmp(&m, &untouched, sizeof(m)) == 0);
	/* Fault text is printable ASCII: it goes into logs. */
	for (const char *p = f.text; *p; p++)
		ck_assert_msg(*p >= 0x20 && *p < 0x7F, "%s: byte 0x%02x in fault text", c->what, (unsigned char)*p);
}
END_TEST

/* A NULL fault is allowed everywhere. */
START_TEST(null_fault)
{
	struct cc_wire_msg m;
	uint8_t b[2] = { 0x01, 0x00 };
	ck_assert_int_eq(cc_wire_decode(b, 2, &m, NULL), CC_EINVAL);
	ck_assert_int_eq(cc_wire_decode(b, 1, &m, NULL), CC_EINVAL);
	b[1] = 0x7F;
	ck_assert_int_eq(cc_wire_decode(b, 2, &m, NULL), CC_ENOTFOUND);
}
END_TEST

/* ---- the encoder refuses what the decoder would refuse ------------------------------- */

struct enc_case {
	const char *what;
	int base; /* a sample */
	void (*spoil)(struct cc_wire_msg *m);
};

static void spoil_unknown_id(struct cc_wire_msg *m) { m->id = 0x02FF; }
static void spoil_count_over(struct cc_wire_msg *m) { m->u.input.count = CC_WIRE_MAX_INPUTS + 1; }
static void spoil_count_zero(struct cc_wire_msg *m) { m->u.input.count = 0; }
static void spoil_axis(struct cc_wire_msg *m) { m->u.input.inputs[3].turn[1] = -128; }
static void spoil_button(struct cc_wire_msg *m) { m->u.input.inputs[0].buttons = 0x80; }
static void spoil_token_len(struct cc_wire_msg *m) { m->u.hello.credential_len = CC_WIRE_TOKEN_MAX + 1; }
static void spoil_token_space(struct cc_wire_msg *m) { m->u.hello.credential[2] = ' '; }
static void spoil_name_control(struct cc_wire_msg *m) { m->u.hello.credential[0] = '\x1b'; }
static void spoil_players(struct cc_wire_msg *m) { m->u.snapshot.player_count = CC_WIRE_MAX_PLAYERS + 1; }
static void spoil_dup_slot(struct cc_wire_msg *m) { m->u.snapshot.players[1].slot = m->u.snapshot.players[0].slot; }
static void spoil_angvel(struct cc_wire_msg *m) { m->u.snapshot.ball.angvel |= 0x80000000u; }
static void spoil_arena(struct cc_wire_msg *m) { m->u.welcome.arena[0] = '-'; }
static void spoil_arena_empty(struct cc_wire_msg *m) { m->u.welcome.arena_len = 0; }
static void spoil_detail(struct cc_wire_msg *m) { m->u.refused.detail[0] = '\n'; }
static void spoil_reason(struct cc_wire_msg *m) { m->u.kicked.reason = 0; }
static void spoil_member_dup(struct cc_wire_msg *m) { m->u.lobby_updated.members[5].member_id = 1; }
static void spoil_lobby_name(struct cc_wire_msg *m) { m->u.lobby_create.name[0] = '\x7f'; }

static const struct enc_case enc_cases[] = {
	{ "unknown id", 0, spoil_unknown_id },
	{ "17 inputs", 12, spoil_count_over },
	{ "no input", 12, spoil_count_zero },
	{ "axis -128", 12, spoil_axis },
	{ "reserved button", 12, spoil_button },
	{ "token over cap", 0, spoil_token_len },
	{ "token with a space", 0, spoil_token_space },
	{ "name with ESC", 1, spoil_name_control },
	{ "17 players", 14, spoil_players },
	{ "duplicate slot", 14, spoil_dup_slot },
	{ "angvel reserved bit", 14, spoil_angvel },
	{ "arena with a hyphen", 3, spoil_arena },
	{ "empty arena", 3, spoil_arena_empty },
	{ "detail with a newline", 5, spoil_detail },
	{ "reason 0", 7, spoil_reason },
	{ "duplicate lobby member", 29, spoil_member_dup },
	{ "lobby name with DEL", 23, spoil_lobby_name },
};

START_TEST(encode_refuses)
{
	const struct enc_case *c = &enc_cases[_i];
	struct cc_wire_msg m;
	sample_any(c->base, &m);
	c->spoil(&m);
	uint8_t buf[CC_WIRE_MAX_PACKET];
	size_t len = 999;
	ck_assert_msg(cc_wire_encode(&m, buf, sizeof(buf), &len) == CC_EINVAL, "%s: encoded", c->what);
	ck_assert_uint_eq(len, 999);
}
END_TEST

/* ---- quantisation -------------------------------------------------------------------- */

/* A small deterministic generator (xorshift32), so a failure repeats. */
static uint32_t rng = 0x9E3779B9u;
static float uniform(float lo, float hi)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return lo + (hi - lo) * (float)((double)rng / 4294967296.0);
}

/* The rotation angle between two unit quaternions (w, x, y, z). */
static double quat_angle(const float a[4], const float b[4])
{
	double dot = 0;
	for (int i = 0; i < 4; i++)
		dot += (double)a[i] * b[i];
	dot = fabs(dot);
	if (dot > 1)
		dot = 1;
	return 2 * acos(dot);
}

START_TEST(quantise_bounds)
{
	double worst_pos = 0, worst_vel = 0, worst_ang = 0, worst_rot = 0;
	int rot_switches = 0;
	for (int n = 0; n < 200000; n++) {
		struct cc_wire_pose p, back;
		for (int i = 0; i < 3; i++) {
			p.pos[i] = uniform(-31.99f, 31.99f);
			p.vel[i] = uniform(-127.9f, 127.9f);
			p.angvel[i] = uniform(-31.9f, 31.9f);
		}
		double norm = 0;
		for (int i = 0; i < 4; i++) {
			p.rot[i] = uniform(-1, 1);
			norm += (double)p.rot[i] * p.rot[i];
		}
		if (norm < 1e-6)
			continue;
		for (int i = 0; i < 4; i++)
			p.rot[i] = (float)(p.rot[i] / sqrt(norm));
		struct cc_wire_body b, b2;
		cc_wire_quantise(&p, &b);
		cc_wire_dequantise(&b, &back);
		for (int i = 0; i < 3; i++) {
			worst_pos = fmax(worst_pos, fabs((double)p.pos[i] - back.pos[i]));
			worst_vel = fmax(worst_vel, fabs((double)p.vel[i] - back.vel[i]));
			worst_ang = fmax(worst_ang, fabs((double)p.angvel[i] - back.angvel[i]));
		}
		worst_rot = fmax(worst_rot, quat_angle(p.rot, back.rot));
		double unit = 0;
		for (int i = 0; i < 4; i++)
			unit += (double)back.rot[i] * back.rot[i];
		ck_assert_msg(fabs(unit - 1) < 1e-6, "dequantised quaternion has norm^2 %g", unit);
		/*
		 * Quantising what was dequantised gives the same integers, so a
		 * relay (a spectator proxy, a replay) loses nothing more; only the
		 * quaternion may switch its omitted component when two are nearly
		 * equal, and then stays within the bound.
		 */
		cc_wire_quantise(&back, &b2);
		ck_assert(memcmp(b.pos, b2.pos, sizeof(b.pos)) == 0 && memcmp(b.vel, b2.vel, sizeof(b.vel)) == 0);
		ck_assert_uint_eq(b.angvel, b2.angvel);
		if (b.rot != b2.rot) {
			struct cc_wire_pose again;
			cc_wire_dequantise(&b2, &again);
			ck_assert_msg(quat_angle(back.rot, again.rot) <= CC_WIRE_ROT_ERROR_BOUND,
				      "requantised rot %08x vs %08x", b.rot, b2.rot);
			rot_switches++;
		}
	}
	/* The documented bounds (wire.h), with float rounding slack of one part in 1e6. */
	ck_assert_msg(worst_pos <= CC_WIRE_POS_STEP / 2 + 1e-5, "position error %g", worst_pos);
	ck_assert_msg(worst_vel <= CC_WIRE_VEL_STEP / 2 + 1e-4, "velocity error %g", worst_vel);
	ck_assert_msg(worst_ang <= CC_WIRE_ANGVEL_STEP / 2 + 1e-5, "angular velocity error %g", worst_ang);
	ck_assert_msg(worst_rot <= CC_WIRE_ROT_ERROR_BOUND, "rotation error %g rad", worst_rot);
	fprintf(stderr,
		"quantise: worst errors pos %.6f m, vel %.6f m/s, angvel %.6f rad/s, rot %.6f rad; %d of 200000 "
		"requantised quaternions switched component\n",
		worst_pos, worst_vel, worst_ang, worst_rot, rot_switches);
}
END_TEST

START_TEST(quantise_edges)
{
	struct cc_wire_pose p = { .pos = { 100.0f, -100.0f, NAN },
				  .rot = { 0, 0, 0, 0 },
				  .vel = { INFINITY, -INFINITY, 0.0f },
				  .angvel = { 1000.0f, -1000.0f, NAN } };
	struct cc_wire_body b;
	cc_wire_quantise(&p, &b);
	ck_assert_int_eq(b.pos[0], INT16_MAX);
	ck_assert_int_eq(b.pos[1], -INT16_MAX);
	ck_assert_int_eq(b.pos[2], 0);
	ck_assert_int_eq(b.vel[0], INT16_MAX);
	ck_assert_int_eq(b.vel[1], -INT16_MAX);
	ck_assert_uint_eq(b.rot, 0); /* the identity: index 0 (w), the rest zero */
	ck_assert_uint_eq(b.angvel & 0xC0000000u, 0);
	struct cc_wire_pose back;
	cc_wire_dequantise(&b, &back);
	ck_assert(back.angvel[0] == 511.0f / 16 && back.angvel[1] == -511.0f / 16 && back.angvel[2] == 0.0f);
	/* q and -q are one rotation and pack the same. */
	float q[4] = { -0.5f, 0.5f, -0.5f, 0.5f }, nq[4] = { 0.5f, -0.5f, 0.5f, -0.5f };
	ck_assert_uint_eq(cc_wire_quat_pack(q), cc_wire_quat_pack(nq));
	/* A non-unit quaternion is normalised first. */
	float big[4] = { 0, 0, 3, 0 }, unit[4] = { 0, 0, 1, 0 };
	ck_assert_uint_eq(cc_wire_quat_pack(big), cc_wire_quat_pack(unit));
	/* Exact values survive exactly: 1/1024 m, 1/256 m/s, 1/16 rad/s. */
	struct cc_wire_pose e = { .pos = { 1.0f / 1024, -31.0f, 9.0f }, .rot = { 1, 0, 0, 0 },
				  .vel = { 1.0f / 256, 35.0f, -50.0f }, .angvel = { 0.0625f, -5.5f, 0 } };
	cc_wire_quantise(&e, &b);
	cc_wire_dequantise(&b, &back);
	for (int i = 0; i < 3; i++) {
		ck_assert(back.pos[i] == e.pos[i]);
		ck_assert(back.vel[i] == e.vel[i]);
		ck_assert(back.angvel[i] == e.angvel[i]);
	}
	ck_assert(back.rot[0] == 1.0f);
	/* Input axes. */
	ck_assert_int_eq(cc_wire_axis_pack(1.0f), 127);
	ck_assert_int_eq(cc_wire_axis_pack(-1.5f), -127);
	ck_assert_int_eq(cc_wire_axis_pack(NAN), 0);
	ck_assert_int_eq(cc_wire_axis_pack(0.5f), 64);
	ck_assert(cc_wire_axis_unpack(-127) == -1.0f);
	ck_assert(fabsf(cc_wire_axis_unpack(64) - 0.5039f) < 1e-3f);
}
END_TEST

/*
 * The worked rot examples of contracts/gameserver-protocol.md (section 5,
 * body): the codec packs them to the document's numbers. The third has
 * three distinct non-zero packed components and a negative largest one,
 * so it pins their order, their signs and the negation
 * (tests/integration/wire_table_check.py checks the document's bytes
 * independently).
 */
START_TEST(golden_rot_examples)
{
	const struct {
		float q[4];
		uint32_t packed;
	} ex[] = {
		{ { 1, 0, 0, 0 }, 0x00000000u },
		{ { 0, 0, 0, 1 }, 0xc0000000u },
		{ { 2.0f / 9, -5.0f / 9, -6.0f / 9, 4.0f / 9 }, 0xb5f646bfu },
	};
	for (size_t i = 0; i < CC_ARRAY_LEN(ex); i++) {
		uint32_t got = cc_wire_quat_pack(ex[i].q);
		ck_assert_msg(got == ex[i].packed, "example %zu packs to 0x%08x, the document says 0x%08x", i, got, ex[i].packed);
	}
	/* Decoding the third: (-0.22279, 0.55489, 0.66720, -0.44419), the negated quaternion. */
	struct cc_wire_body b = { .rot = 0xb5f646bfu };
	struct cc_wire_pose p;
	cc_wire_dequantise(&b, &p);
	const float want[4] = { -0.22279f, 0.55489f, 0.66720f, -0.44419f };
	for (int i = 0; i < 4; i++)
		ck_assert_msg(fabsf(p.rot[i] - want[i]) < 1e-5f, "component %d decodes to %f, the document says %f", i,
			      (double)p.rot[i], (double)want[i]);
}
END_TEST

/* The simulation's structs map onto the wire field for field (w first in both quaternions). */
START_TEST(sim_structs)
{
	struct cc_sim_body sb = { .pos = { 1.5f, 9.0f, -27.0f },
				  .vel = { 35.0f, -0.5f, 0.25f },
				  .rot = { 0.0f, 0.0f, 1.0f, 0.0f },
				  .angvel = { 5.5f, -5.5f, 0.0625f } };
	struct cc_wire_body wb;
	cc_wire_body_from_sim(&sb, &wb);
	ck_assert_int_eq(wb.pos[0], 1536);
	ck_assert_int_eq(wb.pos[2], -27 * 1024);
	ck_assert_int_eq(wb.vel[0], 35 * 256);
	ck_assert_uint_eq(wb.rot >> 30, 2); /* y is the largest: index 2 in w, x, y, z */
	struct cc_sim_body back;
	cc_wire_body_to_sim(&wb, &back);
	ck_assert(back.pos.x == 1.5f && back.pos.y == 9.0f && back.pos.z == -27.0f);
	ck_assert(back.vel.x == 35.0f && back.vel.y == -0.5f && back.vel.z == 0.25f);
	ck_assert(back.rot.y == 1.0f && back.rot.w == 0.0f);
	ck_assert(back.angvel.x == 5.5f && back.angvel.y == -5.5f && back.angvel.z == 0.0625f);

	struct cc_sim_input si = { .thrust = { 1.0f, -1.0f, 0.0f }, .torque = { 0.5f, NAN, -2.0f }, .boost = true };
	struct cc_wire_input wi;
	cc_wire_input_from_sim(&si, &wi);
	ck_assert(wi.thrust[0] == 127 && wi.thrust[1] == -127 && wi.thrust[2] == 0);
	ck_assert(wi.turn[0] == 64 && wi.turn[1] == 0 && wi.turn[2] == -127);
	ck_assert_uint_eq(wi.buttons, CC_WIRE_BTN_BOOST);
	struct cc_sim_input so;
	cc_wire_input_to_sim(&wi, &so);
	ck_assert(so.thrust.x == 1.0f && so.thrust.y == -1.0f && so.torque.z == -1.0f && so.boost);
	ck_assert_uint_eq(cc_wire_boost_pack(1.0f), 255);
	ck_assert_uint_eq(cc_wire_boost_pack(-3.0f), 0);
	ck_assert_uint_eq(cc_wire_boost_pack(0.5f), 128);
	ck_assert(cc_wire_boost_unpack(255) == 1.0f);
}
END_TEST

START_TEST(sequence_wrap)
{
	ck_assert_int_eq(cc_wire_seq_diff(5, 3), 2);
	ck_assert_int_eq(cc_wire_seq_diff(3, 5), -2);
	ck_assert_int_eq(cc_wire_seq_diff(1, 65535), 2);
	ck_assert_int_eq(cc_wire_seq_diff(65535, 1), -2);
	ck_assert_int_eq(cc_wire_seq_diff(32767, 0), 32767);
	ck_assert_int_eq(cc_wire_seq_diff(32768, 0), -32768);
	ck_assert(cc_wire_seq_newer(0, 65535));
	ck_assert(!cc_wire_seq_newer(65535, 0));
	ck_assert(!cc_wire_seq_newer(7, 7));
}
END_TEST

START_TEST(names)
{
	ck_assert_str_eq(cc_wire_msg_name(CC_MSG_SNAPSHOT), "snapshot");
	ck_assert_str_eq(cc_wire_msg_name(0x02FF), "?");
	ck_assert_str_eq(cc_wire_msg_name(0x0200), "spectate");
	ck_assert_str_eq(cc_wire_reason_name(CC_REASON_TOKEN_REPLAYED), "token_replayed");
	ck_assert_str_eq(cc_wire_reason_name(0), "?");
	ck_assert_uint_eq(cc_wire_reason_by_name("server_full"), CC_REASON_SERVER_FULL);
	ck_assert_uint_eq(cc_wire_reason_by_name("nope"), 0);
	ck_assert_uint_eq(cc_wire_reason_by_name(NULL), 0);
	ck_assert_str_eq(cc_wire_lobby_result_name(CC_LOBBY_TOO_MANY), "too_many_lobbies");
	ck_assert_str_eq(cc_wire_lobby_state_name(CC_LOBBY_IN_MATCH), "in_match");
	ck_assert_str_eq(cc_wire_lobby_state_name(3), "?");
	ck_assert_str_eq(cc_wire_fault_name(CC_WIRE_FAULT_OVERSIZED), "oversized");
	ck_assert_str_eq(cc_wire_fault_name(CC_WIRE_FAULT_END), "?");
}
END_TEST

/* ---- the JSON table equals the codec's table ------------------------------------------ */

#define TABLE_MAX (1 << 20)

/* Reads and parses $CC_TOP/contracts/gameserver-messages.json; fails the test when it cannot. */
static cJSON *load_table(void)
{
	const char *top = getenv("CC_TOP");
	char path[4096];
	snprintf(path, sizeof(path), "%s/contracts/gameserver-messages.json", top && *top ? top : ".");
	char *text = NULL;
	size_t len = 0;
	struct cc_file_error err;
	int rc = cc_file_read(path, TABLE_MAX, CC_FILE_REGULAR_ONLY, &text, &len, &err);
	ck_assert_msg(rc == 0, "cannot read %s (is CC_TOP the checkout?): %s", path, cc_strerror(rc));
	cJSON *doc = cJSON_ParseWithLength(text, len);
	free(text);
	ck_assert_msg(doc, "%s is not JSON", path);
	return doc;
}

static const cJSON *get(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key);
}

/* The integer at o.key, or dflt when absent; fails on a non-number. */
static long long get_int(const cJSON *o, const char *key, long long dflt, const char *where)
{
	const cJSON *v = get(o, key);
	if (!v)
		return dflt;
	ck_assert_msg(cJSON_IsNumber(v), "%s: %s is not a number", where, key);
	return (long long)v->valuedouble;
}

static const char *get_str(const cJSON *o, const char *key, const char *where)
{
	const cJSON *v = get(o, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
	(void)where;
}

static const char *const ftype_names[] = { "u8", "u16", "u32", "i8", "i16", "bytes", "string", "array", "struct", "blob" };
static const char *const charset_names[] = { "", "token", "text", "name", "slug", "credential" };

/* The full range of a scalar type: what a field without min/max in the JSON means. */
static void type_range(enum cc_wire_ftype t, long long *lo, long long *hi)
{
	switch (t) {
	case CC_WIRE_U8: *lo = 0, *hi = UINT8_MAX; break;
	case CC_WIRE_U16: *lo = 0, *hi = UINT16_MAX; break;
	case CC_WIRE_U32: *lo = 0, *hi = UINT32_MAX; break;
	case CC_WIRE_I8: *lo = INT8_MIN, *hi = INT8_MAX; break;
	case CC_WIRE_I16: *lo = INT16_MIN, *hi = INT16_MAX; break;
	default: *lo = *hi = 0; break;
	}
}

static void compare_fields(const char *owner, const struct cc_wire_type *t, const cJSON *jfields, const cJSON *enums)
{
	ck_assert_msg(cJSON_IsArray(jfields), "%s: no fields array", owner);
	ck_assert_msg((size_t)cJSON_GetArraySize(jfields) == t->n_fields, "%s: JSON has %d fields, the codec %zu", owner,
		      cJSON_GetArraySize(jfields), t->n_fields);
	for (size_t i = 0; i < t->n_fields; i++) {
		const struct cc_wire_field *f = &t->fields[i];
		const cJSON *j = cJSON_GetArrayItem(jfields, (int)i);
		char where[160];
		snprintf(where, sizeof(where), "%s field %zu (%s)", owner, i, f->name);
		const char *name = get_str(j, "name", where), *type = get_str(j, "type", where);
		ck_assert_msg(name && strcmp(name, f->name) == 0, "%s: JSON names it %s", where, name ? name : "(none)");
		ck_assert_msg(type && strcmp(type, ftype_names[f->type]) == 0, "%s: JSON type %s, codec %s", where,
			      type ? type : "(none)", ftype_names[f->type]);
		long long lo, hi;
		switch (f->type) {
		case CC_WIRE_U8:
		case CC_WIRE_U16:
		case CC_WIRE_U32:
		case CC_WIRE_I8:
		case CC_WIRE_I16:
			type_range(f->type, &lo, &hi);
			ck_assert_msg(get_int(j, "min", lo, where) == f->min && get_int(j, "max", hi, where) == f->max,
				      "%s: JSON range %lld..%lld, codec %lld..%lld", where, get_int(j, "min", lo, where),
				      get_int(j, "max", hi, where), (long long)f->min, (long long)f->max);
			ck_assert_msg(get_int(j, "reserved_mask", 0, where) == f->reserved_mask,
				      "%s: JSON reserved_mask %lld, codec %u", where, get_int(j, "reserved_mask", 0, where),
				      f->reserved_mask);
			{
				const char *en = get_str(j, "enum", where);
				ck_assert_msg((!en && !f->enum_name) || (en && f->enum_name && !strcmp(en, f->enum_name)),
					      "%s: JSON enum %s, codec %s", where, en ? en : "(none)",
					      f->enum_name ? f->enum_name : "(none)");
				if (en)
					ck_assert_msg(cJSON_IsArray(get(enums, en)), "%s: enum %s is not in enums", where, en);
			}
			break;
		case CC_WIRE_BYTES:
			ck_assert_msg(get_int(j, "length", -1, where) == (long long)f->len, "%s: length", where);
			break;
		case CC_WIRE_STRING: {
			const char *prefix = get_str(j, "length_prefix", where), *cs = get_str(j, "charset", where);
			ck_assert_msg(prefix && !strcmp(prefix, f->len == 1 ? "u8" : "u16"), "%s: length_prefix", where);
			ck_assert_msg(get_int(j, "min_length", -1, where) == f->min &&
					      get_int(j, "max_length", -1, where) == f->max,
				      "%s: JSON length %lld..%lld, codec %lld..%lld", where, get_int(j, "min_length", -1, where),
				      get_int(j, "max_length", -1, where), (long long)f->min, (long long)f->max);
			ck_assert_msg(cs && !strcmp(cs, charset_names[f->charset]), "%s: JSON charset %s, codec %s", where,
				      cs ? cs : "(none)", charset_names[f->charset]);
			break;
		}
		case CC_WIRE_ARRAY: {
			const char *prefix = get_str(j, "count_prefix", where), *of = get_str(j, "of", where);
			ck_assert_msg(prefix && !strcmp(prefix, "u8") && f->len == 1, "%s: count_prefix", where);
			ck_assert_msg(get_int(j, "min_count", -1, where) == f->min &&
					      get_int(j, "max_count", -1, where) == f->max,
				      "%s: JSON count %lld..%lld, codec %lld..%lld", where, get_int(j, "min_count", -1, where),
				      get_int(j, "max_count", -1, where), (long long)f->min, (long long)f->max);
			ck_assert_msg(of && !strcmp(of, f->of->name), "%s: of %s, codec %s", where, of ? of : "(none)",
				      f->of->name);
			break;
		}
		case CC_WIRE_STRUCT: {
			const char *of = get_str(j, "of", where);
			ck_assert_msg(of && !strcmp(of, f->of->name), "%s: of %s, codec %s", where, of ? of : "(none)",
				      f->of->name);
			break;
		}
		case CC_WIRE_BLOB: {
			const char *prefix = get_str(j, "length_prefix", where);
			ck_assert_msg(prefix && !strcmp(prefix, "u16") && f->len == 2, "%s: length_prefix", where);
			ck_assert_msg(get_int(j, "min_length", -1, where) == f->min &&
					      get_int(j, "max_length", -1, where) == f->max,
				      "%s: JSON length %lld..%lld, codec %lld..%lld", where, get_int(j, "min_length", -1, where),
				      get_int(j, "max_length", -1, where), (long long)f->min, (long long)f->max);
			break;
		}
		}
	}
}

/* The JSON enum named name lists exactly these (value, name) pairs, in order. */
struct named_value {
	long long value;
	const char *name;
};

static void compare_enum(const cJSON *enums, const char *name, const struct named_value *want, size_t n)
{
	const cJSON *e = get(enums, name);
	ck_assert_msg(cJSON_IsArray(e), "enum %s missing", name);
	ck_assert_msg((size_t)cJSON_GetArraySize(e) == n, "enum %s: JSON has %d values, the codec %zu", name,
		      cJSON_GetArraySize(e), n);
	for (size_t i = 0; i < n; i++) {
		const cJSON *v = cJSON_GetArrayItem(e, (int)i);
		const char *vn = get_str(v, "name", name);
		ck_assert_msg(get_int(v, "value", -1, name) == want[i].value && vn && !strcmp(vn, want[i].name),
			      "enum %s entry %zu: JSON %lld %s, codec %lld %s", name, i, get_int(v, "value", -1, name),
			      vn ? vn : "(none)", want[i].value, want[i].name);
	}
}

static void compare_flags(const cJSON *flags, const char *name, const struct named_value *want, size_t n)
{
	const cJSON *e = get(flags, name);
	ck_assert_msg(cJSON_IsArray(e) && (size_t)cJSON_GetArraySize(e) == n, "flags %s: wrong count", name);
	for (size_t i = 0; i < n; i++) {
		const cJSON *v = cJSON_GetArrayItem(e, (int)i);
		const char *vn = get_str(v, "name", name);
		ck_assert_msg(get_int(v, "mask", -1, name) == want[i].value && vn && !strcmp(vn, want[i].name),
			      "flags %s entry %zu differs", name, i);
	}
}

START_TEST(json_table_equals_codec)
{
	cJSON *doc = load_table();
	ck_assert_int_eq(get_int(doc, "protocol_version", -1, "top"), CC_WIRE_PROTOCOL_VERSION);
	ck_assert_int_eq(get_int(doc, "tick_rate", -1, "top"), CC_WIRE_TICK_RATE);
	ck_assert_int_eq(get_int(doc, "max_packet", -1, "top"), CC_WIRE_MAX_PACKET);
	ck_assert_str_eq(get_str(doc, "byte_order", "top"), "little-endian");
	const cJSON *enums = get(doc, "enums");

	/* Messages: same order, ids, names, channels, directions, sizes and fields. */
	size_t n;
	const struct cc_wire_msg_info *msgs = cc_wire_messages(&n);
	const cJSON *jm = get(doc, "messages");
	ck_assert_msg(cJSON_IsArray(jm) && (size_t)cJSON_GetArraySize(jm) == n, "JSON has %d messages, the codec %zu",
		      cJSON_GetArraySize(jm), n);
	for (size_t i = 0; i < n; i++) {
		const cJSON *j = cJSON_GetArrayItem(jm, (int)i);
		const struct cc_wire_msg_info *m = &msgs[i];
		const char *name = get_str(j, "name", m->name), *dir = get_str(j, "direction", m->name);
		ck_assert_msg(get_int(j, "id", -1, m->name) == m->id && name && !strcmp(name, m->name),
			      "message %zu: JSON %lld %s, codec %u %s", i, get_int(j, "id", -1, m->name),
			      name ? name : "(none)", m->id, m->name);
		char hexid[8];
		snprintf(hexid, sizeof(hexid), "0x%04x", m->id);
		ck_assert_str_eq(get_str(j, "id_hex", m->name), hexid);
		ck_assert_msg(get_int(j, "channel", -1, m->name) == m->channel, "%s: channel", m->name);
		ck_assert_msg(dir && !strcmp(dir, m->direction == CC_WIRE_TO_SERVER ? "client_to_server" : "server_to_client"),
			      "%s: direction", m->name);
		ck_assert_msg(cJSON_IsBool(get(j, "reliable")) && cJSON_IsTrue(get(j, "reliable")) == m->reliable,
			      "%s: reliable", m->name);
		size_t lo, hi;
		cc_wire_msg_sizes(m, &lo, &hi);
		ck_assert_msg(get_int(j, "min_size", -1, m->name) == (long long)lo &&
				      get_int(j, "max_size", -1, m->name) == (long long)hi,
			      "%s: JSON sizes %lld..%lld, codec %zu..%zu", m->name, get_int(j, "min_size", -1, m->name),
			      get_int(j, "max_size", -1, m->name), lo, hi);
		ck_assert_msg(hi <= CC_WIRE_MAX_PACKET, "%s: max %zu over the packet cap", m->name, hi);
		compare_fields(m->name, m->payload, get(j, "fields"), enums);
	}

	/* Struct types. */
	const struct cc_wire_type *const *types = cc_wire_types(&n);
	const cJSON *jt = get(doc, "types");
	ck_assert_msg(cJSON_IsArray(jt) && (size_t)cJSON_GetArraySize(jt) == n, "JSON has %d types, the codec %zu",
		      cJSON_GetArraySize(jt), n);
	for (size_t i = 0; i < n; i++) {
		const cJSON *j = cJSON_GetArrayItem(jt, (int)i);
		const char *name = get_str(j, "name", "type");
		ck_assert_msg(name && !strcmp(name, types[i]->name), "type %zu: JSON %s, codec %s", i,
			      name ? name : "(none)", types[i]->name);
		size_t lo, hi;
		cc_wire_type_sizes(types[i], &lo, &hi);
		ck_assert_msg(get_int(j, "min_size", -1, name) == (long long)lo && get_int(j, "max_size", -1, name) == (long long)hi,
			      "type %s: JSON sizes %lld..%lld, codec %zu..%zu", name, get_int(j, "min_size", -1, name),
			      get_int(j, "max_size", -1, name), lo, hi);
		compare_fields(name, types[i], get(j, "fields"), enums);
	}

	/* Enums and flags the codec defines. */
	static const struct named_value reasons[] = {
#define NV(sym, value, text) { value, text },
		CC_WIRE_REASONS(NV)
	};
	static const struct named_value lobby[] = { CC_WIRE_LOBBY_RESULTS(NV) };
#undef NV
	compare_enum(enums, "reason", reasons, CC_ARRAY_LEN(reasons));
	compare_enum(enums, "lobby_result", lobby, CC_ARRAY_LEN(lobby));
	static const struct named_value lobby_states[] = {
#define NV(sym, value, text) { value, text },
		CC_WIRE_LOBBY_STATES(NV)
#undef NV
	};
	compare_enum(enums, "lobby_state", lobby_states, CC_ARRAY_LEN(lobby_states));
	static const struct named_value auth[] = { { CC_WIRE_AUTH_TOKEN, "token" }, { CC_WIRE_AUTH_NAME, "name" } };
	static const struct named_value mode[] = { { CC_WIRE_MODE_ALLOCATED, "allocated" },
						   { CC_WIRE_MODE_COMMUNITY, "community" } };
	compare_enum(enums, "auth", auth, CC_ARRAY_LEN(auth));
	/* The lifecycle's lists (game/match_lifecycle.h owns them) are wire format too. */
	static const struct named_value states[] = {
#define NV(sym, value) { value, #sym },
		CC_MATCH_STATES(NV)
	};
	static const struct named_value ends[] = { CC_MATCH_END_REASONS(NV) };
#undef NV
	compare_enum(enums, "match_state", states, CC_ARRAY_LEN(states));
	compare_enum(enums, "match_end_reason", ends, CC_ARRAY_LEN(ends));
	compare_enum(enums, "mode", mode, CC_ARRAY_LEN(mode));
	const cJSON *flags = get(doc, "flags");
	static const struct named_value pf[] = { { CC_WIRE_PF_INPUT_STALLED, "input_stalled" },
						 { CC_WIRE_PF_BOT, "bot" },
						 { CC_WIRE_PF_CONNECTED, "connected" },
						 { CC_WIRE_PF_BOOSTING, "boosting" },
						 { CC_WIRE_PF_HAS_INPUT, "has_input" } };
	static const struct named_value pi[] = { { CC_WIRE_PI_CONNECTED, "connected" }, { CC_WIRE_PI_BOT, "bot" } };
	static const struct named_value btn[] = { { CC_WIRE_BTN_BOOST, "boost" } };
	compare_flags(flags, "player_state_flags", pf, CC_ARRAY_LEN(pf));
	compare_flags(flags, "player_info_flags", pi, CC_ARRAY_LEN(pi));
	compare_flags(flags, "buttons", btn, CC_ARRAY_LEN(btn));

	/* Every message id lies in the assigned ranges, 0x0001-0x03ff. */
	msgs = cc_wire_messages(&n);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(msgs[i].id >= 0x0001 && msgs[i].id <= 0x03FF, "%s: id 0x%04x outside the assigned ranges",
			      msgs[i].name, msgs[i].id);
	cJSON_Delete(doc);
}
END_TEST

/* ---- text form --------------------------------------------------------------------- */

START_TEST(format_text)
{
	struct cc_wire_msg m;
	memset(&m, 0, sizeof(m));
	m.id = CC_MSG_PLAYER_INFO;
	m.u.player_info = (struct cc_wire_player_info){ .slot = 2, .team = 1, .flags = 3 };
	set_str(m.u.player_info.name, &m.u.player_info.name_len, "a\"b\\c\xc3\xa9");
	char buf[256];
	const char *want = "{\"id\":7,\"name\":\"player_info\",\"fields\":{\"slot\":2,\"team\":1,\"flags\":3,"
			   "\"name\":\"a\\\"b\\\\c\xc3\xa9\"}}";
	size_t n = cc_wire_format(&m, buf, sizeof(buf));
	ck_assert_str_eq(buf, want);
	ck_assert_uint_eq(n, strlen(want));
	/* A short buffer gets a NUL-terminated prefix and the full length back. */
	char small[10];
	ck_assert_uint_eq(cc_wire_format(&m, small, sizeof(small)), strlen(want));
	ck_assert_str_eq(small, "{\"id\":7,\"");
	ck_assert_uint_eq(cc_wire_format(&m, NULL, 0), strlen(want));
	/* Nested arrays, structs and fixed bytes. */
	sample_any(18, &m);
	char big[2048];
	cc_wire_format(&m, big, sizeof(big));
	ck_assert_msg(strstr(big, "\"ships\":[{\"slot\":1,\"body\":{\"pos_x\":93,"), "%s", big);
	sample_any(3, &m);
	cc_wire_format(&m, big, sizeof(big));
	ck_assert_msg(strstr(big, "\"resume_key\":\"f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff\",\"arena\":\"aurora_ring\"}"), "%s", big);
	m.id = 0x0306;
	ck_assert_uint_eq(cc_wire_format(&m, big, sizeof(big)), 0);
	ck_assert_str_eq(big, "");
}
END_TEST

/* ---- delta snapshots (issue 24) ------------------------------------------------------------- */

static uint32_t drng = 0x2545F491u;
static uint32_t dnext(void)
{
	drng ^= drng << 13;
	drng ^= drng >> 17;
	drng ^= drng << 5;
	return drng;
}
static int32_t drange(int32_t lo, int32_t hi) { return lo + (int32_t)(dnext() % (uint32_t)(hi - lo + 1)); }
static int16_t clamp16(int64_t v) { return (int16_t)(v < INT16_MIN ? INT16_MIN : v > INT16_MAX ? INT16_MAX : v); }

static struct cc_wire_body random_body(void)
{
	struct cc_wire_body b;
	for (int k = 0; k < 3; k++) {
		b.pos[k] = (int16_t)drange(INT16_MIN, INT16_MAX);
		b.vel[k] = (int16_t)drange(INT16_MIN, INT16_MAX);
	}
	b.rot = dnext();
	b.angvel = dnext() & 0x3FFFFFFFu;
	return b;
}

/* A body as the simulation moves one: the velocity changes a little, the position follows it, the rotation turns. */
static struct cc_wire_body moved_body(const struct cc_wire_body *b, int age)
{
	struct cc_wire_body c = *b;
	for (int k = 0; k < 3; k++) {
		c.vel[k] = clamp16(b->vel[k] + drange(-40, 40) * (dnext() % 4 == 0 ? 0 : 1));
		c.pos[k] = clamp16(b->pos[k] + ((int64_t)b->vel[k] + c.vel[k]) * age / 30 + drange(-3, 3));
	}
	if (dnext() % 3) {
		uint32_t rot = b->rot & 0xC0000000u;
		for (unsigned sh = 0; sh < 30; sh += 10) {
			long v = (long)((b->rot >> sh) & 0x3FF);
			v = (v >= 512 ? v - 1024 : v) + drange(-6, 6);
			v = v < -512 ? -512 : v > 511 ? 511 : v;
			rot |= ((uint32_t)v & 0x3FFu) << sh;
		}
		c.rot = rot;
	}
	if (dnext() % 2)
		c.angvel = dnext() & 0x3FFFFFFFu;
	return c;
}

static void random_snapshot(struct cc_wire_snapshot *s)
{
	memset(s, 0, sizeof *s);
	s->tick = dnext();
	s->match_state = (uint8_t)dnext();
	s->score[0] = (uint8_t)dnext();
	s->score[1] = (uint8_t)dnext();
	s->clock_ticks = dnext() % 4 ? dnext() % 20000 : dnext();
	s->ball = random_body();
	s->player_count = (uint16_t)drange(0, CC_WIRE_MAX_PLAYERS);
	uint32_t used = 0;
	for (uint16_t i = 0; i < s->player_count; i++) {
		uint8_t slot;
		do
			slot = (uint8_t)(dnext() % CC_WIRE_MAX_PLAYERS);
		while (used & (1u << slot));
		used |= 1u << slot;
		s->players[i] = (struct cc_wire_player_state){ slot, (uint8_t)dnext(), (uint16_t)dnext(), (uint8_t)dnext(),
							       random_body() };
	}
}

/* cur: base age ticks later, changed the way kind says (0 physical, 1 anything, 2 the player list too). */
static void next_snapshot(const struct cc_wire_snapshot *base, struct cc_wire_snapshot *cur, int age, int kind)
{
	*cur = *base;
	cur->tick = base->tick + (uint32_t)age;
	if (kind == 1 || dnext() % 8 == 0)
		cur->match_state = (uint8_t)dnext();
	if (kind == 1 || dnext() % 8 == 0)
		cur->score[dnext() % 2]++;
	cur->clock_ticks = kind == 1 ? dnext() : base->clock_ticks - (uint32_t)age;
	cur->ball = kind == 1 ? random_body() : moved_body(&base->ball, age);
	for (uint16_t i = 0; i < cur->player_count; i++) {
		struct cc_wire_player_state *p = &cur->players[i];
		p->body = kind == 1 ? random_body() : moved_body(&p->body, age);
		p->last_input_seq = (uint16_t)(p->last_input_seq + age + (kind == 1 ? drange(-40000, 40000) : drange(-2, 2) * (int32_t)(dnext() % 2)));
		if (kind == 1 || dnext() % 10 == 0)
			p->flags = (uint8_t)dnext();
		if (kind == 1 || dnext() % 4 == 0)
			p->boost = (uint8_t)dnext();
	}
	if (kind == 2) {
		/* Leave, join, reorder: a new list of slots, some of them the base's. */
		struct cc_wire_snapshot other;
		random_snapshot(&other);
		cur->player_count = other.player_count;
		for (uint16_t i = 0; i < other.player_count; i++) {
			cur->players[i] = other.players[i];
			for (uint16_t j = 0; j < base->player_count; j++)
				if (base->players[j].slot == other.players[i].slot && dnext() % 2)
					cur->players[i].body = moved_body(&base->players[j].body, age);
		}
	}
}

static bool body_eq(const struct cc_wire_body *a, const struct cc_wire_body *b)
{
	return a->rot == b->rot && a->angvel == b->angvel && !memcmp(a->pos, b->pos, sizeof a->pos) &&
	       !memcmp(a->vel, b->vel, sizeof a->vel);
}

/* Field by field (padding aside), players up to player_count. */
static bool snapshot_eq(const struct cc_wire_snapshot *a, const struct cc_wire_snapshot *b)
{
	if (a->tick != b->tick || a->match_state != b->match_state || a->score[0] != b->score[0] ||
	    a->score[1] != b->score[1] || a->clock_ticks != b->clock_ticks || !body_eq(&a->ball, &b->ball) ||
	    a->player_count != b->player_count)
		return false;
	for (uint16_t i = 0; i < a->player_count; i++) {
		const struct cc_wire_player_state *p = &a->players[i], *q = &b->players[i];
		if (p->slot != q->slot || p->flags != q->flags || p->last_input_seq != q->last_input_seq ||
		    p->boost != q->boost || !body_eq(&p->body, &q->body))
			return false;
	}
	return true;
}

/* Property: for random bases and changes, decode(encode_delta(base, cur)) == cur, through the wire framing too. */
START_TEST(delta_round_trip)
{
	static struct cc_wire_snapshot base, cur, got;
	static struct cc_wire_msg m, dm;
	size_t physical_bytes = 0, physical_n = 0, full_bytes = 0;
	for (int n = 0; n < 30000; n++) {
		random_snapshot(&base);
		int kind = n % 3, age = n % 5 == 0 ? drange(1, 255) : drange(1, 12);
		next_snapshot(&base, &cur, age, kind);
		m.id = CC_MSG_SNAPSHOT_DELTA;
		int rc = cc_wire_delta_encode(&base, &cur, &m.u.snapshot_delta);
		ck_assert_msg(rc == 0, "case %d: encode: %s", n, cc_strerror(rc));
		uint8_t buf[CC_WIRE_MAX_PACKET];
		size_t len = 0;
		struct cc_wire_fault f;
		ck_assert_int_eq(cc_wire_encode(&m, buf, sizeof buf, &len), 0);
		ck_assert_msg(cc_wire_decode(buf, len, &dm, &f) == 0, "case %d: %s", n, f.text);
		memset(&got, 0x5A, sizeof got);
		rc = cc_wire_delta_apply(&base, &dm.u.snapshot_delta, &got, &f);
		ck_assert_msg(rc == 0, "case %d (kind %d, age %d): apply: %s", n, kind, age, f.text);
		ck_assert_msg(snapshot_eq(&got, &cur), "case %d (kind %d, age %d): rebuilt snapshot differs", n, kind, age);
		if (kind == 0 && age <= 12) {
			struct cc_wire_msg full = { .id = CC_MSG_SNAPSHOT };
			full.u.snapshot = cur;
			size_t flen = 0;
			ck_assert_int_eq(cc_wire_encode(&full, buf, sizeof buf, &flen), 0);
			physical_bytes += len, full_bytes += flen, physical_n++;
		}
	}
	/* Physical changes cost well under a full snapshot, even with these random speeds and player counts
	 * (the bench measures real matches: scripts/bench-gameserver.sh). */
	ck_assert_msg(physical_bytes * 5 < full_bytes * 3, "deltas %zu bytes, full %zu bytes over %zu cases", physical_bytes,
		      full_bytes, physical_n);
	/* An unchanged state (nothing moves, inputs flow): a few bytes. */
	random_snapshot(&base);
	cur = base;
	cur.tick++;
	for (uint16_t i = 0; i < cur.player_count; i++) {
		cur.players[i].last_input_seq++;
		cur.players[i].body.vel[0] = cur.players[i].body.vel[1] = cur.players[i].body.vel[2] = 0;
	}
	for (int k = 0; k < 3; k++)
		cur.ball.vel[k] = 0;
	base = cur;
	base.tick--;
	for (uint16_t i = 0; i < base.player_count; i++)
		base.players[i].last_input_seq--;
	ck_assert_int_eq(cc_wire_delta_encode(&base, &cur, &m.u.snapshot_delta), 0);
	ck_assert_msg(m.u.snapshot_delta.delta_len <= 2 + cur.player_count, "still: %u bytes for %u players",
		      m.u.snapshot_delta.delta_len, cur.player_count);
}
END_TEST

/* The encoder refuses an age out of 1..255 and an invalid snapshot. */
START_TEST(delta_encode_refuses)
{
	static struct cc_wire_snapshot base, cur;
	static struct cc_wire_snapshot_delta d;
	random_snapshot(&base);
	next_snapshot(&base, &cur, 3, 0);
	cur.tick = base.tick;
	ck_assert_int_eq(cc_wire_delta_encode(&base, &cur, &d), CC_EINVAL);
	cur.tick = base.tick + 256;
	ck_assert_int_eq(cc_wire_delta_encode(&base, &cur, &d), CC_EINVAL);
	cur.tick = base.tick - 1;
	ck_assert_int_eq(cc_wire_delta_encode(&base, &cur, &d), CC_EINVAL);
	cur.tick = base.tick + 255;
	ck_assert_int_eq(cc_wire_delta_encode(&base, &cur, &d), 0);
	cur.player_count = CC_WIRE_MAX_PLAYERS + 1;
	ck_assert_int_eq(cc_wire_delta_encode(&base, &cur, &d), CC_EINVAL);
	cur.player_count = 2;
	cur.players[1].slot = cur.players[0].slot;
	ck_assert_int_eq(cc_wire_delta_encode(&base, &cur, &d), CC_EINVAL);
	cur.players[1].slot = (uint8_t)((cur.players[0].slot + 1) % 16);
	cur.ball.angvel |= 0x40000000u;
	ck_assert_int_eq(cc_wire_delta_encode(&base, &cur, &d), CC_EINVAL);
}
END_TEST

/* A bit writer of the test's own, LSB first, to build hostile deltas from the document's rules. */
struct tbits {
	uint8_t b[64];
	unsigned n;
};
static void tput(struct tbits *t, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++, t->n++)
		if ((v >> i) & 1)
			t->b[t->n / 8] |= (uint8_t)(1u << (t->n % 8));
}
/* A group: class 3 bits, then n values of the class's width (classes 0..7: 2 3 4 5 6 8 12 33 bits). */
static void tgroup(struct tbits *t, unsigned cls, const int64_t *v, int n)
{
	static const unsigned w[8] = { 2, 3, 4, 5, 6, 8, 12, 33 };
	tput(t, cls, 3);
	for (int k = 0; k < n; k++)
		tput(t, (uint64_t)v[k], w[cls]);
}

struct hostile {
	const char *what;
	int kind; /* enum cc_wire_fault_kind */
	const char *text;
};

/* Applies the delta of t's bits to base (exactly that many bytes on the heap) and checks the refusal. */
static void expect_refused(const struct cc_wire_snapshot *base, uint32_t tick, uint8_t age, const uint8_t *bytes,
			   size_t n, const struct hostile *h)
{
	static struct cc_wire_snapshot_delta d;
	static struct cc_wire_snapshot out, untouched;
	memset(&d, 0, sizeof d);
	d.tick = tick;
	d.base_age = age;
	d.delta_len = (uint16_t)n;
	memcpy(d.delta, bytes, n < sizeof d.delta ? n : sizeof d.delta);
	memset(&out, 0x3C, sizeof out);
	untouched = out;
	struct cc_wire_fault f;
	int rc = cc_wire_delta_apply(base, &d, &out, &f);
	ck_assert_msg(rc == CC_EINVAL, "%s: applied (rc %d)", h->what, rc);
	ck_assert_msg((int)f.kind == h->kind, "%s: fault %s, want %s (%s)", h->what, cc_wire_fault_name(f.kind),
		      cc_wire_fault_name((enum cc_wire_fault_kind)h->kind), f.text);
	ck_assert_msg(strstr(f.text, h->text), "%s: \"%s\" lacks \"%s\"", h->what, f.text, h->text);
	ck_assert_msg(!memcmp(&out, &untouched, sizeof out), "%s: *out written on a refusal", h->what);
	ck_assert_msg(cc_wire_delta_apply(base, &d, &out, NULL) == CC_EINVAL, "%s: without a fault", h->what);
}

START_TEST(delta_hostile)
{
	static struct cc_wire_snapshot base, cur;
	static struct cc_wire_snapshot_delta d;
	random_snapshot(&base);
	base.player_count = 3;
	for (uint16_t i = 0; i < 3; i++)
		base.players[i].slot = (uint8_t)(2 * i);
	next_snapshot(&base, &cur, 3, 0);
	ck_assert_int_eq(cc_wire_delta_encode(&base, &cur, &d), 0);

	/* Every strict prefix is truncated; one byte more is oversized; the real one applies. */
	for (uint16_t cut = 0; cut < d.delta_len; cut++) {
		char what[48];
		snprintf(what, sizeof what, "a %u-byte prefix of %u", cut, d.delta_len);
		struct hostile h = { what, CC_WIRE_FAULT_TRUNCATED, "the delta ends inside the field" };
		expect_refused(&base, d.tick, d.base_age, d.delta, cut, &h);
	}
	uint8_t longer[CC_WIRE_DELTA_MAX];
	memcpy(longer, d.delta, d.delta_len);
	longer[d.delta_len] = 0;
	expect_refused(&base, d.tick, d.base_age, longer, d.delta_len + 1u,
		       &(struct hostile){ "a byte more", CC_WIRE_FAULT_OVERSIZED, "(delta): bytes after the end of the delta" });
	expect_refused(&base, d.tick, d.base_age, d.delta, CC_WIRE_DELTA_MAX + 1u,
		       &(struct hostile){ "length over the cap", CC_WIRE_FAULT_OVERSIZED, "length over its cap, 1025 bytes" });
	/* Unknown base: the delta names another tick than the base given. */
	expect_refused(&base, d.tick + 1, d.base_age, d.delta, d.delta_len,
		       &(struct hostile){ "another base", CC_WIRE_FAULT_MALFORMED, "unknown base, the delta's base is tick" });
	expect_refused(&base, d.tick, 0, d.delta, d.delta_len,
		       &(struct hostile){ "age 0", CC_WIRE_FAULT_MALFORMED, "unknown base" });

	/* Hand-made streams (document section 5). Header: changes 3 bits, clock group (class 0, value 0). */
	const int64_t zero = 0, big3[3] = { 40000, 0, 0 }, two[3] = { 1, 1, 1 };
	struct tbits t;
	memset(&t, 0, sizeof t);
	tput(&t, 0x4, 3), tgroup(&t, 0, &zero, 1), tput(&t, 20, 5);
	expect_refused(&base, base.tick + 1, 1, t.b, (t.n + 7) / 8,
		       &(struct hostile){ "20 players", CC_WIRE_FAULT_OVERSIZED, "(player_count): count over its cap, 20, cap 16" });
	memset(&t, 0, sizeof t);
	tput(&t, 0x4, 3), tgroup(&t, 0, &zero, 1), tput(&t, 2, 5), tput(&t, 7, 4), tput(&t, 7, 4);
	expect_refused(&base, base.tick + 1, 1, t.b, (t.n + 7) / 8,
		       &(struct hostile){ "a slot twice", CC_WIRE_FAULT_MALFORMED, "(players[1].slot): a slot appears twice, slot 7" });
	memset(&t, 0, sizeof t);
	tput(&t, 0, 3), tgroup(&t, 0, &zero, 1), tput(&t, 0x04 | 0x08, 5);
	expect_refused(&base, base.tick + 1, 1, t.b, (t.n + 7) / 8,
		       &(struct hostile){ "rot raw and delta", CC_WIRE_FAULT_MALFORMED, "(ball.mask): rot both raw and delta" });
	/* A clock that leaves u32: the base's clock minus more than it holds. */
	memset(&t, 0, sizeof t);
	int64_t under = -(int64_t)base.clock_ticks - 1;
	tput(&t, 0, 3), tgroup(&t, 7, &under, 1);
	expect_refused(&base, base.tick + 1, 1, t.b, (t.n + 7) / 8,
		       &(struct hostile){ "clock below 0", CC_WIRE_FAULT_MALFORMED, "(clock_ticks): the value leaves its range" });
	/* A velocity of the ball past i16 (40000 more than the base's, whatever it is, for a base at or above -7232). */
	base.ball.vel[0] = 0;
	memset(&t, 0, sizeof t);
	tput(&t, 0, 3), tgroup(&t, 0, &zero, 1), tput(&t, 0x01, 5), tgroup(&t, 7, big3, 3);
	expect_refused(&base, base.tick + 1, 1, t.b, (t.n + 7) / 8,
		       &(struct hostile){ "vel past i16", CC_WIRE_FAULT_MALFORMED, "(ball.vel): the value leaves its range, 40000" });
	/* An angvel component past 10 bits (the base's 511 + 1). */
	base.ball.angvel = 0x1FFu;
	memset(&t, 0, sizeof t);
	tput(&t, 0, 3), tgroup(&t, 0, &zero, 1), tput(&t, 0x10, 5), tgroup(&t, 0, two, 3);
	expect_refused(&base, base.tick + 1, 1, t.b, (t.n + 7) / 8,
		       &(struct hostile){ "angvel past 10 bits", CC_WIRE_FAULT_MALFORMED, "(ball.angvel): the value leaves its range, 512" });
	/* Padding must be zero: a valid delta (nothing changed, no players) with a stray high bit. */
	base.player_count = 0;
	memset(&t, 0, sizeof t);
	tput(&t, 0, 3), tgroup(&t, 0, &zero, 1), tput(&t, 0, 5);
	t.b[(t.n - 1) / 8] |= 0x80;
	expect_refused(&base, base.tick + 1, 1, t.b, (t.n + 7) / 8,
		       &(struct hostile){ "padding set", CC_WIRE_FAULT_MALFORMED, "padding bits set" });
	t.b[(t.n - 1) / 8] &= 0x7F;
	d.tick = base.tick + 1, d.base_age = 1, d.delta_len = (uint16_t)((t.n + 7) / 8);
	memcpy(d.delta, t.b, d.delta_len);
	/* Still position: the ball stays put; the same stream is a valid "nothing changed". */
	for (int k = 0; k < 3; k++)
		base.ball.vel[k] = 0;
	ck_assert_int_eq(cc_wire_delta_apply(&base, &d, &cur, NULL), 0);
	ck_assert(body_eq(&cur.ball, &base.ball));
	ck_assert_uint_eq(cur.tick, base.tick + 1);
	/* The position rule, from the document alone: base vel 0, vel 5 two ticks later (a group of 3, class 1: 3 bits
	 * each), no pos part: P = pos + floor(((0 + 5) * 2 + 5 - 0 + 15) / 30) = pos + 1. */
	{
		const int64_t vel5[3] = { 5, 0, -1 };
		base.ball.pos[0] = 100, base.ball.pos[1] = 0, base.ball.pos[2] = -7;
		memset(&t, 0, sizeof t);
		tput(&t, 0, 3), tgroup(&t, 0, &zero, 1), tput(&t, 0x01, 5), tgroup(&t, 2, vel5, 3);
		d.tick = base.tick + 2, d.base_age = 2, d.delta_len = (uint16_t)((t.n + 7) / 8);
		memcpy(d.delta, t.b, d.delta_len);
		ck_assert_int_eq(cc_wire_delta_apply(&base, &d, &cur, NULL), 0);
		ck_assert_int_eq(cur.ball.vel[0], 5);
		ck_assert_int_eq(cur.ball.vel[2], -1);
		/* z: floor((-1 * 2 - 1 + 15) / 30) = 0; x: +1 exactly at the rounding edge (30 / 30). */
		ck_assert_msg(cur.ball.pos[0] == 101 && cur.ball.pos[1] == 0 && cur.ball.pos[2] == -7, "predicted pos %d %d %d",
			      cur.ball.pos[0], cur.ball.pos[1], cur.ball.pos[2]);
	}
	/* The document's example (section 5): the next tick, the clock one lower, nothing else: c0 00. */
	base.clock_ticks = 100;
	cur = base;
	cur.tick++;
	cur.clock_ticks--;
	ck_assert_int_eq(cc_wire_delta_encode(&base, &cur, &d), 0);
	ck_assert_uint_eq(d.delta_len, 2);
	ck_assert_msg(d.delta[0] == 0xc0 && d.delta[1] == 0x00, "example: %02x %02x", d.delta[0], d.delta[1]);
}
END_TEST

/*
 * Garbage deltas (random bytes, and real deltas with bits flipped and
 * lengths changed): refused or applied, never a crash, never a snapshot
 * that breaks its rules.
 */
START_TEST(delta_garbage)
{
	static struct cc_wire_snapshot base, cur, out;
	static struct cc_wire_snapshot_delta d;
	int applied = 0;
	for (int n = 0; n < 50000; n++) {
		random_snapshot(&base);
		uint8_t *heap = malloc(sizeof d);
		ck_assert_ptr_nonnull(heap);
		memset(heap, 0, sizeof d);
		struct cc_wire_snapshot_delta *hd = (struct cc_wire_snapshot_delta *)heap;
		if (n % 2) {
			d.tick = base.tick + 1 + dnext() % 255;
			d.base_age = (uint8_t)(d.tick - base.tick);
			d.delta_len = (uint16_t)(dnext() % 40);
			*hd = d;
			for (uint16_t k = 0; k < d.delta_len; k++)
				hd->delta[k] = (uint8_t)dnext();
		} else {
			next_snapshot(&base, &cur, drange(1, 12), n % 3);
			ck_assert_int_eq(cc_wire_delta_encode(&base, &cur, hd), 0);
			for (int k = drange(1, 3); k > 0; k--) {
				uint32_t bit = dnext() % (hd->delta_len * 8u);
				hd->delta[bit / 8] ^= (uint8_t)(1u << (bit % 8));
			}
			if (dnext() % 4 == 0)
				hd->delta_len = (uint16_t)(hd->delta_len + drange(-1, 1));
		}
		struct cc_wire_fault f;
		int rc = cc_wire_delta_apply(&base, hd, &out, &f);
		ck_assert(rc == 0 || rc == CC_EINVAL);
		if (rc == 0) {
			applied++;
			struct cc_wire_msg m = { .id = CC_MSG_SNAPSHOT };
			m.u.snapshot = out;
			uint8_t buf[CC_WIRE_MAX_PACKET];
			size_t len;
			ck_assert_msg(cc_wire_encode(&m, buf, sizeof buf, &len) == 0, "case %d: an applied delta gave an invalid snapshot", n);
		} else {
			ck_assert(f.kind == CC_WIRE_FAULT_TRUNCATED || f.kind == CC_WIRE_FAULT_OVERSIZED || f.kind == CC_WIRE_FAULT_MALFORMED);
			ck_assert(strncmp(f.text, "snapshot_delta: ", 16) == 0);
		}
		free(heap);
	}
	ck_assert_int_gt(applied, 0);
}
END_TEST

/*
 * test_wire --vectors: prints every sample as {"hex", "message"} and a set
 * of bodies as a kickoff packet with the dequantised floats, one JSON object
 * a line, for tests/integration/wire_table_check.py (the independent check
 * that decodes and encodes them from contracts/gameserver-messages.json).
 */
static void print_hex(const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		printf("%02x", b[i]);
}

static int print_vectors(void)
{
	uint8_t buf[CC_WIRE_MAX_PACKET];
	static char text[16384];
	for (int i = 0; i < SAMPLES; i++) {
		struct cc_wire_msg m;
		size_t len = 0;
		sample_any(i, &m);
		if (cc_wire_encode(&m, buf, sizeof(buf), &len) != 0)
			return 1;
		cc_wire_format(&m, text, sizeof(text));
		printf("{\"hex\":\"");
		print_hex(buf, len);
		printf("\",\"message\":%s}\n", text);
	}
	/* Deltas: the base, the packet, the snapshot it rebuilds to, for an independent decoder of section 5. */
	static char text2[16384];
	for (int i = 0; i < 300; i++) {
		static struct cc_wire_msg base, cur, dm;
		memset(&base, 0, sizeof base);
		memset(&cur, 0, sizeof cur);
		base.id = cur.id = CC_MSG_SNAPSHOT;
		random_snapshot(&base.u.snapshot);
		next_snapshot(&base.u.snapshot, &cur.u.snapshot, i % 5 == 0 ? drange(1, 255) : drange(1, 12), i % 3);
		dm.id = CC_MSG_SNAPSHOT_DELTA;
		size_t len = 0;
		if (cc_wire_delta_encode(&base.u.snapshot, &cur.u.snapshot, &dm.u.snapshot_delta) != 0 ||
		    cc_wire_encode(&dm, buf, sizeof(buf), &len) != 0)
			return 1;
		cc_wire_format(&base, text, sizeof(text));
		cc_wire_format(&cur, text2, sizeof(text2));
		printf("{\"hex\":\"");
		print_hex(buf, len);
		printf("\",\"delta_base\":%s,\"delta_result\":%s}\n", text, text2);
	}
	for (int i = 0; i < 400; i++) {
		struct cc_wire_msg m;
		memset(&m, 0, sizeof(m));
		m.id = CC_MSG_KICKOFF;
		if (i < 20) {
			m.u.kickoff.ball = sample_body(i);
		} else {
			struct cc_wire_pose p;
			for (int k = 0; k < 3; k++) {
				p.pos[k] = uniform(-40, 40);
				p.vel[k] = uniform(-140, 140);
				p.angvel[k] = uniform(-40, 40);
			}
			for (int k = 0; k < 4; k++)
				p.rot[k] = uniform(-1, 1);
			cc_wire_quantise(&p, &m.u.kickoff.ball);
		}
		size_t len = 0;
		if (cc_wire_encode(&m, buf, sizeof(buf), &len) != 0)
			return 1;
		struct cc_wire_pose p;
		cc_wire_dequantise(&m.u.kickoff.ball, &p);
		printf("{\"hex\":\"");
		print_hex(buf, len);
		printf("\",\"ball_pose\":[");
		const float *f[4] = { p.pos, p.rot, p.vel, p.angvel };
		const int nf[4] = { 3, 4, 3, 3 };
		for (int g = 0, first = 1; g < 4; g++)
			for (int k = 0; k < nf[g]; k++, first = 0)
				printf("%s%.17g", first ? "" : ",", (double)f[g][k]);
		printf("]}\n");
	}
	return 0;
}

static Suite *wire_suite(void)
{
	Suite *s = suite_create("wire");
	TCase *tc = tcase_create("codec");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, every_message_has_a_sample);
	tcase_add_loop_test(tc, round_trip, 0, SAMPLES);
	tcase_add_loop_test(tc, every_prefix_truncated, 0, SAMPLES);
	tcase_add_loop_test(tc, trailing_bytes_oversized, 0, SAMPLES);
	tcase_add_loop_test(tc, encode_small_buffers, 0, SAMPLES);
	tcase_add_test(tc, golden_hello);
	tcase_add_test(tc, golden_input);
	tcase_add_test(tc, golden_snapshot);
	tcase_add_test(tc, real_join_token_in_hello);
	tcase_add_loop_test(tc, bad_packets, 0, CC_ARRAY_LEN(bad_cases));
	tcase_add_test(tc, null_fault);
	tcase_add_loop_test(tc, encode_refuses, 0, CC_ARRAY_LEN(enc_cases));
	tcase_add_test(tc, quantise_bounds);
	tcase_add_test(tc, quantise_edges);
	tcase_add_test(tc, golden_rot_examples);
	tcase_add_test(tc, sim_structs);
	tcase_add_test(tc, sequence_wrap);
	tcase_add_test(tc, names);
	tcase_add_test(tc, json_table_equals_codec);
	tcase_add_test(tc, format_text);
	tcase_add_test(tc, delta_round_trip);
	tcase_add_test(tc, delta_encode_refuses);
	tcase_add_test(tc, delta_hostile);
	tcase_add_test(tc, delta_garbage);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--vectors") == 0)
		return print_vectors();
	return cc_test_run_suite(wire_suite());
}
