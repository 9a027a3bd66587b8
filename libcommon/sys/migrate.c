#include "sys/charset.h"
#include "sys/migrate.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libpq-fe.h>
#include <sodium.h>

#include "sys/file.h"
#include "sys/log.h"
#include "sys/banned.h"

/* Directory entries considered at most: two files per possible version. */
#define DIR_ENTRIES_MAX (2 * (CC_MIGRATE_VERSION_MAX + 1))

/* schema_migrations rows read at most (one per possible version). */
#define APPLIED_MAX (CC_MIGRATE_VERSION_MAX + 1)

/*
 * Created only when absent (checked under the advisory lock), so a second
 * runner does not draw an "already exists, skipping" notice into its log.
 */
static const char sql_create_table[] =
	"DO $$ BEGIN IF to_regclass('schema_migrations') IS NULL THEN"
	" CREATE TABLE schema_migrations ("
	" version integer PRIMARY KEY,"
	" name text NOT NULL,"
	" checksum text NOT NULL,"
	" applied_at timestamptz NOT NULL DEFAULT now()); END IF; END $$";
static const char sql_table_exists[] = "SELECT to_regclass('schema_migrations') IS NOT NULL";
static const char sql_read_applied[] =
	"SELECT version, name, checksum,"
	" to_char(applied_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"
	" FROM schema_migrations ORDER BY version";
static const char sql_insert_applied[] =
	"INSERT INTO schema_migrations (version, name, checksum) VALUES ($1::integer, $2, $3)";
static const char sql_delete_applied[] = "DELETE FROM schema_migrations WHERE version = $1::integer";
static const char sql_set_lock_timeout[] = "SELECT set_config('lock_timeout', $1, false)";
static const char sql_lock[] = "SELECT pg_advisory_lock($1::bigint)";
static const char sql_reset_lock_timeout[] = "RESET lock_timeout";

/* One schema_migrations row. */
struct applied {
	int version;
	char name[CC_MIGRATE_NAME_MAX + 1]; /* as recorded (truncated if someone wrote a longer one) */
	char checksum[65];                  /* as recorded */
	char applied_at[32];                /* UTC, for status */
};

/* How one version's file and row relate. */
enum verdict {
	V_APPLIED,      /* applied, file present and unchanged */
	V_PENDING,      /* file only, newer than everything applied */
	V_OUT_OF_ORDER, /* file only, but a newer version is already applied */
	V_EDITED,       /* applied, but the up file's checksum changed */
	V_RENAMED,      /* applied under another name than the file has now */
	V_MISSING_FILE, /* applied, no file */
};

struct entry {
	enum verdict verdict;
	const struct cc_migration *file; /* NULL for V_MISSING_FILE */
	const struct applied *row;       /* NULL for pending ones */
};

static void err_set(struct cc_migrate_error *err, const char *fmt, ...) CC_PRINTF(2, 3);

/* Writes the error sentence (err may be NULL). */
static void err_set(struct cc_migrate_error *err, const char *fmt, ...)
{
	if (!err)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof err->message, fmt, ap);
	va_end(ap);
}

/*
 * Parses "NNNN_name.up.sql" / "NNNN_name.down.sql". Returns true and fills
 * the outputs when fname has exactly that shape.
 */
static bool parse_filename(const char *fname, int *version, char name[CC_MIGRATE_NAME_MAX + 1],
			   bool *is_up)
{
	size_t len = strlen(fname);
	size_t suffix;

	for (int i = 0; i < 4; i++) {
		if (fname[i] < '0' || fname[i] > '9')
			return false;
	}
	if (fname[4] != '_')
		return false;
	if (len > 12 && strcmp(fname + len - 7, ".up.sql") == 0)
		suffix = 7;
	else if (len > 14 && strcmp(fname + len - 9, ".down.sql") == 0)
		suffix = 9;
	else
		return false;
	size_t name_len = len - 5 - suffix;
	if (name_len == 0 || name_len > CC_MIGRATE_NAME_MAX)
		return false;
	if (!cc_charset_all(fname + 5, name_len, CC_CHARSET_LOWER | CC_CHARSET_DIGIT, "_"))
		return false;
	*version = (fname[0] - '0') * 1000 + (fname[1] - '0') * 100 + (fname[2] - '0') * 10 +
		   (fname[3] - '0');
	memcpy(name, fname + 5, name_len);
	name[name_len] = '\0';
	*is_up = suffix == 7;
	return true;
}

