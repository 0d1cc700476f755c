/* options.c — ag_run_options (attngeom/access.h, attngeom/run.h): every
 * option a run computes with, one object filled by the CLI from argv, by
 * Python from keyword arguments; the workers of one call; the input and
 * forward pass of a model run. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "run_int.h"
#include "base/sized_int.h"
#include "select_int.h"

/* ---- options of a run --------------------------------------------------- */

ag_run_options *ag_run_options_new(void)
{
    ag_run_options *o = calloc(1, sizeof *o);
    if (o)
        *o = (ag_run_options)AGR_OPTIONS_DEFAULT;
    return o;
}

void ag_run_options_free(ag_run_options *opt)
{
    if (opt) {
        free(opt->layers);
        free(opt->heads);
    }
    free(opt);
}

static int is_integer(double v, double lo, double hi)
{
    return v >= lo && v <= hi && v == floor(v);
}

int ag_run_options_set(ag_run_options *opt, const char *key, double v, ag_error *err)
{
    const char *k = key ? key : "(null)";
    int ok = 1;
    if (strcmp(k, "threads") == 0 && (ok = is_integer(v, 1, AG_POOL_THREADS_MAX)))
        opt->threads = (int)v;
    else if (strcmp(k, "precision") == 0 && (ok = v == 32 || v == 64))
        opt->precision = v == 64 ? AG_PRECISION_F64 : AG_PRECISION_F32;
    else if (strcmp(k, "edge_threshold") == 0 && (ok = v == -1 || (v >= 0 && v <= 1)))
        opt->edge_threshold = v;
    else if (strcmp(k, "epsilon") == 0 && (ok = v > 0 && isfinite(v)))
        opt->epsilon = v;
    else if (strcmp(k, "trials") == 0 && (ok = is_integer(v, 1, 1 << 30)))
        opt->trials = (int)v;
    else if (strcmp(k, "seed") == 0 && (ok = is_integer(v, 0, 9007199254740992.0)))
        opt->seed = (unsigned long)v;
    else if (strcmp(k, "massive_abs") == 0 && (ok = v >= 0 && isfinite(v)))
        opt->massive_abs = v;
    else if (strcmp(k, "massive_ratio") == 0 && (ok = v >= 0 && isfinite(v)))
        opt->massive_ratio = v;
    else if (strcmp(k, "flow_max_tokens") == 0 && (ok = is_integer(v, 1, 1 << 20)))
        opt->flow_max_tokens = (int)v;
    else if (ok)
        return ag_error_set(err, AG_EINVAL, "unknown option '%s' (threads, precision, "
                            "edge_threshold, epsilon, trials, seed, massive_abs, "
                            "massive_ratio, flow_max_tokens)", k);
    return ok ? AG_OK : ag_error_set(err, AG_EINVAL, "option %s: %.17g is out of range", k, v);
}

int ag_run_options_select(ag_run_options *opt, const char *what, const int *idx, size_t count,
                          ag_error *err)
{
    int layers = what && strcmp(what, "layers") == 0;
    if (!layers && !(what && strcmp(what, "heads") == 0))
        return ag_error_set(err, AG_EINVAL, "select takes \"layers\" or \"heads\"");
    int *sorted = NULL;
    size_t n = 0;
    int status = agr_select_unique(idx, count, what, &sorted, &n, err);
    if (status != AG_OK)
        return status;
    free(layers ? opt->layers : opt->heads);
    *(layers ? &opt->layers : &opt->heads) = sorted;
    *(layers ? &opt->nlayers : &opt->nheads) = n;
    return AG_OK;
}

int ag_run_options_set_selection(ag_run_options *opt, const char *what, const ag_selection *sel,
                                 ag_error *err)
{
    return ag_run_options_select(opt, what, ag_selection_indices(sel), ag_selection_count(sel),
                                 err);
}

/* ---- workers ------------------------------------------------------------ */

