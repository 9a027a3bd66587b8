/*
 * The config module: a small option table of our own (every type, a secret
 * string, a secret number) parsed from argv, COSMIC_CLASH_* variables,
 * config files and secret files written under a mkdtemp directory.
 *
 * Each test starts with no COSMIC_CLASH_* variable set and restores the
 * caller's environment afterwards (checked fixture), so a variable exported
 * in the shell that runs the suite cannot change a verdict.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "sys/config.h"
#include "sys/log.h"
#include "support.h"
#include "sys/banned.h"

#define CANARY "CANARY-7f3a9c"

struct demo_config {
	char *name;         /* STRING, no default */
	int64_t port;       /* INT [1, 65535], default 8080 */
	int64_t admin_port; /* INT [1, 65535], default 9090 */
	int64_t offset;     /* INT unbounded, default -3 */
	double ratio;       /* DOUBLE [0, 1], default 0.5 */
	bool verbose;       /* BOOL, default false */
	char *playlist;     /* ENUM casual|ranked, default casual */
	char *steam_key;    /* secret STRING */
	int64_t admin_pin;  /* secret INT [1000, 9999] */
};

#define F(field) offsetof(struct demo_config, field)
static const struct cc_config_option demo_options[] = {
	{ .name = "name", .type = CC_CFG_STRING, .help = "display name", .offset = F(name) },
	{ .name = "port", .type = CC_CFG_INT, .default_value = "8080", .min = 1, .max = 65535,
	  .help = "listen port", .offset = F(port) },
	{ .name = "admin-port", .type = CC_CFG_INT, .default_value = "9090", .min = 1, .max = 65535,
	  .help = "admin port", .offset = F(admin_port) },
	{ .name = "offset", .type = CC_CFG_INT, .default_value = "-3", .help = "clock offset",
	  .offset = F(offset) },
	{ .name = "ratio", .type = CC_CFG_DOUBLE, .default_value = "0.5", .min = 0, .max = 1,
	  .help = "bot fill ratio", .offset = F(ratio) },
	{ .name = "verbose", .type = CC_CFG_BOOL, .default_value = "false", .help = "chatty logs",
	  .offset = F(verbose) },
	{ .name = "playlist", .type = CC_CFG_ENUM, .default_value = "casual", .choices = "casual|ranked",
	  .help = "which queue", .offset = F(playlist) },
	{ .name = "steam-key", .type = CC_CFG_STRING, .secret = true, .help = "Steam publisher key",
	  .offset = F(steam_key) },
	{ .name = "admin-pin", .type = CC_CFG_INT, .secret = true, .min = 1000, .max = 9999,
	  .help = "operator pin", .offset = F(admin_pin) },
};
static const struct cc_config_spec demo_spec = {
	.program = "demo",
	.summary = "A demo binary.",
	.options = demo_options,
	.n_options = CC_ARRAY_LEN(demo_options),
};
static const struct cc_config_spec demo_pos_spec = {
	.program = "demo",
	.summary = "A demo binary with commands.",
	.positional = "up | down N",
	.options = demo_options,
	.n_options = CC_ARRAY_LEN(demo_options),
};

/* ---- fixture: a clean COSMIC_CLASH_* environment and a temp directory --- */

#define MAX_SAVED 64
#define MAX_FILES 16
static char *saved_env[MAX_SAVED]; /* "NAME=value" copies of the caller's variables */
static int n_saved;
static char tmpdir[256];
static char files[MAX_FILES][512]; /* paths written by write_file() */
static int n_files;

/* Unsets every COSMIC_CLASH_* variable (names collected first: unsetenv edits environ). */
static void clear_cc_env(void)
{
	char *names[MAX_SAVED];
	int n = 0;
	for (char **e = environ; *e && n < MAX_SAVED; e++)
		if (strncmp(*e, "COSMIC_CLASH_", 13) == 0)
			names[n++] = strndup(*e, strcspn(*e, "="));
	for (int i = 0; i < n; i++) {
		unsetenv(names[i]);
		free(names[i]);
	}
}

static void setup(void)
{
	n_saved = 0;
	for (char **e = environ; *e && n_saved < MAX_SAVED; e++)
		if (strncmp(*e, "COSMIC_CLASH_", 13) == 0)
			saved_env[n_saved++] = strdup(*e);
	clear_cc_env();
	const char *t = getenv("TMPDIR");
	snprintf(tmpdir, sizeof tmpdir, "%s/cc-config-XXXXXX", t && *t ? t : "/tmp");
	ck_assert_msg(mkdtemp(tmpdir) != NULL, "mkdtemp: %s", strerror(errno));
	n_files = 0;
}

static void teardown(void)
{
	clear_cc_env();
	for (int i = 0; i < n_saved; i++) {
		char *eq = strchr(saved_env[i], '=');
		*eq = '\0';
		setenv(saved_env[i], eq + 1, 1);
		free(saved_env[i]);
	}
	n_saved = 0;
	for (int i = 0; i < n_files; i++)
		unlink(files[i]);
	rmdir(tmpdir);
}

