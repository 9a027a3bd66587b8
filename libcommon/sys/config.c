/*
 * config.c - a binary's option table turned into its config struct; the
 * contract (sources, precedence, secrets, error rules) is in config.h.
 *
 * One parse runs in fixed stages so problems come out in a predictable
 * order: the table itself, argv, the config file, then each option in table
 * order (pick the winning source, parse it into the field, check required).
 * Scratch state lives only for the duration of cc_config_parse(): one
 * struct source per option and the config file text, which values point
 * into until they are parsed.
 */
#include "sys/charset.h"
#include "sys/config.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "sys/file.h"
#include "sys/log.h"
#include "sys/banned.h"

#define ENV_PREFIX "COSMIC_CLASH_"
#define NAME_MAX_LEN 48           /* option name; bounds env names and help columns */
#define ENV_NAME_MAX 80           /* ENV_PREFIX + NAME_MAX_LEN + "_FILE" + NUL fits */
#define FILE_CAP (64 * 1024)      /* config file and secret file size cap */
#define FILE_LINE_CAP 1024        /* config file line cap, newline excluded */
#define HELP_CAP (64 * 1024)      /* generated --help text cap */
#define SHOW_VALUE 64             /* bytes of a value quoted in an error */
#define SHOW_PATH 128             /* bytes of a path quoted in an error */
#define WHERE_MAX 200             /* "path:line: name" naming a value's source */

/* Where one option's candidate values were found in argv and the config file. */
struct source {
	const char *flag;     /* --name value (secrets: the --name-file path); points into argv */
	const char *file_val; /* config file value (secrets: the name-file path); points into file_text */
	int file_line;        /* line of file_val, for messages and duplicates */
};

/* The state of one cc_config_parse() call. */
struct parse {
	const struct cc_config_spec *spec;
	struct cc_config_result *res;
	struct source *src;         /* spec->n_options entries, calloc'd */
	const char *config_path;    /* --config PATH, NULL when absent */
	char config_shown[SHOW_PATH + 8]; /* the config path as errors print it */
	char *file_text;            /* config file, NUL-terminated, edited in place; wiped and freed */
	size_t file_len;            /* bytes in file_text */
};

/* Appends one problem to res (the first CC_CONFIG_MAX_ERRORS are kept; all are counted). */
static void CC_PRINTF(2, 3) add_error(struct cc_config_result *res, const char *fmt, ...)
{
	if (res->n_errors < CC_CONFIG_MAX_ERRORS) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(res->errors[res->n_errors], sizeof res->errors[0], fmt, ap);
		va_end(ap);
	}
	res->n_errors++;
}

/*
 * Copies s into out (size outsz, at least 8) as printable ASCII: bytes
 * outside 0x20..0x7e become \xNN and a value that does not fit ends in
 * "...". User text goes through here before it reaches a message, so a value
 * cannot forge a second stderr line or flood it. Returns out.
 */
static const char *show(char *out, size_t outsz, const char *s)
{
	size_t n = 0, room = outsz - 4; /* keep space for "..." and NUL */
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		size_t need = (c >= 0x20 && c < 0x7f) ? 1 : 4;
		if (n + need > room) {
			memcpy(out + n, "...", 4);
			return out;
		}
		if (need == 1)
			out[n] = (char)c;
		else
			snprintf(out + n, 5, "\\x%02x", c);
		n += need;
	}
	out[n] = '\0';
	return out;
}

/* True when arg is spelled like an option; "-", "-5" and "-.5" are values. */
static bool is_option_like(const char *arg)
{
	return arg[0] == '-' && arg[1] != '\0' && !isdigit((unsigned char)arg[1]) && arg[1] != '.';
}

/* Writes "COSMIC_CLASH_<NAME><suffix>" ('-' -> '_', upper case) into out[ENV_NAME_MAX]. */
static void env_name(char *out, const char *name, const char *suffix)
{
	size_t n = snprintf(out, ENV_NAME_MAX, "%s%s%s", ENV_PREFIX, name, suffix);
	for (size_t i = strlen(ENV_PREFIX); i < n && i < ENV_NAME_MAX; i++)
		out[i] = out[i] == '-' ? '_' : (char)toupper((unsigned char)out[i]);
}

