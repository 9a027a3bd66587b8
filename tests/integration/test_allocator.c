/*
 * cc-allocator end to end (issue 10, SPEC 8), against the harness
 * PostgreSQL (each test in its own freshly migrated scratch database) with
 * real cc-allocator / cc-testkit-allocator processes, real local game-server
 * processes (build/fakes/standin_server) and, for the agones provider, the
 * fake Kubernetes API (build/fakes/fake_k8s) over loopback HTTP.
 *
 * Matches are created the way production creates them: tickets are seeded
 * QUEUED with SQL (the matcher's input, as test_matcher does), then the
 * matcher's claim (store/formation_claim) opens a proposal and every
 * participant accepts through store/proposals (what cc-api's accept route
 * runs), which creates the match in ALLOCATING and announces it. Nothing
 * here writes an allocations, game_servers, rosters or assignments row:
 * only cc-allocator (or, in the store race, the store functions it calls).
 *
 *  - store race: 12 threads race for 3 idle servers -> 3 winners on 3
 *    distinct servers, 9 clean no-capacity answers that wrote nothing
 *  - pool capacity: two allocator processes (2 workers each, 2 servers
 *    each) and 9 matches -> 4 published on 4 distinct servers, 5 left
 *    REQUESTED with a backoff; the metrics agree with the rows
 *  - crash at each step (claimed, allocated, delivered, published):
 *    cc-testkit-allocator SIGKILLs itself there; after a restart there is
 *    exactly one allocation, one server, one roster with one assignment per
 *    player, and the allocation file names it; cc-allocator lacks the hook
 *  - a pool child killed while idle is reaped (DEAD), restarted on its port
 *    (IDLE, new pid) and counted, and serves the next allocation
 *  - NOTIFY: with a 60 s poll interval a new match is published within 5 s
 *  - with cc-testkit-api's server routes and serving stand-ins: the match
 *    reaches ASSIGNMENT_READY (tickets ASSIGNED), the server shuts down and
 *    the next match gets the same server; and after a SIGKILL at each step
 *    and a restart, the match still reaches ASSIGNMENT_READY
 *  - agones: every outcome of the fake (UnAllocated, Contention, 409, 429,
 *    500, a slow answer, 403) and the final Allocated, with the selectors,
 *    annotations and bearer token the fake recorded, and every answer's and
 *    request's field names checked against allocation.swagger.json
 *
 * Nothing sleeps to synchronise: every wait polls a condition with a
 * deadline, checks the allocators are alive, and says what it saw.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <libpq-fe.h>

#include "http_fetch.h"
#include "support.h"
#include "sys/clock.h"
#include "sys/crypto.h"
#include "sys/file.h"
#include "sys/json.h"
#include "sys/migrate.h"
#include "sys/pg.h"
#include "game/roster.h"
#include "game/workload_token.h"
#include "store/allocations.h"
#include "store/formation_claim.h"
#include "store/game_servers.h"
#include "store/proposals.h"
#include "sys/banned.h"

#define MAX_PROCS 6
#define WAIT_STEP_MS 20

static char db_name[64];
static char db_dsn[1024];
static PGconn *db;
static char dir[1024]; /* per-test scratch dir: keys, state dirs, logs */
static char join_keys[1100], workload_keys[1100];

struct proc {
	pid_t pid;
	int admin_port;
	char log[1200];
	bool reaped;
	int status;
	bool expect_exit; /* a crash the test asked for */
};
static struct proc procs[MAX_PROCS];
static int n_procs;

/* ---- time, waiting ------------------------------------------------------------------ */

static void pause_ms(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };
	nanosleep(&ts, NULL);
}

static bool alive(struct proc *p)
{
	int st;
	if (p->reaped)
		return false;
	if (waitpid(p->pid, &st, WNOHANG) == p->pid) {
		p->reaped = true;
		p->status = st;
		return false;
	}
	return true;
}

/* The last lines of a log, for failure messages. */
static const char *tail(const char *path)
{
	static char text[2048]; /* check caps a failure message near 4 KiB */
	FILE *f = fopen(path, "rb");
	text[0] = '\0';
	if (!f)
		return "(no log)";
	fseek(f, 0, SEEK_END);
	long size = ftell(f);
	fseek(f, size > (long)sizeof text - 1 ? size - (long)sizeof text + 1 : 0, SEEK_SET);
	size_t n = fread(text, 1, sizeof text - 1, f);
	text[n] = '\0';
	fclose(f);
	return text;
}

static void all_alive(const char *during)
{
	for (int i = 0; i < n_procs; i++)
		if (!procs[i].expect_exit)
			ck_assert_msg(alive(&procs[i]), "allocator pid %d exited (status 0x%x) during %s; log tail:\n%s",
				      (int)procs[i].pid, procs[i].status, during, tail(procs[i].log));
}

static char seen[1024];
#define WAIT_FOR(cond, timeout_ms, what)                                                                  \
	do {                                                                                              \
		int64_t wait_end_ = cc_clock_ms() + (timeout_ms);                                          \
		seen[0] = '\0';                                                                           \
		while (!(cond)) {                                                                         \
			all_alive(what);                                                                  \
			ck_assert_msg(cc_clock_ms() < wait_end_, "%s: not within %d ms; last seen: %s", what, \
				      (int)(timeout_ms), seen);                                           \
			pause_ms(WAIT_STEP_MS);                                                           \
		}                                                                                         \
	} while (0)

/* ---- SQL ------------------------------------------------------------------------------ */

static PGresult *sqlp(const char *sql, int n, const char *const *params)
{
	PGresult *res = PQexecParams(db, sql, n, NULL, params, NULL, NULL, 0);
	ExecStatusType st = PQresultStatus(res);
	ck_assert_msg(st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK, "%s\n  failed: %s", sql, PQerrorMessage(db));
	return res;
}

static long long sql_ll(const char *sql, int n, const char *const *params)
{
	PGresult *res = sqlp(sql, n, params);
	ck_assert_msg(PQntuples(res) == 1, "%s: %d rows", sql, PQntuples(res));
	long long v = PQgetisnull(res, 0, 0) ? 0 : strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	return v;
}

/* One text cell ("" for none or NULL) into out. */
static void sql_text(const char *sql, int n, const char *const *params, char *out, size_t len)
{
	PGresult *res = sqlp(sql, n, params);
	snprintf(out, len, "%s", PQntuples(res) && !PQgetisnull(res, 0, 0) ? PQgetvalue(res, 0, 0) : "");
	PQclear(res);
}

static bool count_is(const char *sql, long long want)
{
	long long got = sql_ll(sql, 0, NULL);
	snprintf(seen, sizeof seen, "%lld (want %lld) from %s", got, want, sql);
	return got == want;
}

/* ---- scratch database and files ------------------------------------------------------- */

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "wb");
	ck_assert_msg(f, "cannot write %s", path);
	fputs(text, f);
	fclose(f);
	chmod(path, 0600);
}

static void scratch_setup(void)
{
	static int counter;
	const char *admin = cc_test_env("CC_TEST_PG_ADMIN_DSN");
	const char *slash = strrchr(admin, '/');
	char sql[128], mig_dir[4096];
	ck_assert_msg(slash && strcmp(slash, "/postgres") == 0, "CC_TEST_PG_ADMIN_DSN should end in /postgres");
	snprintf(db_name, sizeof db_name, "allocator_%d_%d", (int)getpid(), counter);
	snprintf(db_dsn, sizeof db_dsn, "%.*s/%s", (int)(slash - admin), admin, db_name);
	snprintf(dir, sizeof dir, "%s/allocator-%d-%d", cc_test_env("CC_TEST_TMP"), (int)getpid(), counter++);
	ck_assert_msg(mkdir(dir, 0700) == 0, "mkdir %s: %s", dir, strerror(errno));

	PGconn *adm = PQconnectdb(admin);
	ck_assert_msg(PQstatus(adm) == CONNECTION_OK, "admin connect: %s", PQerrorMessage(adm));
	snprintf(sql, sizeof sql, "CREATE DATABASE %s", db_name);
	PGresult *res = PQexec(adm, sql);
	ck_assert_msg(PQresultStatus(res) == PGRES_COMMAND_OK, "%s: %s", sql, PQerrorMessage(adm));
	PQclear(res);
	PQfinish(adm);

	const char *top = getenv("CC_TOP");
	snprintf(mig_dir, sizeof mig_dir, "%s/migrations", top && *top ? top : ".");
	struct cc_migrate_options opt = { .dsn = db_dsn, .dir = mig_dir, .lock_timeout_ms = 10000 };
	struct cc_migrate_error err;
	int applied = 0;
	int rc = cc_migrate_up(&opt, &applied, &err);
	ck_assert_msg(rc == 0, "migrations: %s: %s", cc_errname(rc), err.message);

	db = PQconnectdb(db_dsn);
	ck_assert_msg(PQstatus(db) == CONNECTION_OK, "connect: %s", PQerrorMessage(db));
	PQsetNoticeProcessor(db, NULL, NULL);
	ck_assert_int_eq(cc_crypto_init(), 0);
	n_procs = 0;

	/* A join key set mid-rotation (the active key is "k2") and a raw workload secret. */
	snprintf(join_keys, sizeof join_keys, "%s/join-keys.json", dir);
	snprintf(workload_keys, sizeof workload_keys, "%s/workload.key", dir);
	write_file(join_keys, "{\"k1\":\"MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\","
			      "\"k2\":\"ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA=\"}\n");
	write_file(workload_keys, "workload-secret-for-tests-0123456789abcdef\n");
}

static void kill_procs(void)
{
	for (int i = 0; i < n_procs; i++) {
		if (!procs[i].reaped) {
			kill(procs[i].pid, SIGKILL);
			waitpid(procs[i].pid, NULL, 0);
			procs[i].reaped = true;
		}
	}
}

