/*
 * bench/queue_sim: a discrete-time queue simulation of one playlist,
 * driving the very pass cc-matcher runs (game/queue_pass.h: the head page,
 * the pages behind it in one working set, the cursor, cc_queue_pass_defaults)
 * without a database, to choose the tolerance defaults (issue 4) and to
 * measure what the pass leaves behind (issue 9). Deterministic for a given
 * --seed.
 *
 * The model, in 50 ms steps (cc-matcher's default --min-pass-interval-ms):
 *  - the matcher's loop at its defaults: a pass when something happened
 *    since the last one (an arrival, a requeue, a settled proposal: each
 *    sends the NOTIFY cc-matcher listens for) but not closer than 50 ms to
 *    it, else at least every 500 ms (--poll-interval-ms); a pass that
 *    formed matches is followed by the next at once, until one forms
 *    nothing; quiet stretches are skipped;
 *  - players arrive as a Poisson process (--rate per second), rating
 *    N(1500, 300) clamped to [100, 2900], one build;
 *  - each has a home region (eu-west 40 %, us-east 30 %, us-west 15 %,
 *    ap-southeast 15 %) and a probed RTT to all four: home 20-60 ms,
 *    neighbours 60-120, far 120-250 (the bands of tests/bench/matcher_seed.sql);
 *  - a queued player heartbeats (never expires) and leaves once he has
 *    waited --patience seconds since he queued (abandonment);
 *  - a pass is cc_queue_pass_run with the matcher's defaults, its reads
 *    answered from the simulated queue as PostgreSQL would (QUEUED only,
 *    oldest first, keyset after a ticket); every formation is claimed (one
 *    matcher, no races);
 *  - a proposal resolves --response-delay seconds later: each player
 *    accepted with probability --accept; if all did, the match is played
 *    and measured; otherwise the decliners leave (cooldown) and the others
 *    go back to the queue with their original enqueue time (SPEC 7).
 * Measured over players who arrived after a warm-up and early enough to
 * have an outcome: wait (queue to the formation of the proposal that was
 * accepted) p50/p95, per match the rating spread (max - min), the team
 * mean difference and the worst RTT p50/p95, the abandonment rate, and
 * the stranded rate: players who abandoned while the queue held a valid
 * match for them (SPEC 6's rules, searched exhaustively over anchors and
 * regions when they leave), which a pass that leaves no formable match
 * behind keeps at zero.
 *
 *   queue_sim                 issue 25's frontier: greedy, greedy with the
 *                             arrival-rate widening and sweep with it (cc-matcher's
 *                             default) over one tolerance grid, wait p95 at 0.2/s
 *                             against spread p95 at 1/s (--svg=PATH plots it);
 *                             then greedy beside sweep at the playlist's tolerance
 *                             at 0.2, 0.5, 1, 5 and 20/s, same seed, both
 *                             playlists; the goal rows; then the greedy sweep and
 *                             its recommendation
 *   queue_sim --once [opts]   one run with the given settings
 *   queue_sim --wait-estimate the estimated wait's error (issue 26) alone; the
 *                             full report prints it before the greedy sweep
 * Options: --seed=N --playlist=casual|ranked --team-size=N --rate=R
 *   --hours=H --tolerance-start=X --tolerance-growth=X --tolerance-cap=X
 *   --patience=S --accept=P --response-delay=S --low-rate=R --high-rate=R
 *   --rule=greedy|pairing|sweep (--once: default greedy) --hold=S (pairing's
 *   tolerance_hold_s) --rate-reference=R (rate_reference_per_s; --once:
 *   default 0) --svg=PATH
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "game/formation.h"
#include "game/playlist.h"
#include "game/queue_pass.h"
#include "game/wait_estimate.h"
#include "sys/banned.h"

#define STEP_MS CC_QUEUE_PASS_MIN_INTERVAL_MS /* cc-matcher's default --min-pass-interval-ms */
#define POLL_MS CC_QUEUE_PASS_POLL_MS         /* cc-matcher's default --poll-interval-ms */
#define N_REGIONS 4
#define MAX_QUEUE 100000     /* tickets queued at once; a run that needs more stops with an error */
#define WARMUP_MS (600 * 1000) /* the first 10 simulated minutes are not measured */
#define TTL_MS 30000
#define OUTLIER 600          /* rating distance from the mean (2 sd: about 4.6 % of players) */
#define MIN_ARRIVALS 30000   /* a run lasts long enough for about this many arrivals */         /* heartbeat deadline ahead of now (players heartbeat every 10 s) */

static const char *const region_names[N_REGIONS] = { "eu-west", "us-east", "us-west", "ap-southeast" };
static const double home_share[N_REGIONS] = { 0.40, 0.30, 0.15, 0.15 };
/* RTT band [lo, hi) in ms from a home region (row) to a region (column). */
static const double rtt_lo[N_REGIONS][N_REGIONS] = {
	{ 20, 80, 140, 160 }, { 80, 20, 60, 180 }, { 140, 60, 20, 120 }, { 160, 180, 120, 20 } };
static const double rtt_hi[N_REGIONS][N_REGIONS] = {
	{ 60, 120, 190, 250 }, { 120, 60, 90, 250 }, { 190, 90, 60, 170 }, { 250, 250, 170, 60 } };

struct settings {
	const char *playlist;            /* "ranked" | "casual" */
	int team_size;
	double rate;                     /* arrivals per second */
	double hours;                    /* simulated time */
	double tol_start, tol_growth, tol_cap;
	enum cc_formation_rule rule;     /* GREEDY (today) or PAIRING (issue 25) */
	double hold_s;                   /* PAIRING's hold-out (tolerance_hold_s) */
	double rate_ref;                 /* rate_reference_per_s: 0 = widening ignores the arrival rate */
	double patience_s;               /* a queued player leaves after this long */
	double accept;                   /* probability one player accepts a proposal */
	double response_s;               /* a proposal resolves this long after it opens */
	uint64_t seed;
};

/* What a run measured. */
struct outcome {
	size_t arrivals, matched, abandoned, declined, unresolved; /* players in the measured window */
	size_t outliers, outliers_abandoned;
	size_t stranded;                 /* abandoned while a valid match for them was in the queue */
	size_t matches;                  /* accepted proposals among them */
	double wait_p50, wait_p95;       /* seconds, matched players */
	double spread_p50, spread_p95;   /* rating max - min per match */
	double team_p50, team_p95;       /* |team mean 0 - team mean 1| per match */
	double rtt_p50, rtt_p95;         /* worst RTT to the match region per match */
	double abandon_rate;             /* abandoned / resolved */
	double outlier_abandon_rate;     /* the same among ratings more than OUTLIER from 1500 */
	double stranded_rate;            /* stranded / resolved */
	size_t passes;                   /* matcher passes run */
	size_t max_queue;                /* deepest queue seen */
};

/* ---- deterministic randomness (splitmix64) -------------------------------- */

/*
 * Two streams: players (arrival times, ratings, RTTs) and answers (accept
 * or decline). Every setting of a sweep therefore meets the very same
 * players, so their differences come from the setting, not from luck.
 */
enum stream { PLAYERS, ANSWERS };
static uint64_t rng_state[2];

