/*
 * service.h - the skeleton every long-running binary starts from.
 *
 * A service main declares only its own options and its loop. The skeleton
 * owns what every service does the same way:
 *
 *   - the shared option rows, declared once in service.c and appended to
 *     the main's own table by group (CC_SERVICE_DATABASE, ...): a binary
 *     gets only the groups it names, so one that declares no database or
 *     Redis has neither flag and links neither library (service.o calls
 *     no pg, redis or HTTP code);
 *   - the log (--log-level) and the config log line;
 *   - the stop signals: SIGTERM and SIGINT stop the service, SIGPIPE is
 *     ignored (a peer that hangs up is an error return, not a death);
 *   - the admin server (/metrics, /healthz, /readyz) and its readiness:
 *     cc_admin_start_service() in sys/admin.h, kept there so a binary
 *     without an admin port does not link the HTTP server;
 *   - running the loop on its own thread until a stop, and the exit status.
 *
 * A main, in order:
 *
 *     struct my_config { ...own fields...; struct cc_service_options svc; };
 *     static const struct cc_config_option my_options[] = { ...own rows... };
 *     static const struct cc_service_spec my_spec = {
 *         .program = "cc-allocator", .summary = "...",
 *         .options = my_options, .n_options = CC_ARRAY_LEN(my_options),
 *         .shared = CC_SERVICE_DATABASE | CC_SERVICE_DB_TIMEOUT | CC_SERVICE_ADMIN | CC_SERVICE_LOG,
 *         .shared_offset = offsetof(struct my_config, svc),
 *         .admin_port = "9182",
 *     };
 *
 *     struct my_config cfg = { 0 };
 *     struct cc_service svc;
 *     cc_service_load_or_exit(&svc, &my_spec, argc, argv, &cfg, NULL);  // exit 0 (--help) or 2 (bad options)
 *     ...checks the table cannot express: print, status 2, goto out...
 *     cc_service_start(&svc);                 // before any thread: signals, config line
 *     ...open what the loop needs (cfg.svc.database_url, ...)...
 *     admin = cc_admin_start_service(&svc, my_ready, &ctx);
 *     status = cc_service_run(&svc, my_loop, &ctx);   // until SIGTERM/SIGINT or cc_service_fail()
 *   out:
 *     cc_admin_stop(admin);                   // before freeing what my_ready reads
 *     ...free...
 *     cc_service_release(&svc);               // frees cfg's strings too
 *
 * The loop polls cc_service_stopping() and sleeps with cc_service_nap(),
 * which a stop cuts short. A one-shot tool (cc-migrate) uses only the option
 * rows and the log: cc_service_load_or_exit(), cc_service_log_config(),
 * cc_service_release().
 *
 * Ownership: struct cc_service lives in the main (stack is fine) and must
 * outlive every thread that uses it; spec and cfg must outlive it. Its
 * fields are private: use the functions. Thread-safety: cc_service_stopping,
 * cc_service_nap, cc_service_fail and cc_service_ready may be called from
 * any thread once cc_service_start has returned; the rest belong to main.
 */
#ifndef CC_SERVICE_H
#define CC_SERVICE_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sys/cc.h"
#include "sys/config.h"

/*
 * Groups of shared option rows (service.c has the rows). DB_TIMEOUT and
 * DB_POOL go with DATABASE; naming one without it is a BUG at start-up.
 */
#define CC_SERVICE_DATABASE (1u << 0)   /* --database-url (secret, required) */
#define CC_SERVICE_DB_TIMEOUT (1u << 1) /* --db-timeout-ms */
#define CC_SERVICE_DB_POOL (1u << 2)    /* --db-pool-size, --db-prepared-statements */
#define CC_SERVICE_REDIS (1u << 3)      /* --redis-host, --redis-port, --redis-timeout-ms */
#define CC_SERVICE_ADMIN (1u << 4)      /* --admin-listen, --admin-port (default: spec->admin_port) */
#define CC_SERVICE_LOG (1u << 5)        /* --log-level */

/* The values of the shared rows. A main embeds one in its config struct; only its groups' fields are set. */
struct cc_service_options {
	char *database_url;          /* DATABASE: libpq URI or conninfo (secret: env or file only) */
	int64_t db_timeout_ms;       /* DB_TIMEOUT: deadline of one statement */
	int64_t db_pool_size;        /* DB_POOL: connections in the pool */
	bool db_prepared_statements; /* DB_POOL: prepare each statement once per connection */
	char *redis_host;            /* REDIS: NULL or "" = run without Redis */
	int64_t redis_port;          /* REDIS */
	int64_t redis_timeout_ms;    /* REDIS: deadline of one Redis command */
	char *admin_listen;          /* ADMIN: bind address of /metrics, /healthz, /readyz */
	int64_t admin_port;          /* ADMIN: 0 = ephemeral */
	char *log_level;             /* LOG: debug|info|warn|error */
};

struct cc_service_spec {
	const char *program;                    /* "cc-matcher": --help, --version, every log line */
	const char *summary;                    /* one line under the usage */
	const char *positional;                 /* as cc_config_spec's (NULL: none allowed) */
	const struct cc_config_option *options; /* the main's own rows (offsets into its config struct) */
	size_t n_options;
	unsigned shared;      /* CC_SERVICE_* groups, appended after the main's rows */
	size_t shared_offset; /* offsetof(main's config struct, its struct cc_service_options member) */
	const char *admin_port; /* ADMIN: this service's default port, as text ("9181"): one per service, so they share a host */
};

