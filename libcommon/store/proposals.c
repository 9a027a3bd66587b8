#include "store/proposals.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/outbox.h"
#include "store/parties.h"
#include "store/penalties.h"
#include "store/purge.h"
#include "sys/banned.h"

static const char sql_lock_for_player[] =
	"SELECT p.state, p.revision, p.expires_at <= now(), coalesce(pp.response, '') "
	"FROM proposals p JOIN proposal_participants pp ON pp.proposal_id = p.id AND pp.player_id = $2 "
	"WHERE p.id = $1 FOR UPDATE OF p";

static const char sql_lock[] = "SELECT 1 FROM proposals WHERE id = $1 FOR UPDATE";

/* The one compare-and-set every decision goes through: OPEN -> $2 (EXPIRED only once due). */
static const char sql_settle[] =
	"UPDATE proposals SET state = $2, revision = revision + 1, decided_at = now() "
	"WHERE id = $1 AND state = 'OPEN' AND ($2 <> 'EXPIRED' OR expires_at <= now()) RETURNING revision";

static const char sql_overdue[] =
	"SELECT id FROM proposals WHERE state = 'OPEN' AND expires_at <= now() - make_interval(secs => $2::float8) "
	"ORDER BY expires_at LIMIT $1::int FOR UPDATE SKIP LOCKED";

static const char sql_participants[] =
	"SELECT player_id, ticket_id, response IS NULL FROM proposal_participants WHERE proposal_id = $1 "
	"ORDER BY team, player_id";

static const char sql_record_response[] =
	"UPDATE proposal_participants SET response = $3, responded_at = now() "
	"WHERE proposal_id = $1 AND player_id = $2 AND response IS NULL";

static const char sql_all_accepted[] =
	"SELECT count(*) = count(*) FILTER (WHERE response = 'ACCEPT') FROM proposal_participants "
	"WHERE proposal_id = $1";

static const char sql_view[] =
	"SELECT json_build_object('id', p.id, 'playlist', p.playlist, 'state', p.state, "
	"  'revision', p.revision, 'region', p.region, 'arena', p.arena, 'team_size', p.team_size, "
	"  'created_at', " CC_PG_RFC3339("p.created_at") ", 'expires_at', " CC_PG_RFC3339("p.expires_at") ", "
	"  'match_id', (SELECT m.id FROM matches m WHERE m.proposal_id = p.id), "
	"  'participants', (SELECT json_agg(json_build_object('player_id', q.player_id, 'team', q.team, "
	"     'response', lower(q.response)) ORDER BY q.team, q.player_id) "
	"     FROM proposal_participants q WHERE q.proposal_id = p.id))::text "
	"FROM proposals p WHERE p.id = $1 AND EXISTS (SELECT 1 FROM proposal_participants x "
	"  WHERE x.proposal_id = p.id AND x.player_id = $2)";

/* Appends one outbox row; players is a list of n UUID strings. */
static int announce(struct cc_pg *pg, const char *event, const char *type, const char *id, int64_t revision,
		    const char *const *players, size_t n)
{
	struct cc_outbox_event ev = {
		.event = event,
		.resource_type = type,
		.resource_id = id,
		.revision = revision,
		.player_ids = players,
		.n_player_ids = n,
	};
	return cc_outbox_append(pg, &ev);
}

/* Everyone in the proposal, for the proposal-level outbox row. */
static int participants(struct cc_pg *pg, const char *proposal_id, PGresult **res)
{
	const char *p[] = { proposal_id };
	return cc_pg_exec(pg, sql_participants, 1, p, res);
}

static int announce_proposal(struct cc_pg *pg, const char *event, const char *proposal_id, int64_t revision)
{
	PGresult *res = NULL;
	const char *players[CC_PROPOSAL_MAX_PARTICIPANTS];
	int rc = participants(pg, proposal_id, &res);
	int n = rc == 0 ? PQntuples(res) : 0;
	for (int i = 0; i < n && i < CC_PROPOSAL_MAX_PARTICIPANTS; i++)
		players[i] = PQgetvalue(res, i, 0);
	if (rc == 0)
		rc = announce(pg, event, "proposal", proposal_id, revision, players,
			      (size_t)(n < CC_PROPOSAL_MAX_PARTICIPANTS ? n : CC_PROPOSAL_MAX_PARTICIPANTS));
	PQclear(res);
	return rc;
}

/*
 * Settles proposal_id into state while it is still OPEN (EXPIRED: and due).
 * 0 with *settled; when settled, *revision is the proposal's new revision.
 * Losing the race to another decision is *settled = false.
 */
