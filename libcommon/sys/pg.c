/*
 * pg.c - PostgreSQL access over libpq (see pg.h for the contract).
 *
 * Shape: every wait goes through wait_socket() with an absolute deadline on
 * CLOCK_MONOTONIC. A connection is "dropped" by drop_conn(), which closes
 * the PGconn and remembers whether a transaction died with it; ensure_conn()
 * reopens it at the start of the next call when that is safe.
 */
#include "sys/charset.h"
#include "sys/pg.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sys/clock.h"
#include "sys/hash.h"
#include "sys/log.h"
#include "sys/metrics.h"

#include "sys/banned.h"

#define APP_NAME_MAX 63
#define CANCELS_IN_FLIGHT_MAX 8 /* detached cancel threads at once */
#define POOL_SIZE_MAX 1024
#define PREPARED_MAX 128 /* statements one connection keeps prepared; later ones run unnamed */

/* One statement prepared on the open connection as "cc_<seq>". */
struct prepared_stmt {
	uint64_t hash;  /* FNV-1a of sql: the cheap first comparison */
	char *sql;      /* copy, compared in full when the hash matches */
	int nparams;    /* prepared for this many parameters */
	unsigned seq;   /* names it on the server */
};

struct cc_pg {
	PGconn *conn;               /* NULL while dropped */
	char *dsn;                  /* copy for reconnects; may hold a password */
	char app_name[APP_NAME_MAX + 1]; /* application_name sent on connect */
	int connect_timeout_ms;     /* deadline for one connect */
	int query_timeout_ms;       /* deadline for one statement */
	int default_query_timeout_ms; /* restored when a pool takes it back */
	bool lost_tx;               /* dropped inside a transaction; cc_pg_rollback clears */
	bool in_run;                /* inside cc_pg_run_serializable (no nesting) */
	int last_rc;                /* code of the last failed call, 0 after success */
	int tx_attempts;            /* attempts of the last cc_pg_run_serializable */
	char sqlstate[6];           /* last failure's SQLSTATE or "" */
	char message[CC_PG_MESSAGE_MAX]; /* last failure, one line */
	char constraint[64];        /* last failure's constraint name or "" */
	char channels[CC_PG_MAX_CHANNELS][CC_PG_CHANNEL_MAX + 1]; /* LISTENed */
	size_t n_channels;          /* used entries of channels */
	bool notify_gap;            /* dropped while listening: notifications may be lost */
	struct cc_pg_pool *pool;    /* owning pool, NULL for a standalone connection */
	bool prepare;               /* cc_pg_options.prepare_statements */
	struct prepared_stmt prepared[PREPARED_MAX]; /* valid for the open connection only */
	size_t n_prepared;          /* used entries of prepared */
	unsigned prepare_seq;       /* next statement name; never reused, so a name cannot clash */
};

struct cc_pg_pool {
	pthread_mutex_t lock;       /* guards every field below */
	pthread_cond_t returned;    /* a connection or a slot came back */
	char *dsn;                  /* copied; given to each new connection */
	struct cc_pg_options opt;   /* application_name points at app_name */
	char app_name[APP_NAME_MAX + 1];
	size_t size;                /* cap on open connections */
	size_t open;                /* existing or being opened */
	size_t lent;                /* held by callers */
	size_t n_idle;              /* used entries of idle */
	struct cc_pg **idle;        /* stack of idle connections, size entries */
};

/* Forgets every prepared statement (they live and die with the session). */
static void forget_prepared(struct cc_pg *pg)
{
	for (size_t i = 0; i < pg->n_prepared; i++)
		free(pg->prepared[i].sql);
	pg->n_prepared = 0;
}

/* ---- counters ----------------------------------------------------------- */

static struct {
	atomic_ullong committed, rolled_back, serialization_retries, retry_exhausted, reconnects,
		query_timeouts;
} stats;

static atomic_int cancels_in_flight;

/*
 * Metrics are looked up on every update instead of cached: the registry may
 * be reset by tests, which would leave a cached handle dangling, and the
 * lookup is nothing next to a database round trip.
 */
static void count_transaction(const char *outcome)
{
	static const char *const labels[] = { "outcome", NULL };
	const char *values[] = { outcome };
	cc_metric_add(cc_counter("cosmic_clash_pg_transactions_total",
				 "SERIALIZABLE transactions by outcome (committed, rolled_back, exhausted)",
				 labels, 8),
		      values, 1.0);
}

static void count_plain(const char *name, const char *help)
{
	cc_metric_inc(cc_counter(name, help, NULL, 1));
}

void cc_pg_stats_get(struct cc_pg_stats *out)
{
	out->committed = atomic_load(&stats.committed);
	out->rolled_back = atomic_load(&stats.rolled_back);
	out->serialization_retries = atomic_load(&stats.serialization_retries);
	out->retry_exhausted = atomic_load(&stats.retry_exhausted);
	out->reconnects = atomic_load(&stats.reconnects);
	out->query_timeouts = atomic_load(&stats.query_timeouts);
}

/* ---- small helpers -------------------------------------------------------- */

/* Copies src into dst (capacity len), cutting at the first newline and
 * trimming trailing blanks, so libpq's multi-line messages become one line. */
static void copy_line(char *dst, size_t len, const char *src)
{
	size_t n = 0;
	if (!len)
		return;
	for (; src && src[n] && src[n] != '\n' && n + 1 < len; n++)
		dst[n] = src[n];
	while (n > 0 && (dst[n - 1] == ' ' || dst[n - 1] == '\r'))
		n--;
	dst[n] = '\0';
}

static void clear_error(struct cc_pg *pg)
{
	pg->last_rc = 0;
	pg->sqlstate[0] = '\0';
	pg->message[0] = '\0';
	pg->constraint[0] = '\0';
}

CC_PRINTF(3, 4) static int set_error(struct cc_pg *pg, int rc, const char *fmt, ...)
{
	va_list ap;
	pg->last_rc = rc;
	pg->sqlstate[0] = '\0';
	pg->constraint[0] = '\0';
	va_start(ap, fmt);
	vsnprintf(pg->message, sizeof(pg->message), fmt, ap);
	va_end(ap);
	return rc;
}

