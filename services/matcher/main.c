/*
 * cc-matcher: forms matches for one playlist (SPEC 6).
 *
 * main() reads the configuration (its own rows plus the service skeleton's
 * database, Redis, admin and log rows: sys/service.h; only static
 * misconfiguration stops start-up: a database or Redis that is down is
 * waited out, pass by pass), starts the admin server (/metrics, /healthz,
 * /readyz) and lets the skeleton run the matching loop on its own thread
 * until SIGINT/SIGTERM.
 *
 * The loop: a pass, then wait for a NOTIFY ("outbox", sent once by every
 * transaction that writes outbox rows: enqueues, requeues, declines) or the poll interval,
 * whichever comes first; wake-ups never start passes closer than
 * --min-pass-interval-ms, so a storm of notifications costs at most one
 * pass per interval. A pass that formed matches is followed by the next
 * at once (it may have left more); a standby sleeps a poll interval. Every per-pass error is logged and counted, and the
 * next pass runs as usual.
 */
#include <libpq-fe.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sys/admin.h"
#include "sys/clock.h"
#include "sys/config.h"
#include "sys/crypto.h"
#include "sys/log.h"
#include "sys/service.h"
#include "matcher.h"
#include "sys/banned.h"

#define OPT(field) offsetof(struct matcher_config, field)

static const struct cc_config_option matcher_options[] = {
	/* Checked against libcommon/game/playlist.c in matcher_configure, which names the choices. */
	{ .name = "playlist", .type = CC_CFG_STRING, .required = true,
	  .help = "the playlist this process matches, as defined in libcommon/game/playlist.c (one process per playlist)",
	  .offset = OPT(playlist) },
	{ .name = "team-size", .type = CC_CFG_INT, .default_value = "0", .min = 0, .max = CC_FORMATION_MAX_TEAM_SIZE,
	  .help = "players per team; 0 = the playlist's own (libcommon/game/playlist.c)", .offset = OPT(team_size) },
	{ .name = "poll-interval-ms", .type = CC_CFG_INT, .default_value = CC_STRINGIFY(CC_QUEUE_PASS_POLL_MS), .min = 10, .max = 60000,
	  .help = "run a pass at least this often when no NOTIFY arrives", .offset = OPT(poll_interval_ms) },
	{ .name = "min-pass-interval-ms", .type = CC_CFG_INT, .default_value = CC_STRINGIFY(CC_QUEUE_PASS_MIN_INTERVAL_MS), .min = 0, .max = 60000,
	  .help = "wake-ups never start passes closer than this (bounds the cost of NOTIFY storms; a pass that formed matches is followed at once)",
	  .offset = OPT(min_pass_interval_ms) },
	/* 3 s: a frozen holder stalls its playlist for this plus a standby's poll interval (issue 14:
	 * under 5 s), and it is still 6 times the idle gaps of a healthy replica at the defaults. */
	{ .name = "lease-timeout-ms", .type = CC_CFG_INT, .default_value = "3000", .min = 1000, .max = 600000,
	  .help = "a replica stalled this long mid-pass loses the playlist's pass lease to another "
		  "(at least twice the poll interval, min pass interval and Redis timeout)",
	  .offset = OPT(lease_timeout_ms) },
	/* -1: the playlist's own, chosen with tests/bench/queue_sim.c (scripts/queue-sim.sh): see README. */
	{ .name = "tolerance-start", .type = CC_CFG_DOUBLE, .default_value = "-1", .min = -1, .max = 5000,
	  .help = "ranked: rating difference allowed to a fresh anchor (-1 = the playlist's)",
	  .offset = OPT(tolerance_start) },
	{ .name = "tolerance-growth-per-second", .type = CC_CFG_DOUBLE, .default_value = "-1", .min = -1, .max = 1000,
	  .help = "ranked: rating points the tolerance widens per second the anchor waits (-1 = the playlist's)",
	  .offset = OPT(tolerance_growth_per_second) },
	{ .name = "tolerance-cap", .type = CC_CFG_DOUBLE, .default_value = "-1", .min = -1, .max = 5000,
	  .help = "ranked: the tolerance never exceeds this (must be >= the start; -1 = the playlist's)",
	  .offset = OPT(tolerance_cap) },
	/* Issue 25: sweep and the rate reference were chosen with queue_sim; greedy + 0 is the rule before it. */
	{ .name = "formation-rule", .type = CC_CFG_ENUM, .default_value = "sweep", .choices = "greedy|pairing|sweep",
	  .help = "ranked: who is matched (libcommon/game/formation.h): sweep pairs rating neighbours first, greedy "
		  "lets the oldest ticket take the nearest of the next ones, pairing its nearest of all",
	  .offset = OPT(formation_rule) },
	{ .name = "rate-reference-per-second", .type = CC_CFG_DOUBLE,
	  .default_value = CC_STRINGIFY(CC_FORMATION_DEFAULT_RATE_REFERENCE), .min = 0,
	  .max = CC_FORMATION_MAX_RATE_REFERENCE,
	  .help = "ranked: the tolerance growth is multiplied by this over the arrivals per second of the last "
		  "2 minutes (1/8..8: a thin queue widens faster, a busy one slower); 0 = growth ignores the rate",
	  .offset = OPT(rate_reference_per_second) },
	{ .name = "max-rtt-ms", .type = CC_CFG_DOUBLE, .default_value = "100", .min = 1, .max = 10000,
	  .help = "a region counts for a player whose probed RTT to it is at most this (SPEC 6: 100)",
	  .offset = OPT(max_rtt_ms) },
	{ .name = "proposal-window-seconds", .type = CC_CFG_INT, .default_value = "10", .min = 1, .max = 600,
	  .help = "how long players have to answer a proposal", .offset = OPT(proposal_window_seconds) },
	{ .name = "matcher-id", .type = CC_CFG_STRING,
	  .help = "name recorded on the proposals this replica forms (default hostname-pid)",
	  .offset = OPT(matcher_id) },
};

