/*
 * The outbox dispatcher (services/maintenance/dispatch.c, linked into this
 * suite, over libcommon/store/outbox.c) against the harness PostgreSQL,
 * with a LISTEN connection on "cc_events" recording what arrives:
 *  - a poison row (planted with SQL: more player ids than the constructor
 *    allows) fails, waits its retry time with the rows behind it, and is
 *    dead-lettered after --outbox-max-attempts; other aggregates' rows go
 *    at once, and its own later rows after the dead letter;
 *  - a head locked by another transaction holds back its whole aggregate
 *    (the rows behind it are ineligible, not skipped over);
 *  - two dispatchers on their own connections racing over thousands of
 *    rows of many aggregates deliver every row once, each aggregate in
 *    revision order, positions in arrival order;
 *  - an envelope over the NOTIFY limit goes as a reference, and the store
 *    read returns the full envelope;
 *  - a dead letter is listed, replayed once (fenced), and delivered again
 *    ahead of its aggregate's later rows.
 * Rows are committed (dispatch sees only committed rows), so each test
 * first marks the pending rows other suites left in the shared database as
 * published, and checks only the aggregates it made.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "support.h"
#include "../../services/maintenance/maintenance.h"
#include "store/outbox.h"
#include "sys/clock.h"
#include "sys/metrics.h"
#include "sys/pg.h"
#include "sys/banned.h"

static struct cc_pg *pg;

static struct cc_pg *connect_db(void)
{
	char err[512];
	struct cc_pg *c = NULL;
	int rc = cc_pg_connect(cc_test_env("CC_TEST_PG_DSN"), NULL, &c, err, sizeof err);
	ck_assert_msg(rc == 0, "connect: %s: %s", cc_errname(rc), err);
	return c;
}

/* Runs sql (autocommit) on c and returns its first value (malloc'd, or NULL for no row / SQL NULL). */
static char *q(struct cc_pg *c, const char *sql, int n, const char *const *params)
{
	PGresult *res = NULL;
	int rc = cc_pg_exec(c, sql, n, params, &res);
	ck_assert_msg(rc == 0, "%s: %s %s", sql, cc_errname(rc), cc_pg_error_message(c));
	char *v = NULL;
	if (PQntuples(res) > 0 && !PQgetisnull(res, 0, 0))
		v = strdup(PQgetvalue(res, 0, 0));
	PQclear(res);
	return v;
}

static int64_t q_int(struct cc_pg *c, const char *sql, int n, const char *const *params)
{
	char *v = q(c, sql, n, params);
	ck_assert_msg(v != NULL, "%s: no value", sql);
	int64_t x = strtoll(v, NULL, 10);
	free(v);
	return x;
}

static void new_uuid(char out[CC_UUID_BUF])
{
	char *v = q(pg, "SELECT gen_random_uuid()", 0, NULL);
	snprintf(out, CC_UUID_BUF, "%s", v);
	free(v);
}

/* A valid row through the real SQL constructor; returns its id. */
static int64_t append(const char *resource, int64_t revision, const char *payload)
{
	char rev[24];
	snprintf(rev, sizeof rev, "%" PRId64, revision);
	const char *p[] = { resource, rev, payload };
	return q_int(pg,
		     "SELECT cc_outbox_append('test.changed', 'test', $1::uuid, $2::bigint, "
		     "ARRAY[gen_random_uuid()], $3::jsonb)",
		     3, p);
}

/* A poison row, as only SQL can write it: 65 player ids, one more than the constructor allows. */
static int64_t plant_poison(const char *resource, int64_t revision)
{
	char rev[24];
	snprintf(rev, sizeof rev, "%" PRId64, revision);
	const char *p[] = { resource, rev };
	return q_int(pg,
		     "INSERT INTO outbox (event, resource_type, resource_id, revision, player_ids) "
		     "SELECT 'test.changed', 'test', $1::uuid, $2::bigint, array_agg(gen_random_uuid()) "
		     "FROM generate_series(1, 65) RETURNING id",
		     2, p);
}

static int64_t row_int(int64_t id, const char *column_sql)
{
	char idt[24], sql[256];
	snprintf(idt, sizeof idt, "%" PRId64, id);
	snprintf(sql, sizeof sql, "SELECT %s FROM outbox WHERE id = $1", column_sql);
	const char *p[] = { idt };
	return q_int(pg, sql, 1, p);
}

