/*
 * probe.h - cc-gameserver's loopback probe: a tiny HTTP/1.0 responder.
 *
 * The game server must not link the HTTP server library (SPEC 1), yet
 * cc-supervisor, the local provider and an operator need to ask "are you
 * ready?" and read /metrics. This module owns one listening TCP socket on
 * 127.0.0.1 and one thread that answers, one connection at a time:
 *
 *   GET /readyz   200 {"status":"ready"} or 503 {"error":{"code":"not_ready",...}}
 *   GET /healthz  200 {"status":"ok"}
 *   GET /metrics  200 Prometheus text (sys/metrics)
 *   anything else 404 in the SPEC error shape
 *
 * Each connection gets CC_PROBE_DEADLINE_MS to send its request line (at
 * most CC_PROBE_REQUEST_MAX bytes are read), so a client that connects and
 * says nothing delays the next probe by at most that, and can grow nothing.
 *
 * Ownership: cc_probe_start() returns a probe the caller stops with
 * cc_probe_stop(), which joins the thread and closes the socket. ready(ctx)
 * runs on the probe thread: it must be thread-safe and quick.
 */
#ifndef CC_GAMESERVER_PROBE_H
#define CC_GAMESERVER_PROBE_H

#include <stdbool.h>
#include <stddef.h>

#define CC_PROBE_DEADLINE_MS 500  /* a connection's time to send its request */
#define CC_PROBE_REQUEST_MAX 1024 /* bytes of a request read, the rest ignored */

struct cc_probe;

/* Readiness: true when ready; else a short reason (no secrets) in why. */
typedef bool (*cc_probe_ready_fn)(void *ctx, char *why, size_t whylen);

/*
 * Listens on 127.0.0.1:port (0 = ephemeral) and starts the thread.
 * Returns the probe, or NULL (logged "probe_failed" with the errno) when the
 * socket cannot be bound or the thread cannot start.
 */
struct cc_probe *cc_probe_start(int port, cc_probe_ready_fn ready, void *ctx);

/* The TCP port bound, or -1 for NULL. */
int cc_probe_port(const struct cc_probe *p);

/* Stops the thread, closes the socket, frees. NULL is a harmless no-op. */
void cc_probe_stop(struct cc_probe *p);

#endif