/* The matcher's own rows plus the shared ones it names (sys/service.h). */
static const struct cc_service_spec matcher_spec = {
	.program = "cc-matcher",
	.summary = "Cosmic Clash matcher: forms balanced matches for one playlist and opens proposals.",
	.options = matcher_options,
	.n_options = CC_ARRAY_LEN(matcher_options),
	.shared = CC_SERVICE_DATABASE | CC_SERVICE_DB_TIMEOUT | CC_SERVICE_REDIS | CC_SERVICE_ADMIN | CC_SERVICE_LOG,
	.shared_offset = offsetof(struct matcher_config, svc),
	.admin_port = "9181",
};

/* The skeleton: options, signals, the stop the loop watches. */
static struct cc_service service;

/* Sleeps up to ms, returning early once stopping. */
static void nap(int64_t ms)
{
	(void)cc_service_nap(&service, ms);
}

/* Opens the LISTEN connection and subscribes; false (logged) when the database is down. */
static bool listen_setup(struct matcher *m)
{
	char err[256] = "";
	int rc = 0;
	if (!m->listener)
		rc = cc_pg_connect(m->cfg->svc.database_url, &m->pg_opt, &m->listener, err, sizeof err);
	if (rc == 0)
		rc = cc_pg_listen(m->listener, "outbox");
	if (rc != 0)
		cc_log_emit(m->failed_passes <= 1 ? CC_LOG_WARN : CC_LOG_DEBUG, "listen_failed",
			    (struct cc_log_field[]){ CC_LOG_STR("error", cc_errname(rc)), CC_LOG_STR("reason", err) }, 2);
	m->listening = rc == 0;
	return m->listening;
}

/*
 * Reads every notification that has arrived, without waiting. A busy
 * matcher runs pass after pass without waiting, and its listener must
 * still keep up: unread notifications pile up in libpq and hold back
 * PostgreSQL's notification queue for every session.
 */
static int drain_notifications(struct matcher *m)
{
	char channel[CC_PG_CHANNEL_MAX + 1], payload[64];
	int rc = 0;
	for (int drained = 0; rc == 0 && drained < 10000; drained++)
		rc = cc_pg_wait_notify(m->listener, 0, channel, sizeof channel, payload, sizeof payload);
	return rc;
}

