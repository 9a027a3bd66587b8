/*
 * reporter.c - see reporter.h. A mutex-guarded singly linked FIFO with a
 * count cap, one worker thread, and cond waits with a monotonic clock so
 * a stop or a new job wakes the worker at once.
 */
#include "reporter.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sys/cc.h"
#include "sys/clock.h"
#include "sys/http_client.h"
#include "sys/log.h"
#include "sys/metrics.h"
#include "sys/banned.h"

struct job {
	struct job *next;
	char route[32];      /* "connect", "disconnect", "result", ... */
	char *body;          /* JSON, owned; NULL for a disconnect (written when sent) */
	int64_t deadline_ms; /* monotonic: give up after this */
	char player_id[CC_UUID_BUF]; /* connect, disconnect */
	char reason[40];     /* disconnect */
};

#define LEASES_MAX 64 /* players whose lease generation is remembered (a match has at most 16) */

struct cc_reporter {
	char *base;           /* {api_url}/v1/servers/{escaped id}/ */
	char *auth;           /* "Authorization: Bearer <token>" (secret: wiped) */
	int64_t timeout_ms;   /* one request */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;  /* a job arrived, or stop */
	pthread_cond_t idle;  /* the queue emptied */
	struct job *head, *tail;
	int queued;           /* jobs in the list, including the one in flight */
	bool stop;
	struct {
		char route[32];
		uint64_t n;
	} succeeded[8];         /* 2xx jobs per route (first 8 routes seen) */
	struct cc_metric *sent; /* cosmic_clash_gameserver_reports_total{route,outcome} */
	struct {
		char player_id[CC_UUID_BUF];
		int64_t generation;
	} leases[LEASES_MAX];   /* from connect answers; reporter thread only */
};

/* Remembers the generation a connect answered for player_id. Reporter thread. */
static void lease_remember(struct cc_reporter *r, const char *player_id, const char *answer)
{
	cJSON *o = cJSON_Parse(answer);
	const cJSON *g = cJSON_GetObjectItemCaseSensitive(o, "generation");
	if (cJSON_IsNumber(g)) {
		size_t i = 0;
		while (i < LEASES_MAX && r->leases[i].player_id[0] && strcmp(r->leases[i].player_id, player_id) != 0)
			i++;
		if (i < LEASES_MAX) {
			snprintf(r->leases[i].player_id, sizeof r->leases[i].player_id, "%s", player_id);
			r->leases[i].generation = (int64_t)g->valuedouble;
		}
	}
	cJSON_Delete(o);
}

/* The generation of player_id's lease, or 0 when no connect succeeded. */
static int64_t lease_generation(const struct cc_reporter *r, const char *player_id)
{
	for (size_t i = 0; i < LEASES_MAX && r->leases[i].player_id[0]; i++)
		if (strcmp(r->leases[i].player_id, player_id) == 0)
			return r->leases[i].generation;
	return 0;
}

/* Wipes and frees a string that held a secret. NULL is a no-op. */
static void wipe_free(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

static void job_free(struct job *j)
{
	if (j) {
		free(j->body);
		free(j);
	}
}

/* True when body is the SPEC error shape with error.code == code. */
static bool error_code_is(const char *body, const char *code)
{
	cJSON *o = cJSON_Parse(body ? body : "");
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "error");
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "code");
	bool is = cJSON_IsString(c) && strcmp(c->valuestring, code) == 0;
	cJSON_Delete(o);
	return is;
}

