/*
 * server.c - see server.h. One ENet host; peer->data points at our
 * struct peer while the peer is ours and is cleared the moment we kick
 * it or it disconnects, so a late event or a later send cannot reach a
 * torn-down record.
 */
#include "server.h"

#include <enet/enet.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admission.h"
#include "match.h"
#include "pace.h"
#include "play.h"
#include "replay.h"
#include "reporter.h"
#include "wire_glue.h"
#include "game/match_lifecycle.h"
#include "sys/clock.h"
#include "sys/crypto.h"
#include "sys/log.h"
#include "sys/leaky.h"
#include "sys/metrics.h"
#include "sys/banned.h"

#define TICK_HZ 60
#define TICK_NS (1000000000LL / TICK_HZ)
#define MAX_CATCH_UP 5          /* ticks run back to back after a stall before the clock resyncs */
#define STALL_LOG_MS 100        /* a tick this late is a server_stalled line (and opens the grace) */
#define REFUSE_SPARE 4          /* ENet slots past max_peers: room to tell a newcomer server_full */
#define IDLE_EVICT_MIN_MS 500   /* a silent peer younger than this is never evicted (its hello may be in flight) */
#define CLOSE_MS 1000           /* after the end linger: how long the disconnects of a finished match may take */

enum peer_phase {
	PEER_HELLO,      /* connected, no admitted hello yet */
	PEER_PLAYING,    /* admitted: holds a slot */
	PEER_SPECTATING, /* admitted by spectate: no slot, receives what the players do */
};

struct peer {
	struct gs_server *server;  /* ours: sends go through its net simulation and replay log */
	ENetPeer *enet;            /* cleared when detached */
	uint64_t id;               /* ours, never reused: logs and the admission's holder */
	enum peer_phase phase;
	int64_t connected_ms;      /* monotonic: the handshake deadline counts from here */
	int bad;                   /* truncated/oversized/wrong-channel messages */
	uint64_t unknown;          /* messages with an id we do not know: skipped */
	struct gs_admit who;       /* PLAYING: slot, team, identity */
	struct gs_input_state input; /* the input pipeline (input.h) */
	struct gs_input_state reported; /* input's counters as last added to the metrics */
	struct gs_rate rate;       /* rate limits on everything it sends (play.h) */
	char addr[48];             /* "ip:port" for logs */
	bool displaced;            /* PLAYING: a resume took its slot over (duplicate_session) */
	uint64_t ignored;          /* SPECTATING: messages besides ping; HELLO: messages besides the handshake and ping */
	int watch_slot;            /* SPECTATING: the roster slot of the join token it watches with, -1 for a name */
	uint32_t acked_tick;       /* newest snapshot it acknowledged (snapshot_ack) that we still hold; 0: none */
	uint64_t deltas, fulls;    /* snapshots sent to it as snapshot_delta / as snapshot */
};

/*
 * The snapshots sent lately: the bases a delta can be encoded against
 * (issue 24). A client holds as many (game/wire.h): an ack older than these
 * gets a full snapshot, which the client takes and acks, so a long loss
 * of acks never leaves it with deltas it cannot rebuild.
 */
#define SNAP_HISTORY CC_WIRE_DELTA_HISTORY

struct gs_server {
	struct gs_server_options opts;
	ENetHost *host;
	struct cc_netsim *sim;          /* owned; NULL = no --net-sim-* (plain ENet) */
	struct gs_admission *admission; /* owned */
	struct gs_match *match;         /* owned */
	struct cc_reporter *reporter;   /* the caller's; may be NULL (tests, bench) */
	struct peer *by_slot[GS_MATCH_MAX_SLOTS]; /* PLAYING peers by roster slot */
	struct peer *spectators[GS_MAX_SPECTATORS]; /* SPECTATING peers, the first n_spectators */
	int n_spectators;
	bool bot_played[GS_MATCH_MAX_SLOTS];      /* a bot drove the slot at some time: marked in the result */
	/* Players a roster reload replaced (casual backfill): still in the result, with what they scored. */
	struct former { char player_id[CC_UUID_BUF]; int team; int goals; } former[GS_MATCH_MAX_SLOTS * 2];
	int n_former;
	int64_t vacated_ms[GS_MATCH_MAX_SLOTS]; /* monotonic time of the slot's last vacated report (0: not vacated) */
	bool loading_over;                        /* the match left LOADING (no-shows settled) */
	int64_t left_ms[GS_MATCH_MAX_SLOTS];      /* monotonic time the slot's player last left (logs) */
	uint64_t next_peer_id;
	atomic_bool ready;             /* the loop ran a tick */
	char nonce[17];                /* random hex: makes connection ids unique across restarts */
	int goals[GS_MATCH_MAX_SLOTS]; /* goals scored by each slot (own goals count for nobody) */
	bool ended;                    /* the match reached RESULTS and the result was queued */
	bool kicked_off;               /* the first kickoff happened: the heartbeat phase is playing */
	bool no_show_call_off;         /* LOADING ended with a ranked no-show: call off after this step */
	const char *called_off;        /* why the match was called off (NULL: it was not) */
	int64_t called_off_ms;         /* monotonic time it was */
	bool freeing;                  /* gs_server_free: tell nobody about leavers */
	int64_t next_tick_ns;          /* monotonic time the next tick is due (pong's tick fraction) */
	int64_t ended_ms;              /* monotonic time of the end */
	int64_t closing_ms;            /* monotonic time the finished match closed its connections (0: not yet) */
	uint32_t stall_kick_ticks;     /* held this many ticks in a row: kicked input_stalled (0: never) */
	int64_t grace_until_ms;        /* server-stall grace: nobody is kicked for what the stall caused until then */
	int64_t stall_seen_next;       /* the tick deadline whose lateness was already logged */
	int64_t service_ns;            /* monotonic time the last network service returned (rate limits charge at it) */
	struct gs_pace pace;           /* the loop's pacing and wake-ups (pace.h) */
	int64_t ticks_run;             /* ticks run, for the loop_wakeups line */
	struct gs_rate_limits limits;  /* the per-peer rate limits (play.h), shared with community mode */
	struct cc_wire_snapshot history[SNAP_HISTORY]; /* by (snapshot number % SNAP_HISTORY) */
	uint64_t n_history;            /* snapshots taken so far */
	struct {
		struct cc_metric *ticks, *missed, *kicks, *bad, *unknown, *tick_seconds, *peers;
		struct cc_metric *snapshot_bytes, *sessions, *rl_packets, *rl_bytes, *input, *stalls;
	} m;
};

/* ---- logging helpers ------------------------------------------------------ */

static void peer_addr(const ENetPeer *p, char *out, size_t cap)
{
	char ip[40] = "?";
	(void)enet_address_get_host_ip(&p->address, ip, sizeof ip);
	snprintf(out, cap, "%s:%u", ip, (unsigned)p->address.port);
}

/* ---- sending ---------------------------------------------------------------- */

/* Sends len bytes on channel to a live peer; reliable on the control channel only. */
static void send_bytes(struct peer *p, int channel, const uint8_t *buf, size_t len)
{
	if (!p || !p->enet || len == 0)
		return;
	struct gs_server *s = p->server;
	gs_replay_packet(s->opts.replay, GS_REPLAY_OUT, p->id, (uint8_t)channel, buf, len);
	ENetPacket *pkt = enet_packet_create(buf, len, channel == GS_CH_CONTROL ? ENET_PACKET_FLAG_RELIABLE : 0);
	if (pkt && cc_netsim_send(s->sim, p->enet, (enet_uint8)channel, pkt) != 0)
		enet_packet_destroy(pkt);
}

/*
 * One verdict record in the replay log (nothing, not even the formatting,
 * without --replay-log): every refusal, skip and kick below writes one, as
 * "refused <fault kind>: <decoder's text>", "skipped ...", "ignored ...",
 * "kicked <reason>: <detail>". A packet dropped unread (the input
 * pipeline's rate limit) is written here too, before it is dropped:
 * replay_verdict(s, p->id, "dropped rate_limited: %s", detail).
 */
static void replay_verdict(struct gs_server *s, uint64_t peer, const char *fmt, ...) CC_PRINTF(3, 4);
static void replay_verdict(struct gs_server *s, uint64_t peer, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	gs_replay_verdictv(s->opts.replay, peer, fmt, ap);
	va_end(ap);
}

/* Encodes m into buf; 0 (logged: a message we built is ours to get right) when it does not encode. */
static size_t encode(const struct cc_wire_msg *m, uint8_t *buf, size_t cap)
{
	return gs_play_encode(m, buf, cap);
}

/* Sends m to one peer on the message's own channel. */
static void send_msg(struct peer *p, const struct cc_wire_msg *m)
{
	uint8_t buf[CC_WIRE_MAX_PACKET];
	const struct cc_wire_msg_info *info = cc_wire_msg_info(m->id);
	size_t n = info ? encode(m, buf, sizeof buf) : 0;
	if (n)
		send_bytes(p, (int)info->channel, buf, n);
}

