/*
 * play.c - see play.h.
 */
#include "play.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "input.h"
#include "wire_glue.h"
#include "game/match_lifecycle.h"
#include "sys/log.h"
#include "sys/metrics.h"
#include "sys/banned.h"

#define TICK_NS (1000000000LL / CC_WIRE_TICK_RATE)

void gs_rate_init(struct gs_rate *r, const struct gs_rate_limits *l, int64_t now_ns)
{
	memset(r, 0, sizeof *r);
	cc_leaky_init(&r->pkts, l->pps, l->pps, now_ns); /* burst: one second's worth */
	cc_leaky_init(&r->bytes, l->bps, l->bps, now_ns);
	/* Drops leak at half the packet limit, up to half a second of the limit: a sender over the limit by less
	 * than half of it is only throttled; one far over it (a flood) is kicked within about a second. */
	cc_leaky_init(&r->over, l->pps / 2.0, l->pps / 2.0, now_ns);
}

enum gs_rate_verdict gs_rate_charge(struct gs_rate *r, const struct gs_rate_limits *l, size_t len, int64_t now_ns,
				    bool grace, uint64_t peer, const char *addr, int slot, const char **limit,
				    char *detail, size_t detail_len)
{
	bool pkts_ok = cc_leaky_take(&r->pkts, 1, now_ns);
	if (pkts_ok && cc_leaky_take(&r->bytes, (double)len, now_ns))
		return GS_RATE_OK;
	if (pkts_ok)
		cc_leaky_untake(&r->pkts, 1); /* refused by the byte limit: it costs nothing in the packet one */
	*limit = pkts_ok ? "bytes" : "packets";
	const char *labels[] = { *limit, NULL };
	cc_metric_add(l->m_packets, labels, 1);
	cc_metric_add(l->m_bytes, NULL, (double)len);
	r->dropped++;
	r->dropped_bytes += len;
	r->total++;
	int64_t now_ms = now_ns / 1000000;
	if (!r->logged_ms || now_ms - r->logged_ms >= l->log_window_ms) {
		cc_log_warn("rate_limited", CC_LOG_INT("peer", peer), CC_LOG_STR("addr", addr), CC_LOG_INT("slot", slot),
			    CC_LOG_STR("limit", *limit), CC_LOG_INT("dropped", (int64_t)r->dropped),
			    CC_LOG_INT("dropped_bytes", (int64_t)r->dropped_bytes), CC_LOG_INT("dropped_total", (int64_t)r->total),
			    CC_LOG_INT("window_ms", l->log_window_ms), CC_LOG_INT("packets_per_second", l->pps),
			    CC_LOG_INT("bytes_per_second", l->bps), CC_LOG_BOOL("grace", grace));
		r->logged_ms = now_ms;
		r->dropped = r->dropped_bytes = 0;
	}
	if (!grace && !cc_leaky_take(&r->over, 1, now_ns)) {
		snprintf(detail, detail_len, "persistently over the %s limit: %" PRIu64 " packets dropped", *limit, r->total);
		return GS_RATE_KICK;
	}
	return GS_RATE_DROP;
}

void gs_play_event_msg(struct cc_wire_msg *m, const struct gs_match *match, const struct gs_event *ev)
{
	uint32_t tick = gs_match_tick(match);
	memset(m, 0, sizeof *m);
	switch (ev->kind) {
	case GS_EVENT_STATE:
		gs_wire_match_state(m, match);
		break;
	case GS_EVENT_GOAL:
		m->id = CC_MSG_GOAL;
		m->u.goal.tick = tick;
		m->u.goal.team = (uint8_t)ev->team;
		m->u.goal.scorer = ev->slot >= 0 ? (uint8_t)ev->slot : CC_WIRE_SLOT_NONE;
		m->u.goal.score[0] = (uint8_t)ev->score[0];
		m->u.goal.score[1] = (uint8_t)ev->score[1];
		break;
	case GS_EVENT_KICKOFF:
		/* The resulting transforms, never a seed (SPEC 11). */
		gs_wire_kickoff(m, match);
		break;
	case GS_EVENT_ENDED:
		m->id = CC_MSG_MATCH_END;
		m->u.match_end.tick = tick;
		m->u.match_end.score[0] = (uint8_t)ev->score[0];
		m->u.match_end.score[1] = (uint8_t)ev->score[1];
		m->u.match_end.winner = ev->winner < 0 ? CC_WIRE_TEAM_NONE : (uint8_t)ev->winner;
		m->u.match_end.reason = (uint8_t)gs_match_lifecycle(match)->end_reason;
		break;
	}
}

