/*
 * player.h - what cc-player's parts share: the configuration (filled once
 * in main.c from its option table, read-only afterwards, so every thread
 * reads it without locks) and the two modes.
 *
 * cc-player is the simulated-player client and load generator (SPEC 1:
 * tests/). It talks to cc-api (or cc-testkit-api, whose fake login accepts
 * the made-up tickets "player-<seed>-<index>") over REST and each player's
 * GET /v1/events stream, exactly as a game client would. It is test
 * tooling: `make install` never installs it.
 */
#ifndef PC_PLAYER_H
#define PC_PLAYER_H

#include <stdbool.h>
#include <stdint.h>

#include "sys/cc.h"

#define PC_MAX_REGIONS 16
#define PC_REGION_MAX 32

struct player_config {
	char *api_url;             /* cc-api base URL, or a comma-separated list of replicas */
	char *mode;                /* demo | heartbeat-bench */
	int64_t players;           /* simulated players */
	int64_t threads;           /* worker threads = concurrent connections */
	int64_t duration_seconds;  /* bench: measured time */
	int64_t warmup_seconds;    /* bench: time run before measuring */
	double rate;               /* bench: total requests/s, paced (0 = closed loop, as fast as answered) */
	char *regions;             /* comma-separated regions to probe */
	char *playlist;            /* bench: casual | ranked */
	char *build;               /* client build string sent when queueing */
	int64_t protocol_version;  /* game protocol version sent when queueing */
	int64_t seed;              /* names the players: login ticket "player|bench-<seed>-<index>" */
	bool hex_tickets;          /* send that name hex-encoded, as real Steam tickets look */
	int64_t ranked_percent;    /* demo: share of players queueing for ranked */
	int64_t casual_match_size; /* demo: players per casual match */
	int64_t ranked_match_size; /* demo: players per ranked match */
	int64_t decline_percent;   /* demo: chance of declining a proposal */
	int64_t party_size;        /* demo: players 0..party_size-1 queue casual as one party (0/1: none) */
	int64_t decision_seed;     /* demo: seeds declines and jitter; -1 = seed */
	int64_t ticket_poll_ms;    /* demo: ticket re-read period while waiting (polling) */
	char *events;              /* demo: auto | stream | poll: where a player learns of its ticket's changes */
	int64_t events_reread_ms;  /* demo, with the stream: the slow safety re-read of the ticket */
	int64_t heartbeat_interval_ms; /* demo: heartbeat period (plus up to as much jitter) */
	int64_t match_deadline_seconds; /* demo: queued this long after matching began: cancel */
	int64_t timeout_ms;        /* whole deadline of one request */
	int64_t retry_horizon_ms;  /* a call retries retryable answers and connection failures this long */
	int64_t abandon_horizon_ms; /* demo: the way-out cancel's retry horizon; -1 = retry_horizon_ms */
	int64_t max_samples;       /* bench: latency samples kept in all (exact percentiles) */
	char *log_level;           /* debug|info|warn|error */
	bool play;                 /* demo: matched players fetch their assignment and play over ENet (game.h) */
	int64_t game_threads;      /* demo --play: game threads, one ENet host each */
	int64_t game_deadline_seconds;      /* demo --play: a game still going this long after its assignment fails */
	int64_t assignment_timeout_seconds; /* demo --play: a matched player without an assignment this long fails */
	int64_t summary_timeout_seconds;    /* demo --play: a played match whose summary shows no end this long fails */
	int64_t net_sim_latency;   /* demo --play: simulated one-way latency, ms (sys/netsim; all 0 = off) */
	int64_t net_sim_jitter;    /* +- ms */
	double net_sim_loss;       /* percent */
	double net_sim_dup;        /* percent */
	int64_t net_sim_seed;
	char *community;           /* community mode: HOST:PORT of a cc-gameserver --mode=community ("" = off) */
	int64_t lobby_size;        /* community: players per lobby (a remainder is spread over the lobbies) */
	int64_t community_rounds;  /* community: matches each lobby plays before everyone leaves */

	/* Derived from the options by main.c. */
	int n_regions;
	char region[PC_MAX_REGIONS][PC_REGION_MAX + 1];
};

/*
 * Runs the demo (see demo.c): every player logs in, probes every region,
 * opens its event stream (--events; events.h), queues for casual or
 * ranked, then heartbeats and follows its ticket (its events, or polling),
 * answers the proposals cc-matcher makes (accepting most, declining a
 * seeded few) until its ticket is MATCHED, or gives up when no match can
 * form any more; with --play a matched player then fetches its
 * assignment and plays the match over ENet (game.h); then one summary line
 * goes to stdout. Returns the exit
 * status: 0 when nothing unexpected happened, 1 otherwise.
 */
int pc_demo_run(const struct player_config *cfg);

/*
 * Runs the heartbeat benchmark: sets up cfg->players QUEUED players, then
 * cfg->threads threads heartbeat their own players round-robin for
 * warmup + duration seconds (closed loop, or paced to cfg->rate requests/s
 * in all), and prints key=value lines to stdout. Returns the exit status:
 * 0, or 1 when set-up failed or any request failed.
 */
int pc_bench_run(const struct player_config *cfg);

/*
 * Community mode (community.c, issue 23): cfg->players players on the
 * community server cfg->community, no cc-api: connect with a display name,
 * create and join lobbies of cfg->lobby_size, ready up, play
 * cfg->community_rounds matches, return to the lobby after each, leave;
 * one JSON summary line on stdout. Returns 0 when all went as expected,
 * 1 otherwise, 2 on a bad --community.
 */
int pc_community_run(const struct player_config *cfg);

#endif
