/*
 * glicko2.c - Glickman's Glicko-2 steps 1-8 (2013 revision); the domain and
 * its clamps are explained in glicko2.h.
 */
#include <math.h>
#include <stdbool.h>
#include <stddef.h>

#include "game/glicko2.h"

#include "sys/banned.h"

/* The deviation ceiling on the Glicko-2 scale. */
#define PHI_MAX (CC_GLICKO2_MAX_DEVIATION / CC_GLICKO2_SCALE)

static double clamp(double x, double lo, double hi)
{
	return x < lo ? lo : x > hi ? hi : x;
}

static bool in_range(double x, double lo, double hi)
{
	return isfinite(x) && x >= lo && x <= hi;
}

static bool deviation_valid(double rd)
{
	return isfinite(rd) && rd > 0 && rd <= CC_GLICKO2_MAX_DEVIATION;
}

bool cc_glicko2_rating_valid(const struct cc_glicko2_rating *r)
{
	return r && in_range(r->rating, CC_GLICKO2_RATING_MIN, CC_GLICKO2_RATING_MAX) &&
	       deviation_valid(r->deviation) &&
	       in_range(r->volatility, CC_GLICKO2_VOLATILITY_MIN, CC_GLICKO2_VOLATILITY_MAX);
}

static bool tau_valid(double tau)
{
	return in_range(tau, CC_GLICKO2_TAU_MIN, CC_GLICKO2_TAU_MAX);
}

/* Glickman's g(phi): how much an opponent's uncertainty dampens a game. */
static double g(double phi)
{
	return 1.0 / sqrt(1.0 + 3.0 * phi * phi / (M_PI * M_PI));
}

/* Glickman's E: expected score against an opponent (mu_j, g(phi_j)). */
static double expected(double mu, double mu_j, double g_j)
{
	return 1.0 / (1.0 + exp(-g_j * (mu - mu_j)));
}

/* Step 5's function f(x), x = ln sigma'^2; its root is the new volatility. */
struct vol_problem {
	double phi2;   /* phi^2 */
	double v;      /* estimated variance (step 3) */
	double delta2; /* delta^2 (step 4) */
	double a;      /* ln sigma^2 */
	double tau2;   /* tau^2 */
};

static double f(const struct vol_problem *p, double x)
{
	double ex = exp(x);
	double d = p->phi2 + p->v + ex;
	return ex * (p->delta2 - p->phi2 - p->v - ex) / (2.0 * d * d) - (x - p->a) / p->tau2;
}

int cc_glicko2_volatility(double phi, double v, double delta, double sigma, double tau, double *sigma_out,
			  int *iterations)
{
	if (!sigma_out || !isfinite(phi) || phi < 0 || !isfinite(v) || v <= 0 || !isfinite(delta) ||
	    !isfinite(sigma) || sigma <= 0 || !isfinite(tau) || tau <= 0)
		return CC_EINVAL;
	/* a = 2 ln sigma rather than ln(sigma^2): no underflow for tiny sigma. */
	struct vol_problem p = { phi * phi, v, delta * delta, 2.0 * log(sigma), tau * tau };
	if (!isfinite(p.delta2) || p.tau2 == 0 || !isfinite(p.tau2))
		return CC_EINVAL;
	int used = 0;
	double A = p.a, B;
	if (p.delta2 > p.phi2 + p.v) {
		B = log(p.delta2 - p.phi2 - p.v);
	} else {
		/* f(a - k tau) climbs as k grows; count these passes against the budget. */
		double k = 1;
		while (f(&p, p.a - k * tau) < 0) {
			if (++used > CC_GLICKO2_MAX_ITERATIONS)
				return CC_ETIMEOUT;
			k++;
		}
		B = p.a - k * tau;
	}
	double fA = f(&p, A), fB = f(&p, B);
	if (!isfinite(fA) || !isfinite(fB))
		return CC_EINVAL;
	while (fabs(B - A) > CC_GLICKO2_EPSILON) {
		if (++used > CC_GLICKO2_MAX_ITERATIONS)
			return CC_ETIMEOUT;
		/* Both ends are roots only if both are 0: A is then the answer. */
		if (fB == fA)
			break;
		double C = A + (A - B) * fA / (fB - fA);
		double fC = f(&p, C);
		if (!isfinite(C) || !isfinite(fC))
			return CC_EINVAL;
		if (fC * fB <= 0) {
			A = B;
			fA = fB;
		} else {
			fA /= 2; /* the Illinois step: stops one end from sticking */
		}
		B = C;
		fB = fC;
	}
	double s = exp(A / 2);
	if (!isfinite(s))
		return CC_EINVAL;
	*sigma_out = s;
	if (iterations)
		*iterations = used;
	return 0;
}

/* Checks every argument of an update; 0 or the code to return. */
static int update_args_check(const struct cc_glicko2_rating *player, const struct cc_glicko2_result_entry *games,
			     size_t n, double tau, const struct cc_glicko2_rating *out)
{
	if (!out || !cc_glicko2_rating_valid(player) || !tau_valid(tau) || (n > 0 && !games))
		return CC_EINVAL;
	if (n > CC_GLICKO2_MAX_GAMES)
		return CC_ETOOBIG;
	for (size_t i = 0; i < n; i++) {
		const struct cc_glicko2_result_entry *e = &games[i];
		if (!in_range(e->opp_rating, CC_GLICKO2_RATING_MIN, CC_GLICKO2_RATING_MAX) ||
		    !deviation_valid(e->opp_deviation) || !in_range(e->score, 0, 1))
			return CC_EINVAL;
	}
	return 0;
}

