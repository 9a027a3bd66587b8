/*
 * lobby.h - community mode's lobby registry (SPEC 11, protocol section 11):
 * the pure rules, no I/O. cc-gameserver's community loop
 * (gameserver/community.h) feeds it requests and its clock, and turns the
 * events it emits into broadcasts.
 *
 * Members are registered players (a hello {auth 2, name}); each has a
 * member id, unique and never reused while the registry lives, and a
 * display name. Lobbies have an id (never reused either), a name, a
 * max_players and their members in join order. The rules:
 *
 *   - one lobby per member (create or join while in one: already_in_lobby);
 *   - at most max_lobbies lobbies (create past it: too_many_lobbies);
 *   - a lobby that becomes empty is deleted (event DELETED);
 *   - open -> starting when every member is ready and there are at least 2
 *     (events UPDATED then MATCH_STARTING, start_at = now + countdown_ms);
 *     any change during the countdown (a leave, a disconnect, an un-ready)
 *     re-checks the condition both ways: still true, the countdown goes on
 *     (UPDATED only, when the member list changed); false, back to open
 *     (UPDATED). A leave that leaves only ready members (at least 2) in an
 *     open lobby starts the countdown: the last not-ready player leaving
 *     starts it for the rest, and a lobby of one never starts;
 *   - a join during starting or in_match is already_started (the countdown
 *     is a commitment: nobody can hold a lobby back by joining and leaving);
 *   - at start_at (cc_lobby_tick) starting -> in_match (events BEGIN, for
 *     the caller to start the match, then UPDATED); leave and set_ready
 *     during in_match are already_started (a player quits a match by
 *     disconnecting); a disconnect removes the member (UPDATED, or DELETED
 *     when it was the last: the caller abandons the match);
 *   - cc_lobby_match_ended: in_match -> open, every member not ready (UPDATED);
 *   - a rename changes the member's name in its lobby (UPDATED).
 *
 * Every event carries the registry's revision, raised by one for each
 * event: one counter across all lobbies, so broadcasts sent in event order
 * carry strictly increasing revisions and a client applies them in the
 * order state changed. Events are delivered synchronously, during the call
 * that caused them, after the state changed: a caller building a
 * lobby_updated from cc_lobby_find() sees the state the event describes
 * (each call emits at most one UPDATED per lobby, last for that lobby
 * except MATCH_STARTING).
 *
 * Teams (cc_lobby_team_of): members in join order alternate team 0, 1,
 * 0, 1, ...; slot = join index. An odd count gives team 0 the extra
 * player (5 members: 3 v 2).
 *
 * Paging: lobbies are listed in id order (creation order);
 * cc_lobby_at(r, i) is the i-th, i < cc_lobby_count(r).
 *
 * Ownership: the registry owns everything it holds; pointers it returns
 * are valid until the next mutating call. Not thread-safe.
 */
#ifndef CC_GAME_LOBBY_H
#define CC_GAME_LOBBY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sys/cc.h"

#define CC_LOBBY_NAME_MAX 32    /* display and lobby names, bytes of UTF-8 */
#define CC_LOBBY_MEMBERS_MAX 16 /* the wire's cap; the server's is max_players in the config */

/* Lobby states: the wire's values (game/wire.h enum cc_wire_lobby_state). */
enum cc_lobby_state {
	CC_LOBBY_STATE_OPEN = 0,
	CC_LOBBY_STATE_STARTING = 1,
	CC_LOBBY_STATE_IN_MATCH = 2,
};

/* Request results: the wire's values (game/wire.h enum cc_wire_lobby_result). */
enum cc_lobby_result {
	CC_LOBBY_R_OK = 0,
	CC_LOBBY_R_NOT_REGISTERED = 1,
	CC_LOBBY_R_ALREADY_IN_LOBBY = 2,
	CC_LOBBY_R_FULL = 3,
	CC_LOBBY_R_UNKNOWN = 4,
	CC_LOBBY_R_ALREADY_STARTED = 5,
	CC_LOBBY_R_TOO_MANY = 6,
	CC_LOBBY_R_INVALID = 7,
	CC_LOBBY_R_COUNT
};

/* "ok", "not_registered", ...; "unknown" out of range. */
const char *cc_lobby_result_name(int result);
/* "open", "starting", "in_match"; "unknown" out of range. */
const char *cc_lobby_state_name(int state);

struct cc_lobby_config {
	int max_lobbies;      /* lobbies at once (>= 1) */
	int max_players;      /* largest max_players a lobby may ask for (2..CC_LOBBY_MEMBERS_MAX) */
	int64_t countdown_ms; /* starting -> in_match after this (SPEC 11: 5000) */
};

