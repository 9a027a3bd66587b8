/*
 * client.c - cc-player's kept-alive REST client (see client.h).
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "client.h"
#include "sys/clock.h"
#include "sys/json.h"
#include "sys/log.h"
#include "sys/banned.h"

#define JSON_MAX_DEPTH 8

struct pc_client {
	CURL *curl;                     /* one easy handle: its connection is reused */
	char base_url[PC_MAX_URLS][PC_CLIENT_URL_MAX / 2]; /* "http://host:port" of each replica */
	int n_urls;                     /* entries of base_url */
	int current;                    /* the one in use (moves on a connection failure) */
	char url[PC_CLIENT_URL_MAX];    /* the current request's URL */
	char *body;                     /* response buffer, PC_CLIENT_MAX_RESPONSE + 1 bytes */
	size_t body_len;                /* bytes in body */
	bool overflow;                  /* the current response passed the cap */
	struct pc_latency *record;      /* where call durations go, or NULL */
	uint64_t requests;              /* requests sent */
	uint64_t retries;               /* retryable answers and connection failures sent again */
	int64_t horizon_ms;             /* a call retries this long from its first attempt; 0 = never */
	bool gave_up;                   /* the last call spent its horizon */
	bool unsure;                    /* an attempt of the last call may have been applied unanswered */
	CURLcode last_curl;             /* libcurl's result of the last request */
	uint64_t jitter;                /* xorshift state for retry backoff */
	char curl_error[CURL_ERROR_SIZE]; /* libcurl's text for the last transport failure */
	char problem[512];              /* the last failed call, for the caller's log */
	char error_code[64];            /* cc-api's error.code of the last failed call, or "" */
};

/* libcurl's write callback: keeps up to the cap, then aborts the transfer. */
static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct pc_client *c = arg;
	size_t n = size * nmemb;
	if (n > PC_CLIENT_MAX_RESPONSE - c->body_len) {
		c->overflow = true;
		return 0;
	}
	memcpy(c->body + c->body_len, data, n);
	c->body_len += n;
	return n;
}

/* Splits base_urls at commas into c->base_url; false when one is empty, not
 * http(s)://, too long, or there are more than PC_MAX_URLS. */
static bool take_urls(struct pc_client *c, const char *base_urls)
{
	const char *p = base_urls;
	do {
		size_t n = strcspn(p, ",");
		if (n == 0 || n >= sizeof c->base_url[0] || c->n_urls == PC_MAX_URLS ||
		    (strncmp(p, "http://", 7) != 0 && strncmp(p, "https://", 8) != 0))
			return false;
		char *dst = c->base_url[c->n_urls++];
		memcpy(dst, p, n);
		while (n > 0 && dst[n - 1] == '/')
			n--; /* "http://x/" + "/v1/..." would double the slash */
		dst[n] = '\0';
		p += strcspn(p, ",");
	} while (*p && *++p);
	return *base_urls && base_urls[strlen(base_urls) - 1] != ',';
}

struct pc_client *pc_client_new(const char *base_urls, long timeout_ms, int first)
{
	struct pc_client *c = NULL;
	if (!base_urls || !*base_urls)
		return NULL;
	c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->body = malloc(PC_CLIENT_MAX_RESPONSE + 1);
	c->curl = curl_easy_init();
	if (!c->body || !c->curl || !take_urls(c, base_urls)) {
		pc_client_free(c);
		return NULL;
	}
	c->current = (first < 0 ? -first : first) % c->n_urls;
	c->jitter = ((uint64_t)cc_clock_ns() ^ (uint64_t)(uintptr_t)c) | 1; /* xorshift must not start at 0 */
	curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L); /* threads: no SIGALRM for timeouts */
	curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
	curl_easy_setopt(c->curl, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(c->curl, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(c->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, c);
	curl_easy_setopt(c->curl, CURLOPT_ERRORBUFFER, c->curl_error);
	curl_easy_setopt(c->curl, CURLOPT_USERAGENT, "cc-player");
	return c;
}

void pc_client_free(struct pc_client *c)
{
	if (!c)
		return;
	if (c->curl)
		curl_easy_cleanup(c->curl);
	free(c->body);
	free(c);
}

void pc_client_record(struct pc_client *c, struct pc_latency *rec)
{
	c->record = rec;
}

void pc_client_set_retry_horizon(struct pc_client *c, int64_t horizon_ms)
{
	c->horizon_ms = horizon_ms < 0 ? 0 : horizon_ms;
}

uint64_t pc_client_retries(const struct pc_client *c)
{
	return c->retries;
}

bool pc_client_gave_up(const struct pc_client *c)
{
	return c->gave_up;
}

bool pc_client_unsure(const struct pc_client *c)
{
	return c->unsure;
}

const char *pc_client_url(const struct pc_client *c)
{
	return c->base_url[c->current];
}

/* Full-jitter exponential backoff before retry number `retry` (1-based), in ns. */
static uint64_t backoff_ns(struct pc_client *c, int retry)
{
	uint64_t cap_ms = (uint64_t)PC_RETRY_BASE_MS << (retry - 1 < 10 ? retry - 1 : 10);
	if (cap_ms > PC_RETRY_CAP_MS)
		cap_ms = PC_RETRY_CAP_MS;
	c->jitter ^= c->jitter << 13;
	c->jitter ^= c->jitter >> 7;
	c->jitter ^= c->jitter << 17;
	return c->jitter % (cap_ms * 1000000u + 1);
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000u), .tv_nsec = (long)(ns % 1000000000u) };
	while (nanosleep(&ts, &ts) != 0)
		;
}

