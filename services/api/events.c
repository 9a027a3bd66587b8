/*
 * events.c - GET /v1/events: each player's outbox events over a WebSocket
 * (contracts/v1/events.json), whichever replica or service wrote them.
 *
 * Three parties, one registry:
 *   - the route's handler (an HTTP thread) authenticates the session,
 *     registers the stream under its player, reads the replay after
 *     ?after= and the resume window through a pool connection, and hands
 *     the socket to the hub;
 *   - the listener thread owns one connection LISTENing on cc_events
 *     (store/outbox.h) and gives every envelope to the streams of the
 *     players it names, fetching the whole envelope of a reference;
 *   - the hub thread (sys/ws.h) calls on_open when the socket is its own:
 *     the replay, then stream.ready (or stream.resync), then whatever
 *     arrived live meanwhile, go out in that order.
 * Why no event is lost or doubled: a stream is registered before its
 * replay is read, so a row committed after the replay's snapshot reaches
 * it live (NOTIFY comes after the commit); a row both read and heard is
 * sent once because a stream sends only positions above the last it sent
 * (positions grow in commit order: contracts/outbox-events.md). A
 * listener that lost its connection may have missed notifications: every
 * stream is closed 1011 and resumes with ?after=, which replays them.
 *
 * Locks: ev->mu guards the registry and every stream's fields; it is
 * taken before the hub's own lock (cc_ws_send_text) and never held across
 * a database call. Sends never block (the hub queues them; a slow reader
 * is closed 1013 by the hub, nobody else waits).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "api.h"
#include "store/outbox.h"
#include "store/sessions.h"
#include "sys/clock.h"
#include "sys/log.h"
#include "sys/ws.h"

#define EV_BUCKETS 1024
#define EV_REPLAY_PAGE 100	       /* envelopes one cc_outbox_since read returns */
#define EV_REPLAY_MAX 200	       /* more missed than this: stream.resync too_far_behind */
#define EV_REPLAY_MAX_BYTES (512 * 1024) /* or more bytes than this (half the backlog cap) */
#define EV_BACKLOG_MESSAGES 256	       /* the contract's send backlog cap */
#define EV_BACKLOG_BYTES (1024 * 1024)
#define EV_CLIENT_MESSAGE_MAX 1024     /* a client frame or message (1009 beyond) */
#define EV_RATE_MESSAGES 20	       /* 10 a second, bursts of 20 (1008 beyond) */
#define EV_RATE_WINDOW_MS 2000
#define EV_POSITION_MAX 9007199254740991LL
#define EV_SUBPROTOCOL "cc.v1"
#define EV_BEARER_PREFIX "cc.v1.bearer."
#define EV_PROTOCOLS_MAX 512 /* bytes of every Sec-WebSocket-Protocol value joined */

/* One message waiting for its stream to open. */
struct ev_msg {
	struct ev_msg *next;
	int64_t position; /* 0 for a control message (always sent) */
	int64_t since_ns;
	size_t len;
	char text[];
};

struct ev_list {
	struct ev_msg *head, *tail;
	size_t n, bytes;
};

/* One stream. All fields under ev->mu once registered. */
struct ev_conn {
	struct ev_conn *next;		/* bucket chain */
	char player_id[CC_UUID_BUF];
	char session_hash[2 + 64 + 1];	/* api_secret_hash_param of its token */
	uint64_t id;			/* the hub's id; 0 until on_open */
	bool open;			/* on_open ran: send directly */
	bool lost;			/* events may have been missed before open: close 1011 at open */
	int64_t last_sent;		/* highest position sent (or skipped as covered) */
	struct ev_list first;		/* replay + stream.ready/resync, before open */
	struct ev_list live;		/* live events that came before open */
};

