/*
 * community.c - see community.h. One ENet host; peer->data points at our
 * struct cpeer while the peer is ours and is cleared the moment we kick it
 * or it disconnects. The lobby rules are game/lobby.h's; this file turns
 * requests into registry calls and registry events into broadcasts, and
 * runs each in_match lobby's match (gameserver/match.h) at 60 Hz.
 */
#include "community.h"

#include <enet/enet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "match.h"
#include "pace.h"
#include "play.h"
#include "replay.h"
#include "wire_glue.h"
#include "game/lobby.h"
#include "game/match_lifecycle.h"
#include "game/sim.h"
#include "sys/clock.h"
#include "sys/log.h"
#include "sys/metrics.h"
#include "sys/banned.h"

#define TICK_HZ 60
#define TICK_NS (1000000000LL / TICK_HZ)
#define MAX_CATCH_UP 5
#define STALL_LOG_MS 100
#define REFUSE_SPARE 4
#define ENET_TIMEOUT_MIN_MS 5000  /* a peer that acknowledges nothing is dropped by ENet within these */
#define ENET_TIMEOUT_MAX_MS 10000
#define MATCH_PLAYERS_MAX CC_SIM_MAX_SHIPS
#define IDLE_EVICT_MIN_MS 500 /* a silent peer younger than this is never evicted (its hello may be in flight) */

enum cpeer_phase {
	CP_HELLO,  /* connected, no hello yet: receives nothing */
	CP_MEMBER, /* registered: receives every broadcast */
};

struct cmatch;

struct cpeer {
	struct gs_community *c;
	ENetPeer *enet; /* cleared when detached */
	uint64_t id;
	enum cpeer_phase phase;
	uint32_t member; /* CP_MEMBER: the registry's member id */
	int64_t connected_ms, last_recv_ms;
	int bad;
	uint64_t unknown, ignored;
	struct gs_rate rate;
	struct cc_leaky lobby_bucket;
	char addr[48];
	bool overflow;        /* a send found its backlog full: kicked backlog_overflow after the current step */
	struct cmatch *match; /* in a match: its slot */
	int slot;
	struct gs_input_state input, reported;
};

struct cmatch {
	struct cmatch *next;
	uint32_t lobby_id;
	uint32_t number; /* the lobby's match count */
	struct gs_match *match;
	int n;
	uint32_t members[MATCH_PLAYERS_MAX];
	char names[MATCH_PLAYERS_MAX][CC_LOBBY_NAME_MAX + 1];
	int teams[MATCH_PLAYERS_MAX];
	struct cpeer *by_slot[MATCH_PLAYERS_MAX];
	int goals[MATCH_PLAYERS_MAX];
	bool ended;
	bool abandoned; /* its lobby was deleted: unlinked by the next tick (never while a tick walks it) */
	int score[2];
	int winner;
	const char *end_reason;
	int64_t ended_ms;
	int64_t begun_unix;
};

struct gs_community {
	struct gs_community_options opts;
	ENetHost *host;
	struct cc_netsim *sim;
	struct cc_lobby_registry *reg;
	struct cmatch *matches;
	int n_matches;
	FILE *results;
	uint64_t next_peer_id;
	uint32_t tick; /* the server's tick, from 0 at start */
	int64_t next_tick_ns;
	int64_t grace_until_ms;
	int64_t stall_seen_next;
	int64_t service_ns; /* monotonic time the network was last read (rate limits charge at it) */
	struct gs_pace pace; /* the loop's pacing and wake-ups (pace.h) */
	atomic_bool ready;
	struct gs_rate_limits limits;
	bool stopping;
	struct {
		struct cc_metric *ticks, *missed, *kicks, *bad, *unknown, *peers, *rl_packets, *rl_bytes;
		struct cc_metric *lobbies, *members, *registered, *matches, *requests, *broadcasts, *dropped, *input;
		struct cc_metric *snapshot_bytes, *matches_total, *stalls;
	} m;
};

/* ---- sending ---------------------------------------------------------------------- */

/* Reliable messages queued or unacknowledged for e: the backlog a slow reader builds. */
static size_t backlog_of(ENetPeer *e)
{
	return enet_list_size(&e->outgoingCommands) + enet_list_size(&e->sentReliableCommands);
}

static void send_bytes(struct cpeer *p, int channel, const uint8_t *buf, size_t len)
{
	if (!p || !p->enet || p->overflow || len == 0)
		return;
	struct gs_community *c = p->c;
	if (channel == GS_CH_CONTROL && backlog_of(p->enet) >= (size_t)c->opts.max_backlog) {
		p->overflow = true; /* kicked by sweep_overflow: never while a broadcast walks the peers */
		return;
	}
	gs_replay_packet(c->opts.replay, GS_REPLAY_OUT, p->id, (uint8_t)channel, buf, len);
	ENetPacket *pkt = enet_packet_create(buf, len, channel == GS_CH_CONTROL ? ENET_PACKET_FLAG_RELIABLE : 0);
	if (pkt && cc_netsim_send(c->sim, p->enet, (enet_uint8)channel, pkt) != 0)
		enet_packet_destroy(pkt);
}

static size_t encode(const struct cc_wire_msg *m, uint8_t *buf, size_t cap)
{
	return gs_play_encode(m, buf, cap);
}

static void send_msg(struct cpeer *p, const struct cc_wire_msg *m)
{
	uint8_t buf[CC_WIRE_MAX_PACKET];
	const struct cc_wire_msg_info *info = cc_wire_msg_info(m->id);
	size_t n = info ? encode(m, buf, sizeof buf) : 0;
	if (n)
		send_bytes(p, (int)info->channel, buf, n);
}

/* Sends m to every registered peer, encoded once. */
static void broadcast(struct gs_community *c, const struct cc_wire_msg *m)
{
	uint8_t buf[CC_WIRE_MAX_PACKET];
	size_t n = encode(m, buf, sizeof buf);
	if (!n)
		return;
	int sent = 0;
	for (size_t i = 0; i < c->host->peerCount; i++) {
		struct cpeer *p = c->host->peers[i].data;
		if (p && p->phase == CP_MEMBER) {
			send_bytes(p, GS_CH_CONTROL, buf, n);
			sent++;
		}
	}
	const char *labels[] = { cc_wire_msg_name(m->id), NULL };
	cc_metric_add(c->m.broadcasts, labels, sent);
}

/* Sends m to the players of one match, encoded once. Returns the bytes of one copy. */
static size_t match_send(struct gs_community *c, struct cmatch *cm, const struct cc_wire_msg *m)
{
	(void)c;
	uint8_t buf[CC_WIRE_MAX_PACKET];
	const struct cc_wire_msg_info *info = cc_wire_msg_info(m->id);
	size_t n = info ? encode(m, buf, sizeof buf) : 0;
	for (int i = 0; n && i < cm->n; i++)
		send_bytes(cm->by_slot[i], (int)info->channel, buf, n);
	return n;
}

/* ---- metrics -------------------------------------------------------------------------- */

