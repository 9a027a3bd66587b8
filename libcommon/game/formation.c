#include "game/formation.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys/hash.h"
#include "sys/banned.h"

bool cc_formation_params_valid(const struct cc_formation_params *p)
{
	return p && p->team_size >= 1 && p->team_size <= CC_FORMATION_MAX_TEAM_SIZE &&
	       isfinite(p->tolerance_start) && p->tolerance_start >= 0 && isfinite(p->tolerance_growth_per_s) &&
	       p->tolerance_growth_per_s >= 0 && isfinite(p->tolerance_cap) &&
	       p->tolerance_cap >= p->tolerance_start && isfinite(p->max_rtt_ms) && p->max_rtt_ms > 0 &&
	       cc_formation_rule_name(p->rule) != NULL && isfinite(p->tolerance_hold_s) &&
	       p->tolerance_hold_s >= 0 && p->tolerance_hold_s <= CC_FORMATION_MAX_HOLD_S &&
	       (p->rule == CC_FORMATION_RULE_PAIRING || p->tolerance_hold_s == 0) &&
	       isfinite(p->rate_reference_per_s) && p->rate_reference_per_s >= 0 &&
	       p->rate_reference_per_s <= CC_FORMATION_MAX_RATE_REFERENCE;
}

const char *cc_formation_rule_name(enum cc_formation_rule r)
{
	switch (r) {
	case CC_FORMATION_RULE_GREEDY:
		return "greedy";
	case CC_FORMATION_RULE_PAIRING:
		return "pairing";
	case CC_FORMATION_RULE_SWEEP:
		return "sweep";
	}
	return NULL;
}

bool cc_formation_rule_parse(const char *name, enum cc_formation_rule *out)
{
	static const enum cc_formation_rule all[] = { CC_FORMATION_RULE_GREEDY, CC_FORMATION_RULE_PAIRING,
						      CC_FORMATION_RULE_SWEEP };
	for (size_t i = 0; name && i < CC_ARRAY_LEN(all); i++)
		if (strcmp(name, cc_formation_rule_name(all[i])) == 0) {
			*out = all[i];
			return true;
		}
	return false;
}

double cc_formation_rate_factor(const struct cc_formation_params *p, double arrival_rate_per_s)
{
	if (!(p->rate_reference_per_s > 0) || !(arrival_rate_per_s >= 0))
		return 1.0; /* off, or unknown (NaN counts as unknown) */
	if (arrival_rate_per_s * CC_FORMATION_MAX_RATE_FACTOR <= p->rate_reference_per_s)
		return CC_FORMATION_MAX_RATE_FACTOR; /* also a rate of 0: nobody arrived lately */
	double f = p->rate_reference_per_s / arrival_rate_per_s;
	return f > 1.0 / CC_FORMATION_MAX_RATE_FACTOR ? f : 1.0 / CC_FORMATION_MAX_RATE_FACTOR;
}

double cc_formation_tolerance_at(const struct cc_formation_params *p, int64_t wait_ms, double arrival_rate_per_s)
{
	double wait_s = wait_ms > 0 ? (double)wait_ms / 1000.0 : 0.0;
	wait_s = wait_s > p->tolerance_hold_s ? wait_s - p->tolerance_hold_s : 0.0; /* the hold-out (0: not PAIRING) */
	double t = p->tolerance_start +
		   p->tolerance_growth_per_s * cc_formation_rate_factor(p, arrival_rate_per_s) * wait_s;
	return t < p->tolerance_cap ? t : p->tolerance_cap;
}

double cc_formation_tolerance(const struct cc_formation_params *p, int64_t wait_ms)
{
	return cc_formation_tolerance_at(p, wait_ms, -1.0);
}

const char *cc_formation_outcome_name(enum cc_formation_outcome o)
{
	switch (o) {
	case CC_FORMATION_FORMED:
		return "formed";
	case CC_FORMATION_QUEUE_SHORT:
		return "queue_short";
	case CC_FORMATION_NOT_ENOUGH:
		return "not_enough";
	case CC_FORMATION_NO_COMMON_REGION:
		return "no_common_region";
	}
	return "unknown";
}

/* Index of region name in ws's table, adding it while there is room; -1 when full. */
static int region_intern(struct cc_formation_workspace *ws, const char *name)
{
	for (size_t r = 0; r < ws->n_regions; r++)
		if (strcmp(ws->region_name[r], name) == 0)
			return (int)r;
	if (ws->n_regions == CC_FORMATION_MAX_REGIONS)
		return -1;
	snprintf(ws->region_name[ws->n_regions], sizeof ws->region_name[0], "%s", name);
	return (int)ws->n_regions++;
}

