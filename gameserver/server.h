/*
 * server.h - cc-gameserver's transport and tick loop (SPEC 11, allocated mode).
 *
 * Owns the ENet host, one record per connected peer, the handshake, the
 * message dispatch, the kicks and the 60 Hz loop that steps the match
 * (gameserver/match.h) and sends snapshots. Everything here runs on one
 * thread, the tick thread: the network is serviced between ticks, and
 * anything slow (cc-api receipts and the result) is handed to the
 * reporter (gameserver/reporter.h) without waiting.
 *
 * Channels (SPEC 11, game/wire.h): 0 reliable control, 1 unreliable-
 * sequenced input (and ping), 2 unreliable snapshots (and pong). Every
 * packet goes through cc_wire_decode_from() for its channel and direction:
 * an unknown id is skipped and counted ("unknown", never fatal); a
 * truncated, oversized or malformed one (wrong channel or direction
 * included) adds one to the peer's bad count, and past --max-bad-messages
 * the peer is kicked (reason "malformed"). Before its handshake (hello,
 * spectate, resume) is admitted, a peer's unknown ids are skipped too, a
 * ping is answered and any other well-formed message ignored; a faulty
 * packet is refused at once ("malformed"); a peer that never completes the
 * handshake is refused "handshake_timeout" (the table is
 * contracts/gameserver-protocol.md section 8). A hello of another protocol
 * version is refused by its version alone ("protocol_mismatch"), before
 * the rest is decoded. After the end linger every peer is kicked
 * "match_over" (disconnect data 14) before the run loop returns.
 *
 * A kick logs "peer_kicked" with the wire reason and a detail (for a token,
 * the precise game/token.h refusal: "bad_signature", "wrong_server"),
 * sends refused (handshake) or kicked (later) on channel 0 with the same
 * reason, and disconnects the peer once that is delivered (ENet's
 * disconnect_later); the peer's record is detached so nothing is sent to
 * it again, even within the same poll batch.
 *
 * Test aids (issue 12), off by default: with opts.netsim set, every packet
 * goes through sys/netsim (sent, serviced, flushed and disconnected through
 * cc_netsim_*); with opts.replay set, every packet received or sent is
 * recorded (peer number, channel, bytes) with a verdict record wherever a
 * message is refused, skipped, ignored or dropped and wherever a peer is
 * kicked (gameserver/replay.h).
 *
 * Sessions (issue 12; the rules of the slot table are gameserver/admission.h):
 * a player who leaves (disconnect, timeout, kick) keeps its slot reserved
 * --slot-reserve-seconds; its ship stays in play with neutral controls
 * (GS_DRIVER_AWAY, gameserver/match.h) so a resume finds it where the server left
 * it. resume with the welcome's resume_key takes it back at once, or takes
 * a live session over (the older one kicked duplicate_session). When the
 * reservation lapses, casual hands the ship to a server bot (game/chase;
 * flagged bot in snapshots and player_info, "bot":true in the result) and
 * ranked parks it (the team plays short; the player may still come back
 * with its token). A roster player admitted after LOADING who is not
 * resuming a ship in play (a late joiner, a no-show, a player back after
 * the lapse) is welcomed at once and gets snapshots, and its ship enters
 * at the next kickoff (the bot drives until then). A no-show slot in
 * casual is a bot's from the end of LOADING.
 * Spectators (spectate): a display name or a join token of this match, up
 * to --max-spectators; they get the same snapshots and reliable
 * events as the players, never hold a slot, and anything they send but
 * ping and snapshot_ack is counted and ignored.
 * Delta snapshots (issue 24): the last CC_WIRE_DELTA_HISTORY snapshots are
 * kept; a peer (player or spectator) that sends snapshot_ack gets each
 * snapshot as snapshot_delta against the newest one it acknowledged that
 * is still kept, when that is smaller than the full snapshot; any other
 * peer gets the full snapshot, encoded once per tick. A peer's counts are
 * logged as it leaves ("peer_snapshots": deltas, fulls).
 *
 * Input and limits (issue 12): each player's input messages go through
 * gameserver/input.h (sequence-range guard, jitter buffer, stall); the
 * snapshot flags a player whose stream ran dry input_stalled, and one dry
 * longer than --input-stall-kick-ms is kicked input_stalled. Every packet
 * of every peer is charged to its two leaky buckets (sys/leaky.h: packets
 * and bytes per second, one second's burst) before it is decoded; over
 * either it is dropped, logged rate_limited at most once per peer per
 * window, and a peer persistently over (its drops overflow a third bucket
 * leaking at half the packet limit) is kicked rate_limited. When the loop
 * itself ran over 100 ms late (server_stalled), nobody is kicked for
 * input stalls, rate limits or handshake deadlines for --stall-grace-ms.
 * The loop (issue 24) sleeps until the next tick's monotonic deadline, then
 * drains ENet in one non-blocking pass and ticks: one wake-up per tick
 * (counted: cosmic_clash_gameserver_loop_wakeups_total, and a
 * "loop_wakeups" line as gs_server_run returns), a message arriving
 * mid-tick waits for the next pass. It ticks on time under any packet
 * stream: a drain past the deadline stops after 2 ms or 4096 events, and
 * while a backlog remains the loop drains instead of sleeping. With
 * opts.netsim set it services ENet until each tick instead (sys/netsim
 * releases held packets only when serviced). Silent peers (no hello) give way to
 * newcomers (the oldest one of an address holding --max-silent-per-address,
 * or of the server when --max-peers are taken); with none to evict a
 * newcomer is refused server_full. ENet's own peer timeout (5 s minimum)
 * is left at its defaults: a 2 s freeze trips it on neither side.
 *
 * Ownership: gs_server_create() takes ownership of admission and match
 * (freed by gs_server_free); the reporter and the replay log stay the
 * caller's.
 */