static int settle(struct cc_pg *pg, const char *proposal_id, const char *state, bool *settled, int64_t *revision)
{
	PGresult *res = NULL;
	const char *p[] = { proposal_id, state };
	int rc = cc_pg_exec(pg, sql_settle, 2, p, &res);
	*settled = rc == 0 && PQntuples(res) == 1;
	if (*settled)
		*revision = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	return rc;
}

int cc_proposal_lock(struct cc_pg *pg, const char *proposal_id)
{
	PGresult *res = NULL;
	const char *p[] = { proposal_id };
	int rc = cc_pg_exec(pg, sql_lock, 1, p, &res);
	PQclear(res);
	return rc;
}

/*
 * The timeout rule (SPEC 7) in this one transaction, behind settle()'s
 * compare-and-set: of any number of racing callers exactly one gets here.
 */
int cc_proposal_expire_if_due(struct cc_pg *pg, const char *proposal_id, bool *expired, struct cc_ticket_moves *moves)
{
	PGresult *who = NULL;
	int64_t revision = 0;
	int rc = settle(pg, proposal_id, "EXPIRED", expired, &revision);
	if (rc != 0 || !*expired)
		goto out;
	/* Exactly one PROPOSAL_TIMEOUT per non-responder (unique in the database). */
	if ((rc = participants(pg, proposal_id, &who)) != 0)
		goto out;
	for (int i = 0; rc == 0 && i < PQntuples(who); i++)
		if (strcmp(PQgetvalue(who, i, 2), "t") == 0)
			rc = cc_penalty_record(pg, PQgetvalue(who, i, 0), CC_PENALTY_PROPOSAL_TIMEOUT, proposal_id, NULL);
	if (rc == 0)
		rc = announce_proposal(pg, "proposal.expired", proposal_id, revision);
	/* The non-responders' tickets end; the rest accepted and go back, keeping the deadline they earned. */
	if (rc == 0)
		rc = cc_tickets_expire_unanswered(pg, proposal_id, NULL, moves);
	if (rc == 0)
		rc = cc_tickets_requeue(pg, proposal_id, 0, NULL, moves);
out:
	PQclear(who);
	return rc;
}

bool cc_proposals_moves_full(const struct cc_ticket_moves *moves)
{
	return CC_TICKET_MOVES_MAX - moves->n < CC_PROPOSAL_MAX_PARTICIPANTS;
}

int cc_proposals_expire_overdue(struct cc_pg *pg, int64_t grace_seconds, int limit, int *n,
				struct cc_ticket_moves *moves)
{
	char lim[16], grace[24];
	PGresult *res = NULL;
	snprintf(lim, sizeof lim, "%d", limit);
	snprintf(grace, sizeof grace, "%lld", (long long)(grace_seconds > 0 ? grace_seconds : 0));
	const char *p[] = { lim, grace };
	int rc = cc_pg_exec(pg, sql_overdue, 2, p, &res);
	*n = 0;
	for (int i = 0; rc == 0 && i < PQntuples(res) && !(moves && cc_proposals_moves_full(moves)); i++) {
		bool expired = false;
		rc = cc_proposal_expire_if_due(pg, PQgetvalue(res, i, 0), &expired, moves);
		*n += expired;
	}
	PQclear(res);
	return rc;
}

/*
 * The decliner's party first (store/README.md's lock order: a decline may
 * change the party, after the proposal and its tickets), then the
 * proposal. The party is read from the ticket without a lock: the
 * transaction's one snapshot, so a change after it fails the lock.
 */
static int lock_party_of(struct cc_pg *pg, const char *proposal_id, const char *player_id)
{
	char party_id[CC_UUID_BUF];
	int rc = cc_ticket_party_in_proposal(pg, proposal_id, player_id, party_id);
	if (rc == 0 && party_id[0])
		rc = cc_party_lock(pg, party_id);
	return rc;
}

int cc_proposal_lock_as_decliner(struct cc_pg *pg, const char *proposal_id, const char *player_id)
{
	int rc = lock_party_of(pg, proposal_id, player_id);
	return rc == 0 ? cc_proposal_lock(pg, proposal_id) : rc;
}

/*
 * Declines: the decliner's ticket ends with a DECLINE penalty and the
 * decliner leaves its party; the rest requeue, its party mates as the
 * smaller party (issue 26). A party that is gone has no mates to requeue
 * as: they are cancelled with the decliner.
 */