#define SLOTS 2048 /* open-addressing tables: > 2 x CC_FORMATION_MAX_CANDIDATES */
#define NO_SLOT UINT16_MAX

static bool same_group(const struct cc_candidate *a, const struct cc_candidate *b)
{
	return a->protocol_version == b->protocol_version && strcmp(a->build, b->build) == 0;
}

/*
 * Interns build+protocol and player identity of candidate i: the class is
 * the index of the first candidate with the same value. Both go through a
 * hash table (groups, players), which keeps a pass linear in the number
 * of candidates even when a wall of tickets has a build each.
 */
static void intern_identity(struct cc_formation_workspace *ws, size_t i, uint16_t *groups, uint16_t *players)
{
	const struct cc_candidate *c = &ws->cands[i];
	uint32_t h = cc_hash_fnv1a32(c->build, strlen(c->build)) ^ (uint32_t)c->protocol_version * 2654435761u;
	for (;; h++) {
		uint16_t *slot = &groups[h % SLOTS];
		if (*slot == NO_SLOT) {
			*slot = (uint16_t)i;
			ws->group[i] = (uint16_t)i;
			break;
		}
		if (same_group(&ws->cands[*slot], c)) {
			ws->group[i] = ws->group[*slot];
			break;
		}
	}
	for (h = cc_hash_fnv1a32(c->player_id, strlen(c->player_id));; h++) {
		uint16_t *slot = &players[h % SLOTS];
		if (*slot == NO_SLOT) {
			*slot = (uint16_t)i;
			ws->player[i] = (uint16_t)i;
			return;
		}
		if (strcmp(ws->cands[*slot].player_id, c->player_id) == 0) {
			ws->player[i] = ws->player[*slot];
			return;
		}
	}
}

/* Interns candidate i's party (issue 26): the class is the index of the party's first ticket. */
static void intern_party(struct cc_formation_workspace *ws, size_t i, uint16_t *parties)
{
	const struct cc_candidate *c = &ws->cands[i];
	ws->party[i] = CC_FORMATION_SOLO;
	ws->party_size[i] = 1;
	if (!c->party_id[0] || c->party_size <= 1)
		return;
	ws->has_parties = true;
	ws->party_size[i] = (uint8_t)(c->party_size < CC_FORMATION_MAX_TEAM_SIZE ? c->party_size
									  : CC_FORMATION_MAX_TEAM_SIZE);
	for (uint32_t h = cc_hash_fnv1a32(c->party_id, strlen(c->party_id));; h++) {
		uint16_t *slot = &parties[h % SLOTS];
		if (*slot == NO_SLOT) {
			*slot = (uint16_t)i;
			ws->party[i] = (uint16_t)i;
			return;
		}
		if (strcmp(ws->cands[*slot].party_id, c->party_id) == 0) {
			ws->party[i] = ws->party[*slot];
			return;
		}
	}
}

int cc_formation_prepare(struct cc_formation_workspace *ws, const struct cc_candidate *cands, size_t n,
			 int64_t now_ms, const struct cc_formation_params *p)
{
	if (!ws || (!cands && n > 0) || n > CC_FORMATION_MAX_CANDIDATES || !cc_formation_params_valid(p))
		return CC_EINVAL;
	uint16_t groups[SLOTS], players[SLOTS], parties[SLOTS];
	memset(groups, 0xff, sizeof groups); /* NO_SLOT */
	memset(players, 0xff, sizeof players);
	memset(parties, 0xff, sizeof parties);
	ws->has_parties = false;
	ws->cands = cands;
	ws->n = n;
	ws->now_ms = now_ms;
	ws->params = *p;
	ws->n_regions = 0;
	ws->claim_budget = CC_FORMATION_MAX_FAILED_CLAIMS;
	ws->arrival_rate_per_s = -1.0;
	for (size_t i = 0; i < n; i++) {
		const struct cc_candidate *c = &cands[i];
		intern_identity(ws, i, groups, players);
		intern_party(ws, i, parties);
		ws->reach[i] = 0;
		for (size_t k = 0; k < c->n_rtt && k < CC_CANDIDATE_MAX_REGIONS; k++) {
			if (!(c->rtt[k].rtt_ms >= 0 && c->rtt[k].rtt_ms <= p->max_rtt_ms))
				continue; /* too far (or NaN): this region does not count */
			int r = region_intern(ws, c->rtt[k].region);
			if (r < 0)
				continue;
			ws->reach[i] |= UINT32_C(1) << r;
			ws->rtt[i][r] = (float)c->rtt[k].rtt_ms;
		}
		/* Expired (a stale index entry) or reaching nowhere: never usable. */
		ws->out[i] = c->expires_at_ms <= now_ms || ws->reach[i] == 0;
	}
	return 0;
}

