/* progress.c — how far a corpus run is (docs/cli.md, "Corpus runs"): texts
 * done of total, rate and time left, on stderr. On a terminal one line is
 * redrawn in place (at most ten times a second); elsewhere (a log file, a
 * pipe) whole lines are printed — after the first text, then at most one
 * every PROGRESS_LOG_SECONDS, then the last — so a log holds a few lines, not
 * one per text or carriage-return noise. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

#define PROGRESS_TTY_SECONDS 0.1
#define PROGRESS_LOG_SECONDS 10.0

/* The run whose line is on the terminal now (one per process), so that a
 * message printed meanwhile starts on a clean line. */
static cli_progress *drawn;

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void cli_progress_start(cli_progress *p, const char *cmd, int mode, size_t total)
{
    memset(p, 0, sizeof *p);
    p->cmd = cmd;
    p->total = total;
    p->tty = isatty(STDERR_FILENO);
    /* --progress: always; --no-progress: never; by default on a terminal,
     * for more than one text */
    p->on = mode > 0 || (mode == 0 && p->tty && total > 1);
    p->start = p->last = now_seconds();
}

/* "42s", "3m05s", "2h07m". */
static void duration_text(double s, char *buf, size_t size)
{
    long t = s < 0 ? 0 : (long)(s + 0.5);
    if (t < 60)
        snprintf(buf, size, "%lds", t);
    else if (t < 3600)
        snprintf(buf, size, "%ldm%02lds", t / 60, t % 60);
    else
        snprintf(buf, size, "%ldh%02ldm", t / 3600, t % 3600 / 60);
}

static void print_line(cli_progress *p, double t, int last)
{
    double elapsed = t - p->start, rate = elapsed > 0 ? (double)p->done / elapsed : 0;
    char when[32], skipped[48] = "";
    if (p->skipped)
        snprintf(skipped, sizeof skipped, ", %zu skipped", p->skipped);
    if (last)
        duration_text(elapsed, when, sizeof when);
    else if (rate > 0)
        duration_text((double)(p->total - p->done) / rate, when, sizeof when);
    else
        snprintf(when, sizeof when, "?");
    fprintf(stderr, "%sattngeom %s: %zu/%zu texts%s, %.*f texts/s, %s%s%s%s",
            p->tty ? "\r\033[K" : "", p->cmd, p->done, p->total, skipped,
            rate >= 100 ? 0 : rate >= 10 ? 1 : 2, rate,
            last ? "done in " : "", when, last ? "" : " left", p->tty && !last ? "" : "\n");
    fflush(stderr);
    drawn = p->tty && !last ? p : NULL;
    p->last = t;
}

void cli_progress_step(cli_progress *p, int skipped)
{
    p->done++;
    p->skipped += skipped != 0;
    if (!p->on || p->done == p->total)
        return;
    double t = now_seconds();
    if (p->done == 1 || t - p->last >= (p->tty ? PROGRESS_TTY_SECONDS : PROGRESS_LOG_SECONDS))
        print_line(p, t, 0);
}

void cli_progress_end(cli_progress *p)
{
    if (p->on && p->done == p->total)
        print_line(p, now_seconds(), 1);
    else
        cli_progress_erase();
}

void cli_progress_erase(void)
{
    if (!drawn)
        return;
    fputs("\r\033[K", stderr);
    drawn->last = drawn->start - PROGRESS_TTY_SECONDS; /* drawn again at the next text */
    drawn = NULL;
}
