#include "store/tickets.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/candidates.h"
#include "store/outbox.h"
#include "store/sessions.h"
#include "sys/charset.h"
#include "store/purge.h"
#include "sys/crypto.h"
#include "sys/banned.h"

/*
 * The RETURNING (or SELECT) list of every statement here, read by
 * ticket_from_row: state, revision, proposal_id, match_id, the candidate
 * columns (id ... playlist) and the JSON text.
 */
#define COLUMNS                                                                             \
	"t.state, t.revision, coalesce(t.proposal_id::text, ''), coalesce(t.match_id::text, ''), " \
	CC_CANDIDATE_COLUMNS ", " CC_TICKET_JSON_OBJECT "::text"
#define COL_CANDIDATE 4
#define COL_JSON (COL_CANDIDATE + CC_CANDIDATE_NCOLUMNS)

#define ACTIVE "('QUEUED', 'PROPOSED', 'MATCHED', 'ASSIGNED')"
#define OVERDUE "(t.state = 'QUEUED' AND t.expires_at <= now())"

/* Everything the enqueue decides from, in one round trip over the player's own rows. */
static const char sql_enqueue_facts[] =
	"SELECT coalesce(p.banned_until > now(), false), "
	"  CASE WHEN p.banned_until > now() THEN " CC_PG_RFC3339("p.banned_until") " ELSE '' END, "
	"  (SELECT ceil(extract(epoch FROM max(c.cooldown_until) - now()))::bigint FROM penalties c "
	"     WHERE c.player_id = p.id AND c.cooldown_until > now()), "
	"  e.rtt, e.n, "
	"  coalesce((SELECT r.rating FROM ratings r WHERE r.player_id = p.id AND r.playlist = $2), 1500), "
	"  coalesce((SELECT r.deviation FROM ratings r WHERE r.player_id = p.id AND r.playlist = $2), 350) "
	"FROM players p, LATERAL (SELECT coalesce(jsonb_object_agg(g.region, g.rtt_ms), '{}'::jsonb)::text AS rtt, "
	"  count(*) AS n FROM region_rtts g WHERE g.player_id = p.id AND g.region = ANY($3::text[]) "
	"  AND g.measured_at > now() - make_interval(secs => $4::int)) e "
	"WHERE p.id = $1";

/*
 * The new QUEUED ticket. When the player already has an active ticket, that
 * one is expired instead if it is QUEUED and overdue (the row comes back
 * EXPIRED: announce it and run this again), else no row comes back.
 */
static const char sql_enqueue[] =
	"INSERT INTO tickets AS t (player_id, playlist, state, build, protocol_version, rating, "
	"  deviation, predicted_rtt, expires_at, party_id, party_size) "
	"VALUES ($1, $2, 'QUEUED', $3, $4::int, $5::float8, $6::float8, $7::jsonb, "
	"  now() + make_interval(secs => $8::int), $9::uuid, $10::smallint) "
	"ON CONFLICT (player_id) WHERE state IN " ACTIVE " "
	"DO UPDATE SET state = 'EXPIRED', revision = t.revision + 1, updated_at = now() "
	"  WHERE t.state = 'QUEUED' AND t.expires_at <= now() "
	"RETURNING " COLUMNS;

/* A range read, but only on the conflict path, whose transaction rolls back. */
static const char sql_active_of_player[] =
	"SELECT " COLUMNS " FROM tickets t WHERE t.player_id = $1 AND t.state IN " ACTIVE;

static const char sql_heartbeat[] =
	"UPDATE tickets AS t SET state = CASE WHEN " OVERDUE " THEN 'EXPIRED' ELSE t.state END, "
	"  revision = t.revision + 1, updated_at = now(), "
	"  expires_at = CASE WHEN " OVERDUE " THEN t.expires_at "
	"    ELSE now() + make_interval(secs => $4::int) END "
	"WHERE t.id = $1 AND t.player_id = $2 "
	"  AND (" OVERDUE " OR (t.revision = $3::bigint AND t.state IN ('QUEUED', 'PROPOSED'))) "
	"RETURNING " COLUMNS;

/*
 * cc_ticket_heartbeat_with_session: the session row (s), the compare-and-set
 * (u) and, when it changed nothing, the row as read with whether it is
 * overdue; columns: COLUMNS, changed, overdue, then the session's.
 */
static const char sql_heartbeat_session[] =
	"WITH s AS (" CC_SESSION_CHECK_SQL("$1") "), "
	"u AS (UPDATE tickets AS t SET revision = t.revision + 1, updated_at = now(), "
	"    expires_at = now() + make_interval(secs => $4::int) "
	"  FROM s WHERE t.id = $2 AND t.player_id = s.player_id AND NOT s.banned AND NOT s.revoked "
	"    AND NOT s.expired AND t.revision = $3::bigint AND t.state IN ('QUEUED', 'PROPOSED') "
	"    AND NOT " OVERDUE " AND t.party_id IS NULL "
	"  RETURNING " COLUMNS ", true AS changed, false AS overdue) "
	"SELECT r.*, s.* FROM s LEFT JOIN LATERAL ("
	"  SELECT * FROM u UNION ALL "
	"  SELECT " COLUMNS ", false, " OVERDUE " FROM tickets t "
	"  WHERE t.id = $2 AND t.player_id = s.player_id AND NOT s.banned AND NOT s.revoked AND NOT s.expired "
	"    AND NOT EXISTS (SELECT 1 FROM u)) r ON true";