/* Removes dir and everything under it (one level of subdirectories: the state dirs). */
static void remove_tree(const char *path)
{
	char cmd[2200];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
	ck_assert_int_eq(system(cmd), 0);
}

static void stop_fake_k8s(void);
static void stop_tls_proxies(void);
static bool log_has(const char *path, const char *needle);

static void scratch_teardown(void)
{
	kill_procs();
	stop_fake_k8s();
	stop_tls_proxies();
	n_procs = 0;
	PQfinish(db);
	db = NULL;
	PGconn *adm = PQconnectdb(cc_test_env("CC_TEST_PG_ADMIN_DSN"));
	char sql[128];
	snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s WITH (FORCE)", db_name);
	PQclear(PQexec(adm, sql));
	PQfinish(adm);
	remove_tree(dir);
}

/* ---- matches through the production path ---------------------------------------------- */

struct respond_tx {
	const char *proposal_id, *player_id;
	struct cc_match match;
	enum cc_proposal_verdict verdict;
};

static int respond_tx(struct cc_pg *pg, void *arg)
{
	struct respond_tx *t = arg;
	return cc_proposal_respond(pg, t->proposal_id, t->player_id, true, 1, 600, &t->verdict, NULL, &t->match);
}

/*
 * Creates one 3v3 casual match: six QUEUED tickets (SQL, like the matcher's
 * input), the matcher's claim, then every player's accept (store/proposals,
 * as cc-api's route). Writes the match id into out.
 */
static void create_match(char out[CC_UUID_BUF])
{
	struct cc_pg *pg = NULL;
	char err[256];
	struct cc_claim_request req;
	struct cc_claim_result res;
	char tickets[6][CC_UUID_BUF], players[6][CC_UUID_BUF];
	ck_assert_int_eq(cc_pg_connect(db_dsn, NULL, &pg, err, sizeof err), 0);
	PGresult *r = sqlp("WITH p AS (INSERT INTO players (id) SELECT gen_random_uuid() FROM generate_series(1, 6) "
			   "RETURNING id) "
			   "INSERT INTO tickets (player_id, playlist, state, build, protocol_version, rating, deviation, "
			   "  predicted_rtt, queued_at, expires_at) "
			   "SELECT p.id, 'casual', 'QUEUED', 'race', 1, 1500, 120, '{\"eu\": 20}', now(), "
			   "  now() + interval '1 hour' FROM p RETURNING id, player_id",
			   0, NULL);
	ck_assert_int_eq(PQntuples(r), 6);
	memset(&req, 0, sizeof req);
	req.playlist = "casual";
	req.matcher = "test";
	req.window_seconds = 30;
	req.team_size = 3;
	req.build = "race";
	req.protocol_version = 1;
	req.region = "eu";
	req.max_rtt_ms = 100;
	req.n = 6;
	for (int k = 0; k < 6; k++) {
		snprintf(tickets[k], sizeof tickets[k], "%s", PQgetvalue(r, k, 0));
		snprintf(players[k], sizeof players[k], "%s", PQgetvalue(r, k, 1));
		req.ticket_id[k] = tickets[k];
		req.team[k] = (uint8_t)(k % 2);
	}
	PQclear(r);
	int rc = cc_formation_claim(pg, &req, &res);
	ck_assert_msg(rc == 0, "claim: %s", cc_errname(rc));
	out[0] = '\0';
	for (int k = 0; k < 6; k++) {
		struct respond_tx t = { .proposal_id = res.proposal_id, .player_id = players[k] };
		rc = cc_pg_run_serializable(pg, respond_tx, &t);
		ck_assert_msg(rc == 0 && t.verdict == CC_PROPOSAL_OK, "accept %d: %s verdict %d", k, cc_errname(rc),
			      (int)t.verdict);
		if (t.match.id[0])
			snprintf(out, CC_UUID_BUF, "%s", t.match.id);
	}
	cc_pg_free(pg);
	ck_assert_msg(cc_uuid_valid(out), "the last accept created no match");
}

/* ---- allocator processes ---------------------------------------------------------------- */

/* The admin port from the "started" log line, or 0 while it is not there yet. */
static int started_port(const struct proc *p)
{
	static char text[512 * 1024];
	FILE *f = fopen(p->log, "rb");
	if (!f)
		return 0;
	size_t n = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	text[n] = '\0';
	const char *line = strstr(text, "\"event\":\"started\"");
	const char *port = line ? strstr(line, "\"admin_port\":") : NULL;
	return port ? (int)strtol(port + strlen("\"admin_port\":"), NULL, 10) : 0;
}

/*
 * Starts bin ("cc-allocator" or "cc-testkit-allocator") on the scratch
 * database with the test keys, fast backoffs and the NULL-terminated extra
 * flags; crash_at (may be NULL) goes to COSMIC_CLASH_TESTKIT_CRASH_AT.
 * Returns once it logged "started" (or, with crash_at, at once).
 */
static struct proc *spawn_allocator(const char *bin_name, const char *crash_at, const char *const *extra)
{
	char bin[4096], keys_flag[1200], wl_flag[1200];
	const char *argv[48];
	int argc = 0;
	ck_assert_int_lt(n_procs, MAX_PROCS);
	struct proc *p = &procs[n_procs];
	memset(p, 0, sizeof *p);
	snprintf(p->log, sizeof p->log, "%s/allocator-%d.log", dir, n_procs);
	snprintf(keys_flag, sizeof keys_flag, "--join-keys-file=%s", join_keys);
	snprintf(wl_flag, sizeof wl_flag, "--workload-secret-file=%s", workload_keys);
	argv[argc++] = cc_test_bin(bin_name, bin, sizeof bin);
	argv[argc++] = "--admin-port=0";
	argv[argc++] = "--log-level=debug";
	argv[argc++] = keys_flag;
	argv[argc++] = "--join-key-id=k2";
	argv[argc++] = wl_flag;
	argv[argc++] = "--backoff-min-ms=20";
	argv[argc++] = "--backoff-max-ms=200";
	bool own_lease = false;
	for (int i = 0; extra && extra[i]; i++)
		own_lease |= strncmp(extra[i], "--claim-lease-ms=", 17) == 0;
	if (!own_lease)
		argv[argc++] = "--claim-lease-ms=1000";
	for (int i = 0; extra && extra[i]; i++)
		argv[argc++] = extra[i];
	argv[argc] = NULL;

	pid_t parent = getpid();
	pid_t pid = fork();
	ck_assert_msg(pid >= 0, "fork failed");
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		FILE *log = freopen(p->log, "a", stdout);
		if (!log || dup2(fileno(stdout), 2) < 0)
			_exit(127);
		setenv("COSMIC_CLASH_DATABASE_URL", db_dsn, 1);
		if (crash_at)
			setenv("COSMIC_CLASH_TESTKIT_CRASH_AT", crash_at, 1);
		else
			unsetenv("COSMIC_CLASH_TESTKIT_CRASH_AT");
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	p->pid = pid;
	p->expect_exit = crash_at != NULL;
	n_procs++;
	if (!crash_at)
		WAIT_FOR((p->admin_port = started_port(p)) > 0, 20000, "allocator start-up");
	return p;
}

/* Stops an allocator with SIGTERM and expects exit 0 within 10 s. */
static void stop_allocator(struct proc *p)
{
	int st = 0;
	if (p->reaped)
		return;
	kill(p->pid, SIGTERM);
	int64_t end = cc_clock_ms() + 10000;
	pid_t r;
	while ((r = waitpid(p->pid, &st, WNOHANG)) == 0 && cc_clock_ms() < end)
		pause_ms(WAIT_STEP_MS);
	p->reaped = true;
	if (r == 0) {
		kill(p->pid, SIGKILL);
		waitpid(p->pid, &st, 0);
		ck_abort_msg("allocator pid %d did not stop within 10 s of SIGTERM; log tail:\n%s", (int)p->pid, tail(p->log));
	}
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "allocator pid %d ended with status 0x%x; log tail:\n%s",
		      (int)p->pid, st, tail(p->log));
}

/* Sum of the samples of metric name whose line contains label (may be NULL); -1 when unreachable. */
static double metric(const struct proc *p, const char *name, const char *label)
{
	struct cc_test_request req = { .path = "/metrics", .timeout_ms = 2000 };
	struct cc_test_reply reply;
	double sum = 0;
	memset(&reply, 0, sizeof reply);
	if (cc_test_fetch(p->admin_port, &req, &reply) != 0 || reply.status != 200) {
		cc_test_reply_release(&reply);
		return -1;
	}
	size_t len = strlen(name);
	for (char *save = NULL, *line = strtok_r(reply.body, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, name, len) != 0 || (line[len] != '{' && line[len] != ' '))
			continue;
		if (label && !strstr(line, label))
			continue;
		const char *v = strrchr(line, ' ');
		sum += v ? strtod(v + 1, NULL) : 0;
	}
	cc_test_reply_release(&reply);
	return sum;
}

static double allocations_metric(const struct proc *p, const char *result)
{
	char label[64];
	snprintf(label, sizeof label, "result=\"%s\"", result);
	return metric(p, "cosmic_clash_allocator_allocations_total", label);
}

/* The standard local flags for one allocator: its own ports, state dir and instance. */
struct local_flags {
	char ports[2][64], cap[64], cmd[4200], state[1200], instance[64];
	const char *argv[12];
};

static const char *const *local_flags(struct local_flags *f, int index, int capacity, int port_base, bool idle)
{
	char standin[4096];
	snprintf(f->ports[0], sizeof f->ports[0], "--local-port-min=%d", port_base);
	snprintf(f->ports[1], sizeof f->ports[1], "--local-port-max=%d", port_base + capacity - 1);
	snprintf(f->cap, sizeof f->cap, "--local-capacity=%d", capacity);
	const char *top = getenv("CC_TOP");
	snprintf(standin, sizeof standin, "%s/build/fakes/standin_server", top && *top ? top : ".");
	snprintf(f->cmd, sizeof f->cmd, "--local-server-command=%s%s", standin, idle ? " --idle" : "");
	snprintf(f->state, sizeof f->state, "--local-state-dir=%s/state-%d", dir, index);
	snprintf(f->instance, sizeof f->instance, "--instance-id=test-%d", index);
	int n = 0;
	f->argv[n++] = f->ports[0];
	f->argv[n++] = f->ports[1];
	f->argv[n++] = f->cap;
	f->argv[n++] = f->cmd;
	f->argv[n++] = f->state;
	f->argv[n++] = f->instance;
	f->argv[n] = NULL;
	return f->argv;
}

