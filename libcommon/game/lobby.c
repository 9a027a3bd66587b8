/*
 * lobby.c - see lobby.h. Members and lobbies live in growable arrays;
 * lobbies are kept in id order (ids only grow, so creation appends and a
 * deletion closes the gap), which is the list's paging order. Both are
 * bounded by the caller (connections, --max-lobbies): linear scans.
 */
#include "game/lobby.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys/utf8.h"
#include "sys/banned.h"

struct cc_lobby_registry {
	struct cc_lobby_config cfg;
	cc_lobby_event_fn fn;
	void *ctx;
	struct cc_lobby_member *members;
	int n_members, cap_members;
	struct cc_lobby *lobbies; /* id order */
	int n_lobbies, cap_lobbies;
	uint32_t next_member, next_lobby;
	uint32_t revision;
};

static const char *const result_names[] = { "ok", "not_registered", "already_in_lobby", "lobby_full",
					    "unknown_lobby", "already_started", "too_many_lobbies", "invalid_parameters" };
static const char *const state_names[] = { "open", "starting", "in_match" };

const char *cc_lobby_result_name(int result)
{
	return result >= 0 && result < (int)CC_ARRAY_LEN(result_names) ? result_names[result] : "unknown";
}

const char *cc_lobby_state_name(int state)
{
	return state >= 0 && state < (int)CC_ARRAY_LEN(state_names) ? state_names[state] : "unknown";
}

bool cc_lobby_name_valid(const char *s, size_t len)
{
	if (!s || len < 1 || len > CC_LOBBY_NAME_MAX)
		return false;
	for (size_t i = 0; i < len;) {
		uint32_t cp;
		size_t n = cc_utf8_decode((const unsigned char *)s + i, len - i, &cp);
		if (n == 0 || cp < 0x20 || (cp >= 0x7F && cp <= 0x9F))
			return false;
		i += n;
	}
	return true;
}

struct cc_lobby_registry *cc_lobby_registry_create(const struct cc_lobby_config *cfg, cc_lobby_event_fn fn, void *ctx)
{
	if (!cfg || cfg->max_lobbies < 1 || cfg->max_players < 2 || cfg->max_players > CC_LOBBY_MEMBERS_MAX ||
	    cfg->countdown_ms < 0)
		return NULL;
	struct cc_lobby_registry *r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	r->cfg = *cfg;
	r->fn = fn;
	r->ctx = ctx;
	r->next_member = r->next_lobby = 1;
	return r;
}

void cc_lobby_registry_free(struct cc_lobby_registry *r)
{
	if (!r)
		return;
	free(r->members);
	free(r->lobbies);
	free(r);
}

/* ---- lookups ----------------------------------------------------------------- */

static struct cc_lobby_member *member_of(const struct cc_lobby_registry *r, uint32_t id)
{
	for (int i = 0; id && i < r->n_members; i++)
		if (r->members[i].id == id)
			return &r->members[i];
	return NULL;
}

