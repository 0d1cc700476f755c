/* attngeom/metrics.h — metric keys, selections, records and the matrix
 * metrics of docs/metrics.md families A (spectrum), B (attention) and C (row geometry).
 * docs/metrics.md gives each formula, its meaning for attention and its
 * reference.
 */
#ifndef ATTNGEOM_METRICS_H
#define ATTNGEOM_METRICS_H

#include <stdio.h>
#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Metric keys, in the order of docs/metrics.md (the column order of CSV/TSV).
 * lambda2_condition belongs to family B (`attention`) but is defined after
 * family E's table in docs/metrics.md, and takes that place in the column
 * order; so do the head detectors of family B (prev_token_ratio ...
 * induction_baseline), printed after family F. */
typedef enum {
    /* A. spectrum */
    AG_M_SIGMA_MAX, AG_M_SIGMA_GAP, AG_M_EFFECTIVE_RANK, AG_M_STABLE_RANK,
    AG_M_PARTICIPATION_RATIO, AG_M_NUMERICAL_RANK,
    /* B. attention */
    AG_M_CAUSAL, AG_M_ROW_SUM_ERROR, AG_M_ENTROPY_MEAN, AG_M_ENTROPY_NORMALIZED,
    AG_M_SINK_MASS, AG_M_LAMBDA2_ABS, AG_M_SPECTRAL_GAP, AG_M_FIEDLER,
    AG_M_ASYMMETRY, AG_M_SYMMETRY_SCORE,
    /* B, head roles: where each query's attention goes */
    AG_M_ATTENTION_DISTANCE, AG_M_SELF_MASS, AG_M_PREV_TOKEN_MASS, AG_M_MAX_MASS,
    AG_M_SINK_RATIO,
    /* C. row geometry */
    AG_M_MEAN_COSINE, AG_M_PC1_SHARE, AG_M_RES_RATIO,
    /* D. weight space: family A of M_QK = W_Q W_Kᵀ and M_OV = W_V W_O */
    AG_M_QK_SIGMA_MAX, AG_M_QK_SIGMA_GAP, AG_M_QK_EFFECTIVE_RANK,
    AG_M_QK_STABLE_RANK, AG_M_QK_PARTICIPATION_RATIO, AG_M_QK_NUMERICAL_RANK,
    AG_M_QK_SYMMETRY_SCORE,
    AG_M_OV_SIGMA_MAX, AG_M_OV_SIGMA_GAP, AG_M_OV_EFFECTIVE_RANK,
    AG_M_OV_STABLE_RANK, AG_M_OV_PARTICIPATION_RATIO, AG_M_OV_NUMERICAL_RANK,
    AG_M_OV_COPYING_SCORE,
    /* E. stability and angles of one head, where its input is known */
    AG_M_JACOBIAN_NORM, AG_M_JACOBIAN_NORM_REL, AG_M_SENSITIVITY,
    AG_M_Q_MEAN_COSINE, AG_M_K_MEAN_COSINE, AG_M_QK_COS_MEAN,
    /* B, defined with E in docs/metrics.md: condition number of λ₂ */
    AG_M_LAMBDA2_CONDITION,
    /* F. curvature of the thresholded attention graph */
    AG_M_EDGES, AG_M_FORMAN_MEAN, AG_M_FORMAN_MIN, AG_M_OLLIVIER_MEAN,
    AG_M_OLLIVIER_MIN,
    /* B, head detectors against uniform attention (added after F, ABI rule:
     * core.h): every square matrix ... */
    AG_M_PREV_TOKEN_RATIO, AG_M_SELF_RATIO,
    /* ... and where the token ids are known (ag_token_pattern_metrics; null
     * otherwise) */
    AG_M_DUPLICATE_TOKEN_SCORE, AG_M_DUPLICATE_TOKEN_BASELINE, AG_M_INDUCTION_SCORE,
    AG_M_INDUCTION_BASELINE,
    /* H. value norms of one head, where its input and weights are known
     * (added after the detectors, ABI rule) */
    AG_M_VALUE_NORM_MEAN, AG_M_VALUE_NORM_CV, AG_M_SINK_VALUE_RATIO,
    AG_M_NORM_ATTENTION_SHIFT,
    /* I. massive activations of a hidden state (`residual`) */
    AG_M_ACT_TOP1, AG_M_ACT_TOP1_TOKEN, AG_M_ACT_TOP1_DIM, AG_M_ACT_MEDIAN, AG_M_ACT_RATIO,
    AG_M_ACT_MASSIVE,
    /* J. context mixing of a layer's contributions (`contributions`) */
    AG_M_CONTEXT_MIXING,
    /* L. metric axioms of the cost −ln A of a square matrix (added after J,
     * ABI rule) */
    AG_M_TRIANGLE_VIOLATION, AG_M_SYMMETRY_GAP, AG_M_SELF_COST,
    /* K. the lens: a head's own pre-softmax scores (ag_lens_metrics, `analyze`;
     * added after L, ABI rule) */
    AG_M_SCORE_STD, AG_M_SPARSEMAX_SUPPORT, AG_M_ENTMAX_SUPPORT, AG_M_SPARSEMAX_JS,
    AG_M_SCORE_EFFECTIVE_RANK, AG_M_SCORE_NUMERICAL_RANK, AG_M_RANK_LIFT,
    AG_M_SCORE_ASYMMETRY,
    /* M. cross-attention: the alignment of a target with a source, any
     * m×n matrix (ag_matrix_metrics; added after K, ABI rule) */
    AG_M_ALIGNMENT_MONOTONICITY, AG_M_ALIGNMENT_KENDALL, AG_M_SOURCE_COVERAGE,
    AG_M_CROSS_ENTROPY_NORMALIZED,
    AG_M_COUNT
} ag_metric;

