/*
 * game.c - cc-player's game stage over ENet (see game.h).
 */
#include "game.h"

#include <enet/enet.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "game/chase.h"
#include "game/sim.h"
#include "sys/clock.h"
#include "sys/log.h"
#include "sys/netsim.h"
#include "sys/banned.h"

#define TICK_NS (1000000000LL / CC_WIRE_TICK_RATE)
#define LEAVE_TIMEOUT_MS 3000 /* a disconnect not acknowledged by then is reset */
#define MAX_SERVICE_WAIT_MS 5 /* the loop re-checks hand-offs and deadlines at least this often */
#define RING CC_WIRE_MAX_INPUTS /* inputs kept for redundancy, by seq % RING */
#define TEAM_UNKNOWN 0xFF

enum gp_state {
	GP_NEW,        /* handed over, not yet connecting */
	GP_CONNECTING, /* ENet connect sent */
	GP_HELLO,      /* hello sent, waiting for welcome */
	GP_PLAYING,    /* welcomed: inputs every tick */
	GP_ENDED,      /* match_end received: waiting for a snapshot that shows it */
	GP_LEAVING,    /* disconnect sent (outcome decided) */
	GP_DONE        /* no peer any more */
};

/* One player in a game thread. */
struct gp {
	int index;                     /* the player's number in the run */
	struct pc_game_assignment a;
	struct pc_game_result *res;
	ENetPeer *peer;
	struct cc_netsim *net;         /* its thread's network simulation (NULL: off) */
	enum gp_state st;
	int64_t added_ms, state_ms;    /* when handed over; when the current state began */
	uint16_t seq;                  /* newest input sequence sent (0: none yet) */
	uint32_t sent;                 /* inputs generated, to cap the redundancy of the first ones */
	struct cc_wire_input ring[RING];
	uint8_t max_inputs;            /* welcome's */
	bool have_snapshot;
	struct cc_wire_snapshot snap;  /* the newest snapshot taken */
	struct cc_wire_snapshot held[CC_WIRE_DELTA_HISTORY]; /* the newest snapshots taken: bases for deltas (issue 24) */
	uint64_t n_held;               /* snapshots taken; the newest CC_WIRE_DELTA_HISTORY are in held */
	uint8_t first_score[2];        /* score in the first snapshot (goals before we came are not ours to see) */
	uint8_t team_of[CC_WIRE_MAX_PLAYERS]; /* from player_info and welcome; TEAM_UNKNOWN */
	bool regressed;                /* a snapshot's score went down */
	uint8_t regressed_from[2], regressed_to[2];
	uint32_t end_tick;             /* match_end's tick */
	bool saw_end_snapshot;         /* a snapshot at or past end_tick arrived */
	float style;                   /* chase style, redrawn at each kickoff */
	struct pc_predict pred;        /* own ship predicted and reconciled (predict.h) */
	struct pc_clock clock;         /* server clock from pongs (clocksync.h) */
	int64_t next_ping_ms;
	bool reported;                 /* the prediction and clock_sync lines are out */
};

struct game_thread {
	struct pc_game *g;
	int index;
	pthread_t tid;
	bool started;
	ENetHost *host;
	struct cc_netsim *net;         /* simulation of this host's packets, both directions (NULL: off) */
	pthread_mutex_t lock;          /* guards pending */
	struct gp **pending;           /* handed over, not yet taken by the thread */
	int n_pending;
	struct gp **mine;              /* taken: this thread's players */
	int n_mine;
	int cap;                       /* of pending and mine */
	struct cc_wire_msg msg;        /* decode scratch (a few KB: not on the stack per packet) */
	struct cc_wire_snapshot rebuilt; /* a delta's snapshot, rebuilt */
	uint64_t cpu_ns;               /* CPU time the thread used, written as it exits */
	uint64_t ticks, late_ticks;    /* input ticks run; of those, begun more than a tick late */
	uint64_t net_packets, net_dropped, net_duplicated; /* the simulation's counters, written as it exits */
};

struct pc_game {
	struct pc_game_options opts;
	struct game_thread *threads;
	struct gp *players;            /* max_players of them */
	atomic_int added;              /* players handed over */
	atomic_bool stop;              /* no more players will come */
	bool finished;                 /* threads joined */
};

/* splitmix64: each player's styles, from the run's seed, its index and the kickoff ordinal. */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15u;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
	return x ^ (x >> 31);
}

static float draw_style(const struct pc_game *g, const struct gp *p)
{
	uint64_t r = mix(g->opts.seed ^ ((uint64_t)(unsigned)p->index << 24) ^ p->res->kickoffs);
	return (float)(r % 2001u) / 1000.0f - 1.0f;
}

