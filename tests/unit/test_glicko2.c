/*
 * glicko2.c: Glickman's worked example, idle periods, extremes across the
 * whole domain, convergence of step 5 (including cases where Glickman's
 * original Newton-Raphson step 5 fails), symmetry, the composite opponent,
 * whole matches and refused inputs.
 *
 * The test keeps its own small reference of steps 3-4 and of the pre-2013
 * Newton-Raphson step 5, to feed cc_glicko2_volatility directly and to show
 * the adversarial cases really are adversarial.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "game/glicko2.h"
#include "support.h"
#include "sys/banned.h"

#define TAU CC_GLICKO2_DEFAULT_TAU
#define S CC_GLICKO2_SCALE

/* A rating that no successful call would write: proves "out untouched". */
static const struct cc_glicko2_rating sentinel = { -1, -1, -1 };

static bool is_sentinel(const struct cc_glicko2_rating *r)
{
	return memcmp(r, &sentinel, sizeof(*r)) == 0;
}

/* ---- the test's own reference ------------------------------------------- */

/* Steps 2-4 for a player and games: phi, v and delta on the Glicko-2 scale. */
static void reference_steps_2_4(const struct cc_glicko2_rating *p, const struct cc_glicko2_result_entry *games,
				size_t n, double *phi, double *v, double *delta)
{
	double mu = (p->rating - 1500) / S, v_inv = 0, sum = 0;
	for (size_t i = 0; i < n; i++) {
		double phi_j = games[i].opp_deviation / S;
		double g = 1 / sqrt(1 + 3 * phi_j * phi_j / (M_PI * M_PI));
		double e = 1 / (1 + exp(-g * (mu - (games[i].opp_rating - 1500) / S)));
		v_inv += g * g * e * (1 - e);
		sum += g * (games[i].score - e);
	}
	*phi = p->deviation / S;
	*v = 1 / v_inv;
	*delta = *v * sum;
}

/* Step 5's f(x), as Glickman writes it. */
static double reference_f(double phi, double v, double delta, double sigma, double tau, double x)
{
	double ex = exp(x), d = phi * phi + v + ex;
	return ex * (delta * delta - phi * phi - v - ex) / (2 * d * d) - (x - log(sigma * sigma)) / (tau * tau);
}

/*
 * Glickman's original step 5 (Newton-Raphson on h(x), before the 2013
 * revision). Returns the iterations it needed to converge, or -1 when it
 * diverged or had not converged after cap iterations.
 */
static int original_newton_iterations(double phi, double v, double delta, double sigma, double tau, int cap)
{
	double a = log(sigma * sigma), x0 = a, p2 = phi * phi, t2 = tau * tau;
	for (int i = 1; i <= cap; i++) {
		double ex = exp(x0), d = p2 + v + ex;
		double h1 = -(x0 - a) / t2 - 0.5 * ex / d + 0.5 * ex * (delta / d) * (delta / d);
		double h2 = -1 / t2 - 0.5 * ex * (p2 + v) / (d * d) + 0.5 * delta * delta * ex * (p2 + v - ex) / (d * d * d);
		double x1 = x0 - h1 / h2;
		if (!isfinite(x1))
			return -1;
		if (fabs(x1 - x0) < CC_GLICKO2_EPSILON)
			return i;
		x0 = x1;
	}
	return -1;
}

/* Asserts that sigma' is step 5's root: f changes sign within 1e-5 of ln sigma'^2. */
static void assert_is_root(double phi, double v, double delta, double sigma, double tau, double sigma_new)
{
	double x = log(sigma_new * sigma_new);
	double left = reference_f(phi, v, delta, sigma, tau, x - 1e-5);
	double right = reference_f(phi, v, delta, sigma, tau, x + 1e-5);
	ck_assert_msg(left > 0 && right < 0, "sigma' %.9g is not the root: f(x-1e-5) = %g, f(x+1e-5) = %g",
		      sigma_new, left, right);
}

/* ---- Glickman's worked example ----------------------------------------------- */

static const struct cc_glicko2_rating example_player = { 1500, 200, 0.06 };
static const struct cc_glicko2_result_entry example_games[] = {
	{ 1400, 30, 1 },
	{ 1550, 100, 0 },
	{ 1700, 300, 0 },
};

START_TEST(worked_example)
{
	struct cc_glicko2_rating out;
	ck_assert_int_eq(cc_glicko2_update(&example_player, example_games, 3, 0.5, &out), 0);
	printf("worked example: rating %.4f deviation %.4f volatility %.8f\n", out.rating, out.deviation,
	       out.volatility);
	ck_assert_double_eq_tol(out.rating, 1464.06, 0.01);
	ck_assert_double_eq_tol(out.deviation, 151.52, 0.01);
	ck_assert_double_eq_tol(out.volatility, 0.05999, 1e-5);
}
END_TEST