typedef enum {
    AG_FAMILY_SPECTRUM,   /* A */
    AG_FAMILY_ATTENTION,  /* B */
    AG_FAMILY_GEOMETRY,   /* C */
    AG_FAMILY_WEIGHTS,    /* D */
    AG_FAMILY_STABILITY,  /* E */
    AG_FAMILY_CURVATURE,  /* F */
    AG_FAMILY_VALUES,     /* H */
    AG_FAMILY_ACTIVATIONS, /* I */
    AG_FAMILY_MIXING,     /* J */
    AG_FAMILY_AXIOMS,     /* L */
    AG_FAMILY_LENS,       /* K */
    AG_FAMILY_CROSS,      /* M */
    AG_FAMILY_COUNT
} ag_family;

/* Key as printed ("sigma_max"); NULL for an out-of-range id. */
AG_EXPORT const char *ag_metric_name(ag_metric m);
/* Id of a key, or -1 if unknown. */
AG_EXPORT int ag_metric_from_name(const char *name);
AG_EXPORT ag_family ag_metric_family(ag_metric m);
/* Family name as accepted by --metrics ("spectrum", "attention", "geometry",
 * "weights", "stability", "curvature", "values", "activations", "mixing",
 * "axioms", "lens", "cross"). */
AG_EXPORT const char *ag_family_name(ag_family f);
/* Id of a family name, or -1 if unknown. */
AG_EXPORT int ag_family_from_name(const char *name);
/* What `attngeom metrics` lists, from the one registry of keys: key m's
 * one-line definition, the case where its value is null ("—": never) and
 * the reference its definition follows, as UTF-8 text in the words and
 * symbols of docs/metrics.md (its table cells; static strings, never to be
 * freed); NULL for an id out of range. */
AG_EXPORT const char *ag_metric_definition(ag_metric m);
AG_EXPORT const char *ag_metric_null_when(ag_metric m);
AG_EXPORT const char *ag_metric_reference(ag_metric m);
/* How md and LaTeX tables head a record key: its display name
 * ("effective_rank" → "Effective rank"; every metric has one, and the
 * identifying and statistics keys: layer, head, model, n, p, ...), NULL
 * for a key it does not know; its LaTeX symbol ("$\\sigma_1$") where one is
 * standard, else NULL. Static strings. */
AG_EXPORT const char *ag_key_display_name(const char *key);
AG_EXPORT const char *ag_key_symbol(const char *key);

/* Bit masks of families, for selections restricted to what a command
 * computes. */
#define AG_FAMILY_BIT(f) (1u << (f))
/* What every command on attention matrices computes: A, B, C and, when
 * asked for, the curvature of the attention graph (F), the metric
 * axioms of its cost (L) and the cross-attention alignment (M). */
#define AG_FAMILIES_MATRIX (AG_FAMILY_BIT(AG_FAMILY_SPECTRUM) | \
                            AG_FAMILY_BIT(AG_FAMILY_ATTENTION) | \
                            AG_FAMILY_BIT(AG_FAMILY_GEOMETRY) | \
                            AG_FAMILY_BIT(AG_FAMILY_CURVATURE) | \
                            AG_FAMILY_BIT(AG_FAMILY_AXIOMS) | \
                            AG_FAMILY_BIT(AG_FAMILY_CROSS))
#define AG_FAMILIES_WEIGHTS AG_FAMILY_BIT(AG_FAMILY_WEIGHTS)
/* What a command computes on attention heads whose input is known
 * (analyze, layer): the matrix families plus stability. */