struct api_events {
	struct api *api;
	struct cc_ws_hub *hub;
	pthread_mutex_t mu;
	struct ev_conn *buckets[EV_BUCKETS];
	atomic_bool listening;		/* the listener's LISTEN is in place */
	atomic_bool stop;
	pthread_t listener, checker;
	bool listener_started, checker_started;
	size_t n_conns;			/* registered streams, open or not (the --events-max-connections cap) */
	struct cc_metric *sent;		/* by kind: live, replay, control */
	struct cc_metric *resumes;
	struct cc_metric *resyncs;	/* by reason */
	struct cc_metric *refused;	/* pre-upgrade refusals, by reason */
	struct cc_metric *listener_lost;
	struct cc_metric *refs_fetched;
	struct cc_metric *session_closed; /* by reason */
	long testkit_replay_delay_ms;	/* cc-testkit-api: pause between registering and reading the replay */
};

/* ---- registry --------------------------------------------------------------- */

static struct ev_conn **bucket_of(struct api_events *ev, const char *player_id)
{
	uint32_t h = 2166136261u;
	for (const unsigned char *p = (const unsigned char *)player_id; *p; p++)
		h = (h ^ *p) * 16777619u;
	return &ev->buckets[h % EV_BUCKETS];
}

static void list_free(struct ev_list *l)
{
	while (l->head) {
		struct ev_msg *m = l->head;
		l->head = m->next;
		free(m);
	}
	memset(l, 0, sizeof *l);
}

static int list_push(struct ev_list *l, int64_t position, int64_t since_ns, const char *text, size_t len)
{
	struct ev_msg *m = malloc(sizeof *m + len + 1);
	if (!m)
		return CC_ENOMEM;
	m->next = NULL;
	m->position = position;
	m->since_ns = since_ns;
	m->len = len;
	memcpy(m->text, text, len);
	m->text[len] = '\0';
	if (l->tail)
		l->tail->next = m;
	else
		l->head = m;
	l->tail = m;
	l->n++;
	l->bytes += len;
	return 0;
}

static void conn_free(struct ev_conn *c)
{
	if (!c)
		return;
	list_free(&c->first);
	list_free(&c->live);
	free(c);
}

/* Under ev->mu. */
static void registry_remove(struct api_events *ev, struct ev_conn *c)
{
	for (struct ev_conn **pp = bucket_of(ev, c->player_id); *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			ev->n_conns--;
			return;
		}
	}
}

/* ---- sending ---------------------------------------------------------------- */

static void count_sent(struct api_events *ev, const char *kind)
{
	const char *lv[] = { kind };
	cc_metric_add(ev->sent, lv, 1);
}

/*
 * Sends one resource event to an open stream, or keeps it for one that is
 * not open yet, unless the stream has it already. Under ev->mu.
 */
static void offer(struct api_events *ev, struct ev_conn *c, int64_t position, const char *text, size_t len,
		  int64_t since_ns)
{
	if (position <= c->last_sent)
		return;
	if (!c->open) { /* what on_open will queue at once must fit the hub's backlog cap */
		if (c->first.n + c->live.n >= EV_BACKLOG_MESSAGES ||
		    c->first.bytes + c->live.bytes + len > EV_BACKLOG_BYTES ||
		    list_push(&c->live, position, since_ns, text, len) != 0)
			c->lost = true;
		return;
	}
	c->last_sent = position;
	if (cc_ws_send_text_since(ev->hub, c->id, text, len, since_ns) == 0)
		count_sent(ev, "live");
}

/* The hub owns the socket: out go the replay, the control message, then what came live. */
static void on_open(void *ctx, uint64_t id, void *user)
{
	struct api_events *ev = ctx;
	struct ev_conn *c = user;
	pthread_mutex_lock(&ev->mu);
	c->id = id;
	c->open = true;
	if (c->lost) {
		(void)cc_ws_close(ev->hub, id, CC_WS_CLOSE_INTERNAL, "events_lost");
	} else {
		for (struct ev_msg *m = c->first.head; m; m = m->next) {
			if (cc_ws_send_text(ev->hub, id, m->text, m->len) == 0)
				count_sent(ev, m->position ? "replay" : "control");
		}
		for (struct ev_msg *m = c->live.head; m; m = m->next)
			offer(ev, c, m->position, m->text, m->len, m->since_ns);
	}
	list_free(&c->first);
	list_free(&c->live);
	pthread_mutex_unlock(&ev->mu);
}

