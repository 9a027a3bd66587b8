#include "formation_claim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "outbox.h"
#include "banned.h"

/* The usable-candidate test, shared by the fence and the lost-ticket check. */
#define CLAIMABLE                                                                                  \
	"t.id = ANY($1::uuid[]) AND t.playlist = $2 AND t.state = 'QUEUED' AND t.expires_at > now() " \
	"AND t.build = $3 AND t.protocol_version = $4::int "                                        \
	"AND CASE WHEN jsonb_typeof(t.predicted_rtt -> $5) = 'number' "                             \
	"    THEN (t.predicted_rtt ->> $5)::float8 <= $6::float8 ELSE false END"

/*
 * The fence, one ticket at a time in id order: a row another transaction
 * holds is skipped, and the claim stops at the first one. Locking in one
 * global order and giving up at the first miss means two claims racing
 * over overlapping sets can never each hold part of the other's: exactly
 * one of them gets everything. (One statement over the whole set would
 * skip and carry on, so two claims of the same set could both lose.)
 */
static const char sql_lock[] = "SELECT t.id, t.player_id FROM tickets t WHERE " CLAIMABLE
			       " FOR UPDATE SKIP LOCKED";

/* After a miss: which tickets a plain read still finds claimable (locked elsewhere, not gone). */
static const char sql_busy[] = "SELECT t.id FROM tickets t WHERE " CLAIMABLE;

static const char sql_arenas[] =
	"SELECT name FROM arenas WHERE ranked_eligible OR NOT $1::bool ORDER BY name";

static const char sql_insert_proposal[] =
	"INSERT INTO proposals (id, playlist, state, region, arena, build, protocol_version, team_size, "
	"  matcher, expires_at) "
	"VALUES ($1, $2, 'OPEN', $3, $4, $5, $6::int, $7::int, $8, now() + make_interval(secs => $9::int)) "
	"RETURNING revision";

/* player_id comes from the locked ticket rows, never from the (maybe stale) candidate. */
static const char sql_insert_participants[] =
	"INSERT INTO proposal_participants (proposal_id, ticket_id, player_id, team) "
	"SELECT $1, t.id, t.player_id, u.team "
	"FROM unnest($2::uuid[], $3::smallint[]) AS u(ticket_id, team) JOIN tickets t ON t.id = u.ticket_id";

static const char sql_propose_tickets[] =
	"UPDATE tickets SET state = 'PROPOSED', proposal_id = $1, revision = revision + 1, updated_at = now() "
	"WHERE id = ANY($2::uuid[]) AND state = 'QUEUED' RETURNING id, revision, player_id";

/* Arrays for the statements, built once per claim (ids are validated UUIDs). */
struct claim_tx {
	const struct cc_claim_request *req;
	struct cc_claim_result *out;
	char ids[CC_FORMATION_MAX_PLAYERS * 37 + 3];   /* "{id,id}" in request order */
	char teams[CC_FORMATION_MAX_PLAYERS * 2 + 3];  /* "{0,1}" */
	char protocol[16], team_size[16], window[16], max_rtt[40];
	char proposal_id[37];
};

size_t cc_claim_arena_index(const char *proposal_id, size_t n)
{
	uint32_t h = 2166136261u;
	for (const unsigned char *p = (const unsigned char *)proposal_id; *p; p++)
		h = (h ^ *p) * 16777619u;
	return n ? h % n : 0;
}

void cc_claim_request_from(struct cc_claim_request *req, const struct cc_formation *f,
			   const struct cc_candidate *cands, const char *playlist, const char *matcher,
			   int window_seconds, double max_rtt_ms)
{
	const struct cc_candidate *anchor = &cands[f->index[0]];
	memset(req, 0, sizeof *req);
	req->playlist = playlist;
	req->matcher = matcher;
	req->window_seconds = window_seconds;
	req->team_size = (int)(f->n_players / 2);
	req->build = anchor->build;
	req->protocol_version = anchor->protocol_version;
	req->region = f->region;
	req->max_rtt_ms = max_rtt_ms;
	req->n = f->n_players;
	for (size_t k = 0; k < f->n_players; k++) {
		req->ticket_id[k] = cands[f->index[k]].ticket_id;
		req->team[k] = f->team[k];
	}
}

/* Request positions sorted by ticket id: the one lock order every claimant uses. */
static void lock_order(const struct cc_claim_request *req, size_t *order)
{
	for (size_t k = 0; k < req->n; k++) {
		size_t j = k;
		for (; j > 0 && strcmp(req->ticket_id[order[j - 1]], req->ticket_id[k]) > 0; j--)
			order[j] = order[j - 1];
		order[j] = k;
	}
}