/*
 * Whether a transport failure may come right on a retry (the server went
 * away, is restarting, or answered nothing) rather than never (a bad URL,
 * an answer over our cap). Every such failure leaves the call unsure, even
 * "could not connect": on a kept-alive connection that died under a sent
 * request (the server killed after its commit), libcurl quietly retries on
 * a new connection, and it is that retry's failure we are told about.
 */
static bool transport_retryable(CURLcode cc)
{
	switch (cc) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_PARTIAL_FILE:
		return true;
	default:
		return false;
	}
}

/* True for an answer SPEC 2 says to send again: 503 with "retryable": true. */
static bool retryable(long status, const cJSON *obj)
{
	const cJSON *e = obj ? cJSON_GetObjectItemCaseSensitive(obj, "error") : NULL;
	return status == 503 && e && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "retryable"));
}

/* True when obj is an error answer whose error.code is code. */
static bool answer_code_is(const cJSON *obj, const char *code)
{
	const cJSON *e = obj ? cJSON_GetObjectItemCaseSensitive(obj, "error") : NULL;
	const cJSON *c = e ? cJSON_GetObjectItemCaseSensitive(e, "code") : NULL;
	return cJSON_IsString(c) && strcmp(c->valuestring, code) == 0;
}

uint64_t pc_client_requests(const struct pc_client *c)
{
	return c->requests;
}

const char *pc_client_problem(const struct pc_client *c)
{
	return c->problem;
}

const char *pc_client_error_code(const struct pc_client *c)
{
	return c->error_code;
}

CC_PRINTF(2, 3) static void set_problem(struct pc_client *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->problem, sizeof c->problem, fmt, ap);
	va_end(ap);
}

/* Appends to the problem text (truncated at its size). */
CC_PRINTF(2, 3) static void append_problem(struct pc_client *c, const char *fmt, ...)
{
	size_t n = strlen(c->problem);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->problem + n, sizeof c->problem - n, fmt, ap);
	va_end(ap);
}

/* Appends line to list; on failure frees the whole list and returns NULL. */
static struct curl_slist *add_header(struct curl_slist *list, const char *line)
{
	struct curl_slist *grown = curl_slist_append(list, line);
	if (!grown)
		curl_slist_free_all(list);
	return grown;
}