int ag_run_workers(const ag_run_options *opt, size_t tasks, ag_workers **w, ag_error *err)
{
    int threads = opt ? opt->threads : 1;
    if ((size_t)threads > tasks)
        threads = tasks ? (int)tasks : 1;
    return ag_workers_new(threads, w, err);
}


void ag_run_options_set_metrics(ag_run_options *opt, const ag_metric_set *sel)
{
    opt->metrics = sel;
}

int ag_run_options_set_normalizer(ag_run_options *opt, ag_normalizer kind, double param,
                                  ag_error *err)
{
    if (!opt)
        return ag_error_set(err, AG_EINVAL, "no run options (NULL)");
    /* a row of two scores checks the kind and its parameter as a run will use them */
    double s[2] = {0, 1}, p[2];
    int rc = kind == AG_NORMALIZER_LINEAR ? AG_OK : ag_normalize_row(kind, param, s, 2, p, err);
    if (rc != AG_OK)
        return rc;
    opt->normalizer = (int)kind;
    opt->ntemperatures = 0; /* the last normaliser set is the run's */
    opt->normalizer_param = kind == AG_NORMALIZER_SOFTMAX || kind == AG_NORMALIZER_ENTMAX ? param : 1;
    return AG_OK;
}

int ag_run_options_set_temperatures(ag_run_options *opt, const double *T, size_t count,
                                    ag_error *err)
{
    if (!opt || (!T && count))
        return ag_error_set(err, AG_EINVAL, "no %s (NULL)", opt ? "temperatures" : "run options");
    if (count > AG_TEMPERATURES_MAX)
        return ag_error_set(err, AG_EINVAL, "%zu temperatures: at most %d", count,
                            AG_TEMPERATURES_MAX);
    for (size_t k = 0; k < count; k++)
        if (!(T[k] > 0) || !isfinite(T[k]))
            return ag_error_set(err, AG_EINVAL, "temperature %.17g: expected a finite number > 0",
                                T[k]);
    if (count)
        memcpy(opt->temperatures, T, count * sizeof *T);
    opt->ntemperatures = count;
    if (count)
        opt->normalizer = AG_NORMALIZER_SOFTMAX;
    return AG_OK;
}

void ag_run_options_set_seed(ag_run_options *opt, unsigned long seed)
{
    opt->seed = seed;
}

const ag_metric_set *ag_run_options_metrics(const ag_run_options *opt)
{
    return opt ? opt->metrics : NULL;
}

void ag_run_options_set_dist(ag_run_options *opt, const ag_run_dist *d)
{
    opt->dist = d;
}

const ag_run_dist *ag_run_options_dist(const ag_run_options *opt)
{
    return opt ? opt->dist : NULL;
}

double ag_run_options_get(const ag_run_options *opt, const char *key)
{
    static const ag_run_options defaults = AGR_OPTIONS_DEFAULT;
    const ag_run_options *o = opt ? opt : &defaults;
    const char *k = key ? key : "";
    if (strcmp(k, "threads") == 0)
        return o->threads;
    if (strcmp(k, "precision") == 0)
        return o->precision == AG_PRECISION_F64 ? 64 : 32;
    if (strcmp(k, "edge_threshold") == 0)
        return o->edge_threshold;
    if (strcmp(k, "epsilon") == 0)
        return o->epsilon;
    if (strcmp(k, "trials") == 0)
        return o->trials;
    if (strcmp(k, "seed") == 0)
        return (double)o->seed;
    if (strcmp(k, "massive_abs") == 0)
        return o->massive_abs;
    if (strcmp(k, "massive_ratio") == 0)
        return o->massive_ratio;
    if (strcmp(k, "flow_max_tokens") == 0)
        return o->flow_max_tokens;
    return NAN;
}