/*
 * Locks every ticket in id order. Returns 0 when all are ours;
 * CC_ECONFLICT with *missed = the request position that was not claimable
 * (or listed twice, or another ticket of a player already locked); or a
 * cc_pg_exec error.
 */
static int lock_tickets(struct cc_pg *pg, const struct claim_tx *tx, size_t *missed)
{
	const struct cc_claim_request *req = tx->req;
	size_t order[CC_FORMATION_MAX_PLAYERS];
	char player[CC_FORMATION_MAX_PLAYERS][37];
	int rc = 0;

	lock_order(req, order);
	for (size_t i = 0; i < req->n && rc == 0; i++) {
		size_t k = order[i];
		char one[40];
		PGresult *res = NULL;
		snprintf(one, sizeof one, "{%s}", req->ticket_id[k]);
		const char *p[] = { one, req->playlist, req->build, tx->protocol, req->region, tx->max_rtt };
		if ((rc = cc_pg_exec(pg, sql_lock, 6, p, &res)) != 0)
			return rc;
		bool ok = PQntuples(res) == 1 && (i == 0 || strcmp(req->ticket_id[order[i - 1]], req->ticket_id[k]) != 0);
		if (ok)
			snprintf(player[i], sizeof player[i], "%s", PQgetvalue(res, 0, 1));
		for (size_t j = 0; ok && j < i; j++)
			ok = strcmp(player[j], player[i]) != 0;
		PQclear(res);
		if (!ok) {
			*missed = k;
			rc = CC_ECONFLICT;
		}
	}
	return rc;
}

/*
 * After a miss: the missed ticket is lost, and so is every other one a
 * plain read no longer finds claimable (gone: taken, cancelled, expired,
 * changed). A lost ticket the plain read still finds is only locked by
 * another claim (busy), so the index keeps it.
 */
static int mark_lost(struct cc_pg *pg, struct claim_tx *tx, size_t missed)
{
	const struct cc_claim_request *req = tx->req;
	PGresult *res = NULL;
	const char *p[] = { tx->ids, req->playlist, req->build, tx->protocol, req->region, tx->max_rtt };
	int rc = cc_pg_exec(pg, sql_busy, 6, p, &res);
	if (rc != 0)
		return rc;
	for (size_t k = 0; k < req->n; k++) {
		bool claimable = false;
		for (int i = 0; i < PQntuples(res) && !claimable; i++)
			claimable = strcmp(PQgetvalue(res, i, 0), req->ticket_id[k]) == 0;
		tx->out->lost[k] = k == missed || !claimable;
		tx->out->gone[k] = !claimable;
	}
	PQclear(res);
	return 0;
}

/* Chooses the arena for the proposal from the arenas table. */
static int pick_arena(struct cc_pg *pg, struct claim_tx *tx)
{
	PGresult *res = NULL;
	const char *p[] = { strcmp(tx->req->playlist, "ranked") == 0 ? "true" : "false" };
	int rc = cc_pg_exec(pg, sql_arenas, 1, p, &res);
	if (rc != 0)
		return rc;
	size_t n = (size_t)PQntuples(res);
	if (n == 0) {
		rc = CC_ENOTFOUND;
	} else {
		size_t i = cc_claim_arena_index(tx->proposal_id, n);
		snprintf(tx->out->arena, sizeof tx->out->arena, "%s", PQgetvalue(res, (int)i, 0));
	}
	PQclear(res);
	return rc;
}

/* Announces each ticket's move to PROPOSED (rows of sql_propose_tickets). */
static int announce_tickets(struct cc_pg *pg, const struct claim_tx *tx, const PGresult *res)
{
	char payload[64];
	snprintf(payload, sizeof payload, "{\"proposal_id\":\"%s\"}", tx->proposal_id);
	for (int i = 0; i < PQntuples(res); i++) {
		const char *players[] = { PQgetvalue(res, i, 2) };
		struct cc_outbox_event ev = {
			.event = "ticket.proposed",
			.resource_type = "ticket",
			.resource_id = PQgetvalue(res, i, 0),
			.revision = strtoll(PQgetvalue(res, i, 1), NULL, 10),
			.player_ids = players,
			.n_player_ids = 1,
			.payload_json = payload,
		};
		int rc = cc_outbox_append(pg, &ev);
		if (rc != 0)
			return rc;
	}
	return 0;
}