int pc_request(struct pc_client *c, const char *method, const char *path, const char *token,
	       const char *idempotency_key, const char *body, struct pc_reply *reply)
{
	struct curl_slist *headers = NULL;
	char line[PC_TOKEN_MAX + 160];
	bool post = strcmp(method, "POST") == 0;
	int rc = 0;

	c->problem[0] = '\0';
	c->error_code[0] = '\0';
	if (!post && strcmp(method, "GET") != 0)
		return CC_EINVAL;
	if ((size_t)snprintf(c->url, sizeof c->url, "%s%s", c->base_url[c->current], path) >= sizeof c->url) {
		set_problem(c, "%s: URL longer than %d bytes", path, PC_CLIENT_URL_MAX);
		return CC_EINVAL;
	}
	/* "Expect:" off: libcurl would otherwise wait for 100-continue on big bodies. */
	headers = add_header(NULL, "Expect:");
	if (headers && token) {
		snprintf(line, sizeof line, "Authorization: Bearer %s", token);
		headers = add_header(headers, line);
	}
	if (headers && idempotency_key) {
		snprintf(line, sizeof line, "Idempotency-Key: %s", idempotency_key);
		headers = add_header(headers, line);
	}
	if (headers && body)
		headers = add_header(headers, "Content-Type: application/json");
	if (!headers) {
		set_problem(c, "%s %s: out of memory", method, path);
		return CC_ENOMEM;
	}
	curl_easy_setopt(c->curl, CURLOPT_URL, c->url);
	curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, headers);
	if (post) {
		curl_easy_setopt(c->curl, CURLOPT_POST, 1L);
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body ? body : "");
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE, (long)(body ? strlen(body) : 0));
	} else {
		curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L);
	}
	c->body_len = 0;
	c->overflow = false;
	c->curl_error[0] = '\0';

	uint64_t start = (uint64_t)cc_clock_ns();
	CURLcode cc = curl_easy_perform(c->curl);
	uint64_t elapsed = (uint64_t)cc_clock_ns() - start;
	c->requests++;
	c->last_curl = cc;
	curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(headers);
	c->body[c->body_len] = '\0';

	memset(reply, 0, sizeof *reply);
	reply->body = c->body;
	reply->body_len = c->body_len;
	reply->elapsed_ns = elapsed;
	if (cc != CURLE_OK) {
		rc = c->overflow ? CC_ETOOBIG : cc == CURLE_OPERATION_TIMEDOUT ? CC_ETIMEOUT : CC_EIO;
		set_problem(c, "%s %s%s: %s", method, c->base_url[c->current], path,
			    c->overflow ? "response body over the cap" : c->curl_error[0] ? c->curl_error
											 : curl_easy_strerror(cc));
		return rc;
	}
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &reply->status);
	if (c->record)
		(void)pc_latency_add(c->record, elapsed); /* a full recorder counts the drop itself */
	return 0;
}

/* The code a call returns for an unexpected status. */
static int status_code(long status)
{
	switch (status) {
	case 401: return CC_EUNAUTHORIZED;
	case 403: return CC_EFORBIDDEN;
	case 404: return CC_ENOTFOUND;
	case 409: return CC_ECONFLICT;
	case 429:
	case 503: return CC_EUNAVAILABLE;
	default: return CC_EINVAL;
	}
}

/*
 * Sends a request and expects one status and a JSON object body. Returns 0
 * and *out (caller cJSON_Delete()s), or a negative code with c->problem
 * naming the route, the status and the error code cc-api gave.
 */
