/*
 * Parties in the pure pass (issue 26; game/formation.h "Parties"): property
 * tests over random casual 3v3 and 4v4 queues with solos and parties of 2-3
 * driven through cc_queue_pass_run, the matcher's own loop, until nothing
 * more forms. Every claimed formation must hold: no party split (all of its
 * tickets in the match, all on one team), team sizes exactly n, one ticket
 * per player, a region every player reaches, one build, and no ticket
 * claimed twice. Plus the cases the rule names: a party of 3 with three
 * solos forms with the party on one team; 2+2+2 cannot split into 3v3; a
 * party missing a ticket never forms; a solo queue is unchanged.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"
#include "game/formation.h"
#include "game/queue_pass.h"
#include "sys/banned.h"

#define NOW_MS 1700000000000LL
#define MAXQ 600

static struct cc_candidate q[MAXQ];
static size_t nq;
static bool claimed[MAXQ];
static struct cc_queue_pass qp;
static char bad[512];
static size_t formations, team_size;
static int party_team_seen[MAXQ]; /* per queue index, the team its party got (-1 none) */

static size_t index_of(const char *ticket_id)
{
	return (size_t)strtoul(ticket_id + 1, NULL, 10);
}

static int read_queue(void *ctx, const char *after, size_t limit, struct cc_candidate *out, struct cc_queue_page *page)
{
	(void)ctx;
	size_t i = after ? index_of(after) + 1 : 0, n = 0;
	for (; i < nq && n < limit; i++)
		if (!claimed[i])
			out[n++] = q[i];
	page->n = n;
	page->more = n == limit;
	page->now_ms = NOW_MS;
	snprintf(page->last, sizeof page->last, "%s", n ? out[n - 1].ticket_id : "");
	return 0;
}

#define flag(...) (void)(bad[0] || snprintf(bad, sizeof bad, __VA_ARGS__))

static int claim_check(void *ctx, const struct cc_formation *f, bool lost[CC_FORMATION_MAX_PLAYERS])
{
	(void)ctx;
	(void)lost;
	size_t count[2] = { 0, 0 };
	formations++;
	if (f->n_players != 2 * team_size)
		flag("a formation of the wrong size (%s%s)", "", "");
	for (size_t k = 0; k < f->n_players; k++) {
		const struct cc_candidate *c = &qp.cands[f->index[k]];
		size_t i = index_of(c->ticket_id);
		count[f->team[k]]++;
		if (claimed[i])
			flag("ticket %s claimed twice%s", c->ticket_id, "");
		if (cc_candidate_rtt_to(c, f->region) < 0 || cc_candidate_rtt_to(c, f->region) > 100)
			flag("ticket %s does not reach %s", c->ticket_id, f->region);
		if (strcmp(c->build, qp.cands[f->index[0]].build) != 0)
			flag("ticket %s runs another build than %s", c->ticket_id, qp.cands[f->index[0]].ticket_id);
		for (size_t j = 0; j < k; j++)
			if (strcmp(qp.cands[f->index[j]].player_id, c->player_id) == 0)
				flag("player %s twice in one match%s", c->player_id, "");
		claimed[i] = true;
	}
	if (count[0] != team_size || count[1] != team_size)
		flag("teams of unequal size%s%s", "", "");
	/* No party split: every ticket of each party in the match is in it, on the anchor's side of its party. */
	for (size_t k = 0; k < f->n_players; k++) {
		const struct cc_candidate *c = &qp.cands[f->index[k]];
		if (!c->party_id[0])
			continue;
		size_t in = 0;
		for (size_t j = 0; j < f->n_players; j++) {
			const struct cc_candidate *d = &qp.cands[f->index[j]];
			if (strcmp(d->party_id, c->party_id) == 0) {
				in++;
				if (f->team[j] != f->team[k])
					flag("party %s split across the teams (%s)", c->party_id, d->ticket_id);
			}
		}
		if (in != (size_t)c->party_size)
			flag("party %s in the match without all of its tickets (%s)", c->party_id, c->ticket_id);
	}
	return 0;
}

static uint64_t rng;
static uint64_t next_u64(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}
static double uniform(void)
{
	return (double)(next_u64() >> 11) / 9007199254740992.0;
}

static const char *const regions[] = { "eu-west", "us-east", "ap-southeast" };

/* Appends one ticket; party "" = solo. */
static struct cc_candidate *add(const char *party, int party_size, double rating, const char *build)
{
	struct cc_candidate *c = &q[nq];
	memset(c, 0, sizeof *c);
	snprintf(c->ticket_id, sizeof c->ticket_id, "t%05zu", nq);
	snprintf(c->player_id, sizeof c->player_id, "p%05zu", nq);
	snprintf(c->build, sizeof c->build, "%s", build);
	snprintf(c->party_id, sizeof c->party_id, "%s", party);
	c->party_size = party[0] ? party_size : 1;
	c->protocol_version = 3;
	c->rating = rating;
	c->deviation = 100;
	c->queued_at_ms = NOW_MS - 600000 + (int64_t)nq * 10;
	c->expires_at_ms = NOW_MS + 30000;
	nq++;
	return c;
}

static void reach(struct cc_candidate *c, const char *region, double ms)
{
	snprintf(c->rtt[c->n_rtt].region, sizeof c->rtt[0].region, "%s", region);
	c->rtt[c->n_rtt++].rtt_ms = ms;
}

