/*
 * cc-api: the player-facing REST API and the operator routes.
 *
 * main() reads the configuration (its own rows plus the service skeleton's
 * database, pool, Redis, admin and log rows: sys/service.h), opens the
 * database pool, starts the admin server (/metrics, /healthz, /readyz) and
 * the player API server, then lets the skeleton wait for SIGINT/SIGTERM
 * and shuts down in reverse order.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sys/admin.h"
#include "api.h"
#include "sys/charset.h"
#include "sys/config.h"
#include "sys/crypto.h"
#include "sys/http_server.h"
#include "sys/log.h"
#include "sys/pg.h"
#include "sys/service.h"
#include "store/playlists.h"
#include "store/tier_bands.h"
#include "game/glicko2.h"
#include "sys/banned.h"

#define OPT(field) offsetof(struct api_config, field)

static const struct cc_config_option api_options[] = {
	{ .name = "listen", .type = CC_CFG_STRING, .default_value = "127.0.0.1",
	  .help = "address the player API binds (\"::\" for all)", .offset = OPT(listen) },
	{ .name = "port", .type = CC_CFG_INT, .default_value = "8080", .min = 0, .max = 65535,
	  .help = "player API port (0 = ephemeral, logged at start)", .offset = OPT(port) },
	{ .name = "max-body-bytes", .type = CC_CFG_INT, .default_value = "65536", .min = 1024, .max = 1048576,
	  .help = "largest request body accepted (413 beyond)", .offset = OPT(max_body_bytes) },
	{ .name = "max-connections", .type = CC_CFG_INT, .default_value = "512", .min = 1, .max = 10000,
	  .help = "concurrent HTTP connections (one thread each)", .offset = OPT(max_connections) },
	{ .name = "max-connections-per-address", .type = CC_CFG_INT, .default_value = "32", .min = 1, .max = 10000,
	  .help = "concurrent HTTP connections from one client address (429 too_many_connections beyond)",
	  .offset = OPT(max_per_address) },
	{ .name = "http-header-timeout-ms", .type = CC_CFG_INT, .default_value = "10000", .min = 100, .max = 600000,
	  .help = "a request's line and headers must arrive within this of the connection (or the last "
		  "answer), however steadily they trickle (408 beyond)",
	  .offset = OPT(header_timeout_ms) },
	{ .name = "http-body-timeout-ms", .type = CC_CFG_INT, .default_value = "20000", .min = 100, .max = 600000,
	  .help = "a request body must arrive within this of its headers (408 and closed beyond)",
	  .offset = OPT(body_timeout_ms) },
	{ .name = "http-keep-alive", .type = CC_CFG_BOOL, .default_value = "true",
	  .help = "keep a connection open for further requests; each one passes the same head check, "
		  "header and body deadlines and connection caps as the first (a request pipelined before "
		  "the previous answer ends the connection unserved); an idle kept connection closes at "
		  "--http-header-timeout-ms. Behind a proxy the caps count the proxy's address and its "
		  "pooled connections: size --max-connections-per-address for them, and keep the proxy's "
		  "idle timeout below --http-header-timeout-ms. false: every answer closes its connection",
	  .offset = OPT(keep_alive) },
	{ .name = "rate-login-per-player", .type = CC_CFG_INT, .default_value = "10", .min = 0, .max = 1000000,
	  .help = "logins a minute per player, also the burst (429 rate_limited beyond; 0 = no limit)",
	  .offset = OPT(rate_per_player[API_RL_LOGIN]) },
	{ .name = "rate-login-per-address", .type = CC_CFG_INT, .default_value = "300", .min = 0, .max = 1000000,
	  .help = "logins a minute per client address, also the burst (0 = no limit)",
	  .offset = OPT(rate_per_address[API_RL_LOGIN]) },
	{ .name = "rate-probe-per-player", .type = CC_CFG_INT, .default_value = "30", .min = 0, .max = 1000000,
	  .help = "probe challenges a minute per player, also the burst (429 rate_limited beyond; 0 = no limit)",
	  .offset = OPT(rate_per_player[API_RL_PROBE]) },
	{ .name = "rate-probe-per-address", .type = CC_CFG_INT, .default_value = "600", .min = 0, .max = 1000000,
	  .help = "probe challenges a minute per client address, also the burst (0 = no limit)",
	  .offset = OPT(rate_per_address[API_RL_PROBE]) },
	{ .name = "rate-enqueue-per-player", .type = CC_CFG_INT, .default_value = "30", .min = 0, .max = 1000000,
	  .help = "enqueues a minute per player, also the burst (429 rate_limited beyond; 0 = no limit)",
	  .offset = OPT(rate_per_player[API_RL_ENQUEUE]) },
	{ .name = "rate-enqueue-per-address", .type = CC_CFG_INT, .default_value = "600", .min = 0, .max = 1000000,
	  .help = "enqueues a minute per client address, also the burst (0 = no limit)",
	  .offset = OPT(rate_per_address[API_RL_ENQUEUE]) },
	{ .name = "rate-response-per-player", .type = CC_CFG_INT, .default_value = "60", .min = 0, .max = 1000000,
	  .help = "proposal responses a minute per player, also the burst (429 rate_limited beyond; 0 = no limit)",
	  .offset = OPT(rate_per_player[API_RL_RESPONSE]) },
	{ .name = "rate-response-per-address", .type = CC_CFG_INT, .default_value = "1200", .min = 0, .max = 1000000,
	  .help = "proposal responses a minute per client address, also the burst (0 = no limit)",
	  .offset = OPT(rate_per_address[API_RL_RESPONSE]) },
	{ .name = "operator-token", .type = CC_CFG_STRING, .secret = true,
	  .help = "bearer secret of the operator routes /v1/admin/*: 16-128 characters of "
		  "A-Za-z0-9-._~+/= (unset: they answer 503)",
	  .offset = OPT(operator_token) },
	{ .name = "regions", .type = CC_CFG_STRING, .default_value = "local",
	  .help = "comma-separated regions this server probes (a-z, 0-9, '-'; at most 16)", .offset = OPT(regions) },
	{ .name = "probe-urls", .type = CC_CFG_STRING, .default_value = "",
	  .help = "where clients answer each region's probe: region=URL,... with URL the http(s) base URL of the "
		  "cc-api serving that region (the challenge's answer_url is URL/v1/probes/REGION/answer); a region "
		  "not listed is answered at this server (answer_url /v1/probes/REGION/answer)",
	  .offset = OPT(probe_urls) },
	{ .name = "min-protocol-version", .type = CC_CFG_INT, .default_value = "1", .min = 1, .max = 2147483647,
	  .help = "clients below this game protocol get 426 client_outdated", .offset = OPT(min_protocol_version) },
	{ .name = "session-ttl-seconds", .type = CC_CFG_INT, .default_value = "86400", .min = 60, .max = 2592000,
	  .help = "lifetime of a session token", .offset = OPT(session_ttl_seconds) },
	{ .name = "ticket-ttl-seconds", .type = CC_CFG_INT, .default_value = "30", .min = 5, .max = 3600,
	  .help = "a queue ticket expires this long after its last heartbeat", .offset = OPT(ticket_ttl_seconds) },
	{ .name = "probe-ttl-seconds", .type = CC_CFG_INT, .default_value = "10", .min = 1, .max = 300,
	  .help = "a probe challenge must be answered within this", .offset = OPT(probe_ttl_seconds) },
	{ .name = "probe-freshness-seconds", .type = CC_CFG_INT, .default_value = "600", .min = 10, .max = 86400,
	  .help = "RTT evidence older than this does not let a player queue", .offset = OPT(probe_freshness_seconds) },
	{ .name = "steam-api-url", .type = CC_CFG_STRING, .default_value = "https://partner.steam-api.com",
	  .help = "base URL of Steam's Web API", .offset = OPT(steam_api_url) },
	{ .name = "steam-app-id", .type = CC_CFG_INT, .default_value = "0", .min = 0, .max = 4294967295.0,
	  .help = "Steam App ID (0: Steam login answers 503 not_configured)", .offset = OPT(steam_app_id) },
	{ .name = "steam-publisher-key", .type = CC_CFG_STRING, .secret = true,
	  .help = "Steam publisher Web API key (unset: Steam login answers 503)", .offset = OPT(steam_publisher_key) },
	{ .name = "steam-timeout-ms", .type = CC_CFG_INT, .default_value = "3000", .min = 100, .max = 60000,
	  .help = "deadline of one Steam verification", .offset = OPT(steam_timeout_ms) },
	{ .name = "steam-reject-vac-banned", .type = CC_CFG_BOOL, .default_value = "true",
	  .help = "refuse VAC-banned accounts with 403", .offset = OPT(steam_reject_vac_banned) },
	{ .name = "steam-reject-publisher-banned", .type = CC_CFG_BOOL, .default_value = "true",
	  .help = "refuse publisher-banned accounts with 403", .offset = OPT(steam_reject_publisher_banned) },
	{ .name = "workload-secret-file", .type = CC_CFG_STRING,
	  .help = "key set file verifying the game servers' workload tokens, as cc-allocator's (a JSON map "
		  "id -> base64 secret, or one raw secret); unset: the /v1/servers routes answer 503",
	  .offset = OPT(workload_secret_file) },
	{ .name = "join-keys-file", .type = CC_CFG_STRING,
	  .help = "key set file signing join tokens, as cc-allocator's: cc-api signs a backfilled player's "
		  "(casual backfill, SPEC 9); unset: no slot is ever backfilled",
	  .offset = OPT(join_keys_file) },
	{ .name = "join-key-id", .type = CC_CFG_STRING, .default_value = "",
	  .help = "the active key of --join-keys-file, as cc-allocator's --join-key-id", .offset = OPT(join_key_id) },
	{ .name = "join-token-ttl-seconds", .type = CC_CFG_INT, .default_value = "900", .min = 30, .max = 86400,
	  .help = "lifetime of a backfilled player's join token", .offset = OPT(join_token_ttl_seconds) },
	{ .name = "backfill-window-seconds", .type = CC_CFG_INT, .default_value = "10", .min = 1, .max = 3600,
	  .help = "how long a backfill offer waits for its player's answer (SPEC 9: 10 s)",
	  .offset = OPT(backfill_window_seconds) },
	{ .name = "rating-tau", .type = CC_CFG_DOUBLE, .default_value = CC_STRINGIFY(CC_GLICKO2_DEFAULT_TAU),
	  .min = CC_GLICKO2_TAU_MIN, .max = CC_GLICKO2_TAU_MAX,
	  .help = "Glicko-2 system constant tau of the rating update (SPEC 9)", .offset = OPT(rating_tau) },
	{ .name = "events", .type = CC_CFG_BOOL, .default_value = "true",
	  .help = "serve the WebSocket event stream GET /v1/events (false: 503 events_disabled, clients poll)",
	  .offset = OPT(events) },
	{ .name = "events-max-connections", .type = CC_CFG_INT, .default_value = "4096", .min = 1, .max = 100000,
	  .help = "event streams this replica holds (each also holds one of --max-connections)",
	  .offset = OPT(events_max_connections) },
	{ .name = "events-ping-interval-ms", .type = CC_CFG_INT, .default_value = "20000", .min = 100, .max = 600000,
	  .help = "a ping to every event stream this often", .offset = OPT(events_ping_interval_ms) },
	{ .name = "events-pong-timeout-ms", .type = CC_CFG_INT, .default_value = "20000", .min = 100, .max = 600000,
	  .help = "a stream that answers no ping within this is dropped", .offset = OPT(events_pong_timeout_ms) },
	{ .name = "events-session-check-ms", .type = CC_CFG_INT, .default_value = "30000", .min = 100, .max = 3600000,
	  .help = "re-check every stream's session this often (revoked, expired, banned: closed 1008)",
	  .offset = OPT(events_session_check_ms) },
};

/* cc-api's own rows plus the shared ones it names (sys/service.h). */
const struct cc_service_spec api_service_spec = {
	.program = "cc-api",
	.summary = "Cosmic Clash player REST API and operator routes.",
	.options = api_options,
	.n_options = CC_ARRAY_LEN(api_options),
	.shared = CC_SERVICE_DATABASE | CC_SERVICE_DB_TIMEOUT | CC_SERVICE_DB_POOL | CC_SERVICE_REDIS | CC_SERVICE_ADMIN |
		  CC_SERVICE_LOG,
	.shared_offset = offsetof(struct api_config, svc),
	.admin_port = "9180",
};

