/*
 * The service skeleton (sys/service.h): which shared rows each group adds,
 * that their values land in the main's embedded struct, that mistakes in a
 * spec are refused, and the stop: signals, cc_service_fail, a loop that
 * ends, naps cut short and readiness while stopping. Check runs each test
 * in its own process, so blocking signals in one does not leak into
 * another.
 */
#include <signal.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support.h"
#include "sys/cc.h"
#include "sys/clock.h"
#include "sys/config.h"
#include "sys/service.h"

#include "sys/banned.h"

struct demo_config {
	char *mode;                    /* the main's own row */
	int64_t workers;               /* another */
	struct cc_service_options svc; /* not first, so a wrong offset shows */
};

static const struct cc_config_option demo_rows[] = {
	{ .name = "mode", .type = CC_CFG_ENUM, .default_value = "fast", .choices = "fast|slow",
	  .help = "how to run", .offset = offsetof(struct demo_config, mode) },
	{ .name = "workers", .type = CC_CFG_INT, .default_value = "2", .min = 1, .max = 64,
	  .help = "worker threads", .offset = offsetof(struct demo_config, workers) },
};

static struct cc_service_spec demo_spec(unsigned shared)
{
	return (struct cc_service_spec){
		.program = "cc-demo",
		.summary = "A demo service.",
		.options = demo_rows,
		.n_options = CC_ARRAY_LEN(demo_rows),
		.shared = shared,
		.shared_offset = offsetof(struct demo_config, svc),
		.admin_port = "9555",
	};
}

#define ALL (CC_SERVICE_DATABASE | CC_SERVICE_DB_TIMEOUT | CC_SERVICE_DB_POOL | CC_SERVICE_REDIS | CC_SERVICE_ADMIN | CC_SERVICE_LOG)

/* Each group adds exactly its rows, after the main's, and nothing else. */
static const struct {
	unsigned shared;
	const char *names; /* the merged table's names, in order */
} groups[] = {
	{ 0, "mode workers" },
	{ CC_SERVICE_DATABASE, "mode workers database-url" },
	{ CC_SERVICE_DATABASE | CC_SERVICE_DB_TIMEOUT, "mode workers database-url db-timeout-ms" },
	{ CC_SERVICE_DATABASE | CC_SERVICE_DB_POOL, "mode workers database-url db-pool-size db-prepared-statements" },
	{ CC_SERVICE_REDIS, "mode workers redis-host redis-port redis-timeout-ms" },
	{ CC_SERVICE_ADMIN, "mode workers admin-listen admin-port" },
	{ CC_SERVICE_LOG, "mode workers log-level" },
	{ CC_SERVICE_ADMIN | CC_SERVICE_LOG, "mode workers admin-listen admin-port log-level" },
	{ ALL, "mode workers database-url db-timeout-ms db-pool-size db-prepared-statements redis-host redis-port "
	       "redis-timeout-ms admin-listen admin-port log-level" },
};

START_TEST(test_group_rows)
{
	struct cc_service_spec spec = demo_spec(groups[_i].shared);
	struct cc_service svc;
	char names[512] = "";
	size_t used = 0;
	ck_assert_int_eq(cc_service_init(&svc, &spec), 0);
	const struct cc_config_spec *cs = cc_service_config_spec(&svc);
	for (size_t i = 0; i < cs->n_options; i++)
		used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", i ? " " : "", cs->options[i].name);
	ck_assert_str_eq(names, groups[_i].names);
	/* --help is generated from the same table, so it lists the same rows. */
	char *help = cc_config_help(cs);
	ck_assert_ptr_nonnull(help);
	for (size_t i = 0; i < cs->n_options; i++) {
		char flag[64];
		snprintf(flag, sizeof flag, "--%s", cs->options[i].name);
		ck_assert_msg(strstr(help, flag), "help lacks %s:\n%s", flag, help);
	}
	ck_assert_msg(!strstr(help, "--database-url") == !(groups[_i].shared & CC_SERVICE_DATABASE), "%s", help);
	free(help);
	cc_service_release(&svc);
}
END_TEST

