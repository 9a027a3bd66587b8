/*
 * The ticket state machine: the C table (libcommon/transitions.c) and the
 * published contract (contracts/v1/state-transitions.json) must say the
 * same thing, both ways. The database copy is compared in
 * tests/integration/test_migrate_db.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "support.h"
#include "game/transitions.h"
#include "sys/banned.h"

#define CONTRACT_MAX (1024 * 1024)

static cJSON *contract;      /* the whole JSON document */
static const cJSON *machine; /* machines.ticket */

/* Reads $CC_TOP/contracts/v1/state-transitions.json into a malloc'd string. */
static char *read_contract(char *path, size_t path_len)
{
	const char *top = getenv("CC_TOP");
	snprintf(path, path_len, "%s/contracts/v1/state-transitions.json", top && *top ? top : ".");
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *text = malloc(CONTRACT_MAX + 1);
	size_t n = text ? fread(text, 1, CONTRACT_MAX + 1, f) : 0;
	fclose(f);
	if (!text || n > CONTRACT_MAX) {
		free(text);
		return NULL;
	}
	text[n] = '\0';
	return text;
}

static void load_contract(void)
{
	char path[4096];
	char *text = read_contract(path, sizeof path);
	ck_assert_msg(text, "cannot read %s (is CC_TOP set to the checkout?)", path);
	contract = cJSON_Parse(text);
	free(text);
	ck_assert_msg(contract, "%s is not valid JSON", path);
	const cJSON *machines = cJSON_GetObjectItemCaseSensitive(contract, "machines");
	machine = cJSON_GetObjectItemCaseSensitive(machines, "ticket");
	ck_assert_msg(cJSON_IsObject(machine), "%s has no machines.ticket object", path);
}

static void unload_contract(void)
{
	cJSON_Delete(contract);
	contract = NULL;
	machine = NULL;
}

/* The string array machines.ticket.<field>; fails the test when absent. */
static const cJSON *string_array(const char *field)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(machine, field);
	ck_assert_msg(cJSON_IsArray(a), "machines.ticket.%s is not an array", field);
	const cJSON *item;
	cJSON_ArrayForEach(item, a)
	{
		ck_assert_msg(cJSON_IsString(item), "machines.ticket.%s holds a non-string", field);
	}
	return a;
}

/* Parses a state name from the contract, failing the test (naming where) on an unknown one. */
static enum cc_ticket_state state_of(const cJSON *name, const char *where)
{
	enum cc_ticket_state s;
	ck_assert_msg(cJSON_IsString(name), "%s: state is not a string", where);
	ck_assert_msg(cc_ticket_state_parse(name->valuestring, &s) == 0,
		      "%s: '%s' is not a state the C enum knows", where, name->valuestring);
	return s;
}

static bool array_has(const cJSON *a, const char *text)
{
	const cJSON *item;
	cJSON_ArrayForEach(item, a)
	{
		if (cJSON_IsString(item) && strcmp(item->valuestring, text) == 0)
			return true;
	}
	return false;
}

/* True when the contract lists from -> to under "transitions". */
static bool contract_allows(const char *from, const char *to)
{
	const cJSON *t;
	cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(machine, "transitions"))
	{
		const cJSON *f = cJSON_GetObjectItemCaseSensitive(t, "from");
		const cJSON *o = cJSON_GetObjectItemCaseSensitive(t, "to");
		if (cJSON_IsString(f) && cJSON_IsString(o) && strcmp(f->valuestring, from) == 0 &&
		    strcmp(o->valuestring, to) == 0)
			return true;
	}
	return false;
}

START_TEST(test_states_are_the_enum_in_order)
{
	const cJSON *states = string_array("states");
	ck_assert_int_eq(cJSON_GetArraySize(states), CC_TICKET_STATE_COUNT);
	for (int i = 0; i < CC_TICKET_STATE_COUNT; i++)
		ck_assert_str_eq(cJSON_GetArrayItem(states, i)->valuestring,
				 cc_ticket_state_name((enum cc_ticket_state)i));
	const cJSON *table = cJSON_GetObjectItemCaseSensitive(machine, "table");
	const cJSON *column = cJSON_GetObjectItemCaseSensitive(machine, "column");
	ck_assert(cJSON_IsString(table) && strcmp(table->valuestring, "tickets") == 0);
	ck_assert(cJSON_IsString(column) && strcmp(column->valuestring, "state") == 0);
}
END_TEST

