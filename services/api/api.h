/*
 * api.h - what cc-api's modules share: the configuration, the process
 * context every route handler receives, and the small helpers every route
 * uses (database handle, transaction answers, bodies, authentication).
 *
 * main.c owns the context: it fills it at start-up, hands it to the HTTP
 * server as ctx, and frees it after the server has stopped, so handlers read
 * it without locks (everything in it is read-only or thread-safe).
 */
#ifndef CC_API_H
#define CC_API_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "store/candidate_index.h"
#include "store/candidates.h"
#include "store/tickets.h"
#include "sys/cc.h"
#include "sys/config.h"
#include "sys/http_server.h"
#include "sys/json.h"
#include "sys/metrics.h"
#include "sys/pg.h"
#include "sys/ratelimit.h"
#include "sys/service.h"
#include "game/playlist.h"
#include "game/tiers.h"
#include "game/wait_estimate.h"

#define API_MAX_REGIONS 16
#define API_REGION_MAX 32
#define API_PROBE_URL_MAX 200 /* bytes of a --probe-urls base URL */

/* The rate-limited actions (ratelimits.c). */
enum api_rate_action { API_RL_LOGIN, API_RL_PROBE, API_RL_ENQUEUE, API_RL_RESPONSE, API_RL_COUNT };

/* cc-api's configuration, filled from the option table in main.c. */
struct api_config {
	char *listen;                   /* player API bind address */
	int64_t port;                   /* player API port (0 = ephemeral) */
	int64_t max_body_bytes;         /* request body cap (413 beyond) */
	int64_t max_connections;        /* concurrent HTTP connections */
	int64_t max_per_address;        /* concurrent HTTP connections from one address */
	int64_t header_timeout_ms;      /* total deadline of a request head */
	int64_t body_timeout_ms;        /* total deadline of a request body */
	bool keep_alive;                /* reuse connections (behind a proxy only) */
	int64_t rate_per_player[API_RL_COUNT];  /* requests a minute (= burst) per player; 0 = off */
	int64_t rate_per_address[API_RL_COUNT]; /* requests a minute (= burst) per address; 0 = off */
	char *operator_token;           /* secret: bearer of the /v1/admin routes; unset = 503 */
	char *regions;                  /* comma-separated region names served for probes */
	char *probe_urls;               /* region=URL,...: where each region's probes are answered */
	int64_t min_protocol_version;   /* below: 426 client_outdated */
	int64_t session_ttl_seconds;    /* lifetime of a session token */
	int64_t ticket_ttl_seconds;     /* a ticket expires this long after its last heartbeat */
	int64_t probe_ttl_seconds;      /* a probe nonce must be answered within this */
	int64_t probe_freshness_seconds; /* RTT evidence older than this does not count */
	char *steam_api_url;            /* base URL of Steam's Web API */
	int64_t steam_app_id;           /* 0 = Steam login not configured */
	char *steam_publisher_key;      /* secret: Steam publisher Web API key */
	int64_t steam_timeout_ms;       /* whole Steam request deadline */
	bool steam_reject_vac_banned;   /* 403 for VAC-banned accounts */
	bool steam_reject_publisher_banned; /* 403 for publisher-banned accounts */
	char *workload_secret_file;     /* key set verifying workload tokens (servers.c); unset = server routes 503 */
	char *join_keys_file;           /* key set signing backfill join tokens (backfill.c); unset = no backfill */
	char *join_key_id;              /* its active key, as cc-allocator's --join-key-id */
	int64_t join_token_ttl_seconds; /* lifetime of a backfill join token */
	int64_t backfill_window_seconds; /* an offer's window (SPEC 9: 10 s) */
	double rating_tau;              /* Glicko-2 system constant of the result route */
	bool events;                    /* serve GET /v1/events */
	int64_t events_max_connections; /* streams one replica holds */
	int64_t events_ping_interval_ms; /* a ping to every stream this often */
	int64_t events_pong_timeout_ms;  /* no pong within this after a ping: dropped */
	int64_t events_session_check_ms; /* streams' sessions re-checked this often */
	struct cc_service_options svc;  /* database (+pool), Redis (candidate index), admin port, log level */
};

