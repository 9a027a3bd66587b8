/*
 * The metric registry: exact text for each type, escaping, validation,
 * the series cap, exact sums under concurrency, and promtool's verdict.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "sys/metrics.h"
#include "support.h"
#include "sys/banned.h"

/* Every render starts with the registry's own counter (no samples yet). */
#define DROPPED_HEAD                                                                             \
	"# HELP cosmic_clash_metrics_series_dropped_total Metric updates lost because their label " \
	"set was over the series cap or invalid.\n"                                                  \
	"# TYPE cosmic_clash_metrics_series_dropped_total counter\n"

static void reset(void)
{
	cc_metrics_reset();
}

/* Renders and compares with expected, showing both on mismatch. */
static void assert_render(const char *expected)
{
	char *text = cc_metrics_render();
	ck_assert_ptr_nonnull(text);
	ck_assert_msg(strcmp(text, expected) == 0, "rendered:\n%s\nexpected:\n%s", text, expected);
	free(text);
}

START_TEST(test_counter_exact)
{
	static const char *const labels[] = { "kind", NULL };
	struct cc_metric *plain = cc_counter("cosmic_clash_test_events_total", "Events seen.", NULL, 0);
	struct cc_metric *by_kind =
		cc_counter("cosmic_clash_test_conflicts_total", "Conflicts by kind.", labels, 8);
	ck_assert_ptr_nonnull(plain);
	ck_assert_ptr_nonnull(by_kind);
	cc_metric_inc(plain);
	cc_metric_add(plain, NULL, 2.5);
	cc_metric_add(plain, NULL, -10); /* counters never go down */
	cc_metric_set(plain, NULL, 0);	 /* nor get set */
	cc_metric_add(by_kind, (const char *const[]){ "result" }, 1);
	cc_metric_add(by_kind, (const char *const[]){ "register" }, 2);
	cc_metric_add(by_kind, (const char *const[]){ "result" }, 1);
	assert_render(DROPPED_HEAD "# HELP cosmic_clash_test_events_total Events seen.\n"
				   "# TYPE cosmic_clash_test_events_total counter\n"
				   "cosmic_clash_test_events_total 3.5\n"
				   "# HELP cosmic_clash_test_conflicts_total Conflicts by kind.\n"
				   "# TYPE cosmic_clash_test_conflicts_total counter\n"
				   "cosmic_clash_test_conflicts_total{kind=\"result\"} 2\n"
				   "cosmic_clash_test_conflicts_total{kind=\"register\"} 2\n");
}
END_TEST

START_TEST(test_gauge_exact)
{
	static const char *const labels[] = { "playlist", "region", NULL };
	struct cc_metric *g = cc_gauge("cosmic_clash_test_queue_depth", "Tickets waiting.", labels, 4);
	const char *const casual_eu[] = { "casual", "eu" };
	cc_metric_set(g, casual_eu, 10);
	cc_metric_add(g, casual_eu, -12.25);
	cc_metric_set(g, (const char *const[]){ "ranked", "us" }, 1e21);
	cc_metric_observe(g, casual_eu, 5); /* not a histogram: ignored */
	assert_render(DROPPED_HEAD "# HELP cosmic_clash_test_queue_depth Tickets waiting.\n"
				   "# TYPE cosmic_clash_test_queue_depth gauge\n"
				   "cosmic_clash_test_queue_depth{playlist=\"casual\",region=\"eu\"} -2.25\n"
				   "cosmic_clash_test_queue_depth{playlist=\"ranked\",region=\"us\"} 1e+21\n");
}
END_TEST

