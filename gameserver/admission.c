/*
 * admission.c - see admission.h. The holder table is indexed by slot:
 * a roster has at most CC_ROSTER_MAX_ENTRIES slots.
 */
#include "admission.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "game/token.h"
#include "sys/banned.h"

struct gs_admission {
	struct cc_keyset *keys;                      /* owned */
	struct cc_roster roster;                     /* verified copy */
	char server_id[CC_SERVER_ID_BUF];            /* ours */
	uint64_t holder[CC_ROSTER_MAX_ENTRIES];      /* by slot: 0 = free */
};

struct gs_admission *gs_admission_create(struct cc_keyset *keys, const struct cc_roster *roster, const char *server_id)
{
	struct gs_admission *a = calloc(1, sizeof *a);
	if (!a) {
		cc_keyset_free(keys);
		return NULL;
	}
	a->keys = keys;
	a->roster = *roster;
	snprintf(a->server_id, sizeof a->server_id, "%s", server_id);
	return a;
}

int gs_admission_admit(struct gs_admission *a, const char *token, int64_t now_unix, uint64_t holder,
		       struct gs_admit *out, const char **reason)
{
	struct cc_join_claims c;
	enum cc_token_refusal why = CC_TOKEN_MALFORMED;
	int rc = cc_join_token_verify(a->keys, token, now_unix, &c, &why);
	if (rc != 0) {
		*reason = cc_token_refusal_name(why);
		return CC_EUNAUTHORIZED;
	}
	/* The roster names this match; the token must also be for this server. */
	if (strcmp(c.server_id, a->server_id) != 0) {
		*reason = cc_token_refusal_name(CC_TOKEN_WRONG_SERVER);
		return CC_EFORBIDDEN;
	}
	rc = cc_roster_admit(&a->roster, &c, &why);
	if (rc != 0) {
		*reason = cc_token_refusal_name(why);
		return CC_EFORBIDDEN;
	}
	const struct cc_roster_entry *e = cc_roster_find_player(&a->roster, c.player_id);
	if (!e || e->slot < 0 || e->slot >= CC_ROSTER_MAX_ENTRIES) {
		*reason = cc_token_refusal_name(CC_TOKEN_NOT_IN_ROSTER);
		return CC_EFORBIDDEN;
	}
	if (a->holder[e->slot] != 0 && a->holder[e->slot] != holder) {
		*reason = "token_replayed";
		return CC_ECONFLICT;
	}
	a->holder[e->slot] = holder;
	out->slot = e->slot;
	out->team = e->team;
	out->generation = c.generation;
	snprintf(out->player_id, sizeof out->player_id, "%s", c.player_id);
	return 0;
}

void gs_admission_release(struct gs_admission *a, uint64_t holder)
{
	for (int i = 0; holder && i < CC_ROSTER_MAX_ENTRIES; i++)
		if (a->holder[i] == holder)
			a->holder[i] = 0;
}

const struct cc_roster *gs_admission_roster(const struct gs_admission *a)
{
	return &a->roster;
}

bool gs_admission_slot_held(const struct gs_admission *a, int slot)
{
	return slot >= 0 && slot < CC_ROSTER_MAX_ENTRIES && a->holder[slot] != 0;
}

void gs_admission_free(struct gs_admission *a)
{
	if (!a)
		return;
	cc_keyset_free(a->keys);
	free(a);
}
