/*
 * wire.c - the game wire protocol's codec: one table describes every
 * message field by field, and one walker encodes and decodes any message
 * from it, so the layout contracts/gameserver-messages.json states (and
 * test_wire proves equal to this table) is the layout on the wire. See
 * wire.h.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "game/wire.h"

#include "sys/utf8.h"
#include "sys/banned.h"

/* ---- the table --------------------------------------------------------------
 * Field constructors: S = the C struct, F = its member (may name an array
 * element: score[1]), N = the field's name in the JSON table.
 */
#define SCALAR(T, S, F, N, LO, HI, MASK, EN) \
	{ N, T, offsetof(S, F), LO, HI, 0, 0, CC_WIRE_CS_NONE, NULL, MASK, EN }
#define U8(S, F, N, LO, HI) SCALAR(CC_WIRE_U8, S, F, N, LO, HI, 0, NULL)
#define U16(S, F, N, LO, HI) SCALAR(CC_WIRE_U16, S, F, N, LO, HI, 0, NULL)
#define U32(S, F, N) SCALAR(CC_WIRE_U32, S, F, N, 0, UINT32_MAX, 0, NULL)
#define I8(S, F, N, LO, HI) SCALAR(CC_WIRE_I8, S, F, N, LO, HI, 0, NULL)
#define I16(S, F, N) SCALAR(CC_WIRE_I16, S, F, N, INT16_MIN, INT16_MAX, 0, NULL)
#define ENUM8(S, F, N, EN) SCALAR(CC_WIRE_U8, S, F, N, 0, UINT8_MAX, 0, EN)
#define ENUM16(S, F, N, LO, EN) SCALAR(CC_WIRE_U16, S, F, N, LO, UINT16_MAX, 0, EN)
#define FLAGS8(S, F, N, MASK) SCALAR(CC_WIRE_U8, S, F, N, 0, UINT8_MAX, MASK, NULL)
#define FLAGS32(S, F, N, MASK) SCALAR(CC_WIRE_U32, S, F, N, 0, UINT32_MAX, MASK, NULL)
#define BYTES(S, F, N, LEN) \
	{ N, CC_WIRE_BYTES, offsetof(S, F), 0, 0, LEN, 0, CC_WIRE_CS_NONE, NULL, 0, NULL }
