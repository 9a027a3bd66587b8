/*
 * server_routes.c - the server routes' statements. See server_routes.h.
 */
#include "store/server_routes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/outbox.h"
#include "sys/charset.h"
#include "sys/banned.h"

#define ALLOCATION_COLUMNS                                                                                    \
	"a.id, a.match_id, a.state, a.provider, coalesce(a.server_id, ''), "                                  \
	"extract(epoch FROM a.workload_expires_at)::bigint, floor(extract(epoch FROM now()))::bigint, " \
	"coalesce(a.image_digest, ''), coalesce(a.server_protocol, 0), "                                      \
	"coalesce(" CC_PG_RFC3339("a.process_ready_at") ", ''), "                                              \
	"coalesce(" CC_PG_RFC3339("a.assignment_ready_at") ", ''), coalesce(a.shutdown_reason, ''), " \
	"coalesce(" CC_PG_RFC3339("a.last_heartbeat_at") ", ''), coalesce(a.last_phase, '')"

static const char sql_allocation[] = "SELECT " ALLOCATION_COLUMNS " FROM allocations a WHERE a.id = $1";
static const char sql_allocation_for_update[] =
	"SELECT " ALLOCATION_COLUMNS " FROM allocations a WHERE a.id = $1 FOR UPDATE";
static const char sql_allocation_of_match[] =
	"SELECT " ALLOCATION_COLUMNS " FROM allocations a WHERE a.match_id = $1";
static const char sql_allocation_of_match_for_update[] =
	"SELECT " ALLOCATION_COLUMNS " FROM allocations a WHERE a.match_id = $1 FOR UPDATE";

/* The liveness signal (migration 0013): the time and phase of the server's last word. */
static const char sql_heartbeat[] =
	"UPDATE allocations SET last_heartbeat_at = now(), last_phase = $2 WHERE id = $1 "
	"RETURNING " CC_PG_RFC3339("last_heartbeat_at");

/* The durable "never connected": no connect receipt was ever taken (generation 0, or no assignment at all). */
static const char sql_never_connected[] =
	"SELECT mp.player_id FROM match_players mp "
	"LEFT JOIN assignments s ON s.match_id = mp.match_id AND s.player_id = mp.player_id "
	"WHERE mp.match_id = $1 AND coalesce(s.connection_generation, 0) = 0 ORDER BY mp.team, mp.player_id";

static const char sql_process_ready[] =
	"UPDATE allocations SET image_digest = $2, server_protocol = $3::int, process_ready_at = now(), "
	"  updated_at = now() WHERE id = $1 AND process_ready_at IS NULL "
	"RETURNING " CC_PG_RFC3339("process_ready_at");

static const char sql_assignment_ready[] =
	"UPDATE allocations SET assignment_ready_at = now(), updated_at = now() "
	"WHERE id = $1 AND assignment_ready_at IS NULL RETURNING " CC_PG_RFC3339("assignment_ready_at");

static const char sql_live[] =
	"SELECT count(*), count(s.player_id) FILTER (WHERE s.expires_at > now()) FROM match_players mp "
	"LEFT JOIN assignments s ON s.match_id = mp.match_id AND s.player_id = mp.player_id WHERE mp.match_id = $1";

static const char sql_roster[] = "SELECT manifest::text FROM rosters WHERE allocation_id = $1";

#define CONNECTION_COLUMNS                                                                              \
	"match_id, player_id, slot, team, connection_generation, connected, coalesce(connection_id, ''), " \
	"coalesce(disconnect_reason, '')"

static const char sql_connection[] =
	"SELECT " CONNECTION_COLUMNS " FROM assignments WHERE match_id = $1 AND player_id = $2";
static const char sql_connection_for_update[] =
	"SELECT " CONNECTION_COLUMNS " FROM assignments WHERE match_id = $1 AND player_id = $2 FOR UPDATE";

static const char sql_connect[] =
	"UPDATE assignments SET connection_generation = connection_generation + 1, connected = true, "
	"  connection_id = $3, connected_at = now(), disconnected_at = NULL, disconnect_reason = NULL "
	"WHERE match_id = $1 AND player_id = $2 AND NOT connected RETURNING " CONNECTION_COLUMNS;

