/* tensors.c — the named-tensor options shared by `layer` and `weights`:
 * one attention layer's projections read from a safetensors file by name
 * (docs/cli.md, "Analysing a model attngeom does not know"), in [in, out] form, with shapes checked against
 * each other before any metric runs. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"


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
static const char **string_slot(cli_tensor_opts *o, const char *arg, const char **name)
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

int cli_tensor_option(cli_tensor_opts *o, const char *cmd, int argc, char **argv, int *i)
{
    const char *a = argv[*i], *name, *v;
    const char **slot = string_slot(o, a, &name);
    if (slot)
        return (*slot = cli_option_value(cmd, name, argc, argv, i)) ? 1 : -1;
    if (strcmp(a, "--causal") == 0)
        return o->causal = 1;
    if (strcmp(a, "--linear") == 0)
        return o->linear = 1;
    if (cli_is_option(a, "--heads")) {
        if (!(v = cli_option_value(cmd, "--heads", argc, argv, i)))
            return -1;
        if (parse_int_option(v, &o->heads) != 0) {
            cli_usage_error(cmd, "--heads takes a positive number of heads, not '%s'", v);
            return -1;
        }
        return 1;
    }
    if (cli_is_option(a, "--scale")) {
        if (!(v = cli_option_value(cmd, "--scale", argc, argv, i)))
            return -1;
        if (cli_parse_double(v, &o->scale) != 0 || o->scale == 0) {
            cli_usage_error(cmd, "--scale takes a positive number, not '%s'", v);
            return -1;
        }
        return 1;
    }
    return 0;
}

int cli_tensor_check_usage(const cli_tensor_opts *o, const char *cmd, int need_x)
{
    if ((need_x && !o->x) || !o->weights)
        return cli_usage_error(cmd, need_x ? "needs --x X.npy and --weights F.safetensors"
                                           : "needs a MODEL folder or --weights F.safetensors");
    if (!need_x && (o->x || o->save || o->causal || o->scale > 0))
        return cli_usage_error(cmd, "--x, --save-attention, --causal and --scale belong to attngeom layer");
    if (!!o->qkv == !!(o->q || o->k))
        return cli_usage_error(cmd, "give either --qkv NAME or --q NAME --k NAME");
    if (!o->qkv && (!o->q || !o->k))
        return cli_usage_error(cmd, "--q and --k go together");
    if (o->qkv && o->v)
        return cli_usage_error(cmd, "--v goes with --q/--k, not with --qkv");
    if (o->qkv_bias && (o->q_bias || o->k_bias || o->v_bias))
        return cli_usage_error(cmd, "give either --qkv-bias or --q-bias/--k-bias/--v-bias");
    if (!o->heads)
        return cli_usage_error(cmd, "missing --heads H");
    return 0;
}

/* The layer's tensors as [in, out] doubles. */

void cli_tensors_free(cli_tensors *t)
{
    ag_array *all[] = {&t->x, &t->q, &t->k, &t->v, &t->o, &t->bq, &t->bk, &t->bv};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        ag_array_free(all[k]);
}

/* Read tensor `name`, drop leading 1s down to `rank` (a [1, d_a] kernel of
 * d = 1 stays a matrix), and check its rank; 2-D weights are transposed when
 * --linear. */
static int read_tensor(const ag_safetensors *st, const char *path, const char *name,
                       int rank, int linear, ag_array *out)
{
    ag_error err = {0};
    if (ag_st_read(st, name, out, &err) != AG_OK)
        return cli_fail_error(&err);
    ag_array_squeeze_to(out, rank);
    if (out->ndim != rank)
        return cli_fail("%s: tensor '%s' has %d dimensions after dropping leading 1s; "
                        "expected %s", path, name, out->ndim, rank == 2 ? "a matrix" : "a vector");
    if (rank == 2 && linear && ag_array_transpose2d(out, &err) != AG_OK)
        return cli_fail("%s: tensor '%s': %s", path, name, err.message);
    return 0;
}

static int read_qkv(const ag_safetensors *st, const cli_tensor_opts *o, cli_tensors *t)
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

