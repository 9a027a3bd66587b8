/*
 * fuzz_support.h - what the libFuzzer targets in tests/fuzz share.
 *
 * Each tests/fuzz/fuzz_<name>.c defines LLVMFuzzerTestOneInput (and, when
 * it needs set-up, LLVMFuzzerInitialize) and is built by `make fuzz-build`
 * into build/fuzz/fuzz_<name> with ASan/UBSan. A target must free
 * everything it allocates per input (leaks are reported as crashes), never
 * write outside its own temporary directory, and turn a broken invariant
 * into a crash with FUZZ_ASSERT so the fuzzer records the input.
 *
 * Ownership: fuzz_cstr() returns a malloc'd copy the caller frees;
 * fuzz_tmpdir() owns its directory and removes it at exit.
 */
#ifndef CC_FUZZ_SUPPORT_H
#define CC_FUZZ_SUPPORT_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Aborts (a crash the fuzzer keeps) when cond is false, naming it. */
#define FUZZ_ASSERT(cond)                                                                  \
	do {                                                                               \
		if (!(cond)) {                                                             \
			fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                           \
		}                                                                          \
	} while (0)

/* A NUL-terminated malloc'd copy of data[0..size) (which may hold NULs). */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	FUZZ_ASSERT(s != NULL);
	if (size)
		memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

static char fuzz_dir_path[512];

/* Removes every entry of the directory (not the directory itself). */
static inline void fuzz_tmpdir_empty(void)
{
	DIR *d = opendir(fuzz_dir_path);
	struct dirent *e;
	char path[1024];

	if (!d)
		return;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", fuzz_dir_path, e->d_name);
		unlink(path);
	}
	closedir(d);
}

static inline void fuzz_tmpdir_remove(void)
{
	fuzz_tmpdir_empty();
	rmdir(fuzz_dir_path);
}

/*
 * A private directory, created on first use and removed with its files
 * when the process exits normally (libFuzzer exits through exit() at the
 * end of a run; a crash leaves it for inspection). It lives under
 * $FUZZ_TMPDIR, else /dev/shm, else $TMPDIR or /tmp: targets that write
 * files run 30 times faster on tmpfs than on this machine's disk.
 */
static inline const char *fuzz_tmpdir(void)
{
	if (!fuzz_dir_path[0]) {
		const char *tmp = getenv("FUZZ_TMPDIR");

		if (!tmp || !*tmp)
			tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
		snprintf(fuzz_dir_path, sizeof(fuzz_dir_path), "%s/cc-fuzz.XXXXXX",
			 tmp && *tmp ? tmp : "/tmp");
		FUZZ_ASSERT(mkdtemp(fuzz_dir_path) != NULL);
		atexit(fuzz_tmpdir_remove);
	}
	return fuzz_dir_path;
}

#endif