static uint64_t rng_next(enum stream st)
{
	uint64_t z = (rng_state[st] += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static double uniform(enum stream st)
{
	return (double)(rng_next(st) >> 11) / 9007199254740992.0;
}

static double normal(double mean, double sd)
{
	double u1 = 1.0 - uniform(PLAYERS), u2 = uniform(PLAYERS);
	return mean + sd * sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

/* ---- players and the queue --------------------------------------------------- */

enum player_state { QUEUED, PROPOSED, MATCHED, ABANDONED, DECLINED };

struct player {
	int64_t arrived_ms;              /* enqueue time; kept across requeues (SPEC 4) */
	int64_t matched_ms;              /* formation time of the accepted proposal */
	enum player_state state;
	bool stranded;                   /* abandoned while a valid match for him was queued */
	struct cc_candidate cand;        /* what the matcher reads */
};

struct proposal {
	int64_t resolve_ms;
	size_t n;
	size_t player[CC_FORMATION_MAX_PLAYERS];
	double spread, team_diff, worst_rtt;
};

/* One played match. */
struct match_rec {
	double spread, team_diff, worst_rtt;
};

/* The simulation's state; large, so static. */
static struct {
	struct player *players;          /* every player ever, by arrival */
	size_t n_players, cap_players;
	size_t queue[MAX_QUEUE];         /* indices of QUEUED players, oldest first */
	size_t n_queue;
	struct proposal *props;          /* open proposals */
	size_t n_props, cap_props;
	struct match_rec *matches;       /* accepted proposals formed after the warm-up */
	size_t n_matches, cap_matches;
	int64_t now_ms;
	bool overflow;
	bool woken;                      /* something happened since the last pass (a NOTIFY) */
	size_t passes;
	const struct cc_formation_params *params;
	double arrival_rate;             /* the rate the last pass widened with (its stats) */
} sim;

static struct cc_queue_pass qp; /* the matcher's pass state: 1.2 MiB, static */

static void *grow(void *p, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return p;
	size_t c = *cap ? *cap * 2 : 1024;
	while (c < need)
		c *= 2;
	void *q = realloc(p, c * size);
	if (!q) {
		fprintf(stderr, "queue_sim: out of memory\n");
		exit(1);
	}
	*cap = c;
	return q;
}

/* A new player arrives at at_ms and queues (rating, home region and RTTs drawn). */
static void new_player(int64_t at_ms)
{
	sim.players = grow(sim.players, &sim.cap_players, sim.n_players + 1, sizeof *sim.players);
	struct player *p = &sim.players[sim.n_players];
	memset(p, 0, sizeof *p);
	p->arrived_ms = at_ms;
	p->state = QUEUED;
	struct cc_candidate *c = &p->cand;
	snprintf(c->ticket_id, sizeof c->ticket_id, "t%zu", sim.n_players);
	snprintf(c->player_id, sizeof c->player_id, "p%zu", sim.n_players);
	snprintf(c->build, sizeof c->build, "1.4.2");
	c->protocol_version = 7;
	double r = normal(1500, 300);
	c->rating = r < 100 ? 100 : r > 2900 ? 2900 : r;
	c->deviation = 80;
	c->queued_at_ms = at_ms;
	double u = uniform(PLAYERS), acc = 0;
	int home = N_REGIONS - 1;
	for (int h = 0; h < N_REGIONS; h++) {
		acc += home_share[h];
		if (u < acc) {
			home = h;
			break;
		}
	}
	c->n_rtt = N_REGIONS;
	for (int j = 0; j < N_REGIONS; j++) {
		snprintf(c->rtt[j].region, sizeof c->rtt[j].region, "%s", region_names[j]);
		c->rtt[j].rtt_ms = rtt_lo[home][j] + uniform(PLAYERS) * (rtt_hi[home][j] - rtt_lo[home][j]);
	}
	if (sim.n_queue == MAX_QUEUE) {
		sim.overflow = true;
		return;
	}
	sim.queue[sim.n_queue++] = sim.n_players++;
	sim.woken = true;
}

/* Puts player i back in the queue at his enqueue-time position. */
static void requeue(size_t i)
{
	size_t k = sim.n_queue;
	if (k == MAX_QUEUE) {
		sim.overflow = true;
		return;
	}
	while (k > 0 && (sim.players[sim.queue[k - 1]].arrived_ms > sim.players[i].arrived_ms ||
			 (sim.players[sim.queue[k - 1]].arrived_ms == sim.players[i].arrived_ms && sim.queue[k - 1] > i))) {
		sim.queue[k] = sim.queue[k - 1];
		k--;
	}
	sim.queue[k] = i;
	sim.n_queue++;
	sim.players[i].state = QUEUED;
	sim.woken = true;
}

/* ---- parties (issue 26): --parties ------------------------------------------------ */

/*
 * With party_share > 0 that share of the players arrives in parties of 2
 * or 3 (equally likely): the members arrive together, live in the same
 * region (the first member's RTTs), keep their own ratings, and queue as
 * one party (party_id, party_size), as POST /v1/parties/{id}/queue queues
 * them. An arrival draw that starts a party stands for its first member;
 * the next size - 1 draws are its other members, so players still arrive
 * at --rate. A decliner leaves its party and the queue; its party mates
 * requeue as the smaller party (party_size: how many of them accepted,
 * store/proposals.h), the rest requeue whole; every claimed formation is checked
 * for a split or partial party (party_violations). 0: solo only, and not a
 * single draw more, so a solo run is the run without this code.
 */
static double party_share;
static size_t party_skip;        /* arrival draws still standing for the last party's members */
static size_t n_parties;
static size_t party_violations;  /* formations that split a party across teams or took part of one */

static void arrive(int64_t at_ms)
{
	if (party_share <= 0) {
		new_player(at_ms);
		return;
	}
	if (party_skip > 0) {
		party_skip--;
		return;
	}
	/* q of the arrival units are parties (mean size 2.5): players in parties = 2.5q / (1 + 1.5q). */
	double q = party_share / (2.5 - 1.5 * party_share);
	if (uniform(PLAYERS) >= q) {
		new_player(at_ms);
		return;
	}
	int size = uniform(PLAYERS) < 0.5 ? 2 : 3;
	size_t first = sim.n_players;
	for (int m = 0; m < size; m++)
		new_player(at_ms);
	char id[CC_UUID_BUF];
	snprintf(id, sizeof id, "g%zu", n_parties++);
	for (size_t i = first; i < sim.n_players; i++) {
		struct cc_candidate *c = &sim.players[i].cand;
		snprintf(c->party_id, sizeof c->party_id, "%s", id);
		c->party_size = size;
		memcpy(c->rtt, sim.players[first].cand.rtt, sizeof c->rtt);
	}
	party_skip = (size_t)size - 1;
}

/*
 * How many of member k's party in pr accepted (k included; 1 when solo):
 * after a decline the party goes back as those (store/proposals.h), so
 * their party_size becomes this, at least 1.
 */
static int party_accepted(const struct proposal *pr, size_t k, const bool *accepted)
{
	const struct cc_candidate *c = &sim.players[pr->player[k]].cand;
	int n = 0;
	for (size_t j = 0; c->party_id[0] && j < pr->n; j++)
		n += accepted[j] && strcmp(sim.players[pr->player[j]].cand.party_id, c->party_id) == 0;
	return c->party_id[0] ? n : 1;
}

/* Counts a formation that splits a party or holds part of one. */
static void party_check(const struct cc_formation *f)
{
	for (size_t k = 0; k < f->n_players; k++) {
		const struct cc_candidate *c = &qp.cands[f->index[k]];
		if (!c->party_id[0])
			continue;
		int in = 0;
		bool split = false;
		for (size_t j = 0; j < f->n_players; j++) {
			if (strcmp(qp.cands[f->index[j]].party_id, c->party_id) == 0) {
				in++;
				split |= f->team[j] != f->team[k];
			}
		}
		if (split || in != c->party_size) {
			party_violations++;
			return;
		}
	}
}

/* The anchor's tolerance (ranked), from SPEC 6's rule. */
static double tolerance_of(const struct cc_candidate *a)
{
	return cc_formation_tolerance_at(sim.params, sim.now_ms - a->queued_at_ms, sim.arrival_rate);
}

/* b may join a match anchored at a in region r (every simulated player lists every region). */
static bool compatible(const struct cc_candidate *a, const struct cc_candidate *b, int r)
{
	return strcmp(a->build, b->build) == 0 && a->protocol_version == b->protocol_version &&
	       b->rtt[r].rtt_ms <= sim.params->max_rtt_ms &&
	       (!sim.params->ranked || fabs(a->rating - b->rating) <= tolerance_of(a));
}

/*
 * True when queued player x is in some valid match among the QUEUED
 * players: an anchor (x or an older player compatible with him) and a
 * region both reach, with enough other compatible players younger than
 * the anchor. Players are all distinct here.
 */
static bool could_match(size_t x)
{
	const struct cc_candidate *cx = &sim.players[x].cand;
	size_t want = (size_t)sim.params->team_size * CC_FORMATION_TEAMS - 1;
	for (size_t ai = 0; ai < sim.n_queue; ai++) {
		size_t a = sim.queue[ai];
		const struct cc_candidate *ca = &sim.players[a].cand;
		if (sim.players[a].state != QUEUED)
			continue;
		for (int r = 0; r < N_REGIONS; r++) {
			if (ca->rtt[r].rtt_ms > sim.params->max_rtt_ms || (a != x && !compatible(ca, cx, r)))
				continue;
			size_t got = a != x;
			for (size_t bi = ai + 1; bi < sim.n_queue && got < want; bi++) {
				size_t b = sim.queue[bi];
				got += b != x && sim.players[b].state == QUEUED && compatible(ca, &sim.players[b].cand, r);
			}
			if (got >= want)
				return true;
		}
		if (a == x)
			break; /* anchors are x or older than x */
	}
	return false;
}

/* Drops from the queue everyone no longer QUEUED and everyone out of patience (noting who was stranded). */
static void compact_queue(const struct settings *s)
{
	size_t kept = 0;
	int64_t patience_ms = (int64_t)(s->patience_s * 1000);
	for (size_t k = 0; k < sim.n_queue; k++) {
		struct player *p = &sim.players[sim.queue[k]];
		if (p->state == QUEUED && sim.now_ms - p->arrived_ms >= patience_ms) {
			p->stranded = could_match(sim.queue[k]);
			p->state = ABANDONED;
		}
		if (p->state == QUEUED)
			sim.queue[kept++] = sim.queue[k];
	}
	sim.n_queue = kept;
}

/* ---- issue 26: the estimated wait's history ------------------------------------- */

/*
 * Every formation's tickets, as store/queue_stats.h reads them from
 * proposals: when it formed, the ticket's wait until then and its rating,
 * one array per region (the proposal's), oldest first. Reset with the sim.
 */
struct wait_rec {
	int64_t at_ms;
	struct cc_wait_sample sample;
};
static struct {
	struct wait_rec *v[N_REGIONS];
	size_t n[N_REGIONS], cap[N_REGIONS];
} wait_history;

static void wait_history_record(const struct cc_formation *f)
{
	int r = 0;
	while (r < N_REGIONS && strcmp(region_names[r], f->region) != 0)
		r++;
	if (r == N_REGIONS)
		return;
	for (size_t k = 0; k < f->n_players; k++) {
		const struct cc_candidate *c = &qp.cands[f->index[k]];
		wait_history.v[r] = grow(wait_history.v[r], &wait_history.cap[r], wait_history.n[r] + 1,
					 sizeof *wait_history.v[r]);
		wait_history.v[r][wait_history.n[r]++] = (struct wait_rec){
			sim.now_ms, { (double)(sim.now_ms - c->queued_at_ms) / 1000.0, c->rating } };
	}
}

/* The claim callback: no database, so every formation is claimed; it opens a proposal. */
static int claim(void *ctx, const struct cc_formation *f, bool lost[CC_FORMATION_MAX_PLAYERS])
{
	const struct settings *s = ctx;
	(void)lost;
	sim.props = grow(sim.props, &sim.cap_props, sim.n_props + 1, sizeof *sim.props);
	struct proposal *pr = &sim.props[sim.n_props++];
	pr->resolve_ms = sim.now_ms + (int64_t)(s->response_s * 1000);
	pr->n = f->n_players;
	party_check(f);
	for (size_t k = 0; k < f->n_players; k++) {
		pr->player[k] = (size_t)strtoull(qp.cands[f->index[k]].ticket_id + 1, NULL, 10);
		sim.players[pr->player[k]].state = PROPOSED;
	}
	pr->spread = f->rating_spread;
	pr->team_diff = fabs(f->team_mean[0] - f->team_mean[1]);
	pr->worst_rtt = f->worst_rtt_ms;
	wait_history_record(f);
	return 0;
}

/* True when queued player i sorts after player j in queue order (enqueue time, then number). */
static bool after_player(size_t i, size_t j)
{
	int64_t ti = sim.players[i].arrived_ms, tj = sim.players[j].arrived_ms;
	return ti > tj || (ti == tj && i > j);
}

/* The read callback: what cc_candidates_load would return from this queue. */
static int read_queue(void *ctx, const char *after, size_t limit, struct cc_candidate *out,
		      struct cc_queue_page *page)
{
	(void)ctx;
	size_t k = 0, n = 0;
	if (after) {
		/* Keyset: the first queued player after that ticket, whatever state it is in now. */
		size_t j = (size_t)strtoull(after + 1, NULL, 10), lo = 0, hi = sim.n_queue;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (after_player(sim.queue[mid], j))
				hi = mid;
			else
				lo = mid + 1;
		}
		k = lo;
	}
	for (; k < sim.n_queue && n < limit; k++) {
		const struct player *p = &sim.players[sim.queue[k]];
		if (p->state != QUEUED)
			continue; /* proposed earlier in this pass */
		out[n] = p->cand;
		out[n].expires_at_ms = sim.now_ms + TTL_MS;
		n++;
	}
	page->n = n;
	page->more = n == limit;
	page->now_ms = sim.now_ms;
	snprintf(page->last, sizeof page->last, "%s", n ? out[n - 1].ticket_id : "");
	return 0;
}

/* The matcher woken: passes until one forms nothing (cc-matcher's run_again), then the leavers leave. */
static void wake(const struct settings *s, const struct cc_queue_pass_config *cfg)
{
	struct cc_queue_pass_stats st;
	do {
		if (cc_queue_pass_run(&qp, cfg, read_queue, claim, (void *)s, &st) != 0) {
			fprintf(stderr, "queue_sim: the pass failed\n");
			exit(1);
		}
		sim.passes++;
		sim.arrival_rate = st.arrival_rate_per_s;
	} while (st.formation.formed > 0);
	sim.woken = false;
}

/* Settles the proposals due by now: a played match, or decliners out and the rest requeued. */
static void resolve(const struct settings *s)
{
	size_t kept = 0;
	for (size_t i = 0; i < sim.n_props; i++) {
		struct proposal pr = sim.props[i];
		if (pr.resolve_ms > sim.now_ms) {
			sim.props[kept++] = pr;
			continue;
		}
		sim.woken = true; /* the settlement's outbox NOTIFY */
		bool accepted[CC_FORMATION_MAX_PLAYERS], all = true;
		for (size_t k = 0; k < pr.n; k++) {
			accepted[k] = uniform(ANSWERS) < s->accept;
			all = all && accepted[k];
		}
		int64_t formed_ms = pr.resolve_ms - (int64_t)(s->response_s * 1000);
		for (size_t k = 0; k < pr.n; k++) {
			struct player *p = &sim.players[pr.player[k]];
			if (all) {
				p->state = MATCHED;
				p->matched_ms = formed_ms;
			} else if (!accepted[k]) {
				p->state = DECLINED;
			} else {
				if (p->cand.party_id[0]) /* the mates of a decliner: the smaller party */
					p->cand.party_size = party_accepted(&pr, k, accepted);
				requeue(pr.player[k]);
			}
		}
		if (all && formed_ms >= WARMUP_MS) {
			sim.matches = grow(sim.matches, &sim.cap_matches, sim.n_matches + 1, sizeof *sim.matches);
			sim.matches[sim.n_matches++] = (struct match_rec){ pr.spread, pr.team_diff, pr.worst_rtt };
		}
	}
	sim.n_props = kept;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The q-quantile (nearest rank) of v[0..n), sorting v; NAN when empty. */
static double quantile(double *v, size_t n, double q)
{
	if (n == 0)
		return NAN;
	qsort(v, n, sizeof *v, cmp_double);
	size_t k = (size_t)ceil(q * (double)n);
	return v[k > 0 ? k - 1 : 0];
}

static void sim_reset(void)
{
	free(sim.players);
	free(sim.props);
	free(sim.matches);
	memset(&sim, 0, sizeof sim);
	memset(wait_history.n, 0, sizeof wait_history.n); /* issue 26: keeps the arrays for the next run */
}

/* One run of settings s; false when the queue overflowed MAX_QUEUE. */
static bool run(const struct settings *s, struct outcome *out)
{
	struct cc_formation_params params = {
		.team_size = s->team_size,
		.ranked = strcmp(s->playlist, "ranked") == 0,
		.tolerance_start = s->tol_start,
		.tolerance_growth_per_s = s->tol_growth,
		.tolerance_cap = s->tol_cap,
		.max_rtt_ms = CC_FORMATION_DEFAULT_MAX_RTT_MS,
		.rule = s->rule,
		.tolerance_hold_s = s->rule == CC_FORMATION_RULE_PAIRING ? s->hold_s : 0,
		.rate_reference_per_s = s->rate_ref,
	};
	struct cc_queue_pass_config cfg;
	/* Long enough for MIN_ARRIVALS at a low rate, so its percentiles are not noise. */
	double hours = s->hours > MIN_ARRIVALS / s->rate / 3600 ? s->hours : MIN_ARRIVALS / s->rate / 3600;
	int64_t end_ms = (int64_t)(hours * 3600 * 1000);
	/* Measured: arrivals after a 10-minute warm-up that had time to end one way or another. */
	int64_t from_ms = WARMUP_MS;
	int64_t until_ms = end_ms - (int64_t)((s->patience_s + 4 * s->response_s + 60) * 1000);

	if (!cc_formation_params_valid(&params) || until_ms <= from_ms) {
		fprintf(stderr, "queue_sim: invalid settings (tolerance cap < start, run too short, or rate <= 0)\n");
		exit(2);
	}
	cc_queue_pass_defaults(&params, &cfg); /* cc-matcher's pages and working set */
	sim_reset();
	party_skip = n_parties = party_violations = 0;
	sim.params = &params;
	cc_queue_pass_init(&qp);
	rng_state[PLAYERS] = s->seed * 0x9E3779B97F4A7C15ull + 1;
	rng_state[ANSWERS] = s->seed * 0xD1B54A32D192ED03ull + 2;
	double next_arrival_ms = -log(1.0 - uniform(PLAYERS)) / s->rate * 1000;
	memset(out, 0, sizeof *out);
	int64_t last_pass = -POLL_MS;
	for (sim.now_ms = 0; sim.now_ms <= end_ms && !sim.overflow;) {
		while (next_arrival_ms <= (double)sim.now_ms) {
			arrive((int64_t)next_arrival_ms);
			next_arrival_ms += -log(1.0 - uniform(PLAYERS)) / s->rate * 1000;
		}
		resolve(s);
		if (sim.woken || sim.now_ms - last_pass >= POLL_MS) {
			wake(s, &cfg);
			last_pass = sim.now_ms;
			compact_queue(s);
		}
		out->max_queue = sim.n_queue > out->max_queue ? sim.n_queue : out->max_queue;
		/* The next step where anything happens: an arrival, a settlement, the poll. */
		int64_t next = last_pass + POLL_MS;
		if (next_arrival_ms < (double)next)
			next = (int64_t)ceil(next_arrival_ms);
		for (size_t i = 0; i < sim.n_props; i++)
			next = sim.props[i].resolve_ms < next ? sim.props[i].resolve_ms : next;
		next = (next + STEP_MS - 1) / STEP_MS * STEP_MS;
		sim.now_ms = next > sim.now_ms ? next : sim.now_ms + STEP_MS;
	}
	if (sim.overflow)
		return false;

	double *waits = calloc(sim.n_players + 1, sizeof *waits);
	if (!waits)
		exit(1);
	size_t n_waits = 0;
	for (size_t i = 0; i < sim.n_players; i++) {
		const struct player *p = &sim.players[i];
		if (p->arrived_ms < from_ms || p->arrived_ms >= until_ms)
			continue;
		out->arrivals++;
		bool outlier = fabs(p->cand.rating - 1500) > OUTLIER;
		if (outlier && p->state != DECLINED) {
			out->outliers++;
			out->outliers_abandoned += p->state == ABANDONED;
		}
		switch (p->state) {
		case MATCHED:
			out->matched++;
			waits[n_waits++] = (double)(p->matched_ms - p->arrived_ms) / 1000.0;
			break;
		case ABANDONED:
			out->abandoned++;
			out->stranded += p->stranded;
			break;
		case DECLINED:
			out->declined++;
			break;
		default:
			out->unresolved++;
			break;
		}
	}
	out->wait_p50 = quantile(waits, n_waits, 0.50);
	out->wait_p95 = quantile(waits, n_waits, 0.95);
	free(waits);
	out->matches = sim.n_matches;
	double *v = calloc(sim.n_matches + 1, sizeof *v);
	if (!v)
		exit(1);
	for (int field = 0; field < 3; field++) {
		for (size_t m = 0; m < sim.n_matches; m++) {
			const struct match_rec *r = &sim.matches[m];
			v[m] = field == 0 ? r->spread : field == 1 ? r->team_diff : r->worst_rtt;
		}
		double *p50 = field == 0 ? &out->spread_p50 : field == 1 ? &out->team_p50 : &out->rtt_p50;
		double *p95 = field == 0 ? &out->spread_p95 : field == 1 ? &out->team_p95 : &out->rtt_p95;
		*p50 = quantile(v, sim.n_matches, 0.50);
		*p95 = quantile(v, sim.n_matches, 0.95);
	}
	free(v);
	size_t resolved = out->matched + out->abandoned + out->declined;
	out->abandon_rate = resolved ? (double)out->abandoned / (double)resolved : 0;
	out->outlier_abandon_rate = out->outliers ? (double)out->outliers_abandoned / (double)out->outliers : 0;
	out->stranded_rate = resolved ? (double)out->stranded / (double)resolved : 0;
	out->passes = sim.passes;
	return true;
}

/* ---- reports ----------------------------------------------------------------------- */

static void print_outcome(const char *label, const struct outcome *o)
{
	printf("  %-14s wait p50 %5.1f s p95 %6.1f s | spread p50 %4.0f p95 %4.0f | team diff p50 %4.0f p95 %4.0f | "
	       "worst rtt p50 %3.0f p95 %3.0f ms | abandoned %5.2f%% (rating beyond +-%d: %5.2f%%), stranded %5.2f%% | "
	       "%zu matches, %zu passes, max queue %zu\n",
	       label, o->wait_p50, o->wait_p95, o->spread_p50, o->spread_p95, o->team_p50, o->team_p95, o->rtt_p50,
	       o->rtt_p95, 100 * o->abandon_rate, OUTLIER, 100 * o->outlier_abandon_rate, 100 * o->stranded_rate,
	       o->matches, o->passes, o->max_queue);
}

static void run_or_die(const struct settings *s, struct outcome *o)
{
	if (!run(s, o)) {
		fprintf(stderr, "queue_sim: more than %d tickets queued at once (rate %.2f/s): raise MAX_QUEUE\n",
			MAX_QUEUE, s->rate);
		exit(1);
	}
}

/*
 * The recommendation rule, quality first within a service budget: at both
 * rates at most 1 % of players abandon, and at most 5 % of those rated
 * beyond 1500 +- OUTLIER (a cap that strands the best players at night is
 * not a default), and 95 % find a match within 90 s at the low rate / 30 s
 * at the high rate; among those settings the one with the best matches
 * (lowest mean of the two p95 rating spreads) wins, ties to the shorter
 * low-rate p95 wait.
 */
#define MAX_ABANDON 0.01
#define MAX_OUTLIER_ABANDON 0.05
#define MAX_WAIT_P95_LOW 90.0
#define MAX_WAIT_P95_HIGH 30.0

static bool within(const struct outcome *o, double max_wait_p95)
{
	return o->abandon_rate <= MAX_ABANDON && o->outlier_abandon_rate <= MAX_OUTLIER_ABANDON &&
	       o->wait_p95 <= max_wait_p95;
}

static bool acceptable(const struct outcome *lo, const struct outcome *hi)
{
	return within(lo, MAX_WAIT_P95_LOW) && within(hi, MAX_WAIT_P95_HIGH);
}

static double quality(const struct outcome *lo, const struct outcome *hi)
{
	return (lo->spread_p95 + hi->spread_p95) / 2;
}

static void sweep(const struct settings *base, double low_rate, double high_rate)
{
	static const double starts[] = { 50, 100, 200 }, growths[] = { 2, 5, 10 }, caps[] = { 300, 400, 600 };
	struct settings best_s = *base;
	struct outcome best_lo = { 0 }, best_hi = { 0 };
	bool have = false;

	printf("\nranked %dv%d tolerance sweep (rating points; growth per second of the anchor's wait):\n",
	       base->team_size, base->team_size);
	printf("  %-16s | %-55s | %-55s\n", "", "low rate", "high rate");
	printf("  %5s %6s %4s | %4s %5s %6s %6s %7s %6s %6s | %4s %5s %6s %6s %7s %6s %6s\n", "start", "growth", "cap",
	       "ok", "wait50", "wait95", "sprd50", "sprd95", "aband%", "outl%", "ok", "wait50", "wait95", "sprd50",
	       "sprd95", "aband%", "outl%");
	printf("  (low rate %.2f/s, high rate %.2f/s; waits in s; sprd = rating spread; outl%% = abandonment among ratings "
	       "beyond 1500 +-%d; ok = within the budget below)\n",
	       low_rate, high_rate, OUTLIER);
	for (size_t a = 0; a < CC_ARRAY_LEN(starts); a++)
		for (size_t b = 0; b < CC_ARRAY_LEN(growths); b++)
			for (size_t c = 0; c < CC_ARRAY_LEN(caps); c++) {
				struct settings s = *base;
				struct outcome lo, hi;
				s.tol_start = starts[a];
				s.tol_growth = growths[b];
				s.tol_cap = caps[c];
				s.rate = low_rate;
				run_or_die(&s, &lo);
				s.rate = high_rate;
				run_or_die(&s, &hi);
				bool ok = acceptable(&lo, &hi);
				printf("  %5.0f %6.0f %4.0f | %4s %5.1f %6.1f %6.0f %7.0f %6.2f %6.1f | %4s %5.1f %6.1f "
				       "%6.0f %7.0f %6.2f %6.1f\n",
				       s.tol_start, s.tol_growth, s.tol_cap,
				       within(&lo, MAX_WAIT_P95_LOW) ? "yes" : "no",
				       lo.wait_p50, lo.wait_p95, lo.spread_p50, lo.spread_p95, 100 * lo.abandon_rate,
				       100 * lo.outlier_abandon_rate,
				       within(&hi, MAX_WAIT_P95_HIGH) ? "yes" : "no",
				       hi.wait_p50, hi.wait_p95, hi.spread_p50, hi.spread_p95, 100 * hi.abandon_rate,
				       100 * hi.outlier_abandon_rate);
				bool better = !have || quality(&lo, &hi) < quality(&best_lo, &best_hi) ||
					      (quality(&lo, &hi) == quality(&best_lo, &best_hi) &&
					       lo.wait_p95 < best_lo.wait_p95);
				if (ok && better) {
					best_s = s;
					best_lo = lo;
					best_hi = hi;
					have = true;
				}
			}
	printf("\nrule: at both rates abandonment <= %.0f%% overall and <= %.0f%% beyond 1500 +-%d, wait p95 <= %.0f s "
	       "(low rate) / %.0f s (high rate); then the lowest mean p95 rating spread\n",
	       100 * MAX_ABANDON, 100 * MAX_OUTLIER_ABANDON, OUTLIER, MAX_WAIT_P95_LOW, MAX_WAIT_P95_HIGH);
	if (!have) {
		printf("recommendation: none of the swept settings meets the rule; keep the defaults and revisit the budget\n");
		return;
	}
	printf("recommendation (ranked): --tolerance-start=%.0f --tolerance-growth-per-second=%.0f --tolerance-cap=%.0f "
	       "(low rate: wait p95 %.0f s, spread p95 %.0f, abandoned %.2f%%; high rate: wait p95 %.0f s, spread p95 "
	       "%.0f, abandoned %.2f%%)\n",
	       best_s.tol_start, best_s.tol_growth, best_s.tol_cap, best_lo.wait_p95, best_lo.spread_p95,
	       100 * best_lo.abandon_rate, best_hi.wait_p95, best_hi.spread_p95, 100 * best_hi.abandon_rate);
}


/* ---- issue 25: greedy against sweep ------------------------------------------------------ */

#define GOAL_WAIT_LOW 60.0    /* wait p95 at 0.2/s */
#define GOAL_SPREAD_MID 150.0 /* spread p95 at 1/s */

static void goal_row(const char *what, double greedy, double sweep, double below, const char *unit)
{
	printf("  %-44s greedy %7.1f%-2s | sweep %7.1f%-2s (greedy %s, sweep %s)\n", what, greedy, unit, sweep,
	       unit, greedy < below ? "met" : "missed", sweep < below ? "met" : "MISSED");
}

struct fpoint {
	double start, growth, cap, rate_ref;
	double wait_low, spread_mid, wait_mid, abandon;
	bool is_default;              /* the series' default setting (the playlist's tolerance) */
};

#define N_SERIES 3 /* greedy; greedy + the rate reference; sweep + the rate reference (cc-matcher's default) */
static const char *const series_name[N_SERIES] = { "greedy", "greedy+rate", "sweep+rate" };
static const char *const series_colour[N_SERIES] = { "#c33", "#e90", "#36c" };

/* A series' mark at (x, y): a circle, a triangle or a square. */
static void svg_mark(FILE *f, int series, double x, double y)
{
	if (series == 0)
		fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"", x, y, series_colour[series]);
	else if (series == 1)
		fprintf(f, "<polygon points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\" fill=\"%s\"", x, y - 5, x - 5, y + 4, x + 5,
			y + 4, series_colour[series]);
	else
		fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"8\" height=\"8\" fill=\"%s\"", x - 4, y - 4,
			series_colour[series]);
}

/*
 * One SVG scatter: wait p95 at 0.2/s (x) against spread p95 at 1/s (y) per
 * tolerance setting and series, the goal box shaded and each series'
 * default point ringed. Written with stdio: no plotting dependency.
 */
static void write_svg(const char *path, struct fpoint pts[N_SERIES][32], size_t n)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "queue_sim: cannot write %s\n", path);
		return;
	}
	const double W = 640, H = 480, L = 70, R = 20, T = 40, B = 60, xmax = 140, ymax = 400;