static bool published(int64_t id) { return row_int(id, "(published_at IS NOT NULL)::int") == 1; }
static bool dead(int64_t id) { return row_int(id, "(dead_lettered_at IS NOT NULL)::int") == 1; }

/* ---- the listener ------------------------------------------------------------ */

struct arrival {
	int64_t id, position, revision;
	char resource[CC_UUID_BUF];
	bool ref;
	bool has_payload;
};

struct listener {
	struct cc_pg *pg;
	pthread_t thread;
	atomic_bool stop;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	struct arrival *a;
	size_t n, cap;
	int errors; /* notifications that did not parse as an envelope */
	char last_error[320];
};

static void *listen_main(void *arg)
{
	struct listener *l = arg;
	char channel[64], *payload = malloc(8192);
	ck_assert_ptr_nonnull(payload);
	while (!atomic_load(&l->stop)) {
		int rc = cc_pg_wait_notify(l->pg, 100, channel, sizeof channel, payload, 8192);
		if (rc == CC_ETIMEOUT)
			continue;
		pthread_mutex_lock(&l->mu);
		cJSON *j = rc == 0 ? cJSON_Parse(payload) : NULL;
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(j, "id");
		const cJSON *pos = cJSON_GetObjectItemCaseSensitive(j, "position");
		const cJSON *rev = cJSON_GetObjectItemCaseSensitive(j, "revision");
		const cJSON *res = cJSON_GetObjectItemCaseSensitive(j, "resource_id");
		if (rc != 0 || strcmp(channel, CC_OUTBOX_CHANNEL) != 0 || !cJSON_IsNumber(id) || !cJSON_IsNumber(pos) ||
		    !cJSON_IsNumber(rev) || !cJSON_IsString(res)) {
			l->errors++;
			snprintf(l->last_error, sizeof l->last_error, "rc %s channel %s payload %.120s", cc_errname(rc),
				 rc == 0 ? channel : "-", rc == 0 ? payload : "-");
		} else {
			if (l->n == l->cap) {
				l->cap = l->cap ? l->cap * 2 : 1024;
				l->a = realloc(l->a, l->cap * sizeof *l->a);
				ck_assert_ptr_nonnull(l->a);
			}
			struct arrival *a = &l->a[l->n++];
			a->id = (int64_t)id->valuedouble;
			a->position = (int64_t)pos->valuedouble;
			a->revision = (int64_t)rev->valuedouble;
			snprintf(a->resource, sizeof a->resource, "%s", res->valuestring);
			a->ref = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "ref"));
			a->has_payload = cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(j, "payload"));
			pthread_cond_broadcast(&l->cond);
		}
		pthread_mutex_unlock(&l->mu);
		cJSON_Delete(j);
	}
	free(payload);
	return NULL;
}

static struct listener *listener_start(void)
{
	struct listener *l = calloc(1, sizeof *l);
	ck_assert_ptr_nonnull(l);
	l->pg = connect_db();
	ck_assert_int_eq(cc_pg_listen(l->pg, CC_OUTBOX_CHANNEL), 0); /* listening once this returns */
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->cond, NULL);
	ck_assert_int_eq(pthread_create(&l->thread, NULL, listen_main, l), 0);
	return l;
}

static void listener_stop(struct listener *l)
{
	atomic_store(&l->stop, true);
	pthread_join(l->thread, NULL);
	ck_assert_msg(l->errors == 0, "%d notifications were not envelopes; last: %s", l->errors, l->last_error);
	cc_pg_free(l->pg);
	pthread_mutex_destroy(&l->mu);
	pthread_cond_destroy(&l->cond);
	free(l->a);
	free(l);
}

/* Arrivals for resource (NULL: any) so far. Call with l->mu held. */
static size_t count_for(const struct listener *l, const char *resource)
{
	size_t n = 0;
	for (size_t i = 0; i < l->n; i++)
		n += !resource || strcmp(l->a[i].resource, resource) == 0;
	return n;
}

/* Waits up to ms for at least want arrivals of resource; returns how many there were. */
static size_t wait_arrivals(struct listener *l, const char *resource, size_t want, int ms)
{
	struct timespec deadline;
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += ms / 1000;
	deadline.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&l->mu);
	size_t n;
	while ((n = count_for(l, resource)) < want)
		if (pthread_cond_timedwait(&l->cond, &l->mu, &deadline) != 0)
			break;
	n = count_for(l, resource);
	pthread_mutex_unlock(&l->mu);
	return n;
}

