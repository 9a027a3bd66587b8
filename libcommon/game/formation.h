/*
 * formation.h - match formation (SPEC 6), pure: no I/O, no clock, no heap.
 *
 * A matcher pass reads the oldest QUEUED candidates (oldest first) plus
 * PostgreSQL's now(), prepares a workspace over them, and then repeatedly
 * forms ONE match anchored at the oldest candidate still in the working
 * set, claims it in the database, and removes whoever was claimed or
 * refused, until nothing more forms: "as many matches as the queue allows".
 * cc_formation_pass() is that loop; the claim is a callback, so the loop
 * is tested here without a database.
 *
 * Eligibility (all against the anchor): same build and protocol_version,
 * a different player, not expired (expires_at > now), RTT <= max_rtt_ms to
 * at least one region the anchor also reaches within max_rtt_ms, and for
 * ranked |rating - anchor.rating| <= tolerance, where
 *     tolerance = min(cap, start + growth_per_s * anchor_wait_seconds).
 * The chosen players must share at least one region where every one of
 * them is within max_rtt_ms.
 *
 * Choice among eligibles (fairness first, then quality):
 *  - for each region r the anchor reaches, the partners are picked from the
 *    eligibles that reach r: casual takes the oldest 2n-1; ranked looks at
 *    the oldest 2(2n-1) and takes the 2n-1 closest in rating to the anchor
 *    (ties: older first), so a tighter match is preferred but nobody far
 *    down the queue jumps an older player;
 *  - among regions the selection with the smallest sum of queue positions
 *    wins (the oldest group), ties broken by lower worst-case RTT;
 *  - the match's region is then the region common to ALL chosen players
 *    with the lowest worst-case RTT (ties: name order), which may beat the
 *    region used to pick them.
 * Parties (issue 26; a candidate whose party_id is set and party_size > 1):
 * a party is one unit, all of it or none of it, and always on one team.
 *  - An anchor in a party forms only when every ticket of its party
 *    (party_size of them) is in the working set and eligible with it;
 *    otherwise the whole party present is excluded (NOT_ENOUGH).
 *  - While the working set holds any party, the partners are picked in
 *    queue order by units (the anchor's party first, then each solo or
 *    whole party in turn), a party taken only when it fits the places left
 *    and the units chosen so far still split into two teams of n with no
 *    party across them (with solos filling the rest); for ranked the
 *    eligibles are the ones inside the anchor's tolerance as always, so a
 *    party anchor's tolerance is the solo formula of its own wait: it
 *    widens no faster than a solo player's.
 *  - The team search below only considers splits that keep every party
 *    on one side; a party's members count with their own ratings.
 * Without parties in the working set all of this is inert (the rules
 * above are unchanged).
 * Teams: an exact search over every split into two teams of n (at most
 * C(15,7) = 6435 for n = 8) minimises |mean rating 0 - mean rating 1|;
 * ties keep the first split found, so the result is deterministic. The
 * anchor is always in team 0.
 *
 * Refusals say whom to drop before retrying, so one bad ticket never
 * blocks the queue head:
 *   NOT_ENOUGH        the anchor's build/protocol group holds fewer distinct
 *                     players than one match needs: the whole group is
 *                     excluded (none of them can match in this pass); or
 *                     (ranked) too few within the anchor's tolerance: the
 *                     anchor is excluded.
 *   NO_COMMON_REGION  enough compatible players, but no region reaches
 *                     enough of them together with the anchor: the anchor
 *                     is excluded.
 *   QUEUE_SHORT       fewer candidates remain than one match needs: the
 *                     pass is over (nothing to exclude).
 *
 * The attempt budget of a pass (SPEC 6 "at most 8 attempts"): at most
 * CC_FORMATION_MAX_FAILED_CLAIMS claims that fail (a lost race costs a
 * transaction) per pass. Refusals are pure CPU (microseconds) and each one
 * removes at least one candidate, so they are bounded by the pass size
 * (at most CC_FORMATION_MAX_CANDIDATES) rather than by 8: counting them
 * against 8 would let nine unmatchable tickets at the head (for example
 * nine 2400-rated ranked players at night) block everyone behind them for
 * as long as they keep heartbeating.
 *
 * Cost: cc_formation_prepare interns builds and players (through hash
 * tables) and regions into small integers once per pass, so forming is
 * integer work and nothing allocates. A pass over 200 mixed candidates
 * costs tens of microseconds for 1v1 and 3v3, a few hundred for 8v8 (the
 * exact team search); tests/bench/formation.c measures it. Each refused
 * anchor scans the working set behind it, so a working set of n tickets
 * none of which can match costs O(n^2) integer steps (about a millisecond
 * at 1024). The workspace is large (about 160 KiB): keep one per matcher,
 * or static, not on a small stack.
 */