CC_PRINTF(3, 4) static void fail(struct gp *p, int64_t now_ms, const char *fmt, ...)
{
	va_list ap;
	if (p->res->outcome != PC_GAME_PENDING)
		return; /* the first problem is the story */
	va_start(ap, fmt);
	vsnprintf(p->res->problem, sizeof p->res->problem, fmt, ap);
	va_end(ap);
	p->res->outcome = PC_GAME_FAILED;
	cc_log_warn("game_failed", CC_LOG_INT("player", p->index), CC_LOG_STR("match_id", p->a.match_id),
		    CC_LOG_STR("problem", p->res->problem), CC_LOG_INT("after_ms", now_ms - p->added_ms));
}

static void set_state(struct gp *p, enum gp_state st, int64_t now_ms)
{
	p->st = st;
	p->state_ms = now_ms;
}

/* Sends one message on the channel and with the reliability the table gives its id. */
static int send_msg(struct gp *p, const struct cc_wire_msg *m)
{
	uint8_t buf[CC_WIRE_MAX_PACKET];
	size_t len;
	const struct cc_wire_msg_info *info = cc_wire_msg_info(m->id);
	if (!info || cc_wire_encode(m, buf, sizeof buf, &len) != 0)
		return CC_EINVAL;
	ENetPacket *pkt = enet_packet_create(buf, len, info->reliable ? ENET_PACKET_FLAG_RELIABLE : 0);
	if (!pkt)
		return CC_ENOMEM;
	if (cc_netsim_send(p->net, p->peer, (enet_uint8)info->channel, pkt) != 0) {
		enet_packet_destroy(pkt);
		return CC_EIO;
	}
	return 0;
}

/* Disconnects gracefully: the outcome is decided; the DISCONNECT event (or a timeout) finishes it. */
static void leave(struct gp *p, int64_t now_ms)
{
	if (p->peer) {
		cc_netsim_forget_peer(p->net, p->peer); /* nothing held for it matters once we leave */
		enet_peer_disconnect(p->peer, 0);
	}
	set_state(p, p->peer ? GP_LEAVING : GP_DONE, now_ms);
}

/* Drops the peer at once (no event follows) and finishes the player. */
static void drop(struct gp *p, int64_t now_ms)
{
	if (p->peer) {
		p->peer->data = NULL;
		cc_netsim_forget_peer(p->net, p->peer);
		enet_peer_reset(p->peer);
		p->peer = NULL;
	}
	p->res->left_ns = (uint64_t)cc_clock_ns();
	set_state(p, GP_DONE, now_ms);
}

static void connect_player(struct game_thread *t, struct gp *p, int64_t now_ms)
{
	ENetAddress addr;
	if (enet_address_set_host(&addr, p->a.address) != 0) {
		fail(p, now_ms, "cannot resolve game server address '%s'", p->a.address);
		set_state(p, GP_DONE, now_ms);
		return;
	}
	addr.port = p->a.port;
	p->peer = enet_host_connect(t->host, &addr, CC_WIRE_CHANNELS, 0);
	if (!p->peer) {
		fail(p, now_ms, "no free ENet peer to connect to %s:%u", p->a.address, (unsigned)p->a.port);
		set_state(p, GP_DONE, now_ms);
		return;
	}
	p->peer->data = p;
	p->net = t->net;
	/*
	 * The first connect goes out at the next service with a retransmit timeout of
	 * roundTripTime + 4 variance: start it at PC_GAME_CONNECT_RETRY_MS (hold_connect_retry
	 * keeps it there). ENet's give-up (5 s after a few attempts at this pace) is put past
	 * our own PC_GAME_CONNECT_TIMEOUT_MS, which decides; the defaults return on connect.
	 */
	p->peer->roundTripTime = PC_GAME_CONNECT_RETRY_MS;
	p->peer->roundTripTimeVariance = 0;
	enet_peer_timeout(p->peer, 0, PC_GAME_CONNECT_TIMEOUT_MS + 1000, PC_GAME_CONNECT_TIMEOUT_MS + 1000);
	set_state(p, GP_CONNECTING, now_ms);
}

/*
 * While connecting: ENet doubles a reliable command's retransmit timeout after
 * each loss; the connect's is held at PC_GAME_CONNECT_RETRY_MS, so a server that
 * binds its port a little after the assignment is reached within that much
 * (ENet ignores a CONNECT it already holds, matched by connect id).
 */
static void hold_connect_retry(struct gp *p)
{
	if (p->st != GP_CONNECTING || !p->peer || p->peer->state != ENET_PEER_STATE_CONNECTING)
		return;
	for (ENetListIterator it = enet_list_begin(&p->peer->sentReliableCommands);
	     it != enet_list_end(&p->peer->sentReliableCommands); it = enet_list_next(it)) {
		ENetOutgoingCommand *c = (ENetOutgoingCommand *)it;
		if (c->roundTripTimeout > PC_GAME_CONNECT_RETRY_MS)
			c->roundTripTimeout = PC_GAME_CONNECT_RETRY_MS;
	}
}