/* Runs passes until one forms nothing; returns how many tickets were claimed. */
static size_t run_to_fixpoint(int ts)
{
	struct cc_formation_params p = { .team_size = ts, .max_rtt_ms = 100 };
	struct cc_queue_pass_config cfg;
	struct cc_queue_pass_stats st;
	team_size = (size_t)ts;
	cc_queue_pass_defaults(&p, &cfg);
	cc_queue_pass_init(&qp);
	memset(claimed, 0, sizeof claimed);
	for (int pass = 0; pass < 2000; pass++) {
		ck_assert_int_eq(cc_queue_pass_run(&qp, &cfg, read_queue, claim_check, NULL, &st), 0);
		if (st.formation.formed == 0 && !st.left_cursor)
			break;
	}
	size_t n = 0;
	for (size_t i = 0; i < nq; i++)
		n += claimed[i];
	return n;
}

static void reset(void)
{
	nq = 0;
	bad[0] = '\0';
	formations = 0;
	memset(party_team_seen, 0xff, sizeof party_team_seen);
}

START_TEST(test_random_queues_keep_parties_whole)
{
	for (int round = 0; round < 60; round++) {
		reset();
		rng = 0x9e3779b97f4a7c15ULL ^ (uint64_t)(round + 1) * 0x2545F4914F6CDD1DULL;
		int ts = round % 3 == 0 ? 4 : 3;
		size_t target = 60 + (size_t)(uniform() * 300);
		int party_no = 0;
		while (nq < target) {
			int size = uniform() < 0.3 ? 2 + (uniform() < 0.5) : 1;
			const char *build = uniform() < 0.1 ? "1.4.1" : "1.4.2";
			char party[CC_UUID_BUF] = "";
			if (size > 1)
				snprintf(party, sizeof party, "party-%04d", party_no++);
			/* A party shares its regions (its members live near each other); solos vary. */
			int r0 = (int)(uniform() * 3), r1 = (int)(uniform() * 3);
			for (int m = 0; m < size && nq < MAXQ; m++) {
				struct cc_candidate *c = add(party, size, 1500 + 300 * (uniform() - 0.5), build);
				reach(c, regions[r0], 20 + 60 * uniform());
				if (uniform() < 0.5)
					reach(c, regions[r1], 30 + 90 * uniform());
			}
		}
		/* The last party may have been cut short by MAXQ: that one must then never form. */
		size_t got = run_to_fixpoint(ts);
		ck_assert_msg(!bad[0], "round %d: %s", round, bad);
		ck_assert_msg(got % (2 * (size_t)ts) == 0, "round %d: %zu claimed", round, got);
		ck_assert_msg(formations > 0, "round %d formed nothing from %zu tickets", round, nq);
	}
}
END_TEST

static void solo(const char *region)
{
	reach(add("", 1, 1500, "1.4.2"), region, 30);
}

static void party(const char *id, int size, const char *region)
{
	for (int m = 0; m < size; m++)
		reach(add(id, size, 1400 + 100 * m, "1.4.2"), region, 30);
}

START_TEST(test_three_friends_and_three_solos)
{
	reset();
	party("friends", 3, "eu-west");
	for (int k = 0; k < 3; k++)
		solo("eu-west");
	ck_assert_uint_eq(run_to_fixpoint(3), 6);
	ck_assert_msg(!bad[0], "%s", bad);
	/* Solos first, then the party: the same. */
	reset();
	for (int k = 0; k < 3; k++)
		solo("eu-west");
	party("friends", 3, "eu-west");
	ck_assert_uint_eq(run_to_fixpoint(3), 6);
	ck_assert_msg(!bad[0], "%s", bad);
}
END_TEST

START_TEST(test_unsplittable_and_incomplete_parties)
{
	/* 2 + 2 + 2 cannot make 3v3 without splitting a party. */
	reset();
	party("a", 2, "eu-west");
	party("b", 2, "eu-west");
	party("c", 2, "eu-west");
	ck_assert_uint_eq(run_to_fixpoint(3), 0);
	/* ... but 2 + 2 + 1 + 1 can (2 + 1 against 2 + 1). */
	reset();
	party("a", 2, "eu-west");
	party("b", 2, "eu-west");
	solo("eu-west");
	solo("eu-west");
	ck_assert_uint_eq(run_to_fixpoint(3), 6);
	ck_assert_msg(!bad[0], "%s", bad);
	/* A party of 3 whose third ticket is not in the queue never forms; the solos behind it do. */
	reset();
	reach(add("short", 3, 1500, "1.4.2"), "eu-west", 30);
	reach(add("short", 3, 1500, "1.4.2"), "eu-west", 30);
	for (int k = 0; k < 6; k++)
		solo("eu-west");
	ck_assert_uint_eq(run_to_fixpoint(3), 6);
	ck_assert_msg(!claimed[0] && !claimed[1], "the incomplete party was matched");
	/* A party one of whose members reaches no region with the others never forms. */
	reset();
	party("far", 2, "eu-west");
	q[1].rtt[0].rtt_ms = 500;
	reach(&q[1], "ap-southeast", 20);
	for (int k = 0; k < 6; k++)
		solo("eu-west");
	ck_assert_uint_eq(run_to_fixpoint(3), 6);
	ck_assert_msg(!claimed[0] && !claimed[1] && !bad[0], "the party was matched apart: %s", bad);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("formation_parties");
	TCase *tc = tcase_create("parties");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_random_queues_keep_parties_whole);
	tcase_add_test(tc, test_three_friends_and_three_solos);
	tcase_add_test(tc, test_unsplittable_and_incomplete_parties);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