#ifndef CC_GAMESERVER_SERVER_H
#define CC_GAMESERVER_SERVER_H

#include <stdbool.h>
#include <stdint.h>

#include "sys/cc.h"
#include "input.h"
#include "sys/netsim.h"

struct cc_roster;

struct gs_admission;
struct gs_replay;
struct gs_match;
struct cc_reporter;

struct gs_server_options {
	const char *bind;           /* address of the UDP socket ("0.0.0.0", "127.0.0.1") */
	int port;                   /* UDP port; 0 = ephemeral (tests) */
	int max_peers;              /* ENet peer slots: players plus room for refusing strangers */
	int max_bad_messages;       /* truncated/oversized/wrong-channel messages tolerated per peer */
	int handshake_timeout_ms;   /* a peer without an admitted hello by then is kicked */
	int snapshot_interval;      /* send a snapshot every N ticks (60 Hz / N per client) */
	const char *arena;          /* arena name for the welcome ([a-z0-9_], 1..32 bytes) */
	int64_t started_ns;         /* monotonic time main() began: the "ready" line says how long start-up took */
	int64_t end_linger_ms;      /* after the result, keep serving this long so clients see it */
	struct gs_input_options input; /* each player's jitter buffer (input.h) */
	int peer_max_pps;           /* leaky bucket per peer: packets/s, burst one second's worth */
	int peer_max_bps;           /* ... and bytes/s */
	int64_t rate_log_window_ms; /* at most one rate_limited line per peer per window */
	int max_silent_per_address; /* connected peers without a hello one address may hold */
	int64_t input_stall_kick_ms; /* a player whose input ran dry this long is kicked input_stalled (0: never) */
	int64_t stall_grace_ms;     /* after the tick loop itself stalled, nobody is kicked for it this long */
	struct cc_netsim_options netsim; /* --net-sim-*: all knobs zero = off (plain ENet) */
	struct gs_replay *replay;   /* --replay-log: NULL = off; the caller's, closed after gs_server_free */
	int max_spectators;         /* spectate admits at most this many (0: none); <= GS_MAX_SPECTATORS */
	bool bots;                  /* casual: bots drive no-show and lapsed slots (ranked: parked) */
	bool spectators_by_name;    /* casual: a display name may spectate (ranked: a join token of this match only) */
	bool call_off_on_no_show;   /* ranked: a roster player absent when LOADING ends calls the match off */
	int64_t result_deadline_ms; /* the result job retries this long (0: 60 s); main: end linger + --result-timeout-ms */
};

