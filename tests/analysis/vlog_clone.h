/* vlog_clone.h — analysis/vlog.c compiled once more, as one of its
 * target_clones alone, under another name: each tests/analysis/vlog_clone_*.c
 * defines VLOG_NAME (the name ag_log_positive takes) and VLOG_TARGET (the
 * attributes log_pos takes in place of AG_CLONES_AVX512), then includes this.
 * vlog.c itself is not changed: ag_log_positive is renamed before
 * analysis.h declares it, and AG_CLONES_AVX512 redefined after analysis.h
 * has defined it (its guard keeps vlog.c's own #include from redefining
 * it). tests/analysis/test_vlog.c compares the clones bit for bit. */
#ifndef VLOG_CLONE_H
#define VLOG_CLONE_H

#define ag_log_positive VLOG_NAME
#include "../../analysis/analysis.h"
#undef AG_CLONES_AVX512
#define AG_CLONES_AVX512 VLOG_TARGET
#include "../../analysis/vlog.c"

#endif