static void send_hello(struct gp *p, int64_t now_ms)
{
	struct cc_wire_msg m;
	memset(&m, 0, sizeof m);
	m.id = CC_MSG_HELLO;
	m.u.hello.protocol_version = CC_WIRE_PROTOCOL_VERSION;
	m.u.hello.tick_rate = CC_WIRE_TICK_RATE;
	m.u.hello.auth = CC_WIRE_AUTH_TOKEN;
	m.u.hello.credential_len = (uint16_t)strlen(p->a.join_token);
	memcpy(m.u.hello.credential, p->a.join_token, (size_t)m.u.hello.credential_len + 1);
	if (send_msg(p, &m) != 0) {
		fail(p, now_ms, "hello could not be encoded or sent (token of %u bytes)", m.u.hello.credential_len);
		drop(p, now_ms);
		return;
	}
	set_state(p, GP_HELLO, now_ms);
}

/*
 * The policy's input from the newest snapshot: the match as this player
 * sees it, rebuilt as a struct cc_sim (ships by slot, teams from
 * player_info, spawn index by slot order within a team). Slots past
 * CC_SIM_MAX_SHIPS are left out of the view; a player in one of them
 * chases alone.
 */
static void decide(const struct gp *p, struct cc_sim_input *in)
{
	struct cc_sim view;
	int me = p->res->slot;

	memset(in, 0, sizeof *in);
	if (!p->have_snapshot)
		return;
	if (pc_snapshot_view(&p->snap, p->team_of, me, p->res->team, &view)) {
		cc_chase_team_input(&view, (unsigned)me, p->style, in);
		return;
	}
	/* Not in the view (a slot past it, or missing from this snapshot): find our body and chase alone. */
	for (unsigned i = 0; i < p->snap.player_count; i++) {
		if (p->snap.players[i].slot != me)
			continue;
		struct cc_sim_body body;
		cc_wire_body_to_sim(&p->snap.players[i].body, &body);
		cc_chase_input(&body, cc_wire_boost_unpack(p->snap.players[i].boost), (unsigned)p->res->team, &view.ball, in);
	}
}

/* One tick of input: the newest input plus up to PC_GAME_REDUNDANCY - 1 before it, newest first. */
static void send_input(struct gp *p, int64_t now_ms)
{
	struct cc_sim_input in;
	struct cc_wire_msg m;
	decide(p, &in);
	p->seq = (uint16_t)(p->seq + 1u); /* wraps: the server compares with serial arithmetic */
	p->sent++;
	cc_wire_input_from_sim(&in, &p->ring[p->seq % RING]);

	memset(&m, 0, sizeof m);
	m.id = CC_MSG_INPUT;
	unsigned count = PC_GAME_REDUNDANCY;
	if (count > p->max_inputs)
		count = p->max_inputs;
	if (count > p->sent)
		count = p->sent;
	m.u.input.newest_seq = p->seq;
	m.u.input.last_snapshot_tick = p->have_snapshot ? p->snap.tick : 0;
	m.u.input.count = (uint16_t)count;
	for (unsigned i = 0; i < count; i++)
		m.u.input.inputs[i] = p->ring[(uint16_t)(p->seq - i) % RING];
	/* Predicted as the server will apply it (the quantised axes), the moment it is sent. */
	pc_predict_input(&p->pred, p->seq, &p->ring[p->seq % RING]);
	pc_predict_poll(&p->pred, now_ms);
	if (send_msg(p, &m) != 0) {
		fail(p, now_ms, "input %u could not be encoded or sent", (unsigned)p->seq);
		drop(p, now_ms);
		return;
	}
	p->res->inputs_sent++;
}

/* A ping every PC_CLOCK_PING_MS (clock sync): its client_time is our monotonic clock in microseconds. */
static void maybe_ping(struct gp *p, int64_t now_ms)
{
	if (now_ms < p->next_ping_ms)
		return;
	p->next_ping_ms = now_ms + PC_CLOCK_PING_MS;
	struct cc_wire_msg m;
	memset(&m, 0, sizeof m);
	m.id = CC_MSG_PING;
	m.u.ping.client_time = pc_clock_stamp(cc_clock_ns());
	if (send_msg(p, &m) != 0)
		cc_log_warn("game_ping_failed", CC_LOG_INT("player", p->index));
}

