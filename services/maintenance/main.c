/*
 * cc-maintenance: the sweeps that keep a long-running system clean and
 * every match moving (SPEC 9). See maintenance.h for the framework's
 * contract and README.md ("cc-maintenance") for every sweep, its flags and
 * what it guarantees.
 *
 * main() reads the configuration (its own rows plus the skeleton's
 * database, admin and log rows: sys/service.h), refuses any static
 * problem naming every one, starts the admin server (/metrics, /healthz,
 * /readyz) and lets the skeleton run the sweep loop on its own thread
 * until SIGINT/SIGTERM (or, with --once, until every sweep ran one pass).
 *
 * The loop: every sweep whose interval has come runs one pass, in table
 * order; then the loop sleeps until the next sweep is due (a stop cuts the
 * sleep short). A pass runs batches until one comes back short (the
 * backlog is drained), --pass-budget-ms has passed, or the service stops.
 * Each batch is one SERIALIZABLE transaction (cc_pg_run_serializable,
 * retried on conflict; the outbox dispatcher's at READ COMMITTED, below) whose rows are picked FOR UPDATE SKIP LOCKED, so
 * any number of replicas share the work and none takes a row twice. A
 * failed batch is logged and counted, ends its pass, and the next pass
 * runs at its interval as usual; a database that is down is waited out
 * (not ready, no exit).
 *
 * With --redis-host, the ticket moves a batch recorded (maintenance.h:
 * maint_moves_take) are applied to the Redis candidate index once the
 * batch has committed, as cc-api does after a request; Redis being down
 * costs at most one --redis-timeout-ms per batch (the index answers at
 * once after a transport failure) and never fails a batch.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "maintenance.h"
#include "store/candidate_index.h"
#include "sys/admin.h"
#include "sys/clock.h"
#include "sys/config.h"
#include "sys/log.h"
#include "sys/metrics.h"
#include "sys/service.h"
#include "sys/banned.h"

#define OPT(field) offsetof(struct maint_config, field)

/* One row per interval flag, with its help; the window flags follow their sweep. */
#define INTERVAL(flag, field, dflt, what)                                                     \
	{ .name = flag, .type = CC_CFG_INT, .default_value = dflt, .min = 100, .max = 86400000, \
	  .help = "run the " what " sweep this often (ms)", .offset = OPT(field) }

