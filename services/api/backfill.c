/*
 * backfill.c - casual backfill, the player's side (SPEC 9, issue 26):
 * GET /v1/backfill-offers/{offer_id} and
 * POST /v1/backfill-offers/{offer_id}/response {response: accept|decline}.
 * The game server's report that opens an offer is servers.c's
 * POST /v1/servers/{id}/vacated; the offers are store/backfill.h's.
 *
 * Both routes lock the offer's match, then the offer (cc_backfill_lock:
 * the vacated report's order, store/README.md), and advance expiry under
 * the offer's row lock with PostgreSQL's clock: a read or a response at or after expires_at records EXPIRED and
 * offers the vacancy to the next ticket in the same transaction. A decline
 * (no penalty) does the same. Neither passes the vacancy on past its
 * offer_until (the playlist's cut-off, as the vacated report's first
 * offer: store/backfill.h); an accept of an offer made before it stays
 * valid for the offer's whole window. The same response again answers the offer as
 * it is (200); the other response to a decided offer is 409 offer_closed.
 *
 * An accept, in one SERIALIZABLE transaction: the match must still be
 * IN_PROGRESS and the ticket still QUEUED (else the offer EXPIRED, 409);
 * the ticket QUEUED -> ASSIGNED into the match, the newcomer's
 * match_players row (joined_at), a join token signed with the active key
 * of --join-keys-file for the vacated slot at the vacancy's generation + 1
 * (so the leaver's token, at the old generation, no longer matches the
 * roster the game server reloads), the vacated assignment replaced by the
 * newcomer's and the roster manifest and digest rewritten
 * (store/rosters.h), and the offer ACCEPTED. The player then reads its
 * assignment as any participant does (GET /v1/matches/{id}/assignment).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "api.h"
#include "game/join_token.h"
#include "game/playlist.h"
#include "game/roster.h"
#include "store/backfill.h"
#include "store/matches.h"
#include "store/rosters.h"
#include "store/tickets.h"
#include "sys/crypto.h"
#include "sys/json.h"
#include "sys/log.h"
#include "sys/banned.h"

#define BACKFILL_MAX_RTT_MS 100.0 /* SPEC 6: the matcher's region rule */

void api_backfill_rules(const struct api *api, const struct cc_playlist *pl, struct cc_backfill_rules *out)
{
	memset(out, 0, sizeof *out);
	out->window_seconds = (int)api->cfg->backfill_window_seconds;
	out->max_rtt_ms = BACKFILL_MAX_RTT_MS;
	/* The matcher's own tolerance rule: none for an unranked playlist (every backfilled one). */
	out->tolerance = pl && pl->ranked;
	if (out->tolerance) {
		out->tolerance_start = pl->tolerance_start;
		out->tolerance_growth_per_s = pl->tolerance_growth_per_s;
		out->tolerance_cap = pl->tolerance_cap;
	}
}

struct offer_tx {
	struct api *api;
	const char *offer_id;
	const char *player_id;
	bool respond;
	bool accept;
	struct cc_backfill_offer offer;
	struct cc_backfill_offer next; /* the vacancy's next offer, when this one closed */
	bool next_offered;
	bool next_last_minute; /* the vacancy was past its offer_until: offered to nobody */
	struct cc_match match;
	struct cc_ticket_moves moves;
	bool seated; /* this attempt seated the player */
	struct api_answer answer;
};

/*
 * The offer closed without a seat: offer the vacancy to the next ticket,
 * unless the match is past the vacancy's offer_until (the playlist's
 * cut-off, set by the vacated report and carried over: store/backfill.h).
 */
static int offer_next(struct cc_pg *pg, struct offer_tx *tx)
{
	struct cc_match m;
	int rc = cc_match_get(pg, tx->offer.match_id, false, &m);
	if (rc != 0)
		return rc;
	const struct cc_playlist *pl = cc_playlist_find(m.playlist);
	if (strcmp(m.state, "IN_PROGRESS") != 0 || !pl || !pl->backfill)
		return 0;
	struct cc_backfill_rules rules;
	api_backfill_rules(tx->api, pl, &rules);
	enum cc_backfill_outcome outcome = CC_BACKFILL_NO_CANDIDATE;
	rc = cc_backfill_offer_next(pg, tx->offer.match_id, tx->offer.slot, tx->offer.team, tx->offer.generation,
				    tx->offer.vacated_player_id, &rules, NULL, &outcome, &tx->next);
	tx->next_offered = rc == 0 && outcome == CC_BACKFILL_OFFERED;
	tx->next_last_minute = rc == 0 && outcome == CC_BACKFILL_LAST_MINUTE;
	return rc;
}

