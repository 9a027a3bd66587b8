/*
 * game/lobby without a server: names, every typed refusal, one lobby per
 * player, the lobby cap, empty lobbies deleted, the countdown re-checked
 * both ways (leave, disconnect, un-ready), join during starting, in_match
 * and back to open, renames, revisions, the team split; and a property
 * test: random operation sequences from 8 members, after each of which
 * every invariant holds and a view built only from the events equals the
 * registry (what a client builds from broadcasts equals lobby_list).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"
#include "game/lobby.h"
#include "sys/banned.h"

#define MAX_EVENTS 64

struct recorder {
	struct cc_lobby_event ev[MAX_EVENTS];
	int n;
	uint32_t last_revision;
	bool revisions_ok;
};

static void record(void *ctx, const struct cc_lobby_event *ev)
{
	struct recorder *rec = ctx;
	if (ev->kind != CC_LOBBY_EV_BEGIN) {
		if (ev->revision != rec->last_revision + 1)
			rec->revisions_ok = false;
		rec->last_revision = ev->revision;
	}
	if (rec->n < MAX_EVENTS)
		rec->ev[rec->n++] = *ev;
}

static const struct cc_lobby_config cfg = { .max_lobbies = 3, .max_players = 8, .countdown_ms = 5000 };

static struct cc_lobby_registry *fresh(struct recorder *rec)
{
	memset(rec, 0, sizeof *rec);
	rec->revisions_ok = true;
	struct cc_lobby_registry *r = cc_lobby_registry_create(&cfg, record, rec);
	ck_assert_ptr_nonnull(r);
	return r;
}

static uint32_t reg(struct cc_lobby_registry *r, const char *name)
{
	uint32_t id = cc_lobby_register(r, name, strlen(name));
	ck_assert_uint_ne(id, 0);
	return id;
}

static void check(const struct cc_lobby_registry *r)
{
	char why[200];
	ck_assert_msg(cc_lobby_check(r, why, sizeof why), "invariant: %s", why);
}

START_TEST(names)
{
	ck_assert(cc_lobby_name_valid("Ann", 3));
	ck_assert(cc_lobby_name_valid("Zoë ☃", strlen("Zoë ☃")));
	ck_assert(cc_lobby_name_valid("12345678901234567890123456789012", 32));
	ck_assert(!cc_lobby_name_valid("123456789012345678901234567890123", 33));
	ck_assert(!cc_lobby_name_valid("", 0));
	ck_assert(!cc_lobby_name_valid("a\nb", 3));
	ck_assert(!cc_lobby_name_valid("a\x7f", 2));
	ck_assert(!cc_lobby_name_valid("a\xc2\x85", 3)); /* U+0085, a C1 control */
	ck_assert(!cc_lobby_name_valid("a\xff", 2));
	ck_assert(!cc_lobby_name_valid("\xc0\xaf", 2)); /* overlong */
	ck_assert(!cc_lobby_name_valid("\xed\xa0\x80", 3)); /* surrogate */
	ck_assert(!cc_lobby_name_valid("a\0b", 3));
	struct recorder rec;
	struct cc_lobby_registry *r = fresh(&rec);
	ck_assert_uint_eq(cc_lobby_register(r, "a\tb", 3), 0);
	uint32_t a = reg(r, "Ann");
	ck_assert_int_eq(cc_lobby_rename(r, a, "x\x01", 2), CC_LOBBY_R_INVALID);
	uint32_t l = 99;
	ck_assert_int_eq(cc_lobby_create(r, a, "", 0, 4, 0, &l), CC_LOBBY_R_INVALID);
	ck_assert_uint_eq(l, 0);
	ck_assert_int_eq(cc_lobby_create(r, a, "ok", 2, 1, 0, &l), CC_LOBBY_R_INVALID);
	ck_assert_int_eq(cc_lobby_create(r, a, "ok", 2, 9, 0, &l), CC_LOBBY_R_INVALID); /* over the server's cap */
	ck_assert_int_eq(rec.n, 0);
	ck_assert_str_eq(cc_lobby_result_name(CC_LOBBY_R_TOO_MANY), "too_many_lobbies");
	ck_assert_str_eq(cc_lobby_result_name(99), "unknown");
	ck_assert_str_eq(cc_lobby_state_name(CC_LOBBY_STATE_IN_MATCH), "in_match");
	cc_lobby_registry_free(r);
}
END_TEST

