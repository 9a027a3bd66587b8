/*
 * lobbyc.c - a community-mode client for tests (see lobbyc.h).
 */
#include "lobbyc.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "game/chase.h"
#include "game/sim.h"
#include "sys/clock.h"
#include "sys/banned.h"

#define END_SNAPSHOT_WAIT_MS 2000 /* after match_end: a snapshot at or past its tick, or give up */

void lc_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

/* Starts one event line: {"c":index,"t":ms since connect,"ev":"name" (the caller adds fields and ends it). */
static FILE *ev_begin(struct lc_client *cl, const char *ev)
{
	if (!cl->out)
		return NULL;
	fprintf(cl->out, "{\"c\":%d,\"t\":%lld,\"ev\":\"%s\"", cl->index, (long long)(cc_clock_ms() - cl->connected_ms),
		ev);
	return cl->out;
}

static void ev_end(FILE *f)
{
	if (f) {
		fputs("}\n", f);
		fflush(f);
	}
}

int lc_connect(struct lc_client *cl, int index, const char *host, int port, FILE *out)
{
	memset(cl, 0, sizeof *cl);
	cl->index = index;
	cl->out = out;
	cl->gone_data = -1;
	cl->next_request = (uint16_t)(1000 * (index % 60) + 1);
	if (connect_to_host(&cl->c, host, port) != 0)
		return 1;
	cl->connected_ms = cc_clock_ms();
	return 0;
}

void lc_hello(struct lc_client *cl, int version, const char *name)
{
	struct cc_wire_msg m = { .id = CC_MSG_HELLO };
	size_t n = strlen(name);
	if (n > CC_WIRE_TOKEN_MAX)
		n = CC_WIRE_TOKEN_MAX;
	m.u.hello.protocol_version = CC_WIRE_PROTOCOL_VERSION;
	m.u.hello.tick_rate = CC_WIRE_TICK_RATE;
	m.u.hello.auth = CC_WIRE_AUTH_NAME;
	memcpy(m.u.hello.credential, name, n);
	m.u.hello.credential_len = (uint16_t)n;
	uint8_t buf[CC_WIRE_MAX_PACKET];
	size_t len = encode(&m, buf, sizeof buf);
	if (len == 0) { /* a name the codec will not carry: sent raw, as an attacker would */
		put16(buf, CC_MSG_HELLO);
		put16(buf + 4, CC_WIRE_TICK_RATE);
		buf[6] = CC_WIRE_AUTH_NAME;
		put16(buf + 7, (uint32_t)n);
		memcpy(buf + 9, name, n);
		len = 9 + n;
	}
	put16(buf + 2, (uint32_t)version);
	send_raw(&cl->c, 0, buf, len, true);
	cl->hello_sent = true;
	snprintf(cl->name, sizeof cl->name, "%s", name);
}

static uint16_t next_req(struct lc_client *cl)
{
	cl->next_request = (uint16_t)(cl->next_request + 1);
	if (cl->next_request == 0)
		cl->next_request = 1;
	return cl->next_request;
}

uint16_t lc_send_raw(struct lc_client *cl, uint16_t id, const uint8_t *payload, size_t len)
{
	uint8_t buf[CC_WIRE_MAX_PACKET + 64];
	uint16_t req = next_req(cl);
	if (len > sizeof buf - 4)
		len = sizeof buf - 4;
	put16(buf, id);
	put16(buf + 2, req);
	memcpy(buf + 4, payload, len);
	send_raw(&cl->c, 0, buf, 4 + len, true);
	return req;
}

/* A name field: [u8 len][bytes]; raw, so hostile names go out as they are. */
static size_t put_name(uint8_t *p, const char *name)
{
	size_t n = strlen(name);
	if (n > 255)
		n = 255;
	p[0] = (uint8_t)n;
	memcpy(p + 1, name, n);
	return 1 + n;
}

uint16_t lc_set_name(struct lc_client *cl, const char *name)
{
	uint8_t p[300];
	size_t n = put_name(p, name);
	if (strlen(name) <= CC_WIRE_NAME_MAX)
		snprintf(cl->name, sizeof cl->name, "%s", name);
	return lc_send_raw(cl, CC_MSG_SET_NAME, p, n);
}

