/*
 * replay.c - see replay.h. The writer: two buffers, the active one the
 * tick thread appends to under the mutex, the other the writer thread
 * writes outside it; the thread swaps them when the active one is full (the
 * tick thread wakes it) or every FLUSH_MS. The reader: bounds-checked
 * little-endian reads over a caller's buffer.
 */
#include "replay.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "sys/clock.h"
#include "sys/log.h"
#include "sys/banned.h"

#define BUF_BYTES (256 * 1024) /* one buffer; a record is at most 4 + 20 + 65536 bytes */
#define FLUSH_MS 200
#define TEXT_RECORD_MAX (4 + GS_REPLAY_RECORD_HEAD + GS_REPLAY_MAX_TEXT)
#define MARK_TEXT_MAX 160 /* the truncated and closed texts are shorter */
#define RESERVE (2 * (4 + GS_REPLAY_RECORD_HEAD + MARK_TEXT_MAX))

const char *gs_replay_kind_name(int kind)
{
	switch (kind) {
	case GS_REPLAY_IN: return "in";
	case GS_REPLAY_OUT: return "out";
	case GS_REPLAY_VERDICT: return "verdict";
	case GS_REPLAY_TRUNCATED: return "truncated";
	case GS_REPLAY_CLOSED: return "closed";
	default: return "?";
	}
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* ---- writing ---------------------------------------------------------------------- */

struct gs_replay {
	int fd;
	char *path;
	int64_t t0_ns;
	int64_t max_bytes;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t wake; /* the writer: work or stop */
	pthread_cond_t done; /* the tick thread: the writer finished a buffer */
	/* Under mu: */
	uint8_t *active, *spare;
	size_t active_len, spare_len;
	bool writing;        /* the writer owns spare */
	bool stop;
	int64_t size;        /* header plus every record accepted */
	struct gs_replay_stats st;
	int write_errno;
};

/* Writes all of buf to fd; 0 or errno. */
static int write_all(int fd, const uint8_t *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Under r->mu, the writer idle: the active buffer becomes the one to write, the other the active one. */
static void swap_locked(struct gs_replay *r)
{
	uint8_t *t = r->spare;
	r->spare = r->active;
	r->spare_len = r->active_len;
	r->active = t;
	r->active_len = 0;
	r->writing = true;
}

static void *writer_main(void *arg)
{
	struct gs_replay *r = arg;
	int64_t last_write = cc_clock_ns();
	pthread_mutex_lock(&r->mu);
	for (;;) {
		int64_t now = cc_clock_ns();
		/* A partly filled buffer goes out every FLUSH_MS (and at the stop), so a reader sees recent records. */
		if (!r->writing && r->active_len > 0 && (r->stop || now - last_write >= FLUSH_MS * 1000000LL))
			swap_locked(r);
		if (r->writing) {
			pthread_mutex_unlock(&r->mu);
			int err = r->write_errno ? 0 : write_all(r->fd, r->spare, r->spare_len);
			last_write = cc_clock_ns();
			pthread_mutex_lock(&r->mu);
			if (err && !r->write_errno) {
				r->write_errno = err;
				r->st.failed = true;
				cc_log_error("replay_log_failed", CC_LOG_STR("path", r->path), CC_LOG_STR("error", strerror(err)),
					     CC_LOG_INT("records", (int64_t)r->st.records));
			}
			r->writing = false;
			pthread_cond_broadcast(&r->done);
			continue;
		}
		if (r->stop)
			break;
		struct timespec until = cc_clock_timespec(now + FLUSH_MS * 1000000LL);
		(void)pthread_cond_timedwait(&r->wake, &r->mu, &until);
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

/* Appends one record under r->mu (held). The caller checked the cap. */
static void append_locked(struct gs_replay *r, uint8_t kind, uint8_t channel, uint16_t flags, uint64_t peer,
			  const void *data, size_t len)
{
	size_t need = 4 + GS_REPLAY_RECORD_HEAD + len;
	if (r->active_len + need > BUF_BYTES) {
		int64_t waited = 0;
		while (r->active_len + need > BUF_BYTES) {
			if (!r->writing) {
				/* Hand the full buffer to the writer and carry on in the empty one: no wait. */
				swap_locked(r);
				pthread_cond_signal(&r->wake);
				break;
			}
			/* The disk is a whole buffer behind: the only place the tick thread waits. */
			int64_t t = cc_clock_ns();
			pthread_cond_wait(&r->done, &r->mu);
			waited += cc_clock_ns() - t;
		}
		if (waited > 0) {
			r->st.waits++;
			if (waited > r->st.max_wait_ns)
				r->st.max_wait_ns = waited;
		}
	}
	uint8_t *p = r->active + r->active_len;
	int64_t t = cc_clock_ns() - r->t0_ns;
	put32(p, (uint32_t)(GS_REPLAY_RECORD_HEAD + len));
	p[4] = kind;
	p[5] = channel;
	put16(p + 6, flags);
	put64(p + 8, (uint64_t)(t < 0 ? 0 : t));
	put64(p + 16, peer);
	if (len)
		memcpy(p + 24, data, len);
	r->active_len += need;
	r->size += (int64_t)need;
	r->st.records++;
}

/* Writes a text record (truncated, closed) that the reserve makes room for. */
static void mark_locked(struct gs_replay *r, uint8_t kind, const char *text)
{
	append_locked(r, kind, 0, 0, 0, text, strlen(text));
}

/* Appends a record if the cap and the error state allow; at the cap, writes the truncated record once. */
static void append(struct gs_replay *r, uint8_t kind, uint8_t channel, uint16_t flags, uint64_t peer, const void *data,
		   size_t len)
{
	pthread_mutex_lock(&r->mu);
	if (r->st.truncated || r->write_errno) {
		r->st.not_written++;
	} else if (r->size + (int64_t)(4 + GS_REPLAY_RECORD_HEAD + len) > r->max_bytes - RESERVE) {
		char text[MARK_TEXT_MAX];
		snprintf(text, sizeof text,
			 "truncated: the cap of %lld bytes (--replay-log-max-bytes) was reached; later records were not written",
			 (long long)r->max_bytes);
		mark_locked(r, GS_REPLAY_TRUNCATED, text);
		r->st.truncated = true;
		r->st.not_written++;
		cc_log_warn("replay_log_truncated", CC_LOG_STR("path", r->path), CC_LOG_INT("max_bytes", r->max_bytes),
			    CC_LOG_INT("records", (int64_t)r->st.records));
	} else {
		append_locked(r, kind, channel, flags, peer, data, len);
	}
	pthread_mutex_unlock(&r->mu);
}

void gs_replay_packet(struct gs_replay *log, enum gs_replay_kind kind, uint64_t peer, uint8_t channel, const void *data,
		      size_t len)
{
	if (!log)
		return;
	uint16_t flags = 0;
	if (len > GS_REPLAY_MAX_PAYLOAD) {
		len = GS_REPLAY_MAX_PAYLOAD;
		flags |= GS_REPLAY_FLAG_CUT;
	}
	append(log, (uint8_t)kind, channel, flags, peer, data, len);
}

void gs_replay_verdict(struct gs_replay *log, uint64_t peer, const char *text)
{
	if (!log)
		return;
	char clean[GS_REPLAY_MAX_TEXT];
	size_t n = 0;
	for (const char *c = text ? text : ""; *c && n < sizeof clean; c++)
		clean[n++] = *c >= 0x20 && *c <= 0x7e ? *c : '?';
	if (n == 0)
		clean[n++] = '-';
	append(log, GS_REPLAY_VERDICT, 0, 0, peer, clean, n);
}

void gs_replay_verdictv(struct gs_replay *log, uint64_t peer, const char *fmt, va_list ap)
{
	if (!log)
		return;
	char text[GS_REPLAY_MAX_TEXT + 1];
	vsnprintf(text, sizeof text, fmt, ap);
	gs_replay_verdict(log, peer, text);
}

void gs_replay_verdictf(struct gs_replay *log, uint64_t peer, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	gs_replay_verdictv(log, peer, fmt, ap);
	va_end(ap);
}

void gs_replay_stats(struct gs_replay *log, struct gs_replay_stats *out)
{
	memset(out, 0, sizeof *out);
	if (!log)
		return;
	pthread_mutex_lock(&log->mu);
	*out = log->st;
	out->bytes = log->size;
	pthread_mutex_unlock(&log->mu);
}

static void replay_free(struct gs_replay *r)
{
	if (r->fd >= 0)
		close(r->fd);
	free(r->active);
	free(r->spare);
	free(r->path);
	free(r);
}

int gs_replay_open(const char *path, int64_t max_bytes, struct gs_replay **out, char *err, size_t errlen)
{
	*out = NULL;
	if (max_bytes < GS_REPLAY_MIN_MAX_BYTES) {
		snprintf(err, errlen, "--replay-log-max-bytes: %lld is below the minimum %d", (long long)max_bytes,
			 GS_REPLAY_MIN_MAX_BYTES);
		return CC_EINVAL;
	}
	struct gs_replay *r = calloc(1, sizeof *r);
	if (!r) {
		snprintf(err, errlen, "--replay-log: out of memory");
		return CC_ENOMEM;
	}
	r->fd = -1;
	r->max_bytes = max_bytes;
	r->path = strdup(path);
	r->active = malloc(BUF_BYTES);
	r->spare = malloc(BUF_BYTES);
	if (!r->path || !r->active || !r->spare) {
		replay_free(r);
		snprintf(err, errlen, "--replay-log: out of memory");
		return CC_ENOMEM;
	}
	/* O_EXCL: never overwrite a previous run's log; 0600: it holds join tokens. */
	r->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (r->fd < 0) {
		int e = errno;
		replay_free(r);
		if (e == EEXIST) {
			snprintf(err, errlen, "--replay-log: '%s' exists; a replay log is never overwritten (name a new file)",
				 path);
			return CC_ECONFLICT;
		}
		snprintf(err, errlen, "--replay-log: cannot create '%s': %s", path, strerror(e));
		return CC_EIO;
	}
	uint8_t h[GS_REPLAY_HEADER_BYTES] = { 0 };
	memcpy(h, GS_REPLAY_MAGIC, 8);
	put16(h + 8, GS_REPLAY_VERSION);
	put16(h + 10, GS_REPLAY_HEADER_BYTES);
	struct timeval tv;
	gettimeofday(&tv, NULL);
	put64(h + 16, (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000);
	int e = write_all(r->fd, h, sizeof h);
	if (e) {
		snprintf(err, errlen, "--replay-log: cannot write '%s': %s", path, strerror(e));
		(void)unlink(path);
		replay_free(r);
		return CC_EIO;
	}
	r->size = GS_REPLAY_HEADER_BYTES;
	r->t0_ns = cc_clock_ns();
	/* Every signal blocked in the writer: it may start before the service skeleton blocks SIGTERM, and must never take it. */
	sigset_t all, old;
	sigfillset(&all);
	bool started = pthread_mutex_init(&r->mu, NULL) == 0 && cc_clock_cond_init(&r->wake) == 0 &&
		       pthread_cond_init(&r->done, NULL) == 0 && pthread_sigmask(SIG_SETMASK, &all, &old) == 0;
	if (started) {
		started = pthread_create(&r->thread, NULL, writer_main, r) == 0;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	if (!started) {
		/* Start-up only, and the process is about to exit: the primitives are not unwound one by one. */
		snprintf(err, errlen, "--replay-log: cannot start the writer thread");
		replay_free(r);
		return CC_ENOMEM;
	}
	*out = r;
	return 0;
}

int gs_replay_close(struct gs_replay *log)
{
	if (!log)
		return 0;
	pthread_mutex_lock(&log->mu);
	if (!log->write_errno) {
		char text[MARK_TEXT_MAX];
		snprintf(text, sizeof text, "closed: %llu records written, %llu not written",
			 (unsigned long long)log->st.records + 1, (unsigned long long)log->st.not_written);
		mark_locked(log, GS_REPLAY_CLOSED, text);
	}
	log->stop = true;
	pthread_cond_signal(&log->wake);
	pthread_mutex_unlock(&log->mu);
	pthread_join(log->thread, NULL);
	int rc = log->write_errno ? CC_EIO : 0;
	if (close(log->fd) != 0 && rc == 0) {
		cc_log_error("replay_log_failed", CC_LOG_STR("path", log->path), CC_LOG_STR("error", strerror(errno)));
		rc = CC_EIO;
	}
	log->fd = -1;
	cc_log_info("replay_log_closed", CC_LOG_STR("path", log->path), CC_LOG_INT("records", (int64_t)log->st.records),
		    CC_LOG_INT("not_written", (int64_t)log->st.not_written), CC_LOG_INT("bytes", log->size),
		    CC_LOG_BOOL("truncated", log->st.truncated), CC_LOG_INT("writer_waits", (int64_t)log->st.waits),
		    CC_LOG_DBL("max_wait_ms", (double)log->st.max_wait_ns / 1e6));
	pthread_mutex_destroy(&log->mu);
	pthread_cond_destroy(&log->wake);
	pthread_cond_destroy(&log->done);
	replay_free(log);
	return rc;
}

/* ---- reading ---------------------------------------------------------------------- */

int gs_replay_reader_init(struct gs_replay_reader *rd, const uint8_t *buf, size_t len, char *why, size_t whylen)
{
	memset(rd, 0, sizeof *rd);
	if (len < GS_REPLAY_HEADER_BYTES) {
		snprintf(why, whylen, "not a replay log: %zu bytes, shorter than the %d-byte header", len,
			 GS_REPLAY_HEADER_BYTES);
		return CC_EINVAL;
	}
	if (memcmp(buf, GS_REPLAY_MAGIC, 8) != 0) {
		snprintf(why, whylen, "not a replay log: the first 8 bytes are not \"%s\"", GS_REPLAY_MAGIC);
		return CC_EINVAL;
	}
	uint16_t version = get16(buf + 8), hsize = get16(buf + 10);
	uint32_t reserved = get32(buf + 12);
	if (version != GS_REPLAY_VERSION) {
		snprintf(why, whylen, "replay log version %u; this reader knows version %d", version, GS_REPLAY_VERSION);
		return CC_EINVAL;
	}
	if (hsize != GS_REPLAY_HEADER_BYTES) {
		snprintf(why, whylen, "header size %u; version %d's is %d", hsize, GS_REPLAY_VERSION, GS_REPLAY_HEADER_BYTES);
		return CC_EINVAL;
	}
	if (reserved != 0) {
		snprintf(why, whylen, "header byte 12: reserved field is 0x%08x, must be 0", reserved);
		return CC_EINVAL;
	}
	rd->buf = buf;
	rd->len = len;
	rd->off = GS_REPLAY_HEADER_BYTES;
	rd->version = version;
	rd->opened_unix_ms = (int64_t)get64(buf + 16);
	return 0;
}

int gs_replay_next(struct gs_replay_reader *rd, struct gs_replay_record *rec, char *why, size_t whylen)
{
	size_t left = rd->len - rd->off;
	if (left == 0)
		return CC_ENOTFOUND;
	char at[64];
	snprintf(at, sizeof at, "record %llu at byte %zu", (unsigned long long)rd->index, rd->off);
	if (rd->closed) {
		snprintf(why, whylen, "%s: %zu bytes after the closed record (nothing may follow it)", at, left);
		return CC_EINVAL;
	}
	if (left < 4) {
		snprintf(why, whylen, "%s: the file ends inside the length prefix (%zu of 4 bytes): cut short", at, left);
		return CC_EINVAL;
	}
	const uint8_t *p = rd->buf + rd->off;
	uint32_t len = get32(p);
	if (len < GS_REPLAY_RECORD_HEAD) {
		snprintf(why, whylen, "%s: length %u is shorter than the %d-byte record head", at, len, GS_REPLAY_RECORD_HEAD);
		return CC_EINVAL;
	}
	if (len > GS_REPLAY_RECORD_HEAD + GS_REPLAY_MAX_PAYLOAD) {
		snprintf(why, whylen, "%s: length %u is over the cap of %d", at, len,
			 GS_REPLAY_RECORD_HEAD + GS_REPLAY_MAX_PAYLOAD);
		return CC_EINVAL;
	}
	if (len > left - 4) {
		snprintf(why, whylen, "%s: the file ends inside the record (%u bytes declared, %zu present): cut short", at,
			 len, left - 4);
		return CC_EINVAL;
	}
	uint8_t kind = p[4], channel = p[5];
	uint16_t flags = get16(p + 6);
	uint64_t t = get64(p + 8), peer = get64(p + 16);
	size_t n = len - GS_REPLAY_RECORD_HEAD;
	const uint8_t *data = p + 4 + GS_REPLAY_RECORD_HEAD;
	bool packet = kind == GS_REPLAY_IN || kind == GS_REPLAY_OUT;
	if (kind < GS_REPLAY_IN || kind > GS_REPLAY_CLOSED) {
		snprintf(why, whylen, "%s: unknown kind %u", at, kind);
		return CC_EINVAL;
	}
	if (rd->truncated && kind != GS_REPLAY_CLOSED) {
		snprintf(why, whylen, "%s: a record of kind %s after the truncated record (only closed may follow)", at,
			 gs_replay_kind_name(kind));
		return CC_EINVAL;
	}
	if (flags & ~GS_REPLAY_FLAG_CUT) {
		snprintf(why, whylen, "%s: reserved flag bits 0x%04x set", at, flags & ~GS_REPLAY_FLAG_CUT);
		return CC_EINVAL;
	}
	if ((flags & GS_REPLAY_FLAG_CUT) && (!packet || n != GS_REPLAY_MAX_PAYLOAD)) {
		snprintf(why, whylen, "%s: the cut flag on a record of kind %s with %zu bytes (only a %d-byte packet is cut)", at,
			 gs_replay_kind_name(kind), n, GS_REPLAY_MAX_PAYLOAD);
		return CC_EINVAL;
	}
	if (t < rd->last_t_ns) {
		snprintf(why, whylen, "%s: time goes backwards (%llu ns after %llu ns)", at, (unsigned long long)t,
			 (unsigned long long)rd->last_t_ns);
		return CC_EINVAL;
	}
	if (!packet) {
		if (channel != 0) {
			snprintf(why, whylen, "%s: channel %u on a %s record (must be 0)", at, channel, gs_replay_kind_name(kind));
			return CC_EINVAL;
		}
		if (kind != GS_REPLAY_VERDICT && peer != 0) {
			snprintf(why, whylen, "%s: peer %llu on a %s record (must be 0)", at, (unsigned long long)peer,
				 gs_replay_kind_name(kind));
			return CC_EINVAL;
		}
		if (n == 0 || n > GS_REPLAY_MAX_TEXT) {
			snprintf(why, whylen, "%s: %s text of %zu bytes (1..%d)", at, gs_replay_kind_name(kind), n,
				 GS_REPLAY_MAX_TEXT);
			return CC_EINVAL;
		}
		for (size_t i = 0; i < n; i++) {
			if (data[i] < 0x20 || data[i] > 0x7e) {
				snprintf(why, whylen, "%s: %s text byte %zu is 0x%02x, not printable ASCII", at,
					 gs_replay_kind_name(kind), i, data[i]);
				return CC_EINVAL;
			}
		}
	}
	memset(rec, 0, sizeof *rec);
	rec->kind = (enum gs_replay_kind)kind;
	rec->channel = channel;
	rec->flags = flags;
	rec->t_ns = t;
	rec->peer = peer;
	rec->data = data;
	rec->len = n;
	rec->index = rd->index;
	rec->offset = rd->off;
	rd->off += 4 + len;
	rd->index++;
	rd->last_t_ns = t;
	if (kind == GS_REPLAY_TRUNCATED)
		rd->truncated = true;
	else if (kind == GS_REPLAY_CLOSED)
		rd->closed = true;
	return 0;
}
