/*
 * cc-gameserver: one 60 Hz match over ENet, allocated mode (SPEC 11); or,
 * with --mode=community, a long-running lobby server with no control plane
 * (gameserver/community.h: no roster, join keys, workload token or cc-api;
 * the options only allocated mode uses are refused by name, and the other
 * way round; it runs until SIGTERM/SIGINT and exits 0).
 *
 * main() reads the options (one table; strict: sys/config.h), the roster
 * manifest cc-supervisor wrote (verified: its digest must match, and it
 * must name this server) and the join key set, then opens the UDP game
 * port, the reporter (cc-api's server routes, off the tick thread) and the
 * loopback probe, and runs the tick loop on the service skeleton's thread
 * until the match ends or SIGTERM/SIGINT.
 *
 * Exit status: 0 the match ended and cc-api acknowledged the result;
 * 3 the match ended but the result was not acknowledged in
 * --result-timeout-ms; 4 stopped by a signal before the end; 5 the match
 * was called off, no result posted (a heartbeat answer said the control
 * plane ended it, or a ranked player never connected: gameserver/server.h);
 * 1 fatal; 2 bad options. cc-supervisor reads these (services/supervisor).
 *
 * The result's retry horizon: the result job is retried (100 ms doubling
 * to 2 s) for --end-linger-ms + --result-timeout-ms after the match ended
 * (31 s by default, at most 60 + 180 = 240 s), then the process exits 3.
 * cc-maintenance's result-missing window (300 s by default) must exceed it,
 * so a result still being retried is never overtaken by the sweep.
 *
 * Not linked: PostgreSQL, Redis, the HTTP server (SPEC 1). The probe is a
 * few lines of TCP (gameserver/probe.h), the receipts use sys/http_client.
 */
#include <enet/enet.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission.h"
#include "match.h"
#include "probe.h"
#include "replay.h"
#include "reporter.h"
#include "server.h"
#include "community.h"
#include "wire_glue.h"
#include "game/arenas.h"
#include "game/playlist.h"
#include "game/roster.h"
#include "sys/clock.h"
#include "sys/config.h"
#include "sys/crypto.h"
#include "sys/file.h"
#include "sys/log.h"
#include "sys/service.h"
#include "sys/banned.h"

struct gameserver_config {
	char *bind;
	int64_t game_port;
	int64_t probe_port;
	char *server_id;
	char *roster_file;
	char *join_keys;      /* secret: key set text (sys/crypto.h format) */
	char *api_url;
	char *workload_token; /* secret */
	char *playlist;
	char *arena;
	int64_t match_seconds;
	int64_t warmup_seconds;
	int64_t connect_window_seconds;
	int64_t goal_pause_seconds;
	int64_t overtime_max_seconds;
	int64_t max_peers;
	int64_t max_bad_messages;
	int64_t handshake_timeout_ms;
	int64_t snapshot_rate;
	int64_t api_timeout_ms;
	int64_t result_timeout_ms;
	int64_t heartbeat_interval_ms;
	int64_t end_linger_ms;
	int64_t input_buffer_ticks;
	int64_t input_stall_kick_ms;
	int64_t stall_grace_ms;
	int64_t peer_max_pps;
	int64_t peer_max_bps;
	int64_t rate_limit_log_window_ms;
	int64_t max_silent_per_address;
	int64_t net_sim_latency;  /* test aids (issue 12): sys/netsim.h */
	int64_t net_sim_jitter;
	double net_sim_loss;
	double net_sim_dup;
	int64_t net_sim_seed;
	char *replay_log;         /* gameserver/replay.h */
	int64_t replay_log_max_bytes;
	int64_t slot_reserve_seconds;
	int64_t max_spectators;
	char *mode;               /* "allocated" (default) or "community" (gameserver/community.h) */
	int64_t max_lobbies;      /* community */
	char *results_log;
	int64_t keepalive_ms;
	int64_t max_peer_backlog;
	int64_t lobby_rps;
	int64_t lobby_countdown_ms;
	struct cc_service_options svc;
};

#define OPT(field) offsetof(struct gameserver_config, field)

