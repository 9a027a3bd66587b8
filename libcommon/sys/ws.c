/*
 * ws.c - the RFC 6455 hub of ws.h: one epoll thread, libwslay framing.
 *
 * Locking: h->mu guards the id map, every connection's outbox (messages
 * sent from any thread, not yet given to libwslay), its backlog figures and
 * its flags, the dirty list and the new list. The wslay context and the
 * socket belong to the hub thread alone, which never holds h->mu while it
 * calls a callback, so callbacks may send.
 */
#include "sys/ws.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <unistd.h>

#include <wslay/wslay.h>

#include "sys/clock.h"
#include "sys/crypto.h"
#include "sys/log.h"
#include "sys/metrics.h"
#include "sys/utf8.h"

struct ws_out {
	struct ws_out *next;
	int64_t since_ns; /* cc_clock_ns() the sender started from; 0 = not timed */
	size_t len;
	char data[];
};

struct ws_conn {
	uint64_t id;
	struct ws_conn *map_next;   /* bucket chain (mu) */
	struct ws_conn *dirty_next; /* dirty list (mu) */
	struct ws_conn *fresh_next; /* new list (mu) */
	struct ws_conn *grave_next; /* finished this round (hub thread) */
	bool dead;		    /* finished, freed at the end of the round */
	struct ws_conn *all_next, *all_prev; /* hub thread's list of live connections */
	bool dirty;		    /* on the dirty list (mu) */
	bool closing;		    /* no more sends accepted (mu) */
	int close_code;		    /* requested close (mu), 0 = none */
	char close_reason[CC_WS_REASON_MAX + 1];
	bool slow;		    /* backlog cap hit (mu) */
	struct ws_out *out_head, *out_tail; /* (mu) */
	size_t out_bytes, out_msgs;	    /* outbox (mu) */
	size_t wslay_bytes, wslay_msgs;	    /* queued inside wslay, as of the last send (mu) */

	/* hub thread only */
	int fd;
	void *user;
	cc_ws_release release;
	void *release_cls;
	char remote[64];
	wslay_event_context_ptr ctx;
	char *extra;
	size_t extra_len, extra_off;
	bool eof;		/* the socket read EOF or failed */
	bool failed;		/* a callback asked to drop */
	bool draining;		/* our close is out, SHUT_WR done: discard until EOF */
	int64_t drain_deadline;
	int64_t close_deadline;	/* close queued: give up after it */
	int64_t next_ping;
	int64_t pong_deadline;	/* 0 = no ping outstanding */
	int64_t rate_at;	/* token bucket: refilled up to now */
	double rate_tokens;	/* frames it may still take at once (<= rate_messages) */
	int sent_code;		/* close code we queued, 0 = none */
	bool epollout;		/* EPOLLOUT registered */
	bool say_1002;		/* wslay queued a code-less close for a bad frame: send 1002 instead */
	struct cc_ws_hub *hub;
};

struct cc_ws_hub {
	struct cc_ws_hub_options o;
	char name[32];
	pthread_t thread;
	int epfd, evfd;
	pthread_mutex_t mu;
	struct ws_conn **buckets; /* (mu) */
	size_t nbuckets;
	struct ws_conn *dirty;	  /* (mu) */
	struct ws_conn *fresh;	  /* adopted, not yet registered (mu) */
	unsigned open;		  /* (mu) adopted and not released */
	uint64_t next_id;	  /* (mu) */
	bool stopping;		  /* (mu) */
	bool drained;		  /* the thread has ended (cc_ws_hub_drain) */
	struct ws_conn *all;	  /* hub thread */
	struct ws_conn *grave;	  /* hub thread */
	unsigned sweep_ms;
};

/* ---- SHA-1 (RFC 3174), only for Sec-WebSocket-Accept ---------------------- */

static uint32_t rol(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

static void sha1_block(uint32_t hs[5], const uint8_t *p)
{
	uint32_t w[80];
	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 80; i++)
		w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	uint32_t a = hs[0], b = hs[1], c = hs[2], d = hs[3], e = hs[4];
	for (int i = 0; i < 80; i++) {
		uint32_t f, k;
		if (i < 20) {
			f = (b & c) | (~b & d);
			k = 0x5A827999;
		} else if (i < 40) {
			f = b ^ c ^ d;
			k = 0x6ED9EBA1;
		} else if (i < 60) {
			f = (b & c) | (b & d) | (c & d);
			k = 0x8F1BBCDC;
		} else {
			f = b ^ c ^ d;
			k = 0xCA62C1D6;
		}
		uint32_t t = rol(a, 5) + f + e + k + w[i];
		e = d;
		d = c;
		c = rol(b, 30);
		b = a;
		a = t;
	}
	hs[0] += a;
	hs[1] += b;
	hs[2] += c;
	hs[3] += d;
	hs[4] += e;
}