START_TEST(test_histogram_exact)
{
	static const double buckets[] = { 0.1, 0.5, 1 };
	static const char *const labels[] = { "route", NULL };
	struct cc_metric *h = cc_histogram("cosmic_clash_test_duration_seconds", "Durations.", labels,
					   4, buckets, 3);
	struct cc_metric *bare =
		cc_histogram("cosmic_clash_test_size_bytes", "Sizes.", NULL, 0, NULL, 0);
	const char *const r[] = { "/v1/queue" };
	ck_assert_ptr_nonnull(h);
	ck_assert_ptr_nonnull(bare);
	cc_metric_observe(h, r, 0.1); /* le is inclusive */
	cc_metric_observe(h, r, 0.3);
	cc_metric_observe(h, r, 2);
	cc_metric_add(h, r, 1); /* add on a histogram: ignored */
	cc_metric_observe(bare, NULL, 7);
	assert_render(DROPPED_HEAD
		      "# HELP cosmic_clash_test_duration_seconds Durations.\n"
		      "# TYPE cosmic_clash_test_duration_seconds histogram\n"
		      "cosmic_clash_test_duration_seconds_bucket{route=\"/v1/queue\",le=\"0.1\"} 1\n"
		      "cosmic_clash_test_duration_seconds_bucket{route=\"/v1/queue\",le=\"0.5\"} 2\n"
		      "cosmic_clash_test_duration_seconds_bucket{route=\"/v1/queue\",le=\"1\"} 2\n"
		      "cosmic_clash_test_duration_seconds_bucket{route=\"/v1/queue\",le=\"+Inf\"} 3\n"
		      "cosmic_clash_test_duration_seconds_sum{route=\"/v1/queue\"} 2.4\n"
		      "cosmic_clash_test_duration_seconds_count{route=\"/v1/queue\"} 3\n"
		      "# HELP cosmic_clash_test_size_bytes Sizes.\n"
		      "# TYPE cosmic_clash_test_size_bytes histogram\n"
		      "cosmic_clash_test_size_bytes_bucket{le=\"+Inf\"} 1\n"
		      "cosmic_clash_test_size_bytes_sum 7\n"
		      "cosmic_clash_test_size_bytes_count 1\n");
}
END_TEST

START_TEST(test_escaping)
{
	static const char *const labels[] = { "name", NULL };
	struct cc_metric *c =
		cc_counter("cosmic_clash_test_names_total", "Help with \\ and\nnewline \"kept\".", labels, 4);
	cc_metric_add(c, (const char *const[]){ "a\\b\"c\nd" }, 1);
	assert_render(DROPPED_HEAD
		      "# HELP cosmic_clash_test_names_total Help with \\\\ and\\nnewline \"kept\".\n"
		      "# TYPE cosmic_clash_test_names_total counter\n"
		      "cosmic_clash_test_names_total{name=\"a\\\\b\\\"c\\nd\"} 1\n");
}
END_TEST

struct bad_declaration {
	const char *why;
	enum cc_metric_type type;
	const char *name;
	const char *help;
	const char *labels[CC_METRICS_MAX_LABELS + 2];
	size_t max_series;
	double buckets[CC_METRICS_MAX_BUCKETS + 1];
	size_t n_buckets;
};

static const struct bad_declaration bad_declarations[] = {
	{ "no prefix", CC_METRIC_COUNTER, "http_requests_total", "h", { NULL }, 0, { 0 }, 0 },
	{ "prefix only partly", CC_METRIC_COUNTER, "cosmic_clas_x", "h", { NULL }, 0, { 0 }, 0 },
	{ "bad char", CC_METRIC_COUNTER, "cosmic_clash_a-b", "h", { NULL }, 0, { 0 }, 0 },
	{ "space", CC_METRIC_GAUGE, "cosmic_clash_a b", "h", { NULL }, 0, { 0 }, 0 },
	{ "empty", CC_METRIC_GAUGE, "", "h", { NULL }, 0, { 0 }, 0 },
	{ "no help", CC_METRIC_GAUGE, "cosmic_clash_x", NULL, { NULL }, 0, { 0 }, 0 },
	{ "bad label", CC_METRIC_GAUGE, "cosmic_clash_x", "h", { "1abc", NULL }, 4, { 0 }, 0 },
	{ "colon label", CC_METRIC_GAUGE, "cosmic_clash_x", "h", { "a:b", NULL }, 4, { 0 }, 0 },
	{ "reserved label", CC_METRIC_GAUGE, "cosmic_clash_x", "h", { "__name", NULL }, 4, { 0 }, 0 },
	{ "le on histogram", CC_METRIC_HISTOGRAM, "cosmic_clash_x", "h", { "le", NULL }, 4, { 1 }, 1 },
	{ "duplicate label", CC_METRIC_GAUGE, "cosmic_clash_x", "h", { "a", "a", NULL }, 4, { 0 }, 0 },
	{ "too many labels", CC_METRIC_GAUGE, "cosmic_clash_x", "h", { "a", "b", "c", "d", "e", NULL }, 4, { 0 }, 0 },
	{ "labels without cap", CC_METRIC_GAUGE, "cosmic_clash_x", "h", { "a", NULL }, 0, { 0 }, 0 },
	{ "unsorted buckets", CC_METRIC_HISTOGRAM, "cosmic_clash_x", "h", { NULL }, 0, { 2, 1 }, 2 },
	{ "equal buckets", CC_METRIC_HISTOGRAM, "cosmic_clash_x", "h", { NULL }, 0, { 1, 1 }, 2 },
	{ "too many buckets", CC_METRIC_HISTOGRAM, "cosmic_clash_x", "h", { NULL }, 0,
	  { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21 }, 21 },
	{ "buckets on a gauge", CC_METRIC_GAUGE, "cosmic_clash_x", "h", { NULL }, 0, { 1 }, 1 },
};

