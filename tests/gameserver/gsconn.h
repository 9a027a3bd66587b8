/*
 * gsconn.h - the game-server test client's connection and play code,
 * shared by gsclient's subcommands (gsclient.c), its community-mode
 * subcommands (community.c) and cc-player's community mode
 * (tests/player/community.c), so there is one copy of it: connect, say
 * hello, read welcome/refused/kicked, send inputs, and take a session's
 * snapshots and events into play_stats.
 *
 * One struct conn is one ENet host with one peer (one client address per
 * connection). Not thread-safe: one thread drives a conn.
 */
#ifndef GS_CONN_H
#define GS_CONN_H

#include <enet/enet.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "game/wire.h"

#define PROTOCOL CC_WIRE_PROTOCOL_VERSION

struct conn {
	ENetHost *host;
	ENetPeer *peer;
	bool connected, gone;
	char reason[80], detail[200]; /* from a refusal */
	bool refused;
	int slot, team;
	bool welcomed;
	uint8_t resume_key[CC_WIRE_RESUME_KEY_LEN]; /* from the welcome */
	int welcome_state;
	uint32_t welcome_tick;
};

struct own_pos {
	uint32_t tick; /* 0: none */
	float pos[3];
};

#define GS_SNAP_RING CC_WIRE_DELTA_HISTORY /* snapshots a session keeps as bases for deltas (issue 24) */

struct play_stats {
	uint64_t snapshots, snapshot_bytes, bad_messages, goals;
	bool no_ack;                 /* never send snapshot_ack: the server must keep sending full snapshots */
	uint64_t fulls, deltas;      /* snapshots that came as snapshot / as snapshot_delta (and applied) */
	uint64_t unknown_base;       /* deltas against a snapshot we do not hold (skipped) */
	uint64_t n_ring;             /* snapshots held so far; the newest GS_SNAP_RING are in ring */
	struct cc_wire_snapshot ring[GS_SNAP_RING];
	int64_t last_snap, max_gap;
	uint32_t last_ack, last_tick;
	int score[2], ended[2];
	bool over;
	uint32_t end_tick; /* match_end's tick */
	uint32_t bot_slots, pi_bot_slots;
	uint32_t own_bot_last_tick, own_free_tick;
	uint32_t kickoffs[8];
	int n_kickoffs;
	struct own_pos own; /* our ship in the newest snapshot */
	FILE *snaplog;
	uint32_t pi_connected, pi_connected_named; /* player_info messages with the connected bit; of them, with a name */
	char close_kicked[40], close_detail[140]; /* a kicked after match_end (--await-close) */
	int close_data;                           /* the ENet disconnect's data after match_end, -1 none */
	int64_t close_ms;                         /* from match_end to that disconnect */
};

/* Command-line values: --name=value among argv[2..]; arg_long dflt when absent. */
const char *arg(int argc, char **argv, const char *name);
long arg_long(int argc, char **argv, const char *name, long dflt);
/* Little-endian u16 into p[0..1]. */
void put16(uint8_t *p, uint32_t v);
/* Zeroes c, creates its host and connects to 127.0.0.1:port; 0 once connected (within 5 s). */
int connect_to(struct conn *c, int port);
/* The same to host (an IPv4 literal or a name) and port. */
int connect_to_host(struct conn *c, const char *host, int port);
/* One packet as is on channel (flushed at once). */
void send_raw(struct conn *c, int channel, const void *buf, size_t len, bool reliable);
/* Encodes m; returns its length (0 when it does not encode). */
size_t encode(const struct cc_wire_msg *m, uint8_t *buf, size_t cap);
/* A hello with token (auth 1); version other than ours is patched into bytes 2-3 after encoding. */
size_t hello_bytes(uint8_t *buf, size_t cap, int version, const char *token);
void send_hello(struct conn *c, int version, const char *token);
/* Reads a control message: welcome, refused or kicked, into c. */
void on_control(struct conn *c, const uint8_t *d, size_t len);
/* Services the connection for up to ms; returns on a welcome, refusal or disconnect. */
void await(struct conn *c, int64_t ms);
/* After a refusal: the server must also disconnect us. */
void await_gone(struct conn *c, int64_t ms);
/* Disconnects (up to 500 ms for the acknowledgement) and destroys the host. */
void conn_close(struct conn *c);
/* An input message: seq newest, count inputs (throttle forward), pad extra bytes, on channel. */
void send_input(struct conn *c, uint16_t seq, int count, size_t pad, int channel);
uint64_t fnv1a(const uint8_t *d, size_t n);
/*
 * One received packet of a session: snapshots, events, control (welcome,
 * refused, kicked via on_control). A snapshot_delta is rebuilt against the
 * snapshot it names and then taken as that snapshot; each snapshot taken is
 * acknowledged (snapshot_ack) unless st->no_ack. The snapshot log hashes the
 * snapshot's full encoding, so a delta and the full snapshot of one tick log alike.
 */
void on_session_packet(struct conn *c, struct play_stats *st, int channel, const uint8_t *d, size_t len);

#endif