START_TEST(refusals)
{
	struct recorder rec;
	struct cc_lobby_registry *r = fresh(&rec);
	uint32_t a = reg(r, "a"), b = reg(r, "b"), c = reg(r, "c"), d = reg(r, "d");
	ck_assert_int_eq(cc_lobby_join(r, 777, 1, 0), CC_LOBBY_R_NOT_REGISTERED);
	ck_assert_int_eq(cc_lobby_set_ready(r, 777, true, 0), CC_LOBBY_R_NOT_REGISTERED);
	ck_assert_int_eq(cc_lobby_leave(r, a, 0), CC_LOBBY_R_UNKNOWN);
	ck_assert_int_eq(cc_lobby_set_ready(r, a, true, 0), CC_LOBBY_R_UNKNOWN);
	ck_assert_int_eq(cc_lobby_join(r, a, 12345, 0), CC_LOBBY_R_UNKNOWN);
	uint32_t l1 = 0;
	ck_assert_int_eq(cc_lobby_create(r, a, "two", 3, 2, 0, &l1), CC_LOBBY_R_OK);
	ck_assert_uint_ne(l1, 0);
	ck_assert_int_eq(cc_lobby_create(r, a, "again", 5, 2, 0, NULL), CC_LOBBY_R_ALREADY_IN_LOBBY);
	ck_assert_int_eq(cc_lobby_join(r, a, l1, 0), CC_LOBBY_R_ALREADY_IN_LOBBY);
	ck_assert_int_eq(cc_lobby_join(r, b, l1, 0), CC_LOBBY_R_OK);
	ck_assert_int_eq(cc_lobby_join(r, c, l1, 0), CC_LOBBY_R_FULL);
	/* The cap: 3 lobbies. */
	ck_assert_int_eq(cc_lobby_create(r, c, "c", 1, 2, 0, NULL), CC_LOBBY_R_OK);
	ck_assert_int_eq(cc_lobby_create(r, d, "d", 1, 2, 0, NULL), CC_LOBBY_R_OK);
	uint32_t e = reg(r, "e");
	ck_assert_int_eq(cc_lobby_create(r, e, "e", 1, 2, 0, NULL), CC_LOBBY_R_TOO_MANY);
	ck_assert_int_eq(cc_lobby_count(r), 3);
	/* An empty lobby is deleted, and its id never comes back. */
	rec.n = 0;
	ck_assert_int_eq(cc_lobby_leave(r, d, 0), CC_LOBBY_R_OK);
	ck_assert_int_eq(rec.n, 1);
	ck_assert_int_eq(rec.ev[0].kind, CC_LOBBY_EV_DELETED);
	ck_assert_ptr_null(cc_lobby_find(r, rec.ev[0].lobby_id));
	uint32_t l4 = 0;
	ck_assert_int_eq(cc_lobby_create(r, e, "e", 1, 2, 0, &l4), CC_LOBBY_R_OK);
	ck_assert_uint_gt(l4, rec.ev[0].lobby_id);
	/* Paging order is id order. */
	ck_assert_uint_eq(cc_lobby_at(r, 0)->id, l1);
	ck_assert_uint_eq(cc_lobby_at(r, 2)->id, l4);
	ck_assert_ptr_null(cc_lobby_at(r, 3));
	ck_assert(rec.revisions_ok);
	check(r);
	cc_lobby_registry_free(r);
}
END_TEST

