/*
 * agones.c - the agones provider (SPEC 8): one GameServerAllocation
 * (allocation.agones.dev/v1) per allocation, created through the
 * Kubernetes API with libcurl:
 *
 *   POST {k8s}/apis/allocation.agones.dev/v1/namespaces/{ns}/gameserverallocations
 *   Authorization: Bearer <service-account token, re-read from its file on
 *   every call: the kubelet rotates projected tokens>
 *
 * In a pod nothing needs configuring, as with client-go's in-cluster
 * config: the URL is https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT
 * and the token, CA and namespace are the files of the mounted service
 * account (--k8s-serviceaccount-dir, default
 * /var/run/secrets/kubernetes.io/serviceaccount). Explicit --k8s-url,
 * --k8s-token-file and --k8s-ca-file win; "" means none (plain HTTP tests).
 * An unreadable token or CA file refuses start-up naming the path: it could
 * never work, and retrying it forever would strand every match.
 *
 * The body (../shared/agones/README.md) has two selectors, tried in order:
 *   1. an Allocated GameServer labelled with this allocation's id: the one
 *      an earlier attempt got when its answer was lost (a timeout, a crash
 *      before the endpoint was persisted), so a retry or a takeover finds
 *      the same server instead of leaking it;
 *   2. a Ready one of the fleet, region and build (matchLabels
 *      agones.dev/fleet, cosmic-clash.io/region, cosmic-clash.io/build).
 * and metadata: labels cosmic-clash.io/allocation-id and /match-id, and
 * the annotations cosmic-clash.io/match-id, /allocation-id,
 * /workload-token, /playlist, /region, /build, /protocol, /arena. Agones
 * copies them onto the GameServer, where cc-supervisor's Agones mode reads
 * match-id, allocation-id, workload-token, playlist, arena and protocol
 * (services/supervisor/agones_sdk.h names them; supervisor_agones.sh runs
 * both sides): renaming one here breaks that pod.
 *
 * The answer's flat status decides (each outcome is work.c's):
 *   201/200 Allocated     gameServerName, address, ports, nodeName are
 *                         checked and persisted: game_servers row
 *                         (ALLOCATED) + allocation ALLOCATED, one transaction
 *   201/200 UnAllocated   no capacity (backoff grows)
 *   201/200 Contention    retry soon
 *   409                   contention: retry soon
 *   429                   no capacity (the allocator's "no available GameServer")
 *   5xx, timeout, reset   retry with backoff
 *   401, 403, other 4xx   rejected: logged as an error, long backoff
 * A malformed 2xx body is a retry with a message naming what was wrong.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <sodium.h>

#include "allocator.h"
#include "sys/file.h"
#include "sys/http_client.h"
#include "sys/json.h"
#include "sys/log.h"
#include "game/workload_token.h"
#include "store/game_servers.h"
#include "sys/banned.h"

#define TOKEN_FILE_MAX (64 * 1024)
#define RESPONSE_MAX (256 * 1024)
#define CA_FILE_MAX (1024 * 1024)

struct agones_client {
	struct allocator *a;
	char url[2048];	       /* the full POST URL */
	char token_file[4096]; /* "" = send no token */
	char ca_file[4096];    /* "" = the system's CAs */
};

static int read_token(const char *path, char **out, struct cc_file_error *fe);

/* Words a cc_file_read() failure for a start-up message. */
static const char *file_failure(const struct cc_file_error *fe)
{
	switch (fe->failure) {
	case CC_FILE_OPEN:
	case CC_FILE_STAT:
	case CC_FILE_READ:
		return strerror(fe->errnum);
	case CC_FILE_NOT_REGULAR:
		return "not a regular file";
	case CC_FILE_TOO_BIG:
		return "too big";
	case CC_FILE_NO_MEMORY:
		return "out of memory";
	default:
		return "unreadable";
	}
}

/*
 * Fills c->token_file and c->ca_file: the flag when given ("" = none), else
 * the service account's file. Returns false with err naming the flag.
 */
static bool resolve_file(const char *flag, const char *given, const char *sa_dir, const char *name, char *out,
			 size_t outlen, char *err, size_t errlen)
{
	int w = given ? snprintf(out, outlen, "%s", given) : snprintf(out, outlen, "%s/%s", sa_dir, name);
	if (w < 0 || (size_t)w >= outlen) {
		snprintf(err, errlen, "%s: path too long", flag);
		return false;
	}
	return true;
}