/*
 * Further periods, with values from a separate Python transcription of
 * Glickman's steps (no clamp reached). The upset moves the volatility
 * (0.06 -> 0.072), so step 6 using the old sigma would show.
 */
struct golden_case {
	const char *what;
	struct cc_glicko2_rating player;
	struct cc_glicko2_result_entry games[10];
	size_t n;
	double tau;
	struct cc_glicko2_rating want;
};

static const struct golden_case golden_cases[] = {
	{ "a draw, a loss and a win, tau 1.0",
	  { 1700, 80, 0.08 },
	  { { 1600, 120, 0.5 }, { 1800, 60, 0 }, { 1500, 300, 1 } },
	  3, 1.0,
	  { 1691.1925840, 76.8158894, 0.0799454993 } },
	{ "1500/50/0.06 beats 2500/30 ten times, tau 1.2",
	  { 1500, 50, 0.06 },
	  { { 2500, 30, 1 }, { 2500, 30, 1 }, { 2500, 30, 1 }, { 2500, 30, 1 }, { 2500, 30, 1 },
	    { 2500, 30, 1 }, { 2500, 30, 1 }, { 2500, 30, 1 }, { 2500, 30, 1 }, { 2500, 30, 1 } },
	  10, 1.2,
	  { 1651.3202254, 51.4699824, 0.0720388626 } },
};

START_TEST(golden_values)
{
	const struct golden_case *c = &golden_cases[_i];
	struct cc_glicko2_rating out;
	ck_assert_int_eq(cc_glicko2_update(&c->player, c->games, c->n, c->tau, &out), 0);
	ck_assert_msg(fabs(out.rating - c->want.rating) < 1e-3 && fabs(out.deviation - c->want.deviation) < 1e-3 &&
			      fabs(out.volatility - c->want.volatility) < 1e-6,
		      "%s: got %.7f/%.7f/%.10f", c->what, out.rating, out.deviation, out.volatility);
}
END_TEST

/* Step 5 alone from Glickman's published v and delta. */
START_TEST(worked_example_step5)
{
	double phi = 200 / S, v, delta, sigma_new = 0;
	int iterations = -1;
	double phi_ref;
	reference_steps_2_4(&example_player, example_games, 3, &phi_ref, &v, &delta);
	/* Glickman rounds his intermediates (v = 1.7785 from rounded g and E). */
	ck_assert_double_eq_tol(v, 1.7785, 1e-3);
	ck_assert_double_eq_tol(delta, -0.4834, 1e-3);
	ck_assert_int_eq(cc_glicko2_volatility(phi, 1.7785, -0.4834, 0.06, 0.5, &sigma_new, &iterations), 0);
	ck_assert_double_eq_tol(sigma_new, 0.05999, 1e-5);
	ck_assert_int_ge(iterations, 1);
	ck_assert_int_lt(iterations, 10);
}
END_TEST

/* ---- a period without games ---------------------------------------------------- */

static const struct {
	struct cc_glicko2_rating in;
	double want_deviation;
} idle_cases[] = {
	/* sqrt((200/S)^2 + 0.06^2) * S */
	{ { 1500, 200, 0.06 }, 200.27121 },
	{ { 2200, 50, 0.06 }, 51.0749 },
	/* the ceiling: a new player does not become less known than new */
	{ { 1500, 350, 0.06 }, 350 },
	{ { 1500, 349.9, 0.5 }, 350 },
};

START_TEST(idle_period)
{
	const struct cc_glicko2_rating *in = &idle_cases[_i].in;
	struct cc_glicko2_rating out;
	ck_assert_int_eq(cc_glicko2_update(in, NULL, 0, TAU, &out), 0);
	double exact = fmin(sqrt(pow(in->deviation / S, 2) + pow(in->volatility, 2)) * S, 350);
	ck_assert_double_eq_tol(out.deviation, exact, 1e-9);
	ck_assert_double_eq_tol(out.deviation, idle_cases[_i].want_deviation, 0.01);
	ck_assert_double_eq(out.rating, in->rating);
	ck_assert_double_eq(out.volatility, in->volatility);
}
END_TEST

/* ---- extremes ------------------------------------------------------------------ */

struct extreme_case {
	const char *what;
	struct cc_glicko2_rating player;
	struct cc_glicko2_result_entry game;
	size_t n; /* the game, repeated */
	double tau;
};

