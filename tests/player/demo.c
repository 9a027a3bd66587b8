/*
 * demo.c - cc-player --mode=demo: simulated players play matchmaking
 * through against cc-api and two cc-matchers (casual and ranked).
 *
 * The players are split over the threads (player i belongs to thread
 * i % threads, which owns its revisions). Login, probe and queue run as
 * phases with a barrier between them; then every thread runs its players
 * as a small event loop until each one is done:
 *
 *   - heartbeat every --heartbeat-interval-ms (+ seeded jitter) while
 *     QUEUED or PROPOSED, at the revision held; a 409 (revision_conflict,
 *     or ticket_closed once matched) means "re-read the ticket";
 *   - learn of the ticket's changes: with --events=stream (or auto, when
 *     cc-api offers it) from the player's own GET /v1/events stream, opened
 *     before it queues (see "the event stream" below), with a slow safety
 *     re-read every --events-reread-ms; else (poll, or auto refused)
 *     re-read the ticket every --ticket-poll-ms. Either source feeds the
 *     same steps: a proposal_id on the ticket is
 *     read (GET /v1/proposals/{id}) and answered with the proposal's
 *     revision: accept, or decline with --decline-percent chance (seeded by
 *     player and proposal ordinal). A declined or expired proposal puts the
 *     others back to QUEUED; they keep waiting for the next one;
 *   - MATCHED: done; the wait from enqueue to seeing MATCHED is recorded;
 *   - give up (cancel) when fewer players of its playlist are still waiting
 *     than a match needs (no match can form any more: nobody else joins), or
 *     when --match-deadline-seconds have passed. Only a QUEUED ticket is
 *     cancelled; one in a proposal answers it first, so a give-up never
 *     declines a proposal (and every DECLINE penalty is an explicit decline).
 *
 * Requeues are counted exactly from revision arithmetic: every change to a
 * ticket that the player did not make itself is a claim (+1) followed by a
 * requeue (+1) or a match (+1), so the revisions between two reads say how
 * many times the ticket went back to the queue, even when the player never
 * saw the proposal in between. A read that fits no such history is an error.
 *
 * Like a game client, every call is sent again with jittered backoff, for up
 * to --retry-horizon-ms, when cc-api answers 503 retryable or the connection
 * fails (then on the next replica of --api-url, when there are several); the
 * summary counts those retries apart from errors. A call whose connection
 * broke after sending may have been applied unseen (client.h), so its
 * retry's answer is read with that in mind: a heartbeat's or answer's 409
 * may be our own first attempt, a cancel's 409 may find the ticket already
 * CANCELLED, a probe's nonce may be used already. Any other answer than one
 * the step expects is an error: it is logged with the player's index, the
 * player takes no further part, and the run exits 1. A player whose call ran
 * out of its retry horizon gives up as a client would: it cancels its ticket
 * (best effort) before it leaves, so it never holds others up. The last and
 * only line on stdout is the summary.
 */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <enet/enet.h>

#include "client.h"
#include "events.h"
#include "game.h"
#include "latency.h"
#include "sys/clock.h"
#include "sys/crypto.h"
#include "sys/log.h"
#include "player.h"
#include "sys/banned.h"

#define PROBE_TRIES 5          /* probes of one region until one measures under PROBE_GOOD_MS */
#define PROBE_GOOD_MS 50.0     /* the matcher needs <= 100 ms; a loaded machine can exceed it once */
#define RESPOND_TRIES 3        /* answers of one proposal through revision conflicts */
#define LOOP_NAP_MS 50         /* a thread re-checks its players at least this often */
#define HARD_STOP_EXTRA_MS (15 * 1000) /* after the deadline: a player still waiting is an error */
#define PROPOSALS_PER_PLAYER 8 /* cap of distinct proposals remembered, per player of a thread */

enum { CASUAL, RANKED, N_PLAYLISTS };
static const char *const playlist_name[N_PLAYLISTS] = { "casual", "ranked" };

struct demo_counts {
	long logged_in;  /* successful logins */
	long probes;     /* challenge + answer pairs */
	long queued;     /* tickets created */
	long heartbeats; /* heartbeats accepted */
	long accepts;    /* accept answers recorded */
	long declined;   /* decline answers recorded (each a DECLINE penalty) */
	long requeued;   /* times a ticket went back to QUEUED from a proposal */
	long matched;    /* players whose ticket reached MATCHED */
	long gave_up;    /* QUEUED tickets cancelled: no match could form, or the deadline passed */
	long errors;     /* unexpected answers or transport failures */
	long assigned;   /* --play: assignments handed to the game stage */
	long assignment_polls; /* --play: 409 assignment_pending answers */
	long assignment_reads; /* --play: GET /v1/matches/{id}/assignment sent */
	long ticket_reads;     /* GET /v1/queue/{id} sent (all causes) */
	long safety_reads;     /* ... of which the slow periodic re-read of a player on the stream */
	long stream_messages;  /* messages received on the event streams */
	long reconnects;       /* streams reopened (with ?after=) after a drop */
	long resyncs;          /* stream.resync received */
	long fallbacks;        /* players whose upgrade was refused (auto): they poll */
};

/* A matched player's match, for counting distinct matches per playlist. */
struct demo_match {
	char id[CC_UUID_BUF];
	int playlist;
};

/* What the demo knows about one player beyond the client's view of it. */
struct demo_player {
	struct pc_player p;      /* identity and the ticket as last seen */
	int playlist;            /* CASUAL or RANKED */
	bool waiting;            /* queued and not yet matched, cancelled or broken */
	uint64_t queued_ns;      /* monotonic time of the enqueue answer */
	int64_t next_poll_ms;    /* monotonic ms of the next ticket read */
	int64_t next_beat_ms;    /* monotonic ms of the next heartbeat */
	int heartbeats_sent;     /* ordinal for the heartbeat jitter */
	int proposals;           /* proposals answered: the ordinal for the decline decision */
	bool beat_unsure;        /* a heartbeat of ours may have been applied without our seeing it */
	char answered[CC_UUID_BUF];       /* the proposal this player accepted last ("" none) */
	uint64_t accepted_ns;    /* monotonic time of its last accept's answer */
	bool assigning;          /* --play: matched, asking for its assignment */
	int64_t next_assign_ms;  /* monotonic ms of the next assignment request */
	int64_t assign_deadline_ms; /* no assignment by then: an error */
	bool played;             /* handed to the game stage; game holds the outcome */
	struct pc_game_result game; /* written by the game thread (game.h) */
	/* --events: the player's stream (events.h); NULL when polling or between connections */
	struct pc_stream *stream;
	struct demo_worker *owner; /* the worker whose thread services the stream */
	bool streaming;          /* learns from the stream (else it polls): opened once and not given up */
	bool ready;              /* stream.ready or stream.resync seen on the current connection */
	bool have_position;      /* position is set (stream.ready gave one at least) */
	int64_t position;        /* the highest stream position seen: the ?after= of a reconnect */
	int64_t next_connect_ms; /* streaming without a stream: reconnect then */
	int64_t backoff_ms;      /* the reconnect backoff (1 s doubling to 30 s) */
	int reconnects;          /* ordinal for the reconnect jitter */
	int event_rc;            /* a step that failed inside the stream's callback, failed after it */
	bool read_urgent;        /* the next ticket read was asked for (not the periodic one) */
	bool assignment_ready;   /* an assignment event came: fetch it now */
	char event_match_id[CC_UUID_BUF]; /* match.created's match (ticket.matched carries none) */
	char seen_proposal[CC_UUID_BUF];  /* the proposal last seen on the ticket */
	uint64_t seen_proposal_ns;        /* when it was first seen */
	uint64_t proposed_ns;    /* when the proposal it accepted last was first seen */
	uint64_t matched_ns;     /* when it saw its ticket MATCHED */
};

/* Holds the workers until the main thread knows how many started. */
struct demo_gate {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool open;
	pthread_barrier_t barrier; /* one wait per phase; counts the started workers */
};

/* Shared by all workers. */
struct demo_shared {
	struct demo_gate gate;
	atomic_long waiting[N_PLAYLISTS]; /* players per playlist still able to take part in a match */
	atomic_llong match_start_ms;      /* when the match phase began: set by the first thread there */
	struct pc_game *game;             /* --play: the game stage (game.h), else NULL */
};

struct demo_worker {
	const struct player_config *cfg;
	struct demo_shared *shared;
	int index;                   /* thread number; owns players index, index + threads, ... */
	int threads;                 /* worker count */
	struct demo_player *players; /* every player (shared array; disjoint slots per worker) */
	struct pc_client *client;    /* this thread's kept-alive connection */
	struct pc_latency latency;   /* every request this thread sent */
	struct pc_latency waits;     /* enqueue -> MATCHED of this thread's players */
	struct demo_counts counts;
	struct demo_match *matches;  /* one per matched player of this thread */
	size_t n_matches;
	size_t cap_matches;
	char (*seen)[CC_UUID_BUF];            /* distinct proposal ids this thread read */
	size_t n_seen;
	size_t cap_seen;
	struct pollfd *pfds;         /* one per own player: the streams to wait on */
	size_t cap_pfds;
};

/* splitmix64 of the decision seed, the player and an ordinal: the demo's only randomness. */
static uint64_t seeded(const struct player_config *cfg, int index, int ordinal, uint64_t salt)
{
	int64_t seed = cfg->decision_seed >= 0 ? cfg->decision_seed : cfg->seed;
	uint64_t x = (uint64_t)seed * 0x9e3779b97f4a7c15u ^ (uint64_t)index << 32 ^ (uint64_t)ordinal ^ salt;
	x += 0x9e3779b97f4a7c15u;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
	return x ^ (x >> 31);
}

