/*
 * purge.c - runs a retention purge's two statements. See purge.h.
 */
#include "store/purge.h"

#include <stdio.h>
#include <stdlib.h>

#include "sys/banned.h"

int cc_store_purge_due(struct cc_pg *pg, const char *sql_count, int64_t older_than_s, int64_t *due)
{
	char secs[24], *text = NULL;
	snprintf(secs, sizeof secs, "%lld", (long long)older_than_s);
	const char *p[] = { secs };
	int rc = cc_pg_exec_text(pg, sql_count, 1, p, &text);
	if (rc == 0)
		*due = strtoll(text, NULL, 10);
	free(text);
	return rc;
}

int cc_store_purge(struct cc_pg *pg, const char *sql_count, const char *sql_delete, int64_t older_than_s, int limit,
		   int64_t *n, int64_t *lag)
{
	char secs[24], lim[16];
	int64_t due = -1;
	int rc;
	if (limit < 1 || older_than_s < 0)
		return CC_EINVAL;
	snprintf(secs, sizeof secs, "%lld", (long long)older_than_s);
	snprintf(lim, sizeof lim, "%d", limit);
	const char *p[] = { secs, lim };
	if (lag && (rc = cc_store_purge_due(pg, sql_count, older_than_s, &due)) != 0)
		return rc;
	PGresult *res = NULL;
	if ((rc = cc_pg_exec(pg, sql_delete, 2, p, &res)) != 0)
		return rc;
	*n = strtoll(PQcmdTuples(res), NULL, 10);
	PQclear(res);
	if (lag)
		*lag = due;
	return 0;
}