#define COL_HB_CHANGED (COL_JSON + 1)
#define COL_HB_OVERDUE (COL_JSON + 2)
#define COL_HB_SESSION (COL_JSON + 3)

static const char sql_get[] = "SELECT " COLUMNS " FROM tickets t WHERE t.id = $1 AND t.player_id = $2";
static const char sql_get_for_update[] =
	"SELECT " COLUMNS " FROM tickets t WHERE t.id = $1 AND t.player_id = $2 FOR UPDATE";

static const char sql_expire_overdue[] =
	"UPDATE tickets AS t SET state = 'EXPIRED', revision = t.revision + 1, updated_at = now() "
	"WHERE t.id = $1 AND t.player_id = $2 AND " OVERDUE " RETURNING " COLUMNS;

static const char sql_cancel_one[] =
	"UPDATE tickets AS t SET state = 'CANCELLED', revision = t.revision + 1, updated_at = now() "
	"WHERE t.id = $1 AND t.player_id = $2 AND t.state = 'QUEUED' RETURNING " COLUMNS;

static const char sql_cancel_of_player[] =
	"UPDATE tickets AS t SET state = 'CANCELLED', revision = t.revision + 1, updated_at = now() "
	"WHERE t.player_id = $1 AND t.state = 'QUEUED' RETURNING " COLUMNS;

/*
 * The party's shared lease: the heartbeat's new deadline to the party's
 * other waiting tickets, skipping any another transaction holds. The
 * heartbeat already holds its own ticket, and a decline, a requeue, a
 * match or a mate's heartbeat locks the party's tickets in another order
 * (the decliner's, then its mates'): waiting here deadlocked a mate's
 * heartbeat against its party's decline (tests/integration/
 * test_party_lease_race.c). A skipped ticket is being moved by that
 * transaction (a requeue aligns the party's deadlines itself) or is a
 * mate's heartbeating on its own.
 */
static const char sql_party_lease[] =
	"WITH h AS (SELECT id, party_id, expires_at FROM tickets "
	"  WHERE id = $1 AND party_id IS NOT NULL AND state IN ('QUEUED', 'PROPOSED')), "
	"o AS (SELECT o.id FROM tickets o, h WHERE o.party_id = h.party_id AND o.id <> h.id "
	"  AND o.state IN ('QUEUED', 'PROPOSED') FOR UPDATE OF o SKIP LOCKED) "
	"UPDATE tickets AS t SET expires_at = h.expires_at FROM h, o "
	"WHERE t.id = o.id AND t.state IN ('QUEUED', 'PROPOSED') "
	"RETURNING " COLUMNS;

/* The party's other QUEUED tickets, once one of them was cancelled by this transaction. */
static const char sql_cancel_party_of_player[] =
	"UPDATE tickets AS t SET state = 'CANCELLED', revision = t.revision + 1, updated_at = now() "
	"FROM tickets c WHERE c.player_id = $1 AND c.party_id IS NOT NULL AND c.state = 'CANCELLED' "
	"  AND c.updated_at = now() AND t.party_id = c.party_id AND t.state = 'QUEUED' RETURNING " COLUMNS;

/*
 * The open proposal holding one of the party's tickets, if any (a plain
 * read, no lock: a proposal's tickets are locked only after the proposal,
 * README.md's lock order). The party's tickets are claimed together, so
 * one row tells; the lowest id keeps the answer stable.
 */
static const char sql_party_proposal[] =
	"SELECT t.proposal_id::text FROM tickets t "
	"WHERE t.party_id = $1 AND t.state = 'PROPOSED' AND t.proposal_id IS NOT NULL "
	"ORDER BY t.proposal_id LIMIT 1";

static const char sql_cancel_party[] =
	"UPDATE tickets AS t SET state = 'CANCELLED', revision = t.revision + 1, updated_at = now() "
	"WHERE t.party_id = $1 AND t.state = 'QUEUED' RETURNING " COLUMNS;

static const char sql_set_rtt[] =
	"UPDATE tickets AS t SET predicted_rtt = jsonb_set(t.predicted_rtt, ARRAY[$2::text], to_jsonb($3::float8)), "
	"  updated_at = now() "
	"WHERE t.player_id = $1 AND t.state IN ('QUEUED', 'PROPOSED') RETURNING " COLUMNS;

static const char sql_cancel_proposed[] =
	"UPDATE tickets AS t SET state = 'CANCELLED', revision = t.revision + 1, updated_at = now() "
	"WHERE t.proposal_id = $1 AND t.player_id = $2 AND t.state = 'PROPOSED' RETURNING " COLUMNS;

/*
 * Requeue keeps queued_at, so the innocent keep their place in the queue.
 * With a ttl ($2 > 0, a decline) only the players who accepted get a fresh
 * heartbeat deadline: they proved they are there. A participant who never
 * answered keeps the deadline it earned (SPEC 7: requeueing never extends
 * it), so a client that has gone away cannot hold live players again.
 */
static const char sql_requeue[] =
	"UPDATE tickets AS t SET state = 'QUEUED', proposal_id = NULL, revision = t.revision + 1, "
	"  updated_at = now(), expires_at = CASE WHEN $2::int > 0 AND EXISTS ("
	"      SELECT 1 FROM proposal_participants pp WHERE pp.proposal_id = $1 "
	"      AND pp.ticket_id = t.id AND pp.response = 'ACCEPT') "
	"    THEN now() + make_interval(secs => $2::int) ELSE t.expires_at END "
	"WHERE t.proposal_id = $1 AND t.state = 'PROPOSED' RETURNING " COLUMNS;