static int call_json(struct pc_client *c, const char *method, const char *path, const char *token,
		     const char *key, const char *body, long expect, cJSON **out)
{
	struct pc_reply r;
	struct cc_json_error err = { 0 };
	cJSON *obj = NULL;
	int prc = 0, gave_up_after = 0;
	uint64_t first = (uint64_t)cc_clock_ns(), horizon_ns = (uint64_t)c->horizon_ms * 1000000u;
	c->gave_up = false;
	c->unsure = false;
	for (int attempt = 1;; attempt++) {
		int rc = pc_request(c, method, path, token, key, body, &r);
		if (rc == 0) {
			prc = cc_json_parse_object(r.body, r.body_len, PC_CLIENT_MAX_RESPONSE, JSON_MAX_DEPTH, &obj,
						   &err);
			if (r.status == expect || !retryable(r.status, obj))
				break;
			/* Only a lost race is sure to have been rolled back; a database that went away
			 * mid-commit may have committed what it could not confirm. */
			c->unsure |= !answer_code_is(obj, "retry_exhausted");
		} else if (c->overflow || !transport_retryable(c->last_curl)) {
			return rc;
		} else {
			/* Gone, restarting, or silent: the next replica (if any) may answer. */
			c->unsure = true;
			c->current = (c->current + 1) % c->n_urls;
		}
		uint64_t wait = backoff_ns(c, attempt);
		if (c->horizon_ms == 0 || (uint64_t)cc_clock_ns() - first + wait > horizon_ns) {
			c->gave_up = c->horizon_ms > 0;
			gave_up_after = attempt;
			if (rc != 0) {
				append_problem(c, " (gave up after %d attempts in %.1f s)", attempt,
					       (double)((uint64_t)cc_clock_ns() - first) / 1e9);
				return rc; /* pc_request described the transport failure */
			}
			break;
		}
		cJSON_Delete(obj);
		obj = NULL;
		c->retries++;
		cc_log_debug("retry", CC_LOG_STR("call", path), CC_LOG_INT("attempt", attempt),
			     CC_LOG_INT("status", r.status), CC_LOG_STR("curl", rc ? curl_easy_strerror(c->last_curl) : ""),
			     CC_LOG_STR("next_url", c->base_url[c->current]));
		sleep_ns(wait);
	}
	if (r.status != expect) {
		const cJSON *e = prc == 0 ? cJSON_GetObjectItemCaseSensitive(obj, "error") : NULL;
		const cJSON *code = e ? cJSON_GetObjectItemCaseSensitive(e, "code") : NULL;
		const cJSON *msg = e ? cJSON_GetObjectItemCaseSensitive(e, "message") : NULL;
		set_problem(c, "%s %s: expected %ld, got %ld %s: %s", method, path, expect, r.status,
			    cJSON_IsString(code) ? code->valuestring : "(no error code)",
			    cJSON_IsString(msg) ? msg->valuestring : "");
		if (cJSON_IsString(code))
			snprintf(c->error_code, sizeof c->error_code, "%s", code->valuestring);
		if (c->gave_up)
			append_problem(c, " (gave up after %d attempts in %.1f s)", gave_up_after,
				       (double)((uint64_t)cc_clock_ns() - first) / 1e9);
		cJSON_Delete(obj);
		return status_code(r.status);
	}
	if (prc != 0) {
		set_problem(c, "%s %s: %ld answer is not a JSON object: %s", method, path, r.status, err.message);
		return CC_EINVAL;
	}
	*out = obj;
	return 0;
}

/* Copies a required string field of at most cap - 1 bytes. */
static int copy_string(struct pc_client *c, const cJSON *obj, const char *field, char *dst, size_t cap)
{
	struct cc_json_error err = { 0 };
	const char *s;
	if (cc_json_get_string(obj, field, true, 1, cap - 1, &s, &err) != 0) {
		set_problem(c, "answer: %s", err.message);
		return CC_EINVAL;
	}
	memcpy(dst, s, strlen(s) + 1);
	return 0;
}

/* Copies a uuid field that may be null or absent ("" then). */
static int copy_optional_id(struct pc_client *c, const cJSON *obj, const char *field, char dst[CC_UUID_BUF])
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, field);
	if (!item || cJSON_IsNull(item)) {
		dst[0] = '\0';
		return 0;
	}
	if (!cJSON_IsString(item) || strlen(item->valuestring) != 36) {
		set_problem(c, "answer: field '%s' must be null or a uuid", field);
		return CC_EINVAL;
	}
	memcpy(dst, item->valuestring, CC_UUID_BUF);
	return 0;
}

/* Reads id, revision, state, proposal and match of a ticket answer into p. */
static int take_ticket(struct pc_client *c, const cJSON *obj, struct pc_player *p)
{
	struct cc_json_error err = { 0 };
	char id[sizeof p->ticket_id], state[sizeof p->state];
	char proposal_id[sizeof p->proposal_id], match_id[sizeof p->match_id];
	int64_t revision;
	if (copy_string(c, obj, "id", id, sizeof id) != 0 || copy_string(c, obj, "state", state, sizeof state) != 0 ||
	    copy_optional_id(c, obj, "proposal_id", proposal_id) != 0 ||
	    copy_optional_id(c, obj, "match_id", match_id) != 0)
		return CC_EINVAL;
	if (cc_json_get_int(obj, "revision", true, 1, INT64_MAX, &revision, &err) != 0) {
		set_problem(c, "ticket answer: %s", err.message);
		return CC_EINVAL;
	}
	memcpy(p->ticket_id, id, sizeof id);
	memcpy(p->state, state, sizeof state);
	memcpy(p->proposal_id, proposal_id, sizeof proposal_id);
	memcpy(p->match_id, match_id, sizeof match_id);
	p->revision = revision;
	return 0;
}

