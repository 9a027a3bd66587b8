/*
 * demo.c - cc-player --mode=demo: a short, checked session per player.
 *
 * The players are split over the threads (player i belongs to thread
 * i % threads, which owns its revisions) and the session runs in phases
 * with a barrier between them, so every player is queued before anyone
 * heartbeats, as the matcher will need when it joins the demo. The phases
 * are a table: a later step (answer a proposal, fetch the assignment,
 * connect to the game server) is one more row.
 *
 * Like a game client, every call is sent again (up to DEMO_ATTEMPTS times,
 * with backoff) when cc-api answers 503 retryable; the summary counts those
 * retries, because a player felt them as delay. Any other answer than the
 * one the step expects is an error: it is logged
 * with the player's index, the player takes no further part, and the run
 * exits 1. The last and only line on stdout is the summary.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "latency.h"
#include "log.h"
#include "player.h"
#include "banned.h"

#define DEMO_ATTEMPTS 5 /* per call, for retryable 503s (SPEC 2), as a game client would */

struct demo_counts {
	long logged_in;  /* successful logins */
	long probes;     /* challenge + answer pairs */
	long queued;     /* tickets created */
	long heartbeats; /* heartbeats accepted */
	long cancelled;  /* tickets cancelled */
	long reads;      /* tickets re-read with GET */
	long errors;     /* unexpected answers or transport failures */
};

/* Holds the workers until the main thread knows how many started. */
struct demo_gate {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool open;
	pthread_barrier_t barrier; /* one wait per phase round; counts the started workers */
};

struct demo_worker {
	const struct player_config *cfg;
	struct demo_gate *gate;     /* shared by all workers */
	int index;                  /* thread number; owns players index, index + threads, ... */
	int threads;                /* worker count */
	struct pc_player *players;  /* every player (shared array; disjoint slots per worker) */
	struct pc_client *client;   /* this thread's kept-alive connection */
	struct pc_latency latency;  /* every request this thread sent */
	struct demo_counts counts;
};

typedef int (*demo_step)(struct demo_worker *w, struct pc_player *p);

static int step_login(struct demo_worker *w, struct pc_player *p)
{
	int rc = pc_login(w->client, p);
	w->counts.logged_in += rc == 0;
	return rc;
}

static int step_probe(struct demo_worker *w, struct pc_player *p)
{
	for (int r = 0; r < w->cfg->n_regions; r++) {
		int rc = pc_probe(w->client, p, w->cfg->region[r]);
		if (rc != 0)
			return rc;
		w->counts.probes++;
	}
	return 0;
}

static int step_queue(struct demo_worker *w, struct pc_player *p)
{
	char key[64];
	snprintf(key, sizeof key, "demo-%lld-%d", (long long)w->cfg->seed, p->index);
	int rc = pc_enqueue(w->client, p, w->cfg->playlist, w->cfg->protocol_version, w->cfg->build, key);
	w->counts.queued += rc == 0;
	return rc;
}

/* One heartbeat at the revision we hold; the answer's revision is the next one. */
static int step_heartbeat(struct demo_worker *w, struct pc_player *p)
{
	int64_t before = p->revision;
	int rc = pc_heartbeat(w->client, p);
	if (rc == 0 && p->revision <= before) {
		cc_log_warn("demo_unexpected", CC_LOG_INT("player", p->index), CC_LOG_STR("step", "heartbeat"),
			    CC_LOG_INT("revision_before", before), CC_LOG_INT("revision_after", p->revision));
		return CC_EINVAL;
	}
	w->counts.heartbeats += rc == 0;
	return rc;
}

static bool chosen(int64_t every, int index)
{
	return every > 0 && index % every == 0;
}

static int step_cancel(struct demo_worker *w, struct pc_player *p)
{
	if (!chosen(w->cfg->cancel_every, p->index))
		return 0;
	int rc = pc_cancel(w->client, p);
	if (rc == 0 && strcmp(p->state, "CANCELLED") != 0) {
		cc_log_warn("demo_unexpected", CC_LOG_INT("player", p->index), CC_LOG_STR("step", "cancel"),
			    CC_LOG_STR("state", p->state));
		return CC_EINVAL;
	}
	w->counts.cancelled += rc == 0;
	return rc;
}

/* Recovery read: the server's copy must be at least as new as ours and in the state we expect. */
static int step_read(struct demo_worker *w, struct pc_player *p)
{
	static const char *const active[] = { "QUEUED", "PROPOSED", "MATCHED", "ASSIGNED" };
	if (!chosen(w->cfg->read_every, p->index))
		return 0;
	int64_t held = p->revision;
	char held_state[sizeof p->state];
	memcpy(held_state, p->state, sizeof held_state);
	int rc = pc_get_ticket(w->client, p);
	if (rc != 0)
		return rc;
	bool ok = p->revision >= held;
	if (strcmp(held_state, "CANCELLED") == 0) {
		ok = ok && strcmp(p->state, "CANCELLED") == 0;
	} else {
		bool is_active = false;
		for (size_t i = 0; i < CC_ARRAY_LEN(active); i++)
			is_active = is_active || strcmp(p->state, active[i]) == 0;
		ok = ok && is_active;
	}
	if (!ok) {
		cc_log_warn("demo_unexpected", CC_LOG_INT("player", p->index), CC_LOG_STR("step", "read"),
			    CC_LOG_STR("held_state", held_state), CC_LOG_INT("held_revision", held),
			    CC_LOG_STR("state", p->state), CC_LOG_INT("revision", p->revision));
		return CC_EINVAL;
	}
	w->counts.reads++;
	return 0;
}

