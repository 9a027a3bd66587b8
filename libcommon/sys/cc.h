/*
 * cc.h - the shared result codes and attributes of libcommon.
 *
 * Every action in libcommon returns int: 0 on success or one of the negative
 * CC_E* codes below. Predicates return bool; constructors return a pointer or
 * NULL. cc_strerror() names a code for logs and never returns NULL.
 */
#ifndef CC_H
#define CC_H

#include <stdbool.h>
#include <stddef.h>

#define CC_MUST_CHECK __attribute__((warn_unused_result))
#define CC_PRINTF(f, a) __attribute__((format(printf, f, a)))

/* X-macro: one list generates the enum and the name table. */
#define CC_ERRORS(X)                                                        \
	X(CC_OK, 0, "ok")                                                   \
	X(CC_EINVAL, -1, "invalid argument or input")                       \
	X(CC_ENOMEM, -2, "out of memory")                                   \
	X(CC_ETOOBIG, -3, "input exceeds its size limit")                   \
	X(CC_ENOTFOUND, -4, "not found")                                    \
	X(CC_ECONFLICT, -5, "conflict")                                     \
	X(CC_EUNAVAILABLE, -6, "dependency unavailable")                    \
	X(CC_ETIMEOUT, -7, "timed out")                                     \
	X(CC_ESERIALIZATION, -8, "serialization failure or deadlock")       \
	X(CC_ERETRY_EXHAUSTED, -9, "retry budget exhausted")                \
	X(CC_EIO, -10, "i/o error")                                         \
	X(CC_EDB, -11, "database error")                                    \
	X(CC_EFORBIDDEN, -12, "forbidden")                                  \
	X(CC_EUNAUTHORIZED, -13, "unauthorized")                            \
	X(CC_ESTATE, -14, "illegal state transition")                       \
	X(CC_ENOTIMPL, -15, "not implemented")

enum cc_result {
#define CC__ENUM(name, value, text) name = value,
	CC_ERRORS(CC__ENUM)
#undef CC__ENUM
};

/* Returns a static description of a CC_E* code (or "unknown error"). */
const char *cc_strerror(int code);

/* Returns the symbolic name ("CC_ETIMEOUT") of a code, or "CC_E?" */
const char *cc_errname(int code);

/* Version string baked in by the Makefile: "0.1.0 (git abc1234)". */
extern const char cc_build_version[];

/* Bytes of a buffer that holds a UUID in text: 36 characters and the NUL. */
#define CC_UUID_BUF 37

/* The text of a macro's value: CC_STRINGIFY(50) is "50" (for option defaults). */
#define CC__STRINGIFY(x) #x
#define CC_STRINGIFY(x) CC__STRINGIFY(x)

#define CC_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* BUG(): an invariant we own is broken; abort with a location. */
#define CC_BUG(msg) cc__bug(__FILE__, __LINE__, (msg))
_Noreturn void cc__bug(const char *file, int line, const char *msg);

#endif
