/*
 * gsconn.c - the game-server test client's connection and play code (see gsconn.h).
 */
#include "gsconn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys/clock.h"
#include "sys/banned.h"

const char *arg(int argc, char **argv, const char *name)
{
	size_t n = strlen(name);
	for (int i = 2; i < argc; i++)
		if (strncmp(argv[i], "--", 2) == 0 && strncmp(argv[i] + 2, name, n) == 0 && argv[i][2 + n] == '=')
			return argv[i] + 3 + n;
	return NULL;
}

long arg_long(int argc, char **argv, const char *name, long dflt)
{
	const char *v = arg(argc, argv, name);
	return v ? strtol(v, NULL, 10) : dflt;
}

void put16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }

/* ---- the connection -------------------------------------------------------------- */

int connect_to(struct conn *c, int port)
{
	return connect_to_host(c, "127.0.0.1", port);
}

int connect_to_host(struct conn *c, const char *host, int port)
{
	ENetAddress a = { .port = (enet_uint16)port };
	memset(c, 0, sizeof *c);
	c->slot = c->team = -1;
	if (enet_address_set_host(&a, host) != 0)
		return 1;
	c->host = enet_host_create(NULL, 1, 3, 0, 0);
	if (!c->host)
		return 1;
	c->peer = enet_host_connect(c->host, &a, 3, 0);
	if (!c->peer)
		return 1;
	ENetEvent ev;
	int64_t end = cc_clock_ms() + 5000;
	while (cc_clock_ms() < end) {
		if (enet_host_service(c->host, &ev, 50) > 0 && ev.type == ENET_EVENT_TYPE_CONNECT) {
			c->connected = true;
			return 0;
		}
	}
	return 1;
}

void send_raw(struct conn *c, int channel, const void *buf, size_t len, bool reliable)
{
	ENetPacket *p = enet_packet_create(buf, len, reliable ? ENET_PACKET_FLAG_RELIABLE : 0);
	enet_peer_send(c->peer, (enet_uint8)channel, p);
	enet_host_flush(c->host);
}

/* Encodes m; returns its length (0 when it does not encode). */
size_t encode(const struct cc_wire_msg *m, uint8_t *buf, size_t cap)
{
	size_t len = 0;
	return cc_wire_encode(m, buf, cap, &len) == 0 ? len : 0;
}

/* A hello with token; version other than ours is patched into bytes 2-3 after encoding. */
size_t hello_bytes(uint8_t *buf, size_t cap, int version, const char *token)
{
	struct cc_wire_msg m = { .id = CC_MSG_HELLO };
	m.u.hello.protocol_version = PROTOCOL;
	m.u.hello.tick_rate = CC_WIRE_TICK_RATE;
	m.u.hello.auth = CC_WIRE_AUTH_TOKEN;
	size_t n = strlen(token);
	if (n > CC_WIRE_TOKEN_MAX)
		n = CC_WIRE_TOKEN_MAX;
	memcpy(m.u.hello.credential, token, n);
	m.u.hello.credential_len = (uint16_t)n;
	size_t len = encode(&m, buf, cap);
	if (len >= 4)
		put16(buf + 2, (uint32_t)version);
	return len;
}

void send_hello(struct conn *c, int version, const char *token)
{
	uint8_t buf[CC_WIRE_MAX_PACKET];
	size_t n = hello_bytes(buf, sizeof buf, version, token);
	if (n == 0) {
		/* A token the codec refuses to carry (not printable): send it raw, as an attacker would. */
		size_t tl = strlen(token);
		put16(buf, CC_MSG_HELLO);
		put16(buf + 2, (uint32_t)version);
		put16(buf + 4, CC_WIRE_TICK_RATE);
		buf[6] = CC_WIRE_AUTH_TOKEN;
		put16(buf + 7, (uint32_t)tl);
		memcpy(buf + 9, token, tl);
		n = 9 + tl;
	}
	send_raw(c, 0, buf, n, true);
}

