/*
 * cc-player: simulated players and load generator for cc-api.
 *
 * main() reads the option table, splits --regions, and runs the chosen
 * mode (demo.c or bench.c). Everything but the mode's result goes to
 * stderr as JSON log lines, so stdout carries only the summary a script
 * reads.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <curl/curl.h>

#include "sys/charset.h"
#include "sys/config.h"
#include "sys/log.h"
#include "sys/netsim.h"
#include "client.h"
#include "player.h"
#include "sys/banned.h"

#define OPT(field) offsetof(struct player_config, field)

static const struct cc_config_option player_options[] = {
	{ .name = "api-url", .type = CC_CFG_STRING, .default_value = "http://127.0.0.1:8080",
	  .help = "base URL of cc-api (or cc-testkit-api), or up to 8 of them separated by commas: the replicas "
		  "behind a load balancer (thread i starts on URL i mod n and moves to the next when a connection "
		  "fails)",
	  .offset = OPT(api_url) },
	{ .name = "mode", .type = CC_CFG_ENUM, .default_value = "demo", .choices = "demo|heartbeat-bench",
	  .help = "demo: players log in, probe, queue and play matchmaking through; heartbeat-bench: measure heartbeats",
	  .offset = OPT(mode) },
	{ .name = "players", .type = CC_CFG_INT, .default_value = "60", .min = 1, .max = 100000,
	  .help = "simulated players", .offset = OPT(players) },
	{ .name = "threads", .type = CC_CFG_INT, .default_value = "8", .min = 1, .max = 1024,
	  .help = "worker threads, each with one kept-alive connection (the bench's concurrency)",
	  .offset = OPT(threads) },
	{ .name = "duration-seconds", .type = CC_CFG_INT, .default_value = "10", .min = 1, .max = 3600,
	  .help = "heartbeat-bench: measured seconds", .offset = OPT(duration_seconds) },
	{ .name = "warmup-seconds", .type = CC_CFG_INT, .default_value = "1", .min = 0, .max = 600,
	  .help = "heartbeat-bench: seconds run before measuring starts", .offset = OPT(warmup_seconds) },
	{ .name = "rate", .type = CC_CFG_DOUBLE, .default_value = "0", .min = 0, .max = 1000000,
	  .help = "heartbeat-bench: total requests/s, paced (open loop; latency counts from the planned send "
		  "time); 0 = closed loop",
	  .offset = OPT(rate) },
	{ .name = "regions", .type = CC_CFG_STRING, .default_value = "local",
	  .help = "comma-separated regions to probe (the bench probes the first)", .offset = OPT(regions) },
	{ .name = "playlist", .type = CC_CFG_ENUM, .default_value = "casual", .choices = "casual|ranked",
	  .help = "heartbeat-bench: playlist to queue for", .offset = OPT(playlist) },
	{ .name = "ranked-percent", .type = CC_CFG_INT, .default_value = "40", .min = 0, .max = 100,
	  .help = "demo: share of the players that queue for ranked (spread evenly by index); the rest queue "
		  "for casual",
	  .offset = OPT(ranked_percent) },
	{ .name = "casual-match-size", .type = CC_CFG_INT, .default_value = "6", .min = 2, .max = 64,
	  .help = "demo: players in a casual match (as cc-matcher --playlist=casual forms them); fewer players "
		  "left waiting than this give up at once",
	  .offset = OPT(casual_match_size) },
	{ .name = "ranked-match-size", .type = CC_CFG_INT, .default_value = "2", .min = 2, .max = 64,
	  .help = "demo: players in a ranked match (as cc-matcher --playlist=ranked forms them)",
	  .offset = OPT(ranked_match_size) },
	{ .name = "decline-percent", .type = CC_CFG_INT, .default_value = "5", .min = 0, .max = 100,
	  .help = "demo: chance that a player declines a proposal (decided from --seed, the player and the "
		  "proposal's ordinal, so a seed always picks the same decliners)",
	  .offset = OPT(decline_percent) },
	{ .name = "party-size", .type = CC_CFG_INT, .default_value = "0", .min = 0, .max = 3,
	  .help = "demo: the first N players form a party (POST /v1/parties, join by code) and its leader queues "
		  "it for casual (POST /v1/parties/{id}/queue); they must share a worker thread (--threads=1)",
	  .offset = OPT(party_size) },
	{ .name = "decision-seed", .type = CC_CFG_INT, .default_value = "-1", .min = -1, .max = 2147483647,
	  .help = "demo: seeds the decline decisions and heartbeat jitter on its own (-1 = --seed), so a test can "
		  "keep fresh players and fixed decliners",
	  .offset = OPT(decision_seed) },
	{ .name = "ticket-poll-ms", .type = CC_CFG_INT, .default_value = "250", .min = 10, .max = 60000,
	  .help = "demo: how often a waiting player re-reads its ticket (and its pending assignment) when it polls",
	  .offset = OPT(ticket_poll_ms) },
	{ .name = "events", .type = CC_CFG_ENUM, .default_value = "auto", .choices = "auto|stream|poll",
	  .help = "demo: stream: each player opens GET /v1/events with its session token and acts on its events "
		  "(resuming with ?after= when the stream drops), re-reading its ticket only every "
		  "--events-reread-ms; poll: re-read the ticket every --ticket-poll-ms; auto: the stream, and "
		  "polling when the upgrade is refused with anything but 401 (404 of a server without the route, "
		  "429, 503, no connection)",
	  .offset = OPT(events) },
	{ .name = "events-reread-ms", .type = CC_CFG_INT, .default_value = "5000", .min = 100, .max = 600000,
	  .help = "demo, with the stream: the slow safety re-read of the ticket (and of a pending assignment), "
		  "so a lost event cannot strand a player",
	  .offset = OPT(events_reread_ms) },
	{ .name = "heartbeat-interval-ms", .type = CC_CFG_INT, .default_value = "1000", .min = 100, .max = 20000,
	  .help = "demo: a waiting player heartbeats every this much plus a seeded jitter of up to as much again",
	  .offset = OPT(heartbeat_interval_ms) },
	{ .name = "match-deadline-seconds", .type = CC_CFG_INT, .default_value = "30", .min = 1, .max = 3600,
	  .help = "demo: a player still queued this long after matching began cancels (one in a proposal "
		  "answers it first); one still waiting 15 s later is an error",
	  .offset = OPT(match_deadline_seconds) },
	{ .name = "build", .type = CC_CFG_STRING, .default_value = "dev",
	  .help = "client build sent when queueing", .offset = OPT(build) },
	{ .name = "protocol-version", .type = CC_CFG_INT, .default_value = "1", .min = 1, .max = 2147483647,
	  .help = "game protocol version sent when queueing", .offset = OPT(protocol_version) },
	{ .name = "seed", .type = CC_CFG_INT, .default_value = "1", .min = 0, .max = 2147483647,
	  .help = "names the players (login ticket player-<seed>-<index>, bench-<seed>-<index> in the bench): "
		  "a new seed, new players",
	  .offset = OPT(seed) },
	{ .name = "hex-tickets", .type = CC_CFG_BOOL, .default_value = "false",
	  .help = "send each login ticket as the hex digits of that name, the shape cc-api's real Steam login "
		  "requires (e.g. the disposable stack's cc-api and fake Steam); off: the name itself, for "
		  "cc-testkit-api",
	  .offset = OPT(hex_tickets) },
	{ .name = "timeout-ms", .type = CC_CFG_INT, .default_value = "10000", .min = 100, .max = 600000,
	  .help = "deadline of one request", .offset = OPT(timeout_ms) },
	{ .name = "retry-horizon-ms", .type = CC_CFG_INT, .default_value = "10000", .min = 0, .max = 600000,
	  .help = "a call whose answer is retryable (503 retryable) or whose connection fails is sent again, "
		  "with jittered exponential backoff, for up to this long from its first attempt; then the "
		  "player gives up (demo: and cancels its ticket). 0 = never retry",
	  .offset = OPT(retry_horizon_ms) },
	{ .name = "abandon-horizon-ms", .type = CC_CFG_INT, .default_value = "-1", .min = -1, .max = 600000,
	  .help = "demo: how long a player that gave up keeps retrying the cancel of its ticket on the way out "
		  "(a game client quitting: an outage that made it give up is often still going). -1 = the same as "
		  "--retry-horizon-ms",
	  .offset = OPT(abandon_horizon_ms) },
	{ .name = "max-samples", .type = CC_CFG_INT, .default_value = "20000000", .min = 1000, .max = 64000000,
	  .help = "heartbeat-bench: latency samples kept (all of them, for exact percentiles)",
	  .offset = OPT(max_samples) },
	{ .name = "play", .type = CC_CFG_BOOL, .default_value = "false",
	  .help = "demo: a matched player fetches its assignment (GET /v1/matches/{id}/assignment), connects to the "
		  "game server over ENet with its join token, plays the match with the ball-chasing policy at 60 Hz, "
		  "checks its snapshots against the final score and leaves; the summary adds per-stage latencies",
	  .offset = OPT(play) },
	{ .name = "game-threads", .type = CC_CFG_INT, .default_value = "1", .min = 1, .max = 64,
	  .help = "demo --play: threads driving the games, each with one ENet host (one socket) for its share of "
		  "the players",
	  .offset = OPT(game_threads) },
	{ .name = "game-deadline-seconds", .type = CC_CFG_INT, .default_value = "600", .min = 1, .max = 86400,
	  .help = "demo --play: a player whose game has not ended this long after its assignment fails",
	  .offset = OPT(game_deadline_seconds) },
	{ .name = "assignment-timeout-seconds", .type = CC_CFG_INT, .default_value = "60", .min = 1, .max = 3600,
	  .help = "demo --play: a matched player whose assignment is still pending this long fails",
	  .offset = OPT(assignment_timeout_seconds) },
	{ .name = "summary-timeout-seconds", .type = CC_CFG_INT, .default_value = "30", .min = 1, .max = 3600,
	  .help = "demo --play: after the games, each player who played reads its match (GET /v1/matches/{id}, "
		  "every --ticket-poll-ms) until it is COMPLETED or FAILED, and logs it (event match_summary: score, "
		  "winner, end reason, and in ranked its rating before and after); a match still not over this long "
		  "after the games ended fails",
	  .offset = OPT(summary_timeout_seconds) },
	/* demo --play: each game thread's link draws from its own stream (seed, thread), so a run reproduces. */
	CC_NETSIM_CONFIG_OPTIONS(struct player_config),
	{ .name = "community", .type = CC_CFG_STRING, .default_value = "",
	  .help = "community mode: HOST:PORT of a community server (cc-gameserver --mode=community); --players "
		  "connect with display names, create and join lobbies of --lobby-size, ready up, play "
		  "--community-rounds matches (back to the lobby after each), leave, and print one summary line; "
		  "no cc-api is used (\"\": off)",
	  .offset = OPT(community) },
	{ .name = "lobby-size", .type = CC_CFG_INT, .default_value = "4", .min = 2, .max = 16,
	  .help = "community: players per lobby (players / lobby-size lobbies; a remainder is spread over them, one "
		  "each)",
	  .offset = OPT(lobby_size) },
	{ .name = "community-rounds", .type = CC_CFG_INT, .default_value = "1", .min = 1, .max = 16,
	  .help = "community: matches each lobby plays before its players leave", .offset = OPT(community_rounds) },
	{ .name = "log-level", .type = CC_CFG_ENUM, .default_value = "warn", .choices = "debug|info|warn|error",
	  .help = "lowest level logged to stderr", .offset = OPT(log_level) },
};

