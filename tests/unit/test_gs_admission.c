/*
 * cc-gameserver's slot table (gameserver/admission.h, issue 12): real
 * tokens signed with a real key set, a real roster. The reservation lapses
 * at exactly release + 30 s (29 999 ms: still reserved; 30 000 ms: lapsed,
 * reported once); a resume needs the token of the same identity and that
 * identity's latest resume key; it takes over a live session (the older
 * holder is named as displaced); another player's token with the victim's
 * key, a stale key, or a lapsed reservation are refused resume_refused;
 * a hello of the same identity takes a reserved slot back; the replay
 * rule still holds for a hello while the slot is live. Also the match's
 * drivers (gameserver/match.h): away ships stay in play, a queued entry
 * applies at the next kickoff, bots are flagged.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "support.h"
#include "../../gameserver/admission.h"
#include "../../gameserver/match.h"
#include "game/match_lifecycle.h"
#include "game/sim.h"

#include "sys/banned.h"

#define RESERVE_MS 30000
#define T0 1000000 /* any monotonic origin */

struct fixture {
	struct cc_keyset *ks;
	struct cc_roster roster;
	char tokens[4][CC_JOIN_TOKEN_BUF];
	struct gs_admission *a;
};

static void setup(struct fixture *f)
{
	memset(f, 0, sizeof *f);
	ck_assert_int_eq(cc_crypto_init(), 0);
	char err[256];
	const char *json = "{\"k1\":\"MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\"}";
	ck_assert_int_eq(cc_keyset_parse("test", json, strlen(json), &f->ks, err, sizeof err), 0);
	struct cc_roster *r = &f->roster;
	r->count = 4;
	cc_random_uuid(r->match_id);
	cc_random_uuid(r->allocation_id);
	snprintf(r->server_id, sizeof r->server_id, "local-test");
	snprintf(r->key_id, sizeof r->key_id, "k1");
	int64_t exp = (int64_t)time(NULL) + 3600;
	for (int i = 0; i < 4; i++) {
		struct cc_roster_entry *e = &r->entries[i];
		*e = (struct cc_roster_entry){ .slot = i, .team = i % 2, .generation = 1, .expires_at = exp };
		cc_random_uuid(e->player_id);
		struct cc_join_claims c = { .slot = i, .generation = 1, .expires_at = exp };
		snprintf(c.key_id, sizeof c.key_id, "k1");
		snprintf(c.match_id, sizeof c.match_id, "%s", r->match_id);
		snprintf(c.server_id, sizeof c.server_id, "local-test");
		snprintf(c.player_id, sizeof c.player_id, "%s", e->player_id);
		ck_assert_int_eq(cc_join_token_sign(f->ks, &c, f->tokens[i], sizeof f->tokens[i]), 0);
	}
	/* The admission owns a key set of its own (the fixture's signs). */
	struct cc_keyset *verify = NULL;
	ck_assert_int_eq(cc_keyset_parse("test", json, strlen(json), &verify, err, sizeof err), 0);
	f->a = gs_admission_create(verify, r, "local-test", RESERVE_MS);
	ck_assert_ptr_nonnull(f->a);
}

static void teardown(struct fixture *f)
{
	gs_admission_free(f->a);
	cc_keyset_free(f->ks);
}

static int admit(struct fixture *f, int slot, int64_t now_ms, uint64_t holder, struct gs_admit *out, const char **why)
{
	return gs_admission_admit(f->a, f->tokens[slot], (int64_t)time(NULL), now_ms, holder, out, why);
}

static int resume(struct fixture *f, int slot, const uint8_t *key, int64_t now_ms, uint64_t holder, struct gs_admit *out,
		  uint64_t *displaced, const char **why)
{
	const char *detail;
	return gs_admission_resume(f->a, f->tokens[slot], key, (int64_t)time(NULL), now_ms, holder, out, displaced, why,
				   &detail);
}

