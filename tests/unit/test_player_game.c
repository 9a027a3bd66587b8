/*
 * cc-player's game stage (tests/player/game.c) against a small game server
 * in this process: real ENet on loopback, the real codec (game/wire), the
 * real simulation and lifecycle (game/sim, game/match_lifecycle). The
 * server here is a test fake with switches for misbehaviour; the real
 * cc-gameserver is proven with cc-player by the end-to-end demo test.
 *
 * Cases: a 3v3 plays to a checked end (every player OK, the server got
 * every player's inputs and the chasers moved); a refused token, a welcome
 * for another slot, a server that lies about the final score, one that
 * disconnects mid-match, and one that sends unknown ids (skipped, the
 * game still OK); a server that binds its port only after the players
 * first tried it (connects resent at PC_GAME_CONNECT_RETRY_MS).
 */
#include <arpa/inet.h>
#include <enet/enet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "support.h"
#include "game/match_lifecycle.h"
#include "game/sim.h"
#include "game/wire.h"
#include "sys/clock.h"
#include "../player/game.h"
#include "sys/banned.h"

#define PLAYERS 6
#define TICK_NS (1000000000LL / 60)

enum fake_mode {
	FAKE_HONEST,
	FAKE_REFUSE_SLOT_2, /* refuses slot 2's token as bad_token */
	FAKE_WRONG_SLOT,    /* welcomes slot 1 as slot 3 */
	FAKE_LIE_SCORE,     /* match_end says one goal more for team 1 than the snapshots */
	FAKE_VANISH,        /* disconnects everyone two seconds into PLAYING */
	FAKE_UNKNOWN_IDS,   /* sends an unknown id every 30 ticks */
};

struct fake_peer {
	ENetPeer *peer;
	int slot;                     /* -1 until hello */
	struct cc_sim_input input;    /* newest input */
	uint16_t seq;                 /* its sequence */
	bool have_input;
	long inputs;                  /* input messages received */
};

struct fake_server {
	enum fake_mode mode;
	ENetHost *host;
	uint16_t port;
	pthread_t tid;
	atomic_bool stop;
	struct fake_peer peers[PLAYERS];
	int welcomed;
	struct cc_sim sim;
	struct cc_match match;
	bool begun;
	uint32_t tick;
	int64_t start_ns;             /* tick n was due at start_ns + (n - 1) * TICK_NS: the server clock */
	int64_t lobby_since_ms;       /* 0 until LOBBY */
	struct cc_sim_vec3 start[PLAYERS]; /* ships' kickoff positions, to see them move */
	float moved[PLAYERS];         /* farthest any ship got from its spawn */
	int goals;
};

static int send_to(ENetPeer *peer, const struct cc_wire_msg *m)
{
	uint8_t buf[CC_WIRE_MAX_PACKET];
	size_t len;
	const struct cc_wire_msg_info *info = cc_wire_msg_info(m->id);
	ck_assert_ptr_nonnull(info);
	ck_assert_int_eq(cc_wire_encode(m, buf, sizeof buf, &len), 0);
	ENetPacket *pkt = enet_packet_create(buf, len, info->reliable ? ENET_PACKET_FLAG_RELIABLE : 0);
	int rc = enet_peer_send(peer, (enet_uint8)info->channel, pkt);
	if (rc != 0)
		enet_packet_destroy(pkt); /* a peer already disconnecting refuses it, and the packet stays ours */
	return rc;
}

static void broadcast(struct fake_server *s, const struct cc_wire_msg *m)
{
	for (int i = 0; i < PLAYERS; i++)
		if (s->peers[i].peer && s->peers[i].slot >= 0)
			(void)send_to(s->peers[i].peer, m);
}

