/*
 * parties.c - the party statements. See parties.h.
 */
#include "store/parties.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/outbox.h"
#include "store/tickets.h"
#include "sys/crypto.h"
#include "sys/banned.h"

#define ACTIVE "('QUEUED', 'PROPOSED', 'MATCHED', 'ASSIGNED')"

/* A new join code can collide with a live party's: try another, a few times (32^8 codes). */
#define JOIN_CODE_ATTEMPTS 4

static const char sql_create[] =
	"INSERT INTO cc_parties (leader, join_code) VALUES ($1, $2) "
	"ON CONFLICT (join_code) DO NOTHING RETURNING id";

/* No row: the player is in a party already (the one-party-per-player index). */
static const char sql_add_member[] =
	"INSERT INTO cc_party_members (party_id, player_id, protocol_version, build) "
	"VALUES ($1, $2, $3::int, $4) ON CONFLICT (player_id) DO NOTHING RETURNING 1";

static const char sql_drop_invite[] = "DELETE FROM cc_party_invites WHERE party_id = $1 AND player_id = $2";

static const char sql_read[] =
	"SELECT p.id, p.leader, p.join_code, p.revision, "
	"  EXISTS (SELECT 1 FROM tickets t WHERE t.party_id = p.id AND t.state IN " ACTIVE "), "
	"  coalesce(m.player_id::text, ''), coalesce(m.protocol_version, 0), coalesce(m.build, '') "
	"FROM cc_parties p LEFT JOIN cc_party_members m ON m.party_id = p.id WHERE p.id = $1 "
	"ORDER BY m.joined_at, m.player_id";
static const char sql_read_for_update[] =
	"SELECT p.id, p.leader, p.join_code, p.revision, "
	"  EXISTS (SELECT 1 FROM tickets t WHERE t.party_id = p.id AND t.state IN " ACTIVE "), "
	"  coalesce(m.player_id::text, ''), coalesce(m.protocol_version, 0), coalesce(m.build, '') "
	"FROM cc_parties p LEFT JOIN cc_party_members m ON m.party_id = p.id WHERE p.id = $1 "
	"ORDER BY m.joined_at, m.player_id FOR UPDATE OF p";

static const char sql_by_code[] = "SELECT id FROM cc_parties WHERE join_code = $1";
static const char sql_invited[] = "SELECT 1 FROM cc_party_invites WHERE party_id = $1 AND player_id = $2";
static const char sql_invite[] =
	"INSERT INTO cc_party_invites (party_id, player_id) SELECT $1, p.id FROM players p WHERE p.id = $2 "
	"ON CONFLICT DO NOTHING RETURNING 1";
static const char sql_player_exists[] = "SELECT 1 FROM players WHERE id = $1";
static const char sql_remove_member[] = "DELETE FROM cc_party_members WHERE party_id = $1 AND player_id = $2";
static const char sql_set_leader[] = "UPDATE cc_parties SET leader = $2 WHERE id = $1";
static const char sql_set_playlist[] = "UPDATE cc_parties SET playlist = $2 WHERE id = $1";
static const char sql_delete[] = "DELETE FROM cc_parties WHERE id = $1";
static const char sql_lock[] = "SELECT 1 FROM cc_parties WHERE id = $1 FOR UPDATE";

/* The revision after the change and who hears it (the members as they are now). */
static const char sql_bump[] =
	"WITH u AS (UPDATE cc_parties SET revision = revision + 1 WHERE id = $1 RETURNING id, revision) "
	"SELECT u.revision, coalesce(array_agg(m.player_id::text ORDER BY m.joined_at, m.player_id) "
	"  FILTER (WHERE m.player_id IS NOT NULL), '{}') "
	"FROM u LEFT JOIN cc_party_members m ON m.party_id = u.id GROUP BY u.revision";
static const char sql_created[] =
	"SELECT p.revision, coalesce(array_agg(m.player_id::text ORDER BY m.joined_at, m.player_id) "
	"  FILTER (WHERE m.player_id IS NOT NULL), '{}') "
	"FROM cc_parties p LEFT JOIN cc_party_members m ON m.party_id = p.id WHERE p.id = $1 GROUP BY p.revision";

