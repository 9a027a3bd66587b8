/*
 * token_golden: our C join tokens, workload tokens and roster digests
 * equal those of an independent implementation, tests/golden/tokens.py
 * (Python's hmac, hashlib, base64, struct and uuid, run with Debian's
 * /usr/bin/python3), for the pinned vectors of contracts/join-token.md and
 * for a few hundred generated claims that reach every field's edges
 * (empty and 64-byte key ids, 128-byte server ids, slot 15, generation
 * 2^31-1, expiry 2^63-1, 16-entry rosters in any order).
 *
 * The pinned vectors are also compared with literals here, so a change of
 * format shows up even if both implementations changed together.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "game/join_token.h"
#include "game/roster.h"
#include "game/workload_token.h"
#include "sys/config.h"
#include "sys/crypto.h"
#include "support.h"

#include "sys/banned.h"

#define PYTHON "/usr/bin/python3"
#define KEYS_JSON                                                                  \
	"{\"k1\":\"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\","                   \
	"\"\":\"ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=\","                       \
	"\"kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk\":"        \
	"\"QEFCQ0RFRkdISUpLTE1OT1BRUlNUVVZXWFlaW1xdXl8=\"}"
#define N_RANDOM 200
#define N_ROSTERS 60

/* The pinned vectors (contracts/join-token.md). */
static const struct cc_join_claims pinned_join = {
	.key_id = "k1",
	.match_id = "6f1c2b3a-1d2e-4f50-8a9b-0c1d2e3f4a5b",
	.server_id = "local-7100",
	.slot = 3,
	.generation = 1,
	.player_id = "0b8e7d6c-5b4a-4938-a726-15f4e3d2c1b0",
	.expires_at = 1790000300,
};
static const struct cc_workload_claims pinned_workload = {
	.key_id = "k1",
	.allocation_id = "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d",
	.expires_at = 1790003600,
};
#define PINNED_JOIN_TOKEN                                                                     \
	"Q0NKVAECazFvHCs6HS5PUIqbDB0uP0pbCmxvY2FsLTcxMDADAAAAAQuOfWxbSkk4pyYV9OPSwbAAAAAAarE8rA." \
	"kvie2Bd6ZzmWtdkNem2WStKfHQWgc1o8xfrlrGapLRc"
#define PINNED_WORKLOAD_TOKEN \
	"Q0NXVAECazGhssPU5fZKe4ydDh8qO0xdAAAAAGqxSZA.BkwrOcvEq1Gu_ZSGm0MXenVy45pVuo0Poolr1clgbMc"
#define PINNED_ROSTER_DIGEST "3f3979eabf5e68c22b35cba6382b42c021106b5f468df867c5222acf7dcb1642"

static struct cc_roster pinned_roster(void)
{
	struct cc_roster r = {.match_id = "6f1c2b3a-1d2e-4f50-8a9b-0c1d2e3f4a5b",
			      .allocation_id = "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d",
			      .server_id = "local-7100",
			      .key_id = "k1",
			      .count = 2};

	/* Listed out of slot order on purpose: the digest sorts by slot. */
	r.entries[0] = (struct cc_roster_entry){3, 1, "0b8e7d6c-5b4a-4938-a726-15f4e3d2c1b0", 1, 1790000300};
	r.entries[1] = (struct cc_roster_entry){0, 0, "1c9f8e7d-6c5b-4a49-b837-26f5e4d3c2b1", 2, 1790000300};
	return r;
}

/* ---- generated cases ----------------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t rnd(void)
{
	/* xorshift64*: reproducible, so a failure names a case that reappears. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dU;
}

static void rnd_uuid(char out[CC_UUID_BUF])
{
	static const char hex[] = "0123456789abcdef";

	for (int i = 0; i < CC_UUID_STRLEN; i++)
		out[i] = (i == 8 || i == 13 || i == 18 || i == 23) ? '-' : hex[rnd() % 16];
	out[CC_UUID_STRLEN] = '\0';
}

static void rnd_name(char *out, size_t min, size_t max)
{
	static const char set[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-";
	size_t n = min + (size_t)(rnd() % (max - min + 1));

	/* Half of the draws take an edge length. */
	if (rnd() % 2)
		n = rnd() % 2 ? min : max;
	for (size_t i = 0; i < n; i++)
		out[i] = set[rnd() % (sizeof(set) - 1)];
	out[n] = '\0';
}

