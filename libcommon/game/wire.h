/*
 * wire.h - the game wire protocol's codec (SPEC 11, issue 11): every
 * message cc-gameserver and its clients exchange over ENet, as C structs,
 * and the one encoder and decoder that turn them into bytes and back.
 * contracts/gameserver-protocol.md is the prose; contracts/
 * gameserver-messages.json the machine-readable table, which
 * tests/unit/test_wire.c proves equal to the table this codec runs on.
 *
 * Framing: one ENet packet holds exactly one message, `[u16 id][payload]`,
 * every integer little-endian. Strings and arrays carry their own length or
 * count prefix, capped; nothing in a message is optional. A packet is
 * accepted only when it is exactly one well-formed message: a short packet
 * is "truncated", bytes past the end or a count over its cap "oversized",
 * a value out of its range "malformed". An id this codec does not know is
 * "unknown": the caller skips it (SPEC 11), it never ends the session.
 *
 * The codec is pure: no I/O, no allocation, no global state; every function
 * is thread-safe. A struct cc_wire_msg is plain data that the caller owns
 * (a few KB; put it on the stack or in the peer). Decoded strings are
 * NUL-terminated copies inside the struct, never pointers into the packet.
 *
 * Bodies travel quantised (struct cc_wire_body, integers); the codec moves
 * them byte for byte, so decode(encode(m)) == m exactly. Turning a
 * simulation's floats into those integers and back is cc_wire_quantise()/
 * cc_wire_dequantise(), with the error bounds documented at CC_WIRE_POS_STEP
 * and below.
 */
#ifndef CC_WIRE_H
#define CC_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sys/cc.h"
#include "game/match_lifecycle.h"
#include "game/sim.h"

/*
 * Version 1. Bumped for any change a version-1 peer would misread. Frozen
 * forever, whatever the version: hello is id 1 and its first field is the
 * u16 protocol_version (bytes 2-3 of the packet), and refused is id 3 with
 * the u16 reason then the u16 server version first, so any server can
 * refuse any client with protocol_mismatch and be understood.
 */
#define CC_WIRE_PROTOCOL_VERSION 1
#define CC_WIRE_TICK_RATE 60		/* simulation ticks per second */
#define CC_WIRE_MAX_PACKET 1200	/* no message is longer (fits one UDP datagram on any path) */
#define CC_WIRE_MAX_PLAYERS 16	/* slots in a match: bodies in a snapshot besides the ball */
#define CC_WIRE_MAX_INPUTS 16	/* inputs one input packet may carry (redundancy) */
#define CC_WIRE_NAME_MAX 32		/* player display name, bytes of UTF-8 */
#define CC_WIRE_TOKEN_MAX 512	/* join authorisation, bytes of printable ASCII */
#define CC_WIRE_DETAIL_MAX 128	/* refusal/kick detail, printable ASCII */
#define CC_WIRE_ARENA_MAX 32		/* arena name, [a-z0-9_] */
#define CC_WIRE_RESUME_KEY_LEN 16	/* bytes of the key a reconnect presents (issue 12) */
#define CC_WIRE_SLOT_NONE 0xFF	/* "no slot": spectator, unknown scorer */
#define CC_WIRE_TEAM_NONE 0xFF	/* "no team": spectator, no winner */

/* ENet channels (SPEC 11). A server creates its host with CC_WIRE_CHANNELS. */
enum cc_wire_channel {
	CC_WIRE_CH_CONTROL = 0,	/* reliable: handshake, events, player info */
	CC_WIRE_CH_INPUT = 1,	/* unreliable sequenced, client -> server: input, ping */
	CC_WIRE_CH_SNAPSHOT = 2, /* unreliable sequenced, server -> client: snapshots, pong */
	CC_WIRE_CHANNELS = 3
};

/* Who may send a message. A peer receiving one meant for the other side treats it as malformed. */
enum cc_wire_direction {
	CC_WIRE_TO_SERVER = 1, /* client -> server */
	CC_WIRE_TO_CLIENT = 2  /* server -> client */
};

/*
 * Match lifecycle states travel as a u8 (snapshot, match_state, welcome):
 * the values of enum cc_match_state in game/match_lifecycle.h, which owns
 * them (LOADING 0, WARMUP 1, PLAYING 2, GOAL_PAUSE 3, FULL_TIME 4,
 * OVERTIME 5, RESULTS 6, LOBBY 7; only ever appended; test_wire proves the
 * JSON table lists the same). match_end.reason is its enum
 * cc_match_end_reason. A client shows a value it does not know
 * as "unknown" rather than refusing the message: the lists grow.
 */
#define CC__WIRE_ENUM(name, value, text) name = value,

/*
 * Why a peer was refused (handshake) or kicked (later): the u16 in refused
 * and kicked, and the data of the ENet disconnect that follows them. Wire
 * format: only ever appended. 0 is never sent.
 */
#define CC_WIRE_REASONS(X)                                         \
	X(CC_REASON_PROTOCOL_MISMATCH, 1, "protocol_mismatch")        \
	X(CC_REASON_TICK_RATE_MISMATCH, 2, "tick_rate_mismatch")      \
	X(CC_REASON_BAD_TOKEN, 3, "bad_token")                        \
	X(CC_REASON_EXPIRED_TOKEN, 4, "expired_token")                \
	X(CC_REASON_WRONG_MATCH, 5, "wrong_match")                    \
	X(CC_REASON_NOT_IN_ROSTER, 6, "not_in_roster")                \
	X(CC_REASON_TOKEN_REPLAYED, 7, "token_replayed")              \
	X(CC_REASON_MALFORMED, 8, "malformed")                        \
	X(CC_REASON_RATE_LIMITED, 9, "rate_limited")                  \
	X(CC_REASON_SERVER_FULL, 10, "server_full")                   \
	X(CC_REASON_HANDSHAKE_TIMEOUT, 11, "handshake_timeout")       \
	X(CC_REASON_INVALID_NAME, 12, "invalid_name")                 \
	X(CC_REASON_WRONG_MODE, 13, "wrong_mode")                     \
	X(CC_REASON_MATCH_OVER, 14, "match_over")                     \
	X(CC_REASON_SHUTTING_DOWN, 15, "shutting_down")               \
	X(CC_REASON_IDLE_TIMEOUT, 16, "idle_timeout")                 \
	X(CC_REASON_BACKLOG_OVERFLOW, 17, "backlog_overflow")         \
	X(CC_REASON_SPECTATORS_FULL, 18, "spectators_full")           \
	X(CC_REASON_RESUME_REFUSED, 19, "resume_refused")             \
	X(CC_REASON_DUPLICATE_SESSION, 20, "duplicate_session")       \
	X(CC_REASON_INPUT_STALLED, 21, "input_stalled")