#define AG_FAMILIES_HEADS (AG_FAMILIES_MATRIX | AG_FAMILY_BIT(AG_FAMILY_STABILITY))
/* Not a family: a command that knows each input's token ids (analyze)
 * adds it to its families, so that the keys that need them
 * (duplicate_token_*, induction_*) are computed. Without it --metrics
 * refuses them as keys the command does not compute and "all" or a
 * family name leaves them out (matrix, layer, rollout have no ids). */
#define AG_FAMILIES_TOKEN_IDS (1u << 31)
/* What analyze computes: the heads' families, token-id keys included, the
 * value norms of family H (the model's W_V and W_O are known) and the lens
 * keys of family K (the pass's scores and the head's Q, K are known). */
#define AG_FAMILIES_ANALYZE (AG_FAMILIES_HEADS | AG_FAMILIES_TOKEN_IDS | \
                             AG_FAMILY_BIT(AG_FAMILY_VALUES) | AG_FAMILY_BIT(AG_FAMILY_LENS))
/* The default selection: the cheap families A, B, C. */
#define AG_FAMILIES_DEFAULT (AG_FAMILY_BIT(AG_FAMILY_SPECTRUM) | \
                             AG_FAMILY_BIT(AG_FAMILY_ATTENTION) | \
                             AG_FAMILY_BIT(AG_FAMILY_GEOMETRY))

/* AG_M_COUNT of the library that runs: metric ids are 0..count-1, their
 * keys ag_metric_name(id). A program that must run with later MINOR
 * releases loops to this, not to its header's AG_M_COUNT. */
AG_EXPORT int ag_metric_count(void);
/* The families a command computes, as its --metrics accepts them:
 * "matrix" (and "attention") AG_FAMILIES_MATRIX, "analyze" AG_FAMILIES_ANALYZE,
 * "layer" AG_FAMILIES_HEADS, "weights" AG_FAMILIES_WEIGHTS, "residual" and "rollout" theirs
 * (attngeom/layers.h), "contributions" rollout's; 0 for another name. */
AG_EXPORT unsigned ag_command_families(const char *command);

/* ---- selections --------------------------------------------------------- */

/* Which metrics to compute and print. Opaque (ABI rule, core.h): the
 * library allocates it (ag_metric_set_new) and the functions below read
 * and change it. */
typedef struct ag_metric_set ag_metric_set;

/* A new selection within `families` (*out, the caller's: ag_metric_set_free):
 * list NULL gives a command's default (the cheap families A, B, C among
 * them, or all of them when it has none: weights), else
 * ag_metric_set_parse_families(list). AG_EINVAL naming an unknown or
 * foreign item, AG_ENOMEM. */
AG_EXPORT int ag_metric_set_new(unsigned families, const char *list, ag_metric_set **out,
                                ag_error *err);
AG_EXPORT void ag_metric_set_free(ag_metric_set *set); /* NULL is fine */
/* Replace *set with the default selection of a command computing
 * `families` (ag_command_families) on rows×cols matrices: what
 * ag_metric_set_new(families, NULL, ...) selects, and for a rectangular
 * matrix (rows ≠ cols: cross-attention, targets × sources) family M
 * (`cross`) too when the families include it. */
AG_EXPORT void ag_metric_set_default_shape(ag_metric_set *set, unsigned families, size_t rows,
                                           size_t cols);
/* 1 when metric id m is selected, 0 otherwise (also out of range). */
AG_EXPORT int ag_metric_set_has(const ag_metric_set *set, int m);

/* The functions below replace what *set selects. */
/* The default selection: spectrum, attention, geometry. */
AG_EXPORT void ag_metric_set_default(ag_metric_set *set);
/* Parse a comma-separated list of keys and family names ("all" included).
 * AG_EINVAL with a message naming the unknown item (set then unchanged). */
AG_EXPORT int ag_metric_set_parse(ag_metric_set *set, const char *list, ag_error *err);
/* The same, limited to the families in the mask `families`: "all" means all
 * of them, and a key or family outside them is AG_EINVAL. */
AG_EXPORT int ag_metric_set_parse_families(ag_metric_set *set, const char *list,
                                           unsigned families, ag_error *err);
/* Every key of the families in the mask. */
AG_EXPORT void ag_metric_set_families(ag_metric_set *set, unsigned families);
/* How many keys are selected. */
AG_EXPORT size_t ag_metric_set_count(const ag_metric_set *set);

/* ---- records ------------------------------------------------------------ */

typedef enum {
    AG_V_ABSENT = 0, /* not selected: not printed */
    AG_V_NULL,       /* selected, undefined for this matrix: printed as null */
    AG_V_NUMBER,     /* finite double */
    AG_V_INTEGER,    /* integral count, printed without a fraction */
    AG_V_BOOL        /* value is 0.0 or 1.0 */
} ag_value_kind;

