/*
 * Capped whole-file reads (sys/file.h): sizes around the cap, files that
 * are not regular (directories, FIFOs, pipes as process substitution hands
 * them over), missing and unreadable files, and bad arguments. Out
 * parameters stay untouched on failure, and ASan proves nothing leaks.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support.h"
#include "sys/cc.h"
#include "sys/file.h"

#include "sys/banned.h"

static char tmpdir[256];

static void make_tmpdir(void)
{
	snprintf(tmpdir, sizeof tmpdir, "%s/test_file.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void remove_tmpdir(void)
{
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

/* Writes n bytes of c (or text when not NULL) to tmpdir/name; path gets the full name. */
static void write_file(const char *name, const char *text, size_t n, char c, char *path, size_t len)
{
	snprintf(path, len, "%s/%s", tmpdir, name);
	FILE *f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	for (size_t i = 0; i < n; i++)
		ck_assert_int_ne(fputc(text ? text[i] : c, f), EOF);
	ck_assert_int_eq(fclose(f), 0);
}

/* Sizes around the cap, for a regular file (fstat knows its size). */
static const struct {
	size_t size, cap;
	int rc;
	long long big_size; /* err.size on CC_ETOOBIG */
} sizes[] = {
	{ 0, 1, 0, 0 },
	{ 1, 1, 0, 0 },
	{ 2, 1, CC_ETOOBIG, 2 },
	{ 4095, 4096, 0, 0 },
	{ 4096, 4096, 0, 0 },
	{ 4097, 4096, CC_ETOOBIG, 4097 },
	{ 65536, 65536, 0, 0 },
	{ 65537, 65536, CC_ETOOBIG, 65537 },
	{ 100000, 1 << 20, 0, 0 },
};

START_TEST(test_regular_sizes)
{
	char path[512], *out = (char *)"untouched";
	size_t len = 12345;
	struct cc_file_error err;
	make_tmpdir();
	write_file("f", NULL, sizes[_i].size, 'x', path, sizeof path);
	for (unsigned flags = 0; flags < 4; flags++) {
		int rc = cc_file_read(path, sizes[_i].cap, flags, &out, &len, &err);
		ck_assert_msg(rc == sizes[_i].rc, "case %d flags %u: rc %d", _i, flags, rc);
		if (rc == 0) {
			ck_assert_uint_eq(len, sizes[_i].size);
			ck_assert_int_eq(out[len], '\0');
			ck_assert(len == 0 || (out[0] == 'x' && out[len - 1] == 'x'));
			ck_assert_int_eq(err.failure, CC_FILE_OK);
			free(out);
			out = (char *)"untouched";
			len = 12345;
		} else {
			ck_assert_int_eq(err.failure, CC_FILE_TOO_BIG);
			ck_assert_int_eq(err.size, sizes[_i].big_size);
			ck_assert_str_eq(out, "untouched");
			ck_assert_uint_eq(len, 12345);
		}
	}
	remove_tmpdir();
}
END_TEST

/* Contents come back byte for byte, NULs included, with a NUL after them. */
START_TEST(test_binary_contents)
{
	static const char bytes[] = { 'a', '\0', 'b', '\xff', '\n' };
	char path[512], *out = NULL;
	size_t len = 0;
	make_tmpdir();
	write_file("bin", bytes, sizeof bytes, 0, path, sizeof path);
	ck_assert_int_eq(cc_file_read(path, 64, CC_FILE_SECRET, &out, &len, NULL), 0);
	ck_assert_uint_eq(len, sizeof bytes);
	ck_assert(memcmp(out, bytes, sizeof bytes) == 0);
	ck_assert_int_eq(out[len], '\0');
	free(out);
	remove_tmpdir();
}
END_TEST

/* Missing, a directory (refused up front or failing at read), unreadable. */
START_TEST(test_not_readable)
{
	char path[512], *out = NULL;
	size_t len = 0;
	struct cc_file_error err;
	make_tmpdir();
	snprintf(path, sizeof path, "%s/missing", tmpdir);
	ck_assert_int_eq(cc_file_read(path, 10, 0, &out, &len, &err), CC_EIO);
	ck_assert_int_eq(err.failure, CC_FILE_OPEN);
	ck_assert_int_eq(err.errnum, ENOENT);

	ck_assert_int_eq(cc_file_read(tmpdir, 10, 0, &out, &len, &err), CC_EIO);
	ck_assert_int_eq(err.failure, CC_FILE_READ);
	ck_assert_int_eq(err.errnum, EISDIR);
	ck_assert_int_eq(cc_file_read(tmpdir, 10, CC_FILE_REGULAR_ONLY, &out, &len, &err), CC_EIO);
	ck_assert_int_eq(err.failure, CC_FILE_NOT_REGULAR);
	ck_assert_int_eq(err.errnum, 0);

	if (geteuid() != 0) { /* root reads anything */
		write_file("locked", "k", 1, 0, path, sizeof path);
		ck_assert_int_eq(chmod(path, 0), 0);
		ck_assert_int_eq(cc_file_read(path, 10, 0, &out, &len, &err), CC_EIO);
		ck_assert_int_eq(err.failure, CC_FILE_OPEN);
		ck_assert_int_eq(err.errnum, EACCES);
	}
	ck_assert_ptr_null(out);
	remove_tmpdir();
}
END_TEST

