/*
 * gameserver - cc-gameserver's benchmarks (make bench, scripts/bench-gameserver.sh).
 *
 *   gameserver sim [--ticks=3600]
 *       One 3v3 match (gameserver/match.c: game/sim under game/match_lifecycle,
 *       six players present, inputs changing every tick) plus one snapshot
 *       encode per snapshot tick, as the server does: CPU ns per tick. Then
 *       K matches stepped together, one thread (one core): the largest K
 *       whose every tick of --trial-ticks fits in 1/60 s ("no missed ticks").
 *   gameserver echo [--seconds=2] [--bytes=100]
 *       Raw ENet reference on loopback, one process, one thread: a client
 *       sends an unreliable packet, the server echoes it; round trips per
 *       second and CPU us per round trip (both hosts).
 *   gameserver ready --port=P -- CMD...
 *       Starts CMD (cc-gameserver) and polls its probe, TCP 127.0.0.1:P
 *       GET /readyz, in a tight loop: ms from fork to the first 200. Then
 *       SIGTERM, and the child's peak RSS (wait4's ru_maxrss, KiB).
 * Each mode prints one JSON line.
 */
#include <arpa/inet.h>
#include <enet/enet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../gameserver/match.h"
#include "../../gameserver/wire_glue.h"
#include "sys/clock.h"
#include "sys/banned.h"

static long arg_long(int argc, char **argv, const char *name, long dflt)
{
	size_t n = strlen(name);
	for (int i = 2; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strncmp(argv[i], "--", 2) == 0 && strncmp(argv[i] + 2, name, n) == 0 && argv[i][2 + n] == '=')
			return strtol(argv[i] + 3 + n, NULL, 10);
	return dflt;
}

static int64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void nop_event(void *ctx, const struct gs_event *ev)
{
	(void)ctx;
	(void)ev;
}

static struct gs_match *new_match(void)
{
	struct gs_match_options o = { .n_slots = 6, .expected = 6, .match_seconds = 3600, .warmup_seconds = 1,
				      .connect_window_seconds = 1, .goal_pause_seconds = 3, .overtime_max_seconds = 60 };
	for (int i = 0; i < 6; i++)
		o.teams[i] = (uint8_t)(i % 2);
	struct gs_match *m = gs_match_create(&o);
	for (int i = 0; m && i < 6; i++)
		gs_match_set_present(m, i, i % 2, true);
	return m;
}

/* One server tick of one match: inputs, step, and every 3rd tick a snapshot encode. Returns bytes encoded. */
static size_t tick_match(struct gs_match *m, uint32_t t, uint8_t *buf)
{
	static struct gs_input_state st[GS_MATCH_MAX_SLOTS];
	const struct gs_input_state *inputs[GS_MATCH_MAX_SLOTS] = { NULL };
	bool connected[GS_MATCH_MAX_SLOTS] = { false };
	for (int i = 0; i < 6; i++) {
		/* A chasing-ish pattern that changes every tick, so no branch settles. */
		struct gs_input in = { .seq = t, .throttle = (int8_t)(100 - (int)((t * 7 + (unsigned)i * 13) % 200)),
				       .strafe = (int8_t)((t * 3 + (unsigned)i) % 255 - 127), .yaw = (int8_t)((t + (unsigned)i * 40) % 255 - 127),
				       .pitch = (int8_t)((t * 5) % 255 - 127), .buttons = (uint8_t)((t / 90 + (unsigned)i) % 3 == 0) };
		gs_match_input(m, i, &in);
		st[i].last_consumed = t;
		st[i].consumed = t;
		inputs[i] = &st[i];
		connected[i] = true;
	}
	gs_match_step(m, nop_event, NULL);
	if (t % 3 != 0)
		return 0;
	struct cc_wire_msg msg;
	size_t len = 0;
	gs_wire_snapshot(&msg, m, connected, inputs);
	return cc_wire_encode(&msg, buf, CC_WIRE_MAX_PACKET, &len) == 0 ? len : 0;
}

static int bench_sim(int argc, char **argv)
{
	long ticks = arg_long(argc, argv, "ticks", 3600), trial = arg_long(argc, argv, "trial-ticks", 120);
	uint8_t buf[CC_WIRE_MAX_PACKET];
	struct gs_match *m = new_match();
	if (!m)
		return 1;
	size_t bytes = 0, snaps = 0;
	int64_t start = cpu_ns();
	for (long t = 1; t <= ticks; t++) {
		size_t n = tick_match(m, (uint32_t)t, buf);
		bytes += n;
		snaps += n > 0;
	}
	double per_tick_ns = (double)(cpu_ns() - start) / (double)ticks;
	gs_match_free(m);

	/* Matches per core: K matches per tick, every tick under 1/60 s. */
	const int64_t budget = 1000000000 / 60;
	long best = 0, k = 64, worst_at_best = 0;
	long lo = 0, hi = 0;
	for (;;) {
		struct gs_match **ms = calloc((size_t)k, sizeof *ms);
		for (long i = 0; i < k; i++)
			ms[i] = new_match();
		int64_t worst = 0;
		long missed = 0;
		for (long t = 1; t <= trial; t++) {
			int64_t t0 = cpu_ns();
			for (long i = 0; i < k; i++)
				(void)tick_match(ms[i], (uint32_t)t, buf);
			int64_t d = cpu_ns() - t0;
			if (d > worst)
				worst = d;
			missed += d > budget;
		}
		for (long i = 0; i < k; i++)
			gs_match_free(ms[i]);
		free(ms);
		if (missed == 0) {
			best = k;
			worst_at_best = worst;
			lo = k;
		} else {
			hi = k;
		}
		if (hi == 0)
			k *= 2; /* still growing */
		else if (hi - lo <= (lo / 20 > 1 ? lo / 20 : 1))
			break; /* within 5% */
		else
			k = (lo + hi) / 2;
		if (k > 50000)
			break;
	}
	printf("{\"mode\":\"sim\",\"ticks\":%ld,\"cpu_ns_per_tick_3v3\":%.0f,\"snapshot_payload_bytes\":%.1f,"
	       "\"matches_per_core\":%ld,\"worst_tick_ms_at_that\":%.2f,\"trial_ticks\":%ld}\n",
	       ticks, per_tick_ns, snaps ? (double)bytes / (double)snaps : 0.0, best, (double)worst_at_best / 1e6, trial);
	return 0;
}