/* libpq's DSN parse errors quote the offending text, which for a URI can be
 * the whole URI with its password: keep the message, blank the quotes. */
static void redact_quoted(char *msg, size_t len)
{
	char copy[CC_PG_MESSAGE_MAX];
	size_t n = 0;
	bool inside = false;

	snprintf(copy, sizeof(copy), "%s", msg);
	for (const char *r = copy; *r && n + 5 < len; r++) {
		if (*r == '"') {
			inside = !inside;
			if (inside) {
				memcpy(msg + n, "\"...\"", 5);
				n += 5;
			}
		} else if (!inside) {
			msg[n++] = *r;
		}
	}
	msg[n] = '\0';
}

/* "host:port" of conn for messages; the DSN itself is never shown. */
static void describe_server(PGconn *conn, char *buf, size_t len)
{
	const char *host = conn ? PQhost(conn) : NULL;
	const char *port = conn ? PQport(conn) : NULL;
	snprintf(buf, len, "%s:%s", host && *host ? host : "?", port && *port ? port : "?");
}

/*
 * Waits until conn's socket is readable (and writable, if want_write) or the
 * deadline passes. Returns 0 when ready, CC_ETIMEOUT, or CC_EUNAVAILABLE
 * when there is no socket or poll fails.
 */
static int wait_socket(PGconn *conn, bool want_read, bool want_write, int64_t deadline)
{
	struct pollfd p = { .fd = PQsocket(conn), .events = 0 };
	if (p.fd < 0)
		return CC_EUNAVAILABLE;
	if (want_read)
		p.events |= POLLIN;
	if (want_write)
		p.events |= POLLOUT;
	for (;;) {
		int64_t left = deadline - cc_clock_ms();
		int n = poll(&p, 1, left > 0 ? (int)(left > INT32_MAX ? INT32_MAX : left) : 0);
		if (n > 0)
			return 0; /* ready, or POLLERR/POLLHUP: libpq reads the error */
		if (n == 0)
			return CC_ETIMEOUT;
		if (errno != EINTR)
			return CC_EUNAVAILABLE;
	}
}

/* ---- connect -------------------------------------------------------------- */

/* Server notices (e.g. "there is no transaction in progress") go to the log
 * instead of libpq's default, which writes free text to stderr. */
static void notice_to_log(void *arg, const PGresult *res)
{
	const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
	const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
	(void)arg;
	cc_log_info("pg_notice", CC_LOG_STR("sqlstate", state ? state : ""), CC_LOG_STR("detail", msg ? msg : ""));
}

/*
 * Opens one PGconn within timeout_ms. Our keepalive defaults come before
 * the DSN (so it may override them); application_name after it (ours wins).
 */
static int open_conn(const char *dsn, const char *app_name, int timeout_ms, PGconn **out, char *err,
		     size_t errlen)
{
	static const char *const keys[] = { "keepalives", "keepalives_idle", "keepalives_interval",
					    "keepalives_count", "dbname", "application_name", NULL };
	const char *values[] = { "1", "30", "10", "3", dsn, app_name, NULL };
	int64_t deadline = cc_clock_ms() + timeout_ms;
	char server[128];
	char *perr = NULL;
	PQconninfoOption *parsed;
	PGconn *conn;
	PostgresPollingStatusType st = PGRES_POLLING_WRITING;
	int rc;

	/* Parse first, so a typo is CC_EINVAL rather than "unavailable".
	 * Like libpq, text without '=' or a URI prefix is a database name. */
	bool conninfo = strchr(dsn, '=') || !strncmp(dsn, "postgresql://", 13) || !strncmp(dsn, "postgres://", 11);
	parsed = conninfo ? PQconninfoParse(dsn, &perr) : NULL;
	if (conninfo && !parsed) {
		if (!perr) {
			snprintf(err, errlen, "out of memory parsing the database DSN");
			return CC_ENOMEM;
		}
		snprintf(err, errlen, "malformed database DSN: ");
		copy_line(err + strlen(err), errlen - strlen(err), perr);
		redact_quoted(err, errlen);
		PQfreemem(perr);
		return CC_EINVAL;
	}
	PQconninfoFree(parsed);

	conn = PQconnectStartParams(keys, values, 1);
	if (!conn) {
		snprintf(err, errlen, "out of memory starting a database connection");
		return CC_ENOMEM;
	}
	PQsetNoticeReceiver(conn, notice_to_log, NULL);
	for (;;) {
		if (PQstatus(conn) == CONNECTION_BAD || st == PGRES_POLLING_FAILED) {
			describe_server(conn, server, sizeof(server));
			snprintf(err, errlen, "cannot connect to postgres at %s: ", server);
			copy_line(err + strlen(err), errlen - strlen(err), PQerrorMessage(conn));
			rc = CC_EUNAVAILABLE;
			goto out_finish;
		}
		if (st == PGRES_POLLING_OK)
			break;
		rc = wait_socket(conn, st == PGRES_POLLING_READING, st == PGRES_POLLING_WRITING, deadline);
		if (rc == CC_ETIMEOUT) {
			describe_server(conn, server, sizeof(server));
			snprintf(err, errlen, "connecting to postgres at %s timed out after %d ms", server,
				 timeout_ms);
			goto out_finish;
		}
		if (rc) {
			snprintf(err, errlen, "cannot wait for the postgres socket: %s", strerror(errno));
			goto out_finish;
		}
		/* On POLLERR/POLLHUP PQconnectPoll finds the socket's own error. */
		st = PQconnectPoll(conn);
	}
	/* Nonblocking so a large send never blocks past our deadline. */
	if (PQsetnonblocking(conn, 1) != 0) {
		snprintf(err, errlen, "cannot make the postgres connection nonblocking");
		rc = CC_EUNAVAILABLE;
		goto out_finish;
	}
	*out = conn;
	return 0;
out_finish:
	PQfinish(conn);
	return rc;
}