static const char sql_expire_unanswered[] =
	"UPDATE tickets AS t SET state = 'EXPIRED', revision = t.revision + 1, updated_at = now() "
	"FROM proposal_participants pp "
	"WHERE pp.proposal_id = $1 AND pp.response IS NULL AND t.id = pp.ticket_id "
	"  AND t.proposal_id = $1 AND t.state = 'PROPOSED' RETURNING " COLUMNS;

/*
 * Parties in a proposal (issue 26). A decliner's party mates go back to
 * the queue as the smaller party: their party_size becomes how many of
 * them are left, so formation (game/formation.h) waits for those and no
 * more (no revision bump, no event: the requeue that follows has both);
 * only when the party itself is gone are they cancelled with the decliner
 * (store/proposals.c). The party mates of a member whose ticket timed out
 * are cancelled with it. A party requeued after a decline gets its
 * members' deadlines aligned to the latest (one lease for the party,
 * store/tickets.h), so it goes back to the queue whole and goes silent
 * whole.
 */
static const char sql_shrink_proposed_party[] =
	"UPDATE tickets AS t SET party_size = greatest(1, (SELECT count(*) FROM tickets m "
	"  WHERE m.proposal_id = $1 AND m.party_id = $2::uuid AND m.state = 'PROPOSED'))::smallint "
	"WHERE t.proposal_id = $1 AND t.party_id = $2::uuid AND t.state = 'PROPOSED' RETURNING " COLUMNS;
static const char sql_party_in_proposal[] =
	"SELECT coalesce(party_id::text, '') FROM tickets WHERE proposal_id = $1 AND player_id = $2 "
	"AND state = 'PROPOSED'";
static const char sql_cancel_proposed_party[] =
	"UPDATE tickets AS t SET state = 'CANCELLED', revision = t.revision + 1, updated_at = now() "
	"FROM tickets d WHERE d.proposal_id = $1 AND d.player_id = $2 AND d.party_id IS NOT NULL "
	"  AND t.proposal_id = $1 AND t.party_id = d.party_id AND t.id <> d.id AND t.state = 'PROPOSED' "
	"RETURNING " COLUMNS;
static const char sql_cancel_expired_party[] =
	"UPDATE tickets AS t SET state = 'CANCELLED', revision = t.revision + 1, updated_at = now() "
	"WHERE t.proposal_id = $1 AND t.state = 'PROPOSED' AND t.party_id IN ("
	"  SELECT e.party_id FROM tickets e WHERE e.proposal_id = $1 AND e.state = 'EXPIRED' "
	"  AND e.party_id IS NOT NULL) RETURNING " COLUMNS;
static const char sql_align_party_lease[] =
	"UPDATE tickets AS t SET expires_at = g.e FROM ("
	"  SELECT s.party_id, max(s.expires_at) AS e FROM proposal_participants pp JOIN tickets s ON s.id = pp.ticket_id "
	"  WHERE pp.proposal_id = $1 AND s.party_id IS NOT NULL AND s.state = 'QUEUED' GROUP BY s.party_id) g "
	"WHERE t.party_id = g.party_id AND t.state = 'QUEUED' AND t.expires_at < g.e RETURNING " COLUMNS;

static const char sql_match[] =
	"UPDATE tickets AS t SET state = 'MATCHED', match_id = $2, revision = t.revision + 1, updated_at = now() "
	"WHERE t.proposal_id = $1 AND t.state = 'PROPOSED' RETURNING " COLUMNS;

static const char sql_assign[] =
	"UPDATE tickets AS t SET state = 'ASSIGNED', revision = t.revision + 1, updated_at = now() "
	"WHERE t.match_id = $1 AND t.state = 'MATCHED' RETURNING " COLUMNS;

static const char sql_backfill_assign[] =
	"UPDATE tickets AS t SET state = 'ASSIGNED', match_id = $2, revision = t.revision + 1, updated_at = now() "
	"WHERE t.id = $1 AND t.state = 'QUEUED' RETURNING " COLUMNS;

static const char sql_complete[] =
	"UPDATE tickets AS t SET state = 'COMPLETED', revision = t.revision + 1, updated_at = now() "
	"WHERE t.match_id = $1 AND t.state = 'ASSIGNED' RETURNING " COLUMNS;

static const char sql_fail_match[] =
	"UPDATE tickets AS t SET state = 'FAILED', revision = t.revision + 1, updated_at = now() "
	"WHERE t.match_id = $1 AND t.state IN ('MATCHED', 'ASSIGNED') RETURNING " COLUMNS;

/*
 * A match called off before its end (store/match_settle.h): its players go
 * back to the queue with a fresh heartbeat deadline ($3 s; they did nothing
 * wrong, and a deadline they earned long ago would expire them at once),
 * keeping queued_at (their place) and leaving the match and its proposal.
 * $2, when not NULL, is a uuid[] of players who stay out: the no-shows.
 */
static const char sql_requeue_match[] =
	"UPDATE tickets AS t SET state = 'QUEUED', proposal_id = NULL, match_id = NULL, revision = t.revision + 1, "
	"  updated_at = now(), expires_at = now() + make_interval(secs => $3::int) "
	"WHERE t.match_id = $1 AND t.state IN ('MATCHED', 'ASSIGNED') "
	"  AND ($2::uuid[] IS NULL OR t.player_id <> ALL ($2::uuid[])) RETURNING " COLUMNS;

