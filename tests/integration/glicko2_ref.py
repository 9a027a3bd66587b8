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

The rules, as README.md ("Ratings") and the contract (GET /v1/profile/ranked)
state them for players and operators: the composite opponent of a team is
its players' mean rating and the root mean square of their deviations,
sqrt(sum RD_i^2 / n); and deviations are capped at 350: phi* of step 6 is
capped at 350 / 173.7178 before step 7.

stdin:  {"tau": 0.5, "score_team0": 1.0,
         "players": [{"id": "...", "team": 0, "rating": r, "deviation": rd, "volatility": s}, ...]}
stdout: {"<id>": {"rating": r', "deviation": rd', "volatility": s'}, ...}

glicko2_ref.py --self-test [README.md]: checks this script against
Glickman's own worked example (his paper, section "Example calculation")
and against README.md's worked example table (composite and cap), so the
README, this script and, through server_routes.sh, cc-api all agree.
Prints one line and exits 0, or names every mismatch and exits 1.
"""
import json
import math
import os
import re
import sys

SCALE = 173.7178
EPSILON = 0.000001
MAX_DEVIATION = 350.0


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


def rate(player, opponents, tau, cap=True):
    """One rating period (steps 2-8) for player against [(rating, rd, score)].

    cap=False leaves phi* uncapped (Glickman's paper as printed), for --self-test only."""
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
    phi_star = math.sqrt(phi * phi + sigma_new * sigma_new)
    if cap:
        phi_star = min(phi_star, MAX_DEVIATION / SCALE)
    phi_new = 1.0 / math.sqrt(1.0 / (phi_star * phi_star) + 1.0 / v)
    mu_new = mu + phi_new * phi_new * total
    rating = SCALE * mu_new + 1500.0
    if not 0.0 <= rating <= 5000.0:
        sys.exit("glicko2_ref: the rating clamp would bind; choose other inputs")
    return {"rating": rating, "deviation": SCALE * phi_new, "volatility": sigma_new}


def composite(team):
    n = len(team)
    return (sum(p["rating"] for p in team) / n, math.sqrt(sum(p["deviation"] ** 2 for p in team) / n))


def cap_binds(player, tau, opponents):
    """True when step 6's phi* exceeds the ceiling for this player (so the cap changes the result)."""
    return rate(player, opponents, tau, cap=False) != rate(player, opponents, tau)


def self_test(readme_path):
    problems = []

    def near(what, have, want, tol):
        if abs(have - want) > tol:
            problems.append(f"{what}: computed {have:.6f}, expected {want} (tolerance {tol})")

    # Glickman's example: 1500/200/0.06 against 1400/30 (won), 1550/100 (lost), 1700/300 (lost), tau 0.5.
    g_ex = rate({"rating": 1500.0, "deviation": 200.0, "volatility": 0.06},
                [(1400.0, 30.0, 1.0), (1550.0, 100.0, 0.0), (1700.0, 300.0, 0.0)], 0.5)
    near("Glickman's example rating", g_ex["rating"], 1464.06, 0.02)
    near("Glickman's example deviation", g_ex["deviation"], 151.52, 0.01)
    near("Glickman's example volatility", g_ex["volatility"], 0.05999, 0.00001)

    # README.md's worked example: "| A1 | 0 | 1500 / 350 / 0.06 | 1700.25 / 277.02 |" rows.
    text = open(readme_path, encoding="utf-8").read()
    row = re.compile(r"^\s*\|\s*(\w+)\s*\|\s*([01])\s*\|\s*([\d.]+) / ([\d.]+) / ([\d.]+)\s*\|\s*([\d.]+) / ([\d.]+)\s*\|\s*$")
    rows = [m.groups() for m in map(row.match, text.splitlines()) if m]
    if len(rows) < 2:
        problems.append(f"{readme_path}: no worked example table (rows like '| A1 | 0 | 1500 / 350 / 0.06 | 1700.25 / 277.02 |')")
    else:
        players = [{"id": r[0], "team": int(r[1]), "rating": float(r[2]), "deviation": float(r[3]),
                    "volatility": float(r[4])} for r in rows]
        teams = [[p for p in players if p["team"] == t] for t in (0, 1)]
        comp = [composite(teams[0]), composite(teams[1])]
        for t, phrase in ((1, "team 1's composite is"), (0, "team 0's")):
            m = re.search(re.escape(phrase) + r" ([\d.]+) / ([\d.]+)", text)
            if not m:
                problems.append(f"{readme_path}: does not state {phrase} N / N")
            else:
                near(f"README {phrase} rating", comp[t][0], float(m.group(1)), 0.006)
                near(f"README {phrase} deviation", comp[t][1], float(m.group(2)), 0.006)
        capped = 0
        for p, r in zip(players, rows):
            opp = comp[1 - p["team"]]
            games = [(opp[0], opp[1], 1.0 if p["team"] == 0 else 0.0)]
            got = rate(p, games, 0.5)
            near(f"README {p['id']} rating", got["rating"], float(r[5]), 0.006)
            near(f"README {p['id']} deviation", got["deviation"], float(r[6]), 0.006)
            if cap_binds(p, 0.5, games):
                capped += 1
                m = re.search(r"Without the cap " + re.escape(p["id"]) + r" would get ([\d.]+) / ([\d.]+)", text)
                if not m:
                    problems.append(f"{readme_path}: does not say what {p['id']} would get without the cap")
                else:
                    un = rate(p, games, 0.5, cap=False)
                    near(f"README {p['id']} uncapped rating", un["rating"], float(m.group(1)), 0.006)
                    near(f"README {p['id']} uncapped deviation", un["deviation"], float(m.group(2)), 0.006)
        if capped == 0:
            problems.append(f"{readme_path}: in the worked example the 350 cap binds for nobody; it must show it")
    for p in problems:
        print(f"glicko2_ref --self-test: {p}", file=sys.stderr)
    if problems:
        sys.exit(1)
    print(f"glicko2_ref --self-test: Glickman's example and {readme_path}'s worked example "
          f"({len(rows)} players, composite RMS, the 350 cap binding) reproduced")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--self-test":
        self_test(sys.argv[2] if len(sys.argv) > 2 else
                  os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "README.md"))
        return
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