static int apply_options(struct cc_pg *pg, const struct cc_pg_options *opt)
{
	const char *app = opt && opt->application_name ? opt->application_name : CC_PG_DEFAULT_APPLICATION_NAME;
	if (opt && (opt->connect_timeout_ms < 0 || opt->query_timeout_ms < 0))
		return CC_EINVAL;
	pg->connect_timeout_ms = opt && opt->connect_timeout_ms ? opt->connect_timeout_ms
								 : CC_PG_DEFAULT_CONNECT_TIMEOUT_MS;
	pg->query_timeout_ms = opt && opt->query_timeout_ms ? opt->query_timeout_ms : CC_PG_DEFAULT_QUERY_TIMEOUT_MS;
	pg->default_query_timeout_ms = pg->query_timeout_ms;
	pg->prepare = opt && opt->prepare_statements;
	snprintf(pg->app_name, sizeof(pg->app_name), "%s", app);
	return 0;
}

int cc_pg_connect(const char *dsn, const struct cc_pg_options *opt, struct cc_pg **out, char *err, size_t errlen)
{
	char scratch[CC_PG_MESSAGE_MAX];
	struct cc_pg *pg;
	int rc;

	if (!err || !errlen) {
		err = scratch;
		errlen = sizeof(scratch);
	}
	err[0] = '\0';
	if (!dsn || !out) {
		snprintf(err, errlen, "cc_pg_connect: NULL dsn or out");
		return CC_EINVAL;
	}
	pg = calloc(1, sizeof(*pg));
	if (!pg) {
		snprintf(err, errlen, "out of memory");
		return CC_ENOMEM;
	}
	rc = apply_options(pg, opt);
	if (rc) {
		snprintf(err, errlen, "cc_pg_connect: negative timeout");
		goto out_free;
	}
	pg->dsn = strdup(dsn);
	if (!pg->dsn) {
		snprintf(err, errlen, "out of memory");
		rc = CC_ENOMEM;
		goto out_free;
	}
	rc = open_conn(pg->dsn, pg->app_name, pg->connect_timeout_ms, &pg->conn, err, errlen);
	if (rc)
		goto out_free;
	*out = pg;
	return 0;
out_free:
	cc_pg_free(pg);
	return rc;
}

void cc_pg_free(struct cc_pg *pg)
{
	if (!pg)
		return;
	forget_prepared(pg);
	if (pg->conn)
		PQfinish(pg->conn);
	free(pg->dsn);
	free(pg);
}

/* ---- dropping and reopening ---------------------------------------------- */

static void *cancel_main(void *arg)
{
	PGcancel *cancel = arg;
	char buf[256];
	if (!PQcancel(cancel, buf, sizeof(buf)))
		cc_log_warn("pg_cancel_failed", CC_LOG_STR("detail", buf));
	PQfreeCancel(cancel);
	atomic_fetch_sub(&cancels_in_flight, 1);
	return NULL;
}

/*
 * Asks the server to cancel conn's running statement, so it does not keep
 * running (and holding locks) after we gave up on it. PQcancel blocks with
 * no timeout, so it runs on a detached thread; at most
 * CANCELS_IN_FLIGHT_MAX at once, so a hung server cannot pile them up.
 */
static void cancel_async(PGconn *conn)
{
	pthread_attr_t attr;
	pthread_t thread;
	PGcancel *cancel;

	if (atomic_fetch_add(&cancels_in_flight, 1) >= CANCELS_IN_FLIGHT_MAX)
		goto out_skip;
	cancel = PQgetCancel(conn);
	if (!cancel)
		goto out_skip;
	if (pthread_attr_init(&attr) != 0)
		goto out_free_cancel;
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&thread, &attr, cancel_main, cancel) != 0) {
		pthread_attr_destroy(&attr);
		goto out_free_cancel;
	}
	pthread_attr_destroy(&attr);
	return;
out_free_cancel:
	PQfreeCancel(cancel);
out_skip:
	atomic_fetch_sub(&cancels_in_flight, 1);
	cc_log_warn("pg_cancel_skipped", CC_LOG_INT("in_flight", atomic_load(&cancels_in_flight)));
}

/* Closes the connection; in_tx says a transaction died with it. */
static void drop_conn(struct cc_pg *pg, bool in_tx)
{
	forget_prepared(pg);
	if (pg->conn)
		PQfinish(pg->conn);
	pg->conn = NULL;
	if (in_tx)
		pg->lost_tx = true;
	if (pg->n_channels)
		pg->notify_gap = true;
}

/*
 * Notices a server that closed an idle connection (restart,
 * pg_terminate_backend, idle timeout) before we send on it, so the caller
 * gets a fresh connection instead of an error. Only reads what is already
 * there: never waits.
 */
static void check_closed(struct cc_pg *pg)
{
	struct pollfd p = { .fd = PQsocket(pg->conn), .events = POLLIN };
	bool in_tx = PQtransactionStatus(pg->conn) != PQTRANS_IDLE;
	for (int i = 0; i < 4 && p.fd >= 0 && poll(&p, 1, 0) > 0; i++) {
		if (!PQconsumeInput(pg->conn) || PQstatus(pg->conn) == CONNECTION_BAD) {
			drop_conn(pg, in_tx);
			return;
		}
	}
}

static int run_query(struct cc_pg *pg, const char *sql, int nparams, const char *const *params, PGresult **out,
		     bool prepare);

/* LISTENs on a validated channel over the open connection. The name is
 * quoted anyway, so the SQL text stays ours whatever a caller passed. */
static int send_listen(struct cc_pg *pg, const char *channel)
{
	char sql[2 * CC_PG_CHANNEL_MAX + 16];
	char *ident = PQescapeIdentifier(pg->conn, channel, strlen(channel));
	if (!ident)
		return set_error(pg, CC_ENOMEM, "out of memory quoting a channel name");
	snprintf(sql, sizeof(sql), "LISTEN %s", ident);
	PQfreemem(ident);
	return run_query(pg, sql, 0, NULL, NULL, false); /* one-off text: not worth a prepared slot */
}

/* Makes sure pg has an open connection, reopening (and re-LISTENing) a
 * dropped one unless a transaction was lost with it. */
