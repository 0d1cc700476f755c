/* attngeom/aggregate.h — statements about a corpus: per-group means with
 * Student-t intervals (`aggregate`, `--aggregate`) and Welch comparisons of
 * two sets of records (`compare`). Definitions and references:
 * docs/metrics.md, "Aggregates and comparisons".
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
 * grouping. NULL-terminated. */
extern const char *const ag_identifying_keys[];

/* Carries its size (ABI rule, core.h): start from
 * AG_AGGREGATE_OPTIONS_DEFAULT (the default grouping, level 0.95). */
typedef struct {
    size_t size;     /* sizeof(ag_aggregate_options), set by the macro */
    /* Group keys. by_default: every identifying key present in the records
     * but "text", "input" and "batch" (model, layer, head, ...), in
     * ag_identifying_keys' order;
     * else exactly the nby keys of `by` (nby = 0: one group of everything). */
    int by_default;
    const char *const *by;
    size_t nby;
    double level;    /* confidence of the intervals, in (0, 1) */
    int keep_values; /* keep every value (compare's permutation test) */
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

/* AG_EINVAL for a level outside (0, 1) or an empty or repeated --by key. */
AG_EXPORT int ag_aggregate_new(const ag_aggregate_options *opt, ag_aggregate **out, ag_error *err);
AG_EXPORT void ag_aggregate_free(ag_aggregate *a);

/* Add one record to its group. Every key that is neither a group key nor an
 * identifying key is a metric: numbers and booleans (as 0/1) are added to
 * its moments, nulls only counted out; a key that holds text in any record
 * is not a metric. A record holding "n" is an aggregated record (what
 * ag_aggregate_table writes): for each metric K with K_n it adds the moments
 * (K_n, K, K_std²·(K_n − 1)) and n records, so aggregates of shards
 * aggregate again. Every key is checked first (ag_record_key_check: the
 * record is refused whole). AG_EFORMAT (a malformed aggregated record), AG_ELIMIT
 * (more than AG_RECORDS_KEYS_MAX metrics, or 2³¹ − 1 groups), AG_ENOMEM. */
AG_EXPORT int ag_aggregate_add(ag_aggregate *a, const ag_row *row, ag_error *err);
/* Add every row of t. */
AG_EXPORT int ag_aggregate_add_table(ag_aggregate *a, const ag_table *t, ag_error *err);
/* Merge the groups of `from` into `into` (same grouping options), each
 * group's moments by ag_moments_merge. AG_EINVAL for other options. */
AG_EXPORT int ag_aggregate_merge(ag_aggregate *into, const ag_aggregate *from, ag_error *err);
/* Records added (the sum of n). */
AG_EXPORT uint64_t ag_aggregate_records(const ag_aggregate *a);

/* One row per group, in the order groups first appear: the group keys, n,
 * then for each metric K (in the order metrics first appear) K (mean of
 * its non-null values; null when K_n = 0), K_std (ddof 1), K_ci_low and
 * K_ci_high (ag_moments_ci) — those three null when K_n < 2 — and K_n
 * (integer). human: for the table, Markdown and LaTeX formats, the group
 * keys, n and one AG_CELL_MEAN_CI column K per metric instead. */
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
    const char *const *metrics; /* keys to compare; NULL: every metric of a that b has too */
    size_t nmetrics;
    double level;
    unsigned long permutations; /* 0: no p_perm (both aggregates need keep_values otherwise) */
    unsigned long seed;
    const char *name_a, *name_b; /* the inputs, in messages */
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
 * the group keys, metric, n_a, n_b (non-null values), mean_a, mean_b, diff,
 * ci_low, ci_high, t, df, p (ag_welch_test), and p_perm when
 * permutations > 0 (ag_permutation_p, the generator reseeded for each
 * row). a and b must be grouped alike. ag_compare_options_check's errors,
 * AG_ENOTFOUND for a metric that is not a numeric key of an input; AG_EINVAL. */
AG_EXPORT int ag_compare_table(const ag_aggregate *a, const ag_aggregate *b,
                               const ag_compare_options *opt, ag_table *out, ag_error *err);

#ifdef __cplusplus
}
#endif
#endif
