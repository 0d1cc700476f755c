/* tensors.c — the named-tensor options shared by `layer` and `weights`:
 * argv into an ag_run_layer_spec, whose tensors the library reads and
 * checks (src/run/tensors.c: ag_run_tensors_load). */
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

void cli_tensor_spec(const cli_tensor_opts *o, int need_x, ag_run_layer_spec *s)
{
    s->x = need_x ? o->x : NULL;
    s->weights = o->weights, s->qkv = o->qkv, s->q = o->q, s->k = o->k, s->v = o->v, s->o = o->o;
    s->qkv_bias = o->qkv_bias, s->q_bias = o->q_bias, s->k_bias = o->k_bias;
    s->v_bias = o->v_bias;
    s->heads = o->heads, s->causal = o->causal, s->linear = o->linear, s->scale = o->scale;
    s->precision = o->precision;
}

int cli_tensors_load(const cli_tensor_opts *o, cli_tensors *t, int need_x)
{
    ag_run_layer_spec s = AG_RUN_LAYER_SPEC_DEFAULT;
    cli_tensor_spec(o, need_x, &s);
    ag_error err = {0};
    return ag_run_tensors_load(&s, t, &err) == AG_OK ? 0 : cli_fail_error(&err);
}

void cli_tensors_free(cli_tensors *t)
{
    ag_run_tensors_free(t);
}
