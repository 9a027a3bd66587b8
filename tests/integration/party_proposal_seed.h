/*
 * party_proposal_seed.h - the C integration tests' one fixture of a party
 * in a proposal (test_party_decline.c, test_party_lease_race.c): six
 * players, the first `members` of them one party (the first leads; joined
 * in index order, a second apart), every ticket PROPOSED in one OPEN 3v3
 * casual proposal, written as cc_claim_proposal writes it (the party on
 * team 0). The caller owns pg and the output buffers; nothing is freed.
 *
 * The seed writes no outbox rows, so a test that commits it must call
 * party_seed_forget before it ends: the integration scripts share one
 * database and audit.sql would report every seeded proposal as never
 * announced (proposal_not_announced) in whichever script audits next.
 */
#ifndef CC_TEST_PARTY_PROPOSAL_SEED_H
#define CC_TEST_PARTY_PROPOSAL_SEED_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/parties.h"
#include "support.h"
#include "sys/pg.h"

#define PARTY_SEED_PLAYERS 6
#define PARTY_SEED_MAX_REMEMBERED 1024

/* Every player a committing test seeded, for party_seed_forget. */
static char party_seed_players[PARTY_SEED_MAX_REMEMBERED][CC_UUID_BUF];
static int party_seed_n_players;

static inline void party_seed_remember(const char *player)
{
	ck_assert_msg(party_seed_n_players < PARTY_SEED_MAX_REMEMBERED, "more than %d seeded players",
		      PARTY_SEED_MAX_REMEMBERED);
	snprintf(party_seed_players[party_seed_n_players++], CC_UUID_BUF, "%s", player);
}

/* The one value of a one-row query into out ("" for NULL). */
static void party_seed_query1(struct cc_pg *pg, const char *sql, int n, const char *const *params, char *out,
			      size_t len)
{
	PGresult *res = NULL;
	int rc = cc_pg_exec(pg, sql, n, params, &res);
	ck_assert_msg(rc == 0, "%s: %s %s", sql, cc_errname(rc), cc_pg_error_message(pg));
	ck_assert_msg(PQntuples(res) == 1, "%s: %d rows", sql, PQntuples(res));
	snprintf(out, len, "%s", PQgetisnull(res, 0, 0) ? "" : PQgetvalue(res, 0, 0));
	PQclear(res);
}

static void party_seed_exec(struct cc_pg *pg, const char *sql, int n, const char *const *params)
{
	int rc = cc_pg_exec(pg, sql, n, params, NULL);
	ck_assert_msg(rc == 0, "%s: %s %s", sql, cc_errname(rc), cc_pg_error_message(pg));
}

