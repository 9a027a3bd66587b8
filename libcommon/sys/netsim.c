/*
 * netsim.c - see netsim.h. Two min-heaps of held packets (outgoing and
 * incoming) ordered by (due time, arrival number), so equal due times keep
 * the order packets entered; a reliable packet's due time is never earlier
 * than the previous one of its flow, which is what keeps reliable order.
 * The random stream is splitmix64: tiny, seedable with any value, and the
 * same on every platform, so a seed names one schedule.
 */
#include "sys/netsim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys/clock.h"
#include "sys/banned.h"

#define NS_PER_MS 1000000LL
#define PLANNER_FLOWS 256
#define MAX_LOSSES_IN_A_ROW 8
#define MIN_RTO_MS 10
#define DRAIN_PER_CALL 64 /* ENet events taken in per service call past its deadline */

enum held_kind {
	HELD_PACKET,     /* a packet to send (outgoing heap) or to return (incoming heap) */
	HELD_DROPPED,    /* an outgoing packet lost: only our reference is released */
	HELD_DISCONNECT, /* enet_peer_disconnect_later, behind the peer's packets */
};

struct held {
	int64_t due;
	uint64_t seq; /* arrival order: breaks ties, so equal due times keep it */
	ENetPeer *peer;
	ENetPacket *packet;
	uint32_t gen; /* the peer's generation when held */
	enet_uint32 data;
	enet_uint8 channel;
	uint8_t kind;
};

/*
 * A DISCONNECT that ENet delivered while packets ENet had delivered before
 * it were still held: it is returned after them, at due, as on the wire
 * (ENet delivers a peer's packets before its disconnect; a reliable one
 * that the simulation holds for its retransmissions was already
 * acknowledged, so the sender may well have disconnected since).
 */
struct disc {
	int64_t due;
	enet_uint32 data;
	bool active;
};

struct heap {
	struct held *v;
	size_t len, cap;
};

struct cc_netsim {
	struct cc_netsim_options o;
	ENetHost *host;       /* NULL: a planner */
	uint64_t rng;         /* splitmix64 state */
	uint64_t seq;
	int64_t *flow_last;   /* due time of each flow's last reliable packet */
	size_t n_flows;
	uint32_t *gen;        /* per peer slot */
	int64_t *out_last;    /* per peer slot: latest due of anything held outgoing */
	int64_t *in_last;     /* per peer slot: latest due of anything held incoming */
	struct disc *disc;    /* per peer slot: a DISCONNECT held behind that peer's incoming packets */
	ENetEvent stash;      /* a CONNECT to return at the next call (behind the slot's held DISCONNECT) */
	bool stashed;
	struct heap heaps[2]; /* by enum cc_netsim_dir */
	struct cc_netsim_stats st;
};

/* ---- randomness and the plan ------------------------------------------------ */

