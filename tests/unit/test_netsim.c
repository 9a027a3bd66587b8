/*
 * sys/netsim: the seeded network simulation.
 *
 * The planner (cc_netsim_plan, the pure decision every packet goes
 * through): the same seed gives the same schedule and another seed
 * another; over many packets the loss and duplication rates are the
 * knobs' within a few standard deviations, delays stay inside latency +-
 * jitter, reliable packets are never lost or duplicated and never overtake
 * each other.
 *
 * Over real ENet on loopback (two hosts in this thread): off is plain
 * ENet (NULL simulation); a latency is really added in each direction;
 * reliable packets arrive complete and in order through loss and jitter;
 * unreliable ones are really dropped; packets held for a peer that
 * disconnects are never delivered, not even to the next connection in its
 * slot; a disconnect_later waits behind the farewell held before it; one
 * packet sent to two peers under loss is freed exactly once (ASan).
 */
#include <enet/enet.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"
#include "sys/clock.h"
#include "sys/netsim.h"
#include "sys/banned.h"

#define MS 1000000LL

/* ---- the planner ------------------------------------------------------------ */

static struct cc_netsim *planner(int latency, int jitter, double loss, double dup, uint64_t seed)
{
	struct cc_netsim_options o = { .latency_ms = latency, .jitter_ms = jitter, .loss_pct = loss, .dup_pct = dup,
				       .seed = seed };
	struct cc_netsim *n = cc_netsim_create(NULL, &o);
	ck_assert_ptr_nonnull(n);
	return n;
}

START_TEST(off_means_null)
{
	struct cc_netsim_options o = { .seed = 42 };
	ck_assert(!cc_netsim_active(&o));
	ck_assert(!cc_netsim_active(NULL));
	ck_assert_ptr_null(cc_netsim_create(NULL, &o));
	o.dup_pct = 0.5;
	ck_assert(cc_netsim_active(&o));
	struct cc_netsim_stats st;
	cc_netsim_stats(NULL, &st);
	ck_assert_uint_eq(st.packets[0] + st.held, 0);
	cc_netsim_forget_peer(NULL, NULL);
	cc_netsim_free(NULL);
}
END_TEST

START_TEST(options_checked)
{
	char why[128];
	struct cc_netsim_options o = { .latency_ms = 80, .jitter_ms = 30, .loss_pct = 5, .dup_pct = 1 };
	ck_assert_int_eq(cc_netsim_options_check(&o, why, sizeof why), 0);
	o.loss_pct = 100.5;
	ck_assert_int_eq(cc_netsim_options_check(&o, why, sizeof why), CC_EINVAL);
	ck_assert_str_eq(why, "loss_pct 100.5 is outside [0, 100]");
	ck_assert_ptr_null(cc_netsim_create(NULL, &o));
	o.loss_pct = NAN;
	ck_assert_int_eq(cc_netsim_options_check(&o, why, sizeof why), CC_EINVAL);
	o.loss_pct = 0;
	o.latency_ms = -1;
	ck_assert_int_eq(cc_netsim_options_check(&o, why, sizeof why), CC_EINVAL);
	ck_assert_str_eq(why, "latency_ms -1 is outside [0, 10000]");
	o.latency_ms = 0;
	o.jitter_ms = 10001;
	ck_assert_int_eq(cc_netsim_options_check(&o, NULL, 0), CC_EINVAL);
	o.jitter_ms = 0;
	o.dup_pct = -0.1;
	ck_assert_int_eq(cc_netsim_options_check(&o, why, sizeof why), CC_EINVAL);
	ck_assert_str_eq(why, "dup_pct -0.1 is outside [0, 100]");
}
END_TEST

