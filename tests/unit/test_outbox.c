/*
 * store/outbox.h without a database: the envelope check the constructor and
 * the dispatcher's NOTIFY fan-out share (cc_outbox_event_fault /
 * cc_outbox_event_valid), table-driven, and cc_outbox_row_event, which
 * turns a claimed row back into an envelope for that check. The database
 * paths are tests/integration/test_outbox_dispatch.c.
 */
#include <stdio.h>
#include <string.h>

#include "support.h"
#include "store/outbox.h"
#include "sys/banned.h"

#define P1 "0f9d3c7e-1b2a-4c5d-8e6f-7a8b9c0d1e2f"
#define R1 "5b1c0d1e-7a55-4b8e-9d0c-2f1e8a6b3c4d"

static const char *const one_player[] = { P1 };
static const char *const null_player[] = { NULL };
static const char *const upper_player[] = { "0F9D3C7E-1B2A-4C5D-8E6F-7A8B9C0D1E2F" };

START_TEST(test_event_faults)
{
	static const char *players65[CC_OUTBOX_MAX_PLAYERS + 1];
	for (size_t i = 0; i < CC_OUTBOX_MAX_PLAYERS + 1; i++)
		players65[i] = P1;
	const struct {
		const char *what;
		struct cc_outbox_event ev;
		const char *fault; /* substring of the fault, NULL = valid */
	} cases[] = {
		{ "valid", { "ticket.queued", "ticket", R1, 1, one_player, 1, NULL }, NULL },
		{ "valid, no players", { "allocation.allocated", "allocation", R1, 7, NULL, 0, NULL }, NULL },
		{ "64 players", { "match.started", "match", R1, 2, players65, CC_OUTBOX_MAX_PLAYERS, NULL }, NULL },
		{ "65 players", { "match.started", "match", R1, 2, players65, CC_OUTBOX_MAX_PLAYERS + 1, NULL }, "at most 64" },
		{ "a NULL player", { "ticket.queued", "ticket", R1, 1, null_player, 1, NULL }, "none of them null" },
		{ "an upper-case player id", { "ticket.queued", "ticket", R1, 1, upper_player, 1, NULL }, "lowercase UUIDs" },
		{ "players missing", { "ticket.queued", "ticket", R1, 1, NULL, 1, NULL }, "player_ids missing" },
		{ "event with a capital", { "Ticket.queued", "ticket", R1, 1, one_player, 1, NULL }, "event must match" },
		{ "event empty", { "", "ticket", R1, 1, one_player, 1, NULL }, "event must match" },
		{ "event NULL", { NULL, "ticket", R1, 1, one_player, 1, NULL }, "event must match" },
		{ "resource_type with a dot", { "ticket.queued", "tick.et", R1, 1, one_player, 1, NULL }, "resource_type" },
		{ "resource_id not a UUID", { "ticket.queued", "ticket", "r1", 1, one_player, 1, NULL }, "resource_id" },
		{ "revision 0", { "ticket.queued", "ticket", R1, 0, one_player, 1, NULL }, "revision" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *fault = cc_outbox_event_fault(&cases[i].ev);
		if (!cases[i].fault) {
			ck_assert_msg(fault == NULL, "%s: refused (%s)", cases[i].what, fault);
			ck_assert_msg(cc_outbox_event_valid(&cases[i].ev), "%s: not valid", cases[i].what);
		} else {
			ck_assert_msg(fault && strstr(fault, cases[i].fault), "%s: fault '%s', want '%s'", cases[i].what,
				      fault ? fault : "(none)", cases[i].fault);
			ck_assert_msg(!cc_outbox_event_valid(&cases[i].ev), "%s: valid", cases[i].what);
		}
	}
	ck_assert_ptr_nonnull(cc_outbox_event_fault(NULL));
}
END_TEST

START_TEST(test_row_event_round_trip)
{
	struct cc_outbox_row row = { .id = 9, .revision = 3, .n_player_ids = 2 };
	snprintf(row.event, sizeof row.event, "ticket.proposed");
	snprintf(row.resource_type, sizeof row.resource_type, "ticket");
	snprintf(row.resource_id, sizeof row.resource_id, R1);
	snprintf(row.player_ids[0], CC_UUID_BUF, P1);
	row.player_ids[1][0] = '\0'; /* a NULL element as the claim renders it */
	const char *ptrs[CC_OUTBOX_MAX_PLAYERS + 1];
	struct cc_outbox_event ev;
	cc_outbox_row_event(&row, ptrs, &ev);
	ck_assert_str_eq(ev.event, "ticket.proposed");
	ck_assert_int_eq(ev.revision, 3);
	ck_assert_uint_eq(ev.n_player_ids, 2);
	ck_assert_str_eq(ev.player_ids[0], P1);
	ck_assert_ptr_nonnull(strstr(cc_outbox_event_fault(&ev), "lowercase UUIDs"));
	row.n_player_ids = 1;
	cc_outbox_row_event(&row, ptrs, &ev);
	ck_assert_ptr_null(cc_outbox_event_fault(&ev));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("outbox");
	TCase *tc = tcase_create("envelope");
	tcase_add_test(tc, test_event_faults);
	tcase_add_test(tc, test_row_event_round_trip);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
