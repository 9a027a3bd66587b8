/*
 * Match formation (libcommon/formation.c), pure: eligibility (build,
 * protocol, distinct players, RTT <= 100 to a common region, expiry,
 * ranked tolerance widening with the anchor's wait), region choice, team
 * balance against a brute force, refusals and what they exclude, and the
 * pass loop (an unmatchable head never blocks the queue, lost claims, the
 * failed-claim budget, a claim error stops the pass).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "game/formation.h"
#include "support.h"
#include "sys/banned.h"

#define NOW_MS INT64_C(1700000000000)
#define MAX_SPECS 40

struct cand_spec {
	char name;          /* one letter naming the ticket; 0 ends the list */
	char player;        /* letter of the player identity; 0 = its own (name) */
	const char *build;  /* NULL = "b1" */
	int proto;          /* 0 = 1 */
	double rating;      /* 0 = 1500 */
	double wait_s;      /* seconds queued before NOW (0 = a few ms, in list order) */
	const char *rtt;    /* "eu=20,us=50" */
	bool expired;       /* expires_at <= now */
};

static struct cc_formation_workspace ws; /* 40 KiB: static, not on Check's stack */
static struct cc_candidate cands[CC_FORMATION_MAX_CANDIDATES];

/* The matcher's defaults (tolerance 100 + 5/s, cap 400; RTT 100 ms). */
#define PARAMS(n, is_ranked)                                                                         \
	{ .team_size = (n), .ranked = (is_ranked), .tolerance_start = 100, .tolerance_growth_per_s = 5, \
	  .tolerance_cap = 400, .max_rtt_ms = 100 }
#define CASUAL(n) PARAMS(n, false)
#define RANKED(n) PARAMS(n, true)

static struct cc_formation_params casual(int team_size)
{
	return (struct cc_formation_params){ .team_size = team_size, .tolerance_start = 100,
					     .tolerance_growth_per_s = 5, .tolerance_cap = 400,
					     .max_rtt_ms = 100 };
}

static struct cc_formation_params ranked(int team_size)
{
	struct cc_formation_params p = casual(team_size);
	p.ranked = true;
	return p;
}

/* Fills c from "eu=20,us=50". */
static void parse_rtt(struct cc_candidate *c, const char *text)
{
	char buf[256];
	snprintf(buf, sizeof buf, "%s", text ? text : "");
	c->n_rtt = 0;
	for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		ck_assert_msg(eq && c->n_rtt < CC_CANDIDATE_MAX_REGIONS, "bad rtt spec '%s'", text);
		*eq = '\0';
		snprintf(c->rtt[c->n_rtt].region, sizeof c->rtt[0].region, "%s", tok);
		c->rtt[c->n_rtt].rtt_ms = strtod(eq + 1, NULL);
		c->n_rtt++;
	}
}

/* Builds cands[] from specs (terminated by name 0); returns the count. */
static size_t build_candidates(const struct cand_spec *specs)
{
	size_t n = 0;
	while (specs[n].name)
		n++;
	for (size_t i = 0; i < n; i++) {
		const struct cand_spec *s = &specs[i];
		struct cc_candidate *c = &cands[i];
		memset(c, 0, sizeof *c);
		snprintf(c->ticket_id, sizeof c->ticket_id, "00000000-0000-4000-8000-0000000000%02x",
			 (unsigned char)s->name);
		snprintf(c->player_id, sizeof c->player_id, "00000000-0000-4000-8000-1000000000%02x",
			 (unsigned char)(s->player ? s->player : s->name));
		snprintf(c->build, sizeof c->build, "%s", s->build ? s->build : "b1");
		c->protocol_version = s->proto ? s->proto : 1;
		c->rating = s->rating ? s->rating : 1500;
		c->deviation = 100;
		c->queued_at_ms = NOW_MS - (s->wait_s ? (int64_t)(s->wait_s * 1000) : (int64_t)(n - i) * 10);
		c->expires_at_ms = s->expired ? NOW_MS : NOW_MS + 30000;
		parse_rtt(c, s->rtt);
	}
	return n;
}

/* Letters of the candidates at idx[0..n), sorted, e.g. "ACD". */
static void names_of(const struct cand_spec *specs, const uint16_t *idx, size_t n, char *out)
{
	for (size_t k = 0; k < n; k++)
		out[k] = specs[idx[k]].name;
	out[n] = '\0';
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && out[j - 1] > out[j]; j--) {
			char t = out[j];
			out[j] = out[j - 1];
			out[j - 1] = t;
		}
}

/* ---- one formation, table-driven ----------------------------------------- */

struct form_case {
	const char *what;
	struct cc_formation_params params;
	struct cand_spec c[MAX_SPECS];
	enum cc_formation_outcome outcome;
	const char *chosen;  /* FORMED: the chosen letters, sorted */
	const char *region;  /* FORMED: the region */
	const char *exclude; /* refusals: the excluded letters, sorted */
};