START_TEST(countdown_both_ways)
{
	struct recorder rec;
	struct cc_lobby_registry *r = fresh(&rec);
	uint32_t a = reg(r, "a"), b = reg(r, "b"), c = reg(r, "c");
	uint32_t l = 0;
	ck_assert_int_eq(cc_lobby_create(r, a, "L", 1, 4, 0, &l), CC_LOBBY_R_OK);
	/* A lobby of one never starts. */
	ck_assert_int_eq(cc_lobby_set_ready(r, a, true, 0), CC_LOBBY_R_OK);
	ck_assert_int_eq(cc_lobby_find(r, l)->state, CC_LOBBY_STATE_OPEN);
	ck_assert_int_eq(cc_lobby_join(r, b, l, 0), CC_LOBBY_R_OK);
	ck_assert_int_eq(cc_lobby_join(r, c, l, 0), CC_LOBBY_R_OK);
	ck_assert_int_eq(cc_lobby_set_ready(r, b, true, 100), CC_LOBBY_R_OK);
	ck_assert_int_eq(cc_lobby_find(r, l)->state, CC_LOBBY_STATE_OPEN);
	/* The last not-ready player leaving starts the countdown for the rest. */
	rec.n = 0;
	ck_assert_int_eq(cc_lobby_leave(r, c, 1000), CC_LOBBY_R_OK);
	ck_assert_int_eq(cc_lobby_find(r, l)->state, CC_LOBBY_STATE_STARTING);
	ck_assert_int_eq(rec.n, 2);
	ck_assert_int_eq(rec.ev[0].kind, CC_LOBBY_EV_UPDATED);
	ck_assert_int_eq(rec.ev[1].kind, CC_LOBBY_EV_MATCH_STARTING);
	ck_assert_int_eq(rec.ev[1].start_at_ms, 6000);
	/* A join during the countdown is already_started. */
	ck_assert_int_eq(cc_lobby_join(r, c, l, 1500), CC_LOBBY_R_ALREADY_STARTED);
	/* An un-ready stops it: back to open. */
	rec.n = 0;
	ck_assert_int_eq(cc_lobby_set_ready(r, b, false, 2000), CC_LOBBY_R_OK);
	ck_assert_int_eq(cc_lobby_find(r, l)->state, CC_LOBBY_STATE_OPEN);
	ck_assert_int_eq(rec.n, 1);
	cc_lobby_tick(r, 7000);
	ck_assert_int_eq(cc_lobby_find(r, l)->state, CC_LOBBY_STATE_OPEN);
	/* Ready again: a new countdown from now. */
	ck_assert_int_eq(cc_lobby_set_ready(r, b, true, 8000), CC_LOBBY_R_OK);
	ck_assert_int_eq(cc_lobby_find(r, l)->start_at_ms, 13000);
	/* A leave that leaves one member: back to open (never a solo match). */
	ck_assert_int_eq(cc_lobby_leave(r, b, 9000), CC_LOBBY_R_OK);
	ck_assert_int_eq(cc_lobby_find(r, l)->state, CC_LOBBY_STATE_OPEN);
	cc_lobby_tick(r, 20000);
	ck_assert_int_eq(cc_lobby_find(r, l)->state, CC_LOBBY_STATE_OPEN);
	/* A disconnect during the countdown re-checks too: 3 ready, one drops, the countdown goes on. */
	ck_assert_int_eq(cc_lobby_join(r, b, l, 21000), CC_LOBBY_R_OK);
	ck_assert_int_eq(cc_lobby_join(r, c, l, 21000), CC_LOBBY_R_OK);
	ck_assert_int_eq(cc_lobby_set_ready(r, b, true, 21000), CC_LOBBY_R_OK);
	ck_assert_int_eq(cc_lobby_set_ready(r, c, true, 21000), CC_LOBBY_R_OK);
	ck_assert_int_eq(cc_lobby_find(r, l)->state, CC_LOBBY_STATE_STARTING);
	cc_lobby_unregister(r, c, 22000);
	ck_assert_int_eq(cc_lobby_find(r, l)->state, CC_LOBBY_STATE_STARTING);
	ck_assert_int_eq(cc_lobby_find(r, l)->start_at_ms, 26000); /* unchanged */
	cc_lobby_tick(r, 25999);
	ck_assert_int_eq(cc_lobby_find(r, l)->state, CC_LOBBY_STATE_STARTING);
	rec.n = 0;
	cc_lobby_tick(r, 26000);
	ck_assert_int_eq(cc_lobby_find(r, l)->state, CC_LOBBY_STATE_IN_MATCH);
	ck_assert_int_eq(rec.n, 2);
	ck_assert_int_eq(rec.ev[0].kind, CC_LOBBY_EV_BEGIN);
	ck_assert_int_eq(rec.ev[1].kind, CC_LOBBY_EV_UPDATED);
	ck_assert(rec.revisions_ok);
	check(r);
	cc_lobby_registry_free(r);
}
END_TEST