static uint64_t next_u64(struct cc_netsim *n)
{
	uint64_t z = (n->rng += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* True with probability pct/100. Draws nothing when pct is 0, so a knob at 0 does not move the stream. */
static bool chance(struct cc_netsim *n, double pct)
{
	if (pct <= 0)
		return false;
	return (double)(next_u64(n) >> 11) * 0x1.0p-53 * 100.0 < pct;
}

static int64_t one_way_ns(struct cc_netsim *n)
{
	int64_t d = (int64_t)n->o.latency_ms * NS_PER_MS;
	if (n->o.jitter_ms > 0) {
		uint64_t span = (uint64_t)n->o.jitter_ms * NS_PER_MS;
		d += (int64_t)(next_u64(n) % (2 * span + 1)) - (int64_t)span;
	}
	return d < 0 ? 0 : d;
}

void cc_netsim_plan(struct cc_netsim *n, enum cc_netsim_dir dir, bool reliable, size_t flow, int64_t now_ns,
		    struct cc_netsim_plan *out)
{
	memset(out, 0, sizeof *out);
	n->st.packets[dir]++;
	if (reliable) {
		int64_t due = now_ns + one_way_ns(n);
		int64_t rto = 2 * ((int64_t)n->o.latency_ms + n->o.jitter_ms) * NS_PER_MS;
		if (rto < MIN_RTO_MS * NS_PER_MS)
			rto = MIN_RTO_MS * NS_PER_MS;
		while (out->retransmits < MAX_LOSSES_IN_A_ROW && chance(n, n->o.loss_pct)) {
			due += rto;
			rto *= 2;
			out->retransmits++;
		}
		int64_t *last = &n->flow_last[flow % n->n_flows];
		if (due < *last)
			due = *last;
		*last = due;
		n->st.retransmits[dir] += (uint64_t)out->retransmits;
		out->copies = 1;
		out->due_ns[0] = due;
		return;
	}
	if (chance(n, n->o.loss_pct)) {
		n->st.dropped[dir]++;
		return;
	}
	out->copies = 1;
	out->due_ns[0] = now_ns + one_way_ns(n);
	if (chance(n, n->o.dup_pct)) {
		out->copies = 2;
		out->due_ns[1] = now_ns + one_way_ns(n);
		n->st.duplicated[dir]++;
	}
}

/* ---- the heaps ------------------------------------------------------------------- */

static bool before(const struct held *a, const struct held *b)
{
	return a->due < b->due || (a->due == b->due && a->seq < b->seq);
}

static size_t held_total(const struct cc_netsim *n)
{
	return n->heaps[0].len + n->heaps[1].len;
}

/* False when the cap is reached or memory is short: the caller passes the packet through. */
static bool push(struct cc_netsim *n, struct heap *h, struct held e)
{
	if (held_total(n) >= CC_NETSIM_MAX_HELD)
		return false;
	if (h->len == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 256;
		struct held *v = realloc(h->v, cap * sizeof *v);
		if (!v)
			return false;
		h->v = v;
		h->cap = cap;
	}
	e.seq = n->seq++;
	size_t i = h->len++;
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (!before(&e, &h->v[parent]))
			break;
		h->v[i] = h->v[parent];
		i = parent;
	}
	h->v[i] = e;
	return true;
}

static struct held pop(struct heap *h)
{
	struct held top = h->v[0];
	struct held last = h->v[--h->len];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= h->len)
			break;
		if (c + 1 < h->len && before(&h->v[c + 1], &h->v[c]))
			c++;
		if (!before(&h->v[c], &last))
			break;
		h->v[i] = h->v[c];
		i = c;
	}
	if (h->len > 0)
		h->v[i] = last;
	return top;
}

/* ---- peers ------------------------------------------------------------------------ */

static size_t peer_index(const struct cc_netsim *n, const ENetPeer *peer)
{
	size_t i = (size_t)(peer - n->host->peers);
	if (i >= n->host->peerCount)
		CC_BUG("netsim: a peer of another host");
	return i;
}

static size_t flow_of(const struct cc_netsim *n, size_t peer, enet_uint8 channel, enum cc_netsim_dir dir)
{
	return (peer * n->host->channelLimit + channel) * 2 + (size_t)dir;
}

/* Gives back the reference a held outgoing packet carried. */
static void unref(ENetPacket *p)
{
	if (--p->referenceCount == 0)
		enet_packet_destroy(p);
}

/* ---- the API ------------------------------------------------------------------------- */

bool cc_netsim_active(const struct cc_netsim_options *o)
{
	return o && (o->latency_ms != 0 || o->jitter_ms != 0 || o->loss_pct != 0 || o->dup_pct != 0);
}

int cc_netsim_options_check(const struct cc_netsim_options *o, char *why, size_t whylen)
{
	char buf[96] = "";
	if (o->latency_ms < 0 || o->latency_ms > CC_NETSIM_MAX_LATENCY_MS)
		snprintf(buf, sizeof buf, "latency_ms %d is outside [0, %d]", o->latency_ms, CC_NETSIM_MAX_LATENCY_MS);
	else if (o->jitter_ms < 0 || o->jitter_ms > CC_NETSIM_MAX_JITTER_MS)
		snprintf(buf, sizeof buf, "jitter_ms %d is outside [0, %d]", o->jitter_ms, CC_NETSIM_MAX_JITTER_MS);
	else if (!(o->loss_pct >= 0 && o->loss_pct <= 100)) /* NaN too */
		snprintf(buf, sizeof buf, "loss_pct %g is outside [0, 100]", o->loss_pct);
	else if (!(o->dup_pct >= 0 && o->dup_pct <= 100))
		snprintf(buf, sizeof buf, "dup_pct %g is outside [0, 100]", o->dup_pct);
	if (!buf[0])
		return 0;
	if (why && whylen)
		snprintf(why, whylen, "%s", buf);
	return CC_EINVAL;
}

