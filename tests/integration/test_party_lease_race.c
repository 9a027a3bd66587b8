/*
 * A party mate's heartbeat (its ticket, then the party's shared lease on
 * the others: store/tickets.c sql_party_lease) racing a decline in the
 * party's proposal (store/proposals.c: the decliner's ticket, then the
 * mates'), each in its own SERIALIZABLE transaction on its own
 * connection, many rounds, and two mates' heartbeats at once: PostgreSQL
 * must never report a deadlock (a serialization failure, which the routes
 * retry, is fine).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys/pg.h"
#include "party_proposal_seed.h"
#include "support.h"
#include "store/parties.h"
#include "store/proposals.h"
#include "store/tickets.h"

#define N PARTY_SEED_PLAYERS
#define ROUNDS 60

static struct cc_pg *pg, *pg2;
static char party[CC_UUID_BUF], proposal[CC_UUID_BUF];
static char player[N][CC_UUID_BUF], ticket[N][CC_UUID_BUF];
static pthread_barrier_t go;
static int deadlocks;

static struct cc_pg *conn(void)
{
	char err[512];
	struct cc_pg *c = NULL;
	int rc = cc_pg_connect(cc_test_env("CC_TEST_PG_DSN"), NULL, &c, err, sizeof(err));
	ck_assert_msg(rc == 0, "connect: %s: %s", cc_errname(rc), err);
	return c;
}

static void query1(const char *sql, int n, const char *const *params, char *out, size_t len)
{
	party_seed_query1(pg, sql, n, params, out, len);
}

static void exec(const char *sql, int n, const char *const *params)
{
	party_seed_exec(pg, sql, n, params);
}

static void seed(void)
{
	party_proposal_seed(pg, 3, party, proposal, player, ticket);
}

static int refused; /* a failure that is neither a deadlock nor a serialization failure */

static void note_error(struct cc_pg *c, int rc)
{
	if (rc != 0 && rc != CC_ESERIALIZATION) {
		__atomic_add_fetch(&refused, 1, __ATOMIC_SEQ_CST);
		fprintf(stderr, "refused: %s %s\n", cc_errname(rc), cc_pg_error_message(c));
	}
	const char *m = cc_pg_error_message(c);
	if (rc != 0 && m && strstr(m, "deadlock"))
		__atomic_add_fetch(&deadlocks, 1, __ATOMIC_SEQ_CST);
}

static void *heartbeat(void *arg)
{
	(void)arg;
	struct cc_ticket t;
	pthread_barrier_wait(&go);
	int rc = cc_pg_exec(pg2, "BEGIN ISOLATION LEVEL SERIALIZABLE", 0, NULL, NULL);
	if (rc == 0) /* the mate's heartbeat, as the heartbeat route makes it */
		rc = cc_ticket_heartbeat(pg2, ticket[1], player[1], 2, 60, &t, NULL, NULL);
	note_error(pg2, rc);
	if (cc_pg_exec(pg2, rc == 0 ? "COMMIT" : "ROLLBACK", 0, NULL, NULL) != 0)
		fprintf(stderr, "end: %s\n", cc_pg_error_message(pg2));
	return NULL;
}

START_TEST(test_mate_heartbeat_races_a_decline)
{
	pg = conn();
	pg2 = conn();
	for (int r = 0; r < ROUNDS; r++) {
		seed();
		pthread_t th;
		pthread_barrier_init(&go, NULL, 2);
		pthread_create(&th, NULL, heartbeat, NULL);
		enum cc_proposal_verdict verdict;
		pthread_barrier_wait(&go);
		int rc = cc_pg_exec(pg, "BEGIN ISOLATION LEVEL SERIALIZABLE", 0, NULL, NULL);
		if (rc == 0)
			rc = cc_proposal_respond(pg, proposal, player[0], false, 1, 60, &verdict, NULL, NULL);
		note_error(pg, rc);
		if (cc_pg_exec(pg, rc == 0 ? "COMMIT" : "ROLLBACK", 0, NULL, NULL) != 0)
			ck_abort_msg("end: %s", cc_pg_error_message(pg));
		pthread_join(th, NULL);
		pthread_barrier_destroy(&go);
	}
	fprintf(stderr, "deadlocks: %d of %d rounds\n", deadlocks, ROUNDS);
	ck_assert_msg(deadlocks == 0, "%d deadlocks in %d rounds", deadlocks, ROUNDS);
	ck_assert_int_eq(refused, 0);
	party_seed_forget(pg);
	cc_pg_free(pg2);
	cc_pg_free(pg);
}
END_TEST