/* getenv() that treats an empty variable as unset (see config.h). */
static const char *getenv_set(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

/* Finds an option by its name (length n, not NUL-terminated); NULL if none. */
static const struct cc_config_option *find_option(const struct cc_config_spec *spec, const char *name,
						  size_t n, size_t *index)
{
	for (size_t i = 0; i < spec->n_options; i++) {
		const char *o = spec->options[i].name;
		if (strlen(o) == n && memcmp(o, name, n) == 0) {
			*index = i;
			return &spec->options[i];
		}
	}
	return NULL;
}

/* Finds the secret whose file key "<name>-file" is name (length n); NULL if none. */
static const struct cc_config_option *find_secret_file(const struct cc_config_spec *spec, const char *name,
						       size_t n, size_t *index)
{
	static const char suffix[] = "-file";
	size_t sl = sizeof suffix - 1;
	if (n <= sl || memcmp(name + n - sl, suffix, sl) != 0)
		return NULL;
	const struct cc_config_option *opt = find_option(spec, name, n - sl, index);
	return opt && opt->secret ? opt : NULL;
}

/* ---- values ------------------------------------------------------------ */

/* A value's text plus how an error names it. */
struct input {
	const char *text;  /* the value as given */
	const char *where; /* "--port", "COSMIC_CLASH_PORT", "cc.conf:3: port" */
	bool secret;       /* never show text */
};

/* The inclusive INT range of opt as int64_t (both 0 = unbounded). */
static void int_bounds(const struct cc_config_option *opt, int64_t *lo, int64_t *hi)
{
	bool unbounded = opt->min == 0 && opt->max == 0;
	*lo = unbounded || opt->min <= -0x1p63 ? INT64_MIN : (int64_t)ceil(opt->min);
	*hi = unbounded || opt->max >= 0x1p63 ? INT64_MAX : (int64_t)floor(opt->max);
}

/* True when s is one of the '|'-separated choices. */
static bool is_choice(const char *choices, const char *s)
{
	size_t n = strlen(s);
	for (const char *p = choices;;) {
		const char *bar = strchr(p, '|');
		size_t len = bar ? (size_t)(bar - p) : strlen(p);
		if (len == n && memcmp(p, s, n) == 0)
			return true;
		if (!bar)
			return false;
		p = bar + 1;
	}
}

/* Parses a boolean spelling; false when s is none of them. */
static bool parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "true", "1", "yes", "on" };
	static const char *const no[] = { "false", "0", "no", "off" };
	for (size_t i = 0; i < CC_ARRAY_LEN(yes); i++) {
		if (strcasecmp(s, yes[i]) == 0 || strcasecmp(s, no[i]) == 0) {
			*out = strcasecmp(s, yes[i]) == 0;
			return true;
		}
	}
	return false;
}

/*
 * Reports that in's value "<problem>"; secrets say "the value" instead of
 * quoting it. quoted chooses between "'abc' is ..." and "70000 is ...".
 */
static void value_error(struct cc_config_result *res, const struct input *in, bool quoted, const char *problem)
{
	char v[SHOW_VALUE];
	if (in->secret)
		add_error(res, "%s: the value (secret, not shown) %s", in->where, problem);
	else if (quoted)
		add_error(res, "%s: '%s' %s", in->where, show(v, sizeof v, in->text), problem);
	else
		add_error(res, "%s: %s %s", in->where, show(v, sizeof v, in->text), problem);
}

/* Checks and stores an INT; false after reporting a problem. */
static bool parse_int_value(struct cc_config_result *res, const struct cc_config_option *opt,
			    const struct input *in, int64_t *field)
{
	const char *s = in->text, *digits = s + (*s == '-');
	char range[96], *end;
	int64_t lo, hi;
	int_bounds(opt, &lo, &hi);
	snprintf(range, sizeof range, "is out of range [%" PRId64 ", %" PRId64 "]", lo, hi);
	/* strtoll alone would accept " 1", "+1" and "" */
	if (!isdigit((unsigned char)*digits)) {
		value_error(res, in, true, "is not an integer");
		return false;
	}
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (*end != '\0') {
		value_error(res, in, true, "is not an integer");
		return false;
	}
	if (errno == ERANGE || v < lo || v > hi) {
		value_error(res, in, false, range);
		return false;
	}
	if (field)
		*field = v;
	return true;
}

