/*
 * cc-gameserver's input pipeline (gameserver/input.h): redundancy covers a
 * lost packet, a gap is given up only after newer input arrived and the
 * bounded wait passed (the stream is never stranded), the u16 wrap is
 * crossed, a burst is cut to the target depth and persistent extra depth is
 * drained, old redundancy is ignored, nothing new holds the last input and
 * sets the stalled bit, and the sequence-range guard drops an isolated wild
 * sequence, resyncs a live stream that jumped (client frozen), and bounds a
 * hostile peer that pushes its sequence as far as it may. Table-driven: each
 * case is a list of packets and, after each, what the next ticks consume.
 */
#include <string.h>

#include "support.h"
#include "../../gameserver/input.h"
#include "../../gameserver/match.h"
#include "../../gameserver/wire_glue.h"

#include "sys/banned.h"

/* A packet: newest wire sequence and how many inputs it carries (newest first). */
struct pkt {
	uint16_t newest;
	uint16_t count;
};

struct step {
	struct pkt pkt;       /* received before the ticks (count 0: nothing received) */
	int ticks;            /* ticks consumed after it */
	uint16_t want_ack;    /* gs_input_ack after those ticks */
	uint64_t want_lost;   /* gaps given up so far */
	uint64_t want_skipped; /* inputs skipped by a burst cut or the drain so far */
	int want_stalled;     /* gs_input_stalled after those ticks */
};

struct input_case {
	const char *name;
	struct step steps[8];
	size_t n;
	int64_t want_oor, want_resyncs; /* out-of-range messages and resyncs at the end */
};

/* Each input's throttle is its own sequence mod 100, so a consumed input names itself. */
static bool receive(struct gs_input_state *st, struct pkt p)
{
	struct cc_wire_input_msg m;
	memset(&m, 0, sizeof m);
	m.newest_seq = p.newest;
	m.count = p.count;
	for (uint16_t i = 0; i < p.count; i++)
		m.inputs[i].thrust[2] = (int8_t)((uint16_t)(p.newest - i) % 100);
	return gs_input_receive(st, &m);
}