static const struct extreme_case extreme_cases[] = {
	{ "3000 loses to 100, tiny deviations", { 3000, 1e-3, 0.06 }, { 100, 1e-3, 0 }, 1, TAU },
	{ "100 beats 3000, tiny deviations", { 100, 1e-3, 0.06 }, { 3000, 1e-3, 1 }, 1, TAU },
	{ "3000 beats 100 (expected)", { 3000, 1e-3, 0.06 }, { 100, 1e-3, 1 }, 1, TAU },
	{ "100 beats 3000 ten times", { 100, 30, 0.06 }, { 3000, 30, 1 }, 10, TAU },
	{ "new player beats 3000 a thousand times", { 1500, 350, 0.06 }, { 3000, 350, 1 }, 1000, TAU },
	{ "tiny deviation loses a thousand times", { 1500, 1e-3, 0.06 }, { 1500, 1e-3, 0 }, 1000, TAU },
	{ "domain corners: 0 beats 5000, tau max", { 0, 1e-9, 1.0 }, { 5000, 1e-9, 1 }, 1000, 2.0 },
	{ "domain corners: 5000 loses to 0, tau min", { 5000, 350, 1e-4 }, { 0, 350, 0 }, 10, 0.1 },
	{ "draw between far-apart players", { 0, 350, 1.0 }, { 5000, 1e-9, 0.5 }, 1, TAU },
};

START_TEST(extreme_inputs_stay_sane)
{
	const struct extreme_case *c = &extreme_cases[_i];
	struct cc_glicko2_result_entry games[CC_GLICKO2_MAX_GAMES];
	for (size_t i = 0; i < c->n; i++)
		games[i] = c->game;
	struct cc_glicko2_rating out, again;
	int rc = cc_glicko2_update(&c->player, games, c->n, c->tau, &out);
	ck_assert_msg(rc == 0, "%s: %s", c->what, cc_errname(rc));
	printf("%s: %.2f/%.4g/%.4g -> %.2f/%.4g/%.4g\n", c->what, c->player.rating, c->player.deviation,
	       c->player.volatility, out.rating, out.deviation, out.volatility);
	ck_assert_msg(cc_glicko2_rating_valid(&out), "%s: output %g/%g/%g outside the domain", c->what, out.rating,
		      out.deviation, out.volatility);
	/* Outcomes better than expected move the rating up, worse down. */
	double mu = (c->player.rating - 1500) / S, phi_j = c->game.opp_deviation / S;
	double e = 1 / (1 + exp(-(mu - (c->game.opp_rating - 1500) / S) / sqrt(1 + 3 * phi_j * phi_j / (M_PI * M_PI))));
	if (c->game.score > e)
		ck_assert_msg(out.rating >= c->player.rating, "%s: a better-than-expected result lowered the rating",
			      c->what);
	if (c->game.score < e)
		ck_assert_msg(out.rating <= c->player.rating, "%s: a worse-than-expected result raised the rating",
			      c->what);
	/* Closure: an output is always accepted as the next input. */
	ck_assert_int_eq(cc_glicko2_update(&out, games, c->n, c->tau, &again), 0);
	ck_assert(cc_glicko2_rating_valid(&again));
}
END_TEST

/*
 * Every corner of the domain (and its middle): step 5 converges well
 * within the budget, and a full update succeeds with a valid output.
 */
START_TEST(domain_grid_converges)
{
	static const double ratings[] = { 0, 2500, 5000 };
	static const double devs[] = { 1e-9, 30, 350 };
	static const double vols[] = { 1e-4, 0.06, 1.0 };
	static const double taus[] = { 0.1, 0.5, 2.0 };
	static const double scores[] = { 0, 0.5, 1 };
	static const size_t counts[] = { 1, 10, 1000 };
	static struct cc_glicko2_result_entry games[CC_GLICKO2_MAX_GAMES];
	int worst = 0, cases = 0;
	for (size_t a = 0; a < 3; a++)
	for (size_t b = 0; b < 3; b++)
	for (size_t c = 0; c < 3; c++)
	for (size_t d = 0; d < 3; d++)
	for (size_t e = 0; e < 3; e++)
	for (size_t t = 0; t < 3; t++)
	for (size_t s = 0; s < 3; s++)
	for (size_t k = 0; k < 3; k++) {
		struct cc_glicko2_rating p = { ratings[a], devs[c], vols[e] }, out;
		for (size_t i = 0; i < counts[k]; i++)
			games[i] = (struct cc_glicko2_result_entry){ ratings[b], devs[d], scores[s] };
		double phi, v, delta, sigma_new;
		int it = -1;
		reference_steps_2_4(&p, games, counts[k], &phi, &v, &delta);
		int rc = cc_glicko2_volatility(phi, v, delta, p.volatility, taus[t], &sigma_new, &it);
		ck_assert_msg(rc == 0, "step 5 failed (%s) for %g/%g/%g vs %g/%g score %g x%zu tau %g", cc_errname(rc),
			      p.rating, p.deviation, p.volatility, ratings[b], devs[d], scores[s], counts[k], taus[t]);
		if (it > worst)
			worst = it;
		rc = cc_glicko2_update(&p, games, counts[k], taus[t], &out);
		ck_assert_int_eq(rc, 0);
		ck_assert(cc_glicko2_rating_valid(&out));
		cases++;
	}
	printf("domain grid: %d cases, at most %d step-5 iterations (budget %d)\n", cases, worst,
	       CC_GLICKO2_MAX_ITERATIONS);
	ck_assert_int_lt(worst, CC_GLICKO2_MAX_ITERATIONS * 3 / 5);
}
END_TEST