enum cc_lobby_event_kind {
	CC_LOBBY_EV_UPDATED,        /* the lobby's state, name or members changed: broadcast lobby_updated */
	CC_LOBBY_EV_DELETED,        /* the lobby is gone: broadcast lobby_deleted */
	CC_LOBBY_EV_MATCH_STARTING, /* the countdown began: broadcast match_starting (start_at_ms) */
	CC_LOBBY_EV_BEGIN,          /* the countdown ended: the caller starts the match (no revision, not broadcast) */
};

struct cc_lobby_event {
	enum cc_lobby_event_kind kind;
	uint32_t revision; /* the registry's revision after this event (BEGIN: unchanged) */
	uint32_t lobby_id;
	int64_t start_at_ms; /* MATCH_STARTING: when the match begins, on the caller's clock */
};

typedef void (*cc_lobby_event_fn)(void *ctx, const struct cc_lobby_event *ev);

struct cc_lobby_member {
	uint32_t id;
	char name[CC_LOBBY_NAME_MAX + 1];
	size_t name_len;
	uint32_t lobby_id; /* 0: in no lobby */
	bool ready;
};

struct cc_lobby {
	uint32_t id;
	char name[CC_LOBBY_NAME_MAX + 1];
	size_t name_len;
	int max_players;
	enum cc_lobby_state state;
	int n_members;
	uint32_t members[CC_LOBBY_MEMBERS_MAX]; /* member ids, in join order */
	int64_t start_at_ms;                    /* STARTING: when it goes in_match */
	uint32_t matches;                       /* matches this lobby began */
};

struct cc_lobby_registry;

/* NULL on a config out of range or out of memory. fn may be NULL (no events). */
struct cc_lobby_registry *cc_lobby_registry_create(const struct cc_lobby_config *cfg, cc_lobby_event_fn fn, void *ctx);
void cc_lobby_registry_free(struct cc_lobby_registry *r);

/* True when len bytes at s are a valid display or lobby name: 1..32 bytes of UTF-8 without control characters. */
bool cc_lobby_name_valid(const char *s, size_t len);

/*
 * Registers a member named name. Returns its id (>= 1), or 0 when the
 * name is not valid or out of memory.
 */
uint32_t cc_lobby_register(struct cc_lobby_registry *r, const char *name, size_t len);

/* Removes a member (its connection ended): it leaves its lobby (even in_match) as a leave would. */
void cc_lobby_unregister(struct cc_lobby_registry *r, uint32_t member, int64_t now_ms);

/* The requests. Each returns an enum cc_lobby_result; nothing changes unless it is OK. */
int cc_lobby_rename(struct cc_lobby_registry *r, uint32_t member, const char *name, size_t len);
int cc_lobby_create(struct cc_lobby_registry *r, uint32_t member, const char *name, size_t len, int max_players,
		    int64_t now_ms, uint32_t *lobby_id);
int cc_lobby_join(struct cc_lobby_registry *r, uint32_t member, uint32_t lobby_id, int64_t now_ms);
int cc_lobby_leave(struct cc_lobby_registry *r, uint32_t member, int64_t now_ms);
int cc_lobby_set_ready(struct cc_lobby_registry *r, uint32_t member, bool ready, int64_t now_ms);

/* Every starting lobby whose start_at_ms <= now_ms goes in_match (BEGIN, UPDATED), in id order. */
void cc_lobby_tick(struct cc_lobby_registry *r, int64_t now_ms);

/* The lobby's match ended: in_match -> open, every member not ready (UPDATED). CC_ENOTFOUND, CC_EINVAL (not in_match). */
int cc_lobby_match_ended(struct cc_lobby_registry *r, uint32_t lobby_id);

/* Lookups (NULL: none). */
const struct cc_lobby *cc_lobby_find(const struct cc_lobby_registry *r, uint32_t lobby_id);
const struct cc_lobby_member *cc_lobby_member(const struct cc_lobby_registry *r, uint32_t member);
int cc_lobby_count(const struct cc_lobby_registry *r);
const struct cc_lobby *cc_lobby_at(const struct cc_lobby_registry *r, int index);
int cc_lobby_member_count(const struct cc_lobby_registry *r);
uint32_t cc_lobby_revision(const struct cc_lobby_registry *r);
/* Lobbies in state (metrics). */
int cc_lobby_count_in(const struct cc_lobby_registry *r, enum cc_lobby_state state);

/* The team (0, 1) of a lobby's join index i of n members: alternating, so team 0 has ceil(n/2). */
int cc_lobby_team_of(int index, int n);

/*
 * Checks every invariant (the property tests): writes the first broken
 * one into why and returns false.
 */
bool cc_lobby_check(const struct cc_lobby_registry *r, char *why, size_t whylen);

#endif
