/*
 * latency.c - exact percentiles from every sample (see latency.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "latency.h"
#include "sys/banned.h"

#define FIRST_CAP 4096

void pc_latency_init(struct pc_latency *l, size_t max)
{
	memset(l, 0, sizeof *l);
	l->max = (max == 0 || max > PC_LATENCY_MAX_SAMPLES) ? PC_LATENCY_MAX_SAMPLES : max;
	l->sorted = 1;
}

/* Makes room for one more sample, doubling up to the cap. */
static int grow(struct pc_latency *l)
{
	if (l->n < l->cap)
		return 0;
	if (l->n >= l->max)
		return CC_ETOOBIG;
	size_t cap = l->cap ? l->cap * 2 : FIRST_CAP;
	if (cap > l->max)
		cap = l->max;
	uint64_t *ns = realloc(l->ns, cap * sizeof *ns);
	if (!ns)
		return CC_ENOMEM;
	l->ns = ns;
	l->cap = cap;
	return 0;
}

int pc_latency_add(struct pc_latency *l, uint64_t ns)
{
	int rc = grow(l);
	if (rc != 0) {
		l->dropped++;
		return rc;
	}
	if (l->n > 0 && ns < l->ns[l->n - 1])
		l->sorted = 0;
	l->ns[l->n++] = ns;
	return 0;
}

int pc_latency_merge(struct pc_latency *dst, const struct pc_latency *src)
{
	int rc = 0;
	for (size_t i = 0; i < src->n; i++) {
		int r = pc_latency_add(dst, src->ns[i]);
		if (r != 0 && rc == 0)
			rc = r;
	}
	dst->dropped += src->dropped;
	return rc;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

double pc_latency_percentile_ms(struct pc_latency *l, double p)
{
	if (l->n == 0 || !(p > 0.0 && p <= 100.0))
		return 0.0;
	if (!l->sorted) {
		qsort(l->ns, l->n, sizeof *l->ns, cmp_u64);
		l->sorted = 1;
	}
	/* Nearest rank: ceil(p/100 * n), 1-based; the epsilon keeps 50% of 10
	 * at rank 5 despite binary rounding. */
	double exact = p / 100.0 * (double)l->n;
	size_t rank = (size_t)ceil(exact - 1e-9);
	if (rank < 1)
		rank = 1;
	if (rank > l->n)
		rank = l->n;
	return (double)l->ns[rank - 1] / 1e6;
}

double pc_latency_mean_ms(const struct pc_latency *l)
{
	if (l->n == 0)
		return 0.0;
	long double sum = 0;
	for (size_t i = 0; i < l->n; i++)
		sum += l->ns[i];
	return (double)(sum / l->n / 1e6L);
}

void pc_latency_release(struct pc_latency *l)
{
	if (!l)
		return;
	free(l->ns);
	memset(l, 0, sizeof *l);
	l->sorted = 1;
}