static void hello(struct fake_server *s, struct fake_peer *fp, const struct cc_wire_hello *h)
{
	struct cc_wire_msg m;
	int slot = -1;
	memset(&m, 0, sizeof m);
	if (sscanf(h->credential, "slot-%d", &slot) != 1 || slot < 0 || slot >= PLAYERS ||
	    (s->mode == FAKE_REFUSE_SLOT_2 && slot == 2)) {
		m.id = CC_MSG_REFUSED;
		m.u.refused.reason = CC_REASON_BAD_TOKEN;
		m.u.refused.protocol_version = CC_WIRE_PROTOCOL_VERSION;
		memcpy(m.u.refused.detail, "test", 5);
		m.u.refused.detail_len = 4;
		(void)send_to(fp->peer, &m);
		enet_peer_disconnect_later(fp->peer, CC_REASON_BAD_TOKEN);
		return;
	}
	fp->slot = slot;
	s->welcomed++;
	m.id = CC_MSG_WELCOME;
	m.u.welcome.protocol_version = CC_WIRE_PROTOCOL_VERSION;
	m.u.welcome.tick_rate = 60;
	m.u.welcome.snapshot_rate = 30;
	m.u.welcome.mode = CC_WIRE_MODE_ALLOCATED;
	m.u.welcome.slot = (uint8_t)(s->mode == FAKE_WRONG_SLOT && slot == 1 ? 3 : slot);
	m.u.welcome.team = (uint8_t)(slot % 2);
	m.u.welcome.max_players = PLAYERS;
	m.u.welcome.max_inputs = 8;
	m.u.welcome.match_state = (uint8_t)s->match.state;
	m.u.welcome.server_tick = s->tick;
	memcpy(m.u.welcome.arena, "aurora_ring", 12);
	m.u.welcome.arena_len = 11;
	(void)send_to(fp->peer, &m);
	for (int i = 0; i < PLAYERS; i++) {
		memset(&m, 0, sizeof m);
		m.id = CC_MSG_PLAYER_INFO;
		m.u.player_info.slot = (uint8_t)i;
		m.u.player_info.team = (uint8_t)(i % 2);
		m.u.player_info.flags = CC_WIRE_PI_CONNECTED;
		(void)send_to(fp->peer, &m);
	}
}

static void receive(struct fake_server *s, struct fake_peer *fp, const ENetEvent *ev)
{
	struct cc_wire_msg m;
	struct cc_wire_fault fault;
	int rc = cc_wire_decode_from(ev->packet->data, ev->packet->dataLength, CC_WIRE_TO_SERVER, ev->channelID, &m,
				     &fault);
	ck_assert_msg(rc == 0, "the client sent a packet the codec refuses: %s", fault.text);
	if (m.id == CC_MSG_HELLO) {
		ck_assert_int_eq(m.u.hello.protocol_version, CC_WIRE_PROTOCOL_VERSION);
		ck_assert_int_eq(m.u.hello.auth, CC_WIRE_AUTH_TOKEN);
		hello(s, fp, &m.u.hello);
	} else if (m.id == CC_MSG_INPUT && fp->slot >= 0) {
		const struct cc_wire_input_msg *in = &m.u.input;
		ck_assert_uint_ge(in->count, 1);
		ck_assert_uint_le(in->count, 8);
		fp->inputs++;
		if (!fp->have_input || cc_wire_seq_newer(in->newest_seq, fp->seq)) {
			cc_wire_input_to_sim(&in->inputs[0], &fp->input);
			fp->seq = in->newest_seq;
			fp->have_input = true;
		}
	} else if (m.id == CC_MSG_PING && fp->slot >= 0) {
		/* As cc-gameserver answers: the tick last run and how far past its due time we are. */
		struct cc_wire_msg pong = { .id = CC_MSG_PONG };
		int64_t into = cc_clock_ns() - (s->start_ns + (int64_t)(s->tick - 1) * TICK_NS);
		into = into < 0 ? 0 : into >= TICK_NS ? TICK_NS - 1 : into;
		pong.u.pong.client_time = m.u.ping.client_time;
		pong.u.pong.server_tick = s->tick;
		pong.u.pong.tick_fraction = (uint16_t)(into * 65536 / TICK_NS);
		(void)send_to(fp->peer, &pong);
	}
}

static void send_kickoff(struct fake_server *s)
{
	struct cc_wire_msg m;
	memset(&m, 0, sizeof m);
	m.id = CC_MSG_KICKOFF;
	m.u.kickoff.tick = s->tick + 1;
	cc_wire_body_from_sim(&s->sim.ball, &m.u.kickoff.ball);
	m.u.kickoff.ship_count = PLAYERS;
	for (int i = 0; i < PLAYERS; i++) {
		m.u.kickoff.ships[i].slot = (uint8_t)i;
		cc_wire_body_from_sim(&s->sim.ships[i].body, &m.u.kickoff.ships[i].body);
	}
	broadcast(s, &m);
}