START_TEST(test_bad_declaration_refused)
{
	const struct bad_declaration *b = &bad_declarations[_i];
	struct cc_metric *m = cc_metric_declare(b->type, b->name, b->help, b->labels, b->max_series,
						b->buckets, b->n_buckets);
	ck_assert_msg(m == NULL, "accepted a declaration with %s", b->why);
	cc_metric_inc(m); /* NULL handle: harmless */
}
END_TEST

START_TEST(test_redeclaration)
{
	static const char *const ab[] = { "a", "b", NULL };
	static const char *const ac[] = { "a", "c", NULL };
	struct cc_metric *m = cc_gauge("cosmic_clash_test_g", "G.", ab, 4);
	ck_assert_ptr_nonnull(m);
	ck_assert_ptr_eq(cc_gauge("cosmic_clash_test_g", "G.", ab, 4), m);
	ck_assert_ptr_null(cc_gauge("cosmic_clash_test_g", "G.", ac, 4));
	ck_assert_ptr_null(cc_counter("cosmic_clash_test_g", "G.", ab, 4));
	ck_assert_ptr_null(cc_gauge("cosmic_clash_test_g", "G.", NULL, 4));
}
END_TEST

START_TEST(test_series_cap)
{
	static const char *const labels[] = { "player", NULL };
	struct cc_metric *c = cc_counter("cosmic_clash_test_hostile_total", "Capped.", labels, 2);
	cc_metric_inc(c); /* labelled metric without values: dropped */
	cc_metric_add(c, (const char *const[]){ "p1" }, 1);
	cc_metric_add(c, (const char *const[]){ "p2" }, 1);
	for (int i = 0; i < 5; i++)
		cc_metric_add(c, (const char *const[]){ "p3" }, 1); /* over the cap */
	cc_metric_add(c, (const char *const[]){ "p1" }, 1);	     /* existing: still counts */
	cc_metric_add(c, (const char *const[]){ NULL }, 1);	     /* NULL value: dropped */
	assert_render(DROPPED_HEAD
		      "cosmic_clash_metrics_series_dropped_total{metric=\"cosmic_clash_test_hostile_total\"} 7\n"
		      "# HELP cosmic_clash_test_hostile_total Capped.\n"
		      "# TYPE cosmic_clash_test_hostile_total counter\n"
		      "cosmic_clash_test_hostile_total{player=\"p1\"} 2\n"
		      "cosmic_clash_test_hostile_total{player=\"p2\"} 1\n");
}
END_TEST

START_TEST(test_long_label_value_dropped)
{
	static const char *const labels[] = { "v", NULL };
	struct cc_metric *g = cc_gauge("cosmic_clash_test_long", "Long.", labels, 4);
	char value[300];
	memset(value, 'x', sizeof(value) - 1);
	value[sizeof(value) - 1] = '\0';
	cc_metric_set(g, (const char *const[]){ value }, 1);
	assert_render(DROPPED_HEAD
		      "cosmic_clash_metrics_series_dropped_total{metric=\"cosmic_clash_test_long\"} 1\n"
		      "# HELP cosmic_clash_test_long Long.\n"
		      "# TYPE cosmic_clash_test_long gauge\n");
}
END_TEST

#define THREADS 8
#define PER_THREAD 20000

struct worker {
	struct cc_metric *counter, *histogram;
	int id;
};

static void *hammer(void *arg)
{
	struct worker *w = arg;
	const char *const lv[] = { (w->id % 2) ? "odd" : "even" };
	for (int i = 0; i < PER_THREAD; i++) {
		cc_metric_inc(w->counter);
		cc_metric_add(w->counter, NULL, 1);
		cc_metric_observe(w->histogram, lv, 1);
	}
	return NULL;
}