/*
 * Turns a login ticket into a stable external identity (a Steam id).
 * Returns 0 and writes steam_id, or answers resp with the refusal and returns
 * a negative code. cc-api uses Steam; cc-testkit-api links a fake.
 */
typedef int (*api_login_fn)(const struct api_config *cfg, const char *ticket, char steam_id[24],
			    struct cc_http_response *resp);

/* The process context handed to every handler. */
struct api {
	const struct api_config *cfg;             /* read-only after start-up */
	struct cc_pg_pool *pool;                  /* thread-safe */
	api_login_fn login;                       /* Steam, or the testkit's fake */
	struct cc_tier_band *_Atomic tier_bands;  /* from tier_bands; NULL until loaded */
	size_t n_tier_bands;                      /* written before tier_bands is published */
	struct cc_candidate_index *index;         /* thread-safe; NULL = no index */
	struct cc_metric *index_errors;           /* failed index refreshes, by op */
	struct cc_ratelimiter *limiter;           /* thread-safe; shared through Redis when configured */
	struct cc_metric *rate_limited;           /* 429 rate_limited, by action, scope, backend */
	size_t n_regions;                         /* parsed from cfg->regions */
	char regions[API_MAX_REGIONS][API_REGION_MAX + 1];
	char regions_pg_array[API_MAX_REGIONS * (API_REGION_MAX + 3) + 3]; /* "{a,b}" for SQL */
	char probe_urls[API_MAX_REGIONS][API_PROBE_URL_MAX + 1]; /* by region index; "" = this server */
	struct cc_keyset *workload_keys;          /* from --workload-secret-file; NULL = not configured */
	struct cc_keyset *join_keys;              /* from --join-keys-file; NULL = backfill off */
	struct cc_metric *server_conflicts;       /* 409s of the server routes, by kind (route) */
	struct cc_metric *workload_refusals;      /* refused workload tokens, by reason */
	struct api_events *events;                /* the event stream (events.c); NULL = off */
};

extern const struct cc_service_spec api_service_spec;

/* The player and operator route table (routes.c). */
extern const struct cc_http_route api_routes[];
extern const size_t api_n_routes;

/* The testkit's fake login; defined only in cc-testkit-api (testkit_login.c). */
int api_testkit_login(const struct api_config *cfg, const char *ticket, char steam_id[24],
		      struct cc_http_response *resp) __attribute__((weak));

/* Steam login (session.c). */
int api_steam_login(const struct api_config *cfg, const char *ticket, char steam_id[24],
		    struct cc_http_response *resp);

/* ---- helpers (util.c) ---------------------------------------------------- */

/*
 * What a transaction decided. A transaction function resets it at the start
 * of every attempt and fills it; the handler answers from it after the
 * transaction ends. body is malloc'd and owned by the answer.
 */
struct api_answer {
	int status;                /* 0 = nothing decided */
	const char *code;          /* error code (static), NULL for success */
	char message[200];         /* error message */
	unsigned retry_after;      /* for 429 */
	char *body;                /* success body (JSON text) */
};

void api_answer_reset(struct api_answer *a);
void api_answer_error(struct api_answer *a, int status, const char *code, const char *fmt, ...)
	CC_PRINTF(4, 5);
/* Takes a copy of the JSON text; CC_ENOMEM on failure. */
int api_answer_body(struct api_answer *a, int status, const char *json) CC_MUST_CHECK;

/*
 * Answers resp from a finished transaction: the answer when one was decided
 * (whatever rc is), else the error rc means (503 retryable for database
 * trouble, retry_exhausted for a spent retry budget). Releases the answer.
 */
void api_respond(struct cc_http_response *resp, int rc, struct api_answer *a);

/* Borrows a pooled connection, or answers 503 and returns NULL. */
struct cc_pg *api_db(struct api *api, struct cc_http_response *resp);
void api_db_release(struct api *api, struct cc_pg *pg);

/*
 * Parses the body as a JSON object with only the allowed fields, or answers
 * 400 (naming the problem) and returns NULL. The caller frees the tree.
 */
cJSON *api_body_object(const struct cc_http_request *req, struct cc_http_response *resp,
		       const char *const *allowed);

