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

/* ---- batches (migration 0022) ------------------------------------------------------------ */

static const char sql_claim_batch[] =
	"SELECT k, outcome, proposal_revision, arena, lost::text, gone::text "
	"FROM cc_claim_proposals($1::uuid[], $2, $3::uuid[], $4::smallint[], $5::text[], $6::int[], $7::text[], "
	"$8::float8, $9::int, $10, $11::int, $12::bigint[]) ORDER BY k";

/* A growing text buffer for the array literals (all on the heap: a batch is tens of KiB). */
struct abuf {
	char *p;
	size_t len, cap;
	bool failed;
};

static void ab_add(struct abuf *b, const char *s)
{
	size_t n = strlen(s);
	if (b->failed)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 1024;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->failed = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n + 1);
	b->len += n;
}

/*
 * A text[] element, double-quoted with backslash escapes, so a build or
 * region holding a comma, brace, quote or backslash stays one element.
 */
static void ab_add_quoted(struct abuf *b, const char *s)
{
	char one[3] = { 0 };
	ab_add(b, "\"");
	for (; *s; s++) {
		one[0] = *s == '"' || *s == '\\' ? '\\' : *s;
		one[1] = *s == '"' || *s == '\\' ? *s : '\0';
		ab_add(b, one);
	}
	ab_add(b, "\"");
}

enum { B_IDS, B_TICKETS, B_TEAMS, B_BUILDS, B_PROTOCOLS, B_REGIONS, B_PICKS, B_COUNT };

struct batch_tx {
	const struct cc_claim_request *reqs;
	size_t n;
	struct cc_claim_result *out;  /* n results, written per attempt */
	int *rcs;                     /* n outcomes, written per attempt */
	char (*proposal_id)[CC_UUID_BUF]; /* n ids, fixed across attempts */
	struct abuf a[B_COUNT];
	char team_size[16], window[16], max_rtt[40];
};

static int batch_tx_run(struct cc_pg *pg, void *arg)
{
	struct batch_tx *tx = arg;
	const struct cc_claim_request *r0 = &tx->reqs[0];
	PGresult *res = NULL;
	const char *p[] = { tx->a[B_IDS].p,    r0->playlist, tx->a[B_TICKETS].p, tx->a[B_TEAMS].p,
			    tx->a[B_BUILDS].p, tx->a[B_PROTOCOLS].p, tx->a[B_REGIONS].p, tx->max_rtt,
			    tx->team_size,     r0->matcher, tx->window, tx->a[B_PICKS].p };
	int rc = cc_pg_exec(pg, sql_claim_batch, 12, p, &res);
	if (rc != 0)
		return rc;
	if ((size_t)PQntuples(res) != tx->n)
		rc = CC_EDB; /* cannot happen: one row per request */
	for (size_t i = 0; rc == 0 && i < tx->n; i++) {
		const struct cc_claim_request *req = &tx->reqs[i];
		struct cc_claim_result *o = &tx->out[i];
		const char *outcome = PQgetvalue(res, (int)i, 1);
		memset(o, 0, sizeof *o);
		if (strcmp(outcome, "claimed") == 0 && !PQgetisnull(res, (int)i, 3)) {
			snprintf(o->proposal_id, sizeof o->proposal_id, "%s", tx->proposal_id[i]);
			snprintf(o->arena, sizeof o->arena, "%s", PQgetvalue(res, (int)i, 3));
			tx->rcs[i] = 0;
		} else if (strcmp(outcome, "lost") == 0 && parse_bools(PQgetvalue(res, (int)i, 4), o->lost, req->n) &&
			   parse_bools(PQgetvalue(res, (int)i, 5), o->gone, req->n)) {
			tx->rcs[i] = CC_ECONFLICT;
		} else if (strcmp(outcome, "no_arena") == 0) {
			tx->rcs[i] = CC_ENOTFOUND;
		} else {
			rc = CC_EDB; /* cannot happen: the function answers one of the above */
		}
	}
	PQclear(res);
	return rc;
}

