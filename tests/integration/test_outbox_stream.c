/*
 * The store reads behind the WebSocket stream's resume (issue 22), against
 * the harness PostgreSQL:
 *  - cc_outbox_since: one player's delivered rows after a position, in
 *    position order, at most limit, as the envelopes cc_events carries;
 *    other players' rows and rows not yet delivered are not in it;
 *  - cc_outbox_resume_window: the floor below which a resume must resync
 *    (the highest position cc-maintenance's retention purge deleted, even
 *    when it deleted out of position order) and the newest position drawn;
 *  - the refusals of both.
 * Rows are delivered with the store's own claim + publish (what the
 * dispatcher runs), after marking whatever other suites left pending as
 * published, so only our rows get positions here.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "support.h"
#include "store/outbox.h"
#include "sys/pg.h"
#include "sys/banned.h"

static struct cc_pg *pg;

static char *q(const char *sql, int n, const char *const *params)
{
	PGresult *res = NULL;
	int rc = cc_pg_exec(pg, sql, n, params, &res);
	ck_assert_msg(rc == 0, "%s: %s %s", sql, cc_errname(rc), cc_pg_error_message(pg));
	char *v = NULL;
	if (PQntuples(res) > 0 && !PQgetisnull(res, 0, 0))
		v = strdup(PQgetvalue(res, 0, 0));
	PQclear(res);
	return v;
}

static int64_t q_int(const char *sql, int n, const char *const *params)
{
	char *v = q(sql, n, params);
	ck_assert_msg(v != NULL, "%s: no value", sql);
	int64_t x = strtoll(v, NULL, 10);
	free(v);
	return x;
}

static void new_uuid(char out[CC_UUID_BUF])
{
	char *v = q("SELECT gen_random_uuid()", 0, NULL);
	snprintf(out, CC_UUID_BUF, "%s", v);
	free(v);
}

/* A row for players (a Postgres uuid[] literal) on a resource of its own; returns its id. */
static int64_t append(const char *players, const char *payload)
{
	const char *p[] = { players, payload };
	return q_int("SELECT cc_outbox_append('test.changed', 'test', gen_random_uuid(), 1, $1::uuid[], $2::jsonb)", 2,
		     p);
}

/* Delivers every pending row the way the dispatcher does (claim, publish, commit), until none is left. */
static void deliver_all(void)
{
	for (;;) {
		struct cc_outbox_rows rows = { 0 };
		ck_assert_int_eq(cc_pg_exec(pg, "BEGIN", 0, NULL, NULL), 0);
		ck_assert_int_eq(cc_outbox_claim(pg, CC_OUTBOX_CLAIM_MAX, &rows), 0);
		size_t n = rows.n;
		int64_t *ids = calloc(n ? n : 1, sizeof *ids);
		ck_assert_ptr_nonnull(ids);
		for (size_t i = 0; i < n; i++)
			ids[i] = rows.row[i].id;
		ck_assert_int_eq(cc_outbox_publish(pg, ids, n, NULL), 0);
		ck_assert_int_eq(cc_pg_exec(pg, "COMMIT", 0, NULL, NULL), 0);
		free(ids);
		cc_outbox_rows_release(&rows);
		if (n == 0)
			return;
	}
}

static int64_t position_of(int64_t id)
{
	char idt[24];
	snprintf(idt, sizeof idt, "%" PRId64, id);
	const char *p[] = { idt };
	return q_int("SELECT position FROM outbox WHERE id = $1", 1, p);
}

/* cc_outbox_since as parsed JSON; asserts it answered 0 with an array. */
static cJSON *since(const char *player, int64_t after, int limit)
{
	char *text = NULL;
	int rc = cc_outbox_since(pg, player, after, limit, &text);
	ck_assert_msg(rc == 0, "cc_outbox_since: %s %s", cc_errname(rc), cc_pg_error_message(pg));
	cJSON *a = cJSON_Parse(text);
	ck_assert_msg(cJSON_IsArray(a), "cc_outbox_since gave no JSON array: %s", text);
	free(text);
	return a;
}

