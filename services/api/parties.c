/*
 * parties.c - the party routes (issue 26): create, read, join (by join
 * code or invitation), invite, leave, kick, promote, disband, and the
 * leader's queue request that gives every member a ticket tied to the
 * party. Each runs in one SERIALIZABLE transaction.
 *
 * Fencing, like the ticket routes: create and queue create resources and
 * take an Idempotency-Key (store/idempotency.h; the route's name is part
 * of the request hash, so a key reused across routes is a conflict); every
 * change of an existing party carries the party's revision and is refused
 * 409 revision_conflict when it is stale. The party's row is locked first
 * (store/parties.h), so concurrent changes of one party serialize on it.
 * Join needs no revision: the join code or the invitation is its fence.
 *
 * Who may do what, and the size caps, are game/party.h's rules; the queue
 * judges game/enqueue_policy.h for every member, and a refusal names the
 * member and the reason. A change that takes a member out (leave, kick,
 * disband) cancels the party's QUEUED tickets in the same transaction
 * (store/tickets.h), and so does a member's own cancel of its ticket.
 * While the party's tickets are PROPOSED, those changes are refused 409
 * party_in_proposal (checked after the party's row lock, in the change's
 * transaction: store/README.md's lock order), so a proposal never holds a
 * player who has left the party; once the party plays (MATCHED, ASSIGNED)
 * a member may leave and its tickets stay where they are.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "sys/charset.h"
#include "sys/crypto.h"
#include "sys/json.h"
#include "sys/log.h"
#include "game/party.h"
#include "store/idempotency.h"
#include "store/parties.h"
#include "sys/banned.h"

enum party_op { OP_CREATE, OP_GET, OP_JOIN, OP_INVITE, OP_LEAVE, OP_KICK, OP_PROMOTE, OP_DISBAND, OP_QUEUE };

struct party_tx {
	struct api *api;
	enum party_op op;
	const char *player_id;        /* the authenticated caller */
	const char *party_id;         /* path parameter (join: body, or found by code) */
	const char *join_code;        /* join */
	const char *target;           /* invite, kick, promote */
	const char *playlist;         /* queue */
	const char *build;            /* create, join */
	int64_t protocol_version;     /* create, join */
	int64_t revision;             /* every change of an existing party */
	const char *key;              /* create, queue: Idempotency-Key */
	char request_hash[CC_SHA256_HEX_LEN + 1];
	char found_id[CC_UUID_BUF];   /* created or found by code */
	struct api_answer answer;
	struct cc_ticket_moves moves; /* the tickets moved, for the candidate index after the commit */
};

/* Claims the key (see queue.c's claim_key): *claimed, or the stored answer / 409. */
static int claim_key(struct cc_pg *pg, struct party_tx *tx, bool *claimed)
{
	struct cc_idempotency_claim c;
	int rc = cc_idempotency_claim(pg, tx->player_id, tx->key, tx->request_hash, &c);
	*claimed = rc == 0 && c.claimed;
	if (rc == 0 && !c.claimed) {
		if (!c.same_request) {
			api_answer_error(&tx->answer, 409, "idempotency_conflict",
					 "this Idempotency-Key was used with a different request");
			rc = CC_ECONFLICT;
		} else {
			rc = api_answer_body(&tx->answer, c.status, c.response);
		}
	}
	cc_idempotency_claim_release(&c);
	return rc;
}

/* Answers the party's JSON with status; stores it under the key when the route has one. */
static int answer_party(struct cc_pg *pg, struct party_tx *tx, int status, const char *party_id, bool queued)
{
	char *json = NULL;
	int rc = queued ? cc_party_queued_json(pg, party_id, &json) : cc_party_json(pg, party_id, &json);
	if (rc == 0)
		rc = api_answer_body(&tx->answer, status, json);
	free(json);
	if (rc == 0 && tx->key)
		rc = cc_idempotency_store(pg, tx->player_id, tx->key, tx->request_hash, status, tx->answer.body);
	return rc;
}

