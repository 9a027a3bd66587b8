/*
 * replay.h - cc-gameserver's replay log (SPEC 11 test aid, issue 12): every
 * wire packet in both directions and every verdict the server reached on a
 * peer, in one capped binary file; and the reader cc-replay-dump and the
 * fuzzer use.
 *
 * Writing (--replay-log=FILE, --replay-log-max-bytes=N). The tick thread
 * calls gs_replay_packet() for each packet it received or sent (as the
 * application saw it: with --net-sim-* on, after the simulated network)
 * and gs_replay_verdict() wherever it refuses a message, skips or drops a
 * packet, or kicks a peer. A record is copied into a memory buffer (256
 * KiB) under a mutex; a writer thread writes full buffers, and whatever
 * is buffered every 200 ms, so a file write never runs on the tick thread.
 * The tick thread waits only if the disk has fallen a whole buffer behind
 * (counted: stats.waits, stats.max_wait_ns).
 *
 * The file is created with mode 0600 (it holds join tokens and resume
 * keys) and never overwritten: an existing FILE is a start-up error, so a
 * restart cannot destroy the log of the incident it is about.
 *
 * The cap: the file never grows past max_bytes. When the next record would
 * not fit, recording stops: a "truncated" record is written (room for it
 * and the closing record is kept aside), the server logs
 * replay_log_truncated once, and later records are only counted. A write
 * error does the same (replay_log_failed). gs_replay_close() writes a
 * "closed" record saying how many records were written and how many were
 * not, so a reader tells a complete log from one cut short.
 *
 * Format, version 1. All integers little-endian.
 *
 *   header, 24 bytes:
 *     0  8  magic "CCREPLAY"
 *     8  2  version (1)
 *    10  2  header size (24)
 *    12  4  reserved, 0
 *    16  8  wall clock at open, unix milliseconds (informational only)
 *   then records, each:
 *     0  4  length L of the rest of the record (20 .. 20 + 65536)
 *     4  1  kind: 1 packet in (peer to server), 2 packet out (server to
 *              peer), 3 verdict, 4 truncated (the cap was reached), 5 closed
 *     5  1  ENet channel (packets; 0 for the other kinds)
 *     6  2  flags: bit 0 = the packet was longer than 65536 bytes and is cut
 *              there (packets only); the other bits are 0
 *     8  8  time: monotonic nanoseconds since the log was opened; never
 *              decreases from one record to the next
 *    16  8  peer: the server's peer number (the "peer" of its log lines;
 *              never reused within a run); 0 = none (truncated, closed, or a
 *              packet from a peer already kicked)
 *    24  n  payload, n = L - 20: the packet's bytes; for the other kinds a
 *              text of 1..1024 bytes of printable ASCII (0x20-0x7e):
 *              verdicts read "refused <fault kind>: <decoder's fault text>",
 *              "skipped: ...", "kicked <reason>: <detail>", "dropped
 *              <why>: ..."
 *   A truncated record may be followed only by the closed record; nothing
 *   follows the closed record.
 *
 * Reading: gs_replay_reader_init() over the whole file in memory, then
 * gs_replay_next() per record. Pure: no allocation, no I/O; it refuses a
 * short, foreign, newer-version, cut-off or inconsistent file with a
 * message naming the record, its byte offset and what is wrong.
 *
 * Ownership: struct gs_replay is the opener's until gs_replay_close()
 * (which frees it). Records handed to the writer are copied. A reader's
 * records point into the caller's buffer. Thread-safety: one thread (the
 * tick thread) writes records; the writer thread is internal.
 */
#ifndef CC_GAMESERVER_REPLAY_H
#define CC_GAMESERVER_REPLAY_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sys/cc.h"

#define GS_REPLAY_MAGIC "CCREPLAY"
#define GS_REPLAY_VERSION 1
#define GS_REPLAY_HEADER_BYTES 24
#define GS_REPLAY_RECORD_HEAD 20 /* kind .. peer, after the length */
#define GS_REPLAY_MAX_PAYLOAD 65536
#define GS_REPLAY_MAX_TEXT 1024
#define GS_REPLAY_DEFAULT_MAX_BYTES (64LL * 1024 * 1024)
#define GS_REPLAY_MIN_MAX_BYTES 4096 /* room for the header, the truncated and the closed records, and some */
#define GS_REPLAY_FLAG_CUT 0x0001