/* The API's base URL: --k8s-url, else the in-cluster service's, else kubernetes.default.svc. */
static bool resolve_url(const char *given, char *out, size_t outlen, char *err, size_t errlen)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");
	int w;
	if (given)
		w = snprintf(out, outlen, "%s", given);
	else if (host && *host && port && *port)
		/* An IPv6 service address needs brackets in a URL (client-go's net.JoinHostPort). */
		w = snprintf(out, outlen, strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host, port);
	else
		w = snprintf(out, outlen, "https://kubernetes.default.svc");
	if (w < 0 || (size_t)w >= outlen) {
		snprintf(err, errlen, "%s: too long", given ? "--k8s-url" : "KUBERNETES_SERVICE_HOST/PORT");
		return false;
	}
	return true;
}

struct agones_client *agones_client_create(struct allocator *a, char *err, size_t errlen)
{
	const struct allocator_config *cfg = a->cfg;
	char ns[254] = "default", ns_file[4096], base[2048];
	const char *sa_dir = cfg->k8s_serviceaccount_dir ? cfg->k8s_serviceaccount_dir : "";
	if (!resolve_file("--k8s-serviceaccount-dir", NULL, sa_dir, "namespace", ns_file, sizeof ns_file, err, errlen) ||
	    !resolve_url(cfg->k8s_url, base, sizeof base, err, errlen))
		return NULL;
	if (cfg->k8s_namespace && cfg->k8s_namespace[0]) {
		snprintf(ns, sizeof ns, "%s", cfg->k8s_namespace);
	} else {
		char *text = NULL;
		size_t len = 0;
		struct cc_file_error fe;
		if (cc_file_read(ns_file, 253, CC_FILE_REGULAR_ONLY, &text, &len, &fe) == 0) {
			while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r'))
				text[--len] = '\0';
			if (len > 0)
				snprintf(ns, sizeof ns, "%s", text);
			free(text);
		}
	}
	/* A DNS-1123 label: nothing in it needs escaping in a path. */
	for (const char *c = ns; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-')) {
			snprintf(err, errlen, "namespace: not a Kubernetes namespace name");
			return NULL;
		}
	struct agones_client *c = calloc(1, sizeof *c);
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	c->a = a;
	size_t ulen = strlen(base);
	while (ulen > 0 && base[ulen - 1] == '/')
		ulen--;
	int w = snprintf(c->url, sizeof c->url, "%.*s/apis/allocation.agones.dev/v1/namespaces/%s/gameserverallocations",
			 (int)ulen, base, ns);
	if (w < 0 || (size_t)w >= sizeof c->url) {
		snprintf(err, errlen, "--k8s-url: too long");
		goto fail;
	}
	if (!resolve_file("--k8s-token-file", cfg->k8s_token_file, sa_dir, "token", c->token_file, sizeof c->token_file,
			  err, errlen) ||
	    !resolve_file("--k8s-ca-file", cfg->k8s_ca_file, sa_dir, "ca.crt", c->ca_file, sizeof c->ca_file, err, errlen))
		goto fail;
	/* Both are read once now: a missing file is a configuration error, not a reason to retry forever. */
	char *token = NULL, *ca = NULL;
	size_t ca_len = 0;
	struct cc_file_error fe;
	int rc = read_token(c->token_file, &token, &fe);
	if (rc != 0) {
		snprintf(err, errlen, "--k8s-token-file: %.3000s: %s", c->token_file,
			 fe.failure != CC_FILE_OK ? file_failure(&fe) : "not a token (printable ASCII only)");
		goto fail;
	}
	if (token) {
		sodium_memzero(token, strlen(token));
		free(token);
	}
	if (c->ca_file[0]) {
		if (cc_file_read(c->ca_file, CA_FILE_MAX, CC_FILE_REGULAR_ONLY, &ca, &ca_len, &fe) != 0) {
			snprintf(err, errlen, "--k8s-ca-file: %.3000s: %s", c->ca_file, file_failure(&fe));
			goto fail;
		}
		free(ca);
	}
	char where[512];
	(void)cc_http_url_redact(c->url, where, sizeof where);
	cc_log_info("agones_provider", CC_LOG_STR("namespace", ns), CC_LOG_STR("fleet", cfg->agones_fleet),
		    CC_LOG_STR("url", where), CC_LOG_STR("token_file", c->token_file[0] ? c->token_file : "(none)"),
		    CC_LOG_STR("ca_file", c->ca_file[0] ? c->ca_file : "(system)"));
	return c;
fail:
	free(c);
	return NULL;
}