static const char *const key_ids[] = {"k1", "", "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"};

static int64_t rnd_expiry(void)
{
	switch (rnd() % 4) {
	case 0: return 1;
	case 1: return INT64_MAX;
	default: return 1 + (int64_t)(rnd() % (uint64_t)INT64_MAX);
	}
}

static struct cc_join_claims join_cases[N_RANDOM + 1];
static struct cc_workload_claims workload_cases[N_RANDOM + 1];
static struct cc_roster roster_cases[N_ROSTERS + 1];

static void make_cases(void)
{
	join_cases[0] = pinned_join;
	workload_cases[0] = pinned_workload;
	roster_cases[0] = pinned_roster();
	for (int i = 1; i <= N_RANDOM; i++) {
		struct cc_join_claims *c = &join_cases[i];
		struct cc_workload_claims *w = &workload_cases[i];

		snprintf(c->key_id, sizeof(c->key_id), "%s", key_ids[rnd() % 3]);
		rnd_uuid(c->match_id);
		rnd_name(c->server_id, 1, CC_SERVER_ID_MAX);
		c->slot = (int)(rnd() % (CC_JOIN_SLOT_MAX + 1));
		c->generation = rnd() % 3 ? 1 + (int64_t)(rnd() % INT32_MAX) : INT32_MAX;
		rnd_uuid(c->player_id);
		c->expires_at = rnd_expiry();
		ck_assert(cc_join_claims_valid(c));
		snprintf(w->key_id, sizeof(w->key_id), "%s", key_ids[rnd() % 3]);
		rnd_uuid(w->allocation_id);
		w->expires_at = rnd_expiry();
	}
	for (int i = 1; i <= N_ROSTERS; i++) {
		struct cc_roster *r = &roster_cases[i];
		int slots[CC_ROSTER_MAX_ENTRIES];

		memset(r, 0, sizeof(*r));
		rnd_uuid(r->match_id);
		rnd_uuid(r->allocation_id);
		rnd_name(r->server_id, 1, CC_SERVER_ID_MAX);
		snprintf(r->key_id, sizeof(r->key_id), "%s", key_ids[rnd() % 3]);
		r->count = 1 + rnd() % CC_ROSTER_MAX_ENTRIES;
		for (int s = 0; s < CC_ROSTER_MAX_ENTRIES; s++)
			slots[s] = s;
		for (int s = CC_ROSTER_MAX_ENTRIES - 1; s > 0; s--) { /* shuffle */
			int j = (int)(rnd() % (uint64_t)(s + 1)), t = slots[s];
			slots[s] = slots[j];
			slots[j] = t;
		}
		for (size_t k = 0; k < r->count; k++) {
			struct cc_roster_entry *e = &r->entries[k];

			e->slot = slots[k];
			e->team = (int)(rnd() % 2);
			rnd_uuid(e->player_id);
			e->generation = 1 + (int64_t)(rnd() % INT32_MAX);
			e->expires_at = 1 + (int64_t)(rnd() % (uint64_t)CC_ROSTER_EXPIRY_MAX);
		}
		ck_assert_int_eq(cc_roster_validate(r, NULL, 0), 0);
	}
}

/* ---- the independent implementation --------------------------------------------- */

