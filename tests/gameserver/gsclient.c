/*
 * gsclient - the game-server test client (tests only): mints rosters and
 * join tokens, plays as an honest client, or misbehaves on purpose, each
 * against a real cc-gameserver over ENet.
 *
 *   gsclient mint --keys=FILE --key-id=ID --server-id=ID --players=N --out=DIR
 *       Writes DIR/roster.json (a manifest with a real digest), DIR/token.<slot>
 *       for each slot (teams alternate: slot % 2), DIR/match_id, and hostile
 *       tokens: forged.token (slot 0's claims under a key the server does not
 *       hold, same key id), expired.token (slot 1, expired an hour ago),
 *       foreign.token (slot 2's claims for another server), othermatch.token
 *       (slot 2's claims for another match).
 *
 *   gsclient play --port=P --token=FILE [--unknown-every=N] [--max-seconds=S]
 *       Connects, says hello, sends 60 Hz input (each message repeats the
 *       previous inputs for redundancy) until the match ends. Prints one
 *       JSON line: result (ended|refused|disconnected|timeout), reason,
 *       slot, team, snapshots, max_gap_ms (longest silence between
 *       snapshots once the first arrived), last_ack (the input sequence the
 *       last snapshot acknowledged), score (final), ended_score.
 *       --unknown-every=N also sends a message with an unknown id every N
 *       ticks (the server must skip it and keep this player).
 *
 *       Sessions (issue 12):
 *       --snapshot-log=FILE writes "tick fnv1a64-of-the-packet" per snapshot
 *       (compare with a spectator's: the same bytes);
 *       --drop-after-ms=N drops the connection N ms after the welcome,
 *       --drop=graceful (an ENet disconnect, the default) or silent (the
 *       socket just goes: the server notices only by timeout);
 *       --resume (after --resume-after-ms=M, default 1000) reconnects and
 *       sends resume with the welcome's key and the same token, then plays
 *       on; without --resume the client stops after the drop (result
 *       "dropped"). Before its own resume it can try an impostor's:
 *       --impostor-token=FILE (another player's token with our key) and
 *       --impostor-name=NAME (a display name with our key); their outcomes
 *       are printed (impostor_token, impostor_name). The line adds
 *       resumed_slot/team, own_before/own_after {tick, pos} around the drop,
 *       bot_slots (bit mask of slots seen with the snapshot bot flag),
 *       pi_bot_slots (player_info bot flag), welcome_state, welcome_tick,
 *       own_bot_last_tick (last snapshot with our own slot bot-driven),
 *       own_free_tick (first later snapshot without), kickoffs (ticks),
 *       pi_connected / pi_connected_named (player_info messages with the
 *       connected bit, and of them those with a non-empty name).
 *       --await-close=MS: after match_end, waits up to MS for the server to
 *       close the connection and adds close_kicked / close_detail (a kicked
 *       after match_end, "" none), close_data (the ENet disconnect's data,
 *       -1 none) and close_ms.
 *       Delta snapshots (issue 24): every snapshot taken is acknowledged
 *       (snapshot_ack) and a snapshot_delta rebuilt against the snapshot
 *       it names; --no-ack (play and spectate) never acknowledges, so the
 *       server must keep sending full snapshots. The line adds fulls and
 *       deltas (snapshots that came each way) and unknown_base (deltas
 *       against a snapshot not held).
 *
 *   gsclient spectate --port=P (--name=NAME | --token=FILE) [--max-seconds=S] [--snapshot-log=FILE]
 *                     [--await-close=MS]
 *       Watches until the match ends; prints result (ended|refused|...),
 *       reason, slot, snapshots, ignored_sent (inputs sent, which the server
 *       must ignore), score, close_kicked and close_data (as play's),
 *       fulls, deltas, unknown_base and undecodable (as play's).
 *
 *   gsclient hostile --port=P --kind=KIND [--token=FILE]
 *       KIND: garbage (an unknown id: skipped, so the handshake deadline
 *       refuses it), unknown-first (unknown ids, a ping and an input, then a
 *       hello with --token: prints admitted and pong_before_welcome), short, truncated-hello, oversized-hello, version,
 *       token (hello with --token), truncated-input, oversized-input,
 *       wrong-channel (the last three after a hello with --token).
 *       Prints {"result":"refused","reason":...,"detail":...} when the
 *       server sent a refusal, or result disconnected/admitted/timeout.
 *
 *   gsclient flood --port=P --token=FILE [--pps=N] [--seconds=S] [--rejoin=1]
 *       Joins with --token, then sends valid input messages (one new
 *       sequence each) at N packets a second (0: as fast as it can) for S
 *       seconds (default 5), or until kicked; with --rejoin=1 it joins
 *       again after each kick until the S seconds are over (a sustained
 *       flood). Prints {"result":"kicked"|"done"|..., "reason", "detail",
 *       "sent", "joins", "kicks", "seconds"}.
 *
 *   gsclient idle --port=P --count=N [--seconds=S]
 *       Opens N connections from one ENet host (one address) and never says
 *       hello. Prints {"event":"connected","count":K} once K connected (or
 *       after 5 s), then after S seconds (default 8) {"result":"idle",
 *       "connected":K,"refused":{"reason":count...},"disconnected":D}.
 *
 *   gsclient multi --list=FILE [--max-seconds=S] [--handshakes-per-server=N]
 *       One process driving many honest players (scripts/bench-density.sh:
 *       K matches' 6K clients from one process on one core). FILE has one
 *       line per client, "PORT TOKENFILE" (a cc-gameserver on 127.0.0.1).
 *       Each client has its own ENet host (its own socket, as a real
 *       client); one loop wakes once per 1/60 s, sends every playing
 *       client's input, services every host (receives, acknowledges
 *       snapshots, delta snapshots rebuilt as play's) and sleeps to the next
 *       tick. At most N (3) handshakes per server are in flight at once,
 *       under the server's per-address cap on silent peers (all clients
 *       share 127.0.0.1). Prints {"event":"connected","clients":N,
 *       "playing":P,"failed":F,"ms":T} once every client is playing or has
 *       failed (refused, gone or 10 s without a welcome), then plays until
 *       SIGTERM/SIGINT or S seconds (600), and prints {"result":"done",
 *       "clients","playing" (still playing at the end),"failed","seconds"
 *       (since connected),"snapshots","min_snapshots" (of a client still
 *       playing),"inputs","undecodable","unknown_base","max_lag_ms" (the
 *       latest its loop woke past a tick's time once connected: a starved
 *       client shows here even when its own CPU is low),"late_loops" (wakes
 *       more than a tick late),"reason" (the first failure's, "" none)}.
 *
 *   gsclient community-e2e|community-property|community-slow|community-matches|community-hostile ...
 *       Community mode (issue 23): see community.c.
 *
 * Exit status: 0 when it printed its line, 2 on bad arguments, 1 otherwise.
 */
