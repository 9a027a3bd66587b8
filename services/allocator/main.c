/*
 * cc-allocator: turns accepted proposals into allocated servers and
 * published rosters (SPEC 8).
 *
 * main() reads the configuration (its own rows plus the service skeleton's
 * database, admin and log rows: sys/service.h), loads the two key sets
 * (join keys: --join-keys-file, active --join-key-id; workload secret:
 * --workload-secret-file) and refuses to start on any static problem. Then
 * the skeleton runs the supervisor loop on its own thread until
 * SIGINT/SIGTERM:
 *
 *   supervisor  (the long-lived thread that owns the local pool's
 *               children, so PR_SET_PDEATHSIG ties them to this process)
 *               starts the pool, starts --workers worker threads, then
 *               LISTENs on "outbox" (every transaction that writes outbox
 *               rows notifies it: a match.created among them) and wakes
 *               the workers on each notification; every 100 ms it reaps
 *               and restarts the pool's children.
 *   workers     each with its own connection and replica name: a pass
 *               (work.c), then at once another if it claimed anything or a
 *               notification came meanwhile, else wait for a wake-up or
 *               --poll-interval-ms.
 *
 * A database that is down is waited out (not ready, no exit); every error
 * of a pass is logged and counted, and the next pass runs as usual.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "allocator.h"
#include "sys/admin.h"
#include "sys/clock.h"
#include "sys/config.h"
#include "sys/crypto.h"
#include "sys/log.h"
#include "sys/service.h"
#include "sys/banned.h"

#define OPT(field) offsetof(struct allocator_config, field)
#define SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

static const struct cc_config_option allocator_options[] = {
	{ .name = "provider", .type = CC_CFG_ENUM, .default_value = "local", .choices = "local|agones",
	  .help = "where game servers come from: a warm pool of local processes, or Agones through the Kubernetes API",
	  .offset = OPT(provider) },
	{ .name = "instance-id", .type = CC_CFG_STRING,
	  .help = "stable name of this replica: owner of its local servers, prefix of its claims "
		  "(default hostname:local-port-min, or hostname-pid for agones)",
	  .offset = OPT(instance_id) },
	{ .name = "workers", .type = CC_CFG_INT, .default_value = "2", .min = 1, .max = ALLOCATOR_MAX_WORKERS,
	  .help = "worker threads, each with its own database connection", .offset = OPT(workers) },
	{ .name = "batch", .type = CC_CFG_INT, .default_value = "32", .min = 1, .max = 256,
	  .help = "allocations one claim transaction takes (at 32 PostgreSQL spends about a quarter less CPU per "
		  "allocation than at 16: scripts/bench-allocator.sh)",
	  .offset = OPT(batch) },
	{ .name = "poll-interval-ms", .type = CC_CFG_INT, .default_value = "1000", .min = 10, .max = 60000,
	  .help = "look for work at least this often when no NOTIFY arrives", .offset = OPT(poll_interval_ms) },
	/* Every publication NOTIFYs "outbox" too: without a floor, idle workers would answer each of our own
	 * commits with an empty claim transaction, whose reads then conflict with the busy workers' writes. */
	{ .name = "min-pass-interval-ms", .type = CC_CFG_INT, .default_value = "20", .min = 0, .max = 60000,
	  .help = "a NOTIFY never starts an idle worker's passes closer than this (bounds the cost of NOTIFY storms)",
	  .offset = OPT(min_pass_interval_ms) },
	{ .name = "claim-lease-ms", .type = CC_CFG_INT, .default_value = "15000", .min = 200, .max = 600000,
	  .help = "a claimed allocation whose replica went silent this long is taken over by another "
		  "(agones: at least twice --k8s-timeout-ms)",
	  .offset = OPT(claim_lease_ms) },
	{ .name = "backoff-min-ms", .type = CC_CFG_INT, .default_value = "200", .min = 1, .max = 600000,
	  .help = "first retry delay after a no-capacity answer (doubling, jittered)", .offset = OPT(backoff_min_ms) },
	{ .name = "backoff-max-ms", .type = CC_CFG_INT, .default_value = "5000", .min = 1, .max = 3600000,
	  .help = "no retry delay grows past this", .offset = OPT(backoff_max_ms) },
	{ .name = "workload-ttl-seconds", .type = CC_CFG_INT, .default_value = "7200", .min = 60, .max = 604800,
	  .help = "lifetime of a workload token, from the claim", .offset = OPT(workload_ttl_seconds) },
	{ .name = "join-token-ttl-seconds", .type = CC_CFG_INT, .default_value = "900", .min = 30, .max = 86400,
	  .help = "lifetime of a join token, from publication", .offset = OPT(join_token_ttl_seconds) },
	{ .name = "workload-secret-file", .type = CC_CFG_STRING, .required = true,
	  .help = "key set (JSON id -> base64, or one raw key) that signs workload tokens; cc-api holds the same",
	  .offset = OPT(workload_secret_file) },
	{ .name = "workload-key-id", .type = CC_CFG_STRING, .default_value = "",
	  .help = "the key of --workload-secret-file that signs (\"\" = a raw key file)", .offset = OPT(workload_key_id) },
	{ .name = "join-keys-file", .type = CC_CFG_STRING, .required = true,
	  .help = "key set (JSON id -> base64, or one raw key) whose active key signs join tokens",
	  .offset = OPT(join_keys_file) },
	{ .name = "join-key-id", .type = CC_CFG_STRING, .default_value = "",
	  .help = "the active join key (\"\" = a raw key file); rotate by adding a key, then switching this",
	  .offset = OPT(join_key_id) },
	{ .name = "api-url", .type = CC_CFG_STRING, .default_value = "http://127.0.0.1:8080",
	  .help = "cc-api base URL handed to local game servers (COSMIC_CLASH_API_URL)", .offset = OPT(api_url) },
	{ .name = "local-capacity", .type = CC_CFG_INT, .default_value = "4", .min = 1, .max = ALLOCATOR_MAX_CAPACITY,
	  .help = "local: game-server processes in the warm pool", .offset = OPT(local_capacity) },
	{ .name = "local-port-min", .type = CC_CFG_INT, .default_value = "7100", .min = 1, .max = 65535,
	  .help = "local: first game port (one per process, upwards)", .offset = OPT(local_port_min) },
	{ .name = "local-port-max", .type = CC_CFG_INT, .default_value = "7199", .min = 1, .max = 65535,
	  .help = "local: last game port the pool may use", .offset = OPT(local_port_max) },
	{ .name = "local-server-command", .type = CC_CFG_STRING, .default_value = "",
	  .help = "local: the game-server executable (a path; blank-separated arguments may follow; no shell); "
		  "\"\" = cc-supervisor next to this binary with --join-keys-file (it runs cc-gameserver per match)",
	  .offset = OPT(local_server_command) },
	{ .name = "local-state-dir", .type = CC_CFG_STRING, .default_value = "/tmp/cosmic-clash-local",
	  .help = "local: directory of the allocation files (<server id>/allocation.json) and child logs", .offset = OPT(local_state_dir) },
	{ .name = "local-address", .type = CC_CFG_STRING, .default_value = "127.0.0.1",
	  .help = "local: the address players reach the local game servers at", .offset = OPT(local_address) },
	{ .name = "local-region", .type = CC_CFG_STRING, .default_value = "local",
	  .help = "local: region recorded on the pool's game_servers rows", .offset = OPT(local_region) },
	{ .name = "local-restart-max-ms", .type = CC_CFG_INT, .default_value = "5000", .min = 100, .max = 600000,
	  .help = "local: a crashing child is restarted after 100 ms, doubling up to this", .offset = OPT(local_restart_max_ms) },
	/* The three below default to what a pod has (unset = in-cluster; "" = none, for tests and plain HTTP). */
	{ .name = "k8s-url", .type = CC_CFG_STRING,
	  .help = "agones: the Kubernetes API (unset: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT, "
		  "else https://kubernetes.default.svc)", .offset = OPT(k8s_url) },
	{ .name = "k8s-token-file", .type = CC_CFG_STRING,
	  .help = "agones: bearer token file, re-read for every call (unset: <k8s-serviceaccount-dir>/token; "
		  "\"\" = send none)", .offset = OPT(k8s_token_file) },
	{ .name = "k8s-ca-file", .type = CC_CFG_STRING,
	  .help = "agones: CA bundle that verifies the API server (unset: <k8s-serviceaccount-dir>/ca.crt; "
		  "\"\" = the system's)", .offset = OPT(k8s_ca_file) },
	{ .name = "k8s-serviceaccount-dir", .type = CC_CFG_STRING, .default_value = SA_DIR,
	  .help = "agones: the mounted service account (token, ca.crt, namespace); another path only for tests "
		  "or unusual pods", .offset = OPT(k8s_serviceaccount_dir) },
	{ .name = "k8s-namespace", .type = CC_CFG_STRING, .default_value = "",
	  .help = "agones: namespace of the fleet (\"\" = the service account's, else default)", .offset = OPT(k8s_namespace) },
	{ .name = "agones-fleet", .type = CC_CFG_STRING, .default_value = "cosmic-clash",
	  .help = "agones: the fleet selected (label agones.dev/fleet)", .offset = OPT(agones_fleet) },
	{ .name = "k8s-timeout-ms", .type = CC_CFG_INT, .default_value = "5000", .min = 100, .max = 120000,
	  .help = "agones: deadline of one allocation request", .offset = OPT(k8s_timeout_ms) },
};