/* One attempt. Returns 1 done (success or refused), 0 retry. */
static int attempt(struct cc_reporter *r, struct job *j)
{
	if (!j->body) {
		/* A disconnect: its lease's generation is known only now. */
		int64_t gen = lease_generation(r, j->player_id);
		char body[192];
		if (gen <= 0) {
			cc_log_warn("report_skipped", CC_LOG_STR("route", j->route), CC_LOG_STR("player_id", j->player_id),
				    CC_LOG_STR("reason", "no connect was acknowledged for this player"));
			return 1;
		}
		snprintf(body, sizeof body, "{\"player_id\":\"%s\",\"generation\":%lld,\"reason\":\"%s\"}", j->player_id,
			 (long long)gen, j->reason);
		j->body = strdup(body);
		if (!j->body)
			return 0;
	}
	char url[512];
	snprintf(url, sizeof url, "%s%s", r->base, j->route);
	const char *headers[] = { r->auth, "Content-Type: application/json", NULL };
	struct cc_http_client_request req = { .method = "POST", .url = url, .headers = headers, .body = j->body,
					      .body_len = strlen(j->body), .timeout_ms = r->timeout_ms,
					      .max_response_bytes = 64 * 1024 };
	struct cc_http_client_response resp = { 0 };
	int rc = cc_http_client_do(&req, &resp);
	const char *labels[] = { j->route, NULL, NULL };
	int done = 0;
	if (rc != 0) {
		labels[1] = "transport";
		cc_log_debug("report_retry", CC_LOG_STR("route", j->route), CC_LOG_STR("error", cc_errname(rc)));
	} else if (resp.status >= 200 && resp.status < 300) {
		labels[1] = "ok";
		done = 1;
		if (strcmp(j->route, "connect") == 0)
			lease_remember(r, j->player_id, resp.body);
		cc_log_debug("report_sent", CC_LOG_STR("route", j->route), CC_LOG_INT("status", resp.status));
	} else if (resp.status == 409 && error_code_is(resp.body, "invalid_state")) {
		/*
		 * "Not yet": players can reach us before the supervisor's
		 * ASSIGNMENT_READY lands (its registration retries), and a result
		 * needs a connect to have moved the match. Asking again later is
		 * the fix, within the job's deadline.
		 */
		labels[1] = "not_yet";
		cc_log_debug("report_retry", CC_LOG_STR("route", j->route), CC_LOG_STR("response", resp.body));
	} else if (resp.status == 409) {
		labels[1] = "conflict";
		done = 1;
		cc_log_warn("report_conflict", CC_LOG_STR("route", j->route), CC_LOG_STR("response", resp.body));
	} else if (resp.status >= 400 && resp.status < 500 && resp.status != 429) {
		labels[1] = "refused";
		done = 1;
		cc_log_warn("report_refused", CC_LOG_STR("route", j->route), CC_LOG_INT("status", resp.status),
			    CC_LOG_STR("response", resp.body));
	} else {
		labels[1] = "retry";
		cc_log_debug("report_retry", CC_LOG_STR("route", j->route), CC_LOG_INT("status", resp.status));
	}
	cc_metric_add(r->sent, labels, 1);
	if (done && labels[1][0] == 'o') {
		pthread_mutex_lock(&r->lock);
		for (size_t i = 0; i < CC_ARRAY_LEN(r->succeeded); i++) {
			if (!r->succeeded[i].route[0])
				snprintf(r->succeeded[i].route, sizeof r->succeeded[i].route, "%s", j->route);
			if (strcmp(r->succeeded[i].route, j->route) == 0) {
				r->succeeded[i].n++;
				break;
			}
		}
		pthread_mutex_unlock(&r->lock);
	}
	cc_http_client_response_release(&resp);
	return done;
}

/* Waits on cond until ms passes or stop; the lock is held. */
static void timed_wait(struct cc_reporter *r, pthread_cond_t *cond, int64_t ms)
{
	struct timespec ts = cc_clock_timespec(cc_clock_ns() + ms * 1000000);
	(void)pthread_cond_timedwait(cond, &r->lock, &ts);
}

