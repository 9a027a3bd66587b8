/*
 * http_front.c - accept loop, connection caps, head check and deadlines in
 * front of libmicrohttpd (see http_front.h for the why).
 *
 * State: one mutex guards the address table, the counts and the list of
 * handed connections; the pending and lingering sockets belong to the
 * front's thread alone.
 */
#include "sys/http_front.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <sys/ioctl.h>
#include <linux/sockios.h>
#include <linux/tcp.h>

#include <sodium.h>

#include "sys/charset.h"
#include "sys/clock.h"
#include "sys/log.h"
#include "sys/metrics.h"
#include "sys/banned.h"

#define ADDR_KEY 16 /* IPv6 bytes; IPv4 mapped into ::ffff:0:0/96 */

/* Connections (pending or handed) from one address. */
struct addr_slot {
	unsigned char key[ADDR_KEY];
	unsigned n; /* 0 = slot free */
};

/* A socket the front still owns. */
struct pending {
	int fd;
	struct sockaddr_storage addr;
	socklen_t addr_len;
	unsigned char key[ADDR_KEY];
	int64_t deadline_ns; /* head deadline, or the end of lingering */
	size_t peeked;	     /* bytes seen by the last peek */
	bool lingering;	     /* refused: draining until EOF or the deadline */
};

/* A socket the library serves. */
struct cc_http_front_conn {
	struct cc_http_front_conn *prev, *next;
	int fd;
	unsigned char key[ADDR_KEY];
	int64_t deadline_ns; /* 0 = none */
	enum cc_http_conn_phase phase;
	bool cut; /* a deadline shut it down */
	bool released; /* its address slot is already freed (conn_done) */
	bool pre;      /* registered by the front at handoff, not yet opened by the library */
	bool gated;    /* a checked head waits for the library */
	bool counted;  /* expect is exact: every head so far had a known body length */
	bool lowat_raised; /* cc_http_front_conn_next_head left SO_RCVLOWAT above 1 */
	uint64_t expect; /* bytes of the checked heads and declared bodies so far */
	/* the connection's thread only (cc_http_front_conn_next_head): */
	char *peek;
};

struct cc_http_front {
	struct cc_http_front_options o;
	char name[32];
	pthread_t thread;
	bool thread_started;
	int wake[2]; /* stop: a byte on wake[1] */
	pthread_mutex_t lock;
	/* under lock: */
	struct addr_slot *addrs; /* o.max_connections slots */
	unsigned n_total;	 /* pending (not lingering) + handed */
	struct cc_http_front_conn *conns;
	/* front thread only: */
	struct pending *pend; /* o.max_connections + CC_HTTP_FRONT_MAX_LINGERING */
	size_t n_pend, cap_pend, n_lingering;
	struct pollfd *pfds;
	char *peek; /* o.head.max_head_bytes + 1 */
	struct cc_metric *cut_metric;
};

/* ---- the head check (pure) ----------------------------------------------- */

static bool tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

static void refuse_head(struct cc_http_head_verdict *v, int status, const char *code,
			const char *message)
{
	v->status = status;
	v->code = code;
	v->message = message;
}

/* Judges the request line line[0..n) (no line end). */
static void check_request_line(const char *line, size_t n, struct cc_http_head_verdict *v)
{
	size_t m = 0, t, ver;

	while (m < n && tchar((unsigned char)line[m]))
		m++;
	if (m == 0 || m >= sizeof(v->method) || m == n || line[m] != ' ')
		return refuse_head(v, 400, "malformed_request", "the request line is not METHOD target HTTP/1.1");
	memcpy(v->method, line, m);
	v->method[m] = '\0';
	t = m + 1;
	/* Any byte but SP, CR, LF and NUL: the path check after us names the rest invalid_path. */
	while (t < n && line[t] != ' ' && line[t] != '\0')
		t++;
	if (t == m + 1 || t == n || line[t] != ' ')
		return refuse_head(v, 400, "malformed_request", "the request line is not METHOD target HTTP/1.1");
	ver = t + 1;
	if (n - ver == 8 && (memcmp(line + ver, "HTTP/1.1", 8) == 0 || memcmp(line + ver, "HTTP/1.0", 8) == 0))
		return;
	if (n - ver >= 6 && memcmp(line + ver, "HTTP/", 5) == 0)
		return refuse_head(v, 505, "http_version_not_supported",
				   "only HTTP/1.0 and HTTP/1.1 are served (no HTTP/2 preface)");
	refuse_head(v, 400, "malformed_request", "the request line is not METHOD target HTTP/1.1");
}

/* What one head's headers have shown so far. */
struct head_seen {
	unsigned lines;
	unsigned content_length; /* occurrences */
	bool transfer_encoding;
	uint64_t declared;	 /* the Content-Length's value */
};

static bool name_is(const char *name, size_t n, const char *want)
{
	return strlen(want) == n && strncasecmp(name, want, n) == 0;
}

/* Judges one header line line[0..n) (no line end). */
static void check_header_line(const char *line, size_t n, const struct cc_http_head_limits *lim,
			      struct head_seen *seen, struct cc_http_head_verdict *v)
{
	const char *colon = memchr(line, ':', n);
	size_t name_len, vs, ve;

