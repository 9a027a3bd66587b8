#include "game/queue_pass.h"

#include <stdio.h>
#include <string.h>

#include "sys/hash.h"
#include "sys/banned.h"

static uint32_t id_hash(const char *s)
{
	return cc_hash_fnv1a32(s, strlen(s));
}

void cc_queue_pass_defaults(const struct cc_formation_params *params, struct cc_queue_pass_config *out)
{
	size_t match = (size_t)params->team_size * CC_FORMATION_TEAMS;
	*out = (struct cc_queue_pass_config){
		.params = *params,
		.head_page = match * CC_QUEUE_PASS_READ_FACTOR < CC_QUEUE_PASS_READ_CAP ? match * CC_QUEUE_PASS_READ_FACTOR
											: CC_QUEUE_PASS_READ_CAP,
		.page = CC_QUEUE_PASS_READ_CAP,
		.max_pages = CC_QUEUE_PASS_MAX_PAGES,
		.max_working = CC_QUEUE_PASS_MAX_WORKING,
	};
}

bool cc_queue_pass_config_valid(const struct cc_queue_pass_config *c)
{
	return c && cc_formation_params_valid(&c->params) && c->max_working >= 1 &&
	       c->max_working <= CC_QUEUE_PASS_MAX_WORKING && c->head_page >= 1 && c->head_page <= c->max_working &&
	       c->page >= 1 && c->page <= c->max_working && c->max_pages >= 1;
}

void cc_queue_pass_init(struct cc_queue_pass *qp)
{
	qp->cursor[0] = '\0';
	qp->n = 0;
	cc_arrival_rate_init(&qp->arrivals);
	qp->rate_per_s = -1.0;
}

void cc_arrival_rate_init(struct cc_arrival_rate *ar)
{
	ar->n = 0;
	for (size_t i = 0; i < CC_ARRIVAL_SLOTS; i++)
		ar->queued_at_ms[i] = INT64_MIN;
}

/* Inserts (h, at) unless held; false when it was held already or there is no room. */
static bool arrival_insert(struct cc_arrival_rate *ar, uint32_t h, int64_t at)
{
	for (uint32_t s = h;; s++) {
		size_t k = s % CC_ARRIVAL_SLOTS;
		if (ar->queued_at_ms[k] == INT64_MIN) {
			if (ar->n >= CC_ARRIVAL_MAX)
				return false;
			ar->hash[k] = h;
			ar->queued_at_ms[k] = at;
			ar->n++;
			return true;
		}
		if (ar->hash[k] == h && ar->queued_at_ms[k] == at)
			return false;
	}
}

void cc_arrival_rate_prune(struct cc_arrival_rate *ar, int64_t now_ms)
{
	uint32_t keep_h[CC_ARRIVAL_MAX];
	int64_t keep_at[CC_ARRIVAL_MAX];
	size_t kept = 0;
	for (size_t k = 0; k < CC_ARRIVAL_SLOTS; k++)
		if (ar->queued_at_ms[k] != INT64_MIN && ar->queued_at_ms[k] > now_ms - CC_ARRIVAL_WINDOW_MS &&
		    kept < CC_ARRIVAL_MAX) {
			keep_h[kept] = ar->hash[k];
			keep_at[kept++] = ar->queued_at_ms[k];
		}
	/* Rebuilt rather than deleted in place, so no probe chain is broken. */
	cc_arrival_rate_init(ar);
	for (size_t i = 0; i < kept; i++)
		(void)arrival_insert(ar, keep_h[i], keep_at[i]);
}

void cc_arrival_rate_note(struct cc_arrival_rate *ar, const struct cc_candidate *c, size_t n, int64_t now_ms)
{
	for (size_t i = 0; i < n && ar->n < CC_ARRIVAL_MAX; i++)
		if (c[i].queued_at_ms > now_ms - CC_ARRIVAL_WINDOW_MS && c[i].queued_at_ms != INT64_MIN)
			(void)arrival_insert(ar, id_hash(c[i].ticket_id), c[i].queued_at_ms);
}