/* Spreads ranked players evenly by index: i is ranked when floor((i+1)p/100) > floor(i p/100). */
static int playlist_of(const struct player_config *cfg, int index)
{
	int64_t pct = cfg->ranked_percent;
	return (index + 1) * pct / 100 > index * pct / 100 ? RANKED : CASUAL;
}

static int64_t match_size(const struct player_config *cfg, int playlist)
{
	return playlist == RANKED ? cfg->ranked_match_size : cfg->casual_match_size;
}

/* Logs an answer the demo did not expect; returns CC_EINVAL for the step to fail with. */
static int unexpected(const struct demo_player *d, const char *step, const char *what)
{
	cc_log_warn("demo_unexpected", CC_LOG_INT("player", d->p.index), CC_LOG_STR("step", step),
		    CC_LOG_STR("what", what), CC_LOG_STR("state", d->p.state), CC_LOG_INT("revision", d->p.revision),
		    CC_LOG_STR("ticket_id", d->p.ticket_id));
	return CC_EINVAL;
}

/* Takes the player out of the waiting count: it can no longer be part of a match. */
static void leave(struct demo_worker *w, struct demo_player *d)
{
	if (d->waiting) {
		d->waiting = false;
		atomic_fetch_sub(&w->shared->waiting[d->playlist], 1);
	}
}

/* Whether the player hears its events on an open stream now (else it polls). */
static bool stream_up(const struct demo_player *d)
{
	return d->stream != NULL;
}

/* The ticket's (and a pending assignment's) re-read period: slow on the stream, --ticket-poll-ms without. */
static int64_t poll_period(const struct demo_worker *w, const struct demo_player *d)
{
	return stream_up(d) ? w->cfg->events_reread_ms : w->cfg->ticket_poll_ms;
}

/* Asks for a ticket read at the next look (something happened that the ticket will explain). */
static void read_soon(struct demo_player *d)
{
	d->next_poll_ms = cc_clock_ms();
	d->read_urgent = true;
}

static int start_stream(struct demo_worker *w, struct demo_player *d);

/* ---- login, probe, queue: phases ------------------------------------------ */

static int step_login(struct demo_worker *w, struct demo_player *d)
{
	int rc = pc_login(w->client, &d->p);
	w->counts.logged_in += rc == 0;
	return rc;
}

/* Probes every region, again (up to PROBE_TRIES) while the RTT is high, as a client re-probes. */
static int step_probe(struct demo_worker *w, struct demo_player *d)
{
	for (int r = 0; r < w->cfg->n_regions; r++) {
		double rtt = 0;
		for (int t = 0; t < PROBE_TRIES; t++) {
			int rc = pc_probe(w->client, &d->p, w->cfg->region[r], &rtt);
			if (rc == CC_ECONFLICT && pc_client_unsure(w->client) &&
			    strcmp(pc_client_error_code(w->client), "nonce_already_used") == 0) {
				/* Our answer landed but its reply was lost: the RTT is unknown (and long). Again. */
				rtt = PROBE_GOOD_MS;
				continue;
			}
			if (rc != 0)
				return rc;
			w->counts.probes++;
			if (rtt < PROBE_GOOD_MS)
				break;
		}
		if (rtt >= PROBE_GOOD_MS)
			cc_log_warn("probe_slow", CC_LOG_INT("player", d->p.index), CC_LOG_STR("region", w->cfg->region[r]),
				    CC_LOG_DBL("rtt_ms", rtt));
	}
	return 0;
}

static int step_queue(struct demo_worker *w, struct demo_player *d)
{
	char key[64];
	snprintf(key, sizeof key, "demo-%lld-%d", (long long)w->cfg->seed, d->p.index);
	/* The stream first: opened (and live) before the ticket exists, it misses none of its events. */
	if (strcmp(w->cfg->events, "poll") != 0) {
		int src = start_stream(w, d);
		if (src != 0)
			return src;
	}
	int rc = 0;
	int64_t party = w->cfg->party_size > 1 ? w->cfg->party_size : 0;
	if (d->p.index == 0 && party) {
		/* The leader makes the party of players 1..party-1 (its own worker's) and queues it for casual. */
		struct pc_player *mates[3];
		int n = 0;
		for (int64_t i = 1; i < party && i < w->cfg->players; i++)
			if ((i - w->index) % w->threads == 0 && !w->players[i].p.broken)
				mates[n++] = &w->players[i].p;
		if (n != party - 1)
			return unexpected(d, "queue", "the party's players are not all in this worker (use --threads=1)");
		rc = pc_party_queue(w->client, &d->p, mates, n, "casual", w->cfg->protocol_version, w->cfg->build, key);
	} else if (d->p.index > 0 && d->p.index < party) {
		if (!d->p.ticket_id[0])
			return unexpected(d, "queue", "the party's leader did not queue this member");
	} else {
		rc = pc_enqueue(w->client, &d->p, playlist_name[d->playlist], w->cfg->protocol_version, w->cfg->build, key);
	}
	if (rc != 0)
		return rc;
	if (strcmp(d->p.state, "QUEUED") != 0)
		return unexpected(d, "queue", "a new ticket is not QUEUED");
	d->queued_ns = (uint64_t)cc_clock_ns();
	d->waiting = true;
	atomic_fetch_add(&w->shared->waiting[d->playlist], 1);
	w->counts.queued++;
	return 0;
}

typedef int (*demo_step)(struct demo_worker *w, struct demo_player *d);

static const struct demo_phase {
	const char *name;
	demo_step step;
} phases[] = {
	{ "login", step_login },
	{ "probe", step_probe },
	{ "queue", step_queue },
};

/* ---- the match phase ------------------------------------------------------ */

/*
 * Requeues between a held view of a ticket and a newer one, by revision
 * arithmetic (see the top of the file): a held PROPOSED at r is a QUEUED at
 * r - 1 plus a claim. Returns the count, or -1 when no history fits.
 */
static int64_t requeues_between(const char *held_state, int64_t held_revision, const char *state,
				int64_t revision)
{
	/*
	 * Past MATCHED the match moves the ticket on by one revision a step
	 * (ASSIGNED at ASSIGNMENT_READY, COMPLETED at the result; FAILED from
	 * either): count as of its MATCHED revision. A slow poller may never
	 * see MATCHED itself once cc-allocator is quick.
	 */
	if (strcmp(state, "ASSIGNED") == 0)
		return requeues_between(held_state, held_revision, "MATCHED", revision - 1);
	if (strcmp(state, "COMPLETED") == 0)
		return requeues_between(held_state, held_revision, "MATCHED", revision - 2);
	if (strcmp(state, "FAILED") == 0) {
		int64_t from_matched = requeues_between(held_state, held_revision, "MATCHED", revision - 1);
		return from_matched >= 0 ? from_matched
					 : requeues_between(held_state, held_revision, "MATCHED", revision - 2);
	}
	int64_t d = revision - (held_revision - (strcmp(held_state, "PROPOSED") == 0));
	if (strcmp(state, "QUEUED") == 0 && d >= 0 && d % 2 == 0)
		return d / 2;
	if (strcmp(state, "PROPOSED") == 0 && d >= 1 && d % 2 == 1)
		return (d - 1) / 2;
	if (strcmp(state, "MATCHED") == 0 && d >= 2 && d % 2 == 0)
		return (d - 2) / 2;
	return -1;
}

/* Remembers a proposal id this thread read (distinct; capped). */
static int note_seen(struct demo_worker *w, const char *proposal_id)
{
	for (size_t i = 0; i < w->n_seen; i++)
		if (strcmp(w->seen[i], proposal_id) == 0)
			return 0;
	if (w->n_seen == w->cap_seen)
		return CC_ETOOBIG;
	memcpy(w->seen[w->n_seen++], proposal_id, CC_UUID_BUF);
	return 0;
}

static void matched(struct demo_worker *w, struct demo_player *d)
{
	d->matched_ns = (uint64_t)cc_clock_ns();
	(void)pc_latency_add(&w->waits, (uint64_t)cc_clock_ns() - d->queued_ns);
	if (w->n_matches < w->cap_matches) {
		memcpy(w->matches[w->n_matches].id, d->p.match_id, sizeof d->p.match_id);
		w->matches[w->n_matches++].playlist = d->playlist;
	}
	w->counts.matched++;
	leave(w, d);
	if (w->shared->game) {
		d->assigning = true;
		d->next_assign_ms = cc_clock_ms();
		d->assign_deadline_ms = d->next_assign_ms + w->cfg->assignment_timeout_seconds * 1000;
		/* On the stream the assignment's event says when to ask; until then only the safety re-read. */
		if (stream_up(d) && !d->assignment_ready && strcmp(d->p.state, "MATCHED") == 0)
			d->next_assign_ms += w->cfg->events_reread_ms;
	}
	cc_log_debug("demo_matched", CC_LOG_INT("player", d->p.index), CC_LOG_STR("match_id", d->p.match_id),
		     CC_LOG_DBL("wait_s", (double)((uint64_t)cc_clock_ns() - d->queued_ns) / 1e9));
}

static int answer_proposal(struct demo_worker *w, struct demo_player *d);

/* Acts on the ticket as just read or heartbeaten: matched, or a proposal to answer. */
/* MATCHED, or a state the match moved it to since (requeues_between). */
static bool matched_or_later(const char *state)
{
	return strcmp(state, "MATCHED") == 0 || strcmp(state, "ASSIGNED") == 0 || strcmp(state, "COMPLETED") == 0 ||
	       strcmp(state, "FAILED") == 0;
}