static int ensure_conn(struct cc_pg *pg)
{
	char err[CC_PG_MESSAGE_MAX];
	int rc;

	if (pg->conn)
		check_closed(pg);
	if (pg->conn)
		return 0;
	if (pg->lost_tx)
		return set_error(pg, CC_EUNAVAILABLE,
				 "connection to postgres was lost inside a transaction; call cc_pg_rollback");
	rc = open_conn(pg->dsn, pg->app_name, pg->connect_timeout_ms, &pg->conn, err, sizeof(err));
	if (rc)
		return set_error(pg, rc, "%s", err);
	atomic_fetch_add(&stats.reconnects, 1);
	count_plain("cosmic_clash_pg_reconnects_total", "PostgreSQL connections reopened after a drop");
	cc_log_info("pg_reconnected", CC_LOG_INT("backend_pid", PQbackendPID(pg->conn)),
		    CC_LOG_INT("channels", pg->n_channels));
	for (size_t i = 0; i < pg->n_channels; i++) {
		rc = send_listen(pg, pg->channels[i]);
		if (rc) {
			drop_conn(pg, false); /* so the next call tries the whole set again */
			return rc;
		}
	}
	return 0;
}

/* ---- statements ------------------------------------------------------------ */

int cc_pg_classify_sqlstate(const char *s)
{
	if (!s || strlen(s) != 5)
		return CC_EDB;
	if (!strcmp(s, "40001") || !strcmp(s, "40P01"))
		return CC_ESERIALIZATION;
	if (!strcmp(s, "23505") || !strcmp(s, "23P01"))
		return CC_ECONFLICT;
	if (!strncmp(s, "08", 2) || !strcmp(s, "57P01") || !strcmp(s, "57P02") || !strcmp(s, "57P03"))
		return CC_EUNAVAILABLE;
	if (!strcmp(s, "57014"))
		return CC_ETIMEOUT;
	return CC_EDB;
}

/* Records a server or libpq error result on pg and returns its code;
 * drops the connection when the error means it is gone. */
static int fail_with_result(struct cc_pg *pg, const PGresult *res, bool in_tx)
{
	const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
	const char *primary = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
	const char *constraint = PQresultErrorField(res, PG_DIAG_CONSTRAINT_NAME);
	int rc = state ? cc_pg_classify_sqlstate(state) : CC_EDB;

	copy_line(pg->message, sizeof(pg->message), primary ? primary : PQresultErrorMessage(res));
	if (!pg->message[0])
		copy_line(pg->message, sizeof(pg->message), PQerrorMessage(pg->conn));
	snprintf(pg->sqlstate, sizeof(pg->sqlstate), "%s", state ? state : "");
	snprintf(pg->constraint, sizeof(pg->constraint), "%s", constraint ? constraint : "");
	if (PQstatus(pg->conn) == CONNECTION_BAD)
		rc = CC_EUNAVAILABLE;
	if (rc == CC_EUNAVAILABLE)
		drop_conn(pg, in_tx);
	pg->last_rc = rc;
	return rc;
}

static int fail_lost(struct cc_pg *pg, bool in_tx)
{
	char server[128];
	int rc;
	describe_server(pg->conn, server, sizeof(server));
	rc = set_error(pg, CC_EUNAVAILABLE, "connection to postgres at %s lost: ", server);
	copy_line(pg->message + strlen(pg->message), sizeof(pg->message) - strlen(pg->message),
		  PQerrorMessage(pg->conn));
	drop_conn(pg, in_tx);
	return rc;
}

static int fail_timeout(struct cc_pg *pg, bool in_tx)
{
	cancel_async(pg->conn);
	drop_conn(pg, in_tx);
	atomic_fetch_add(&stats.query_timeouts, 1);
	count_plain("cosmic_clash_pg_query_timeouts_total", "PostgreSQL statements abandoned at the client deadline");
	cc_log_warn("pg_query_timeout", CC_LOG_INT("timeout_ms", pg->query_timeout_ms));
	return set_error(pg, CC_ETIMEOUT, "postgres statement timed out after %d ms (cancelled)",
			 pg->query_timeout_ms);
}

/* Answers a PQsend* call that refused to send. */
static int fail_send(struct cc_pg *pg, bool in_tx)
{
	if (PQstatus(pg->conn) == CONNECTION_BAD)
		return fail_lost(pg, in_tx);
	set_error(pg, CC_EDB, "cannot send statement: ");
	copy_line(pg->message + strlen(pg->message), sizeof(pg->message) - strlen(pg->message),
		  PQerrorMessage(pg->conn));
	return CC_EDB;
}

/*
 * Flushes what a PQsend* call queued and collects the results by the
 * deadline. The first error result decides the outcome; otherwise the last
 * result is handed out through out (if not NULL).
 */
static int collect(struct cc_pg *pg, int64_t deadline, bool in_tx, PGresult **out)
{
	PGresult *ok = NULL, *bad = NULL, *res;
	int rc = 0, flushed;

	while ((flushed = PQflush(pg->conn)) != 0) {
		if (flushed < 0)
			return fail_lost(pg, in_tx);
		rc = wait_socket(pg->conn, true, true, deadline);
		if (rc == CC_ETIMEOUT)
			return fail_timeout(pg, in_tx);
		/* Read while sending, or a server blocked on its own output deadlocks us. */
		if (rc || !PQconsumeInput(pg->conn))
			return fail_lost(pg, in_tx);
	}
	for (;;) {
		while (!PQisBusy(pg->conn)) {
			res = PQgetResult(pg->conn);
			if (!res)
				goto out_done;
			switch (PQresultStatus(res)) {
			case PGRES_COPY_IN:
			case PGRES_COPY_OUT:
			case PGRES_COPY_BOTH:
				/* PQgetResult would return this forever; COPY is not ours. */
				PQclear(res);
				rc = set_error(pg, CC_EINVAL, "COPY is not supported by cc_pg_exec");
				drop_conn(pg, in_tx);
				goto out_clear;
			case PGRES_COMMAND_OK:
			case PGRES_TUPLES_OK:
			case PGRES_EMPTY_QUERY:
				PQclear(ok);
				ok = res;
				break;
			default:
				if (bad)
					PQclear(res);
				else
					bad = res;
				break;
			}
		}
		rc = wait_socket(pg->conn, true, false, deadline);
		if (rc == CC_ETIMEOUT) {
			rc = fail_timeout(pg, in_tx);
			goto out_clear;
		}
		if (rc || !PQconsumeInput(pg->conn)) {
			rc = fail_lost(pg, in_tx);
			goto out_clear;
		}
	}
out_done:
	if (bad) {
		rc = fail_with_result(pg, bad, in_tx);
		goto out_clear;
	}
	if (PQstatus(pg->conn) == CONNECTION_BAD) {
		rc = fail_lost(pg, in_tx);
		goto out_clear;
	}
	if (out) {
		*out = ok;
		ok = NULL;
	}
out_clear:
	PQclear(ok);
	PQclear(bad);
	return rc;
}