static void sha1(const uint8_t *data, size_t len, uint8_t out[20])
{
	uint32_t hs[5] = { 0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0 };
	size_t i = 0;
	for (; i + 64 <= len; i += 64)
		sha1_block(hs, data + i);
	uint8_t tail[128] = { 0 };
	size_t rest = len - i;
	memcpy(tail, data + i, rest);
	tail[rest] = 0x80;
	size_t tl = rest + 9 <= 64 ? 64 : 128;
	uint64_t bits = (uint64_t)len * 8;
	for (int j = 0; j < 8; j++)
		tail[tl - 1 - j] = (uint8_t)(bits >> (8 * j));
	sha1_block(hs, tail);
	if (tl == 128)
		sha1_block(hs, tail + 64);
	for (int j = 0; j < 5; j++) {
		out[4 * j] = (uint8_t)(hs[j] >> 24);
		out[4 * j + 1] = (uint8_t)(hs[j] >> 16);
		out[4 * j + 2] = (uint8_t)(hs[j] >> 8);
		out[4 * j + 3] = (uint8_t)hs[j];
	}
}

int cc_ws_accept_key(const char *key, char out[29])
{
	static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
	if (!key || strlen(key) != 24)
		return CC_EINVAL;
	uint8_t raw[18];
	size_t n = 0;
	if (cc_base64_decode(key, 24, raw, sizeof raw, &n) != 0 || n != 16)
		return CC_EINVAL;
	uint8_t buf[24 + sizeof guid - 1];
	memcpy(buf, key, 24);
	memcpy(buf + 24, guid, sizeof guid - 1);
	uint8_t dig[20];
	sha1(buf, sizeof buf, dig);
	size_t ol = 0;
	if (cc_base64_encode(dig, 20, out, 29, &ol) != 0 || ol != 28)
		return CC_EINVAL;
	out[28] = '\0';
	return 0;
}

/* ---- helpers --------------------------------------------------------------- */

static void wake(struct cc_ws_hub *h)
{
	uint64_t one = 1;
	ssize_t r = write(h->evfd, &one, sizeof one);
	(void)r; /* EAGAIN: the counter is already non-zero, the thread will wake */
}

static struct ws_conn *map_find(struct cc_ws_hub *h, uint64_t id)
{
	for (struct ws_conn *c = h->buckets[id & (h->nbuckets - 1)]; c; c = c->map_next)
		if (c->id == id)
			return c;
	return NULL;
}

static void map_remove(struct cc_ws_hub *h, struct ws_conn *c)
{
	struct ws_conn **pp = &h->buckets[c->id & (h->nbuckets - 1)];
	while (*pp && *pp != c)
		pp = &(*pp)->map_next;
	if (*pp)
		*pp = c->map_next;
}

/* Under mu: puts c on the dirty list. Returns true when the thread must be woken. */
static bool mark_dirty(struct cc_ws_hub *h, struct ws_conn *c)
{
	if (c->dirty)
		return false;
	c->dirty = true;
	c->dirty_next = h->dirty;
	h->dirty = c;
	return true;
}

static void metric_add(struct cc_metric *m, double d)
{
	if (m)
		cc_metric_add(m, NULL, d);
}

/* ---- wslay callbacks (hub thread) ------------------------------------------ */

static ssize_t recv_cb(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags,
		       void *ud)
{
	(void)flags;
	struct ws_conn *c = ud;
	if (c->extra_off < c->extra_len) {
		size_t n = c->extra_len - c->extra_off;
		if (n > len)
			n = len;
		memcpy(buf, c->extra + c->extra_off, n);
		c->extra_off += n;
		return (ssize_t)n;
	}
	ssize_t r;
	do {
		r = recv(c->fd, buf, len, 0);
	} while (r < 0 && errno == EINTR);
	if (r > 0)
		return r;
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	c->eof = true;
	wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
	return -1;
}