#define STRING(S, F, N, PREFIX, LO, HI, CS) \
	{ N, CC_WIRE_STRING, offsetof(S, F), LO, HI, PREFIX, offsetof(S, F##_len), CS, NULL, 0, NULL }
#define ARRAY(S, F, COUNT, N, LO, HI, OF) \
	{ N, CC_WIRE_ARRAY, offsetof(S, F), LO, HI, 1, offsetof(S, COUNT), CC_WIRE_CS_NONE, OF, 0, NULL }
#define BLOB(S, F, N, LO, HI) \
	{ N, CC_WIRE_BLOB, offsetof(S, F), LO, HI, 2, offsetof(S, F##_len), CC_WIRE_CS_NONE, NULL, 0, NULL }
#define STRUCT(S, F, N, OF) \
	{ N, CC_WIRE_STRUCT, offsetof(S, F), 0, 0, 0, 0, CC_WIRE_CS_NONE, OF, 0, NULL }
#define TYPE(N, S, FIELDS, CHECK) { N, FIELDS, CC_ARRAY_LEN(FIELDS), sizeof(S), CHECK }

/* Reserved bits of the packed angular velocity: bits 30-31. */
#define ANGVEL_RESERVED 0xC0000000u

static const struct cc_wire_field body_fields[] = {
	I16(struct cc_wire_body, pos[0], "pos_x"),
	I16(struct cc_wire_body, pos[1], "pos_y"),
	I16(struct cc_wire_body, pos[2], "pos_z"),
	U32(struct cc_wire_body, rot, "rot"),
	I16(struct cc_wire_body, vel[0], "vel_x"),
	I16(struct cc_wire_body, vel[1], "vel_y"),
	I16(struct cc_wire_body, vel[2], "vel_z"),
	FLAGS32(struct cc_wire_body, angvel, "angvel", ANGVEL_RESERVED),
};
static const struct cc_wire_type body_type = TYPE("body", struct cc_wire_body, body_fields, NULL);

static const struct cc_wire_field input_fields[] = {
	I8(struct cc_wire_input, thrust[0], "thrust_x", -127, 127),
	I8(struct cc_wire_input, thrust[1], "thrust_y", -127, 127),
	I8(struct cc_wire_input, thrust[2], "thrust_z", -127, 127),
	I8(struct cc_wire_input, turn[0], "pitch", -127, 127),
	I8(struct cc_wire_input, turn[1], "yaw", -127, 127),
	I8(struct cc_wire_input, turn[2], "roll", -127, 127),
	FLAGS8(struct cc_wire_input, buttons, "buttons", (uint8_t)~CC_WIRE_BTN_MASK),
};
static const struct cc_wire_type input_type = TYPE("input", struct cc_wire_input, input_fields, NULL);

static const struct cc_wire_field player_state_fields[] = {
	U8(struct cc_wire_player_state, slot, "slot", 0, CC_WIRE_MAX_PLAYERS - 1),
	U8(struct cc_wire_player_state, flags, "flags", 0, UINT8_MAX),
	U16(struct cc_wire_player_state, last_input_seq, "last_input_seq", 0, UINT16_MAX),
	U8(struct cc_wire_player_state, boost, "boost", 0, UINT8_MAX),
	STRUCT(struct cc_wire_player_state, body, "body", &body_type),
};
static const struct cc_wire_type player_state_type =
	TYPE("player_state", struct cc_wire_player_state, player_state_fields, NULL);

static const struct cc_wire_field kickoff_ship_fields[] = {
	U8(struct cc_wire_kickoff_ship, slot, "slot", 0, CC_WIRE_MAX_PLAYERS - 1),
	STRUCT(struct cc_wire_kickoff_ship, body, "body", &body_type),
};
static const struct cc_wire_type kickoff_ship_type =
	TYPE("kickoff_ship", struct cc_wire_kickoff_ship, kickoff_ship_fields, NULL);

/* ---- rules across fields ----------------------------------------------------- */

static bool name_ok(const char *s, size_t len);
static bool ascii_ok(const char *s, size_t len, char lo);

/* A credential's rules depend on auth (hello, spectate, resume). */
static const char *credential_problem(uint8_t auth, const char *s, size_t len)
{
	if (auth == CC_WIRE_AUTH_TOKEN)
		return ascii_ok(s, len, 0x21) ? NULL : "a token is printable ASCII without spaces";
	if (len > CC_WIRE_NAME_MAX)
		return "a name is at most 32 bytes";
	return name_ok(s, len) ? NULL : "a name is well-formed UTF-8 without control characters";
}

static const char *check_hello(const void *v, const char **field)
{
	const struct cc_wire_hello *h = v;
	*field = "credential";
	return credential_problem(h->auth, h->credential, h->credential_len);
}

static const char *check_resume(const void *v, const char **field)
{
	const struct cc_wire_resume *r = v;
	*field = "credential";
	return credential_problem(r->auth, r->credential, r->credential_len);
}

/* A slot or "none", and a team or "none". */
static bool slot_or_none(uint8_t s) { return s < CC_WIRE_MAX_PLAYERS || s == CC_WIRE_SLOT_NONE; }
static bool team_or_none(uint8_t t) { return t <= 1 || t == CC_WIRE_TEAM_NONE; }

static const char *check_welcome(const void *v, const char **field)
{
	const struct cc_wire_welcome *w = v;
	*field = "snapshot_rate";
	if (w->snapshot_rate > w->tick_rate)
		return "above tick_rate";
	*field = "slot";
	if (!slot_or_none(w->slot))
		return "neither a slot (0-15) nor 255";
	if (w->slot != CC_WIRE_SLOT_NONE && w->slot >= w->max_players)
		return "not below max_players";
	*field = "team";
	if (!team_or_none(w->team))
		return "neither 0, 1 nor 255";
	return NULL;
}

/* Slots in one snapshot or kickoff are unique: a client indexes by slot. */
static const char *unique_slots(const uint8_t *slots, size_t n)
{
	uint32_t seen = 0;
	for (size_t i = 0; i < n; i++) {
		if (seen & (1u << slots[i]))
			return "a slot appears twice";
		seen |= 1u << slots[i];
	}
	return NULL;
}

static const char *check_snapshot(const void *v, const char **field)
{
	const struct cc_wire_snapshot *s = v;
	uint8_t slots[CC_WIRE_MAX_PLAYERS];
	for (size_t i = 0; i < s->player_count; i++)
		slots[i] = s->players[i].slot;
	*field = "players.slot";
	return unique_slots(slots, s->player_count);
}

static const char *check_kickoff(const void *v, const char **field)
{
	const struct cc_wire_kickoff *k = v;
	uint8_t slots[CC_WIRE_MAX_PLAYERS];
	for (size_t i = 0; i < k->ship_count; i++)
		slots[i] = k->ships[i].slot;
	*field = "ships.slot";
	return unique_slots(slots, k->ship_count);
}

static const char *check_lobby_summary(const void *v, const char **field)
{
	const struct cc_wire_lobby_summary *l = v;
	*field = "members";
	return l->members <= l->max_players ? NULL : "above max_players";
}

static const char *check_lobby_updated(const void *v, const char **field)
{
	const struct cc_wire_lobby_updated *l = v;
	*field = "members";
	if (l->member_count > l->max_players)
		return "more members than max_players";
	*field = "members.member_id";
	for (size_t i = 0; i < l->member_count; i++)
		for (size_t j = 0; j < i; j++)
			if (l->members[i].member_id == l->members[j].member_id)
				return "a member appears twice";
	return NULL;
}

static const char *check_goal(const void *v, const char **field)
{
	const struct cc_wire_goal *g = v;
	*field = "scorer";
	return slot_or_none(g->scorer) ? NULL : "neither a slot (0-15) nor 255";
}

static const char *check_match_end(const void *v, const char **field)
{
	const struct cc_wire_match_end *e = v;
	*field = "winner";
	return team_or_none(e->winner) ? NULL : "neither 0, 1 nor 255";
}

/* ---- message payloads ---------------------------------------------------------- */

#define S struct cc_wire_hello
static const struct cc_wire_field hello_fields[] = {
	U16(S, protocol_version, "protocol_version", 0, UINT16_MAX),
	U16(S, tick_rate, "tick_rate", 0, UINT16_MAX),
	SCALAR(CC_WIRE_U8, S, auth, "auth", CC_WIRE_AUTH_TOKEN, CC_WIRE_AUTH_NAME, 0, "auth"),
	STRING(S, credential, "credential", 2, 1, CC_WIRE_TOKEN_MAX, CC_WIRE_CS_CREDENTIAL),
};
static const struct cc_wire_type hello_payload = TYPE("hello", S, hello_fields, check_hello);
#undef S

#define S struct cc_wire_welcome
static const struct cc_wire_field welcome_fields[] = {
	U16(S, protocol_version, "protocol_version", 0, UINT16_MAX),
	U16(S, tick_rate, "tick_rate", 1, UINT16_MAX),
	U16(S, snapshot_rate, "snapshot_rate", 1, UINT16_MAX),
	SCALAR(CC_WIRE_U8, S, mode, "mode", CC_WIRE_MODE_ALLOCATED, CC_WIRE_MODE_COMMUNITY, 0, "mode"),
	U8(S, slot, "slot", 0, UINT8_MAX),
	U8(S, team, "team", 0, UINT8_MAX),
	U8(S, max_players, "max_players", 1, CC_WIRE_MAX_PLAYERS),
	U8(S, max_inputs, "max_inputs", 1, CC_WIRE_MAX_INPUTS),
	ENUM8(S, match_state, "match_state", "match_state"),
	U32(S, server_tick, "server_tick"),
	BYTES(S, resume_key, "resume_key", CC_WIRE_RESUME_KEY_LEN),
	STRING(S, arena, "arena", 1, 1, CC_WIRE_ARENA_MAX, CC_WIRE_CS_SLUG),
};
static const struct cc_wire_type welcome_payload = TYPE("welcome", S, welcome_fields, check_welcome);
#undef S

#define S struct cc_wire_refused
static const struct cc_wire_field refused_fields[] = {
	ENUM16(S, reason, "reason", 1, "reason"),
	U16(S, protocol_version, "protocol_version", 0, UINT16_MAX),
	STRING(S, detail, "detail", 1, 0, CC_WIRE_DETAIL_MAX, CC_WIRE_CS_TEXT),
};
static const struct cc_wire_type refused_payload = TYPE("refused", S, refused_fields, NULL);
#undef S

#define S struct cc_wire_kicked
static const struct cc_wire_field kicked_fields[] = {
	ENUM16(S, reason, "reason", 1, "reason"),
	STRING(S, detail, "detail", 1, 0, CC_WIRE_DETAIL_MAX, CC_WIRE_CS_TEXT),
};
static const struct cc_wire_type kicked_payload = TYPE("kicked", S, kicked_fields, NULL);
#undef S

static const struct cc_wire_field ping_fields[] = {
	U32(struct cc_wire_ping, client_time, "client_time"),
};
static const struct cc_wire_type ping_payload = TYPE("ping", struct cc_wire_ping, ping_fields, NULL);

#define S struct cc_wire_pong
static const struct cc_wire_field pong_fields[] = {
	U32(S, client_time, "client_time"),
	U32(S, server_tick, "server_tick"),
	U16(S, tick_fraction, "tick_fraction", 0, UINT16_MAX),
};
static const struct cc_wire_type pong_payload = TYPE("pong", S, pong_fields, NULL);
#undef S

#define S struct cc_wire_player_info
static const struct cc_wire_field player_info_fields[] = {
	U8(S, slot, "slot", 0, CC_WIRE_MAX_PLAYERS - 1),
	U8(S, team, "team", 0, 1),
	U8(S, flags, "flags", 0, UINT8_MAX),
	STRING(S, name, "name", 1, 0, CC_WIRE_NAME_MAX, CC_WIRE_CS_NAME),
};
static const struct cc_wire_type player_info_payload = TYPE("player_info", S, player_info_fields, NULL);
#undef S

#define S struct cc_wire_input_msg
static const struct cc_wire_field input_msg_fields[] = {
	U16(S, newest_seq, "newest_seq", 0, UINT16_MAX),
	U32(S, last_snapshot_tick, "last_snapshot_tick"),
	ARRAY(S, inputs, count, "inputs", 1, CC_WIRE_MAX_INPUTS, &input_type),
};
static const struct cc_wire_type input_payload = TYPE("input", S, input_msg_fields, NULL);
#undef S

#define S struct cc_wire_snapshot
static const struct cc_wire_field snapshot_fields[] = {
	U32(S, tick, "tick"),
	ENUM8(S, match_state, "match_state", "match_state"),
	U8(S, score[0], "score_0", 0, UINT8_MAX),
	U8(S, score[1], "score_1", 0, UINT8_MAX),
	U32(S, clock_ticks, "clock_ticks"),
	STRUCT(S, ball, "ball", &body_type),
	ARRAY(S, players, player_count, "players", 0, CC_WIRE_MAX_PLAYERS, &player_state_type),
};
static const struct cc_wire_type snapshot_payload = TYPE("snapshot", S, snapshot_fields, check_snapshot);
#undef S

#define S struct cc_wire_snapshot_delta
static const struct cc_wire_field snapshot_delta_fields[] = {
	U32(S, tick, "tick"),
	U8(S, base_age, "base_age", 1, UINT8_MAX),
	BLOB(S, delta, "delta", 1, CC_WIRE_DELTA_MAX),
};
static const struct cc_wire_type snapshot_delta_payload = TYPE("snapshot_delta", S, snapshot_delta_fields, NULL);
#undef S

static const struct cc_wire_field snapshot_ack_fields[] = {
	U32(struct cc_wire_snapshot_ack, tick, "tick"),
};
static const struct cc_wire_type snapshot_ack_payload =
	TYPE("snapshot_ack", struct cc_wire_snapshot_ack, snapshot_ack_fields, NULL);

#define S struct cc_wire_match_state
static const struct cc_wire_field match_state_fields[] = {
	U32(S, tick, "tick"),
	ENUM8(S, state, "state", "match_state"),
	U8(S, score[0], "score_0", 0, UINT8_MAX),
	U8(S, score[1], "score_1", 0, UINT8_MAX),
	U32(S, clock_ticks, "clock_ticks"),
};
static const struct cc_wire_type match_state_payload = TYPE("match_state", S, match_state_fields, NULL);
#undef S

#define S struct cc_wire_goal
static const struct cc_wire_field goal_fields[] = {
	U32(S, tick, "tick"),
	U8(S, team, "team", 0, 1),
	U8(S, scorer, "scorer", 0, UINT8_MAX),
	U8(S, score[0], "score_0", 0, UINT8_MAX),
	U8(S, score[1], "score_1", 0, UINT8_MAX),
};
static const struct cc_wire_type goal_payload = TYPE("goal", S, goal_fields, check_goal);
#undef S

#define S struct cc_wire_kickoff
static const struct cc_wire_field kickoff_fields[] = {
	U32(S, tick, "tick"),
	STRUCT(S, ball, "ball", &body_type),
	ARRAY(S, ships, ship_count, "ships", 0, CC_WIRE_MAX_PLAYERS, &kickoff_ship_type),
};
static const struct cc_wire_type kickoff_payload = TYPE("kickoff", S, kickoff_fields, check_kickoff);
#undef S

#define S struct cc_wire_match_end
static const struct cc_wire_field match_end_fields[] = {
	U32(S, tick, "tick"),
	U8(S, score[0], "score_0", 0, UINT8_MAX),
	U8(S, score[1], "score_1", 0, UINT8_MAX),
	U8(S, winner, "winner", 0, UINT8_MAX),
	ENUM8(S, reason, "reason", "match_end_reason"),
};
static const struct cc_wire_type match_end_payload = TYPE("match_end", S, match_end_fields, check_match_end);
#undef S

static const struct cc_wire_type spectate_payload = TYPE("spectate", struct cc_wire_hello, hello_fields, check_hello);

#define S struct cc_wire_resume
static const struct cc_wire_field resume_fields[] = {
	U16(S, protocol_version, "protocol_version", 0, UINT16_MAX),
	U16(S, tick_rate, "tick_rate", 0, UINT16_MAX),
	BYTES(S, resume_key, "resume_key", CC_WIRE_RESUME_KEY_LEN),
	SCALAR(CC_WIRE_U8, S, auth, "auth", CC_WIRE_AUTH_TOKEN, CC_WIRE_AUTH_NAME, 0, "auth"),
	STRING(S, credential, "credential", 2, 1, CC_WIRE_TOKEN_MAX, CC_WIRE_CS_CREDENTIAL),
};
static const struct cc_wire_type resume_payload = TYPE("resume", S, resume_fields, check_resume);
#undef S

/* Community lobbies. */
#define S struct cc_wire_set_name
static const struct cc_wire_field set_name_fields[] = {
	U16(S, request, "request", 0, UINT16_MAX),
	STRING(S, name, "name", 1, 1, CC_WIRE_NAME_MAX, CC_WIRE_CS_NAME),
};
static const struct cc_wire_type set_name_payload = TYPE("set_name", S, set_name_fields, NULL);
#undef S

#define S struct cc_wire_lobby_list_request
static const struct cc_wire_field lobby_list_request_fields[] = {
	U16(S, request, "request", 0, UINT16_MAX),
	U16(S, first, "first", 0, UINT16_MAX),
};
static const struct cc_wire_type lobby_list_request_payload = TYPE("lobby_list_request", S, lobby_list_request_fields, NULL);
#undef S

#define S struct cc_wire_lobby_create
static const struct cc_wire_field lobby_create_fields[] = {
	U16(S, request, "request", 0, UINT16_MAX),
	U8(S, max_players, "max_players", 2, CC_WIRE_LOBBY_MEMBERS_MAX),
	STRING(S, name, "name", 1, 1, CC_WIRE_LOBBY_NAME_MAX, CC_WIRE_CS_NAME),
};
static const struct cc_wire_type lobby_create_payload = TYPE("lobby_create", S, lobby_create_fields, NULL);
#undef S

#define S struct cc_wire_lobby_join
static const struct cc_wire_field lobby_join_fields[] = {
	U16(S, request, "request", 0, UINT16_MAX),
	U32(S, lobby_id, "lobby_id"),
};
static const struct cc_wire_type lobby_join_payload = TYPE("lobby_join", S, lobby_join_fields, NULL);
#undef S

static const struct cc_wire_field lobby_leave_fields[] = {
	U16(struct cc_wire_lobby_leave, request, "request", 0, UINT16_MAX),
};
static const struct cc_wire_type lobby_leave_payload =
	TYPE("lobby_leave", struct cc_wire_lobby_leave, lobby_leave_fields, NULL);

#define S struct cc_wire_lobby_set_ready
static const struct cc_wire_field lobby_set_ready_fields[] = {
	U16(S, request, "request", 0, UINT16_MAX),
	U8(S, ready, "ready", 0, 1),
};
static const struct cc_wire_type lobby_set_ready_payload = TYPE("lobby_set_ready", S, lobby_set_ready_fields, NULL);
#undef S

#define S struct cc_wire_lobby_result_msg
static const struct cc_wire_field lobby_result_fields[] = {
	U16(S, request, "request", 0, UINT16_MAX),
	U16(S, request_msg, "request_msg", 0x0300, 0x037F),
	ENUM8(S, result, "result", "lobby_result"),
	U32(S, lobby_id, "lobby_id"),
	U32(S, member_id, "member_id"),
};
static const struct cc_wire_type lobby_result_payload = TYPE("lobby_result", S, lobby_result_fields, NULL);
#undef S

#define S struct cc_wire_lobby_summary
static const struct cc_wire_field lobby_summary_fields[] = {
	U32(S, lobby_id, "lobby_id"),
	ENUM8(S, state, "state", "lobby_state"),
	U8(S, members, "members", 0, CC_WIRE_LOBBY_MEMBERS_MAX),
	U8(S, max_players, "max_players", 2, CC_WIRE_LOBBY_MEMBERS_MAX),
	STRING(S, name, "name", 1, 1, CC_WIRE_LOBBY_NAME_MAX, CC_WIRE_CS_NAME),
};
static const struct cc_wire_type lobby_summary_type = TYPE("lobby_summary", S, lobby_summary_fields, check_lobby_summary);
#undef S

#define S struct cc_wire_lobby_list
static const struct cc_wire_field lobby_list_fields[] = {
	U16(S, request, "request", 0, UINT16_MAX),
	U16(S, total, "total", 0, UINT16_MAX),
	U16(S, first, "first", 0, UINT16_MAX),
	ARRAY(S, lobbies, count, "lobbies", 0, CC_WIRE_LOBBY_LIST_MAX, &lobby_summary_type),
};
static const struct cc_wire_type lobby_list_payload = TYPE("lobby_list", S, lobby_list_fields, NULL);
#undef S

#define S struct cc_wire_lobby_member
static const struct cc_wire_field lobby_member_fields[] = {
	U32(S, member_id, "member_id"),
	U8(S, ready, "ready", 0, 1),
	STRING(S, name, "name", 1, 1, CC_WIRE_NAME_MAX, CC_WIRE_CS_NAME),
};
static const struct cc_wire_type lobby_member_type = TYPE("lobby_member", S, lobby_member_fields, NULL);
#undef S

#define S struct cc_wire_lobby_updated
static const struct cc_wire_field lobby_updated_fields[] = {
	U32(S, revision, "revision"),
	U32(S, lobby_id, "lobby_id"),
	ENUM8(S, state, "state", "lobby_state"),
	U8(S, max_players, "max_players", 2, CC_WIRE_LOBBY_MEMBERS_MAX),
	STRING(S, name, "name", 1, 1, CC_WIRE_LOBBY_NAME_MAX, CC_WIRE_CS_NAME),
	ARRAY(S, members, member_count, "members", 0, CC_WIRE_LOBBY_MEMBERS_MAX, &lobby_member_type),
};
static const struct cc_wire_type lobby_updated_payload = TYPE("lobby_updated", S, lobby_updated_fields, check_lobby_updated);
#undef S

#define S struct cc_wire_lobby_deleted
static const struct cc_wire_field lobby_deleted_fields[] = {
	U32(S, revision, "revision"),
	U32(S, lobby_id, "lobby_id"),
};
static const struct cc_wire_type lobby_deleted_payload = TYPE("lobby_deleted", S, lobby_deleted_fields, NULL);
#undef S

#define S struct cc_wire_match_starting
static const struct cc_wire_field match_starting_fields[] = {
	U32(S, revision, "revision"),
	U32(S, lobby_id, "lobby_id"),
	U32(S, start_tick, "start_tick"),
	U16(S, delay_ms, "delay_ms", 0, UINT16_MAX),
};
static const struct cc_wire_type match_starting_payload = TYPE("match_starting", S, match_starting_fields, NULL);
#undef S

static const struct cc_wire_msg_info messages[] = {
#define CC__WIRE_MSG_INFO(NAME, ID, TEXT, CH, DIR, MEMBER) \
	{ ID, TEXT, CH, DIR, CH == CC_WIRE_CH_CONTROL, &MEMBER##_payload },
	CC_WIRE_MESSAGES(CC__WIRE_MSG_INFO)
#undef CC__WIRE_MSG_INFO
};

static const struct cc_wire_type *const struct_types[] = {
	&body_type,
	&input_type,
	&player_state_type,
	&kickoff_ship_type,
	&lobby_summary_type,
	&lobby_member_type,
};

const struct cc_wire_msg_info *cc_wire_messages(size_t *n)
{
	*n = CC_ARRAY_LEN(messages);
	return messages;
}

const struct cc_wire_msg_info *cc_wire_msg_info(uint16_t id)
{
	for (size_t i = 0; i < CC_ARRAY_LEN(messages); i++)
		if (messages[i].id == id)
			return &messages[i];
	return NULL;
}

const struct cc_wire_type *const *cc_wire_types(size_t *n)
{
	*n = CC_ARRAY_LEN(struct_types);
	return struct_types;
}


/* ---- sizes -------------------------------------------------------------------- */

void cc_wire_type_sizes(const struct cc_wire_type *type, size_t *min, size_t *max)
{
	size_t lo = 0, hi = 0;
	for (size_t i = 0; i < type->n_fields; i++) {
		const struct cc_wire_field *f = &type->fields[i];
		size_t elo, ehi;
		switch (f->type) {
		case CC_WIRE_U8:
		case CC_WIRE_I8:
			lo += 1, hi += 1;
			break;
		case CC_WIRE_U16:
		case CC_WIRE_I16:
			lo += 2, hi += 2;
			break;
		case CC_WIRE_U32:
			lo += 4, hi += 4;
			break;
		case CC_WIRE_BYTES:
			lo += f->len, hi += f->len;
			break;
		case CC_WIRE_STRING:
		case CC_WIRE_BLOB:
			lo += f->len + (size_t)f->min, hi += f->len + (size_t)f->max;
			break;
		case CC_WIRE_ARRAY:
			cc_wire_type_sizes(f->of, &elo, &ehi);
			lo += f->len + (size_t)f->min * elo, hi += f->len + (size_t)f->max * ehi;
			break;
		case CC_WIRE_STRUCT:
			cc_wire_type_sizes(f->of, &elo, &ehi);
			lo += elo, hi += ehi;
			break;
		}
	}
	*min = lo;
	*max = hi;
}

void cc_wire_msg_sizes(const struct cc_wire_msg_info *info, size_t *min, size_t *max)
{
	cc_wire_type_sizes(info->payload, min, max);
	*min += 2;
	*max += 2;
}

/* ---- strings -------------------------------------------------------------------- */

/* All len bytes are ASCII in [lo, 0x7E]. */
static bool ascii_ok(const char *s, size_t len, char lo)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] < lo || s[i] > 0x7E)
			return false;
	return true;
}

/*
 * A display name: well-formed UTF-8 with no control character (C0, DEL,
 * C1), so a name cannot break a log line or a client's text layout.
 */
static bool name_ok(const char *s, size_t len)
{
	size_t i = 0;
	while (i < len) {
		uint32_t cp;
		size_t n = cc_utf8_decode((const unsigned char *)s + i, len - i, &cp);
		if (n == 0 || cp < 0x20 || (cp >= 0x7F && cp <= 0x9F))
			return false;
		i += n;
	}
	return true;
}

/* The rule of a string field, for a value of len bytes; hello's credential is checked by check_hello. */
static const char *charset_problem(enum cc_wire_charset cs, const char *s, size_t len)
{
	switch (cs) {
	case CC_WIRE_CS_TOKEN:
		return ascii_ok(s, len, 0x21) ? NULL : "not printable ASCII without spaces";
	case CC_WIRE_CS_TEXT:
		return ascii_ok(s, len, 0x20) ? NULL : "not printable ASCII";
	case CC_WIRE_CS_NAME:
		return name_ok(s, len) ? NULL : "not well-formed UTF-8 without control characters";
	case CC_WIRE_CS_SLUG:
		for (size_t i = 0; i < len; i++)
			if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
				return "holds a byte outside a-z, 0-9 and _";
		return NULL;
	case CC_WIRE_CS_CREDENTIAL:
		return memchr(s, 0, len) ? "holds a NUL byte" : NULL;
	case CC_WIRE_CS_NONE:
		break;
	}
	return NULL;
}

/* ---- the walker ------------------------------------------------------------------ */

/* Where the walker is: the packet, the message, and the field path for faults. */
struct walk {
	const uint8_t *in; /* decode: the packet */
	uint8_t *out;	   /* encode: the buffer */
	size_t len;	   /* decode: packet length; encode: buffer capacity */
	size_t off;	   /* bytes read or written so far */
	uint16_t id;
	const char *msg;		 /* message name */
	struct cc_wire_fault *fault;	 /* may be NULL */
	const struct cc_wire_field *path[4]; /* fields entered, outermost first */
	long index[4];			 /* element index at each level, or -1 */
	int depth;
};

/* Records a fault (decode) with the field path; always returns CC_EINVAL. */
static int fault(struct walk *w, enum cc_wire_fault_kind kind, const struct cc_wire_field *f, const char *why,
		 const char *fmt, ...) CC_PRINTF(5, 6);

static int fault(struct walk *w, enum cc_wire_fault_kind kind, const struct cc_wire_field *f, const char *why,
		 const char *fmt, ...)
{
	struct cc_wire_fault *ft = w->fault;
	if (!ft)
		return CC_EINVAL;
	char path[96] = "";
	size_t used = 0;
	for (int i = 0; i < w->depth && used < sizeof(path); i++) {
		int n = w->index[i] >= 0
			? snprintf(path + used, sizeof(path) - used, "%s[%ld].", w->path[i]->name, w->index[i])
			: snprintf(path + used, sizeof(path) - used, "%s.", w->path[i]->name);
		if (n > 0)
			used += (size_t)n;
	}
	if (used < sizeof(path))
		snprintf(path + used, sizeof(path) - used, "%s", f ? f->name : "");
	char detail[64] = "";
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	ft->kind = kind;
	ft->id = w->id;
	ft->offset = w->off;
	ft->field = f ? f->name : "";
	ft->why = why;
	snprintf(ft->text, sizeof(ft->text), "%s: %s at byte %zu%s%.72s%s: %.72s%s%.48s", w->msg, cc_wire_fault_name(kind),
		 w->off, path[0] ? " (" : "", path, path[0] ? ")" : "", why, detail[0] ? ", " : "", detail);
	return CC_EINVAL;
}

static size_t scalar_size(enum cc_wire_ftype t)
{
	switch (t) {
	case CC_WIRE_U8:
	case CC_WIRE_I8:
		return 1;
	case CC_WIRE_U16:
	case CC_WIRE_I16:
		return 2;
	case CC_WIRE_U32:
		return 4;
	default:
		return 0;
	}
}

/* Reads a little-endian unsigned integer of n bytes at p. */
static uint32_t get_le(const uint8_t *p, size_t n)
{
	uint32_t v = 0;
	for (size_t i = n; i-- > 0;)
		v = (v << 8) | p[i];
	return v;
}

static void put_le(uint8_t *p, uint32_t v, size_t n)
{
	for (size_t i = 0; i < n; i++, v >>= 8)
		p[i] = (uint8_t)(v & 0xFF);
}

/* The scalar at base + f->offset, widened (signed types sign-extended). */
static int64_t load_scalar(const void *base, const struct cc_wire_field *f)
{
	const uint8_t *p = (const uint8_t *)base + f->offset;
	switch (f->type) {
	case CC_WIRE_U8: return *(const uint8_t *)p;
	case CC_WIRE_I8: return *(const int8_t *)p;
	case CC_WIRE_U16: { uint16_t v; memcpy(&v, p, 2); return v; }
	case CC_WIRE_I16: { int16_t v; memcpy(&v, p, 2); return v; }
	case CC_WIRE_U32: { uint32_t v; memcpy(&v, p, 4); return v; }
	default: return 0;
	}
}

static void store_scalar(void *base, const struct cc_wire_field *f, int64_t v)
{
	uint8_t *p = (uint8_t *)base + f->offset;
	switch (f->type) {
	case CC_WIRE_U8: *p = (uint8_t)v; break;
	case CC_WIRE_I8: { int8_t x = (int8_t)v; memcpy(p, &x, 1); break; }
	case CC_WIRE_U16: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); break; }
	case CC_WIRE_I16: { int16_t x = (int16_t)v; memcpy(p, &x, 2); break; }
	case CC_WIRE_U32: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); break; }
	default: break;
	}
}

