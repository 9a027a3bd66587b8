/*
 * cc-migrate: applies, rolls back and reports schema migrations
 * (sys/migrate.h does the work; sys/service.h gives it the shared
 * --database-url and --log-level rows).
 *
 *   cc-migrate up          apply every pending migration
 *   cc-migrate down N|all  roll back the newest N (or every) applied migration
 *   cc-migrate status      list versions; exit 1 when something is wrong
 *
 * Exit status: 0 success (status: clean), 1 failure (status: problems found),
 * 2 usage or configuration error. Progress goes to stdout; errors to stderr
 * as a log event and a plain "cc-migrate: <message>" line. The database URL
 * is a secret (it may hold a password): environment or file only, never
 * printed.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys/cc.h"
#include "sys/config.h"
#include "sys/log.h"
#include "sys/migrate.h"
#include "sys/service.h"
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys/banned.h"

struct migrate_config {
	char *migrations_dir;          /* where NNNN_name.{up,down}.sql live */
	int64_t lock_timeout_ms;       /* how long to wait for a concurrent cc-migrate */
	struct cc_service_options svc; /* --database-url (secret) and --log-level (sys/service.h) */
};

static const struct cc_config_option options[] = {
	{ .name = "migrations-dir",
	  .type = CC_CFG_STRING,
	  .help = "directory holding NNNN_name.up.sql / NNNN_name.down.sql (default: <bin>/../share/cosmic-clash/migrations "
		  "as make install lays it out, else ./migrations)",
	  .offset = offsetof(struct migrate_config, migrations_dir) },
	{ .name = "lock-timeout-ms",
	  .type = CC_CFG_INT,
	  .default_value = "60000",
	  .min = 1,
	  .max = 3600000,
	  .help = "give up when another cc-migrate holds the migration lock this long",
	  .offset = offsetof(struct migrate_config, lock_timeout_ms) },
};

/*
 * A one-shot tool, not a service: it takes only the shared database and
 * log rows from the skeleton, not its signals (Ctrl-C must still end it at
 * once) nor an admin port.
 */
static const struct cc_service_spec spec = {
	.program = "cc-migrate",
	.summary = "Apply, roll back or list the database schema migrations.",
	.positional = "up | down N|all | status",
	.options = options,
	.n_options = CC_ARRAY_LEN(options),
	.shared = CC_SERVICE_DATABASE | CC_SERVICE_LOG,
	.shared_offset = offsetof(struct migrate_config, svc),
};

enum command { CMD_UP, CMD_DOWN, CMD_STATUS };

/* Reports an error both ways: a log event for machines, a line for people. */
static void report_error(const char *command, int rc, const char *message)
{
	cc_log_error("migrate_failed", CC_LOG_STR("command", command), CC_LOG_STR("code", cc_errname(rc)),
		     CC_LOG_STR("error", message));
	fprintf(stderr, "cc-migrate: %s\n", message);
}

/* Prints a usage problem and returns the usage exit status. */
static int usage(const char *problem)
{
	fprintf(stderr, "cc-migrate: %s\nusage: cc-migrate [options] %s (see --help)\n", problem,
		spec.positional);
	return 2;
}

/*
 * Parses "up", "down N|all", "status" into *cmd and *count (-1 = all).
 * Returns 0 or the usage exit status (message printed).
 */
static int parse_command(int argc, char *const *argv, enum command *cmd, int *count)
{
	char problem[160];

	if (argc < 1)
		return usage("no command given");
	if (strcmp(argv[0], "up") == 0 || strcmp(argv[0], "status") == 0) {
		if (argc != 1) {
			snprintf(problem, sizeof problem, "%s takes no arguments (got '%.40s')", argv[0],
				 argv[1]);
			return usage(problem);
		}
		*cmd = argv[0][0] == 'u' ? CMD_UP : CMD_STATUS;
		return 0;
	}
	if (strcmp(argv[0], "down") == 0) {
		if (argc != 2)
			return usage("down needs exactly one argument: a count N >= 1, or all");
		if (strcmp(argv[1], "all") == 0) {
			*count = -1;
		} else {
			char *end;
			errno = 0;
			long n = strtol(argv[1], &end, 10);
			if (errno || end == argv[1] || *end || n < 1 || n > CC_MIGRATE_VERSION_MAX + 1) {
				snprintf(problem, sizeof problem,
					 "down: '%.40s' is not a count from 1 to %d, or all", argv[1],
					 CC_MIGRATE_VERSION_MAX + 1);
				return usage(problem);
			}
			*count = (int)n;
		}
		*cmd = CMD_DOWN;
		return 0;
	}
	snprintf(problem, sizeof problem, "unknown command '%.40s'", argv[0]);
	return usage(problem);
}

/*
 * Where make install puts the migrations relative to this binary
 * (PREFIX/bin/cc-migrate -> PREFIX/share/cosmic-clash/migrations), so an
 * installed cc-migrate works whatever PREFIX was; "migrations" (the source
 * tree) when that directory does not exist.
 */
static const char *default_migrations_dir(char *buf, size_t len)
{
	char exe[PATH_MAX];
	struct stat st;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n > 0) {
		exe[n] = '\0';
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			int w = snprintf(buf, len, "%s/../share/cosmic-clash/migrations", exe);
			if (w > 0 && (size_t)w < len && stat(buf, &st) == 0 && S_ISDIR(st.st_mode))
				return buf;
		}
	}
	return "migrations";
}

int main(int argc, char *argv[])
{
	struct migrate_config cfg = { 0 };
	struct cc_service svc;
	char *const *positional = NULL;
	int n_pos = cc_service_load_or_exit(&svc, &spec, argc, argv, &cfg, &positional);
	enum command cmd = CMD_UP;
	int count = 0;
	int status = 1;

	const char *database_url = cfg.svc.database_url;
	char installed_dir[PATH_MAX];
	const char *migrations_dir = cfg.migrations_dir ? cfg.migrations_dir
							: default_migrations_dir(installed_dir, sizeof installed_dir);
	int64_t lock_timeout_ms = cfg.lock_timeout_ms;

	cc_service_log_config(&svc); /* secrets appear only by name, as set or unset */
	status = parse_command(n_pos, positional, &cmd, &count);
	if (status != 0)
		goto out;
	if (!database_url || !*database_url) {
		/* The config module reports this as a required option; the check
		 * stays so an empty value can never reach libpq's defaults. */
		status = usage("database-url is not set (COSMIC_CLASH_DATABASE_URL or --database-url-file)");
		goto out;
	}

	const struct cc_migrate_options opt = {
		.dsn = database_url,
		.dir = migrations_dir,
		.lock_timeout_ms = lock_timeout_ms,
		.out = stdout,
	};
	struct cc_migrate_error err = { { 0 } };
	struct cc_migrate_summary summary = { 0 };
	const char *name = cmd == CMD_UP ? "up" : cmd == CMD_DOWN ? "down" : "status";
	int rc;
	switch (cmd) {
	case CMD_UP:
		rc = cc_migrate_up(&opt, NULL, &err);
		break;
	case CMD_DOWN:
		rc = cc_migrate_down(&opt, count, NULL, &err);
		break;
	case CMD_STATUS:
		rc = cc_migrate_status(&opt, &summary, &err);
		break;
	default:
		CC_BUG("unknown command");
	}
	if (rc) {
		report_error(name, rc, err.message[0] ? err.message : cc_strerror(rc));
		status = 1;
	} else {
		status = cmd == CMD_STATUS && summary.problems > 0 ? 1 : 0;
	}
out:
	fflush(stdout);
	cc_service_release(&svc);
	return status;
}
