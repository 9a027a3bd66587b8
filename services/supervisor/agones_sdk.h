/*
 * agones_sdk.h - cc-supervisor's client of the Agones SDK sidecar's HTTP
 * gateway (SPEC 10, Agones mode), http://127.0.0.1:$AGONES_SDK_HTTP_PORT,
 * the API of ../shared/agones/sdk.swagger.json (vendored byte for byte in
 * tests/fakes/agones/). Only what the supervisor uses:
 *
 *   GET  /gameserver   the GameServer (sdkGameServer: object_meta, spec, status)
 *   POST /ready        body {} (sdkEmpty)
 *   POST /health       body {} , one per ping
 *   POST /shutdown     body {}
 *
 * The sidecar encodes with the proto field names (object_meta.annotations,
 * status.address, status.ports[].port), sends empty fields too ("" and
 * null), and may start after the game server (connection refused): callers
 * retry. Every call is one libcurl request (sys/http_client.h) with a hard
 * deadline.
 *
 * The allocation annotations: cc-allocator's agones provider
 * (services/allocator/agones.c) puts them in the GameServerAllocation's
 * spec.metadata.annotations, Agones copies them onto the GameServer, and
 * the sidecar shows them in object_meta.annotations once status.state is
 * "Allocated". The names below are the contract between the two; the
 * Agones end-to-end test (tests/integration/supervisor_agones.sh) runs both.
 */
#ifndef CC_SUPERVISOR_AGONES_SDK_H
#define CC_SUPERVISOR_AGONES_SDK_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "sys/cc.h"

#define CC_AGONES_ANN_MATCH_ID "cosmic-clash.io/match-id"
#define CC_AGONES_ANN_ALLOCATION_ID "cosmic-clash.io/allocation-id"
#define CC_AGONES_ANN_WORKLOAD_TOKEN "cosmic-clash.io/workload-token"
#define CC_AGONES_ANN_PLAYLIST "cosmic-clash.io/playlist"
#define CC_AGONES_ANN_ARENA "cosmic-clash.io/arena"
#define CC_AGONES_ANN_PROTOCOL "cosmic-clash.io/protocol"

struct agones_sdk {
	char base[64]; /* "http://127.0.0.1:<port>" */
	long timeout_ms;
};

/* What the supervisor reads of one GET /gameserver answer. */
struct agones_gameserver {
	char name[129];	    /* object_meta.name ("" while unknown) */
	char state[32];	    /* status.state: Scheduled, RequestReady, Ready, Allocated, Shutdown, ... */
	char address[254];  /* status.address ("" until assigned) */
	int port;	    /* status.ports: the one named "default", else the first; 0 until assigned */
	bool deleting;	    /* object_meta.deletion_timestamp is set (not "" or "0") */
	/* The allocation annotations (malloc'd copies, NULL when absent); the token is a secret. */
	char *match_id, *allocation_id, *workload_token, *playlist, *arena, *protocol;
};

/*
 * Parses AGONES_SDK_HTTP_PORT's value (1..65535, digits only) into s.
 * Returns 0, or CC_EINVAL.
 */
int agones_sdk_init(struct agones_sdk *s, const char *port, long timeout_ms) CC_MUST_CHECK;

/*
 * One GET /gameserver. Returns 0 with *gs filled (release it), or a
 * negative CC_E* with why (whylen bytes) saying what was wrong: a transport
 * failure, a status other than 200, a body that is not a GameServer.
 * An answer without address or ports is still 0: see agones_gameserver_assigned.
 */
int agones_sdk_get_gameserver(const struct agones_sdk *s, struct agones_gameserver *gs, char *why,
			      size_t whylen) CC_MUST_CHECK;

/* True when gs names itself and has an address and a port. */
bool agones_gameserver_assigned(const struct agones_gameserver *gs);

/* Wipes the token and frees the copies; gs is zeroed. */
void agones_gameserver_release(struct agones_gameserver *gs);

/*
 * POST /<route> with body {} (route: "ready", "health", "shutdown",
 * "allocate"). Returns the HTTP status, or a negative CC_E* for a
 * transport failure.
 */
int agones_sdk_post(const struct agones_sdk *s, const char *route);

/*
 * Health pings: POST /health every interval_ms on a thread of their own,
 * from agones_health_start() until agones_health_stop() (which returns only
 * once no ping is in flight, so none is sent after it). A failed ping is
 * logged (warn) and counted; pinging goes on.
 */
struct agones_health {
	const struct agones_sdk *sdk;
	int64_t interval_ms;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool running, stop;
	int64_t sent, failed;
};

int agones_health_start(struct agones_health *h, const struct agones_sdk *sdk, int64_t interval_ms) CC_MUST_CHECK;
void agones_health_stop(struct agones_health *h);

#endif