static ssize_t send_cb(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags,
		       void *ud)
{
	(void)flags;
	struct ws_conn *c = ud;
	ssize_t r;
	if (c->say_1002 && len == 2 && data[0] == 0x88 && data[1] == 0x00) {
		/* wslay 1.1.1 answers a frame its frame layer refuses (a fragmented
		 * or oversized control frame, a reserved opcode) with a close that
		 * has no code: put 1002 and a reason on the wire instead. */
		static const uint8_t frame[] = { 0x88, 16, 0x03, 0xea, 'p', 'r', 'o', 't', 'o', 'c',
						 'o', 'l', ' ', 'e', 'r', 'r', 'o', 'r' };
		c->say_1002 = false;
		r = send(c->fd, frame, sizeof frame, MSG_NOSIGNAL);
		if (r == (ssize_t)sizeof frame)
			return 2;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			c->say_1002 = true;
			wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
			return -1;
		}
		c->eof = true; /* a partial frame: nothing sane can follow */
		wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
		return -1;
	}
	do {
		r = send(c->fd, data, len, MSG_NOSIGNAL);
	} while (r < 0 && errno == EINTR);
	if (r >= 0)
		return r;
	if (errno == EAGAIN || errno == EWOULDBLOCK) {
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	c->eof = true;
	wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
	return -1;
}

static void queue_close(struct ws_conn *c, int code, const char *reason)
{
	if (c->sent_code || wslay_event_get_close_sent(c->ctx))
		return;
	c->sent_code = code;
	c->close_deadline = cc_clock_ms() + c->hub->o.close_timeout_ms;
	size_t rl = reason ? strlen(reason) : 0;
	if (rl > CC_WS_REASON_MAX)
		rl = CC_WS_REASON_MAX;
	if (wslay_event_queue_close(c->ctx, (uint16_t)code, (const uint8_t *)reason, rl) != 0)
		c->failed = true;
	pthread_mutex_lock(&c->hub->mu);
	c->closing = true;
	pthread_mutex_unlock(&c->hub->mu);
}

/* RFC 6455 5.5: control frames must not be fragmented (wslay lets FIN=0 pass). */
static void on_frame_start_cb(wslay_event_context_ptr ctx,
			      const struct wslay_event_on_frame_recv_start_arg *a, void *ud)
{
	struct ws_conn *c = ud;
	struct cc_ws_hub *h = c->hub;
	if (c->sent_code)
		return;
	if ((a->opcode & 0x8) && !a->fin) {
		queue_close(c, CC_WS_CLOSE_PROTOCOL, "fragmented control frame");
		wslay_event_shutdown_read(ctx);
		return;
	}
	if (a->opcode == WSLAY_PONG || a->opcode == WSLAY_CONNECTION_CLOSE)
		return;
	/*
	 * Every other frame counts as it starts (a message that never ends,
	 * fragment after fragment, must count too), against a token bucket (a
	 * fixed window admits twice its limit across a boundary).
	 */
	int64_t now = cc_clock_ms();
	c->rate_tokens += (double)(now - c->rate_at) * h->o.rate_messages / h->o.rate_window_ms;
	if (c->rate_tokens > h->o.rate_messages)
		c->rate_tokens = h->o.rate_messages;
	c->rate_at = now;
	if (c->rate_tokens < 1.0) {
		queue_close(c, CC_WS_CLOSE_POLICY, "rate_limited");
		wslay_event_shutdown_read(ctx);
		return;
	}
	c->rate_tokens -= 1.0;
}

static void on_msg_cb(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *a,
		      void *ud)
{
	(void)ctx;
	struct ws_conn *c = ud;
	struct cc_ws_hub *h = c->hub;
	if (c->sent_code)
		return; /* closing: ignore what still arrives */
	if (a->opcode == WSLAY_PONG) {
		c->pong_deadline = 0;
		return;
	}
	if (a->opcode == WSLAY_CONNECTION_CLOSE)
		return; /* wslay answers it */
	if (a->opcode == WSLAY_PING)
		return; /* wslay answers it */
	if (a->opcode == WSLAY_BINARY_FRAME) {
		queue_close(c, CC_WS_CLOSE_UNSUPPORTED, "text only");
		return;
	}
	if (a->opcode != WSLAY_TEXT_FRAME)
		return;
	if (!cc_utf8_valid((const char *)a->msg, a->msg_length)) {
		queue_close(c, CC_WS_CLOSE_INVALID_PAYLOAD, "invalid utf-8");
		return;
	}
	if (h->o.on_message)
		h->o.on_message(h->o.ctx, c->id, c->user, (const char *)a->msg, a->msg_length);
}

