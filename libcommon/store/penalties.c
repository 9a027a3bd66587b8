#include "store/penalties.h"

#include <stdio.h>
#include <string.h>

#include "sys/crypto.h"
#include "sys/banned.h"

/*
 * One statement, so counting the earlier offences and inserting stay one
 * step: $4 is the policy's cooldown schedule by prior offences
 * (cc_penalty_schedule), its last entry for every larger count; $5 the
 * rolling window. ON CONFLICT DO NOTHING makes a repeat of the same
 * offence a no-op.
 */
static const char sql_record[] =
	"INSERT INTO penalties (player_id, kind, source_id, cooldown_until) "
	"SELECT $1, $2, $3, now() + make_interval(secs => ($4::int[])[(1 + least(cardinality($4::int[]) - 1, "
	"  (SELECT count(*) FROM penalties WHERE player_id = $1 "
	"     AND created_at > now() - make_interval(secs => $5::int))))::int]) "
	"ON CONFLICT (player_id, kind, source_id) DO NOTHING RETURNING id";

int cc_penalty_record(struct cc_pg *pg, const char *player_id, enum cc_penalty_kind kind,
		      const char *source_id, bool *recorded)
{
	int64_t schedule[CC_PENALTY_ESCALATION_STEPS];
	char steps[CC_PENALTY_ESCALATION_STEPS * 24 + 3], window[24];
	size_t used = 0;
	PGresult *res = NULL;

	cc_penalty_schedule(kind, schedule);
	steps[used++] = '{';
	for (int k = 0; k < CC_PENALTY_ESCALATION_STEPS; k++)
		used += (size_t)snprintf(steps + used, sizeof steps - used, "%s%lld", k ? "," : "",
					 (long long)schedule[k]);
	snprintf(steps + used, sizeof steps - used, "}");
	snprintf(window, sizeof window, "%d", CC_PENALTY_WINDOW_SECONDS);
	const char *p[] = { player_id, cc_penalty_kind_name(kind), source_id, steps, window };
	int rc = cc_pg_exec(pg, sql_record, 5, p, &res);
	if (rc == 0 && recorded)
		*recorded = PQntuples(res) == 1;
	PQclear(res);
	return rc;
}

static const char sql_of_source[] =
	"SELECT player_id FROM penalties WHERE kind = $1 AND source_id = $2 AND player_id = ANY ($3::uuid[]) "
	"ORDER BY player_id";

int cc_penalties_of_source(struct cc_pg *pg, enum cc_penalty_kind kind, const char *source_id,
			   const char (*players)[CC_UUID_BUF], size_t n_players, char (*ids)[CC_UUID_BUF], size_t *n)
{
	char arr[CC_PENALTY_SOURCE_PLAYERS_MAX * (CC_UUID_BUF + 1) + 3];
	size_t u = 0;
	PGresult *res = NULL;
	*n = 0;
	if (n_players > CC_PENALTY_SOURCE_PLAYERS_MAX)
		return CC_EINVAL;
	arr[u++] = '{';
	for (size_t i = 0; i < n_players; i++) {
		if (!cc_uuid_valid(players[i]))
			return CC_EINVAL;
		u += (size_t)snprintf(arr + u, sizeof arr - u, "%s%s", i ? "," : "", players[i]);
	}
	arr[u++] = '}';
	arr[u] = '\0';
	const char *p[] = { cc_penalty_kind_name(kind), source_id, arr };
	int rc = cc_pg_exec(pg, sql_of_source, 3, p, &res);
	for (int i = 0; rc == 0 && i < PQntuples(res) && (size_t)i < n_players; i++)
		snprintf(ids[(*n)++], CC_UUID_BUF, "%s", PQgetvalue(res, i, 0));
	PQclear(res);
	return rc;
}
