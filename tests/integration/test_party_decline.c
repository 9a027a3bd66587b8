/*
 * A decline in a proposal that holds a party (issue 26), store/proposals.c
 * with store/parties.c and store/tickets.c against the harness PostgreSQL:
 * the decliner's ticket CANCELLED with the DECLINE penalty, the decliner
 * alone; the decliner out of the party (the lead passed on, the revision
 * bumped, party.updated "declined"); the mates QUEUED again with party_id
 * and party_size the mates' count; a party of one left as it is; a party
 * that is gone has its mates cancelled. The proposal is seeded as the
 * claim writes it, over 6 tickets of a 3v3. Everything happens inside a
 * transaction the test rolls back.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys/pg.h"
#include "party_proposal_seed.h"
#include "support.h"
#include "store/parties.h"
#include "store/proposals.h"
#include "sys/banned.h"

#define N PARTY_SEED_PLAYERS

static struct cc_pg *pg;
static char party[CC_UUID_BUF], proposal[CC_UUID_BUF];
static char player[N][CC_UUID_BUF], ticket[N][CC_UUID_BUF]; /* the party's members first, in join order */

/* The one value of a one-row query (params: up to 3). */
static void query1(const char *sql, int n, const char *const *params, char *out, size_t len)
{
	party_seed_query1(pg, sql, n, params, out, len);
}

static void exec(const char *sql, int n, const char *const *params)
{
	party_seed_exec(pg, sql, n, params);
}

static void setup(void)
{
	char err[512];
	int rc = cc_pg_connect(cc_test_env("CC_TEST_PG_DSN"), NULL, &pg, err, sizeof(err));
	ck_assert_msg(rc == 0, "connect: %s: %s", cc_errname(rc), err);
	exec("BEGIN", 0, NULL);
}

static void teardown(void)
{
	ck_assert_int_eq(cc_pg_rollback(pg), 0);
	cc_pg_free(pg);
	pg = NULL;
}

/* A party of members players (the first leads; joined in index order), the rest solos, all PROPOSED in one OPEN proposal. */
static void seed(int members)
{
	party_proposal_seed(pg, members, party, proposal, player, ticket);
}

/* player[i]'s decline, as the response route makes it. */
static void decline(int i)
{
	enum cc_proposal_verdict verdict;
	int rc = cc_proposal_respond(pg, proposal, player[i], false, 1, 60, &verdict, NULL, NULL);
	ck_assert_msg(rc == 0, "decline: %s %s", cc_errname(rc), cc_pg_error_message(pg));
	ck_assert_int_eq(verdict, CC_PROPOSAL_OK);
}

/* "state party_size p" of ticket i: p when its party_id is the party's, s when it has none. */
static void ticket_is(int i, const char *want)
{
	char got[64];
	const char *p[] = { ticket[i], party };
	query1("SELECT state || ' ' || party_size || ' ' || CASE WHEN party_id IS NULL THEN 's' "
	       "  WHEN party_id = $2::uuid THEN 'p' ELSE 'x' END FROM tickets WHERE id = $1",
	       2, p, got, sizeof got);
	ck_assert_msg(strcmp(got, want) == 0, "ticket %d: '%s', want '%s'", i, got, want);
}

/* "leader revision members..." of the party ("" when it is gone). */
static void party_is(const char *want)
{
	char got[256];
	const char *p[] = { party };
	query1("SELECT (SELECT p.leader || ' ' || p.revision || ' ' || string_agg(m.player_id::text, ' ' "
	       "  ORDER BY m.joined_at) FROM cc_parties p JOIN cc_party_members m ON m.party_id = p.id "
	       "  WHERE p.id = $1 GROUP BY p.id)",
	       1, p, got, sizeof got);
	ck_assert_msg(strcmp(got, want) == 0, "party: '%s', want '%s'", got, want);
}

/* The party.updated "declined" rows of the party: "revision player_id" each. */
static void declined_events_are(const char *want)
{
	char got[256];
	const char *p[] = { party };
	query1("SELECT coalesce(string_agg(revision || ' ' || (payload->>'player_id'), ',' ORDER BY id), '') FROM outbox "
	       "WHERE resource_type = 'party' AND resource_id = $1 AND event = 'party.updated' "
	       "AND payload->>'change' = 'declined'",
	       1, p, got, sizeof got);
	ck_assert_msg(strcmp(got, want) == 0, "declined events: '%s', want '%s'", got, want);
}

