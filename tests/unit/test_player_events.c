/*
 * cc-player's decoding of GET /v1/events messages (tests/player/events.c):
 * an envelope as cc-api sends it (contracts/v1/events.json), the two
 * control messages, a reference-free allocation event, and what is skipped
 * (not JSON, no "event", an event name too long, a position out of range).
 */
#include <stdio.h>
#include <string.h>

#include "../player/events.h"
#include "support.h"
#include "sys/banned.h"

static bool decode(const char *text, struct pc_event *ev, const char **why)
{
	return pc_event_decode(text, strlen(text), ev, why);
}

START_TEST(test_envelope)
{
	struct pc_event ev;
	const char *why = "";
	ck_assert(decode("{\"id\" : 812, \"position\" : 40417, \"event\" : \"ticket.proposed\", \"resource_type\" : "
			 "\"ticket\", \"resource_id\" : \"5b1c0d1e-7a55-4b8e-9d0c-2f1e8a6b3c4d\", \"revision\" : 3, "
			 "\"player_ids\" : [\"0f9d3c7e-1b2a-4c5d-8e6f-7a8b9c0d1e2f\"], \"occurred_at\" : "
			 "\"2025-01-15T18:04:05.120Z\", \"payload\" : {\"proposal_id\": "
			 "\"11111111-2222-4333-8444-555555555555\"}}",
			 &ev, &why));
	ck_assert_str_eq(ev.event, "ticket.proposed");
	ck_assert_int_eq(ev.position, 40417);
	ck_assert_str_eq(ev.resource_type, "ticket");
	ck_assert_str_eq(ev.resource_id, "5b1c0d1e-7a55-4b8e-9d0c-2f1e8a6b3c4d");
	ck_assert_int_eq(ev.revision, 3);
	ck_assert_str_eq(ev.proposal_id, "11111111-2222-4333-8444-555555555555");
	ck_assert_str_eq(ev.match_id, "");
	ck_assert(decode("{\"id\":9,\"position\":7,\"event\":\"allocation.published\",\"resource_type\":\"allocation\","
			 "\"resource_id\":\"aaaaaaaa-2222-4333-8444-555555555555\",\"revision\":2,\"player_ids\":[],"
			 "\"occurred_at\":\"2025-01-15T18:04:05.120Z\",\"payload\":{\"match_id\":"
			 "\"bbbbbbbb-2222-4333-8444-555555555555\",\"server_id\":\"s1\"}}",
			 &ev, &why));
	ck_assert_str_eq(ev.match_id, "bbbbbbbb-2222-4333-8444-555555555555");
	ck_assert(decode("{\"event\":\"ticket.requeued\",\"position\":8,\"revision\":5,\"payload\":{\"reason\":\"declined\"}}",
			 &ev, &why));
	ck_assert_str_eq(ev.reason, "declined");
}
END_TEST

START_TEST(test_control_messages)
{
	struct pc_event ev;
	const char *why = "";
	ck_assert(decode("{\"event\":\"stream.ready\",\"position\":0,\"replayed\":0}", &ev, &why));
	ck_assert_str_eq(ev.event, "stream.ready");
	ck_assert_int_eq(ev.position, 0);
	ck_assert(decode("{\"event\":\"stream.ready\",\"position\":9007199254740991,\"replayed\":12}", &ev, &why));
	ck_assert_int_eq(ev.position, INT64_C(9007199254740991));
	ck_assert_int_eq(ev.replayed, 12);
	ck_assert(decode("{\"event\":\"stream.resync\",\"position\":55,\"reason\":\"too_old\"}", &ev, &why));
	ck_assert_str_eq(ev.reason, "too_old");
	ck_assert_int_eq(ev.position, 55);
	/* an unknown event decodes: the caller ignores what it does not know */
	ck_assert(decode("{\"event\":\"rating.future_thing\",\"position\":3}", &ev, &why));
}
END_TEST

START_TEST(test_skipped)
{
	struct pc_event ev;
	const char *why = "";
	ck_assert(!decode("not json", &ev, &why));
	ck_assert_str_eq(why, "not a JSON object");
	ck_assert(!decode("[1,2]", &ev, &why));
	ck_assert(!decode("{\"position\":3}", &ev, &why));
	ck_assert_str_eq(why, "no string \"event\"");
	ck_assert(!decode("{\"event\":7}", &ev, &why));
	ck_assert(!decode("{\"event\":\"\"}", &ev, &why));
	char longname[200];
	memset(longname, 'a', sizeof longname);
	char text[300];
	snprintf(text, sizeof text, "{\"event\":\"%.*s\"}", 100, longname);
	ck_assert(!decode(text, &ev, &why));
	/* a position out of the contract's range reads as none */
	ck_assert(decode("{\"event\":\"ticket.queued\",\"position\":-5,\"revision\":1.5}", &ev, &why));
	ck_assert_int_eq(ev.position, 0);
	ck_assert_int_eq(ev.revision, 0);
	/* a resource_id too long for a UUID is dropped, not cut */
	ck_assert(decode("{\"event\":\"ticket.queued\",\"resource_id\":\"5b1c0d1e-7a55-4b8e-9d0c-2f1e8a6b3c4d-and-more\"}",
			 &ev, &why));
	ck_assert_str_eq(ev.resource_id, "");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("player_events");
	TCase *tc = tcase_create("decode");
	tcase_add_test(tc, test_envelope);
	tcase_add_test(tc, test_control_messages);
	tcase_add_test(tc, test_skipped);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