/*
 * Reads dir/fname into a malloc'd NUL-terminated string. *total is the byte
 * budget already spent by earlier files. Returns 0 or a CC_E* code with err
 * naming the file.
 */
static int read_sql_file(const char *dir, const char *fname, char **out, size_t *total,
			 struct cc_migrate_error *err)
{
	char path[4096];
	char *text = NULL;
	size_t got = 0;
	struct cc_file_error fe;
	int rc;

	if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, fname) >= sizeof path) {
		err_set(err, "migration path %s/%s is too long", dir, fname);
		return CC_EINVAL;
	}
	/* Regular files only: a FIFO planted in the directory must not hang us. */
	rc = cc_file_read(path, CC_MIGRATE_FILE_MAX, CC_FILE_REGULAR_ONLY, &text, &got, &fe);
	switch (fe.failure) {
	case CC_FILE_OK:
		break;
	case CC_FILE_OPEN:
		err_set(err, "cannot open migration %s: %s", fname, strerror(fe.errnum));
		return rc;
	case CC_FILE_STAT:
	case CC_FILE_NOT_REGULAR:
		err_set(err, "migration %s is not a regular file", fname);
		return CC_EINVAL;
	case CC_FILE_TOO_BIG:
		if (fe.size >= 0)
			err_set(err, "migration %s is %lld bytes, over the %d-byte limit", fname, fe.size,
				CC_MIGRATE_FILE_MAX);
		else
			err_set(err, "migration %s changed size while being read", fname);
		return rc;
	case CC_FILE_READ:
		err_set(err, "cannot read migration %s: %s", fname, strerror(fe.errnum));
		return rc;
	case CC_FILE_NO_MEMORY:
		err_set(err, "out of memory reading %s", fname);
		return rc;
	}
	if (*total + got > CC_MIGRATE_TOTAL_MAX) {
		err_set(err, "migrations exceed %d bytes in total at %s", CC_MIGRATE_TOTAL_MAX, fname);
		rc = CC_ETOOBIG;
		goto out_free;
	}
	if (memchr(text, '\0', got)) {
		err_set(err, "migration %s contains a NUL byte", fname);
		rc = CC_EINVAL;
		goto out_free;
	}
	*total += got;
	*out = text;
	text = NULL;
	rc = 0;
out_free:
	free(text);
	return rc;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_names(char **names, size_t n)
{
	for (size_t i = 0; names && i < n; i++)
		free(names[i]);
	free(names);
}

/*
 * Lists the *.sql names in dir (hidden files skipped), sorted so errors are
 * reported in a stable order. Returns 0 with a malloc'd array or CC_E*.
 */
static int list_sql_files(const char *dir, char ***out, size_t *n_out, struct cc_migrate_error *err)
{
	DIR *d = opendir(dir);
	char **names = NULL;
	size_t n = 0;
	int rc = 0;
	struct dirent *de;

	if (!d) {
		err_set(err, "cannot open migrations directory %s: %s", dir, strerror(errno));
		return CC_ENOTFOUND;
	}
	names = calloc(DIR_ENTRIES_MAX, sizeof *names);
	if (!names) {
		rc = CC_ENOMEM;
		err_set(err, "out of memory listing %s", dir);
		goto out;
	}
	errno = 0;
	while ((de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);
		if (de->d_name[0] == '.' || len < 4 || strcmp(de->d_name + len - 4, ".sql") != 0)
			continue;
		if (n == DIR_ENTRIES_MAX) {
			err_set(err, "more than %d .sql files in %s", DIR_ENTRIES_MAX, dir);
			rc = CC_ETOOBIG;
			goto out;
		}
		names[n] = strdup(de->d_name);
		if (!names[n]) {
			rc = CC_ENOMEM;
			err_set(err, "out of memory listing %s", dir);
			goto out;
		}
		n++;
	}
	if (errno != 0) {
		err_set(err, "cannot read migrations directory %s: %s", dir, strerror(errno));
		rc = CC_EIO;
		goto out;
	}
	qsort(names, n, sizeof *names, cmp_names);
	*out = names;
	*n_out = n;
	names = NULL;
out:
	free_names(names, n);
	closedir(d);
	return rc;
}

/* Hex sha256 of text into hex[65]. */
static void checksum_hex(const char *text, char hex[65])
{
	unsigned char digest[crypto_hash_sha256_BYTES];
	crypto_hash_sha256(digest, (const unsigned char *)text, strlen(text));
	sodium_bin2hex(hex, 65, digest, sizeof digest);
}

