#include "store/formation_claim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys/crypto.h"
#include "sys/hash.h"
#include "sys/banned.h"

/* The whole claim is one function (migrations/0006_claim_function.up.sql). */
static const char sql_claim[] =
	"SELECT outcome, proposal_revision, arena, lost::text, gone::text "
	"FROM cc_claim_proposal($1::uuid, $2, $3::uuid[], $4::smallint[], $5, $6::int, $7, $8::float8, $9::int, "
	"$10, $11::int, $12::bigint)";

/* Arrays for the statements, built once per claim (ids are validated UUIDs). */
struct claim_tx {
	const struct cc_claim_request *req;
	struct cc_claim_result *out;
	char ids[CC_FORMATION_MAX_PLAYERS * CC_UUID_BUF + 3];   /* "{id,id}" in request order */
	char teams[CC_FORMATION_MAX_PLAYERS * 2 + 3];  /* "{0,1}" */
	char protocol[16], team_size[16], window[16], max_rtt[40], arena_pick[24];
	char proposal_id[CC_UUID_BUF];
};

/* FNV-1a of the id; the database takes it modulo the number of eligible arenas. */
static uint32_t arena_hash(const char *proposal_id)
{
	return cc_hash_fnv1a32(proposal_id, strlen(proposal_id));
}

