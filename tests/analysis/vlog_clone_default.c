/* vlog_clone_default.c — analysis/vlog.c as its default clone: the baseline
 * x86-64 the library is compiled for (tests/analysis/vlog_clone.h). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define VLOG_NAME agt_vlog_default
#define VLOG_TARGET
#include "vlog_clone.h"
#else
typedef int agt_vlog_default_none; /* ISO C: no empty translation unit */
#endif
