/*
 * bench.c - cc-player --mode=heartbeat-bench: heartbeat throughput and
 * latency against a running cc-api.
 *
 * Set-up: every player logs in, probes the first region, queues and
 * re-reads its ticket (the server must run with a ticket TTL longer than
 * the run, or tickets expire under the bench). Set-up calls retry
 * retryable 503s like a game client; the measured heartbeats never do.
 * Running again with the same --seed reuses the players: the queue call
 * replays through its Idempotency-Key and the re-read gives the revision. Thread t owns players t, t + threads, ..., so it always
 * knows their revisions: a heartbeat at a stale revision would be a 409 of
 * our own making, and counts as an error.
 *
 * Then all threads start together and heartbeat their players round-robin
 * for warmup + duration seconds; only requests that start after the warm-up
 * are measured. Closed loop (--rate=0): each thread sends the next request
 * as soon as the last is answered, so throughput is what the server gives
 * at that concurrency. Open loop (--rate=R): each thread is given every
 * threads/R seconds a planned send time and latency counts from that time,
 * not from when the request actually left, so a server that falls behind
 * shows it in the tail instead of silently slowing the client down
 * (coordinated omission).
 *
 * Every sample is kept, so the percentiles are exact (nearest rank).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client.h"
#include "latency.h"
#include "sys/clock.h"
#include "sys/log.h"
#include "player.h"
#include "sys/banned.h"

#define NS_PER_S 1000000000ull
#define LATE_NS 1000000ull /* an open-loop send more than 1 ms behind plan counts as late */

/* The start line: workers report ready, the main thread fires the gun. */
struct bench_sync {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int ready;     /* workers done with set-up */
	bool go;       /* t0 is set: start */
	uint64_t t0;   /* monotonic ns at which the run starts */
};

struct bench_worker {
	const struct player_config *cfg;
	struct bench_sync *sync;
	int index;                 /* thread number; owns players index, index + threads, ... */
	int threads;
	struct pc_player *players; /* every player (shared array; disjoint slots per worker) */
	struct pc_client *client;  /* this thread's kept-alive connection */
	struct pc_latency latency; /* measured heartbeats */
	long setup_errors;         /* players that could not be set up */
	uint64_t setup_retries;    /* retryable 503s sent again during set-up */
	uint64_t requests;         /* measured heartbeats sent */
	uint64_t errors;           /* measured heartbeats that failed */
	uint64_t resyncs;          /* re-reads after a failure (not measured) */
	uint64_t late;             /* open loop: sends more than LATE_NS behind plan */
};