static void party_proposal_seed(struct cc_pg *pg, int members, char party[CC_UUID_BUF], char proposal[CC_UUID_BUF],
				char player[PARTY_SEED_PLAYERS][CC_UUID_BUF], char ticket[PARTY_SEED_PLAYERS][CC_UUID_BUF])
{
	char size[8], age[8];
	snprintf(size, sizeof size, "%d", members);
	for (int i = 0; i < PARTY_SEED_PLAYERS; i++) {
		party_seed_query1(pg, "INSERT INTO players DEFAULT VALUES RETURNING id", 0, NULL, player[i], CC_UUID_BUF);
		party_seed_remember(player[i]);
	}
	ck_assert_int_eq(cc_party_create(pg, player[0], 1, "b1", party), 0);
	for (int i = 1; i < members; i++)
		ck_assert_int_eq(cc_party_add_member(pg, party, player[i], 1, "b1"), 0);
	for (int i = 0; i < members; i++) { /* one transaction can mean one now(): make the join order explicit */
		snprintf(age, sizeof age, "%d", 10 - i);
		const char *p[] = { party, player[i], age };
		party_seed_exec(pg,
				"UPDATE cc_party_members SET joined_at = now() - make_interval(secs => $3::int) "
				"WHERE party_id = $1 AND player_id = $2",
				3, p);
	}
	for (int i = 0; i < PARTY_SEED_PLAYERS; i++) {
		const char *p[] = { player[i], i < members ? party : NULL, i < members ? size : "1" };
		party_seed_query1(pg,
				  "INSERT INTO tickets (player_id, playlist, state, build, protocol_version, rating, "
				  "  deviation, predicted_rtt, expires_at, party_id, party_size) "
				  "VALUES ($1, 'casual', 'QUEUED', 'b1', 1, 1500, 120, '{\"eu-west\": 20}', "
				  "  now() + interval '1 hour', $2::uuid, $3::smallint) RETURNING id",
				  3, p, ticket[i], CC_UUID_BUF);
	}
	party_seed_query1(pg,
			  "INSERT INTO proposals (playlist, state, region, arena, build, protocol_version, team_size, "
			  "  matcher, expires_at) VALUES ('casual', 'OPEN', 'eu-west', 'aurora_ring', 'b1', 1, 3, 'test', "
			  "  now() + interval '10 minutes') RETURNING id",
			  0, NULL, proposal, CC_UUID_BUF);
	for (int i = 0; i < PARTY_SEED_PLAYERS; i++) {
		const char *p[] = { proposal, ticket[i], i < 3 ? "0" : "1" };
		party_seed_exec(pg,
				"INSERT INTO proposal_participants (proposal_id, ticket_id, player_id, team) "
				"SELECT $1, t.id, t.player_id, $3::smallint FROM tickets t WHERE t.id = $2",
				3, p);
		party_seed_exec(pg,
				"UPDATE tickets SET state = 'PROPOSED', proposal_id = $1, revision = revision + 1, "
				"updated_at = now() WHERE id = $2",
				2, p);
	}
}

/*
 * Deletes every row of every player remembered (tickets, their proposals,
 * parties, the outbox rows naming them, a decline's penalties, the
 * players), in one transaction.
 */
static inline void party_seed_forget(struct cc_pg *pg)
{
	size_t len = 3 + (size_t)party_seed_n_players * CC_UUID_BUF;
	char *ids = malloc(len);
	ck_assert_ptr_nonnull(ids);
	size_t at = (size_t)snprintf(ids, len, "{");
	for (int i = 0; i < party_seed_n_players; i++)
		at += (size_t)snprintf(ids + at, len - at, "%s%s", i ? "," : "", party_seed_players[i]);
	snprintf(ids + at, len - at, "}");
	const char *p[] = { ids };
	static const char *const steps[] = {
		"CREATE TEMP TABLE seed_proposals ON COMMIT DROP AS SELECT DISTINCT proposal_id AS id "
		"  FROM proposal_participants WHERE player_id = ANY ($1::uuid[])",
		"DELETE FROM proposal_participants WHERE proposal_id IN (SELECT id FROM seed_proposals)",
		"DELETE FROM tickets WHERE player_id = ANY ($1::uuid[])",
		"DELETE FROM proposals WHERE id IN (SELECT id FROM seed_proposals)",
		"DELETE FROM cc_party_invites WHERE player_id = ANY ($1::uuid[])",
		"DELETE FROM cc_parties WHERE leader = ANY ($1::uuid[])",
		"DELETE FROM cc_party_members WHERE player_id = ANY ($1::uuid[])",
		"DELETE FROM outbox WHERE player_ids && $1::uuid[]",
		"DELETE FROM penalties WHERE player_id = ANY ($1::uuid[])", /* a decline's */
		"DELETE FROM players WHERE id = ANY ($1::uuid[])",
	};
	party_seed_exec(pg, "BEGIN", 0, NULL);
	for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
		party_seed_exec(pg, steps[i], strstr(steps[i], "$1") ? 1 : 0, p);
	party_seed_exec(pg, "COMMIT", 0, NULL);
	free(ids);
	party_seed_n_players = 0;
}

#endif
