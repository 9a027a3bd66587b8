/*
 * support.h - helpers shared by the Check suites.
 *
 * cc_test_env() returns a harness variable (tests/harness/with-services.sh)
 * or fails the current test with a message naming it, so a suite run
 * outside the harness says why instead of testing nothing.
 */
#ifndef CC_TEST_SUPPORT_H
#define CC_TEST_SUPPORT_H

#include <check.h>

/* Returns getenv(name); ck_abort()s naming the variable when unset/empty. */
const char *cc_test_env(const char *name);

/* Path of a built binary: "$CC_TOP/build/bin/<name>" (static buffer per call site is not kept: copy it). */
const char *cc_test_bin(const char *name, char *buf, size_t len);

/*
 * Opens a listening loopback TCP socket with the given backlog on an
 * ephemeral port (*port gets it); fails the test on any error. The caller
 * closes the descriptor. For tests that need a peer which never answers.
 */
int cc_test_listener(int backlog, int *port);

/* Runs a suite with CK_NORMAL output; returns the process exit status. */
int cc_test_run_suite(Suite *s);

#endif