static int shape_error(const cli_tensor_opts *o, const char *name, const ag_array *a,
                       const char *expected)
{
    if (a->ndim == 1)
        return cli_fail("%s: tensor '%s' has shape (%zu,); expected %s", o->weights, name,
                        a->shape[0], expected);
    return cli_fail("%s: tensor '%s' has shape (%zu, %zu) as [in, out]; expected %s",
                    o->weights, name, a->shape[0], a->shape[1], expected);
}

/* Every shape must agree with the input width d (X's, or Q's rows without
 * X) and with d_a = Q's width. With allow_gqa, K and V may be narrower:
 * H_kv = width / d_h heads, with H_kv dividing H (grouped-query attention). */
static int check_shapes(const cli_tensor_opts *o, const cli_tensors *t, int allow_gqa)
{
    size_t d = t->x.data ? t->x.shape[1] : t->q.shape[0], da = t->q.shape[1];
    size_t dh = da / (size_t)o->heads;
    char want[128];
    const char *qn = o->qkv ? o->qkv : o->q, *kn = o->qkv ? o->qkv : o->k;
    const char *vn = o->qkv ? o->qkv : o->v;
    snprintf(want, sizeof want, "(%zu, %zu)%s", d, da, t->x.data ? " to match X's width" : "");
    if (t->q.shape[0] != d)
        return shape_error(o, qn, &t->q, want);
    if (da == 0 || d == 0)
        return shape_error(o, qn, &t->q, "a non-empty (d, d_a) matrix");
    if (da % (size_t)o->heads != 0)
        return cli_fail("%s: tensor '%s': width %zu is not divisible by --heads %d", o->weights,
                        qn, da, o->heads);
    const ag_array *kv[2] = {&t->k, &t->v};
    const char *kvn[2] = {kn, vn};
    for (int k = 0; k < 2; k++) {
        if (!kv[k]->data)
            continue;
        size_t w = kv[k]->shape[1]; /* dh ≥ 1: da ≥ heads was checked above */
        int gqa_ok = allow_gqa && w > 0 && w % dh == 0 && (size_t)o->heads % (w / dh) == 0;
        if (kv[k]->shape[0] != d || (w != da && !gqa_ok)) {
            snprintf(want, sizeof want, "(%zu, %zu)%s", d, da,
                     allow_gqa ? " or a grouped-query width dividing the heads" : "");
            return shape_error(o, kvn[k], kv[k], want);
        }
    }
    /* Each bias is as wide as its projection's output. */
    const ag_array *b[3] = {&t->bq, &t->bk, &t->bv}, *proj[3] = {&t->q, &t->k, &t->v};
    const char *bn[3] = {o->qkv_bias ? o->qkv_bias : o->q_bias,
                         o->qkv_bias ? o->qkv_bias : o->k_bias,
                         o->qkv_bias ? o->qkv_bias : o->v_bias};
    for (int k = 0; k < 3; k++) {
        size_t width = proj[k]->data ? proj[k]->shape[1] : da;
        snprintf(want, sizeof want, "(%zu,): the width of its projection", width);
        if (b[k]->data && b[k]->shape[0] != width)
            return shape_error(o, bn[k], b[k], want);
    }
    snprintf(want, sizeof want, "(%zu, d_out): one row per output of the query heads", da);
    if (t->o.data && t->o.shape[0] != da)
        return shape_error(o, o->o, &t->o, want);
    return 0;
}

static int load_x(const cli_tensor_opts *o, cli_tensors *t)
{
    ag_error err = {0};
    if (ag_npy_read(o->x, &t->x, &err) != AG_OK)
        return cli_fail_error(&err);
    ag_array_squeeze_to(&t->x, 2); /* [1, d] is one token, [1, n, d] a batch of one */
    if (t->x.ndim != 2 || ag_array_size(&t->x) == 0)
        return cli_fail("%s: X must be a non-empty 2-D array [n, d] (after dropping leading 1s), "
                        "it has %d dimensions", o->x, t->x.ndim);
    return 0;
}

int cli_tensors_load(const cli_tensor_opts *o, cli_tensors *t, int need_x)
{
    ag_error err = {0};
    int rc = need_x ? load_x(o, t) : 0;
    if (rc)
        return rc;
    ag_safetensors *st = NULL;
    if (ag_st_open(o->weights, &st, &err) != AG_OK)
        return cli_fail_error(&err);
    rc = read_qkv(st, o, t);
    ag_st_close(st);
    return rc ? rc : check_shapes(o, t, !need_x);
}
