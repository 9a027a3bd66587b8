/*
 * server_routes.h - the statements of cc-api's server routes (SPEC 8) on
 * the allocation chain's tables, and the player's assignment read.
 *
 * What this module writes, and why here: the allocator's modules
 * (store/allocations, store/game_servers, store/rosters) own those tables;
 * the columns below are the ones migration 0010 gives to the server routes,
 * and each is written by exactly one function here:
 *   allocations  image_digest, server_protocol, process_ready_at
 *                (cc_server_record_process_ready), assignment_ready_at
 *                (cc_server_record_assignment_ready), last_heartbeat_at and
 *                last_phase (cc_server_record_heartbeat), and the release:
 *                state -> RELEASED, shutdown_at, shutdown_reason
 *                (cc_server_release);
 *   (game_servers is not written here: cc-allocator's release sweep,
 *   woken by the release's outbox NOTIFY, returns a local server to IDLE
 *   after removing its allocation file, in that order, so a new
 *   allocation's file can never be removed by the old one's cleanup;
 *   store/game_servers.h, cc_game_servers_release_finished);
 *   assignments  the connection lease: connection_generation, connected,
 *                connection_id, connected_at, disconnected_at,
 *                disconnect_reason (cc_server_connect, cc_server_disconnect,
 *                and cc_server_close_connections when the match ends).
 * Reads: the caller's allocation (the workload token names it), the live
 * assignments check, the roster manifest, a player's assignment.
 *
 * Every function runs on pg inside the caller's transaction when there is
 * one (the writes always are: SERIALIZABLE, sys/pg.h). Structs are plain
 * values; a json out-parameter is malloc'd text the caller frees.
 */
#ifndef CC_STORE_SERVER_ROUTES_H
#define CC_STORE_SERVER_ROUTES_H

#include <stdbool.h>
#include <stdint.h>

#include "sys/cc.h"
#include "sys/pg.h"

#define CC_SERVER_ID_TEXT_BUF 129   /* game_servers.id: [A-Za-z0-9._-]{1,128} */
#define CC_SERVER_DIGEST_BUF 201    /* image digest: [A-Za-z0-9._:@/+-]{1,200} */
#define CC_SERVER_REASON_BUF 33     /* a [a-z_]{1,32} reason */
#define CC_SERVER_CONNECTION_BUF 65 /* a connection id: [A-Za-z0-9._:-]{1,64} */
#define CC_SERVER_STATE_BUF 16      /* "PUBLISHED" and the rest */
#define CC_SERVER_PHASE_BUF 8       /* a heartbeat's phase: loading | playing | ended */

/* An allocation as the server routes see it. */
struct cc_server_allocation {
	char id[CC_UUID_BUF];
	char match_id[CC_UUID_BUF];
	char state[CC_SERVER_STATE_BUF];          /* REQUESTED ALLOCATED PUBLISHED RELEASED FAILED */
	char provider[8];                         /* local | agones */
	char server_id[CC_SERVER_ID_TEXT_BUF];    /* "" until ALLOCATED */
	int64_t workload_expires_at;              /* unix seconds, as signed into its workload token */
	int64_t now;                              /* PostgreSQL's now(), unix seconds, read with the row */
	char image_digest[CC_SERVER_DIGEST_BUF];  /* "" until process_ready */
	int32_t server_protocol;                  /* 0 until process_ready */
	char process_ready_at[CC_PG_RFC3339_BUF]; /* "" until recorded */
	char assignment_ready_at[CC_PG_RFC3339_BUF];
	char shutdown_reason[CC_SERVER_REASON_BUF]; /* "" until released */
	char last_heartbeat_at[CC_PG_RFC3339_BUF];  /* "" until the first heartbeat */
	char last_phase[CC_SERVER_PHASE_BUF];       /* loading | playing | ended; "" until the first heartbeat */
};

/*
 * Reads allocation id (for_update: locks it, so the routes of one
 * allocation serialize) and PostgreSQL's clock. Returns 0, CC_ENOTFOUND,
 * or a database error.
 */
int cc_server_allocation_get(struct cc_pg *pg, const char *id, bool for_update, struct cc_server_allocation *out)
	CC_MUST_CHECK;

/* The allocation of match_id, as cc_server_allocation_get (for_update locks it). 0, CC_ENOTFOUND, or an error. */
int cc_server_allocation_of_match(struct cc_pg *pg, const char *match_id, bool for_update,
				  struct cc_server_allocation *out) CC_MUST_CHECK;

/*
 * The game server's liveness signal (POST /v1/servers/{id}/heartbeat):
 * last_heartbeat_at = now() and last_phase = phase ("loading", "playing" or
 * "ended", else CC_EINVAL) on a->id, whatever its state; a is updated. No
 * revision bump and no outbox row: nobody else must hear it, and a
 * heartbeat every few seconds must not break anyone's compare-and-set.
 * Returns 0, CC_ENOTFOUND, or a database error.
 */
int cc_server_record_heartbeat(struct cc_pg *pg, struct cc_server_allocation *a, const char *phase) CC_MUST_CHECK;