/*
 * The pure half of api_body_object(): parses len bytes of text (NULL with
 * len 0 is an empty body) as a JSON object with only the allowed members
 * (NULL: any). Returns 0 with *out the tree (caller frees with
 * cJSON_Delete), or the cc_json_parse / cc_json_only_fields code with err
 * set (valid JSON that is not an object: CC_EINVAL with err->field "body",
 * so the caller answers invalid_request, not invalid_json); *out untouched
 * on failure.
 */
int api_body_parse(const char *text, size_t len, const char *const *allowed, cJSON **out,
		   struct cc_json_error *err) CC_MUST_CHECK;

/*
 * Each route's body: the members it allows (NULL-terminated, for
 * api_body_object) and its reader, which checks every member's type, range
 * and form and points the outputs into the tree. A reader returns 0, or
 * CC_EINVAL with err naming the field (answered as 400 invalid_request).
 * Pure, so tests/fuzz/fuzz_api_bodies.c drives exactly what the routes run.
 */
extern const char *const api_login_fields[];          /* POST /v1/session/steam */
int api_login_read(const cJSON *body, const char **ticket, struct cc_json_error *err) CC_MUST_CHECK;
extern const char *const api_enqueue_fields[];        /* POST /v1/queue */
int api_enqueue_read(const cJSON *body, const char **playlist, int64_t *protocol_version,
		     const char **build, struct cc_json_error *err) CC_MUST_CHECK;
extern const char *const api_revision_fields[];       /* POST /v1/queue/{id}/heartbeat, /cancel */
int api_revision_read(const cJSON *body, int64_t *revision, struct cc_json_error *err) CC_MUST_CHECK;
extern const char *const api_probe_answer_fields[];   /* POST /v1/probes/{region}/answer */
int api_probe_answer_read(const cJSON *body, const char **nonce, struct cc_json_error *err) CC_MUST_CHECK;
extern const char *const api_proposal_response_fields[]; /* POST /v1/proposals/{id}/response */
int api_proposal_response_read(const cJSON *body, bool *accept, int64_t *revision,
			       struct cc_json_error *err) CC_MUST_CHECK;
extern const char *const api_ban_fields[];            /* POST /v1/admin/players/{id}/ban */
int api_ban_read(const cJSON *body, const char **until, const char **reason,
		 struct cc_json_error *err) CC_MUST_CHECK;
/*
 * The optional fence of a ban or unban: expected_banned_until, null (not
 * banned) or RFC 3339, the banned_until the operator read. *fenced says
 * whether it was given; *expected points into the tree (NULL for null).
 */
extern const char *const api_unban_fields[];          /* POST /v1/admin/players/{id}/unban (optional body) */
int api_ban_fence_read(const cJSON *body, bool *fenced, const char **expected, struct cc_json_error *err) CC_MUST_CHECK;
extern const char *const api_replay_fields[];         /* POST /v1/admin/outbox/dead-letters/{id}/replay */
int api_replay_read(const cJSON *body, int64_t *replays, struct cc_json_error *err) CC_MUST_CHECK;
/* The game-server routes (servers.c); the result body's reader is cc_match_result_parse (fuzz_match_result). */
extern const char *const api_register_fields[];       /* POST /v1/servers/{id}/register */
int api_register_read(const cJSON *body, const char **state, int64_t *protocol_version, const char **image_digest,
		      struct cc_json_error *err) CC_MUST_CHECK;
extern const char *const api_connect_fields[];        /* POST /v1/servers/{id}/connect */
int api_connect_read(const cJSON *body, const char **player_id, const char **connection_id,
		     struct cc_json_error *err) CC_MUST_CHECK;
extern const char *const api_disconnect_fields[];     /* POST /v1/servers/{id}/disconnect */
int api_disconnect_read(const cJSON *body, const char **player_id, int64_t *generation, const char **reason,
			struct cc_json_error *err) CC_MUST_CHECK;