static const struct cc_config_option gameserver_options[] = {
	{ .name = "bind", .type = CC_CFG_STRING, .default_value = "0.0.0.0",
	  .help = "IPv4 address of the UDP game socket", .offset = OPT(bind) },
	{ .name = "game-port", .type = CC_CFG_INT, .required = true, .min = 0, .max = 65535,
	  .help = "UDP game port (0 = ephemeral, tests)", .offset = OPT(game_port) },
	{ .name = "probe-port", .type = CC_CFG_INT, .default_value = "-1", .min = -1, .max = 65535,
	  .help = "TCP port on 127.0.0.1 answering GET /readyz, /healthz, /metrics (-1 = the game port's number, 0 = ephemeral)",
	  .offset = OPT(probe_port) },
	{ .name = "mode", .type = CC_CFG_ENUM, .default_value = "allocated", .choices = "allocated|community",
	  .help = "allocated: one match of a roster, reported to cc-api; community: a long-running lobby server with no "
		  "control plane (README, Community servers)",
	  .offset = OPT(mode) },
	{ .name = "server-id", .type = CC_CFG_STRING,
	  .help = "allocated, required: game_servers.id of this server; the roster and every join token must name it",
	  .offset = OPT(server_id) },
	{ .name = "roster-file", .type = CC_CFG_STRING,
	  .help = "allocated, required: roster manifest written by cc-supervisor (game/roster format, digest verified)",
	  .offset = OPT(roster_file) },
	{ .name = "join-keys", .type = CC_CFG_STRING, .secret = true,
	  .help = "allocated, required: join key set (verify only): JSON {id: base64 key} or one raw key",
	  .offset = OPT(join_keys) },
	{ .name = "api-url", .type = CC_CFG_STRING,
	  .help = "allocated, required: cc-api base URL for the server routes (receipts, result)", .offset = OPT(api_url) },
	{ .name = "workload-token", .type = CC_CFG_STRING, .secret = true,
	  .help = "allocated, required: this allocation's workload token (Authorization for the server routes)",
	  .offset = OPT(workload_token) },
	{ .name = "playlist", .type = CC_CFG_STRING, .default_value = "casual",
	  .help = "playlist of the match, as in libcommon/game/playlist.c (the roster gives slots and teams)",
	  .offset = OPT(playlist) },
	{ .name = "arena", .type = CC_CFG_STRING, .default_value = "aurora_ring",
	  .help = "arena of the match (libcommon/game/arenas.c), told to clients in the welcome", .offset = OPT(arena) },
	{ .name = "match-seconds", .type = CC_CFG_INT, .default_value = "300", .min = 5, .max = 3600,
	  .help = "regulation length; the clock banks every stoppage", .offset = OPT(match_seconds) },
	{ .name = "warmup-seconds", .type = CC_CFG_INT, .default_value = "3", .min = 0, .max = 120,
	  .help = "WARMUP before the first kickoff", .offset = OPT(warmup_seconds) },
	{ .name = "connect-window-seconds", .type = CC_CFG_INT, .default_value = "30", .min = 1, .max = 600,
	  .help = "LOADING waits this long for every roster player, then starts with those present",
	  .offset = OPT(connect_window_seconds) },
	{ .name = "goal-pause-seconds", .type = CC_CFG_INT, .default_value = "3", .min = 1, .max = 60,
	  .help = "GOAL_PAUSE after each goal (the clock is banked meanwhile)", .offset = OPT(goal_pause_seconds) },
	{ .name = "overtime-max-seconds", .type = CC_CFG_INT, .default_value = "300", .min = 0, .max = 3600,
	  .help = "golden-goal overtime after a draw ends as a draw after this (0 = only a goal ends it)",
	  .offset = OPT(overtime_max_seconds) },
	{ .name = "max-peers", .type = CC_CFG_INT, .default_value = "32", .min = 2, .max = 256,
	  .help = "connections served at once besides admitted spectators (who have --max-spectators): players (up to 8) "
		  "+ peers still in their handshake; past it a newcomer evicts the oldest silent peer or is refused server_full",
	  .offset = OPT(max_peers) },
	{ .name = "max-silent-per-address", .type = CC_CFG_INT, .default_value = "4", .min = 1, .max = 256,
	  .help = "connected peers without a hello one IP address may hold; the oldest gives way to a newer one",
	  .offset = OPT(max_silent_per_address) },
	{ .name = "input-buffer-ticks", .type = CC_CFG_INT, .default_value = "1", .min = 0, .max = 8,
	  .help = "jitter buffer target depth: inputs kept buffered per player (persistent extra depth is drained)",
	  .offset = OPT(input_buffer_ticks) },
	{ .name = "input-stall-kick-ms", .type = CC_CFG_INT, .default_value = "10000", .min = 0, .max = 600000,
	  .help = "a player whose input ran dry this long is kicked input_stalled (0 = never; never during a stall grace)",
	  .offset = OPT(input_stall_kick_ms) },
	{ .name = "stall-grace-ms", .type = CC_CFG_INT, .default_value = "3000", .min = 0, .max = 60000,
	  .help = "after the tick loop itself ran > 100 ms late, nobody is kicked for input stalls, rate limits or "
		  "handshake deadlines this long",
	  .offset = OPT(stall_grace_ms) },
	{ .name = "peer-max-packets-per-second", .type = CC_CFG_INT, .default_value = "240", .min = 10, .max = 1000000,
	  .help = "leaky bucket per peer (burst one second's worth): an honest client sends 60 inputs, a few pings and up to snapshot-rate snapshot acks a second",
	  .offset = OPT(peer_max_pps) },
	{ .name = "peer-max-bytes-per-second", .type = CC_CFG_INT, .default_value = "32768", .min = 1500, .max = 100000000,
	  .help = "leaky bucket per peer, bytes (burst one second's worth): honest input with 16-fold redundancy is ~7.5 KB/s",
	  .offset = OPT(peer_max_bps) },
	{ .name = "rate-limit-log-window-ms", .type = CC_CFG_INT, .default_value = "10000", .min = 100, .max = 3600000,
	  .help = "at most one rate_limited log line per peer per window", .offset = OPT(rate_limit_log_window_ms) },
	{ .name = "max-bad-messages", .type = CC_CFG_INT, .default_value = "8", .min = 0, .max = 100000,
	  .help = "truncated, oversized or misrouted messages a peer may send before it is kicked",
	  .offset = OPT(max_bad_messages) },
	{ .name = "handshake-timeout-ms", .type = CC_CFG_INT, .min = 100, .max = 60000,
	  .help = "a peer without an admitted hello by then is kicked (default 5000 allocated, 10000 community)",
	  .offset = OPT(handshake_timeout_ms) },
	{ .name = "snapshot-rate", .type = CC_CFG_INT, .default_value = "20", .min = 1, .max = 60,
	  .help = "snapshots per second to each client (a divisor of 60 is exact; others round)",
	  .offset = OPT(snapshot_rate) },
	{ .name = "api-timeout-ms", .type = CC_CFG_INT, .default_value = "3000", .min = 100, .max = 60000,
	  .help = "deadline of one call to cc-api", .offset = OPT(api_timeout_ms) },
	{ .name = "result-timeout-ms", .type = CC_CFG_INT, .default_value = "30000", .min = 100, .max = 180000,
	  .help = "after the match (and the end linger), keep retrying the result this long for cc-api to acknowledge "
		  "it (exit 3 if not); with --end-linger-ms it stays under cc-maintenance's result-missing window (300 s)",
	  .offset = OPT(result_timeout_ms) },
	{ .name = "heartbeat-interval-ms", .type = CC_CFG_INT, .default_value = "5000", .min = 50, .max = 60000,
	  .help = "POST heartbeat {phase, tick} this often (off the tick thread; only when the tick advanced): "
		  "cc-maintenance ends a match whose server stops sending them",
	  .offset = OPT(heartbeat_interval_ms) },
	{ .name = "slot-reserve-seconds", .type = CC_CFG_INT, .default_value = "30", .min = 0, .max = 600,
	  .help = "a player who drops keeps its slot and ship this long for a resume or a hello of the same player id; "
		  "then casual hands the ship to a bot, ranked parks it",
	  .offset = OPT(slot_reserve_seconds) },
	{ .name = "max-spectators", .type = CC_CFG_INT, .default_value = "8", .min = 0, .max = GS_MAX_SPECTATORS,
	  .help = "spectators admitted at once (a display name or a join token of this match); 0 = none",
	  .offset = OPT(max_spectators) },
	{ .name = "end-linger-ms", .type = CC_CFG_INT, .default_value = "1000", .min = 0, .max = 60000,
	  .help = "keep serving after the end so clients receive the final messages (community: then the players return "
		  "to their lobby)",
	  .offset = OPT(end_linger_ms) },
	/* Community mode only (gameserver/community.h). */
	{ .name = "max-lobbies", .type = CC_CFG_INT, .default_value = "100", .min = 1, .max = 10000,
	  .help = "community: lobbies at once; a create past it is too_many_lobbies", .offset = OPT(max_lobbies) },
	{ .name = "results-log", .type = CC_CFG_STRING,
	  .help = "community: append one JSON line per finished match to this file (default: results go nowhere)",
	  .offset = OPT(results_log) },
	{ .name = "keepalive-ms", .type = CC_CFG_INT, .default_value = "30000", .min = 1000, .max = 600000,
	  .help = "community: a registered player that sends nothing (not even a ping) this long is kicked idle_timeout",
	  .offset = OPT(keepalive_ms) },
	{ .name = "max-peer-backlog", .type = CC_CFG_INT, .default_value = "256", .min = 16, .max = 65536,
	  .help = "community: reliable messages queued or unacknowledged per peer; a send past it kicks the peer "
		  "backlog_overflow at once (a slow reader)",
	  .offset = OPT(max_peer_backlog) },
	{ .name = "lobby-requests-per-second", .type = CC_CFG_INT, .default_value = "20", .min = 1, .max = 1000,
	  .help = "community: lobby requests per peer per second (burst one second's worth), on top of the packet limits; "
		  "over it a request is dropped and counts toward the rate_limited kick",
	  .offset = OPT(lobby_rps) },
	{ .name = "lobby-countdown-ms", .type = CC_CFG_INT, .default_value = "5000", .min = 0, .max = 60000,
	  .help = "community: all ready -> the match begins this long after match_starting (SPEC 11: 5 s)",
	  .offset = OPT(lobby_countdown_ms) },
	/* Test aids (SPEC 11, issue 12), off by default. */
	CC_NETSIM_CONFIG_OPTIONS(struct gameserver_config),
	{ .name = "replay-log", .type = CC_CFG_STRING,
	  .help = "test aid: record every wire packet and verdict into this new file (mode 0600; an existing file is "
		  "refused, never overwritten; cc-replay-dump prints it)",
	  .offset = OPT(replay_log) },
	{ .name = "replay-log-max-bytes", .type = CC_CFG_INT, .default_value = "67108864", .min = GS_REPLAY_MIN_MAX_BYTES,
	  .max = 1099511627776.0, .help = "cap of --replay-log (64 MiB): at it the log ends with a truncated record",
	  .offset = OPT(replay_log_max_bytes) },
};

