/*
 * cc-supervisor: the long-lived process around cc-gameserver (SPEC 10). It
 * runs in one of two modes, chosen by the environment:
 *
 *   direct mode  (AGONES_SDK_HTTP_PORT unset): the local provider's pool
 *                process, serving one allocation after another from an
 *                allocation file;
 *   Agones mode  (AGONES_SDK_HTTP_PORT set): the entrypoint of a game-server
 *                pod of an Agones Fleet, serving the one allocation its
 *                GameServer gets, then shutting the GameServer down
 *                (agones_loop below; the SDK client is agones_sdk.c).
 *
 * Both modes serve an allocation the same way (serve(): steps 2 to 6).
 *
 * Direct mode. The allocator's local provider keeps a warm pool of these,
 * one per game port (INTERFACES.md: COSMIC_CLASH_SERVER_ID, _GAME_PORT,
 * _ALLOCATION_FILE, _API_URL; --server-id and --allocation-file are
 * required). Each waits for its allocation file, then serves one match
 * (woken by the allocator's FIFO beside the file, polling at
 * --poll-interval-ms without one):
 *
 *   1. read the allocation file (the local provider writes it atomically);
 *   2. GET /v1/servers/{id}/roster with the workload token; verify the
 *      manifest (digest, match, allocation and server ids) and write it for
 *      the child (tmp + rename, 0600);
 *   3. start cc-gameserver (its own process group, SIGTERM if we die), its
 *      stdout and stderr relayed line by line (below);
 *   4. wait for its loopback ready probe (GET /readyz on TCP 127.0.0.1 at
 *      the game port's number);
 *   5. register PROCESS_READY (bounded retry; failure kills the child),
 *      then ASSIGNMENT_READY (bounded retry; failure is logged, the child
 *      lives: players may still come and the result still counts). A
 *      PROCESS_READY answered 409 invalid_state means the match is past
 *      registration: this supervisor was restarted (SIGKILL, crash) and
 *      found the allocation file of a match its previous child was
 *      serving, or one already over. The child is SIGKILLed at once (it
 *      must not play it: an empty match played out would be rated),
 *      "match_past_registration" is logged, and /shutdown reports
 *      "server_lost", so the match fails as for a killed game server;
 *   6. wait for the child, forwarding SIGTERM/SIGINT to it; classify its
 *      exit (code, signal, core) and log "child_exited". Meanwhile the
 *      roster is fetched again every --roster-poll-ms: a newer one (casual
 *      backfill seated a player, SPEC 9) is verified, written over the
 *      child's file and the child sent SIGHUP to reload it;
 *   7. POST /shutdown {reason}, delete the allocation and roster files, and
 *      wait for the next allocation. The allocation file is kept when it
 *      already names another allocation (cc-api may release ours before
 *      the child exits: a ranked no-show, a match the control plane
 *      failed), and a stop before step 5 succeeded (SIGTERM: the allocator
 *      stopping or dying) leaves allocation and file alone for the
 *      restarted pool process ("allocation_left").
 *
 * Agones mode. The SDK sidecar's HTTP gateway on 127.0.0.1:
 * $AGONES_SDK_HTTP_PORT (../shared/agones/sdk.swagger.json):
 *
 *   A. GET /gameserver until object_meta.name, status.address and
 *      status.ports are assigned. Refused connections, errors and answers
 *      with those fields empty are normal while the pod starts (the sidecar
 *      may start after us): retried with backoff (50 ms doubling, 1 s cap)
 *      for --sdk-start-timeout-ms, then a clear error ("sdk_not_assigned")
 *      and exit status 1. The GameServer's name is the server id (cc-api's
 *      game_servers.id, as the agones provider records it); --server-id,
 *      when given, must equal it; --game-port is the container port the
 *      child binds (the GameServer's port may be a host port mapped to it).
 *   B. POST /ready (bounded retry like registration), then health pings
 *      (POST /health every --health-interval-ms) from then on. /ready
 *      comes before the allocation, not after the child's probe as in
 *      direct mode's order: a GameServerAllocation only selects Ready
 *      GameServers (the agones provider's selector says gameServerState
 *      Ready), and the allocation annotations the child needs arrive only
 *      with it; Agones marks a Ready GameServer that sends no pings
 *      Unhealthy. A GameServer already Allocated at start-up (this
 *      container restarted in its pod) skips /ready, which would return it
 *      to the fleet.
 *   C. GET /gameserver every --sdk-poll-interval-ms until status.state is
 *      "Allocated" (no bound: a warm server waits for demand). Shutdown,
 *      Unhealthy or a deletion timestamp ends the wait (exit 1).
 *   D. The allocation from object_meta.annotations, set by the agones
 *      provider's GameServerAllocation (agones_sdk.h names them):
 *      cosmic-clash.io/match-id, /allocation-id, /workload-token,
 *      /playlist, /arena, /protocol; the address and port from status.
 *      Missing or malformed: "allocation_refused", SDK /shutdown, exit 1.
 *   E. steps 2 to 6 above (Agones shows the allocation before
 *      cc-allocator has recorded the server; until it has, cc-api answers
 *      the roster 409 invalid_state, "not yet" as in direct mode); the health
 *      pings go on while the child lives
 *      and stop as soon as it has exited (before anything else is
 *      reported);
 *   F. cc-api's POST /shutdown {reason} as in step 7 (also after a stop
 *      before registration: no restarted pool process will serve this
 *      allocation, the pod is going away), then the SDK's POST /shutdown
 *      (Agones deletes the GameServer and the Fleet replaces it, so the
 *      allocator never frees agones servers), and exit 0.
 *
 * The child's exit codes (gameserver/main.c): 0 completed, 3
 * result_not_acknowledged, 4 stopped, 5 called_off (a ranked no-show, or
 * the control plane ended the match), 2 bad_configuration, others
 * exited_with_error; a signal is killed_by_signal.
 *
 * The child's output: each line that is already one JSON object (our
 * logger's) is passed through as is, written with one write(); any other
 * line is wrapped as a "child_output" event with the text escaped, so the
 * supervisor's stderr stays one JSON object per line. Lines longer than
 * CC_LOG_LINE_MAX are cut and marked.
 *
 */
#include <cjson/cJSON.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agones_sdk.h"
#include "game/playlist.h"
#include "game/roster.h"
#include "sys/clock.h"
#include "sys/config.h"
#include "sys/crypto.h"
#include "sys/file.h"
#include "sys/http_client.h"
#include "sys/json.h"
#include "sys/log.h"
#include "sys/service.h"
#include "sys/banned.h"

#define PROTOCOL_VERSION 1          /* the game protocol cc-gameserver speaks (contracts/gameserver-protocol.md) */
#define ALLOCATION_FILE_MAX 16384   /* bytes of an allocation file read */

struct supervisor_config {
	char *server_id;
	int64_t game_port;
	char *allocation_file;
	char *api_url;
	char *join_keys; /* secret: handed to the child in its environment */
	char *gameserver;
	char *gameserver_config;
	char *work_dir;
	char *bind;
	char *image_digest;
	int64_t poll_interval_ms;
	int64_t ready_timeout_ms;
	int64_t register_attempts;
	int64_t roster_timeout_ms;
	int64_t roster_poll_ms;
	int64_t api_timeout_ms;
	int64_t stop_grace_ms;
	int64_t sdk_timeout_ms;
	int64_t sdk_start_timeout_ms;
	int64_t sdk_poll_interval_ms;
	int64_t health_interval_ms;
	struct cc_service_options svc;
};

#define OPT(field) offsetof(struct supervisor_config, field)

