/*
 * metrics.c - the process-wide metric registry and its text rendering.
 *
 * Locking: reg_lock guards the metric list (declare, render, reset); each
 * metric has its own lock guarding its series. The order is always reg_lock
 * then a metric's lock. An update takes only the metric's lock and releases
 * it before counting a drop in the dropped-series counter, so two metric
 * locks are never held at once.
 */
#include "sys/metrics.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys/log.h"
#include "sys/banned.h"

#define MAX_METRICS 256		      /* metrics one process may declare */
#define MAX_NAME_LEN 128	      /* bytes of a metric or label name */
#define MAX_HELP_LEN 512	      /* bytes of a help text */
#define MAX_LABEL_VALUE_LEN 256	      /* longer label values are dropped */
#define MAX_SERIES_LIMIT 10000	      /* largest max_series a metric may ask for */
#define MAX_RENDER_BYTES (16u << 20) /* a scrape bigger than this is refused */

#define DROPPED_NAME "cosmic_clash_metrics_series_dropped_total"

struct series {
	char *values[CC_METRICS_MAX_LABELS];	/* owned copies, n_labels of them */
	double value;				/* counter or gauge value; histogram sum */
	uint64_t count;				/* histogram: observations */
	uint64_t buckets[CC_METRICS_MAX_BUCKETS]; /* histogram: per-bucket (not cumulative) counts */
};

struct cc_metric {
	enum cc_metric_type type;
	char *name;				/* owned */
	char *help;				/* owned */
	size_t n_labels;			/* label names in use */
	char *label_names[CC_METRICS_MAX_LABELS]; /* owned */
	size_t max_series;			/* cap on distinct label sets */
	size_t n_buckets;			/* finite upper bounds (histograms) */
	double bounds[CC_METRICS_MAX_BUCKETS];	/* ascending */
	pthread_mutex_t lock;			/* guards the series below */
	struct series *series;			/* n_series used of cap_series */
	size_t n_series, cap_series;
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cc_metric *registry[MAX_METRICS]; /* in declaration order */
static size_t n_registry;
static struct cc_metric *dropped; /* the registry's own counter; atomic access */

/* True when c may appear in a metric name after the first character. */
static bool name_char(char c, bool first, bool colon_ok)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_')
		return true;
	if (c == ':' && colon_ok)
		return true;
	return !first && c >= '0' && c <= '9';
}

/* Validates a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*, our prefix). */
static bool valid_metric_name(const char *name)
{
	size_t len = name ? strlen(name) : 0;
	if (len == 0 || len > MAX_NAME_LEN || strncmp(name, "cosmic_clash_", 13) != 0)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!name_char(name[i], i == 0, true))
			return false;
	return true;
}

/* Validates a label name ([a-zA-Z_][a-zA-Z0-9_]*, not reserved "__..."). */
static bool valid_label_name(const char *name, enum cc_metric_type type)
{
	size_t len = name ? strlen(name) : 0;
	if (len == 0 || len > MAX_NAME_LEN || strncmp(name, "__", 2) == 0)
		return false;
	if (type == CC_METRIC_HISTOGRAM && strcmp(name, "le") == 0)
		return false; /* the bucket label */
	for (size_t i = 0; i < len; i++)
		if (!name_char(name[i], i == 0, false))
			return false;
	return true;
}

static void free_series(struct cc_metric *m, struct series *s)
{
	for (size_t i = 0; i < m->n_labels; i++)
		free(s->values[i]);
}

static void metric_free(struct cc_metric *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n_series; i++)
		free_series(m, &m->series[i]);
	free(m->series);
	for (size_t i = 0; i < m->n_labels; i++)
		free(m->label_names[i]);
	free(m->name);
	free(m->help);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

/*
 * Checks everything about a declaration except the registry state. Returns
 * NULL when acceptable, else a static reason for the log.
 */
