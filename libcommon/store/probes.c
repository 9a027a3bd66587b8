/*
 * probes.c - the probe_challenges and region_rtts statements. See probes.h.
 */
#include "store/probes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/purge.h"
#include "sys/banned.h"

static const char sql_issue[] =
	"INSERT INTO probe_challenges (nonce_hash, player_id, region, issued_at, expires_at) "
	"VALUES ($1, $2, $3, clock_timestamp(), clock_timestamp() + make_interval(secs => $4::int)) "
	"RETURNING json_build_object('nonce', $5::text, 'region', region, "
	"  'issued_at', " CC_PG_RFC3339("issued_at") ", 'expires_at', " CC_PG_RFC3339("expires_at") ")::text";

/* Consumes the nonce if it is this player's, for this region, unused and unexpired. */
static const char sql_answer[] =
	"UPDATE probe_challenges SET answered_at = clock_timestamp() "
	"WHERE nonce_hash = $1 AND player_id = $2 AND region = $3 "
	"  AND answered_at IS NULL AND expires_at > clock_timestamp() "
	"RETURNING round((extract(epoch FROM answered_at - issued_at) * 1000)::numeric, 3)::float8";

/* Why the nonce was refused: foreign and unknown look the same to the caller. */
static const char sql_nonce_state[] =
	"SELECT answered_at IS NOT NULL, expires_at <= clock_timestamp() FROM probe_challenges "
	"WHERE nonce_hash = $1 AND player_id = $2 AND region = $3";

static const char sql_store_rtt[] =
	"INSERT INTO region_rtts (player_id, region, rtt_ms, measured_at) VALUES ($1, $2, $3::float8, now()) "
	"ON CONFLICT (player_id, region) DO UPDATE SET rtt_ms = EXCLUDED.rtt_ms, measured_at = now() "
	"RETURNING json_build_object('region', region, 'rtt_ms', rtt_ms, "
	"  'measured_at', " CC_PG_RFC3339("measured_at") ")::text";

int cc_probe_issue(struct cc_pg *pg, const char *nonce_hash, const char *player_id, const char *region,
		   int64_t ttl_seconds, const char *nonce, char **json)
{
	char ttl[24];
	snprintf(ttl, sizeof ttl, "%lld", (long long)ttl_seconds);
	const char *params[] = { nonce_hash, player_id, region, ttl, nonce };
	return cc_pg_exec_text(pg, sql_issue, 5, params, json);
}

int cc_probe_answer(struct cc_pg *pg, const char *nonce_hash, const char *player_id, const char *region,
		    struct cc_probe_answer *out)
{
	PGresult *res = NULL;
	const char *p[] = { nonce_hash, player_id, region };
	int rc;

	out->outcome = CC_PROBE_UNKNOWN;
	out->rtt_ms = 0;
	if ((rc = cc_pg_exec(pg, sql_answer, 3, p, &res)) != 0)
		goto out;
	if (PQntuples(res) == 1) {
		out->outcome = CC_PROBE_ANSWERED;
		out->rtt_ms = strtod(PQgetvalue(res, 0, 0), NULL);
		goto out;
	}
	PQclear(res);
	res = NULL;
	if ((rc = cc_pg_exec(pg, sql_nonce_state, 3, p, &res)) != 0)
		goto out;
	if (PQntuples(res) == 0)
		out->outcome = CC_PROBE_UNKNOWN;
	else if (strcmp(PQgetvalue(res, 0, 0), "t") == 0)
		out->outcome = CC_PROBE_USED;
	else
		out->outcome = CC_PROBE_EXPIRED;
out:
	PQclear(res);
	return rc;
}

int cc_region_rtt_store(struct cc_pg *pg, const char *player_id, const char *region, double rtt_ms, char **json)
{
	/* %.17g round-trips the double through float8 exactly. */
	char rtt[40];
	snprintf(rtt, sizeof rtt, "%.17g", rtt_ms);
	const char *params[] = { player_id, region, rtt };
	return cc_pg_exec_text(pg, sql_store_rtt, 3, params, json);
}

/* ---- retention -------------------------------------------------------------- */

static const char sql_purge_count[] =
	"SELECT count(*) FROM probe_challenges WHERE expires_at < now() - make_interval(secs => $1::float8)";

static const char sql_purge[] =
	"DELETE FROM probe_challenges c USING (SELECT nonce_hash FROM probe_challenges "
	"  WHERE expires_at < now() - make_interval(secs => $1::float8) ORDER BY expires_at LIMIT $2::int FOR UPDATE SKIP LOCKED) d "
	"WHERE c.nonce_hash = d.nonce_hash";

int cc_probes_purge_expired(struct cc_pg *pg, int64_t older_than_s, int limit, int64_t *n, int64_t *lag)
{
	return cc_store_purge(pg, sql_purge_count, sql_purge, older_than_s, limit, n, lag);
}