/* Writes the cases as the script's input (ids and names are plain ASCII: no escaping). */
static void write_input(FILE *f)
{
	fputs("{\"keys\":" KEYS_JSON ",\"join\":[", f);
	for (int i = 0; i <= N_RANDOM; i++) {
		const struct cc_join_claims *c = &join_cases[i];

		fprintf(f, "%s{\"key_id\":\"%s\",\"match_id\":\"%s\",\"server_id\":\"%s\",\"slot\":%d,"
			   "\"generation\":%" PRId64 ",\"player_id\":\"%s\",\"expires_at\":%" PRId64 "}",
			i ? "," : "", c->key_id, c->match_id, c->server_id, c->slot, c->generation,
			c->player_id, c->expires_at);
	}
	fputs("],\"workload\":[", f);
	for (int i = 0; i <= N_RANDOM; i++) {
		const struct cc_workload_claims *w = &workload_cases[i];

		fprintf(f, "%s{\"key_id\":\"%s\",\"allocation_id\":\"%s\",\"expires_at\":%" PRId64 "}",
			i ? "," : "", w->key_id, w->allocation_id, w->expires_at);
	}
	fputs("],\"roster\":[", f);
	for (int i = 0; i <= N_ROSTERS; i++) {
		const struct cc_roster *r = &roster_cases[i];

		fprintf(f, "%s{\"match_id\":\"%s\",\"allocation_id\":\"%s\",\"server_id\":\"%s\","
			   "\"key_id\":\"%s\",\"players\":[",
			i ? "," : "", r->match_id, r->allocation_id, r->server_id, r->key_id);
		for (size_t k = 0; k < r->count; k++) {
			const struct cc_roster_entry *e = &r->entries[k];

			fprintf(f, "%s{\"slot\":%d,\"team\":%d,\"player_id\":\"%s\",\"generation\":%" PRId64
				   ",\"expires_at\":%" PRId64 "}",
				k ? "," : "", e->slot, e->team, e->player_id, e->generation, e->expires_at);
		}
		fputs("]}", f);
	}
	fputs("]}\n", f);
}

/* Runs the script over the cases; returns its parsed output (caller frees). */
static cJSON *run_python(void)
{
	const char *top = getenv("CC_TOP");
	const char *tmp = getenv("TMPDIR");
	char path[512], cmd[1200], *text = NULL;
	size_t cap = 0, len = 0, n;
	FILE *f, *p;
	int fd, status;
	cJSON *out;

	ck_assert_msg(access(PYTHON, X_OK) == 0, "%s is missing: scripts/ensure-deps.sh installs python3",
		      PYTHON);
	snprintf(path, sizeof(path), "%s/cc-golden.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	ck_assert_ptr_nonnull(f);
	write_input(f);
	ck_assert_int_eq(fclose(f), 0);
	snprintf(cmd, sizeof(cmd), "%s %s/tests/golden/tokens.py '%s'", PYTHON, top && *top ? top : ".",
		 path);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	for (;;) {
		if (cap - len < 4096) {
			cap = cap ? cap * 2 : 65536;
			text = realloc(text, cap);
			ck_assert_ptr_nonnull(text);
		}
		n = fread(text + len, 1, cap - len - 1, p);
		if (n == 0)
			break;
		len += n;
	}
	text[len] = '\0';
	status = pclose(p);
	unlink(path);
	ck_assert_msg(status == 0, "'%s' exited with status %d; output: %.400s", cmd, status, text);
	out = cJSON_Parse(text);
	ck_assert_msg(out != NULL, "python printed no JSON: %.400s", text);
	free(text);
	return out;
}

static void hex(const uint8_t *b, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
}

static const char *member(const cJSON *arr, int i, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(arr, i), name);

	ck_assert_msg(cJSON_IsString(v), "python output lacks [%d].%s", i, name);
	return v->valuestring;
}