enum cc_wire_reason {
	CC_WIRE_REASONS(CC__WIRE_ENUM)
	CC_REASON_END
};

/*
 * Typed results of community-mode lobby requests (SPEC 11; lobby_result,
 * 0x0380). Wire format, append-only.
 */
#define CC_WIRE_LOBBY_RESULTS(X)                              \
	X(CC_LOBBY_OK, 0, "ok")                                   \
	X(CC_LOBBY_NOT_REGISTERED, 1, "not_registered")           \
	X(CC_LOBBY_ALREADY_IN_LOBBY, 2, "already_in_lobby")       \
	X(CC_LOBBY_FULL, 3, "lobby_full")                         \
	X(CC_LOBBY_UNKNOWN, 4, "unknown_lobby")                   \
	X(CC_LOBBY_ALREADY_STARTED, 5, "already_started")         \
	X(CC_LOBBY_TOO_MANY, 6, "too_many_lobbies")               \
	X(CC_LOBBY_INVALID_PARAMETERS, 7, "invalid_parameters")

enum cc_wire_lobby_result {
	CC_WIRE_LOBBY_RESULTS(CC__WIRE_ENUM)
	CC_LOBBY_RESULT_END
};

/* hello.auth: what hello.credential holds. */
enum cc_wire_auth {
	CC_WIRE_AUTH_TOKEN = 1, /* a join authorisation (allocated mode), printable ASCII */
	CC_WIRE_AUTH_NAME = 2   /* a display name (community mode), UTF-8 */
};

/* welcome.mode */
enum cc_wire_mode {
	CC_WIRE_MODE_ALLOCATED = 1, /* one match for a roster from the control plane */
	CC_WIRE_MODE_COMMUNITY = 2  /* long-running lobby server, no control plane */
};

/* Bits of cc_wire_player_state.flags; the others are reserved and must be 0. */
#define CC_WIRE_PF_INPUT_STALLED 0x01 /* the server ran out of this player's input (issue 12) */
#define CC_WIRE_PF_BOT 0x02	      /* a bot drives this slot; never rated */
#define CC_WIRE_PF_CONNECTED 0x04     /* a peer holds the slot (0: reserved for a reconnect, or empty) */
#define CC_WIRE_PF_BOOSTING 0x08      /* boost applied this tick */
#define CC_WIRE_PF_HAS_INPUT 0x10     /* last_input_seq is meaningful (some input consumed) */
#define CC_WIRE_PF_MASK 0x1F

/* Bits of cc_wire_player_info.flags; the others are reserved and must be 0. */
#define CC_WIRE_PI_CONNECTED 0x01
#define CC_WIRE_PI_BOT 0x02
#define CC_WIRE_PI_MASK 0x03

/* Bits of cc_wire_input.buttons; the others are reserved and must be 0. */
#define CC_WIRE_BTN_BOOST 0x01
#define CC_WIRE_BTN_MASK 0x01

/*
 * Quantisation (exact in binary floating point: every step is a power of
 * two, so any language dequantises to the same float):
 *   position      i16 per axis, metres = q * 1/1024; range +-31.999 m;
 *                 error <= 1/2048 m (0.49 mm) inside the range
 *   velocity      i16 per axis, m/s = q * 1/256; range +-127.99 m/s;
 *                 error <= 1/512 m/s
 *   angular vel.  10-bit two's complement per axis, packed in a u32 (x in
 *                 bits 0-9, y 10-19, z 20-29, bits 30-31 zero), rad/s =
 *                 q * 1/16, q in [-511, 511]; range +-31.94 rad/s;
 *                 error <= 1/32 rad/s
 *   orientation   unit quaternion, "smallest three" in a u32: bits 30-31
 *                 the index (0 w, 1 x, 2 y, 3 z) of the component with the
 *                 largest magnitude, made non-negative by negating the whole
 *                 quaternion; the other three in index order, in bits 20-29,
 *                 10-19 and 0-9, each a 10-bit two's complement q =
 *                 round(c * 511 * sqrt(2)) in [-511, 511]; the largest is
 *                 sqrt(max(0, 1 - a^2 - b^2 - c^2)), then the four are
 *                 normalised. Rotation error <= CC_WIRE_ROT_ERROR_BOUND rad.
 * Values outside a range are clamped to it on quantising; NaN becomes 0
 * (and a degenerate quaternion the identity).
 */
#define CC_WIRE_POS_STEP (1.0 / 1024.0)
#define CC_WIRE_VEL_STEP (1.0 / 256.0)
#define CC_WIRE_ANGVEL_STEP (1.0 / 16.0)
#define CC_WIRE_ROT_ERROR_BOUND 0.005 /* radians of rotation angle between the quaternion and its quantised copy */

/*
 * A body in floats, as the simulation holds it (game/sim.h struct
 * cc_sim_body, component for component): metres, m/s, rad/s, world axes.
 */