#ifndef CC_FORMATION_H
#define CC_FORMATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "game/candidate.h"
#include "sys/cc.h"

#define CC_FORMATION_TEAMS 2                /* every playlist is two teams */
#define CC_FORMATION_MAX_TEAM_SIZE 8
#define CC_FORMATION_MAX_PLAYERS (CC_FORMATION_TEAMS * CC_FORMATION_MAX_TEAM_SIZE)
#define CC_FORMATION_MAX_CANDIDATES 1024    /* per workspace: a pass's whole working set (game/queue_pass.h) */
#define CC_FORMATION_MAX_REGIONS 32         /* distinct regions per pass; more are ignored */
#define CC_FORMATION_MAX_FAILED_CLAIMS 8    /* lost claims per pass before it gives up */
#define CC_FORMATION_DEFAULT_MAX_RTT_MS 100.0
#define CC_FORMATION_SOLO UINT16_MAX              /* ws->party of a solo ticket */

/*
 * Who is matched (issue 25). GREEDY is the rule above. PAIRING keeps the
 * anchor (the oldest ticket still in the set anchors, refusals are the
 * same, so no ticket waits behind a younger one that could have formed with
 * it) and changes two things for ranked:
 *  - partners: the closest in rating among ALL the anchor's eligibles (not
 *    among the oldest 2(2n-1)), ties older first;
 *  - a bounded hold-out: while the anchor has waited less than
 *    tolerance_hold_s its tolerance stays at tolerance_start (a poor but
 *    acceptable pair waits for a better partner), then it widens at
 *    tolerance_growth_per_s from the end of the hold:
 *        tolerance = min(cap, start + growth * max(0, wait - hold)).
 *    With hold 0 the tolerance is GREEDY's formula. So no pair is ever
 *    wider than the anchor's tolerance, and no hold-out lasts longer than
 *    tolerance_hold_s (afterwards it is GREEDY's widening, only later).
 * Casual (no rating) is the same under both rules.
 *
 * SWEEP (issue 25, cc-matcher's default) pairs neighbours in rating order
 * before any anchor forms. For ranked, cc_formation_pass first sorts the
 * working set by (build/protocol group, rating, queue order) and walks it:
 * each run of 2n consecutive tickets that are one group, distinct players,
 * share a region, and lie within the tolerance of their oldest ticket (the
 * anchor of that match, SPEC 6's |rating - anchor.rating| <= tolerance)
 * forms a match and the walk goes on behind it; otherwise the walk moves
 * one ticket on. For 1v1 that is the sorted sweep that pairs neighbours, so
 * a tight pair is never split to give the oldest ticket a wide one. Then
 * the anchor loop runs over whoever is left, with PAIRING's nearest pick
 * and no hold, so a pass still ends only when no valid match remains.
 * Teams are balanced by the same exact split as every rule. Casual is
 * GREEDY.
 *
 * Widening that reacts to the arrival rate (any rule; rate_reference_per_s
 * 0 turns it off): the growth is multiplied by
 *     factor = clamp(rate_reference_per_s / arrival_rate, 1/MAX, MAX)
 * (MAX = CC_FORMATION_MAX_RATE_FACTOR), where arrival_rate is the queue's
 * recent arrivals per second (ws->arrival_rate_per_s, measured by
 * game/queue_pass.h from the tickets it reads; unknown: factor 1). A thin
 * queue widens faster, because waiting there does not bring a better
 * partner; a busy one widens slower, because one does. At the reference
 * rate the growth is the playlist's.
 */
enum cc_formation_rule {
	CC_FORMATION_RULE_GREEDY = 0,  /* zeroed params stay the original rule */
	CC_FORMATION_RULE_PAIRING = 1,
	CC_FORMATION_RULE_SWEEP = 2,
};
#define CC_FORMATION_MAX_HOLD_S 120.0 /* tolerance_hold_s bound */
#define CC_FORMATION_MAX_RATE_FACTOR 8.0   /* the arrival rate multiplies growth by 1/8 .. 8 */
#define CC_FORMATION_MAX_RATE_REFERENCE 1000.0 /* rate_reference_per_s bound */
#define CC_FORMATION_DEFAULT_RATE_REFERENCE 0.4 /* cc-matcher's default, chosen with queue_sim (README) */