#define SX(v) (L + (v) / xmax * (W - L - R))
#define SY(v) (H - B - (v) / ymax * (H - T - B))
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" "
		   "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", W, H);
	fprintf(f, "<text x=\"%.0f\" y=\"20\" font-size=\"14\">ranked 1v1: wait p95 at 0.2/s against rating spread p95 "
		   "at 1/s, per tolerance setting</text>\n", L);
	fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#dfd\"/>\n", SX(0), SY(GOAL_SPREAD_MID),
		SX(GOAL_WAIT_LOW) - SX(0), SY(0) - SY(GOAL_SPREAD_MID));
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#393\">goal</text>\n", SX(2), SY(GOAL_SPREAD_MID) + 14);
	for (int v = 0; v <= (int)xmax; v += 20)
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ccc\"/><text x=\"%.1f\" y=\"%.1f\" "
			   "text-anchor=\"middle\">%d</text>\n", SX(v), SY(0), SX(v), SY(ymax), SX(v), SY(0) + 16, v);
	for (int v = 0; v <= (int)ymax; v += 50)
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ccc\"/><text x=\"%.1f\" y=\"%.1f\" "
			   "text-anchor=\"end\">%d</text>\n", SX(0), SY(v), SX(xmax), SY(v), SX(0) - 4, SY(v) + 4, v);
	fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">wait p95 at 0.2 arrivals/s (s)</text>\n",
		SX(xmax / 2), H - 20);
	fprintf(f, "<text x=\"16\" y=\"%.1f\" transform=\"rotate(-90 16 %.1f)\" text-anchor=\"middle\">rating spread p95 "
		   "at 1 arrival/s</text>\n", SY(ymax / 2), SY(ymax / 2));
	for (int k = 0; k < N_SERIES; k++)
		for (size_t i = 0; i < n; i++) {
			const struct fpoint *pt = &pts[k][i];
			double x = SX(fmin(pt->wait_low, xmax)), y = SY(fmin(pt->spread_mid, ymax));
			svg_mark(f, k, x, y);
			fprintf(f, "><title>%s %.0f + %.0f/s cap %.0f, rate reference %.2f/s: %.1f s, %.0f</title>%s\n",
				series_name[k], pt->start, pt->growth, pt->cap, pt->rate_ref, pt->wait_low, pt->spread_mid,
				k == 0 ? "</circle>" : k == 1 ? "</polygon>" : "</rect>");
			if (pt->is_default)
				fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"10\" fill=\"none\" stroke=\"%s\" "
					   "stroke-width=\"2\"/>\n", x, y, series_colour[k]);
		}
	for (int k = 0; k < N_SERIES; k++) {
		double y = 50 + 16 * k;
		svg_mark(f, k, W - 190, y);
		fprintf(f, "/><text x=\"%.0f\" y=\"%.0f\">%s%s</text>\n", W - 178, y + 4, series_name[k],
			k == 2 ? " (cc-matcher)" : "");
	}
	fprintf(f, "<circle cx=\"%.0f\" cy=\"98\" r=\"8\" fill=\"none\" stroke=\"#555\" stroke-width=\"2\"/><text "
		   "x=\"%.0f\" y=\"102\">the playlist's tolerance</text>\n", W - 190, W - 178);
	fprintf(f, "</svg>\n");