void cc_formation_exclude(struct cc_formation_workspace *ws, size_t i)
{
	if (i < ws->n)
		ws->out[i] = true;
}

size_t cc_formation_remaining(const struct cc_formation_workspace *ws)
{
	size_t left = 0;
	for (size_t i = 0; i < ws->n; i++)
		left += !ws->out[i];
	return left;
}

/* True when player class p is among chosen[0..n). */
static bool player_taken(const struct cc_formation_workspace *ws, const uint16_t *chosen, size_t n, uint16_t p)
{
	for (size_t k = 0; k < n; k++)
		if (ws->player[chosen[k]] == p)
			return true;
	return false;
}

/*
 * Picks want partners for anchor a reaching region r from the eligibles
 * elig[0..n_elig) (queue order): casual the oldest ones, ranked the closest
 * in rating among the oldest 2*want (ties: older first). Writes them to
 * pick in queue order and returns how many were found (< want: region
 * infeasible).
 */
static size_t pick_in_region(const struct cc_formation_workspace *ws, size_t a, int r, const uint16_t *elig,
			     size_t n_elig, size_t want, uint16_t *pick)
{
	uint16_t window[2 * CC_FORMATION_MAX_PLAYERS];
	size_t cap = ws->params.ranked ? 2 * want : want;
	size_t n_win = 0;
	for (size_t k = 0; k < n_elig && n_win < cap; k++) {
		uint16_t i = elig[k];
		if ((ws->reach[i] >> r & 1u) && !player_taken(ws, window, n_win, ws->player[i]))
			window[n_win++] = i;
	}
	if (n_win < want)
		return n_win;
	if (!ws->params.ranked || n_win == want) {
		memcpy(pick, window, want * sizeof *pick);
		return want;
	}
	/* Ranked: keep the want closest ratings; a stable selection keeps older ones on ties. */
	bool used[2 * CC_FORMATION_MAX_PLAYERS] = { false };
	double anchor_rating = ws->cands[a].rating;
	for (size_t got = 0; got < want; got++) {
		size_t best = n_win;
		double best_d = 0;
		for (size_t k = 0; k < n_win; k++) {
			double d = fabs(ws->cands[window[k]].rating - anchor_rating);
			if (!used[k] && (best == n_win || d < best_d)) {
				best = k;
				best_d = d;
			}
		}
		used[best] = true;
	}
	size_t got = 0;
	for (size_t k = 0; k < n_win; k++)
		if (used[k])
			pick[got++] = window[k];
	return got;
}

/*
 * PAIRING's pick (ranked): the want players closest in rating to anchor a
 * among ALL eligibles reaching r, one ticket per player, ties to the older.
 * One scan keeping the best want so far (insertion into a list of at most
 * 15), so O(n_elig * want) per region, like GREEDY's scan. Writes them to
 * pick in queue order; returns how many were found.
 */
static size_t pick_nearest(const struct cc_formation_workspace *ws, size_t a, int r, const uint16_t *elig,
			   size_t n_elig, size_t want, uint16_t *pick)
{
	uint16_t best[CC_FORMATION_MAX_PLAYERS];
	double best_d[CC_FORMATION_MAX_PLAYERS];
	size_t n_best = 0;
	double anchor_rating = ws->cands[a].rating;
	for (size_t k = 0; k < n_elig; k++) {
		uint16_t i = elig[k];
		if (!(ws->reach[i] >> r & 1u))
			continue;
		double d = fabs(ws->cands[i].rating - anchor_rating);
		size_t at = n_best; /* where i goes: after every entry at least as close (older wins ties) */
		while (at > 0 && best_d[at - 1] > d)
			at--;
		size_t same = n_best; /* the same player already kept? */
		for (size_t j = 0; j < n_best; j++)
			if (ws->player[best[j]] == ws->player[i])
				same = j;
		if (same < n_best) {
			if (same < at)
				continue; /* the kept ticket is at least as close */
			/* Drop the kept ticket of this player; i takes a place at or before it. */
			memmove(best + same, best + same + 1, (n_best - same - 1) * sizeof *best);
			memmove(best_d + same, best_d + same + 1, (n_best - same - 1) * sizeof *best_d);
			n_best--;
		}
		if (at >= want)
			continue;
		size_t tail = n_best < want ? n_best : want - 1; /* entries kept after insertion, from at */
		memmove(best + at + 1, best + at, (tail - at) * sizeof *best);
		memmove(best_d + at + 1, best_d + at, (tail - at) * sizeof *best_d);
		best[at] = i;
		best_d[at] = d;
		n_best = tail + 1;
	}
	/* Back to queue order (elig is in queue order, so the indices sort it). */
	for (size_t x = 1; x < n_best; x++)
		for (size_t y = x; y > 0 && best[y - 1] > best[y]; y--) {
			uint16_t t = best[y];
			best[y] = best[y - 1];
			best[y - 1] = t;
		}
	memcpy(pick, best, n_best * sizeof *pick);
	return n_best;
}

