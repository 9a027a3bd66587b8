/*
 * community.c - gsclient's community-mode subcommands (issue 23): real
 * ENet clients (lobbyc.h) against a real `cc-gameserver --mode=community`,
 * each scenario checking what it saw. Every check prints one JSON line
 * {"check":NAME,"ok":BOOL,"detail":TEXT}; the last line is
 * {"result":"ok"|"fail","checks":N,"failed":K,"first_failure":NAME}.
 * --events=FILE writes every client's events (lobbyc.h) as JSON lines.
 * Exit status: 0 when every check passed, 1 when one failed, 2 on bad
 * arguments.
 *
 *   gsclient community-e2e --port=P [--countdown-ms=5000] [--prehandshake-ms=10000]
 *       The OpenPolytopia-style run, six registered clients and three
 *       others: version refusal; a request before the hello refused;
 *       full, double and unknown-lobby joins; renames in broadcasts;
 *       ready -> countdown -> match -> back to the lobby; the last
 *       not-ready player leaving (and another disconnecting) starts the
 *       countdown for the rest; a leave during the countdown re-opens it
 *       and no solo match starts; a silent pre-handshake peer receives
 *       nothing and is dropped at the deadline.
 *
 *   gsclient community-property --port=P [--clients=8] [--steps=150] [--seed=1] [--step-ms=0]
 *       Random requests from the clients; after every step each client's
 *       view (broadcasts only) is compared with the server's lobby_list,
 *       and every pair of clients must hold the same view at every
 *       revision both saw. --step-ms=M pumps a random 0..2M ms before each
 *       step, so countdowns run out and matches start and end meanwhile.
 *
 *   gsclient community-slow --port=P --server-log=FILE [--clients=4] [--seconds=40] [--quiet-bound-ms=10000]
 *       First a registered client stops servicing its ENet host while
 *       nothing is broadcast: FILE must show it dropped (peer_left or
 *       peer_kicked with its member id) within the bound. Then one
 *       member of a lobby stops servicing its ENet host; the others keep
 *       renaming (each rename is a lobby_updated to everyone) and measure
 *       how long each broadcast takes to reach them, until FILE has a
 *       peer_kicked backlog_overflow line (or the seconds run out).
 *
 *   gsclient community-idle --port=P --keepalive-ms=MS
 *       A registered player that sends nothing (its host still services
 *       ENet) is kicked idle_timeout at the keep-alive; one that pings
 *       (lobbyc: every 2 s) stays.
 *
 *   gsclient community-matches --port=P [--lobbies=10] [--size=6] [--quitter=1]
 *       lobbies x size clients fill their lobbies, ready up and play at
 *       once; every member's match_end must agree with its final snapshot
 *       and with the other members'. Prints one {"lobby_match":...} line
 *       per lobby for the script to compare with --results-log.
 *       --quitter=1 adds a lobby of 3 whose third player disconnects 2 s
 *       into the match: the two others must play it out, agree, and be
 *       back in their lobby (open, two members).
 *
 *   gsclient community-hostile --port=P --max-lobbies=N
 *       Hostile community inputs while an honest lobby plays a match:
 *       names breaking the rules in hello (invalid_name), set_name and
 *       lobby_create (invalid_parameters); a token (wrong_mode); lobby
 *       requests before the hello; a paced create/leave loop and an
 *       unpaced one (rate_limited); lobbies up to the cap and the list's
 *       pages.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lobbyc.h"
#include "sys/clock.h"
#include "sys/banned.h"

#define MAXC 160
#define STEP_MS 3000 /* a request's answer, a broadcast's arrival */

struct scen {
	struct lc_client *all[MAXC];
	int n;
	int port;
	FILE *events;
	int checks, failed;
	char first_failure[96];
};

CC_PRINTF(4, 5) static bool check(struct scen *s, bool ok, const char *what, const char *fmt, ...)
{
	char detail[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof detail, fmt, ap);
	va_end(ap);
	s->checks++;
	if (!ok && s->failed++ == 0)
		snprintf(s->first_failure, sizeof s->first_failure, "%s", what);
	printf("{\"check\":");
	lc_json_str(stdout, what);
	printf(",\"ok\":%s,\"detail\":", ok ? "true" : "false");
	lc_json_str(stdout, detail);
	printf("}\n");
	fflush(stdout);
	return ok;
}

static int finish(struct scen *s)
{
	printf("{\"result\":\"%s\",\"checks\":%d,\"failed\":%d,\"first_failure\":", s->failed ? "fail" : "ok", s->checks,
	       s->failed);
	lc_json_str(stdout, s->first_failure);
	printf("}\n");
	for (int i = 0; i < s->n; i++) {
		lc_free(s->all[i]);
		free(s->all[i]);
	}
	if (s->events)
		fclose(s->events);
	return s->failed ? 1 : 0;
}

static bool scen_init(struct scen *s, int argc, char **argv)
{
	memset(s, 0, sizeof *s);
	s->port = (int)arg_long(argc, argv, "port", 0);
	const char *ev = arg(argc, argv, "events");
	if (ev && !(s->events = fopen(ev, "w"))) {
		fprintf(stderr, "gsclient: cannot write %s\n", ev);
		return false;
	}
	if (s->port <= 0) {
		fprintf(stderr, "gsclient: --port is required\n");
		return false;
	}
	return true;
}

/* A connected client (no hello); NULL when it could not connect (a failed check). */
static struct lc_client *connect_client(struct scen *s, const char *what)
{
	struct lc_client *cl = calloc(1, sizeof *cl);
	if (!cl || s->n == MAXC) {
		free(cl);
		check(s, false, what, "out of clients");
		return NULL;
	}
	if (lc_connect(cl, s->n, "127.0.0.1", s->port, s->events) != 0) {
		check(s, false, what, "no ENet connection to port %d", s->port);
		lc_free(cl);
		free(cl);
		return NULL;
	}
	s->all[s->n++] = cl;
	return cl;
}

/* A registered client: hello {auth 2, name}, confirmed by a lobby_list answer (no refusal). */
static struct lc_client *join_server(struct scen *s, const char *name)
{
	struct lc_client *cl = connect_client(s, "connect");
	if (!cl)
		return NULL;
	lc_hello(cl, PROTOCOL, name);
	if (!lc_list_all(s->all, s->n, cl, STEP_MS) || cl->c.refused || cl->c.gone) {
		check(s, false, "register", "%s: no lobby_list after hello (refused %s %s, gone %d)", name,
		      cl->c.reason, cl->c.detail, cl->c.gone);
		return NULL;
	}
	return cl;
}

/* Sends nothing: waits for the answer to req and checks its result; returns the result (-1: none). */
static int expect_result(struct scen *s, struct lc_client *cl, uint16_t req, int want, const char *what)
{
	const struct lc_result *r = lc_wait_result(s->all, s->n, cl, req, STEP_MS);
	if (!r) {
		check(s, false, what, "client %d (%s): no lobby_result for request %u within %d ms (gone %d, %s)", cl->index,
		      cl->name, req, STEP_MS, cl->c.gone, cl->c.reason);
		return -1;
	}
	const char *got = cc_wire_lobby_result_name(r->result);
	check(s, r->result == want, what, "client %d (%s): %s, expected %s (lobby %u, member %u)", cl->index, cl->name,
	      got ? got : "unknown", cc_wire_lobby_result_name((uint8_t)want), r->lobby_id, r->member_id);
	return r->result;
}

/* ---- waits on views ---------------------------------------------------------------- */

struct lobby_cond {
	struct lc_client **who;
	int n_who;
	uint32_t lobby_id;
	int state;        /* -1: any */
	int members;      /* -1: any */
	int ready;        /* -1: any; else the number of ready members */
	const char *member_name; /* non-NULL: some member has this name */
	bool deleted;     /* the lobby must be gone from the view */
};