static void send_snapshot(struct fake_server *s)
{
	struct cc_wire_msg m;
	memset(&m, 0, sizeof m);
	m.id = CC_MSG_SNAPSHOT;
	m.u.snapshot.tick = s->tick;
	m.u.snapshot.match_state = (uint8_t)s->match.state;
	m.u.snapshot.score[0] = (uint8_t)s->match.score[0];
	m.u.snapshot.score[1] = (uint8_t)s->match.score[1];
	m.u.snapshot.clock_ticks = s->match.remaining_ticks;
	cc_wire_body_from_sim(&s->sim.ball, &m.u.snapshot.ball);
	m.u.snapshot.player_count = PLAYERS;
	for (int i = 0; i < PLAYERS; i++) {
		struct cc_wire_player_state *ps = &m.u.snapshot.players[i];
		ps->slot = (uint8_t)i;
		ps->flags = CC_WIRE_PF_CONNECTED | (s->peers[i].have_input ? CC_WIRE_PF_HAS_INPUT : 0);
		ps->last_input_seq = s->peers[i].seq;
		ps->boost = cc_wire_boost_pack(s->sim.ships[i].boost);
		cc_wire_body_from_sim(&s->sim.ships[i].body, &ps->body);
	}
	broadcast(s, &m);
}

/* One tick: the loop of match_lifecycle.h, with the events sent as game/wire messages. */
static void tick(struct fake_server *s)
{
	struct cc_sim_events sev = { -1, -1 };
	struct cc_match_events mev;
	struct cc_sim_input inputs[PLAYERS];
	struct cc_wire_msg m;

	s->tick++;
	if (!s->begun && s->welcomed == PLAYERS - (s->mode == FAKE_REFUSE_SLOT_2)) {
		ck_assert_int_eq(cc_match_begin(&s->match, &mev), 0);
		s->begun = true;
	}
	memset(inputs, 0, sizeof inputs);
	for (int i = 0; i < PLAYERS; i++)
		if (s->peers[i].slot >= 0)
			inputs[s->peers[i].slot] = s->peers[i].input;
	if (cc_match_state_runs_sim(s->match.state))
		cc_sim_step(&s->sim, inputs, &sev);
	for (int i = 0; i < PLAYERS; i++) {
		struct cc_sim_vec3 p = s->sim.ships[i].body.pos;
		struct cc_sim_vec3 d = { p.x - s->start[i].x, p.y - s->start[i].y, p.z - s->start[i].z };
		float far = cc_sim_length(d);
		if (far > s->moved[i])
			s->moved[i] = far;
	}
	cc_match_tick(&s->match, sev.goal_team, &mev);
	if (mev.goal_team >= 0) {
		s->goals++;
		memset(&m, 0, sizeof m);
		m.id = CC_MSG_GOAL;
		m.u.goal.tick = s->tick;
		m.u.goal.team = (uint8_t)mev.goal_team;
		m.u.goal.scorer = sev.last_touch >= 0 ? (uint8_t)sev.last_touch : CC_WIRE_SLOT_NONE;
		m.u.goal.score[0] = (uint8_t)s->match.score[0];
		m.u.goal.score[1] = (uint8_t)s->match.score[1];
		broadcast(s, &m);
	}
	if (mev.kickoff) {
		cc_sim_kickoff(&s->sim);
		send_kickoff(s);
	}
	if (mev.state_changed) {
		memset(&m, 0, sizeof m);
		m.id = CC_MSG_MATCH_STATE;
		m.u.match_state.tick = s->tick;
		m.u.match_state.state = (uint8_t)mev.to;
		m.u.match_state.score[0] = (uint8_t)s->match.score[0];
		m.u.match_state.score[1] = (uint8_t)s->match.score[1];
		m.u.match_state.clock_ticks = s->match.remaining_ticks;
		broadcast(s, &m);
	}
	if (mev.ended) {
		memset(&m, 0, sizeof m);
		m.id = CC_MSG_MATCH_END;
		m.u.match_end.tick = s->tick;
		m.u.match_end.score[0] = (uint8_t)mev.final_score[0];
		m.u.match_end.score[1] = (uint8_t)(mev.final_score[1] + (s->mode == FAKE_LIE_SCORE));
		m.u.match_end.winner = mev.winner < 0 ? CC_WIRE_TEAM_NONE : (uint8_t)mev.winner;
		m.u.match_end.reason = (uint8_t)mev.reason;
		broadcast(s, &m);
	}
	if (s->tick % 2 == 0)
		send_snapshot(s);
	if (s->mode == FAKE_UNKNOWN_IDS && s->tick % 30 == 0) {
		static const uint8_t unknown[] = { 0xFE, 0x7F, 1, 2, 3 }; /* id 0x7FFE: no message of ours */
		for (int i = 0; i < PLAYERS; i++)
			if (s->peers[i].peer && s->peers[i].slot >= 0) {
				ENetPacket *pkt = enet_packet_create(unknown, sizeof unknown, ENET_PACKET_FLAG_RELIABLE);
				if (enet_peer_send(s->peers[i].peer, CC_WIRE_CH_CONTROL, pkt) != 0)
					enet_packet_destroy(pkt);
			}
	}
	if (s->mode == FAKE_VANISH && s->match.state == CC_MATCH_PLAYING && s->match.playing_ticks == 120)
		for (int i = 0; i < PLAYERS; i++)
			if (s->peers[i].peer)
				enet_peer_disconnect(s->peers[i].peer, CC_REASON_SHUTTING_DOWN);
	if (s->match.state == CC_MATCH_LOBBY && !s->lobby_since_ms)
		s->lobby_since_ms = cc_clock_ms();
}