void cc_migration_set_release(struct cc_migration_set *set)
{
	if (!set)
		return;
	for (size_t i = 0; i < set->n; i++) {
		free(set->items[i].up_sql);
		free(set->items[i].down_sql);
	}
	free(set->items);
	set->items = NULL;
	set->n = 0;
}

int cc_migration_set_load(const char *dir, struct cc_migration_set *out, struct cc_migrate_error *err)
{
	char **names = NULL;
	size_t n_names = 0;
	/* Indexed by version while scanning, compacted at the end. */
	struct cc_migration *slots = NULL;
	struct cc_migration_set set = { 0 };
	size_t total = 0;
	int rc;

	if (err)
		err->message[0] = '\0';
	rc = list_sql_files(dir, &names, &n_names, err);
	if (rc)
		return rc;
	slots = calloc(CC_MIGRATE_VERSION_MAX + 1, sizeof *slots);
	if (!slots) {
		rc = CC_ENOMEM;
		err_set(err, "out of memory loading migrations");
		goto out;
	}
	for (size_t i = 0; i < n_names; i++) {
		int version;
		char name[CC_MIGRATE_NAME_MAX + 1];
		bool is_up;
		if (!parse_filename(names[i], &version, name, &is_up)) {
			err_set(err,
				"migration file %s is misnamed: expected NNNN_name.up.sql or "
				"NNNN_name.down.sql (NNNN four digits, name [a-z0-9_]+, at most %d bytes)",
				names[i], CC_MIGRATE_NAME_MAX);
			rc = CC_EINVAL;
			goto out;
		}
		struct cc_migration *m = &slots[version];
		if ((m->up_sql || m->down_sql) && strcmp(m->name, name) != 0) {
			err_set(err, "duplicate migration version %04d: %04d_%s and %s", version, version,
				m->name, names[i]);
			rc = CC_EINVAL;
			goto out;
		}
		m->version = version;
		memcpy(m->name, name, sizeof m->name);
		rc = read_sql_file(dir, names[i], is_up ? &m->up_sql : &m->down_sql, &total, err);
		if (rc)
			goto out;
	}
	for (int v = 0; v <= CC_MIGRATE_VERSION_MAX; v++) {
		if (slots[v].down_sql && !slots[v].up_sql) {
			err_set(err, "migration %04d_%s.down.sql has no %04d_%s.up.sql", v, slots[v].name, v,
				slots[v].name);
			rc = CC_EINVAL;
			goto out;
		}
		if (slots[v].up_sql)
			set.n++;
	}
	set.items = calloc(set.n ? set.n : 1, sizeof *set.items);
	if (!set.items) {
		rc = CC_ENOMEM;
		err_set(err, "out of memory loading migrations");
		goto out;
	}
	size_t k = 0;
	for (int v = 0; v <= CC_MIGRATE_VERSION_MAX; v++) {
		if (!slots[v].up_sql)
			continue;
		set.items[k] = slots[v];
		checksum_hex(set.items[k].up_sql, set.items[k].checksum);
		slots[v].up_sql = NULL; /* moved into the set */
		slots[v].down_sql = NULL;
		k++;
	}
	*out = set;
	rc = 0;
out:
	for (int v = 0; slots && v <= CC_MIGRATE_VERSION_MAX; v++) {
		free(slots[v].up_sql);
		free(slots[v].down_sql);
	}
	free(slots);
	free_names(names, n_names);
	return rc;
}

/* ---- database ---------------------------------------------------------- */

/* Routes server NOTICEs into the structured log instead of raw stderr. */
static void notice_to_log(void *arg, const char *message)
{
	char line[1024];
	(void)arg;
	snprintf(line, sizeof line, "%s", message);
	line[strcspn(line, "\n")] = '\0';
	cc_log_info("postgres_notice", CC_LOG_STR("message", line));
}

/*
 * Connects with opt->dsn. Returns the connection or NULL with err set; the
 * error quotes libpq, which names host and user but never the password.
 */