struct cc_wire_pose {
	float pos[3];	 /* x, y, z */
	float rot[4];	 /* unit quaternion w, x, y, z */
	float vel[3];	 /* linear velocity */
	float angvel[3]; /* angular velocity (world frame), rad/s */
};

/*
 * A body on the wire (20 bytes): the quantised integers described above.
 * On the wire: pos, rot, vel, angvel; here the u32s come first so the
 * struct has no padding and two bodies compare with memcmp.
 */
struct cc_wire_body {
	uint32_t rot;	 /* smallest-three quaternion */
	uint32_t angvel; /* three packed 10-bit values, rad/s * 16 */
	int16_t pos[3];	 /* metres * 1024 */
	int16_t vel[3];	 /* m/s * 256 */
};

/* Quantises pose into *out (see above): clamps, never fails. */
void cc_wire_quantise(const struct cc_wire_pose *pose, struct cc_wire_body *out);

/* Dequantises body into *out; the quaternion comes out unit length. */
void cc_wire_dequantise(const struct cc_wire_body *body, struct cc_wire_pose *out);

/* Packs a quaternion (w, x, y, z; any length, normalised first) as smallest three. */
uint32_t cc_wire_quat_pack(const float q[4]);

/* Unpacks smallest three into a unit quaternion (w, x, y, z); the largest component comes out >= 0. */
void cc_wire_quat_unpack(uint32_t packed, float q[4]);

struct cc_wire_input;

/*
 * The simulation's own structs (game/sim.h) to and from the wire: what
 * cc-gameserver puts in snapshots and kickoffs, what a client applies, and
 * the inputs both sides exchange. Same rules as cc_wire_quantise (clamped,
 * NaN 0); buttons other than boost are 0.
 */
void cc_wire_body_from_sim(const struct cc_sim_body *sim, struct cc_wire_body *out);
void cc_wire_body_to_sim(const struct cc_wire_body *body, struct cc_sim_body *out);
void cc_wire_input_from_sim(const struct cc_sim_input *sim, struct cc_wire_input *out);
void cc_wire_input_to_sim(const struct cc_wire_input *in, struct cc_sim_input *out);

/* A boost meter in [0, 1] (clamped, NaN 0) as the snapshot's u8, and back. */
uint8_t cc_wire_boost_pack(float meter);
float cc_wire_boost_unpack(uint8_t q);

/* An input axis: [-1, 1] (clamped; NaN 0) to i8 [-127, 127] and back (q / 127). */
int8_t cc_wire_axis_pack(float v);
float cc_wire_axis_unpack(int8_t q);

/* Packs three rad/s values (clamped) and unpacks them. */
uint32_t cc_wire_angvel_pack(const float w[3]);
void cc_wire_angvel_unpack(uint32_t packed, float w[3]);

/*
 * Input sequence numbers are u16 and wrap: compare them only with these
 * (serial-number arithmetic, RFC 1982). cc_wire_seq_diff(a, b) is a - b as
 * a signed distance in [-32768, 32767]; newer means diff > 0.
 */
int cc_wire_seq_diff(uint16_t a, uint16_t b);
bool cc_wire_seq_newer(uint16_t a, uint16_t b);

/* ---- messages ------------------------------------------------------------ */

/*
 * X-macro of every message this codec knows: NAME, id, name (wire table
 * and logs), channel, direction, struct member of cc_wire_msg.u. Ids are
 * wire format: never reused. Ranges (see the protocol document):
 *   0x0001-0x00FF session and control     0x0100-0x01FF match
 *   0x0200-0x02FF spectate, reconnect (issue 12; more may follow there)
 *   0x0300-0x03FF community lobbies (0x0300-0x037F requests, 0x0380-0x03FF answers and broadcasts)
 *   0x8000-0xFFFF never assigned (experiments); 0x0000 never assigned.
 */
