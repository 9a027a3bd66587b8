/*
 * cc-player's own-ship prediction and reconciliation (tests/player/predict.c)
 * and its clock sync (tests/player/clocksync.c), against a server played
 * in the test with the real simulation and codec: the client sends input
 * seq t at tick t, the server applies it LEAD ticks later and snapshots
 * every 3 ticks, each reaching the client DELAY ticks after it was taken.
 *
 * A lone ship is fully predictable: the only error left is the snapshot's
 * quantisation carried through the replay, a few millimetres, although
 * the ship moves at up to 35 m/s and each prediction runs LEAD + DELAY
 * ticks ahead of the server. The server holding an input (a stall, with
 * or without the stalled flag), a kickoff and a stopped match are counted
 * apart, never as prediction error; a kickoff the client never hears of
 * shows as metres of error, so the measure is not blind.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"
#include "game/match_lifecycle.h"
#include "game/sim.h"
#include "game/wire.h"
#include "../player/clocksync.h"
#include "../player/predict.h"
#include "sys/banned.h"

#define LEAD 5     /* ticks between sending an input and the server applying it */
#define DELAY 7    /* ticks a snapshot takes to reach the client */
#define TICKS 900
#define MAX_ERR_M 0.005 /* measured 1.5 mm: the quantisation of the snapshot, carried through 12 ticks of replay */

enum scenario {
	S_PLAIN,
	S_HELD,        /* the server holds input 300 for 3 extra ticks, no flag (the stall ended before a snapshot) */
	S_STALLED,     /* the same, and the snapshots during the hold carry the stalled flag */
	S_KICKOFF,     /* a kickoff at tick 402, its message arriving after the snapshots that show it */
	S_KICKOFF_LOST,/* the same kickoff, its message never arriving: the error must show */
	S_STOPPED,     /* FULL_TIME from tick 600: the sim stops */
};

struct run {
	struct pc_predict pp;
	struct pc_predict_stats st;
	struct cc_sim srv;
	struct cc_wire_input sent[TICKS + 1];
	struct cc_wire_snapshot queue[TICKS];
	uint32_t due[TICKS];
	int n_queued, next_deliver;
};

/* The client's controls at tick t: smooth, full range, boost now and then. */
static void controls(uint32_t t, struct cc_sim_input *in)
{
	float a = (float)t * 0.05f;
	in->thrust = (struct cc_sim_vec3){ sinf(a), 0.6f * cosf(a * 0.7f), cosf(a * 0.3f) };
	in->torque = (struct cc_sim_vec3){ 0.5f * sinf(a * 1.3f), cosf(a * 0.9f), 0.3f * sinf(a * 0.4f) };
	in->boost = (t / 60) % 3 == 1;
}

static void snapshot_of(const struct cc_sim *sim, uint32_t tick, uint8_t state, uint16_t ack, uint8_t flags,
			struct cc_wire_snapshot *s)
{
	memset(s, 0, sizeof *s);
	s->tick = tick;
	s->match_state = state;
	cc_wire_body_from_sim(&sim->ball, &s->ball);
	s->player_count = 1;
	s->players[0].slot = 0;
	s->players[0].flags = (uint8_t)(CC_WIRE_PF_CONNECTED | CC_WIRE_PF_HAS_INPUT | flags);
	s->players[0].last_input_seq = ack;
	s->players[0].boost = cc_wire_boost_pack(sim->ships[0].boost);
	cc_wire_body_from_sim(&sim->ships[0].body, &s->players[0].body);
}

static void play(struct run *r, enum scenario sc)
{
	static const uint8_t teams[1] = { 0 };
	uint8_t team_of[CC_WIRE_MAX_PLAYERS];
	memset(team_of, 0xFF, sizeof team_of);
	team_of[0] = 0;
	memset(r, 0, sizeof *r);
	pc_latency_init(&r->st.err_um, 0);
	pc_predict_init(&r->pp, 0, 0, &r->st);
	ck_assert_int_eq(cc_sim_init(&r->srv, 1, teams), 0);
	uint16_t consumed = 0;
	struct cc_sim_input applied = { 0 };
	for (uint32_t t = 1; t <= TICKS; t++) {
		/* The client: one input per tick, predicted as it is sent. */
		struct cc_sim_input c;
		controls(t, &c);
		cc_wire_input_from_sim(&c, &r->sent[t]);
		pc_predict_input(&r->pp, (uint16_t)t, &r->sent[t]);

		/* The server, LEAD ticks behind: consumes one input per tick, except while it holds one. */
		bool hold = (sc == S_HELD || sc == S_STALLED) && t >= 300 + LEAD + 1 && t <= 300 + LEAD + 3;
		uint8_t state = sc == S_STOPPED && t >= 600 ? CC_MATCH_FULL_TIME : CC_MATCH_PLAYING;
		if (t > LEAD && !hold && consumed < TICKS) {
			consumed++;
			cc_wire_input_to_sim(&r->sent[consumed], &applied);
		}
		if (consumed && cc_match_state_runs_sim((enum cc_match_state)state)) {
			struct cc_sim_input in[1] = { applied };
			cc_sim_step(&r->srv, in, NULL);
		}
		if ((sc == S_KICKOFF || sc == S_KICKOFF_LOST) && t == 402)
			cc_sim_kickoff(&r->srv);
		if (consumed && t % 3 == 0) {
			snapshot_of(&r->srv, t, state, consumed, sc == S_STALLED && hold ? CC_WIRE_PF_INPUT_STALLED : 0,
				    &r->queue[r->n_queued]);
			r->due[r->n_queued++] = t + DELAY;
		}
		/* What reaches the client this tick. */
		while (r->next_deliver < r->n_queued && r->due[r->next_deliver] <= t) {
			pc_predict_snapshot(&r->pp, &r->queue[r->next_deliver], team_of, (int64_t)t * 16);
			r->next_deliver++;
		}
		if (sc == S_KICKOFF && t == 402 + DELAY + 8)
			pc_predict_reliable(&r->pp, 403, true);
		pc_predict_poll(&r->pp, (int64_t)t * 16);
	}
	pc_predict_flush(&r->pp);
}