/* Closes the offer with state (EXPIRED or DECLINED) and passes the vacancy on. */
static int close_offer(struct cc_pg *pg, struct offer_tx *tx, const char *state)
{
	int rc = cc_backfill_settle(pg, &tx->offer, state);
	if (rc == 0)
		rc = offer_next(pg, tx);
	return rc;
}

/* The newcomer's seat: token signed, roster rebuilt from the locked manifest, written. */
static int seat(struct cc_pg *pg, struct offer_tx *tx)
{
	const struct cc_backfill_offer *o = &tx->offer;
	char *manifest = NULL, *built = NULL, key_id[CC_ROSTER_KEY_ID_BUF], digest[CC_SHA256_HEX_LEN + 1];
	char token[CC_JOIN_TOKEN_BUF];
	struct cc_roster r;
	enum cc_token_refusal why;
	int rc = cc_roster_lock(pg, o->match_id, &manifest, key_id);
	if (rc != 0)
		return rc;
	if (cc_roster_manifest_parse(manifest, strlen(manifest), &r, NULL, &why, NULL) != 0) {
		free(manifest);
		return CC_EDB; /* the stored roster is the allocator's own: it always parses */
	}
	free(manifest);
	struct cc_roster_entry *e = NULL;
	for (size_t i = 0; i < r.count; i++)
		if (r.entries[i].slot == o->slot)
			e = &r.entries[i];
	if (!e || strcmp(e->player_id, o->vacated_player_id) != 0 || e->generation != o->generation)
		return CC_ESTATE; /* the slot moved on (an accept came first): fenced */
	struct cc_join_claims c;
	memset(&c, 0, sizeof c);
	snprintf(c.key_id, sizeof c.key_id, "%s", tx->api->cfg->join_key_id);
	snprintf(c.match_id, sizeof c.match_id, "%s", o->match_id);
	snprintf(c.server_id, sizeof c.server_id, "%s", r.server_id);
	c.slot = o->slot;
	c.generation = o->generation + 1;
	snprintf(c.player_id, sizeof c.player_id, "%s", o->player_id);
	c.expires_at = o->now_unix + tx->api->cfg->join_token_ttl_seconds;
	if ((rc = cc_join_token_sign(tx->api->join_keys, &c, token, sizeof token)) != 0)
		return rc;
	snprintf(r.key_id, sizeof r.key_id, "%s", tx->api->cfg->join_key_id);
	snprintf(e->player_id, sizeof e->player_id, "%s", o->player_id);
	e->generation = c.generation;
	e->expires_at = c.expires_at;
	if ((rc = cc_roster_digest(&r, digest)) != 0 || (rc = cc_roster_manifest_build(&r, &built)) != 0)
		return rc;
	struct cc_roster_seat s = { .slot = o->slot, .team = o->team, .generation = (int)c.generation,
				    .join_token = token, .expires_unix = c.expires_at };
	snprintf(s.player_id, sizeof s.player_id, "%s", o->player_id);
	rc = cc_roster_backfill_seat(pg, o->match_id, o->vacated_player_id, o->generation, &s, digest, built);
	free(built);
	sodium_memzero(token, sizeof token);
	return rc;
}

static int accept_offer(struct cc_pg *pg, struct offer_tx *tx, const char **refusal)
{
	int n = 0;
	int rc = cc_match_get(pg, tx->offer.match_id, true, &tx->match);
	if (rc != 0)
		return rc;
	if (strcmp(tx->match.state, "IN_PROGRESS") != 0) {
		*refusal = "the match is no longer in progress";
		return close_offer(pg, tx, "EXPIRED");
	}
	if ((rc = cc_ticket_backfill_assign(pg, tx->offer.ticket_id, tx->match.id, &n, &tx->moves)) != 0)
		return rc;
	if (n == 0) {
		*refusal = "the ticket is no longer queued";
		return close_offer(pg, tx, "EXPIRED");
	}
	if ((rc = cc_match_add_backfill_player(pg, &tx->match, tx->offer.player_id, tx->offer.ticket_id, tx->offer.team)) != 0)
		return rc == CC_ESTATE ? CC_ESERIALIZATION : rc;
	if ((rc = seat(pg, tx)) != 0)
		return rc == CC_ESTATE ? CC_ESERIALIZATION : rc;
	if ((rc = cc_backfill_settle(pg, &tx->offer, "ACCEPTED")) != 0)
		return rc == CC_ESTATE ? CC_ESERIALIZATION : rc;
	tx->seated = true;
	return 0;
}