/* One output record: a matrix (layer, head), its size, the text it came
 * from and the value of each selected metric. Opaque (ABI rule, core.h): a
 * record is allocated by the library, alone (ag_record_new) or in a list
 * (ag_record_list_add), and read through the getters below. */
typedef struct ag_record ag_record;

/* A record on the heap, as ag_record_init(r, 0, 0, 0, 0) leaves it; NULL
 * when out of memory. */
AG_EXPORT ag_record *ag_record_new(void);
AG_EXPORT void ag_record_free(ag_record *r); /* NULL is fine */

/* Reset r: every metric AG_V_ABSENT, text -1, and the given matrix. */
AG_EXPORT void ag_record_init(ag_record *r, int layer, int head, size_t rows, size_t cols);
/* Set a value; a non-finite number is stored as AG_V_NULL, never printed.
 * An id out of range is ignored. */
AG_EXPORT void ag_record_set(ag_record *r, ag_metric m, ag_value_kind kind, double v);
/* Set the record's text: the 0-based line of the corpus it was measured on
 * (-1: none; the column "text" is written when any record has one). */
AG_EXPORT void ag_record_set_text(ag_record *r, long text);
/* Set the softmax temperature T the record's matrix was measured at: a run
 * over several temperatures (ag_run_options_set_temperatures; issue 28,
 * "Softmax as a lens") stamps each record with its own. NaN (what
 * ag_record_init leaves): none. */
AG_EXPORT void ag_record_set_temperature(ag_record *r, double T);
/* The record's temperature; NaN when none was set. */
AG_EXPORT double ag_record_temperature(const ag_record *r);
/* Set which attention of an encoder–decoder pass the record's matrix is
 * (an ag_stack of attngeom/model.h: 1 encoder, 2 decoder, 3 cross; 0, what
 * ag_record_init leaves: a model of one stack, no "stack" column). */
AG_EXPORT void ag_record_set_stack(ag_record *r, int stack);
/* The record's stack (0: none). */
AG_EXPORT int ag_record_stack(const ag_record *r);
/* "encoder", "decoder", "cross" for stacks 1-3, the records' "stack"
 * column; NULL otherwise. */
AG_EXPORT const char *ag_stack_name(int stack);

AG_EXPORT int ag_record_layer(const ag_record *r);
AG_EXPORT int ag_record_head(const ag_record *r);
/* The record's text (line of a corpus), -1 when it has none. */
AG_EXPORT long ag_record_text(const ag_record *r);
AG_EXPORT size_t ag_record_rows(const ag_record *r);
AG_EXPORT size_t ag_record_cols(const ag_record *r);
/* The kind of metric m's value (an ag_value_kind: AG_V_ABSENT for an
 * unselected key and for m out of range), and the value in *value (0 unless
 * a number, integer or bool; value may be NULL). */
AG_EXPORT int ag_record_value(const ag_record *r, int m, double *value);

/* ---- lists of records --------------------------------------------------- */

/* Records in output order, owned by the list (opaque). Every function that
 * writes or tabulates several records takes one. */
typedef struct ag_record_list ag_record_list;

/* A new empty list (the caller's: ag_record_list_free); NULL when out of
 * memory. */
AG_EXPORT ag_record_list *ag_record_list_new(void);
AG_EXPORT void ag_record_list_free(ag_record_list *list); /* NULL is fine */
/* Append a record, as ag_record_init(r, 0, 0, 0, 0) leaves it, and return
 * it (owned by the list); NULL with AG_ENOMEM in err when out of memory.
 * Records are stored together: a record pointer of the list stays valid
 * until the list grows again (ag_record_list_add, ag_record_list_move) or
 * is cleared or freed; look records up again by index after that. */
AG_EXPORT ag_record *ag_record_list_add(ag_record_list *list, ag_error *err);
/* Move every record of src to the end of dst, in order; src is left empty.
 * AG_ENOMEM (both unchanged). */
AG_EXPORT int ag_record_list_move(ag_record_list *dst, ag_record_list *src, ag_error *err);
/* Remove every record (the memory is kept for the next ones). */
AG_EXPORT void ag_record_list_clear(ag_record_list *list);
/* The number of records; 0 for NULL. */
AG_EXPORT size_t ag_record_list_count(const ag_record_list *list);
/* Record i (borrowed from list), NULL for i out of range. */
AG_EXPORT const ag_record *ag_record_list_get(const ag_record_list *list, size_t i);
/* The same, to change it (to fill records added beforehand from several
 * threads, each its own). */
AG_EXPORT ag_record *ag_record_list_at(ag_record_list *list, size_t i);

/* ---- the matrix metrics ------------------------------------------------- */