START_TEST(test_reservation_lapses_at_exactly_30s)
{
	struct fixture f;
	setup(&f);
	struct gs_admit who, again;
	const char *why = "";
	uint64_t displaced = 99;
	ck_assert_int_eq(admit(&f, 1, T0, 11, &who, &why), 0);
	ck_assert_int_eq(who.slot, 1);
	ck_assert(!who.resumed);
	ck_assert_int_eq(gs_admission_release(f.a, 11, T0), 1);
	ck_assert(gs_admission_slot_reserved(f.a, 1, T0 + RESERVE_MS - 1));
	ck_assert(!gs_admission_slot_reserved(f.a, 1, T0 + RESERVE_MS));
	ck_assert_int_eq(gs_admission_next_lapsed(f.a, T0 + RESERVE_MS - 1), -1);
	/* 29 999 ms: the resume takes the slot back (same slot, team, identity). */
	ck_assert_int_eq(resume(&f, 1, who.resume_key, T0 + RESERVE_MS - 1, 12, &again, &displaced, &why), 0);
	ck_assert(again.resumed);
	ck_assert_int_eq(displaced, 0);
	ck_assert_int_eq(again.slot, 1);
	ck_assert_int_eq(again.team, 1);
	ck_assert_str_eq(again.player_id, who.player_id);
	ck_assert(memcmp(again.resume_key, who.resume_key, GS_RESUME_KEY_LEN) != 0); /* a fresh key per session */
	/* Released again: at exactly 30 000 ms the reservation is gone, reported once. */
	int64_t left = T0 + 40000;
	ck_assert_int_eq(gs_admission_release(f.a, 12, left), 1);
	ck_assert_int_eq(gs_admission_next_lapsed(f.a, left + RESERVE_MS - 1), -1);
	ck_assert_int_eq(gs_admission_next_lapsed(f.a, left + RESERVE_MS), 1);
	ck_assert_int_eq(gs_admission_next_lapsed(f.a, left + RESERVE_MS), -1);
	ck_assert_int_eq(resume(&f, 1, again.resume_key, left + RESERVE_MS, 13, &who, &displaced, &why), CC_ECONFLICT);
	ck_assert_str_eq(why, "resume_refused");
	/* A hello after the lapse is a newcomer (its ship enters at the next kickoff). */
	ck_assert_int_eq(admit(&f, 1, left + RESERVE_MS + 5, 14, &who, &why), 0);
	ck_assert(!who.resumed);
	teardown(&f);
}
END_TEST

START_TEST(test_lapse_settled_by_a_late_resume)
{
	/* Nobody swept the table: a resume at exactly the lapse still refuses, and the lapse is still reported. */
	struct fixture f;
	setup(&f);
	struct gs_admit who, again;
	const char *why = "";
	uint64_t displaced = 0;
	ck_assert_int_eq(admit(&f, 2, T0, 21, &who, &why), 0);
	ck_assert_int_eq(gs_admission_release(f.a, 21, T0), 2);
	ck_assert_int_eq(resume(&f, 2, who.resume_key, T0 + RESERVE_MS, 22, &again, &displaced, &why), CC_ECONFLICT);
	ck_assert_int_eq(gs_admission_next_lapsed(f.a, T0 + RESERVE_MS), 2);
	teardown(&f);
}
END_TEST

