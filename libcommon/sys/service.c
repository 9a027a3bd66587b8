/*
 * The service skeleton (service.h). Calls no pg, redis or HTTP code, so a
 * binary that declares none of those groups links none of those libraries
 * (tests/integration/layers.sh checks service.o's undefined symbols).
 */
#include "sys/service.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sys/clock.h"
#include "sys/log.h"
#include "sys/banned.h"

#define SVC(field) offsetof(struct cc_service_options, field)

/*
 * The shared rows, each tagged with its group; offsets are into struct
 * cc_service_options. One row per line start ("{ GROUP, { .name = ..."):
 * tests/integration/binaries_cli.sh reads them from here to check that
 * every binary's --help lists the rows of the groups its main names.
 */
static const struct shared_row {
	unsigned group;
	struct cc_config_option option;
} shared_rows[] = {
	{ CC_SERVICE_DATABASE, { .name = "database-url", .type = CC_CFG_STRING, .secret = true, .required = true,
	  .help = "PostgreSQL connection string (URI or conninfo; may hold a password, so environment or file only)",
	  .offset = SVC(database_url) } },
	{ CC_SERVICE_DB_TIMEOUT, { .name = "db-timeout-ms", .type = CC_CFG_INT, .default_value = "5000", .min = 50,
	  .max = 600000, .help = "deadline of one database statement", .offset = SVC(db_timeout_ms) } },
	{ CC_SERVICE_DB_POOL, { .name = "db-pool-size", .type = CC_CFG_INT, .default_value = "16", .min = 1, .max = 256,
	  .help = "database connections in the pool", .offset = SVC(db_pool_size) } },
	{ CC_SERVICE_DB_POOL, { .name = "db-prepared-statements", .type = CC_CFG_BOOL, .default_value = "true",
	  .help = "prepare each statement once per connection (off behind a transaction-pooling proxy)",
	  .offset = SVC(db_prepared_statements) } },
	{ CC_SERVICE_REDIS, { .name = "redis-host", .type = CC_CFG_STRING,
	  .help = "Redis host, an accelerator that may be lost at any time (unset: run without it; an IP "
		  "address avoids resolver stalls)",
	  .offset = SVC(redis_host) } },
	{ CC_SERVICE_REDIS, { .name = "redis-port", .type = CC_CFG_INT, .default_value = "6379", .min = 1, .max = 65535,
	  .help = "port of --redis-host", .offset = SVC(redis_port) } },
	{ CC_SERVICE_REDIS, { .name = "redis-timeout-ms", .type = CC_CFG_INT, .default_value = "200", .min = 10,
	  .max = 60000, .help = "deadline of one Redis command (a slower Redis is skipped, never waited for)",
	  .offset = SVC(redis_timeout_ms) } },
	{ CC_SERVICE_ADMIN, { .name = "admin-listen", .type = CC_CFG_STRING, .default_value = "127.0.0.1",
	  .help = "address of the admin server (/metrics, /healthz, /readyz)", .offset = SVC(admin_listen) } },
	/* default_value comes from the service's spec (admin_port). */
	{ CC_SERVICE_ADMIN, { .name = "admin-port", .type = CC_CFG_INT, .min = 0, .max = 65535,
	  .help = "admin port (0 = ephemeral)", .offset = SVC(admin_port) } },
	{ CC_SERVICE_LOG, { .name = "log-level", .type = CC_CFG_ENUM, .default_value = "info",
	  .choices = "debug|info|warn|error", .help = "lowest level logged (JSON lines on stderr)",
	  .offset = SVC(log_level) } },
};

#define ALL_GROUPS                                                                                     \
	(CC_SERVICE_DATABASE | CC_SERVICE_DB_TIMEOUT | CC_SERVICE_DB_POOL | CC_SERVICE_REDIS | CC_SERVICE_ADMIN | \
	 CC_SERVICE_LOG)