/* Checks and stores a DOUBLE; false after reporting a problem. */
static bool parse_double_value(struct cc_config_result *res, const struct cc_config_option *opt,
			       const struct input *in, double *field)
{
	char range[96], *end;
	if (in->text[0] == '\0' || isspace((unsigned char)in->text[0])) {
		value_error(res, in, true, "is not a number");
		return false;
	}
	double v = strtod(in->text, &end);
	if (*end != '\0') {
		value_error(res, in, true, "is not a number");
		return false;
	}
	if (!isfinite(v)) {
		value_error(res, in, true, "is not a finite number");
		return false;
	}
	if (!(opt->min == 0 && opt->max == 0) && (v < opt->min || v > opt->max)) {
		snprintf(range, sizeof range, "is out of range [%g, %g]", opt->min, opt->max);
		value_error(res, in, false, range);
		return false;
	}
	if (field)
		*field = v;
	return true;
}

/* strdup()s in->text into the char * at field (NULL: nothing to store). */
static bool store_string(struct cc_config_result *res, const struct input *in, void *field)
{
	char *copy;
	if (!field)
		return true;
	copy = strdup(in->text);
	if (!copy) {
		add_error(res, "%s: out of memory", in->where);
		return false;
	}
	*(char **)field = copy;
	return true;
}

/*
 * Parses in->text as opt's type into field, or only validates it when field
 * is NULL. Strings are strdup'd into the field. Returns false after adding
 * exactly one error.
 */
static bool parse_value(struct cc_config_result *res, const struct cc_config_option *opt,
			const struct input *in, void *field)
{
	switch (opt->type) {
	case CC_CFG_INT:
		return parse_int_value(res, opt, in, field);
	case CC_CFG_DOUBLE:
		return parse_double_value(res, opt, in, field);
	case CC_CFG_BOOL: {
		bool b;
		if (!parse_bool(in->text, &b)) {
			value_error(res, in, true, "is not a boolean (true|false|yes|no|on|off|1|0)");
			return false;
		}
		if (field)
			*(bool *)field = b;
		return true;
	}
	case CC_CFG_ENUM:
		if (!is_choice(opt->choices, in->text)) {
			char problem[160];
			snprintf(problem, sizeof problem, "is not one of %s", opt->choices);
			value_error(res, in, true, problem);
			return false;
		}
		return store_string(res, in, field);
	case CC_CFG_STRING:
		return store_string(res, in, field);
	}
	add_error(res, "%s: unknown option type", in->where);
	return false;
}

/* ---- files ------------------------------------------------------------- */

/* Wipes and frees a buffer that may have held a secret. NULL is a no-op. */
static void free_wiped(char *buf, size_t len)
{
	if (buf) {
		explicit_bzero(buf, len);
		free(buf);
	}
}

/*
 * Reads the file at path (a config file or a secret file: wiped on every
 * path) into a malloc'd, NUL-terminated buffer (*out, *len; the caller
 * wipes and frees it). Not limited to regular files: a secret may come from
 * a pipe (--NAME-file=<(...)). Returns 0 or cc_file_read()'s code, with
 * *err = errno for CC_EIO.
 */
static int read_capped_file(const char *path, char **out, size_t *out_len, int *err)
{
	struct cc_file_error fe;
	int rc = cc_file_read(path, FILE_CAP, CC_FILE_SECRET, out, out_len, &fe);
	*err = fe.errnum;
	return rc;
}

/* Reports why read_capped_file() failed on path, from the source named where. */
static void file_error(struct cc_config_result *res, const char *where, const char *path, int rc, int err)
{
	char p[SHOW_PATH];
	show(p, sizeof p, path);
	if (rc == CC_EIO)
		add_error(res, "%s: cannot read '%s': %s", where, p, strerror(err));
	else if (rc == CC_ETOOBIG)
		add_error(res, "%s: '%s' is larger than %d bytes", where, p, FILE_CAP);
	else
		add_error(res, "%s: '%s': %s", where, p, cc_strerror(rc));
}

/* Returns s with blanks stripped on both ends, writing a NUL after the last non-blank. */
static char *trim(char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	size_t n = strlen(s);
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		n--;
	s[n] = '\0';
	return s;
}