/* Sends m to every admitted peer: encoded once. Returns the bytes of one copy. */
static size_t broadcast_msg(struct gs_server *s, const struct cc_wire_msg *m)
{
	uint8_t buf[CC_WIRE_MAX_PACKET];
	const struct cc_wire_msg_info *info = cc_wire_msg_info(m->id);
	size_t n = info ? encode(m, buf, sizeof buf) : 0;
	for (int i = 0; n && i < GS_MATCH_MAX_SLOTS; i++)
		send_bytes(s->by_slot[i], (int)info->channel, buf, n);
	/* Spectators get the very same bytes (issue 12: the same snapshots and events). */
	for (int i = 0; n && i < s->n_spectators; i++)
		send_bytes(s->spectators[i], (int)info->channel, buf, n);
	return n;
}

/* The snapshot of tick we sent lately, or NULL. */
static const struct cc_wire_snapshot *history_find(const struct gs_server *s, uint32_t tick)
{
	for (uint64_t k = 0; k < SNAP_HISTORY && k < s->n_history; k++) {
		const struct cc_wire_snapshot *h = &s->history[(s->n_history - 1 - k) % SNAP_HISTORY];
		if (h->tick == tick)
			return h;
	}
	return NULL;
}

/*
 * Sends this tick's snapshot m (full, encoded once as full/n_full) to p: as
 * a delta against the newest snapshot p acknowledged when we still hold it
 * and the delta is smaller, else full. Returns the bytes sent.
 */
static size_t send_snapshot(struct gs_server *s, struct peer *p, const struct cc_wire_msg *m, const uint8_t *full,
			    size_t n_full)
{
	if (!p || !p->enet)
		return 0;
	const struct cc_wire_snapshot *base = p->acked_tick ? history_find(s, p->acked_tick) : NULL;
	if (base) {
		static struct cc_wire_msg d; /* a few KB; the tick thread is the only user */
		uint8_t buf[CC_WIRE_MAX_PACKET];
		size_t n = 0;
		d.id = CC_MSG_SNAPSHOT_DELTA;
		if (cc_wire_delta_encode(base, &m->u.snapshot, &d.u.snapshot_delta) == 0 &&
		    (n = encode(&d, buf, sizeof buf)) > 0 && n < n_full) {
			send_bytes(p, GS_CH_SNAPSHOT, buf, n);
			p->deltas++;
			return n;
		}
	}
	send_bytes(p, GS_CH_SNAPSHOT, full, n_full);
	p->fulls++;
	return n_full;
}

/* snapshot_ack: p holds the snapshot of tick. Only a newer one we still hold moves its base. */
static void on_snapshot_ack(struct gs_server *s, struct peer *p, uint32_t tick)
{
	if (!history_find(s, tick) || (p->acked_tick && (int32_t)(tick - p->acked_tick) <= 0))
		return;
	p->acked_tick = tick;
}

/* ---- peers -------------------------------------------------------------------- */

/* Queues a disconnect receipt for an admitted peer that is leaving. */
static void report_disconnect(struct gs_server *s, struct peer *p, const char *reason)
{
	if (p->phase != PEER_PLAYING || !s->reporter || s->closing_ms)
		return; /* closing: the result, already posted, closes every connection still open (cc-api) */
	cc_reporter_disconnect(s->reporter, p->who.player_id, reason);
}

/* player_info for slot as it stands: connected (a peer holds it), bot (a bot drives its ship). */
static void slot_info(const struct gs_server *s, int slot, int team, struct cc_wire_msg *m)
{
	memset(m, 0, sizeof *m);
	m->id = CC_MSG_PLAYER_INFO;
	m->u.player_info.slot = (uint8_t)slot;
	m->u.player_info.team = (uint8_t)team;
	m->u.player_info.flags = (uint8_t)((s->by_slot[slot] ? CC_WIRE_PI_CONNECTED : 0) |
					   (gs_match_driver(s->match, slot) == GS_DRIVER_BOT ? CC_WIRE_PI_BOT : 0));
}

/* Tells every player and spectator who holds slot (player_info, reliable). */
static void announce_slot(struct gs_server *s, int slot, int team)
{
	struct cc_wire_msg m;
	slot_info(s, slot, team, &m);
	(void)broadcast_msg(s, &m);
}

static void count_session(struct gs_server *s, const char *event)
{
	const char *labels[] = { event, NULL };
	cc_metric_add(s->m.sessions, labels, 1);
}

static int slot_team(const struct gs_server *s, int slot);

/* Hands slot's ship to a bot (casual) or parks it (ranked: no bots). */
static void vacate_ship(struct gs_server *s, int slot, const char *why)
{
	enum gs_driver d = s->opts.bots ? GS_DRIVER_BOT : GS_DRIVER_NONE;
	if (gs_match_driver(s->match, slot) == d)
		return;
	gs_match_set_driver(s->match, slot, d);
	if (d == GS_DRIVER_BOT)
		s->bot_played[slot] = true;
	count_session(s, d == GS_DRIVER_BOT ? "bot_took_slot" : "slot_parked");
	cc_log_info(d == GS_DRIVER_BOT ? "bot_took_slot" : "slot_parked", CC_LOG_INT("slot", slot),
		    CC_LOG_STR("why", why), CC_LOG_INT("tick", gs_match_tick(s->match)));
	if (!s->freeing)
		announce_slot(s, slot, slot_team(s, slot));
}

/*
 * Forgets p: releases its slot, tells the match and the others, unlinks it
 * from ENet. The ENet peer itself is left to the caller (kick or
 * disconnect event).
 */
static void detach(struct gs_server *s, struct peer *p)
{
	/* A displaced session's slot already belongs to its successor: nothing to give back. */
	bool was_playing = p->phase == PEER_PLAYING && !p->displaced && s->by_slot[p->who.slot] == p;
	if (was_playing) {
		int slot = p->who.slot;
		s->by_slot[slot] = NULL;
		/* The slot waits --slot-reserve-seconds for this identity; the ship stays in play, coasting. */
		s->left_ms[slot] = cc_clock_ms();
		if (s->admission && gs_admission_release(s->admission, p->id, s->left_ms[slot]) >= 0)
			count_session(s, "reserved");
		gs_match_driver_at_kickoff(s->match, slot, GS_DRIVER_NONE, true);
		if (gs_match_driver(s->match, slot) == GS_DRIVER_PLAYER)
			gs_match_set_driver(s->match, slot, GS_DRIVER_AWAY);
	}
	if (p->phase == PEER_SPECTATING) {
		for (int i = 0; i < s->n_spectators; i++)
			if (s->spectators[i] == p) {
				s->spectators[i] = s->spectators[--s->n_spectators];
				break;
			}
		if (p->ignored)
			cc_log_info("spectator_left", CC_LOG_INT("peer", p->id), CC_LOG_INT("ignored_messages", (int64_t)p->ignored));
	}
	if (p->deltas || p->fulls)
		cc_log_info("peer_snapshots", CC_LOG_INT("peer", p->id),
			    CC_LOG_INT("slot", p->phase == PEER_PLAYING ? p->who.slot : -1), CC_LOG_INT("deltas", (int64_t)p->deltas),
			    CC_LOG_INT("fulls", (int64_t)p->fulls));
	if (p->enet)
		p->enet->data = NULL;
	p->enet = NULL;
	if (was_playing && !s->freeing)
		announce_slot(s, p->who.slot, p->who.team);
	cc_metric_add(s->m.peers, NULL, -1);
	free(p);
}

/*
 * Kicks p with a wire reason (enum cc_wire_reason) and a detail: logged
 * "peer_kicked", sent as refused (before the handshake completed) or kicked
 * (after) on the control channel, then a disconnect once that is delivered
 * (ENet's disconnect_later; its data is the reason too). p is freed.
 */
static void kick(struct gs_server *s, struct peer *p, uint16_t reason, const char *detail)
{
	const char *name = cc_wire_reason_name(reason);
	cc_log_warn("peer_kicked", CC_LOG_INT("peer", p->id), CC_LOG_STR("addr", p->addr), CC_LOG_STR("reason", name),
		    CC_LOG_STR("detail", detail ? detail : ""), CC_LOG_INT("slot", p->phase == PEER_PLAYING ? p->who.slot : -1),
		    CC_LOG_STR("player_id", p->phase == PEER_PLAYING ? p->who.player_id : ""),
		    CC_LOG_INT("bad_messages", p->bad), CC_LOG_INT("unknown_messages", (int64_t)p->unknown));
	replay_verdict(s, p->id, "kicked %s: %s", name, detail ? detail : "");
	const char *labels[] = { name, NULL };
	cc_metric_add(s->m.kicks, labels, 1);
	struct cc_wire_msg m;
	gs_play_farewell(&m, p->phase != PEER_HELLO, reason, detail); /* a player or a spectator: kicked */
	send_msg(p, &m);
	report_disconnect(s, p, name);
	ENetPeer *e = p->enet;
	detach(s, p);
	if (e)
		cc_netsim_disconnect_later(s->sim, e, reason);
}