int cc_service_init(struct cc_service *svc, const struct cc_service_spec *spec)
{
	size_t n = 0;

	if (!svc || !spec || !spec->program || (spec->n_options && !spec->options))
		return CC_EINVAL;
	memset(svc, 0, sizeof *svc);
	if (spec->shared & ~ALL_GROUPS)
		return CC_EINVAL;
	if ((spec->shared & (CC_SERVICE_DB_TIMEOUT | CC_SERVICE_DB_POOL)) && !(spec->shared & CC_SERVICE_DATABASE))
		return CC_EINVAL;
	if ((spec->shared & CC_SERVICE_ADMIN) && !spec->admin_port)
		return CC_EINVAL;
	if (spec->n_options > CC_SERVICE_MAX_OPTIONS)
		return CC_EINVAL;
	memcpy(svc->rows, spec->options, spec->n_options * sizeof *spec->options);
	n = spec->n_options;
	for (size_t i = 0; i < CC_ARRAY_LEN(shared_rows); i++) {
		if (!(shared_rows[i].group & spec->shared))
			continue;
		if (n == CC_SERVICE_MAX_OPTIONS)
			return CC_EINVAL;
		struct cc_config_option *row = &svc->rows[n++];
		*row = shared_rows[i].option;
		row->offset += spec->shared_offset;
		if (strcmp(row->name, "admin-port") == 0)
			row->default_value = spec->admin_port;
	}
	svc->config = (struct cc_config_spec){
		.program = spec->program,
		.summary = spec->summary,
		.positional = spec->positional,
		.options = svc->rows,
		.n_options = n,
	};
	/* Naps measure their deadline on the monotonic clock, like everything else. */
	if (cc_clock_cond_init(&svc->stop) != 0)
		return CC_ENOMEM;
	if (pthread_mutex_init(&svc->lock, NULL) != 0) {
		pthread_cond_destroy(&svc->stop);
		return CC_ENOMEM;
	}
	atomic_init(&svc->stopping, false);
	atomic_init(&svc->status, 0);
	svc->spec = spec; /* last: release() undoes only a complete init */
	return 0;
}

const struct cc_config_spec *cc_service_config_spec(const struct cc_service *svc)
{
	return &svc->config;
}

const struct cc_service_options *cc_service_options(const struct cc_service *svc)
{
	return (const struct cc_service_options *)((const char *)svc->cfg + svc->spec->shared_offset);
}

bool cc_service_has(const struct cc_service *svc, unsigned groups)
{
	return (svc->spec->shared & groups) == groups;
}

int cc_service_load_or_exit(struct cc_service *svc, const struct cc_service_spec *spec, int argc,
			    char *const argv[], void *cfg, char *const **positional)
{
	char *const *pos = NULL;
	enum cc_log_level level = CC_LOG_INFO;

	if (cc_service_init(svc, spec) != 0)
		CC_BUG("service spec: too many options, a DB_* group without DATABASE, or ADMIN without admin_port");
	svc->cfg = cfg;
	int n_pos = cc_config_load_or_exit(&svc->config, argc, argv, cfg, &pos);
	if (positional)
		*positional = pos;
	if (spec->shared & CC_SERVICE_LOG) {
		const char *text = cc_service_options(svc)->log_level;
		if (text && !cc_log_level_parse(text, &level))
			level = CC_LOG_INFO; /* unreachable: the enum row admits only the four names */
	}
	cc_log_init(spec->program, level);
	return n_pos;
}

void cc_service_log_config(const struct cc_service *svc)
{
	cc_config_log(&svc->config, svc->cfg);
}

void cc_service_start(struct cc_service *svc)
{
	sigemptyset(&svc->stop_signals);
	sigaddset(&svc->stop_signals, SIGINT);
	sigaddset(&svc->stop_signals, SIGTERM);
	/* Blocked before any thread starts, so every thread inherits it and only sigwait sees them. */
	pthread_sigmask(SIG_BLOCK, &svc->stop_signals, NULL);
	signal(SIGPIPE, SIG_IGN);
	svc->started = true;
	cc_service_log_config(svc);
}

/*
 * Asks for a stop once: records why and
 * wakes cc_service_run's sigwait with a SIGTERM, which every thread blocks,
 * so it waits pending for sigwait instead of killing the process.
 */
