/*
 * bench/formation: CPU cost of one matcher pass (prepare + form + claim
 * callback that always commits) over 200 mixed candidates, the most a pass
 * reads (SPEC 6). Prints one line per scenario:
 *     formation casual3 n=200: 33 matches, 41.2 us/pass (best of 2000)
 * The best time is what the code costs; the mean includes scheduler noise.
 * Then the worst pass game/queue_pass.h allows: a queue of WALL tickets
 * none of which can match, so the pass reads page after page until its
 * working set is full (1024 tickets) and forms over all of them each time:
 *     queue pass wall ranked1 one build: 6 reads, 1020 in the set, 2.1 ms/pass best
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "game/formation.h"
#include "game/queue_pass.h"
#include "sys/clock.h"
#include "sys/banned.h"

#define N 200
#define ROUNDS 2000

static struct cc_candidate cands[N];
static struct cc_formation_workspace ws;

static int commit(void *ctx, const struct cc_formation *f, bool lost[CC_FORMATION_MAX_PLAYERS])
{
	(void)ctx;
	(void)f;
	(void)lost;
	return 0;
}

/* 200 tickets: 3 builds, regions eu/us/asia with some over 100 ms, ratings 1000-2000. */
static void fill(int64_t now)
{
	const char *builds[] = { "1.0.0", "1.0.0", "1.0.0", "1.1.0" };
	const char *regions[] = { "eu", "us", "asia" };
	unsigned seed = 7;
	for (int i = 0; i < N; i++) {
		struct cc_candidate *c = &cands[i];
		memset(c, 0, sizeof *c);
		/* Random-looking ids, like v4 UUIDs: they differ within the first bytes. */
		snprintf(c->ticket_id, sizeof c->ticket_id, "%08x-0000-4000-8000-%012d", rand_r(&seed), i);
		snprintf(c->player_id, sizeof c->player_id, "%08x-0000-4000-8000-%012d", rand_r(&seed), i);
		snprintf(c->build, sizeof c->build, "%s", builds[i % 4]);
		c->protocol_version = 3;
		c->rating = 1000 + rand_r(&seed) % 1000;
		c->queued_at_ms = now - (N - i) * 500;
		c->expires_at_ms = now + 30000;
		for (int r = 0; r < 3; r++) {
			if (rand_r(&seed) % 10 < 3)
				continue;
			snprintf(c->rtt[c->n_rtt].region, sizeof c->rtt[0].region, "%s", regions[r]);
			c->rtt[c->n_rtt++].rtt_ms = 5 + rand_r(&seed) % 110;
		}
	}
}

static void run(const char *name, const struct cc_formation_params *p)
{
	int64_t now = INT64_C(1700000000000);
	double best = 1e18, total = 0, prep_best = 1e18;
	unsigned formed = 0;
	fill(now);
	for (int r = 0; r < ROUNDS; r++) {
		struct cc_formation_pass_stats st;
		double t0 = ((double)cc_clock_ns() / 1e3);
		if (cc_formation_prepare(&ws, cands, N, now, p) != 0) {
			fprintf(stderr, "%s: prepare failed\n", name);
			return;
		}
		double tp = ((double)cc_clock_ns() / 1e3) - t0;
		prep_best = tp < prep_best ? tp : prep_best;
		if (cc_formation_pass(&ws, commit, NULL, &st) != 0) {
			fprintf(stderr, "%s: pass failed\n", name);
			return;
		}
		double dt = ((double)cc_clock_ns() / 1e3) - t0;
		best = dt < best ? dt : best;
		total += dt;
		formed = st.formed;
	}
	printf("formation %s n=%d: %u matches, %.1f us/pass best (prepare %.1f), %.1f us mean (%d rounds)\n", name, N,
	       formed, best, prep_best, total / ROUNDS, ROUNDS);
}

#define WALL 4000

static struct cc_candidate wall[WALL];
static struct cc_queue_pass qp;