static int claim_tx_run(struct cc_pg *pg, void *arg)
{
	struct claim_tx *tx = arg;
	const struct cc_claim_request *req = tx->req;
	PGresult *res = NULL;
	const char *players[CC_FORMATION_MAX_PLAYERS];
	int rc;

	memset(tx->out->lost, 0, sizeof tx->out->lost);
	memset(tx->out->gone, 0, sizeof tx->out->gone);
	size_t missed = 0;
	if ((rc = lock_tickets(pg, tx, &missed)) == CC_ECONFLICT && (rc = mark_lost(pg, tx, missed)) == 0)
		rc = CC_ECONFLICT;
	if (rc != 0)
		goto out;

	if ((rc = pick_arena(pg, tx)) != 0)
		goto out;
	const char *pp[] = { tx->proposal_id, req->playlist, req->region, tx->out->arena, req->build,
			     tx->protocol, tx->team_size, req->matcher, tx->window };
	if ((rc = cc_pg_exec(pg, sql_insert_proposal, 9, pp, &res)) != 0)
		goto out;
	int64_t proposal_revision = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	res = NULL;

	const char *pa[] = { tx->proposal_id, tx->ids, tx->teams };
	if ((rc = cc_pg_exec(pg, sql_insert_participants, 3, pa, &res)) != 0)
		goto out;
	if (cc_pg_rows_affected(res) != (int64_t)req->n) {
		rc = CC_EDB; /* cannot happen: every ticket row is locked by us */
		goto out;
	}
	PQclear(res);
	res = NULL;

	const char *pt[] = { tx->proposal_id, tx->ids };
	if ((rc = cc_pg_exec(pg, sql_propose_tickets, 2, pt, &res)) != 0)
		goto out;
	if (PQntuples(res) != (int)req->n) {
		rc = CC_EDB;
		goto out;
	}
	for (int i = 0; i < PQntuples(res); i++)
		players[i] = PQgetvalue(res, i, 2);
	struct cc_outbox_event opened = {
		.event = "proposal.opened",
		.resource_type = "proposal",
		.resource_id = tx->proposal_id,
		.revision = proposal_revision,
		.player_ids = players,
		.n_player_ids = req->n,
	};
	if ((rc = cc_outbox_append(pg, &opened)) != 0)
		goto out;
	rc = announce_tickets(pg, tx, res);
out:
	PQclear(res);
	return rc;
}

/* Checks req and builds the statement parameters into tx. */
static int claim_tx_init(struct claim_tx *tx, const struct cc_claim_request *req, struct cc_claim_result *out)
{
	size_t used = 0, tused = 0;
	if (!req->playlist || !req->matcher || !req->build || !req->region || req->team_size < 1 ||
	    req->team_size > CC_FORMATION_MAX_TEAM_SIZE || req->n != 2 * (size_t)req->team_size ||
	    req->window_seconds < 1 || !(req->max_rtt_ms > 0))
		return CC_EINVAL;
	memset(tx, 0, sizeof *tx);
	tx->req = req;
	tx->out = out;
	tx->ids[used++] = '{';
	tx->teams[tused++] = '{';
	for (size_t k = 0; k < req->n; k++) {
		if (!cc_uuid_valid(req->ticket_id[k]) || req->team[k] > 1)
			return CC_EINVAL;
		used += (size_t)snprintf(tx->ids + used, sizeof tx->ids - used, "%s%s", k ? "," : "",
					 req->ticket_id[k]);
		tused += (size_t)snprintf(tx->teams + tused, sizeof tx->teams - tused, "%s%u", k ? "," : "",
					  (unsigned)req->team[k]);
	}
	snprintf(tx->ids + used, sizeof tx->ids - used, "}");
	snprintf(tx->teams + tused, sizeof tx->teams - tused, "}");
	snprintf(tx->protocol, sizeof tx->protocol, "%d", (int)req->protocol_version);
	snprintf(tx->team_size, sizeof tx->team_size, "%d", req->team_size);
	snprintf(tx->window, sizeof tx->window, "%d", req->window_seconds);
	snprintf(tx->max_rtt, sizeof tx->max_rtt, "%.17g", req->max_rtt_ms);
	/* One id for every attempt, so the arena is the same whichever attempt commits. */
	cc_random_uuid(tx->proposal_id);
	return 0;
}

int cc_formation_claim(struct cc_pg *pg, const struct cc_claim_request *req, struct cc_claim_result *out)
{
	struct claim_tx tx;
	struct cc_claim_result result;
	memset(&result, 0, sizeof result);
	int rc = claim_tx_init(&tx, req, &result);
	if (rc != 0)
		return rc;
	rc = cc_pg_run_serializable(pg, claim_tx_run, &tx);
	if (rc == 0)
		snprintf(result.proposal_id, sizeof result.proposal_id, "%s", tx.proposal_id);
	if (rc == 0 || rc == CC_ECONFLICT)
		*out = result;
	return rc;
}