size_t cc_claim_arena_index(const char *proposal_id, size_t n)
{
	return n ? arena_hash(proposal_id) % n : 0;
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

/* Parses a boolean[] as text ("{t,f,...}") of exactly n entries into out. */
static bool parse_bools(const char *text, bool *out, size_t n)
{
	size_t k = 0;
	if (*text++ != '{')
		return false;
	while (k < n && (*text == 't' || *text == 'f')) {
		out[k++] = *text++ == 't';
		if (*text == ',' && k < n)
			text++;
	}
	return k == n && text[0] == '}' && text[1] == '\0';
}

static int claim_tx_run(struct cc_pg *pg, void *arg)
{
	struct claim_tx *tx = arg;
	const struct cc_claim_request *req = tx->req;
	PGresult *res = NULL;
	const char *p[] = { tx->proposal_id, req->playlist, tx->ids, tx->teams, req->build, tx->protocol,
			    req->region, tx->max_rtt, tx->team_size, req->matcher, tx->window, tx->arena_pick };

	memset(tx->out->lost, 0, sizeof tx->out->lost);
	memset(tx->out->gone, 0, sizeof tx->out->gone);
	int rc = cc_pg_exec(pg, sql_claim, 12, p, &res);
	if (rc != 0)
		return rc;
	const char *outcome = PQntuples(res) == 1 ? PQgetvalue(res, 0, 0) : "";
	if (strcmp(outcome, "claimed") == 0 && !PQgetisnull(res, 0, 2)) {
		snprintf(tx->out->arena, sizeof tx->out->arena, "%s", PQgetvalue(res, 0, 2));
	} else if (strcmp(outcome, "lost") == 0 && parse_bools(PQgetvalue(res, 0, 3), tx->out->lost, req->n) &&
		   parse_bools(PQgetvalue(res, 0, 4), tx->out->gone, req->n)) {
		rc = CC_ECONFLICT;
	} else if (strcmp(outcome, "no_arena") == 0) {
		rc = CC_ENOTFOUND;
	} else {
		rc = CC_EDB; /* cannot happen: the function answers one of the above */
	}
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
	snprintf(tx->arena_pick, sizeof tx->arena_pick, "%u", (unsigned)arena_hash(tx->proposal_id));
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

/* ---- batches ---------------------------------------------------------------------- */

/*
 * One statement for the whole batch: per formed match k (ordinality), its
 * own cc_claim_proposal call over its slice of the flattened ticket and
 * team arrays ($7, $9: 2 * team_size entries each). The function is
 * VOLATILE, so PostgreSQL calls it once per row of the unnest, in order.
 */
static const char sql_claim_batch[] =
	"SELECT b.k, c.outcome, c.arena, c.lost::text, c.gone::text "
	"FROM unnest($1::uuid[], $2::text[], $3::int[], $4::text[], $5::bigint[]) "
	"WITH ORDINALITY AS b(id, build, protocol, region, pick, k) "
	"CROSS JOIN LATERAL cc_claim_proposal(b.id, $6, "
	"($7::uuid[])[(b.k::int - 1) * 2 * $8::int + 1 : b.k::int * 2 * $8::int], "
	"($9::smallint[])[(b.k::int - 1) * 2 * $8::int + 1 : b.k::int * 2 * $8::int], "
	"b.build, b.protocol, b.region, $10::float8, $8::int, $11, $12::int, b.pick) AS c "
	"ORDER BY b.k";

/* The parameters of one batch: a few tens of KiB, so on the heap. */
struct batch_tx {
	const struct cc_claim_request *reqs;
	size_t n;
	struct cc_claim_result *out;        /* n results, written by each attempt */
	int *rcs;                           /* n outcomes */
	char proposal_id[CC_CLAIM_BATCH_MAX][CC_UUID_BUF];
	char ids[CC_CLAIM_BATCH_MAX * CC_UUID_BUF + 3];
	char builds[CC_CLAIM_BATCH_MAX * (2 * CC_CANDIDATE_BUILD_MAX + 3) + 3];
	char protocols[CC_CLAIM_BATCH_MAX * 12 + 3];
	char regions[CC_CLAIM_BATCH_MAX * (2 * CC_CANDIDATE_REGION_MAX + 3) + 3];
	char picks[CC_CLAIM_BATCH_MAX * 12 + 3];
	char tickets[CC_CLAIM_BATCH_MAX * CC_FORMATION_MAX_PLAYERS * CC_UUID_BUF + 3];
	char teams[CC_CLAIM_BATCH_MAX * CC_FORMATION_MAX_PLAYERS * 2 + 3];
	char team_size[16], max_rtt[40], window[16];
};

/* Appends s to an array literal being built in buf (used so far *used) as one quoted element. */
static bool append_quoted(char *buf, size_t cap, size_t *used, const char *s, bool first)
{
	size_t u = *used;
	if (u + 3 >= cap)
		return false;
	if (!first)
		buf[u++] = ',';
	buf[u++] = '"';
	for (; *s; s++) {
		if (u + 3 >= cap)
			return false;
		if (*s == '"' || *s == '\\')
			buf[u++] = '\\';
		buf[u++] = *s;
	}
	buf[u++] = '"';
	buf[u] = '\0';
	*used = u;
	return true;
}

/* Appends text (no quoting needed: ids, numbers) as one element. */
static bool append_plain(char *buf, size_t cap, size_t *used, const char *s, bool first)
{
	int w = snprintf(buf + *used, cap - *used, "%s%s", first ? "" : ",", s);
	if (w < 0 || (size_t)w >= cap - *used)
		return false;
	*used += (size_t)w;
	return true;
}

static int batch_tx_init(struct batch_tx *tx, const struct cc_claim_request *reqs, size_t n)
{
	size_t u_ids = 1, u_builds = 1, u_protocols = 1, u_regions = 1, u_picks = 1, u_tickets = 1, u_teams = 1;
	const struct cc_claim_request *r0 = &reqs[0];
	char num[24];
	tx->ids[0] = tx->builds[0] = tx->protocols[0] = tx->regions[0] = tx->picks[0] = tx->tickets[0] =
		tx->teams[0] = '{';
	for (size_t k = 0; k < n; k++) {
		const struct cc_claim_request *r = &reqs[k];
		struct claim_tx one;
		struct cc_claim_result scratch;
		/* The single claim's checks, request by request; then the batch's common settings. */
		if (claim_tx_init(&one, r, &scratch) != 0 || strcmp(r->playlist, r0->playlist) != 0 ||
		    strcmp(r->matcher, r0->matcher) != 0 || r->window_seconds != r0->window_seconds ||
		    r->team_size != r0->team_size || r->max_rtt_ms != r0->max_rtt_ms)
			return CC_EINVAL;
		cc_random_uuid(tx->proposal_id[k]);
		snprintf(num, sizeof num, "%d", (int)r->protocol_version);
		bool ok = append_plain(tx->ids, sizeof tx->ids, &u_ids, tx->proposal_id[k], k == 0) &&
			  append_quoted(tx->builds, sizeof tx->builds, &u_builds, r->build, k == 0) &&
			  append_plain(tx->protocols, sizeof tx->protocols, &u_protocols, num, k == 0) &&
			  append_quoted(tx->regions, sizeof tx->regions, &u_regions, r->region, k == 0);
		snprintf(num, sizeof num, "%u", (unsigned)arena_hash(tx->proposal_id[k]));
		ok = ok && append_plain(tx->picks, sizeof tx->picks, &u_picks, num, k == 0);
		for (size_t j = 0; ok && j < r->n; j++) {
			snprintf(num, sizeof num, "%u", (unsigned)r->team[j]);
			ok = append_plain(tx->tickets, sizeof tx->tickets, &u_tickets, r->ticket_id[j], k == 0 && j == 0) &&
			     append_plain(tx->teams, sizeof tx->teams, &u_teams, num, k == 0 && j == 0);
		}
		if (!ok)
			return CC_EINVAL;
	}
	if (!append_plain(tx->ids, sizeof tx->ids, &u_ids, "}", true) ||
	    !append_plain(tx->builds, sizeof tx->builds, &u_builds, "}", true) ||
	    !append_plain(tx->protocols, sizeof tx->protocols, &u_protocols, "}", true) ||
	    !append_plain(tx->regions, sizeof tx->regions, &u_regions, "}", true) ||
	    !append_plain(tx->picks, sizeof tx->picks, &u_picks, "}", true) ||
	    !append_plain(tx->tickets, sizeof tx->tickets, &u_tickets, "}", true) ||
	    !append_plain(tx->teams, sizeof tx->teams, &u_teams, "}", true))
		return CC_EINVAL;
	snprintf(tx->team_size, sizeof tx->team_size, "%d", r0->team_size);
	snprintf(tx->max_rtt, sizeof tx->max_rtt, "%.17g", r0->max_rtt_ms);
	snprintf(tx->window, sizeof tx->window, "%d", r0->window_seconds);
	return 0;
}

static int batch_tx_run(struct cc_pg *pg, void *arg)
{
	struct batch_tx *tx = arg;
	const struct cc_claim_request *r0 = &tx->reqs[0];
	PGresult *res = NULL;
	const char *p[] = { tx->ids,       tx->builds,   tx->protocols, tx->regions,  tx->picks,   r0->playlist,
			    tx->tickets,   tx->team_size, tx->teams,    tx->max_rtt,  r0->matcher, tx->window };
	int rc = cc_pg_exec(pg, sql_claim_batch, 12, p, &res);
	if (rc != 0)
		return rc;
	if ((size_t)PQntuples(res) != tx->n)
		rc = CC_EDB; /* cannot happen: one row per unnest row */
	for (size_t k = 0; rc == 0 && k < tx->n; k++) {
		const struct cc_claim_request *r = &tx->reqs[k];
		struct cc_claim_result *o = &tx->out[k];
		int64_t ord = 0;
		const char *outcome = PQgetvalue(res, (int)k, 1);
		memset(o, 0, sizeof *o);
		if (cc_pg_get_int64(res, (int)k, 0, &ord) != 0 || ord != (int64_t)k + 1) {
			rc = CC_EDB;
		} else if (strcmp(outcome, "claimed") == 0 && !PQgetisnull(res, (int)k, 2)) {
			snprintf(o->proposal_id, sizeof o->proposal_id, "%s", tx->proposal_id[k]);
			snprintf(o->arena, sizeof o->arena, "%s", PQgetvalue(res, (int)k, 2));
			tx->rcs[k] = 0;
		} else if (strcmp(outcome, "lost") == 0 && parse_bools(PQgetvalue(res, (int)k, 3), o->lost, r->n) &&
			   parse_bools(PQgetvalue(res, (int)k, 4), o->gone, r->n)) {
			tx->rcs[k] = CC_ECONFLICT;
		} else if (strcmp(outcome, "no_arena") == 0) {
			tx->rcs[k] = CC_ENOTFOUND;
		} else {
			rc = CC_EDB;
		}
	}
	PQclear(res);
	return rc;
}

int cc_formation_claim_batch(struct cc_pg *pg, const struct cc_claim_request *reqs, size_t n,
			     struct cc_claim_result *out, int *rcs)
{
	if (!reqs || !out || !rcs || n < 1 || n > CC_CLAIM_BATCH_MAX)
		return CC_EINVAL;
	struct batch_tx *tx = calloc(1, sizeof *tx);
	struct cc_claim_result *res = calloc(n, sizeof *res);
	int *codes = calloc(n, sizeof *codes);
	int rc = tx && res && codes ? 0 : CC_ENOMEM;
	if (rc == 0) {
		tx->reqs = reqs;
		tx->n = n;
		tx->out = res;
		tx->rcs = codes;
		rc = batch_tx_init(tx, reqs, n);
	}
	if (rc == 0)
		rc = cc_pg_run_serializable(pg, batch_tx_run, tx);
	if (rc == 0) {
		memcpy(out, res, n * sizeof *res);
		memcpy(rcs, codes, n * sizeof *codes);
	}
	free(codes);
	free(res);
	free(tx);
	return rc;
}
