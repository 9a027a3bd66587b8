/*
 * test_gs_reporter: cc-gameserver's control-plane reporter (gameserver/reporter.h)
 * when its queue fills: receipts (connect/disconnect, one pair per connection, so
 * a player reconnecting or resuming in a loop makes as many as it likes) are
 * refused past their share, and the match result still gets in. The API is a
 * closed port, so every job stays queued, retrying at the head.
 */
#include <stdio.h>

#include "support.h"
#include "../../gameserver/reporter.h"
#include "sys/banned.h"

START_TEST(test_result_gets_in_past_a_receipt_flood)
{
	/* Port 9 on loopback: nothing listens, every request fails and is retried. */
	struct cc_reporter *r = cc_reporter_start("http://127.0.0.1:9", "local-test", "workload-token", 200);
	ck_assert_ptr_nonnull(r);
	int accepted = 0, rc = 0;
	for (int i = 0; i < 2 * CC_REPORTER_QUEUE_MAX; i++) {
		char conn[32];
		snprintf(conn, sizeof conn, "gs-test-%d", i);
		rc = i % 2 ? cc_reporter_disconnect(r, "00000000-0000-4000-8000-000000000001", "duplicate_session")
			   : cc_reporter_connect(r, "00000000-0000-4000-8000-000000000001", conn);
		if (rc != 0)
			break;
		accepted++;
	}
	ck_assert_msg(rc == CC_ETOOBIG, "a receipt flood was never refused (last rc %d after %d)", rc, accepted);
	ck_assert_int_le(accepted, CC_REPORTER_QUEUE_MAX);
	rc = cc_reporter_post(r, "result", "{\"match_id\":\"m\"}", 1000);
	ck_assert_msg(rc == 0, "the result was refused (%d) behind %d queued receipts: the match would never be recorded",
		      rc, accepted);
	/* Receipts stay refused: the result's room is not theirs. */
	ck_assert_int_eq(cc_reporter_connect(r, "00000000-0000-4000-8000-000000000001", "gs-test-late"), CC_ETOOBIG);
	cc_reporter_free(r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gs_reporter");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_result_gets_in_past_a_receipt_flood);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
