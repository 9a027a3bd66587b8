/*
 * probes.h - the one owner of the probe_challenges and region_rtts tables
 * (SPEC 5): a challenge's single-use nonce (stored hashed, so any replica
 * checks the answer), its answer, and the RTT kept per player and region.
 * The RTT is the interval between issue and answer on PostgreSQL's clock,
 * so nothing the client reports reaches placement. Copying it into the
 * player's waiting ticket is store/tickets.h's cc_ticket_set_rtt.
 *
 * Every function runs inside the caller's transaction on pg (sys/pg.h)
 * and returns what it read or changed; no PGresult leaves this module.
 * A json out-parameter receives malloc'd text the caller frees; struct
 * cc_probe_answer is a plain value.
 */
#ifndef CC_STORE_PROBES_H
#define CC_STORE_PROBES_H

#include <stdint.h>

#include "sys/cc.h"
#include "sys/pg.h"

/*
 * Issues a challenge for player_id in region: stores nonce_hash, expiring
 * ttl_seconds from now (clock_timestamp()), and sets *json to the
 * contract's challenge {nonce, region, issued_at, expires_at}, nonce being
 * the plain nonce the client receives. Returns 0, CC_ENOMEM, CC_ENOTFOUND
 * (no row back) or cc_pg_exec's error.
 */
CC_MUST_CHECK int cc_probe_issue(struct cc_pg *pg, const char *nonce_hash, const char *player_id, const char *region,
				 int64_t ttl_seconds, const char *nonce, char **json);

/* How an answer went; the refusals say why (a foreign nonce reads as unknown). */
enum cc_probe_outcome {
	CC_PROBE_ANSWERED = 0, /* consumed now; rtt_ms holds the measured RTT */
	CC_PROBE_UNKNOWN,      /* no such challenge for this player and region */
	CC_PROBE_USED,         /* answered before */
	CC_PROBE_EXPIRED,      /* unanswered past its expiry */
};

struct cc_probe_answer {
	enum cc_probe_outcome outcome;
	double rtt_ms; /* issue to answer on PostgreSQL's clock, ms rounded to 3 places; 0 unless ANSWERED */
};

/*
 * Consumes the challenge nonce_hash if it is player_id's, for region,
 * unused and unexpired; otherwise reads why not. Returns 0 with *out
 * filled (a refusal is an outcome, not an error), or cc_pg_exec's error.
 */
CC_MUST_CHECK int cc_probe_answer(struct cc_pg *pg, const char *nonce_hash, const char *player_id, const char *region,
				  struct cc_probe_answer *out);

/*
 * Keeps rtt_ms as player_id's latest RTT to region (one row per player and
 * region) and sets *json to the contract's {region, rtt_ms, measured_at}.
 * Returns 0, CC_ENOMEM, CC_ENOTFOUND (no row back) or cc_pg_exec's error.
 */
CC_MUST_CHECK int cc_region_rtt_store(struct cc_pg *pg, const char *player_id, const char *region, double rtt_ms,
				      char **json);

/*
 * Retention (cc-maintenance, store/purge.h): deletes at most limit probe
 * challenges that expired more than older_than_s ago (answered or not: an
 * answer after expiry is refused either way), oldest first, FOR UPDATE
 * SKIP LOCKED. region_rtts is kept (the latest RTT per region). *n how
 * many; *lag (when not NULL) how many were past the window before.
 */
int cc_probes_purge_expired(struct cc_pg *pg, int64_t older_than_s, int limit, int64_t *n, int64_t *lag) CC_MUST_CHECK;

#endif
