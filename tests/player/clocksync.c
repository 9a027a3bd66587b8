/*
 * clocksync.c - the server clock from the lowest-RTT pongs (clocksync.h).
 */
#include "clocksync.h"

#include <math.h>
#include <string.h>

#include "sys/banned.h"

#define TICK_NS (1e9 / CC_WIRE_TICK_RATE)

void pc_clock_init(struct pc_clock *c)
{
	memset(c, 0, sizeof *c);
}

uint32_t pc_clock_stamp(int64_t now_ns)
{
	return (uint32_t)((uint64_t)now_ns / 1000u);
}

void pc_clock_pong(struct pc_clock *c, const struct cc_wire_pong *pong, int64_t now_ns)
{
	uint32_t rtt_us = pc_clock_stamp(now_ns) - pong->client_time; /* u32 arithmetic: survives the wrap */
	double rtt_ms = rtt_us / 1000.0;
	if (rtt_ms > PC_CLOCK_MAX_RTT_MS) {
		c->bogus++;
		return;
	}
	struct pc_clock_sample *s = &c->win[c->next];
	s->at_ns = now_ns;
	s->rtt_ms = rtt_ms;
	s->tick_at = (double)pong->server_tick + pong->tick_fraction / 65536.0 + rtt_ms / 2.0 * CC_WIRE_TICK_RATE / 1000.0;
	c->next = (c->next + 1) % PC_CLOCK_WINDOW;
	if (c->n < PC_CLOCK_WINDOW)
		c->n++;
	c->pongs++;
}

bool pc_clock_estimate(const struct pc_clock *c, struct pc_clock_estimate *out)
{
	const struct pc_clock_sample *best = NULL;
	for (unsigned i = 0; i < c->n; i++)
		if (!best || c->win[i].rtt_ms < best->rtt_ms || (c->win[i].rtt_ms == best->rtt_ms && c->win[i].at_ns > best->at_ns))
			best = &c->win[i];
	if (!best)
		return false;
	out->at_ns = best->at_ns;
	out->tick_at = best->tick_at;
	out->rtt_ms = best->rtt_ms;
	out->bound_ms = best->rtt_ms / 2.0;
	out->origin_ns = best->at_ns - (int64_t)llround(best->tick_at * TICK_NS);
	out->window = c->n;
	return true;
}

double pc_clock_server_tick(const struct pc_clock_estimate *e, int64_t t_ns)
{
	return e->tick_at + (double)(t_ns - e->at_ns) / TICK_NS;
}
