/*
 * queue_pass.h - one matching pass over a queue read page by page (SPEC 6),
 * pure: the pages come from a read callback and formations go to a claim
 * callback, so cc-matcher (services/matcher/pass.c: Redis or PostgreSQL,
 * the claim transaction), the queue simulation (tests/bench/queue_sim.c)
 * and the unit tests drive the very same logic.
 *
 * Why a working set: a page formed on its own strands a ticket whose only
 * partners sit on another page (issue 9: the head page sees ticket 1, the
 * next page sees ticket 21, and neither forms the pair). So a pass keeps
 * every ticket it read and did not match in one working set, oldest first:
 *
 *   1. read the head page (head_page tickets) into the working set;
 *   2. form over the whole working set (game/formation.h: the oldest
 *      unmatched ticket anchors first, claims go to the claim callback);
 *      claimed tickets and tickets lost to a race leave the set, refused
 *      ones stay (a later page may hold their partners), unusable ones
 *      (expired, reaching no region) leave it;
 *   3. if that formed a match, the pass ends (cc-matcher runs the next one
 *      at once, from the head); if the queue ended, the pass ends;
 *   4. otherwise read the next page (page tickets, keyset after the last
 *      ticket read) into the set and go to 2, while the set can take a
 *      whole page (max_working) and fewer than max_pages reads were made.
 *
 * The guarantee: a pass that forms nothing has looked at every ticket it
 * read at once, so no valid match remains among them (formation refuses
 * an anchor only when no match with it exists among the remaining set,
 * and claims only shrink the set). A pass reads at most max_working +
 * page tickets and makes at most max_pages reads, so its cost is bounded
 * whatever the queue holds.
 *
 * Deeper than one pass reaches: when the set is full (or the reads are
 * spent) before the queue ends, the pass leaves a cursor (the last ticket
 * it read), and the next pass reads its head page and then goes on from
 * the cursor instead of from the head page's end, coming back to the same
 * page while that page keeps forming and clearing the cursor at the end of
 * the queue. So a wall of tickets nobody can match, however deep, hides
 * nobody behind it; tickets between the head page and the cursor meet the
 * ones past the cursor only once they have moved up (older tickets matched
 * or left).
 *
 * One clock per pass: every round uses the head read's now_ms, so the
 * tolerances and expiries of the set do not move between its rounds (what
 * one round refused stays refused; the claim re-checks in the database).
 *
 * The arrival rate (issue 25: widening that reacts to it, game/formation.h):
 * the pass counts the distinct tickets it reads whose queued_at lies in the
 * last CC_ARRIVAL_WINDOW_MS, remembered across passes, and gives every
 * round's workspace count / window as ws.arrival_rate_per_s. Every ticket
 * that matches or waits until a pass reads it is counted; one that leaves
 * unread is not. The count stops at CC_ARRIVAL_MAX (about 4 per second,
 * ten times any reference worth setting), which keeps it bounded.
 *
 * Ownership: the caller allocates struct cc_queue_pass (about 1.2 MiB:
 * heap or static, never the stack), calls cc_queue_pass_init once and
 * keeps it across passes (it carries the cursor). It allocates nothing.
 */
#ifndef CC_GAME_QUEUE_PASS_H
#define CC_GAME_QUEUE_PASS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "game/candidate.h"
#include "game/formation.h"
#include "sys/cc.h"

#define CC_QUEUE_PASS_MAX_WORKING CC_FORMATION_MAX_CANDIDATES /* tickets formed over at once */
#define CC_QUEUE_PASS_READ_FACTOR 10  /* SPEC 6: the head page is 10x the match size ... */
#define CC_QUEUE_PASS_READ_CAP 200    /* ... at most 200; later pages are this size */
#define CC_QUEUE_PASS_MAX_PAGES 16    /* reads per pass, the head page included */
/* cc-matcher's default pacing, shared with queue_sim so the simulation runs the production loop. */
#define CC_QUEUE_PASS_POLL_MS 500         /* --poll-interval-ms: a pass at least this often */
#define CC_QUEUE_PASS_MIN_INTERVAL_MS 50  /* --min-pass-interval-ms: wake-ups closer than this wait */

struct cc_queue_pass_config {
	struct cc_formation_params params; /* formation rules */
	size_t head_page;                  /* tickets of the first read (1..max_working) */
	size_t page;                       /* tickets of each later read (1..max_working) */
	size_t max_pages;                  /* reads per pass, >= 1 */
	size_t max_working;                /* a page is read only while the set can take it whole */
};

/*
 * cc-matcher's defaults for params (which must be valid): head page 10x the
 * match size (cap 200), later pages of 200, 16 reads, a working set of
 * CC_QUEUE_PASS_MAX_WORKING. queue_sim takes the same ones.
 */