/* A base port for this test's pools, below the ephemeral range and spread by pid. */
static int port_base(void)
{
	return 20000 + (int)(getpid() % 400) * 40;
}

/* Appends b (NULL-terminated) after a (NULL-terminated) into out (cap entries). */
static const char *const *concat(const char **out, size_t cap, const char *const *a, const char *const *b)
{
	size_t n = 0;
	for (size_t i = 0; a && a[i] && n + 1 < cap; i++)
		out[n++] = a[i];
	for (size_t i = 0; b && b[i] && n + 1 < cap; i++)
		out[n++] = b[i];
	out[n] = NULL;
	return out;
}

/* ---- checks on the durable outcome ---------------------------------------------------------- */

/*
 * Match m has exactly one allocation, PUBLISHED on a server that is
 * ALLOCATED to it and to nothing else, one roster whose manifest parses and
 * verifies (digest) and names that server, and one assignment per player
 * whose join token verifies with the join keys. Writes the server id.
 */
static void expect_published_once(const char *m, char server[CC_GAME_SERVER_ID_BUF])
{
	const char *p[] = { m };
	char manifest[16384], state[32];
	ck_assert_int_eq(sql_ll("SELECT count(*) FROM allocations WHERE match_id = $1", 1, p), 1);
	sql_text("SELECT state FROM allocations WHERE match_id = $1", 1, p, state, sizeof state);
	ck_assert_str_eq(state, "PUBLISHED");
	sql_text("SELECT server_id FROM allocations WHERE match_id = $1", 1, p, server, CC_GAME_SERVER_ID_BUF);
	ck_assert_int_eq(sql_ll("SELECT count(*) FROM game_servers g JOIN allocations a ON a.id = g.allocation_id "
				"WHERE a.match_id = $1 AND g.state = 'ALLOCATED' AND g.id = a.server_id",
				1, p),
			 1);
	ck_assert_int_eq(sql_ll("SELECT count(*) FROM rosters WHERE match_id = $1", 1, p), 1);
	ck_assert_int_eq(sql_ll("SELECT count(*) FROM assignments WHERE match_id = $1", 1, p),
			 sql_ll("SELECT count(*) FROM match_players WHERE match_id = $1", 1, p));
	ck_assert_int_eq(sql_ll("SELECT count(*) FROM outbox WHERE resource_type = 'allocation' "
				"AND event = 'allocation.published' AND resource_id = "
				"(SELECT id FROM allocations WHERE match_id = $1)",
				1, p),
			 1);
	sql_text("SELECT manifest::text FROM rosters WHERE match_id = $1", 1, p, manifest, sizeof manifest);
	struct cc_roster r;
	char digest[CC_SHA256_HEX_LEN + 1], stored[CC_SHA256_HEX_LEN + 1];
	enum cc_token_refusal why = CC_TOKEN_OK;
	int rc = cc_roster_manifest_parse(manifest, strlen(manifest), &r, digest, &why, NULL);
	ck_assert_msg(rc == 0, "manifest refused: %s", cc_token_refusal_name(why));
	sql_text("SELECT digest FROM rosters WHERE match_id = $1", 1, p, stored, sizeof stored);
	ck_assert_str_eq(digest, stored);
	ck_assert_str_eq(r.server_id, server);
	ck_assert_str_eq(r.key_id, "k2");
	ck_assert_int_eq((int)r.count, 6);

	/* Every join token verifies with the key set and names its seat. */
	struct cc_keyset *ks = NULL;
	char err[256];
	ck_assert_int_eq(cc_keyset_load_file(join_keys, &ks, err, sizeof err), 0);
	PGresult *res = sqlp("SELECT join_token, slot, player_id, generation FROM assignments WHERE match_id = $1 "
			     "ORDER BY slot",
			     1, p);
	for (int i = 0; i < PQntuples(res); i++) {
		struct cc_join_claims c;
		rc = cc_join_token_verify(ks, PQgetvalue(res, i, 0), time(NULL), &c, &why);
		ck_assert_msg(rc == 0, "join token of slot %d refused: %s", i, cc_token_refusal_name(why));
		ck_assert_int_eq(cc_join_claims_check(&c, m, server, (int)strtol(PQgetvalue(res, i, 1), NULL, 10), &why), 0);
		ck_assert_str_eq(c.player_id, PQgetvalue(res, i, 2));
		ck_assert_str_eq(c.key_id, "k2");
		ck_assert_int_eq(c.generation, 1);
	}
	PQclear(res);
	cc_keyset_free(ks);
}

/* The allocation file of local server id in state dir index: its allocation id ("" when absent). */
static void allocation_file(int index, const char *server, char out[CC_UUID_BUF])
{
	char path[2400], *text = NULL;
	size_t len = 0;
	struct cc_file_error fe;
	snprintf(path, sizeof path, "%s/state-%d/%s/allocation.json", dir, index, server);
	out[0] = '\0';
	if (cc_file_read(path, 65536, 0, &text, &len, &fe) != 0)
		return;
	cJSON *root = cJSON_Parse(text);
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(root, "allocation_id");
	if (cJSON_IsString(id))
		snprintf(out, CC_UUID_BUF, "%s", id->valuestring);
	struct stat sb;
	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert_msg((sb.st_mode & 0777) == 0600, "allocation file mode %o", sb.st_mode & 0777);
	cJSON_Delete(root);
	free(text);
}

/* ---- the store race ------------------------------------------------------------------------- */

#define RACERS 12
#define RACE_SERVERS 3

struct racer {
	pthread_barrier_t *start;
	struct cc_allocation al;
	int rc;
	struct cc_game_server server;
};

struct race_tx {
	struct racer *r;
};

static int race_tx(struct cc_pg *pg, void *arg)
{
	struct racer *r = arg;
	struct cc_allocation out;
	int rc = cc_game_server_claim_idle(pg, "race-owner", r->al.id, &r->server);
	if (rc == 0)
		rc = cc_allocation_set_allocated(pg, r->al.id, "race-replica", &r->server, NULL, &out);
	return rc;
}

static void *racer_main(void *arg)
{
	struct racer *r = arg;
	struct cc_pg *pg = NULL;
	char err[256];
	r->rc = cc_pg_connect(db_dsn, NULL, &pg, err, sizeof err);
	pthread_barrier_wait(r->start);
	if (r->rc == 0)
		r->rc = cc_pg_run_locked(pg, race_tx, r); /* as cc-allocator runs it (allocator.h: isolation) */
	cc_pg_free(pg);
	return NULL;
}

struct setup_tx {
	struct cc_allocation *items;
	size_t n;
};

static int register_servers_tx(struct cc_pg *pg, void *arg)
{
	(void)arg;
	struct cc_game_server s;
	for (int i = 0; i < RACE_SERVERS; i++) {
		char id[32];
		snprintf(id, sizeof id, "local-%d", 9000 + i);
		int rc = cc_game_server_register_local(pg, id, "local", "127.0.0.1", 9000 + i, "race-owner", 0, &s);
		if (rc != 0)
			return rc;
	}
	return 0;
}

static int claim_all_tx(struct cc_pg *pg, void *arg)
{
	struct setup_tx *t = arg;
	struct cc_allocation_claim req = { .provider = "local", .replica = "race-replica", .owner = "race-owner",
					   .lease_ms = 60000, .workload_ttl_s = 3600, .limit = RACERS };
	t->n = 0;
	return cc_allocations_claim(pg, &req, t->items, 2 * RACERS, &t->n);
}

START_TEST(test_store_race_for_capacity)
{
	struct cc_pg *pg = NULL;
	char err[256], m[CC_UUID_BUF];
	static struct cc_allocation items[2 * RACERS];
	for (int i = 0; i < RACERS; i++)
		create_match(m);
	ck_assert_int_eq(cc_pg_connect(db_dsn, NULL, &pg, err, sizeof err), 0);
	ck_assert_int_eq(cc_pg_run_serializable(pg, register_servers_tx, NULL), 0);
	struct setup_tx st = { .items = items };
	ck_assert_int_eq(cc_pg_run_serializable(pg, claim_all_tx, &st), 0);
	ck_assert_int_eq((int)st.n, RACERS);
	cc_pg_free(pg);

	pthread_barrier_t start;
	pthread_t threads[RACERS];
	static struct racer r[RACERS];
	pthread_barrier_init(&start, NULL, RACERS);
	for (int i = 0; i < RACERS; i++) {
		r[i] = (struct racer){ .start = &start, .al = items[i] };
		ck_assert_int_eq(pthread_create(&threads[i], NULL, racer_main, &r[i]), 0);
	}
	for (int i = 0; i < RACERS; i++)
		pthread_join(threads[i], NULL);
	pthread_barrier_destroy(&start);

	int winners = 0, no_capacity = 0;
	for (int i = 0; i < RACERS; i++) {
		if (r[i].rc == 0) {
			winners++;
			for (int j = 0; j < i; j++)
				if (r[j].rc == 0)
					ck_assert_msg(strcmp(r[i].server.id, r[j].server.id) != 0, "%s won twice", r[i].server.id);
		} else {
			ck_assert_msg(r[i].rc == CC_ENOTFOUND, "racer %d: %s (want a clean no-capacity CC_ENOTFOUND)", i,
				      cc_errname(r[i].rc));
			no_capacity++;
		}
	}
	ck_assert_int_eq(winners, RACE_SERVERS);
	ck_assert_int_eq(no_capacity, RACERS - RACE_SERVERS);
	/* A loser that tries again once the winners committed finds no capacity either (not a busy server). */
	for (int i = 0; i < RACERS; i++) {
		if (r[i].rc == 0)
			continue;
		pthread_barrier_init(&start, NULL, 1);
		r[i].start = &start;
		racer_main(&r[i]);
		pthread_barrier_destroy(&start);
		ck_assert_msg(r[i].rc == CC_ENOTFOUND, "racer %d again: %s (want CC_ENOTFOUND)", i, cc_errname(r[i].rc));
	}
	/* Durable counts agree: three servers, three endpoints, the rest untouched. */
	ck_assert_int_eq(sql_ll("SELECT count(*) FROM game_servers WHERE state = 'ALLOCATED'", 0, NULL), RACE_SERVERS);
	ck_assert_int_eq(sql_ll("SELECT count(DISTINCT server_id) FROM allocations WHERE state = 'ALLOCATED'", 0, NULL),
			 RACE_SERVERS);
	ck_assert_int_eq(sql_ll("SELECT count(*) FROM allocations WHERE state = 'REQUESTED' AND server_id IS NULL "
				"AND revision = 1",
				0, NULL),
			 RACERS - RACE_SERVERS);
	ck_assert_int_eq(sql_ll("SELECT count(*) FROM outbox WHERE event = 'allocation.allocated'", 0, NULL), RACE_SERVERS);
}
END_TEST