static bool lobby_ok(const struct lc_client *cl, const struct lobby_cond *w)
{
	const struct lc_lobby *l = lc_view_lobby(&cl->view, w->lobby_id);
	if (w->deleted)
		return l == NULL;
	if (!l || (w->state >= 0 && l->state != w->state) || (w->members >= 0 && l->n_members != w->members))
		return false;
	if (w->ready >= 0) {
		int r = 0;
		for (int i = 0; i < l->n_members; i++)
			r += l->members[i].ready;
		if (r != w->ready)
			return false;
	}
	if (w->member_name) {
		bool found = false;
		for (int i = 0; i < l->n_members; i++)
			found |= strcmp(l->members[i].name, w->member_name) == 0;
		if (!found)
			return false;
	}
	return true;
}

static bool all_see(void *ctx)
{
	const struct lobby_cond *w = ctx;
	for (int i = 0; i < w->n_who; i++)
		if (!lobby_ok(w->who[i], w))
			return false;
	return true;
}

static void describe_lobby(const struct lc_client *cl, uint32_t id, char *buf, size_t cap)
{
	const struct lc_lobby *l = lc_view_lobby(&cl->view, id);
	if (!l) {
		snprintf(buf, cap, "client %d: lobby %u not in its view (revision %u)", cl->index, id, cl->view.revision);
		return;
	}
	size_t o = (size_t)snprintf(buf, cap, "client %d: lobby %u %s %d/%u [", cl->index, id,
				    cc_wire_lobby_state_name(l->state), l->n_members, l->max_players);
	for (int i = 0; i < l->n_members && o < cap; i++)
		o += (size_t)snprintf(buf + o, cap - o, "%s%u:%s%s", i ? " " : "", l->members[i].id, l->members[i].name,
				      l->members[i].ready ? "(ready)" : "");
	if (o < cap)
		snprintf(buf + o, cap - o, "] revision %u", cl->view.revision);
}

/* Waits until every client in who sees the lobby as w says; one check line. */
static bool expect_view(struct scen *s, struct lobby_cond *w, int64_t timeout_ms, const char *what)
{
	int64_t t0 = cc_clock_ms();
	bool ok = lc_wait(s->all, s->n, all_see, w, timeout_ms);
	char d[600] = "";
	for (int i = 0; i < w->n_who; i++)
		if (!lobby_ok(w->who[i], w)) {
			describe_lobby(w->who[i], w->lobby_id, d, sizeof d);
			break;
		}
	if (ok)
		describe_lobby(w->who[0], w->lobby_id, d, sizeof d);
	return check(s, ok, what, "%s after %lld ms", d, (long long)(cc_clock_ms() - t0));
}

static bool no_stale_or_gap(struct scen *s, struct lc_client **who, int n, const char *what)
{
	for (int i = 0; i < n; i++)
		if (who[i]->stale || who[i]->gaps)
			return check(s, false, what, "client %d: %llu stale and %llu skipped revisions", who[i]->index,
				     (unsigned long long)who[i]->stale, (unsigned long long)who[i]->gaps);
	return check(s, true, what, "%d clients, every broadcast newer by one than the last", n);
}

/* ---- community-e2e ------------------------------------------------------------------- */

struct welcome_cond {
	struct lc_client **who;
	int n;
	int welcomes; /* each must have at least this many */
	int matches;  /* ... and have finished this many */
};

static bool welcomed(void *ctx)
{
	const struct welcome_cond *w = ctx;
	for (int i = 0; i < w->n; i++)
		if (w->who[i]->welcomes < w->welcomes || w->who[i]->n_matches < w->matches)
			return false;
	return true;
}

static bool gone(void *ctx)
{
	return ((struct lc_client *)ctx)->c.gone;
}

