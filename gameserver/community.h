/*
 * community.h - cc-gameserver's community mode (SPEC 11, protocol section
 * 11): one long-running ENet host with player-made lobbies that start real
 * matches, no control plane. Runs until stopping(ctx).
 *
 * Peers. A peer connects and says hello {auth 2, name}; the name registers
 * it (game/lobby.h: a member id, never reused) and it gets a welcome (mode
 * 2, slot and team 255, match_state LOBBY), then the current state of
 * every lobby as lobby_updated. A token (auth 1) is refused wrong_mode, a
 * name that breaks the name rules invalid_name, spectate and resume are
 * refused (no spectators or reconnects in community mode). Before its
 * hello a peer receives no broadcast; a lobby request before the hello is
 * answered lobby_result {not_registered} and the peer is refused
 * malformed; a peer without a hello at --handshake-timeout-ms (community:
 * 10 s) is refused handshake_timeout; silent peers give way to newcomers
 * as in allocated mode (--max-silent-per-address per address, the oldest
 * anywhere when --max-peers are taken). A registered peer that sends nothing
 * for --keepalive-ms (30 s) is kicked idle_timeout (a client pings).
 *
 * Requests (set_name, lobby_list_request, lobby_create, lobby_join,
 * lobby_leave, lobby_set_ready) are answered by one lobby_result (or
 * lobby_list) echoing the request number, after the broadcasts the request
 * caused. A lobby request whose value breaks its rules (a name with
 * control bytes, over 32 bytes, not UTF-8; max_players out of range;
 * ready not 0/1) is answered invalid_parameters and not counted as a bad
 * message; one too short to carry its request number is faulty
 * (protocol section 8). Every packet is charged to the peer's rate limits
 * (gameserver/play.h), and each lobby request also to a lobby bucket
 * (--lobby-requests-per-second, burst one second's worth): over it the
 * request is dropped unanswered and counts toward the rate_limited kick.
 *
 * Broadcasts (lobby_updated, lobby_deleted, match_starting) go to every
 * registered peer, each encoded once, in the order of the lobby events
 * (strictly increasing revisions). Each peer's outgoing backlog (reliable
 * messages queued or unacknowledged in ENet) is capped at
 * --max-peer-backlog: a send that finds it full kicks the peer
 * backlog_overflow at once (disconnect_now: nothing more queued behind a
 * reader that does not read), and nobody else waits for it. ENet's own
 * timeout is set to 5..10 s, so a peer that acknowledges nothing at all is
 * dropped within 10 s even when little is sent to it.
 *
 * Matches. When a lobby's countdown ends (game/lobby.h) its members get a
 * welcome again (mode 2, their slot and team: join order, alternating
 * teams) and player_info with every member's name, and play with the
 * section 5 messages: the same gameserver/match.h object, input pipeline,
 * rate limits and snapshot builders as allocated mode, each match ticked
 * at 60 Hz in the one loop. In a match, ticks (welcome, snapshots,
 * events, pong) count from the match's start. After match_end and
 * --end-linger-ms the members return to their lobby (lobby_updated: open,
 * nobody ready). A member who disconnects mid-match leaves the lobby; its
 * ship coasts (neutral controls); when the last member leaves the match
 * is abandoned. With --results-log each finished match appends one JSON
 * line.
 *
 * The loop is paced as allocated mode's (gameserver/pace.h, issue 24):
 * it sleeps to each tick's deadline and drains ENet in one bounded pass,
 * one wake-up per tick however many matches run
 * (cosmic_clash_gameserver_loop_wakeups_total, a "loop_wakeups" line as
 * gs_community_run returns, cosmic_clash_gameserver_tick_lateness_seconds);
 * with opts.netsim set it services ENet until each tick instead.
 *
 * Ownership: the community owns its host, registry and matches; the
 * replay log stays the caller's.
 */
#ifndef CC_GAMESERVER_COMMUNITY_H
#define CC_GAMESERVER_COMMUNITY_H

#include <stdbool.h>
#include <stdint.h>

#include "input.h"
#include "sys/cc.h"
#include "sys/netsim.h"

struct gs_replay;

struct gs_community_options {
	const char *bind;
	int port;                   /* 0: ephemeral */
	int max_peers;              /* connections at once (registered and in their handshake) */
	int max_silent_per_address; /* connected peers without a hello one address may hold (the oldest gives way) */
	int max_bad_messages;
	int handshake_timeout_ms;   /* no hello by then: refused handshake_timeout */
	int64_t keepalive_ms;       /* a registered peer silent this long is kicked idle_timeout */
	int snapshot_interval;      /* ticks between snapshots */
	const char *arena;
	int64_t started_ns;
	int64_t end_linger_ms;      /* after match_end, the match is served this long before its members return */
	struct gs_input_options input;
	int peer_max_pps, peer_max_bps;
	int64_t rate_log_window_ms;
	int lobby_rps;              /* lobby requests per second per peer (burst one second's worth) */
	int64_t input_stall_kick_ms;
	int64_t stall_grace_ms;
	struct cc_netsim_options netsim;
	struct gs_replay *replay;
	int max_lobbies;
	int max_backlog;            /* reliable messages queued or in flight per peer */
	int64_t countdown_ms;       /* starting -> match (SPEC 11: 5 s) */
	int64_t match_seconds, warmup_seconds, goal_pause_seconds, overtime_max_seconds;
	const char *results_log;    /* NULL: no results; else one JSON line per match appended */
};

struct gs_community;

/* NULL (logged start_failed) when the socket cannot be bound or the results log cannot be opened. */
struct gs_community *gs_community_create(const struct gs_community_options *opts);
int gs_community_port(const struct gs_community *c);
/* Runs until stopping(ctx); every peer is kicked shutting_down before it returns 0. */
int gs_community_run(struct gs_community *c, bool (*stopping)(void *ctx), void *ctx);
bool gs_community_ready(void *community, char *why, size_t whylen);
void gs_community_free(struct gs_community *c);

#endif
