/*
 * publish.c - the roster transaction (SPEC 8): for each ALLOCATED allocation of a batch,
 * one assignment per participant (slot, team, generation 1, a join token
 * signed with the active key, its expiry), the roster manifest with its
 * digest (game/roster), ALLOCATED -> PUBLISHED and its outbox event, all in
 * one READ COMMITTED transaction (cc_pg_run_locked): the allocation row's
 * lock and state re-check, and the roster and assignment primary keys, not
 * the isolation level, are what make it safe (allocator.h says why). Three
 * statements for the whole batch: lock, participants, then rosters + seats
 * + PUBLISHED + outbox (store/rosters.h); the tokens are signed in between.
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
#include "sys/clock.h"
#include "sys/log.h"
#include "game/join_token.h"
#include "game/roster.h"
#include "store/rosters.h"
#include "sys/banned.h"

/* One publication of a batch: the allocation, its seats, tokens, roster, digest and manifest. */
struct publish_item {
	struct cc_allocation al;
	size_t index; /* into the caller's ids */
	size_t n;     /* seats */
	struct cc_roster_seat seats[CC_ROSTER_MAX_ENTRIES];
	char tokens[CC_ROSTER_MAX_ENTRIES][CC_JOIN_TOKEN_BUF];
	struct cc_roster roster;
	char digest[CC_SHA256_HEX_LEN + 1];
	char *manifest;
};

/* Scratch space of a batch's publication (up to cap items), reused by the one-by-one retries. */
struct publish_tx {
	struct allocator *a;
	struct allocator_worker *w;
	size_t cap;
	struct publish_item *items;
	struct cc_allocation *locked;
	const char **match_ids;
	struct cc_roster_seat *seats; /* cap * CC_ROSTER_MAX_ENTRIES */
	size_t *counts;
	struct cc_roster_record *recs;
	const struct cc_roster_seat **seat_ptrs;
};

