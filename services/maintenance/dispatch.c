/*
 * dispatch.c - cc-maintenance's outbox dispatcher (SPEC 9): drains the
 * outbox in order per aggregate and hands each row to its consumers.
 *
 * There is one consumer today, the NOTIFY fan-out on "cc_events"
 * (contracts/outbox-events.md): every cc-api replica LISTENs there and
 * delivers to the players it holds, whichever replica drained the row. A
 * consumer refuses a row it cannot deliver; for the fan-out that is an
 * envelope cc_outbox_event_valid refuses (the table accepts more than the
 * constructor does: more than CC_OUTBOX_MAX_PLAYERS player ids, a NULL
 * one), because every listener would choke on it alike. A refusal is a
 * failure of that row: counted, retried after --outbox-retry-ms while the
 * rows behind it in its aggregate wait, and dead-lettered at
 * --outbox-max-attempts so they can go on. Other aggregates never wait.
 *
 * All of a batch is one transaction (the framework's SERIALIZABLE one):
 * the claim, the failures, the marks and the notifications commit
 * together, or none of them does and the rows are claimed again.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "maintenance.h"
#include "store/outbox.h"
#include "sys/clock.h"
#include "sys/log.h"
#include "sys/metrics.h"
#include "sys/banned.h"

/* Indices into maint_batch.tally. */
enum { T_DELIVERED, T_FAILED, T_DEAD, T_REFS, T_PENDING, T_DEAD_ROWS, T_DEAD_COUNTED_AT };

/*
 * The dead letters are counted (for their gauge) at most this often per
 * thread, and between counts followed from this thread's own
 * dead-lettering: the count is a scan of them all, and they are kept
 * longest. An operator's replay or the retention purge shows within this.
 */
#define DEAD_COUNT_INTERVAL_MS 10000
static _Thread_local int64_t dead_counted_at; /* cc_clock_ms() of the last committed count, 0: never */
static _Thread_local int64_t dead_rows;       /* the gauge's value after the last committed batch */

static struct cc_metric *m_delivered, *m_failures, *m_dead, *m_refs, *m_pending, *m_dead_rows;

void maint_outbox_metrics(void)
{
	m_delivered = cc_counter("cosmic_clash_outbox_delivered_total",
				 "Outbox rows delivered to their consumers (marked published).", NULL, 1);
	m_failures = cc_counter("cosmic_clash_outbox_delivery_failures_total",
				"Failed deliveries of outbox rows (each attempt of each row).", NULL, 1);
	m_dead = cc_counter("cosmic_clash_outbox_dead_lettered_total",
			    "Outbox rows dead-lettered after --outbox-max-attempts failures.", NULL, 1);
	m_refs = cc_counter("cosmic_clash_outbox_references_total",
			    "Delivered rows whose envelope exceeded the NOTIFY limit and went as a reference.", NULL, 1);
	m_pending = cc_gauge("cosmic_clash_outbox_pending_rows",
			     "Outbox rows neither delivered nor dead-lettered, after the last batch.", NULL, 1);
	m_dead_rows = cc_gauge("cosmic_clash_outbox_dead_letter_rows",
			       "Dead-lettered outbox rows kept, after the last batch.", NULL, 1);
}

/*
 * The failures of the attempt in progress on this thread, logged by
 * committed() once the attempt is known to have committed (an attempt
 * that is retried or rolled back logs nothing).
 */
#define LOGGED_FAILURES 16
struct failure_note {
	int64_t id;
	int64_t attempts; /* after this failure */
	bool dead;
	char error[CC_OUTBOX_ERROR_MAX + 1];
};
static _Thread_local struct failure_note notes[LOGGED_FAILURES];
static _Thread_local size_t n_notes;

