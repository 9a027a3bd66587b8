/*
 * client.h - cc-player's REST client: one kept-alive HTTP connection to
 * cc-api per thread, and the player calls (login, probe, queue, heartbeat,
 * cancel, re-read, read and answer a proposal) on top of it.
 *
 * Why libcurl directly and not libcommon/http_client.h: that module opens a
 * new connection per call (right for rare calls to outside services), but a
 * load generator measuring heartbeat latency must reuse one connection, as a
 * game client does, or it measures TCP set-up instead of the API. One easy
 * handle per struct pc_client is reused for every call, so libcurl keeps
 * the connection open between calls (HTTP/1.1 keep-alive).
 *
 * A client is used by one thread at a time. Call curl_global_init() once
 * in main() before creating any.
 *
 * Retries, as a game client does them: an answer SPEC 2 calls retryable
 * (503 with "retryable": true: a lost serialization race, a database that
 * is down or restarting) and a connection failure (refused, reset, no
 * answer, timed out) are sent again after a jittered exponential backoff
 * (full jitter from PC_RETRY_BASE_MS, doubling up to PC_RETRY_CAP_MS) for
 * as long as the retry horizon set with pc_client_set_retry_horizon()
 * allows, counted from the call's first attempt. A connection failure also
 * moves the client to the next of its base URLs (a list stands for the
 * replicas behind a load balancer), and it stays there. Retries are counted
 * (pc_client_retries()): they are server trouble a player felt as delay.
 * With a horizon of 0 (the default) every answer is taken as it is, which
 * is what a benchmark must measure. When the horizon runs out, the call
 * fails with the last failure and pc_client_gave_up() says so.
 *
 * A request whose connection failed may have been applied even though no
 * answer came back (libcurl may have sent it on a kept-alive connection that
 * died, before the failure we see), and so may one answered 503 for any other
 * reason than a lost serialization race ("retry_exhausted": rolled back for
 * sure), such as a database that went away during the commit;
 * pc_client_unsure() tells the caller, who
 * must then read an answer such as 409 revision_conflict to its retry as
 * "maybe my own first attempt" (an idempotency key makes enqueue exact).
 *
 * Every call returns 0 when cc-api answered with the status the call
 * expects, else a negative code (CC_EIO no answer, CC_ETIMEOUT, CC_ECONFLICT
 * 409, CC_EUNAUTHORIZED 401, CC_EFORBIDDEN 403, CC_ENOTFOUND 404,
 * CC_EUNAVAILABLE 503/429, CC_EINVAL any other status or a malformed body)
 * and pc_client_problem() then describes it ("POST /v1/queue: 409
 * active_ticket_exists") while pc_client_error_code() gives the bare code
 * ("revision_conflict"), so a caller can tell the expected conflicts of a
 * race apart from real errors. The player struct is updated only on success.
 *
 * Ownership: the client owns its handle and response buffer; a reply's body
 * points into the client and is valid until the client's next call.
 */
#ifndef PC_CLIENT_H
#define PC_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include "sys/cc.h"
#include "game/playlist.h"
#include "latency.h"

#define PC_CLIENT_MAX_RESPONSE (64 * 1024) /* bytes of one response body */
#define PC_CLIENT_URL_MAX 512              /* bytes of base URL + path */
#define PC_TOKEN_MAX 128                   /* bytes of a session token */
#define PC_RETRY_BASE_MS 10                /* first retry waits up to this */
#define PC_RETRY_CAP_MS 1000               /* no retry waits longer */
#define PC_MAX_URLS 8                      /* base URLs (replicas) of one client */

struct pc_client;

/* One answer (or the lack of one). */
struct pc_reply {
	long status;         /* HTTP status; 0 when no answer arrived */
	const char *body;    /* NUL-terminated body, "" when none; owned by the client */
	size_t body_len;     /* bytes of body */
	uint64_t elapsed_ns; /* from handing the request to libcurl until the whole answer was read */
};

/* What cc-player knows about one simulated player. */
struct pc_player {
	int index;                     /* 0-based number within the run */
	char login_ticket[64];         /* "<kind>-<seed>-<index>", fed to the testkit's fake Steam */
	char token[PC_TOKEN_MAX + 1];  /* session bearer token ("" before login) */
	char player_id[CC_UUID_BUF];            /* uuid from the login answer */
	char ticket_id[CC_UUID_BUF];            /* uuid of the current queue ticket ("" when none) */
	int64_t revision;              /* the ticket's revision as last seen */
	char state[16];                /* the ticket's state as last seen */
	char proposal_id[CC_UUID_BUF];          /* the ticket's proposal as last seen ("" when none) */
	char match_id[CC_UUID_BUF];             /* the ticket's match as last seen ("" when none) */
	bool broken;                   /* an unexpected error left it unusable */
};