/* Handles one config file line (NUL-terminated, in file_text); lineno counts from 1. */
static void parse_config_line(struct parse *ps, char *line, int lineno)
{
	const struct cc_config_spec *spec = ps->spec;
	char *s = trim(line), *eq = strchr(s, '='), k[SHOW_VALUE];
	size_t i;
	if (*s == '\0' || *s == '#')
		return;
	if (!eq || eq == s) {
		add_error(ps->res, "%s:%d: expected 'name = value'", ps->config_shown, lineno);
		return;
	}
	*eq = '\0';
	char *key = trim(s), *value = trim(eq + 1);
	const struct cc_config_option *opt = find_option(spec, key, strlen(key), &i);
	if (opt && opt->secret) {
		char env[ENV_NAME_MAX];
		env_name(env, opt->name, "");
		add_error(ps->res, "%s:%d: %s is a secret: pass it in %s or a file via %s-file",
			  ps->config_shown, lineno, opt->name, env, opt->name);
		return;
	}
	if (!opt)
		opt = find_secret_file(spec, key, strlen(key), &i);
	if (!opt) {
		add_error(ps->res, "%s:%d: unknown option '%s'", ps->config_shown, lineno, show(k, sizeof k, key));
		return;
	}
	if (ps->src[i].file_val) {
		add_error(ps->res, "%s:%d: %s: already set on line %d", ps->config_shown, lineno, key,
			  ps->src[i].file_line);
		return;
	}
	ps->src[i].file_val = value;
	ps->src[i].file_line = lineno;
}

/*
 * Reads the config file named by --config or COSMIC_CLASH_CONFIG (if any)
 * into ps->file_text and records each known key's value in ps->src.
 */
static void load_config_file(struct parse *ps)
{
	const char *where = "--config", *path = ps->config_path;
	int err = 0;
	if (!path) {
		where = ENV_PREFIX "CONFIG";
		path = getenv_set(where);
	}
	if (!path)
		return;
	show(ps->config_shown, sizeof ps->config_shown, path);
	int rc = read_capped_file(path, &ps->file_text, &ps->file_len, &err);
	if (rc != 0) {
		file_error(ps->res, where, path, rc, err);
		return;
	}
	char *p = ps->file_text, *end = p + ps->file_len;
	for (int lineno = 1; p < end; lineno++) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		p[len] = '\0'; /* the '\n', or the buffer's own NUL */
		if (len > FILE_LINE_CAP)
			add_error(ps->res, "%s:%d: line is longer than %d bytes", ps->config_shown, lineno,
				  FILE_LINE_CAP);
		else if (strlen(p) != len)
			add_error(ps->res, "%s:%d: contains a NUL byte", ps->config_shown, lineno);
		else
			parse_config_line(ps, p, lineno);
		p += len + 1;
	}
}

/* ---- argv -------------------------------------------------------------- */

/*
 * Takes the value of the option at argv[*i]: "=value", else (non-BOOL) the
 * next argument unless it looks like "--option". Returns NULL when missing.
 */
static const char *take_value(int argc, char *const argv[], int *i, const char *eq, bool is_bool)
{
	if (eq)
		return eq + 1;
	if (is_bool)
		return "true";
	if (*i + 1 < argc && strncmp(argv[*i + 1], "--", 2) != 0)
		return argv[++*i];
	return NULL;
}

/* Handles one "--name[=value]" at argv[*i] (may consume argv[*i + 1]). */
static void scan_option(struct parse *ps, int argc, char *const argv[], int *i)
{
	const struct cc_config_spec *spec = ps->spec;
	struct cc_config_result *res = ps->res;
	const char *arg = argv[*i], *name = arg + 2, *eq = strchr(arg, '=');
	size_t n = eq ? (size_t)(eq - arg) : strlen(arg), idx;
	char spelled[SHOW_VALUE], shown[SHOW_VALUE];
	/* spelled: the option as typed, never its value (a mistyped secret flag) */
	snprintf(spelled, sizeof spelled, "%.*s", (int)(n < sizeof spelled - 1 ? n : sizeof spelled - 1), arg);
	show(shown, sizeof shown, spelled);
	if (strncmp(arg, "--", 2) != 0 || n == 2) {
		add_error(res, "%s: unknown option (options are spelled --name)", shown);
		return;
	}
	n -= 2; /* from here on, the length of name */
	if ((n == 4 && !memcmp(name, "help", 4)) || (n == 7 && !memcmp(name, "version", 7))) {
		if (eq)
			add_error(res, "--%.*s: takes no value", (int)n, name);
		else if (n == 4)
			res->help = true;
		else
			res->version = true;
		return;
	}
	if (n == 6 && !memcmp(name, "config", 6)) {
		const char *v = take_value(argc, argv, i, eq, false);
		if (!v)
			add_error(res, "--config: missing value");
		else if (ps->config_path)
			add_error(res, "--config: given twice");
		else
			ps->config_path = v;
		return;
	}
	const struct cc_config_option *opt = find_option(spec, name, n, &idx);
	if (opt && opt->secret) {
		char env[ENV_NAME_MAX];
		/* consume the value too, so it never resurfaces as "unexpected argument" */
		(void)take_value(argc, argv, i, eq, opt->type == CC_CFG_BOOL);
		env_name(env, opt->name, "");
		add_error(res, "--%s is a secret: pass it in %s or a file via --%s-file", opt->name, env, opt->name);
		return;
	}
	bool secret_file = false;
	if (!opt)
		secret_file = (opt = find_secret_file(spec, name, n, &idx)) != NULL;
	if (!opt) {
		add_error(res, "%s: unknown option", shown);
		return;
	}
	const char *v = take_value(argc, argv, i, eq, !secret_file && opt->type == CC_CFG_BOOL);
	if (!v)
		add_error(res, "--%.*s: missing value", (int)n, name);
	else if (ps->src[idx].flag)
		add_error(res, "--%.*s: given twice", (int)n, name);
	else
		ps->src[idx].flag = v;
}