#include <enet/enet.h>
#include <errno.h>
#include <signal.h>
#include <sys/resource.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "game/join_token.h"
#include "game/roster.h"
#include "game/wire.h"
#include "sys/clock.h"
#include "sys/crypto.h"
#include "sys/file.h"
#include "sys/banned.h"
#include "gsconn.h"
#include "lobbyc.h"

/* ---- mint ------------------------------------------------------------------------ */

static int write_file(const char *dir, const char *name, const char *text)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
		fprintf(stderr, "gsclient: cannot write %s: %s\n", path, strerror(errno));
		return 1;
	}
	return 0;
}

static int sign_to(const struct cc_keyset *ks, const struct cc_join_claims *c, const char *dir, const char *name)
{
	char tok[CC_JOIN_TOKEN_BUF];
	if (cc_join_token_sign(ks, c, tok, sizeof tok) != 0) {
		fprintf(stderr, "gsclient: cannot sign %s\n", name);
		return 1;
	}
	return write_file(dir, name, tok);
}

static int mint(int argc, char **argv)
{
	const char *keys = arg(argc, argv, "keys"), *key_id = arg(argc, argv, "key-id"),
		   *server = arg(argc, argv, "server-id"), *dir = arg(argc, argv, "out");
	long players = arg_long(argc, argv, "players", 6);
	struct cc_keyset *ks = NULL, *other = NULL;
	char err[256], name[64], *roster_json = NULL;
	int rc = 1;
	if (!keys || !key_id || !server || !dir || players < 1 || players > CC_ROSTER_MAX_ENTRIES) {
		fprintf(stderr, "gsclient mint: --keys, --key-id, --server-id, --out and --players=1..16 are required\n");
		return 2;
	}
	if (cc_keyset_load_file(keys, &ks, err, sizeof err) != 0) {
		fprintf(stderr, "gsclient mint: %s\n", err);
		return 1;
	}
	/* A key the server does not hold, under the same id: a forgery that names a known key. */
	char other_json[256], raw[32], b64[64];
	cc_random_bytes(raw, sizeof raw);
	if (cc_base64_encode(raw, sizeof raw, b64, sizeof b64, NULL) != 0)
		goto out;
	snprintf(other_json, sizeof other_json, "{\"%s\":\"%s\"}", key_id, b64);
	if (cc_keyset_parse("forger", other_json, strlen(other_json), &other, err, sizeof err) != 0) {
		fprintf(stderr, "gsclient mint: %s\n", err);
		goto out;
	}
	struct cc_roster r = { .count = (size_t)players };
	cc_random_uuid(r.match_id);
	cc_random_uuid(r.allocation_id);
	snprintf(r.server_id, sizeof r.server_id, "%s", server);
	snprintf(r.key_id, sizeof r.key_id, "%s", key_id);
	int64_t expires = (int64_t)time(NULL) + 3600;
	struct cc_join_claims claims[CC_ROSTER_MAX_ENTRIES];
	for (long i = 0; i < players; i++) {
		struct cc_roster_entry *e = &r.entries[i];
		e->slot = (int)i;
		e->team = (int)(i % 2);
		cc_random_uuid(e->player_id);
		e->generation = 1;
		e->expires_at = expires;
		struct cc_join_claims *c = &claims[i];
		*c = (struct cc_join_claims){ .slot = e->slot, .generation = 1, .expires_at = expires };
		snprintf(c->key_id, sizeof c->key_id, "%s", key_id);
		snprintf(c->match_id, sizeof c->match_id, "%s", r.match_id);
		snprintf(c->server_id, sizeof c->server_id, "%s", server);
		snprintf(c->player_id, sizeof c->player_id, "%s", e->player_id);
		snprintf(name, sizeof name, "token.%ld", i);
		if (sign_to(ks, c, dir, name) != 0)
			goto out;
	}
	if (cc_roster_manifest_build(&r, &roster_json) != 0 || write_file(dir, "roster.json", roster_json) != 0 ||
	    write_file(dir, "match_id", r.match_id) != 0)
		goto out;
	if (sign_to(other, &claims[0], dir, "forged.token") != 0)
		goto out;
	struct cc_join_claims c = claims[players > 1 ? 1 : 0];
	c.expires_at = (int64_t)time(NULL) - 3600;
	if (sign_to(ks, &c, dir, "expired.token") != 0)
		goto out;
	c = claims[players > 2 ? 2 : 0];
	snprintf(c.server_id, sizeof c.server_id, "%s-other", server);
	if (sign_to(ks, &c, dir, "foreign.token") != 0)
		goto out;
	c = claims[players > 2 ? 2 : 0];
	cc_random_uuid(c.match_id);
	if (sign_to(ks, &c, dir, "othermatch.token") != 0)
		goto out;
	rc = 0;
out:
	free(roster_json);
	cc_keyset_free(ks);
	cc_keyset_free(other);
	return rc;
}


static char *read_token(const char *path)
{
	char *text = NULL;
	size_t len = 0;
	struct cc_file_error ferr;
	if (!path || cc_file_read(path, 4096, 0, &text, &len, &ferr) != 0)
		return NULL;
	while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r'))
		text[--len] = '\0';
	return text;
}

/* Escapes nothing: reasons and details are ours (printable ASCII, no quotes). */
static void print_outcome(const struct conn *c)
{
	const char *result = c->refused ? "refused" : c->welcomed ? "admitted" : c->gone ? "disconnected" : "timeout";
	printf("{\"result\":\"%s\",\"reason\":\"%s\",\"detail\":\"%s\",\"disconnected\":%s}\n", result, c->reason,
	       c->detail, c->gone ? "true" : "false");
}

/* ---- hostile ------------------------------------------------------------------------ */


