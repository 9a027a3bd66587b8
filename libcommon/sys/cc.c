#include "sys/cc.h"

#include <stdio.h>
#include <stdlib.h>

#ifndef CC_BUILD_VERSION
#define CC_BUILD_VERSION "0.1.0 (dev)"
#endif

const char cc_build_version[] = CC_BUILD_VERSION;

const char *cc_strerror(int code)
{
	switch (code) {
#define CC__TEXT(name, value, text) \
	case value:                 \
		return text;
		CC_ERRORS(CC__TEXT)
#undef CC__TEXT
	}
	return "unknown error";
}

const char *cc_errname(int code)
{
	switch (code) {
#define CC__NAME(name, value, text) \
	case value:                 \
		return #name;
		CC_ERRORS(CC__NAME)
#undef CC__NAME
	}
	return "CC_E?";
}

void cc__bug(const char *file, int line, const char *msg)
{
	fprintf(stderr, "BUG at %s:%d: %s\n", file, line, msg);
	abort();
}
