/* attngeom/aggregate.h — statements about a corpus: per-group means with
 * Student-t (and bootstrap) intervals over units of replication
 * (`aggregate`, `--aggregate`) and Welch or paired comparisons of two sets
 * of records (`compare`), with multiple-comparison adjustments and effect
 * sizes. Definitions and references: docs/metrics.md, "Aggregates and
 * comparisons".
 *
 * Units. The unit is the independent sample: by default the input (the
 * value of "text" and/or "input") of records that hold one, the record
 * itself for those that do not; or the values of the unit keys given.
 * Within a group, the records of one unit are averaged first (the unit's
 * mean); every mean, interval and test is over the unit means.
 */
#ifndef ATTNGEOM_AGGREGATE_H
#define ATTNGEOM_AGGREGATE_H

#include <stdint.h>
#include "core.h"
#include "records.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- moments ------------------------------------------------------------ */

/* Count, mean and M2 = Σ (x − mean)² of a sample. Zero-initialise. */
typedef struct {
    uint64_t n;
    double mean, m2;
} ag_moments;

/* Add one value (Welford's update). */
AG_EXPORT void ag_moments_add(ag_moments *m, double x);
/* Merge `from` into `into`: the moments of the union of both samples, by the
 * parallel update of Chan, Golub & LeVeque (1979): with d = mean_b − mean_a
 * and n = n_a + n_b, mean = mean_a + d·n_b/n and
 * M2 = M2_a + M2_b + d²·n_a·n_b/n. Exact up to rounding, in any order. */
AG_EXPORT void ag_moments_merge(ag_moments *into, const ag_moments *from);
/* Sample standard deviation sqrt(M2/(n − 1)) (ddof 1); NaN when n < 2. */
AG_EXPORT double ag_moments_std(const ag_moments *m);
/* The two-sided Student-t interval for the mean at confidence `level`
 * (0 < level < 1): mean ± t_{(1+level)/2, n−1}·std/√n, the quantile from
 * GSL (gsl_cdf_tdist_Pinv). NaN bounds when n < 2. */
AG_EXPORT void ag_moments_ci(const ag_moments *m, double level, double *lo, double *hi);

/* ---- aggregation -------------------------------------------------------- */

/* The keys that identify a record rather than measure it: never aggregated,
 * and (but "text", "input" and "batch", which name the record's input: a
 * text's line, an image or sound file, a sequence of a batch) the default
 * grouping. "normalizer" and "temperature" (the lens a record was measured
 * through, issue 28) identify it too: a run over several temperatures
 * aggregates into one group per T. "stack" (encoder, decoder, cross: the
 * attention of an encoder–decoder pass, issue 30) too. NULL-terminated. */
extern const char *const ag_identifying_keys[];

/* Carries its size (ABI rule, core.h): start from
 * AG_AGGREGATE_OPTIONS_DEFAULT (the default grouping, level 0.95). */
typedef struct {
    size_t size;     /* sizeof(ag_aggregate_options), set by the macro */
    /* Group keys. by_default: every identifying key present in the records
     * but "text", "input" and "batch" (model, layer, head, ...), in
     * ag_identifying_keys' order;
     * else the nby keys of `by` (nby = 0: one group of everything), after
     * "stack" when `by` does not name it: the encoder's, decoder's and
     * cross layer L of an encoder–decoder pass are never pooled (a key
     * that only groups, and shows, when the records carry it). */
    int by_default;
    const char *const *by;
    size_t nby;
    double level;    /* confidence of the intervals, in (0, 1) */
    int keep_values; /* keep the mean of every unit, also of records that are
                        units of their own (compare's permutations, --paired) */
    /* Unit keys (--unit KEYS): nunit = 0 the default (the input, else the
     * record); else the nunit keys of `unit`, their values naming a unit. */
    const char *const *unit;
    size_t nunit;
    /* Bootstrap intervals (--bootstrap N --seed S): resamples of units per
     * group and metric, 0 for none; implies keep_values. */
    unsigned long bootstrap;
    unsigned long seed;
} ag_aggregate_options;
#define AG_AGGREGATE_OPTIONS_DEFAULT \
    {.size = sizeof(ag_aggregate_options), .by_default = 1, .level = 0.95}

typedef struct ag_aggregate ag_aggregate;

/* ag_aggregate_table refuses (AG_ELIMIT) a table of more than
 * AG_AGGREGATE_SPARSE_CELLS cells that holds a value in fewer than 1 of
 * AG_AGGREGATE_SPARSE_RATIO of them: a small input whose every record is a
 * group and a metric of its own would otherwise ask for groups x metrics
 * cells (docs/cli.md, "Corpus statistics"). */
#define AG_AGGREGATE_SPARSE_CELLS (1 << 20)
#define AG_AGGREGATE_SPARSE_RATIO 16

/* The most resamples of `aggregate --bootstrap`. */
#define AG_AGGREGATE_BOOTSTRAP_MAX 1000000UL

/* AG_EINVAL for a level outside (0, 1), an empty or repeated --by or --unit
 * key, or more than AG_AGGREGATE_BOOTSTRAP_MAX resamples. */