/* ---- convergence of step 5 ------------------------------------------------------ */

/*
 * Upsets where Glickman's original Newton-Raphson step 5 never converges or
 * needs well over a hundred iterations (plain regula falsi, without the
 * Illinois halving, never shrinks |B - A| here at all).
 */
struct adversarial_case {
	const char *what;
	struct cc_glicko2_rating player;
	struct cc_glicko2_result_entry game;
	size_t n;
	double tau;
	int newton_min; /* Newton needs more than this, or fails (-1) */
};

static const struct adversarial_case adversarial_cases[] = {
	{ "1500/50/0.3 beats 2250/30 ten times", { 1500, 50, 0.3 }, { 2250, 30, 1 }, 10, 0.5, 1000 },
	{ "1500/60/0.1 beats 2500/30 ten times", { 1500, 60, 0.1 }, { 2500, 30, 1 }, 10, 1.2, 100 },
	{ "100/30/0.1 beats 1500/0.001 ten times", { 100, 30, 0.1 }, { 1500, 1e-3, 1 }, 10, 1.2, 100 },
};

START_TEST(adversarial_converges)
{
	const struct adversarial_case *c = &adversarial_cases[_i];
	struct cc_glicko2_result_entry games[16];
	for (size_t i = 0; i < c->n; i++)
		games[i] = c->game;
	double phi, v, delta, sigma_new = 0;
	reference_steps_2_4(&c->player, games, c->n, &phi, &v, &delta);
	int newton = original_newton_iterations(phi, v, delta, c->player.volatility, c->tau, 1000);
	ck_assert_msg(newton < 0 || newton > c->newton_min, "%s: not adversarial, Newton took %d", c->what, newton);
	int it = -1;
	ck_assert_int_eq(cc_glicko2_volatility(phi, v, delta, c->player.volatility, c->tau, &sigma_new, &it), 0);
	printf("%s: Newton %d (-1: no convergence in 1000), Illinois %d\n", c->what, newton, it);
	ck_assert_int_lt(it, 20);
	assert_is_root(phi, v, delta, c->player.volatility, c->tau, sigma_new);
	struct cc_glicko2_rating out;
	ck_assert_int_eq(cc_glicko2_update(&c->player, games, c->n, c->tau, &out), 0);
	ck_assert(cc_glicko2_rating_valid(&out));
}
END_TEST

/* Far outside any rating (v ~ 1e40), the budget ends the loop with an error. */
START_TEST(budget_stops_the_loop)
{
	double sigma_new = 42;
	int it = 42;
	ck_assert_int_eq(cc_glicko2_volatility(0.0002, 9.7e39, 5.4e40, 0.86, 4.0, &sigma_new, &it), CC_ETIMEOUT);
	ck_assert_double_eq(sigma_new, 42);
	ck_assert_int_eq(it, 42);
}
END_TEST

START_TEST(volatility_refuses_bad_arguments)
{
	static const double bad[][5] = {
		{ NAN, 1, 0, 0.06, 0.5 }, { -1, 1, 0, 0.06, 0.5 },   { 1, 0, 0, 0.06, 0.5 },
		{ 1, -1, 0, 0.06, 0.5 }, { 1, INFINITY, 0, 0.06, 0.5 }, { 1, 1, NAN, 0.06, 0.5 },
		{ 1, 1, 0, 0, 0.5 },      { 1, 1, 0, 0.06, 0 },       { 1, 1, 0, 0.06, -INFINITY },
		{ 1, 1, 1e200, 0.06, 0.5 }, /* delta^2 overflows */
	};
	for (size_t i = 0; i < CC_ARRAY_LEN(bad); i++) {
		double out = 42;
		int rc = cc_glicko2_volatility(bad[i][0], bad[i][1], bad[i][2], bad[i][3], bad[i][4], &out, NULL);
		ck_assert_msg(rc == CC_EINVAL, "case %zu: %s", i, cc_errname(rc));
		ck_assert_double_eq(out, 42);
	}
	ck_assert_int_eq(cc_glicko2_volatility(1, 1, 0, 0.06, 0.5, NULL, NULL), CC_EINVAL);
}
END_TEST