	if (++seen->lines > lim->max_headers)
		return refuse_head(v, 431, "headers_too_large", "too many header lines");
	if (line[0] == ' ' || line[0] == '\t')
		return refuse_head(v, 400, "malformed_request", "a folded header line (obsolete line folding)");
	if (!colon)
		return refuse_head(v, 400, "malformed_request", "a header line without a colon");
	name_len = (size_t)(colon - line);
	for (size_t i = 0; i < name_len; i++)
		if (!tchar((unsigned char)line[i]))
			return refuse_head(v, 400, "malformed_request", "a header name that is not a token");
	if (name_len == 0)
		return refuse_head(v, 400, "malformed_request", "an empty header name");
	for (size_t i = name_len + 1; i < n; i++) {
		unsigned char c = (unsigned char)line[i];
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return refuse_head(v, 400, "malformed_request", "a control byte in a header value");
	}
	vs = name_len + 1;
	while (vs < n && (line[vs] == ' ' || line[vs] == '\t'))
		vs++;
	ve = n;
	while (ve > vs && (line[ve - 1] == ' ' || line[ve - 1] == '\t'))
		ve--;
	if (name_is(line, name_len, "Content-Length")) {
		uint64_t declared = 0;
		if (++seen->content_length > 1)
			return refuse_head(v, 400, "malformed_request", "Content-Length given twice");
		if (ve == vs)
			return refuse_head(v, 400, "malformed_request", "Content-Length is not a number");
		for (size_t i = vs; i < ve; i++) {
			if (line[i] < '0' || line[i] > '9')
				return refuse_head(v, 400, "malformed_request",
						   "Content-Length is not a non-negative decimal number");
			if (declared <= lim->max_body)
				declared = declared * 10 + (uint64_t)(line[i] - '0');
		}
		if (declared > lim->max_body)
			return refuse_head(v, 413, "body_too_large", "the request body is too large");
		seen->declared = declared;
	} else if (name_is(line, name_len, "Transfer-Encoding")) {
		seen->transfer_encoding = true;
	} else if (name_is(line, name_len, "X-Request-Id") && ve - vs <= CC_HTTP_FRONT_REQUEST_ID_MAX) {
		char id[CC_HTTP_FRONT_REQUEST_ID_MAX + 1];
		memcpy(id, line + vs, ve - vs);
		id[ve - vs] = '\0';
		if (cc_charset_valid(id, CC_HTTP_FRONT_REQUEST_ID_MAX, CC_CHARSET_ALNUM, "._-"))
			memcpy(v->request_id, id, ve - vs + 1);
	}
	if (seen->transfer_encoding && seen->content_length)
		refuse_head(v, 400, "malformed_request", "both Content-Length and Transfer-Encoding");
}

void cc_http_head_check(const char *buf, size_t len, const struct cc_http_head_limits *lim,
			struct cc_http_head_verdict *v)
{
	struct head_seen seen = { 0, 0, false, 0 };
	size_t pos = 0;
	bool first = true;

	memset(v, 0, sizeof(*v));
	if (len > lim->max_head_bytes)
		len = lim->max_head_bytes; /* what lies beyond is over the cap anyway */
	for (;;) {
		const char *lf = memchr(buf + pos, '\n', len - pos);
		size_t n;
		if (!lf) {
			if (len >= lim->max_head_bytes)
				refuse_head(v, 431, "headers_too_large", "the request line and headers are too large");
			return; /* incomplete */
		}
		n = (size_t)(lf - (buf + pos));
		if (n > 0 && buf[pos + n - 1] == '\r')
			n--;
		if (memchr(buf + pos, '\r', n))
			return refuse_head(v, 400, "malformed_request", "a bare CR inside a line");
		if (first && n == 0 && pos == 0) {
			/* RFC 9112 2.2: ignore at least one empty line before the request line. */
			pos = (size_t)(lf - buf) + 1;
			continue;
		}
		if (first)
			check_request_line(buf + pos, n, v);
		else if (n == 0) {
			v->status = 200;
			v->head_len = (size_t)(lf - buf) + 1;
			v->content_length = seen.declared;
			v->chunked = seen.transfer_encoding;
			return;
		} else
			check_header_line(buf + pos, n, lim, &seen, v);
		if (v->status)
			return;
		first = false;
		pos = (size_t)(lf - buf) + 1;
	}
}

/* ---- addresses --------------------------------------------------------- */