void pc_player_init(struct pc_player *p, const char *kind, long long seed, int index)
{
	memset(p, 0, sizeof *p);
	p->index = index;
	snprintf(p->login_ticket, sizeof p->login_ticket, "%s-%lld-%d", kind, seed, index);
}

void pc_player_hex_ticket(struct pc_player *p)
{
	static const char digits[] = "0123456789abcdef";
	char hex[sizeof p->login_ticket];
	size_t n = strlen(p->login_ticket);
	if (n > (sizeof hex - 1) / 2)
		n = (sizeof hex - 1) / 2;
	for (size_t i = 0; i < n; i++) {
		hex[2 * i] = digits[(unsigned char)p->login_ticket[i] >> 4];
		hex[2 * i + 1] = digits[(unsigned char)p->login_ticket[i] & 15];
	}
	hex[2 * n] = '\0';
	memcpy(p->login_ticket, hex, 2 * n + 1);
}

int pc_login(struct pc_client *c, struct pc_player *p)
{
	char body[128];
	char token[sizeof p->token], player_id[sizeof p->player_id];
	cJSON *obj = NULL;
	snprintf(body, sizeof body, "{\"ticket\":\"%s\"}", p->login_ticket);
	int rc = call_json(c, "POST", "/v1/session/steam", NULL, NULL, body, 200, &obj);
	if (rc == 0)
		rc = copy_string(c, obj, "session_token", token, sizeof token);
	if (rc == 0)
		rc = copy_string(c, obj, "player_id", player_id, sizeof player_id);
	if (rc == 0) {
		memcpy(p->token, token, sizeof token);
		memcpy(p->player_id, player_id, sizeof player_id);
	}
	cJSON_Delete(obj);
	return rc;
}

int pc_probe(struct pc_client *c, struct pc_player *p, const char *region, double *rtt_ms)
{
	struct cc_json_error err = { 0 };
	char path[128], body[192], nonce[96];
	cJSON *obj = NULL;
	double rtt;
	snprintf(path, sizeof path, "/v1/probes/%s/challenge", region);
	int rc = call_json(c, "POST", path, p->token, NULL, NULL, 201, &obj);
	if (rc == 0)
		rc = copy_string(c, obj, "nonce", nonce, sizeof nonce);
	cJSON_Delete(obj);
	obj = NULL;
	if (rc != 0)
		return rc;
	snprintf(path, sizeof path, "/v1/probes/%s/answer", region);
	snprintf(body, sizeof body, "{\"nonce\":\"%s\"}", nonce);
	rc = call_json(c, "POST", path, p->token, NULL, body, 200, &obj);
	if (rc == 0 && cc_json_get_double(obj, "rtt_ms", true, 0, 1e9, &rtt, &err) != 0) {
		set_problem(c, "%s answer: %s", path, err.message);
		rc = CC_EINVAL;
	}
	if (rc == 0 && rtt_ms)
		*rtt_ms = rtt;
	cJSON_Delete(obj);
	return rc;
}

int pc_enqueue(struct pc_client *c, struct pc_player *p, const char *playlist, int64_t protocol_version,
	       const char *build, const char *idempotency_key)
{
	char body[256];
	cJSON *obj = NULL;
	if ((size_t)snprintf(body, sizeof body, "{\"playlist\":\"%s\",\"protocol_version\":%lld,\"build\":\"%s\"}",
			     playlist, (long long)protocol_version, build) >= sizeof body) {
		set_problem(c, "POST /v1/queue: playlist or build too long");
		return CC_EINVAL;
	}
	int rc = call_json(c, "POST", "/v1/queue", p->token, idempotency_key, body, 201, &obj);
	if (rc == 0)
		rc = take_ticket(c, obj, p);
	cJSON_Delete(obj);
	return rc;
}