static const struct cc_service_spec gameserver_spec = {
	.program = "cc-gameserver",
	.summary = "Cosmic Clash game server over ENet: one 60 Hz match (--mode=allocated, the default) or a lobby server "
		   "(--mode=community). Allocated exit 0 result acknowledged, 3 not acknowledged, 4 stopped before the end, "
		   "5 match called off; community exits 0 on SIGTERM.",
	.options = gameserver_options,
	.n_options = CC_ARRAY_LEN(gameserver_options),
	.shared = CC_SERVICE_LOG,
	.shared_offset = offsetof(struct gameserver_config, svc),
};

static struct cc_service service;

struct loop_ctx {
	struct gs_server *server;
	const struct gameserver_config *cfg; /* allocated mode: the roster file to reload on SIGHUP */
	int result; /* gs_server_run's */
};

static bool load_roster(const struct gameserver_config *cfg, struct cc_roster *out);

/*
 * Also the tick thread's look at SIGHUP (blocked in every thread since
 * main's start, so it waits pending here): cc-supervisor wrote a newer
 * roster (casual backfill), which is read, verified and handed to the
 * server between two ticks.
 */
static bool stopping(void *ctx)
{
	struct loop_ctx *lc = ctx;
	sigset_t hup;
	sigemptyset(&hup);
	sigaddset(&hup, SIGHUP);
	struct timespec zero = { 0, 0 };
	if (lc && lc->cfg && sigtimedwait(&hup, NULL, &zero) == SIGHUP) {
		struct cc_roster next;
		if (load_roster(lc->cfg, &next)) {
			if (gs_server_reload_roster(lc->server, &next) != 0)
				cc_log_warn("roster_reload_kept_old", CC_LOG_STR("match_id", next.match_id));
		} else
			cc_log_warn("roster_reload_refused", CC_LOG_STR("why", "the roster file did not verify (see stderr)"));
	}
	return cc_service_stopping(&service);
}

