/*
 * roster.c - canonical roster bytes, digest, manifest build/parse, admission.
 *
 * Canonical bytes (contracts/join-token.md, big-endian):
 *   "CCRM" | u8 version=1 | 16 match id | 16 allocation id |
 *   u8 len, server id | u8 len, key id | u8 count |
 *   count x (u8 slot | u8 team | 16 player id | u32 generation | i64 expires_at)
 * with the entries in ascending slot order.
 */
#include "game/roster.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys/banned.h"

static const uint8_t roster_tag[4] = {'C', 'C', 'R', 'M'};

static void set_why(enum cc_token_refusal *why, enum cc_token_refusal v)
{
	if (why)
		*why = v;
}

CC_PRINTF(3, 4) static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return CC_EINVAL;
}

int cc_roster_validate(const struct cc_roster *r, char *err, size_t errlen)
{
	bool slot_used[CC_ROSTER_MAX_ENTRIES] = {false};

	if (!r)
		return fail(err, errlen, "no roster");
	if (!cc_uuid_valid(r->match_id))
		return fail(err, errlen, "match_id must be a lowercase UUID");
	if (!cc_uuid_valid(r->allocation_id))
		return fail(err, errlen, "allocation_id must be a lowercase UUID");
	if (!cc_server_id_valid(r->server_id))
		return fail(err, errlen, "server_id must be 1 to %d bytes of [A-Za-z0-9._-]",
			    CC_SERVER_ID_MAX);
	if (!cc_key_id_valid(r->key_id))
		return fail(err, errlen, "key_id must be 0 to %d bytes of [A-Za-z0-9._-]",
			    CC_KEYSET_ID_MAX);
	if (r->count < 1 || r->count > CC_ROSTER_MAX_ENTRIES)
		return fail(err, errlen, "players must hold 1 to %d entries", CC_ROSTER_MAX_ENTRIES);
	for (size_t i = 0; i < r->count; i++) {
		const struct cc_roster_entry *e = &r->entries[i];

		if (e->slot < 0 || e->slot > CC_JOIN_SLOT_MAX)
			return fail(err, errlen, "players[%zu].slot must be 0 to %d", i,
				    CC_JOIN_SLOT_MAX);
		if (slot_used[e->slot])
			return fail(err, errlen, "players[%zu].slot %d is taken twice", i, e->slot);
		slot_used[e->slot] = true;
		if (e->team != 0 && e->team != 1)
			return fail(err, errlen, "players[%zu].team must be 0 or 1", i);
		if (!cc_uuid_valid(e->player_id))
			return fail(err, errlen, "players[%zu].player_id must be a lowercase UUID", i);
		for (size_t j = 0; j < i; j++)
			if (strcmp(r->entries[j].player_id, e->player_id) == 0)
				return fail(err, errlen, "players[%zu].player_id repeats players[%zu]",
					    i, j);
		if (e->generation < 1 || e->generation > INT32_MAX)
			return fail(err, errlen, "players[%zu].generation must be 1 to %d", i,
				    INT32_MAX);
		if (e->expires_at < 1 || e->expires_at > CC_ROSTER_EXPIRY_MAX)
			return fail(err, errlen, "players[%zu].expires_at must be 1 to %" PRId64, i,
				    CC_ROSTER_EXPIRY_MAX);
	}
	return 0;
}

/* Fills order[] with entry indexes by ascending slot (slots are unique). */
static void slot_order(const struct cc_roster *r, size_t order[CC_ROSTER_MAX_ENTRIES])
{
	size_t n = 0;

	for (int slot = 0; slot <= CC_JOIN_SLOT_MAX; slot++)
		for (size_t i = 0; i < r->count; i++)
			if (r->entries[i].slot == slot)
				order[n++] = i;
}

int cc_roster_encode(const struct cc_roster *r, uint8_t *out, size_t cap, size_t *len)
{
	struct cc_token_writer w;
	size_t order[CC_ROSTER_MAX_ENTRIES];

	if (cc_roster_validate(r, NULL, 0) != 0 || !out || !len)
		return CC_EINVAL;
	slot_order(r, order);
	cc_token_writer_init(&w, out, cap);
	cc_token_put_bytes(&w, roster_tag, sizeof(roster_tag));
	cc_token_put_u8(&w, CC_ROSTER_VERSION);
	cc_token_put_uuid(&w, r->match_id);
	cc_token_put_uuid(&w, r->allocation_id);
	cc_token_put_str(&w, r->server_id);
	cc_token_put_str(&w, r->key_id);
	cc_token_put_u8(&w, (uint8_t)r->count);
	for (size_t k = 0; k < r->count; k++) {
		const struct cc_roster_entry *e = &r->entries[order[k]];

		cc_token_put_u8(&w, (uint8_t)e->slot);
		cc_token_put_u8(&w, (uint8_t)e->team);
		cc_token_put_uuid(&w, e->player_id);
		cc_token_put_u32(&w, (uint32_t)e->generation);
		cc_token_put_i64(&w, e->expires_at);
	}
	if (!w.ok)
		return CC_ETOOBIG;
	*len = w.len;
	return 0;
}