static int hostile(int argc, char **argv)
{
	const char *kind = arg(argc, argv, "kind");
	int port = (int)arg_long(argc, argv, "port", 0);
	char *token = read_token(arg(argc, argv, "token"));
	struct conn c;
	int rc = 1;
	if (!kind || port <= 0) {
		fprintf(stderr, "gsclient hostile: --kind and --port are required\n");
		free(token);
		return 2;
	}
	if (connect_to(&c, port) != 0) {
		printf("{\"result\":\"no_connection\"}\n");
		goto out;
	}
	uint8_t buf[4096];
	if (strcmp(kind, "garbage") == 0) {
		cc_random_bytes(buf, 64);
		buf[0] = buf[1] = 0xfe; /* id 0xfefe: never assigned */
		send_raw(&c, 0, buf, 64, true);
	} else if (strcmp(kind, "unknown-first") == 0) {
		/*
		 * Before the hello: ids no version defines (0xDEAD on both client channels), a ping, an input; then a
		 * hello with --token. Section 8: unknowns are skipped, the ping answered, the input ignored, the hello
		 * admitted.
		 */
		uint8_t u[12] = { 0 };
		put16(u, 0xDEAD);
		send_raw(&c, 0, u, sizeof u, true);
		send_raw(&c, 1, u, sizeof u, false);
		send_raw(&c, 0, u, 2, true);
		struct cc_wire_msg ping = { .id = CC_MSG_PING };
		ping.u.ping.client_time = 0x1234;
		size_t n = encode(&ping, buf, sizeof buf);
		send_raw(&c, 1, buf, n, false);
		send_input(&c, 1, 1, 0, 1);
		bool pong = false;
		ENetEvent ev;
		for (int64_t end = cc_clock_ms() + 2000; !pong && !c.gone && !c.refused && cc_clock_ms() < end;) {
			if (enet_host_service(c.host, &ev, 20) <= 0)
				continue;
			if (ev.type == ENET_EVENT_TYPE_DISCONNECT) {
				c.gone = true;
			} else if (ev.type == ENET_EVENT_TYPE_RECEIVE) {
				struct cc_wire_msg r;
				if (cc_wire_decode(ev.packet->data, ev.packet->dataLength, &r, NULL) == 0 && r.id == CC_MSG_PONG &&
				    r.u.pong.client_time == 0x1234)
					pong = true;
				else if (ev.channelID == 0)
					on_control(&c, ev.packet->data, ev.packet->dataLength);
				enet_packet_destroy(ev.packet);
			}
		}
		if (!c.gone && !c.refused)
			send_hello(&c, PROTOCOL, token ? token : "");
		await(&c, 3000);
		printf("{\"result\":\"%s\",\"reason\":\"%s\",\"detail\":\"%s\",\"pong_before_welcome\":%s}\n",
		       c.refused ? "refused" : c.welcomed ? "admitted" : c.gone ? "disconnected" : "timeout", c.reason, c.detail,
		       pong ? "true" : "false");
		rc = 0;
		goto out;
	} else if (strcmp(kind, "short") == 0) {
		send_raw(&c, 0, "\x01", 1, true);
	} else if (strcmp(kind, "truncated-hello") == 0) {
		size_t n = hello_bytes(buf, sizeof buf, PROTOCOL, token ? token : "x");
		send_raw(&c, 0, buf, n > 8 ? 8 : n, true);
	} else if (strcmp(kind, "oversized-hello") == 0) {
		size_t n = hello_bytes(buf, sizeof buf, PROTOCOL, token ? token : "x");
		memset(buf + n, 'A', 600);
		send_raw(&c, 0, buf, n + 600, true);
	} else if (strcmp(kind, "version") == 0) {
		send_hello(&c, 99, token ? token : "x");
	} else if (strcmp(kind, "token") == 0) {
		send_hello(&c, PROTOCOL, token ? token : "not-a-token");
	} else if (strcmp(kind, "truncated-input") == 0 || strcmp(kind, "oversized-input") == 0 ||
		   strcmp(kind, "wrong-channel") == 0) {
		send_hello(&c, PROTOCOL, token ? token : "");
		await(&c, 3000);
		if (!c.welcomed) {
			print_outcome(&c);
			rc = 0;
			goto out;
		}
		c.welcomed = false;
		for (int i = 1; i <= 64 && !c.refused && !c.gone; i++) {
			if (kind[0] == 't') {
				uint8_t t[5] = { 0 };
				put16(t, CC_MSG_INPUT);
				send_raw(&c, 1, t, 5, false);
			} else if (kind[0] == 'o') {
				send_input(&c, (uint16_t)i, 1, 600, 1);
			} else {
				send_input(&c, (uint16_t)i, 1, 0, 2);
			}
			await(&c, 20);
		}
	} else {
		fprintf(stderr, "gsclient hostile: unknown --kind\n");
		rc = 2;
		goto out;
	}
	await(&c, 5000);
	if (c.refused)
		await_gone(&c, 5000);
	print_outcome(&c);
	rc = 0;
out:
	conn_close(&c);
	free(token);
	return rc;
}

/* ---- play and spectate ------------------------------------------------------------- */

/* A spectate or resume (kind) with auth and credential; resume carries key. */
static void send_handshake(struct conn *c, uint16_t id, uint8_t auth, const char *credential, const uint8_t *key)
{
	struct cc_wire_msg m = { .id = id };
	struct cc_wire_hello *h = id == CC_MSG_SPECTATE ? &m.u.spectate : NULL;
	size_t n = strlen(credential);
	if (n > CC_WIRE_TOKEN_MAX)
		n = CC_WIRE_TOKEN_MAX;
	if (h) {
		h->protocol_version = PROTOCOL;
		h->tick_rate = CC_WIRE_TICK_RATE;
		h->auth = auth;
		memcpy(h->credential, credential, n);
		h->credential_len = (uint16_t)n;
	} else {
		struct cc_wire_resume *r = &m.u.resume;
		r->protocol_version = PROTOCOL;
		r->tick_rate = CC_WIRE_TICK_RATE;
		r->auth = auth;
		memcpy(r->resume_key, key, CC_WIRE_RESUME_KEY_LEN);
		memcpy(r->credential, credential, n);
		r->credential_len = (uint16_t)n;
	}
	uint8_t buf[CC_WIRE_MAX_PACKET];
	size_t len = encode(&m, buf, sizeof buf);
	if (len)
		send_raw(c, 0, buf, len, true);
}