/* Reads a control message: welcome, refused or kicked. */
void on_control(struct conn *c, const uint8_t *d, size_t len)
{
	struct cc_wire_msg m;
	if (cc_wire_decode(d, len, &m, NULL) != 0)
		return;
	if (m.id == CC_MSG_WELCOME) {
		c->welcomed = true;
		c->slot = m.u.welcome.slot;
		c->team = m.u.welcome.team;
		c->welcome_state = m.u.welcome.match_state;
		c->welcome_tick = m.u.welcome.server_tick;
		memcpy(c->resume_key, m.u.welcome.resume_key, sizeof c->resume_key);
	} else if (m.id == CC_MSG_REFUSED || m.id == CC_MSG_KICKED) {
		uint16_t reason = m.id == CC_MSG_REFUSED ? m.u.refused.reason : m.u.kicked.reason;
		snprintf(c->reason, sizeof c->reason, "%s", cc_wire_reason_name(reason));
		snprintf(c->detail, sizeof c->detail, "%s", m.id == CC_MSG_REFUSED ? m.u.refused.detail : m.u.kicked.detail);
		c->refused = true;
	}
}

/* Services the connection for up to ms; returns on a welcome, refusal or disconnect. */
void await(struct conn *c, int64_t ms)
{
	int64_t end = cc_clock_ms() + ms;
	ENetEvent ev;
	while (cc_clock_ms() < end && !c->gone && !c->welcomed && !c->refused) {
		if (enet_host_service(c->host, &ev, 20) <= 0)
			continue;
		if (ev.type == ENET_EVENT_TYPE_DISCONNECT)
			c->gone = true;
		else if (ev.type == ENET_EVENT_TYPE_RECEIVE) {
			if (ev.channelID == 0 && ev.packet->dataLength >= 2)
				on_control(c, ev.packet->data, ev.packet->dataLength);
			enet_packet_destroy(ev.packet);
		}
	}
}

/* After a refusal: the server must also disconnect us. */
void await_gone(struct conn *c, int64_t ms)
{
	int64_t end = cc_clock_ms() + ms;
	ENetEvent ev;
	while (cc_clock_ms() < end && !c->gone) {
		if (enet_host_service(c->host, &ev, 20) <= 0)
			continue;
		if (ev.type == ENET_EVENT_TYPE_DISCONNECT)
			c->gone = true;
		else if (ev.type == ENET_EVENT_TYPE_RECEIVE) {
			if (ev.channelID == 0 && ev.packet->dataLength >= 2)
				on_control(c, ev.packet->data, ev.packet->dataLength);
			enet_packet_destroy(ev.packet);
		}
	}
}

void conn_close(struct conn *c)
{
	if (c->peer && !c->gone) {
		enet_peer_disconnect(c->peer, 0);
		ENetEvent ev;
		int64_t end = cc_clock_ms() + 500;
		while (cc_clock_ms() < end && enet_host_service(c->host, &ev, 20) >= 0)
			if (ev.type == ENET_EVENT_TYPE_DISCONNECT)
				break;
	}
	if (c->host)
		enet_host_destroy(c->host);
}

/* An input message: seq newest, count inputs (throttle forward), pad extra bytes, on channel. */
void send_input(struct conn *c, uint16_t seq, int count, size_t pad, int channel)
{
	struct cc_wire_msg m = { .id = CC_MSG_INPUT };
	m.u.input.newest_seq = seq;
	m.u.input.count = (uint16_t)count;
	for (int i = 0; i < count; i++) {
		m.u.input.inputs[i].thrust[2] = 100;
		m.u.input.inputs[i].turn[1] = (int8_t)((seq - i) % 50 - 25);
	}
	uint8_t buf[CC_WIRE_MAX_PACKET + 1024] = { 0 };
	size_t n = encode(&m, buf, CC_WIRE_MAX_PACKET);
	if (n)
		send_raw(c, channel, buf, n + pad, false);
}

uint64_t fnv1a(const uint8_t *d, size_t n)
{
	uint64_t h = 14695981039346656037ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ d[i]) * 1099511628211ull;
	return h;
}

