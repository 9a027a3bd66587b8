/*
 * cc-api: the player-facing REST API and the operator routes.
 *
 * main() reads the configuration, opens the database pool, starts the
 * player API server and the admin server (/metrics, /healthz, /readyz),
 * then waits for SIGINT/SIGTERM and shuts down in reverse order.
 */
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "api.h"
#include "config.h"
#include "crypto.h"
#include "http_server.h"
#include "log.h"
#include "pg.h"
#include "banned.h"

#define OPT(field) offsetof(struct api_config, field)

static const struct cc_config_option api_options[] = {
	{ .name = "listen", .type = CC_CFG_STRING, .default_value = "127.0.0.1",
	  .help = "address the player API binds (\"::\" for all)", .offset = OPT(listen) },
	{ .name = "port", .type = CC_CFG_INT, .default_value = "8080", .min = 0, .max = 65535,
	  .help = "player API port (0 = ephemeral, logged at start)", .offset = OPT(port) },
	{ .name = "admin-listen", .type = CC_CFG_STRING, .default_value = "127.0.0.1",
	  .help = "address of the admin server (/metrics, /healthz, /readyz)", .offset = OPT(admin_listen) },
	{ .name = "admin-port", .type = CC_CFG_INT, .default_value = "9180", .min = 0, .max = 65535,
	  .help = "admin port (0 = ephemeral)", .offset = OPT(admin_port) },
	{ .name = "database-url", .type = CC_CFG_STRING, .secret = true, .required = true,
	  .help = "PostgreSQL connection string", .offset = OPT(database_url) },
	{ .name = "db-pool-size", .type = CC_CFG_INT, .default_value = "16", .min = 1, .max = 256,
	  .help = "database connections in the pool", .offset = OPT(db_pool_size) },
	{ .name = "db-timeout-ms", .type = CC_CFG_INT, .default_value = "5000", .min = 50, .max = 600000,
	  .help = "deadline of one database statement", .offset = OPT(db_timeout_ms) },
	{ .name = "log-level", .type = CC_CFG_ENUM, .default_value = "info", .choices = "debug|info|warn|error",
	  .help = "lowest level logged", .offset = OPT(log_level) },
	{ .name = "max-body-bytes", .type = CC_CFG_INT, .default_value = "65536", .min = 1024, .max = 1048576,
	  .help = "largest request body accepted (413 beyond)", .offset = OPT(max_body_bytes) },
	{ .name = "max-connections", .type = CC_CFG_INT, .default_value = "512", .min = 1, .max = 10000,
	  .help = "concurrent HTTP connections (one thread each)", .offset = OPT(max_connections) },
};

const struct cc_config_spec api_config_spec = {
	.program = "cc-api",
	.summary = "Cosmic Clash player REST API and operator routes.",
	.options = api_options,
	.n_options = CC_ARRAY_LEN(api_options),
};

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
	return rc == 0;
}

int main(int argc, char **argv)
{
	struct api_config cfg = { 0 };
	struct api api = { .cfg = &cfg };
	struct cc_http_server *server = NULL;
	struct cc_admin *admin = NULL;
	char *const *positional;
	enum cc_log_level level = CC_LOG_INFO;
	int status = 1;
	sigset_t stop_signals;
	int sig;

	cc_config_load_or_exit(&api_config_spec, argc, argv, &cfg, &positional);
	(void)cc_log_level_parse(cfg.log_level, &level);
	cc_log_init("cc-api", level);
	cc_config_log(&api_config_spec, &cfg);

	/* Block the stop signals before any thread starts, so only sigwait sees them. */
	sigemptyset(&stop_signals);
	sigaddset(&stop_signals, SIGINT);
	sigaddset(&stop_signals, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (cc_crypto_init() != 0) {
		cc_log_error("start_failed", CC_LOG_STR("reason", "libsodium init"));
		goto out;
	}
	struct cc_pg_options pg_opt = { .query_timeout_ms = (int)cfg.db_timeout_ms, .application_name = "cc-api" };
	api.pool = cc_pg_pool_create(cfg.database_url, (size_t)cfg.db_pool_size, &pg_opt);
	if (!api.pool) {
		cc_log_error("start_failed", CC_LOG_STR("reason", "database pool"));
		goto out;
	}

	admin = cc_admin_start(cfg.admin_listen, (int)cfg.admin_port, api_ready, &api);
	if (!admin)
		goto out;
	struct cc_http_server_options http_opt = {
		.name = "api",
		.bind = cfg.listen,
		.port = (int)cfg.port,
		.max_connections = (unsigned)cfg.max_connections,
		.max_body_bytes = (size_t)cfg.max_body_bytes,
		.routes = api_routes,
		.n_routes = api_n_routes,
		.ctx = &api,
	};
	server = cc_http_server_start(&http_opt);
	if (!server)
		goto out;
	cc_log_info("started", CC_LOG_INT("port", cc_http_server_port(server)),
		    CC_LOG_INT("admin_port", cc_admin_port(admin)));

	if (sigwait(&stop_signals, &sig) == 0)
		cc_log_info("stopping", CC_LOG_INT("signal", sig));
	status = 0;
out:
	cc_http_server_stop(server);
	cc_admin_stop(admin);
	cc_pg_pool_free(api.pool);
	cc_config_release(&api_config_spec, &cfg);
	return status;
}