/* Writes len bytes of content to tmpdir/name; returns the path (lives until teardown). */
static const char *write_bytes(const char *name, const char *content, size_t len)
{
	ck_assert_int_lt(n_files, MAX_FILES);
	char *path = files[n_files++];
	snprintf(path, sizeof files[0], "%s/%s", tmpdir, name);
	FILE *f = fopen(path, "w");
	ck_assert_msg(f != NULL, "fopen %s: %s", path, strerror(errno));
	ck_assert_uint_eq(fwrite(content, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
	return path;
}

static const char *write_file(const char *name, const char *content)
{
	return write_bytes(name, content, strlen(content));
}

/* Returns tmpdir/name without creating it (a path that does not exist). */
static const char *missing_path(const char *name)
{
	static char path[512];
	snprintf(path, sizeof path, "%s/%s", tmpdir, name);
	return path;
}

/* Replaces every "{path}" in tmpl with path; static buffer. */
static const char *expand(const char *tmpl, const char *path)
{
	static char out[1024];
	size_t n = 0;
	for (const char *p = tmpl; *p && n < sizeof out - 1;) {
		if (strncmp(p, "{path}", 6) == 0) {
			n += (size_t)snprintf(out + n, sizeof out - n, "%s", path);
			p += 6;
		} else {
			out[n++] = *p++;
		}
	}
	out[n < sizeof out ? n : sizeof out - 1] = '\0';
	return out;
}

/* ---- running a parse ---------------------------------------------------- */

struct run {
	struct demo_config cfg;
	struct cc_config_result res;
	int rc;
	const char *argv[16]; /* res.positional points in here */
};

/* Parses {"demo", args..., NULL} (args NULL-terminated, may be NULL) into r. */
static void parse_with(struct run *r, const struct cc_config_spec *spec, const char *const *args)
{
	int argc = 1;
	memset(r, 0, sizeof *r);
	r->argv[0] = "demo";
	while (args && args[argc - 1]) {
		ck_assert_int_lt(argc, 15);
		r->argv[argc] = args[argc - 1];
		argc++;
	}
	r->rc = cc_config_parse(spec, argc, (char *const *)r->argv, &r->cfg, &r->res);
}

/* All collected errors joined with " | ", for failure messages. */
static const char *errors_text(const struct cc_config_result *res)
{
	static char buf[CC_CONFIG_MAX_ERRORS * 260];
	size_t n = 0;
	buf[0] = '\0';
	for (int i = 0; i < res->n_errors && i < CC_CONFIG_MAX_ERRORS; i++)
		n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", i ? " | " : "", res->errors[i]);
	return res->n_errors ? buf : "(no errors)";
}

static bool any_error_contains(const struct cc_config_result *res, const char *needle)
{
	for (int i = 0; i < res->n_errors && i < CC_CONFIG_MAX_ERRORS; i++)
		if (strstr(res->errors[i], needle))
			return true;
	return false;
}

/* Asserts the parse succeeded with no errors. */
#define assert_ok(r) \
	ck_assert_msg((r)->rc == 0 && (r)->res.n_errors == 0, "expected success, got: %s", errors_text(&(r)->res))

/* Asserts exactly one error, equal to want. */
#define assert_one_error(r, want)                                                                      \
	ck_assert_msg((r)->rc == CC_EINVAL && (r)->res.n_errors == 1 && !strcmp((r)->res.errors[0], (want)), \
		      "expected exactly [%s], got: %s", (want), errors_text(&(r)->res))

/* ---- tests -------------------------------------------------------------- */

START_TEST(test_defaults)
{
	struct run r;
	parse_with(&r, &demo_spec, NULL);
	assert_ok(&r);
	ck_assert_ptr_null(r.cfg.name);
	ck_assert_int_eq(r.cfg.port, 8080);
	ck_assert_int_eq(r.cfg.admin_port, 9090);
	ck_assert_int_eq(r.cfg.offset, -3);
	ck_assert_double_eq(r.cfg.ratio, 0.5);
	ck_assert(!r.cfg.verbose);
	ck_assert_str_eq(r.cfg.playlist, "casual");
	ck_assert_ptr_null(r.cfg.steam_key);
	ck_assert_int_eq(r.cfg.admin_pin, 0);
	ck_assert_int_eq(r.res.n_positional, 0);
	ck_assert(!r.res.help && !r.res.version);
	cc_config_release(&demo_spec, &r.cfg);
}
END_TEST

/* flag > env > file > default, for every combination of present sources. */
static const struct precedence_case {
	const char *flag, *env, *file;
	int64_t want;
} precedence_cases[] = {
	{ "1", "2", "3", 1 },     { "1", "2", NULL, 1 },   { "1", NULL, "3", 1 }, { "1", NULL, NULL, 1 },
	{ NULL, "2", "3", 2 },    { NULL, "2", NULL, 2 },  { NULL, NULL, "3", 3 }, { NULL, NULL, NULL, 8080 },
	{ NULL, "", "3", 3 }, /* an empty variable counts as unset */
};

START_TEST(test_precedence)
{
	const struct precedence_case *c = &precedence_cases[_i];
	char flag[64], conf[128], body[64];
	const char *args[3] = { NULL };
	int n = 0;
	if (c->flag) {
		snprintf(flag, sizeof flag, "--port=%s", c->flag);
		args[n++] = flag;
	}
	if (c->file) {
		snprintf(body, sizeof body, "port = %s\n", c->file);
		snprintf(conf, sizeof conf, "--config=%s", write_file("p.conf", body));
		args[n++] = conf;
	}
	if (c->env)
		setenv("COSMIC_CLASH_PORT", c->env, 1);
	struct run r;
	parse_with(&r, &demo_spec, args);
	assert_ok(&r);
	ck_assert_int_eq(r.cfg.port, c->want);
	cc_config_release(&demo_spec, &r.cfg);
}
END_TEST

/* --config beats COSMIC_CLASH_CONFIG; the env variable alone names the file. */
START_TEST(test_config_path_sources)
{
	const char *a = write_file("a.conf", "port = 3\n"), *b = write_file("b.conf", "port = 4\n");
	char flag[600];
	struct run r;
	setenv("COSMIC_CLASH_CONFIG", a, 1);
	parse_with(&r, &demo_spec, NULL);
	assert_ok(&r);
	ck_assert_int_eq(r.cfg.port, 3);
	cc_config_release(&demo_spec, &r.cfg);

	snprintf(flag, sizeof flag, "--config=%s", b);
	parse_with(&r, &demo_spec, (const char *[]){ flag, NULL });
	assert_ok(&r);
	ck_assert_int_eq(r.cfg.port, 4);
	cc_config_release(&demo_spec, &r.cfg);

	parse_with(&r, &demo_spec, (const char *[]){ "--config", b, NULL });
	assert_ok(&r);
	ck_assert_int_eq(r.cfg.port, 4);
	cc_config_release(&demo_spec, &r.cfg);
}
END_TEST

static const struct flag_case {
	const char *args[4];
	int64_t port, offset;
	const char *name; /* NULL: expect unset */
} flag_cases[] = {
	{ { "--port=5" }, 5, -3, NULL },
	{ { "--port", "5" }, 5, -3, NULL },
	{ { "--offset", "-7" }, 8080, -7, NULL }, /* a negative number is a value, not an option */
	{ { "--offset=-9223372036854775808" }, 8080, INT64_MIN, NULL },
	{ { "--name=" }, 8080, -3, "" },
	{ { "--name", "-" }, 8080, -3, "-" },
	{ { "--name=a=b c" }, 8080, -3, "a=b c" },
	{ { "--name", "x", "--port=7" }, 7, -3, "x" },
};

START_TEST(test_flag_forms)
{
	const struct flag_case *c = &flag_cases[_i];
	struct run r;
	parse_with(&r, &demo_spec, c->args);
	assert_ok(&r);
	ck_assert_int_eq(r.cfg.port, c->port);
	ck_assert_int_eq(r.cfg.offset, c->offset);
	if (c->name)
		ck_assert_str_eq(r.cfg.name, c->name);
	else
		ck_assert_ptr_null(r.cfg.name);
	cc_config_release(&demo_spec, &r.cfg);
}
END_TEST

static const struct bool_case {
	const char *args[3];
	const char *env; /* COSMIC_CLASH_VERBOSE, NULL = unset */
	bool want;
} bool_cases[] = {
	{ { NULL }, NULL, false },         { { "--verbose" }, NULL, true },
	{ { "--verbose=false" }, NULL, false }, { { "--verbose=true" }, NULL, true },
	{ { "--verbose=yes" }, NULL, true }, { { "--verbose=no" }, NULL, false },
	{ { "--verbose=ON" }, NULL, true },  { { "--verbose=off" }, NULL, false },
	{ { "--verbose=1" }, NULL, true },   { { "--verbose=0" }, NULL, false },
	{ { NULL }, "1", true },            { { NULL }, "off", false },
	{ { "--verbose=false" }, "true", false }, /* the flag wins */
};

START_TEST(test_bool_forms)
{
	const struct bool_case *c = &bool_cases[_i];
	struct run r;
	if (c->env)
		setenv("COSMIC_CLASH_VERBOSE", c->env, 1);
	parse_with(&r, &demo_spec, c->args);
	assert_ok(&r);
	ck_assert_int_eq(r.cfg.verbose, c->want);
	cc_config_release(&demo_spec, &r.cfg);
}
END_TEST

/* Each bad input yields exactly one error with this exact text. */
static const struct error_case {
	const char *args[4];
	const char *env_name, *env_value;
	const char *want;
} error_cases[] = {
	{ { "--port=abc" }, NULL, NULL, "--port: 'abc' is not an integer" },
	{ { "--port", "abc" }, NULL, NULL, "--port: 'abc' is not an integer" },
	{ { "--port=" }, NULL, NULL, "--port: '' is not an integer" },
	{ { "--port=12x" }, NULL, NULL, "--port: '12x' is not an integer" },
	{ { "--port= 12" }, NULL, NULL, "--port: ' 12' is not an integer" },
	{ { "--port=+12" }, NULL, NULL, "--port: '+12' is not an integer" },
	{ { "--port=1.5" }, NULL, NULL, "--port: '1.5' is not an integer" },
	{ { "--port=0x10" }, NULL, NULL, "--port: '0x10' is not an integer" },
	{ { "--port=1\n2" }, NULL, NULL, "--port: '1\\x0a2' is not an integer" },
	{ { "--admin-port=70000" }, NULL, NULL, "--admin-port: 70000 is out of range [1, 65535]" },
	{ { "--port=0" }, NULL, NULL, "--port: 0 is out of range [1, 65535]" },
	{ { "--port=-1" }, NULL, NULL, "--port: -1 is out of range [1, 65535]" },
	{ { "--offset=9223372036854775808" },
	  NULL,
	  NULL,
	  "--offset: 9223372036854775808 is out of range [-9223372036854775808, 9223372036854775807]" },
	{ { "--ratio=1.5" }, NULL, NULL, "--ratio: 1.5 is out of range [0, 1]" },
	{ { "--ratio=-0.1" }, NULL, NULL, "--ratio: -0.1 is out of range [0, 1]" },
	{ { "--ratio=x" }, NULL, NULL, "--ratio: 'x' is not a number" },
	{ { "--ratio=0.5x" }, NULL, NULL, "--ratio: '0.5x' is not a number" },
	{ { "--ratio=nan" }, NULL, NULL, "--ratio: 'nan' is not a finite number" },
	{ { "--ratio=1e999" }, NULL, NULL, "--ratio: '1e999' is not a finite number" },
	{ { "--verbose=maybe" }, NULL, NULL, "--verbose: 'maybe' is not a boolean (true|false|yes|no|on|off|1|0)" },
	{ { "--playlist=x" }, NULL, NULL, "--playlist: 'x' is not one of casual|ranked" },
	{ { "--playlist=casua" }, NULL, NULL, "--playlist: 'casua' is not one of casual|ranked" },
	{ { "--playlist=Casual" }, NULL, NULL, "--playlist: 'Casual' is not one of casual|ranked" },
	{ { "--no-such-flag" }, NULL, NULL, "--no-such-flag: unknown option" },
	{ { "--no-such-flag=" CANARY }, NULL, NULL, "--no-such-flag: unknown option" },
	{ { "--Port=1" }, NULL, NULL, "--Port: unknown option" },
	{ { "--name-file=x" }, NULL, NULL, "--name-file: unknown option" }, /* only secrets have -file */
	{ { "-p" }, NULL, NULL, "-p: unknown option (options are spelled --name)" },
	{ { "-p=" CANARY }, NULL, NULL, "-p: unknown option (options are spelled --name)" },
	{ { "--=x" }, NULL, NULL, "--: unknown option (options are spelled --name)" },
	{ { "--port" }, NULL, NULL, "--port: missing value" },
	{ { "--port", "--verbose" }, NULL, NULL, "--port: missing value" },
	{ { "--port=1", "--port=2" }, NULL, NULL, "--port: given twice" },
	{ { "--verbose", "--verbose=false" }, NULL, NULL, "--verbose: given twice" },
	{ { "--config" }, NULL, NULL, "--config: missing value" },
	{ { "--help=x" }, NULL, NULL, "--help: takes no value" },
	{ { "--version=1" }, NULL, NULL, "--version: takes no value" },
	{ { "extra" }, NULL, NULL, "unexpected argument 'extra'" },
	{ { "--verbose", "false" }, NULL, NULL, "unexpected argument 'false'" }, /* BOOL takes "=" only */
	{ { NULL }, "COSMIC_CLASH_PORT", "abc", "COSMIC_CLASH_PORT: 'abc' is not an integer" },
	{ { NULL }, "COSMIC_CLASH_ADMIN_PORT", "70000", "COSMIC_CLASH_ADMIN_PORT: 70000 is out of range [1, 65535]" },
	{ { NULL }, "COSMIC_CLASH_PLAYLIST", "solo", "COSMIC_CLASH_PLAYLIST: 'solo' is not one of casual|ranked" },
};

START_TEST(test_value_errors)
{
	const struct error_case *c = &error_cases[_i];
	struct run r;
	if (c->env_name)
		setenv(c->env_name, c->env_value, 1);
	parse_with(&r, &demo_spec, c->args);
	assert_one_error(&r, c->want);
	ck_assert(!any_error_contains(&r.res, CANARY));
	cc_config_release(&demo_spec, &r.cfg);
}
END_TEST

/* A bad value leaves the field untouched; the other options are still parsed. */
START_TEST(test_bad_value_leaves_field_unset)
{
	struct run r;
	parse_with(&r, &demo_spec, (const char *[]){ "--playlist=x", "--port=abc", "--name=n", NULL });
	ck_assert_int_eq(r.rc, CC_EINVAL);
	ck_assert_ptr_null(r.cfg.playlist);
	ck_assert_int_eq(r.cfg.port, 0);
	ck_assert_str_eq(r.cfg.name, "n");
	cc_config_release(&demo_spec, &r.cfg);
}
END_TEST

START_TEST(test_all_errors_at_once)
{
	struct run r;
	parse_with(&r, &demo_spec, (const char *[]){ "--no-such-flag", "--port=abc", NULL });
	ck_assert_int_eq(r.rc, CC_EINVAL);
	ck_assert_msg(r.res.n_errors == 2, "got: %s", errors_text(&r.res));
	ck_assert_str_eq(r.res.errors[0], "--no-such-flag: unknown option");
	ck_assert_str_eq(r.res.errors[1], "--port: 'abc' is not an integer");
	cc_config_release(&demo_spec, &r.cfg);

	/* every source at once, in the documented order: argv, file lines, options in table order */
	char conf[600];
	const char *path = write_file("all.conf", "prot = 1\nratio = 2\n");
	snprintf(conf, sizeof conf, "--config=%s", path);
	setenv("COSMIC_CLASH_ADMIN_PORT", "0", 1);
	parse_with(&r, &demo_spec, (const char *[]){ "--bogus", conf, "--port=x", "stray", NULL });
	ck_assert_msg(r.res.n_errors == 6, "got: %s", errors_text(&r.res));
	ck_assert_str_eq(r.res.errors[0], "--bogus: unknown option");
	ck_assert_str_eq(r.res.errors[1], "unexpected argument 'stray'");
	ck_assert_str_eq(r.res.errors[2], expand("{path}:1: unknown option 'prot'", path));
	ck_assert_str_eq(r.res.errors[3], "--port: 'x' is not an integer");
	ck_assert_str_eq(r.res.errors[4], "COSMIC_CLASH_ADMIN_PORT: 0 is out of range [1, 65535]");
	ck_assert_str_eq(r.res.errors[5], expand("{path}:2: ratio: 2 is out of range [0, 1]", path));
	cc_config_release(&demo_spec, &r.cfg);
}
END_TEST

/* Only the winning value is validated (documented in config.h). */
START_TEST(test_overridden_values_not_validated)
{
	struct run r;
	char conf[600];
	setenv("COSMIC_CLASH_PORT", "abc", 1);
	parse_with(&r, &demo_spec, (const char *[]){ "--port=5", NULL });
	assert_ok(&r);
	ck_assert_int_eq(r.cfg.port, 5);
	cc_config_release(&demo_spec, &r.cfg);

	snprintf(conf, sizeof conf, "--config=%s", write_file("o.conf", "port = abc\n"));
	setenv("COSMIC_CLASH_PORT", "7", 1);
	parse_with(&r, &demo_spec, (const char *[]){ conf, NULL });
	assert_ok(&r);
	ck_assert_int_eq(r.cfg.port, 7);
	cc_config_release(&demo_spec, &r.cfg);
}
END_TEST

/* Past CC_CONFIG_MAX_ERRORS the list stops but the count goes on. */
START_TEST(test_error_cap)
{
	char names[40][24];
	char *argv[41] = { (char *)"demo" };
	struct demo_config cfg = { 0 };
	struct cc_config_result res;
	for (int i = 0; i < 40; i++) {
		snprintf(names[i], sizeof names[i], "--bad%d", i);
		argv[i + 1] = names[i];
	}
	ck_assert_int_eq(cc_config_parse(&demo_spec, 41, argv, &cfg, &res), CC_EINVAL);
	ck_assert_int_eq(res.n_errors, 40);
	ck_assert_str_eq(res.errors[0], "--bad0: unknown option");
	ck_assert_str_eq(res.errors[CC_CONFIG_MAX_ERRORS - 1], "--bad31: unknown option");
	cc_config_release(&demo_spec, &cfg);
}
END_TEST

/* ---- secrets ------------------------------------------------------------ */

static const struct secret_flag_case {
	const char *args[3];
	const char *want;
} secret_flag_cases[] = {
	{ { "--steam-key=" CANARY },
	  "--steam-key is a secret: pass it in COSMIC_CLASH_STEAM_KEY or a file via --steam-key-file" },
	{ { "--steam-key", CANARY }, /* the value is consumed, not reported as an argument */
	  "--steam-key is a secret: pass it in COSMIC_CLASH_STEAM_KEY or a file via --steam-key-file" },
	{ { "--admin-pin=" CANARY },
	  "--admin-pin is a secret: pass it in COSMIC_CLASH_ADMIN_PIN or a file via --admin-pin-file" },
};

START_TEST(test_secret_flag_refused)
{
	const struct secret_flag_case *c = &secret_flag_cases[_i];
	struct run r;
	parse_with(&r, &demo_spec, c->args);
	assert_one_error(&r, c->want);
	ck_assert(!any_error_contains(&r.res, CANARY));
	ck_assert_ptr_null(r.cfg.steam_key);
	cc_config_release(&demo_spec, &r.cfg);
}
END_TEST

enum secret_via { VIA_ENV, VIA_ENV_FILE, VIA_FLAG_FILE, VIA_CONFIG_FILE };

static const struct secret_source_case {
	enum secret_via via;
	const char *content; /* env value or file content */
	const char *want;
} secret_source_cases[] = {
	{ VIA_ENV, CANARY, CANARY },
	{ VIA_ENV_FILE, CANARY "\n", CANARY },
	{ VIA_FLAG_FILE, CANARY "\n", CANARY },
	{ VIA_CONFIG_FILE, CANARY "\n", CANARY },
	{ VIA_FLAG_FILE, CANARY, CANARY },             /* no newline to trim */
	{ VIA_FLAG_FILE, CANARY "\r\n", CANARY },      /* a Windows-edited file */
	{ VIA_FLAG_FILE, CANARY "\n\n", CANARY "\n" }, /* only one newline is trimmed */
	{ VIA_FLAG_FILE, " " CANARY " \n", " " CANARY " " },
};

START_TEST(test_secret_sources)
{
	const struct secret_source_case *c = &secret_source_cases[_i];
	const char *args[2] = { NULL };
	char flag[600];
	struct run r;
	const char *path = c->via == VIA_ENV ? NULL : write_file("key", c->content);
	switch (c->via) {
	case VIA_ENV:
		setenv("COSMIC_CLASH_STEAM_KEY", c->content, 1);
		break;
	case VIA_ENV_FILE:
		setenv("COSMIC_CLASH_STEAM_KEY_FILE", path, 1);
		break;
	case VIA_FLAG_FILE:
		snprintf(flag, sizeof flag, "--steam-key-file=%s", path);
		args[0] = flag;
		break;
	case VIA_CONFIG_FILE:
		snprintf(flag, sizeof flag, "--config=%s",
			 write_file("s.conf", expand("steam-key-file = {path}\n", path)));
		args[0] = flag;
		break;
	}
	parse_with(&r, &demo_spec, args);
	assert_ok(&r);
	ck_assert_str_eq(r.cfg.steam_key, c->want);
	cc_config_release(&demo_spec, &r.cfg);
	ck_assert_ptr_null(r.cfg.steam_key);
}
END_TEST

/* The same precedence as other options: --x-file > env > config file name-file. */
START_TEST(test_secret_precedence)
{
	const char *flag_file = write_file("k1", "from-flag\n"), *conf_file = write_file("k2", "from-conf\n");
	char flag[600], conf[600];
	struct run r;
	snprintf(flag, sizeof flag, "--steam-key-file=%s", flag_file);
	snprintf(conf, sizeof conf, "--config=%s", write_file("c.conf", expand("steam-key-file = {path}\n", conf_file)));
	setenv("COSMIC_CLASH_STEAM_KEY", "from-env", 1);

	parse_with(&r, &demo_spec, (const char *[]){ flag, conf, NULL });
	assert_ok(&r);
	ck_assert_str_eq(r.cfg.steam_key, "from-flag");
	cc_config_release(&demo_spec, &r.cfg);

	parse_with(&r, &demo_spec, (const char *[]){ conf, NULL });
	assert_ok(&r);
	ck_assert_str_eq(r.cfg.steam_key, "from-env");
	cc_config_release(&demo_spec, &r.cfg);

	unsetenv("COSMIC_CLASH_STEAM_KEY");
	parse_with(&r, &demo_spec, (const char *[]){ conf, NULL });
	assert_ok(&r);
	ck_assert_str_eq(r.cfg.steam_key, "from-conf");
	cc_config_release(&demo_spec, &r.cfg);
}
END_TEST

enum secret_setup { S_EMPTY_FILE, S_MISSING_FILE, S_DIR, S_BOTH_ENV, S_IN_CONFIG, S_PIN_TEXT, S_PIN_RANGE,
		    S_PIN_FILE, S_NUL_FILE, S_BIG_FILE };

static const struct secret_error_case {
	enum secret_setup setup;
	const char *want; /* {path}: the file involved */
} secret_error_cases[] = {
	{ S_EMPTY_FILE, "--steam-key-file: '{path}' is empty" },
	{ S_MISSING_FILE, "--steam-key-file: cannot read '{path}': No such file or directory" },
	{ S_DIR, "COSMIC_CLASH_STEAM_KEY_FILE: cannot read '{path}': Is a directory" },
	{ S_BOTH_ENV, "COSMIC_CLASH_STEAM_KEY and COSMIC_CLASH_STEAM_KEY_FILE are both set: use one" },
	{ S_IN_CONFIG,
	  "{path}:2: steam-key is a secret: pass it in COSMIC_CLASH_STEAM_KEY or a file via steam-key-file" },
	{ S_PIN_TEXT, "COSMIC_CLASH_ADMIN_PIN: the value (secret, not shown) is not an integer" },
	{ S_PIN_RANGE, "COSMIC_CLASH_ADMIN_PIN: the value (secret, not shown) is out of range [1000, 9999]" },
	{ S_PIN_FILE, "--admin-pin-file: the value (secret, not shown) is not an integer" },
	{ S_NUL_FILE, "--steam-key-file: '{path}' contains a NUL byte" },
	{ S_BIG_FILE, "--steam-key-file: '{path}' is larger than 65536 bytes" },
};

START_TEST(test_secret_errors)
{
	const struct secret_error_case *c = &secret_error_cases[_i];
	const char *path = NULL, *args[2] = { NULL };
	char flag[600];
	static char big[65537];
	struct run r;
	switch (c->setup) {
	case S_EMPTY_FILE:
		path = write_file("empty", "\n"); /* empty once the newline is trimmed */
		snprintf(flag, sizeof flag, "--steam-key-file=%s", path);
		args[0] = flag;
		break;
	case S_MISSING_FILE:
		path = missing_path("nope");
		snprintf(flag, sizeof flag, "--steam-key-file=%s", path);
		args[0] = flag;
		break;
	case S_DIR:
		path = tmpdir;
		setenv("COSMIC_CLASH_STEAM_KEY_FILE", path, 1);
		break;
	case S_BOTH_ENV:
		setenv("COSMIC_CLASH_STEAM_KEY", CANARY, 1);
		setenv("COSMIC_CLASH_STEAM_KEY_FILE", write_file("k", CANARY), 1);
		break;
	case S_IN_CONFIG:
		path = write_file("c.conf", "port = 1\nsteam-key = " CANARY "\n");
		snprintf(flag, sizeof flag, "--config=%s", path);
		args[0] = flag;
		break;
	case S_PIN_TEXT:
		setenv("COSMIC_CLASH_ADMIN_PIN", CANARY, 1);
		break;
	case S_PIN_RANGE:
		setenv("COSMIC_CLASH_ADMIN_PIN", "12", 1);
		break;
	case S_PIN_FILE:
		snprintf(flag, sizeof flag, "--admin-pin-file=%s", write_file("pin", CANARY "\n"));
		args[0] = flag;
		break;
	case S_NUL_FILE:
		path = write_bytes("nul", CANARY "\0x", sizeof CANARY + 1);
		snprintf(flag, sizeof flag, "--steam-key-file=%s", path);
		args[0] = flag;
		break;
	case S_BIG_FILE:
		memset(big, 'k', sizeof big);
		path = write_bytes("big", big, sizeof big);
		snprintf(flag, sizeof flag, "--steam-key-file=%s", path);
		args[0] = flag;
		break;
	}
	parse_with(&r, &demo_spec, args);
	assert_one_error(&r, expand(c->want, path ? path : ""));
	ck_assert_msg(!any_error_contains(&r.res, CANARY), "secret leaked: %s", errors_text(&r.res));
	ck_assert_ptr_null(r.cfg.steam_key);
	ck_assert_int_eq(r.cfg.admin_pin, 0);
	cc_config_release(&demo_spec, &r.cfg);
}
END_TEST

/* Runs cc_config_log on cfg and returns its one line, parsed (the caller deletes it). */
static cJSON *config_log_line(const struct demo_config *cfg, char *raw, size_t cap)
{
	char logpath[512];
	ssize_t got;
	cJSON *line;

	snprintf(logpath, sizeof logpath, "%s/log", tmpdir);
	int fd = open(logpath, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	cc_log_set_fd(fd);
	cc_config_log(&demo_spec, cfg);
	cc_log_set_fd(-1);
	got = pread(fd, raw, cap - 1, 0);
	close(fd);
	unlink(logpath);
	ck_assert_int_gt(got, 0);
	raw[got] = '\0';
	ck_assert_msg(strchr(raw, '\n') == raw + got - 1, "not one line: %s", raw);
	line = cJSON_Parse(raw);
	ck_assert_msg(line != NULL, "not JSON: %s", raw);
	return line;
}

static const char *line_str(const cJSON *line, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(line, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/*
 * A secret stays out of the generated help and the config log line, yet
 * the line says which secrets are set, by name, under field names the log
 * does not redact; non-secret options keep their own field.
 */
START_TEST(test_secret_not_printed)
{
	struct run r;
	char raw[16384];
	cJSON *line;

	setenv("COSMIC_CLASH_STEAM_KEY", CANARY, 1);
	setenv("COSMIC_CLASH_ADMIN_PIN", "4321", 1);
	parse_with(&r, &demo_spec, NULL);
	assert_ok(&r);
	ck_assert_str_eq(r.cfg.steam_key, CANARY);
	ck_assert_int_eq(r.cfg.admin_pin, 4321);

	char *help = cc_config_help(&demo_spec);
	ck_assert_ptr_nonnull(help);
	ck_assert(!strstr(help, CANARY) && !strstr(help, "4321"));
	free(help);

	line = config_log_line(&r.cfg, raw, sizeof raw);
	ck_assert_msg(!strstr(raw, CANARY) && !strstr(raw, "4321"), "secret in log: %s", raw);
	ck_assert_msg(!strstr(raw, "[redacted]"), "a field was redacted: %s", raw);
	ck_assert_str_eq(line_str(line, "event"), "config");
	ck_assert_str_eq(line_str(line, "sensitive_set"), "steam-key,admin-pin");
	ck_assert_str_eq(line_str(line, "sensitive_unset"), "");
	ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(line, "steam-key"));
	ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(line, "admin-pin"));
	ck_assert_str_eq(line_str(line, "playlist"), "casual");
	ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(line, "port")->valueint, 8080);
	cJSON_Delete(line);
	cc_config_release(&demo_spec, &r.cfg);
}
END_TEST

/* With a secret unset, the line says so by name. */
START_TEST(test_config_log_names_unset_secrets)
{
	struct run r;
	char raw[16384];
	cJSON *line;

	setenv("COSMIC_CLASH_ADMIN_PIN", "4321", 1);
	parse_with(&r, &demo_spec, NULL);
	assert_ok(&r);
	line = config_log_line(&r.cfg, raw, sizeof raw);
	ck_assert_str_eq(line_str(line, "sensitive_set"), "admin-pin");
	ck_assert_str_eq(line_str(line, "sensitive_unset"), "steam-key");
	cJSON_Delete(line);
	cc_config_release(&demo_spec, &r.cfg);

	unsetenv("COSMIC_CLASH_ADMIN_PIN");
	parse_with(&r, &demo_spec, NULL);
	assert_ok(&r);
	line = config_log_line(&r.cfg, raw, sizeof raw);
	ck_assert_str_eq(line_str(line, "sensitive_set"), "");
	ck_assert_str_eq(line_str(line, "sensitive_unset"), "steam-key,admin-pin");
	cJSON_Delete(line);
	cc_config_release(&demo_spec, &r.cfg);
}
END_TEST

/* ---- help ---------------------------------------------------------------- */

START_TEST(test_help_lists_every_option)
{
	char *help = cc_config_help(&demo_spec);
	char want[160];
	ck_assert_ptr_nonnull(help);
	for (size_t i = 0; i < CC_ARRAY_LEN(demo_options); i++) {
		snprintf(want, sizeof want, "  --%s", demo_options[i].name);
		ck_assert_msg(strstr(help, want), "help lacks %s:\n%s", want, help);
		ck_assert_msg(strstr(help, demo_options[i].help), "help lacks '%s'", demo_options[i].help);
	}
	static const char *const parts[] = {
		"usage: demo [options]\nA demo binary.\n",
		"--port=INT ",
		"listen port (default: 8080) [1, 65535] (env COSMIC_CLASH_PORT)\n",
		"--admin-port=INT",
		"(env COSMIC_CLASH_ADMIN_PORT)",
		"clock offset (default: -3) (env COSMIC_CLASH_OFFSET)\n", /* unbounded: no range */
		"--ratio=NUMBER",
		"(default: 0.5) [0, 1]",
		"--verbose[=BOOL]",
		"--playlist=casual|ranked",
		"--name=STRING",
		"Steam publisher key (secret: env COSMIC_CLASH_STEAM_KEY or --steam-key-file)\n",
		"(secret: env COSMIC_CLASH_ADMIN_PIN or --admin-pin-file)\n",
		"--config=PATH",
		"COSMIC_CLASH_CONFIG",
		"  --help ",
		"  --version ",
	};
	for (size_t i = 0; i < CC_ARRAY_LEN(parts); i++)
		ck_assert_msg(strstr(help, parts[i]), "help lacks [%s]:\n%s", parts[i], help);
	free(help);

	help = cc_config_help(&demo_pos_spec);
	ck_assert_ptr_nonnull(help);
	ck_assert_msg(!strncmp(help, "usage: demo [options] up | down N\n", 34), "%s", help);
	free(help);
}
END_TEST

/* ---- positional arguments -------------------------------------------------- */

static const struct positional_case {
	const char *args[5];
	int n;             /* expected positional count */
	const char *first; /* expected first positional */
	const char *error; /* expected single error, NULL = none */
} positional_cases[] = {
	{ { NULL }, 0, NULL, NULL },
	{ { "up" }, 1, "up", NULL },
	{ { "--port=1", "down", "3" }, 2, "down", NULL },
	{ { "down", "3", "--verbose" }, 2, "down", NULL },
	{ { "down", "-5" }, 2, "down", NULL }, /* negative numbers are arguments */
	{ { "-" }, 1, "-", NULL },
	{ { "--", "--port=1" }, 1, "--port=1", NULL },
	{ { "--port=2", "--", "--", "x" }, 2, "--", NULL },
	{ { "down", "--verbose", "3" }, 1, "down",
	  "'3': positional arguments must be given together, not split by options" },
};

START_TEST(test_positional)
{
	const struct positional_case *c = &positional_cases[_i];
	struct run r;
	parse_with(&r, &demo_pos_spec, c->args);
	if (c->error)
		assert_one_error(&r, c->error);
	else
		assert_ok(&r);
	ck_assert_int_eq(r.res.n_positional, c->n);
	ck_assert_ptr_nonnull(r.res.positional);
	if (c->first)
		ck_assert_str_eq(r.res.positional[0], c->first);
	cc_config_release(&demo_spec, &r.cfg);
}
END_TEST

/* After "--" the options stop: "--port=1" there is an argument, not a flag. */
START_TEST(test_double_dash_stops_options)
{
	struct run r;
	parse_with(&r, &demo_pos_spec, (const char *[]){ "--", "--port=1", NULL });
	assert_ok(&r);
	ck_assert_int_eq(r.cfg.port, 8080);
	cc_config_release(&demo_spec, &r.cfg);

	parse_with(&r, &demo_spec, (const char *[]){ "--", "--port=1", NULL });
	assert_one_error(&r, "unexpected argument '--port=1'");
	cc_config_release(&demo_spec, &r.cfg);
}
END_TEST

/* ---- config file ----------------------------------------------------------- */

START_TEST(test_config_file_values)
{
	struct run r;
	char conf[600];
	snprintf(conf, sizeof conf, "--config=%s",
		 write_file("ok.conf", "# a comment\n\n   \n  port =  7  \r\nname = a # not a comment\n"
				       "verbose = on\nplaylist=ranked\nratio = 0.25")); /* no final newline */
	parse_with(&r, &demo_spec, (const char *[]){ conf, NULL });
	assert_ok(&r);
	ck_assert_int_eq(r.cfg.port, 7);
	ck_assert_str_eq(r.cfg.name, "a # not a comment");
	ck_assert(r.cfg.verbose);
	ck_assert_str_eq(r.cfg.playlist, "ranked");
	ck_assert_double_eq(r.cfg.ratio, 0.25);
	cc_config_release(&demo_spec, &r.cfg);

	snprintf(conf, sizeof conf, "--config=%s", write_file("empty.conf", ""));
	parse_with(&r, &demo_spec, (const char *[]){ conf, NULL });
	assert_ok(&r);
	cc_config_release(&demo_spec, &r.cfg);
}
END_TEST

static const struct file_error_case {
	const char *content; /* NULL: the file does not exist */
	const char *want;    /* {path}: the config file */
} file_error_cases[] = {
	{ "port = 1\nport = 2\n", "{path}:2: port: already set on line 1" },
	{ "prot = 1\n", "{path}:1: unknown option 'prot'" },
	{ "help = 1\n", "{path}:1: unknown option 'help'" },
	{ "config = x\n", "{path}:1: unknown option 'config'" },
	{ "# c\n\nport 1\n", "{path}:3: expected 'name = value'" },
	{ "= 5\n", "{path}:1: expected 'name = value'" },
	{ "port = abc\n", "{path}:1: port: 'abc' is not an integer" },
	{ "admin-port = 0\n", "{path}:1: admin-port: 0 is out of range [1, 65535]" },
	{ NULL, "--config: cannot read '{path}': No such file or directory" },
};

START_TEST(test_config_file_errors)
{
	const struct file_error_case *c = &file_error_cases[_i];
	const char *path = c->content ? write_file("e.conf", c->content) : missing_path("none.conf");
	char conf[600];
	struct run r;
	snprintf(conf, sizeof conf, "--config=%s", path);
	parse_with(&r, &demo_spec, (const char *[]){ conf, NULL });
	assert_one_error(&r, expand(c->want, path));
	cc_config_release(&demo_spec, &r.cfg);
}
END_TEST

/* The caps: a 1,025-byte line, a NUL byte, a file over 64 KiB. */
START_TEST(test_config_file_limits)
{
	static char text[70 * 1024];
	char conf[600];
	struct run r;

	memset(text, 'x', 1025); /* line 2 is one byte too long; line 1 (1,024) is fine */
	memcpy(text, "#", 1);
	text[1024] = '\n';
	memcpy(text + 1025, "#", 1);
	memset(text + 1026, 'y', 1024);
	text[2050] = '\n';
	const char *path = write_bytes("long.conf", text, 2051);
	snprintf(conf, sizeof conf, "--config=%s", path);
	parse_with(&r, &demo_spec, (const char *[]){ conf, NULL });
	assert_one_error(&r, expand("{path}:2: line is longer than 1024 bytes", path));
	cc_config_release(&demo_spec, &r.cfg);

	path = write_bytes("nul.conf", "port = 1\nname = a\0b\n", 20);
	snprintf(conf, sizeof conf, "--config=%s", path);
	parse_with(&r, &demo_spec, (const char *[]){ conf, NULL });
	assert_one_error(&r, expand("{path}:2: contains a NUL byte", path));
	cc_config_release(&demo_spec, &r.cfg);

	for (size_t i = 0; i < sizeof text; i += 64) { /* 64-byte comment lines */
		memset(text + i, '#', 63);
		text[i + 63] = '\n';
	}
	path = write_bytes("big.conf", text, 64 * 1024);
	snprintf(conf, sizeof conf, "--config=%s", path);
	parse_with(&r, &demo_spec, (const char *[]){ conf, NULL });
	assert_ok(&r); /* exactly at the cap */
	cc_config_release(&demo_spec, &r.cfg);

	path = write_bytes("bigger.conf", text, 64 * 1024 + 1);
	snprintf(conf, sizeof conf, "--config=%s", path);
	parse_with(&r, &demo_spec, (const char *[]){ conf, NULL });
	assert_one_error(&r, expand("--config: '{path}' is larger than 65536 bytes", path));
	cc_config_release(&demo_spec, &r.cfg);

	setenv("COSMIC_CLASH_CONFIG", missing_path("gone.conf"), 1);
	parse_with(&r, &demo_spec, NULL);
	assert_one_error(&r, expand("COSMIC_CLASH_CONFIG: cannot read '{path}': No such file or directory",
				    missing_path("gone.conf")));
	cc_config_release(&demo_spec, &r.cfg);
}
END_TEST

/* ---- the table itself ------------------------------------------------------ */

struct mini_config {
	int64_t n;
	char *s;
};

static const struct table_case {
	struct cc_config_option opts[2];
	const char *args[2];
	const char *want;
} table_cases[] = {
	{ { { .name = "n", .type = CC_CFG_INT, .default_value = "abc", .offset = offsetof(struct mini_config, n) } },
	  { NULL },
	  "option table: n default: 'abc' is not an integer" },
	/* checked even when a flag overrides it, so any test of the binary catches it */
	{ { { .name = "n", .type = CC_CFG_INT, .default_value = "5", .min = 10, .max = 20,
	      .offset = offsetof(struct mini_config, n) } },
	  { "--n=15" },
	  "option table: n default: 5 is out of range [10, 20]" },
	{ { { .name = "s", .type = CC_CFG_ENUM, .default_value = "c", .choices = "a|b",
	      .offset = offsetof(struct mini_config, s) } },
	  { NULL },
	  "option table: s default: 'c' is not one of a|b" },
	{ { { .name = "s", .type = CC_CFG_ENUM, .offset = offsetof(struct mini_config, s) } },
	  { NULL },
	  "option table: s: an enum needs choices" },
	{ { { .name = "n", .type = CC_CFG_INT, .offset = offsetof(struct mini_config, n) },
	    { .name = "n", .type = CC_CFG_INT, .offset = offsetof(struct mini_config, n) } },
	  { NULL },
	  "option table: n: declared twice" },
	{ { { .name = "help", .type = CC_CFG_BOOL, .offset = offsetof(struct mini_config, n) } },
	  { NULL },
	  "option table: help: name is reserved" },
	{ { { .name = "Bad_Name", .type = CC_CFG_INT, .offset = offsetof(struct mini_config, n) } },
	  { NULL },
	  "option table: option 0: name must be 1-48 of [a-z0-9-]" },
	{ { { .name = "n", .type = CC_CFG_INT, .min = 5, .max = 1, .offset = offsetof(struct mini_config, n) } },
	  { NULL },
	  "option table: n: min 5 is above max 1" },
	{ { { .name = "s", .type = CC_CFG_STRING, .secret = true, .default_value = "x",
	      .offset = offsetof(struct mini_config, s) } },
	  { NULL },
	  "option table: s: a secret cannot have a default" },
	{ { { .name = "s", .type = CC_CFG_STRING, .secret = true, .offset = offsetof(struct mini_config, s) },
	    { .name = "s-file", .type = CC_CFG_STRING, .offset = offsetof(struct mini_config, s) } },
	  { NULL },
	  "option table: s-file: clashes with the file option of secret s" },
};

START_TEST(test_table_errors)
{
	const struct table_case *c = &table_cases[_i];
	struct cc_config_spec spec = { .program = "mini", .options = c->opts,
				       .n_options = c->opts[1].name ? 2 : 1 };
	struct mini_config cfg = { 0 };
	struct cc_config_result res;
	const char *argv[3] = { "mini", c->args[0], NULL };
	int rc = cc_config_parse(&spec, c->args[0] ? 2 : 1, (char *const *)argv, &cfg, &res);
	ck_assert_msg(rc == CC_EINVAL && res.n_errors == 1 && !strcmp(res.errors[0], c->want),
		      "expected exactly [%s], got: %s", c->want, errors_text(&res));
	cc_config_release(&spec, &cfg);
}
END_TEST

/* ---- required ------------------------------------------------------------- */

struct req_config {
	char *dsn;
	char *token;
};

static const struct cc_config_option req_options[] = {
	{ .name = "dsn", .type = CC_CFG_STRING, .required = true, .help = "database",
	  .offset = offsetof(struct req_config, dsn) },
	{ .name = "token", .type = CC_CFG_STRING, .required = true, .secret = true, .help = "admin token",
	  .offset = offsetof(struct req_config, token) },
};
static const struct cc_config_spec req_spec = { .program = "req", .options = req_options,
						.n_options = CC_ARRAY_LEN(req_options) };

START_TEST(test_required)
{
	struct req_config cfg = { 0 };
	struct cc_config_result res;
	char *argv[] = { (char *)"req", NULL };
	ck_assert_int_eq(cc_config_parse(&req_spec, 1, argv, &cfg, &res), CC_EINVAL);
	ck_assert_msg(res.n_errors == 2, "got: %s", errors_text(&res));
	ck_assert_str_eq(res.errors[0], "--dsn: required: set --dsn, COSMIC_CLASH_DSN or 'dsn' in the config file");
	ck_assert_str_eq(res.errors[1], "--token: required secret: set COSMIC_CLASH_TOKEN or --token-file");
	cc_config_release(&req_spec, &cfg);

	char *help = cc_config_help(&req_spec);
	ck_assert_ptr_nonnull(strstr(help, "database (required) (env COSMIC_CLASH_DSN)"));
	free(help);

	setenv("COSMIC_CLASH_DSN", "postgres://x", 1);
	setenv("COSMIC_CLASH_TOKEN", CANARY, 1);
	ck_assert_int_eq(cc_config_parse(&req_spec, 1, argv, &cfg, &res), 0);
	ck_assert_str_eq(cfg.dsn, "postgres://x");
	ck_assert_str_eq(cfg.token, CANARY);
	cc_config_release(&req_spec, &cfg);
}
END_TEST

START_TEST(test_release)
{
	struct run r;
	setenv("COSMIC_CLASH_STEAM_KEY", CANARY, 1);
	parse_with(&r, &demo_spec, (const char *[]){ "--name=n", "--playlist=ranked", NULL });
	assert_ok(&r);
	cc_config_release(&demo_spec, &r.cfg);
	ck_assert_ptr_null(r.cfg.name);
	ck_assert_ptr_null(r.cfg.playlist);
	ck_assert_ptr_null(r.cfg.steam_key);
	ck_assert_int_eq(r.cfg.port, 8080); /* numbers are left alone */
	cc_config_release(&demo_spec, &r.cfg); /* twice is harmless */
	cc_config_release(&demo_spec, NULL);
	cc_config_release(NULL, &r.cfg);
}
END_TEST

/* ---- cc_config_load_or_exit, in a child process -------------------------- */

/* Reads a whole small file into buf (NUL-terminated). */
static void slurp(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ssize_t n = read(fd, buf, len - 1);
	ck_assert_int_ge(n, 0);
	buf[n] = '\0';
	close(fd);
}

/*
 * Runs cc_config_load_or_exit in a child with stdout/stderr captured; a
 * child that returns prints "n=<count> first=<arg>" and exits 0.
 */
static int run_main(const struct cc_config_spec *spec, int argc, char *const argv[], char *out, char *err,
		    size_t len)
{
	char out_path[512], err_path[512];
	int status;
	snprintf(out_path, sizeof out_path, "%s/stdout", tmpdir);
	snprintf(err_path, sizeof err_path, "%s/stderr", tmpdir);
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
			_exit(99);
		struct demo_config cfg = { 0 };
		char *const *pos = NULL;
		int n = cc_config_load_or_exit(spec, argc, argv, &cfg, &pos);
		printf("n=%d first=%s\n", n, n > 0 ? pos[0] : "-");
		cc_config_release(spec, &cfg);
		exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	slurp(out_path, out, len);
	slurp(err_path, err, len);
	unlink(out_path);
	unlink(err_path);
	ck_assert_msg(WIFEXITED(status), "child died: status %d", status);
	return WEXITSTATUS(status);
}

START_TEST(test_load_or_exit)
{
	static char out[65536], err[65536];
	char version[256];

	char *help_argv[] = { (char *)"demo", (char *)"--bogus", (char *)"--help", NULL };
	ck_assert_int_eq(run_main(&demo_spec, 3, help_argv, out, err, sizeof out), 0); /* help wins */
	ck_assert_msg(!strncmp(out, "usage: demo [options]\n", 22), "stdout: %s", out);
	ck_assert_str_eq(err, "");

	char *version_argv[] = { (char *)"demo", (char *)"--version", NULL };
	ck_assert_int_eq(run_main(&demo_spec, 2, version_argv, out, err, sizeof out), 0);
	snprintf(version, sizeof version, "demo %s\n", cc_build_version);
	ck_assert_str_eq(out, version);

	char *bad_argv[] = { (char *)"demo", (char *)"--no-such-flag", (char *)"--port=abc", NULL };
	ck_assert_int_eq(run_main(&demo_spec, 3, bad_argv, out, err, sizeof out), 2);
	ck_assert_str_eq(err, "demo: --no-such-flag: unknown option\n"
			      "demo: --port: 'abc' is not an integer\n"
			      "demo: see --help\n");
	ck_assert_str_eq(out, "");

	char names[40][24], *many_argv[42] = { (char *)"demo" };
	for (int i = 0; i < 40; i++) {
		snprintf(names[i], sizeof names[i], "--bad%d", i);
		many_argv[i + 1] = names[i];
	}
	ck_assert_int_eq(run_main(&demo_spec, 41, many_argv, out, err, sizeof out), 2);
	ck_assert_msg(strstr(err, "demo: --bad31: unknown option\ndemo: ... and 8 more\ndemo: see --help\n"),
		      "stderr: %s", err);
	ck_assert_ptr_null(strstr(err, "--bad32"));

	char *ok_argv[] = { (char *)"demo", (char *)"--port=5", (char *)"down", (char *)"3", NULL };
	ck_assert_int_eq(run_main(&demo_pos_spec, 4, ok_argv, out, err, sizeof out), 0);
	ck_assert_str_eq(out, "n=2 first=down\n");
	ck_assert_str_eq(err, "");
}
END_TEST

static TCase *tcase(const char *name)
{
	TCase *tc = tcase_create(name);
	tcase_add_checked_fixture(tc, setup, teardown);
	return tc;
}

int main(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase("sources");
	tcase_add_test(tc, test_defaults);
	tcase_add_loop_test(tc, test_precedence, 0, CC_ARRAY_LEN(precedence_cases));
	tcase_add_test(tc, test_config_path_sources);
	tcase_add_loop_test(tc, test_flag_forms, 0, CC_ARRAY_LEN(flag_cases));
	tcase_add_loop_test(tc, test_bool_forms, 0, CC_ARRAY_LEN(bool_cases));
	suite_add_tcase(s, tc);

	tc = tcase("errors");
	tcase_add_loop_test(tc, test_value_errors, 0, CC_ARRAY_LEN(error_cases));
	tcase_add_test(tc, test_bad_value_leaves_field_unset);
	tcase_add_test(tc, test_all_errors_at_once);
	tcase_add_test(tc, test_overridden_values_not_validated);
	tcase_add_test(tc, test_error_cap);
	tcase_add_loop_test(tc, test_table_errors, 0, CC_ARRAY_LEN(table_cases));
	tcase_add_test(tc, test_required);
	suite_add_tcase(s, tc);

	tc = tcase("secrets");
	tcase_add_loop_test(tc, test_secret_flag_refused, 0, CC_ARRAY_LEN(secret_flag_cases));
	tcase_add_loop_test(tc, test_secret_sources, 0, CC_ARRAY_LEN(secret_source_cases));
	tcase_add_test(tc, test_secret_precedence);
	tcase_add_loop_test(tc, test_secret_errors, 0, CC_ARRAY_LEN(secret_error_cases));
	tcase_add_test(tc, test_secret_not_printed);
	tcase_add_test(tc, test_config_log_names_unset_secrets);
	suite_add_tcase(s, tc);

	tc = tcase("files");
	tcase_add_test(tc, test_config_file_values);
	tcase_add_loop_test(tc, test_config_file_errors, 0, CC_ARRAY_LEN(file_error_cases));
	tcase_add_test(tc, test_config_file_limits);
	suite_add_tcase(s, tc);

	tc = tcase("cli");
	tcase_add_test(tc, test_help_lists_every_option);
	tcase_add_loop_test(tc, test_positional, 0, CC_ARRAY_LEN(positional_cases));
	tcase_add_test(tc, test_double_dash_stops_options);
	tcase_add_test(tc, test_release);
	tcase_add_test(tc, test_load_or_exit);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
