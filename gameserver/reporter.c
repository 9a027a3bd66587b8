/*
 * reporter.c - see reporter.h. A mutex-guarded singly linked FIFO with a
 * count cap, one worker thread, and cond waits with a monotonic clock so
 * a stop or a new job wakes the worker at once.
 */
#include "reporter.h"

#include <pthread.h>
#include <stdatomic.h>
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
	atomic_bool stop;     /* read by the heartbeat thread too */
	struct {
		char route[32];
		uint64_t n;
	} succeeded[8];         /* 2xx jobs per route (first 8 routes seen) */
	struct cc_metric *sent; /* cosmic_clash_gameserver_reports_total{route,outcome} */
	struct {
		char player_id[CC_UUID_BUF];
		int64_t generation;
	} leases[LEASES_MAX];   /* from connect answers; reporter thread only */
	struct {
		_Atomic uint64_t slot;     /* latest (phase << 32 | tick), written by the tick thread */
		atomic_bool set;           /* the slot was written at least once */
		atomic_int over;           /* 0 live/unknown, 1 COMPLETED, 2 FAILED (from an answer) */
		_Atomic uint64_t sent, withheld;
		int64_t interval_ms;
		bool running;              /* the thread was started (joined by free) */
		pthread_t thread;
		pthread_mutex_t lock;      /* guards the wake-up only */
		pthread_cond_t wake;       /* a phase change, or stop */
		int woken_phase;           /* the phase last signalled (tick thread, under lock) */
		bool phase_changed;        /* under lock */
	} hb;
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

/* ---- heartbeats (issue 19) ---------------------------------------------------------- */

static const char *const phase_names[] = { "loading", "playing", "ended" };

/*
 * One heartbeat: POST heartbeat {"phase","tick"}; on 200 the answer's
 * match_state is kept. Returns true on a 2xx. Heartbeat thread.
 */
static bool heartbeat_once(struct cc_reporter *r, int phase, uint32_t tick)
{
	char url[512], body[64];
	snprintf(url, sizeof url, "%sheartbeat", r->base);
	snprintf(body, sizeof body, "{\"phase\":\"%s\",\"tick\":%u}", phase_names[phase], (unsigned)tick);
	const char *headers[] = { r->auth, "Content-Type: application/json", NULL };
	struct cc_http_client_request req = { .method = "POST", .url = url, .headers = headers, .body = body,
					      .body_len = strlen(body), .timeout_ms = r->timeout_ms,
					      .max_response_bytes = 16 * 1024 };
	struct cc_http_client_response resp = { 0 };
	int rc = cc_http_client_do(&req, &resp);
	const char *labels[] = { "heartbeat", NULL, NULL };
	bool ok = rc == 0 && resp.status >= 200 && resp.status < 300;
	labels[1] = rc != 0 ? "transport" : ok ? "ok" : resp.status >= 500 || resp.status == 429 ? "retry" : "refused";
	cc_metric_add(r->sent, labels, 1);
	atomic_fetch_add(&r->hb.sent, 1);
	if (ok) {
		cJSON *o = cJSON_Parse(resp.body ? resp.body : "");
		const cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "match_state");
		if (cJSON_IsString(st)) {
			int over = strcmp(st->valuestring, "COMPLETED") == 0 ? 1 : strcmp(st->valuestring, "FAILED") == 0 ? 2 : 0;
			if (over && atomic_exchange(&r->hb.over, over) != over)
				cc_log_warn("heartbeat_match_over", CC_LOG_STR("match_state", st->valuestring),
					    CC_LOG_STR("phase", phase_names[phase]), CC_LOG_INT("tick", tick));
		}
		cJSON_Delete(o);
		cc_log_debug("heartbeat_sent", CC_LOG_STR("phase", phase_names[phase]), CC_LOG_INT("tick", tick));
	} else {
		cc_log_debug("heartbeat_failed", CC_LOG_STR("phase", phase_names[phase]), CC_LOG_INT("tick", tick),
			     CC_LOG_STR("error", rc != 0 ? cc_errname(rc) : ""), CC_LOG_INT("status", rc != 0 ? 0 : resp.status),
			     CC_LOG_STR("response", rc == 0 && resp.body ? resp.body : ""));
	}
	cc_http_client_response_release(&resp);
	return ok;
}