#define CC_WIRE_MESSAGES(X)                                                                        \
	X(CC_MSG_HELLO, 0x0001, "hello", CC_WIRE_CH_CONTROL, CC_WIRE_TO_SERVER, hello)             \
	X(CC_MSG_WELCOME, 0x0002, "welcome", CC_WIRE_CH_CONTROL, CC_WIRE_TO_CLIENT, welcome)       \
	X(CC_MSG_REFUSED, 0x0003, "refused", CC_WIRE_CH_CONTROL, CC_WIRE_TO_CLIENT, refused)       \
	X(CC_MSG_KICKED, 0x0004, "kicked", CC_WIRE_CH_CONTROL, CC_WIRE_TO_CLIENT, kicked)          \
	X(CC_MSG_PING, 0x0005, "ping", CC_WIRE_CH_INPUT, CC_WIRE_TO_SERVER, ping)                  \
	X(CC_MSG_PONG, 0x0006, "pong", CC_WIRE_CH_SNAPSHOT, CC_WIRE_TO_CLIENT, pong)               \
	X(CC_MSG_PLAYER_INFO, 0x0007, "player_info", CC_WIRE_CH_CONTROL, CC_WIRE_TO_CLIENT, player_info) \
	X(CC_MSG_INPUT, 0x0100, "input", CC_WIRE_CH_INPUT, CC_WIRE_TO_SERVER, input)               \
	X(CC_MSG_SNAPSHOT, 0x0101, "snapshot", CC_WIRE_CH_SNAPSHOT, CC_WIRE_TO_CLIENT, snapshot)   \
	X(CC_MSG_SNAPSHOT_DELTA, 0x0102, "snapshot_delta", CC_WIRE_CH_SNAPSHOT, CC_WIRE_TO_CLIENT, snapshot_delta) \
	X(CC_MSG_MATCH_STATE, 0x0110, "match_state", CC_WIRE_CH_CONTROL, CC_WIRE_TO_CLIENT, match_state) \
	X(CC_MSG_GOAL, 0x0111, "goal", CC_WIRE_CH_CONTROL, CC_WIRE_TO_CLIENT, goal)                \
	X(CC_MSG_KICKOFF, 0x0112, "kickoff", CC_WIRE_CH_CONTROL, CC_WIRE_TO_CLIENT, kickoff)       \
	X(CC_MSG_MATCH_END, 0x0113, "match_end", CC_WIRE_CH_CONTROL, CC_WIRE_TO_CLIENT, match_end) \
	X(CC_MSG_SPECTATE, 0x0200, "spectate", CC_WIRE_CH_CONTROL, CC_WIRE_TO_SERVER, spectate)    \
	X(CC_MSG_RESUME, 0x0201, "resume", CC_WIRE_CH_CONTROL, CC_WIRE_TO_SERVER, resume)          \
	X(CC_MSG_SNAPSHOT_ACK, 0x0202, "snapshot_ack", CC_WIRE_CH_INPUT, CC_WIRE_TO_SERVER, snapshot_ack) \
	X(CC_MSG_SET_NAME, 0x0300, "set_name", CC_WIRE_CH_CONTROL, CC_WIRE_TO_SERVER, set_name)    \
	X(CC_MSG_LOBBY_LIST_REQUEST, 0x0301, "lobby_list_request", CC_WIRE_CH_CONTROL, CC_WIRE_TO_SERVER, \
	  lobby_list_request)                                                                      \
	X(CC_MSG_LOBBY_CREATE, 0x0302, "lobby_create", CC_WIRE_CH_CONTROL, CC_WIRE_TO_SERVER, lobby_create) \
	X(CC_MSG_LOBBY_JOIN, 0x0303, "lobby_join", CC_WIRE_CH_CONTROL, CC_WIRE_TO_SERVER, lobby_join) \
	X(CC_MSG_LOBBY_LEAVE, 0x0304, "lobby_leave", CC_WIRE_CH_CONTROL, CC_WIRE_TO_SERVER, lobby_leave) \
	X(CC_MSG_LOBBY_SET_READY, 0x0305, "lobby_set_ready", CC_WIRE_CH_CONTROL, CC_WIRE_TO_SERVER, \
	  lobby_set_ready)                                                                         \
	X(CC_MSG_LOBBY_RESULT, 0x0380, "lobby_result", CC_WIRE_CH_CONTROL, CC_WIRE_TO_CLIENT, lobby_result) \
	X(CC_MSG_LOBBY_LIST, 0x0381, "lobby_list", CC_WIRE_CH_CONTROL, CC_WIRE_TO_CLIENT, lobby_list) \
	X(CC_MSG_LOBBY_UPDATED, 0x0382, "lobby_updated", CC_WIRE_CH_CONTROL, CC_WIRE_TO_CLIENT, lobby_updated) \
	X(CC_MSG_LOBBY_DELETED, 0x0383, "lobby_deleted", CC_WIRE_CH_CONTROL, CC_WIRE_TO_CLIENT, lobby_deleted) \
	X(CC_MSG_MATCH_STARTING, 0x0384, "match_starting", CC_WIRE_CH_CONTROL, CC_WIRE_TO_CLIENT, match_starting)

enum cc_wire_msg_id {
#define CC__WIRE_MSG_ENUM(name, id, text, ch, dir, member) name = id,
	CC_WIRE_MESSAGES(CC__WIRE_MSG_ENUM)
#undef CC__WIRE_MSG_ENUM
};

/* hello (client -> server, first message of a session). */
struct cc_wire_hello {
	uint16_t protocol_version; /* CC_WIRE_PROTOCOL_VERSION */
	uint16_t tick_rate;	   /* the tick rate the client simulates at: CC_WIRE_TICK_RATE */
	uint8_t auth;		   /* enum cc_wire_auth */
	uint16_t credential_len;   /* bytes in credential: token 1..512, name 1..32 */
	char credential[CC_WIRE_TOKEN_MAX + 1]; /* join token (printable ASCII) or name (UTF-8, no control characters); NUL-terminated */
};

/* welcome (server -> client): the hello was accepted. */
struct cc_wire_welcome {
	uint16_t protocol_version; /* the server's */
	uint16_t tick_rate;	   /* simulation ticks per second */
	uint16_t snapshot_rate;	   /* snapshots per second (1..tick_rate) */
	uint8_t mode;		   /* enum cc_wire_mode */
	uint8_t slot;		   /* this client's slot, or CC_WIRE_SLOT_NONE (spectator) */
	uint8_t team;		   /* 0 or 1, or CC_WIRE_TEAM_NONE */
	uint8_t max_players;	   /* slots in this match, 1..CC_WIRE_MAX_PLAYERS */
	uint8_t max_inputs;	   /* inputs per input message the server reads, 1..CC_WIRE_MAX_INPUTS */
	uint8_t match_state;	   /* enum cc_match_state (game/match_lifecycle.h) */
	uint32_t server_tick;	   /* tick at which this was sent */
	uint8_t resume_key[CC_WIRE_RESUME_KEY_LEN]; /* secret for a reconnect (issue 12); all zero: none */
	uint16_t arena_len;
	char arena[CC_WIRE_ARENA_MAX + 1]; /* arena name, [a-z0-9_], 1..32 bytes */
};

/* refused (server -> client): the handshake failed; an ENet disconnect follows. */
struct cc_wire_refused {
	uint16_t reason;	   /* enum cc_wire_reason */
	uint16_t protocol_version; /* the server's, so a mismatched client can say which */
	uint16_t detail_len;
	char detail[CC_WIRE_DETAIL_MAX + 1]; /* printable ASCII for humans, 0..128 bytes */
};

/* kicked (server -> client): dropped after the handshake; an ENet disconnect follows. */
struct cc_wire_kicked {
	uint16_t reason; /* enum cc_wire_reason */
	uint16_t detail_len;
	char detail[CC_WIRE_DETAIL_MAX + 1]; /* printable ASCII, 0..128 bytes */
};