/* ---- the hub thread --------------------------------------------------------- */

static void update_events(struct cc_ws_hub *h, struct ws_conn *c)
{
	bool want_out = !c->draining && wslay_event_want_write(c->ctx);
	if (want_out == c->epollout)
		return;
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP | (want_out ? EPOLLOUT : 0),
				  .data.ptr = c };
	if (epoll_ctl(h->epfd, EPOLL_CTL_MOD, c->fd, &ev) == 0)
		c->epollout = want_out;
}

/* Moves the outbox and any requested close into wslay (hub thread). */
static void take_outbox(struct cc_ws_hub *h, struct ws_conn *c)
{
	pthread_mutex_lock(&h->mu);
	struct ws_out *list = c->out_head;
	c->out_head = c->out_tail = NULL;
	size_t moved_bytes = c->out_bytes, moved_msgs = c->out_msgs;
	c->out_bytes = c->out_msgs = 0;
	c->wslay_bytes += moved_bytes;
	c->wslay_msgs += moved_msgs;
	int code = c->close_code;
	bool slow = c->slow;
	char reason[CC_WS_REASON_MAX + 1];
	memcpy(reason, c->close_reason, sizeof reason);
	c->close_code = 0;
	pthread_mutex_unlock(&h->mu);

	unsigned n = 0;
	while (list) {
		struct ws_out *o = list;
		list = o->next;
		if (!c->sent_code && !slow) {
			struct wslay_event_msg m = { .opcode = WSLAY_TEXT_FRAME,
						     .msg = (const uint8_t *)o->data,
						     .msg_length = o->len };
			if (wslay_event_queue_msg(c->ctx, &m) == 0) {
				n++;
				if (o->since_ns && h->o.send_latency)
					cc_metric_observe(h->o.send_latency, NULL,
							  (double)(cc_clock_ns() - o->since_ns) / 1e9);
			}
		}
		free(o);
	}
	metric_add(h->o.sent_counter, n);
	if (slow && !c->sent_code) {
		metric_add(h->o.dropped_slow, 1);
		cc_log_warn("ws_slow_reader_closed", CC_LOG_STR("hub", h->name),
			    CC_LOG_INT("id", (long long)c->id), CC_LOG_STR("remote", c->remote));
		queue_close(c, CC_WS_CLOSE_TRY_LATER, "slow_reader");
	}
	if (code)
		queue_close(c, code, reason);
}

static void do_io(struct cc_ws_hub *h, struct ws_conn *c, bool readable)
{
	if (c->draining) {
		char buf[4096];
		for (;;) {
			ssize_t r = recv(c->fd, buf, sizeof buf, 0);
			if (r > 0)
				continue;
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				break;
			c->eof = true;
			break;
		}
		return;
	}
	if (readable || c->extra_off < c->extra_len) {
		int rc = wslay_event_want_read(c->ctx) ? wslay_event_recv(c->ctx) : 0;
		if (rc != 0 && !c->eof && rc != WSLAY_ERR_NOMEM) {
			/* Our sockets did not fail, wslay gave up on a bad frame (1.1.1
			 * does so for a fragmented control frame, answering
			 * WSLAY_ERR_CALLBACK_FAILURE): stop reading and say 1002. */
			wslay_event_shutdown_read(c->ctx);
			if (!c->sent_code) {
				c->sent_code = CC_WS_CLOSE_PROTOCOL;
				c->say_1002 = true;
				c->close_deadline = cc_clock_ms() + h->o.close_timeout_ms;
				(void)wslay_event_queue_close(c->ctx, CC_WS_CLOSE_PROTOCOL,
							      (const uint8_t *)"protocol error", 14);
			}
		} else if (rc != 0) {
			c->failed = true;
		}
	}
	if (!c->failed && !c->eof && wslay_event_want_write(c->ctx)) {
		if (wslay_event_send(c->ctx) != 0)
			c->failed = true;
	}
	size_t qb = wslay_event_get_queued_msg_length(c->ctx);
	size_t qm = wslay_event_get_queued_msg_count(c->ctx);
	pthread_mutex_lock(&h->mu);
	c->wslay_bytes = qb;
	c->wslay_msgs = qm;
	pthread_mutex_unlock(&h->mu);
	/* Our close is on the wire: half-close and drain until the peer hangs up. */
	if (!c->failed && !c->eof && wslay_event_get_close_sent(c->ctx) &&
	    !wslay_event_want_write(c->ctx)) {
		if (!c->sent_code)
			c->sent_code = wslay_event_get_status_code_sent(c->ctx);
		shutdown(c->fd, SHUT_WR);
		c->draining = true;
		c->drain_deadline = cc_clock_ms() + h->o.close_timeout_ms;
		pthread_mutex_lock(&h->mu);
		c->closing = true;
		pthread_mutex_unlock(&h->mu);
		do_io(h, c, true);
	}
}