AG_EXPORT int ag_aggregate_new(const ag_aggregate_options *opt, ag_aggregate **out, ag_error *err);
AG_EXPORT void ag_aggregate_free(ag_aggregate *a);

/* Add one record to its group and unit. Every key that is neither a group
 * key nor an identifying key is a metric: numbers and booleans (as 0/1) are
 * added to the record's unit (its sum and count), nulls only counted out; a
 * key that holds text in any record is not a metric.
 * A record holding "n" is an aggregated record (what ag_aggregate_table
 * writes: per metric K its mean over K_n units, K_std, and "unit", the unit
 * keys, "n_units"). It is combined in one of two ways (docs/metrics.md):
 *  - as a shard: when every identifying key it holds (model, layer, head,
 *    ...) is a group key and its "unit" is this aggregate's unit (or, for the
 *    default unit, "text", "input" or "record"), its moments
 *    (K_n, K, K_std²·(K_n − 1)) join the group's unit means — exact when
 *    shards hold disjoint units (a corpus split by text) — and its n_units
 *    the group's; such units have no values to resample or pair;
 *  - as a unit mean: otherwise (the grouping pools records the aggregated
 *    record kept apart, e.g. compare pooling per-head aggregates), K is one
 *    observation, of weight K_n, of the unit the record names: itself for
 *    the default unit (one head's mean: the head is the unit), else its
 *    values of the unit keys.
 * Every key is checked first (ag_record_key_check: the record is refused
 * whole). AG_EFORMAT (a malformed aggregated record), AG_ELIMIT (more than
 * AG_RECORDS_KEYS_MAX metrics, or 2³¹ − 1 groups or units), AG_ENOMEM. */
AG_EXPORT int ag_aggregate_add(ag_aggregate *a, const ag_row *row, ag_error *err);
/* Add every row of t. */
AG_EXPORT int ag_aggregate_add_table(ag_aggregate *a, const ag_table *t, ag_error *err);
/* Merge the groups of `from` into `into` (same grouping and unit options):
 * the units of both (a unit in both sums its records), each group's
 * moments of shards by ag_moments_merge. AG_EINVAL for other options. */
AG_EXPORT int ag_aggregate_merge(ag_aggregate *into, const ag_aggregate *from, ag_error *err);
/* Records added (the sum of n). */
AG_EXPORT uint64_t ag_aggregate_records(const ag_aggregate *a);

/* One row per group, in the order groups first appear: the group keys,
 * unit (the unit keys: "text", "input", "layer,head", ...; "record" for
 * records that are units of their own), n (records), n_units (units), then
 * for each metric K (in the order metrics first appear) K (mean of the unit
 * means; null when K_n = 0), K_std (ddof 1), K_ci_low and K_ci_high
 * (ag_moments_ci) — those three null when K_n < 2 — and K_n (integer: units
 * with a value of K); with bootstrap also K_pct_low, K_pct_high (percentile
 * interval) and K_bca_low, K_bca_high (BCa), from resampling the units
 * (the generator seeded with `seed` for every group and metric).
 * human: for the table, Markdown and LaTeX formats, the group keys, unit,
 * n, n_units and one AG_CELL_MEAN_CI column K per metric instead.
 * AG_ENOTFOUND for a --by or --unit key no record holds. */
AG_EXPORT int ag_aggregate_table(const ag_aggregate *a, int human, ag_table *out, ag_error *err);

/* ---- comparison --------------------------------------------------------- */

/* Welch's unequal-variance t-test of mean_a − mean_b (Welch 1947): with
 * v = s²/n per sample, se = sqrt(v_a + v_b), t = diff/se, df the
 * Welch–Satterthwaite df = se⁴ / (v_a²/(n_a−1) + v_b²/(n_b−1)), p = 2·Q(|t|)
 * of Student's t with df (gsl_cdf_tdist_Q), and the interval
 * diff ± t_{(1+level)/2, df}·se. Undefined values are NaN: the means when
 * a sample is empty; t, df, p and the interval when n_a or n_b < 2 or se = 0. */
typedef struct {
    double mean_a, mean_b, diff, ci_low, ci_high, t, df, p;
} ag_welch;
AG_EXPORT void ag_welch_test(const ag_moments *a, const ag_moments *b, double level, ag_welch *out);

/* Set the unit keys of an aggregate that holds no record yet: keys a
 * comma-separated list (--unit KEYS), NULL or "" the default unit.
 * AG_EINVAL for an empty or repeated key or an aggregate with records. */
AG_EXPORT int ag_aggregate_set_unit(ag_aggregate *a, const char *keys, ag_error *err);
/* The records added from now on come from input `source` (0 at first):
 * the default unit is the input of one source, since "text" numbers the
 * lines of one file (`aggregate FILE...` numbers its files): text 0 of one
 * file and text 0 of another are two units. Explicit --unit keys are not
 * qualified (one head is one unit in every file). */
