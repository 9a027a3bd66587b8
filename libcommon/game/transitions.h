/*
 * transitions.h - the ticket state machine: state names and legal moves.
 *
 * The legal transitions are data, kept in three copies that tests prove
 * equal: contracts/v1/state-transitions.json (the published contract), the
 * state_transitions table (written by migrations; a trigger makes the
 * database refuse any other move) and the static table in transitions.c
 * (so code can check a move before it reaches the database).
 *
 * The database raises SQLSTATE CC_SQLSTATE_ILLEGAL_TRANSITION with a message
 * "illegal_transition: <machine> <from> -> <to>" (from is "(insert)" when a
 * row is created in a state that is not initial). Callers map it to
 * CC_ESTATE.
 *
 * Everything here is static, read-only and thread-safe; nothing allocates.
 */
#ifndef CC_TRANSITIONS_H
#define CC_TRANSITIONS_H

#include <stdbool.h>

#include "sys/cc.h"

#define CC_SQLSTATE_ILLEGAL_TRANSITION "CC001"

/* X-macro: the one list that generates the enum and the name table. */
#define CC_TICKET_STATES(X) \
	X(QUEUED)           \
	X(PROPOSED)         \
	X(MATCHED)          \
	X(ASSIGNED)         \
	X(COMPLETED)        \
	X(CANCELLED)        \
	X(EXPIRED)          \
	X(FAILED)

enum cc_ticket_state {
#define CC__TICKET_ENUM(name) CC_TICKET_##name,
	CC_TICKET_STATES(CC__TICKET_ENUM)
#undef CC__TICKET_ENUM
	CC_TICKET_STATE_COUNT /* not a state: the number of states */
};

/* Returns the database/wire name ("QUEUED"); "INVALID" for a value outside the enum. */
const char *cc_ticket_state_name(enum cc_ticket_state state);

/*
 * Parses an exact, case-sensitive name ("QUEUED") into *out. Returns 0, or
 * CC_EINVAL for NULL or an unknown name (*out untouched).
 */
int cc_ticket_state_parse(const char *text, enum cc_ticket_state *out) CC_MUST_CHECK;

/* True when a ticket may move from -> to. A state never "moves" to itself; false for invalid values. */
bool cc_ticket_transition_allowed(enum cc_ticket_state from, enum cc_ticket_state to);

/* True when a ticket may be created in this state (QUEUED). */
bool cc_ticket_state_is_initial(enum cc_ticket_state state);

/* True when the state has no exits (COMPLETED, CANCELLED, EXPIRED, FAILED). */
bool cc_ticket_state_is_terminal(enum cc_ticket_state state);

/* True for the states the "one active ticket per player" rule counts. */
bool cc_ticket_state_is_active(enum cc_ticket_state state);

#endif