#define CC_SERVICE_MAX_OPTIONS 64 /* the main's rows plus the shared ones */

/* Readiness of a service, as sys/admin.h's cc_admin_ready_fn (same contract). */
typedef bool (*cc_service_ready_fn)(void *ctx, char *why, size_t whylen);

struct cc_service {
	const struct cc_service_spec *spec;
	struct cc_config_spec config;                        /* the merged table the parser saw */
	struct cc_config_option rows[CC_SERVICE_MAX_OPTIONS]; /* its rows */
	void *cfg;                                           /* the main's config struct */
	bool started;                                        /* cc_service_start ran: stop signals blocked */
	sigset_t stop_signals;                               /* SIGINT, SIGTERM */
	atomic_bool stopping;                                /* a stop was asked or the loop ended */
	atomic_int status;                                   /* exit status cc_service_run returns */
	pthread_mutex_t lock;                                /* guards reason, naps' waits */
	pthread_cond_t stop;                                 /* broadcast when stopping turns true */
	char reason[128];                                    /* why a stop was asked ("" = a signal) */
	cc_service_ready_fn ready;                           /* the main's readiness; NULL = ready */
	void *ready_ctx;
};

/*
 * Builds the merged table of spec (the main's rows, then the shared rows of
 * spec->shared) into svc, without parsing. Returns 0, or CC_EINVAL when the
 * rows do not fit CC_SERVICE_MAX_OPTIONS, a DB_* group comes without
 * DATABASE, or ADMIN comes without spec->admin_port. A row name that both
 * the main and a group declare is left to the parser, which reports
 * "option table: NAME: declared twice". cc_service_load_or_exit() calls it;
 * tests call it to inspect the table. Release with cc_service_release().
 */
int cc_service_init(struct cc_service *svc, const struct cc_service_spec *spec) CC_MUST_CHECK;

/* The merged table, for cc_config_parse() and cc_config_help() (tests). Valid until release. */
const struct cc_config_spec *cc_service_config_spec(const struct cc_service *svc);

/*
 * For mains: cc_service_init (a failure is a BUG: the spec is ours), then
 * cc_config_load_or_exit() over the merged table into cfg (--help and
 * --version exit 0; any problem prints every one and exits 2), then the log
 * at --log-level (info without CC_SERVICE_LOG). Returns the number of
 * positional arguments and sets *positional (when not NULL).
 */
int cc_service_load_or_exit(struct cc_service *svc, const struct cc_service_spec *spec, int argc,
			    char *const argv[], void *cfg, char *const **positional);

/* Logs the "config" event: every option of the merged table, secrets by name only (config.h). */
void cc_service_log_config(const struct cc_service *svc);

/*
 * Call once, after the checks that may still refuse the options and before
 * any thread exists (threads inherit the mask): blocks SIGTERM and SIGINT
 * so that only cc_service_run() receives them, ignores SIGPIPE, and logs the
 * config line.
 */
void cc_service_start(struct cc_service *svc);

/*
 * Runs loop(ctx) on its own thread (loop may be NULL: a service whose
 * threads are all someone else's, like an HTTP server's) and waits until
 * SIGTERM or SIGINT arrives, cc_service_fail() is called, or the loop
 * returns on its own. Then it logs "stopping" (the signal, or the reason),
 * makes cc_service_stopping() true, wakes every cc_service_nap(), and joins
 * the loop. Returns the exit status: 0, or 1 after cc_service_fail() or
 * when the loop thread could not start (logged). Call once, from main,
 * after cc_service_start().
 */
int cc_service_run(struct cc_service *svc, void *(*loop)(void *ctx), void *ctx);

/* True once the service is stopping; the loop should return soon after. Any thread. */
bool cc_service_stopping(const struct cc_service *svc);

/*
 * Sleeps up to ms (<= 0: not at all), returning early when the service
 * starts stopping. Returns true when it slept the whole time, false when
 * stopping. Any thread.
 */
bool cc_service_nap(struct cc_service *svc, int64_t ms);

/*
 * A fatal condition found on any thread (a background check found the
 * configuration unusable): logs "fatal" with reason, makes the exit status
 * 1 and stops the service as a signal would. After cc_service_start() only
 * (before it, print and exit instead). The first reason wins.
 */
void cc_service_fail(struct cc_service *svc, const char *reason);

/*
 * Readiness as /readyz reports it (a cc_admin_ready_fn; ctx is the struct
 * cc_service): not ready while stopping ("stopping"), else the main's own
 * check, set by cc_admin_start_service() (sys/admin.h).
 */
bool cc_service_ready(void *svc, char *why, size_t whylen);

/* Sets the main's readiness check (NULL = always ready). Before the admin server starts. */
void cc_service_set_ready(struct cc_service *svc, cc_service_ready_fn ready, void *ctx);

/* The shared options inside the main's config struct (after load). */
const struct cc_service_options *cc_service_options(const struct cc_service *svc);

/* True when the service declares every group in groups. */
bool cc_service_has(const struct cc_service *svc, unsigned groups);

/* The program name: spec->program. */
const char *cc_service_program(const struct cc_service *svc);

/* Frees the config struct's strings (wiping secrets) and what svc holds. Call once, after init/load. */
void cc_service_release(struct cc_service *svc);

#endif
