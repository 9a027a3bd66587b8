/*
 * reporter.h - cc-gameserver's calls to cc-api's server routes, off the tick thread.
 *
 * The tick thread must never wait on the network: a slow or dead cc-api
 * would stall the simulation for everyone. It hands each report (connect
 * and disconnect receipts, the final result) to cc_reporter_post(), which
 * copies it into a bounded FIFO and returns at once. One reporter thread
 * sends them in order with `Authorization: Bearer <workload token>`:
 *
 *   2xx                       done
 *   409 invalid_state         retried: the match has not reached the state the
 *                             route needs yet (a player connected before
 *                             ASSIGNMENT_READY was registered; a result
 *                             before any connect was acknowledged)
 *   other 409                 logged "report_conflict" (a replay that the API
 *                             saw differently: retrying cannot help), dropped
 *   other 4xx                 logged "report_refused", dropped
 *   5xx, timeout, refused     retried with backoff (100 ms doubling to 2 s)
 *                             until the job's deadline, then "report_failed"
 *
 * Deadlines: receipts (connect, disconnect) 30 s; cc-gameserver gives the
 * result and no_show jobs --end-linger-ms + --result-timeout-ms, 31 s by
 * default and 240 s at most (gameserver/main.c), after which the process
 * exits anyway. cc-maintenance's result-missing window (300 s by default)
 * must exceed that horizon, or a result still being retried could be
 * overtaken by the sweep.
 *
 * Order matters (a disconnect after its connect), so a job is retried at
 * the head of the queue; later jobs wait behind it. The queue holds at most
 * CC_REPORTER_QUEUE_MAX jobs; a post to a full queue is refused (logged).
 * Receipts (connect, disconnect) may fill only CC_REPORTER_RECEIPTS_MAX of
 * it: a player reconnecting in a loop cannot crowd out the result.
 *
 * Liveness (issue 19): cc_reporter_heartbeat_start() adds a second thread
 * that POSTs heartbeat {"phase","tick"} every interval. It never goes
 * through the FIFO: the tick thread writes the latest phase and tick into
 * one slot (cc_reporter_heartbeat_set: no allocation, no wait), and the
 * heartbeat thread sends whatever the slot holds when it is due, so a
 * receipt or a result retrying at the head of the queue (cc-api down, 5xx)
 * never delays a heartbeat, and heartbeats never pile up. A heartbeat goes
 * out only when the tick advanced since the last one was sent (a hung tick
 * loop must look dead to cc-maintenance), except in phase "ended", where
 * the tick loop has finished its work on purpose and the process is alive
 * retrying its result. A phase change is sent at once. The answer's
 * match_state is kept: cc_reporter_match_over() says whether cc-api
 * considers the match over (COMPLETED or FAILED), which the server reads
 * each tick to learn that its match was called off. A heartbeat that fails
 * (transport, 5xx, 4xx) is logged (once per run of failures) and the next
 * one is sent at the next interval; nothing is retried.
 *
 * Ownership: the reporter owns copies of everything it is given; the token
 * is wiped when freed. cc_reporter_free() stops the threads without waiting
 * for the queue: call cc_reporter_drain() first when the jobs matter.
 */
#ifndef CC_GAMESERVER_REPORTER_H
#define CC_GAMESERVER_REPORTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sys/cc.h"

#define CC_REPORTER_QUEUE_MAX 256
#define CC_REPORTER_RECEIPTS_MAX (CC_REPORTER_QUEUE_MAX - 16)

struct cc_reporter;

/*
 * api_url: cc-api's base ("http://127.0.0.1:8080"); server_id: game_servers.id
 * (the path's {id}); token: the workload token. timeout_ms bounds one
 * request. NULL when out of memory or the thread cannot start (logged).
 */
struct cc_reporter *cc_reporter_start(const char *api_url, const char *server_id, const char *token,
				      int64_t timeout_ms);

/*
 * Queues POST {api_url}/v1/servers/{server_id}/{route} with the JSON body
 * (copied). deadline_ms: how long from now the job may keep retrying.
 * Returns 0, CC_ETOOBIG when the queue is full, CC_ENOMEM (both logged
 * "report_dropped": callers on the tick thread have nothing better to do). Any thread.
 */
int cc_reporter_post(struct cc_reporter *r, const char *route, const char *json_body, int64_t deadline_ms);

/*
 * Connection leases (SPEC 8): POST connect {player_id, connection_id}
 * answers the lease's generation, which the matching disconnect must
 * carry. The reporter remembers it per player from the connect answer
 * and writes the disconnect body when it sends it (connect always goes
 * first: one FIFO). A disconnect whose connect never succeeded is dropped
 * (logged "report_skipped"): there is no lease to end.
 * connection_id: 1..64 bytes [A-Za-z0-9._:-], unique per connection.
 * reason: 1..32 bytes [a-z_].
 */
int cc_reporter_connect(struct cc_reporter *r, const char *player_id, const char *connection_id);
int cc_reporter_disconnect(struct cc_reporter *r, const char *player_id, const char *reason);

/*
 * Waits until every queued job is done (sent, refused or past its deadline)
 * or timeout_ms passes. Returns true when the queue emptied.
 */
bool cc_reporter_drain(struct cc_reporter *r, int64_t timeout_ms);

/*
 * Starts the heartbeat thread (see the top): POST heartbeat every
 * interval_ms (>= 10). Returns 0, CC_EIO when the thread cannot start
 * (logged), CC_ESTATE when already started.
 */
int cc_reporter_heartbeat_start(struct cc_reporter *r, int64_t interval_ms);

enum cc_reporter_phase {
	CC_REPORTER_PHASE_LOADING, /* before the first kickoff */
	CC_REPORTER_PHASE_PLAYING, /* from the first kickoff until RESULTS */
	CC_REPORTER_PHASE_ENDED,   /* the match reached RESULTS (its result is queued) */
};

/*
 * The latest phase and tick, for the next heartbeat. Lock-free unless the
 * phase changed (then the heartbeat thread is woken to send at once).
 * Tick thread; cheap enough to call every tick.
 */
void cc_reporter_heartbeat_set(struct cc_reporter *r, enum cc_reporter_phase phase, uint32_t tick);

/*
 * True once a heartbeat answer said the match is COMPLETED or FAILED;
 * state (cap bytes, may be NULL) receives which. Any thread, lock-free.
 */
bool cc_reporter_match_over(struct cc_reporter *r, char *state, size_t cap);

/* Heartbeats sent (any answer) and withheld (the tick had not advanced) since start. */
uint64_t cc_reporter_heartbeats_sent(struct cc_reporter *r);
uint64_t cc_reporter_heartbeats_withheld(struct cc_reporter *r);

/* Jobs of route (e.g. "result") that ended in a 2xx since start. */
uint64_t cc_reporter_succeeded(struct cc_reporter *r, const char *route);

/* Stops the thread (a request in flight finishes within its timeout), frees. NULL is a no-op. */
void cc_reporter_free(struct cc_reporter *r);

#endif
