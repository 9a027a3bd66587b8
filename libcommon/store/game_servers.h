/*
 * game_servers.h - the one owner of writes to the game_servers table
 * (SPEC 8): the game servers the control plane knows.
 *
 * Two providers write rows here, both through cc-allocator:
 *   local   the warm pool: one row per child process on a loopback port,
 *           registered IDLE when it is spawned (owner = the allocator
 *           instance whose child it is), handed to one allocation at a time
 *           with FOR UPDATE SKIP LOCKED, marked DEAD when its child exits
 *           while idle and IDLE again when it is restarted;
 *   agones  one row per GameServer, recorded ALLOCATED when the Kubernetes
 *           API allocated it (its name is the id).
 * A row is ALLOCATED exactly while it names an allocation (a CHECK), and the
 * database refuses any move contracts/v1/state-transitions.json does not
 * list ('game_server' machine). A server back from a finished allocation
 * (RELEASED or FAILED) is returned to IDLE by the owner's sweep, so the
 * server routes never write this table.
 *
 * Every function runs inside the caller's SERIALIZABLE transaction.
 * struct cc_game_server is a plain value.
 */
#ifndef CC_STORE_GAME_SERVERS_H
#define CC_STORE_GAME_SERVERS_H

#include <stddef.h>
#include <stdint.h>

#include "sys/cc.h"
#include "sys/pg.h"

#define CC_GAME_SERVER_ID_BUF 129  /* [A-Za-z0-9._-]{1,128} and the NUL */
#define CC_GAME_SERVER_ADDR_BUF 254 /* a host name or address, 1..253 bytes */
#define CC_GAME_SERVER_STATE_BUF 16 /* "ALLOCATED" and the rest */

struct cc_game_server {
	char id[CC_GAME_SERVER_ID_BUF];        /* "local-7100", or the GameServer's name */
	char state[CC_GAME_SERVER_STATE_BUF];  /* IDLE | ALLOCATED | DEAD */
	char address[CC_GAME_SERVER_ADDR_BUF]; /* where players connect */
	int port;                              /* UDP port of the game */
	char allocation_id[CC_UUID_BUF];       /* the allocation it serves; "" unless ALLOCATED */
};

/* True when id is a valid game_servers.id ([A-Za-z0-9._-]{1,128}). */
bool cc_game_server_id_valid(const char *id);

/*
 * The local provider spawned (or restarted) a child as server id on
 * address:port: records it with owner and pid. A new row starts IDLE; a DEAD
 * one becomes IDLE; an IDLE or ALLOCATED one keeps its state (a restarted
 * allocator or child resumes the allocation it served: its allocation file
 * is still there). *out receives the row. Returns 0, CC_EINVAL for a bad id,
 * or a database error (CC_ECONFLICT when another row holds address:port).
 */
int cc_game_server_register_local(struct cc_pg *pg, const char *id, const char *region, const char *address,
				  int port, const char *owner, int pid, struct cc_game_server *out) CC_MUST_CHECK;

/*
 * Hands one IDLE local server of owner (lowest port first) to allocation_id,
 * skipping rows another transaction holds (FOR UPDATE SKIP LOCKED), so
 * racing claims get distinct servers. Returns 0 with *out (ALLOCATED);
 * CC_ENOTFOUND when no idle server is free: the no-capacity outcome, nothing
 * written; or a database error.
 */
int cc_game_server_claim_idle(struct cc_pg *pg, const char *owner, const char *allocation_id,
			      struct cc_game_server *out) CC_MUST_CHECK;

/*
 * The local child of server id exited while its row was IDLE: marks it
 * DEAD (pid cleared) until the restart registers it again. A row in another
 * state is left alone (an ALLOCATED server is restarted in place and
 * resumes its allocation). *changed says whether this call moved it.
 */
int cc_game_server_mark_dead(struct cc_pg *pg, const char *id, const char *owner, bool *changed) CC_MUST_CHECK;

/*
 * The agones provider got GameServer id (address:port, region) for
 * allocation_id: records it ALLOCATED. Recording the same server for the
 * same allocation again is a no-op (a retried transaction or a takeover
 * that found its earlier GameServer); a row serving another allocation is
 * CC_ECONFLICT. Returns 0 with *out, CC_EINVAL for a bad id, or a database
 * error.
 */
int cc_game_server_record_agones(struct cc_pg *pg, const char *id, const char *region, const char *address,
				 int port, const char *allocation_id, struct cc_game_server *out) CC_MUST_CHECK;

/*
 * Returns to IDLE up to cap local servers of owner whose allocation has
 * finished (RELEASED or FAILED), so the pool serves the next match. Their
 * ids go to ids[0..*n) (the caller removes what the finished allocation
 * left behind before committing).
 */
int cc_game_servers_release_finished(struct cc_pg *pg, const char *owner, char (*ids)[CC_GAME_SERVER_ID_BUF],
				     size_t cap, size_t *n) CC_MUST_CHECK;

#endif