START_TEST(in_match_and_back)
{
	struct recorder rec;
	struct cc_lobby_registry *r = fresh(&rec);
	uint32_t a = reg(r, "a"), b = reg(r, "b"), c = reg(r, "c");
	uint32_t l = 0;
	ck_assert_int_eq(cc_lobby_create(r, a, "L", 1, 4, 0, &l), CC_LOBBY_R_OK);
	ck_assert_int_eq(cc_lobby_join(r, b, l, 0), CC_LOBBY_R_OK);
	ck_assert_int_eq(cc_lobby_set_ready(r, a, true, 0), CC_LOBBY_R_OK);
	ck_assert_int_eq(cc_lobby_set_ready(r, b, true, 0), CC_LOBBY_R_OK);
	cc_lobby_tick(r, 5000);
	ck_assert_int_eq(cc_lobby_find(r, l)->state, CC_LOBBY_STATE_IN_MATCH);
	ck_assert_int_eq(cc_lobby_join(r, c, l, 0), CC_LOBBY_R_ALREADY_STARTED);
	ck_assert_int_eq(cc_lobby_leave(r, a, 0), CC_LOBBY_R_ALREADY_STARTED);
	ck_assert_int_eq(cc_lobby_set_ready(r, a, false, 0), CC_LOBBY_R_ALREADY_STARTED);
	ck_assert_int_eq(cc_lobby_match_ended(r, 999), CC_ENOTFOUND);
	/* A rename during the match still reaches the lobby. */
	rec.n = 0;
	ck_assert_int_eq(cc_lobby_rename(r, a, "Ann", 3), CC_LOBBY_R_OK);
	ck_assert_int_eq(rec.n, 1);
	ck_assert_int_eq(rec.ev[0].kind, CC_LOBBY_EV_UPDATED);
	ck_assert_str_eq(cc_lobby_member(r, a)->name, "Ann");
	rec.n = 0;
	ck_assert_int_eq(cc_lobby_rename(r, a, "Ann", 3), CC_LOBBY_R_OK); /* the same name: no event */
	ck_assert_int_eq(rec.n, 0);
	ck_assert_int_eq(cc_lobby_match_ended(r, l), 0);
	const struct cc_lobby *lo = cc_lobby_find(r, l);
	ck_assert_int_eq(lo->state, CC_LOBBY_STATE_OPEN);
	ck_assert(!cc_lobby_member(r, a)->ready && !cc_lobby_member(r, b)->ready);
	ck_assert_int_eq(cc_lobby_match_ended(r, l), CC_EINVAL);
	/* Play again; then everyone disconnects mid-match: the lobby is deleted. */
	ck_assert_int_eq(cc_lobby_set_ready(r, a, true, 10000), CC_LOBBY_R_OK);
	ck_assert_int_eq(cc_lobby_set_ready(r, b, true, 10000), CC_LOBBY_R_OK);
	cc_lobby_tick(r, 15000);
	ck_assert_uint_eq(cc_lobby_find(r, l)->matches, 2);
	cc_lobby_unregister(r, a, 16000);
	ck_assert_int_eq(cc_lobby_find(r, l)->n_members, 1);
	ck_assert_int_eq(cc_lobby_find(r, l)->state, CC_LOBBY_STATE_IN_MATCH);
	cc_lobby_unregister(r, b, 16000);
	ck_assert_ptr_null(cc_lobby_find(r, l));
	ck_assert_int_eq(cc_lobby_member_count(r), 1);
	ck_assert(rec.revisions_ok);
	check(r);
	cc_lobby_registry_free(r);
}
END_TEST

START_TEST(teams)
{
	/* Even split; the odd one out goes to team 0. */
	for (int n = 2; n <= 8; n++) {
		int t0 = 0;
		for (int i = 0; i < n; i++)
			t0 += cc_lobby_team_of(i, n) == 0;
		ck_assert_int_eq(t0, (n + 1) / 2);
	}
	ck_assert_int_eq(cc_lobby_team_of(4, 5), 0);
	ck_assert_int_eq(cc_lobby_team_of(1, 5), 1);
}
END_TEST

/* ---- the property test ------------------------------------------------------------ */

/* Plain ifs: a Check assertion per comparison marks a point (a write) each time. */
#define EXPECT(cond, ...)                          \
	do {                                       \
		if (!(cond))                       \
			ck_abort_msg(__VA_ARGS__); \
	} while (0)