#undef SX
#undef SY
	fclose(f);
}

/*
 * The frontier: greedy (no rate reference), greedy with the rate
 * reference and sweep with it (cc-matcher's default) over the same
 * start x growth grid (cap 600), each at 0.2/s and 1/s with the same seed;
 * a table, how many settings reach the goal box, and (with --svg=PATH) the
 * plot. base[k] carries series k's rule, rate reference and default
 * tolerance (ringed in the plot).
 */
static void frontier(const struct settings base[N_SERIES], const char *svg_path)
{
	static const double starts[] = { 25, 50, 100 }, growths[] = { 2, 3, 5, 10 }; /* 72 runs in all */
	static struct fpoint pts[N_SERIES][32];
	size_t n = 0;
	struct outcome lo, mid;

	printf("\nranked %dv%d frontier (issue 25): wait p95 at 0.2/s against spread p95 at 1/s, same seed, cap 600\n",
	       base[0].team_size, base[0].team_size);
	printf("  %-11s %5s %6s %4s %7s | %7s %7s | %7s %7s\n", "series", "start", "growth", "cap", "rateref", "wait95",
	       "aband%", "sprd95", "wait95");
	printf("  %-11s %5s %6s %4s %7s | %-15s | %-15s\n", "", "", "", "", "", "at 0.2/s", "at 1/s");
	for (int k = 0; k < N_SERIES; k++) {
		n = 0;
		for (size_t a = 0; a < CC_ARRAY_LEN(starts); a++)
			for (size_t g = 0; g < CC_ARRAY_LEN(growths); g++) {
				struct settings s = base[k];
				s.tol_start = starts[a];
				s.tol_growth = growths[g];
				s.tol_cap = 600;
				s.rate = 0.2;
				run_or_die(&s, &lo);
				s.rate = 1;
				run_or_die(&s, &mid);
				struct fpoint fp = { s.tol_start, s.tol_growth, s.tol_cap, s.rate_ref, lo.wait_p95,
						     mid.spread_p95, mid.wait_p95, lo.abandon_rate,
						     s.tol_start == base[k].tol_start && s.tol_growth == base[k].tol_growth &&
							     s.tol_cap == base[k].tol_cap };
				printf("  %-11s %5.0f %6.0f %4.0f %7.2f | %7.1f %7.2f | %7.0f %7.1f%s\n", series_name[k],
				       fp.start, fp.growth, fp.cap, fp.rate_ref, fp.wait_low, 100 * fp.abandon, fp.spread_mid,
				       fp.wait_mid, fp.is_default ? "  <- the playlist's" : "");
				pts[k][n++] = fp;
			}
	}
	printf("settings inside the goal box (wait p95 < %.0f s at 0.2/s and spread p95 < %.0f at 1/s):",
	       GOAL_WAIT_LOW, GOAL_SPREAD_MID);
	for (int k = 0; k < N_SERIES; k++) {
		size_t met = 0;
		for (size_t i = 0; i < n; i++)
			met += pts[k][i].wait_low < GOAL_WAIT_LOW && pts[k][i].spread_mid < GOAL_SPREAD_MID;
		printf(" %s %zu of %zu%s", series_name[k], met, n, k + 1 < N_SERIES ? "," : "\n");
	}
	if (svg_path) {
		write_svg(svg_path, pts, n);
		printf("frontier plot: %s\n", svg_path);
	}
}