static const struct form_case form_cases[] = {
	{ "build mismatch is never chosen", CASUAL(1),
	  { { 'A', .rtt = "eu=20" }, { 'B', .build = "b2", .rtt = "eu=20" }, { 'C', .rtt = "eu=20" } },
	  CC_FORMATION_FORMED, "AC", "eu", NULL },
	{ "protocol mismatch is never chosen", CASUAL(1),
	  { { 'A', .rtt = "eu=20" }, { 'B', .proto = 2, .rtt = "eu=20" }, { 'C', .rtt = "eu=20" } },
	  CC_FORMATION_FORMED, "AC", "eu", NULL },
	{ "the anchor's player twice is never chosen", CASUAL(1),
	  { { 'A', .rtt = "eu=20" }, { 'B', .player = 'A', .rtt = "eu=20" }, { 'C', .rtt = "eu=20" } },
	  CC_FORMATION_FORMED, "AC", "eu", NULL },
	{ "a partner's player twice is chosen once", CASUAL(2),
	  { { 'A', .rtt = "eu=20" },
	    { 'B', .rtt = "eu=20" },
	    { 'C', .player = 'B', .rtt = "eu=20" },
	    { 'D', .rtt = "eu=20" },
	    { 'E', .rtt = "eu=20" } },
	  CC_FORMATION_FORMED, "ABDE", "eu", NULL },
	{ "only duplicates of one player: not enough", CASUAL(1),
	  { { 'A', .rtt = "eu=20" }, { 'B', .player = 'A', .rtt = "eu=20" }, { 'C', .player = 'A', .rtt = "eu=20" } },
	  CC_FORMATION_NOT_ENOUGH, NULL, NULL, "ABC" },
	{ "RTT over 100 is excluded, exactly 100 is fine", CASUAL(1),
	  { { 'A', .rtt = "eu=20" }, { 'B', .rtt = "eu=100.5" }, { 'C', .rtt = "eu=100" } },
	  CC_FORMATION_FORMED, "AC", "eu", NULL },
	{ "a partner reachable only beyond 100 ms is excluded", CASUAL(1),
	  { { 'A', .rtt = "eu=20,us=150" }, { 'B', .rtt = "us=30" }, { 'C', .rtt = "eu=99,us=10" } },
	  CC_FORMATION_FORMED, "AC", "eu", NULL },
	{ "no common region: refused, the anchor excluded", CASUAL(1),
	  { { 'A', .rtt = "eu=20" }, { 'B', .rtt = "us=20" }, { 'C', .rtt = "asia=20" } },
	  CC_FORMATION_NO_COMMON_REGION, NULL, NULL, "A" },
	{ "pairwise reachable but no region common to all four", CASUAL(2),
	  { { 'A', .rtt = "eu=20,us=20" },
	    { 'B', .rtt = "eu=20" },
	    { 'C', .rtt = "us=20" },
	    { 'D', .rtt = "eu=20" },
	    { 'E', .rtt = "us=20" } },
	  CC_FORMATION_NO_COMMON_REGION, NULL, NULL, "A" },
	{ "a region where enough players meet is found", CASUAL(2),
	  { { 'A', .rtt = "eu=20,us=20" },
	    { 'B', .rtt = "eu=20" },
	    { 'C', .rtt = "us=20" },
	    { 'D', .rtt = "us=20" },
	    { 'E', .rtt = "us=20" } },
	  CC_FORMATION_FORMED, "ACDE", "us", NULL },
	{ "a rare build: the whole group is excluded at once", CASUAL(2),
	  { { 'A', .build = "b9", .rtt = "eu=20" },
	    { 'B', .rtt = "eu=20" },
	    { 'C', .build = "b9", .rtt = "eu=20" },
	    { 'D', .rtt = "eu=20" },
	    { 'E', .build = "b9", .rtt = "eu=20" },
	    { 'F', .rtt = "eu=20" },
	    { 'G', .rtt = "eu=20" } },
	  CC_FORMATION_NOT_ENOUGH, NULL, NULL, "ACE" },
	{ "an expired candidate is never chosen", CASUAL(1),
	  { { 'A', .rtt = "eu=20" }, { 'B', .expired = true, .rtt = "eu=20" }, { 'C', .rtt = "eu=20" } },
	  CC_FORMATION_FORMED, "AC", "eu", NULL },
	{ "an expired head is not the anchor", CASUAL(1),
	  { { 'A', .expired = true, .rtt = "eu=20" }, { 'B', .rtt = "eu=20" }, { 'C', .rtt = "eu=20" } },
	  CC_FORMATION_FORMED, "BC", "eu", NULL },
	{ "casual ignores rating", CASUAL(1),
	  { { 'A', .rating = 900, .rtt = "eu=20" }, { 'B', .rating = 2600, .rtt = "eu=20" } },
	  CC_FORMATION_FORMED, "AB", "eu", NULL },
	{ "casual takes the oldest eligibles", CASUAL(1),
	  { { 'A', .rtt = "eu=20" }, { 'B', .rtt = "eu=90" }, { 'C', .rtt = "eu=1" } },
	  CC_FORMATION_FORMED, "AB", "eu", NULL },
	{ "ranked: outside the fresh anchor's tolerance is excluded", RANKED(1),
	  { { 'A', .rating = 1500, .rtt = "eu=20" },
	    { 'B', .rating = 1700, .rtt = "eu=20" },
	    { 'C', .rating = 1450, .rtt = "eu=20" } },
	  CC_FORMATION_FORMED, "AC", "eu", NULL },
	{ "ranked: the closest rating among the oldest two wins", RANKED(1),
	  { { 'A', .rating = 1500, .rtt = "eu=20" },
	    { 'B', .rating = 1580, .rtt = "eu=20" },
	    { 'C', .rating = 1510, .rtt = "eu=20" },
	    { 'D', .rating = 1500, .rtt = "eu=20" } },
	  CC_FORMATION_FORMED, "AC", "eu", NULL },
	{ "ranked: nobody in tolerance refuses only the anchor", RANKED(1),
	  { { 'A', .rating = 2400, .rtt = "eu=20" },
	    { 'B', .rating = 1500, .rtt = "eu=20" },
	    { 'C', .rating = 1510, .rtt = "eu=20" } },
	  CC_FORMATION_NOT_ENOUGH, NULL, NULL, "A" },
	{ "region: the lowest worst-case RTT wins", CASUAL(1),
	  { { 'A', .rtt = "eu=10,us=50" }, { 'B', .rtt = "eu=90,us=60" } },
	  CC_FORMATION_FORMED, "AB", "us", NULL },
	{ "region: equal worst-case RTT falls to name order", CASUAL(1),
	  { { 'A', .rtt = "us=40,eu=40" }, { 'B', .rtt = "us=10,eu=10" } },
	  CC_FORMATION_FORMED, "AB", "eu", NULL },
	{ "region: worst-case, not best-case", CASUAL(1),
	  { { 'A', .rtt = "eu=1,us=30" }, { 'B', .rtt = "eu=80,us=30" } },
	  CC_FORMATION_FORMED, "AB", "us", NULL },
	{ "queue short: nothing excluded", CASUAL(3),
	  { { 'A', .rtt = "eu=20" }, { 'B', .rtt = "eu=20" }, { 'C', .rtt = "eu=20" } },
	  CC_FORMATION_QUEUE_SHORT, NULL, NULL, "" },
	{ "candidates that reach no region do not count", CASUAL(1),
	  { { 'A', .rtt = "eu=200" }, { 'B', .rtt = "" } },
	  CC_FORMATION_QUEUE_SHORT, NULL, NULL, "" },
};