static PGconn *connect_db(const struct cc_migrate_options *opt, struct cc_migrate_error *err)
{
	/* Earlier entries are defaults the DSN (expanded from dbname) overrides. */
	const char *const keys[] = { "application_name", "connect_timeout", "dbname", NULL };
	const char *const values[] = { "cc-migrate", "10", opt->dsn, NULL };
	PGconn *conn;

	if (!opt->dsn || !*opt->dsn) {
		err_set(err, "no database URL given");
		return NULL;
	}
	conn = PQconnectdbParams(keys, values, 1);
	if (!conn) {
		err_set(err, "out of memory connecting to the database");
		return NULL;
	}
	if (PQstatus(conn) != CONNECTION_OK) {
		char msg[512];
		snprintf(msg, sizeof msg, "%s", PQerrorMessage(conn));
		msg[strcspn(msg, "\n")] = '\0';
		err_set(err, "cannot connect to the database: %s", msg);
		PQfinish(conn);
		return NULL;
	}
	PQsetNoticeProcessor(conn, notice_to_log, NULL);
	return conn;
}

/* 1-based line of a 1-based character position in text (UTF-8 aware). */
static int line_of_position(const char *text, long position)
{
	int line = 1;
	long chars = 0;
	for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
		if ((*p & 0xC0) == 0x80)
			continue; /* continuation byte: same character */
		if (++chars >= position)
			break;
		if (*p == '\n')
			line++;
	}
	return line;
}

/*
 * Describes a failed result as "<what>: <primary message> (SQLSTATE xxxxx)",
 * with the line in sql when PostgreSQL gave a position.
 */
static void err_from_result(struct cc_migrate_error *err, PGconn *conn, const PGresult *res,
			    const char *what, const char *sql)
{
	const char *primary = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	const char *pos = res ? PQresultErrorField(res, PG_DIAG_STATEMENT_POSITION) : NULL;
	char where[48] = "";
	char conn_msg[512];

	if (!primary) {
		snprintf(conn_msg, sizeof conn_msg, "%s", PQerrorMessage(conn));
		conn_msg[strcspn(conn_msg, "\n")] = '\0';
		primary = conn_msg[0] ? conn_msg : "unknown error";
	}
	if (pos && sql)
		snprintf(where, sizeof where, " at line %d", line_of_position(sql, strtol(pos, NULL, 10)));
	err_set(err, "%s%s: %s (SQLSTATE %s)", what, where, primary, state ? state : "none");
}

/* Runs one parameterless command that returns no rows. */
static int exec_command(PGconn *conn, const char *sql, const char *what, struct cc_migrate_error *err)
{
	PGresult *res = PQexec(conn, sql);
	int rc = 0;
	if (!res || PQresultStatus(res) != PGRES_COMMAND_OK) {
		err_from_result(err, conn, res, what, NULL);
		rc = CC_EDB;
	}
	PQclear(res);
	return rc;
}

/*
 * Takes the session advisory lock, waiting at most timeout_ms (<= 0: no
 * limit). Returns 0, CC_ETIMEOUT, or CC_EDB.
 */
static int take_lock(PGconn *conn, int64_t timeout_ms, struct cc_migrate_error *err)
{
	char timeout[32], key[32];
	const char *p_timeout[1] = { timeout };
	const char *p_key[1] = { key };
	PGresult *res;
	int rc = 0;

	snprintf(timeout, sizeof timeout, "%lldms", (long long)(timeout_ms > 0 ? timeout_ms : 0));
	snprintf(key, sizeof key, "%lld", (long long)CC_MIGRATE_LOCK_KEY);
	res = PQexecParams(conn, sql_set_lock_timeout, 1, NULL, p_timeout, NULL, NULL, 0);
	if (!res || PQresultStatus(res) != PGRES_TUPLES_OK) {
		err_from_result(err, conn, res, "cannot set lock_timeout", NULL);
		PQclear(res);
		return CC_EDB;
	}
	PQclear(res);
	res = PQexecParams(conn, sql_lock, 1, NULL, p_key, NULL, NULL, 0);
	if (!res || PQresultStatus(res) != PGRES_TUPLES_OK) {
		const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
		if (state && strcmp(state, "55P03") == 0) {
			err_set(err,
				"timed out after %lld ms waiting for the migration lock "
				"(another cc-migrate is running)",
				(long long)timeout_ms);
			rc = CC_ETIMEOUT;
		} else {
			err_from_result(err, conn, res, "cannot take the migration lock", NULL);
			rc = CC_EDB;
		}
	}
	PQclear(res);
	if (rc == 0)
		rc = exec_command(conn, sql_reset_lock_timeout, "cannot reset lock_timeout", err);
	return rc;
}

/* Sets *exists to whether schema_migrations exists. */
static int table_exists(PGconn *conn, bool *exists, struct cc_migrate_error *err)
{
	PGresult *res = PQexec(conn, sql_table_exists);
	int rc = 0;
	if (!res || PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
		err_from_result(err, conn, res, "cannot look for schema_migrations", NULL);
		rc = CC_EDB;
	} else {
		*exists = PQgetvalue(res, 0, 0)[0] == 't';
	}
	PQclear(res);
	return rc;
}

