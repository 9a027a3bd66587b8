/*
 * candidate_index_stub.c - TEMPORARY stand-in for candidate_index.c while
 * another branch implements the Redis index. It behaves exactly like "no
 * index configured": no handle, every read CC_EUNAVAILABLE, every write a
 * no-op. The lead deletes this file when the real module is merged.
 */
#include "candidate_index.h"

#include "banned.h"

struct cc_candidate_index *cc_candidate_index_create(const char *host, int port, int timeout_ms,
						     size_t pool_size)
{
	(void)host;
	(void)port;
	(void)timeout_ms;
	(void)pool_size;
	return NULL;
}

void cc_candidate_index_free(struct cc_candidate_index *idx)
{
	(void)idx;
}

int cc_candidate_index_put(struct cc_candidate_index *idx, const char *playlist, const struct cc_candidate *c)
{
	(void)idx;
	(void)playlist;
	(void)c;
	return 0;
}

int cc_candidate_index_remove(struct cc_candidate_index *idx, const char *playlist, const char *ticket_id)
{
	(void)idx;
	(void)playlist;
	(void)ticket_id;
	return 0;
}

int cc_candidate_index_read(struct cc_candidate_index *idx, const char *playlist, size_t limit,
			    struct cc_candidate *out, size_t *n)
{
	(void)idx;
	(void)playlist;
	(void)limit;
	(void)out;
	(void)n;
	return CC_EUNAVAILABLE;
}

int cc_candidate_index_rebuild(struct cc_candidate_index *idx, const char *playlist,
			       const struct cc_candidate *all, size_t n)
{
	(void)idx;
	(void)playlist;
	(void)all;
	(void)n;
	return CC_EUNAVAILABLE;
}