static void addr_key(const struct sockaddr *sa, unsigned char key[ADDR_KEY])
{
	memset(key, 0, ADDR_KEY);
	if (sa && sa->sa_family == AF_INET) {
		key[10] = key[11] = 0xff;
		memcpy(key + 12, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
	} else if (sa && sa->sa_family == AF_INET6) {
		memcpy(key, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, ADDR_KEY);
	}
}

static void key_text(const unsigned char key[ADDR_KEY], char *out, size_t cap)
{
	static const unsigned char mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	if (memcmp(key, mapped, 12) == 0)
		inet_ntop(AF_INET, key + 12, out, (socklen_t)cap);
	else
		inet_ntop(AF_INET6, key, out, (socklen_t)cap);
}

/* The address's slot, or a free one, or NULL (only when every slot is busy). Under lock. */
static struct addr_slot *addr_find(struct cc_http_front *f, const unsigned char key[ADDR_KEY], bool make)
{
	struct addr_slot *free_slot = NULL;
	for (unsigned i = 0; i < f->o.max_connections; i++) {
		struct addr_slot *s = &f->addrs[i];
		if (s->n && memcmp(s->key, key, ADDR_KEY) == 0)
			return s;
		if (!s->n && !free_slot)
			free_slot = s;
	}
	if (make && free_slot)
		memcpy(free_slot->key, key, ADDR_KEY);
	return make ? free_slot : NULL;
}

/* One connection from key ends. Under lock. */
static void addr_release(struct cc_http_front *f, const unsigned char key[ADDR_KEY])
{
	struct addr_slot *s = addr_find(f, key, false);
	if (s && s->n)
		s->n--;
	if (f->n_total)
		f->n_total--;
}

/* ---- registrations ------------------------------------------------------- */

static int64_t phase_deadline(const struct cc_http_front *f, enum cc_http_conn_phase phase);

/* Under lock. */
static void conn_link(struct cc_http_front *f, struct cc_http_front_conn *c)
{
	c->prev = NULL;
	c->next = f->conns;
	if (f->conns)
		f->conns->prev = c;
	f->conns = c;
}

/* Under lock. */
static void conn_unlink(struct cc_http_front *f, struct cc_http_front_conn *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		f->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
}

/* ---- answering refusals -------------------------------------------------- */

static const char *reason_phrase(int status)
{
	switch (status) {
	case 400: return "Bad Request";
	case 408: return "Request Timeout";
	case 413: return "Content Too Large";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 503: return "Service Unavailable";
	case 505: return "HTTP Version Not Supported";
	}
	return "Error";
}

/*
 * Writes a whole SPEC-shaped error answer on fd without blocking (it fits
 * the socket buffer: a few hundred bytes), logs it and counts it. The
 * message is one of our static texts: no escaping needed.
 */
static void send_refusal(struct cc_http_front *f, int fd, const unsigned char key[ADDR_KEY], int status,
			 const char *code, const char *message, const char *method, const char *given_id,
			 unsigned retry_after)
{
	char id[CC_HTTP_FRONT_REQUEST_ID_MAX + 1], body[512], head[768], remote[INET6_ADDRSTRLEN], st[8];
	unsigned char rnd[16];
	bool retryable = status == 408 || status == 429 || status == 503;
	int blen, hlen;
	ssize_t sent;

	if (given_id && *given_id) {
		snprintf(id, sizeof(id), "%s", given_id);
	} else {
		randombytes_buf(rnd, sizeof(rnd));
		sodium_bin2hex(id, sizeof(id), rnd, sizeof(rnd));
	}
	if (retry_after)
		blen = snprintf(body, sizeof(body),
				"{\"error\":{\"code\":\"%s\",\"message\":\"%s\",\"retryable\":true,"
				"\"retry_after_seconds\":%u}}",
				code, message, retry_after);
	else
		blen = snprintf(body, sizeof(body), "{\"error\":{\"code\":\"%s\",\"message\":\"%s\",\"retryable\":%s}}",
				code, message, retryable ? "true" : "false");
	hlen = snprintf(head, sizeof(head),
			"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nCache-Control: no-store\r\n"
			"X-Request-Id: %s\r\nConnection: close\r\nContent-Length: %d\r\n",
			status, reason_phrase(status), id, blen);
	if (retry_after)
		hlen += snprintf(head + hlen, sizeof(head) - (size_t)hlen, "Retry-After: %u\r\n", retry_after);
	hlen += snprintf(head + hlen, sizeof(head) - (size_t)hlen, "\r\n");
	{
		char all[1280];
		size_t n = (size_t)hlen + (size_t)blen;
		memcpy(all, head, (size_t)hlen);
		memcpy(all + hlen, body, (size_t)blen);
		sent = send(fd, all, n, MSG_NOSIGNAL | MSG_DONTWAIT);
	}
	key_text(key, remote, sizeof(remote));
	snprintf(st, sizeof(st), "%d", status);
	cc_log_info("http_request", CC_LOG_STR("server", f->name), CC_LOG_STR("method", method ? method : ""),
		    CC_LOG_STR("route", "refused"), CC_LOG_INT("status", status), CC_LOG_STR("code", code),
		    CC_LOG_STR("request_id", id), CC_LOG_STR("remote", remote),
		    CC_LOG_BOOL("delivered", sent == (ssize_t)hlen + blen));
	if (f->o.requests)
		cc_metric_add(f->o.requests, (const char *const[]){ "refused", "OTHER", st }, 1);
}

/* ---- the front's thread ---------------------------------------------------- */

static void set_rcvlowat(int fd, int bytes)
{
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &bytes, sizeof(bytes));
}