static void on_close(void *ctx, uint64_t id, void *user, int code)
{
	struct api_events *ev = ctx;
	struct ev_conn *c = user;
	(void)id;
	(void)code;
	if (!c)
		return;
	pthread_mutex_lock(&ev->mu);
	registry_remove(ev, c);
	pthread_mutex_unlock(&ev->mu);
	conn_free(c);
}

/*
 * Every stream may have missed events (the listener lost its connection,
 * or a reference could not be fetched): player_id NULL = all. Open
 * streams are closed 1011 (they resume with ?after=); unopened ones at
 * their open.
 */
static void mark_lost(struct api_events *ev, const char *player_id, const char *reason)
{
	pthread_mutex_lock(&ev->mu);
	for (size_t b = 0; b < EV_BUCKETS; b++) {
		for (struct ev_conn *c = ev->buckets[b]; c; c = c->next) {
			if (player_id && strcmp(c->player_id, player_id) != 0)
				continue;
			if (c->open)
				(void)cc_ws_close(ev->hub, c->id, CC_WS_CLOSE_INTERNAL, reason);
			else
				c->lost = true;
		}
	}
	pthread_mutex_unlock(&ev->mu);
}

/* ---- the listener -------------------------------------------------------------- */

static void pause_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* One notification of cc_events: an envelope or a reference (contracts/outbox-events.md). */
static void deliver(struct api_events *ev, const char *payload, int64_t since_ns)
{
	cJSON *env = cJSON_Parse(payload);
	const cJSON *pos = cJSON_GetObjectItemCaseSensitive(env, "position");
	const cJSON *players = cJSON_GetObjectItemCaseSensitive(env, "player_ids");
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(env, "id");
	if (!cJSON_IsNumber(pos) || !cJSON_IsArray(players) || !cJSON_IsNumber(id)) {
		cc_log_warn("events_notification_malformed", CC_LOG_INT("bytes", (long long)strlen(payload)));
		cJSON_Delete(env);
		return;
	}
	int64_t position = (int64_t)pos->valuedouble;
	char *whole = NULL;
	const char *text = payload;
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(env, "ref"))) {
		struct cc_pg *pg = NULL;
		int rc = cc_pg_pool_acquire(ev->api->pool, 1000, &pg);
		if (rc == 0)
			rc = cc_outbox_envelope(pg, (int64_t)id->valuedouble, &whole);
		cc_pg_pool_release(ev->api->pool, pg);
		if (rc != 0) {
			cc_log_warn("events_reference_unavailable", CC_LOG_INT("position", (long long)position),
				    CC_LOG_STR("error", cc_errname(rc)));
			const cJSON *p;
			cJSON_ArrayForEach(p, players) {
				if (cJSON_IsString(p))
					mark_lost(ev, p->valuestring, "event_unavailable");
			}
			cJSON_Delete(env);
			return;
		}
		cc_metric_inc(ev->refs_fetched);
		text = whole;
	}
	size_t len = strlen(text);
	pthread_mutex_lock(&ev->mu);
	const cJSON *p;
	cJSON_ArrayForEach(p, players) {
		if (!cJSON_IsString(p))
			continue;
		for (struct ev_conn *c = *bucket_of(ev, p->valuestring); c; c = c->next) {
			if (strcmp(c->player_id, p->valuestring) == 0)
				offer(ev, c, position, text, len, since_ns);
		}
	}
	pthread_mutex_unlock(&ev->mu);
	free(whole);
	cJSON_Delete(env);
}

struct ev_check {
	uint64_t id;
	char hash[2 + 64 + 1];
};

/*
 * Closes open streams whose session ended (revoked by a ban, expired): 1008.
 * On its own thread, one query per CC_SESSIONS_CHECK_MAX streams, so a
 * replica with thousands of streams neither stalls its listener nor spends
 * a round trip per stream.
 */