void gs_play_pong(struct cc_wire_msg *m, uint32_t client_time, uint32_t tick, int64_t now_ns, int64_t next_tick_ns)
{
	memset(m, 0, sizeof *m);
	m->id = CC_MSG_PONG;
	m->u.pong.client_time = client_time;
	m->u.pong.server_tick = tick;
	int64_t into = now_ns - (next_tick_ns - TICK_NS);
	into = into < 0 ? 0 : into >= TICK_NS ? TICK_NS - 1 : into;
	m->u.pong.tick_fraction = (uint16_t)(into * 65536 / TICK_NS);
}

static uint16_t le16(const uint8_t *b)
{
	return (uint16_t)(b[0] | b[1] << 8);
}

bool gs_play_lobby_refusable(const uint8_t *data, size_t len, uint8_t channel, const struct cc_wire_fault *f,
			     uint16_t *request)
{
	if (!data || len < 4 || f->id < 0x0300 || f->id > 0x037F || channel != CC_WIRE_CH_CONTROL ||
	    f->kind == CC_WIRE_FAULT_TRUNCATED || f->kind == CC_WIRE_FAULT_UNKNOWN || !f->field || !f->field[0] ||
	    strcmp(f->field, "request") == 0 || f->offset < 4 || le16(data) != f->id)
		return false;
	*request = le16(data + 2);
	return true;
}

bool gs_play_hello_bad_name(const uint8_t *data, size_t len, const struct cc_wire_fault *f, uint16_t *tick_rate)
{
	if (!data || len < 9 || f->id != CC_MSG_HELLO || le16(data) != CC_MSG_HELLO || data[6] != CC_WIRE_AUTH_NAME ||
	    f->kind == CC_WIRE_FAULT_TRUNCATED || !f->field || strcmp(f->field, "credential") != 0)
		return false;
	*tick_rate = le16(data + 4);
	return true;
}

size_t gs_play_encode(const struct cc_wire_msg *m, uint8_t *buf, size_t cap)
{
	size_t len = 0;
	int rc = cc_wire_encode(m, buf, cap, &len);
	if (rc != 0) {
		cc_log_error("encode_failed", CC_LOG_STR("message", cc_wire_msg_name(m->id)), CC_LOG_STR("error", cc_errname(rc)));
		return 0;
	}
	return len;
}

void gs_play_farewell(struct cc_wire_msg *m, bool session, uint16_t reason, const char *detail)
{
	memset(m, 0, sizeof *m);
	char text[CC_WIRE_DETAIL_MAX + 1];
	/* The detail travels as printable ASCII: ours always is, but cut and check anyway. */
	size_t n = 0;
	for (const char *c = detail ? detail : ""; *c && n < CC_WIRE_DETAIL_MAX; c++)
		text[n++] = *c >= 0x20 && *c <= 0x7e ? *c : '?';
	text[n] = '\0';
	if (session) {
		m->id = CC_MSG_KICKED;
		m->u.kicked.reason = reason;
		m->u.kicked.detail_len = (uint16_t)n;
		memcpy(m->u.kicked.detail, text, n + 1);
	} else {
		m->id = CC_MSG_REFUSED;
		m->u.refused.reason = reason;
		m->u.refused.protocol_version = CC_WIRE_PROTOCOL_VERSION;
		m->u.refused.detail_len = (uint16_t)n;
		memcpy(m->u.refused.detail, text, n + 1);
	}
}

void gs_play_input_metrics(struct cc_metric *metric, const struct gs_input_state *a, struct gs_input_state *r)
{
	static const char *const names[] = { "held", "lost", "skipped", "out_of_range", "resync" };
	uint64_t now[] = { a->held, a->lost, a->skipped, a->out_of_range, a->resyncs };
	uint64_t *was[] = { &r->held, &r->lost, &r->skipped, &r->out_of_range, &r->resyncs };
	for (size_t i = 0; i < CC_ARRAY_LEN(names); i++)
		if (now[i] != *was[i]) {
			const char *labels[] = { names[i], NULL };
			cc_metric_add(metric, labels, (double)(now[i] - *was[i]));
			*was[i] = now[i];
		}
}