/* Removes pending i (swapping the last into its place). */
static void pend_remove(struct cc_http_front *f, size_t i)
{
	if (f->pend[i].lingering && f->n_lingering)
		f->n_lingering--;
	f->pend[i] = f->pend[--f->n_pend];
}

/*
 * Turns pending i into a lingering refusal: its slot is freed now, its
 * socket drained until EOF or CC_HTTP_FRONT_LINGER_MS; beyond
 * CC_HTTP_FRONT_MAX_LINGERING it is closed at once.
 */
static void pend_linger(struct cc_http_front *f, size_t i)
{
	struct pending *p = &f->pend[i];
	pthread_mutex_lock(&f->lock);
	addr_release(f, p->key);
	pthread_mutex_unlock(&f->lock);
	(void)shutdown(p->fd, SHUT_WR);
	if (f->n_lingering >= CC_HTTP_FRONT_MAX_LINGERING) {
		close(p->fd);
		pend_remove(f, i);
		return;
	}
	set_rcvlowat(p->fd, 1);
	p->lingering = true;
	p->deadline_ns = cc_clock_ns() + (int64_t)CC_HTTP_FRONT_LINGER_MS * 1000000;
	f->n_lingering++;
}

static void count_cut(struct cc_http_front *f, const char *reason)
{
	cc_metric_add(f->cut_metric, (const char *const[]){ reason }, 1);
}

/* A new connection: refused at once, or pending. */
static void admit(struct cc_http_front *f, int fd, const struct sockaddr_storage *ss, socklen_t len)
{
	unsigned char key[ADDR_KEY];
	struct addr_slot *slot;
	int status = 0;

	addr_key((const struct sockaddr *)ss, key);
	pthread_mutex_lock(&f->lock);
	slot = addr_find(f, key, true);
	if (f->n_total >= f->o.max_connections || !slot || f->n_pend >= f->cap_pend)
		status = 503;
	else if (slot->n >= f->o.max_per_address)
		status = 429;
	else {
		slot->n++;
		f->n_total++;
	}
	pthread_mutex_unlock(&f->lock);
	if (status) {
		/* Counted as pending for a moment only so pend_linger() can release it alike. */
		if (f->n_pend >= f->cap_pend || f->n_lingering >= CC_HTTP_FRONT_MAX_LINGERING) {
			close(fd);
			count_cut(f, status == 429 ? "per_address" : "total");
			return;
		}
		if (status == 429)
			send_refusal(f, fd, key, 429, "too_many_connections",
				     "too many connections from this address; close some and retry", NULL, NULL, 1);
		else
			send_refusal(f, fd, key, 503, "server_busy", "the server is at its connection limit; retry shortly",
				     NULL, NULL, 0);
		count_cut(f, status == 429 ? "per_address" : "total");
		(void)shutdown(fd, SHUT_WR);
		struct pending *p = &f->pend[f->n_pend++];
		memset(p, 0, sizeof(*p));
		p->fd = fd;
		p->lingering = true;
		p->deadline_ns = cc_clock_ns() + (int64_t)CC_HTTP_FRONT_LINGER_MS * 1000000;
		f->n_lingering++;
		return;
	}
	struct pending *p = &f->pend[f->n_pend++];
	memset(p, 0, sizeof(*p));
	p->fd = fd;
	p->addr = *ss;
	p->addr_len = len;
	memcpy(p->key, key, ADDR_KEY);
	p->deadline_ns = cc_clock_ns() + (int64_t)f->o.header_timeout_ms * 1000000;
}

static void accept_all(struct cc_http_front *f)
{
	for (int i = 0; i < 64; i++) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		int fd = accept4(f->o.listen_fd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
				cc_log_warn("http_accept_failed", CC_LOG_STR("server", f->name),
					    CC_LOG_STR("error", strerror(errno)));
			return;
		}
		admit(f, fd, &ss, len);
	}
}

/*
 * Pending i is readable (or hung up): drain a lingering one, judge a head.
 * hung_up: the client shut its sending side (POLLRDHUP/POLLHUP): what it
 * sent is all there will be, and poll keeps reporting it, so an incomplete
 * head is given up now rather than peeked again and again.
 */