static const struct cc_config_option supervisor_options[] = {
	{ .name = "server-id", .type = CC_CFG_STRING,
	  .help = "game_servers.id of this server (the local provider sets COSMIC_CLASH_SERVER_ID); direct mode: "
		  "required; Agones mode: the GameServer's name, which this must equal when given",
	  .offset = OPT(server_id) },
	{ .name = "game-port", .type = CC_CFG_INT, .required = true, .min = 1, .max = 65535,
	  .help = "UDP game port of the child; its ready probe is TCP 127.0.0.1 on the same number", .offset = OPT(game_port) },
	{ .name = "allocation-file", .type = CC_CFG_STRING,
	  .help = "direct mode (required there): the file the local provider writes when it allocates this server; "
		  "Agones mode: unused",
	  .offset = OPT(allocation_file) },
	{ .name = "api-url", .type = CC_CFG_STRING, .required = true,
	  .help = "cc-api base URL for the server routes", .offset = OPT(api_url) },
	{ .name = "join-keys", .type = CC_CFG_STRING, .secret = true, .required = true,
	  .help = "join key set the child verifies tokens with (passed to it in its environment)", .offset = OPT(join_keys) },
	{ .name = "gameserver", .type = CC_CFG_STRING,
	  .help = "path of cc-gameserver (default: next to this binary)", .offset = OPT(gameserver) },
	{ .name = "gameserver-config", .type = CC_CFG_STRING,
	  .help = "config file handed to cc-gameserver as --config (its match length, rates, ...; the local "
		  "provider passes no COSMIC_CLASH_* variables through)",
	  .offset = OPT(gameserver_config) },
	{ .name = "work-dir", .type = CC_CFG_STRING,
	  .help = "where the roster file for the child is written (default: the allocation file's directory; "
		  "Agones mode: $TMPDIR, else /tmp)",
	  .offset = OPT(work_dir) },
	{ .name = "bind", .type = CC_CFG_STRING, .default_value = "127.0.0.1",
	  .help = "address the child binds its UDP game port to", .offset = OPT(bind) },
	{ .name = "image-digest", .type = CC_CFG_STRING, .default_value = "local",
	  .help = "image digest reported at registration", .offset = OPT(image_digest) },
	{ .name = "poll-interval-ms", .type = CC_CFG_INT, .default_value = "50", .min = 5, .max = 10000,
	  .help = "how often the allocation file is looked for", .offset = OPT(poll_interval_ms) },
	{ .name = "ready-timeout-ms", .type = CC_CFG_INT, .default_value = "5000", .min = 50, .max = 120000,
	  .help = "the child must answer its ready probe within this", .offset = OPT(ready_timeout_ms) },
	{ .name = "register-attempts", .type = CC_CFG_INT, .default_value = "5", .min = 1, .max = 100,
	  .help = "tries of each registration (backoff 200 ms doubling, 3 s cap)", .offset = OPT(register_attempts) },
	{ .name = "roster-poll-ms", .type = CC_CFG_INT, .default_value = "1000", .min = 0, .max = 600000,
	  .help = "while the child plays, fetch the roster again this often; a newer one (casual backfill) is written "
		  "and the child sent SIGHUP to reload it (0: never)",
	  .offset = OPT(roster_poll_ms) },
	{ .name = "roster-timeout-ms", .type = CC_CFG_INT, .default_value = "30000", .min = 100, .max = 600000,
	  .help = "keep asking for the roster this long while cc-api says it is not published yet", .offset = OPT(roster_timeout_ms) },
	{ .name = "api-timeout-ms", .type = CC_CFG_INT, .default_value = "3000", .min = 100, .max = 60000,
	  .help = "deadline of one call to cc-api", .offset = OPT(api_timeout_ms) },
	{ .name = "stop-grace-ms", .type = CC_CFG_INT, .default_value = "5000", .min = 100, .max = 120000,
	  .help = "after forwarding SIGTERM, wait this long before SIGKILL", .offset = OPT(stop_grace_ms) },
	{ .name = "sdk-timeout-ms", .type = CC_CFG_INT, .default_value = "2000", .min = 50, .max = 60000,
	  .help = "Agones mode: deadline of one call to the SDK gateway", .offset = OPT(sdk_timeout_ms) },
	{ .name = "sdk-start-timeout-ms", .type = CC_CFG_INT, .default_value = "60000", .min = 100, .max = 3600000,
	  .help = "Agones mode: the SDK gateway must show the GameServer's name, address and ports within this "
		  "(unanswered and incomplete answers are retried until then), else exit 1",
	  .offset = OPT(sdk_start_timeout_ms) },
	{ .name = "sdk-poll-interval-ms", .type = CC_CFG_INT, .default_value = "250", .min = 10, .max = 60000,
	  .help = "Agones mode: how often GET /gameserver is asked whether the GameServer is Allocated",
	  .offset = OPT(sdk_poll_interval_ms) },
	{ .name = "health-interval-ms", .type = CC_CFG_INT, .default_value = "2000", .min = 50, .max = 60000,
	  .help = "Agones mode: POST /health this often, from /ready through the wait for the allocation and for as "
		  "long as the child lives (keep it well under the GameServer's health.periodSeconds)",
	  .offset = OPT(health_interval_ms) },
};

static const struct cc_service_spec supervisor_spec = {
	.program = "cc-supervisor",
	.summary = "Cosmic Clash supervisor: waits for an allocation, runs cc-gameserver for it, registers it, "
		   "reports its end. Direct mode (the local provider's pool: --server-id, --allocation-file) unless "
		   "AGONES_SDK_HTTP_PORT is set; then Agones mode: the GameServer and its allocation come from the SDK "
		   "gateway on 127.0.0.1:$AGONES_SDK_HTTP_PORT (/gameserver, /ready, /health, /shutdown), one match, "
		   "then /shutdown and exit.",
	.options = supervisor_options,
	.n_options = CC_ARRAY_LEN(supervisor_options),
	.shared = CC_SERVICE_LOG,
	.shared_offset = offsetof(struct supervisor_config, svc),
};

static struct cc_service service;
static struct supervisor_config cfg;
static bool agones_mode;              /* AGONES_SDK_HTTP_PORT is set */
static struct agones_sdk sdk;         /* Agones mode: the gateway */
static struct agones_health health;   /* Agones mode: the pings, from /ready while the child lives */
static char agones_server_id[CC_SERVER_ID_BUF]; /* Agones mode: the GameServer's name */

/* The allocation file, as the local provider writes it (INTERFACES.md). */
struct allocation {
	char allocation_id[CC_UUID_BUF];
	char match_id[CC_UUID_BUF];
	char server_id[CC_SERVER_ID_BUF];
	char address[64];
	int port;
	char *workload_token; /* secret, malloc'd */
	char playlist[CC_PLAYLIST_BUF];
	char arena[40];
	int protocol_version;
};

/* ---- small helpers ----------------------------------------------------------------- */

static void allocation_release(struct allocation *a)
{
	if (a->workload_token) {
		explicit_bzero(a->workload_token, strlen(a->workload_token));
		free(a->workload_token);
	}
	memset(a, 0, sizeof *a);
}

/* Copies a string member (required, 1..cap-1 bytes) into out; false with err set. */
static bool get_str(const cJSON *obj, const char *field, char *out, size_t cap, struct cc_json_error *err)
{
	const char *v = NULL;
	if (cc_json_get_string(obj, field, true, 1, cap - 1, &v, err) != 0)
		return false;
	snprintf(out, cap, "%s", v);
	return true;
}

/*
 * Parses the allocation file text. Returns 0, or CC_EINVAL with a message
 * naming the problem in why (never the token).
 */