/* Asserts that a holds exactly the rows ids (n of them), in that order, each a full envelope. */
static void expect_ids(cJSON *a, const int64_t *ids, int n, const char *what)
{
	ck_assert_msg(cJSON_GetArraySize(a) == n, "%s: %d envelopes, want %d", what, cJSON_GetArraySize(a), n);
	int64_t last = -1;
	for (int i = 0; i < n; i++) {
		cJSON *e = cJSON_GetArrayItem(a, i);
		cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");
		cJSON *pos = cJSON_GetObjectItemCaseSensitive(e, "position");
		ck_assert_msg(cJSON_IsNumber(id) && (int64_t)id->valuedouble == ids[i], "%s: [%d] is id %.0f, want %lld",
			      what, i, cJSON_IsNumber(id) ? id->valuedouble : -1.0, (long long)ids[i]);
		ck_assert_msg(cJSON_IsNumber(pos) && (int64_t)pos->valuedouble > last, "%s: [%d] position not increasing",
			      what, i);
		last = (int64_t)pos->valuedouble;
		ck_assert_msg(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(e, "payload")) &&
				      cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "occurred_at")) &&
				      !cJSON_GetObjectItemCaseSensitive(e, "ref"),
			      "%s: [%d] is not a full envelope", what, i);
		/* The same text as the reference fetch returns (the one envelope definition). */
		char *full = NULL;
		ck_assert_int_eq(cc_outbox_envelope(pg, ids[i], &full), 0);
		cJSON *fe = cJSON_Parse(full);
		ck_assert_msg(cJSON_Compare(fe, e, true), "%s: [%d] differs from cc_outbox_envelope: %s", what, i, full);
		cJSON_Delete(fe);
		free(full);
	}
}

static void setup(void)
{
	char err[512];
	int rc = cc_pg_connect(cc_test_env("CC_TEST_PG_DSN"), NULL, &pg, err, sizeof err);
	ck_assert_msg(rc == 0, "connect: %s: %s", cc_errname(rc), err);
	ck_assert_int_eq(cc_pg_exec(pg,
				    "UPDATE outbox SET published_at = now() "
				    "WHERE published_at IS NULL AND dead_lettered_at IS NULL",
				    0, NULL, NULL),
			 0);
}

static void teardown(void)
{
	cc_pg_free(pg);
	pg = NULL;
}

START_TEST(test_since_is_the_players_delivered_rows_in_position_order)
{
	char a[CC_UUID_BUF], b[CC_UUID_BUF], pa[64], pb[64], pab[128];
	new_uuid(a);
	new_uuid(b);
	snprintf(pa, sizeof pa, "{%s}", a);
	snprintf(pb, sizeof pb, "{%s}", b);
	snprintf(pab, sizeof pab, "{%s,%s}", b, a);
	int64_t r1 = append(pa, "{\"n\": 1}");
	int64_t r2 = append(pb, "{\"n\": 2}");
	int64_t r3 = append(pab, "{\"n\": 3}");
	int64_t r4 = append(pa, "{\"n\": 4}");
	deliver_all();
	int64_t r5 = append(pa, "{\"n\": 5}"); /* pending: not delivered, not resumed */

	cJSON *all = since(a, 0, 100);
	expect_ids(all, (int64_t[]){ r1, r3, r4 }, 3, "player a from 0");
	cJSON_Delete(all);
	cJSON *after1 = since(a, position_of(r1), 100);
	expect_ids(after1, (int64_t[]){ r3, r4 }, 2, "player a after r1");
	cJSON_Delete(after1);
	cJSON *page = since(a, position_of(r1), 1);
	expect_ids(page, (int64_t[]){ r3 }, 1, "player a after r1, limit 1");
	cJSON_Delete(page);
	cJSON *bs = since(b, 0, 100);
	expect_ids(bs, (int64_t[]){ r2, r3 }, 2, "player b from 0");
	cJSON_Delete(bs);
	cJSON *none = since(b, position_of(r3), 100);
	expect_ids(none, NULL, 0, "player b after r3");
	cJSON_Delete(none);

	/* An envelope over the NOTIFY limit (it travelled as a reference) is read back whole. */
	int64_t r6 = q_int("SELECT cc_outbox_append('test.changed', 'test', gen_random_uuid(), 1, $1::uuid[], "
			   "jsonb_build_object('blob', repeat('x', 9000)))",
			   1, (const char *const[]){ pa });
	deliver_all();
	cJSON *later = since(a, position_of(r4), 100);
	expect_ids(later, (int64_t[]){ r5, r6 }, 2, "player a after r4, once r5 and r6 are delivered");
	cJSON *blob = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(later, 1), "payload"), "blob");
	ck_assert_msg(cJSON_IsString(blob) && strlen(blob->valuestring) == 9000, "r6's payload is not whole");
	cJSON_Delete(later);
}
END_TEST