int pc_party_queue(struct pc_client *c, struct pc_player *leader, struct pc_player **mates, int n_mates,
		   const char *playlist, int64_t protocol_version, const char *build, const char *key)
{
	char body[256], path[128], code[16], party[CC_UUID_BUF], ckey[160];
	cJSON *obj = NULL;
	int64_t revision = 0;
	snprintf(body, sizeof body, "{\"protocol_version\":%lld,\"build\":\"%s\"}", (long long)protocol_version, build);
	snprintf(ckey, sizeof ckey, "%s-party", key);
	int rc = call_json(c, "POST", "/v1/parties", leader->token, ckey, body, 201, &obj);
	if (rc == 0 && (rc = copy_string(c, obj, "id", party, sizeof party)) == 0)
		rc = copy_string(c, obj, "join_code", code, sizeof code);
	cJSON_Delete(obj);
	obj = NULL;
	for (int k = 0; rc == 0 && k < n_mates; k++) {
		snprintf(body, sizeof body, "{\"join_code\":\"%s\",\"protocol_version\":%lld,\"build\":\"%s\"}", code,
			 (long long)protocol_version, build);
		rc = call_json(c, "POST", "/v1/parties/join", mates[k]->token, NULL, body, 200, &obj);
		struct cc_json_error err = { 0 };
		if (rc == 0 && cc_json_get_int(obj, "revision", true, 1, INT64_MAX, &revision, &err) != 0) {
			set_problem(c, "POST /v1/parties/join: no revision");
			rc = CC_EINVAL;
		}
		cJSON_Delete(obj);
		obj = NULL;
	}
	if (rc != 0)
		return rc;
	snprintf(path, sizeof path, "/v1/parties/%s/queue", party);
	snprintf(body, sizeof body, "{\"playlist\":\"%s\",\"revision\":%lld}", playlist, (long long)revision);
	if ((rc = call_json(c, "POST", path, leader->token, key, body, 201, &obj)) != 0)
		return rc;
	const cJSON *tickets = cJSON_GetObjectItemCaseSensitive(obj, "tickets"), *t;
	int taken = 0;
	cJSON_ArrayForEach(t, tickets)
	{
		const cJSON *pid = cJSON_GetObjectItemCaseSensitive(t, "player_id");
		for (int k = -1; cJSON_IsString(pid) && k < n_mates && rc == 0; k++) {
			struct pc_player *m = k < 0 ? leader : mates[k];
			if (strcmp(m->player_id, pid->valuestring) == 0) {
				rc = take_ticket(c, t, m);
				taken++;
			}
		}
	}
	cJSON_Delete(obj);
	if (rc == 0 && taken != n_mates + 1) {
		set_problem(c, "POST /v1/parties/{id}/queue: not one ticket per member");
		rc = CC_EINVAL;
	}
	return rc;
}

/* heartbeat and cancel: a compare-and-set at the revision we hold. */
static int revision_call(struct pc_client *c, struct pc_player *p, const char *verb)
{
	char path[96], body[64];
	cJSON *obj = NULL;
	snprintf(path, sizeof path, "/v1/queue/%s/%s", p->ticket_id, verb);
	snprintf(body, sizeof body, "{\"revision\":%lld}", (long long)p->revision);
	int rc = call_json(c, "POST", path, p->token, NULL, body, 200, &obj);
	if (rc == 0)
		rc = take_ticket(c, obj, p);
	cJSON_Delete(obj);
	return rc;
}

int pc_heartbeat(struct pc_client *c, struct pc_player *p)
{
	return revision_call(c, p, "heartbeat");
}

int pc_cancel(struct pc_client *c, struct pc_player *p)
{
	return revision_call(c, p, "cancel");
}

int pc_get_ticket(struct pc_client *c, struct pc_player *p)
{
	char path[96];
	cJSON *obj = NULL;
	snprintf(path, sizeof path, "/v1/queue/%s", p->ticket_id);
	int rc = call_json(c, "GET", path, p->token, NULL, NULL, 200, &obj);
	if (rc == 0)
		rc = take_ticket(c, obj, p);
	cJSON_Delete(obj);
	return rc;
}