static int allocation_parse(const char *text, size_t len, struct allocation *out, char *why, size_t whylen)
{
	cJSON *root = NULL;
	struct cc_json_error err = { { 0 }, { 0 } };
	int64_t version = 0, port = 0, proto = 0;
	const char *token = NULL;
	int rc = CC_EINVAL;
	memset(out, 0, sizeof *out);
	if (cc_json_parse_object(text, len, ALLOCATION_FILE_MAX, 4, &root, &err) != 0)
		goto out;
	if (cc_json_get_int(root, "version", true, 1, 1, &version, &err) != 0 ||
	    !get_str(root, "allocation_id", out->allocation_id, sizeof out->allocation_id, &err) ||
	    !get_str(root, "match_id", out->match_id, sizeof out->match_id, &err) ||
	    !get_str(root, "server_id", out->server_id, sizeof out->server_id, &err) ||
	    !get_str(root, "address", out->address, sizeof out->address, &err) ||
	    !get_str(root, "playlist", out->playlist, sizeof out->playlist, &err) ||
	    !get_str(root, "arena", out->arena, sizeof out->arena, &err) ||
	    cc_json_get_int(root, "port", true, 1, 65535, &port, &err) != 0 ||
	    cc_json_get_int(root, "protocol_version", true, 1, 65535, &proto, &err) != 0 ||
	    cc_json_get_string(root, "workload_token", true, 1, 4096, &token, &err) != 0)
		goto out;
	if (!cc_uuid_valid(out->allocation_id) || !cc_uuid_valid(out->match_id)) {
		snprintf(err.field, sizeof err.field, "%s", cc_uuid_valid(out->match_id) ? "allocation_id" : "match_id");
		snprintf(err.message, sizeof err.message, "not a UUID");
		goto out;
	}
	out->port = (int)port;
	out->protocol_version = (int)proto;
	out->workload_token = strdup(token);
	if (!out->workload_token) {
		rc = CC_ENOMEM;
		goto out;
	}
	rc = 0;
out:
	if (rc != 0)
		snprintf(why, whylen, "%s%s%s", err.field, err.field[0] ? ": " : "", err.message);
	cJSON_Delete(root);
	return rc;
}

/* ---- cc-api calls ----------------------------------------------------------------------- */

/*
 * One call to {api}/v1/servers/{id}/{route} with the workload token.
 * Returns the HTTP status (and the body in *body when not NULL, caller
 * frees), or a negative CC_E* for a transport failure.
 */
static int api_call(const struct allocation *a, const char *method, const char *route, const char *json, char **body)
{
	char url[1024], auth[4200];
	char *id = cc_http_url_escape(cfg.server_id, strlen(cfg.server_id));
	if (!id)
		return CC_ENOMEM;
	size_t ul = strlen(cfg.api_url);
	while (ul > 0 && cfg.api_url[ul - 1] == '/')
		ul--;
	snprintf(url, sizeof url, "%.*s/v1/servers/%s/%s", (int)ul, cfg.api_url, id, route);
	free(id);
	snprintf(auth, sizeof auth, "Authorization: Bearer %s", a->workload_token);
	const char *headers[] = { auth, json ? "Content-Type: application/json" : NULL, NULL };
	struct cc_http_client_request req = { .method = method, .url = url, .headers = headers, .body = json,
					      .body_len = json ? strlen(json) : 0, .timeout_ms = cfg.api_timeout_ms,
					      .max_response_bytes = CC_ROSTER_MANIFEST_MAX };
	struct cc_http_client_response resp = { 0 };
	int rc = cc_http_client_do(&req, &resp);
	explicit_bzero(auth, sizeof auth);
	if (rc != 0)
		return rc;
	rc = (int)resp.status;
	if (body) {
		*body = resp.body;
		resp.body = NULL;
	}
	cc_http_client_response_release(&resp);
	return rc;
}

/* Copies the SPEC error shape's error.code of body into code (cap bytes; "" when there is none). */
static void error_code_of(const char *body, char *code, size_t cap)
{
	cJSON *o = cJSON_Parse(body ? body : "");
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "error"), "code");
	snprintf(code, cap, "%s", cJSON_IsString(c) ? c->valuestring : "");
	cJSON_Delete(o);
}

/*
 * POSTs json to route up to attempts times (5xx, 429 and transport
 * failures are retried with backoff; 2xx succeeds; other 4xx fail at once).
 * Returns the last HTTP status (2xx on success), a negative CC_E* when the
 * last attempt failed in transport, or 0 when a stop cut the retries short;
 * code (cap bytes, may be NULL) receives the last answer's error.code, so a
 * caller can tell "the match is past this state" (409 invalid_state) from
 * any other refusal. Logs every failure with its status.
 */
static int api_post_retry(const struct allocation *a, const char *route, const char *json, int attempts, const char *what,
			  char *code, size_t cap)
{
	int64_t backoff = 200;
	int st = 0;
	if (code && cap)
		code[0] = '\0';
	for (int i = 1; i <= attempts; i++) {
		char *body = NULL;
		st = api_call(a, "POST", route, json, &body);
		if (st >= 200 && st < 300) {
			cc_log_info("api_ok", CC_LOG_STR("call", what), CC_LOG_INT("status", st), CC_LOG_INT("attempt", i),
				    CC_LOG_STR("match_id", a->match_id));
			free(body);
			return st;
		}
		cc_log_warn("api_failed", CC_LOG_STR("call", what), CC_LOG_INT("attempt", i), CC_LOG_INT("of", attempts),
			    CC_LOG_STR("error", st < 0 ? cc_errname(st) : ""), CC_LOG_INT("status", st < 0 ? 0 : st),
			    CC_LOG_STR("response", body ? body : ""));
		if (code && cap)
			error_code_of(st > 0 ? body : NULL, code, cap);
		free(body);
		if (st >= 400 && st < 500 && st != 429)
			return st; /* the API refuses: asking again changes nothing */
		if (i < attempts && !cc_service_nap(&service, backoff))
			return 0;
		backoff = backoff * 2 > 3000 ? 3000 : backoff * 2;
	}
	return st;
}

static bool http_ok(int st)
{
	return st >= 200 && st < 300;
}

/*
 * Fetches and verifies the roster, writes it to path (tmp + rename, 0600).
 * Returns true, or false with the reason logged.
 */
static bool fetch_roster(const struct allocation *a, const char *path, bool once, char known[CC_SHA256_HEX_LEN + 1])
{
	char *body = NULL, tmp[2 * PATH_MAX];
	struct cc_roster roster;
	enum cc_token_refusal why = CC_TOKEN_OK;
	struct cc_json_error jerr = { { 0 }, { 0 } };
	char digest[CC_SHA256_HEX_LEN + 1];
	bool ok = false;
	int64_t backoff = 50, end = cc_clock_ms() + cfg.roster_timeout_ms;
	int st = 0;
	/*
	 * The allocator may write our allocation file a moment before it
	 * publishes the roster: 404 and 409 are "not yet", like 5xx, 429 and
	 * a refused connection, until --roster-timeout-ms. 400, 401 and 403
	 * will not change by asking again.
	 */
	for (;;) {
		free(body);
		body = NULL;
		st = api_call(a, "GET", "roster", NULL, &body);
		/*
		 * Agones shows the GameServer Allocated, annotations and all, as it
		 * answers the allocator, which records the server in the
		 * allocations row only after that answer: until then cc-api answers
		 * 409 invalid_state ("no server recorded yet"; seen in
		 * supervisor_agones.sh: the roster asked 8 ms after the annotations
		 * arrived), one more "not yet".
		 */
		bool retry = st < 0 || st >= 500 || st == 429 || st == 404 || st == 409;
		if (once && st != 200) {
			free(body);
			return false; /* a re-fetch: the next poll asks again */
		}
		if (st == 200 || !retry || cc_clock_ms() + backoff > end || !cc_service_nap(&service, backoff))
			break;
		backoff = backoff * 2 > 1000 ? 1000 : backoff * 2;
	}
	if (st != 200) {
		cc_log_error("roster_failed", CC_LOG_STR("match_id", a->match_id), CC_LOG_INT("status", st < 0 ? 0 : st),
			     CC_LOG_STR("error", st < 0 ? cc_errname(st) : ""), CC_LOG_STR("response", body ? body : ""));
		goto out;
	}
	if (cc_roster_manifest_parse(body, strlen(body), &roster, digest, &why, &jerr) != 0) {
		cc_log_error("roster_refused", CC_LOG_STR("match_id", a->match_id), CC_LOG_STR("why", cc_token_refusal_name(why)),
			     CC_LOG_STR("field", jerr.field), CC_LOG_STR("problem", jerr.message));
		goto out;
	}
	if (strcmp(roster.match_id, a->match_id) != 0 || strcmp(roster.allocation_id, a->allocation_id) != 0 ||
	    strcmp(roster.server_id, cfg.server_id) != 0) {
		cc_log_error("roster_refused", CC_LOG_STR("match_id", a->match_id),
			     CC_LOG_STR("why", "the roster names another match, allocation or server"));
		goto out;
	}
	if (strcmp(digest, known) == 0)
		goto out; /* a re-fetch of the roster the child has */
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	size_t len = strlen(body);
	if (fd < 0 || write(fd, body, len) != (ssize_t)len || fsync(fd) != 0 || close(fd) != 0 || rename(tmp, path) != 0) {
		cc_log_error("roster_failed", CC_LOG_STR("path", path), CC_LOG_STR("error", strerror(errno)));
		if (fd >= 0)
			(void)unlink(tmp);
		goto out;
	}
	cc_log_info("roster_verified", CC_LOG_STR("match_id", a->match_id), CC_LOG_INT("players", (int64_t)roster.count),
		    CC_LOG_STR("digest", digest), CC_LOG_BOOL("refetched", once));
	memcpy(known, digest, CC_SHA256_HEX_LEN + 1);
	ok = true;
out:
	free(body);
	return ok;
}