/* ---- parties (issue 26) ---------------------------------------------------- */

/* The in-set tickets of party class cls from index from on, in queue order, at most max; returns how many. */
static size_t party_tickets(const struct cc_formation_workspace *ws, uint16_t cls, size_t from, uint16_t *out,
			    size_t max)
{
	size_t n = 0;
	for (size_t i = from; i < ws->n && n < max; i++)
		if (!ws->out[i] && ws->party[i] == cls)
			out[n++] = (uint16_t)i;
	return n;
}

/*
 * Whether units of party sizes sizes[0..n) (sizes[0]: the anchor's unit,
 * which stays in team 0) can be split into two teams of at most team_size
 * each, solos filling the rest: some subset with the anchor's unit sums to
 * s0 with s0 <= team_size and total - s0 <= team_size.
 */
static bool units_split(const uint8_t *sizes, size_t n, size_t team_size)
{
	uint32_t sums = UINT32_C(1) << sizes[0]; /* bit s: team 0 can hold s party players */
	size_t total = sizes[0];
	for (size_t k = 1; k < n; k++) {
		sums |= sums << sizes[k];
		total += sizes[k];
	}
	for (size_t s = 0; s <= team_size; s++)
		if ((sums >> s & 1u) && total - s <= team_size)
			return true;
	return false;
}

/*
 * The partners of anchor a reaching region r by units in queue order (see
 * formation.h): the anchor's party mates first, then each solo or whole
 * party that fits and keeps a split possible. elig_mark[i]: i is eligible
 * with the anchor. Returns how many were picked (< want: region infeasible).
 */
static size_t pick_units(const struct cc_formation_workspace *ws, size_t a, int r, const bool *elig_mark,
			 const uint16_t *elig, size_t n_elig, size_t want, uint16_t *pick)
{
	uint8_t sizes[CC_FORMATION_MAX_PLAYERS];
	uint16_t mates[CC_FORMATION_MAX_TEAM_SIZE];
	bool taken[CC_FORMATION_MAX_CANDIDATES];
	size_t n_units = 1, got = 0, team_size = (size_t)ws->params.team_size;

	sizes[0] = 1;
	if (ws->party[a] != CC_FORMATION_SOLO) {
		size_t m = party_tickets(ws, ws->party[a], a + 1, mates, CC_FORMATION_MAX_TEAM_SIZE);
		for (size_t k = 0; k < m; k++) {
			if (!(ws->reach[mates[k]] >> r & 1u))
				return 0;
			pick[got++] = mates[k];
		}
		sizes[0] = (uint8_t)(m + 1);
	}
	memset(taken, 0, ws->n * sizeof *taken);
	for (size_t k = 0; k < got; k++)
		taken[pick[k]] = true;
	for (size_t k = 0; k < n_elig && got < want; k++) {
		uint16_t i = elig[k];
		if (taken[i] || !(ws->reach[i] >> r & 1u) || player_taken(ws, pick, got, ws->player[i]) ||
		    ws->player[i] == ws->player[a])
			continue;
		if (ws->party[i] == CC_FORMATION_SOLO) {
			pick[got++] = i;
			taken[i] = true;
			continue;
		}
		/* A party: all of it (every ticket here, eligible, reaching r), fitting, still splittable. */
		size_t m = party_tickets(ws, ws->party[i], 0, mates, CC_FORMATION_MAX_TEAM_SIZE);
		bool whole = m == ws->party_size[i] && got + m <= want && m <= team_size;
		for (size_t j = 0; whole && j < m; j++)
			whole = elig_mark[mates[j]] && (ws->reach[mates[j]] >> r & 1u) && !taken[mates[j]] &&
				!player_taken(ws, pick, got, ws->player[mates[j]]) && ws->player[mates[j]] != ws->player[a];
		for (size_t j = 0; j < m; j++)
			taken[mates[j]] = true; /* decided once, whatever the answer */
		if (!whole)
			continue;
		sizes[n_units] = (uint8_t)m;
		if (!units_split(sizes, n_units + 1, team_size))
			continue;
		n_units++;
		for (size_t j = 0; j < m; j++)
			pick[got++] = mates[j];
	}
	/* Back to queue order (indices are queue order). */
	for (size_t x = 1; x < got; x++)
		for (size_t y = x; y > 0 && pick[y - 1] > pick[y]; y--) {
			uint16_t t = pick[y];
			pick[y] = pick[y - 1];
			pick[y - 1] = t;
		}
	return got;
}