/* ping (client -> server, unreliable on the input channel). */
struct cc_wire_ping {
	uint32_t client_time; /* client's clock in its own units, echoed verbatim */
};

/* pong (server -> client, unreliable on the snapshot channel), answered at once. */
struct cc_wire_pong {
	uint32_t client_time;	/* the ping's, verbatim */
	uint32_t server_tick;	/* the tick the server was simulating when it answered */
	uint16_t tick_fraction; /* how far into that tick, in 1/65536 of a tick */
};

/* player_info (server -> client, reliable): who holds a slot; sent on every change. */
struct cc_wire_player_info {
	uint8_t slot;  /* 0..CC_WIRE_MAX_PLAYERS-1 */
	uint8_t team;  /* 0 or 1 */
	uint8_t flags; /* CC_WIRE_PI_* */
	uint16_t name_len;
	char name[CC_WIRE_NAME_MAX + 1]; /* display name, UTF-8, 0..32 bytes (0: empty slot) */
};

/* One tick's controls. Axes are i8 in [-127, 127], meaning -1..1. */
struct cc_wire_input {
	int8_t thrust[3]; /* x right, y up, z forward (ship frame) */
	int8_t turn[3];	  /* pitch, yaw, roll rates wanted */
	uint8_t buttons;  /* CC_WIRE_BTN_* */
};

/* input (client -> server, unreliable sequenced): the newest inputs, newest first. */
struct cc_wire_input_msg {
	uint16_t newest_seq;	     /* sequence of inputs[0]; inputs[i] has newest_seq - i */
	uint32_t last_snapshot_tick; /* newest snapshot tick the client has (0: none yet) */
	uint16_t count;		     /* 1..CC_WIRE_MAX_INPUTS */
	struct cc_wire_input inputs[CC_WIRE_MAX_INPUTS];
};

/* One slot in a snapshot. */
struct cc_wire_player_state {
	uint8_t slot;		 /* 0..CC_WIRE_MAX_PLAYERS-1, unique within a snapshot */
	uint8_t flags;		 /* CC_WIRE_PF_* */
	uint16_t last_input_seq; /* newest input sequence the server consumed for this slot */
	uint8_t boost;		 /* boost left, 0..255 = empty..full */
	struct cc_wire_body body;
};

/* snapshot (server -> client, unreliable sequenced). */
struct cc_wire_snapshot {
	uint32_t tick;	      /* server tick this state is the end of */
	uint8_t match_state;  /* enum cc_match_state (game/match_lifecycle.h) */
	uint8_t score[2];     /* goals of team 0 and team 1 */
	uint32_t clock_ticks; /* regulation ticks left; in OVERTIME, overtime ticks played */
	struct cc_wire_body ball;
	uint16_t player_count; /* 0..CC_WIRE_MAX_PLAYERS */
	struct cc_wire_player_state players[CC_WIRE_MAX_PLAYERS];
};

/*
 * Delta snapshots (issue 24). A client that sends snapshot_ack (client ->
 * server, input channel) for the snapshots it holds gets snapshot_delta
 * instead of snapshot: the same state, encoded against a snapshot it
 * acknowledged (the base, base_age ticks older). A client that never acks
 * keeps getting full snapshots, so the change is additive (version 1).
 * The delta's bytes are described in contracts/gameserver-protocol.md
 * section 5 ("snapshot_delta"); cc_wire_delta_encode/_apply below are the
 * codec. Only integers are predicted (position from the two velocities),
 * so any client reconstructs exactly the snapshot the server encoded.
 */
#define CC_WIRE_DELTA_MAX 1024 /* bytes of delta in one snapshot_delta */
/*
 * A client keeps (at least) the CC_WIRE_DELTA_HISTORY newest snapshots it
 * took; the server encodes only against a base among the
 * CC_WIRE_DELTA_HISTORY newest it sent (older: a full snapshot), so the
 * base of every delta is one the client still holds.
 */
#define CC_WIRE_DELTA_HISTORY 32

/* snapshot_delta (server -> client, unreliable sequenced): tick's snapshot as a change from tick - base_age's. */
struct cc_wire_snapshot_delta {
	uint32_t tick;	    /* the snapshot's tick */
	uint8_t base_age;   /* 1..255: the base is the snapshot of tick - base_age */
	uint16_t delta_len; /* 1..CC_WIRE_DELTA_MAX */
	uint8_t delta[CC_WIRE_DELTA_MAX]; /* the change, protocol section 5 */
};

/* snapshot_ack (client -> server, unreliable on the input channel): the client holds the snapshot of tick. */
struct cc_wire_snapshot_ack {
	uint32_t tick;
};

/* match_state (server -> client, reliable): the lifecycle moved. */
struct cc_wire_match_state {
	uint32_t tick;	      /* tick of the change (order it against snapshot ticks) */
	uint8_t state;	      /* enum cc_match_state (game/match_lifecycle.h), the new state */
	uint8_t score[2];
	uint32_t clock_ticks; /* as in snapshot */
};

/* goal (server -> client, reliable). */
struct cc_wire_goal {
	uint32_t tick;
	uint8_t team;	  /* the team credited, 0 or 1 */
	uint8_t scorer;	  /* slot of the last toucher of that team, or CC_WIRE_SLOT_NONE */
	uint8_t score[2]; /* after this goal */
};

/* One ship's transform in a kickoff. */
struct cc_wire_kickoff_ship {
	uint8_t slot;
	struct cc_wire_body body;
};

/* kickoff (server -> client, reliable): the transforms every body was reset to. */
struct cc_wire_kickoff {
	uint32_t tick; /* the first tick simulated from these transforms */
	struct cc_wire_body ball;
	uint16_t ship_count; /* 0..CC_WIRE_MAX_PLAYERS */
	struct cc_wire_kickoff_ship ships[CC_WIRE_MAX_PLAYERS];
};

