#include "store/backfill.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/outbox.h"
#include "sys/crypto.h"
#include "sys/banned.h"

#define COLUMNS                                                                                       \
	"o.id::text, o.match_id::text, o.slot, o.team, o.generation, o.vacated_player_id::text, "     \
	"o.ticket_id::text, o.player_id::text, o.state, o.revision, (o.state = 'OPEN' AND now() >= o.expires_at), " \
	CC_PG_RFC3339("o.expires_at") ", extract(epoch FROM now())::bigint"
#define NCOLUMNS 13

/* Whether the slot's current assignment is the reported one, its team, and the vacancy's live offer. */
static const char sql_vacancy[] =
	"SELECT coalesce((SELECT a.player_id = $3::uuid AND a.generation = $4::int FROM assignments a "
	"    WHERE a.match_id = $1 AND a.slot = $2::smallint AND a.replaced_at IS NULL), false), "
	"  coalesce((SELECT a.team FROM assignments a WHERE a.match_id = $1 AND a.slot = $2::smallint "
	"    AND a.player_id = $3::uuid AND a.generation = $4::int), -1), "
	"  coalesce((SELECT o.id::text FROM backfill_offers o WHERE o.match_id = $1 AND o.slot = $2::smallint "
	"    AND o.generation = $4::int AND o.state IN ('OPEN', 'ACCEPTED')), '')";

/*
 * The oldest qualifying QUEUED solo ticket (ties by id; a party's tickets
 * stay together, so no member is taken from it), offered in the same
 * statement, while now() is at or before the vacancy's offer_until (lim:
 * now() + $12 s from a vacated report; NULL $12, a pass-on: the latest
 * offer's of the vacancy, carried over). picked says a ticket qualified;
 * no offer row beside it means a unique index refused the insert (a
 * concurrent twin committed first). open says the cut-off had not passed.
 */
static const char sql_offer_next[] =
	"WITH m AS (SELECT id, playlist, build, protocol_version, region FROM matches WHERE id = $1), "
	"mean AS (SELECT avg(t.rating) AS r FROM match_players mp JOIN tickets t ON t.id = mp.ticket_id "
	"  WHERE mp.match_id = $1), "
	"lim AS (SELECT CASE WHEN $12::int IS NULL THEN (SELECT p.offer_until FROM backfill_offers p "
	"    WHERE p.match_id = $1 AND p.slot = $2::smallint AND p.generation = $4::int "
	"    ORDER BY p.created_at DESC, p.id DESC LIMIT 1) "
	"  ELSE now() + make_interval(secs => $12::int) END AS until), "
	"pick AS (SELECT t.id, t.player_id FROM tickets t, m, mean, lim "
	"  WHERE now() <= lim.until "
	"    AND t.state = 'QUEUED' AND t.party_id IS NULL AND t.playlist = m.playlist AND t.expires_at > now() "
	"    AND t.build = m.build AND t.protocol_version = m.protocol_version "
	"    AND (t.predicted_rtt ->> m.region)::float8 <= $7::float8 "
	"    AND (SELECT count(*) FROM match_players mp WHERE mp.match_id = $1) < 16 "
	"    AND NOT EXISTS (SELECT 1 FROM match_players mp WHERE mp.match_id = $1 AND mp.player_id = t.player_id) "
	"    AND NOT EXISTS (SELECT 1 FROM backfill_offers p WHERE p.ticket_id = t.id AND (p.state = 'OPEN' "
	"      OR (p.match_id = $1 AND p.slot = $2::smallint AND p.generation = $4::int))) "
	"    AND (NOT $8::boolean OR abs(t.rating - mean.r) <= least($11::float8, $9::float8 + $10::float8 * "
	"      greatest(0, extract(epoch FROM now() - t.queued_at)))) "
	"  ORDER BY t.queued_at, t.id LIMIT 1), "
	"ins AS (INSERT INTO backfill_offers AS o (match_id, slot, team, generation, vacated_player_id, ticket_id, "
	"    player_id, state, expires_at, offer_until) "
	"  SELECT $1, $2::smallint, $3::smallint, $4::int, $5::uuid, pick.id, pick.player_id, 'OPEN', "
	"    now() + make_interval(secs => $6::int), lim.until FROM pick, lim "
	"  ON CONFLICT DO NOTHING RETURNING o.*) "
	"SELECT " COLUMNS ", (SELECT count(*) FROM pick), (SELECT coalesce(now() <= until, false) FROM lim) FROM ins o "
	"UNION ALL SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, (SELECT count(*) FROM pick), "
	"  (SELECT coalesce(now() <= until, false) FROM lim) "
	"  WHERE NOT EXISTS (SELECT 1 FROM ins)";

static const char sql_get[] = "SELECT " COLUMNS " FROM backfill_offers o WHERE o.id = $1 AND o.player_id = $2";
/*
 * The lock order (README "Lock order (matches and backfill offers)"): the
 * offer's match first, found through the offer read without a lock (its
 * match_id never changes), then the offer, read again under its lock.
 */