static int bench_echo(int argc, char **argv)
{
	long seconds = arg_long(argc, argv, "seconds", 2), size = arg_long(argc, argv, "bytes", 100);
	ENetAddress a = { .host = ENET_HOST_ANY, .port = 0 };
	enet_address_set_host_ip(&a, "127.0.0.1");
	ENetHost *srv = enet_host_create(&a, 4, 3, 0, 0);
	ENetHost *cli = enet_host_create(NULL, 1, 3, 0, 0);
	if (!srv || !cli)
		return 1;
	ENetAddress sa;
	if (enet_socket_get_address(srv->socket, &sa) != 0)
		return 1;
	enet_address_set_host_ip(&sa, "127.0.0.1");
	ENetPeer *peer = enet_host_connect(cli, &sa, 3, 0);
	ENetEvent ev;
	bool up = false;
	for (int i = 0; i < 500 && !up; i++) {
		while (enet_host_service(srv, &ev, 0) > 0)
			;
		if (enet_host_service(cli, &ev, 2) > 0 && ev.type == ENET_EVENT_TYPE_CONNECT)
			up = true;
	}
	if (!up)
		return 1;
	uint8_t payload[1200] = { 0 };
	long trips = 0;
	int64_t end = cc_clock_ms() + seconds * 1000, c0 = cpu_ns(), w0 = cc_clock_ns();
	while (cc_clock_ms() < end) {
		enet_peer_send(peer, 1, enet_packet_create(payload, (size_t)size, 0));
		enet_host_flush(cli);
		bool back = false;
		for (int spin = 0; spin < 1000 && !back; spin++) {
			while (enet_host_service(srv, &ev, 0) > 0)
				if (ev.type == ENET_EVENT_TYPE_RECEIVE) {
					enet_peer_send(ev.peer, 2, enet_packet_create(ev.packet->data, ev.packet->dataLength, 0));
					enet_packet_destroy(ev.packet);
					enet_host_flush(srv);
				}
			while (enet_host_service(cli, &ev, 0) > 0)
				if (ev.type == ENET_EVENT_TYPE_RECEIVE) {
					enet_packet_destroy(ev.packet);
					back = true;
				}
		}
		trips += back;
	}
	double cpu = (double)(cpu_ns() - c0), wall = (double)(cc_clock_ns() - w0);
	printf("{\"mode\":\"echo\",\"bytes\":%ld,\"round_trips\":%ld,\"round_trips_per_s\":%.0f,\"cpu_us_per_round_trip\":%.2f,"
	       "\"cpu_us_per_packet\":%.2f}\n",
	       size, trips, (double)trips / (wall / 1e9), cpu / 1e3 / (double)trips, cpu / 1e3 / (double)trips / 2);
	enet_host_destroy(cli);
	enet_host_destroy(srv);
	return 0;
}

/* One probe; true on a 200. */
static bool probe(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	char buf[32] = "";
	bool ok = false;
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) {
		static const char req[] = "GET /readyz HTTP/1.0\r\n\r\n";
		if (write(fd, req, sizeof req - 1) == (ssize_t)(sizeof req - 1) && read(fd, buf, sizeof buf - 1) > 12)
			ok = strncmp(buf + 9, "200", 3) == 0;
	}
	if (fd >= 0)
		close(fd);
	return ok;
}

static int bench_ready(int argc, char **argv)
{
	int port = (int)arg_long(argc, argv, "port", 0), cmd = 0;
	for (int i = 2; i < argc; i++)
		if (strcmp(argv[i], "--") == 0)
			cmd = i + 1;
	if (!port || !cmd || cmd >= argc)
		return 2;
	int64_t t0 = cc_clock_ns();
	pid_t pid = fork();
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);
		if (devnull >= 0)
			dup2(devnull, 2);
		execv(argv[cmd], argv + cmd);
		_exit(127);
	}
	double ms = -1;
	while (cc_clock_ns() - t0 < 5000000000LL) {
		if (probe(port)) {
			ms = (double)(cc_clock_ns() - t0) / 1e6;
			break;
		}
		if (waitpid(pid, NULL, WNOHANG) == pid)
			break;
		/* Not a busy loop: on a loaded machine that would steal the child's core. */
		struct timespec pause = { 0, 250 * 1000 };
		nanosleep(&pause, NULL);
	}
	kill(pid, SIGTERM);
	int status;
	struct rusage ru;
	wait4(pid, &status, 0, &ru);
	printf("{\"mode\":\"ready\",\"ready_ms\":%.2f,\"idle_max_rss_kib\":%ld}\n", ms, ru.ru_maxrss);
	return ms < 0;
}

int main(int argc, char **argv)
{
	if (argc < 2 || enet_initialize() != 0)
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	int rc = strcmp(argv[1], "sim") == 0	? bench_sim(argc, argv)
		 : strcmp(argv[1], "echo") == 0 ? bench_echo(argc, argv)
		 : strcmp(argv[1], "ready") == 0 ? bench_ready(argc, argv)
						 : 2;
	enet_deinitialize();
	return rc;
}