static void check_sessions(struct api_events *ev)
{
	size_t n = 0, cap = 0;
	struct ev_check *list = NULL;
	pthread_mutex_lock(&ev->mu);
	for (size_t b = 0; b < EV_BUCKETS; b++) {
		for (struct ev_conn *c = ev->buckets[b]; c; c = c->next) {
			if (!c->open)
				continue;
			if (n == cap) {
				size_t nc = cap ? cap * 2 : 64;
				struct ev_check *nl = realloc(list, nc * sizeof *nl);
				if (!nl)
					break;
				list = nl;
				cap = nc;
			}
			list[n].id = c->id;
			memcpy(list[n].hash, c->session_hash, sizeof list[n].hash);
			n++;
		}
	}
	pthread_mutex_unlock(&ev->mu);
	struct cc_pg *pg = NULL;
	if (n && cc_pg_pool_acquire(ev->api->pool, 1000, &pg) == 0) {
		const char *hashes[CC_SESSIONS_CHECK_MAX];
		uint8_t verdict[CC_SESSIONS_CHECK_MAX];
		for (size_t at = 0; at < n && !atomic_load(&ev->stop); at += CC_SESSIONS_CHECK_MAX) {
			size_t k = n - at < CC_SESSIONS_CHECK_MAX ? n - at : CC_SESSIONS_CHECK_MAX;
			for (size_t i = 0; i < k; i++)
				hashes[i] = list[at + i].hash;
			if (cc_sessions_ended(pg, hashes, k, verdict) != 0)
				break; /* the database is away: try again next round */
			for (size_t i = 0; i < k; i++) {
				const char *why = verdict[i] == CC_SESSION_ENDED_REVOKED   ? "session_revoked"
						  : verdict[i] == CC_SESSION_ENDED_EXPIRED ? "session_expired"
											   : NULL;
				if (why && cc_ws_close(ev->hub, list[at + i].id, CC_WS_CLOSE_POLICY, why) == 0) {
					const char *lv[] = { why };
					cc_metric_add(ev->session_closed, lv, 1);
				}
			}
		}
	}
	cc_pg_pool_release(ev->api->pool, pg);
	free(list);
}

static void *checker_main(void *arg)
{
	struct api_events *ev = arg;
	int64_t next = cc_clock_ms() + ev->api->cfg->events_session_check_ms;
	while (!atomic_load(&ev->stop)) {
		int64_t left = next - cc_clock_ms();
		if (left > 0) {
			pause_ms(left < 100 ? left : 100);
			continue;
		}
		check_sessions(ev);
		next = cc_clock_ms() + ev->api->cfg->events_session_check_ms;
	}
	return NULL;
}

static void *listener_main(void *arg)
{
	struct api_events *ev = arg;
	const struct api_config *cfg = ev->api->cfg;
	struct cc_pg_options opt = { .query_timeout_ms = (int)cfg->svc.db_timeout_ms,
				     .application_name = "cc-api-events" };
	struct cc_pg *pg = NULL;
	char channel[64];
	char *payload = malloc(CC_PG_NOTIFY_PAYLOAD_MAX + 1);
	bool warned = false;
	while (payload && !atomic_load(&ev->stop)) {
		if (!pg) {
			char err[256] = "";
			if (cc_pg_connect(cfg->svc.database_url, &opt, &pg, err, sizeof err) != 0 ||
			    cc_pg_listen(pg, CC_OUTBOX_CHANNEL) != 0) {
				if (!warned)
					cc_log_warn("events_listen_failed", CC_LOG_STR("error", err));
				warned = true;
				cc_pg_free(pg);
				pg = NULL;
				pause_ms(250);
				continue;
			}
		}
		int rc = cc_pg_wait_notify(pg, 250, channel, sizeof channel, payload, CC_PG_NOTIFY_PAYLOAD_MAX + 1);
		if (rc == 0 || rc == CC_ETIMEOUT) {
			if (!atomic_exchange(&ev->listening, true)) {
				cc_log_info("events_listening", CC_LOG_STR("channel", CC_OUTBOX_CHANNEL));
				warned = false;
			}
			if (rc == 0)
				deliver(ev, payload, cc_clock_ns());
		} else {
			/* A lost connection (or a notification we could not read) may hide events. */
			if (atomic_exchange(&ev->listening, false)) {
				cc_metric_inc(ev->listener_lost);
				cc_log_warn("events_listener_lost", CC_LOG_STR("error", cc_errname(rc)));
			}
			mark_lost(ev, NULL, "events_lost");
			if (rc == CC_EINVAL) {
				cc_pg_free(pg);
				pg = NULL;
			}
			pause_ms(100);
		}
	}
	atomic_store(&ev->listening, false);
	cc_pg_free(pg);
	free(payload);
	return NULL;
}