/* Runs the same mixed packet sequence through a planner; returns a digest of the schedule. */
static uint64_t schedule(uint64_t seed, struct cc_netsim_plan *keep, size_t n_keep)
{
	struct cc_netsim *n = planner(80, 30, 5, 1, seed);
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < 20000; i++) {
		struct cc_netsim_plan p;
		cc_netsim_plan(n, i % 3 ? CC_NETSIM_IN : CC_NETSIM_OUT, i % 5 == 0, i % 7, (int64_t)i * 16 * MS, &p);
		if (i < n_keep)
			keep[i] = p;
		uint64_t v[4] = { (uint64_t)p.copies, (uint64_t)p.due_ns[0], (uint64_t)p.due_ns[1], (uint64_t)p.retransmits };
		for (size_t k = 0; k < 4; k++)
			h = (h ^ v[k]) * 1099511628211ULL;
	}
	cc_netsim_free(n);
	return h;
}

START_TEST(same_seed_same_schedule)
{
	struct cc_netsim_plan a[64], b[64], c[64];
	uint64_t ha = schedule(7, a, 64), hb = schedule(7, b, 64), hc = schedule(8, c, 64);
	ck_assert_uint_eq(ha, hb);
	ck_assert_mem_eq(a, b, sizeof a);
	ck_assert_uint_ne(ha, hc);
	/* Not merely a different digest: the first packets' delays differ too. */
	int differ = 0;
	for (int i = 0; i < 64; i++)
		differ += a[i].due_ns[0] != c[i].due_ns[0];
	ck_assert_int_gt(differ, 32);
}
END_TEST

START_TEST(unreliable_statistics)
{
	const int N = 200000;
	struct cc_netsim *n = planner(80, 30, 5, 1, 12345);
	long lost = 0, dup = 0, delivered = 0;
	int64_t min_d = INT64_MAX, max_d = 0;
	double sum_d = 0;
	for (int i = 0; i < N; i++) {
		struct cc_netsim_plan p;
		int64_t now = (int64_t)i * MS;
		cc_netsim_plan(n, CC_NETSIM_IN, false, 0, now, &p);
		ck_assert_int_eq(p.retransmits, 0);
		if (p.copies == 0) {
			lost++;
			continue;
		}
		dup += p.copies == 2;
		for (int k = 0; k < p.copies; k++) {
			int64_t d = p.due_ns[k] - now;
			min_d = d < min_d ? d : min_d;
			max_d = d > max_d ? d : max_d;
			sum_d += (double)d;
			delivered++;
		}
	}
	/* Binomial: sd(loss) = sqrt(.05 * .95 / N) = 0.05 points; sd(dup) = 0.02 points. Tolerance ~6 sd. */
	double loss_pct = 100.0 * (double)lost / N, dup_pct = 100.0 * (double)dup / (double)(N - lost);
	ck_assert_msg(fabs(loss_pct - 5.0) < 0.3, "loss %.3f%% for a 5%% knob", loss_pct);
	ck_assert_msg(fabs(dup_pct - 1.0) < 0.15, "dup %.3f%% for a 1%% knob", dup_pct);
	/* Delays: uniform in [50, 110] ms, both ends reached, mean 80. */
	ck_assert_int_ge(min_d, 50 * MS);
	ck_assert_int_le(max_d, 110 * MS);
	ck_assert_int_lt(min_d, 51 * MS);
	ck_assert_int_gt(max_d, 109 * MS);
	double mean_ms = sum_d / (double)delivered / MS;
	ck_assert_msg(fabs(mean_ms - 80.0) < 0.5, "mean delay %.3f ms", mean_ms);
	struct cc_netsim_stats st;
	cc_netsim_stats(n, &st);
	ck_assert_uint_eq(st.packets[CC_NETSIM_IN], (uint64_t)N);
	ck_assert_uint_eq(st.dropped[CC_NETSIM_IN], (uint64_t)lost);
	ck_assert_uint_eq(st.duplicated[CC_NETSIM_IN], (uint64_t)dup);
	ck_assert_uint_eq(st.packets[CC_NETSIM_OUT], 0);
	cc_netsim_free(n);
}
END_TEST