/* ---- the child's output ---------------------------------------------------------------- */

/* Writes one relayed line: passed through when it is one JSON object, else wrapped. */
static void relay_line(char *line, size_t len, bool cut)
{
	if (!cut && len >= 2 && line[0] == '{' && line[len - 1] == '}') {
		cJSON *obj = cJSON_ParseWithLength(line, len);
		bool object = obj && cJSON_IsObject(obj);
		cJSON_Delete(obj);
		if (object) {
			line[len] = '\n';
			ssize_t w = write(STDERR_FILENO, line, len + 1); /* one write: lines do not interleave */
			(void)w;
			return;
		}
	}
	line[len] = '\0';
	cc_log_info("child_output", CC_LOG_STR("line", line), CC_LOG_BOOL("truncated", cut));
}

/* Relays fd line by line until EOF; owns fd. */
static void *relay_thread(void *arg)
{
	int fd = (int)(intptr_t)arg;
	static __thread char buf[CC_LOG_LINE_MAX + 2];
	size_t have = 0;
	bool skipping = false; /* inside the rest of an over-long line */
	for (;;) {
		ssize_t n = read(fd, buf + have, CC_LOG_LINE_MAX - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		have += (size_t)n;
		size_t start = 0;
		for (size_t i = 0; i < have; i++) {
			if (buf[i] != '\n')
				continue;
			if (!skipping)
				relay_line(buf + start, i - start, false);
			skipping = false;
			start = i + 1;
		}
		memmove(buf, buf + start, have - start);
		have -= start;
		if (have == CC_LOG_LINE_MAX) {
			if (!skipping)
				relay_line(buf, have, true);
			skipping = true;
			have = 0;
		}
	}
	if (have > 0 && !skipping)
		relay_line(buf, have, false);
	close(fd);
	return NULL;
}

/* ---- the child ---------------------------------------------------------------------------- */

struct child {
	pid_t pid;
	pthread_t relay;
	bool relaying;
	int64_t started_ms;
};

/* The default cc-gameserver path: next to our own executable. */
static void default_gameserver(char *out, size_t cap)
{
	char self[PATH_MAX - 32];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0) {
		snprintf(out, cap, "cc-gameserver");
		return;
	}
	self[n] = '\0';
	char *slash = strrchr(self, '/');
	if (slash)
		*slash = '\0';
	snprintf(out, cap, "%s/cc-gameserver", self);
}

/* True when the environment entry e names variable name ("NAME=..."). */
static bool env_is(const char *e, const char *name)
{
	size_t n = strlen(name);
	return strncmp(e, name, n) == 0 && e[n] == '=';
}

/* Wipes and frees a NULL-terminated environment built by child_env(). */
static void env_free(char **env, size_t secrets)
{
	if (!env)
		return;
	for (size_t i = 0; i < secrets; i++) {
		explicit_bzero(env[i], strlen(env[i]));
		free(env[i]);
	}
	free(env);
}

/*
 * The child's environment, built before fork (the child of a threaded
 * process may call only async-signal-safe functions, so no setenv there):
 * ours minus the secret and allocation variables, plus the join keys and
 * the workload token (secrets by environment, never argv: ps shows argv).
 * The first two entries are the malloc'd secrets. NULL when out of memory.
 */
static char **child_env(const struct allocation *a)
{
	extern char **environ;
	static const char *const drop[] = { "COSMIC_CLASH_JOIN_KEYS", "COSMIC_CLASH_JOIN_KEYS_FILE",
					    "COSMIC_CLASH_WORKLOAD_TOKEN", "COSMIC_CLASH_WORKLOAD_TOKEN_FILE",
					    "COSMIC_CLASH_ALLOCATION_FILE" };
	size_t n = 0;
	while (environ[n])
		n++;
	char **env = calloc(n + 3, sizeof *env);
	if (!env)
		return NULL;
	size_t kl = strlen(cfg.join_keys) + 32, tl = strlen(a->workload_token) + 32;
	env[0] = malloc(kl);
	env[1] = malloc(tl);
	if (!env[0] || !env[1]) {
		free(env[0]);
		free(env[1]);
		free(env);
		return NULL;
	}
	snprintf(env[0], kl, "COSMIC_CLASH_JOIN_KEYS=%s", cfg.join_keys);
	snprintf(env[1], tl, "COSMIC_CLASH_WORKLOAD_TOKEN=%s", a->workload_token);
	size_t k = 2;
	for (size_t i = 0; i < n; i++) {
		bool skip = false;
		for (size_t d = 0; d < CC_ARRAY_LEN(drop); d++)
			skip = skip || env_is(environ[i], drop[d]);
		if (!skip)
			env[k++] = environ[i];
	}
	env[k] = NULL;
	return env;
}

/*
 * Starts cc-gameserver for allocation a with the roster at roster_path.
 * Returns 0 (c filled), or CC_EIO (logged).
 */
static int child_start(struct child *c, const struct allocation *a, const char *roster_path)
{
	char exe[PATH_MAX], port[32], server_id[160], roster[2 * PATH_MAX], api[1100], bind[80], playlist[64], arena[64],
		config[PATH_MAX + 16];
	int pipefd[2];
	if (cfg.gameserver)
		snprintf(exe, sizeof exe, "%s", cfg.gameserver);
	else
		default_gameserver(exe, sizeof exe);
	snprintf(port, sizeof port, "--game-port=%d", (int)cfg.game_port);
	snprintf(server_id, sizeof server_id, "--server-id=%s", cfg.server_id);
	snprintf(roster, sizeof roster, "--roster-file=%s", roster_path);
	snprintf(api, sizeof api, "--api-url=%s", cfg.api_url);
	snprintf(bind, sizeof bind, "--bind=%s", cfg.bind);
	snprintf(playlist, sizeof playlist, "--playlist=%s", a->playlist);
	snprintf(arena, sizeof arena, "--arena=%s", a->arena);
	snprintf(config, sizeof config, "--config=%s", cfg.gameserver_config ? cfg.gameserver_config : "");
	char *argv[] = { exe, port, server_id, roster, api, bind, playlist, arena,
			 cfg.gameserver_config && cfg.gameserver_config[0] ? config : NULL, NULL };
	char **env = child_env(a);
	if (!env || pipe2(pipefd, O_CLOEXEC) != 0) {
		cc_log_error("child_start_failed", CC_LOG_STR("error", env ? strerror(errno) : "out of memory"));
		env_free(env, 2);
		return CC_EIO;
	}
	pid_t pid = fork();
	if (pid < 0) {
		cc_log_error("child_start_failed", CC_LOG_STR("error", strerror(errno)));
		close(pipefd[0]);
		close(pipefd[1]);
		env_free(env, 2);
		return CC_EIO;
	}
	if (pid == 0) {
		/* The child: its own group (only forwarded signals reach it), SIGTERM if we die, signals unblocked. */
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		(void)setpgid(0, 0);
		(void)prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() == 1)
			_exit(127);
		dup2(pipefd[1], STDOUT_FILENO);
		dup2(pipefd[1], STDERR_FILENO);
		execve(exe, argv, env);
		static const char msg[] = "{\"level\":\"error\",\"event\":\"exec_failed\",\"service\":\"cc-supervisor\"}\n";
		ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
		(void)w;
		_exit(127);
	}
	close(pipefd[1]);
	env_free(env, 2);
	c->pid = pid;
	c->started_ms = cc_clock_ms();
	c->relaying = pthread_create(&c->relay, NULL, relay_thread, (void *)(intptr_t)pipefd[0]) == 0;
	if (!c->relaying)
		close(pipefd[0]);
	cc_log_info("child_started", CC_LOG_INT("pid", pid), CC_LOG_STR("path", exe), CC_LOG_STR("match_id", a->match_id));
	return 0;
}