/*
 * Serves the session until the match ends, it is refused or gone, the
 * deadline (end_ms) or stop_ms passes; sends 60 Hz input from *seq on
 * (when send_inputs).
 */
static void session_loop(struct conn *c, struct play_stats *st, int64_t end_ms, int64_t stop_ms, uint32_t *seq,
			 bool send_inputs, long unknown_every)
{
	int64_t next_input = cc_clock_ms();
	while (!st->over && !c->gone && !c->refused && cc_clock_ms() < end_ms && cc_clock_ms() < stop_ms) {
		ENetEvent ev;
		int64_t wait = next_input - cc_clock_ms();
		if (enet_host_service(c->host, &ev, wait > 0 ? (enet_uint32)wait : 0) > 0) {
			if (ev.type == ENET_EVENT_TYPE_DISCONNECT) {
				c->gone = true;
			} else if (ev.type == ENET_EVENT_TYPE_RECEIVE) {
				on_session_packet(c, st, ev.channelID, ev.packet->data, ev.packet->dataLength);
				enet_packet_destroy(ev.packet);
			}
			continue;
		}
		if (cc_clock_ms() < next_input)
			continue;
		next_input += 1000 / 60;
		if (!send_inputs)
			continue;
		(*seq)++;
		int count = *seq < 4 ? (int)*seq : 4;
		send_input(c, (uint16_t)*seq, count, 0, 1);
		if (unknown_every > 0 && *seq % (uint32_t)unknown_every == 0) {
			uint8_t u[8] = { 0 };
			put16(u, 0x7777); /* an id no protocol version defines */
			send_raw(c, 0, u, sizeof u, true);
		}
	}
}

/* --await-close=MS: after match_end, what the server says and does when it closes the finished match. */
static void await_close_after_end(struct conn *c, struct play_stats *st, long ms)
{
	if (!st->over || ms <= 0 || c->gone)
		return;
	int64_t over_ms = cc_clock_ms(), until = over_ms + ms;
	ENetEvent ev;
	while (!c->gone && cc_clock_ms() < until) {
		if (enet_host_service(c->host, &ev, 20) <= 0)
			continue;
		if (ev.type == ENET_EVENT_TYPE_DISCONNECT) {
			c->gone = true;
			st->close_data = (int)ev.data;
			st->close_ms = cc_clock_ms() - over_ms;
		} else if (ev.type == ENET_EVENT_TYPE_RECEIVE) {
			on_session_packet(c, st, ev.channelID, ev.packet->data, ev.packet->dataLength);
			enet_packet_destroy(ev.packet);
		}
	}
}

/* A resume attempt on a fresh connection that is expected to be refused; "refused:REASON" etc. into out. */
static void impostor(int port, uint8_t auth, const char *credential, const uint8_t *key, char *out, size_t cap)
{
	struct conn x;
	if (connect_to(&x, port) != 0) {
		snprintf(out, cap, "no_connection");
		conn_close(&x);
		return;
	}
	send_handshake(&x, CC_MSG_RESUME, auth, credential, key);
	await(&x, 5000);
	snprintf(out, cap, "%s:%s", x.refused ? "refused" : x.welcomed ? "admitted" : x.gone ? "disconnected" : "timeout",
		 x.reason);
	conn_close(&x);
}

static int play(int argc, char **argv)
{
	int port = (int)arg_long(argc, argv, "port", 0);
	long unknown_every = arg_long(argc, argv, "unknown-every", 0);
	long max_seconds = arg_long(argc, argv, "max-seconds", 120);
	long drop_after = arg_long(argc, argv, "drop-after-ms", -1);
	long resume_after = arg_long(argc, argv, "resume-after-ms", 1000);
	const char *drop = arg(argc, argv, "drop") ? arg(argc, argv, "drop") : "graceful";
	bool resume = false, no_ack = false;
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--resume") == 0)
			resume = true;
		if (strcmp(argv[i], "--no-ack") == 0)
			no_ack = true;
	}
	const char *imp_name = arg(argc, argv, "impostor-name");
	char *token = read_token(arg(argc, argv, "token"));
	char *imp_token = arg(argc, argv, "impostor-token") ? read_token(arg(argc, argv, "impostor-token")) : NULL;
	const char *snaplog = arg(argc, argv, "snapshot-log");
	struct conn c;
	struct play_stats st = { .ended = { -1, -1 }, .close_data = -1 };
	long await_close = arg_long(argc, argv, "await-close", 0);
	int rc = 1;
	st.no_ack = no_ack;
	memset(&c, 0, sizeof c);
	if (port <= 0 || !token || (strcmp(drop, "graceful") != 0 && strcmp(drop, "silent") != 0)) {
		fprintf(stderr, "gsclient play: --port and a readable --token are required; --drop=graceful|silent\n");
		free(token);
		free(imp_token);
		return 2;
	}
	if (snaplog && !(st.snaplog = fopen(snaplog, "w"))) {
		fprintf(stderr, "gsclient play: cannot write %s: %s\n", snaplog, strerror(errno));
		free(token);
		free(imp_token);
		return 1;
	}
	if (connect_to(&c, port) != 0) {
		printf("{\"result\":\"no_connection\"}\n");
		goto out;
	}
	send_hello(&c, PROTOCOL, token);
	await(&c, 5000);
	if (!c.welcomed) {
		print_outcome(&c);
		rc = 0;
		goto out;
	}
	int64_t started = cc_clock_ms();
	c.host->totalReceivedData = 0;
	int64_t end = cc_clock_ms() + max_seconds * 1000;
	uint32_t seq = 0; /* inputs sent (the wire carries it mod 2^16) */
	int first_slot = c.slot, first_team = c.team, welcome_state = c.welcome_state;
	uint32_t welcome_tick = c.welcome_tick;
	struct own_pos before = { 0 }, after = { 0 };
	char imp_tok_out[128] = "", imp_name_out[128] = "";
	bool dropped = false, resumed = false;
	session_loop(&c, &st, end, drop_after >= 0 ? started + drop_after : INT64_MAX, &seq, true, unknown_every);
	if (drop_after >= 0 && !st.over && !c.gone && !c.refused) {
		dropped = true;
		before = st.own;
		uint8_t key[CC_WIRE_RESUME_KEY_LEN];
		memcpy(key, c.resume_key, sizeof key);
		if (strcmp(drop, "silent") == 0) {
			enet_peer_reset(c.peer); /* no word to the server: only its timeout would tell it */
			c.gone = true;
		}
		conn_close(&c);
		memset(&c, 0, sizeof c);
		if (!resume)
			goto report;
		int64_t back = cc_clock_ms() + resume_after;
		while (cc_clock_ms() < back) {
			struct timespec ts = { 0, 10 * 1000000 };
			nanosleep(&ts, NULL); /* the client is away: nothing to wait for but the time itself */
		}
		if (imp_token)
			impostor(port, CC_WIRE_AUTH_TOKEN, imp_token, key, imp_tok_out, sizeof imp_tok_out);
		if (imp_name)
			impostor(port, CC_WIRE_AUTH_NAME, imp_name, key, imp_name_out, sizeof imp_name_out);
		if (connect_to(&c, port) != 0) {
			printf("{\"result\":\"no_connection\",\"phase\":\"resume\"}\n");
			goto out;
		}
		send_handshake(&c, CC_MSG_RESUME, CC_WIRE_AUTH_TOKEN, token, key);
		await(&c, 5000);
		if (c.welcomed) {
			resumed = true;
			st.own.tick = 0;
			/* The first snapshot after the resume: our ship as the server kept it. */
			while (!st.over && !c.gone && !c.refused && cc_clock_ms() < end && st.own.tick == 0)
				session_loop(&c, &st, end, cc_clock_ms() + 20, &seq, true, unknown_every);
			after = st.own;
			session_loop(&c, &st, end, INT64_MAX, &seq, true, unknown_every);
		}
	}