static void finish(struct cc_ws_hub *h, struct ws_conn *c)
{
	epoll_ctl(h->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	int code = CC_WS_CLOSE_ABNORMAL;
	if (wslay_event_get_close_received(c->ctx) &&
	    (!c->sent_code || wslay_event_get_status_code_received(c->ctx) == c->sent_code))
		code = wslay_event_get_status_code_received(c->ctx);
	else if (c->sent_code)
		code = c->sent_code; /* queued, even if a stuck reader never got it */
	else if (wslay_event_get_close_sent(c->ctx))
		code = wslay_event_get_status_code_sent(c->ctx); /* wslay's own: 1002, 1007, 1009 */
	if (code == 0 || code == 1005)
		code = CC_WS_CLOSE_NORMAL;
	pthread_mutex_lock(&h->mu);
	map_remove(h, c);
	c->closing = true;
	/* it may still sit on the dirty list: unlink it */
	for (struct ws_conn **pp = &h->dirty; *pp; pp = &(*pp)->dirty_next)
		if (*pp == c) {
			*pp = c->dirty_next;
			break;
		}
	struct ws_out *list = c->out_head;
	c->out_head = NULL;
	h->open--;
	pthread_mutex_unlock(&h->mu);
	while (list) {
		struct ws_out *o = list;
		list = o->next;
		free(o);
	}
	if (c->all_prev)
		c->all_prev->all_next = c->all_next;
	else
		h->all = c->all_next;
	if (c->all_next)
		c->all_next->all_prev = c->all_prev;
	cc_log_info("ws_closed", CC_LOG_STR("hub", h->name), CC_LOG_INT("id", (long long)c->id),
		    CC_LOG_STR("remote", c->remote), CC_LOG_INT("code", code));
	/* metrics first: whoever hears on_close sees them settled */
	metric_add(h->o.open_gauge, -1);
	metric_add(h->o.closed_counter, 1);
	if (h->o.on_close)
		h->o.on_close(h->o.ctx, c->id, c->user, code);
	c->release(c->release_cls);
	c->dead = true;
	c->grave_next = h->grave;
	h->grave = c;
}

static void bury(struct cc_ws_hub *h)
{
	while (h->grave) {
		struct ws_conn *c = h->grave;
		h->grave = c->grave_next;
		wslay_event_context_free(c->ctx);
		free(c->extra);
		free(c);
	}
}

/* Whether c is over: returns true when it was finished (freed). */
static bool check_done(struct cc_ws_hub *h, struct ws_conn *c, int64_t now)
{
	bool done = c->eof || c->failed;
	if (!done && c->draining && now >= c->drain_deadline)
		done = true;
	if (!done && c->sent_code && !c->draining && now >= c->close_deadline)
		done = true;
	if (!done && !c->draining && !wslay_event_want_read(c->ctx) &&
	    !wslay_event_want_write(c->ctx))
		done = true;
	if (!done && c->pong_deadline && now >= c->pong_deadline && !c->sent_code) {
		cc_log_info("ws_pong_timeout", CC_LOG_STR("hub", h->name),
			    CC_LOG_INT("id", (long long)c->id));
		done = true;
	}
	if (done) {
		finish(h, c);
		return true;
	}
	update_events(h, c);
	return false;
}

static void register_fresh(struct cc_ws_hub *h, struct ws_conn *c)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP, .data.ptr = c };
	c->all_prev = NULL;
	c->all_next = h->all;
	if (h->all)
		h->all->all_prev = c;
	h->all = c;
	if (epoll_ctl(h->epfd, EPOLL_CTL_ADD, c->fd, &ev) != 0) {
		cc_log_error("ws_epoll_add_failed", CC_LOG_STR("hub", h->name),
			     CC_LOG_INT("errno", errno));
		c->failed = true;
	}
	metric_add(h->o.open_gauge, 1);
	cc_log_info("ws_opened", CC_LOG_STR("hub", h->name), CC_LOG_INT("id", (long long)c->id),
		    CC_LOG_STR("remote", c->remote));
	if (!c->failed && h->o.on_open)
		h->o.on_open(h->o.ctx, c->id, c->user);
}