static const struct cc_service_spec allocator_spec = {
	.program = "cc-allocator",
	.summary = "Cosmic Clash allocator: gets a game server for each accepted match and publishes its roster.",
	.options = allocator_options,
	.n_options = CC_ARRAY_LEN(allocator_options),
	.shared = CC_SERVICE_DATABASE | CC_SERVICE_DB_TIMEOUT | CC_SERVICE_ADMIN | CC_SERVICE_LOG,
	.shared_offset = offsetof(struct allocator_config, svc),
	.admin_port = "9183",
};

static struct cc_service service;

/* ---- workers ----------------------------------------------------------------- */

static void *worker_loop(void *arg)
{
	struct allocator_worker *w = arg;
	struct allocator *a = w->a;
	while (!cc_service_stopping(&service)) {
		pthread_mutex_lock(&a->lock);
		uint64_t seq = a->wake_seq;
		pthread_mutex_unlock(&a->lock);
		bool did = false;
		int64_t started = cc_clock_ms();
		int rc = allocator_pass(w, &did);
		if (did)
			continue;
		if (rc == CC_EUNAVAILABLE)
			cc_pg_free(w->pg), w->pg = NULL; /* reconnect on the next pass */
		int64_t wait = w->a->cfg->poll_interval_ms;
		struct timespec until = cc_clock_timespec(cc_clock_ns() + wait * 1000000);
		pthread_mutex_lock(&a->lock);
		while (a->wake_seq == seq && !cc_service_stopping(&service))
			if (pthread_cond_timedwait(&a->wake, &a->lock, &until) != 0)
				break;
		pthread_mutex_unlock(&a->lock);
		int64_t since = cc_clock_ms() - started;
		if (since < a->cfg->min_pass_interval_ms)
			(void)cc_service_nap(&service, a->cfg->min_pass_interval_ms - since);
	}
	cc_pg_free(w->pg);
	w->pg = NULL;
	return NULL;
}

