/*
 * clocksync.h - cc-player's estimate of the game server's clock from
 * ping/pong (contracts/gameserver-protocol.md section 5, "Clock sync").
 *
 * A ping carries the client's monotonic time in microseconds (u32, wraps
 * every 71 minutes; only differences are used). The pong echoes it with
 * the server tick it was simulating and how far into that tick it was, so
 * at the pong's arrival the server clock read about
 *     server_tick + tick_fraction / 65536 + (rtt / 2) * 60 ticks.
 * The "about" is the asymmetry of the two one-way delays: the true value
 * lies within rtt / 2 of it, whatever the asymmetry. The estimator keeps
 * the last PC_CLOCK_WINDOW samples and believes the one with the lowest
 * RTT (the least queueing, so the most nearly symmetric and the tightest
 * bound): its error is at most its rtt / 2, which it reports. The server's
 * tick clock runs on the same CLOCK_MONOTONIC rate, so a sample stays good
 * until the window moves past it (a server that falls far behind restarts
 * its schedule, and newer samples follow it).
 *
 * Ownership: plain values; nothing allocates.
 */
#ifndef PC_CLOCKSYNC_H
#define PC_CLOCKSYNC_H

#include <stdbool.h>
#include <stdint.h>

#include "game/wire.h"

#define PC_CLOCK_WINDOW 16    /* samples kept */
#define PC_CLOCK_PING_MS 250  /* a ping this often (the protocol asks for 2-4 per second) */
#define PC_CLOCK_MAX_RTT_MS 10000.0 /* a pong claiming more is not an answer to one of ours */

struct pc_clock_sample {
	int64_t at_ns;   /* monotonic time the pong arrived */
	double rtt_ms;
	double tick_at;  /* the server tick estimated at at_ns */
};

struct pc_clock {
	struct pc_clock_sample win[PC_CLOCK_WINDOW];
	unsigned n, next;
	uint32_t pongs;  /* pongs taken */
	uint32_t bogus;  /* pongs refused (an RTT past PC_CLOCK_MAX_RTT_MS) */
};

/* The estimate: the server clock read tick_at at monotonic time at_ns, within bound_ms. */
struct pc_clock_estimate {
	int64_t at_ns;
	double tick_at;
	double rtt_ms;    /* of the sample believed */
	double bound_ms;  /* rtt_ms / 2 */
	int64_t origin_ns; /* the monotonic time the server clock read tick 0, by this estimate */
	unsigned window;  /* samples it was chosen from */
};

void pc_clock_init(struct pc_clock *c);

/* The ping's client_time for monotonic time now_ns. */
uint32_t pc_clock_stamp(int64_t now_ns);

/* Takes a pong that arrived at now_ns. */
void pc_clock_pong(struct pc_clock *c, const struct cc_wire_pong *pong, int64_t now_ns);

/* The estimate from the lowest-RTT sample of the window; false before the first pong. */
bool pc_clock_estimate(const struct pc_clock *c, struct pc_clock_estimate *out);

/* The server tick (fractional) the estimate gives for monotonic time t_ns. */
double pc_clock_server_tick(const struct pc_clock_estimate *e, int64_t t_ns);

#endif
