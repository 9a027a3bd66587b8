/*
 * maintenance.h - cc-maintenance (SPEC 9): the sweeps that keep a
 * long-running system clean and every match moving.
 *
 * One process runs every sweep, each on its own interval (its own flags,
 * defaults from SPEC), on one thread in turn: a sweep's pass runs batches
 * of at most --batch rows until a batch comes back short, the pass has
 * run --pass-budget-ms, or the service stops. Each batch is one
 * SERIALIZABLE transaction (sys/pg.h, retried on conflict) that selects
 * its rows FOR UPDATE SKIP LOCKED and changes them only through the store
 * function the request paths use, so any number of replicas run safely
 * and each row is processed once.
 *
 * A sweep is a row in the table of main.c: a name (the metrics' sweep
 * label), its interval, and a batch function. The framework (main.c)
 * calls the batch function in a transaction, and records for the sweep:
 *   cosmic_clash_maintenance_rows_total{sweep}           rows processed
 *   cosmic_clash_maintenance_lag_rows{sweep}             rows due (past the window): the count a batch
 *                                                        reported (out->lag >= 0), minus the rows done
 *                                                        since by later batches of the pass (out->lag -1)
 *   cosmic_clash_maintenance_batch_seconds{sweep}        one batch
 *   cosmic_clash_maintenance_pass_seconds{sweep}         one pass
 *   cosmic_clash_maintenance_failures_total{sweep}       batches that failed (rolled back)
 *   cosmic_clash_maintenance_last_pass_timestamp_seconds{sweep}
 *
 * The Redis candidate index (--redis-host; none without it): a batch that
 * moves tickets (expiry, the match sweeps) records them in the batch's
 * moves (maint_moves_take below), and main.c applies them to the index
 * after the commit (cc_candidate_index_apply_moves), never for an attempt
 * that rolled back, so a ticket a sweep requeues is in a Redis-fed
 * matcher's index at once and one it ends leaves it. Failures never fail a
 * batch: they are counted in
 *   cosmic_clash_maintenance_candidate_index_errors_total{op}
 * (op "put", "remove", "overflow") and logged at most once per 10 s.
 *
 * Ownership: struct maint lives in main.c for the process's life; the
 * sweeps read its config and may keep per-sweep state in their own file.
 */
#ifndef CC_MAINTENANCE_H
#define CC_MAINTENANCE_H

#include <stdbool.h>
#include <stdint.h>

#include "sys/cc.h"
#include "sys/pg.h"
#include "sys/service.h"
#include "store/tickets.h"

struct maint_config {
	int64_t batch;          /* rows per batch transaction */
	int64_t pass_budget_ms; /* one pass of one sweep runs at most this long */
	int64_t ticket_ttl_seconds; /* a requeued ticket's fresh heartbeat deadline (cc-api's --ticket-ttl-seconds) */

	/* expiry */
	int64_t expiry_interval_ms;
	int64_t expiry_grace_seconds;       /* proposals overdue by more than this (the matcher's pass expires them first) */
	/* stalled matches */
	int64_t stalled_interval_ms;
	int64_t stalled_after_seconds;      /* ALLOCATING/PROCESS_READY/ASSIGNMENT_READY longer than this: FAILED */
	/* dead game servers */
	int64_t server_silent_interval_ms;
	int64_t server_silent_after_seconds; /* no heartbeat for this long: the server is lost */
	/* no-shows */
	int64_t no_show_interval_ms;
	int64_t no_show_after_seconds;       /* the game server's connect window plus a grace */
	/* results that never arrive */
	int64_t result_missing_interval_ms;
	int64_t result_missing_after_seconds;
	/* seasons */
	int64_t season_interval_ms;
	int64_t season_weeks;
	/* retention */
	int64_t retention_interval_ms;
	int64_t idempotency_retention_hours;
	int64_t outbox_published_retention_hours;
	int64_t outbox_dead_letter_retention_days;
	int64_t session_retention_hours;     /* past expiry or revocation */
	int64_t probe_retention_minutes;     /* past expiry */
	int64_t finished_retention_days;     /* terminal tickets and proposals that never made a match */
	/* outbox dispatch */
	int64_t outbox_interval_ms;
	int64_t outbox_max_attempts;         /* a row failing this many times is dead-lettered */
	int64_t outbox_retry_ms;             /* a failed row is tried again after this */
	int64_t outbox_wake_gap_ms; /* after a NOTIFY 'outbox', dispatch at most this often (0: no LISTEN, poll only) */
	/* the process */
	bool once;                           /* run every sweep one pass (until drained or the budget) and exit */

	struct cc_service_options svc;
};

/*
 * What one batch did, filled by the sweep's batch function. A sweep with
 * metrics of its own sets committed: main.c calls it once after the
 * batch's transaction committed, and never for an attempt that rolled
 * back or was retried, so those metrics count committed work exactly (the
 * batch function itself cannot tell whether its attempt will commit).
 */
