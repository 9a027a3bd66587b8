/*
 * The matching pass over a paged queue (libcommon/game/queue_pass.c), the
 * very code cc-matcher and queue_sim run, against an in-memory queue that
 * answers its reads the way PostgreSQL does (oldest first, keyset after a
 * ticket, only QUEUED tickets) and claims every formation.
 *
 * The property (issue 9): run passes until one forms nothing (and reached
 * the end of the queue, or went on from its cursor to the end), then
 * search the tickets that last pass read exhaustively: no valid match may
 * remain among them. A valid match is checked here from the rules alone
 * (SPEC 6), not through formation's code: the oldest member anchors; all
 * share build and protocol, are distinct players, unexpired, within
 * max_rtt of one common region, and (ranked) within the anchor's
 * tolerance. Such a set exists iff for some anchor a and region r that a
 * reaches, at least 2n-1 distinct other players younger than a are
 * compatible with a and reach r: the search tries every (a, r).
 * Every formation claimed on the way is checked against the same rules.
 *
 * Queue shapes, several seeds each: random ranked 1v1; casual 3v3 with
 * disjoint regions; a bad head (unmatchable tickets first); ranked rating
 * outliers; a wall of lonely tickets (within one working set, and deeper
 * than one); casual 3v3 with one region per player; the 21 tickets of the
 * issue. A violation is shrunk to a minimal queue (no ticket can be
 * removed and keep a violation) and printed.
 *
 * Issue 25: the same property under PAIRING and under SWEEP (with the
 * arrival-rate factor at its floor, in between and at its ceiling; the
 * tolerance written here multiplies the growth by the factor of the rate
 * the pass measured), determinism for a seed, a queue where SWEEP and
 * GREEDY must differ, and the rate estimate and factor themselves.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "game/formation.h"
#include "game/playlist.h"
#include "game/queue_pass.h"
#include "support.h"
#include "sys/banned.h"

#define NOW_MS INT64_C(1700000000000)
#define MAX_QUEUE 4000
#define MAX_PASSES 20000
#define SHRINK_RUNS 4000 /* fixpoint runs a shrink may spend */

/* ---- the queue ------------------------------------------------------------------ */

struct queue {
	size_t n;
	struct cc_candidate t[MAX_QUEUE]; /* oldest first; ticket_id "t%05zu" of its index */
};

static struct queue q_main, q_try, q_best;
static struct cc_queue_pass qp;
static bool claimed[MAX_QUEUE];
static size_t seen[MAX_QUEUE], n_seen; /* what the current pass read, by queue index */
static const struct queue *cur;        /* the queue the callbacks serve */
static struct cc_formation_params cur_params;
static char bad_formation[512];        /* "" or why a claimed formation broke the rules */

static size_t index_of(const char *ticket_id)
{
	return (size_t)strtoul(ticket_id + 1, NULL, 10);
}

/* The read callback: as cc_candidates_load, over cur. */
static int read_queue(void *ctx, const char *after, size_t limit, struct cc_candidate *out,
		      struct cc_queue_page *page)
{
	(void)ctx;
	size_t i = after ? index_of(after) + 1 : 0, n = 0;
	for (; i < cur->n && n < limit; i++) {
		if (claimed[i])
			continue;
		out[n++] = cur->t[i];
		seen[n_seen++] = i;
	}
	page->n = n;
	page->more = n == limit;
	page->now_ms = NOW_MS;
	snprintf(page->last, sizeof page->last, "%s", n ? out[n - 1].ticket_id : "");
	return 0;
}

/* ---- the rules, checked on their own ------------------------------------------------ */

static double tolerance(const struct cc_formation_params *p, const struct cc_candidate *a)
{
	/*
	 * SPEC 6's widening; PAIRING (issue 25) starts it after the hold-out,
	 * and a rate reference multiplies the growth by reference / the rate
	 * the pass measured (qp.rate_per_s), within [1/8, 8].
	 */
	double wait_s = (double)(NOW_MS - a->queued_at_ms) / 1000.0 - p->tolerance_hold_s;
	double factor = 1;
	if (p->rate_reference_per_s > 0 && qp.rate_per_s >= 0) {
		factor = qp.rate_per_s > 0 ? p->rate_reference_per_s / qp.rate_per_s : 8;
		factor = factor > 8 ? 8 : factor < 0.125 ? 0.125 : factor;
	}
	double t = p->tolerance_start + p->tolerance_growth_per_s * factor * (wait_s > 0 ? wait_s : 0);
	return t < p->tolerance_cap ? t : p->tolerance_cap;
}

static bool reaches(const struct cc_candidate *c, const char *region, double max_rtt)
{
	for (size_t k = 0; k < c->n_rtt; k++)
		if (strcmp(c->rtt[k].region, region) == 0 && c->rtt[k].rtt_ms >= 0 && c->rtt[k].rtt_ms <= max_rtt)
			return true;
	return false;
}

/* b may join a match anchored at a in region r (player distinctness aside). */
static bool compatible(const struct cc_formation_params *p, const struct cc_candidate *a,
		       const struct cc_candidate *b, const char *region)
{
	return b->expires_at_ms > NOW_MS && b->protocol_version == a->protocol_version &&
	       strcmp(b->build, a->build) == 0 && strcmp(b->player_id, a->player_id) != 0 &&
	       (!p->ranked || fabs(b->rating - a->rating) <= tolerance(p, a)) && reaches(b, region, p->max_rtt_ms);
}

/*
 * Searches set[0..n) (queue indices into qu, oldest first) for a valid
 * match; on success writes its members (anchor first) to found and
 * returns true.
 */