/* The prediction error and the clock estimate, into the result and one info line each (once). */
static void report_netcode(struct gp *p)
{
	struct pc_game_result *r = p->res;
	struct pc_predict_stats *ps = &r->pred;
	if (p->reported)
		return;
	p->reported = true;
	pc_predict_flush(&p->pred);
	cc_log_info("prediction", CC_LOG_INT("player", p->index), CC_LOG_STR("match_id", p->a.match_id),
		    CC_LOG_INT("slot", r->slot), CC_LOG_INT("snapshots", ps->snapshots), CC_LOG_INT("used", ps->used),
		    CC_LOG_INT("stalled", ps->stalled), CC_LOG_INT("held", ps->held), CC_LOG_INT("kickoff", ps->kickoff),
		    CC_LOG_INT("stopped", ps->stopped), CC_LOG_INT("unmatched", ps->unmatched),
		    CC_LOG_DBL("replayed_per_snapshot", ps->snapshots ? (double)ps->replayed / ps->snapshots : 0.0),
		    CC_LOG_DBL("p50_m", pc_latency_percentile_ms(&ps->err_um, 50)),
		    CC_LOG_DBL("p95_m", pc_latency_percentile_ms(&ps->err_um, 95)),
		    CC_LOG_DBL("p99_m", pc_latency_percentile_ms(&ps->err_um, 99)),
		    CC_LOG_DBL("max_m", pc_latency_percentile_ms(&ps->err_um, 100)));
	r->pongs = p->clock.pongs;
	r->clock_valid = pc_clock_estimate(&p->clock, &r->clock);
	if (r->clock_valid)
		cc_log_info("clock_sync", CC_LOG_INT("player", p->index), CC_LOG_STR("match_id", p->a.match_id),
			    CC_LOG_INT("at_ns", r->clock.at_ns), CC_LOG_DBL("tick_at", r->clock.tick_at),
			    CC_LOG_INT("origin_ns", r->clock.origin_ns), CC_LOG_DBL("rtt_ms", r->clock.rtt_ms),
			    CC_LOG_DBL("bound_ms", r->clock.bound_ms), CC_LOG_INT("window", r->clock.window),
			    CC_LOG_INT("pongs", p->clock.pongs), CC_LOG_INT("bogus", p->clock.bogus));
}

/* After match_end: what was sent must add up (game.h). Decides the outcome and leaves. */
static void judge_end(struct gp *p, int64_t now_ms)
{
	struct pc_game_result *r = p->res;
	unsigned total = (unsigned)r->final_score[0] + r->final_score[1];
	unsigned before = (unsigned)p->first_score[0] + p->first_score[1];
	memcpy(r->snapshot_score, p->snap.score, 2);
	if (!p->saw_end_snapshot)
		fail(p, now_ms, "no snapshot at or past match_end's tick %u within %d ms (newest %u, score %u-%u)",
		     (unsigned)p->end_tick, PC_GAME_LINGER_MS, (unsigned)p->snap.tick, p->snap.score[0], p->snap.score[1]);
	else if (memcmp(p->snap.score, r->final_score, 2) != 0)
		fail(p, now_ms, "snapshot at tick %u says %u-%u, match_end says %u-%u", (unsigned)p->snap.tick,
		     p->snap.score[0], p->snap.score[1], r->final_score[0], r->final_score[1]);
	else if (p->regressed)
		fail(p, now_ms, "snapshot score went down from %u-%u to %u-%u", p->regressed_from[0],
		     p->regressed_from[1], p->regressed_to[0], p->regressed_to[1]);
	else if (r->goals_seen != total - before)
		fail(p, now_ms, "received %u goal messages, but the score went from %u-%u to %u-%u",
		     (unsigned)r->goals_seen, p->first_score[0], p->first_score[1], r->final_score[0],
		     r->final_score[1]);
	if (r->outcome == PC_GAME_PENDING) {
		r->outcome = PC_GAME_OK;
		r->score_agrees = true;
	}
	report_netcode(p);
	cc_log_info("game_finished", CC_LOG_INT("player", p->index), CC_LOG_STR("match_id", p->a.match_id),
		    CC_LOG_INT("slot", r->slot), CC_LOG_INT("team", r->team), CC_LOG_INT("score0", r->final_score[0]),
		    CC_LOG_INT("score1", r->final_score[1]), CC_LOG_INT("snapshots", r->snapshots),
		    CC_LOG_INT("full_snapshots", r->full_snapshots), CC_LOG_INT("delta_snapshots", r->delta_snapshots),
		    CC_LOG_BOOL("agrees", r->score_agrees));
	leave(p, now_ms);
}

static void take_snapshot(struct gp *p, const struct cc_wire_snapshot *s, size_t bytes, int64_t now_ms)
{
	struct pc_game_result *r = p->res;
	r->snapshot_bytes += bytes;
	/* The channel is sequenced, so this is belt and braces: never step back in time. */
	if (p->have_snapshot && s->tick <= p->snap.tick) {
		r->stale_snapshots++;
		return;
	}
	if (!p->have_snapshot) {
		r->first_snapshot_ns = (uint64_t)cc_clock_ns();
		memcpy(p->first_score, s->score, 2);
	} else if (!p->regressed && (s->score[0] < p->snap.score[0] || s->score[1] < p->snap.score[1])) {
		p->regressed = true;
		memcpy(p->regressed_from, p->snap.score, 2);
		memcpy(p->regressed_to, s->score, 2);
	}
	p->snap = *s;
	p->have_snapshot = true;
	r->snapshots++;
	/* Held as a base and acknowledged, so the server sends deltas against it (protocol section 5). */
	p->held[p->n_held++ % CC_WIRE_DELTA_HISTORY] = *s;
	struct cc_wire_msg ack = { .id = CC_MSG_SNAPSHOT_ACK };
	ack.u.snapshot_ack.tick = s->tick;
	(void)send_msg(p, &ack);
	pc_predict_snapshot(&p->pred, s, p->team_of, now_ms);
	if (p->st == GP_ENDED && s->tick >= p->end_tick) {
		p->saw_end_snapshot = true;
		judge_end(p, now_ms);
	}
}