/* The no-shows' tickets of a match -> FAILED ($2: their player ids). */
static const char sql_fail_players[] =
	"UPDATE tickets AS t SET state = 'FAILED', revision = t.revision + 1, updated_at = now() "
	"WHERE t.match_id = $1 AND t.state IN ('MATCHED', 'ASSIGNED') AND t.player_id = ANY ($2::uuid[]) "
	"RETURNING " COLUMNS;

void cc_ticket_moves_reset(struct cc_ticket_moves *m)
{
	m->n = 0;
	m->dropped = 0;
}

/*
 * Fills *t from row i. Returns 0, or CC_EDB for a state this build does not
 * know (a newer release's migration added it during a rolling deploy): an
 * error for this request, never an abort of the whole replica.
 */
static int ticket_from_row(const PGresult *res, int i, struct cc_ticket *t)
{
	memset(t, 0, sizeof *t);
	if (cc_ticket_state_parse(PQgetvalue(res, i, 0), &t->state) != 0)
		return CC_EDB;
	t->revision = strtoll(PQgetvalue(res, i, 1), NULL, 10);
	snprintf(t->proposal_id, sizeof t->proposal_id, "%s", PQgetvalue(res, i, 2));
	snprintf(t->match_id, sizeof t->match_id, "%s", PQgetvalue(res, i, 3));
	cc_candidate_from_row(res, i, COL_CANDIDATE, &t->cand);
	snprintf(t->id, sizeof t->id, "%s", t->cand.ticket_id);
	snprintf(t->player_id, sizeof t->player_id, "%s", t->cand.player_id);
	snprintf(t->playlist, sizeof t->playlist, "%s", PQgetvalue(res, i, COL_CANDIDATE + CC_CANDIDATE_NCOLUMNS - 1));
	t->expires_at_ms = t->cand.expires_at_ms;
	return 0;
}

static void note(struct cc_ticket_moves *moves, const struct cc_ticket *t)
{
	if (!moves)
		return;
	if (moves->n == CC_TICKET_MOVES_MAX) {
		moves->dropped++;
		return;
	}
	moves->v[moves->n++] = *t;
}

/* Copies row i's JSON into *json (when wanted). */
static int take_json(const PGresult *res, int i, char **json)
{
	if (!json)
		return 0;
	*json = strdup(PQgetvalue(res, i, COL_JSON));
	return *json ? 0 : CC_ENOMEM;
}

/* The one place a ticket transition is announced (payload: optional JSON object text). */
static int announce(struct cc_pg *pg, const char *event, const struct cc_ticket *t, const char *payload)
{
	const char *players[] = { t->player_id };
	struct cc_outbox_event ev = {
		.event = event,
		.resource_type = "ticket",
		.resource_id = t->id,
		.revision = t->revision,
		.player_ids = players,
		.n_player_ids = 1,
		.payload_json = payload,
	};
	return cc_outbox_append(pg, &ev);
}

/*
 * Runs a transition statement; announces (event not NULL) and notes every
 * row it changed. *n (may be NULL) receives the row count, *json (may be
 * NULL) the first row's JSON.
 */
static int transition(struct cc_pg *pg, const char *sql, int np, const char *const *params, const char *event,
		      const char *payload, int *n, char **json, struct cc_ticket_moves *moves)
{
	PGresult *res = NULL;
	int rc = cc_pg_exec(pg, sql, np, params, &res);
	int rows = rc == 0 ? PQntuples(res) : 0;
	for (int i = 0; rc == 0 && i < rows; i++) {
		struct cc_ticket t;
		if ((rc = ticket_from_row(res, i, &t)) != 0)
			break;
		if (event)
			rc = announce(pg, event, &t, payload);
		note(moves, &t);
		if (rc == 0 && i == 0)
			rc = take_json(res, 0, json);
	}
	if (n)
		*n = rows;
	PQclear(res);
	return rc;
}

int cc_ticket_enqueue_facts(struct cc_pg *pg, const char *player_id, const char *playlist,
			    const char *regions_pg_array, int64_t freshness_seconds, struct cc_enqueue_reading *out)
{
	PGresult *res = NULL;
	char freshness[24];
	memset(out, 0, sizeof *out);
	snprintf(freshness, sizeof freshness, "%lld", (long long)freshness_seconds);
	const char *p[] = { player_id, playlist, regions_pg_array, freshness };
	int rc = cc_pg_exec(pg, sql_enqueue_facts, 4, p, &res);
	if (rc == 0 && PQntuples(res) != 1)
		rc = CC_ENOTFOUND;
	if (rc != 0)
		goto out;
	out->facts.banned = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	snprintf(out->banned_until, sizeof out->banned_until, "%s", PQgetvalue(res, 0, 1));
	if (!PQgetisnull(res, 0, 2)) {
		int64_t wait = strtoll(PQgetvalue(res, 0, 2), NULL, 10);
		out->facts.cooldown_remaining_seconds = wait > 0 ? wait : 1; /* a running cooldown is never 0 */
	}
	out->facts.fresh_regions = strtoll(PQgetvalue(res, 0, 4), NULL, 10);
	out->rating = strtod(PQgetvalue(res, 0, 5), NULL);
	out->deviation = strtod(PQgetvalue(res, 0, 6), NULL);
	if (!(out->predicted_rtt = strdup(PQgetvalue(res, 0, 3))))
		rc = CC_ENOMEM;
out:
	PQclear(res);
	return rc;
}

void cc_enqueue_reading_release(struct cc_enqueue_reading *r)
{
	free(r->predicted_rtt);
	r->predicted_rtt = NULL;
}

