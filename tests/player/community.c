/*
 * community.c - cc-player's community mode (issue 23): --players
 * simulated players on one community server (`cc-gameserver
 * --mode=community`), no control plane. Each connects with hello
 * {auth 2, name "player-<seed>-<index>"}; the players are dealt into
 * lobbies of about --lobby-size (a remainder is spread over them, one
 * each, so nobody waits alone); the first of each lobby creates it, the
 * others browse the lobby list and join it by name; everyone readies up,
 * is welcomed into the match, plays it (tests/gameserver/gsconn.h, the
 * game-server test client's play code: 60 Hz input, snapshots, events),
 * checks its match_end against its final snapshot, and is back in its
 * lobby (open, not ready); --community-rounds times; then everyone leaves
 * (the lobbies are deleted) and disconnects. The client and its view
 * (built only from broadcasts, by revision) are tests/gameserver/lobbyc.h.
 *
 * stdout: one summary line, JSON. Exit 0 when every player played every
 * round with agreeing scores and every request was answered as expected.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <enet/enet.h>

#include "../gameserver/lobbyc.h"
#include "player.h"
#include "sys/clock.h"
#include "sys/log.h"
#include "sys/banned.h"

#define STEP_MS 5000 /* one request's answer */

struct run {
	struct lc_client **all;
	int n;
	int failures;
	char problem[256];
};

static void problem(struct run *r, const char *what, const struct lc_client *cl)
{
	if (r->failures++ == 0)
		snprintf(r->problem, sizeof r->problem, "player %d (%s): %s%s%s", cl ? cl->index : -1, cl ? cl->name : "",
			 what, cl && cl->c.reason[0] ? ": " : "", cl ? cl->c.reason : "");
	cc_log_warn("community_problem", CC_LOG_INT("player", cl ? cl->index : -1), CC_LOG_STR("problem", what),
		    CC_LOG_STR("reason", cl ? cl->c.reason : ""));
}

/* Sends nothing: waits for req's answer; true when it is want. */
static bool answered(struct run *r, struct lc_client *cl, uint16_t req, int want, const char *what)
{
	const struct lc_result *res = lc_wait_result(r->all, r->n, cl, req, STEP_MS);
	if (!res || res->result != want) {
		char m[160];
		snprintf(m, sizeof m, "%s: %s", what, res ? cc_wire_lobby_result_name(res->result) : "no answer");
		problem(r, m, cl);
		return false;
	}
	return true;
}

struct round_cond {
	struct run *r;
	int round; /* every player has played this many matches */
};

static bool round_done(void *ctx)
{
	struct round_cond *w = ctx;
	for (int i = 0; i < w->r->n; i++) {
		struct lc_client *cl = w->r->all[i];
		if (cl->c.gone)
			continue;
		if (cl->n_matches < w->round)
			return false;
		const struct lc_lobby *l = lc_view_lobby(&cl->view, cl->lobby_id);
		if (!l || l->state != CC_LOBBY_OPEN)
			return false; /* back in the lobby: open again */
	}
	return true;
}

static bool all_deleted(void *ctx)
{
	struct run *r = ctx;
	for (int i = 0; i < r->n; i++)
		if (!r->all[i]->c.gone && r->all[i]->view.n != 0)
			return false;
	return true;
}

static bool all_gone(void *ctx)
{
	struct run *r = ctx;
	for (int i = 0; i < r->n; i++)
		if (!r->all[i]->c.gone)
			return false;
	return true;
}

