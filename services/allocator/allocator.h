/*
 * allocator.h - cc-allocator's internals (SPEC 8), shared by its files:
 *
 *   main.c     options, start-up checks, metrics, the supervisor loop
 *              (NOTIFY listener, the local pool's reaper) and the workers
 *   work.c     one worker's pass: claim, allocate, deliver, publish
 *   publish.c  the roster transaction: assignments, manifest, digest
 *   local.c    the local provider: the warm pool of child processes
 *   agones.c   the agones provider: GameServerAllocation over the
 *              Kubernetes API
 *
 * Isolation: every transaction here runs at READ COMMITTED through
 * cc_pg_run_locked (sys/pg.h), not SERIALIZABLE as SPEC 2 asks of
 * mutations in general, because each is a work-queue claim and SSI aborts
 * one of every two overlapping claims of a queue (tests/bench/
 * allocator.pgbench at 4 clients: 32% of the allocations failed 5 tries,
 * 65/s; at READ COMMITTED none failed, 340/s, same machine, same run).
 * Nothing here decides from a snapshot: each decision is a row lock whose
 * conditions PostgreSQL re-checks on the newest version (FOR UPDATE [SKIP
 * LOCKED] on the match, the allocation, the idle server), a compare-and-set
 * UPDATE (state, claimed_by), or a unique index (one allocation per match,
 * one live allocation per server, one roster per match, one assignment per
 * player and slot), and the transition triggers refuse any illegal move.
 *
 * One struct allocator lives for the whole process; main owns it. Workers
 * each own a PostgreSQL connection and a replica name ("<instance>/w<k>"),
 * so a claim names exactly one thread. The test hook
 * (allocator_testkit_step) is defined only in testkit_*.c, which the
 * Makefile links into cc-testkit-allocator and never into cc-allocator.
 */
#ifndef CC_ALLOCATOR_H
#define CC_ALLOCATOR_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "sys/crypto.h"
#include "sys/metrics.h"
#include "sys/pg.h"
#include "sys/service.h"
#include "store/allocations.h"
#include "store/game_servers.h"

#define ALLOCATOR_MAX_WORKERS 16
#define ALLOCATOR_MAX_CAPACITY 4096
#define ALLOCATOR_INSTANCE_BUF 96

struct allocator_config {
	char *provider;               /* local | agones */
	char *instance_id;            /* stable name of this replica (owner of its local servers) */
	int64_t workers;              /* worker threads (each its own connection) */
	int64_t batch;                /* claims per transaction */
	int64_t poll_interval_ms;     /* a pass at least this often without a NOTIFY */
	int64_t min_pass_interval_ms; /* wake-ups never start an idle worker's passes closer than this */
	int64_t claim_lease_ms;       /* a claim lapses after this; another replica takes over */
	int64_t backoff_min_ms;       /* first no-capacity backoff */
	int64_t backoff_max_ms;       /* no backoff grows past this */
	int64_t workload_ttl_seconds; /* workload token lifetime from the claim */
	int64_t join_token_ttl_seconds; /* join token lifetime from publication */
	char *workload_secret_file;   /* key set: signs workload tokens */
	char *workload_key_id;        /* the key of that set that signs */
	char *join_keys_file;         /* key set: signs join tokens */
	char *join_key_id;            /* the active join key */
	char *api_url;                /* cc-api base URL given to local children */
	/* local */
	int64_t local_capacity;
	int64_t local_port_min;
	int64_t local_port_max;
	char *local_server_command;   /* executable run per server (no shell) */
	char *local_state_dir;        /* allocation files and child logs */
	char *local_address;          /* address players reach the children at */
	char *local_region;           /* game_servers.region of local rows */
	int64_t local_restart_max_ms; /* restart backoff cap */
	/* agones */
	char *k8s_url;
	char *k8s_token_file;
	char *k8s_ca_file;
	char *k8s_serviceaccount_dir;
	char *k8s_namespace;
	char *agones_fleet;
	int64_t k8s_timeout_ms;
	struct cc_service_options svc;
};

/* Outcomes of one provider call; every one but OK leaves the allocation REQUESTED. */
enum alloc_outcome {
	ALLOC_OK,          /* ALLOCATED: the endpoint is persisted */
	ALLOC_NO_CAPACITY, /* no server free: backoff growing with attempts */
	ALLOC_CONTENTION,  /* lost a race inside the provider: retry soon */
	ALLOC_RETRY,       /* transient failure (timeout, 5xx, database): retry with backoff */
	ALLOC_LOST,        /* another replica holds the claim now: leave it */
	ALLOC_REJECTED,    /* the provider refused the request itself (4xx): long backoff, logged */
};

