/*
 * admission.c - see admission.h. The slot table is indexed by slot: a
 * roster has at most CC_ROSTER_MAX_ENTRIES slots.
 */
#include "admission.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "game/token.h"
#include "sys/banned.h"

struct slot_state {
	uint64_t holder;                 /* live connection, 0 = none */
	uint8_t key[GS_RESUME_KEY_LEN];  /* resume key of the latest session */
	bool keyed;                      /* key is valid (a session was admitted and has not lapsed) */
	bool reserved;                   /* vacated, waiting for its player until until_ms */
	int64_t until_ms;
	bool lapse_due;                  /* lapsed and not yet reported by gs_admission_next_lapsed */
};

struct gs_admission {
	struct cc_keyset *keys;                      /* owned */
	struct cc_roster roster;                     /* verified copy */
	char server_id[CC_SERVER_ID_BUF];            /* ours */
	int64_t reserve_ms;
	struct slot_state slots[CC_ROSTER_MAX_ENTRIES];
};

struct gs_admission *gs_admission_create(struct cc_keyset *keys, const struct cc_roster *roster, const char *server_id,
					 int64_t reserve_ms)
{
	struct gs_admission *a = calloc(1, sizeof *a);
	if (!a) {
		cc_keyset_free(keys);
		return NULL;
	}
	a->keys = keys;
	a->roster = *roster;
	a->reserve_ms = reserve_ms < 0 ? 0 : reserve_ms;
	snprintf(a->server_id, sizeof a->server_id, "%s", server_id);
	return a;
}

/* Verifies token and finds its roster entry: the identity checks shared by hello, resume and spectate. */
static int identify(const struct gs_admission *a, const char *token, int64_t now_unix, struct cc_join_claims *c,
		    const struct cc_roster_entry **entry, const char **reason)
{
	enum cc_token_refusal why = CC_TOKEN_MALFORMED;
	int rc = cc_join_token_verify(a->keys, token, now_unix, c, &why);
	if (rc != 0) {
		*reason = cc_token_refusal_name(why);
		return CC_EUNAUTHORIZED;
	}
	/* The roster names this match; the token must also be for this server. */
	if (strcmp(c->server_id, a->server_id) != 0) {
		*reason = cc_token_refusal_name(CC_TOKEN_WRONG_SERVER);
		return CC_EFORBIDDEN;
	}
	rc = cc_roster_admit(&a->roster, c, &why);
	if (rc != 0) {
		*reason = cc_token_refusal_name(why);
		return CC_EFORBIDDEN;
	}
	const struct cc_roster_entry *e = cc_roster_find_player(&a->roster, c->player_id);
	if (!e || e->slot < 0 || e->slot >= CC_ROSTER_MAX_ENTRIES) {
		*reason = cc_token_refusal_name(CC_TOKEN_NOT_IN_ROSTER);
		return CC_EFORBIDDEN;
	}
	*entry = e;
	return 0;
}

/* Settles a reservation that ran out by now_ms: it stays due for gs_admission_next_lapsed. */
static void settle(struct slot_state *st, int64_t now_ms)
{
	if (st->reserved && now_ms >= st->until_ms) {
		st->reserved = false;
		st->keyed = false; /* nothing to resume any more */
		st->lapse_due = true;
	}
}

/* Gives slot e to holder with a fresh key; fills out. */
static void take(struct slot_state *st, const struct cc_roster_entry *e, const struct cc_join_claims *c,
		 uint64_t holder, bool resumed, struct gs_admit *out)
{
	st->holder = holder;
	st->reserved = false;
	cc_random_bytes(st->key, sizeof st->key);
	st->keyed = true;
	out->slot = e->slot;
	out->team = e->team;
	out->generation = c->generation;
	out->resumed = resumed;
	memcpy(out->resume_key, st->key, sizeof st->key);
	snprintf(out->player_id, sizeof out->player_id, "%s", c->player_id);
}

int gs_admission_admit(struct gs_admission *a, const char *token, int64_t now_unix, int64_t now_ms, uint64_t holder,
		       struct gs_admit *out, const char **reason)
{
	struct cc_join_claims c;
	const struct cc_roster_entry *e = NULL;
	int rc = identify(a, token, now_unix, &c, &e, reason);
	if (rc != 0)
		return rc;
	struct slot_state *st = &a->slots[e->slot];
	if (st->holder != 0 && st->holder != holder) {
		*reason = "token_replayed";
		return CC_ECONFLICT;
	}
	settle(st, now_ms);
	take(st, e, &c, holder, st->reserved || st->holder == holder, out);
	return 0;
}

