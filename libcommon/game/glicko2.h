/*
 * glicko2.h - Glicko-2 rating updates (SPEC 9), pure arithmetic: no I/O,
 * no allocation, no global state; thread-safe.
 *
 * The algorithm is Glickman's "Example of the Glicko-2 system" (2013
 * revision), steps 1-8, with the Illinois-method volatility iteration of
 * step 5 (tolerance CC_GLICKO2_EPSILON) and the scale factor 173.7178.
 * One call of cc_glicko2_update() is one rating period for one player.
 *
 * The domain. Every rating this module accepts or returns lies in:
 *   rating      [CC_GLICKO2_RATING_MIN, CC_GLICKO2_RATING_MAX]
 *   deviation   (0, CC_GLICKO2_MAX_DEVIATION]
 *   volatility  [CC_GLICKO2_VOLATILITY_MIN, CC_GLICKO2_VOLATILITY_MAX]
 * and outputs are clamped into it, so an output is always a valid input
 * (a player can never be stuck with a rating the next update refuses).
 * Inside the domain the exponentials stay far from overflow, and the
 * clamps change nothing in ordinary play; they only bound absurd upsets
 * (a 100-rated team beating a 3000-rated one ten times), where the exact
 * algorithm yields volatilities in the millions. The clamps, like those of
 * lichess's Glicko-2:
 *   - the deviation ceiling (Glicko-1's "c": nobody is less known than a
 *     new player) caps phi* of step 6, before step 7, so the rating step
 *     phi'^2 * sum stays consistent with the deviation reported;
 *   - the volatility is clamped right after step 5 (the floor keeps phi*
 *     away from 0, the cap keeps e^x finite in later periods);
 *   - the rating is clamped last.
 */
#ifndef CC_GLICKO2_H
#define CC_GLICKO2_H

#include <stdbool.h>
#include <stddef.h>

#include "sys/cc.h"

#define CC_GLICKO2_SCALE 173.7178            /* Glicko <-> Glicko-2 scale factor */
#define CC_GLICKO2_DEFAULT_RATING 1500.0     /* a new player */
#define CC_GLICKO2_DEFAULT_DEVIATION 350.0   /* a new player */
#define CC_GLICKO2_DEFAULT_VOLATILITY 0.06   /* a new player */
#define CC_GLICKO2_DEFAULT_TAU 0.5           /* SPEC 9 default */
#define CC_GLICKO2_TAU_MIN 0.1               /* Glickman suggests 0.3 .. 1.2 */
#define CC_GLICKO2_TAU_MAX 2.0
#define CC_GLICKO2_EPSILON 0.000001          /* step 5 convergence tolerance */
#define CC_GLICKO2_MAX_ITERATIONS 100        /* step 5 budget; the domain needs at most ~50 */
#define CC_GLICKO2_RATING_MIN 0.0
#define CC_GLICKO2_RATING_MAX 5000.0
#define CC_GLICKO2_MAX_DEVIATION 350.0       /* ceiling: a new player's deviation */
#define CC_GLICKO2_VOLATILITY_MIN 0.0001
#define CC_GLICKO2_VOLATILITY_MAX 1.0
#define CC_GLICKO2_MAX_GAMES 1000            /* games in one rating period */
#define CC_GLICKO2_TEAM_MAX 16               /* players on one side of a match */

/* A player's rating on the Glicko scale (1500-centred). */
struct cc_glicko2_rating {
	double rating;     /* r, e.g. 1500 */
	double deviation;  /* RD, e.g. 350 */
	double volatility; /* sigma, e.g. 0.06 */
};

/* One game of a rating period, from the rated player's side. */
struct cc_glicko2_result_entry {
	double opp_rating;    /* opponent's r */
	double opp_deviation; /* opponent's RD */
	double score;         /* 1 win, 0.5 draw, 0 loss; anything in [0, 1] */
};

/* True when r lies in the domain above (finite, every field in range). */
bool cc_glicko2_rating_valid(const struct cc_glicko2_rating *r);