struct cc_netsim *cc_netsim_create(ENetHost *host, const struct cc_netsim_options *o)
{
	if (!cc_netsim_active(o) || cc_netsim_options_check(o, NULL, 0) != 0)
		return NULL;
	struct cc_netsim *n = calloc(1, sizeof *n);
	if (!n)
		return NULL;
	n->o = *o;
	n->host = host;
	n->rng = o->seed;
	n->n_flows = host ? host->peerCount * (host->channelLimit ? host->channelLimit : 1) * 2 : PLANNER_FLOWS;
	n->flow_last = calloc(n->n_flows, sizeof *n->flow_last);
	if (host) {
		n->gen = calloc(host->peerCount, sizeof *n->gen);
		n->out_last = calloc(host->peerCount, sizeof *n->out_last);
		n->in_last = calloc(host->peerCount, sizeof *n->in_last);
		n->disc = calloc(host->peerCount, sizeof *n->disc);
	}
	if (!n->flow_last || (host && (!n->gen || !n->out_last || !n->in_last || !n->disc))) {
		cc_netsim_free(n);
		return NULL;
	}
	return n;
}

int cc_netsim_send(struct cc_netsim *n, ENetPeer *peer, enet_uint8 channel, ENetPacket *packet)
{
	if (!n)
		return enet_peer_send(peer, channel, packet);
	/* ENet's own refusals, at once: the caller's error path stays the one it has without us. */
	if (peer->state != ENET_PEER_STATE_CONNECTED || channel >= peer->channelCount ||
	    packet->dataLength > peer->host->maximumPacketSize)
		return -1;
	size_t idx = peer_index(n, peer);
	struct cc_netsim_plan plan;
	int64_t now = cc_clock_ns();
	cc_netsim_plan(n, CC_NETSIM_OUT, (packet->flags & ENET_PACKET_FLAG_RELIABLE) != 0, flow_of(n, idx, channel, CC_NETSIM_OUT),
		       now, &plan);
	struct held e = { .peer = peer, .packet = packet, .gen = n->gen[idx], .channel = channel, .kind = HELD_PACKET };
	if (plan.copies == 0) {
		/*
		 * Lost. Not destroyed here: like enet_peer_send, a packet stays
		 * valid until the next service, so a caller may send the same one
		 * to the next peer. Our reference goes at the next release.
		 */
		e.kind = HELD_DROPPED;
		e.due = now;
		if (!push(n, &n->heaps[CC_NETSIM_OUT], e)) {
			n->st.overflow++;
			return enet_peer_send(peer, channel, packet);
		}
		packet->referenceCount++;
		return 0;
	}
	if (held_total(n) + (size_t)plan.copies > CC_NETSIM_MAX_HELD) {
		n->st.overflow++;
		return enet_peer_send(peer, channel, packet);
	}
	for (int i = 0; i < plan.copies; i++) {
		e.due = plan.due_ns[i];
		if (!push(n, &n->heaps[CC_NETSIM_OUT], e)) {
			n->st.overflow++;
			if (i == 0)
				return enet_peer_send(peer, channel, packet);
			break; /* the copy is lost instead */
		}
		packet->referenceCount++;
		if (e.due > n->out_last[idx])
			n->out_last[idx] = e.due;
	}
	return 0;
}

/* Releases the outgoing entries due by now. Returns how many packets went to ENet. */
static int release_out(struct cc_netsim *n, int64_t now)
{
	struct heap *h = &n->heaps[CC_NETSIM_OUT];
	int sent = 0;
	while (h->len > 0 && h->v[0].due <= now) {
		struct held e = pop(h);
		bool live = n->gen[peer_index(n, e.peer)] == e.gen;
		switch (e.kind) {
		case HELD_PACKET:
			if (!live)
				n->st.stale++;
			else if (enet_peer_send(e.peer, e.channel, e.packet) == 0)
				sent++;
			unref(e.packet);
			break;
		case HELD_DROPPED:
			unref(e.packet);
			break;
		case HELD_DISCONNECT:
			if (live)
				enet_peer_disconnect_later(e.peer, e.data);
			break;
		default:
			break;
		}
	}
	return sent;
}