static bool find_match(const struct queue *qu, const size_t *set, size_t n, const struct cc_formation_params *p,
		       size_t *found)
{
	size_t want = (size_t)p->team_size * 2 - 1;
	for (size_t ai = 0; ai < n; ai++) {
		const struct cc_candidate *a = &qu->t[set[ai]];
		if (a->expires_at_ms <= NOW_MS)
			continue;
		for (size_t k = 0; k < a->n_rtt; k++) {
			const char *r = a->rtt[k].region;
			if (!reaches(a, r, p->max_rtt_ms))
				continue;
			size_t got = 0;
			for (size_t bi = ai + 1; bi < n && got < want; bi++) {
				const struct cc_candidate *b = &qu->t[set[bi]];
				bool dup = false;
				for (size_t j = 0; j < got && !dup; j++)
					dup = strcmp(qu->t[found[1 + j]].player_id, b->player_id) == 0;
				if (!dup && compatible(p, a, b, r))
					found[1 + got++] = set[bi];
			}
			if (got == want) {
				found[0] = set[ai];
				return true;
			}
		}
	}
	return false;
}

/* True when ticket x (a queue index in set) is in some valid match among set. */
static bool could_match(const struct queue *qu, const size_t *set, size_t n, size_t x,
			const struct cc_formation_params *p)
{
	size_t want = (size_t)p->team_size * 2 - 1;
	size_t found[CC_FORMATION_MAX_PLAYERS];
	for (size_t ai = 0; ai < n && set[ai] <= x; ai++) {
		const struct cc_candidate *a = &qu->t[set[ai]];
		for (size_t k = 0; k < a->n_rtt; k++) {
			const char *r = a->rtt[k].region;
			if (a->expires_at_ms <= NOW_MS || !reaches(a, r, p->max_rtt_ms))
				continue;
			if (set[ai] != x && !compatible(p, a, &qu->t[x], r))
				continue;
			size_t got = 0;
			if (set[ai] != x)
				found[got++] = x;
			for (size_t bi = ai + 1; bi < n && got < want; bi++) {
				const struct cc_candidate *b = &qu->t[set[bi]];
				bool dup = set[bi] == x;
				for (size_t j = 0; j < got && !dup; j++)
					dup = strcmp(qu->t[found[j]].player_id, b->player_id) == 0;
				if (!dup && compatible(p, a, b, r))
					found[got++] = set[bi];
			}
			if (got == want)
				return true;
		}
	}
	return false;
}

/* The claim callback: checks the formation against the rules, then claims it. */
static int claim_all(void *ctx, const struct cc_formation *f, bool lost[CC_FORMATION_MAX_PLAYERS])
{
	(void)ctx;
	(void)lost;
	const struct cc_candidate *a = &qp.cands[f->index[0]];
	size_t ai = index_of(a->ticket_id);
	for (size_t k = 0; k < f->n_players; k++) {
		const struct cc_candidate *b = &qp.cands[f->index[k]];
		size_t bi = index_of(b->ticket_id);
		if (!bad_formation[0] && (claimed[bi] || bi < ai || (k > 0 && !compatible(&cur_params, a, b, f->region))))
			snprintf(bad_formation, sizeof bad_formation,
				 "formation anchored at %s in %s takes %s (claimed %d, older than the anchor %d)",
				 a->ticket_id, f->region, b->ticket_id, claimed[bi], bi < ai);
		claimed[bi] = true;
	}
	return 0;
}

/* ---- passes to a fixpoint --------------------------------------------------------- */

struct outcome {
	size_t matched;          /* tickets claimed */
	size_t passes;
	size_t last_read[MAX_QUEUE]; /* what the last pass read (queue indices, oldest first) */
	size_t n_last;
	bool violation;          /* a valid match remains among last_read */
	size_t match[CC_FORMATION_MAX_PLAYERS];
};

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	return (x > y) - (x < y);
}

/*
 * Runs passes over qu until one forms nothing and ends at the queue's end
 * (so it read every ticket its pages reach), then searches its reads.
 */
static void fixpoint(const struct queue *qu, const struct cc_formation_params *p, struct outcome *o)
{
	struct cc_queue_pass_config cfg;
	cc_queue_pass_defaults(p, &cfg);
	cur = qu;
	cur_params = *p;
	memset(claimed, 0, qu->n * sizeof *claimed);
	cc_queue_pass_init(&qp);
	o->matched = 0;
	for (o->passes = 1;; o->passes++) {
		struct cc_queue_pass_stats st;
		n_seen = 0;
		ck_assert_int_eq(cc_queue_pass_run(&qp, &cfg, read_queue, claim_all, NULL, &st), 0);
		ck_assert_msg(!bad_formation[0], "%s", bad_formation);
		o->matched += st.formation.formed * (size_t)p->team_size * 2;
		if (st.formation.formed == 0 && !st.left_cursor)
			break;
		ck_assert_msg(o->passes < MAX_PASSES, "no fixpoint after %d passes", MAX_PASSES);
	}
	memcpy(o->last_read, seen, n_seen * sizeof *seen);
	o->n_last = n_seen;
	qsort(o->last_read, o->n_last, sizeof *o->last_read, cmp_size);
	o->violation = find_match(qu, o->last_read, o->n_last, p, o->match);
}

/* ---- shrinking and printing a violation ------------------------------------------------ */

static struct outcome o_try;

