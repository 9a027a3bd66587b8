/* pace.c - see pace.h. */
#include "pace.h"

#include <time.h>

#include "sys/clock.h"
#include "sys/log.h"
#include "sys/metrics.h"
#include "sys/banned.h"

#define DRAIN_BUDGET_NS 2000000LL /* a drain after the deadline stops here (2 ms): the tick comes first */
#define DRAIN_MAX_EVENTS 4096     /* ... or after this many events */
#define DRAIN_CLOCK_EVERY 32      /* the drain reads the clock once per this many events */
#define RCVBUF_BYTES (4 << 20)    /* UDP receive buffer asked for: a burst between two ticks waits, not dropped */

void gs_pace_init(struct gs_pace *p, ENetHost *host, struct cc_netsim *sim, int64_t *service_ns,
		  void (*on_wake)(void *ctx, int64_t next), void (*on_event)(void *ctx, ENetEvent *ev), void *ctx)
{
	/* Bounds for a 16.7 ms tick: fine below 4 ms, where a healthy loop's lateness lies. */
	static const double late_buckets[] = { 0.00025, 0.0005, 0.001, 0.0015, 0.002, 0.0025, 0.003,
					       0.0033, 0.004, 0.005, 0.006, 0.008, 0.012, 0.016,
					       0.020, 0.033, 0.05, 0.1, 1 };
	*p = (struct gs_pace){ .host = host, .sim = sim, .service_ns = service_ns, .on_wake = on_wake,
			       .on_event = on_event, .ctx = ctx };
	/* The socket is read once per tick: room for what arrives between two passes (the kernel may cap it). */
	if (enet_socket_set_option(host->socket, ENET_SOCKOPT_RCVBUF, RCVBUF_BYTES) != 0)
		cc_log_warn("udp_rcvbuf_kept", CC_LOG_INT("asked", RCVBUF_BYTES));
	p->m_lateness = cc_histogram("cosmic_clash_gameserver_tick_lateness_seconds",
				     "How late each tick batch started after its deadline.", NULL, 1, late_buckets,
				     CC_ARRAY_LEN(late_buckets));
	p->m_wakes = cc_counter("cosmic_clash_gameserver_loop_wakeups_total",
				"Times the tick loop woke from a wait: once per tick (net-sim mode: once per ENet service).",
				NULL, 1);
}

static void woke(struct gs_pace *p)
{
	p->wakes++;
	cc_metric_add(p->m_wakes, NULL, 1);
}

/*
 * The wait before a tick batch, in net-sim mode: ENet is serviced until the
 * tick is due, since sys/netsim releases held packets only when serviced.
 * Every service call is a wake (it may block in poll until a packet).
 */
static void netsim_wait(struct gs_pace *p, int64_t next)
{
	ENetEvent ev;
	for (;;) {
		int64_t left_ms = (next - cc_clock_ns()) / 1000000;
		int rc = cc_netsim_service(p->sim, p->host, &ev, left_ms > 0 ? (enet_uint32)left_ms : 0);
		woke(p);
		p->on_wake(p->ctx, next);
		if (rc > 0)
			p->on_event(p->ctx, &ev);
		/* The tick is due: a steady stream of packets (a flood) must not keep it waiting. */
		if (cc_clock_ns() >= next)
			break;
	}
}

/* Sleeps until the monotonic deadline next, unless it has passed; a sleep is one wake. */
static void sleep_until(struct gs_pace *p, int64_t next)
{
	if (cc_clock_ns() >= next)
		return;
	struct timespec ts = cc_clock_timespec(next);
	(void)clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL); /* EINTR: early, drained and rechecked */
	woke(p);
}

/* Whether a datagram waits in the socket (poll with no wait). */
static bool socket_readable(const struct gs_pace *p)
{
	enet_uint32 cond = ENET_SOCKET_WAIT_RECEIVE;
	return enet_socket_wait(p->host->socket, &cond, 0) == 0 && (cond & ENET_SOCKET_WAIT_RECEIVE);
}

/*
 * Takes in every event ENet has waiting, without blocking: datagrams that
 * arrived since the last pass (the socket read until EAGAIN) and what they
 * produced. Bounded: before the deadline next it stops there, after it at
 * DRAIN_BUDGET_NS or DRAIN_MAX_EVENTS, so a flood cannot starve the tick.
 * Returns true when it stopped at its bound with more possibly waiting.
 */
static bool drain_network(struct gs_pace *p, int64_t next)
{
	p->on_wake(p->ctx, next); /* also the time every packet of this pass is charged at */
	int64_t limit = *p->service_ns < next ? next : *p->service_ns + DRAIN_BUDGET_NS;
	ENetEvent ev;
	for (int n = 1;; n++) {
		int rc = enet_host_service(p->host, &ev, 0);
		if (rc < 0)
			return false; /* a socket error: the next pass meets it again */
		if (rc > 0)
			p->on_event(p->ctx, &ev);
		else if (!socket_readable(p))
			return false; /* the socket is empty: drained */
		/* (rc 0 with datagrams left: ENet reads at most 256 per call, e.g. a kicked flooder's, which make no event) */
		if (rc == 0 || n % DRAIN_CLOCK_EVERY == 0) {
			*p->service_ns = cc_clock_ns();
			if (*p->service_ns >= limit || n >= DRAIN_MAX_EVENTS)
				return true;
		}
	}
}

bool gs_pace_wait(struct gs_pace *p, int64_t next)
{
	if (p->sim) {
		netsim_wait(p, next);
		return true;
	}
	if (!p->backlog)
		sleep_until(p, next);
	p->backlog = drain_network(p, next);
	return cc_clock_ns() >= next; /* else a backlog drained before the deadline (or an early wake) */
}

void gs_pace_tick_started(struct gs_pace *p, int64_t next, int64_t started)
{
	cc_metric_observe(p->m_lateness, NULL, (double)(started - next) / 1e9);
}

void gs_pace_log(const struct gs_pace *p, int64_t ticks)
{
	cc_log_info("loop_wakeups", CC_LOG_INT("wakeups", p->wakes), CC_LOG_INT("ticks", ticks),
		    CC_LOG_DBL("per_tick", ticks ? (double)p->wakes / (double)ticks : 0.0));
}