static double max_err(struct run *r)
{
	return pc_latency_percentile_ms(&r->st.err_um, 100); /* micrometres stored: "ms" are metres */
}

START_TEST(test_lone_ship_predicted_to_millimetres)
{
	struct run *r = calloc(1, sizeof *r);
	play(r, S_PLAIN);
	ck_assert_uint_ge(r->st.snapshots, TICKS / 3 - 5);
	ck_assert_uint_eq(r->st.held + r->st.stalled + r->st.kickoff + r->st.stopped, 0);
	ck_assert_uint_le(r->st.unmatched, 1); /* only the first snapshot has nothing to compare with */
	ck_assert_uint_eq(r->st.used + r->st.unmatched, r->st.snapshots);
	ck_assert_msg(max_err(r) < MAX_ERR_M, "max error %.4f m", max_err(r));
	/* Every reconciliation replayed the inputs in flight: LEAD + DELAY of them. */
	ck_assert_uint_ge(r->st.replayed, (uint64_t)(r->st.snapshots - 1) * (LEAD + DELAY));
	pc_latency_release(&r->st.err_um);
	free(r);
}
END_TEST

START_TEST(test_held_input_counted_apart)
{
	struct run *r = calloc(1, sizeof *r);
	play(r, _i == 0 ? S_HELD : S_STALLED);
	if (_i == 0) {
		ck_assert_uint_ge(r->st.held, 1);
		ck_assert_uint_eq(r->st.stalled, 0);
	} else {
		ck_assert_uint_ge(r->st.stalled, 1);
	}
	ck_assert_msg(max_err(r) < MAX_ERR_M, "max error %.4f m (held %u stalled %u)", max_err(r), r->st.held,
		      r->st.stalled);
	ck_assert_uint_ge(r->st.used, TICKS / 3 - 12);
	pc_latency_release(&r->st.err_um);
	free(r);
}
END_TEST

START_TEST(test_kickoff_counted_apart)
{
	struct run *r = calloc(1, sizeof *r);
	play(r, S_KICKOFF);
	ck_assert_uint_ge(r->st.kickoff, 1);
	ck_assert_msg(max_err(r) < MAX_ERR_M, "max error %.4f m with kickoff %u", max_err(r), r->st.kickoff);
	pc_latency_release(&r->st.err_um);
	/* Unheard of, the same kickoff is metres of error: the measure sees it. */
	play(r, S_KICKOFF_LOST);
	ck_assert_uint_eq(r->st.kickoff, 0);
	ck_assert_msg(max_err(r) > 1.0, "an unannounced kickoff left only %.4f m of error", max_err(r));
	pc_latency_release(&r->st.err_um);
	free(r);
}
END_TEST

START_TEST(test_stopped_match_counted_apart)
{
	struct run *r = calloc(1, sizeof *r);
	play(r, S_STOPPED);
	ck_assert_uint_ge(r->st.stopped, 95); /* every snapshot from FULL_TIME on that arrived */
	ck_assert_msg(max_err(r) < MAX_ERR_M, "max error %.4f m", max_err(r));
	pc_latency_release(&r->st.err_um);
	free(r);
}
END_TEST