START_TEST(test_form_table)
{
	const struct form_case *tc = &form_cases[_i];
	size_t n = build_candidates(tc->c);
	struct cc_formation_result res;
	char got[CC_FORMATION_MAX_CANDIDATES + 1];

	ck_assert_int_eq(cc_formation_prepare(&ws, cands, n, NOW_MS, &tc->params), 0);
	cc_formation_form(&ws, &res);
	ck_assert_msg(res.outcome == tc->outcome, "%s: outcome %s, expected %s", tc->what,
		      cc_formation_outcome_name(res.outcome), cc_formation_outcome_name(tc->outcome));
	if (tc->outcome == CC_FORMATION_FORMED) {
		ck_assert_uint_eq(res.match.n_players, 2 * (size_t)tc->params.team_size);
		names_of(tc->c, res.match.index, res.match.n_players, got);
		ck_assert_msg(strcmp(got, tc->chosen) == 0, "%s: chose %s, expected %s", tc->what, got, tc->chosen);
		ck_assert_msg(strcmp(res.match.region, tc->region) == 0, "%s: region %s, expected %s", tc->what,
			      res.match.region, tc->region);
		ck_assert_msg(res.match.worst_rtt_ms <= 100, "%s: worst RTT %g", tc->what, res.match.worst_rtt_ms);
	} else {
		names_of(tc->c, res.exclude, res.n_exclude, got);
		ck_assert_msg(strcmp(got, tc->exclude) == 0, "%s: excludes %s, expected %s", tc->what, got,
			      tc->exclude);
	}
}
END_TEST

/* ---- ranked tolerance widens with the anchor's wait --------------------- */

struct wait_case {
	double anchor_wait_s; /* how long the 1900-rated outlier has waited */
	enum cc_formation_outcome outcome;
};

/* start 100 + 5/s reaches the 400 gap at 60 s. */
static const struct wait_case wait_cases[] = {
	{ 0.001, CC_FORMATION_NOT_ENOUGH },
	{ 30, CC_FORMATION_NOT_ENOUGH },
	{ 59.9, CC_FORMATION_NOT_ENOUGH },
	{ 60, CC_FORMATION_FORMED },
	{ 600, CC_FORMATION_FORMED },
};

START_TEST(test_tolerance_widens)
{
	const struct wait_case *wc = &wait_cases[_i];
	struct cand_spec specs[] = {
		{ 'A', .rating = 1900, .wait_s = wc->anchor_wait_s, .rtt = "eu=20" },
		{ 'B', .rating = 1500, .wait_s = 0.0005, .rtt = "eu=20" },
		{ 0 },
	};
	struct cc_formation_params p = ranked(1);
	struct cc_formation_result res;
	size_t n = build_candidates(specs);
	ck_assert_int_eq(cc_formation_prepare(&ws, cands, n, NOW_MS, &p), 0);
	cc_formation_form(&ws, &res);
	ck_assert_msg(res.outcome == wc->outcome, "waited %.3f s: %s", wc->anchor_wait_s,
		      cc_formation_outcome_name(res.outcome));
	if (res.outcome == CC_FORMATION_FORMED)
		ck_assert_double_le(res.match.rating_spread, res.match.tolerance);
}
END_TEST