static int decline(struct cc_pg *pg, const char *proposal_id, const char *player_id, int ttl,
		   struct cc_ticket_moves *moves)
{
	char party_id[CC_UUID_BUF];
	int64_t revision = 0;
	int mates = 0;
	bool settled = false, removed = false;
	int rc = settle(pg, proposal_id, "DECLINED", &settled, &revision);
	if (rc != 0 || !settled)
		return rc ? rc : CC_ESTATE;
	if ((rc = cc_tickets_cancel_proposed(pg, proposal_id, player_id, party_id, &mates, moves)) != 0)
		return rc;
	if ((rc = cc_penalty_record(pg, player_id, CC_PENALTY_DECLINE, proposal_id, NULL)) != 0)
		return rc;
	if ((rc = announce_proposal(pg, "proposal.declined", proposal_id, revision)) != 0)
		return rc;
	if (mates > 0 && (rc = cc_party_member_declined(pg, party_id, player_id, &removed)) != 0)
		return rc;
	if (mates > 0 && !removed && (rc = cc_tickets_cancel_proposed_party(pg, proposal_id, player_id, moves)) != 0)
		return rc;
	return cc_tickets_requeue(pg, proposal_id, ttl, NULL, moves);
}

/* The last accept: the proposal becomes a match in ALLOCATING, its tickets MATCHED. */
static int accept_all(struct cc_pg *pg, const char *proposal_id, struct cc_ticket_moves *moves,
		      struct cc_match *match)
{
	struct cc_match created;
	int64_t revision = 0;
	bool settled = false;
	int rc = settle(pg, proposal_id, "ACCEPTED", &settled, &revision);
	if (rc != 0 || !settled)
		return rc ? rc : CC_ESTATE;
	if ((rc = cc_match_create(pg, proposal_id, &created)) != 0)
		return rc;
	if ((rc = announce_proposal(pg, "proposal.accepted", proposal_id, revision)) != 0)
		return rc;
	if ((rc = cc_tickets_match(pg, proposal_id, created.id, moves)) != 0)
		return rc;
	if (match)
		*match = created;
	return 0;
}

int cc_proposal_respond(struct cc_pg *pg, const char *proposal_id, const char *player_id, bool accept,
			int64_t revision, int ticket_ttl_seconds, enum cc_proposal_verdict *verdict,
			struct cc_ticket_moves *moves, struct cc_match *match)
{
	PGresult *res = NULL;
	const char *want = accept ? "ACCEPT" : "DECLINE";
	const char *p[] = { proposal_id, player_id };
	if (match)
		match->id[0] = '\0';
	int rc = accept ? 0 : lock_party_of(pg, proposal_id, player_id);
	if (rc == 0)
		rc = cc_pg_exec(pg, sql_lock_for_player, 2, p, &res);
	if (rc != 0)
		goto out;
	if (PQntuples(res) == 0) {
		*verdict = CC_PROPOSAL_NOT_PARTICIPANT;
		goto out;
	}
	bool open = strcmp(PQgetvalue(res, 0, 0), "OPEN") == 0;
	bool due = strcmp(PQgetvalue(res, 0, 2), "t") == 0;
	const char *given = PQgetvalue(res, 0, 3);
	int64_t current = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
	if (open && due) { /* a late response advances expiry (SPEC 7) */
		bool expired;
		if ((rc = cc_proposal_expire_if_due(pg, proposal_id, &expired, moves)) != 0)
			goto out;
		open = false;
	}
	if (strcmp(given, want) == 0) { /* an identical repeat, whatever happened since */
		*verdict = CC_PROPOSAL_OK;
		goto out;
	}
	if (!open) {
		*verdict = CC_PROPOSAL_CLOSED;
		goto out;
	}
	if (revision != current) {
		*verdict = CC_PROPOSAL_REVISION;
		goto out;
	}
	if (given[0]) {
		*verdict = CC_PROPOSAL_ALREADY;
		goto out;
	}
	PQclear(res);
	res = NULL;
	const char *pr[] = { proposal_id, player_id, want };
	if ((rc = cc_pg_exec(pg, sql_record_response, 3, pr, &res)) != 0)
		goto out;
	*verdict = CC_PROPOSAL_OK;
	if (!accept) {
		rc = decline(pg, proposal_id, player_id, ticket_ttl_seconds, moves);
		goto out;
	}
	PQclear(res);
	res = NULL;
	if ((rc = cc_pg_exec(pg, sql_all_accepted, 1, p, &res)) != 0)
		goto out;
	if (strcmp(PQgetvalue(res, 0, 0), "t") == 0)
		rc = accept_all(pg, proposal_id, moves, match);
out:
	PQclear(res);
	return rc;
}

