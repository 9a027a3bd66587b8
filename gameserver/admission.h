/*
 * admission.h - who may take a slot in this match, and for how long a
 * slot waits for its player (SPEC 8, 11: allocated mode; issue 12).
 *
 * Owns the verified roster, the join key set (verify only) and, per
 * roster slot, which connection holds it, the resume key of its latest
 * session and its reservation. A hello's join authorisation is admitted
 * when, in order: the token verifies against the key set at the current
 * wall clock (game/join_token: well-formed, known key, signature, not
 * expired), its claims name this match, this server, a roster player,
 * that player's slot and generation (game/roster), and no other live
 * connection holds that slot. The last rule is the replay guard: a valid
 * token presented by a hello for a second connection is refused
 * ("token_replayed") while the first still holds the slot; the first
 * connection is untouched.
 *
 * Identity is the verified player_id of the join token, never a display
 * name: a roster slot belongs to one player_id, so every rule below is
 * per slot = per identity.
 *
 * Reservation (issue 12): when the holder leaves (gs_admission_release:
 * a disconnect, a timeout, a kick), the slot is reserved for reserve_ms
 * (cc-gameserver --slot-reserve-seconds, default 30 s) for the same
 * identity. It lapses at exactly left_ms + reserve_ms: a call at
 * now_ms >= that instant sees it lapsed. gs_admission_next_lapsed()
 * reports each lapse once (the server then hands the ship to a bot or
 * parks it) and forgets the session's resume key.
 *   - hello of the same identity while reserved: admitted, the slot taken
 *     back at once (out->resumed). A client that lost its resume key (a
 *     crash, a reinstall) can still come back with its token; the key is
 *     only needed to displace a session that still looks live.
 *   - hello after the lapse (or for a slot never taken): admitted as a
 *     newcomer (out->resumed false); the server lets the ship in at the
 *     next kickoff.
 *   - resume (gs_admission_resume) with the token of the same identity
 *     and the slot's current resume key: takes back a reserved slot, or,
 *     when a live connection still holds it (the server has not noticed
 *     the drop yet), takes it over: *displaced names the older holder,
 *     which the caller kicks (duplicate_session). A wrong key, another
 *     identity's token (whatever its display name), no key issued yet, or
 *     a lapsed reservation: "resume_refused", nothing changes.
 * Every admission (hello or resume) issues a fresh random resume key
 * (out->resume_key), which replaces the slot's previous one.
 *
 * Every refusal has a stable snake_case reason (the refusal reasons of
 * contracts/gameserver-protocol.md): the token refusals of game/token.h
 * plus "token_replayed" and "resume_refused".
 *
 * Ownership: the admission takes ownership of the key set passed to
 * gs_admission_create() and frees it in gs_admission_free(). Single thread
 * (the tick thread). Times: now_unix is the wall clock (token expiry),
 * now_ms any monotonic millisecond clock (reservations).
 */
#ifndef CC_GAMESERVER_ADMISSION_H
#define CC_GAMESERVER_ADMISSION_H

#include <stdbool.h>
#include <stdint.h>

#include "sys/cc.h"
#include "sys/crypto.h"
#include "game/join_token.h"
#include "game/roster.h"
#include "game/wire.h"

struct gs_admission;

#define GS_RESUME_KEY_LEN CC_WIRE_RESUME_KEY_LEN

/* What an admitted hello or resume gets. */
struct gs_admit {
	int slot;                    /* roster slot */
	int team;                    /* 0 or 1 */
	int64_t generation;          /* the token's generation (for receipts) */
	char player_id[CC_UUID_BUF]; /* verified identity */
	uint8_t resume_key[GS_RESUME_KEY_LEN]; /* fresh: the welcome's resume_key */
	bool resumed;                /* took back a reserved or live slot (same ship, at once) */
};

/*
 * Takes keys (freed by gs_admission_free, also on failure: NULL then).
 * roster is copied. reserve_ms: how long a vacated slot waits for its
 * player (0: not at all; it lapses at the release).
 */
struct gs_admission *gs_admission_create(struct cc_keyset *keys, const struct cc_roster *roster, const char *server_id,
					 int64_t reserve_ms);

/*
 * Checks token (NUL-terminated) for connection holder (any non-zero id the
 * caller uses for its peer) at now_unix / now_ms. Returns 0 and fills *out
 * (the slot is now held by holder), or CC_EUNAUTHORIZED / CC_EFORBIDDEN /
 * CC_ECONFLICT (replayed) with *reason set to a static snake_case name.
 */
int gs_admission_admit(struct gs_admission *a, const char *token, int64_t now_unix, int64_t now_ms, uint64_t holder,
		       struct gs_admit *out, const char **reason) CC_MUST_CHECK;

/*
 * A resume (see above): token of the same identity plus key (GS_RESUME_KEY_LEN
 * bytes). Returns 0 and fills *out (resumed true) and *displaced (the
 * older live holder to kick, or 0); or the token's refusal as
 * gs_admission_admit(), or CC_ECONFLICT with *reason "resume_refused" and
 * *detail a static sentence saying which rule refused.
 */
int gs_admission_resume(struct gs_admission *a, const char *token, const uint8_t *key, int64_t now_unix, int64_t now_ms,
			uint64_t holder, struct gs_admit *out, uint64_t *displaced, const char **reason,
			const char **detail) CC_MUST_CHECK;

/*
 * Verifies token for this match (as a hello would) without taking its
 * slot: a spectator's credential. 0 (*slot, if not NULL, is the token's
 * roster slot) or the refusal as gs_admission_admit().
 */
int gs_admission_verify(const struct gs_admission *a, const char *token, int64_t now_unix, int *slot,
			const char **reason) CC_MUST_CHECK;

/*
 * Frees the slot held by holder, if any, and reserves it until
 * now_ms + reserve_ms. Returns the slot, or -1 when holder held none
 * (never admitted, or displaced by a resume).
 */
int gs_admission_release(struct gs_admission *a, uint64_t holder, int64_t now_ms);

/*
 * The next slot whose reservation lapsed by now_ms (reported once; its
 * resume key is forgotten), or -1. Call until -1.
 */
int gs_admission_next_lapsed(struct gs_admission *a, int64_t now_ms);

/*
 * Casual backfill (SPEC 9, issue 26): replaces the roster with next, a
 * later version of the same match's roster (same match, allocation and
 * server, the same slots on the same teams). Every slot whose player or
 * generation changed starts over: no holder, no resume key, no
 * reservation, so the old token (its old generation or player) is refused
 * from now on (not_in_roster / wrong_generation) and the new one is
 * admitted as a newcomer. changed[slot] is set for each such slot and
 * holders[slot] names its connection that must be kicked (0: none).
 * Returns 0, or CC_EINVAL (nothing changed) when next is not such a roster.
 */
int gs_admission_reload(struct gs_admission *a, const struct cc_roster *next, bool changed[CC_ROSTER_MAX_ENTRIES],
			uint64_t holders[CC_ROSTER_MAX_ENTRIES]) CC_MUST_CHECK;

/* The roster (read-only, valid until free). */
const struct cc_roster *gs_admission_roster(const struct gs_admission *a);

/* True when the roster slot is held by a live connection. */
bool gs_admission_slot_held(const struct gs_admission *a, int slot);

/* True when the slot is vacated and still reserved at now_ms. */
bool gs_admission_slot_reserved(const struct gs_admission *a, int slot, int64_t now_ms);

/* NULL is a harmless no-op. */
void gs_admission_free(struct gs_admission *a);

#endif