static uint16_t load_len(const void *base, const struct cc_wire_field *f)
{
	uint16_t v;
	memcpy(&v, (const uint8_t *)base + f->len_offset, sizeof(v));
	return v;
}

static void store_len(void *base, const struct cc_wire_field *f, uint16_t v)
{
	memcpy((uint8_t *)base + f->len_offset, &v, sizeof(v));
}

/* The range and reserved-bit rules of a scalar; NULL when v obeys them. */
static const char *scalar_problem(const struct cc_wire_field *f, int64_t v)
{
	if (v < f->min)
		return "below its minimum";
	if (v > f->max)
		return "above its maximum";
	if ((uint32_t)v & f->reserved_mask)
		return "reserved bits set";
	return NULL;
}

static int decode_type(struct walk *w, const struct cc_wire_type *t, void *dst);

/* Needs n more bytes of packet, or a "truncated" fault at field f. */
static int need(struct walk *w, const struct cc_wire_field *f, size_t n)
{
	if (w->len - w->off >= n)
		return 0;
	return fault(w, CC_WIRE_FAULT_TRUNCATED, f, "the packet ends inside the field", "needs %zu bytes, %zu left", n,
		     w->len - w->off);
}

static int decode_field(struct walk *w, const struct cc_wire_field *f, void *dst)
{
	size_t n = scalar_size(f->type);
	int rc;
	if (n) {
		if ((rc = need(w, f, n)))
			return rc;
		uint32_t raw = get_le(w->in + w->off, n);
		int64_t v = raw;
		if (f->type == CC_WIRE_I8)
			v = (int8_t)raw;
		else if (f->type == CC_WIRE_I16)
			v = (int16_t)raw;
		const char *why = scalar_problem(f, v);
		if (why)
			return fault(w, CC_WIRE_FAULT_MALFORMED, f, why, "value %lld", (long long)v);
		store_scalar(dst, f, v);
		w->off += n;
		return 0;
	}
	switch (f->type) {
	case CC_WIRE_BYTES:
		if ((rc = need(w, f, f->len)))
			return rc;
		memcpy((uint8_t *)dst + f->offset, w->in + w->off, f->len);
		w->off += f->len;
		return 0;
	case CC_WIRE_STRING:
	case CC_WIRE_BLOB: {
		if ((rc = need(w, f, f->len)))
			return rc;
		uint32_t slen = get_le(w->in + w->off, f->len);
		if (slen > (uint64_t)f->max)
			return fault(w, CC_WIRE_FAULT_OVERSIZED, f, "length over its cap", "%u bytes, cap %lld", slen,
				     (long long)f->max);
		if (slen < (uint64_t)f->min)
			return fault(w, CC_WIRE_FAULT_MALFORMED, f, "shorter than its minimum", "%u bytes", slen);
		w->off += f->len;
		if ((rc = need(w, f, slen)))
			return rc;
		const char *s = (const char *)w->in + w->off;
		const char *why = charset_problem(f->charset, s, slen);
		if (why)
			return fault(w, CC_WIRE_FAULT_MALFORMED, f, why, "%u bytes", slen);
		char *to = (char *)dst + f->offset;
		memcpy(to, s, slen);
		if (f->type == CC_WIRE_STRING)
			to[slen] = '\0'; /* a blob's array is exactly its cap: no terminator */
		store_len(dst, f, (uint16_t)slen);
		w->off += slen;
		return 0;
	}
	case CC_WIRE_ARRAY: {
		if ((rc = need(w, f, f->len)))
			return rc;
		uint32_t count = get_le(w->in + w->off, f->len);
		if (count > (uint64_t)f->max)
			return fault(w, CC_WIRE_FAULT_OVERSIZED, f, "count over its cap", "%u, cap %lld", count,
				     (long long)f->max);
		if (count < (uint64_t)f->min)
			return fault(w, CC_WIRE_FAULT_MALFORMED, f, "count below its minimum", "%u", count);
		w->off += f->len;
		w->path[w->depth] = f;
		for (uint32_t i = 0; i < count; i++) {
			w->index[w->depth] = i;
			w->depth++;
			rc = decode_type(w, f->of, (uint8_t *)dst + f->offset + i * f->of->size);
			w->depth--;
			if (rc)
				return rc;
		}
		store_len(dst, f, (uint16_t)count);
		return 0;
	}
	case CC_WIRE_STRUCT:
		w->path[w->depth] = f;
		w->index[w->depth] = -1;
		w->depth++;
		rc = decode_type(w, f->of, (uint8_t *)dst + f->offset);
		w->depth--;
		return rc;
	default:
		CC_BUG("wire: a scalar type without a size");
	}
}

