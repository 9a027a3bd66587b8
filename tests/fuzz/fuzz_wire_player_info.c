/* fuzz_wire_player_info: the player_info message's payload (the id is prepended); see fuzz_wire.h. */
#include "fuzz_wire.h"

FUZZ_WIRE_MESSAGE_TARGET(CC_MSG_PLAYER_INFO)