static struct fake_peer *peer_of(struct fake_server *s, ENetPeer *peer)
{
	for (int i = 0; i < PLAYERS; i++)
		if (s->peers[i].peer == peer)
			return &s->peers[i];
	for (int i = 0; i < PLAYERS; i++)
		if (!s->peers[i].peer) {
			s->peers[i].peer = peer;
			s->peers[i].slot = -1;
			return &s->peers[i];
		}
	return NULL;
}

static void *server_main(void *arg)
{
	struct fake_server *s = arg;
	int64_t next = cc_clock_ns();
	s->start_ns = next;
	while (!atomic_load(&s->stop)) {
		ENetEvent ev;
		int64_t wait = (next - cc_clock_ns()) / 1000000;
		int rc = enet_host_service(s->host, &ev, wait > 0 ? (enet_uint32)(wait < 5 ? wait : 5) : 0);
		while (rc > 0) {
			struct fake_peer *fp = peer_of(s, ev.peer);
			if (ev.type == ENET_EVENT_TYPE_RECEIVE) {
				if (fp)
					receive(s, fp, &ev);
				enet_packet_destroy(ev.packet);
			} else if (ev.type == ENET_EVENT_TYPE_DISCONNECT && fp) {
				fp->peer = NULL; /* its slot keeps its counters */
			}
			rc = enet_host_service(s->host, &ev, 0);
		}
		if (cc_clock_ns() >= next) {
			tick(s);
			next += TICK_NS;
		}
		enet_host_flush(s->host);
	}
	return NULL;
}

