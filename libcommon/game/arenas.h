/*
 * arenas.h - the arena list shared by the control plane and the game
 * server (SPEC 6): one compiled table. Migration 0005 seeds the `arenas`
 * table from the same list and a test proves the two equal, so the matcher
 * (which picks from the table) never names an arena the game server lacks.
 */
#ifndef CC_ARENAS_H
#define CC_ARENAS_H

#include <stdbool.h>
#include <stddef.h>

struct cc_arena {
	const char *name;     /* wire and database name */
	bool ranked_eligible; /* may be chosen for a ranked proposal */
};

/* The arenas, sorted by name; *n receives the count. */
const struct cc_arena *cc_arenas(size_t *n);

/* The arena named name, or NULL. */
const struct cc_arena *cc_arena_find(const char *name);

#endif