/* The skeleton: options, signals, stop (the tier-band loader may fail it). */
static struct cc_service service;

/*
 * Parses --regions into api->regions and the PostgreSQL array literal used
 * in queries. Names are [a-z0-9-]{1,32}, so the literal needs no quoting.
 */
static int parse_regions(struct api *api, const char *text)
{
	size_t used = 0;
	const char *p = text;
	api->n_regions = 0;
	api->regions_pg_array[used++] = '{';
	while (*p) {
		size_t n = strcspn(p, ",");
		if (n == 0 || n > API_REGION_MAX || api->n_regions == API_MAX_REGIONS)
			return CC_EINVAL;
		if (!cc_charset_all(p, n, CC_CHARSET_LOWER | CC_CHARSET_DIGIT, "-"))
			return CC_EINVAL;
		memcpy(api->regions[api->n_regions], p, n);
		api->regions[api->n_regions][n] = '\0';
		for (size_t i = 0; i < api->n_regions; i++)
			if (strcmp(api->regions[i], api->regions[api->n_regions]) == 0)
				return CC_EINVAL;
		used += (size_t)snprintf(api->regions_pg_array + used, sizeof api->regions_pg_array - used, "%s%s",
					 api->n_regions ? "," : "", api->regions[api->n_regions]);
		api->n_regions++;
		p += n;
		if (*p == ',' && *++p == '\0')
			return CC_EINVAL;
	}
	api->regions_pg_array[used++] = '}';
	api->regions_pg_array[used] = '\0';
	return api->n_regions ? 0 : CC_EINVAL;
}

