/*
 * ws_client.c - the RFC 6455 client of ws_client.h: a non-blocking TCP
 * socket, our own HTTP/1.1 upgrade handshake, libwslay's client context
 * for the framing.
 */
#include "sys/ws_client.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <wslay/wslay.h>

#include "sys/clock.h"
#include "sys/crypto.h"
#include "sys/utf8.h"
#include "sys/ws.h"
#include "sys/banned.h"

struct cc_ws_client {
	int fd;
	wslay_event_context_ptr ctx;
	cc_ws_client_on_message on_message;
	void *cb_ctx;
	char *extra; /* bytes read past the handshake, fed to wslay first */
	size_t extra_len, extra_off;
	int idle_timeout_ms, close_timeout_ms;
	int64_t last_rx_ms;
	int64_t close_deadline; /* 0 = no close out yet */
	bool eof;		/* the socket read EOF or failed */
	bool ended;
	int close_code;		/* once ended */
	char close_reason[CC_WS_REASON_MAX + 1];
	int sent_code;
	/* the server's close frame as we read it (wslay 1.1.1 refuses 1012-1014, see frame_end_cb) */
	bool in_close;		/* the frame being read is a close */
	uint8_t close_buf[125];
	size_t close_len;
	bool got_close;
	int peer_code;
	char protocol[128];
	uint64_t messages, pings;
	char *msgbuf; /* NUL-terminated copy handed to on_message */
	size_t msgcap;
};

/* ---- small helpers ----------------------------------------------------------- */

/* Notes what failed: "what: detail", or what alone when detail is NULL. */
static void refuse(struct cc_ws_client_refusal *r, const char *what, const char *detail)
{
	if (r)
		snprintf(r->reason, sizeof r->reason, "%s%s%s", what, detail ? ": " : "", detail ? detail : "");
}

static int ms_left(int64_t deadline)
{
	int64_t left = deadline - cc_clock_ms();
	return left <= 0 ? 0 : (left > 1000000 ? 1000000 : (int)left);
}

/* Waits for events on fd until deadline: 1 ready, 0 timed out, -1 error. */
static int wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		struct pollfd pf = { .fd = fd, .events = events };
		int n = poll(&pf, 1, ms_left(deadline));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		return n > 0 ? 1 : 0;
	}
}

static int dial(const char *host, int port, int64_t deadline, struct cc_ws_client_refusal *r)
{
	char ports[16];
	snprintf(ports, sizeof ports, "%d", port);
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICSERV };
	struct addrinfo *res = NULL;
	int g = getaddrinfo(host, ports, &hints, &res);
	if (g != 0) {
		refuse(r, "resolve", gai_strerror(g));
		return CC_EIO;
	}
	int rc = CC_EIO;
	for (struct addrinfo *a = res; a; a = a->ai_next) {
		int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
		if (fd < 0) {
			refuse(r, "socket", strerror(errno));
			continue;
		}
		if (connect(fd, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
			refuse(r, "connect", strerror(errno));
			close(fd);
			continue;
		}
		int w = wait_fd(fd, POLLOUT, deadline);
		int err = 0;
		socklen_t el = sizeof err;
		if (w == 0) {
			refuse(r, "connect", "timed out");
			close(fd);
			rc = CC_ETIMEOUT;
			break;
		}
		if (w < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0 || err != 0) {
			refuse(r, "connect", strerror(err ? err : errno));
			close(fd);
			continue;
		}
		int one = 1;
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		freeaddrinfo(res);
		return fd;
	}
	freeaddrinfo(res);
	return rc;
}

static int send_all(int fd, const char *p, size_t n, int64_t deadline, struct cc_ws_client_refusal *r)
{
	while (n) {
		ssize_t s = send(fd, p, n, MSG_NOSIGNAL);
		if (s > 0) {
			p += s;
			n -= (size_t)s;
			continue;
		}
		if (s < 0 && errno == EINTR)
			continue;
		if (s < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			int w = wait_fd(fd, POLLOUT, deadline);
			if (w == 0) {
				refuse(r, "send", "timed out");
				return CC_ETIMEOUT;
			}
			if (w > 0)
				continue;
		}
		refuse(r, "send", strerror(errno));
		return CC_EIO;
	}
	return 0;
}