START_TEST(reliable_never_lost_nor_reordered)
{
	const int N = 100000;
	/* 20% loss so retransmits are common; jitter larger than the send interval so reordering would show. */
	struct cc_netsim *n = planner(40, 30, 20, 50, 99);
	int64_t last[4] = { 0, 0, 0, 0 };
	long retransmits = 0, overtaken_would_be = 0;
	for (int i = 0; i < N; i++) {
		struct cc_netsim_plan p;
		int64_t now = (int64_t)i * 2 * MS;
		size_t flow = (size_t)(i % 4);
		cc_netsim_plan(n, CC_NETSIM_OUT, true, flow, now, &p);
		ck_assert_int_eq(p.copies, 1); /* never lost, never duplicated (dup 50%!) */
		ck_assert_int_ge(p.due_ns[0], now + 10 * MS);
		ck_assert_int_ge(p.due_ns[0], last[flow]);
		overtaken_would_be += p.due_ns[0] == last[flow];
		last[flow] = p.due_ns[0];
		retransmits += p.retransmits;
		ck_assert_int_le(p.retransmits, 8);
	}
	/* Expected losses per packet: sum of 0.2^k = 0.25 (the cap at 8 changes nothing visible). */
	double per = (double)retransmits / N;
	ck_assert_msg(fabs(per - 0.25) < 0.01, "%.4f simulated retransmissions per reliable packet", per);
	/* The order rule did work: some packets would have overtaken their predecessor. */
	ck_assert_int_gt(overtaken_would_be, 100);
	cc_netsim_free(n);
}
END_TEST

/* ---- over real ENet -------------------------------------------------------------- */

struct side {
	ENetHost *host;
	struct cc_netsim *sim;
	ENetPeer *peer; /* the other side, once connected */
	bool connected, disconnected;
};

static void side_open(struct side *s, bool server, size_t peers, const struct cc_netsim_options *o)
{
	memset(s, 0, sizeof *s);
	ENetAddress a = { .host = ENET_HOST_ANY, .port = 0 };
	ck_assert_int_eq(enet_address_set_host_ip(&a, "127.0.0.1"), 0);
	s->host = enet_host_create(server ? &a : NULL, peers, 3, 0, 0);
	ck_assert_ptr_nonnull(s->host);
	if (server) {
		ENetAddress bound;
		ck_assert_int_eq(enet_socket_get_address(s->host->socket, &bound), 0);
		s->host->address.port = bound.port;
	}
	s->sim = o ? cc_netsim_create(s->host, o) : NULL;
	if (o)
		ck_assert_ptr_nonnull(s->sim);
}

static void side_close(struct side *s)
{
	cc_netsim_free(s->sim);
	enet_host_destroy(s->host);
}

/* One service call; returns the event type (NONE when none) and keeps connect state. */
static ENetEventType poll1(struct side *s, ENetEvent *ev, enet_uint32 ms)
{
	int rc = cc_netsim_service(s->sim, s->host, ev, ms);
	ck_assert_int_ge(rc, 0);
	if (rc == 0)
		return ENET_EVENT_TYPE_NONE;
	if (ev->type == ENET_EVENT_TYPE_CONNECT) {
		s->connected = true;
		s->peer = ev->peer;
	} else if (ev->type == ENET_EVENT_TYPE_DISCONNECT) {
		s->disconnected = true;
	}
	return ev->type;
}

/* Connects cli to srv, servicing both until each saw CONNECT. */
static void connect_sides(struct side *srv, struct side *cli)
{
	ENetAddress a = srv->host->address;
	ck_assert_int_eq(enet_address_set_host_ip(&a, "127.0.0.1"), 0);
	ck_assert_ptr_nonnull(enet_host_connect(cli->host, &a, 3, 0));
	cli->connected = srv->connected = false;
	int64_t end = cc_clock_ms() + 10000;
	ENetEvent ev;
	while (!(srv->connected && cli->connected)) {
		ck_assert_msg(cc_clock_ms() < end, "no connection within 10 s");
		if (poll1(srv, &ev, 1) == ENET_EVENT_TYPE_RECEIVE)
			enet_packet_destroy(ev.packet);
		if (poll1(cli, &ev, 1) == ENET_EVENT_TYPE_RECEIVE)
			enet_packet_destroy(ev.packet);
	}
}

