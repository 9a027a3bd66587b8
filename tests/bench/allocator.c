/*
 * allocator - set-up for scripts/bench-allocator.sh (make bench).
 *
 *   allocator matches DSN N THREADS
 *       creates N 3v3 casual matches in ALLOCATING the way production does:
 *       six QUEUED tickets each (SQL: the matcher's input), the matcher's
 *       claim (store/formation_claim) and every participant's accept
 *       (store/proposals, what cc-api's route runs), on THREADS connections.
 *   allocator servers DSN N OWNER PORT
 *       records N idle local game servers of OWNER on ports PORT.. through
 *       store/game_servers (the pgbench reference has no processes: it
 *       measures the SQL alone).
 *
 * Prints "created N in S s". Exit 1 on any failure, saying which.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys/clock.h"
#include "sys/crypto.h"
#include "sys/pg.h"
#include "store/formation_claim.h"
#include "store/game_servers.h"
#include "store/proposals.h"
#include "sys/banned.h"

static const char *dsn;
static atomic_int remaining;
static atomic_int failed;

struct respond_tx {
	const char *proposal_id, *player_id;
	struct cc_match match;
	enum cc_proposal_verdict verdict;
};

static int respond_tx(struct cc_pg *pg, void *arg)
{
	struct respond_tx *t = arg;
	return cc_proposal_respond(pg, t->proposal_id, t->player_id, true, 1, 3600, &t->verdict, NULL, &t->match);
}

static const char sql_tickets[] =
	"WITH p AS (INSERT INTO players (id) SELECT gen_random_uuid() FROM generate_series(1, 6) RETURNING id) "
	"INSERT INTO tickets (player_id, playlist, state, build, protocol_version, rating, deviation, predicted_rtt, "
	"  queued_at, expires_at) "
	"SELECT p.id, 'casual', 'QUEUED', 'bench', 1, 1500, 120, '{\"eu\": 20}', now(), now() + interval '1 hour' "
	"FROM p RETURNING id, player_id";

/* One match; 0 or the failing step's code. */
static int one_match(struct cc_pg *pg)
{
	PGresult *r = NULL;
	char tickets[6][CC_UUID_BUF], players[6][CC_UUID_BUF];
	struct cc_claim_request req = { .playlist = "casual", .matcher = "bench", .window_seconds = 600, .team_size = 3,
					.build = "bench", .protocol_version = 1, .region = "eu", .max_rtt_ms = 100, .n = 6 };
	struct cc_claim_result res;
	int rc = cc_pg_exec(pg, sql_tickets, 0, NULL, &r);
	if (rc != 0 || PQntuples(r) != 6) {
		PQclear(r);
		return rc ? rc : CC_EDB;
	}
	for (int k = 0; k < 6; k++) {
		snprintf(tickets[k], sizeof tickets[k], "%s", PQgetvalue(r, k, 0));
		snprintf(players[k], sizeof players[k], "%s", PQgetvalue(r, k, 1));
		req.ticket_id[k] = tickets[k];
		req.team[k] = (uint8_t)(k % 2);
	}
	PQclear(r);
	/* Seeders race on the outbox's predicate locks: an exhausted budget is tried again (nothing was written). */
	for (int tries = 0; (rc = cc_formation_claim(pg, &req, &res)) == CC_ERETRY_EXHAUSTED && tries < 20; tries++)
		;
	if (rc != 0)
		return rc;
	for (int k = 0; k < 6; k++) {
		struct respond_tx t = { .proposal_id = res.proposal_id, .player_id = players[k] };
		for (int tries = 0; (rc = cc_pg_run_serializable(pg, respond_tx, &t)) == CC_ERETRY_EXHAUSTED && tries < 20;
		     tries++)
			;
		if (rc != 0)
			return rc;
		if (t.verdict != CC_PROPOSAL_OK)
			return CC_ESTATE;
	}
	return 0;
}

static void *seeder(void *arg)
{
	(void)arg;
	struct cc_pg *pg = NULL;
	char err[256];
	struct cc_pg_options opt = { .prepare_statements = true };
	if (cc_pg_connect(dsn, &opt, &pg, err, sizeof err) != 0) {
		fprintf(stderr, "allocator: connect: %s\n", err);
		atomic_fetch_add(&failed, 1);
		return NULL;
	}
	while (atomic_fetch_sub(&remaining, 1) > 0) {
		int rc = one_match(pg);
		if (rc != 0) {
			fprintf(stderr, "allocator: creating a match: %s %s\n", cc_errname(rc), cc_pg_error_message(pg));
			atomic_fetch_add(&failed, 1);
			break;
		}
	}
	cc_pg_free(pg);
	return NULL;
}

struct servers_tx {
	int n, port;
	const char *owner;
};

static int servers_tx(struct cc_pg *pg, void *arg)
{
	struct servers_tx *t = arg;
	struct cc_game_server s;
	for (int i = 0; i < t->n; i++) {
		char id[32];
		snprintf(id, sizeof id, "local-%d", t->port + i);
		int rc = cc_game_server_register_local(pg, id, "local", "127.0.0.1", t->port + i, t->owner, 0, &s);
		if (rc != 0)
			return rc;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 5 || (strcmp(argv[1], "matches") != 0 && strcmp(argv[1], "servers") != 0) ||
	    (strcmp(argv[1], "servers") == 0 && argc < 6)) {
		fprintf(stderr, "usage: allocator matches DSN N THREADS | allocator servers DSN N OWNER PORT\n");
		return 2;
	}
	dsn = argv[2];
	int n = (int)strtol(argv[3], NULL, 10);
	int64_t t0 = cc_clock_ms();
	if (cc_crypto_init() != 0)
		return 1;
	if (strcmp(argv[1], "servers") == 0) {
		struct cc_pg *pg = NULL;
		char err[256];
		struct servers_tx t = { .n = n, .owner = argv[4], .port = (int)strtol(argv[5], NULL, 10) };
		if (cc_pg_connect(dsn, NULL, &pg, err, sizeof err) != 0) {
			fprintf(stderr, "allocator: connect: %s\n", err);
			return 1;
		}
		int rc = cc_pg_run_serializable(pg, servers_tx, &t);
		cc_pg_free(pg);
		if (rc != 0) {
			fprintf(stderr, "allocator: servers: %s\n", cc_errname(rc));
			return 1;
		}
	} else {
		int threads = (int)strtol(argv[4], NULL, 10);
		pthread_t th[32];
		if (threads < 1 || threads > 32)
			threads = 4;
		atomic_store(&remaining, n);
		for (int i = 0; i < threads; i++)
			pthread_create(&th[i], NULL, seeder, NULL);
		for (int i = 0; i < threads; i++)
			pthread_join(th[i], NULL);
		if (atomic_load(&failed))
			return 1;
	}
	printf("created %d in %.2f s\n", n, (double)(cc_clock_ms() - t0) / 1000);
	return 0;
}