static int e2e(int argc, char **argv)
{
	struct scen s;
	if (!scen_init(&s, argc, argv))
		return 2;
	long countdown = arg_long(argc, argv, "countdown-ms", 5000);
	long pre_ms = arg_long(argc, argv, "prehandshake-ms", 10000);
	long match_ms = arg_long(argc, argv, "match-ms", 30000);

	/* A silent peer: connected, never says hello. It must hear nothing and be dropped at the deadline. */
	struct lc_client *silent = connect_client(&s, "connect silent peer");
	if (!silent)
		return finish(&s);

	/* Version refusal. */
	struct lc_client *v = connect_client(&s, "connect");
	if (!v)
		return finish(&s);
	lc_hello(v, 99, "Version99");
	lc_wait(s.all, s.n, gone, v, STEP_MS);
	check(&s, v->c.refused && strcmp(v->c.reason, "protocol_mismatch") == 0 && v->c.gone, "version refusal",
	      "hello version 99: refused=%d reason '%s' (%s), disconnected=%d data %d", v->c.refused, v->c.reason,
	      v->c.detail, v->c.gone, v->gone_data);

	/* An action before the hello: not_registered, and the peer is dropped. */
	struct lc_client *u = connect_client(&s, "connect");
	if (!u)
		return finish(&s);
	uint16_t ureq = lc_create(u, 2, "early");
	const struct lc_result *ur = lc_wait_result(s.all, s.n, u, ureq, STEP_MS);
	check(&s, ur && ur->result == CC_LOBBY_NOT_REGISTERED, "unregistered action refused",
	      "lobby_create before hello: %s%s (refused '%s')", ur ? "lobby_result " : "no lobby_result",
	      ur ? cc_wire_lobby_result_name(ur->result) : "", u->c.reason);

	/* Six players. */
	const char *names[] = { "Ann", "Bob", "Cyd", "Dee", "Eve", "Fay" };
	struct lc_client *p[6];
	for (int i = 0; i < 6; i++)
		if (!(p[i] = join_server(&s, names[i])))
			return finish(&s);
	struct lc_client *A = p[0], *B = p[1], *C = p[2], *D = p[3], *E = p[4], *F = p[5];
	check(&s, A->list_total == 0, "empty server", "a fresh server lists %u lobbies", A->list_total);

	/* A creates alpha (3 places); B and F join; C finds it full; A joins twice; C tries a lobby that is not. */
	if (expect_result(&s, A, lc_create(A, 3, "alpha"), CC_LOBBY_OK, "create alpha") != CC_LOBBY_OK)
		return finish(&s);
	uint32_t alpha = A->lobby_id;
	check(&s, alpha != 0 && A->member_id != 0, "create answers ids", "lobby %u, member %u", alpha, A->member_id);
	struct lobby_cond w = { .who = p, .n_who = 6, .lobby_id = alpha, .state = CC_LOBBY_OPEN, .members = 1, .ready = -1 };
	expect_view(&s, &w, STEP_MS, "every registered player hears of alpha");
	expect_result(&s, B, lc_join(B, alpha), CC_LOBBY_OK, "B joins alpha");
	expect_result(&s, F, lc_join(F, alpha), CC_LOBBY_OK, "F joins alpha");
	expect_result(&s, C, lc_join(C, alpha), CC_LOBBY_FULL, "full join refused");
	expect_result(&s, A, lc_join(A, alpha), CC_LOBBY_ALREADY_IN_LOBBY, "double join refused");
	expect_result(&s, A, lc_create(A, 2, "second"), CC_LOBBY_ALREADY_IN_LOBBY, "create while in a lobby refused");
	expect_result(&s, C, lc_join(C, alpha + 100000), CC_LOBBY_UNKNOWN, "unknown lobby join refused");
	expect_result(&s, C, lc_join(C, 0), CC_LOBBY_UNKNOWN, "lobby 0 join refused");
	expect_result(&s, C, lc_ready(C, true), CC_LOBBY_UNKNOWN, "ready outside a lobby refused");
	expect_result(&s, C, lc_leave(C), CC_LOBBY_UNKNOWN, "leave outside a lobby refused");
	w.members = 3;
	expect_view(&s, &w, STEP_MS, "alpha has A, B, F in every view");

	/* C creates beta; D and E join. */
	if (expect_result(&s, C, lc_create(C, 3, "beta"), CC_LOBBY_OK, "create beta") != CC_LOBBY_OK)
		return finish(&s);
	uint32_t beta = C->lobby_id;
	expect_result(&s, D, lc_join(D, beta), CC_LOBBY_OK, "D joins beta");
	expect_result(&s, E, lc_join(E, beta), CC_LOBBY_OK, "E joins beta");

	/* A rename reaches every view of alpha's members list. */
	expect_result(&s, B, lc_set_name(B, "Bob the Renamed"), CC_LOBBY_OK, "rename");
	w = (struct lobby_cond){ .who = p, .n_who = 6, .lobby_id = alpha, .state = CC_LOBBY_OPEN, .members = 3,
				 .ready = -1, .member_name = "Bob the Renamed" };
	expect_view(&s, &w, STEP_MS, "rename visible in broadcasts");

	/* Ready: A and B ready, F not: still open. Then F (the last not ready) leaves: the countdown starts. */
	expect_result(&s, A, lc_ready(A, true), CC_LOBBY_OK, "A ready");
	expect_result(&s, B, lc_ready(B, true), CC_LOBBY_OK, "B ready");
	w = (struct lobby_cond){ .who = p, .n_who = 6, .lobby_id = alpha, .state = CC_LOBBY_OPEN, .members = 3, .ready = 2 };
	expect_view(&s, &w, STEP_MS, "two of three ready: alpha stays open");
	int64_t t_leave = cc_clock_ms();
	expect_result(&s, F, lc_leave(F), CC_LOBBY_OK, "F (the last not ready) leaves");
	w = (struct lobby_cond){ .who = p, .n_who = 6, .lobby_id = alpha, .state = CC_LOBBY_STARTING, .members = 2, .ready = 2 };
	expect_view(&s, &w, STEP_MS, "the last not-ready player leaving starts the countdown");
	check(&s, A->starting_lobby == alpha && C->starting_lobby == alpha, "match_starting broadcast",
	      "A saw match_starting for %u, C (another lobby) for %u; delay %u ms", A->starting_lobby, C->starting_lobby,
	      A->starting_delay_ms);
	check(&s, A->starting_delay_ms > countdown - 1000 && A->starting_delay_ms <= countdown, "countdown length",
	      "match_starting delay_ms %u, the countdown %ld ms", A->starting_delay_ms, countdown);
	expect_result(&s, F, lc_join(F, alpha), CC_LOBBY_ALREADY_STARTED, "join during the countdown refused");

	/* The match: A and B are welcomed again (mode 2, one per team), play it, and are back in alpha. */
	struct lc_client *ab[2] = { A, B };
	struct welcome_cond wc = { ab, 2, 1, 0 };
	bool in = lc_wait(s.all, s.n, welcomed, &wc, countdown + STEP_MS);
	check(&s, in, "welcome after the countdown", "A welcomes %d, B welcomes %d, %lld ms after the leave",
	      A->welcomes, B->welcomes, (long long)(cc_clock_ms() - t_leave));
	if (!in)
		return finish(&s);
	check(&s, A->matches[0].mode == CC_WIRE_MODE_COMMUNITY && B->matches[0].mode == CC_WIRE_MODE_COMMUNITY &&
			  A->matches[0].team != B->matches[0].team && A->matches[0].slot != B->matches[0].slot,
	      "welcome into the match", "A slot %d team %d mode %d, B slot %d team %d mode %d", A->matches[0].slot,
	      A->matches[0].team, A->matches[0].mode, B->matches[0].slot, B->matches[0].team, B->matches[0].mode);
	w = (struct lobby_cond){ .who = p, .n_who = 6, .lobby_id = alpha, .state = CC_LOBBY_IN_MATCH, .members = 2, .ready = -1 };
	expect_view(&s, &w, STEP_MS, "alpha in_match in every view");
	expect_result(&s, F, lc_join(F, alpha), CC_LOBBY_ALREADY_STARTED, "join during the match refused");
	check(&s, C->welcomes == 0 && D->welcomes == 0 && F->welcomes == 0, "only alpha's members play",
	      "welcomes: C %d D %d F %d", C->welcomes, D->welcomes, F->welcomes);

	/* Meanwhile beta: C and D ready, E disconnects (the last not ready): the countdown starts. */
	expect_result(&s, C, lc_ready(C, true), CC_LOBBY_OK, "C ready");
	expect_result(&s, D, lc_ready(D, true), CC_LOBBY_OK, "D ready");
	struct lc_client *watch[5] = { A, B, C, D, F };
	w = (struct lobby_cond){ .who = watch, .n_who = 5, .lobby_id = beta, .state = CC_LOBBY_OPEN, .members = 3, .ready = 2 };
	expect_view(&s, &w, STEP_MS, "beta: two of three ready, open");
	lc_disconnect(E, false);
	w = (struct lobby_cond){ .who = watch, .n_who = 5, .lobby_id = beta, .state = CC_LOBBY_STARTING, .members = 2, .ready = 2 };
	expect_view(&s, &w, STEP_MS, "the last not-ready player disconnecting starts the countdown");
	/* D leaves during the countdown: C alone, back to open; no solo match ever starts. */
	expect_result(&s, D, lc_leave(D), CC_LOBBY_OK, "D leaves during the countdown");
	w = (struct lobby_cond){ .who = watch, .n_who = 5, .lobby_id = beta, .state = CC_LOBBY_OPEN, .members = 1, .ready = -1 };
	expect_view(&s, &w, STEP_MS, "a leave during the countdown re-opens the lobby");
	expect_result(&s, D, lc_join(D, beta), CC_LOBBY_OK, "D joins beta again");
	expect_result(&s, D, lc_ready(D, true), CC_LOBBY_OK, "D ready again");
	w = (struct lobby_cond){ .who = watch, .n_who = 5, .lobby_id = beta, .state = CC_LOBBY_STARTING, .members = 2, .ready = 2 };
	expect_view(&s, &w, STEP_MS, "all ready again: the countdown starts again");
	expect_result(&s, D, lc_ready(D, false), CC_LOBBY_OK, "D un-readies during the countdown");
	w = (struct lobby_cond){ .who = watch, .n_who = 5, .lobby_id = beta, .state = CC_LOBBY_OPEN, .members = 2, .ready = 1 };
	expect_view(&s, &w, STEP_MS, "an un-ready during the countdown re-opens the lobby");
	expect_result(&s, D, lc_leave(D), CC_LOBBY_OK, "D leaves beta");

	/* alpha's match ends: both are back in alpha, open, not ready, and the scores agree. */
	wc = (struct welcome_cond){ ab, 2, 1, 1 };
	bool ended = lc_wait(s.all, s.n, welcomed, &wc, match_ms);
	check(&s, ended, "the match ends", "A matches %d, B matches %d", A->n_matches, B->n_matches);
	if (ended)
		check(&s, A->matches[0].agrees && B->matches[0].agrees &&
				  A->matches[0].ended[0] == B->matches[0].ended[0] &&
				  A->matches[0].ended[1] == B->matches[0].ended[1],
		      "the score agrees", "A: match_end %d-%d, snapshot %d-%d; B: match_end %d-%d, snapshot %d-%d",
		      A->matches[0].ended[0], A->matches[0].ended[1], A->matches[0].snapshot[0], A->matches[0].snapshot[1],
		      B->matches[0].ended[0], B->matches[0].ended[1], B->matches[0].snapshot[0], B->matches[0].snapshot[1]);
	w = (struct lobby_cond){ .who = watch, .n_who = 5, .lobby_id = alpha, .state = CC_LOBBY_OPEN, .members = 2, .ready = 0 };
	expect_view(&s, &w, STEP_MS, "back to the lobby: open, nobody ready");
	check(&s, !A->c.gone && !B->c.gone, "still connected after the match", "A gone %d, B gone %d", A->c.gone, B->c.gone);

	/* C alone in beta never played: its countdowns were called off. */
	check(&s, C->welcomes == 0, "never a solo match", "C (alone in beta) welcomes %d", C->welcomes);

	/* The silent peer: nothing received, dropped at the deadline (handshake_timeout). */
	lc_wait(s.all, s.n, gone, silent, pre_ms + STEP_MS - (cc_clock_ms() - silent->connected_ms));
	int64_t after = silent->gone_ms - silent->connected_ms;
	check(&s, silent->packets <= 1 && silent->broadcasts == 0, "pre-handshake peer hears nothing",
	      "%llu packets (%llu broadcasts) before it was dropped", (unsigned long long)silent->packets,
	      (unsigned long long)silent->broadcasts);
	check(&s, silent->c.gone && after >= pre_ms - 100 && after <= pre_ms + 2000 &&
			  strcmp(silent->c.reason, "handshake_timeout") == 0,
	      "pre-handshake peer dropped at the deadline", "gone %d after %lld ms (deadline %ld), reason '%s' data %d",
	      silent->c.gone, (long long)after, pre_ms, silent->c.reason, silent->gone_data);
	check(&s, u->c.gone, "unregistered peer dropped", "gone %d reason '%s' after %lld ms", u->c.gone, u->c.reason,
	      (long long)(u->gone_ms - u->connected_ms));

	/* Every view equals the server's list now, and no broadcast came stale or skipped. */
	if (lc_list_all(s.all, s.n, A, STEP_MS)) {
		check(&s, A->list_agrees, "A's view equals lobby_list", "%s (revision %u)", A->list_why, A->list_revision);
		for (int i = 1; i < 6; i++) {
			if (p[i]->c.gone)
				continue;
			uint64_t x, y;
			bool ok = lc_digest_at(A, A->view.revision, &x) && lc_digest_at(p[i], A->view.revision, &y) && x == y;
			check(&s, ok, "views agree", "client %d at revision %u: %s", p[i]->index, A->view.revision,
			      ok ? "same view as A" : "differs from A");
		}
	} else {
		check(&s, false, "final lobby_list", "no list");
	}
	struct lc_client *reg[5] = { A, B, C, D, F };
	no_stale_or_gap(&s, reg, 5, "broadcasts in revision order");
	return finish(&s);
}