report:;
	await_close_after_end(&c, &st, await_close);
	const char *result = st.over ? "ended" : c.refused ? "refused" : dropped && !resume ? "dropped" : c.gone ? "disconnected" : "timeout";
	printf("{\"result\":\"%s\",\"reason\":\"%s\",\"slot\":%d,\"team\":%d,\"snapshots\":%llu,\"max_gap_ms\":%lld,"
	       "\"inputs_sent\":%u,\"last_ack\":%u,\"last_tick\":%u,\"score\":[%d,%d],\"ended_score\":[%d,%d],"
	       "\"seconds\":%.2f,\"snapshot_bytes\":%llu,\"enet_bytes_in\":%u,\"undecodable\":%llu,\"goals_seen\":%llu,"
	       "\"welcome_state\":%d,\"welcome_tick\":%u,\"bot_slots\":%u,\"pi_bot_slots\":%u,"
	       "\"own_bot_last_tick\":%u,\"own_free_tick\":%u,\"kickoffs\":[",
	       result, c.reason, first_slot, first_team, (unsigned long long)st.snapshots, (long long)st.max_gap, seq,
	       st.last_ack, st.last_tick, st.score[0], st.score[1], st.ended[0], st.ended[1],
	       (double)(cc_clock_ms() - started) / 1000.0, (unsigned long long)st.snapshot_bytes,
	       c.host ? c.host->totalReceivedData : 0, (unsigned long long)st.bad_messages, (unsigned long long)st.goals,
	       welcome_state, welcome_tick, st.bot_slots, st.pi_bot_slots, st.own_bot_last_tick, st.own_free_tick);
	for (int i = 0; i < st.n_kickoffs; i++)
		printf("%s%u", i ? "," : "", st.kickoffs[i]);
	printf("],\"dropped\":%s,\"resumed\":%s,\"resumed_slot\":%d,\"resumed_team\":%d,"
	       "\"own_before\":{\"tick\":%u,\"pos\":[%.3f,%.3f,%.3f]},\"own_after\":{\"tick\":%u,\"pos\":[%.3f,%.3f,%.3f]},"
	       "\"impostor_token\":\"%s\",\"impostor_name\":\"%s\",\"pi_connected\":%u,\"pi_connected_named\":%u,"
	       "\"close_kicked\":\"%s\",\"close_detail\":\"%s\",\"close_data\":%d,\"close_ms\":%lld,"
	       "\"fulls\":%llu,\"deltas\":%llu,\"unknown_base\":%llu}\n",
	       dropped ? "true" : "false", resumed ? "true" : "false", resumed ? c.slot : -1, resumed ? c.team : -1,
	       before.tick, before.pos[0], before.pos[1], before.pos[2], after.tick, after.pos[0], after.pos[1],
	       after.pos[2], imp_tok_out, imp_name_out, st.pi_connected, st.pi_connected_named, st.close_kicked,
	       st.close_detail, st.close_data, (long long)st.close_ms, (unsigned long long)st.fulls,
	       (unsigned long long)st.deltas, (unsigned long long)st.unknown_base);
	rc = 0;
out:
	if (c.host)
		conn_close(&c);
	if (st.snaplog)
		fclose(st.snaplog);
	free(token);
	free(imp_token);
	return rc;
}

