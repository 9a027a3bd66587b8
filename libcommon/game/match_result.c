/*
 * match_result.c - the result body's shape, its rules and its canonical
 * form. See match_result.h.
 */
#include "game/match_result.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys/crypto.h"
#include "sys/banned.h"

/*
 * By id, then by every number: a total order, so a body listing an id twice
 * (refused later by the check, but hashed first to spot a replay) sorts,
 * and hashes, the same whatever order it listed the twins in.
 */
static int player_cmp(const void *a, const void *b)
{
	const struct cc_match_result_player *p = a, *q = b;
	int c = strcmp(p->player_id, q->player_id);
	if (c)
		return c;
	const int x[6] = { p->team, p->goals, p->assists, p->saves, p->shots, p->bot };
	const int y[6] = { q->team, q->goals, q->assists, q->saves, q->shots, q->bot };
	for (int i = 0; i < 6; i++)
		if (x[i] != y[i])
			return x[i] < y[i] ? -1 : 1;
	return 0;
}

/* Reads one integer field of obj within [0, max] into *out. */
static int get_count(const cJSON *obj, const char *field, int64_t max, int *out, struct cc_json_error *err)
{
	int64_t v;
	int rc = cc_json_get_int(obj, field, true, 0, max, &v, err);
	if (rc == 0)
		*out = (int)v;
	return rc;
}

/* One element of "players"; i is its index, for the messages. */
static int parse_player(const cJSON *item, size_t i, struct cc_match_result_player *p, struct cc_json_error *err)
{
	static const char *const fields[] = { "player_id", "team", "goals", "assists", "saves", "shots", "bot", NULL };
	const char *id = NULL;
	int rc;
	if (!cJSON_IsObject(item)) {
		snprintf(err->field, sizeof err->field, "players");
		snprintf(err->message, sizeof err->message, "players[%zu] must be an object", i);
		return CC_EINVAL;
	}
	if ((rc = cc_json_only_fields(item, fields, err)) != 0 ||
	    (rc = cc_json_get_string(item, "player_id", true, 36, 36, &id, err)) != 0)
		goto out;
	if (!cc_uuid_valid(id)) {
		snprintf(err->field, sizeof err->field, "player_id");
		snprintf(err->message, sizeof err->message, "players[%zu].player_id must be a lowercase UUID", i);
		rc = CC_EINVAL;
		goto out;
	}
	snprintf(p->player_id, sizeof p->player_id, "%s", id);
	if ((rc = get_count(item, "team", 1, &p->team, err)) != 0 ||
	    (rc = get_count(item, "goals", CC_MATCH_RESULT_STAT_MAX, &p->goals, err)) != 0 ||
	    (rc = get_count(item, "assists", CC_MATCH_RESULT_STAT_MAX, &p->assists, err)) != 0 ||
	    (rc = get_count(item, "saves", CC_MATCH_RESULT_STAT_MAX, &p->saves, err)) != 0 ||
	    (rc = get_count(item, "shots", CC_MATCH_RESULT_STAT_MAX, &p->shots, err)) != 0)
		goto out;
	p->bot = false;
	rc = cc_json_get_bool(item, "bot", false, &p->bot, err);
	if (rc == CC_ENOTFOUND)
		rc = 0; /* optional: absent means a human played the whole match */
out:
	/* A field-level message names the field but not which player: add the index. */
	if (rc != 0 && err->field[0] && strncmp(err->message, "players[", 8) != 0) {
		char msg[sizeof err->message + 32];
		snprintf(msg, sizeof msg, "players[%zu]: %s", i, err->message);
		snprintf(err->message, sizeof err->message, "%.*s", (int)sizeof err->message - 1, msg);
	}
	return rc;
}

int cc_match_result_parse(const cJSON *body, struct cc_match_result *out, struct cc_json_error *err)
{
	static const char *const fields[] = { "score", "duration_seconds", "players", NULL };
	struct cc_match_result r;
	const cJSON *score = NULL, *players = NULL;
	int rc;

	memset(&r, 0, sizeof r);
	if ((rc = cc_json_only_fields(body, fields, err)) != 0 ||
	    (rc = cc_json_get_array(body, "score", true, 2, &score, err)) != 0)
		return rc;
	if (cJSON_GetArraySize(score) != 2) {
		cc_json_error_set(err, "score", "field 'score' must be an array of exactly 2 integers");
		return CC_EINVAL;
	}
	for (int t = 0; t < 2; t++) {
		const cJSON *s = cJSON_GetArrayItem(score, t);
		double v = cJSON_IsNumber(s) ? s->valuedouble : -1;
		if (!cJSON_IsNumber(s) || v < 0 || v > CC_MATCH_RESULT_SCORE_MAX || v != (double)(int)v) {
			cc_json_error_set(err, "score", "field 'score' must hold 2 integers between 0 and %d",
					  CC_MATCH_RESULT_SCORE_MAX);
			return CC_EINVAL;
		}
		r.score[t] = (int)v;
	}
	if ((rc = get_count(body, "duration_seconds", CC_MATCH_RESULT_DURATION_MAX, &r.duration_seconds, err)) != 0 ||
	    (rc = cc_json_get_array(body, "players", true, CC_MATCH_RESULT_MAX_PLAYERS + 1, &players, err)) != 0)
		return rc;
	int n = cJSON_GetArraySize(players);
	if (n < 2 || n > CC_MATCH_RESULT_MAX_PLAYERS) {
		cc_json_error_set(err, "players", "field 'players' must list 2 to %d players",
				  CC_MATCH_RESULT_MAX_PLAYERS);
		return CC_EINVAL;
	}
	for (int i = 0; i < n; i++)
		if ((rc = parse_player(cJSON_GetArrayItem(players, i), (size_t)i, &r.players[i], err)) != 0)
			return rc;
	r.n_players = (size_t)n;
	qsort(r.players, r.n_players, sizeof r.players[0], player_cmp);
	*out = r;
	return 0;
}