/* Counts one refused message; kicks past the threshold. Returns true when p was kicked (freed). */
static bool count_bad(struct gs_server *s, struct peer *p, const struct cc_wire_fault *f, size_t len)
{
	const char *kind = cc_wire_fault_name(f->kind);
	const char *labels[] = { kind, NULL };
	cc_metric_add(s->m.bad, labels, 1);
	p->bad++;
	replay_verdict(s, p->id, "refused %s: %s", kind, f->text);
	cc_log_debug("bad_message", CC_LOG_INT("peer", p->id), CC_LOG_STR("kind", kind), CC_LOG_INT("id", f->id),
		     CC_LOG_INT("bytes", (int64_t)len), CC_LOG_INT("count", p->bad), CC_LOG_STR("fault", f->text));
	if (p->bad > s->opts.max_bad_messages) {
		char detail[CC_WIRE_DETAIL_MAX + 1];
		snprintf(detail, sizeof detail, "%d bad messages, last: %.90s", p->bad, f->text);
		kick(s, p, CC_REASON_MALFORMED, detail);
		return true;
	}
	return false;
}

/* ---- limits and the server-stall grace ------------------------------------------- */

static bool in_grace(const struct gs_server *s, int64_t now_ms)
{
	return now_ms < s->grace_until_ms;
}

/*
 * The server's own lateness: running this far past the tick deadline next
 * means the process itself did not run (SIGSTOP, a page-in, CPU steal).
 * Checked right after each network service, so the grace is open before
 * the backlog that arrived meanwhile is handled. Logged once per deadline.
 */
static void note_stall(struct gs_server *s, int64_t next)
{
	s->service_ns = cc_clock_ns();
	int64_t late_ms = (s->service_ns - next) / 1000000;
	if (late_ms <= STALL_LOG_MS || s->stall_seen_next == next)
		return;
	s->stall_seen_next = next;
	s->grace_until_ms = cc_clock_ms() + s->opts.stall_grace_ms;
	cc_metric_add(s->m.stalls, NULL, 1);
	cc_log_warn("server_stalled", CC_LOG_INT("late_ms", late_ms), CC_LOG_INT("tick", gs_match_tick(s->match)),
		    CC_LOG_INT("grace_ms", s->opts.stall_grace_ms));
}

/*
 * Charges p's leaky buckets for one packet of len bytes (anything it sends,
 * decodable or not, before or after its hello). Within both limits: true.
 * Over either: the packet is dropped (false), counted, written as one
 * rate_limited line per peer per window (its counts: drops since the
 * previous line), and the drop fills p->rate.over, which leaks at half the
 * packet limit and holds half a second of it: a peer that overflows it (persistently over the limit) is
 * kicked rate_limited (*kicked; p is freed), except during the server-stall
 * grace, when the backlog of honest packets arrives at once. The buckets
 * and the rate_limited line are gameserver/play.h's (community mode's too).
 */
static bool rate_ok(struct gs_server *s, struct peer *p, size_t len, bool *kicked)
{
	int64_t now = s->service_ns; /* no clock read per packet: the service that returned it just read it */
	*kicked = false;
	bool grace = in_grace(s, now / 1000000);
	const char *limit = "";
	char detail[96];
	enum gs_rate_verdict v = gs_rate_charge(&p->rate, &s->limits, len, now, grace, p->id, p->addr,
						p->phase == PEER_PLAYING ? p->who.slot : -1, &limit, detail, sizeof detail);
	if (v == GS_RATE_OK)
		return true;
	replay_verdict(s, p->id, "dropped rate_limited: over the %s limit (%zu bytes; %" PRIu64 " dropped so far%s)", limit,
		       len, p->rate.total, grace ? ", server-stall grace" : "");
	if (v == GS_RATE_KICK) {
		kick(s, p, CC_REASON_RATE_LIMITED, detail);
		*kicked = true;
	}
	return false;
}

/* Adds what p's input pipeline counted since the last call to the metrics. */
static void input_metrics(struct gs_server *s, struct peer *p)
{
	gs_play_input_metrics(s->m.input, &p->input, &p->reported);
}

/* ---- the handshake ---------------------------------------------------------------- */

/* The welcome for p (slot/team 255 for a spectator), with its resume key (zero for a spectator). */
static void send_welcome(struct gs_server *s, struct peer *p, int slot, int team, const uint8_t *resume_key)
{
	struct cc_wire_msg m;
	memset(&m, 0, sizeof m);
	m.id = CC_MSG_WELCOME;
	struct cc_wire_welcome *w = &m.u.welcome;
	w->protocol_version = GS_PROTOCOL_VERSION;
	w->tick_rate = CC_WIRE_TICK_RATE;
	w->snapshot_rate = (uint16_t)(CC_WIRE_TICK_RATE / s->opts.snapshot_interval);
	w->mode = CC_WIRE_MODE_ALLOCATED;
	w->slot = (uint8_t)slot;
	w->team = (uint8_t)team;
	w->max_players = (uint8_t)gs_match_sim(s->match)->ship_count;
	w->max_inputs = CC_WIRE_MAX_INPUTS;
	w->match_state = (uint8_t)gs_match_state(s->match);
	w->server_tick = gs_match_tick(s->match);
	if (resume_key)
		memcpy(w->resume_key, resume_key, sizeof w->resume_key);
	w->arena_len = (uint16_t)strlen(s->opts.arena);
	snprintf(w->arena, sizeof w->arena, "%s", s->opts.arena);
	send_msg(p, &m);
	/* Every other slot that is held or bot-driven, to the newcomer. */
	for (int i = 0; i < GS_MATCH_MAX_SLOTS; i++) {
		if (s->by_slot[i] == p || (!s->by_slot[i] && gs_match_driver(s->match, i) != GS_DRIVER_BOT))
			continue;
		struct cc_wire_msg pi;
		slot_info(s, i, slot_team(s, i), &pi);
		send_msg(p, &pi);
	}
}

/* The hello, spectate or resume fields every handshake checks first; false when p was kicked. */
static bool handshake_ok(struct gs_server *s, struct peer *p, uint16_t version, uint16_t tick_rate)
{
	char detail[64];
	if (version != GS_PROTOCOL_VERSION) {
		snprintf(detail, sizeof detail, "server speaks protocol %d, client %u", GS_PROTOCOL_VERSION, (unsigned)version);
		kick(s, p, CC_REASON_PROTOCOL_MISMATCH, detail);
		return false;
	}
	if (tick_rate != CC_WIRE_TICK_RATE) {
		snprintf(detail, sizeof detail, "server ticks at %d Hz, client %u", CC_WIRE_TICK_RATE, (unsigned)tick_rate);
		kick(s, p, CC_REASON_TICK_RATE_MISMATCH, detail);
		return false;
	}
	return true;
}

/*
 * p was admitted to who.slot (hello or resume). Its ship: a resumed player
 * whose ship is still in play (away, or a live session taken over) drives
 * it again at once; before the match leaves LOADING everyone is in at
 * once; anyone else (a late joiner, a no-show arriving, a player back
 * after the reservation lapsed) enters at the next kickoff, the bot (or
 * the parked ship) holding the slot until then.
 */
static void admitted(struct gs_server *s, struct peer *p, const struct gs_admit *who)
{
	/* Spectators on this player's token: it plays now (a join token plays or watches, never both). */
	for (int i = s->n_spectators - 1; i >= 0; i--)
		if (s->spectators[i]->watch_slot == who->slot)
			kick(s, s->spectators[i], CC_REASON_DUPLICATE_SESSION, "the token's player joined on another connection");
	p->phase = PEER_PLAYING;
	p->who = *who;
	s->by_slot[who->slot] = p;
	gs_input_state_init(&p->input, &s->opts.input);
	p->reported = p->input;
	enum gs_driver d = gs_match_driver(s->match, who->slot);
	bool now = gs_match_state(s->match) == CC_MATCH_LOADING ||
		   (who->resumed && (d == GS_DRIVER_AWAY || d == GS_DRIVER_PLAYER));
	if (now) {
		gs_match_driver_at_kickoff(s->match, who->slot, GS_DRIVER_NONE, true);
		if (d == GS_DRIVER_PLAYER)
			gs_match_set_driver(s->match, who->slot, GS_DRIVER_AWAY); /* taken over: drop the old session's last input */
		gs_match_set_driver(s->match, who->slot, GS_DRIVER_PLAYER);
	} else {
		gs_match_driver_at_kickoff(s->match, who->slot, GS_DRIVER_PLAYER, false);
	}
	count_session(s, who->resumed ? "resumed" : now ? "joined" : "joined_late");
	cc_log_info("peer_admitted", CC_LOG_INT("peer", p->id), CC_LOG_STR("addr", p->addr), CC_LOG_INT("slot", who->slot),
		    CC_LOG_INT("team", who->team), CC_LOG_STR("player_id", who->player_id),
		    CC_LOG_INT("generation", who->generation), CC_LOG_BOOL("resumed", who->resumed),
		    CC_LOG_BOOL("enters_at_kickoff", !now), CC_LOG_INT("tick", gs_match_tick(s->match)));
	send_welcome(s, p, who->slot, who->team, who->resume_key);
	announce_slot(s, who->slot, who->team);
	if (s->reporter) {
		/* Unique per connection: this process's nonce and the peer's number. */
		char connection_id[64];
		snprintf(connection_id, sizeof connection_id, "gs-%s-%" PRIu64, s->nonce, p->id);
		cc_reporter_connect(s->reporter, who->player_id, connection_id);
	}
}