static void *game_loop(void *arg)
{
	struct loop_ctx *lc = arg;
	lc->result = gs_server_run(lc->server, stopping, lc);
	return NULL;
}

/*
 * Waits for the reporter's queue to empty, up to timeout_ms, in slices so
 * that a SIGTERM or SIGINT (still blocked: the skeleton's) cuts it short.
 * Returns true when the queue emptied.
 */
static bool drain(struct cc_reporter *r, int64_t timeout_ms)
{
	sigset_t stop;
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	int64_t end = cc_clock_ms() + timeout_ms;
	for (;;) {
		int64_t left = end - cc_clock_ms();
		if (cc_reporter_drain(r, left < 100 ? left : 100))
			return true;
		if (left <= 100)
			return false;
		struct timespec zero = { 0, 0 };
		if (sigtimedwait(&stop, NULL, &zero) > 0) {
			cc_log_warn("drain_interrupted", CC_LOG_STR("reason", "signal"));
			return false;
		}
	}
}

/* Options one mode serves and the other refuses, by name (given as a flag or in the environment). */
static const char *const allocated_only[] = { "server-id", "roster-file", "join-keys", "api-url", "workload-token",
					      "playlist", "connect-window-seconds", "api-timeout-ms", "result-timeout-ms",
					      "heartbeat-interval-ms", "slot-reserve-seconds", "max-spectators" };
static const char *const community_only[] = { "max-lobbies", "results-log", "keepalive-ms", "max-peer-backlog",
					      "lobby-requests-per-second", "lobby-countdown-ms" };

/* True when option name was given: --name, --name=..., --name-file..., COSMIC_CLASH_NAME or COSMIC_CLASH_NAME_FILE. */
static bool given(int argc, char **argv, const char *name)
{
	size_t n = strlen(name);
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			break;
		if (strncmp(argv[i], "--", 2) == 0 && strncmp(argv[i] + 2, name, n) == 0 &&
		    (argv[i][2 + n] == '\0' || argv[i][2 + n] == '=' || strncmp(argv[i] + 2 + n, "-file", 5) == 0))
			return true;
	}
	char env[96] = "COSMIC_CLASH_";
	size_t off = strlen(env);
	for (size_t i = 0; i < n && off < sizeof env - 6; i++)
		env[off++] = name[i] == '-' ? '_' : (char)(name[i] >= 'a' && name[i] <= 'z' ? name[i] - 32 : name[i]);
	env[off] = '\0';
	const char *v = getenv(env);
	if (v && *v)
		return true;
	snprintf(env + off, sizeof env - off, "_FILE");
	v = getenv(env);
	return v && *v;
}