/* Pops the first incoming packet due by now whose peer is still that connection into *ev. */
static bool release_in(struct cc_netsim *n, int64_t now, ENetEvent *ev)
{
	struct heap *h = &n->heaps[CC_NETSIM_IN];
	while (h->len > 0 && h->v[0].due <= now) {
		struct held e = pop(h);
		size_t idx = peer_index(n, e.peer);
		/* A peer ENet already disconnected still gets what it sent before, while its DISCONNECT is held. */
		bool gone = (e.peer->state == ENET_PEER_STATE_DISCONNECTED || e.peer->state == ENET_PEER_STATE_ZOMBIE) &&
			    !n->disc[idx].active;
		if (n->gen[idx] != e.gen || gone) {
			n->st.stale++;
			enet_packet_destroy(e.packet);
			continue;
		}
		memset(ev, 0, sizeof *ev);
		ev->type = ENET_EVENT_TYPE_RECEIVE;
		ev->peer = e.peer;
		ev->channelID = e.channel;
		ev->packet = e.packet;
		return true;
	}
	return false;
}

/* The DISCONNECT of slot idx into *ev; what is still held for the slot belongs to no one now. */
static void disconnect_event(struct cc_netsim *n, size_t idx, ENetEvent *ev)
{
	memset(ev, 0, sizeof *ev);
	ev->type = ENET_EVENT_TYPE_DISCONNECT;
	ev->peer = &n->host->peers[idx];
	ev->data = n->disc[idx].data;
	n->disc[idx].active = false;
	n->gen[idx]++;
}

/* A held DISCONNECT due by now into *ev. */
static bool release_disc(struct cc_netsim *n, int64_t now, ENetEvent *ev)
{
	for (size_t i = 0; i < n->host->peerCount; i++)
		if (n->disc[i].active && n->disc[i].due <= now) {
			disconnect_event(n, i, ev);
			return true;
		}
	return false;
}

/* Takes a RECEIVE event into the simulation. True when it must be returned as is (overflow). */
static bool intake(struct cc_netsim *n, ENetEvent *ev, int64_t now)
{
	ENetPacket *p = ev->packet;
	size_t idx = peer_index(n, ev->peer);
	struct cc_netsim_plan plan;
	cc_netsim_plan(n, CC_NETSIM_IN, (p->flags & ENET_PACKET_FLAG_RELIABLE) != 0,
		       flow_of(n, idx, ev->channelID, CC_NETSIM_IN), now, &plan);
	if (plan.copies == 0) {
		enet_packet_destroy(p);
		return false;
	}
	struct held e = { .peer = ev->peer, .packet = p, .gen = n->gen[idx], .channel = ev->channelID,
			  .kind = HELD_PACKET, .due = plan.due_ns[0] };
	if (!push(n, &n->heaps[CC_NETSIM_IN], e)) {
		n->st.overflow++;
		return true;
	}
	for (int c = 0; c < plan.copies; c++)
		if (plan.due_ns[c] > n->in_last[idx])
			n->in_last[idx] = plan.due_ns[c];
	if (plan.copies == 2) {
		e.packet = enet_packet_create(p->data, p->dataLength, p->flags & ENET_PACKET_FLAG_UNSEQUENCED);
		e.due = plan.due_ns[1];
		if (e.packet && !push(n, &n->heaps[CC_NETSIM_IN], e)) {
			n->st.overflow++;
			enet_packet_destroy(e.packet);
		}
	}
	return false;
}

