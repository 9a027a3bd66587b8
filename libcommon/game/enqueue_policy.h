/*
 * enqueue_policy.h - whether a player may queue (SPEC 3, 4, 5), as a
 * verdict over facts. Pure: no I/O. The store reads the facts inside the
 * enqueue transaction (store/tickets.h: cc_ticket_enqueue_facts); cc-api
 * maps the verdict to HTTP.
 *
 * Refusals, in the order they are checked (the first that applies wins):
 *   CLIENT_OUTDATED   protocol below the minimum          426 client_outdated
 *   BANNED            a ban in force                      403 banned
 *   COOLDOWN          a penalty cooldown still running    429 cooldown, retry_after_seconds
 *   NO_REGION_PROBED  no fresh RTT evidence for a region  422 no_region_probed
 * The first two hold whatever the Idempotency-Key says (the request, or
 * the player, is refused outright); the later ones judge a new request
 * only: a replay of a key returns its original answer even if a cooldown
 * started since (cc_enqueue_verdict_before_replay).
 */
#ifndef CC_GAME_ENQUEUE_POLICY_H
#define CC_GAME_ENQUEUE_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#include "sys/cc.h"

enum cc_enqueue_verdict {
	CC_ENQUEUE_OK,
	CC_ENQUEUE_CLIENT_OUTDATED,
	CC_ENQUEUE_BANNED,
	CC_ENQUEUE_COOLDOWN,
	CC_ENQUEUE_NO_REGION_PROBED,
};

/* What the decision looks at; times are already differences on PostgreSQL's clock. */
struct cc_enqueue_facts {
	int64_t protocol_version;          /* the client's */
	int64_t min_protocol_version;      /* configuration */
	bool banned;                       /* banned_until is in the future */
	int64_t cooldown_remaining_seconds; /* longest running cooldown, rounded up; <= 0: none */
	int64_t fresh_regions;             /* configured regions with RTT evidence inside the freshness window */
};

struct cc_enqueue_decision {
	enum cc_enqueue_verdict verdict;
	int64_t retry_after_seconds; /* COOLDOWN: >= 1; otherwise 0 */
};

/* Decides f (not NULL). */
struct cc_enqueue_decision cc_enqueue_decide(const struct cc_enqueue_facts *f);

/* True when verdict refuses even a replay of an Idempotency-Key (see above). */
bool cc_enqueue_verdict_before_replay(enum cc_enqueue_verdict verdict);

/* A stable name for logs and tests ("cooldown"). */
const char *cc_enqueue_verdict_name(enum cc_enqueue_verdict verdict);

#endif