static void request_stop(struct cc_service *svc, const char *reason)
{
	bool first;
	pthread_mutex_lock(&svc->lock);
	first = svc->reason[0] == '\0';
	if (first)
		snprintf(svc->reason, sizeof svc->reason, "%s", reason);
	pthread_mutex_unlock(&svc->lock);
	if (first && svc->started)
		kill(getpid(), SIGTERM);
}

void cc_service_fail(struct cc_service *svc, const char *reason)
{
	const char *why = reason && *reason ? reason : "fatal";
	cc_log_error("fatal", CC_LOG_STR("reason", why));
	atomic_store(&svc->status, 1);
	request_stop(svc, why);
}

struct loop_start {
	struct cc_service *svc;
	void *(*loop)(void *ctx);
	void *ctx;
};

/* The loop's thread: a loop that returns before any stop stops the service. */
static void *run_loop(void *arg)
{
	struct loop_start *ls = arg;
	ls->loop(ls->ctx);
	if (!cc_service_stopping(ls->svc))
		request_stop(ls->svc, "loop ended");
	return NULL;
}

int cc_service_run(struct cc_service *svc, void *(*loop)(void *ctx), void *ctx)
{
	struct loop_start ls = { .svc = svc, .loop = loop, .ctx = ctx };
	pthread_t thread;
	bool running = false;
	int sig = 0;

	if (!svc->started)
		CC_BUG("cc_service_run before cc_service_start");
	if (loop) {
		if (pthread_create(&thread, NULL, run_loop, &ls) != 0) {
			cc_log_error("start_failed", CC_LOG_STR("reason", "loop thread"));
			atomic_store(&svc->status, 1);
			goto out_stop;
		}
		running = true;
	}
	while (sigwait(&svc->stop_signals, &sig) != 0) {
	}
	char reason[sizeof svc->reason];
	pthread_mutex_lock(&svc->lock);
	memcpy(reason, svc->reason, sizeof reason);
	pthread_mutex_unlock(&svc->lock);
	if (reason[0])
		cc_log_info("stopping", CC_LOG_STR("reason", reason));
	else
		cc_log_info("stopping", CC_LOG_INT("signal", sig));
out_stop:
	pthread_mutex_lock(&svc->lock);
	atomic_store(&svc->stopping, true);
	pthread_cond_broadcast(&svc->stop);
	pthread_mutex_unlock(&svc->lock);
	if (running)
		pthread_join(thread, NULL);
	return atomic_load(&svc->status);
}

bool cc_service_stopping(const struct cc_service *svc)
{
	return atomic_load(&svc->stopping);
}

bool cc_service_nap(struct cc_service *svc, int64_t ms)
{
	if (ms <= 0)
		return !cc_service_stopping(svc);
	struct timespec until = cc_clock_timespec(cc_clock_ns() + ms * 1000000);
	bool stopping;
	pthread_mutex_lock(&svc->lock);
	while (!(stopping = atomic_load(&svc->stopping)))
		if (pthread_cond_timedwait(&svc->stop, &svc->lock, &until) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&svc->lock);
	return !stopping;
}

bool cc_service_ready(void *arg, char *why, size_t whylen)
{
	struct cc_service *svc = arg;
	/* Out of the load balancer before the listeners close. */
	if (cc_service_stopping(svc)) {
		snprintf(why, whylen, "stopping");
		return false;
	}
	return svc->ready ? svc->ready(svc->ready_ctx, why, whylen) : true;
}

void cc_service_set_ready(struct cc_service *svc, cc_service_ready_fn ready, void *ctx)
{
	svc->ready = ready;
	svc->ready_ctx = ctx;
}

const char *cc_service_program(const struct cc_service *svc)
{
	return svc->spec->program;
}

void cc_service_release(struct cc_service *svc)
{
	if (!svc || !svc->spec)
		return;
	if (svc->cfg)
		cc_config_release(&svc->config, svc->cfg);
	pthread_mutex_destroy(&svc->lock);
	pthread_cond_destroy(&svc->stop);
	svc->spec = NULL;
	svc->cfg = NULL;
}