static void gauges(struct gs_community *c)
{
	static const enum cc_lobby_state states[] = { CC_LOBBY_STATE_OPEN, CC_LOBBY_STATE_STARTING, CC_LOBBY_STATE_IN_MATCH };
	int in_lobbies = 0;
	for (size_t i = 0; i < CC_ARRAY_LEN(states); i++) {
		const char *labels[] = { cc_lobby_state_name(states[i]), NULL };
		cc_metric_set(c->m.lobbies, labels, cc_lobby_count_in(c->reg, states[i]));
	}
	for (int i = 0; i < cc_lobby_count(c->reg); i++)
		in_lobbies += cc_lobby_at(c->reg, i)->n_members;
	cc_metric_set(c->m.members, NULL, in_lobbies);
	cc_metric_set(c->m.registered, NULL, cc_lobby_member_count(c->reg));
	cc_metric_set(c->m.matches, NULL, c->n_matches);
}

/* ---- kicks ------------------------------------------------------------------------------ */

static void leave_match(struct gs_community *c, struct cpeer *p);

/* Forgets p: leaves its match and its lobby (broadcasts), unlinks it from ENet. */
static void detach(struct gs_community *c, struct cpeer *p)
{
	if (p->match)
		leave_match(c, p);
	if (p->enet)
		p->enet->data = NULL;
	p->enet = NULL;
	if (p->phase == CP_MEMBER && !c->stopping) {
		uint32_t member = p->member;
		p->phase = CP_HELLO; /* no broadcast reaches it any more */
		cc_lobby_unregister(c->reg, member, cc_clock_ms());
		gauges(c);
	}
	cc_metric_add(c->m.peers, NULL, -1);
	free(p);
}

/*
 * Kicks p: logged peer_kicked, refused (before its hello) or kicked (after)
 * on channel 0, then a disconnect once that is delivered; now (a slow
 * reader) disconnects at once, with nothing queued behind its backlog.
 */
static void kick_how(struct gs_community *c, struct cpeer *p, uint16_t reason, const char *detail, bool now)
{
	const char *name = cc_wire_reason_name(reason);
	cc_log_warn("peer_kicked", CC_LOG_INT("peer", p->id), CC_LOG_STR("addr", p->addr), CC_LOG_STR("reason", name),
		    CC_LOG_STR("detail", detail ? detail : ""), CC_LOG_INT("member_id", p->member),
		    CC_LOG_INT("slot", p->match ? p->slot : -1), CC_LOG_INT("bad_messages", p->bad),
		    CC_LOG_INT("unknown_messages", (int64_t)p->unknown));
	gs_replay_verdictf(c->opts.replay, p->id, "kicked %s: %s", name, detail ? detail : "");
	const char *labels[] = { name, NULL };
	cc_metric_add(c->m.kicks, labels, 1);
	cc_metric_add(c->m.dropped, labels, 1);
	ENetPeer *e = p->enet;
	if (!now) {
		struct cc_wire_msg m;
		gs_play_farewell(&m, p->phase == CP_MEMBER, reason, detail);
		p->overflow = false;
		send_msg(p, &m);
	}
	detach(c, p);
	if (!e)
		return;
	if (now) {
		cc_netsim_forget_peer(c->sim, e);
		enet_peer_disconnect_now(e, reason);
	} else {
		cc_netsim_disconnect_later(c->sim, e, reason);
	}
}

static void kick(struct gs_community *c, struct cpeer *p, uint16_t reason, const char *detail)
{
	kick_how(c, p, reason, detail, false);
}

/* Peers whose backlog overflowed during the last step: dropped at once. */
static void sweep_overflow(struct gs_community *c)
{
	for (size_t i = 0; i < c->host->peerCount; i++) {
		struct cpeer *p = c->host->peers[i].data;
		if (p && p->overflow) {
			char detail[64];
			snprintf(detail, sizeof detail, "outgoing backlog over %d messages", c->opts.max_backlog);
			kick_how(c, p, CC_REASON_BACKLOG_OVERFLOW, detail, true);
		}
	}
}

static bool count_bad(struct gs_community *c, struct cpeer *p, const struct cc_wire_fault *f)
{
	const char *kind = cc_wire_fault_name(f->kind);
	const char *labels[] = { kind, NULL };
	cc_metric_add(c->m.bad, labels, 1);
	p->bad++;
	cc_log_debug("bad_message", CC_LOG_INT("peer", p->id), CC_LOG_STR("kind", kind), CC_LOG_INT("id", f->id),
		     CC_LOG_INT("count", p->bad), CC_LOG_STR("fault", f->text));
	if (p->bad > c->opts.max_bad_messages) {
		char detail[CC_WIRE_DETAIL_MAX + 1];
		snprintf(detail, sizeof detail, "%d bad messages, last: %.90s", p->bad, f->text);
		kick(c, p, CC_REASON_MALFORMED, detail);
		return true;
	}
	return false;
}

/* ---- lobby broadcasts (the registry's events) ------------------------------------------ */

static void lobby_updated_msg(const struct gs_community *c, const struct cc_lobby *l, uint32_t revision,
			      struct cc_wire_msg *m)
{
	memset(m, 0, sizeof *m);
	m->id = CC_MSG_LOBBY_UPDATED;
	struct cc_wire_lobby_updated *u = &m->u.lobby_updated;
	u->revision = revision;
	u->lobby_id = l->id;
	u->state = (uint8_t)l->state;
	u->max_players = (uint8_t)l->max_players;
	u->name_len = (uint16_t)l->name_len;
	memcpy(u->name, l->name, l->name_len + 1);
	for (int i = 0; i < l->n_members && i < CC_WIRE_LOBBY_MEMBERS_MAX; i++) {
		const struct cc_lobby_member *mem = cc_lobby_member(c->reg, l->members[i]);
		if (!mem)
			continue;
		struct cc_wire_lobby_member *w = &u->members[u->member_count++];
		w->member_id = mem->id;
		w->ready = mem->ready;
		w->name_len = (uint16_t)mem->name_len;
		memcpy(w->name, mem->name, mem->name_len + 1);
	}
}

static void begin_match(struct gs_community *c, const struct cc_lobby *l);
static void abandon_match(struct gs_community *c, uint32_t lobby_id);

static void on_lobby_event(void *ctx, const struct cc_lobby_event *ev)
{
	struct gs_community *c = ctx;
	struct cc_wire_msg m;
	memset(&m, 0, sizeof m);
	const struct cc_lobby *l = cc_lobby_find(c->reg, ev->lobby_id);
	switch (ev->kind) {
	case CC_LOBBY_EV_UPDATED:
		if (!l)
			return;
		lobby_updated_msg(c, l, ev->revision, &m);
		break;
	case CC_LOBBY_EV_DELETED:
		m.id = CC_MSG_LOBBY_DELETED;
		m.u.lobby_deleted.revision = ev->revision;
		m.u.lobby_deleted.lobby_id = ev->lobby_id;
		cc_log_info("lobby_deleted", CC_LOG_INT("lobby_id", ev->lobby_id), CC_LOG_INT("revision", ev->revision));
		abandon_match(c, ev->lobby_id);
		break;
	case CC_LOBBY_EV_MATCH_STARTING: {
		int64_t delay = ev->start_at_ms - cc_clock_ms();
		delay = delay < 0 ? 0 : delay > UINT16_MAX ? UINT16_MAX : delay;
		m.id = CC_MSG_MATCH_STARTING;
		m.u.match_starting.revision = ev->revision;
		m.u.match_starting.lobby_id = ev->lobby_id;
		m.u.match_starting.start_tick = c->tick + (uint32_t)(delay * TICK_HZ / 1000);
		m.u.match_starting.delay_ms = (uint16_t)delay;
		cc_log_info("match_starting", CC_LOG_INT("lobby_id", ev->lobby_id), CC_LOG_INT("members", l ? l->n_members : 0),
			    CC_LOG_INT("start_tick", m.u.match_starting.start_tick), CC_LOG_INT("delay_ms", delay),
			    CC_LOG_INT("revision", ev->revision));
		break;
	}
	case CC_LOBBY_EV_BEGIN:
		if (l)
			begin_match(c, l);
		return;
	}
	broadcast(c, &m);
}