/*
 * Waits until a notification arrives or timeout_ms passes, then drains the
 * rest, so one pass answers a whole burst. A lost listener connection means
 * notifications may have been missed: return at once so a pass rescans.
 */
static void wait_for_work(struct matcher *m, int64_t timeout_ms)
{
	char channel[CC_PG_CHANNEL_MAX + 1], payload[64];
	if (!m->listening && !listen_setup(m)) {
		nap(timeout_ms);
		return;
	}
	int64_t end = cc_clock_ms() + timeout_ms;
	int rc = CC_ETIMEOUT;
	/* Slices, so SIGTERM is noticed within 100 ms. */
	for (int64_t left = timeout_ms; left > 0 && !cc_service_stopping(&service); left = end - cc_clock_ms()) {
		rc = cc_pg_wait_notify(m->listener, (int)(left < 100 ? left : 100), channel, sizeof channel, payload,
				       sizeof payload);
		if (rc != CC_ETIMEOUT)
			break;
	}
	if (rc == CC_EUNAVAILABLE) {
		/* The next wait reconnects and LISTENs again; pause so a dead database is not spun on. */
		cc_log_emit(m->failed_passes <= 1 ? CC_LOG_WARN : CC_LOG_DEBUG, "listen_lost", NULL, 0);
		nap(timeout_ms);
		return;
	}
	if (rc == 0)
		(void)drain_notifications(m);
}

static void *matcher_loop(void *arg)
{
	struct matcher *m = arg;
	while (!cc_service_stopping(&service)) {
		int64_t started = cc_clock_ms();
		(void)matcher_pass(m); /* every failure is logged and counted inside */
		if (cc_service_stopping(&service))
			break;
		if (m->run_again) {
			if (m->listening)
				(void)drain_notifications(m); /* a lost listener is found by the next wait */
			continue;
		}
		if (m->standby) {
			/* The active replica's own claims would wake a standby hundreds of times a second. */
			nap(m->cfg->poll_interval_ms);
			if (m->listening)
				(void)drain_notifications(m);
			continue;
		}
		wait_for_work(m, m->cfg->poll_interval_ms);
		int64_t since = cc_clock_ms() - started;
		if (since < m->cfg->min_pass_interval_ms)
			nap(m->cfg->min_pass_interval_ms - since);
	}
	return NULL;
}

/* Ready once a pass has reached PostgreSQL, and while they keep doing so. */
static bool matcher_ready(void *ctx, char *why, size_t whylen)
{
	struct matcher *m = ctx;
	pthread_mutex_lock(&m->lock);
	bool ok = m->db_ready;
	if (!ok)
		snprintf(why, whylen, "%s", m->db_why);
	pthread_mutex_unlock(&m->lock);
	return ok;
}

