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
 *
 * Dispatch (SPEC 9, cc-maintenance's services/maintenance/dispatch.c): a
 * row is delivered by publishing its envelope on the NOTIFY channel
 * CC_OUTBOX_CHANNEL in the transaction that marks it published, so the
 * notification and the mark commit together. The aggregate is resource_id:
 * its head is its lowest pending row (neither published nor
 * dead-lettered), and only a head is ever claimed, so the rows of one
 * aggregate leave in id order (= revision order: writers of one resource
 * serialize on its row) however many dispatchers run. A failed head waits
 * --outbox-retry-ms with the rows behind it, and after max_attempts is
 * dead-lettered, which makes the next row the head. The channel, the
 * envelope and the reference are specified in contracts/outbox-events.md.
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
 * not NULL) how many were past the window before. The published purge
 * also raises outbox_purged to the highest position it deleted, in the
 * same transaction (the resume floor, cc_outbox_resume_window).
 */
int cc_outbox_purge_published(struct cc_pg *pg, int64_t older_than_s, int limit, int64_t *n,
			      int64_t *lag) CC_MUST_CHECK;
int cc_outbox_purge_dead_letters(struct cc_pg *pg, int64_t older_than_s, int limit, int64_t *n,
				 int64_t *lag) CC_MUST_CHECK;

/* Why cc_outbox_event_valid refuses ev (a static phrase), or NULL when it does not. */
const char *cc_outbox_event_fault(const struct cc_outbox_event *ev);

/* ---- dispatch ------------------------------------------------------------ */

#define CC_OUTBOX_CHANNEL "cc_events"     /* where delivered envelopes are NOTIFYed */
#define CC_OUTBOX_ERROR_MAX 240           /* bytes of last_error kept */
#define CC_OUTBOX_CLAIM_MAX 1000          /* rows one claim may take */

/* A pending row as the dispatcher claimed it (its own storage, no pointers out). */
struct cc_outbox_row {
	int64_t id;
	int64_t attempts;                 /* failed deliveries so far */
	char event[65];                   /* truncated copies: a stored value that does not */
	char resource_type[33];           /*   fit cannot be valid (the table's CHECKs agree) */
	char resource_id[CC_UUID_BUF];
	int64_t revision;
	size_t n_player_ids;              /* as stored, but at most CC_OUTBOX_MAX_PLAYERS + 1 */
	char player_ids[CC_OUTBOX_MAX_PLAYERS + 1][CC_UUID_BUF]; /* "" for a NULL element */
};

/* Claimed rows; release with cc_outbox_rows_release. */
struct cc_outbox_rows {
	size_t n;
	struct cc_outbox_row *row;        /* malloc'd array of n */
};

/*
 * The next due head of each aggregate, at most limit (1..CC_OUTBOX_CLAIM_MAX)
 * of them in id order, locked FOR UPDATE SKIP LOCKED. A row behind an
 * earlier pending row of its resource_id is never taken, whether that row
 * is waiting for its retry time or locked by another dispatcher (skipped,
 * and with it its aggregate). Runs in the caller's transaction (under
 * SERIALIZABLE a row another dispatcher changed since the snapshot is a
 * serialization failure: the caller retries). Returns 0 with *out filled
 * (n may be 0), CC_EINVAL, CC_ENOMEM or cc_pg_exec's error; *out is
 * written only on success.
 */
int cc_outbox_claim(struct cc_pg *pg, int limit, struct cc_outbox_rows *out) CC_MUST_CHECK;

/* Frees the array; NULL or an empty set is a no-op. */
void cc_outbox_rows_release(struct cc_outbox_rows *rows);

/* The event a claimed row announces, pointing into row (for cc_outbox_event_valid). */
void cc_outbox_row_event(const struct cc_outbox_row *row, const char *player_ptrs[CC_OUTBOX_MAX_PLAYERS + 1],
			 struct cc_outbox_event *ev);

/*
 * Delivers the n claimed rows whose ids are given (in id order): takes the
 * position lock, marks them published with the next positions, and NOTIFYs
 * CC_OUTBOX_CHANNEL with each envelope (or its reference, when the envelope
 * would reach the server's 8000-byte limit), in position order, all in the
 * caller's transaction. *refs (if not NULL) gets how many went as a
 * reference. Returns 0; CC_ESTATE when a row was no longer pending (the
 * caller's claim was not honoured: roll back); CC_EINVAL; cc_pg_exec's
 * error.
 */
int cc_outbox_publish(struct cc_pg *pg, const int64_t *ids, size_t n, size_t *refs) CC_MUST_CHECK;

/*
 * Counts a failed delivery of claimed row id: attempts + 1, last_error
 * (cut to CC_OUTBOX_ERROR_MAX bytes), next try after retry_ms; once the
 * attempts reach max_attempts (>= 1) the row is dead-lettered instead, and
 * the rows behind it proceed. *dead_lettered (if not NULL) says which.
 * Returns 0, CC_ENOTFOUND (no such pending row), CC_EINVAL or
 * cc_pg_exec's error.
 */
int cc_outbox_fail(struct cc_pg *pg, int64_t id, const char *error, int64_t max_attempts, int64_t retry_ms,
		   bool *dead_lettered) CC_MUST_CHECK;

/* Rows not yet delivered, as the caller's transaction sees them. */
struct cc_outbox_backlog {
	int64_t pending;       /* neither published nor dead-lettered */
	int64_t due;           /* of those, due now (no retry time in the future) */
	int64_t dead_lettered; /* dead letters (kept until the retention purge); -1: not counted */
};