static void on_readable(struct cc_http_front *f, size_t i, bool hung_up)
{
	struct pending *p = &f->pend[i];
	struct cc_http_head_verdict v;
	ssize_t n;

	if (p->lingering) {
		char sink[4096];
		n = recv(p->fd, sink, sizeof(sink), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
			close(p->fd);
			pend_remove(f, i);
		}
		return;
	}
	n = recv(p->fd, f->peek, f->o.head.max_head_bytes + 1, MSG_PEEK | MSG_DONTWAIT);
	if (n <= 0) {
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return;
		/* Gone before a whole head: nothing to answer. */
		pthread_mutex_lock(&f->lock);
		addr_release(f, p->key);
		pthread_mutex_unlock(&f->lock);
		close(p->fd);
		pend_remove(f, i);
		return;
	}
	cc_http_head_check(f->peek, (size_t)n, &f->o.head, &v);
	if (v.status == 0 && hung_up) {
		pthread_mutex_lock(&f->lock);
		addr_release(f, p->key);
		pthread_mutex_unlock(&f->lock);
		close(p->fd);
		pend_remove(f, i);
		return;
	}
	if (v.status == 0) {
		/* Wake again only when more than what we have seen has arrived. */
		p->peeked = (size_t)n;
		set_rcvlowat(p->fd, (int)n + 1);
		return;
	}
	if (v.status != 200) {
		send_refusal(f, p->fd, p->key, v.status, v.code, v.message, v.method, v.request_id, 0);
		count_cut(f, "malformed");
		pend_linger(f, i);
		return;
	}
	set_rcvlowat(p->fd, 1);
	{
		int fd = p->fd;
		struct sockaddr_storage ss = p->addr;
		socklen_t len = p->addr_len;
		unsigned char key[ADDR_KEY];
		/* Registered now, with what its checked head occupies; the library's
		 * "started" callback (cc_http_front_conn_open) finds it by fd. */
		struct cc_http_front_conn *c = calloc(1, sizeof(*c));
		memcpy(key, p->key, ADDR_KEY);
		pend_remove(f, i);
		if (c) {
			c->fd = fd;
			memcpy(c->key, key, ADDR_KEY);
			c->phase = CC_HTTP_PHASE_HEAD;
			c->deadline_ns = phase_deadline(f, CC_HTTP_PHASE_HEAD);
			c->pre = c->gated = true;
			c->counted = !v.chunked;
			c->expect = (uint64_t)v.head_len + v.content_length;
			pthread_mutex_lock(&f->lock);
			conn_link(f, c);
			pthread_mutex_unlock(&f->lock);
		}
		/* The slot stays taken: the library's "closed" callback releases it. */
		if (!f->o.handoff(f->o.handoff_cls, fd, (const struct sockaddr *)&ss, len)) {
			bool linked = false;
			pthread_mutex_lock(&f->lock);
			for (struct cc_http_front_conn *x = f->conns; c && x; x = x->next)
				linked |= x == c;
			if (linked || !c) /* else the library opened and closed it, releasing the slot */
				addr_release(f, key);
			if (linked)
				conn_unlink(f, c);
			pthread_mutex_unlock(&f->lock);
			if (linked)
				free(c);
		}
	}
}

/* Deadlines of pending sockets; returns the nearest one still ahead (or limit). */
static int64_t pending_deadlines(struct cc_http_front *f, int64_t now, int64_t limit)
{
	for (size_t i = 0; i < f->n_pend;) {
		struct pending *p = &f->pend[i];
		if (p->deadline_ns > now) {
			if (p->deadline_ns < limit)
				limit = p->deadline_ns;
			i++;
			continue;
		}
		if (p->lingering) {
			close(p->fd);
			pend_remove(f, i);
			continue;
		}
		send_refusal(f, p->fd, p->key, 408, "request_timeout",
			     "the request head did not arrive within the header deadline", NULL, NULL, 0);
		count_cut(f, "header_deadline");
		pend_linger(f, i);
		/* pend_linger kept it at i with a later deadline: look at it again next round */
		i++;
	}
	return limit;
}

/* Handed connections past their deadline: 408 and shut down (the library then closes). */
static void sweep_handed(struct cc_http_front *f, int64_t now)
{
	pthread_mutex_lock(&f->lock);
	for (struct cc_http_front_conn *c = f->conns; c; c = c->next) {
		if (!c->deadline_ns || c->deadline_ns > now)
			continue;
		const char *phase = c->phase == CC_HTTP_PHASE_BODY ? "body_deadline" : "header_deadline";
		c->deadline_ns = 0;
		c->cut = true;
		if (c->phase == CC_HTTP_PHASE_ANSWERED) {
			(void)shutdown(c->fd, SHUT_RDWR);
			count_cut(f, "answer_deadline");
			continue;
		}
		/* The library is reading, not writing, in these phases: our answer cannot interleave. */
		send_refusal(f, c->fd, c->key, 408, "request_timeout",
			     c->phase == CC_HTTP_PHASE_BODY ? "the request body did not arrive within the body deadline"
							    : "the request head did not arrive within the header deadline",
			     NULL, NULL, 0);
		(void)shutdown(c->fd, SHUT_RDWR);
		count_cut(f, phase);
	}
	pthread_mutex_unlock(&f->lock);
}