/* Reads a proposal answer; my_response is the participant row of player_id. */
static int take_proposal(struct pc_client *c, const cJSON *obj, const char *player_id, struct pc_proposal *out)
{
	struct cc_json_error err = { 0 };
	struct pc_proposal pr = { 0 };
	const cJSON *list, *item;
	bool found = false;
	if (copy_string(c, obj, "id", pr.id, sizeof pr.id) != 0 ||
	    copy_string(c, obj, "playlist", pr.playlist, sizeof pr.playlist) != 0 ||
	    copy_string(c, obj, "state", pr.state, sizeof pr.state) != 0 ||
	    copy_optional_id(c, obj, "match_id", pr.match_id) != 0)
		return CC_EINVAL;
	if (cc_json_get_int(obj, "revision", true, 1, INT64_MAX, &pr.revision, &err) != 0 ||
	    cc_json_get_array(obj, "participants", true, 64, &list, &err) != 0) {
		set_problem(c, "proposal answer: %s", err.message);
		return CC_EINVAL;
	}
	cJSON_ArrayForEach(item, list) {
		const cJSON *who = cJSON_GetObjectItemCaseSensitive(item, "player_id");
		const cJSON *said = cJSON_GetObjectItemCaseSensitive(item, "response");
		pr.participants++;
		if (!cJSON_IsString(who) || strcmp(who->valuestring, player_id) != 0)
			continue;
		found = true;
		if (cJSON_IsString(said) && strlen(said->valuestring) < sizeof pr.my_response)
			memcpy(pr.my_response, said->valuestring, strlen(said->valuestring) + 1);
	}
	if (!found) {
		set_problem(c, "proposal answer: player %s is not among its %d participants", player_id,
			    pr.participants);
		return CC_EINVAL;
	}
	*out = pr;
	return 0;
}

int pc_get_proposal(struct pc_client *c, const struct pc_player *p, const char *proposal_id,
		    struct pc_proposal *out)
{
	char path[96];
	cJSON *obj = NULL;
	snprintf(path, sizeof path, "/v1/proposals/%s", proposal_id);
	int rc = call_json(c, "GET", path, p->token, NULL, NULL, 200, &obj);
	if (rc == 0)
		rc = take_proposal(c, obj, p->player_id, out);
	cJSON_Delete(obj);
	return rc;
}

int pc_respond(struct pc_client *c, const struct pc_player *p, const char *proposal_id, bool accept,
	       int64_t revision, struct pc_proposal *out)
{
	char path[112], body[80];
	cJSON *obj = NULL;
	snprintf(path, sizeof path, "/v1/proposals/%s/response", proposal_id);
	snprintf(body, sizeof body, "{\"response\":\"%s\",\"revision\":%lld}", accept ? "accept" : "decline",
		 (long long)revision);
	int rc = call_json(c, "POST", path, p->token, NULL, body, 200, &obj);
	if (rc == 0)
		rc = take_proposal(c, obj, p->player_id, out);
	cJSON_Delete(obj);
	return rc;
}

int pc_get_assignment(struct pc_client *c, const struct pc_player *p, const char *match_id,
		      struct pc_assignment *out)
{
	struct cc_json_error err = { 0 };
	struct pc_assignment a = { 0 };
	char path[112];
	cJSON *obj = NULL;
	snprintf(path, sizeof path, "/v1/matches/%s/assignment", match_id);
	int rc = call_json(c, "GET", path, p->token, NULL, NULL, 200, &obj);
	if (rc == 0)
		rc = copy_string(c, obj, "match_id", a.match_id, sizeof a.match_id);
	if (rc == 0)
		rc = copy_string(c, obj, "address", a.address, sizeof a.address);
	if (rc == 0)
		rc = copy_string(c, obj, "join_token", a.join_token, sizeof a.join_token);
	if (rc == 0 && (cc_json_get_int(obj, "port", true, 1, 65535, &a.port, &err) != 0 ||
			cc_json_get_int(obj, "slot", true, 0, 15, &a.slot, &err) != 0 ||
			cc_json_get_int(obj, "team", true, 0, 1, &a.team, &err) != 0)) {
		set_problem(c, "%s answer: %s", path, err.message);
		rc = CC_EINVAL;
	}
	if (rc == 0 && strcmp(a.match_id, match_id) != 0) {
		set_problem(c, "%s answer: it is for match %s", path, a.match_id);
		rc = CC_EINVAL;
	}
	if (rc == 0)
		*out = a;
	cJSON_Delete(obj);
	return rc;
}

/* The player's own entry of a MatchSummary's teams, or NULL. */
static const cJSON *summary_entry(const cJSON *obj, const char *player_id)
{
	const cJSON *teams = cJSON_GetObjectItemCaseSensitive(obj, "teams"), *t, *pl;
	cJSON_ArrayForEach(t, teams)
	{
		cJSON_ArrayForEach(pl, cJSON_GetObjectItemCaseSensitive(t, "players"))
		{
			const cJSON *id = cJSON_GetObjectItemCaseSensitive(pl, "player_id");
			if (cJSON_IsString(id) && strcmp(id->valuestring, player_id) == 0)
				return pl;
		}
	}
	return NULL;
}