/*
 * Walks argv: options into ps->src, positional arguments into res. The
 * positional arguments must form one run in argv (res->positional points
 * into it), so options may come before or after them but not between.
 */
static void scan_argv(struct parse *ps, int argc, char *const argv[])
{
	struct cc_config_result *res = ps->res;
	int first = -1, last = -1;
	bool options_done = false;
	char shown[SHOW_VALUE];
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		if (!options_done && strcmp(arg, "--") == 0) {
			options_done = true;
		} else if (!options_done && is_option_like(arg)) {
			scan_option(ps, argc, argv, &i);
		} else if (!ps->spec->positional) {
			add_error(res, "unexpected argument '%s'", show(shown, sizeof shown, arg));
		} else if (first < 0 || last == i - 1) {
			first = first < 0 ? i : first;
			last = i;
		} else {
			add_error(res, "'%s': positional arguments must be given together, not split by options",
				  show(shown, sizeof shown, arg));
		}
	}
	res->n_positional = first < 0 ? 0 : last - first + 1;
	if (first >= 0)
		res->positional = argv + first;
}

/* ---- resolution -------------------------------------------------------- */

/*
 * Fills a secret option from, in order: --name-file; COSMIC_CLASH_NAME or
 * COSMIC_CLASH_NAME_FILE (both is an error); the config key name-file.
 */
static void resolve_secret(struct parse *ps, size_t i, void *field)
{
	const struct cc_config_option *opt = &ps->spec->options[i];
	const struct source *src = &ps->src[i];
	char env[ENV_NAME_MAX], env_file[ENV_NAME_MAX], where[WHERE_MAX];
	const char *env_val, *env_path, *path = NULL;
	struct input in = { .where = where, .secret = true };
	char *buf = NULL;
	size_t len = 0;
	int err = 0;

	env_name(env, opt->name, "");
	env_name(env_file, opt->name, "_FILE");
	env_val = getenv_set(env);
	env_path = getenv_set(env_file);
	if (src->flag) {
		path = src->flag;
		snprintf(where, sizeof where, "--%s-file", opt->name);
	} else if (env_val && env_path) {
		add_error(ps->res, "%s and %s are both set: use one", env, env_file);
		return;
	} else if (env_val) {
		in.text = env_val;
		snprintf(where, sizeof where, "%s", env);
	} else if (env_path) {
		path = env_path;
		snprintf(where, sizeof where, "%s", env_file);
	} else if (src->file_val) {
		path = src->file_val;
		snprintf(where, sizeof where, "%s:%d: %s-file", ps->config_shown, src->file_line, opt->name);
	} else {
		if (opt->required)
			add_error(ps->res, "--%s: required secret: set %s or --%s-file", opt->name, env, opt->name);
		return;
	}
	if (path) {
		char p[SHOW_PATH];
		int rc = read_capped_file(path, &buf, &len, &err);
		if (rc != 0) {
			file_error(ps->res, where, path, rc, err);
			return;
		}
		if (len > 0 && buf[len - 1] == '\n')
			buf[--len] = '\0';
		if (len > 0 && buf[len - 1] == '\r') /* the same newline, edited on Windows */
			buf[--len] = '\0';
		if (len == 0)
			add_error(ps->res, "%s: '%s' is empty", where, show(p, sizeof p, path));
		else if (strlen(buf) != len)
			add_error(ps->res, "%s: '%s' contains a NUL byte", where, show(p, sizeof p, path));
		else
			in.text = buf;
	}
	if (in.text)
		(void)parse_value(ps->res, opt, &in, field);
	free_wiped(buf, len);
}

