/* STUB: replaced by the cc-migrate implementation. */
#include <stdio.h>
int main(void) { fprintf(stderr, "cc-migrate: not built yet\n"); return 1; }
