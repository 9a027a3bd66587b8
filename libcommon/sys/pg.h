/*
 * pg.h - PostgreSQL access over libpq: connections that never hang,
 * classified errors, SERIALIZABLE transactions with a retry budget,
 * LISTEN/NOTIFY and a small thread-safe pool.
 *
 * Every network wait has a client-side deadline on a monotonic clock, so a
 * dead or hung server is a clear error, never a hang: connecting uses
 * PQconnectStartParams/PQconnectPoll with the connect timeout; a statement
 * uses PQsendQueryParams + poll() with the query timeout. When a statement
 * runs past its deadline the server is sent a cancel request (from a short
 * detached thread, because PQcancel itself blocks without a timeout), the
 * connection is dropped and CC_ETIMEOUT is returned.
 *
 * A struct cc_pg owns one PGconn plus a copy of its DSN and options. It is
 * not thread-safe: one thread uses it at a time (the pool hands each
 * connection to one thread). A dropped connection is reopened on the next
 * call, unless it was lost inside a transaction: then every call fails with
 * CC_EUNAVAILABLE until cc_pg_rollback() acknowledges the loss, so a
 * caller never silently continues its statements outside the transaction it
 * began. Channels named in cc_pg_listen() are LISTENed again after a
 * reconnect.
 *
 * Statements take text parameters $1..$n passed apart from the SQL (the
 * extended protocol), so input is never spliced into SQL text and a string
 * with several statements is refused by the server. A NULL parameter is SQL
 * NULL. Statements are unnamed (parsed and planned on every call) unless
 * the options ask for prepare_statements: then cc_pg_exec prepares each
 * distinct statement text once per connection (as "cc_<n>", up to 128
 * texts; later ones run unnamed) and afterwards only binds and executes
 * it. For short statements parsing and planning are most of the server's
 * work (a heartbeat ran 2.5x faster prepared in pgbench); the first run of
 * a text costs one extra round trip. The catch: after five runs the server
 * may keep one generic plan for the text, chosen with the statistics of
 * that moment (an almost empty table just after a deploy) until the next
 * ANALYZE, so statements on hot paths should leave the planner one obvious
 * index (a primary key). Not for a transaction-pooling proxy, which cannot
 * keep prepared statements. Session state that drops them (DEALLOCATE ALL,
 * DISCARD ALL) makes one call fail with 26000; then they are prepared
 * afresh.
 *
 * Errors are classified by SQLSTATE (cc_pg_classify_sqlstate) and the last
 * failure's SQLSTATE, primary message and constraint name stay readable
 * through cc_pg_sqlstate() and friends until the next call on that
 * connection, so callers can map e.g. 23514 or a trigger's P0001 message to
 * their own codes. The DSN may hold a password: it is never logged or put
 * into an error message.
 *
 * Ownership: a PGresult handed out through an out-parameter belongs to the
 * caller (PQclear). cc_pg_free() and cc_pg_pool_free() accept NULL.
 */
#ifndef CC_PG_H
#define CC_PG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "sys/cc.h"

#define CC_PG_DEFAULT_CONNECT_TIMEOUT_MS 5000
#define CC_PG_DEFAULT_QUERY_TIMEOUT_MS 10000
#define CC_PG_DEFAULT_APPLICATION_NAME "cosmic-clash"
#define CC_PG_MAX_ATTEMPTS 5        /* SERIALIZABLE attempts per cc_pg_run_serializable */
#define CC_PG_BACKOFF_BASE_MS 8     /* first retry sleeps up to this, doubling */
#define CC_PG_BACKOFF_CAP_MS 100    /* no retry sleeps longer */
#define CC_PG_MAX_PARAMS 1000       /* parameters per statement */
#define CC_PG_MAX_CHANNELS 16       /* channels one connection may LISTEN on */
#define CC_PG_CHANNEL_MAX 63        /* bytes of a channel name */
#define CC_PG_NOTIFY_PAYLOAD_MAX 7999 /* bytes of a NOTIFY payload (server limit) */
#define CC_PG_MESSAGE_MAX 512       /* bytes kept of the last error message */

/* SQL text rendering timestamp column c as RFC 3339 UTC with milliseconds. */
#define CC_PG_RFC3339(c) "to_char((" c ") AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
/* Holds any text CC_PG_RFC3339 renders, years past 9999 (timestamptz ends in 294276) included. */
#define CC_PG_RFC3339_BUF 40

struct cc_pg;
struct cc_pg_pool;

