/*
 * fuzz_replay_file: cc-gameserver's replay log reader (gameserver/replay.h:
 * gs_replay_reader_init + gs_replay_next, exactly what cc-replay-dump runs)
 * over any bytes as a whole file.
 *
 * Invariants: a refusal always says why; every record lies inside the
 * input, in order, with a payload inside its caps and text kinds printable;
 * times never decrease; and the records read, written out again in the
 * documented layout after the input's header, are byte for byte the part
 * of the input the reader accepted (so the reader neither skips nor
 * invents bytes). A clean end means the whole input was accepted.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_support.h"
#include "../../gameserver/replay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void put(uint8_t *p, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gs_replay_reader rd;
	char why[512];
	why[0] = '\0';
	if (gs_replay_reader_init(&rd, data, size, why, sizeof why) != 0) {
		FUZZ_ASSERT(why[0] != '\0');
		return 0;
	}
	uint8_t *again = malloc(size);
	FUZZ_ASSERT(again != NULL);
	memcpy(again, data, GS_REPLAY_HEADER_BYTES);
	size_t off = GS_REPLAY_HEADER_BYTES;
	uint64_t last_t = 0, index = 0;
	struct gs_replay_record r;
	int rc;
	while ((rc = gs_replay_next(&rd, &r, why, sizeof why)) == 0) {
		FUZZ_ASSERT(r.offset == off);
		FUZZ_ASSERT(r.index == index);
		FUZZ_ASSERT(r.len <= GS_REPLAY_MAX_PAYLOAD);
		FUZZ_ASSERT(r.data == data + off + 4 + GS_REPLAY_RECORD_HEAD);
		FUZZ_ASSERT(off + 4 + GS_REPLAY_RECORD_HEAD + r.len <= size);
		FUZZ_ASSERT(r.t_ns >= last_t);
		FUZZ_ASSERT(r.kind >= GS_REPLAY_IN && r.kind <= GS_REPLAY_CLOSED);
		if (r.kind != GS_REPLAY_IN && r.kind != GS_REPLAY_OUT) {
			FUZZ_ASSERT(r.len >= 1 && r.len <= GS_REPLAY_MAX_TEXT);
			for (size_t i = 0; i < r.len; i++)
				FUZZ_ASSERT(r.data[i] >= 0x20 && r.data[i] <= 0x7e);
		}
		uint8_t *p = again + off;
		put(p, GS_REPLAY_RECORD_HEAD + r.len, 4);
		p[4] = (uint8_t)r.kind;
		p[5] = r.channel;
		put(p + 6, r.flags, 2);
		put(p + 8, r.t_ns, 8);
		put(p + 16, r.peer, 8);
		memcpy(p + 24, r.data, r.len);
		off += 4 + GS_REPLAY_RECORD_HEAD + r.len;
		last_t = r.t_ns;
		index++;
	}
	FUZZ_ASSERT(rc == CC_ENOTFOUND || rc == CC_EINVAL);
	if (rc == CC_EINVAL)
		FUZZ_ASSERT(why[0] != '\0');
	else
		FUZZ_ASSERT(off == size);
	FUZZ_ASSERT(memcmp(again, data, off) == 0);
	/* The reader stays on a refused record: asking again gives the same answer. */
	if (rc == CC_EINVAL) {
		char why2[512];
		FUZZ_ASSERT(gs_replay_next(&rd, &r, why2, sizeof why2) == CC_EINVAL);
		FUZZ_ASSERT(strcmp(why, why2) == 0);
	}
	free(again);
	return 0;
}