/* Prints every option of list that was given; returns how many. */
static int refuse_given(int argc, char **argv, const char *const *list, size_t n, const char *mode)
{
	int bad = 0;
	for (size_t i = 0; i < n; i++)
		if (given(argc, argv, list[i])) {
			fprintf(stderr, "cc-gameserver: --%s: not used by --mode=%s\n", list[i], mode);
			bad++;
		}
	return bad;
}

static struct gs_community *community_server;

static void *community_loop(void *arg)
{
	(void)arg;
	(void)gs_community_run(community_server, stopping, NULL);
	return NULL;
}

/*
 * --mode=community: no roster, join keys, workload token or cc-api; runs
 * until SIGTERM/SIGINT (exit 0).
 */
static int run_community(const struct gameserver_config *cfg, int argc, char **argv, int64_t started_ns)
{
	int status = 1;
	struct gs_replay *replay = NULL;
	struct cc_probe *probe = NULL;
	char err[256] = "";
	bool ok = refuse_given(argc, argv, allocated_only, CC_ARRAY_LEN(allocated_only), "community") == 0;
	if (!cc_arena_find(cfg->arena)) {
		fprintf(stderr, "cc-gameserver: --arena: not an arena of libcommon/game/arenas.c\n");
		ok = false;
	}
	/* A newcomer gets every lobby at once after its welcome: that must fit its backlog with room to spare. */
	if (cfg->max_peer_backlog < cfg->max_lobbies + 64) {
		fprintf(stderr, "cc-gameserver: --max-peer-backlog: %lld is under --max-lobbies + 64 (%lld): a newcomer's "
				"lobby snapshot would overflow it\n",
			(long long)cfg->max_peer_backlog, (long long)(cfg->max_lobbies + 64));
		ok = false;
	}
	if (ok && cfg->replay_log && gs_replay_open(cfg->replay_log, cfg->replay_log_max_bytes, &replay, err, sizeof err) != 0) {
		fprintf(stderr, "cc-gameserver: %s\n", err);
		ok = false;
	}
	if (!ok) {
		fprintf(stderr, "cc-gameserver: see --help\n");
		return 2;
	}
	cc_service_start(&service);
	if (enet_initialize() != 0) {
		cc_log_error("start_failed", CC_LOG_STR("reason", "enet_initialize"));
		(void)gs_replay_close(replay);
		return 1;
	}
	int interval = (int)((60 + cfg->snapshot_rate / 2) / cfg->snapshot_rate);
	struct gs_community_options co = {
		.bind = cfg->bind, .port = (int)cfg->game_port, .max_peers = (int)cfg->max_peers,
		.max_silent_per_address = (int)cfg->max_silent_per_address, .max_bad_messages = (int)cfg->max_bad_messages,
		.handshake_timeout_ms = cfg->handshake_timeout_ms ? (int)cfg->handshake_timeout_ms : 10000,
		.keepalive_ms = cfg->keepalive_ms, .snapshot_interval = interval < 1 ? 1 : interval, .arena = cfg->arena,
		.started_ns = started_ns, .end_linger_ms = cfg->end_linger_ms, .peer_max_pps = (int)cfg->peer_max_pps,
		.peer_max_bps = (int)cfg->peer_max_bps, .rate_log_window_ms = cfg->rate_limit_log_window_ms,
		.lobby_rps = (int)cfg->lobby_rps, .input_stall_kick_ms = cfg->input_stall_kick_ms,
		.stall_grace_ms = cfg->stall_grace_ms, .replay = replay, .max_lobbies = (int)cfg->max_lobbies,
		.max_backlog = (int)cfg->max_peer_backlog, .countdown_ms = cfg->lobby_countdown_ms,
		.match_seconds = cfg->match_seconds, .warmup_seconds = cfg->warmup_seconds,
		.goal_pause_seconds = cfg->goal_pause_seconds, .overtime_max_seconds = cfg->overtime_max_seconds,
		.results_log = cfg->results_log,
		.netsim = { .latency_ms = (int)cfg->net_sim_latency, .jitter_ms = (int)cfg->net_sim_jitter,
			    .loss_pct = cfg->net_sim_loss, .dup_pct = cfg->net_sim_dup, .seed = (uint64_t)cfg->net_sim_seed },
	};
	co.input = GS_INPUT_OPTIONS_DEFAULT;
	co.input.target_depth = (int)cfg->input_buffer_ticks;
	if (cc_netsim_active(&co.netsim))
		cc_log_warn("net_sim_on", CC_LOG_STR("why", "test aid: every packet is delayed, lost or duplicated on purpose"),
			    CC_LOG_INT("latency_ms", co.netsim.latency_ms), CC_LOG_INT("jitter_ms", co.netsim.jitter_ms),
			    CC_LOG_DBL("loss_pct", co.netsim.loss_pct), CC_LOG_DBL("dup_pct", co.netsim.dup_pct),
			    CC_LOG_INT("seed", (int64_t)co.netsim.seed));
	community_server = gs_community_create(&co);
	if (!community_server)
		goto out;
	int port = gs_community_port(community_server);
	probe = cc_probe_start(cfg->probe_port < 0 ? port : (int)cfg->probe_port, gs_community_ready, community_server);
	if (!probe)
		goto out;
	cc_log_info("started", CC_LOG_STR("mode", "community"), CC_LOG_STR("bind", cfg->bind), CC_LOG_INT("game_port", port),
		    CC_LOG_INT("probe_port", cc_probe_port(probe)), CC_LOG_INT("protocol_version", GS_PROTOCOL_VERSION),
		    CC_LOG_INT("max_lobbies", cfg->max_lobbies), CC_LOG_INT("max_peers", cfg->max_peers),
		    CC_LOG_INT("max_peer_backlog", cfg->max_peer_backlog), CC_LOG_INT("keepalive_ms", cfg->keepalive_ms),
		    CC_LOG_INT("handshake_timeout_ms", co.handshake_timeout_ms), CC_LOG_INT("countdown_ms", co.countdown_ms),
		    CC_LOG_INT("match_seconds", cfg->match_seconds), CC_LOG_STR("results_log", cfg->results_log ? cfg->results_log : ""),
		    CC_LOG_INT("snapshot_interval_ticks", co.snapshot_interval));
	status = cc_service_run(&service, community_loop, NULL);
out:
	cc_probe_stop(probe);
	gs_community_free(community_server);
	community_server = NULL;
	(void)gs_replay_close(replay);
	enet_deinitialize();
	return status;
}