/* Connection options; a zero field (or a NULL struct) takes the default. */
struct cc_pg_options {
	int connect_timeout_ms;       /* whole connect + authentication deadline */
	int query_timeout_ms;         /* per statement: send, run and read the results */
	const char *application_name; /* shown in pg_stat_activity; copied, capped at 63 bytes */
	bool prepare_statements;      /* prepare each statement text once per connection (see above) */
};

/* ---- connections ------------------------------------------------------ */

/*
 * Opens a connection to dsn (a "key=value" string or a postgresql:// URI)
 * within the connect timeout. Keepalives are on unless the DSN says
 * otherwise. On success *out is a new connection the caller frees with
 * cc_pg_free(). Returns CC_EINVAL (malformed DSN or options),
 * CC_EUNAVAILABLE (refused, unreachable, authentication failed, server
 * not accepting connections), CC_ETIMEOUT (no answer within the deadline)
 * or CC_ENOMEM; err (if not NULL) then holds a one-line reason naming the
 * host and port but never the DSN.
 */
CC_MUST_CHECK int cc_pg_connect(const char *dsn, const struct cc_pg_options *opt, struct cc_pg **out,
				char *err, size_t errlen);

/* Closes the connection and frees everything it owns. NULL is a no-op. */
void cc_pg_free(struct cc_pg *pg);

/*
 * Runs one statement with nparams text parameters (params[i] NULL = SQL
 * NULL) within the query timeout; reconnects first if the connection was
 * dropped outside a transaction. On success returns 0 and, if out is not
 * NULL, hands the result (PGRES_TUPLES_OK or PGRES_COMMAND_OK) to the
 * caller, who PQclear()s it; *out is untouched on failure. Errors:
 *   CC_ESERIALIZATION  40001 serialization_failure, 40P01 deadlock_detected
 *   CC_ECONFLICT       23505 unique_violation, 23P01 exclusion_violation
 *   CC_EUNAVAILABLE    connection lost or refused (class 08, 57P01-57P03),
 *                      or lost earlier inside a transaction not yet rolled back
 *   CC_ETIMEOUT        client deadline passed (connection dropped) or 57014
 *   CC_EDB             any other server error (see cc_pg_sqlstate)
 *   CC_EINVAL          bad arguments, or COPY (not supported)
 */
CC_MUST_CHECK int cc_pg_exec(struct cc_pg *pg, const char *sql, int nparams, const char *const *params,
			     PGresult **out);

/*
 * Runs sql (as cc_pg_exec) for exactly one row and returns its first
 * column as a malloc'd string in *out, which the caller free()s. Returns 0;
 * CC_ENOTFOUND when no row (or more than one) came back; CC_ENOMEM; or
 * cc_pg_exec's error. *out is written only on success.
 */
CC_MUST_CHECK int cc_pg_exec_text(struct cc_pg *pg, const char *sql, int nparams, const char *const *params,
				  char **out);

/*
 * Ends the current transaction with ROLLBACK. Also the one way to
 * acknowledge a connection lost inside a transaction (the transaction is
 * gone; the next call reconnects). A no-op outside a transaction. Returns
 * 0, or cc_pg_exec's error if ROLLBACK itself failed (the connection is
 * then dropped, so the transaction is gone either way).
 */
int cc_pg_rollback(struct cc_pg *pg);

/* Changes this connection's query timeout (ms > 0; otherwise ignored). */
void cc_pg_set_query_timeout(struct cc_pg *pg, int ms);

/* SQLSTATE of the last failure on pg ("" when the last call succeeded or
 * the failure had none, e.g. a client-side timeout). Never NULL. */
const char *cc_pg_sqlstate(const struct cc_pg *pg);

/* One-line message of the last failure ("" after success). Never NULL. */
const char *cc_pg_error_message(const struct cc_pg *pg);

/* Constraint named by the last failure (23505, 23514, ...), or "". */
const char *cc_pg_error_constraint(const struct cc_pg *pg);

/* Backend process id of the open connection, 0 when none is open. */
int cc_pg_backend_pid(const struct cc_pg *pg);

/* True when no connection is open (the next call will reconnect). */
bool cc_pg_is_broken(const struct cc_pg *pg);

/* The code cc_pg_exec returns for a server error with this SQLSTATE
 * (NULL or malformed -> CC_EDB). */
int cc_pg_classify_sqlstate(const char *sqlstate);

/* ---- SERIALIZABLE transactions ---------------------------------------- */