/* The revisions of resource in arrival order, as "1,2,3" (into buf). */
static const char *arrived(struct listener *l, const char *resource, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	pthread_mutex_lock(&l->mu);
	for (size_t i = 0; i < l->n && used + 24 < len; i++)
		if (strcmp(l->a[i].resource, resource) == 0)
			used += (size_t)snprintf(buf + used, len - used, "%s%" PRId64, used ? "," : "", l->a[i].revision);
	pthread_mutex_unlock(&l->mu);
	return buf;
}

/* ---- dispatching --------------------------------------------------------------- */

struct batch_tx {
	struct maint *m;
	struct maint_batch b;
};

static int batch_tx_run(struct cc_pg *c, void *arg)
{
	struct batch_tx *tx = arg;
	return maint_outbox_batch(c, tx->m, &tx->b);
}

/*
 * One batch as main.c runs it: one SERIALIZABLE transaction, then
 * committed(). read_committed runs it at READ COMMITTED instead
 * (cc_pg_run_locked), where no serialization failure backs the claim up:
 * the race is run both ways.
 */
static bool read_committed;

static int run_batch(struct cc_pg *c, struct maint *m, struct maint_batch *out)
{
	struct batch_tx tx = { .m = m };
	int rc = read_committed ? cc_pg_run_locked(c, batch_tx_run, &tx) : cc_pg_run_serializable(c, batch_tx_run, &tx);
	if (rc == 0 && tx.b.committed)
		tx.b.committed(&tx.b);
	if (rc == 0 && out)
		*out = tx.b;
	return rc;
}

static struct maint_batch batch(struct maint *m)
{
	struct maint_batch b;
	int rc = run_batch(pg, m, &b);
	ck_assert_msg(rc == 0, "batch: %s %s", cc_errname(rc), cc_pg_error_message(pg));
	return b;
}

/* The value of an unlabelled metric in the rendered registry (-1 when absent). */
static double metric(const char *name)
{
	char *text = cc_metrics_render();
	ck_assert_ptr_nonnull(text);
	double v = -1;
	size_t len = strlen(name);
	for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
		if (strncmp(line, name, len) == 0 && line[len] == ' ')
			v = strtod(line + len + 1, NULL);
	free(text);
	return v;
}

static struct maint_config cfg;
static struct maint m = { .cfg = &cfg, .replica = "test" };