static int send_u32(struct side *s, ENetPeer *to, enet_uint8 ch, uint32_t v, bool reliable)
{
	ENetPacket *p = enet_packet_create(&v, sizeof v, reliable ? ENET_PACKET_FLAG_RELIABLE : 0);
	ck_assert_ptr_nonnull(p);
	int rc = cc_netsim_send(s->sim, to, ch, p);
	if (rc != 0)
		enet_packet_destroy(p);
	return rc;
}

/*
 * Services both sides for up to ms (or until want packets arrived at dst),
 * recording the payloads dst received in got[] and their arrival times.
 */
static int collect(struct side *src, struct side *dst, uint32_t *got, int64_t *at, int cap, int want, int64_t ms)
{
	int n = 0;
	int64_t end = cc_clock_ms() + ms;
	ENetEvent ev;
	while (cc_clock_ms() < end && n < want) {
		if (poll1(src, &ev, 0) == ENET_EVENT_TYPE_RECEIVE)
			enet_packet_destroy(ev.packet);
		if (poll1(dst, &ev, 1) == ENET_EVENT_TYPE_RECEIVE) {
			ck_assert_uint_eq(ev.packet->dataLength, 4);
			if (n < cap) {
				memcpy(&got[n], ev.packet->data, 4);
				if (at)
					at[n] = cc_clock_ns();
			}
			n++;
			enet_packet_destroy(ev.packet);
		}
	}
	return n;
}

START_TEST(off_is_plain_enet)
{
	struct side srv, cli;
	side_open(&srv, true, 4, NULL);
	side_open(&cli, false, 1, NULL);
	ck_assert_ptr_null(srv.sim);
	connect_sides(&srv, &cli);
	for (uint32_t i = 0; i < 50; i++)
		ck_assert_int_eq(send_u32(&cli, cli.peer, 0, i, true), 0);
	cc_netsim_flush(cli.sim, cli.host);
	uint32_t got[64];
	int n = collect(&cli, &srv, got, NULL, 64, 50, 10000);
	ck_assert_int_eq(n, 50);
	for (uint32_t i = 0; i < 50; i++)
		ck_assert_uint_eq(got[i], i);
	side_close(&cli);
	side_close(&srv);
}
END_TEST

START_TEST(latency_added_each_way)
{
	/* 60 ms on the client only: its outgoing packets wait 60 ms, and so do the ones it receives. */
	struct cc_netsim_options o = { .latency_ms = 60, .seed = 1 };
	struct side srv, cli;
	side_open(&srv, true, 4, NULL);
	side_open(&cli, false, 1, &o);
	connect_sides(&srv, &cli);
	uint32_t got[8];
	int64_t at[8];
	for (int round = 0; round < 3; round++) {
		int64_t sent = cc_clock_ns();
		ck_assert_int_eq(send_u32(&cli, cli.peer, 1, (uint32_t)round, false), 0);
		ck_assert_int_eq(collect(&cli, &srv, got, at, 8, 1, 10000), 1);
		ck_assert_int_ge(at[0] - sent, 60 * MS);
		sent = cc_clock_ns();
		ck_assert_int_eq(send_u32(&srv, srv.peer, 2, 100u + (uint32_t)round, false), 0);
		enet_host_flush(srv.host);
		ck_assert_int_eq(collect(&srv, &cli, got, at, 8, 1, 10000), 1);
		ck_assert_uint_eq(got[0], 100u + (uint32_t)round);
		ck_assert_int_ge(at[0] - sent, 60 * MS);
	}
	struct cc_netsim_stats st;
	cc_netsim_stats(cli.sim, &st);
	ck_assert_uint_eq(st.packets[CC_NETSIM_OUT], 3);
	ck_assert_uint_ge(st.packets[CC_NETSIM_IN], 3);
	side_close(&cli);
	side_close(&srv);
}
END_TEST