/* Compute the selected metrics of families A, B and C (and F, see
 * ag_matrix_metrics_ex, L and M) of the m×n matrix M
 * (row-major, borrowed) into rec (whose layer/head the caller sets; rows and
 * cols are set here). Keys that do not apply are AG_V_NULL as docs/metrics.md says
 * (so are family B's token-pattern keys, which need the token ids:
 * ag_token_pattern_metrics fills them, and, for m ≠ n — cross-attention,
 * m targets over n sources — the keys of a square matrix only: family B's
 * eigenvalue, transpose, diagonal and positional keys, families F and L);
 * unselected keys are AG_V_ABSENT.
 *
 * One SVD (singular values only) serves every family-A key; family B uses the
 * diagonal as eigenvalues when M is causal (lower triangular), the
 * eigenvalues of its Hessenberg form otherwise (once for lambda2_abs,
 * spectral_gap and lambda2_condition), λ₂'s left and right eigenvectors
 * alone for lambda2_condition, and a symmetric eigensolver for one
 * eigenvalue of the Laplacian; family C's σ₁ comes from Lanczos
 * (ag_svd_max), not from an SVD (docs/performance.md, "Floors of the
 * matrix metrics"). Every buffer comes from one workspace (a temporary one
 * here; ag_matrix_metrics_work reuses the caller's). Thread-safe: a call
 * touches nothing but its arguments.
 * Errors: AG_ENONFINITE if M holds NaN/Inf, AG_EINVAL for m or n = 0,
 * AG_ENOMEM, AG_ELAPACK. */
AG_EXPORT int ag_matrix_metrics(const double *M, size_t m, size_t n,
                                const ag_metric_set *sel, ag_record *rec, ag_error *err);

typedef struct ag_pool ag_pool;       /* attngeom/parallel.h */
typedef struct ag_workers ag_workers; /* attngeom/parallel.h */

/* Options of the matrix metrics. Carries its size (ABI rule, core.h):
 * start from AG_MATRIX_OPTIONS_DEFAULT. */
typedef struct {
    size_t size;           /* sizeof(ag_matrix_options), set by the macro */
    double edge_threshold; /* family F: edge iff W_ij >= τ; < 0 means 1/n */
    ag_pool *pool;         /* family F: its edges on these threads (borrowed; NULL: the
                            * calling thread; ag_curvature_metrics_ex) */
    ag_workers *workers;   /* family F: its edges on these workers' pool and
                            * workspaces, in place of pool (borrowed; NULL: use pool;
                            * ag_curvature_options.workers) */
} ag_matrix_options;
#define AG_MATRIX_OPTIONS_DEFAULT {.size = sizeof(ag_matrix_options), .edge_threshold = -1}

/* ag_matrix_metrics with options (NULL: the defaults), and family F (docs/metrics.md,
 * family F; attngeom/curvature.h) for the selected curvature keys: null for a
 * non-square M or one with a negative entry. ag_matrix_metrics(...) is
 * ag_matrix_metrics_ex(..., NULL, ...). Also AG_EINVAL for an edge
 * threshold above 1 or NaN. */
AG_EXPORT int ag_matrix_metrics_ex(const double *M, size_t m, size_t n,
                                   const ag_metric_set *sel, const ag_matrix_options *opt,
                                   ag_record *rec, ag_error *err);

/* Scratch memory of the matrix metrics, for computing them on many
 * matrices: every buffer is allocated once, grown when a larger matrix needs
 * more, and reused (a pass over the heads of a model allocates once per
 * workspace, not once per head). A workspace belongs to one thread at a
 * time: give each worker thread its own. Results are bit-identical whether
 * a workspace is fresh or has served other matrices before. */
typedef struct ag_matrix_work ag_matrix_work; /* opaque; grows as needed */
AG_EXPORT int ag_matrix_work_new(ag_matrix_work **out, ag_error *err);
AG_EXPORT void ag_matrix_work_free(ag_matrix_work *w); /* NULL is fine */

/* ag_matrix_metrics_ex with a workspace; work NULL uses a temporary one
 * (ag_matrix_metrics_ex(...) is ag_matrix_metrics_work(..., NULL, ...)). */
AG_EXPORT int ag_matrix_metrics_work(const double *M, size_t m, size_t n, const ag_metric_set *sel,
                                     const ag_matrix_options *opt, ag_matrix_work *work, ag_record *rec,
                                     ag_error *err);

/* ---- head detectors that need the token ids ----------------------------- */