/*
 * Parses --probe-urls, "region=URL,...", into api->probe_urls (after
 * parse_regions). Each region must be one of --regions, at most once; URL is
 * http:// or https://, a host of [A-Za-z0-9.-], an optional :port and an
 * optional path of [A-Za-z0-9._~/-], at most API_PROBE_URL_MAX bytes, no
 * query or fragment; one trailing '/' is dropped. Writes a message into err.
 */
static int parse_probe_urls(struct api *api, const char *text, char *err, size_t errlen)
{
	const char *p = text ? text : "";
	for (size_t i = 0; i < api->n_regions; i++)
		api->probe_urls[i][0] = '\0';
	while (*p) {
		size_t n = strcspn(p, ","), r = strcspn(p, "=,"), i;
		char region[API_REGION_MAX + 1];
		const char *url = p + r + 1, *host, *rest;
		size_t ulen = n - r - 1, hlen, tail;
		if (r == n || r == 0 || r > API_REGION_MAX) {
			snprintf(err, errlen, "entry %.*s is not region=URL", (int)(n > 64 ? 64 : n), p);
			return CC_EINVAL;
		}
		memcpy(region, p, r);
		region[r] = '\0';
		for (i = 0; i < api->n_regions && strcmp(api->regions[i], region) != 0; i++)
			;
		if (i == api->n_regions) {
			snprintf(err, errlen, "region %s is not one of --regions", region);
			return CC_EINVAL;
		}
		if (api->probe_urls[i][0]) {
			snprintf(err, errlen, "region %s is given twice", region);
			return CC_EINVAL;
		}
		if (ulen > 0 && url[ulen - 1] == '/')
			ulen--;
		host = ulen >= 7 && strncmp(url, "http://", 7) == 0	? url + 7
		       : ulen >= 8 && strncmp(url, "https://", 8) == 0 ? url + 8
									: NULL;
		if (!host || ulen > API_PROBE_URL_MAX) {
			snprintf(err, errlen, "%s: the URL must start with http:// or https:// and be at most %d bytes",
				 region, API_PROBE_URL_MAX);
			return CC_EINVAL;
		}
		tail = ulen - (size_t)(host - url);
		hlen = cc_charset_span(host, tail, CC_CHARSET_ALNUM, ".-");
		rest = host + hlen;
		if (hlen > 0 && hlen < tail && *rest == ':') {
			size_t digits = cc_charset_span(rest + 1, tail - hlen - 1, CC_CHARSET_DIGIT, NULL);
			rest = digits >= 1 && digits <= 5 ? rest + 1 + digits : rest;
		}
		if (hlen == 0 || (rest < host + tail && (*rest != '/' ||
			!cc_charset_all(rest, (size_t)(host + tail - rest), CC_CHARSET_ALNUM, "._~/-")))) {
			snprintf(err, errlen, "%s: the URL must be http(s)://HOST[:PORT][/PATH] with a host of "
				 "[A-Za-z0-9.-] and a path of [A-Za-z0-9._~/-] (no query, no fragment)", region);
			return CC_EINVAL;
		}
		memcpy(api->probe_urls[i], url, ulen);
		api->probe_urls[i][ulen] = '\0';
		p += n;
		if (*p == ',' && *++p == '\0') {
			snprintf(err, errlen, "a trailing comma");
			return CC_EINVAL;
		}
	}
	return 0;
}