START_TEST(test_c_equals_python)
{
	struct cc_keyset *ks = NULL;
	char err[256], tok[CC_JOIN_TOKEN_BUF], digest[CC_SHA256_HEX_LEN + 1];
	char hexbuf[2 * CC_ROSTER_BYTES_MAX + 1];
	uint8_t bytes[CC_ROSTER_BYTES_MAX];
	size_t len;
	cJSON *py, *join, *workload, *roster;

	ck_assert_msg(cc_keyset_parse("golden", KEYS_JSON, strlen(KEYS_JSON), &ks, err, sizeof(err)) == 0,
		      "%s", err);
	make_cases();
	py = run_python();
	join = cJSON_GetObjectItemCaseSensitive(py, "join");
	workload = cJSON_GetObjectItemCaseSensitive(py, "workload");
	roster = cJSON_GetObjectItemCaseSensitive(py, "roster");
	ck_assert_int_eq(cJSON_GetArraySize(join), N_RANDOM + 1);
	ck_assert_int_eq(cJSON_GetArraySize(workload), N_RANDOM + 1);
	ck_assert_int_eq(cJSON_GetArraySize(roster), N_ROSTERS + 1);

	for (int i = 0; i <= N_RANDOM; i++) {
		struct cc_join_claims back;
		struct cc_workload_claims wback;

		ck_assert_int_eq(cc_join_claims_encode(&join_cases[i], bytes, sizeof(bytes), &len), 0);
		hex(bytes, len, hexbuf);
		ck_assert_msg(strcmp(hexbuf, member(join, i, "bytes")) == 0, "join %d bytes: C %s, python %s",
			      i, hexbuf, member(join, i, "bytes"));
		ck_assert_int_eq(cc_join_token_sign(ks, &join_cases[i], tok, sizeof(tok)), 0);
		ck_assert_msg(strcmp(tok, member(join, i, "token")) == 0, "join %d: C %s, python %s", i,
			      tok, member(join, i, "token"));
		/* And the C verifier accepts Python's token (expiry 1 is expired at any now > 0). */
		ck_assert_int_eq(cc_join_token_verify(ks, member(join, i, "token"), 0, &back, NULL), 0);
		ck_assert_mem_eq(&back, &join_cases[i], sizeof(back));

		ck_assert_int_eq(cc_workload_claims_encode(&workload_cases[i], bytes, sizeof(bytes), &len), 0);
		hex(bytes, len, hexbuf);
		ck_assert_str_eq(hexbuf, member(workload, i, "bytes"));
		ck_assert_int_eq(cc_workload_token_sign(ks, &workload_cases[i], tok, sizeof(tok)), 0);
		ck_assert_msg(strcmp(tok, member(workload, i, "token")) == 0, "workload %d: C %s, python %s",
			      i, tok, member(workload, i, "token"));
		ck_assert_int_eq(cc_workload_token_verify(ks, member(workload, i, "token"), 0, &wback, NULL), 0);
		ck_assert_mem_eq(&wback, &workload_cases[i], sizeof(wback));
	}
	for (int i = 0; i <= N_ROSTERS; i++) {
		ck_assert_int_eq(cc_roster_encode(&roster_cases[i], bytes, sizeof(bytes), &len), 0);
		hex(bytes, len, hexbuf);
		ck_assert_msg(strcmp(hexbuf, member(roster, i, "bytes")) == 0, "roster %d bytes: C %s, python %s",
			      i, hexbuf, member(roster, i, "bytes"));
		ck_assert_int_eq(cc_roster_digest(&roster_cases[i], digest), 0);
		ck_assert_str_eq(digest, member(roster, i, "digest"));
	}

	/* The pinned vectors, as contracts/join-token.md prints them. */
	ck_assert_str_eq(member(join, 0, "token"), PINNED_JOIN_TOKEN);
	ck_assert_str_eq(member(workload, 0, "token"), PINNED_WORKLOAD_TOKEN);
	ck_assert_str_eq(member(roster, 0, "digest"), PINNED_ROSTER_DIGEST);
	cJSON_Delete(py);
	cc_keyset_free(ks);
}
END_TEST

/* The contract prints the same pinned vectors (so an independent implementer can check theirs). */
START_TEST(test_contract_prints_the_vectors)
{
	const char *top = getenv("CC_TOP");
	char path[512], *doc;
	FILE *f;
	long n;

	snprintf(path, sizeof(path), "%s/contracts/join-token.md", top && *top ? top : ".");
	f = fopen(path, "r");
	ck_assert_msg(f != NULL, "cannot open %s", path);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	ck_assert_int_gt(n, 0);
	rewind(f);
	doc = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(doc);
	ck_assert_uint_eq(fread(doc, 1, (size_t)n, f), (size_t)n);
	doc[n] = '\0';
	fclose(f);
	ck_assert_msg(strstr(doc, PINNED_JOIN_TOKEN), "%s lacks the join token vector", path);
	ck_assert_msg(strstr(doc, PINNED_WORKLOAD_TOKEN), "%s lacks the workload token vector", path);
	ck_assert_msg(strstr(doc, PINNED_ROSTER_DIGEST), "%s lacks the roster digest vector", path);
	free(doc);
}
END_TEST

/* ---- raw key files, as contracts/join-token.md "Key set files" specifies them ---------------- */