START_TEST(reliable_in_order_through_loss)
{
	/* Both sides simulate: loss, jitter and dup on the way out of cli and into srv. */
	struct cc_netsim_options o = { .latency_ms = 5, .jitter_ms = 20, .loss_pct = 30, .dup_pct = 30, .seed = 3 };
	struct side srv, cli;
	side_open(&srv, true, 4, &o);
	side_open(&cli, false, 1, &o);
	connect_sides(&srv, &cli);
	const int N = 300;
	for (uint32_t i = 0; i < (uint32_t)N; i++)
		ck_assert_int_eq(send_u32(&cli, cli.peer, 0, i, true), 0);
	uint32_t got[400];
	int n = collect(&cli, &srv, got, NULL, 400, N, 30000);
	ck_assert_int_eq(n, N);
	for (int i = 0; i < N; i++)
		ck_assert_uint_eq(got[i], (uint32_t)i);
	struct cc_netsim_stats a, b;
	cc_netsim_stats(cli.sim, &a);
	cc_netsim_stats(srv.sim, &b);
	ck_assert_uint_gt(a.retransmits[CC_NETSIM_OUT], 30);
	ck_assert_uint_gt(b.retransmits[CC_NETSIM_IN], 30);
	ck_assert_uint_eq(a.dropped[CC_NETSIM_OUT] + a.duplicated[CC_NETSIM_OUT], 0);
	side_close(&cli);
	side_close(&srv);
}
END_TEST

START_TEST(unreliable_really_dropped)
{
	struct cc_netsim_options o = { .loss_pct = 50, .seed = 4 };
	struct side srv, cli;
	side_open(&srv, true, 4, &o); /* the receiving side drops */
	side_open(&cli, false, 1, NULL);
	connect_sides(&srv, &cli);
	const int N = 400;
	for (uint32_t i = 0; i < (uint32_t)N; i++) {
		/* Unsequenced-looking load on the unreliable channel, a few per flush so ENet keeps them all. */
		ck_assert_int_eq(send_u32(&cli, cli.peer, 1, i, false), 0);
		if (i % 8 == 7) {
			enet_host_flush(cli.host);
			ENetEvent ev;
			while (poll1(&srv, &ev, 0) == ENET_EVENT_TYPE_RECEIVE)
				enet_packet_destroy(ev.packet);
		}
	}
	enet_host_flush(cli.host);
	/* Drain whatever is left; the simulation counts what it saw and what it dropped. */
	uint32_t got[8];
	(void)collect(&cli, &srv, got, NULL, 8, N, 300);
	struct cc_netsim_stats st;
	cc_netsim_stats(srv.sim, &st);
	ck_assert_uint_gt(st.packets[CC_NETSIM_IN], N / 2); /* ENet itself may drop a few sequenced ones */
	double rate = (double)st.dropped[CC_NETSIM_IN] / (double)st.packets[CC_NETSIM_IN];
	ck_assert_msg(rate > 0.35 && rate < 0.65, "dropped %.2f of the packets for a 50%% knob", rate);
	side_close(&cli);
	side_close(&srv);
}
END_TEST