/*
 * Reads and verifies the roster manifest: digest, and that it is for this
 * server. Prints the problem and returns false.
 */
static bool load_roster(const struct gameserver_config *cfg, struct cc_roster *out)
{
	char *text = NULL;
	size_t len = 0;
	struct cc_file_error ferr;
	int rc = cc_file_read(cfg->roster_file, CC_ROSTER_MANIFEST_MAX, CC_FILE_REGULAR_ONLY, &text, &len, &ferr);
	if (rc != 0) {
		fprintf(stderr, "cc-gameserver: --roster-file: cannot read '%s': %s\n", cfg->roster_file,
			rc == CC_ETOOBIG ? "larger than the manifest cap" : cc_strerror(rc));
		return false;
	}
	enum cc_token_refusal why = CC_TOKEN_OK;
	struct cc_json_error jerr = { { 0 }, { 0 } };
	char digest[CC_SHA256_HEX_LEN + 1];
	rc = cc_roster_manifest_parse(text, len, out, digest, &why, &jerr);
	free(text);
	if (rc != 0) {
		fprintf(stderr, "cc-gameserver: --roster-file: '%s' refused (%s): %s%s%s\n", cfg->roster_file,
			cc_token_refusal_name(why), jerr.field, jerr.field[0] ? ": " : "", jerr.message);
		return false;
	}
	if (strcmp(out->server_id, cfg->server_id) != 0) {
		fprintf(stderr, "cc-gameserver: --roster-file: the roster is for server '%s', not --server-id\n",
			cc_server_id_valid(out->server_id) ? out->server_id : "?");
		return false;
	}
	cc_log_info("roster_loaded", CC_LOG_STR("match_id", out->match_id), CC_LOG_STR("allocation_id", out->allocation_id),
		    CC_LOG_INT("players", (int64_t)out->count), CC_LOG_STR("digest", digest));
	return true;
}