#define PARTY_JSON                                                                                        \
	"json_build_object('id', p.id, 'leader', p.leader, 'join_code', p.join_code, 'revision', p.revision, " \
	"'playlist', p.playlist, 'created_at', " CC_PG_RFC3339("p.created") ", "                          \
	"'members', (SELECT coalesce(json_agg(json_build_object('player_id', m.player_id, "               \
	"    'display_name', pl.display_name, 'protocol_version', m.protocol_version, 'build', m.build, "   \
	"    'joined_at', " CC_PG_RFC3339("m.joined_at") ") ORDER BY m.joined_at, m.player_id), '[]'::json) " \
	"  FROM cc_party_members m JOIN players pl ON pl.id = m.player_id WHERE m.party_id = p.id), "       \
	"'invited', (SELECT coalesce(json_agg(i.player_id ORDER BY i.created_at, i.player_id), '[]'::json) " \
	"  FROM cc_party_invites i WHERE i.party_id = p.id), "                                              \
	"'queued', EXISTS (SELECT 1 FROM tickets t WHERE t.party_id = p.id AND t.state IN " ACTIVE "))"

static const char sql_json[] = "SELECT " PARTY_JSON "::text FROM cc_parties p WHERE p.id = $1";
static const char sql_queued_json[] =
	"SELECT json_build_object('party', " PARTY_JSON ", 'tickets', "
	"  (SELECT coalesce(json_agg(" CC_TICKET_JSON_OBJECT " ORDER BY t.player_id), '[]'::json) "
	"   FROM tickets t WHERE t.party_id = p.id AND t.state = 'QUEUED'))::text "
	"FROM cc_parties p WHERE p.id = $1";

int cc_party_member_index(const struct cc_party_view *v, const char *player_id)
{
	for (size_t i = 0; i < v->n_members; i++)
		if (strcmp(v->members[i].player_id, player_id) == 0)
			return (int)i;
	return -1;
}

int cc_party_add_member(struct cc_pg *pg, const char *party_id, const char *player_id, int32_t protocol_version,
			const char *build)
{
	PGresult *res = NULL;
	char proto[16];
	snprintf(proto, sizeof proto, "%ld", (long)protocol_version);
	const char *p[] = { party_id, player_id, proto, build };
	int rc = cc_pg_exec(pg, sql_add_member, 4, p, &res);
	if (rc == 0 && PQntuples(res) != 1)
		rc = CC_ECONFLICT;
	PQclear(res);
	if (rc == 0) {
		const char *pi[] = { party_id, player_id };
		rc = cc_pg_exec(pg, sql_drop_invite, 2, pi, NULL);
	}
	return rc;
}

int cc_party_create(struct cc_pg *pg, const char *leader, int32_t protocol_version, const char *build,
		    char party_id[CC_UUID_BUF])
{
	int rc = CC_ECONFLICT;
	for (int attempt = 0; attempt < JOIN_CODE_ATTEMPTS; attempt++) {
		unsigned char bytes[CC_PARTY_JOIN_CODE_LEN];
		char code[CC_PARTY_JOIN_CODE_LEN + 1];
		PGresult *res = NULL;
		cc_random_bytes(bytes, sizeof bytes);
		cc_party_join_code_from_bytes(bytes, code);
		const char *p[] = { leader, code };
		if ((rc = cc_pg_exec(pg, sql_create, 2, p, &res)) != 0)
			return rc;
		bool made = PQntuples(res) == 1;
		if (made)
			snprintf(party_id, CC_UUID_BUF, "%s", PQgetvalue(res, 0, 0));
		PQclear(res);
		if (made)
			return cc_party_add_member(pg, party_id, leader, protocol_version, build);
	}
	return CC_EDB; /* four collisions in 32^8 codes: something else is wrong */
}