/* ---- pool capacity, two processes ------------------------------------------------------------ */

START_TEST(test_pool_capacity_two_replicas)
{
	enum { MATCHES = 9, CAP = 2 };
	struct local_flags f[2];
	const char *argv[2][24];
	char m[MATCHES][CC_UUID_BUF];
	struct proc *p[2];
	for (int i = 0; i < 2; i++) {
		/* One replica claims one match at a time, the other batches (one transaction for several). */
		const char *workers[] = { "--workers=2", i == 0 ? "--batch=1" : "--batch=4", NULL };
		p[i] = spawn_allocator("cc-allocator", NULL,
				       concat(argv[i], 24, local_flags(&f[i], i, CAP, port_base() + 10 * i, true), workers));
	}
	WAIT_FOR(count_is("SELECT count(*) FROM game_servers WHERE state = 'IDLE'", 2 * CAP), 20000, "pool start");
	for (int i = 0; i < MATCHES; i++)
		create_match(m[i]);
	WAIT_FOR(count_is("SELECT count(*) FROM allocations WHERE state = 'PUBLISHED'", 2 * CAP), 30000,
		 "four publications");
	/* Every other match was told "no capacity" at least once and waits REQUESTED, with nothing written. */
	WAIT_FOR(count_is("SELECT count(*) FROM allocations WHERE state = 'REQUESTED' AND attempts >= 1 "
			  "AND server_id IS NULL AND next_attempt_at > created_at",
			  MATCHES - 2 * CAP),
		 30000, "the losers' backoff");
	ck_assert_int_eq(sql_ll("SELECT count(*) FROM allocations", 0, NULL), MATCHES);
	ck_assert_int_eq(sql_ll("SELECT count(DISTINCT server_id) FROM allocations WHERE state = 'PUBLISHED'", 0, NULL),
			 2 * CAP);
	ck_assert_int_eq(sql_ll("SELECT count(*) FROM game_servers WHERE state = 'ALLOCATED'", 0, NULL), 2 * CAP);
	ck_assert_int_eq(sql_ll("SELECT count(*) FROM rosters", 0, NULL), 2 * CAP);
	ck_assert_int_eq(sql_ll("SELECT count(*) FROM assignments", 0, NULL), 2 * CAP * 6);
	for (int i = 0; i < MATCHES; i++) {
		const char *pm[] = { m[i] };
		if (sql_ll("SELECT count(*) FROM allocations WHERE match_id = $1 AND state = 'PUBLISHED'", 1, pm)) {
			char server[CC_GAME_SERVER_ID_BUF];
			expect_published_once(m[i], server);
		}
	}
	/* Each replica allocated only its own servers, and the metrics say what the rows say. */
	double allocated = 0, published = 0, no_capacity = 0;
	for (int i = 0; i < 2; i++) {
		char sql[256];
		snprintf(sql, sizeof sql,
			 "SELECT count(*) FROM game_servers WHERE state = 'ALLOCATED' AND owner = 'test-%d'", i);
		ck_assert_int_eq(sql_ll(sql, 0, NULL), CAP);
		allocated += allocations_metric(p[i], "allocated");
		published += allocations_metric(p[i], "published");
		no_capacity += metric(p[i], "cosmic_clash_allocator_no_capacity_total", NULL);
	}
	ck_assert_msg(allocated == 2 * CAP, "allocations_total{result=allocated} = %g", allocated);
	ck_assert_msg(published == 2 * CAP, "allocations_total{result=published} = %g", published);
	long long attempts = sql_ll("SELECT sum(attempts) FROM allocations WHERE state = 'REQUESTED'", 0, NULL);
	ck_assert_msg(no_capacity >= (double)attempts && attempts >= MATCHES - 2 * CAP,
		      "no_capacity_total %g, attempts recorded %lld", no_capacity, attempts);
	for (int i = 0; i < 2; i++)
		stop_allocator(p[i]);
}
END_TEST

/* ---- crash at each step ------------------------------------------------------------------------ */

static void crash_and_recover(const char *step, const char *want_state)
{
	struct local_flags f;
	const char *argv[24];
	char m[CC_UUID_BUF], server[CC_GAME_SERVER_ID_BUF], in_file[CC_UUID_BUF], alloc_id[CC_UUID_BUF];
	const char *const *flags = concat(argv, 24, local_flags(&f, 0, 2, port_base(), true),
					  (const char *[]){ "--workers=1", NULL });
	struct proc *p = spawn_allocator("cc-testkit-allocator", step, flags);
	create_match(m);
	/* The hook SIGKILLs the process at the step. */
	int64_t end = cc_clock_ms() + 30000;
	while (alive(p)) {
		ck_assert_msg(cc_clock_ms() < end, "cc-testkit-allocator did not crash at '%s'; log tail:\n%s", step,
			      tail(p->log));
		pause_ms(WAIT_STEP_MS);
	}
	ck_assert_msg(WIFSIGNALED(p->status) && WTERMSIG(p->status) == SIGKILL,
		      "step %s: the allocator ended with status 0x%x, not SIGKILL; log tail:\n%s", step, p->status,
		      tail(p->log));
	const char *pm[] = { m };
	char state[32];
	sql_text("SELECT state FROM allocations WHERE match_id = $1", 1, pm, state, sizeof state);
	ck_assert_msg(strcmp(state, want_state) == 0, "after a crash at '%s' the allocation is '%s', want '%s'", step,
		      state, want_state);

	/* Restart (same instance, same state dir) without the hook: it resumes. */
	struct proc *q = spawn_allocator("cc-allocator", NULL, flags);
	char sql[256];
	snprintf(sql, sizeof sql, "SELECT count(*) FROM allocations WHERE match_id = '%s' AND state = 'PUBLISHED'", m);
	WAIT_FOR(count_is(sql, 1), 30000, "publication after the restart");
	expect_published_once(m, server);
	sql_text("SELECT id FROM allocations WHERE match_id = $1", 1, pm, alloc_id, sizeof alloc_id);
	WAIT_FOR((allocation_file(0, server, in_file), strcmp(in_file, alloc_id) == 0), 10000, "the allocation file");
	ck_assert_int_eq(sql_ll("SELECT count(*) FROM game_servers WHERE state = 'ALLOCATED'", 0, NULL), 1);
	ck_assert_int_eq(sql_ll("SELECT count(*) FROM rosters", 0, NULL), 1);
	stop_allocator(q);
}

START_TEST(test_crash_claimed)
{
	crash_and_recover("claimed", "REQUESTED");
}
END_TEST

START_TEST(test_crash_allocated)
{
	crash_and_recover("allocated", "ALLOCATED");
}
END_TEST

START_TEST(test_crash_delivered)
{
	crash_and_recover("delivered", "ALLOCATED");
}
END_TEST

START_TEST(test_crash_published)
{
	crash_and_recover("published", "PUBLISHED");
}
END_TEST

/* The production binary has no crash hook: no symbol, and the variable changes nothing. */
START_TEST(test_production_binary_has_no_hook)
{
	char bin[4096], cmd[4300];
	snprintf(cmd, sizeof cmd, "nm --defined-only '%s' | grep -q allocator_testkit_step",
		 cc_test_bin("cc-allocator", bin, sizeof bin));
	ck_assert_msg(system(cmd) != 0, "cc-allocator links allocator_testkit_step");
	snprintf(cmd, sizeof cmd, "nm '%s' | grep -qE ' [TW] allocator_testkit_step'",
		 cc_test_bin("cc-testkit-allocator", bin, sizeof bin));
	ck_assert_msg(system(cmd) == 0, "cc-testkit-allocator lacks allocator_testkit_step (is this check blind?)");

	struct local_flags f;
	const char *argv[24];
	char m[CC_UUID_BUF], server[CC_GAME_SERVER_ID_BUF];
	setenv("COSMIC_CLASH_TESTKIT_CRASH_AT", "claimed", 1);
	struct proc *p = spawn_allocator("cc-allocator", NULL, concat(argv, 24, local_flags(&f, 0, 1, port_base(), true), NULL));
	unsetenv("COSMIC_CLASH_TESTKIT_CRASH_AT");
	create_match(m);
	char sql[256];
	snprintf(sql, sizeof sql, "SELECT count(*) FROM allocations WHERE match_id = '%s' AND state = 'PUBLISHED'", m);
	WAIT_FOR(count_is(sql, 1), 30000, "publication by cc-allocator with the crash variable set");
	expect_published_once(m, server);
	stop_allocator(p);
}
END_TEST