static void *heartbeat_thread(void *arg)
{
	struct cc_reporter *r = arg;
	uint64_t last = 0;
	bool sent_any = false, failing = false;
	int64_t due = cc_clock_ms() + r->hb.interval_ms;
	pthread_mutex_lock(&r->hb.lock);
	while (!r->stop) {
		int64_t now = cc_clock_ms();
		if (now < due && !r->hb.phase_changed) {
			struct timespec ts = cc_clock_timespec(cc_clock_ns() + (due - now) * 1000000);
			(void)pthread_cond_timedwait(&r->hb.wake, &r->hb.lock, &ts);
			continue;
		}
		r->hb.phase_changed = false;
		due = now + r->hb.interval_ms;
		if (!atomic_load(&r->hb.set))
			continue; /* nothing ticked yet */
		uint64_t v = atomic_load(&r->hb.slot);
		int phase = (int)(v >> 32);
		uint32_t tick = (uint32_t)v;
		if (sent_any && v == last && phase != CC_REPORTER_PHASE_ENDED) {
			/* The tick did not move: a hung loop must look dead, so say nothing. */
			atomic_fetch_add(&r->hb.withheld, 1);
			cc_metric_add(r->sent, (const char *[]){ "heartbeat", "withheld", NULL }, 1);
			cc_log_warn("heartbeat_withheld", CC_LOG_STR("phase", phase_names[phase]), CC_LOG_INT("tick", tick),
				    CC_LOG_STR("why", "the tick has not advanced since the last heartbeat"));
			continue;
		}
		last = v;
		sent_any = true;
		pthread_mutex_unlock(&r->hb.lock);
		bool ok = heartbeat_once(r, phase, tick);
		if (!ok && !failing)
			cc_log_warn("heartbeat_failing", CC_LOG_STR("phase", phase_names[phase]), CC_LOG_INT("tick", tick),
				    CC_LOG_STR("why", "cc-api did not take the heartbeat; the next goes at the next interval"));
		else if (ok && failing)
			cc_log_info("heartbeat_recovered", CC_LOG_STR("phase", phase_names[phase]), CC_LOG_INT("tick", tick));
		failing = !ok;
		pthread_mutex_lock(&r->hb.lock);
	}
	pthread_mutex_unlock(&r->hb.lock);
	return NULL;
}

int cc_reporter_heartbeat_start(struct cc_reporter *r, int64_t interval_ms)
{
	if (r->hb.running)
		return CC_ESTATE;
	r->hb.interval_ms = interval_ms < 10 ? 10 : interval_ms;
	if (pthread_create(&r->hb.thread, NULL, heartbeat_thread, r) != 0) {
		cc_log_error("reporter_failed", CC_LOG_STR("reason", "heartbeat thread start"));
		return CC_EIO;
	}
	r->hb.running = true;
	return 0;
}

void cc_reporter_heartbeat_set(struct cc_reporter *r, enum cc_reporter_phase phase, uint32_t tick)
{
	atomic_store(&r->hb.slot, (uint64_t)phase << 32 | tick);
	atomic_store(&r->hb.set, true);
	if ((int)phase != r->hb.woken_phase) {
		/* woken_phase is the tick thread's alone; the flag is the heartbeat thread's too. */
		r->hb.woken_phase = (int)phase;
		pthread_mutex_lock(&r->hb.lock);
		r->hb.phase_changed = true;
		pthread_cond_signal(&r->hb.wake);
		pthread_mutex_unlock(&r->hb.lock);
	}
}

bool cc_reporter_match_over(struct cc_reporter *r, char *state, size_t cap)
{
	int over = atomic_load(&r->hb.over);
	if (state && cap)
		snprintf(state, cap, "%s", over == 1 ? "COMPLETED" : over == 2 ? "FAILED" : "");
	return over != 0;
}

uint64_t cc_reporter_heartbeats_sent(struct cc_reporter *r) { return atomic_load(&r->hb.sent); }
uint64_t cc_reporter_heartbeats_withheld(struct cc_reporter *r) { return atomic_load(&r->hb.withheld); }

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
			     "Attempts to send a receipt, the result, a no-show or a heartbeat to cc-api, by route and outcome "
			     "(heartbeat withheld: the tick had not advanced, nothing was sent).", labels, 32);
	pthread_mutex_init(&r->lock, NULL);
	pthread_mutex_init(&r->hb.lock, NULL);
	r->hb.woken_phase = CC_REPORTER_PHASE_LOADING;
	if (cc_clock_cond_init(&r->wake) != 0 || cc_clock_cond_init(&r->idle) != 0 || cc_clock_cond_init(&r->hb.wake) != 0 ||
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
	pthread_mutex_lock(&r->hb.lock);
	pthread_cond_broadcast(&r->hb.wake);
	pthread_mutex_unlock(&r->hb.lock);
	pthread_join(r->thread, NULL);
	if (r->hb.running)
		pthread_join(r->hb.thread, NULL);
	while (r->head) {
		struct job *j = r->head;
		r->head = j->next;
		job_free(j);
	}
	pthread_cond_destroy(&r->wake);
	pthread_cond_destroy(&r->idle);
	pthread_cond_destroy(&r->hb.wake);
	pthread_mutex_destroy(&r->hb.lock);
	pthread_mutex_destroy(&r->lock);
	free(r->base);
	wipe_free(r->auth);
	free(r);
}