static const char *declaration_problem(enum cc_metric_type type, const char *name, const char *help,
				       const char *const *label_names, size_t max_series,
				       const double *buckets, size_t n_buckets)
{
	size_t n_labels = 0;

	if (type != CC_METRIC_COUNTER && type != CC_METRIC_GAUGE && type != CC_METRIC_HISTOGRAM)
		return "unknown metric type";
	if (!valid_metric_name(name))
		return "name must match [a-zA-Z_:][a-zA-Z0-9_:]* and start with cosmic_clash_";
	if (!help || !*help || strlen(help) > MAX_HELP_LEN)
		return "help text missing or too long";
	for (; label_names && label_names[n_labels]; n_labels++) {
		if (n_labels == CC_METRICS_MAX_LABELS)
			return "too many labels";
		if (!valid_label_name(label_names[n_labels], type))
			return "invalid label name";
		for (size_t j = 0; j < n_labels; j++)
			if (strcmp(label_names[j], label_names[n_labels]) == 0)
				return "duplicate label name";
	}
	if (n_labels > 0 && (max_series == 0 || max_series > MAX_SERIES_LIMIT))
		return "max_series must be 1..10000 for a labelled metric";
	if (type != CC_METRIC_HISTOGRAM)
		return n_buckets == 0 ? NULL : "buckets given for a non-histogram";
	if (n_buckets > CC_METRICS_MAX_BUCKETS || (n_buckets > 0 && !buckets))
		return "too many buckets";
	for (size_t i = 0; i < n_buckets; i++)
		if (!isfinite(buckets[i]) || (i > 0 && !(buckets[i] > buckets[i - 1])))
			return "buckets must be finite and strictly ascending";
	return NULL;
}

/* True when an existing metric has exactly this shape. */
static bool same_shape(const struct cc_metric *m, enum cc_metric_type type,
		       const char *const *label_names, const double *buckets, size_t n_buckets)
{
	size_t n = 0;

	if (m->type != type || m->n_buckets != n_buckets)
		return false;
	for (; label_names && label_names[n]; n++)
		if (n >= m->n_labels || strcmp(m->label_names[n], label_names[n]) != 0)
			return false;
	if (n != m->n_labels)
		return false;
	for (size_t i = 0; i < n_buckets; i++)
		if (m->bounds[i] != buckets[i])
			return false;
	return true;
}

/* Allocates a metric; a label-less one gets its single series at once. */
static struct cc_metric *metric_new(enum cc_metric_type type, const char *name, const char *help,
				    const char *const *label_names, size_t max_series,
				    const double *buckets, size_t n_buckets)
{
	struct cc_metric *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	pthread_mutex_init(&m->lock, NULL);
	m->type = type;
	m->name = strdup(name);
	m->help = strdup(help);
	if (!m->name || !m->help)
		goto out_free;
	for (; label_names && label_names[m->n_labels]; m->n_labels++) {
		m->label_names[m->n_labels] = strdup(label_names[m->n_labels]);
		if (!m->label_names[m->n_labels])
			goto out_free;
	}
	m->max_series = m->n_labels ? max_series : 1;
	m->n_buckets = n_buckets;
	for (size_t i = 0; i < n_buckets; i++)
		m->bounds[i] = buckets[i];
	if (m->n_labels == 0) {
		m->series = calloc(1, sizeof(*m->series));
		if (!m->series)
			goto out_free;
		m->n_series = m->cap_series = 1;
	}
	return m;

out_free:
	metric_free(m);
	return NULL;
}

/* Declares the registry's own counter. Caller holds reg_lock. */
static void ensure_dropped_locked(void)
{
	static const char *const labels[] = { "metric", NULL };
	struct cc_metric *m;

	if (dropped)
		return;
	m = metric_new(CC_METRIC_COUNTER, DROPPED_NAME,
		       "Metric updates lost because their label set was over the series cap or invalid.",
		       labels, MAX_METRICS, NULL, 0);
	if (!m)
		return; /* retried on the next declare or render */
	registry[n_registry++] = m;
	__atomic_store_n(&dropped, m, __ATOMIC_RELEASE);
}

struct cc_metric *cc_metric_declare(enum cc_metric_type type, const char *name, const char *help,
				    const char *const *label_names, size_t max_series,
				    const double *buckets, size_t n_buckets)
{
	struct cc_metric *m = NULL;
	const char *problem;

	problem = declaration_problem(type, name, help, label_names, max_series, buckets, n_buckets);
	if (problem)
		goto out_log;
	pthread_mutex_lock(&reg_lock);
	ensure_dropped_locked();
	for (size_t i = 0; i < n_registry; i++) {
		if (strcmp(registry[i]->name, name) != 0)
			continue;
		if (same_shape(registry[i], type, label_names, buckets, n_buckets))
			m = registry[i];
		else
			problem = "redeclared with a different type, labels or buckets";
		goto out_unlock;
	}
	if (n_registry == MAX_METRICS) {
		problem = "too many metrics in the registry";
		goto out_unlock;
	}
	m = metric_new(type, name, help, label_names, max_series, buckets, n_buckets);
	if (m)
		registry[n_registry++] = m;
	else
		problem = "out of memory";
out_unlock:
	pthread_mutex_unlock(&reg_lock);
out_log:
	if (problem)
		cc_log_error("metric_declare_refused", CC_LOG_STR("metric", name),
			     CC_LOG_STR("reason", problem));
	return m;
}