/* Reads the wall as cc_candidates_load would: oldest first, keyset after a ticket "w<index>". */
static int read_wall(void *ctx, const char *after, size_t limit, struct cc_candidate *out,
		     struct cc_queue_page *page)
{
	size_t i = after ? (size_t)strtoul(after + 1, NULL, 10) + 1 : 0, n = 0;
	for (; i < WALL && n < limit; i++)
		out[n++] = wall[i];
	page->n = n;
	page->more = n == limit;
	page->now_ms = *(const int64_t *)ctx;
	snprintf(page->last, sizeof page->last, "%s", n ? out[n - 1].ticket_id : "");
	return 0;
}

/* A wall nobody can match: a build each (lonely), or one build with ratings 1000 apart (ranked). */
static void run_wall(const char *name, const struct cc_formation_params *p, bool one_build)
{
	int64_t now = INT64_C(1700000000000);
	struct cc_queue_pass_config cfg;
	struct cc_queue_pass_stats st;
	double best = 1e18;
	for (int i = 0; i < WALL; i++) {
		struct cc_candidate *c = &wall[i];
		memset(c, 0, sizeof *c);
		snprintf(c->ticket_id, sizeof c->ticket_id, "w%d", i);
		snprintf(c->player_id, sizeof c->player_id, "p%d", i);
		snprintf(c->build, sizeof c->build, one_build ? "1.0.0" : "lonely-%d", i);
		c->protocol_version = 3;
		c->rating = 1000.0 * i;
		c->queued_at_ms = now - (WALL - i) * 10;
		c->expires_at_ms = now + 30000;
		snprintf(c->rtt[0].region, sizeof c->rtt[0].region, "eu");
		c->rtt[0].rtt_ms = 20;
		c->n_rtt = 1;
	}
	cc_queue_pass_defaults(p, &cfg);
	for (int r = 0; r < 20; r++) {
		cc_queue_pass_init(&qp);
		double t0 = ((double)cc_clock_ns() / 1e3);
		if (cc_queue_pass_run(&qp, &cfg, read_wall, commit, &now, &st) != 0 || st.formation.formed) {
			fprintf(stderr, "%s: the wall pass failed or formed\n", name);
			return;
		}
		double dt = ((double)cc_clock_ns() / 1e3) - t0;
		best = dt < best ? dt : best;
	}
	printf("queue pass wall %s: %u reads, %zu in the working set, %.2f ms/pass best of 20\n", name, st.pages,
	       st.working, best / 1000);
}


/*
 * Issue 25: greedy beside PAIRING over a queue 100k deep, generated on the
 * fly (ticket "g<i>": one build, one region, 10 ms apart; rating from a
 * hash of i, so a wall (step 1000 apart: nobody matches, the pass fills
 * its working set, the worst a pass can cost) or a mixed queue (N(1500,
 * 300)-like, the head forms)). The pass reads at most its working set
 * plus a page whatever the depth, so this is the pass's cost at 100k.
 */
#define DEEP 100000

static bool deep_wall;

static void deep_ticket(size_t i, int64_t now, struct cc_candidate *c)
{
	memset(c, 0, sizeof *c);
	snprintf(c->ticket_id, sizeof c->ticket_id, "g%zu", i);
	snprintf(c->player_id, sizeof c->player_id, "q%zu", i);
	snprintf(c->build, sizeof c->build, "1.0.0");
	c->protocol_version = 3;
	uint32_t h = (uint32_t)i * 2654435761u;
	double u = (double)(h >> 8) / 16777216.0, v = (double)((h * 2246822519u) >> 8) / 16777216.0;
	c->rating = deep_wall ? 1000.0 * (double)i : 1500 + 300 * (u + v - 1) * 2.4;
	c->queued_at_ms = now - (int64_t)(DEEP - i) * 10;
	c->expires_at_ms = now + 30000;
	snprintf(c->rtt[0].region, sizeof c->rtt[0].region, "eu");
	c->rtt[0].rtt_ms = 20;
	c->n_rtt = 1;
}

