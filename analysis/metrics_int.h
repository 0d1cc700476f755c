/* Internal prefix: aga_ (module analysis/; today ag_record_init and ag_record_list_alloc, renamed in a later step of plan-25). */
/* metrics_int.h — the layouts of ag_record, ag_metric_set and
 * ag_record_list, private to the library (and its Criterion tests, which
 * may use internals). Public code sees them as incomplete types
 * (attngeom/metrics.h) and reaches them through functions, so a new metric
 * (AG_M_COUNT grows) changes nothing a program compiled against an older
 * header relies on (the ABI rule: attngeom/core.h). */
#ifndef AG_METRICS_INT_H
#define AG_METRICS_INT_H

#include "attngeom.h"

/* Which metrics to compute and print: on[m] != 0 selects metric id m. */
struct ag_metric_set {
    unsigned char on[AG_M_COUNT];
};

/* One output record: a matrix (layer, head) and its metric values. */
struct ag_record {
    int layer, head;
    long text;                   /* line index for --text-file, else -1 */
    double temperature;          /* softmax's T of a run over several; NaN: none */
    int stack;                   /* ag_stack of an encoder–decoder pass; 0: none */
    size_t rows, cols;
    unsigned char kind[AG_M_COUNT]; /* ag_value_kind of each metric */
    double value[AG_M_COUNT];
};

/* Records in output order, contiguous: a pointer into items stays valid
 * until the list grows (ag_record_list_add, ag_record_list_move). */
struct ag_record_list {
    ag_record *items; /* (cap) */
    size_t count, cap;
};

/* A list of count records as ag_record_init(r, 0, 0, 0, 0) leaves them
 * (count 0 allowed); NULL (err set) when out of memory. */
ag_record_list *ag_record_list_alloc(size_t count, ag_error *err);

#endif
