#include "store/game_servers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys/charset.h"
#include "sys/crypto.h"
#include "sys/banned.h"

/* The columns every statement here returns, read by server_from_row. */
#define COLUMNS "id, state, address, port, coalesce(allocation_id::text, '')"

/*
 * Spawned or restarted: a new row is IDLE, a DEAD one comes back IDLE, an
 * IDLE or ALLOCATED one keeps its state (state is only SET when it changes,
 * so the transition trigger sees DEAD -> IDLE and nothing else).
 */
static const char sql_register_local[] =
	"INSERT INTO game_servers AS g (id, provider, region, address, port, state, owner, pid) "
	"VALUES ($1, 'local', $2, $3, $4::int, 'IDLE', $5, $6::int) "
	"ON CONFLICT (id) DO UPDATE SET owner = EXCLUDED.owner, pid = EXCLUDED.pid, region = EXCLUDED.region, "
	"  state = CASE WHEN g.state = 'DEAD' THEN 'IDLE' ELSE g.state END, "
	"  revision = g.revision + 1, updated_at = now() "
	"  WHERE g.provider = 'local' AND g.address = EXCLUDED.address AND g.port = EXCLUDED.port "
	"RETURNING " COLUMNS;

/*
 * Lowest free port first; SKIP LOCKED so that racing claims each take a
 * different row instead of queueing behind one another.
 */
static const char sql_claim_idle[] =
	"UPDATE game_servers SET state = 'ALLOCATED', allocation_id = $2::uuid, revision = revision + 1, "
	"  updated_at = now() "
	"WHERE id = (SELECT id FROM game_servers WHERE provider = 'local' AND owner = $1 AND state = 'IDLE' "
	"  ORDER BY port LIMIT 1 FOR UPDATE SKIP LOCKED) "
	"RETURNING " COLUMNS;

static const char sql_mark_dead[] =
	"UPDATE game_servers SET state = 'DEAD', pid = NULL, revision = revision + 1, updated_at = now() "
	"WHERE id = $1 AND provider = 'local' AND owner = $2 AND state = 'IDLE' RETURNING id";

/*
 * A GameServer allocated to us. A repeat for the same allocation changes
 * nothing; the WHERE makes a row serving another allocation come back empty.
 */
static const char sql_record_agones[] =
	"INSERT INTO game_servers AS g (id, provider, region, address, port, state, allocation_id) "
	"VALUES ($1, 'agones', $2, $3, $4::int, 'ALLOCATED', $5::uuid) "
	"ON CONFLICT (id) DO UPDATE SET updated_at = g.updated_at "
	"  WHERE g.allocation_id = EXCLUDED.allocation_id "
	"RETURNING " COLUMNS;

/* Servers whose allocation is over go back to the pool. */
static const char sql_release_finished[] =
	"UPDATE game_servers g SET state = 'IDLE', allocation_id = NULL, revision = g.revision + 1, "
	"  updated_at = now() "
	"WHERE g.id IN (SELECT s.id FROM game_servers s JOIN allocations a ON a.id = s.allocation_id "
	"  WHERE s.provider = 'local' AND s.owner = $1 AND s.state = 'ALLOCATED' "
	"  AND a.state IN ('RELEASED', 'FAILED') ORDER BY s.port LIMIT $2::int FOR UPDATE OF s SKIP LOCKED) "
	"RETURNING g.id";

bool cc_game_server_id_valid(const char *id)
{
	return id && id[0] && cc_charset_valid(id, CC_GAME_SERVER_ID_BUF - 1, CC_CHARSET_ALNUM, "._-");
}

/* Fills *out from row 0 of res (COLUMNS). */
static void server_from_row(const PGresult *res, struct cc_game_server *out)
{
	memset(out, 0, sizeof *out);
	snprintf(out->id, sizeof out->id, "%s", PQgetvalue(res, 0, 0));
	snprintf(out->state, sizeof out->state, "%s", PQgetvalue(res, 0, 1));
	snprintf(out->address, sizeof out->address, "%s", PQgetvalue(res, 0, 2));
	out->port = (int)strtol(PQgetvalue(res, 0, 3), NULL, 10);
	snprintf(out->allocation_id, sizeof out->allocation_id, "%s", PQgetvalue(res, 0, 4));
}