/*
 * Creates a client for base_urls: one base URL ("http://127.0.0.1:8080", no
 * trailing path) or up to PC_MAX_URLS of them separated by commas, the
 * replicas it fails over between; it starts on the one at index
 * first % count. timeout_ms is the whole deadline of one request. Returns
 * NULL when a URL is not http(s):// or too long, there are too many, or
 * out of memory. Free with pc_client_free().
 */
struct pc_client *pc_client_new(const char *base_urls, long timeout_ms, int first);

/* Closes the connection and frees the client. NULL is a no-op. */
void pc_client_free(struct pc_client *c);

/* Every later call's duration is added to rec (NULL stops recording). rec
 * stays the caller's. */
void pc_client_record(struct pc_client *c, struct pc_latency *rec);

/* How long (ms, from its first attempt) one call keeps retrying retryable
 * answers and connection failures; 0 (the default) = never retry. */
void pc_client_set_retry_horizon(struct pc_client *c, int64_t horizon_ms);

/* Retries sent since the client was created. */
uint64_t pc_client_retries(const struct pc_client *c);

/* Whether the last call ran out of its retry horizon (it failed with a
 * retryable answer or a connection failure until the horizon was spent). */
bool pc_client_gave_up(const struct pc_client *c);

/* Whether an attempt of the last call failed in a way that may hide its
 * effect (a connection failure, a 503 other than retry_exhausted): the
 * server may have applied it without our seeing the answer. */
bool pc_client_unsure(const struct pc_client *c);

/* The base URL the client talks to now (after any failover). Never NULL. */
const char *pc_client_url(const struct pc_client *c);

/* Requests sent through this client since it was created. */
uint64_t pc_client_requests(const struct pc_client *c);

/* Text describing the last failed call ("" after a success). Never NULL. */
const char *pc_client_problem(const struct pc_client *c);

/* The "error.code" cc-api gave in the last failed call's answer ("" after
 * a success, a transport failure or an answer without one). Never NULL. */
const char *pc_client_error_code(const struct pc_client *c);

/*
 * Sends one request: method "GET" or "POST", path ("/v1/queue"), optional
 * bearer token, Idempotency-Key and JSON body (NULL = none; a POST without
 * one sends an empty body). Fills *reply. Returns 0 when an answer arrived
 * (whatever its status), CC_EIO/CC_ETIMEOUT when none did, CC_EINVAL for a
 * bad method or a URL over PC_CLIENT_URL_MAX, CC_ETOOBIG for a body over
 * PC_CLIENT_MAX_RESPONSE. Never retries; goes to the current base URL.
 */
int pc_request(struct pc_client *c, const char *method, const char *path, const char *token,
	       const char *idempotency_key, const char *body, struct pc_reply *reply) CC_MUST_CHECK;

/* Zeroes p and names it: login ticket "<kind>-<seed>-<index>" (kind
 * "player" for the demo, "bench" for the bench, so the two never share an
 * identity and its active ticket). */
void pc_player_init(struct pc_player *p, const char *kind, long long seed, int index);
/* Rewrites the login ticket as the hex digits of its bytes, the shape of a real
 * Steam ticket that cc-api's Steam login (and the fake Steam of the disposable
 * stack) accept: --hex-tickets. */
void pc_player_hex_ticket(struct pc_player *p);

/* POST /v1/session/steam: 200 -> token and player_id. */
int pc_login(struct pc_client *c, struct pc_player *p) CC_MUST_CHECK;

/* POST /v1/probes/{region}/challenge (201) then .../answer (200): one
 * probe. *rtt_ms (may be NULL) receives the RTT the server measured. */
int pc_probe(struct pc_client *c, struct pc_player *p, const char *region, double *rtt_ms) CC_MUST_CHECK;

/*
 * Parties (issue 26): leader creates a party (POST /v1/parties, key) and
 * each of the n_mates mates joins it by its join code; then the leader
 * queues it for playlist (POST /v1/parties/{id}/queue, key) and every
 * member's ticket (id, revision, state) is taken into its pc_player.
 */
