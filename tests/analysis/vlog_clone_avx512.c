/* vlog_clone_avx512.c — analysis/vlog.c as the AVX-512 clone (tests/analysis/vlog_clone.h). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define VLOG_NAME agt_vlog_avx512
#define VLOG_TARGET __attribute__((target("avx512f")))
#include "vlog_clone.h"
#else
typedef int agt_vlog_avx512_none; /* ISO C: no empty translation unit */
#endif