/* Starts the fake on port (0: any; ENet reads back the one bound). */
static void server_start_on(struct fake_server *s, enum fake_mode mode, uint16_t port)
{
	static const uint8_t teams[PLAYERS] = { 0, 1, 0, 1, 0, 1 };
	struct cc_match_config cfg = cc_match_config_default();
	ENetAddress addr;
	memset(s, 0, sizeof *s);
	s->mode = mode;
	for (int i = 0; i < PLAYERS; i++)
		s->peers[i].slot = -1;
	cfg.warmup_ticks = 30;
	cfg.regulation_ticks = 4 * 60;
	cfg.goal_pause_ticks = 30;
	cfg.full_time_ticks = 30;
	cfg.results_ticks = 60;
	cfg.overtime_max_ticks = 60;
	ck_assert_int_eq(cc_match_init(&s->match, &cfg), 0);
	ck_assert_int_eq(cc_sim_init(&s->sim, PLAYERS, teams), 0);
	for (int i = 0; i < PLAYERS; i++)
		s->start[i] = s->sim.ships[i].body.pos;
	ck_assert_int_eq(enet_address_set_host_ip(&addr, "127.0.0.1"), 0);
	addr.port = port;
	s->host = enet_host_create(&addr, PLAYERS * 2, CC_WIRE_CHANNELS, 0, 0);
	ck_assert_ptr_nonnull(s->host);
	s->port = s->host->address.port;
	ck_assert_uint_ne(s->port, 0);
	atomic_init(&s->stop, false);
	ck_assert_int_eq(pthread_create(&s->tid, NULL, server_main, s), 0);
}

static void server_start(struct fake_server *s, enum fake_mode mode)
{
	server_start_on(s, mode, 0);
}

static void server_stop(struct fake_server *s)
{
	atomic_store(&s->stop, true);
	pthread_join(s->tid, NULL);
	enet_host_destroy(s->host);
}

/* Plays PLAYERS players against a fake server in mode; results in r. */
static void play(enum fake_mode mode, struct fake_server *s, struct pc_game_result r[PLAYERS])
{
	struct pc_game_options opts = { .threads = 2, .max_players = PLAYERS, .deadline_ms = 30000, .seed = 7 };
	server_start(s, mode);
	struct pc_game *g = pc_game_start(&opts);
	ck_assert_ptr_nonnull(g);
	for (int i = 0; i < PLAYERS; i++) {
		struct pc_game_assignment a;
		memset(&a, 0, sizeof a);
		memcpy(a.match_id, "00000000-0000-4000-8000-000000000001", CC_UUID_BUF);
		memcpy(a.address, "127.0.0.1", 10);
		a.port = s->port;
		snprintf(a.join_token, sizeof a.join_token, "slot-%d", i);
		a.slot = i;
		a.team = i % 2;
		ck_assert_int_eq(pc_game_add(g, i, &a, (uint64_t)cc_clock_ns(), &r[i]), 0);
	}
	pc_game_finish(g);
	pc_game_free(g);
	server_stop(s);
}

START_TEST(plays_to_a_checked_end)
{
	struct fake_server s;
	struct pc_game_result r[PLAYERS];
	play(FAKE_HONEST, &s, r);
	for (int i = 0; i < PLAYERS; i++) {
		ck_assert_msg(r[i].outcome == PC_GAME_OK, "player %d: %s", i, r[i].problem);
		ck_assert(r[i].score_agrees);
		ck_assert_int_eq(r[i].slot, i);
		ck_assert_int_eq(r[i].team, i % 2);
		ck_assert_uint_eq(r[i].final_score[0], s.match.score[0]);
		ck_assert_uint_eq(r[i].final_score[1], s.match.score[1]);
		ck_assert(r[i].assigned_ns <= r[i].connected_ns && r[i].connected_ns <= r[i].first_snapshot_ns &&
			  r[i].first_snapshot_ns <= r[i].ended_ns && r[i].ended_ns <= r[i].left_ns);
		/* ~4.5 s played at 30 snapshots/s: most of them arrived (loopback loses nothing, a busy machine may lag). */
		ck_assert_uint_gt(r[i].snapshots, 60);
		ck_assert_uint_gt(r[i].inputs_sent, 120);
		ck_assert_int_gt(s.peers[i].inputs, 120); /* the server got them */
		ck_assert_uint_eq(r[i].goals_seen, (unsigned)s.goals);
		ck_assert_uint_eq(r[i].bad_messages, 0);
		ck_assert_uint_ge(r[i].kickoffs, 1);
		/* The chaser flew: every ship left its spawn. */
		ck_assert_msg(s.moved[i] > 3.0f, "ship %d moved at most %.2f m", i, (double)s.moved[i]);
		/* Prediction ran against every snapshot that acknowledged an input (this fake applies the
		 * newest input, not one per tick, so most samples are "held": predict.h). */
		ck_assert_uint_gt(r[i].pred.snapshots, 60);
		ck_assert_uint_eq(r[i].pred.used + r[i].pred.stalled + r[i].pred.held + r[i].pred.kickoff +
					  r[i].pred.stopped + r[i].pred.unmatched + 0,
				  r[i].pred.snapshots);
		/* Clock sync: pings 4/s answered; the estimate of the fake's clock is within its bound. */
		ck_assert_uint_gt(r[i].pongs, 10);
		ck_assert(r[i].clock_valid);
		double truth = (double)(r[i].clock.at_ns - s.start_ns) / TICK_NS + 1; /* tick 1 was due at start */
		double err_ms = (r[i].clock.tick_at - truth) * 1000.0 / 60;
		ck_assert_msg(err_ms <= r[i].clock.bound_ms + 1.0 && err_ms >= -r[i].clock.bound_ms - 1.0,
			      "player %d: clock error %.3f ms, bound %.3f ms", i, err_ms, r[i].clock.bound_ms);
		pc_game_result_release(&r[i]);
	}
	printf("3v3 against the fake server: %u-%u, %u snapshots and %u inputs for player 0\n", s.match.score[0],
	       s.match.score[1], r[0].snapshots, r[0].inputs_sent);
}
END_TEST

