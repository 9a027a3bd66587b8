/*
 * fuzz_wire_to_server: every message cc-gameserver decodes from untrusted
 * peers (hello, ping, input, spectate, resume, the lobby requests), as it
 * decodes them (cc_wire_decode_from, CC_WIRE_TO_SERVER). Input: one byte
 * picking the message, then its payload; see fuzz_wire.h for the checks.
 */
#include "fuzz_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_wire_direction(CC_WIRE_TO_SERVER, data, size);
	return 0;
}
