/*
 * admin.h - the admin port every service serves: /metrics, /healthz, /readyz.
 *
 *   GET /metrics  200, text/plain; version=0.0.4: cc_metrics_render()
 *   GET /healthz  200 {"status":"ok"} while the process can answer at all
 *                 (liveness: never looks at dependencies, so a database
 *                 outage does not get the pod restarted)
 *   GET /readyz   200 {"status":"ready"}, or 503 in the SPEC error shape
 *                 {"error":{"code":"not_ready","message":<why>,"retryable":true}}
 *                 when ready() says no (readiness: take the pod out of the
 *                 Service while a dependency is down)
 *
 * It runs on cc_http_server, so it shares its limits, request ids, access
 * log and the cosmic_clash_http_* metrics. ready() is called on a
 * connection thread, possibly on several at once: it must be thread-safe
 * and quick. The admin owns its server; cc_admin_stop() frees both.
 */
#ifndef CC_ADMIN_H
#define CC_ADMIN_H

#include <stdbool.h>
#include <stddef.h>

#include "sys/cc.h"

#define CC_ADMIN_WHY_MAX 256 /* bytes ready() may write into why, NUL included */

struct cc_admin;

/*
 * Readiness callback: returns true when ready; when not, writes a short
 * reason for humans (no secrets) into why (whylen bytes, zeroed before the
 * call). An empty reason is reported as "not ready".
 */
typedef bool (*cc_admin_ready_fn)(void *ctx, char *why, size_t whylen);

/*
 * Starts the admin server on bind (NULL = "127.0.0.1") and port (0 =
 * ephemeral). ready NULL means always ready. Returns the admin, or NULL
 * (logged) when the server cannot start.
 */
struct cc_admin *cc_admin_start(const char *bind, int port, cc_admin_ready_fn ready, void *ctx);

struct cc_service;

/*
 * Starts the admin server of a service (sys/service.h, which must declare
 * CC_SERVICE_ADMIN) on its --admin-listen and --admin-port, with readiness
 * wired through the service: /readyz says "stopping" once the service is
 * stopping, else asks ready(ctx) (NULL = ready). Here rather than in
 * service.c so that a binary without an admin port does not link the HTTP
 * server. The caller owns the result and stops it with cc_admin_stop()
 * before freeing what ready() reads. NULL (logged) when it cannot start.
 */
struct cc_admin *cc_admin_start_service(struct cc_service *svc, cc_admin_ready_fn ready, void *ctx);

/* Returns the port actually bound, or -1 for NULL. */
int cc_admin_port(const struct cc_admin *a);

/* Stops serving and frees. NULL is a harmless no-op. */
void cc_admin_stop(struct cc_admin *a);

#endif
