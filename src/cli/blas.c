/* blas.c — the CLI keeps OpenBLAS on one thread in every call, and makes sure
 * an address-space limit (ulimit -v) ends in "out of memory" instead of a hang.
 *
 * One thread, always: the CLI parallelises itself (-j, over heads, layers,
 * matrices and texts), so each BLAS/LAPACK call runs inside one task and must
 * be sequential there: a call split over OpenBLAS threads sums in an order
 * that depends on their count, and results would change with
 * OPENBLAS_NUM_THREADS or the machine (docs/cli.md, "Threads").
 *
 * Why the care: Debian's OpenBLAS 0.3.21 (pthreads) starts its thread pool in
 * its library constructor, one worker per allowed core (or
 * OPENBLAS_NUM_THREADS), and each worker maps a 128 MiB work buffer as it
 * starts; a thread that calls BLAS maps one on its first level-2/3 call when
 * every buffer mapped so far is in use. blas_memory_alloc retries a failed
 * mapping forever, so under a limit a worker spins from load time on (and
 * exit() waits for it in OpenBLAS's destructor), or a caller spins inside
 * LAPACK. The library leaves this global state alone (attngeom/core.h); the
 * CLI takes it over in three steps:
 *  1. before any library constructor runs (.preinit_array of the executable)
 *     the process is pinned to one of its CPUs, so OpenBLAS, which sizes its
 *     pool from sched_getaffinity, starts no worker; setenv cannot do this,
 *     libc resets the environment after the preinit functions;
 *  2. main restores the CPU mask and sets OpenBLAS's thread count to 1, so
 *     it never starts a worker, whatever OPENBLAS_NUM_THREADS says;
 *  3. under a finite RLIMIT_AS the CLI runs one thread of its own too
 *     (cli_blas_callers_max: each thread calling BLAS at once needs its own
 *     buffer) and, before a command that runs BLAS, checks that the buffer
 *     fits and makes OpenBLAS map it at once; OpenBLAS reuses it for every
 *     later call, so later shortages are plain malloc failures, reported as
 *     "out of memory". */
#include <cblas.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "cli.h"

/* OpenBLAS's BUFFER_SIZE on x86-64 (32 << 22): one per thread in a call. */
#define OPENBLAS_BUFFER_BYTES ((size_t)128 << 20)

static cpu_set_t saved_cpus;
static int cpus_pinned;

static void pin_to_one_cpu(int argc, char **argv, char **envp)
{
    (void)argc, (void)argv, (void)envp;
    if (sched_getaffinity(0, sizeof saved_cpus, &saved_cpus) != 0)
        return; /* more CPUs than a cpu_set_t holds: leave the pool alone */
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &saved_cpus)) {
            cpu_set_t one;
            CPU_ZERO(&one);
            CPU_SET(c, &one);
            cpus_pinned = sched_setaffinity(0, sizeof one, &one) == 0;
            return;
        }
}

/* Runs before the constructors of the shared libraries (libopenblas's
 * gotoblas_init starts the pool there). */
__attribute__((section(".preinit_array"), used))
static void (*const pin_to_one_cpu_entry)(int, char **, char **) = pin_to_one_cpu;

static void unpin(void)
{
    if (cpus_pinned)
        sched_setaffinity(0, sizeof saved_cpus, &saved_cpus);
    cpus_pinned = 0;
}

static int address_space_limited(void)
{
    struct rlimit rl;
    return getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY;
}

int cli_blas_callers_max(void)
{
    return address_space_limited() ? 1 : INT_MAX;
}

/* Check that OpenBLAS's buffer fits under the limit, then have OpenBLAS map
 * it now: a dgemv this long takes its work space from the buffer (a short
 * one uses the stack). The probe counts against RLIMIT_AS like the real
 * mapping; nothing else maps memory between the two (one thread). */
static int map_blas_buffer(void)
{
    void *probe = mmap(NULL, OPENBLAS_BUFFER_BYTES, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (probe == MAP_FAILED)
        return cli_fail("out of memory: the address-space limit (ulimit -v) leaves less than "
                        "the %zu MiB OpenBLAS needs for its work buffer",
                        OPENBLAS_BUFFER_BYTES >> 20);
    munmap(probe, OPENBLAS_BUFFER_BYTES);
    enum { N = 1024 };
    static double a[N], x[N];
    double y = 0;
    cblas_dgemv(CblasRowMajor, CblasNoTrans, 1, N, 1.0, a, N, x, 1, 0.0, &y, 1);
    return 0;
}

int cli_blas_setup(int runs_blas)
{
    unpin();
    openblas_set_num_threads(1);
    if (runs_blas && address_space_limited())
        return map_blas_buffer();
    return 0;
}
