/*
 * migrate.h - schema migrations: the engine behind cc-migrate.
 *
 * A migrations directory holds NNNN_name.up.sql and NNNN_name.down.sql
 * (NNNN four digits, name [a-z0-9_]+). Versions must be unique and are
 * applied in increasing order; gaps are fine. A down file is optional until
 * someone asks to roll that version back. Other *.sql names are refused
 * (naming the file); files not ending in .sql are ignored.
 *
 * The database records what is applied in schema_migrations(version, name,
 * checksum = sha256 hex of the up file, applied_at). Every command that
 * writes first takes a session advisory lock (CC_MIGRATE_LOCK_KEY), waiting
 * at most lock_timeout_ms, and only then reads what is applied, so any
 * number of concurrent cc-migrate processes apply each step exactly once.
 * Before changing anything it checks the database against the files: an
 * applied version whose up file is gone, renamed or edited (checksum) is
 * refused, as is a pending version older than the newest applied one (two
 * branches that picked the same slot). Each step runs in its own
 * transaction with its bookkeeping row, so a failing step leaves no trace
 * and the earlier steps stay applied. Files must not contain BEGIN/COMMIT.
 *
 * Progress lines ("applied 0001_state_machine") go to options->out; errors
 * come back as a CC_E* code plus a sentence in struct cc_migrate_error. The
 * DSN is never written anywhere (it may hold a password).
 *
 * Ownership: cc_migration_set_load() allocates the set (every file's text);
 * cc_migration_set_release() frees it. Nothing else allocates for callers.
 */
#ifndef CC_MIGRATE_H
#define CC_MIGRATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sys/cc.h"

#define CC_MIGRATE_FILE_MAX (1024 * 1024)       /* bytes of one .sql file */
#define CC_MIGRATE_TOTAL_MAX (64 * 1024 * 1024) /* bytes of all files together */
#define CC_MIGRATE_NAME_MAX 63                  /* bytes of "name" in NNNN_name */
#define CC_MIGRATE_VERSION_MAX 9999             /* four digits */
#define CC_MIGRATE_LOCK_KEY INT64_C(0x63634d6967726174) /* "ccMigrat": pg_advisory_lock key */

struct cc_migrate_error {
	char message[768]; /* one sentence naming the file/version; "" on success */
};

struct cc_migration {
	int version;                          /* 0..9999 */
	char name[CC_MIGRATE_NAME_MAX + 1];   /* "state_machine" */
	char *up_sql;                         /* the up file's text (NUL-terminated, owned) */
	char *down_sql;                       /* the down file's text, NULL when there is none */
	char checksum[65];                    /* sha256 hex of the up file */
};

struct cc_migration_set {
	struct cc_migration *items; /* sorted by version, ascending (owned) */
	size_t n;                   /* number of items */
};

struct cc_migrate_options {
	const char *dsn;         /* libpq connection string or URI; never printed */
	const char *dir;         /* the migrations directory */
	int64_t lock_timeout_ms; /* wait for the advisory lock at most this long; <= 0 waits forever */
	FILE *out;               /* progress and status lines; NULL = silent */
};

/* What cc_migrate_status() found. */
struct cc_migrate_summary {
	int applied;  /* versions applied and matching their files */
	int pending;  /* files not applied yet (in order) */
	int problems; /* edited, missing-file, renamed or out-of-order versions */
};

/*
 * Reads every migration in dir into *out (zeroed first by the caller is not
 * required). Returns 0; CC_ENOTFOUND when dir cannot be opened; CC_EINVAL for
 * a malformed name, a duplicate version, a down file without an up file, a
 * NUL byte or a non-regular file; CC_ETOOBIG over CC_MIGRATE_FILE_MAX /
 * CC_MIGRATE_TOTAL_MAX; CC_EIO on a read error; CC_ENOMEM. On failure *out is
 * untouched and err names the file.
 */
int cc_migration_set_load(const char *dir, struct cc_migration_set *out,
			  struct cc_migrate_error *err) CC_MUST_CHECK;

/* Frees every item and zeroes the set. NULL-safe. */
void cc_migration_set_release(struct cc_migration_set *set);

/*
 * Applies every pending migration, oldest first. *n_applied (may be NULL)
 * receives how many this call applied, also on failure (earlier steps stay
 * committed). Returns 0; the set_load errors; CC_EUNAVAILABLE when the
 * database cannot be reached; CC_ETIMEOUT when the lock was not granted in
 * time; CC_ECONFLICT when the database does not match the files (see above;
 * nothing is applied then); CC_EDB when a step's SQL fails (that step is
 * rolled back, err names the file and quotes PostgreSQL).
 */
int cc_migrate_up(const struct cc_migrate_options *opt, int *n_applied,
		  struct cc_migrate_error *err) CC_MUST_CHECK;

/*
 * Rolls back the newest n applied versions (n < 0: all of them), newest
 * first, each in its own transaction. Checks first, changing nothing on
 * failure: n larger than the applied count is CC_EINVAL, a missing down file
 * among those n is CC_ENOTFOUND, a mismatch with the files CC_ECONFLICT.
 * n == 0 is CC_EINVAL. *n_rolled_back as *n_applied above.
 */
int cc_migrate_down(const struct cc_migrate_options *opt, int n, int *n_rolled_back,
		    struct cc_migrate_error *err) CC_MUST_CHECK;

/*
 * Writes one line per version to opt->out: a label (applied, pending,
 * EDITED, RENAMED, missing-file, OUT-OF-ORDER; problems in capitals or
 * hyphenated), "NNNN_name", and in parentheses when it was applied or what
 * is wrong; then "N applied, N pending, N problems". Fills *summary.
 * Read-only: takes no lock and creates nothing. Returns 0 (even with
 * problems: see summary->problems) or the connection/load errors.
 */
int cc_migrate_status(const struct cc_migrate_options *opt, struct cc_migrate_summary *summary,
		      struct cc_migrate_error *err) CC_MUST_CHECK;

#endif