int cc_ticket_enqueue(struct cc_pg *pg, const struct cc_ticket_new *n, struct cc_ticket *out, char **json,
		      struct cc_ticket_moves *moves)
{
	char protocol[16], rating[40], deviation[40], ttl[24];
	PGresult *res = NULL;
	int rc = 0;

	snprintf(protocol, sizeof protocol, "%ld", (long)n->protocol_version);
	snprintf(rating, sizeof rating, "%.17g", n->rating);
	snprintf(deviation, sizeof deviation, "%.17g", n->deviation);
	snprintf(ttl, sizeof ttl, "%lld", (long long)n->ttl_seconds);
	char party_size[16];
	snprintf(party_size, sizeof party_size, "%d", n->party_id && n->party_size > 1 ? n->party_size : 1);
	const char *p[] = { n->player_id, n->playlist, n->build, protocol, rating, deviation, n->predicted_rtt, ttl,
			    n->party_id, party_size };
	for (int round = 0; round < 2; round++) {
		if ((rc = cc_pg_exec(pg, sql_enqueue, 10, p, &res)) != 0)
			goto out;
		if (PQntuples(res) == 0)
			break;
		struct cc_ticket t;
		if ((rc = ticket_from_row(res, 0, &t)) != 0)
			goto out;
		if (t.state == CC_TICKET_QUEUED) {
			if ((rc = announce(pg, "ticket.queued", &t, NULL)) == 0 && (rc = take_json(res, 0, json)) == 0) {
				note(moves, &t);
				*out = t;
			}
			goto out;
		}
		/* The overdue ticket in the way, now EXPIRED. */
		if ((rc = announce(pg, "ticket.expired", &t, NULL)) != 0)
			goto out;
		note(moves, &t);
		PQclear(res);
		res = NULL;
	}
	PQclear(res);
	res = NULL;
	const char *pp[] = { n->player_id };
	if ((rc = cc_pg_exec(pg, sql_active_of_player, 1, pp, &res)) != 0)
		goto out;
	if (PQntuples(res) == 0) {
		rc = CC_ESERIALIZATION; /* committed after our snapshot: the retry sees it */
		goto out;
	}
	if ((rc = ticket_from_row(res, 0, out)) == 0)
		rc = CC_ECONFLICT;
out:
	PQclear(res);
	return rc;
}

int cc_ticket_get(struct cc_pg *pg, const char *ticket_id, const char *player_id, bool for_update,
		  struct cc_ticket *out, char **json)
{
	PGresult *res = NULL;
	const char *p[] = { ticket_id, player_id };
	int rc = cc_pg_exec(pg, for_update ? sql_get_for_update : sql_get, 2, p, &res);
	if (rc == 0 && PQntuples(res) != 1)
		rc = CC_ENOTFOUND;
	if (rc == 0)
		rc = ticket_from_row(res, 0, out);
	if (rc == 0)
		rc = take_json(res, 0, json);
	PQclear(res);
	return rc;
}

int cc_ticket_heartbeat(struct cc_pg *pg, const char *ticket_id, const char *player_id, int64_t revision,
			int64_t ttl_seconds, struct cc_ticket *out, char **json, struct cc_ticket_moves *moves)
{
	PGresult *res = NULL;
	char rev[24], ttl[24];
	snprintf(rev, sizeof rev, "%lld", (long long)revision);
	snprintf(ttl, sizeof ttl, "%lld", (long long)ttl_seconds);
	const char *p[] = { ticket_id, player_id, rev, ttl };
	int rc = cc_pg_exec(pg, sql_heartbeat, 4, p, &res);
	if (rc != 0)
		goto out;
	if (PQntuples(res) == 0) {
		/* The revision or the state did not match: the row as it is says which. */
		rc = cc_ticket_get(pg, ticket_id, player_id, false, out, NULL);
		if (rc == 0)
			rc = CC_ECONFLICT;
		goto out;
	}
	if ((rc = ticket_from_row(res, 0, out)) != 0)
		goto out;
	note(moves, out);
	if (out->state == CC_TICKET_EXPIRED) /* too late: the expiry is the change to announce */
		rc = announce(pg, "ticket.expired", out, NULL);
	if (rc == 0 && out->state != CC_TICKET_EXPIRED) {
		const char *pl[] = { ticket_id };
		rc = transition(pg, sql_party_lease, 1, pl, NULL, NULL, NULL, NULL, moves);
	}
	if (rc == 0)
		rc = take_json(res, 0, json);
out:
	PQclear(res);
	return rc;
}

const char *cc_ticket_heartbeat_with_session_sql(void)
{
	return sql_heartbeat_session;
}

