/*
 * matcher.h - what cc-matcher's files share: the configuration, the
 * process context, and one matching pass (pass.c).
 *
 * main.c owns the context: it fills it at start-up, runs the loop on one
 * worker thread (the only user of the database handles, the candidate
 * array and the workspace), and frees it after that thread has joined.
 * Only db_ready / db_why are read from other threads (the admin's /readyz),
 * under the lock.
 */
#ifndef CC_MATCHER_H
#define CC_MATCHER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "store/candidate_index.h"
#include "store/candidates.h"
#include "store/formation_claim.h"
#include "sys/config.h"
#include "game/formation.h"
#include "game/playlist.h"
#include "game/queue_pass.h"
#include "sys/metrics.h"
#include "sys/pg.h"
#include "sys/service.h"

#define MATCHER_ID_MAX 96

/*
 * A formation claimed at the end of its pass, in one batch with the rest
 * (pass.c): the ticket ids and build are copied, so the batch does not
 * depend on the working set staying put until then.
 */
struct matcher_pending {
	struct cc_formation f;                                 /* region, teams, quality for the log */
	char ticket_id[CC_FORMATION_MAX_PLAYERS][CC_UUID_BUF]; /* f's tickets, in f's order */
	char build[CC_CANDIDATE_BUILD_MAX + 1];
	int32_t protocol_version;
};

/* cc-matcher's configuration, filled from the option table in main.c. */
struct matcher_config {
	char *playlist;                     /* a name from game/playlist.c (required) */
	int64_t team_size;                  /* 0 = the playlist's own */
	int64_t poll_interval_ms;           /* a pass at least this often without NOTIFY */
	int64_t min_pass_interval_ms;       /* NOTIFY storms never run passes closer than this */
	int64_t lease_timeout_ms;           /* a stalled replica loses the pass lease after this */
	double tolerance_start;             /* ranked: rating points at zero wait (-1 = the playlist's) */
	double tolerance_growth_per_second; /* ranked: widening per second of the anchor's wait (-1 = the playlist's) */
	double tolerance_cap;               /* ranked: the widest tolerance (-1 = the playlist's) */
	char *formation_rule;               /* greedy | pairing | sweep (game/formation.h) */
	double rate_reference_per_second;   /* ranked: arrivals/s below which growth speeds up (0 = off) */
	double max_rtt_ms;                  /* a region counts for a player within this RTT (SPEC 6: 100) */
	int64_t proposal_window_seconds;    /* players have this long to answer (SPEC 7: 10) */
	char *matcher_id;                   /* recorded on proposals; unset = hostname-pid */
	struct cc_service_options svc;      /* database, Redis, admin port, log level (sys/service.h) */
};

/* Metric handles (declared once in main.c). */
struct matcher_metrics {
	struct cc_metric *passes;           /* {playlist, result}: passes run, ok, error or standby */
	struct cc_metric *proposals;        /* {playlist}: proposals committed */
	struct cc_metric *expired;          /* {playlist}: overdue proposals expired */
	struct cc_metric *claim_conflicts;  /* {playlist, kind}: claims lost (lost | retry_exhausted) */
	struct cc_metric *refusals;         /* {playlist, reason}: formations refused */
	struct cc_metric *pass_seconds;     /* {playlist}: histogram of pass duration */
	struct cc_metric *candidates;       /* {playlist, source}: candidates read */
	struct cc_metric *reads;            /* {playlist, source}: passes by candidate source */
	struct cc_metric *redis_fallbacks;  /* {playlist, reason}: index down or empty */
	struct cc_metric *index_errors;     /* {op}: index refreshes after an expiry that failed */
};

/* The process context. Large (candidates + workspace): allocate it on the heap. */
struct matcher {
	const struct matcher_config *cfg;
	char id[MATCHER_ID_MAX];                 /* --matcher-id or hostname-pid */
	struct cc_formation_params params;       /* the playlist's, overridden by the flags */
	struct cc_queue_pass_config pass_cfg;    /* pages and working set (cc_queue_pass_defaults) */
	bool run_again;                          /* the last pass formed matches: the next starts at once */
	bool standby;                            /* the last pass found the lease taken */
	bool tables_checked;                     /* the playlists and arenas tables were found equal to the compiled lists */
	char tables_why[192];                    /* "" or how one differs (then no pass runs) */
	struct cc_pg_options pg_opt;
	struct cc_pg *pg;                        /* the work connection; NULL until first connected */
	struct cc_pg *listener;                  /* LISTEN connection; NULL until first connected */
	bool listening;                          /* LISTEN succeeded on listener */
	struct cc_candidate_index *index;        /* NULL: no Redis configured */
	struct matcher_metrics metrics;
	unsigned long failed_passes;             /* consecutive failed passes (quiets repeated warnings) */
	pthread_mutex_t lock;                    /* guards db_ready and db_why */
	bool db_ready;                           /* the last pass reached PostgreSQL */
	char db_why[192];                        /* why not, for /readyz */
	struct cc_queue_pass qp;                 /* the working set and the cursor past a deep wall */
	size_t n_pending;                        /* formations of this pass not claimed yet */
	struct matcher_pending pending[CC_CLAIM_BATCH_MAX];
};

/*
 * Runs one pass: take the pass lease (without it: a standby pass that
 * does nothing), expiry hook, then cc_queue_pass_run (game/queue_pass.h)
 * over pages read here (the head from Redis, else PostgreSQL; later pages
 * from PostgreSQL), again while it keeps forming and the batch has room,
 * then claim everything formed in one batch (CC_CLAIM_BATCH_MAX at most
 * per transaction), give the lease back. Sets
 * run_again and standby; m->qp keeps the cursor. Returns 0, or the error that
 * ended it (already logged and counted); the caller just carries on.
 */
int matcher_pass(struct matcher *m);

/* Records whether PostgreSQL answered (for /readyz). */
void matcher_set_db_state(struct matcher *m, int rc);

#endif