START_TEST(held_for_a_gone_peer_never_delivered)
{
	/* The server holds what it receives for 2 s (a loaded machine still finishes the set-up first); the client sends, then leaves at once. */
	struct cc_netsim_options o = { .latency_ms = 2000, .seed = 5 };
	struct side srv, cli;
	side_open(&srv, true, 1, &o); /* one slot: the next client reuses it */
	side_open(&cli, false, 1, NULL);
	connect_sides(&srv, &cli);
	for (uint32_t i = 0; i < 5; i++)
		ck_assert_int_eq(send_u32(&cli, cli.peer, 0, 1000 + i, true), 0);
	enet_host_flush(cli.host);
	/* Also queue outgoing packets to the client, held 2 s, then the client disconnects. */
	for (uint32_t i = 0; i < 5; i++)
		ck_assert_int_eq(send_u32(&srv, srv.peer, 0, 2000 + i, true), 0);
	/* Wait until the server has taken the client's five in (held), then disconnect. */
	int64_t end = cc_clock_ms() + 10000;
	struct cc_netsim_stats st;
	ENetEvent ev;
	for (;;) {
		cc_netsim_stats(srv.sim, &st);
		if (st.packets[CC_NETSIM_IN] >= 5)
			break;
		ck_assert_msg(cc_clock_ms() < end, "the server never received the five packets");
		ck_assert_int_ne(poll1(&srv, &ev, 1), ENET_EVENT_TYPE_RECEIVE);
	}
	enet_peer_disconnect(cli.peer, 0);
	srv.disconnected = false;
	/* ENet ends the connection at once (the slot is free), but its DISCONNECT waits behind the held packets. */
	end = cc_clock_ms() + 10000;
	while (srv.peer->state != ENET_PEER_STATE_DISCONNECTED) {
		ck_assert_msg(cc_clock_ms() < end, "ENet never ended the connection within 10 s");
		(void)poll1(&cli, &ev, 0);
		ck_assert_int_eq(poll1(&srv, &ev, 1), ENET_EVENT_TYPE_NONE);
	}
	ck_assert(!srv.disconnected);
	/* A new client takes the one slot before the old packets fall due: the old DISCONNECT comes first, then its CONNECT. */
	side_close(&cli);
	side_open(&cli, false, 1, NULL);
	connect_sides(&srv, &cli);
	ck_assert(srv.disconnected);
	/* Past every due time: nothing of the old connection arrives on either side. */
	end = cc_clock_ms() + 2500;
	while (cc_clock_ms() < end) {
		ck_assert_int_ne(poll1(&srv, &ev, 1), ENET_EVENT_TYPE_RECEIVE);
		ck_assert_int_ne(poll1(&cli, &ev, 0), ENET_EVENT_TYPE_RECEIVE);
	}
	cc_netsim_stats(srv.sim, &st);
	ck_assert_uint_eq(st.stale, 10);
	ck_assert_uint_eq(st.held, 0);
	side_close(&cli);
	side_close(&srv);
}
END_TEST

/* A peer's DISCONNECT comes after what it sent before, as on the wire, even when the simulation holds that long. */
START_TEST(disconnect_behind_held_packets)
{
	struct cc_netsim_options o = { .latency_ms = 400, .seed = 11 };
	struct side srv, cli;
	side_open(&srv, true, 2, &o);
	side_open(&cli, false, 1, NULL);
	connect_sides(&srv, &cli);
	for (uint32_t i = 0; i < 3; i++)
		ck_assert_int_eq(send_u32(&cli, cli.peer, 0, 500 + i, true), 0);
	ck_assert_int_eq(send_u32(&cli, cli.peer, 1, 600, false), 0);
	enet_peer_disconnect_later(cli.peer, 7); /* after ENet delivered the three: the server acknowledged them */
	int64_t end = cc_clock_ms() + 10000;
	int got = 0;
	ENetEvent ev;
	srv.disconnected = false;
	while (!srv.disconnected) {
		ck_assert_msg(cc_clock_ms() < end, "no DISCONNECT within 10 s");
		(void)poll1(&cli, &ev, 0);
		ENetEventType t = poll1(&srv, &ev, 1);
		if (t == ENET_EVENT_TYPE_RECEIVE) {
			uint32_t v;
			memcpy(&v, ev.packet->data, 4);
			if (ev.channelID == 0)
				ck_assert_uint_eq(v, 500u + (uint32_t)got++);
			enet_packet_destroy(ev.packet);
		} else if (t == ENET_EVENT_TYPE_DISCONNECT) {
			ck_assert_uint_eq(ev.data, 7);
		}
	}
	ck_assert_int_eq(got, 3);
	struct cc_netsim_stats st;
	cc_netsim_stats(srv.sim, &st);
	ck_assert_uint_eq(st.held, 0);
	side_close(&cli);
	side_close(&srv);
}
END_TEST

