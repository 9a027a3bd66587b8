/*
 * lobbyc.h - a community-mode client for tests (contracts/
 * gameserver-protocol.md section 11), used by gsclient's community
 * subcommands (community.c) and cc-player's community mode
 * (tests/player/community.c).
 *
 * A client connects with hello {auth 2, name}, sends lobby requests
 * (each with its own request number; lc_wait_result waits for the
 * lobby_result or lobby_list that echoes it), and keeps its own view of
 * the server's lobbies built ONLY from the broadcasts (lobby_updated,
 * lobby_deleted, match_starting), applied by revision, per lobby: a
 * broadcast about a lobby whose revision is not newer than the last one
 * applied to that lobby (or its deletion) is stale (counted, ignored);
 * the view's revision is the newest applied; a live broadcast more than
 * one past it is a gap (counted: changes the client never heard of). The
 * state of every lobby a server sends right after the registration
 * welcome (community.h: slot 255) may carry older or equal revisions:
 * per-lobby order is what makes the view right. After every applied
 * broadcast the view's digest is recorded with the view's revision, so
 * clients can be compared revision by revision.
 *
 * Welcome: the first (slot 255, match_state LOBBY) registers the client;
 * a later one with a slot is its lobby's match starting. A registered
 * client pings every LC_PING_MS while it is not playing (keep-alive).
 *
 * When `welcome` comes (community: at the start of its lobby's match) the
 * client plays the match with gsconn's play code (section 5 messages,
 * snapshots and events into struct play_stats), steering at 60 Hz with
 * the library's ball-chasing policy (game/chase.h) from its newest
 * snapshot, each input message carrying the newest four, until
 * match_end and a snapshot at or past its tick, then records the match
 * (lc_match) and is back in the lobby.
 *
 * Every event can be printed as one JSON line (lc_client.out).
 *
 * Many clients are driven from one thread by lc_pump, each with its own
 * ENet host (its own address). A frozen client (lc_client.frozen) is not
 * serviced at all: a slow reader.
 */
#ifndef LOBBYC_H
#define LOBBYC_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "gsconn.h"

#define LC_MAX_LOBBIES 256
#define LC_MAX_MATCHES 16
#define LC_PING_MS 2000

struct lc_member {
	uint32_t id;
	uint8_t ready;
	char name[CC_WIRE_NAME_MAX + 1];
};

struct lc_lobby {
	uint32_t id;
	uint32_t revision; /* of the newest broadcast applied to it */
	uint8_t state, max_players;
	char name[CC_WIRE_LOBBY_NAME_MAX + 1];
	int n_members;
	struct lc_member members[CC_WIRE_LOBBY_MEMBERS_MAX];
};

/* A client's picture of all lobbies, from broadcasts only. */
struct lc_view {
	uint32_t revision; /* the newest revision applied (0: none) */
	int n;
	struct lc_lobby lobbies[LC_MAX_LOBBIES];
	/* Deleted lobbies and the revision that deleted them: an older update must not bring one back. */
	int n_gone;
	uint32_t gone_id[LC_MAX_LOBBIES * 4], gone_rev[LC_MAX_LOBBIES * 4];
};

struct lc_result {
	bool have;
	uint16_t request, request_msg;
	uint8_t result;
	uint32_t lobby_id, member_id;
	int64_t at_ms;
};

/* One match the client played. */
struct lc_match {
	uint32_t lobby_id; /* the client's lobby at the welcome */
	int slot, team, mode;
	int64_t welcome_ms, end_ms;
	int ended[2];         /* match_end's score */
	int snapshot[2];      /* the newest snapshot's at or past match_end's tick */
	bool saw_end_snapshot;
	bool agrees;          /* the two agree */
	uint64_t snapshots, goals;
	uint32_t inputs;
};

struct lc_revdigest {
	uint32_t revision;
	uint64_t digest;
};