START_TEST(test_every_contract_transition_is_allowed_in_c)
{
	const cJSON *transitions = cJSON_GetObjectItemCaseSensitive(machine, "transitions");
	ck_assert_msg(cJSON_GetArraySize(transitions) > 0, "the contract lists no transitions");
	const cJSON *t;
	int i = 0;
	cJSON_ArrayForEach(t, transitions)
	{
		char where[64];
		snprintf(where, sizeof where, "transitions[%d]", i++);
		enum cc_ticket_state from = state_of(cJSON_GetObjectItemCaseSensitive(t, "from"), where);
		enum cc_ticket_state to = state_of(cJSON_GetObjectItemCaseSensitive(t, "to"), where);
		ck_assert_msg(cc_ticket_transition_allowed(from, to),
			      "%s: the contract allows %s -> %s but the C table does not", where,
			      cc_ticket_state_name(from), cc_ticket_state_name(to));
		const cJSON *notes = cJSON_GetObjectItemCaseSensitive(t, "notes");
		ck_assert_msg(cJSON_IsString(notes) && strlen(notes->valuestring) > 10,
			      "%s (%s -> %s) does not say why it exists", where, cc_ticket_state_name(from),
			      cc_ticket_state_name(to));
	}
}
END_TEST

START_TEST(test_every_c_transition_is_in_the_contract_once)
{
	for (int f = 0; f < CC_TICKET_STATE_COUNT; f++) {
		for (int t = 0; t < CC_TICKET_STATE_COUNT; t++) {
			const char *from = cc_ticket_state_name((enum cc_ticket_state)f);
			const char *to = cc_ticket_state_name((enum cc_ticket_state)t);
			bool c = cc_ticket_transition_allowed((enum cc_ticket_state)f, (enum cc_ticket_state)t);
			ck_assert_msg(c == contract_allows(from, to),
				      "%s -> %s: C table says %s, contract says %s", from, to,
				      c ? "allowed" : "refused", c ? "refused" : "allowed");
		}
	}
	/* No duplicates: the contract has exactly as many entries as the C table. */
	int c_count = 0;
	for (int f = 0; f < CC_TICKET_STATE_COUNT; f++)
		for (int t = 0; t < CC_TICKET_STATE_COUNT; t++)
			c_count += cc_ticket_transition_allowed((enum cc_ticket_state)f, (enum cc_ticket_state)t);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(machine, "transitions")),
			 c_count);
}
END_TEST

START_TEST(test_initial_and_terminal_agree)
{
	const cJSON *initial = string_array("initial");
	const cJSON *terminal = string_array("terminal");
	for (int i = 0; i < CC_TICKET_STATE_COUNT; i++) {
		enum cc_ticket_state s = (enum cc_ticket_state)i;
		const char *name = cc_ticket_state_name(s);
		ck_assert_msg(cc_ticket_state_is_initial(s) == array_has(initial, name),
			      "%s: initial in C %d, in contract %d", name, cc_ticket_state_is_initial(s),
			      array_has(initial, name));
		ck_assert_msg(cc_ticket_state_is_terminal(s) == array_has(terminal, name),
			      "%s: terminal in C %d, in contract %d", name, cc_ticket_state_is_terminal(s),
			      array_has(terminal, name));
		ck_assert(cc_ticket_state_is_active(s) == !cc_ticket_state_is_terminal(s));
	}
	const cJSON *item;
	cJSON_ArrayForEach(item, initial) (void)state_of(item, "initial");
	cJSON_ArrayForEach(item, terminal) (void)state_of(item, "terminal");
}
END_TEST