/*
 * Finds sql among the statements prepared on this connection, preparing it
 * first when there is room (pg.h says why and what to watch for). Returns 0 with *slot the entry, or -1 when the cache is full (the caller
 * runs the statement unnamed), or the error of the Parse (a syntax error
 * is reported here exactly as an unnamed run would report it).
 */
static int find_prepared(struct cc_pg *pg, const char *sql, int nparams, int64_t deadline, bool in_tx,
			 int *slot)
{
	uint64_t hash = cc_hash_fnv1a64(sql, strlen(sql));
	char name[24];
	int rc;

	for (size_t i = 0; i < pg->n_prepared; i++) {
		const struct prepared_stmt *p = &pg->prepared[i];
		if (p->hash == hash && p->nparams == nparams && strcmp(p->sql, sql) == 0) {
			*slot = (int)i;
			return 0;
		}
	}
	*slot = -1;
	char *copy = pg->n_prepared < PREPARED_MAX ? strdup(sql) : NULL;
	if (!copy)
		return 0; /* full (or out of memory): unnamed still works */
	unsigned seq = pg->prepare_seq++;
	snprintf(name, sizeof(name), "cc_%u", seq);
	if (!PQsendPrepare(pg->conn, name, sql, nparams, NULL)) {
		free(copy);
		return fail_send(pg, in_tx);
	}
	rc = collect(pg, deadline, in_tx, NULL);
	if (rc) {
		free(copy);
		return rc;
	}
	pg->prepared[pg->n_prepared] = (struct prepared_stmt){ .hash = hash, .sql = copy, .nparams = nparams, .seq = seq };
	*slot = (int)pg->n_prepared++;
	return 0;
}

/*
 * Runs one statement on an open connection within the query timeout:
 * prepared (see find_prepared) when prepare is set, else unnamed.
 */
static int run_query(struct cc_pg *pg, const char *sql, int nparams, const char *const *params, PGresult **out,
		     bool prepare)
{
	int64_t deadline = cc_clock_ms() + pg->query_timeout_ms;
	bool in_tx = PQtransactionStatus(pg->conn) != PQTRANS_IDLE;
	char name[24];
	int slot = -1, rc, sent;

	if (prepare && pg->prepare) {
		rc = find_prepared(pg, sql, nparams, deadline, in_tx, &slot);
		if (rc)
			return rc;
	}
	if (slot >= 0) {
		snprintf(name, sizeof(name), "cc_%u", pg->prepared[slot].seq);
		sent = PQsendQueryPrepared(pg->conn, name, nparams, params, NULL, NULL, 0);
	} else {
		sent = PQsendQueryParams(pg->conn, sql, nparams, NULL, params, NULL, NULL, 0);
	}
	if (!sent)
		return fail_send(pg, in_tx);
	rc = collect(pg, deadline, in_tx, out);
	/* 26000: the session lost its statements (DEALLOCATE ALL, DISCARD ALL);
	 * 0A000: a cached plan's result type changed under a migration. Start
	 * over with fresh names; this call's error stands. */
	if (rc && slot >= 0 && (!strcmp(pg->sqlstate, "26000") || !strcmp(pg->sqlstate, "0A000")))
		forget_prepared(pg);
	return rc;
}

int cc_pg_exec(struct cc_pg *pg, const char *sql, int nparams, const char *const *params, PGresult **out)
{
	int rc;

	if (!pg)
		return CC_EINVAL;
	clear_error(pg);
	if (!sql || nparams < 0 || nparams > CC_PG_MAX_PARAMS || (nparams > 0 && !params))
		return set_error(pg, CC_EINVAL, "cc_pg_exec: bad arguments");
	rc = ensure_conn(pg);
	if (rc)
		return rc;
	return run_query(pg, sql, nparams, params, out, true);
}

int cc_pg_rollback(struct cc_pg *pg)
{
	if (!pg)
		return CC_EINVAL;
	if (pg->lost_tx) {
		pg->lost_tx = false; /* the transaction died with the connection */
		return 0;
	}
	if (!pg->conn || PQtransactionStatus(pg->conn) == PQTRANS_IDLE)
		return 0;
	return cc_pg_exec(pg, "ROLLBACK", 0, NULL, NULL);
}

void cc_pg_set_query_timeout(struct cc_pg *pg, int ms)
{
	if (pg && ms > 0)
		pg->query_timeout_ms = ms;
}

const char *cc_pg_sqlstate(const struct cc_pg *pg)
{
	return pg ? pg->sqlstate : "";
}

const char *cc_pg_error_message(const struct cc_pg *pg)
{
	return pg ? pg->message : "";
}

const char *cc_pg_error_constraint(const struct cc_pg *pg)
{
	return pg ? pg->constraint : "";
}

int cc_pg_backend_pid(const struct cc_pg *pg)
{
	return pg && pg->conn ? PQbackendPID(pg->conn) : 0;
}

bool cc_pg_is_broken(const struct cc_pg *pg)
{
	return !pg || !pg->conn || PQstatus(pg->conn) == CONNECTION_BAD;
}

/* ---- SERIALIZABLE transactions ----------------------------------------------- */