AG_EXPORT void ag_aggregate_set_source(ag_aggregate *a, unsigned source);
/* Bootstrap intervals in ag_aggregate_table (aggregate --bootstrap N
 * --seed S); 0 resamples: none. Keeps the unit means. AG_EINVAL for more
 * than AG_AGGREGATE_BOOTSTRAP_MAX or an aggregate with records. */
AG_EXPORT int ag_aggregate_set_bootstrap(ag_aggregate *a, unsigned long resamples,
                                         unsigned long seed, ag_error *err);

/* Two-sided permutation test of the difference of means: `permutations`
 * random relabellings of the pooled values (GSL's MT19937 seeded with
 * `seed`, a partial Fisher–Yates shuffle drawing with gsl_rng_uniform_int),
 * p = (1 + #{|d*| ≥ |d|}) / (1 + permutations), a relabelling's |d*|
 * counting as at least |d| within 1e-12 relative (rounding). NaN when a
 * sample is empty. AG_ENOMEM. */
AG_EXPORT int ag_permutation_p(const double *a, size_t na, const double *b, size_t nb,
                               unsigned long permutations, unsigned long seed, double *p, ag_error *err);

/* Carries its size (ABI rule, core.h): start from
 * AG_COMPARE_OPTIONS_DEFAULT (every metric, level 0.95, no permutation
 * test, seed 1). */
typedef struct {
    size_t size;                /* sizeof(ag_compare_options), set by the macro */
    const char *const *metrics; /* keys to compare; NULL: every metric of a that b has too
                                   but the sizes rows and cols */
    size_t nmetrics;
    double level;
    unsigned long permutations; /* 0: no p_perm (both aggregates need keep_values otherwise) */
    unsigned long seed;
    const char *name_a, *name_b; /* the inputs, in messages */
    /* Paired design (compare --paired): the same units in a and b (both
     * aggregates with keep_values and the same unit keys); the tests are on
     * the per-unit differences a − b. */
    int paired;
} ag_compare_options;
#define AG_COMPARE_OPTIONS_DEFAULT \
    {.size = sizeof(ag_compare_options), .level = 0.95, .seed = 1}
/* The most permutations a comparison runs (`attngeom compare --permutations`). */
#define AG_COMPARE_PERMUTATIONS_MAX 10000000UL

/* The check of the options ag_compare_table makes first, for callers that
 * check them sooner (the CLI, while parsing): AG_EINVAL "--permutations
 * takes an integer from 1 to 10000000, not 'N'" for more than
 * AG_COMPARE_PERMUTATIONS_MAX permutations (0: no permutation test). */
AG_EXPORT int ag_compare_options_check(const ag_compare_options *opt, ag_error *err);

/* One row per (group, metric), groups of a first (then those only b has):
 * the group keys, metric, unit, n_a, n_b (units with a value: the sample
 * sizes), n_units (n_a + n_b; the pairs when paired), mean_a, mean_b, diff,
 * ci_low, ci_high, t, df, p, p_holm, q_bh, hedges_g, hedges_g_ci_low,
 * hedges_g_ci_high, then for paired runs p_wilcoxon and dz, and with
 * permutations p_perm, p_perm_holm, q_perm_bh.
 * Unpaired: ag_welch_test over the unit means, p_perm by ag_permutation_p
 * on the unit means (sorted, the generator reseeded for each row).
 * Paired: on the differences d_u = mean_a,u − mean_b,u of the units both
 * hold a value for (Student 1908; scipy.stats.ttest_rel): t = mean(d) /
 * (sd(d)/√n), df = n − 1, the interval mean(d) ± t_q·sd(d)/√n; p_wilcoxon
 * (ags_wilcoxon_p, as scipy.stats.wilcoxon), dz = mean(d)/sd(d) (Cohen
 * 1988, section 2.3.5) and p_perm a sign-flip test. A unit of a group of one
 * input that the same group of the other does not hold is AG_EINVAL naming
 * it; so are records without unit keys (units of their own) and shards
 * merged by moments.
 * p_holm and q_bh adjust p over every row of the table (Holm 1979;
 * Benjamini & Hochberg 1995), p_perm_holm and q_perm_bh likewise p_perm;
 * null p's are not counted. hedges_g: ags_hedges_g of the unit means.
 * a and b must be grouped alike and have the same unit keys.
 * ag_compare_options_check's errors, AG_ENOTFOUND for a metric that is not
 * a numeric key of an input; AG_EINVAL. */
AG_EXPORT int ag_compare_table(const ag_aggregate *a, const ag_aggregate *b,
                               const ag_compare_options *opt, ag_table *out, ag_error *err);

/* ag_compare_table on the heap, as ag_compare_result (access.h) with
 * paired (compare --paired): for callers through a foreign-function
 * interface. *out is the caller's (ag_table_delete). */
AG_EXPORT int ag_compare_result_paired(const ag_aggregate *a, const ag_aggregate *b,
                                       const char *metrics, double level,
                                       unsigned long permutations, unsigned long seed,
                                       int paired, const char *name_a, const char *name_b,
                                       ag_table **out, ag_error *err);

#ifdef __cplusplus
}
#endif
#endif
