/*
 * fuzz_wire.h - the checks every game-wire fuzz target makes on a packet
 * (tests/fuzz/fuzz_wire.c, fuzz_wire_to_server.c, fuzz_wire_to_client.c): cc_wire_decode never reads outside the packet
 * (ASan), answers 0, CC_EINVAL or CC_ENOTFOUND with a fault that agrees
 * (kind, printable NUL-terminated text, an offset inside the packet), and
 * whatever it accepts is canonical: it encodes back to exactly the same
 * bytes, prints with cc_wire_format, its bodies dequantise to finite values
 * and unit quaternions, and the packet one byte shorter is truncated.
 * cc_wire_decode_from on each channel and direction agrees with it.
 */
#ifndef CC_FUZZ_WIRE_H
#define CC_FUZZ_WIRE_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "game/wire.h"
#include "fuzz_support.h"

static inline void fuzz_wire_fault_sane(const struct cc_wire_fault *f, size_t size)
{
	size_t n = strnlen(f->text, sizeof(f->text));
	FUZZ_ASSERT(n < sizeof(f->text));
	for (size_t i = 0; i < n; i++)
		FUZZ_ASSERT(f->text[i] >= 0x20 && f->text[i] < 0x7F);
	FUZZ_ASSERT(f->offset <= size);
	FUZZ_ASSERT(f->field != NULL && f->why != NULL);
}

static inline void fuzz_wire_body_sane(const struct cc_wire_body *b)
{
	struct cc_wire_pose p;
	double norm = 0;
	cc_wire_dequantise(b, &p);
	for (int i = 0; i < 3; i++)
		FUZZ_ASSERT(isfinite(p.pos[i]) && isfinite(p.vel[i]) && isfinite(p.angvel[i]));
	for (int i = 0; i < 4; i++) {
		FUZZ_ASSERT(isfinite(p.rot[i]));
		norm += (double)p.rot[i] * p.rot[i];
	}
	FUZZ_ASSERT(fabs(norm - 1) < 1e-5);
}

static inline void fuzz_wire_bodies_sane(const struct cc_wire_msg *m)
{
	if (m->id == CC_MSG_SNAPSHOT) {
		fuzz_wire_body_sane(&m->u.snapshot.ball);
		for (size_t i = 0; i < m->u.snapshot.player_count; i++)
			fuzz_wire_body_sane(&m->u.snapshot.players[i].body);
	} else if (m->id == CC_MSG_KICKOFF) {
		fuzz_wire_body_sane(&m->u.kickoff.ball);
		for (size_t i = 0; i < m->u.kickoff.ship_count; i++)
			fuzz_wire_body_sane(&m->u.kickoff.ships[i].body);
	}
}

/* Every check above on one packet of size bytes (data may be NULL only when size is 0). */
static inline void fuzz_wire_packet(const uint8_t *data, size_t size)
{
	struct cc_wire_msg m;
	struct cc_wire_fault f;
	int rc = cc_wire_decode(data, size, &m, &f);
	FUZZ_ASSERT(rc == 0 || rc == CC_EINVAL || rc == CC_ENOTFOUND);
	FUZZ_ASSERT((rc == 0) == (f.kind == CC_WIRE_FAULT_NONE));
	FUZZ_ASSERT((rc == CC_ENOTFOUND) == (f.kind == CC_WIRE_FAULT_UNKNOWN));
	if (rc != 0)
		fuzz_wire_fault_sane(&f, size);

	/* decode_from agrees: the same verdict on the message's own channel and direction, malformed elsewhere. */
	const struct cc_wire_msg_info *info = size >= 2 ? cc_wire_msg_info((uint16_t)(data[0] | data[1] << 8)) : NULL;
	for (uint8_t ch = 0; ch < CC_WIRE_CHANNELS; ch++) {
		for (int dir = CC_WIRE_TO_SERVER; dir <= CC_WIRE_TO_CLIENT; dir++) {
			struct cc_wire_msg m2;
			struct cc_wire_fault f2;
			int rc2 = cc_wire_decode_from(data, size, (enum cc_wire_direction)dir, ch, &m2, &f2);
			if (info && (info->channel != ch || info->direction != (enum cc_wire_direction)dir))
				FUZZ_ASSERT(rc2 == CC_EINVAL && f2.kind == CC_WIRE_FAULT_MALFORMED);
			else
				FUZZ_ASSERT(rc2 == rc && f2.kind == f.kind);
		}
	}
	if (rc != 0)
		return;

	/* Canonical: one byte string per message. */
	uint8_t again[CC_WIRE_MAX_PACKET];
	size_t len = 0;
	FUZZ_ASSERT(cc_wire_encode(&m, again, sizeof(again), &len) == 0);
	FUZZ_ASSERT(len == size && memcmp(again, data, size) == 0);
	/* Too small a buffer is refused, never overrun (ASan watches the heap copy). */
	uint8_t *small = malloc(size - 1);
	FUZZ_ASSERT(small != NULL);
	FUZZ_ASSERT(cc_wire_encode(&m, small, size - 1, &len) == CC_ETOOBIG);
	/* One byte short is truncated. */
	memcpy(small, data, size - 1);
	FUZZ_ASSERT(cc_wire_decode(small, size - 1, &m, &f) == CC_EINVAL && f.kind == CC_WIRE_FAULT_TRUNCATED);
	free(small);
	FUZZ_ASSERT(cc_wire_decode(data, size, &m, &f) == 0);

	char text[8192];
	size_t need = cc_wire_format(&m, text, sizeof(text));
	FUZZ_ASSERT(need > 0 && need < sizeof(text) && strlen(text) == need);
	fuzz_wire_bodies_sane(&m);
}

/*
 * A target for the messages one side decodes: the first input byte picks
 * one of the messages going in direction dir (modulo their count), the rest
 * is its payload (the id is prepended), so every input exercises a
 * message's fields, and decode_from is called as that side calls it.
 */
static inline void fuzz_wire_direction(enum cc_wire_direction dir, const uint8_t *data, size_t size)
{
	size_t n, count = 0;
	const struct cc_wire_msg_info *t = cc_wire_messages(&n);
	if (size < 1 || size > CC_WIRE_MAX_PACKET)
		return;
	for (size_t i = 0; i < n; i++)
		count += t[i].direction == dir;
	size_t pick = data[0] % count;
	const struct cc_wire_msg_info *info = NULL;
	for (size_t i = 0; i < n && !info; i++)
		if (t[i].direction == dir && pick-- == 0)
			info = &t[i];
	FUZZ_ASSERT(info != NULL);
	size_t len = size - 1 + 2;
	uint8_t *pkt = malloc(len);
	FUZZ_ASSERT(pkt != NULL);
	pkt[0] = (uint8_t)(info->id & 0xFF);
	pkt[1] = (uint8_t)(info->id >> 8);
	memcpy(pkt + 2, data + 1, size - 1);
	fuzz_wire_packet(pkt, len);
	struct cc_wire_msg m;
	struct cc_wire_fault f;
	int rc = cc_wire_decode_from(pkt, len, dir, (uint8_t)info->channel, &m, &f);
	FUZZ_ASSERT(rc == 0 || (rc == CC_EINVAL && f.kind != CC_WIRE_FAULT_UNKNOWN));
	free(pkt);
}

#endif
