#include "support.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>
#include <stdlib.h>

const char *cc_test_env(const char *name)
{
	const char *v = getenv(name);
	if (!v || !*v)
		ck_abort_msg("environment variable %s is not set: run under tests/harness/with-services.sh", name);
	return v;
}

const char *cc_test_bin(const char *name, char *buf, size_t len)
{
	const char *top = getenv("CC_TOP");
	snprintf(buf, len, "%s/build/bin/%s", top && *top ? top : ".", name);
	return buf;
}

int cc_test_run_suite(Suite *s)
{
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}

int cc_test_listener(int backlog, int *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(fd, backlog), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}
