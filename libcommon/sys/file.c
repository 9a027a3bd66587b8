/* Capped whole-file reads (file.h). */
#include "sys/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys/banned.h"

#define FIRST_CHUNK 4096 /* first buffer when the size is not known up front */

/* Frees buf (size bytes), wiping it first when secret. NULL is a no-op. */
static void drop(char *buf, size_t size, bool secret)
{
	if (!buf)
		return;
	if (secret)
		explicit_bzero(buf, size);
	free(buf);
}

/*
 * Grows *buf (*size bytes, used of them filled) to new_size. realloc would
 * leave a copy of a secret behind in freed memory, so a secret moves by
 * hand and the old buffer is wiped. Returns false (buffer untouched) when
 * out of memory.
 */
static bool grow(char **buf, size_t *size, size_t used, size_t new_size, bool secret)
{
	char *bigger = malloc(new_size);
	if (!bigger)
		return false;
	memcpy(bigger, *buf, used);
	drop(*buf, *size, secret);
	*buf = bigger;
	*size = new_size;
	return true;
}

static int fail(struct cc_file_error *err, enum cc_file_failure failure, int errnum, long long size)
{
	err->failure = failure;
	err->errnum = errnum;
	err->size = size;
	switch (failure) {
	case CC_FILE_TOO_BIG:
		return CC_ETOOBIG;
	case CC_FILE_NO_MEMORY:
		return CC_ENOMEM;
	default:
		return CC_EIO;
	}
}

int cc_file_read(const char *path, size_t cap, unsigned flags, char **out, size_t *len,
		 struct cc_file_error *err)
{
	bool secret = flags & CC_FILE_SECRET;
	bool regular_only = flags & CC_FILE_REGULAR_ONLY;
	struct cc_file_error ignored;
	struct stat st;
	char *buf = NULL;
	size_t size, used = 0;
	int fd, rc;

	if (!err)
		err = &ignored;
	*err = (struct cc_file_error){ 0 };
	if (!path || !out || !len || cap == 0) {
		fail(err, CC_FILE_OPEN, EINVAL, 0);
		return CC_EINVAL;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | (regular_only ? O_NONBLOCK : 0));
	if (fd < 0)
		return fail(err, CC_FILE_OPEN, errno, 0);
	if (fstat(fd, &st) != 0) {
		rc = fail(err, CC_FILE_STAT, errno, 0);
		goto out_close;
	}
	if (regular_only && !S_ISREG(st.st_mode)) {
		rc = fail(err, CC_FILE_NOT_REGULAR, 0, 0);
		goto out_close;
	}
	if (S_ISREG(st.st_mode) && st.st_size > 0 && (unsigned long long)st.st_size > cap) {
		rc = fail(err, CC_FILE_TOO_BIG, 0, (long long)st.st_size);
		goto out_close;
	}
	/*
	 * Room for the size fstat promised (0 for pipes and /proc) plus one
	 * byte, so the usual file is read in one buffer and EOF is seen
	 * without growing; anything longer grows the buffer up to cap + 1,
	 * the byte that proves "too big".
	 */
	size = S_ISREG(st.st_mode) && st.st_size > 0 ? (size_t)st.st_size + 1 : (cap < FIRST_CHUNK ? cap : FIRST_CHUNK) + 1;
	buf = malloc(size);
	if (!buf) {
		rc = fail(err, CC_FILE_NO_MEMORY, 0, 0);
		goto out_close;
	}
	for (;;) {
		if (used == size) {
			if (used > cap) /* read cap + 1 bytes: over the cap, whatever fstat said */
				break;
			/* size <= cap here, so this grows by at least one byte. */
			size_t next = size * 2 < cap + 1 ? size * 2 : cap + 1;
			if (!grow(&buf, &size, used, next, secret)) {
				rc = fail(err, CC_FILE_NO_MEMORY, 0, 0);
				goto out_free;
			}
		}
		ssize_t n = read(fd, buf + used, size - used);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = fail(err, CC_FILE_READ, errno, 0);
			goto out_free;
		}
		if (n == 0)
			break;
		used += (size_t)n;
	}
	if (used > cap) {
		rc = fail(err, CC_FILE_TOO_BIG, 0, -1);
		goto out_free;
	}
	buf[used] = '\0'; /* EOF was seen with room left: used < size */
	*out = buf;
	*len = used;
	buf = NULL;
	rc = 0;
out_free:
	drop(buf, size, secret);
out_close:
	close(fd);
	return rc;
}