/* ---- the route --------------------------------------------------------------- */

/* "after": a decimal 0 .. 2^53 - 1 without leading zeros. */
static bool parse_after(const char *s, int64_t *out)
{
	size_t n = strlen(s);
	if (n == 0 || n > 16 || (n > 1 && s[0] == '0'))
		return false;
	int64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (s[i] - '0');
	}
	if (v > EV_POSITION_MAX)
		return false;
	*out = v;
	return true;
}

/*
 * The session token: "Authorization: Bearer" or, for browsers, the
 * subprotocol pair "cc.v1, cc.v1.bearer.<token>". *offered: the client
 * offered cc.v1 (then it is echoed). Returns 0, or answers 400/401.
 */
static int take_token(const struct cc_http_request *req, struct cc_http_response *resp, char *token, size_t cap,
		      bool *offered)
{
	const char *auth = cc_http_header(req, "Authorization");
	char protos[EV_PROTOCOLS_MAX];
	bool from_proto = false;
	*offered = false;
	if (cc_http_header_join(req, "Sec-WebSocket-Protocol", protos, sizeof protos) >= sizeof protos) {
		cc_http_error(resp, 400, "invalid_request", "Sec-WebSocket-Protocol is too long", false);
		return CC_EINVAL;
	}
	for (const char *p = protos; *p;) {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		const char *e = p;
		while (*e && *e != ',' && *e != ' ' && *e != '\t')
			e++;
		size_t n = (size_t)(e - p);
		if (n == strlen(EV_SUBPROTOCOL) && memcmp(p, EV_SUBPROTOCOL, n) == 0)
			*offered = true;
		else if (!auth && n > strlen(EV_BEARER_PREFIX) && memcmp(p, EV_BEARER_PREFIX, strlen(EV_BEARER_PREFIX)) == 0) {
			size_t tl = n - strlen(EV_BEARER_PREFIX);
			if (tl >= cap || !api_bearer_token_syntax_ok(p + strlen(EV_BEARER_PREFIX), tl)) {
				cc_http_error(resp, 401, "unauthorized", "a valid session bearer token is required", false);
				return CC_EUNAUTHORIZED;
			}
			memcpy(token, p + strlen(EV_BEARER_PREFIX), tl);
			token[tl] = '\0';
			from_proto = true;
		}
		p = e;
	}
	if (auth) {
		if (!api_bearer_parse(auth, token, cap)) {
			cc_http_error(resp, 401, "unauthorized", "a valid session bearer token is required", false);
			return CC_EUNAUTHORIZED;
		}
		return 0;
	}
	if (!from_proto) {
		cc_http_error(resp, 401, "unauthorized",
			      "a session token is required: Authorization: Bearer, or the subprotocol cc.v1.bearer.<token>",
			      false);
		return CC_EUNAUTHORIZED;
	}
	if (!*offered) {
		cc_http_error(resp, 400, "invalid_request", "a bearer subprotocol needs the subprotocol cc.v1 beside it",
			      false);
		return CC_EINVAL;
	}
	return 0;
}

static void refused(struct api_events *ev, const char *reason)
{
	const char *lv[] = { reason };
	cc_metric_add(ev->refused, lv, 1);
}

/* Adds a control message ("stream.ready" / "stream.resync") to l. */
static int push_control(struct ev_list *l, const char *event, int64_t position, const char *reason, long replayed)
{
	char buf[160];
	int n = reason ? snprintf(buf, sizeof buf, "{\"event\":\"%s\",\"position\":%lld,\"reason\":\"%s\"}", event,
				  (long long)position, reason)
		       : snprintf(buf, sizeof buf, "{\"event\":\"%s\",\"position\":%lld,\"replayed\":%ld}", event,
				  (long long)position, replayed);
	return list_push(l, 0, 0, buf, (size_t)n);
}