/* Checks the batch and builds its array literals into tx (freed by batch_tx_free). */
static int batch_tx_init(struct batch_tx *tx)
{
	const struct cc_claim_request *r0 = &tx->reqs[0];
	for (int b = 0; b < B_COUNT; b++)
		ab_add(&tx->a[b], "{");
	for (size_t i = 0; i < tx->n; i++) {
		const struct cc_claim_request *req = &tx->reqs[i];
		struct claim_tx one;
		struct cc_claim_result scratch;
		/* Each request is checked as a single claim would check it. */
		int rc = claim_tx_init(&one, req, &scratch);
		if (rc != 0)
			return rc;
		if (strcmp(req->playlist, r0->playlist) != 0 || strcmp(req->matcher, r0->matcher) != 0 ||
		    req->window_seconds != r0->window_seconds || req->team_size != r0->team_size ||
		    req->max_rtt_ms != r0->max_rtt_ms)
			return CC_EINVAL;
		const char *sep = i ? "," : "";
		snprintf(tx->proposal_id[i], CC_UUID_BUF, "%s", one.proposal_id);
		ab_add(&tx->a[B_IDS], sep);
		ab_add(&tx->a[B_IDS], one.proposal_id);
		ab_add(&tx->a[B_TICKETS], sep);
		ab_add(&tx->a[B_TICKETS], one.ids + 1); /* "id,...,id}" */
		tx->a[B_TICKETS].len -= tx->a[B_TICKETS].failed ? 0 : 1; /* drop its '}' */
		ab_add(&tx->a[B_TEAMS], sep);
		ab_add(&tx->a[B_TEAMS], one.teams + 1);
		tx->a[B_TEAMS].len -= tx->a[B_TEAMS].failed ? 0 : 1;
		ab_add(&tx->a[B_BUILDS], sep);
		ab_add_quoted(&tx->a[B_BUILDS], req->build);
		ab_add(&tx->a[B_PROTOCOLS], sep);
		ab_add(&tx->a[B_PROTOCOLS], one.protocol);
		ab_add(&tx->a[B_REGIONS], sep);
		ab_add_quoted(&tx->a[B_REGIONS], req->region);
		ab_add(&tx->a[B_PICKS], sep);
		ab_add(&tx->a[B_PICKS], one.arena_pick);
	}
	for (int b = 0; b < B_COUNT; b++) {
		ab_add(&tx->a[b], "}");
		if (tx->a[b].failed)
			return CC_ENOMEM;
	}
	snprintf(tx->team_size, sizeof tx->team_size, "%d", r0->team_size);
	snprintf(tx->window, sizeof tx->window, "%d", r0->window_seconds);
	snprintf(tx->max_rtt, sizeof tx->max_rtt, "%.17g", r0->max_rtt_ms);
	return 0;
}

static void batch_tx_free(struct batch_tx *tx)
{
	for (int b = 0; b < B_COUNT; b++)
		free(tx->a[b].p);
	free(tx->proposal_id);
	free(tx->out);
	free(tx->rcs);
}

int cc_formation_claim_batch(struct cc_pg *pg, const struct cc_claim_request *reqs, size_t n,
			     struct cc_claim_result *out, int *rcs)
{
	if (!reqs || !out || !rcs || n < 1 || n > CC_CLAIM_BATCH_MAX)
		return CC_EINVAL;
	struct batch_tx tx = { .reqs = reqs, .n = n };
	tx.proposal_id = calloc(n, sizeof *tx.proposal_id);
	tx.out = calloc(n, sizeof *tx.out);
	tx.rcs = calloc(n, sizeof *tx.rcs);
	int rc = tx.proposal_id && tx.out && tx.rcs ? batch_tx_init(&tx) : CC_ENOMEM;
	if (rc == 0)
		rc = cc_pg_run_serializable(pg, batch_tx_run, &tx);
	if (rc == 0) {
		memcpy(out, tx.out, n * sizeof *out);
		memcpy(rcs, tx.rcs, n * sizeof *rcs);
	}
	batch_tx_free(&tx);
	return rc;
}