static void on_hello(struct gs_server *s, struct peer *p, const struct cc_wire_hello *h)
{
	if (!handshake_ok(s, p, h->protocol_version, h->tick_rate))
		return;
	if (h->auth != CC_WIRE_AUTH_TOKEN || !s->admission) {
		kick(s, p, CC_REASON_WRONG_MODE, "allocated mode admits only roster players with a join token");
		return;
	}
	struct gs_admit who;
	const char *refusal = "malformed";
	int rc = gs_admission_admit(s->admission, h->credential, (int64_t)time(NULL), cc_clock_ms(), p->id, &who, &refusal);
	if (rc != 0) {
		kick(s, p, gs_wire_reason_for_refusal(refusal), refusal);
		return;
	}
	if (s->by_slot[who.slot] && s->by_slot[who.slot] != p) {
		/* The admission's holder table says free but a peer sits there: our bug; refuse rather than alias. */
		kick(s, p, CC_REASON_TOKEN_REPLAYED, "slot held");
		return;
	}
	admitted(s, p, &who);
}

/* resume (issue 12): the same identity and its session's key take back a reserved (or live) slot. */
static void on_resume(struct gs_server *s, struct peer *p, const struct cc_wire_resume *r)
{
	if (!handshake_ok(s, p, r->protocol_version, r->tick_rate))
		return;
	if (r->auth != CC_WIRE_AUTH_TOKEN || !s->admission) {
		kick(s, p, CC_REASON_RESUME_REFUSED, "allocated mode resumes only with the same player's join token");
		return;
	}
	struct gs_admit who;
	uint64_t displaced = 0;
	const char *refusal = "malformed", *detail = "";
	int rc = gs_admission_resume(s->admission, r->credential, r->resume_key, (int64_t)time(NULL), cc_clock_ms(), p->id,
				     &who, &displaced, &refusal, &detail);
	if (rc != 0) {
		count_session(s, "resume_refused");
		kick(s, p, rc == CC_ECONFLICT ? CC_REASON_RESUME_REFUSED : gs_wire_reason_for_refusal(refusal), detail);
		return;
	}
	struct peer *old = s->by_slot[who.slot];
	if (old && old != p) {
		/* The older session of the same player is still live (its drop not noticed yet): it is closed. */
		old->displaced = true;
		count_session(s, "taken_over");
		kick(s, old, CC_REASON_DUPLICATE_SESSION, "the same player resumed on another connection");
		s->by_slot[who.slot] = NULL;
	}
	(void)displaced; /* the admission's view of old; by_slot is the server's */
	admitted(s, p, &who);
}

/*
 * spectate (issue 12): allocated mode admits a spectator with a join token
 * of this match (verified, no slot taken) or, unless ranked, with a display
 * name (the `name` rules, checked by the decoder), up to --max-spectators
 * (0: none). A name in ranked is refused wrong_mode.
 */
static void on_spectate(struct gs_server *s, struct peer *p, const struct cc_wire_hello *h)
{
	if (!handshake_ok(s, p, h->protocol_version, h->tick_rate))
		return;
	if (h->auth != CC_WIRE_AUTH_TOKEN && !s->opts.spectators_by_name) {
		/* Ranked: a stranger watching live could relay positions to one side (ghosting). */
		kick(s, p, CC_REASON_WRONG_MODE, "this match admits spectators with a join token of this match only");
		return;
	}
	int slot = -1;
	if (h->auth == CC_WIRE_AUTH_TOKEN) {
		const char *refusal = "malformed";
		if (!s->admission || gs_admission_verify(s->admission, h->credential, (int64_t)time(NULL), &slot, &refusal) != 0) {
			kick(s, p, gs_wire_reason_for_refusal(refusal), refusal);
			return;
		}
		/* A join token plays or watches, never both at once (protocol section 10). */
		if (slot >= 0 && slot < GS_MATCH_MAX_SLOTS && s->by_slot[slot]) {
			kick(s, p, CC_REASON_TOKEN_REPLAYED, "the token's slot is being played: a join token plays or watches, not both");
			return;
		}
	}
	if (s->n_spectators >= s->opts.max_spectators || s->n_spectators >= GS_MAX_SPECTATORS) {
		char detail[64];
		snprintf(detail, sizeof detail, "%d of %d spectators", s->n_spectators, s->opts.max_spectators);
		count_session(s, "spectator_refused");
		kick(s, p, CC_REASON_SPECTATORS_FULL, detail);
		return;
	}
	p->phase = PEER_SPECTATING;
	p->ignored = 0; /* from here on: what the spectator sent besides ping */
	p->watch_slot = slot;
	s->spectators[s->n_spectators++] = p;
	count_session(s, "spectator");
	cc_log_info("spectator_admitted", CC_LOG_INT("peer", p->id), CC_LOG_STR("addr", p->addr),
		    CC_LOG_STR("auth", h->auth == CC_WIRE_AUTH_TOKEN ? "token" : "name"),
		    CC_LOG_INT("spectators", s->n_spectators));
	send_welcome(s, p, CC_WIRE_SLOT_NONE, CC_WIRE_TEAM_NONE, NULL);
}

/* ---- receiving ------------------------------------------------------------------ */

static void on_packet(struct gs_server *s, struct peer *p, int channel, const uint8_t *data, size_t len)
{
	struct cc_wire_msg m;
	struct cc_wire_fault f;
	uint16_t version;
	/* A hello of another version may not decode as ours: refuse it by the version alone. */
	if (p->phase == PEER_HELLO && cc_wire_peek_hello_version(data, len, &version) && version != GS_PROTOCOL_VERSION) {
		char detail[64];
		snprintf(detail, sizeof detail, "server speaks protocol %d, client %u", GS_PROTOCOL_VERSION, (unsigned)version);
		kick(s, p, CC_REASON_PROTOCOL_MISMATCH, detail);
		return;
	}
	int rc = cc_wire_decode_from(data, len, CC_WIRE_TO_SERVER, (uint8_t)channel, &m, &f);
	if (rc == CC_ENOTFOUND) {
		/* Unknown ids are skipped in every phase (protocol section 8): a newer client may send what we do not know yet. */
		p->unknown++;
		cc_metric_add(s->m.unknown, NULL, 1);
		replay_verdict(s, p->id, "skipped unknown: id 0x%04x (%zu bytes)", f.id, len);
		if (p->unknown == 1)
			cc_log_info("unknown_message", CC_LOG_INT("peer", p->id), CC_LOG_INT("id", f.id),
				    CC_LOG_INT("bytes", (int64_t)len), CC_LOG_STR("phase", p->phase == PEER_HELLO ? "handshake" : "session"));
		return;
	}
	if (p->phase == PEER_HELLO) {
		/*
		 * Before welcome (protocol section 8): a faulty packet ends the handshake at once; hello, spectate and
		 * resume are the handshake; ping is answered; any other message is ignored (an input sent right after
		 * the hello travels on another channel and may overtake it). A peer that never says hello is refused
		 * handshake_timeout by the tick.
		 */
		if (rc != 0) {
			replay_verdict(s, p->id, "refused %s: %s", cc_wire_fault_name(f.kind), f.text);
			kick(s, p, CC_REASON_MALFORMED, f.text);
			return;
		}
		if ((m.id == CC_MSG_HELLO || m.id == CC_MSG_RESUME || m.id == CC_MSG_SPECTATE) && s->called_off) {
			kick(s, p, CC_REASON_SHUTTING_DOWN, "match called off");
			return;
		}
		if ((m.id == CC_MSG_HELLO || m.id == CC_MSG_RESUME || m.id == CC_MSG_SPECTATE) && s->ended) {
			kick(s, p, CC_REASON_MATCH_OVER, "the match is over");
			return;
		}
		switch (m.id) {
		case CC_MSG_HELLO:
			on_hello(s, p, &m.u.hello);
			return;
		case CC_MSG_RESUME:
			on_resume(s, p, &m.u.resume);
			return;
		case CC_MSG_SPECTATE:
			on_spectate(s, p, &m.u.spectate);
			return;
		case CC_MSG_PING:
			break; /* answered below, as in a session */
		default:
			replay_verdict(s, p->id, "ignored %s: before the handshake", cc_wire_msg_name(m.id));
			if (p->ignored++ == 0)
				cc_log_info("message_before_handshake_ignored", CC_LOG_INT("peer", p->id),
					    CC_LOG_STR("message", cc_wire_msg_name(m.id)));
			return;
		}
	}
	if (p->phase == PEER_SPECTATING && rc == 0 && m.id == CC_MSG_SNAPSHOT_ACK) {
		on_snapshot_ack(s, p, m.u.snapshot_ack.tick); /* a spectator's snapshots are deltas too */
		return;
	}
	if (p->phase == PEER_SPECTATING && rc == 0 && m.id != CC_MSG_PING) {
		/* A spectator only watches: anything but ping is counted and dropped. */
		replay_verdict(s, p->id, "ignored %s: a spectator only watches", cc_wire_msg_name(m.id));
		if (p->ignored++ == 0)
			cc_log_info("spectator_message_ignored", CC_LOG_INT("peer", p->id),
				    CC_LOG_STR("message", cc_wire_msg_name(m.id)));
		return;
	}
	if (rc != 0) {
		(void)count_bad(s, p, &f, len);
		return;
	}
	switch (m.id) {
	case CC_MSG_INPUT:
		if (p->phase == PEER_PLAYING)
			gs_input_receive(&p->input, &m.u.input);
		break;
	case CC_MSG_SNAPSHOT_ACK:
		on_snapshot_ack(s, p, m.u.snapshot_ack.tick);
		break;
	case CC_MSG_PING: {
		struct cc_wire_msg pong;
		gs_play_pong(&pong, m.u.ping.client_time, gs_match_tick(s->match), cc_clock_ns(), s->next_tick_ns);
		send_msg(p, &pong);
		break;
	}
	case CC_MSG_HELLO:
	case CC_MSG_SPECTATE:
	case CC_MSG_RESUME: {
		struct cc_wire_fault again = { .kind = CC_WIRE_FAULT_MALFORMED, .id = m.id };
		snprintf(again.text, sizeof again.text, "%s: a second handshake on an admitted session", cc_wire_msg_name(m.id));
		(void)count_bad(s, p, &again, len);
		break;
	}
	default:
		/* The lobby messages belong to community mode: ignored here. */
		replay_verdict(s, p->id, "ignored %s: not served here", cc_wire_msg_name(m.id));
		cc_log_debug("message_ignored", CC_LOG_INT("peer", p->id), CC_LOG_STR("message", cc_wire_msg_name(m.id)));
		break;
	}
}