/* ---- community-property -------------------------------------------------------------- */

static uint64_t rng_state;
static uint32_t rnd(uint32_t n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return n ? (uint32_t)(rng_state % n) : 0;
}

struct rev_cond {
	struct lc_client **who;
	int n;
	uint32_t revision;
};

static bool reached(void *ctx)
{
	const struct rev_cond *r = ctx;
	for (int i = 0; i < r->n; i++)
		if (!r->who[i]->c.gone && (int32_t)(r->who[i]->view.revision - r->revision) < 0)
			return false;
	return true;
}

/* The member of lobby l with id, or NULL. */
static const struct lc_member *member_in(const struct lc_lobby *l, uint32_t id)
{
	for (int i = 0; l && i < l->n_members; i++)
		if (l->members[i].id == id)
			return &l->members[i];
	return NULL;
}

/*
 * What an accepted request did, as the requester's own view shows it when
 * the answer arrives (the server answers after the broadcasts the request
 * caused, gameserver/community.h): NULL when it shows it, else what is
 * missing.
 */
static const char *effect_missing(const struct lc_client *cl, int kind, uint32_t was_in, const char *name, int ready)
{
	const struct lc_lobby *now = lc_view_lobby(&cl->view, cl->lobby_id);
	const struct lc_member *me = member_in(now, cl->member_id);
	switch (kind) {
	case 0: /* create */
		if (!now || now->n_members != 1 || !me || strcmp(now->name, name) != 0)
			return "the created lobby, with the creator alone in it";
		return NULL;
	case 1: /* join */
		return me ? NULL : "the requester among the members of the lobby it joined";
	case 2: /* leave */
		return member_in(lc_view_lobby(&cl->view, was_in), cl->member_id) ? "the requester gone from the lobby it left"
										    : NULL;
	case 3:
	case 4: /* ready */
		if (!now || now->state == CC_LOBBY_IN_MATCH)
			return NULL; /* a match that just began or ended moves ready on its own */
		return me && me->ready == ready ? NULL : "the requester's new ready flag";
	case 5: /* rename */
		if (!now)
			return NULL; /* in no lobby: nothing to broadcast */
		return me && strcmp(me->name, name) == 0 ? NULL : "the requester's new name in its lobby";
	default:
		return NULL;
	}
}