unsigned cc_pg_backoff_cap_ms(int attempt)
{
	unsigned cap = CC_PG_BACKOFF_BASE_MS;
	for (int i = 1; i < attempt && cap < CC_PG_BACKOFF_CAP_MS; i++)
		cap *= 2;
	return cap < CC_PG_BACKOFF_CAP_MS ? cap : CC_PG_BACKOFF_CAP_MS;
}

/* xorshift64*: jitter needs spread, not secrecy; one state per thread. */
static uint64_t jitter_random(void)
{
	static _Thread_local uint64_t state;
	if (!state) {
		state = (uint64_t)cc_clock_ns() ^ (uint64_t)(uintptr_t)&state;
		state |= 1;
	}
	state ^= state >> 12;
	state ^= state << 25;
	state ^= state >> 27;
	return state * 2685821657736338717ull;
}

/* Sleeps a uniformly random time in [0, cap(attempt)] ("full jitter"). */
static void backoff_sleep(int attempt)
{
	uint64_t us = jitter_random() % ((uint64_t)cc_pg_backoff_cap_ms(attempt) * 1000 + 1);
	struct timespec until = cc_clock_timespec(cc_clock_ns() + (int64_t)us * 1000);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR) {
	}
}

/* COMMIT, refusing to "commit" a transaction a failed statement aborted
 * (the server would silently answer ROLLBACK). */
static int commit(struct cc_pg *pg)
{
	PGresult *res = NULL;
	int rc;

	if (pg->conn && PQtransactionStatus(pg->conn) == PQTRANS_INERROR) {
		rc = pg->last_rc ? pg->last_rc : CC_EDB;
		if (!pg->last_rc)
			set_error(pg, rc, "transaction body returned 0 after a statement failed");
		return rc;
	}
	rc = cc_pg_exec(pg, "COMMIT", 0, NULL, &res);
	if (rc == 0 && strcmp(PQcmdStatus(res), "COMMIT") != 0)
		rc = set_error(pg, CC_EDB, "COMMIT answered %s", PQcmdStatus(res));
	PQclear(res);
	return rc;
}

/* Rolls back but keeps the error that caused it readable for the caller. */
static void rollback_keep_error(struct cc_pg *pg)
{
	char sqlstate[sizeof(pg->sqlstate)], message[sizeof(pg->message)], constraint[sizeof(pg->constraint)];
	int last_rc = pg->last_rc;

	memcpy(sqlstate, pg->sqlstate, sizeof(sqlstate));
	memcpy(message, pg->message, sizeof(message));
	memcpy(constraint, pg->constraint, sizeof(constraint));
	if (cc_pg_rollback(pg) != 0)
		drop_conn(pg, false); /* the server discards the transaction with the session */
	pg->lost_tx = false;
	pg->last_rc = last_rc;
	memcpy(pg->sqlstate, sqlstate, sizeof(sqlstate));
	memcpy(pg->message, message, sizeof(message));
	memcpy(pg->constraint, constraint, sizeof(constraint));
}

/* The body of both runners: begin is the BEGIN statement (its isolation level). */
static int run_transaction(struct cc_pg *pg, const char *begin, int max_attempts, cc_pg_tx_fn fn, void *arg)
{
	int rc = 0, attempt;

	if (!pg || !fn || max_attempts < 1)
		return CC_EINVAL;
	clear_error(pg);
	if (pg->in_run || pg->lost_tx || (pg->conn && PQtransactionStatus(pg->conn) != PQTRANS_IDLE))
		return set_error(pg, CC_EINVAL, "cc_pg_run_serializable called inside a transaction");
	pg->in_run = true;
	pg->tx_attempts = 0;
	for (attempt = 1;; attempt++) {
		pg->tx_attempts = attempt;
		rc = cc_pg_exec(pg, begin, 0, NULL, NULL);
		if (rc == 0)
			rc = fn(pg, arg);
		if (rc == 0)
			rc = commit(pg);
		if (rc == 0)
			break;
		rollback_keep_error(pg);
		if (rc != CC_ESERIALIZATION)
			break;
		if (attempt >= max_attempts) {
			rc = CC_ERETRY_EXHAUSTED;
			break;
		}
		atomic_fetch_add(&stats.serialization_retries, 1);
		count_plain("cosmic_clash_pg_serialization_retries_total",
			    "SERIALIZABLE attempts retried after a serialization failure or deadlock");
		backoff_sleep(attempt);
	}
	pg->in_run = false;
	if (rc == 0) {
		atomic_fetch_add(&stats.committed, 1);
		count_transaction("committed");
	} else if (rc == CC_ERETRY_EXHAUSTED) {
		atomic_fetch_add(&stats.retry_exhausted, 1);
		count_transaction("exhausted");
		count_plain("cosmic_clash_pg_retry_exhausted_total",
			    "SERIALIZABLE transactions that failed every attempt");
		cc_log_warn("pg_retry_exhausted", CC_LOG_INT("attempts", attempt), CC_LOG_STR("sqlstate", pg->sqlstate));
	} else {
		atomic_fetch_add(&stats.rolled_back, 1);
		count_transaction("rolled_back");
	}
	return rc;
}

int cc_pg_run_serializable(struct cc_pg *pg, cc_pg_tx_fn fn, void *arg)
{
	return run_transaction(pg, "BEGIN ISOLATION LEVEL SERIALIZABLE", CC_PG_MAX_ATTEMPTS, fn, arg);
}

int cc_pg_run_serializable_budget(struct cc_pg *pg, int max_attempts, cc_pg_tx_fn fn, void *arg)
{
	return run_transaction(pg, "BEGIN ISOLATION LEVEL SERIALIZABLE", max_attempts, fn, arg);
}

int cc_pg_run_locked(struct cc_pg *pg, cc_pg_tx_fn fn, void *arg)
{
	return run_transaction(pg, "BEGIN ISOLATION LEVEL READ COMMITTED", CC_PG_MAX_ATTEMPTS, fn, arg);
}

int cc_pg_tx_attempts(const struct cc_pg *pg)
{
	return pg ? pg->tx_attempts : 0;
}