/*
 * Reads schema_migrations (ascending) into a malloc'd array (caller frees).
 * A missing table reads as empty. Returns 0 or CC_EDB/CC_ETOOBIG/CC_ENOMEM.
 */
static int read_applied(PGconn *conn, struct applied **out, size_t *n_out, struct cc_migrate_error *err)
{
	PGresult *res = NULL;
	struct applied *rows = NULL;
	bool exists = false;
	int rc = table_exists(conn, &exists, err);
	if (rc)
		return rc;
	if (!exists) {
		*out = NULL;
		*n_out = 0;
		return 0;
	}
	res = PQexec(conn, sql_read_applied);
	if (!res || PQresultStatus(res) != PGRES_TUPLES_OK) {
		err_from_result(err, conn, res, "cannot read schema_migrations", NULL);
		rc = CC_EDB;
		goto out;
	}
	int n = PQntuples(res);
	if (n > APPLIED_MAX) {
		err_set(err, "schema_migrations has %d rows, more than %d versions can exist", n, APPLIED_MAX);
		rc = CC_ETOOBIG;
		goto out;
	}
	rows = calloc(n ? (size_t)n : 1, sizeof *rows);
	if (!rows) {
		err_set(err, "out of memory reading schema_migrations");
		rc = CC_ENOMEM;
		goto out;
	}
	for (int i = 0; i < n; i++) {
		rows[i].version = (int)strtol(PQgetvalue(res, i, 0), NULL, 10);
		snprintf(rows[i].name, sizeof rows[i].name, "%s", PQgetvalue(res, i, 1));
		snprintf(rows[i].checksum, sizeof rows[i].checksum, "%s", PQgetvalue(res, i, 2));
		snprintf(rows[i].applied_at, sizeof rows[i].applied_at, "%s", PQgetvalue(res, i, 3));
	}
	*out = rows;
	*n_out = (size_t)n;
	rows = NULL;
out:
	free(rows);
	PQclear(res);
	return rc;
}

/*
 * Merges files and rows (both ascending) into entries[] (room for
 * set->n + n_rows) and returns how many were written.
 */
static size_t classify(const struct cc_migration_set *set, const struct applied *rows, size_t n_rows,
		       struct entry *entries)
{
	size_t i = 0, j = 0, k = 0;
	int newest_applied = n_rows ? rows[n_rows - 1].version : -1;

	while (i < set->n || j < n_rows) {
		struct entry *e = &entries[k++];
		const struct cc_migration *f = i < set->n ? &set->items[i] : NULL;
		const struct applied *r = j < n_rows ? &rows[j] : NULL;
		if (f && (!r || f->version < r->version)) {
			*e = (struct entry){ f->version < newest_applied ? V_OUT_OF_ORDER : V_PENDING, f, NULL };
			i++;
		} else if (r && (!f || r->version < f->version)) {
			*e = (struct entry){ V_MISSING_FILE, NULL, r };
			j++;
		} else {
			enum verdict v = V_APPLIED;
			if (strcmp(f->name, r->name) != 0)
				v = V_RENAMED;
			else if (strcmp(f->checksum, r->checksum) != 0)
				v = V_EDITED;
			*e = (struct entry){ v, f, r };
			i++;
			j++;
		}
	}
	return k;
}

/* Explains a problem entry in one sentence (for errors and status). */
static void explain(const struct entry *e, const char *dir, char *buf, size_t len)
{
	switch (e->verdict) {
	case V_EDITED:
		snprintf(buf, len,
			 "migration %04d_%s.up.sql was edited after it was applied "
			 "(checksum in database %.12s..., file now %.12s...)",
			 e->file->version, e->file->name, e->row->checksum, e->file->checksum);
		break;
	case V_RENAMED:
		snprintf(buf, len, "migration %04d was applied as %04d_%s but the file is now %04d_%s.up.sql",
			 e->row->version, e->row->version, e->row->name, e->file->version, e->file->name);
		break;
	case V_MISSING_FILE:
		snprintf(buf, len, "migration %04d_%s is applied but %04d_%s.up.sql is not in %s",
			 e->row->version, e->row->name, e->row->version, e->row->name, dir);
		break;
	case V_OUT_OF_ORDER:
		snprintf(buf, len,
			 "migration %04d_%s is pending but a newer version is already applied; "
			 "give it a version above the newest applied one",
			 e->file->version, e->file->name);
		break;
	case V_APPLIED:
	case V_PENDING:
		snprintf(buf, len, "migration %04d_%s is fine", e->file->version, e->file->name);
		break;
	}
}

