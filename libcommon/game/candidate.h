/*
 * candidate.h - a QUEUED ticket as the matcher sees it: the shape that
 * formation works on, whichever store it was read from (PostgreSQL through
 * store/candidates.h, or the Redis index in store/candidate_index.h).
 *
 * Times are milliseconds since the epoch on PostgreSQL's clock, and a pass
 * compares them only with PostgreSQL's now() read in the same pass (SPEC 2:
 * never two machines' wall clocks). Pure: no I/O.
 */
#ifndef CC_GAME_CANDIDATE_H
#define CC_GAME_CANDIDATE_H

#include <stddef.h>
#include <stdint.h>

#include "sys/cc.h"

#define CC_CANDIDATE_MAX_REGIONS 16
#define CC_CANDIDATE_REGION_MAX 32
#define CC_CANDIDATE_BUILD_MAX 64

struct cc_candidate_rtt {
	char region[CC_CANDIDATE_REGION_MAX + 1]; /* "eu-west" */
	double rtt_ms;                            /* server-measured probe RTT */
};

struct cc_candidate {
	char ticket_id[CC_UUID_BUF];                  /* lowercase UUID */
	char player_id[CC_UUID_BUF];                  /* distinct identities: never two tickets of one player */
	char build[CC_CANDIDATE_BUILD_MAX + 1];
	int32_t protocol_version;
	double rating;                       /* read in the enqueue transaction */
	double deviation;
	int64_t queued_at_ms;                /* enqueue time (queue order; kept across requeues) */
	int64_t expires_at_ms;               /* heartbeat deadline */
	char party_id[CC_UUID_BUF];          /* the party that queued it, "" = solo (issue 26) */
	int party_size;                      /* tickets the party queued (1 = solo): formation takes all or none */
	size_t n_rtt;                        /* entries used in rtt */
	struct cc_candidate_rtt rtt[CC_CANDIDATE_MAX_REGIONS];
};

/*
 * Parses predicted_rtt JSON ({"eu-west": 23.5, ...}) into c->rtt. Entries
 * beyond CC_CANDIDATE_MAX_REGIONS or malformed ones are skipped. Returns 0
 * or CC_EINVAL when the text is not a JSON object.
 */
int cc_candidate_parse_rtt(struct cc_candidate *c, const char *json) CC_MUST_CHECK;

/* Returns the candidate's RTT to region, or -1 when it has none. */
double cc_candidate_rtt_to(const struct cc_candidate *c, const char *region);

#endif
