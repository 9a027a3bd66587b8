/*
 * wait.c - the estimated wait of every Ticket answer (issue 26): the
 * estimated_wait_seconds and estimated_wait_method fields, from the rule of
 * game/wait_estimate.h over the history store/queue_stats.h reads.
 *
 * Every route adds them after its transaction committed, as a statement of
 * its own (READ COMMITTED): inside the SERIALIZABLE transaction the read of
 * proposals and tickets would take predicate locks that concurrent
 * enqueues and claims write into, and they would abort each other (see the
 * top of queue.c). So a replayed POST /v1/queue answer carries a fresh
 * estimate. A history that cannot be read is method unavailable: the
 * ticket's change already committed and must still be answered.
 *
 * The heartbeat, the one route a waiting client calls every few seconds,
 * shares one history read per queue (playlist and reachable regions) for
 * WAIT_SHARE_MS among all its callers in this process, so it stays one
 * round trip almost always; the others read their ticket's own.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "game/formation.h"
#include "store/queue_stats.h"
#include "sys/clock.h"
#include "sys/log.h"
#include "sys/banned.h"

#define WAIT_SHARE_MS 1000 /* a shared history is this fresh at worst */
#define WAIT_SLOTS 16      /* queues shared at once (playlists x region sets in use) */
#define WAIT_KEY_MAX 256

int api_ticket_estimate(struct cc_pg *pg, const char *ticket_id, const char *state, struct cc_wait_estimate *e)
{
	*e = (struct cc_wait_estimate){ .method = CC_WAIT_NOT_QUEUED };
	if (strcmp(state, "QUEUED") != 0)
		return 0;
	struct cc_wait_history h;
	int rc = cc_queue_wait_history(pg, ticket_id, CC_FORMATION_DEFAULT_MAX_RTT_MS, &h);
	if (rc == 0)
		rc = cc_wait_estimate(true, h.rating, h.waited_s, h.v, h.n, e);
	return rc;
}

/* Splices the two fields before the body's closing brace: the rest stays byte for byte PostgreSQL's. */
static void splice(struct api_answer *a, const struct cc_wait_estimate *e)
{
	char *end = strrchr(a->body, '}');
	if (!end)
		return;
	char seconds[32];
	if (e->method == CC_WAIT_RECENT_MATCHES)
		snprintf(seconds, sizeof seconds, "%.0f", e->seconds);
	else
		snprintf(seconds, sizeof seconds, "null");
	size_t head = (size_t)(end - a->body), len = head + 128;
	char *text = malloc(len);
	if (!text)
		return; /* the answer goes out without the estimate rather than not at all */
	snprintf(text, len, "%.*s, \"estimated_wait_seconds\" : %s, \"estimated_wait_method\" : \"%s\"}", (int)head,
		 a->body, seconds, cc_wait_method_name(e->method));
	free(a->body);
	a->body = text;
}

static void unavailable(const char *ticket_id, int rc, struct cc_wait_estimate *e)
{
	cc_log_warn("wait_estimate_unavailable", CC_LOG_STR("ticket_id", ticket_id), CC_LOG_STR("error", cc_strerror(rc)));
	*e = (struct cc_wait_estimate){ .method = CC_WAIT_UNAVAILABLE };
}

/* The estimate of ticket_id in state, or unavailable (logged) when its history cannot be read. */
static void estimate_or_unavailable(struct cc_pg *pg, const char *ticket_id, const char *state, struct cc_wait_estimate *e)
{
	int rc = api_ticket_estimate(pg, ticket_id, state, e);
	if (rc != 0)
		unavailable(ticket_id, rc, e);
}

void api_answer_estimate(struct cc_pg *pg, struct api_answer *a)
{
	if (!a->body || (a->status != 200 && a->status != 201))
		return;
	cJSON *o = cJSON_Parse(a->body);
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");
	const cJSON *state = cJSON_GetObjectItemCaseSensitive(o, "state");
	if (!cJSON_IsObject(o) || !cJSON_IsString(id) || !cJSON_IsString(state) ||
	    cJSON_GetObjectItemCaseSensitive(o, "estimated_wait_method")) {
		cJSON_Delete(o);
		return; /* not a Ticket, or already estimated */
	}
	struct cc_wait_estimate e;
	estimate_or_unavailable(pg, id->valuestring, state->valuestring, &e);
	cJSON_Delete(o);
	splice(a, &e);
}

/*
 * The party queue's answer ({"party", "tickets": [Ticket...]}): each
 * ticket gets its own estimate, the same read as one POST /v1/queue. The
 * body is printed again by cJSON (same members, its own spacing).
 */
