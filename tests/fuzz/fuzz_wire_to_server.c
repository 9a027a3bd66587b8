/*
 * fuzz_wire_to_server: every message cc-gameserver decodes from untrusted
 * peers (hello, ping, input, spectate, resume, the lobby requests), as it
 * decodes them (cc_wire_decode_from, CC_WIRE_TO_SERVER). Input: one byte
 * picking the message, then its payload; see fuzz_wire.h for the checks.
 *
 * Community mode's reading of a refused packet (gameserver/play.h) runs on
 * every refusal too: a lobby request it answers invalid_parameters carries
 * its request number inside the packet, at bytes 2-3 (where an accepted
 * one's decoded `request` is), and a hello it refuses invalid_name is a
 * name hello (auth 2) long enough to hold its tick rate.
 */
#include "fuzz_wire.h"
#include "../../gameserver/play.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The request number of an accepted lobby request. */
static int request_of(const struct cc_wire_msg *m)
{
	switch (m->id) {
	case CC_MSG_SET_NAME: return m->u.set_name.request;
	case CC_MSG_LOBBY_LIST_REQUEST: return m->u.lobby_list_request.request;
	case CC_MSG_LOBBY_CREATE: return m->u.lobby_create.request;
	case CC_MSG_LOBBY_JOIN: return m->u.lobby_join.request;
	case CC_MSG_LOBBY_LEAVE: return m->u.lobby_leave.request;
	case CC_MSG_LOBBY_SET_READY: return m->u.lobby_set_ready.request;
	default: return -1;
	}
}

static void community_reading(const uint8_t *data, size_t size)
{
	size_t n, count = 0;
	const struct cc_wire_msg_info *t = cc_wire_messages(&n);
	for (size_t i = 0; i < n; i++)
		count += t[i].direction == CC_WIRE_TO_SERVER;
	size_t pick = data[0] % count;
	const struct cc_wire_msg_info *info = NULL;
	for (size_t i = 0; i < n && !info; i++)
		if (t[i].direction == CC_WIRE_TO_SERVER && pick-- == 0)
			info = &t[i];
	FUZZ_ASSERT(info != NULL);
	size_t len = size + 1;
	uint8_t *pkt = malloc(len);
	FUZZ_ASSERT(pkt != NULL);
	pkt[0] = (uint8_t)(info->id & 0xFF);
	pkt[1] = (uint8_t)(info->id >> 8);
	memcpy(pkt + 2, data + 1, size - 1);
	for (uint8_t ch = 0; ch < CC_WIRE_CHANNELS; ch++) {
		struct cc_wire_msg m;
		struct cc_wire_fault f;
		int rc = cc_wire_decode_from(pkt, len, CC_WIRE_TO_SERVER, ch, &m, &f);
		uint16_t request = 0, tick_rate = 0;
		if (rc == 0) {
			int want = request_of(&m);
			if (want >= 0)
				FUZZ_ASSERT(len >= 4 && (pkt[2] | pkt[3] << 8) == want);
			continue;
		}
		if (gs_play_lobby_refusable(pkt, len, ch, &f, &request)) {
			FUZZ_ASSERT(len >= 4 && ch == CC_WIRE_CH_CONTROL && f.kind != CC_WIRE_FAULT_TRUNCATED);
			FUZZ_ASSERT(f.id >= 0x0300 && f.id <= 0x037F && request == (pkt[2] | pkt[3] << 8));
		}
		if (gs_play_hello_bad_name(pkt, len, &f, &tick_rate))
			FUZZ_ASSERT(len >= 9 && f.id == CC_MSG_HELLO && pkt[6] == CC_WIRE_AUTH_NAME &&
				    tick_rate == (pkt[4] | pkt[5] << 8));
	}
	free(pkt);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_wire_direction(CC_WIRE_TO_SERVER, data, size);
	if (size >= 1 && size <= CC_WIRE_MAX_PACKET)
		community_reading(data, size);
	return 0;
}
