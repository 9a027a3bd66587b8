/*
 * publish.c - the roster transaction (SPEC 8): for each ALLOCATED allocation of a batch,
 * one assignment per participant (slot, team, generation 1, a join token
 * signed with the active key, its expiry), the roster manifest with its
 * digest (game/roster), ALLOCATED -> PUBLISHED and its outbox event, all in
 * one READ COMMITTED transaction (cc_pg_run_locked): the allocation row's
 * lock and state re-check, and the roster and assignment primary keys, not
 * the isolation level, are what make it safe (allocator.h says why).
 *
 * Idempotent: the allocation row is locked first and a row that is already
 * PUBLISHED (or over) is left alone, so a republish after a crash, or two
 * replicas racing over one row, publish once. The join tokens' expiry is
 * PostgreSQL's now() plus --join-token-ttl-seconds (SPEC 2: deadlines from
 * the database's clock).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "allocator.h"
#include "sys/log.h"
#include "game/join_token.h"
#include "game/roster.h"
#include "store/rosters.h"
#include "sys/banned.h"

/* Scratch space of one publication, reused across a batch. */
struct publish_tx {
	struct allocator *a;
	struct cc_roster_seat seats[CC_ROSTER_MAX_ENTRIES];
	char tokens[CC_ROSTER_MAX_ENTRIES][CC_JOIN_TOKEN_BUF];
	struct cc_roster roster;
};

/* Signs every seat's join token and fills the roster; 0 or the signer's error. */
static int sign_seats(struct publish_tx *t, const struct cc_allocation *al, size_t n)
{
	const struct allocator_config *cfg = t->a->cfg;
	struct cc_roster *r = &t->roster;
	memset(r, 0, sizeof *r);
	snprintf(r->match_id, sizeof r->match_id, "%s", al->match_id);
	snprintf(r->allocation_id, sizeof r->allocation_id, "%s", al->id);
	snprintf(r->server_id, sizeof r->server_id, "%s", al->server_id);
	snprintf(r->key_id, sizeof r->key_id, "%s", cfg->join_key_id);
	r->count = n;
	int64_t expires = al->now_unix + cfg->join_token_ttl_seconds;
	for (size_t i = 0; i < n; i++) {
		struct cc_roster_seat *s = &t->seats[i];
		struct cc_join_claims c;
		memset(&c, 0, sizeof c);
		snprintf(c.key_id, sizeof c.key_id, "%s", cfg->join_key_id);
		snprintf(c.match_id, sizeof c.match_id, "%s", al->match_id);
		snprintf(c.server_id, sizeof c.server_id, "%s", al->server_id);
		c.slot = s->slot;
		c.generation = s->generation;
		snprintf(c.player_id, sizeof c.player_id, "%s", s->player_id);
		c.expires_at = expires;
		int rc = cc_join_token_sign(t->a->join_keys, &c, t->tokens[i], sizeof t->tokens[i]);
		if (rc != 0)
			return rc;
		s->join_token = t->tokens[i];
		s->expires_unix = expires;
		r->entries[i] = (struct cc_roster_entry){ .slot = s->slot, .team = s->team, .generation = s->generation,
							  .expires_at = expires };
		snprintf(r->entries[i].player_id, sizeof r->entries[i].player_id, "%s", s->player_id);
	}
	return 0;
}

/* Publishes allocation id in the caller's transaction; *published says whether this call did. */
static int publish_one(struct cc_pg *pg, struct publish_tx *t, const char *id, bool *published)
{
	struct cc_allocation al;
	char digest[CC_SHA256_HEX_LEN + 1], err[160];
	char *manifest = NULL;
	size_t n = 0;

	*published = false;
	int rc = cc_allocation_lock(pg, id, &al);
	if (rc != 0)
		return rc;
	if (strcmp(al.state, "ALLOCATED") != 0)
		return strcmp(al.state, "REQUESTED") == 0 ? CC_ESTATE : 0; /* published or over: nothing to do */
	rc = cc_roster_participants(pg, al.match_id, t->seats, CC_ROSTER_MAX_ENTRIES, &n);
	if (rc == 0)
		rc = sign_seats(t, &al, n);
	if (rc == 0 && (rc = cc_roster_validate(&t->roster, err, sizeof err)) != 0)
		cc_log_error("roster_invalid", CC_LOG_STR("allocation_id", al.id), CC_LOG_STR("reason", err));
	if (rc == 0)
		rc = cc_roster_digest(&t->roster, digest);
	if (rc == 0)
		rc = cc_roster_manifest_build(&t->roster, &manifest);
	if (rc != 0)
		goto out;
	struct cc_roster_record rec = { .match_id = al.match_id,
					.allocation_id = al.id,
					.key_id = t->a->cfg->join_key_id,
					.digest = digest,
					.manifest_json = manifest };
	rc = cc_roster_insert(pg, &rec, t->seats, n);
	if (rc == 0)
		rc = cc_allocation_set_published(pg, al.id, &al);
	if (rc == 0)
		*published = true;
out:
	free(manifest);
	return rc;
}

struct batch_tx {
	struct publish_tx *t;
	const char *const *ids;
	size_t n;
	bool *published;
};

static int batch_tx(struct cc_pg *pg, void *arg)
{
	struct batch_tx *b = arg;
	for (size_t i = 0; i < b->n; i++) {
		int rc = publish_one(pg, b->t, b->ids[i], &b->published[i]);
		if (rc != 0)
			return rc;
	}
	return 0;
}

void allocator_publish_batch(struct allocator_worker *w, const char *const *ids, size_t n, bool *published, int *rcs)
{
	struct publish_tx *t = calloc(1, sizeof *t);
	if (!t) {
		for (size_t i = 0; i < n; i++)
			rcs[i] = CC_ENOMEM;
		return;
	}
	t->a = w->a;
	struct batch_tx b = { .t = t, .ids = ids, .n = n, .published = published };
	int rc = cc_pg_run_locked(w->pg, batch_tx, &b);
	for (size_t i = 0; i < n; i++)
		rcs[i] = rc;
	if (rc != 0 && n > 1) {
		/* One bad allocation must not hold back the others: each in its own transaction. */
		for (size_t i = 0; i < n; i++) {
			struct batch_tx one = { .t = t, .ids = &ids[i], .n = 1, .published = &published[i] };
			rcs[i] = cc_pg_run_locked(w->pg, batch_tx, &one);
		}
	}
	sodium_memzero(t, sizeof *t); /* join tokens */
	free(t);
}