START_TEST(test_tolerance_formula)
{
	struct cc_formation_params p = ranked(1);
	ck_assert_double_eq(cc_formation_tolerance(&p, -5000), 100);
	ck_assert_double_eq(cc_formation_tolerance(&p, 0), 100);
	ck_assert_double_eq(cc_formation_tolerance(&p, 10000), 150);
	ck_assert_double_eq(cc_formation_tolerance(&p, 60000), 400);
	ck_assert_double_eq(cc_formation_tolerance(&p, 3600000), 400);
}
END_TEST

START_TEST(test_params_validated)
{
	struct cc_formation_params ok = casual(3), p;
	ck_assert(cc_formation_params_valid(&ok));
	ck_assert(!cc_formation_params_valid(NULL));
	/* One mutation of a valid set at a time; each must be refused. */
	for (int m = 0; m < 7; m++) {
		p = ok;
		switch (m) {
		case 0: p.team_size = 0; break;
		case 1: p.team_size = CC_FORMATION_MAX_TEAM_SIZE + 1; break;
		case 2: p.tolerance_start = -1; break;
		case 3: p.tolerance_growth_per_s = -1; break;
		case 4: p.tolerance_cap = 50; break; /* below start */
		case 5: p.max_rtt_ms = 0; break;
		case 6: p.max_rtt_ms = NAN; break;
		}
		ck_assert_msg(!cc_formation_params_valid(&p), "mutation %d accepted", m);
		ck_assert_int_eq(cc_formation_prepare(&ws, cands, 0, NOW_MS, &p), CC_EINVAL);
	}
	ck_assert_int_eq(cc_formation_prepare(&ws, cands, CC_FORMATION_MAX_CANDIDATES + 1, NOW_MS, &ok), CC_EINVAL);
}
END_TEST


/* ---- issue 25: PAIRING (nearest partner, bounded hold-out) --------------- */

static struct cc_formation_params pairing(double hold_s)
{
	struct cc_formation_params p = ranked(1);
	p.rule = CC_FORMATION_RULE_PAIRING;
	p.tolerance_hold_s = hold_s;
	return p;
}

/* The hold keeps the tolerance at start for hold_s, then GREEDY's widening, later; hold 0 is GREEDY's formula. */
START_TEST(test_pairing_tolerance_formula)
{
	struct cc_formation_params p = pairing(30), g = ranked(1);
	ck_assert_double_eq(cc_formation_tolerance(&p, 0), 100);
	ck_assert_double_eq(cc_formation_tolerance(&p, 29999), 100);
	ck_assert_double_eq(cc_formation_tolerance(&p, 30000), 100);
	ck_assert_double_eq(cc_formation_tolerance(&p, 40000), 150);
	ck_assert_double_eq(cc_formation_tolerance(&p, 90000), 400);
	for (int64_t w = 0; w < 200000; w += 777) {
		ck_assert_double_le(cc_formation_tolerance(&p, w), cc_formation_tolerance(&g, w));
		p.tolerance_hold_s = 0;
		ck_assert_double_eq(cc_formation_tolerance(&p, w), cc_formation_tolerance(&g, w));
		p.tolerance_hold_s = 30;
	}
	/* The hold is bounded, PAIRING only, and finite. */
	p.tolerance_hold_s = CC_FORMATION_MAX_HOLD_S;
	ck_assert(cc_formation_params_valid(&p));
	p.tolerance_hold_s = CC_FORMATION_MAX_HOLD_S + 0.5;
	ck_assert(!cc_formation_params_valid(&p));
	p.tolerance_hold_s = NAN;
	ck_assert(!cc_formation_params_valid(&p));
	p.tolerance_hold_s = -1;
	ck_assert(!cc_formation_params_valid(&p));
	g.tolerance_hold_s = 10; /* GREEDY has no hold */
	ck_assert(!cc_formation_params_valid(&g));
	g.tolerance_hold_s = 0;
	g.rule = (enum cc_formation_rule)7;
	ck_assert(!cc_formation_params_valid(&g));
}
END_TEST

/*
 * No hold-out longer than its bound: a pair 150 apart (start 100, +5/s,
 * hold 30 s) is held while the anchor has waited under 30 + 50 / 5 = 40 s
 * and forms from 40 s on, never later; GREEDY forms it from 10 s.
 */
static const struct wait_case hold_cases[] = {
	{ 0.001, CC_FORMATION_NOT_ENOUGH },
	{ 10, CC_FORMATION_NOT_ENOUGH },
	{ 39.9, CC_FORMATION_NOT_ENOUGH },
	{ 40, CC_FORMATION_FORMED },
	{ 41, CC_FORMATION_FORMED },
};