/* ---- symmetry -------------------------------------------------------------------- */

START_TEST(equal_players_move_opposite)
{
	static const struct cc_glicko2_rating players[] = {
		{ 1500, 350, 0.06 }, { 1500, 200, 0.06 }, { 2100, 45, 0.09 }, { 100, 1e-3, 1e-4 },
	};
	const struct cc_glicko2_rating *p = &players[_i];
	struct cc_glicko2_result_entry win = { p->rating, p->deviation, 1 }, loss = { p->rating, p->deviation, 0 };
	struct cc_glicko2_rating w, l;
	ck_assert_int_eq(cc_glicko2_update(p, &win, 1, TAU, &w), 0);
	ck_assert_int_eq(cc_glicko2_update(p, &loss, 1, TAU, &l), 0);
	ck_assert_double_gt(w.rating, p->rating);
	ck_assert_double_eq_tol(w.rating - p->rating, p->rating - l.rating, 1e-9);
	ck_assert_double_eq_tol(w.deviation, l.deviation, 1e-9);
	ck_assert_double_eq_tol(w.volatility, l.volatility, 1e-12);
	/* The same through a 1v1 match. */
	struct cc_glicko2_rating a, b;
	ck_assert_int_eq(cc_glicko2_rate_match(p, 1, p, 1, 1, TAU, &a, &b), 0);
	ck_assert_double_eq_tol(a.rating, w.rating, 1e-9);
	ck_assert_double_eq_tol(b.rating, l.rating, 1e-9);
}
END_TEST

/* ---- composite opponent ----------------------------------------------------------- */

struct composite_case {
	const char *what;
	struct cc_glicko2_rating team[3];
	size_t n;
	struct cc_glicko2_rating want;
};

static const struct composite_case composite_cases[] = {
	{ "one player is itself", { { 1620, 80, 0.05 } }, 1, { 1620, 80, 0.05 } },
	{ "identical players compose to that player", { { 1800, 120, 0.06 }, { 1800, 120, 0.06 }, { 1800, 120, 0.06 } },
	  3, { 1800, 120, 0.06 } },
	{ "new players compose to a new player", { { 1500, 350, 0.06 }, { 1500, 350, 0.06 }, { 1500, 350, 0.06 } }, 3,
	  { 1500, 350, 0.06 } },
	/* mean 1500; RMS sqrt((50^2 + 100^2 + 350^2) / 3) = sqrt(45000) */
	{ "mixed", { { 1200, 50, 0.05 }, { 1500, 100, 0.06 }, { 1800, 350, 0.10 } }, 3, { 1500, 212.132034, 0.07 } },
};

START_TEST(composite)
{
	const struct composite_case *c = &composite_cases[_i];
	struct cc_glicko2_rating out;
	ck_assert_int_eq(cc_glicko2_composite(c->team, c->n, &out), 0);
	ck_assert_msg(fabs(out.rating - c->want.rating) < 1e-6 && fabs(out.deviation - c->want.deviation) < 1e-6 &&
			      fabs(out.volatility - c->want.volatility) < 1e-12,
		      "%s: got %.9g/%.9g/%.9g", c->what, out.rating, out.deviation, out.volatility);
	ck_assert(cc_glicko2_rating_valid(&out));
}
END_TEST

START_TEST(composite_refuses)
{
	struct cc_glicko2_rating team[CC_GLICKO2_TEAM_MAX + 1];
	for (size_t i = 0; i < CC_ARRAY_LEN(team); i++)
		team[i] = (struct cc_glicko2_rating){ 1500, 350, 0.06 };
	struct cc_glicko2_rating out = sentinel;
	ck_assert_int_eq(cc_glicko2_composite(team, 0, &out), CC_EINVAL);
	ck_assert_int_eq(cc_glicko2_composite(team, CC_GLICKO2_TEAM_MAX + 1, &out), CC_EINVAL);
	ck_assert_int_eq(cc_glicko2_composite(NULL, 1, &out), CC_EINVAL);
	team[1].deviation = 0;
	ck_assert_int_eq(cc_glicko2_composite(team, 3, &out), CC_EINVAL);
	ck_assert(is_sentinel(&out));
	ck_assert_int_eq(cc_glicko2_composite(team, 1, NULL), CC_EINVAL);
	ck_assert_int_eq(cc_glicko2_composite(team, CC_GLICKO2_TEAM_MAX, &out), CC_EINVAL);
	team[1].deviation = 350;
	ck_assert_int_eq(cc_glicko2_composite(team, CC_GLICKO2_TEAM_MAX, &out), 0);
}
END_TEST

