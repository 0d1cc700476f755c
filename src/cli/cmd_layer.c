/* cmd_layer.c — `attngeom layer`: one attention layer of any architecture,
 * from an input X (.npy) and Q/K(/V/O) tensors named in a safetensors file
 * (SPEC §1, "layer options"). This is how a model the engine does not know is
 * analysed: dump X, name the tensors. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char layer_help[] =
    "usage: attngeom layer --x X.npy --weights F.safetensors (--qkv NAME | --q NAME --k NAME [--v NAME])\n"
    "                      --heads H [options]\n"
    "\n"
    "Attention probabilities softmax(c (XW_Q + b_Q)(XW_K + b_K)^T + mask) of one\n"
    "layer, head by head, and their metrics (one record per head).\n"
    "\n"
    "  --x X.npy            layer input [n, d] (leading singleton dims ignored)\n"
    "  --weights F          safetensors file holding the tensors below\n"
    "  --qkv NAME           fused [d, 3*d_a] tensor, column blocks Q|K|V; head h is\n"
    "                       a contiguous block of d_a/H columns in each\n"
    "  --q/--k/--v NAME     separate [d, d_a] tensors\n"
    "  --o NAME             output projection [d_a, d_out] (checked; used by weights)\n"
    "  --qkv-bias NAME, --q-bias/--k-bias/--v-bias NAME   biases\n"
    "  --heads H            number of heads\n"
    "  --scale C            score scale (default 1/sqrt(d_a/H))\n"
    "  --causal             mask keys after the query\n"
    "  --linear             tensors are nn.Linear [out, in] (default [in, out], x -> xW)\n"
    "  --precision f32|f64  float32 products (default) or double throughout\n"
    "  --save-attention A.npy   also write the probabilities [H, n, n]\n"
    "  --metrics, --format, -o, --expect as for every command\n";

typedef struct {
    const char *x, *weights, *qkv, *q, *k, *v, *o, *qkv_bias, *q_bias, *k_bias,
        *v_bias, *save;
    int heads, causal, linear;
    double scale;
    ag_precision precision;
} layer_opts;

static int parse_int_option(const char *v, int *out)
{
    char *end;
    long x = strtol(v, &end, 10);
    if (end == v || *end || x <= 0 || x > 1 << 20)
        return -1;
    *out = (int)x;
    return 0;
}

/* String-valued options of this command. */
static const char **string_slot(layer_opts *o, const char *arg, const char **name)
{
    static const char *const names[] = {"--x", "--weights", "--qkv", "--q", "--k", "--v",
                                        "--o", "--qkv-bias", "--q-bias", "--k-bias",
                                        "--v-bias", "--save-attention"};
    const char **slots[] = {&o->x, &o->weights, &o->qkv, &o->q, &o->k, &o->v, &o->o,
                            &o->qkv_bias, &o->q_bias, &o->k_bias, &o->v_bias, &o->save};
    for (size_t k = 0; k < sizeof names / sizeof *names; k++)
        if (cli_is_option(arg, names[k])) {
            *name = names[k];
            return slots[k];
        }
    return NULL;
}

static int layer_option(layer_opts *o, int argc, char **argv, int *i)
{
    const char *a = argv[*i], *name, *v;
    const char **slot = string_slot(o, a, &name);
    if (slot)
        return (*slot = cli_option_value("layer", name, argc, argv, i)) ? 1 : -1;
    if (strcmp(a, "--causal") == 0)
        return o->causal = 1;
    if (strcmp(a, "--linear") == 0)
        return o->linear = 1;
    if (cli_is_option(a, "--heads")) {
        if (!(v = cli_option_value("layer", "--heads", argc, argv, i)))
            return -1;
        if (parse_int_option(v, &o->heads) != 0) {
            cli_usage_error("layer", "--heads takes a positive number of heads, not '%s'", v);
            return -1;
        }
        return 1;
    }
    if (cli_is_option(a, "--scale")) {
        if (!(v = cli_option_value("layer", "--scale", argc, argv, i)))
            return -1;
        if (cli_parse_double(v, &o->scale) != 0 || o->scale == 0) {
            cli_usage_error("layer", "--scale takes a positive number, not '%s'", v);
            return -1;
        }
        return 1;
    }
    return 0;
}