static int decode_type(struct walk *w, const struct cc_wire_type *t, void *dst)
{
	if (w->depth >= (int)CC_ARRAY_LEN(w->path))
		CC_BUG("wire: types nest deeper than the walker's path");
	for (size_t i = 0; i < t->n_fields; i++) {
		int rc = decode_field(w, &t->fields[i], dst);
		if (rc)
			return rc;
	}
	if (t->check) {
		const char *field = "";
		const char *why = t->check(dst, &field);
		if (why) {
			struct cc_wire_field named = { .name = field };
			return fault(w, CC_WIRE_FAULT_MALFORMED, &named, why, "%s", "");
		}
	}
	return 0;
}

/* Fills *fault for an outcome that needs no walk. */
static void set_fault(struct cc_wire_fault *ft, enum cc_wire_fault_kind kind, uint16_t id, size_t off,
		      const char *why, const char *fmt, ...) CC_PRINTF(6, 7);

static void set_fault(struct cc_wire_fault *ft, enum cc_wire_fault_kind kind, uint16_t id, size_t off,
		      const char *why, const char *fmt, ...)
{
	if (!ft)
		return;
	ft->kind = kind;
	ft->id = id;
	ft->offset = off;
	ft->field = "";
	ft->why = why;
	char detail[96] = "";
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	snprintf(ft->text, sizeof(ft->text), "%s: %s: %s, %s", id || kind != CC_WIRE_FAULT_TRUNCATED ? cc_wire_msg_name(id) : "packet",
		 cc_wire_fault_name(kind), why, detail);
}