/*
 * The start-up reads, once: the playlists table is brought in line with
 * the compiled list (store/playlists.h: missing rows inserted, a differing
 * row refused), then the tier bands (SPEC 9) are loaded. Returns 0 when
 * both are done, CC_EINVAL when either table is wrong (which must stop the
 * process), another code when the database could not be asked.
 */
static int load_tables_once(struct api *api)
{
	char err[512] = "";
	struct cc_pg *pg = NULL;
	struct cc_tier_band *bands = NULL;
	size_t n = 0, added = 0;
	int rc = cc_pg_pool_acquire(api->pool, 2000, &pg);
	if (rc == 0 && (rc = cc_playlists_sync(pg, &added, err, sizeof err)) != 0) {
		if (rc == CC_EINVAL || rc == CC_ESTATE || rc == CC_EDB) {
			cc_log_error("playlists_mismatch", CC_LOG_STR("reason", err));
			rc = CC_EINVAL;
		}
		cc_pg_pool_release(api->pool, pg);
		return rc;
	}
	if (rc == 0 && added > 0)
		cc_log_info("playlists_inserted", CC_LOG_INT("rows", added));
	if (rc == 0)
		rc = cc_tier_bands_load(pg, &bands, &n, err, sizeof err);
	cc_pg_pool_release(api->pool, pg);
	if (rc == 0) {
		api->n_tier_bands = n;
		atomic_store(&api->tier_bands, bands);
	} else if (rc == CC_EINVAL || rc == CC_EDB) {
		cc_log_error("tier_bands_invalid", CC_LOG_STR("reason", err));
		rc = CC_EINVAL;
	}
	return rc;
}