START_TEST(test_identity_checks)
{
	struct fixture f;
	setup(&f);
	struct gs_admit a0, a2, out;
	const char *why = "";
	uint64_t displaced = 0;
	ck_assert_int_eq(admit(&f, 0, T0, 1, &a0, &why), 0);
	ck_assert_int_eq(admit(&f, 2, T0, 2, &a2, &why), 0);
	ck_assert_int_eq(gs_admission_release(f.a, 1, T0 + 10), 0);
	/* Another player's token with slot 0's key: that key is not this identity's session. */
	ck_assert_int_eq(resume(&f, 2, a0.resume_key, T0 + 20, 3, &out, &displaced, &why), CC_ECONFLICT);
	ck_assert_str_eq(why, "resume_refused");
	ck_assert_int_eq(resume(&f, 3, a0.resume_key, T0 + 20, 3, &out, &displaced, &why), CC_ECONFLICT);
	ck_assert_str_eq(why, "resume_refused");
	/* The right identity with a wrong key. */
	uint8_t bad[GS_RESUME_KEY_LEN];
	memcpy(bad, a0.resume_key, sizeof bad);
	bad[15] ^= 1;
	ck_assert_int_eq(resume(&f, 0, bad, T0 + 20, 3, &out, &displaced, &why), CC_ECONFLICT);
	ck_assert_str_eq(why, "resume_refused");
	/* A forged token carries no identity at all. */
	const char *detail;
	ck_assert_int_eq(gs_admission_resume(f.a, "not-a-token", a0.resume_key, (int64_t)time(NULL), T0 + 20, 3, &out,
					     &displaced, &why, &detail),
			 CC_EUNAUTHORIZED);
	/* None of that touched the reservation: the real player still resumes. */
	ck_assert(gs_admission_slot_reserved(f.a, 0, T0 + 20));
	ck_assert_int_eq(resume(&f, 0, a0.resume_key, T0 + 30, 4, &out, &displaced, &why), 0);
	ck_assert_int_eq(out.slot, 0);
	/* A hello for slot 0 while the resumed session is live: replay rule. */
	ck_assert_int_eq(admit(&f, 0, T0 + 40, 5, &out, &why), CC_ECONFLICT);
	ck_assert_str_eq(why, "token_replayed");
	/* A player who was never admitted has no session to resume. */
	uint8_t zero[GS_RESUME_KEY_LEN] = { 0 };
	ck_assert_int_eq(resume(&f, 3, zero, T0 + 40, 6, &out, &displaced, &why), CC_ECONFLICT);
	teardown(&f);
}
END_TEST

START_TEST(test_takeover_and_hello_during_reservation)
{
	struct fixture f;
	setup(&f);
	struct gs_admit who, next, third;
	const char *why = "";
	uint64_t displaced = 0;
	ck_assert_int_eq(admit(&f, 3, T0, 31, &who, &why), 0);
	/* The server has not noticed the drop: holder 31 is live. A resume takes over and names it. */
	ck_assert_int_eq(resume(&f, 3, who.resume_key, T0 + 100, 32, &next, &displaced, &why), 0);
	ck_assert_int_eq(displaced, 31);
	ck_assert(next.resumed);
	ck_assert(gs_admission_slot_held(f.a, 3));
	/* The displaced holder's later release gives nothing back (the slot is 32's). */
	ck_assert_int_eq(gs_admission_release(f.a, 31, T0 + 200), -1);
	ck_assert(gs_admission_slot_held(f.a, 3));
	/* The old key died with its session. */
	ck_assert_int_eq(resume(&f, 3, who.resume_key, T0 + 300, 33, &third, &displaced, &why), CC_ECONFLICT);
	/* A plain hello of the same identity during the reservation takes the slot back at once. */
	ck_assert_int_eq(gs_admission_release(f.a, 32, T0 + 400), 3);
	ck_assert_int_eq(admit(&f, 3, T0 + 500, 34, &third, &why), 0);
	ck_assert(third.resumed);
	ck_assert(!gs_admission_slot_reserved(f.a, 3, T0 + 500));
	ck_assert_int_eq(gs_admission_next_lapsed(f.a, T0 + 400 + RESERVE_MS), -1); /* taken back: never lapses */
	/* A spectator's token check takes no slot. */
	int spec_slot = -1;
	ck_assert_int_eq(gs_admission_verify(f.a, f.tokens[1], (int64_t)time(NULL), &spec_slot, &why), 0);
	ck_assert_int_eq(spec_slot, 1); /* the server refuses it while slot 1 is played (protocol section 10) */
	ck_assert(!gs_admission_slot_held(f.a, 1));
	teardown(&f);
}
END_TEST