/* recv with the deadline: > 0 bytes, 0 EOF, CC_ETIMEOUT, CC_EIO. */
static ssize_t recv_some(int fd, char *buf, size_t cap, int64_t deadline)
{
	for (;;) {
		ssize_t n = recv(fd, buf, cap, 0);
		if (n >= 0)
			return n;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return CC_EIO;
		int w = wait_fd(fd, POLLIN, deadline);
		if (w == 0)
			return CC_ETIMEOUT;
		if (w < 0)
			return CC_EIO;
	}
}

/* The value of header name in head (lines after the status line), trimmed, into out. */
static bool header_value(const char *head, const char *name, char *out, size_t cap)
{
	size_t nl = strlen(name);
	const char *p = strstr(head, "\r\n");
	while (p && p[2] != '\r' && p[2] != '\0') {
		const char *line = p + 2;
		const char *end = strstr(line, "\r\n");
		if (!end)
			break;
		if ((size_t)(end - line) > nl && strncasecmp(line, name, nl) == 0 && line[nl] == ':') {
			const char *v = line + nl + 1;
			while (v < end && (*v == ' ' || *v == '\t'))
				v++;
			const char *e = end;
			while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
				e--;
			size_t len = (size_t)(e - v);
			if (len >= cap)
				len = cap - 1;
			memcpy(out, v, len);
			out[len] = '\0';
			return true;
		}
		p = end;
	}
	return false;
}

/* Whether the comma-separated list has token (case-insensitive). */
static bool has_token(const char *list, const char *token)
{
	size_t tl = strlen(token);
	const char *p = list;
	while (*p) {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		size_t n = strcspn(p, ",");
		size_t m = n;
		while (m > 0 && (p[m - 1] == ' ' || p[m - 1] == '\t'))
			m--;
		if (m == tl && strncasecmp(p, token, tl) == 0)
			return true;
		p += n;
	}
	return false;
}

static int status_result(int status)
{
	switch (status) {
	case 401:
		return CC_EUNAUTHORIZED;
	case 403:
		return CC_EFORBIDDEN;
	case 404:
		return CC_ENOTFOUND;
	case 429:
	case 503:
		return CC_EUNAVAILABLE;
	default:
		return CC_ECONFLICT;
	}
}

/* ---- wslay callbacks ----------------------------------------------------------- */

static ssize_t recv_cb(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags, void *ud)
{
	(void)flags;
	struct cc_ws_client *c = ud;
	if (c->extra_off < c->extra_len) {
		size_t n = c->extra_len - c->extra_off;
		if (n > len)
			n = len;
		memcpy(buf, c->extra + c->extra_off, n);
		c->extra_off += n;
		c->last_rx_ms = cc_clock_ms();
		return (ssize_t)n;
	}
	ssize_t r;
	do
		r = recv(c->fd, buf, len, 0);
	while (r < 0 && errno == EINTR);
	if (r > 0) {
		c->last_rx_ms = cc_clock_ms();
		return r;
	}
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	c->eof = true;
	wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
	return -1;
}