static int property(int argc, char **argv)
{
	struct scen s;
	if (!scen_init(&s, argc, argv))
		return 2;
	int nc = (int)arg_long(argc, argv, "clients", 8);
	long steps = arg_long(argc, argv, "steps", 150);
	long step_ms = arg_long(argc, argv, "step-ms", 0); /* pumped between steps: countdowns and matches happen */
	rng_state = (uint64_t)arg_long(argc, argv, "seed", 1) * 0x9e3779b97f4a7c15ull + 1;
	if (nc < 2 || nc > 32)
		return 2;
	struct lc_client *c[32];
	char name[40], d[600];
	for (int i = 0; i < nc; i++) {
		snprintf(name, sizeof name, "prop-%d", i);
		if (!(c[i] = join_server(&s, name)))
			return finish(&s);
	}
	uint64_t by_kind[8] = { 0 }, ok_by_kind[8] = { 0 }, compared = 0, revisions = 0;
	const char *kinds[] = { "create", "join", "leave", "ready", "unready", "rename", "join_unknown", "list" };
	int64_t t0 = cc_clock_ms();
	for (long step = 0; step < steps && s.failed == 0; step++) {
		struct lc_client *cl = c[rnd((uint32_t)nc)];
		/* Weighted so that lobbies fill, ready up and hold still long enough for countdowns and matches. */
		static const int weights[8] = { 2, 3, 1, 4, 1, 2, 1, 1 };
		int kind = 0;
		for (uint32_t w = rnd(15); w >= (uint32_t)weights[kind]; kind++)
			w -= (uint32_t)weights[kind];
		uint16_t req;
		/* A lobby the client may know of, from its own view. */
		uint32_t target = cl->view.n ? cl->view.lobbies[rnd((uint32_t)cl->view.n)].id : 1;
		uint32_t was_in = cl->lobby_id;
		if (step_ms > 0)
			lc_pump(s.all, s.n, (int64_t)rnd((uint32_t)step_ms * 2));
		/* In a counting-down lobby, mostly hold still (a rename, a list): some countdowns run out into matches. */
		const struct lc_lobby *mine = was_in ? lc_view_lobby(&cl->view, was_in) : NULL;
		if (mine && mine->state == CC_LOBBY_STARTING && (kind == 2 || kind == 3 || kind == 4) && rnd(50) != 0)
			kind = rnd(2) ? 5 : 7;
		/* Outside a lobby, a create is a join where there is room, mostly: lobbies fill and start. */
		for (int i = 0; kind == 0 && !was_in && rnd(4) != 0 && i < cl->view.n; i++)
			if (cl->view.lobbies[i].state == CC_LOBBY_OPEN && cl->view.lobbies[i].n_members < cl->view.lobbies[i].max_players) {
				kind = 1;
				target = cl->view.lobbies[i].id;
			}
		int ready_sent = -1;
		switch (kind) {
		case 0:
			snprintf(name, sizeof name, "lobby-%ld", step);
			req = lc_create(cl, 2 + (int)rnd(3), name);
			break;
		case 1: req = lc_join(cl, target); break;
		case 2: req = lc_leave(cl); break;
		case 3:
			ready_sent = rnd(4) != 0;
			req = lc_ready(cl, ready_sent);
			break;
		case 4:
			ready_sent = 0;
			req = lc_ready(cl, false);
			break;
		case 5:
			snprintf(name, sizeof name, "p%d-%ld", cl->index, step);
			req = lc_set_name(cl, name);
			break;
		case 6: req = lc_join(cl, 900000 + rnd(1000)); break;
		default: req = lc_list(cl, 0); break;
		}
		by_kind[kind]++;
		const struct lc_result *r = lc_wait_result(s.all, s.n, cl, req, STEP_MS);
		if (!check(&s, r != NULL, "answer", "step %ld: client %d %s: no answer", step, cl->index, kinds[kind]))
			break;
		ok_by_kind[kind] += r->result == CC_LOBBY_OK;
		const char *missing = r->result == CC_LOBBY_OK ? effect_missing(cl, kind, was_in, name, ready_sent) : NULL;
		if (!check(&s, missing == NULL, "the requester's view shows its request",
			   "step %ld: client %d %s answered ok, but its view lacks %s", step, cl->index, kinds[kind],
			   missing ? missing : ""))
			break;
		/* One lobby per player is checked first (game/lobby.h), then whether the lobby exists. */
		int want6 = was_in ? CC_LOBBY_ALREADY_IN_LOBBY : CC_LOBBY_UNKNOWN;
		if (kind == 6 && r->result != want6)
			check(&s, false, "unknown lobby", "step %ld: join of an unknown lobby (client in lobby %u) answered %s, expected %s",
			      step, was_in, cc_wire_lobby_result_name(r->result), cc_wire_lobby_result_name((uint8_t)want6));
		/* The server's state as listed, against one client's view at that moment... */
		struct lc_client *lister = c[rnd((uint32_t)nc)];
		bool agreed = false;
		for (int attempt = 0; attempt < 3 && !agreed; attempt++) {
			if (!lc_list_all(s.all, s.n, lister, STEP_MS))
				break;
			agreed = lister->list_agrees;
			snprintf(d, sizeof d, "%s", lister->list_why);
			/* A list of several pages, or a countdown's own change, can race a page: list again. */
		}
		if (!check(&s, agreed, "view equals lobby_list", "step %ld (%s by client %d): client %d: %s", step,
			   kinds[kind], cl->index, lister->index, d))
			break;
		compared++;
		/* ... and every other client's view at that revision equals the lister's. */
		struct rev_cond rc = { c, nc, lister->list_revision };
		if (!check(&s, lc_wait(s.all, s.n, reached, &rc, STEP_MS), "broadcasts arrive",
			   "step %ld: not every client reached revision %u", step, rc.revision))
			break;
		uint64_t want = 0;
		if (!lc_digest_at(lister, rc.revision, &want) && rc.revision != 0)
			continue;
		for (int i = 0; i < nc; i++) {
			uint64_t got;
			if (rc.revision == 0 || c[i] == lister)
				continue;
			if (!lc_digest_at(c[i], rc.revision, &got) || got != want) {
				describe_lobby(c[i], cl->lobby_id, d, sizeof d);
				check(&s, false, "views agree", "step %ld: client %d at revision %u differs from client %d: %s",
				      step, c[i]->index, rc.revision, lister->index, d);
				break;
			}
		}
	}
	/* Every revision two clients both saw: the same view. */
	for (int i = 1; i < nc && s.failed == 0; i++)
		for (size_t k = 0; k < c[i]->n_digests; k++) {
			uint64_t other;
			revisions++;
			if (lc_digest_at(c[0], c[i]->digests[k].revision, &other) && other != c[i]->digests[k].digest) {
				check(&s, false, "views agree at every revision", "client %d and 0 differ at revision %u",
				      c[i]->index, c[i]->digests[k].revision);
				break;
			}
		}
	no_stale_or_gap(&s, c, nc, "broadcasts in revision order");
	int matches = 0;
	for (int i = 0; i < nc; i++)
		matches += c[i]->n_matches;
	check(&s, s.failed == 0, "property run",
	      "%ld steps in %.1f s: %d clients; create %llu (%llu ok), join %llu (%llu ok), leave %llu (%llu ok), "
	      "ready %llu (%llu ok), unready %llu, rename %llu (%llu ok), unknown joins %llu, lists %llu; %llu comparisons "
	      "with lobby_list, %llu revisions compared across clients, final revision %u, %d match plays",
	      steps, (double)(cc_clock_ms() - t0) / 1000.0, nc, (unsigned long long)by_kind[0],
	      (unsigned long long)ok_by_kind[0], (unsigned long long)by_kind[1], (unsigned long long)ok_by_kind[1],
	      (unsigned long long)by_kind[2], (unsigned long long)ok_by_kind[2], (unsigned long long)by_kind[3],
	      (unsigned long long)ok_by_kind[3], (unsigned long long)by_kind[4], (unsigned long long)by_kind[5],
	      (unsigned long long)ok_by_kind[5], (unsigned long long)by_kind[6], (unsigned long long)by_kind[7],
	      (unsigned long long)compared, (unsigned long long)revisions, c[0]->view.revision, matches);
	return finish(&s);
}

/* ---- community-slow ------------------------------------------------------------------ */

static bool file_has(const char *path, const char *needle)
{
	FILE *f = fopen(path, "r");
	char line[4096];
	bool found = false;
	while (f && !found && fgets(line, sizeof line, f))
		found = strstr(line, needle) != NULL;
	if (f)
		fclose(f);
	return found;
}

struct name_cond {
	struct lc_client **who;
	int n;
	uint32_t lobby_id;
	const char *name;
	int64_t *seen_ms; /* per client: when it first saw the name */
};

static bool name_seen(void *ctx)
{
	struct name_cond *w = ctx;
	bool all = true;
	for (int i = 0; i < w->n; i++) {
		if (w->seen_ms[i])
			continue;
		const struct lc_lobby *l = lc_view_lobby(&w->who[i]->view, w->lobby_id);
		bool found = false;
		for (int m = 0; l && m < l->n_members; m++)
			found |= strcmp(l->members[m].name, w->name) == 0;
		if (found)
			w->seen_ms[i] = cc_clock_ms();
		else
			all = false;
	}
	return all;
}

