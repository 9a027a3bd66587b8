#include "store/penalties.h"

#include <stdio.h>

#include "sys/banned.h"

#define ESCALATION_FACTOR_CAP 8
#define COOLDOWN_CAP_SECONDS 7200

/*
 * The escalation counts earlier offences (any kind) in the rolling window;
 * ON CONFLICT DO NOTHING makes a repeat of the same offence a no-op.
 */
static const char sql_record[] =
	"INSERT INTO penalties (player_id, kind, source_id, cooldown_until) "
	"SELECT $1, $2, $3, now() + make_interval(secs => least($5::int, $4::int * least($6::int, "
	"  power(2, least(16, (SELECT count(*) FROM penalties WHERE player_id = $1 "
	"            AND created_at > now() - interval '24 hours')))::int))) "
	"ON CONFLICT (player_id, kind, source_id) DO NOTHING RETURNING id";

const char *cc_penalty_kind_name(enum cc_penalty_kind kind)
{
	switch (kind) {
	case CC_PENALTY_DECLINE:
		return "DECLINE";
	case CC_PENALTY_PROPOSAL_TIMEOUT:
		return "PROPOSAL_TIMEOUT";
	case CC_PENALTY_INITIAL_CONNECT_NO_SHOW:
		return "INITIAL_CONNECT_NO_SHOW";
	case CC_PENALTY_EARLY_LEAVE:
		return "EARLY_LEAVE";
	}
	return "INVALID";
}

int cc_penalty_base_seconds(enum cc_penalty_kind kind)
{
	switch (kind) {
	case CC_PENALTY_DECLINE:
		return 60;
	case CC_PENALTY_PROPOSAL_TIMEOUT:
		return 120;
	case CC_PENALTY_INITIAL_CONNECT_NO_SHOW:
		return 300;
	case CC_PENALTY_EARLY_LEAVE:
		return 600;
	}
	return 60;
}

int cc_penalty_record(struct cc_pg *pg, const char *player_id, enum cc_penalty_kind kind,
		      const char *source_id, bool *recorded)
{
	char base[16], cap[16], factor[16];
	PGresult *res = NULL;
	snprintf(base, sizeof base, "%d", cc_penalty_base_seconds(kind));
	snprintf(cap, sizeof cap, "%d", COOLDOWN_CAP_SECONDS);
	snprintf(factor, sizeof factor, "%d", ESCALATION_FACTOR_CAP);
	const char *p[] = { player_id, cc_penalty_kind_name(kind), source_id, base, cap, factor };
	int rc = cc_pg_exec(pg, sql_record, 6, p, &res);
	if (rc == 0 && recorded)
		*recorded = PQntuples(res) == 1;
	PQclear(res);
	return rc;
}