START_TEST(test_pairing_hold_bounded)
{
	const struct wait_case *wc = &hold_cases[_i];
	struct cand_spec specs[] = {
		{ 'A', .rating = 1650, .wait_s = wc->anchor_wait_s, .rtt = "eu=20" },
		{ 'B', .rating = 1500, .wait_s = 0.0005, .rtt = "eu=20" },
		{ 0 },
	};
	struct cc_formation_params p = pairing(30), g = ranked(1);
	struct cc_formation_result res;
	size_t n = build_candidates(specs);
	ck_assert_int_eq(cc_formation_prepare(&ws, cands, n, NOW_MS, &p), 0);
	cc_formation_form(&ws, &res);
	ck_assert_msg(res.outcome == wc->outcome, "pairing, waited %.3f s: %s", wc->anchor_wait_s,
		      cc_formation_outcome_name(res.outcome));
	if (res.outcome == CC_FORMATION_FORMED)
		ck_assert_double_le(res.match.rating_spread, res.match.tolerance);
	ck_assert_int_eq(cc_formation_prepare(&ws, cands, n, NOW_MS, &g), 0);
	cc_formation_form(&ws, &res);
	ck_assert_int_eq(res.outcome, wc->anchor_wait_s >= 10 ? CC_FORMATION_FORMED : CC_FORMATION_NOT_ENOUGH);
}
END_TEST

/*
 * PAIRING takes the nearest of ALL eligibles (GREEDY: the nearer of the
 * oldest two), one ticket per player, ties to the older; never one beyond
 * the anchor's tolerance.
 */
START_TEST(test_pairing_nearest_partner)
{
	struct cand_spec specs[] = {
		{ 'A', .rating = 1500, .wait_s = 60, .rtt = "eu=20" },
		{ 'B', .rating = 1590, .wait_s = 50, .rtt = "eu=20" },
		{ 'C', .rating = 1560, .wait_s = 40, .rtt = "eu=20" },
		{ 'D', .rating = 1990, .wait_s = 30, .rtt = "eu=20" }, /* nearest after E, beyond tolerance 100 */
		{ 'E', .rating = 1502, .wait_s = 20, .rtt = "eu=20", .player = 'B' }, /* B's second ticket */
		{ 'F', .rating = 1498, .wait_s = 10, .rtt = "eu=20" },
		{ 'G', .rating = 1502, .wait_s = 5, .rtt = "eu=20" },
		{ 0 },
	};
	struct cc_formation_params p = pairing(30), g = ranked(1);
	struct cc_formation_result res;
	size_t n = build_candidates(specs);
	ck_assert_int_eq(cc_formation_prepare(&ws, cands, n, NOW_MS, &g), 0);
	cc_formation_form(&ws, &res);
	ck_assert_int_eq(res.outcome, CC_FORMATION_FORMED);
	ck_assert_uint_eq(res.match.index[1], 2); /* greedy: C, the nearer of B and C */
	ck_assert_int_eq(cc_formation_prepare(&ws, cands, n, NOW_MS, &p), 0);
	cc_formation_form(&ws, &res);
	ck_assert_int_eq(res.outcome, CC_FORMATION_FORMED);
	ck_assert_uint_eq(res.match.index[0], 0);
	ck_assert_uint_eq(res.match.index[1], 4); /* E (2 away, older than F and G at 2) */
	ck_assert_double_le(res.match.rating_spread, res.match.tolerance);
}
END_TEST

/* ---- team balance against a brute force -------------------------------- */

/* The best |mean0 - mean1| over every equal split of ratings (all 2^n masks). */
static double brute_force_best(const double *rating, size_t n)
{
	double best = INFINITY;
	for (uint32_t mask = 0; mask < (UINT32_C(1) << n); mask++) {
		if ((size_t)__builtin_popcount(mask) != n / 2)
			continue;
		double s[2] = { 0, 0 };
		for (size_t i = 0; i < n; i++)
			s[mask >> i & 1u] += rating[i];
		double d = fabs(s[0] - s[1]) / (double)(n / 2);
		best = d < best ? d : best;
	}
	return best;
}

/* Checks one formation's teams: sizes equal, means right, difference optimal. */
static void check_balance(const struct cc_formation *f, const char *what)
{
	double rating[CC_FORMATION_MAX_PLAYERS], s[2] = { 0, 0 };
	size_t count[2] = { 0, 0 };
	for (size_t i = 0; i < f->n_players; i++) {
		rating[i] = cands[f->index[i]].rating;
		ck_assert_uint_le(f->team[i], 1);
		s[f->team[i]] += rating[i];
		count[f->team[i]]++;
	}
	ck_assert_msg(count[0] == count[1], "%s: teams of %zu and %zu", what, count[0], count[1]);
	ck_assert_msg(f->team[0] == 0, "%s: anchor not in team 0", what);
	double half = (double)(f->n_players / 2);
	ck_assert_double_eq_tol(f->team_mean[0], s[0] / half, 1e-9);
	ck_assert_double_eq_tol(f->team_mean[1], s[1] / half, 1e-9);
	double best = brute_force_best(rating, f->n_players);
	ck_assert_msg(fabs(fabs(f->team_mean[0] - f->team_mean[1]) - best) < 1e-6,
		      "%s: mean difference %g, optimum %g", what, fabs(f->team_mean[0] - f->team_mean[1]), best);
}