int cc_glicko2_update(const struct cc_glicko2_rating *player, const struct cc_glicko2_result_entry *games,
		      size_t n, double tau, struct cc_glicko2_rating *out)
{
	int rc = update_args_check(player, games, n, tau, out);
	if (rc != 0)
		return rc;
	/* Step 2: onto the Glicko-2 scale. */
	double mu = (player->rating - CC_GLICKO2_DEFAULT_RATING) / CC_GLICKO2_SCALE;
	double phi = player->deviation / CC_GLICKO2_SCALE;
	double sigma = player->volatility;
	if (n == 0) {
		/* Step 6 alone: an idle period only adds uncertainty. */
		double rd = fmin(sqrt(phi * phi + sigma * sigma), PHI_MAX) * CC_GLICKO2_SCALE;
		*out = (struct cc_glicko2_rating){ player->rating, rd, sigma };
		return 0;
	}
	/* Steps 3 and 4: v^-1 and sum g(phi_j)(s_j - E_j); delta = v * sum. */
	double v_inv = 0, sum = 0;
	for (size_t i = 0; i < n; i++) {
		double mu_j = (games[i].opp_rating - CC_GLICKO2_DEFAULT_RATING) / CC_GLICKO2_SCALE;
		double g_j = g(games[i].opp_deviation / CC_GLICKO2_SCALE);
		double e_j = expected(mu, mu_j, g_j);
		v_inv += g_j * g_j * e_j * (1 - e_j);
		sum += g_j * (games[i].score - e_j);
	}
	double v = 1.0 / v_inv;
	/* Step 5, then the volatility clamp (see the header). */
	double sigma_new;
	rc = cc_glicko2_volatility(phi, v, v * sum, sigma, tau, &sigma_new, NULL);
	if (rc != 0)
		return rc;
	sigma_new = clamp(sigma_new, CC_GLICKO2_VOLATILITY_MIN, CC_GLICKO2_VOLATILITY_MAX);
	/* Steps 6-7: pre-period deviation (capped), then the new one. */
	double phi_star = fmin(sqrt(phi * phi + sigma_new * sigma_new), PHI_MAX);
	double phi_new = 1.0 / sqrt(1.0 / (phi_star * phi_star) + v_inv);
	double mu_new = mu + phi_new * phi_new * sum;
	/* Step 8: back to the Glicko scale. */
	*out = (struct cc_glicko2_rating){
		clamp(CC_GLICKO2_SCALE * mu_new + CC_GLICKO2_DEFAULT_RATING, CC_GLICKO2_RATING_MIN,
		      CC_GLICKO2_RATING_MAX),
		CC_GLICKO2_SCALE * phi_new,
		sigma_new,
	};
	return 0;
}

int cc_glicko2_composite(const struct cc_glicko2_rating *team, size_t n, struct cc_glicko2_rating *out)
{
	if (!team || !out || n == 0 || n > CC_GLICKO2_TEAM_MAX)
		return CC_EINVAL;
	double rating = 0, rd2 = 0, vol = 0;
	for (size_t i = 0; i < n; i++) {
		if (!cc_glicko2_rating_valid(&team[i]))
			return CC_EINVAL;
		rating += team[i].rating;
		rd2 += team[i].deviation * team[i].deviation;
		vol += team[i].volatility;
	}
	/* Means of in-domain values stay in the domain; clamp only the last-bit rounding. */
	*out = (struct cc_glicko2_rating){
		clamp(rating / (double)n, CC_GLICKO2_RATING_MIN, CC_GLICKO2_RATING_MAX),
		fmin(sqrt(rd2 / (double)n), CC_GLICKO2_MAX_DEVIATION),
		clamp(vol / (double)n, CC_GLICKO2_VOLATILITY_MIN, CC_GLICKO2_VOLATILITY_MAX),
	};
	return 0;
}

/* Rates each of a team's n players for one game (score) against opp. */
static int rate_side(const struct cc_glicko2_rating *team, size_t n, const struct cc_glicko2_rating *opp,
		     double score, double tau, struct cc_glicko2_rating *out)
{
	struct cc_glicko2_result_entry game = { opp->rating, opp->deviation, score };
	for (size_t i = 0; i < n; i++) {
		int rc = cc_glicko2_update(&team[i], &game, 1, tau, &out[i]);
		if (rc != 0)
			return rc;
	}
	return 0;
}

int cc_glicko2_rate_match(const struct cc_glicko2_rating *team_a, size_t na, const struct cc_glicko2_rating *team_b,
			  size_t nb, double score_a, double tau, struct cc_glicko2_rating *out_a,
			  struct cc_glicko2_rating *out_b)
{
	struct cc_glicko2_rating comp_a, comp_b;
	struct cc_glicko2_rating new_a[CC_GLICKO2_TEAM_MAX], new_b[CC_GLICKO2_TEAM_MAX];
	if (!out_a || !out_b || !in_range(score_a, 0, 1))
		return CC_EINVAL;
	int rc = cc_glicko2_composite(team_a, na, &comp_a);
	if (rc == 0)
		rc = cc_glicko2_composite(team_b, nb, &comp_b);
	if (rc == 0)
		rc = rate_side(team_a, na, &comp_b, score_a, tau, new_a);
	if (rc == 0)
		rc = rate_side(team_b, nb, &comp_a, 1 - score_a, tau, new_b);
	if (rc != 0)
		return rc;
	/* Only now, so a failure leaves the outputs untouched (and aliasing is safe). */
	for (size_t i = 0; i < na; i++)
		out_a[i] = new_a[i];
	for (size_t i = 0; i < nb; i++)
		out_b[i] = new_b[i];
	return 0;
}