int gs_admission_resume(struct gs_admission *a, const char *token, const uint8_t *key, int64_t now_unix, int64_t now_ms,
			uint64_t holder, struct gs_admit *out, uint64_t *displaced, const char **reason,
			const char **detail)
{
	struct cc_join_claims c;
	const struct cc_roster_entry *e = NULL;
	*displaced = 0;
	*detail = "";
	int rc = identify(a, token, now_unix, &c, &e, reason);
	if (rc != 0) {
		*detail = *reason;
		return rc;
	}
	struct slot_state *st = &a->slots[e->slot];
	settle(st, now_ms);
	/* The key is checked against this identity's own slot: another player's key never matches. */
	if (!st->keyed || !cc_secret_equal(st->key, sizeof st->key, key, GS_RESUME_KEY_LEN)) {
		*reason = "resume_refused";
		*detail = st->keyed ? "the resume key is not this player's session's"
				    : "no session of this player to resume (never admitted, or its reservation lapsed)";
		return CC_ECONFLICT;
	}
	if (!st->reserved && st->holder == 0) {
		/* keyed but neither held nor reserved cannot happen; refuse rather than guess. */
		*reason = "resume_refused";
		*detail = "the slot is not reserved";
		return CC_ECONFLICT;
	}
	if (st->holder != 0 && st->holder != holder)
		*displaced = st->holder;
	take(st, e, &c, holder, true, out);
	return 0;
}

int gs_admission_verify(const struct gs_admission *a, const char *token, int64_t now_unix, int *slot,
			const char **reason)
{
	struct cc_join_claims c;
	const struct cc_roster_entry *e = NULL;
	int rc = identify(a, token, now_unix, &c, &e, reason);
	if (rc == 0 && slot)
		*slot = e->slot;
	return rc;
}

int gs_admission_release(struct gs_admission *a, uint64_t holder, int64_t now_ms)
{
	for (int i = 0; holder && i < CC_ROSTER_MAX_ENTRIES; i++) {
		struct slot_state *st = &a->slots[i];
		if (st->holder != holder)
			continue;
		st->holder = 0;
		st->reserved = true;
		st->until_ms = now_ms + a->reserve_ms;
		settle(st, now_ms); /* reserve_ms 0: lapsed at once */
		return i;
	}
	return -1;
}

int gs_admission_next_lapsed(struct gs_admission *a, int64_t now_ms)
{
	for (int i = 0; i < CC_ROSTER_MAX_ENTRIES; i++) {
		struct slot_state *st = &a->slots[i];
		settle(st, now_ms);
		if (st->lapse_due) {
			st->lapse_due = false;
			return i;
		}
	}
	return -1;
}

/* The entry of slot in r, or NULL. */
static const struct cc_roster_entry *entry_of(const struct cc_roster *r, int slot)
{
	for (size_t i = 0; i < r->count; i++)
		if (r->entries[i].slot == slot)
			return &r->entries[i];
	return NULL;
}

int gs_admission_reload(struct gs_admission *a, const struct cc_roster *next, bool changed[CC_ROSTER_MAX_ENTRIES],
			uint64_t holders[CC_ROSTER_MAX_ENTRIES])
{
	const struct cc_roster *cur = &a->roster;
	if (strcmp(cur->match_id, next->match_id) != 0 || strcmp(cur->allocation_id, next->allocation_id) != 0 ||
	    strcmp(cur->server_id, next->server_id) != 0 || cur->count != next->count)
		return CC_EINVAL;
	for (size_t i = 0; i < next->count; i++) {
		const struct cc_roster_entry *n = &next->entries[i], *o = entry_of(cur, n->slot);
		if (!o || o->team != n->team || n->generation < o->generation)
			return CC_EINVAL;
	}
	for (int i = 0; i < CC_ROSTER_MAX_ENTRIES; i++) {
		changed[i] = false;
		holders[i] = 0;
	}
	for (size_t i = 0; i < next->count; i++) {
		const struct cc_roster_entry *n = &next->entries[i], *o = entry_of(cur, n->slot);
		if (o->generation == n->generation && strcmp(o->player_id, n->player_id) == 0)
			continue;
		changed[n->slot] = true;
		holders[n->slot] = a->slots[n->slot].holder;
		memset(&a->slots[n->slot], 0, sizeof a->slots[n->slot]);
	}
	a->roster = *next;
	return 0;
}

const struct cc_roster *gs_admission_roster(const struct gs_admission *a)
{
	return &a->roster;
}

bool gs_admission_slot_held(const struct gs_admission *a, int slot)
{
	return slot >= 0 && slot < CC_ROSTER_MAX_ENTRIES && a->slots[slot].holder != 0;
}

bool gs_admission_slot_reserved(const struct gs_admission *a, int slot, int64_t now_ms)
{
	return slot >= 0 && slot < CC_ROSTER_MAX_ENTRIES && a->slots[slot].reserved && now_ms < a->slots[slot].until_ms;
}

void gs_admission_free(struct gs_admission *a)
{
	if (!a)
		return;
	cc_keyset_free(a->keys);
	free(a);
}
