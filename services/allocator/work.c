/*
 * work.c - one worker's pass (SPEC 8): claim a batch, then take each
 * allocation as far as it goes, in the order that makes every crash
 * recoverable from the durable state alone:
 *
 *   claimed    REQUESTED, claimed by this worker (claim transaction)
 *   allocated  the provider's server and the endpoint persisted, ALLOCATED
 *              (one transaction; nothing else has happened yet)
 *   delivered  the allocation handed to the server (local: the allocation
 *              file; agones: the annotations already did it). Idempotent:
 *              the same bytes every time. Inside the publication's
 *              transaction, after the row is locked and seen ALLOCATED
 *   published  assignments + roster + PUBLISHED + outbox, that transaction
 *
 * A worker that dies after any step leaves its claim to lapse; whoever
 * takes the row over resumes from its state (REQUESTED: ask again;
 * ALLOCATED: deliver again and publish). The test hook stops the process at
 * each step name (cc-testkit-allocator only).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocator.h"
#include "sys/clock.h"
#include "sys/log.h"
#include "game/workload_token.h"
#include "sys/banned.h"

#define MAX_BATCH 256 /* the --batch option's maximum */
#define SWEEP_INTERVAL_MS 250 /* release sweeps at most this often */

/* The test hook, when this binary has one. */
static void step(const char *name)
{
	if (allocator_testkit_step)
		allocator_testkit_step(name);
}

void allocator_observe(struct allocator *a, const char *name, int64_t start_ns)
{
	const char *l[] = { name };
	cc_metric_observe(a->metrics.step_seconds, l, (double)(cc_clock_ns() - start_ns) / 1e9);
}

void allocator_count(struct allocator *a, const char *result)
{
	const char *l[] = { a->cfg->provider, result };
	cc_metric_add(a->metrics.allocations, l, 1);
}

int64_t allocator_backoff_ms(const struct allocator *a, int attempts)
{
	int64_t ms = a->cfg->backoff_min_ms;
	for (int i = 1; i < attempts && ms < a->cfg->backoff_max_ms; i++)
		ms *= 2;
	if (ms > a->cfg->backoff_max_ms)
		ms = a->cfg->backoff_max_ms;
	/* Half fixed, half jitter: replicas that lost together do not retry together. */
	uint32_t r;
	cc_random_bytes(&r, sizeof r);
	return ms / 2 + (int64_t)(r % (uint32_t)(ms / 2 + 1));
}

int allocator_workload_token(const struct allocator *a, const struct cc_allocation *al, char *out, size_t cap)
{
	struct cc_workload_claims c;
	memset(&c, 0, sizeof c);
	snprintf(c.key_id, sizeof c.key_id, "%s", a->cfg->workload_key_id);
	snprintf(c.allocation_id, sizeof c.allocation_id, "%s", al->id);
	c.expires_at = al->workload_expires_unix;
	return cc_workload_token_sign(a->workload_keys, &c, out, cap);
}

/* ---- transactions ---------------------------------------------------------- */

struct claim_tx {
	const struct cc_allocation_claim *req;
	struct cc_allocation *items;
	size_t cap, n;
};

static int claim_tx(struct cc_pg *pg, void *arg)
{
	struct claim_tx *t = arg;
	t->n = 0;
	return cc_allocations_claim(pg, t->req, t->items, t->cap, &t->n);
}

struct defer_tx {
	const char *replica, *reason;
	const char *const *ids;
	const int64_t *delays;
	size_t n;
	bool count_attempt;
};

static int defer_tx(struct cc_pg *pg, void *arg)
{
	struct defer_tx *t = arg;
	return cc_allocations_defer(pg, t->replica, t->ids, t->delays, t->n, t->count_attempt, t->reason, NULL);
}

/* Allocations to release together: one statement per kind of deferral. */
struct deferrals {
	const char *ids[2 * MAX_BATCH];
	int64_t delays[2 * MAX_BATCH];
	size_t n;
};

static void defer_add(struct deferrals *d, const struct cc_allocation *al, int64_t delay_ms)
{
	if (d->n < 2 * MAX_BATCH) {
		d->ids[d->n] = al->id;
		d->delays[d->n++] = delay_ms;
	}
}

/* Releases the claims in d; a failure is logged (the leases lapse anyway). */
static void defer_flush(struct allocator_worker *w, struct deferrals *d, bool count_attempt, const char *reason)
{
	if (d->n == 0)
		return;
	struct defer_tx t = { .replica = w->replica, .reason = reason, .ids = d->ids, .delays = d->delays, .n = d->n,
			      .count_attempt = count_attempt };
	int rc = cc_pg_run_locked(w->pg, defer_tx, &t);
	if (rc != 0)
		cc_log_warn("defer_failed", CC_LOG_STR("allocation_id", d->ids[0]), CC_LOG_INT("allocations", d->n),
			    CC_LOG_STR("error", cc_errname(rc)));
	d->n = 0;
}

/* The deferrals of one pass, by kind. */
struct pass_deferrals {
	struct deferrals no_capacity; /* attempts + 1, growing backoff */
	struct deferrals soon;        /* contention, transient failures: attempts unchanged */
	struct deferrals rejected;    /* the provider refused the request: attempts + 1, the longest backoff */
};