/*
 * When the database was unreachable at start-up, keep trying in the
 * background: the process serves (and reports not ready) meanwhile, and a
 * malformed table found later still stops it.
 */
static void *tier_bands_loader(void *arg)
{
	struct api *api = arg;
	for (;;) {
		sleep(1);
		int rc = load_tables_once(api);
		if (rc == 0)
			return NULL;
		if (rc == CC_EINVAL) {
			cc_service_fail(&service, "tier_bands_invalid");
			return NULL;
		}
	}
}

/* Ready when a pooled connection answers a trivial query. */
static bool api_ready(void *ctx, char *why, size_t whylen)
{
	struct api *api = ctx;
	struct cc_pg *pg = NULL;
	PGresult *res = NULL;
	int rc = cc_pg_pool_acquire(api->pool, 1000, &pg);
	if (rc == 0)
		rc = cc_pg_exec(pg, "SELECT 1", 0, NULL, &res);
	PQclear(res);
	cc_pg_pool_release(api->pool, pg);
	if (rc != 0)
		snprintf(why, whylen, "database: %s", cc_strerror(rc));
	else if (!atomic_load(&api->tier_bands))
		snprintf(why, whylen, "tier bands not loaded yet");
	return rc == 0 && atomic_load(&api->tier_bands);
}