static const char sql_lock_match[] =
	"SELECT m.id::text FROM backfill_offers o JOIN matches m ON m.id = o.match_id "
	"WHERE o.id = $1 AND o.player_id = $2 FOR UPDATE OF m";
static const char sql_lock[] =
	"SELECT " COLUMNS " FROM backfill_offers o WHERE o.id = $1 AND o.player_id = $2 FOR UPDATE";
static const char sql_by_id[] = "SELECT " COLUMNS " FROM backfill_offers o WHERE o.id = $1";

static const char sql_settle[] =
	"UPDATE backfill_offers SET state = $2, revision = revision + 1, responded_at = now() "
	"WHERE id = $1 AND state = 'OPEN' RETURNING revision";

static const char sql_view[] =
	"SELECT json_build_object('id', o.id, 'match_id', o.match_id, 'ticket_id', o.ticket_id, "
	"  'slot', o.slot, 'team', o.team, 'state', o.state, 'revision', o.revision, "
	"  'created_at', " CC_PG_RFC3339("o.created_at") ", 'expires_at', " CC_PG_RFC3339("o.expires_at") ", "
	"  'responded_at', CASE WHEN o.responded_at IS NULL THEN NULL ELSE " CC_PG_RFC3339("o.responded_at") " END)::text "
	"FROM backfill_offers o WHERE o.id = $1";

static void offer_from_row(const PGresult *res, int i, struct cc_backfill_offer *o)
{
	memset(o, 0, sizeof *o);
	snprintf(o->id, sizeof o->id, "%s", PQgetvalue(res, i, 0));
	snprintf(o->match_id, sizeof o->match_id, "%s", PQgetvalue(res, i, 1));
	o->slot = (int)strtol(PQgetvalue(res, i, 2), NULL, 10);
	o->team = (int)strtol(PQgetvalue(res, i, 3), NULL, 10);
	o->generation = (int32_t)(int)strtol(PQgetvalue(res, i, 4), NULL, 10);
	snprintf(o->vacated_player_id, sizeof o->vacated_player_id, "%s", PQgetvalue(res, i, 5));
	snprintf(o->ticket_id, sizeof o->ticket_id, "%s", PQgetvalue(res, i, 6));
	snprintf(o->player_id, sizeof o->player_id, "%s", PQgetvalue(res, i, 7));
	snprintf(o->state, sizeof o->state, "%s", PQgetvalue(res, i, 8));
	o->revision = strtoll(PQgetvalue(res, i, 9), NULL, 10);
	o->overdue = PQgetvalue(res, i, 10)[0] == 't';
	o->now_unix = strtoll(PQgetvalue(res, i, 12), NULL, 10);
}

static int one_offer(struct cc_pg *pg, const char *sql, int np, const char *const *p, struct cc_backfill_offer *out)
{
	PGresult *res = NULL;
	int rc = cc_pg_exec(pg, sql, np, p, &res);
	if (rc == 0 && PQntuples(res) != 1)
		rc = CC_ENOTFOUND;
	if (rc == 0)
		offer_from_row(res, 0, out);
	PQclear(res);
	return rc;
}

static bool args_ok(const char *match_id, int slot, const char *player_id, int32_t generation)
{
	return cc_uuid_valid(match_id) && cc_uuid_valid(player_id) && slot >= 0 && slot <= 15 && generation >= 1;
}

int cc_backfill_vacancy(struct cc_pg *pg, const char *match_id, int slot, const char *player_id, int32_t generation,
			bool *current, int *team, bool *live, struct cc_backfill_offer *out)
{
	if (!args_ok(match_id, slot, player_id, generation))
		return CC_EINVAL;
	char s[12], g[12];
	snprintf(s, sizeof s, "%d", slot);
	snprintf(g, sizeof g, "%d", (int)generation);
	const char *p[] = { match_id, s, player_id, g };
	PGresult *res = NULL;
	int rc = cc_pg_exec(pg, sql_vacancy, 4, p, &res);
	if (rc == 0 && PQntuples(res) != 1)
		rc = CC_EDB;
	if (rc != 0) {
		PQclear(res);
		return rc;
	}
	*current = PQgetvalue(res, 0, 0)[0] == 't';
	*team = (int)strtol(PQgetvalue(res, 0, 1), NULL, 10);
	char id[CC_UUID_BUF];
	snprintf(id, sizeof id, "%s", PQgetvalue(res, 0, 2));
	PQclear(res);
	*live = id[0] != '\0';
	if (!*live)
		return 0;
	const char *q[] = { id };
	return one_offer(pg, sql_by_id, 1, q, out);
}

const char *cc_backfill_outcome_name(enum cc_backfill_outcome o)
{
	switch (o) {
	case CC_BACKFILL_OFFERED:
		return "offered";
	case CC_BACKFILL_NO_CANDIDATE:
		return "no_candidate";
	case CC_BACKFILL_LAST_MINUTE:
		return "last_minute";
	}
	return "unknown";
}