struct bad_case {
	const char *what;
	enum fake_mode mode;
	int player;          /* the player that must fail (-1: all) */
	const char *problem; /* substring of its problem */
};

static const struct bad_case bad_cases[] = {
	{ "refused token", FAKE_REFUSE_SLOT_2, 2, "refused: bad_token (test)" },
	{ "welcome for another slot", FAKE_WRONG_SLOT, 1, "welcome gave slot 3 team 1, the assignment slot 1 team 1" },
	{ "the final score is a lie", FAKE_LIE_SCORE, -1, "match_end says" },
	{ "the server vanishes", FAKE_VANISH, -1, "disconnected (data 15) in state playing before match_end" },
};

/* Each misbehaviour fails exactly the players it concerns, with a problem that says what happened. */
START_TEST(misbehaving_server)
{
	const struct bad_case *c = &bad_cases[_i];
	struct fake_server s;
	struct pc_game_result r[PLAYERS];
	play(c->mode, &s, r);
	for (int i = 0; i < PLAYERS; i++) {
		bool concerned = c->player < 0 || c->player == i;
		if (!concerned) {
			ck_assert_msg(r[i].outcome == PC_GAME_OK, "%s: player %d failed too: %s", c->what, i, r[i].problem);
			continue;
		}
		ck_assert_msg(r[i].outcome == PC_GAME_FAILED, "%s: player %d did not fail", c->what, i);
		ck_assert_msg(strstr(r[i].problem, c->problem), "%s: player %d: \"%s\" lacks \"%s\"", c->what, i,
			      r[i].problem, c->problem);
		ck_assert(!r[i].score_agrees);
	}
	for (int i = 0; i < PLAYERS; i++)
		pc_game_result_release(&r[i]);
}
END_TEST

/* Unknown ids are skipped, never fatal (SPEC 11). */
START_TEST(unknown_ids_skipped)
{
	struct fake_server s;
	struct pc_game_result r[PLAYERS];
	play(FAKE_UNKNOWN_IDS, &s, r);
	for (int i = 0; i < PLAYERS; i++) {
		ck_assert_msg(r[i].outcome == PC_GAME_OK, "player %d: %s", i, r[i].problem);
		ck_assert_uint_gt(r[i].unknown_messages, 3);
		ck_assert_uint_eq(r[i].bad_messages, 0);
		pc_game_result_release(&r[i]);
	}
}
END_TEST

/*
 * The assignment comes before its game server listens (the allocator
 * publishes while cc-supervisor starts cc-gameserver): the players' connects
 * first reach a port nobody serves (here a plain UDP socket that counts
 * them), and must come again at PC_GAME_CONNECT_RETRY_MS, not on ENet's own
 * schedule (500 ms, then doubling: a third attempt 1.5 s after the first).
 * Then the server binds that port and every player plays to a checked end.
 */