/* The token-pattern keys of family B (docs/metrics.md, family B, "Head
 * detectors") of the n×n row-major attention matrix A (query rows, key
 * columns, borrowed) of a text whose token ids are ids[0..n-1]:
 * duplicate_token_score, induction_score and their uniform-attention
 * baselines duplicate_token_baseline, induction_baseline, for the keys
 * selected in sel (the others are left as they are). The detection patterns
 * D are TransformerLens's (transformer_lens/head_detector.py,
 * get_duplicate_token_head_detection_pattern and
 * get_induction_head_detection_pattern): D_ij = 1 iff j < i and
 * ids[j] = ids[i] (duplicate), iff 1 ≤ j ≤ i and ids[j−1] = ids[i]
 * (induction). The score is their "mul" measure (compute_head_attention_
 * similarity_score, exclude_bos and exclude_current_token False, A used as
 * given) over the rows R where D has a 1: Σ_{i∈R} Σ_j A_ij D_ij /
 * Σ_{i∈R} Σ_j A_ij; the baseline is that score for attention uniform over
 * the k_i keys row i may attend to, mean over R of (Σ_j D_ij)/k_i.
 * causal: 1 or 0 for k_i = i + 1 or n; < 0 to detect it from A as the key
 * `causal` does (every entry above the diagonal exactly 0, n ≥ 2). Both
 * patterns have their 1s in the same rows, as many per row (D_ind is D_dup
 * moved one column right), so R and the two baselines are the same. ids
 * NULL: every selected key null (as ag_matrix_metrics, which has no ids,
 * leaves them). Null also when R is empty (no token id occurs twice), and
 * a score when Σ_{i∈R} Σ_j A_ij = 0. Sets nothing else of rec: call it
 * after ag_matrix_metrics on the same A. Thread-safe. Errors: AG_EINVAL
 * for A NULL or n = 0, AG_ENONFINITE for NaN/Inf in A (naming the entry). */
AG_EXPORT int ag_token_pattern_metrics(const double *A, size_t n, int causal, const int32_t *ids,
                                       const ag_metric_set *sel, ag_record *rec, ag_error *err);

/* The induction probe's scores (`attngeom heads --probe induction`;
 * docs/metrics.md, "The induction probe") of the n×n row-major attention A
 * (borrowed) of a sequence whose positions start .. start + R·T − 1 hold a
 * block of T = length tokens repeated R = repeats times (Olsson et al.
 * 2022): induction_score = the mean over the rows i of blocks 2..R
 * (i = start + b·T + t, 1 ≤ b < R, 0 ≤ t < T) of A_{i, i−T+1}, the key
 * right after the previous copy of row i's token; induction_baseline = the
 * mean of 1/k_i over the same rows, its value under attention uniform over
 * the k_i allowed keys (causal as ag_token_pattern_metrics says). Sets
 * those two keys of rec, nothing else. Thread-safe. Errors: AG_EINVAL for A
 * or rec NULL, n = 0, length 0, repeats < 2 or blocks past n;
 * AG_ENONFINITE for NaN/Inf in A (naming the entry). */
AG_EXPORT int ag_induction_probe_metrics(const double *A, size_t n, int causal, size_t start,
                                         size_t length, int repeats, ag_record *rec,
                                         ag_error *err);

/* ---- head similarity ---------------------------------------------------- */

/* The Jensen–Shannon distance between two heads' attention on the same
 * tokens, averaged over the rows (Clark et al. 2019, §6; docs/metrics.md,
 * "Head similarity"): *dist = (1/rows) Σ_i √JSD(A_i, B_i) with
 * JSD(p, q) = ½ Σ_j [p_j ln(p_j/m_j) + q_j ln(q_j/m_j)], m = (p + q)/2,
 * natural logarithms (each row's distance lies in [0, √ln 2]) and
 * 0·ln 0 = 0. A and B are (rows, cols) row-major, used as given (not
 * renormalised). Symmetric in A and B, and exactly 0 for equal rows.
 * Errors: AG_EINVAL for rows or cols 0 or an entry outside [0, 1],
 * AG_ENONFINITE for NaN/Inf. */
AG_EXPORT int ag_js_distance(const double *A, const double *B, size_t rows, size_t cols, double *dist,
                             ag_error *err);

/* ---- building blocks (also used by tests and other modules) ------------- */
/* The LAPACK wrappers below return AG_OK, AG_ENOMEM, AG_ELIMIT, AG_ELAPACK,
 * or AG_ENONFINITE for an input holding NaN or Inf (never handed to LAPACK,
 * which may then fail to return or corrupt memory). */

/* Singular values of the m×n row-major M, descending, into sigma[min(m,n)].
 * LAPACK dgesdd with JOBZ='N'. M is not modified. */
AG_EXPORT int ag_svd_values(const double *M, size_t m, size_t n, double *sigma);