/*
 * Fills option i of out from the first source that has it: flag, env,
 * config file, default. Only that value is parsed; the table default is
 * always validated, so a bad default fails every test that parses.
 */
static void resolve_option(struct parse *ps, size_t i, void *out)
{
	const struct cc_config_option *opt = &ps->spec->options[i];
	const struct source *src = &ps->src[i];
	void *field = (char *)out + opt->offset;
	char env[ENV_NAME_MAX], where[WHERE_MAX], dwhere[WHERE_MAX];
	struct input in = { .where = where }, def = { .text = opt->default_value, .where = dwhere };

	if (opt->secret) {
		resolve_secret(ps, i, field);
		return;
	}
	env_name(env, opt->name, "");
	snprintf(dwhere, sizeof dwhere, "option table: %s default", opt->name);
	if (src->flag) {
		in.text = src->flag;
		snprintf(where, sizeof where, "--%s", opt->name);
	} else if ((in.text = getenv_set(env))) {
		snprintf(where, sizeof where, "%s", env);
	} else if (src->file_val) {
		in.text = src->file_val;
		snprintf(where, sizeof where, "%s:%d: %s", ps->config_shown, src->file_line, opt->name);
	}
	if (in.text) {
		if (def.text)
			(void)parse_value(ps->res, opt, &def, NULL);
		(void)parse_value(ps->res, opt, &in, field);
	} else if (def.text) {
		(void)parse_value(ps->res, opt, &def, field);
	} else if (opt->required) {
		add_error(ps->res, "--%s: required: set --%s, %s or '%s' in the config file", opt->name, opt->name,
			  env, opt->name);
	}
}

/* True when name is 1..NAME_MAX_LEN of [a-z0-9-], starting with a letter or digit. */
static bool valid_name(const char *name)
{
	return cc_charset_valid(name, NAME_MAX_LEN, CC_CHARSET_LOWER | CC_CHARSET_DIGIT, "-") && name[0] != '-';
}

/* Reports mistakes in the table itself (programming errors); false if any. */
static bool check_table(const struct cc_config_spec *spec, struct cc_config_result *res)
{
	int before = res->n_errors;
	if (!spec->program || (!spec->options && spec->n_options > 0)) {
		add_error(res, "option table: program and options must be set");
		return false;
	}
	for (size_t i = 0; i < spec->n_options; i++) {
		const struct cc_config_option *opt = &spec->options[i];
		size_t j;
		if (!valid_name(opt->name)) {
			add_error(res, "option table: option %zu: name must be 1-%d of [a-z0-9-]", i, NAME_MAX_LEN);
			continue;
		}
		if (!strcmp(opt->name, "help") || !strcmp(opt->name, "version") || !strcmp(opt->name, "config"))
			add_error(res, "option table: %s: name is reserved", opt->name);
		if (find_option(spec, opt->name, strlen(opt->name), &j) && j != i)
			add_error(res, "option table: %s: declared twice", opt->name);
		if (find_secret_file(spec, opt->name, strlen(opt->name), &j))
			add_error(res, "option table: %s: clashes with the file option of secret %s", opt->name,
				  spec->options[j].name);
		if ((unsigned)opt->type > CC_CFG_ENUM)
			add_error(res, "option table: %s: unknown type %d", opt->name, (int)opt->type);
		if (opt->type == CC_CFG_ENUM && (!opt->choices || !*opt->choices))
			add_error(res, "option table: %s: an enum needs choices", opt->name);
		if (!(opt->min <= opt->max))
			add_error(res, "option table: %s: min %g is above max %g", opt->name, opt->min, opt->max);
		if (opt->secret && opt->default_value)
			add_error(res, "option table: %s: a secret cannot have a default", opt->name);
	}
	return res->n_errors == before;
}