static void setup(void)
{
	pg = connect_db();
	cfg = (struct maint_config){ .batch = 100, .outbox_max_attempts = 3, .outbox_retry_ms = 0 };
	cc_metrics_reset();
	maint_outbox_metrics();
	/* What other suites left pending is not ours to order: as if delivered before. */
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

/* ---- tests ------------------------------------------------------------------------ */

START_TEST(test_poison_row_is_dead_lettered_while_others_flow)
{
	char p[CC_UUID_BUF], other[CC_UUID_BUF], buf[256];
	new_uuid(p);
	new_uuid(other);
	struct listener *l = listener_start();
	int64_t poison = plant_poison(p, 1);
	int64_t p2 = append(p, 2, NULL), p3 = append(p, 3, NULL);
	int64_t o[3];
	for (int i = 0; i < 3; i++)
		o[i] = append(other, i + 1, NULL);
	cfg.outbox_retry_ms = 60000;

	/* Attempt 1 fails; the other aggregate's head goes at once. */
	struct maint_batch b = batch(&m);
	ck_assert_msg(published(o[0]) && !published(p2), "after batch 1: other rev 1 %d, poison's rev 2 %d",
		      published(o[0]), published(p2));
	ck_assert_int_eq(row_int(poison, "attempts"), 1);
	char idt[24];
	snprintf(idt, sizeof idt, "%" PRId64, poison);
	char *err = q(pg, "SELECT last_error FROM outbox WHERE id = $1", 1, (const char *const[]){ idt });
	ck_assert_msg(err && strstr(err, "player_ids"), "last_error: %s", err ? err : "(null)");
	free(err);
	ck_assert_int_eq(b.rows, 2);

	/* Not due for a minute: the poison row and the rows behind it wait; the other aggregate does not. */
	b = batch(&m);
	ck_assert_int_eq(row_int(poison, "attempts"), 1);
	ck_assert_msg(published(o[1]) && !published(p2), "waiting: other rev 2 %d, poison's rev 2 %d",
		      published(o[1]), published(p2));

	/* Its retry time comes (the database clock moved instead of sleeping): attempts 2 and 3. */
	cfg.outbox_retry_ms = 0;
	for (int attempt = 2; attempt <= 3; attempt++) {
		ck_assert_int_eq(cc_pg_exec(pg, "UPDATE outbox SET next_attempt_at = now() WHERE id = $1", 1,
					    (const char *const[]){ idt }, NULL),
				 0);
		b = batch(&m);
		ck_assert_int_eq(row_int(poison, "attempts"), attempt);
		ck_assert_msg(!published(p2), "poison's rev 2 went out while attempt %d of its head failed", attempt);
	}
	ck_assert_msg(dead(poison), "poison row not dead-lettered after %d attempts", (int)cfg.outbox_max_attempts);

	/* Dead-lettered: the rows behind it proceed, one head per batch. */
	batch(&m);
	batch(&m);
	ck_assert_msg(published(p2) && published(p3) && published(o[2]), "after the dead letter: %d %d %d",
		      published(p2), published(p3), published(o[2]));
	ck_assert_uint_eq(wait_arrivals(l, p, 2, 5000), 2);
	ck_assert_uint_eq(wait_arrivals(l, other, 3, 5000), 3);
	ck_assert_str_eq(arrived(l, p, buf, sizeof buf), "2,3");
	ck_assert_str_eq(arrived(l, other, buf, sizeof buf), "1,2,3");
	ck_assert_msg(!published(poison), "the dead letter was also published");

	ck_assert_double_eq(metric("cosmic_clash_outbox_delivery_failures_total"), 3);
	ck_assert_double_eq(metric("cosmic_clash_outbox_dead_lettered_total"), 1);
	ck_assert_double_eq(metric("cosmic_clash_outbox_delivered_total"), 5);
	ck_assert_double_eq(metric("cosmic_clash_outbox_pending_rows"), 0);
	ck_assert_double_eq(metric("cosmic_clash_outbox_dead_letter_rows"),
			    (double)q_int(pg, "SELECT count(*) FROM outbox WHERE dead_lettered_at IS NOT NULL", 0, NULL));
	listener_stop(l);
}
END_TEST

START_TEST(test_locked_head_holds_back_its_aggregate)
{
	char a[CC_UUID_BUF], other[CC_UUID_BUF], idt[24];
	new_uuid(a);
	new_uuid(other);
	int64_t a1 = append(a, 1, NULL), a2 = append(a, 2, NULL);
	int64_t o1 = append(other, 1, NULL);
	snprintf(idt, sizeof idt, "%" PRId64, a1);

	/* Another dispatcher holds a's head, in a transaction still open. */
	struct cc_pg *rival = connect_db();
	ck_assert_int_eq(cc_pg_exec(rival, "BEGIN ISOLATION LEVEL SERIALIZABLE", 0, NULL, NULL), 0);
	ck_assert_int_eq(cc_pg_exec(rival, "SELECT id FROM outbox WHERE id = $1 FOR UPDATE", 1,
				    (const char *const[]){ idt }, NULL),
			 0);
	struct maint_batch b = batch(&m);
	ck_assert_msg(published(o1), "the other aggregate waited for a's lock");
	ck_assert_msg(!published(a1) && !published(a2),
		      "a's head is locked elsewhere, yet rev 1 published %d, rev 2 published %d", published(a1),
		      published(a2));
	ck_assert_int_eq(b.rows, 1);
	ck_assert_int_eq(cc_pg_rollback(rival), 0);
	cc_pg_free(rival);

	batch(&m);
	ck_assert_msg(published(a1) && !published(a2), "after the lock: rev 1 %d, rev 2 %d (one head per batch)",
		      published(a1), published(a2));
	batch(&m);
	ck_assert(published(a2));
}
END_TEST

/* ---- two dispatchers racing ---------------------------------------------------------- */

#define RACE_AGGREGATES 50
#define RACE_REVISIONS 200
#define RACE_POISON_EVERY 10 /* aggregates 0, 20, 40, ... get a poison row ... */
#define RACE_POISON_REVISION 100 /* ... at this revision */

struct racer {
	struct cc_pg *pg;
	pthread_t thread;
	atomic_bool *stop;
	int64_t rows, batches, failed_batches;
	int last_rc;
};

static void *race_main(void *arg)
{
	struct racer *r = arg;
	while (!atomic_load(r->stop)) {
		struct maint_batch b = { 0 };
		int rc = run_batch(r->pg, &m, &b);
		if (rc != 0) {
			r->failed_batches++; /* retry budget spent against the other dispatcher: next batch */
			r->last_rc = rc;
			continue;
		}
		r->batches++;
		r->rows += b.rows;
		if (b.picked == 0)
			nanosleep(&(struct timespec){ .tv_nsec = 2000000 }, NULL); /* idle: the poll interval */
	}
	return NULL;
}

static void race(void);

START_TEST(test_two_dispatchers_keep_each_aggregate_in_order)
{
	race();
}
END_TEST

START_TEST(test_two_dispatchers_keep_order_at_read_committed)
{
	read_committed = true;
	race();
}
END_TEST

static void race(void)
{
	char agg[RACE_AGGREGATES][CC_UUID_BUF];
	char array[RACE_AGGREGATES * (CC_UUID_BUF + 1) + 3];
	size_t used = 0;
	array[used++] = '{';
	for (int i = 0; i < RACE_AGGREGATES; i++) {
		new_uuid(agg[i]);
		used += (size_t)snprintf(array + used, sizeof array - used, "%s%s", i ? "," : "", agg[i]);
	}
	array[used++] = '}';
	array[used] = '\0';
	char revs[16];
	snprintf(revs, sizeof revs, "%d", RACE_REVISIONS);
	/*
	 * Revision-major, so the aggregates' ids interleave, ids in revision
	 * order within each aggregate (checked below); RACE_POISON_REVISION of
	 * every RACE_POISON_EVERY-th aggregate is a poison row (65 player ids).
	 */
	const char *seed[] = { array, revs };
	ck_assert_int_eq(cc_pg_exec(pg,
				    "INSERT INTO outbox (event, resource_type, resource_id, revision, player_ids, payload) "
				    "SELECT 'test.changed', 'test', a.id, r, "
				    "  CASE WHEN r = " CC_STRINGIFY(RACE_POISON_REVISION) " AND (a.k - 1) % " CC_STRINGIFY(RACE_POISON_EVERY) " = 0 "
				    "    THEN array_fill(gen_random_uuid(), ARRAY[65]) ELSE ARRAY[gen_random_uuid()] END, "
				    "  jsonb_build_object('k', a.k) "
				    "FROM generate_series(1, $2::int) r, unnest($1::uuid[]) WITH ORDINALITY a(id, k) "
				    "ORDER BY r, a.k",
				    2, seed, NULL),
			 0);
	ck_assert_int_eq(q_int(pg,
			       "SELECT count(*) FROM (SELECT revision, lag(revision) OVER (PARTITION BY resource_id ORDER BY id) "
			       "  AS prev FROM outbox WHERE resource_id = ANY($1::uuid[])) s WHERE prev IS NOT NULL AND prev >= revision",
			       1, seed),
			 0);
	int n_poison = 0;
	for (int i = 0; i < RACE_AGGREGATES; i += RACE_POISON_EVERY)
		n_poison++;
	size_t want = (size_t)(RACE_AGGREGATES * RACE_REVISIONS - n_poison);

	struct listener *l = listener_start();
	cfg.batch = 32; /* small batches: many transactions of the two dispatchers overlap */
	atomic_bool stop = false;
	struct racer r[2];
	int64_t t0 = cc_clock_ms();
	for (int i = 0; i < 2; i++) {
		r[i] = (struct racer){ .pg = connect_db(), .stop = &stop };
		ck_assert_int_eq(pthread_create(&r[i].thread, NULL, race_main, &r[i]), 0);
	}
	size_t got = wait_arrivals(l, NULL, want, 90000);
	int64_t elapsed = cc_clock_ms() - t0;
	atomic_store(&stop, true);
	for (int i = 0; i < 2; i++) {
		pthread_join(r[i].thread, NULL);
		cc_pg_free(r[i].pg);
	}
	printf("race (%s): %zu of %zu rows arrived in %lld ms; dispatcher A %lld rows in %lld batches (%lld failed, last %s), "
	       "B %lld rows in %lld batches (%lld failed, last %s)\n",
	       read_committed ? "READ COMMITTED" : "SERIALIZABLE", got, want, (long long)elapsed, (long long)r[0].rows, (long long)r[0].batches,
	       (long long)r[0].failed_batches, cc_errname(r[0].last_rc), (long long)r[1].rows, (long long)r[1].batches,
	       (long long)r[1].failed_batches, cc_errname(r[1].last_rc));
	ck_assert_msg(got == want, "%zu of %zu rows arrived within 90 s", got, want);
	/*
	 * The race happened: at READ COMMITTED (cc-maintenance's level for this
	 * sweep) both dispatchers delivered rows. At SERIALIZABLE one may lose
	 * every overlap (40001 until its retries run out: seen in CI, B 0 of
	 * 10,010 rows) and still have raced: both must have run batches.
	 */
	if (read_committed)
		ck_assert_msg(r[0].rows > 0 && r[1].rows > 0, "one dispatcher did all the work (A %lld, B %lld): no race",
			      (long long)r[0].rows, (long long)r[1].rows);
	else
		ck_assert_msg(r[0].batches + r[0].failed_batches > 0 && r[1].batches + r[1].failed_batches > 0,
			      "a dispatcher never ran a batch (A %lld, B %lld attempted): no race",
			      (long long)(r[0].batches + r[0].failed_batches), (long long)(r[1].batches + r[1].failed_batches));

	/* Every aggregate in revision order, each revision once; the poison revisions never. */
	pthread_mutex_lock(&l->mu);
	int64_t last_position = 0;
	for (size_t i = 0; i < l->n; i++) {
		ck_assert_msg(l->a[i].position > last_position, "arrival %zu: position %lld after %lld", i,
			      (long long)l->a[i].position, (long long)last_position);
		last_position = l->a[i].position;
	}
	for (int k = 0; k < RACE_AGGREGATES; k++) {
		int64_t next = 1;
		for (size_t i = 0; i < l->n; i++) {
			if (strcmp(l->a[i].resource, agg[k]) != 0)
				continue;
			if (next == RACE_POISON_REVISION && k % RACE_POISON_EVERY == 0)
				next++; /* the dead letter */
			ck_assert_msg(l->a[i].revision == next, "aggregate %d: revision %lld arrived where %lld was due", k,
				      (long long)l->a[i].revision, (long long)next);
			next++;
		}
		ck_assert_msg(next == RACE_REVISIONS + 1, "aggregate %d: stopped at revision %lld", k, (long long)next - 1);
	}
	pthread_mutex_unlock(&l->mu);
	ck_assert_int_eq(q_int(pg,
			       "SELECT count(*) FROM outbox WHERE resource_id = ANY($1::uuid[]) AND dead_lettered_at IS NOT NULL "
			       "AND attempts = 3 AND revision = " CC_STRINGIFY(RACE_POISON_REVISION) " AND published_at IS NULL",
			       1, seed),
			 n_poison);
	ck_assert_int_eq(q_int(pg,
			       "SELECT count(*) FROM outbox WHERE resource_id = ANY($1::uuid[]) AND published_at IS NOT NULL",
			       1, seed),
			 (int64_t)want);
	listener_stop(l);
}

START_TEST(test_big_envelope_goes_as_a_reference)
{
	char a[CC_UUID_BUF], idt[24];
	new_uuid(a);
	struct listener *l = listener_start();
	/* One payload that fits (about 7 kB of envelope), then one that does not (20 kB). */
	int64_t small = append(a, 1, NULL);
	ck_assert_int_eq(cc_pg_exec(pg, "UPDATE outbox SET payload = jsonb_build_object('pad', repeat('s', 7000)) WHERE id = $1",
				    1, (const char *const[]){ (snprintf(idt, sizeof idt, "%" PRId64, small), idt) }, NULL),
			 0);
	int64_t big = append(a, 2, NULL);
	snprintf(idt, sizeof idt, "%" PRId64, big);
	ck_assert_int_eq(cc_pg_exec(pg, "UPDATE outbox SET payload = jsonb_build_object('pad', repeat('b', 20000)) WHERE id = $1",
				    1, (const char *const[]){ idt }, NULL),
			 0);
	batch(&m);
	batch(&m);
	ck_assert_uint_eq(wait_arrivals(l, a, 2, 5000), 2);
	pthread_mutex_lock(&l->mu);
	struct arrival first = l->a[l->n - 2], second = l->a[l->n - 1];
	pthread_mutex_unlock(&l->mu);
	ck_assert_msg(first.id == small && !first.ref && first.has_payload, "the 7 kB envelope: id %lld ref %d payload %d",
		      (long long)first.id, first.ref, first.has_payload);
	ck_assert_msg(second.id == big && second.ref && !second.has_payload, "the 20 kB envelope: id %lld ref %d payload %d",
		      (long long)second.id, second.ref, second.has_payload);

	/* The listener fetches the reference: the whole envelope, same shape as an inline one. */
	char *envelope = NULL;
	ck_assert_int_eq(cc_outbox_envelope(pg, big, &envelope), 0);
	cJSON *j = cJSON_Parse(envelope);
	ck_assert_ptr_nonnull(j);
	const cJSON *pad = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "payload"), "pad");
	ck_assert_msg(cJSON_IsString(pad) && strlen(pad->valuestring) == 20000, "fetched envelope: %.200s", envelope);
	ck_assert_int_eq((int64_t)cJSON_GetObjectItemCaseSensitive(j, "position")->valuedouble, second.position);
	ck_assert_int_eq((int64_t)cJSON_GetObjectItemCaseSensitive(j, "revision")->valuedouble, 2);
	ck_assert(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(j, "occurred_at")));
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "player_ids")), 1);
	cJSON_Delete(j);
	free(envelope);
	ck_assert_int_eq(cc_outbox_envelope(pg, INT64_MAX - 1, &envelope), CC_ENOTFOUND);
	ck_assert_double_eq(metric("cosmic_clash_outbox_references_total"), 1);
	listener_stop(l);
}
END_TEST

