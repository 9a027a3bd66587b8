/*
 * api.h - what cc-api's modules share: the configuration and the process
 * context every route handler receives.
 *
 * main.c owns the context: it fills it at start-up, hands it to the HTTP
 * server as ctx, and frees it after the server has stopped, so handlers may
 * read it without locks (everything in it is read-only or thread-safe).
 */
#ifndef CC_API_H
#define CC_API_H

#include <stdbool.h>
#include <stdint.h>

#include "cc.h"
#include "config.h"
#include "http_server.h"

struct cc_pg_pool;

/* cc-api's configuration, filled from api_options (main.c). */
struct api_config {
	char *listen;                /* player API bind address */
	int64_t port;                /* player API port (0 = ephemeral) */
	char *admin_listen;          /* admin (metrics/health) bind address */
	int64_t admin_port;          /* admin port (0 = ephemeral) */
	char *database_url;          /* secret: PostgreSQL DSN */
	int64_t db_pool_size;        /* connections in the pool */
	int64_t db_timeout_ms;       /* per statement deadline */
	char *log_level;             /* debug|info|warn|error */
	int64_t max_body_bytes;      /* request body cap (413 beyond) */
	int64_t max_connections;     /* concurrent HTTP connections */
};

/* The process context handed to every handler. */
struct api {
	const struct api_config *cfg; /* read-only after start-up */
	struct cc_pg_pool *pool;      /* thread-safe */
};

extern const struct cc_config_spec api_config_spec;

/* The player and operator route table (routes.c). */
extern const struct cc_http_route api_routes[];
extern const size_t api_n_routes;

#endif