/* ---- matches ------------------------------------------------------------------------------ */

static void send_player_info(struct gs_community *c, struct cmatch *cm, int slot, struct cpeer *to)
{
	struct cc_wire_msg m;
	memset(&m, 0, sizeof m);
	m.id = CC_MSG_PLAYER_INFO;
	m.u.player_info.slot = (uint8_t)slot;
	m.u.player_info.team = (uint8_t)cm->teams[slot];
	m.u.player_info.flags = cm->by_slot[slot] ? CC_WIRE_PI_CONNECTED : 0;
	m.u.player_info.name_len = (uint16_t)strlen(cm->names[slot]);
	memcpy(m.u.player_info.name, cm->names[slot], m.u.player_info.name_len + 1);
	if (to)
		send_msg(to, &m);
	else
		(void)match_send(c, cm, &m);
}

static void send_welcome(struct gs_community *c, struct cpeer *p, int slot, int team, int max_players, int state,
			 uint32_t tick)
{
	struct cc_wire_msg m;
	memset(&m, 0, sizeof m);
	m.id = CC_MSG_WELCOME;
	struct cc_wire_welcome *w = &m.u.welcome;
	w->protocol_version = GS_PROTOCOL_VERSION;
	w->tick_rate = CC_WIRE_TICK_RATE;
	w->snapshot_rate = (uint16_t)(CC_WIRE_TICK_RATE / c->opts.snapshot_interval);
	w->mode = CC_WIRE_MODE_COMMUNITY;
	w->slot = (uint8_t)slot;
	w->team = (uint8_t)team;
	w->max_players = (uint8_t)max_players;
	w->max_inputs = CC_WIRE_MAX_INPUTS;
	w->match_state = (uint8_t)state;
	w->server_tick = tick;
	w->arena_len = (uint16_t)strlen(c->opts.arena);
	snprintf(w->arena, sizeof w->arena, "%s", c->opts.arena);
	send_msg(p, &m);
}

static struct cpeer *peer_of_member(struct gs_community *c, uint32_t member)
{
	for (size_t i = 0; i < c->host->peerCount; i++) {
		struct cpeer *p = c->host->peers[i].data;
		if (p && p->phase == CP_MEMBER && p->member == member)
			return p;
	}
	return NULL;
}

/* The countdown ended: the lobby's members play a match, slots in join order, teams alternating. */
static void begin_match(struct gs_community *c, const struct cc_lobby *l)
{
	struct cmatch *cm = calloc(1, sizeof *cm);
	struct gs_match_options mo = { .n_slots = l->n_members, .expected = l->n_members,
				       .match_seconds = c->opts.match_seconds, .warmup_seconds = c->opts.warmup_seconds,
				       .connect_window_seconds = 10, .goal_pause_seconds = c->opts.goal_pause_seconds,
				       .overtime_max_seconds = c->opts.overtime_max_seconds };
	for (int i = 0; i < l->n_members && i < GS_MATCH_MAX_SLOTS; i++)
		mo.teams[i] = (uint8_t)cc_lobby_team_of(i, l->n_members);
	if (cm)
		cm->match = l->n_members <= MATCH_PLAYERS_MAX ? gs_match_create(&mo) : NULL;
	if (!cm || !cm->match) {
		cc_log_error("match_not_started", CC_LOG_INT("lobby_id", l->id), CC_LOG_INT("members", l->n_members),
			     CC_LOG_STR("reason", "out of memory or more members than ships"));
		free(cm);
		(void)cc_lobby_match_ended(c->reg, l->id); /* back to open: the members are not stuck in_match */
		return;
	}
	cm->lobby_id = l->id;
	cm->number = l->matches;
	cm->n = l->n_members;
	cm->winner = -1;
	cm->begun_unix = (int64_t)time(NULL);
	for (int i = 0; i < cm->n; i++) {
		const struct cc_lobby_member *mem = cc_lobby_member(c->reg, l->members[i]);
		cm->members[i] = l->members[i];
		cm->teams[i] = mo.teams[i];
		snprintf(cm->names[i], sizeof cm->names[i], "%s", mem ? mem->name : "");
		struct cpeer *p = peer_of_member(c, l->members[i]);
		if (!p)
			continue;
		cm->by_slot[i] = p;
		p->match = cm;
		p->slot = i;
		gs_input_state_init(&p->input, &c->opts.input);
		p->reported = p->input;
		gs_match_set_driver(cm->match, i, GS_DRIVER_PLAYER);
	}
	cm->next = c->matches;
	c->matches = cm;
	c->n_matches++;
	cc_metric_add(c->m.matches_total, NULL, 1);
	for (int i = 0; i < cm->n; i++) {
		if (!cm->by_slot[i])
			continue;
		send_welcome(c, cm->by_slot[i], i, cm->teams[i], cm->n, gs_match_state(cm->match), gs_match_tick(cm->match));
		for (int j = 0; j < cm->n; j++)
			send_player_info(c, cm, j, cm->by_slot[i]);
	}
	char members[CC_LOBBY_MEMBERS_MAX * 12 + 2];
	size_t off = 0;
	for (int i = 0; i < cm->n && off < sizeof members; i++)
		off += (size_t)snprintf(members + off, sizeof members - off, "%s%u", i ? "," : "", cm->members[i]);
	cc_log_info("match_begun", CC_LOG_INT("lobby_id", cm->lobby_id), CC_LOG_INT("match", cm->number),
		    CC_LOG_INT("players", cm->n), CC_LOG_STR("members", off ? members : ""),
		    CC_LOG_INT("matches_running", c->n_matches));
	gauges(c);
}