static ssize_t send_cb(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags, void *ud)
{
	(void)flags;
	struct cc_ws_client *c = ud;
	ssize_t r;
	do
		r = send(c->fd, data, len, MSG_NOSIGNAL);
	while (r < 0 && errno == EINTR);
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

static int genmask_cb(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, void *ud)
{
	(void)ud;
	size_t got = 0;
	while (got < len) {
		ssize_t n = getrandom(buf + got, len - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
			return -1;
		}
		got += (size_t)n;
	}
	return 0;
}

static void queue_close(struct cc_ws_client *c, int code, const char *reason)
{
	if (wslay_event_get_close_sent(c->ctx) || c->sent_code)
		return;
	c->sent_code = code;
	size_t rl = reason ? strlen(reason) : 0;
	if (rl > CC_WS_REASON_MAX)
		rl = CC_WS_REASON_MAX;
	(void)wslay_event_queue_close(c->ctx, (uint16_t)code, (const uint8_t *)reason, rl);
	c->close_deadline = cc_clock_ms() + c->close_timeout_ms;
}

/*
 * The server's close frame is read here, not from wslay's message: wslay
 * 1.1.1 takes the close codes registered after RFC 6455 (1012 service
 * restart, 1013 try again later, 1014 bad gateway) for a protocol error
 * and would answer 1002 without telling us the code. Queuing the echo
 * before wslay looks at the frame makes it send ours.
 */
static void frame_start_cb(wslay_event_context_ptr ctx, const struct wslay_event_on_frame_recv_start_arg *a,
			   void *ud)
{
	(void)ctx;
	struct cc_ws_client *c = ud;
	c->in_close = a->opcode == WSLAY_CONNECTION_CLOSE;
	c->close_len = 0;
}

static void frame_chunk_cb(wslay_event_context_ptr ctx, const struct wslay_event_on_frame_recv_chunk_arg *a,
			   void *ud)
{
	(void)ctx;
	struct cc_ws_client *c = ud;
	if (!c->in_close)
		return;
	size_t n = a->data_length;
	if (n > sizeof c->close_buf - c->close_len)
		n = sizeof c->close_buf - c->close_len;
	memcpy(c->close_buf + c->close_len, a->data, n);
	c->close_len += n;
}

static void frame_end_cb(wslay_event_context_ptr ctx, void *ud)
{
	struct cc_ws_client *c = ud;
	if (!c->in_close || c->got_close)
		return;
	c->in_close = false;
	c->got_close = true;
	c->peer_code = c->close_len >= 2 ? (c->close_buf[0] << 8 | c->close_buf[1]) : 1005;
	size_t rl = c->close_len > 2 ? c->close_len - 2 : 0;
	if (rl > CC_WS_REASON_MAX)
		rl = CC_WS_REASON_MAX;
	memcpy(c->close_reason, c->close_buf + 2, rl);
	c->close_reason[rl] = '\0';
	if (!c->close_deadline)
		c->close_deadline = cc_clock_ms() + c->close_timeout_ms;
	if (c->peer_code >= 1012 && c->peer_code <= 1014 && !c->sent_code &&
	    !wslay_event_get_close_sent(ctx)) {
		c->sent_code = c->peer_code;
		(void)wslay_event_queue_close(ctx, (uint16_t)c->peer_code, NULL, 0);
	}
}

static void on_msg_cb(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *a, void *ud)
{
	(void)ctx;
	struct cc_ws_client *c = ud;
	switch (a->opcode) {
	case WSLAY_PING:
		c->pings++; /* wslay queues the pong */
		return;
	case WSLAY_PONG:
		return;
	case WSLAY_CONNECTION_CLOSE:
		return; /* frame_end_cb read it; wslay echoes it */
	case WSLAY_BINARY_FRAME:
		queue_close(c, CC_WS_CLOSE_UNSUPPORTED, "text only");
		return;
	case WSLAY_TEXT_FRAME:
		break;
	default:
		return;
	}
	if (c->sent_code || wslay_event_get_close_sent(c->ctx))
		return; /* closing: nothing more is delivered */
	if (!cc_utf8_valid((const char *)a->msg, a->msg_length)) {
		queue_close(c, CC_WS_CLOSE_INVALID_PAYLOAD, "invalid utf-8");
		return;
	}
	if (a->msg_length + 1 > c->msgcap) {
		char *nb = realloc(c->msgbuf, a->msg_length + 1);
		if (!nb) {
			queue_close(c, CC_WS_CLOSE_INTERNAL, "out of memory");
			return;
		}
		c->msgbuf = nb;
		c->msgcap = a->msg_length + 1;
	}
	memcpy(c->msgbuf, a->msg, a->msg_length);
	c->msgbuf[a->msg_length] = '\0';
	c->messages++;
	if (c->on_message)
		c->on_message(c->cb_ctx, c->msgbuf, a->msg_length);
}

/* ---- connect -------------------------------------------------------------------- */

static bool clean_headers(const char *h)
{
	if (!h || !*h)
		return true;
	size_t n = strlen(h);
	if (n < 2 || strcmp(h + n - 2, "\r\n") != 0 || strstr(h, "\r\n\r\n"))
		return false;
	for (const char *p = h; *p; p++) {
		if (*p == '\n' && (p == h || p[-1] != '\r'))
			return false;
		if (*p == '\r' && p[1] != '\n')
			return false;
	}
	return true;
}

static bool clean_text(const char *s)
{
	return !s || !strpbrk(s, "\r\n");
}

int cc_ws_client_connect(const struct cc_ws_client_options *o, struct cc_ws_client **out,
			 struct cc_ws_client_refusal *r)
{
	if (out)
		*out = NULL;
	if (r) {
		memset(r, 0, sizeof *r);
		r->retry_after_s = -1;
	}
	if (!o || !out || !o->host || !*o->host || o->port <= 0 || o->port > 65535 || !o->target ||
	    o->target[0] != '/' || !clean_text(o->host) || !clean_text(o->target) ||
	    !clean_text(o->protocols) || !clean_headers(o->headers)) {
		refuse(r, "bad options", NULL);
		return CC_EINVAL;
	}
	int64_t deadline = cc_clock_ms() + (o->timeout_ms > 0 ? o->timeout_ms : 5000);

	uint8_t nonce[16];
	char key[32], accept[29];
	size_t kl = 0;
	if (getrandom(nonce, sizeof nonce, 0) != (ssize_t)sizeof nonce ||
	    cc_base64_encode(nonce, sizeof nonce, key, sizeof key, &kl) != 0 || kl != 24) {
		refuse(r, "no random key", NULL);
		return CC_EIO;
	}
	key[24] = '\0';
	if (cc_ws_accept_key(key, accept) != 0)
		return CC_EINVAL;

	size_t reqcap = strlen(o->host) + strlen(o->target) + (o->headers ? strlen(o->headers) : 0) +
			(o->protocols ? strlen(o->protocols) : 0) + 512;
	char *req = malloc(reqcap);
	if (!req)
		return CC_ENOMEM;
	bool v6 = strchr(o->host, ':') != NULL;
	int rl = snprintf(req, reqcap,
			  "GET %s HTTP/1.1\r\nHost: %s%s%s:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
			  "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n%s%s%s%s\r\n",
			  o->target, v6 ? "[" : "", o->host, v6 ? "]" : "", o->port, key,
			  o->protocols ? "Sec-WebSocket-Protocol: " : "", o->protocols ? o->protocols : "",
			  o->protocols ? "\r\n" : "", o->headers ? o->headers : "");
	if (rl < 0 || (size_t)rl >= reqcap) {
		free(req);
		return CC_EINVAL;
	}

	int fd = dial(o->host, o->port, deadline, r);
	if (fd < 0) {
		free(req);
		return fd;
	}
	int rc = send_all(fd, req, (size_t)rl, deadline, r);
	free(req);
	if (rc != 0) {
		close(fd);
		return rc;
	}

	/* The answer's head. */
	char *head = malloc(CC_WS_CLIENT_HEAD_MAX + 1);
	if (!head) {
		close(fd);
		return CC_ENOMEM;
	}
	size_t hl = 0;
	char *end = NULL;
	while (!end) {
		if (hl == CC_WS_CLIENT_HEAD_MAX) {
			refuse(r, "answer head too long", NULL);
			rc = CC_EIO;
			goto fail;
		}
		ssize_t n = recv_some(fd, head + hl, CC_WS_CLIENT_HEAD_MAX - hl, deadline);
		if (n == 0) {
			refuse(r, "the server closed the connection before answering", NULL);
			rc = CC_EIO;
			goto fail;
		}
		if (n < 0) {
			refuse(r, "handshake", n == CC_ETIMEOUT ? "timed out" : strerror(errno));
			rc = (int)n;
			goto fail;
		}
		hl += (size_t)n;
		head[hl] = '\0';
		end = strstr(head, "\r\n\r\n");
	}
	size_t head_len = (size_t)(end - head) + 4;
	int status = 0;
	if (sscanf(head, "HTTP/1.%*1[01] %3d", &status) != 1 || status < 100 || status > 599) {
		refuse(r, "the answer is not HTTP/1.x", NULL);
		rc = CC_EIO;
		goto fail;
	}
	if (r)
		r->status = status;
	char val[256];
	if (status != 101) {
		if (r && header_value(head, "Retry-After", val, sizeof val)) {
			char *e;
			long ra = strtol(val, &e, 10);
			if (e != val && *e == '\0' && ra >= 0 && ra < 86400 * 365)
				r->retry_after_s = (int)ra;
		}
		/* The body: Content-Length bytes (capped), or up to EOF. */
		long cl = -1;
		if (header_value(head, "Content-Length", val, sizeof val)) {
			char *e;
			cl = strtol(val, &e, 10);
			if (e == val || *e != '\0' || cl < 0)
				cl = -1;
		}
		size_t want = cl < 0 || (size_t)cl > CC_WS_CLIENT_BODY_MAX ? CC_WS_CLIENT_BODY_MAX : (size_t)cl;
		char *body = r ? r->body : NULL;
		size_t have = hl - head_len;
		if (have > want)
			have = want;
		if (body)
			memcpy(body, head + head_len, have);
		while (body && have < want) {
			ssize_t n = recv_some(fd, body + have, want - have, deadline);
			if (n <= 0)
				break; /* EOF (no length), timeout or reset: keep what came */
			have += (size_t)n;
		}
		if (r) {
			r->body[have] = '\0';
			r->body_len = have;
			snprintf(r->reason, sizeof r->reason, "upgrade refused: HTTP %d", status);
		}
		rc = status_result(status);
		goto fail;
	}
	/* 101: check it is the upgrade we asked for. */
	if (!header_value(head, "Upgrade", val, sizeof val) || strcasecmp(val, "websocket") != 0) {
		refuse(r, "101 without Upgrade: websocket", NULL);
		rc = CC_EIO;
		goto fail;
	}
	if (!header_value(head, "Connection", val, sizeof val) || !has_token(val, "upgrade")) {
		refuse(r, "101 without Connection: upgrade", NULL);
		rc = CC_EIO;
		goto fail;
	}
	if (!header_value(head, "Sec-WebSocket-Accept", val, sizeof val) || strcmp(val, accept) != 0) {
		refuse(r, "101 with a wrong Sec-WebSocket-Accept", NULL);
		rc = CC_EIO;
		goto fail;
	}
	char proto[128] = "";
	if (header_value(head, "Sec-WebSocket-Protocol", proto, sizeof proto) &&
	    (!o->protocols || strchr(proto, ',') || !has_token(o->protocols, proto))) {
		refuse(r, "101 selects a subprotocol that was not offered", NULL);
		rc = CC_EIO;
		goto fail;
	}

	struct cc_ws_client *c = calloc(1, sizeof *c);
	if (!c) {
		rc = CC_ENOMEM;
		goto fail;
	}
	c->fd = fd;
	c->on_message = o->on_message;
	c->cb_ctx = o->ctx;
	c->idle_timeout_ms = o->idle_timeout_ms > 0 ? o->idle_timeout_ms : 0;
	c->close_timeout_ms = o->close_timeout_ms > 0 ? o->close_timeout_ms : CC_WS_CLIENT_DEFAULT_CLOSE_TIMEOUT_MS;
	c->last_rx_ms = cc_clock_ms();
	snprintf(c->protocol, sizeof c->protocol, "%s", proto);
	if (hl > head_len) {
		c->extra_len = hl - head_len;
		c->extra = malloc(c->extra_len);
		if (!c->extra) {
			free(c);
			rc = CC_ENOMEM;
			goto fail;
		}
		memcpy(c->extra, head + head_len, c->extra_len);
	}
	free(head);
	struct wslay_event_callbacks cbs = { .recv_callback = recv_cb,
					     .send_callback = send_cb,
					     .genmask_callback = genmask_cb,
					     .on_frame_recv_start_callback = frame_start_cb,
					     .on_frame_recv_chunk_callback = frame_chunk_cb,
					     .on_frame_recv_end_callback = frame_end_cb,
					     .on_msg_recv_callback = on_msg_cb };
	if (wslay_event_context_client_init(&c->ctx, &cbs, c) != 0) {
		free(c->extra);
		free(c);
		close(fd);
		return CC_ENOMEM;
	}
	wslay_event_config_set_max_recv_msg_length(
		c->ctx, o->max_message_bytes ? o->max_message_bytes : CC_WS_CLIENT_DEFAULT_MAX_MESSAGE);
	*out = c;
	return 0;
fail:
	free(head);
	close(fd);
	return rc;
}

/* ---- running ---------------------------------------------------------------------- */

static void end(struct cc_ws_client *c)
{
	if (c->ended)
		return;
	c->ended = true;
	if (c->got_close)
		c->close_code = c->peer_code;
	else if (wslay_event_get_close_received(c->ctx))
		c->close_code = wslay_event_get_status_code_received(c->ctx);
	else
		c->close_code = CC_WS_CLOSE_ABNORMAL;
	if (!c->sent_code && wslay_event_get_close_sent(c->ctx))
		c->sent_code = wslay_event_get_status_code_sent(c->ctx);
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

/* One round of I/O and the end conditions. */
static void pump(struct cc_ws_client *c, bool readable)
{
	if (readable || c->extra_off < c->extra_len) {
		int rc = wslay_event_want_read(c->ctx) ? wslay_event_recv(c->ctx) : 0;
		if (rc != 0) {
			if (!c->eof && rc != WSLAY_ERR_NOMEM) {
				/* a frame wslay refused outright: say 1002 and stop reading */
				wslay_event_shutdown_read(c->ctx);
				queue_close(c, CC_WS_CLOSE_PROTOCOL, "protocol error");
			} else {
				end(c);
				return;
			}
		}
	}
	if (c->eof) {
		end(c);
		return;
	}
	if (wslay_event_want_write(c->ctx) && wslay_event_send(c->ctx) != 0) {
		end(c);
		return;
	}
	int64_t now = cc_clock_ms();
	bool sent = wslay_event_get_close_sent(c->ctx);
	bool got = c->got_close || wslay_event_get_close_received(c->ctx);
	if (sent && !c->close_deadline)
		c->close_deadline = now + c->close_timeout_ms; /* wslay's own close (1009, 1002) */
	if (sent && got && !wslay_event_want_write(c->ctx))
		end(c);
	else if (c->close_deadline && now >= c->close_deadline)
		end(c);
	else if (!wslay_event_want_read(c->ctx) && !wslay_event_want_write(c->ctx) && !c->close_deadline)
		end(c);
	else if (c->idle_timeout_ms && now - c->last_rx_ms >= c->idle_timeout_ms)
		end(c);
}

int cc_ws_client_service(struct cc_ws_client *c, int timeout_ms)
{
	if (!c || c->ended)
		return 0;
	int64_t now = cc_clock_ms();
	int64_t until = now + (timeout_ms > 0 ? timeout_ms : 0);
	if (c->close_deadline && c->close_deadline < until)
		until = c->close_deadline;
	if (c->idle_timeout_ms && c->last_rx_ms + c->idle_timeout_ms < until)
		until = c->last_rx_ms + c->idle_timeout_ms;
	bool readable = false;
	if (c->extra_off >= c->extra_len) {
		struct pollfd pf = { .fd = c->fd, .events = cc_ws_client_events(c) };
		int n;
		do
			n = poll(&pf, 1, ms_left(until));
		while (n < 0 && errno == EINTR);
		if (n < 0) {
			c->eof = true;
			end(c);
			return 0;
		}
		readable = n > 0 && (pf.revents & (POLLIN | POLLHUP | POLLERR));
	}
	pump(c, readable);
	return c->ended ? 0 : 1;
}

void cc_ws_client_free(struct cc_ws_client *c)
{
	if (!c)
		return;
	if (c->fd >= 0)
		close(c->fd);
	wslay_event_context_free(c->ctx);
	free(c->extra);
	free(c->msgbuf);
	free(c);
}

int cc_ws_client_fd(const struct cc_ws_client *c)
{
	return c ? c->fd : -1;
}

short cc_ws_client_events(const struct cc_ws_client *c)
{
	if (!c || c->ended)
		return 0;
	return (short)(POLLIN | (wslay_event_want_write(c->ctx) ? POLLOUT : 0));
}

bool cc_ws_client_open(const struct cc_ws_client *c)
{
	return c && !c->ended;
}

/* Queues one message of opcode (copied) and sends what it can now. */
static int queue_msg(struct cc_ws_client *c, uint8_t opcode, const void *msg, size_t len)
{
	if (!c || c->ended || c->sent_code || wslay_event_get_close_sent(c->ctx))
		return CC_ESTATE;
	struct wslay_event_msg m = { .opcode = opcode, .msg = msg, .msg_length = len };
	int rc = wslay_event_queue_msg(c->ctx, &m);
	if (rc == WSLAY_ERR_NOMEM)
		return CC_ENOMEM;
	if (rc != 0)
		return CC_ESTATE;
	pump(c, false);
	return 0;
}

int cc_ws_client_send_text(struct cc_ws_client *c, const char *msg, size_t len)
{
	return queue_msg(c, WSLAY_TEXT_FRAME, msg, len);
}

int cc_ws_client_ping(struct cc_ws_client *c, const void *payload, size_t len)
{
	return len > 125 ? CC_EINVAL : queue_msg(c, WSLAY_PING, payload, len);
}

int cc_ws_client_close(struct cc_ws_client *c, int code, const char *reason)
{
	if (code < 1000 || code > 4999 || code == 1005 || code == 1006 || code == 1015 ||
	    (code > 1015 && code < 3000))
		return CC_EINVAL;
	if (!c || c->ended || c->sent_code || wslay_event_get_close_sent(c->ctx))
		return CC_ESTATE;
	queue_close(c, code, reason);
	pump(c, false);
	return 0;
}

int cc_ws_client_close_code(const struct cc_ws_client *c)
{
	return c && c->ended ? c->close_code : 0;
}

const char *cc_ws_client_close_reason(const struct cc_ws_client *c)
{
	return c ? c->close_reason : "";
}

int cc_ws_client_close_sent(const struct cc_ws_client *c)
{
	if (!c)
		return 0;
	if (c->sent_code)
		return c->sent_code;
	return wslay_event_get_close_sent(c->ctx) ? wslay_event_get_status_code_sent(c->ctx) : 0;
}

const char *cc_ws_client_protocol(const struct cc_ws_client *c)
{
	return c ? c->protocol : "";
}

uint64_t cc_ws_client_messages(const struct cc_ws_client *c)
{
	return c ? c->messages : 0;
}

uint64_t cc_ws_client_pings(const struct cc_ws_client *c)
{
	return c ? c->pings : 0;
}