int cc_wire_decode(const uint8_t *buf, size_t len, struct cc_wire_msg *out, struct cc_wire_fault *ft)
{
	if (len < 2) {
		set_fault(ft, CC_WIRE_FAULT_TRUNCATED, 0, 0, "no message id", "%zu bytes, an id needs 2", len);
		return CC_EINVAL;
	}
	uint16_t id = (uint16_t)get_le(buf, 2);
	const struct cc_wire_msg_info *info = cc_wire_msg_info(id);
	if (!info) {
		set_fault(ft, CC_WIRE_FAULT_UNKNOWN, id, 0, "unknown message id", "id 0x%04x (%zu bytes), skipped",
			  id, len);
		return CC_ENOTFOUND;
	}
	if (len > CC_WIRE_MAX_PACKET) {
		set_fault(ft, CC_WIRE_FAULT_OVERSIZED, id, CC_WIRE_MAX_PACKET, "longer than any message",
			  "%zu bytes, cap %d", len, CC_WIRE_MAX_PACKET);
		return CC_EINVAL;
	}
	/* Decoded into a scratch copy: *out is written only on success. */
	struct cc_wire_msg m;
	memset(&m, 0, sizeof(m));
	m.id = id;
	struct walk w = { .in = buf, .len = len, .off = 2, .id = id, .msg = info->name, .fault = ft };
	int rc = decode_type(&w, info->payload, &m.u);
	if (rc)
		return rc;
	if (w.off != len)
		return fault(&w, CC_WIRE_FAULT_OVERSIZED, NULL, "bytes after the end of the message", "%zu extra",
			     len - w.off);
	*out = m;
	if (ft) {
		memset(ft, 0, sizeof(*ft));
		ft->kind = CC_WIRE_FAULT_NONE;
		ft->id = id;
		ft->field = "";
		ft->why = "";
	}
	return 0;
}

int cc_wire_decode_from(const uint8_t *buf, size_t len, enum cc_wire_direction dir, uint8_t channel,
			struct cc_wire_msg *out, struct cc_wire_fault *ft)
{
	if (len >= 2) {
		uint16_t id = (uint16_t)get_le(buf, 2);
		const struct cc_wire_msg_info *info = cc_wire_msg_info(id);
		if (info && info->direction != dir) {
			set_fault(ft, CC_WIRE_FAULT_MALFORMED, id, 0, "sent the wrong way", "a %s message",
				  info->direction == CC_WIRE_TO_CLIENT ? "server-to-client" : "client-to-server");
			return CC_EINVAL;
		}
		if (info && info->channel != channel) {
			set_fault(ft, CC_WIRE_FAULT_MALFORMED, id, 0, "on the wrong channel",
				  "arrived on channel %u, belongs on %u", channel, (unsigned)info->channel);
			return CC_EINVAL;
		}
	}
	return cc_wire_decode(buf, len, out, ft);
}

bool cc_wire_peek_hello_version(const uint8_t *buf, size_t len, uint16_t *version)
{
	if (len < 4 || get_le(buf, 2) != CC_MSG_HELLO)
		return false;
	*version = (uint16_t)get_le(buf + 2, 2);
	return true;
}

/* ---- encoding ------------------------------------------------------------------- */

static int encode_type(struct walk *w, const struct cc_wire_type *t, const void *src);

/* Room for n more bytes, or CC_ETOOBIG. */
static int room(const struct walk *w, size_t n)
{
	return w->len - w->off >= n ? 0 : CC_ETOOBIG;
}

static int encode_field(struct walk *w, const struct cc_wire_field *f, const void *src)
{
	size_t n = scalar_size(f->type);
	int rc;
	if (n) {
		int64_t v = load_scalar(src, f);
		if (scalar_problem(f, v))
			return CC_EINVAL;
		if ((rc = room(w, n)))
			return rc;
		put_le(w->out + w->off, (uint32_t)v, n);
		w->off += n;
		return 0;
	}
	switch (f->type) {
	case CC_WIRE_BYTES:
		if ((rc = room(w, f->len)))
			return rc;
		memcpy(w->out + w->off, (const uint8_t *)src + f->offset, f->len);
		w->off += f->len;
		return 0;
	case CC_WIRE_STRING:
	case CC_WIRE_BLOB: {
		uint16_t slen = load_len(src, f);
		const char *s = (const char *)src + f->offset;
		if (slen < f->min || slen > f->max || charset_problem(f->charset, s, slen))
			return CC_EINVAL;
		if ((rc = room(w, f->len + slen)))
			return rc;
		put_le(w->out + w->off, slen, f->len);
		memcpy(w->out + w->off + f->len, s, slen);
		w->off += f->len + slen;
		return 0;
	}
	case CC_WIRE_ARRAY: {
		uint16_t count = load_len(src, f);
		if (count < f->min || count > f->max)
			return CC_EINVAL;
		if ((rc = room(w, f->len)))
			return rc;
		put_le(w->out + w->off, count, f->len);
		w->off += f->len;
		for (uint16_t i = 0; i < count; i++)
			if ((rc = encode_type(w, f->of, (const uint8_t *)src + f->offset + i * f->of->size)))
				return rc;
		return 0;
	}
	case CC_WIRE_STRUCT:
		return encode_type(w, f->of, (const uint8_t *)src + f->offset);
	default:
		CC_BUG("wire: a scalar type without a size");
	}
}

/* Fields first, then the rules across them, which may rely on the fields' ranges (a count within its cap). */
static int encode_type(struct walk *w, const struct cc_wire_type *t, const void *src)
{
	for (size_t i = 0; i < t->n_fields; i++) {
		int rc = encode_field(w, &t->fields[i], src);
		if (rc)
			return rc;
	}
	const char *field;
	if (t->check && t->check(src, &field))
		return CC_EINVAL;
	return 0;
}

int cc_wire_encode(const struct cc_wire_msg *m, uint8_t *buf, size_t cap, size_t *len)
{
	const struct cc_wire_msg_info *info = cc_wire_msg_info(m->id);
	if (!info)
		return CC_EINVAL;
	struct walk w = { .out = buf, .len = cap, .off = 0, .id = m->id, .msg = info->name };
	if (room(&w, 2))
		return CC_ETOOBIG;
	put_le(buf, m->id, 2);
	w.off = 2;
	int rc = encode_type(&w, info->payload, &m->u);
	if (rc)
		return rc;
	*len = w.off;
	return 0;
}

/* ---- text ------------------------------------------------------------------------ */

/* An snprintf-style writer: counts every byte, stores those that fit. */
struct text {
	char *buf;
	size_t cap, len;
};

static void text_put(struct text *t, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++, t->len++)
		if (t->len + 1 < t->cap)
			t->buf[t->len] = s[i];
}

static void text_printf(struct text *t, const char *fmt, ...) CC_PRINTF(2, 3);