static void wake_workers(struct allocator *a)
{
	pthread_mutex_lock(&a->lock);
	a->wake_seq++;
	pthread_cond_broadcast(&a->wake);
	pthread_mutex_unlock(&a->lock);
}

/* ---- the supervisor ------------------------------------------------------------- */

struct supervisor {
	struct allocator *a;
	struct allocator_worker workers[ALLOCATOR_MAX_WORKERS];
	struct cc_pg *pg;       /* the pool's bookkeeping */
	struct cc_pg *listener; /* LISTEN outbox */
	bool listening;
};

/* (Re)opens the listener; false (logged at debug after the first time) when the database is down. */
static bool listen_setup(struct supervisor *s)
{
	char err[1024] = "";
	int rc = 0;
	if (!s->listener)
		rc = cc_pg_connect(s->a->cfg->svc.database_url, &s->a->pg_opt, &s->listener, err, sizeof err);
	if (rc == 0)
		rc = cc_pg_listen(s->listener, "outbox");
	if (rc != 0)
		cc_log_warn("listen_failed", CC_LOG_STR("error", cc_errname(rc)), CC_LOG_STR("reason", err));
	s->listening = rc == 0;
	return s->listening;
}

/* Waits up to ms for notifications; wakes the workers on any (or on a lost listener: rescan). */
static void wait_notify(struct supervisor *s, int ms)
{
	char channel[CC_PG_CHANNEL_MAX + 1], payload[64];
	if (!s->listening && !listen_setup(s)) {
		(void)cc_service_nap(&service, ms);
		return;
	}
	int rc = cc_pg_wait_notify(s->listener, ms, channel, sizeof channel, payload, sizeof payload);
	if (rc == CC_ETIMEOUT)
		return;
	if (rc == CC_EUNAVAILABLE) {
		s->listening = false;
		wake_workers(s->a);
		(void)cc_service_nap(&service, ms);
		return;
	}
	/* Drain the burst: one wake-up answers all of it. */
	for (int i = 0; i < 10000 && rc == 0; i++)
		rc = cc_pg_wait_notify(s->listener, 0, channel, sizeof channel, payload, sizeof payload);
	wake_workers(s->a);
}