void agones_client_free(struct agones_client *c)
{
	free(c);
}

/* Adds "key": value to obj; false on out-of-memory. */
static bool add_str(cJSON *obj, const char *key, const char *value)
{
	return cJSON_AddStringToObject(obj, key, value) != NULL;
}

/* The GameServerAllocation body for al, malloc'd (the caller wipes and frees: it holds the workload token). */
static char *request_body(const struct allocator *a, const struct cc_allocation *al, const char *token)
{
	char protocol[16];
	char *text = NULL;
	snprintf(protocol, sizeof protocol, "%d", (int)al->protocol_version);
	cJSON *root = cJSON_CreateObject();
	cJSON *spec = cJSON_AddObjectToObject(root, "spec");
	cJSON *selectors = cJSON_AddArrayToObject(spec, "selectors");
	cJSON *mine = cJSON_CreateObject();
	cJSON *ready = cJSON_CreateObject();
	cJSON_AddItemToArray(selectors, mine);
	cJSON_AddItemToArray(selectors, ready);
	cJSON *mine_labels = cJSON_AddObjectToObject(mine, "matchLabels");
	cJSON *ready_labels = cJSON_AddObjectToObject(ready, "matchLabels");
	cJSON *meta = cJSON_AddObjectToObject(spec, "metadata");
	cJSON *labels = cJSON_AddObjectToObject(meta, "labels");
	cJSON *ann = cJSON_AddObjectToObject(meta, "annotations");
	bool ok = root && spec && selectors && mine && ready && mine_labels && ready_labels && meta && labels && ann &&
		  add_str(root, "apiVersion", "allocation.agones.dev/v1") && add_str(root, "kind", "GameServerAllocation") &&
		  add_str(mine_labels, "cosmic-clash.io/allocation-id", al->id) &&
		  add_str(mine, "gameServerState", "Allocated") &&
		  add_str(ready_labels, "agones.dev/fleet", a->cfg->agones_fleet) &&
		  add_str(ready_labels, "cosmic-clash.io/region", al->region) &&
		  add_str(ready_labels, "cosmic-clash.io/build", al->build) &&
		  add_str(ready, "gameServerState", "Ready") &&
		  add_str(labels, "cosmic-clash.io/allocation-id", al->id) &&
		  add_str(labels, "cosmic-clash.io/match-id", al->match_id) &&
		  add_str(ann, "cosmic-clash.io/match-id", al->match_id) &&
		  add_str(ann, "cosmic-clash.io/allocation-id", al->id) &&
		  add_str(ann, "cosmic-clash.io/workload-token", token) &&
		  add_str(ann, "cosmic-clash.io/playlist", al->playlist) &&
		  add_str(ann, "cosmic-clash.io/region", al->region) && add_str(ann, "cosmic-clash.io/build", al->build) &&
		  add_str(ann, "cosmic-clash.io/protocol", protocol) && add_str(ann, "cosmic-clash.io/arena", al->arena);
	if (ok)
		text = cJSON_PrintUnformatted(root);
	/* The tree holds the token too. */
	cJSON *t = cJSON_GetObjectItemCaseSensitive(ann, "cosmic-clash.io/workload-token");
	if (t && cJSON_IsString(t))
		sodium_memzero(t->valuestring, strlen(t->valuestring));
	cJSON_Delete(root);
	return text;
}

/* The endpoint an Allocated answer names. */
struct answer {
	char state[32];
	char name[CC_GAME_SERVER_ID_BUF];
	char address[CC_GAME_SERVER_ADDR_BUF];
	char node[CC_GAME_SERVER_ADDR_BUF];
	int port;
};

/*
 * Reads the flat status of a 2xx body into *ans. Returns 0, or CC_EINVAL
 * with why naming the problem (an Allocated answer must name a valid
 * server, an address and a port).
 */