static int spectate(int argc, char **argv)
{
	int port = (int)arg_long(argc, argv, "port", 0);
	long max_seconds = arg_long(argc, argv, "max-seconds", 120);
	const char *name = arg(argc, argv, "name");
	char *token = arg(argc, argv, "token") ? read_token(arg(argc, argv, "token")) : NULL;
	const char *snaplog = arg(argc, argv, "snapshot-log");
	struct conn c;
	struct play_stats st = { .ended = { -1, -1 }, .close_data = -1 };
	long await_close = arg_long(argc, argv, "await-close", 0);
	int rc = 1;
	for (int i = 2; i < argc; i++)
		if (strcmp(argv[i], "--no-ack") == 0)
			st.no_ack = true;
	memset(&c, 0, sizeof c);
	if (port <= 0 || (!name && !token)) {
		fprintf(stderr, "gsclient spectate: --port and --name or a readable --token are required\n");
		free(token);
		return 2;
	}
	if (snaplog && !(st.snaplog = fopen(snaplog, "w"))) {
		fprintf(stderr, "gsclient spectate: cannot write %s: %s\n", snaplog, strerror(errno));
		free(token);
		return 1;
	}
	if (connect_to(&c, port) != 0) {
		printf("{\"result\":\"no_connection\"}\n");
		goto out;
	}
	send_handshake(&c, CC_MSG_SPECTATE, token ? CC_WIRE_AUTH_TOKEN : CC_WIRE_AUTH_NAME, token ? token : name, NULL);
	await(&c, 5000);
	if (!c.welcomed) {
		if (c.refused)
			await_gone(&c, 5000);
		print_outcome(&c);
		rc = 0;
		goto out;
	}
	uint32_t seq = 0;
	/* A spectator that sends inputs anyway: the server must ignore them (and keep it). */
	session_loop(&c, &st, cc_clock_ms() + max_seconds * 1000, INT64_MAX, &seq, true, 0);
	await_close_after_end(&c, &st, await_close);
	const char *result = st.over ? "ended" : c.refused ? "refused" : c.gone ? "disconnected" : "timeout";
	printf("{\"result\":\"%s\",\"reason\":\"%s\",\"slot\":%d,\"team\":%d,\"snapshots\":%llu,\"max_gap_ms\":%lld,"
	       "\"ignored_sent\":%u,\"score\":[%d,%d],\"ended_score\":[%d,%d],\"bot_slots\":%u,\"goals_seen\":%llu,"
	       "\"close_kicked\":\"%s\",\"close_data\":%d,\"fulls\":%llu,\"deltas\":%llu,\"unknown_base\":%llu,"
	       "\"undecodable\":%llu}\n",
	       result, c.reason, c.slot, c.team, (unsigned long long)st.snapshots, (long long)st.max_gap, seq,
	       st.score[0], st.score[1], st.ended[0], st.ended[1], st.bot_slots, (unsigned long long)st.goals,
	       st.close_kicked, st.close_data, (unsigned long long)st.fulls, (unsigned long long)st.deltas,
	       (unsigned long long)st.unknown_base, (unsigned long long)st.bad_messages);
	rc = 0;
out:
	conn_close(&c);
	if (st.snaplog)
		fclose(st.snaplog);
	free(token);
	return rc;
}

/* ---- flood ------------------------------------------------------------------------------ */

static int flood(int argc, char **argv)
{
	int port = (int)arg_long(argc, argv, "port", 0);
	long pps = arg_long(argc, argv, "pps", 0), seconds = arg_long(argc, argv, "seconds", 5);
	bool rejoin = arg_long(argc, argv, "rejoin", 0) != 0;
	char *token = read_token(arg(argc, argv, "token"));
	struct conn c;
	memset(&c, 0, sizeof c);
	if (port <= 0 || !token || pps < 0 || seconds < 1) {
		fprintf(stderr, "gsclient flood: --port, a readable --token, --pps >= 0 and --seconds >= 1 are required\n");
		free(token);
		return 2;
	}
	int64_t start = cc_clock_ns(), end = start + (int64_t)seconds * 1000000000LL;
	uint64_t sent = 0, kicks = 0, joins = 0;
	const char *result = "done";
	for (;;) {
		if (connect_to(&c, port) != 0) {
			result = "no_connection";
			break;
		}
		send_hello(&c, PROTOCOL, token);
		await(&c, 5000);
		if (!c.welcomed) {
			result = c.refused ? "refused" : "not_admitted";
			break;
		}
		joins++;
		c.welcomed = false;
		uint64_t sent0 = sent;
		int64_t t0 = cc_clock_ns();
		uint16_t seq = 0;
		while (!c.gone && !c.refused && cc_clock_ns() < end) {
			/* Paced: every packet due by now; unpaced: a batch, then a look at what came back. */
			int64_t due = pps ? (int64_t)((double)(sent - sent0) * 1e9 / (double)pps) + t0 : cc_clock_ns();
			for (int b = 0; b < 64 && cc_clock_ns() >= due; b++) {
				seq++;
				send_input(&c, seq, seq < 4 ? seq : 4, 0, 1);
				sent++;
				if (pps)
					due = (int64_t)((double)(sent - sent0) * 1e9 / (double)pps) + t0;
			}
			ENetEvent ev;
			while (enet_host_service(c.host, &ev, pps ? 1 : 0) > 0) {
				if (ev.type == ENET_EVENT_TYPE_DISCONNECT) {
					c.gone = true;
				} else if (ev.type == ENET_EVENT_TYPE_RECEIVE) {
					if (ev.channelID == 0 && ev.packet->dataLength >= 2)
						on_control(&c, ev.packet->data, ev.packet->dataLength);
					enet_packet_destroy(ev.packet);
				}
				if (pps)
					break;
			}
		}
		if (c.refused) {
			kicks++;
			await_gone(&c, 3000);
		}
		result = c.refused ? "kicked" : c.gone ? "disconnected" : "done";
		if (!rejoin || !c.refused || cc_clock_ns() >= end)
			break;
		conn_close(&c);
		memset(&c, 0, sizeof c);
	}
	printf("{\"result\":\"%s\",\"reason\":\"%s\",\"detail\":\"%s\",\"sent\":%llu,\"joins\":%llu,\"kicks\":%llu,"
	       "\"seconds\":%.2f}\n",
	       result, c.reason, c.detail, (unsigned long long)sent, (unsigned long long)joins, (unsigned long long)kicks,
	       (double)(cc_clock_ns() - start) / 1e9);
	conn_close(&c);
	free(token);
	return 0;
}

/* ---- idle ------------------------------------------------------------------------------- */

