/*
 * wait_estimate.c - the estimated wait rule. See wait_estimate.h.
 */
#include "game/wait_estimate.h"

#include <math.h>
#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int cc_wait_estimate(bool queued, double rating, double waited_s, const struct cc_wait_sample *samples, size_t n,
		     struct cc_wait_estimate *out)
{
	if (!out || (!samples && n > 0))
		return CC_EINVAL;
	if (!queued) {
		*out = (struct cc_wait_estimate){ .method = CC_WAIT_NOT_QUEUED };
		return 0;
	}
	if (!isfinite(rating) || !isfinite(waited_s))
		return CC_EINVAL;
	if (waited_s < 0)
		waited_s = 0;
	if (n > CC_WAIT_SAMPLES_MAX)
		n = CC_WAIT_SAMPLES_MAX;

	double rest[CC_WAIT_USE_MAX];
	size_t in_band = 0, longer = 0;
	for (size_t i = 0; i < n; i++) {
		const struct cc_wait_sample *s = &samples[i];
		/* fabs of a NaN rating is NaN, and NaN <= band is false: ignored. */
		if (!(fabs(s->rating - rating) <= CC_WAIT_RATING_BAND) || !(s->wait_s >= 0) ||
		    !(s->wait_s <= CC_WAIT_SAMPLE_MAX_SECONDS))
			continue;
		in_band++;
		if (s->wait_s > waited_s && longer < CC_WAIT_USE_MAX)
			rest[longer++] = s->wait_s - waited_s;
	}
	*out = (struct cc_wait_estimate){ .in_band = in_band };
	if (in_band < CC_WAIT_MIN_SAMPLES) {
		out->method = CC_WAIT_NO_HISTORY;
		return 0;
	}
	if (longer < CC_WAIT_MIN_SAMPLES) {
		out->method = CC_WAIT_BEYOND_HISTORY;
		return 0;
	}
	qsort(rest, longer, sizeof rest[0], cmp_double);
	double median = longer % 2 ? rest[longer / 2] : (rest[longer / 2 - 1] + rest[longer / 2]) / 2;
	out->method = CC_WAIT_RECENT_MATCHES;
	out->seconds = round(median);
	return 0;
}

const char *cc_wait_method_name(enum cc_wait_method m)
{
	switch (m) {
	case CC_WAIT_RECENT_MATCHES:
		return "recent_matches";
	case CC_WAIT_NO_HISTORY:
		return "no_history";
	case CC_WAIT_BEYOND_HISTORY:
		return "beyond_history";
	case CC_WAIT_NOT_QUEUED:
		return "not_queued";
	case CC_WAIT_UNAVAILABLE:
		return "unavailable";
	}
	return NULL;
}