void cc_queue_pass_defaults(const struct cc_formation_params *params, struct cc_queue_pass_config *out);

/* True when c is usable (ranges above). */
bool cc_queue_pass_config_valid(const struct cc_queue_pass_config *c);

/* What one read returned. */
struct cc_queue_page {
	size_t n;                /* usable candidates written to out, oldest first */
	bool more;               /* the source returned as many as asked: more may follow */
	int64_t now_ms;          /* the source's clock (PostgreSQL's now()); the head read's rules the pass */
	char last[CC_UUID_BUF];  /* ticket id of the last entry the source returned ("" when none) */
};

/*
 * Reads up to limit QUEUED candidates into out, oldest first: the head of
 * the queue when after is NULL, else the ones following ticket after in
 * queue order (keyset: whatever state that ticket is in now). Returns 0
 * with *page filled, or an error that ends the pass (returned by
 * cc_queue_pass_run).
 */
typedef int (*cc_queue_read_fn)(void *ctx, const char *after, size_t limit, struct cc_candidate *out,
				struct cc_queue_page *page);

#define CC_ARRIVAL_WINDOW_MS 120000 /* arrivals are counted over the last two minutes */
#define CC_ARRIVAL_MAX 512          /* distinct tickets remembered (the rate saturates above max / window) */
#define CC_ARRIVAL_SLOTS 1024       /* open addressing: 2 x CC_ARRIVAL_MAX */

/* Recent arrivals, by ticket: a hash of the id and its queued_at (INT64_MIN: free slot). */
struct cc_arrival_rate {
	size_t n;                                /* tickets remembered */
	uint32_t hash[CC_ARRIVAL_SLOTS];
	int64_t queued_at_ms[CC_ARRIVAL_SLOTS];
};

/* Empties ar. */
void cc_arrival_rate_init(struct cc_arrival_rate *ar);

/* Forgets the tickets queued before now_ms - CC_ARRIVAL_WINDOW_MS. */
void cc_arrival_rate_prune(struct cc_arrival_rate *ar, int64_t now_ms);

/* Counts every ticket of c[0..n) queued within the window that ar does not hold yet (while there is room). */
void cc_arrival_rate_note(struct cc_arrival_rate *ar, const struct cc_candidate *c, size_t n, int64_t now_ms);

/* Arrivals per second over the window: tickets held / window (call after a prune at the same now). */
double cc_arrival_rate_per_s(const struct cc_arrival_rate *ar);

struct cc_queue_pass {
	char cursor[CC_UUID_BUF];                             /* "" or where the next pass goes on */
	size_t n;                                             /* tickets in the working set */
	struct cc_candidate cands[CC_QUEUE_PASS_MAX_WORKING]; /* the working set, oldest first */
	struct cc_formation_workspace ws;                     /* formation over cands[0..n) */
	bool keep[CC_QUEUE_PASS_MAX_WORKING];                 /* per round: still in the set after it */
	struct cc_arrival_rate arrivals;                      /* recent arrivals, across passes */
	double rate_per_s;                                    /* the rate the current or last pass widens with (-1: none yet) */
	cc_formation_claim_fn claim;                          /* this pass's callback ... */
	void *claim_ctx;                                      /* ... and its context */
};

/* What one pass did. */
struct cc_queue_pass_stats {
	struct cc_formation_pass_stats formation; /* summed over the rounds */
	unsigned pages;                          /* reads made, the head included */
	size_t read;                             /* usable candidates the reads returned */
	size_t working;                          /* the largest working set formed over */
	bool reached_end;                        /* the last read found the end of the queue */
	bool left_cursor;                        /* stopped before the end: the next pass goes on there */
	double arrival_rate_per_s;               /* the rate the rounds widened with (cc_arrival_rate_per_s) */
};

/* Prepares qp for its first pass (no cursor, empty set). */
void cc_queue_pass_init(struct cc_queue_pass *qp);

/*
 * Runs one pass (see the top of this file). claim receives formations whose
 * index[] points into qp->cands; it is called synchronously, and
 * CC_ECONFLICT means lost (game/formation.h). *stats (zeroed here) says
 * what happened, also on error. Returns 0, the read callback's error, or
 * the claim callback's error other than CC_ECONFLICT; on error the cursor
 * is left as it was. CC_EINVAL for an invalid cfg.
 */
int cc_queue_pass_run(struct cc_queue_pass *qp, const struct cc_queue_pass_config *cfg, cc_queue_read_fn read,
		      cc_formation_claim_fn claim, void *ctx, struct cc_queue_pass_stats *stats) CC_MUST_CHECK;

#endif