/* Checks what the table cannot and fills the derived fields; false (printed) on misconfiguration. */
static bool matcher_configure(struct matcher *m, const struct matcher_config *cfg)
{
	bool ok = true;
	char *errmsg = NULL, why[160];

	m->cfg = cfg;
	if (cc_playlists_check(why, sizeof why) != 0) {
		fprintf(stderr, "cc-matcher: libcommon/game/playlist.c: %s\n", why); /* a build that must not ship */
		return false;
	}
	const struct cc_playlist *pl = cc_playlist_find(cfg->playlist);
	if (!pl) {
		char names[128];
		(void)cc_playlist_names(names, sizeof names, "|");
		/* Echo only a well-formed name: the value may hold anything. */
		if (cc_playlist_name_valid(cfg->playlist))
			fprintf(stderr, "cc-matcher: --playlist: '%s' is not one of %s\n", cfg->playlist, names);
		else
			fprintf(stderr, "cc-matcher: --playlist: not a playlist name ([a-z][a-z0-9_]{0,31}); one of %s\n",
				names);
		return false;
	}
	/* The playlist's definition, then the flags that override it. */
	cc_playlist_formation_params(pl, &m->params);
	if (cfg->team_size)
		m->params.team_size = (int)cfg->team_size;
	if (cfg->tolerance_start >= 0)
		m->params.tolerance_start = cfg->tolerance_start;
	if (cfg->tolerance_growth_per_second >= 0)
		m->params.tolerance_growth_per_s = cfg->tolerance_growth_per_second;
	if (cfg->tolerance_cap >= 0)
		m->params.tolerance_cap = cfg->tolerance_cap;
	m->params.max_rtt_ms = cfg->max_rtt_ms;
	if (!cc_formation_rule_parse(cfg->formation_rule, &m->params.rule))
		CC_BUG("cc-matcher: the config checked --formation-rule against its choices");
	m->params.rate_reference_per_s = cfg->rate_reference_per_second;
	/*
	 * The work connection sits idle between passes (a poll or min-pass
	 * interval) and, mid-pass, while a Redis command runs: the lease
	 * timeout must not end a healthy replica's session.
	 */
	int64_t idle = cfg->poll_interval_ms;
	if (cfg->min_pass_interval_ms > idle)
		idle = cfg->min_pass_interval_ms;
	if (cfg->svc.redis_timeout_ms > idle)
		idle = cfg->svc.redis_timeout_ms;
	if (cfg->lease_timeout_ms < 2 * idle) {
		fprintf(stderr, "cc-matcher: --lease-timeout-ms (%lld) must be at least twice --poll-interval-ms, "
				"--min-pass-interval-ms and --redis-timeout-ms (%lld)\n",
			(long long)cfg->lease_timeout_ms, (long long)idle);
		ok = false;
	}
	if (m->params.tolerance_cap < m->params.tolerance_start) {
		fprintf(stderr, "cc-matcher: --tolerance-cap (%g) must be >= --tolerance-start (%g)\n",
			m->params.tolerance_cap, m->params.tolerance_start);
		ok = false;
	}
	if (!cc_formation_params_valid(&m->params))
		ok = false;
	/* A DSN that cannot even be parsed never works: say so now (without echoing it). */
	PQconninfoOption *opts = PQconninfoParse(cfg->svc.database_url, &errmsg);
	if (!opts) {
		fprintf(stderr, "cc-matcher: --database-url: not a valid PostgreSQL connection string\n");
		ok = false;
	}
	PQconninfoFree(opts);
	PQfreemem(errmsg);

	if (ok) {
		cc_queue_pass_defaults(&m->params, &m->pass_cfg);
		cc_queue_pass_init(&m->qp);
	}
	if (cfg->matcher_id && *cfg->matcher_id) {
		snprintf(m->id, sizeof m->id, "%s", cfg->matcher_id);
	} else {
		char host[64] = "unknown";
		if (gethostname(host, sizeof host) != 0)
			snprintf(host, sizeof host, "unknown");
		host[sizeof host - 1] = '\0';
		snprintf(m->id, sizeof m->id, "%s-%d", host, (int)getpid());
	}
	/* Prepared statements: a claim is ~19 statements and planning them again on
	 * every claim was the largest share of PostgreSQL's CPU (bench-matcher.sh). */
	m->pg_opt = (struct cc_pg_options){ .query_timeout_ms = (int)cfg->svc.db_timeout_ms,
					    .application_name = "cc-matcher",
					    .prepare_statements = true };
	return ok;
}

