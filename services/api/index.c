/*
 * index.c - cc-api's side of the Redis candidate index (api.h: "candidate
 * index"): notes taken inside transactions, applied after the commit, and
 * errors counted and logged without ever failing a request.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "sys/clock.h"
#include "sys/log.h"
#include "sys/banned.h"

/* Rate limit of the error log, shared by every request thread. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static int64_t last_log_ms = -API_INDEX_LOG_INTERVAL_MS;
static unsigned long suppressed; /* errors not logged since the last line */

int api_index_open(struct api *api)
{
	static const char *const labels[] = { "op", NULL };
	const struct api_config *cfg = api->cfg;

	api->index_errors = cc_counter("cosmic_clash_api_candidate_index_errors_total",
				       "Candidate index refreshes that failed (Redis down or slow); requests still succeed",
				       labels, 8);
	if (!cfg->svc.redis_host || !*cfg->svc.redis_host) {
		cc_log_info("candidate_index_disabled", CC_LOG_STR("reason", "no --redis-host"));
		return 0;
	}
	api->index = cc_candidate_index_create(cfg->svc.redis_host, (int)cfg->svc.redis_port, (int)cfg->svc.redis_timeout_ms,
					       API_INDEX_POOL_SIZE);
	if (!api->index)
		return CC_EINVAL;
	cc_log_info("candidate_index_enabled", CC_LOG_STR("host", cfg->svc.redis_host),
		    CC_LOG_INT("port", cfg->svc.redis_port));
	return 0;
}

/* Counts a failed refresh; logs it unless one was logged in the last interval. */
static void index_failed(struct api *api, const char *op, const char *ticket_id, int rc)
{
	const char *const labels[] = { op };
	unsigned long skipped = 0;
	bool log_now = false;

	cc_metric_add(api->index_errors, labels, 1.0);
	int64_t now = cc_clock_ms();
	pthread_mutex_lock(&log_lock);
	if (now - last_log_ms >= API_INDEX_LOG_INTERVAL_MS) {
		log_now = true;
		skipped = suppressed;
		suppressed = 0;
		last_log_ms = now;
	} else {
		suppressed++;
	}
	pthread_mutex_unlock(&log_lock);
	if (log_now)
		cc_log_warn("candidate_index_refresh_failed", CC_LOG_STR("op", op), CC_LOG_STR("ticket_id", ticket_id),
			    CC_LOG_STR("error", cc_errname(rc)), CC_LOG_INT("suppressed_since_last", skipped));
}

void api_index_apply(struct api *api, const struct cc_ticket_moves *moves)
{
	if (!api->index)
		return;
	if (moves->dropped)
		index_failed(api, "overflow", moves->v[0].id, CC_ETOOBIG);
	for (size_t i = 0; i < moves->n; i++) {
		const struct cc_ticket *t = &moves->v[i];
		bool put = t->state == CC_TICKET_QUEUED;
		int rc = put ? cc_candidate_index_put(api->index, t->playlist, &t->cand)
			     : cc_candidate_index_remove(api->index, t->playlist, t->id);
		if (rc != 0)
			index_failed(api, put ? "put" : "remove", t->id, rc);
	}
}