/* The PartyExit answer of leave and disband. */
static int answer_exit(struct party_tx *tx, const char *party_id, int64_t revision, bool disbanded)
{
	char body[160];
	snprintf(body, sizeof body, "{\"id\":\"%s\",\"revision\":%lld,\"disbanded\":%s}", party_id,
		 (long long)revision, disbanded ? "true" : "false");
	return api_answer_body(&tx->answer, 200, body);
}

static int create_run(struct cc_pg *pg, struct party_tx *tx)
{
	bool claimed;
	int64_t revision;
	int rc = claim_key(pg, tx, &claimed);
	if (rc != 0 || !claimed)
		return rc;
	rc = cc_party_create(pg, tx->player_id, (int32_t)tx->protocol_version, tx->build, tx->found_id);
	if (rc == CC_ECONFLICT) {
		api_answer_error(&tx->answer, 409, "already_in_party", "the player is already in a party; leave it first");
		return rc; /* roll back the key's placeholder */
	}
	if (rc == 0)
		rc = cc_party_commit_change(pg, tx->found_id, CC_PARTY_CHANGE_CREATED, tx->player_id, NULL, 0, &revision);
	if (rc == 0)
		rc = answer_party(pg, tx, 201, tx->found_id, false);
	return rc;
}

static int join_run(struct cc_pg *pg, struct party_tx *tx)
{
	struct cc_party_view v;
	int64_t revision;
	int rc;

	if (tx->join_code) {
		rc = cc_party_find_by_code(pg, tx->join_code, tx->found_id);
		if (rc == CC_ENOTFOUND) {
			api_answer_error(&tx->answer, 404, "not_found", "no party has this join code");
			return 0;
		}
		if (rc != 0)
			return rc;
		tx->party_id = tx->found_id;
	}
	rc = cc_party_read(pg, tx->party_id, true, &v);
	if (rc == CC_ENOTFOUND) {
		api_answer_error(&tx->answer, 404, "not_found", "no such party");
		return 0;
	}
	if (rc != 0)
		return rc;
	if (cc_party_member_index(&v, tx->player_id) >= 0)
		return answer_party(pg, tx, 200, v.id, false); /* joined already: the same answer */
	if (!tx->join_code) {
		bool invited;
		if ((rc = cc_party_invited(pg, v.id, tx->player_id, &invited)) != 0)
			return rc;
		if (!invited) {
			api_answer_error(&tx->answer, 404, "not_found", "no such party for this player (no invitation)");
			return 0;
		}
	}
	if (v.queued) {
		api_answer_error(&tx->answer, 409, "party_queued", "the party is in the queue; join when it is not");
		return 0;
	}
	if (v.n_members >= CC_PARTY_MAX_MEMBERS) {
		api_answer_error(&tx->answer, 409, "party_full", "the party has %d members, the most any party may have",
				 CC_PARTY_MAX_MEMBERS);
		return 0;
	}
	rc = cc_party_add_member(pg, v.id, tx->player_id, (int32_t)tx->protocol_version, tx->build);
	if (rc == CC_ECONFLICT) {
		api_answer_error(&tx->answer, 409, "already_in_party", "the player is already in a party; leave it first");
		return 0;
	}
	if (rc == 0)
		rc = cc_party_commit_change(pg, v.id, CC_PARTY_CHANGE_JOINED, tx->player_id, NULL, 0, &revision);
	if (rc == 0)
		rc = answer_party(pg, tx, 200, v.id, false);
	return rc;
}