/* Waits for the child without blocking. Returns true (and *status) once it exited. */
static bool child_exited(struct child *c, int *status)
{
	if (c->pid <= 0)
		return true;
	pid_t r = waitpid(c->pid, status, WNOHANG);
	return r == c->pid || (r < 0 && errno == ECHILD);
}

/* After the child exited: joins the relay (its pipe is at EOF once the child and its own children are gone). */
static void child_reap(struct child *c)
{
	if (c->relaying)
		pthread_join(c->relay, NULL);
	c->relaying = false;
	c->pid = 0;
}

/* Sends SIGTERM, waits stop-grace-ms, then SIGKILL. Returns the wait status. */
static int child_stop(struct child *c, int sig)
{
	int status = 0;
	if (c->pid <= 0)
		return 0;
	(void)kill(c->pid, sig);
	int64_t end = cc_clock_ms() + cfg.stop_grace_ms;
	while (!child_exited(c, &status)) {
		if (cc_clock_ms() >= end) {
			cc_log_warn("child_killed", CC_LOG_INT("pid", c->pid), CC_LOG_INT("grace_ms", cfg.stop_grace_ms));
			(void)kill(c->pid, SIGKILL);
			(void)waitpid(c->pid, &status, 0);
			break;
		}
		struct timespec ts = { 0, 10 * 1000000 };
		nanosleep(&ts, NULL);
	}
	child_reap(c);
	return status;
}

/* Names a wait status for the log and /shutdown. */
static void classify(int status, char *reason, size_t cap, int *code, int *sig, bool *core)
{
	*code = -1;
	*sig = 0;
	*core = false;
	if (WIFEXITED(status)) {
		*code = WEXITSTATUS(status);
		switch (*code) {
		case 0: snprintf(reason, cap, "completed"); break;
		case 3: snprintf(reason, cap, "result_not_acknowledged"); break;
		case 4: snprintf(reason, cap, "stopped"); break;
		case 5: snprintf(reason, cap, "called_off"); break;
		case 2: snprintf(reason, cap, "bad_configuration"); break;
		default: snprintf(reason, cap, "exited_with_error"); break;
		}
	} else if (WIFSIGNALED(status)) {
		*sig = WTERMSIG(status);
		*core = WCOREDUMP(status);
		/* cc-api takes [a-z_] reasons: the number and the core are in the log line. */
		snprintf(reason, cap, "killed_by_signal");
	} else {
		snprintf(reason, cap, "unknown_exit");
	}
}

/*
 * One ready probe: GET /readyz over TCP 127.0.0.1:port (HTTP/1.0, a few
 * lines of socket code rather than libcurl, whose failures while the child
 * starts would each be a log line). True when the answer is 200.
 */
static bool probe_once(int port)
{
	bool ok = false;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	struct timeval tv = { 0, 200 * 1000 };
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	static const char req[] = "GET /readyz HTTP/1.0\r\n\r\n";
	char answer[64] = "";
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
	    send(fd, req, sizeof req - 1, MSG_NOSIGNAL) == (ssize_t)(sizeof req - 1)) {
		size_t have = 0;
		ssize_t n;
		while (have < sizeof answer - 1 && (n = recv(fd, answer + have, sizeof answer - 1 - have, 0)) > 0)
			have += (size_t)n;
		answer[have] = '\0';
		ok = strncmp(answer, "HTTP/1.0 200 ", 13) == 0 || strncmp(answer, "HTTP/1.1 200 ", 13) == 0;
	}
	close(fd);
	return ok;
}

/* Probes the child's /readyz until 200, the deadline, or its death. Returns true when ready. */
static bool wait_ready(struct child *c, int *status, bool *died)
{
	int64_t end = c->started_ms + cfg.ready_timeout_ms;
	*died = false;
	while (cc_clock_ms() < end && !cc_service_stopping(&service)) {
		if (child_exited(c, status)) {
			*died = true;
			return false;
		}
		if (probe_once((int)cfg.game_port)) {
			cc_log_info("child_ready", CC_LOG_INT("pid", c->pid), CC_LOG_INT("ms", cc_clock_ms() - c->started_ms));
			return true;
		}
		(void)cc_service_nap(&service, 2);
	}
	return false;
}

/* ---- one allocation ------------------------------------------------------------------------ */

static void register_state(const struct allocation *a, const char *state, char *out, size_t cap)
{
	char digest[128];
	/* image_digest comes from our flag: keep only safe bytes so the JSON stays valid. */
	size_t j = 0;
	for (size_t i = 0; cfg.image_digest[i] && j < sizeof digest - 1; i++) {
		char ch = cfg.image_digest[i];
		if (ch >= 0x21 && ch <= 0x7e && ch != '"' && ch != '\\')
			digest[j++] = ch;
	}
	digest[j] = '\0';
	(void)a;
	snprintf(out, cap, "{\"state\":\"%s\",\"protocol_version\":%d,\"image_digest\":\"%s\"}", state, PROTOCOL_VERSION,
		 digest);
}

static void shutdown_report(const struct allocation *a, const char *reason)
{
	char body[160];
	snprintf(body, sizeof body, "{\"reason\":\"%s\"}", reason);
	(void)api_post_retry(a, "shutdown", body, (int)cfg.register_attempts, "shutdown", NULL, 0);
}

/*
 * A stop (SIGTERM: the allocator stopping or dying, its children end with
 * it) before the child was registered: nothing was played and the match
 * waits for its server, so the allocation is left as it is (its file
 * stays, no /shutdown) for the restarted pool process to serve. Reporting
 * it would fail a match that a restart recovers (issue 19: an allocator
 * SIGKILLed mid-allocation and restarted completes the match).
 */
static bool leave_for_restart(struct allocation *a, struct child *c, const char *stage, bool *keep)
{
	if (c->pid > 0)
		(void)child_stop(c, SIGTERM);
	cc_log_warn("allocation_left", CC_LOG_STR("match_id", a->match_id), CC_LOG_STR("allocation_id", a->allocation_id),
		    CC_LOG_STR("stage", stage),
		    CC_LOG_STR("why", "stopped before the match was registered: the restarted pool process serves it"));
	*keep = true;
	return false;
}

/* The child has exited: in Agones mode its health pings stop now, before anything else is reported. */
static void child_gone(void)
{
	if (agones_mode)
		agones_health_stop(&health);
}

/*
 * Serves allocation a to its end. Writes the /shutdown reason into end
 * (cap bytes) and returns true when the allocation must be shut down; the
 * caller removes the allocation file first (after /shutdown frees the
 * server, a file there could already be the next allocation's). *keep
 * true: stopped before registration, leave file and allocation alone.
 */