static void declare_metrics(struct matcher_metrics *mm)
{
	static const double buckets[] = { 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5 };
	const char *const pl[] = { "playlist", NULL };
	const char *const pl_result[] = { "playlist", "result", NULL };
	const char *const pl_kind[] = { "playlist", "kind", NULL };
	const char *const pl_reason[] = { "playlist", "reason", NULL };
	const char *const pl_source[] = { "playlist", "source", NULL };
	mm->passes = cc_counter("cosmic_clash_matcher_passes_total", "Matching passes run, by result.", pl_result, 8);
	mm->proposals = cc_counter("cosmic_clash_matcher_proposals_total", "Proposals committed.", pl, 4);
	mm->expired = cc_counter("cosmic_clash_matcher_proposals_expired_total",
				 "Overdue proposals this matcher expired (requeue + timeout penalties).", pl, 4);
	mm->claim_conflicts = cc_counter("cosmic_clash_matcher_claim_conflicts_total",
					 "Claims lost to another matcher or to stale candidates.", pl_kind, 8);
	mm->refusals = cc_counter("cosmic_clash_matcher_refusals_total",
				  "Formations refused for reasons specific to their players.", pl_reason, 8);
	mm->pass_seconds = cc_histogram("cosmic_clash_matcher_pass_duration_seconds", "Duration of one pass.", pl, 4,
					buckets, CC_ARRAY_LEN(buckets));
	mm->candidates = cc_counter("cosmic_clash_matcher_candidates_read_total", "Candidates read, by source.",
				    pl_source, 8);
	mm->reads = cc_counter("cosmic_clash_matcher_candidate_reads_total", "Passes by candidate source.",
			       pl_source, 8);
	mm->redis_fallbacks = cc_counter("cosmic_clash_matcher_redis_fallbacks_total",
					 "Passes that read PostgreSQL because the index was down or empty.", pl_reason, 8);
	static const char *const op[] = { "op", NULL };
	mm->index_errors = cc_counter("cosmic_clash_matcher_candidate_index_errors_total",
				      "Candidate index refreshes after a proposal expiry that failed (Redis down or slow)", op,
				      8);
}

int main(int argc, char **argv)
{
	struct matcher_config cfg = { 0 };
	struct matcher *m = NULL;
	struct cc_admin *admin = NULL;
	int status = 1;

	cc_service_load_or_exit(&service, &matcher_spec, argc, argv, &cfg, NULL);
	m = calloc(1, sizeof *m);
	if (!m) {
		cc_log_error("start_failed", CC_LOG_STR("reason", "out of memory"));
		goto out;
	}
	pthread_mutex_init(&m->lock, NULL);
	snprintf(m->db_why, sizeof m->db_why, "no pass has reached the database yet");
	if (!matcher_configure(m, &cfg)) {
		fprintf(stderr, "cc-matcher: see --help\n");
		status = 2;
		goto out;
	}
	cc_service_start(&service);
	if (cc_crypto_init() != 0) {
		cc_log_error("start_failed", CC_LOG_STR("reason", "libsodium init"));
		goto out;
	}
	declare_metrics(&m->metrics);
	/* Lazy connections: a Redis that is down now is only a slower pass. */
	m->index = cc_candidate_index_create(cfg.svc.redis_host, (int)cfg.svc.redis_port, (int)cfg.svc.redis_timeout_ms, 1);
	admin = cc_admin_start_service(&service, matcher_ready, m);
	if (!admin)
		goto out;
	/* The effective formation settings: the playlist's, with the flags' overrides (-1 in the config line). */
	cc_log_info("started", CC_LOG_STR("playlist", cfg.playlist), CC_LOG_STR("matcher_id", m->id),
		    CC_LOG_INT("team_size", m->params.team_size), CC_LOG_BOOL("ranked", m->params.ranked),
		    CC_LOG_DBL("tolerance_start", m->params.tolerance_start),
		    CC_LOG_DBL("tolerance_growth_per_second", m->params.tolerance_growth_per_s),
		    CC_LOG_DBL("tolerance_cap", m->params.tolerance_cap), CC_LOG_DBL("max_rtt_ms", m->params.max_rtt_ms),
		    CC_LOG_STR("formation_rule", cc_formation_rule_name(m->params.rule)),
		    CC_LOG_DBL("rate_reference_per_second", m->params.rate_reference_per_s),
		    CC_LOG_INT("read_limit", m->pass_cfg.head_page),
		    CC_LOG_BOOL("redis", m->index != NULL), CC_LOG_INT("admin_port", cc_admin_port(admin)));
	status = cc_service_run(&service, matcher_loop, m);
out:
	cc_admin_stop(admin);
	if (m) {
		cc_candidate_index_free(m->index);
		cc_pg_free(m->listener);
		cc_pg_free(m->pg);
		pthread_mutex_destroy(&m->lock);
		free(m);
	}
	cc_service_release(&service);
	return status;
}