static int parse_answer(const char *body, size_t len, struct answer *ans, char *why, size_t whylen)
{
	cJSON *root = NULL;
	const cJSON *status = NULL, *ports = NULL;
	const char *s = NULL;
	struct cc_json_error je = { { 0 }, { 0 } };
	int rc = cc_json_parse_object(body, len, RESPONSE_MAX, 16, &root, &je);
	if (rc != 0) {
		snprintf(why, whylen, "answer: %s", je.message);
		return CC_EINVAL;
	}
	memset(ans, 0, sizeof *ans);
	rc = cc_json_get_object(root, "status", true, &status, &je);
	if (rc == 0)
		rc = cc_json_get_string(status, "state", true, 1, sizeof ans->state - 1, &s, &je);
	if (rc != 0)
		goto out;
	snprintf(ans->state, sizeof ans->state, "%s", s);
	if (strcmp(ans->state, "Allocated") != 0)
		goto out;
	if ((rc = cc_json_get_string(status, "gameServerName", true, 1, CC_GAME_SERVER_ID_BUF - 1, &s, &je)) != 0)
		goto out;
	snprintf(ans->name, sizeof ans->name, "%s", s);
	if (!cc_game_server_id_valid(ans->name)) {
		snprintf(je.message, sizeof je.message, "gameServerName is not a valid server id");
		rc = CC_EINVAL;
		goto out;
	}
	if ((rc = cc_json_get_string(status, "address", true, 1, CC_GAME_SERVER_ADDR_BUF - 1, &s, &je)) != 0)
		goto out;
	snprintf(ans->address, sizeof ans->address, "%s", s);
	rc = cc_json_get_string(status, "nodeName", false, 0, CC_GAME_SERVER_ADDR_BUF - 1, &s, &je);
	if (rc == 0)
		snprintf(ans->node, sizeof ans->node, "%s", s);
	else if (rc != CC_ENOTFOUND)
		goto out;
	if ((rc = cc_json_get_array(status, "ports", true, 64, &ports, &je)) != 0)
		goto out;
	/* The port named "default" (Agones' default port name), else the first. */
	const cJSON *p;
	cJSON_ArrayForEach(p, ports)
	{
		int64_t port = 0;
		const char *name = NULL;
		if ((rc = cc_json_get_int(p, "port", true, 1, 65535, &port, &je)) != 0)
			goto out;
		rc = cc_json_get_string(p, "name", false, 0, 63, &name, &je);
		if (rc != 0 && rc != CC_ENOTFOUND)
			goto out;
		rc = 0;
		if (ans->port == 0 || (name && strcmp(name, "default") == 0))
			ans->port = (int)port;
	}
	if (ans->port == 0) {
		snprintf(je.message, sizeof je.message, "an Allocated answer without ports");
		rc = CC_EINVAL;
	}
out:
	if (rc != 0)
		snprintf(why, whylen, "answer: status: %s", je.message[0] ? je.message : "malformed");
	cJSON_Delete(root);
	return rc;
}

struct record_tx {
	struct allocator_worker *w;
	const struct cc_allocation *al;
	const struct answer *ans;
	struct cc_allocation out;
	bool server_taken; /* the row serves another allocation */
};

static int record_tx(struct cc_pg *pg, void *arg)
{
	struct record_tx *t = arg;
	struct cc_game_server s;
	t->server_taken = false;
	int rc = cc_game_server_record_agones(pg, t->ans->name, t->al->region, t->ans->address, t->ans->port,
					      t->al->id, &s);
	if (rc == CC_ECONFLICT)
		t->server_taken = true;
	if (rc == 0)
		rc = cc_allocation_set_allocated(pg, t->al->id, t->w->replica, &s, t->ans->node, &t->out);
	return rc;
}

/* Reads the service-account token (NULL when none is configured), malloc'd. */
static int read_token(const char *path, char **out, struct cc_file_error *fe)
{
	char *text = NULL;
	size_t len = 0;
	*out = NULL;
	fe->failure = CC_FILE_OK;
	if (!path[0])
		return 0;
	int rc = cc_file_read(path, TOKEN_FILE_MAX, CC_FILE_SECRET, &text, &len, fe);
	if (rc != 0)
		return rc;
	while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r'))
		text[--len] = '\0';
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)text[i] < 0x21 || (unsigned char)text[i] > 0x7e) {
			sodium_memzero(text, len);
			free(text);
			return CC_EINVAL;
		}
	*out = text;
	return 0;
}