/* ---- whole matches --------------------------------------------------------------- */

static const struct cc_glicko2_rating team_a[] = { { 1400, 80, 0.06 }, { 1600, 150, 0.06 }, { 1500, 350, 0.06 } };
static const struct cc_glicko2_rating team_b[] = { { 1550, 60, 0.05 }, { 1450, 200, 0.07 }, { 1700, 100, 0.06 } };

/* Each player of a match equals a one-game update against the other side's composite. */
START_TEST(match_is_composite_updates)
{
	static const double scores[] = { 1, 0.5, 0 };
	double score = scores[_i];
	struct cc_glicko2_rating out_a[3], out_b[3], comp_a, comp_b, want;
	ck_assert_int_eq(cc_glicko2_rate_match(team_a, 3, team_b, 3, score, TAU, out_a, out_b), 0);
	ck_assert_int_eq(cc_glicko2_composite(team_a, 3, &comp_a), 0);
	ck_assert_int_eq(cc_glicko2_composite(team_b, 3, &comp_b), 0);
	for (size_t i = 0; i < 3; i++) {
		struct cc_glicko2_result_entry ga = { comp_b.rating, comp_b.deviation, score };
		ck_assert_int_eq(cc_glicko2_update(&team_a[i], &ga, 1, TAU, &want), 0);
		ck_assert_mem_eq(&out_a[i], &want, sizeof(want));
		struct cc_glicko2_result_entry gb = { comp_a.rating, comp_a.deviation, 1 - score };
		ck_assert_int_eq(cc_glicko2_update(&team_b[i], &gb, 1, TAU, &want), 0);
		ck_assert_mem_eq(&out_b[i], &want, sizeof(want));
		/* the winners gain, the losers lose; everyone is known better afterwards */
		if (score == 1)
			ck_assert(out_a[i].rating > team_a[i].rating && out_b[i].rating < team_b[i].rating);
		if (score == 0)
			ck_assert(out_a[i].rating < team_a[i].rating && out_b[i].rating > team_b[i].rating);
		ck_assert_double_lt(out_a[i].deviation, team_a[i].deviation + 1e-9);
	}
}
END_TEST

START_TEST(match_equal_teams)
{
	/* Between sides of identical players a draw changes no rating, and a
	 * win moves both sides by equal and opposite amounts. */
	static const struct cc_glicko2_rating even[] = { { 1650, 120, 0.06 }, { 1650, 120, 0.06 }, { 1650, 120, 0.06 } };
	struct cc_glicko2_rating out_a[3], out_b[3];
	ck_assert_int_eq(cc_glicko2_rate_match(even, 3, even, 3, 0.5, TAU, out_a, out_b), 0);
	for (size_t i = 0; i < 3; i++) {
		ck_assert_double_eq_tol(out_a[i].rating, 1650, 1e-9);
		ck_assert_double_lt(out_a[i].deviation, 120);
		ck_assert_mem_eq(&out_a[i], &out_b[i], sizeof(out_a[i]));
	}
	ck_assert_int_eq(cc_glicko2_rate_match(even, 3, even, 3, 1, TAU, out_a, out_b), 0);
	for (size_t i = 0; i < 3; i++) {
		ck_assert_double_gt(out_a[i].rating, 1650);
		ck_assert_double_eq_tol(out_a[i].rating - 1650, 1650 - out_b[i].rating, 1e-9);
		ck_assert_double_eq_tol(out_a[i].deviation, out_b[i].deviation, 1e-12);
	}
	/* The same mixed team on both sides: each player's two copies agree. */
	ck_assert_int_eq(cc_glicko2_rate_match(team_a, 3, team_a, 3, 0.5, TAU, out_a, out_b), 0);
	for (size_t i = 0; i < 3; i++)
		ck_assert_mem_eq(&out_a[i], &out_b[i], sizeof(out_a[i]));
}
END_TEST