/*
 * The body of a transaction: runs its statements on pg and returns 0 to
 * commit, or a negative CC_E* code (its own, e.g. CC_ENOTFOUND, or one
 * cc_pg_exec returned) to roll back. It may run several times, so it must
 * be idempotent per attempt: no side effects outside the database, and any
 * state it keeps in arg is reset at its start. It must not COMMIT or
 * ROLLBACK itself, and must return CC_ESERIALIZATION when a statement did.
 */
typedef int (*cc_pg_tx_fn)(struct cc_pg *pg, void *arg);

/*
 * Runs fn inside BEGIN ISOLATION LEVEL SERIALIZABLE ... COMMIT. When fn or
 * COMMIT yields CC_ESERIALIZATION, rolls back, sleeps a jittered
 * exponential backoff (up to CC_PG_BACKOFF_BASE_MS << (attempt - 1), capped
 * at CC_PG_BACKOFF_CAP_MS, full jitter, monotonic clock) and tries again, at
 * most CC_PG_MAX_ATTEMPTS attempts in all. Returns 0 once committed,
 * CC_ERETRY_EXHAUSTED when every attempt hit a serialization failure
 * (callers answer 503 retryable), or any other error of fn, BEGIN or COMMIT
 * unchanged after a ROLLBACK (cc_pg_sqlstate and cc_pg_error_message still
 * describe the failure). CC_EINVAL when called inside a transaction.
 * Connection loss is not retried: CC_EUNAVAILABLE or CC_ETIMEOUT from
 * COMMIT means the outcome is unknown (make the mutation idempotent, e.g.
 * with an idempotency key, so the client's retry is safe).
 * If fn returns 0 after swallowing a failed statement the transaction is
 * rolled back and that statement's error is returned.
 */
CC_MUST_CHECK int cc_pg_run_serializable(struct cc_pg *pg, cc_pg_tx_fn fn, void *arg);

/*
 * As cc_pg_run_serializable with a budget of max_attempts (at least 1)
 * instead of CC_PG_MAX_ATTEMPTS, for a transaction whose serialization
 * failures are bounded by something the caller knows: e.g. the answers to
 * one proposal, which lock its row in turn, each fail at most once per
 * peer that committed while they waited (their snapshot predates it), so
 * six players accepting at once need up to six attempts, and with the
 * default budget the last one was answered 503.
 */
CC_MUST_CHECK int cc_pg_run_serializable_budget(struct cc_pg *pg, int max_attempts, cc_pg_tx_fn fn, void *arg);

/*
 * As cc_pg_run_serializable, at READ COMMITTED: for work queues claimed with
 * FOR UPDATE SKIP LOCKED, whose correctness rests on the row locks (a
 * locked row's conditions are re-checked on its newest version), on
 * compare-and-set UPDATEs and on unique indexes, never on what a snapshot
 * did not see. Under SERIALIZABLE every two claims of one queue read the
 * same index pages and write rows the other read, so SSI aborts one of
 * each overlapping pair (cc-allocator at 4 workers: a third of the
 * attempts, 5x fewer allocations per second). Deadlocks (40P01) are still
 * retried with the same budget. Use it only where every decision is
 * guarded that way, and say so at the caller.
 */
CC_MUST_CHECK int cc_pg_run_locked(struct cc_pg *pg, cc_pg_tx_fn fn, void *arg);

/* Attempts used by the last cc_pg_run_serializable on pg (0 if none). */
int cc_pg_tx_attempts(const struct cc_pg *pg);

/* Upper bound of the sleep before retry number attempt (1-based), in ms. */
unsigned cc_pg_backoff_cap_ms(int attempt);

/* Process-wide counters (also exported as metrics); for tests and /readyz. */
struct cc_pg_stats {
	unsigned long long committed;             /* run_serializable commits */
	unsigned long long rolled_back;           /* run_serializable failures other than exhaustion */
	unsigned long long serialization_retries; /* attempts beyond the first */
	unsigned long long retry_exhausted;       /* runs that used every attempt */
	unsigned long long reconnects;            /* connections reopened after a drop */
	unsigned long long query_timeouts;        /* client deadlines that dropped a connection */
};

/* Copies the current counters into *out. */
void cc_pg_stats_get(struct cc_pg_stats *out);

/* ---- LISTEN / NOTIFY --------------------------------------------------- */

/* True when channel matches [a-z_][a-z0-9_]{0,62}. */
bool cc_pg_channel_valid(const char *channel);