int cc_ticket_heartbeat_with_session(struct cc_pg *pg, const char *token_hash, const char *ticket_id,
				     int64_t revision, int64_t ttl_seconds, enum cc_heartbeat_outcome *outcome,
				     struct cc_session_check *session, struct cc_ticket *out, char **json,
				     struct cc_ticket_moves *moves)
{
	PGresult *res = NULL;
	char rev[24], ttl[24];
	snprintf(rev, sizeof rev, "%lld", (long long)revision);
	snprintf(ttl, sizeof ttl, "%lld", (long long)ttl_seconds);
	const char *p[] = { token_hash, ticket_id, rev, ttl };
	int rc = cc_pg_exec(pg, sql_heartbeat_session, 4, p, &res);
	if (rc != 0)
		goto out;
	if (PQntuples(res) != 1) {
		*outcome = CC_HEARTBEAT_NO_SESSION;
		goto out;
	}
	cc_session_check_from_row(res, 0, COL_HB_SESSION, session);
	if (session->banned || session->revoked || session->expired) {
		*outcome = CC_HEARTBEAT_SESSION;
		goto out;
	}
	if (PQgetisnull(res, 0, 0)) {
		*outcome = CC_HEARTBEAT_NOT_FOUND;
		goto out;
	}
	if ((rc = ticket_from_row(res, 0, out)) != 0)
		goto out;
	if (strcmp(PQgetvalue(res, 0, COL_HB_CHANGED), "t") == 0) {
		*outcome = CC_HEARTBEAT_DONE;
		note(moves, out);
		rc = take_json(res, 0, json);
	} else if (strcmp(PQgetvalue(res, 0, COL_HB_OVERDUE), "t") == 0 ||
		   (out->revision == revision &&
		    (out->state == CC_TICKET_QUEUED || out->state == CC_TICKET_PROPOSED))) {
		*outcome = CC_HEARTBEAT_SLOW; /* its expiry to announce, or changed under the statement */
	} else {
		*outcome = CC_HEARTBEAT_MISS;
	}
out:
	PQclear(res);
	return rc;
}

int cc_ticket_expire_if_overdue(struct cc_pg *pg, const char *ticket_id, const char *player_id, bool *expired,
				struct cc_ticket_moves *moves)
{
	int n = 0;
	const char *p[] = { ticket_id, player_id };
	int rc = transition(pg, sql_expire_overdue, 2, p, "ticket.expired", NULL, &n, NULL, moves);
	*expired = rc == 0 && n > 0;
	return rc;
}

/* True for a [a-z_]{1,32} word, the only reasons an event payload carries. */
static bool reason_valid(const char *s)
{
	return cc_charset_valid(s, 32, CC_CHARSET_LOWER, "_");
}

int cc_ticket_cancel(struct cc_pg *pg, const char *ticket_id, const char *player_id, const char *reason,
		     bool *cancelled, char **json, struct cc_ticket_moves *moves)
{
	char payload[64];
	int n = 0, rc;
	if (reason && !reason_valid(reason))
		return CC_EINVAL;
	if (reason)
		snprintf(payload, sizeof payload, "{\"reason\":\"%s\"}", reason);
	if (ticket_id) {
		const char *p[] = { ticket_id, player_id };
		rc = transition(pg, sql_cancel_one, 2, p, "ticket.cancelled", reason ? payload : NULL, &n, json, moves);
	} else {
		const char *p[] = { player_id };
		rc = transition(pg, sql_cancel_of_player, 1, p, "ticket.cancelled", reason ? payload : NULL, &n, json,
				moves);
	}
	*cancelled = rc == 0 && n > 0;
	if (*cancelled) {
		const char *pp[] = { player_id };
		rc = transition(pg, sql_cancel_party_of_player, 1, pp, "ticket.cancelled",
				"{\"reason\":\"party_member_cancelled\"}", NULL, NULL, moves);
	}
	return rc;
}

int cc_tickets_cancel_party(struct cc_pg *pg, const char *party_id, const char *reason, int *n,
			    struct cc_ticket_moves *moves)
{
	char payload[64];
	if (!reason_valid(reason))
		return CC_EINVAL;
	snprintf(payload, sizeof payload, "{\"reason\":\"%s\"}", reason);
	const char *p[] = { party_id };
	return transition(pg, sql_cancel_party, 1, p, "ticket.cancelled", payload, n, NULL, moves);
}