/* Signs every seat's join token and fills the roster; 0 or the signer's error. */
static int sign_seats(const struct allocator *a, struct publish_item *t)
{
	const struct allocator_config *cfg = a->cfg;
	const struct cc_allocation *al = &t->al;
	struct cc_roster *r = &t->roster;
	size_t n = t->n;
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
		int rc = cc_join_token_sign(a->join_keys, &c, t->tokens[i], sizeof t->tokens[i]);
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

/* Signs, validates, digests and builds the manifest of item t; 0 or the first error. */
static int prepare_item(const struct allocator *a, struct publish_item *t)
{
	char err[160];
	int rc = sign_seats(a, t);
	if (rc == 0 && (rc = cc_roster_validate(&t->roster, err, sizeof err)) != 0)
		cc_log_error("roster_invalid", CC_LOG_STR("allocation_id", t->al.id), CC_LOG_STR("reason", err));
	if (rc == 0)
		rc = cc_roster_digest(&t->roster, t->digest);
	if (rc == 0)
		rc = cc_roster_manifest_build(&t->roster, &t->manifest);
	return rc;
}

struct batch_tx {
	struct publish_tx *t;
	const char *const *ids;
	size_t n;
	bool *published;
};

/*
 * Publishes ids[0..n) in the caller's transaction, one statement per
 * phase for the whole batch: lock the rows (in id order), read every
 * match's participants, then (after signing in C) write every roster, seat,
 * PUBLISHED and outbox event. A row already PUBLISHED or over is left
 * alone; a REQUESTED one fails the batch (CC_ESTATE).
 */
static int batch_tx(struct cc_pg *pg, void *arg)
{
	struct batch_tx *b = arg;
	struct publish_tx *t = b->t;
	size_t rows = 0, k = 0;
	int rc;

	for (size_t i = 0; i < b->n; i++)
		b->published[i] = false;
	for (size_t i = 0; i < t->cap; i++) {
		free(t->items[i].manifest); /* a retried transaction starts over */
		t->items[i].manifest = NULL;
	}
	if (b->n > t->cap)
		return CC_EINVAL;
	rc = cc_allocations_lock_many(pg, b->ids, b->n, t->locked, t->cap, &rows);
	if (rc != 0)
		return rc;
	for (size_t r = 0; r < rows; r++) {
		if (strcmp(t->locked[r].state, "REQUESTED") == 0)
			return CC_ESTATE;
		if (strcmp(t->locked[r].state, "ALLOCATED") != 0)
			continue; /* published or over: nothing to do */
		struct publish_item *it = &t->items[k];
		it->al = t->locked[r];
		it->index = b->n;
		for (size_t i = 0; i < b->n; i++)
			if (strcmp(b->ids[i], it->al.id) == 0)
				it->index = i;
		if (it->index == b->n)
			CC_BUG("locked an allocation not asked for");
		t->match_ids[k] = it->al.match_id;
		k++;
	}
	if (k == 0)
		return 0;
	/*
	 * The local provider's allocation files, here, under the rows' locks
	 * and after their re-check: an allocation still ALLOCATED cannot be
	 * released (that needs this row) nor its server swept back to IDLE and
	 * given to another allocation until we commit. Delivered outside this
	 * lock (until 17:20), a worker stalled past its lease wrote its file
	 * after the allocation had been taken over, played and released, over
	 * the newer allocation of the reused server (test_stalled_worker_...).
	 */
	if (t->a->local) {
		int64_t t0 = cc_clock_ns();
		for (size_t j = 0; j < k; j++) {
			if ((rc = local_deliver(t->w, &t->items[j].al)) != 0) {
				allocator_count(t->a, "deliver_failed");
				cc_log_error("deliver_failed", CC_LOG_STR("allocation_id", t->items[j].al.id),
					     CC_LOG_STR("server_id", t->items[j].al.server_id), CC_LOG_STR("error", cc_errname(rc)));
				return rc;
			}
		}
		allocator_observe(t->a, "deliver", t0);
	}
	if (allocator_testkit_step)
		allocator_testkit_step("delivered");
	rc = cc_roster_participants_many(pg, t->match_ids, k, t->seats, CC_ROSTER_MAX_ENTRIES, t->counts);
	if (rc != 0)
		return rc;
	for (size_t j = 0; j < k; j++) {
		struct publish_item *it = &t->items[j];
		it->n = t->counts[j];
		memcpy(it->seats, &t->seats[j * CC_ROSTER_MAX_ENTRIES], it->n * sizeof it->seats[0]);
		if ((rc = prepare_item(t->a, it)) != 0)
			return rc;
		t->recs[j] = (struct cc_roster_record){ .match_id = it->al.match_id,
							.allocation_id = it->al.id,
							.key_id = t->a->cfg->join_key_id,
							.digest = it->digest,
							.manifest_json = it->manifest };
		t->seat_ptrs[j] = it->seats;
	}
	rc = cc_rosters_publish_many(pg, t->recs, t->seat_ptrs, t->counts, k);
	if (rc != 0)
		return rc;
	for (size_t j = 0; j < k; j++)
		b->published[t->items[j].index] = true;
	return 0;
}

static void publish_tx_free(struct publish_tx *t)
{
	if (!t)
		return;
	if (t->items) {
		for (size_t i = 0; i < t->cap; i++)
			free(t->items[i].manifest);
		sodium_memzero(t->items, t->cap * sizeof t->items[0]); /* join tokens */
	}
	if (t->seats)
		sodium_memzero(t->seats, t->cap * CC_ROSTER_MAX_ENTRIES * sizeof t->seats[0]);
	free(t->items);
	free(t->locked);
	free(t->match_ids);
	free(t->seats);
	free(t->counts);
	free(t->recs);
	free(t->seat_ptrs);
	free(t);
}

static struct publish_tx *publish_tx_new(struct allocator_worker *w, size_t cap)
{
	struct publish_tx *t = calloc(1, sizeof *t);
	if (!t)
		return NULL;
	t->a = w->a;
	t->w = w;
	t->cap = cap;
	t->items = calloc(cap, sizeof *t->items);
	t->locked = calloc(cap, sizeof *t->locked);
	t->match_ids = calloc(cap, sizeof *t->match_ids);
	t->seats = calloc(cap * CC_ROSTER_MAX_ENTRIES, sizeof *t->seats);
	t->counts = calloc(cap, sizeof *t->counts);
	t->recs = calloc(cap, sizeof *t->recs);
	t->seat_ptrs = calloc(cap, sizeof *t->seat_ptrs);
	if (!t->items || !t->locked || !t->match_ids || !t->seats || !t->counts || !t->recs || !t->seat_ptrs) {
		publish_tx_free(t);
		return NULL;
	}
	return t;
}

void allocator_publish_batch(struct allocator_worker *w, const char *const *ids, size_t n, bool *published, int *rcs)
{
	struct publish_tx *t = n ? publish_tx_new(w, n) : NULL;
	if (!t) {
		for (size_t i = 0; i < n; i++)
			rcs[i] = CC_ENOMEM;
		return;
	}
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
	publish_tx_free(t);
}