int cc_party_read(struct cc_pg *pg, const char *party_id, bool for_update, struct cc_party_view *out)
{
	PGresult *res = NULL;
	memset(out, 0, sizeof *out);
	const char *p[] = { party_id };
	int rc = cc_pg_exec(pg, for_update ? sql_read_for_update : sql_read, 1, p, &res);
	if (rc != 0)
		return rc;
	int rows = PQntuples(res);
	if (rows == 0) {
		rc = CC_ENOTFOUND;
		goto out;
	}
	snprintf(out->id, sizeof out->id, "%s", PQgetvalue(res, 0, 0));
	snprintf(out->leader, sizeof out->leader, "%s", PQgetvalue(res, 0, 1));
	snprintf(out->join_code, sizeof out->join_code, "%s", PQgetvalue(res, 0, 2));
	out->revision = strtoll(PQgetvalue(res, 0, 3), NULL, 10);
	out->queued = strcmp(PQgetvalue(res, 0, 4), "t") == 0;
	for (int i = 0; i < rows; i++) {
		if (PQgetvalue(res, i, 5)[0] == '\0')
			continue; /* no member row (the LEFT JOIN of an empty party) */
		if (out->n_members == CC_PARTY_MAX_MEMBERS) {
			rc = CC_EDB;
			goto out;
		}
		struct cc_party_member *m = &out->members[out->n_members++];
		snprintf(m->player_id, sizeof m->player_id, "%s", PQgetvalue(res, i, 5));
		m->protocol_version = (int32_t)strtol(PQgetvalue(res, i, 6), NULL, 10);
		snprintf(m->build, sizeof m->build, "%s", PQgetvalue(res, i, 7));
	}
out:
	PQclear(res);
	return rc;
}

/* Runs a one-parameter-set statement for "is there a row"; *found says. */
static int exists(struct cc_pg *pg, const char *sql, int np, const char *const *p, bool *found)
{
	PGresult *res = NULL;
	int rc = cc_pg_exec(pg, sql, np, p, &res);
	*found = rc == 0 && PQntuples(res) > 0;
	PQclear(res);
	return rc;
}