/* match_end (server -> client, reliable). */
struct cc_wire_match_end {
	uint32_t tick;
	uint8_t score[2]; /* final */
	uint8_t winner;	  /* 0, 1, or CC_WIRE_TEAM_NONE (a draw: overtime limit, or abandoned level) */
	uint8_t reason;	  /* enum cc_match_end_reason (game/match_lifecycle.h) */
};

/* ---- issue 12: spectators and reconnects ----------------------------------------
 * spectate (0x0200) is a hello for a spectator: same struct and rules,
 * answered welcome with slot CC_WIRE_SLOT_NONE or refused spectators_full.
 */

/* resume (client -> server, 0x0200 range): take back a reserved slot after a drop. */
struct cc_wire_resume {
	uint16_t protocol_version; /* as hello */
	uint16_t tick_rate;	   /* as hello */
	uint8_t resume_key[CC_WIRE_RESUME_KEY_LEN]; /* the welcome's of the dropped session */
	uint8_t auth;		   /* enum cc_wire_auth: the same identity as before */
	uint16_t credential_len;
	char credential[CC_WIRE_TOKEN_MAX + 1]; /* as hello */
};

/* ---- community lobbies (0x0300-0x03FF, SPEC 11 community mode) --------------------
 * Every request carries a client-chosen u16 `request` that the server echoes
 * in the lobby_result answering it. Broadcasts (lobby_updated,
 * lobby_deleted, match_starting) carry the server's lobby `revision`, one
 * counter across all lobbies raised by every change, so a client applies
 * them in the order state changed.
 */
#define CC_WIRE_LOBBY_NAME_MAX 32   /* lobby name, bytes of UTF-8 (name charset) */
#define CC_WIRE_LOBBY_LIST_MAX 24   /* lobbies in one lobby_list page */
#define CC_WIRE_LOBBY_MEMBERS_MAX CC_WIRE_MAX_PLAYERS

/* Lobby states (u8, append-only). */
#define CC_WIRE_LOBBY_STATES(X)               \
	X(CC_LOBBY_OPEN, 0, "open")           \
	X(CC_LOBBY_STARTING, 1, "starting")   \
	X(CC_LOBBY_IN_MATCH, 2, "in_match")

enum cc_wire_lobby_state {
	CC_WIRE_LOBBY_STATES(CC__WIRE_ENUM)
	CC_LOBBY_STATE_END
};

struct cc_wire_set_name { /* 0x0300: register or change the display name */
	uint16_t request;
	uint16_t name_len;
	char name[CC_WIRE_NAME_MAX + 1]; /* 1..32 bytes, name charset */
};

struct cc_wire_lobby_list_request { /* 0x0301: one page of the lobby list */
	uint16_t request;
	uint16_t first; /* index of the first lobby wanted (0: from the start) */
};

struct cc_wire_lobby_create { /* 0x0302: create a lobby and join it */
	uint16_t request;
	uint8_t max_players; /* 2..16 */
	uint16_t name_len;
	char name[CC_WIRE_LOBBY_NAME_MAX + 1]; /* 1..32 bytes, name charset */
};

struct cc_wire_lobby_join { /* 0x0303 */
	uint16_t request;
	uint32_t lobby_id;
};

struct cc_wire_lobby_leave { /* 0x0304 */
	uint16_t request;
};

struct cc_wire_lobby_set_ready { /* 0x0305 */
	uint16_t request;
	uint8_t ready; /* 0 or 1 */
};

struct cc_wire_lobby_result_msg { /* 0x0380: the typed answer to one request */
	uint16_t request;     /* the request's, echoed */
	uint16_t request_msg; /* the request's message id (0x0300-0x0305) */
	uint8_t result;	      /* enum cc_wire_lobby_result (append-only) */
	uint32_t lobby_id;    /* the lobby the requester is in after it, 0: none */
	uint32_t member_id;   /* the requester's member id (0 before set_name) */
};

struct cc_wire_lobby_summary { /* one lobby in a lobby_list */
	uint32_t lobby_id;
	uint8_t state;	     /* enum cc_wire_lobby_state */
	uint8_t members;     /* 0..max_players */
	uint8_t max_players; /* 2..16 */
	uint16_t name_len;
	char name[CC_WIRE_LOBBY_NAME_MAX + 1];
};

struct cc_wire_lobby_list { /* 0x0381: one page */
	uint16_t request;
	uint16_t total; /* lobbies in all */
	uint16_t first; /* index of lobbies[0] */
	uint16_t count; /* 0..CC_WIRE_LOBBY_LIST_MAX */
	struct cc_wire_lobby_summary lobbies[CC_WIRE_LOBBY_LIST_MAX];
};

struct cc_wire_lobby_member {
	uint32_t member_id; /* unique per connected player, never reused while the server runs */
	uint8_t ready;	    /* 0 or 1 */
	uint16_t name_len;
	char name[CC_WIRE_NAME_MAX + 1]; /* current display name (renames propagate) */
};

struct cc_wire_lobby_updated { /* 0x0382: a lobby's whole state after a change */
	uint32_t revision;
	uint32_t lobby_id;
	uint8_t state;	     /* enum cc_wire_lobby_state */
	uint8_t max_players; /* 2..16 */
	uint16_t name_len;
	char name[CC_WIRE_LOBBY_NAME_MAX + 1];
	uint16_t member_count; /* 0..16 */
	struct cc_wire_lobby_member members[CC_WIRE_LOBBY_MEMBERS_MAX];
};

struct cc_wire_lobby_deleted { /* 0x0383 */
	uint32_t revision;
	uint32_t lobby_id;
};

