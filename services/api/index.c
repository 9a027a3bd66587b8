/*
 * index.c - keeping the Redis candidate index in step with committed queue
 * changes. Until the index lands this only names the hook the routes call.
 */
#include "api.h"
#include "proposals.h"
#include "banned.h"

void api_index_apply(struct api *api, struct cc_pg *pg, const struct cc_proposal_changes *changes)
{
	(void)api;
	(void)pg;
	(void)changes;
}
