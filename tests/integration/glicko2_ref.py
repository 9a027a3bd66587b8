#!/usr/bin/env python3
"""glicko2_ref.py: an independent Glicko-2 for the server-routes test.

Written from Glickman's "Example of the Glicko-2 system" (2013 revision),
steps 1-8, not from our C code: the test feeds it the ratings a match
started from and compares what it computes with what cc-api stored.
The team rule is SPEC 9's (each player rated against the opposing team as
one composite opponent: mean rating, root-mean-square deviation), which
libcommon/game/glicko2.h documents. Of the C code's clamps (glicko2.h)
one binds in ordinary play and is modelled: nobody is less known than a
new player, so phi* of step 6 is capped at 350 / 173.7178 before step 7
(a 350-deviation player reaches it in every game). The volatility and
rating clamps only bound absurd upsets; this script refuses an input that
would reach them.

stdin:  {"tau": 0.5, "score_team0": 1.0,
         "players": [{"id": "...", "team": 0, "rating": r, "deviation": rd, "volatility": s}, ...]}
stdout: {"<id>": {"rating": r', "deviation": rd', "volatility": s'}, ...}
"""
import json
import math
import sys

SCALE = 173.7178
EPSILON = 0.000001


def g(phi):
    return 1.0 / math.sqrt(1.0 + 3.0 * phi * phi / (math.pi * math.pi))


def expected(mu, mu_j, phi_j):
    return 1.0 / (1.0 + math.exp(-g(phi_j) * (mu - mu_j)))


def new_volatility(phi, v, delta, sigma, tau):
    """Step 5: the Illinois algorithm exactly as Glickman lists it."""
    a = math.log(sigma * sigma)

    def f(x):
        ex = math.exp(x)
        return ex * (delta * delta - phi * phi - v - ex) / (2.0 * (phi * phi + v + ex) ** 2) - (x - a) / (tau * tau)

    A = a
    if delta * delta > phi * phi + v:
        B = math.log(delta * delta - phi * phi - v)
    else:
        k = 1
        while f(a - k * tau) < 0:
            k += 1
        B = a - k * tau
    fA, fB = f(A), f(B)
    while abs(B - A) > EPSILON:
        C = A + (A - B) * fA / (fB - fA)
        fC = f(C)
        if fC * fB <= 0:
            A, fA = B, fB
        else:
            fA = fA / 2.0
        B, fB = C, fC
    return math.exp(A / 2.0)


def rate(player, opponents, tau):
    """One rating period (steps 2-8) for player against [(rating, rd, score)]."""
    mu = (player["rating"] - 1500.0) / SCALE
    phi = player["deviation"] / SCALE
    sigma = player["volatility"]
    v_inv = 0.0
    total = 0.0
    for (r_j, rd_j, s_j) in opponents:
        mu_j = (r_j - 1500.0) / SCALE
        phi_j = rd_j / SCALE
        e = expected(mu, mu_j, phi_j)
        v_inv += g(phi_j) ** 2 * e * (1.0 - e)
        total += g(phi_j) * (s_j - e)
    v = 1.0 / v_inv
    delta = v * total
    sigma_new = new_volatility(phi, v, delta, sigma, tau)
    if not 0.0001 <= sigma_new <= 1.0:
        sys.exit("glicko2_ref: the volatility clamp would bind; choose other inputs")
    phi_star = min(math.sqrt(phi * phi + sigma_new * sigma_new), 350.0 / SCALE)
    phi_new = 1.0 / math.sqrt(1.0 / (phi_star * phi_star) + 1.0 / v)
    mu_new = mu + phi_new * phi_new * total
    rating = SCALE * mu_new + 1500.0
    if not 0.0 <= rating <= 5000.0:
        sys.exit("glicko2_ref: the rating clamp would bind; choose other inputs")
    return {"rating": rating, "deviation": SCALE * phi_new, "volatility": sigma_new}


def composite(team):
    n = len(team)
    return (sum(p["rating"] for p in team) / n, math.sqrt(sum(p["deviation"] ** 2 for p in team) / n))


def main():
    req = json.load(sys.stdin)
    teams = [[p for p in req["players"] if p["team"] == t] for t in (0, 1)]
    comp = [composite(teams[0]), composite(teams[1])]
    score = [req["score_team0"], 1.0 - req["score_team0"]]
    out = {}
    for t in (0, 1):
        opp = comp[1 - t]
        for p in teams[t]:
            out[p["id"]] = rate(p, [(opp[0], opp[1], score[t])], req["tau"])
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