struct cc_wire_match_starting { /* 0x0384: the lobby's match starts at start_tick */
	uint32_t revision;
	uint32_t lobby_id;
	uint32_t start_tick; /* server tick the match starts (5 s after the condition held) */
	uint16_t delay_ms;   /* the same as a delay from this message, for a client without clock sync */
};

/* One message: id says which member of u is meaningful. */
struct cc_wire_msg {
	uint16_t id; /* enum cc_wire_msg_id */
	union {
		struct cc_wire_hello hello;
		struct cc_wire_welcome welcome;
		struct cc_wire_refused refused;
		struct cc_wire_kicked kicked;
		struct cc_wire_ping ping;
		struct cc_wire_pong pong;
		struct cc_wire_player_info player_info;
		struct cc_wire_input_msg input;
		struct cc_wire_snapshot snapshot;
		struct cc_wire_snapshot_delta snapshot_delta;
		struct cc_wire_snapshot_ack snapshot_ack;
		struct cc_wire_match_state match_state;
		struct cc_wire_goal goal;
		struct cc_wire_kickoff kickoff;
		struct cc_wire_match_end match_end;
		struct cc_wire_hello spectate;
		struct cc_wire_resume resume;
		struct cc_wire_set_name set_name;
		struct cc_wire_lobby_list_request lobby_list_request;
		struct cc_wire_lobby_create lobby_create;
		struct cc_wire_lobby_join lobby_join;
		struct cc_wire_lobby_leave lobby_leave;
		struct cc_wire_lobby_set_ready lobby_set_ready;
		struct cc_wire_lobby_result_msg lobby_result;
		struct cc_wire_lobby_list lobby_list;
		struct cc_wire_lobby_updated lobby_updated;
		struct cc_wire_lobby_deleted lobby_deleted;
		struct cc_wire_match_starting match_starting;
	} u;
};

/* ---- decoding faults ------------------------------------------------------ */

/* Why a packet was refused; the names are metric labels. */
#define CC_WIRE_FAULTS(X)                      \
	X(CC_WIRE_FAULT_NONE, 0, "none")           \
	X(CC_WIRE_FAULT_TRUNCATED, 1, "truncated") \
	X(CC_WIRE_FAULT_OVERSIZED, 2, "oversized") \
	X(CC_WIRE_FAULT_MALFORMED, 3, "malformed") \
	X(CC_WIRE_FAULT_UNKNOWN, 4, "unknown")

enum cc_wire_fault_kind {
	CC_WIRE_FAULTS(CC__WIRE_ENUM)
	CC_WIRE_FAULT_END
};

/* What cc_wire_decode found wrong, precisely enough for a log line. */
struct cc_wire_fault {
	enum cc_wire_fault_kind kind;
	uint16_t id;	   /* the message id (0 when the packet had none) */
	size_t offset;	   /* byte offset in the packet where the fault is */
	const char *field; /* static: the innermost field ("rot"), or "" */
	const char *why;   /* static: what was wrong, in general ("above its maximum") */
	char text[256];	   /* the whole story, printable ASCII, NUL-terminated:
			    * "snapshot: truncated at byte 37 (players[1].body.rot): needs 4 bytes, 2 left" */
};

/*
 * Decodes one packet (len bytes at buf; buf may be NULL only when len is 0)
 * into *out. Returns 0; CC_ENOTFOUND for an id this codec does not know
 * (fault kind "unknown": skip the packet); CC_EINVAL for a refused packet
 * (fault kind truncated, oversized or malformed). *out is written only on
 * success; *fault (may be NULL) on failure, and is set to kind "none" on
 * success. Never reads outside buf[0..len).
 */
CC_MUST_CHECK int cc_wire_decode(const uint8_t *buf, size_t len, struct cc_wire_msg *out,
				 struct cc_wire_fault *fault);

/*
 * cc_wire_decode for a packet that arrived on channel going in direction
 * dir (a server passes CC_WIRE_TO_SERVER). A known message on another
 * channel or meant for the other side is refused as malformed; an unknown
 * id is still CC_ENOTFOUND.
 */
CC_MUST_CHECK int cc_wire_decode_from(const uint8_t *buf, size_t len, enum cc_wire_direction dir, uint8_t channel,
				      struct cc_wire_msg *out, struct cc_wire_fault *fault);

/*
 * Encodes *m into buf (cap bytes). Returns 0 and sets *len; CC_EINVAL when
 * *m is not a valid message (unknown id, a value out of its range, a count
 * over its cap, a string that breaks its rules: the encoder refuses what the
 * decoder would refuse); CC_ETOOBIG when cap is too small. buf is scratch on
 * failure. A buffer of CC_WIRE_MAX_PACKET bytes holds any message.
 */
CC_MUST_CHECK int cc_wire_encode(const struct cc_wire_msg *m, uint8_t *buf, size_t cap, size_t *len);

/*
 * Reads the protocol version of a hello without decoding the rest, so a
 * server refuses a client of another version with protocol_mismatch even
 * when the rest of its hello means something else there. True and *version
 * set when buf starts with hello's id and holds a version.
 */
bool cc_wire_peek_hello_version(const uint8_t *buf, size_t len, uint16_t *version);

/*
 * Writes *m as one line of JSON into buf (cap bytes, NUL-terminated when
 * cap > 0): {"id":257,"name":"snapshot","fields":{"tick":777,...}}, named as
 * in the JSON table, bodies as their integers, strings escaped (control
 * characters as \u00XX, quotes and backslashes with a backslash), fixed
 * bytes as lower-case hex. For logs, the replay-log dump tool and the
 * independent check of the table. Returns the length the whole text needs
 * (as snprintf: truncated when that is >= cap), or 0 for an unknown id.
 * Allocates nothing.
 */
size_t cc_wire_format(const struct cc_wire_msg *m, char *buf, size_t cap);

