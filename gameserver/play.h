/*
 * play.h - what allocated mode (server.c) and community mode (community.c)
 * share to serve a match and its peers, so that both play with the same
 * pipeline rather than two copies of it: each peer's leaky-bucket rate
 * limits (protocol section 5) and the wire message of each match event.
 * The match itself (sim, lifecycle, drivers) is gameserver/match.h, the
 * input pipeline gameserver/input.h, the snapshot, kickoff and state
 * builders gameserver/wire_glue.h: each an object a loop can own several of.
 *
 * Ownership: plain values; nothing allocates.
 */
#ifndef CC_GAMESERVER_PLAY_H
#define CC_GAMESERVER_PLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "match.h"
#include "sys/cc.h"
#include "sys/leaky.h"
#include "game/wire.h"

struct cc_metric;

/* The limits (--peer-max-packets-per-second, --peer-max-bytes-per-second, --rate-limit-log-window-ms). */
struct gs_rate_limits {
	int pps;
	int bps;
	int64_t log_window_ms;
	struct cc_metric *m_packets; /* cosmic_clash_gameserver_rate_limited_packets_total{limit} */
	struct cc_metric *m_bytes;   /* cosmic_clash_gameserver_rate_limited_bytes_total */
};

/* One peer's buckets. */
struct gs_rate {
	struct cc_leaky pkts, bytes; /* rate limits on everything it sends */
	struct cc_leaky over;        /* drops, leaking: overflowing = persistently over the limit */
	uint64_t dropped, dropped_bytes; /* drops since the last rate_limited line */
	uint64_t total;              /* drops in all */
	int64_t logged_ms;           /* when the last rate_limited line was written (0: never) */
};

/* Full buckets at now_ns: a burst of one second's worth. */
void gs_rate_init(struct gs_rate *r, const struct gs_rate_limits *l, int64_t now_ns);

enum gs_rate_verdict {
	GS_RATE_OK,   /* within both limits: handle the packet */
	GS_RATE_DROP, /* over a limit: drop it */
	GS_RATE_KICK, /* over a limit persistently: drop it and kick the peer rate_limited (detail filled) */
};

/*
 * Charges one packet of len bytes at now_ns (protocol section 5): over a
 * limit, the packet is dropped, counted, logged rate_limited at most once
 * per window (peer, addr, slot: for the log line), and the drop fills the
 * violation bucket, whose overflow is a kick unless grace (the server-stall
 * grace). *limit names the limit ("packets", "bytes") on a drop.
 */
enum gs_rate_verdict gs_rate_charge(struct gs_rate *r, const struct gs_rate_limits *l, size_t len, int64_t now_ns,
				    bool grace, uint64_t peer, const char *addr, int slot, const char **limit,
				    char *detail, size_t detail_len);

/*
 * The wire message announcing a match event (match.h) at the match's
 * current tick: goal, match_state, kickoff, match_end. m->id is 0 for an
 * event with no message.
 */
void gs_play_event_msg(struct cc_wire_msg *m, const struct gs_match *match, const struct gs_event *ev);

/* The pong answering a ping: the match's tick and how far into it now_ns is (next_tick_ns: when the next is due). */
void gs_play_pong(struct cc_wire_msg *m, uint32_t client_time, uint32_t tick, int64_t now_ns, int64_t next_tick_ns);

/* Encodes m into buf; 0 (logged encode_failed: a message we built is ours to get right) when it does not encode. */
size_t gs_play_encode(const struct cc_wire_msg *m, uint8_t *buf, size_t cap);

/*
 * The message that ends a peer's connection: refused (before its
 * handshake completed: session false) or kicked (after), with reason and
 * the detail cut to the wire's 128 printable ASCII bytes.
 */
void gs_play_farewell(struct cc_wire_msg *m, bool session, uint16_t reason, const char *detail);

/* Adds what an input pipeline counted since the last call to metric{outcome}; reported keeps the last counts. */
struct gs_input_state;
void gs_play_input_metrics(struct cc_metric *metric, const struct gs_input_state *now, struct gs_input_state *reported);

/*
 * Community mode's reading of a refused packet (gameserver/community.c),
 * pure so the wire fuzz target (tests/fuzz/fuzz_wire_to_server.c) runs it:
 *
 * gs_play_lobby_refusable: the packet is a lobby request (0x0300-0x037F)
 * on channel 0 that decoded as far as its `request` number but broke a
 * value rule (a name with control bytes, over 32 bytes or not UTF-8;
 * max_players out of range; ready not 0/1): answered lobby_result
 * invalid_parameters with *request, not counted as a bad message. A
 * truncated one, or one faulty in the request number, is not.
 *
 * gs_play_hello_bad_name: the packet is a hello with auth 2 whose
 * credential broke the name rules (refused invalid_name rather than
 * malformed); *tick_rate is its tick rate (refused tick_rate_mismatch first).
 */
bool gs_play_lobby_refusable(const uint8_t *data, size_t len, uint8_t channel, const struct cc_wire_fault *f,
			     uint16_t *request);
bool gs_play_hello_bad_name(const uint8_t *data, size_t len, const struct cc_wire_fault *f, uint16_t *tick_rate);

#endif