static const char sql_disconnect[] =
	"UPDATE assignments SET connected = false, disconnected_at = now(), disconnect_reason = $4 "
	"WHERE match_id = $1 AND player_id = $2 AND connected AND connection_generation = $3::int "
	"RETURNING " CONNECTION_COLUMNS;

/* Every lease of the match still open ends with the match (cc_server_close_connections). */
static const char sql_close_all[] =
	"UPDATE assignments SET connected = false, disconnected_at = now(), disconnect_reason = $2 "
	"WHERE match_id = $1 AND connected";

static const char sql_release[] =
	"UPDATE allocations SET state = 'RELEASED', revision = revision + 1, shutdown_at = now(), "
	"  shutdown_reason = $2, updated_at = now() "
	"WHERE id = $1 AND state IN ('ALLOCATED', 'PUBLISHED') RETURNING revision";

/*
 * One statement decides the player's view: no row = not a participant.
 * Column 0: 'closed', 'pending' or 'ready'; column 1 the object when ready.
 */
static const char sql_player_assignment[] =
	"SELECT CASE WHEN m.state IN ('COMPLETED', 'FAILED') OR a.state IN ('RELEASED', 'FAILED') THEN 'closed' "
	"            WHEN a.state = 'PUBLISHED' AND s.player_id IS NOT NULL THEN 'ready' ELSE 'pending' END, "
	"  CASE WHEN s.player_id IS NOT NULL AND a.state = 'PUBLISHED' THEN json_build_object("
	"    'match_id', m.id, 'server_id', a.server_id, 'address', a.address, 'port', a.port, "
	"    'join_token', s.join_token, 'slot', s.slot, 'team', s.team, 'generation', s.generation, "
	"    'expires_at', " CC_PG_RFC3339("s.expires_at") ", 'protocol_version', m.protocol_version, "
	"    'playlist', m.playlist, 'arena', m.arena, 'region', m.region)::text END "
	"FROM match_players mp JOIN matches m ON m.id = mp.match_id "
	"LEFT JOIN allocations a ON a.match_id = m.id "
	"LEFT JOIN assignments s ON s.match_id = m.id AND s.player_id = mp.player_id "
	"WHERE mp.match_id = $1 AND mp.player_id = $2";

static void copy(char *dst, size_t cap, const PGresult *res, int row, int col)
{
	snprintf(dst, cap, "%s", PQgetvalue(res, row, col));
}

static int allocation_read(struct cc_pg *pg, const char *sql, const char *key, struct cc_server_allocation *out)
{
	PGresult *res = NULL;
	const char *p[] = { key };
	int rc = cc_pg_exec(pg, sql, 1, p, &res);
	if (rc == 0 && PQntuples(res) != 1)
		rc = CC_ENOTFOUND;
	if (rc != 0)
		goto out;
	memset(out, 0, sizeof *out);
	copy(out->id, sizeof out->id, res, 0, 0);
	copy(out->match_id, sizeof out->match_id, res, 0, 1);
	copy(out->state, sizeof out->state, res, 0, 2);
	copy(out->provider, sizeof out->provider, res, 0, 3);
	copy(out->server_id, sizeof out->server_id, res, 0, 4);
	out->workload_expires_at = strtoll(PQgetvalue(res, 0, 5), NULL, 10);
	out->now = strtoll(PQgetvalue(res, 0, 6), NULL, 10);
	copy(out->image_digest, sizeof out->image_digest, res, 0, 7);
	out->server_protocol = (int32_t)strtol(PQgetvalue(res, 0, 8), NULL, 10);
	copy(out->process_ready_at, sizeof out->process_ready_at, res, 0, 9);
	copy(out->assignment_ready_at, sizeof out->assignment_ready_at, res, 0, 10);
	copy(out->shutdown_reason, sizeof out->shutdown_reason, res, 0, 11);
	copy(out->last_heartbeat_at, sizeof out->last_heartbeat_at, res, 0, 12);
	copy(out->last_phase, sizeof out->last_phase, res, 0, 13);
out:
	PQclear(res);
	return rc;
}

int cc_server_allocation_get(struct cc_pg *pg, const char *id, bool for_update, struct cc_server_allocation *out)
{
	return allocation_read(pg, for_update ? sql_allocation_for_update : sql_allocation, id, out);
}