START_TEST(disconnect_later_waits_behind_the_farewell)
{
	struct cc_netsim_options o = { .latency_ms = 150, .seed = 6 };
	struct side srv, cli;
	side_open(&srv, true, 4, &o);
	side_open(&cli, false, 1, NULL);
	connect_sides(&srv, &cli);
	ck_assert_int_eq(send_u32(&srv, srv.peer, 0, 77, true), 0);
	cc_netsim_disconnect_later(srv.sim, srv.peer, 9);
	int64_t end = cc_clock_ms() + 10000;
	bool got_bye = false;
	ENetEvent ev;
	while (!cli.disconnected) {
		ck_assert_msg(cc_clock_ms() < end, "no disconnect within 10 s");
		(void)poll1(&srv, &ev, 1);
		ENetEventType t = poll1(&cli, &ev, 1);
		if (t == ENET_EVENT_TYPE_RECEIVE) {
			uint32_t v;
			memcpy(&v, ev.packet->data, 4);
			ck_assert_uint_eq(v, 77);
			got_bye = true;
			enet_packet_destroy(ev.packet);
		} else if (t == ENET_EVENT_TYPE_DISCONNECT) {
			ck_assert_uint_eq(ev.data, 9);
		}
	}
	ck_assert(got_bye);
	side_close(&cli);
	side_close(&srv);
}
END_TEST

START_TEST(one_packet_to_two_peers)
{
	/* The same packet to two peers, as with enet_peer_send: under loss and dup it is freed once (ASan). */
	struct cc_netsim_options o = { .latency_ms = 2, .loss_pct = 40, .dup_pct = 40, .seed = 8 };
	struct side srv, a, b;
	side_open(&srv, true, 4, &o);
	side_open(&a, false, 1, NULL);
	side_open(&b, false, 1, NULL);
	connect_sides(&srv, &a);
	ENetPeer *pa = srv.peer;
	connect_sides(&srv, &b);
	ENetPeer *pb = srv.peer;
	for (uint32_t i = 0; i < 200; i++) {
		ENetPacket *p = enet_packet_create(&i, sizeof i, 0);
		int ra = cc_netsim_send(srv.sim, pa, 2, p);
		int rb = cc_netsim_send(srv.sim, pb, 2, p);
		ck_assert_int_eq(ra, 0);
		ck_assert_int_eq(rb, 0);
		ENetEvent ev;
		(void)poll1(&srv, &ev, 0);
		while (poll1(&a, &ev, 0) == ENET_EVENT_TYPE_RECEIVE)
			enet_packet_destroy(ev.packet);
		while (poll1(&b, &ev, 0) == ENET_EVENT_TYPE_RECEIVE)
			enet_packet_destroy(ev.packet);
	}
	/* Free with packets still held: they go with the simulation. */
	side_close(&a);
	side_close(&b);
	side_close(&srv);
}
END_TEST

static Suite *netsim_suite(void)
{
	Suite *s = suite_create("netsim");
	TCase *tc = tcase_create("planner");
	tcase_add_test(tc, off_means_null);
	tcase_add_test(tc, options_checked);
	tcase_add_test(tc, same_seed_same_schedule);
	tcase_add_test(tc, unreliable_statistics);
	tcase_add_test(tc, reliable_never_lost_nor_reordered);
	suite_add_tcase(s, tc);
	tc = tcase_create("enet");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, off_is_plain_enet);
	tcase_add_test(tc, latency_added_each_way);
	tcase_add_test(tc, reliable_in_order_through_loss);
	tcase_add_test(tc, unreliable_really_dropped);
	tcase_add_test(tc, held_for_a_gone_peer_never_delivered);
	tcase_add_test(tc, disconnect_later_waits_behind_the_farewell);
	tcase_add_test(tc, disconnect_behind_held_packets);
	tcase_add_test(tc, one_packet_to_two_peers);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	if (enet_initialize() != 0) {
		fprintf(stderr, "enet_initialize failed\n");
		return 1;
	}
	int rc = cc_test_run_suite(netsim_suite());
	enet_deinitialize();
	return rc;
}