/*
 * Reads what c missed after `after` into c->first (replay + stream.ready,
 * or stream.resync) and sets its last position. *resync_reason: NULL when
 * replayed. Returns 0 or the database's error.
 */
static int prepare(struct api_events *ev, struct cc_pg *pg, struct ev_conn *c, bool has_after, int64_t after,
		   const char **resync_reason)
{
	struct ev_list replay = { 0 };
	int64_t cursor = after, replayed = 0;
	bool too_many = false;
	int rc = 0;
	*resync_reason = NULL;
	while (has_after && rc == 0) {
		char *json = NULL;
		rc = cc_outbox_since(pg, c->player_id, cursor, EV_REPLAY_PAGE, &json);
		if (rc != 0)
			break;
		cJSON *arr = cJSON_Parse(json);
		free(json);
		if (!cJSON_IsArray(arr)) {
			cJSON_Delete(arr);
			rc = CC_ENOMEM;
			break;
		}
		int got = cJSON_GetArraySize(arr);
		const cJSON *e;
		cJSON_ArrayForEach(e, arr) {
			const cJSON *pos = cJSON_GetObjectItemCaseSensitive(e, "position");
			char *text = cJSON_PrintUnformatted(e);
			if (!cJSON_IsNumber(pos) || !text || list_push(&replay, (int64_t)pos->valuedouble, 0, text,
								      strlen(text)) != 0) {
				free(text);
				rc = CC_ENOMEM;
				break;
			}
			free(text);
			cursor = (int64_t)pos->valuedouble;
			replayed++;
		}
		cJSON_Delete(arr);
		if (replayed > EV_REPLAY_MAX || replay.bytes > EV_REPLAY_MAX_BYTES) {
			too_many = true;
			break;
		}
		if (got < EV_REPLAY_PAGE)
			break;
	}
	int64_t floor_pos = 0, newest = 0, committed = 0;
	if (rc == 0)
		rc = cc_outbox_resume_window(pg, &floor_pos, &newest, &committed);
	if (rc != 0) {
		list_free(&replay);
		return rc;
	}
	int64_t position;
	if (has_after && after < floor_pos)
		*resync_reason = "too_old";
	else if (has_after && after > newest)
		*resync_reason = "unknown_position";
	else if (too_many)
		*resync_reason = "too_far_behind";
	if (*resync_reason || !has_after) {
		/* not newest: a position drawn by a dispatcher that commits later is below it (outbox.h) */
		list_free(&replay);
		position = committed;
		rc = *resync_reason ? push_control(&replay, "stream.resync", position, *resync_reason, 0)
				    : push_control(&replay, "stream.ready", position, NULL, 0);
	} else {
		position = cursor;
		rc = push_control(&replay, "stream.ready", position, NULL, (long)replayed);
	}
	if (rc != 0) {
		list_free(&replay);
		return rc;
	}
	/* under the lock: the listener reads first's size (offer) and last_sent */
	pthread_mutex_lock(&ev->mu);
	c->first = replay;
	c->last_sent = position;
	pthread_mutex_unlock(&ev->mu);
	return rc;
}