/* Answers a game/party.h refusal; true when there was one. */
static bool refused(struct party_tx *tx, enum cc_party_verdict verdict)
{
	switch (verdict) {
	case CC_PARTY_OK:
		return false;
	case CC_PARTY_NOT_MEMBER:
		api_answer_error(&tx->answer, 404, "not_found", "no such party for this player");
		return true;
	case CC_PARTY_NOT_LEADER:
		api_answer_error(&tx->answer, 403, "not_leader", "only the party's leader may do this");
		return true;
	case CC_PARTY_TARGET_SELF:
		api_answer_error(&tx->answer, 422, "invalid_target", "the leader cannot name himself here");
		return true;
	case CC_PARTY_TARGET_NOT_MEMBER:
		api_answer_error(&tx->answer, 422, "invalid_target", "player %s is not in the party", tx->target);
		return true;
	}
	CC_BUG("refused: unknown verdict");
}

/* Refuses a member's queueing (game/enqueue_policy.h's verdict), naming the member; returns the rc that rolls back. */
static int refuse_member(struct party_tx *tx, const char *member, const struct cc_enqueue_decision *d,
			 const struct cc_enqueue_reading *r)
{
	switch (d->verdict) {
	case CC_ENQUEUE_OK:
		break;
	case CC_ENQUEUE_CLIENT_OUTDATED:
		api_answer_error(&tx->answer, 426, "member_client_outdated",
				 "member %s: protocol version %lld is below the minimum %lld; that member must update the game",
				 member, (long long)r->facts.protocol_version, (long long)r->facts.min_protocol_version);
		return CC_EINVAL;
	case CC_ENQUEUE_BANNED:
		api_answer_error(&tx->answer, 403, "member_banned", "member %s is banned until %s", member,
				 r->banned_until);
		return CC_EFORBIDDEN;
	case CC_ENQUEUE_COOLDOWN:
		api_answer_error(&tx->answer, 429, "member_cooldown", "member %s: queueing is blocked by a penalty cooldown",
				 member);
		tx->answer.retry_after = (unsigned)d->retry_after_seconds;
		return CC_ECONFLICT;
	case CC_ENQUEUE_NO_REGION_PROBED:
		api_answer_error(&tx->answer, 422, "member_no_region_probed",
				 "member %s has probed no region; probe at least one before queueing", member);
		return CC_EINVAL;
	}
	CC_BUG("refuse_member: unknown verdict");
}

/*
 * The leader queues the party: size cap, one build, then every member's
 * enqueue verdict and ticket in member order. Any refusal rolls the whole
 * transaction back, so either every member has a ticket tied to the party
 * or nobody got one. The tickets share one deadline (one now()).
 */
static int queue_members(struct cc_pg *pg, struct party_tx *tx, const struct cc_party_view *v)
{
	const struct api_config *cfg = tx->api->cfg;
	const struct cc_playlist *pl = cc_playlist_find(tx->playlist);
	int rc = 0;

	if (!cc_party_size_fits(pl, v->n_members)) {
		api_answer_error(&tx->answer, 422, "party_too_large",
				 "playlist %s takes parties of at most %d; this party has %zu members", tx->playlist,
				 cc_party_cap(pl), v->n_members);
		return CC_EINVAL;
	}
	for (size_t i = 1; i < v->n_members; i++) {
		if (strcmp(v->members[i].build, v->members[0].build) != 0) {
			api_answer_error(&tx->answer, 422, "build_mismatch", "member %s runs build %s, the party's is %s",
					 v->members[i].player_id, v->members[i].build, v->members[0].build);
			return CC_EINVAL;
		}
	}
	for (size_t i = 0; i < v->n_members && rc == 0; i++) {
		const struct cc_party_member *m = &v->members[i];
		struct cc_enqueue_reading r = { 0 };
		struct cc_ticket ticket;
		rc = cc_ticket_enqueue_facts(pg, m->player_id, tx->playlist, tx->api->regions_pg_array,
					     cfg->probe_freshness_seconds, &r);
		if (rc == 0) {
			r.facts.protocol_version = m->protocol_version;
			r.facts.min_protocol_version = cfg->min_protocol_version;
			struct cc_enqueue_decision d = cc_enqueue_decide(&r.facts);
			if (d.verdict != CC_ENQUEUE_OK)
				rc = refuse_member(tx, m->player_id, &d, &r);
		}
		if (rc == 0) {
			struct cc_ticket_new n = {
				.player_id = m->player_id,
				.playlist = tx->playlist,
				.build = m->build,
				.protocol_version = m->protocol_version,
				.rating = r.rating,
				.deviation = r.deviation,
				.predicted_rtt = r.predicted_rtt,
				.ttl_seconds = cfg->ticket_ttl_seconds,
				.party_id = v->id,
				.party_size = (int)v->n_members,
			};
			rc = cc_ticket_enqueue(pg, &n, &ticket, NULL, &tx->moves);
			if (rc == CC_ECONFLICT)
				api_answer_error(&tx->answer, 409, "member_active_ticket",
						 "member %s already has active ticket %s (%s)", m->player_id, ticket.id,
						 cc_ticket_state_name(ticket.state));
		}
		cc_enqueue_reading_release(&r);
	}
	return rc;
}