/* The session, in order. repeat: the phase runs --heartbeats rounds. */
static const struct demo_phase {
	const char *name;
	demo_step step;
	bool repeat;
} phases[] = {
	{ "login", step_login, false },
	{ "probe", step_probe, false },
	{ "queue", step_queue, false },
	{ "heartbeat", step_heartbeat, true },
	{ "cancel", step_cancel, false },
	{ "read", step_read, false },
};

static void *demo_worker_main(void *arg)
{
	struct demo_worker *w = arg;
	const struct player_config *cfg = w->cfg;
	pthread_mutex_lock(&w->gate->lock);
	while (!w->gate->open)
		pthread_cond_wait(&w->gate->cond, &w->gate->lock);
	pthread_mutex_unlock(&w->gate->lock);
	for (size_t ph = 0; ph < CC_ARRAY_LEN(phases); ph++) {
		int64_t rounds = phases[ph].repeat ? cfg->heartbeats : 1;
		for (int64_t round = 0; round < rounds; round++) {
			for (int64_t i = w->index; i < cfg->players; i += w->threads) {
				struct pc_player *p = &w->players[i];
				if (p->broken)
					continue;
				int rc = w->client ? phases[ph].step(w, p) : CC_ENOMEM;
				if (rc != 0) {
					cc_log_warn("demo_step_failed", CC_LOG_INT("player", p->index),
						    CC_LOG_STR("step", phases[ph].name), CC_LOG_STR("error", cc_errname(rc)),
						    CC_LOG_STR("problem", w->client ? pc_client_problem(w->client) : "no client"));
					w->counts.errors++;
					p->broken = true;
				}
			}
			/* Everyone finishes a round before anyone starts the next. */
			pthread_barrier_wait(&w->gate->barrier);
		}
	}
	return NULL;
}

int pc_demo_run(const struct player_config *cfg)
{
	int threads = (int)(cfg->threads < cfg->players ? cfg->threads : cfg->players);
	struct pc_player *players = calloc((size_t)cfg->players, sizeof *players);
	struct demo_worker *workers = calloc((size_t)threads, sizeof *workers);
	pthread_t *tids = calloc((size_t)threads, sizeof *tids);
	struct demo_counts total = { 0 };
	unsigned long long retries = 0;
	struct pc_latency all;
	struct demo_gate gate = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
	int started = 0, status = 1;

	pc_latency_init(&all, 0);
	if (!players || !workers || !tids) {
		fprintf(stderr, "cc-player: out of memory\n");
		goto out;
	}
	for (int i = 0; i < cfg->players; i++)
		pc_player_init(&players[i], "player", cfg->seed, i);
	for (int t = 0; t < threads; t++) {
		struct demo_worker *w = &workers[t];
		*w = (struct demo_worker){ .cfg = cfg, .gate = &gate, .index = t, .threads = threads,
					   .players = players };
		pc_latency_init(&w->latency, 0);
		/* A worker without a client still walks the phases, so the barrier is always met. */
		w->client = pc_client_new(cfg->api_url, (long)cfg->timeout_ms);
		if (w->client) {
			pc_client_record(w->client, &w->latency);
			pc_client_set_attempts(w->client, DEMO_ATTEMPTS);
		}
		else
			cc_log_error("client_failed", CC_LOG_STR("api_url", cfg->api_url));
	}
	for (; started < threads; started++)
		if (pthread_create(&tids[started], NULL, demo_worker_main, &workers[started]) != 0)
			break;
	/* The barrier must count only threads that exist, or the others would wait forever. */
	if (started < threads) {
		cc_log_error("threads_failed", CC_LOG_INT("wanted", threads), CC_LOG_INT("started", started));
		for (int t = started; t < threads; t++)
			workers[t].counts.errors++;
	}
	if (started > 0)
		pthread_barrier_init(&gate.barrier, NULL, (unsigned)started);
	pthread_mutex_lock(&gate.lock);
	gate.open = true;
	pthread_cond_broadcast(&gate.cond);
	pthread_mutex_unlock(&gate.lock);
	for (int t = 0; t < started; t++)
		pthread_join(tids[t], NULL);
	if (started > 0)
		pthread_barrier_destroy(&gate.barrier);

	for (int t = 0; t < threads; t++) {
		struct demo_counts *c = &workers[t].counts;
		total.logged_in += c->logged_in;
		total.probes += c->probes;
		total.queued += c->queued;
		total.heartbeats += c->heartbeats;
		total.cancelled += c->cancelled;
		total.reads += c->reads;
		total.errors += c->errors;
		(void)pc_latency_merge(&all, &workers[t].latency);
		retries += workers[t].client ? pc_client_retries(workers[t].client) : 0;
	}
	cc_log_info("demo_finished", CC_LOG_INT("requests", all.n), CC_LOG_INT("reads", total.reads),
		    CC_LOG_INT("errors", total.errors));
	printf("demo: %lld players, %ld logged in, %ld probes, %ld queued, %ld heartbeats, %ld cancelled, "
	       "%ld errors, %llu retries, p50 %.1f ms, p99 %.1f ms\n",
	       (long long)cfg->players, total.logged_in, total.probes, total.queued, total.heartbeats,
	       total.cancelled, total.errors, retries, pc_latency_percentile_ms(&all, 50), pc_latency_percentile_ms(&all, 99));
	fflush(stdout);
	status = total.errors == 0 && total.logged_in == cfg->players ? 0 : 1;
out:
	for (int t = 0; workers && t < threads; t++) {
		pc_client_free(workers[t].client);
		pc_latency_release(&workers[t].latency);
	}
	pc_latency_release(&all);
	free(tids);
	free(workers);
	free(players);
	return status;
}
