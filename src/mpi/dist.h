/* Internal prefix: dist_ (module src/mpi/). */
/* dist.h — attngeom-mpi's pieces (docs/scaling.md): the CLI's commands run
 * on every rank, their work spread by cli_dist_hook, results sent to rank 0
 * as bytes (pack.c) and written there exactly as one process writes them. */
#ifndef AG_MPI_DIST_H
#define AG_MPI_DIST_H

#include <stddef.h>
#include <stdint.h>

#include "../cli/cli.h"

/* ---- bytes (pack.c) ------------------------------------------------------ */

/* A growable buffer; oom set once a growth failed (later puts do nothing). */
typedef struct {
    unsigned char *data;
    size_t len, cap;
    int oom;
} dist_buf;

/* Bytes read back in the order they were put; bad set on a short read. */
typedef struct {
    const unsigned char *p;
    size_t left;
    int bad;
} dist_reader;

void dist_buf_free(dist_buf *b);

/* One text's result (cli_text_out) of text k: rc, held messages, records
 * (every value's bits as stored) and the command's data. */
void dist_pack_text(dist_buf *b, size_t k, const cli_text_out *o);
/* The same read into a zeroed *o; the text's index in *k. 0, or -1 on
 * malformed bytes or out of memory (o cleared). */
int dist_unpack_text(dist_reader *rd, size_t *k, cli_text_out *o);

/* Task k's error and its per_task records (t->recs[k * per_task ...]). */
void dist_pack_task(dist_buf *b, const cli_dist_tasks *t, size_t k);
/* Read one into t (the task's index from the bytes, < t->count). 0 or -1. */
int dist_unpack_task(dist_reader *rd, const cli_dist_tasks *t);

/* ---- the run (dist.c) ---------------------------------------------------- */

/* After MPI_Init: this rank and the count, the hook set; ranks other than 0
 * write nothing on standard output and hold every message (rank 0 prints
 * the one that matters). */
void dist_start(void);
int dist_rank(void);
/* With --text-file - or --tokens-file -: rank 0 reads standard input to its
 * end and every rank gets the bytes as its standard input (a memory file),
 * so every rank tokenizes the same corpus. 0, or 1 on every rank after
 * rank 0 printed the error. */
int dist_share_stdin(int argc, char **argv);
/* The command's status rc on this rank -> the job's status (rank 0's, or 1
 * when another rank failed before the work was spread), the same on every
 * rank. Collective. */
int dist_end(int rc);

/* Which rank runs each of count items of cost cost[i]: longest first
 * (ties: lower index), each to the least loaded rank (ties: lower rank);
 * cost 0 is an item not run (owner -1). owner[count]. Deterministic: every
 * rank computes the same. 0, or -1 out of memory. */
int dist_assign(const uint64_t *cost, size_t count, int ranks, int *owner);

#endif
