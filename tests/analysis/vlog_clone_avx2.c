/* vlog_clone_avx2.c — analysis/vlog.c as the AVX2 clone (tests/analysis/vlog_clone.h). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define VLOG_NAME agt_vlog_avx2
#define VLOG_TARGET __attribute__((target("avx2")))
#include "vlog_clone.h"
#else
typedef int agt_vlog_avx2_none; /* ISO C: no empty translation unit */
#endif