/* Two mates' heartbeats at once: each holds its own ticket and extends the other's. */
static void *heartbeat_of(void *arg)
{
	int i = *(int *)arg;
	struct cc_pg *c = i == 1 ? pg2 : pg;
	struct cc_ticket t;
	pthread_barrier_wait(&go);
	int rc = cc_pg_exec(c, "BEGIN ISOLATION LEVEL SERIALIZABLE", 0, NULL, NULL);
	if (rc == 0)
		rc = cc_ticket_heartbeat(c, ticket[i], player[i], 1, 60, &t, NULL, NULL);
	note_error(c, rc);
	if (cc_pg_exec(c, rc == 0 ? "COMMIT" : "ROLLBACK", 0, NULL, NULL) != 0)
		fprintf(stderr, "end: %s\n", cc_pg_error_message(c));
	return NULL;
}

START_TEST(test_two_mates_heartbeat_at_once)
{
	static int one = 1, two = 2;
	char p0[CC_UUID_BUF];
	pg = conn();
	pg2 = conn();
	deadlocks = 0;
	for (int r = 0; r < ROUNDS; r++) {
		query1("INSERT INTO players DEFAULT VALUES RETURNING id", 0, NULL, p0, sizeof p0);
		party_seed_remember(p0);
		for (int i = 1; i <= 2; i++) {
			query1("INSERT INTO players DEFAULT VALUES RETURNING id", 0, NULL, player[i], sizeof player[i]);
			party_seed_remember(player[i]);
		}
		ck_assert_int_eq(cc_party_create(pg, p0, 1, "b1", party), 0);
		for (int i = 1; i <= 2; i++)
			ck_assert_int_eq(cc_party_add_member(pg, party, player[i], 1, "b1"), 0);
		for (int i = 1; i <= 2; i++) {
			const char *p[] = { player[i], party };
			query1("INSERT INTO tickets (player_id, playlist, state, build, protocol_version, rating, deviation, "
			       "  predicted_rtt, expires_at, party_id, party_size) "
			       "VALUES ($1, 'casual', 'QUEUED', 'b1', 1, 1500, 120, '{\"eu-west\": 20}', "
			       "  now() + interval '1 hour', $2::uuid, 2) RETURNING id",
			       2, p, ticket[i], sizeof ticket[i]);
		}
		pthread_t a, b;
		pthread_barrier_init(&go, NULL, 2);
		pthread_create(&a, NULL, heartbeat_of, &one);
		pthread_create(&b, NULL, heartbeat_of, &two);
		pthread_join(a, NULL);
		pthread_join(b, NULL);
		pthread_barrier_destroy(&go);
	}
	fprintf(stderr, "two heartbeats: %d deadlocks of %d rounds\n", deadlocks, ROUNDS);
	ck_assert_msg(deadlocks == 0, "%d deadlocks in %d rounds", deadlocks, ROUNDS);
	ck_assert_int_eq(refused, 0);
	party_seed_forget(pg);
	cc_pg_free(pg2);
	cc_pg_free(pg);
}
END_TEST

/* Unraced, a mate's heartbeat still carries its deadline to the party's other tickets. */
START_TEST(test_the_lease_still_reaches_the_mates)
{
	char same[8];
	struct cc_ticket t;
	pg = conn();
	seed();
	const char *p[] = { party };
	exec("UPDATE tickets SET expires_at = now() + interval '5 seconds' WHERE party_id = $1", 1, p);
	ck_assert_int_eq(cc_ticket_heartbeat(pg, ticket[1], player[1], 2, 600, &t, NULL, NULL), 0);
	query1("SELECT count(DISTINCT expires_at) = 1 AND min(expires_at) > now() + interval '500 seconds' "
	       "FROM tickets WHERE party_id = $1",
	       1, p, same, sizeof same);
	ck_assert_str_eq(same, "t");
	party_seed_forget(pg);
	cc_pg_free(pg);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("party_lease_race");
	TCase *tc = tcase_create("race");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_the_lease_still_reaches_the_mates);
	tcase_add_test(tc, test_mate_heartbeat_races_a_decline);
	tcase_add_test(tc, test_two_mates_heartbeat_at_once);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