/* The worst RTT to region r over players[0..n) (all must reach r). */
static double worst_rtt(const struct cc_formation_workspace *ws, const uint16_t *players, size_t n, int r)
{
	double worst = 0;
	for (size_t k = 0; k < n; k++)
		if (ws->rtt[players[k]][r] > worst)
			worst = ws->rtt[players[k]][r];
	return worst;
}

/*
 * Splits f's players into two teams of team_size with the smallest
 * difference of mean rating: player 0 stays in team 0 and every choice of
 * team_size - 1 team mates among the rest is tried (the other half is the
 * mirror image). The first best split wins.
 */
static bool balance_teams(const struct cc_formation_workspace *ws, struct cc_formation *f)
{
	size_t n = f->n_players, k = n / 2 - 1;
	double rating[CC_FORMATION_MAX_PLAYERS], total = 0;
	size_t comb[CC_FORMATION_MAX_TEAM_SIZE];
	uint32_t best_mask = 1;
	double best = INFINITY;
	uint32_t party_mask[CC_FORMATION_MAX_PLAYERS]; /* per position: the positions of its party (0: solo) */

	for (size_t i = 0; i < n; i++) {
		rating[i] = ws->cands[f->index[i]].rating;
		total += rating[i];
		party_mask[i] = 0;
		for (size_t j = 0; ws->party[f->index[i]] != CC_FORMATION_SOLO && j < n; j++)
			if (ws->party[f->index[j]] == ws->party[f->index[i]])
				party_mask[i] |= UINT32_C(1) << j;
	}
	for (size_t j = 0; j < k; j++)
		comb[j] = j + 1; /* first combination: players 1..k */
	for (;;) {
		double team0 = rating[0];
		uint32_t mask = 1;
		for (size_t j = 0; j < k; j++) {
			team0 += rating[comb[j]];
			mask |= UINT32_C(1) << comb[j];
		}
		double diff = fabs(2 * team0 - total);
		bool splits_party = false; /* a party across the teams: not a split we may use */
		for (size_t i = 0; i < n && !splits_party; i++)
			splits_party = party_mask[i] && (mask & party_mask[i]) && (mask & party_mask[i]) != party_mask[i];
		if (!splits_party && diff < best) {
			best = diff;
			best_mask = mask;
		}
		/* Next combination of k out of 1..n-1 in lexicographic order. */
		size_t j = k;
		while (j > 0 && comb[j - 1] == n - 1 - (k - j))
			j--;
		if (j == 0)
			break;
		comb[j - 1]++;
		for (size_t m = j; m < k; m++)
			comb[m] = comb[m - 1] + 1;
	}
	double sum[CC_FORMATION_TEAMS] = { 0, 0 };
	for (size_t i = 0; i < n; i++) {
		f->team[i] = (best_mask >> i & 1u) ? 0 : 1;
		sum[f->team[i]] += rating[i];
	}
	f->team_mean[0] = sum[0] / (double)(n / 2);
	f->team_mean[1] = sum[1] / (double)(n / 2);
	return best != INFINITY;
}

/* Fills the refusal for anchor a: exclude the anchor, or its whole small group. */
static void refuse(const struct cc_formation_workspace *ws, size_t a, enum cc_formation_outcome why,
		   bool whole_group, struct cc_formation_result *out)
{
	out->outcome = why;
	out->n_exclude = 0;
	out->exclude[out->n_exclude++] = (uint16_t)a;
	if (!whole_group)
		return;
	for (size_t i = a + 1; i < ws->n; i++)
		if (!ws->out[i] && ws->group[i] == ws->group[a])
			out->exclude[out->n_exclude++] = (uint16_t)i;
}