int main(int argc, char **argv)
{
	struct gameserver_config cfg = { 0 };
	struct cc_roster roster;
	struct cc_keyset *keys = NULL;
	struct gs_admission *admission = NULL;
	struct gs_match *match = NULL;
	struct cc_reporter *reporter = NULL;
	struct cc_probe *probe = NULL;
	struct gs_replay *replay = NULL;
	struct loop_ctx lc = { 0 };
	bool enet_up = false;
	int status = 1;
	char err[256] = "";

	int64_t started_ns = cc_clock_ns();
	cc_service_load_or_exit(&service, &gameserver_spec, argc, argv, &cfg, NULL);
	if (cc_crypto_init() != 0) {
		fprintf(stderr, "cc-gameserver: libsodium did not initialise\n");
		goto out;
	}
	if (strcmp(cfg.mode, "community") == 0) {
		status = run_community(&cfg, argc, argv, started_ns);
		goto out;
	}
	/* SIGHUP (a newer roster: casual backfill) waits pending for the tick thread, in every thread's mask. */
	sigset_t hup;
	sigemptyset(&hup);
	sigaddset(&hup, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &hup, NULL);
	lc.cfg = &cfg;
	/* Everything the options imply is checked before anything starts; each problem is printed. */
	bool ok = refuse_given(argc, argv, community_only, CC_ARRAY_LEN(community_only), "allocated") == 0;
	static const struct {
		const char *name;
		size_t offset;
	} required[] = { { "server-id", OPT(server_id) }, { "roster-file", OPT(roster_file) }, { "join-keys", OPT(join_keys) },
			 { "api-url", OPT(api_url) }, { "workload-token", OPT(workload_token) } };
	for (size_t i = 0; i < CC_ARRAY_LEN(required); i++)
		if (!*(char **)((char *)&cfg + required[i].offset)) {
			fprintf(stderr, "cc-gameserver: --%s: required in allocated mode\n", required[i].name);
			ok = false;
		}
	if (!cfg.handshake_timeout_ms)
		cfg.handshake_timeout_ms = 5000;
	if (!ok) {
		fprintf(stderr, "cc-gameserver: see --help\n");
		status = 2;
		goto out;
	}
	const struct cc_playlist *pl = cc_playlist_find(cfg.playlist);
	if (!pl) {
		char names[128];
		(void)cc_playlist_names(names, sizeof names, "|");
		fprintf(stderr, "cc-gameserver: --playlist: not one of %s\n", names);
		ok = false;
	}
	if (!cc_arena_find(cfg.arena)) {
		fprintf(stderr, "cc-gameserver: --arena: not an arena of libcommon/game/arenas.c\n");
		ok = false;
	}
	if (!cc_server_id_valid(cfg.server_id)) {
		fprintf(stderr, "cc-gameserver: --server-id: 1..128 bytes of [A-Za-z0-9._-]\n");
		ok = false;
	}
	if (strncmp(cfg.api_url, "http://", 7) != 0 && strncmp(cfg.api_url, "https://", 8) != 0) {
		fprintf(stderr, "cc-gameserver: --api-url: must start with http:// or https://\n");
		ok = false;
	}
	if (cc_keyset_parse("--join-keys", cfg.join_keys, strlen(cfg.join_keys), &keys, err, sizeof err) != 0) {
		fprintf(stderr, "cc-gameserver: %s\n", err);
		ok = false;
	}
	if (ok && !load_roster(&cfg, &roster))
		ok = false;
	/* Last: it creates the file, which must not be left behind by another option's mistake. */
	if (ok && cfg.replay_log && gs_replay_open(cfg.replay_log, cfg.replay_log_max_bytes, &replay, err, sizeof err) != 0) {
		fprintf(stderr, "cc-gameserver: %s\n", err);
		ok = false;
	}
	if (!ok) {
		fprintf(stderr, "cc-gameserver: see --help\n");
		status = 2;
		goto out;
	}
	cc_service_start(&service);
	if (enet_initialize() != 0) {
		cc_log_error("start_failed", CC_LOG_STR("reason", "enet_initialize"));
		goto out;
	}
	enet_up = true;
	admission = gs_admission_create(keys, &roster, cfg.server_id, cfg.slot_reserve_seconds * 1000);
	keys = NULL; /* the admission owns it now, even on failure */
	struct gs_match_options mo = { .expected = (int)roster.count, .match_seconds = cfg.match_seconds,
				       .warmup_seconds = cfg.warmup_seconds,
				       .connect_window_seconds = cfg.connect_window_seconds,
				       .goal_pause_seconds = cfg.goal_pause_seconds,
				       .overtime_max_seconds = cfg.overtime_max_seconds };
	for (size_t i = 0; i < roster.count; i++) {
		const struct cc_roster_entry *e = &roster.entries[i];
		mo.teams[e->slot] = (uint8_t)e->team;
		if (e->slot + 1 > mo.n_slots)
			mo.n_slots = e->slot + 1;
	}
	match = gs_match_create(&mo);
	reporter = cc_reporter_start(cfg.api_url, cfg.server_id, cfg.workload_token, cfg.api_timeout_ms);
	if (reporter && cc_reporter_heartbeat_start(reporter, cfg.heartbeat_interval_ms) != 0) {
		cc_reporter_free(reporter);
		reporter = NULL;
	}
	if (!admission || !match || !reporter) {
		cc_log_error("start_failed", CC_LOG_STR("reason", match ? "out of memory"
								 : "the roster does not fit the simulation (slots 0..7, two teams of at most 4)"));
		gs_admission_free(admission);
		gs_match_free(match);
		goto out;
	}
	int interval = (int)((60 + cfg.snapshot_rate / 2) / cfg.snapshot_rate);
	struct gs_server_options so = { .bind = cfg.bind, .port = (int)cfg.game_port, .max_peers = (int)cfg.max_peers,
					.max_bad_messages = (int)cfg.max_bad_messages,
					.handshake_timeout_ms = (int)cfg.handshake_timeout_ms,
					.snapshot_interval = interval < 1 ? 1 : interval, .end_linger_ms = cfg.end_linger_ms,
					.arena = cfg.arena, .started_ns = started_ns, .replay = replay,
					.peer_max_pps = (int)cfg.peer_max_pps, .peer_max_bps = (int)cfg.peer_max_bps,
					.rate_log_window_ms = cfg.rate_limit_log_window_ms,
					.max_silent_per_address = (int)cfg.max_silent_per_address,
					.input_stall_kick_ms = cfg.input_stall_kick_ms, .stall_grace_ms = cfg.stall_grace_ms,
					.max_spectators = (int)cfg.max_spectators, .bots = !pl->ranked, .spectators_by_name = !pl->ranked,
					.call_off_on_no_show = pl->ranked,
					.result_deadline_ms = cfg.end_linger_ms + cfg.result_timeout_ms,
					.netsim = { .latency_ms = (int)cfg.net_sim_latency, .jitter_ms = (int)cfg.net_sim_jitter,
						    .loss_pct = cfg.net_sim_loss, .dup_pct = cfg.net_sim_dup,
						    .seed = (uint64_t)cfg.net_sim_seed } };
	if (cc_netsim_active(&so.netsim))
		cc_log_warn("net_sim_on", CC_LOG_STR("why", "test aid: every packet is delayed, lost or duplicated on purpose"),
			    CC_LOG_INT("latency_ms", so.netsim.latency_ms), CC_LOG_INT("jitter_ms", so.netsim.jitter_ms),
			    CC_LOG_DBL("loss_pct", so.netsim.loss_pct), CC_LOG_DBL("dup_pct", so.netsim.dup_pct),
			    CC_LOG_INT("seed", (int64_t)so.netsim.seed));
	so.input = GS_INPUT_OPTIONS_DEFAULT;
	so.input.target_depth = (int)cfg.input_buffer_ticks;
	if (replay)
		cc_log_info("replay_log_on", CC_LOG_STR("path", cfg.replay_log), CC_LOG_INT("max_bytes", cfg.replay_log_max_bytes));
	lc.server = gs_server_create(&so, admission, match, reporter);
	admission = NULL;
	match = NULL;
	if (!lc.server)
		goto out;
	int port = gs_server_port(lc.server);
	probe = cc_probe_start(cfg.probe_port < 0 ? port : (int)cfg.probe_port, gs_server_ready, lc.server);
	if (!probe)
		goto out;
	cc_log_info("started", CC_LOG_STR("server_id", cfg.server_id), CC_LOG_STR("match_id", roster.match_id),
		    CC_LOG_STR("bind", cfg.bind), CC_LOG_INT("game_port", port), CC_LOG_INT("probe_port", cc_probe_port(probe)),
		    CC_LOG_STR("playlist", pl->name), CC_LOG_INT("team_size", pl->team_size),
		    CC_LOG_INT("protocol_version", GS_PROTOCOL_VERSION), CC_LOG_INT("snapshot_interval_ticks", so.snapshot_interval),
		    CC_LOG_INT("slot_reserve_seconds", cfg.slot_reserve_seconds), CC_LOG_INT("max_spectators", cfg.max_spectators),
		    CC_LOG_BOOL("bots", so.bots), CC_LOG_INT("heartbeat_interval_ms", cfg.heartbeat_interval_ms),
		    CC_LOG_INT("result_retry_ms", so.result_deadline_ms));
	lc.result = 1;
	status = cc_service_run(&service, game_loop, &lc);
	if (status == 0 && lc.result == GS_RUN_CALLED_OFF) {
		/* No result: the players' disconnect receipts (and a no_show) still go, within the result's time. */
		bool sent = drain(reporter, cfg.result_timeout_ms);
		cc_log_warn("exiting_called_off", CC_LOG_STR("reason", gs_server_called_off(lc.server)),
			    CC_LOG_BOOL("reports_sent", sent), CC_LOG_INT("no_show_acknowledged", (int64_t)cc_reporter_succeeded(reporter, "no_show")));
		status = 5;
	} else if (status == 0 && lc.result == GS_RUN_ENDED) {
		/* The match ended: the result must reach cc-api before we go. */
		if (!drain(reporter, cfg.result_timeout_ms) || cc_reporter_succeeded(reporter, "result") == 0) {
			cc_log_error("result_not_acknowledged", CC_LOG_INT("timeout_ms", cfg.result_timeout_ms));
			status = 3;
		}
	} else if (status == 0) {
		status = 4; /* stopped before the end */
		(void)drain(reporter, 2000); /* disconnect receipts, best effort */
	}
out:
	cc_probe_stop(probe);
	gs_server_free(lc.server);
	(void)gs_replay_close(replay); /* a write error was logged when it happened */
	cc_reporter_free(reporter);
	cc_keyset_free(keys);
	if (enet_up)
		enet_deinitialize();
	cc_service_release(&service);
	return status;
}