static int on_ticket(struct demo_worker *w, struct demo_player *d)
{
	if (matched_or_later(d->p.state)) {
		if (!d->p.match_id[0])
			return unexpected(d, "ticket", "matched without a match_id");
		matched(w, d);
		return 0;
	}
	if (strcmp(d->p.state, "PROPOSED") == 0) {
		if (!d->p.proposal_id[0])
			return unexpected(d, "ticket", "PROPOSED without a proposal_id");
		if (strcmp(d->p.proposal_id, d->seen_proposal) != 0) {
			memcpy(d->seen_proposal, d->p.proposal_id, sizeof d->seen_proposal);
			d->seen_proposal_ns = (uint64_t)cc_clock_ns();
		}
		if (strcmp(d->p.proposal_id, d->answered) != 0)
			return answer_proposal(w, d);
		return 0;
	}
	if (strcmp(d->p.state, "QUEUED") == 0)
		return 0;
	return unexpected(d, "ticket", "the ticket left the queue without this player");
}

/*
 * Counts the requeues between the view held (held_state at held_revision)
 * and the ticket just read into d->p, then acts on it. A heartbeat of ours
 * that may have landed unseen is one more revision of our own: of the two
 * histories (it landed, it did not) at most one fits the parity.
 */
static int account(struct demo_worker *w, struct demo_player *d, const char *held_state, int64_t held_revision)
{
	d->next_poll_ms = cc_clock_ms() + poll_period(w, d);
	int64_t cycles = requeues_between(held_state, held_revision, d->p.state, d->p.revision);
	if (cycles < 0 && d->beat_unsure)
		cycles = requeues_between(held_state, held_revision + 1, d->p.state, d->p.revision);
	d->beat_unsure = false;
	if (cycles < 0 && strcmp(d->p.state, "QUEUED") != 0 && strcmp(d->p.state, "PROPOSED") != 0 &&
	    !matched_or_later(d->p.state))
		return unexpected(d, "read", "the ticket left the queue without this player");
	if (cycles < 0) {
		cc_log_warn("demo_revisions", CC_LOG_INT("player", d->p.index), CC_LOG_STR("held_state", held_state),
			    CC_LOG_INT("held_revision", held_revision), CC_LOG_STR("state", d->p.state),
			    CC_LOG_INT("revision", d->p.revision));
		return unexpected(d, "read", "the revisions fit no claim/requeue history");
	}
	w->counts.requeued += cycles;
	return on_ticket(w, d);
}

/* GET /v1/queue/{id}: counts the requeues since the view held, then acts on it. */
static int read_ticket(struct demo_worker *w, struct demo_player *d)
{
	char held_state[sizeof d->p.state];
	int64_t held_revision = d->p.revision;
	memcpy(held_state, d->p.state, sizeof held_state);
	d->read_urgent = false;
	w->counts.ticket_reads++;
	int rc = pc_get_ticket(w->client, &d->p);
	if (rc != 0)
		return rc;
	return account(w, d, held_state, held_revision);
}

/* Whether this player declines its n-th proposal (seeded). */
static bool declines(const struct player_config *cfg, const struct demo_player *d)
{
	return (int64_t)(seeded(cfg, d->p.index, d->proposals, 0xdec1) % 100) < cfg->decline_percent;
}

/*
 * Reads the proposal on the ticket and answers it at its revision. A
 * proposal decided meanwhile (closed, or revision moved by a decision) is
 * not an error: the ticket is read again and tells what happened.
 */
static int answer_proposal(struct demo_worker *w, struct demo_player *d)
{
	struct pc_proposal pr;
	char id[CC_UUID_BUF];
	bool accept = !declines(w->cfg, d), sent_unsure = false;
	memcpy(id, d->p.proposal_id, sizeof id);
	/* The last round only reads: a conflict's outcome is always looked at. */
	for (int t = 0; t <= RESPOND_TRIES; t++) {
		int rc = pc_get_proposal(w->client, &d->p, id, &pr);
		if (rc != 0)
			return rc;
		if ((rc = note_seen(w, id)) != 0)
			return unexpected(d, "proposal", "more distinct proposals than the demo keeps");
		if (strcmp(pr.playlist, playlist_name[d->playlist]) != 0)
			return unexpected(d, "proposal", "the proposal is for another playlist");
		if (pr.my_response[0] && sent_unsure &&
		    strcmp(pr.my_response, accept ? "accept" : "decline") == 0)
			goto answered; /* our answer landed; its reply was lost */
		if (strcmp(pr.state, "OPEN") != 0) {
			read_soon(d); /* decided without us: the ticket says how */
			return 0;
		}
		if (pr.my_response[0])
			return unexpected(d, "proposal", "an OPEN proposal already holds this player's answer");
		if (t == RESPOND_TRIES)
			break;
		rc = pc_respond(w->client, &d->p, id, accept, pr.revision, &pr);
		sent_unsure |= pc_client_unsure(w->client);
		const char *code = pc_client_error_code(w->client);
		/* Decided or changed under us (or by our own unseen first attempt): read it again. */
		if (rc == CC_ECONFLICT && (strcmp(code, "revision_conflict") == 0 || strcmp(code, "proposal_closed") == 0))
			continue;
		if (rc != 0)
			return rc;
		goto answered;
	}
	return unexpected(d, "proposal", "revision conflicts on every answer");

answered:
	d->proposals++;
	if (accept) {
		if (strcmp(pr.my_response, "accept") != 0)
			return unexpected(d, "accept", "the answer does not show the accept");
		memcpy(d->answered, id, sizeof id);
		d->accepted_ns = (uint64_t)cc_clock_ns();
		w->counts.accepts++;
		/* The last accept decides: read the ticket now, else at the next poll. */
		d->proposed_ns = d->seen_proposal_ns;
		if (strcmp(pr.state, "OPEN") != 0)
			read_soon(d);
		return 0;
	}
	if (strcmp(pr.state, "DECLINED") != 0)
		return unexpected(d, "decline", "a decline left the proposal not DECLINED");
	w->counts.declined++;
	/* The decliner's ticket is CANCELLED in the same transaction (SPEC 7). */
	w->counts.ticket_reads++;
	int rc = pc_get_ticket(w->client, &d->p);
	if (rc != 0)
		return rc;
	if (strcmp(d->p.state, "CANCELLED") != 0)
		return unexpected(d, "decline", "the decliner's ticket is not CANCELLED");
	leave(w, d);
	cc_log_info("demo_declined", CC_LOG_INT("player", d->p.index), CC_LOG_STR("proposal_id", id));
	return 0;
}

/* Up to one more heartbeat interval, seeded: players' heartbeats do not march in step. */
static int64_t beat_jitter(const struct player_config *cfg, const struct demo_player *d)
{
	return (int64_t)(seeded(cfg, d->p.index, d->heartbeats_sent, 0xbea7) % (uint64_t)cfg->heartbeat_interval_ms);
}

/* Heartbeat at the revision held; a 409 means the ticket moved on: read it. */
static int heartbeat(struct demo_worker *w, struct demo_player *d)
{
	int64_t before = d->p.revision;
	d->heartbeats_sent++;
	d->next_beat_ms = cc_clock_ms() + w->cfg->heartbeat_interval_ms + beat_jitter(w->cfg, d);
	int rc = pc_heartbeat(w->client, &d->p);
	const char *code = pc_client_error_code(w->client);
	if (rc == CC_ECONFLICT && (strcmp(code, "revision_conflict") == 0 || strcmp(code, "ticket_closed") == 0)) {
		d->beat_unsure = pc_client_unsure(w->client); /* the conflict may be our own first attempt */
		return read_ticket(w, d);
	}
	if (rc != 0)
		return rc;
	if (d->p.revision != before + 1)
		return unexpected(d, "heartbeat", "a heartbeat did not advance the revision by one");
	w->counts.heartbeats++;
	return on_ticket(w, d);
}

/* Cancels a QUEUED ticket: no match can form for it any more. */
static int give_up(struct demo_worker *w, struct demo_player *d, const char *why)
{
	char held_state[sizeof d->p.state];
	int64_t held_revision = d->p.revision;
	memcpy(held_state, d->p.state, sizeof held_state);
	int rc = pc_cancel(w->client, &d->p);
	const char *code = pc_client_error_code(w->client);
	if (rc == CC_ECONFLICT && (strcmp(code, "revision_conflict") == 0 || strcmp(code, "ticket_closed") == 0)) {
		bool unsure = pc_client_unsure(w->client);
		w->counts.ticket_reads++;
		if ((rc = pc_get_ticket(w->client, &d->p)) != 0)
			return rc;
		/* Our first attempt may have cancelled it unseen; else it was claimed or matched meanwhile. */
		if (!(unsure && strcmp(d->p.state, "CANCELLED") == 0 && d->p.revision == held_revision + 1))
			return account(w, d, held_state, held_revision);
	} else if (rc != 0) {
		return rc;
	}
	if (strcmp(d->p.state, "CANCELLED") != 0)
		return unexpected(d, "cancel", "a cancel did not leave the ticket CANCELLED");
	w->counts.gave_up++;
	leave(w, d);
	cc_log_info("demo_gave_up", CC_LOG_INT("player", d->p.index), CC_LOG_STR("playlist", playlist_name[d->playlist]),
		    CC_LOG_STR("why", why));
	return 0;
}

/*
 * --play: asks for the matched player's assignment until the match's
 * server is ready (409 assignment_pending: again after --ticket-poll-ms,
 * up to --assignment-timeout-seconds), then hands the player to the game
 * stage.
 */
static void reconnect_stream(struct demo_worker *w, struct demo_player *d);

