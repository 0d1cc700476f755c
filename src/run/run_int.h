/* Internal prefix: agr_ (module src/run/). */
/* run_int.h — what the run module's files share: the layout of
 * ag_run_options, private to the library. The other parts of
 * attngeom/access.h live in the modules they serve (base/errors.c,
 * engine/, stats/access.c, records/table.c). */
#ifndef AG_RUN_INT_H
#define AG_RUN_INT_H

#include "../../analysis/metrics_int.h"

struct ag_run_options {
    int threads;
    ag_precision precision;
    double edge_threshold, epsilon;
    int trials;
    unsigned long seed;
    double massive_abs, massive_ratio; /* family I's thresholds (Sun et al. 2024, §2) */
    int flow_max_tokens; /* attention flow's n cap (n² max-flows a layer: performance.md) */
    int *layers, *heads; /* selected indices, sorted, no repeats; NULL: all */
    size_t nlayers, nheads;
    const ag_metric_set *metrics; /* borrowed; NULL: the entry point's default */
    const ag_run_dist *dist;      /* borrowed; NULL: one process */
    int normalizer;               /* ag_normalizer: the probabilities analyze
                                     measures, from the pass's scores */
    double normalizer_param;      /* softmax: T (1 with softmax: the model's own
                                     probabilities); entmax: α */
    double temperatures[AG_TEMPERATURES_MAX]; /* ag_run_options_set_temperatures */
    size_t ntemperatures;         /* 0: the one normaliser above */
};
#define AGR_OPTIONS_DEFAULT                                                                  \
    {.threads = 1, .precision = AG_PRECISION_F32, .edge_threshold = -1, .epsilon = 1e-3,    \
     .trials = 8, .seed = 1, .massive_abs = 100, .massive_ratio = 1000,                    \
     .flow_max_tokens = 64, .normalizer = AG_NORMALIZER_SOFTMAX, .normalizer_param = 1}

/* Keys per query of L's heads: its n_kv, or n (square) when 0. */
static inline size_t agr_layer_cols(const ag_run_layer_heads *L)
{
    return L->n_kv ? L->n_kv : L->n;
}

/* A normaliser other than the model's softmax at T = 1 is set (options.c). */
static inline int agr_lens_active(const ag_run_options *o)
{
    return o->normalizer != AG_NORMALIZER_SOFTMAX || o->normalizer_param != 1;
}

/* ag_run_forward with opt's normaliser (lens.c): when one other than the
 * model's softmax is set, fn sees every layer's heads under it (from the
 * same pass's scores, or linear attention from Q and K) in place of
 * ag_layer_view.attn; a failure of the lens is "layer L: <message>". */
int agr_forward(const ag_model *m, const ag_run_input *in, const ag_forward_options *fo,
                const ag_run_options *opt, ag_layer_fn fn, void *user, double *hidden,
                ag_error *err);
/* agr_forward on ag_run_forward_seq2seq: an encoder–decoder pair's views
 * (rectangular cross-attention rows too) under opt's normaliser, both
 * stacks' hidden states (enc_hidden, dec_hidden, each may be NULL). */
int agr_forward_pair(const ag_model *m, const ag_run_input *in, const ag_forward_options *fo,
                     const ag_run_options *opt, ag_layer_fn fn, void *user, double *enc_hidden,
                     double *dec_hidden, ag_error *err);

/* A run of records under each of opt's temperatures in turn (lens.c): fn
 * with a copy of opt at softmax(S/T[k]) and no list, appending to a list
 * of its own (NULL on entry), whose records are stamped with T[k] and
 * moved to the end of *out (made when NULL) in the order of the list;
 * without a list, fn once with opt and out. On failure *out may hold the
 * records of the temperatures before (the caller frees it). */
typedef int (*agr_records_fn)(const ag_run_options *opt, void *user, ag_record_list **list,
                              ag_error *err);
int agr_each_temperature(const ag_run_options *opt, agr_records_fn fn, void *user,
                         ag_record_list **out, ag_error *err);

/* ---- distribution (tasks.c) ---------------------------------------------- */

/* A run's share of a distribution: which rank runs which item. */
typedef struct agr_share {
    ag_run_dist d;           /* the distribution's, read by its size */
    const ag_run_dist *dist; /* &d, or NULL: every item runs here (no
                                distribution, or a run inside a distributed
                                run's work) */
    const ag_run_dist *given;   /* the options' (the key of a run under way) */
    struct agr_share *next; /* the next distributed run under way (tasks.c) */
    int *owner;              /* (count) ag_run_assign's */
    size_t *mine;            /* (nmine) this rank's items, increasing */
    size_t nmine;
} agr_share;

/* Start the share of a run of count items of cost cost[] (NULL: all 1)
 * under opt's distribution: through the gate (AG_EIO when another rank
 * failed), the items assigned. s->dist stays NULL when opt has none or a
 * run over the same distribution is under way in this process already
 * (only the outermost run is spread; the runs its work makes stay on its
 * rank). s must stay where it is until agr_share_end, to be called in any
 * case. */
int agr_share_begin(agr_share *s, const ag_run_options *opt, const uint64_t *cost,
                    size_t count, ag_error *err);