START_TEST(test_dead_letter_is_listed_and_replayed_once_in_order)
{
	char a[CC_UUID_BUF], idt[24], buf[256];
	new_uuid(a);
	struct listener *l = listener_start();
	cfg.outbox_max_attempts = 1;
	int64_t poison = plant_poison(a, 1);
	int64_t a2 = append(a, 2, NULL);
	snprintf(idt, sizeof idt, "%" PRId64, poison);
	batch(&m);
	ck_assert(dead(poison));
	batch(&m);
	ck_assert(published(a2));

	/* Listed, newest first, with what an operator needs. */
	char *page = NULL;
	ck_assert_int_eq(cc_outbox_dead_letters(pg, 0, 100, &page), 0);
	cJSON *j = cJSON_Parse(page);
	const cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "dead_letters"), 0);
	ck_assert_msg(first && (int64_t)cJSON_GetObjectItemCaseSensitive(first, "id")->valuedouble == poison,
		      "newest dead letter is not %lld: %.300s", (long long)poison, page);
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(first, "resource_id")->valuestring, a);
	ck_assert_int_eq((int)cJSON_GetObjectItemCaseSensitive(first, "attempts")->valuedouble, 1);
	ck_assert_int_eq((int)cJSON_GetObjectItemCaseSensitive(first, "player_count")->valuedouble, 65);
	ck_assert(strstr(cJSON_GetObjectItemCaseSensitive(first, "last_error")->valuestring, "player_ids") != NULL);
	cJSON_Delete(j);
	free(page);

	/* Its cause is fixed (here: the envelope made valid), then it is replayed; a later row arrives first. */
	ck_assert_int_eq(cc_pg_exec(pg, "UPDATE outbox SET player_ids = player_ids[1:2] WHERE id = $1", 1,
				    (const char *const[]){ idt }, NULL),
			 0);
	enum cc_outbox_replay outcome;
	char *view = NULL;
	ck_assert_int_eq(cc_outbox_replay(pg, poison, 0, &outcome, &view), 0);
	ck_assert_int_eq(outcome, CC_OUTBOX_REPLAYED);
	ck_assert(strstr(view, "\"state\":\"pending\"") && strstr(view, "\"replays\":1") && strstr(view, "\"replayed\":true"));
	free(view);
	int64_t a3 = append(a, 3, NULL);
	ck_assert_int_eq(row_int(poison, "attempts"), 0);

	/* The same request again changes nothing; a stale fence is refused. */
	ck_assert_int_eq(cc_outbox_replay(pg, poison, 0, &outcome, &view), 0);
	ck_assert_int_eq(outcome, CC_OUTBOX_ALREADY_REPLAYED);
	ck_assert(strstr(view, "\"replayed\":false") && strstr(view, "\"replays\":1"));
	free(view);
	ck_assert_int_eq(cc_outbox_replay(pg, poison, 1, &outcome, &view), 0);
	ck_assert_int_eq(outcome, CC_OUTBOX_NOT_DEAD_LETTERED);
	free(view);
	ck_assert_int_eq(cc_outbox_replay(pg, poison, 7, &outcome, &view), 0);
	ck_assert_int_eq(outcome, CC_OUTBOX_REPLAY_STALE);
	free(view);
	ck_assert_int_eq(cc_outbox_replay(pg, a3, 0, &outcome, &view), CC_ENOTFOUND); /* never dead-lettered */
	ck_assert_int_eq(cc_outbox_replay(pg, INT64_MAX - 1, 0, &outcome, &view), CC_ENOTFOUND);
	ck_assert_int_eq(row_int(poison, "replays"), 1);

	/* The replayed row is its aggregate's head again: it goes before rev 3. */
	batch(&m);
	ck_assert_msg(published(poison) && !published(a3), "first batch after the replay: replayed %d, rev 3 %d",
		      published(poison), published(a3));
	batch(&m);
	ck_assert(published(a3));
	ck_assert_uint_eq(wait_arrivals(l, a, 3, 5000), 3);
	ck_assert_str_eq(arrived(l, a, buf, sizeof buf), "2,1,3");
	listener_stop(l);
}
END_TEST

