/* vlog_clone_fma.c — analysis/vlog.c as no clone of it is: AVX2 with its
 * multiply-adds fused (which -std=c11 keeps the library from doing), the
 * deliberately different code that test_vlog.c's comparison must tell apart
 * (tests/analysis/vlog_clone.h). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define VLOG_NAME agt_vlog_fma
#define VLOG_TARGET __attribute__((target("avx2,fma"), optimize("fp-contract=fast")))
#include "vlog_clone.h"
#else
typedef int agt_vlog_fma_none; /* ISO C: no empty translation unit */
#endif