static int offer_tx_run(struct cc_pg *pg, void *arg)
{
	struct offer_tx *tx = arg;
	const char *refusal = NULL;
	char *json = NULL;
	api_answer_reset(&tx->answer);
	cc_ticket_moves_reset(&tx->moves);
	tx->seated = tx->next_offered = tx->next_last_minute = false;
	int rc = cc_backfill_lock(pg, tx->offer_id, tx->player_id, &tx->offer);
	if (rc == CC_ENOTFOUND) {
		api_answer_error(&tx->answer, 404, "not_found", "no such backfill offer for this player");
		return 0;
	}
	if (rc != 0)
		return rc;
	bool open = strcmp(tx->offer.state, "OPEN") == 0;
	if (open && tx->offer.overdue) {
		if ((rc = close_offer(pg, tx, "EXPIRED")) != 0)
			return rc;
		open = false;
		if (tx->respond) {
			api_answer_error(&tx->answer, 409, "offer_expired", "the offer's window has passed");
			return 0; /* commit: the expiry sticks */
		}
	}
	if (tx->respond && !open) {
		const char *same = tx->accept ? "ACCEPTED" : "DECLINED";
		if (strcmp(tx->offer.state, same) != 0) {
			api_answer_error(&tx->answer, 409, "offer_closed", "the offer is %s", tx->offer.state);
			return 0;
		}
	} else if (tx->respond && tx->accept) {
		if ((rc = accept_offer(pg, tx, &refusal)) != 0)
			return rc;
		if (refusal) {
			api_answer_error(&tx->answer, 409, "offer_expired", "%s", refusal);
			return 0;
		}
	} else if (tx->respond) {
		if ((rc = close_offer(pg, tx, "DECLINED")) != 0)
			return rc;
	}
	if ((rc = cc_backfill_view(pg, tx->offer.id, &json)) == 0)
		rc = api_answer_body(&tx->answer, 200, json);
	free(json);
	return rc;
}

const char *const api_backfill_response_fields[] = { "response", NULL };

static int offer_route(const struct cc_http_request *req, struct cc_http_response *resp, struct api *api, bool respond)
{
	struct offer_tx tx = { .api = api, .respond = respond };
	struct cc_json_error err = { 0 };
	struct api_player player;
	cJSON *body = NULL;
	const char *response = NULL;

	if (respond && !api_rate_address(api, API_RL_RESPONSE, req, resp))
		return 0;
	tx.offer_id = cc_http_param(req, "offer_id");
	if (!tx.offer_id || !cc_uuid_valid(tx.offer_id)) {
		cc_http_error(resp, 400, "invalid_request", "offer_id must be a lowercase UUID", false);
		return 0;
	}
	struct cc_pg *pg = api_db(api, resp);
	if (!pg)
		return 0;
	if (api_authenticate(api, pg, req, resp, &player) != 0)
		goto out;
	if (respond && !api_rate_player(api, API_RL_RESPONSE, player.id, resp))
		goto out;
	if (respond) {
		if (!(body = api_body_object(req, resp, api_backfill_response_fields)))
			goto out;
		if (cc_json_get_string(body, "response", true, 1, 16, &response, &err) == 0 &&
		    strcmp(response, "accept") != 0 && strcmp(response, "decline") != 0) {
			cc_json_error_set(&err, "response", "field 'response' must be accept or decline");
			response = NULL;
		}
		if (!response) {
			api_bad_field(resp, &err);
			goto out;
		}
		tx.accept = response[0] == 'a';
	}
	tx.player_id = player.id;
	int rc = cc_pg_run_serializable(pg, offer_tx_run, &tx);
	if (rc == 0) {
		api_index_apply(api, &tx.moves);
		if (respond && tx.answer.status == 200)
			cc_log_info("backfill_response", CC_LOG_STR("offer_id", tx.offer_id), CC_LOG_STR("player_id", player.id),
				    CC_LOG_STR("response", response), CC_LOG_BOOL("seated", tx.seated),
				    CC_LOG_STR("match_id", tx.seated ? tx.match.id : NULL), CC_LOG_INT("slot", tx.offer.slot));
		if (tx.next_offered)
			cc_log_info("backfill_reoffered", CC_LOG_STR("offer_id", tx.next.id),
				    CC_LOG_STR("match_id", tx.next.match_id), CC_LOG_INT("slot", tx.next.slot));
		if (tx.next_last_minute)
			cc_log_info("backfill_not_reoffered", CC_LOG_STR("offer_id", tx.offer.id),
				    CC_LOG_STR("match_id", tx.offer.match_id), CC_LOG_INT("slot", tx.offer.slot),
				    CC_LOG_STR("reason", "last_minute"));
	}
	api_respond(resp, rc, &tx.answer);
out:
	cJSON_Delete(body);
	api_db_release(api, pg);
	return 0;
}

int api_backfill_get(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	return offer_route(req, resp, ctx, false);
}

int api_backfill_respond(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	return offer_route(req, resp, ctx, true);
}
