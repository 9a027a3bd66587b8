/*
 * parties.h - the one owner of cc_parties, cc_party_members and
 * cc_party_invites (migration 0020, issue 26).
 *
 * Every function runs inside the caller's SERIALIZABLE transaction
 * (sys/pg.h). A route reads the party with cc_party_read(for_update),
 * which locks its row for the rest of the transaction, decides with
 * game/party.h, checks the client's revision against view.revision, makes
 * its change here, and ends with cc_party_commit_change(), which bumps the
 * revision by one and writes the outbox row ("party.updated" with
 * {"change", "player_id"}, or "party.disbanded") to every member and the
 * player the change was about. So concurrent changes of one party
 * serialize on its row, and exactly one of several callers at a revision
 * wins. The party's tickets move through store/tickets.h
 * (cc_tickets_cancel_party), never here.
 *
 * Ownership: struct cc_party_view is a plain value; a json out-parameter,
 * when not NULL, receives malloc'd text (the contract's Party object, or
 * PartyQueued for cc_party_queued_json) that the caller frees.
 */
#ifndef CC_STORE_PARTIES_H
#define CC_STORE_PARTIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sys/cc.h"
#include "sys/pg.h"
#include "game/party.h"
#include "game/playlist.h"

/* A member as the queue route needs it. */
struct cc_party_member {
	char player_id[CC_UUID_BUF];
	int32_t protocol_version; /* the member's client, declared on create/join */
	char build[65];
};

/* A party as read (members in join order: the longest-standing first). */
struct cc_party_view {
	char id[CC_UUID_BUF];
	char leader[CC_UUID_BUF];
	char join_code[CC_PARTY_JOIN_CODE_LEN + 1];
	int64_t revision;
	size_t n_members;
	struct cc_party_member members[CC_PARTY_MAX_MEMBERS];
	bool queued;  /* some ticket of the party is still active (QUEUED .. ASSIGNED) */
};

/* The index of player_id in v's members, or -1. */
int cc_party_member_index(const struct cc_party_view *v, const char *player_id);

/*
 * Creates a party led by leader (its first member, with its client's
 * protocol_version and build) with a fresh join code. Returns 0 with
 * party_id filled; CC_ECONFLICT when leader is already in a party
 * (nothing written); or a database error.
 */
int cc_party_create(struct cc_pg *pg, const char *leader, int32_t protocol_version, const char *build,
		    char party_id[CC_UUID_BUF]) CC_MUST_CHECK;

/*
 * Reads party_id (for_update: and locks its row). Returns 0, CC_ENOTFOUND,
 * or a database error (CC_EDB when it has more members than a party may).
 */
int cc_party_read(struct cc_pg *pg, const char *party_id, bool for_update, struct cc_party_view *out)
	CC_MUST_CHECK;

/* The id of the party with join code code: 0, CC_ENOTFOUND, or a database error. */
int cc_party_find_by_code(struct cc_pg *pg, const char *code, char party_id[CC_UUID_BUF]) CC_MUST_CHECK;

/* Whether player_id holds an invitation to party_id. */
int cc_party_invited(struct cc_pg *pg, const char *party_id, const char *player_id, bool *invited) CC_MUST_CHECK;

/* Invites player_id (again: a no-op). Returns 0, CC_ENOTFOUND (no such player) or a database error. */
int cc_party_invite(struct cc_pg *pg, const char *party_id, const char *player_id) CC_MUST_CHECK;

/*
 * Adds player_id as a member (and drops its invitation). Returns 0;
 * CC_ECONFLICT when the player is in a party already (nothing written);
 * or a database error.
 */
int cc_party_add_member(struct cc_pg *pg, const char *party_id, const char *player_id, int32_t protocol_version,
			const char *build) CC_MUST_CHECK;

/* Removes player_id from the members (0 also when it was not one). */
int cc_party_remove_member(struct cc_pg *pg, const char *party_id, const char *player_id) CC_MUST_CHECK;

/* Makes player_id (a member) the leader. */
int cc_party_set_leader(struct cc_pg *pg, const char *party_id, const char *player_id) CC_MUST_CHECK;

/* Records the playlist of the party's queue request. */
int cc_party_set_playlist(struct cc_pg *pg, const char *party_id, const char *playlist) CC_MUST_CHECK;

/* Deletes the party, its members and invitations (disband, or the last member left). */
int cc_party_delete(struct cc_pg *pg, const char *party_id) CC_MUST_CHECK;

/*
 * Locks party_id's row (FOR UPDATE) for the rest of the transaction, and
 * reads nothing else: the first step of the lock order (store/README.md)
 * on a decline, which may change the party after the proposal and its
 * tickets (cc_party_member_declined). 0 also when there is no such party.
 */
int cc_party_lock(struct cc_pg *pg, const char *party_id) CC_MUST_CHECK;

/*
 * A member declined (or cancelled in) a proposal its party mates are in
 * (store/proposals.c, in the decline's transaction, the party locked
 * first with cc_party_lock): player_id leaves the party as on a leave;
 * when it led, the lead passes to the longest-standing member left; the
 * change ends with cc_party_commit_change(DECLINED, player_id), so the
 * revision bumps and "party.updated" {"change": "declined"} goes to the
 * members left and the decliner. The party's tickets are the caller's
 * (the mates' go back to the queue as the smaller party). A party of one
 * is left as it is (the decliner stays its member and leader). *removed
 * says whether player_id was taken out; 0 with !*removed also when there
 * is no such party or player_id is not a member.
 */
int cc_party_member_declined(struct cc_pg *pg, const char *party_id, const char *player_id, bool *removed)
	CC_MUST_CHECK;

/* What a change was (the "change" of party.updated's payload). */
enum cc_party_change {
	CC_PARTY_CHANGE_CREATED,
	CC_PARTY_CHANGE_INVITED,
	CC_PARTY_CHANGE_JOINED,
	CC_PARTY_CHANGE_LEFT,
	CC_PARTY_CHANGE_KICKED,
	CC_PARTY_CHANGE_PROMOTED,
	CC_PARTY_CHANGE_QUEUED,
	CC_PARTY_CHANGE_DISBANDED,
	CC_PARTY_CHANGE_DECLINED,
};
const char *cc_party_change_name(enum cc_party_change c);

/*
 * Ends a change: revision + 1 (unless the party was just created, or was
 * deleted: then revision is what it was, v->revision + 1 for a deleted
 * one), and the outbox row, to the party's members now plus about (the
 * player the change was about, may be NULL). For DISBANDED the event is
 * "party.disbanded" to notify (the members before the delete, n_notify of
 * them). Returns 0 with *revision the party's new revision, or an error.
 */
int cc_party_commit_change(struct cc_pg *pg, const char *party_id, enum cc_party_change change, const char *about,
			   const char (*notify)[CC_UUID_BUF], size_t n_notify, int64_t *revision) CC_MUST_CHECK;

/* The Party object of party_id (malloc'd text): 0, CC_ENOTFOUND, CC_ENOMEM or a database error. */
int cc_party_json(struct cc_pg *pg, const char *party_id, char **json) CC_MUST_CHECK;

/* The PartyQueued answer: {"party": Party, "tickets": [the party's QUEUED tickets]}. */
int cc_party_queued_json(struct cc_pg *pg, const char *party_id, char **json) CC_MUST_CHECK;

#endif
