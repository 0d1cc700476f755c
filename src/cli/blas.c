/* blas.c — the CLI decides how many threads OpenBLAS runs, and makes sure an
 * address-space limit (ulimit -v) ends in "out of memory" instead of a hang.
 *
 * Why: Debian's OpenBLAS 0.3.21 (pthreads) starts its thread pool in its
 * library constructor, one worker per allowed core (or OPENBLAS_NUM_THREADS),
 * and each worker maps a 128 MiB work buffer as it starts; the main thread
 * maps one on its first level-2/3 call. blas_memory_alloc retries a failed
 * mapping forever, so under a limit a worker spins from load time on (and
 * exit() waits for it in OpenBLAS's destructor), or the main thread spins
 * inside LAPACK. The library leaves this global state alone
 * (attngeom/core.h); the CLI takes it over in three steps:
 *  1. before any library constructor runs (.preinit_array of the executable)
 *     the process is pinned to one of its CPUs, so OpenBLAS, which sizes its
 *     pool from sched_getaffinity, starts no worker; setenv cannot do this,
 *     libc resets the environment after the preinit functions;
 *  2. main restores the CPU mask and sets the thread count: AG_BLAS_THREADS,
 *     default 1 (results then do not depend on the machine's core count);
 *     OpenBLAS starts the workers it then needs;
 *  3. under a finite RLIMIT_AS the CLI keeps one thread and, before a command
 *     that runs BLAS, checks that the buffer fits and makes OpenBLAS map it at
 *     once; OpenBLAS reuses it for every later call, so later shortages are
 *     plain malloc failures, reported as "out of memory". */
#include <cblas.h>
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "cli.h"

/* OpenBLAS's BUFFER_SIZE on x86-64 (32 << 22): one per thread. */
#define OPENBLAS_BUFFER_BYTES ((size_t)128 << 20)
#define BLAS_THREADS_MAX 1024

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

/* AG_BLAS_THREADS, or 1. Returns 0, or EXIT_USAGE after printing. */
static int requested_threads(int *threads)
{
    *threads = 1;
    const char *v = getenv("AG_BLAS_THREADS");
    if (!v || !*v)
        return 0;
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno || *end || n < 1 || n > BLAS_THREADS_MAX) {
        fprintf(stderr, "attngeom: AG_BLAS_THREADS must be an integer from 1 to %d, got '%s'\n",
                BLAS_THREADS_MAX, v);
        return EXIT_USAGE;
    }
    *threads = (int)n;
    return 0;
}

static int address_space_limited(void)
{
    struct rlimit rl;
    return getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY;
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
    int threads, rc = requested_threads(&threads);
    if (rc)
        return rc;
    if (address_space_limited()) {
        /* A worker that cannot map its buffer never returns; stay on one. */
        threads = 1;
        if (runs_blas && (rc = map_blas_buffer()) != 0)
            return rc;
    }
    openblas_set_num_threads(threads);
    return 0;
}
