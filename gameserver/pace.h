/*
 * pace.h - the tick loop's pacing, shared by allocated mode (server.c) and
 * community mode (community.c) (issue 24): how the loop waits for the next
 * 60 Hz tick and takes in the network meanwhile, and how its wake-ups are
 * counted.
 *
 * Plain ENet: sleep (clock_nanosleep) until the tick's monotonic deadline,
 * then drain ENet in one bounded non-blocking pass: one wake-up per tick,
 * not one per packet; a packet arriving mid-tick waits in the socket for
 * the next pass (at most a tick). A drain before the deadline stops there,
 * one after it at 2 ms or 4096 events, so a flood cannot starve the tick;
 * while a drain stopped at its bound (a backlog) the loop drains again
 * instead of sleeping. With a net simulation (sys/netsim) ENet is serviced
 * until the tick is due instead, since netsim releases held packets only
 * when serviced: there every service is a wake-up.
 *
 * Wake-ups are counted in cosmic_clash_gameserver_loop_wakeups_total and
 * in gs_pace.wakes (the "loop_wakeups" line, gs_pace_log). The pace also
 * holds the tick lateness histogram both loops observe.
 *
 * Ownership: the pace owns nothing; host, sim and the owner's service_ns
 * stay the caller's and must outlive it.
 */
#ifndef CC_GAMESERVER_PACE_H
#define CC_GAMESERVER_PACE_H

#include <enet/enet.h>
#include <stdbool.h>
#include <stdint.h>

#include "sys/netsim.h"

struct cc_metric;

struct gs_pace {
	ENetHost *host;                            /* the loop's one ENet host */
	struct cc_netsim *sim;                     /* NULL: plain ENet */
	int64_t *service_ns;                       /* the owner's: the clock when the network was last read (packets are charged at it) */
	void (*on_wake)(void *ctx, int64_t next);  /* at each wake-up, before its events: reads the clock into *service_ns, notes a stall */
	void (*on_event)(void *ctx, ENetEvent *ev); /* one ENet event (the callee destroys a received packet) */
	void *ctx;                                 /* passed to both callbacks */
	int64_t wakes;                             /* wake-ups so far */
	bool backlog;                              /* the last drain stopped at its bound, more may wait */
	struct cc_metric *m_wakes;                 /* cosmic_clash_gameserver_loop_wakeups_total */
	struct cc_metric *m_lateness;              /* cosmic_clash_gameserver_tick_lateness_seconds */
};

/*
 * Fills p (host, sim, callbacks), asks for a 4 MiB UDP receive buffer on
 * the host's socket (logged udp_rcvbuf_kept when refused) and registers its
 * two metrics (once per process: one loop per process). service_ns is the
 * owner's clock field.
 */
void gs_pace_init(struct gs_pace *p, ENetHost *host, struct cc_netsim *sim, int64_t *service_ns,
		  void (*on_wake)(void *ctx, int64_t next), void (*on_event)(void *ctx, ENetEvent *ev), void *ctx);

/*
 * Waits for the tick due at the monotonic deadline next (ns), handing every
 * ENet event that arrives meanwhile to on_event. Returns true when the tick
 * is due; false when it came back early (a backlog drained before the
 * deadline, an early wake): the caller checks whether it is stopping and
 * calls again.
 */
bool gs_pace_wait(struct gs_pace *p, int64_t next);

/* A tick batch starts at started (ns) for the deadline next: observes its lateness. */
void gs_pace_tick_started(struct gs_pace *p, int64_t next, int64_t started);

/* Logs "loop_wakeups" {wakeups, ticks, per_tick} (as the loop returns); ticks = ticks run. */
void gs_pace_log(const struct gs_pace *p, int64_t ticks);

#endif
