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
 *              the same bytes every time
 *   published  assignments + roster + PUBLISHED + outbox, one transaction
 *
 * A worker that dies after any step leaves its claim to lapse; whoever
 * takes the row over resumes from its state (REQUESTED: ask again;
 * ALLOCATED: deliver again and publish). The test hook stops the process at
 * each step name (cc-testkit-allocator only).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocator.h"
#include "sys/clock.h"
#include "sys/log.h"
#include "game/workload_token.h"
#include "sys/banned.h"

#define MAX_BATCH 256 /* the --batch option's maximum */

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
	const char *id, *replica, *reason;
	int64_t delay_ms;
	bool count_attempt, deferred;
};

static int defer_tx(struct cc_pg *pg, void *arg)
{
	struct defer_tx *t = arg;
	return cc_allocation_defer(pg, t->id, t->replica, t->delay_ms, t->count_attempt, t->reason, &t->deferred);
}

/* Releases the claim on al for delay_ms; a failure is logged (the lease lapses anyway). */
static void defer(struct allocator_worker *w, const struct cc_allocation *al, int64_t delay_ms, bool count_attempt,
		  const char *reason)
{
	struct defer_tx t = { .id = al->id, .replica = w->replica, .reason = reason, .delay_ms = delay_ms,
			      .count_attempt = count_attempt };
	int rc = cc_pg_run_locked(w->pg, defer_tx, &t);
	if (rc != 0)
		cc_log_warn("defer_failed", CC_LOG_STR("allocation_id", al->id), CC_LOG_STR("error", cc_errname(rc)));
}

/* ---- one allocation ------------------------------------------------------------ */

/* Asks the provider; true when al is ALLOCATED afterwards. */
static bool allocate(struct allocator_worker *w, struct cc_allocation *al)
{
	struct allocator *a = w->a;
	char why[256] = "";
	int64_t t0 = cc_clock_ns();
	enum alloc_outcome o = a->local ? local_allocate(w, al, why, sizeof why) : agones_allocate(w, al, why, sizeof why);
	allocator_observe(a, "allocate", t0);
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
		defer(w, al, delay, true, "no_capacity");
		return false;
	}
	case ALLOC_CONTENTION:
		allocator_count(a, "contention");
		defer(w, al, 10 + allocator_backoff_ms(a, 1) / 4, false, "contention");
		return false;
	case ALLOC_RETRY:
		allocator_count(a, "retry");
		cc_log_warn("allocate_retry", CC_LOG_STR("allocation_id", al->id), CC_LOG_STR("reason", why));
		defer(w, al, allocator_backoff_ms(a, 2), false, why);
		return false;
	case ALLOC_REJECTED:
		allocator_count(a, "rejected");
		cc_log_error("allocate_rejected", CC_LOG_STR("allocation_id", al->id), CC_LOG_STR("reason", why));
		defer(w, al, a->cfg->backoff_max_ms, true, why);
		return false;
	case ALLOC_LOST:
		allocator_count(a, "lost");
		cc_log_info("claim_lost", CC_LOG_STR("allocation_id", al->id));
		return false;
	}
	return false;
}

/* Takes al from its claimed state to PUBLISHED, as far as it goes. */
static void process(struct allocator_worker *w, struct cc_allocation *al)
{
	struct allocator *a = w->a;
	int rc;

	if (strcmp(al->state, "REQUESTED") == 0) {
		step("claimed");
		if (!allocate(w, al))
			return;
		step("allocated");
	} else if (strcmp(al->state, "ALLOCATED") != 0) {
		return;
	} else {
		cc_log_info("resume_allocated", CC_LOG_STR("allocation_id", al->id),
			    CC_LOG_STR("server_id", al->server_id));
	}
	int64_t t0 = cc_clock_ns();
	if (a->local) {
		rc = local_deliver(w, al);
		allocator_observe(a, "deliver", t0);
		if (rc != 0) {
			allocator_count(a, "deliver_failed");
			cc_log_error("deliver_failed", CC_LOG_STR("allocation_id", al->id),
				     CC_LOG_STR("server_id", al->server_id), CC_LOG_STR("error", cc_errname(rc)));
			defer(w, al, allocator_backoff_ms(a, 2), false, "deliver_failed");
			return;
		}
	}
	step("delivered");
	bool published = false;
	t0 = cc_clock_ns();
	rc = allocator_publish(w, al->id, &published);
	allocator_observe(a, "publish", t0);
	if (rc != 0) {
		allocator_count(a, "publish_failed");
		cc_log_error("publish_failed", CC_LOG_STR("allocation_id", al->id), CC_LOG_STR("error", cc_errname(rc)),
			     CC_LOG_STR("sqlstate", cc_pg_sqlstate(w->pg)));
		defer(w, al, allocator_backoff_ms(a, 2), false, "publish_failed");
		return;
	}
	if (published) {
		allocator_count(a, "published");
		cc_metric_add(a->metrics.published, NULL, 1);
		cc_log_info("published", CC_LOG_STR("allocation_id", al->id), CC_LOG_STR("match_id", al->match_id),
			    CC_LOG_STR("server_id", al->server_id));
	}
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
	if (a->local && w->index == 0) {
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
	for (size_t i = 0; i < t.n && !cc_service_stopping(a->svc); i++)
		process(w, &t.items[i]);
	return 0;
}