/*
 * Refuses a database that does not match the files: the first problem in
 * entries becomes the error, with a count of the others. Out-of-order
 * pending files block only when block_out_of_order. Returns 0 or CC_ECONFLICT.
 */
static int check_consistent(const struct entry *entries, size_t n, bool block_out_of_order,
			    const char *dir, struct cc_migrate_error *err)
{
	const struct entry *first = NULL;
	int count = 0;
	for (size_t i = 0; i < n; i++) {
		enum verdict v = entries[i].verdict;
		if (v == V_APPLIED || v == V_PENDING || (v == V_OUT_OF_ORDER && !block_out_of_order))
			continue;
		if (!first)
			first = &entries[i];
		count++;
	}
	if (!first)
		return 0;
	char sentence[512];
	explain(first, dir, sentence, sizeof sentence);
	if (count > 1)
		err_set(err, "%s; and %d more problems (see cc-migrate status); nothing was changed", sentence,
			count - 1);
	else
		err_set(err, "%s; nothing was changed", sentence);
	return CC_ECONFLICT;
}

/* Runs a migration file's SQL inside the open transaction. */
static int exec_file(PGconn *conn, const char *sql, const char *fname, struct cc_migrate_error *err)
{
	PGresult *res = PQexec(conn, sql);
	ExecStatusType st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
	int rc = 0;
	char what[128];

	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK && st != PGRES_EMPTY_QUERY) {
		snprintf(what, sizeof what, "%s failed", fname);
		err_from_result(err, conn, res, what, sql);
		rc = CC_EDB;
	} else if (PQtransactionStatus(conn) != PQTRANS_INTRANS) {
		/* The file ran BEGIN/COMMIT/ROLLBACK itself: we cannot vouch for it. */
		err_set(err,
			"%s ended the transaction itself (BEGIN/COMMIT/ROLLBACK are not allowed in "
			"migration files); it was not recorded as applied and part of it may be committed",
			fname);
		rc = CC_EDB;
	}
	PQclear(res);
	return rc;
}

/* Runs one bookkeeping statement with the version (and name, checksum). */
static int exec_bookkeeping(PGconn *conn, const char *sql, int n_params, const char *const *params,
			    const char *what, struct cc_migrate_error *err)
{
	PGresult *res = PQexecParams(conn, sql, n_params, NULL, params, NULL, NULL, 0);
	int rc = 0;
	if (!res || PQresultStatus(res) != PGRES_COMMAND_OK) {
		err_from_result(err, conn, res, what, NULL);
		rc = CC_EDB;
	} else if (strcmp(PQcmdTuples(res), "1") != 0) {
		err_set(err, "%s: changed %s rows of schema_migrations instead of 1", what, PQcmdTuples(res));
		rc = CC_EDB;
	}
	PQclear(res);
	return rc;
}

/*
 * Applies (up) or rolls back (!up) one migration in its own transaction:
 * the file's SQL and its schema_migrations row commit together or not at all.
 */
static int run_step(PGconn *conn, const struct cc_migration *m, bool up, struct cc_migrate_error *err)
{
	char fname[CC_MIGRATE_NAME_MAX + 32];
	char version[16];
	char what[160];
	int rc;

	snprintf(fname, sizeof fname, "%04d_%s.%s.sql", m->version, m->name, up ? "up" : "down");
	snprintf(version, sizeof version, "%d", m->version);
	snprintf(what, sizeof what, "cannot record %s in schema_migrations", fname);
	rc = exec_command(conn, "BEGIN", "cannot begin a transaction", err);
	if (rc)
		return rc;
	rc = exec_file(conn, up ? m->up_sql : m->down_sql, fname, err);
	if (rc)
		goto out_rollback;
	if (up) {
		const char *params[3] = { version, m->name, m->checksum };
		rc = exec_bookkeeping(conn, sql_insert_applied, 3, params, what, err);
	} else {
		const char *params[1] = { version };
		rc = exec_bookkeeping(conn, sql_delete_applied, 1, params, what, err);
	}
	if (rc)
		goto out_rollback;
	snprintf(what, sizeof what, "%s failed at COMMIT", fname);
	return exec_command(conn, "COMMIT", what, err);
out_rollback:
	PQclear(PQexec(conn, "ROLLBACK")); /* best effort: disconnecting rolls back too */
	return rc;
}