START_TEST(server_binds_late)
{
	struct fake_server s;
	struct pc_game_result r[PLAYERS];
	/* A thread (one ENet host, one socket) per player: a source port is one player's connects. */
	struct pc_game_options opts = { .threads = PLAYERS, .max_players = PLAYERS, .deadline_ms = 30000, .seed = 7 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof sa;
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	uint16_t port = ntohs(sa.sin_port);
	struct pc_game *g = pc_game_start(&opts);
	ck_assert_ptr_nonnull(g);
	for (int i = 0; i < PLAYERS; i++) {
		struct pc_game_assignment a;
		memset(&a, 0, sizeof a);
		memcpy(a.match_id, "00000000-0000-4000-8000-000000000001", CC_UUID_BUF);
		memcpy(a.address, "127.0.0.1", 10);
		a.port = port;
		snprintf(a.join_token, sizeof a.join_token, "slot-%d", i);
		a.slot = i;
		a.team = i % 2;
		ck_assert_int_eq(pc_game_add(g, i, &a, (uint64_t)cc_clock_ns(), &r[i]), 0);
	}
	/* The first three connects of one player (the first source port seen), within 1 s: ENet alone needs 1.5 s. */
	int64_t first_ms = 0, deadline_ms = cc_clock_ms() + 10000;
	uint16_t src = 0;
	int seen = 0;
	while (seen < 3 && cc_clock_ms() < deadline_ms) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		if (poll(&pfd, 1, 100) <= 0)
			continue;
		uint8_t buf[1500];
		struct sockaddr_in from;
		socklen_t flen = sizeof from;
		if (recvfrom(fd, buf, sizeof buf, 0, (struct sockaddr *)&from, &flen) < 0)
			continue;
		if (!src)
			src = from.sin_port;
		if (from.sin_port != src)
			continue;
		if (seen++ == 0)
			first_ms = cc_clock_ms();
	}
	int64_t span_ms = cc_clock_ms() - first_ms;
	ck_assert_msg(seen == 3, "only %d connect attempts in 10 s", seen);
	ck_assert_msg(span_ms < 1000, "three connect attempts took %lld ms", (long long)span_ms);
	close(fd);
	server_start_on(&s, FAKE_HONEST, port);
	pc_game_finish(g);
	pc_game_free(g);
	server_stop(&s);
	for (int i = 0; i < PLAYERS; i++) {
		ck_assert_msg(r[i].outcome == PC_GAME_OK, "player %d: %s", i, r[i].problem);
		pc_game_result_release(&r[i]);
	}
}
END_TEST

/* Bad hand-offs are refused up front. */
START_TEST(add_refuses)
{
	struct pc_game_options opts = { .threads = 1, .max_players = 1, .deadline_ms = 1000, .seed = 1 };
	struct pc_game_result r;
	struct pc_game_assignment a;
	struct pc_game *g = pc_game_start(&opts);
	ck_assert_ptr_nonnull(g);
	memset(&a, 0, sizeof a);
	ck_assert_int_eq(pc_game_add(g, 0, &a, 0, &r), CC_EINVAL); /* no address */
	memcpy(a.address, "127.0.0.1", 10);
	a.port = 9;
	ck_assert_int_eq(pc_game_add(g, 0, &a, 0, &r), CC_EINVAL); /* no token */
	memcpy(a.join_token, "t", 2);
	a.team = 2;
	ck_assert_int_eq(pc_game_add(g, 0, &a, 0, &r), CC_EINVAL);
	pc_game_free(g);
	opts.threads = 0;
	ck_assert_ptr_null(pc_game_start(&opts));
}
END_TEST

static Suite *player_game_suite(void)
{
	Suite *s = suite_create("player_game");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 90);
	tcase_add_test(tc, plays_to_a_checked_end);
	tcase_add_loop_test(tc, misbehaving_server, 0, CC_ARRAY_LEN(bad_cases));
	tcase_add_test(tc, unknown_ids_skipped);
	tcase_add_test(tc, server_binds_late);
	tcase_add_test(tc, add_refuses);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	if (enet_initialize() != 0) {
		fprintf(stderr, "enet_initialize failed\n");
		return 1;
	}
	int rc = cc_test_run_suite(player_game_suite());
	enet_deinitialize();
	return rc;
}