static int fetch_assignment(struct demo_worker *w, struct demo_player *d, int64_t now)
{
	struct pc_assignment a;
	struct pc_game_assignment ga;
	w->counts.assignment_reads++;
	d->assignment_ready = false;
	int rc = pc_get_assignment(w->client, &d->p, d->p.match_id, &a);
	if (rc == CC_ECONFLICT && strcmp(pc_client_error_code(w->client), "assignment_pending") == 0) {
		if (now >= d->assign_deadline_ms) {
			d->assigning = false;
			return unexpected(d, "assignment", "the match's server was not ready within --assignment-timeout-seconds");
		}
		w->counts.assignment_polls++;
		d->next_assign_ms = now + poll_period(w, d);
		return 0;
	}
	if (rc != 0) {
		d->assigning = false;
		return rc;
	}
	memset(&ga, 0, sizeof ga);
	memcpy(ga.match_id, a.match_id, sizeof ga.match_id);
	memcpy(ga.address, a.address, sizeof ga.address);
	memcpy(ga.join_token, a.join_token, sizeof ga.join_token);
	ga.port = (uint16_t)a.port;
	ga.slot = (int)a.slot;
	ga.team = (int)a.team;
	d->assigning = false;
	if ((rc = pc_game_add(w->shared->game, d->p.index, &ga, (uint64_t)cc_clock_ns(), &d->game)) != 0)
		return unexpected(d, "assignment", "the game stage refused the assignment");
	d->played = true;
	w->counts.assigned++;
	cc_log_debug("demo_assigned", CC_LOG_INT("player", d->p.index), CC_LOG_STR("match_id", a.match_id),
		     CC_LOG_STR("address", a.address), CC_LOG_INT("port", a.port), CC_LOG_INT("slot", a.slot),
		     CC_LOG_INT("team", a.team));
	return 0;
}

/* One look at a player: give up, heartbeat or poll, whichever is due. */
static int tend(struct demo_worker *w, struct demo_player *d, int64_t now)
{
	const struct player_config *cfg = w->cfg;
	if (d->streaming && !d->stream && d->next_connect_ms && now >= d->next_connect_ms)
		reconnect_stream(w, d);
	if (d->assigning)
		return now >= d->next_assign_ms ? fetch_assignment(w, d, now) : 0;
	bool queued = strcmp(d->p.state, "QUEUED") == 0;
	if (queued && atomic_load(&w->shared->waiting[d->playlist]) < match_size(cfg, d->playlist))
		return give_up(w, d, "too few players left to match");
	if (queued && now >= atomic_load(&w->shared->match_start_ms) + cfg->match_deadline_seconds * 1000)
		return give_up(w, d, "deadline");
	if (now >= d->next_beat_ms)
		return heartbeat(w, d);
	if (now >= d->next_poll_ms) {
		if (stream_up(d) && !d->read_urgent)
			w->counts.safety_reads++;
		return read_ticket(w, d);
	}
	return 0;
}

/*
 * A player whose call ran out of its retry horizon quits as a game client
 * does: it cancels its ticket on the way out (at the revision it reads
 * first), retrying for --abandon-horizon-ms, so a ticket never outlives its
 * player's interest. The outage that made it give up is usually still on,
 * so that horizon is its own. Best effort: when that fails too, heartbeats
 * stop and the ticket expires on its own.
 */
static void abandon(struct demo_worker *w, struct demo_player *d)
{
	const struct player_config *cfg = w->cfg;
	pc_client_set_retry_horizon(w->client, cfg->abandon_horizon_ms < 0 ? cfg->retry_horizon_ms
									    : cfg->abandon_horizon_ms);
	int rc = pc_get_ticket(w->client, &d->p);
	if (rc == 0 && (strcmp(d->p.state, "QUEUED") == 0 || strcmp(d->p.state, "PROPOSED") == 0))
		rc = pc_cancel(w->client, &d->p);
	pc_client_set_retry_horizon(w->client, cfg->retry_horizon_ms);
	cc_log_warn("demo_abandoned", CC_LOG_INT("player", d->p.index), CC_LOG_STR("ticket_id", d->p.ticket_id),
		    CC_LOG_STR("state", rc == 0 ? d->p.state : "unknown"), CC_LOG_STR("cancel", cc_errname(rc)),
		    CC_LOG_STR("problem", rc == 0 ? "" : pc_client_problem(w->client)));
	if (rc == 0 && strcmp(d->p.state, "QUEUED") != 0 && strcmp(d->p.state, "PROPOSED") != 0)
		leave(w, d);
}

static void fail_player(struct demo_worker *w, struct demo_player *d, const char *step, int rc)
{
	cc_log_warn("demo_step_failed", CC_LOG_INT("player", d->p.index), CC_LOG_STR("step", step),
		    CC_LOG_STR("error", cc_errname(rc)),
		    CC_LOG_STR("problem", w->client ? pc_client_problem(w->client) : "no client"));
	w->counts.errors++;
	d->p.broken = true;
	if (w->client && (pc_client_gave_up(w->client) || rc == CC_ETIMEOUT) && d->p.ticket_id[0])
		abandon(w, d); /* out of retries, or of time (the hard stop): quitting */
	/* Otherwise still counted as waiting: its ticket may yet be proposed, so the others must not give up early. */
}

/* ---- the event stream (--events=auto|stream) -------------------------------- */

/*
 * The stream feeds the same state machine as the ticket reads: a ticket
 * event becomes the view a read would have given (state and revision, the
 * proposal_id of ticket.proposed, the match of match.created) and goes
 * through account(), so requeues are counted and proposals answered by the
 * same code. An event at or below the revision held is stale (a read or a
 * heartbeat of ours got there first) and ignored; a ticket event whose view
 * lacks a field (ticket.matched carries no match_id when match.created has
 * not come) asks for a read instead. Assignment events (ticket.assigned,
 * match.assignment_ready, allocation.published) make a matched player ask
 * for its assignment now. stream.resync re-reads over REST.
 */
static atomic_bool fallback_said; /* the first fallback of the run is a warning, the rest info */

static bool is(const char *a, const char *b)
{
	return strcmp(a, b) == 0;
}

static int apply_event(struct demo_worker *w, struct demo_player *d, const struct pc_event *ev)
{
	bool my_ticket = is(ev->resource_type, "ticket") && d->p.ticket_id[0] && is(ev->resource_id, d->p.ticket_id);
	if (is(ev->event, "match.created") && cc_uuid_valid(ev->resource_id))
		memcpy(d->event_match_id, ev->resource_id, sizeof d->event_match_id);
	const char *assigned_match = NULL; /* the match whose assignment is ready ("" = the ticket's) */
	if (my_ticket && is(ev->event, "ticket.assigned"))
		assigned_match = "";
	else if (is(ev->event, "match.assignment_ready"))
		assigned_match = ev->resource_id;
	else if (is(ev->event, "allocation.published"))
		assigned_match = ev->match_id;
	if (assigned_match && (!assigned_match[0] || !d->p.match_id[0] || is(assigned_match, d->p.match_id))) {
		d->assignment_ready = true;
		if (d->assigning)
			d->next_assign_ms = cc_clock_ms();
	}
	if (!my_ticket || !d->waiting || ev->revision <= d->p.revision)
		return 0;
	static const struct {
		const char *event, *state;
	} states[] = {
		{ "ticket.queued", "QUEUED" },	     { "ticket.requeued", "QUEUED" },   { "ticket.proposed", "PROPOSED" },
		{ "ticket.matched", "MATCHED" },     { "ticket.assigned", "ASSIGNED" }, { "ticket.completed", "COMPLETED" },
		{ "ticket.failed", "FAILED" },	     { "ticket.cancelled", "CANCELLED" }, { "ticket.expired", "EXPIRED" },
	};
	const char *state = NULL;
	for (size_t i = 0; i < CC_ARRAY_LEN(states) && !state; i++)
		if (is(ev->event, states[i].event))
			state = states[i].state;
	if (!state)
		return 0; /* a ticket event the demo does not act on (later versions may add some) */
	if ((matched_or_later(state) && !d->event_match_id[0]) || (is(state, "PROPOSED") && !ev->proposal_id[0])) {
		read_soon(d);
		return 0;
	}
	char held_state[sizeof d->p.state];
	int64_t held_revision = d->p.revision;
	memcpy(held_state, d->p.state, sizeof held_state);
	snprintf(d->p.state, sizeof d->p.state, "%s", state);
	d->p.revision = ev->revision;
	if (is(state, "PROPOSED"))
		memcpy(d->p.proposal_id, ev->proposal_id, sizeof d->p.proposal_id);
	else if (is(state, "QUEUED"))
		d->p.proposal_id[0] = '\0';
	if (matched_or_later(state))
		memcpy(d->p.match_id, d->event_match_id, sizeof d->p.match_id);
	return account(w, d, held_state, held_revision);
}

/* The stream's callback (on the worker's thread, inside pc_stream_service). */
static void on_event(void *ctx, const struct pc_event *ev)
{
	struct demo_player *d = ctx;
	struct demo_worker *w = d->owner;
	w->counts.stream_messages++;
	if (is(ev->event, "stream.ready") || is(ev->event, "stream.resync")) {
		d->ready = true;
		if (ev->position > d->position || !d->have_position || is(ev->event, "stream.resync"))
			d->position = ev->position;
		d->have_position = true;
		if (is(ev->event, "stream.resync")) {
			/* events after our position may be gone: re-read what we are waiting on */
			w->counts.resyncs++;
			if (d->waiting)
				read_soon(d);
			if (d->assigning)
				d->next_assign_ms = cc_clock_ms();
		}
		return;
	}
	if (ev->position > 0) {
		if (d->have_position && ev->position <= d->position)
			return; /* seen already (a replay overlapping what we had) */
		d->position = ev->position;
		d->have_position = true;
	}
	if (d->event_rc || d->p.broken)
		return;
	int rc = apply_event(w, d, ev);
	if (rc != 0)
		d->event_rc = rc;
}