#define MAINT_BATCH_TALLIES 8
struct maint_batch {
	int64_t rows;   /* rows processed (changed) by this batch */
	int64_t lag;    /* rows due past the window when the batch began (-1: unknown) */
	int64_t picked; /* rows the batch selected (< batch: the pass is over) */
	void (*committed)(const struct maint_batch *b); /* NULL, or called after the commit */
	int64_t tally[MAINT_BATCH_TALLIES]; /* the sweep's own counts for committed() */
};

/*
 * The ticket moves of one batch attempt, in chunks (a store call fills at
 * most one struct cc_ticket_moves). Allocated once at start-up when there
 * is an index, absent without one. MAINT_MOVES_CHUNKS chunks hold a
 * default batch (500) of expired tickets (40 a chunk) and any match batch
 * (at most 50 matches, two or more a chunk); a batch that fills them (more
 * than 1,280 tickets, or proposals of many players: two to thirteen a
 * chunk) ends early and the pass goes on with the next, so no move is ever
 * dropped for want of room.
 */
#define MAINT_MOVES_CHUNKS 32
struct maint_moves {
	struct cc_ticket_moves *chunk; /* [MAINT_MOVES_CHUNKS], or NULL: no index, nothing is recorded */
	size_t n;                      /* chunks this attempt used (the framework empties it per attempt) */
};

struct maint {
	const struct maint_config *cfg;
	struct cc_service *svc;
	const char *replica; /* this process's name in logs (host:pid) */
	int64_t pass_batch;  /* batches this pass ran before the current one (0: the first; a sweep
			      * may count its lag only then, the framework subtracting what it did since) */
	struct maint_moves moves; /* this batch's ticket moves, for the index after the commit */
};

/*
 * Where a batch's next store call records the tickets it moves, with room
 * for at least room (1..CC_TICKET_MOVES_MAX) more: *out is the current
 * chunk when it has that room, else a fresh one, or NULL when this process
 * keeps no index (pass it on: the store records nothing). Returns false
 * when the batch has no chunk left: stop before that call and report a
 * full pick (out->picked = --batch), so the pass goes on with a new batch.
 */
bool maint_moves_take(struct maint *m, size_t room, struct cc_ticket_moves **out) CC_MUST_CHECK;

/*
 * A sweep's batch: runs inside a SERIALIZABLE transaction on pg (may be
 * retried as a whole: reset *out first). Returns 0 or an error (the
 * transaction rolls back, the failure is counted, the pass ends).
 */
typedef int (*maint_batch_fn)(struct cc_pg *pg, struct maint *m, struct maint_batch *out);

/* ---- the sweeps of sweeps.c (expiry, seasons, retention) -------------------- */

int maint_expire_tickets_batch(struct cc_pg *pg, struct maint *m, struct maint_batch *out);
int maint_expire_proposals_batch(struct cc_pg *pg, struct maint *m, struct maint_batch *out);
int maint_season_batch(struct cc_pg *pg, struct maint *m, struct maint_batch *out);
int maint_purge_idempotency_batch(struct cc_pg *pg, struct maint *m, struct maint_batch *out);
int maint_purge_outbox_published_batch(struct cc_pg *pg, struct maint *m, struct maint_batch *out);
int maint_purge_outbox_dead_letters_batch(struct cc_pg *pg, struct maint *m, struct maint_batch *out);
int maint_purge_sessions_batch(struct cc_pg *pg, struct maint *m, struct maint_batch *out);
int maint_purge_probes_batch(struct cc_pg *pg, struct maint *m, struct maint_batch *out);
int maint_purge_proposals_batch(struct cc_pg *pg, struct maint *m, struct maint_batch *out);
int maint_purge_tickets_batch(struct cc_pg *pg, struct maint *m, struct maint_batch *out);

/* ---- the match sweeps of matches.c (store/match_settle.h) ------------------ */

int maint_stalled_batch(struct cc_pg *pg, struct maint *m, struct maint_batch *out);
int maint_server_silent_batch(struct cc_pg *pg, struct maint *m, struct maint_batch *out);
int maint_no_show_batch(struct cc_pg *pg, struct maint *m, struct maint_batch *out);
int maint_result_missing_batch(struct cc_pg *pg, struct maint *m, struct maint_batch *out);

/* ---- the outbox dispatcher (dispatch.c) ------------------------------------ */

/*
 * One dispatch batch: the next pending row of each aggregate (in id
 * order, never one behind an earlier pending row of the same resource),
 * handed to the consumers (the NOTIFY fan-out on channel "cc_events");
 * a delivered row is marked published, a failed one has its attempts
 * counted and is dead-lettered at --outbox-max-attempts. Sets
 * out->committed: the dispatcher's counters and gauges move only when
 * main.c calls it after the commit.
 */
int maint_outbox_batch(struct cc_pg *pg, struct maint *m, struct maint_batch *out);

/* Declares the dispatcher's own metrics (before the admin server starts). */
void maint_outbox_metrics(void);

#endif
