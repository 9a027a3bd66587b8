#include "tiers.h"

#include "banned.h"

static const struct cc_tier_band default_bands[] = {
	{ "BRONZE", 0 },      { "SILVER", 1200 },  { "GOLD", 1500 },
	{ "PLATINUM", 1800 }, { "DIAMOND", 2100 }, { "CHAMPION", 2400 },
};

const struct cc_tier_band *cc_tier_default_bands(size_t *n)
{
	*n = CC_ARRAY_LEN(default_bands);
	return default_bands;
}

const char *cc_tier_for(const struct cc_tier_band *bands, size_t n, double rating, long ranked_games)
{
	if (ranked_games < CC_TIER_PROVISIONAL_GAMES)
		return "PROVISIONAL";
	const char *name = bands[0].name;
	for (size_t i = 0; i < n && rating >= bands[i].min_rating; i++)
		name = bands[i].name;
	return name;
}