static void *supervisor_loop(void *arg)
{
	struct supervisor *s = arg;
	struct allocator *a = s->a;
	char err[256];

	/* The pool's rows need the database: wait it out. */
	if (a->local) {
		while (!cc_service_stopping(&service)) {
			int rc = s->pg ? 0 : cc_pg_connect(a->cfg->svc.database_url, &a->pg_opt, &s->pg, err, sizeof err);
			if (rc == 0 && (rc = local_pool_start(a->pool, s->pg)) == 0)
				break;
			cc_log_warn("pool_start_waiting", CC_LOG_STR("error", cc_errname(rc)));
			(void)cc_service_nap(&service, 500);
		}
	}
	listen_setup(s);
	for (int i = 0; i < (int)a->cfg->workers && !cc_service_stopping(&service); i++) {
		struct allocator_worker *w = &s->workers[i];
		w->a = a;
		w->index = i;
		snprintf(w->replica, sizeof w->replica, "%s/%d/w%d", a->instance, (int)getpid(), i);
		if (pthread_create(&w->thread, NULL, worker_loop, w) != 0) {
			cc_service_fail(&service, "cannot start a worker thread");
			break;
		}
		w->started = true;
	}
	cc_log_info("running", CC_LOG_INT("workers", a->cfg->workers), CC_LOG_STR("instance", a->instance));
	while (!cc_service_stopping(&service)) {
		wait_notify(s, 100);
		if (a->local && s->pg)
			local_pool_tick(a->pool, s->pg);
	}
	wake_workers(a);
	for (int i = 0; i < ALLOCATOR_MAX_WORKERS; i++)
		if (s->workers[i].started)
			pthread_join(s->workers[i].thread, NULL);
	if (a->local)
		local_pool_stop(a->pool);
	return NULL;
}

/* Ready once a pass has reached PostgreSQL (and the pool is up), and while they keep doing so. */
static bool allocator_ready(void *ctx, char *why, size_t whylen)
{
	struct allocator *a = ctx;
	pthread_mutex_lock(&a->lock);
	bool ok = a->db_ready;
	if (!ok)
		snprintf(why, whylen, "%s", a->db_why);
	pthread_mutex_unlock(&a->lock);
	return ok;
}

/* ---- start-up ---------------------------------------------------------------------- */

/* Loads a key set and checks that key_id is in it; false (printed) otherwise. Never echoes key bytes. */
static bool load_keys(const char *flag, const char *path, const char *id_flag, const char *key_id,
		      struct cc_keyset **out)
{
	char err[256];
	int rc = cc_keyset_load_file(path, out, err, sizeof err);
	if (rc != 0) {
		fprintf(stderr, "cc-allocator: --%s: %s\n", flag, err);
		return false;
	}
	size_t len = 0;
	if (!cc_keyset_find(*out, key_id, &len)) {
		/* Key ids are [A-Za-z0-9._-]{0,64}: safe to echo when valid. */
		fprintf(stderr, "cc-allocator: --%s: no key '%.64s' in --%s\n", id_flag, key_id, flag);
		return false;
	}
	return true;
}

/*
 * "<this binary's directory>/cc-supervisor --join-keys-file=<keys>": the
 * local provider's default command (split on blanks by local.c, so a path
 * with blanks needs --local-server-command). malloc'd; NULL when out of memory.
 */
static char *default_server_command(const char *join_keys_file)
{
	char self[4096] = "";
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n > 0) {
		self[n] = '\0';
		char *slash = strrchr(self, '/');
		if (slash)
			*slash = '\0';
	} else {
		snprintf(self, sizeof self, ".");
	}
	size_t len = strlen(self) + strlen(join_keys_file ? join_keys_file : "") + 64;
	char *cmd = malloc(len);
	if (cmd)
		snprintf(cmd, len, "%s/cc-supervisor --join-keys-file=%s", self, join_keys_file ? join_keys_file : "");
	return cmd;
}