/* "greedy", "pairing", "sweep" (flags and reports), or NULL outside the enum. */
const char *cc_formation_rule_name(enum cc_formation_rule r);

/* The rule named name, into *out; false when name is none of the above. */
bool cc_formation_rule_parse(const char *name, enum cc_formation_rule *out);

struct cc_formation_params {
	int team_size;                 /* players per team, 1..CC_FORMATION_MAX_TEAM_SIZE */
	bool ranked;                   /* apply the rating tolerance */
	double tolerance_start;        /* rating points allowed at zero wait (>= 0) */
	double tolerance_growth_per_s; /* added per second the anchor has waited (>= 0) */
	double tolerance_cap;          /* the tolerance never exceeds this (>= start) */
	double max_rtt_ms;             /* > 0; SPEC 6: 100 */
	enum cc_formation_rule rule;   /* GREEDY (0) or PAIRING */
	double tolerance_hold_s;       /* PAIRING: seconds the tolerance stays at start, 0..CC_FORMATION_MAX_HOLD_S (else 0) */
	double rate_reference_per_s;   /* arrivals/s below which growth speeds up, 0..MAX_RATE_REFERENCE (0: off) */
};

enum cc_formation_outcome {
	CC_FORMATION_FORMED,           /* match holds a formation to claim */
	CC_FORMATION_QUEUE_SHORT,      /* fewer candidates left than one match needs */
	CC_FORMATION_NOT_ENOUGH,       /* the anchor lacks enough compatible players */
	CC_FORMATION_NO_COMMON_REGION, /* compatible players exist, but no shared region */
};

/* One formed match; indices point into the candidate array of the pass. */
struct cc_formation {
	size_t n_players;                                 /* 2 * team_size */
	uint16_t index[CC_FORMATION_MAX_PLAYERS];         /* anchor first, then by queue order */
	uint8_t team[CC_FORMATION_MAX_PLAYERS];           /* team[i] of index[i]: 0 or 1 */
	char region[CC_CANDIDATE_REGION_MAX + 1];         /* common to all, lowest worst RTT */
	double worst_rtt_ms;                              /* highest RTT to region among them */
	double rating_spread;                             /* max rating - min rating */
	double team_mean[CC_FORMATION_TEAMS];             /* mean rating of each team */
	double tolerance;                                 /* anchor's tolerance (ranked), else 0 */
};

struct cc_formation_result {
	enum cc_formation_outcome outcome;
	struct cc_formation match;                   /* FORMED only */
	size_t n_exclude;                            /* refusals: drop these, then retry */
	uint16_t exclude[CC_FORMATION_MAX_CANDIDATES];
};

/*
 * Everything a pass keeps per candidate, interned to small integers. The
 * caller owns it (no pointers to free); cc_formation_prepare fills it.
 */
struct cc_formation_workspace {
	const struct cc_candidate *cands;             /* the pass's candidates (not owned) */
	size_t n;                                     /* how many */
	int64_t now_ms;                               /* PostgreSQL's now() for this pass */
	struct cc_formation_params params;
	size_t n_regions;                             /* entries used in region_name */
	char region_name[CC_FORMATION_MAX_REGIONS][CC_CANDIDATE_REGION_MAX + 1];
	unsigned claim_budget;                        /* lost claims cc_formation_pass may take (prepare: MAX_FAILED_CLAIMS) */
	double arrival_rate_per_s;                    /* the queue's recent arrivals/s; < 0 unknown (prepare: -1) */
	bool out[CC_FORMATION_MAX_CANDIDATES];        /* claimed, excluded or unusable */
	uint16_t group[CC_FORMATION_MAX_CANDIDATES];  /* build + protocol class */
	uint16_t player[CC_FORMATION_MAX_CANDIDATES]; /* player identity class */
	uint32_t reach[CC_FORMATION_MAX_CANDIDATES];  /* bit r: RTT to region r <= max_rtt_ms */
	uint16_t party[CC_FORMATION_MAX_CANDIDATES];  /* party class (its first ticket), CC_FORMATION_SOLO when solo */
	uint8_t party_size[CC_FORMATION_MAX_CANDIDATES]; /* tickets of the party (1 when solo) */
	bool has_parties;                             /* some candidate is in a party */
	float rtt[CC_FORMATION_MAX_CANDIDATES][CC_FORMATION_MAX_REGIONS]; /* valid where reach has the bit */
};