/* ---- positions in commit order -------------------------------------------------------- */

struct blocked_batch {
	struct cc_pg *pg;
	pthread_t thread;
	int rc;
	struct maint_batch b;
};

static void *blocked_main(void *arg)
{
	struct blocked_batch *x = arg;
	x->rc = run_batch(x->pg, &m, &x->b);
	return NULL;
}

/*
 * Dispatcher X delivers a's row and has not committed; dispatcher Y
 * delivers b's row meanwhile. Y must wait for X's commit to take its
 * position, so positions arrive in increasing order: without the position
 * lock Y would commit a higher position first, and a listener resuming
 * from it would never see X's.
 */
START_TEST(test_positions_follow_commit_order)
{
	char a[CC_UUID_BUF], b[CC_UUID_BUF];
	new_uuid(a);
	new_uuid(b);
	struct listener *l = listener_start();
	int64_t a1 = append(a, 1, NULL), b1 = append(b, 1, NULL);
	cfg.batch = 1;

	struct cc_pg *x = connect_db();
	struct maint_batch xb;
	ck_assert_int_eq(cc_pg_exec(x, "BEGIN ISOLATION LEVEL SERIALIZABLE", 0, NULL, NULL), 0);
	ck_assert_int_eq(maint_outbox_batch(x, &m, &xb), 0);
	ck_assert_int_eq(xb.rows, 1); /* a1, the lowest id: delivered, position taken, not committed */

	struct blocked_batch y = { .pg = connect_db() };
	ck_assert_int_eq(pthread_create(&y.thread, NULL, blocked_main, &y), 0);
	/* Y has claimed b1 (a1 is X's) and waits for the position lock. */
	int64_t deadline = cc_clock_ms() + 10000, waiting = 0;
	while ((waiting = q_int(pg, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted", 0,
				NULL)) == 0 &&
	       cc_clock_ms() < deadline)
		nanosleep(&(struct timespec){ .tv_nsec = 10000000 }, NULL);
	bool y_done_early = published(b1);
	ck_assert_int_eq(cc_pg_exec(x, "COMMIT", 0, NULL, NULL), 0);
	pthread_join(y.thread, NULL);
	cc_pg_free(y.pg);
	cc_pg_free(x);
	ck_assert_msg(waiting == 1 && !y_done_early,
		      "dispatcher Y did not wait for X's position lock (waiters %lld, b1 published before X's commit %d)",
		      (long long)waiting, y_done_early);
	ck_assert_msg(y.rc == 0, "dispatcher Y: %s", cc_errname(y.rc));
	ck_assert_msg(published(a1) && published(b1), "a1 %d b1 %d", published(a1), published(b1));
	ck_assert_uint_eq(wait_arrivals(l, NULL, 2, 5000), 2);
	pthread_mutex_lock(&l->mu);
	struct arrival first = l->a[0], second = l->a[1];
	pthread_mutex_unlock(&l->mu);
	ck_assert_msg(first.id == a1 && second.id == b1 && first.position < second.position,
		      "arrivals: id %lld at %lld, then id %lld at %lld", (long long)first.id, (long long)first.position,
		      (long long)second.id, (long long)second.position);
	listener_stop(l);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("outbox_dispatch");
	TCase *tc = tcase_create("dispatch");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_poison_row_is_dead_lettered_while_others_flow);
	tcase_add_test(tc, test_locked_head_holds_back_its_aggregate);
	tcase_add_test(tc, test_big_envelope_goes_as_a_reference);
	tcase_add_test(tc, test_dead_letter_is_listed_and_replayed_once_in_order);
	tcase_add_test(tc, test_positions_follow_commit_order);
	tcase_add_test(tc, test_two_dispatchers_keep_each_aggregate_in_order);
	tcase_add_test(tc, test_two_dispatchers_keep_order_at_read_committed);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