static bool serve(struct allocation *a, const char *roster_path, char *end, size_t cap, bool *keep)
{
	struct child c = { 0 };
	char body[256], reason[64];
	int status = 0, code, sig;
	bool core, died = false;

	/* Agones mode: the address and port are the GameServer's (a host port may map to our --game-port). */
	if (strcmp(a->server_id, cfg.server_id) != 0 || (!agones_mode && a->port != cfg.game_port)) {
		cc_log_error("allocation_refused", CC_LOG_STR("match_id", a->match_id),
			     CC_LOG_STR("why", "the allocation names another server or port"));
		return false; /* not ours: its token cannot be used for our id either */
	}
	if (a->protocol_version != PROTOCOL_VERSION) {
		cc_log_error("allocation_refused", CC_LOG_STR("match_id", a->match_id),
			     CC_LOG_INT("protocol_version", a->protocol_version), CC_LOG_INT("ours", PROTOCOL_VERSION));
		snprintf(end, cap, "%s", "protocol_mismatch");
		return true;
	}
	char digest[CC_SHA256_HEX_LEN + 1] = "";
	if (!fetch_roster(a, roster_path, false, digest)) {
		if (cc_service_stopping(&service))
			return leave_for_restart(a, &c, "roster", keep);
		snprintf(end, cap, "%s", "roster_unavailable");
		return true;
	}
	if (child_start(&c, a, roster_path) != 0) {
		snprintf(end, cap, "%s", "child_start_failed");
		return true;
	}
	if (!wait_ready(&c, &status, &died)) {
		if (!died && cc_service_stopping(&service))
			return leave_for_restart(a, &c, "ready_probe", keep);
		if (!died) {
			cc_log_error("child_not_ready", CC_LOG_INT("pid", c.pid), CC_LOG_INT("timeout_ms", cfg.ready_timeout_ms));
			status = child_stop(&c, SIGTERM);
		} else {
			child_gone();
			child_reap(&c);
		}
		classify(status, reason, sizeof reason, &code, &sig, &core);
		cc_log_error("child_exited", CC_LOG_STR("match_id", a->match_id), CC_LOG_STR("reason", reason),
			     CC_LOG_INT("code", code), CC_LOG_INT("signal", sig), CC_LOG_BOOL("core", core),
			     CC_LOG_STR("stage", "before_ready"));
		snprintf(end, cap, "%s", died ? reason : "not_ready");
		return true;
	}
	register_state(a, "process_ready", body, sizeof body);
	char err_code[48];
	int st = api_post_retry(a, "register", body, (int)cfg.register_attempts, "register_process_ready", err_code,
				sizeof err_code);
	if (st == 409 && strcmp(err_code, "invalid_state") == 0) {
		/*
		 * The match is already past registration: we were restarted (a
		 * crash, a SIGKILL) and found the allocation file of a match that
		 * another child of ours was serving, or that is over. That game is
		 * lost with its server: this child must not play it (nobody is
		 * connected to it; an empty match played out would be rated). Kill
		 * it now and report the server lost, so the match fails as it does
		 * for a killed game server.
		 */
		cc_log_error("match_past_registration", CC_LOG_STR("match_id", a->match_id),
			     CC_LOG_STR("allocation_id", a->allocation_id), CC_LOG_INT("child_pid", c.pid),
			     CC_LOG_STR("action", "killing the child, reporting the server lost"));
		status = child_stop(&c, SIGKILL);
		snprintf(end, cap, "%s", "server_lost");
		return true;
	}
	if (!http_ok(st) && cc_service_stopping(&service))
		return leave_for_restart(a, &c, "process_ready", keep);
	if (!http_ok(st)) {
		cc_log_error("register_failed", CC_LOG_STR("state", "process_ready"), CC_LOG_STR("action", "killing the child"));
		status = child_stop(&c, SIGKILL);
		snprintf(end, cap, "%s", "register_failed");
		return true;
	}
	register_state(a, "assignment_ready", body, sizeof body);
	if (!http_ok(api_post_retry(a, "register", body, (int)cfg.register_attempts, "register_assignment_ready", NULL, 0)))
		cc_log_error("register_failed", CC_LOG_STR("state", "assignment_ready"), CC_LOG_STR("action", "the child keeps running"));
	/*
	 * Serve until the child ends or we are asked to stop (then the child is
	 * asked too). Every --roster-poll-ms the roster is fetched again: a
	 * newer one (casual backfill seated a player: SPEC 9) is verified,
	 * written over the child's file and the child told with SIGHUP.
	 */
	int64_t next_poll = cc_clock_ms() + cfg.roster_poll_ms;
	while (!child_exited(&c, &status)) {
		if (cc_service_stopping(&service)) {
			cc_log_info("forwarding_stop", CC_LOG_INT("pid", c.pid));
			status = child_stop(&c, SIGTERM);
			break;
		}
		if (cfg.roster_poll_ms > 0 && cc_clock_ms() >= next_poll) {
			if (fetch_roster(a, roster_path, true, digest)) {
				cc_log_info("roster_reloaded", CC_LOG_STR("match_id", a->match_id), CC_LOG_STR("digest", digest),
					    CC_LOG_INT("pid", c.pid));
				(void)kill(c.pid, SIGHUP);
			}
			next_poll = cc_clock_ms() + cfg.roster_poll_ms;
		}
		(void)cc_service_nap(&service, 20);
	}
	child_gone();
	child_reap(&c);
	classify(status, reason, sizeof reason, &code, &sig, &core);
	cc_log_emit(code == 0 ? CC_LOG_INFO : CC_LOG_ERROR, "child_exited",
		    (struct cc_log_field[]){ CC_LOG_STR("match_id", a->match_id), CC_LOG_STR("reason", reason),
					     CC_LOG_INT("code", code), CC_LOG_INT("signal", sig), CC_LOG_BOOL("core", core) },
		    5);
	snprintf(end, cap, "%s", reason);
	return true;
}

/*
 * The allocator's wake-up FIFO beside the allocation file (INTERFACES.md):
 * opened read-write so it never reports an end of file; -1 without one
 * (an allocator of the older layout, or a hand-made file in tests).
 */
static int open_wake_fifo(void)
{
	char path[PATH_MAX + 8];
	struct stat sb;
	const char *slash = strrchr(cfg.allocation_file, '/');
	int w = slash ? snprintf(path, sizeof path, "%.*s/wake", (int)(slash - cfg.allocation_file), cfg.allocation_file)
		      : snprintf(path, sizeof path, "wake");
	if (w < 0 || (size_t)w >= sizeof path || lstat(path, &sb) != 0 || !S_ISFIFO(sb.st_mode))
		return -1;
	return open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
}

/* Until the allocator's wake-up (drained) or --poll-interval-ms, whichever comes first. */
static void wait_for_allocation(int wake)
{
	if (wake < 0) {
		(void)cc_service_nap(&service, cfg.poll_interval_ms);
		return;
	}
	struct pollfd p = { .fd = wake, .events = POLLIN };
	if (poll(&p, 1, (int)cfg.poll_interval_ms) > 0) {
		char buf[64];
		while (read(wake, buf, sizeof buf) > 0) {
		}
	}
}

/*
 * Removes the allocation file unless it now names another allocation than
 * done_id (NULL: remove it whatever it says). cc-api can release an
 * allocation before our child exits (a ranked no-show called off, a match
 * failed by cc-maintenance); the allocator may then hand this server the
 * next match, and its file, written meanwhile, must not be deleted.
 */
static void remove_allocation_file(const char *done_id)
{
	char *text = NULL;
	size_t len = 0;
	struct cc_file_error ferr;
	if (done_id && cc_file_read(cfg.allocation_file, ALLOCATION_FILE_MAX, CC_FILE_REGULAR_ONLY | CC_FILE_SECRET, &text,
				    &len, &ferr) == 0) {
		struct allocation now;
		char why[256];
		bool other = allocation_parse(text, len, &now, why, sizeof why) == 0 && strcmp(now.allocation_id, done_id) != 0;
		if (other)
			cc_log_info("allocation_file_kept", CC_LOG_STR("allocation_id", now.allocation_id),
				    CC_LOG_STR("done", done_id), CC_LOG_STR("why", "the file already names the next allocation"));
		allocation_release(&now);
		explicit_bzero(text, len);
		free(text);
		if (other)
			return;
	}
	if (unlink(cfg.allocation_file) != 0 && errno != ENOENT)
		cc_log_error("allocation_unlink_failed", CC_LOG_STR("error", strerror(errno)));
}

