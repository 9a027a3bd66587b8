#include "store/outbox.h"

#include <stdio.h>
#include <string.h>

#include "sys/charset.h"
#include "sys/crypto.h"
#include "sys/log.h"
#include "store/purge.h"
#include "sys/banned.h"

/* The one writer of an outbox row and its notification (migrations/0006_claim_function.up.sql). */
static const char sql_append[] = "SELECT cc_outbox_append($1, $2, $3::uuid, $4::bigint, $5::uuid[], $6::jsonb)";

/* name matches first-char class [a-z] then up to max-1 of [a-z0-9_] (+ '.' when dots). */
static bool name_valid(const char *s, size_t max, bool dots)
{
	return cc_charset_valid(s, max, CC_CHARSET_LOWER | CC_CHARSET_DIGIT, dots ? "_." : "_") &&
	       cc_charset_has(s[0], CC_CHARSET_LOWER, NULL);
}

bool cc_outbox_event_valid(const struct cc_outbox_event *ev)
{
	if (!ev || !name_valid(ev->event, 64, true) || !name_valid(ev->resource_type, 32, false))
		return false;
	if (!ev->resource_id || !cc_uuid_valid(ev->resource_id) || ev->revision < 1)
		return false;
	if (ev->n_player_ids > CC_OUTBOX_MAX_PLAYERS || (ev->n_player_ids > 0 && !ev->player_ids))
		return false;
	for (size_t i = 0; i < ev->n_player_ids; i++)
		if (!ev->player_ids[i] || !cc_uuid_valid(ev->player_ids[i]))
			return false;
	return true;
}

int cc_outbox_append(struct cc_pg *pg, const struct cc_outbox_event *ev)
{
	char players[CC_OUTBOX_MAX_PLAYERS * CC_UUID_BUF + 3];
	char revision[24];
	size_t used = 0;

	if (!cc_outbox_event_valid(ev)) {
		cc_log_error("outbox_invalid_envelope", CC_LOG_STR("event", ev ? ev->event : NULL),
			     CC_LOG_STR("resource_type", ev ? ev->resource_type : NULL));
		return CC_EINVAL;
	}
	players[used++] = '{';
	for (size_t i = 0; i < ev->n_player_ids; i++)
		used += (size_t)snprintf(players + used, sizeof players - used, "%s%s", i ? "," : "",
					 ev->player_ids[i]);
	players[used++] = '}';
	players[used] = '\0';
	snprintf(revision, sizeof revision, "%lld", (long long)ev->revision);
	const char *params[] = { ev->event, ev->resource_type, ev->resource_id, revision, players,
				 ev->payload_json };
	PGresult *res = NULL;
	int rc = cc_pg_exec(pg, sql_append, 6, params, &res);
	PQclear(res);
	return rc;
}

/* ---- retention -------------------------------------------------------------- */

static const char sql_purge_published_count[] =
	"SELECT count(*) FROM outbox WHERE published_at < now() - make_interval(secs => $1::float8)";

static const char sql_purge_published[] =
	"DELETE FROM outbox o USING (SELECT id FROM outbox WHERE published_at < now() - make_interval(secs => $1::float8) "
	"  ORDER BY published_at LIMIT $2::int FOR UPDATE SKIP LOCKED) d WHERE o.id = d.id";

static const char sql_purge_dead_count[] =
	"SELECT count(*) FROM outbox WHERE dead_lettered_at < now() - make_interval(secs => $1::float8)";

static const char sql_purge_dead[] =
	"DELETE FROM outbox o USING (SELECT id FROM outbox WHERE dead_lettered_at < now() - make_interval(secs => $1::float8) "
	"  ORDER BY dead_lettered_at LIMIT $2::int FOR UPDATE SKIP LOCKED) d WHERE o.id = d.id";

int cc_outbox_purge_published(struct cc_pg *pg, int64_t older_than_s, int limit, int64_t *n, int64_t *lag)
{
	return cc_store_purge(pg, sql_purge_published_count, sql_purge_published, older_than_s, limit, n, lag);
}

int cc_outbox_purge_dead_letters(struct cc_pg *pg, int64_t older_than_s, int limit, int64_t *n, int64_t *lag)
{
	return cc_store_purge(pg, sql_purge_dead_count, sql_purge_dead, older_than_s, limit, n, lag);
}