/* Writes one progress line and its log event. */
static void progress(const struct cc_migrate_options *opt, const char *verb, const struct cc_migration *m)
{
	char label[CC_MIGRATE_NAME_MAX + 8];
	snprintf(label, sizeof label, "%04d_%s", m->version, m->name);
	if (opt->out) {
		fprintf(opt->out, "%s %s\n", verb, label);
		fflush(opt->out);
	}
	cc_log_info("migration", CC_LOG_STR("action", verb), CC_LOG_STR("migration", label));
}

/*
 * The common start of up and down: load the files, connect, lock, make sure
 * schema_migrations exists, read it and classify. On success the caller
 * owns *set, *conn, *rows and *entries.
 */
static int begin_locked(const struct cc_migrate_options *opt, struct cc_migration_set *set, PGconn **conn,
			struct applied **rows, size_t *n_rows, struct entry **entries, size_t *n_entries,
			struct cc_migrate_error *err)
{
	int rc;

	if (sodium_init() < 0) {
		err_set(err, "libsodium failed to initialise");
		return CC_EUNAVAILABLE;
	}
	rc = cc_migration_set_load(opt->dir, set, err);
	if (rc)
		return rc;
	*conn = connect_db(opt, err);
	if (!*conn) {
		rc = CC_EUNAVAILABLE;
		goto out_set;
	}
	/* Read what is applied only once the lock is ours: a concurrent run may
	 * have applied steps while we waited. */
	rc = take_lock(*conn, opt->lock_timeout_ms, err);
	if (rc)
		goto out_conn;
	rc = exec_command(*conn, sql_create_table, "cannot create schema_migrations", err);
	if (rc)
		goto out_conn;
	rc = read_applied(*conn, rows, n_rows, err);
	if (rc)
		goto out_conn;
	*entries = calloc(set->n + *n_rows + 1, sizeof **entries);
	if (!*entries) {
		err_set(err, "out of memory");
		rc = CC_ENOMEM;
		goto out_rows;
	}
	*n_entries = classify(set, *rows, *n_rows, *entries);
	return 0;
out_rows:
	free(*rows);
out_conn:
	PQfinish(*conn);
	*conn = NULL;
out_set:
	cc_migration_set_release(set);
	return rc;
}

int cc_migrate_up(const struct cc_migrate_options *opt, int *n_applied, struct cc_migrate_error *err)
{
	struct cc_migration_set set = { 0 };
	PGconn *conn = NULL;
	struct applied *rows = NULL;
	struct entry *entries = NULL;
	size_t n_rows = 0, n_entries = 0;
	int done = 0;
	int rc;

	if (err)
		err->message[0] = '\0';
	rc = begin_locked(opt, &set, &conn, &rows, &n_rows, &entries, &n_entries, err);
	if (rc)
		goto out_count;
	rc = check_consistent(entries, n_entries, true, opt->dir, err);
	if (rc)
		goto out;
	for (size_t i = 0; i < n_entries; i++) {
		if (entries[i].verdict != V_PENDING)
			continue;
		rc = run_step(conn, entries[i].file, true, err);
		if (rc)
			goto out;
		done++;
		progress(opt, "applied", entries[i].file);
	}
	if (done == 0 && opt->out)
		fprintf(opt->out, "nothing to apply: %zu migrations applied\n", n_rows);
out:
	free(entries);
	free(rows);
	PQfinish(conn); /* also releases the advisory lock */
	cc_migration_set_release(&set);
out_count:
	if (n_applied)
		*n_applied = done;
	return rc;
}

int cc_migrate_down(const struct cc_migrate_options *opt, int n, int *n_rolled_back,
		    struct cc_migrate_error *err)
{
	struct cc_migration_set set = { 0 };
	PGconn *conn = NULL;
	struct applied *rows = NULL;
	struct entry *entries = NULL;
	size_t n_rows = 0, n_entries = 0;
	int done = 0;
	int rc;