/* True when p is usable (ranges above); the matcher checks it at start-up. */
bool cc_formation_params_valid(const struct cc_formation_params *p);

/* The anchor's rating tolerance after waiting wait_ms (negative counts as 0; the hold counts, see rule). */
double cc_formation_tolerance(const struct cc_formation_params *p, int64_t wait_ms);

/* The growth multiplier at arrival_rate_per_s (see above; 1 when off or the rate is unknown, < 0). */
double cc_formation_rate_factor(const struct cc_formation_params *p, double arrival_rate_per_s);

/* cc_formation_tolerance with the growth multiplied by cc_formation_rate_factor(p, arrival_rate_per_s). */
double cc_formation_tolerance_at(const struct cc_formation_params *p, int64_t wait_ms, double arrival_rate_per_s);

/*
 * Prepares ws over cands[0..n) (oldest first) at now_ms. Candidates that
 * are expired or reach no region within max_rtt_ms start out of the
 * working set. ws->claim_budget starts at CC_FORMATION_MAX_FAILED_CLAIMS; a
 * caller that spreads one pass over several workspaces lowers it to what
 * is left of the pass's budget; ws->arrival_rate_per_s starts at -1
 * (unknown: the widening ignores the rate) and the caller may set it before
 * forming. cands must outlive ws. Returns 0, or CC_EINVAL for invalid
 * params or n > CC_FORMATION_MAX_CANDIDATES (ws untouched).
 */
int cc_formation_prepare(struct cc_formation_workspace *ws, const struct cc_candidate *cands, size_t n,
			 int64_t now_ms, const struct cc_formation_params *p) CC_MUST_CHECK;

/* Takes candidate i out of the working set (claimed or excluded). */
void cc_formation_exclude(struct cc_formation_workspace *ws, size_t i);

/* Candidates still in the working set. */
size_t cc_formation_remaining(const struct cc_formation_workspace *ws);

/*
 * Forms one match anchored at the oldest candidate still in the working
 * set, or refuses (see the top of this file). Writes *out; changes nothing
 * in ws (the caller applies claims and exclusions).
 */
void cc_formation_form(const struct cc_formation_workspace *ws, struct cc_formation_result *out);

/* Stable names for outcomes ("formed", "queue_short", ...), for logs and metrics. */
const char *cc_formation_outcome_name(enum cc_formation_outcome o);

/*
 * Claims f in the database. Returns 0 when committed; CC_ECONFLICT when the
 * claim was lost (some tickets were taken, gone or changed): it marks the
 * lost ones in lost[i] (i indexes f->index) and the pass excludes them and
 * carries on (marking none means "exclude them all"); any other code stops
 * the pass and is returned by cc_formation_pass.
 */
typedef int (*cc_formation_claim_fn)(void *ctx, const struct cc_formation *f,
				     bool lost[CC_FORMATION_MAX_PLAYERS]);

struct cc_formation_pass_stats {
	unsigned formed;                  /* claims committed */
	unsigned refused_not_enough;      /* NOT_ENOUGH refusals */
	unsigned refused_no_region;       /* NO_COMMON_REGION refusals */
	unsigned lost_claims;             /* claims that returned CC_ECONFLICT */
	unsigned excluded;                /* candidates dropped by refusals and lost claims */
	unsigned swept;                   /* of formed: matches SWEEP's rating sweep claimed */
	bool out_of_attempts;             /* stopped after CC_FORMATION_MAX_FAILED_CLAIMS lost claims */
};

/*
 * One pass over a prepared workspace (SWEEP, ranked: the rating sweep
 * first, see the rule above): form, claim, remove, repeat until the
 * queue is short, every remaining anchor was refused, or the failed-claim
 * budget (ws->claim_budget) is spent. *stats (zeroed here) says what happened, also on error.
 * Returns 0, or the claim callback's error (the pass stops at once; what
 * was claimed before stays claimed).
 */
int cc_formation_pass(struct cc_formation_workspace *ws, cc_formation_claim_fn claim, void *ctx,
		      struct cc_formation_pass_stats *stats) CC_MUST_CHECK;

#endif