static int check_usage(const layer_opts *o)
{
    if (!o->x || !o->weights)
        return cli_usage_error("layer", "needs --x X.npy and --weights F.safetensors");
    if (!!o->qkv == !!(o->q || o->k))
        return cli_usage_error("layer", "give either --qkv NAME or --q NAME --k NAME");
    if (!o->qkv && (!o->q || !o->k))
        return cli_usage_error("layer", "--q and --k go together");
    if (o->qkv && o->v)
        return cli_usage_error("layer", "--v goes with --q/--k, not with --qkv");
    if (o->qkv_bias && (o->q_bias || o->k_bias || o->v_bias))
        return cli_usage_error("layer", "give either --qkv-bias or --q-bias/--k-bias/--v-bias");
    if (!o->heads)
        return cli_usage_error("layer", "missing --heads H");
    return 0;
}

/* The layer's tensors as [in, out] doubles. */
typedef struct {
    ag_array x, q, k, v, o, bq, bk, bv;
} layer_tensors;

static void tensors_free(layer_tensors *t)
{
    ag_array *all[] = {&t->x, &t->q, &t->k, &t->v, &t->o, &t->bq, &t->bk, &t->bv};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        ag_array_free(all[k]);
}

/* Read tensor `name`, squeeze leading singleton dims, and check its rank;
 * 2-D weights are transposed when --linear. */
static int read_tensor(const ag_safetensors *st, const char *path, const char *name,
                       int rank, int linear, ag_array *out)
{
    ag_error err = {0};
    if (ag_st_read(st, name, out, &err) != AG_OK)
        return cli_fail_error(&err);
    ag_array_squeeze_leading(out);
    if (out->ndim != rank)
        return cli_fail("%s: tensor '%s' has %d dimensions after dropping leading 1s; "
                        "expected %s", path, name, out->ndim, rank == 2 ? "a matrix" : "a vector");
    if (rank == 2 && linear && ag_array_transpose2d(out, &err) != AG_OK)
        return cli_fail("%s: tensor '%s': %s", path, name, err.message);
    return 0;
}

static int read_qkv(const ag_safetensors *st, const layer_opts *o, layer_tensors *t)
{
    ag_error err = {0};
    ag_array fused = {0};
    int rc = 0;
    if (o->qkv) {
        rc = read_tensor(st, o->weights, o->qkv, 2, o->linear, &fused);
        if (rc == 0 && ag_qkv_split(&fused, o->qkv, &t->q, &t->k, &t->v, &err) != AG_OK)
            rc = cli_fail("%s: %s", o->weights, err.message);
        ag_array_free(&fused);
    } else {
        rc = read_tensor(st, o->weights, o->q, 2, o->linear, &t->q);
        if (rc == 0)
            rc = read_tensor(st, o->weights, o->k, 2, o->linear, &t->k);
        if (rc == 0 && o->v)
            rc = read_tensor(st, o->weights, o->v, 2, o->linear, &t->v);
    }
    if (rc == 0 && o->qkv_bias) {
        rc = read_tensor(st, o->weights, o->qkv_bias, 1, 0, &fused);
        if (rc == 0 && ag_qkv_split(&fused, o->qkv_bias, &t->bq, &t->bk, &t->bv, &err) != AG_OK)
            rc = cli_fail("%s: %s", o->weights, err.message);
        ag_array_free(&fused);
    }
    const char *bias_names[3] = {o->q_bias, o->k_bias, o->v_bias};
    ag_array *bias[3] = {&t->bq, &t->bk, &t->bv};
    for (int b = 0; b < 3 && rc == 0; b++)
        if (bias_names[b])
            rc = read_tensor(st, o->weights, bias_names[b], 1, 0, bias[b]);
    if (rc == 0 && o->o)
        rc = read_tensor(st, o->weights, o->o, 2, o->linear, &t->o);
    return rc;
}

static int shape_error(const layer_opts *o, const char *name, const ag_array *a,
                       const char *expected)
{
    if (a->ndim == 1)
        return cli_fail("%s: tensor '%s' has shape (%zu,); expected %s", o->weights, name,
                        a->shape[0], expected);
    return cli_fail("%s: tensor '%s' has shape (%zu, %zu) as [in, out]; expected %s",
                    o->weights, name, a->shape[0], a->shape[1], expected);
}