static int slow(int argc, char **argv)
{
	struct scen s;
	if (!scen_init(&s, argc, argv))
		return 2;
	const char *log = arg(argc, argv, "server-log");
	int nc = (int)arg_long(argc, argv, "clients", 4);
	long seconds = arg_long(argc, argv, "seconds", 40);
	long bound_ms = arg_long(argc, argv, "latency-ms", 100);
	long interval_ms = arg_long(argc, argv, "interval-ms", 15); /* nc renamers, each under 20 requests/s */
	long quiet_ms = arg_long(argc, argv, "quiet-bound-ms", 10000);
	if (!log || nc < 2 || nc > 15)
		return 2;
	struct lc_client *c[16];
	char name[40];
	/* Long names: every lobby_updated is as large as a lobby of nc + 1 can make it. */
	for (int i = 0; i <= nc; i++) {
		snprintf(name, sizeof name, "%c-slow-reader-test-player%05d", 'a' + i, i);
		if (!(c[i] = join_server(&s, name)))
			return finish(&s);
	}
	struct lc_client *slowpoke = c[nc];
	/*
	 * First a reader that stops reading while nothing is broadcast: only ENet's own timeout can notice it
	 * (protocol section 11: gone within 10 s). Its member id, from a rename's answer, names it in the log.
	 */
	struct lc_client *quiet = join_server(&s, "quiet-reader");
	if (!quiet || expect_result(&s, quiet, lc_set_name(quiet, "quiet-reader-2"), CC_LOBBY_OK, "rename") != CC_LOBBY_OK)
		return finish(&s);
	char needle[64];
	snprintf(needle, sizeof needle, "\"member_id\":%u,", quiet->member_id);
	quiet->frozen = true;
	int64_t quiet_at = cc_clock_ms(), quiet_gone = 0;
	while (!quiet_gone && cc_clock_ms() - quiet_at < quiet_ms + 5000) {
		lc_pump(s.all, s.n, 100); /* the others only ping: nothing is broadcast meanwhile */
		FILE *f = fopen(log, "r");
		char line[4096];
		while (f && !quiet_gone && fgets(line, sizeof line, f))
			if (strstr(line, needle) && (strstr(line, "\"event\":\"peer_left\"") || strstr(line, "\"event\":\"peer_kicked\"")))
				quiet_gone = cc_clock_ms();
		if (f)
			fclose(f);
	}
	check(&s, quiet_gone && quiet_gone - quiet_at <= quiet_ms + 1000, "a reader that stops reading is dropped in time",
	      "member %u %s %lld ms after it stopped (bound %ld ms)", quiet->member_id, quiet_gone ? "dropped" : "still there",
	      (long long)((quiet_gone ? quiet_gone : cc_clock_ms()) - quiet_at), quiet_ms);
	printf("{\"quiet\":{\"dropped_after_ms\":%lld}}\n", (long long)(quiet_gone ? quiet_gone - quiet_at : -1));
	if (expect_result(&s, c[0], lc_create(c[0], 8, "the-slow-reader-lobby-0123456789"), CC_LOBBY_OK, "create") != CC_LOBBY_OK)
		return finish(&s);
	uint32_t lobby = c[0]->lobby_id;
	for (int i = 1; i <= nc; i++)
		expect_result(&s, c[i], lc_join(c[i], lobby), CC_LOBBY_OK, "join");
	if (s.failed)
		return finish(&s);
	/* The slow reader stops servicing its host; the others rename in turn and time each broadcast. */
	slowpoke->frozen = true;
	int64_t frozen_at = cc_clock_ms(), dropped_at = 0, worst = 0;
	int64_t worst_after_drop = 0;
	long renames = 0, late = 0;
	int64_t seen[16];
	while (cc_clock_ms() - frozen_at < seconds * 1000) {
		struct lc_client *who = c[renames % nc];
		snprintf(name, sizeof name, "%c-slow-reader-test-player%05d", 'a' + (int)(renames % nc), (int)(renames % 100000));
		int64_t t = cc_clock_ms();
		uint16_t req = lc_set_name(who, name);
		memset(seen, 0, sizeof seen);
		struct name_cond nw = { c, nc, lobby, name, seen };
		bool ok = lc_wait(s.all, s.n, name_seen, &nw, STEP_MS);
		if (!ok || !lc_wait_result(s.all, s.n, who, req, STEP_MS)) {
			check(&s, false, "rename reaches the others", "rename %ld: not every client saw it within %d ms", renames,
			      STEP_MS);
			break;
		}
		for (int i = 0; i < nc; i++) {
			int64_t lat = seen[i] - t;
			if (lat > worst)
				worst = lat;
			if (dropped_at && lat > worst_after_drop)
				worst_after_drop = lat;
			late += lat > bound_ms;
		}
		renames++;
		if (!dropped_at && renames % 5 == 0 && file_has(log, "backlog_overflow"))
			dropped_at = cc_clock_ms();
		if (dropped_at && cc_clock_ms() - dropped_at > 1000)
			break; /* a second of updates after the drop */
		lc_pump(s.all, s.n, interval_ms); /* each renamer well inside its rate limits */
	}
	check(&s, dropped_at != 0, "slow reader dropped", "backlog_overflow %s after %lld ms and %ld renames",
	      dropped_at ? "logged" : "never logged", (long long)((dropped_at ? dropped_at : cc_clock_ms()) - frozen_at),
	      renames);
	printf("{\"slow\":{\"dropped_after_ms\":%lld,\"renames\":%ld,\"worst_ms\":%lld,\"worst_after_drop_ms\":%lld,\"late\":%ld}}\n",
	       (long long)(dropped_at ? dropped_at - frozen_at : -1), renames, (long long)worst, (long long)worst_after_drop,
	       late);
	check(&s, late == 0, "updates keep arriving within the bound",
	      "%ld of %ld broadcasts took over %ld ms to reach the %d others (worst %lld ms)", late, renames * nc, bound_ms,
	      nc, (long long)worst);
	for (int i = 0; i < nc; i++)
		check(&s, !c[i]->c.gone, "the others stay", "client %d gone %d (%s)", i, c[i]->c.gone, c[i]->c.reason);
	return finish(&s);
}

/* ---- community-idle ------------------------------------------------------------------ */

/* A registered player that sends nothing (its ENet host still acknowledges) is kicked idle_timeout at the
 * keep-alive; one that pings stays. */
static int idle_community(int argc, char **argv)
{
	struct scen s;
	if (!scen_init(&s, argc, argv))
		return 2;
	long keepalive = arg_long(argc, argv, "keepalive-ms", 30000);
	struct lc_client *idle = join_server(&s, "idle-player"), *live = join_server(&s, "pinging-player");
	if (!idle || !live)
		return finish(&s);
	idle->no_ping = true;
	int64_t t0 = cc_clock_ms();
	lc_wait(s.all, s.n, gone, idle, keepalive + STEP_MS);
	int64_t after = (idle->c.gone ? idle->gone_ms : cc_clock_ms()) - t0;
	check(&s, idle->c.gone && strcmp(idle->c.reason, "idle_timeout") == 0 && after >= keepalive - 500 &&
			  after <= keepalive + 1500,
	      "an idle player is kicked at the keep-alive", "gone %d, kicked '%s', %lld ms after its last packet (keep-alive %ld ms)",
	      idle->c.gone, idle->c.reason, (long long)after, keepalive);
	lc_pump(s.all, s.n, keepalive + 1000);
	check(&s, !live->c.gone, "a pinging player stays", "gone %d '%s' after %lld ms", live->c.gone, live->c.reason,
	      (long long)(cc_clock_ms() - t0));
	return finish(&s);
}

/* ---- community-matches --------------------------------------------------------------- */