static const struct cc_config_option maint_options[] = {
	{ .name = "batch", .type = CC_CFG_INT, .default_value = "500", .min = 1, .max = 10000,
	  .help = "rows one batch transaction takes at most (a concurrent request waits at most one batch)",
	  .offset = OPT(batch) },
	{ .name = "pass-budget-ms", .type = CC_CFG_INT, .default_value = "10000", .min = 10, .max = 3600000,
	  .help = "one pass of one sweep runs batches at most this long, so every sweep gets its turn",
	  .offset = OPT(pass_budget_ms) },
	{ .name = "ticket-ttl-seconds", .type = CC_CFG_INT, .default_value = "30", .min = 5, .max = 3600,
	  .help = "a requeued ticket's fresh heartbeat deadline (cc-api's --ticket-ttl-seconds)",
	  .offset = OPT(ticket_ttl_seconds) },
	{ .name = "once", .type = CC_CFG_BOOL, .default_value = "false",
	  .help = "run every sweep one pass and exit (status 1 if a batch failed)", .offset = OPT(once) },

	INTERVAL("expiry-interval-ms", expiry_interval_ms, "2000", "ticket and proposal expiry"),
	{ .name = "expiry-grace-seconds", .type = CC_CFG_INT, .default_value = "5", .min = 0, .max = 3600,
	  .help = "expire only proposals overdue by more than this: the sweep is the backstop for when no "
		  "cc-matcher runs, and stays off the proposals its pass is expiring at that moment",
	  .offset = OPT(expiry_grace_seconds) },

	INTERVAL("stalled-interval-ms", stalled_interval_ms, "5000", "stalled-match"),
	{ .name = "stalled-after-seconds", .type = CC_CFG_INT, .default_value = "120", .min = 1, .max = 86400,
	  .help = "a match in ALLOCATING, PROCESS_READY or ASSIGNMENT_READY this long is FAILED, its players "
		  "requeued without penalty (SPEC 9: 2 min)",
	  .offset = OPT(stalled_after_seconds) },

	INTERVAL("server-silent-interval-ms", server_silent_interval_ms, "5000", "dead-game-server"),
	{ .name = "server-silent-after-seconds", .type = CC_CFG_INT, .default_value = "30", .min = 1, .max = 86400,
	  .help = "a match IN_PROGRESS or RESULT_PENDING whose server sent no heartbeat this long is FAILED, "
		  "nobody rated or penalised",
	  .offset = OPT(server_silent_after_seconds) },

	INTERVAL("no-show-interval-ms", no_show_interval_ms, "5000", "initial-connect no-show"),
	{ .name = "no-show-after-seconds", .type = CC_CFG_INT, .default_value = "45", .min = 1, .max = 86400,
	  .help = "after ASSIGNMENT_READY, a participant who never connected this long is a no-show "
		  "(cc-gameserver's --connect-window-seconds 30 plus a grace)",
	  .offset = OPT(no_show_after_seconds) },

	INTERVAL("result-missing-interval-ms", result_missing_interval_ms, "10000", "missing-result"),
	{ .name = "result-missing-after-seconds", .type = CC_CFG_INT, .default_value = "300", .min = 1, .max = 86400,
	  .help = "a match in RESULT_PENDING this long without a result is FAILED, its players released (longer "
		  "than cc-gameserver's result retries: --end-linger-ms + --result-timeout-ms, 31 s by default, 240 s at most)",
	  .offset = OPT(result_missing_after_seconds) },

	INTERVAL("season-interval-ms", season_interval_ms, "60000", "season rollover"),
	{ .name = "season-weeks", .type = CC_CFG_INT, .default_value = "12", .min = 1, .max = 520,
	  .help = "length of a ranked season (SPEC 9: 12 weeks)", .offset = OPT(season_weeks) },

	INTERVAL("retention-interval-ms", retention_interval_ms, "60000", "retention purge"),
	{ .name = "idempotency-retention-hours", .type = CC_CFG_INT, .default_value = "48", .min = 1, .max = 87600,
	  .help = "keep an Idempotency-Key this long (past any client's retry of its enqueue, and past the "
		  "session that sent it)",
	  .offset = OPT(idempotency_retention_hours) },
	{ .name = "outbox-published-retention-hours", .type = CC_CFG_INT, .default_value = "24", .min = 1,
	  .max = 87600, .help = "keep a published outbox row this long", .offset = OPT(outbox_published_retention_hours) },
	{ .name = "outbox-dead-letter-retention-days", .type = CC_CFG_INT, .default_value = "30", .min = 1, .max = 3650,
	  .help = "keep a dead-lettered outbox row this long (the longest window: operators replay them)",
	  .offset = OPT(outbox_dead_letter_retention_days) },
	{ .name = "session-retention-hours", .type = CC_CFG_INT, .default_value = "168", .min = 1, .max = 87600,
	  .help = "keep a session this long past its expiry or revocation", .offset = OPT(session_retention_hours) },
	{ .name = "probe-retention-minutes", .type = CC_CFG_INT, .default_value = "60", .min = 1, .max = 525600,
	  .help = "keep a probe challenge this long past its expiry", .offset = OPT(probe_retention_minutes) },
	{ .name = "finished-retention-days", .type = CC_CFG_INT, .default_value = "30", .min = 1, .max = 3650,
	  .help = "keep tickets and proposals that ended without a match this long",
	  .offset = OPT(finished_retention_days) },

	INTERVAL("outbox-interval-ms", outbox_interval_ms, "1000", "outbox dispatch"),
	{ .name = "outbox-max-attempts", .type = CC_CFG_INT, .default_value = "10", .min = 1, .max = 1000,
	  .help = "an outbox row whose delivery failed this many times is dead-lettered",
	  .offset = OPT(outbox_max_attempts) },
	{ .name = "outbox-retry-ms", .type = CC_CFG_INT, .default_value = "5000", .min = 10, .max = 3600000,
	  .help = "a failed outbox row is tried again after this", .offset = OPT(outbox_retry_ms) },
	{ .name = "outbox-wake-gap-ms", .type = CC_CFG_INT, .default_value = "5", .min = 0, .max = 60000,
	  .help = "dispatch as soon as a writer NOTIFYs 'outbox', at most this often (0: no LISTEN, poll at --outbox-interval-ms only)",
	  .offset = OPT(outbox_wake_gap_ms) },
};

