/*
 * netsim.h - seeded network simulation at the ENet packet layer (a test
 * aid: this kernel has no netem).
 *
 * One struct cc_netsim wraps one ENetHost, on the thread that services
 * that host. The application sends with cc_netsim_send() instead of
 * enet_peer_send() and polls with cc_netsim_service() instead of
 * enet_host_service(); everything else stays plain ENet. Both directions
 * are simulated in the process that owns the simulation:
 *
 *   outgoing  a packet is held, then handed to enet_peer_send() when due;
 *   incoming  a packet ENet delivered is held, then returned as the
 *             ENET_EVENT_TYPE_RECEIVE event when due.
 *
 * Knobs (struct cc_netsim_options), each per direction:
 *   latency_ms  one-way delay added to every packet;
 *   jitter_ms   plus a uniform offset in [-jitter, +jitter] ms (the delay
 *               never goes below 0);
 *   loss_pct    chance a transmission is lost;
 *   dup_pct     chance an unreliable packet arrives twice (the copy with
 *               its own delay);
 *   seed        the pseudo-random stream: the same seed and the same
 *               sequence of packets give the same schedule.
 *
 * Reliable packets (ENET_PACKET_FLAG_RELIABLE) are never dropped or
 * duplicated, because ENet would retransmit them: each simulated loss adds
 * one retransmission timeout to the delay instead, 2 x (latency + jitter)
 * but at least 10 ms, doubling per consecutive loss as ENet's backoff does
 * (at most 8 losses in a row), and their order per peer and channel is
 * kept (a packet is never released before an earlier reliable one of its
 * flow). Unreliable packets may be dropped, duplicated, and reordered by
 * the jitter. ENet's own protocol traffic (acknowledgements, pings,
 * connects) is not delayed, so ENet's round-trip estimate does not include
 * the simulated latency; the application's pings do.
 *
 * Off by default and free when off: cc_netsim_create() returns NULL when no
 * knob is set, and every function here given a NULL simulation is the
 * plain ENet call (cc_netsim_send = enet_peer_send, cc_netsim_service =
 * enet_host_service, ...), one branch.
 *
 * Peers that go away: a held packet remembers its peer's generation, which
 * moves on at every CONNECT and DISCONNECT event this module passes through
 * and at cc_netsim_forget_peer(). A packet whose peer moved on is destroyed
 * when it falls due, never sent to or returned for the slot's next
 * connection (ENet reuses ENetPeer slots; the memory itself lives as long
 * as the host). A DISCONNECT event is returned after the packets the peer
 * sent before it, when the last of them falls due, as ENet delivers them
 * on the wire (a reliable packet held for simulated retransmissions was
 * acknowledged by ENet, so its sender may have disconnected since): those
 * packets are returned although ENet already reset the peer (ev.peer and
 * its data stay valid until that DISCONNECT), and anything sent to the
 * peer then is refused by ENet. If the slot's next connection arrives
 * first, the DISCONNECT is returned at once and the CONNECT at the next
 * call; what was still held from the old peer is dropped (counted "stale").
 * cc_netsim_disconnect_later() is enet_peer_disconnect_later() queued
 * behind the packets held for that peer, so a farewell message sent just
 * before it still goes out first.
 *
 * Bounds: at most CC_NETSIM_MAX_HELD packets are held; past that a packet
 * passes straight through, unsimulated (counted "overflow"), so a flood
 * cannot grow the process without limit.
 *
 * Ownership: cc_netsim_send() takes the packet as enet_peer_send() does
 * (a held packet carries one reference of ours, so one packet may be sent
 * to several peers as with ENet); a RECEIVE event's packet is the caller's
 * to enet_packet_destroy(), as with ENet. cc_netsim_free() destroys what is
 * still held; call it before enet_host_destroy(). Not thread-safe: one
 * thread per host, as ENet itself.
 */
#ifndef CC_NETSIM_H
#define CC_NETSIM_H

#include <enet/enet.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sys/cc.h"

#define CC_NETSIM_MAX_LATENCY_MS 10000
#define CC_NETSIM_MAX_JITTER_MS 10000
#define CC_NETSIM_MAX_HELD 262144

struct cc_netsim_options {
	int latency_ms;  /* one-way, added in each direction: 0..CC_NETSIM_MAX_LATENCY_MS */
	int jitter_ms;   /* uniform +-: 0..CC_NETSIM_MAX_JITTER_MS */
	double loss_pct; /* 0..100 */
	double dup_pct;  /* 0..100, unreliable packets only */
	uint64_t seed;   /* any value; 0 is a seed like any other */
};

enum cc_netsim_dir {
	CC_NETSIM_OUT = 0, /* sent by this process */
	CC_NETSIM_IN = 1,  /* received by this process */
};

struct cc_netsim_stats {
	uint64_t packets[2];     /* by enum cc_netsim_dir: packets that entered the simulation */
	uint64_t dropped[2];     /* unreliable packets lost */
	uint64_t duplicated[2];  /* unreliable packets delivered twice */
	uint64_t retransmits[2]; /* reliable losses turned into delay */
	uint64_t stale;          /* held packets destroyed because their peer went away */
	uint64_t overflow;       /* packets passed through unsimulated (CC_NETSIM_MAX_HELD) */
	size_t held;             /* packets (and queued disconnects) held now */
};

struct cc_netsim;