static int idle(int argc, char **argv)
{
	int port = (int)arg_long(argc, argv, "port", 0);
	long count = arg_long(argc, argv, "count", 8), seconds = arg_long(argc, argv, "seconds", 8);
	if (port <= 0 || count < 1 || count > 64 || seconds < 1) {
		fprintf(stderr, "gsclient idle: --port, --count=1..64 and --seconds >= 1 are required\n");
		return 2;
	}
	ENetAddress a = { .port = (enet_uint16)port };
	enet_address_set_host_ip(&a, "127.0.0.1");
	ENetHost *h = enet_host_create(NULL, (size_t)count, 3, 0, 0);
	if (!h)
		return 1;
	for (long i = 0; i < count; i++)
		if (!enet_host_connect(h, &a, 3, 0)) {
			enet_host_destroy(h);
			return 1;
		}
	long connected = 0, disconnected = 0;
	char reasons[32][40];
	long reason_n[32] = { 0 };
	int nreasons = 0;
	bool told = false;
	int64_t start = cc_clock_ms(), end = start + seconds * 1000;
	ENetEvent ev;
	while (cc_clock_ms() < end) {
		if (!told && (connected == count || cc_clock_ms() - start > 5000)) {
			printf("{\"event\":\"connected\",\"count\":%ld}\n", connected);
			told = true;
		}
		if (enet_host_service(h, &ev, 20) <= 0)
			continue;
		if (ev.type == ENET_EVENT_TYPE_CONNECT) {
			connected++;
		} else if (ev.type == ENET_EVENT_TYPE_DISCONNECT) {
			disconnected++;
		} else if (ev.type == ENET_EVENT_TYPE_RECEIVE) {
			struct cc_wire_msg m;
			if (cc_wire_decode(ev.packet->data, ev.packet->dataLength, &m, NULL) == 0 && m.id == CC_MSG_REFUSED) {
				const char *r = cc_wire_reason_name(m.u.refused.reason);
				int k = 0;
				while (k < nreasons && strcmp(reasons[k], r) != 0)
					k++;
				if (k == nreasons && nreasons < 32)
					snprintf(reasons[nreasons++], sizeof reasons[0], "%s", r);
				if (k < 32)
					reason_n[k]++;
			}
			enet_packet_destroy(ev.packet);
		}
	}
	printf("{\"result\":\"idle\",\"connected\":%ld,\"disconnected\":%ld,\"refused\":{", connected, disconnected);
	for (int k = 0; k < nreasons; k++)
		printf("%s\"%s\":%ld", k ? "," : "", reasons[k], reason_n[k]);
	printf("}}\n");
	enet_host_destroy(h);
	return 0;
}


/* ---- multi ------------------------------------------------------------------------------ */

enum mc_phase { MC_IDLE, MC_CONNECTING, MC_HELLO, MC_PLAYING, MC_FAILED };

struct mclient {
	struct conn c;
	struct play_stats st;
	char *token;
	int port;
	int server; /* index of its port among the list's distinct ports */
	enum mc_phase phase;
	int64_t phase_ms; /* when its handshake began */
	uint32_t seq;
};

static volatile sig_atomic_t multi_stop;
static void multi_on_signal(int sig)
{
	(void)sig;
	multi_stop = 1;
}

/* Input like send_input's, queued without a flush: the service that follows sends it. */
static void queue_input(struct conn *c, uint32_t seq)
{
	struct cc_wire_msg m = { .id = CC_MSG_INPUT };
	int count = seq < 4 ? (int)seq : 4;
	m.u.input.newest_seq = (uint16_t)seq;
	m.u.input.count = (uint16_t)count;
	for (int i = 0; i < count; i++) {
		m.u.input.inputs[i].thrust[2] = 100;
		m.u.input.inputs[i].turn[1] = (int8_t)((seq - (uint32_t)i) % 50 - 25);
	}
	uint8_t buf[CC_WIRE_MAX_PACKET];
	size_t n = encode(&m, buf, sizeof buf);
	if (n)
		enet_peer_send(c->peer, CC_WIRE_CH_INPUT, enet_packet_create(buf, n, 0));
}

/* Reads FILE's "PORT TOKENFILE" lines into *out (count returned), or -1 with a message. */
static int multi_list(const char *file, struct mclient **out, int *n_servers)
{
	FILE *f = fopen(file, "r");
	if (!f) {
		fprintf(stderr, "gsclient multi: cannot read %s: %s\n", file, strerror(errno));
		return -1;
	}
	struct mclient *v = NULL;
	int n = 0, cap = 0, ports[4096], np = 0, line_no = 0;
	char line[4400], path[4096];
	while (fgets(line, sizeof line, f)) {
		line_no++;
		int port = 0;
		if (line[0] == '\n' || line[0] == '#')
			continue;
		if (sscanf(line, "%d %4095s", &port, path) != 2 || port <= 0 || port > 65535) {
			fprintf(stderr, "gsclient multi: %s line %d: want \"PORT TOKENFILE\"\n", file, line_no);
			goto fail;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			struct mclient *w = realloc(v, (size_t)cap * sizeof *v);
			if (!w)
				goto fail;
			v = w;
		}
		struct mclient *m = &v[n];
		memset(m, 0, sizeof *m);
		m->st = (struct play_stats){ .ended = { -1, -1 }, .close_data = -1 };
		m->port = port;
		if (!(m->token = read_token(path))) {
			fprintf(stderr, "gsclient multi: %s line %d: cannot read the token %s\n", file, line_no, path);
			goto fail;
		}
		n++;
		int k = 0;
		while (k < np && ports[k] != port)
			k++;
		if (k == np) {
			if (np == (int)CC_ARRAY_LEN(ports)) {
				fprintf(stderr, "gsclient multi: more than %d servers\n", np);
				goto fail;
			}
			ports[np++] = port;
		}
		m->server = k;
	}
	fclose(f);
	if (n == 0) {
		fprintf(stderr, "gsclient multi: %s lists no client\n", file);
		free(v);
		return -1;
	}
	*out = v;
	*n_servers = np;
	return n;
fail:
	for (int i = 0; i < n; i++)
		free(v[i].token);
	free(v);
	fclose(f);
	return -1;
}