int cc_netsim_service(struct cc_netsim *n, ENetHost *host, ENetEvent *ev, enet_uint32 timeout_ms)
{
	if (!n)
		return enet_host_service(host, ev, timeout_ms);
	int64_t deadline = cc_clock_ns() + (int64_t)timeout_ms * NS_PER_MS;
	bool polled = false; /* ENet was asked at least once */
	int drained = 0;     /* RECEIVE events taken in without waiting since the last idle poll */
	for (;;) {
		int64_t now = cc_clock_ns();
		if (release_out(n, now) > 0)
			enet_host_flush(host);
		if (n->stashed) {
			*ev = n->stash;
			n->stashed = false;
			return 1;
		}
		if (release_in(n, now, ev) || release_disc(n, now, ev))
			return 1;
		/* Past the deadline: return once ENet has been asked and is idle (or a flood had its share). */
		if (polled && now >= deadline && (drained == 0 || drained >= DRAIN_PER_CALL))
			return 0;
		int64_t until = deadline;
		for (int d = 0; d < 2; d++)
			if (n->heaps[d].len > 0 && n->heaps[d].v[0].due < until)
				until = n->heaps[d].v[0].due;
		for (size_t i = 0; i < host->peerCount; i++)
			if (n->disc[i].active && n->disc[i].due < until)
				until = n->disc[i].due;
		enet_uint32 wait_ms = 0;
		if (drained == 0 && until > now)
			wait_ms = (enet_uint32)((until - now + NS_PER_MS - 1) / NS_PER_MS);
		int rc = enet_host_service(host, ev, wait_ms);
		polled = true;
		if (rc < 0)
			return rc;
		if (rc == 0) {
			drained = 0;
			continue;
		}
		switch (ev->type) {
		case ENET_EVENT_TYPE_RECEIVE:
			if (intake(n, ev, cc_clock_ns()))
				return 1;
			drained++;
			break;
		case ENET_EVENT_TYPE_CONNECT: {
			/* A new connection: what is held for the slot belongs to no one now. */
			size_t idx = peer_index(n, ev->peer);
			n->in_last[idx] = 0;
			if (n->disc[idx].active) {
				/* The slot's previous connection ended first: its DISCONNECT now, the CONNECT next call. */
				n->stash = *ev;
				n->stashed = true;
				disconnect_event(n, idx, ev);
			}
			n->gen[idx]++;
			return 1;
		}
		case ENET_EVENT_TYPE_DISCONNECT: {
			size_t idx = peer_index(n, ev->peer);
			if (n->in_last[idx] > cc_clock_ns()) {
				/* Packets it sent before are still held: its DISCONNECT goes behind them. */
				n->disc[idx] = (struct disc){ .due = n->in_last[idx], .data = ev->data, .active = true };
				break;
			}
			n->gen[idx]++;
			return 1;
		}
		default:
			return 1;
		}
	}
}

void cc_netsim_flush(struct cc_netsim *n, ENetHost *host)
{
	if (n)
		(void)release_out(n, cc_clock_ns());
	enet_host_flush(host);
}

void cc_netsim_disconnect_later(struct cc_netsim *n, ENetPeer *peer, enet_uint32 data)
{
	if (!n) {
		enet_peer_disconnect_later(peer, data);
		return;
	}
	size_t idx = peer_index(n, peer);
	int64_t now = cc_clock_ns();
	struct held e = { .peer = peer, .gen = n->gen[idx], .data = data, .kind = HELD_DISCONNECT,
			  .due = n->out_last[idx] > now ? n->out_last[idx] : now };
	if (!push(n, &n->heaps[CC_NETSIM_OUT], e)) {
		n->st.overflow++;
		enet_peer_disconnect_later(peer, data);
	}
}

void cc_netsim_forget_peer(struct cc_netsim *n, ENetPeer *peer)
{
	if (n && n->host)
		n->gen[peer_index(n, peer)]++;
}

void cc_netsim_stats(const struct cc_netsim *n, struct cc_netsim_stats *out)
{
	memset(out, 0, sizeof *out);
	if (!n)
		return;
	*out = n->st;
	out->held = held_total(n);
}

void cc_netsim_free(struct cc_netsim *n)
{
	if (!n)
		return;
	for (int d = 0; d < 2; d++) {
		struct heap *h = &n->heaps[d];
		for (size_t i = 0; i < h->len; i++) {
			struct held *e = &h->v[i];
			if (e->kind == HELD_DISCONNECT)
				continue;
			if (d == CC_NETSIM_OUT)
				unref(e->packet);
			else
				enet_packet_destroy(e->packet);
		}
		free(h->v);
	}
	free(n->flow_last);
	free(n->gen);
	free(n->out_last);
	free(n->in_last);
	free(n->disc);
	free(n);
}
