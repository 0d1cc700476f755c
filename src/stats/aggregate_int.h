/* Internal prefix: ags_ (module src/stats/; today agg_, renamed in a later step of plan-25). */
/* aggregate_int.h — the inside of an ag_aggregate, shared by aggregate.c and
 * compare.c. Private to the library. */
#ifndef AG_AGGREGATE_INT_H
#define AG_AGGREGATE_INT_H

#include "attngeom.h"
#include "base/hashmap.h"

/* One metric of one group: only the pairs the records hold exist, so an
 * aggregate grows with its input, not with groups × metrics. */
typedef struct {
    ag_moments m;
    double *vals; /* (nval) with keep_values */
    size_t nval, vcap;
    uint32_t group, metric; /* whose */
} agg_stat;

typedef struct {
    ag_cell *keys;    /* (nschema) the group's key values; text owned */
    const char *id;   /* the serialized keys (owned by group_map) */
    uint32_t idlen;
    uint64_t n;       /* records */
} agg_group;

struct ag_aggregate {
    int by_default, keep_values;
    double level;
    char **schema;          /* (nschema) group keys */
    size_t nschema;
    unsigned char *present; /* (nschema) a record held the key */
    char **metric;          /* (nmetric) in the order they first appear */
    unsigned char *metric_text; /* (nmetric) held text somewhere: not a metric */
    size_t nmetric, mcap;
    agi_strmap metric_map;  /* name -> metric index */
    agg_group *groups;
    size_t ngroup, gcap;
    agi_strmap group_map;   /* serialized keys -> group index */
    agi_strmap schema_map;  /* group key -> schema index */
    agg_stat *stats;        /* (nstat) every (group, metric) met */
    size_t nstat, scap;
    agi_u64map stat_map;    /* agg_stat_key(group, metric) -> index into stats */
    uint64_t records;
    int summaries;          /* some record was an aggregated one */
    char *idbuf;            /* scratch for a serialized key */
    size_t idlen, idcap;
};

/* The statistics of metric `metric` in group g (NULL: none), empty when
 * the group never saw it. */
const agg_stat *agg_stat_of(const ag_aggregate *a, const agg_group *g, size_t metric);

/* Index of metric `name` in a, or -1. */
int agg_metric_index(const ag_aggregate *a, const char *name);
/* The group of a with b's group g's keys, or -1. */
long agg_find_group(const ag_aggregate *a, const agg_group *g);
/* Columns of the group keys an output shows (by_default: those present):
 * their schema indices into cols[nschema]; returns the count. */
size_t agg_key_columns(const ag_aggregate *a, size_t *cols);
/* Copy the group key cells of g (schema columns cols[ncol]) into row. */
int agg_put_keys(const ag_aggregate *a, const agg_group *g, const size_t *cols, size_t ncol,
                 ag_table *t, ag_cell *row, ag_error *err);

#endif
