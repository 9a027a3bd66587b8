/* STUB: replaced by the config module implementation. */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int cc_config_parse(const struct cc_config_spec *spec, int argc, char *const argv[], void *out, struct cc_config_result *res)
{ (void)spec; (void)argc; (void)argv; (void)out; memset(res, 0, sizeof *res); return CC_ENOTIMPL; }
int cc_config_load_or_exit(const struct cc_config_spec *spec, int argc, char *const argv[], void *out, char *const **positional)
{ (void)spec; (void)argc; (void)out; *positional = argv + 1; return argc - 1; }
char *cc_config_help(const struct cc_config_spec *spec) { (void)spec; return strdup(""); }
void cc_config_log(const struct cc_config_spec *spec, const void *cfg) { (void)spec; (void)cfg; }
void cc_config_release(const struct cc_config_spec *spec, void *cfg) { (void)spec; (void)cfg; }