extern const char *const api_shutdown_fields[];       /* POST /v1/servers/{id}/shutdown */
int api_shutdown_read(const cJSON *body, const char **reason, struct cc_json_error *err) CC_MUST_CHECK;
extern const char *const api_heartbeat_fields[];      /* POST /v1/servers/{id}/heartbeat */
/* phase: "loading" | "playing" | "ended"; tick: 0 .. 2^53 - 1. */
int api_heartbeat_read(const cJSON *body, const char **phase, int64_t *tick, struct cc_json_error *err) CC_MUST_CHECK;
extern const char *const api_no_show_fields[];        /* POST /v1/servers/{id}/no_show */
#define API_NO_SHOW_MAX 16 /* player ids in one no_show body */
/* player_ids: 1..API_NO_SHOW_MAX distinct lowercase UUIDs, copied into ids (*n of them). */
int api_no_show_read(const cJSON *body, char (*ids)[CC_UUID_BUF], size_t *n, struct cc_json_error *err) CC_MUST_CHECK;

/* True when key is a valid Idempotency-Key: 1-128 characters [A-Za-z0-9_-]. */
bool api_idempotency_key_valid(const char *key);

/* Answers 400 invalid_request naming the field in err. */
void api_bad_field(struct cc_http_response *resp, const struct cc_json_error *err);

/* Writes "\\x<64 hex>" (PostgreSQL bytea text) of SHA-256(secret). */
void api_secret_hash_param(const char *secret, char out[2 + 64 + 1]);

/* True when region is one this process serves. */
bool api_region_known(const struct api *api, const char *region);

/*
 * The answer_url of a challenge for region (one this process serves):
 * "<--probe-urls base>/v1/probes/<region>/answer" when the region has one,
 * else the relative "/v1/probes/<region>/answer" (this server). out holds
 * API_PROBE_URL_MAX + 64 bytes.
 */
#define API_ANSWER_URL_BUF (API_PROBE_URL_MAX + API_REGION_MAX + 32)
void api_probe_answer_url(const struct api *api, const char *region, char out[API_ANSWER_URL_BUF]);

/* ---- candidate index (index.c) ------------------------------------------ */

/*
 * Keeps the Redis candidate index (candidate_index.h, SPEC 6) in step with
 * the tickets this process changes. A transaction collects the rows the
 * store changed in a struct cc_ticket_moves (store/tickets.h) that it
 * resets at the start of every attempt; the handler applies them only after
 * the transaction committed, so Redis never shows a change PostgreSQL
 * rolled back, and never reads them back: a QUEUED row is put with the
 * candidate the store returned, any other state removed
 * (cc_candidate_index_apply_moves). Best effort: a Redis error never fails
 * a request; it is counted in
 * cosmic_clash_api_candidate_index_errors_total{op} and logged at most once
 * per CC_CANDIDATE_INDEX_LOG_INTERVAL_MS.
 *
 * Ordering is not guaranteed across requests (two requests may apply their
 * changes in the opposite order of their commits), so an entry can be
 * stale: the matcher re-checks every ticket in PostgreSQL when it claims,
 * filters on expires_at against PostgreSQL's now(), and removes what it
 * found gone.
 */
#define API_INDEX_POOL_SIZE 8   /* Redis connections of the index */

/*
 * Creates api->index from the configuration (no Redis host: no index) and
 * declares the error metric. Returns 0, or CC_EINVAL when a host is set
 * but the index cannot be created. Redis being down is not an error.
 */
int api_index_open(struct api *api) CC_MUST_CHECK;

/* Applies the moves, in order, to the index (call only after the commit). Never fails. */
void api_index_apply(struct api *api, const struct cc_ticket_moves *moves);

/* ---- rate limits (ratelimits.c) ----------------------------------------- */

/*
 * Creates api->limiter (Redis from --redis-host when set; Redis being down
 * is not an error) and its metric. Returns 0 or CC_EINVAL.
 */
int api_ratelimits_open(struct api *api) CC_MUST_CHECK;

/* Takes a token from the client address's bucket for a; false = answered 429. */
bool api_rate_address(struct api *api, enum api_rate_action a, const struct cc_http_request *req,
		      struct cc_http_response *resp);

/* Takes a token from the player's bucket for a (player: uuid or Steam id); false = answered 429. */
bool api_rate_player(struct api *api, enum api_rate_action a, const char *player, struct cc_http_response *resp);

