/*
 * cc-replay-dump FILE: prints a cc-gameserver replay log (gameserver/replay.h
 * holds the format) one line per record:
 *
 *   <seconds since the log opened> <in|out> peer <n> ch <c> <message as JSON>
 *   <seconds> in  peer <n> ch <c> refused <fault kind>: <decoder's fault text> (<len> bytes)
 *   <seconds> in  peer <n> ch <c> unknown id 0x7777 (8 bytes)
 *   <seconds> verdict peer <n> <text as the server wrote it>
 *   <seconds> truncated <text>      <seconds> closed <text>
 *
 * Packets are decoded with game/wire as the receiver decodes them (in:
 * to the server, out: to the client, on the channel they travelled) and
 * printed with cc_wire_format(); secrets are redacted (a join token
 * credential, resume keys) unless --show-secrets; with --hex, the bytes of
 * a message that can carry one (hello, spectate, resume, welcome) are
 * withheld too unless --show-secrets. A line starting with '#'
 * is a note (the header; a log without its closed record).
 *
 * Exit status: 0 the whole file was read; 1 the file is not a replay log
 * or breaks the format (the records before the fault are printed, then
 * "cc-replay-dump: FILE: record N at byte B: what is wrong" on stderr);
 * 2 bad options.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../replay.h"
#include "game/wire.h"
#include "sys/config.h"
#include "sys/banned.h"

struct dump_config {
	bool hex;
	bool show_secrets;
	int64_t peer;
};

static const struct cc_config_option dump_options[] = {
	{ .name = "hex", .type = CC_CFG_BOOL, .default_value = "false",
	  .help = "also print every packet's bytes in hex (withheld for hello, spectate, resume and welcome unless --show-secrets)", .offset = offsetof(struct dump_config, hex) },
	{ .name = "show-secrets", .type = CC_CFG_BOOL, .default_value = "false",
	  .help = "print join-token credentials and resume keys instead of redacting them",
	  .offset = offsetof(struct dump_config, show_secrets) },
	{ .name = "peer", .type = CC_CFG_INT, .default_value = "0", .min = 0, .max = 1e15,
	  .help = "print only the records of this peer number (0 = every record)", .offset = offsetof(struct dump_config, peer) },
};

static const struct cc_config_spec dump_spec = {
	.program = "cc-replay-dump",
	.summary = "Prints a cc-gameserver replay log (--replay-log) as decoded messages, one line per record. "
		   "Exit 0 read to the end, 1 not a replay log or a broken record, 2 bad options.",
	.positional = "FILE",
	.options = dump_options,
	.n_options = CC_ARRAY_LEN(dump_options),
};

static void print_hex(const uint8_t *p, size_t n)
{
	fputs(" hex ", stdout);
	for (size_t i = 0; i < n; i++)
		printf("%02x", p[i]);
}

/* The messages that can carry a secret (a join token, a resume key), by id: decodable or not. */
static bool carries_secret(uint16_t id)
{
	return id == CC_MSG_HELLO || id == CC_MSG_SPECTATE || id == CC_MSG_RESUME || id == CC_MSG_WELCOME;
}

/* Hides what a reader of the dump must not learn: a join token, a resume key. */
static void redact(struct cc_wire_msg *m)
{
	static const char hidden[] = "REDACTED";
	switch (m->id) {
	case CC_MSG_HELLO:
	case CC_MSG_SPECTATE: {
		struct cc_wire_hello *h = m->id == CC_MSG_HELLO ? &m->u.hello : &m->u.spectate;
		if (h->auth == CC_WIRE_AUTH_TOKEN) {
			memcpy(h->credential, hidden, sizeof hidden);
			h->credential_len = (uint16_t)(sizeof hidden - 1);
		}
		break;
	}
	case CC_MSG_RESUME:
		memset(m->u.resume.resume_key, 0, sizeof m->u.resume.resume_key);
		if (m->u.resume.auth == CC_WIRE_AUTH_TOKEN) {
			memcpy(m->u.resume.credential, hidden, sizeof hidden);
			m->u.resume.credential_len = (uint16_t)(sizeof hidden - 1);
		}
		break;
	case CC_MSG_WELCOME:
		memset(m->u.welcome.resume_key, 0, sizeof m->u.welcome.resume_key);
		break;
	default:
		break;
	}
}