/* ---- the tick -------------------------------------------------------------------- */

struct event_ctx {
	struct gs_server *s;
};

/*
 * The result (contracts/v1/openapi.json MatchResultRequest): score, the
 * time played (PLAYING and OVERTIME ticks: stoppages excluded) and every
 * roster player once, with the goals the server credited them.
 */
static void post_result(struct gs_server *s, const int score[2])
{
	if (!s->reporter)
		return;
	const struct cc_match *life = gs_match_lifecycle(s->match);
	char body[4096];
	size_t off = (size_t)snprintf(body, sizeof body, "{\"score\":[%d,%d],\"duration_seconds\":%u,\"players\":[",
				      score[0], score[1], (life->playing_ticks + life->overtime_ticks) / 60);
	const struct cc_roster *r = s->admission ? gs_admission_roster(s->admission) : NULL;
	for (size_t i = 0; r && i < r->count && off < sizeof body; i++) {
		const struct cc_roster_entry *e = &r->entries[i];
		off += (size_t)snprintf(body + off, sizeof body - off,
					"%s{\"player_id\":\"%s\",\"team\":%d,\"goals\":%d,\"assists\":0,\"saves\":0,\"shots\":0%s}",
					i ? "," : "", e->player_id, e->team,
					e->slot >= 0 && e->slot < GS_MATCH_MAX_SLOTS ? s->goals[e->slot] : 0,
					/* A bot drove this slot at some time: recorded, never rated (cc-api). */
					e->slot >= 0 && e->slot < GS_MATCH_MAX_SLOTS && s->bot_played[e->slot] ? ",\"bot\":true" : "");
	}
	/* Players a backfill replaced: listed for the part they played, their slot marked bot (never rated). */
	for (int i = 0; r && i < s->n_former && off < sizeof body; i++)
		off += (size_t)snprintf(body + off, sizeof body - off,
					",{\"player_id\":\"%s\",\"team\":%d,\"goals\":%d,\"assists\":0,\"saves\":0,\"shots\":0,\"bot\":true}",
					s->former[i].player_id, s->former[i].team, s->former[i].goals);
	if (off < sizeof body)
		snprintf(body + off, sizeof body - off, "]}");
	cc_reporter_post(s->reporter, "result", body, s->opts.result_deadline_ms > 0 ? s->opts.result_deadline_ms : 60000);
}

/*
 * The connect window is over with n roster players who never connected
 * (ids: their quoted ids, comma-separated): POST no_show {player_ids}
 * (behind the connect receipts of those who came: one FIFO, so cc-api's
 * durable "never connected" agrees). Ranked calls the match off after this
 * tick's step; casual plays on with bots.
 */
static void report_no_show(struct gs_server *s, const char *ids, int n)
{
	char body[2100];
	snprintf(body, sizeof body, "{\"player_ids\":[%s]}", ids);
	cc_log_warn("no_show", CC_LOG_INT("players", n), CC_LOG_STR("player_ids", ids),
		    CC_LOG_INT("tick", gs_match_tick(s->match)), CC_LOG_BOOL("calls_off", s->opts.call_off_on_no_show));
	if (s->reporter)
		(void)cc_reporter_post(s->reporter, "no_show", body,
				       s->opts.result_deadline_ms > 0 ? s->opts.result_deadline_ms : 60000);
	if (s->opts.call_off_on_no_show)
		s->no_show_call_off = true;
}

/* The team of a roster slot, or -1. */
static int slot_team(const struct gs_server *s, int slot)
{
	const struct cc_roster *r = s->admission ? gs_admission_roster(s->admission) : NULL;
	for (size_t i = 0; r && i < r->count; i++)
		if (r->entries[i].slot == slot)
			return r->entries[i].team;
	return -1;
}

static void on_event(void *ctx, const struct gs_event *ev)
{
	struct gs_server *s = ((struct event_ctx *)ctx)->s;
	uint32_t tick = gs_match_tick(s->match);
	struct cc_wire_msg m;
	gs_play_event_msg(&m, s->match, ev); /* the wire message; the side effects below are allocated mode's */
	switch (ev->kind) {
	case GS_EVENT_STATE:
		if (!s->loading_over && ev->state != CC_MATCH_LOADING) {
			/* LOADING ended: a roster slot nobody took is a no-show (casual: a bot plays it). */
			s->loading_over = true;
			const struct cc_roster *r = s->admission ? gs_admission_roster(s->admission) : NULL;
			char ids[2048];
			size_t off = 0;
			int n = 0;
			for (size_t i = 0; r && i < r->count; i++)
				if (!s->by_slot[r->entries[i].slot] &&
				    gs_match_driver(s->match, r->entries[i].slot) == GS_DRIVER_NONE) {
					/* Never connected to this server (one who came and left is AWAY, not NONE). */
					if (off < sizeof ids)
						off += (size_t)snprintf(ids + off, sizeof ids - off, "%s\"%s\"", n ? "," : "",
									r->entries[i].player_id);
					n++;
					if (!s->opts.call_off_on_no_show)
						vacate_ship(s, r->entries[i].slot, "no_show");
				}
			if (n > 0)
				report_no_show(s, ids, n);
		}
		cc_log_info("match_state", CC_LOG_INT("tick", tick), CC_LOG_STR("state", gs_wire_state_name(ev->state)));
		break;
	case GS_EVENT_GOAL:
		/* The last toucher scores unless it was an own goal (then nobody does). */
		if (ev->slot >= 0 && ev->slot < GS_MATCH_MAX_SLOTS && slot_team(s, ev->slot) == ev->team)
			s->goals[ev->slot]++;
		cc_log_info("goal", CC_LOG_INT("tick", tick), CC_LOG_INT("team", ev->team), CC_LOG_INT("slot", ev->slot),
			    CC_LOG_INT("score_0", ev->score[0]), CC_LOG_INT("score_1", ev->score[1]));
		break;
	case GS_EVENT_KICKOFF:
		s->kicked_off = true;
		cc_log_info("kickoff", CC_LOG_INT("tick", tick), CC_LOG_INT("score_0", gs_match_lifecycle(s->match)->score[0]),
			    CC_LOG_INT("score_1", gs_match_lifecycle(s->match)->score[1]));
		break;
	case GS_EVENT_ENDED:
		cc_log_info("match_ended", CC_LOG_INT("tick", tick), CC_LOG_INT("score_0", ev->score[0]),
			    CC_LOG_INT("score_1", ev->score[1]), CC_LOG_BOOL("overtime", ev->overtime),
			    CC_LOG_INT("winner", ev->winner), CC_LOG_STR("reason", ev->end_reason ? ev->end_reason : ""));
		post_result(s, ev->score);
		s->ended = true;
		s->ended_ms = cc_clock_ms();
		break;
	}
	if (m.id)
		(void)broadcast_msg(s, &m);
}

/*
 * Calls the match off (server.h): every peer kicked shutting_down (players'
 * disconnect receipts queued), the simulation stopped; the run loop returns
 * GS_RUN_CALLED_OFF after the end linger.
 */