/* Gives the stream up for good: the player polls from now on. */
static void stop_streaming(struct demo_worker *w, struct demo_player *d, const char *why, int status)
{
	bool first = !atomic_exchange(&fallback_said, true);
	if (first)
		cc_log_warn("events_fallback", CC_LOG_INT("player", d->p.index), CC_LOG_STR("why", why),
			    CC_LOG_INT("status", status), CC_LOG_STR("api_url", pc_client_url(w->client)),
			    CC_LOG_STR("then", "polling GET /v1/queue/{id} every --ticket-poll-ms"));
	else
		cc_log_info("events_fallback", CC_LOG_INT("player", d->p.index), CC_LOG_STR("why", why),
			    CC_LOG_INT("status", status));
	d->streaming = false;
	pc_stream_free(d->stream);
	d->stream = NULL;
	int64_t soon = cc_clock_ms() + w->cfg->ticket_poll_ms;
	if (d->next_poll_ms > soon)
		d->next_poll_ms = soon;
	if (d->assigning && d->next_assign_ms > soon)
		d->next_assign_ms = soon;
}

/* Opens the player's stream, resuming after the last position seen when there is one. */
static int open_stream(struct demo_worker *w, struct demo_player *d, struct cc_ws_client_refusal *ref)
{
	d->owner = w;
	d->ready = false;
	int timeout = (int)(w->cfg->timeout_ms < 5000 ? w->cfg->timeout_ms : 5000);
	return pc_stream_open(pc_client_url(w->client), d->p.token, d->have_position ? d->position : -1, timeout,
			      on_event, d, &d->stream, ref);
}

/*
 * The first open, before the player queues. auto: a refusal other than
 * 401 (a server without the route answers 404; 429, 503, no connection)
 * means polling; stream: 429, 503 and no connection are tried again for
 * --retry-horizon-ms, then, like any other refusal, an error; 401 always
 * is (the session just made is refused). Waits (briefly) for stream.ready, after
 * which every event of the ticket about to be made is delivered.
 */
/* Whether a refusal is worth trying again: 429, 503 (not events_disabled: that server has none), no connection. */
static bool refusal_transient(int rc, const struct cc_ws_client_refusal *ref)
{
	if (rc == CC_EIO || rc == CC_ETIMEOUT)
		return ref->status == 0;
	return rc == CC_EUNAVAILABLE && !strstr(ref->body, "\"events_disabled\"");
}

static int start_stream(struct demo_worker *w, struct demo_player *d)
{
	struct cc_ws_client_refusal ref;
	int rc = open_stream(w, d, &ref);
	/* --events=stream: a replica starting up (503), over its cap (429) or not reachable is tried
	 * again, with backoff, for the retry horizon, as a REST call would be */
	int64_t give_up_ms = cc_clock_ms() + w->cfg->retry_horizon_ms, pause_ms = 50;
	while (rc != 0 && strcmp(w->cfg->events, "stream") == 0 && refusal_transient(rc, &ref) &&
	       cc_clock_ms() + pause_ms < give_up_ms) {
		cc_log_info("events_retry", CC_LOG_INT("player", d->p.index), CC_LOG_INT("status", ref.status),
			    CC_LOG_STR("reason", ref.reason), CC_LOG_INT("in_ms", pause_ms));
		struct timespec ts = { .tv_sec = pause_ms / 1000, .tv_nsec = (pause_ms % 1000) * 1000000 };
		nanosleep(&ts, NULL);
		pause_ms = pause_ms * 2 > 1000 ? 1000 : pause_ms * 2;
		rc = open_stream(w, d, &ref);
	}
	if (rc != 0) {
		cc_log_info("events_refused", CC_LOG_INT("player", d->p.index), CC_LOG_INT("status", ref.status),
			    CC_LOG_STR("reason", ref.reason), CC_LOG_STR("body", ref.body));
		if (rc == CC_EUNAUTHORIZED)
			return unexpected(d, "events", "GET /v1/events refused the session (401)");
		if (strcmp(w->cfg->events, "stream") == 0)
			return unexpected(d, "events", "GET /v1/events was refused and --events=stream");
		w->counts.fallbacks++;
		stop_streaming(w, d, ref.reason, ref.status);
		return 0;
	}
	d->streaming = true;
	int64_t deadline = cc_clock_ms() + 3000;
	while (!d->ready && cc_clock_ms() < deadline)
		if (pc_stream_service(d->stream, 50) == 0)
			break;
	if (!d->ready)
		cc_log_warn("events_not_ready", CC_LOG_INT("player", d->p.index),
			    CC_LOG_STR("what", "no stream.ready within 3 s; going on (the safety re-read covers it)"));
	return 0;
}

/* A later open, after a drop: failures are retried with backoff while the player polls. */
static void reconnect_stream(struct demo_worker *w, struct demo_player *d)
{
	struct cc_ws_client_refusal ref;
	d->next_connect_ms = 0;
	d->reconnects++;
	int rc = open_stream(w, d, &ref);
	if (rc == 0) {
		w->counts.reconnects++;
		d->backoff_ms = 0;
		/* the replay after ?after= brings what was missed: back to the slow safety re-read */
		int64_t slow = cc_clock_ms() + w->cfg->events_reread_ms;
		if (!d->read_urgent)
			d->next_poll_ms = slow;
		if (d->assigning && !d->assignment_ready)
			d->next_assign_ms = slow;
		cc_log_info("events_resumed", CC_LOG_INT("player", d->p.index), CC_LOG_INT("after", d->position));
		return;
	}
	if (ref.status != 0 && ref.status != 429 && ref.status != 503) {
		stop_streaming(w, d, ref.reason, ref.status); /* 401 (session gone), 404, 400: this server will not */
		return;
	}
	d->backoff_ms = d->backoff_ms ? (d->backoff_ms * 2 > 30000 ? 30000 : d->backoff_ms * 2) : 1000;
	int64_t wait = ref.retry_after_s > 0 ? ref.retry_after_s * 1000 : d->backoff_ms;
	d->next_connect_ms = cc_clock_ms() + wait / 2 +
			     (int64_t)(seeded(w->cfg, d->p.index, d->reconnects, 0xc0de) % (uint64_t)(wait / 2 + 1));
	cc_log_info("events_reconnect_failed", CC_LOG_INT("player", d->p.index), CC_LOG_INT("status", ref.status),
		    CC_LOG_STR("reason", ref.reason), CC_LOG_INT("retry_in_ms", d->next_connect_ms - cc_clock_ms()));
}

/* The stream ended: what the close code says to do (contracts/v1/events.json x-close-codes). */
static void stream_ended(struct demo_worker *w, struct demo_player *d)
{
	int code = pc_stream_close_code(d->stream);
	const char *reason = pc_stream_close_reason(d->stream);
	int64_t delay;
	cc_log_info("events_closed", CC_LOG_INT("player", d->p.index), CC_LOG_INT("code", code),
		    CC_LOG_STR("reason", reason), CC_LOG_INT("position", d->position));
	switch (code) {
	case 1002:
	case 1003:
	case 1007:
	case 1009:
		stop_streaming(w, d, "the server closed for a client bug", code);
		return;
	case 1008:
		if (strcmp(reason, "rate_limited") != 0) {
			stop_streaming(w, d, "the session ended", code);
			return;
		}
		delay = 5000;
		break;
	case 1011:
		d->backoff_ms = d->backoff_ms ? (d->backoff_ms * 2 > 30000 ? 30000 : d->backoff_ms * 2) : 1000;
		delay = d->backoff_ms;
		break;
	case 1013:
		delay = 1000 + (int64_t)(seeded(w->cfg, d->p.index, d->reconnects, 0x1013) % 4000);
		break;
	default: /* 1000, 1001 (shutdown, ping timeout), 1006 (dropped): at once, 0-1 s jitter */
		delay = (int64_t)(seeded(w->cfg, d->p.index, d->reconnects, 0x1001) % 1000);
		break;
	}
	pc_stream_free(d->stream);
	d->stream = NULL;
	int64_t now = cc_clock_ms();
	d->next_connect_ms = now + (delay > 0 ? delay : 1);
	/* Until it is back: poll. */
	if (d->next_poll_ms > now + w->cfg->ticket_poll_ms)
		d->next_poll_ms = now + w->cfg->ticket_poll_ms;
	if (d->assigning && d->next_assign_ms > now + w->cfg->ticket_poll_ms)
		d->next_assign_ms = now + w->cfg->ticket_poll_ms;
}

/*
 * The worker's wait: poll(2) over its players' streams for up to nap_ms
 * (a plain sleep when none is open), then service each one, so an event
 * wakes the loop at once. A step that failed in an event's handling fails
 * the player here, outside the callback.
 */
static void wait_streams(struct demo_worker *w, int64_t nap_ms)
{
	const struct player_config *cfg = w->cfg;
	size_t n = 0;
	for (int64_t i = w->index; i < cfg->players; i += w->threads) {
		struct demo_player *d = &w->players[i];
		if (d->stream && pc_stream_fd(d->stream) >= 0 && n < w->cap_pfds) {
			w->pfds[n].fd = pc_stream_fd(d->stream);
			w->pfds[n].events = pc_stream_events(d->stream);
			w->pfds[n].revents = 0;
			n++;
		}
	}
	if (n == 0) {
		if (nap_ms > 0) {
			struct timespec ts = { .tv_sec = nap_ms / 1000, .tv_nsec = (nap_ms % 1000) * 1000000 };
			nanosleep(&ts, NULL);
		}
		return;
	}
	(void)poll(w->pfds, n, (int)(nap_ms > 0 ? nap_ms : 0));
	for (int64_t i = w->index; i < cfg->players; i += w->threads) {
		struct demo_player *d = &w->players[i];
		if (!d->stream)
			continue;
		if (pc_stream_service(d->stream, 0) == 0)
			stream_ended(w, d);
		if (d->event_rc) {
			int rc = d->event_rc;
			d->event_rc = 0;
			if (!d->p.broken)
				fail_player(w, d, "events", rc);
		}
	}
}

