/*
 * The admin port: /healthz, /readyz following the callback, /metrics
 * counting requests in text promtool accepts, and start/stop edge cases.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>

#include "sys/admin.h"
#include "http_fetch.h"
#include "sys/metrics.h"
#include "support.h"
#include "sys/banned.h"

static atomic_bool ready_flag;
static atomic_int ready_calls;
static struct cc_admin *admin;

static bool is_ready(void *ctx, char *why, size_t whylen)
{
	ck_assert_ptr_eq(ctx, &ready_flag);
	atomic_fetch_add(&ready_calls, 1);
	if (atomic_load(&ready_flag))
		return true;
	snprintf(why, whylen, "database unreachable");
	return false;
}

static void start(void)
{
	atomic_store(&ready_flag, false);
	admin = cc_admin_start("127.0.0.1", 0, is_ready, &ready_flag);
	ck_assert_ptr_nonnull(admin);
	ck_assert_int_gt(cc_admin_port(admin), 0);
}

static void stop(void)
{
	cc_admin_stop(admin);
	admin = NULL;
	cc_metrics_reset();
}

static struct cc_test_reply get_from(int port, const char *method, const char *path)
{
	struct cc_test_request rq = { .method = method, .path = path };
	struct cc_test_reply r;
	ck_assert_msg(cc_test_fetch(port, &rq, &r) == 0, "%s: %s", path, r.error);
	return r;
}

static struct cc_test_reply get(const char *path)
{
	return get_from(cc_admin_port(admin), NULL, path);
}

/* Asserts the reply is JSON whose "status" member is want. */
static void assert_status_body(const struct cc_test_reply *r, const char *want)
{
	cJSON *j = cJSON_Parse(r->body);
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(j, "status");
	ck_assert_msg(cJSON_IsString(s), "body: %s", r->body);
	ck_assert_str_eq(s->valuestring, want);
	ck_assert_str_eq(r->content_type, "application/json");
	cJSON_Delete(j);
}

START_TEST(test_healthz)
{
	struct cc_test_reply r = get("/healthz");
	ck_assert_int_eq(r.status, 200);
	assert_status_body(&r, "ok");
	ck_assert_int_eq(atomic_load(&ready_calls), 0); /* liveness ignores readiness */
	cc_test_reply_release(&r);
}
END_TEST

START_TEST(test_readyz_follows_callback)
{
	struct cc_test_reply r = get("/readyz");
	cJSON *j;
	const cJSON *e;

	ck_assert_int_eq(r.status, 503);
	j = cJSON_Parse(r.body);
	e = cJSON_GetObjectItemCaseSensitive(j, "error");
	ck_assert_str_eq(cJSON_GetObjectItem(e, "code")->valuestring, "not_ready");
	ck_assert_str_eq(cJSON_GetObjectItem(e, "message")->valuestring, "database unreachable");
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(e, "retryable")));
	cJSON_Delete(j);
	cc_test_reply_release(&r);

	atomic_store(&ready_flag, true);
	r = get("/readyz");
	ck_assert_int_eq(r.status, 200);
	assert_status_body(&r, "ready");
	cc_test_reply_release(&r);

	atomic_store(&ready_flag, false);
	r = get("/readyz");
	ck_assert_int_eq(r.status, 503);
	cc_test_reply_release(&r);
	ck_assert_int_eq(atomic_load(&ready_calls), 3);
}
END_TEST

static bool never_says_why(void *ctx, char *why, size_t whylen)
{
	(void)ctx;
	(void)why;
	(void)whylen;
	return false;
}

START_TEST(test_readyz_without_reason_or_callback)
{
	struct cc_admin *quiet = cc_admin_start(NULL, 0, never_says_why, NULL);
	struct cc_admin *always = cc_admin_start(NULL, 0, NULL, NULL);
	struct cc_test_reply r;

	ck_assert_ptr_nonnull(quiet);
	ck_assert_ptr_nonnull(always);
	r = get_from(cc_admin_port(quiet), NULL, "/readyz");
	ck_assert_int_eq(r.status, 503);
	ck_assert_ptr_nonnull(strstr(r.body, "\"message\":\"not ready\""));
	cc_test_reply_release(&r);
	r = get_from(cc_admin_port(always), NULL, "/readyz");
	ck_assert_int_eq(r.status, 200);
	cc_test_reply_release(&r);
	cc_admin_stop(quiet);
	cc_admin_stop(always);
}
END_TEST

START_TEST(test_metrics_counts_requests)
{
	struct cc_test_reply r;
	const char *want = "cosmic_clash_http_requests_total{route=\"/healthz\",method=\"GET\",status=\"200\"} 3\n";
	FILE *p;

	for (int i = 0; i < 3; i++) {
		r = get("/healthz");
		cc_test_reply_release(&r);
	}
	r = get("/metrics");
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(r.content_type, "text/plain; version=0.0.4; charset=utf-8");
	ck_assert_msg(strstr(r.body, want), "no %s in\n%s", want, r.body);
	ck_assert_ptr_nonnull(strstr(r.body, "# TYPE cosmic_clash_http_request_duration_seconds histogram\n"));
	ck_assert_ptr_nonnull(strstr(r.body, "cosmic_clash_http_request_duration_seconds_count{route=\"/healthz\"} 3\n"));
	cc_test_reply_release(&r);

	/* The scrape itself shows up in the next one. */
	r = get("/metrics");
	ck_assert_ptr_nonnull(strstr(r.body, "{route=\"/metrics\",method=\"GET\",status=\"200\"} 1\n"));
	if (system("command -v promtool >/dev/null 2>&1") == 0) {
		p = popen("promtool check metrics", "w");
		ck_assert_ptr_nonnull(p);
		fputs(r.body, p);
		int status = pclose(p);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "promtool refused:\n%s", r.body);
	}
	cc_test_reply_release(&r);
}
END_TEST

START_TEST(test_unknown_and_wrong_method)
{
	struct cc_test_reply r = get("/nothing");
	ck_assert_int_eq(r.status, 404);
	cc_test_reply_release(&r);
	r = get_from(cc_admin_port(admin), "POST", "/metrics");
	ck_assert_int_eq(r.status, 405);
	ck_assert_str_eq(r.allow, "GET");
	cc_test_reply_release(&r);
}
END_TEST

START_TEST(test_start_and_stop_edges)
{
	ck_assert_ptr_null(cc_admin_start("not-an-address", 0, NULL, NULL));
	ck_assert_ptr_null(cc_admin_start("127.0.0.1", cc_admin_port(admin), NULL, NULL)); /* in use */
	ck_assert_int_eq(cc_admin_port(NULL), -1);
	cc_admin_stop(NULL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("admin");
	TCase *tc = tcase_create("admin");
	int rc;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	tcase_add_checked_fixture(tc, start, stop);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_healthz);
	tcase_add_test(tc, test_readyz_follows_callback);
	tcase_add_test(tc, test_readyz_without_reason_or_callback);
	tcase_add_test(tc, test_metrics_counts_requests);
	tcase_add_test(tc, test_unknown_and_wrong_method);
	tcase_add_test(tc, test_start_and_stop_edges);
	suite_add_tcase(s, tc);
	rc = cc_test_run_suite(s);
	curl_global_cleanup();
	return rc;
}