static void call_off(struct gs_server *s, const char *why, const char *match_state)
{
	int kicked = 0;
	char detail[96];
	snprintf(detail, sizeof detail, "match called off: %s",
		 strcmp(why, "no_show") == 0 ? "a ranked player never connected" : "the control plane ended it");
	s->called_off = why;
	s->called_off_ms = cc_clock_ms();
	for (size_t i = 0; i < s->host->peerCount; i++) {
		struct peer *p = s->host->peers[i].data;
		if (p) {
			kick(s, p, CC_REASON_SHUTTING_DOWN, detail);
			kicked++;
		}
	}
	cc_log_warn("match_called_off", CC_LOG_STR("reason", why), CC_LOG_STR("match_state", match_state),
		    CC_LOG_INT("tick", gs_match_tick(s->match)), CC_LOG_STR("state", gs_wire_state_name(gs_match_state(s->match))),
		    CC_LOG_INT("peers_kicked", kicked));
}

const char *gs_server_called_off(const struct gs_server *s)
{
	return s->called_off ? s->called_off : "";
}

/*
 * Casual backfill (SPEC 9, issue 26): the slot's player left for good (its
 * reservation lapsed, nobody holds it): POST vacated {player_id, slot,
 * generation, remaining_seconds} so cc-api can offer the slot to a queued
 * player. The bot keeps the ship until a newcomer's roster arrives.
 */
static void report_vacated(struct gs_server *s, int slot)
{
	const struct cc_roster *r = s->admission ? gs_admission_roster(s->admission) : NULL;
	const struct cc_match *life = gs_match_lifecycle(s->match);
	for (size_t i = 0; r && s->reporter && i < r->count; i++) {
		const struct cc_roster_entry *e = &r->entries[i];
		if (e->slot != slot)
			continue;
		char body[256];
		snprintf(body, sizeof body, "{\"player_id\":\"%s\",\"slot\":%d,\"generation\":%lld,\"remaining_seconds\":%u}",
			 e->player_id, slot, (long long)e->generation, life->remaining_ticks / CC_WIRE_TICK_RATE);
		cc_log_info("slot_vacated", CC_LOG_INT("slot", slot), CC_LOG_STR("player_id", e->player_id),
			    CC_LOG_INT("generation", e->generation), CC_LOG_INT("remaining_seconds", life->remaining_ticks / CC_WIRE_TICK_RATE));
		(void)cc_reporter_post(s->reporter, "vacated", body, 30000);
		s->vacated_ms[slot] = cc_clock_ms();
	}
}

/*
 * Repeats the vacated report of every slot still vacated (no holder, a bot
 * driving) every GS_VACATED_REPEAT_MS: cc-api expires an offer nobody
 * answered and offers the slot to the next queued ticket, or to one that
 * queued since.
 */
#define GS_VACATED_REPEAT_MS 12000
static void repeat_vacated(struct gs_server *s, int64_t now)
{
	for (int slot = 0; slot < GS_MATCH_MAX_SLOTS; slot++) {
		if (!s->vacated_ms[slot])
			continue;
		if (s->by_slot[slot] || s->ended || gs_match_driver(s->match, slot) != GS_DRIVER_BOT)
			s->vacated_ms[slot] = 0;
		else if (now - s->vacated_ms[slot] >= GS_VACATED_REPEAT_MS)
			report_vacated(s, slot);
	}
}

int gs_server_reload_roster(struct gs_server *s, const struct cc_roster *next)
{
	bool changed[CC_ROSTER_MAX_ENTRIES];
	uint64_t holders[CC_ROSTER_MAX_ENTRIES];
	if (!s->admission)
		return CC_EINVAL;
	struct cc_roster before = *gs_admission_roster(s->admission);
	int rc = gs_admission_reload(s->admission, next, changed, holders);
	if (rc != 0) {
		cc_log_warn("roster_reload_refused", CC_LOG_STR("why", "not a later roster of this match, server and slots"));
		return rc;
	}
	for (int slot = 0; slot < CC_ROSTER_MAX_ENTRIES && slot < GS_MATCH_MAX_SLOTS; slot++) {
		if (!changed[slot])
			continue;
		const struct cc_roster_entry *old = NULL, *now = NULL;
		for (size_t i = 0; i < before.count; i++)
			if (before.entries[i].slot == slot)
				old = &before.entries[i];
		for (size_t i = 0; i < next->count; i++)
			if (next->entries[i].slot == slot)
				now = &next->entries[i];
		if (old && strcmp(old->player_id, now->player_id) != 0 &&
		    s->n_former < (int)(sizeof s->former / sizeof s->former[0])) {
			struct former *f = &s->former[s->n_former++];
			snprintf(f->player_id, sizeof f->player_id, "%s", old->player_id);
			f->team = old->team;
			f->goals = s->goals[slot];
			s->goals[slot] = 0; /* from here on the newcomer's */
		}
		struct peer *p = s->by_slot[slot];
		if (p && holders[slot] == p->id)
			kick(s, p, CC_REASON_NOT_IN_ROSTER, "this slot was given to another player");
		s->vacated_ms[slot] = 0; /* filled: no more reports */
		count_session(s, "backfilled");
		cc_log_info("slot_reassigned", CC_LOG_INT("slot", slot), CC_LOG_STR("player_id", now->player_id),
			    CC_LOG_INT("generation", now->generation), CC_LOG_STR("replaced", old ? old->player_id : NULL),
			    CC_LOG_INT("tick", gs_match_tick(s->match)));
	}
	return 0;
}

/* One simulation tick: settle lapsed reservations, consume inputs, step, maybe snapshot, kick slow handshakes. */
static void tick(struct gs_server *s)
{
	if (s->called_off)
		return; /* nothing is simulated any more: the loop only delivers the kicks until the linger ends */
	for (int slot; s->admission && (slot = gs_admission_next_lapsed(s->admission, cc_clock_ms())) >= 0;) {
		/* Nobody came back in time: the ship goes to a bot (casual) or is parked (ranked). */
		cc_log_info("slot_reservation_lapsed", CC_LOG_INT("slot", slot), CC_LOG_INT("tick", gs_match_tick(s->match)),
			    CC_LOG_INT("away_ms", cc_clock_ms() - s->left_ms[slot]), CC_LOG_BOOL("player_back", s->by_slot[slot] != NULL));
		count_session(s, "lapsed");
		if (gs_match_driver(s->match, slot) == GS_DRIVER_AWAY)
			vacate_ship(s, slot, "reservation_lapsed");
		if (s->opts.bots && !s->by_slot[slot] && !s->ended)
			report_vacated(s, slot);
	}
	repeat_vacated(s, cc_clock_ms());
	int64_t now = cc_clock_ms();
	bool grace = in_grace(s, now);
	for (int i = 0; i < GS_MATCH_MAX_SLOTS; i++) {
		struct peer *p = s->by_slot[i];
		if (!p)
			continue;
		const struct gs_input *in = gs_input_next(&p->input);
		if (in)
			gs_match_input(s->match, i, in);
		input_metrics(s, p);
		/* Held too long: the player's input stopped. Not after the end (clients may stop), not in a grace. */
		if (s->stall_kick_ticks > 0 && p->input.dry_ticks > s->stall_kick_ticks && !grace && !s->ended) {
			char detail[64];
			snprintf(detail, sizeof detail, "no input for %" PRId64 " ms", (int64_t)p->input.dry_ticks * 1000 / TICK_HZ);
			kick(s, p, CC_REASON_INPUT_STALLED, detail);
		}
	}
	struct event_ctx ec = { .s = s };
	gs_match_step(s->match, on_event, &ec);
	uint32_t t = gs_match_tick(s->match);
	if (s->reporter) {
		/* Liveness: the heartbeat thread sends this when due, and only if the tick moved. */
		cc_reporter_heartbeat_set(s->reporter,
					  s->ended ? CC_REPORTER_PHASE_ENDED
					  : s->kicked_off ? CC_REPORTER_PHASE_PLAYING
							  : CC_REPORTER_PHASE_LOADING,
					  t);
	}
	if (s->no_show_call_off) {
		call_off(s, "no_show", "");
		return;
	}
	if (s->reporter) {
		char state[16];
		if (!s->ended && cc_reporter_match_over(s->reporter, state, sizeof state)) {
			call_off(s, "control_plane", state);
			return;
		}
	}
	/* Once a second, the tick and the monotonic time it was due: the clock pongs measure
	 * (tick + fraction past that time), so a test on this machine can check a client's estimate. */
	if (t % TICK_HZ == 0)
		cc_log_info("clock", CC_LOG_INT("tick", t), CC_LOG_INT("due_ns", s->next_tick_ns - TICK_NS));
	if (s->opts.snapshot_interval > 0 && t % (uint32_t)s->opts.snapshot_interval == 0) {
		bool connected[GS_MATCH_MAX_SLOTS] = { false };
		const struct gs_input_state *inputs[GS_MATCH_MAX_SLOTS] = { NULL };
		for (int i = 0; i < GS_MATCH_MAX_SLOTS; i++) {
			connected[i] = s->by_slot[i] != NULL;
			inputs[i] = s->by_slot[i] ? &s->by_slot[i]->input : NULL;
		}
		static struct cc_wire_msg m; /* a few KB; the tick thread is the only user */
		gs_wire_snapshot(&m, s->match, connected, inputs);
		for (uint16_t i = 0; i < m.u.snapshot.player_count; i++)
			if (gs_match_driver(s->match, m.u.snapshot.players[i].slot) == GS_DRIVER_BOT)
				m.u.snapshot.players[i].flags |= CC_WIRE_PF_BOT;
		/* Encoded once in full; each peer that acknowledges snapshots gets its own delta (issue 24). */
		uint8_t full[CC_WIRE_MAX_PACKET];
		size_t n = encode(&m, full, sizeof full), sent = 0;
		if (n) {
			s->history[s->n_history++ % SNAP_HISTORY] = m.u.snapshot;
			for (int i = 0; i < GS_MATCH_MAX_SLOTS; i++)
				sent += send_snapshot(s, s->by_slot[i], &m, full, n);
			for (int i = 0; i < s->n_spectators; i++)
				sent += send_snapshot(s, s->spectators[i], &m, full, n);
		}
		cc_metric_add(s->m.snapshot_bytes, NULL, (double)sent);
	}
	/* Slow handshakes: peers are few (max_peers), a scan per tick is cheap. A stall's time is not theirs. */
	for (size_t i = 0; !grace && i < s->host->peerCount; i++) {
		ENetPeer *e = &s->host->peers[i];
		struct peer *p = e->data;
		if (p && p->phase == PEER_HELLO && now - p->connected_ms > s->opts.handshake_timeout_ms)
			kick(s, p, CC_REASON_HANDSHAKE_TIMEOUT, "no hello in time");
	}
	cc_metric_add(s->m.ticks, NULL, 1);
	s->ticks_run++;
}