/* A FIFO nobody writes to: refused at once with REGULAR_ONLY (no hang in open or read). */
START_TEST(test_fifo_refused)
{
	char path[512], *out = NULL;
	size_t len = 0;
	struct cc_file_error err;
	make_tmpdir();
	snprintf(path, sizeof path, "%s/fifo", tmpdir);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	ck_assert_int_eq(cc_file_read(path, 10, CC_FILE_REGULAR_ONLY, &out, &len, &err), CC_EIO);
	ck_assert_int_eq(err.failure, CC_FILE_NOT_REGULAR);
	ck_assert_ptr_null(out);
	remove_tmpdir();
}
END_TEST

/*
 * A pipe (what `--NAME-file=<(...)` hands over as /dev/fd/N): fstat knows
 * no size, so the buffer grows while reading and the cap is found by
 * reading one byte past it.
 */
static const struct {
	size_t size, cap;
	int rc;
} pipes[] = {
	{ 0, 10, 0 },
	{ 10, 10, 0 },
	{ 11, 10, CC_ETOOBIG },
	{ 10000, 20000, 0 }, /* grows past the first 4 KiB chunk twice */
	{ 10000, 10000, 0 },
	{ 10000, 9999, CC_ETOOBIG },
};

START_TEST(test_pipe_table)
{
	int fds[2];
	char path[64], *out = NULL, *data = malloc(pipes[_i].size + 1);
	size_t len = 0;
	struct cc_file_error err;
	ck_assert_ptr_nonnull(data);
	for (size_t i = 0; i < pipes[_i].size; i++)
		data[i] = (char)('a' + i % 26);
	ck_assert_int_eq(pipe(fds), 0);
	/* Under the pipe's 64 KiB buffer: written in full before reading. */
	ck_assert_int_eq(write(fds[1], data, pipes[_i].size), (ssize_t)pipes[_i].size);
	ck_assert_int_eq(close(fds[1]), 0);
	snprintf(path, sizeof path, "/dev/fd/%d", fds[0]);
	int rc = cc_file_read(path, pipes[_i].cap, CC_FILE_SECRET, &out, &len, &err);
	ck_assert_msg(rc == pipes[_i].rc, "case %d: rc %d (failure %d)", _i, rc, err.failure);
	if (rc == 0) {
		ck_assert_uint_eq(len, pipes[_i].size);
		ck_assert(memcmp(out, data, len) == 0);
		ck_assert_int_eq(out[len], '\0');
		free(out);
	} else {
		ck_assert_int_eq(err.failure, CC_FILE_TOO_BIG);
		ck_assert_int_eq(err.size, -1);
		ck_assert_ptr_null(out);
	}
	/* REGULAR_ONLY refuses the same pipe without reading it. */
	ck_assert_int_eq(cc_file_read(path, pipes[_i].cap, CC_FILE_REGULAR_ONLY, &out, &len, &err), CC_EIO);
	ck_assert_int_eq(err.failure, CC_FILE_NOT_REGULAR);
	close(fds[0]);
	free(data);
}
END_TEST

START_TEST(test_bad_arguments)
{
	char *out = NULL;
	size_t len = 0;
	struct cc_file_error err;
	ck_assert_int_eq(cc_file_read(NULL, 10, 0, &out, &len, &err), CC_EINVAL);
	ck_assert_int_eq(err.errnum, EINVAL);
	ck_assert_int_eq(cc_file_read("/dev/null", 0, 0, &out, &len, &err), CC_EINVAL);
	ck_assert_int_eq(cc_file_read("/dev/null", 10, 0, NULL, &len, NULL), CC_EINVAL);
	ck_assert_int_eq(cc_file_read("/dev/null", 10, 0, &out, NULL, &err), CC_EINVAL);
	/* A NULL err is allowed on success too. */
	ck_assert_int_eq(cc_file_read("/dev/null", 10, 0, &out, &len, NULL), 0);
	ck_assert_uint_eq(len, 0);
	free(out);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("file");
	TCase *tc = tcase_create("file");
	tcase_add_loop_test(tc, test_regular_sizes, 0, CC_ARRAY_LEN(sizes));
	tcase_add_test(tc, test_binary_contents);
	tcase_add_test(tc, test_not_readable);
	tcase_add_test(tc, test_fifo_refused);
	tcase_add_loop_test(tc, test_pipe_table, 0, CC_ARRAY_LEN(pipes));
	tcase_add_test(tc, test_bad_arguments);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