int cc_party_find_by_code(struct cc_pg *pg, const char *code, char party_id[CC_UUID_BUF])
{
	PGresult *res = NULL;
	const char *p[] = { code };
	int rc = cc_pg_exec(pg, sql_by_code, 1, p, &res);
	if (rc == 0 && PQntuples(res) != 1)
		rc = CC_ENOTFOUND;
	if (rc == 0)
		snprintf(party_id, CC_UUID_BUF, "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	return rc;
}

int cc_party_invited(struct cc_pg *pg, const char *party_id, const char *player_id, bool *invited)
{
	const char *p[] = { party_id, player_id };
	return exists(pg, sql_invited, 2, p, invited);
}

int cc_party_invite(struct cc_pg *pg, const char *party_id, const char *player_id)
{
	bool found;
	const char *pp[] = { player_id };
	int rc = exists(pg, sql_player_exists, 1, pp, &found);
	if (rc != 0)
		return rc;
	if (!found)
		return CC_ENOTFOUND;
	const char *p[] = { party_id, player_id };
	return cc_pg_exec(pg, sql_invite, 2, p, NULL);
}

int cc_party_remove_member(struct cc_pg *pg, const char *party_id, const char *player_id)
{
	const char *p[] = { party_id, player_id };
	return cc_pg_exec(pg, sql_remove_member, 2, p, NULL);
}

int cc_party_set_leader(struct cc_pg *pg, const char *party_id, const char *player_id)
{
	const char *p[] = { party_id, player_id };
	return cc_pg_exec(pg, sql_set_leader, 2, p, NULL);
}

int cc_party_set_playlist(struct cc_pg *pg, const char *party_id, const char *playlist)
{
	const char *p[] = { party_id, playlist };
	return cc_pg_exec(pg, sql_set_playlist, 2, p, NULL);
}

int cc_party_delete(struct cc_pg *pg, const char *party_id)
{
	const char *p[] = { party_id };
	return cc_pg_exec(pg, sql_delete, 1, p, NULL);
}

int cc_party_lock(struct cc_pg *pg, const char *party_id)
{
	const char *p[] = { party_id };
	return cc_pg_exec(pg, sql_lock, 1, p, NULL);
}

int cc_party_member_declined(struct cc_pg *pg, const char *party_id, const char *player_id, bool *removed)
{
	struct cc_party_view v;
	int64_t revision;
	*removed = false;
	int rc = cc_party_read(pg, party_id, true, &v);
	if (rc == CC_ENOTFOUND)
		return 0;
	int me = rc == 0 ? cc_party_member_index(&v, player_id) : -1;
	if (rc != 0 || me < 0 || v.n_members < 2)
		return rc;
	if ((rc = cc_party_remove_member(pg, v.id, player_id)) != 0)
		return rc;
	if (strcmp(v.leader, player_id) == 0 && /* the lead passes to the longest-standing member left */
	    (rc = cc_party_set_leader(pg, v.id, v.members[me == 0 ? 1 : 0].player_id)) != 0)
		return rc;
	if ((rc = cc_party_commit_change(pg, v.id, CC_PARTY_CHANGE_DECLINED, player_id, NULL, 0, &revision)) == 0)
		*removed = true;
	return rc;
}

const char *cc_party_change_name(enum cc_party_change c)
{
	switch (c) {
	case CC_PARTY_CHANGE_CREATED:
		return "created";
	case CC_PARTY_CHANGE_INVITED:
		return "invited";
	case CC_PARTY_CHANGE_JOINED:
		return "joined";
	case CC_PARTY_CHANGE_LEFT:
		return "left";
	case CC_PARTY_CHANGE_KICKED:
		return "kicked";
	case CC_PARTY_CHANGE_PROMOTED:
		return "promoted";
	case CC_PARTY_CHANGE_QUEUED:
		return "queued";
	case CC_PARTY_CHANGE_DISBANDED:
		return "disbanded";
	case CC_PARTY_CHANGE_DECLINED:
		return "declined";
	}
	return "unknown";
}

/* Parses a PostgreSQL text[] of UUIDs ("{a,b}") into ids; returns how many (at most max). */
static size_t parse_ids(const char *arr, char (*ids)[CC_UUID_BUF], size_t max)
{
	size_t n = 0;
	const char *s = arr[0] == '{' ? arr + 1 : arr;
	while (*s && *s != '}' && n < max) {
		size_t len = strcspn(s, ",}");
		if (len == CC_UUID_BUF - 1) {
			memcpy(ids[n], s, len);
			ids[n++][len] = '\0';
		}
		s += len;
		if (*s == ',')
			s++;
	}
	return n;
}

int cc_party_commit_change(struct cc_pg *pg, const char *party_id, enum cc_party_change change, const char *about,
			   const char (*notify)[CC_UUID_BUF], size_t n_notify, int64_t *revision)
{
	char ids[CC_PARTY_MAX_MEMBERS + 2][CC_UUID_BUF];
	size_t n = 0;
	int rc;

	if (change == CC_PARTY_CHANGE_DISBANDED) {
		for (size_t i = 0; i < n_notify && n < CC_PARTY_MAX_MEMBERS + 1; i++)
			snprintf(ids[n++], CC_UUID_BUF, "%s", notify[i]);
		*revision += 1;
	} else {
		PGresult *res = NULL;
		const char *p[] = { party_id };
		rc = cc_pg_exec(pg, change == CC_PARTY_CHANGE_CREATED ? sql_created : sql_bump, 1, p, &res);
		if (rc == 0 && PQntuples(res) != 1)
			rc = CC_ENOTFOUND;
		if (rc != 0) {
			PQclear(res);
			return rc;
		}
		*revision = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
		n = parse_ids(PQgetvalue(res, 0, 1), ids, CC_PARTY_MAX_MEMBERS + 1);
		PQclear(res);
	}
	bool listed = false;
	for (size_t i = 0; about && i < n; i++)
		listed |= strcmp(ids[i], about) == 0;
	if (about && !listed)
		snprintf(ids[n++], CC_UUID_BUF, "%s", about);

	const char *players[CC_PARTY_MAX_MEMBERS + 2];
	for (size_t i = 0; i < n; i++)
		players[i] = ids[i];
	char payload[128];
	snprintf(payload, sizeof payload, "{\"change\":\"%s\",\"player_id\":%s%s%s}", cc_party_change_name(change),
		 about ? "\"" : "", about ? about : "null", about ? "\"" : "");
	struct cc_outbox_event ev = {
		.resource_type = "party",
		.resource_id = party_id,
		.revision = *revision,
		.player_ids = players,
		.n_player_ids = n,
		.payload_json = payload,
	};
	if (change == CC_PARTY_CHANGE_DISBANDED)
		ev.event = "party.disbanded";
	else
		ev.event = "party.updated";
	return cc_outbox_append(pg, &ev);
}

static int text_of(struct cc_pg *pg, const char *sql, const char *party_id, char **json)
{
	const char *p[] = { party_id };
	return cc_pg_exec_text(pg, sql, 1, p, json);
}

int cc_party_json(struct cc_pg *pg, const char *party_id, char **json)
{
	return text_of(pg, sql_json, party_id, json);
}

int cc_party_queued_json(struct cc_pg *pg, const char *party_id, char **json)
{
	return text_of(pg, sql_queued_json, party_id, json);
}