/* ---- the pool's children ------------------------------------------------------------------------ */

/*
 * A child killed while idle is reaped (its server DEAD), restarted on its
 * port (IDLE again, a new pid) and counted; an allocation then still finds
 * the server. The restarted child is a live process of the allocator's.
 */
START_TEST(test_dead_child_is_restarted)
{
	struct local_flags f;
	const char *argv[24];
	char m[CC_UUID_BUF], server[CC_GAME_SERVER_ID_BUF];
	struct proc *p = spawn_allocator("cc-allocator", NULL, concat(argv, 24, local_flags(&f, 0, 1, port_base(), true), NULL));
	WAIT_FOR(count_is("SELECT count(*) FROM game_servers WHERE state = 'IDLE' AND pid IS NOT NULL", 1), 20000,
		 "pool start");
	long long pid = sql_ll("SELECT pid FROM game_servers", 0, NULL);
	long long revision = sql_ll("SELECT revision FROM game_servers", 0, NULL);
	ck_assert_int_gt(pid, 1);
	ck_assert_int_eq(kill((pid_t)pid, SIGKILL), 0);
	char sql[256];
	/* DEAD (revision + 1), then IDLE with the new child (revision + 2). */
	snprintf(sql, sizeof sql,
		 "SELECT count(*) FROM game_servers WHERE state = 'IDLE' AND pid IS NOT NULL AND pid <> %lld "
		 "AND revision >= %lld",
		 pid, revision + 2);
	WAIT_FOR(count_is(sql, 1), 20000, "the restarted child");
	long long new_pid = sql_ll("SELECT pid FROM game_servers", 0, NULL);
	ck_assert_msg(kill((pid_t)new_pid, 0) == 0, "the restarted child %lld is not running", new_pid);
	WAIT_FOR(metric(p, "cosmic_clash_allocator_local_child_exits_total", "state=\"idle\"") == 1, 10000,
		 "the exit counted");
	create_match(m);
	snprintf(sql, sizeof sql, "SELECT count(*) FROM allocations WHERE match_id = '%s' AND state = 'PUBLISHED'", m);
	WAIT_FOR(count_is(sql, 1), 30000, "publication on the restarted server");
	expect_published_once(m, server);
	stop_allocator(p);
}
END_TEST

/* ---- NOTIFY ------------------------------------------------------------------------------------ */

START_TEST(test_notify_wakes_the_allocator)
{
	struct local_flags f;
	const char *argv[24];
	char m[CC_UUID_BUF], server[CC_GAME_SERVER_ID_BUF];
	struct proc *p = spawn_allocator("cc-allocator", NULL,
					 concat(argv, 24, local_flags(&f, 0, 1, port_base(), true),
						(const char *[]){ "--poll-interval-ms=60000", NULL }));
	WAIT_FOR(count_is("SELECT count(*) FROM game_servers WHERE state = 'IDLE'", 1), 20000, "pool start");
	/* Every worker has made its first (empty) pass and now waits up to 60 s. */
	WAIT_FOR(metric(p, "cosmic_clash_allocator_passes_total", "result=\"idle\"") >= 2, 10000, "the first passes");
	int64_t t0 = cc_clock_ms();
	create_match(m);
	char sql[256];
	snprintf(sql, sizeof sql, "SELECT count(*) FROM allocations WHERE match_id = '%s' AND state = 'PUBLISHED'", m);
	WAIT_FOR(count_is(sql, 1), 5000, "publication woken by NOTIFY (the poll interval is 60 s)");
	fprintf(stderr, "notify: published %lld ms after the match was created\n", (long long)(cc_clock_ms() - t0));
	expect_published_once(m, server);
	stop_allocator(p);
}
END_TEST


/* ---- agones: the fake Kubernetes API ------------------------------------------------------------ */

static pid_t fake_pid;

/*
 * Starts argv (argv[0] looked up in PATH) with stdout on a pipe, killed
 * when this process dies; its first line must be "listening PORT". Sets
 * *pid_out; returns the port. what names it in failures.
 */
static int spawn_listener(const char *what, char *const argv[], pid_t *pid_out)
{
	int fds[2];
	ck_assert_int_eq(pipe(fds), 0);
	pid_t parent = getpid();
	pid_t pid = fork();
	ck_assert(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		dup2(fds[1], 1);
		close(fds[0]);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(fds[1]);
	*pid_out = pid;
	FILE *out = fdopen(fds[0], "r");
	char line[128] = "";
	ck_assert_msg(out && fgets(line, sizeof line, out), "%s printed nothing", what);
	fclose(out);
	int port = 0;
	ck_assert_msg(sscanf(line, "listening %d", &port) == 1 && port > 0, "%s said '%s'", what, line);
	return port;
}

/* Starts build/fakes/fake_k8s requiring token_file's bearer token; returns its port. */
static int spawn_fake_k8s(const char *token_file)
{
	char bin[4096], tok[1300], port0[] = "--port=0", cap[] = "--capacity=4";
	const char *top = getenv("CC_TOP");
	snprintf(bin, sizeof bin, "%s/build/fakes/fake_k8s", top && *top ? top : ".");
	snprintf(tok, sizeof tok, "--token-file=%s", token_file);
	char *const argv[] = { bin, port0, tok, cap, NULL };
	return spawn_listener("fake_k8s", argv, &fake_pid);
}

static void stop_fake_k8s(void)
{
	if (fake_pid > 0) {
		kill(fake_pid, SIGTERM);
		waitpid(fake_pid, NULL, 0);
		fake_pid = 0;
	}
}

/* GET path on the fake: the parsed JSON (caller frees). */
static cJSON *fake_get(int port, const char *path)
{
	struct cc_test_request req = { .path = path, .timeout_ms = 5000 };
	struct cc_test_reply reply;
	memset(&reply, 0, sizeof reply);
	ck_assert_int_eq(cc_test_fetch(port, &req, &reply), 0);
	ck_assert_int_eq(reply.status, 200);
	cJSON *root = cJSON_Parse(reply.body);
	cc_test_reply_release(&reply);
	ck_assert_ptr_nonnull(root);
	return root;
}

static void fake_script(int port, const char *json)
{
	const char *headers[] = { "Content-Type: application/json", NULL };
	struct cc_test_request req = { .method = "POST", .path = "/fake/script", .body = json, .body_len = strlen(json),
				       .headers = headers, .timeout_ms = 5000 };
	struct cc_test_reply reply;
	memset(&reply, 0, sizeof reply);
	ck_assert_int_eq(cc_test_fetch(port, &req, &reply), 0);
	ck_assert_int_eq(reply.status, 200);
	cc_test_reply_release(&reply);
}

/* The properties object of swagger definition name. */
static const cJSON *definition(const cJSON *swagger, const char *name)
{
	const cJSON *defs = cJSON_GetObjectItemCaseSensitive(swagger, "definitions");
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(defs, name);
	const cJSON *props = cJSON_GetObjectItemCaseSensitive(d, "properties");
	ck_assert_msg(cJSON_IsObject(props), "allocation.swagger.json has no definition %s", name);
	return props;
}

/* Fails naming the field when obj has a member that props (plus extra, may be NULL) does not define. */
static void only_defined(const cJSON *obj, const cJSON *props, const char *extra, const char *where)
{
	const cJSON *m;
	if (!obj || cJSON_IsNull(obj))
		return;
	ck_assert_msg(cJSON_IsObject(obj), "%s is not an object", where);
	cJSON_ArrayForEach(m, obj)
	ck_assert_msg(cJSON_GetObjectItemCaseSensitive(props, m->string) || (extra && strcmp(extra, m->string) == 0),
		      "%s.%s is not in allocation.swagger.json", where, m->string);
}

/* True when value is one of the enum of definition name, compared case-insensitively (the proto spells READY). */
static bool in_enum(const cJSON *swagger, const char *name, const char *value)
{
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(swagger, "definitions"), name), "enum");
	const cJSON *v;
	cJSON_ArrayForEach(v, e)
	if (cJSON_IsString(v) && strcasecmp(v->valuestring, value) == 0)
		return true;
	return false;
}

/* Loads the vendored swagger file; when ../shared/agones is present, it must be the same bytes. */
static cJSON *load_swagger(void)
{
	const char *top = getenv("CC_TOP");
	char path[4096], shared[4096];
	char *text = NULL, *other = NULL;
	size_t len = 0, olen = 0;
	struct cc_file_error fe;
	snprintf(path, sizeof path, "%s/tests/fakes/agones/allocation.swagger.json", top && *top ? top : ".");
	snprintf(shared, sizeof shared, "%s/../shared/agones/allocation.swagger.json", top && *top ? top : ".");
	ck_assert_msg(cc_file_read(path, 1 << 20, 0, &text, &len, &fe) == 0, "cannot read %s", path);
	if (cc_file_read(shared, 1 << 20, 0, &other, &olen, &fe) == 0) {
		ck_assert_msg(olen == len && memcmp(text, other, len) == 0, "%s differs from %s", path, shared);
		free(other);
	}
	cJSON *root = cJSON_Parse(text);
	free(text);
	ck_assert_ptr_nonnull(root);
	return root;
}