/* ---- issue 26: how well the estimated wait tracks the real one --------------------- */

/*
 * The estimate a player's enqueue answer would have shown (cc_wait_estimate
 * at zero wait, over the history formed before he queued: the newest
 * CC_WAIT_SAMPLES_MAX of the last CC_WAIT_WINDOW_SECONDS in the regions he
 * reaches within the RTT limit, merged newest first as the store's ORDER
 * BY does), against his real wait (to the proposal he accepted), over the
 * measured matched players of the last run(). Fills the median absolute
 * error (NAN without estimates), the share estimated and the real p50.
 */
static void wait_estimate_errors(double *mae, double *covered, double *real_p50, size_t *measured)
{
	size_t n = 0, m = 0;
	double *err = calloc(sim.n_players + 1, sizeof *err), *real = calloc(sim.n_players + 1, sizeof *real);
	if (!err || !real)
		exit(1);
	for (size_t i = 0; i < sim.n_players; i++) {
		const struct player *p = &sim.players[i];
		if (p->arrived_ms < WARMUP_MS || p->state != MATCHED)
			continue;
		size_t top[N_REGIONS]; /* per region: how many samples formed before he queued */
		for (int r = 0; r < N_REGIONS; r++) {
			/* The simulated matcher's limit (run()'s params): CC_FORMATION_DEFAULT_MAX_RTT_MS. */
			size_t lo = 0, hi = p->cand.rtt[r].rtt_ms <= CC_FORMATION_DEFAULT_MAX_RTT_MS ? wait_history.n[r] : 0;
			while (lo < hi) {
				size_t mid = lo + (hi - lo) / 2;
				if (wait_history.v[r][mid].at_ms <= p->arrived_ms)
					lo = mid + 1;
				else
					hi = mid;
			}
			top[r] = lo;
		}
		struct cc_wait_sample s[CC_WAIT_SAMPLES_MAX];
		size_t k = 0;
		while (k < CC_WAIT_SAMPLES_MAX) {
			int best = -1;
			for (int r = 0; r < N_REGIONS; r++)
				if (top[r] && (best < 0 || wait_history.v[r][top[r] - 1].at_ms >
							      wait_history.v[best][top[best] - 1].at_ms))
					best = r;
			if (best < 0 || wait_history.v[best][top[best] - 1].at_ms <=
						p->arrived_ms - (int64_t)CC_WAIT_WINDOW_SECONDS * 1000)
				break;
			s[k++] = wait_history.v[best][--top[best]].sample;
		}
		struct cc_wait_estimate e;
		if (cc_wait_estimate(true, p->cand.rating, 0, s, k, &e) != 0)
			exit(1);
		double w = (double)(p->matched_ms - p->arrived_ms) / 1000.0;
		real[m++] = w;
		if (e.method == CC_WAIT_RECENT_MATCHES)
			err[n++] = fabs(e.seconds - w);
	}
	*mae = quantile(err, n, 0.5);
	*covered = m ? (double)n / (double)m : 0;
	*real_p50 = quantile(real, m, 0.5);
	*measured = m;
	free(err);
	free(real);
}

