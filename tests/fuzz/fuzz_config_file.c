/*
 * fuzz_config_file: the config file reader of sys/config (cc_config_parse
 * with --config=FILE), over a table with one option of every type. The
 * input is the file's text. Every outcome must be a clean result: errors
 * counted and listed as NUL-terminated lines, values within their ranges,
 * everything released.
 *
 * The table has no secret option on purpose: a "NAME-file" key would make
 * the parser open any path the input names (a FIFO would hang the run).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "sys/config.h"
#include "fuzz_support.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fuzz_config {
	char *name;
	int64_t port;
	double ratio;
	bool verbose;
	char *level;
	int64_t count;
};

#define OPT(f) offsetof(struct fuzz_config, f)
static const struct cc_config_option options[] = {
	{.name = "name", .type = CC_CFG_STRING, .default_value = "x", .help = "a string", .offset = OPT(name)},
	{.name = "port", .type = CC_CFG_INT, .default_value = "8080", .min = 1, .max = 65535,
	 .help = "an int", .offset = OPT(port)},
	{.name = "ratio", .type = CC_CFG_DOUBLE, .default_value = "0.5", .min = 0, .max = 1,
	 .help = "a double", .offset = OPT(ratio)},
	{.name = "verbose", .type = CC_CFG_BOOL, .default_value = "false", .help = "a bool",
	 .offset = OPT(verbose)},
	{.name = "log-level", .type = CC_CFG_ENUM, .default_value = "info", .choices = "debug|info|warn",
	 .help = "an enum", .offset = OPT(level)},
	{.name = "count", .type = CC_CFG_INT, .help = "an unbounded int", .offset = OPT(count)},
};
static const struct cc_config_spec spec = {
	.program = "cc-fuzz", .summary = "fuzz", .options = options, .n_options = CC_ARRAY_LEN(options)};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[600], arg[620];
	struct fuzz_config cfg;
	struct cc_config_result res;
	FILE *f;
	int rc;

	snprintf(path, sizeof(path), "%s/cc.conf", fuzz_tmpdir());
	f = fopen(path, "wb");
	FUZZ_ASSERT(f != NULL);
	FUZZ_ASSERT(fwrite(data, 1, size, f) == size);
	FUZZ_ASSERT(fclose(f) == 0);
	snprintf(arg, sizeof(arg), "--config=%s", path);
	{
		char *argv[] = {(char *)"cc-fuzz", arg, NULL};

		memset(&cfg, 0, sizeof(cfg));
		rc = cc_config_parse(&spec, 2, argv, &cfg, &res);
	}
	FUZZ_ASSERT((rc == 0) == (res.n_errors == 0));
	FUZZ_ASSERT(res.n_errors >= 0);
	for (int i = 0; i < res.n_errors && i < CC_CONFIG_MAX_ERRORS; i++)
		FUZZ_ASSERT(memchr(res.errors[i], '\0', sizeof(res.errors[i])) != NULL);
	if (rc == 0) {
		FUZZ_ASSERT(cfg.port >= 1 && cfg.port <= 65535);
		FUZZ_ASSERT(cfg.ratio >= 0 && cfg.ratio <= 1);
		FUZZ_ASSERT(cfg.name && cfg.level);
		FUZZ_ASSERT(strcmp(cfg.level, "debug") == 0 || strcmp(cfg.level, "info") == 0 ||
			    strcmp(cfg.level, "warn") == 0);
	}
	cc_config_release(&spec, &cfg);
	return 0;
}