START_TEST(test_team_balance_known)
{
	/* 3v3: {1500, 1000, 2000} vs {1200, 1800, 1500} is a perfect split; oldest-first
	 * order would give {1500, 1000, 2000} vs ... only by accident, so the search matters. */
	struct cand_spec specs[] = {
		{ 'A', .rating = 1500, .rtt = "eu=20" }, { 'B', .rating = 1000, .rtt = "eu=20" },
		{ 'C', .rating = 1200, .rtt = "eu=20" }, { 'D', .rating = 2000, .rtt = "eu=20" },
		{ 'E', .rating = 1800, .rtt = "eu=20" }, { 'F', .rating = 1500, .rtt = "eu=20" },
		{ 0 },
	};
	struct cc_formation_params p = casual(3);
	struct cc_formation_result res;
	ck_assert_int_eq(cc_formation_prepare(&ws, cands, build_candidates(specs), NOW_MS, &p), 0);
	cc_formation_form(&ws, &res);
	ck_assert_int_eq(res.outcome, CC_FORMATION_FORMED);
	ck_assert_double_eq_tol(res.match.team_mean[0], res.match.team_mean[1], 1e-9);
	ck_assert_double_eq_tol(res.match.team_mean[0], 1500, 1e-9);
	ck_assert_double_eq_tol(res.match.rating_spread, 1000, 1e-9);
	check_balance(&res.match, "known 3v3");

	/* 2v2 {1000, 1100, 1900, 2000}: the best split pairs strong with weak. */
	struct cand_spec specs2[] = {
		{ 'A', .rating = 2000, .rtt = "eu=20" }, { 'B', .rating = 1900, .rtt = "eu=20" },
		{ 'C', .rating = 1100, .rtt = "eu=20" }, { 'D', .rating = 1000, .rtt = "eu=20" },
		{ 0 },
	};
	p = casual(2);
	ck_assert_int_eq(cc_formation_prepare(&ws, cands, build_candidates(specs2), NOW_MS, &p), 0);
	cc_formation_form(&ws, &res);
	ck_assert_int_eq(res.outcome, CC_FORMATION_FORMED);
	ck_assert_int_eq(res.match.team[0], 0); /* A (2000) */
	for (size_t i = 0; i < 4; i++) {
		double r = cands[res.match.index[i]].rating;
		int expect = (r == 2000 || r == 1000) ? 0 : 1;
		ck_assert_msg(res.match.team[i] == expect, "rating %g in team %d", r, res.match.team[i]);
	}
}
END_TEST

/* Random ratings for every team size: the exact search equals the brute force. */
START_TEST(test_team_balance_random)
{
	unsigned seed = 12345;
	for (int team_size = 1; team_size <= CC_FORMATION_MAX_TEAM_SIZE; team_size++) {
		for (int round = 0; round < 20; round++) {
			size_t n = 2 * (size_t)team_size;
			for (size_t i = 0; i < n; i++) {
				memset(&cands[i], 0, sizeof cands[i]);
				snprintf(cands[i].player_id, sizeof cands[i].player_id, "p%zu", i);
				snprintf(cands[i].build, sizeof cands[i].build, "b1");
				cands[i].protocol_version = 1;
				cands[i].rating = 800 + rand_r(&seed) % 1600 + (rand_r(&seed) % 100) / 100.0;
				cands[i].queued_at_ms = NOW_MS - (int64_t)(n - i);
				cands[i].expires_at_ms = NOW_MS + 1000;
				parse_rtt(&cands[i], "eu=10");
			}
			struct cc_formation_params p = casual(team_size);
			struct cc_formation_result res;
			ck_assert_int_eq(cc_formation_prepare(&ws, cands, n, NOW_MS, &p), 0);
			cc_formation_form(&ws, &res);
			ck_assert_int_eq(res.outcome, CC_FORMATION_FORMED);
			char what[64];
			snprintf(what, sizeof what, "team size %d round %d", team_size, round);
			check_balance(&res.match, what);
		}
	}
}
END_TEST

/* ---- the pass loop -------------------------------------------------------- */

/* A fake claim: records formations, can lose or fail on chosen calls. */
struct fake_claim {
	int calls;
	int lose_call;        /* this call (1-based) loses, marking lose_letter; 0 = never */
	char lose_letter;     /* the ticket reported lost (0 = report none) */
	bool always_lose;     /* every call loses */
	int fail_call;        /* this call returns CC_EUNAVAILABLE; 0 = never */
	const struct cand_spec *specs;
	char formed[64][CC_FORMATION_MAX_PLAYERS + 1]; /* letters of each committed formation */
	int n_formed;
};

static int fake_claim_fn(void *ctx, const struct cc_formation *f, bool lost[CC_FORMATION_MAX_PLAYERS])
{
	struct fake_claim *fc = ctx;
	fc->calls++;
	if (fc->fail_call == fc->calls)
		return CC_EUNAVAILABLE;
	if (fc->always_lose || fc->lose_call == fc->calls) {
		for (size_t k = 0; k < f->n_players; k++)
			if (fc->specs[f->index[k]].name == fc->lose_letter)
				lost[k] = true;
		return CC_ECONFLICT;
	}
	ck_assert_int_lt(fc->n_formed, 64);
	names_of(fc->specs, f->index, f->n_players, fc->formed[fc->n_formed++]);
	return 0;
}