/* Every request the allocator sent and every answer the fake gave, against the published field names. */
static void check_against_swagger(const cJSON *log)
{
	cJSON *sw = load_swagger();
	const cJSON *resp_props = definition(sw, "allocationAllocationResponse");
	const cJSON *port_props = definition(sw, "AllocationResponseGameServerStatusPort");
	const cJSON *addr_props = definition(sw, "AllocationResponseGameServerStatusAddress");
	const cJSON *meta_props = definition(sw, "AllocationResponseGameServerMetadata");
	const cJSON *req_props = definition(sw, "allocationAllocationRequest");
	const cJSON *sel_props = definition(sw, "allocationGameServerSelector");
	const cJSON *patch_props = definition(sw, "allocationMetaPatch");
	const cJSON *a, *r, *x;
	int checked = 0;
	cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(log, "answers"))
	{
		int status = cJSON_GetObjectItemCaseSensitive(a, "status")->valueint;
		const cJSON *body = cJSON_GetObjectItemCaseSensitive(a, "body");
		if (status == 429) {
			/* The allocator's own error (../shared/agones/README.md). */
			cJSON_ArrayForEach(x, body)
			ck_assert_msg(strcmp(x->string, "code") == 0 || strcmp(x->string, "message") == 0,
				      "429 body field %s", x->string);
			continue;
		}
		if (status != 201)
			continue;
		const cJSON *st = cJSON_GetObjectItemCaseSensitive(body, "status");
		only_defined(st, resp_props, "state", "status");
		const cJSON *state = cJSON_GetObjectItemCaseSensitive(st, "state");
		ck_assert_msg(cJSON_IsString(state) && (strcmp(state->valuestring, "Allocated") == 0 ||
							strcmp(state->valuestring, "UnAllocated") == 0 ||
							strcmp(state->valuestring, "Contention") == 0),
			      "status.state");
		cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(st, "ports"))
		only_defined(x, port_props, NULL, "status.ports[]");
		cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(st, "addresses"))
		only_defined(x, addr_props, NULL, "status.addresses[]");
		only_defined(cJSON_GetObjectItemCaseSensitive(st, "metadata"), meta_props, NULL, "status.metadata");
		checked++;
	}
	cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(log, "requests"))
	{
		const cJSON *spec_ = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r, "body"), "spec");
		cJSON_ArrayForEach(x, spec_)
		{
			/* spec.selectors is the Kubernetes name of the service's gameServerSelectors. */
			const char *name = strcmp(x->string, "selectors") == 0 ? "gameServerSelectors" : x->string;
			ck_assert_msg(cJSON_GetObjectItemCaseSensitive(req_props, name), "spec.%s is not in the swagger file",
				      x->string);
		}
		cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(spec_, "selectors"))
		{
			only_defined(x, sel_props, NULL, "spec.selectors[]");
			const cJSON *gs = cJSON_GetObjectItemCaseSensitive(x, "gameServerState");
			ck_assert_msg(!gs || in_enum(sw, "GameServerSelectorGameServerState", gs->valuestring),
				      "gameServerState %s", gs ? gs->valuestring : "");
		}
		only_defined(cJSON_GetObjectItemCaseSensitive(spec_, "metadata"), patch_props, NULL, "spec.metadata");
		checked++;
	}
	ck_assert_int_gt(checked, 8);
	cJSON_Delete(sw);
}

static const char *annotation(const cJSON *body, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(body, "spec"), "metadata"),
			"annotations"),
		name);
	return cJSON_IsString(v) ? v->valuestring : "(absent)";
}

static const char *label_of(const cJSON *selector, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(selector, "matchLabels"), name);
	return cJSON_IsString(v) ? v->valuestring : "(absent)";
}

/*
 * One match through every outcome the fake has, in order: UnAllocated and
 * 429 (no capacity, attempts counted), Contention and 409 (retry soon), 500
 * and a slow answer past --k8s-timeout-ms (retry), 403 (rejected), then
 * Allocated. The slow answer allocated gs-1 after the allocator gave up;
 * the next request's first selector (this allocation's label, state
 * Allocated) finds it again, so one GameServer serves the match.
 */
START_TEST(test_agones_outcomes)
{
	char token_file[1200], url[128], tok_flag[1300], m[CC_UUID_BUF], server[CC_GAME_SERVER_ID_BUF];
	snprintf(token_file, sizeof token_file, "%s/sa-token", dir);
	write_file(token_file, "sa-token-for-tests\n");
	int port = spawn_fake_k8s(token_file);
	fake_script(port, "{\"outcomes\":[\"unallocated\",\"429\",\"contention\",\"409\",\"500\",\"slow:2500\",\"403\"]}");
	snprintf(url, sizeof url, "--k8s-url=http://127.0.0.1:%d/", port);
	snprintf(tok_flag, sizeof tok_flag, "--k8s-token-file=%s", token_file);
	const char *flags[] = { "--provider=agones", url, tok_flag, "--k8s-ca-file=", "--k8s-namespace=games",
				"--k8s-timeout-ms=1000", "--claim-lease-ms=3000", "--workers=1", NULL };
	struct proc *p = spawn_allocator("cc-allocator", NULL, flags);
	create_match(m);
	char sql[256];
	snprintf(sql, sizeof sql, "SELECT count(*) FROM allocations WHERE match_id = '%s' AND state = 'PUBLISHED'", m);
	WAIT_FOR(count_is(sql, 1), 40000, "publication through the fake Agones");
	expect_published_once(m, server);
	ck_assert_str_eq(server, "gs-1");
	const char *pm[] = { m };
	char endpoint[256];
	sql_text("SELECT address || ':' || port || ' ' || node_name || ' ' || attempts || ' ' || provider "
		 "FROM allocations WHERE match_id = $1",
		 1, pm, endpoint, sizeof endpoint);
	ck_assert_str_eq(endpoint, "10.0.0.2:7001 node-1 3 agones");
	ck_assert_int_eq(sql_ll("SELECT count(*) FROM game_servers WHERE provider = 'agones' AND state = 'ALLOCATED' "
				"AND id = 'gs-1' AND address = '10.0.0.2' AND port = 7001",
				0, NULL),
			 1);
	/* Each outcome was counted as what it is. */
	ck_assert_msg(allocations_metric(p, "no_capacity") == 2, "no_capacity %g", allocations_metric(p, "no_capacity"));
	ck_assert_msg(allocations_metric(p, "contention") == 2, "contention %g", allocations_metric(p, "contention"));
	ck_assert_msg(allocations_metric(p, "retry") == 2, "retry %g", allocations_metric(p, "retry"));
	ck_assert_msg(allocations_metric(p, "rejected") == 1, "rejected %g", allocations_metric(p, "rejected"));
	ck_assert_msg(allocations_metric(p, "allocated") == 1, "allocated %g", allocations_metric(p, "allocated"));
	ck_assert_msg(metric(p, "cosmic_clash_allocator_no_capacity_total", "provider=\"agones\"") == 2, "no_capacity_total");

	/* One GameServer in all: the slow answer's, found again. */
	cJSON *gss = fake_get(port, "/fake/gameservers");
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(gss, "gameservers")), 1);
	cJSON_Delete(gss);

	/* What the allocator sent, every time. */
	cJSON *log = fake_get(port, "/fake/log");
	const cJSON *reqs = cJSON_GetObjectItemCaseSensitive(log, "requests"), *r;
	ck_assert_int_eq(cJSON_GetArraySize(reqs), 8);
	char alloc_id[CC_UUID_BUF], arena[64];
	sql_text("SELECT id FROM allocations WHERE match_id = $1", 1, pm, alloc_id, sizeof alloc_id);
	sql_text("SELECT arena FROM matches WHERE id = $1", 1, pm, arena, sizeof arena);
	struct cc_keyset *wk = NULL;
	char err[256];
	ck_assert_int_eq(cc_keyset_load_file(workload_keys, &wk, err, sizeof err), 0);
	cJSON_ArrayForEach(r, reqs)
	{
		const cJSON *body = cJSON_GetObjectItemCaseSensitive(r, "body");
		ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(r, "namespace")->valuestring, "games");
		ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(r, "authorization")->valuestring, "Bearer sa-token-for-tests");
		const cJSON *sel = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(body, "spec"), "selectors");
		ck_assert_int_eq(cJSON_GetArraySize(sel), 2);
		const cJSON *mine = cJSON_GetArrayItem(sel, 0), *ready = cJSON_GetArrayItem(sel, 1);
		ck_assert_str_eq(label_of(mine, "cosmic-clash.io/allocation-id"), alloc_id);
		ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(mine, "gameServerState")->valuestring, "Allocated");
		ck_assert_str_eq(label_of(ready, "agones.dev/fleet"), "cosmic-clash");
		ck_assert_str_eq(label_of(ready, "cosmic-clash.io/region"), "eu");
		ck_assert_str_eq(label_of(ready, "cosmic-clash.io/build"), "race");
		ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(ready, "gameServerState")->valuestring, "Ready");
		ck_assert_str_eq(annotation(body, "cosmic-clash.io/match-id"), m);
		ck_assert_str_eq(annotation(body, "cosmic-clash.io/allocation-id"), alloc_id);
		ck_assert_str_eq(annotation(body, "cosmic-clash.io/playlist"), "casual");
		ck_assert_str_eq(annotation(body, "cosmic-clash.io/region"), "eu");
		ck_assert_str_eq(annotation(body, "cosmic-clash.io/build"), "race");
		ck_assert_str_eq(annotation(body, "cosmic-clash.io/protocol"), "1");
		ck_assert_str_eq(annotation(body, "cosmic-clash.io/arena"), arena);
		/* The workload token names this allocation and verifies with the control plane's secret. */
		struct cc_workload_claims wc;
		enum cc_token_refusal why = CC_TOKEN_OK;
		ck_assert_int_eq(cc_workload_token_verify(wk, annotation(body, "cosmic-clash.io/workload-token"), time(NULL),
							  &wc, &why),
				 0);
		ck_assert_str_eq(wc.allocation_id, alloc_id);
	}
	cc_keyset_free(wk);
	check_against_swagger(log);
	cJSON_Delete(log);
	stop_allocator(p);
	stop_fake_k8s();
}
END_TEST

/* ---- agones in-cluster: HTTPS with the service account's token and CA ------------------------------ */

static pid_t proxy_pids[2];

/* Runs a shell command in dir (openssl), failing with its output when it fails. */
static void run_in_dir(const char *cmd)
{
	char full[8192];
	snprintf(full, sizeof full, "cd '%s' && { %s ; } >cmd.out 2>&1 || { cat cmd.out >&2; exit 1; }", dir, cmd);
	ck_assert_msg(system(full) == 0, "failed: %s", cmd);
}