uint16_t lc_list(struct lc_client *cl, uint16_t first)
{
	uint8_t p[2];
	put16(p, first);
	return lc_send_raw(cl, CC_MSG_LOBBY_LIST_REQUEST, p, 2);
}

uint16_t lc_create(struct lc_client *cl, int max_players, const char *name)
{
	uint8_t p[300];
	p[0] = (uint8_t)max_players;
	size_t n = put_name(p + 1, name);
	return lc_send_raw(cl, CC_MSG_LOBBY_CREATE, p, 1 + n);
}

uint16_t lc_join(struct lc_client *cl, uint32_t lobby_id)
{
	uint8_t p[4] = { (uint8_t)lobby_id, (uint8_t)(lobby_id >> 8), (uint8_t)(lobby_id >> 16),
			 (uint8_t)(lobby_id >> 24) };
	return lc_send_raw(cl, CC_MSG_LOBBY_JOIN, p, 4);
}

uint16_t lc_leave(struct lc_client *cl)
{
	return lc_send_raw(cl, CC_MSG_LOBBY_LEAVE, NULL, 0);
}

uint16_t lc_ready(struct lc_client *cl, bool ready)
{
	uint8_t p[1] = { ready ? 1 : 0 };
	return lc_send_raw(cl, CC_MSG_LOBBY_SET_READY, p, 1);
}

void lc_disconnect(struct lc_client *cl, bool hard)
{
	if (!cl->c.peer || cl->c.gone)
		return;
	if (hard) {
		enet_peer_reset(cl->c.peer);
		cl->c.gone = true;
		cl->gone_ms = cc_clock_ms();
	} else {
		enet_peer_disconnect(cl->c.peer, 0);
		enet_host_flush(cl->c.host);
	}
}

/* ---- the view -------------------------------------------------------------------- */

static int lobby_index(const struct lc_view *v, uint32_t id)
{
	for (int i = 0; i < v->n; i++)
		if (v->lobbies[i].id == id)
			return i;
	return -1;
}

const struct lc_lobby *lc_view_lobby(const struct lc_view *v, uint32_t id)
{
	int i = lobby_index(v, id);
	return i < 0 ? NULL : &v->lobbies[i];
}