/* Every change of an existing party: lock, decide, fence, change, announce, answer. */
static int change_run(struct cc_pg *pg, struct party_tx *tx)
{
	static const enum cc_party_action action_of[] = {
		[OP_INVITE] = CC_PARTY_INVITE, [OP_LEAVE] = CC_PARTY_LEAVE,     [OP_KICK] = CC_PARTY_KICK,
		[OP_PROMOTE] = CC_PARTY_PROMOTE, [OP_DISBAND] = CC_PARTY_DISBAND, [OP_QUEUE] = CC_PARTY_QUEUE,
	};
	struct cc_party_view v;
	int64_t revision;
	bool claimed = true;
	int rc;

	if (tx->op == OP_QUEUE && ((rc = claim_key(pg, tx, &claimed)) != 0 || !claimed))
		return rc;
	rc = cc_party_read(pg, tx->party_id, true, &v);
	if (rc == CC_ENOTFOUND) {
		api_answer_error(&tx->answer, 404, "not_found", "no such party");
		return tx->op == OP_QUEUE ? CC_ENOTFOUND : 0;
	}
	if (rc != 0)
		return rc;
	int me = cc_party_member_index(&v, tx->player_id);
	int target = tx->target ? cc_party_member_index(&v, tx->target) : -1;
	struct cc_party_actor actor = {
		.member = me >= 0,
		.leader = strcmp(v.leader, tx->player_id) == 0,
		.target_member = target >= 0,
		.target_self = tx->target && strcmp(tx->target, tx->player_id) == 0,
	};
	if (refused(tx, cc_party_may(action_of[tx->op], &actor)))
		return tx->op == OP_QUEUE ? CC_EFORBIDDEN : 0;
	if (v.revision != tx->revision) {
		api_answer_error(&tx->answer, 409, "revision_conflict", "the party is at revision %lld; re-read it and retry",
				 (long long)v.revision);
		return tx->op == OP_QUEUE ? CC_ECONFLICT : 0;
	}

	if (tx->op == OP_LEAVE || tx->op == OP_KICK || tx->op == OP_DISBAND) {
		char proposal[CC_UUID_BUF];
		if ((rc = cc_tickets_party_proposal(pg, v.id, proposal)) != 0)
			return rc;
		if (proposal[0]) {
			api_answer_error(&tx->answer, 409, "party_in_proposal",
					 "the party's tickets are in proposal %s; accept or decline it, or wait until it "
					 "resolves, then retry",
					 proposal);
			return 0;
		}
	}

	switch (tx->op) {
	case OP_INVITE:
		rc = cc_party_invite(pg, v.id, tx->target);
		if (rc == CC_ENOTFOUND) {
			api_answer_error(&tx->answer, 404, "not_found", "no such player to invite");
			return 0;
		}
		if (rc == 0)
			rc = cc_party_commit_change(pg, v.id, CC_PARTY_CHANGE_INVITED, tx->target, NULL, 0, &revision);
		break;
	case OP_KICK:
		if ((rc = cc_tickets_cancel_party(pg, v.id, "party_member_kicked", NULL, &tx->moves)) == 0 &&
		    (rc = cc_party_remove_member(pg, v.id, tx->target)) == 0)
			rc = cc_party_commit_change(pg, v.id, CC_PARTY_CHANGE_KICKED, tx->target, NULL, 0, &revision);
		break;
	case OP_PROMOTE:
		if ((rc = cc_party_set_leader(pg, v.id, tx->target)) == 0)
			rc = cc_party_commit_change(pg, v.id, CC_PARTY_CHANGE_PROMOTED, tx->target, NULL, 0, &revision);
		break;
	case OP_LEAVE:
	case OP_DISBAND: {
		bool last = v.n_members == 1;
		const char *reason = tx->op == OP_LEAVE ? "party_member_left" : "party_disbanded";
		if ((rc = cc_tickets_cancel_party(pg, v.id, reason, NULL, &tx->moves)) != 0)
			return rc;
		if (tx->op == OP_DISBAND || last) {
			char notify[CC_PARTY_MAX_MEMBERS][CC_UUID_BUF];
			for (size_t i = 0; i < v.n_members; i++)
				memcpy(notify[i], v.members[i].player_id, CC_UUID_BUF);
			revision = v.revision;
			if ((rc = cc_party_delete(pg, v.id)) == 0)
				rc = cc_party_commit_change(pg, v.id, CC_PARTY_CHANGE_DISBANDED, NULL,
							    (const char (*)[CC_UUID_BUF])notify, v.n_members, &revision);
			return rc == 0 ? answer_exit(tx, v.id, revision, true) : rc;
		}
		if ((rc = cc_party_remove_member(pg, v.id, tx->player_id)) != 0)
			return rc;
		if (actor.leader) /* the lead passes to the longest-standing member left */
			rc = cc_party_set_leader(pg, v.id, v.members[me == 0 ? 1 : 0].player_id);
		if (rc == 0)
			rc = cc_party_commit_change(pg, v.id, CC_PARTY_CHANGE_LEFT, tx->player_id, NULL, 0, &revision);
		return rc == 0 ? answer_exit(tx, v.id, revision, false) : rc;
	}
	case OP_QUEUE:
		if ((rc = queue_members(pg, tx, &v)) != 0)
			return rc;
		if ((rc = cc_party_set_playlist(pg, v.id, tx->playlist)) == 0)
			rc = cc_party_commit_change(pg, v.id, CC_PARTY_CHANGE_QUEUED, NULL, NULL, 0, &revision);
		return rc == 0 ? answer_party(pg, tx, 201, v.id, true) : rc;
	default:
		CC_BUG("change_run: not a change");
	}
	return rc == 0 ? answer_party(pg, tx, 200, v.id, false) : rc;
}

