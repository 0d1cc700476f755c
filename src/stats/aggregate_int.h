/* Internal prefix: ags_ (module src/stats/; today agg_, renamed in a later step of plan-25). */
/* aggregate_int.h — the inside of an ag_aggregate, shared by aggregate.c and
 * compare.c. Private to the library. */
#ifndef AG_AGGREGATE_INT_H
#define AG_AGGREGATE_INT_H

#include "attngeom.h"
#include "base/hashmap.h"

/* One unit of one metric of one group: the unit's mean is sum / w. */
typedef struct {
    uint32_t unit; /* index into units; AGG_UNIT_RECORD: a record as its own unit */
    double sum, w;
} agg_slot;
#define AGG_UNIT_RECORD UINT32_MAX

/* One metric of one group: only the pairs the records hold exist, so an
 * aggregate grows with its input, not with groups × metrics. */
typedef struct {
    agg_slot *slots;  /* (nslot) the units with a value, in first-seen order */
    size_t nslot, scap;
    ag_moments direct; /* unit means not kept: records as units (no keep_values)
                          and aggregated records merged as shards */
    int shards;        /* direct holds shards' moments (no unit values) */
    uint32_t group, metric; /* whose */
} agg_stat;

typedef struct {
    ag_cell *keys;    /* (nschema) the group's key values; text owned */
    const char *id;   /* the serialized keys (owned by group_map) */
    uint32_t idlen;
    uint64_t n;       /* records */
    uint64_t named;   /* distinct named units */
    uint64_t other;   /* records as units, and the units of shards */
} agg_group;

/* A named unit: its key values (ag_aggregate's unit schema). */
typedef struct {
    ag_cell *keys;    /* (nukey) text owned */
    const char *id;   /* serialized (owned by unit_map) */
    uint32_t idlen;
} agg_unit;

struct ag_aggregate {
    int by_default, keep_values;
    double level;
    char **schema;          /* (nschema) group keys */
    size_t nschema;
    unsigned char *present; /* (nschema) a record held the key */
    int stack_implied;      /* schema[0] is "stack", added to --by keys that
                               lack it: shown (and required) only when present */
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
    char **ukey;            /* (nukey) unit keys: --unit's, else "text", "input" */
    size_t nukey;
    int unit_default;
    unsigned char *upresent; /* (nukey) a record held the key */
    int record_units;       /* some record was a unit of its own */
    agg_unit *units;        /* (nunit) named units, first seen first */
    size_t nunit, ucap;
    agi_strmap unit_map;    /* serialized unit keys -> unit index */
    agi_u64map slot_map;    /* stat << 32 | unit -> slot index */
    agi_u64map group_units; /* group << 32 | unit: the group holds the unit */
    unsigned long bootstrap, seed;
    unsigned source;        /* ag_aggregate_set_source: qualifies the default unit */
    char *idbuf;            /* scratch for a serialized key */
    size_t idlen, idcap;
};

/* The unit keys of an aggregate without records: keys[n], n = 0 the
 * default ("text", "input"). AG_EINVAL for an empty or repeated key. */
int agg_set_units(ag_aggregate *a, const char *const *keys, size_t n, ag_error *err);
/* The moments of a stat's unit means (slots in order, then direct). */
void agg_stat_moments(const agg_stat *s, ag_moments *m);
/* The unit means of a stat into a new array (*out, caller frees; NULL
 * and AG_OK when it has none); AG_EINVAL when some are known by moments
 * only (shards, or records as units without keep_values). */
int agg_stat_values(const ag_aggregate *a, const agg_stat *s, double **out, size_t *n,
                    ag_error *err);
/* The label of a's unit ("text", "layer,head", "record", ...) into buf. */
void agg_unit_label(const ag_aggregate *a, char *buf, size_t cap);
/* The slot of unit u in stat s (NULL: none). */
const agg_slot *agg_slot_of(const ag_aggregate *a, const agg_stat *s, uint32_t u);
/* Unit index of b's unit u in a, or -1. */
long agg_find_unit(const ag_aggregate *a, const ag_aggregate *b, uint32_t u);
/* 1 when group g of a holds unit u. */
int agg_group_has_unit(const ag_aggregate *a, const agg_group *g, uint32_t u);
/* "text='…'" naming unit u of a, into buf. */
void agg_unit_name(const ag_aggregate *a, uint32_t u, char *buf, size_t cap);

/* The statistics of metric `metric` in group g (NULL: none), empty when
 * the group never saw it. */
const agg_stat *agg_stat_of(const ag_aggregate *a, const agg_group *g, size_t metric);

/* Index of metric `name` in a, or -1. */
int agg_metric_index(const ag_aggregate *a, const char *name);
/* The keys that give a record's size rather than measure it: "rows" and
 * "cols", the matrix of a head (its tokens). aggregate reports their
 * spread like a metric's (a group's mean length), but compare leaves them
 * out of its default metrics: a difference of lengths is no finding, and
 * testing it would enlarge the Holm and BH families. NULL-terminated. */
extern const char *const agg_size_keys[];
/* 1 when key is one of the NULL-terminated list (ag_identifying_keys,
 * agg_size_keys), else 0. */
int agg_key_listed(const char *const *list, const char *key);
/* The group of a with b's group g's keys, or -1. */
long agg_find_group(const ag_aggregate *a, const agg_group *g);
/* Columns of the group keys an output shows (by_default: those present):
 * their schema indices into cols[nschema]; returns the count. */
/* Whether group key k is a column: present in the records, or named by
 * --by (the implied "stack" only when present). */
int agg_key_shown(const ag_aggregate *a, size_t k);
size_t agg_key_columns(const ag_aggregate *a, size_t *cols);
/* Copy the group key cells of g (schema columns cols[ncol]) into row. */
int agg_put_keys(const ag_aggregate *a, const agg_group *g, const size_t *cols, size_t ncol,
                 ag_table *t, ag_cell *row, ag_error *err);

#endif