/* σ₁, the largest singular value of the m×n row-major M, without an SVD:
 * Lanczos with full reorthogonalisation on MᵀM (or MMᵀ, whichever is
 * smaller), stopping when the top Ritz value θ has residual bound
 * β_k·|s_k| ≤ 4ε·θ, so that σ₁² = θ to a few units in the last place
 * (docs/metrics.md, family C, pc1_share; Golub & Van Loan §10.1). When
 * that takes more than 128 steps, LAPACK dgesdd gives σ₁ instead. *steps
 * (may be NULL) is the number of Lanczos steps, each one product with M
 * and one with Mᵀ; 0 when dgesdd was used. M is not modified. */
AG_EXPORT int ag_svd_max(const double *M, size_t m, size_t n, double *sigma1, int *steps);

/* Eigenvalues of the n×n row-major A (general, real) as (re, im) pairs,
 * sorted by modulus, largest first. LAPACK dgeev without vectors. */
AG_EXPORT int ag_eig_general_values(const double *A, size_t n, double *re, double *im);

/* Sort eigenvalue pairs in place by modulus, largest first (ties: larger
 * real part first). */
AG_EXPORT int ag_eig_sort_by_modulus(double *re, double *im, size_t n);

/* Eigenvalues of the general n×n row-major A sorted as above (ties broken
 * by the original order), with rcond[i] = |y_iᴴx_i| for unit left/right
 * eigenvectors (LAPACK dgeevx, BALANC='N', RCONDE): the eigenvalue's
 * condition number is 1/rcond[i]. */
AG_EXPORT int ag_eig_general_condition(const double *A, size_t n, double *re, double *im,
                                       double *rcond);

/* The same for a lower-triangular L (n ≥ 2) without an eigensolver: the
 * eigenvalues are its diagonal (sorted into re/im) and *rcond2 = |y₂ᴴx₂|
 * for λ₂ = the second of them, from eigenvectors back-substituted by LAPACK
 * dtrevc. */
AG_EXPORT int ag_eig_triangular_condition(const double *L, size_t n, double *re, double *im,
                                          double *rcond2);

/* The k-th smallest (1-based) eigenvalue of the symmetric n×n row-major S.
 * LAPACK dsyevr with RANGE='I'. */
AG_EXPORT int ag_eig_symmetric_kth(const double *S, size_t n, size_t k, double *value);

/* Family A from singular values (descending, q of them) of an m×n matrix. */
AG_EXPORT void ag_spectrum_from_sigma(const double *sigma, size_t q, size_t m, size_t n,
                                      const ag_metric_set *sel, ag_record *rec);
/* The same into the six keys starting at `first` (AG_M_SIGMA_MAX,
 * AG_M_QK_SIGMA_MAX or AG_M_OV_SIGMA_MAX), which follow family A's order. */
AG_EXPORT void ag_spectrum_keys(const double *sigma, size_t q, size_t m, size_t n,
                                ag_metric first, const ag_metric_set *sel, ag_record *rec);

/* ---- family D: weight space of one head, in factored form ------------- */

/* One head's factors, row-major with row strides (so a head's column block
 * of a wider projection is used in place). W_Q, W_K, W_V are (d, d_h) in the
 * x ↦ xW convention; W_O is (d_h, d_out). wv/wo may be NULL: the OV keys are
 * then null. */
typedef struct {
    size_t d, d_h, d_out;
    const double *wq; size_t ldq;
    const double *wk; size_t ldk;
    const double *wv; size_t ldv;
    const double *wo; size_t ldo;
} ag_head_factors;

/* docs/metrics.md, family D for one head without forming a d×d product: singular values of
 * M_QK = W_Q W_Kᵀ from the core R_Q R_Kᵀ of thin QR factorisations, those of
 * M_OV = W_V W_O from R_V R_Oᵀ (W_Oᵀ = Q_O R_O), eigenvalues of M_OV from
 * the d_h×d_h W_O W_V, and the symmetry score from
 * tr(M²) = tr((W_KᵀW_Q)²) and ‖M‖_F = ‖R_Q R_Kᵀ‖_F. O(d·d_h²) per head.
 * rec->rows = rec->cols = d. Errors: AG_EINVAL (zero sizes, missing W_Q/W_K),
 * AG_ENONFINITE, AG_ENOMEM, AG_ELAPACK. */
AG_EXPORT int ag_weight_metrics(const ag_head_factors *f, const ag_metric_set *sel,
                                ag_record *rec, ag_error *err);

/* ---- family H: value norms of one head ---------------------------------- */