static void text_printf(struct text *t, const char *fmt, ...)
{
	char tmp[64];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n > 0)
		text_put(t, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

/* A JSON string: bytes >= 0x80 pass through (strings are UTF-8 by their charset rules). */
static void text_json_string(struct text *t, const char *s, size_t n)
{
	text_put(t, "\"", 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\')
			text_printf(t, "\\%c", c);
		else if (c < 0x20 || c == 0x7F)
			text_printf(t, "\\u%04x", c);
		else
			text_put(t, &s[i], 1);
	}
	text_put(t, "\"", 1);
}

static void format_type(struct text *t, const struct cc_wire_type *type, const void *v);

static void format_field(struct text *t, const struct cc_wire_field *f, const void *v)
{
	text_json_string(t, f->name, strlen(f->name));
	text_put(t, ":", 1);
	const uint8_t *p = (const uint8_t *)v + f->offset;
	switch (f->type) {
	case CC_WIRE_U8:
	case CC_WIRE_U16:
	case CC_WIRE_U32:
	case CC_WIRE_I8:
	case CC_WIRE_I16:
		text_printf(t, "%lld", (long long)load_scalar(v, f));
		break;
	case CC_WIRE_BYTES:
		text_put(t, "\"", 1);
		for (size_t i = 0; i < f->len; i++)
			text_printf(t, "%02x", p[i]);
		text_put(t, "\"", 1);
		break;
	case CC_WIRE_STRING: {
		uint16_t n = load_len(v, f);
		text_json_string(t, (const char *)p, n <= f->max ? n : (size_t)f->max);
		break;
	}
	case CC_WIRE_BLOB: {
		uint16_t n = load_len(v, f);
		text_put(t, "\"", 1);
		for (size_t i = 0; i < n && i < (size_t)f->max; i++)
			text_printf(t, "%02x", p[i]);
		text_put(t, "\"", 1);
		break;
	}
	case CC_WIRE_ARRAY: {
		uint16_t n = load_len(v, f);
		if (n > f->max)
			n = (uint16_t)f->max;
		text_put(t, "[", 1);
		for (uint16_t i = 0; i < n; i++) {
			if (i)
				text_put(t, ",", 1);
			format_type(t, f->of, p + i * f->of->size);
		}
		text_put(t, "]", 1);
		break;
	}
	case CC_WIRE_STRUCT:
		format_type(t, f->of, p);
		break;
	}
}

static void format_type(struct text *t, const struct cc_wire_type *type, const void *v)
{
	text_put(t, "{", 1);
	for (size_t i = 0; i < type->n_fields; i++) {
		if (i)
			text_put(t, ",", 1);
		format_field(t, &type->fields[i], v);
	}
	text_put(t, "}", 1);
}

size_t cc_wire_format(const struct cc_wire_msg *m, char *buf, size_t cap)
{
	const struct cc_wire_msg_info *info = cc_wire_msg_info(m->id);
	if (cap > 0)
		buf[0] = '\0';
	if (!info)
		return 0;
	struct text t = { buf, cap, 0 };
	text_printf(&t, "{\"id\":%u,\"name\":\"%s\",\"fields\":", m->id, info->name);
	format_type(&t, info->payload, &m->u);
	text_put(&t, "}", 1);
	if (cap > 0)
		buf[t.len < cap ? t.len : cap - 1] = '\0';
	return t.len;
}

/* ---- quantisation ---------------------------------------------------------------- */

/* round(v / step) clamped to [lo, hi]; NaN is 0. */
static long quantise(float v, double step, long lo, long hi)
{
	if (!(v == v))
		return 0;
	double q = nearbyint((double)v / step);
	if (q < (double)lo)
		return lo;
	if (q > (double)hi)
		return hi;
	return (long)q;
}

/* A 10-bit two's complement field at bit shift. */
static uint32_t put10(long q, unsigned shift)
{
	return ((uint32_t)q & 0x3FFu) << shift;
}

static long get10(uint32_t packed, unsigned shift)
{
	long v = (long)((packed >> shift) & 0x3FFu);
	return v >= 512 ? v - 1024 : v;
}

#define SQRT2 1.41421356237309504880

uint32_t cc_wire_quat_pack(const float q[4])
{
	double c[4], norm = 0;
	for (int i = 0; i < 4; i++) {
		c[i] = (q[i] == q[i]) ? q[i] : 0.0;
		norm += c[i] * c[i];
	}
	/* A degenerate quaternion (or NaN, or inf) sends the identity. */
	if (!(norm > 1e-12) || !isfinite(norm)) {
		c[1] = c[2] = c[3] = 0;
		c[0] = 1;
		norm = 1;
	}
	norm = sqrt(norm);
	int largest = 0;
	for (int i = 0; i < 4; i++) {
		c[i] /= norm;
		if (fabs(c[i]) > fabs(c[largest]))
			largest = i;
	}
	/* q and -q are one rotation: send the one whose largest component is positive. */
	double sign = c[largest] < 0 ? -1.0 : 1.0;
	uint32_t packed = (uint32_t)largest << 30;
	unsigned shift = 20;
	for (int i = 0; i < 4; i++) {
		if (i == largest)
			continue;
		long v = (long)nearbyint(sign * c[i] * 511.0 * SQRT2);
		v = v < -511 ? -511 : v > 511 ? 511 : v;
		packed |= put10(v, shift);
		shift -= 10;
	}
	return packed;
}

void cc_wire_quat_unpack(uint32_t packed, float q[4])
{
	int largest = (int)(packed >> 30);
	double c[4], sum = 0;
	unsigned shift = 20;
	for (int i = 0; i < 4; i++) {
		if (i == largest)
			continue;
		c[i] = (double)get10(packed, shift) / (511.0 * SQRT2);
		sum += c[i] * c[i];
		shift -= 10;
	}
	c[largest] = sqrt(sum < 1.0 ? 1.0 - sum : 0.0);
	double norm = sqrt(sum + c[largest] * c[largest]);
	for (int i = 0; i < 4; i++)
		q[i] = (float)(c[i] / norm);
}

uint32_t cc_wire_angvel_pack(const float w[3])
{
	uint32_t packed = 0;
	for (unsigned i = 0; i < 3; i++)
		packed |= put10(quantise(w[i], CC_WIRE_ANGVEL_STEP, -511, 511), 10 * i);
	return packed;
}

void cc_wire_angvel_unpack(uint32_t packed, float w[3])
{
	for (unsigned i = 0; i < 3; i++)
		w[i] = (float)((double)get10(packed, 10 * i) * CC_WIRE_ANGVEL_STEP);
}

void cc_wire_quantise(const struct cc_wire_pose *pose, struct cc_wire_body *out)
{
	for (int i = 0; i < 3; i++) {
		out->pos[i] = (int16_t)quantise(pose->pos[i], CC_WIRE_POS_STEP, -INT16_MAX, INT16_MAX);
		out->vel[i] = (int16_t)quantise(pose->vel[i], CC_WIRE_VEL_STEP, -INT16_MAX, INT16_MAX);
	}
	out->rot = cc_wire_quat_pack(pose->rot);
	out->angvel = cc_wire_angvel_pack(pose->angvel);
}

void cc_wire_dequantise(const struct cc_wire_body *body, struct cc_wire_pose *out)
{
	for (int i = 0; i < 3; i++) {
		out->pos[i] = (float)(body->pos[i] * CC_WIRE_POS_STEP);
		out->vel[i] = (float)(body->vel[i] * CC_WIRE_VEL_STEP);
	}
	cc_wire_quat_unpack(body->rot, out->rot);
	cc_wire_angvel_unpack(body->angvel, out->angvel);
}

int8_t cc_wire_axis_pack(float v)
{
	return (int8_t)quantise(v, 1.0 / 127.0, -127, 127);
}

float cc_wire_axis_unpack(int8_t q)
{
	return (float)q / 127.0f;
}

void cc_wire_body_from_sim(const struct cc_sim_body *sim, struct cc_wire_body *out)
{
	struct cc_wire_pose p = {
		.pos = { sim->pos.x, sim->pos.y, sim->pos.z },
		.rot = { sim->rot.w, sim->rot.x, sim->rot.y, sim->rot.z },
		.vel = { sim->vel.x, sim->vel.y, sim->vel.z },
		.angvel = { sim->angvel.x, sim->angvel.y, sim->angvel.z },
	};
	cc_wire_quantise(&p, out);
}

void cc_wire_body_to_sim(const struct cc_wire_body *body, struct cc_sim_body *out)
{
	struct cc_wire_pose p;
	cc_wire_dequantise(body, &p);
	out->pos = (struct cc_sim_vec3){ p.pos[0], p.pos[1], p.pos[2] };
	out->rot = (struct cc_sim_quat){ p.rot[0], p.rot[1], p.rot[2], p.rot[3] };
	out->vel = (struct cc_sim_vec3){ p.vel[0], p.vel[1], p.vel[2] };
	out->angvel = (struct cc_sim_vec3){ p.angvel[0], p.angvel[1], p.angvel[2] };
}

void cc_wire_input_from_sim(const struct cc_sim_input *sim, struct cc_wire_input *out)
{
	out->thrust[0] = cc_wire_axis_pack(sim->thrust.x);
	out->thrust[1] = cc_wire_axis_pack(sim->thrust.y);
	out->thrust[2] = cc_wire_axis_pack(sim->thrust.z);
	out->turn[0] = cc_wire_axis_pack(sim->torque.x);
	out->turn[1] = cc_wire_axis_pack(sim->torque.y);
	out->turn[2] = cc_wire_axis_pack(sim->torque.z);
	out->buttons = sim->boost ? CC_WIRE_BTN_BOOST : 0;
}

void cc_wire_input_to_sim(const struct cc_wire_input *in, struct cc_sim_input *out)
{
	out->thrust = (struct cc_sim_vec3){ cc_wire_axis_unpack(in->thrust[0]), cc_wire_axis_unpack(in->thrust[1]),
					    cc_wire_axis_unpack(in->thrust[2]) };
	out->torque = (struct cc_sim_vec3){ cc_wire_axis_unpack(in->turn[0]), cc_wire_axis_unpack(in->turn[1]),
					    cc_wire_axis_unpack(in->turn[2]) };
	out->boost = (in->buttons & CC_WIRE_BTN_BOOST) != 0;
}

uint8_t cc_wire_boost_pack(float meter)
{
	return (uint8_t)quantise(meter, 1.0 / 255.0, 0, 255);
}

float cc_wire_boost_unpack(uint8_t q)
{
	return (float)q / 255.0f;
}

int cc_wire_seq_diff(uint16_t a, uint16_t b)
{
	return (int16_t)(uint16_t)(a - b);
}

bool cc_wire_seq_newer(uint16_t a, uint16_t b)
{
	return cc_wire_seq_diff(a, b) > 0;
}

/* ---- names ------------------------------------------------------------------------ */

const char *cc_wire_msg_name(uint16_t id)
{
	const struct cc_wire_msg_info *info = cc_wire_msg_info(id);
	return info ? info->name : "?";
}

#define CC__WIRE_NAME_CASE(name, value, text) \
	case value:                             \
		return text;

const char *cc_wire_reason_name(uint16_t reason)
{
	switch (reason) {
		CC_WIRE_REASONS(CC__WIRE_NAME_CASE)
	}
	return "?";
}

const char *cc_wire_lobby_result_name(uint8_t result)
{
	switch (result) {
		CC_WIRE_LOBBY_RESULTS(CC__WIRE_NAME_CASE)
	}
	return "?";
}

const char *cc_wire_lobby_state_name(uint8_t state)
{
	switch (state) {
		CC_WIRE_LOBBY_STATES(CC__WIRE_NAME_CASE)
	}
	return "?";
}

const char *cc_wire_fault_name(enum cc_wire_fault_kind kind)
{
	switch (kind) {
		CC_WIRE_FAULTS(CC__WIRE_NAME_CASE)
	case CC_WIRE_FAULT_END:
		break;
	}
	return "?";
}

uint16_t cc_wire_reason_by_name(const char *name)
{
#define CC__WIRE_BY_NAME(sym, value, text) \
	if (name && strcmp(name, text) == 0) \
		return value;
	CC_WIRE_REASONS(CC__WIRE_BY_NAME)
#undef CC__WIRE_BY_NAME
	return 0;
}

/* ---- delta snapshots (protocol section 5, "snapshot_delta") ---------------------------
 * The delta is a bit stream, least significant bit first (bit i of the
 * stream is bit i % 8 of byte i / 8), zero-padded to a whole byte. Fields
 * are unsigned n-bit integers, or groups: one value or three, signed,
 * written as a 3-bit width class w then each value as a GROUP_BITS[w]-bit
 * two's complement integer (the smallest class that holds all of them).
 * Every value is an integer computed from the base and what came before it
 * in the stream, so the rebuilt snapshot is exactly the one encoded, in any
 * language.
 */

#define DELTA_STATE 0x01   /* match_state follows (8 bits) */
#define DELTA_SCORE 0x02   /* score_0, score_1 follow (8 bits each) */
#define DELTA_PLAYERS 0x04 /* the player list follows (5-bit count, 4-bit slots); else the base's */
#define DELTA_CHANGE_BITS 3

#define BODY_VEL 0x01	    /* group of 3: vel - base vel */
#define BODY_POS 0x02	    /* group of 3: pos - predicted pos */
#define BODY_ROT_RAW 0x04   /* 32 bits: rot as is */
#define BODY_ROT_DELTA 0x08 /* group of 3: each 10-bit rot component - the base's (same largest index) */
#define BODY_ANGVEL 0x10    /* group of 3: each 10-bit angvel component - the base's */
#define BODY_MASK_BITS 5

#define PS_FLAGS 0x01	/* 8 bits: flags */
#define PS_SEQ 0x02	/* group of 1: last_input_seq - (base's + base_age), as a signed 16-bit distance */
#define PS_BOOST 0x04	/* 8 bits: boost */
#define PS_BODY_SHIFT 3 /* bits 3-7: the body's mask */
#define PS_MASK_BITS 8

static const unsigned group_bits[8] = { 2, 3, 4, 5, 6, 8, 12, 33 };

/* floor(a / b) for b > 0: integer division that rounds the same way in every language. */
static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;
	return (a % b != 0 && a < 0) ? q - 1 : q;
}