struct lc_client {
	int index;
	char name[CC_WIRE_NAME_MAX + 1];
	struct conn c;
	FILE *out;            /* JSON event lines (NULL: none) */
	bool frozen;          /* never serviced: a slow reader */
	bool no_ping;         /* serviced (ENet acknowledges) but sends nothing of its own: an idle player */
	bool hello_sent;
	bool registered;      /* the registration welcome came */
	int64_t registered_ms, next_ping_ms;
	int64_t connected_ms, gone_ms;
	int gone_data;        /* the ENet disconnect's data (-1: none yet) */
	uint32_t member_id, lobby_id; /* from the newest lobby_result */
	uint16_t next_request;
	struct lc_result last;
	/* The lobby list being read (all pages, lc_list_all). */
	uint16_t list_request, list_total;
	bool list_done;
	int list_n, list_pages, list_max_count;
	size_t list_max_bytes; /* the largest lobby_list packet received */
	/* When the list's last page arrived: the view's revision then, and whether the view said the same. */
	uint32_t list_revision;
	bool list_agrees;
	char list_why[400];
	struct cc_wire_lobby_summary list[LC_MAX_LOBBIES];
	/* The view and what came to build it. */
	struct lc_view view;
	uint64_t packets, broadcasts, updated, deleted, starting, stale, gaps, unknown, bad, results, lists;
	int64_t last_broadcast_ms;
	uint32_t starting_lobby, starting_delay_ms, starting_tick;
	int64_t starting_ms;  /* when the newest match_starting arrived */
	struct lc_revdigest *digests;
	size_t n_digests, cap_digests;
	/* Playing. */
	bool playing, ending;
	int welcomes;
	struct play_stats st;
	uint32_t seq, end_tick;
	/* The newest snapshot's ball and own ship: the ball-chasing policy (game/chase.h) steers from them. */
	bool have_own;
	uint32_t snap_tick;
	struct cc_wire_body snap_ball, snap_own;
	uint8_t snap_boost;
	struct cc_wire_input ring[4]; /* the newest inputs by seq % 4: each message repeats them */
	int64_t next_input_ms, ended_at_ms;
	int n_matches;
	struct lc_match matches[LC_MAX_MATCHES];
};

/* Zeroes cl and connects it to host:port (no hello yet). 0 on success. */
int lc_connect(struct lc_client *cl, int index, const char *host, int port, FILE *out);
/* Sends hello {version, 60, auth 2, name}. */
void lc_hello(struct lc_client *cl, int version, const char *name);
/* Requests; each returns its request number. name is sent as given (the codec refuses bad names: see lc_send_raw). */
uint16_t lc_set_name(struct lc_client *cl, const char *name);
uint16_t lc_list(struct lc_client *cl, uint16_t first);
uint16_t lc_create(struct lc_client *cl, int max_players, const char *name);
uint16_t lc_join(struct lc_client *cl, uint32_t lobby_id);
uint16_t lc_leave(struct lc_client *cl);
uint16_t lc_ready(struct lc_client *cl, bool ready);
/* A request of id with raw payload bytes after [id][request], unchecked (hostile names); returns its number. */
uint16_t lc_send_raw(struct lc_client *cl, uint16_t id, const uint8_t *payload, size_t len);
/* Graceful ENet disconnect; the client is gone once lc_pump sees it (or at once with hard = true). */
void lc_disconnect(struct lc_client *cl, bool hard);

/* Services every client (but frozen and gone ones) for ms: packets, inputs of those playing. */
void lc_pump(struct lc_client **all, int n, int64_t ms);
/* Pumps until cl has the answer to request req (the result, or the whole list), or timeout; NULL then. */
const struct lc_result *lc_wait_result(struct lc_client **all, int n, struct lc_client *cl, uint16_t req,
				       int64_t timeout_ms);
/* Reads all pages of the lobby list into cl->list; true when it arrived in time. */
bool lc_list_all(struct lc_client **all, int n, struct lc_client *cl, int64_t timeout_ms);
/* Pumps until pred(ctx) or timeout; returns pred's last value. */
bool lc_wait(struct lc_client **all, int n, bool (*pred)(void *), void *ctx, int64_t timeout_ms);

/* The lobby of the view with id, or NULL. */
const struct lc_lobby *lc_view_lobby(const struct lc_view *v, uint32_t id);
/* The view's digest (lobbies by id, everything they hold). */
uint64_t lc_view_digest(const struct lc_view *v);
/* The digest cl recorded at revision rev; false when it has none. */
bool lc_digest_at(const struct lc_client *cl, uint32_t rev, uint64_t *out);
/*
 * Whether cl's view says what cl's list says (ids, states, member counts,
 * sizes, names); when not, why into why.
 */
bool lc_view_matches_list(const struct lc_client *cl, char *why, size_t cap);

/* A JSON string of s (escaped), into f. */
void lc_json_str(FILE *f, const char *s);
/* Frees what cl holds and closes its connection. */
void lc_free(struct lc_client *cl);

/* gsclient community-*: the scenarios of community.c (argv[1] names one). */
int community_main(int argc, char **argv);

#endif