START_TEST(test_no_reservation)
{
	/* --slot-reserve-seconds=0: the slot lapses at the release. */
	struct fixture f;
	setup(&f);
	gs_admission_free(f.a);
	char err[256];
	struct cc_keyset *verify = NULL;
	const char *json = "{\"k1\":\"MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\"}";
	ck_assert_int_eq(cc_keyset_parse("test", json, strlen(json), &verify, err, sizeof err), 0);
	f.a = gs_admission_create(verify, &f.roster, "local-test", 0);
	struct gs_admit who;
	const char *why = "";
	ck_assert_int_eq(admit(&f, 0, T0, 1, &who, &why), 0);
	ck_assert_int_eq(gs_admission_release(f.a, 1, T0), 0);
	ck_assert_int_eq(gs_admission_next_lapsed(f.a, T0), 0);
	teardown(&f);
}
END_TEST

static void no_events(void *ctx, const struct gs_event *ev)
{
	int *kickoffs = ctx;
	if (ev->kind == GS_EVENT_KICKOFF)
		(*kickoffs)++;
}

START_TEST(test_match_drivers)
{
	struct gs_match_options o = { .n_slots = 2, .expected = 1, .teams = { 0, 1 }, .match_seconds = 60,
				      .warmup_seconds = 1, .connect_window_seconds = 5, .goal_pause_seconds = 1 };
	struct gs_match *m = gs_match_create(&o);
	ck_assert_ptr_nonnull(m);
	int kickoffs = 0;
	gs_match_set_driver(m, 0, GS_DRIVER_PLAYER);
	gs_match_step(m, no_events, &kickoffs); /* LOADING -> WARMUP: one player expected */
	ck_assert_int_eq(gs_match_state(m), CC_MATCH_WARMUP);
	/* A late joiner (slot 1) waits for the kickoff; until then a bot drives its ship. */
	gs_match_set_driver(m, 1, GS_DRIVER_BOT);
	gs_match_driver_at_kickoff(m, 1, GS_DRIVER_PLAYER, false);
	ck_assert(gs_match_entry_queued(m, 1));
	kickoffs = 0; /* LOADING -> WARMUP kicked off already */
	for (int i = 0; i < 30; i++)
		gs_match_step(m, no_events, &kickoffs);
	ck_assert_int_eq(kickoffs, 0);
	ck_assert_int_eq(gs_match_driver(m, 1), GS_DRIVER_BOT);
	ck_assert(gs_match_sim(m)->ships[1].active);
	/* The bot moved the ship (game/chase). */
	const struct cc_sim_body *b = &gs_match_sim(m)->ships[1].body;
	ck_assert(b->vel.x != 0 || b->vel.y != 0 || b->vel.z != 0);
	while (kickoffs == 0 && gs_match_tick(m) < 200)
		gs_match_step(m, no_events, &kickoffs);
	ck_assert_int_eq(kickoffs, 1);
	ck_assert_int_eq(gs_match_driver(m, 1), GS_DRIVER_PLAYER);
	ck_assert(!gs_match_entry_queued(m, 1));
	/* Away: the ship stays in play where it is. */
	gs_match_set_driver(m, 0, GS_DRIVER_AWAY);
	ck_assert(gs_match_sim(m)->ships[0].active);
	gs_match_set_driver(m, 0, GS_DRIVER_NONE);
	ck_assert(!gs_match_sim(m)->ships[0].active);
	gs_match_free(m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gs_admission");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_reservation_lapses_at_exactly_30s);
	tcase_add_test(tc, test_lapse_settled_by_a_late_resume);
	tcase_add_test(tc, test_identity_checks);
	tcase_add_test(tc, test_takeover_and_hello_during_reservation);
	tcase_add_test(tc, test_no_reservation);
	tcase_add_test(tc, test_match_drivers);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