int cc_roster_digest(const struct cc_roster *r, char out[CC_SHA256_HEX_LEN + 1])
{
	uint8_t bytes[CC_ROSTER_BYTES_MAX];
	size_t len = 0;
	int rc;

	if (!out)
		return CC_EINVAL;
	rc = cc_roster_encode(r, bytes, sizeof(bytes), &len);
	if (rc)
		return rc;
	cc_sha256_hex(bytes, len, out);
	return 0;
}

int cc_roster_manifest_build(const struct cc_roster *r, char **out)
{
	char digest[CC_SHA256_HEX_LEN + 1];
	size_t order[CC_ROSTER_MAX_ENTRIES];
	cJSON *root = NULL, *players;
	char *text;
	int rc = cc_roster_digest(r, digest);

	if (rc)
		return rc;
	if (!out)
		return CC_EINVAL;
	slot_order(r, order);
	rc = CC_ENOMEM;
	root = cJSON_CreateObject();
	if (!root || !cJSON_AddNumberToObject(root, "version", CC_ROSTER_VERSION) ||
	    !cJSON_AddStringToObject(root, "match_id", r->match_id) ||
	    !cJSON_AddStringToObject(root, "allocation_id", r->allocation_id) ||
	    !cJSON_AddStringToObject(root, "server_id", r->server_id) ||
	    !cJSON_AddStringToObject(root, "key_id", r->key_id) ||
	    !cJSON_AddStringToObject(root, "digest", digest))
		goto out_free_root;
	players = cJSON_AddArrayToObject(root, "players");
	if (!players)
		goto out_free_root;
	for (size_t k = 0; k < r->count; k++) {
		const struct cc_roster_entry *e = &r->entries[order[k]];
		cJSON *p = cJSON_CreateObject();

		if (!p)
			goto out_free_root;
		cJSON_AddItemToArray(players, p); /* players owns p from here */
		/* Every number is an integer below 2^53, so a double holds it exactly. */
		if (!cJSON_AddNumberToObject(p, "slot", e->slot) ||
		    !cJSON_AddNumberToObject(p, "team", e->team) ||
		    !cJSON_AddStringToObject(p, "player_id", e->player_id) ||
		    !cJSON_AddNumberToObject(p, "generation", (double)e->generation) ||
		    !cJSON_AddNumberToObject(p, "expires_at", (double)e->expires_at))
			goto out_free_root;
	}
	text = cc_json_print(root);
	if (!text)
		goto out_free_root;
	*out = text;
	rc = 0;
out_free_root:
	cJSON_Delete(root);
	return rc;
}

static const char *const manifest_fields[] = {"version", "match_id", "allocation_id", "server_id",
					      "key_id",  "digest",   "players",       NULL};
static const char *const entry_fields[] = {"slot", "team", "player_id", "generation", "expires_at",
					   NULL};

/* Copies string member field of obj (min..max bytes) into out (cap bytes). */
static int copy_string(const cJSON *obj, const char *field, size_t min, size_t max, char *out,
		       size_t cap, struct cc_json_error *err)
{
	const char *s = NULL;
	int rc = cc_json_get_string(obj, field, true, min, max, &s, err);

	if (rc)
		return rc;
	if (strlen(s) >= cap)
		return CC_EINVAL; /* max < cap by every caller; kept as a guard */
	memcpy(out, s, strlen(s) + 1);
	return 0;
}

/* Reads one players[] element into e. */
static int parse_entry(const cJSON *p, size_t i, struct cc_roster_entry *e,
		       struct cc_json_error *err)
{
	int64_t v = 0;
	char field[32];
	int rc;

	snprintf(field, sizeof(field), "players[%zu]", i);
	if (!cJSON_IsObject(p)) {
		cc_json_error_set(err, field, "%s must be an object", field);
		return CC_EINVAL;
	}
	rc = cc_json_only_fields(p, entry_fields, err);
	if (rc)
		return rc;
	if ((rc = cc_json_get_int(p, "slot", true, 0, CC_JOIN_SLOT_MAX, &v, err)) != 0)
		return rc;
	e->slot = (int)v;
	if ((rc = cc_json_get_int(p, "team", true, 0, 1, &v, err)) != 0)
		return rc;
	e->team = (int)v;
	if ((rc = copy_string(p, "player_id", CC_UUID_STRLEN, CC_UUID_STRLEN, e->player_id,
			      sizeof(e->player_id), err)) != 0)
		return rc;
	if ((rc = cc_json_get_int(p, "generation", true, 1, INT32_MAX, &e->generation, err)) != 0)
		return rc;
	return cc_json_get_int(p, "expires_at", true, 1, CC_ROSTER_EXPIRY_MAX, &e->expires_at, err);
}