int cc_match_result_check(const struct cc_match_result *r, const char (*ids)[CC_UUID_BUF], const uint8_t *teams,
			  size_t n, char *why, size_t whylen)
{
	int goals[2] = { 0, 0 };
	/* players are sorted, so a duplicate sits next to its twin. */
	for (size_t i = 1; i < r->n_players; i++)
		if (strcmp(r->players[i - 1].player_id, r->players[i].player_id) == 0) {
			snprintf(why, whylen, "player %s is listed twice", r->players[i].player_id);
			return CC_EINVAL;
		}
	for (size_t i = 0; i < r->n_players; i++) {
		const struct cc_match_result_player *p = &r->players[i];
		size_t j = 0;
		while (j < n && strcmp(ids[j], p->player_id) != 0)
			j++;
		if (j == n) {
			snprintf(why, whylen, "player %s is not in this match", p->player_id);
			return CC_EINVAL;
		}
		if (teams[j] != p->team) {
			snprintf(why, whylen, "player %s plays for team %d, not %d", p->player_id, teams[j], p->team);
			return CC_EINVAL;
		}
		goals[p->team] += p->goals;
	}
	/* Every listed player is a distinct participant: equal counts mean nobody is missing. */
	if (r->n_players != n) {
		snprintf(why, whylen, "the result lists %zu players; the match has %zu", r->n_players, n);
		return CC_EINVAL;
	}
	for (int t = 0; t < 2; t++)
		if (goals[t] > r->score[t]) {
			snprintf(why, whylen, "team %d's players scored %d goals but its score is %d", t, goals[t],
				 r->score[t]);
			return CC_EINVAL;
		}
	return 0;
}

void cc_match_result_hash(const struct cc_match_result *r, char out[CC_MATCH_RESULT_HASH_BUF])
{
	/* "v1 s0 s1 duration\n" then one line per player, by id: at most ~17 + 16 * 80 bytes. */
	char text[64 + CC_MATCH_RESULT_MAX_PLAYERS * 96];
	size_t used = (size_t)snprintf(text, sizeof text, "v1 %d %d %d\n", r->score[0], r->score[1],
				       r->duration_seconds);
	for (size_t i = 0; i < r->n_players && i < CC_MATCH_RESULT_MAX_PLAYERS; i++) {
		const struct cc_match_result_player *p = &r->players[i];
		/* " bot" only when set: a result without bots hashes as it always did. */
		used += (size_t)snprintf(text + used, sizeof text - used, "%s %d %d %d %d %d%s\n", p->player_id, p->team,
					 p->goals, p->assists, p->saves, p->shots, p->bot ? " bot" : "");
	}
	cc_sha256_hex(text, used, out);
}

double cc_match_result_score_team0(const struct cc_match_result *r)
{
	return r->score[0] > r->score[1] ? 1.0 : r->score[0] == r->score[1] ? 0.5 : 0.0;
}

int cc_match_result_winner(const struct cc_match_result *r)
{
	return r->score[0] > r->score[1] ? 0 : r->score[0] < r->score[1] ? 1 : -1;
}

cJSON *cc_match_result_to_json(const struct cc_match_result *r)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *players = NULL;
	const int score[2] = { r->score[0], r->score[1] };
	if (!o || !cJSON_AddItemToObject(o, "score", cJSON_CreateIntArray(score, 2)) ||
	    !cJSON_AddNumberToObject(o, "duration_seconds", r->duration_seconds) ||
	    !(players = cJSON_AddArrayToObject(o, "players")))
		goto fail;
	for (size_t i = 0; i < r->n_players; i++) {
		const struct cc_match_result_player *p = &r->players[i];
		cJSON *e = cJSON_CreateObject();
		if (!e || !cJSON_AddItemToArray(players, e)) {
			cJSON_Delete(e);
			goto fail;
		}
		if (!cJSON_AddStringToObject(e, "player_id", p->player_id) || !cJSON_AddNumberToObject(e, "team", p->team) ||
		    !cJSON_AddNumberToObject(e, "goals", p->goals) || !cJSON_AddNumberToObject(e, "assists", p->assists) ||
		    !cJSON_AddNumberToObject(e, "saves", p->saves) || !cJSON_AddNumberToObject(e, "shots", p->shots) ||
		    (p->bot && !cJSON_AddTrueToObject(e, "bot")))
			goto fail;
	}
	return o;
fail:
	cJSON_Delete(o);
	return NULL;
}