/* Runs this thread's players until each is matched, gone or broken, or the hard stop. */
static void match_phase(struct demo_worker *w)
{
	const struct player_config *cfg = w->cfg;
	long long unset = 0;
	/* The first thread here starts the clock; the others find it started. */
	(void)atomic_compare_exchange_strong(&w->shared->match_start_ms, &unset, (long long)cc_clock_ms());
	int64_t start = atomic_load(&w->shared->match_start_ms);
	int64_t hard_stop = start + cfg->match_deadline_seconds * 1000 + HARD_STOP_EXTRA_MS;
	for (int64_t i = w->index; i < cfg->players; i += w->threads) {
		struct demo_player *d = &w->players[i];
		d->next_poll_ms = start + poll_period(w, d); /* on the stream: only the safety re-read */
		d->next_beat_ms = start + beat_jitter(cfg, d); /* the first one comes sooner: a client's timer phase */
	}
	for (;;) {
		int64_t now = cc_clock_ms(), next = now + LOOP_NAP_MS;
		bool busy = false;
		for (int64_t i = w->index; i < cfg->players; i += w->threads) {
			struct demo_player *d = &w->players[i];
			if (d->p.broken || (!d->waiting && !d->assigning)) {
				if (d->stream) { /* done with matchmaking: the stream has told it all */
					pc_stream_free(d->stream);
					d->stream = NULL;
				}
				continue;
			}
			/* An assigning player has its own deadline (fetch_assignment). */
			if (now >= hard_stop && !d->assigning) {
				(void)unexpected(d, "match", "still waiting at the hard stop");
				fail_player(w, d, "match", CC_ETIMEOUT);
				continue;
			}
			int rc = tend(w, d, now);
			if (rc != 0)
				fail_player(w, d, "match", rc);
			if (d->p.broken || (!d->waiting && !d->assigning))
				continue;
			busy = true;
			if (d->assigning) {
				next = d->next_assign_ms < next ? d->next_assign_ms : next;
				now = cc_clock_ms();
				continue;
			}
			next = d->next_poll_ms < next ? d->next_poll_ms : next;
			next = d->next_beat_ms < next ? d->next_beat_ms : next;
			if (d->streaming && !d->stream && d->next_connect_ms)
				next = d->next_connect_ms < next ? d->next_connect_ms : next;
			now = cc_clock_ms();
		}
		if (!busy)
			break;
		wait_streams(w, next - cc_clock_ms());
	}
	for (int64_t i = w->index; i < cfg->players; i += w->threads) {
		pc_stream_free(w->players[i].stream);
		w->players[i].stream = NULL;
	}
}

static void *demo_worker_main(void *arg)
{
	struct demo_worker *w = arg;
	const struct player_config *cfg = w->cfg;
	struct demo_gate *gate = &w->shared->gate;
	pthread_mutex_lock(&gate->lock);
	while (!gate->open)
		pthread_cond_wait(&gate->cond, &gate->lock);
	pthread_mutex_unlock(&gate->lock);
	for (size_t ph = 0; ph < CC_ARRAY_LEN(phases); ph++) {
		for (int64_t i = w->index; i < cfg->players; i += w->threads) {
			struct demo_player *d = &w->players[i];
			if (d->p.broken)
				continue;
			int rc = w->client ? phases[ph].step(w, d) : CC_ENOMEM;
			if (rc != 0)
				fail_player(w, d, phases[ph].name, rc);
		}
		/* Everyone finishes a phase before anyone starts the next. */
		pthread_barrier_wait(&gate->barrier);
	}
	if (w->client)
		match_phase(w);
	return NULL;
}

/* ---- the game stage's report (--play) -------------------------------------- */

/* The stage latencies and outcomes of every played player; see play_report(). */
struct play_stats {
	long played, ok, failed, mismatched, matches, disagreeing_matches;
	struct pc_latency stage[5]; /* queue->proposal, proposal->assignment, assignment->connected,
				     * connected->first snapshot, queue->connected */
	struct pc_latency snapshot_bps; /* snapshot bytes per second, per player (connected to end) */
	uint64_t inputs;                /* input messages sent by every player: player-ticks driven */
	struct pc_latency pred_err;     /* every OK player's own-ship prediction errors, micrometres (predict.h) */
	uint64_t pred_snapshots;        /* snapshots that acknowledged an input, of which pred_err.n were used */
	struct pc_latency clock_bound;  /* each OK player's clock-sync error bound (min RTT / 2), as ns */
	struct pc_game_stats cost;      /* the game threads' CPU and ticks */
	long summaries;                 /* match summaries read and logged (match_summary), one per OK player */
	long summary_errors;            /* summaries that never showed the end, or disagreed with the game */
};

static const char *const stage_name[5] = { "queue_to_proposal", "proposal_to_assignment", "assignment_to_connected",
					    "connected_to_first_snapshot", "queue_to_connected" };

static void stage_add(struct pc_latency *l, uint64_t from, uint64_t to)
{
	if (from && to >= from)
		(void)pc_latency_add(l, to - from);
}

struct played_match {
	const char *match_id;
	const struct pc_game_result *r;
};

static int cmp_played(const void *a, const void *b)
{
	return strcmp(((const struct played_match *)a)->match_id, ((const struct played_match *)b)->match_id);
}

/*
 * Gathers the game stage's outcomes after pc_game_finish(). A player who
 * got an assignment and did not play to a checked end is an error (its
 * problem is logged); so is a match whose players disagree on the final
 * score. Returns the errors found.
 */
static long play_report(const struct player_config *cfg, struct demo_player *players, struct play_stats *st)
{
	long errors = 0;
	size_t n = 0;
	struct played_match *all = calloc((size_t)cfg->players, sizeof *all);
	for (int i = 0; i < 5; i++)
		pc_latency_init(&st->stage[i], 0);
	pc_latency_init(&st->snapshot_bps, 0);
	pc_latency_init(&st->pred_err, 0);
	pc_latency_init(&st->clock_bound, 0);
	for (int i = 0; i < cfg->players; i++) {
		struct demo_player *d = &players[i];
		const struct pc_game_result *r = &d->game;
		if (!d->played)
			continue;
		st->played++;
		st->inputs += r->inputs_sent;
		if (r->outcome != PC_GAME_OK) {
			st->failed++;
			errors++;
			cc_log_warn("demo_game_failed", CC_LOG_INT("player", d->p.index), CC_LOG_STR("match_id", r->match_id),
				    CC_LOG_STR("problem", r->outcome == PC_GAME_PENDING ? "never finished" : r->problem));
			st->mismatched += r->ended_ns != 0 && !r->score_agrees;
			continue;
		}
		st->ok++;
		stage_add(&st->stage[0], d->queued_ns, d->accepted_ns);
		stage_add(&st->stage[1], d->accepted_ns, r->assigned_ns);
		stage_add(&st->stage[2], r->assigned_ns, r->connected_ns);
		stage_add(&st->stage[3], r->connected_ns, r->first_snapshot_ns);
		stage_add(&st->stage[4], d->queued_ns, r->connected_ns);
		if (r->ended_ns > r->connected_ns + 1000000000u)
			(void)pc_latency_add(&st->snapshot_bps, r->snapshot_bytes * 1000000000u / (r->ended_ns - r->connected_ns));
		(void)pc_latency_merge(&st->pred_err, &r->pred.err_um);
		st->pred_snapshots += r->pred.snapshots;
		if (r->clock_valid)
			(void)pc_latency_add(&st->clock_bound, (uint64_t)(r->clock.bound_ms * 1e6));
		if (all)
			all[n++] = (struct played_match){ r->match_id, r };
	}
	if (!all) {
		errors++;
		return errors;
	}
	/* Every player of one match must have been sent the same final score. */
	qsort(all, n, sizeof *all, cmp_played);
	for (size_t i = 0; i < n; i++) {
		if (i > 0 && strcmp(all[i].match_id, all[i - 1].match_id) == 0) {
			if (memcmp(all[i].r->final_score, all[i - 1].r->final_score, 2) != 0) {
				cc_log_warn("demo_unexpected", CC_LOG_STR("what", "players of one match saw different final scores"),
					    CC_LOG_STR("match_id", all[i].match_id));
				st->disagreeing_matches++;
				errors++;
			}
			continue;
		}
		st->matches++;
		cc_log_info("demo_match_played", CC_LOG_STR("match_id", all[i].match_id),
			    CC_LOG_INT("score0", all[i].r->final_score[0]), CC_LOG_INT("score1", all[i].r->final_score[1]),
			    CC_LOG_INT("reason", all[i].r->end_reason));
	}
	free(all);
	return errors;
}

/* True when state is a match's end. */
static bool match_over(const char *state)
{
	return strcmp(state, "COMPLETED") == 0 || strcmp(state, "FAILED") == 0;
}

/*
 * What a game's post-match screen reads (issue 20): each player who played
 * to a checked end reads its match, GET /v1/matches/{id}, until it is over
 * (the result lands after the players leave), within
 * --summary-timeout-seconds of the games' end, and logs it as one line
 * (match_summary). An error: no end in time, a COMPLETED match without its
 * result, a score other than the one the game ended on, a ranked summary
 * without the player's rating or a casual one that shows a rating (the
 * casual rating is hidden).
 */
