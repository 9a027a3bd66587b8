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
#include "store/proposals.h"
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

void api_index_changes_reset(struct api_index_changes *ch)
{
	ch->n = 0;
}

/* The next free note, or NULL when full (cannot happen with one active ticket per player). */
static struct api_index_change *next_change(struct api_index_changes *ch)
{
	if (ch->n == API_INDEX_MAX_CHANGES)
		return NULL;
	struct api_index_change *c = &ch->v[ch->n++];
	memset(c, 0, sizeof *c);
	return c;
}

void api_index_note_remove(struct api_index_changes *ch, const char *playlist, const char *ticket_id)
{
	struct api_index_change *c = next_change(ch);
	if (!c)
		return;
	snprintf(c->playlist, sizeof c->playlist, "%s", playlist);
	snprintf(c->c.ticket_id, sizeof c->c.ticket_id, "%s", ticket_id);
}

void api_index_note_row(struct api_index_changes *ch, const PGresult *res, int i, int col)
{
	struct api_index_change *c = next_change(ch);
	if (!c)
		return;
	c->put = strcmp(PQgetvalue(res, i, col), "QUEUED") == 0;
	cc_candidate_from_row(res, i, col + 1, &c->c);
	snprintf(c->playlist, sizeof c->playlist, "%s", PQgetvalue(res, i, col + CC_CANDIDATE_NCOLUMNS));
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

void api_index_apply(struct api *api, const struct api_index_changes *ch)
{
	if (!api->index)
		return;
	for (size_t i = 0; i < ch->n; i++) {
		const struct api_index_change *c = &ch->v[i];
		int rc = c->put ? cc_candidate_index_put(api->index, c->playlist, &c->c)
				: cc_candidate_index_remove(api->index, c->playlist, c->c.ticket_id);
		if (rc != 0)
			index_failed(api, c->put ? "put" : "remove", c->c.ticket_id, rc);
	}
}

void api_index_sync(struct api *api, struct cc_pg *pg, const char *playlist, const char *ticket_id)
{
	struct api_index_changes ch = { 0 };
	char found_playlist[CC_PLAYLIST_BUF];

	if (!api->index)
		return;
	struct api_index_change *c = next_change(&ch);
	int rc = cc_candidate_load_one(pg, ticket_id, &c->c, found_playlist);
	if (rc == 0) {
		c->put = true;
		snprintf(c->playlist, sizeof c->playlist, "%s", found_playlist);
	} else if (rc == CC_ENOTFOUND) {
		snprintf(c->playlist, sizeof c->playlist, "%s", playlist);
		snprintf(c->c.ticket_id, sizeof c->c.ticket_id, "%s", ticket_id);
	} else {
		index_failed(api, "load", ticket_id, rc);
		return;
	}
	api_index_apply(api, &ch);
}

void api_index_apply_proposal(struct api *api, struct cc_pg *pg, const struct cc_proposal_changes *changes)
{
	if (!api->index || !changes || !changes->playlist[0])
		return;
	for (int i = 0; i < changes->n_requeued; i++)
		api_index_sync(api, pg, changes->playlist, changes->requeued[i]);
	for (int i = 0; i < changes->n_removed; i++)
		api_index_sync(api, pg, changes->playlist, changes->removed[i]);
}