/* Values from flags and environment land in the embedded struct; defaults fill the rest. */
START_TEST(test_values_land_in_the_embedded_struct)
{
	struct cc_service_spec spec = demo_spec(ALL);
	struct cc_service svc;
	struct demo_config cfg = { 0 };
	struct cc_config_result res;
	char *argv[] = { (char *)"cc-demo", (char *)"--mode=slow", (char *)"--db-timeout-ms=1234", (char *)"--redis-host=10.0.0.1",
			 (char *)"--log-level=warn", NULL };
	ck_assert_int_eq(setenv("COSMIC_CLASH_DATABASE_URL", "postgresql://x@y/z", 1), 0);
	ck_assert_int_eq(setenv("COSMIC_CLASH_REDIS_PORT", "7000", 1), 0);
	ck_assert_int_eq(cc_service_init(&svc, &spec), 0);
	int rc = cc_config_parse(cc_service_config_spec(&svc), 5, argv, &cfg, &res);
	ck_assert_msg(rc == 0, "%s", res.errors[0]);
	ck_assert_str_eq(cfg.mode, "slow");
	ck_assert_int_eq(cfg.workers, 2);
	ck_assert_str_eq(cfg.svc.database_url, "postgresql://x@y/z");
	ck_assert_int_eq(cfg.svc.db_timeout_ms, 1234);
	ck_assert_int_eq(cfg.svc.db_pool_size, 16);
	ck_assert(cfg.svc.db_prepared_statements);
	ck_assert_str_eq(cfg.svc.redis_host, "10.0.0.1");
	ck_assert_int_eq(cfg.svc.redis_port, 7000);
	ck_assert_int_eq(cfg.svc.redis_timeout_ms, 200);
	ck_assert_str_eq(cfg.svc.admin_listen, "127.0.0.1");
	ck_assert_int_eq(cfg.svc.admin_port, 9555); /* the spec's own default */
	ck_assert_str_eq(cfg.svc.log_level, "warn");
	cc_config_release(cc_service_config_spec(&svc), &cfg);
	cc_service_release(&svc);
	unsetenv("COSMIC_CLASH_DATABASE_URL");
	unsetenv("COSMIC_CLASH_REDIS_PORT");
}
END_TEST

/* Without a group its flags are unknown, and its required secret is not required. */
START_TEST(test_undeclared_groups_stay_out)
{
	struct cc_service_spec spec = demo_spec(CC_SERVICE_LOG);
	struct cc_service svc;
	struct demo_config cfg = { 0 };
	struct cc_config_result res;
	char *argv[] = { (char *)"cc-demo", (char *)"--redis-host=h", (char *)"--admin-port=1", NULL };
	unsetenv("COSMIC_CLASH_DATABASE_URL");
	ck_assert_int_eq(cc_service_init(&svc, &spec), 0);
	ck_assert_int_eq(cc_config_parse(cc_service_config_spec(&svc), 3, argv, &cfg, &res), CC_EINVAL);
	ck_assert_int_eq(res.n_errors, 2);
	ck_assert_str_eq(res.errors[0], "--redis-host: unknown option");
	ck_assert_str_eq(res.errors[1], "--admin-port: unknown option");
	cc_config_release(cc_service_config_spec(&svc), &cfg);
	cc_service_release(&svc);
}
END_TEST

/* A main that declares a shared row itself is refused by the table check, naming the row. */
START_TEST(test_row_declared_twice)
{
	static const struct cc_config_option rows[] = {
		{ .name = "log-level", .type = CC_CFG_STRING, .help = "mine", .offset = offsetof(struct demo_config, mode) },
	};
	struct cc_service_spec spec = demo_spec(CC_SERVICE_LOG);
	struct cc_service svc;
	struct demo_config cfg = { 0 };
	struct cc_config_result res;
	char *argv[] = { (char *)"cc-demo", NULL };
	spec.options = rows;
	spec.n_options = 1;
	ck_assert_int_eq(cc_service_init(&svc, &spec), 0);
	ck_assert_int_eq(cc_config_parse(cc_service_config_spec(&svc), 1, argv, &cfg, &res), CC_EINVAL);
	ck_assert_str_eq(res.errors[0], "option table: log-level: declared twice");
	cc_config_release(cc_service_config_spec(&svc), &cfg);
	cc_service_release(&svc);
}
END_TEST