/* qu without the tickets [from, from + len), renumbered (ids follow the new indices). */
static void without(const struct queue *qu, size_t from, size_t len, struct queue *out)
{
	out->n = 0;
	for (size_t i = 0; i < qu->n; i++) {
		if (i >= from && i < from + len)
			continue;
		out->t[out->n] = qu->t[i];
		snprintf(out->t[out->n].ticket_id, sizeof out->t[0].ticket_id, "t%05zu", out->n);
		out->n++;
	}
}

/* Shrinks a violating queue into q_best: chunks, then single tickets, while a violation remains. */
static void shrink(const struct queue *qu, const struct cc_formation_params *p)
{
	int runs = 0;
	q_best = *qu;
	for (size_t len = q_best.n / 2; len >= 1 && runs < SHRINK_RUNS; len /= 2) {
		for (size_t from = 0; from < q_best.n && runs < SHRINK_RUNS;) {
			without(&q_best, from, len, &q_try);
			runs++;
			fixpoint(&q_try, p, &o_try);
			if (o_try.violation)
				q_best = q_try; /* keep the removal; try the same place again */
			else
				from += len;
		}
	}
}

static void print_queue(const char *what, const struct queue *qu, const struct cc_formation_params *p,
			const struct outcome *o)
{
	size_t want = (size_t)p->team_size * 2;
	struct cc_queue_pass_config cfg;
	cc_queue_pass_defaults(p, &cfg);
	fprintf(stderr, "%s: minimal queue of %zu tickets (%s %dv%d, head page %zu, later pages %zu); "
			"still matchable after %zu passes:",
		what, qu->n, p->ranked ? "ranked" : "casual", p->team_size, p->team_size, cfg.head_page, cfg.page,
		o->passes);
	for (size_t k = 0; k < want; k++)
		fprintf(stderr, " %s", qu->t[o->match[k]].ticket_id);
	fprintf(stderr, "\n");
	for (size_t i = 0; i < qu->n; i++) {
		const struct cc_candidate *c = &qu->t[i];
		fprintf(stderr, "  %s player %s build %s/%d rating %.0f waited %.1f s rtt", c->ticket_id, c->player_id,
			c->build, c->protocol_version, c->rating, (double)(NOW_MS - c->queued_at_ms) / 1000.0);
		for (size_t k = 0; k < c->n_rtt; k++)
			fprintf(stderr, " %s=%.0f", c->rtt[k].region, c->rtt[k].rtt_ms);
		fprintf(stderr, "\n");
	}
}

/* ---- queue shapes ---------------------------------------------------------------------- */

static uint64_t rng;