/* Checks what the table cannot; false (printed) on misconfiguration. */
static bool allocator_configure(struct allocator *a, const struct allocator_config *cfg)
{
	bool ok = true;
	char *errmsg = NULL;
	a->cfg = cfg;
	a->local = strcmp(cfg->provider, "local") == 0;
	if (cfg->backoff_max_ms < cfg->backoff_min_ms) {
		fprintf(stderr, "cc-allocator: --backoff-max-ms must be >= --backoff-min-ms\n");
		ok = false;
	}
	if (a->local) {
		if (cfg->local_port_max < cfg->local_port_min ||
		    cfg->local_port_max - cfg->local_port_min + 1 < cfg->local_capacity) {
			fprintf(stderr, "cc-allocator: --local-port-min..--local-port-max (%lld..%lld) has fewer ports than "
					"--local-capacity (%lld)\n",
				(long long)cfg->local_port_min, (long long)cfg->local_port_max, (long long)cfg->local_capacity);
			ok = false;
		}
		char first[4096];
		snprintf(first, sizeof first, "%s", cfg->local_server_command ? cfg->local_server_command : "");
		first[strcspn(first, " \t")] = '\0';
		if (!first[0] || access(first, X_OK) != 0) {
			fprintf(stderr, "cc-allocator: --local-server-command: '%.200s' is not an executable file "
					"(the local provider needs one: cc-supervisor, or the stand-in build/fakes/standin_server in tests)\n",
				first);
			ok = false;
		}
		if (!cfg->local_state_dir || !cfg->local_state_dir[0]) {
			fprintf(stderr, "cc-allocator: --local-state-dir: must name a directory\n");
			ok = false;
		}
		if (!cfg->local_address || !cfg->local_address[0] || strlen(cfg->local_address) >= CC_GAME_SERVER_ADDR_BUF) {
			fprintf(stderr, "cc-allocator: --local-address: must be 1..253 bytes\n");
			ok = false;
		}
	} else if (cfg->claim_lease_ms < 2 * cfg->k8s_timeout_ms) {
		fprintf(stderr, "cc-allocator: --claim-lease-ms (%lld) must be at least twice --k8s-timeout-ms (%lld)\n",
			(long long)cfg->claim_lease_ms, (long long)cfg->k8s_timeout_ms);
		ok = false;
	}
	PQconninfoOption *opts = PQconninfoParse(cfg->svc.database_url, &errmsg);
	if (!opts) {
		fprintf(stderr, "cc-allocator: --database-url: not a valid PostgreSQL connection string\n");
		ok = false;
	}
	PQconninfoFree(opts);
	PQfreemem(errmsg);
	if (!load_keys("join-keys-file", cfg->join_keys_file, "join-key-id", cfg->join_key_id, &a->join_keys))
		ok = false;
	if (!load_keys("workload-secret-file", cfg->workload_secret_file, "workload-key-id", cfg->workload_key_id,
		       &a->workload_keys))
		ok = false;

	char host[64] = "unknown";
	if (gethostname(host, sizeof host) != 0)
		snprintf(host, sizeof host, "unknown");
	host[sizeof host - 1] = '\0';
	if (cfg->instance_id && cfg->instance_id[0])
		snprintf(a->instance, sizeof a->instance, "%s", cfg->instance_id);
	else if (a->local)
		snprintf(a->instance, sizeof a->instance, "%s:%lld", host, (long long)cfg->local_port_min);
	else
		snprintf(a->instance, sizeof a->instance, "%s-%d", host, (int)getpid());
	a->pg_opt = (struct cc_pg_options){ .query_timeout_ms = (int)cfg->svc.db_timeout_ms,
					    .application_name = "cc-allocator",
					    .prepare_statements = true };
	return ok;
}