/* Pacing, not synchronisation: waits for the planned send time. */
static void sleep_until(uint64_t when)
{
	struct timespec ts = cc_clock_timespec((int64_t)when);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void setup_player(struct bench_worker *w, struct pc_player *p)
{
	const struct player_config *cfg = w->cfg;
	char key[64];
	const char *step = "login";
	snprintf(key, sizeof key, "bench-%lld-%d", (long long)cfg->seed, p->index);
	int rc = pc_login(w->client, p);
	if (rc == 0) {
		step = "probe";
		rc = pc_probe(w->client, p, cfg->region[0], NULL);
	}
	if (rc == 0) {
		step = "queue";
		rc = pc_enqueue(w->client, p, cfg->playlist, cfg->protocol_version, cfg->build, key);
	}
	/* A player of an earlier run (same seed) gets its ticket back by the
	 * idempotent replay, at the revision it was created with: re-read it. */
	if (rc == 0) {
		step = "read";
		rc = pc_get_ticket(w->client, p);
	}
	if (rc == 0 && strcmp(p->state, "QUEUED") != 0) {
		step = "state";
		rc = CC_ESTATE;
	}
	if (rc != 0) {
		cc_log_warn("bench_setup_failed", CC_LOG_INT("player", p->index), CC_LOG_STR("step", step),
			    CC_LOG_STR("error", cc_errname(rc)), CC_LOG_STR("problem", pc_client_problem(w->client)));
		p->broken = true;
		w->setup_errors++;
	}
}

/* After a failed heartbeat: learn the server's revision, or retire the player. */
static void resync(struct bench_worker *w, struct pc_player *p, int rc)
{
	cc_log_warn("bench_heartbeat_failed", CC_LOG_INT("player", p->index), CC_LOG_STR("error", cc_errname(rc)),
		    CC_LOG_STR("problem", pc_client_problem(w->client)));
	w->resyncs++;
	if (pc_get_ticket(w->client, p) != 0 || strcmp(p->state, "QUEUED") != 0) {
		cc_log_warn("bench_player_retired", CC_LOG_INT("player", p->index), CC_LOG_STR("state", p->state),
			    CC_LOG_STR("problem", pc_client_problem(w->client)));
		p->broken = true;
	}
}

/* The next usable player after *cursor, round-robin; NULL when none is left. */
static struct pc_player *next_player(struct bench_worker *w, int64_t *cursor)
{
	int64_t n = w->cfg->players;
	for (int64_t tries = 0; tries <= n / w->threads; tries++) {
		int64_t i = *cursor;
		*cursor += w->threads;
		if (*cursor >= n)
			*cursor = w->index;
		if (!w->players[i].broken)
			return &w->players[i];
	}
	return NULL;
}

static void run_closed(struct bench_worker *w, uint64_t warm_end, uint64_t end)
{
	int64_t cursor = w->index;
	struct pc_player *p;
	uint64_t start;
	while ((start = (uint64_t)cc_clock_ns()) < end && (p = next_player(w, &cursor))) {
		int rc = pc_heartbeat(w->client, p);
		uint64_t done = (uint64_t)cc_clock_ns();
		if (start >= warm_end) {
			(void)pc_latency_add(&w->latency, done - start);
			w->requests++;
			w->errors += rc != 0;
		}
		if (rc != 0)
			resync(w, p, rc);
	}
}

static void run_open(struct bench_worker *w, uint64_t t0, uint64_t warm_end, uint64_t end)
{
	uint64_t interval = (uint64_t)((double)w->threads * (double)NS_PER_S / w->cfg->rate);
	/* Threads are staggered across one interval so the total rate is smooth. */
	uint64_t planned = t0 + interval * (uint64_t)w->index / (uint64_t)w->threads;
	int64_t cursor = w->index;
	struct pc_player *p;
	for (; planned < end && (p = next_player(w, &cursor)); planned += interval) {
		sleep_until(planned);
		uint64_t start = (uint64_t)cc_clock_ns();
		int rc = pc_heartbeat(w->client, p);
		uint64_t done = (uint64_t)cc_clock_ns();
		if (planned >= warm_end) {
			(void)pc_latency_add(&w->latency, done - planned);
			w->requests++;
			w->errors += rc != 0;
			w->late += start - planned > LATE_NS;
		}
		if (rc != 0)
			resync(w, p, rc);
	}
}

static void *bench_worker_main(void *arg)
{
	struct bench_worker *w = arg;
	const struct player_config *cfg = w->cfg;
	/* Set-up calls retry as a client does (--retry-horizon-ms); measured heartbeats never do. */
	pc_client_set_retry_horizon(w->client, cfg->retry_horizon_ms);
	for (int64_t i = w->index; i < cfg->players; i += w->threads)
		setup_player(w, &w->players[i]);
	w->setup_retries = pc_client_retries(w->client);
	pc_client_set_retry_horizon(w->client, 0);

	pthread_mutex_lock(&w->sync->lock);
	w->sync->ready++;
	pthread_cond_broadcast(&w->sync->cond);
	while (!w->sync->go)
		pthread_cond_wait(&w->sync->cond, &w->sync->lock);
	uint64_t t0 = w->sync->t0;
	pthread_mutex_unlock(&w->sync->lock);

	uint64_t warm_end = t0 + (uint64_t)cfg->warmup_seconds * NS_PER_S;
	uint64_t end = warm_end + (uint64_t)cfg->duration_seconds * NS_PER_S;
	if (cfg->rate > 0)
		run_open(w, t0, warm_end, end);
	else
		run_closed(w, warm_end, end);
	return NULL;
}

/* Prints the results as key=value lines (stdout) for scripts. */
static void report(const struct player_config *cfg, int threads, struct pc_latency *all, double setup_s,
		   long setup_errors, uint64_t setup_retries, uint64_t requests, uint64_t errors, uint64_t resyncs,
		   uint64_t late)
{
	double secs = (double)cfg->duration_seconds;
	printf("mode=heartbeat-bench\n");
	printf("loop=%s\n", cfg->rate > 0 ? "open" : "closed");
	printf("threads=%d\n", threads);
	printf("players=%lld\n", (long long)cfg->players);
	printf("target_rate_rps=%.1f\n", cfg->rate);
	printf("setup_seconds=%.3f\n", setup_s);
	printf("setup_errors=%ld\n", setup_errors);
	printf("setup_retries=%llu\n", (unsigned long long)setup_retries);
	printf("duration_seconds=%lld\n", (long long)cfg->duration_seconds);
	printf("requests=%llu\n", (unsigned long long)requests);
	printf("errors=%llu\n", (unsigned long long)errors);
	printf("resyncs=%llu\n", (unsigned long long)resyncs);
	printf("late_sends=%llu\n", (unsigned long long)late);
	printf("throughput_rps=%.1f\n", (double)requests / secs);
	printf("latency_mean_ms=%.3f\n", pc_latency_mean_ms(all));
	printf("latency_p50_ms=%.3f\n", pc_latency_percentile_ms(all, 50));
	printf("latency_p90_ms=%.3f\n", pc_latency_percentile_ms(all, 90));
	printf("latency_p99_ms=%.3f\n", pc_latency_percentile_ms(all, 99));
	printf("latency_max_ms=%.3f\n", pc_latency_percentile_ms(all, 100));
	printf("samples=%zu\n", all->n);
	printf("samples_dropped=%llu\n", (unsigned long long)all->dropped);
	fflush(stdout);
}

int pc_bench_run(const struct player_config *cfg)
{
	int threads = (int)cfg->threads;
	struct pc_player *players = calloc((size_t)cfg->players, sizeof *players);
	struct bench_worker *workers = calloc((size_t)threads, sizeof *workers);
	pthread_t *tids = calloc((size_t)threads, sizeof *tids);
	struct bench_sync sync = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
	struct pc_latency all;
	uint64_t requests = 0, errors = 0, resyncs = 0, late = 0, setup_retries = 0;
	long setup_errors = 0;
	int started = 0, status = 1;

	pc_latency_init(&all, (size_t)cfg->max_samples);
	if (!players || !workers || !tids) {
		fprintf(stderr, "cc-player: out of memory\n");
		goto out;
	}
	for (int i = 0; i < cfg->players; i++) {
		pc_player_init(&players[i], "bench", cfg->seed, i);
		if (cfg->hex_tickets)
			pc_player_hex_ticket(&players[i]);
	}
	for (int t = 0; t < threads; t++) {
		struct bench_worker *w = &workers[t];
		*w = (struct bench_worker){ .cfg = cfg, .sync = &sync, .index = t, .threads = threads,
					    .players = players };
		pc_latency_init(&w->latency, (size_t)cfg->max_samples / (size_t)threads);
		w->client = pc_client_new(cfg->api_url, (long)cfg->timeout_ms, t);
		if (!w->client) {
			fprintf(stderr, "cc-player: cannot create an HTTP client for %s\n", cfg->api_url);
			goto out;
		}
	}

	uint64_t setup_start = (uint64_t)cc_clock_ns();
	for (; started < threads; started++)
		if (pthread_create(&tids[started], NULL, bench_worker_main, &workers[started]) != 0)
			break;
	pthread_mutex_lock(&sync.lock);
	while (sync.ready < started)
		pthread_cond_wait(&sync.cond, &sync.lock);
	sync.t0 = (uint64_t)cc_clock_ns();
	sync.go = true;
	pthread_cond_broadcast(&sync.cond);
	pthread_mutex_unlock(&sync.lock);
	double setup_s = (double)(sync.t0 - setup_start) / 1e9;
	cc_log_info("bench_started", CC_LOG_INT("threads", started), CC_LOG_DBL("setup_seconds", setup_s));
	for (int t = 0; t < started; t++)
		pthread_join(tids[t], NULL);
	if (started < threads) {
		cc_log_error("threads_failed", CC_LOG_INT("wanted", threads), CC_LOG_INT("started", started));
		setup_errors++;
	}

	for (int t = 0; t < threads; t++) {
		struct bench_worker *w = &workers[t];
		(void)pc_latency_merge(&all, &w->latency);
		requests += w->requests;
		errors += w->errors;
		resyncs += w->resyncs;
		late += w->late;
		setup_errors += w->setup_errors;
		setup_retries += w->setup_retries;
	}
	report(cfg, started, &all, setup_s, setup_errors, setup_retries, requests, errors, resyncs, late);
	status = setup_errors == 0 && errors == 0 && requests > 0 ? 0 : 1;
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