static const struct cc_config_spec player_spec = {
	.program = "cc-player",
	.summary = "Simulated players and heartbeat load generator for cc-api (test tooling).",
	.options = player_options,
	.n_options = CC_ARRAY_LEN(player_options),
};

/* Splits --regions into cfg->region; false when a name is empty, too long or too many. */
static bool split_regions(struct player_config *cfg)
{
	const char *p = cfg->regions;
	cfg->n_regions = 0;
	while (*p) {
		size_t n = strcspn(p, ",");
		if (n == 0 || n > PC_REGION_MAX || cfg->n_regions == PC_MAX_REGIONS)
			return false;
		if (!cc_charset_all(p, n, CC_CHARSET_LOWER | CC_CHARSET_DIGIT, "-"))
			return false;
		memcpy(cfg->region[cfg->n_regions], p, n);
		cfg->region[cfg->n_regions++][n] = '\0';
		p += n;
		if (*p == ',' && *++p == '\0')
			return false;
	}
	return cfg->n_regions > 0;
}

int main(int argc, char **argv)
{
	struct player_config cfg = { 0 };
	enum cc_log_level level = CC_LOG_WARN;
	char *const *positional;
	int status = 2;

	cc_config_load_or_exit(&player_spec, argc, argv, &cfg, &positional);
	(void)cc_log_level_parse(cfg.log_level, &level);
	cc_log_init(player_spec.program, level);
	if (!split_regions(&cfg)) {
		fprintf(stderr, "cc-player: --regions: expected 1-%d comma-separated names of [a-z0-9-]{1,%d}\n",
			PC_MAX_REGIONS, PC_REGION_MAX);
		goto out;
	}
	if (strcmp(cfg.mode, "heartbeat-bench") == 0 && cfg.players < cfg.threads) {
		fprintf(stderr, "cc-player: --players (%lld) must be at least --threads (%lld): each thread owns "
			"its players\n", (long long)cfg.players, (long long)cfg.threads);
		goto out;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		fprintf(stderr, "cc-player: libcurl initialisation failed\n");
		status = 1;
		goto out;
	}
	struct pc_client *probe = pc_client_new(cfg.api_url, 1000, 0);
	if (!probe) {
		fprintf(stderr, "cc-player: --api-url: expected 1-%d comma-separated http:// or https:// base URLs of "
			"at most %d bytes each\n", PC_MAX_URLS, PC_CLIENT_URL_MAX / 2 - 1);
		curl_global_cleanup();
		goto out;
	}
	pc_client_free(probe);
	cc_config_log(&player_spec, &cfg);
	status = cfg.community[0]		 ? pc_community_run(&cfg)
		 : strcmp(cfg.mode, "demo") == 0 ? pc_demo_run(&cfg)
						 : pc_bench_run(&cfg);
	curl_global_cleanup();
out:
	cc_config_release(&player_spec, &cfg);
	return status;
}