static void *front_main(void *arg)
{
	struct cc_http_front *f = arg;
	int64_t next_sweep = cc_clock_ns();

	for (;;) {
		int64_t now = cc_clock_ns(), wake_at;
		size_t n = 0;
		int timeout_ms, rc;

		if (now >= next_sweep) {
			sweep_handed(f, now);
			next_sweep = now + (int64_t)CC_HTTP_FRONT_SWEEP_MS * 1000000;
		}
		wake_at = pending_deadlines(f, now, next_sweep);
		f->pfds[n++] = (struct pollfd){ .fd = f->wake[0], .events = POLLIN };
		f->pfds[n++] = (struct pollfd){ .fd = f->o.listen_fd, .events = POLLIN };
		for (size_t i = 0; i < f->n_pend; i++)
			f->pfds[n++] = (struct pollfd){ .fd = f->pend[i].fd, .events = POLLIN | POLLRDHUP };
		timeout_ms = (int)((wake_at - now + 999999) / 1000000);
		rc = poll(f->pfds, (nfds_t)n, timeout_ms < 0 ? 0 : timeout_ms);
		if (rc < 0 && errno != EINTR) {
			cc_log_error("http_front_poll_failed", CC_LOG_STR("server", f->name),
				     CC_LOG_STR("error", strerror(errno)));
			sleep(1);
			continue;
		}
		if (rc <= 0)
			continue;
		if (f->pfds[0].revents)
			return NULL;
		/*
		 * Pending sockets first, walking backwards: pend_remove() swaps the
		 * last entry in, which this walk has already visited.
		 */
		for (size_t i = n - 2; i-- > 0;)
			if (f->pfds[i + 2].revents && i < f->n_pend && f->pend[i].fd == f->pfds[i + 2].fd)
				on_readable(f, i, f->pfds[i + 2].revents & (POLLRDHUP | POLLHUP | POLLERR));
		if (f->pfds[1].revents)
			accept_all(f);
	}
}

/* ---- public ---------------------------------------------------------------- */

struct cc_http_front *cc_http_front_start(const struct cc_http_front_options *opts)
{
	static const char *const cut_labels[] = { "reason", NULL };
	struct cc_http_front *f = calloc(1, sizeof(*f));
	const char *why = "out of memory";

	if (!f)
		goto out_fail;
	f->o = *opts;
	f->wake[0] = f->wake[1] = -1;
	snprintf(f->name, sizeof(f->name), "%s", opts->name ? opts->name : "http");
	if (!opts->max_connections || !opts->max_per_address || !opts->header_timeout_ms ||
	    !opts->body_timeout_ms || !opts->handoff || opts->head.max_head_bytes < 64 ||
	    opts->head.max_head_bytes > (1u << 24) || !opts->head.max_headers) {
		why = "bad options";
		goto out_fail;
	}
	f->cap_pend = opts->max_connections + CC_HTTP_FRONT_MAX_LINGERING;
	f->addrs = calloc(opts->max_connections, sizeof(*f->addrs));
	f->pend = calloc(f->cap_pend, sizeof(*f->pend));
	f->pfds = calloc(f->cap_pend + 2, sizeof(*f->pfds));
	f->peek = malloc(opts->head.max_head_bytes + 1);
	if (!f->addrs || !f->pend || !f->pfds || !f->peek)
		goto out_fail;
	f->cut_metric = cc_counter("cosmic_clash_http_connections_cut_total",
				   "Connections refused or cut by the HTTP front: per_address, total, malformed, "
				   "header_deadline, body_deadline, answer_deadline, idle_kept (a kept connection idle past the "
				   "header deadline), pipelined.",
				   cut_labels, 16);
	if (pipe2(f->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
		why = "pipe failed";
		goto out_fail;
	}
	pthread_mutex_init(&f->lock, NULL);
	if (fcntl(opts->listen_fd, F_SETFL, fcntl(opts->listen_fd, F_GETFL) | O_NONBLOCK) != 0 ||
	    pthread_create(&f->thread, NULL, front_main, f) != 0) {
		pthread_mutex_destroy(&f->lock);
		why = "could not start the front thread";
		goto out_fail;
	}
	f->thread_started = true;
	return f;

out_fail:
	cc_log_error("http_front_start_failed", CC_LOG_STR("server", opts && opts->name ? opts->name : "http"),
		     CC_LOG_STR("reason", why));
	if (opts && opts->listen_fd >= 0)
		close(opts->listen_fd);
	if (f) {
		if (f->wake[0] >= 0) {
			close(f->wake[0]);
			close(f->wake[1]);
		}
		free(f->addrs);
		free(f->pend);
		free(f->pfds);
		free(f->peek);
		free(f);
	}
	return NULL;
}

void cc_http_front_stop(struct cc_http_front *f)
{
	if (!f || !f->thread_started)
		return;
	(void)!write(f->wake[1], "x", 1);
	pthread_join(f->thread, NULL);
	f->thread_started = false;
	for (size_t i = 0; i < f->n_pend; i++)
		close(f->pend[i].fd);
	f->n_pend = 0;
	close(f->o.listen_fd);
	/* wake[] stays open (and readable) until the free: kept connections waiting
	 * in cc_http_front_conn_next_head see the stop there. */
}

void cc_http_front_free(struct cc_http_front *f)
{
	if (!f)
		return;
	cc_http_front_stop(f);
	if (f->wake[0] >= 0) {
		close(f->wake[0]);
		close(f->wake[1]);
	}
	while (f->conns) {
		struct cc_http_front_conn *c = f->conns;
		f->conns = c->next;
		free(c->peek);
		free(c);
	}
	pthread_mutex_destroy(&f->lock);
	free(f->addrs);
	free(f->pend);
	free(f->pfds);
	free(f->peek);
	free(f);
}

static int64_t phase_deadline(const struct cc_http_front *f, enum cc_http_conn_phase phase)
{
	int64_t now = cc_clock_ns();
	switch (phase) {
	case CC_HTTP_PHASE_HEAD:
	case CC_HTTP_PHASE_ANSWERED:
		return now + (int64_t)f->o.header_timeout_ms * 1000000;
	case CC_HTTP_PHASE_BODY:
		return now + (int64_t)f->o.body_timeout_ms * 1000000;
	case CC_HTTP_PHASE_HANDLER:
	case CC_HTTP_PHASE_UPGRADED:
	case CC_HTTP_PHASE_KEPT:
		break;
	}
	return 0;
}

struct cc_http_front_conn *cc_http_front_conn_open(struct cc_http_front *f, int fd, const struct sockaddr *addr)
{
	struct cc_http_front_conn *c;