int ag_run_options_selection(const ag_run_options *opt, const char *what, int count,
                             ag_selection **out, ag_error *err)
{
    *out = NULL;
    int layers = what && strcmp(what, "layers") == 0;
    if (!layers && !(what && strcmp(what, "heads") == 0))
        return ag_error_set(err, AG_EINVAL, "a selection of \"layers\" or \"heads\"");
    const int *idx = opt ? (layers ? opt->layers : opt->heads) : NULL;
    size_t n = opt ? (layers ? opt->nlayers : opt->nheads) : 0;
    return ag_selection_from_list(idx, n, count, what, out, err);
}

/* ---- the input and forward pass of a model run -------------------------- */

ag_forward_options ag_run_forward_options(const ag_run_options *opt, ag_workers *w)
{
    ag_forward_options fo = AG_FORWARD_OPTIONS_DEFAULT;
    fo.precision = opt ? opt->precision : AG_PRECISION_F32;
    fo.pool = w ? ag_workers_pool(w) : NULL;
    return fo;
}

/* The pass of an encoder–decoder model: m its encoder, in its source and
 * target (checked by ag_run_forward_seq2seq). */
static int forward_pair(const ag_seq2seq *s, const ag_run_input *in, const ag_forward_options *fo,
                        ag_layer_fn fn, void *user, double *enc_hidden, double *dec_hidden,
                        ag_error *err)
{
    if (in->ids)
        return ag_seq2seq_forward(s, in->ids, in->n, in->target, in->n_target, fo, fn, user,
                                  enc_hidden, dec_hidden, err);
    if (in->values)
        return ag_seq2seq_forward_values(s, in->values, in->ndim, in->shape, in->target,
                                         in->n_target, fo, fn, user, enc_hidden, dec_hidden,
                                         err);
    return ag_error_set(err, AG_EINVAL, "an input needs token ids or an input tensor");
}

int ag_run_forward_seq2seq(const ag_model *m, const ag_run_input *in,
                           const ag_forward_options *fo, ag_layer_fn fn, void *user,
                           double *enc_hidden, double *dec_hidden, ag_error *err)
{
    if (!m)
        return ag_error_set(err, AG_EINVAL, "no model (NULL)");
    ag_run_input given = AG_RUN_INPUT_DEFAULT; /* in NULL: neither ids nor values */
    int status = in ? AG_SIZED_READ(&given, in, ag_run_input, err) : AG_OK;
    if (status != AG_OK)
        return status;
    const ag_seq2seq *pair = ag_model_seq2seq(m);
    if (given.target && !pair)
        return ag_error_set(err, AG_EINVAL, "a target needs an encoder-decoder model (%s has "
                            "one stack)", ag_model_type(m));
    if (pair && !given.target)
        return ag_error_set(err, AG_EINVAL, "%s is an encoder-decoder model: it needs a target "
                            "(the decoder's input ids)", ag_model_type(m));
    if (pair)
        return forward_pair(pair, &given, fo, fn, user, enc_hidden, dec_hidden, err);
    if (dec_hidden)
        return ag_error_set(err, AG_EINVAL, "decoder hidden states of a model of one stack");
    if (given.ids)
        return ag_model_forward_ex(m, given.ids, given.n, fo, fn, user, enc_hidden, err);
    if (given.values)
        return ag_model_forward_values(m, given.values, given.ndim, given.shape, fo, fn, user,
                                       enc_hidden, err);
    return ag_error_set(err, AG_EINVAL, "an input needs token ids or an input tensor");
}

int ag_run_forward(const ag_model *m, const ag_run_input *in, const ag_forward_options *fo,
                   ag_layer_fn fn, void *user, double *hidden, ag_error *err)
{
    return ag_run_forward_seq2seq(m, in, fo, fn, user, hidden, NULL, err);
}

void ag_run_shift_right(const int32_t *labels, size_t n, int32_t start, int32_t *out)
{
    if (n == 0)
        return;
    memmove(out + 1, labels, (n - 1) * sizeof *out); /* labels may be out */
    out[0] = start;
}