/*
 * Where a body is predicted age ticks after the base. The simulation steps
 * pos += vel * dt with the velocity after each tick's change, so with the
 * velocity changing evenly from vb to vc the ticks add n * (vb + vc) / 2 +
 * (vc - vb) / 2 velocity-ticks; one velocity-tick is 1/256 m/s * 1/60 s =
 * 1/15 of a position unit. Hence pos + floor(((vb + vc) * n + vc - vb + 15) / 30).
 */
static int64_t predict_pos(int16_t base_pos, int16_t base_vel, int16_t cur_vel, int age)
{
	return (int64_t)base_pos + floor_div(((int64_t)base_vel + cur_vel) * age + cur_vel - base_vel + 15, 30);
}

/* The three 10-bit components of a packed rot (bits 20-29, 10-19, 0-9) or angvel (0-9, 10-19, 20-29). */
static const unsigned rot_shift[3] = { 20, 10, 0 };
static const unsigned angvel_shift[3] = { 0, 10, 20 };

struct bitw {
	uint8_t *p;
	size_t cap;  /* bytes */
	uint64_t bit; /* bits written */
	bool over;
};

static void w_bits(struct bitw *w, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++, w->bit++) {
		size_t byte = (size_t)(w->bit / 8);
		if (byte >= w->cap) {
			w->over = true;
			return;
		}
		if (w->bit % 8 == 0)
			w->p[byte] = 0;
		if ((v >> i) & 1)
			w->p[byte] |= (uint8_t)(1u << (w->bit % 8));
	}
}

/* A group of n signed values in the smallest width class that holds them all. */
static void w_group(struct bitw *w, const int64_t *v, int n)
{
	unsigned cls = 0;
	for (; cls < 7; cls++) {
		int64_t lim = (int64_t)1 << (group_bits[cls] - 1);
		bool fits = true;
		for (int k = 0; k < n; k++)
			fits = fits && v[k] >= -lim && v[k] < lim;
		if (fits)
			break;
	}
	w_bits(w, cls, 3);
	for (int k = 0; k < n; k++)
		w_bits(w, (uint64_t)v[k] & ((((uint64_t)1) << group_bits[cls]) - 1), group_bits[cls]);
}

static const struct cc_wire_player_state zero_player;

static const struct cc_wire_player_state *base_player(const struct cc_wire_snapshot *base, uint8_t slot)
{
	for (uint16_t i = 0; i < base->player_count; i++)
		if (base->players[i].slot == slot)
			return &base->players[i];
	return &zero_player; /* new in this snapshot: a delta from all zero */
}

static uint8_t body_mask(const struct cc_wire_body *b, const struct cc_wire_body *c, int age)
{
	uint8_t m = 0;
	for (int k = 0; k < 3; k++) {
		if (b->vel[k] != c->vel[k])
			m |= BODY_VEL;
		if (c->pos[k] != predict_pos(b->pos[k], b->vel[k], c->vel[k], age))
			m |= BODY_POS;
		if (get10(b->angvel, angvel_shift[k]) != get10(c->angvel, angvel_shift[k]))
			m |= BODY_ANGVEL;
	}
	if (b->rot != c->rot)
		m |= (b->rot >> 30) == (c->rot >> 30) ? BODY_ROT_DELTA : BODY_ROT_RAW;
	return m;
}

static void put_body(struct bitw *w, uint8_t m, const struct cc_wire_body *b, const struct cc_wire_body *c, int age)
{
	int64_t v[3];
	if (m & BODY_VEL) {
		for (int k = 0; k < 3; k++)
			v[k] = (int64_t)c->vel[k] - b->vel[k];
		w_group(w, v, 3);
	}
	if (m & BODY_POS) {
		for (int k = 0; k < 3; k++)
			v[k] = (int64_t)c->pos[k] - predict_pos(b->pos[k], b->vel[k], c->vel[k], age);
		w_group(w, v, 3);
	}
	if (m & BODY_ROT_RAW)
		w_bits(w, c->rot, 32);
	if (m & BODY_ROT_DELTA) {
		for (int k = 0; k < 3; k++)
			v[k] = get10(c->rot, rot_shift[k]) - get10(b->rot, rot_shift[k]);
		w_group(w, v, 3);
	}
	if (m & BODY_ANGVEL) {
		for (int k = 0; k < 3; k++)
			v[k] = get10(c->angvel, angvel_shift[k]) - get10(b->angvel, angvel_shift[k]);
		w_group(w, v, 3);
	}
}

/* The rules cc_wire_decode applies to a snapshot: counts, slots, the body's reserved bits. */
static bool snapshot_valid(const struct cc_wire_snapshot *s)
{
	const char *field;
	if (s->player_count > CC_WIRE_MAX_PLAYERS || (s->ball.angvel & ANGVEL_RESERVED))
		return false;
	for (uint16_t i = 0; i < s->player_count; i++)
		if (s->players[i].slot >= CC_WIRE_MAX_PLAYERS || (s->players[i].body.angvel & ANGVEL_RESERVED))
			return false;
	return check_snapshot(s, &field) == NULL;
}

int cc_wire_delta_encode(const struct cc_wire_snapshot *base, const struct cc_wire_snapshot *cur,
			 struct cc_wire_snapshot_delta *out)
{
	uint32_t age = cur->tick - base->tick;
	if (age < 1 || age > UINT8_MAX || !snapshot_valid(base) || !snapshot_valid(cur))
		return CC_EINVAL;
	struct bitw w = { .p = out->delta, .cap = CC_WIRE_DELTA_MAX };
	bool same_list = cur->player_count == base->player_count;
	for (uint16_t i = 0; same_list && i < cur->player_count; i++)
		same_list = cur->players[i].slot == base->players[i].slot;
	uint8_t changes = (uint8_t)((cur->match_state != base->match_state ? DELTA_STATE : 0) |
				    (memcmp(cur->score, base->score, 2) ? DELTA_SCORE : 0) | (same_list ? 0 : DELTA_PLAYERS));
	w_bits(&w, changes, DELTA_CHANGE_BITS);
	if (changes & DELTA_STATE)
		w_bits(&w, cur->match_state, 8);
	if (changes & DELTA_SCORE) {
		w_bits(&w, cur->score[0], 8);
		w_bits(&w, cur->score[1], 8);
	}
	int64_t clock = (int64_t)cur->clock_ticks - base->clock_ticks;
	w_group(&w, &clock, 1);
	if (changes & DELTA_PLAYERS) {
		w_bits(&w, cur->player_count, 5);
		for (uint16_t i = 0; i < cur->player_count; i++)
			w_bits(&w, cur->players[i].slot, 4);
	}
	uint8_t m = body_mask(&base->ball, &cur->ball, (int)age);
	w_bits(&w, m, BODY_MASK_BITS);
	put_body(&w, m, &base->ball, &cur->ball, (int)age);
	for (uint16_t i = 0; i < cur->player_count; i++) {
		const struct cc_wire_player_state *c = &cur->players[i], *b = base_player(base, c->slot);
		uint16_t seq_pred = (uint16_t)(b->last_input_seq + age);
		uint8_t bm = body_mask(&b->body, &c->body, (int)age);
		uint8_t pm = (uint8_t)((c->flags != b->flags ? PS_FLAGS : 0) | (c->last_input_seq != seq_pred ? PS_SEQ : 0) |
				       (c->boost != b->boost ? PS_BOOST : 0) | (bm << PS_BODY_SHIFT));
		w_bits(&w, pm, PS_MASK_BITS);
		if (pm & PS_FLAGS)
			w_bits(&w, c->flags, 8);
		if (pm & PS_SEQ) {
			int64_t d = cc_wire_seq_diff(c->last_input_seq, seq_pred);
			w_group(&w, &d, 1);
		}
		if (pm & PS_BOOST)
			w_bits(&w, c->boost, 8);
		put_body(&w, bm, &b->body, &c->body, (int)age);
	}
	if (w.over)
		return CC_ETOOBIG;
	out->tick = cur->tick;
	out->base_age = (uint8_t)age;
	out->delta_len = (uint16_t)((w.bit + 7) / 8);
	return 0;
}

/* Reading a delta: the stream, and where in the snapshot we are (for faults). */
struct bitr {
	const uint8_t *in;
	uint64_t bits, bit; /* bits in the stream, bits read */
	struct cc_wire_fault *ft;
	const char *part;  /* "ball", "players", "" */
	int index;	   /* players[index], or -1 */
	const char *field; /* innermost field */
};

static int r_fault(struct bitr *r, enum cc_wire_fault_kind kind, const char *why, const char *fmt, ...) CC_PRINTF(4, 5);