int api_events_get(const struct cc_http_request *req, struct cc_http_response *resp, void *ctx)
{
	struct api *api = ctx;
	struct api_events *ev = api->events;
	if (!ev) {
		cc_http_error_unavailable(resp, "events_disabled", "this server has no event stream; poll the REST API");
		return 0;
	}
	int64_t after = 0;
	const char *after_s = cc_http_query(req, "after");
	bool has_after = after_s != NULL;
	if (has_after && !parse_after(after_s, &after)) {
		refused(ev, "invalid_request");
		cc_http_error(resp, 400, "invalid_request", "after must be a decimal position 0..9007199254740991",
			      false);
		return 0;
	}
	char token[API_BEARER_TOKEN_MAX + 1];
	bool offered;
	int rc = take_token(req, resp, token, sizeof token, &offered);
	if (rc != 0) {
		refused(ev, rc == CC_EUNAUTHORIZED ? "unauthorized" : "invalid_request");
		return 0;
	}
	if (atomic_load(&ev->stop) || !atomic_load(&ev->listening)) {
		refused(ev, "not_listening");
		cc_http_error_unavailable(resp, "unavailable", "the event stream is not available; poll or retry shortly");
		return 0;
	}
	struct cc_pg *pg = api_db(api, resp);
	if (!pg) {
		refused(ev, "database");
		return 0;
	}
	struct ev_conn *c = calloc(1, sizeof *c);
	if (!c) {
		api_db_release(api, pg);
		cc_http_error_unavailable(resp, "out_of_memory", "the server is out of memory");
		return 0;
	}
	api_secret_hash_param(token, c->session_hash);
	struct api_player player;
	rc = api_authenticate_hash(api, pg, c->session_hash, resp, &player);
	if (rc != 0) {
		refused(ev, "session");
		api_db_release(api, pg);
		free(c);
		return 0;
	}
	snprintf(c->player_id, sizeof c->player_id, "%s", player.id);

	/*
	 * Registered before the replay is read: whatever commits after its
	 * snapshot arrives live. The cap counts registered streams, opened or
	 * not, so concurrent upgrades cannot all pass it and then be refused
	 * by the hub after their 101.
	 */
	pthread_mutex_lock(&ev->mu);
	bool full = ev->n_conns >= (size_t)api->cfg->events_max_connections;
	if (!full) {
		struct ev_conn **b = bucket_of(ev, c->player_id);
		c->next = *b;
		*b = c;
		ev->n_conns++;
	}
	pthread_mutex_unlock(&ev->mu);
	if (full) {
		refused(ev, "over_capacity");
		api_db_release(api, pg);
		free(c);
		cc_http_error_unavailable(resp, "over_capacity", "this replica holds all the streams it can; poll or retry");
		return 0;
	}
	const char *resync = NULL;
	if (ev->testkit_replay_delay_ms) /* cc-testkit-api only: widen the race the registry closes */
		pause_ms(ev->testkit_replay_delay_ms);
	rc = atomic_load(&ev->listening) ? prepare(ev, pg, c, has_after, after, &resync) : CC_EUNAVAILABLE;
	api_db_release(api, pg);
	if (rc == 0)
		rc = cc_http_respond_websocket(req, resp, ev->hub, offered ? EV_SUBPROTOCOL : NULL, c);
	else
		cc_http_error_unavailable(resp, "unavailable", "the event stream is not available; poll or retry shortly");
	if (rc != 0) {
		refused(ev, rc == CC_EINVAL ? "invalid_upgrade" : "database");
		pthread_mutex_lock(&ev->mu);
		registry_remove(ev, c);
		pthread_mutex_unlock(&ev->mu);
		conn_free(c);
		return 0;
	}
	if (resync) {
		const char *lv[] = { resync };
		cc_metric_add(ev->resyncs, lv, 1);
	} else if (has_after) {
		cc_metric_inc(ev->resumes);
	}
	return 0;
}

/* ---- start and stop ------------------------------------------------------------ */

static const double latency_buckets[] = { 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1 };