static void *reporter_thread(void *arg)
{
	struct cc_reporter *r = arg;
	pthread_mutex_lock(&r->lock);
	while (!r->stop) {
		if (!r->head) {
			timed_wait(r, &r->wake, 1000);
			continue;
		}
		struct job *j = r->head;
		pthread_mutex_unlock(&r->lock);
		int64_t backoff = 100;
		int done = 0;
		for (;;) {
			done = attempt(r, j);
			if (done || cc_clock_ms() + backoff > j->deadline_ms)
				break;
			pthread_mutex_lock(&r->lock);
			if (!r->stop)
				timed_wait(r, &r->wake, backoff); /* a new job also wakes us early: harmless */
			bool stopping = r->stop;
			pthread_mutex_unlock(&r->lock);
			if (stopping)
				break;
			backoff = backoff * 2 > 2000 ? 2000 : backoff * 2;
		}
		if (!done)
			cc_log_error("report_failed", CC_LOG_STR("route", j->route),
				     CC_LOG_STR("reason", "deadline passed with the API unreachable or failing"));
		pthread_mutex_lock(&r->lock);
		r->head = j->next;
		if (!r->head)
			r->tail = NULL;
		r->queued--;
		job_free(j);
		if (!r->head)
			pthread_cond_broadcast(&r->idle);
	}
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

struct cc_reporter *cc_reporter_start(const char *api_url, const char *server_id, const char *token,
				      int64_t timeout_ms)
{
	struct cc_reporter *r = calloc(1, sizeof *r);
	char *id = NULL;
	if (!r)
		return NULL;
	size_t ul = strlen(api_url);
	while (ul > 0 && api_url[ul - 1] == '/')
		ul--;
	id = cc_http_url_escape(server_id, strlen(server_id));
	size_t blen = ul + strlen(id ? id : "") + 32, alen = strlen(token) + 32;
	r->base = malloc(blen);
	r->auth = malloc(alen);
	if (!id || !r->base || !r->auth)
		goto out_fail;
	snprintf(r->base, blen, "%.*s/v1/servers/%s/", (int)ul, api_url, id);
	snprintf(r->auth, alen, "Authorization: Bearer %s", token);
	r->timeout_ms = timeout_ms;
	const char *labels[] = { "route", "outcome", NULL };
	r->sent = cc_counter("cosmic_clash_gameserver_reports_total",
			     "Attempts to send a receipt or result to cc-api, by route and outcome.", labels, 32);
	pthread_mutex_init(&r->lock, NULL);
	if (cc_clock_cond_init(&r->wake) != 0 || cc_clock_cond_init(&r->idle) != 0 ||
	    pthread_create(&r->thread, NULL, reporter_thread, r) != 0) {
		cc_log_error("reporter_failed", CC_LOG_STR("reason", "thread start"));
		goto out_fail;
	}
	free(id);
	return r;
out_fail:
	free(id);
	free(r->base);
	if (r->auth)
		wipe_free(r->auth);
	free(r);
	return NULL;
}

/*
 * Appends j (owned from here on) unless limit jobs are queued. Receipts
 * (one pair per connection: a player reconnecting or resuming in a loop
 * makes as many as it likes) are held to CC_REPORTER_RECEIPTS_MAX, so a
 * flood of them can never crowd out the match result.
 */
static int enqueue(struct cc_reporter *r, struct job *j, int limit)
{
	const char *route = j->route;
	pthread_mutex_lock(&r->lock);
	if (r->queued >= limit) {
		pthread_mutex_unlock(&r->lock);
		cc_log_error("report_dropped", CC_LOG_STR("route", route), CC_LOG_STR("reason", "queue full"));
		job_free(j);
		return CC_ETOOBIG;
	}
	if (r->tail)
		r->tail->next = j;
	else
		r->head = j;
	r->tail = j;
	r->queued++;
	pthread_cond_signal(&r->wake);
	pthread_mutex_unlock(&r->lock);
	return 0;
}

/* A job for route; body copied unless NULL. NULL when out of memory (logged). */
static struct job *job_new(const char *route, const char *body, int64_t deadline_ms)
{
	struct job *j = calloc(1, sizeof *j);
	if (j) {
		snprintf(j->route, sizeof j->route, "%s", route);
		j->deadline_ms = cc_clock_ms() + deadline_ms;
		if (body && !(j->body = strdup(body))) {
			free(j);
			j = NULL;
		}
	}
	if (!j)
		cc_log_error("report_dropped", CC_LOG_STR("route", route), CC_LOG_STR("reason", "out of memory"));
	return j;
}

int cc_reporter_post(struct cc_reporter *r, const char *route, const char *json_body, int64_t deadline_ms)
{
	struct job *j = job_new(route, json_body, deadline_ms);
	return j ? enqueue(r, j, CC_REPORTER_QUEUE_MAX) : CC_ENOMEM;
}

int cc_reporter_connect(struct cc_reporter *r, const char *player_id, const char *connection_id)
{
	char body[160];
	snprintf(body, sizeof body, "{\"player_id\":\"%s\",\"connection_id\":\"%s\"}", player_id, connection_id);
	struct job *j = job_new("connect", body, 30000);
	if (!j)
		return CC_ENOMEM;
	snprintf(j->player_id, sizeof j->player_id, "%s", player_id);
	return enqueue(r, j, CC_REPORTER_RECEIPTS_MAX);
}

int cc_reporter_disconnect(struct cc_reporter *r, const char *player_id, const char *reason)
{
	struct job *j = job_new("disconnect", NULL, 30000);
	if (!j)
		return CC_ENOMEM;
	snprintf(j->player_id, sizeof j->player_id, "%s", player_id);
	snprintf(j->reason, sizeof j->reason, "%s", reason);
	return enqueue(r, j, CC_REPORTER_RECEIPTS_MAX);
}

bool cc_reporter_drain(struct cc_reporter *r, int64_t timeout_ms)
{
	int64_t end = cc_clock_ms() + timeout_ms;
	pthread_mutex_lock(&r->lock);
	while (r->head && cc_clock_ms() < end)
		timed_wait(r, &r->idle, end - cc_clock_ms());
	bool empty = r->head == NULL;
	pthread_mutex_unlock(&r->lock);
	return empty;
}

uint64_t cc_reporter_succeeded(struct cc_reporter *r, const char *route)
{
	uint64_t n = 0;
	pthread_mutex_lock(&r->lock);
	for (size_t i = 0; i < CC_ARRAY_LEN(r->succeeded); i++)
		if (strcmp(r->succeeded[i].route, route) == 0)
			n = r->succeeded[i].n;
	pthread_mutex_unlock(&r->lock);
	return n;
}

void cc_reporter_free(struct cc_reporter *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	r->stop = true;
	pthread_cond_broadcast(&r->wake);
	pthread_mutex_unlock(&r->lock);
	pthread_join(r->thread, NULL);
	while (r->head) {
		struct job *j = r->head;
		r->head = j->next;
		job_free(j);
	}
	pthread_cond_destroy(&r->wake);
	pthread_cond_destroy(&r->idle);
	pthread_mutex_destroy(&r->lock);
	free(r->base);
	wipe_free(r->auth);
	free(r);
}