/* The documented raw key vector: 32 key bytes, then CR LF LF. */
#define RAW_KEY "raw-key-example-0123456789abcdef"
#define RAW_KEY_FILE RAW_KEY "\r\n\n"
#define RAW_KEY_FILE_HEX "7261772d6b65792d6578616d706c652d30313233343536373839616263646566 0d0a0a"
#define RAW_WORKLOAD_TOKEN \
	"Q0NXVAEAobLD1OX2SnuMnQ4fKjtMXQAAAABqsUmQ.R3EU1v6Ny2oaOW1pOBviM31DsAYji7n6yvd7afO_NRc"

static char *read_contract(void)
{
	const char *top = getenv("CC_TOP");
	char path[512], *doc;
	FILE *f;
	long n;

	snprintf(path, sizeof(path), "%s/contracts/join-token.md", top && *top ? top : ".");
	f = fopen(path, "r");
	ck_assert_msg(f != NULL, "cannot open %s", path);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	ck_assert_int_gt(n, 0);
	rewind(f);
	doc = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(doc);
	ck_assert_uint_eq(fread(doc, 1, (size_t)n, f), (size_t)n);
	doc[n] = '\0';
	fclose(f);
	return doc;
}

/* Writes len bytes to a new file under TMPDIR; returns its path in buf (the caller unlinks it). */
static void temp_file(const void *data, size_t len, char *buf, size_t buflen)
{
	const char *base = getenv("TMPDIR");
	int fd;

	snprintf(buf, buflen, "%s/cc-rawkey-XXXXXX", base && *base ? base : "/tmp");
	fd = mkstemp(buf);
	ck_assert_msg(fd >= 0, "mkstemp %s", buf);
	ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
	ck_assert_int_eq(close(fd), 0);
}

/* The key text cc-gameserver gets from --join-keys-file=path: sys/config's reading of a secret file. */
struct gs_keys_config {
	char *join_keys;
};
static const struct cc_config_option gs_keys_options[] = {
	{ .name = "join-keys", .type = CC_CFG_STRING, .secret = true, .required = true,
	  .help = "as cc-gameserver's", .offset = offsetof(struct gs_keys_config, join_keys) },
};
static const struct cc_config_spec gs_keys_spec = {
	.program = "cc-gameserver", .options = gs_keys_options, .n_options = 1,
};

static int config_keys(const char *path, struct gs_keys_config *cfg, struct cc_config_result *res)
{
	char arg[600];
	snprintf(arg, sizeof arg, "--join-keys-file=%s", path);
	const char *argv[] = { "cc-gameserver", arg, NULL };
	unsetenv("COSMIC_CLASH_JOIN_KEYS");
	unsetenv("COSMIC_CLASH_JOIN_KEYS_FILE");
	unsetenv("COSMIC_CLASH_CONFIG");
	return cc_config_parse(&gs_keys_spec, 2, (char *const *)argv, cfg, res);
}

/*
 * A raw key file built as the contract says is one key under "" whose bytes
 * are the file's minus every trailing CR and LF (not decoded); it signs the
 * documented workload token; cc-gameserver's way of reading it (sys/config,
 * then cc_keyset_parse) gives the same key as cc-allocator's and cc-api's
 * (cc_keyset_load_file).
 */