struct allocator_metrics {
	struct cc_metric *allocations;  /* allocations_total{provider,result} */
	struct cc_metric *no_capacity;  /* no_capacity_total{provider} */
	struct cc_metric *step_seconds; /* step_duration_seconds{step} */
	struct cc_metric *passes;       /* passes_total{result} */
	struct cc_metric *children;     /* local_child_exits_total{state} */
	struct cc_metric *published;    /* rosters_published_total */
};

struct local_pool;
struct agones_client;

struct allocator {
	const struct allocator_config *cfg;
	struct cc_service *svc;
	struct cc_pg_options pg_opt;
	struct cc_keyset *join_keys;
	struct cc_keyset *workload_keys;
	bool local;                      /* provider == local */
	char instance[ALLOCATOR_INSTANCE_BUF];
	struct allocator_metrics metrics;
	struct local_pool *pool;         /* local provider */
	struct agones_client *agones;    /* agones provider */
	/* Wake-ups: the supervisor bumps wake_seq on a NOTIFY and broadcasts. */
	pthread_mutex_t lock;
	pthread_cond_t wake;
	uint64_t wake_seq;
	bool db_ready;                   /* a pass reached PostgreSQL */
	char db_why[160];
};

struct allocator_worker {
	struct allocator *a;
	int index;
	char replica[CC_ALLOCATION_OWNER_BUF];
	struct cc_pg *pg;
	pthread_t thread;
	bool started;
};

/*
 * Test hook: cc-testkit-allocator defines it (testkit_step.c) to stop the
 * process at a named step; cc-allocator leaves it undefined (NULL).
 * Steps: "claimed", "allocated", "delivered", "published", and "pass_done" at
 * the end of every pass.
 */
extern void allocator_testkit_step(const char *step) __attribute__((weak));

/* work.c: one pass of a worker; *did_work is true when it claimed anything. */
int allocator_pass(struct allocator_worker *w, bool *did_work);

/* Backoff before the next attempt after `attempts` no-capacity answers (jittered). */
int64_t allocator_backoff_ms(const struct allocator *a, int attempts);

/* Records a step's duration. */
void allocator_observe(struct allocator *a, const char *step, int64_t start_ns);

/* Counts an outcome of provider `provider`. */
void allocator_count(struct allocator *a, const char *result);

/* Signs the workload token of allocation al into out (CC_WORKLOAD_TOKEN_BUF). */
int allocator_workload_token(const struct allocator *a, const struct cc_allocation *al, char *out,
			     size_t cap) CC_MUST_CHECK;

/*
 * publish.c: the roster transaction for n ALLOCATED allocations (idempotent:
 * a row already PUBLISHED or over is left alone). One transaction for the
 * batch; when it fails, each is tried in its own. rcs[i] is 0 or the error
 * of allocation i; published[i] whether this call published it.
 */
void allocator_publish_batch(struct allocator_worker *w, const char *const *ids, size_t n, bool *published,
			     int *rcs);

/* local.c */
struct local_pool *local_pool_create(struct allocator *a);
void local_pool_free(struct local_pool *p);
/* Spawns the children and records them; call from the long-lived supervisor thread. */
int local_pool_start(struct local_pool *p, struct cc_pg *pg) CC_MUST_CHECK;
/* Reaps exited children and restarts due ones (supervisor thread). */
void local_pool_tick(struct local_pool *p, struct cc_pg *pg);
/* Stops every child (SIGTERM, then SIGKILL after a grace). */
void local_pool_stop(struct local_pool *p);
/*
 * A server for each of the n REQUESTED allocations, in one transaction
 * (each: an idle server, SKIP LOCKED, and the endpoint); out[i] is the
 * outcome of items[i] (ALLOCATED ones are updated in place). When the pool
 * runs dry the rest are ALLOC_NO_CAPACITY; a claim lost to another replica
 * makes the batch fall back to one transaction per allocation.
 */
void local_allocate_batch(struct allocator_worker *w, struct cc_allocation **items, size_t n, enum alloc_outcome *out,
			  char *why, size_t whylen);
int local_deliver(struct allocator_worker *w, const struct cc_allocation *al) CC_MUST_CHECK;
/* Holds an exclusive lock per port of the pool for the process's life; see local.c. */
int local_pool_lock(struct local_pool *p, char *err, size_t errlen) CC_MUST_CHECK;
/* Returns finished servers to IDLE. */
int local_release_finished(struct allocator_worker *w) CC_MUST_CHECK;

/* agones.c */
struct agones_client *agones_client_create(struct allocator *a, char *err, size_t errlen);
void agones_client_free(struct agones_client *c);
enum alloc_outcome agones_allocate(struct allocator_worker *w, struct cc_allocation *al, char *why, size_t whylen);

#endif