static int multi(int argc, char **argv)
{
	const char *list = arg(argc, argv, "list");
	long max_seconds = arg_long(argc, argv, "max-seconds", 600);
	long per_server = arg_long(argc, argv, "handshakes-per-server", 3);
	if (!list || max_seconds < 1 || per_server < 1) {
		fprintf(stderr, "gsclient multi: --list=FILE is required; --max-seconds >= 1, --handshakes-per-server >= 1\n");
		return 2;
	}
	struct mclient *v = NULL;
	int n_servers = 0, n = multi_list(list, &v, &n_servers);
	if (n < 0)
		return 2;
	/* One socket a client: lift the descriptor limit to its hard cap. */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	signal(SIGTERM, multi_on_signal);
	signal(SIGINT, multi_on_signal);
	int *inflight = calloc((size_t)n_servers, sizeof *inflight);
	if (!inflight) {
		free(v);
		return 1;
	}
	ENetAddress a;
	enet_address_set_host_ip(&a, "127.0.0.1");
	const int64_t tick_ns = 1000000000LL / CC_WIRE_TICK_RATE;
	int64_t start_ms = cc_clock_ms(), connected_ms = 0, end_ms = start_ms + max_seconds * 1000;
	int64_t next = cc_clock_ns();
	int playing = 0, failed = 0;
	char first_reason[400] = "";
	bool told = false;
	int64_t max_lag = 0, late_loops = 0; /* once connected: how late the loop woke, and times by over a tick */
	while (!multi_stop && cc_clock_ms() < end_ms) {
		int64_t now_ms = cc_clock_ms();
		if (told) {
			int64_t lag = cc_clock_ns() - next;
			max_lag = lag > max_lag ? lag : max_lag;
			late_loops += lag > tick_ns;
		}
		for (int i = 0; i < n; i++) {
			struct mclient *m = &v[i];
			if (m->phase == MC_IDLE && inflight[m->server] < per_server) {
				memset(&m->c, 0, sizeof m->c);
				m->c.slot = m->c.team = -1;
				a.port = (enet_uint16)m->port;
				m->c.host = enet_host_create(NULL, 1, 3, 0, 0);
				m->c.peer = m->c.host ? enet_host_connect(m->c.host, &a, 3, 0) : NULL;
				m->phase = MC_CONNECTING;
				m->phase_ms = now_ms;
				inflight[m->server]++;
				if (!m->c.peer)
					m->c.gone = true; /* failed below */
			}
			if (m->phase == MC_PLAYING)
				queue_input(&m->c, ++m->seq);
			ENetEvent ev;
			while (m->phase != MC_IDLE && m->phase != MC_FAILED && !m->c.gone &&
			       enet_host_service(m->c.host, &ev, 0) > 0) {
				if (ev.type == ENET_EVENT_TYPE_CONNECT) {
					m->c.connected = true;
					send_hello(&m->c, PROTOCOL, m->token);
					m->phase = MC_HELLO;
				} else if (ev.type == ENET_EVENT_TYPE_DISCONNECT) {
					m->c.gone = true;
				} else if (ev.type == ENET_EVENT_TYPE_RECEIVE) {
					on_session_packet(&m->c, &m->st, ev.channelID, ev.packet->data, ev.packet->dataLength);
					enet_packet_destroy(ev.packet);
				}
			}
			bool handshaking = m->phase == MC_CONNECTING || m->phase == MC_HELLO;
			if (handshaking && m->c.welcomed && !m->c.refused && !m->c.gone) {
				m->phase = MC_PLAYING;
				inflight[m->server]--;
				playing++;
			} else if ((m->phase != MC_IDLE && m->phase != MC_FAILED) &&
				   (m->c.refused || m->c.gone || m->st.over || (handshaking && now_ms - m->phase_ms > 10000))) {
				if (handshaking)
					inflight[m->server]--;
				else
					playing--;
				if (!first_reason[0])
					snprintf(first_reason, sizeof first_reason, "client %d (port %d): %s%s%s", i, m->port,
						 m->st.over	? "match_ended"
						 : m->c.refused ? m->c.reason
						 : m->c.gone	? "disconnected"
								: "no_welcome_in_10s",
						 m->c.detail[0] ? " " : "", m->c.detail);
				m->phase = MC_FAILED;
				failed++;
			}
		}
		if (!told && playing + failed == n) {
			connected_ms = cc_clock_ms();
			printf("{\"event\":\"connected\",\"clients\":%d,\"playing\":%d,\"failed\":%d,\"ms\":%lld}\n", n, playing,
			       failed, (long long)(connected_ms - start_ms));
			told = true;
		}
		/* Sleep to the next tick; a loop that fell behind starts afresh rather than bursting. */
		next += tick_ns;
		if (next < cc_clock_ns() - tick_ns)
			next = cc_clock_ns();
		struct timespec ts = { .tv_sec = (time_t)(next / 1000000000LL), .tv_nsec = (long)(next % 1000000000LL) };
		while (!multi_stop && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
	}
	uint64_t snaps = 0, min_snaps = UINT64_MAX, inputs = 0, bad = 0, unknown = 0;
	for (int i = 0; i < n; i++) {
		struct mclient *m = &v[i];
		snaps += m->st.snapshots;
		inputs += m->seq;
		bad += m->st.bad_messages;
		unknown += m->st.unknown_base;
		if (m->phase == MC_PLAYING && m->st.snapshots < min_snaps)
			min_snaps = m->st.snapshots;
		if (m->c.peer && !m->c.gone)
			enet_peer_disconnect_now(m->c.peer, 0); /* one datagram, no wait: hundreds of clients end at once */
		if (m->c.host)
			enet_host_destroy(m->c.host);
		free(m->token);
	}
	printf("{\"result\":\"done\",\"clients\":%d,\"playing\":%d,\"failed\":%d,\"seconds\":%.2f,\"snapshots\":%llu,"
	       "\"min_snapshots\":%llu,\"inputs\":%llu,\"undecodable\":%llu,\"unknown_base\":%llu,\"max_lag_ms\":%.2f,"
	       "\"late_loops\":%lld,\"reason\":\"%s\"}\n",
	       n, playing, failed, told ? (double)(cc_clock_ms() - connected_ms) / 1000.0 : 0.0, (unsigned long long)snaps,
	       (unsigned long long)(min_snaps == UINT64_MAX ? 0 : min_snaps), (unsigned long long)inputs,
	       (unsigned long long)bad, (unsigned long long)unknown, (double)max_lag / 1e6, (long long)late_loops,
	       first_reason);
	free(inflight);
	free(v);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: gsclient mint|play|spectate|hostile|flood|idle|multi|community-{e2e,property,slow,matches,hostile} --name=value...\n");
		return 2;
	}
	if (cc_crypto_init() != 0 || enet_initialize() != 0)
		return 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	int rc = strcmp(argv[1], "mint") == 0	 ? mint(argc, argv)
		 : strcmp(argv[1], "play") == 0	 ? play(argc, argv)
		 : strcmp(argv[1], "hostile") == 0 ? hostile(argc, argv)
		 : strcmp(argv[1], "spectate") == 0 ? spectate(argc, argv)
		 : strcmp(argv[1], "flood") == 0 ? flood(argc, argv)
		 : strcmp(argv[1], "idle") == 0	 ? idle(argc, argv)
		 : strcmp(argv[1], "multi") == 0 ? multi(argc, argv)
		 : strncmp(argv[1], "community-", 10) == 0 ? community_main(argc, argv)
						 : 2;
	enet_deinitialize();
	return rc;
}