static void read_summaries(const struct player_config *cfg, struct demo_player *players, struct play_stats *st)
{
	struct pc_client *c = pc_client_new(cfg->api_url, (long)cfg->timeout_ms, 0);
	int64_t deadline_ms = cc_clock_ms() + cfg->summary_timeout_seconds * 1000;
	if (c)
		pc_client_set_retry_horizon(c, cfg->retry_horizon_ms);
	for (int i = 0; i < cfg->players; i++) {
		struct demo_player *d = &players[i];
		const struct pc_game_result *r = &d->game;
		struct pc_match_summary m = { 0 };
		const char *problem = NULL;
		if (!d->played || r->outcome != PC_GAME_OK)
			continue;
		for (;;) {
			if (!c || pc_get_match_summary(c, &d->p, r->match_id, &m) != 0) {
				problem = c ? pc_client_problem(c) : "no HTTP client";
				break;
			}
			if (match_over(m.state))
				break;
			if (cc_clock_ms() >= deadline_ms) {
				problem = "the match is not over within --summary-timeout-seconds of the games' end";
				break;
			}
			struct timespec ts = { .tv_sec = cfg->ticket_poll_ms / 1000,
					       .tv_nsec = (long)(cfg->ticket_poll_ms % 1000) * 1000000L };
			nanosleep(&ts, NULL);
		}
		if (!problem && strcmp(m.state, "COMPLETED") == 0 && !m.has_result)
			problem = "COMPLETED without a result";
		else if (!problem && m.has_result &&
			 (m.score[0] != r->final_score[0] || m.score[1] != r->final_score[1]))
			problem = "the summary's score is not the one the game ended on";
		else if (!problem && m.ranked && (!m.rating_shown || (m.has_result && !m.rated)))
			problem = "a ranked summary without the player's rating";
		else if (!problem && !m.ranked && m.rating_shown)
			problem = "a casual summary shows a rating";
		if (problem) {
			st->summary_errors++;
			cc_log_warn("demo_summary_failed", CC_LOG_INT("player", d->p.index), CC_LOG_STR("match_id", r->match_id),
				    CC_LOG_STR("state", m.state), CC_LOG_STR("problem", problem));
			continue;
		}
		st->summaries++;
		if (m.rated)
			cc_log_info("match_summary", CC_LOG_INT("player", d->p.index), CC_LOG_STR("player_id", d->p.player_id),
				    CC_LOG_STR("match_id", m.match_id), CC_LOG_STR("playlist", m.playlist),
				    CC_LOG_BOOL("ranked", m.ranked), CC_LOG_STR("state", m.state),
				    CC_LOG_STR("end_reason", m.end_reason), CC_LOG_INT("team", m.team),
				    CC_LOG_INT("score0", m.score[0]), CC_LOG_INT("score1", m.score[1]),
				    CC_LOG_INT("winner", m.winner), CC_LOG_INT("duration_seconds", m.duration_seconds),
				    CC_LOG_DBL("rating_before", m.rating_before), CC_LOG_DBL("rating_after", m.rating_after),
				    CC_LOG_DBL("deviation_before", m.deviation_before),
				    CC_LOG_DBL("deviation_after", m.deviation_after));
		else
			cc_log_info("match_summary", CC_LOG_INT("player", d->p.index), CC_LOG_STR("player_id", d->p.player_id),
				    CC_LOG_STR("match_id", m.match_id), CC_LOG_STR("playlist", m.playlist),
				    CC_LOG_BOOL("ranked", m.ranked), CC_LOG_STR("state", m.state),
				    CC_LOG_STR("end_reason", m.end_reason), CC_LOG_INT("team", m.team),
				    CC_LOG_INT("score0", m.score[0]), CC_LOG_INT("score1", m.score[1]),
				    CC_LOG_INT("winner", m.winner), CC_LOG_INT("duration_seconds", m.duration_seconds));
	}
	pc_client_free(c);
}

/* Appends the game stage's part of the summary line: key=value pairs for scripts. */
static void play_summary(struct play_stats *st, char *buf, size_t cap)
{
	size_t used = (size_t)snprintf(buf, cap, "; play: played=%ld ok=%ld failed=%ld score_mismatch=%ld matches=%ld",
				       st->played, st->ok, st->failed, st->mismatched + st->disagreeing_matches,
				       st->matches);
	for (int i = 0; i < 5 && used < cap; i++)
		used += (size_t)snprintf(buf + used, cap - used, " %s_ms=%.1f/%.1f", stage_name[i],
					 pc_latency_percentile_ms(&st->stage[i], 50),
					 pc_latency_percentile_ms(&st->stage[i], 95));
	if (used < cap)
		snprintf(buf + used, cap - used,
			 " snapshot_bytes_per_s=%.0f game_cpu_ms=%.0f cpu_us_per_player_tick=%.1f late_ticks=%llu/%llu",
			 pc_latency_percentile_ms(&st->snapshot_bps, 50) * 1e6, (double)st->cost.cpu_ns / 1e6,
			 st->inputs ? (double)st->cost.cpu_ns / 1e3 / (double)st->inputs : 0.0,
			 (unsigned long long)st->cost.late_ticks, (unsigned long long)st->cost.ticks);
	used = strlen(buf);
	/* Prediction error in metres (the recorder holds micrometres, so its "ms" are metres). */
	if (used < cap)
		snprintf(buf + used, cap - used,
			 " pred_err_m=%.3f/%.3f/%.3f/%.3f pred_snapshots=%zu/%llu clock_bound_ms=%.2f/%.2f",
			 pc_latency_percentile_ms(&st->pred_err, 50), pc_latency_percentile_ms(&st->pred_err, 95),
			 pc_latency_percentile_ms(&st->pred_err, 99), pc_latency_percentile_ms(&st->pred_err, 100),
			 st->pred_err.n, (unsigned long long)st->pred_snapshots,
			 pc_latency_percentile_ms(&st->clock_bound, 50), pc_latency_percentile_ms(&st->clock_bound, 100));
	used = strlen(buf);
	if (st->cost.net_packets && used < cap)
		snprintf(buf + used, cap - used, " net_sim_packets=%llu net_sim_dropped=%llu net_sim_duplicated=%llu",
			 (unsigned long long)st->cost.net_packets, (unsigned long long)st->cost.net_dropped,
			 (unsigned long long)st->cost.net_duplicated);
	used = strlen(buf);
	if (used < cap)
		snprintf(buf + used, cap - used, " summaries=%ld summary_errors=%ld", st->summaries, st->summary_errors);
}

static void play_stats_release(struct play_stats *st)
{
	for (int i = 0; i < 5; i++)
		pc_latency_release(&st->stage[i]);
	pc_latency_release(&st->snapshot_bps);
	pc_latency_release(&st->pred_err);
	pc_latency_release(&st->clock_bound);
}

/*
 * The event source's part of the summary: how many players learnt from
 * the stream and how many polled, what that cost in reads, and the
 * per-stage medians as the players saw them (proposed = the player first
 * saw the proposal it accepted; assigned = its assignment arrived;
 * connected = its game server welcomed it).
 */
static void events_summary(const struct player_config *cfg, const struct demo_player *players,
			   const struct demo_counts *t, char *buf, size_t cap)
{
	long stream = 0, poll_n = 0;
	struct pc_latency st[5];
	static const char *const names[5] = { "queue_to_proposed", "proposed_to_matched", "proposed_to_assigned",
					      "assigned_to_connected", "queue_to_connected" };
	for (int i = 0; i < 5; i++)
		pc_latency_init(&st[i], 0);
	for (int i = 0; i < cfg->players; i++) {
		const struct demo_player *d = &players[i];
		if (!d->queued_ns)
			continue;
		if (d->streaming)
			stream++;
		else
			poll_n++;
		if (!d->matched_ns)
			continue;
		stage_add(&st[0], d->queued_ns, d->proposed_ns);
		stage_add(&st[1], d->proposed_ns, d->matched_ns);
		if (d->played && d->game.outcome == PC_GAME_OK) {
			stage_add(&st[2], d->proposed_ns, d->game.assigned_ns);
			stage_add(&st[3], d->game.assigned_ns, d->game.connected_ns);
			stage_add(&st[4], d->queued_ns, d->game.connected_ns);
		}
	}
	size_t used = (size_t)snprintf(buf, cap,
				       "; events=stream:%ld poll:%ld (--events=%s) messages=%ld reconnects=%ld resyncs=%ld "
				       "fallbacks=%ld ticket_reads=%ld safety_reads=%ld assignment_reads=%ld stage_p50_ms",
				       stream, poll_n, cfg->events, t->stream_messages, t->reconnects, t->resyncs,
				       t->fallbacks, t->ticket_reads, t->safety_reads, t->assignment_reads);
	for (int i = 0; i < 5 && used < cap; i++) {
		if (i >= 2 && !cfg->play)
			break;
		used += (size_t)snprintf(buf + used, cap - used, " %s=%.1f", names[i], pc_latency_percentile_ms(&st[i], 50));
	}
	for (int i = 0; i < 5; i++)
		pc_latency_release(&st[i]);
}

static int cmp_match(const void *a, const void *b)
{
	return strcmp(((const struct demo_match *)a)->id, ((const struct demo_match *)b)->id);
}