/* Specs the skeleton refuses. */
START_TEST(test_bad_specs)
{
	struct cc_service svc;
	struct cc_service_spec spec = demo_spec(CC_SERVICE_DB_TIMEOUT); /* without DATABASE */
	ck_assert_int_eq(cc_service_init(&svc, &spec), CC_EINVAL);
	cc_service_release(&svc); /* harmless after a failed init */
	spec = demo_spec(CC_SERVICE_DB_POOL);
	ck_assert_int_eq(cc_service_init(&svc, &spec), CC_EINVAL);
	spec = demo_spec(CC_SERVICE_ADMIN);
	spec.admin_port = NULL;
	ck_assert_int_eq(cc_service_init(&svc, &spec), CC_EINVAL);
	spec = demo_spec(1u << 20); /* no such group */
	ck_assert_int_eq(cc_service_init(&svc, &spec), CC_EINVAL);
	static struct cc_config_option many[CC_SERVICE_MAX_OPTIONS];
	spec = demo_spec(CC_SERVICE_LOG); /* 64 own rows + 1 shared */
	spec.options = many;
	spec.n_options = CC_SERVICE_MAX_OPTIONS;
	ck_assert_int_eq(cc_service_init(&svc, &spec), CC_EINVAL);
	spec = demo_spec(0);
	spec.n_options = CC_SERVICE_MAX_OPTIONS;
	spec.options = many;
	ck_assert_int_eq(cc_service_init(&svc, &spec), 0); /* exactly full */
	cc_service_release(&svc);
}
END_TEST

/* ---- the stop ------------------------------------------------------------ */

struct loop_ctx {
	struct cc_service *svc;
	int64_t nap_ms;       /* each nap */
	int naps;             /* naps before the loop returns by itself (0: until stopping) */
	bool fail_at_start;   /* call cc_service_fail from the loop */
	atomic_bool full_nap; /* the last nap slept its whole time */
	atomic_int rounds;
};

static void *demo_loop(void *arg)
{
	struct loop_ctx *l = arg;
	if (l->fail_at_start)
		cc_service_fail(l->svc, "demo_failed");
	while (!cc_service_stopping(l->svc)) {
		atomic_store(&l->full_nap, cc_service_nap(l->svc, l->nap_ms));
		if (l->naps && atomic_fetch_add(&l->rounds, 1) + 1 >= l->naps)
			break;
	}
	return NULL;
}

/* Loads a demo service the way a main does (flags only: no database). */
static void start_demo(struct cc_service *svc, struct cc_service_spec *spec, struct demo_config *cfg)
{
	char *argv[] = { (char *)"cc-demo", (char *)"--log-level=error", NULL };
	*spec = demo_spec(CC_SERVICE_LOG);
	memset(cfg, 0, sizeof *cfg);
	cc_service_load_or_exit(svc, spec, 2, argv, cfg, NULL);
	cc_service_start(svc);
}

static void *send_sigterm_later(void *arg)
{
	(void)arg;
	struct timespec ts = { .tv_nsec = 50 * 1000000 };
	nanosleep(&ts, NULL); /* not synchronisation: the run must end whenever the signal comes */
	kill(getpid(), SIGTERM);
	return NULL;
}