START_TEST(test_pass_unmatchable_head_does_not_block)
{
	/* Twelve unmatchable heads (more than any attempt budget), then six good tickets. */
	static struct cand_spec specs[MAX_SPECS];
	const char *bad_rtt[] = { "r1=20", "r2=20", "r3=20", "r4=20", "r5=20", "r6=20",
				  "eu=150", "r7=20", "r8=20", "r9=20", "r10=20", "r11=20" };
	size_t n = 0;
	for (size_t i = 0; i < CC_ARRAY_LEN(bad_rtt); i++)
		specs[n++] = (struct cand_spec){ (char)('a' + i), .rtt = bad_rtt[i] };
	for (char c = 'A'; c <= 'F'; c++)
		specs[n++] = (struct cand_spec){ c, .rtt = "eu=20" };
	specs[n] = (struct cand_spec){ 0 };

	struct cc_formation_params p = casual(3);
	struct fake_claim fc = { .specs = specs };
	struct cc_formation_pass_stats st;
	ck_assert_int_eq(cc_formation_prepare(&ws, cands, build_candidates(specs), NOW_MS, &p), 0);
	ck_assert_int_eq(cc_formation_pass(&ws, fake_claim_fn, &fc, &st), 0);
	ck_assert_int_eq(st.formed, 1);
	ck_assert_str_eq(fc.formed[0], "ABCDEF");
	ck_assert_msg(st.refused_no_region == 11, "refusals %u", st.refused_no_region); /* eu=150 was never usable */
	ck_assert(!st.out_of_attempts);
}
END_TEST

START_TEST(test_pass_ranked_outliers_do_not_block)
{
	/* Nine fresh 2400s at the head; two 1500s behind them match in the same pass. */
	static struct cand_spec specs[MAX_SPECS];
	size_t n = 0;
	for (int i = 0; i < 9; i++)
		specs[n++] = (struct cand_spec){ (char)('a' + i), .rating = 2400 + 300 * i, .wait_s = 1,
						 .rtt = "eu=20" };
	specs[n++] = (struct cand_spec){ 'A', .rating = 1500, .rtt = "eu=20" };
	specs[n++] = (struct cand_spec){ 'B', .rating = 1550, .rtt = "eu=20" };
	specs[n] = (struct cand_spec){ 0 };

	struct cc_formation_params p = ranked(1);
	struct fake_claim fc = { .specs = specs };
	struct cc_formation_pass_stats st;
	ck_assert_int_eq(cc_formation_prepare(&ws, cands, build_candidates(specs), NOW_MS, &p), 0);
	ck_assert_int_eq(cc_formation_pass(&ws, fake_claim_fn, &fc, &st), 0);
	ck_assert_int_eq(st.formed, 1);
	ck_assert_str_eq(fc.formed[0], "AB");
	ck_assert_int_eq(st.refused_not_enough, 9);
}
END_TEST

START_TEST(test_pass_forms_as_many_as_possible)
{
	/* 200 casual tickets, one build, one region: 33 disjoint 3v3s, 2 left over. */
	static struct cand_spec specs[201];
	for (int i = 0; i < 200; i++)
		specs[i] = (struct cand_spec){ (char)(i + 1), .rtt = "eu=20", .rating = 1000 + (i * 37) % 900 };
	specs[200] = (struct cand_spec){ 0 };
	struct cc_formation_params p = casual(3);
	struct fake_claim fc = { .specs = specs };
	struct cc_formation_pass_stats st;
	size_t n = build_candidates(specs);
	ck_assert_int_eq(cc_formation_prepare(&ws, cands, n, NOW_MS, &p), 0);
	ck_assert_int_eq(cc_formation_pass(&ws, fake_claim_fn, &fc, &st), 0);
	ck_assert_int_eq(st.formed, 33);
	ck_assert_uint_eq(cc_formation_remaining(&ws), 2);
	/* No ticket in two formations. */
	int seen[256] = { 0 };
	for (int m = 0; m < fc.n_formed; m++)
		for (const char *c = fc.formed[m]; *c; c++)
			ck_assert_msg(++seen[(unsigned char)*c] == 1, "ticket %d formed twice", *c);
}
END_TEST

START_TEST(test_pass_lost_claim_excludes_and_continues)
{
	/* The first claim loses ticket B; the pass re-forms without B. */
	struct cand_spec specs[] = {
		{ 'A', .rtt = "eu=20" }, { 'B', .rtt = "eu=20" }, { 'C', .rtt = "eu=20" },
		{ 'D', .rtt = "eu=20" }, { 'E', .rtt = "eu=20" }, { 0 },
	};
	struct cc_formation_params p = casual(2);
	struct fake_claim fc = { .specs = specs, .lose_call = 1, .lose_letter = 'B' };
	struct cc_formation_pass_stats st;
	ck_assert_int_eq(cc_formation_prepare(&ws, cands, build_candidates(specs), NOW_MS, &p), 0);
	ck_assert_int_eq(cc_formation_pass(&ws, fake_claim_fn, &fc, &st), 0);
	ck_assert_int_eq(st.lost_claims, 1);
	ck_assert_int_eq(st.formed, 1);
	ck_assert_str_eq(fc.formed[0], "ACDE");
}
END_TEST

