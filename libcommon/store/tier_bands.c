/*
 * tier_bands.c - the tier_bands reader. See tier_bands.h.
 */
#include "store/tier_bands.h"

#include <stdio.h>
#include <stdlib.h>

#include "sys/banned.h"

/* Rows beyond the cap are not fetched; one more than the cap shows it was passed. */
static const char sql_bands[] = "SELECT name, min_rating FROM tier_bands ORDER BY min_rating, name LIMIT $1";

int cc_tier_bands_load(struct cc_pg *pg, struct cc_tier_band **out, size_t *n, char *err, size_t errlen)
{
	PGresult *res = NULL;
	const char **names = NULL, **ratings = NULL;
	char limit[16];
	if (err && errlen > 0)
		err[0] = '\0';
	if (!pg || !out || !n) {
		if (err && errlen > 0)
			snprintf(err, errlen, "cc_tier_bands_load: missing argument");
		return CC_EINVAL;
	}
	snprintf(limit, sizeof(limit), "%d", CC_TIER_BANDS_MAX + 1);
	const char *params[] = { limit };
	int rc = cc_pg_exec(pg, sql_bands, 1, params, &res);
	if (rc != 0) {
		if (err && errlen > 0)
			snprintf(err, errlen, "cannot read tier_bands: %s [%s] %s", cc_errname(rc),
				 cc_pg_sqlstate(pg), cc_pg_error_message(pg));
		return rc;
	}
	size_t rows = (size_t)PQntuples(res);
	names = calloc(rows + 1, sizeof(*names));
	ratings = calloc(rows + 1, sizeof(*ratings));
	if (!names || !ratings) {
		if (err && errlen > 0)
			snprintf(err, errlen, "out of memory reading tier_bands");
		rc = CC_ENOMEM;
		goto out_free;
	}
	for (size_t i = 0; i < rows; i++) {
		names[i] = cc_pg_get_text(res, (int)i, 0);
		ratings[i] = cc_pg_get_text(res, (int)i, 1);
	}
	rc = cc_tier_bands_parse(rows, names, ratings, out, n, err, errlen);
out_free:
	free(names);
	free(ratings);
	PQclear(res);
	return rc;
}
