/*
 * gameserver/replay: cc-gameserver's replay log, written and read back.
 *
 * Round trip: packets both ways (empty, small, the wire maximum, one over
 * 64 KiB that is cut), verdicts (control bytes made '?', "" made "-"),
 * across several writer buffers, read back equal and in order, ending in
 * the closed record. The file is 0600 and never overwritten. The cap: the
 * file stays within it, ends truncated + closed, and the rest is counted.
 * The reader refuses every cut-off prefix that does not end on a record
 * boundary, and each kind of hostile file, with a precise message.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support.h"
#include "sys/clock.h"
#include "sys/log.h"
#include "../../gameserver/replay.h"
#include "sys/banned.h"

static char dir[] = "/tmp/cc-test-replay.XXXXXX";
static char path[256];
static int n_path;

static void setup(void)
{
	char *d = mkdtemp(dir);
	ck_assert_ptr_nonnull(d);
}

/* Tests run in forked children: remove whatever files they left, by listing the directory. */
static void teardown(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		char p[600];
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
		unlink(p);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

static const char *new_path(void)
{
	snprintf(path, sizeof path, "%s/log.%d.%d", dir, (int)getpid(), n_path++); /* forked tests: the pid keeps names apart */
	return path;
}

static uint8_t *slurp(const char *p, size_t *len)
{
	FILE *f = fopen(p, "rb");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	long n = ftell(f);
	ck_assert_int_ge(n, 0);
	rewind(f);
	uint8_t *buf = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static struct gs_replay *open_log(const char *p, int64_t max)
{
	struct gs_replay *r = NULL;
	char err[256];
	int rc = gs_replay_open(p, max, &r, err, sizeof err);
	ck_assert_msg(rc == 0, "gs_replay_open: %s", err);
	return r;
}

/* Reads every record of buf into recs; returns the count; fails the test on a format error. */
static size_t read_all(const uint8_t *buf, size_t len, struct gs_replay_record *recs, size_t cap, struct gs_replay_reader *rd)
{
	char why[256];
	ck_assert_msg(gs_replay_reader_init(rd, buf, len, why, sizeof why) == 0, "header: %s", why);
	size_t n = 0;
	int rc;
	struct gs_replay_record r;
	while ((rc = gs_replay_next(rd, &r, why, sizeof why)) == 0) {
		if (n < cap)
			recs[n] = r;
		n++;
	}
	ck_assert_msg(rc == CC_ENOTFOUND, "record %zu: %s", n, why);
	return n;
}

START_TEST(round_trip)
{
	const char *p = new_path();
	struct gs_replay *r = open_log(p, GS_REPLAY_DEFAULT_MAX_BYTES);
	static uint8_t big[GS_REPLAY_MAX_PAYLOAD + 10];
	for (size_t i = 0; i < sizeof big; i++)
		big[i] = (uint8_t)(i * 7);
	gs_replay_packet(r, GS_REPLAY_IN, 1, 0, "\x01\x00hello", 7);
	gs_replay_packet(r, GS_REPLAY_OUT, 1, 2, NULL, 0);
	gs_replay_packet(r, GS_REPLAY_IN, 2, 1, big, 1200);
	gs_replay_packet(r, GS_REPLAY_OUT, 3, 0, big, sizeof big);
	gs_replay_verdict(r, 2, "refused truncated: input: truncated\x07 at byte 5\n");
	gs_replay_verdict(r, 4, "");
	gs_replay_verdictf(r, 5, "kicked %s: %d bad messages", "malformed", 9);
	/* Several buffers' worth: 1,000 packets of 1,200 bytes = 1.2 MB through 256 KiB buffers. */
	for (int i = 0; i < 1000; i++) {
		big[0] = (uint8_t)i;
		gs_replay_packet(r, i % 2 ? GS_REPLAY_IN : GS_REPLAY_OUT, (uint64_t)(10 + i % 6), (uint8_t)(i % 3), big, 1200);
	}
	struct gs_replay_stats st;
	gs_replay_stats(r, &st);
	ck_assert_uint_eq(st.records, 1007);
	ck_assert(!st.truncated && !st.failed);
	ck_assert_int_eq(gs_replay_close(r), 0);

	struct stat sb;
	ck_assert_int_eq(stat(p, &sb), 0);
	ck_assert_int_eq(sb.st_mode & 0777, 0600);
	size_t len;
	uint8_t *buf = slurp(p, &len);
	ck_assert_int_eq((int64_t)len, st.bytes + 4 + GS_REPLAY_RECORD_HEAD + (int64_t)strlen("closed: 1008 records written, 0 not written"));
	static struct gs_replay_record recs[1100];
	struct gs_replay_reader rd;
	size_t n = read_all(buf, len, recs, 1100, &rd);
	ck_assert_uint_eq(n, 1008);
	ck_assert(rd.closed && !rd.truncated);
	ck_assert_int_eq(rd.version, 1);
	ck_assert_int_gt(rd.opened_unix_ms, 1700000000000LL);

	ck_assert_int_eq(recs[0].kind, GS_REPLAY_IN);
	ck_assert_uint_eq(recs[0].peer, 1);
	ck_assert_uint_eq(recs[0].len, 7);
	ck_assert_mem_eq(recs[0].data, "\x01\x00hello", 7);
	ck_assert_int_eq(recs[1].kind, GS_REPLAY_OUT);
	ck_assert_uint_eq(recs[1].channel, 2);
	ck_assert_uint_eq(recs[1].len, 0);
	ck_assert_uint_eq(recs[2].channel, 1);
	ck_assert_uint_eq(recs[2].len, 1200);
	ck_assert_mem_eq(recs[2].data + 1, big + 1, 1199);
	ck_assert_uint_eq(recs[3].len, GS_REPLAY_MAX_PAYLOAD);
	ck_assert_uint_eq(recs[3].flags, GS_REPLAY_FLAG_CUT);
	ck_assert_int_eq(recs[3].data[65535], (uint8_t)(65535 * 7));
	ck_assert_int_eq(recs[4].kind, GS_REPLAY_VERDICT);
	ck_assert_uint_eq(recs[4].peer, 2);
	char text[128];
	snprintf(text, sizeof text, "%.*s", (int)recs[4].len, (const char *)recs[4].data);
	ck_assert_str_eq(text, "refused truncated: input: truncated? at byte 5?");
	snprintf(text, sizeof text, "%.*s", (int)recs[5].len, (const char *)recs[5].data);
	ck_assert_str_eq(text, "-");
	snprintf(text, sizeof text, "%.*s", (int)recs[6].len, (const char *)recs[6].data);
	ck_assert_str_eq(text, "kicked malformed: 9 bad messages");
	for (size_t i = 7; i < 1007; i++) {
		ck_assert_uint_eq(recs[i].len, 1200);
		ck_assert_uint_eq(recs[i].data[0], (uint8_t)(i - 7));
		ck_assert_uint_eq(recs[i].peer, 10 + (i - 7) % 6);
		ck_assert_uint_ge(recs[i].t_ns, recs[i - 1].t_ns);
		ck_assert_uint_eq(recs[i].index, i);
	}
	ck_assert_int_eq(recs[1007].kind, GS_REPLAY_CLOSED);
	snprintf(text, sizeof text, "%.*s", (int)recs[1007].len, (const char *)recs[1007].data);
	ck_assert_str_eq(text, "closed: 1008 records written, 0 not written");
	free(buf);
}
END_TEST

START_TEST(never_overwrites)
{
	const char *p = new_path();
	struct gs_replay *r = open_log(p, 8192);
	ck_assert_int_eq(gs_replay_close(r), 0);
	char err[256];
	struct gs_replay *again = NULL;
	ck_assert_int_eq(gs_replay_open(p, 8192, &again, err, sizeof err), CC_ECONFLICT);
	ck_assert_ptr_null(again);
	ck_assert_ptr_nonnull(strstr(err, "exists; a replay log is never overwritten"));
	ck_assert_int_eq(gs_replay_open(new_path(), 100, &again, err, sizeof err), CC_EINVAL);
	ck_assert_str_eq(err, "--replay-log-max-bytes: 100 is below the minimum 4096");
	ck_assert_int_eq(gs_replay_open("/nonexistent-dir/x", 8192, &again, err, sizeof err), CC_EIO);
	ck_assert_ptr_nonnull(strstr(err, "cannot create '/nonexistent-dir/x'"));
}
END_TEST

START_TEST(capped)
{
	const char *p = new_path();
	struct gs_replay *r = open_log(p, 4096);
	uint8_t pkt[100] = { 0 };
	for (int i = 0; i < 100; i++)
		gs_replay_packet(r, GS_REPLAY_IN, 1, 1, pkt, sizeof pkt);
	gs_replay_verdict(r, 1, "after the cap");
	struct gs_replay_stats st;
	gs_replay_stats(r, &st);
	ck_assert(st.truncated);
	ck_assert_int_eq(gs_replay_close(r), 0);
	size_t len;
	uint8_t *buf = slurp(p, &len);
	ck_assert_uint_le(len, 4096);
	ck_assert_uint_gt(len, 3000);
	static struct gs_replay_record recs[200];
	struct gs_replay_reader rd;
	size_t n = read_all(buf, len, recs, 200, &rd);
	ck_assert(rd.truncated && rd.closed);
	ck_assert_int_eq(recs[n - 2].kind, GS_REPLAY_TRUNCATED);
	ck_assert_int_eq(recs[n - 1].kind, GS_REPLAY_CLOSED);
	size_t packets = n - 2;
	for (size_t i = 0; i < packets; i++)
		ck_assert_int_eq(recs[i].kind, GS_REPLAY_IN);
	char text[256];
	snprintf(text, sizeof text, "%.*s", (int)recs[n - 2].len, (const char *)recs[n - 2].data);
	ck_assert_str_eq(text, "truncated: the cap of 4096 bytes (--replay-log-max-bytes) was reached; later records were not written");
	snprintf(text, sizeof text, "%.*s", (int)recs[n - 1].len, (const char *)recs[n - 1].data);
	char want[128];
	snprintf(want, sizeof want, "closed: %zu records written, %zu not written", packets + 2, 101 - packets);
	ck_assert_str_eq(text, want);
	free(buf);
}
END_TEST

/* A small valid log in memory (header + records), for the refusal cases. */
static size_t sample(uint8_t *out, size_t cap)
{
	const char *p = new_path();
	struct gs_replay *r = open_log(p, 1 << 20);
	gs_replay_packet(r, GS_REPLAY_IN, 7, 0, "\x01\x00\x01\x00", 4);
	gs_replay_verdict(r, 7, "refused truncated: hello: truncated");
	gs_replay_packet(r, GS_REPLAY_OUT, 7, 0, "\x03\x00", 2);
	ck_assert_int_eq(gs_replay_close(r), 0);
	size_t len;
	uint8_t *buf = slurp(p, &len);
	ck_assert_uint_le(len, cap);
	memcpy(out, buf, len);
	free(buf);
	return len;
}

/* The reader's verdict on buf: "" when it reads to a clean end. */
static const char *verdict(const uint8_t *buf, size_t len)
{
	static char why[512];
	struct gs_replay_reader rd;
	struct gs_replay_record r;
	why[0] = '\0';
	if (gs_replay_reader_init(&rd, buf, len, why, sizeof why) != 0)
		return why;
	int rc;
	while ((rc = gs_replay_next(&rd, &r, why, sizeof why)) == 0)
		ck_assert_uint_le(r.offset + 4 + GS_REPLAY_RECORD_HEAD + r.len, len);
	if (rc == CC_ENOTFOUND)
		return "";
	ck_assert_int_eq(rc, CC_EINVAL);
	ck_assert_msg(why[0], "CC_EINVAL without a message");
	return why;
}

START_TEST(every_cut_refused_or_clean)
{
	uint8_t buf[512];
	size_t len = sample(buf, sizeof buf);
	/* Record boundaries: 24, then each record's 4 + length. */
	size_t bounds[8], nb = 0, off = GS_REPLAY_HEADER_BYTES;
	while (off < len) {
		bounds[nb++] = off;
		off += 4 + (size_t)(buf[off] | buf[off + 1] << 8);
	}
	ck_assert_uint_eq(off, len);
	ck_assert_uint_eq(nb, 4);
	for (size_t cut = 0; cut < len; cut++) {
		bool boundary = false;
		for (size_t b = 0; b < nb; b++)
			boundary |= bounds[b] == cut;
		const char *v = verdict(buf, cut);
		if (boundary)
			ck_assert_msg(v[0] == '\0', "cut at record boundary %zu refused: %s", cut, v);
		else
			ck_assert_msg(v[0] != '\0', "a file cut at byte %zu was accepted", cut);
	}
	ck_assert_str_eq(verdict(buf, 10), "not a replay log: 10 bytes, shorter than the 24-byte header");
	ck_assert_str_eq(verdict(buf, 26), "record 0 at byte 24: the file ends inside the length prefix (2 of 4 bytes): cut short");
	ck_assert_str_eq(verdict(buf, 30), "record 0 at byte 24: the file ends inside the record (24 bytes declared, 2 present): cut short");
	ck_assert_str_eq(verdict(buf, len), "");
}
END_TEST

START_TEST(hostile_files_refused)
{
	uint8_t good[512], b[600];
	size_t len = sample(good, sizeof good);
	size_t r0 = GS_REPLAY_HEADER_BYTES; /* in, 4 bytes: 28 in all */
	size_t r1 = r0 + 28;                /* verdict, 35 bytes of text: 59 */
	size_t r2 = r1 + 59;                /* out, 2 bytes: 26 */
	size_t r3 = r2 + 26;                /* closed, 40 bytes of text: 64 */
	ck_assert_uint_eq(r3 + 64, len);
	/* A record: +0 length, +4 kind, +5 channel, +6 flags, +8 time, +16 peer, +24 payload. */
#define MUT(stmt, want)                                                                          \
	do {                                                                                     \
		memcpy(b, good, len);                                                            \
		size_t blen = len;                                                               \
		stmt;                                                                            \
		const char *v = verdict(b, blen);                                                \
		ck_assert_msg(strncmp(v, want, strlen(want)) == 0, "%s: got '%s', want '%s'", #stmt, v, want); \
	} while (0)
	MUT(b[0] = 'X', "not a replay log: the first 8 bytes are not \"CCREPLAY\"");
	MUT(b[8] = 2, "replay log version 2; this reader knows version 1");
	MUT(b[10] = 32, "header size 32; version 1's is 24");
	MUT(b[13] = 1, "header byte 12: reserved field is 0x00000100, must be 0");
	MUT(b[r0] = 5, "record 0 at byte 24: length 5 is shorter than the 20-byte record head");
	MUT(memset(b + r0, 0xff, 4), "record 0 at byte 24: length 4294967295 is over the cap of 65556");
	MUT(b[r0 + 4] = 9, "record 0 at byte 24: unknown kind 9");
	MUT(b[r0 + 4] = 0, "record 0 at byte 24: unknown kind 0");
	MUT(b[r0 + 6] = 2, "record 0 at byte 24: reserved flag bits 0x0002 set");
	MUT(b[r0 + 6] = 1, "record 0 at byte 24: the cut flag on a record of kind in with 4 bytes (only a 65536-byte packet is cut)");
	MUT(b[r1 + 5] = 1, "record 1 at byte 52: channel 1 on a verdict record (must be 0)");
	MUT(b[r1 + 24 + 3] = 0x07, "record 1 at byte 52: verdict text byte 3 is 0x07, not printable ASCII");
	MUT(b[r0 + 15] = 0x7f, "record 1 at byte 52: time goes backwards (");
	MUT(b[r1 + 15] = 0x7f, "record 2 at byte 111: time goes backwards (");
	MUT(b[r1 + 4] = GS_REPLAY_TRUNCATED, "record 1 at byte 52: peer 7 on a truncated record (must be 0)");
	MUT((b[r1 + 4] = GS_REPLAY_TRUNCATED, memset(b + r1 + 16, 0, 8)),
	    "record 2 at byte 111: a record of kind out after the truncated record (only closed may follow)");
	MUT((memcpy(b + len, good + r0, 28), blen = len + 28),
	    "record 4 at byte 201: 28 bytes after the closed record (nothing may follow it)");
	MUT((b[r3] = 20, blen = r3 + 24), "record 3 at byte 137: closed text of 0 bytes (1..1024)");
	MUT(b[r3 + 4 + 20] = 0, "record 3 at byte 137: closed text byte 0 is 0x00, not printable ASCII");
#undef MUT
}
END_TEST

START_TEST(append_cost)
{
	/* What the tick thread pays per record: a 3v3 tick's traffic, 100,000 times (ASan build: an upper bound). */
	const char *p = new_path();
	struct gs_replay *r = open_log(p, GS_REPLAY_DEFAULT_MAX_BYTES);
	uint8_t input[40] = { 0 }, snap[300] = { 0 };
	const int ticks = 3000;
	int64_t t0 = cc_clock_ns();
	long records = 0;
	for (int t = 0; t < ticks; t++) {
		for (int peer = 1; peer <= 6; peer++, records++)
			gs_replay_packet(r, GS_REPLAY_IN, (uint64_t)peer, 1, input, sizeof input);
		if (t % 3 == 0)
			for (int peer = 1; peer <= 6; peer++, records++)
				gs_replay_packet(r, GS_REPLAY_OUT, (uint64_t)peer, 2, snap, sizeof snap);
	}
	int64_t ns = cc_clock_ns() - t0;
	struct gs_replay_stats st;
	gs_replay_stats(r, &st);
	ck_assert_int_eq(gs_replay_close(r), 0);
	printf("replay append: %.0f ns per record, %.2f us per 3v3 tick (%ld records, %lld bytes, %llu waits for the writer)\n",
	       (double)ns / (double)records, (double)ns / ticks / 1000.0, records, (long long)st.bytes,
	       (unsigned long long)st.waits);
	/* A tick is 16.7 ms; even under ASan on a loaded machine the log must stay far below it. */
	ck_assert_int_lt(ns / ticks, 500 * 1000);
}
END_TEST

static Suite *replay_suite(void)
{
	Suite *s = suite_create("replay");
	TCase *tc = tcase_create("core");
	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, round_trip);
	tcase_add_test(tc, never_overwrites);
	tcase_add_test(tc, capped);
	tcase_add_test(tc, every_cut_refused_or_clean);
	tcase_add_test(tc, hostile_files_refused);
	tcase_add_test(tc, append_cost);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	cc_log_init("test_replay", CC_LOG_ERROR);
	return cc_test_run_suite(replay_suite());
}
