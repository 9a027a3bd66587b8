/*
 * outbox.h - the transactional outbox (SPEC 2): every state change that
 * anyone must hear about is announced by a row written in the same
 * transaction as the change.
 *
 * cc_outbox_append() is the one validating constructor of an envelope
 * (event, resource_type, resource_id, revision, occurred_at, player_ids):
 * a writer that cannot build a valid one gets CC_EINVAL and must fail its
 * own transaction, so a change is never committed unannounced. occurred_at
 * is PostgreSQL's now() (the transaction's time), never a local clock.
 * Inserting also NOTIFYs channel "outbox" with an empty payload so
 * dispatchers wake early: one notification per committed transaction,
 * however many rows it wrote (readers take the rows from the table).
 */
#ifndef CC_OUTBOX_H
#define CC_OUTBOX_H

#include <stddef.h>
#include <stdint.h>

#include "sys/cc.h"
#include "sys/pg.h"

#define CC_OUTBOX_MAX_PLAYERS 64

struct cc_outbox_event {
	const char *event;              /* "ticket.queued": [a-z][a-z0-9_.]{0,63} */
	const char *resource_type;      /* "ticket": [a-z][a-z0-9_]{0,31} */
	const char *resource_id;        /* lowercase UUID of the resource */
	int64_t revision;               /* the resource's revision after the change, >= 1 */
	const char *const *player_ids;  /* players who must hear about it (UUIDs) */
	size_t n_player_ids;            /* 0..CC_OUTBOX_MAX_PLAYERS */
	const char *payload_json;       /* optional JSON object text, NULL = {} */
};

/*
 * Checks every field and inserts the row on pg (inside the caller's
 * transaction). Returns 0, CC_EINVAL for an invalid envelope (nothing is
 * written), or cc_pg_exec's error.
 */
int cc_outbox_append(struct cc_pg *pg, const struct cc_outbox_event *ev) CC_MUST_CHECK;

/* True when ev would be accepted by cc_outbox_append (no database needed). */
bool cc_outbox_event_valid(const struct cc_outbox_event *ev);

/*
 * Retention (cc-maintenance, store/purge.h): deletes at most limit rows
 * published more than older_than_s ago (cc_outbox_purge_published) or
 * dead-lettered more than older_than_s ago (cc_outbox_purge_dead_letters:
 * kept longest, for operators to replay), oldest first, FOR UPDATE SKIP
 * LOCKED. Rows still pending are never touched. *n how many; *lag (when
 * not NULL) how many were past the window before.
 */
int cc_outbox_purge_published(struct cc_pg *pg, int64_t older_than_s, int limit, int64_t *n,
			      int64_t *lag) CC_MUST_CHECK;
int cc_outbox_purge_dead_letters(struct cc_pg *pg, int64_t older_than_s, int limit, int64_t *n,
				 int64_t *lag) CC_MUST_CHECK;

#endif