static const struct cc_service_spec maint_spec = {
	.program = "cc-maintenance",
	.summary = "Cosmic Clash maintenance: expiry, stalled and abandoned matches, seasons, retention purges.",
	.options = maint_options,
	.n_options = CC_ARRAY_LEN(maint_options),
	.shared = CC_SERVICE_DATABASE | CC_SERVICE_DB_TIMEOUT | CC_SERVICE_REDIS | CC_SERVICE_ADMIN | CC_SERVICE_LOG,
	.shared_offset = offsetof(struct maint_config, svc),
	.admin_port = "9184",
};

/* ---- the sweep table ----------------------------------------------------------- */

struct sweep {
	const char *name;     /* the metrics' sweep label and the log's */
	size_t interval;      /* offset of its interval in struct maint_config */
	maint_batch_fn batch;
	bool read_committed;  /* a SKIP LOCKED work queue whose every decision is guarded by row locks (cc_pg_run_locked) */
	int64_t next_ms;      /* monotonic time its next pass is due */
	int64_t began_ms;     /* monotonic time its last pass began */
	int64_t lag_base;     /* the lag the pass counted (-1: none yet) */
	int64_t since_base;   /* rows done since it was counted */
};

#define SWEEP(n, field, fn) { .name = n, .interval = OPT(field), .batch = fn, .lag_base = -1 }
/*
 * The outbox dispatcher runs at READ COMMITTED: two replicas' claims always
 * read each other's rows, so under SERIALIZABLE one of every overlapping
 * pair aborted (40001), counted as failed batches that tripped the
 * failing-batches alert. Its order per aggregate rests on row locks (a head
 * another replica holds makes the rows behind it ineligible) and on the
 * re-check of a locked row's newest version, not on a snapshot:
 * test_outbox_dispatch races two dispatchers at both levels.
 */
#define SWEEP_LOCKED(n, field, fn) { .name = n, .interval = OPT(field), .batch = fn, .read_committed = true, .lag_base = -1 }

/*
 * In order: a pass of each due sweep per round. Dispatch first (a round of
 * slow purges never delays an event more than one pass of each); the
 * proposal purge before the ticket purge (their FKs).
 */
static struct sweep sweeps[] = {
	SWEEP_LOCKED("outbox", outbox_interval_ms, maint_outbox_batch),
	SWEEP("expire_tickets", expiry_interval_ms, maint_expire_tickets_batch),
	SWEEP("expire_proposals", expiry_interval_ms, maint_expire_proposals_batch),
	SWEEP("no_show", no_show_interval_ms, maint_no_show_batch),
	SWEEP("stalled", stalled_interval_ms, maint_stalled_batch),
	SWEEP("server_silent", server_silent_interval_ms, maint_server_silent_batch),
	SWEEP("result_missing", result_missing_interval_ms, maint_result_missing_batch),
	SWEEP("season", season_interval_ms, maint_season_batch),
	SWEEP("purge_idempotency", retention_interval_ms, maint_purge_idempotency_batch),
	SWEEP("purge_outbox_published", retention_interval_ms, maint_purge_outbox_published_batch),
	SWEEP("purge_outbox_dead_letters", retention_interval_ms, maint_purge_outbox_dead_letters_batch),
	SWEEP("purge_sessions", retention_interval_ms, maint_purge_sessions_batch),
	SWEEP("purge_probes", retention_interval_ms, maint_purge_probes_batch),
	SWEEP("purge_proposals", retention_interval_ms, maint_purge_proposals_batch),
	SWEEP("purge_tickets", retention_interval_ms, maint_purge_tickets_batch),
};

