#include "game/enqueue_policy.h"

#include "sys/banned.h"

struct cc_enqueue_decision cc_enqueue_decide(const struct cc_enqueue_facts *f)
{
	struct cc_enqueue_decision d = { .verdict = CC_ENQUEUE_OK };
	if (f->protocol_version < f->min_protocol_version)
		d.verdict = CC_ENQUEUE_CLIENT_OUTDATED;
	else if (f->banned)
		d.verdict = CC_ENQUEUE_BANNED;
	else if (f->cooldown_remaining_seconds > 0)
		d = (struct cc_enqueue_decision){ CC_ENQUEUE_COOLDOWN, f->cooldown_remaining_seconds };
	else if (f->fresh_regions < 1)
		d.verdict = CC_ENQUEUE_NO_REGION_PROBED;
	return d;
}

bool cc_enqueue_verdict_before_replay(enum cc_enqueue_verdict verdict)
{
	return verdict == CC_ENQUEUE_CLIENT_OUTDATED || verdict == CC_ENQUEUE_BANNED;
}

const char *cc_enqueue_verdict_name(enum cc_enqueue_verdict verdict)
{
	switch (verdict) {
	case CC_ENQUEUE_OK:
		return "ok";
	case CC_ENQUEUE_CLIENT_OUTDATED:
		return "client_outdated";
	case CC_ENQUEUE_BANNED:
		return "banned";
	case CC_ENQUEUE_COOLDOWN:
		return "cooldown";
	case CC_ENQUEUE_NO_REGION_PROBED:
		return "no_region_probed";
	}
	return "invalid";
}
