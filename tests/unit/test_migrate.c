/*
 * Loading a migrations directory (no database): which names are accepted,
 * which are refused and how the error names the file, size caps, sorting
 * and the checksum. The database side is tests/integration/test_migrate*.
 */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sys/migrate.h"
#include "support.h"
#include "sys/banned.h"

static char dir[4096]; /* a fresh directory per test */

static void make_dir(void)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof dir, "%s/cc-migrate-unit.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	ck_assert_msg(mkdtemp(dir) != NULL, "mkdtemp %s failed", dir);
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void remove_dir(void)
{
	nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Writes len bytes of content to dir/name. */
static void put(const char *name, const char *content, size_t len)
{
	char path[8192];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	ck_assert_msg(f, "cannot create %s", path);
	ck_assert_uint_eq(fwrite(content, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
}

static void put_text(const char *name, const char *content)
{
	put(name, content, strlen(content));
}

/* Writes a file of size bytes of SQL comment text. */
static void put_sized(const char *name, size_t size)
{
	char *text = malloc(size);
	ck_assert_ptr_nonnull(text);
	memset(text, '-', size);
	put(name, text, size);
	free(text);
}

START_TEST(test_loads_sorted_with_gaps_and_optional_down)
{
	struct cc_migration_set set = { 0 };
	struct cc_migrate_error err;
	put_text("0010_later.up.sql", "SELECT 10;\n");
	put_text("0001_first.up.sql", "SELECT 1;\n");
	put_text("0001_first.down.sql", "SELECT -1;\n");
	put_text("0003_second_2.up.sql", "");
	put_text("README.md", "not a migration");
	put_text(".0009_editor_swap.up.sql", "hidden: ignored");
	put_text("0004_draft.up.sql.orig", "not .sql: ignored");

	ck_assert_int_eq(cc_migration_set_load(dir, &set, &err), 0);
	ck_assert_uint_eq(set.n, 3);
	ck_assert_int_eq(set.items[0].version, 1);
	ck_assert_str_eq(set.items[0].name, "first");
	ck_assert_str_eq(set.items[0].up_sql, "SELECT 1;\n");
	ck_assert_str_eq(set.items[0].down_sql, "SELECT -1;\n");
	/* sha256sum of "SELECT 1;\n", computed independently. */
	ck_assert_str_eq(set.items[0].checksum,
			 "b4e0497804e46e0a0b0b8c31975b062152d551bac49c3c2e80932567b4085dcd");
	ck_assert_int_eq(set.items[1].version, 3);
	ck_assert_str_eq(set.items[1].name, "second_2");
	ck_assert_ptr_null(set.items[1].down_sql);
	ck_assert_str_eq(set.items[1].checksum,
			 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	ck_assert_int_eq(set.items[2].version, 10);
	cc_migration_set_release(&set);
	ck_assert_ptr_null(set.items);
	ck_assert_uint_eq(set.n, 0);
	cc_migration_set_release(&set); /* twice is harmless */
	cc_migration_set_release(NULL);
}
END_TEST

START_TEST(test_empty_directory_is_an_empty_set)
{
	struct cc_migration_set set = { 0 };
	struct cc_migrate_error err;
	ck_assert_int_eq(cc_migration_set_load(dir, &set, &err), 0);
	ck_assert_uint_eq(set.n, 0);
	cc_migration_set_release(&set);
}
END_TEST

/* A directory that must be refused: the files in it, the code and the
 * text the message must contain (the offending file's name). */
struct refusal {
	const char *files[3];
	int rc;
	const char *message_has[2];
};

static const struct refusal refusals[] = {
	{ { "12_x.up.sql" }, CC_EINVAL, { "12_x.up.sql", "misnamed" } },
	{ { "00001_x.up.sql" }, CC_EINVAL, { "00001_x.up.sql", "misnamed" } },
	{ { "0001_Tickets.up.sql" }, CC_EINVAL, { "0001_Tickets.up.sql", NULL } },
	{ { "0001_.up.sql" }, CC_EINVAL, { "0001_.up.sql", NULL } },
	{ { "0001_x.sql" }, CC_EINVAL, { "0001_x.sql", NULL } },
	{ { "0001_x.UP.sql" }, CC_EINVAL, { "0001_x.UP.sql", NULL } },
	{ { "0001_x-y.up.sql" }, CC_EINVAL, { "0001_x-y.up.sql", NULL } },
	{ { "0001_x.sideways.sql" }, CC_EINVAL, { "0001_x.sideways.sql", NULL } },
	{ { "abcd_x.up.sql" }, CC_EINVAL, { "abcd_x.up.sql", NULL } },
	{ { "0001_x.up.sql", "0001_y.up.sql" }, CC_EINVAL, { "duplicate migration version 0001", "0001_y.up.sql" } },
	{ { "0002_a.up.sql", "0002_b.down.sql" }, CC_EINVAL, { "duplicate migration version 0002", "0002_b.down.sql" } },
	{ { "0001_x.up.sql", "0002_y.down.sql" }, CC_EINVAL, { "0002_y.down.sql has no 0002_y.up.sql", NULL } },
};

START_TEST(test_refuses_bad_names)
{
	const struct refusal *r = &refusals[_i];
	struct cc_migration_set set = { .items = (void *)&set, .n = 77 }; /* must stay untouched */
	struct cc_migrate_error err = { { 0 } };
	for (size_t i = 0; i < CC_ARRAY_LEN(r->files) && r->files[i]; i++)
		put_text(r->files[i], "SELECT 1;\n");
	int rc = cc_migration_set_load(dir, &set, &err);
	ck_assert_msg(rc == r->rc, "case %d (%s): rc %s, expected %s (message: %s)", _i, r->files[0],
		      cc_errname(rc), cc_errname(r->rc), err.message);
	for (size_t i = 0; i < CC_ARRAY_LEN(r->message_has) && r->message_has[i]; i++)
		ck_assert_msg(strstr(err.message, r->message_has[i]), "case %d: message '%s' lacks '%s'", _i,
			      err.message, r->message_has[i]);
	ck_assert_ptr_eq(set.items, (void *)&set);
	ck_assert_uint_eq(set.n, 77);
}
END_TEST

START_TEST(test_name_length_cap)
{
	char name[128];
	struct cc_migration_set set = { 0 };
	struct cc_migrate_error err;
	char longest[CC_MIGRATE_NAME_MAX + 2];

	memset(longest, 'n', CC_MIGRATE_NAME_MAX);
	longest[CC_MIGRATE_NAME_MAX] = '\0';
	snprintf(name, sizeof name, "0001_%s.up.sql", longest);
	put_text(name, "SELECT 1;");
	ck_assert_int_eq(cc_migration_set_load(dir, &set, &err), 0);
	ck_assert_str_eq(set.items[0].name, longest);
	cc_migration_set_release(&set);

	longest[CC_MIGRATE_NAME_MAX] = 'n';
	longest[CC_MIGRATE_NAME_MAX + 1] = '\0';
	snprintf(name, sizeof name, "0002_%s.up.sql", longest);
	put_text(name, "SELECT 1;");
	ck_assert_int_eq(cc_migration_set_load(dir, &set, &err), CC_EINVAL);
	ck_assert_msg(strstr(err.message, name), "message '%s' does not name %s", err.message, name);
}
END_TEST

START_TEST(test_file_size_cap)
{
	struct cc_migration_set set = { 0 };
	struct cc_migrate_error err;
	put_sized("0001_at_cap.up.sql", CC_MIGRATE_FILE_MAX);
	ck_assert_int_eq(cc_migration_set_load(dir, &set, &err), 0);
	ck_assert_uint_eq(strlen(set.items[0].up_sql), CC_MIGRATE_FILE_MAX);
	cc_migration_set_release(&set);

	put_sized("0002_over_cap.down.sql", CC_MIGRATE_FILE_MAX + 1);
	put_text("0002_over_cap.up.sql", "SELECT 1;");
	ck_assert_int_eq(cc_migration_set_load(dir, &set, &err), CC_ETOOBIG);
	ck_assert_msg(strstr(err.message, "0002_over_cap.down.sql"), "message: %s", err.message);
}
END_TEST

START_TEST(test_refuses_nul_byte_and_non_files)
{
	struct cc_migration_set set = { 0 };
	struct cc_migrate_error err;
	put("0001_nul.up.sql", "SELECT 1;\0DROP TABLE x;", 23);
	ck_assert_int_eq(cc_migration_set_load(dir, &set, &err), CC_EINVAL);
	ck_assert_msg(strstr(err.message, "0001_nul.up.sql") && strstr(err.message, "NUL"), "message: %s",
		      err.message);
	remove_dir();
	make_dir();

	char sub[8192];
	snprintf(sub, sizeof sub, "%s/0001_dir.up.sql", dir);
	ck_assert_int_eq(mkdir(sub, 0700), 0);
	ck_assert_int_eq(cc_migration_set_load(dir, &set, &err), CC_EINVAL);
	ck_assert_msg(strstr(err.message, "0001_dir.up.sql") && strstr(err.message, "not a regular file"),
		      "message: %s", err.message);
	remove_dir();
	make_dir();

	/* A FIFO must be refused at once, not block the loader forever. */
	snprintf(sub, sizeof sub, "%s/0001_fifo.up.sql", dir);
	ck_assert_int_eq(mkfifo(sub, 0600), 0);
	ck_assert_int_eq(cc_migration_set_load(dir, &set, &err), CC_EINVAL);
	ck_assert_msg(strstr(err.message, "0001_fifo.up.sql"), "message: %s", err.message);
}
END_TEST

START_TEST(test_missing_directory)
{
	struct cc_migration_set set = { 0 };
	struct cc_migrate_error err;
	char missing[8192];
	snprintf(missing, sizeof missing, "%s/nope", dir);
	ck_assert_int_eq(cc_migration_set_load(missing, &set, &err), CC_ENOTFOUND);
	ck_assert_msg(strstr(err.message, missing), "message: %s", err.message);
}
END_TEST

/* The repository's own migrations load, and every one has a down file. */
START_TEST(test_repository_migrations_load)
{
	const char *top = getenv("CC_TOP");
	char path[4096];
	struct cc_migration_set set = { 0 };
	struct cc_migrate_error err;
	snprintf(path, sizeof path, "%s/migrations", top && *top ? top : ".");
	ck_assert_msg(cc_migration_set_load(path, &set, &err) == 0, "%s: %s", path, err.message);
	ck_assert_uint_ge(set.n, 2);
	ck_assert_str_eq(set.items[0].name, "state_machine");
	for (size_t i = 0; i < set.n; i++)
		ck_assert_msg(set.items[i].down_sql, "%04d_%s has no down file", set.items[i].version,
			      set.items[i].name);
	cc_migration_set_release(&set);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("migrate");
	TCase *tc = tcase_create("load");
	tcase_add_checked_fixture(tc, make_dir, remove_dir);
	tcase_add_test(tc, test_loads_sorted_with_gaps_and_optional_down);
	tcase_add_test(tc, test_empty_directory_is_an_empty_set);
	tcase_add_loop_test(tc, test_refuses_bad_names, 0, (int)CC_ARRAY_LEN(refusals));
	tcase_add_test(tc, test_name_length_cap);
	tcase_add_test(tc, test_file_size_cap);
	tcase_add_test(tc, test_refuses_nul_byte_and_non_files);
	tcase_add_test(tc, test_missing_directory);
	tcase_add_test(tc, test_repository_migrations_load);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