/* Starts tests/fakes/tls_proxy.py (slot 0 or 1) with dir/<name>.crt|key in front of target; returns its port. */
static int spawn_tls_proxy(int slot, const char *name, int target)
{
	char bin[4096], cert[1300], key[1300], tp[64], python[] = "python3";
	const char *top = getenv("CC_TOP");
	snprintf(bin, sizeof bin, "%s/tests/fakes/tls_proxy.py", top && *top ? top : ".");
	snprintf(cert, sizeof cert, "--cert=%s/%s.crt", dir, name);
	snprintf(key, sizeof key, "--key=%s/%s.key", dir, name);
	snprintf(tp, sizeof tp, "--target-port=%d", target);
	char *const argv[] = { python, bin, cert, key, tp, NULL };
	return spawn_listener("tls_proxy.py", argv, &proxy_pids[slot]);
}

static void stop_tls_proxies(void)
{
	for (int i = 0; i < 2; i++)
		if (proxy_pids[i] > 0) {
			kill(proxy_pids[i], SIGTERM);
			waitpid(proxy_pids[i], NULL, 0);
			proxy_pids[i] = 0;
		}
}

/*
 * The in-cluster defaults, end to end: no --k8s-url, --k8s-token-file or
 * --k8s-ca-file. The allocator finds the API at
 * https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT and the token,
 * CA and namespace in the service-account directory
 * (COSMIC_CLASH_K8S_SERVICEACCOUNT_DIR: /var/run is not ours to write).
 * fake_k8s sits behind a TLS-terminating proxy whose certificate a
 * throwaway CA signed. First an impostor (a certificate for the same
 * address from another CA) is refused with libcurl's certificate error: the
 * match stays ALLOCATING, its allocation REQUESTED with no endpoint, no
 * GameServer row, and the fake never saw a request. Then the real one: the
 * match is published through TLS, the fake saw the file's token, and no
 * log holds it.
 */
START_TEST(test_agones_in_cluster)
{
	char sa[1200], path[1300], token[96], m[CC_UUID_BUF], server[CC_GAME_SERVER_ID_BUF], sql[256];
	snprintf(token, sizeof token, "sa-token-CANARY-%d-%ld", (int)getpid(), (long)time(NULL));
	/* A CA, the API server's certificate for 127.0.0.1, and an impostor's from another CA. */
	run_in_dir("for c in ca rogue-ca; do openssl req -x509 -newkey rsa:2048 -nodes -keyout $c.key -out $c.crt "
		   "-days 1 -subj /CN=$c; done && "
		   "for s in server:ca impostor:rogue-ca; do n=${s%%:*}; ca=${s#*:}; "
		   "openssl req -newkey rsa:2048 -nodes -keyout $n.key -out $n.csr -subj /CN=kubernetes && "
		   "printf 'subjectAltName=IP:127.0.0.1\\n' >$n.ext && "
		   "openssl x509 -req -in $n.csr -CA $ca.crt -CAkey $ca.key -CAcreateserial -days 1 -extfile $n.ext "
		   "-out $n.crt; done");
	snprintf(sa, sizeof sa, "%s/serviceaccount", dir);
	ck_assert_int_eq(mkdir(sa, 0700), 0);
	snprintf(path, sizeof path, "%s/token", sa);
	char line[128];
	snprintf(line, sizeof line, "%s\n", token);
	write_file(path, line);
	snprintf(path, sizeof path, "%s/namespace", sa);
	write_file(path, "in-cluster-ns");
	run_in_dir("cp ca.crt serviceaccount/ca.crt");

	snprintf(path, sizeof path, "%s/token", sa);
	int fake = spawn_fake_k8s(path); /* it answers 401 without this file's token */
	int good = spawn_tls_proxy(0, "server", fake);
	int impostor = spawn_tls_proxy(1, "impostor", fake);
	char port_text[16];
	setenv("COSMIC_CLASH_K8S_SERVICEACCOUNT_DIR", sa, 1);
	setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1);
	const char *flags[] = { "--provider=agones", "--k8s-timeout-ms=1000", "--claim-lease-ms=3000", "--workers=1",
				NULL };

	/* The impostor: refused at the handshake, retried, nothing written. */
	snprintf(port_text, sizeof port_text, "%d", impostor);
	setenv("KUBERNETES_SERVICE_PORT", port_text, 1);
	struct proc *p = spawn_allocator("cc-allocator", NULL, flags);
	create_match(m);
	WAIT_FOR(allocations_metric(p, "retry") >= 2 || allocations_metric(p, "allocated") > 0, 30000,
		 "two refused attempts against the impostor");
	ck_assert_msg(allocations_metric(p, "allocated") == 0, "the impostor's certificate was accepted: %s", tail(p->log));
	ck_assert_msg(log_has(p->log, "SSL certificate problem"), "no certificate error in the log: %s", tail(p->log));
	ck_assert_msg(log_has(p->log, "\"event\":\"allocate_retry\""), "no allocate_retry: %s", tail(p->log));
	const char *pm[] = { m };
	char state[128];
	sql_text("SELECT m.state || ' ' || a.state || ' ' || (a.server_id IS NULL AND a.address IS NULL AND a.port IS NULL) "
		 "FROM matches m JOIN allocations a ON a.match_id = m.id WHERE m.id = $1",
		 1, pm, state, sizeof state);
	ck_assert_str_eq(state, "ALLOCATING REQUESTED true");
	ck_assert_int_eq(sql_ll("SELECT count(*) FROM game_servers", 0, NULL), 0);
	cJSON *log = fake_get(fake, "/fake/log");
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(log, "requests")), 0);
	cJSON_Delete(log);
	stop_allocator(p);
	p->expect_exit = true; /* stopped on purpose: all_alive must not count it */

	/* The real API server: published through TLS with the file's token. */
	snprintf(port_text, sizeof port_text, "%d", good);
	setenv("KUBERNETES_SERVICE_PORT", port_text, 1);
	struct proc *q = spawn_allocator("cc-allocator", NULL, flags);
	snprintf(sql, sizeof sql, "SELECT count(*) FROM allocations WHERE match_id = '%s' AND state = 'PUBLISHED'", m);
	WAIT_FOR(count_is(sql, 1), 30000, "publication through TLS");
	expect_published_once(m, server);
	ck_assert_str_eq(server, "gs-1");
	log = fake_get(fake, "/fake/log");
	const cJSON *reqs = cJSON_GetObjectItemCaseSensitive(log, "requests");
	ck_assert_int_eq(cJSON_GetArraySize(reqs), 1);
	const cJSON *r0 = cJSON_GetArrayItem(reqs, 0);
	char bearer[128];
	snprintf(bearer, sizeof bearer, "Bearer %s", token);
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(r0, "authorization")->valuestring, bearer);
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(r0, "namespace")->valuestring, "in-cluster-ns");
	cJSON_Delete(log);
	char where[128];
	snprintf(where, sizeof where, "\"url\":\"https://127.0.0.1:%d/apis/", good);
	ck_assert_msg(log_has(q->log, where), "the agones_provider line lacks %s: %s", where, tail(q->log));
	stop_allocator(q);
	/* The canary: the token the fake received is in neither allocator's log. */
	ck_assert_msg(!log_has(p->log, token) && !log_has(q->log, token), "the service-account token reached a log");
	stop_tls_proxies();
	unsetenv("COSMIC_CLASH_K8S_SERVICEACCOUNT_DIR");
	unsetenv("KUBERNETES_SERVICE_HOST");
	unsetenv("KUBERNETES_SERVICE_PORT");
}
END_TEST

/* ---- with cc-api: the match moves on ------------------------------------------------------------- */

static int api_port;

/* The "port" field of the "started" line of log (0 while absent). */
static int log_port(const char *log, const char *field)
{
	static char text[512 * 1024];
	char key[64];
	FILE *f = fopen(log, "rb");
	if (!f)
		return 0;
	size_t n = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	text[n] = '\0';
	const char *line = strstr(text, "\"event\":\"started\"");
	snprintf(key, sizeof key, "\"%s\":", field);
	const char *v = line ? strstr(line, key) : NULL;
	return v ? (int)strtol(v + strlen(key), NULL, 10) : 0;
}

/* Starts cc-testkit-api with the workload secret the allocator signs with; sets api_port. */
static void spawn_api(void)
{
	char bin[4096], wl_flag[1200];
	ck_assert_int_lt(n_procs, MAX_PROCS);
	struct proc *p = &procs[n_procs];
	memset(p, 0, sizeof *p);
	snprintf(p->log, sizeof p->log, "%s/api-%d.log", dir, n_procs);
	snprintf(wl_flag, sizeof wl_flag, "--workload-secret-file=%s", workload_keys);
	cc_test_bin("cc-testkit-api", bin, sizeof bin);
	pid_t parent = getpid();
	pid_t pid = fork();
	ck_assert(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		FILE *log = freopen(p->log, "a", stdout);
		if (!log || dup2(fileno(stdout), 2) < 0)
			_exit(127);
		setenv("COSMIC_CLASH_DATABASE_URL", db_dsn, 1);
		execl(bin, bin, "--port=0", "--admin-port=0", "--regions=eu", wl_flag, (char *)NULL);
		_exit(127);
	}
	p->pid = pid;
	n_procs++;
	WAIT_FOR((api_port = log_port(p->log, "port")) > 0, 20000, "cc-testkit-api start-up");
}

