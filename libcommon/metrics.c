/* STUB: replaced by the metrics module implementation. */
#include "metrics.h"
#include <stdlib.h>
#include <string.h>
struct cc_metric *cc_metric_declare(enum cc_metric_type type, const char *name, const char *help,
				    const char *const *label_names, size_t max_series,
				    const double *buckets, size_t n_buckets)
{ (void)type; (void)name; (void)help; (void)label_names; (void)max_series; (void)buckets; (void)n_buckets; return NULL; }
struct cc_metric *cc_counter(const char *name, const char *help, const char *const *l, size_t m) { return cc_metric_declare(CC_METRIC_COUNTER, name, help, l, m, NULL, 0); }
struct cc_metric *cc_gauge(const char *name, const char *help, const char *const *l, size_t m) { return cc_metric_declare(CC_METRIC_GAUGE, name, help, l, m, NULL, 0); }
struct cc_metric *cc_histogram(const char *name, const char *help, const char *const *l, size_t m, const double *b, size_t n) { return cc_metric_declare(CC_METRIC_HISTOGRAM, name, help, l, m, b, n); }
void cc_metric_add(struct cc_metric *m, const char *const *lv, double d) { (void)m; (void)lv; (void)d; }
void cc_metric_set(struct cc_metric *m, const char *const *lv, double d) { (void)m; (void)lv; (void)d; }
void cc_metric_observe(struct cc_metric *m, const char *const *lv, double d) { (void)m; (void)lv; (void)d; }
char *cc_metrics_render(void) { return strdup(""); }
void cc_metrics_reset(void) {}