/* Runs sql for one row into *out; none is not_found (the caller's meaning of "no row"). */
static int one_server(struct cc_pg *pg, const char *sql, int n, const char *const *p, int not_found,
		      struct cc_game_server *out)
{
	PGresult *res = NULL;
	int rc = cc_pg_exec(pg, sql, n, p, &res);
	if (rc == 0 && PQntuples(res) != 1)
		rc = not_found;
	if (rc == 0)
		server_from_row(res, out);
	PQclear(res);
	return rc;
}

int cc_game_server_register_local(struct cc_pg *pg, const char *id, const char *region, const char *address,
				  int port, const char *owner, int pid, struct cc_game_server *out)
{
	char port_s[16], pid_s[16];
	if (!cc_game_server_id_valid(id) || !region || !address || !owner || port < 1 || port > 65535)
		return CC_EINVAL;
	snprintf(port_s, sizeof port_s, "%d", port);
	snprintf(pid_s, sizeof pid_s, "%d", pid);
	const char *p[] = { id, region, address, port_s, owner, pid_s };
	/* No row back: the id exists with another provider or endpoint, which only a misconfiguration makes. */
	return one_server(pg, sql_register_local, 6, p, CC_ECONFLICT, out);
}

int cc_game_server_claim_idle(struct cc_pg *pg, const char *owner, const char *allocation_id,
			      struct cc_game_server *out)
{
	if (!owner || !cc_uuid_valid(allocation_id))
		return CC_EINVAL;
	const char *p[] = { owner, allocation_id };
	return one_server(pg, sql_claim_idle, 2, p, CC_ENOTFOUND, out);
}

int cc_game_server_mark_dead(struct cc_pg *pg, const char *id, const char *owner, bool *changed)
{
	PGresult *res = NULL;
	const char *p[] = { id, owner };
	int rc = cc_pg_exec(pg, sql_mark_dead, 2, p, &res);
	if (rc == 0)
		*changed = PQntuples(res) == 1;
	PQclear(res);
	return rc;
}

int cc_game_server_record_agones(struct cc_pg *pg, const char *id, const char *region, const char *address,
				 int port, const char *allocation_id, struct cc_game_server *out)
{
	char port_s[16];
	if (!cc_game_server_id_valid(id) || !region || !address || !address[0] ||
	    strlen(address) >= CC_GAME_SERVER_ADDR_BUF || port < 1 || port > 65535 || !cc_uuid_valid(allocation_id))
		return CC_EINVAL;
	snprintf(port_s, sizeof port_s, "%d", port);
	const char *p[] = { id, region, address, port_s, allocation_id };
	return one_server(pg, sql_record_agones, 5, p, CC_ECONFLICT, out);
}

int cc_game_servers_release_finished(struct cc_pg *pg, const char *owner, char (*ids)[CC_GAME_SERVER_ID_BUF],
				     size_t cap, size_t *n)
{
	char limit_s[24];
	PGresult *res = NULL;
	if (!owner || !ids || cap == 0)
		return CC_EINVAL;
	snprintf(limit_s, sizeof limit_s, "%zu", cap);
	const char *p[] = { owner, limit_s };
	int rc = cc_pg_exec(pg, sql_release_finished, 2, p, &res);
	if (rc == 0) {
		size_t rows = (size_t)PQntuples(res);
		for (size_t i = 0; i < rows && i < cap; i++)
			snprintf(ids[i], CC_GAME_SERVER_ID_BUF, "%s", PQgetvalue(res, (int)i, 0));
		*n = rows < cap ? rows : cap;
	}
	PQclear(res);
	return rc;
}