/*
 * One rating period for player, who played the n games (n == 0: did not
 * compete, so only the deviation grows: RD' = sqrt(phi^2 + sigma^2) on the
 * Glicko-2 scale, capped at the ceiling). tau is the system constant in
 * [CC_GLICKO2_TAU_MIN, CC_GLICKO2_TAU_MAX]. On success writes *out (which
 * may be player) and returns 0. Returns CC_EINVAL for a player or opponent
 * outside the domain (non-finite, deviation <= 0, ...), a score outside
 * [0, 1], tau out of range or games NULL with n > 0; CC_ETOOBIG when n >
 * CC_GLICKO2_MAX_GAMES; or cc_glicko2_volatility's error (not seen inside
 * the domain).
 */
CC_MUST_CHECK int cc_glicko2_update(const struct cc_glicko2_rating *player,
				    const struct cc_glicko2_result_entry *games, size_t n, double tau,
				    struct cc_glicko2_rating *out);

/*
 * Step 5 alone, on the Glicko-2 scale, exactly as Glickman writes it (no
 * clamping): the new volatility sigma' for a player with deviation phi >= 0
 * and volatility sigma > 0, given the estimated variance v > 0 (step 3)
 * and improvement delta (step 4). The root of f is bracketed (A = ln
 * sigma^2; B = ln(delta^2 - phi^2 - v) or a - k*tau) and refined by the
 * Illinois method until |B - A| <= CC_GLICKO2_EPSILON. Public so tests can
 * watch it converge: *iterations (if not NULL) receives the loop passes
 * used, bracket search (k increments) and Illinois steps together.
 * Returns 0 and writes *sigma_out; CC_EINVAL for non-finite or
 * non-positive arguments or when f itself leaves the doubles (inputs far
 * beyond any rating); CC_ETIMEOUT when CC_GLICKO2_MAX_ITERATIONS passes
 * did not converge (never loops forever).
 */
CC_MUST_CHECK int cc_glicko2_volatility(double phi, double v, double delta, double sigma, double tau,
					double *sigma_out, int *iterations);

/*
 * The composite opponent a team presents (SPEC 9: "each player rated
 * against the opposing team as a composite opponent"), from its n players
 * (1 <= n <= CC_GLICKO2_TEAM_MAX):
 *   rating     = mean of the ratings
 *   deviation  = root mean square of the deviations, sqrt(sum RD_i^2 / n)
 *   volatility = mean of the volatilities (an update never reads an
 *                opponent's volatility; it is there to make a valid rating)
 * Why RMS and not the deviation of the mean (sqrt(sum RD_i^2) / n): the
 * composite stands for "a player of the team's strength", and how a team
 * plays is no better known than its members are (their uncertainties are
 * not independent draws that average out), so the composite must not look
 * more certain than a typical member. RMS is the deviation of a member
 * drawn at random: a team of identical players composes to that player,
 * a team of new players to a new player (RD 350), team size does not
 * shrink it, and it is never below the mean deviation, so an unknown
 * member weighs in (conservatively). Writes *out (may alias team) and
 * returns 0; CC_EINVAL for a NULL team, n out of range or a member
 * outside the domain.
 */
CC_MUST_CHECK int cc_glicko2_composite(const struct cc_glicko2_rating *team, size_t n,
				       struct cc_glicko2_rating *out);

/*
 * Rates one finished match: every player of team a plays one game, score
 * score_a, against the composite of team b (taken before the match), and
 * every player of team b plays one game, score 1 - score_a, against the
 * composite of team a. Teammates do not rate each other. score_a is 1 (a
 * won), 0.5 (draw) or 0 (b won); any value in [0, 1] is accepted. Writes
 * out_a[0..na) and out_b[0..nb) (which may be team_a and team_b: the
 * inputs are read in full first) only when every update succeeded.
 * Returns 0, CC_EINVAL (a NULL array, na or nb not in 1..CC_GLICKO2_TEAM_MAX,
 * a player outside the domain, score_a or tau out of range) or
 * cc_glicko2_update's error.
 */
CC_MUST_CHECK int cc_glicko2_rate_match(const struct cc_glicko2_rating *team_a, size_t na,
					const struct cc_glicko2_rating *team_b, size_t nb, double score_a,
					double tau, struct cc_glicko2_rating *out_a,
					struct cc_glicko2_rating *out_b);

#endif