static void declare_metrics(struct allocator_metrics *m)
{
	static const double buckets[] = { 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5 };
	const char *const provider_result[] = { "provider", "result", NULL };
	const char *const provider[] = { "provider", NULL };
	const char *const step[] = { "step", NULL };
	const char *const result[] = { "result", NULL };
	const char *const state[] = { "state", NULL };
	m->allocations = cc_counter("cosmic_clash_allocator_allocations_total",
				    "Allocation attempts by provider and outcome (allocated, no_capacity, contention, retry, "
				    "rejected, lost, published, deliver_failed, publish_failed).",
				    provider_result, 32);
	m->no_capacity = cc_counter("cosmic_clash_allocator_no_capacity_total",
				    "Provider calls that found no free game server (the allocation stays REQUESTED with a backoff).",
				    provider, 4);
	m->step_seconds = cc_histogram("cosmic_clash_allocator_step_duration_seconds",
				       "Duration of each step over one claimed batch: claim, allocate, deliver, publish.", step, 8, buckets,
				       CC_ARRAY_LEN(buckets));
	m->passes = cc_counter("cosmic_clash_allocator_passes_total", "Worker passes by result.", result, 8);
	m->children = cc_counter("cosmic_clash_allocator_local_child_exits_total",
				 "Local game-server processes that exited, by the state of their server.", state, 4);
	m->published = cc_counter("cosmic_clash_allocator_rosters_published_total", "Rosters published.", NULL, 1);
}

int main(int argc, char **argv)
{
	struct allocator_config cfg = { 0 };
	struct allocator *a = NULL;
	struct supervisor *s = NULL;
	struct cc_admin *admin = NULL;
	int status = 1;
	struct cc_service_spec spec = allocator_spec;

	/* One table, two binaries: the testkit says who it is in --help, --version and logs. */
	if (allocator_testkit_step)
		spec.program = "cc-testkit-allocator";
	cc_service_load_or_exit(&service, &spec, argc, argv, &cfg, NULL);
	a = calloc(1, sizeof *a);
	s = calloc(1, sizeof *s);
	if (!a || !s) {
		fprintf(stderr, "cc-allocator: out of memory\n");
		goto out;
	}
	pthread_mutex_init(&a->lock, NULL);
	if (cc_clock_cond_init(&a->wake) != 0) {
		fprintf(stderr, "cc-allocator: cannot create a condition variable\n");
		goto out;
	}
	snprintf(a->db_why, sizeof a->db_why, "no pass has reached the database yet");
	a->svc = &service;
	if (cc_crypto_init() != 0) {
		fprintf(stderr, "cc-allocator: libsodium did not initialise\n");
		goto out;
	}
	/* The local provider's default pool process: cc-supervisor beside us, verifying with our join keys. */
	if (!cfg.local_server_command || !cfg.local_server_command[0]) {
		char *cmd = default_server_command(cfg.join_keys_file);
		if (!cmd) {
			fprintf(stderr, "cc-allocator: out of memory\n");
			goto out;
		}
		free(cfg.local_server_command);
		cfg.local_server_command = cmd;
	}
	if (!allocator_configure(a, &cfg)) {
		fprintf(stderr, "cc-allocator: see --help\n");
		status = 2;
		goto out;
	}
	char err[1024] = "";
	if (a->local) {
		a->pool = local_pool_create(a);
	} else {
		a->agones = agones_client_create(a, err, sizeof err);
		if (!a->agones) {
			fprintf(stderr, "cc-allocator: %s\n", err);
			status = 2;
			goto out;
		}
	}
	if (a->local && !a->pool) {
		fprintf(stderr, "cc-allocator: out of memory\n");
		goto out;
	}
	if (a->local && local_pool_lock(a->pool, err, sizeof err) != 0) {
		fprintf(stderr, "cc-allocator: %s\n", err);
		status = 2;
		goto out;
	}
	cc_service_start(&service);
	if (allocator_testkit_step)
		cc_log_warn("testkit_step_hook_enabled", CC_LOG_STR("binary", "cc-testkit-allocator"));
	declare_metrics(&a->metrics);
	admin = cc_admin_start_service(&service, allocator_ready, a);
	if (!admin)
		goto out;
	cc_log_info("started", CC_LOG_STR("provider", cfg.provider), CC_LOG_STR("instance", a->instance),
		    CC_LOG_INT("admin_port", cc_admin_port(admin)), CC_LOG_STR("join_key_id", cfg.join_key_id),
		    CC_LOG_INT("local_capacity", a->local ? cfg.local_capacity : 0));
	s->a = a;
	status = cc_service_run(&service, supervisor_loop, s);
out:
	cc_admin_stop(admin);
	if (s) {
		cc_pg_free(s->pg);
		cc_pg_free(s->listener);
		free(s);
	}
	if (a) {
		local_pool_free(a->pool);
		agones_client_free(a->agones);
		cc_keyset_free(a->join_keys);
		cc_keyset_free(a->workload_keys);
		pthread_cond_destroy(&a->wake);
		pthread_mutex_destroy(&a->lock);
		free(a);
	}
	cc_service_release(&service);
	return status;
}
