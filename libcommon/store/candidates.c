#include "store/candidates.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sys/crypto.h"
#include "sys/json.h"
#include "sys/banned.h"

/* The queue order uses tickets_queued_by_age (playlist, queued_at) WHERE QUEUED. */
static const char sql_load[] =
	"SELECT " CC_CANDIDATE_COLUMNS ", (extract(epoch FROM now()) * 1000)::bigint "
	"FROM tickets t WHERE t.playlist = $1 AND t.state = 'QUEUED' AND t.expires_at > now() "
	"ORDER BY t.queued_at, t.id LIMIT $2::int";

/* The page after ticket $3 in the same order (its row holds its place even once it left the queue). */
static const char sql_load_after[] =
	"SELECT " CC_CANDIDATE_COLUMNS ", (extract(epoch FROM now()) * 1000)::bigint "
	"FROM tickets t WHERE t.playlist = $1 AND t.state = 'QUEUED' AND t.expires_at > now() "
	"AND (t.queued_at, t.id) > (SELECT k.queued_at, k.id FROM tickets k WHERE k.id = $3::uuid) "
	"ORDER BY t.queued_at, t.id LIMIT $2::int";

static const char sql_load_one[] =
	"SELECT " CC_CANDIDATE_COLUMNS " FROM tickets t "
	"WHERE t.id = $1 AND t.state = 'QUEUED' AND t.expires_at > now()";

void cc_candidate_from_row(const PGresult *res, int i, int col, struct cc_candidate *c)
{
	memset(c, 0, sizeof *c);
	snprintf(c->ticket_id, sizeof c->ticket_id, "%s", PQgetvalue(res, i, col + 0));
	snprintf(c->player_id, sizeof c->player_id, "%s", PQgetvalue(res, i, col + 1));
	snprintf(c->build, sizeof c->build, "%s", PQgetvalue(res, i, col + 2));
	c->protocol_version = (int32_t)strtol(PQgetvalue(res, i, col + 3), NULL, 10);
	c->rating = strtod(PQgetvalue(res, i, col + 4), NULL);
	c->deviation = strtod(PQgetvalue(res, i, col + 5), NULL);
	c->queued_at_ms = strtoll(PQgetvalue(res, i, col + 6), NULL, 10);
	c->expires_at_ms = strtoll(PQgetvalue(res, i, col + 7), NULL, 10);
	if (cc_candidate_parse_rtt(c, PQgetvalue(res, i, col + 8)) != 0)
		c->n_rtt = 0; /* cannot happen: a CHECK keeps predicted_rtt an object */
	snprintf(c->party_id, sizeof c->party_id, "%s", PQgetvalue(res, i, col + 9));
	c->party_size = (int)strtol(PQgetvalue(res, i, col + 10), NULL, 10);
}

int cc_candidates_load(struct cc_pg *pg, const char *playlist, const char *after_ticket_id, size_t limit,
		       struct cc_candidate *out, size_t *n, int64_t *now_ms)
{
	char lim[24];
	PGresult *res = NULL;
	if (after_ticket_id && !cc_uuid_valid(after_ticket_id))
		return CC_EINVAL;
	snprintf(lim, sizeof lim, "%zu", limit);
	const char *p[] = { playlist, lim, after_ticket_id };
	int rc = after_ticket_id ? cc_pg_exec(pg, sql_load_after, 3, p, &res) : cc_pg_exec(pg, sql_load, 2, p, &res);
	if (rc != 0)
		return rc;
	int rows = PQntuples(res);
	for (int i = 0; i < rows && (size_t)i < limit; i++)
		cc_candidate_from_row(res, i, 0, &out[i]);
	*n = (size_t)rows < limit ? (size_t)rows : limit;
	if (now_ms) {
		if (rows > 0) {
			*now_ms = strtoll(PQgetvalue(res, 0, CC_CANDIDATE_NCOLUMNS), NULL, 10);
		} else {
			PQclear(res);
			res = NULL;
			rc = cc_pg_exec(pg, "SELECT (extract(epoch FROM now()) * 1000)::bigint", 0, NULL, &res);
			if (rc == 0)
				*now_ms = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
		}
	}
	PQclear(res);
	return rc;
}

int cc_candidate_load_one(struct cc_pg *pg, const char *ticket_id, struct cc_candidate *out,
			  char playlist_out[CC_PLAYLIST_BUF])
{
	PGresult *res = NULL;
	const char *p[] = { ticket_id };
	int rc = cc_pg_exec(pg, sql_load_one, 1, p, &res);
	if (rc == 0 && PQntuples(res) != 1)
		rc = CC_ENOTFOUND;
	if (rc == 0) {
		cc_candidate_from_row(res, 0, 0, out);
		snprintf(playlist_out, CC_PLAYLIST_BUF, "%s", PQgetvalue(res, 0, 9));
	}
	PQclear(res);
	return rc;
}