/* Takes p out of its match: its ship coasts with neutral controls; the others hear of it. */
static void leave_match(struct gs_community *c, struct cpeer *p)
{
	struct cmatch *cm = p->match;
	p->match = NULL;
	if (!cm || p->slot < 0 || p->slot >= cm->n || cm->by_slot[p->slot] != p)
		return;
	cm->by_slot[p->slot] = NULL;
	if (gs_match_driver(cm->match, p->slot) == GS_DRIVER_PLAYER)
		gs_match_set_driver(cm->match, p->slot, GS_DRIVER_AWAY);
	if (!c->stopping)
		send_player_info(c, cm, p->slot, NULL);
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

/* One JSON line per match in --results-log (abandoned: its lobby emptied before the end). */
static void write_result(struct gs_community *c, const struct cmatch *cm, bool abandoned)
{
	char members[CC_LOBBY_MEMBERS_MAX * 12 + 2];
	size_t off = 0;
	for (int i = 0; i < cm->n && off < sizeof members; i++)
		off += (size_t)snprintf(members + off, sizeof members - off, "%s%u", i ? "," : "", cm->members[i]);
	int score[2];
	gs_match_score(cm->match, score);
	cc_log_info("match_ended", CC_LOG_INT("lobby_id", cm->lobby_id), CC_LOG_INT("match", cm->number),
		    CC_LOG_STR("members", off ? members : ""), CC_LOG_INT("score_0", score[0]), CC_LOG_INT("score_1", score[1]),
		    CC_LOG_INT("winner", abandoned ? -1 : cm->winner), CC_LOG_STR("reason", abandoned ? "ABANDONED" : cm->end_reason),
		    CC_LOG_BOOL("abandoned", abandoned), CC_LOG_INT("tick", gs_match_tick(cm->match)));
	if (!c->results)
		return;
	const struct cc_match *life = gs_match_lifecycle(cm->match);
	fprintf(c->results, "{\"lobby_id\":%u,\"match\":%u,\"started_at\":%" PRId64 ",\"ended_at\":%" PRId64
			    ",\"score\":[%d,%d],\"winner\":%d,\"reason\":\"%s\",\"abandoned\":%s,\"duration_seconds\":%u,"
			    "\"players\":[",
		cm->lobby_id, cm->number, cm->begun_unix, (int64_t)time(NULL), score[0], score[1], abandoned ? -1 : cm->winner,
		abandoned ? "ABANDONED" : cm->end_reason, abandoned ? "true" : "false",
		(life->playing_ticks + life->overtime_ticks) / TICK_HZ);
	for (int i = 0; i < cm->n; i++) {
		fprintf(c->results, "%s{\"member_id\":%u,\"name\":", i ? "," : "", cm->members[i]);
		json_str(c->results, cm->names[i]);
		fprintf(c->results, ",\"slot\":%d,\"team\":%d,\"goals\":%d}", i, cm->teams[i], cm->goals[i]);
	}
	fprintf(c->results, "]}\n");
	if (fflush(c->results) != 0)
		cc_log_error("results_log_failed", CC_LOG_STR("error", strerror(errno)));
}

static void unlink_match(struct gs_community *c, struct cmatch *cm)
{
	for (struct cmatch **pp = &c->matches; *pp; pp = &(*pp)->next)
		if (*pp == cm) {
			*pp = cm->next;
			c->n_matches--;
			break;
		}
	for (int i = 0; i < cm->n; i++)
		if (cm->by_slot[i])
			cm->by_slot[i]->match = NULL;
	gs_match_free(cm->match);
	free(cm);
}

/*
 * The lobby of a running match was deleted (its last member left): the
 * match is abandoned, and freed by the next tick (this may run inside
 * tick_match, from a kick).
 */
static void abandon_match(struct gs_community *c, uint32_t lobby_id)
{
	for (struct cmatch *cm = c->matches; cm; cm = cm->next)
		if (cm->lobby_id == lobby_id && !cm->abandoned) {
			if (!cm->ended)
				write_result(c, cm, true);
			cm->abandoned = true;
			return;
		}
}

struct match_ev_ctx {
	struct gs_community *c;
	struct cmatch *cm;
};

static void on_match_event(void *ctx, const struct gs_event *ev)
{
	struct match_ev_ctx *mc = ctx;
	struct cmatch *cm = mc->cm;
	struct cc_wire_msg m;
	gs_play_event_msg(&m, cm->match, ev);
	if (ev->kind == GS_EVENT_GOAL && ev->slot >= 0 && ev->slot < cm->n && cm->teams[ev->slot] == ev->team)
		cm->goals[ev->slot]++; /* an own goal counts for nobody */
	if (ev->kind == GS_EVENT_ENDED) {
		cm->ended = true;
		cm->ended_ms = cc_clock_ms();
		cm->score[0] = ev->score[0];
		cm->score[1] = ev->score[1];
		cm->winner = ev->winner;
		cm->end_reason = ev->end_reason ? ev->end_reason : "";
		write_result(mc->c, cm, false);
	}
	if (m.id)
		(void)match_send(mc->c, cm, &m);
}

/* One tick of one match: inputs, step, snapshot; after the end linger its members go back to the lobby. */
static void tick_match(struct gs_community *c, struct cmatch *cm, bool grace)
{
	if (cm->abandoned) {
		unlink_match(c, cm);
		gauges(c);
		return;
	}
	if (cm->ended && cc_clock_ms() - cm->ended_ms >= c->opts.end_linger_ms) {
		uint32_t lobby = cm->lobby_id;
		unlink_match(c, cm);
		(void)cc_lobby_match_ended(c->reg, lobby); /* lobby_updated: open, nobody ready */
		gauges(c);
		return;
	}
	uint32_t stall_ticks = c->opts.input_stall_kick_ms > 0 ? (uint32_t)(c->opts.input_stall_kick_ms * TICK_HZ / 1000) : 0;
	for (int i = 0; i < cm->n; i++) {
		struct cpeer *p = cm->by_slot[i];
		if (!p)
			continue;
		const struct gs_input *in = gs_input_next(&p->input);
		if (in)
			gs_match_input(cm->match, i, in);
		gs_play_input_metrics(c->m.input, &p->input, &p->reported);
		if (stall_ticks > 0 && p->input.dry_ticks > stall_ticks && !grace && !cm->ended) {
			char detail[64];
			snprintf(detail, sizeof detail, "no input for %" PRId64 " ms", (int64_t)p->input.dry_ticks * 1000 / TICK_HZ);
			kick(c, p, CC_REASON_INPUT_STALLED, detail); /* leaves the match and the lobby */
		}
	}
	if (cm->abandoned)
		return; /* the kick emptied its lobby: freed next tick */
	struct match_ev_ctx mc = { .c = c, .cm = cm };
	gs_match_step(cm->match, on_match_event, &mc);
	uint32_t t = gs_match_tick(cm->match);
	if (c->opts.snapshot_interval > 0 && t % (uint32_t)c->opts.snapshot_interval == 0) {
		bool connected[GS_MATCH_MAX_SLOTS] = { false };
		const struct gs_input_state *inputs[GS_MATCH_MAX_SLOTS] = { NULL };
		for (int i = 0; i < cm->n; i++) {
			connected[i] = cm->by_slot[i] != NULL;
			inputs[i] = cm->by_slot[i] ? &cm->by_slot[i]->input : NULL;
		}
		struct cc_wire_msg m;
		gs_wire_snapshot(&m, cm->match, connected, inputs);
		size_t n = match_send(c, cm, &m);
		cc_metric_add(c->m.snapshot_bytes, NULL, (double)n);
	}
}

/* ---- requests ------------------------------------------------------------------------------- */

static void lobby_result(struct gs_community *c, struct cpeer *p, uint16_t request, uint16_t msg, int result)
{
	const struct cc_lobby_member *mem = p->phase == CP_MEMBER ? cc_lobby_member(c->reg, p->member) : NULL;
	struct cc_wire_msg m;
	memset(&m, 0, sizeof m);
	m.id = CC_MSG_LOBBY_RESULT;
	m.u.lobby_result.request = request;
	m.u.lobby_result.request_msg = msg;
	m.u.lobby_result.result = (uint8_t)result;
	m.u.lobby_result.lobby_id = mem ? mem->lobby_id : 0;
	m.u.lobby_result.member_id = mem ? mem->id : 0;
	const char *labels[] = { cc_wire_msg_name(msg), cc_lobby_result_name(result), NULL };
	cc_metric_add(c->m.requests, labels, 1);
	cc_log_debug("lobby_request", CC_LOG_INT("peer", p->id), CC_LOG_INT("member_id", mem ? mem->id : 0),
		     CC_LOG_STR("request", cc_wire_msg_name(msg)), CC_LOG_STR("result", cc_lobby_result_name(result)));
	send_msg(p, &m);
}

static void lobby_list(struct gs_community *c, struct cpeer *p, const struct cc_wire_lobby_list_request *rq)
{
	struct cc_wire_msg m;
	memset(&m, 0, sizeof m);
	m.id = CC_MSG_LOBBY_LIST;
	struct cc_wire_lobby_list *ll = &m.u.lobby_list;
	int total = cc_lobby_count(c->reg);
	ll->request = rq->request;
	ll->total = (uint16_t)(total > UINT16_MAX ? UINT16_MAX : total);
	ll->first = rq->first;
	for (int i = rq->first; i < total && ll->count < CC_WIRE_LOBBY_LIST_MAX; i++) {
		const struct cc_lobby *l = cc_lobby_at(c->reg, i);
		struct cc_wire_lobby_summary *s = &ll->lobbies[ll->count++];
		s->lobby_id = l->id;
		s->state = (uint8_t)l->state;
		s->members = (uint8_t)l->n_members;
		s->max_players = (uint8_t)l->max_players;
		s->name_len = (uint16_t)l->name_len;
		memcpy(s->name, l->name, l->name_len + 1);
	}
	const char *labels[] = { "lobby_list_request", "ok", NULL };
	cc_metric_add(c->m.requests, labels, 1);
	send_msg(p, &m);
}

/* A request from a registered member: the registry decides, the events broadcast, then the answer. */
static void on_request(struct gs_community *c, struct cpeer *p, const struct cc_wire_msg *m)
{
	int64_t now = cc_clock_ms();
	int rc = CC_LOBBY_R_OK;
	uint16_t request = 0;
	switch (m->id) {
	case CC_MSG_SET_NAME:
		request = m->u.set_name.request;
		rc = cc_lobby_rename(c->reg, p->member, m->u.set_name.name, m->u.set_name.name_len);
		if (rc == CC_LOBBY_R_OK && p->match) {
			/* The match's player_info carries the new name too (protocol section 4: a rename). */
			struct cmatch *cm = p->match;
			snprintf(cm->names[p->slot], sizeof cm->names[p->slot], "%s", m->u.set_name.name);
			send_player_info(c, cm, p->slot, NULL);
		}
		break;
	case CC_MSG_LOBBY_LIST_REQUEST:
		lobby_list(c, p, &m->u.lobby_list_request);
		return;
	case CC_MSG_LOBBY_CREATE: {
		request = m->u.lobby_create.request;
		uint32_t id = 0;
		rc = cc_lobby_create(c->reg, p->member, m->u.lobby_create.name, m->u.lobby_create.name_len,
				     m->u.lobby_create.max_players, now, &id);
		if (rc == CC_LOBBY_R_OK)
			cc_log_info("lobby_created", CC_LOG_INT("lobby_id", id), CC_LOG_INT("member_id", p->member),
				    CC_LOG_STR("name", m->u.lobby_create.name), CC_LOG_INT("max_players", m->u.lobby_create.max_players),
				    CC_LOG_INT("lobbies", cc_lobby_count(c->reg)));
		break;
	}
	case CC_MSG_LOBBY_JOIN:
		request = m->u.lobby_join.request;
		rc = cc_lobby_join(c->reg, p->member, m->u.lobby_join.lobby_id, now);
		break;
	case CC_MSG_LOBBY_LEAVE:
		request = m->u.lobby_leave.request;
		rc = cc_lobby_leave(c->reg, p->member, now);
		break;
	case CC_MSG_LOBBY_SET_READY:
		request = m->u.lobby_set_ready.request;
		rc = cc_lobby_set_ready(c->reg, p->member, m->u.lobby_set_ready.ready != 0, now);
		break;
	default:
		return;
	}
	gauges(c);
	if (p->enet) /* a broadcast may have overflowed its own backlog: then it gets no answer */
		lobby_result(c, p, request, m->id, rc);
}

static bool is_lobby_request(uint16_t id)
{
	return id >= 0x0300 && id <= 0x037F;
}

/* ---- the handshake -------------------------------------------------------------------------- */

static void on_hello(struct gs_community *c, struct cpeer *p, const struct cc_wire_hello *h)
{
	char detail[64];
	if (h->protocol_version != GS_PROTOCOL_VERSION) {
		snprintf(detail, sizeof detail, "server speaks protocol %d, client %u", GS_PROTOCOL_VERSION,
			 (unsigned)h->protocol_version);
		kick(c, p, CC_REASON_PROTOCOL_MISMATCH, detail);
		return;
	}
	if (h->tick_rate != CC_WIRE_TICK_RATE) {
		snprintf(detail, sizeof detail, "server ticks at %d Hz, client %u", CC_WIRE_TICK_RATE, (unsigned)h->tick_rate);
		kick(c, p, CC_REASON_TICK_RATE_MISMATCH, detail);
		return;
	}
	if (h->auth != CC_WIRE_AUTH_NAME) {
		kick(c, p, CC_REASON_WRONG_MODE, "a community server admits a display name (auth 2), not a join token");
		return;
	}
	if (!cc_lobby_name_valid(h->credential, h->credential_len)) {
		kick(c, p, CC_REASON_INVALID_NAME, "a name is 1-32 bytes of UTF-8 without control characters");
		return;
	}
	uint32_t member = cc_lobby_register(c->reg, h->credential, h->credential_len);
	if (!member) {
		kick(c, p, CC_REASON_SERVER_FULL, "out of memory");
		return;
	}
	p->phase = CP_MEMBER;
	p->member = member;
	p->last_recv_ms = cc_clock_ms();
	cc_log_info("member_registered", CC_LOG_INT("peer", p->id), CC_LOG_STR("addr", p->addr),
		    CC_LOG_INT("member_id", member), CC_LOG_STR("name", h->credential),
		    CC_LOG_INT("members", cc_lobby_member_count(c->reg)));
	send_welcome(c, p, CC_WIRE_SLOT_NONE, CC_WIRE_TEAM_NONE, MATCH_PLAYERS_MAX, CC_MATCH_LOBBY, c->tick);
	/* Every lobby as it stands: the newcomer's view is complete from here, then kept by the broadcasts. */
	for (int i = 0; i < cc_lobby_count(c->reg); i++) {
		struct cc_wire_msg m;
		lobby_updated_msg(c, cc_lobby_at(c->reg, i), cc_lobby_revision(c->reg), &m);
		send_msg(p, &m);
	}
	gauges(c);
}

static bool in_grace(const struct gs_community *c, int64_t now_ms);

/* ---- receiving ------------------------------------------------------------------------------- */

static uint16_t le16(const uint8_t *b)
{
	return (uint16_t)(b[0] | b[1] << 8);
}

static void on_packet(struct gs_community *c, struct cpeer *p, int channel, const uint8_t *data, size_t len)
{
	struct cc_wire_msg m;
	struct cc_wire_fault f;
	uint16_t version;
	if (p->phase == CP_HELLO && cc_wire_peek_hello_version(data, len, &version) && version != GS_PROTOCOL_VERSION) {
		char detail[64];
		snprintf(detail, sizeof detail, "server speaks protocol %d, client %u", GS_PROTOCOL_VERSION, (unsigned)version);
		kick(c, p, CC_REASON_PROTOCOL_MISMATCH, detail);
		return;
	}
	int rc = cc_wire_decode_from(data, len, CC_WIRE_TO_SERVER, (uint8_t)channel, &m, &f);
	if (rc == CC_ENOTFOUND) {
		p->unknown++;
		cc_metric_add(c->m.unknown, NULL, 1);
		if (p->unknown == 1)
			cc_log_info("unknown_message", CC_LOG_INT("peer", p->id), CC_LOG_INT("id", f.id),
				    CC_LOG_INT("bytes", (int64_t)len), CC_LOG_STR("phase", p->phase == CP_HELLO ? "handshake" : "session"));
		return;
	}
	if (p->phase == CP_HELLO) {
		if (rc != 0) {
			/* A hello whose name breaks the rules (it decoded up to its credential): invalid_name. */
			uint16_t tick_rate = 0;
			if (gs_play_hello_bad_name(data, len, &f, &tick_rate)) {
				if (tick_rate != CC_WIRE_TICK_RATE) {
					kick(c, p, CC_REASON_TICK_RATE_MISMATCH, "server ticks at 60 Hz");
					return;
				}
				kick(c, p, CC_REASON_INVALID_NAME, f.text);
				return;
			}
			kick(c, p, CC_REASON_MALFORMED, f.text);
			return;
		}
		switch (m.id) {
		case CC_MSG_HELLO:
			on_hello(c, p, &m.u.hello);
			return;
		case CC_MSG_SPECTATE:
			kick(c, p, CC_REASON_SPECTATORS_FULL, "a community server has no spectators");
			return;
		case CC_MSG_RESUME:
			kick(c, p, CC_REASON_RESUME_REFUSED, "a community server has no reconnects: say hello again");
			return;
		case CC_MSG_PING:
			break;
		default:
			if (is_lobby_request(m.id)) {
				/* Refused and dropped: a lobby request needs a registered name first. */
				lobby_result(c, p, le16(data + 2), m.id, CC_LOBBY_R_NOT_REGISTERED);
				kick(c, p, CC_REASON_MALFORMED, "a lobby request before hello");
				return;
			}
			if (p->ignored++ == 0)
				cc_log_info("message_before_handshake_ignored", CC_LOG_INT("peer", p->id),
					    CC_LOG_STR("message", cc_wire_msg_name(m.id)));
			return;
		}
	}
	uint16_t request = 0;
	bool refusable = rc != 0 && gs_play_lobby_refusable(data, len, (uint8_t)channel, &f, &request);
	if (rc != 0 && !refusable) {
		(void)count_bad(c, p, &f);
		return;
	}
	/* Every lobby request pays the lobby bucket, a refused one too (protocol section 11). */
	if ((refusable || is_lobby_request(m.id)) && !cc_leaky_take(&p->lobby_bucket, 1, c->service_ns)) {
		const char *labels[] = { "lobby_requests", NULL };
		cc_metric_add(c->m.rl_packets, labels, 1);
		/* Dropped unanswered; the drop fills the same violation bucket as the packet limits. */
		if (!in_grace(c, c->service_ns / 1000000) && !cc_leaky_take(&p->rate.over, 1, c->service_ns))
			kick(c, p, CC_REASON_RATE_LIMITED, "persistently over the lobby request limit");
		return;
	}
	if (refusable) {
		/* It carries its request number but breaks a value rule: a typed refusal. */
		lobby_result(c, p, request, f.id, CC_LOBBY_R_INVALID);
		return;
	}
	switch (m.id) {
	case CC_MSG_INPUT:
		if (p->match)
			gs_input_receive(&p->input, &m.u.input);
		break;
	case CC_MSG_PING: {
		struct cc_wire_msg pong;
		gs_play_pong(&pong, m.u.ping.client_time, p->match ? gs_match_tick(p->match->match) : c->tick, cc_clock_ns(),
			     c->next_tick_ns);
		send_msg(p, &pong);
		break;
	}
	case CC_MSG_HELLO:
	case CC_MSG_SPECTATE:
	case CC_MSG_RESUME: {
		struct cc_wire_fault again = { .kind = CC_WIRE_FAULT_MALFORMED, .id = m.id };
		snprintf(again.text, sizeof again.text, "%s: a second handshake on an admitted session", cc_wire_msg_name(m.id));
		(void)count_bad(c, p, &again);
		break;
	}
	default:
		if (is_lobby_request(m.id))
			on_request(c, p, &m);
		break;
	}
}

/* ---- the loop ---------------------------------------------------------------------------------- */

static bool in_grace(const struct gs_community *c, int64_t now_ms)
{
	return now_ms < c->grace_until_ms;
}

static void note_stall(struct gs_community *c, int64_t next)
{
	c->service_ns = cc_clock_ns();
	int64_t late_ms = (c->service_ns - next) / 1000000;
	if (late_ms <= STALL_LOG_MS || c->stall_seen_next == next)
		return;
	c->stall_seen_next = next;
	c->grace_until_ms = cc_clock_ms() + c->opts.stall_grace_ms;
	cc_metric_add(c->m.stalls, NULL, 1);
	cc_log_warn("server_stalled", CC_LOG_INT("late_ms", late_ms), CC_LOG_INT("tick", c->tick),
		    CC_LOG_INT("grace_ms", c->opts.stall_grace_ms));
}

static void peer_addr(const ENetPeer *e, char *out, size_t cap)
{
	char ip[40] = "?";
	(void)enet_address_get_host_ip(&e->address, ip, sizeof ip);
	snprintf(out, cap, "%s:%u", ip, (unsigned)e->address.port);
}

/*
 * A new connection. Silent peers (no hello yet) cannot crowd out an honest
 * one, as in allocated mode (protocol section 4): one address keeps at most
 * --max-silent-per-address of them (its oldest gives way), and when all
 * --max-peers are taken the oldest silent peer anywhere gives way; one
 * younger than IDLE_EVICT_MIN_MS never does (its hello may be in flight).
 * Evicted peers are refused handshake_timeout; with nobody to evict the
 * newcomer is refused server_full.
 */
static void on_connect(struct gs_community *c, ENetPeer *e)
{
	int64_t now = cc_clock_ms();
	int ours = 0, silent_same = 0;
	struct cpeer *old_same = NULL, *old_any = NULL;
	for (size_t i = 0; i < c->host->peerCount; i++) {
		struct cpeer *q = c->host->peers[i].data;
		if (!q || &c->host->peers[i] == e)
			continue;
		ours++;
		if (q->phase != CP_HELLO || now - q->connected_ms < IDLE_EVICT_MIN_MS)
			continue;
		if (!old_any || q->connected_ms < old_any->connected_ms)
			old_any = q;
		if (c->host->peers[i].address.host == e->address.host) {
			silent_same++;
			if (!old_same || q->connected_ms < old_same->connected_ms)
				old_same = q;
		}
	}
	struct cpeer *p = calloc(1, sizeof *p);
	if (!p) {
		enet_peer_disconnect_now(e, 0);
		return;
	}
	p->c = c;
	p->enet = e;
	p->id = ++c->next_peer_id;
	p->phase = CP_HELLO;
	p->connected_ms = p->last_recv_ms = cc_clock_ms();
	p->slot = -1;
	peer_addr(e, p->addr, sizeof p->addr);
	e->data = p;
	int64_t ns = cc_clock_ns();
	gs_rate_init(&p->rate, &c->limits, ns);
	cc_leaky_init(&p->lobby_bucket, c->opts.lobby_rps, c->opts.lobby_rps, ns);
	enet_peer_timeout(e, 0, ENET_TIMEOUT_MIN_MS, ENET_TIMEOUT_MAX_MS);
	cc_metric_add(c->m.peers, NULL, 1);
	if (old_same && silent_same >= c->opts.max_silent_per_address) {
		if (old_any == old_same)
			old_any = NULL;
		kick(c, old_same, CC_REASON_HANDSHAKE_TIMEOUT, "silent while another connection from its address needed room");
		ours--;
	}
	if (ours < c->opts.max_peers)
		return;
	if (old_any) {
		kick(c, old_any, CC_REASON_HANDSHAKE_TIMEOUT, "silent while the server needed room");
		return;
	}
	kick(c, p, CC_REASON_SERVER_FULL, "no free connection");
}

static void handle(struct gs_community *c, ENetEvent *ev)
{
	switch (ev->type) {
	case ENET_EVENT_TYPE_CONNECT:
		on_connect(c, ev->peer);
		break;
	case ENET_EVENT_TYPE_DISCONNECT: {
		struct cpeer *p = ev->peer->data;
		if (p) {
			cc_log_info("peer_left", CC_LOG_INT("peer", p->id), CC_LOG_STR("addr", p->addr),
				    CC_LOG_INT("member_id", p->member), CC_LOG_INT("data", (int64_t)ev->data));
			if (p->phase == CP_MEMBER) {
				const char *labels[] = { "left", NULL };
				cc_metric_add(c->m.dropped, labels, 1);
			}
			detach(c, p);
		}
		break;
	}
	case ENET_EVENT_TYPE_RECEIVE: {
		struct cpeer *p = ev->peer->data;
		gs_replay_packet(c->opts.replay, GS_REPLAY_IN, p ? p->id : 0, ev->channelID, ev->packet->data,
				 ev->packet->dataLength);
		if (p) {
			p->last_recv_ms = c->service_ns / 1000000;
			const char *limit = "";
			char detail[96];
			enum gs_rate_verdict v = gs_rate_charge(&p->rate, &c->limits, ev->packet->dataLength, c->service_ns,
								in_grace(c, c->service_ns / 1000000), p->id, p->addr,
								p->match ? p->slot : -1, &limit, detail, sizeof detail);
			if (v == GS_RATE_OK)
				on_packet(c, p, ev->channelID, ev->packet->data, ev->packet->dataLength);
			else if (v == GS_RATE_KICK)
				kick(c, p, CC_REASON_RATE_LIMITED, detail);
		}
		enet_packet_destroy(ev->packet);
		break;
	}
	default:
		break;
	}
	sweep_overflow(c);
}

static void tick(struct gs_community *c)
{
	int64_t now = cc_clock_ms();
	bool grace = in_grace(c, now);
	c->tick++;
	cc_lobby_tick(c->reg, now); /* countdowns that ended: matches begin */
	for (struct cmatch *cm = c->matches, *next; cm; cm = next) {
		next = cm->next;
		tick_match(c, cm, grace);
	}
	/* Deadlines: handshakes (10 s) and keep-alive (30 s). A stall's time is not theirs. */
	for (size_t i = 0; !grace && i < c->host->peerCount; i++) {
		struct cpeer *p = c->host->peers[i].data;
		if (!p)
			continue;
		if (p->phase == CP_HELLO && now - p->connected_ms > c->opts.handshake_timeout_ms)
			kick(c, p, CC_REASON_HANDSHAKE_TIMEOUT, "no hello in time");
		else if (p->phase == CP_MEMBER && c->opts.keepalive_ms > 0 && now - p->last_recv_ms > c->opts.keepalive_ms)
			kick(c, p, CC_REASON_IDLE_TIMEOUT, "nothing received within the keep-alive timeout");
	}
	sweep_overflow(c);
	cc_metric_add(c->m.ticks, NULL, 1);
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
 * The tick loop, paced as allocated mode's (pace.h): one wake-up per tick
 * however many lobbies, matches and peers the one host serves, then every
 * due tick runs each match.
 */
int gs_community_run(struct gs_community *c, bool (*stopping)(void *ctx), void *ctx)
{
	int64_t next = cc_clock_ns();
	int64_t ticks = 0;
	c->next_tick_ns = next;
	while (!stopping(ctx)) {
		if (!gs_pace_wait(&c->pace, next))
			continue; /* a backlog drained before the deadline (or an early wake) */
		int64_t started = cc_clock_ns();
		note_stall(c, next);
		gs_pace_tick_started(&c->pace, next, started);
		int runs = 0;
		while (cc_clock_ns() >= next && runs < MAX_CATCH_UP) {
			next += TICK_NS;
			c->next_tick_ns = next;
			tick(c);
			runs++;
			ticks++;
		}
		if (cc_clock_ns() >= next) {
			int64_t missed = (cc_clock_ns() - next) / TICK_NS + 1;
			cc_metric_add(c->m.missed, NULL, (double)missed);
			next = cc_clock_ns() + TICK_NS;
		}
		cc_netsim_flush(c->sim, c->host);
		if (!atomic_exchange(&c->ready, true))
			cc_log_info("ready", CC_LOG_DBL("ms_since_main", (double)(cc_clock_ns() - c->opts.started_ns) / 1e6),
				    CC_LOG_STR("mode", "community"));
	}
	gs_pace_log(&c->pace, ticks);
	/* Stopping: everyone is told, and the disconnects get a moment to leave. Stopping
	 * first, so a kick does not broadcast its departure to the others being kicked. */
	c->stopping = true;
	for (size_t i = 0; i < c->host->peerCount; i++) {
		struct cpeer *p = c->host->peers[i].data;
		if (p)
			kick(c, p, CC_REASON_SHUTTING_DOWN, "the server is stopping");
	}
	int64_t end = cc_clock_ms() + 500;
	ENetEvent ev;
	while (cc_clock_ms() < end && cc_netsim_service(c->sim, c->host, &ev, 20) >= 0) {
		if (ev.type == ENET_EVENT_TYPE_RECEIVE)
			enet_packet_destroy(ev.packet);
	}
	return 0;
}

bool gs_community_ready(void *community, char *why, size_t whylen)
{
	struct gs_community *c = community;
	if (!atomic_load(&c->ready)) {
		snprintf(why, whylen, "the tick loop has not run yet");
		return false;
	}
	return true;
}

int gs_community_port(const struct gs_community *c)
{
	return c->host->address.port;
}

struct gs_community *gs_community_create(const struct gs_community_options *opts)
{
	struct gs_community *c = calloc(1, sizeof *c);
	ENetAddress addr = { .port = (enet_uint16)opts->port };
	if (!c)
		return NULL;
	c->opts = *opts;
	struct cc_lobby_config lc = { .max_lobbies = opts->max_lobbies, .max_players = MATCH_PLAYERS_MAX,
				      .countdown_ms = opts->countdown_ms };
	c->reg = cc_lobby_registry_create(&lc, on_lobby_event, c);
	if (!c->reg) {
		cc_log_error("start_failed", CC_LOG_STR("reason", "the lobby registry: out of memory or --max-lobbies out of range"));
		goto out_fail;
	}
	if (opts->results_log) {
		c->results = fopen(opts->results_log, "ae");
		if (!c->results) {
			cc_log_error("start_failed", CC_LOG_STR("reason", "cannot open --results-log"),
				     CC_LOG_STR("path", opts->results_log), CC_LOG_STR("error", strerror(errno)));
			goto out_fail;
		}
	}
	if (enet_address_set_host_ip(&addr, opts->bind) != 0) {
		cc_log_error("start_failed", CC_LOG_STR("reason", "--bind is not an IPv4 address"));
		goto out_fail;
	}
	c->host = enet_host_create(&addr, (size_t)opts->max_peers + REFUSE_SPARE, GS_CHANNELS, 0, 0);
	if (!c->host) {
		cc_log_error("start_failed", CC_LOG_STR("reason", "cannot bind the UDP game port"), CC_LOG_STR("bind", opts->bind),
			     CC_LOG_INT("port", opts->port));
		goto out_fail;
	}
	c->host->maximumPacketSize = 64 * 1024;
	c->host->maximumWaitingData = 256 * 1024;
	c->host->duplicatePeers = ENET_PROTOCOL_MAXIMUM_PEER_ID;
	if (opts->port == 0) {
		ENetAddress bound;
		if (enet_socket_get_address(c->host->socket, &bound) == 0)
			c->host->address.port = bound.port;
	}
	if (cc_netsim_active(&opts->netsim)) {
		c->sim = cc_netsim_create(c->host, &opts->netsim);
		if (!c->sim) {
			cc_log_error("start_failed", CC_LOG_STR("reason", "the network simulation: out of memory or a knob out of range"));
			goto out_fail;
		}
	}
	gs_pace_init(&c->pace, c->host, c->sim, &c->service_ns, pace_woke, pace_event, c);
	const char *reason_l[] = { "reason", NULL };
	const char *kind_l[] = { "kind", NULL };
	const char *state_l[] = { "state", NULL };
	const char *req_l[] = { "request", "result", NULL };
	const char *msg_l[] = { "message", NULL };
	const char *limit_l[] = { "limit", NULL };
	const char *outcome_l[] = { "outcome", NULL };
	c->m.ticks = cc_counter("cosmic_clash_gameserver_ticks_total", "Simulation ticks run.", NULL, 1);
	c->m.missed = cc_counter("cosmic_clash_gameserver_missed_ticks_total",
				 "Ticks skipped because the loop fell more than 5 ticks behind.", NULL, 1);
	c->m.kicks = cc_counter("cosmic_clash_gameserver_peers_kicked_total", "Peers kicked, by reason.", reason_l, 32);
	c->m.bad = cc_counter("cosmic_clash_gameserver_bad_messages_total",
			      "Truncated, oversized or misrouted messages, by kind.", kind_l, 16);
	c->m.unknown = cc_counter("cosmic_clash_gameserver_unknown_messages_total", "Messages with an unknown id, skipped.",
				  NULL, 1);
	c->m.peers = cc_gauge("cosmic_clash_gameserver_peers", "Connected peers.", NULL, 1);
	c->m.rl_packets = cc_counter("cosmic_clash_gameserver_rate_limited_packets_total",
				     "Packets dropped over a peer's packet, byte or lobby request limit, by limit.", limit_l, 3);
	c->m.rl_bytes = cc_counter("cosmic_clash_gameserver_rate_limited_bytes_total",
				   "Bytes of the packets dropped over a peer's rate limits.", NULL, 1);
	c->m.input = cc_counter("cosmic_clash_gameserver_input_events_total",
				"Input pipeline events: held, lost, skipped, out_of_range, resync.", outcome_l, 5);
	c->m.stalls = cc_counter("cosmic_clash_gameserver_server_stalls_total",
				 "Times the tick loop itself ran over 100 ms late (each opens the stall grace).", NULL, 1);
	c->m.snapshot_bytes = cc_counter("cosmic_clash_gameserver_snapshot_bytes_total",
					 "Snapshot payload bytes encoded (each sent to every player of its match).", NULL, 1);
	c->m.lobbies = cc_gauge("cosmic_clash_gameserver_lobbies", "Community lobbies, by state.", state_l, 3);
	c->m.members = cc_gauge("cosmic_clash_gameserver_lobby_members", "Registered players in a lobby.", NULL, 1);
	c->m.registered = cc_gauge("cosmic_clash_gameserver_registered_players", "Registered (named) players.", NULL, 1);
	c->m.matches = cc_gauge("cosmic_clash_gameserver_matches_running", "Lobby matches being played.", NULL, 1);
	c->m.matches_total = cc_counter("cosmic_clash_gameserver_matches_started_total", "Lobby matches begun.", NULL, 1);
	c->m.requests = cc_counter("cosmic_clash_gameserver_lobby_requests_total", "Lobby requests answered, by request and result.",
				   req_l, 64);
	c->m.broadcasts = cc_counter("cosmic_clash_gameserver_lobby_broadcasts_total",
				     "Lobby broadcast messages sent (one per recipient), by message.", msg_l, 3);
	c->m.dropped = cc_counter("cosmic_clash_gameserver_dropped_peers_total",
				  "Peers dropped or gone, by reason (a kick reason, or left).", reason_l, 32);
	c->limits = (struct gs_rate_limits){ .pps = opts->peer_max_pps, .bps = opts->peer_max_bps,
					     .log_window_ms = opts->rate_log_window_ms, .m_packets = c->m.rl_packets,
					     .m_bytes = c->m.rl_bytes };
	gauges(c);
	return c;
out_fail:
	gs_community_free(c);
	return NULL;
}

void gs_community_free(struct gs_community *c)
{
	if (!c)
		return;
	c->stopping = true;
	if (c->host) {
		for (size_t i = 0; i < c->host->peerCount; i++) {
			ENetPeer *e = &c->host->peers[i];
			struct cpeer *p = e->data;
			if (p)
				detach(c, p);
			cc_netsim_forget_peer(c->sim, e);
			if (e->state == ENET_PEER_STATE_CONNECTED)
				enet_peer_disconnect_now(e, 0);
		}
	}
	while (c->matches)
		unlink_match(c, c->matches);
	cc_netsim_free(c->sim);
	if (c->host)
		enet_host_destroy(c->host);
	if (c->results)
		fclose(c->results);
	cc_lobby_registry_free(c->reg);
	free(c);
}
