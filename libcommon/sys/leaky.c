/*
 * leaky.c - see leaky.h.
 */
#include "sys/leaky.h"

#include "sys/banned.h"

void cc_leaky_init(struct cc_leaky *b, double rate, double capacity, int64_t now_ns)
{
	b->level = 0;
	b->rate = rate > 0 ? rate : 0;
	b->per_ns = b->rate / 1e9;
	b->capacity = capacity > 0 ? capacity : 0;
	b->last_ns = now_ns;
}

static void drain(struct cc_leaky *b, int64_t now_ns)
{
	if (now_ns <= b->last_ns)
		return;
	b->level -= b->per_ns * (double)(now_ns - b->last_ns);
	if (b->level < 0)
		b->level = 0;
	b->last_ns = now_ns;
}

bool cc_leaky_take(struct cc_leaky *b, double amount, int64_t now_ns)
{
	drain(b, now_ns);
	if (b->level + amount > b->capacity)
		return false;
	b->level += amount;
	return true;
}

void cc_leaky_untake(struct cc_leaky *b, double amount)
{
	b->level = b->level > amount ? b->level - amount : 0;
}

double cc_leaky_level(struct cc_leaky *b, int64_t now_ns)
{
	drain(b, now_ns);
	return b->level;
}

void cc_leaky_reset(struct cc_leaky *b, int64_t now_ns)
{
	b->level = 0;
	b->last_ns = now_ns;
}
