/*
 * admission.h - who may take a slot in this match (SPEC 8, 11: allocated mode).
 *
 * Owns the verified roster, the join key set (verify only) and which
 * connection holds each roster slot. A hello's join authorisation is
 * admitted when, in order: the token verifies against the key set at the
 * current wall clock (game/join_token: well-formed, known key, signature,
 * not expired), its claims name this match, this server, a roster player,
 * that player's slot and generation (game/roster), and no other live
 * connection holds that slot. The last rule is the replay guard: a valid
 * token presented for a second connection is refused ("token_replayed")
 * while the first still holds the slot; the first connection is untouched.
 * Once the holder leaves (gs_admission_release), the same identity may
 * come back with its token (issue 12's slot reservation builds on this).
 *
 * Every refusal has a stable snake_case reason (the refusal reasons of
 * contracts/gameserver-protocol.md): the token refusals of game/token.h
 * plus "token_replayed".
 *
 * Ownership: the admission takes ownership of the key set passed to
 * gs_admission_create() and frees it in gs_admission_free(). Single thread
 * (the tick thread).
 */
#ifndef CC_GAMESERVER_ADMISSION_H
#define CC_GAMESERVER_ADMISSION_H

#include <stdbool.h>
#include <stdint.h>

#include "sys/cc.h"
#include "sys/crypto.h"
#include "game/join_token.h"
#include "game/roster.h"

struct gs_admission;

/* What an admitted hello gets. */
struct gs_admit {
	int slot;                    /* roster slot */
	int team;                    /* 0 or 1 */
	int64_t generation;          /* the token's generation (for receipts) */
	char player_id[CC_UUID_BUF]; /* verified identity */
};

/* Takes keys (freed by gs_admission_free, also on failure: NULL then). roster is copied. */
struct gs_admission *gs_admission_create(struct cc_keyset *keys, const struct cc_roster *roster, const char *server_id);

/*
 * Checks token (NUL-terminated) for connection holder (any non-zero id the
 * caller uses for its peer) at now_unix. Returns 0 and fills *out (the slot
 * is now held by holder), or CC_EUNAUTHORIZED / CC_EFORBIDDEN / CC_ECONFLICT
 * (replayed) with *reason set to a static snake_case name.
 */
int gs_admission_admit(struct gs_admission *a, const char *token, int64_t now_unix, uint64_t holder,
		       struct gs_admit *out, const char **reason) CC_MUST_CHECK;

/* Frees the slot held by holder, if any. */
void gs_admission_release(struct gs_admission *a, uint64_t holder);

/* The roster (read-only, valid until free). */
const struct cc_roster *gs_admission_roster(const struct gs_admission *a);

/* True when the roster slot is held by a live connection. */
bool gs_admission_slot_held(const struct gs_admission *a, int slot);

/* NULL is a harmless no-op. */
void gs_admission_free(struct gs_admission *a);

#endif