/* docs/metrics.md, family H (Kobayashi et al. 2020, "Attention is Not Only
 * a Weight", §3): norms[j] = ‖f(x_j)‖₂ for the n rows x_j of X (n, f->d,
 * row-major, borrowed), f(x) = (x W_V + b_V) W_O with the head's W_V
 * (f->d, f->d_h; row stride ldv), b_V (d_h, or NULL: none) and its rows of
 * the output projection W_O (f->d_h, f->d_out; row stride ldo) — what
 * ag_attn_weights_head_factors gives for a query head (its key/value
 * head's W_V under grouped-query attention). f->wq and f->wk are not read.
 * norms is the caller's (n doubles). Thread-safe. Errors: AG_EINVAL (NULL
 * X, W_V, W_O or norms, a zero size, a stride below its width),
 * AG_ELIMIT (n·(d_h + d_out) doubles beyond the address space), AG_ENOMEM,
 * AG_ENONFINITE (a norm not finite: NaN/Inf in X or the weights, or an
 * overflow; the message names the token). */
AG_EXPORT int ag_value_norms(const ag_head_factors *f, const double *bv, const double *x,
                             size_t n, double *norms, ag_error *err);

/* The selected keys of family H of one head from its n×n attention A
 * (row-major, borrowed) and the norms ‖f(x_j)‖ of ag_value_norms:
 * value_norm_mean, value_norm_cv, sink_value_ratio and
 * norm_attention_shift (with N_ij = A_ij·norms[j]), as docs/metrics.md
 * defines them; nothing else of rec is touched. Thread-safe. Errors:
 * AG_EINVAL (NULL arguments, n = 0, a negative entry of A or norms),
 * AG_ENONFINITE (NaN/Inf in A, naming the entry). */
AG_EXPORT int ag_value_metrics(const double *A, size_t n, const double *norms,
                               const ag_metric_set *sel, ag_record *rec, ag_error *err);

/* ag_value_metrics of an m×n A (m queries over n keys, row-major: a
 * cross-attention's n_tgt × n_src) with norms (n) of the keys' f(x_j) —
 * for cross-attention the source tokens' (V from the encoder output):
 * value_norm_mean, value_norm_cv and sink_value_ratio over the n keys,
 * norm_attention_shift over the m rows. m = n is ag_value_metrics.
 * Errors as ag_value_metrics' (AG_EINVAL for m or n 0). */
AG_EXPORT int ag_value_metrics_rect(const double *A, size_t m, size_t n, const double *norms,
                                    const ag_metric_set *sel, ag_record *rec, ag_error *err);

/* ---- output ------------------------------------------------------------- */

typedef enum {
    AG_FORMAT_TABLE, AG_FORMAT_JSON, AG_FORMAT_CSV, AG_FORMAT_TSV,
    AG_FORMAT_MD, AG_FORMAT_LATEX,
    AG_FORMAT_JSONL, /* one JSON record per line (records.h) */
    AG_FORMAT_COUNT
} ag_format;

/* Parse "table", "json", "csv", "tsv", "md", "latex", "jsonl"; -1 if unknown. */
AG_EXPORT int ag_format_from_name(const char *name);

/* Extra top-level information written with the records (JSON keys, table
 * caption). All fields optional (NULL). Carries its size (ABI rule,
 * core.h): start from AG_OUTPUT_META_DEFAULT; a NULL meta is none. */
typedef struct {
    size_t size;          /* sizeof(ag_output_meta), set by the macro */
    const char *command;  /* "matrix", "analyze", ... */
    const char *source;   /* input file or model */
    const char *settings; /* the text of a JSON object: more keys of the
                             "settings" JSON and JSONL write (records.h) */
    size_t width;         /* the table format's line width in characters
                             (records.h, ag_table_write): 0, the default,
                             is no limit; the other formats ignore it.
                             Library code reads no environment: the
                             caller finds the terminal's width. */
    const char *caption;  /* LaTeX: a table float with this \caption
                             (LaTeX source, written as given) */
    const char *tex_label; /* LaTeX: a table float with this \label */
    int digits;           /* significant digits of the human formats'
                             plain numbers (table, md, latex), 1..17; 0:
                             the default, 6 */
    int keep_constant;    /* md, latex: 1 keeps every column; 0, the
                             default, leaves out the identifying columns
                             (model, layer, head, text, input, rows, cols,
                             n, n_units, unit; a probe's length, repeats,
                             seed) that hold one value in every
                             row, named with it in a comment line above
                             the table. A table written in parts
                             (ag_table_write_parts) keeps them all. */
} ag_output_meta;
#define AG_OUTPUT_META_DEFAULT {.size = sizeof(ag_output_meta)}

/* Write records in the given format. The columns are layer, head, rows,
 * cols, the selected metrics in §3 order, then text when any record has one. Returns AG_EIO if a
 * write fails. */
AG_EXPORT int ag_records_write(FILE *fp, ag_format fmt, const ag_record_list *recs,
                               const ag_metric_set *sel, const ag_output_meta *meta);

#ifdef __cplusplus
}
#endif
#endif