START_TEST(test_resume_window_follows_the_retention_purge)
{
	char a[CC_UUID_BUF], pa[64];
	new_uuid(a);
	snprintf(pa, sizeof pa, "{%s}", a);
	int64_t r1 = append(pa, "{}");
	int64_t r2 = append(pa, "{}");
	int64_t r3 = append(pa, "{}");
	deliver_all();
	int64_t p1 = position_of(r1), p2 = position_of(r2), p3 = position_of(r3);

	int64_t floor_pos = -1, newest = -1;
	ck_assert_int_eq(cc_outbox_resume_window(pg, &floor_pos, &newest, NULL), 0);
	ck_assert_msg(floor_pos >= 0 && floor_pos < p1, "floor %lld, p1 %lld: nothing of ours is purged yet",
		      (long long)floor_pos, (long long)p1);
	ck_assert_msg(newest >= p3, "newest %lld < p3 %lld", (long long)newest, (long long)p3);

	/*
	 * The purge goes by published_at, not by position: here it takes r2
	 * and leaves r1 (two rows published in the same milliseconds can go
	 * so). The oldest retained row is still r1, yet a client at p1 has
	 * lost r2: the floor must say so.
	 */
	char p2t[24];
	snprintf(p2t, sizeof p2t, "%" PRId64, p2);
	const char *pp[] = { p2t };
	ck_assert_int_eq(cc_pg_exec(pg, "UPDATE outbox SET published_at = now() - interval '2 days' WHERE position = $1::bigint",
				    1, pp, NULL),
			 0);
	int64_t purged = 0;
	ck_assert_int_eq(cc_outbox_purge_published(pg, 86400, 1000, &purged, NULL), 0);
	ck_assert_int_eq(purged, 1);
	ck_assert_int_eq(cc_outbox_resume_window(pg, &floor_pos, &newest, NULL), 0);
	ck_assert_msg(floor_pos == p2, "after purging r2 alone: floor %lld, want p2 = %lld (p1 %lld)",
		      (long long)floor_pos, (long long)p2, (long long)p1);
	cJSON *rest = since(a, floor_pos, 100);
	expect_ids(rest, (int64_t[]){ r3 }, 1, "player a from the floor");
	cJSON_Delete(rest);

	/* An older row purged later does not lower it. */
	ck_assert_int_eq(cc_pg_exec(pg, "UPDATE outbox SET published_at = now() - interval '2 days' "
					"WHERE position < $1::bigint",
				    1, pp, NULL),
			 0);
	do
		ck_assert_int_eq(cc_outbox_purge_published(pg, 86400, 1000, &purged, NULL), 0);
	while (purged > 0);
	ck_assert_int_eq(cc_outbox_resume_window(pg, &floor_pos, &newest, NULL), 0);
	ck_assert_msg(floor_pos == p2, "after purging r1 too: floor %lld, want p2 = %lld", (long long)floor_pos,
		      (long long)p2);

	/* Everything purged: the floor is the last position deleted. */
	ck_assert_int_eq(cc_pg_exec(pg, "UPDATE outbox SET published_at = now() - interval '2 days' "
					"WHERE position IS NOT NULL",
				    0, NULL, NULL),
			 0);
	do
		ck_assert_int_eq(cc_outbox_purge_published(pg, 86400, 1000, &purged, NULL), 0);
	while (purged > 0);
	ck_assert_int_eq(cc_outbox_resume_window(pg, &floor_pos, &newest, NULL), 0);
	ck_assert_msg(floor_pos == p3 && newest >= p3, "all purged: floor %lld newest %lld p3 %lld",
		      (long long)floor_pos, (long long)newest, (long long)p3);
}
END_TEST