/* Every shape must agree with X's width d and with d_a = Q's width. */
static int check_shapes(const layer_opts *o, const layer_tensors *t)
{
    size_t d = t->x.shape[1], da = t->q.shape[1];
    char want[96];
    snprintf(want, sizeof want, "(%zu, %zu) to match X's width %zu", d, da, d);
    const char *qn = o->qkv ? o->qkv : o->q, *kn = o->qkv ? o->qkv : o->k;
    if (t->q.shape[0] != d)
        return shape_error(o, qn, &t->q, want);
    if (t->k.shape[0] != d || t->k.shape[1] != da)
        return shape_error(o, kn, &t->k, want);
    if (t->v.data && t->v.shape[0] != d)
        return shape_error(o, o->qkv ? o->qkv : o->v, &t->v, want);
    if (da % (size_t)o->heads != 0)
        return cli_fail("%s: Q width %zu is not divisible by --heads %d", o->weights, da, o->heads);
    snprintf(want, sizeof want, "(%zu,)", da);
    const ag_array *b[2] = {&t->bq, &t->bk};
    const char *bn[2] = {o->qkv_bias ? o->qkv_bias : o->q_bias, o->qkv_bias ? o->qkv_bias : o->k_bias};
    for (int k = 0; k < 2; k++)
        if (b[k]->data && b[k]->shape[0] != da)
            return shape_error(o, bn[k], b[k], want);
    size_t dv = t->v.data ? t->v.shape[1] : da;
    snprintf(want, sizeof want, "(%zu, d_out) to match the value width %zu", dv, dv);
    if (t->o.data && t->o.shape[0] != dv)
        return shape_error(o, o->o, &t->o, want);
    return 0;
}

static int load_layer(const layer_opts *o, layer_tensors *t)
{
    ag_error err = {0};
    if (ag_npy_read(o->x, &t->x, &err) != AG_OK)
        return cli_fail_error(&err);
    ag_array_squeeze_leading(&t->x);
    if (t->x.ndim != 2 || ag_array_size(&t->x) == 0)
        return cli_fail("%s: X must be a non-empty 2-D array [n, d] (after dropping leading 1s), "
                        "it has %d dimensions", o->x, t->x.ndim);
    ag_safetensors *st = NULL;
    if (ag_st_open(o->weights, &st, &err) != AG_OK)
        return cli_fail_error(&err);
    int rc = read_qkv(st, o, t);
    ag_st_close(st);
    return rc ? rc : check_shapes(o, t);
}

static int layer_records(const layer_opts *o, const ag_array *attn, const cli_common *c,
                         cli_records *recs)
{
    size_t n = attn->shape[1];
    for (int h = 0; h < o->heads; h++) {
        ag_record *r = cli_records_add(recs);
        ag_error err = {0};
        if (!r)
            return cli_fail("out of memory");
        ag_record_init(r, 0, h, n, n);
        if (ag_matrix_metrics(attn->data + (size_t)h * n * n, n, n, &c->metrics, r, &err) != AG_OK)
            return cli_fail("head %d: %s", h, err.message);
    }
    return 0;
}

int cmd_layer(int argc, char **argv)
{
    cli_common common;
    cli_common_init(&common);
    layer_opts o = {0};
    cli_input prec = {0};
    for (int i = 1; i < argc; i++) {
        int used = layer_option(&o, argc, argv, &i);
        if (used == 0)
            used = cli_common_option(&common, "layer", argc, argv, &i);
        if (used == 0 && cli_is_option(argv[i], "--precision"))
            used = cli_input_option(&prec, "layer", 0, argc, argv, &i);
        if (used < 0)
            return EXIT_USAGE;
        if (used)
            continue;
        if (strcmp(argv[i], "--help") == 0)
            return fputs(layer_help, stdout), 0;
        return cli_usage_error("layer", "unknown argument '%s'", argv[i]);
    }
    int rc = check_usage(&o);
    if (rc)
        return rc;
    layer_tensors t = {0};
    ag_array attn = {0};
    cli_records recs = {0};
    rc = load_layer(&o, &t);
    if (rc == 0) {
        ag_error err = {0};
        ag_attn_layer_spec spec = {
            .x = t.x.data, .n = t.x.shape[0], .d = t.x.shape[1],
            .wq = t.q.data, .wk = t.k.data, .bq = t.bq.data, .bk = t.bk.data,
            .d_a = t.q.shape[1], .n_head = o.heads, .scale = o.scale,
            .causal = o.causal, .precision = prec.precision};
        if (ag_attention_layer(&spec, &attn, &err) != AG_OK)
            rc = cli_fail("%s: %s", o.weights, err.message);
    }
    if (rc == 0)
        rc = layer_records(&o, &attn, &common, &recs);
    if (rc == 0 && o.save) {
        ag_error err = {0};
        if (ag_npy_write(o.save, &attn, &err) != AG_OK)
            rc = cli_fail_error(&err);
    }
    if (rc == 0) {
        ag_output_meta meta = {.command = "layer", .source = o.weights};
        rc = cli_emit(&common, recs.items, recs.count, &meta);
        if (rc == 1 && o.save)
            unlink(o.save);
    }
    cli_records_free(&recs);
    ag_array_free(&attn);
    tensors_free(&t);
    return rc;
}