double cc_arrival_rate_per_s(const struct cc_arrival_rate *ar)
{
	return (double)ar->n / (CC_ARRIVAL_WINDOW_MS / 1000.0);
}

/*
 * The claim callback cc_formation_pass sees: the caller's claim, plus the
 * bookkeeping of who leaves the working set (claimed, or lost to a race:
 * the lost ones, or all when none was named, as cc_formation_pass drops).
 */
static int claim_and_mark(void *ctx, const struct cc_formation *f, bool lost[CC_FORMATION_MAX_PLAYERS])
{
	struct cc_queue_pass *qp = ctx;
	int rc = qp->claim(qp->claim_ctx, f, lost);
	if (rc != 0 && rc != CC_ECONFLICT)
		return rc;
	bool any = false;
	for (size_t k = 0; rc == CC_ECONFLICT && k < f->n_players; k++)
		any |= lost[k];
	for (size_t k = 0; k < f->n_players; k++)
		if (rc == 0 || lost[k] || !any)
			qp->keep[f->index[k]] = false;
	return rc;
}

#define ID_SLOTS 2048 /* open addressing: > 2 x CC_QUEUE_PASS_MAX_WORKING */

/*
 * Drops from cands[first..n) the tickets already in the set (or twice in
 * the page): a cursor the queue has since overtaken, or a head page from
 * the Redis index that orders a tie differently from PostgreSQL, can hand
 * a ticket over twice, and a second copy would only cost a lost claim.
 * Returns the new n.
 */
static size_t drop_duplicates(struct cc_queue_pass *qp, size_t first, size_t n)
{
	uint16_t slots[ID_SLOTS];
	size_t kept = 0;
	memset(slots, 0xff, sizeof slots);
	for (size_t i = 0; i < n; i++) {
		bool dup = false;
		uint32_t h = id_hash(qp->cands[i].ticket_id);
		for (;; h++) {
			uint16_t *slot = &slots[h % ID_SLOTS];
			if (*slot == UINT16_MAX) {
				*slot = (uint16_t)kept;
				break;
			}
			if (strcmp(qp->cands[*slot].ticket_id, qp->cands[i].ticket_id) == 0) {
				dup = true;
				break;
			}
		}
		if (dup && i >= first)
			continue;
		if (kept != i)
			qp->cands[kept] = qp->cands[i];
		kept++;
	}
	return kept;
}

static void add_stats(struct cc_formation_pass_stats *sum, const struct cc_formation_pass_stats *st)
{
	sum->formed += st->formed;
	sum->refused_not_enough += st->refused_not_enough;
	sum->refused_no_region += st->refused_no_region;
	sum->lost_claims += st->lost_claims;
	sum->excluded += st->excluded;
	sum->swept += st->swept;
	sum->out_of_attempts |= st->out_of_attempts;
}

/*
 * One round: forms over the whole working set, then keeps only the
 * tickets still waiting (refused anchors included: a later page may hold
 * their partners). The failed-claim budget is the pass's, not the round's.
 */
static int form_round(struct cc_queue_pass *qp, const struct cc_queue_pass_config *cfg, int64_t now_ms,
		      struct cc_queue_pass_stats *stats)
{
	struct cc_formation_pass_stats st;
	if (cc_formation_prepare(&qp->ws, qp->cands, qp->n, now_ms, &cfg->params) != 0)
		CC_BUG("queue pass: the configuration was validated and the set is within its cap");
	for (size_t i = 0; i < qp->n; i++)
		qp->keep[i] = !qp->ws.out[i]; /* expired or reaching no region: never usable */
	qp->ws.claim_budget = CC_FORMATION_MAX_FAILED_CLAIMS - stats->formation.lost_claims;
	qp->ws.arrival_rate_per_s = stats->arrival_rate_per_s;
	if (qp->n > stats->working)
		stats->working = qp->n;
	int rc = cc_formation_pass(&qp->ws, claim_and_mark, qp, &st);
	add_stats(&stats->formation, &st);
	size_t kept = 0;
	for (size_t i = 0; i < qp->n; i++) {
		if (!qp->keep[i])
			continue;
		if (kept != i)
			qp->cands[kept] = qp->cands[i];
		kept++;
	}
	qp->n = kept;
	return rc;
}