/*
 * A new connection. Silent peers (connected, no hello yet) cannot crowd
 * out an honest one: one address keeps at most --max-silent-per-address
 * of them (the oldest gives way), and when all --max-peers connections are
 * taken the oldest silent peer anywhere gives way; a silent peer younger
 * than IDLE_EVICT_MIN_MS never does (its hello may be in flight: an honest
 * client says hello one round trip after connecting). With nobody to
 * evict the newcomer is refused server_full. Evicted peers are refused
 * handshake_timeout (they said nothing in time for the room they held).
 */
static void on_connect(struct gs_server *s, ENetPeer *e)
{
	int64_t now = cc_clock_ms();
	int ours = 0, silent_same = 0;
	struct peer *old_same = NULL, *old_any = NULL;
	for (size_t i = 0; i < s->host->peerCount; i++) {
		struct peer *q = s->host->peers[i].data;
		if (!q || &s->host->peers[i] == e || q->phase == PEER_SPECTATING)
			continue; /* spectators have their own cap (--max-spectators) and room: never server_full for players */
		ours++;
		if (q->phase != PEER_HELLO || now - q->connected_ms < IDLE_EVICT_MIN_MS)
			continue;
		if (!old_any || q->connected_ms < old_any->connected_ms)
			old_any = q;
		if (s->host->peers[i].address.host == e->address.host) {
			silent_same++;
			if (!old_same || q->connected_ms < old_same->connected_ms)
				old_same = q;
		}
	}
	struct peer *p = calloc(1, sizeof *p);
	if (!p) {
		enet_peer_disconnect_now(e, 0);
		return;
	}
	p->server = s;
	p->enet = e;
	p->id = ++s->next_peer_id;
	p->phase = PEER_HELLO;
	p->connected_ms = now;
	peer_addr(e, p->addr, sizeof p->addr);
	e->data = p;
	int64_t ns = cc_clock_ns();
	gs_rate_init(&p->rate, &s->limits, ns); /* burst: one second's worth; the drops' bucket leaks at half the limit */
	cc_metric_add(s->m.peers, NULL, 1);
	cc_log_debug("peer_connected", CC_LOG_INT("peer", p->id), CC_LOG_STR("addr", p->addr));
	if (old_same && silent_same >= s->opts.max_silent_per_address) {
		if (old_any == old_same)
			old_any = NULL;
		kick(s, old_same, CC_REASON_HANDSHAKE_TIMEOUT, "silent while another connection from its address needed room");
		ours--;
	}
	if (ours < s->opts.max_peers)
		return;
	if (old_any) {
		kick(s, old_any, CC_REASON_HANDSHAKE_TIMEOUT, "silent while the server needed room");
		return;
	}
	kick(s, p, CC_REASON_SERVER_FULL, "no free connection");
}

static void on_disconnect(struct gs_server *s, ENetPeer *e)
{
	struct peer *p = e->data;
	if (!p)
		return; /* kicked earlier: already detached */
	cc_log_info("peer_left", CC_LOG_INT("peer", p->id), CC_LOG_STR("addr", p->addr),
		    CC_LOG_INT("slot", p->phase == PEER_PLAYING ? p->who.slot : -1),
		    CC_LOG_STR("player_id", p->phase == PEER_PLAYING ? p->who.player_id : ""));
	report_disconnect(s, p, "left");
	detach(s, p);
}

static void handle(struct gs_server *s, ENetEvent *ev)
{
	switch (ev->type) {
	case ENET_EVENT_TYPE_CONNECT:
		on_connect(s, ev->peer);
		break;
	case ENET_EVENT_TYPE_DISCONNECT:
		on_disconnect(s, ev->peer);
		break;
	case ENET_EVENT_TYPE_RECEIVE: {
		struct peer *p = ev->peer->data;
		bool kicked = false;
		gs_replay_packet(s->opts.replay, GS_REPLAY_IN, p ? p->id : 0, ev->channelID, ev->packet->data,
				 ev->packet->dataLength);
		if (!p)
			replay_verdict(s, 0, "dropped: from a peer already kicked (%zu bytes)", ev->packet->dataLength);
		else if (rate_ok(s, p, ev->packet->dataLength, &kicked)) /* over the limit: dropped, its verdict written */
			on_packet(s, p, ev->channelID, ev->packet->data, ev->packet->dataLength);
		enet_packet_destroy(ev->packet);
		break;
	}
	default:
		break;
	}
}

/*
 * The end linger is over (protocol section 6, end of a match): every peer,
 * player or spectator, is kicked match_over ("the match is over"), so its
 * ENet disconnect carries data 14, after the reliable kicked. No
 * disconnect receipts: the result closed the players' connections.
 */
static void close_finished(struct gs_server *s)
{
	int closed = 0;
	s->closing_ms = cc_clock_ms();
	for (size_t i = 0; i < s->host->peerCount; i++) {
		struct peer *p = s->host->peers[i].data;
		if (p) {
			kick(s, p, CC_REASON_MATCH_OVER, "the match is over");
			closed++;
		}
	}
	cc_log_info("match_closed", CC_LOG_INT("peers_closed", closed), CC_LOG_INT("tick", gs_match_tick(s->match)));
}

/* ENet peers still connected or still delivering their disconnect. */
static int open_connections(const struct gs_server *s)
{
	int n = 0;
	for (size_t i = 0; i < s->host->peerCount; i++)
		if (s->host->peers[i].state != ENET_PEER_STATE_DISCONNECTED && s->host->peers[i].state != ENET_PEER_STATE_ZOMBIE)
			n++;
	return n;
}

/* The loop's wake-ups over its ticks, logged once as it returns result. */
static int log_wakes(const struct gs_server *s, int result)
{
	gs_pace_log(&s->pace, s->ticks_run);
	return result;
}

/* pace.h's callbacks: a wake reads the clock and notes a stall; an event is handled. */
static void pace_woke(void *ctx, int64_t next)
{
	note_stall(ctx, next);
}

static void pace_event(void *ctx, ENetEvent *ev)
{
	handle(ctx, ev);
}

/*
 * The tick loop: sleep until the next tick is due (one wake per tick, not
 * one per packet), drain the network in one pass, tick, flush. A packet
 * arriving mid-tick waits in the socket for the next pass (at most a tick,
 * 16.7 ms). After a drain cut short by its bound (a flood) there is no
 * sleep: the loop keeps draining until the tick is due, as ticks come first.
 */
int gs_server_run(struct gs_server *s, bool (*stopping)(void *ctx), void *ctx)
{
	int64_t next = cc_clock_ns();
	while (!stopping(ctx)) {
		if (!gs_pace_wait(&s->pace, next))
			continue; /* a backlog drained before the deadline (or an early wake) */
		int64_t started = cc_clock_ns();
		note_stall(s, next);
		gs_pace_tick_started(&s->pace, next, started);
		int runs = 0;
		while (cc_clock_ns() >= next && runs < MAX_CATCH_UP) {
			next += TICK_NS;
			s->next_tick_ns = next;
			tick(s);
			runs++;
		}
		if (cc_clock_ns() >= next) {
			/* Too far behind: drop the backlog rather than fast-forward the match. */
			int64_t missed = (cc_clock_ns() - next) / TICK_NS + 1;
			cc_metric_add(s->m.missed, NULL, (double)missed);
			next = cc_clock_ns() + TICK_NS;
		}
		cc_netsim_flush(s->sim, s->host);
		cc_metric_observe(s->m.tick_seconds, NULL, (double)(cc_clock_ns() - started) / 1e9 / runs);
		if (!atomic_exchange(&s->ready, true))
			cc_log_info("ready", CC_LOG_DBL("ms_since_main", (double)(cc_clock_ns() - s->opts.started_ns) / 1e6));
		if (s->ended && cc_clock_ms() - s->ended_ms >= s->opts.end_linger_ms) {
			if (!s->closing_ms)
				close_finished(s);
			if (!open_connections(s) || cc_clock_ms() - s->closing_ms >= CLOSE_MS)
				return log_wakes(s, GS_RUN_ENDED);
		}
		if (s->called_off && cc_clock_ms() - s->called_off_ms >= s->opts.end_linger_ms)
			return log_wakes(s, GS_RUN_CALLED_OFF);
	}
	return log_wakes(s, GS_RUN_STOPPED);
}