/* ---- state ------------------------------------------------------------------------- */

struct metrics {
	struct cc_metric *rows, *lag, *batch_seconds, *pass_seconds, *failures, *last_pass;
	struct cc_metric *index_errors; /* {op}: candidate index changes that failed */
};

struct maint_state {
	struct maint m;
	struct cc_pg *pg;
	struct cc_pg_options pg_opt;
	struct metrics metrics;
	struct cc_candidate_index *index; /* NULL: no --redis-host */
	char replica[96];
	pthread_mutex_t lock; /* guards db_ready, db_why (read by /readyz) */
	bool db_ready;
	char db_why[160];
	int64_t failed_batches; /* since start (--once: the exit status) */
	struct cc_pg *listener; /* LISTENs on 'outbox' (cc_outbox_append's wake-up); NULL: not now */
	int64_t listener_retry_ms; /* when to try opening it again */
};

static struct cc_service service;

static int64_t cfg_interval(const struct maint_config *cfg, const struct sweep *s)
{
	return *(const int64_t *)((const char *)cfg + s->interval);
}

static void set_db(struct maint_state *st, bool ready, const char *why)
{
	pthread_mutex_lock(&st->lock);
	st->db_ready = ready;
	if (why)
		snprintf(st->db_why, sizeof st->db_why, "%s", why);
	pthread_mutex_unlock(&st->lock);
}

/* ---- one batch, one pass ------------------------------------------------------------- */

struct batch_tx {
	struct maint_state *st;
	struct sweep *s;
	struct maint_batch out;
};

static int batch_body(struct cc_pg *pg, void *arg)
{
	struct batch_tx *tx = arg;
	tx->out = (struct maint_batch){ .lag = -1 };
	tx->st->m.moves.n = 0; /* a retried attempt records its own moves */
	return tx->s->batch(pg, &tx->st->m, &tx->out);
}

bool maint_moves_take(struct maint *m, size_t room, struct cc_ticket_moves **out)
{
	struct maint_moves *mv = &m->moves;
	*out = NULL;
	if (!mv->chunk)
		return true;
	if (mv->n > 0 && CC_TICKET_MOVES_MAX - mv->chunk[mv->n - 1].n >= room) {
		*out = &mv->chunk[mv->n - 1];
		return true;
	}
	if (mv->n == MAINT_MOVES_CHUNKS)
		return false;
	*out = &mv->chunk[mv->n++];
	cc_ticket_moves_reset(*out);
	return true;
}

/* After the commit: the batch's ticket moves into the candidate index (best effort, counted). */
static void apply_moves(struct maint_state *st, const struct sweep *s)
{
	size_t failed = 0, tickets = 0;
	for (size_t i = 0; i < st->m.moves.n; i++) {
		failed += cc_candidate_index_apply_moves(st->index, &st->m.moves.chunk[i], st->metrics.index_errors);
		tickets += st->m.moves.chunk[i].n;
	}
	if (tickets)
		cc_log_debug("candidate_index_applied", CC_LOG_STR("sweep", s->name), CC_LOG_INT("tickets", tickets),
			     CC_LOG_INT("failed", failed));
	st->m.moves.n = 0;
}