/*
 * Counts the backlog (O(pending rows), through outbox_pending) and, when
 * count_dead, the dead letters (O(dead letters): callers do it now and
 * then, not every batch). Returns 0, CC_EINVAL or cc_pg_exec's error.
 */
int cc_outbox_backlog_read(struct cc_pg *pg, bool count_dead, struct cc_outbox_backlog *out) CC_MUST_CHECK;

/*
 * The full envelope (malloc'd JSON text, caller frees) of delivered row id,
 * exactly as the channel would carry it without the size limit: what a
 * listener fetches for a reference. Returns 0, CC_ENOTFOUND (no such row,
 * purged, or not delivered), CC_ENOMEM or cc_pg_exec's error.
 */
int cc_outbox_envelope(struct cc_pg *pg, int64_t id, char **out) CC_MUST_CHECK;

/* ---- the stream's resume (cc-api's GET /v1/events, issue 22) ----------------- */

#define CC_OUTBOX_SINCE_MAX 1000 /* envelopes one cc_outbox_since read may return */

/*
 * Player player_id's delivered rows with position > after, in position
 * order, at most limit (1..CC_OUTBOX_SINCE_MAX): malloc'd JSON text, an
 * array of envelopes exactly as CC_OUTBOX_CHANNEL carries them (never a
 * reference; contracts/outbox-events.md). Fewer than limit: the caller has
 * caught up with what was delivered when its snapshot was taken; limit:
 * read again after the last position. Through index outbox_by_player
 * (migration 0017): the player's own retained rows, whatever the traffic
 * of the others. Returns 0, CC_EINVAL (no player UUID, after < 0, limit
 * out of range), CC_ENOMEM or cc_pg_exec's error.
 */
int cc_outbox_since(struct cc_pg *pg, const char *player_id, int64_t after, int limit, char **out) CC_MUST_CHECK;

/*
 * What a resume from a position can be served from. *floor_pos: the
 * highest position the retention purge has deleted (table outbox_purged,
 * migration 0017, raised by cc_outbox_purge_published in each batch's
 * transaction; 0 when nothing was purged): cc_outbox_since(P) returns
 * every row delivered after P exactly when P >= *floor_pos, whatever order
 * the purge took rows in and however many purgers ran. *newest: the
 * highest position drawn so far (0 before the first delivery); a client's
 * position above it did not come from this database. So: P < *floor_pos
 * or P > *newest: tell the client to resync over REST; otherwise replay
 * cc_outbox_since(P). Call it after cc_outbox_since, or both in one
 * REPEATABLE READ transaction: a purge that commits in between then only
 * raises the floor (a needless resync), never hides a row. *committed (if
 * not NULL): the highest position delivered and visible to this statement
 * (or the floor, when every row was purged). Where a live stream starts:
 * *newest may be a position drawn by a dispatcher that has not committed
 * yet, whose row then commits later with a position below *newest;
 * positions are drawn in commit order (the position lock), so every row
 * committed after this statement has a position above *committed.
 * Returns 0, CC_EINVAL or cc_pg_exec's error.
 */
int cc_outbox_resume_window(struct cc_pg *pg, int64_t *floor_pos, int64_t *newest,
			    int64_t *committed) CC_MUST_CHECK;

/* ---- dead letters (the operator routes) ---------------------------------- */

#define CC_OUTBOX_DEAD_LETTERS_MAX 100 /* dead letters per page */

/*
 * One page of dead letters, newest (highest id) first, ids below before
 * (0 = from the newest), at most limit (1..CC_OUTBOX_DEAD_LETTERS_MAX):
 * malloc'd JSON {"dead_letters": [DeadLetter...], "next_before": id|null}
 * (contracts/v1/openapi.json). Returns 0, CC_EINVAL, CC_ENOMEM or
 * cc_pg_exec's error.
 */
int cc_outbox_dead_letters(struct cc_pg *pg, int64_t before, int limit, char **out) CC_MUST_CHECK;

/* What a replay request found. */
enum cc_outbox_replay {
	CC_OUTBOX_REPLAYED,         /* was dead-lettered with replays = the fence: pending again */
	CC_OUTBOX_ALREADY_REPLAYED, /* this fence's replay happened before: nothing changed */
	CC_OUTBOX_REPLAY_STALE,     /* the row's replays moved past the fence: list it again */
	CC_OUTBOX_NOT_DEAD_LETTERED /* replays = the fence but the row is not a dead letter */
};

/*
 * Replays dead letter id fenced by replays (the count the operator saw in
 * the list): when it is dead-lettered with exactly that many replays it
 * becomes pending again (dead_lettered_at and next_attempt_at cleared,
 * attempts 0, replays + 1), so the dispatcher delivers it as the head of
 * its aggregate, before that aggregate's later pending rows. The same
 * request again finds replays = fence + 1 and changes nothing, so a
 * retried request is safe. *outcome says which; *view (malloc'd JSON, the
 * DeadLetterReplay answer) describes the row after. Returns 0,
 * CC_ENOTFOUND (no row with that id was ever dead-lettered), CC_EINVAL,
 * CC_ENOMEM or cc_pg_exec's error; the outputs are written only on 0.
 */
int cc_outbox_replay(struct cc_pg *pg, int64_t id, int64_t replays, enum cc_outbox_replay *outcome,
		     char **view) CC_MUST_CHECK;

#endif