int cc_backfill_offer_next(struct cc_pg *pg, const char *match_id, int slot, int team, int32_t generation,
			   const char *vacated_player_id, const struct cc_backfill_rules *r,
			   const int64_t *offer_for_seconds, enum cc_backfill_outcome *outcome,
			   struct cc_backfill_offer *out)
{
	if (!args_ok(match_id, slot, vacated_player_id, generation) || (team != 0 && team != 1) || !r ||
	    r->window_seconds < 1 || r->window_seconds > 3600 || !(r->max_rtt_ms > 0) || !outcome || !out ||
	    (offer_for_seconds && (*offer_for_seconds < -3600 || *offer_for_seconds > 86400)))
		return CC_EINVAL;
	char s[12], t[4], g[12], w[12], rtt[32], ts[32], tg[32], tc[32], until[24];
	snprintf(s, sizeof s, "%d", slot);
	snprintf(t, sizeof t, "%d", team);
	snprintf(g, sizeof g, "%d", (int)generation);
	snprintf(w, sizeof w, "%d", r->window_seconds);
	snprintf(rtt, sizeof rtt, "%.17g", r->max_rtt_ms);
	snprintf(ts, sizeof ts, "%.17g", r->tolerance_start);
	snprintf(tg, sizeof tg, "%.17g", r->tolerance_growth_per_s);
	snprintf(tc, sizeof tc, "%.17g", r->tolerance_cap);
	if (offer_for_seconds)
		snprintf(until, sizeof until, "%lld", (long long)*offer_for_seconds);
	const char *p[] = { match_id, s, t, g, vacated_player_id, w, rtt, r->tolerance ? "true" : "false", ts, tg, tc,
			    offer_for_seconds ? until : NULL };
	PGresult *res = NULL;
	*outcome = CC_BACKFILL_NO_CANDIDATE;
	memset(out, 0, sizeof *out);
	int rc = cc_pg_exec(pg, sql_offer_next, 12, p, &res);
	if (rc == 0 && PQntuples(res) != 1)
		rc = CC_EDB;
	if (rc != 0)
		goto out;
	if (PQgetisnull(res, 0, 0)) {
		/* A ticket qualified but a unique index refused: a twin won; the retry sees its offer. */
		if (strcmp(PQgetvalue(res, 0, NCOLUMNS), "0") != 0)
			rc = CC_ESERIALIZATION;
		else if (PQgetvalue(res, 0, NCOLUMNS + 1)[0] != 't')
			*outcome = CC_BACKFILL_LAST_MINUTE;
		goto out;
	}
	offer_from_row(res, 0, out);
	*outcome = CC_BACKFILL_OFFERED;
	char payload[256];
	snprintf(payload, sizeof payload, "{\"match_id\":\"%s\",\"slot\":%d,\"expires_at\":\"%s\"}", out->match_id,
		 out->slot, PQgetvalue(res, 0, 11));
	const char *players[] = { out->player_id };
	struct cc_outbox_event ev = { .event = "backfill.offered",
				      .resource_type = "backfill_offer",
				      .resource_id = out->id,
				      .revision = out->revision,
				      .player_ids = players,
				      .n_player_ids = 1,
				      .payload_json = payload };
	rc = cc_outbox_append(pg, &ev);
out:
	PQclear(res);
	return rc;
}

int cc_backfill_lock(struct cc_pg *pg, const char *offer_id, const char *player_id, struct cc_backfill_offer *out)
{
	if (!cc_uuid_valid(offer_id) || !cc_uuid_valid(player_id))
		return CC_EINVAL;
	const char *p[] = { offer_id, player_id };
	PGresult *res = NULL;
	int rc = cc_pg_exec(pg, sql_lock_match, 2, p, &res);
	if (rc == 0 && PQntuples(res) != 1)
		rc = CC_ENOTFOUND;
	PQclear(res);
	if (rc == 0)
		rc = one_offer(pg, sql_lock, 2, p, out);
	return rc;
}

int cc_backfill_get(struct cc_pg *pg, const char *offer_id, const char *player_id, struct cc_backfill_offer *out)
{
	if (!cc_uuid_valid(offer_id) || !cc_uuid_valid(player_id))
		return CC_EINVAL;
	const char *p[] = { offer_id, player_id };
	return one_offer(pg, sql_get, 2, p, out);
}

int cc_backfill_settle(struct cc_pg *pg, struct cc_backfill_offer *o, const char *state)
{
	if (!o || !state || (strcmp(state, "ACCEPTED") != 0 && strcmp(state, "DECLINED") != 0 && strcmp(state, "EXPIRED") != 0))
		return CC_EINVAL;
	const char *p[] = { o->id, state };
	PGresult *res = NULL;
	int rc = cc_pg_exec(pg, sql_settle, 2, p, &res);
	if (rc == 0 && PQntuples(res) != 1)
		rc = CC_ESTATE;
	if (rc == 0) {
		o->revision = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
		snprintf(o->state, sizeof o->state, "%s", state);
		o->overdue = false;
	}
	PQclear(res);
	return rc;
}

int cc_backfill_view(struct cc_pg *pg, const char *offer_id, char **json)
{
	if (!cc_uuid_valid(offer_id))
		return CC_EINVAL;
	const char *p[] = { offer_id };
	return cc_pg_exec_text(pg, sql_view, 1, p, json);
}