START_TEST(test_snapshot_without_own_input_ignored)
{
	struct run *r = calloc(1, sizeof *r);
	uint8_t team_of[CC_WIRE_MAX_PLAYERS];
	memset(team_of, 0, sizeof team_of);
	static const uint8_t teams[1] = { 0 };
	pc_latency_init(&r->st.err_um, 0);
	pc_predict_init(&r->pp, 0, 0, &r->st);
	ck_assert_int_eq(cc_sim_init(&r->srv, 1, teams), 0);
	struct cc_wire_snapshot s;
	snapshot_of(&r->srv, 30, CC_MATCH_PLAYING, 0, 0, &s);
	s.players[0].flags &= (uint8_t)~CC_WIRE_PF_HAS_INPUT;
	pc_predict_snapshot(&r->pp, &s, team_of, 0);
	s.players[0].slot = 3; /* and a snapshot without our slot */
	s.players[0].flags |= CC_WIRE_PF_HAS_INPUT;
	pc_predict_snapshot(&r->pp, &s, team_of, 0);
	ck_assert_uint_eq(r->st.snapshots, 0);
	ck_assert(!r->pp.have_world);
	pc_latency_release(&r->st.err_um);
	free(r);
}
END_TEST

/* ---- clock sync ---------------------------------------------------------- */

#define TICK_NS (1e9 / 60)
#define ORIGIN_NS 123456789012LL /* the monotonic time the server's tick 0 was due */

/* The pong the server sends for a ping stamped at sent_ns that reaches it at arrive_ns. */
static struct cc_wire_pong pong_at(int64_t sent_ns, int64_t arrive_ns)
{
	double ticks = (double)(arrive_ns - ORIGIN_NS) / TICK_NS;
	double whole = floor(ticks);
	return (struct cc_wire_pong){ .client_time = pc_clock_stamp(sent_ns), .server_tick = (uint32_t)whole,
				      .tick_fraction = (uint16_t)((ticks - whole) * 65536) };
}

START_TEST(test_clock_lowest_rtt_within_bound)
{
	struct pc_clock c;
	pc_clock_init(&c);
	int64_t t = ORIGIN_NS + 3600LL * 1000000000; /* an hour into the server's life */
	struct pc_clock_estimate e;
	ck_assert(!pc_clock_estimate(&c, &e));
	for (int i = 0; i < 40; i++) {
		/* Asymmetric, varying delays; sample 30 is the quick one. */
		int64_t up = (i == 30 ? 4 : 20 + (i * 37) % 50) * 1000000LL;
		int64_t down = (i == 30 ? 6 : 5 + (i * 53) % 70) * 1000000LL;
		struct cc_wire_pong p = pong_at(t, t + up);
		pc_clock_pong(&c, &p, t + up + down);
		t += 250 * 1000000LL;
	}
	ck_assert(pc_clock_estimate(&c, &e));
	ck_assert_uint_eq(e.window, PC_CLOCK_WINDOW);
	ck_assert_msg(fabs(e.rtt_ms - 10.0) < 0.01, "believed the sample of rtt %.3f ms", e.rtt_ms);
	ck_assert(fabs(e.bound_ms - 5.0) < 0.01);
	double truth = (double)(t - ORIGIN_NS) / TICK_NS;
	double err_ms = (pc_clock_server_tick(&e, t) - truth) * 1000.0 / 60;
	/* The quick sample's asymmetry (4 up, 6 down) puts the estimate 1 ms early; never past the bound. */
	ck_assert_msg(fabs(err_ms) <= e.bound_ms, "error %.3f ms past the bound %.3f ms", err_ms, e.bound_ms);
	ck_assert_msg(fabs(err_ms + 1.0) < 0.05, "error %.3f ms, expected -1 ms", err_ms);
	ck_assert_msg(llabs(e.origin_ns - ORIGIN_NS) < 1100000, "origin off by %lld ns", (long long)(e.origin_ns - ORIGIN_NS));
}
END_TEST

START_TEST(test_clock_stamp_wraps_and_bogus_refused)
{
	struct pc_clock c;
	pc_clock_init(&c);
	/* A ping stamped 100 us before the u32 microsecond counter wraps, answered 8 ms later. */
	int64_t sent = ((int64_t)1 << 32) * 1000 - 100000;
	struct cc_wire_pong p = pong_at(sent, sent + 4000000);
	pc_clock_pong(&c, &p, sent + 8000000);
	struct pc_clock_estimate e;
	ck_assert(pc_clock_estimate(&c, &e));
	ck_assert_msg(fabs(e.rtt_ms - 8.0) < 0.002, "rtt %.3f across the wrap", e.rtt_ms);
	/* A pong stamped in the future (not our ping): an absurd RTT, refused. */
	p.client_time = pc_clock_stamp(sent + 20000000);
	pc_clock_pong(&c, &p, sent + 10000000);
	ck_assert_uint_eq(c.bogus, 1);
	ck_assert_uint_eq(c.pongs, 1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("player_predict");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_lone_ship_predicted_to_millimetres);
	tcase_add_loop_test(tc, test_held_input_counted_apart, 0, 2);
	tcase_add_test(tc, test_kickoff_counted_apart);
	tcase_add_test(tc, test_stopped_match_counted_apart);
	tcase_add_test(tc, test_snapshot_without_own_input_ignored);
	tcase_add_test(tc, test_clock_lowest_rtt_within_bound);
	tcase_add_test(tc, test_clock_stamp_wraps_and_bogus_refused);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