int pc_get_match_summary(struct pc_client *c, const struct pc_player *p, const char *match_id,
			 struct pc_match_summary *out)
{
	struct cc_json_error err = { 0 };
	struct pc_match_summary m = { .winner = -1 };
	char path[112];
	cJSON *obj = NULL;
	const cJSON *result, *me, *rating, *reason, *winner;
	snprintf(path, sizeof path, "/v1/matches/%s", match_id);
	int rc = call_json(c, "GET", path, p->token, NULL, NULL, 200, &obj);
	if (rc != 0)
		return rc;
	if ((rc = copy_string(c, obj, "match_id", m.match_id, sizeof m.match_id)) != 0 ||
	    (rc = copy_string(c, obj, "playlist", m.playlist, sizeof m.playlist)) != 0 ||
	    (rc = copy_string(c, obj, "state", m.state, sizeof m.state)) != 0)
		goto out;
	rc = CC_EINVAL;
	if (cc_json_get_bool(obj, "ranked", true, &m.ranked, &err) != 0)
		goto bad;
	reason = cJSON_GetObjectItemCaseSensitive(obj, "end_reason");
	if (cJSON_IsString(reason) && strlen(reason->valuestring) < sizeof m.end_reason)
		memcpy(m.end_reason, reason->valuestring, strlen(reason->valuestring) + 1);
	else if (!cJSON_IsNull(reason)) {
		set_problem(c, "%s answer: end_reason is neither a short string nor null", path);
		goto out;
	}
	result = cJSON_GetObjectItemCaseSensitive(obj, "result");
	if (cJSON_IsObject(result)) {
		const cJSON *score = cJSON_GetObjectItemCaseSensitive(result, "score");
		if (cJSON_GetArraySize(score) != 2 || !cJSON_IsNumber(cJSON_GetArrayItem(score, 0)) ||
		    !cJSON_IsNumber(cJSON_GetArrayItem(score, 1))) {
			set_problem(c, "%s answer: result.score is not two numbers", path);
			goto out;
		}
		m.score[0] = (int64_t)cJSON_GetArrayItem(score, 0)->valuedouble;
		m.score[1] = (int64_t)cJSON_GetArrayItem(score, 1)->valuedouble;
		winner = cJSON_GetObjectItemCaseSensitive(result, "winner");
		m.winner = cJSON_IsNumber(winner) ? (int)winner->valuedouble : -1;
		if (cc_json_get_int(result, "duration_seconds", true, 0, 86400, &m.duration_seconds, &err) != 0)
			goto bad;
		m.has_result = true;
	} else if (!cJSON_IsNull(result)) {
		set_problem(c, "%s answer: result is neither an object nor null", path);
		goto out;
	}
	if (!(me = summary_entry(obj, p->player_id))) {
		set_problem(c, "%s answer: the player %s is in no team", path, p->player_id);
		goto out;
	}
	if (cc_json_get_int(me, "team", true, 0, 1, &m.team, &err) != 0)
		goto bad;
	rating = cJSON_GetObjectItemCaseSensitive(me, "rating");
	m.rating_shown = rating != NULL;
	if (cJSON_IsObject(rating)) {
		if (cc_json_get_double(rating, "rating_before", true, -1e6, 1e6, &m.rating_before, &err) != 0 ||
		    cc_json_get_double(rating, "deviation_before", true, 0, 1e6, &m.deviation_before, &err) != 0 ||
		    cc_json_get_double(rating, "rating_after", true, -1e6, 1e6, &m.rating_after, &err) != 0 ||
		    cc_json_get_double(rating, "deviation_after", true, 0, 1e6, &m.deviation_after, &err) != 0)
			goto bad;
		m.rated = true;
	}
	if (strcmp(m.match_id, match_id) != 0) {
		set_problem(c, "%s answer: it is for match %s", path, m.match_id);
		goto out;
	}
	*out = m;
	rc = 0;
	goto out;
bad:
	set_problem(c, "%s answer: %s", path, err.message);
out:
	cJSON_Delete(obj);
	return rc;
}
