/*
 * party.h - the rules of parties (issue 26), pure: no I/O, no clock.
 *
 * A party is a leader and members (the leader is a member) who queue
 * together. Who may do what:
 *   invite, kick, promote, queue   the leader only
 *   leave                          any member (a leader who leaves hands
 *                                  the lead to the longest-standing member;
 *                                  the last one out ends the party)
 *   disband                        the leader only
 *   join                           a player in no party, with the join code
 *                                  or an invitation, while the party is not
 *                                  queued and has room (CC_PARTY_MAX_MEMBERS)
 * Kick and promote name another member; nobody kicks or promotes himself.
 *
 * Size: a party of n may queue for playlist pl only when n <= cc_party_cap
 * (casual 3v3: 3; ranked 1v1: 1, solo only). Every member's client must be
 * on the same build, and the enqueue policy (game/enqueue_policy.h) is
 * judged for each member; the first refusal names that member.
 *
 * Formation (game/formation.h) treats a party as one unit on one team.
 */
#ifndef CC_GAME_PARTY_H
#define CC_GAME_PARTY_H

#include <stdbool.h>
#include <stddef.h>

#include "game/playlist.h"

/* Members of any party: the largest cap of any playlist a party could queue for. */
#define CC_PARTY_MAX_MEMBERS 3
#define CC_PARTY_JOIN_CODE_LEN 8
/* The join code's alphabet: no 0/O, 1/I, so a code read aloud is unambiguous. */
#define CC_PARTY_JOIN_CODE_ALPHABET "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"

enum cc_party_action {
	CC_PARTY_INVITE,
	CC_PARTY_KICK,
	CC_PARTY_PROMOTE,
	CC_PARTY_QUEUE,
	CC_PARTY_DISBAND,
	CC_PARTY_LEAVE,
};

enum cc_party_verdict {
	CC_PARTY_OK,
	CC_PARTY_NOT_MEMBER,   /* the actor is not in the party (answered as not found) */
	CC_PARTY_NOT_LEADER,   /* a leader-only action by another member */
	CC_PARTY_TARGET_SELF,  /* kick or promote naming the actor */
	CC_PARTY_TARGET_NOT_MEMBER, /* kick or promote naming someone outside the party */
};

/* Who the action is by and about (target: kick and promote only). */
struct cc_party_actor {
	bool member;         /* the actor is in the party */
	bool leader;         /* the actor leads it */
	bool target_member;  /* kick/promote: the target is in the party */
	bool target_self;    /* kick/promote: the target is the actor */
};

/* Decides whether a may do action (a not NULL). */
enum cc_party_verdict cc_party_may(enum cc_party_action action, const struct cc_party_actor *a);

/* The most members a party may queue pl with: pl's max_party_size, at least 1 (NULL: 0). */
int cc_party_cap(const struct cc_playlist *pl);

/* True when a party of n members may queue for pl. */
bool cc_party_size_fits(const struct cc_playlist *pl, size_t n);

/* True when code is CC_PARTY_JOIN_CODE_LEN characters of the alphabet. */
bool cc_party_join_code_valid(const char *code);

/* Maps CC_PARTY_JOIN_CODE_LEN random bytes to a join code (out: LEN + 1 bytes). */
void cc_party_join_code_from_bytes(const unsigned char *bytes, char out[CC_PARTY_JOIN_CODE_LEN + 1]);

/* A stable name for logs and tests ("not_leader"). */
const char *cc_party_verdict_name(enum cc_party_verdict v);

#endif
