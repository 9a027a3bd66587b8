/*
 * fuzz_migrations: the migration file reader of sys/migrate
 * (cc_migration_set_load) over a directory the input describes. Input:
 * records "name\0content\0" (at most 32 files; names are used as given
 * when they are plain file names). A loaded set must be sorted by unique
 * version, every item with an up file, a name of [a-z0-9_], and the
 * SHA-256 of its up file as checksum; a refusal must say why.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "sys/crypto.h"
#include "sys/migrate.h"
#include "fuzz_support.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Writes the input's files into dir; returns how many. */
static int write_files(const char *dir, const uint8_t *data, size_t size)
{
	size_t pos = 0;
	int n = 0;

	while (pos < size && n < 32) {
		const uint8_t *name = data + pos, *end = memchr(name, '\0', size - pos);
		const uint8_t *content, *cend;
		size_t name_len, content_len;
		char path[1024];
		FILE *f;

		if (!end)
			break;
		name_len = (size_t)(end - name);
		content = end + 1;
		cend = content < data + size ? memchr(content, '\0', (size_t)(data + size - content)) : NULL;
		content_len = cend ? (size_t)(cend - content) : (size_t)(data + size - content);
		pos = (size_t)(content - data) + content_len + 1;
		if (name_len == 0 || name_len > 200 || memchr(name, '/', name_len) ||
		    (name_len <= 2 && name[0] == '.'))
			continue;
		snprintf(path, sizeof(path), "%s/%.*s", dir, (int)name_len, (const char *)name);
		f = fopen(path, "wb");
		if (!f)
			continue;
		fwrite(content, 1, content_len, f);
		fclose(f);
		n++;
	}
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *dir = fuzz_tmpdir();
	struct cc_migration_set set = {0};
	struct cc_migrate_error err = {""};
	char sum[CC_SHA256_HEX_LEN + 1];
	int rc;

	write_files(dir, data, size);
	rc = cc_migration_set_load(dir, &set, &err);
	if (rc == 0) {
		FUZZ_ASSERT(set.n == 0 || set.items != NULL);
		for (size_t i = 0; i < set.n; i++) {
			const struct cc_migration *m = &set.items[i];

			FUZZ_ASSERT(m->version >= 0 && m->version <= CC_MIGRATE_VERSION_MAX);
			if (i > 0)
				FUZZ_ASSERT(set.items[i - 1].version < m->version);
			FUZZ_ASSERT(m->up_sql != NULL && m->name[0]);
			for (const char *p = m->name; *p; p++)
				FUZZ_ASSERT((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_');
			cc_sha256_hex(m->up_sql, strlen(m->up_sql), sum);
			FUZZ_ASSERT(strcmp(sum, m->checksum) == 0);
		}
		cc_migration_set_release(&set);
	} else {
		FUZZ_ASSERT(err.message[0] != '\0');
	}
	fuzz_tmpdir_empty();
	return 0;
}