void api_answer_estimate_tickets(struct cc_pg *pg, struct api_answer *a)
{
	if (!a->body || (a->status != 200 && a->status != 201))
		return;
	cJSON *o = cJSON_Parse(a->body);
	cJSON *tickets = cJSON_GetObjectItemCaseSensitive(o, "tickets");
	if (!cJSON_IsObject(o) || !cJSON_IsArray(tickets)) {
		cJSON_Delete(o);
		return;
	}
	cJSON *t;
	cJSON_ArrayForEach(t, tickets)
	{
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(t, "id");
		const cJSON *state = cJSON_GetObjectItemCaseSensitive(t, "state");
		if (!cJSON_IsString(id) || !cJSON_IsString(state) ||
		    cJSON_GetObjectItemCaseSensitive(t, "estimated_wait_method"))
			continue;
		struct cc_wait_estimate e;
		estimate_or_unavailable(pg, id->valuestring, state->valuestring, &e);
		bool ok = e.method == CC_WAIT_RECENT_MATCHES
				  ? cJSON_AddNumberToObject(t, "estimated_wait_seconds", e.seconds) != NULL
				  : cJSON_AddNullToObject(t, "estimated_wait_seconds") != NULL;
		if (!ok || !cJSON_AddStringToObject(t, "estimated_wait_method", cc_wait_method_name(e.method))) {
			cJSON_Delete(o);
			return; /* out of memory: the answer goes out without the estimates rather than not at all */
		}
	}
	char *text = cc_json_print(o);
	cJSON_Delete(o);
	if (!text)
		return;
	free(a->body);
	a->body = text;
}

/* ---- the heartbeat's shared history -------------------------------------------- */

struct wait_slot {
	char key[WAIT_KEY_MAX];  /* playlist "|" the regions' text[] literal; "" unused */
	int64_t read_ms;         /* cc_clock_ms() of the read */
	struct cc_wait_history h; /* now_ms, n, v */
};

static pthread_mutex_t wait_lock = PTHREAD_MUTEX_INITIALIZER;
static struct wait_slot wait_slots[WAIT_SLOTS];

/*
 * The text[] literal of the regions t reaches within SPEC 6's limit, in
 * sorted order so one queue has one key; false when it does not fit or a
 * name would need escaping (names are the served regions: never).
 */
static bool regions_literal(const struct cc_ticket *t, char *buf, size_t len)
{
	const char *names[CC_CANDIDATE_MAX_REGIONS];
	size_t n = 0;
	for (size_t i = 0; i < t->cand.n_rtt && i < CC_CANDIDATE_MAX_REGIONS; i++)
		if (t->cand.rtt[i].rtt_ms <= CC_FORMATION_DEFAULT_MAX_RTT_MS)
			names[n++] = t->cand.rtt[i].region;
	for (size_t i = 1; i < n; i++) /* insertion sort: a handful of names */
		for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
			const char *x = names[j];
			names[j] = names[j - 1];
			names[j - 1] = x;
		}
	size_t used = (size_t)snprintf(buf, len, "{");
	for (size_t i = 0; i < n; i++) {
		if (strpbrk(names[i], "\"\\{},") || used >= len)
			return false;
		used += (size_t)snprintf(buf + used, len - used, "%s\"%s\"", i ? "," : "", names[i]);
	}
	if (used >= len)
		return false;
	used += (size_t)snprintf(buf + used, len - used, "}");
	return used < len;
}

void api_answer_estimate_shared(struct cc_pg *pg, const struct cc_ticket *t, struct api_answer *a)
{
	if (!a->body || a->status != 200)
		return;
	struct cc_wait_estimate e = { .method = CC_WAIT_NOT_QUEUED };
	if (t->state == CC_TICKET_QUEUED) {
		char regions[WAIT_KEY_MAX - CC_PLAYLIST_BUF - 1], key[WAIT_KEY_MAX];
		if (!regions_literal(t, regions, sizeof regions)) {
			api_answer_estimate(pg, a); /* its own read, by ticket id */
			return;
		}
		snprintf(key, sizeof key, "%s|%s", t->playlist, regions);
		/* Large (4 KiB of samples): static per thread would do too, but the stack has room. */
		struct cc_wait_history h;
		int64_t now = cc_clock_ms();
		bool hit = false;
		pthread_mutex_lock(&wait_lock);
		size_t oldest = 0;
		for (size_t i = 0; i < WAIT_SLOTS; i++) {
			if (strcmp(wait_slots[i].key, key) == 0 && now - wait_slots[i].read_ms < WAIT_SHARE_MS) {
				h = wait_slots[i].h;
				h.now_ms += now - wait_slots[i].read_ms; /* PostgreSQL's clock, advanced by ours */
				hit = true;
				break;
			}
			if (wait_slots[i].read_ms < wait_slots[oldest].read_ms)
				oldest = i;
		}
		pthread_mutex_unlock(&wait_lock);
		int rc = 0;
		if (!hit && (rc = cc_queue_wait_samples(pg, t->playlist, regions, &h)) == 0) {
			pthread_mutex_lock(&wait_lock);
			snprintf(wait_slots[oldest].key, sizeof wait_slots[oldest].key, "%s", key);
			wait_slots[oldest].read_ms = now;
			wait_slots[oldest].h = h;
			pthread_mutex_unlock(&wait_lock);
		}
		if (rc == 0)
			rc = cc_wait_estimate(true, t->cand.rating, (double)(h.now_ms - t->cand.queued_at_ms) / 1000.0, h.v,
					      h.n, &e);
		if (rc != 0)
			unavailable(t->id, rc, &e);
	}
	splice(a, &e);
}