int api_events_open(struct api *api)
{
	const struct api_config *cfg = api->cfg;
	struct api_events *ev = calloc(1, sizeof *ev);
	if (!ev)
		return CC_ENOMEM;
	ev->api = api;
	pthread_mutex_init(&ev->mu, NULL);
	const char *delay = getenv("CC_TESTKIT_EVENTS_REPLAY_DELAY_MS");
	if (api_testkit_login && delay) /* never in cc-api, which links no testkit */
		ev->testkit_replay_delay_ms = strtol(delay, NULL, 10);
	static const char *const kind[] = { "kind", NULL };
	static const char *const reason[] = { "reason", NULL };
	ev->sent = cc_counter("cosmic_clash_api_events_sent_total",
			      "Messages queued on event streams, by kind (live, replay, control)", kind, 4);
	ev->resumes = cc_counter("cosmic_clash_api_events_resumes_total",
				 "Event streams opened with ?after= and replayed", NULL, 1);
	ev->resyncs = cc_counter("cosmic_clash_api_events_resyncs_total",
				 "Event streams told to resync over REST, by reason", reason, 4);
	ev->refused = cc_counter("cosmic_clash_api_events_refused_total",
				 "Event stream upgrades refused before the 101, by reason", reason, 8);
	ev->listener_lost = cc_counter("cosmic_clash_api_events_listener_lost_total",
				       "Times the cc_events listener lost its connection (every stream closed 1011)",
				       NULL, 1);
	ev->refs_fetched = cc_counter("cosmic_clash_api_events_references_fetched_total",
				      "Envelopes fetched because NOTIFY carried a reference", NULL, 1);
	ev->session_closed = cc_counter("cosmic_clash_api_events_session_closed_total",
					"Event streams closed 1008 because their session ended, by reason", reason, 2);
	struct cc_ws_hub_options o = {
		.name = "events",
		.max_connections = (unsigned)cfg->events_max_connections,
		.max_message_bytes = EV_CLIENT_MESSAGE_MAX,
		.max_backlog_bytes = EV_BACKLOG_BYTES,
		.max_backlog_messages = EV_BACKLOG_MESSAGES,
		.ping_interval_ms = (unsigned)cfg->events_ping_interval_ms,
		.pong_timeout_ms = (unsigned)cfg->events_pong_timeout_ms,
		.rate_messages = EV_RATE_MESSAGES,
		.rate_window_ms = EV_RATE_WINDOW_MS,
		.on_open = on_open,
		/* no on_message: the stream takes no data (the hub still checks a text frame's UTF-8 and size) */
		.on_close = on_close,
		.ctx = ev,
		.open_gauge = cc_gauge("cosmic_clash_api_events_connections", "Event streams open now", NULL, 1),
		.sent_counter = cc_counter("cosmic_clash_api_events_frames_sent_total",
					   "Text messages handed to the WebSocket framer", NULL, 1),
		.dropped_slow = cc_counter("cosmic_clash_api_events_slow_readers_dropped_total",
					   "Event streams closed 1013 because their send backlog passed the cap", NULL, 1),
		.closed_counter = cc_counter("cosmic_clash_api_events_closed_total", "Event streams ended", NULL, 1),
		.send_latency = cc_histogram("cosmic_clash_api_events_notify_to_send_seconds",
					     "From a NOTIFY on cc_events reaching this replica to its frame going to the socket",
					     NULL, 1, latency_buckets, CC_ARRAY_LEN(latency_buckets)),
	};
	ev->hub = cc_ws_hub_start(&o);
	if (!ev->hub) {
		pthread_mutex_destroy(&ev->mu);
		free(ev);
		return CC_EUNAVAILABLE;
	}
	api->events = ev;
	if (pthread_create(&ev->listener, NULL, listener_main, ev) != 0) {
		api_events_free(api);
		return CC_EUNAVAILABLE;
	}
	ev->listener_started = true;
	if (pthread_create(&ev->checker, NULL, checker_main, ev) != 0) {
		api_events_free(api);
		return CC_EUNAVAILABLE;
	}
	ev->checker_started = true;
	return 0;
}

void api_events_close(struct api *api)
{
	struct api_events *ev = api->events;
	if (!ev)
		return;
	atomic_store(&ev->stop, true);
	if (ev->listener_started)
		pthread_join(ev->listener, NULL);
	if (ev->checker_started)
		pthread_join(ev->checker, NULL);
	ev->listener_started = ev->checker_started = false;
	cc_ws_hub_drain(ev->hub); /* every stream: 1001, on_close frees it; later upgrades are refused */
}

void api_events_free(struct api *api)
{
	struct api_events *ev = api->events;
	if (!ev)
		return;
	api_events_close(api);
	cc_ws_hub_stop(ev->hub);
	for (size_t b = 0; b < EV_BUCKETS; b++) {
		while (ev->buckets[b]) { /* none: every handler has returned; kept safe */
			struct ev_conn *c = ev->buckets[b];
			ev->buckets[b] = c->next;
			conn_free(c);
		}
	}
	pthread_mutex_destroy(&ev->mu);
	free(ev);
	api->events = NULL;
}