/*
 * LISTENs on channel (remembered, and LISTENed again after a reconnect).
 * Returns 0 (also when already listening), CC_EINVAL for an invalid name
 * or when called inside a transaction (a LISTEN there would only take
 * effect at COMMIT), CC_ETOOBIG beyond CC_PG_MAX_CHANNELS, or cc_pg_exec's
 * error. Give a listening connection its own thread that keeps calling
 * cc_pg_wait_notify: libpq queues unread notifications without a bound.
 */
CC_MUST_CHECK int cc_pg_listen(struct cc_pg *pg, const char *channel);

/*
 * Sends a notification through SELECT pg_notify($1, $2); inside a
 * transaction it is delivered only on COMMIT. payload may be NULL ("").
 * Returns 0, CC_EINVAL (bad channel), CC_ETOOBIG (payload over
 * CC_PG_NOTIFY_PAYLOAD_MAX) or cc_pg_exec's error.
 */
CC_MUST_CHECK int cc_pg_notify(struct cc_pg *pg, const char *channel, const char *payload);

/*
 * Waits up to timeout_ms (0 = just check) for one notification on a
 * LISTENed channel and copies its channel and payload (NUL-terminated).
 * Returns 0, CC_ETIMEOUT when none came, CC_EUNAVAILABLE when the
 * connection was lost, now or since the last call, even if a statement has
 * reconnected since (notifications may have been missed: rescan; the next
 * call reconnects and LISTENs again), CC_ETOOBIG when a buffer was too
 * small (that notification is consumed and dropped), CC_EINVAL.
 */
CC_MUST_CHECK int cc_pg_wait_notify(struct cc_pg *pg, int timeout_ms, char *channel_out, size_t channel_len,
				    char *payload_out, size_t payload_len);

/* ---- pool -------------------------------------------------------------- */

/*
 * Creates a pool of at most size (1..1024) connections to dsn, opened
 * lazily by cc_pg_pool_acquire. dsn and opt are copied. Returns NULL on
 * bad arguments or out of memory. No connection is opened here.
 */
struct cc_pg_pool *cc_pg_pool_create(const char *dsn, size_t size, const struct cc_pg_options *opt);

/*
 * Lends a connection to the calling thread until cc_pg_pool_release: an
 * idle one, or a new one while fewer than size exist, else waits up to
 * timeout_ms for one to come back (opening one may add up to the connect
 * timeout). Returns 0 with *out set, CC_ETIMEOUT
 * when none came back in time, or cc_pg_connect's error when opening a new
 * one failed (the slot is given back).
 */
CC_MUST_CHECK int cc_pg_pool_acquire(struct cc_pg_pool *pool, int timeout_ms, struct cc_pg **out);

/*
 * Gives a connection back. A connection left inside a transaction is rolled
 * back, LISTENs are dropped, and one that is dropped or lost is closed (a
 * fresh one is opened on a later acquire). NULL pg is a no-op; a
 * connection of another pool is a BUG.
 */
void cc_pg_pool_release(struct cc_pg_pool *pool, struct cc_pg *pg);

/* Occupancy of a pool, for tests and metrics. */
struct cc_pg_pool_stats {
	size_t size; /* cap */
	size_t open; /* connections that exist or are being opened */
	size_t idle; /* open and not lent */
	size_t lent; /* held by callers */
};
void cc_pg_pool_stats_get(struct cc_pg_pool *pool, struct cc_pg_pool_stats *out);

/* Closes every idle connection and frees the pool. Every connection must
 * have been released (a lent one is a BUG). NULL is a no-op. */
void cc_pg_pool_free(struct cc_pg_pool *pool);

/* ---- reading results --------------------------------------------------- */

/* Text of a cell, or NULL when res is NULL, row/col is out of range or the
 * value is SQL NULL. Points into res: valid until PQclear(res). */
const char *cc_pg_get_text(const PGresult *res, int row, int col);

/* Parses a cell as a decimal int64 into *out. Returns 0, CC_ENOTFOUND for
 * SQL NULL or out of range, CC_EINVAL when the text is not an integer. */
CC_MUST_CHECK int cc_pg_get_int64(const PGresult *res, int row, int col, int64_t *out);

/* Parses a boolean cell ("t"/"f") into *out; errors as cc_pg_get_int64. */
CC_MUST_CHECK int cc_pg_get_bool(const PGresult *res, int row, int col, bool *out);

/* Rows an INSERT/UPDATE/DELETE touched (PQcmdTuples), 0 when unknown. */
int64_t cc_pg_rows_affected(const PGresult *res);

#endif