/* Wall-clock seconds, for the last-pass timestamp only (Prometheus compares it with time()). */
static double wall_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Opens the work connection if needed; false (logged, not ready) when the database is down. */
static bool connect_db(struct maint_state *st)
{
	char err[256] = "";
	if (st->pg)
		return true;
	int rc = cc_pg_connect(st->m.cfg->svc.database_url, &st->pg_opt, &st->pg, err, sizeof err);
	if (rc != 0) {
		cc_log_emit(st->db_ready ? CC_LOG_WARN : CC_LOG_DEBUG, "db_unavailable",
			    (struct cc_log_field[]){ CC_LOG_STR("error", cc_errname(rc)), CC_LOG_STR("reason", err) }, 2);
		set_db(st, false, "the database is unreachable");
		return false;
	}
	return true;
}

/* Updates the lag gauge from a batch: a fresh count, or the pass's count minus the rows done since. */
static void record_lag(struct maint_state *st, struct sweep *s, const struct maint_batch *b)
{
	const char *label[] = { s->name };
	if (b->lag >= 0) {
		s->lag_base = b->lag;
		s->since_base = 0;
	}
	if (s->lag_base < 0)
		return;
	s->since_base += b->rows;
	int64_t lag = s->lag_base - s->since_base;
	cc_metric_set(st->metrics.lag, label, (double)(lag > 0 ? lag : 0));
}

/* One pass of sweep s; returns false when a batch failed. */
static bool run_pass(struct maint_state *st, struct sweep *s)
{
	const struct maint_config *cfg = st->m.cfg;
	const char *label[] = { s->name };
	int64_t started = cc_clock_ms(), rows = 0;
	bool ok = true;

	s->lag_base = -1;
	for (st->m.pass_batch = 0; !cc_service_stopping(&service); st->m.pass_batch++) {
		if (!connect_db(st)) { /* a batch that could not even begin: a failure too */
			cc_metric_add(st->metrics.failures, label, 1);
			st->failed_batches++;
			ok = false;
			break;
		}
		struct batch_tx tx = { .st = st, .s = s };
		int64_t t0 = cc_clock_ns();
		int rc = s->read_committed ? cc_pg_run_locked(st->pg, batch_body, &tx)
					 : cc_pg_run_serializable(st->pg, batch_body, &tx);
		double secs = (double)(cc_clock_ns() - t0) / 1e9;
		if (rc != 0) {
			cc_metric_add(st->metrics.failures, label, 1);
			st->failed_batches++;
			cc_log_warn("batch_failed", CC_LOG_STR("sweep", s->name), CC_LOG_STR("error", cc_errname(rc)),
				    CC_LOG_STR("sqlstate", cc_pg_sqlstate(st->pg)),
				    CC_LOG_STR("message", cc_pg_error_message(st->pg)), CC_LOG_STR("replica", st->replica));
			if (rc == CC_EUNAVAILABLE || rc == CC_ETIMEOUT) {
				cc_pg_free(st->pg); /* reconnect on the next pass */
				st->pg = NULL;
				set_db(st, false, "the database connection was lost");
			}
			ok = false;
			break;
		}
		set_db(st, true, NULL);
		apply_moves(st, s);
		if (tx.out.committed) /* the sweep's own metrics, for committed work only (maintenance.h) */
			tx.out.committed(&tx.out);
		cc_log_debug("batch", CC_LOG_STR("sweep", s->name), CC_LOG_INT("rows", tx.out.rows),
			     CC_LOG_INT("lag", tx.out.lag), CC_LOG_DBL("seconds", secs));
		cc_metric_observe(st->metrics.batch_seconds, label, secs);
		cc_metric_add(st->metrics.rows, label, (double)tx.out.rows);
		record_lag(st, s, &tx.out);
		rows += tx.out.rows;
		if (tx.out.picked < cfg->batch || cc_clock_ms() - started >= cfg->pass_budget_ms)
			break;
	}
	double pass_secs = (double)(cc_clock_ms() - started) / 1e3;
	if (ok) {
		cc_metric_observe(st->metrics.pass_seconds, label, pass_secs);
		cc_metric_set(st->metrics.last_pass, label, wall_seconds());
	}
	/* Quiet when idle: a pass every few seconds that did nothing is no news. */
	cc_log_emit(rows ? CC_LOG_INFO : CC_LOG_DEBUG, "pass",
		    (struct cc_log_field[]){ CC_LOG_STR("sweep", s->name), CC_LOG_INT("rows", rows),
					     CC_LOG_INT("batches", st->m.pass_batch + (ok ? 1 : 0)),
					     CC_LOG_INT("lag", s->lag_base < 0 ? -1 : s->lag_base - s->since_base),
					     CC_LOG_DBL("seconds", pass_secs), CC_LOG_BOOL("ok", ok) },
		    6);
	return ok;
}