/* Waits for and serves allocations until stopped. */
static void *supervisor_loop(void *arg)
{
	(void)arg;
	char roster_path[PATH_MAX + 256], dir[PATH_MAX];
	if (cfg.work_dir) {
		snprintf(dir, sizeof dir, "%s", cfg.work_dir);
	} else {
		snprintf(dir, sizeof dir, "%s", cfg.allocation_file);
		char *slash = strrchr(dir, '/');
		if (slash)
			*slash = '\0';
		else
			snprintf(dir, sizeof dir, ".");
	}
	snprintf(roster_path, sizeof roster_path, "%s/roster-%s.json", dir, cfg.server_id);
	int wake = open_wake_fifo();
	cc_log_info("waiting", CC_LOG_STR("allocation_file", cfg.allocation_file), CC_LOG_BOOL("wake_fifo", wake >= 0));
	while (!cc_service_stopping(&service)) {
		char *text = NULL;
		size_t len = 0;
		struct cc_file_error ferr;
		int rc = cc_file_read(cfg.allocation_file, ALLOCATION_FILE_MAX, CC_FILE_REGULAR_ONLY | CC_FILE_SECRET, &text,
				      &len, &ferr);
		if (rc != 0) {
			if (!(rc == CC_EIO && ferr.failure == CC_FILE_OPEN && ferr.errnum == ENOENT))
				cc_log_warn("allocation_unreadable", CC_LOG_STR("path", cfg.allocation_file),
					    CC_LOG_STR("error", cc_errname(rc)));
			wait_for_allocation(wake);
			continue;
		}
		struct allocation a;
		char why[256], end[64] = "";
		bool shut = false, keep = false;
		rc = allocation_parse(text, len, &a, why, sizeof why);
		explicit_bzero(text, len);
		free(text);
		if (rc != 0) {
			cc_log_error("allocation_refused", CC_LOG_STR("path", cfg.allocation_file), CC_LOG_STR("why", why));
		} else {
			cc_log_info("allocated", CC_LOG_STR("match_id", a.match_id), CC_LOG_STR("allocation_id", a.allocation_id),
				    CC_LOG_STR("playlist", a.playlist));
			shut = serve(&a, roster_path, end, sizeof end, &keep);
		}
		if (keep) {
			allocation_release(&a);
			continue; /* stopping: the loop ends; the file stays for the next pool process */
		}
		/* Done with it either way (a refused file would be refused again for ever), and before
		 * /shutdown: that frees the server, and a file removed after it could be the next allocation's. */
		(void)unlink(roster_path);
		remove_allocation_file(rc == 0 ? a.allocation_id : NULL);
		if (shut)
			shutdown_report(&a, end);
		allocation_release(&a);
		cc_log_info("waiting", CC_LOG_STR("allocation_file", cfg.allocation_file));
	}
	if (wake >= 0)
		close(wake);
	return NULL;
}

/* ---- Agones mode ------------------------------------------------------------------------ */

/* POST /route to the SDK gateway, up to --register-attempts times (backoff as registration). True on 200. */
static bool sdk_post_retry(const char *route)
{
	int64_t backoff = 200;
	for (int i = 1; i <= (int)cfg.register_attempts; i++) {
		int st = agones_sdk_post(&sdk, route);
		if (st == 200) {
			cc_log_info("sdk_ok", CC_LOG_STR("call", route), CC_LOG_INT("attempt", i));
			return true;
		}
		cc_log_warn("sdk_failed", CC_LOG_STR("call", route), CC_LOG_INT("attempt", i),
			    CC_LOG_INT("of", cfg.register_attempts), CC_LOG_INT("status", st < 0 ? 0 : st),
			    CC_LOG_STR("error", st < 0 ? cc_errname(st) : ""));
		if (i < cfg.register_attempts) {
			/* Not cc_service_nap: /shutdown must still be tried while we stop. */
			struct timespec ts = { backoff / 1000, (backoff % 1000) * 1000000L };
			nanosleep(&ts, NULL);
		}
		backoff = backoff * 2 > 3000 ? 3000 : backoff * 2;
	}
	cc_log_error("sdk_call_failed", CC_LOG_STR("call", route), CC_LOG_INT("attempts", cfg.register_attempts));
	return false;
}

/* Ends Agones mode: health pings stop, the SDK's /shutdown; exit status 1 when fatal names why. */
static void agones_finish(const char *fatal)
{
	agones_health_stop(&health);
	bool shut = sdk_post_retry("shutdown");
	cc_log_emit(shut ? CC_LOG_INFO : CC_LOG_ERROR, "sdk_shutdown",
		    (struct cc_log_field[]){ CC_LOG_BOOL("ok", shut), CC_LOG_STR("server_id", agones_server_id) }, 2);
	if (fatal)
		cc_service_fail(&service, fatal);
}

/*
 * Step A: GET /gameserver until it is assigned, within --sdk-start-timeout-ms.
 * True with *gs filled; false (logged) on the deadline or a stop.
 */
static bool sdk_wait_assigned(struct agones_gameserver *gs)
{
	int64_t start = cc_clock_ms(), end = start + cfg.sdk_start_timeout_ms, backoff = 50;
	int polls = 0;
	char why[512] = "", last[512] = "";
	for (;;) {
		polls++;
		int rc = agones_sdk_get_gameserver(&sdk, gs, why, sizeof why);
		if (rc == 0 && agones_gameserver_assigned(gs)) {
			cc_log_info("sdk_assigned", CC_LOG_STR("server_id", gs->name), CC_LOG_STR("address", gs->address),
				    CC_LOG_INT("port", gs->port), CC_LOG_STR("state", gs->state), CC_LOG_INT("polls", polls),
				    CC_LOG_INT("ms", cc_clock_ms() - start));
			return true;
		}
		if (rc == 0) {
			snprintf(why, sizeof why, "GameServer without %s yet (state \"%s\")",
				 !gs->name[0] ? "a name" : !gs->address[0] ? "an address" : "ports", gs->state);
			agones_gameserver_release(gs);
		}
		if (strcmp(why, last) != 0) /* one line per kind of wait, not per poll */
			cc_log_info("sdk_waiting", CC_LOG_STR("why", why), CC_LOG_INT("polls", polls));
		snprintf(last, sizeof last, "%s", why);
		if (cc_clock_ms() + backoff > end) {
			cc_log_error("sdk_not_assigned", CC_LOG_INT("timeout_ms", cfg.sdk_start_timeout_ms),
				     CC_LOG_INT("polls", polls), CC_LOG_STR("last", why),
				     CC_LOG_STR("hint", "is the Agones SDK sidecar running on AGONES_SDK_HTTP_PORT?"));
			fprintf(stderr, "cc-supervisor: the Agones SDK gateway on %s assigned no address and ports within "
					"%lld ms (%d polls; last: %s)\n",
				sdk.base, (long long)cfg.sdk_start_timeout_ms, polls, why);
			return false;
		}
		if (!cc_service_nap(&service, backoff))
			return false;
		backoff = backoff * 2 > 1000 ? 1000 : backoff * 2;
	}
}

/* Step D: the allocation from gs's annotations and status. Returns 0, or CC_EINVAL with why (never the token). */
static int allocation_from_gameserver(const struct agones_gameserver *gs, struct allocation *out, char *why, size_t whylen)
{
	memset(out, 0, sizeof *out);
	const char *missing = !gs->match_id	    ? CC_AGONES_ANN_MATCH_ID
			      : !gs->allocation_id  ? CC_AGONES_ANN_ALLOCATION_ID
			      : !gs->workload_token ? CC_AGONES_ANN_WORKLOAD_TOKEN
			      : !gs->playlist	    ? CC_AGONES_ANN_PLAYLIST
			      : !gs->arena	    ? CC_AGONES_ANN_ARENA
			      : !gs->protocol	    ? CC_AGONES_ANN_PROTOCOL
						    : NULL;
	if (missing) {
		snprintf(why, whylen, "annotation %s: missing or empty", missing);
		return CC_EINVAL;
	}
	if (!cc_uuid_valid(gs->match_id) || !cc_uuid_valid(gs->allocation_id)) {
		snprintf(why, whylen, "annotation %s: not a UUID",
			 cc_uuid_valid(gs->match_id) ? CC_AGONES_ANN_ALLOCATION_ID : CC_AGONES_ANN_MATCH_ID);
		return CC_EINVAL;
	}
	if (strlen(gs->playlist) >= sizeof out->playlist || strlen(gs->arena) >= sizeof out->arena ||
	    strlen(gs->address) >= sizeof out->address || strlen(gs->workload_token) > 4096) {
		snprintf(why, whylen, "annotation %s: too long",
			 strlen(gs->playlist) >= sizeof out->playlist ? CC_AGONES_ANN_PLAYLIST
			 : strlen(gs->arena) >= sizeof out->arena     ? CC_AGONES_ANN_ARENA
			 : strlen(gs->workload_token) > 4096	      ? CC_AGONES_ANN_WORKLOAD_TOKEN
								      : "status.address");
		return CC_EINVAL;
	}
	long proto = 0;
	for (const char *c = gs->protocol; *c; c++) {
		if (*c < '0' || *c > '9' || proto > 65535) {
			proto = -1;
			break;
		}
		proto = proto * 10 + (*c - '0');
	}
	if (proto < 1 || proto > 65535) {
		snprintf(why, whylen, "annotation %s: not a protocol version (1..65535)", CC_AGONES_ANN_PROTOCOL);
		return CC_EINVAL;
	}
	snprintf(out->match_id, sizeof out->match_id, "%s", gs->match_id);
	snprintf(out->allocation_id, sizeof out->allocation_id, "%s", gs->allocation_id);
	snprintf(out->server_id, sizeof out->server_id, "%s", gs->name);
	snprintf(out->address, sizeof out->address, "%s", gs->address);
	snprintf(out->playlist, sizeof out->playlist, "%s", gs->playlist);
	snprintf(out->arena, sizeof out->arena, "%s", gs->arena);
	out->port = gs->port;
	out->protocol_version = (int)proto;
	out->workload_token = strdup(gs->workload_token);
	return out->workload_token ? 0 : CC_ENOMEM;
}

