/*
 * FNV-1a (sys/hash.h) against the reference vectors of the FNV authors'
 * test suite (fnv/test_fnv.c: "", "a", "foobar", ...). The arena a proposal
 * gets is cc_hash_fnv1a32(id) mod n, and the claim SQL function receives
 * that number, so these values are part of the contract: a change here
 * moves every arena pick.
 */
#include <string.h>

#include "support.h"
#include "sys/cc.h"
#include "sys/hash.h"

#include "sys/banned.h"

static const struct {
	const char *text;
	size_t len; /* 0: strlen(text) */
	uint32_t h32;
	uint64_t h64;
} vectors[] = {
	{ "", 0, 0x811c9dc5u, 0xcbf29ce484222325u },
	{ "a", 0, 0xe40c292cu, 0xaf63dc4c8601ec8cu },
	{ "b", 0, 0xe70c2de5u, 0xaf63df4c8601f1a5u },
	{ "foobar", 0, 0xbf9cf968u, 0x85944171f73967e8u },
	{ "\0", 1, 0x050c5d1fu, 0xaf63bd4c8601b7dfu },
	{ "a\0", 2, 0x2b24d044u, 0x089be207b544f1e4u },
	{ "foobar\0", 7, 0x0c1c9eb8u, 0x34531ca7168b8f38u },
	{ "chongo was here!\n", 0, 0xd49930d5u, 0x46810940eff5f915u },
	/* A byte >= 0x80 hashes as unsigned on every ABI. */
	{ "\xff", 0, 0x7a0b824eu, 0xaf64724c8602eb6eu },
	/* A proposal id, as the arena pick hashes it (store/formation_claim.c). */
	{ "6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f", 0, 0x50150b26u, 0x73ac34205f455fc6u },
};

START_TEST(test_vectors)
{
	const char *t = vectors[_i].text;
	size_t len = vectors[_i].len ? vectors[_i].len : strlen(t);
	ck_assert_msg(cc_hash_fnv1a32(t, len) == vectors[_i].h32, "fnv1a32 case %d: %08x", _i,
		      (unsigned)cc_hash_fnv1a32(t, len));
	ck_assert_msg(cc_hash_fnv1a64(t, len) == vectors[_i].h64, "fnv1a64 case %d: %016llx", _i,
		      (unsigned long long)cc_hash_fnv1a64(t, len));
}
END_TEST

/* Hashing in pieces equals hashing the whole, at every split point. */
START_TEST(test_add_in_pieces)
{
	static const char text[] = "chongo was here!\n";
	size_t n = strlen(text);
	for (size_t split = 0; split <= n; split++) {
		uint64_t h = cc_hash_fnv1a64_add(cc_hash_fnv1a64(text, split), text + split, n - split);
		ck_assert_msg(h == cc_hash_fnv1a64(text, n), "split at %zu", split);
	}
	ck_assert(cc_hash_fnv1a64_add(CC_HASH_FNV64_BASIS, NULL, 0) == CC_HASH_FNV64_BASIS);
	ck_assert(cc_hash_fnv1a32(NULL, 0) == CC_HASH_FNV32_BASIS);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hash");
	TCase *tc = tcase_create("fnv1a");
	tcase_add_loop_test(tc, test_vectors, 0, CC_ARRAY_LEN(vectors));
	tcase_add_test(tc, test_add_in_pieces);
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