/* SIGTERM stops a loop that is napping for a minute, at once, with status 0. */
START_TEST(test_sigterm_stops_the_loop)
{
	struct cc_service svc;
	struct cc_service_spec spec;
	struct demo_config cfg;
	struct loop_ctx l = { .svc = &svc, .nap_ms = 60000 };
	pthread_t t;
	start_demo(&svc, &spec, &cfg);
	ck_assert(!cc_service_stopping(&svc));
	ck_assert_int_eq(pthread_create(&t, NULL, send_sigterm_later, NULL), 0);
	int64_t t0 = cc_clock_ms();
	ck_assert_int_eq(cc_service_run(&svc, demo_loop, &l), 0);
	ck_assert_int_lt(cc_clock_ms() - t0, 30000); /* far below the nap */
	ck_assert(cc_service_stopping(&svc));
	ck_assert(!atomic_load(&l.full_nap));
	pthread_join(t, NULL);
	cc_service_release(&svc);
}
END_TEST

/* cc_service_fail from the loop's thread: exit status 1, naps end. */
START_TEST(test_fail_stops_with_status_1)
{
	struct cc_service svc;
	struct cc_service_spec spec;
	struct demo_config cfg;
	struct loop_ctx l = { .svc = &svc, .nap_ms = 60000, .fail_at_start = true };
	start_demo(&svc, &spec, &cfg);
	ck_assert_int_eq(cc_service_run(&svc, demo_loop, &l), 1);
	ck_assert(!atomic_load(&l.full_nap));
	cc_service_release(&svc);
}
END_TEST

/* A loop that returns by itself stops the service (status 0); its short naps slept in full. */
START_TEST(test_loop_end_stops)
{
	struct cc_service svc;
	struct cc_service_spec spec;
	struct demo_config cfg;
	struct loop_ctx l = { .svc = &svc, .nap_ms = 5, .naps = 3 };
	start_demo(&svc, &spec, &cfg);
	int64_t t0 = cc_clock_ms();
	ck_assert_int_eq(cc_service_run(&svc, demo_loop, &l), 0);
	ck_assert_int_ge(cc_clock_ms() - t0, 15);
	ck_assert_int_eq(atomic_load(&l.rounds), 3);
	ck_assert(atomic_load(&l.full_nap));
	cc_service_release(&svc);
}
END_TEST

static bool demo_ready(void *ctx, char *why, size_t whylen)
{
	bool *ok = ctx;
	if (!*ok)
		snprintf(why, whylen, "demo dependency down");
	return *ok;
}

/* /readyz's answer: the main's check until stopping, then "stopping" whatever it says. */
START_TEST(test_readiness)
{
	struct cc_service svc;
	struct cc_service_spec spec;
	struct demo_config cfg;
	bool ok = false;
	char why[64] = "";
	start_demo(&svc, &spec, &cfg);
	ck_assert(cc_service_ready(&svc, why, sizeof why)); /* no check: ready */
	cc_service_set_ready(&svc, demo_ready, &ok);
	ck_assert(!cc_service_ready(&svc, why, sizeof why));
	ck_assert_str_eq(why, "demo dependency down");
	ok = true;
	ck_assert(cc_service_ready(&svc, why, sizeof why));
	cc_service_fail(&svc, "demo_failed");
	ck_assert_int_eq(cc_service_run(&svc, NULL, NULL), 1); /* no loop: returns on the stop */
	ck_assert(!cc_service_ready(&svc, why, sizeof why));
	ck_assert_str_eq(why, "stopping");
	ck_assert(!cc_service_nap(&svc, 60000)); /* at once */
	cc_service_release(&svc);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("service");
	TCase *tc = tcase_create("options");
	tcase_add_loop_test(tc, test_group_rows, 0, CC_ARRAY_LEN(groups));
	tcase_add_test(tc, test_values_land_in_the_embedded_struct);
	tcase_add_test(tc, test_undeclared_groups_stay_out);
	tcase_add_test(tc, test_row_declared_twice);
	tcase_add_test(tc, test_bad_specs);
	suite_add_tcase(s, tc);
	tc = tcase_create("stop");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_sigterm_stops_the_loop);
	tcase_add_test(tc, test_fail_stops_with_status_1);
	tcase_add_test(tc, test_loop_end_stops);
	tcase_add_test(tc, test_readiness);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