int cc_server_allocation_of_match(struct cc_pg *pg, const char *match_id, bool for_update,
				  struct cc_server_allocation *out)
{
	return allocation_read(pg, for_update ? sql_allocation_of_match_for_update : sql_allocation_of_match, match_id,
			       out);
}

int cc_server_record_heartbeat(struct cc_pg *pg, struct cc_server_allocation *a, const char *phase)
{
	PGresult *res = NULL;
	if (!phase || (strcmp(phase, "loading") != 0 && strcmp(phase, "playing") != 0 && strcmp(phase, "ended") != 0))
		return CC_EINVAL;
	const char *p[] = { a->id, phase };
	int rc = cc_pg_exec(pg, sql_heartbeat, 2, p, &res);
	if (rc == 0 && PQntuples(res) != 1)
		rc = CC_ENOTFOUND;
	if (rc == 0) {
		copy(a->last_heartbeat_at, sizeof a->last_heartbeat_at, res, 0, 0);
		snprintf(a->last_phase, sizeof a->last_phase, "%s", phase);
	}
	PQclear(res);
	return rc;
}

int cc_server_never_connected(struct cc_pg *pg, const char *match_id, char (*ids)[CC_UUID_BUF], size_t cap,
			      size_t *n)
{
	PGresult *res = NULL;
	const char *p[] = { match_id };
	*n = 0;
	int rc = cc_pg_exec(pg, sql_never_connected, 1, p, &res);
	if (rc == 0 && (size_t)PQntuples(res) > cap)
		rc = CC_EDB;
	for (int i = 0; rc == 0 && i < PQntuples(res); i++)
		copy(ids[(*n)++], CC_UUID_BUF, res, i, 0);
	PQclear(res);
	return rc;
}

int cc_server_record_process_ready(struct cc_pg *pg, struct cc_server_allocation *a, int32_t protocol,
				   const char *image_digest)
{
	char proto[16];
	PGresult *res = NULL;
	snprintf(proto, sizeof proto, "%ld", (long)protocol);
	const char *p[] = { a->id, image_digest, proto };
	int rc = cc_pg_exec(pg, sql_process_ready, 3, p, &res);
	if (rc == 0 && PQntuples(res) != 1)
		rc = CC_ESTATE;
	if (rc == 0) {
		copy(a->process_ready_at, sizeof a->process_ready_at, res, 0, 0);
		snprintf(a->image_digest, sizeof a->image_digest, "%s", image_digest);
		a->server_protocol = protocol;
	}
	PQclear(res);
	return rc;
}

int cc_server_record_assignment_ready(struct cc_pg *pg, struct cc_server_allocation *a)
{
	PGresult *res = NULL;
	const char *p[] = { a->id };
	int rc = cc_pg_exec(pg, sql_assignment_ready, 1, p, &res);
	if (rc == 0 && PQntuples(res) != 1)
		rc = CC_ESTATE;
	if (rc == 0)
		copy(a->assignment_ready_at, sizeof a->assignment_ready_at, res, 0, 0);
	PQclear(res);
	return rc;
}

int cc_server_assignments_live(struct cc_pg *pg, const char *match_id, int *participants, int *live)
{
	PGresult *res = NULL;
	const char *p[] = { match_id };
	int rc = cc_pg_exec(pg, sql_live, 1, p, &res);
	if (rc == 0) {
		*participants = (int)strtol(PQgetvalue(res, 0, 0), NULL, 10);
		*live = (int)strtol(PQgetvalue(res, 0, 1), NULL, 10);
	}
	PQclear(res);
	return rc;
}

int cc_server_roster(struct cc_pg *pg, const char *allocation_id, char **json)
{
	const char *p[] = { allocation_id };
	return cc_pg_exec_text(pg, sql_roster, 1, p, json);
}

static void connection_from_row(const PGresult *res, struct cc_server_connection *c)
{
	memset(c, 0, sizeof *c);
	copy(c->match_id, sizeof c->match_id, res, 0, 0);
	copy(c->player_id, sizeof c->player_id, res, 0, 1);
	c->slot = (int)strtol(PQgetvalue(res, 0, 2), NULL, 10);
	c->team = (int)strtol(PQgetvalue(res, 0, 3), NULL, 10);
	c->generation = (int32_t)strtol(PQgetvalue(res, 0, 4), NULL, 10);
	c->connected = strcmp(PQgetvalue(res, 0, 5), "t") == 0;
	copy(c->connection_id, sizeof c->connection_id, res, 0, 6);
	copy(c->disconnect_reason, sizeof c->disconnect_reason, res, 0, 7);
}