START_TEST(match_in_place_and_refusals)
{
	struct cc_glicko2_rating a[3], b[3], want_a[3], want_b[3];
	memcpy(a, team_a, sizeof(a));
	memcpy(b, team_b, sizeof(b));
	ck_assert_int_eq(cc_glicko2_rate_match(team_a, 3, team_b, 3, 1, TAU, want_a, want_b), 0);
	ck_assert_int_eq(cc_glicko2_rate_match(a, 3, b, 3, 1, TAU, a, b), 0);
	ck_assert_mem_eq(a, want_a, sizeof(a));
	ck_assert_mem_eq(b, want_b, sizeof(b));

	struct cc_glicko2_rating out_a[3] = { sentinel, sentinel, sentinel }, out_b[3] = { sentinel, sentinel, sentinel };
	struct cc_glicko2_rating bad_b[3];
	memcpy(bad_b, team_b, sizeof(bad_b));
	bad_b[2].volatility = NAN;
	ck_assert_int_eq(cc_glicko2_rate_match(team_a, 3, bad_b, 3, 1, TAU, out_a, out_b), CC_EINVAL);
	ck_assert_int_eq(cc_glicko2_rate_match(team_a, 3, team_b, 3, 1.5, TAU, out_a, out_b), CC_EINVAL);
	ck_assert_int_eq(cc_glicko2_rate_match(team_a, 3, team_b, 3, NAN, TAU, out_a, out_b), CC_EINVAL);
	ck_assert_int_eq(cc_glicko2_rate_match(team_a, 3, team_b, 3, 1, 0, out_a, out_b), CC_EINVAL);
	ck_assert_int_eq(cc_glicko2_rate_match(team_a, 0, team_b, 3, 1, TAU, out_a, out_b), CC_EINVAL);
	ck_assert_int_eq(cc_glicko2_rate_match(team_a, 3, NULL, 3, 1, TAU, out_a, out_b), CC_EINVAL);
	ck_assert_int_eq(cc_glicko2_rate_match(team_a, 3, team_b, 3, 1, TAU, out_a, NULL), CC_EINVAL);
	for (size_t i = 0; i < 3; i++)
		ck_assert(is_sentinel(&out_a[i]) && is_sentinel(&out_b[i]));
}
END_TEST

/* ---- refused inputs -------------------------------------------------------------- */

struct invalid_case {
	const char *what;
	struct cc_glicko2_rating player;
	struct cc_glicko2_result_entry game;
	double tau;
	int want;
};

static const struct invalid_case invalid_cases[] = {
	{ "rating NaN", { NAN, 200, 0.06 }, { 1500, 200, 1 }, TAU, CC_EINVAL },
	{ "rating infinite", { INFINITY, 200, 0.06 }, { 1500, 200, 1 }, TAU, CC_EINVAL },
	{ "rating below the domain", { -1, 200, 0.06 }, { 1500, 200, 1 }, TAU, CC_EINVAL },
	{ "rating above the domain", { 5000.5, 200, 0.06 }, { 1500, 200, 1 }, TAU, CC_EINVAL },
	{ "deviation zero", { 1500, 0, 0.06 }, { 1500, 200, 1 }, TAU, CC_EINVAL },
	{ "deviation negative", { 1500, -5, 0.06 }, { 1500, 200, 1 }, TAU, CC_EINVAL },
	{ "deviation above the ceiling", { 1500, 350.01, 0.06 }, { 1500, 200, 1 }, TAU, CC_EINVAL },
	{ "deviation NaN", { 1500, NAN, 0.06 }, { 1500, 200, 1 }, TAU, CC_EINVAL },
	{ "volatility zero", { 1500, 200, 0 }, { 1500, 200, 1 }, TAU, CC_EINVAL },
	{ "volatility negative", { 1500, 200, -0.06 }, { 1500, 200, 1 }, TAU, CC_EINVAL },
	{ "volatility above the domain", { 1500, 200, 1.5 }, { 1500, 200, 1 }, TAU, CC_EINVAL },
	{ "volatility infinite", { 1500, 200, INFINITY }, { 1500, 200, 1 }, TAU, CC_EINVAL },
	{ "opponent rating NaN", { 1500, 200, 0.06 }, { NAN, 200, 1 }, TAU, CC_EINVAL },
	{ "opponent rating out of range", { 1500, 200, 0.06 }, { 9000, 200, 1 }, TAU, CC_EINVAL },
	{ "opponent deviation zero", { 1500, 200, 0.06 }, { 1500, 0, 1 }, TAU, CC_EINVAL },
	{ "opponent deviation infinite", { 1500, 200, 0.06 }, { 1500, INFINITY, 1 }, TAU, CC_EINVAL },
	{ "score below 0", { 1500, 200, 0.06 }, { 1500, 200, -0.1 }, TAU, CC_EINVAL },
	{ "score above 1", { 1500, 200, 0.06 }, { 1500, 200, 1.1 }, TAU, CC_EINVAL },
	{ "score NaN", { 1500, 200, 0.06 }, { 1500, 200, NAN }, TAU, CC_EINVAL },
	{ "tau zero", { 1500, 200, 0.06 }, { 1500, 200, 1 }, 0, CC_EINVAL },
	{ "tau negative", { 1500, 200, 0.06 }, { 1500, 200, 1 }, -0.5, CC_EINVAL },
	{ "tau NaN", { 1500, 200, 0.06 }, { 1500, 200, 1 }, NAN, CC_EINVAL },
	{ "tau too large", { 1500, 200, 0.06 }, { 1500, 200, 1 }, 50, CC_EINVAL },
	{ "valid (control)", { 1500, 200, 0.06 }, { 1500, 200, 1 }, TAU, 0 },
};