/* The one id sql answers (its first row's first column) into id, "" when it answers no row. */
static int read_id(struct cc_pg *pg, const char *sql, int n, const char *const *p, char id[CC_UUID_BUF])
{
	PGresult *res = NULL;
	int rc = cc_pg_exec(pg, sql, n, p, &res);
	id[0] = '\0';
	if (rc == 0 && PQntuples(res) == 1)
		snprintf(id, CC_UUID_BUF, "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	return rc;
}

int cc_tickets_party_proposal(struct cc_pg *pg, const char *party_id, char proposal_id[CC_UUID_BUF])
{
	proposal_id[0] = '\0';
	if (!cc_uuid_valid(party_id))
		return CC_EINVAL;
	const char *p[] = { party_id };
	return read_id(pg, sql_party_proposal, 1, p, proposal_id);
}

int cc_ticket_set_rtt(struct cc_pg *pg, const char *player_id, const char *region, double rtt_ms,
		      struct cc_ticket_moves *moves)
{
	char rtt[40];
	snprintf(rtt, sizeof rtt, "%.17g", rtt_ms);
	const char *p[] = { player_id, region, rtt };
	return transition(pg, sql_set_rtt, 3, p, NULL, NULL, NULL, NULL, moves);
}

int cc_ticket_party_in_proposal(struct cc_pg *pg, const char *proposal_id, const char *player_id,
				char party_id[CC_UUID_BUF])
{
	const char *p[] = { proposal_id, player_id };
	return read_id(pg, sql_party_in_proposal, 2, p, party_id);
}

int cc_tickets_cancel_proposed(struct cc_pg *pg, const char *proposal_id, const char *player_id,
			       char party_id[CC_UUID_BUF], int *mates, struct cc_ticket_moves *moves)
{
	PGresult *res = NULL;
	struct cc_ticket t;
	const char *p[] = { proposal_id, player_id };
	party_id[0] = '\0';
	*mates = 0;
	int rc = cc_pg_exec(pg, sql_cancel_proposed, 2, p, &res);
	if (rc == 0 && PQntuples(res) == 1 && (rc = ticket_from_row(res, 0, &t)) == 0) {
		note(moves, &t);
		rc = announce(pg, "ticket.cancelled", &t, NULL);
		snprintf(party_id, CC_UUID_BUF, "%s", t.cand.party_id);
	}
	PQclear(res);
	if (rc == 0 && party_id[0]) {
		const char *ps[] = { proposal_id, party_id };
		rc = transition(pg, sql_shrink_proposed_party, 2, ps, NULL, NULL, mates, NULL, moves);
	}
	return rc;
}

int cc_tickets_cancel_proposed_party(struct cc_pg *pg, const char *proposal_id, const char *player_id,
				     struct cc_ticket_moves *moves)
{
	const char *p[] = { proposal_id, player_id };
	return transition(pg, sql_cancel_proposed_party, 2, p, "ticket.cancelled",
			  "{\"reason\":\"party_member_declined\"}", NULL, NULL, moves);
}

int cc_tickets_requeue(struct cc_pg *pg, const char *proposal_id, int64_t ttl_seconds, int *n,
		       struct cc_ticket_moves *moves)
{
	char ttl[24];
	snprintf(ttl, sizeof ttl, "%lld", (long long)(ttl_seconds > 0 ? ttl_seconds : 0));
	const char *p[] = { proposal_id, ttl };
	int rc = transition(pg, sql_requeue, 2, p, "ticket.requeued", NULL, n, NULL, moves);
	if (rc == 0)
		rc = transition(pg, sql_align_party_lease, 1, p, NULL, NULL, NULL, NULL, moves);
	return rc;
}

int cc_tickets_expire_unanswered(struct cc_pg *pg, const char *proposal_id, int *n, struct cc_ticket_moves *moves)
{
	const char *p[] = { proposal_id };
	int rc = transition(pg, sql_expire_unanswered, 1, p, "ticket.expired", "{\"reason\":\"proposal_timeout\"}", n,
			    NULL, moves);
	if (rc == 0)
		rc = transition(pg, sql_cancel_expired_party, 1, p, "ticket.cancelled",
				"{\"reason\":\"party_member_timed_out\"}", NULL, NULL, moves);
	return rc;
}

int cc_tickets_match(struct cc_pg *pg, const char *proposal_id, const char *match_id,
		     struct cc_ticket_moves *moves)
{
	const char *p[] = { proposal_id, match_id };
	return transition(pg, sql_match, 2, p, "ticket.matched", NULL, NULL, NULL, moves);
}

int cc_tickets_assign(struct cc_pg *pg, const char *match_id, int *n, struct cc_ticket_moves *moves)
{
	const char *p[] = { match_id };
	return transition(pg, sql_assign, 1, p, "ticket.assigned", NULL, n, NULL, moves);
}

int cc_ticket_backfill_assign(struct cc_pg *pg, const char *ticket_id, const char *match_id, int *n,
			      struct cc_ticket_moves *moves)
{
	if (!cc_uuid_valid(ticket_id) || !cc_uuid_valid(match_id))
		return CC_EINVAL;
	const char *p[] = { ticket_id, match_id };
	return transition(pg, sql_backfill_assign, 2, p, "ticket.assigned", "{\"backfill\":true}", n, NULL, moves);
}

int cc_tickets_complete(struct cc_pg *pg, const char *match_id, int *n, struct cc_ticket_moves *moves)
{
	const char *p[] = { match_id };
	return transition(pg, sql_complete, 1, p, "ticket.completed", NULL, n, NULL, moves);
}

int cc_tickets_fail_match(struct cc_pg *pg, const char *match_id, const char *reason, int *n,
			  struct cc_ticket_moves *moves)
{
	char payload[64];
	const char *p[] = { match_id };
	if (!reason || !reason_valid(reason))
		return CC_EINVAL;
	snprintf(payload, sizeof payload, "{\"reason\":\"%s\"}", reason);
	return transition(pg, sql_fail_match, 1, p, "ticket.failed", payload, n, NULL, moves);
}

/* players[0..n) as a uuid[] literal into buf (cap >= n * 37 + 3); CC_EINVAL for a malformed id. */
static int player_array(const char (*players)[CC_UUID_BUF], size_t n, char *buf, size_t cap)
{
	size_t u = 0;
	if (cap < n * (CC_UUID_BUF + 1) + 3)
		return CC_EINVAL;
	buf[u++] = '{';
	for (size_t i = 0; i < n; i++) {
		if (!cc_uuid_valid(players[i]))
			return CC_EINVAL;
		u += (size_t)snprintf(buf + u, cap - u, "%s%s", i ? "," : "", players[i]);
	}
	buf[u++] = '}';
	buf[u] = '\0';
	return 0;
}

int cc_tickets_requeue_match(struct cc_pg *pg, const char *match_id, const char *reason, int64_t ttl_seconds,
			     int *n, struct cc_ticket_moves *moves)
{
	return cc_tickets_split_match(pg, match_id, NULL, 0, reason, ttl_seconds, NULL, n, moves);
}

int cc_tickets_split_match(struct cc_pg *pg, const char *match_id, const char (*out_players)[CC_UUID_BUF],
			   size_t n_out, const char *reason, int64_t ttl_seconds, int *failed, int *requeued,
			   struct cc_ticket_moves *moves)
{
	char payload[64], ttl[24], arr[CC_FORMATION_MAX_PLAYERS * (CC_UUID_BUF + 1) + 3];
	int rc, nf = 0;
	if (failed)
		*failed = 0;
	if (requeued)
		*requeued = 0;
	if (!reason || !reason_valid(reason) || ttl_seconds < 1 || ttl_seconds > INT32_MAX ||
	    n_out > CC_FORMATION_MAX_PLAYERS || (n_out > 0 && !out_players))
		return CC_EINVAL;
	if (n_out > 0 && (rc = player_array(out_players, n_out, arr, sizeof arr)) != 0)
		return rc;
	snprintf(payload, sizeof payload, "{\"reason\":\"%s\"}", reason);
	snprintf(ttl, sizeof ttl, "%lld", (long long)ttl_seconds);
	if (n_out > 0) {
		const char *pf[] = { match_id, arr };
		if ((rc = transition(pg, sql_fail_players, 2, pf, "ticket.failed", payload, &nf, NULL, moves)) != 0)
			return rc;
		if (failed)
			*failed = nf;
	}
	const char *pq[] = { match_id, n_out > 0 ? arr : NULL, ttl };
	return transition(pg, sql_requeue_match, 3, pq, "ticket.requeued", payload, requeued, NULL, moves);
}

static const char sql_proposals_of_player[] =
	"SELECT proposal_id FROM tickets WHERE player_id = $1 AND state = 'PROPOSED' AND proposal_id IS NOT NULL";

int cc_ticket_proposals_of_player(struct cc_pg *pg, const char *player_id, struct cc_ticket_proposals *out)
{
	PGresult *res = NULL;
	const char *p[] = { player_id };
	int rc = cc_pg_exec(pg, sql_proposals_of_player, 1, p, &res);
	if (rc != 0)
		return rc;
	out->n = 0;
	int rows = PQntuples(res);
	if (rows > CC_TICKET_PROPOSALS_MAX) {
		rc = CC_EDB;
		goto out;
	}
	for (int i = 0; i < rows; i++)
		snprintf(out->id[out->n++], CC_UUID_BUF, "%s", PQgetvalue(res, i, 0));
out:
	PQclear(res);
	return rc;
}

/* ---- the sweeps (cc-maintenance) ------------------------------------------- */

static const char sql_overdue_count[] = "SELECT count(*) FROM tickets t WHERE " OVERDUE;

/* The lazy expiry's statement over a SKIP LOCKED batch: the same change, the same event. */
static const char sql_expire_overdue_batch[] =
	"UPDATE tickets AS t SET state = 'EXPIRED', revision = t.revision + 1, updated_at = now() "
	"FROM (SELECT id FROM tickets WHERE state = 'QUEUED' AND expires_at <= now() "
	"  ORDER BY expires_at LIMIT $1::int FOR UPDATE SKIP LOCKED) d "
	"WHERE t.id = d.id AND " OVERDUE " RETURNING " COLUMNS;

int cc_tickets_expire_overdue(struct cc_pg *pg, int limit, int *n, int64_t *lag, struct cc_ticket_moves *moves)
{
	char lim[16];
	int rc;
	if (limit < 1)
		return CC_EINVAL;
	if (lag) {
		char *text = NULL;
		if ((rc = cc_pg_exec_text(pg, sql_overdue_count, 0, NULL, &text)) != 0)
			return rc;
		*lag = strtoll(text, NULL, 10);
		free(text);
	}
	snprintf(lim, sizeof lim, "%d", limit);
	const char *p[] = { lim };
	return transition(pg, sql_expire_overdue_batch, 1, p, "ticket.expired", NULL, n, NULL, moves);
}

/* Ended without a match, and nothing references it (the FKs of proposal_participants and match_players). */
#define UNMATCHED_DEAD                                                                    \
	"t.state IN ('EXPIRED', 'CANCELLED') AND t.match_id IS NULL "                         \
	"AND NOT EXISTS (SELECT 1 FROM proposal_participants pp WHERE pp.ticket_id = t.id) " \
	"AND NOT EXISTS (SELECT 1 FROM match_players mp WHERE mp.ticket_id = t.id)"

static const char sql_purge_count[] =
	"SELECT count(*) FROM tickets t WHERE t.proposal_id IS NULL AND " UNMATCHED_DEAD
	" AND t.updated_at < now() - make_interval(secs => $1::float8)";

static const char sql_purge[] =
	"DELETE FROM tickets x USING (SELECT t.id FROM tickets t WHERE t.proposal_id IS NULL AND " UNMATCHED_DEAD
	"  AND t.updated_at < now() - make_interval(secs => $1::float8) ORDER BY t.updated_at LIMIT $2::int FOR UPDATE OF t SKIP LOCKED) d "
	"WHERE x.id = d.id";

static const char sql_purge_of_proposals[] =
	"DELETE FROM tickets x USING (SELECT t.id FROM tickets t WHERE t.proposal_id = ANY($1::uuid[]) AND "
	UNMATCHED_DEAD " FOR UPDATE OF t) d WHERE x.id = d.id";

int cc_tickets_purge_unmatched(struct cc_pg *pg, int64_t older_than_s, int limit, int64_t *n, int64_t *lag)
{
	return cc_store_purge(pg, sql_purge_count, sql_purge, older_than_s, limit, n, lag);
}

int cc_tickets_purge_of_proposals(struct cc_pg *pg, const char *proposal_ids, int64_t *n)
{
	PGresult *res = NULL;
	const char *p[] = { proposal_ids };
	int rc = cc_pg_exec(pg, sql_purge_of_proposals, 1, p, &res);
	if (rc == 0)
		*n = strtoll(PQcmdTuples(res), NULL, 10);
	PQclear(res);
	return rc;
}