int pc_community_run(const struct player_config *cfg)
{
	char host[128];
	const char *colon = strrchr(cfg->community, ':');
	long port = colon ? strtol(colon + 1, NULL, 10) : 0;
	if (!colon || colon == cfg->community || (size_t)(colon - cfg->community) >= sizeof host || port <= 0 ||
	    port > 65535) {
		fprintf(stderr, "cc-player: --community: expected HOST:PORT, got '%s'\n", cfg->community);
		return 2;
	}
	memcpy(host, cfg->community, (size_t)(colon - cfg->community));
	host[colon - cfg->community] = '\0';
	int n = (int)cfg->players, size = (int)cfg->lobby_size;
	if (n < 2) {
		fprintf(stderr, "cc-player: --community needs --players of at least 2\n");
		return 2;
	}
	if (enet_initialize() != 0)
		return 1;
	int64_t t0 = cc_clock_ms();
	struct run r = { .all = calloc((size_t)n, sizeof *r.all), .n = 0 };
	struct lc_client *cl_mem = calloc((size_t)n, sizeof *cl_mem);
	int groups = n / size > 0 ? n / size : 1;
	uint32_t *lobby = calloc((size_t)groups, sizeof *lobby);
	int *group_size = calloc((size_t)groups, sizeof *group_size);
	int status = 1;
	if (!r.all || !cl_mem || !lobby || !group_size)
		goto out;
	FILE *events = strcmp(cfg->log_level, "debug") == 0 ? stderr : NULL;
	char name[64];
	for (int i = 0; i < n; i++) {
		struct lc_client *cl = &cl_mem[i];
		if (lc_connect(cl, i, host, (int)port, events) != 0) {
			problem(&r, "no ENet connection", NULL);
			goto report;
		}
		r.all[r.n++] = cl;
		snprintf(name, sizeof name, "player-%lld-%d", (long long)cfg->seed, i);
		lc_hello(cl, CC_WIRE_PROTOCOL_VERSION, name);
	}
	for (int i = 0; i < n; i++)
		if (!lc_list_all(r.all, r.n, r.all[i], STEP_MS) || r.all[i]->c.gone) {
			problem(&r, "not registered (no lobby_list after hello)", r.all[i]);
			goto report;
		}
	/* Player i is in group i % groups: sizes differ by at most one. */
	for (int i = 0; i < n; i++)
		group_size[i % groups]++;
	for (int g = 0; g < groups; g++) {
		struct lc_client *first = r.all[g];
		snprintf(name, sizeof name, "lobby-%lld-%d", (long long)cfg->seed, g);
		int max = group_size[g] > 16 ? 16 : group_size[g];
		if (!answered(&r, first, lc_create(first, max < 2 ? 2 : max, name), CC_LOBBY_OK, "create"))
			goto report;
		lobby[g] = first->lobby_id;
	}
	/* The others browse the list and join their lobby by its name. */
	for (int i = groups; i < n; i++) {
		struct lc_client *cl = r.all[i];
		snprintf(name, sizeof name, "lobby-%lld-%d", (long long)cfg->seed, i % groups);
		if (!lc_list_all(r.all, r.n, cl, STEP_MS)) {
			problem(&r, "no lobby_list", cl);
			goto report;
		}
		uint32_t id = 0;
		for (int k = 0; k < cl->list_n; k++)
			if (strcmp(cl->list[k].name, name) == 0)
				id = cl->list[k].lobby_id;
		if (id != lobby[i % groups]) {
			problem(&r, "its lobby is not in the list", cl);
			goto report;
		}
		if (!answered(&r, cl, lc_join(cl, id), CC_LOBBY_OK, "join"))
			goto report;
	}
	for (int round = 1; round <= cfg->community_rounds; round++) {
		for (int i = 0; i < n; i++)
			if (!answered(&r, r.all[i], lc_ready(r.all[i], true), CC_LOBBY_OK, "ready"))
				goto report;
		struct round_cond w = { &r, round };
		if (!lc_wait(r.all, r.n, round_done, &w, cfg->game_deadline_seconds * 1000)) {
			for (int i = 0; i < n; i++) {
				struct lc_client *cl = r.all[i];
				const struct lc_lobby *l = lc_view_lobby(&cl->view, cl->lobby_id);
				char m[160];
				if (cl->n_matches < round)
					snprintf(m, sizeof m, "round %d: %s within --game-deadline-seconds", round,
						 cl->welcomes < round ? "no welcome into the match" : "no match_end");
				else if (!l || l->state != CC_LOBBY_OPEN)
					snprintf(m, sizeof m, "round %d: after the match its lobby %u is %s, not open", round,
						 cl->lobby_id, l ? cc_wire_lobby_state_name(l->state) : "gone");
				else
					continue;
				problem(&r, m, cl);
			}
			goto report;
		}
		cc_log_info("community_round", CC_LOG_INT("round", round), CC_LOG_INT("lobbies", groups));
	}
	for (int i = 0; i < n; i++)
		if (!answered(&r, r.all[i], lc_leave(r.all[i]), CC_LOBBY_OK, "leave"))
			goto report;
	if (!lc_wait(r.all, r.n, all_deleted, &r, STEP_MS))
		problem(&r, "the emptied lobbies were not all deleted in every view", NULL);
	for (int i = 0; i < n; i++)
		lc_disconnect(r.all[i], false);
	lc_wait(r.all, r.n, all_gone, &r, 3000);
	status = 0;
report:;
	/* The summary: what the players saw. */
	int plays = 0, agreeing = 0, goals_max = 0, matches = 0;
	for (int g = 0; g < groups && g < r.n; g++)
		matches += r.all[g]->n_matches; /* every lobby's first player played each of its matches */
	uint64_t broadcasts = 0, stale = 0, gaps = 0, snapshots = 0;
	for (int i = 0; i < r.n; i++) {
		struct lc_client *cl = r.all[i];
		broadcasts += cl->broadcasts;
		stale += cl->stale;
		gaps += cl->gaps;
		for (int m = 0; m < cl->n_matches; m++) {
			plays++;
			agreeing += cl->matches[m].agrees;
			snapshots += cl->matches[m].snapshots;
			if (!cl->matches[m].agrees)
				problem(&r, "match_end and the final snapshot disagree", cl);
		}
	}
	if (stale)
		problem(&r, "stale broadcasts (revision not newer)", NULL);
	printf("{\"mode\":\"community\",\"server\":\"%s:%ld\",\"players\":%d,\"lobbies\":%d,\"rounds\":%lld,"
	       "\"matches\":%d,\"plays\":%d,\"agreeing\":%d,\"scores\":[",
	       host, port, n, groups, (long long)cfg->community_rounds, matches, plays, agreeing);
	/* One score per lobby and round, from the lobby's first player. */
	bool first = true;
	for (int g = 0; g < groups && g < r.n; g++)
		for (int m = 0; m < r.all[g]->n_matches; m++) {
			const struct lc_match *mt = &r.all[g]->matches[m];
			printf("%s\"%d-%d\"", first ? "" : ",", mt->ended[0], mt->ended[1]);
			first = false;
			if (mt->ended[0] + mt->ended[1] > goals_max)
				goals_max = mt->ended[0] + mt->ended[1];
		}
	printf("],\"snapshots\":%llu,\"broadcasts\":%llu,\"stale\":%llu,\"gaps\":%llu,\"failures\":%d,\"problem\":",
	       (unsigned long long)snapshots, (unsigned long long)broadcasts, (unsigned long long)stale,
	       (unsigned long long)gaps, r.failures);
	lc_json_str(stdout, r.problem);
	printf(",\"seconds\":%.1f}\n", (double)(cc_clock_ms() - t0) / 1000.0);
	fflush(stdout);
	if (r.failures)
		status = 1;
	(void)goals_max;
out:
	for (int i = 0; i < r.n; i++)
		lc_free(r.all[i]);
	free(r.all);
	free(cl_mem);
	free(lobby);
	free(group_size);
	enet_deinitialize();
	return status;
}