/*
 * Sleeps until the monotonic time next, cut short by a stop or by a
 * writer's NOTIFY 'outbox' (then the outbox sweep is due at once, but not
 * sooner than --outbox-wake-gap-ms after its last pass began): an event
 * reaches its listeners in milliseconds, not after a poll interval. A lost
 * listener is reopened after a second (meanwhile the loop polls as before),
 * and then the outbox sweep runs at once: a wake-up sent while nobody
 * listened is lost.
 */
static void nap_or_wake(struct maint_state *st, struct sweep *outbox, int64_t next)
{
	const struct maint_config *cfg = st->m.cfg;
	if (cfg->outbox_wake_gap_ms == 0 || cfg->once) {
		(void)cc_service_nap(&service, next - cc_clock_ms());
		return;
	}
	if (!st->listener && cc_clock_ms() >= st->listener_retry_ms) {
		char err[256] = "";
		struct cc_pg_options opt = st->pg_opt;
		opt.application_name = "cc-maintenance-wake";
		if (cc_pg_connect(cfg->svc.database_url, &opt, &st->listener, err, sizeof err) != 0 ||
		    cc_pg_listen(st->listener, "outbox") != 0) {
			cc_pg_free(st->listener);
			st->listener = NULL;
			st->listener_retry_ms = cc_clock_ms() + 1000;
		} else {
			/* a row written while nobody listened woke nobody: dispatch now */
			outbox->next_ms = cc_clock_ms();
			return;
		}
	}
	char channel[16], payload[64];
	while (!cc_service_stopping(&service)) {
		int64_t left = next - cc_clock_ms();
		if (left <= 0)
			return;
		if (!st->listener) {
			(void)cc_service_nap(&service, left < 1000 ? left : 1000);
			return;
		}
		int rc = cc_pg_wait_notify(st->listener, (int)(left < 100 ? left : 100), channel, sizeof channel, payload,
					   sizeof payload);
		if (rc == 0) {
			while (cc_pg_wait_notify(st->listener, 0, channel, sizeof channel, payload, sizeof payload) == 0)
				; /* one pass answers the whole burst */
			int64_t soonest = outbox->began_ms + cfg->outbox_wake_gap_ms;
			if (outbox->next_ms > soonest)
				outbox->next_ms = soonest;
			if (outbox->next_ms < next)
				next = outbox->next_ms;
		} else if (rc != CC_ETIMEOUT) {
			cc_pg_free(st->listener);
			st->listener = NULL;
			st->listener_retry_ms = cc_clock_ms() + 1000;
		}
	}
}