START_TEST(test_concurrent_updates_sum_exactly)
{
	static const char *const labels[] = { "parity", NULL };
	static const double buckets[] = { 0.5, 1 };
	struct worker w[THREADS];
	pthread_t t[THREADS];
	struct cc_metric *c = cc_counter("cosmic_clash_test_hits_total", "Hits.", NULL, 0);
	struct cc_metric *h =
		cc_histogram("cosmic_clash_test_obs_seconds", "Obs.", labels, 2, buckets, 2);
	char *text, line[256];

	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .counter = c, .histogram = h, .id = i };
		ck_assert_int_eq(pthread_create(&t[i], NULL, hammer, &w[i]), 0);
	}
	/* Renders while the writers run must not disturb them. */
	for (int i = 0; i < 20; i++)
		free(cc_metrics_render());
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	text = cc_metrics_render();
	ck_assert_ptr_nonnull(text);
	snprintf(line, sizeof(line), "\ncosmic_clash_test_hits_total %d\n", 2 * THREADS * PER_THREAD);
	ck_assert_msg(strstr(text, line), "missing %s in\n%s", line, text);
	snprintf(line, sizeof(line),
		 "\ncosmic_clash_test_obs_seconds_bucket{parity=\"even\",le=\"1\"} %d\n",
		 THREADS / 2 * PER_THREAD);
	ck_assert_msg(strstr(text, line), "missing %s in\n%s", line, text);
	snprintf(line, sizeof(line), "\ncosmic_clash_test_obs_seconds_sum{parity=\"odd\"} %d\n",
		 THREADS / 2 * PER_THREAD);
	ck_assert_msg(strstr(text, line), "missing %s in\n%s", line, text);
	free(text);
}
END_TEST

/* Returns promtool's path via the shell, or NULL when it is not installed. */
static char *find_promtool(void)
{
	char path[512] = "";
	FILE *p = popen("command -v promtool", "r");
	if (!p)
		return NULL;
	if (!fgets(path, sizeof(path), p))
		path[0] = '\0';
	pclose(p);
	path[strcspn(path, "\n")] = '\0';
	return path[0] ? strdup(path) : NULL;
}

START_TEST(test_promtool_accepts_output)
{
	static const char *const labels[] = { "route", "method", NULL };
	static const double buckets[] = { 0.005, 0.1, 2.5 };
	const char *const lv[] = { "/v1/queue/{id}", "GET" };
	const char *const odd[] = { "quote\" back\\slash", "new\nline" };
	char *promtool = find_promtool(), cmd[600], *text;
	FILE *p;
	int status;

	if (!promtool) {
		fprintf(stderr, "promtool not installed: skipping its check\n");
		return;
	}
	struct cc_metric *c = cc_counter("cosmic_clash_test_requests_total", "Requests.", labels, 8);
	struct cc_metric *g = cc_gauge("cosmic_clash_test_in_flight", "In flight.", labels, 8);
	struct cc_metric *h = cc_histogram("cosmic_clash_test_request_duration_seconds",
					   "Request durations.", labels, 8, buckets, 3);
	struct cc_metric *capped = cc_counter("cosmic_clash_test_capped_total", "Capped.", labels, 1);
	cc_metric_add(c, lv, 3);
	cc_metric_add(c, odd, 1);
	cc_metric_set(g, lv, -1.5);
	cc_metric_observe(h, lv, 0.05);
	cc_metric_observe(h, odd, 9);
	cc_metric_inc(cc_counter("cosmic_clash_test_plain_total", "Plain.", NULL, 0));
	cc_metric_add(capped, lv, 1);
	cc_metric_add(capped, odd, 1); /* fills the dropped counter too */
	text = cc_metrics_render();
	ck_assert_ptr_nonnull(text);
	snprintf(cmd, sizeof(cmd), "'%s' check metrics", promtool);
	p = popen(cmd, "w");
	ck_assert_ptr_nonnull(p);
	fputs(text, p);
	status = pclose(p);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "promtool check metrics refused (status %d):\n%s", status, text);
	free(text);
	free(promtool);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("metrics");
	TCase *tc = tcase_create("render");
	tcase_add_checked_fixture(tc, reset, reset);
	tcase_add_test(tc, test_counter_exact);
	tcase_add_test(tc, test_gauge_exact);
	tcase_add_test(tc, test_histogram_exact);
	tcase_add_test(tc, test_escaping);
	tcase_add_loop_test(tc, test_bad_declaration_refused, 0, (int)CC_ARRAY_LEN(bad_declarations));
	tcase_add_test(tc, test_redeclaration);
	tcase_add_test(tc, test_series_cap);
	tcase_add_test(tc, test_long_label_value_dropped);
	tcase_add_test(tc, test_concurrent_updates_sum_exactly);
	tcase_add_test(tc, test_promtool_accepts_output);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