	if (err)
		err->message[0] = '\0';
	if (n == 0) {
		err_set(err, "down needs a count of at least 1 (or \"all\")");
		rc = CC_EINVAL;
		goto out_count;
	}
	rc = begin_locked(opt, &set, &conn, &rows, &n_rows, &entries, &n_entries, err);
	if (rc)
		goto out_count;
	rc = check_consistent(entries, n_entries, false, opt->dir, err);
	if (rc)
		goto out;
	if (n < 0)
		n = (int)n_rows;
	if ((size_t)n > n_rows) {
		err_set(err, "cannot roll back %d migrations: only %zu %s applied; nothing was changed", n, n_rows,
			n_rows == 1 ? "is" : "are");
		rc = CC_EINVAL;
		goto out;
	}
	/* The newest n applied entries, newest first; every one needs a down
	 * file before anything is touched. */
	const struct entry **victims = calloc((size_t)n + 1, sizeof *victims);
	if (!victims) {
		err_set(err, "out of memory");
		rc = CC_ENOMEM;
		goto out;
	}
	int k = 0;
	for (size_t i = n_entries; i-- > 0 && k < n;) {
		if (entries[i].row)
			victims[k++] = &entries[i];
	}
	for (int i = 0; i < k; i++) {
		const struct cc_migration *m = victims[i]->file;
		if (!m->down_sql) {
			err_set(err, "cannot roll back %04d_%s: %04d_%s.down.sql is not in %s; nothing was changed",
				m->version, m->name, m->version, m->name, opt->dir);
			rc = CC_ENOTFOUND;
			goto out_victims;
		}
	}
	for (int i = 0; i < k; i++) {
		rc = run_step(conn, victims[i]->file, false, err);
		if (rc)
			goto out_victims;
		done++;
		progress(opt, "rolled back", victims[i]->file);
	}
	if (done == 0 && opt->out)
		fprintf(opt->out, "nothing to roll back: no migrations are applied\n");
out_victims:
	free(victims);
out:
	free(entries);
	free(rows);
	PQfinish(conn);
	cc_migration_set_release(&set);
out_count:
	if (n_rolled_back)
		*n_rolled_back = done;
	return rc;
}

/* Status label of a verdict, padded for a column. */
static const char *verdict_label(enum verdict v)
{
	switch (v) {
	case V_APPLIED:
		return "applied     ";
	case V_PENDING:
		return "pending     ";
	case V_OUT_OF_ORDER:
		return "OUT-OF-ORDER";
	case V_EDITED:
		return "EDITED      ";
	case V_RENAMED:
		return "RENAMED     ";
	case V_MISSING_FILE:
		return "missing-file";
	}
	return "?";
}

int cc_migrate_status(const struct cc_migrate_options *opt, struct cc_migrate_summary *summary,
		      struct cc_migrate_error *err)
{
	struct cc_migration_set set = { 0 };
	struct cc_migrate_summary sum = { 0 };
	PGconn *conn = NULL;
	struct applied *rows = NULL;
	struct entry *entries = NULL;
	size_t n_rows = 0;
	int rc;

	if (err)
		err->message[0] = '\0';
	if (sodium_init() < 0) {
		err_set(err, "libsodium failed to initialise");
		return CC_EUNAVAILABLE;
	}
	rc = cc_migration_set_load(opt->dir, &set, err);
	if (rc)
		return rc;
	conn = connect_db(opt, err);
	if (!conn) {
		rc = CC_EUNAVAILABLE;
		goto out;
	}
	rc = read_applied(conn, &rows, &n_rows, err);
	if (rc)
		goto out;
	entries = calloc(set.n + n_rows + 1, sizeof *entries);
	if (!entries) {
		err_set(err, "out of memory");
		rc = CC_ENOMEM;
		goto out;
	}
	size_t n_entries = classify(&set, rows, n_rows, entries);
	for (size_t i = 0; i < n_entries; i++) {
		const struct entry *e = &entries[i];
		int version = e->file ? e->file->version : e->row->version;
		const char *name = e->file ? e->file->name : e->row->name;
		char detail[512] = "";
		if (e->verdict == V_APPLIED) {
			sum.applied++;
			snprintf(detail, sizeof detail, "at %s", e->row->applied_at);
		} else if (e->verdict == V_PENDING) {
			sum.pending++;
		} else {
			sum.problems++;
			explain(e, opt->dir, detail, sizeof detail);
		}
		if (opt->out)
			fprintf(opt->out, "%s  %04d_%s%s%s%s\n", verdict_label(e->verdict), version, name,
				detail[0] ? "  (" : "", detail, detail[0] ? ")" : "");
	}
	if (opt->out) {
		fprintf(opt->out, "%d applied, %d pending, %d problems\n", sum.applied, sum.pending,
			sum.problems);
		fflush(opt->out);
	}
	*summary = sum;
out:
	free(entries);
	free(rows);
	PQfinish(conn);
	cc_migration_set_release(&set);
	return rc;
}
