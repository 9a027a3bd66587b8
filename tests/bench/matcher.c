/*
 * bench/matcher: what one matcher pass costs at queue depth, and how many
 * proposals several matchers commit per second (issue 4, SPEC 6). It runs
 * against the harness PostgreSQL and Redis (scripts/bench-matcher.sh runs
 * it inside tests/harness/with-services.sh after loading
 * tests/bench/matcher_seed.sql) and drives the same libcommon calls as
 * services/matcher/pass.c: the expiry hook, the candidate read (Redis
 * index or PostgreSQL), cc_formation_prepare/pass and cc_formation_claim.
 *
 *   matcher depth [DEPTH...]      (default 1000 10000 100000)
 *     Seeds DEPTH QUEUED casual and DEPTH ranked tickets (a realistic mix,
 *     see the seed file), fills the Redis index with all of them, then
 *     times one pass per playlist, median of REPS: each phase's wall time
 *     and its CPU time in this process, in the PostgreSQL backend and in
 *     Redis (from /proc/<pid>/schedstat, nanoseconds). The tickets a pass
 *     claims are put back afterwards, so every repetition sees the same
 *     queue. It also prints the plan PostgreSQL used for the candidate
 *     read (auto_explain of the very statement cc_candidates_load runs,
 *     taken from the server log), which must be an index scan on
 *     tickets_queued_by_age for the pass not to grow with depth (exit
 *     status 3 when a read's plan does not use it).
 *
 *   matcher throughput THREADS SECONDS
 *     THREADS matcher loops (threads, one connection each) over the casual
 *     queue seeded by the caller, until it is drained or SECONDS pass.
 *     Prints one line of key=value: proposals_per_s, committed, seconds,
 *     claims, lost (claim conflicts), retry_exhausted, conflict_rate,
 *     passes, failed_passes (a pass that hit a serialization failure ends,
 *     as in pass.c, and the loop carries on).
 *
 * Environment: CC_TEST_PG_DSN, CC_TEST_PG_LOG, CC_TEST_REDIS_HOST,
 * CC_TEST_REDIS_PORT, CC_TEST_REDIS_PIDFILE (tests/harness/with-services.sh).
 * Any unexpected database error is fatal: a benchmark that hides one is
 * measuring something else.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store/candidate_index.h"
#include "store/candidates.h"
#include "sys/crypto.h"
#include "game/formation.h"
#include "game/queue_pass.h"
#include "store/formation_claim.h"
#include "sys/log.h"
#include "sys/pg.h"
#include "store/proposals.h"
#include "sys/banned.h"

#define REPS 9                 /* passes per (depth, playlist); the median is printed */
#define READ_FACTOR 10         /* SPEC 6: a pass reads 10x the match size ... */
#define READ_CAP 200           /* ... at most 200 (as services/matcher/matcher.h) */
#define EXPIRE_BATCH 64        /* as services/matcher/pass.c */
#define WINDOW_S 10
#define THROUGHPUT_WINDOW_S 600 /* no proposal expires (and requeues) while throughput runs */
#define MAX_DEPTHS 8
#define MAX_THREADS 16
#define PLAN_LINES 40          /* plan lines printed at most */

static const char sql_seed[] = "SELECT cc_bench_seed($1, $2, $3::bigint, $4::bigint, false, to_timestamp($5::float8))";
static const char sql_t0[] = "SELECT extract(epoch FROM now()) - 300";
static const char sql_now[] = "SELECT (extract(epoch FROM now()) * 1000)::bigint";

/* Puts a pass's claimed tickets back (PROPOSED -> QUEUED is a legal move) and forgets its proposals. */
static const char sql_unclaim_participants[] = "DELETE FROM proposal_participants WHERE proposal_id = ANY($1::uuid[])";
static const char sql_unclaim_tickets[] =
	"UPDATE tickets SET state = 'QUEUED', proposal_id = NULL, revision = revision + 1 "
	"WHERE proposal_id = ANY($1::uuid[])";
static const char sql_unclaim_proposals[] = "DELETE FROM proposals WHERE id = ANY($1::uuid[])";

static const char *env(const char *name)
{
	const char *v = getenv(name);
	if (!v || !*v) {
		fprintf(stderr, "bench/matcher: %s is not set (run inside tests/harness/with-services.sh)\n", name);
		exit(2);
	}
	return v;
}

static void die_db(struct cc_pg *pg, const char *what, int rc)
{
	fprintf(stderr, "bench/matcher: %s: %s (sqlstate %s: %s)\n", what, cc_errname(rc), cc_pg_sqlstate(pg),
		cc_pg_error_message(pg));
	exit(1);
}