/* True when any knob is non-zero (the seed alone is not a knob). NULL is false. */
bool cc_netsim_active(const struct cc_netsim_options *o);

/*
 * The --net-sim-* entries of a sys/config option table, one declaration for
 * every binary that offers the simulation: TYPE is the binary's config
 * struct, which has the fields int64_t net_sim_latency, net_sim_jitter,
 * net_sim_seed and double net_sim_loss, net_sim_dup.
 */
#define CC_NETSIM_CONFIG_OPTIONS(TYPE)                                                                              \
	{ .name = "net-sim-latency", .type = CC_CFG_INT, .default_value = "0", .min = 0,                             \
	  .max = CC_NETSIM_MAX_LATENCY_MS,                                                                            \
	  .help = "test aid: one-way ms added to every game packet in each direction at the ENet packet layer "     \
		  "(sys/netsim; all --net-sim-* 0 = off)",                                                            \
	  .offset = offsetof(TYPE, net_sim_latency) },                                                                \
	{ .name = "net-sim-jitter", .type = CC_CFG_INT, .default_value = "0", .min = 0, .max = CC_NETSIM_MAX_JITTER_MS, \
	  .help = "test aid: plus a uniform +-ms per packet (reorders unreliable packets)",                          \
	  .offset = offsetof(TYPE, net_sim_jitter) },                                                                 \
	{ .name = "net-sim-loss", .type = CC_CFG_DOUBLE, .default_value = "0", .min = 0, .max = 100,                  \
	  .help = "test aid: percent of packets lost (reliable ones arrive later instead, as ENet would resend them)", \
	  .offset = offsetof(TYPE, net_sim_loss) },                                                                   \
	{ .name = "net-sim-dup", .type = CC_CFG_DOUBLE, .default_value = "0", .min = 0, .max = 100,                   \
	  .help = "test aid: percent of unreliable packets delivered twice", .offset = offsetof(TYPE, net_sim_dup) }, \
	{ .name = "net-sim-seed", .type = CC_CFG_INT, .default_value = "1", .min = 0, .max = 9007199254740991.0,      \
	  .help = "test aid: seed of the simulation (same seed, same packets: same schedule)",                       \
	  .offset = offsetof(TYPE, net_sim_seed) }

/*
 * Checks the ranges above. Returns 0, or CC_EINVAL with a message naming
 * the knob in why (why may be NULL). Binaries check them in their option
 * tables too; this is for callers that fill the struct themselves.
 */
int cc_netsim_options_check(const struct cc_netsim_options *o, char *why, size_t whylen) CC_MUST_CHECK;

/*
 * The simulation for host, or NULL when !cc_netsim_active(o) (off: the
 * calls below then are plain ENet) or when out of memory or o is out of
 * range (callers that asked for a simulation check cc_netsim_active()
 * first and treat NULL as a failure). host NULL makes a planner for unit
 * tests: only cc_netsim_plan() may be used on it.
 */
struct cc_netsim *cc_netsim_create(ENetHost *host, const struct cc_netsim_options *o);

/* enet_peer_send() through the simulation: 0 when held or sent (the packet is then ours), -1 as ENet's refusals. */
int cc_netsim_send(struct cc_netsim *n, ENetPeer *peer, enet_uint8 channel, ENetPacket *packet);

/*
 * enet_host_service() through the simulation: returns 1 with *ev set
 * (CONNECT and DISCONNECT as ENet gave them, RECEIVE when a held packet
 * falls due), 0 when timeout_ms passed without one, < 0 on ENet's error.
 * Releases the outgoing packets that fell due on the way. Waits at most
 * timeout_ms (plus up to 1 ms: ENet counts in milliseconds).
 */
int cc_netsim_service(struct cc_netsim *n, ENetHost *host, ENetEvent *ev, enet_uint32 timeout_ms);

/* Releases what fell due, then enet_host_flush(). */
void cc_netsim_flush(struct cc_netsim *n, ENetHost *host);

/* enet_peer_disconnect_later() behind the packets held for peer (with n NULL: at once). */
void cc_netsim_disconnect_later(struct cc_netsim *n, ENetPeer *peer, enet_uint32 data);

/* Drops everything held for peer (call it before enet_peer_reset or disconnect_now). NULL n: no-op. */
void cc_netsim_forget_peer(struct cc_netsim *n, ENetPeer *peer);

/* Counters so far (all zero for NULL). */
void cc_netsim_stats(const struct cc_netsim *n, struct cc_netsim_stats *out);

/* Destroys every held packet and the simulation. NULL is a no-op. */
void cc_netsim_free(struct cc_netsim *n);

/*
 * The pure decision for one packet, exposed for the unit tests (the ENet
 * paths above call it): copies 0 (lost), 1 or 2 (duplicated), each due at
 * due_ns[i]; retransmits counts the losses a reliable packet turned into
 * delay. flow names the ordering domain of reliable packets (the ENet
 * paths use peer, channel and direction; a planner takes any value, folded
 * into 256 flows). Advances the random stream and the flow's order, and
 * counts into the stats.
 */
struct cc_netsim_plan {
	int copies;
	int64_t due_ns[2];
	int retransmits;
};
void cc_netsim_plan(struct cc_netsim *n, enum cc_netsim_dir dir, bool reliable, size_t flow, int64_t now_ns,
		    struct cc_netsim_plan *out);

#endif