/* ---- LISTEN / NOTIFY -------------------------------------------------------------- */

bool cc_pg_channel_valid(const char *channel)
{
	/* An unquoted identifier: a digit may not lead. */
	return cc_charset_valid(channel, CC_PG_CHANNEL_MAX, CC_CHARSET_LOWER | CC_CHARSET_DIGIT, "_") &&
	       !cc_charset_has(channel[0], CC_CHARSET_DIGIT, NULL);
}

int cc_pg_listen(struct cc_pg *pg, const char *channel)
{
	int rc;

	if (!pg)
		return CC_EINVAL;
	clear_error(pg);
	if (!cc_pg_channel_valid(channel))
		return set_error(pg, CC_EINVAL, "invalid channel name");
	for (size_t i = 0; i < pg->n_channels; i++)
		if (!strcmp(pg->channels[i], channel))
			return 0;
	if (pg->conn && PQtransactionStatus(pg->conn) != PQTRANS_IDLE)
		return set_error(pg, CC_EINVAL, "cc_pg_listen called inside a transaction");
	if (pg->n_channels >= CC_PG_MAX_CHANNELS)
		return set_error(pg, CC_ETOOBIG, "already listening on %d channels", CC_PG_MAX_CHANNELS);
	rc = ensure_conn(pg);
	if (rc)
		return rc;
	rc = send_listen(pg, channel);
	if (rc)
		return rc;
	snprintf(pg->channels[pg->n_channels++], CC_PG_CHANNEL_MAX + 1, "%s", channel);
	return 0;
}

int cc_pg_notify(struct cc_pg *pg, const char *channel, const char *payload)
{
	const char *params[2] = { channel, payload ? payload : "" };
	if (!pg)
		return CC_EINVAL;
	clear_error(pg);
	if (!cc_pg_channel_valid(channel))
		return set_error(pg, CC_EINVAL, "invalid channel name");
	if (strlen(params[1]) > CC_PG_NOTIFY_PAYLOAD_MAX)
		return set_error(pg, CC_ETOOBIG, "notification payload over %d bytes", CC_PG_NOTIFY_PAYLOAD_MAX);
	return cc_pg_exec(pg, "SELECT pg_notify($1, $2)", 2, params, NULL);
}

/* Hands out one queued notification, if any: 1 taken, 0 none, or CC_ETOOBIG. */
static int take_notify(struct cc_pg *pg, char *channel_out, size_t channel_len, char *payload_out,
		       size_t payload_len)
{
	PGnotify *n = PQnotifies(pg->conn);
	int rc = 1;
	if (!n)
		return 0;
	if (strlen(n->relname) >= channel_len || strlen(n->extra) >= payload_len) {
		rc = set_error(pg, CC_ETOOBIG, "notification on %s does not fit the caller's buffers", n->relname);
		goto out_free;
	}
	memcpy(channel_out, n->relname, strlen(n->relname) + 1);
	memcpy(payload_out, n->extra, strlen(n->extra) + 1);
out_free:
	PQfreemem(n);
	return rc;
}

int cc_pg_wait_notify(struct cc_pg *pg, int timeout_ms, char *channel_out, size_t channel_len, char *payload_out,
		      size_t payload_len)
{
	int64_t deadline = cc_clock_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	int rc;

	if (!pg)
		return CC_EINVAL;
	clear_error(pg);
	if (timeout_ms < 0 || !channel_out || !channel_len || !payload_out || !payload_len)
		return set_error(pg, CC_EINVAL, "cc_pg_wait_notify: bad arguments");
	if (pg->conn)
		check_closed(pg);
	/* A listener must learn of every gap (even one a statement already
	 * reconnected over), so it can rescan what it may have missed. */
	if (pg->notify_gap) {
		pg->notify_gap = false;
		return set_error(pg, CC_EUNAVAILABLE, "connection to postgres was lost; notifications may have been missed");
	}
	rc = ensure_conn(pg);
	if (rc)
		return rc;
	for (;;) {
		bool in_tx = PQtransactionStatus(pg->conn) != PQTRANS_IDLE;
		rc = take_notify(pg, channel_out, channel_len, payload_out, payload_len);
		if (rc)
			return rc > 0 ? 0 : rc;
		rc = wait_socket(pg->conn, true, false, deadline);
		if (rc == CC_ETIMEOUT)
			return set_error(pg, CC_ETIMEOUT, "no notification within %d ms", timeout_ms);
		if (rc || !PQconsumeInput(pg->conn) || PQstatus(pg->conn) == CONNECTION_BAD)
			return fail_lost(pg, in_tx);
	}
}

/* ---- pool ------------------------------------------------------------------------ */

struct cc_pg_pool *cc_pg_pool_create(const char *dsn, size_t size, const struct cc_pg_options *opt)
{
	struct cc_pg_pool *pool;

	if (!dsn || size < 1 || size > POOL_SIZE_MAX ||
	    (opt && (opt->connect_timeout_ms < 0 || opt->query_timeout_ms < 0)))
		return NULL;
	pool = calloc(1, sizeof(*pool));
	if (!pool)
		return NULL;
	pool->dsn = strdup(dsn);
	pool->idle = calloc(size, sizeof(*pool->idle));
	if (!pool->dsn || !pool->idle)
		goto out_free;
	if (opt)
		pool->opt = *opt;
	snprintf(pool->app_name, sizeof(pool->app_name), "%s",
		 opt && opt->application_name ? opt->application_name : CC_PG_DEFAULT_APPLICATION_NAME);
	pool->opt.application_name = pool->app_name;
	pool->size = size;
	if (pthread_mutex_init(&pool->lock, NULL) != 0)
		goto out_free;
	/* Monotonic waits: a wall-clock step must not stretch an acquire. */
	if (cc_clock_cond_init(&pool->returned) != 0)
		goto out_mutex;
	return pool;
out_mutex:
	pthread_mutex_destroy(&pool->lock);
out_free:
	free(pool->idle);
	free(pool->dsn);
	free(pool);
	return NULL;
}