enum alloc_outcome agones_allocate(struct allocator_worker *w, struct cc_allocation *al, char *why, size_t whylen)
{
	struct allocator *a = w->a;
	char wl[CC_WORKLOAD_TOKEN_BUF];
	char *token = NULL, *auth = NULL, *body = NULL;
	char transport[256] = "";
	struct cc_http_client_response resp = { 0 };
	bool have_resp = false;
	enum alloc_outcome o = ALLOC_RETRY;

	if (allocator_workload_token(a, al, wl, sizeof wl) != 0) {
		snprintf(why, whylen, "cannot sign the workload token");
		return ALLOC_REJECTED;
	}
	body = request_body(a, al, wl);
	sodium_memzero(wl, sizeof wl);
	struct cc_file_error fe;
	int rc = read_token(a->agones->token_file, &token, &fe);
	if (!body || rc != 0) {
		snprintf(why, whylen, "%s", !body ? "out of memory" : "--k8s-token-file: unreadable or not a token");
		goto out;
	}
	if (token) {
		size_t n = strlen(token) + 32;
		auth = malloc(n);
		if (!auth)
			goto out;
		snprintf(auth, n, "Authorization: Bearer %s", token);
	}
	const char *headers[] = { "Content-Type: application/json", "Accept: application/json", auth, NULL };
	struct cc_http_client_request req = {
		.method = "POST",
		.url = w->a->agones->url,
		.headers = headers,
		.body = body,
		.body_len = strlen(body),
		.timeout_ms = a->cfg->k8s_timeout_ms,
		.max_response_bytes = RESPONSE_MAX,
		.ca_file = a->agones->ca_file[0] ? a->agones->ca_file : NULL,
		.error = transport,
		.error_len = sizeof transport,
	};
	rc = cc_http_client_do(&req, &resp);
	if (rc != 0) {
		/* libcurl's words say which: a refused certificate, a reset, a timeout. */
		snprintf(why, whylen, "kubernetes api: %s: %s", cc_errname(rc), transport[0] ? transport : "no detail");
		o = ALLOC_RETRY;
		goto out;
	}
	have_resp = true;
	if (resp.status == 409) {
		snprintf(why, whylen, "kubernetes api: 409 conflict");
		o = ALLOC_CONTENTION;
	} else if (resp.status == 429) {
		snprintf(why, whylen, "kubernetes api: 429, no GameServer available");
		o = ALLOC_NO_CAPACITY;
	} else if (resp.status >= 500) {
		snprintf(why, whylen, "kubernetes api: %ld", resp.status);
		o = ALLOC_RETRY;
	} else if (resp.status != 200 && resp.status != 201) {
		snprintf(why, whylen, "kubernetes api refused the allocation: %ld", resp.status);
		o = ALLOC_REJECTED;
	} else {
		struct answer ans;
		if (parse_answer(resp.body, resp.body_len, &ans, why, whylen) != 0) {
			o = ALLOC_RETRY;
		} else if (strcmp(ans.state, "UnAllocated") == 0) {
			snprintf(why, whylen, "UnAllocated");
			o = ALLOC_NO_CAPACITY;
		} else if (strcmp(ans.state, "Contention") == 0) {
			snprintf(why, whylen, "Contention");
			o = ALLOC_CONTENTION;
		} else if (strcmp(ans.state, "Allocated") != 0) {
			snprintf(why, whylen, "answer: status: unknown state");
			o = ALLOC_RETRY;
		} else {
			struct record_tx t = { .w = w, .al = al, .ans = &ans };
			rc = cc_pg_run_locked(w->pg, record_tx, &t);
			if (rc == 0) {
				*al = t.out;
				o = ALLOC_OK;
			} else if (rc == CC_ECONFLICT && !t.server_taken) {
				o = ALLOC_LOST;
			} else {
				snprintf(why, whylen, "%s: %s", t.server_taken ? "GameServer already serves another allocation"
									: "recording the GameServer",
					 cc_errname(rc));
				o = ALLOC_RETRY;
			}
		}
	}
out:
	if (have_resp)
		cc_http_client_response_release(&resp);
	if (body) {
		sodium_memzero(body, strlen(body));
		free(body);
	}
	if (token) {
		sodium_memzero(token, strlen(token));
		free(token);
	}
	if (auth) {
		sodium_memzero(auth, strlen(auth));
		free(auth);
	}
	return o;
}
