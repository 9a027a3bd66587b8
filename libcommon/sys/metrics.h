/*
 * metrics.h - counters, gauges and histograms in Prometheus text format.
 *
 * A process has one registry. A metric is declared once (usually from a
 * static initialiser at start-up) with a name that must start with
 * "cosmic_clash_", a help text, up to CC_METRICS_MAX_LABELS label names and a
 * cap on how many distinct label-value sets (series) it may hold. Updates are
 * thread-safe. A label set beyond the cap is not created: the update is
 * counted in cosmic_clash_metrics_series_dropped_total instead, so a hostile
 * input can never grow memory without bound.
 *
 * The registry owns every metric; handles stay valid until
 * cc_metrics_reset() (tests only) or process exit.
 *
 * Details the contract leaves to the implementation:
 *  - cosmic_clash_metrics_series_dropped_total{metric="<name>"} counts, per
 *    metric, updates that were lost: label set over the cap, a NULL label
 *    value array or value, or a value longer than 256 bytes.
 *  - Updates that make no sense are ignored silently (no log: they sit on
 *    hot paths): a negative or NaN delta on a counter, set() on a counter,
 *    observe() on a counter or gauge, add()/set() on a histogram, NaN
 *    anywhere.
 *  - Counter names should end in "_total" and carry a unit suffix where
 *    one applies ("_seconds"), as `promtool check metrics` lints.
 *  - Output order is declaration order, then series creation order. A
 *    metric without labels always renders its one sample (0 at first); a
 *    labelled one renders only the label sets it has seen.
 */
#ifndef CC_METRICS_H
#define CC_METRICS_H

#include <stddef.h>

#include "sys/cc.h"

#define CC_METRICS_MAX_LABELS 4
#define CC_METRICS_MAX_BUCKETS 20

enum cc_metric_type { CC_METRIC_COUNTER, CC_METRIC_GAUGE, CC_METRIC_HISTOGRAM };

struct cc_metric;

/*
 * Declares (or returns the already declared) metric. label_names is a
 * NULL-terminated list (NULL itself means no labels). For histograms,
 * buckets holds n_buckets ascending upper bounds (+Inf is implicit).
 * Returns NULL only on a programming error (bad name, mismatched
 * redeclaration, too many labels or buckets), which is also logged.
 */
struct cc_metric *cc_metric_declare(enum cc_metric_type type, const char *name, const char *help,
				    const char *const *label_names, size_t max_series,
				    const double *buckets, size_t n_buckets);

/* Convenience wrappers over cc_metric_declare. */
struct cc_metric *cc_counter(const char *name, const char *help, const char *const *label_names,
			     size_t max_series);
struct cc_metric *cc_gauge(const char *name, const char *help, const char *const *label_names,
			   size_t max_series);
struct cc_metric *cc_histogram(const char *name, const char *help, const char *const *label_names,
			       size_t max_series, const double *buckets, size_t n_buckets);

/*
 * Updates. label_values has as many entries as the metric has label names
 * (NULL when it has none). A NULL metric is a harmless no-op. Label values are
 * escaped on output; they should still come from a small fixed set.
 */
void cc_metric_add(struct cc_metric *m, const char *const *label_values, double delta);
void cc_metric_set(struct cc_metric *m, const char *const *label_values, double value);
void cc_metric_observe(struct cc_metric *m, const char *const *label_values, double value);

/* Shorthands for metrics without labels. */
#define cc_metric_inc(m) cc_metric_add((m), NULL, 1.0)

/*
 * Renders every metric in Prometheus text exposition format 0.0.4.
 * Returns a malloc'd NUL-terminated string the caller frees, or NULL on OOM.
 */
char *cc_metrics_render(void);

/* Drops every metric (tests only; invalidates all handles). */
void cc_metrics_reset(void);

#endif
