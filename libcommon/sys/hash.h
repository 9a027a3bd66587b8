/*
 * hash.h - FNV-1a, the one non-cryptographic hash of the tree.
 *
 * For hash tables, cache keys and deterministic picks, never for anything an
 * attacker must not steer (crypto.h has the keyed hashes). The values are
 * part of contracts: the arena a proposal gets is cc_hash_fnv1a32 of its id
 * modulo the eligible arenas, and the claim SQL function receives that
 * number (store/formation_claim.h), so the function must stay byte-for-byte
 * the published FNV-1a (http://www.isthe.com/chongo/tech/comp/fnv/):
 * offset basis, then for each byte h = (h ^ byte) * prime, modulo 2^32 or
 * 2^64. tests/unit/test_hash.c pins the reference vectors.
 *
 * Bytes are unsigned: a UTF-8 byte >= 0x80 hashes the same on every ABI.
 * Pure functions: no allocation, thread-safe; NULL data is allowed only with
 * len 0.
 */
#ifndef CC_HASH_H
#define CC_HASH_H

#include <stddef.h>
#include <stdint.h>

#define CC_HASH_FNV32_BASIS 2166136261u          /* FNV-1a 32-bit offset basis */
#define CC_HASH_FNV64_BASIS 14695981039346656037u /* FNV-1a 64-bit offset basis */

/* FNV-1a 32 of len bytes of data. */
uint32_t cc_hash_fnv1a32(const void *data, size_t len);

/* FNV-1a 64 of len bytes of data. */
uint64_t cc_hash_fnv1a64(const void *data, size_t len);

/*
 * Goes on hashing from h (CC_HASH_FNV64_BASIS or an earlier result), for
 * input that arrives in pieces or is transformed byte by byte:
 * cc_hash_fnv1a64_add(cc_hash_fnv1a64(a, n), b, m) equals the hash of a then b.
 */
uint64_t cc_hash_fnv1a64_add(uint64_t h, const void *data, size_t len);

#endif