int cc_pg_pool_acquire(struct cc_pg_pool *pool, int timeout_ms, struct cc_pg **out)
{
	struct timespec until;
	struct cc_pg *pg = NULL;
	char err[CC_PG_MESSAGE_MAX];
	int rc = 0;

	if (!pool || !out || timeout_ms < 0)
		return CC_EINVAL;
	until = cc_clock_timespec(cc_clock_ns() + (int64_t)timeout_ms * 1000000);

	pthread_mutex_lock(&pool->lock);
	for (;;) {
		if (pool->n_idle) {
			pg = pool->idle[--pool->n_idle];
			pool->lent++;
			goto out_unlock;
		}
		if (pool->open < pool->size)
			break;
		if (pthread_cond_timedwait(&pool->returned, &pool->lock, &until) == ETIMEDOUT &&
		    !pool->n_idle && pool->open >= pool->size) {
			rc = CC_ETIMEOUT;
			goto out_unlock;
		}
	}
	/* Reserve the slot, then connect without holding the lock. */
	pool->open++;
	pthread_mutex_unlock(&pool->lock);
	rc = cc_pg_connect(pool->dsn, &pool->opt, &pg, err, sizeof(err));
	pthread_mutex_lock(&pool->lock);
	if (rc) {
		pool->open--;
		pthread_cond_signal(&pool->returned);
		cc_log_warn("pg_pool_connect_failed", CC_LOG_STR("error", cc_errname(rc)), CC_LOG_STR("detail", err));
		goto out_unlock;
	}
	pg->pool = pool;
	pool->lent++;
out_unlock:
	pthread_mutex_unlock(&pool->lock);
	if (rc == 0)
		*out = pg;
	return rc;
}

/* Returns a connection to a clean state for its next borrower; false when
 * it cannot be reused and must be closed. */
static bool tidy_for_reuse(struct cc_pg *pg)
{
	PGnotify *n;

	pg->query_timeout_ms = pg->default_query_timeout_ms;
	if (pg->lost_tx || !pg->conn || PQstatus(pg->conn) == CONNECTION_BAD)
		return false;
	if (PQtransactionStatus(pg->conn) != PQTRANS_IDLE && cc_pg_rollback(pg) != 0)
		return false;
	if (pg->n_channels) {
		if (cc_pg_exec(pg, "UNLISTEN *", 0, NULL, NULL) != 0)
			return false;
		pg->n_channels = 0;
		pg->notify_gap = false;
		while ((n = PQnotifies(pg->conn)) != NULL)
			PQfreemem(n);
	}
	clear_error(pg);
	return pg->conn != NULL;
}

void cc_pg_pool_release(struct cc_pg_pool *pool, struct cc_pg *pg)
{
	bool reusable;

	if (!pg)
		return;
	if (!pool || pg->pool != pool)
		CC_BUG("cc_pg_pool_release: connection does not belong to this pool");
	reusable = tidy_for_reuse(pg);
	if (!reusable)
		cc_pg_free(pg);
	pthread_mutex_lock(&pool->lock);
	pool->lent--;
	if (reusable)
		pool->idle[pool->n_idle++] = pg;
	else
		pool->open--;
	pthread_cond_signal(&pool->returned);
	pthread_mutex_unlock(&pool->lock);
}

void cc_pg_pool_stats_get(struct cc_pg_pool *pool, struct cc_pg_pool_stats *out)
{
	pthread_mutex_lock(&pool->lock);
	out->size = pool->size;
	out->open = pool->open;
	out->idle = pool->n_idle;
	out->lent = pool->lent;
	pthread_mutex_unlock(&pool->lock);
}

void cc_pg_pool_free(struct cc_pg_pool *pool)
{
	if (!pool)
		return;
	if (pool->lent)
		CC_BUG("cc_pg_pool_free: connections are still lent");
	for (size_t i = 0; i < pool->n_idle; i++)
		cc_pg_free(pool->idle[i]);
	pthread_cond_destroy(&pool->returned);
	pthread_mutex_destroy(&pool->lock);
	free(pool->idle);
	free(pool->dsn);
	free(pool);
}

/* ---- reading results -------------------------------------------------------------- */

const char *cc_pg_get_text(const PGresult *res, int row, int col)
{
	if (!res || row < 0 || col < 0 || row >= PQntuples(res) || col >= PQnfields(res) ||
	    PQgetisnull(res, row, col))
		return NULL;
	return PQgetvalue(res, row, col);
}

int cc_pg_get_int64(const PGresult *res, int row, int col, int64_t *out)
{
	const char *text = cc_pg_get_text(res, row, col);
	char *end;
	long long v;

	if (!text)
		return CC_ENOTFOUND;
	errno = 0;
	v = strtoll(text, &end, 10);
	if (errno || end == text || *end)
		return CC_EINVAL;
	*out = (int64_t)v;
	return 0;
}

int cc_pg_get_bool(const PGresult *res, int row, int col, bool *out)
{
	const char *text = cc_pg_get_text(res, row, col);

	if (!text)
		return CC_ENOTFOUND;
	if (strcmp(text, "t") && strcmp(text, "f"))
		return CC_EINVAL;
	*out = text[0] == 't';
	return 0;
}

int64_t cc_pg_rows_affected(const PGresult *res)
{
	const char *text = res ? PQcmdTuples((PGresult *)res) : NULL;
	int64_t n = 0;
	for (; text && *text >= '0' && *text <= '9'; text++)
		n = n * 10 + (*text - '0');
	return n;
}

int cc_pg_exec_text(struct cc_pg *pg, const char *sql, int nparams, const char *const *params, char **out)
{
	PGresult *res = NULL;
	int rc = cc_pg_exec(pg, sql, nparams, params, &res);
	if (rc != 0)
		return rc;
	char *text = NULL;
	if (PQntuples(res) != 1 || PQnfields(res) < 1)
		rc = CC_ENOTFOUND;
	else if (!(text = strdup(PQgetvalue(res, 0, 0))))
		rc = CC_ENOMEM;
	PQclear(res);
	if (rc == 0)
		*out = text;
	return rc;
}