static void finish_match(const struct cc_formation_workspace *ws, struct cc_formation *f);

void cc_formation_form(const struct cc_formation_workspace *ws, struct cc_formation_result *out)
{
	const struct cc_formation_params *p = &ws->params;
	size_t need = (size_t)p->team_size * CC_FORMATION_TEAMS, want = need - 1;
	uint16_t elig[CC_FORMATION_MAX_CANDIDATES];
	uint16_t group_seen[CC_FORMATION_MAX_PLAYERS], compat_seen[CC_FORMATION_MAX_PLAYERS];
	size_t n_elig = 0, n_group = 0, n_compat = 0, a = ws->n;

	out->n_exclude = 0;
	if (cc_formation_remaining(ws) < need) {
		out->outcome = CC_FORMATION_QUEUE_SHORT;
		return;
	}
	for (size_t i = 0; i < ws->n && a == ws->n; i++)
		if (!ws->out[i])
			a = i;
	const struct cc_candidate *anchor = &ws->cands[a];
	double tol = p->ranked ? cc_formation_tolerance_at(p, ws->now_ms - anchor->queued_at_ms, ws->arrival_rate_per_s)
			       : 0;

	/* Everyone before a is out, so the rest of the working set follows it. */
	for (size_t i = a + 1; i < ws->n; i++) {
		if (ws->out[i] || ws->group[i] != ws->group[a] || ws->player[i] == ws->player[a])
			continue;
		/* Distinct players counted up to what one match needs. */
		if (n_group < want && !player_taken(ws, group_seen, n_group, ws->player[i]))
			group_seen[n_group++] = (uint16_t)i;
		if (p->ranked && fabs(ws->cands[i].rating - anchor->rating) > tol)
			continue;
		if (n_compat < want && !player_taken(ws, compat_seen, n_compat, ws->player[i]))
			compat_seen[n_compat++] = (uint16_t)i;
		if (ws->reach[i] & ws->reach[a])
			elig[n_elig++] = (uint16_t)i;
	}
	if (n_group < want) {
		refuse(ws, a, CC_FORMATION_NOT_ENOUGH, true, out);
		return;
	}
	if (n_compat < want) {
		refuse(ws, a, CC_FORMATION_NOT_ENOUGH, false, out);
		return;
	}
	bool elig_mark[CC_FORMATION_MAX_CANDIDATES];
	if (ws->has_parties) {
		memset(elig_mark, 0, ws->n * sizeof *elig_mark);
		for (size_t k = 0; k < n_elig; k++)
			elig_mark[elig[k]] = true;
	}
	if (ws->party[a] != CC_FORMATION_SOLO) {
		/* The anchor's whole party must be here and eligible with it, or none of it forms now. */
		uint16_t mates[CC_FORMATION_MAX_TEAM_SIZE];
		size_t m = party_tickets(ws, ws->party[a], a + 1, mates, CC_FORMATION_MAX_TEAM_SIZE);
		bool whole = m + 1 == ws->party_size[a] && m + 1 <= (size_t)p->team_size;
		for (size_t k = 0; whole && k < m; k++)
			whole = elig_mark[mates[k]];
		if (!whole) {
			out->outcome = CC_FORMATION_NOT_ENOUGH;
			out->n_exclude = 0;
			out->exclude[out->n_exclude++] = (uint16_t)a;
			for (size_t k = 0; k < m; k++)
				out->exclude[out->n_exclude++] = mates[k];
			return;
		}
	}

	/* Per region the anchor reaches: the fairest pick wins, then the lower worst RTT. */
	uint16_t pick[CC_FORMATION_MAX_PLAYERS], best_pick[CC_FORMATION_MAX_PLAYERS];
	double best_key = INFINITY; /* GREEDY: sum of queue positions; PAIRING (ranked): sum of rating distances */
	bool nearest = p->ranked && p->rule != CC_FORMATION_RULE_GREEDY; /* SWEEP's anchor loop picks as PAIRING */
	double best_worst = 0;
	for (int r = 0; r < (int)ws->n_regions; r++) {
		if (!(ws->reach[a] >> r & 1u))
			continue;
		size_t got = ws->has_parties ? pick_units(ws, a, r, elig_mark, elig, n_elig, want, pick)
			     : nearest	     ? pick_nearest(ws, a, r, elig, n_elig, want, pick)
					     : pick_in_region(ws, a, r, elig, n_elig, want, pick);
		if (got < want)
			continue;
		double key = 0;
		for (size_t k = 0; k < want; k++)
			key += nearest ? fabs(ws->cands[pick[k]].rating - anchor->rating) : (double)pick[k];
		double worst = worst_rtt(ws, pick, want, r);
		if (key < best_key || (key == best_key && worst < best_worst)) {
			best_key = key;
			best_worst = worst;
			memcpy(best_pick, pick, want * sizeof *pick);
		}
	}
	if (best_key == INFINITY) {
		refuse(ws, a, CC_FORMATION_NO_COMMON_REGION, false, out);
		return;
	}

	struct cc_formation *f = &out->match;
	memset(f, 0, sizeof *f);
	f->n_players = need;
	f->index[0] = (uint16_t)a;
	memcpy(f->index + 1, best_pick, want * sizeof *best_pick);
	f->tolerance = tol;
	finish_match(ws, f);
	out->outcome = CC_FORMATION_FORMED;
}