/* Default options: target depth 1, max depth 8, drain window 30 ticks, gap wait 2 ticks. */
static const struct input_case cases[] = {
	{ "in order, one per packet", { { { 1, 1 }, 1, 1, 0, 0, 0 }, { { 2, 1 }, 1, 2, 0, 0, 0 }, { { 3, 1 }, 1, 3, 0, 0, 0 } }, 3, 0, 0 },
	{ "a lost packet covered by the next one's redundancy",
	  { { { 1, 1 }, 1, 1, 0, 0, 0 }, { { 3, 3 }, 1, 2, 0, 0, 0 }, { { 0, 0 }, 1, 3, 0, 0, 0 } }, 3, 0, 0 },
	{ "a gap no redundancy covers: waited for 2 ticks (held, stalled), then given up",
	  { { { 1, 1 }, 1, 1, 0, 0, 0 }, { { 4, 1 }, 2, 1, 0, 0, 1 }, { { 0, 0 }, 1, 4, 2, 0, 0 }, { { 0, 0 }, 1, 4, 2, 0, 1 } }, 4, 0, 0 },
	{ "a gap filled by a reordered packet within the wait: nothing lost",
	  { { { 1, 1 }, 1, 1, 0, 0, 0 }, { { 4, 1 }, 1, 1, 0, 0, 1 }, { { 3, 2 }, 1, 2, 0, 0, 0 }, { { 0, 0 }, 2, 4, 0, 0, 0 } }, 4, 0, 0 },
	{ "nothing new: the last input holds, the ack stays, the stream is stalled, then resumes",
	  { { { 5, 1 }, 1, 5, 0, 0, 0 }, { { 0, 0 }, 3, 5, 0, 0, 1 }, { { 6, 2 }, 1, 6, 0, 0, 0 } }, 3, 0, 0 },
	{ "across the u16 wrap", { { { 65534, 1 }, 1, 65534, 0, 0, 0 }, { { 65535, 2 }, 1, 65535, 0, 0, 0 },
				  { { 1, 3 }, 1, 0, 0, 0, 0 }, { { 0, 0 }, 1, 1, 0, 0, 0 } }, 4, 0, 0 },
	{ "a burst of loss (40 packets): the stream continues, the backlog cut to the target depth",
	  { { { 1, 1 }, 1, 1, 0, 0, 0 }, { { 45, 8 }, 1, 44, 0, 42, 0 }, { { 46, 8 }, 1, 45, 0, 42, 0 }, { { 47, 8 }, 1, 46, 0, 42, 0 } }, 4, 0, 0 },
	{ "a backlog that arrived at once (20 inputs) is cut to the target depth: no lasting latency",
	  { { { 1, 1 }, 1, 1, 0, 0, 0 }, { { 21, 16 }, 1, 20, 0, 18, 0 }, { { 0, 0 }, 1, 21, 0, 18, 0 }, { { 0, 0 }, 1, 21, 0, 18, 1 } }, 4, 0, 0 },
	{ "an old packet arriving late changes nothing",
	  { { { 10, 4 }, 1, 10, 0, 0, 0 }, { { 8, 4 }, 1, 10, 0, 0, 1 }, { { 11, 1 }, 1, 11, 0, 0, 0 } }, 3, 0, 0 },
	{ "client frozen, resumes 30000 ahead (out of range): one message dropped, the next resyncs",
	  { { { 100, 1 }, 1, 100, 0, 0, 0 }, { { 30100, 1 }, 1, 100, 0, 0, 1 }, { { 30101, 2 }, 1, 30101, 0, 0, 0 },
	    { { 30102, 3 }, 1, 30102, 0, 0, 0 } }, 4, 1, 1 },
	{ "client frozen 10 min, resumes 'behind' by the wrap (-1000): dropped once, then resynced",
	  { { { 100, 1 }, 1, 100, 0, 0, 0 }, { { 64636, 1 }, 1, 100, 0, 0, 1 }, { { 64637, 2 }, 1, 64637, 0, 0, 0 },
	    { { 64638, 2 }, 1, 64638, 0, 0, 0 } }, 4, 1, 1 },
	{ "a hostile isolated jump is dropped; the stream goes on; two wild jumps do not resync",
	  { { { 10, 1 }, 1, 10, 0, 0, 0 }, { { 40010, 1 }, 1, 10, 0, 0, 1 }, { { 11, 2 }, 1, 11, 0, 0, 0 },
	    { { 20000, 1 }, 0, 11, 0, 0, 0 }, { { 60000, 1 }, 1, 11, 0, 0, 1 }, { { 12, 2 }, 1, 12, 0, 0, 0 } }, 6, 3, 0 },
	{ "a far newer sequence within the window (client frozen 5 s) is taken at once",
	  { { { 100, 1 }, 1, 100, 0, 0, 0 }, { { 400, 4 }, 1, 399, 0, 298, 0 }, { { 401, 4 }, 1, 400, 0, 298, 0 } }, 3, 0, 0 },
};

START_TEST(test_input_pipeline)
{
	const struct input_case *c = &cases[_i];
	struct gs_input_state st;
	gs_input_state_init(&st, NULL);
	ck_assert_ptr_null(gs_input_next(&st));
	ck_assert_msg(gs_input_stalled(&st), "before any input the stream counts as stalled");
	for (size_t i = 0; i < c->n; i++) {
		const struct step *s = &c->steps[i];
		if (s->pkt.count)
			(void)receive(&st, s->pkt);
		const struct gs_input *in = NULL;
		for (int t = 0; t < s->ticks; t++)
			in = gs_input_next(&st);
		ck_assert_msg(gs_input_ack(&st) == s->want_ack, "%s, step %zu: ack %u, want %u", c->name, i,
			      (unsigned)gs_input_ack(&st), (unsigned)s->want_ack);
		if (s->ticks) {
			ck_assert_msg(in != NULL, "%s, step %zu: no input to apply", c->name, i);
			ck_assert_msg(in->throttle == (int8_t)(s->want_ack % 100),
				      "%s, step %zu: applied the input of %d, want %u", c->name, i, in->throttle,
				      (unsigned)(s->want_ack % 100));
			ck_assert_msg(gs_input_stalled(&st) == (s->want_stalled != 0), "%s, step %zu: stalled %d, want %d",
				      c->name, i, gs_input_stalled(&st), s->want_stalled);
		}
		ck_assert_msg(st.lost == s->want_lost, "%s, step %zu: %llu lost, want %llu", c->name, i,
			      (unsigned long long)st.lost, (unsigned long long)s->want_lost);
		ck_assert_msg(st.skipped == s->want_skipped, "%s, step %zu: %llu skipped, want %llu", c->name, i,
			      (unsigned long long)st.skipped, (unsigned long long)s->want_skipped);
	}
	ck_assert_msg((int64_t)st.out_of_range == c->want_oor, "%s: %llu out of range, want %lld", c->name,
		      (unsigned long long)st.out_of_range, (long long)c->want_oor);
	ck_assert_msg((int64_t)st.resyncs == c->want_resyncs, "%s: %llu resyncs, want %lld", c->name,
		      (unsigned long long)st.resyncs, (long long)c->want_resyncs);
}
END_TEST