struct cc_metric *cc_counter(const char *name, const char *help, const char *const *label_names,
			     size_t max_series)
{
	return cc_metric_declare(CC_METRIC_COUNTER, name, help, label_names, max_series, NULL, 0);
}

struct cc_metric *cc_gauge(const char *name, const char *help, const char *const *label_names,
			   size_t max_series)
{
	return cc_metric_declare(CC_METRIC_GAUGE, name, help, label_names, max_series, NULL, 0);
}

struct cc_metric *cc_histogram(const char *name, const char *help, const char *const *label_names,
			       size_t max_series, const double *buckets, size_t n_buckets)
{
	return cc_metric_declare(CC_METRIC_HISTOGRAM, name, help, label_names, max_series, buckets,
				 n_buckets);
}

/*
 * Finds or creates the series for label_values. Caller holds m->lock.
 * Returns NULL when the values are unusable (missing, too long) or the
 * metric is at its series cap or out of memory: the caller counts a drop.
 */
static struct series *series_get_locked(struct cc_metric *m, const char *const *label_values)
{
	struct series *s;

	if (m->n_labels == 0)
		return &m->series[0];
	if (!label_values)
		return NULL;
	for (size_t i = 0; i < m->n_labels; i++)
		if (!label_values[i] || strlen(label_values[i]) > MAX_LABEL_VALUE_LEN)
			return NULL;
	for (size_t i = 0; i < m->n_series; i++) {
		size_t j = 0;
		while (j < m->n_labels && strcmp(m->series[i].values[j], label_values[j]) == 0)
			j++;
		if (j == m->n_labels)
			return &m->series[i];
	}
	if (m->n_series == m->max_series)
		return NULL;
	if (m->n_series == m->cap_series) {
		size_t cap = m->cap_series ? m->cap_series * 2 : 4;
		if (cap > m->max_series)
			cap = m->max_series;
		s = realloc(m->series, cap * sizeof(*s));
		if (!s)
			return NULL;
		m->series = s;
		m->cap_series = cap;
	}
	s = &m->series[m->n_series];
	memset(s, 0, sizeof(*s));
	for (size_t i = 0; i < m->n_labels; i++) {
		s->values[i] = strdup(label_values[i]);
		if (!s->values[i]) {
			free_series(m, s);
			return NULL;
		}
	}
	m->n_series++;
	return s;
}

enum op { OP_ADD, OP_SET, OP_OBSERVE };

/* Applies one update; counts a drop when the label set cannot be stored. */
static void update(struct cc_metric *m, const char *const *label_values, enum op op, double v)
{
	struct cc_metric *d;
	struct series *s;

	if (!m || isnan(v))
		return;
	/* Wrong operation for the type, or a counter going down: ignored. */
	if ((op == OP_OBSERVE) != (m->type == CC_METRIC_HISTOGRAM))
		return;
	if (m->type == CC_METRIC_COUNTER && (op == OP_SET || v < 0))
		return;
	pthread_mutex_lock(&m->lock);
	s = series_get_locked(m, label_values);
	if (s && op == OP_ADD)
		s->value += v;
	else if (s && op == OP_SET)
		s->value = v;
	else if (s) {
		size_t b = 0;
		while (b < m->n_buckets && v > m->bounds[b])
			b++;
		if (b < m->n_buckets)
			s->buckets[b]++;
		s->count++;
		s->value += v;
	}
	pthread_mutex_unlock(&m->lock);
	if (s)
		return;
	d = __atomic_load_n(&dropped, __ATOMIC_ACQUIRE);
	if (d && d != m)
		update(d, (const char *const[]){ m->name }, OP_ADD, 1.0);
}

void cc_metric_add(struct cc_metric *m, const char *const *label_values, double delta)
{
	update(m, label_values, OP_ADD, delta);
}

void cc_metric_set(struct cc_metric *m, const char *const *label_values, double value)
{
	update(m, label_values, OP_SET, value);
}

void cc_metric_observe(struct cc_metric *m, const char *const *label_values, double value)
{
	update(m, label_values, OP_OBSERVE, value);
}

/* ---- rendering ------------------------------------------------------------ */

/* An append-only text buffer with a hard cap; failed sticks. */
struct textbuf {
	char *s;
	size_t len, cap;
	bool failed;
};

static void tb_append(struct textbuf *tb, const char *text, size_t n)
{
	if (tb->failed)
		return;
	if (tb->len + n + 1 > tb->cap) {
		size_t cap = tb->cap ? tb->cap : 4096;
		char *s;
		while (cap < tb->len + n + 1)
			cap *= 2;
		if (cap > MAX_RENDER_BYTES) {
			tb->failed = true;
			return;
		}
		s = realloc(tb->s, cap);
		if (!s) {
			tb->failed = true;
			return;
		}
		tb->s = s;
		tb->cap = cap;
	}
	memcpy(tb->s + tb->len, text, n);
	tb->len += n;
	tb->s[tb->len] = '\0';
}