START_TEST(test_refused_examples_are_refused)
{
	const cJSON *refused = cJSON_GetObjectItemCaseSensitive(machine, "refused");
	ck_assert(cJSON_GetArraySize(refused) > 0);
	const cJSON *t;
	int i = 0;
	cJSON_ArrayForEach(t, refused)
	{
		char where[64];
		snprintf(where, sizeof where, "refused[%d]", i++);
		enum cc_ticket_state from = state_of(cJSON_GetObjectItemCaseSensitive(t, "from"), where);
		enum cc_ticket_state to = state_of(cJSON_GetObjectItemCaseSensitive(t, "to"), where);
		ck_assert_msg(!cc_ticket_transition_allowed(from, to), "%s: %s -> %s is allowed in C", where,
			      cc_ticket_state_name(from), cc_ticket_state_name(to));
	}
}
END_TEST

/* The paths FAILURE-MODES warns about must exist: decline/timeout requeue
 * and stalled-allocation reclaim. */
START_TEST(test_requeue_paths_exist)
{
	ck_assert(cc_ticket_transition_allowed(CC_TICKET_PROPOSED, CC_TICKET_QUEUED));
	ck_assert(cc_ticket_transition_allowed(CC_TICKET_MATCHED, CC_TICKET_QUEUED));
	ck_assert(cc_ticket_transition_allowed(CC_TICKET_ASSIGNED, CC_TICKET_QUEUED));
	for (int i = 0; i < CC_TICKET_STATE_COUNT; i++)
		ck_assert_msg(!cc_ticket_transition_allowed((enum cc_ticket_state)i, (enum cc_ticket_state)i),
			      "%s -> itself is listed", cc_ticket_state_name((enum cc_ticket_state)i));
}
END_TEST

START_TEST(test_names_parse_back)
{
	for (int i = 0; i < CC_TICKET_STATE_COUNT; i++) {
		enum cc_ticket_state s = CC_TICKET_STATE_COUNT;
		ck_assert_int_eq(cc_ticket_state_parse(cc_ticket_state_name((enum cc_ticket_state)i), &s), 0);
		ck_assert_int_eq(s, i);
	}
	static const char *const bad[] = { "", "queued", "QUEUED ", " QUEUED", "QUEUE", "INVALID", NULL };
	for (size_t i = 0; i < CC_ARRAY_LEN(bad); i++) {
		enum cc_ticket_state s = CC_TICKET_FAILED;
		ck_assert_int_eq(cc_ticket_state_parse(bad[i], &s), CC_EINVAL);
		ck_assert_int_eq(s, CC_TICKET_FAILED); /* untouched */
	}
	ck_assert_str_eq(cc_ticket_state_name(CC_TICKET_STATE_COUNT), "INVALID");
	ck_assert_str_eq(cc_ticket_state_name((enum cc_ticket_state)-1), "INVALID");
	ck_assert(!cc_ticket_transition_allowed((enum cc_ticket_state)-1, CC_TICKET_QUEUED));
	ck_assert(!cc_ticket_transition_allowed(CC_TICKET_QUEUED, CC_TICKET_STATE_COUNT));
	ck_assert(!cc_ticket_state_is_terminal(CC_TICKET_STATE_COUNT));
	ck_assert(!cc_ticket_state_is_active(CC_TICKET_STATE_COUNT));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("transitions");
	TCase *tc = tcase_create("contract");
	tcase_add_checked_fixture(tc, load_contract, unload_contract);
	tcase_add_test(tc, test_states_are_the_enum_in_order);
	tcase_add_test(tc, test_every_contract_transition_is_allowed_in_c);
	tcase_add_test(tc, test_every_c_transition_is_in_the_contract_once);
	tcase_add_test(tc, test_initial_and_terminal_agree);
	tcase_add_test(tc, test_refused_examples_are_refused);
	suite_add_tcase(s, tc);
	TCase *tc_names = tcase_create("names");
	tcase_add_test(tc_names, test_requeue_paths_exist);
	tcase_add_test(tc_names, test_names_parse_back);
	suite_add_tcase(s, tc_names);
	return cc_test_run_suite(s);
}