int pc_party_queue(struct pc_client *c, struct pc_player *leader, struct pc_player **mates, int n_mates,
		   const char *playlist, int64_t protocol_version, const char *build, const char *key) CC_MUST_CHECK;

/* POST /v1/queue with key: 201 -> ticket id, revision, state. */
int pc_enqueue(struct pc_client *c, struct pc_player *p, const char *playlist, int64_t protocol_version,
	       const char *build, const char *idempotency_key) CC_MUST_CHECK;

/* POST /v1/queue/{id}/heartbeat at p's revision: 200 -> the new revision. */
int pc_heartbeat(struct pc_client *c, struct pc_player *p) CC_MUST_CHECK;

/* POST /v1/queue/{id}/cancel at p's revision: 200 -> CANCELLED. */
int pc_cancel(struct pc_client *c, struct pc_player *p) CC_MUST_CHECK;

/* GET /v1/queue/{id}: 200 -> revision and state as the server has them. */
int pc_get_ticket(struct pc_client *c, struct pc_player *p) CC_MUST_CHECK;

/* A proposal as one of its participants sees it (SPEC 7). */
struct pc_proposal {
	char id[CC_UUID_BUF];          /* uuid */
	char playlist[CC_PLAYLIST_BUF];    /* casual | ranked */
	char state[16];       /* OPEN, ACCEPTED, DECLINED, EXPIRED */
	int64_t revision;     /* what a response must name */
	char match_id[CC_UUID_BUF];    /* set once ACCEPTED ("" before) */
	char my_response[16]; /* this player's answer: "accept", "decline" or "" (none yet) */
	int participants;     /* players in it */
};

/* GET /v1/proposals/{proposal_id}: 200 -> *out, read as player p. */
int pc_get_proposal(struct pc_client *c, const struct pc_player *p, const char *proposal_id,
		    struct pc_proposal *out) CC_MUST_CHECK;

/* POST /v1/proposals/{proposal_id}/response {"response": accept ? "accept" :
 * "decline", "revision": revision}: 200 -> *out, the proposal after the
 * answer. 409 revision_conflict / proposal_closed are the races to expect
 * (see pc_client_error_code()). */
int pc_respond(struct pc_client *c, const struct pc_player *p, const char *proposal_id, bool accept,
	       int64_t revision, struct pc_proposal *out) CC_MUST_CHECK;

/* Where and how a player joins its match (GET /v1/matches/{id}/assignment). */
struct pc_assignment {
	char match_id[CC_UUID_BUF];
	char address[65];     /* IPv4 literal or host name */
	int64_t port;         /* 1..65535 */
	char join_token[513]; /* printable ASCII, at most 512 bytes (game/wire.h CC_WIRE_TOKEN_MAX) */
	int64_t slot;         /* 0..15 */
	int64_t team;         /* 0 or 1 */
};

/*
 * GET /v1/matches/{match_id}/assignment as player p: 200 -> *out. Before
 * the match's server is ready cc-api answers 409 assignment_pending (see
 * pc_client_error_code()): the caller asks again later; 409 match_closed
 * and 404 mean it never will be.
 */
int pc_get_assignment(struct pc_client *c, const struct pc_player *p, const char *match_id,
		      struct pc_assignment *out) CC_MUST_CHECK;

/* What a post-match screen shows one player (GET /v1/matches/{id}, issue 20). */
struct pc_match_summary {
	char match_id[CC_UUID_BUF];
	char playlist[33];
	bool ranked;
	char state[24];          /* ALLOCATING .. COMPLETED | FAILED */
	char end_reason[33];     /* "" while the match is not over */
	bool has_result;         /* the result is recorded: the fields below are set */
	int64_t score[2];
	int winner;              /* 0, 1, or -1 for a draw */
	int64_t duration_seconds;
	int64_t team;            /* the player's team */
	bool rating_shown;       /* the player's entry has a "rating" field (ranked only; casual shows none) */
	bool rated;              /* ... and it is not null: the four numbers below */
	double rating_before, deviation_before, rating_after, deviation_after;
};

/*
 * GET /v1/matches/{match_id} as player p: 200 -> *out (the fields above,
 * the player's own entry found by its id). 404 when the match is not the
 * player's. A summary whose shape breaks the contract is CC_EINVAL with
 * pc_client_problem() naming the field.
 */
int pc_get_match_summary(struct pc_client *c, const struct pc_player *p, const char *match_id,
			 struct pc_match_summary *out) CC_MUST_CHECK;

#endif
