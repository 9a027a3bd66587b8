/*
 * fuzz_wire_to_client: every message a client (cc-player) decodes from the
 * server (welcome, refused, kicked, pong, player_info, snapshot, the
 * events, the lobby answers and broadcasts), as it decodes them
 * (cc_wire_decode_from, CC_WIRE_TO_CLIENT). Input: one byte picking the
 * message, then its payload; see fuzz_wire.h for the checks.
 */
#include "fuzz_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_wire_direction(CC_WIRE_TO_CLIENT, data, size);
	return 0;
}
