/*
 * file.h - reading a whole small file into memory, with a cap.
 *
 * Configuration files, secret files (--NAME-file), key sets and migrations
 * are read whole. Every one of them has a size limit, and every one must
 * refuse, not truncate, a file over it: cc_file_read() reads at most cap
 * bytes and reports a larger file as CC_FILE_TOO_BIG, whether fstat said so
 * up front or the bytes kept coming (a pipe, a file that grew while read).
 *
 * Ownership: on success *out is a malloc'd buffer of *len bytes plus a NUL
 * (the contents may hold NULs of their own: callers that want text check
 * with memchr); the caller frees it, wiping it first when it held a secret.
 * On failure *out and *len are not written and nothing is left allocated;
 * with CC_FILE_SECRET every buffer that held file bytes is wiped before it
 * is freed, on every path.
 *
 * Errors are data, not text: the caller words the message for its own
 * context ("--config: cannot read '...'", "key file is N bytes; ..."),
 * from what failed, errno and the size seen.
 */
#ifndef CC_FILE_H
#define CC_FILE_H

#include <stddef.h>

#include "sys/cc.h"

/* Flags of cc_file_read(). */
#define CC_FILE_REGULAR_ONLY 0x1u /* refuse anything but a regular file (opened O_NONBLOCK, so a FIFO cannot hang) */
#define CC_FILE_SECRET 0x2u       /* wipe every buffer that held file bytes before freeing it */

enum cc_file_failure {
	CC_FILE_OK = 0,
	CC_FILE_OPEN,        /* open() failed: errnum */
	CC_FILE_STAT,        /* fstat() failed: errnum */
	CC_FILE_NOT_REGULAR, /* CC_FILE_REGULAR_ONLY and it is a directory, FIFO, device, ... */
	CC_FILE_TOO_BIG,     /* more than cap bytes: size is fstat's size, or -1 when found by reading */
	CC_FILE_READ,        /* read() failed (EISDIR for a directory without REGULAR_ONLY): errnum */
	CC_FILE_NO_MEMORY,   /* malloc failed */
};

struct cc_file_error {
	enum cc_file_failure failure; /* what went wrong; CC_FILE_OK after success */
	int errnum;                   /* errno of OPEN, STAT and READ, else 0 */
	long long size;               /* TOO_BIG: the size fstat reported, -1 when only reading showed it */
};

/*
 * Reads the file at path (at most cap bytes; cap >= 1) into *out / *len as
 * described above. Returns 0; CC_EIO for OPEN, STAT, READ and NOT_REGULAR;
 * CC_ETOOBIG; CC_ENOMEM; CC_EINVAL for a NULL path, out, len or err, or a
 * cap of 0 (err, when not NULL, then says CC_FILE_OPEN with EINVAL). err is
 * always written when not NULL.
 */
int cc_file_read(const char *path, size_t cap, unsigned flags, char **out, size_t *len,
		 struct cc_file_error *err) CC_MUST_CHECK;

#endif