	if (!f)
		return NULL;
	pthread_mutex_lock(&f->lock);
	for (c = f->conns; c; c = c->next)
		if (c->pre && c->fd == fd)
			break;
	if (c)
		c->pre = false;
	pthread_mutex_unlock(&f->lock);
	if (c)
		return c;
	/* Not handed by us (or we were out of memory then): served, but closed after one answer. */
	c = calloc(1, sizeof(*c));
	if (!c) {
		cc_log_warn("http_front_conn_untracked", CC_LOG_STR("server", f->name),
			    CC_LOG_STR("reason", "out of memory"));
		return NULL;
	}
	c->fd = fd;
	addr_key(addr, c->key);
	c->phase = CC_HTTP_PHASE_HEAD;
	c->deadline_ns = phase_deadline(f, CC_HTTP_PHASE_HEAD);
	c->gated = true;
	pthread_mutex_lock(&f->lock);
	conn_link(f, c);
	pthread_mutex_unlock(&f->lock);
	return c;
}

void cc_http_front_conn_phase(struct cc_http_front *f, struct cc_http_front_conn *c, enum cc_http_conn_phase phase)
{
	if (!f || !c)
		return;
	pthread_mutex_lock(&f->lock);
	if (!c->cut) {
		c->phase = phase;
		c->deadline_ns = phase_deadline(f, phase);
	}
	pthread_mutex_unlock(&f->lock);
}

bool cc_http_front_conn_was_cut(struct cc_http_front *f, struct cc_http_front_conn *c)
{
	bool cut;
	if (!f || !c)
		return false;
	pthread_mutex_lock(&f->lock);
	cut = c->cut;
	pthread_mutex_unlock(&f->lock);
	return cut;
}

void cc_http_front_conn_done(struct cc_http_front *f, struct cc_http_front_conn *c)
{
	if (!f || !c)
		return;
	pthread_mutex_lock(&f->lock);
	if (!c->released)
		addr_release(f, c->key);
	c->released = true;
	pthread_mutex_unlock(&f->lock);
}

void cc_http_front_conn_close(struct cc_http_front *f, struct cc_http_front_conn *c)
{
	if (!f || !c)
		return;
	pthread_mutex_lock(&f->lock);
	conn_unlink(f, c);
	if (!c->released)
		addr_release(f, c->key);
	pthread_mutex_unlock(&f->lock);
	free(c->peek);
	free(c);
}

/* ---- keep-alive ------------------------------------------------------------ */

bool cc_http_front_conn_reusable(struct cc_http_front *f, struct cc_http_front_conn *c)
{
	bool ok;
	if (!f || !c)
		return false;
	pthread_mutex_lock(&f->lock);
	ok = c->counted && !c->cut;
	pthread_mutex_unlock(&f->lock);
	return ok;
}

bool cc_http_front_conn_take_gate(struct cc_http_front *f, struct cc_http_front_conn *c)
{
	bool gated;
	if (!f || !c)
		return true;
	pthread_mutex_lock(&f->lock);
	gated = c->gated;
	c->gated = false;
	pthread_mutex_unlock(&f->lock);
	return gated;
}

/*
 * Bytes the library has read from fd: received in order minus still
 * queued. The client may be sending its next request right now: the count
 * is taken only between two equal readings of bytes received, so a byte
 * arriving in between can neither hide nor fake a pipelined request.
 */
static bool bytes_consumed(int fd, uint64_t *out)
{
	for (int attempt = 0; attempt < 100; attempt++) {
		struct tcp_info a, b;
		socklen_t la = sizeof(a), lb = sizeof(b);
		int queued = 0;
		memset(&a, 0, sizeof(a));
		memset(&b, 0, sizeof(b));
		if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &a, &la) != 0 || ioctl(fd, SIOCINQ, &queued) != 0 ||
		    getsockopt(fd, IPPROTO_TCP, TCP_INFO, &b, &lb) != 0 ||
		    la < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof(a.tcpi_bytes_received))
			return false;
		if (a.tcpi_bytes_received == b.tcpi_bytes_received) {
			*out = a.tcpi_bytes_received - (uint64_t)queued;
			return true;
		}
	}
	return false;
}

