/*
 * redis.c - see redis.h. The socket, the deadlines and the reconnect pacing
 * are ours; hiredis formats commands and parses replies.
 */
#include "sys/redis.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "sys/clock.h"
#include "sys/log.h"
#include "sys/banned.h"

struct cc_redis {
	char *host;			     /* as given to cc_redis_create */
	int port;			     /* 1..65535 */
	int connect_timeout_ms;		     /* budget of one connect, all addresses */
	int command_timeout_ms;		     /* budget of one request/reply exchange */
	int fd;				     /* connected socket, -1 when disconnected */
	redisReader *reader;		     /* parser of fd's byte stream; NULL with fd */
	int64_t next_connect_ms;	     /* monotonic ms before which we do not connect */
	unsigned long connect_attempts;	     /* connects tried, for tests and metrics */
	bool down;			     /* the last connect or exchange failed: log once */
	char last_error[CC_REDIS_ERROR_MAX]; /* text of the last failure, "" if none */
};

/* Milliseconds left until deadline, clamped to 0..INT_MAX-ish for poll(). */
static int remaining_ms(int64_t deadline)
{
	int64_t left = deadline - cc_clock_ms();
	if (left <= 0)
		return 0;
	return left > 1000000 ? 1000000 : (int)left;
}

CC_PRINTF(2, 3) static void set_error(struct cc_redis *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->last_error, sizeof(r->last_error), fmt, ap);
	va_end(ap);
}

/* Closes the connection (if any) and holds off reconnecting for a while. */
static void drop_connection(struct cc_redis *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	redisReaderFree(r->reader);
	r->reader = NULL;
	r->next_connect_ms = cc_clock_ms() + CC_REDIS_RETRY_INTERVAL_MS;
	/* Log the transition only: a down Redis must not flood the log. */
	if (!r->down)
		cc_log_warn("redis_unavailable", CC_LOG_STR("host", r->host), CC_LOG_INT("port", r->port),
			    CC_LOG_STR("error", r->last_error));
	r->down = true;
}

/*
 * Waits until a non-blocking connect on fd finishes or deadline passes.
 * Returns 0 when connected, else an errno value (ETIMEDOUT on the deadline).
 */
static int wait_connected(int fd, int64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	for (;;) {
		int n = poll(&p, 1, remaining_ms(deadline));
		if (n > 0)
			break;
		if (n == 0)
			return ETIMEDOUT;
		if (errno != EINTR)
			return errno;
	}
	int err = 0;
	socklen_t len = sizeof(err);
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		return errno;
	return err;
}

/*
 * Opens a non-blocking TCP connection to r's address, trying each resolved
 * address within one connect_timeout_ms budget. Returns the fd, or -1 with
 * last_error set.
 */
static int open_socket(struct cc_redis *r)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICSERV };
	struct addrinfo *res = NULL;
	char port[16];
	int fd = -1, err = 0;

	snprintf(port, sizeof(port), "%d", r->port);
	int64_t deadline = cc_clock_ms() + r->connect_timeout_ms;
	int gai = getaddrinfo(r->host, port, &hints, &res);
	if (gai != 0) {
		set_error(r, "cannot resolve %s: %s", r->host, gai_strerror(gai));
		return -1;
	}
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0) {
			err = errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		err = errno == EINPROGRESS ? wait_connected(fd, deadline) : errno;
		if (err == 0)
			break;
		close(fd);
		fd = -1;
		if (err == ETIMEDOUT)
			break; /* the budget is spent: do not start the next address */
	}
	freeaddrinfo(res);
	if (fd < 0) {
		set_error(r, "cannot connect to %s:%d: %s", r->host, r->port,
			  err == ETIMEDOUT ? "connect timed out" : strerror(err));
		return -1;
	}
	/* Small request/reply exchanges: send at once; notice a dead peer on idle links. */
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	return fd;
}

/*
 * Makes sure r is connected. Returns 0, or CC_EUNAVAILABLE when the retry
 * interval has not passed yet or the connect fails.
 */
static int ensure_connected(struct cc_redis *r)
{
	if (r->fd >= 0)
		return 0;
	if (cc_clock_ms() < r->next_connect_ms) {
		/* last_error still names the failure that put us here. */
		return CC_EUNAVAILABLE;
	}
	r->connect_attempts++;
	int fd = open_socket(r);
	if (fd < 0)
		goto out_fail;
	r->reader = redisReaderCreate();
	if (!r->reader) {
		close(fd);
		set_error(r, "out of memory creating the reply reader");
		goto out_fail;
	}
	r->fd = fd;
	if (r->down)
		cc_log_info("redis_connected", CC_LOG_STR("host", r->host), CC_LOG_INT("port", r->port));
	r->down = false;
	return 0;
out_fail:
	drop_connection(r);
	return CC_EUNAVAILABLE;
}