static void tb_puts(struct textbuf *tb, const char *text)
{
	tb_append(tb, text, strlen(text));
}

/*
 * Appends text escaped for the exposition format: backslash and newline
 * always, the double quote too inside label values.
 */
static void tb_escaped(struct textbuf *tb, const char *text, bool quote)
{
	for (const char *p = text; *p; p++) {
		if (*p == '\\')
			tb_puts(tb, "\\\\");
		else if (*p == '\n')
			tb_puts(tb, "\\n");
		else if (*p == '"' && quote)
			tb_puts(tb, "\\\"");
		else
			tb_append(tb, p, 1);
	}
}

/*
 * Formats v as the shortest text that reads back as the same double
 * ("0.1", not "0.10000000000000001"), or +Inf/-Inf/NaN.
 */
static void format_double(char *buf, size_t len, double v)
{
	if (isnan(v)) {
		snprintf(buf, len, "NaN");
		return;
	}
	if (isinf(v)) {
		snprintf(buf, len, "%s", v > 0 ? "+Inf" : "-Inf");
		return;
	}
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(buf, len, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return;
	}
}

/* Appends name{l1="v1",...[,le="x"]} value\n */
static void render_sample(struct textbuf *tb, const struct cc_metric *m, const struct series *s,
			  const char *suffix, const char *le, double value)
{
	char num[64];
	bool any = m->n_labels > 0 || le;

	tb_puts(tb, m->name);
	tb_puts(tb, suffix);
	if (any)
		tb_puts(tb, "{");
	for (size_t i = 0; i < m->n_labels; i++) {
		if (i > 0)
			tb_puts(tb, ",");
		tb_puts(tb, m->label_names[i]);
		tb_puts(tb, "=\"");
		tb_escaped(tb, s->values[i], true);
		tb_puts(tb, "\"");
	}
	if (le) {
		tb_puts(tb, m->n_labels ? ",le=\"" : "le=\"");
		tb_puts(tb, le);
		tb_puts(tb, "\"");
	}
	if (any)
		tb_puts(tb, "}");
	format_double(num, sizeof(num), value);
	tb_puts(tb, " ");
	tb_puts(tb, num);
	tb_puts(tb, "\n");
}

static void render_metric(struct textbuf *tb, struct cc_metric *m)
{
	static const char *const type_names[] = { "counter", "gauge", "histogram" };
	char le[64];

	tb_puts(tb, "# HELP ");
	tb_puts(tb, m->name);
	tb_puts(tb, " ");
	tb_escaped(tb, m->help, false);
	tb_puts(tb, "\n# TYPE ");
	tb_puts(tb, m->name);
	tb_puts(tb, " ");
	tb_puts(tb, type_names[m->type]);
	tb_puts(tb, "\n");
	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; i < m->n_series; i++) {
		const struct series *s = &m->series[i];
		uint64_t cumulative = 0;

		if (m->type != CC_METRIC_HISTOGRAM) {
			render_sample(tb, m, s, "", NULL, s->value);
			continue;
		}
		for (size_t b = 0; b < m->n_buckets; b++) {
			cumulative += s->buckets[b];
			format_double(le, sizeof(le), m->bounds[b]);
			render_sample(tb, m, s, "_bucket", le, (double)cumulative);
		}
		render_sample(tb, m, s, "_bucket", "+Inf", (double)s->count);
		render_sample(tb, m, s, "_sum", NULL, s->value);
		render_sample(tb, m, s, "_count", NULL, (double)s->count);
	}
	pthread_mutex_unlock(&m->lock);
}

char *cc_metrics_render(void)
{
	struct textbuf tb = { 0 };

	pthread_mutex_lock(&reg_lock);
	ensure_dropped_locked();
	tb_puts(&tb, ""); /* an empty registry still renders "" */
	for (size_t i = 0; i < n_registry; i++)
		render_metric(&tb, registry[i]);
	pthread_mutex_unlock(&reg_lock);
	if (tb.failed) {
		free(tb.s);
		return NULL;
	}
	return tb.s;
}

void cc_metrics_reset(void)
{
	pthread_mutex_lock(&reg_lock);
	for (size_t i = 0; i < n_registry; i++) {
		metric_free(registry[i]);
		registry[i] = NULL;
	}
	n_registry = 0;
	__atomic_store_n(&dropped, NULL, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&reg_lock);
}