START_TEST(test_raw_key_file_as_documented)
{
	static const struct cc_workload_claims claims = {
		.key_id = "",
		.allocation_id = "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d",
		.expires_at = 1790003600,
	};
	char path[512], err[700], tok[CC_WORKLOAD_TOKEN_BUF], *doc = read_contract();
	struct cc_keyset *file_ks = NULL, *gs_ks = NULL;
	struct gs_keys_config cfg = { 0 };
	struct cc_config_result res;
	struct cc_workload_claims back;
	const uint8_t *k, *gk;
	size_t len = 0, glen = 0;

	ck_assert_msg(strstr(doc, RAW_KEY_FILE_HEX), "join-token.md lacks the raw key file bytes %s", RAW_KEY_FILE_HEX);
	ck_assert_msg(strstr(doc, RAW_WORKLOAD_TOKEN), "join-token.md lacks the raw-key workload token");
	temp_file(RAW_KEY_FILE, strlen(RAW_KEY_FILE), path, sizeof path);

	int file_rc = cc_keyset_load_file(path, &file_ks, err, sizeof err);
	int config_rc = config_keys(path, &cfg, &res);
	unlink(path);
	ck_assert_msg(file_rc == 0, "%s", err);
	ck_assert_uint_eq(cc_keyset_count(file_ks), 1);
	ck_assert_str_eq(cc_keyset_id_at(file_ks, 0), "");
	k = cc_keyset_find(file_ks, "", &len);
	ck_assert_ptr_nonnull(k);
	ck_assert_msg(len == strlen(RAW_KEY) && memcmp(k, RAW_KEY, len) == 0,
		      "the raw key file gave a %zu-byte key, not the 32 bytes " RAW_KEY, len);
	ck_assert_int_eq(cc_workload_token_sign(file_ks, &claims, tok, sizeof tok), 0);
	ck_assert_str_eq(tok, RAW_WORKLOAD_TOKEN);

	ck_assert_msg(config_rc == 0, "%s", res.n_errors ? res.errors[0] : "?");
	ck_assert_msg(cc_keyset_parse("--join-keys", cfg.join_keys, strlen(cfg.join_keys), &gs_ks, err, sizeof err) == 0,
		      "%s", err);
	gk = cc_keyset_find(gs_ks, "", &glen);
	ck_assert_ptr_nonnull(gk);
	ck_assert_msg(glen == len && memcmp(gk, k, len) == 0,
		      "cc-gameserver's reading of the file gives a %zu-byte key, cc-allocator's a %zu-byte one", glen, len);
	ck_assert_int_eq(cc_workload_token_verify(gs_ks, RAW_WORKLOAD_TOKEN, 0, &back, NULL), 0);
	ck_assert_mem_eq(&back, &claims, sizeof back);

	cc_config_release(&gs_keys_spec, &cfg);
	cc_keyset_free(gs_ks);
	cc_keyset_free(file_ks);
	free(doc);
}
END_TEST

/* Hostile raw key files: refused with the contract's message, "<path>: <problem>". */
static const struct {
	const char *bytes;
	size_t len;
	const char *documented; /* the table row's text in join-token.md */
	const char *problem;    /* what this file gets */
} raw_refusals[] = {
	/* 31 key bytes and line ends: every CR and LF goes, 31 remain. */
	{ "0123456789abcdef0123456789abcde\n\r\n\n", 35, "`raw key is N bytes; at least 32 are required`",
	  "raw key is 31 bytes; at least 32 are required" },
	{ " \t\r\n", 4, "`key file is blank (only whitespace)`", "key file is blank (only whitespace)" },
	{ "", 0, "`key file is empty`", "key file is empty" },
	/* "{" after blanks is JSON, whatever follows. */
	{ "  {" RAW_KEY, 35, "`key file starts with '{' but is not valid JSON (error near byte N)`",
	  "key file starts with '{' but is not valid JSON (error near byte 4)" },
};

START_TEST(test_raw_key_file_refusals)
{
	char path[512], want[1200], err[1200], *doc = read_contract();
	struct cc_keyset *ks = NULL;

	ck_assert_msg(strstr(doc, raw_refusals[_i].documented), "join-token.md does not document %s",
		      raw_refusals[_i].documented);
	temp_file(raw_refusals[_i].bytes, raw_refusals[_i].len, path, sizeof path);
	snprintf(want, sizeof want, "%s: %s", path, raw_refusals[_i].problem);
	int rc = cc_keyset_load_file(path, &ks, err, sizeof err);
	unlink(path);
	free(doc);
	ck_assert_msg(rc == CC_EINVAL, "accepted: case %d", _i);
	ck_assert_ptr_null(ks);
	ck_assert_str_eq(err, want);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("token_golden");
	TCase *tc = tcase_create("python");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_c_equals_python);
	tcase_add_test(tc, test_contract_prints_the_vectors);
	tcase_add_test(tc, test_raw_key_file_as_documented);
	tcase_add_loop_test(tc, test_raw_key_file_refusals, 0, (int)(sizeof raw_refusals / sizeof raw_refusals[0]));
	suite_add_tcase(s, tc);
	return cc_test_run_suite(s);
}