/*
 * At volume the read goes through outbox_by_player (migration 0017), not
 * through every player's rows after the position: 20,000 delivered rows of
 * other players, analyzed, and the index's scan count in this transaction.
 */
START_TEST(test_since_uses_the_player_index_at_volume)
{
	char a[CC_UUID_BUF], pa[64];
	new_uuid(a);
	snprintf(pa, sizeof pa, "{%s}", a);
	int64_t mine = append(pa, "{}");
	deliver_all();
	ck_assert_int_eq(cc_pg_exec(pg,
				    "INSERT INTO outbox (event, resource_type, resource_id, revision, player_ids, "
				    "  published_at, position) "
				    "SELECT 'test.changed', 'test', gen_random_uuid(), 1, ARRAY[gen_random_uuid()], now(), "
				    "  nextval('outbox_position') FROM generate_series(1, 20000)",
				    0, NULL, NULL),
			 0);
	ck_assert_int_eq(cc_pg_exec(pg, "ANALYZE outbox", 0, NULL, NULL), 0);
	ck_assert_int_eq(cc_pg_exec(pg, "BEGIN", 0, NULL, NULL), 0);
	int64_t before = q_int("SELECT pg_stat_get_xact_numscans('outbox_by_player'::regclass)", 0, NULL);
	cJSON *got = since(a, 0, 100);
	int64_t after = q_int("SELECT pg_stat_get_xact_numscans('outbox_by_player'::regclass)", 0, NULL);
	ck_assert_int_eq(cc_pg_exec(pg, "COMMIT", 0, NULL, NULL), 0);
	expect_ids(got, (int64_t[]){ mine }, 1, "player a among 20,000 others");
	cJSON_Delete(got);
	ck_assert_msg(after > before, "cc_outbox_since did not scan outbox_by_player (scans %lld -> %lld)",
		      (long long)before, (long long)after);
}
END_TEST

START_TEST(test_refusals)
{
	char *text = NULL;
	int64_t f = 0, n = 0;
	const char *ok = "0f9d3c7e-1b2a-4c5d-8e6f-7a8b9c0d1e2f";
	ck_assert_int_eq(cc_outbox_since(pg, NULL, 0, 10, &text), CC_EINVAL);
	ck_assert_int_eq(cc_outbox_since(pg, "not-a-uuid", 0, 10, &text), CC_EINVAL);
	ck_assert_int_eq(cc_outbox_since(pg, "0f9d3c7e-1b2a-4c5d-8e6f-7a8b9c0d1e2f'; --", 0, 10, &text), CC_EINVAL);
	ck_assert_int_eq(cc_outbox_since(pg, ok, -1, 10, &text), CC_EINVAL);
	ck_assert_int_eq(cc_outbox_since(pg, ok, 0, 0, &text), CC_EINVAL);
	ck_assert_int_eq(cc_outbox_since(pg, ok, 0, CC_OUTBOX_SINCE_MAX + 1, &text), CC_EINVAL);
	ck_assert_int_eq(cc_outbox_since(pg, ok, 0, 10, NULL), CC_EINVAL);
	ck_assert_ptr_null(text);
	ck_assert_int_eq(cc_outbox_resume_window(pg, NULL, &n, NULL), CC_EINVAL);
	ck_assert_int_eq(cc_outbox_resume_window(pg, &f, NULL, NULL), CC_EINVAL);
	ck_assert_int_eq(cc_outbox_resume_window(NULL, &f, &n, NULL), CC_EINVAL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("outbox_stream");
	TCase *tc = tcase_create("resume");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_since_is_the_players_delivered_rows_in_position_order);
	tcase_add_test(tc, test_resume_window_follows_the_retention_purge);
	tcase_add_test(tc, test_since_uses_the_player_index_at_volume);
	tcase_add_test(tc, test_refusals);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