static uint64_t next_u64(void)
{
	uint64_t z = (rng += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static double uniform(void)
{
	return (double)(next_u64() >> 11) / 9007199254740992.0;
}

static double normal(double mean, double sd)
{
	double u1 = 1.0 - uniform(), u2 = uniform();
	return mean + sd * sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

static const char *const regions[] = { "eu-west", "us-east", "us-west", "ap-southeast", "sa-east", "af-south",
				       "me-central", "ap-north" };

/* Appends a ticket queued waited_s ago (the caller keeps waits decreasing). */
static struct cc_candidate *add(struct queue *qu, const char *build, double rating, double waited_s)
{
	ck_assert_int_lt(qu->n, MAX_QUEUE);
	struct cc_candidate *c = &qu->t[qu->n];
	memset(c, 0, sizeof *c);
	snprintf(c->ticket_id, sizeof c->ticket_id, "t%05zu", qu->n);
	snprintf(c->player_id, sizeof c->player_id, "p%05zu", qu->n);
	snprintf(c->build, sizeof c->build, "%s", build);
	c->protocol_version = 7;
	c->rating = rating;
	c->deviation = 80;
	c->queued_at_ms = NOW_MS - (int64_t)(waited_s * 1000) - (int64_t)(MAX_QUEUE - qu->n); /* strictly in order */
	c->expires_at_ms = NOW_MS + 30000;
	qu->n++;
	return c;
}

static void add_rtt(struct cc_candidate *c, const char *region, double ms)
{
	snprintf(c->rtt[c->n_rtt].region, sizeof c->rtt[0].region, "%s", region);
	c->rtt[c->n_rtt++].rtt_ms = ms;
}

/* Four regions: home 20-60 ms, one neighbour 60-120, the rest 120-250. */
static void spread_rtts(struct cc_candidate *c)
{
	int home = (int)(uniform() * 4), near = (home + 1) % 4;
	for (int r = 0; r < 4; r++)
		add_rtt(c, regions[r], r == home ? 20 + 40 * uniform() : r == near ? 60 + 60 * uniform() : 120 + 130 * uniform());
}

enum shape { RANDOM, DISJOINT, BAD_HEAD, OUTLIERS, WALL, DEEP_WALL, ONE_REGION, ISSUE_21, N_SHAPES };
static const char *const shape_names[N_SHAPES] = { "random ranked 1v1", "disjoint regions casual 3v3",
						   "bad head ranked 1v1", "rating outliers ranked 1v1",
						   "wall of lonely tickets casual 3v3",
						   "wall deeper than a working set casual 3v3",
						   "one region per player casual 3v3", "the 21 tickets of issue 9" };

/* The playlists' own rules (game/playlist.c): ranked 1v1, or casual 3v3. */
static struct cc_formation_params shape_params(enum shape s)
{
	bool casual = s == DISJOINT || s == WALL || s == DEEP_WALL || s == ONE_REGION;
	const struct cc_playlist *pl = cc_playlist_find(casual ? "casual" : "ranked");
	struct cc_formation_params p;
	ck_assert_ptr_nonnull(pl);
	cc_playlist_formation_params(pl, &p);
	ck_assert_int_eq(p.team_size, casual ? 3 : 1);
	return p;
}

static void build_shape(enum shape s, struct queue *qu)
{
	qu->n = 0;
	switch (s) {
	case RANDOM:
		for (int i = 0; i < 2000; i++) {
			struct cc_candidate *c = add(qu, uniform() < 0.9 ? "1.4.2" : "1.4.1", normal(1500, 300),
						     300.0 * (2000 - i) / 2000);
			spread_rtts(c);
		}
		break;
	case DISJOINT:
		/* Each player reaches one region, in one of two groups of regions nobody shares. */
		for (int i = 0; i < 1000; i++) {
			struct cc_candidate *c = add(qu, uniform() < 0.7 ? "1.4.2" : "1.4.1", normal(1500, 300),
						     200.0 * (1000 - i) / 1000);
			add_rtt(c, regions[(int)(uniform() * 8)], 20 + 70 * uniform());
		}
		break;
	case BAD_HEAD: {
		/*
		 * 60 tickets at the head that match nobody near them: rare builds
		 * (each with one partner somewhere deeper) and players too far from
		 * every region; then a queue.
		 */
		int deep[30];
		for (int k = 0; k < 30; k++)
			deep[k] = 60 + (int)(uniform() * 1000);
		for (int i = 0; i < 60; i++) {
			char build[32];
			snprintf(build, sizeof build, "rare-%d", i / 2);
			struct cc_candidate *c = add(qu, i % 2 ? build : "1.4.2", 1500, 600 - i);
			if (i % 2)
				spread_rtts(c);
			else
				add_rtt(c, regions[i % 4], 150 + i);
		}
		for (int i = 60; i < 1060; i++) {
			char build[32] = "1.4.2";
			for (int k = 0; k < 30; k++)
				if (deep[k] == i)
					snprintf(build, sizeof build, "rare-%d", k);
			spread_rtts(add(qu, build, normal(1500, 300), 300.0 * (1060 - i) / 1000));
		}
		break;
	}
	case OUTLIERS:
		for (int i = 0; i < 1500; i++) {
			double r = uniform() < 0.15 ? (uniform() < 0.5 ? 100 + 300 * uniform() : 2600 + 300 * uniform())
						    : normal(1500, 200);
			spread_rtts(add(qu, "1.4.2", r, 60.0 * (1500 - i) / 1500));
		}
		break;
	case WALL:
	case DEEP_WALL: {
		/* A wall of lonely tickets (a build each) with matchable tickets among and behind it. */
		int wall = s == WALL ? 400 : 1500;
		for (int i = 0; i < wall + 300; i++) {
			char build[32];
			bool lonely = i < wall && uniform() < 0.95;
			snprintf(build, sizeof build, "lonely-%d", i);
			struct cc_candidate *c = add(qu, lonely ? build : "1.4.2", 1500, 600.0 * (wall + 300 - i) / (wall + 300));
			add_rtt(c, regions[(int)(uniform() * 2)], 20 + 60 * uniform());
		}
		break;
	}
	case ONE_REGION:
		/* 8 regions x 2 builds: a head page of 60 holds about 4 of a kind, a match needs 6. */
		for (int i = 0; i < 1500; i++) {
			struct cc_candidate *c = add(qu, uniform() < 0.5 ? "1.4.2" : "1.4.1", normal(1500, 300),
						     300.0 * (1500 - i) / 1500);
			add_rtt(c, regions[(int)(uniform() * 8)], 20 + 70 * uniform());
		}
		break;
	case ISSUE_21: {
		/*
		 * Ranked, a head page of 20: 20 single-region players over 2 builds x
		 * 4 regions, 800 rating points apart, at the tolerance cap, none of
		 * whom can match another; ticket 1 (1.4.2, eu-west, 2300) pairs with
		 * ticket 21 (1.4.2, eu-west, 2320), which is on the next page.
		 */
		for (int i = 0; i < 21; i++) {
			const char *build = i == 20 ? "1.4.2" : i % 2 ? "1.4.1" : "1.4.2";
			double rating = i == 0 ? 2300 : i == 20 ? 2320 : 2300 + 800.0 * i;
			struct cc_candidate *c = add(qu, build, rating, 600 - i);
			add_rtt(c, i == 20 ? "eu-west" : regions[(i / 2) % 4], 30);
		}
		break;
	}
	case N_SHAPES:
		break;
	}
}

static struct outcome o_main;

/*
 * One shape and seed: the fixpoint, the leftovers that could still form a
 * match (the issue's measure), and on a violation the minimal queue.
 */
START_TEST(test_no_match_left_behind)
{
	enum shape s = (enum shape)(_i / 3);
	unsigned seed = (unsigned)(_i % 3) + 1;
	if (s == ISSUE_21 && seed > 1)
		return; /* deterministic: one run is enough */
	rng = 0x1234567ull * seed + (uint64_t)s;
	struct cc_formation_params p = shape_params(s);
	bad_formation[0] = '\0';
	build_shape(s, &q_main);
	fixpoint(&q_main, &p, &o_main);

	size_t left = 0, could = 0, all_left[MAX_QUEUE], found[CC_FORMATION_MAX_PLAYERS];
	for (size_t i = 0; i < q_main.n; i++)
		if (!claimed[i])
			all_left[left++] = i;
	bool beyond = find_match(&q_main, all_left, left, &p, found);
	for (size_t k = 0; k < o_main.n_last; k++)
		could += could_match(&q_main, o_main.last_read, o_main.n_last, o_main.last_read[k], &p);
	fprintf(stderr, "%s, seed %u: %zu tickets, %zu matched in %zu passes, %zu left (%zu read by the last pass), "
			"%zu of them could still form a valid match%s\n",
		shape_names[s], seed, q_main.n, o_main.matched, o_main.passes, left, o_main.n_last, could,
		beyond ? " (and a valid match remains among all leftovers)" : "");
	if (o_main.violation) {
		char what[128];
		snprintf(what, sizeof what, "%s, seed %u", shape_names[s], seed);
		shrink(&q_main, &p);
		fixpoint(&q_best, &p, &o_try);
		print_queue(what, &q_best, &p, &o_try);
	}
	ck_assert_msg(!o_main.violation && could == 0,
		      "%s, seed %u: %zu of %zu leftovers could still form a valid match (minimal queue on stderr)",
		      shape_names[s], seed, could, o_main.n_last);
	if (s != DEEP_WALL)
		ck_assert_msg(o_main.n_last == left, "%s: the last pass read %zu of the %zu leftovers", shape_names[s],
			      o_main.n_last, left);
}
END_TEST

/* ---- the pass's own contract ---------------------------------------------------------------- */

/* A pass makes at most max_pages reads and never forms over more than max_working tickets. */
START_TEST(test_pass_is_bounded)
{
	struct cc_formation_params p = shape_params(DEEP_WALL);
	struct cc_queue_pass_config cfg;
	struct cc_queue_pass_stats st;
	rng = 99;
	build_shape(DEEP_WALL, &q_main);
	for (size_t i = 0; i < q_main.n; i++) /* nobody matches anybody */
		snprintf(q_main.t[i].build, sizeof q_main.t[i].build, "lonely-%zu", i);
	cc_queue_pass_defaults(&p, &cfg);
	cur = &q_main;
	cur_params = p;
	memset(claimed, 0, sizeof claimed);
	cc_queue_pass_init(&qp);
	n_seen = 0;
	ck_assert_int_eq(cc_queue_pass_run(&qp, &cfg, read_queue, claim_all, NULL, &st), 0);
	ck_assert_uint_le(st.pages, cfg.max_pages);
	ck_assert_uint_le(st.working, cfg.max_working);
	ck_assert_uint_le(n_seen, cfg.max_working + cfg.page);
	ck_assert_msg(st.left_cursor && qp.cursor[0], "a pass over a wall deeper than its working set left no cursor");

	/* Refuses what it cannot run. */
	cfg.max_working = CC_QUEUE_PASS_MAX_WORKING + 1;
	ck_assert_int_eq(cc_queue_pass_run(&qp, &cfg, read_queue, claim_all, NULL, &st), CC_EINVAL);
	cc_queue_pass_defaults(&p, &cfg);
	cfg.page = 0;
	ck_assert_int_eq(cc_queue_pass_run(&qp, &cfg, read_queue, claim_all, NULL, &st), CC_EINVAL);
}
END_TEST

/* Claim callbacks that lose every claim, or fail. */
static unsigned claims_seen;

static int claim_lost(void *ctx, const struct cc_formation *f, bool lost[CC_FORMATION_MAX_PLAYERS])
{
	(void)ctx;
	claims_seen++;
	lost[f->n_players - 1] = true; /* the youngest was taken by another replica */
	return CC_ECONFLICT;
}

static int claim_fails(void *ctx, const struct cc_formation *f, bool lost[CC_FORMATION_MAX_PLAYERS])
{
	(void)ctx;
	(void)f;
	(void)lost;
	claims_seen++;
	return CC_EDB;
}

static int read_fails(void *ctx, const char *after, size_t limit, struct cc_candidate *out,
		      struct cc_queue_page *page)
{
	(void)ctx;
	(void)limit;
	(void)out;
	(void)page;
	return after ? CC_ETIMEOUT : CC_EUNAVAILABLE;
}

/*
 * Lost claims: at most CC_FORMATION_MAX_FAILED_CLAIMS per pass, whatever
 * the rounds (SPEC 6: at most 8 attempts a pass), and the cursor stays;
 * a claim or read error ends the pass with that error.
 */
START_TEST(test_claim_budget_and_errors)
{
	struct cc_formation_params p = shape_params(RANDOM);
	struct cc_queue_pass_config cfg;
	struct cc_queue_pass_stats st;
	rng = 5;
	build_shape(RANDOM, &q_main);
	cc_queue_pass_defaults(&p, &cfg);
	cur = &q_main;
	cur_params = p;
	memset(claimed, 0, sizeof claimed);
	cc_queue_pass_init(&qp);
	snprintf(qp.cursor, sizeof qp.cursor, "t00100");
	claims_seen = 0;
	n_seen = 0;
	ck_assert_int_eq(cc_queue_pass_run(&qp, &cfg, read_queue, claim_lost, NULL, &st), 0);
	ck_assert_uint_eq(claims_seen, CC_FORMATION_MAX_FAILED_CLAIMS);
	ck_assert_uint_eq(st.formation.lost_claims, CC_FORMATION_MAX_FAILED_CLAIMS);
	ck_assert(st.formation.out_of_attempts);
	ck_assert_str_eq(qp.cursor, "t00100");

	claims_seen = 0;
	ck_assert_int_eq(cc_queue_pass_run(&qp, &cfg, read_queue, claim_fails, NULL, &st), CC_EDB);
	ck_assert_uint_eq(claims_seen, 1);
	ck_assert_str_eq(qp.cursor, "t00100");
	ck_assert_int_eq(cc_queue_pass_run(&qp, &cfg, read_fails, claim_all, NULL, &st), CC_EUNAVAILABLE);
	ck_assert_str_eq(qp.cursor, "t00100");
}
END_TEST

/* The same defaults for everyone: the head page is SPEC 6's 10x the match size, cap 200. */
START_TEST(test_defaults)
{
	struct cc_formation_params p = shape_params(RANDOM);
	struct cc_queue_pass_config cfg;
	cc_queue_pass_defaults(&p, &cfg);
	ck_assert_uint_eq(cfg.head_page, 20);
	p.team_size = 3;
	cc_queue_pass_defaults(&p, &cfg);
	ck_assert_uint_eq(cfg.head_page, 60);
	p.team_size = 8;
	cc_queue_pass_defaults(&p, &cfg);
	ck_assert_uint_eq(cfg.head_page, 160);
	ck_assert(cc_queue_pass_config_valid(&cfg));
}
END_TEST


/* ---- issue 25: the PAIRING rule keeps every invariant ------------------------------------ */

/* The ranked shapes under PAIRING at queue_sim's setting (start 150, held 30 s, then +10/s, cap 600). */
static const enum shape pairing_shapes[] = { RANDOM, BAD_HEAD, OUTLIERS, ISSUE_21 };

static struct cc_formation_params pairing_params(enum shape s)
{
	struct cc_formation_params p = shape_params(s);
	p.rule = CC_FORMATION_RULE_PAIRING;
	p.tolerance_start = 150;
	p.tolerance_growth_per_s = 10;
	p.tolerance_cap = 600;
	p.tolerance_hold_s = 30;
	return p;
}

/*
 * Every claimed formation within the anchor's tolerance (as written in
 * this file, hold-out included) and the other rules (claim_all checks
 * each), and no valid match left behind at the fixpoint.
 */
START_TEST(test_pairing_no_match_left_behind)
{
	enum shape s = pairing_shapes[_i / 2];
	unsigned seed = (unsigned)(_i % 2) + 1;
	rng = 0x7654321ull * seed + (uint64_t)s;
	struct cc_formation_params p = pairing_params(s);
	bad_formation[0] = '\0';
	build_shape(s, &q_main);
	fixpoint(&q_main, &p, &o_main);
	size_t could = 0;
	for (size_t k = 0; k < o_main.n_last; k++)
		could += could_match(&q_main, o_main.last_read, o_main.n_last, o_main.last_read[k], &p);
	fprintf(stderr, "pairing, %s, seed %u: %zu tickets, %zu matched in %zu passes, %zu could still match%s%s\n",
		shape_names[s], seed, q_main.n, o_main.matched, o_main.passes, could, bad_formation[0] ? ": " : "",
		bad_formation);
	ck_assert_msg(!bad_formation[0], "pairing, %s, seed %u: %s", shape_names[s], seed, bad_formation);
	ck_assert_msg(!o_main.violation && could == 0, "pairing, %s, seed %u: %zu leftovers could still match",
		      shape_names[s], seed, could);
	ck_assert_uint_gt(o_main.matched, s == ISSUE_21 ? 1 : 100);
}
END_TEST

/* Deterministic: the same queue twice gives the same matches, in the same order. */
static size_t order_of[MAX_QUEUE];
static size_t n_order;

static int claim_record(void *ctx, const struct cc_formation *f, bool lost[CC_FORMATION_MAX_PLAYERS])
{
	for (size_t k = 0; k < f->n_players; k++)
		order_of[n_order++] = index_of(qp.cands[f->index[k]].ticket_id);
	return claim_all(ctx, f, lost);
}

static void record_run(const struct cc_formation_params *p, size_t *out, size_t *n_out)
{
	struct cc_queue_pass_config cfg;
	struct cc_queue_pass_stats st;
	rng = 4242;
	build_shape(OUTLIERS, &q_main);
	cc_queue_pass_defaults(p, &cfg);
	cur = &q_main;
	cur_params = *p;
	memset(claimed, 0, sizeof claimed);
	cc_queue_pass_init(&qp);
	n_order = 0;
	for (int k = 0; k < 200; k++) {
		n_seen = 0;
		ck_assert_int_eq(cc_queue_pass_run(&qp, &cfg, read_queue, claim_record, NULL, &st), 0);
		if (st.formation.formed == 0)
			break;
	}
	memcpy(out, order_of, n_order * sizeof *out);
	*n_out = n_order;
}

static size_t run_a[MAX_QUEUE], run_b[MAX_QUEUE];

START_TEST(test_pairing_deterministic)
{
	struct cc_formation_params p = pairing_params(OUTLIERS);
	size_t na, nb;
	record_run(&p, run_a, &na);
	record_run(&p, run_b, &nb);
	ck_assert_uint_gt(na, 100);
	ck_assert_uint_eq(na, nb);
	for (size_t k = 0; k < na; k++)
		ck_assert_msg(run_a[k] == run_b[k], "the runs differ at claimed ticket %zu: %zu vs %zu", k, run_a[k],
			      run_b[k]);
}
END_TEST

/* ---- issue 25: SWEEP and the arrival-rate widening ------------------------------------------ */

/*
 * SWEEP at the playlist's tolerance, with three rate references: 0.4 (the
 * default: these queues are busy, so growth slows to its 1/8 floor), 2
 * (in between) and 1000 (growth at its 8x ceiling).
 */
static const double sweep_refs[] = { 0.4, 2, 1000 };

static struct cc_formation_params sweep_params(enum shape s, double ref)
{
	struct cc_formation_params p = shape_params(s);
	p.rule = CC_FORMATION_RULE_SWEEP;
	p.rate_reference_per_s = ref;
	return p;
}

/*
 * Every claimed formation inside the anchor's tolerance as this file
 * computes it (rate factor included: claim_all checks each member) and
 * the other rules, and no valid match left behind at the fixpoint.
 */
START_TEST(test_sweep_no_match_left_behind)
{
	enum shape s = pairing_shapes[_i / (int)CC_ARRAY_LEN(sweep_refs)];
	double ref = sweep_refs[_i % (int)CC_ARRAY_LEN(sweep_refs)];
	rng = 0x1234567ull + (uint64_t)_i;
	struct cc_formation_params p = sweep_params(s, ref);
	bad_formation[0] = '\0';
	build_shape(s, &q_main);
	fixpoint(&q_main, &p, &o_main);
	size_t could = 0;
	for (size_t k = 0; k < o_main.n_last; k++)
		could += could_match(&q_main, o_main.last_read, o_main.n_last, o_main.last_read[k], &p);
	fprintf(stderr, "sweep, %s, reference %g/s (rate %.2f/s): %zu tickets, %zu matched in %zu passes, %zu could "
			"still match%s%s\n",
		shape_names[s], ref, qp.rate_per_s, q_main.n, o_main.matched, o_main.passes, could,
		bad_formation[0] ? ": " : "", bad_formation);
	ck_assert_msg(!bad_formation[0], "sweep, %s, reference %g: %s", shape_names[s], ref, bad_formation);
	ck_assert_msg(!o_main.violation && could == 0, "sweep, %s, reference %g: %zu leftovers could still match",
		      shape_names[s], ref, could);
	ck_assert_uint_gt(o_main.matched, s == ISSUE_21 ? 1 : 100);
}
END_TEST

/* The same seed twice gives the same matches in the same order (the rate state starts afresh). */
START_TEST(test_sweep_deterministic)
{
	struct cc_formation_params p = sweep_params(OUTLIERS, 2);
	size_t na, nb;
	record_run(&p, run_a, &na);
	record_run(&p, run_b, &nb);
	ck_assert_uint_gt(na, 100);
	ck_assert_uint_eq(na, nb);
	for (size_t k = 0; k < na; k++)
		ck_assert_msg(run_a[k] == run_b[k], "the runs differ at claimed ticket %zu: %zu vs %zu", k, run_a[k],
			      run_b[k]);
}
END_TEST

/* A ranked 1v1 ticket for the small queues below: queue index i, rating, seconds waited. */
static void small_ticket(struct queue *qu, double rating, double waited_s)
{
	size_t i = qu->n++;
	struct cc_candidate *c = &qu->t[i];
	memset(c, 0, sizeof *c);
	snprintf(c->ticket_id, sizeof c->ticket_id, "t%05zu", i);
	snprintf(c->player_id, sizeof c->player_id, "p%zu", i);
	snprintf(c->build, sizeof c->build, "b1");
	c->protocol_version = 1;
	c->rating = rating;
	c->queued_at_ms = NOW_MS - (int64_t)(waited_s * 1000) + (int64_t)i; /* equal waits: queue order */
	c->expires_at_ms = NOW_MS + 30000;
	c->n_rtt = 1;
	snprintf(c->rtt[0].region, sizeof c->rtt[0].region, "eu");
	c->rtt[0].rtt_ms = 20;
}

/*
 * The rule itself: a 1700 who waited 200 s (tolerance at the cap), and two
 * fresh players at 1600 and 1605. GREEDY lets the oldest take the nearer
 * of the next two (1605: spread 95, the 1600 waits); SWEEP pairs the
 * rating neighbours (1600 with 1605: spread 5, the 1700 waits).
 */
START_TEST(test_sweep_pairs_neighbours)
{
	struct cc_formation_params p = shape_params(RANDOM);
	struct cc_queue_pass_config cfg;
	struct cc_queue_pass_stats st;
	q_main.n = 0;
	small_ticket(&q_main, 1700, 200);
	small_ticket(&q_main, 1600, 1);
	small_ticket(&q_main, 1605, 1);
	for (int rule = 0; rule < 2; rule++) {
		p.rule = rule ? CC_FORMATION_RULE_SWEEP : CC_FORMATION_RULE_GREEDY;
		cc_queue_pass_defaults(&p, &cfg);
		cur = &q_main;
		cur_params = p;
		memset(claimed, 0, sizeof claimed);
		cc_queue_pass_init(&qp);
		n_order = 0;
		bad_formation[0] = '\0';
		ck_assert_int_eq(cc_queue_pass_run(&qp, &cfg, read_queue, claim_record, NULL, &st), 0);
		ck_assert_msg(!bad_formation[0], "%s", bad_formation);
		ck_assert_uint_eq(st.formation.formed, 1);
		ck_assert_uint_eq(n_order, 2);
		ck_assert_uint_eq(st.formation.swept, rule ? 1 : 0);
		/* Anchor first: the older of the two. */
		ck_assert_uint_eq(order_of[0], rule ? 1 : 0);
		ck_assert_uint_eq(order_of[1], 2);
	}
}
END_TEST

/* The rate the pass measures: distinct recent tickets over the window, bounded, forgetting the old. */
START_TEST(test_arrival_rate)
{
	static struct cc_arrival_rate ar;
	struct queue *qu = &q_try;
	cc_arrival_rate_init(&ar);
	ck_assert_double_eq(cc_arrival_rate_per_s(&ar), 0);
	qu->n = 0;
	for (int i = 0; i < 30; i++)
		small_ticket(qu, 1500, i < 24 ? 10 + i : 200); /* 24 inside the window, 6 older than it */
	cc_arrival_rate_note(&ar, qu->t, qu->n, NOW_MS);
	cc_arrival_rate_note(&ar, qu->t, qu->n, NOW_MS); /* read again by a later page or pass: not new */
	ck_assert_uint_eq(ar.n, 24);
	ck_assert_double_eq_tol(cc_arrival_rate_per_s(&ar), 24.0 / 120.0, 1e-9);
	/* 100.5 s later the 14 queued 19.5 s or more before the first look are out of the window. */
	cc_arrival_rate_prune(&ar, NOW_MS + 100500);
	ck_assert_uint_eq(ar.n, 10);
	cc_arrival_rate_note(&ar, qu->t, qu->n, NOW_MS + 100500);
	ck_assert_uint_eq(ar.n, 10);
	/* Bounded: a flood saturates at CC_ARRIVAL_MAX. */
	qu->n = 0;
	for (int i = 0; i < 1000; i++)
		small_ticket(qu, 1500, 1);
	cc_arrival_rate_note(&ar, qu->t, qu->n, NOW_MS);
	ck_assert_uint_eq(ar.n, CC_ARRIVAL_MAX);
	cc_arrival_rate_prune(&ar, NOW_MS);
	ck_assert_uint_eq(ar.n, CC_ARRIVAL_MAX);
	cc_arrival_rate_prune(&ar, NOW_MS + CC_ARRIVAL_WINDOW_MS);
	ck_assert_uint_eq(ar.n, 0);
}
END_TEST

/* The growth factor: reference / rate within [1/8, 8]; 1 when off or unknown; valid params only. */
START_TEST(test_rate_factor)
{
	struct cc_formation_params p = shape_params(RANDOM);
	ck_assert_double_eq(cc_formation_rate_factor(&p, 0.01), 1); /* the playlist's: off */
	p.rate_reference_per_s = 0.4;
	ck_assert_double_eq(cc_formation_rate_factor(&p, -1), 1);
	ck_assert_double_eq(cc_formation_rate_factor(&p, NAN), 1);
	ck_assert_double_eq(cc_formation_rate_factor(&p, 0), 8);
	ck_assert_double_eq(cc_formation_rate_factor(&p, 0.01), 8);
	ck_assert_double_eq_tol(cc_formation_rate_factor(&p, 0.2), 2, 1e-12);
	ck_assert_double_eq_tol(cc_formation_rate_factor(&p, 0.4), 1, 1e-12);
	ck_assert_double_eq_tol(cc_formation_rate_factor(&p, 1), 0.4, 1e-12);
	ck_assert_double_eq(cc_formation_rate_factor(&p, 100), 0.125);
	/* 50 + 5/s x 2 x 20 s = 250; never past the cap. */
	ck_assert_double_eq_tol(cc_formation_tolerance_at(&p, 20000, 0.2), 250, 1e-9);
	ck_assert_double_eq(cc_formation_tolerance_at(&p, 3600000, 0.2), p.tolerance_cap);
	ck_assert_double_eq_tol(cc_formation_tolerance(&p, 20000), 150, 1e-9);
	p.rule = CC_FORMATION_RULE_SWEEP;
	ck_assert(cc_formation_params_valid(&p));
	p.tolerance_hold_s = 10; /* the hold-out is PAIRING's */
	ck_assert(!cc_formation_params_valid(&p));
	p.tolerance_hold_s = 0;
	p.rate_reference_per_s = -0.1;
	ck_assert(!cc_formation_params_valid(&p));
	p.rate_reference_per_s = INFINITY;
	ck_assert(!cc_formation_params_valid(&p));
	p.rate_reference_per_s = CC_FORMATION_MAX_RATE_REFERENCE + 1;
	ck_assert(!cc_formation_params_valid(&p));
	p.rate_reference_per_s = 0.4;
	p.rule = (enum cc_formation_rule)3;
	ck_assert(!cc_formation_params_valid(&p));
	enum cc_formation_rule r;
	ck_assert(cc_formation_rule_parse("sweep", &r) && r == CC_FORMATION_RULE_SWEEP);
	ck_assert(cc_formation_rule_parse("greedy", &r) && r == CC_FORMATION_RULE_GREEDY);
	ck_assert(!cc_formation_rule_parse("Sweep", &r) && !cc_formation_rule_parse(NULL, &r));
}
END_TEST

static Suite *queue_pass_suite(void)
{
	Suite *s = suite_create("queue_pass");
	TCase *tc = tcase_create("property");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_no_match_left_behind, 0, 3 * N_SHAPES);
	tcase_add_loop_test(tc, test_pairing_no_match_left_behind, 0, 2 * (int)CC_ARRAY_LEN(pairing_shapes));
	tcase_add_test(tc, test_pairing_deterministic);
	tcase_add_loop_test(tc, test_sweep_no_match_left_behind, 0,
			    (int)(CC_ARRAY_LEN(pairing_shapes) * CC_ARRAY_LEN(sweep_refs)));
	tcase_add_test(tc, test_sweep_deterministic);
	tcase_add_test(tc, test_sweep_pairs_neighbours);
	tcase_add_test(tc, test_arrival_rate);
	tcase_add_test(tc, test_rate_factor);
	tcase_add_test(tc, test_pass_is_bounded);
	tcase_add_test(tc, test_claim_budget_and_errors);
	tcase_add_test(tc, test_defaults);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return cc_test_run_suite(queue_pass_suite());
}