static void *maint_loop(void *arg)
{
	struct maint_state *st = arg;
	const struct maint_config *cfg = st->m.cfg;
	for (size_t i = 0; i < CC_ARRAY_LEN(sweeps); i++)
		sweeps[i].next_ms = cc_clock_ms();
	while (!cc_service_stopping(&service)) {
		int64_t now = cc_clock_ms(), next = now + 1000;
		for (size_t i = 0; i < CC_ARRAY_LEN(sweeps) && !cc_service_stopping(&service); i++) {
			struct sweep *s = &sweeps[i];
			if (cfg->once || s->next_ms <= now) {
				int64_t began = cc_clock_ms();
				s->began_ms = began;
				(void)run_pass(st, s);
				s->next_ms = began + cfg_interval(cfg, s);
			}
			if (s->next_ms < next)
				next = s->next_ms;
		}
		if (cfg->once)
			break;
		nap_or_wake(st, &sweeps[0], next); /* sweeps[0] is the outbox (the table says why) */
	}
	cc_pg_free(st->listener);
	st->listener = NULL;
	if (cfg->once && st->failed_batches)
		cc_service_fail(&service, "a batch failed during --once");
	return NULL;
}

/* Ready once a batch has reached PostgreSQL, and while they keep doing so. */
static bool maint_ready(void *ctx, char *why, size_t whylen)
{
	struct maint_state *st = ctx;
	pthread_mutex_lock(&st->lock);
	bool ok = st->db_ready;
	if (!ok)
		snprintf(why, whylen, "%s", st->db_why);
	pthread_mutex_unlock(&st->lock);
	return ok;
}

/* What the table cannot check; prints every problem, false when any. */
static bool maint_configure(const struct maint_config *cfg)
{
	bool ok = true;
	char *errmsg = NULL;
	if (cfg->outbox_dead_letter_retention_days * 24 < cfg->outbox_published_retention_hours) {
		fprintf(stderr, "cc-maintenance: --outbox-dead-letter-retention-days (%lld days) must keep dead letters at "
				"least as long as --outbox-published-retention-hours (%lld h) keeps published rows\n",
			(long long)cfg->outbox_dead_letter_retention_days, (long long)cfg->outbox_published_retention_hours);
		ok = false;
	}
	if (cfg->stalled_after_seconds <= cfg->no_show_after_seconds) {
		fprintf(stderr, "cc-maintenance: --stalled-after-seconds (%lld) must exceed --no-show-after-seconds (%lld): "
				"a match waiting for a no-show is settled as a no-show, not failed as stalled\n",
			(long long)cfg->stalled_after_seconds, (long long)cfg->no_show_after_seconds);
		ok = false;
	}
	PQconninfoOption *opts = PQconninfoParse(cfg->svc.database_url, &errmsg);
	if (!opts) {
		fprintf(stderr, "cc-maintenance: --database-url: not a valid PostgreSQL connection string\n");
		ok = false;
	}
	PQconninfoFree(opts);
	PQfreemem(errmsg);
	return ok;
}

static void declare_metrics(struct metrics *mm)
{
	static const double batch_buckets[] = { 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5 };
	static const double pass_buckets[] = { 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60 };
	const char *const sweep[] = { "sweep", NULL };
	size_t n = CC_ARRAY_LEN(sweeps) + 8;
	mm->rows = cc_counter("cosmic_clash_maintenance_rows_total", "Rows each sweep processed (changed or deleted).",
			      sweep, n);
	mm->lag = cc_gauge("cosmic_clash_maintenance_lag_rows",
			   "Rows past their sweep's window (due and not yet processed), as the last batch saw them.", sweep, n);
	mm->batch_seconds = cc_histogram("cosmic_clash_maintenance_batch_seconds", "Duration of one batch transaction.",
					 sweep, n, batch_buckets, CC_ARRAY_LEN(batch_buckets));
	mm->pass_seconds = cc_histogram("cosmic_clash_maintenance_pass_seconds", "Duration of one pass of a sweep.",
					sweep, n, pass_buckets, CC_ARRAY_LEN(pass_buckets));
	mm->failures = cc_counter("cosmic_clash_maintenance_failures_total",
				  "Batches that failed and rolled back (the pass ends; the next runs at its interval).", sweep, n);
	mm->last_pass = cc_gauge("cosmic_clash_maintenance_last_pass_timestamp_seconds",
				 "Unix time the sweep last completed a pass without a failure.", sweep, n);
	const char *const op[] = { "op", NULL };
	mm->index_errors = cc_counter("cosmic_clash_maintenance_candidate_index_errors_total",
				      "Candidate index changes after a committed batch that failed (Redis down or slow, "
				      "or moves beyond a buffer); the batch still counts",
				      op, 8);
}