int cc_config_parse(const struct cc_config_spec *spec, int argc, char *const argv[], void *out,
		    struct cc_config_result *res)
{
	struct parse ps = { .spec = spec, .res = res };
	if (!spec || !res || (!out && spec->n_options > 0) || (argc > 0 && !argv))
		CC_BUG("cc_config_parse: NULL spec, out, res or argv");
	memset(res, 0, sizeof *res);
	res->positional = argv ? argv + (argc > 0 ? argc : 0) : NULL;
	if (!check_table(spec, res))
		goto out;
	ps.src = calloc(spec->n_options ? spec->n_options : 1, sizeof *ps.src);
	if (!ps.src) {
		add_error(res, "out of memory");
		goto out;
	}
	scan_argv(&ps, argc, argv);
	load_config_file(&ps);
	for (size_t i = 0; i < spec->n_options; i++)
		resolve_option(&ps, i, out);
out:
	free_wiped(ps.file_text, ps.file_len);
	free(ps.src);
	return res->n_errors > 0 ? CC_EINVAL : 0;
}

/* ---- help, log, release ----------------------------------------------- */

/* A bounded text buffer for --help: writes past HELP_CAP are dropped. */
struct text {
	char *buf;  /* HELP_CAP bytes, NUL-terminated */
	size_t len; /* bytes used */
};

