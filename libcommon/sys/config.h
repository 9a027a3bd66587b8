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
 * Every binary also has --help, --version and --config=PATH (env
 * COSMIC_CLASH_CONFIG); they are not in its table but appear in --help.
 *
 * Flags: "--name=value" or "--name value" (a next argument that starts with
 * "--" is not taken as a value: "--port: missing value"). A BOOL takes its
 * value only after '=': a bare "--verbose" is true, "--verbose=off" false.
 * "--" ends the options. Positional arguments are allowed only when
 * spec->positional is set; they must sit together in argv (options may come
 * before or after them, not between), because res->positional points into
 * argv. An empty environment variable counts as unset; COSMIC_CLASH_*
 * variables that name no option are ignored (binaries share one environment).
 *
 * Config file format: one "name = value" per line, '#' starts a comment line,
 * surrounding blanks are trimmed, at most 64 KiB and 1,024-byte lines. The
 * value is literal (no quotes, no trailing comments). An unknown key, a key
 * given twice or a line without '=' is an error naming file:line.
 *
 * What is validated: every flag and every config file line (syntax, unknown
 * names, duplicates), then for each option only the value that wins; a bad
 * COSMIC_CLASH_PORT under a good --port is not reported. Table defaults are
 * always validated, and so is the table itself (names, duplicates, ranges),
 * so a mistake in a binary's table fails every test that parses it.
 *
 * Secrets (secret = true) are never taken from a flag or the config file's
 * "name" key, because both leak (ps, backups): only from COSMIC_CLASH_NAME,
 * or from a file named by --name-file, COSMIC_CLASH_NAME_FILE or the config
 * file key "name-file" (contents trimmed of one trailing newline; capped at
 * 64 KiB; an empty file is an error; a relative path is relative to the
 * working directory). Setting both COSMIC_CLASH_NAME and
 * COSMIC_CLASH_NAME_FILE is an error. A secret cannot have a default. They
 * are never printed: --help shows "(secret: ...)", errors name the option and
 * the file path, never the value; cc_config_log lists them as set or unset.
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

#include "sys/cc.h"

enum cc_config_type {
	CC_CFG_STRING, /* field: char *   (NULL when unset and no default) */
	CC_CFG_INT,    /* field: int64_t  (decimal, range [min, max]) */
	CC_CFG_DOUBLE, /* field: double   (range [min, max]) */
	CC_CFG_BOOL,   /* field: bool     (true/false/1/0/yes/no/on/off; a bare --flag is true) */
	CC_CFG_ENUM,   /* field: char *   (one of choices, "debug|info|warn") */
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
	int n_errors;                               /* every problem found; may exceed the list */
	char errors[CC_CONFIG_MAX_ERRORS][256];     /* the first ones, in the order found */
	int n_positional;                           /* positional arguments, in order */
	char *const *positional;                    /* points into argv */
};

/*
 * Error texts name the option as the user spelled it and quote the value
 * (control bytes as \xNN, long values cut with "..."), never a secret's:
 *   --port: 'abc' is not an integer        --port: missing value
 *   --admin-port: 70000 is out of range [1, 65535]
 *   --no-such-flag: unknown option         --port: given twice
 *   COSMIC_CLASH_PORT: 'abc' is not an integer
 *   /etc/cc.conf:3: unknown option 'prot'  /etc/cc.conf:4: port: 'x' is not an integer
 * Order found: mistakes in the table, then argv left to right, then config
 * file lines, then each option's value in table order (then required).
 * When n_errors > CC_CONFIG_MAX_ERRORS the printer adds "... and N more".
 */

/*
 * Parses argv, the environment and the config file into out (a zeroed struct
 * of the binary's type). Returns 0 when there were no problems, CC_EINVAL when
 * res->n_errors > 0 (out then holds what could be parsed and must still be
 * released; an option whose value was bad stays zero/NULL). --help/--version
 * only set flags in res. res is always fully written. A NULL spec, res or
 * out is a BUG().
 */
int cc_config_parse(const struct cc_config_spec *spec, int argc, char *const argv[], void *out,
		    struct cc_config_result *res) CC_MUST_CHECK;

/*
 * For mains: parses; on --help prints the generated help to stdout and exits
 * 0 (even when there were other problems); on --version prints "<program>
 * <cc_build_version>" and exits 0; on errors prints every one to stderr as
 * "<program>: <problem>", then "<program>: ... and N more" past the cap, then
 * "<program>: see --help", and exits 2 (out is released before any exit).
 * Returns the number of positional args and sets *positional.
 */
int cc_config_load_or_exit(const struct cc_config_spec *spec, int argc, char *const argv[],
			   void *out, char *const **positional);

/*
 * Writes --help text for spec to a malloc'd string (caller frees; NULL when
 * out of memory): the usage line, the summary, then one line per option
 * ("  --port=INT  help (default: 8080) [1, 65535] (env COSMIC_CLASH_PORT)"),
 * then --config, --help and --version. Capped at 64 KiB.
 */
char *cc_config_help(const struct cc_config_spec *spec);

/*
 * Logs the effective configuration as one "config" event: one field per
 * non-secret option, named like the option; then the secret options' names
 * in two comma-separated lists, "sensitive_set" and "sensitive_unset" (""
 * when none; a secret number or bool counts as set when non-zero), never
 * their values. Field names the log redacts (log.h) would hide even that,
 * hence the lists. Mark any option whose value may carry a credential (a
 * DSN with a password) secret, or it is logged.
 */
void cc_config_log(const struct cc_config_spec *spec, const void *cfg);

/* Frees (and for secrets, wipes) every string field of cfg. NULL-safe. */
void cc_config_release(const struct cc_config_spec *spec, void *cfg);

#endif