int cc_queue_pass_run(struct cc_queue_pass *qp, const struct cc_queue_pass_config *cfg, cc_queue_read_fn read,
		      cc_formation_claim_fn claim, void *ctx, struct cc_queue_pass_stats *stats)
{
	struct cc_queue_page page;
	char after[CC_UUID_BUF], start[CC_UUID_BUF] = "";
	bool from_cursor = false;

	memset(stats, 0, sizeof *stats);
	qp->n = 0;
	if (!cc_queue_pass_config_valid(cfg) || !read || !claim)
		return CC_EINVAL;
	qp->claim = claim;
	qp->claim_ctx = ctx;

	memset(&page, 0, sizeof page);
	int rc = read(ctx, NULL, cfg->head_page, qp->cands, &page);
	if (rc != 0)
		return rc;
	if (page.n > cfg->head_page)
		CC_BUG("queue pass: a read returned more than it was asked for");
	int64_t now_ms = page.now_ms;
	/* The rate of the head read rules the pass, like its clock: later pages add to the next pass's. */
	cc_arrival_rate_prune(&qp->arrivals, now_ms);
	cc_arrival_rate_note(&qp->arrivals, qp->cands, page.n, now_ms);
	qp->rate_per_s = stats->arrival_rate_per_s = cc_arrival_rate_per_s(&qp->arrivals);
	stats->pages = 1;
	stats->read = page.n;
	qp->n = page.n;
	snprintf(after, sizeof after, "%s", page.last);

	for (;;) {
		unsigned formed = stats->formation.formed;
		if ((rc = form_round(qp, cfg, now_ms, stats)) != 0)
			return rc;
		if (stats->formation.lost_claims >= CC_FORMATION_MAX_FAILED_CLAIMS) {
			stats->formation.out_of_attempts = true;
			return 0; /* says nothing about the pages: the cursor stays */
		}
		if (stats->formation.formed > formed) {
			/* Come back to a page past the cursor while it keeps forming. */
			if (from_cursor)
				snprintf(qp->cursor, sizeof qp->cursor, "%s", start);
			return 0;
		}
		if (!page.more || !after[0]) {
			stats->reached_end = true;
			qp->cursor[0] = '\0';
			return 0;
		}
		if (stats->pages >= cfg->max_pages || qp->n + cfg->page > cfg->max_working) {
			stats->left_cursor = true;
			snprintf(qp->cursor, sizeof qp->cursor, "%s", after);
			return 0;
		}
		/* After a head page, a cursor left by the last pass says where to go on. */
		if (stats->pages == 1 && qp->cursor[0]) {
			from_cursor = true;
			snprintf(after, sizeof after, "%s", qp->cursor);
		}
		snprintf(start, sizeof start, "%s", after);
		memset(&page, 0, sizeof page);
		if ((rc = read(ctx, after, cfg->page, qp->cands + qp->n, &page)) != 0)
			return rc;
		if (page.n > cfg->page)
			CC_BUG("queue pass: a read returned more than it was asked for");
		stats->pages++;
		stats->read += page.n;
		cc_arrival_rate_note(&qp->arrivals, qp->cands + qp->n, page.n, now_ms);
		qp->n = drop_duplicates(qp, qp->n, qp->n + page.n);
		if (page.n == 0 && !page.more) {
			stats->reached_end = true;
			qp->cursor[0] = '\0';
			return 0;
		}
		if (page.last[0])
			snprintf(after, sizeof after, "%s", page.last);
		else
			after[0] = '\0';
	}
}