/* A delta: rebuilt against the held snapshot it names, then taken like a full one. */
static void take_delta(struct game_thread *t, struct gp *p, const struct cc_wire_snapshot_delta *d, size_t bytes,
		       int64_t now_ms)
{
	const struct cc_wire_snapshot *base = NULL;
	for (uint64_t k = 0; k < CC_WIRE_DELTA_HISTORY && k < p->n_held && !base; k++) {
		const struct cc_wire_snapshot *h = &p->held[(p->n_held - 1 - k) % CC_WIRE_DELTA_HISTORY];
		if (h->tick == d->tick - d->base_age)
			base = h;
	}
	struct cc_wire_fault fault;
	if (!base) {
		/* The server encodes only against a snapshot we acknowledged, and we hold the newest we took. */
		p->res->bad_messages++;
		cc_log_warn("game_delta_unknown_base", CC_LOG_INT("player", p->index), CC_LOG_INT("tick", d->tick),
			    CC_LOG_INT("base_age", d->base_age));
		return;
	}
	if (cc_wire_delta_apply(base, d, &t->rebuilt, &fault) != 0) {
		p->res->bad_messages++;
		cc_log_warn("game_bad_message", CC_LOG_INT("player", p->index), CC_LOG_STR("fault", fault.text));
		return;
	}
	p->res->delta_snapshots++;
	take_snapshot(p, &t->rebuilt, bytes, now_ms);
}

static void on_message(struct game_thread *t, struct gp *p, const struct cc_wire_msg *m, size_t bytes, int64_t now_ms)
{
	const struct pc_game *g = t->g;
	struct pc_game_result *r = p->res;
	switch (m->id) {
	case CC_MSG_WELCOME:
		if (p->st != GP_HELLO)
			break; /* a second welcome changes nothing */
		r->slot = m->u.welcome.slot;
		r->team = m->u.welcome.team;
		if (r->slot != p->a.slot || r->team != p->a.team) {
			fail(p, now_ms, "welcome gave slot %d team %d, the assignment slot %d team %d", r->slot, r->team,
			     p->a.slot, p->a.team);
			leave(p, now_ms);
			break;
		}
		if (r->slot < CC_WIRE_MAX_PLAYERS)
			p->team_of[r->slot] = (uint8_t)r->team;
		p->max_inputs = m->u.welcome.max_inputs;
		r->connected_ns = (uint64_t)cc_clock_ns();
		pc_predict_init(&p->pred, r->slot, r->team, &r->pred);
		p->style = draw_style(g, p);
		set_state(p, GP_PLAYING, now_ms);
		break;
	case CC_MSG_REFUSED:
		fail(p, now_ms, "refused: %s (%s)", cc_wire_reason_name(m->u.refused.reason), m->u.refused.detail);
		leave(p, now_ms);
		break;
	case CC_MSG_KICKED:
		if (p->st == GP_ENDED && m->u.kicked.reason == CC_REASON_MATCH_OVER) {
			judge_end(p, now_ms); /* the server closing the finished match (protocol section 6): decide now */
			break;
		}
		fail(p, now_ms, "kicked: %s (%s)", cc_wire_reason_name(m->u.kicked.reason), m->u.kicked.detail);
		leave(p, now_ms);
		break;
	case CC_MSG_PLAYER_INFO:
		if (m->u.player_info.slot < CC_WIRE_MAX_PLAYERS)
			p->team_of[m->u.player_info.slot] = m->u.player_info.team;
		break;
	case CC_MSG_SNAPSHOT:
		if (p->st == GP_PLAYING || p->st == GP_ENDED) {
			r->full_snapshots++;
			take_snapshot(p, &m->u.snapshot, bytes, now_ms);
		}
		break;
	case CC_MSG_SNAPSHOT_DELTA:
		if (p->st == GP_PLAYING || p->st == GP_ENDED)
			take_delta(t, p, &m->u.snapshot_delta, bytes, now_ms);
		break;
	case CC_MSG_GOAL:
		r->goals_seen++;
		pc_predict_reliable(&p->pred, m->u.goal.tick, false);
		break;
	case CC_MSG_KICKOFF:
		r->kickoffs++;
		p->style = draw_style(g, p);
		pc_predict_reliable(&p->pred, m->u.kickoff.tick, true);
		break;
	case CC_MSG_MATCH_STATE:
		pc_predict_reliable(&p->pred, m->u.match_state.tick, false);
		break;
	case CC_MSG_PONG:
		pc_clock_pong(&p->clock, &m->u.pong, cc_clock_ns());
		break;
	case CC_MSG_MATCH_END:
		if (p->st != GP_PLAYING)
			break;
		r->ended_ns = (uint64_t)cc_clock_ns();
		pc_predict_reliable(&p->pred, m->u.match_end.tick, false);
		memcpy(r->final_score, m->u.match_end.score, 2);
		r->winner = m->u.match_end.winner;
		r->end_reason = m->u.match_end.reason;
		p->end_tick = m->u.match_end.tick;
		set_state(p, GP_ENDED, now_ms);
		/* The snapshot that shows the end may have come first (another channel). */
		if (p->have_snapshot && p->snap.tick >= p->end_tick) {
			p->saw_end_snapshot = true;
			judge_end(p, now_ms);
		}
		break;
	default:
		break;
	}
}

