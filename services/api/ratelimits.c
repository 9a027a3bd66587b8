/*
 * ratelimits.c - cc-api's rate limits (SPEC 2, issue 13): token buckets per
 * client address and per player on login, probe challenges, enqueue and
 * proposal responses, shared by the replicas through Redis (sys/ratelimit).
 *
 * Each limited route checks its address bucket first thing, before any
 * parsing or database work, and its player bucket as soon as it knows the
 * player (after the session check; for login, after Steam named the
 * account). A refusal is 429 rate_limited with Retry-After, counted in
 * cosmic_clash_api_rate_limited_total{action,scope}. Limits are requests a
 * minute with a burst of the same size; 0 turns one off.
 */
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "sys/log.h"
#include "sys/metrics.h"
#include "sys/ratelimit.h"
#include "sys/banned.h"

static const char *const action_names[] = {
	[API_RL_LOGIN] = "login",
	[API_RL_PROBE] = "probe_challenge",
	[API_RL_ENQUEUE] = "enqueue",
	[API_RL_RESPONSE] = "proposal_response",
};

int api_ratelimits_open(struct api *api)
{
	static const char *const labels[] = { "action", "scope", "backend", NULL };
	const struct api_config *cfg = api->cfg;
	struct cc_ratelimit_options o = {
		.redis_host = cfg->svc.redis_host,
		.redis_port = (int)cfg->svc.redis_port,
		.redis_timeout_ms = (int)cfg->svc.redis_timeout_ms,
		.key_prefix = "cc:rl:",
	};
	api->limiter = cc_ratelimiter_create(&o);
	if (!api->limiter)
		return CC_EINVAL;
	api->rate_limited = cc_counter("cosmic_clash_api_rate_limited_total",
				       "Requests refused 429 rate_limited, by action, bucket scope "
				       "(address, player) and the backend that decided (redis, local).",
				       labels, 32);
	cc_log_info("rate_limits", CC_LOG_STR("shared_through", cfg->svc.redis_host && *cfg->svc.redis_host
								    ? "redis" : "nothing (per process)"),
		    CC_LOG_INT("login_player", cfg->rate_per_player[API_RL_LOGIN]),
		    CC_LOG_INT("login_address", cfg->rate_per_address[API_RL_LOGIN]),
		    CC_LOG_INT("probe_player", cfg->rate_per_player[API_RL_PROBE]),
		    CC_LOG_INT("probe_address", cfg->rate_per_address[API_RL_PROBE]),
		    CC_LOG_INT("enqueue_player", cfg->rate_per_player[API_RL_ENQUEUE]),
		    CC_LOG_INT("enqueue_address", cfg->rate_per_address[API_RL_ENQUEUE]),
		    CC_LOG_INT("response_player", cfg->rate_per_player[API_RL_RESPONSE]),
		    CC_LOG_INT("response_address", cfg->rate_per_address[API_RL_RESPONSE]));
	return 0;
}

/* Takes a token from "<action>:<scope>:<who>"; answers 429 and returns false when refused. */
static bool take(struct api *api, enum api_rate_action a, const char *scope, const char *who, int64_t per_minute,
		 struct cc_http_response *resp)
{
	char key[CC_RATELIMIT_KEY_MAX + 1], msg[160];
	struct cc_ratelimit_verdict v;

	if (per_minute <= 0 || !api->limiter)
		return true;
	snprintf(key, sizeof key, "%s:%s:%s", action_names[a], scope, who);
	/* A key we cannot build or a limiter error lets the request through: limits never cost service. */
	if (cc_ratelimit_take(api->limiter, key, (unsigned)per_minute, (unsigned)per_minute, &v) != 0 || v.allowed)
		return true;
	cc_metric_add(api->rate_limited, (const char *const[]){ action_names[a], scope, v.shared ? "redis" : "local" }, 1);
	snprintf(msg, sizeof msg, "too many %s requests from this %s; retry in %u s", action_names[a],
		 scope, v.retry_after_seconds);
	cc_http_error_too_many(resp, "rate_limited", msg, v.retry_after_seconds);
	return false;
}

bool api_rate_address(struct api *api, enum api_rate_action a, const struct cc_http_request *req,
		      struct cc_http_response *resp)
{
	return take(api, a, "address", req->remote, api->cfg->rate_per_address[a], resp);
}

bool api_rate_player(struct api *api, enum api_rate_action a, const char *player, struct cc_http_response *resp)
{
	return take(api, a, "player", player, api->cfg->rate_per_player[a], resp);
}