/* ---- delta snapshots -------------------------------------------------------- */

/*
 * Encodes cur as a snapshot_delta against base (an older snapshot the
 * client acknowledged) into *out. Returns 0; CC_EINVAL when either is not a
 * valid snapshot or cur->tick - base->tick is not 1..255; CC_ETOOBIG when
 * the delta would not fit CC_WIRE_DELTA_MAX (send the full snapshot). Pure.
 */
CC_MUST_CHECK int cc_wire_delta_encode(const struct cc_wire_snapshot *base, const struct cc_wire_snapshot *cur,
				       struct cc_wire_snapshot_delta *out);

/*
 * Rebuilds the snapshot d describes from base into *out. base must be the
 * snapshot of tick d->tick - d->base_age: another is refused ("unknown
 * base", malformed). A delta that ends early is truncated, one with bytes
 * left over or a count over its cap oversized, one whose values leave
 * their ranges (or break a snapshot rule: duplicate slots) malformed; each
 * with *fault (may be NULL) saying where, as cc_wire_decode does, and *out
 * untouched. Returns 0 or CC_EINVAL. Never reads outside d->delta[0..delta_len).
 */
CC_MUST_CHECK int cc_wire_delta_apply(const struct cc_wire_snapshot *base, const struct cc_wire_snapshot_delta *d,
				      struct cc_wire_snapshot *out, struct cc_wire_fault *fault);

/* ---- the table ------------------------------------------------------------ */

/* Field kinds of the wire table (the "type" strings of gameserver-messages.json). */
enum cc_wire_ftype {
	CC_WIRE_U8,	/* "u8" */
	CC_WIRE_U16,	/* "u16" */
	CC_WIRE_U32,	/* "u32" */
	CC_WIRE_I8,	/* "i8" */
	CC_WIRE_I16,	/* "i16" */
	CC_WIRE_BYTES,	/* "bytes": fixed length */
	CC_WIRE_STRING, /* "string": u8 or u16 length prefix, then bytes, no NUL */
	CC_WIRE_ARRAY,	/* "array": u8 count prefix, then elements of a struct type */
	CC_WIRE_STRUCT,	/* "struct": a named struct type inline */
	CC_WIRE_BLOB	/* "blob": u16 length prefix, then opaque bytes (snapshot_delta's delta) */
};

/* String rules (the "charset" strings of the JSON table). */
enum cc_wire_charset {
	CC_WIRE_CS_NONE,  /* not a string */
	CC_WIRE_CS_TOKEN, /* "token": printable ASCII without space, 0x21-0x7E */
	CC_WIRE_CS_TEXT,  /* "text": printable ASCII, 0x20-0x7E */
	CC_WIRE_CS_NAME,  /* "name": well-formed UTF-8 without control characters (C0, DEL, C1) */
	CC_WIRE_CS_SLUG,  /* "slug": a-z, 0-9 and _ */
	CC_WIRE_CS_CREDENTIAL /* "credential": token or name as the auth field says */
};

struct cc_wire_type;

/* One field of a message or struct type, in wire order. */
struct cc_wire_field {
	const char *name;	      /* as in the JSON table */
	enum cc_wire_ftype type;
	size_t offset;		      /* offsetof() of the value in the C struct */
	int64_t min, max;	      /* scalar: inclusive range; string/array: length/count range */
	size_t len;		      /* BYTES: length; STRING: prefix bytes (1 or 2); ARRAY: count prefix bytes (1) */
	size_t len_offset;	      /* STRING/ARRAY: offsetof() of the uint16_t length/count */
	enum cc_wire_charset charset; /* STRING */
	const struct cc_wire_type *of; /* ARRAY/STRUCT element type */
	uint32_t reserved_mask;	      /* scalar: bits that must be zero */
	const char *enum_name;	      /* scalar: the named enum its values come from, or NULL */
};

/* A struct type (body, input, ...) or a message's payload. */
struct cc_wire_type {
	const char *name;
	const struct cc_wire_field *fields;
	size_t n_fields;
	size_t size; /* sizeof the C struct */
	/* Rules across fields (NULL: none): returns NULL when v (a decoded C
	 * struct of this type) is valid, else a static reason; *field names the
	 * field it concerns. The JSON table states them in prose ("rules"). */
	const char *(*check)(const void *v, const char **field);
};

/* One message in the table. */
struct cc_wire_msg_info {
	uint16_t id;
	const char *name;
	enum cc_wire_channel channel;
	enum cc_wire_direction direction;
	bool reliable;			/* sent ENET_PACKET_FLAG_RELIABLE (the control channel), else unreliable sequenced */
	const struct cc_wire_type *payload;
};

/* The message table in id order; *n gets its length. */
const struct cc_wire_msg_info *cc_wire_messages(size_t *n);

/* The table entry of id, or NULL when the codec does not know it. */
const struct cc_wire_msg_info *cc_wire_msg_info(uint16_t id);

/* The smallest and largest packet (id included) of a message or struct type (no id). */
void cc_wire_msg_sizes(const struct cc_wire_msg_info *info, size_t *min, size_t *max);
void cc_wire_type_sizes(const struct cc_wire_type *type, size_t *min, size_t *max);

/* The struct types the messages use (body, input, ...); *n gets the count. */
const struct cc_wire_type *const *cc_wire_types(size_t *n);

/* Names for logs and metrics; never NULL ("?" for a value not in the list). */
const char *cc_wire_msg_name(uint16_t id);
const char *cc_wire_reason_name(uint16_t reason);
const char *cc_wire_lobby_result_name(uint8_t result);
const char *cc_wire_lobby_state_name(uint8_t state);
const char *cc_wire_fault_name(enum cc_wire_fault_kind kind);

/* The value of a reason named name ("bad_token"), or 0 when there is none. */
uint16_t cc_wire_reason_by_name(const char *name);

#endif
