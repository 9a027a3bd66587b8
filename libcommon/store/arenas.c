/*
 * arenas.c - the arenas table's read. See arenas.h.
 */
#include "store/arenas.h"

#include <stdio.h>
#include <string.h>

#include "game/arenas.h"
#include "sys/banned.h"

static const char sql_arenas[] = "SELECT name, ranked_eligible FROM arenas ORDER BY name";

int cc_arenas_check(struct cc_pg *pg, char *why, size_t whylen)
{
	PGresult *res = NULL;
	size_t n = 0;
	(void)cc_arenas(&n);
	int rc = cc_pg_exec(pg, sql_arenas, 0, NULL, &res);
	if (rc != 0)
		return rc;
	why[0] = '\0';
	int rows = PQntuples(res);
	for (int i = 0; i < rows && !why[0]; i++) {
		const char *name = PQgetvalue(res, i, 0); /* [a-z][a-z0-9_]{0,31}: a CHECK keeps it so */
		const struct cc_arena *a = cc_arena_find(name);
		if (!a || a->ranked_eligible != (strcmp(PQgetvalue(res, i, 1), "t") == 0))
			snprintf(why, whylen, "arenas table differs from the compiled list at %s", name);
	}
	if (!why[0] && (size_t)rows != n)
		snprintf(why, whylen, "arenas table holds %d arenas, the compiled list %zu", rows, n);
	PQclear(res);
	return 0;
}