/* ---- authentication (auth.c) -------------------------------------------- */

struct api_player {
	char id[CC_UUID_BUF]; /* the authenticated player's uuid */
};

/*
 * Checks the bearer session of req on every request: unknown, revoked or
 * expired -> 401, banned -> 403, database trouble -> 503 (resp answered and
 * a negative code returned). 0 and *out on success.
 */
int api_authenticate(struct api *api, struct cc_pg *pg, const struct cc_http_request *req,
		     struct cc_http_response *resp, struct api_player *out) CC_MUST_CHECK;

/*
 * api_authenticate for a token already taken from the request (the event
 * stream's subprotocol), by its api_secret_hash_param hash: the same
 * answers.
 */
int api_authenticate_hash(struct api *api, struct cc_pg *pg, const char *hash, struct cc_http_response *resp,
			  struct api_player *out) CC_MUST_CHECK;

/*
 * The two halves of api_authenticate, for a route that folds the session
 * read into its own statement (the heartbeat): api_bearer_hash takes the
 * request's bearer token to its api_secret_hash_param hash, or answers 401
 * and returns false; api_session_verdict answers a session read (rc from
 * the read: 0 with *s, CC_ENOTFOUND, or a database error) as
 * api_authenticate does and returns its code.
 */
struct cc_session_check;
bool api_bearer_hash(const struct cc_http_request *req, struct cc_http_response *resp, char hash[2 + 64 + 1]);
int api_session_verdict(int rc, const struct cc_session_check *s, struct cc_http_response *resp,
			struct api_player *out) CC_MUST_CHECK;

#define API_BEARER_TOKEN_MAX 128  /* bytes of any bearer token we accept */
#define API_OPERATOR_TOKEN_MIN 16 /* bytes of --operator-token, checked at start-up */

/*
 * True when token[0..len) is a bearer token the Authorization parser
 * accepts: 1 to API_BEARER_TOKEN_MAX bytes of [A-Za-z0-9-._~+/=].
 */
bool api_bearer_token_syntax_ok(const char *token, size_t len);

/*
 * Extracts the token of an Authorization header value "Bearer <token>"
 * (scheme case-insensitive, one space) into buf (len bytes). Returns false
 * for NULL, another scheme, a token that fails api_bearer_token_syntax_ok,
 * or one that does not fit; buf is written only on success.
 */
bool api_bearer_parse(const char *header, char *buf, size_t len);

/*
 * Copies the token of "Authorization: Bearer <token>" into buf (cap bytes)
 * when it is 1 to cap - 1 bytes of RFC 6750's b64token characters; false
 * for an absent, malformed or longer header. For bearer tokens longer than
 * API_BEARER_TOKEN_MAX (workload tokens).
 */
bool api_bearer_token(const struct cc_http_request *req, char *buf, size_t cap);

/* Checks the operator bearer secret; answers 401/503 and returns false when refused. */
bool api_operator_authorized(struct api *api, const struct cc_http_request *req,
			     struct cc_http_response *resp);

/* ---- shared bodies (profile.c) ------------------------------------------- */

/*
 * The RankedProfile object of contracts/v1/openapi.json (rating, deviation,
 * tier, provisional, ranked_games, season_end) from a stored rating row and
 * the running season's end (RFC 3339; NULL or "" = null: no season), for
 * GET /v1/profile/ranked and the operator's player view alike. Returns a new
 * tree the caller frees with cJSON_Delete, or NULL when out of memory.
 */
cJSON *api_ranked_profile(const struct api *api, double rating, double deviation, long ranked_games,
			  const char *season_end);

/* ---- route handlers ------------------------------------------------------ */

int api_session_steam(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);
/* ---- wait.c: the estimated wait of every Ticket answer (issue 26) ---- */

/*
 * The estimated wait of the ticket ticket_id as an answer shows it in
 * state: QUEUED is estimated over its wait history on pg
 * (store/queue_stats.h, game/wait_estimate.h; RTT reach at SPEC 6's limit,
 * cc-matcher's default), any other state is not_queued without a read.
 * Returns 0, or the read's error (the caller answers unavailable or fails).
 */