static int read_deep(void *ctx, const char *after, size_t limit, struct cc_candidate *out,
		     struct cc_queue_page *page)
{
	int64_t now = *(const int64_t *)ctx;
	size_t i = after ? (size_t)strtoul(after + 1, NULL, 10) + 1 : 0, n = 0;
	for (; i < DEEP && n < limit; i++)
		deep_ticket(i, now, &out[n++]);
	page->n = n;
	page->more = n == limit;
	page->now_ms = now;
	snprintf(page->last, sizeof page->last, "%s", n ? out[n - 1].ticket_id : "");
	return 0;
}

/* Best CPU of 20 passes over the deep queue (thread CPU time: the matcher-side cost). */
static double deep_pass_ms(const struct cc_formation_params *p, bool wall_shape, struct cc_queue_pass_stats *st)
{
	int64_t now = INT64_C(1700000000000);
	struct cc_queue_pass_config cfg;
	double best = 1e18;
	deep_wall = wall_shape;
	cc_queue_pass_defaults(p, &cfg);
	for (int r = 0; r < 20; r++) {
		struct timespec a, b;
		cc_queue_pass_init(&qp);
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
		if (cc_queue_pass_run(&qp, &cfg, read_deep, commit, &now, st) != 0) {
			fprintf(stderr, "deep pass failed\n");
			exit(1);
		}
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
		double ms = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
		best = ms < best ? ms : best;
	}
	return best;
}

/*
 * Issue 25: one pass over the 100k-deep queue per rule, beside greedy: pairing
 * (queue_sim's earlier pick) and sweep at cc-matcher's rate reference (the
 * default: its sort of the working set is the extra cost).
 */
static void run_deep(const struct cc_formation_params *greedy)
{
	struct cc_formation_params rules[2] = { *greedy, *greedy };
	rules[0].rule = CC_FORMATION_RULE_PAIRING;
	rules[0].tolerance_hold_s = 45; /* the hold changes only who is eligible */
	rules[1].rule = CC_FORMATION_RULE_SWEEP;
	rules[1].rate_reference_per_s = CC_FORMATION_DEFAULT_RATE_REFERENCE;
	for (int wall_shape = 0; wall_shape < 2; wall_shape++) {
		struct cc_queue_pass_stats sg, sr;
		double g = deep_pass_ms(greedy, wall_shape, &sg);
		for (int k = 0; k < 2; k++) {
			double r = deep_pass_ms(&rules[k], wall_shape, &sr);
			printf("queue pass %s ranked1, %d queued: greedy %.3f ms cpu (%u formed, %zu in the set), %s %.3f "
			       "ms cpu (%u formed, %zu in the set), ratio %.2f (target <= 2.00: %s)\n",
			       wall_shape ? "wall" : "mixed", DEEP, g, sg.formation.formed, sg.working,
			       cc_formation_rule_name(rules[k].rule), r, sr.formation.formed, sr.working, r / g,
			       r / g <= 2.0 ? "met" : "MISSED");
		}
	}
}

int main(void)
{
	struct cc_formation_params casual = { .team_size = 3, .tolerance_start = 100, .tolerance_growth_per_s = 5,
					      .tolerance_cap = 400, .max_rtt_ms = 100 };
	struct cc_formation_params ranked = casual;
	ranked.team_size = 1;
	ranked.ranked = true;
	struct cc_formation_params big = casual;
	big.team_size = 8;
	run("casual3", &casual);
	run("ranked1", &ranked);
	run("casual8", &big);
	run_wall("ranked1 one build", &ranked, true);
	run_wall("casual3 a build each", &casual, false);
	struct cc_formation_params ranked_pairing = ranked;
	ranked_pairing.rule = CC_FORMATION_RULE_PAIRING;
	ranked_pairing.tolerance_hold_s = 45;
	run("ranked1 pairing", &ranked_pairing);
	struct cc_formation_params ranked_sweep = ranked;
	ranked_sweep.rule = CC_FORMATION_RULE_SWEEP;
	ranked_sweep.rate_reference_per_s = CC_FORMATION_DEFAULT_RATE_REFERENCE;
	run("ranked1 sweep", &ranked_sweep);
	run_deep(&ranked);
	return 0;
}
