/*
 * banned.h - functions that make unbounded writes or hide errors.
 * Included as the last #include of every libcommon, service and test
 * source (after the system headers that declare these), so a use is a
 * compile error that names the banned call.
 */
#ifndef CC_BANNED_H
#define CC_BANNED_H

#define CC__BANNED(func) sorry_##func##_is_banned

#undef strcpy
#define strcpy(x, y) CC__BANNED(strcpy)
#undef strcat
#define strcat(x, y) CC__BANNED(strcat)
#undef sprintf
#define sprintf(...) CC__BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) CC__BANNED(vsprintf)
#undef gets
#define gets(x) CC__BANNED(gets)
#undef atoi
#define atoi(x) CC__BANNED(atoi)
#undef atol
#define atol(x) CC__BANNED(atol)

#endif
