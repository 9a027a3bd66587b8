#include "game/arenas.h"

#include <string.h>

#include "sys/cc.h"
#include "sys/banned.h"

static const struct cc_arena arenas[] = {
	{ "aurora_ring", true },  { "cinder_vault", true },     { "glacier_dome", true },
	{ "junkyard_drift", false }, { "nebula_forge", true },
};

const struct cc_arena *cc_arenas(size_t *n)
{
	*n = CC_ARRAY_LEN(arenas);
	return arenas;
}

const struct cc_arena *cc_arena_find(const char *name)
{
	for (size_t i = 0; name && i < CC_ARRAY_LEN(arenas); i++)
		if (strcmp(arenas[i].name, name) == 0)
			return &arenas[i];
	return NULL;
}
