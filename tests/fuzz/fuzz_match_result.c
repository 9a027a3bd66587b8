/*
 * fuzz_match_result: a game server's result body (POST
 * /v1/servers/{id}/result) through what the route runs: api_body_parse()
 * with any members, then cc_match_result_parse() (game/match_result.h).
 * An accepted body must:
 *   - hold 2..16 players sorted by id, lowercase UUIDs, every number in its
 *     documented range;
 *   - keep its canonical hash, and read back equal, when re-serialised with
 *     the top-level keys, the players and each player's keys in another
 *     order (the replay rule: order never makes a replay look different);
 *   - pass cc_match_result_check() against its own players exactly when no
 *     id is listed twice and no team's goals exceed its score.
 * A refused body says why in bounded text.
 */
#include <stdint.h>
#include <string.h>

#include "../../services/api/api.h"
#include "game/match_result.h"
#include "sys/crypto.h"
#include "fuzz_support.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool same_result(const struct cc_match_result *a, const struct cc_match_result *b)
{
	if (a->score[0] != b->score[0] || a->score[1] != b->score[1] || a->duration_seconds != b->duration_seconds ||
	    a->n_players != b->n_players)
		return false;
	for (size_t i = 0; i < a->n_players; i++) {
		const struct cc_match_result_player *p = &a->players[i], *q = &b->players[i];
		if (strcmp(p->player_id, q->player_id) != 0 || p->team != q->team || p->goals != q->goals ||
		    p->assists != q->assists || p->saves != q->saves || p->shots != q->shots)
			return false;
	}
	return true;
}

/* A copy of obj's members in another order: rotated by k, reversed when k is odd. */
static cJSON *reordered(const cJSON *obj, unsigned k)
{
	cJSON *items[8], *out = cJSON_CreateObject();
	int n = 0;

	FUZZ_ASSERT(out != NULL);
	for (const cJSON *c = obj->child; c; c = c->next) {
		FUZZ_ASSERT(n < 8);
		items[n++] = (cJSON *)c;
	}
	for (int i = 0; i < n; i++) {
		int j = (int)((unsigned)i + k) % n;
		if (k & 1)
			j = n - 1 - j;
		FUZZ_ASSERT(cJSON_AddItemToObject(out, items[j]->string, cJSON_Duplicate(items[j], true)));
	}
	return out;
}

static void check_accepted(const struct cc_match_result *r, uint8_t k)
{
	char hash[CC_MATCH_RESULT_HASH_BUF], again[CC_MATCH_RESULT_HASH_BUF];
	struct cc_json_error err = {{0}, {0}};
	struct cc_match_result back;
	char ids[CC_MATCH_RESULT_MAX_PLAYERS][CC_UUID_BUF];
	uint8_t teams[CC_MATCH_RESULT_MAX_PLAYERS];
	int goals[2] = { 0, 0 };
	bool twice = false;
	char why[160];

	FUZZ_ASSERT(r->n_players >= 2 && r->n_players <= CC_MATCH_RESULT_MAX_PLAYERS);
	FUZZ_ASSERT(r->score[0] >= 0 && r->score[0] <= CC_MATCH_RESULT_SCORE_MAX);
	FUZZ_ASSERT(r->score[1] >= 0 && r->score[1] <= CC_MATCH_RESULT_SCORE_MAX);
	FUZZ_ASSERT(r->duration_seconds >= 0 && r->duration_seconds <= CC_MATCH_RESULT_DURATION_MAX);
	for (size_t i = 0; i < r->n_players; i++) {
		const struct cc_match_result_player *p = &r->players[i];
		FUZZ_ASSERT(cc_uuid_valid(p->player_id));
		FUZZ_ASSERT(i == 0 || strcmp(r->players[i - 1].player_id, p->player_id) <= 0);
		twice |= i > 0 && strcmp(r->players[i - 1].player_id, p->player_id) == 0;
		FUZZ_ASSERT(p->team == 0 || p->team == 1);
		FUZZ_ASSERT(p->goals >= 0 && p->goals <= CC_MATCH_RESULT_STAT_MAX);
		FUZZ_ASSERT(p->assists >= 0 && p->assists <= CC_MATCH_RESULT_STAT_MAX);
		FUZZ_ASSERT(p->saves >= 0 && p->saves <= CC_MATCH_RESULT_STAT_MAX);
		FUZZ_ASSERT(p->shots >= 0 && p->shots <= CC_MATCH_RESULT_STAT_MAX);
		memcpy(ids[i], p->player_id, CC_UUID_BUF);
		teams[i] = (uint8_t)p->team;
		goals[p->team] += p->goals;
	}
	cc_match_result_hash(r, hash);
	FUZZ_ASSERT(strlen(hash) == 64);

	/* Re-serialise in another order: players rotated/reversed, every object's keys too. */
	cJSON *canon = cc_match_result_to_json(r);
	FUZZ_ASSERT(canon != NULL);
	cJSON *players = cJSON_GetObjectItemCaseSensitive(canon, "players");
	cJSON *shuffled = cJSON_CreateArray();
	FUZZ_ASSERT(shuffled != NULL);
	size_t n = r->n_players;
	for (size_t i = 0; i < n; i++) {
		size_t j = (i + k) % n;
		if (k & 2)
			j = n - 1 - j;
		FUZZ_ASSERT(cJSON_AddItemToArray(shuffled, reordered(cJSON_GetArrayItem(players, (int)j), k + (unsigned)i)));
	}
	FUZZ_ASSERT(cJSON_ReplaceItemInObjectCaseSensitive(canon, "players", shuffled));
	cJSON *body = reordered(canon, k >> 2);
	char *text = cJSON_PrintUnformatted(body);
	FUZZ_ASSERT(text != NULL);
	cJSON_Delete(body);
	cJSON_Delete(canon);

	cJSON *tree = NULL;
	FUZZ_ASSERT(api_body_parse(text, strlen(text), NULL, &tree, &err) == 0);
	FUZZ_ASSERT(cc_match_result_parse(tree, &back, &err) == 0);
	cJSON_Delete(tree);
	free(text);
	cc_match_result_hash(&back, again);
	FUZZ_ASSERT(strcmp(hash, again) == 0);
	FUZZ_ASSERT(same_result(r, &back));

	/* The rules, judged against the result's own players. */
	bool fits = !twice && goals[0] <= r->score[0] && goals[1] <= r->score[1];
	FUZZ_ASSERT((cc_match_result_check(r, (const char (*)[CC_UUID_BUF])ids, teams, n, why, sizeof why) == 0) == fits);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cc_json_error err = {{0}, {0}};
	struct cc_match_result r;
	cJSON *body = NULL;
	char *text;

	if (size < 1)
		return 0;
	/* First byte: how the accepted body is reordered; the rest: the body. */
	text = fuzz_cstr(data + 1, size - 1);
	if (api_body_parse(text, size - 1, NULL, &body, &err) == 0) {
		memset(&err, 0, sizeof err);
		if (cc_match_result_parse(body, &r, &err) == 0)
			check_accepted(&r, data[0]);
		else
			FUZZ_ASSERT(err.message[0]); /* the field may be "" (an unknown member named "") */
		cJSON_Delete(body);
	} else {
		FUZZ_ASSERT(body == NULL && err.message[0]);
	}
	FUZZ_ASSERT(memchr(err.field, '\0', sizeof(err.field)) != NULL);
	FUZZ_ASSERT(memchr(err.message, '\0', sizeof(err.message)) != NULL);
	free(text);
	return 0;
}