#define GS_MAX_SPECTATORS 64

struct gs_server;

/*
 * Creates the ENet host on opts->bind:port. admission may be NULL only in
 * tests that need no players. Returns NULL (logged "start_failed") when the
 * socket cannot be bound; admission and match are freed then too.
 */
struct gs_server *gs_server_create(const struct gs_server_options *opts, struct gs_admission *admission,
				   struct gs_match *match, struct cc_reporter *reporter);

/* The UDP port bound. */
int gs_server_port(const struct gs_server *s);

enum gs_run_result {
	GS_RUN_ENDED = 0,      /* the match ended, its result handed to the reporter */
	GS_RUN_STOPPED = 1,    /* stopping(ctx) before the end */
	GS_RUN_CALLED_OFF = 2, /* the match was called off (below): no result */
};

/*
 * Runs the 60 Hz loop until stopping(ctx) is true, or the match has ended
 * (or was called off) and the end linger passed. Returns enum gs_run_result.
 *
 * Liveness and calling off (issue 19), with a reporter: every tick hands
 * the phase (loading before the first kickoff, playing, ended from
 * RESULTS) and the tick to cc_reporter_heartbeat_set. The match is called
 * off, without a result, when
 *   - a heartbeat answer says the match is COMPLETED or FAILED before this
 *     server reached RESULTS (the control plane ended it: a stall sweep, a
 *     no-show settled by cc-maintenance, an operator), logged
 *     match_called_off {reason: "control_plane", match_state};
 *   - ranked (opts.call_off_on_no_show), LOADING ended (the connect
 *     window) with a roster player who never connected: the server posts
 *     no_show {player_ids} and does not play one side against nobody,
 *     logged match_called_off {reason: "no_show", player_ids}. Casual
 *     posts the same no_show (cc-api records the penalty) and plays on
 *     with its bots.
 * Calling off kicks every peer (players and spectators) with
 * shutting_down, detail "match called off: ..." (each player's disconnect
 * receipt goes to cc-api), stops the simulation, refuses new hellos with
 * shutting_down, and returns GS_RUN_CALLED_OFF after the end linger.
 */
int gs_server_run(struct gs_server *s, bool (*stopping)(void *ctx), void *ctx);

/*
 * Casual backfill (SPEC 9, issue 26): next replaces the roster (SIGHUP:
 * cc-supervisor wrote a newer one). Each slot whose player changed starts
 * over (gs_admission_reload): its old token is refused from now on, a
 * connection still holding it is kicked not_in_roster, and the newcomer
 * enters at the next kickoff, taking the ship over from the bot. The
 * replaced player stays in the result with the goals it scored, and the
 * slot is marked bot there (so neither is rated: README "Backfill").
 * Tick thread only. 0, or CC_EINVAL (logged; the old roster stays).
 */
int gs_server_reload_roster(struct gs_server *s, const struct cc_roster *next) CC_MUST_CHECK;

/* Why the match was called off ("control_plane", "no_show"), or "" when it was not. */
const char *gs_server_called_off(const struct gs_server *s);

/* True once the host is up and the loop has run a tick (the ready probe). Any thread. */
bool gs_server_ready(void *server, char *why, size_t whylen);

/* Disconnects every peer (best effort), frees everything it owns. NULL is a no-op. */
void gs_server_free(struct gs_server *s);

#endif