void agr_share_end(agr_share *s);
/* Item k's result to the root. AG_OK, AG_ENOMEM or AG_EIO. */
int agr_share_send(const agr_share *s, size_t k, const ag_run_result *res, ag_error *err);
/* The root: the next result from another rank, unpacked into *res, its
 * item in *k (< count, another rank's); *got 0 when none has come (wait
 * 0). AG_OK, or AG_EIO / AG_EINVAL / AG_ENOMEM (err set). */
int agr_share_receive(const agr_share *s, size_t count, int wait, int *got, size_t *k,
                      ag_run_result *res, ag_error *err);

/* Run t's tasks here (ag_run_tasks_run without a distribution). */
int agr_tasks_local(ag_workers *w, const ag_run_tasks *t);

/* Workers (attngeom/parallel.h) for the tasks of one call: opt's threads,
 * no more than there are tasks. */
int ag_run_workers(const ag_run_options *opt, size_t tasks, ag_workers **w, ag_error *err);

/* The most tokens m takes (0: no limit) and the config field behind it,
 * "n_positions = 1024", into why (inputs.c). */
size_t agr_positions(const ag_model *m, char why[96]);

/* Family H: the value norms ‖f_h(x_j)‖ (n) of query head h of a layer's
 * weights w on its input x (n, d) (values.c). ag_value_norms's errors. */
int agr_head_value_norms(const ag_attn_weights *w, const double *x, size_t n, size_t d, int h,
                         double *norms, ag_error *err);

/* What a model layer's heads have beyond their input (ag_head_extra): the
 * QK-norm of each head, the model's yarn/longrope parameters, with
 * GPT-J's pairs already rotate-half in ag_model_attn_weights' w, and
 * ALiBi's kind and slopes (head_extra.c). */
typedef struct {
    ag_array gq, gk;        /* the layer's QK-norm scales, or empty */
    ag_head_qk_norm *qk;    /* (n_head), NULL without a QK-norm */
    ag_rope_extra rope;
    ag_alibi_kind alibi;    /* cfg.alibi */
    const double *slopes;   /* (n_head) ag_model_alibi_slopes, m's; NULL without ALiBi */
    const double *bias;     /* (n_head, n, n) T5's position bias (agr_layer_extra_bias), or NULL */
    size_t n;
} agr_layer_extra;

/* Fill *x for `layer` of m, whose attention weights are w (ALiBi's slopes
 * m's own, ag_model_alibi_slopes: x must not outlive m). AG_ENOMEM or
 * ag_model_qk_norm's errors; *x is to be freed with agr_layer_extra_free
 * in every case. */
int agr_layer_extra_init(agr_layer_extra *x, const ag_model *m, int layer,
                         const ag_attn_weights *w, ag_error *err);
/* T5's position bias of one stack over n tokens (n_head, n, n), built at
 * the first layer that asks and shared by the stack's others: T5 has one
 * table per stack (Raffel et al. 2020, §2.1; modeling_t5.py: layer 0's
 * relative_attention_bias, its position_bias passed on to every later
 * layer). Zero-initialised; freed by agr_stack_bias_free. */
typedef struct {
    double *bias;
    size_t n;
} agr_stack_bias;
void agr_stack_bias_free(agr_stack_bias *b);
/* x's position bias over n tokens (ag_model_position_bias of each of m's
 * heads, formed in the stack's b unless b holds it for n already; x points
 * into b, which must outlive it) when m has T5's relative positions;
 * nothing otherwise. AG_OK, AG_ENOMEM. */
int agr_layer_extra_bias(agr_layer_extra *x, agr_stack_bias *b, const ag_model *m, size_t n,
                         ag_error *err);
/* Head h's extras, pointing into x. */
void agr_layer_extra_head(const agr_layer_extra *x, int h, ag_head_extra *ex);
void agr_layer_extra_free(agr_layer_extra *x);

/* opt, or (NULL) the defaults (AGR_OPTIONS_DEFAULT). */
/* The run of the heads of v's layer on the matrices attn (n_head, n, n):
 * v's sizes and layer, records of text `text`, the selected heads (NULL:
 * all); no family E, H or token ids (heads.c). */
ag_run_layer_heads agr_layer_heads(const ag_layer_view *v, const double *attn, long text,
                                   const ag_selection *heads);
const ag_run_options *agr_options(const ag_run_options *opt);
/* opt's selected layers over m's n_layer and heads over its n_head, both
 * the caller's to free (also on failure). */
int agr_model_selections(const ag_model *m, const ag_run_options *opt, ag_selection **layers,
                         ag_selection **heads, ag_error *err);
/* What a run computes: opt's metrics, or (none set) a new set of
 * `families` into *own, the caller's to free. */
int agr_metrics(const ag_run_options *opt, unsigned families, const ag_metric_set **sel,
                ag_metric_set **own, ag_error *err);
/* The workers of a call: w, or (NULL) new ones for `tasks` tasks of opt
 * into *own, the caller's to free. */
int agr_workers(ag_workers *w, const ag_run_options *opt, size_t tasks, ag_workers **use,
                ag_workers **own, ag_error *err);

#endif