/*
 * Writes req (req_len bytes) and reads n replies into slots[0..n-1], all
 * within one command_timeout_ms. Reading starts while writing, so neither
 * side can block on a full buffer. Returns 0 with every slot filled, or an
 * error with every slot NULL and the connection dropped.
 */
static int exchange(struct cc_redis *r, const char *req, size_t req_len, size_t n, redisReply **slots)
{
	int64_t deadline = cc_clock_ms() + r->command_timeout_ms;
	size_t sent = 0, got = 0, received = 0;
	char buf[16384];
	int rc = CC_EUNAVAILABLE;

	while (got < n) {
		void *reply = NULL;
		if (redisReaderGetReply(r->reader, &reply) != REDIS_OK) {
			set_error(r, "redis protocol error: %s", r->reader->errstr);
			goto out_fail;
		}
		if (reply) {
			slots[got++] = reply;
			continue;
		}
		struct pollfd p = { .fd = r->fd, .events = POLLIN | (sent < req_len ? POLLOUT : 0) };
		int ready = poll(&p, 1, remaining_ms(deadline));
		if (ready == 0) {
			set_error(r, "redis command timed out after %d ms", r->command_timeout_ms);
			goto out_fail;
		}
		if (ready < 0) {
			if (errno == EINTR)
				continue;
			set_error(r, "poll: %s", strerror(errno));
			goto out_fail;
		}
		if ((p.revents & POLLOUT) && sent < req_len) {
			ssize_t w = send(r->fd, req + sent, req_len - sent, MSG_NOSIGNAL);
			if (w < 0 && errno != EAGAIN && errno != EINTR) {
				set_error(r, "redis write: %s", strerror(errno));
				goto out_fail;
			}
			if (w > 0)
				sent += (size_t)w;
		}
		if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
			ssize_t got_bytes = recv(r->fd, buf, sizeof(buf), 0);
			if (got_bytes == 0) {
				set_error(r, "redis closed the connection");
				goto out_fail;
			}
			if (got_bytes < 0) {
				if (errno == EAGAIN || errno == EINTR)
					continue;
				set_error(r, "redis read: %s", strerror(errno));
				goto out_fail;
			}
			received += (size_t)got_bytes;
			if (received > CC_REDIS_MAX_REPLY_BYTES) {
				set_error(r, "redis reply exceeds %u bytes", CC_REDIS_MAX_REPLY_BYTES);
				rc = CC_ETOOBIG;
				goto out_fail;
			}
			if (redisReaderFeed(r->reader, buf, (size_t)got_bytes) != REDIS_OK) {
				set_error(r, "redis reader: %s", r->reader->errstr);
				goto out_fail;
			}
		}
	}
	return 0;
out_fail:
	cc_redis_replies_free(slots, got);
	drop_connection(r);
	return rc;
}

/*
 * Checks one command's arguments and adds their byte count to *total.
 * Returns 0, CC_EINVAL or CC_ETOOBIG (total over the request cap).
 */
static int measure_command(int argc, const char **argv, const size_t *argvlen, size_t *total)
{
	if (argc < 1 || !argv)
		return CC_EINVAL;
	for (int i = 0; i < argc; i++) {
		if (!argv[i])
			return CC_EINVAL;
		size_t len = argvlen ? argvlen[i] : strlen(argv[i]);
		/* Each argument also costs a "$<len>\r\n...\r\n" frame; 32 covers it. */
		if (len > CC_REDIS_MAX_REQUEST_BYTES - *total ||
		    CC_REDIS_MAX_REQUEST_BYTES - *total - len < 32)
			return CC_ETOOBIG;
		*total += len + 32;
	}
	return 0;
}

/*
 * Checks n commands and returns in *size a bound on their formatted size.
 * Returns 0, CC_EINVAL or CC_ETOOBIG. Cheap: no allocation, so it can run
 * before we know whether Redis is reachable.
 */
static int measure_request(size_t n, const int *argcs, const char **const *argvs,
			   const size_t *const *argvlens, size_t *size)
{
	*size = 0;
	for (size_t i = 0; i < n; i++) {
		int rc = measure_command(argcs[i], argvs[i], argvlens ? argvlens[i] : NULL, size);
		if (rc)
			return rc;
	}
	return 0;
}

/*
 * Formats n measured commands into one malloc'd RESP buffer of at most size
 * bytes. Returns 0 with *out and *out_len set (caller frees *out), or
 * CC_ENOMEM.
 */
static int format_request(size_t n, const int *argcs, const char **const *argvs,
			  const size_t *const *argvlens, size_t size, char **out, size_t *out_len)
{
	size_t len = 0;
	char *req = malloc(size);
	if (!req)
		return CC_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		char *cmd = NULL;
		int cmd_len = redisFormatCommandArgv(&cmd, argcs[i], argvs[i], argvlens ? argvlens[i] : NULL);
		if (cmd_len < 0) {
			free(req);
			return CC_ENOMEM;
		}
		if ((size_t)cmd_len > size - len)
			CC_BUG("redis request larger than measured");
		memcpy(req + len, cmd, (size_t)cmd_len);
		len += (size_t)cmd_len;
		redisFreeCommand(cmd);
	}
	*out = req;
	*out_len = len;
	return 0;
}