int cc_roster_manifest_parse(const char *text, size_t len, struct cc_roster *out, char *digest,
			     enum cc_token_refusal *why, struct cc_json_error *err)
{
	struct cc_json_error scratch;
	cJSON *root = NULL;
	const cJSON *players = NULL, *p;
	const char *claimed = NULL;
	char computed[CC_SHA256_HEX_LEN + 1], msg[160];
	struct cc_roster r;
	int64_t version = 0;
	size_t i = 0;
	int rc;

	if (!err)
		err = &scratch;
	memset(&r, 0, sizeof(r));
	set_why(why, CC_TOKEN_MALFORMED);
	if (!out) {
		cc_json_error_set(err, NULL, "no roster to fill");
		return CC_EINVAL;
	}
	/* Depth 3: the manifest object, its players array, each entry object. */
	rc = cc_json_parse_object(text, len, CC_ROSTER_MANIFEST_MAX, 3, &root, err);
	if (rc)
		return rc;
	rc = cc_json_get_int(root, "version", true, 0, INT32_MAX, &version, err);
	if (rc)
		goto out_free_root;
	if (version != CC_ROSTER_VERSION) {
		cc_json_error_set(err, "version", "manifest version %" PRId64 " is not %d", version,
				  CC_ROSTER_VERSION);
		set_why(why, CC_TOKEN_BAD_VERSION);
		rc = CC_EINVAL;
		goto out_free_root;
	}
	if ((rc = cc_json_only_fields(root, manifest_fields, err)) != 0 ||
	    (rc = copy_string(root, "match_id", CC_UUID_STRLEN, CC_UUID_STRLEN, r.match_id,
			      sizeof(r.match_id), err)) != 0 ||
	    (rc = copy_string(root, "allocation_id", CC_UUID_STRLEN, CC_UUID_STRLEN,
			      r.allocation_id, sizeof(r.allocation_id), err)) != 0 ||
	    (rc = copy_string(root, "server_id", 1, CC_SERVER_ID_MAX, r.server_id,
			      sizeof(r.server_id), err)) != 0 ||
	    (rc = copy_string(root, "key_id", 0, CC_KEYSET_ID_MAX, r.key_id, sizeof(r.key_id),
			      err)) != 0 ||
	    (rc = cc_json_get_string(root, "digest", true, CC_SHA256_HEX_LEN, CC_SHA256_HEX_LEN,
				     &claimed, err)) != 0 ||
	    (rc = cc_json_get_array(root, "players", true, CC_ROSTER_MAX_ENTRIES, &players, err)) !=
		    0)
		goto out_free_root;
	cJSON_ArrayForEach(p, players) {
		rc = parse_entry(p, i, &r.entries[i], err);
		if (rc)
			goto out_free_root;
		i++;
	}
	r.count = i;
	rc = cc_roster_validate(&r, msg, sizeof(msg));
	if (rc) {
		cc_json_error_set(err, NULL, "%s", msg);
		goto out_free_root;
	}
	rc = cc_roster_digest(&r, computed);
	if (rc)
		goto out_free_root;
	/* Not secret, but one compare for every byte costs nothing. */
	if (!cc_secret_equal(computed, CC_SHA256_HEX_LEN, claimed, CC_SHA256_HEX_LEN)) {
		cc_json_error_set(err, "digest",
				  "digest does not match the roster (changed or truncated)");
		set_why(why, CC_TOKEN_DIGEST_MISMATCH);
		rc = CC_EINVAL;
		goto out_free_root;
	}
	*out = r;
	if (digest)
		memcpy(digest, computed, sizeof(computed));
	set_why(why, CC_TOKEN_OK);
out_free_root:
	cJSON_Delete(root);
	return rc;
}

const struct cc_roster_entry *cc_roster_find_player(const struct cc_roster *r,
						    const char *player_id)
{
	if (!r || !player_id)
		return NULL;
	for (size_t i = 0; i < r->count && i < CC_ROSTER_MAX_ENTRIES; i++)
		if (strcmp(r->entries[i].player_id, player_id) == 0)
			return &r->entries[i];
	return NULL;
}

int cc_roster_admit(const struct cc_roster *r, const struct cc_join_claims *c,
		    enum cc_token_refusal *why)
{
	const struct cc_roster_entry *e;
	int rc;

	if (!r || !c) {
		set_why(why, CC_TOKEN_MALFORMED);
		return CC_EINVAL;
	}
	/* Match and server first: a token for another match says nothing about this roster. */
	rc = cc_join_claims_check(c, r->match_id, r->server_id, c->slot, why);
	if (rc)
		return rc;
	e = cc_roster_find_player(r, c->player_id);
	if (!e) {
		set_why(why, CC_TOKEN_NOT_IN_ROSTER);
		return CC_EFORBIDDEN;
	}
	rc = cc_join_claims_check(c, r->match_id, r->server_id, e->slot, why);
	if (rc)
		return rc;
	if (c->generation != e->generation) {
		set_why(why, CC_TOKEN_WRONG_GENERATION);
		return CC_EFORBIDDEN;
	}
	set_why(why, CC_TOKEN_OK);
	return 0;
}