static int cmp_id(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* Distinct matches per playlist over every thread's matched players. */
static void count_matches(struct demo_worker *workers, int threads, long per_playlist[N_PLAYLISTS], long *errors)
{
	size_t n = 0, k = 0;
	for (int t = 0; t < threads; t++)
		n += workers[t].n_matches;
	struct demo_match *all = calloc(n ? n : 1, sizeof *all);
	if (!all) {
		(*errors)++;
		return;
	}
	for (int t = 0; t < threads; t++) {
		memcpy(all + k, workers[t].matches, workers[t].n_matches * sizeof *all);
		k += workers[t].n_matches;
	}
	qsort(all, n, sizeof *all, cmp_match);
	for (size_t i = 0; i < n; i++) {
		if (i > 0 && strcmp(all[i].id, all[i - 1].id) == 0) {
			if (all[i].playlist != all[i - 1].playlist) {
				cc_log_warn("demo_unexpected", CC_LOG_STR("what", "one match holds players of two playlists"),
					    CC_LOG_STR("match_id", all[i].id));
				(*errors)++;
			}
			continue;
		}
		per_playlist[all[i].playlist]++;
	}
	free(all);
}

/* Distinct proposals over every thread's reads. */
static long count_proposals(struct demo_worker *workers, int threads, long *errors)
{
	size_t n = 0, k = 0;
	long distinct = 0;
	for (int t = 0; t < threads; t++)
		n += workers[t].n_seen;
	char (*all)[CC_UUID_BUF] = calloc(n ? n : 1, sizeof *all);
	if (!all) {
		(*errors)++;
		return 0;
	}
	for (int t = 0; t < threads; t++) {
		memcpy(all + k, workers[t].seen, workers[t].n_seen * sizeof *all);
		k += workers[t].n_seen;
	}
	qsort(all, n, sizeof *all, cmp_id);
	for (size_t i = 0; i < n; i++)
		distinct += i == 0 || strcmp(all[i], all[i - 1]) != 0;
	free(all);
	return distinct;
}

/* Sets up worker t: its client, recorders and bounded lists. Failures are counted when it runs. */
static void worker_init(struct demo_worker *w, const struct player_config *cfg, struct demo_shared *shared,
			struct demo_player *players, int t, int threads)
{
	size_t own = (size_t)((cfg->players - t + threads - 1) / threads);
	*w = (struct demo_worker){ .cfg = cfg, .shared = shared, .index = t, .threads = threads, .players = players };
	pc_latency_init(&w->latency, 0);
	pc_latency_init(&w->waits, 0);
	w->matches = calloc(own ? own : 1, sizeof *w->matches);
	w->cap_matches = w->matches ? own : 0;
	w->seen = calloc(own * PROPOSALS_PER_PLAYER + 1, sizeof *w->seen);
	w->cap_seen = w->seen ? own * PROPOSALS_PER_PLAYER + 1 : 0;
	w->pfds = calloc(own ? own : 1, sizeof *w->pfds);
	w->cap_pfds = w->pfds ? own : 0;
	/* A worker without a client still walks the phases, so the barrier is always met. */
	w->client = w->matches && w->seen ? pc_client_new(cfg->api_url, (long)cfg->timeout_ms, t) : NULL;
	if (w->client) {
		pc_client_record(w->client, &w->latency);
		pc_client_set_retry_horizon(w->client, cfg->retry_horizon_ms);
	} else {
		cc_log_error("client_failed", CC_LOG_STR("api_url", cfg->api_url));
	}
}

static void worker_release(struct demo_worker *w)
{
	pc_client_free(w->client);
	pc_latency_release(&w->latency);
	pc_latency_release(&w->waits);
	free(w->matches);
	free(w->seen);
	free(w->pfds);
}

int pc_demo_run(const struct player_config *cfg)
{
	int threads = (int)(cfg->threads < cfg->players ? cfg->threads : cfg->players);
	struct demo_player *players = calloc((size_t)cfg->players, sizeof *players);
	struct demo_worker *workers = calloc((size_t)threads, sizeof *workers);
	pthread_t *tids = calloc((size_t)threads, sizeof *tids);
	struct demo_shared shared = { .gate = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER } };
	struct demo_counts total = { 0 };
	long matches[N_PLAYLISTS] = { 0 }, proposals;
	unsigned long long retries = 0;
	struct pc_latency api, waits;
	struct play_stats play = { 0 };
	char play_line[1024] = "";
	char events_line[512] = "";
	bool enet_up = false;
	int started = 0, status = 1;

	pc_latency_init(&api, 0);
	pc_latency_init(&waits, 0);
	for (int l = 0; l < N_PLAYLISTS; l++)
		atomic_init(&shared.waiting[l], 0);
	atomic_init(&shared.match_start_ms, 0);
	if (!players || !workers || !tids) {
		fprintf(stderr, "cc-player: out of memory\n");
		goto out;
	}
	for (int i = 0; i < cfg->players; i++) {
		pc_player_init(&players[i].p, "player", cfg->seed, i);
		if (cfg->hex_tickets)
			pc_player_hex_ticket(&players[i].p);
		players[i].playlist = playlist_of(cfg, i);
	}
	if (cfg->play) {
		struct pc_game_options go = { .threads = (int)cfg->game_threads, .max_players = (int)cfg->players,
					      .deadline_ms = cfg->game_deadline_seconds * 1000,
					      .seed = (uint64_t)(cfg->decision_seed >= 0 ? cfg->decision_seed : cfg->seed),
					      .net_latency_ms = (int)cfg->net_sim_latency, .net_jitter_ms = (int)cfg->net_sim_jitter,
					      .net_loss_pct = cfg->net_sim_loss, .net_dup_pct = cfg->net_sim_dup,
					      .net_seed = (uint64_t)cfg->net_sim_seed };
		enet_up = enet_initialize() == 0;
		shared.game = enet_up ? pc_game_start(&go) : NULL;
		if (!shared.game) {
			fprintf(stderr, "cc-player: the game stage did not start (ENet %s)\n", enet_up ? "up" : "failed");
			goto out;
		}
	}
	for (int t = 0; t < threads; t++)
		worker_init(&workers[t], cfg, &shared, players, t, threads);
	for (; started < threads; started++)
		if (pthread_create(&tids[started], NULL, demo_worker_main, &workers[started]) != 0)
			break;
	/* The barrier must count only threads that exist, or the others would wait forever. */
	if (started < threads) {
		cc_log_error("threads_failed", CC_LOG_INT("wanted", threads), CC_LOG_INT("started", started));
		for (int t = started; t < threads; t++)
			workers[t].counts.errors++;
	}
	if (started > 0)
		pthread_barrier_init(&shared.gate.barrier, NULL, (unsigned)started);
	pthread_mutex_lock(&shared.gate.lock);
	shared.gate.open = true;
	pthread_cond_broadcast(&shared.gate.cond);
	pthread_mutex_unlock(&shared.gate.lock);
	for (int t = 0; t < started; t++)
		pthread_join(tids[t], NULL);
	if (started > 0)
		pthread_barrier_destroy(&shared.gate.barrier);
	/* Every assignment has been handed over: wait for the games to end. */
	pc_game_finish(shared.game);

	for (int t = 0; t < threads; t++) {
		struct demo_counts *c = &workers[t].counts;
		total.logged_in += c->logged_in;
		total.probes += c->probes;
		total.queued += c->queued;
		total.heartbeats += c->heartbeats;
		total.accepts += c->accepts;
		total.declined += c->declined;
		total.requeued += c->requeued;
		total.matched += c->matched;
		total.gave_up += c->gave_up;
		total.errors += c->errors;
		total.assignment_reads += c->assignment_reads;
		total.ticket_reads += c->ticket_reads;
		total.safety_reads += c->safety_reads;
		total.stream_messages += c->stream_messages;
		total.reconnects += c->reconnects;
		total.resyncs += c->resyncs;
		total.fallbacks += c->fallbacks;
		(void)pc_latency_merge(&api, &workers[t].latency);
		(void)pc_latency_merge(&waits, &workers[t].waits);
		retries += workers[t].client ? pc_client_retries(workers[t].client) : 0;
	}
	count_matches(workers, threads, matches, &total.errors);
	if (shared.game) {
		long assigned = 0;
		for (int t = 0; t < threads; t++)
			assigned += workers[t].counts.assigned;
		total.errors += play_report(cfg, players, &play);
		read_summaries(cfg, players, &play);
		total.errors += play.summary_errors;
		pc_game_stats(shared.game, &play.cost);
		play_summary(&play, play_line, sizeof play_line);
		/* A matched player that never got to play is as much a failure as one that failed playing. */
		if (assigned != total.matched) {
			cc_log_warn("demo_unexpected", CC_LOG_STR("what", "matched players without a game"),
				    CC_LOG_INT("matched", total.matched), CC_LOG_INT("assigned", assigned));
			/* Each such player failed a step and was counted then; none counted is our bug. */
			if (total.errors == 0)
				total.errors++;
		}
	}
	proposals = count_proposals(workers, threads, &total.errors);
	events_summary(cfg, players, &total, events_line, sizeof events_line);
	cc_log_info("demo_finished", CC_LOG_INT("requests", api.n), CC_LOG_INT("accepts", total.accepts),
		    CC_LOG_INT("errors", total.errors));
	printf("demo: %lld players, %ld logged in, %ld probes, %ld queued, %ld proposals seen, "
	       "%ld accepted matches (%ld casual, %ld ranked), %ld players matched, %ld declined, %ld requeued, "
	       "%ld gave up, %ld heartbeats, %ld errors, %llu retries, match wait p50 %.1f s p95 %.1f s, "
	       "api p50 %.1f ms p99 %.1f ms%s%s\n",
	       (long long)cfg->players, total.logged_in, total.probes, total.queued, proposals,
	       matches[CASUAL] + matches[RANKED], matches[CASUAL], matches[RANKED], total.matched, total.declined,
	       total.requeued, total.gave_up, total.heartbeats, total.errors, retries,
	       pc_latency_percentile_ms(&waits, 50) / 1000, pc_latency_percentile_ms(&waits, 95) / 1000,
	       pc_latency_percentile_ms(&api, 50), pc_latency_percentile_ms(&api, 99), events_line, play_line);
	fflush(stdout);
	status = total.errors == 0 && total.logged_in == cfg->players ? 0 : 1;
out:
	pc_game_free(shared.game);
	if (enet_up)
		enet_deinitialize();
	play_stats_release(&play);
	for (int t = 0; workers && t < threads; t++)
		worker_release(&workers[t]);
	pc_latency_release(&api);
	pc_latency_release(&waits);
	for (int i = 0; players && i < cfg->players; i++)
		pc_game_result_release(&players[i].game);
	free(tids);
	free(workers);
	free(players);
	return status;
}