/*
 * Completes f (n_players, index[] and tolerance set; the players share a
 * region): the match region, worst RTT, rating spread and the teams.
 */
static void finish_match(const struct cc_formation_workspace *ws, struct cc_formation *f)
{
	size_t need = f->n_players;
	/* The region common to all chosen with the lowest worst-case RTT (ties: name). */
	uint32_t common = UINT32_MAX;
	for (size_t k = 0; k < need; k++)
		common &= ws->reach[f->index[k]];
	int region = -1;
	for (int r = 0; r < (int)ws->n_regions; r++) {
		if (!(common >> r & 1u))
			continue;
		double worst = worst_rtt(ws, f->index, need, r);
		if (region < 0 || worst < f->worst_rtt_ms ||
		    (worst == f->worst_rtt_ms && strcmp(ws->region_name[r], ws->region_name[region]) < 0)) {
			region = r;
			f->worst_rtt_ms = worst;
		}
	}
	if (region < 0)
		CC_BUG("formation: chosen players share no region");
	snprintf(f->region, sizeof f->region, "%s", ws->region_name[region]);

	double lo = INFINITY, hi = -INFINITY;
	for (size_t k = 0; k < need; k++) {
		double r = ws->cands[f->index[k]].rating;
		lo = r < lo ? r : lo;
		hi = r > hi ? r : hi;
	}
	f->rating_spread = hi - lo;
	if (!balance_teams(ws, f)) /* cannot happen: pick_units keeps a split possible */
		CC_BUG("formation: no split keeps every party on one team");
}

/*
 * Claims f and applies the outcome: claimed players leave ws, a lost race
 * drops the lost ones (all, if none was named), and the failed-claim budget
 * is charged. Returns 0 (stats->out_of_attempts says whether the pass must
 * stop) or the claim callback's error other than CC_ECONFLICT.
 */
static int claim_formation(struct cc_formation_workspace *ws, const struct cc_formation *f,
			   cc_formation_claim_fn claim, void *ctx, struct cc_formation_pass_stats *stats)
{
	bool lost[CC_FORMATION_MAX_PLAYERS] = { false };
	int rc = claim(ctx, f, lost);
	if (rc == 0) {
		stats->formed++;
		for (size_t k = 0; k < f->n_players; k++)
			cc_formation_exclude(ws, f->index[k]);
		return 0;
	}
	if (rc != CC_ECONFLICT)
		return rc;
	stats->lost_claims++;
	bool any = false;
	for (size_t k = 0; k < f->n_players; k++)
		any |= lost[k];
	for (size_t k = 0; k < f->n_players; k++) {
		if (lost[k] || !any) {
			cc_formation_exclude(ws, f->index[k]);
			stats->excluded++;
		}
	}
	if (stats->lost_claims >= ws->claim_budget)
		stats->out_of_attempts = true;
	return 0;
}

/* One ticket in SWEEP's order: group, then rating, then queue order. */
struct sweep_key {
	uint16_t group;
	uint16_t i;
	double rating;
};

static int sweep_cmp(const void *x, const void *y)
{
	const struct sweep_key *a = x, *b = y;
	if (a->group != b->group)
		return a->group < b->group ? -1 : 1;
	if (a->rating != b->rating)
		return a->rating < b->rating ? -1 : 1;
	return (a->i > b->i) - (a->i < b->i);
}