START_TEST(test_pass_failed_claim_budget)
{
	/* Every claim loses one ticket: the pass stops after the budget, not before. */
	static struct cand_spec specs[MAX_SPECS];
	for (int i = 0; i < 30; i++)
		specs[i] = (struct cand_spec){ (char)('A' + i), .rtt = "eu=20" };
	specs[30] = (struct cand_spec){ 0 };
	struct cc_formation_params p = casual(1);
	struct fake_claim fc = { .specs = specs, .always_lose = true, .lose_letter = 0 };
	struct cc_formation_pass_stats st;
	ck_assert_int_eq(cc_formation_prepare(&ws, cands, build_candidates(specs), NOW_MS, &p), 0);
	ck_assert_int_eq(cc_formation_pass(&ws, fake_claim_fn, &fc, &st), 0);
	ck_assert_int_eq(fc.calls, CC_FORMATION_MAX_FAILED_CLAIMS);
	ck_assert(st.out_of_attempts);
	ck_assert_int_eq(st.excluded, 2 * CC_FORMATION_MAX_FAILED_CLAIMS); /* none named: both dropped */
}
END_TEST

START_TEST(test_pass_claim_error_stops)
{
	struct cand_spec specs[] = {
		{ 'A', .rtt = "eu=20" }, { 'B', .rtt = "eu=20" }, { 'C', .rtt = "eu=20" }, { 'D', .rtt = "eu=20" }, { 0 },
	};
	struct cc_formation_params p = casual(1);
	struct fake_claim fc = { .specs = specs, .fail_call = 2 };
	struct cc_formation_pass_stats st;
	ck_assert_int_eq(cc_formation_prepare(&ws, cands, build_candidates(specs), NOW_MS, &p), 0);
	ck_assert_int_eq(cc_formation_pass(&ws, fake_claim_fn, &fc, &st), CC_EUNAVAILABLE);
	ck_assert_int_eq(st.formed, 1);
	ck_assert_int_eq(fc.calls, 2);
}
END_TEST

START_TEST(test_pass_empty)
{
	struct cc_formation_params p = ranked(1);
	struct fake_claim fc = { 0 };
	struct cc_formation_pass_stats st;
	ck_assert_int_eq(cc_formation_prepare(&ws, cands, 0, NOW_MS, &p), 0);
	ck_assert_int_eq(cc_formation_pass(&ws, fake_claim_fn, &fc, &st), 0);
	ck_assert_int_eq(fc.calls, 0);
	ck_assert_int_eq(st.formed, 0);
}
END_TEST

/* A mixed pass over 200 candidates stays cheap (loose bound: ASan build, shared CPU). */
START_TEST(test_pass_cost)
{
	static struct cand_spec specs[201];
	const char *rtts[] = { "eu=20,us=90", "us=30", "eu=60,asia=80", "asia=40", "eu=150,us=95" };
	const char *builds[] = { "b1", "b2", "b3" };
	for (int i = 0; i < 200; i++)
		specs[i] = (struct cand_spec){ (char)(i + 1), .build = builds[i % 3], .rtt = rtts[(i * 7) % 5],
					       .rating = 1000 + (i * 53) % 1000 };
	specs[200] = (struct cand_spec){ 0 };
	struct cc_formation_params p = ranked(3);
	size_t n = build_candidates(specs);
	struct timespec t0, t1;
	const int rounds = 50;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int r = 0; r < rounds; r++) {
		struct fake_claim fc = { .specs = specs };
		struct cc_formation_pass_stats st;
		ck_assert_int_eq(cc_formation_prepare(&ws, cands, n, NOW_MS, &p), 0);
		ck_assert_int_eq(cc_formation_pass(&ws, fake_claim_fn, &fc, &st), 0);
		ck_assert_int_gt(st.formed, 0);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double per_pass_ms = ((double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6) / rounds;
	fprintf(stderr, "test_pass_cost: %.3f ms per pass over 200 candidates (ASan build)\n", per_pass_ms);
	ck_assert_msg(per_pass_ms < 50, "a pass took %.3f ms", per_pass_ms);
}
END_TEST

static Suite *formation_suite(void)
{
	Suite *s = suite_create("formation");
	TCase *tc = tcase_create("form");
	tcase_add_loop_test(tc, test_form_table, 0, (int)CC_ARRAY_LEN(form_cases));
	tcase_add_loop_test(tc, test_tolerance_widens, 0, (int)CC_ARRAY_LEN(wait_cases));
	tcase_add_test(tc, test_tolerance_formula);
	tcase_add_test(tc, test_pairing_tolerance_formula);
	tcase_add_loop_test(tc, test_pairing_hold_bounded, 0, (int)CC_ARRAY_LEN(hold_cases));
	tcase_add_test(tc, test_pairing_nearest_partner);
	tcase_add_test(tc, test_params_validated);
	tcase_add_test(tc, test_team_balance_known);
	tcase_add_test(tc, test_team_balance_random);
	suite_add_tcase(s, tc);
	TCase *tp = tcase_create("pass");
	tcase_set_timeout(tp, 30);
	tcase_add_test(tp, test_pass_unmatchable_head_does_not_block);
	tcase_add_test(tp, test_pass_ranked_outliers_do_not_block);
	tcase_add_test(tp, test_pass_forms_as_many_as_possible);
	tcase_add_test(tp, test_pass_lost_claim_excludes_and_continues);
	tcase_add_test(tp, test_pass_failed_claim_budget);
	tcase_add_test(tp, test_pass_claim_error_stops);
	tcase_add_test(tp, test_pass_empty);
	tcase_add_test(tp, test_pass_cost);
	suite_add_tcase(s, tp);
	return s;
}

int main(void)
{
	return cc_test_run_suite(formation_suite());
}