/*
 * The participants of match_id who never connected (the durable truth of
 * store/match_settle.h: no connect receipt was ever taken, i.e. their
 * assignment's connection_generation is 0, or they have no assignment), by
 * team then id, up to cap into ids (*n of them; more is CC_EDB).
 */
int cc_server_never_connected(struct cc_pg *pg, const char *match_id, char (*ids)[CC_UUID_BUF], size_t cap,
			      size_t *n) CC_MUST_CHECK;

/*
 * Records process_ready on allocation a->id: the image digest and protocol
 * the server runs, process_ready_at = now(); a is updated. Returns 0,
 * CC_ESTATE when it was already recorded, or a database error.
 */
int cc_server_record_process_ready(struct cc_pg *pg, struct cc_server_allocation *a, int32_t protocol,
				   const char *image_digest) CC_MUST_CHECK;

/* Records assignment_ready_at = now() on a->id (updated in a). 0, CC_ESTATE when already recorded, or an error. */
int cc_server_record_assignment_ready(struct cc_pg *pg, struct cc_server_allocation *a) CC_MUST_CHECK;

/*
 * Counts the participants of match_id (*participants) and those with a
 * live assignment (*live): an assignment row whose expires_at is after
 * now(). The caller checks the allocation is PUBLISHED.
 */
int cc_server_assignments_live(struct cc_pg *pg, const char *match_id, int *participants, int *live) CC_MUST_CHECK;

/* The roster manifest of allocation_id as stored (JSON text, caller frees): 0, CC_ENOTFOUND, or an error. */
int cc_server_roster(struct cc_pg *pg, const char *allocation_id, char **json) CC_MUST_CHECK;

/* One player's assignment and connection lease. */
struct cc_server_connection {
	char match_id[CC_UUID_BUF];
	char player_id[CC_UUID_BUF];
	int slot;
	int team;
	int32_t generation;                          /* connection_generation: 0 before the first connect */
	bool connected;
	char connection_id[CC_SERVER_CONNECTION_BUF]; /* "" before the first connect */
	char disconnect_reason[CC_SERVER_REASON_BUF]; /* "" unless the lease ended */
};

/* Reads (for_update: locks) player_id's assignment in match_id. 0, CC_ENOTFOUND, or an error. */
int cc_server_connection_get(struct cc_pg *pg, const char *match_id, const char *player_id, bool for_update,
			     struct cc_server_connection *out) CC_MUST_CHECK;

/*
 * Claims c's lease for connection_id: generation + 1, connected, the
 * disconnect fields cleared; c is updated. Returns 0, CC_ESTATE when the
 * player is connected already (nothing written), or a database error.
 */
int cc_server_connect(struct cc_pg *pg, struct cc_server_connection *c, const char *connection_id) CC_MUST_CHECK;

/*
 * Ends c's lease at generation with reason; c is updated. Returns 0,
 * CC_ESTATE when the lease is not connected at that generation, or an error.
 */
int cc_server_disconnect(struct cc_pg *pg, struct cc_server_connection *c, int32_t generation,
			 const char *reason) CC_MUST_CHECK;

/*
 * The match is over (issue 20): every lease of match_id still connected
 * ends now with reason (a [a-z_]{1,32} word, else CC_EINVAL; "match_over"
 * from the result, the match's end reason from a settlement), in the
 * caller's transaction, so an ended match never leaves a player counted
 * as connected. *closed (may be NULL) receives how many leases it ended.
 * No outbox row: the match's own event (match.completed, match.failed)
 * already tells everyone the match is over, and no consumer reads leases.
 * The generation is kept, so a disconnect receipt the game server sends
 * later for that lease names it and is answered with the lease as closed
 * here. Returns 0 or a database error.
 */
int cc_server_close_connections(struct cc_pg *pg, const char *match_id, const char *reason, int *closed) CC_MUST_CHECK;

/*
 * The game server is done with allocation a: ALLOCATED or PUBLISHED ->
 * RELEASED with shutdown_at = now() and reason, and "allocation.released"
 * in the outbox (revision = the allocation's; its NOTIFY wakes
 * cc-allocator, whose sweep frees the server). a is updated. Returns 0,
 * CC_ESTATE when a was in another state, or a database error.
 */
int cc_server_release(struct cc_pg *pg, struct cc_server_allocation *a, const char *reason) CC_MUST_CHECK;

/* What GET /v1/matches/{id}/assignment finds for a player. */
enum cc_player_assignment_status {
	CC_ASSIGNMENT_NOT_PARTICIPANT, /* no such match, or not the player's: 404 */
	CC_ASSIGNMENT_PENDING,         /* not published yet: 409 assignment_pending */
	CC_ASSIGNMENT_CLOSED,          /* match over or allocation released/failed: 409 match_closed */
	CC_ASSIGNMENT_READY,           /* *json holds the MatchAssignment object */
};

/*
 * Reads player_id's assignment in match_id in one statement. *status says
 * what was found; with CC_ASSIGNMENT_READY *json (caller frees) is the
 * MatchAssignment object of contracts/v1/openapi.json. Returns 0, CC_ENOMEM,
 * or a database error.
 */
int cc_player_assignment_get(struct cc_pg *pg, const char *match_id, const char *player_id,
			     enum cc_player_assignment_status *status, char **json) CC_MUST_CHECK;

#endif