static int get_run(struct cc_pg *pg, struct party_tx *tx)
{
	struct cc_party_view v;
	int rc = cc_party_read(pg, tx->party_id, false, &v);
	if (rc == 0 && cc_party_member_index(&v, tx->player_id) < 0)
		rc = CC_ENOTFOUND; /* a party is visible to its members only */
	if (rc == CC_ENOTFOUND) {
		api_answer_error(&tx->answer, 404, "not_found", "no such party for this player");
		return 0;
	}
	return rc == 0 ? answer_party(pg, tx, 200, v.id, false) : rc;
}

static int party_tx_run(struct cc_pg *pg, void *arg)
{
	struct party_tx *tx = arg;
	api_answer_reset(&tx->answer);
	cc_ticket_moves_reset(&tx->moves);
	switch (tx->op) {
	case OP_CREATE:
		return create_run(pg, tx);
	case OP_GET:
		return get_run(pg, tx);
	case OP_JOIN:
		return join_run(pg, tx);
	default:
		return change_run(pg, tx);
	}
}

/* ---- bodies ------------------------------------------------------------------ */

const char *const api_party_client_fields[] = { "protocol_version", "build", NULL };
const char *const api_party_join_fields[] = { "join_code", "party_id", "protocol_version", "build", NULL };
const char *const api_party_target_fields[] = { "player_id", "revision", NULL };
const char *const api_party_queue_fields[] = { "playlist", "revision", NULL };

