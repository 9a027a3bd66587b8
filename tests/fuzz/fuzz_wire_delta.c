/*
 * fuzz_wire_delta: cc_wire_delta_apply (game/wire.h, issue 24) on arbitrary
 * deltas against a base, as a client applies them. Input: byte 0 the
 * base's player count (mod 17), byte 1 base_age, byte 2 where the base's
 * slots start, the rest the delta's bytes. Checks: never a read outside
 * the delta (an exact-size heap copy, ASan), 0 or CC_EINVAL with a fault
 * that names snapshot_delta, a kind (truncated, oversized, malformed) and
 * printable text, *out untouched on a refusal; an accepted delta gives a
 * snapshot the codec encodes, and encoding that snapshot against the base
 * and applying it again gives the same snapshot; the message itself
 * passes fuzz_wire.h's packet checks.
 */
#include "fuzz_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void make_base(struct cc_wire_snapshot *b, uint8_t count, uint8_t first_slot)
{
	memset(b, 0, sizeof *b);
	b->tick = 100000;
	b->match_state = 2;
	b->score[0] = 1;
	b->clock_ticks = 5000;
	b->ball = (struct cc_wire_body){ .rot = 0x40000000u, .angvel = 0x00100401u, .pos = { 0, 1024, 0 }, .vel = { 5, -3, 0 } };
	b->player_count = count;
	for (uint8_t i = 0; i < count; i++) {
		struct cc_wire_player_state *p = &b->players[i];
		p->slot = (uint8_t)((first_slot + i) % CC_WIRE_MAX_PLAYERS);
		p->flags = CC_WIRE_PF_CONNECTED | CC_WIRE_PF_HAS_INPUT;
		p->last_input_seq = (uint16_t)(65530 + i);
		p->boost = (uint8_t)(40 * i);
		p->body = (struct cc_wire_body){ .rot = 0x4ABCDEF1u ^ i, .angvel = 0x12345678u & 0x3FFFFFFFu,
						 .pos = { (int16_t)(1000 * i - 7000), 2000, (int16_t)(-300 * i) },
						 .vel = { (int16_t)(700 - 200 * i), 0, (int16_t)(30 * i) } };
	}
}

/* The full encoding of a snapshot (0 when it does not encode). */
static size_t full_bytes(const struct cc_wire_snapshot *s, uint8_t *buf)
{
	static struct cc_wire_msg m;
	size_t len = 0;
	m.id = CC_MSG_SNAPSHOT;
	m.u.snapshot = *s;
	return cc_wire_encode(&m, buf, CC_WIRE_MAX_PACKET, &len) == 0 ? len : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct cc_wire_snapshot base, out, untouched, again;
	static struct cc_wire_msg m;
	if (size < 3 || size - 3 > CC_WIRE_DELTA_MAX)
		return 0;
	make_base(&base, (uint8_t)(data[0] % (CC_WIRE_MAX_PLAYERS + 1)), data[2]);
	/* Exactly the delta's bytes on the heap, the struct around them: a read past delta_len is an ASan error. */
	size_t n = size - 3;
	size_t head = offsetof(struct cc_wire_snapshot_delta, delta);
	uint8_t *heap = malloc(head + (n ? n : 1));
	FUZZ_ASSERT(heap != NULL);
	struct cc_wire_snapshot_delta *d = (struct cc_wire_snapshot_delta *)(void *)heap;
	d->tick = base.tick + data[1];
	d->base_age = data[1];
	d->delta_len = (uint16_t)n;
	memcpy(heap + head, data + 3, n);
	memset(&out, 0x5A, sizeof out);
	untouched = out;
	struct cc_wire_fault f;
	int rc = cc_wire_delta_apply(&base, d, &out, &f);
	if (rc != 0) {
		FUZZ_ASSERT(rc == CC_EINVAL);
		FUZZ_ASSERT(f.kind == CC_WIRE_FAULT_TRUNCATED || f.kind == CC_WIRE_FAULT_OVERSIZED ||
			    f.kind == CC_WIRE_FAULT_MALFORMED);
		FUZZ_ASSERT(f.id == CC_MSG_SNAPSHOT_DELTA && strncmp(f.text, "snapshot_delta: ", 16) == 0);
		fuzz_wire_fault_sane(&f, n);
		FUZZ_ASSERT(memcmp(&out, &untouched, sizeof out) == 0);
		FUZZ_ASSERT(cc_wire_delta_apply(&base, d, &out, NULL) == CC_EINVAL);
	} else {
		uint8_t a[CC_WIRE_MAX_PACKET], b[CC_WIRE_MAX_PACKET];
		size_t la = full_bytes(&out, a);
		FUZZ_ASSERT(la > 0);
		FUZZ_ASSERT(out.tick == d->tick);
		/* Round trip: the server's encoding of this snapshot against the same base rebuilds it. */
		m.id = CC_MSG_SNAPSHOT_DELTA;
		FUZZ_ASSERT(cc_wire_delta_encode(&base, &out, &m.u.snapshot_delta) == 0);
		FUZZ_ASSERT(cc_wire_delta_apply(&base, &m.u.snapshot_delta, &again, NULL) == 0);
		FUZZ_ASSERT(full_bytes(&again, b) == la && memcmp(a, b, la) == 0);
		/* And the message carrying it passes the packet checks. */
		size_t len = 0;
		FUZZ_ASSERT(cc_wire_encode(&m, a, sizeof a, &len) == 0);
		fuzz_wire_packet(a, len);
	}
	free(heap);
	return 0;
}
