/*
 * cc-gameserver's input pipeline (gameserver/wire_glue.h): redundancy covers
 * a lost packet, a sequence is given up only when a newer one proves it lost
 * (the stream is never stranded), the u16 wrap is crossed, a burst is trimmed
 * to the newest inputs, old redundancy is ignored, nothing new holds the last
 * input. Table-driven: each case is a list of packets and, after each, the
 * sequences the next ticks consume.
 */
#include <string.h>

#include "support.h"
#include "../../gameserver/wire_glue.h"

#include "sys/banned.h"

/* A packet: newest wire sequence and how many inputs it carries (newest first). */
struct pkt {
	uint16_t newest;
	uint16_t count;
};

struct step {
	struct pkt pkt;     /* received before the ticks (count 0: nothing received) */
	int ticks;          /* ticks consumed after it */
	uint16_t want_ack;  /* gs_input_ack after those ticks */
	uint64_t want_lost; /* sequences given up so far */
};

struct input_case {
	const char *name;
	struct step steps[8];
	size_t n;
};

/* Each input's throttle is its own sequence mod 100, so a consumed input names itself. */
static void receive(struct gs_input_state *st, struct pkt p)
{
	struct cc_wire_input_msg m;
	memset(&m, 0, sizeof m);
	m.newest_seq = p.newest;
	m.count = p.count;
	for (uint16_t i = 0; i < p.count; i++)
		m.inputs[i].thrust[2] = (int8_t)((uint16_t)(p.newest - i) % 100);
	gs_input_receive(st, &m);
}

static const struct input_case cases[] = {
	{ "in order, one per packet", { { { 1, 1 }, 1, 1, 0 }, { { 2, 1 }, 1, 2, 0 }, { { 3, 1 }, 1, 3, 0 } }, 3 },
	{ "a lost packet covered by the next one's redundancy",
	  { { { 1, 1 }, 1, 1, 0 }, { { 3, 3 }, 1, 2, 0 }, { { 0, 0 }, 1, 3, 0 } }, 3 },
	{ "a gap no redundancy covers: given up only when a newer input is there",
	  { { { 1, 1 }, 1, 1, 0 }, { { 4, 1 }, 1, 4, 2 }, { { 0, 0 }, 1, 4, 2 } }, 3 },
	{ "nothing new: the last input holds, the ack stays",
	  { { { 5, 1 }, 1, 5, 0 }, { { 0, 0 }, 3, 5, 0 }, { { 6, 2 }, 1, 6, 0 } }, 3 },
	{ "across the u16 wrap", { { { 65534, 1 }, 1, 65534, 0 }, { { 65535, 2 }, 1, 65535, 0 },
				  { { 1, 3 }, 1, 0, 0 }, { { 0, 0 }, 1, 1, 0 } }, 4 },
	{ "a burst is trimmed to the newest GS_INPUT_BACKLOG_MAX",
	  { { { 1, 1 }, 1, 1, 0 }, { { 20, 16 }, 1, 13, 11 }, { { 0, 0 }, 7, 20, 11 } }, 3 },
	{ "an old packet arriving late changes nothing",
	  { { { 10, 4 }, 1, 10, 0 }, { { 8, 4 }, 1, 10, 0 }, { { 11, 1 }, 1, 11, 0 } }, 3 },
	{ "a long stall of the client: a far newer sequence is accepted, never a lock-out",
	  { { { 100, 1 }, 1, 100, 0 }, { { 30100, 1 }, 1, 30100, 29999 }, { { 30101, 2 }, 1, 30101, 29999 } }, 3 },
};

START_TEST(test_input_pipeline)
{
	const struct input_case *c = &cases[_i];
	struct gs_input_state st;
	gs_input_state_init(&st);
	ck_assert_ptr_null(gs_input_next(&st));
	for (size_t i = 0; i < c->n; i++) {
		const struct step *s = &c->steps[i];
		if (s->pkt.count)
			receive(&st, s->pkt);
		const struct gs_input *in = NULL;
		for (int t = 0; t < s->ticks; t++)
			in = gs_input_next(&st);
		ck_assert_msg(in != NULL, "%s, step %zu: no input to apply", c->name, i);
		ck_assert_msg(gs_input_ack(&st) == s->want_ack, "%s, step %zu: ack %u, want %u", c->name, i,
			      (unsigned)gs_input_ack(&st), (unsigned)s->want_ack);
		ck_assert_msg(in->throttle == (int8_t)(s->want_ack % 100), "%s, step %zu: applied the input of %d, want %u",
			      c->name, i, in->throttle, (unsigned)(s->want_ack % 100));
		ck_assert_msg(st.lost == s->want_lost, "%s, step %zu: %llu lost, want %llu", c->name, i,
			      (unsigned long long)st.lost, (unsigned long long)s->want_lost);
	}
}
END_TEST

/* The token refusals map onto the wire's short list; the log keeps the precise name. */
START_TEST(test_refusal_reasons)
{
	static const struct {
		const char *refusal;
		uint16_t reason;
	} map[] = {
		{ "malformed", CC_REASON_BAD_TOKEN },	     { "bad_version", CC_REASON_BAD_TOKEN },
		{ "unknown_key", CC_REASON_BAD_TOKEN },	     { "bad_signature", CC_REASON_BAD_TOKEN },
		{ "expired", CC_REASON_EXPIRED_TOKEN },	     { "wrong_match", CC_REASON_WRONG_MATCH },
		{ "wrong_server", CC_REASON_WRONG_MATCH },   { "wrong_slot", CC_REASON_NOT_IN_ROSTER },
		{ "not_in_roster", CC_REASON_NOT_IN_ROSTER }, { "wrong_generation", CC_REASON_NOT_IN_ROSTER },
		{ "token_replayed", CC_REASON_TOKEN_REPLAYED },
	};
	for (size_t i = 0; i < CC_ARRAY_LEN(map); i++)
		ck_assert_msg(gs_wire_reason_for_refusal(map[i].refusal) == map[i].reason, "%s -> %s, want %s",
			      map[i].refusal, cc_wire_reason_name(gs_wire_reason_for_refusal(map[i].refusal)),
			      cc_wire_reason_name(map[i].reason));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gs_input");
	TCase *tc = tcase_create("core");
	tcase_add_loop_test(tc, test_input_pipeline, 0, (int)CC_ARRAY_LEN(cases));
	tcase_add_test(tc, test_refusal_reasons);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
