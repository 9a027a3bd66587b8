#include "store/matches.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/outbox.h"
#include "sys/charset.h"
#include "sys/crypto.h"
#include "sys/banned.h"

/* The match and its roster in one statement: one row per player, by team then player. */
static const char sql_create[] =
	"WITH m AS (INSERT INTO matches (proposal_id, playlist, state, region, arena, build, protocol_version, "
	"    team_size) "
	"  SELECT id, playlist, 'ALLOCATING', region, arena, build, protocol_version, team_size "
	"  FROM proposals WHERE id = $1 "
	"  RETURNING id, proposal_id, playlist, state, revision, region, arena, build, protocol_version, team_size), "
	"r AS (INSERT INTO match_players (match_id, player_id, ticket_id, team) "
	"  SELECT m.id, pp.player_id, pp.ticket_id, pp.team FROM m "
	"  JOIN proposal_participants pp ON pp.proposal_id = m.proposal_id RETURNING player_id, team) "
	"SELECT m.id, m.proposal_id, m.playlist, m.state, m.revision, m.region, m.arena, m.build, "
	"  m.protocol_version, m.team_size, r.player_id, r.team FROM m, r ORDER BY r.team, r.player_id";

/*
 * Fills *out from rows of (id, proposal_id, playlist, state, revision,
 * region, arena, build, protocol_version, team_size, player_id, team), one
 * row per player: the shape sql_create and sql_get both return.
 */
static void match_from_rows(const PGresult *res, struct cc_match *out)
{
	memset(out, 0, sizeof *out);
	snprintf(out->id, sizeof out->id, "%s", PQgetvalue(res, 0, 0));
	snprintf(out->proposal_id, sizeof out->proposal_id, "%s", PQgetvalue(res, 0, 1));
	snprintf(out->playlist, sizeof out->playlist, "%s", PQgetvalue(res, 0, 2));
	snprintf(out->state, sizeof out->state, "%s", PQgetvalue(res, 0, 3));
	out->revision = strtoll(PQgetvalue(res, 0, 4), NULL, 10);
	snprintf(out->region, sizeof out->region, "%s", PQgetvalue(res, 0, 5));
	snprintf(out->arena, sizeof out->arena, "%s", PQgetvalue(res, 0, 6));
	snprintf(out->build, sizeof out->build, "%s", PQgetvalue(res, 0, 7));
	out->protocol_version = (int32_t)strtol(PQgetvalue(res, 0, 8), NULL, 10);
	out->team_size = (int)strtol(PQgetvalue(res, 0, 9), NULL, 10);
	for (int i = 0; i < PQntuples(res) && i < CC_FORMATION_MAX_PLAYERS; i++) {
		snprintf(out->player_ids[i], CC_UUID_BUF, "%s", PQgetvalue(res, i, 10));
		out->teams[i] = (uint8_t)strtol(PQgetvalue(res, i, 11), NULL, 10);
		out->n_players++;
	}
}

int cc_match_create(struct cc_pg *pg, const char *proposal_id, struct cc_match *out)
{
	PGresult *res = NULL;
	const char *players[CC_FORMATION_MAX_PLAYERS];
	const char *p[] = { proposal_id };
	int rc = cc_pg_exec(pg, sql_create, 1, p, &res);
	if (rc == 0 && PQntuples(res) == 0)
		rc = CC_ENOTFOUND;
	if (rc != 0)
		goto out;
	match_from_rows(res, out);
	for (size_t i = 0; i < out->n_players; i++)
		players[i] = out->player_ids[i];
	/* The allocator's cue. */
	struct cc_outbox_event ev = {
		.event = "match.created",
		.resource_type = "match",
		.resource_id = out->id,
		.revision = out->revision,
		.player_ids = players,
		.n_player_ids = out->n_players,
	};
	rc = cc_outbox_append(pg, &ev);
out:
	PQclear(res);
	return rc;
}

static const char sql_get[] =
	"SELECT m.id, m.proposal_id, m.playlist, m.state, m.revision, m.region, m.arena, m.build, "
	"  m.protocol_version, m.team_size, mp.player_id, mp.team "
	"FROM matches m JOIN match_players mp ON mp.match_id = m.id WHERE m.id = $1 "
	"ORDER BY mp.team, mp.player_id";
static const char sql_get_for_update[] =
	"SELECT m.id, m.proposal_id, m.playlist, m.state, m.revision, m.region, m.arena, m.build, "
	"  m.protocol_version, m.team_size, mp.player_id, mp.team "
	"FROM matches m JOIN match_players mp ON mp.match_id = m.id WHERE m.id = $1 "
	"ORDER BY mp.team, mp.player_id FOR UPDATE OF m";

/*
 * The one compare-and-set every transition goes through: $2 -> $3, or no
 * row. It stamps the times of migration 0016: started_at on IN_PROGRESS,
 * ended_at and end_reason ($4) on COMPLETED or FAILED.
 */