static void flush_all(struct allocator_worker *w, struct pass_deferrals *d)
{
	defer_flush(w, &d->no_capacity, true, "no_capacity");
	defer_flush(w, &d->soon, false, "retry");
	defer_flush(w, &d->rejected, true, "rejected");
}

/* ---- one allocation's outcome -------------------------------------------------- */

/* Counts and logs outcome o of al, queueing its deferral; true when al is ALLOCATED. */
static bool settle(struct allocator_worker *w, const struct cc_allocation *al, enum alloc_outcome o, const char *why,
		   struct pass_deferrals *d)
{
	struct allocator *a = w->a;
	switch (o) {
	case ALLOC_OK:
		allocator_count(a, "allocated");
		cc_log_info("allocated", CC_LOG_STR("allocation_id", al->id), CC_LOG_STR("match_id", al->match_id),
			    CC_LOG_STR("server_id", al->server_id), CC_LOG_STR("address", al->address),
			    CC_LOG_INT("port", al->port));
		return true;
	case ALLOC_NO_CAPACITY: {
		const char *l[] = { a->cfg->provider };
		cc_metric_add(a->metrics.no_capacity, l, 1);
		allocator_count(a, "no_capacity");
		int64_t delay = allocator_backoff_ms(a, al->attempts + 1);
		cc_log_emit(al->attempts == 0 ? CC_LOG_INFO : CC_LOG_DEBUG, "no_capacity",
			    (struct cc_log_field[]){ CC_LOG_STR("allocation_id", al->id),
						     CC_LOG_INT("attempts", al->attempts + 1),
						     CC_LOG_INT("retry_in_ms", delay), CC_LOG_STR("reason", why) },
			    4);
		defer_add(&d->no_capacity, al, delay);
		return false;
	}
	case ALLOC_CONTENTION:
		allocator_count(a, "contention");
		defer_add(&d->soon, al, 10 + allocator_backoff_ms(a, 1) / 4);
		return false;
	case ALLOC_RETRY:
		allocator_count(a, "retry");
		cc_log_warn("allocate_retry", CC_LOG_STR("allocation_id", al->id), CC_LOG_STR("reason", why));
		defer_add(&d->soon, al, allocator_backoff_ms(a, 2));
		return false;
	case ALLOC_REJECTED:
		allocator_count(a, "rejected");
		cc_log_error("allocate_rejected", CC_LOG_STR("allocation_id", al->id), CC_LOG_STR("reason", why));
		defer_add(&d->rejected, al, a->cfg->backoff_max_ms);
		return false;
	case ALLOC_LOST:
		allocator_count(a, "lost");
		cc_log_info("claim_lost", CC_LOG_STR("allocation_id", al->id));
		return false;
	}
	return false;
}

/*
 * Takes a claimed batch as far as it goes: the REQUESTED ones to a server
 * (local: one transaction for the batch), then every ALLOCATED one (new or
 * resumed) through delivery and publication (one transaction for the
 * batch). The test hook stops the process between the steps.
 */
static void process(struct allocator_worker *w, struct cc_allocation *items, size_t n)
{
	struct allocator *a = w->a;
	static _Thread_local struct pass_deferrals d;
	struct cc_allocation *req[2 * MAX_BATCH], *ready[2 * MAX_BATCH];
	enum alloc_outcome out[2 * MAX_BATCH];
	char why[256] = "";
	size_t n_req = 0, n_ready = 0, n_new = 0;

	memset(&d, 0, sizeof d);
	for (size_t i = 0; i < n; i++) {
		if (strcmp(items[i].state, "REQUESTED") == 0) {
			req[n_req++] = &items[i];
		} else if (strcmp(items[i].state, "ALLOCATED") == 0) {
			cc_log_info("resume_allocated", CC_LOG_STR("allocation_id", items[i].id),
				    CC_LOG_STR("server_id", items[i].server_id));
			ready[n_ready++] = &items[i];
		}
	}
	if (n_req > 0) {
		step("claimed");
		int64_t t0 = cc_clock_ns();
		/* Only the requests actually asked are settled: a stop mid-batch
		 * leaves the rest REQUESTED under our lapsing claim. */
		size_t n_asked = 0;
		if (a->local) {
			local_allocate_batch(w, req, n_req, out, why, sizeof why);
			n_asked = n_req;
		} else {
			for (; n_asked < n_req && !cc_service_stopping(a->svc); n_asked++)
				out[n_asked] = agones_allocate(w, req[n_asked], why, sizeof why);
		}
		allocator_observe(a, "allocate", t0);
		for (size_t i = 0; i < n_asked; i++)
			if (settle(w, req[i], out[i], why, &d)) {
				ready[n_ready++] = req[i];
				n_new++;
			}
		flush_all(w, &d);
		if (n_new > 0)
			step("allocated");
	}
	if (n_ready == 0)
		return;
	/* Delivery (local: the allocation files) and the "delivered" step happen in
	 * the publication's transaction, under each allocation's row lock (publish.c). */
	const char *ids[2 * MAX_BATCH];
	bool published[2 * MAX_BATCH];
	int rcs[2 * MAX_BATCH];
	for (size_t i = 0; i < n_ready; i++)
		ids[i] = ready[i]->id;
	int64_t t0 = cc_clock_ns();
	allocator_publish_batch(w, ids, n_ready, published, rcs);
	allocator_observe(a, "publish", t0);
	bool any = false;
	for (size_t i = 0; i < n_ready; i++) {
		if (rcs[i] != 0) {
			allocator_count(a, "publish_failed");
			cc_log_error("publish_failed", CC_LOG_STR("allocation_id", ids[i]), CC_LOG_STR("error", cc_errname(rcs[i])),
				     CC_LOG_STR("sqlstate", cc_pg_sqlstate(w->pg)));
			defer_add(&d.soon, ready[i], allocator_backoff_ms(a, 2));
		} else if (published[i]) {
			any = true;
			allocator_count(a, "published");
			cc_metric_add(a->metrics.published, NULL, 1);
			cc_log_info("published", CC_LOG_STR("allocation_id", ids[i]), CC_LOG_STR("match_id", ready[i]->match_id),
				    CC_LOG_STR("server_id", ready[i]->server_id));
		}
	}
	flush_all(w, &d);
	if (any)
		step("published");
}