int cc_proposal_decline_by_cancel(struct cc_pg *pg, const char *proposal_id, const char *player_id,
				  int ticket_ttl_seconds, struct cc_ticket_moves *moves)
{
	PGresult *res = NULL;
	const char *pr[] = { proposal_id, player_id, "DECLINE" };
	int rc = cc_pg_exec(pg, sql_record_response, 3, pr, &res);
	PQclear(res);
	if (rc == 0)
		rc = decline(pg, proposal_id, player_id, ticket_ttl_seconds, moves);
	return rc;
}

int cc_proposal_view(struct cc_pg *pg, const char *proposal_id, const char *player_id, char **json)
{
	const char *p[] = { proposal_id, player_id };
	return cc_pg_exec_text(pg, sql_view, 2, p, json);
}

/* ---- the sweeps (cc-maintenance) ------------------------------------------- */

static const char sql_overdue_count[] =
	"SELECT count(*) FROM proposals WHERE state = 'OPEN' AND expires_at <= now() - make_interval(secs => $1::float8)";

int cc_proposals_overdue_count(struct cc_pg *pg, int64_t grace_seconds, int64_t *lag)
{
	char *text = NULL, grace[24];
	snprintf(grace, sizeof grace, "%lld", (long long)(grace_seconds > 0 ? grace_seconds : 0));
	const char *p[] = { grace };
	int rc = cc_pg_exec_text(pg, sql_overdue_count, 1, p, &text);
	if (rc == 0)
		*lag = strtoll(text, NULL, 10);
	free(text);
	return rc;
}

/*
 * Due: decided without a match past the window, and every ticket that
 * still names it ended without a match too (so the purge can take them
 * along: a ticket of it that later made a match keeps the proposal).
 */
#define PURGE_DUE                                                                                   \
	"p.state IN ('DECLINED', 'EXPIRED') AND p.decided_at < now() - make_interval(secs => $1::float8) " \
	"AND NOT EXISTS (SELECT 1 FROM tickets t WHERE t.proposal_id = p.id AND (t.state NOT IN "         \
	"  ('EXPIRED', 'CANCELLED') OR t.match_id IS NOT NULL "                                             \
	"  OR EXISTS (SELECT 1 FROM match_players mp WHERE mp.ticket_id = t.id)))"

static const char sql_purge_count[] = "SELECT count(*) FROM proposals p WHERE " PURGE_DUE;

static const char sql_purge_pick[] =
	"SELECT coalesce(array_agg(id)::text, '{}') FROM (SELECT p.id FROM proposals p WHERE " PURGE_DUE
	"  ORDER BY p.decided_at LIMIT $2::int FOR UPDATE OF p SKIP LOCKED) d";

static const char sql_purge_participants[] = "DELETE FROM proposal_participants WHERE proposal_id = ANY($1::uuid[])";

/* A ticket that could not go (it sits in another, younger proposal too) keeps its proposal for a later pass. */
static const char sql_purge_proposals[] =
	"DELETE FROM proposals p WHERE p.id = ANY($1::uuid[]) "
	"AND NOT EXISTS (SELECT 1 FROM tickets t WHERE t.proposal_id = p.id)";

int cc_proposals_purge_unmatched(struct cc_pg *pg, int64_t older_than_s, int limit, int64_t *n, int64_t *tickets,
				 int64_t *lag)
{
	char secs[24], lim[16];
	char *ids = NULL;
	PGresult *res = NULL;
	int64_t due = -1, gone_tickets = 0;
	int rc;
	if (limit < 1 || older_than_s < 0)
		return CC_EINVAL;
	snprintf(secs, sizeof secs, "%lld", (long long)older_than_s);
	snprintf(lim, sizeof lim, "%d", limit);
	const char *p[] = { secs, lim };
	if (lag && (rc = cc_store_purge_due(pg, sql_purge_count, older_than_s, &due)) != 0)
		return rc;
	if ((rc = cc_pg_exec_text(pg, sql_purge_pick, 2, p, &ids)) != 0)
		return rc;
	const char *pi[] = { ids };
	if ((rc = cc_pg_exec(pg, sql_purge_participants, 1, pi, NULL)) != 0)
		goto out;
	if ((rc = cc_tickets_purge_of_proposals(pg, ids, &gone_tickets)) != 0)
		goto out;
	if ((rc = cc_pg_exec(pg, sql_purge_proposals, 1, pi, &res)) != 0)
		goto out;
	*n = strtoll(PQcmdTuples(res), NULL, 10);
	if (tickets)
		*tickets = gone_tickets;
	if (lag)
		*lag = due;
out:
	PQclear(res);
	free(ids);
	return rc;
}