static int matches(int argc, char **argv)
{
	struct scen s;
	if (!scen_init(&s, argc, argv))
		return 2;
	int nl = (int)arg_long(argc, argv, "lobbies", 10), size = (int)arg_long(argc, argv, "size", 6);
	long match_ms = arg_long(argc, argv, "match-ms", 60000);
	bool quitter = arg_long(argc, argv, "quitter", 0) != 0;
	if (nl < 1 || size < 2 || size > 16 || nl * size + 3 > MAXC)
		return 2;
	struct lc_client *c[MAXC];
	uint32_t lobby[64];
	char name[40];
	for (int i = 0; i < nl * size; i++) {
		snprintf(name, sizeof name, "m%02d-p%d", i / size, i % size);
		if (!(c[i] = join_server(&s, name)))
			return finish(&s);
	}
	for (int l = 0; l < nl; l++) {
		struct lc_client *host = c[l * size];
		snprintf(name, sizeof name, "match-%02d", l);
		if (expect_result(&s, host, lc_create(host, size, name), CC_LOBBY_OK, "create") != CC_LOBBY_OK)
			return finish(&s);
		lobby[l] = host->lobby_id;
		for (int k = 1; k < size; k++)
			if (expect_result(&s, c[l * size + k], lc_join(c[l * size + k], lobby[l]), CC_LOBBY_OK, "join") != CC_LOBBY_OK)
				return finish(&s);
	}
	for (int i = 0; i < nl * size; i++)
		if (expect_result(&s, c[i], lc_ready(c[i], true), CC_LOBBY_OK, "ready") != CC_LOBBY_OK)
			return finish(&s);
	/* One more lobby of 3 whose third player quits the match 2 s in: the other two play it out. */
	struct lc_client *q[3];
	uint32_t qlobby = 0;
	for (int k = 0; k < 3 && quitter; k++) {
		snprintf(name, sizeof name, "quit-p%d", k);
		if (!(q[k] = join_server(&s, name)))
			return finish(&s);
		if (k == 0 && expect_result(&s, q[0], lc_create(q[0], 3, "match-quit"), CC_LOBBY_OK, "create") == CC_LOBBY_OK)
			qlobby = q[0]->lobby_id;
		else if (k > 0)
			expect_result(&s, q[k], lc_join(q[k], qlobby), CC_LOBBY_OK, "join");
	}
	for (int k = 0; k < 3 && quitter; k++)
		expect_result(&s, q[k], lc_ready(q[k], true), CC_LOBBY_OK, "ready");
	struct welcome_cond wc = { c, nl * size, 1, 0 };
	check(&s, lc_wait(s.all, s.n, welcomed, &wc, 5000 + STEP_MS * 2), "every player welcomed", "%d players", nl * size);
	if (quitter) {
		struct welcome_cond wq = { q, 3, 1, 0 };
		check(&s, lc_wait(s.all, s.n, welcomed, &wq, STEP_MS), "the quitter's lobby welcomed", "welcomes %d %d %d",
		      q[0]->welcomes, q[1]->welcomes, q[2]->welcomes);
		lc_pump(s.all, s.n, 2000);
		lc_disconnect(q[2], false); /* quits mid-match */
	}
	wc.matches = 1;
	bool done = lc_wait(s.all, s.n, welcomed, &wc, match_ms);
	int unfinished = 0;
	for (int i = 0; i < nl * size; i++)
		unfinished += c[i]->n_matches < 1;
	check(&s, done, "every match ends", "%d of %d players without a match_end", unfinished, nl * size);
	if (!done)
		return finish(&s);
	int64_t last_welcome = 0, first_end = INT64_MAX;
	for (int l = 0; l < nl; l++) {
		const struct lc_match *m0 = &c[l * size]->matches[0];
		bool agree = true, teams_ok = true;
		int team_n[2] = { 0, 0 };
		uint32_t slots = 0;
		for (int k = 0; k < size; k++) {
			const struct lc_match *m = &c[l * size + k]->matches[0];
			agree &= m->agrees && m->ended[0] == m0->ended[0] && m->ended[1] == m0->ended[1];
			if (m->team == 0 || m->team == 1)
				team_n[m->team]++;
			else
				teams_ok = false;
			if (m->slot < 0 || m->slot > 15 || (slots & (1u << m->slot)))
				teams_ok = false;
			else
				slots |= 1u << m->slot;
			if (m->welcome_ms > last_welcome)
				last_welcome = m->welcome_ms;
			if (m->end_ms < first_end)
				first_end = m->end_ms;
		}
		teams_ok &= team_n[0] - team_n[1] >= 0 && team_n[0] - team_n[1] <= 1;
		check(&s, agree, "score agrees with every member's final snapshot", "lobby %u: %d-%d", lobby[l], m0->ended[0],
		      m0->ended[1]);
		check(&s, teams_ok, "teams split evenly, slots unique", "lobby %u: %d v %d", lobby[l], team_n[0], team_n[1]);
		printf("{\"lobby_match\":{\"lobby_id\":%u,\"score\":[%d,%d],\"members\":%d,\"agree\":%s,\"goals_seen\":%llu,"
		       "\"seconds\":%.2f}}\n",
		       lobby[l], m0->ended[0], m0->ended[1], size, agree ? "true" : "false", (unsigned long long)m0->goals,
		       (double)(m0->end_ms - m0->welcome_ms) / 1000.0);
	}
	if (quitter) {
		struct welcome_cond wq = { q, 2, 1, 1 };
		bool qd = lc_wait(s.all, s.n, welcomed, &wq, match_ms);
		const struct lc_match *a = &q[0]->matches[0], *b = &q[1]->matches[0];
		check(&s, qd && a->agrees && b->agrees && a->ended[0] == b->ended[0] && a->ended[1] == b->ended[1],
		      "a match goes on when a player quits", "the two left: matches %d %d, %d-%d and %d-%d, agree %d %d",
		      q[0]->n_matches, q[1]->n_matches, a->ended[0], a->ended[1], b->ended[0], b->ended[1], a->agrees,
		      b->agrees);
		struct lobby_cond wl = { .who = q, .n_who = 2, .lobby_id = qlobby, .state = CC_LOBBY_OPEN, .members = 2, .ready = 0 };
		expect_view(&s, &wl, STEP_MS, "the quitter's lobby: back to open with the two who stayed");
		printf("{\"lobby_match\":{\"lobby_id\":%u,\"score\":[%d,%d],\"members\":2,\"agree\":%s,\"goals_seen\":%llu,"
		       "\"seconds\":%.2f}}\n",
		       qlobby, a->ended[0], a->ended[1], a->agrees ? "true" : "false", (unsigned long long)a->goals,
		       (double)(a->end_ms - a->welcome_ms) / 1000.0);
	}
	check(&s, last_welcome < first_end, "all matches at once",
	      "the last welcome came %lld ms before the first match_end", (long long)(first_end - last_welcome));
	/* Back in their lobbies: open, nobody ready. */
	struct lobby_cond w = { .who = c, .n_who = nl * size, .state = CC_LOBBY_OPEN, .members = size, .ready = 0 };
	for (int l = 0; l < nl; l++) {
		w.lobby_id = lobby[l];
		expect_view(&s, &w, STEP_MS, "back in the lobby");
	}
	return finish(&s);
}

/* ---- community-hostile --------------------------------------------------------------- */