/* Opens the worker's connection when it has none; false (logged) when the database is down. */
static bool connect_worker(struct allocator_worker *w)
{
	char err[256] = "";
	if (w->pg)
		return true;
	int rc = cc_pg_connect(w->a->cfg->svc.database_url, &w->a->pg_opt, &w->pg, err, sizeof err);
	if (rc != 0) {
		pthread_mutex_lock(&w->a->lock);
		w->a->db_ready = false;
		snprintf(w->a->db_why, sizeof w->a->db_why, "database: %s", err);
		pthread_mutex_unlock(&w->a->lock);
		cc_log_warn("connect_failed", CC_LOG_STR("replica", w->replica), CC_LOG_STR("error", cc_errname(rc)),
			    CC_LOG_STR("reason", err));
	}
	return rc == 0;
}

int allocator_pass(struct allocator_worker *w, bool *did_work)
{
	static struct cc_allocation items[ALLOCATOR_MAX_WORKERS][2 * MAX_BATCH];
	struct allocator *a = w->a;
	*did_work = false;
	if (!connect_worker(w)) {
		cc_metric_add(a->metrics.passes, (const char *[]){ "db_down" }, 1);
		return CC_EUNAVAILABLE;
	}
	/*
	 * The release sweep, by whichever worker passes first once
	 * SWEEP_INTERVAL_MS have gone by (not always worker 0: a worker stalled
	 * in a slow transaction must not stop servers coming back). It visits
	 * every ALLOCATED server of the pool: run on every pass it was the most
	 * expensive statement of a busy allocator (pg_stat_statements during
	 * the bench: 28 ms a call, as much time as the publications, for
	 * nothing to release). A finished server waits that much longer.
	 */
	static _Atomic int64_t last_sweep_ms;
	int64_t now_ms = cc_clock_ms(), last = atomic_load(&last_sweep_ms);
	if (a->local && now_ms - last >= SWEEP_INTERVAL_MS &&
	    atomic_compare_exchange_strong(&last_sweep_ms, &last, now_ms)) {
		int rc = local_release_finished(w);
		if (rc != 0)
			cc_log_warn("release_sweep_failed", CC_LOG_STR("error", cc_errname(rc)));
	}
	struct cc_allocation_claim req = {
		.provider = a->cfg->provider,
		.replica = w->replica,
		.owner = a->instance,
		.lease_ms = a->cfg->claim_lease_ms,
		.workload_ttl_s = a->cfg->workload_ttl_seconds,
		.limit = (int)a->cfg->batch,
	};
	struct claim_tx t = { .req = &req, .items = items[w->index], .cap = 2 * MAX_BATCH };
	int64_t t0 = cc_clock_ns();
	int rc = cc_pg_run_locked(w->pg, claim_tx, &t);
	allocator_observe(a, "claim", t0);
	pthread_mutex_lock(&a->lock);
	a->db_ready = rc == 0 || rc == CC_ERETRY_EXHAUSTED;
	if (!a->db_ready)
		snprintf(a->db_why, sizeof a->db_why, "claim: %s", cc_errname(rc));
	pthread_mutex_unlock(&a->lock);
	if (rc != 0) {
		cc_metric_add(a->metrics.passes, (const char *[]){ "error" }, 1);
		cc_log_warn("claim_failed", CC_LOG_STR("replica", w->replica), CC_LOG_STR("error", cc_errname(rc)),
			    CC_LOG_STR("sqlstate", cc_pg_sqlstate(w->pg)), CC_LOG_STR("message", cc_pg_error_message(w->pg)));
		return rc;
	}
	cc_metric_add(a->metrics.passes, (const char *[]){ t.n ? "work" : "idle" }, 1);
	*did_work = t.n > 0;
	if (t.n > 0 && !cc_service_stopping(a->svc))
		process(w, t.items, t.n);
	step("pass_done");
	return 0;
}
