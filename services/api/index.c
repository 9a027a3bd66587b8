/*
 * index.c - cc-api's side of the Redis candidate index (api.h: "candidate
 * index"): notes taken inside transactions, applied after the commit
 * (cc_candidate_index_apply_moves, shared with cc-maintenance), and errors
 * counted and logged without ever failing a request.
 */
#include "api.h"
#include "sys/log.h"
#include "sys/banned.h"

int api_index_open(struct api *api)
{
	static const char *const labels[] = { "op", NULL };
	const struct api_config *cfg = api->cfg;

	api->index_errors = cc_counter("cosmic_clash_api_candidate_index_errors_total",
				       "Candidate index refreshes that failed (Redis down or slow); requests still succeed",
				       labels, 8);
	if (!cfg->svc.redis_host || !*cfg->svc.redis_host) {
		cc_log_info("candidate_index_disabled", CC_LOG_STR("reason", "no --redis-host"));
		return 0;
	}
	api->index = cc_candidate_index_create(cfg->svc.redis_host, (int)cfg->svc.redis_port, (int)cfg->svc.redis_timeout_ms,
					       API_INDEX_POOL_SIZE);
	if (!api->index)
		return CC_EINVAL;
	cc_log_info("candidate_index_enabled", CC_LOG_STR("host", cfg->svc.redis_host),
		    CC_LOG_INT("port", cfg->svc.redis_port));
	return 0;
}

void api_index_apply(struct api *api, const struct cc_ticket_moves *moves)
{
	(void)cc_candidate_index_apply_moves(api->index, moves, api->index_errors);
}