static const char sql_move[] =
	"UPDATE matches SET state = $3, revision = revision + 1, updated_at = now(), "
	"  started_at = CASE WHEN $3 = 'IN_PROGRESS' THEN now() ELSE started_at END, "
	"  ended_at = CASE WHEN $3 IN ('COMPLETED', 'FAILED') THEN now() ELSE ended_at END, "
	"  end_reason = CASE WHEN $3 IN ('COMPLETED', 'FAILED') THEN $4::text ELSE end_reason END "
	"WHERE id = $1 AND state = $2 RETURNING revision";

int cc_match_get(struct cc_pg *pg, const char *match_id, bool for_update, struct cc_match *out)
{
	PGresult *res = NULL;
	const char *p[] = { match_id };
	int rc = cc_pg_exec(pg, for_update ? sql_get_for_update : sql_get, 1, p, &res);
	if (rc == 0 && PQntuples(res) == 0)
		rc = CC_ENOTFOUND;
	if (rc != 0)
		goto out;
	match_from_rows(res, out);
out:
	PQclear(res);
	return rc;
}

/*
 * Moves m from `from` to `to` and announces event (payload: JSON object text
 * or NULL); end_reason is recorded when `to` is terminal (NULL otherwise).
 */
static int move(struct cc_pg *pg, struct cc_match *m, const char *from, const char *to, const char *event,
		const char *payload, const char *end_reason)
{
	PGresult *res = NULL;
	const char *players[CC_FORMATION_MAX_PLAYERS];
	const char *p[] = { m->id, from, to, end_reason };
	int rc = cc_pg_exec(pg, sql_move, 4, p, &res);
	if (rc == 0 && PQntuples(res) != 1)
		rc = CC_ESTATE;
	if (rc != 0)
		goto out;
	m->revision = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	snprintf(m->state, sizeof m->state, "%s", to);
	for (size_t i = 0; i < m->n_players; i++)
		players[i] = m->player_ids[i];
	struct cc_outbox_event ev = {
		.event = event,
		.resource_type = "match",
		.resource_id = m->id,
		.revision = m->revision,
		.player_ids = players,
		.n_player_ids = m->n_players,
		.payload_json = payload,
	};
	rc = cc_outbox_append(pg, &ev);
out:
	PQclear(res);
	return rc;
}

static const char sql_add_backfill[] =
	"INSERT INTO match_players (match_id, player_id, ticket_id, team, joined_at) "
	"SELECT m.id, $2, $3, $4::smallint, now() FROM matches m WHERE m.id = $1 AND m.state = 'IN_PROGRESS'";

int cc_match_add_backfill_player(struct cc_pg *pg, struct cc_match *m, const char *player_id, const char *ticket_id,
				 int team)
{
	if (!m || !cc_uuid_valid(player_id) || !cc_uuid_valid(ticket_id) || (team != 0 && team != 1))
		return CC_EINVAL;
	if (m->n_players >= CC_FORMATION_MAX_PLAYERS)
		return CC_ETOOBIG;
	char t[4];
	snprintf(t, sizeof t, "%d", team);
	const char *p[] = { m->id, player_id, ticket_id, t };
	PGresult *res = NULL;
	int rc = cc_pg_exec(pg, sql_add_backfill, 4, p, &res);
	if (rc == 0 && strcmp(PQcmdTuples(res), "1") != 0)
		rc = CC_ESTATE;
	PQclear(res);
	if (rc == 0) {
		snprintf(m->player_ids[m->n_players], CC_UUID_BUF, "%s", player_id);
		m->teams[m->n_players++] = (uint8_t)team;
	}
	return rc;
}

int cc_match_mark_process_ready(struct cc_pg *pg, struct cc_match *m)
{
	return move(pg, m, "ALLOCATING", "PROCESS_READY", "match.process_ready", NULL, NULL);
}

int cc_match_mark_assignment_ready(struct cc_pg *pg, struct cc_match *m)
{
	return move(pg, m, "PROCESS_READY", "ASSIGNMENT_READY", "match.assignment_ready", NULL, NULL);
}

int cc_match_start(struct cc_pg *pg, struct cc_match *m)
{
	return move(pg, m, "ASSIGNMENT_READY", "IN_PROGRESS", "match.in_progress", NULL, NULL);
}

int cc_match_await_result(struct cc_pg *pg, struct cc_match *m)
{
	return move(pg, m, "IN_PROGRESS", "RESULT_PENDING", "match.result_pending", NULL, NULL);
}

int cc_match_complete(struct cc_pg *pg, struct cc_match *m)
{
	return move(pg, m, "RESULT_PENDING", "COMPLETED", "match.completed", NULL, "completed");
}

bool cc_match_state_terminal(const char *state)
{
	return strcmp(state, "COMPLETED") == 0 || strcmp(state, "FAILED") == 0;
}

int cc_match_fail(struct cc_pg *pg, struct cc_match *m, const char *reason)
{
	char payload[80];
	char from[CC_MATCH_STATE_BUF];
	if (cc_match_state_terminal(m->state))
		return CC_ESTATE;
	if (!reason || !cc_charset_valid(reason, 32, CC_CHARSET_LOWER, "_"))
		return CC_EINVAL;
	snprintf(payload, sizeof payload, "{\"reason\":\"%s\"}", reason);
	snprintf(from, sizeof from, "%s", m->state);
	return move(pg, m, from, "FAILED", "match.failed", payload, reason);
}