static void committed(const struct maint_batch *b)
{
	cc_metric_add(m_delivered, NULL, (double)b->tally[T_DELIVERED]);
	cc_metric_add(m_failures, NULL, (double)b->tally[T_FAILED]);
	cc_metric_add(m_dead, NULL, (double)b->tally[T_DEAD]);
	cc_metric_add(m_refs, NULL, (double)b->tally[T_REFS]);
	cc_metric_set(m_pending, NULL, (double)b->tally[T_PENDING]);
	cc_metric_set(m_dead_rows, NULL, (double)b->tally[T_DEAD_ROWS]);
	dead_rows = b->tally[T_DEAD_ROWS];
	if (b->tally[T_DEAD_COUNTED_AT])
		dead_counted_at = b->tally[T_DEAD_COUNTED_AT];
	for (size_t i = 0; i < n_notes; i++) {
		struct failure_note *f = &notes[i];
		if (f->dead)
			cc_log_warn("outbox_dead_lettered", CC_LOG_INT("outbox_id", f->id),
				    CC_LOG_INT("attempts", f->attempts), CC_LOG_STR("error", f->error));
		else
			cc_log_info("outbox_delivery_failed", CC_LOG_INT("outbox_id", f->id),
				    CC_LOG_INT("attempts", f->attempts), CC_LOG_STR("error", f->error));
	}
	n_notes = 0;
}

/*
 * The fan-out's verdict on a row: NULL when it can be delivered, else why
 * not (written into buf).
 */
static const char *fanout_refusal(const struct cc_outbox_row *row, char *buf, size_t len)
{
	const char *players[CC_OUTBOX_MAX_PLAYERS + 1];
	struct cc_outbox_event ev;
	cc_outbox_row_event(row, players, &ev);
	const char *fault = cc_outbox_event_fault(&ev);
	if (!fault)
		return NULL;
	snprintf(buf, len, "invalid envelope: %s", fault);
	return buf;
}

int maint_outbox_batch(struct cc_pg *pg, struct maint *m, struct maint_batch *out)
{
	const struct maint_config *cfg = m->cfg;
	struct cc_outbox_backlog backlog;
	struct cc_outbox_rows rows = { 0 };
	int64_t *deliver = NULL;
	size_t n_deliver = 0, refs = 0;
	int rc;

	*out = (struct maint_batch){ .lag = -1, .committed = committed };
	n_notes = 0;
	int limit = cfg->batch < 1 ? 1 : cfg->batch > CC_OUTBOX_CLAIM_MAX ? CC_OUTBOX_CLAIM_MAX : (int)cfg->batch;
	int64_t now = cc_clock_ms();
	bool count_dead = dead_counted_at == 0 || now - dead_counted_at >= DEAD_COUNT_INTERVAL_MS;
	if ((rc = cc_outbox_backlog_read(pg, count_dead, &backlog)) != 0)
		return rc;
	if (count_dead)
		out->tally[T_DEAD_COUNTED_AT] = now;
	else
		backlog.dead_lettered = dead_rows;
	out->lag = backlog.due;
	if ((rc = cc_outbox_claim(pg, limit, &rows)) != 0)
		return rc;
	out->picked = (int64_t)rows.n;
	if (rows.n > 0 && !(deliver = calloc(rows.n, sizeof *deliver))) {
		rc = CC_ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < rows.n; i++) {
		const struct cc_outbox_row *row = &rows.row[i];
		char why[CC_OUTBOX_ERROR_MAX + 1];
		const char *refusal = fanout_refusal(row, why, sizeof why);
		if (!refusal) {
			deliver[n_deliver++] = row->id;
			continue;
		}
		bool dead = false;
		rc = cc_outbox_fail(pg, row->id, refusal, cfg->outbox_max_attempts, cfg->outbox_retry_ms, &dead);
		if (rc != 0)
			goto out;
		out->tally[T_FAILED]++;
		out->tally[T_DEAD] += dead;
		if (n_notes < LOGGED_FAILURES) {
			struct failure_note *f = &notes[n_notes++];
			*f = (struct failure_note){ .id = row->id, .attempts = row->attempts + 1, .dead = dead };
			snprintf(f->error, sizeof f->error, "%s", refusal);
		}
	}
	if ((rc = cc_outbox_publish(pg, deliver, n_deliver, &refs)) != 0)
		goto out;
	out->tally[T_DELIVERED] = (int64_t)n_deliver;
	out->tally[T_REFS] = (int64_t)refs;
	out->tally[T_PENDING] = backlog.pending - (int64_t)n_deliver - out->tally[T_DEAD];
	out->tally[T_DEAD_ROWS] = backlog.dead_lettered + out->tally[T_DEAD];
	out->rows = (int64_t)n_deliver + out->tally[T_FAILED];
out:
	free(deliver);
	cc_outbox_rows_release(&rows);
	return rc;
}