/* Ends a kept connection from its own thread: the library reads EOF (or fails) and closes it. */
static bool kept_end(struct cc_http_front *f, struct cc_http_front_conn *c, const char *reason)
{
	if (reason)
		count_cut(f, reason);
	pthread_mutex_lock(&f->lock);
	c->cut = true;
	c->deadline_ns = 0;
	pthread_mutex_unlock(&f->lock);
	(void)shutdown(c->fd, SHUT_RDWR);
	return false;
}

/*
 * A refusal on a kept connection: the answer, then the input drained
 * until EOF or CC_HTTP_FRONT_LINGER_MS (so the client reads the answer
 * instead of a reset), then the end.
 */
static bool kept_refuse(struct cc_http_front *f, struct cc_http_front_conn *c, int status, const char *code,
			const char *message, const char *method, const char *request_id, const char *reason)
{
	int64_t end = cc_clock_ns() + (int64_t)CC_HTTP_FRONT_LINGER_MS * 1000000;
	char sink[4096];

	send_refusal(f, c->fd, c->key, status, code, message, method, request_id, 0);
	(void)shutdown(c->fd, SHUT_WR);
	set_rcvlowat(c->fd, 1);
	for (;;) {
		int64_t left = (end - cc_clock_ns()) / 1000000;
		struct pollfd p[2] = { { .fd = c->fd, .events = POLLIN }, { .fd = f->wake[0], .events = POLLIN } };
		if (left <= 0 || poll(p, 2, (int)left) <= 0 || p[1].revents)
			break;
		ssize_t n = recv(c->fd, sink, sizeof(sink), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
			break;
	}
	return kept_end(f, c, reason);
}

bool cc_http_front_conn_next_head(struct cc_http_front *f, struct cc_http_front_conn *c)
{
	struct cc_http_head_verdict v;
	uint64_t consumed = 0;
	int64_t deadline;
	size_t peeked = 0;

	memset(&v, 0, sizeof(v));
	if (!f || !c)
		return false;
	pthread_mutex_lock(&f->lock);
	if (c->cut || !c->counted) {
		pthread_mutex_unlock(&f->lock);
		return false;
	}
	c->phase = CC_HTTP_PHASE_KEPT;
	c->deadline_ns = 0;
	pthread_mutex_unlock(&f->lock);
	if (!bytes_consumed(c->fd, &consumed) || consumed != c->expect) {
		/* Pipelined: the library holds bytes nobody checked. */
		cc_log_info("http_kept_connection_closed", CC_LOG_STR("server", f->name),
			    CC_LOG_STR("reason", "request sent before the previous answer (pipelining)"),
			    CC_LOG_INT("read", (int64_t)consumed), CC_LOG_INT("checked", (int64_t)c->expect));
		return kept_end(f, c, "pipelined");
	}
	if (!c->peek && !(c->peek = malloc(f->o.head.max_head_bytes + 1)))
		return kept_end(f, c, NULL);
	deadline = cc_clock_ns() + (int64_t)f->o.header_timeout_ms * 1000000;
	for (;;) {
		int64_t left = (deadline - cc_clock_ns() + 999999) / 1000000;
		struct pollfd p[2] = { { .fd = c->fd, .events = POLLIN | POLLRDHUP },
				       { .fd = f->wake[0], .events = POLLIN } };
		int rc = left > 0 ? poll(p, 2, (int)left) : 0;
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0 || p[1].revents)
			return kept_end(f, c, NULL);
		if (rc == 0) {
			if (!peeked) /* idle: closed without a word */
				return kept_end(f, c, "idle_kept");
			return kept_refuse(f, c, 408, "request_timeout",
					   "the request head did not arrive within the header deadline", v.method,
					   v.request_id, "header_deadline");
		}
		ssize_t n = recv(c->fd, c->peek, f->o.head.max_head_bytes + 1, MSG_PEEK | MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			continue;
		if (n <= 0) /* the client is gone */
			return kept_end(f, c, NULL);
		cc_http_head_check(c->peek, (size_t)n, &f->o.head, &v);
		if (v.status == 0 && (p[0].revents & (POLLRDHUP | POLLHUP | POLLERR)))
			return kept_end(f, c, NULL); /* half a head, then the client stopped sending */
		if (v.status == 0) {
			peeked = (size_t)n;
			set_rcvlowat(c->fd, (int)n + 1);
			c->lowat_raised = true;
			continue;
		}
		if (v.status != 200)
			return kept_refuse(f, c, v.status, v.code, v.message, v.method, v.request_id, "malformed");
		if (c->lowat_raised) /* the library's poll must wake for any byte again */
			set_rcvlowat(c->fd, 1);
		c->lowat_raised = false;
		pthread_mutex_lock(&f->lock);
		c->expect += (uint64_t)v.head_len + v.content_length;
		c->counted = !v.chunked;
		c->gated = true;
		c->phase = CC_HTTP_PHASE_HEAD;
		c->deadline_ns = phase_deadline(f, CC_HTTP_PHASE_HEAD);
		pthread_mutex_unlock(&f->lock);
		return true;
	}
}
