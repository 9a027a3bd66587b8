/*
 * config.h - one declaration table per binary, turned into a read-only struct.
 *
 * A binary declares its options once (struct cc_config_option[]) with name,
 * type, default, range, help and whether the value is a secret, each pointing
 * at a field of the binary's own config struct by offsetof(). The same table
 * generates --help. Precedence, highest first:
 *
 *     --name=value / --name value   command-line flag
 *     COSMIC_CLASH_NAME             environment ("admin-port" -> ADMIN_PORT)
 *     name = value                  the config file (--config / COSMIC_CLASH_CONFIG)
 *     default_value                 the table
 *
 * Config file format: one "name = value" per line, '#' starts a comment line,
 * surrounding blanks are trimmed, at most 64 KiB and 1,024-byte lines.
 *
 * Secrets (secret = true) are never taken from a flag or the config file's
 * "name" key, because both leak (ps, backups): only from COSMIC_CLASH_NAME,
 * or from a file named by --name-file, COSMIC_CLASH_NAME_FILE or the config
 * file key "name-file" (contents trimmed of one trailing newline). They are
 * never printed: --help shows "(secret)", errors name the option, not the
 * value.
 *
 * Every problem (unknown flag, missing value, wrong type, out of range, a
 * flag given twice, a secret on the command line, an unreadable file, a
 * required option unset) is collected, so the user sees all of them at once;
 * cc_config_load_or_exit() prints them and exits with status 2.
 *
 * Ownership: string fields of the output struct are malloc'd and owned by
 * the struct; cc_config_release() frees them (wiping secrets first).
 */
#ifndef CC_CONFIG_H
#define CC_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cc.h"

enum cc_config_type {
	CC_CFG_STRING, /* field: char *   (NULL when unset and no default) */
	CC_CFG_INT,    /* field: int64_t  (decimal, range [min, max]) */
	CC_CFG_DOUBLE, /* field: double   (range [min, max]) */
	CC_CFG_BOOL,   /* field: bool     (true/false/1/0/yes/no/on/off; a bare --flag is true) */
	CC_CFG_ENUM,   /* field: char *   (one of choices, "casual|ranked") */
};

struct cc_config_option {
	const char *name;          /* "admin-port": flag --admin-port, env COSMIC_CLASH_ADMIN_PORT */
	enum cc_config_type type;  /* how the text is parsed and what the field is */
	const char *default_value; /* as text, parsed like any input; NULL = unset */
	double min, max;           /* inclusive range for INT and DOUBLE (both 0 = unbounded) */
	const char *choices;       /* ENUM only: '|'-separated allowed values */
	const char *help;          /* one line for --help */
	bool secret;               /* env or file only; never printed */
	bool required;             /* unset after all sources is an error */
	size_t offset;             /* offsetof(struct <binary>_config, field) */
};

struct cc_config_spec {
	const char *program;                    /* "cc-api" */
	const char *summary;                    /* one line under the usage */
	const char *positional;                 /* usage of positional args ("up | down N | status"), NULL = none allowed */
	const struct cc_config_option *options; /* the table */
	size_t n_options;
};

#define CC_CONFIG_MAX_ERRORS 32

struct cc_config_result {
	bool help;                                  /* --help was given */
	bool version;                               /* --version was given */
	int n_errors;                               /* problems found (capped list below) */
	char errors[CC_CONFIG_MAX_ERRORS][256];     /* "--port: 'abc' is not an integer" */
	int n_positional;                           /* positional arguments, in order */
	char *const *positional;                    /* points into argv */
};

/*
 * Parses argv, the environment and the config file into out (a zeroed struct
 * of the binary's type). Returns 0 when there were no problems, CC_EINVAL when
 * res->n_errors > 0 (out then holds what could be parsed and must still be
 * released). --help/--version only set flags in res.
 */
int cc_config_parse(const struct cc_config_spec *spec, int argc, char *const argv[], void *out,
		    struct cc_config_result *res) CC_MUST_CHECK;

/*
 * For mains: parses; on --help prints the generated help to stdout and exits
 * 0; on --version prints "<program> <cc_build_version>" and exits 0; on errors
 * prints every one to stderr as "<program>: <problem>" plus a hint to --help
 * and exits 2. Returns the number of positional args and sets *positional.
 */
int cc_config_load_or_exit(const struct cc_config_spec *spec, int argc, char *const argv[],
			   void *out, char *const **positional);

/* Writes --help text for spec to a malloc'd string (caller frees). */
char *cc_config_help(const struct cc_config_spec *spec);

/* Logs the effective configuration as one "config" event, secrets as "[set]"/"[unset]". */
void cc_config_log(const struct cc_config_spec *spec, const void *cfg);

/* Frees (and for secrets, wipes) every string field of cfg. NULL-safe. */
void cc_config_release(const struct cc_config_spec *spec, void *cfg);

#endif
