/* fuzz_wire_kicked: the kicked message's payload (the id is prepended); see fuzz_wire.h. */
#include "fuzz_wire.h"

FUZZ_WIRE_MESSAGE_TARGET(CC_MSG_KICKED)