/* The section: ranked and casual at cc-matcher's defaults (greedy), at each rate of the main table. */
static void wait_estimate_report(const struct settings *ranked, const struct settings *casual, const double *rates,
				 size_t n_rates)
{
	printf("\nestimated wait (issue 26): median absolute error of the enqueue answer's estimate against the real "
	       "wait\n  (game/wait_estimate.h: median of the last %d s of the queue's waits in the player's regions, "
	       "rating +-%.0f, >= %d samples; covered = players who got a number, the rest no_history)\n",
	       CC_WAIT_WINDOW_SECONDS, CC_WAIT_RATING_BAND, CC_WAIT_MIN_SAMPLES);
	printf("  %-8s %7s | %8s %8s %9s %9s\n", "playlist", "rate/s", "players", "covered", "real p50", "MAE");
	for (int pl = 0; pl < 2; pl++)
		for (size_t i = 0; i < n_rates; i++) {
			struct settings s = pl ? *casual : *ranked;
			struct outcome o;
			double mae, covered, real_p50;
			size_t measured;
			s.rate = rates[i];
			run_or_die(&s, &o);
			wait_estimate_errors(&mae, &covered, &real_p50, &measured);
			printf("  %-8s %7.2f | %8zu %7.1f%% %8.1fs %8.1fs\n", s.playlist, s.rate, measured, 100 * covered,
			       real_p50, mae);
		}
}