static void *hub_main(void *arg)
{
	struct cc_ws_hub *h = arg;
	struct epoll_event evs[64];
	bool stop_sent = false;
	int64_t stop_deadline = 0;
	for (;;) {
		int n = epoll_wait(h->epfd, evs, 64, (int)h->sweep_ms);
		int64_t now = cc_clock_ms();
		for (int i = 0; i < n; i++) {
			if (evs[i].data.ptr == NULL) {
				uint64_t v;
				ssize_t r = read(h->evfd, &v, sizeof v);
				(void)r;
				continue;
			}
		}
		/* new and dirty connections */
		pthread_mutex_lock(&h->mu);
		struct ws_conn *fresh = h->fresh, *dirty = h->dirty;
		h->fresh = NULL;
		h->dirty = NULL;
		bool stopping = h->stopping;
		pthread_mutex_unlock(&h->mu);
		while (fresh) {
			struct ws_conn *c = fresh;
			fresh = c->fresh_next;
			register_fresh(h, c);
			if (!c->failed)
				do_io(h, c, c->extra_len > 0);
			check_done(h, c, now);
		}
		/* The dirty list was detached under mu. Each stays flagged dirty (so no
		 * sender relinks it) until its successor has been read; only this
		 * thread frees a connection, at the end of the round. */
		while (dirty) {
			struct ws_conn *c = dirty;
			pthread_mutex_lock(&h->mu);
			dirty = c->dirty_next;
			c->dirty = false;
			pthread_mutex_unlock(&h->mu);
			if (c->dead)
				continue;
			take_outbox(h, c);
			do_io(h, c, false);
			check_done(h, c, now);
		}
		for (int i = 0; i < n; i++) {
			struct ws_conn *c = evs[i].data.ptr;
			if (!c || c->dead)
				continue;
			do_io(h, c, (evs[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0);
			check_done(h, c, now);
		}
		/* timers */
		if (stopping && !stop_sent) {
			stop_sent = true;
			stop_deadline = now + h->o.close_timeout_ms + 100;
			for (struct ws_conn *c = h->all; c; c = c->all_next) {
				queue_close(c, CC_WS_CLOSE_GOING_AWAY, "shutdown");
			}
		}
		for (struct ws_conn *c = h->all, *next; c; c = next) {
			next = c->all_next;
			if (!c->sent_code && !c->pong_deadline && now >= c->next_ping) {
				struct wslay_event_msg m = { .opcode = WSLAY_PING, .msg = NULL,
							     .msg_length = 0 };
				if (wslay_event_queue_msg(c->ctx, &m) == 0) {
					c->pong_deadline = now + h->o.pong_timeout_ms;
					c->next_ping = now + h->o.ping_interval_ms;
				}
			}
			if (stop_sent && now >= stop_deadline)
				c->failed = true;
			do_io(h, c, false);
			check_done(h, c, now);
		}
		bury(h);
		if (stop_sent && !h->all) {
			pthread_mutex_lock(&h->mu);
			bool empty = !h->fresh;
			pthread_mutex_unlock(&h->mu);
			if (empty)
				break;
		}
	}
	return NULL;
}

/* ---- public ------------------------------------------------------------------ */

struct cc_ws_hub *cc_ws_hub_start(const struct cc_ws_hub_options *opts)
{
	struct cc_ws_hub *h = calloc(1, sizeof *h);
	if (!h) {
		cc_log_error("ws_hub_start_failed", CC_LOG_STR("reason", "out of memory"));
		return NULL;
	}
	h->o = *opts;
	snprintf(h->name, sizeof h->name, "%s", opts->name ? opts->name : "ws");
	h->o.name = h->name;
#define DEF(f, d) \
	if (!h->o.f) \
	h->o.f = (d)
	DEF(max_connections, CC_WS_DEFAULT_MAX_CONNECTIONS);
	DEF(max_message_bytes, CC_WS_DEFAULT_MAX_MESSAGE);
	DEF(max_backlog_bytes, CC_WS_DEFAULT_MAX_BACKLOG_BYTES);
	DEF(max_backlog_messages, CC_WS_DEFAULT_MAX_BACKLOG_MESSAGES);
	DEF(ping_interval_ms, CC_WS_DEFAULT_PING_INTERVAL_MS);
	DEF(pong_timeout_ms, CC_WS_DEFAULT_PONG_TIMEOUT_MS);
	DEF(close_timeout_ms, CC_WS_DEFAULT_CLOSE_TIMEOUT_MS);
	DEF(rate_messages, CC_WS_DEFAULT_RATE_MESSAGES);
	DEF(rate_window_ms, CC_WS_DEFAULT_RATE_WINDOW_MS);
#undef DEF
	unsigned m = h->o.ping_interval_ms;
	if (h->o.pong_timeout_ms < m)
		m = h->o.pong_timeout_ms;
	if (h->o.close_timeout_ms < m)
		m = h->o.close_timeout_ms;
	h->sweep_ms = m / 4 < 5 ? 5 : (m / 4 > 100 ? 100 : m / 4);
	h->nbuckets = 64;
	while (h->nbuckets < h->o.max_connections)
		h->nbuckets *= 2;
	h->buckets = calloc(h->nbuckets, sizeof *h->buckets);
	h->epfd = epoll_create1(EPOLL_CLOEXEC);
	h->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	h->next_id = 1;
	pthread_mutex_init(&h->mu, NULL);
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	if (!h->buckets || h->epfd < 0 || h->evfd < 0 ||
	    epoll_ctl(h->epfd, EPOLL_CTL_ADD, h->evfd, &ev) != 0 ||
	    pthread_create(&h->thread, NULL, hub_main, h) != 0) {
		cc_log_error("ws_hub_start_failed", CC_LOG_STR("hub", h->name),
			     CC_LOG_INT("errno", errno));
		if (h->epfd >= 0)
			close(h->epfd);
		if (h->evfd >= 0)
			close(h->evfd);
		pthread_mutex_destroy(&h->mu);
		free(h->buckets);
		free(h);
		return NULL;
	}
	return h;
}

void cc_ws_hub_drain(struct cc_ws_hub *h)
{
	if (!h || h->drained)
		return;
	pthread_mutex_lock(&h->mu);
	h->stopping = true;
	pthread_mutex_unlock(&h->mu);
	wake(h);
	pthread_join(h->thread, NULL);
	h->drained = true;
}

void cc_ws_hub_stop(struct cc_ws_hub *h)
{
	if (!h)
		return;
	cc_ws_hub_drain(h);
	close(h->epfd);
	close(h->evfd);
	pthread_mutex_destroy(&h->mu);
	free(h->buckets);
	free(h);
}

static int adopt(struct cc_ws_hub *h, int fd, const char *extra, size_t extra_len,
		 const char *remote, void *user, cc_ws_release release, void *release_cls,
		 uint64_t *id_out)
{
	if (!h || fd < 0 || !release)
		return CC_EINVAL;
	struct ws_conn *c = calloc(1, sizeof *c);
	if (!c)
		return CC_ENOMEM;
	if (extra_len) {
		c->extra = malloc(extra_len);
		if (!c->extra) {
			free(c);
			return CC_ENOMEM;
		}
		memcpy(c->extra, extra, extra_len);
		c->extra_len = extra_len;
	}
	struct wslay_event_callbacks cbs = { .recv_callback = recv_cb,
					     .send_callback = send_cb,
					     .on_frame_recv_start_callback = on_frame_start_cb,
					     .on_msg_recv_callback = on_msg_cb };
	if (wslay_event_context_server_init(&c->ctx, &cbs, c) != 0) {
		free(c->extra);
		free(c);
		return CC_ENOMEM;
	}
	wslay_event_config_set_max_recv_msg_length(c->ctx, h->o.max_message_bytes);
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		wslay_event_context_free(c->ctx);
		free(c->extra);
		free(c);
		return CC_EINVAL;
	}
	c->fd = fd;
	c->hub = h;
	c->user = user;
	c->release = release;
	c->release_cls = release_cls;
	snprintf(c->remote, sizeof c->remote, "%s", remote ? remote : "");
	int64_t now = cc_clock_ms();
	c->rate_at = now;
	c->rate_tokens = h->o.rate_messages;
	c->next_ping = now + h->o.ping_interval_ms;
	pthread_mutex_lock(&h->mu);
	if (h->stopping || h->open >= h->o.max_connections) {
		pthread_mutex_unlock(&h->mu);
		wslay_event_context_free(c->ctx);
		free(c->extra);
		free(c);
		return CC_EUNAVAILABLE;
	}
	c->id = h->next_id++;
	h->open++;
	c->map_next = h->buckets[c->id & (h->nbuckets - 1)];
	h->buckets[c->id & (h->nbuckets - 1)] = c;
	c->fresh_next = h->fresh;
	h->fresh = c;
	if (id_out)
		*id_out = c->id;
	pthread_mutex_unlock(&h->mu);
	wake(h);
	return 0;
}

int cc_ws_hub_adopt(struct cc_ws_hub *h, int fd, const char *extra, size_t extra_len,
		    const char *remote, void *user, cc_ws_release release, void *release_cls,
		    uint64_t *id_out)
{
	int rc = adopt(h, fd, extra, extra_len, remote, user, release, release_cls, id_out);
	if (rc != 0 && h && h->o.on_close)
		h->o.on_close(h->o.ctx, 0, user, CC_WS_CLOSE_TRY_LATER);
	return rc;
}

void cc_ws_hub_abandon(struct cc_ws_hub *h, void *user)
{
	if (h && h->o.on_close)
		h->o.on_close(h->o.ctx, 0, user, CC_WS_CLOSE_ABNORMAL);
}

int cc_ws_send_text(struct cc_ws_hub *h, uint64_t id, const char *msg, size_t len)
{
	return cc_ws_send_text_since(h, id, msg, len, 0);
}

int cc_ws_send_text_since(struct cc_ws_hub *h, uint64_t id, const char *msg, size_t len, int64_t since_ns)
{
	struct ws_out *o = malloc(sizeof *o + (len ? len : 1));
	if (!o)
		return CC_ENOMEM;
	o->next = NULL;
	o->since_ns = since_ns;
	o->len = len;
	if (len)
		memcpy(o->data, msg, len);
	pthread_mutex_lock(&h->mu);
	struct ws_conn *c = map_find(h, id);
	if (!c || c->closing || c->slow) {
		pthread_mutex_unlock(&h->mu);
		free(o);
		return CC_ENOTFOUND;
	}
	bool w;
	if (c->out_bytes + c->wslay_bytes + len > h->o.max_backlog_bytes ||
	    c->out_msgs + c->wslay_msgs + 1 > h->o.max_backlog_messages) {
		c->slow = true;
		c->closing = true;
		w = mark_dirty(h, c);
		pthread_mutex_unlock(&h->mu);
		free(o);
		if (w)
			wake(h);
		return CC_ETOOBIG;
	}
	if (c->out_tail)
		c->out_tail->next = o;
	else
		c->out_head = o;
	c->out_tail = o;
	c->out_bytes += len;
	c->out_msgs++;
	w = mark_dirty(h, c);
	pthread_mutex_unlock(&h->mu);
	if (w)
		wake(h);
	return 0;
}

int cc_ws_close(struct cc_ws_hub *h, uint64_t id, int code, const char *reason)
{
	if (code < 1000 || code > 4999 || code == 1005 || code == 1006 || code == 1015 ||
	    (code > 1015 && code < 3000))
		return CC_EINVAL;
	pthread_mutex_lock(&h->mu);
	struct ws_conn *c = map_find(h, id);
	if (!c || c->closing) {
		pthread_mutex_unlock(&h->mu);
		return CC_ENOTFOUND;
	}
	c->closing = true;
	c->close_code = code;
	snprintf(c->close_reason, sizeof c->close_reason, "%s", reason ? reason : "");
	bool w = mark_dirty(h, c);
	pthread_mutex_unlock(&h->mu);
	if (w)
		wake(h);
	return 0;
}

unsigned cc_ws_hub_open_count(struct cc_ws_hub *h)
{
	pthread_mutex_lock(&h->mu);
	unsigned n = h->open;
	pthread_mutex_unlock(&h->mu);
	return n;
}