int cc_server_connection_get(struct cc_pg *pg, const char *match_id, const char *player_id, bool for_update,
			     struct cc_server_connection *out)
{
	PGresult *res = NULL;
	const char *p[] = { match_id, player_id };
	int rc = cc_pg_exec(pg, for_update ? sql_connection_for_update : sql_connection, 2, p, &res);
	if (rc == 0 && PQntuples(res) != 1)
		rc = CC_ENOTFOUND;
	if (rc == 0)
		connection_from_row(res, out);
	PQclear(res);
	return rc;
}

int cc_server_connect(struct cc_pg *pg, struct cc_server_connection *c, const char *connection_id)
{
	PGresult *res = NULL;
	const char *p[] = { c->match_id, c->player_id, connection_id };
	int rc = cc_pg_exec(pg, sql_connect, 3, p, &res);
	if (rc == 0 && PQntuples(res) != 1)
		rc = CC_ESTATE;
	if (rc == 0)
		connection_from_row(res, c);
	PQclear(res);
	return rc;
}

int cc_server_disconnect(struct cc_pg *pg, struct cc_server_connection *c, int32_t generation, const char *reason)
{
	char gen[16];
	PGresult *res = NULL;
	snprintf(gen, sizeof gen, "%ld", (long)generation);
	const char *p[] = { c->match_id, c->player_id, gen, reason };
	int rc = cc_pg_exec(pg, sql_disconnect, 4, p, &res);
	if (rc == 0 && PQntuples(res) != 1)
		rc = CC_ESTATE;
	if (rc == 0)
		connection_from_row(res, c);
	PQclear(res);
	return rc;
}

int cc_server_close_connections(struct cc_pg *pg, const char *match_id, const char *reason, int *closed)
{
	PGresult *res = NULL;
	if (closed)
		*closed = 0;
	if (!reason || !cc_charset_valid(reason, 32, CC_CHARSET_LOWER, "_"))
		return CC_EINVAL;
	const char *p[] = { match_id, reason };
	int rc = cc_pg_exec(pg, sql_close_all, 2, p, &res);
	if (rc == 0 && closed)
		*closed = (int)strtol(PQcmdTuples(res), NULL, 10);
	PQclear(res);
	return rc;
}

int cc_server_release(struct cc_pg *pg, struct cc_server_allocation *a, const char *reason)
{
	PGresult *res = NULL;
	const char *p[] = { a->id, reason };
	int rc = cc_pg_exec(pg, sql_release, 2, p, &res);
	if (rc == 0 && PQntuples(res) != 1)
		rc = CC_ESTATE;
	if (rc != 0)
		goto out;
	int64_t revision = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	snprintf(a->state, sizeof a->state, "RELEASED");
	snprintf(a->shutdown_reason, sizeof a->shutdown_reason, "%s", reason);
	struct cc_outbox_event ev = {
		.event = "allocation.released",
		.resource_type = "allocation",
		.resource_id = a->id,
		.revision = revision,
	};
	rc = cc_outbox_append(pg, &ev);
out:
	PQclear(res);
	return rc;
}

int cc_player_assignment_get(struct cc_pg *pg, const char *match_id, const char *player_id,
			     enum cc_player_assignment_status *status, char **json)
{
	PGresult *res = NULL;
	const char *p[] = { match_id, player_id };
	int rc = cc_pg_exec(pg, sql_player_assignment, 2, p, &res);
	if (rc != 0)
		return rc;
	if (PQntuples(res) == 0) {
		*status = CC_ASSIGNMENT_NOT_PARTICIPANT;
	} else if (strcmp(PQgetvalue(res, 0, 0), "ready") == 0) {
		char *copy_text = strdup(PQgetvalue(res, 0, 1));
		if (!copy_text)
			rc = CC_ENOMEM;
		else {
			*json = copy_text;
			*status = CC_ASSIGNMENT_READY;
		}
	} else {
		*status = strcmp(PQgetvalue(res, 0, 0), "closed") == 0 ? CC_ASSIGNMENT_CLOSED : CC_ASSIGNMENT_PENDING;
	}
	PQclear(res);
	return rc;
}