/* ---- options ----------------------------------------------------------------------- */

/* Parses "--name=number" into *v when arg names it; false when it names something else. */
static bool opt_number(const char *arg, const char *name, double lo, double hi, double *v)
{
	size_t len = strlen(name);
	if (strncmp(arg, name, len) != 0 || arg[len] != '=')
		return false;
	char *end;
	errno = 0;
	double x = strtod(arg + len + 1, &end);
	if (errno || end == arg + len + 1 || *end || !(x >= lo && x <= hi)) {
		fprintf(stderr, "queue_sim: %s wants a number in [%g, %g]\n", name, lo, hi);
		exit(2);
	}
	*v = x;
	return true;
}

/*
 * --parties: casual at the usual rates, solo only beside 30% of the players
 * in parties of 2-3, same seed and player arrival rate: wait p95, rating
 * spread p95 and stranded players (counted by the solo oracle, could_match,
 * which ignores the party rule: for party members an upper bound), and the
 * party invariant (no formation splits a party or takes part of one).
 * Returns the number of violations.
 */
static size_t party_report(const struct settings *casual)
{
	static const double rates[] = { 0.2, 0.5, 1, 5, 20 };
	size_t violations = 0;
	printf("\ncasual %dv%d, solo only beside 30%% of the players in parties of 2-3 (same seed and arrival rate):\n",
	       casual->team_size, casual->team_size);
	for (size_t i = 0; i < CC_ARRAY_LEN(rates); i++) {
		struct settings s = *casual;
		struct outcome solo, mixed;
		char label[64];
		s.rate = rates[i];
		party_share = 0;
		run_or_die(&s, &solo);
		party_share = 0.3;
		run_or_die(&s, &mixed);
		size_t parties = n_parties, bad = party_violations;
		party_share = 0;
		violations += bad;
		snprintf(label, sizeof label, "solo %.1f/s", rates[i]);
		print_outcome(label, &solo);
		snprintf(label, sizeof label, "30%% pty %.1f/s", rates[i]);
		print_outcome(label, &mixed);
		printf("  %-14s wait p95 %+.1f s, spread p95 %+.0f, stranded %+.2f points vs solo; %zu parties, %zu "
		       "formations splitting or cutting a party\n",
		       "", mixed.wait_p95 - solo.wait_p95, mixed.spread_p95 - solo.spread_p95,
		       100 * (mixed.stranded_rate - solo.stranded_rate), parties, bad);
	}
	return violations;
}