static void print_packet(const struct dump_config *cfg, const struct gs_replay_record *r)
{
	static char text[65536];
	struct cc_wire_msg m;
	struct cc_wire_fault f;
	enum cc_wire_direction dir = r->kind == GS_REPLAY_IN ? CC_WIRE_TO_SERVER : CC_WIRE_TO_CLIENT;
	printf(" peer %" PRIu64 " ch %u ", r->peer, r->channel);
	int rc = cc_wire_decode_from(r->data, r->len, dir, r->channel, &m, &f);
	if (rc == 0) {
		if (!cfg->show_secrets)
			redact(&m);
		(void)cc_wire_format(&m, text, sizeof text);
		fputs(text, stdout);
	} else if (rc == CC_ENOTFOUND) {
		printf("unknown id 0x%04x (%zu bytes)", f.id, r->len);
	} else {
		printf("refused %s: %s (%zu bytes)", cc_wire_fault_name(f.kind), f.text, r->len);
	}
	if (r->flags & GS_REPLAY_FLAG_CUT)
		fputs(" [cut at 65536 bytes]", stdout);
	if (!cfg->hex)
		return;
	/*
	 * The raw bytes would undo the redaction. The id is read from the bytes
	 * (not the decoding): a hello this build refuses (another version, a
	 * bad field) may still hold a real token.
	 */
	uint16_t id = r->len >= 2 ? (uint16_t)(r->data[0] | r->data[1] << 8) : 0;
	if (!cfg->show_secrets && carries_secret(id))
		fputs(" hex withheld: the message carries a secret (--show-secrets prints it)", stdout);
	else
		print_hex(r->data, r->len);
}

int main(int argc, char **argv)
{
	struct dump_config cfg = { 0 };
	char *const *args = NULL;
	int n_args = cc_config_load_or_exit(&dump_spec, argc, argv, &cfg, &args);
	if (n_args != 1) {
		fprintf(stderr, "cc-replay-dump: exactly one FILE, got %d arguments\ncc-replay-dump: see --help\n", n_args);
		cc_config_release(&dump_spec, &cfg);
		return 2;
	}
	const char *path = args[0];
	int status = 1;
	uint8_t *map = NULL;
	size_t size = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		fprintf(stderr, "cc-replay-dump: %s: %s\n", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		fprintf(stderr, "cc-replay-dump: %s: not a regular file\n", path);
		goto out;
	}
	size = (size_t)st.st_size;
	if (size > 0) {
		map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (map == MAP_FAILED) {
			map = NULL;
			fprintf(stderr, "cc-replay-dump: %s: cannot map %zu bytes: %s\n", path, size, strerror(errno));
			goto out;
		}
	}
	char why[512];
	struct gs_replay_reader rd;
	if (gs_replay_reader_init(&rd, map, size, why, sizeof why) != 0) {
		fprintf(stderr, "cc-replay-dump: %s: %s\n", path, why);
		goto out;
	}
	time_t opened = (time_t)(rd.opened_unix_ms / 1000);
	struct tm tm;
	char when[40] = "?";
	if (gmtime_r(&opened, &tm))
		strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
	printf("# %s: replay log version %u, opened %s.%03dZ, %zu bytes\n", path, rd.version, when,
	       (int)(rd.opened_unix_ms % 1000), size);
	struct gs_replay_record r;
	int rc;
	while ((rc = gs_replay_next(&rd, &r, why, sizeof why)) == 0) {
		if (cfg.peer != 0 && r.peer != (uint64_t)cfg.peer && r.kind != GS_REPLAY_TRUNCATED && r.kind != GS_REPLAY_CLOSED)
			continue;
		printf("%" PRIu64 ".%06" PRIu64 " %s", r.t_ns / 1000000000u, r.t_ns % 1000000000u / 1000u,
		       gs_replay_kind_name(r.kind));
		if (r.kind == GS_REPLAY_IN || r.kind == GS_REPLAY_OUT)
			print_packet(&cfg, &r);
		else if (r.kind == GS_REPLAY_VERDICT)
			printf(" peer %" PRIu64 " %.*s", r.peer, (int)r.len, (const char *)r.data);
		else
			printf(" %.*s", (int)r.len, (const char *)r.data);
		putchar('\n');
	}
	fflush(stdout);
	if (rc != CC_ENOTFOUND) {
		fprintf(stderr, "cc-replay-dump: %s: %s\n", path, why);
		goto out;
	}
	if (!rd.closed)
		printf("# no closed record: the server was still writing, or stopped without closing the log\n");
	status = 0;
out:
	if (map)
		munmap(map, size);
	if (fd >= 0)
		close(fd);
	cc_config_release(&dump_spec, &cfg);
	return fflush(stdout) == 0 ? status : 1;
}