/* What a client knows from broadcasts alone: each lobby's last lobby_updated. */
struct view_lobby {
	bool live;
	uint32_t id;
	int state, max_players, n;
	uint32_t members[CC_LOBBY_MEMBERS_MAX];
	bool ready[CC_LOBBY_MEMBERS_MAX];
	char names[CC_LOBBY_MEMBERS_MAX][CC_LOBBY_NAME_MAX + 1];
};

#define VIEW_MAX 512

struct world {
	struct cc_lobby_registry *r;
	struct view_lobby view[VIEW_MAX]; /* by lobby id */
	uint32_t revision;
	bool order_ok;
	int began, starting;
};

static void world_event(void *ctx, const struct cc_lobby_event *ev)
{
	struct world *w = ctx;
	if (ev->kind == CC_LOBBY_EV_BEGIN) {
		w->began++;
		return;
	}
	if (ev->revision != w->revision + 1)
		w->order_ok = false;
	w->revision = ev->revision;
	EXPECT(ev->lobby_id < VIEW_MAX, "lobby id %u", ev->lobby_id);
	struct view_lobby *v = &w->view[ev->lobby_id];
	if (ev->kind == CC_LOBBY_EV_DELETED) {
		EXPECT(v->live, "deleted lobby %u was never announced", ev->lobby_id);
		v->live = false;
		return;
	}
	if (ev->kind == CC_LOBBY_EV_MATCH_STARTING) {
		w->starting++;
		EXPECT(v->state == CC_LOBBY_STATE_STARTING, "match_starting for lobby %u in state %d", ev->lobby_id, v->state);
		return;
	}
	/* UPDATED: the whole lobby as it stands now, as the server encodes it. */
	const struct cc_lobby *l = cc_lobby_find(w->r, ev->lobby_id);
	EXPECT(l != NULL, "updated lobby %u does not exist", ev->lobby_id);
	v->live = true;
	v->id = l->id;
	v->state = l->state;
	v->max_players = l->max_players;
	v->n = l->n_members;
	for (int i = 0; i < l->n_members; i++) {
		const struct cc_lobby_member *m = cc_lobby_member(w->r, l->members[i]);
		EXPECT(m != NULL, "lobby %u lists an unknown member", l->id);
		v->members[i] = m->id;
		v->ready[i] = m->ready;
		snprintf(v->names[i], sizeof v->names[i], "%s", m->name);
	}
}

static void compare(struct world *w, uint32_t max_id)
{
	char why[200];
	EXPECT(cc_lobby_check(w->r, why, sizeof why), "invariant: %s", why);
	EXPECT(w->order_ok, "revisions out of order");
	EXPECT(w->revision == cc_lobby_revision(w->r), "view revision %u, server %u", w->revision, cc_lobby_revision(w->r));
	int live = 0;
	for (uint32_t id = 0; id <= max_id && id < VIEW_MAX; id++) {
		const struct view_lobby *v = &w->view[id];
		const struct cc_lobby *l = cc_lobby_find(w->r, id);
		EXPECT(v->live == (l != NULL), "lobby %u: view %d, server %d", id, v->live, l != NULL);
		if (!l)
			continue;
		live++;
		EXPECT(v->state == (int)l->state && v->max_players == l->max_players && v->n == l->n_members,
		       "lobby %u: view state %d n %d, server %d n %d", id, v->state, v->n, l->state, l->n_members);
		for (int i = 0; i < l->n_members; i++) {
			const struct cc_lobby_member *m = cc_lobby_member(w->r, l->members[i]);
			EXPECT(v->members[i] == m->id && v->ready[i] == m->ready && strcmp(v->names[i], m->name) == 0,
			       "lobby %u member %d: view %u/%d/%s, server %u/%d/%s", id, i, v->members[i], v->ready[i],
			       v->names[i], m->id, m->ready, m->name);
		}
	}
	EXPECT(live == cc_lobby_count(w->r), "view has %d lobbies, server %d", live, cc_lobby_count(w->r));
}

