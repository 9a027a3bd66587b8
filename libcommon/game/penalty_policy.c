#include "game/penalty_policy.h"

#include "sys/banned.h"

const char *cc_penalty_kind_name(enum cc_penalty_kind kind)
{
	switch (kind) {
	case CC_PENALTY_DECLINE:
		return "DECLINE";
	case CC_PENALTY_PROPOSAL_TIMEOUT:
		return "PROPOSAL_TIMEOUT";
	case CC_PENALTY_INITIAL_CONNECT_NO_SHOW:
		return "INITIAL_CONNECT_NO_SHOW";
	case CC_PENALTY_EARLY_LEAVE:
		return "EARLY_LEAVE";
	}
	return "INVALID";
}

int cc_penalty_base_seconds(enum cc_penalty_kind kind)
{
	switch (kind) {
	case CC_PENALTY_DECLINE:
		return 60;
	case CC_PENALTY_PROPOSAL_TIMEOUT:
		return 120;
	case CC_PENALTY_INITIAL_CONNECT_NO_SHOW:
		return 300;
	case CC_PENALTY_EARLY_LEAVE:
		return 600;
	}
	return 60;
}

int64_t cc_penalty_cooldown_seconds(enum cc_penalty_kind kind, int64_t prior_offences)
{
	int64_t factor = 1;
	/* Doubling stops at the cap, so a huge count cannot overflow. */
	for (int64_t k = 0; k < prior_offences && factor < CC_PENALTY_FACTOR_CAP; k++)
		factor *= 2;
	if (factor > CC_PENALTY_FACTOR_CAP)
		factor = CC_PENALTY_FACTOR_CAP;
	int64_t seconds = (int64_t)cc_penalty_base_seconds(kind) * factor;
	return seconds < CC_PENALTY_COOLDOWN_CAP_SECONDS ? seconds : CC_PENALTY_COOLDOWN_CAP_SECONDS;
}

void cc_penalty_schedule(enum cc_penalty_kind kind, int64_t schedule[CC_PENALTY_ESCALATION_STEPS])
{
	for (int k = 0; k < CC_PENALTY_ESCALATION_STEPS; k++)
		schedule[k] = cc_penalty_cooldown_seconds(kind, k);
}