START_TEST(invalid_inputs)
{
	const struct invalid_case *c = &invalid_cases[_i];
	struct cc_glicko2_rating out = sentinel;
	int rc = cc_glicko2_update(&c->player, &c->game, 1, c->tau, &out);
	ck_assert_msg(rc == c->want, "%s: got %s, want %s", c->what, cc_errname(rc), cc_errname(c->want));
	if (rc != 0)
		ck_assert_msg(is_sentinel(&out), "%s: out written on failure", c->what);
}
END_TEST

START_TEST(invalid_shapes)
{
	struct cc_glicko2_rating p = { 1500, 200, 0.06 }, out = sentinel;
	static struct cc_glicko2_result_entry games[CC_GLICKO2_MAX_GAMES + 1];
	for (size_t i = 0; i < CC_ARRAY_LEN(games); i++)
		games[i] = (struct cc_glicko2_result_entry){ 1500, 200, 1 };
	ck_assert_int_eq(cc_glicko2_update(&p, NULL, 1, TAU, &out), CC_EINVAL);
	ck_assert_int_eq(cc_glicko2_update(NULL, games, 1, TAU, &out), CC_EINVAL);
	ck_assert_int_eq(cc_glicko2_update(&p, games, CC_GLICKO2_MAX_GAMES + 1, TAU, &out), CC_ETOOBIG);
	ck_assert(is_sentinel(&out));
	ck_assert_int_eq(cc_glicko2_update(&p, games, 1, TAU, NULL), CC_EINVAL);
	/* a bad game anywhere in the list, not only the first */
	games[7].score = 2;
	ck_assert_int_eq(cc_glicko2_update(&p, games, 10, TAU, &out), CC_EINVAL);
	ck_assert(is_sentinel(&out));
	ck_assert_int_eq(cc_glicko2_update(&p, games, CC_GLICKO2_MAX_GAMES, TAU, &out), CC_EINVAL);
	ck_assert_int_eq(cc_glicko2_update(&p, games, 7, TAU, &out), 0);
	/* the defaults form a valid rating */
	struct cc_glicko2_rating fresh = { CC_GLICKO2_DEFAULT_RATING, CC_GLICKO2_DEFAULT_DEVIATION,
					   CC_GLICKO2_DEFAULT_VOLATILITY };
	ck_assert(cc_glicko2_rating_valid(&fresh));
	ck_assert(!cc_glicko2_rating_valid(NULL));
}
END_TEST

static Suite *glicko2_suite(void)
{
	Suite *s = suite_create("glicko2");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, worked_example);
	tcase_add_test(tc, worked_example_step5);
	tcase_add_loop_test(tc, golden_values, 0, CC_ARRAY_LEN(golden_cases));
	tcase_add_loop_test(tc, idle_period, 0, CC_ARRAY_LEN(idle_cases));
	tcase_add_loop_test(tc, extreme_inputs_stay_sane, 0, CC_ARRAY_LEN(extreme_cases));
	tcase_add_test(tc, domain_grid_converges);
	tcase_add_loop_test(tc, adversarial_converges, 0, CC_ARRAY_LEN(adversarial_cases));
	tcase_add_test(tc, budget_stops_the_loop);
	tcase_add_test(tc, volatility_refuses_bad_arguments);
	tcase_add_loop_test(tc, equal_players_move_opposite, 0, 4);
	tcase_add_loop_test(tc, composite, 0, CC_ARRAY_LEN(composite_cases));
	tcase_add_test(tc, composite_refuses);
	tcase_add_loop_test(tc, match_is_composite_updates, 0, 3);
	tcase_add_test(tc, match_equal_teams);
	tcase_add_test(tc, match_in_place_and_refusals);
	tcase_add_loop_test(tc, invalid_inputs, 0, CC_ARRAY_LEN(invalid_cases));
	tcase_add_test(tc, invalid_shapes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return cc_test_run_suite(glicko2_suite());
}