/*
 * True when the need tickets key[0..need) make a valid match: one group,
 * distinct players, a region all reach, every rating within the tolerance
 * of the oldest (the anchor); then *f holds it, anchor first and the rest
 * in queue order.
 */
static bool sweep_window(const struct cc_formation_workspace *ws, const struct sweep_key *key, size_t need,
			 struct cc_formation *f)
{
	uint16_t idx[CC_FORMATION_MAX_PLAYERS];
	uint32_t common = UINT32_MAX;
	for (size_t k = 0; k < need; k++) {
		if (key[k].group != key[0].group)
			return false;
		for (size_t j = 0; j < k; j++)
			if (ws->player[idx[j]] == ws->player[key[k].i])
				return false;
		idx[k] = key[k].i;
		common &= ws->reach[idx[k]];
	}
	if (common == 0)
		return false;
	for (size_t x = 1; x < need; x++) /* queue order: the oldest is the anchor */
		for (size_t y = x; y > 0 && idx[y - 1] > idx[y]; y--) {
			uint16_t t = idx[y];
			idx[y] = idx[y - 1];
			idx[y - 1] = t;
		}
	const struct cc_candidate *anchor = &ws->cands[idx[0]];
	double tol = cc_formation_tolerance_at(&ws->params, ws->now_ms - anchor->queued_at_ms, ws->arrival_rate_per_s);
	for (size_t k = 1; k < need; k++)
		if (fabs(ws->cands[idx[k]].rating - anchor->rating) > tol)
			return false;
	memset(f, 0, sizeof *f);
	f->n_players = need;
	memcpy(f->index, idx, need * sizeof *idx);
	f->tolerance = tol;
	finish_match(ws, f);
	return true;
}

/*
 * SWEEP's first phase (ranked): the working set in rating order, each run
 * of 2n neighbours that is a valid match claimed, the walk going on behind
 * it (or one ticket on). O(n log n) for the sort plus O(n * 2n) checks.
 */
static int sweep(struct cc_formation_workspace *ws, cc_formation_claim_fn claim, void *ctx,
		 struct cc_formation_pass_stats *stats)
{
	struct sweep_key key[CC_FORMATION_MAX_CANDIDATES];
	size_t n = 0, need = (size_t)ws->params.team_size * CC_FORMATION_TEAMS;
	struct cc_formation f;
	for (size_t i = 0; i < ws->n; i++)
		if (!ws->out[i])
			key[n++] = (struct sweep_key){ ws->group[i], (uint16_t)i, ws->cands[i].rating };
	qsort(key, n, sizeof *key, sweep_cmp);
	for (size_t k = 0; k + need <= n;) {
		if (!sweep_window(ws, key + k, need, &f)) {
			k++;
			continue;
		}
		unsigned formed = stats->formed;
		int rc = claim_formation(ws, &f, claim, ctx, stats);
		if (rc != 0 || stats->out_of_attempts)
			return rc;
		stats->swept += stats->formed - formed;
		k += need; /* a lost claim's survivors wait for the anchor loop */
	}
	return 0;
}

int cc_formation_pass(struct cc_formation_workspace *ws, cc_formation_claim_fn claim, void *ctx,
		      struct cc_formation_pass_stats *stats)
{
	struct cc_formation_result res;
	memset(stats, 0, sizeof *stats);
	/* A party must be taken whole; the sweep's windows of neighbours could cut one. */
	if (ws->params.ranked && ws->params.rule == CC_FORMATION_RULE_SWEEP && !ws->has_parties) {
		int rc = sweep(ws, claim, ctx, stats);
		if (rc != 0 || stats->out_of_attempts)
			return rc;
	}
	for (;;) {
		cc_formation_form(ws, &res);
		switch (res.outcome) {
		case CC_FORMATION_QUEUE_SHORT:
			return 0;
		case CC_FORMATION_NOT_ENOUGH:
		case CC_FORMATION_NO_COMMON_REGION:
			if (res.outcome == CC_FORMATION_NOT_ENOUGH)
				stats->refused_not_enough++;
			else
				stats->refused_no_region++;
			for (size_t k = 0; k < res.n_exclude; k++)
				cc_formation_exclude(ws, res.exclude[k]);
			stats->excluded += (unsigned)res.n_exclude;
			continue;
		case CC_FORMATION_FORMED:
			break;
		}
		int rc = claim_formation(ws, &res.match, claim, ctx, stats);
		if (rc != 0 || stats->out_of_attempts)
			return rc;
	}
}