/* Step C: polls until Allocated. True with *gs the allocated GameServer; false (logged) when it never will be. */
static bool sdk_wait_allocated(struct agones_gameserver *gs)
{
	char why[512];
	int failures = 0;
	while (!cc_service_stopping(&service)) {
		int rc = agones_sdk_get_gameserver(&sdk, gs, why, sizeof why);
		if (rc == 0) {
			failures = 0;
			if (strcmp(gs->state, "Allocated") == 0)
				return true;
			if (gs->deleting || strcmp(gs->state, "Shutdown") == 0 || strcmp(gs->state, "Unhealthy") == 0 ||
			    strcmp(gs->state, "Error") == 0) {
				cc_log_error("sdk_gameserver_ended", CC_LOG_STR("state", gs->state),
					     CC_LOG_BOOL("deleting", gs->deleting),
					     CC_LOG_STR("why", "the GameServer ended before it was allocated"));
				agones_gameserver_release(gs);
				return false;
			}
			agones_gameserver_release(gs);
		} else if (++failures == 1 || failures % 20 == 0) {
			cc_log_warn("sdk_poll_failed", CC_LOG_STR("why", why), CC_LOG_INT("failures", failures));
		}
		(void)cc_service_nap(&service, cfg.sdk_poll_interval_ms);
	}
	return false;
}

static void *agones_loop(void *arg)
{
	(void)arg;
	struct agones_gameserver gs;
	struct allocation a;
	char roster_path[PATH_MAX + 256], why[512], end[64] = "";
	const char *tmp = getenv("TMPDIR");
	memset(&a, 0, sizeof a);
	cc_log_info("agones_mode", CC_LOG_STR("sdk", sdk.base), CC_LOG_INT("game_port", cfg.game_port));
	if (!sdk_wait_assigned(&gs)) {
		if (!cc_service_stopping(&service))
			cc_service_fail(&service, "the Agones SDK gateway assigned no address and ports");
		return NULL;
	}
	snprintf(agones_server_id, sizeof agones_server_id, "%s", gs.name);
	if (!cc_server_id_valid(gs.name) || (cfg.server_id && strcmp(cfg.server_id, gs.name) != 0)) {
		cc_log_error("sdk_gameserver_refused", CC_LOG_STR("name", gs.name),
			     CC_LOG_STR("why", cc_server_id_valid(gs.name) ? "--server-id names another server"
									     : "not a server id (1..128 bytes of [A-Za-z0-9._-])"));
		agones_gameserver_release(&gs);
		agones_finish("the GameServer's name cannot be this server's id");
		return NULL;
	}
	cfg.server_id = agones_server_id; /* serve() and the cc-api calls use it (the config string is freed at exit, not this) */
	bool restarted = strcmp(gs.state, "Allocated") == 0;
	agones_gameserver_release(&gs);
	if (restarted) {
		cc_log_warn("sdk_already_allocated", CC_LOG_STR("server_id", agones_server_id),
			    CC_LOG_STR("why", "restarted in an allocated pod: no /ready (it would return the server to the fleet)"));
	} else if (!sdk_post_retry("ready")) {
		agones_finish("the Agones SDK gateway refused /ready");
		return NULL;
	}
	if (agones_health_start(&health, &sdk, cfg.health_interval_ms) != 0) {
		agones_finish("cannot start the health pings");
		return NULL;
	}
	cc_log_info("waiting", CC_LOG_STR("server_id", agones_server_id), CC_LOG_STR("for", "Allocated"));
	if (!sdk_wait_allocated(&gs)) {
		agones_finish(cc_service_stopping(&service) ? NULL : "the GameServer ended before it was allocated");
		return NULL;
	}
	int rc = allocation_from_gameserver(&gs, &a, why, sizeof why);
	agones_gameserver_release(&gs);
	if (rc != 0) {
		cc_log_error("allocation_refused", CC_LOG_STR("server_id", agones_server_id), CC_LOG_STR("why", why));
		allocation_release(&a);
		agones_finish("the allocation annotations are unusable");
		return NULL;
	}
	cc_log_info("allocated", CC_LOG_STR("match_id", a.match_id), CC_LOG_STR("allocation_id", a.allocation_id),
		    CC_LOG_STR("playlist", a.playlist), CC_LOG_STR("address", a.address), CC_LOG_INT("port", a.port));
	snprintf(roster_path, sizeof roster_path, "%s/roster-%s.json",
		 cfg.work_dir ? cfg.work_dir : tmp && *tmp ? tmp : "/tmp", agones_server_id);
	bool keep = false;
	bool shut = serve(&a, roster_path, end, sizeof end, &keep);
	agones_health_stop(&health);
	(void)unlink(roster_path);
	if (keep) /* stopped before registration: nobody restarts this pod's allocation */
		snprintf(end, sizeof end, "%s", "stopped");
	if (shut || keep)
		shutdown_report(&a, end);
	allocation_release(&a);
	agones_finish(NULL);
	return NULL;
}

int main(int argc, char **argv)
{
	int status = 1;
	const char *agones = getenv("AGONES_SDK_HTTP_PORT");
	cc_service_load_or_exit(&service, &supervisor_spec, argc, argv, &cfg, NULL);
	agones_mode = agones != NULL;
	if (agones_mode && agones_sdk_init(&sdk, agones, (long)cfg.sdk_timeout_ms) != 0) {
		fprintf(stderr, "cc-supervisor: AGONES_SDK_HTTP_PORT: '%.16s' is not a port (1..65535)\n"
				"cc-supervisor: see --help\n", agones);
		status = 2;
		goto out;
	}
	if (!agones_mode && (!cfg.server_id || !cfg.allocation_file)) {
		fprintf(stderr, "cc-supervisor: --%s is required in direct mode (AGONES_SDK_HTTP_PORT unset)\n"
				"cc-supervisor: see --help\n", !cfg.server_id ? "server-id" : "allocation-file");
		status = 2;
		goto out;
	}
	if (cfg.server_id && !cc_server_id_valid(cfg.server_id)) {
		fprintf(stderr, "cc-supervisor: --server-id: 1..128 bytes of [A-Za-z0-9._-]\ncc-supervisor: see --help\n");
		status = 2;
		goto out;
	}
	if (cc_crypto_init() != 0) {
		fprintf(stderr, "cc-supervisor: libsodium did not initialise\n");
		goto out;
	}
	cc_service_start(&service);
	char *given_id = cfg.server_id; /* Agones mode points cfg.server_id at the GameServer's name */
	status = cc_service_run(&service, agones_mode ? agones_loop : supervisor_loop, NULL);
	cfg.server_id = given_id;
out:
	cc_service_release(&service);
	return status;
}