/* Runs one statement; any error is fatal. Returns the result (caller PQclears) when out is wanted. */
static PGresult *sql(struct cc_pg *pg, const char *text, int n, const char *const *params)
{
	PGresult *res = NULL;
	int rc = cc_pg_exec(pg, text, n, params, &res);
	if (rc != 0)
		die_db(pg, text, rc);
	return res;
}

/* A whole decimal number in [lo, hi], or -1. */
static long number(const char *text, long lo, long hi)
{
	char *end;
	errno = 0;
	long v = strtol(text, &end, 10);
	return errno || end == text || *end || v < lo || v > hi ? -1 : v;
}

static struct cc_pg *connect_db(const char *app)
{
	struct cc_pg *pg = NULL;
	char err[256];
	struct cc_pg_options opt = { .query_timeout_ms = 120000, .application_name = app, .prepare_statements = true };
	int rc = cc_pg_connect(env("CC_TEST_PG_DSN"), &opt, &pg, err, sizeof err);
	if (rc != 0) {
		fprintf(stderr, "bench/matcher: connect: %s\n", err);
		exit(1);
	}
	return pg;
}

/* ---- cost accounting ------------------------------------------------------ */

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Nanoseconds pid has run on a CPU (first field of /proc/<pid>/schedstat), 0 if unknown. */
static int64_t schedstat_ns(int pid)
{
	char path[64];
	long long ns = 0;
	if (pid <= 0)
		return 0;
	snprintf(path, sizeof path, "/proc/%d/schedstat", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%lld", &ns) != 1)
		ns = 0;
	fclose(f);
	return ns;
}

/* Where CPU goes during a phase: this process, its PostgreSQL backend, Redis. */
struct cost {
	double wall_ms, self_ms, pg_ms, redis_ms;
};

struct snapshot {
	int64_t wall, self, pg, redis;
};

static int redis_pid;

static void snap(struct snapshot *s, const struct cc_pg *pg)
{
	s->pg = schedstat_ns(cc_pg_backend_pid(pg));
	s->redis = schedstat_ns(redis_pid);
	s->self = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	s->wall = clock_ns(CLOCK_MONOTONIC);
}

/* Adds the cost since *s to *c. */
static void charge(struct cost *c, const struct snapshot *s, const struct cc_pg *pg)
{
	struct snapshot e;
	e.wall = clock_ns(CLOCK_MONOTONIC);
	e.self = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	e.pg = schedstat_ns(cc_pg_backend_pid(pg));
	e.redis = schedstat_ns(redis_pid);
	c->wall_ms += (double)(e.wall - s->wall) / 1e6;
	c->self_ms += (double)(e.self - s->self) / 1e6;
	c->pg_ms += (double)(e.pg - s->pg) / 1e6;
	c->redis_ms += (double)(e.redis - s->redis) / 1e6;
}

static double cpu(const struct cost *c)
{
	return c->self_ms + c->pg_ms + c->redis_ms;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- the pass, phase by phase ------------------------------------------------ */

struct expire_ctx {
	int n;
};

static int expire_run(struct cc_pg *pg, void *arg)
{
	struct expire_ctx *ex = arg;
	ex->n = 0;
	return cc_proposals_expire_overdue(pg, 0, EXPIRE_BATCH, &ex->n, NULL);
}

/* The phases of a pass, in pass.c's order; a pass takes one of the two reads. */
enum phase { EXPIRE, READ_PG, READ_REDIS, FORM, CLAIM, FORGET, N_PHASES };

/* Which phases make up the pass on each read path (FORGET: index removes after claims). */
static const bool pg_path[N_PHASES] = { [EXPIRE] = true, [READ_PG] = true, [FORM] = true, [CLAIM] = true };
static const bool redis_path[N_PHASES] = { [EXPIRE] = true, [READ_REDIS] = true, [FORM] = true, [CLAIM] = true,
					   [FORGET] = true };

/* What one measured pass found and cost. */
struct pass_cost {
	struct cost phase[N_PHASES];
	size_t candidates;
	unsigned formed;
	unsigned pages;         /* reads the pass made (1: the head page formed) */
};

/*
 * The formations of a pass, recorded by the pure pass (game/queue_pass.h,
 * cc-matcher's own) and claimed afterwards: each with a copy of its
 * players, as the working set is compacted between rounds.
 */
struct recorded {
	size_t n;
	struct cc_formation f[256];
	struct cc_candidate players[256][CC_FORMATION_MAX_PLAYERS];
};

static struct cc_queue_pass bench_qp;

static int record(void *ctx, const struct cc_formation *f, bool lost[CC_FORMATION_MAX_PLAYERS])
{
	struct recorded *r = *(struct recorded **)ctx;
	(void)lost;
	if (r->n == CC_ARRAY_LEN(r->f))
		return CC_ETOOBIG;
	r->f[r->n] = *f;
	for (size_t k = 0; k < f->n_players; k++) {
		r->players[r->n][k] = bench_qp.cands[f->index[k]];
		r->f[r->n].index[k] = (uint16_t)k;
	}
	r->n++;
	return 0;
}

/* What the pass's reads come from: the head page already read from PostgreSQL, deeper pages read now. */
struct bench_reads {
	struct recorded *rec; /* first: record() takes it from here */
	struct cc_pg *pg;
	const char *playlist;
	const struct cc_candidate *head;
	size_t n_head;
	int64_t now_ms;
};

static int bench_read(void *ctx, const char *after, size_t limit, struct cc_candidate *out,
		      struct cc_queue_page *page)
{
	struct bench_reads *br = ctx;
	size_t n = 0;
	if (!after) {
		n = br->n_head < limit ? br->n_head : limit;
		memcpy(out, br->head, n * sizeof *out);
		page->now_ms = br->now_ms;
	} else {
		int rc = cc_candidates_load(br->pg, br->playlist, after, limit, out, &n, &page->now_ms);
		if (rc != 0)
			die_db(br->pg, "cc_candidates_load (a deeper page)", rc);
	}
	page->n = n;
	page->more = n == limit;
	snprintf(page->last, sizeof page->last, "%s", n ? out[n - 1].ticket_id : "");
	return 0;
}

struct playlist_bench {
	const char *name;                  /* the playlist read and claimed */
	const char *label;                 /* how the report names the row (the rule, beside greedy) */
	struct cc_formation_params params;
	size_t read_limit;
};

static struct cc_candidate pg_cands[READ_CAP], redis_cands[READ_CAP];
static struct recorded rec;

/*
 * One pass over pl, phase by phase (the order of services/matcher/pass.c),
 * then puts the claimed tickets back into the queue and the index.
 */
static void measure_pass(struct cc_pg *pg, struct cc_candidate_index *idx, const struct playlist_bench *pl,
			 struct pass_cost *pc)
{
	struct snapshot s;
	size_t n_pg = 0, n_redis = 0;
	int64_t now_ms = 0, now2 = 0;
	int rc;

	memset(pc, 0, sizeof *pc);
	snap(&s, pg);
	struct expire_ctx ex;
	if ((rc = cc_pg_run_serializable(pg, expire_run, &ex)) != 0)
		die_db(pg, "expire overdue proposals", rc);
	charge(&pc->phase[EXPIRE], &s, pg);

	/* Redis path: the index read plus PostgreSQL's now(), then drop the expired. */
	snap(&s, pg);
	if ((rc = cc_candidate_index_read(idx, pl->name, pl->read_limit, redis_cands, &n_redis)) != 0) {
		fprintf(stderr, "bench/matcher: candidate index read: %s\n", cc_errname(rc));
		exit(1);
	}
	PGresult *res = sql(pg, sql_now, 0, NULL);
	now2 = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	size_t kept = 0;
	for (size_t i = 0; i < n_redis; i++)
		if (redis_cands[i].expires_at_ms > now2)
			redis_cands[kept++] = redis_cands[i];
	n_redis = kept;
	charge(&pc->phase[READ_REDIS], &s, pg);

	/* PostgreSQL path: the source of truth (the pass uses these). */
	snap(&s, pg);
	if ((rc = cc_candidates_load(pg, pl->name, NULL, pl->read_limit, pg_cands, &n_pg, &now_ms)) != 0)
		die_db(pg, "cc_candidates_load", rc);
	charge(&pc->phase[READ_PG], &s, pg);
	if (n_pg != n_redis) {
		fprintf(stderr, "bench/matcher: the index returned %zu candidates, PostgreSQL %zu\n", n_redis, n_pg);
		exit(1);
	}
	pc->candidates = n_pg;

	/*
	 * Formation: cc-matcher's pass (pages -> working set -> formations) over
	 * the head page just read (and any deeper page it asks for, charged
	 * here too), every formation recorded to be claimed next.
	 */
	struct cc_queue_pass_stats st;
	struct cc_queue_pass_config cfg;
	struct bench_reads br = { &rec, pg, pl->name, pg_cands, n_pg, now_ms };
	cc_queue_pass_defaults(&pl->params, &cfg);
	rec.n = 0;
	cc_queue_pass_init(&bench_qp);
	snap(&s, pg);
	if (cc_queue_pass_run(&bench_qp, &cfg, bench_read, record, &br, &st) != 0) {
		fprintf(stderr, "bench/matcher: the pass failed\n");
		exit(1);
	}
	charge(&pc->phase[FORM], &s, pg);
	pc->formed = st.formation.formed;
	pc->pages = st.pages;

	/* Claims: one SERIALIZABLE transaction each; nobody races us, so all commit. */
	char ids[CC_ARRAY_LEN(rec.f) * CC_UUID_BUF + 3];
	size_t used = 0;
	ids[used++] = '{';
	snap(&s, pg);
	for (size_t k = 0; k < rec.n; k++) {
		struct cc_claim_request req;
		struct cc_claim_result out;
		cc_claim_request_from(&req, &rec.f[k], rec.players[k], pl->name, "bench", WINDOW_S, pl->params.max_rtt_ms);
		if ((rc = cc_formation_claim(pg, &req, &out)) != 0)
			die_db(pg, "cc_formation_claim", rc);
		used += (size_t)snprintf(ids + used, sizeof ids - used, "%s%s", k ? "," : "", out.proposal_id);
	}
	charge(&pc->phase[CLAIM], &s, pg);
	snprintf(ids + used, sizeof ids - used, "}");

	/* With the index on, pass.c also drops every claimed ticket from it. */
	snap(&s, pg);
	for (size_t k = 0; k < rec.n; k++)
		for (size_t j = 0; j < rec.f[k].n_players; j++)
			if (cc_candidate_index_remove(idx, pl->name, rec.players[k][j].ticket_id) != 0)
				exit(1);
	charge(&pc->phase[FORGET], &s, pg);

	/* Not timed: back to the same queue for the next repetition. */
	const char *p[] = { ids };
	PQclear(sql(pg, sql_unclaim_participants, 1, p));
	PQclear(sql(pg, sql_unclaim_tickets, 1, p));
	PQclear(sql(pg, sql_unclaim_proposals, 1, p));
	for (size_t k = 0; k < rec.n; k++)
		for (size_t j = 0; j < rec.f[k].n_players; j++)
			if (cc_candidate_index_put(idx, pl->name, &rec.players[k][j]) != 0)
				exit(1);
}

/* ---- the candidate read's plan ------------------------------------------------- */

/*
 * Runs cc_candidates_load once with auto_explain logging its plan (ANALYZE,
 * BUFFERS) into the server log, and prints that plan. Returns whether the
 * plan scans tickets_queued_by_age.
 */
static bool explain_read(struct cc_pg *pg, const struct playlist_bench *pl, bool print)
{
	const char *log_path = env("CC_TEST_PG_LOG");
	struct stat sb;
	size_t n = 0;
	int64_t now_ms;
	bool uses_index = false;

	PQclear(sql(pg, "LOAD 'auto_explain'", 0, NULL));
	PQclear(sql(pg, "SET auto_explain.log_analyze = on", 0, NULL));
	PQclear(sql(pg, "SET auto_explain.log_buffers = on", 0, NULL));
	off_t from = stat(log_path, &sb) == 0 ? sb.st_size : 0;
	PQclear(sql(pg, "SET auto_explain.log_min_duration = 0", 0, NULL));
	int rc = cc_candidates_load(pg, pl->name, NULL, pl->read_limit, pg_cands, &n, &now_ms);
	PQclear(sql(pg, "SET auto_explain.log_min_duration = -1", 0, NULL));
	if (rc != 0)
		die_db(pg, "cc_candidates_load (explained)", rc);

	/* The backend wrote the plan to its log before answering, so it is there now. */
	FILE *f = fopen(log_path, "r");
	if (!f || fseeko(f, from, SEEK_SET) != 0) {
		fprintf(stderr, "bench/matcher: cannot read %s: %s\n", log_path, strerror(errno));
		exit(1);
	}
	char line[1024];
	int in_plan = 0, printed = 0;
	while (fgets(line, sizeof line, f)) {
		if (strstr(line, "plan:") && strstr(line, "duration:")) {
			in_plan = 1;
			continue;
		}
		if (!in_plan)
			continue;
		if (line[0] >= '0' && line[0] <= '9') /* the next log entry starts with its timestamp */
			break;
		if (strstr(line, "Query Text:"))
			continue;
		if (strstr(line, "tickets_queued_by_age"))
			uses_index = true;
		if (print && printed++ < PLAN_LINES)
			printf("    | %s", line + (line[0] == '\t'));
	}
	fclose(f);
	return uses_index;
}

/* ---- depth ------------------------------------------------------------------- */

static void seed(struct cc_pg *pg, const char *tag, const char *playlist, long long first, long long n,
		 const char *t0)
{
	char a[24], b[24];
	snprintf(a, sizeof a, "%lld", first);
	snprintf(b, sizeof b, "%lld", n);
	const char *p[] = { tag, playlist, a, b, t0 };
	PQclear(sql(pg, sql_seed, 5, p));
}

/* Replaces the playlist's index with every QUEUED ticket of it (as a rebuild after a flush would). */
static void fill_index(struct cc_pg *pg, struct cc_candidate_index *idx, const char *playlist, size_t depth)
{
	struct cc_candidate *all = calloc(depth, sizeof *all);
	size_t n = 0;
	if (!all) {
		fprintf(stderr, "bench/matcher: out of memory for %zu candidates\n", depth);
		exit(1);
	}
	int rc = cc_candidates_load(pg, playlist, NULL, depth, all, &n, NULL);
	if (rc != 0)
		die_db(pg, "load every candidate", rc);
	if (n != depth || (rc = cc_candidate_index_rebuild(idx, playlist, all, n)) != 0) {
		fprintf(stderr, "bench/matcher: index of %zu/%zu candidates: %s\n", n, depth, cc_errname(rc));
		exit(1);
	}
	free(all);
}

/* The median over the repetitions of one number taken from each. */
static double median_of(const struct pass_cost *runs, double (*get)(const struct pass_cost *, const void *),
			const void *arg)
{
	double v[REPS];
	for (int r = 0; r < REPS; r++)
		v[r] = get(&runs[r], arg);
	return median(v, REPS);
}

/* Selectors for median_of: a phase's wall/self/postgres/redis time, a path's total CPU, self CPU, wall. */
struct pick {
	enum phase phase;
	int field;              /* 0 wall, 1 self, 2 postgres, 3 redis */
	const bool *path;
};

static double get_field(const struct pass_cost *p, const void *arg)
{
	const struct pick *k = arg;
	const struct cost *c = &p->phase[k->phase];
	return k->field == 0 ? c->wall_ms : k->field == 1 ? c->self_ms : k->field == 2 ? c->pg_ms : c->redis_ms;
}

static double get_path_cpu(const struct pass_cost *p, const void *arg)
{
	const struct pick *k = arg;
	double sum = 0;
	for (int ph = 0; ph < N_PHASES; ph++)
		sum += k->path[ph] ? cpu(&p->phase[ph]) : 0;
	return sum;
}

static double get_path_self(const struct pass_cost *p, const void *arg)
{
	const struct pick *k = arg;
	double sum = 0;
	for (int ph = 0; ph < N_PHASES; ph++)
		sum += k->path[ph] ? p->phase[ph].self_ms : 0;
	return sum;
}

static double get_path_wall(const struct pass_cost *p, const void *arg)
{
	const struct pick *k = arg;
	double sum = 0;
	for (int ph = 0; ph < N_PHASES; ph++)
		sum += k->path[ph] ? p->phase[ph].wall_ms : 0;
	return sum;
}

/* Median of phase ph's field f. */
static double med(const struct pass_cost *runs, enum phase ph, int f)
{
	struct pick k = { .phase = ph, .field = f };
	return median_of(runs, get_field, &k);
}

/* Prints one row; returns its CPU per pass (the worse of the two read paths), ms. */
static double report(long long depth, const struct playlist_bench *pl, const struct pass_cost *runs, bool uses_index)
{
	const struct pick by_pg = { .path = pg_path }, by_redis = { .path = redis_path };
	double cpu_pg = median_of(runs, get_path_cpu, &by_pg), cpu_redis = median_of(runs, get_path_cpu, &by_redis);
	double worst = cpu_pg > cpu_redis ? cpu_pg : cpu_redis;

	printf("formation pass depth=%lld %s: read %.2f ms (pg) / %.2f ms (redis), form %.3f ms, claim %.1f ms "
	       "(%u proposals, %u page%s), cpu %.1f ms (pg path) / %.1f ms (redis path) (target < 100 ms: %s)\n",
	       depth, pl->label, med(runs, READ_PG, 0), med(runs, READ_REDIS, 0), med(runs, FORM, 1),
	       med(runs, CLAIM, 0), runs[0].formed, runs[0].pages, runs[0].pages == 1 ? "" : "s", cpu_pg, cpu_redis, worst < 100 ? "met" : "MISSED");
	printf("    cpu split (median of %d, ms, matcher+postgres+redis): expire %.2f+%.2f, read pg %.2f+%.2f, "
	       "read redis %.2f+%.2f+%.2f, form %.3f, claims %.2f+%.2f, index removes %.2f+%.2f; "
	       "matcher-only cpu %.2f / %.2f ms; pass wall %.1f ms; %zu candidates; read plan uses "
	       "tickets_queued_by_age: %s\n",
	       REPS, med(runs, EXPIRE, 1), med(runs, EXPIRE, 2), med(runs, READ_PG, 1), med(runs, READ_PG, 2),
	       med(runs, READ_REDIS, 1), med(runs, READ_REDIS, 2), med(runs, READ_REDIS, 3), med(runs, FORM, 1),
	       med(runs, CLAIM, 1), med(runs, CLAIM, 2), med(runs, FORGET, 1), med(runs, FORGET, 3),
	       median_of(runs, get_path_self, &by_pg), median_of(runs, get_path_self, &by_redis),
	       median_of(runs, get_path_wall, &by_pg), runs[0].candidates, uses_index ? "yes" : "NO");
	return worst;
}

static int run_depth(int argc, char **argv)
{
	long long depths[MAX_DEPTHS] = { 1000, 10000, 100000 };
	int n_depths = 3;
	if (argc > 0) {
		n_depths = 0;
		for (int i = 0; i < argc && n_depths < MAX_DEPTHS; i++) {
			char *end;
			long long d = strtoll(argv[i], &end, 10);
			if (*end || d < 1 || d > 10000000 || (n_depths && d <= depths[n_depths - 1])) {
				fprintf(stderr, "bench/matcher: depths must be increasing positive integers: %s\n", argv[i]);
				return 2;
			}
			depths[n_depths++] = d;
		}
	}
	const char *pidfile = env("CC_TEST_REDIS_PIDFILE");
	FILE *pf = fopen(pidfile, "r");
	if (!pf || fscanf(pf, "%d", &redis_pid) != 1)
		redis_pid = 0; /* Redis CPU then reads as 0; said below */
	if (pf)
		fclose(pf);
	if (!redis_pid)
		fprintf(stderr, "bench/matcher: no Redis pid in %s: Redis CPU is not counted\n", pidfile);

	struct cc_pg *pg = connect_db("bench-matcher");
	struct cc_candidate_index *idx =
		cc_candidate_index_create(env("CC_TEST_REDIS_HOST"), (int)number(env("CC_TEST_REDIS_PORT"), 1, 65535), 5000, 1);
	if (!idx) {
		fprintf(stderr, "bench/matcher: cannot create the candidate index\n");
		return 1;
	}
	const struct cc_formation_params base = { .team_size = 3, .tolerance_start = 100, .tolerance_growth_per_s = 5,
						  .tolerance_cap = 400, .max_rtt_ms = 100 };
	/* Issue 25: ranked twice, greedy and cc-matcher's default rule (sweep at its rate reference). */
	struct playlist_bench pls[3] = { { "casual", "casual", base, 0 }, { "ranked", "ranked", base, 0 },
					 { "ranked", "ranked sweep", base, 0 } };
	pls[1].params.team_size = pls[2].params.team_size = 1;
	pls[1].params.ranked = pls[2].params.ranked = true;
	pls[2].params.rule = CC_FORMATION_RULE_SWEEP;
	pls[2].params.rate_reference_per_s = CC_FORMATION_DEFAULT_RATE_REFERENCE;
	for (int i = 0; i < 3; i++) {
		size_t match = (size_t)pls[i].params.team_size * 2;
		pls[i].read_limit = match * READ_FACTOR < READ_CAP ? match * READ_FACTOR : READ_CAP;
	}

	PQclear(sql(pg, "SELECT cc_bench_reset()", 0, NULL));
	PGresult *res = sql(pg, sql_t0, 0, NULL);
	char t0[40];
	snprintf(t0, sizeof t0, "%s", PQgetvalue(res, 0, 0));
	PQclear(res);

	static struct pass_cost runs[REPS];
	long long have = 0;
	bool all_indexed = true;
	for (int d = 0; d < n_depths; d++) {
		int64_t t_seed = clock_ns(CLOCK_MONOTONIC);
		seed(pg, "dc", "casual", have, depths[d] - have, t0);
		seed(pg, "dr", "ranked", have, depths[d] - have, t0);
		have = depths[d];
		PQclear(sql(pg, "ANALYZE tickets", 0, NULL));
		for (int i = 0; i < 2; i++)
			fill_index(pg, idx, pls[i].name, (size_t)depths[d]);
		fprintf(stderr, "bench/matcher: depth %lld seeded and indexed in %.1f s\n", depths[d],
			(double)(clock_ns(CLOCK_MONOTONIC) - t_seed) / 1e9);
		double cpu_ms[3];
		for (int i = 0; i < 3; i++) {
			bool print = i == 0 && d == n_depths - 1;
			if (print)
				printf("candidate read plan at depth %lld (%s, auto_explain of cc_candidates_load):\n",
				       depths[d], pls[i].name);
			bool uses_index = explain_read(pg, &pls[i], print);
			all_indexed = all_indexed && uses_index;
			for (int r = 0; r < REPS; r++)
				measure_pass(pg, idx, &pls[i], &runs[r]);
			cpu_ms[i] = report(depths[d], &pls[i], runs, uses_index);
			fflush(stdout);
		}
		printf("pass cpu depth=%lld ranked, sweep beside greedy (same run): %.1f ms vs %.1f ms, ratio %.2f "
		       "(target <= 2.00: %s)\n",
		       depths[d], cpu_ms[2], cpu_ms[1], cpu_ms[1] > 0 ? cpu_ms[2] / cpu_ms[1] : 0,
		       cpu_ms[2] <= 2 * cpu_ms[1] ? "met" : "MISSED");
		fflush(stdout);
	}
	/* Leave Redis as we found it (empty namespaces), not full of this database's tickets. */
	for (int i = 0; i < 2; i++)
		if (cc_candidate_index_rebuild(idx, pls[i].name, NULL, 0) != 0)
			fprintf(stderr, "bench/matcher: could not empty the %s index\n", pls[i].name);
	cc_candidate_index_free(idx);
	cc_pg_free(pg);
	if (!all_indexed)
		fprintf(stderr, "bench/matcher: a candidate read did not use tickets_queued_by_age: it scales with depth\n");
	return all_indexed ? 0 : 3;
}

/* ---- throughput ------------------------------------------------------------------ */

/* One matcher loop: its own connection, candidates and workspace. */
struct loop {
	pthread_t thread;
	int64_t deadline_ns;            /* monotonic */
	struct cc_pg *pg;
	struct cc_formation_params params;
	size_t read_limit;
	unsigned long committed, lost, exhausted, passes, failed_passes;
	int64_t ended_ns;               /* when the loop stopped */
	int error;                      /* a fatal error, 0 if none */
	struct cc_candidate cands[READ_CAP];
	struct cc_formation_workspace ws;
};

static pthread_barrier_t start_line;
static int64_t started_ns;

/* The claim callback of services/matcher/pass.c, minus logs and metrics. */
static int loop_claim(void *ctx, const struct cc_formation *f, bool lost[CC_FORMATION_MAX_PLAYERS])
{
	struct loop *l = ctx;
	struct cc_claim_request req;
	struct cc_claim_result res;
	cc_claim_request_from(&req, f, l->cands, "casual", "bench", THROUGHPUT_WINDOW_S, l->params.max_rtt_ms);
	int rc = cc_formation_claim(l->pg, &req, &res);
	if (rc == 0) {
		l->committed++;
		return 0;
	}
	if (rc == CC_ECONFLICT) {
		l->lost++;
		memcpy(lost, res.lost, sizeof res.lost);
		return CC_ECONFLICT;
	}
	if (rc == CC_ERETRY_EXHAUSTED) {
		l->exhausted++;
		return CC_ECONFLICT;
	}
	return rc;
}

static void *loop_main(void *arg)
{
	struct loop *l = arg;
	pthread_barrier_wait(&start_line);
	while (clock_ns(CLOCK_MONOTONIC) < l->deadline_ns) {
		struct expire_ctx ex;
		struct cc_formation_pass_stats st;
		size_t n = 0;
		int64_t now_ms = 0;
		int rc = cc_pg_run_serializable(l->pg, expire_run, &ex);
		if (rc == 0)
			rc = cc_candidates_load(l->pg, "casual", NULL, l->read_limit, l->cands, &n, &now_ms);
		if (rc == 0 && (rc = cc_formation_prepare(&l->ws, l->cands, n, now_ms, &l->params)) == 0)
			rc = cc_formation_pass(&l->ws, loop_claim, l, &st);
		/* As in pass.c, a failed pass (a serialization failure, say) ends only that pass. */
		if (rc == CC_ERETRY_EXHAUSTED || rc == CC_ESERIALIZATION) {
			(void)cc_pg_rollback(l->pg);
			l->failed_passes++;
			continue;
		}
		if (rc != 0) {
			l->error = rc;
			fprintf(stderr, "bench/matcher: matcher loop: %s (%s)\n", cc_errname(rc), cc_pg_error_message(l->pg));
			break;
		}
		l->passes++;
		if (st.formed == 0 && st.lost_claims == 0)
			break; /* drained: nothing more can form */
	}
	l->ended_ns = clock_ns(CLOCK_MONOTONIC);
	return NULL;
}

static int run_throughput(int argc, char **argv)
{
	long threads = argc == 2 ? number(argv[0], 1, MAX_THREADS) : -1;
	long seconds = argc == 2 ? number(argv[1], 1, 600) : -1;
	if (threads < 0 || seconds < 0) {
		fprintf(stderr, "usage: matcher throughput THREADS(1-%d) SECONDS(1-600)\n", MAX_THREADS);
		return 2;
	}
	struct loop *loops = calloc((size_t)threads, sizeof *loops);
	if (!loops)
		return 1;
	const struct cc_formation_params casual = { .team_size = 3, .tolerance_start = 100,
						    .tolerance_growth_per_s = 5, .tolerance_cap = 400,
						    .max_rtt_ms = 100 };
	pthread_barrier_init(&start_line, NULL, (unsigned)threads + 1);
	for (long i = 0; i < threads; i++) {
		loops[i].pg = connect_db("bench-matcher-loop");
		loops[i].params = casual;
		loops[i].read_limit = 6 * READ_FACTOR;
		PQclear(sql(loops[i].pg, "SELECT 1", 0, NULL)); /* connected before the clock starts */
	}
	int64_t deadline = clock_ns(CLOCK_MONOTONIC) + (int64_t)seconds * 1000000000;
	for (long i = 0; i < threads; i++) {
		loops[i].deadline_ns = deadline;
		if (pthread_create(&loops[i].thread, NULL, loop_main, &loops[i]) != 0)
			return 1;
	}
	started_ns = clock_ns(CLOCK_MONOTONIC);
	pthread_barrier_wait(&start_line);
	int64_t last = started_ns;
	unsigned long committed = 0, lost = 0, exhausted = 0, passes = 0, failed = 0;
	int error = 0;
	for (long i = 0; i < threads; i++) {
		pthread_join(loops[i].thread, NULL);
		committed += loops[i].committed;
		lost += loops[i].lost;
		exhausted += loops[i].exhausted;
		passes += loops[i].passes;
		failed += loops[i].failed_passes;
		last = loops[i].ended_ns > last ? loops[i].ended_ns : last;
		error = error ? error : loops[i].error;
		cc_pg_free(loops[i].pg);
	}
	pthread_barrier_destroy(&start_line);
	free(loops);
	double wall = (double)(last - started_ns) / 1e9;
	unsigned long claims = committed + lost + exhausted;
	printf("proposals_per_s=%.1f committed=%lu seconds=%.2f claims=%lu lost=%lu retry_exhausted=%lu "
	       "conflict_rate=%.3f passes=%lu failed_passes=%lu\n",
	       wall > 0 ? (double)committed / wall : 0, committed, wall, claims, lost, exhausted,
	       claims ? (double)(lost + exhausted) / (double)claims : 0, passes, failed);
	return error ? 1 : 0;
}

int main(int argc, char **argv)
{
	/* Lost claims and retries are counted in the output; their log lines would only interleave. */
	cc_log_init("bench-matcher", CC_LOG_ERROR);
	if (cc_crypto_init() != 0) {
		fprintf(stderr, "bench/matcher: libsodium init failed\n");
		return 1;
	}
	if (argc >= 2 && strcmp(argv[1], "depth") == 0)
		return run_depth(argc - 2, argv + 2);
	if (argc >= 2 && strcmp(argv[1], "throughput") == 0)
		return run_throughput(argc - 2, argv + 2);
	fprintf(stderr, "usage: matcher depth [DEPTH...] | matcher throughput THREADS SECONDS\n");
	return 2;
}