static void CC_PRINTF(2, 3) text_add(struct text *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(t->buf + t->len, HELP_CAP - t->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		t->len = (size_t)n < HELP_CAP - t->len ? t->len + (size_t)n : HELP_CAP - 1;
}

/* Writes the "--name=TYPE" column of opt into out. */
static void help_flag(char *out, size_t outsz, const struct cc_config_option *opt)
{
	static const char *const types[] = { "STRING", "INT", "NUMBER", "BOOL", "" };
	if (opt->type == CC_CFG_BOOL)
		snprintf(out, outsz, "--%s[=BOOL]", opt->name);
	else if (opt->type == CC_CFG_ENUM)
		snprintf(out, outsz, "--%s=%s", opt->name, opt->choices);
	else
		snprintf(out, outsz, "--%s=%s", opt->name,
			 (unsigned)opt->type < CC_ARRAY_LEN(types) ? types[opt->type] : "?");
}

/* Appends one option's help line: flag column, help, default, range, required, env. */
static void help_option(struct text *t, const struct cc_config_option *opt, int width)
{
	char flag[160], env[ENV_NAME_MAX];
	help_flag(flag, sizeof flag, opt);
	env_name(env, opt->name, "");
	text_add(t, "  %-*s  %s", width, flag, opt->help ? opt->help : "");
	if (opt->default_value && !opt->secret)
		text_add(t, " (default: %s)", *opt->default_value ? opt->default_value : "\"\"");
	if (opt->type == CC_CFG_INT && !(opt->min == 0 && opt->max == 0)) {
		int64_t lo, hi;
		int_bounds(opt, &lo, &hi);
		text_add(t, " [%" PRId64 ", %" PRId64 "]", lo, hi);
	} else if (opt->type == CC_CFG_DOUBLE && !(opt->min == 0 && opt->max == 0)) {
		text_add(t, " [%g, %g]", opt->min, opt->max);
	}
	if (opt->required)
		text_add(t, " (required)");
	if (opt->secret)
		text_add(t, " (secret: env %s or --%s-file)\n", env, opt->name);
	else
		text_add(t, " (env %s)\n", env);
}

char *cc_config_help(const struct cc_config_spec *spec)
{
	struct text t = { .buf = malloc(HELP_CAP) };
	int width = (int)strlen("--config=PATH");
	char flag[160];
	if (!t.buf)
		return NULL;
	t.buf[0] = '\0';
	for (size_t i = 0; i < spec->n_options; i++) {
		help_flag(flag, sizeof flag, &spec->options[i]);
		if ((int)strlen(flag) > width)
			width = (int)strlen(flag) < 40 ? (int)strlen(flag) : 40;
	}
	text_add(&t, "usage: %s [options]%s%s\n", spec->program, spec->positional ? " " : "",
		 spec->positional ? spec->positional : "");
	if (spec->summary)
		text_add(&t, "%s\n", spec->summary);
	text_add(&t, "\noptions (flag > environment > config file > default):\n");
	for (size_t i = 0; i < spec->n_options; i++)
		help_option(&t, &spec->options[i], width);
	text_add(&t, "  %-*s  read \"name = value\" lines from PATH (env %sCONFIG)\n", width, "--config=PATH",
		 ENV_PREFIX);
	text_add(&t, "  %-*s  print this help and exit\n", width, "--help");
	text_add(&t, "  %-*s  print the version and exit\n", width, "--version");
	return t.buf;
}

/* True when a secret option has a value (a number or flag: when non-zero). */
static bool secret_is_set(const struct cc_config_option *opt, const void *field)
{
	switch (opt->type) {
	case CC_CFG_STRING:
	case CC_CFG_ENUM:
		return *(char *const *)field != NULL;
	case CC_CFG_INT:
		return *(const int64_t *)field != 0;
	case CC_CFG_DOUBLE:
		return *(const double *)field != 0;
	case CC_CFG_BOOL:
		return *(const bool *)field;
	}
	return false;
}

/* Appends ",name" (no comma first) to list, which has room for every name. */
static void list_append(char *list, const char *name)
{
	size_t used = strlen(list), len = strlen(name);
	if (used)
		list[used++] = ',';
	memcpy(list + used, name, len + 1);
}

/*
 * Secrets go into two lists of names rather than a field each: the log
 * redacts a field by its name ("operator-token"), which would hide whether
 * the secret is configured at all.
 */
void cc_config_log(const struct cc_config_spec *spec, const void *cfg)
{
	struct cc_log_field *fields = calloc(spec->n_options + 2, sizeof *fields);
	size_t names = 1, n = 0;
	char *set = NULL, *unset = NULL;

	for (size_t i = 0; i < spec->n_options; i++)
		names += strlen(spec->options[i].name) + 1;
	set = calloc(1, names);
	unset = calloc(1, names);
	if (!fields || !set || !unset)
		goto out_free; /* the log is best effort, like every log line */
	for (size_t i = 0; i < spec->n_options; i++) {
		const struct cc_config_option *opt = &spec->options[i];
		const void *field = (const char *)cfg + opt->offset;
		if (opt->secret)
			list_append(secret_is_set(opt, field) ? set : unset, opt->name);
		else if (opt->type == CC_CFG_STRING || opt->type == CC_CFG_ENUM)
			fields[n++] = CC_LOG_STR(opt->name, *(char *const *)field);
		else if (opt->type == CC_CFG_INT)
			fields[n++] = CC_LOG_INT(opt->name, *(const int64_t *)field);
		else if (opt->type == CC_CFG_DOUBLE)
			fields[n++] = CC_LOG_DBL(opt->name, *(const double *)field);
		else
			fields[n++] = CC_LOG_BOOL(opt->name, *(const bool *)field);
	}
	fields[n++] = CC_LOG_STR("sensitive_set", set);
	fields[n++] = CC_LOG_STR("sensitive_unset", unset);
	cc_log_emit(CC_LOG_INFO, "config", fields, n);
out_free:
	free(set);
	free(unset);
	free(fields);
}

void cc_config_release(const struct cc_config_spec *spec, void *cfg)
{
	if (!spec || !cfg)
		return;
	for (size_t i = 0; i < spec->n_options; i++) {
		const struct cc_config_option *opt = &spec->options[i];
		if (opt->type != CC_CFG_STRING && opt->type != CC_CFG_ENUM)
			continue;
		char **field = (char **)((char *)cfg + opt->offset);
		if (*field && opt->secret)
			explicit_bzero(*field, strlen(*field));
		free(*field);
		*field = NULL;
	}
}

int cc_config_load_or_exit(const struct cc_config_spec *spec, int argc, char *const argv[], void *out,
			   char *const **positional)
{
	struct cc_config_result res;
	int rc = cc_config_parse(spec, argc, argv, out, &res);
	if (res.help || res.version) {
		char *help = res.help ? cc_config_help(spec) : NULL;
		if (res.help)
			fputs(help ? help : "out of memory\n", stdout);
		else
			printf("%s %s\n", spec->program, cc_build_version);
		free(help);
		cc_config_release(spec, out);
		exit(fflush(stdout) == 0 ? 0 : 1);
	}
	if (rc != 0) {
		int shown = res.n_errors < CC_CONFIG_MAX_ERRORS ? res.n_errors : CC_CONFIG_MAX_ERRORS;
		for (int i = 0; i < shown; i++)
			fprintf(stderr, "%s: %s\n", spec->program, res.errors[i]);
		if (res.n_errors > shown)
			fprintf(stderr, "%s: ... and %d more\n", spec->program, res.n_errors - shown);
		fprintf(stderr, "%s: see --help\n", spec->program);
		cc_config_release(spec, out);
		exit(2);
	}
	*positional = res.positional;
	return res.n_positional;
}