static void on_receive(struct game_thread *t, struct gp *p, const ENetEvent *ev, int64_t now_ms)
{
	struct cc_wire_fault fault;
	int rc = cc_wire_decode_from(ev->packet->data, ev->packet->dataLength, CC_WIRE_TO_CLIENT, ev->channelID,
				     &t->msg, &fault);
	if (rc == CC_ENOTFOUND) {
		p->res->unknown_messages++; /* SPEC 11: skipped, never fatal */
	} else if (rc != 0) {
		p->res->bad_messages++;
		cc_log_warn("game_bad_message", CC_LOG_INT("player", p->index), CC_LOG_STR("fault", fault.text));
	} else {
		on_message(t, p, &t->msg, ev->packet->dataLength, now_ms);
	}
}

static void on_event(struct game_thread *t, ENetEvent *ev, int64_t now_ms)
{
	struct gp *p = ev->peer ? ev->peer->data : NULL;
	switch (ev->type) {
	case ENET_EVENT_TYPE_CONNECT:
		if (p && p->st == GP_CONNECTING) {
			enet_peer_timeout(ev->peer, 0, 0, 0); /* ENet's defaults from here on */
			send_hello(p, now_ms);
		}
		break;
	case ENET_EVENT_TYPE_RECEIVE:
		if (p && p->st != GP_LEAVING && p->st != GP_DONE)
			on_receive(t, p, ev, now_ms);
		enet_packet_destroy(ev->packet);
		break;
	case ENET_EVENT_TYPE_DISCONNECT:
		if (!p)
			break;
		if (p->st != GP_LEAVING)
			fail(p, now_ms, "the server %s:%u disconnected (data %u) in state %s before match_end",
			     p->a.address, (unsigned)p->a.port, (unsigned)ev->data,
			     p->st == GP_CONNECTING ? "connecting" : p->st == GP_HELLO ? "hello" : "playing");
		ev->peer->data = NULL;
		p->peer = NULL; /* ENet resets it after this event: never touch it again */
		p->res->left_ns = (uint64_t)cc_clock_ns();
		set_state(p, GP_DONE, now_ms);
		break;
	case ENET_EVENT_TYPE_NONE:
		break;
	}
}

/* Deadlines: connecting too long, the whole game too long, lingering, leaving. */
static void check_deadlines(struct game_thread *t, struct gp *p, int64_t now_ms)
{
	int64_t in_state = now_ms - p->state_ms;
	if (p->st == GP_DONE || p->st == GP_NEW)
		return;
	if ((p->st == GP_CONNECTING || p->st == GP_HELLO) && in_state > PC_GAME_CONNECT_TIMEOUT_MS) {
		fail(p, now_ms, "no %s from %s:%u within %d ms", p->st == GP_CONNECTING ? "ENet connection" : "welcome",
		     p->a.address, (unsigned)p->a.port, PC_GAME_CONNECT_TIMEOUT_MS);
		drop(p, now_ms);
	} else if (p->st == GP_ENDED && in_state > PC_GAME_LINGER_MS) {
		judge_end(p, now_ms); /* fails: no snapshot showed the end */
	} else if (p->st == GP_LEAVING && in_state > LEAVE_TIMEOUT_MS) {
		drop(p, now_ms); /* the server never acknowledged; the outcome stands */
	} else if (p->st != GP_LEAVING && now_ms - p->added_ms > t->g->opts.deadline_ms) {
		fail(p, now_ms, "still playing %lld s after the assignment (state %d, newest snapshot tick %u)",
		     (long long)(t->g->opts.deadline_ms / 1000), (int)p->st, (unsigned)p->snap.tick);
		leave(p, now_ms);
	}
}

/* Moves hand-offs into this thread's list and connects them. */
static void take_pending(struct game_thread *t, int64_t now_ms)
{
	struct gp *batch[64];
	int n;
	do {
		pthread_mutex_lock(&t->lock);
		n = t->n_pending < (int)CC_ARRAY_LEN(batch) ? t->n_pending : (int)CC_ARRAY_LEN(batch);
		memcpy(batch, t->pending, (size_t)n * sizeof *batch);
		memmove(t->pending, t->pending + n, (size_t)(t->n_pending - n) * sizeof *batch);
		t->n_pending -= n;
		pthread_mutex_unlock(&t->lock);
		for (int i = 0; i < n; i++) {
			t->mine[t->n_mine++] = batch[i];
			connect_player(t, batch[i], now_ms);
		}
	} while (n == (int)CC_ARRAY_LEN(batch));
}

