#include "game/transitions.h"

#include <string.h>

#include "sys/banned.h"

/*
 * The legal moves. Must equal contracts/v1/state-transitions.json and the
 * rows migrations insert into state_transitions (tests/unit/test_transitions.c
 * and tests/integration/test_migrate_db.c compare them); the JSON says why
 * each one exists.
 */
#define TICKET_TRANSITIONS(X)    \
	X(QUEUED, PROPOSED)      \
	X(QUEUED, CANCELLED)     \
	X(QUEUED, EXPIRED)       \
	X(QUEUED, ASSIGNED)      \
	X(PROPOSED, MATCHED)     \
	X(PROPOSED, QUEUED)      \
	X(PROPOSED, CANCELLED)   \
	X(PROPOSED, EXPIRED)     \
	X(MATCHED, ASSIGNED)     \
	X(MATCHED, QUEUED)       \
	X(MATCHED, FAILED)       \
	X(ASSIGNED, COMPLETED)   \
	X(ASSIGNED, QUEUED)      \
	X(ASSIGNED, FAILED)

static const char *const ticket_state_names[CC_TICKET_STATE_COUNT] = {
#define NAME(name) [CC_TICKET_##name] = #name,
	CC_TICKET_STATES(NAME)
#undef NAME
};

static const bool ticket_allowed[CC_TICKET_STATE_COUNT][CC_TICKET_STATE_COUNT] = {
#define ALLOW(from, to) [CC_TICKET_##from][CC_TICKET_##to] = true,
	TICKET_TRANSITIONS(ALLOW)
#undef ALLOW
};

/* True when state is a real enum value (callers may pass anything). */
static bool valid(enum cc_ticket_state state)
{
	return (unsigned)state < CC_TICKET_STATE_COUNT;
}

const char *cc_ticket_state_name(enum cc_ticket_state state)
{
	return valid(state) ? ticket_state_names[state] : "INVALID";
}

int cc_ticket_state_parse(const char *text, enum cc_ticket_state *out)
{
	if (!text)
		return CC_EINVAL;
	for (int i = 0; i < CC_TICKET_STATE_COUNT; i++) {
		if (strcmp(text, ticket_state_names[i]) == 0) {
			*out = (enum cc_ticket_state)i;
			return 0;
		}
	}
	return CC_EINVAL;
}

bool cc_ticket_transition_allowed(enum cc_ticket_state from, enum cc_ticket_state to)
{
	return valid(from) && valid(to) && ticket_allowed[from][to];
}

bool cc_ticket_state_is_initial(enum cc_ticket_state state)
{
	return state == CC_TICKET_QUEUED;
}

bool cc_ticket_state_is_terminal(enum cc_ticket_state state)
{
	if (!valid(state))
		return false;
	for (int to = 0; to < CC_TICKET_STATE_COUNT; to++) {
		if (ticket_allowed[state][to])
			return false;
	}
	return true;
}

bool cc_ticket_state_is_active(enum cc_ticket_state state)
{
	return valid(state) && !cc_ticket_state_is_terminal(state);
}