/*
 * The candidate index from --redis-host (none: disabled, said once) with
 * the move buffers a batch fills. Redis being down is no error (connections
 * are lazy); false only when the index or its buffers cannot be created.
 */
static bool open_index(struct maint_state *st)
{
	const struct cc_service_options *o = &st->m.cfg->svc;
	if (!o->redis_host || !*o->redis_host) {
		cc_log_info("candidate_index_disabled", CC_LOG_STR("reason", "no --redis-host"));
		return true;
	}
	st->index = cc_candidate_index_create(o->redis_host, (int)o->redis_port, (int)o->redis_timeout_ms, 1);
	st->m.moves.chunk = calloc(MAINT_MOVES_CHUNKS, sizeof *st->m.moves.chunk);
	if (!st->index || !st->m.moves.chunk)
		return false;
	cc_log_info("candidate_index_enabled", CC_LOG_STR("host", o->redis_host), CC_LOG_INT("port", o->redis_port),
		    CC_LOG_INT("timeout_ms", o->redis_timeout_ms));
	return true;
}

int main(int argc, char **argv)
{
	struct maint_config cfg = { 0 };
	struct maint_state *st = NULL;
	struct cc_admin *admin = NULL;
	int status = 1;

	cc_service_load_or_exit(&service, &maint_spec, argc, argv, &cfg, NULL);
	if (!maint_configure(&cfg)) {
		fprintf(stderr, "cc-maintenance: see --help\n");
		status = 2;
		goto out;
	}
	st = calloc(1, sizeof *st);
	if (!st) {
		cc_log_error("start_failed", CC_LOG_STR("reason", "out of memory"));
		goto out;
	}
	pthread_mutex_init(&st->lock, NULL);
	snprintf(st->db_why, sizeof st->db_why, "no batch has reached the database yet");
	char host[64] = "unknown";
	if (gethostname(host, sizeof host) != 0)
		snprintf(host, sizeof host, "unknown");
	host[sizeof host - 1] = '\0';
	snprintf(st->replica, sizeof st->replica, "%s:%d", host, (int)getpid());
	st->m = (struct maint){ .cfg = &cfg, .svc = &service, .replica = st->replica };
	st->pg_opt = (struct cc_pg_options){ .query_timeout_ms = (int)cfg.svc.db_timeout_ms,
					     .application_name = "cc-maintenance" };
	cc_service_start(&service);
	declare_metrics(&st->metrics);
	maint_outbox_metrics();
	if (!open_index(st)) {
		cc_log_error("start_failed", CC_LOG_STR("reason", "candidate index"));
		goto out;
	}
	admin = cc_admin_start_service(&service, maint_ready, st);
	if (!admin)
		goto out;
	cc_log_info("started", CC_LOG_STR("replica", st->replica), CC_LOG_INT("sweeps", CC_ARRAY_LEN(sweeps)),
		    CC_LOG_INT("batch", cfg.batch), CC_LOG_BOOL("once", cfg.once), CC_LOG_INT("admin_port", cc_admin_port(admin)));
	status = cc_service_run(&service, maint_loop, st);
out:
	cc_admin_stop(admin);
	if (st) {
		cc_pg_free(st->pg);
		cc_candidate_index_free(st->index);
		free(st->m.moves.chunk);
		pthread_mutex_destroy(&st->lock);
		free(st);
	}
	cc_service_release(&service);
	return status;
}