int main(int argc, char **argv)
{
	const struct cc_playlist *defaults = cc_playlist_find("ranked"); /* cc-matcher's defaults */
	if (!defaults)
		return 2;
	struct settings s = {
		.playlist = "ranked", .team_size = 0, .rate = 0, .hours = 2,
		.tol_start = defaults->tolerance_start,
		.tol_growth = defaults->tolerance_growth_per_s,
		.tol_cap = defaults->tolerance_cap,
		.patience_s = 300, .accept = 0.95, .response_s = 10, .seed = 1,
	};
	double low_rate = 0.2, high_rate = 5, seed = 1, team = 0;
	const double rate_ref_default = CC_FORMATION_DEFAULT_RATE_REFERENCE; /* cc-matcher's default */
	const char *svg_path = NULL;
	bool once = false, parties = false, wait_only = false; /* --wait-estimate: only issue 26's section */

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--once") == 0)
			once = true;
		else if (strcmp(a, "--parties") == 0)
			parties = true;
		else if (strcmp(a, "--wait-estimate") == 0)
			wait_only = true;
		else if (strcmp(a, "--playlist=ranked") == 0 || strcmp(a, "--playlist=casual") == 0)
			s.playlist = a + strlen("--playlist=");
		else if (strncmp(a, "--svg=", 6) == 0)
			svg_path = a + 6;
		else if (strncmp(a, "--rule=", 7) == 0 && cc_formation_rule_parse(a + 7, &s.rule))
			;
		else if (!opt_number(a, "--hold", 0, CC_FORMATION_MAX_HOLD_S, &s.hold_s) &&
			 !opt_number(a, "--rate-reference", 0, CC_FORMATION_MAX_RATE_REFERENCE, &s.rate_ref) &&
			 !opt_number(a, "--seed", 0, 1e15, &seed) && !opt_number(a, "--team-size", 1, 8, &team) &&
			 !opt_number(a, "--rate", 0.001, 1000, &s.rate) && !opt_number(a, "--hours", 0.5, 1000, &s.hours) &&
			 !opt_number(a, "--tolerance-start", 0, 5000, &s.tol_start) &&
			 !opt_number(a, "--tolerance-growth", 0, 1000, &s.tol_growth) &&
			 !opt_number(a, "--tolerance-cap", 0, 5000, &s.tol_cap) &&
			 !opt_number(a, "--patience", 10, 86400, &s.patience_s) &&
			 !opt_number(a, "--accept", 0, 1, &s.accept) &&
			 !opt_number(a, "--response-delay", 0, 600, &s.response_s) &&
			 !opt_number(a, "--low-rate", 0.001, 1000, &low_rate) &&
			 !opt_number(a, "--high-rate", 0.001, 1000, &high_rate)) {
			fprintf(stderr, "usage: queue_sim [--once] [--seed=N] [--playlist=casual|ranked] [--team-size=N] "
					"[--rate=R] [--hours=H] [--tolerance-start=X] [--tolerance-growth=X] "
					"[--tolerance-cap=X] [--patience=S] [--accept=P] [--response-delay=S] "
					"[--low-rate=R] [--high-rate=R] [--rule=greedy|pairing|sweep] [--hold=S] "
					"[--rate-reference=R] [--svg=PATH] [--parties] [--wait-estimate]\n");
			return 2;
		}
	}
	s.seed = (uint64_t)seed;
	bool ranked = strcmp(s.playlist, "ranked") == 0;
	s.team_size = team > 0 ? (int)team : ranked ? 1 : 3;

	printf("queue simulation: seed %llu, runs of %.0f simulated hours or %d arrivals if longer (first 10 min not "
	       "measured), cc-matcher's pass and loop (wake-ups >= %d ms apart, a poll every %d ms), patience %.0f s, "
	       "accept %.2f, response %.0f s\n",
	       (unsigned long long)s.seed, s.hours, MIN_ARRIVALS, STEP_MS, POLL_MS, s.patience_s, s.accept,
	       s.response_s);
	struct outcome o;
	char label[64];
	if (parties) {
		struct settings c = s;
		c.playlist = "casual";
		c.team_size = team > 0 ? (int)team : 3;
		return party_report(&c) == 0 ? 0 : 1;
	}
	if (once) {
		if (!(s.rate > 0))
			s.rate = ranked ? low_rate : 1;
		run_or_die(&s, &o);
		snprintf(label, sizeof label, "%s %.2f/s", s.playlist, s.rate);
		printf("%s %dv%d, tolerance %.0f + %.0f/s, cap %.0f:\n", s.playlist, s.team_size, s.team_size, s.tol_start,
		       s.tol_growth, s.tol_cap);
		print_outcome(label, &o);
		return 0;
	}

	/*
	 * The defaults, both playlists: greedy (the rule before issue 25, no
	 * rate reference) beside cc-matcher's default (sweep, rate reference
	 * 0.4/s), the playlist's tolerance for both, at the same seed.
	 */
	struct settings r = s, c = s;
	r.playlist = "ranked";
	r.team_size = team > 0 ? (int)team : 1;
	r.rule = CC_FORMATION_RULE_GREEDY;
	r.rate_ref = 0;
	c.playlist = "casual";
	c.team_size = team > 0 ? (int)team : 3;
	c.rule = CC_FORMATION_RULE_GREEDY;
	c.rate_ref = 0;
	struct settings rn = r, cn = c;
	rn.rule = cn.rule = CC_FORMATION_RULE_SWEEP;
	rn.rate_ref = cn.rate_ref = rate_ref_default;
	static const double wait_rates[] = { 0.2, 0.5, 1, 5, 20 };
	if (wait_only) { /* the estimate's error under cc-matcher's default rule */
		wait_estimate_report(&rn, &cn, wait_rates, CC_ARRAY_LEN(wait_rates));
		sim_reset();
		return 0;
	}
	struct settings series[N_SERIES] = { r, r, rn };
	series[1].rate_ref = rate_ref_default;
	frontier(series, svg_path);
	static const double rates[] = { 0.2, 0.5, 1, 5, 20 };
	struct outcome og[CC_ARRAY_LEN(rates)], on[CC_ARRAY_LEN(rates)], ocg[CC_ARRAY_LEN(rates)], ocn[CC_ARRAY_LEN(rates)];
	printf("\nranked %dv%d, tolerance %.0f + %.0f/s, cap %.0f: greedy beside sweep (rating neighbours first, growth "
	       "x clamp(%.2f/s / arrival rate, 1/8, 8)), same seed:\n",
	       r.team_size, r.team_size, r.tol_start, r.tol_growth, r.tol_cap, rn.rate_ref);
	for (size_t i = 0; i < CC_ARRAY_LEN(rates); i++) {
		r.rate = rn.rate = rates[i];
		run_or_die(&r, &og[i]);
		run_or_die(&rn, &on[i]);
		snprintf(label, sizeof label, "%.2f/s greedy", r.rate);
		print_outcome(label, &og[i]);
		snprintf(label, sizeof label, "%.2f/s sweep", r.rate);
		print_outcome(label, &on[i]);
	}
	printf("casual %dv%d (no rating tolerance: sweep changes only ranked formation, so the rows must agree):\n",
	       c.team_size, c.team_size);
	for (size_t i = 0; i < CC_ARRAY_LEN(rates); i++) {
		c.rate = cn.rate = rates[i];
		run_or_die(&c, &ocg[i]);
		run_or_die(&cn, &ocn[i]);
		snprintf(label, sizeof label, "%.2f/s greedy", c.rate);
		print_outcome(label, &ocg[i]);
		snprintf(label, sizeof label, "%.2f/s sweep", c.rate);
		print_outcome(label, &ocn[i]);
	}
	/* Issue 25's goal rows, from the runs above (rates[0] = 0.2, [1] = 0.5, [2] = 1). */
	printf("\ngoals (issue 25), greedy | sweep, from the runs above:\n");
	goal_row("ranked wait p95 < 60 s at 0.2/s", og[0].wait_p95, on[0].wait_p95, GOAL_WAIT_LOW, "s");
	goal_row("ranked spread p95 < 150 at 1/s", og[2].spread_p95, on[2].spread_p95, GOAL_SPREAD_MID, "");
	goal_row("casual wait p95 < 30 s at 0.5/s", ocg[1].wait_p95, ocn[1].wait_p95, 30, "s");
	printf("  %-44s greedy %7.1f   | sweep %7.1f   (%s)\n", "casual team-mean diff p95 <= greedy's at 0.5/s",
	       ocg[1].team_p95, ocn[1].team_p95, ocn[1].team_p95 <= ocg[1].team_p95 ? "met" : "MISSED");
	size_t strand_g = 0, strand_n = 0;
	for (size_t i = 0; i < CC_ARRAY_LEN(rates); i++) {
		strand_g += og[i].stranded + ocg[i].stranded;
		strand_n += on[i].stranded + ocn[i].stranded;
	}
	printf("  %-44s greedy %7zu   | sweep %7zu   (%s)\n", "stranded players, every row", strand_g, strand_n,
	       strand_n == 0 ? "met" : "MISSED");
	if (ocn[1].wait_p95 >= 30)
		printf("  casual 3v3 at 0.5/s: formation has no rating to trade, so no rule moves it; its wait is players "
		       "meeting within %.0f ms (a region's share of 0.5/s filling 6 seats). Only filling seats (bots) or a "
		       "wider RTT bound would.\n", CC_FORMATION_DEFAULT_MAX_RTT_MS);
	wait_estimate_report(&rn, &cn, wait_rates, CC_ARRAY_LEN(wait_rates));
	sweep(&r, low_rate, high_rate);
	sim_reset();
	return 0;
}