enum gs_replay_kind {
	GS_REPLAY_IN = 1,
	GS_REPLAY_OUT = 2,
	GS_REPLAY_VERDICT = 3,
	GS_REPLAY_TRUNCATED = 4,
	GS_REPLAY_CLOSED = 5,
};

/* "in", "out", "verdict", "truncated", "closed"; "?" otherwise. */
const char *gs_replay_kind_name(int kind);

/* ---- writing ----------------------------------------------------------------- */

struct gs_replay;

struct gs_replay_stats {
	uint64_t records;    /* written or buffered, the header not counted */
	uint64_t not_written; /* offered after the cap or a write error */
	int64_t bytes;       /* file size once flushed */
	bool truncated;      /* the cap was reached */
	bool failed;         /* a write failed */
	uint64_t waits;      /* appends that waited for the writer thread */
	int64_t max_wait_ns; /* the longest of those waits */
};

/*
 * Creates path (0600, O_EXCL: an existing file is refused) and writes the
 * header. max_bytes >= GS_REPLAY_MIN_MAX_BYTES. Returns 0 and *out, or
 * CC_EINVAL (bad max_bytes), CC_ECONFLICT (the file exists), CC_EIO (cannot
 * create or write; the reason in err) with err set to one line naming path.
 */
int gs_replay_open(const char *path, int64_t max_bytes, struct gs_replay **out, char *err, size_t errlen) CC_MUST_CHECK;

/* One packet (kind GS_REPLAY_IN or GS_REPLAY_OUT). NULL log: no-op. */
void gs_replay_packet(struct gs_replay *log, enum gs_replay_kind kind, uint64_t peer, uint8_t channel,
		      const void *data, size_t len);

/* One verdict; bytes outside 0x20-0x7e become '?', cut at GS_REPLAY_MAX_TEXT, "" becomes "-". NULL log: no-op. */
void gs_replay_verdict(struct gs_replay *log, uint64_t peer, const char *text);
void gs_replay_verdictf(struct gs_replay *log, uint64_t peer, const char *fmt, ...) CC_PRINTF(3, 4);
/* The same with a va_list, for callers that wrap it in their own printf-like function. */
void gs_replay_verdictv(struct gs_replay *log, uint64_t peer, const char *fmt, va_list ap);

void gs_replay_stats(struct gs_replay *log, struct gs_replay_stats *out);

/*
 * Writes the closed record, flushes, closes the file, frees log. Returns 0,
 * or CC_EIO when any write failed (logged once when it happened). NULL: 0.
 */
int gs_replay_close(struct gs_replay *log);

/* ---- reading ------------------------------------------------------------------- */

struct gs_replay_record {
	enum gs_replay_kind kind;
	uint8_t channel;
	uint16_t flags;
	uint64_t t_ns;
	uint64_t peer;
	const uint8_t *data; /* payload: packet bytes or text (not NUL-terminated) */
	size_t len;
	uint64_t index;      /* 0-based record number */
	size_t offset;       /* byte offset of its length prefix in the file */
};

struct gs_replay_reader {
	const uint8_t *buf;
	size_t len, off;
	uint16_t version;
	int64_t opened_unix_ms;
	uint64_t index;
	uint64_t last_t_ns;
	bool truncated; /* a truncated record was read */
	bool closed;    /* the closed record was read */
};

/* Checks the header of the len bytes at buf. 0, or CC_EINVAL with why ("not a replay log: ..."). */
int gs_replay_reader_init(struct gs_replay_reader *rd, const uint8_t *buf, size_t len, char *why, size_t whylen) CC_MUST_CHECK;

/*
 * The next record: 0 with *rec; CC_ENOTFOUND at the end of the file (a
 * clean end: rd->closed says whether the log was closed); CC_EINVAL with
 * why ("record 17 at byte 1234: ...") for a record that breaks the format.
 * After CC_EINVAL the reader stays at that record.
 */
int gs_replay_next(struct gs_replay_reader *rd, struct gs_replay_record *rec, char *why, size_t whylen) CC_MUST_CHECK;

#endif