static bool all_done(struct game_thread *t)
{
	pthread_mutex_lock(&t->lock);
	bool none_pending = t->n_pending == 0;
	pthread_mutex_unlock(&t->lock);
	if (!none_pending)
		return false;
	for (int i = 0; i < t->n_mine; i++)
		if (t->mine[i]->st != GP_DONE)
			return false;
	return true;
}

static void *game_thread_main(void *arg)
{
	struct game_thread *t = arg;
	int64_t next_tick = cc_clock_ns();
	for (;;) {
		int64_t now_ms = cc_clock_ms();
		take_pending(t, now_ms);
		int64_t wait_ns = next_tick - cc_clock_ns();
		enet_uint32 wait_ms = wait_ns <= 0 ? 0 : (enet_uint32)(wait_ns / 1000000);
		if (wait_ms > MAX_SERVICE_WAIT_MS)
			wait_ms = MAX_SERVICE_WAIT_MS;
		ENetEvent ev;
		int rc = cc_netsim_service(t->net, t->host, &ev, wait_ms);
		while (rc > 0) {
			on_event(t, &ev, cc_clock_ms());
			rc = cc_netsim_service(t->net, t->host, &ev, 0);
		}
		now_ms = cc_clock_ms();
		if (cc_clock_ns() >= next_tick) {
			t->ticks++;
			t->late_ticks += cc_clock_ns() - next_tick > TICK_NS;
			for (int i = 0; i < t->n_mine; i++) {
				struct gp *p = t->mine[i];
				if (p->st == GP_PLAYING || p->st == GP_ENDED) {
					send_input(p, now_ms);
					if (p->st == GP_PLAYING || p->st == GP_ENDED)
						maybe_ping(p, now_ms);
				}
			}
			next_tick += TICK_NS;
			/* Fell far behind (a stalled machine): resume the beat from now rather than burst. */
			if (cc_clock_ns() - next_tick > 10 * TICK_NS)
				next_tick = cc_clock_ns() + TICK_NS;
		}
		for (int i = 0; i < t->n_mine; i++) {
			check_deadlines(t, t->mine[i], now_ms);
			hold_connect_retry(t->mine[i]);
		}
		cc_netsim_flush(t->net, t->host);
		if (atomic_load(&t->g->stop) && all_done(t))
			break;
	}
	if (t->net) {
		struct cc_netsim_stats ns;
		cc_netsim_stats(t->net, &ns);
		cc_log_info("game_netsim", CC_LOG_INT("thread", t->index), CC_LOG_INT("packets_out", (int64_t)ns.packets[CC_NETSIM_OUT]),
			    CC_LOG_INT("packets_in", (int64_t)ns.packets[CC_NETSIM_IN]),
			    CC_LOG_INT("dropped_out", (int64_t)ns.dropped[CC_NETSIM_OUT]),
			    CC_LOG_INT("dropped_in", (int64_t)ns.dropped[CC_NETSIM_IN]),
			    CC_LOG_INT("duplicated_out", (int64_t)ns.duplicated[CC_NETSIM_OUT]),
			    CC_LOG_INT("duplicated_in", (int64_t)ns.duplicated[CC_NETSIM_IN]),
			    CC_LOG_INT("retransmits", (int64_t)(ns.retransmits[0] + ns.retransmits[1])),
			    CC_LOG_INT("overflow", (int64_t)ns.overflow));
		t->net_dropped = ns.dropped[0] + ns.dropped[1];
		t->net_duplicated = ns.duplicated[0] + ns.duplicated[1];
		t->net_packets = ns.packets[0] + ns.packets[1];
	}
	struct timespec cpu;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
		t->cpu_ns = (uint64_t)cpu.tv_sec * 1000000000u + (uint64_t)cpu.tv_nsec;
	return NULL;
}