static int read_client(const cJSON *body, int64_t *protocol_version, const char **build, struct cc_json_error *err)
{
	int rc;
	if ((rc = cc_json_get_int(body, "protocol_version", true, 1, INT32_MAX, protocol_version, err)) != 0 ||
	    (rc = cc_json_get_string(body, "build", true, 1, 64, build, err)) != 0)
		return rc;
	if (!cc_charset_valid(*build, 64, CC_CHARSET_ALNUM, "._-")) {
		cc_json_error_set(err, "build", "field 'build' must be 1-64 characters [A-Za-z0-9._-]");
		return CC_EINVAL;
	}
	return 0;
}

static int read_uuid(const cJSON *body, const char *field, bool required, const char **out,
		     struct cc_json_error *err)
{
	int rc = cc_json_get_string(body, field, required, 1, 64, out, err);
	if (rc == CC_ENOTFOUND)
		return 0; /* an optional field left out */
	if (rc == 0 && !cc_uuid_valid(*out)) {
		cc_json_error_set(err, field, "field must be a lowercase UUID");
		return CC_EINVAL;
	}
	return rc;
}

/* Reads the route's body into tx; 0 or CC_EINVAL with err. */
static int read_body(const cJSON *body, struct party_tx *tx, struct cc_json_error *err)
{
	int rc = 0;
	switch (tx->op) {
	case OP_CREATE:
		return read_client(body, &tx->protocol_version, &tx->build, err);
	case OP_JOIN:
		tx->party_id = NULL;
		if ((rc = cc_json_get_string(body, "join_code", false, 1, 16, &tx->join_code, err)) == CC_ENOTFOUND)
			rc = 0;
		if (rc != 0 ||
		    (rc = read_uuid(body, "party_id", false, &tx->party_id, err)) != 0 ||
		    (rc = read_client(body, &tx->protocol_version, &tx->build, err)) != 0)
			return rc;
		if (!tx->join_code == !tx->party_id) {
			cc_json_error_set(err, "join_code", "give exactly one of join_code and party_id");
			return CC_EINVAL;
		}
		if (tx->join_code && !cc_party_join_code_valid(tx->join_code)) {
			cc_json_error_set(err, "join_code", "field 'join_code' must be 8 characters of " CC_PARTY_JOIN_CODE_ALPHABET);
			return CC_EINVAL;
		}
		return 0;
	case OP_INVITE:
	case OP_KICK:
	case OP_PROMOTE:
		if ((rc = read_uuid(body, "player_id", true, &tx->target, err)) != 0)
			return rc;
		return api_revision_read(body, &tx->revision, err);
	case OP_QUEUE:
		if ((rc = cc_json_get_string(body, "playlist", true, 1, CC_PLAYLIST_NAME_MAX, &tx->playlist, err)) != 0)
			return rc;
		return api_revision_read(body, &tx->revision, err);
	default: /* leave, disband */
		return api_revision_read(body, &tx->revision, err);
	}
}

static const char *const *fields_of(enum party_op op)
{
	switch (op) {
	case OP_CREATE:
		return api_party_client_fields;
	case OP_JOIN:
		return api_party_join_fields;
	case OP_INVITE:
	case OP_KICK:
	case OP_PROMOTE:
		return api_party_target_fields;
	case OP_QUEUE:
		return api_party_queue_fields;
	default:
		return api_revision_fields;
	}
}

static const char *const op_names[] = {
	[OP_CREATE] = "create", [OP_GET] = "get",   [OP_JOIN] = "join",     [OP_INVITE] = "invite", [OP_LEAVE] = "leave",
	[OP_KICK] = "kick",     [OP_PROMOTE] = "promote", [OP_DISBAND] = "disband", [OP_QUEUE] = "queue",
};

