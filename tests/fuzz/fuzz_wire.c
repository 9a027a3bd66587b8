/*
 * fuzz_wire: cc_wire_decode (and cc_wire_decode_from, cc_wire_encode,
 * cc_wire_format) on arbitrary packets of any id: the checks of
 * fuzz_wire.h, plus cc_wire_peek_hello_version. The per-message targets
 * fuzz_wire_<message>.c go deeper into one message each.
 */
#include "fuzz_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* An exact-size heap copy, so ASan sees any read past the packet. */
	uint8_t *pkt = malloc(size ? size : 1);
	FUZZ_ASSERT(pkt != NULL);
	if (size)
		memcpy(pkt, data, size);
	fuzz_wire_packet(size ? pkt : NULL, size);
	uint16_t v;
	FUZZ_ASSERT(cc_wire_peek_hello_version(pkt, size, &v) == (size >= 4 && pkt[0] == 1 && pkt[1] == 0));
	free(pkt);
	return 0;
}