static int hostile_community(int argc, char **argv)
{
	struct scen s;
	if (!scen_init(&s, argc, argv))
		return 2;
	int max_lobbies = (int)arg_long(argc, argv, "max-lobbies", 100);
	long match_ms = arg_long(argc, argv, "match-ms", 60000);
	if (max_lobbies < 1 || max_lobbies + 8 > MAXC)
		return 2;
	char name[64];
	/* The honest lobby: two players ready up and play while the rest goes on. */
	struct lc_client *h0 = join_server(&s, "honest-0"), *h1 = join_server(&s, "honest-1");
	if (!h0 || !h1)
		return finish(&s);
	expect_result(&s, h0, lc_create(h0, 2, "honest"), CC_LOBBY_OK, "honest create");
	uint32_t honest = h0->lobby_id;
	expect_result(&s, h1, lc_join(h1, honest), CC_LOBBY_OK, "honest join");
	expect_result(&s, h0, lc_ready(h0, true), CC_LOBBY_OK, "honest ready");
	expect_result(&s, h1, lc_ready(h1, true), CC_LOBBY_OK, "honest ready");
	struct lc_client *hh[2] = { h0, h1 };
	struct welcome_cond wc = { hh, 2, 1, 0 };
	check(&s, lc_wait(s.all, s.n, welcomed, &wc, 5000 + STEP_MS), "honest lobby playing", "welcomes %d %d",
	      h0->welcomes, h1->welcomes);

	/* Names: over 32 bytes, control bytes, invalid UTF-8 (overlong, lone continuation, surrogate). */
	const char *bad[] = { "abcdefghijklmnopqrstuvwxyz0123456", "tab\there", "nul-free\x01", "del\x7f", "c1\xc2\x85",
			      "overlong\xc0\xaf", "lone\x80", "surrogate\xed\xa0\x80", "cut\xe2\x82" };
	const char *bad_what[] = { "33 bytes", "a tab", "a control byte", "DEL", "a C1 control", "overlong UTF-8",
				   "a lone continuation byte", "a surrogate", "a cut sequence" };
	for (size_t i = 0; i < CC_ARRAY_LEN(bad); i++) {
		struct lc_client *x = connect_client(&s, "connect");
		if (!x)
			return finish(&s);
		lc_hello(x, PROTOCOL, bad[i]);
		lc_wait(s.all, s.n, gone, x, STEP_MS);
		const char *want = "invalid_name";
		snprintf(name, sizeof name, "hello with %s refused", bad_what[i]);
		check(&s, x->c.refused && strcmp(x->c.reason, want) == 0 && x->c.gone, name,
		      "refused %d reason '%s' (%s), expected %s; disconnected %d", x->c.refused, x->c.reason, x->c.detail, want,
		      x->c.gone);
	}
	/* A join token (auth 1) to a community server: wrong_mode. */
	struct lc_client *t = connect_client(&s, "connect");
	if (!t)
		return finish(&s);
	send_hello(&t->c, PROTOCOL, "v1.eyJub3QiOiJhIHRva2VuIn0.c2ln");
	lc_wait(s.all, s.n, gone, t, STEP_MS);
	check(&s, t->c.refused && strcmp(t->c.reason, "wrong_mode") == 0 && t->c.gone, "a token is wrong_mode",
	      "hello {auth 1, token}: refused %d reason '%s' (%s), disconnected %d", t->c.refused, t->c.reason, t->c.detail,
	      t->c.gone);
	struct lc_client *n = join_server(&s, "namer");
	if (!n)
		return finish(&s);
	for (size_t i = 0; i < CC_ARRAY_LEN(bad); i++) {
		snprintf(name, sizeof name, "set_name with %s", bad_what[i]);
		expect_result(&s, n, lc_set_name(n, bad[i]), CC_LOBBY_INVALID_PARAMETERS, name);
		snprintf(name, sizeof name, "lobby_create named with %s", bad_what[i]);
		expect_result(&s, n, lc_create(n, 2, bad[i]), CC_LOBBY_INVALID_PARAMETERS, name);
		lc_pump(s.all, s.n, 110); /* inside --lobby-requests-per-second (default 20) */
	}
	expect_result(&s, n, lc_create(n, 1, "too-small"), CC_LOBBY_INVALID_PARAMETERS, "lobby of 1");
	expect_result(&s, n, lc_create(n, 17, "too-big"), CC_LOBBY_INVALID_PARAMETERS, "lobby of 17");
	expect_result(&s, n, lc_set_name(n, "exactly-32-bytes-of-name-0123456"), CC_LOBBY_OK, "a 32-byte name");
	expect_result(&s, n, lc_set_name(n, "\xc3\xa9t\xc3\xa9 \xe2\x98\x83 \xf0\x9f\x9a\x80"), CC_LOBBY_OK, "a UTF-8 name");
	check(&s, !n->c.gone, "the namer stays", "gone %d reason '%s'", n->c.gone, n->c.reason);

	/* Lobby requests before the hello: refused, and the peer dropped. */
	struct lc_client *e = connect_client(&s, "connect");
	if (!e)
		return finish(&s);
	uint16_t er = lc_list(e, 0);
	lc_join(e, honest);
	lc_wait(s.all, s.n, gone, e, STEP_MS);
	(void)er;
	check(&s, e->last.have && e->last.result == CC_LOBBY_NOT_REGISTERED,
	      "requests before hello refused", "answer %s, refused '%s', %llu broadcasts", e->last.have ?
	      cc_wire_lobby_result_name(e->last.result) : "none", e->c.reason, (unsigned long long)e->broadcasts);
	check(&s, e->c.gone && e->c.refused && e->broadcasts == 0 && e->lists == 0, "requests before hello: dropped",
	      "gone %d (refused '%s') after %lld ms, %llu lists", e->c.gone, e->c.reason,
	      (long long)(e->c.gone ? e->gone_ms - e->connected_ms : -1),
	      (unsigned long long)e->lists);

	/* A create/leave loop, paced inside the rate limits: nothing leaks. */
	struct lc_client *loop = join_server(&s, "looper");
	if (!loop)
		return finish(&s);
	long loops = 0, ok_loops = 0;
	int64_t t0 = cc_clock_ms();
	while (cc_clock_ms() - t0 < 3000) {
		snprintf(name, sizeof name, "loop-%ld", loops);
		const struct lc_result *r = lc_wait_result(s.all, s.n, loop, lc_create(loop, 4, name), STEP_MS);
		bool a = r && r->result == CC_LOBBY_OK;
		r = lc_wait_result(s.all, s.n, loop, lc_leave(loop), STEP_MS);
		ok_loops += a && r && r->result == CC_LOBBY_OK;
		loops++;
		if (loop->c.gone)
			break;
		lc_pump(s.all, s.n, 110); /* two requests per 1/8 s: inside --lobby-requests-per-second (default 20) */
	}
	check(&s, ok_loops == loops && !loop->c.gone, "create/leave loop", "%ld of %ld create+leave pairs ok in 3 s",
	      ok_loops, loops);
	/* The same loop unpaced: the rate limit counts lobby requests and ends it. */
	struct lc_client *fl = join_server(&s, "flooder");
	if (!fl)
		return finish(&s);
	long sent = 0;
	t0 = cc_clock_ms();
	while (!fl->c.gone && !fl->c.refused && cc_clock_ms() - t0 < 5000) {
		for (int b = 0; b < 20; b++) {
			snprintf(name, sizeof name, "flood-%ld", sent);
			lc_create(fl, 4, name);
			lc_leave(fl);
			sent += 2;
		}
		lc_pump(s.all, s.n, 1);
	}
	lc_wait(s.all, s.n, gone, fl, STEP_MS);
	check(&s, fl->c.refused && strcmp(fl->c.reason, "rate_limited") == 0, "create/leave flood kicked",
	      "%ld requests in %lld ms: kicked %d reason '%s', gone %d, %llu results", sent,
	      (long long)(cc_clock_ms() - t0), fl->c.refused, fl->c.reason, fl->c.gone, (unsigned long long)fl->results);
	struct lc_client *probe = join_server(&s, "prober");
	if (!probe)
		return finish(&s);
	check(&s, probe->list_total == 1, "no lobby leaked", "the list holds %u lobbies (the honest one)", probe->list_total);

	/* Many lobbies: up to the cap, with the longest names; every list page within the caps. */
	const char *fat = "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
			  "\xc3\xa9\xc3\xa9"; /* 28 bytes */
	int made = 1; /* the honest lobby */
	struct lc_client *last = NULL;
	for (int i = 0; made < max_lobbies; i++) {
		snprintf(name, sizeof name, "many-%03d", i);
		struct lc_client *m = join_server(&s, name);
		if (!m)
			return finish(&s);
		char ln[40];
		snprintf(ln, sizeof ln, "%s%04d", fat, i);
		if (expect_result(&s, m, lc_create(m, 8, ln), CC_LOBBY_OK, "create up to the cap") != CC_LOBBY_OK)
			break;
		made++;
		last = m;
	}
	struct lc_client *over = join_server(&s, "one-too-many");
	if (!over)
		return finish(&s);
	expect_result(&s, over, lc_create(over, 2, "over-the-cap"), CC_LOBBY_TOO_MANY, "create past --max-lobbies");
	bool listed = lc_list_all(s.all, s.n, over, STEP_MS * 2);
	uint32_t seen_ids[LC_MAX_LOBBIES];
	int dup = 0;
	for (int i = 0; i < over->list_n; i++) {
		for (int k = 0; k < i; k++)
			dup += seen_ids[k] == over->list[i].lobby_id;
		seen_ids[i] = over->list[i].lobby_id;
	}
	check(&s, listed && over->list_total == max_lobbies && over->list_n == max_lobbies && dup == 0,
	      "lobby list pages cover every lobby once", "total %u, %d listed in %d pages, %d duplicates (cap %d)",
	      over->list_total, over->list_n, over->list_pages, dup, max_lobbies);
	check(&s, over->list_max_bytes <= CC_WIRE_MAX_PACKET && over->list_max_count <= CC_WIRE_LOBBY_LIST_MAX,
	      "lobby list within the message cap", "largest page %zu bytes (cap %d), %d lobbies (cap %d)",
	      over->list_max_bytes, CC_WIRE_MAX_PACKET, over->list_max_count, CC_WIRE_LOBBY_LIST_MAX);
	uint16_t past = lc_list(over, 60000);
	const struct lc_result *pr = lc_wait_result(s.all, s.n, over, past, STEP_MS);
	check(&s, pr != NULL, "a page past the end answered", "list from 60000: %s", pr ? "answered" : "no answer");
	(void)last;

	/* The honest match played on through all of it. */
	wc.matches = 1;
	bool ended = lc_wait(s.all, s.n, welcomed, &wc, match_ms);
	check(&s, ended && h0->matches[0].agrees && h1->matches[0].agrees && !h0->c.gone && !h1->c.gone,
	      "the honest lobby played on", "matches %d %d, agree %d %d, score %d-%d, gone %d %d", h0->n_matches,
	      h1->n_matches, h0->matches[0].agrees, h1->matches[0].agrees, h0->matches[0].ended[0],
	      h0->matches[0].ended[1], h0->c.gone, h1->c.gone);
	return finish(&s);
}

int community_main(int argc, char **argv)
{
	const char *cmd = argv[1];
	return strcmp(cmd, "community-e2e") == 0	   ? e2e(argc, argv)
	       : strcmp(cmd, "community-property") == 0 ? property(argc, argv)
	       : strcmp(cmd, "community-slow") == 0	   ? slow(argc, argv)
	       : strcmp(cmd, "community-matches") == 0  ? matches(argc, argv)
	       : strcmp(cmd, "community-hostile") == 0  ? hostile_community(argc, argv)
	       : strcmp(cmd, "community-idle") == 0	   ? idle_community(argc, argv)
						       : 2;
}