/*
 * The core of every public call: validates, connects if due, sends n
 * commands and fills slots[0..n-1]. Returns 0 or a CC_E* code with no reply
 * left in slots.
 */
static int run(struct cc_redis *r, size_t n, const int *argcs, const char **const *argvs,
	       const size_t *const *argvlens, redisReply **slots)
{
	char *req = NULL;
	size_t size = 0, req_len = 0;
	int rc;

	if (!r || n == 0 || !argcs || !argvs)
		return CC_EINVAL;
	rc = measure_request(n, argcs, argvs, argvlens, &size);
	if (rc) {
		set_error(r, "invalid redis request: %s", cc_strerror(rc));
		return rc;
	}
	/* Connect (or refuse at once) before formatting: a down Redis costs nothing. */
	rc = ensure_connected(r);
	if (rc)
		return rc;
	rc = format_request(n, argcs, argvs, argvlens, size, &req, &req_len);
	if (rc) {
		set_error(r, "out of memory formatting a redis request");
		return rc;
	}
	rc = exchange(r, req, req_len, n, slots);
	free(req);
	return rc;
}

struct cc_redis *cc_redis_create(const char *host, int port, int connect_timeout_ms, int command_timeout_ms)
{
	if (!host || !*host || port < 1 || port > 65535 || connect_timeout_ms <= 0 || command_timeout_ms <= 0)
		return NULL;
	struct cc_redis *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->host = strdup(host);
	if (!r->host) {
		free(r);
		return NULL;
	}
	r->port = port;
	r->connect_timeout_ms = connect_timeout_ms;
	r->command_timeout_ms = command_timeout_ms;
	r->fd = -1;
	return r;
}

void cc_redis_free(struct cc_redis *r)
{
	if (!r)
		return;
	if (r->fd >= 0)
		close(r->fd);
	redisReaderFree(r->reader);
	free(r->host);
	free(r);
}

int cc_redis_command_argv(struct cc_redis *r, int argc, const char **argv, const size_t *argvlen,
			  redisReply **out)
{
	redisReply *reply = NULL;
	int rc = run(r, 1, &argc, (const char **const[]){ argv }, (const size_t *const[]){ argvlen }, &reply);
	if (rc)
		return rc;
	if (reply->type == REDIS_REPLY_ERROR) {
		set_error(r, "%.*s", (int)reply->len, reply->str);
		freeReplyObject(reply);
		return CC_EDB;
	}
	if (out)
		*out = reply;
	else
		freeReplyObject(reply);
	return 0;
}

int cc_redis_command(struct cc_redis *r, redisReply **out, const char *arg0, ...)
{
	const char *argv[CC_REDIS_MAX_ARGS];
	int argc = 0;
	va_list ap;

	va_start(ap, arg0);
	for (const char *arg = arg0; arg; arg = va_arg(ap, const char *)) {
		if (argc == CC_REDIS_MAX_ARGS) {
			va_end(ap);
			return CC_EINVAL;
		}
		argv[argc++] = arg;
	}
	va_end(ap);
	return cc_redis_command_argv(r, argc, argv, NULL, out);
}

int cc_redis_pipeline(struct cc_redis *r, size_t n, const int *argcs, const char **const *argvs,
		      const size_t *const *argvlens, redisReply **replies)
{
	if (n == 0)
		return CC_EINVAL;
	/* Collect into our own array: replies[] is written only on success. */
	redisReply **slots = calloc(n, sizeof(*slots));
	if (!slots)
		return CC_ENOMEM;
	int rc = run(r, n, argcs, argvs, argvlens, slots);
	if (rc)
		goto out_free_slots;
	if (replies) {
		memcpy(replies, slots, n * sizeof(*slots));
		goto out_free_slots;
	}
	for (size_t i = 0; i < n; i++) {
		if (slots[i]->type == REDIS_REPLY_ERROR && rc == 0) {
			set_error(r, "%.*s", (int)slots[i]->len, slots[i]->str);
			rc = CC_EDB;
		}
	}
	cc_redis_replies_free(slots, n);
out_free_slots:
	free(slots);
	return rc;
}

void cc_redis_replies_free(redisReply **replies, size_t n)
{
	if (!replies)
		return;
	for (size_t i = 0; i < n; i++) {
		if (replies[i])
			freeReplyObject(replies[i]);
		replies[i] = NULL;
	}
}

const char *cc_redis_last_error(const struct cc_redis *r)
{
	return r ? r->last_error : "no redis handle";
}

bool cc_redis_is_connected(const struct cc_redis *r)
{
	return r && r->fd >= 0;
}

unsigned long cc_redis_connect_attempts(const struct cc_redis *r)
{
	return r ? r->connect_attempts : 0;
}
