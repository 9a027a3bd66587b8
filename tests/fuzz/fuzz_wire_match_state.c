/* fuzz_wire_match_state: the match_state message's payload (the id is prepended); see fuzz_wire.h. */
#include "fuzz_wire.h"

FUZZ_WIRE_MESSAGE_TARGET(CC_MSG_MATCH_STATE)