START_TEST(property_random_sequences)
{
	struct cc_lobby_config pc = { .max_lobbies = 4, .max_players = 4, .countdown_ms = 500 };
	int total_began = 0, total_starting = 0, results[CC_LOBBY_R_COUNT] = { 0 };
	for (unsigned seed = 1; seed <= 200; seed++) {
		struct world *w = calloc(1, sizeof *w);
		ck_assert_ptr_nonnull(w);
		w->order_ok = true;
		w->r = cc_lobby_registry_create(&pc, world_event, w);
		ck_assert_ptr_nonnull(w->r);
		uint32_t members[8] = { 0 }, max_seen = 0;
		unsigned s = seed;
		int64_t now = 0;
		for (int step = 0; step < 400; step++) {
			s = s * 1103515245u + 12345u;
			unsigned x = (s >> 8);
			int who = (int)(x % 8);
			int op = (int)((x >> 3) % 9);
			now += (int64_t)((x >> 7) % 200);
			char name[16];
			snprintf(name, sizeof name, "p%u.%d", seed, step % 50);
			int rc = CC_LOBBY_R_OK;
			if (!members[who]) {
				members[who] = cc_lobby_register(w->r, name, strlen(name));
				EXPECT(members[who] != 0, "register %s", name);
			} else if (op == 0) {
				rc = cc_lobby_create(w->r, members[who], name, strlen(name), 2 + (int)((x >> 11) % 3), now, NULL);
			} else if (op <= 2) {
				/* A join of a lobby that exists, or one that never did. */
				int n = cc_lobby_count(w->r);
				uint32_t id = n && (x >> 12) % 5 ? cc_lobby_at(w->r, (int)((x >> 14) % (unsigned)n))->id : 400;
				rc = cc_lobby_join(w->r, members[who], id, now);
			} else if (op == 3) {
				rc = cc_lobby_leave(w->r, members[who], now);
			} else if (op <= 5) {
				rc = cc_lobby_set_ready(w->r, members[who], (x >> 13) % 4 != 0, now);
			} else if (op == 6) {
				rc = cc_lobby_rename(w->r, members[who], name, strlen(name));
			} else if (op == 7) {
				if ((x >> 13) % 4 == 0) {
					cc_lobby_unregister(w->r, members[who], now);
					members[who] = 0;
				}
			} else {
				/* Some in_match lobby's match ends. */
				for (int i = 0; i < cc_lobby_count(w->r); i++)
					if (cc_lobby_at(w->r, i)->state == CC_LOBBY_STATE_IN_MATCH) {
						ck_assert_int_eq(cc_lobby_match_ended(w->r, cc_lobby_at(w->r, i)->id), 0);
						break;
					}
			}
			EXPECT(rc >= 0 && rc < CC_LOBBY_R_COUNT, "result %d", rc);
			results[rc]++;
			cc_lobby_tick(w->r, now);
			int n = cc_lobby_count(w->r);
			compare(w, n ? cc_lobby_at(w->r, n - 1)->id + 1 : max_seen);
			if (n && cc_lobby_at(w->r, n - 1)->id > max_seen)
				max_seen = cc_lobby_at(w->r, n - 1)->id;
		}
		total_began += w->began;
		total_starting += w->starting;
		cc_lobby_registry_free(w->r);
		free(w);
	}
	/* The sequences reach every corner: matches began, and every refusal but not_registered happened. */
	ck_assert_int_gt(total_began, 50);
	ck_assert_int_gt(total_starting, total_began - 1);
	for (int i = 0; i < CC_LOBBY_R_COUNT; i++)
		if (i != CC_LOBBY_R_NOT_REGISTERED && i != CC_LOBBY_R_INVALID)
			ck_assert_msg(results[i] > 0, "no %s in 200 sequences", cc_lobby_result_name(i));
}
END_TEST

START_TEST(config_refused)
{
	struct cc_lobby_config c = cfg;
	c.max_lobbies = 0;
	ck_assert_ptr_null(cc_lobby_registry_create(&c, NULL, NULL));
	c = cfg;
	c.max_players = 17;
	ck_assert_ptr_null(cc_lobby_registry_create(&c, NULL, NULL));
	c.max_players = 1;
	ck_assert_ptr_null(cc_lobby_registry_create(&c, NULL, NULL));
	ck_assert_ptr_null(cc_lobby_registry_create(NULL, NULL, NULL));
}
END_TEST

static Suite *lobby_suite(void)
{
	Suite *s = suite_create("lobby");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, names);
	tcase_add_test(tc, refusals);
	tcase_add_test(tc, countdown_both_ways);
	tcase_add_test(tc, in_match_and_back);
	tcase_add_test(tc, teams);
	tcase_add_test(tc, config_refused);
	tcase_add_test(tc, property_random_sequences);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return cc_test_run_suite(lobby_suite());
}