bool gs_server_ready(void *server, char *why, size_t whylen)
{
	struct gs_server *s = server;
	if (!atomic_load(&s->ready)) {
		snprintf(why, whylen, "the tick loop has not run yet");
		return false;
	}
	return true;
}

int gs_server_port(const struct gs_server *s)
{
	return s->host->address.port;
}

struct gs_server *gs_server_create(const struct gs_server_options *opts, struct gs_admission *admission,
				   struct gs_match *match, struct cc_reporter *reporter)
{
	struct gs_server *s = calloc(1, sizeof *s);
	ENetAddress addr = { .port = (enet_uint16)opts->port };
	if (!s)
		goto out_fail;
	s->opts = *opts;
	uint8_t raw[8];
	cc_random_bytes(raw, sizeof raw);
	for (size_t i = 0; i < sizeof raw; i++)
		snprintf(s->nonce + 2 * i, 3, "%02x", raw[i]);
	s->admission = admission;
	s->match = match;
	s->reporter = reporter;
	if (enet_address_set_host_ip(&addr, opts->bind) != 0) {
		cc_log_error("start_failed", CC_LOG_STR("reason", "--bind is not an IPv4 address"));
		goto out_fail;
	}
	s->host = enet_host_create(&addr, (size_t)opts->max_peers + (size_t)opts->max_spectators + REFUSE_SPARE,
				   GS_CHANNELS, 0, 0);
	if (!s->host) {
		cc_log_error("start_failed", CC_LOG_STR("reason", "cannot bind the UDP game port"),
			     CC_LOG_STR("bind", opts->bind), CC_LOG_INT("port", opts->port));
		goto out_fail;
	}
	/* Caps on what one peer can make us hold: our largest message is far below these. */
	s->host->maximumPacketSize = 64 * 1024;
	s->host->maximumWaitingData = 256 * 1024;
	/*
	 * No per-address cap in ENet (duplicatePeers ignores a connect silently,
	 * so an honest player behind the same address as eight silent peers got
	 * a connect timeout): on_connect's silent-peer rules replace it and
	 * refuse with a reason. ENet's own peer timeout (5 s minimum, 30 s
	 * maximum, its defaults) is left alone: a server frozen for 2 s does
	 * not trip it on either side.
	 */
	s->host->duplicatePeers = ENET_PROTOCOL_MAXIMUM_PEER_ID;
	s->stall_kick_ticks = opts->input_stall_kick_ms > 0 ? (uint32_t)(opts->input_stall_kick_ms * TICK_HZ / 1000) : 0;
	if (opts->port == 0) {
		/* ENet does not read back an ephemeral port: ask the socket. */
		ENetAddress bound;
		if (enet_socket_get_address(s->host->socket, &bound) == 0)
			s->host->address.port = bound.port;
	}
	if (cc_netsim_active(&opts->netsim)) {
		s->sim = cc_netsim_create(s->host, &opts->netsim);
		if (!s->sim) {
			cc_log_error("start_failed", CC_LOG_STR("reason", "the network simulation: out of memory or a knob out of range"));
			goto out_fail;
		}
	}
	const char *reason_l[] = { "reason", NULL };
	const char *kind_l[] = { "kind", NULL };
	const char *event_l[] = { "event", NULL };
	static const double buckets[] = { 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.0167, 0.05 };
	s->m.ticks = cc_counter("cosmic_clash_gameserver_ticks_total", "Simulation ticks run.", NULL, 1);
	s->m.missed = cc_counter("cosmic_clash_gameserver_missed_ticks_total",
				 "Ticks skipped because the loop fell more than 5 ticks behind.", NULL, 1);
	s->m.kicks = cc_counter("cosmic_clash_gameserver_peers_kicked_total", "Peers kicked, by reason.", reason_l, 32);
	s->m.bad = cc_counter("cosmic_clash_gameserver_bad_messages_total",
			      "Truncated, oversized or misrouted messages, by kind.", kind_l, 16);
	s->m.unknown = cc_counter("cosmic_clash_gameserver_unknown_messages_total", "Messages with an unknown id, skipped.",
				  NULL, 1);
	s->m.tick_seconds = cc_histogram("cosmic_clash_gameserver_tick_duration_seconds", "CPU time of one tick.", NULL, 1,
					 buckets, CC_ARRAY_LEN(buckets));
	s->m.peers = cc_gauge("cosmic_clash_gameserver_peers", "Connected peers.", NULL, 1);
	const char *limit_l[] = { "limit", NULL };
	const char *outcome_l[] = { "outcome", NULL };
	/*
	 * Fine enough to see 1 ms steps below a tick (scripts/bench-density.sh reads its p99 against 3.3 ms, a
	 * fifth of a tick); 50 ms, 100 ms (a stall) and 1 s above it, as before.
	 */
	s->m.rl_packets = cc_counter("cosmic_clash_gameserver_rate_limited_packets_total",
				     "Packets dropped over a peer's packet or byte rate limit, by limit.", limit_l, 2);
	s->m.rl_bytes = cc_counter("cosmic_clash_gameserver_rate_limited_bytes_total",
				   "Bytes of the packets dropped over a peer's rate limits.", NULL, 1);
	s->m.input = cc_counter("cosmic_clash_gameserver_input_events_total",
				"Input pipeline events: held (ran dry), lost (gap given up), skipped (burst cut or drain), "
				"out_of_range (dropped by the sequence guard), resync.",
				outcome_l, 5);
	s->m.stalls = cc_counter("cosmic_clash_gameserver_server_stalls_total",
				 "Times the tick loop itself ran over 100 ms late (each opens the stall grace).", NULL, 1);
	gs_pace_init(&s->pace, s->host, s->sim, &s->service_ns, pace_woke, pace_event, s);
	s->m.sessions = cc_counter("cosmic_clash_gameserver_session_events_total",
				   "Slot and spectator events: reserved, resumed, taken_over, lapsed, bot_took_slot, spectator, ...",
				   event_l, 16);
	s->m.snapshot_bytes = cc_counter("cosmic_clash_gameserver_snapshot_bytes_total",
					 "Snapshot payload bytes sent, summed over the peers (snapshot or snapshot_delta).", NULL, 1);
	s->limits = (struct gs_rate_limits){ .pps = opts->peer_max_pps, .bps = opts->peer_max_bps,
					     .log_window_ms = opts->rate_log_window_ms, .m_packets = s->m.rl_packets,
					     .m_bytes = s->m.rl_bytes };
	return s;
out_fail:
	if (s && s->host)
		enet_host_destroy(s->host);
	gs_admission_free(admission);
	gs_match_free(match);
	free(s);
	return NULL;
}

void gs_server_free(struct gs_server *s)
{
	if (!s)
		return;
	s->freeing = true;
	if (s->host) {
		for (size_t i = 0; i < s->host->peerCount; i++) {
			ENetPeer *e = &s->host->peers[i];
			struct peer *p = e->data;
			if (p)
				detach(s, p);
			cc_netsim_forget_peer(s->sim, e);
			if (e->state == ENET_PEER_STATE_CONNECTED)
				enet_peer_disconnect_now(e, 0);
		}
		if (s->sim) {
			struct cc_netsim_stats st;
			cc_netsim_stats(s->sim, &st);
			cc_log_info("net_sim_stats", CC_LOG_INT("packets_out", (int64_t)st.packets[CC_NETSIM_OUT]),
				    CC_LOG_INT("packets_in", (int64_t)st.packets[CC_NETSIM_IN]),
				    CC_LOG_INT("dropped_out", (int64_t)st.dropped[CC_NETSIM_OUT]),
				    CC_LOG_INT("dropped_in", (int64_t)st.dropped[CC_NETSIM_IN]),
				    CC_LOG_INT("duplicated_out", (int64_t)st.duplicated[CC_NETSIM_OUT]),
				    CC_LOG_INT("duplicated_in", (int64_t)st.duplicated[CC_NETSIM_IN]),
				    CC_LOG_INT("retransmits_out", (int64_t)st.retransmits[CC_NETSIM_OUT]),
				    CC_LOG_INT("retransmits_in", (int64_t)st.retransmits[CC_NETSIM_IN]),
				    CC_LOG_INT("stale", (int64_t)st.stale), CC_LOG_INT("overflow", (int64_t)st.overflow));
			cc_netsim_free(s->sim);
		}
		enet_host_destroy(s->host);
	}
	gs_admission_free(s->admission);
	gs_match_free(s->match);
	free(s);
}