/*
 * The drain: a client whose inputs persistently sit 2 deep (a burst it never
 * caught up) loses the extra latency within one drain window; one whose
 * depth dips to the target sometimes (jitter) keeps it.
 */
START_TEST(test_drain)
{
	struct gs_input_state st;
	gs_input_state_init(&st, NULL);
	uint16_t seq = 1;
	(void)receive(&st, (struct pkt){ seq, 1 });
	(void)gs_input_next(&st);
	seq += 3; /* two extra inputs arrive at once: depth 3 before the tick, 2 after */
	(void)receive(&st, (struct pkt){ seq, 4 });
	int first_at_target = -1;
	for (int t = 0; t < 100; t++) {
		(void)gs_input_next(&st);
		if (first_at_target < 0 && gs_input_depth(&st) <= 1)
			first_at_target = t;
		seq++;
		(void)receive(&st, (struct pkt){ seq, 4 });
	}
	/* The window that saw the start (depth 0) drains nothing; the next one does. */
	ck_assert_msg(first_at_target >= 0 && first_at_target <= 61, "depth reached the target after %d ticks, want <= 61",
		      first_at_target);
	ck_assert_msg(gs_input_depth(&st) == 2, "depth (after the next receive) %lld, want 2 (target 1 + the new one)",
		      (long long)gs_input_depth(&st));
	ck_assert_uint_eq(st.lost, 0);
	ck_assert_uint_eq(st.skipped, 1);

	/* Jitter: depth alternates 0 and 1 after each tick: nothing is skipped. */
	gs_input_state_init(&st, NULL);
	seq = 1;
	uint64_t consumed = 0;
	for (int t = 0; t < 300; t++) {
		if (t % 2 == 0) {
			(void)receive(&st, (struct pkt){ seq, 4 });
		} else {
			seq += 2;
			(void)receive(&st, (struct pkt){ seq, 4 });
		}
		(void)gs_input_next(&st);
		consumed++;
	}
	ck_assert_uint_eq(st.skipped, 0);
	ck_assert_uint_eq(st.lost, 0);
}
END_TEST

/*
 * A hostile peer pushes its sequence as far as the guard lets it, message
 * after message, past the point where a 32-bit unwrapped count wraps (2^32 /
 * GS_INPUT_MAX_AHEAD messages): its stream never freezes, and its honest
 * continuation is still consumed. Then wild jumps (never a small step) are
 * all dropped without a resync.
 */