/* One received packet of a session: snapshots, events, control. */
void on_session_packet(struct conn *c, struct play_stats *st, int channel, const uint8_t *d, size_t len)
{
	struct cc_wire_msg m;
	if (cc_wire_decode(d, len, &m, NULL) != 0) {
		st->bad_messages++;
		return;
	}
	if (m.id == CC_MSG_SNAPSHOT_DELTA) {
		const struct cc_wire_snapshot_delta *dl = &m.u.snapshot_delta;
		const struct cc_wire_snapshot *base = NULL;
		for (uint64_t k = 0; k < GS_SNAP_RING && k < st->n_ring && !base; k++) {
			const struct cc_wire_snapshot *h = &st->ring[(st->n_ring - 1 - k) % GS_SNAP_RING];
			if (h->tick == dl->tick - dl->base_age)
				base = h;
		}
		struct cc_wire_snapshot full;
		struct cc_wire_fault f;
		if (!base) {
			st->unknown_base++;
			return;
		}
		if (cc_wire_delta_apply(base, dl, &full, &f) != 0) {
			fprintf(stderr, "gsclient: %s\n", f.text);
			st->bad_messages++;
			return;
		}
		st->deltas++;
		m.id = CC_MSG_SNAPSHOT;
		m.u.snapshot = full;
	} else if (m.id == CC_MSG_SNAPSHOT) {
		st->fulls++;
	}
	if (m.id == CC_MSG_SNAPSHOT) {
		int64_t now = cc_clock_ms();
		if (st->last_snap && now - st->last_snap > st->max_gap)
			st->max_gap = now - st->last_snap;
		st->last_snap = now;
		st->snapshots++;
		st->snapshot_bytes += len;
		if (st->snaplog) {
			uint8_t canon[CC_WIRE_MAX_PACKET];
			size_t n = encode(&m, canon, sizeof canon);
			fprintf(st->snaplog, "%u %016llx\n", m.u.snapshot.tick, (unsigned long long)fnv1a(canon, n));
		}
		const struct cc_wire_snapshot *sn = &m.u.snapshot;
		if (sn->tick <= st->last_tick)
			return;
		st->last_tick = sn->tick;
		st->ring[st->n_ring++ % GS_SNAP_RING] = *sn;
		if (!st->no_ack) {
			struct cc_wire_msg ack = { .id = CC_MSG_SNAPSHOT_ACK };
			uint8_t buf[16];
			ack.u.snapshot_ack.tick = sn->tick;
			size_t n = encode(&ack, buf, sizeof buf);
			if (n)
				send_raw(c, CC_WIRE_CH_INPUT, buf, n, false);
		}
		st->score[0] = sn->score[0];
		st->score[1] = sn->score[1];
		for (uint16_t i = 0; i < sn->player_count; i++) {
			const struct cc_wire_player_state *ps = &sn->players[i];
			if (ps->flags & CC_WIRE_PF_BOT)
				st->bot_slots |= 1u << ps->slot;
			if (ps->slot != c->slot)
				continue;
			if (ps->flags & CC_WIRE_PF_HAS_INPUT)
				st->last_ack = ps->last_input_seq;
			if (ps->flags & CC_WIRE_PF_BOT)
				st->own_bot_last_tick = sn->tick;
			else if (st->own_bot_last_tick && !st->own_free_tick)
				st->own_free_tick = sn->tick;
			struct cc_wire_pose pose;
			cc_wire_dequantise(&ps->body, &pose);
			st->own.tick = sn->tick;
			memcpy(st->own.pos, pose.pos, sizeof st->own.pos);
		}
	} else if (m.id == CC_MSG_MATCH_END) {
		st->ended[0] = m.u.match_end.score[0];
		st->ended[1] = m.u.match_end.score[1];
		st->end_tick = m.u.match_end.tick;
		st->over = true;
	} else if (m.id == CC_MSG_GOAL) {
		st->goals++;
	} else if (m.id == CC_MSG_KICKOFF) {
		if (st->n_kickoffs < 8)
			st->kickoffs[st->n_kickoffs++] = m.u.kickoff.tick;
	} else if (m.id == CC_MSG_PLAYER_INFO) {
		if (m.u.player_info.flags & CC_WIRE_PI_BOT)
			st->pi_bot_slots |= 1u << m.u.player_info.slot;
		if (m.u.player_info.flags & CC_WIRE_PI_CONNECTED) {
			st->pi_connected++;
			st->pi_connected_named += m.u.player_info.name[0] != '\0';
		}
	} else if (m.id == CC_MSG_KICKED && st->over) {
		snprintf(st->close_kicked, sizeof st->close_kicked, "%s", cc_wire_reason_name(m.u.kicked.reason));
		snprintf(st->close_detail, sizeof st->close_detail, "%s", m.u.kicked.detail);
	} else if (channel == 0) {
		on_control(c, d, len);
	}
}