static int party_route(const struct cc_http_request *req, struct cc_http_response *resp, struct api *api,
		       enum party_op op)
{
	struct party_tx tx = { .api = api, .op = op };
	struct cc_json_error err = { 0 };
	struct api_player player;
	cJSON *body = NULL;
	bool has_path = op != OP_CREATE && op != OP_JOIN;

	if (has_path) {
		tx.party_id = cc_http_param(req, "party_id");
		if (!tx.party_id || !cc_uuid_valid(tx.party_id)) {
			cc_http_error(resp, 400, "invalid_request", "party_id must be a lowercase UUID", false);
			return 0;
		}
	}
	struct cc_pg *pg = api_db(api, resp);
	if (!pg)
		return 0;
	if (api_authenticate(api, pg, req, resp, &player) != 0)
		goto out;
	if (op == OP_CREATE || op == OP_QUEUE) {
		tx.key = cc_http_header(req, "Idempotency-Key");
		if (!api_idempotency_key_valid(tx.key)) {
			cc_http_error(resp, 400, "invalid_request",
				      "an Idempotency-Key header of 1-128 characters [A-Za-z0-9_-] is required", false);
			goto out;
		}
	}
	if (op != OP_GET) {
		if (!(body = api_body_object(req, resp, fields_of(op))))
			goto out;
		if (read_body(body, &tx, &err) != 0) {
			api_bad_field(resp, &err);
			goto out;
		}
	}
	if (op == OP_QUEUE && !cc_playlist_find(tx.playlist)) {
		char names[128], msg[160];
		(void)cc_playlist_names(names, sizeof names, ", ");
		snprintf(msg, sizeof msg, "playlist must be one of: %s", names);
		cc_http_error(resp, 422, "unknown_playlist", msg, false);
		goto out;
	}
	if (tx.key) { /* the request's identity for replays: the route and its canonical fields */
		char canonical[256];
		int n = op == OP_CREATE
				? snprintf(canonical, sizeof canonical, "party.create\n%lld\n%s", (long long)tx.protocol_version,
					   tx.build)
				: snprintf(canonical, sizeof canonical, "party.queue\n%s\n%s\n%lld", tx.party_id, tx.playlist,
					   (long long)tx.revision);
		cc_sha256_hex(canonical, (size_t)n, tx.request_hash);
	}
	tx.player_id = player.id;
	int rc = cc_pg_run_serializable(pg, party_tx_run, &tx);
	if (rc == 0 && op == OP_QUEUE)
		api_answer_estimate_tickets(pg, &tx.answer); /* after the commit, as the ticket routes do (wait.c) */
	if (rc == 0 && tx.answer.status < 300 && op != OP_GET)
		cc_log_info("party_change", CC_LOG_STR("op", op_names[op]), CC_LOG_STR("player_id", player.id),
			    CC_LOG_STR("party_id", tx.party_id ? tx.party_id : tx.found_id));
	api_respond(resp, rc, &tx.answer);
	if (rc == 0)
		api_index_apply(api, &tx.moves);
out:
	cJSON_Delete(body);
	api_db_release(api, pg);
	return 0;
}

int api_party_create(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	return party_route(req, resp, ctx, OP_CREATE);
}
int api_party_get(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	return party_route(req, resp, ctx, OP_GET);
}
int api_party_join(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	return party_route(req, resp, ctx, OP_JOIN);
}
int api_party_invite(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	return party_route(req, resp, ctx, OP_INVITE);
}
int api_party_leave(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	return party_route(req, resp, ctx, OP_LEAVE);
}
int api_party_kick(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	return party_route(req, resp, ctx, OP_KICK);
}
int api_party_promote(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	return party_route(req, resp, ctx, OP_PROMOTE);
}
int api_party_disband(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	return party_route(req, resp, ctx, OP_DISBAND);
}
int api_party_queue(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	return party_route(req, resp, ctx, OP_QUEUE);
}
