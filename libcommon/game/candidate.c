#include "game/candidate.h"

#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sys/json.h"
#include "sys/banned.h"

int cc_candidate_parse_rtt(struct cc_candidate *c, const char *json)
{
	cJSON *obj = NULL;
	struct cc_json_error err;
	c->n_rtt = 0;
	if (cc_json_parse_object(json, strlen(json), 64 * 1024, 4, &obj, &err) != 0)
		return CC_EINVAL;
	const cJSON *it;
	cJSON_ArrayForEach(it, obj)
	{
		if (c->n_rtt == CC_CANDIDATE_MAX_REGIONS)
			break;
		if (!cJSON_IsNumber(it) || !it->string || strlen(it->string) > CC_CANDIDATE_REGION_MAX ||
		    it->valuedouble < 0)
			continue;
		struct cc_candidate_rtt *r = &c->rtt[c->n_rtt++];
		snprintf(r->region, sizeof r->region, "%s", it->string);
		r->rtt_ms = it->valuedouble;
	}
	cJSON_Delete(obj);
	return 0;
}

double cc_candidate_rtt_to(const struct cc_candidate *c, const char *region)
{
	for (size_t i = 0; i < c->n_rtt; i++)
		if (strcmp(c->rtt[i].region, region) == 0)
			return c->rtt[i].rtt_ms;
	return -1;
}