/* Local flags plus the serving stand-in and --api-url (stand-ins shut down after hold_ms when >= 0). */
static const char *const *serving_flags(struct local_flags *f, const char **argv, size_t cap, int capacity, int hold_ms,
					const char *extra)
{
	static char cmd[4300], url[128];
	char standin[4096];
	const char *top = getenv("CC_TOP");
	local_flags(f, 0, capacity, port_base(), false);
	snprintf(standin, sizeof standin, "%s/build/fakes/standin_server", top && *top ? top : ".");
	if (hold_ms >= 0)
		snprintf(cmd, sizeof cmd, "--local-server-command=%s --shutdown-after-ms=%d", standin, hold_ms);
	else
		snprintf(cmd, sizeof cmd, "--local-server-command=%s", standin);
	snprintf(url, sizeof url, "--api-url=http://127.0.0.1:%d", api_port);
	f->argv[3] = cmd;
	return concat(argv, cap, f->argv, (const char *[]){ url, extra, NULL });
}

static void expect_match_state(const char *m, const char *want, int timeout_ms)
{
	char sql[256];
	snprintf(sql, sizeof sql, "SELECT count(*) FROM matches WHERE id = '%s' AND state = '%s'", m, want);
	WAIT_FOR(count_is(sql, 1), timeout_ms, want);
}

/*
 * The whole chain on one warm server: match A is allocated, published, its
 * server registers process_ready and assignment_ready (the match reaches
 * ASSIGNMENT_READY, the tickets ASSIGNED), plays its "match" and shuts
 * down; the sweep gives the server back, and match B gets the same server.
 */
START_TEST(test_match_moves_on_and_the_server_is_reused)
{
	struct local_flags f;
	const char *argv[24];
	char a[CC_UUID_BUF], b[CC_UUID_BUF], server_a[CC_GAME_SERVER_ID_BUF], server_b[CC_GAME_SERVER_ID_BUF];
	spawn_api();
	struct proc *p = spawn_allocator("cc-allocator", NULL, serving_flags(&f, argv, 24, 1, 500, "--workers=1"));
	create_match(a);
	expect_match_state(a, "ASSIGNMENT_READY", 30000);
	const char *pa[] = { a };
	ck_assert_int_eq(sql_ll("SELECT count(*) FROM tickets t JOIN match_players mp ON mp.ticket_id = t.id "
				"WHERE mp.match_id = $1 AND t.state = 'ASSIGNED'",
				1, pa),
			 6);
	expect_published_once(a, server_a);
	create_match(b);
	/* A's server shuts down after 500 ms; only then can B have it (capacity 1). */
	expect_match_state(b, "ASSIGNMENT_READY", 30000);
	expect_published_once(b, server_b);
	ck_assert_str_eq(server_a, server_b);
	char state[32];
	sql_text("SELECT state FROM allocations WHERE match_id = $1", 1, pa, state, sizeof state);
	ck_assert_str_eq(state, "RELEASED");
	stop_allocator(p);
}
END_TEST

/* A SIGKILL at each step, a restart, and the match still reaches ASSIGNMENT_READY. */
static void crash_then_assignment_ready(const char *step)
{
	struct local_flags f;
	const char *argv[24];
	char m[CC_UUID_BUF], server[CC_GAME_SERVER_ID_BUF];
	spawn_api();
	const char *const *flags = serving_flags(&f, argv, 24, 2, -1, "--workers=1");
	struct proc *p = spawn_allocator("cc-testkit-allocator", step, flags);
	create_match(m);
	int64_t end = cc_clock_ms() + 30000;
	while (alive(p)) {
		ck_assert_msg(cc_clock_ms() < end, "cc-testkit-allocator did not crash at '%s'; log tail:\n%s", step,
			      tail(p->log));
		pause_ms(WAIT_STEP_MS);
	}
	struct proc *q = spawn_allocator("cc-allocator", NULL, flags);
	expect_match_state(m, "ASSIGNMENT_READY", 30000);
	expect_published_once(m, server);
	ck_assert_int_eq(sql_ll("SELECT count(*) FROM game_servers WHERE state = 'ALLOCATED'", 0, NULL), 1);
	stop_allocator(q);
}

START_TEST(test_crash_claimed_match_moves_on)
{
	crash_then_assignment_ready("claimed");
}
END_TEST

START_TEST(test_crash_allocated_match_moves_on)
{
	crash_then_assignment_ready("allocated");
}
END_TEST

START_TEST(test_crash_delivered_match_moves_on)
{
	crash_then_assignment_ready("delivered");
}
END_TEST

START_TEST(test_crash_published_match_moves_on)
{
	crash_then_assignment_ready("published");
}
END_TEST

/* Whether the log at path contains needle. */
static bool log_has(const char *path, const char *needle)
{
	static char text[1024 * 1024];
	FILE *f = fopen(path, "rb");
	if (!f)
		return false;
	size_t n = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	text[n] = '\0';
	return strstr(text, needle) != NULL;
}

/*
 * A worker stalled past its claim lease must not write its allocation file
 * over a newer allocation of the same server. One server, two workers: the
 * first worker to allocate match A stalls right after persisting the
 * endpoint (before delivering); the other takes A over when the lease
 * lapses, delivers and publishes it; A's server plays, shuts down and is
 * swept back; match B gets the same server and its file. Only then does the
 * stalled worker go on: the file must still be B's.
 */
START_TEST(test_stalled_worker_cannot_overwrite_a_reused_server)
{
	struct local_flags f;
	const char *argv[24], *more[24];
	char a[CC_UUID_BUF], b[CC_UUID_BUF], server_a[CC_GAME_SERVER_ID_BUF], server_b[CC_GAME_SERVER_ID_BUF];
	char go[1200], b_id[CC_UUID_BUF], in_file[CC_UUID_BUF];
	snprintf(go, sizeof go, "%s/stalled-worker-go", dir);
	spawn_api();
	const char *const *flags = concat(more, 24, serving_flags(&f, argv, 24, 1, 3000, "--workers=2"),
					  (const char *[]){ "--claim-lease-ms=300", "--poll-interval-ms=50", NULL });
	setenv("COSMIC_CLASH_TESTKIT_STALL_AT", "allocated", 1);
	setenv("COSMIC_CLASH_TESTKIT_STALL_UNTIL", go, 1);
	struct proc *p = spawn_allocator("cc-testkit-allocator", NULL, flags);
	unsetenv("COSMIC_CLASH_TESTKIT_STALL_AT");
	unsetenv("COSMIC_CLASH_TESTKIT_STALL_UNTIL");
	create_match(a);
	WAIT_FOR(log_has(p->log, "\"testkit_stalled\""), 20000, "a worker stalled after allocating A");
	/* The other worker takes A over, publishes it; A's server plays, shuts down, is swept back. */
	char sql[256];
	snprintf(sql, sizeof sql, "SELECT count(*) FROM allocations WHERE match_id = '%s' AND state = 'PUBLISHED'", a);
	WAIT_FOR(count_is(sql, 1), 30000, "A taken over and published");
	expect_published_once(a, server_a);
	const char *pa[] = { a };
	snprintf(sql, sizeof sql, "SELECT count(*) FROM allocations WHERE match_id = '%s' AND state = 'RELEASED'", a);
	WAIT_FOR(count_is(sql, 1), 30000, "A released");
	create_match(b);
	snprintf(sql, sizeof sql, "SELECT count(*) FROM allocations WHERE match_id = '%s' AND state = 'PUBLISHED'", b);
	WAIT_FOR(count_is(sql, 1), 30000, "B published");
	expect_published_once(b, server_b);
	ck_assert_str_eq(server_a, server_b);
	const char *pb[] = { b };
	sql_text("SELECT id FROM allocations WHERE match_id = $1", 1, pb, b_id, sizeof b_id);
	WAIT_FOR((allocation_file(0, server_b, in_file), strcmp(in_file, b_id) == 0), 10000, "B's allocation file");
	/* Now the stalled worker goes on, and finishes its pass. */
	write_file(go, "go\n");
	WAIT_FOR(log_has(p->log, "\"testkit_pass_done\""), 20000, "the stalled worker's pass to end");
	allocation_file(0, server_b, in_file);
	ck_assert_msg(strcmp(in_file, b_id) == 0,
		      "the stalled worker overwrote B's allocation file on %s: it names '%s', B is %s (A was %s)", server_b,
		      in_file, b_id, a);
	char state[32];
	sql_text("SELECT state FROM allocations WHERE match_id = $1", 1, pa, state, sizeof state);
	ck_assert_str_eq(state, "RELEASED");
	stop_allocator(p);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("allocator");
	TCase *tc = tcase_create("local");
	tcase_add_checked_fixture(tc, scratch_setup, scratch_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_store_race_for_capacity);
	tcase_add_test(tc, test_pool_capacity_two_replicas);
	tcase_add_test(tc, test_crash_claimed);
	tcase_add_test(tc, test_crash_allocated);
	tcase_add_test(tc, test_crash_delivered);
	tcase_add_test(tc, test_crash_published);
	tcase_add_test(tc, test_production_binary_has_no_hook);
	tcase_add_test(tc, test_notify_wakes_the_allocator);
	tcase_add_test(tc, test_dead_child_is_restarted);
	suite_add_tcase(s, tc);
	TCase *ta = tcase_create("agones");
	tcase_add_checked_fixture(ta, scratch_setup, scratch_teardown);
	tcase_set_timeout(ta, 120);
	tcase_add_test(ta, test_agones_outcomes);
	tcase_add_test(ta, test_agones_in_cluster);
	suite_add_tcase(s, ta);
	TCase *tp = tcase_create("api");
	tcase_add_checked_fixture(tp, scratch_setup, scratch_teardown);
	tcase_set_timeout(tp, 120);
	tcase_add_test(tp, test_match_moves_on_and_the_server_is_reused);
	tcase_add_test(tp, test_stalled_worker_cannot_overwrite_a_reused_server);
	tcase_add_test(tp, test_crash_claimed_match_moves_on);
	tcase_add_test(tp, test_crash_allocated_match_moves_on);
	tcase_add_test(tp, test_crash_delivered_match_moves_on);
	tcase_add_test(tp, test_crash_published_match_moves_on);
	suite_add_tcase(s, tp);
	return cc_test_run_suite(s);
}