int main(int argc, char **argv)
{
	struct api_config cfg = { 0 };
	struct api api = { .cfg = &cfg };
	struct cc_http_server *server = NULL;
	struct cc_admin *admin = NULL;
	int status = 1;

	/* One table, two binaries: the testkit says who it is in --help, --version and logs. */
	struct cc_service_spec spec = api_service_spec;
	if (api_testkit_login)
		spec.program = "cc-testkit-api";
	cc_service_load_or_exit(&service, &spec, argc, argv, &cfg, NULL);
	/*
	 * The bearer parser (auth.c) would refuse a token outside its syntax at
	 * every request, and a short one is guessable: refuse it now instead.
	 */
	if (cfg.operator_token && (strlen(cfg.operator_token) < API_OPERATOR_TOKEN_MIN ||
				   !api_bearer_token_syntax_ok(cfg.operator_token, strlen(cfg.operator_token)))) {
		fprintf(stderr, "%s: --operator-token: must be %d to %d characters of A-Z a-z 0-9 - . _ ~ + / = "
			"(a bearer token)\n%s: see --help\n", spec.program, API_OPERATOR_TOKEN_MIN,
			API_BEARER_TOKEN_MAX, spec.program);
		status = 2;
		goto out;
	}
	if (parse_regions(&api, cfg.regions) != 0) {
		fprintf(stderr, "cc-api: --regions: expected 1-16 distinct comma-separated names of [a-z0-9-]{1,32}\n");
		status = 2;
		goto out;
	}
	{
		char why[256] = "";
		if (parse_probe_urls(&api, cfg.probe_urls, why, sizeof why) != 0) {
			fprintf(stderr, "cc-api: --probe-urls: %s\n", why);
			status = 2;
			goto out;
		}
	}
	cc_service_start(&service);

	/* Only cc-testkit-api links the fake login; cc-api always verifies with Steam. */
	api.login = api_testkit_login ? api_testkit_login : api_steam_login;
	if (api_testkit_login)
		cc_log_warn("testkit_login_enabled", CC_LOG_STR("binary", "cc-testkit-api"));
	if (cc_crypto_init() != 0) {
		cc_log_error("start_failed", CC_LOG_STR("reason", "libsodium init"));
		goto out;
	}
	/* Prepared: parse+plan was most of the database's work per request (pg.h). */
	struct cc_pg_options pg_opt = { .query_timeout_ms = (int)cfg.svc.db_timeout_ms, .application_name = "cc-api",
					.prepare_statements = cfg.svc.db_prepared_statements };
	api.pool = cc_pg_pool_create(cfg.svc.database_url, (size_t)cfg.svc.db_pool_size, &pg_opt);
	if (!api.pool) {
		cc_log_error("start_failed", CC_LOG_STR("reason", "database pool"));
		goto out;
	}
	if (api_ratelimits_open(&api) != 0) {
		cc_log_error("start_failed", CC_LOG_STR("reason", "rate limiter"));
		goto out;
	}
	if (api_servers_open(&api) != 0) {
		status = 2;
		goto out;
	}
	if (api_index_open(&api) != 0) {
		cc_log_error("start_failed", CC_LOG_STR("reason", "candidate index"));
		goto out;
	}

	int bands_rc = load_tables_once(&api);
	if (bands_rc == CC_EINVAL)
		goto out;
	if (bands_rc != 0) {
		pthread_t loader;
		cc_log_warn("tier_bands_unavailable", CC_LOG_STR("error", cc_errname(bands_rc)));
		if (pthread_create(&loader, NULL, tier_bands_loader, &api) != 0 || pthread_detach(loader) != 0)
			goto out;
	}
	admin = cc_admin_start_service(&service, api_ready, &api);
	if (!admin)
		goto out;
	struct cc_http_server_options http_opt = {
		.name = "api",
		.bind = cfg.listen,
		.port = (int)cfg.port,
		.max_connections = (unsigned)cfg.max_connections,
		.max_per_address = (unsigned)cfg.max_per_address,
		.header_timeout_ms = (unsigned)cfg.header_timeout_ms,
		.body_timeout_ms = (unsigned)cfg.body_timeout_ms,
		.keep_alive = cfg.keep_alive,
		.max_body_bytes = (size_t)cfg.max_body_bytes,
		.routes = api_routes,
		.n_routes = api_n_routes,
		.ctx = &api,
	};
	if (cfg.events && api_events_open(&api) != 0) {
		cc_log_error("start_failed", CC_LOG_STR("reason", "event stream"));
		goto out;
	}
	server = cc_http_server_start(&http_opt);
	if (!server)
		goto out;
	cc_log_info("started", CC_LOG_INT("port", cc_http_server_port(server)),
		    CC_LOG_INT("admin_port", cc_admin_port(admin)));

	/* No loop of its own: the HTTP servers' threads serve until a stop. */
	status = cc_service_run(&service, NULL, NULL);
out:
	api_events_close(&api); /* before the server: it waits for upgraded sockets */
	cc_http_server_stop(server);
	api_events_free(&api);
	cc_admin_stop(admin);
	cc_candidate_index_free(api.index);
	cc_ratelimiter_free(api.limiter);
	cc_keyset_free(api.workload_keys);
	cc_keyset_free(api.join_keys);
	cc_pg_pool_free(api.pool);
	free(atomic_load(&api.tier_bands));
	cc_service_release(&service);
	return status;
}
