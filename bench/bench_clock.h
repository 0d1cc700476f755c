/* bench_clock.h — the benchmarks' clock (bench/NAME.c, each its own
 * program: header-only). */
#ifndef AG_BENCH_CLOCK_H
#define AG_BENCH_CLOCK_H

#include <time.h>

/* Seconds of the clock: CLOCK_MONOTONIC (wall), CLOCK_PROCESS_CPUTIME_ID
 * (this process's CPU time: on a shared machine, what the work costs) or
 * CLOCK_THREAD_CPUTIME_ID (this thread's). */
static inline double bench_now(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#endif