START_TEST(test_hostile_jump_bounded)
{
	struct gs_input_state st;
	gs_input_state_init(&st, NULL);
	uint16_t seq = 1;
	(void)receive(&st, (struct pkt){ seq, 2 });
	(void)gs_input_next(&st);
	const long n = (long)((1LL << 32) / GS_INPUT_MAX_AHEAD) + 1000;
	for (long i = 0; i < n; i++) {
		seq = (uint16_t)(seq + GS_INPUT_MAX_AHEAD);
		if (!receive(&st, (struct pkt){ seq, 2 }))
			ck_abort_msg("message %ld (+%d) refused: the guard's window is not what input.h says", i,
				     GS_INPUT_MAX_AHEAD);
		if (i % 64 == 0 || i >= n - 4)
			(void)gs_input_next(&st);
	}
	ck_assert_msg(gs_input_ack(&st) == (uint16_t)(seq - 1), "ack %u after %ld jumps, want %u", (unsigned)gs_input_ack(&st),
		      n, (unsigned)(uint16_t)(seq - 1));
	for (int k = 1; k <= 3; k++) {
		(void)receive(&st, (struct pkt){ (uint16_t)(seq + k), 2 });
		(void)gs_input_next(&st);
	}
	ck_assert_msg(gs_input_ack(&st) == (uint16_t)(seq + 2), "the stream froze after %ld hostile jumps: ack %u, want %u",
		      n, (unsigned)gs_input_ack(&st), (unsigned)(uint16_t)(seq + 2));
	ck_assert_msg(st.newest > 0, "the unwrapped count wrapped");
	uint64_t oor = st.out_of_range;
	for (int i = 0; i < 1000; i++)
		(void)receive(&st, (struct pkt){ (uint16_t)(seq + 2 + (i % 2 ? 40000 : 20000)), 1 });
	ck_assert_uint_eq(st.out_of_range - oor, 1000);
	ck_assert_uint_eq(st.resyncs, 0);
}
END_TEST

/*
 * The snapshot carries the pipeline's state per player: has_input and the
 * ack once an input was consumed, input_stalled while a connected player's
 * stream ran dry (the server holds its last input), never for a slot with
 * nobody connected.
 */
START_TEST(test_snapshot_stalled_bit)
{
	struct gs_match_options o = { .n_slots = 2, .expected = 2, .match_seconds = 60, .warmup_seconds = 1,
				      .connect_window_seconds = 1, .goal_pause_seconds = 3, .overtime_max_seconds = 60 };
	o.teams[1] = 1;
	struct gs_match *match = gs_match_create(&o);
	ck_assert_ptr_nonnull(match);
	struct gs_input_state st[2];
	gs_input_state_init(&st[0], NULL);
	gs_input_state_init(&st[1], NULL);
	const struct gs_input_state *inputs[GS_MATCH_MAX_SLOTS] = { &st[0], &st[1] };
	bool connected[GS_MATCH_MAX_SLOTS] = { true, false };
	struct cc_wire_msg m;

	(void)receive(&st[0], (struct pkt){ 7, 1 });
	(void)gs_input_next(&st[0]);
	(void)gs_input_next(&st[1]);
	gs_wire_snapshot(&m, match, connected, inputs);
	ck_assert_uint_eq(m.u.snapshot.players[0].flags & (CC_WIRE_PF_INPUT_STALLED | CC_WIRE_PF_HAS_INPUT), CC_WIRE_PF_HAS_INPUT);
	ck_assert_uint_eq(m.u.snapshot.players[0].last_input_seq, 7);
	ck_assert_uint_eq(m.u.snapshot.players[1].flags & (CC_WIRE_PF_INPUT_STALLED | CC_WIRE_PF_HAS_INPUT), 0);

	(void)gs_input_next(&st[0]); /* nothing new: held */
	gs_wire_snapshot(&m, match, connected, inputs);
	ck_assert_uint_eq(m.u.snapshot.players[0].flags & (CC_WIRE_PF_INPUT_STALLED | CC_WIRE_PF_HAS_INPUT),
			  CC_WIRE_PF_INPUT_STALLED | CC_WIRE_PF_HAS_INPUT);
	ck_assert_uint_eq(m.u.snapshot.players[0].last_input_seq, 7);

	(void)receive(&st[0], (struct pkt){ 8, 2 });
	(void)gs_input_next(&st[0]);
	gs_wire_snapshot(&m, match, connected, inputs);
	ck_assert_uint_eq(m.u.snapshot.players[0].flags & CC_WIRE_PF_INPUT_STALLED, 0);
	ck_assert_uint_eq(m.u.snapshot.players[0].last_input_seq, 8);
	gs_match_free(match);
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
	tcase_add_test(tc, test_drain);
	tcase_add_test(tc, test_snapshot_stalled_bit);
	tcase_add_test(tc, test_hostile_jump_bounded);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_refusal_reasons);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