struct pc_game *pc_game_start(const struct pc_game_options *opts)
{
	struct pc_game *g = NULL;
	if (!opts || opts->threads < 1 || opts->max_players < 1 || opts->deadline_ms < 1)
		return NULL;
	g = calloc(1, sizeof *g);
	if (!g)
		return NULL;
	g->opts = *opts;
	atomic_init(&g->added, 0);
	atomic_init(&g->stop, false);
	g->players = calloc((size_t)opts->max_players, sizeof *g->players);
	g->threads = calloc((size_t)opts->threads, sizeof *g->threads);
	if (!g->players || !g->threads)
		goto out_free;
	int per_thread = (opts->max_players + opts->threads - 1) / opts->threads;
	if (per_thread > ENET_PROTOCOL_MAXIMUM_PEER_ID) {
		cc_log_error("game_start_failed", CC_LOG_STR("why", "more players per game thread than ENet has peers"),
			     CC_LOG_INT("players_per_thread", per_thread));
		goto out_free;
	}
	for (int i = 0; i < opts->threads; i++) {
		struct game_thread *t = &g->threads[i];
		t->g = g;
		t->index = i;
		t->cap = per_thread;
		pthread_mutex_init(&t->lock, NULL);
		t->pending = calloc((size_t)per_thread, sizeof *t->pending);
		t->mine = calloc((size_t)per_thread, sizeof *t->mine);
		/* One socket for all of this thread's players; no bandwidth limits (loopback, load test). */
		t->host = enet_host_create(NULL, (size_t)per_thread, CC_WIRE_CHANNELS, 0, 0);
		if (!t->pending || !t->mine || !t->host)
			goto out_free;
		/* Each thread's link its own random stream, from the seed and the thread: a run reproduces. */
		struct cc_netsim_options no = { .latency_ms = opts->net_latency_ms, .jitter_ms = opts->net_jitter_ms,
						.loss_pct = opts->net_loss_pct, .dup_pct = opts->net_dup_pct,
						.seed = mix(opts->net_seed ^ ((uint64_t)(unsigned)i << 32)) };
		if (cc_netsim_active(&no)) {
			char why[128] = "out of memory";
			if (cc_netsim_options_check(&no, why, sizeof why) != 0 || !(t->net = cc_netsim_create(t->host, &no))) {
				cc_log_error("game_start_failed", CC_LOG_STR("why", "network simulation"), CC_LOG_STR("detail", why));
				goto out_free;
			}
		}
	}
	for (int i = 0; i < opts->threads; i++) {
		if (pthread_create(&g->threads[i].tid, NULL, game_thread_main, &g->threads[i]) != 0)
			goto out_free;
		g->threads[i].started = true;
	}
	return g;
out_free:
	pc_game_free(g);
	return NULL;
}

int pc_game_add(struct pc_game *g, int index, const struct pc_game_assignment *a, uint64_t assigned_ns,
		struct pc_game_result *res)
{
	if (!g || !a || !res || atomic_load(&g->stop) || !a->address[0] || a->port == 0 || !a->join_token[0] ||
	    (a->team != 0 && a->team != 1) || a->slot < 0)
		return CC_EINVAL;
	int n = atomic_fetch_add(&g->added, 1);
	if (n >= g->opts.max_players) {
		atomic_fetch_sub(&g->added, 1);
		return CC_ETOOBIG;
	}
	struct gp *p = &g->players[n];
	memset(res, 0, sizeof *res);
	pc_latency_init(&res->pred.err_um, 0);
	res->assigned_ns = assigned_ns;
	res->slot = -1;
	res->team = -1;
	memcpy(res->match_id, a->match_id, sizeof res->match_id);
	memset(p, 0, sizeof *p);
	p->index = index;
	p->a = *a;
	p->res = res;
	p->st = GP_NEW;
	p->added_ms = cc_clock_ms();
	p->state_ms = p->added_ms;
	memset(p->team_of, TEAM_UNKNOWN, sizeof p->team_of);
	pc_predict_init(&p->pred, -1, 0, &res->pred); /* the slot comes with welcome */
	pc_clock_init(&p->clock);
	struct game_thread *t = &g->threads[n % g->opts.threads];
	pthread_mutex_lock(&t->lock);
	t->pending[t->n_pending++] = p; /* never past cap: n < max_players and players are dealt round-robin */
	pthread_mutex_unlock(&t->lock);
	return 0;
}

void pc_game_finish(struct pc_game *g)
{
	if (!g || g->finished)
		return;
	atomic_store(&g->stop, true);
	for (int i = 0; i < g->opts.threads; i++)
		if (g->threads[i].started)
			pthread_join(g->threads[i].tid, NULL);
	g->finished = true;
}

void pc_game_stats(const struct pc_game *g, struct pc_game_stats *out)
{
	memset(out, 0, sizeof *out);
	for (int i = 0; g && g->finished && i < g->opts.threads; i++) {
		out->cpu_ns += g->threads[i].cpu_ns;
		out->ticks += g->threads[i].ticks;
		out->late_ticks += g->threads[i].late_ticks;
		out->net_packets += g->threads[i].net_packets;
		out->net_dropped += g->threads[i].net_dropped;
		out->net_duplicated += g->threads[i].net_duplicated;
	}
}

void pc_game_free(struct pc_game *g)
{
	if (!g)
		return;
	pc_game_finish(g);
	for (int i = 0; g->threads && i < g->opts.threads; i++) {
		struct game_thread *t = &g->threads[i];
		cc_netsim_free(t->net); /* before its host: it holds the host's packets */
		if (t->host)
			enet_host_destroy(t->host);
		if (t->pending || t->mine)
			pthread_mutex_destroy(&t->lock);
		free(t->pending);
		free(t->mine);
	}
	free(g->threads);
	free(g->players);
	free(g);
}

void pc_game_result_release(struct pc_game_result *r)
{
	if (r)
		pc_latency_release(&r->pred.err_um);
}
