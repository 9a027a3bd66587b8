/* FNV-1a (hash.h). */
#include "sys/hash.h"

#include "sys/banned.h"

#define FNV32_PRIME 16777619u
#define FNV64_PRIME 1099511628211u

uint32_t cc_hash_fnv1a32(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint32_t h = CC_HASH_FNV32_BASIS;
	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * FNV32_PRIME;
	return h;
}

uint64_t cc_hash_fnv1a64_add(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;
	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * FNV64_PRIME;
	return h;
}

uint64_t cc_hash_fnv1a64(const void *data, size_t len)
{
	return cc_hash_fnv1a64_add(CC_HASH_FNV64_BASIS, data, len);
}
