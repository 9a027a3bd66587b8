/*
 * redis.h - a Redis connection that can fail but never hangs.
 *
 * Redis is an optional accelerator here: PostgreSQL holds the truth. So the
 * contract is simple. Every call either answers within its time budget or
 * returns an error, and a caller may treat ANY non-zero result as "Redis is
 * down, use PostgreSQL". Nothing here retries a command.
 *
 * Connection life cycle:
 *  - cc_redis_create() only records the address; it never fails because Redis
 *    is down. The first command connects.
 *  - Any transport failure (refused, reset, closed by the server, timeout,
 *    protocol error, oversized reply) closes the connection. The next call
 *    that comes at least CC_REDIS_RETRY_INTERVAL_MS (monotonic clock) after
 *    the failure tries to connect again; calls before that return
 *    CC_EUNAVAILABLE at once without touching the network, so a dead Redis
 *    costs nothing per call.
 *  - An error reply from Redis (WRONGTYPE, ...) is not a transport failure:
 *    the connection stays up.
 *
 * Time budget of one call: connect_timeout_ms when it has to connect, plus
 * command_timeout_ms for writing the whole request and reading every reply
 * (for a pipeline, all of them together). Both are hard deadlines enforced
 * with poll(2), not per-read socket timeouts, so a server that trickles
 * bytes cannot stretch them. The one exception is host name resolution
 * (getaddrinfo), which cannot be bounded: give an IP address, or a name the
 * local resolver answers quickly.
 *
 * hiredis (0.14.1) is used only to format commands and parse replies; this
 * module owns the socket. Writes use MSG_NOSIGNAL, so a server that went
 * away never raises SIGPIPE. RESP2 only; no AUTH/SELECT, no pub/sub, no
 * MONITOR. A blocking command (BLPOP ...) whose server-side timeout exceeds
 * command_timeout_ms fails with CC_EUNAVAILABLE and drops the connection.
 *
 * Ownership: a reply handed out through an out-parameter belongs to the
 * caller, who frees it with freeReplyObject() (or cc_redis_replies_free()).
 *
 * Threads: a struct cc_redis is NOT thread-safe. Use one per thread (they are
 * cheap: one socket), or serialise calls with your own lock.
 */
#ifndef CC_REDIS_H
#define CC_REDIS_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stddef.h>

#include "sys/cc.h"

#define CC_REDIS_RETRY_INTERVAL_MS 500	       /* minimum gap between connect attempts */
#define CC_REDIS_MAX_REQUEST_BYTES (32u << 20) /* argument bytes of one call (a pipeline: all) */
#define CC_REDIS_MAX_REPLY_BYTES   (32u << 20) /* bytes read from the server in one call */
#define CC_REDIS_MAX_ARGS	   64	       /* arguments of one cc_redis_command() */
#define CC_REDIS_ERROR_MAX	   256	       /* bytes kept of the last error message */

struct cc_redis;

/*
 * Returns a handle for host:port, not yet connected, or NULL when an argument
 * is invalid (NULL/empty host, port outside 1..65535, a timeout <= 0) or
 * memory runs out. host is copied. Free with cc_redis_free().
 */
struct cc_redis *cc_redis_create(const char *host, int port, int connect_timeout_ms, int command_timeout_ms);

/* Closes the connection and frees the handle. NULL is a harmless no-op. */
void cc_redis_free(struct cc_redis *r);

/*
 * Sends one command of argc arguments (argv[i] with length argvlen[i], or
 * strlen(argv[i]) when argvlen is NULL: binary arguments need argvlen) and
 * waits for its reply.
 * Returns:
 *   0                on a non-error reply; *out (when out is not NULL) is the
 *                    reply, the caller frees it with freeReplyObject(). With
 *                    out == NULL the reply is discarded.
 *   CC_EDB           Redis answered with an error reply; the reply is freed
 *                    and its text is in cc_redis_last_error(). Still connected.
 *   CC_EUNAVAILABLE  not connected and not due to retry yet, could not
 *                    connect, connection lost, timed out, or protocol error.
 *   CC_ETOOBIG       the request or the reply exceeded its cap (for the
 *                    reply this also drops the connection).
 *   CC_EINVAL        r is NULL, argc < 1, argv or one argv[i] is NULL.
 *   CC_ENOMEM
 * *out is written only on success.
 */
CC_MUST_CHECK int cc_redis_command_argv(struct cc_redis *r, int argc, const char **argv,
					const size_t *argvlen, redisReply **out);

/*
 * Convenience over cc_redis_command_argv() for NUL-terminated text arguments:
 *   rc = cc_redis_command(r, &reply, "HSET", key, field, value, (char *)NULL);
 * The list must end with NULL (checked by the compiler); at most
 * CC_REDIS_MAX_ARGS arguments (more is CC_EINVAL). Same results as above.
 * There is deliberately no printf-style variant: hiredis's "%b" takes two
 * arguments, so a format string cannot be type-checked.
 */
CC_MUST_CHECK int cc_redis_command(struct cc_redis *r, redisReply **out, const char *arg0, ...)
	__attribute__((sentinel));

/*
 * Pipelines n commands: writes all of them, then reads n replies, in one
 * round trip and one command_timeout_ms budget (size batches accordingly).
 * Command i has argcs[i] arguments argvs[i], with lengths argvlens[i]
 * (argvlens or argvlens[i] may be NULL for text arguments).
 * Returns:
 *   0   every reply arrived. With replies != NULL (an array of n slots),
 *       replies[i] is command i's reply, error replies included (check
 *       ->type == REDIS_REPLY_ERROR); the caller frees them all, e.g. with
 *       cc_redis_replies_free(replies, n). With replies == NULL they are
 *       discarded.
 *   CC_EDB  only when replies == NULL and at least one reply was an error:
 *       every reply was read (still connected), the first error's text is in
 *       cc_redis_last_error().
 *   CC_EUNAVAILABLE, CC_ETOOBIG, CC_EINVAL (n == 0, a bad command), CC_ENOMEM
 *       as for cc_redis_command_argv(); no reply is handed out.
 * replies[] is written only on success.
 */
CC_MUST_CHECK int cc_redis_pipeline(struct cc_redis *r, size_t n, const int *argcs, const char **const *argvs,
				    const size_t *const *argvlens, redisReply **replies);

/* Frees replies[0..n-1] (NULL entries skipped) and sets them to NULL. */
void cc_redis_replies_free(redisReply **replies, size_t n);

/*
 * Returns the text of the last failure on r (a Redis error reply or a
 * transport error), "" when there was none. Valid until the next call on r.
 */
const char *cc_redis_last_error(const struct cc_redis *r);

/* True when r currently holds an open connection (it may still be dead). */
bool cc_redis_is_connected(const struct cc_redis *r);

/* Number of connection attempts r made so far (for tests and metrics). */
unsigned long cc_redis_connect_attempts(const struct cc_redis *r);

#endif
