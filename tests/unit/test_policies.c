/*
 * The pure decisions of game/: the enqueue verdict (game/enqueue_policy.h)
 * and the penalty escalation rule (game/penalty_policy.h), table-driven,
 * without a database. cc-api maps each enqueue verdict to its HTTP answer;
 * tests/integration/queue_rules.sh proves that mapping end to end.
 */
#include <stdint.h>
#include <stdio.h>

#include "support.h"
#include "game/enqueue_policy.h"
#include "game/penalty_policy.h"
#include "sys/banned.h"

/* A player who may queue: protocol at the minimum, no ban, no cooldown, one fresh region. */
static struct cc_enqueue_facts fine(void)
{
	return (struct cc_enqueue_facts){
		.protocol_version = 3, .min_protocol_version = 3, .banned = false,
		.cooldown_remaining_seconds = 0, .fresh_regions = 1,
	};
}

START_TEST(test_each_verdict)
{
	static const struct {
		const char *what;
		int64_t protocol, min_protocol;
		bool banned;
		int64_t cooldown, regions;
		enum cc_enqueue_verdict want;
		int64_t retry_after;
	} cases[] = {
		{ "all fine", 3, 3, false, 0, 1, CC_ENQUEUE_OK, 0 },
		{ "newer client", 9, 3, false, 0, 4, CC_ENQUEUE_OK, 0 },
		{ "outdated client", 2, 3, false, 0, 1, CC_ENQUEUE_CLIENT_OUTDATED, 0 },
		{ "banned", 3, 3, true, 0, 1, CC_ENQUEUE_BANNED, 0 },
		{ "cooldown", 3, 3, false, 42, 1, CC_ENQUEUE_COOLDOWN, 42 },
		{ "cooldown of one second", 3, 3, false, 1, 1, CC_ENQUEUE_COOLDOWN, 1 },
		{ "no cooldown left (0)", 3, 3, false, 0, 1, CC_ENQUEUE_OK, 0 },
		{ "no cooldown (negative)", 3, 3, false, -5, 1, CC_ENQUEUE_OK, 0 },
		{ "no region probed", 3, 3, false, 0, 0, CC_ENQUEUE_NO_REGION_PROBED, 0 },
		/* precedence: the first refusal in the documented order wins */
		{ "outdated beats banned", 1, 3, true, 60, 0, CC_ENQUEUE_CLIENT_OUTDATED, 0 },
		{ "banned beats cooldown", 3, 3, true, 60, 0, CC_ENQUEUE_BANNED, 0 },
		{ "cooldown beats no probe", 3, 3, false, 60, 0, CC_ENQUEUE_COOLDOWN, 60 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct cc_enqueue_facts f = fine();
		f.protocol_version = cases[i].protocol;
		f.min_protocol_version = cases[i].min_protocol;
		f.banned = cases[i].banned;
		f.cooldown_remaining_seconds = cases[i].cooldown;
		f.fresh_regions = cases[i].regions;
		struct cc_enqueue_decision d = cc_enqueue_decide(&f);
		ck_assert_msg(d.verdict == cases[i].want, "%s: verdict %s, want %s", cases[i].what,
			      cc_enqueue_verdict_name(d.verdict), cc_enqueue_verdict_name(cases[i].want));
		ck_assert_msg(d.retry_after_seconds == cases[i].retry_after, "%s: retry_after %lld, want %lld",
			      cases[i].what, (long long)d.retry_after_seconds, (long long)cases[i].retry_after);
	}
}
END_TEST

START_TEST(test_which_verdicts_bind_a_replay)
{
	/* A replay of a key returns its first answer, unless the request or the player is refused outright. */
	ck_assert(cc_enqueue_verdict_before_replay(CC_ENQUEUE_CLIENT_OUTDATED));
	ck_assert(cc_enqueue_verdict_before_replay(CC_ENQUEUE_BANNED));
	ck_assert(!cc_enqueue_verdict_before_replay(CC_ENQUEUE_OK));
	ck_assert(!cc_enqueue_verdict_before_replay(CC_ENQUEUE_COOLDOWN));
	ck_assert(!cc_enqueue_verdict_before_replay(CC_ENQUEUE_NO_REGION_PROBED));
	ck_assert_str_eq(cc_enqueue_verdict_name(CC_ENQUEUE_COOLDOWN), "cooldown");
	ck_assert_str_eq(cc_enqueue_verdict_name((enum cc_enqueue_verdict)99), "invalid");
}
END_TEST

START_TEST(test_penalty_escalation)
{
	static const struct {
		enum cc_penalty_kind kind;
		int64_t prior;
		int64_t want;
	} cases[] = {
		{ CC_PENALTY_DECLINE, 0, 60 },
		{ CC_PENALTY_DECLINE, 1, 120 },
		{ CC_PENALTY_DECLINE, 2, 240 },
		{ CC_PENALTY_DECLINE, 3, 480 },
		{ CC_PENALTY_DECLINE, 4, 480 },           /* factor capped at 8 */
		{ CC_PENALTY_DECLINE, -1, 60 },           /* nonsense counts as none */
		{ CC_PENALTY_PROPOSAL_TIMEOUT, 0, 120 },
		{ CC_PENALTY_PROPOSAL_TIMEOUT, 3, 960 },
		{ CC_PENALTY_INITIAL_CONNECT_NO_SHOW, 1, 600 },
		{ CC_PENALTY_EARLY_LEAVE, 0, 600 },
		{ CC_PENALTY_EARLY_LEAVE, 3, 4800 },
		{ CC_PENALTY_EARLY_LEAVE, INT64_MAX, 4800 }, /* no overflow */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		ck_assert_msg(cc_penalty_cooldown_seconds(cases[i].kind, cases[i].prior) == cases[i].want,
			      "%s after %lld offences: %lld s, want %lld", cc_penalty_kind_name(cases[i].kind),
			      (long long)cases[i].prior,
			      (long long)cc_penalty_cooldown_seconds(cases[i].kind, cases[i].prior),
			      (long long)cases[i].want);
	ck_assert_str_eq(cc_penalty_kind_name(CC_PENALTY_PROPOSAL_TIMEOUT), "PROPOSAL_TIMEOUT");
	ck_assert_str_eq(cc_penalty_kind_name((enum cc_penalty_kind)99), "INVALID");
}
END_TEST

START_TEST(test_schedule_covers_every_count)
{
	/* The store hands PostgreSQL only CC_PENALTY_ESCALATION_STEPS entries and
	 * uses the last one for larger counts: that must be what the rule says. */
	static const enum cc_penalty_kind kinds[] = { CC_PENALTY_DECLINE, CC_PENALTY_PROPOSAL_TIMEOUT,
						      CC_PENALTY_INITIAL_CONNECT_NO_SHOW, CC_PENALTY_EARLY_LEAVE };
	for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
		int64_t schedule[CC_PENALTY_ESCALATION_STEPS];
		cc_penalty_schedule(kinds[k], schedule);
		for (int64_t n = 0; n < 64; n++) {
			int64_t step = n < CC_PENALTY_ESCALATION_STEPS ? n : CC_PENALTY_ESCALATION_STEPS - 1;
			ck_assert_msg(schedule[step] == cc_penalty_cooldown_seconds(kinds[k], n),
				      "%s after %lld offences", cc_penalty_kind_name(kinds[k]), (long long)n);
			ck_assert(schedule[step] <= CC_PENALTY_COOLDOWN_CAP_SECONDS);
		}
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("policies");
	TCase *tc = tcase_create("enqueue");
	tcase_add_test(tc, test_each_verdict);
	tcase_add_test(tc, test_which_verdicts_bind_a_replay);
	suite_add_tcase(s, tc);
	TCase *tp = tcase_create("penalty");
	tcase_add_test(tp, test_penalty_escalation);
	tcase_add_test(tp, test_schedule_covers_every_count);
	suite_add_tcase(s, tp);
	return cc_test_run_suite(s);
}