static void penalised_only(int i)
{
	char got[64];
	const char *p[] = { proposal };
	query1("SELECT string_agg(player_id::text || ' ' || kind, ',') FROM penalties WHERE source_id = $1", 1, p, got,
	       sizeof got);
	char want[64];
	snprintf(want, sizeof want, "%s DECLINE", player[i]);
	ck_assert_str_eq(got, want);
}

static void solos_queued(int members)
{
	for (int i = members; i < N; i++)
		ticket_is(i, "QUEUED 1 s");
}

static char *str(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *str(const char *fmt, ...)
{
	static char buf[4][512];
	static int k;
	va_list ap;
	char *b = buf[k++ % 4];
	va_start(ap, fmt);
	vsnprintf(b, sizeof buf[0], fmt, ap);
	va_end(ap);
	return b;
}

START_TEST(test_leader_declines_in_a_party_of_three)
{
	seed(3);
	decline(0);
	ticket_is(0, "CANCELLED 3 p");
	ticket_is(1, "QUEUED 2 p");
	ticket_is(2, "QUEUED 2 p");
	solos_queued(3);
	party_is(str("%s 2 %s %s", player[1], player[1], player[2])); /* the lead to the longest-standing */
	declined_events_are(str("2 %s", player[0]));
	penalised_only(0);
}
END_TEST

START_TEST(test_member_declines_in_a_party_of_three)
{
	seed(3);
	decline(2);
	ticket_is(2, "CANCELLED 3 p");
	ticket_is(0, "QUEUED 2 p");
	ticket_is(1, "QUEUED 2 p");
	solos_queued(3);
	party_is(str("%s 2 %s %s", player[0], player[0], player[1]));
	declined_events_are(str("2 %s", player[2]));
	penalised_only(2);
}
END_TEST

START_TEST(test_cancel_declines_the_same_way)
{
	seed(3);
	ck_assert_int_eq(cc_proposal_lock_as_decliner(pg, proposal, player[1]), 0);
	const char *p[] = { proposal, player[1] };
	exec("SELECT 1 FROM tickets WHERE proposal_id = $1 AND player_id = $2 FOR UPDATE", 2, p);
	int rc = cc_proposal_decline_by_cancel(pg, proposal, player[1], 60, NULL);
	ck_assert_msg(rc == 0, "cancel: %s %s", cc_errname(rc), cc_pg_error_message(pg));
	ticket_is(1, "CANCELLED 3 p");
	ticket_is(0, "QUEUED 2 p");
	ticket_is(2, "QUEUED 2 p");
	party_is(str("%s 2 %s %s", player[0], player[0], player[2]));
	declined_events_are(str("2 %s", player[1]));
	penalised_only(1);
}
END_TEST

START_TEST(test_a_party_of_two_leaves_a_party_of_one)
{
	seed(2);
	decline(1);
	ticket_is(1, "CANCELLED 2 p");
	ticket_is(0, "QUEUED 1 p");
	solos_queued(2);
	party_is(str("%s 2 %s", player[0], player[0]));
	declined_events_are(str("2 %s", player[1]));
	penalised_only(1);
}
END_TEST

START_TEST(test_a_party_of_one_is_left_as_it_is)
{
	seed(1);
	decline(0);
	ticket_is(0, "CANCELLED 1 p");
	solos_queued(1);
	party_is(str("%s 1 %s", player[0], player[0]));
	declined_events_are("");
	penalised_only(0);
}
END_TEST

START_TEST(test_the_mates_of_a_party_gone_are_cancelled)
{
	seed(3);
	ck_assert_int_eq(cc_party_delete(pg, party), 0);
	decline(1);
	ticket_is(1, "CANCELLED 3 p");
	ticket_is(0, "CANCELLED 2 p");
	ticket_is(2, "CANCELLED 2 p");
	solos_queued(3);
	party_is("");
	char got[128];
	const char *p[] = { ticket[0], ticket[2] };
	query1("SELECT string_agg(payload->>'reason', ' ') FROM outbox WHERE event = 'ticket.cancelled' "
	       "AND resource_id IN ($1, $2)",
	       2, p, got, sizeof got);
	ck_assert_str_eq(got, "party_member_declined party_member_declined");
	penalised_only(1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("party_decline");
	TCase *tc = tcase_create("decline");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_leader_declines_in_a_party_of_three);
	tcase_add_test(tc, test_member_declines_in_a_party_of_three);
	tcase_add_test(tc, test_cancel_declines_the_same_way);
	tcase_add_test(tc, test_a_party_of_two_leaves_a_party_of_one);
	tcase_add_test(tc, test_a_party_of_one_is_left_as_it_is);
	tcase_add_test(tc, test_the_mates_of_a_party_gone_are_cancelled);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