static int lobby_index(const struct cc_lobby_registry *r, uint32_t id)
{
	/* Id order: a binary search. */
	int lo = 0, hi = r->n_lobbies - 1;
	while (id && lo <= hi) {
		int mid = lo + (hi - lo) / 2;
		if (r->lobbies[mid].id == id)
			return mid;
		if (r->lobbies[mid].id < id)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

static struct cc_lobby *lobby_of(const struct cc_lobby_registry *r, uint32_t id)
{
	int i = lobby_index(r, id);
	return i < 0 ? NULL : &r->lobbies[i];
}

const struct cc_lobby *cc_lobby_find(const struct cc_lobby_registry *r, uint32_t lobby_id)
{
	return lobby_of(r, lobby_id);
}

const struct cc_lobby_member *cc_lobby_member(const struct cc_lobby_registry *r, uint32_t member)
{
	return member_of(r, member);
}

int cc_lobby_count(const struct cc_lobby_registry *r)
{
	return r->n_lobbies;
}

const struct cc_lobby *cc_lobby_at(const struct cc_lobby_registry *r, int index)
{
	return index >= 0 && index < r->n_lobbies ? &r->lobbies[index] : NULL;
}

int cc_lobby_member_count(const struct cc_lobby_registry *r)
{
	return r->n_members;
}

uint32_t cc_lobby_revision(const struct cc_lobby_registry *r)
{
	return r->revision;
}

int cc_lobby_count_in(const struct cc_lobby_registry *r, enum cc_lobby_state state)
{
	int n = 0;
	for (int i = 0; i < r->n_lobbies; i++)
		n += r->lobbies[i].state == state;
	return n;
}

int cc_lobby_team_of(int index, int n)
{
	(void)n; /* alternating: the odd one out is always team 0's */
	return index % 2;
}

/* ---- events and the countdown ------------------------------------------------ */

static void emit(struct cc_lobby_registry *r, enum cc_lobby_event_kind kind, const struct cc_lobby *l)
{
	struct cc_lobby_event ev = { .kind = kind, .lobby_id = l->id, .start_at_ms = l->start_at_ms };
	if (kind != CC_LOBBY_EV_BEGIN)
		r->revision++;
	ev.revision = r->revision;
	if (r->fn)
		r->fn(r->ctx, &ev);
}

static bool all_ready(const struct cc_lobby_registry *r, const struct cc_lobby *l)
{
	if (l->n_members < 2)
		return false;
	for (int i = 0; i < l->n_members; i++) {
		const struct cc_lobby_member *m = member_of(r, l->members[i]);
		if (!m || !m->ready)
			return false;
	}
	return true;
}

/*
 * After any change to an open or starting lobby: the condition re-checked
 * both ways. changed says the lobby's content changed (an UPDATED is due
 * anyway). Emits at most one UPDATED, then MATCH_STARTING when the
 * countdown begins.
 */
static void recheck(struct cc_lobby_registry *r, struct cc_lobby *l, bool changed, int64_t now_ms)
{
	if (l->state == CC_LOBBY_STATE_IN_MATCH) {
		if (changed)
			emit(r, CC_LOBBY_EV_UPDATED, l);
		return;
	}
	bool ready = all_ready(r, l);
	if (l->state == CC_LOBBY_STATE_OPEN && ready) {
		l->state = CC_LOBBY_STATE_STARTING;
		l->start_at_ms = now_ms + r->cfg.countdown_ms;
		emit(r, CC_LOBBY_EV_UPDATED, l);
		emit(r, CC_LOBBY_EV_MATCH_STARTING, l);
		return;
	}
	if (l->state == CC_LOBBY_STATE_STARTING && !ready) {
		l->state = CC_LOBBY_STATE_OPEN;
		l->start_at_ms = 0;
		changed = true;
	}
	if (changed)
		emit(r, CC_LOBBY_EV_UPDATED, l);
}

/* Removes member m from its lobby; deletes the lobby when it empties, else re-checks. */
static void remove_from_lobby(struct cc_lobby_registry *r, struct cc_lobby_member *m, int64_t now_ms)
{
	int li = lobby_index(r, m->lobby_id);
	m->lobby_id = 0;
	m->ready = false;
	if (li < 0)
		return;
	struct cc_lobby *l = &r->lobbies[li];
	for (int i = 0; i < l->n_members; i++)
		if (l->members[i] == m->id) {
			memmove(&l->members[i], &l->members[i + 1], (size_t)(l->n_members - i - 1) * sizeof l->members[0]);
			l->n_members--;
			break;
		}
	if (l->n_members > 0) {
		recheck(r, l, true, now_ms);
		return;
	}
	struct cc_lobby gone = *l;
	memmove(&r->lobbies[li], &r->lobbies[li + 1], (size_t)(r->n_lobbies - li - 1) * sizeof r->lobbies[0]);
	r->n_lobbies--;
	emit(r, CC_LOBBY_EV_DELETED, &gone);
}

/* ---- members -------------------------------------------------------------------- */

uint32_t cc_lobby_register(struct cc_lobby_registry *r, const char *name, size_t len)
{
	if (!cc_lobby_name_valid(name, len) || r->next_member == 0)
		return 0;
	if (r->n_members == r->cap_members) {
		int cap = r->cap_members ? r->cap_members * 2 : 16;
		struct cc_lobby_member *n = realloc(r->members, (size_t)cap * sizeof *n);
		if (!n)
			return 0;
		r->members = n;
		r->cap_members = cap;
	}
	struct cc_lobby_member *m = &r->members[r->n_members++];
	memset(m, 0, sizeof *m);
	m->id = r->next_member++;
	memcpy(m->name, name, len);
	m->name_len = len;
	return m->id;
}

void cc_lobby_unregister(struct cc_lobby_registry *r, uint32_t member, int64_t now_ms)
{
	struct cc_lobby_member *m = member_of(r, member);
	if (!m)
		return;
	if (m->lobby_id)
		remove_from_lobby(r, m, now_ms);
	/* remove_from_lobby may not move members: m is still valid. */
	*m = r->members[--r->n_members];
}

int cc_lobby_rename(struct cc_lobby_registry *r, uint32_t member, const char *name, size_t len)
{
	struct cc_lobby_member *m = member_of(r, member);
	if (!m)
		return CC_LOBBY_R_NOT_REGISTERED;
	if (!cc_lobby_name_valid(name, len))
		return CC_LOBBY_R_INVALID;
	if (m->name_len == len && memcmp(m->name, name, len) == 0)
		return CC_LOBBY_R_OK; /* no change, no broadcast */
	memcpy(m->name, name, len);
	m->name[len] = '\0';
	m->name_len = len;
	struct cc_lobby *l = lobby_of(r, m->lobby_id);
	if (l)
		emit(r, CC_LOBBY_EV_UPDATED, l);
	return CC_LOBBY_R_OK;
}

/* ---- lobbies -------------------------------------------------------------------- */

int cc_lobby_create(struct cc_lobby_registry *r, uint32_t member, const char *name, size_t len, int max_players,
		    int64_t now_ms, uint32_t *lobby_id)
{
	(void)now_ms; /* a lobby of one never starts */
	struct cc_lobby_member *m = member_of(r, member);
	if (lobby_id)
		*lobby_id = 0;
	if (!m)
		return CC_LOBBY_R_NOT_REGISTERED;
	if (!cc_lobby_name_valid(name, len) || max_players < 2 || max_players > r->cfg.max_players)
		return CC_LOBBY_R_INVALID;
	if (m->lobby_id)
		return CC_LOBBY_R_ALREADY_IN_LOBBY;
	if (r->n_lobbies >= r->cfg.max_lobbies || r->next_lobby == 0)
		return CC_LOBBY_R_TOO_MANY;
	if (r->n_lobbies == r->cap_lobbies) {
		int cap = r->cap_lobbies ? r->cap_lobbies * 2 : 16;
		struct cc_lobby *n = realloc(r->lobbies, (size_t)cap * sizeof *n);
		if (!n)
			return CC_LOBBY_R_TOO_MANY; /* out of memory: the server has no room for another */
		r->lobbies = n;
		r->cap_lobbies = cap;
	}
	struct cc_lobby *l = &r->lobbies[r->n_lobbies++];
	memset(l, 0, sizeof *l);
	l->id = r->next_lobby++;
	memcpy(l->name, name, len);
	l->name_len = len;
	l->max_players = max_players;
	l->state = CC_LOBBY_STATE_OPEN;
	l->members[l->n_members++] = m->id;
	m->lobby_id = l->id;
	m->ready = false;
	if (lobby_id)
		*lobby_id = l->id;
	emit(r, CC_LOBBY_EV_UPDATED, l);
	return CC_LOBBY_R_OK;
}

int cc_lobby_join(struct cc_lobby_registry *r, uint32_t member, uint32_t lobby_id, int64_t now_ms)
{
	struct cc_lobby_member *m = member_of(r, member);
	if (!m)
		return CC_LOBBY_R_NOT_REGISTERED;
	if (m->lobby_id)
		return CC_LOBBY_R_ALREADY_IN_LOBBY;
	struct cc_lobby *l = lobby_of(r, lobby_id);
	if (!l)
		return CC_LOBBY_R_UNKNOWN;
	if (l->state != CC_LOBBY_STATE_OPEN)
		return CC_LOBBY_R_ALREADY_STARTED;
	if (l->n_members >= l->max_players)
		return CC_LOBBY_R_FULL;
	l->members[l->n_members++] = m->id;
	m->lobby_id = l->id;
	m->ready = false;
	recheck(r, l, true, now_ms); /* a not-ready newcomer: the lobby stays open */
	return CC_LOBBY_R_OK;
}

int cc_lobby_leave(struct cc_lobby_registry *r, uint32_t member, int64_t now_ms)
{
	struct cc_lobby_member *m = member_of(r, member);
	if (!m)
		return CC_LOBBY_R_NOT_REGISTERED;
	struct cc_lobby *l = lobby_of(r, m->lobby_id);
	if (!l)
		return CC_LOBBY_R_UNKNOWN;
	if (l->state == CC_LOBBY_STATE_IN_MATCH)
		return CC_LOBBY_R_ALREADY_STARTED;
	remove_from_lobby(r, m, now_ms);
	return CC_LOBBY_R_OK;
}

int cc_lobby_set_ready(struct cc_lobby_registry *r, uint32_t member, bool ready, int64_t now_ms)
{
	struct cc_lobby_member *m = member_of(r, member);
	if (!m)
		return CC_LOBBY_R_NOT_REGISTERED;
	struct cc_lobby *l = lobby_of(r, m->lobby_id);
	if (!l)
		return CC_LOBBY_R_UNKNOWN;
	if (l->state == CC_LOBBY_STATE_IN_MATCH)
		return CC_LOBBY_R_ALREADY_STARTED;
	if (m->ready == ready)
		return CC_LOBBY_R_OK; /* no change, no broadcast */
	m->ready = ready;
	recheck(r, l, true, now_ms);
	return CC_LOBBY_R_OK;
}

void cc_lobby_tick(struct cc_lobby_registry *r, int64_t now_ms)
{
	for (int i = 0; i < r->n_lobbies; i++) {
		struct cc_lobby *l = &r->lobbies[i];
		if (l->state != CC_LOBBY_STATE_STARTING || l->start_at_ms > now_ms)
			continue;
		l->state = CC_LOBBY_STATE_IN_MATCH;
		l->matches++;
		emit(r, CC_LOBBY_EV_BEGIN, l);
		emit(r, CC_LOBBY_EV_UPDATED, l);
	}
}

int cc_lobby_match_ended(struct cc_lobby_registry *r, uint32_t lobby_id)
{
	struct cc_lobby *l = lobby_of(r, lobby_id);
	if (!l)
		return CC_ENOTFOUND;
	if (l->state != CC_LOBBY_STATE_IN_MATCH)
		return CC_EINVAL;
	l->state = CC_LOBBY_STATE_OPEN;
	l->start_at_ms = 0;
	for (int i = 0; i < l->n_members; i++) {
		struct cc_lobby_member *m = member_of(r, l->members[i]);
		if (m)
			m->ready = false;
	}
	emit(r, CC_LOBBY_EV_UPDATED, l);
	return 0;
}

/* ---- invariants --------------------------------------------------------------------- */

#define BROKEN(...)                                    \
	do {                                           \
		snprintf(why, whylen, __VA_ARGS__);    \
		return false;                          \
	} while (0)

bool cc_lobby_check(const struct cc_lobby_registry *r, char *why, size_t whylen)
{
	if (r->n_lobbies > r->cfg.max_lobbies)
		BROKEN("%d lobbies, cap %d", r->n_lobbies, r->cfg.max_lobbies);
	for (int i = 0; i < r->n_lobbies; i++) {
		const struct cc_lobby *l = &r->lobbies[i];
		if (i > 0 && r->lobbies[i - 1].id >= l->id)
			BROKEN("lobbies out of id order at %d", i);
		if (l->id == 0 || l->id >= r->next_lobby)
			BROKEN("lobby id %u never handed out", l->id);
		if (l->n_members < 1)
			BROKEN("lobby %u is empty but not deleted", l->id);
		if (l->n_members > l->max_players || l->max_players > r->cfg.max_players || l->max_players < 2)
			BROKEN("lobby %u holds %d of %d (cap %d)", l->id, l->n_members, l->max_players, r->cfg.max_players);
		if (!cc_lobby_name_valid(l->name, l->name_len))
			BROKEN("lobby %u has an invalid name", l->id);
		for (int j = 0; j < l->n_members; j++) {
			const struct cc_lobby_member *m = member_of(r, l->members[j]);
			if (!m)
				BROKEN("lobby %u lists member %u, not registered", l->id, l->members[j]);
			if (m->lobby_id != l->id)
				BROKEN("lobby %u lists member %u, which is in lobby %u", l->id, m->id, m->lobby_id);
			for (int k = 0; k < j; k++)
				if (l->members[k] == l->members[j])
					BROKEN("lobby %u lists member %u twice", l->id, m->id);
		}
		bool ready = all_ready(r, l);
		if (l->state == CC_LOBBY_STATE_OPEN && ready)
			BROKEN("lobby %u is open with all %d members ready", l->id, l->n_members);
		if (l->state == CC_LOBBY_STATE_STARTING && !ready)
			BROKEN("lobby %u is starting without all of at least 2 members ready", l->id);
		if (l->state != CC_LOBBY_STATE_OPEN && l->state != CC_LOBBY_STATE_STARTING &&
		    l->state != CC_LOBBY_STATE_IN_MATCH)
			BROKEN("lobby %u in state %d", l->id, (int)l->state);
	}
	for (int i = 0; i < r->n_members; i++) {
		const struct cc_lobby_member *m = &r->members[i];
		if (m->id == 0 || m->id >= r->next_member)
			BROKEN("member id %u never handed out", m->id);
		for (int k = 0; k < i; k++)
			if (r->members[k].id == m->id)
				BROKEN("member %u registered twice", m->id);
		if (!cc_lobby_name_valid(m->name, m->name_len))
			BROKEN("member %u has an invalid name", m->id);
		if (m->lobby_id == 0) {
			if (m->ready)
				BROKEN("member %u is ready in no lobby", m->id);
			continue;
		}
		const struct cc_lobby *l = lobby_of(r, m->lobby_id);
		if (!l)
			BROKEN("member %u is in lobby %u, which does not exist", m->id, m->lobby_id);
		bool listed = false;
		for (int j = 0; j < l->n_members; j++)
			listed |= l->members[j] == m->id;
		if (!listed)
			BROKEN("member %u is in lobby %u, which does not list it", m->id, l->id);
	}
	return true;
}