static int r_fault(struct bitr *r, enum cc_wire_fault_kind kind, const char *why, const char *fmt, ...)
{
	struct cc_wire_fault *ft = r->ft;
	if (!ft)
		return CC_EINVAL;
	char where[64], detail[80];
	if (r->index >= 0)
		snprintf(where, sizeof where, "%s[%d].%s", r->part, r->index, r->field);
	else
		snprintf(where, sizeof where, "%s%s%s", r->part, r->part[0] ? "." : "", r->field);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof detail, fmt, ap);
	va_end(ap);
	memset(ft, 0, sizeof *ft);
	ft->kind = kind;
	ft->id = CC_MSG_SNAPSHOT_DELTA;
	ft->offset = (size_t)(r->bit / 8);
	ft->field = r->field;
	ft->why = why;
	snprintf(ft->text, sizeof ft->text, "snapshot_delta: %s at delta bit %llu (%s): %s%s%s", cc_wire_fault_name(kind),
		 (unsigned long long)r->bit, where, why, detail[0] ? ", " : "", detail);
	return CC_EINVAL;
}

static int r_bits(struct bitr *r, const char *field, unsigned n, uint64_t *v)
{
	r->field = field;
	if (r->bits - r->bit < n)
		return r_fault(r, CC_WIRE_FAULT_TRUNCATED, "the delta ends inside the field", "needs %u bits, %llu left", n,
			       (unsigned long long)(r->bits - r->bit));
	uint64_t x = 0;
	for (unsigned i = 0; i < n; i++, r->bit++)
		x |= (uint64_t)((r->in[r->bit / 8] >> (r->bit % 8)) & 1) << i;
	*v = x;
	return 0;
}

static int r_u8(struct bitr *r, const char *field, unsigned n, uint8_t *v)
{
	uint64_t x = 0;
	int rc = r_bits(r, field, n, &x);
	*v = (uint8_t)x;
	return rc;
}

/* A group of n signed values. */
static int r_group(struct bitr *r, const char *field, int n, int64_t *v)
{
	uint64_t cls = 0, x = 0;
	int rc = r_bits(r, field, 3, &cls);
	if (rc)
		return rc;
	unsigned nb = group_bits[cls];
	for (int k = 0; k < n; k++) {
		if ((rc = r_bits(r, field, nb, &x)))
			return rc;
		v[k] = (x >> (nb - 1)) & 1 ? (int64_t)x - ((int64_t)1 << nb) : (int64_t)x;
	}
	return 0;
}

/* base + delta must land in [lo, hi]. */
static int r_range(struct bitr *r, int64_t v, int64_t lo, int64_t hi, int64_t *out)
{
	if (v < lo || v > hi)
		return r_fault(r, CC_WIRE_FAULT_MALFORMED, "the value leaves its range", "%lld not in %lld..%lld",
			       (long long)v, (long long)lo, (long long)hi);
	*out = v;
	return 0;
}

static int get_body(struct bitr *r, uint8_t m, const struct cc_wire_body *b, struct cc_wire_body *c, int age)
{
	int64_t d[3] = { 0, 0, 0 }, v = 0;
	int rc;
	*c = *b;
	if ((m & BODY_ROT_RAW) && (m & BODY_ROT_DELTA)) {
		r->field = "mask";
		return r_fault(r, CC_WIRE_FAULT_MALFORMED, "rot both raw and delta", "mask 0x%02x", m);
	}
	if (m & BODY_VEL) {
		if ((rc = r_group(r, "vel", 3, d)))
			return rc;
		for (int k = 0; k < 3; k++) {
			if ((rc = r_range(r, b->vel[k] + d[k], INT16_MIN, INT16_MAX, &v)))
				return rc;
			c->vel[k] = (int16_t)v;
		}
	}
	d[0] = d[1] = d[2] = 0;
	if ((m & BODY_POS) && (rc = r_group(r, "pos", 3, d)))
		return rc;
	r->field = "pos";
	for (int k = 0; k < 3; k++) {
		if ((rc = r_range(r, predict_pos(b->pos[k], b->vel[k], c->vel[k], age) + d[k], INT16_MIN, INT16_MAX, &v)))
			return rc;
		c->pos[k] = (int16_t)v;
	}
	if (m & BODY_ROT_RAW) {
		uint64_t x = 0;
		if ((rc = r_bits(r, "rot", 32, &x)))
			return rc;
		c->rot = (uint32_t)x;
	}
	if (m & BODY_ROT_DELTA) {
		if ((rc = r_group(r, "rot", 3, d)))
			return rc;
		uint32_t rot = b->rot & 0xC0000000u;
		for (int k = 0; k < 3; k++) {
			if ((rc = r_range(r, get10(b->rot, rot_shift[k]) + d[k], -512, 511, &v)))
				return rc;
			rot |= put10((long)v, rot_shift[k]);
		}
		c->rot = rot;
	}
	if (m & BODY_ANGVEL) {
		if ((rc = r_group(r, "angvel", 3, d)))
			return rc;
		uint32_t w = 0;
		for (int k = 0; k < 3; k++) {
			if ((rc = r_range(r, get10(b->angvel, angvel_shift[k]) + d[k], -512, 511, &v)))
				return rc;
			w |= put10((long)v, angvel_shift[k]);
		}
		c->angvel = w;
	}
	return 0;
}

int cc_wire_delta_apply(const struct cc_wire_snapshot *base, const struct cc_wire_snapshot_delta *d,
			struct cc_wire_snapshot *out, struct cc_wire_fault *ft)
{
	struct bitr r = { .in = d->delta, .bits = (uint64_t)d->delta_len * 8, .ft = ft, .part = "", .index = -1,
			  .field = "base_age" };
	if (d->delta_len > CC_WIRE_DELTA_MAX) {
		r.bits = 0;
		r.field = "delta";
		return r_fault(&r, CC_WIRE_FAULT_OVERSIZED, "length over its cap", "%u bytes, cap %d", d->delta_len,
			       CC_WIRE_DELTA_MAX);
	}
	if (d->base_age == 0 || base->tick != d->tick - d->base_age)
		return r_fault(&r, CC_WIRE_FAULT_MALFORMED, "unknown base", "the delta's base is tick %u, this base is %u",
			       d->tick - d->base_age, base->tick);
	if (!snapshot_valid(base))
		return r_fault(&r, CC_WIRE_FAULT_MALFORMED, "the base is not a valid snapshot", "%s", "");
	int age = d->base_age, rc;
	int64_t v = 0;
	uint8_t changes = 0, m = 0;
	static const struct cc_wire_snapshot zero_snapshot;
	struct cc_wire_snapshot s = zero_snapshot;
	s.tick = d->tick;
	if ((rc = r_u8(&r, "changes", DELTA_CHANGE_BITS, &changes)))
		return rc;
	s.match_state = base->match_state;
	memcpy(s.score, base->score, 2);
	if ((changes & DELTA_STATE) && (rc = r_u8(&r, "match_state", 8, &s.match_state)))
		return rc;
	if ((changes & DELTA_SCORE) &&
	    ((rc = r_u8(&r, "score_0", 8, &s.score[0])) || (rc = r_u8(&r, "score_1", 8, &s.score[1]))))
		return rc;
	if ((rc = r_group(&r, "clock_ticks", 1, &v)) || (rc = r_range(&r, base->clock_ticks + v, 0, UINT32_MAX, &v)))
		return rc;
	s.clock_ticks = (uint32_t)v;
	if (changes & DELTA_PLAYERS) {
		uint8_t count = 0;
		if ((rc = r_u8(&r, "player_count", 5, &count)))
			return rc;
		if (count > CC_WIRE_MAX_PLAYERS)
			return r_fault(&r, CC_WIRE_FAULT_OVERSIZED, "count over its cap", "%u, cap %d", count, CC_WIRE_MAX_PLAYERS);
		s.player_count = count;
		r.part = "players";
		uint32_t seen = 0;
		for (int i = 0; i < count; i++) {
			r.index = i;
			if ((rc = r_u8(&r, "slot", 4, &s.players[i].slot)))
				return rc;
			if (seen & (1u << s.players[i].slot))
				return r_fault(&r, CC_WIRE_FAULT_MALFORMED, "a slot appears twice", "slot %u", s.players[i].slot);
			seen |= 1u << s.players[i].slot;
		}
	} else {
		s.player_count = base->player_count;
		for (uint16_t i = 0; i < base->player_count; i++)
			s.players[i].slot = base->players[i].slot;
	}
	r.part = "ball";
	r.index = -1;
	if ((rc = r_u8(&r, "mask", BODY_MASK_BITS, &m)) || (rc = get_body(&r, m, &base->ball, &s.ball, age)))
		return rc;
	r.part = "players";
	for (uint16_t i = 0; i < s.player_count; i++) {
		struct cc_wire_player_state *c = &s.players[i];
		const struct cc_wire_player_state *b = base_player(base, c->slot);
		r.index = i;
		uint8_t pm = 0;
		if ((rc = r_u8(&r, "mask", PS_MASK_BITS, &pm)))
			return rc;
		c->flags = b->flags;
		c->boost = b->boost;
		c->last_input_seq = (uint16_t)(b->last_input_seq + age);
		if ((pm & PS_FLAGS) && (rc = r_u8(&r, "flags", 8, &c->flags)))
			return rc;
		if (pm & PS_SEQ) {
			if ((rc = r_group(&r, "last_input_seq", 1, &v)) || (rc = r_range(&r, v, INT16_MIN, INT16_MAX, &v)))
				return rc;
			c->last_input_seq = (uint16_t)(c->last_input_seq + (uint16_t)v);
		}
		if ((pm & PS_BOOST) && (rc = r_u8(&r, "boost", 8, &c->boost)))
			return rc;
		if ((rc = get_body(&r, (uint8_t)(pm >> PS_BODY_SHIFT), &b->body, &c->body, age)))
			return rc;
	}
	r.part = "";
	r.index = -1;
	r.field = "delta";
	/* What is left is the padding of the last byte: fewer than 8 bits, all zero. */
	if (r.bits - r.bit >= 8)
		return r_fault(&r, CC_WIRE_FAULT_OVERSIZED, "bytes after the end of the delta", "%llu bits left",
			       (unsigned long long)(r.bits - r.bit));
	uint64_t pad = 0;
	if ((rc = r_bits(&r, "padding", (unsigned)(r.bits - r.bit), &pad)))
		return rc;
	if (pad)
		return r_fault(&r, CC_WIRE_FAULT_MALFORMED, "padding bits set", "%s", "");
	*out = s;
	return 0;
}