int api_ticket_estimate(struct cc_pg *pg, const char *ticket_id, const char *state, struct cc_wait_estimate *e)
	CC_MUST_CHECK;
/*
 * Adds estimated_wait_seconds and estimated_wait_method to a Ticket answer
 * a (200/201 with a body; anything else, or one that has them, is left
 * alone), from the ticket as a shows it; after the route's commit.
 */
void api_answer_estimate(struct cc_pg *pg, struct api_answer *a);
/* The same for every ticket of the party queue's answer (POST /v1/parties/{id}/queue). */
void api_answer_estimate_tickets(struct cc_pg *pg, struct api_answer *a);
/* The same for the heartbeat's 200 of ticket t, over a history shared per queue for up to a second. */
void api_answer_estimate_shared(struct cc_pg *pg, const struct cc_ticket *t, struct api_answer *a);

int api_queue_create(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);
int api_queue_get(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);
int api_queue_heartbeat(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);
int api_queue_cancel(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);
int api_probe_challenge(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);
int api_probe_answer(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);
int api_profile_ranked(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);
int api_operator_ban(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);
int api_operator_unban(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);
int api_operator_player(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);
int api_proposal_get(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);
int api_proposal_respond(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);
int api_operator_queue_stats(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);
int api_operator_dead_letters(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);
int api_operator_replay(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);

/* The game server's routes and the player's assignment (servers.c). */
int api_server_register(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);
int api_server_roster(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);
int api_server_connect(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);
int api_server_disconnect(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);
int api_server_shutdown(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);
int api_server_result(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);
int api_server_heartbeat(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);
int api_server_no_show(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);
int api_server_vacated(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);

/*
 * Backfill (backfill.c; SPEC 9, issue 26). GET /v1/backfill-offers/{offer_id}
 * and POST /v1/backfill-offers/{offer_id}/response {response}.
 */
extern const char *const api_vacated_fields[];          /* POST /v1/servers/{id}/vacated */
int api_backfill_get(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);
int api_backfill_respond(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);
struct cc_backfill_rules;
struct cc_playlist;
/* The rules an offer of a pl match follows (its window from the config). */
void api_backfill_rules(const struct api *api, const struct cc_playlist *pl, struct cc_backfill_rules *out);
int api_match_assignment(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);

/* Parties (parties.c, issue 26). */
int api_party_create(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);
int api_party_get(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);
int api_party_join(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);
int api_party_invite(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);
int api_party_leave(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);
int api_party_kick(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);
int api_party_promote(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);
int api_party_disband(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);
int api_party_queue(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);

/* The operator console: its page (console.c) and its reads (console_api.c). */
int api_console_index(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);
int api_console_asset(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);
int api_console_overview(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);
int api_console_matches(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);
int api_console_match(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);
int api_console_players(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);
int api_console_player_history(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);
int api_console_servers(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);

/* The player's match summary (matches.c). */
int api_match_get(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);

/* ---- live events (events.c) ---------------------------------------------- */

/*
 * GET /v1/events (contracts/v1/events.json): the player's outbox events
 * over a WebSocket. api_events_open starts the hub (sys/ws.h) and the
 * listener thread (its own connection LISTENing on cc_events) and sets
 * api->events; a connection is authenticated, registered and its replay
 * read in the route's handler (a pool connection, like any route), then
 * handed to the hub. api_events_close stops the listener and drains the
 * hub (every stream gets 1001 shutdown; later upgrades are refused): call
 * it before stopping the HTTP server, which waits for upgraded sockets.
 * api_events_free, after the server has stopped, frees it all. With
 * --events=false api->events stays NULL and the route answers 503
 * events_disabled (clients poll).
 */
struct api_events;
int api_events_open(struct api *api) CC_MUST_CHECK;
void api_events_close(struct api *api);
void api_events_free(struct api *api);
int api_events_get(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx);

/*
 * Loads --workload-secret-file into api->workload_keys (unset: stays NULL
 * and the server routes answer 503 not_configured) and declares the server
 * routes' metrics. Returns 0, or a negative code after printing the problem
 * (never a key) to stderr: the process must not start.
 */
int api_servers_open(struct api *api) CC_MUST_CHECK;

#endif