static uint64_t mix_bytes(uint64_t h, const void *d, size_t n)
{
	const uint8_t *p = d;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

uint64_t lc_view_digest(const struct lc_view *v)
{
	/* Lobbies in id order (the view keeps them in the order they came). */
	uint64_t h = 14695981039346656037ull;
	uint32_t last = 0;
	for (int k = 0; k < v->n; k++) {
		const struct lc_lobby *best = NULL;
		for (int i = 0; i < v->n; i++)
			if (v->lobbies[i].id > last && (!best || v->lobbies[i].id < best->id))
				best = &v->lobbies[i];
		if (!best)
			break;
		last = best->id;
		h = mix_bytes(h, &best->id, sizeof best->id);
		h = mix_bytes(h, &best->state, 1);
		h = mix_bytes(h, &best->max_players, 1);
		h = mix_bytes(h, best->name, strlen(best->name) + 1);
		for (int m = 0; m < best->n_members; m++) {
			h = mix_bytes(h, &best->members[m].id, sizeof best->members[m].id);
			h = mix_bytes(h, &best->members[m].ready, 1);
			h = mix_bytes(h, best->members[m].name, strlen(best->members[m].name) + 1);
		}
		h = mix_bytes(h, "|", 1);
	}
	return h;
}

bool lc_digest_at(const struct lc_client *cl, uint32_t rev, uint64_t *out)
{
	for (size_t i = cl->n_digests; i-- > 0;)
		if (cl->digests[i].revision == rev) {
			*out = cl->digests[i].digest;
			return true;
		}
	return false;
}

static void record_digest(struct lc_client *cl)
{
	if (cl->n_digests == cl->cap_digests) {
		size_t cap = cl->cap_digests ? cl->cap_digests * 2 : 256;
		struct lc_revdigest *d = realloc(cl->digests, cap * sizeof *d);
		if (!d)
			return;
		cl->digests = d;
		cl->cap_digests = cap;
	}
	cl->digests[cl->n_digests++] = (struct lc_revdigest){ cl->view.revision, lc_view_digest(&cl->view) };
}

static bool gone_at(const struct lc_view *v, uint32_t id, uint32_t *rev)
{
	for (int i = v->n_gone; i-- > 0;)
		if (v->gone_id[i] == id) {
			*rev = v->gone_rev[i];
			return true;
		}
	return false;
}

/*
 * By revision, per lobby: true when the broadcast about lobby id is newer
 * than what the view holds of it (then the view's revision moves up).
 */
static bool take_revision(struct lc_client *cl, uint32_t rev, uint32_t id, const char *what)
{
	cl->broadcasts++;
	cl->last_broadcast_ms = cc_clock_ms();
	const struct lc_lobby *l = lc_view_lobby(&cl->view, id);
	uint32_t last = 0;
	bool known = l != NULL;
	if (l)
		last = l->revision;
	else
		known = gone_at(&cl->view, id, &last);
	if (known && (int32_t)(rev - last) <= 0) {
		cl->stale++;
		FILE *f = ev_begin(cl, "stale");
		if (f)
			fprintf(f, ",\"msg\":\"%s\",\"lobby_id\":%u,\"revision\":%u,\"lobby_revision\":%u", what, id, rev, last);
		ev_end(f);
		return false;
	}
	if (cl->view.revision != 0 && (int32_t)(rev - cl->view.revision) > 1)
		cl->gaps++;
	if ((int32_t)(rev - cl->view.revision) > 0)
		cl->view.revision = rev;
	return true;
}

static void print_lobby(FILE *f, const struct lc_lobby *l)
{
	fprintf(f, ",\"lobby_id\":%u,\"state\":\"%s\",\"max_players\":%u,\"name\":", l->id, cc_wire_lobby_state_name(l->state),
		l->max_players);
	lc_json_str(f, l->name);
	fputs(",\"members\":[", f);
	for (int i = 0; i < l->n_members; i++) {
		fprintf(f, "%s{\"id\":%u,\"ready\":%u,\"name\":", i ? "," : "", l->members[i].id, l->members[i].ready);
		lc_json_str(f, l->members[i].name);
		fputc('}', f);
	}
	fputc(']', f);
}

static void on_updated(struct lc_client *cl, const struct cc_wire_lobby_updated *u)
{
	cl->updated++;
	if (!take_revision(cl, u->revision, u->lobby_id, "lobby_updated"))
		return;
	int i = lobby_index(&cl->view, u->lobby_id);
	if (i < 0) {
		if (cl->view.n == LC_MAX_LOBBIES)
			return;
		i = cl->view.n++;
	}
	struct lc_lobby *l = &cl->view.lobbies[i];
	memset(l, 0, sizeof *l);
	l->id = u->lobby_id;
	l->revision = u->revision;
	l->state = u->state;
	l->max_players = u->max_players;
	snprintf(l->name, sizeof l->name, "%s", u->name);
	l->n_members = u->member_count;
	for (int m = 0; m < u->member_count && m < CC_WIRE_LOBBY_MEMBERS_MAX; m++) {
		l->members[m].id = u->members[m].member_id;
		l->members[m].ready = u->members[m].ready;
		snprintf(l->members[m].name, sizeof l->members[m].name, "%s", u->members[m].name);
	}
	record_digest(cl);
	FILE *f = ev_begin(cl, "lobby_updated");
	if (f) {
		fprintf(f, ",\"revision\":%u", u->revision);
		print_lobby(f, l);
	}
	ev_end(f);
}

static void on_deleted(struct lc_client *cl, const struct cc_wire_lobby_deleted *d)
{
	cl->deleted++;
	if (!take_revision(cl, d->revision, d->lobby_id, "lobby_deleted"))
		return;
	int i = lobby_index(&cl->view, d->lobby_id);
	if (i >= 0)
		cl->view.lobbies[i] = cl->view.lobbies[--cl->view.n];
	struct lc_view *v = &cl->view;
	if (v->n_gone == (int)CC_ARRAY_LEN(v->gone_id)) { /* forget the oldest half */
		int h = v->n_gone / 2;
		memmove(v->gone_id, v->gone_id + h, (size_t)(v->n_gone - h) * sizeof v->gone_id[0]);
		memmove(v->gone_rev, v->gone_rev + h, (size_t)(v->n_gone - h) * sizeof v->gone_rev[0]);
		v->n_gone -= h;
	}
	v->gone_id[v->n_gone] = d->lobby_id;
	v->gone_rev[v->n_gone++] = d->revision;
	record_digest(cl);
	FILE *f = ev_begin(cl, "lobby_deleted");
	if (f)
		fprintf(f, ",\"revision\":%u,\"lobby_id\":%u,\"known\":%s", d->revision, d->lobby_id, i >= 0 ? "true" : "false");
	ev_end(f);
}

static void on_starting(struct lc_client *cl, const struct cc_wire_match_starting *s)
{
	cl->starting++;
	/* It announces, it changes no lobby: ordered against the global revision only. */
	cl->broadcasts++;
	cl->last_broadcast_ms = cc_clock_ms();
	if (cl->view.revision != 0 && (int32_t)(s->revision - cl->view.revision) <= 0) {
		cl->stale++;
		return;
	}
	if (cl->view.revision != 0 && s->revision != cl->view.revision + 1)
		cl->gaps++;
	cl->view.revision = s->revision;
	cl->starting_lobby = s->lobby_id;
	cl->starting_delay_ms = s->delay_ms;
	cl->starting_tick = s->start_tick;
	cl->starting_ms = cc_clock_ms();
	record_digest(cl);
	FILE *f = ev_begin(cl, "match_starting");
	if (f)
		fprintf(f, ",\"revision\":%u,\"lobby_id\":%u,\"start_tick\":%u,\"delay_ms\":%u", s->revision, s->lobby_id,
			s->start_tick, s->delay_ms);
	ev_end(f);
}

bool lc_view_matches_list(const struct lc_client *cl, char *why, size_t cap)
{
	const struct lc_view *v = &cl->view;
	if (cl->list_n != v->n || cl->list_total != (uint16_t)cl->list_n) {
		snprintf(why, cap, "the list holds %d lobbies (total %u), the view %d", cl->list_n, cl->list_total, v->n);
		return false;
	}
	for (int i = 0; i < cl->list_n; i++) {
		const struct cc_wire_lobby_summary *s = &cl->list[i];
		const struct lc_lobby *l = lc_view_lobby(v, s->lobby_id);
		if (!l) {
			snprintf(why, cap, "lobby %u is listed but not in the view", s->lobby_id);
			return false;
		}
		if (l->state != s->state || l->n_members != s->members || l->max_players != s->max_players ||
		    strcmp(l->name, s->name) != 0) {
			snprintf(why, cap, "lobby %u: listed state %u members %u/%u name '%s', the view state %u members %d/%u name '%s'",
				 s->lobby_id, s->state, s->members, s->max_players, s->name, l->state, l->n_members,
				 l->max_players, l->name);
			return false;
		}
	}
	return true;
}

/* ---- packets ----------------------------------------------------------------------- */

static void on_result(struct lc_client *cl, const struct cc_wire_lobby_result_msg *r)
{
	cl->results++;
	cl->last = (struct lc_result){ true, r->request, r->request_msg, r->result, r->lobby_id, r->member_id, cc_clock_ms() };
	if (r->member_id)
		cl->member_id = r->member_id;
	cl->lobby_id = r->lobby_id;
	FILE *f = ev_begin(cl, "result");
	if (f)
		fprintf(f, ",\"request\":%u,\"msg\":\"%s\",\"result\":\"%s\",\"lobby_id\":%u,\"member_id\":%u", r->request,
			cc_wire_msg_name(r->request_msg) ? cc_wire_msg_name(r->request_msg) : "?",
			cc_wire_lobby_result_name(r->result) ? cc_wire_lobby_result_name(r->result) : "unknown", r->lobby_id,
			r->member_id);
	ev_end(f);
}

static void on_list(struct lc_client *cl, const struct cc_wire_lobby_list *l, size_t bytes)
{
	cl->lists++;
	if (bytes > cl->list_max_bytes)
		cl->list_max_bytes = bytes;
	if (l->count > cl->list_max_count)
		cl->list_max_count = l->count;
	/* Any list answers a request: it also tells an unregistered client nothing was refused. */
	cl->last = (struct lc_result){ true, l->request, CC_MSG_LOBBY_LIST_REQUEST, CC_LOBBY_OK, cl->lobby_id,
				       cl->member_id, cc_clock_ms() };
	if (l->request != cl->list_request || cl->list_done)
		return;
	cl->list_pages++;
	cl->list_total = l->total;
	for (int i = 0; i < l->count && cl->list_n < LC_MAX_LOBBIES; i++)
		cl->list[cl->list_n++] = l->lobbies[i];
	if (l->count > 0 && (int)l->first + l->count < l->total && cl->list_pages < 64)
		cl->list_request = lc_list(cl, (uint16_t)(l->first + l->count));
	else {
		cl->list_done = true;
		/* Compared at this very packet: later broadcasts in the same service round must not move the view first. */
		cl->list_revision = cl->view.revision;
		cl->list_agrees = lc_view_matches_list(cl, cl->list_why, sizeof cl->list_why);
	}
}

static void match_done(struct lc_client *cl)
{
	struct lc_match *m = cl->n_matches < LC_MAX_MATCHES ? &cl->matches[cl->n_matches] : NULL;
	if (m) {
		m->end_ms = cc_clock_ms();
		m->ended[0] = cl->st.ended[0];
		m->ended[1] = cl->st.ended[1];
		m->snapshot[0] = cl->st.score[0];
		m->snapshot[1] = cl->st.score[1];
		m->saw_end_snapshot = cl->st.last_tick >= cl->st.end_tick;
		m->agrees = m->saw_end_snapshot && m->ended[0] == m->snapshot[0] && m->ended[1] == m->snapshot[1];
		m->snapshots = cl->st.snapshots;
		m->goals = cl->st.goals;
		m->inputs = cl->seq;
		cl->n_matches++;
		FILE *f = ev_begin(cl, "match_end");
		if (f)
			fprintf(f, ",\"lobby_id\":%u,\"slot\":%d,\"team\":%d,\"ended_score\":[%d,%d],\"snapshot_score\":[%d,%d],"
				"\"saw_end_snapshot\":%s,\"agrees\":%s,\"snapshots\":%llu,\"goals_seen\":%llu,\"inputs\":%u,"
				"\"seconds\":%.2f",
				m->lobby_id, m->slot, m->team, m->ended[0], m->ended[1], m->snapshot[0], m->snapshot[1],
				m->saw_end_snapshot ? "true" : "false", m->agrees ? "true" : "false",
				(unsigned long long)m->snapshots, (unsigned long long)m->goals, m->inputs,
				(double)(m->end_ms - m->welcome_ms) / 1000.0);
		ev_end(f);
	}
	cl->playing = cl->ending = false;
}

static void on_packet(struct lc_client *cl, int channel, const uint8_t *d, size_t len)
{
	static struct cc_wire_msg m; /* a few KB; one thread drives the clients */
	struct cc_wire_fault fault;
	cl->packets++;
	int rc = cc_wire_decode_from(d, len, CC_WIRE_TO_CLIENT, (uint8_t)channel, &m, &fault);
	if (rc == CC_ENOTFOUND) {
		cl->unknown++;
		return;
	}
	if (rc != 0) {
		cl->bad++;
		FILE *f = ev_begin(cl, "bad_message");
		if (f) {
			fputs(",\"fault\":", f);
			lc_json_str(f, fault.text);
		}
		ev_end(f);
		return;
	}
	switch (m.id) {
	case CC_MSG_LOBBY_RESULT:
		on_result(cl, &m.u.lobby_result);
		return;
	case CC_MSG_LOBBY_LIST:
		on_list(cl, &m.u.lobby_list, len);
		return;
	case CC_MSG_LOBBY_UPDATED:
		on_updated(cl, &m.u.lobby_updated);
		return;
	case CC_MSG_LOBBY_DELETED:
		on_deleted(cl, &m.u.lobby_deleted);
		return;
	case CC_MSG_MATCH_STARTING:
		on_starting(cl, &m.u.match_starting);
		return;
	case CC_MSG_WELCOME: {
		if (m.u.welcome.slot == CC_WIRE_SLOT_NONE && !cl->playing) { /* registered: the lobby, not a match */
			cl->registered = true;
			cl->registered_ms = cc_clock_ms();
			cl->next_ping_ms = cl->registered_ms + LC_PING_MS;
			FILE *f = ev_begin(cl, "registered");
			if (f)
				fprintf(f, ",\"mode\":%u,\"match_state\":%u", m.u.welcome.mode, m.u.welcome.match_state);
			ev_end(f);
			return;
		}
		cl->welcomes++;
		memset(&cl->st, 0, sizeof cl->st);
		cl->st.ended[0] = cl->st.ended[1] = -1;
		cl->st.close_data = -1;
		cl->seq = 0;
		cl->have_own = false;
		cl->snap_tick = 0;
		cl->playing = true;
		cl->ending = false;
		cl->next_input_ms = cc_clock_ms();
		on_control(&cl->c, d, len);
		if (cl->n_matches < LC_MAX_MATCHES) {
			struct lc_match *mt = &cl->matches[cl->n_matches];
			memset(mt, 0, sizeof *mt);
			mt->lobby_id = cl->lobby_id;
			mt->slot = m.u.welcome.slot;
			mt->team = m.u.welcome.team;
			mt->mode = m.u.welcome.mode;
			mt->welcome_ms = cc_clock_ms();
		}
		FILE *f = ev_begin(cl, "welcome");
		if (f)
			fprintf(f, ",\"mode\":%u,\"slot\":%u,\"team\":%u,\"max_players\":%u,\"match_state\":%u,\"lobby_id\":%u",
				m.u.welcome.mode, m.u.welcome.slot, m.u.welcome.team, m.u.welcome.max_players,
				m.u.welcome.match_state, cl->lobby_id);
		ev_end(f);
		return;
	}
	case CC_MSG_REFUSED:
	case CC_MSG_KICKED: {
		on_control(&cl->c, d, len);
		FILE *f = ev_begin(cl, m.id == CC_MSG_REFUSED ? "refused" : "kicked");
		if (f) {
			fprintf(f, ",\"reason\":\"%s\",\"detail\":", cl->c.reason);
			lc_json_str(f, cl->c.detail);
		}
		ev_end(f);
		return;
	}
	default:
		break;
	}
	if (cl->playing && m.id == CC_MSG_SNAPSHOT && m.u.snapshot.tick > cl->snap_tick) {
		cl->snap_tick = m.u.snapshot.tick;
		cl->snap_ball = m.u.snapshot.ball;
		for (int i = 0; i < m.u.snapshot.player_count; i++)
			if (m.u.snapshot.players[i].slot == cl->c.slot) {
				cl->snap_own = m.u.snapshot.players[i].body;
				cl->snap_boost = m.u.snapshot.players[i].boost;
				cl->have_own = true;
			}
	}
	if (cl->playing) {
		bool was_over = cl->st.over;
		on_session_packet(&cl->c, &cl->st, channel, d, len);
		if (!was_over && cl->st.over) {
			cl->ending = true;
			cl->ended_at_ms = cc_clock_ms();
		}
		if (cl->ending && cl->st.last_tick >= cl->st.end_tick)
			match_done(cl);
	}
}

static void on_event(struct lc_client *cl, ENetEvent *ev)
{
	if (ev->type == ENET_EVENT_TYPE_DISCONNECT) {
		cl->c.gone = true;
		cl->gone_ms = cc_clock_ms();
		cl->gone_data = (int)ev->data;
		FILE *f = ev_begin(cl, "disconnected");
		if (f)
			fprintf(f, ",\"data\":%u,\"reason\":\"%s\"", ev->data,
				ev->data ? cc_wire_reason_name((uint16_t)ev->data) : "");
		ev_end(f);
	} else if (ev->type == ENET_EVENT_TYPE_RECEIVE) {
		on_packet(cl, ev->channelID, ev->packet->data, ev->packet->dataLength);
		enet_packet_destroy(ev->packet);
	}
}

/* One tick's input: the chase policy from the newest snapshot (neutral before one), with the three before it. */
static void send_chase_input(struct lc_client *cl)
{
	struct cc_sim_input in;
	memset(&in, 0, sizeof in);
	if (cl->have_own && cl->c.team >= 0 && cl->c.team <= 1) {
		struct cc_sim_body ship, ball;
		cc_wire_body_to_sim(&cl->snap_own, &ship);
		cc_wire_body_to_sim(&cl->snap_ball, &ball);
		cc_chase_input(&ship, cc_wire_boost_unpack(cl->snap_boost), (unsigned)cl->c.team, &ball, &in);
	}
	cl->seq++;
	cc_wire_input_from_sim(&in, &cl->ring[cl->seq % 4]);
	struct cc_wire_msg m = { .id = CC_MSG_INPUT };
	m.u.input.newest_seq = (uint16_t)cl->seq;
	m.u.input.last_snapshot_tick = cl->snap_tick;
	m.u.input.count = (uint16_t)(cl->seq < 4 ? cl->seq : 4);
	for (unsigned i = 0; i < m.u.input.count; i++)
		m.u.input.inputs[i] = cl->ring[(cl->seq - i) % 4];
	uint8_t buf[CC_WIRE_MAX_PACKET];
	size_t len = encode(&m, buf, sizeof buf);
	if (len)
		send_raw(&cl->c, 1, buf, len, false);
}

/* One round over every client: what arrived, then inputs that are due. True when anything arrived. */
static bool pump_once(struct lc_client **all, int n)
{
	bool any = false;
	int64_t now = cc_clock_ms();
	for (int i = 0; i < n; i++) {
		struct lc_client *cl = all[i];
		if (!cl || cl->frozen || !cl->c.host || cl->c.gone)
			continue;
		ENetEvent ev;
		int guard = 0;
		while (!cl->c.gone && guard++ < 256 && enet_host_service(cl->c.host, &ev, 0) > 0) {
			on_event(cl, &ev);
			any = true;
		}
		if (cl->c.gone)
			continue;
		if (cl->ending && now - cl->ended_at_ms > END_SNAPSHOT_WAIT_MS)
			match_done(cl); /* no snapshot showed the end: recorded as not agreeing */
		if (cl->registered && !cl->playing && !cl->no_ping && now >= cl->next_ping_ms) {
			cl->next_ping_ms = now + LC_PING_MS; /* keep-alive between matches */
			struct cc_wire_msg p = { .id = CC_MSG_PING };
			p.u.ping.client_time = (uint32_t)now;
			uint8_t buf[16];
			size_t len = encode(&p, buf, sizeof buf);
			if (len)
				send_raw(&cl->c, 1, buf, len, false);
		}
		if (cl->playing && !cl->ending && now >= cl->next_input_ms) {
			cl->next_input_ms += 1000 / 60;
			if (now - cl->next_input_ms > 100)
				cl->next_input_ms = now; /* fell behind: no burst */
			send_chase_input(cl);
		}
	}
	return any;
}

void lc_pump(struct lc_client **all, int n, int64_t ms)
{
	int64_t end = cc_clock_ms() + ms;
	do {
		if (!pump_once(all, n)) {
			struct timespec ts = { 0, 1000000 }; /* nothing arrived on any host: a millisecond's rest */
			nanosleep(&ts, NULL);
		}
	} while (cc_clock_ms() < end);
}

struct wait_req {
	struct lc_client *cl;
	uint16_t req;
};

static bool have_result(void *ctx)
{
	struct wait_req *w = ctx;
	return w->cl->last.have && w->cl->last.request == w->req;
}

const struct lc_result *lc_wait_result(struct lc_client **all, int n, struct lc_client *cl, uint16_t req,
				       int64_t timeout_ms)
{
	struct wait_req w = { cl, req };
	return lc_wait(all, n, have_result, &w, timeout_ms) ? &cl->last : NULL;
}

static bool list_done(void *ctx)
{
	struct lc_client *cl = ctx;
	return cl->list_done || cl->c.gone;
}

bool lc_list_all(struct lc_client **all, int n, struct lc_client *cl, int64_t timeout_ms)
{
	cl->list_n = 0;
	cl->list_pages = 0;
	cl->list_total = 0;
	cl->list_done = false;
	cl->list_request = lc_list(cl, 0);
	return lc_wait(all, n, list_done, cl, timeout_ms) && cl->list_done;
}

bool lc_wait(struct lc_client **all, int n, bool (*pred)(void *), void *ctx, int64_t timeout_ms)
{
	int64_t end = cc_clock_ms() + timeout_ms;
	for (;;) {
		if (pred(ctx))
			return true;
		if (cc_clock_ms() >= end)
			return false;
		if (!pump_once(all, n)) {
			struct timespec ts = { 0, 1000000 };
			nanosleep(&ts, NULL);
		}
	}
}

void lc_free(struct lc_client *cl)
{
	if (cl->c.host)
		conn_close(&cl->c);
	cl->c.host = NULL;
	free(cl->digests);
	cl->digests = NULL;
}
