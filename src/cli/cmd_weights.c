/* cmd_weights.c — `attngeom weights`: family D (docs/metrics.md, family D) of every head,
 * from a model folder or from tensors named in a safetensors file. Needs no
 * input text: M_QK and M_OV are properties of the weights alone. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char weights_help[] =
    "usage: attngeom weights MODEL [--layers LIST] [--heads LIST] [options]\n"
    "       attngeom weights --weights F.safetensors (--qkv NAME | --q NAME --k NAME [--v NAME])\n"
    "                        [--o NAME] --heads H [--linear] [options]\n"
    "\n"
    "Weight-space geometry of every head (no input needed): family A of\n"
    "M_QK = W_Q W_K^T (qk_*), its symmetry score, family A of M_OV = W_V W_O\n"
    "(ov_*) and the OV copying score, computed in factored form (never a d x d\n"
    "product). With grouped-query attention query head h uses key/value head\n"
    "h / (H / H_kv). Records carry rows = cols = d.\n"
    "\n"
    "  --layers, --heads LIST   select layers/heads of a MODEL (default all)\n"
    "  --weights F, --qkv/--q/--k/--v/--o NAME, --linear, --heads H\n"
    "                           the named-tensor path, as for attngeom layer\n"
    "  --metrics LIST           keys of family 'weights' (default all of them)\n"
    "  --format F, -o FILE, --expect GOLDEN.json   as for every command\n"
    "  --label NAME             the records' \"model\" (default: the folder's or\n"
    "                           the --weights file's name)\n"
    "  --aggregate              per (layer, head) group the mean, std, Student-t\n"
    "                           interval and count of every key instead of the\n"
    "                           records (as `attngeom aggregate`; --by, --ci)\n";

/* Family D of the heads of one layer's [in, out] projections. */
static int head_records(const ag_attn_weights *w, size_t d, const unsigned char *head_on,
                        int layer, const cli_common *c, cli_records *recs, const char *src)
{
    size_t hd = (size_t)w->head_dim, H = (size_t)w->n_head;
    size_t group = H / (size_t)w->n_kv_head, d_out = w->wo.data ? w->wo.shape[1] : 0;
    for (size_t h = 0; h < H; h++) {
        if (head_on && !head_on[h])
            continue;
        size_t g = h / group; /* key/value head of query head h (GQA) */
        ag_head_factors f = {
            .d = d, .d_h = hd, .d_out = d_out,
            .wq = w->wq.data + h * hd, .ldq = w->wq.shape[1],
            .wk = w->wk.data + g * hd, .ldk = w->wk.shape[1],
            .wv = w->wv.data ? w->wv.data + g * hd : NULL, .ldv = w->wv.data ? w->wv.shape[1] : 0,
            .wo = w->wo.data ? w->wo.data + h * hd * d_out : NULL, .ldo = d_out};
        ag_record *r = cli_records_add(recs);
        ag_error err = {0};
        if (!r)
            return cli_fail("out of memory");
        ag_record_init(r, layer, (int)h, d, d);
        if (ag_weight_metrics(&f, &c->metrics, r, &err) != AG_OK)
            return cli_fail("%s: layer %d, head %zu: %s", src, layer, h, err.message);
    }
    return 0;
}

static int model_weights(const char *dir, const char *layers, const char *heads,
                         const cli_common *c, cli_records *recs)
{
    ag_model *m = NULL;
    ag_error err = {0};
    if (ag_model_load(dir, &m, &err) != AG_OK)
        return cli_fail_error(&err);
    const ag_model_config *g = ag_model_get_config(m);
    unsigned char *layer_on = malloc((size_t)g->n_layer), *head_on = malloc((size_t)g->n_head);
    int rc = (layer_on && head_on) ? 0 : cli_fail("out of memory");
    if (rc == 0)
        rc = cli_selection("weights", layers, g->n_layer, "layers", dir, layer_on);
    if (rc == 0)
        rc = cli_selection("weights", heads, g->n_head, "heads", dir, head_on);
    for (int l = 0; rc == 0 && l < g->n_layer; l++) {
        if (!layer_on[l])
            continue;
        ag_attn_weights w = {0};
        if (ag_model_attn_weights(m, l, &w, &err) != AG_OK)
            rc = cli_fail("%s: %s", dir, err.message);
        else
            rc = head_records(&w, (size_t)g->d_model, head_on, l, c, recs, dir);
        ag_attn_weights_free(&w);
    }
    free(layer_on);
    free(head_on);
    ag_model_free(m);
    return rc;
}

/* The named-tensor path: one layer, heads counted by --heads H. */
static int tensor_weights(const cli_tensor_opts *o, const cli_common *c, cli_records *recs)
{
    cli_tensors t = {0};
    int rc = cli_tensors_load(o, &t, 0);
    if (rc == 0) {
        size_t hd = t.q.shape[1] / (size_t)o->heads;
        ag_attn_weights w = {.n_head = o->heads, .n_kv_head = (int)(t.k.shape[1] / hd),
                             .head_dim = (int)hd, .wq = t.q, .wk = t.k, .wv = t.v, .wo = t.o};
        rc = head_records(&w, t.q.shape[0], NULL, 0, c, recs, o->weights);
    }
    cli_tensors_free(&t);
    return rc;
}

/* After the usage checks, before anything is read. */
static int check_paths(const cli_common *c, const char *model, const cli_tensor_opts *o)
{
    cli_path outs[] = {{"-o", c->out_path}},
             ins[] = {{"MODEL", model}, {"--weights", o->weights}, {"--expect", c->expect_path}};
    return cli_paths_check(outs, 1, ins, 3);
}

int cmd_weights(int argc, char **argv)
{
    cli_common common;
    cli_common_init(&common, AG_FAMILIES_WEIGHTS);
    common.agg.allowed = 1;
    cli_tensor_opts o = {0};
    const char *model = NULL, *layers = NULL, *heads = NULL;
    for (int i = 1; i < argc; i++) {
        int used = 0;
        if (cli_is_option(argv[i], "--layers") || cli_is_option(argv[i], "--heads")) {
            int is_layers = cli_is_option(argv[i], "--layers");
            const char *v = cli_option_value("weights", is_layers ? "--layers" : "--heads",
                                             argc, argv, &i);
            if (!v)
                return EXIT_USAGE;
            *(is_layers ? &layers : &heads) = v;
            continue;
        }
        used = cli_tensor_option(&o, "weights", argc, argv, &i);
        if (used == 0)
            used = cli_common_option(&common, "weights", argc, argv, &i);
        if (used < 0)
            return EXIT_USAGE;
        if (used)
            continue;
        if (strcmp(argv[i], "--help") == 0)
            return fputs(weights_help, stdout), 0;
        if (argv[i][0] == '-' && argv[i][1])
            return cli_usage_error("weights", "unknown option '%s'", argv[i]);
        if (model)
            return cli_usage_error("weights", "one MODEL only");
        model = argv[i];
    }
    if (cli_common_check(&common, "weights"))
        return EXIT_USAGE;
    if (model || o.weights)
        cli_set_model_name(&common, model ? model : o.weights);
    cli_records recs = {0};
    int rc;
    if (model) {
        if (o.weights)
            return cli_usage_error("weights", "give a MODEL folder or --weights, not both");
        rc = check_paths(&common, model, &o) ? 1 : model_weights(model, layers, heads, &common, &recs);
    } else {
        if (layers)
            return cli_usage_error("weights", "--layers selects layers of a MODEL folder");
        if (heads) { /* with --weights, --heads is the number of heads */
            char *end;
            long h = strtol(heads, &end, 10);
            if (end == heads || *end || h <= 0 || h > 1 << 20)
                return cli_usage_error("weights", "--heads takes a positive number of heads, not '%s'", heads);
            o.heads = (int)h;
        }
        if ((rc = cli_tensor_check_usage(&o, "weights", 0)) != 0)
            return rc;
        rc = check_paths(&common, model, &o) ? 1 : tensor_weights(&o, &common, &recs);
    }
    if (rc == 0) {
        const char *files[] = {o.weights};
        cli_settings_in in = {.model_dir = model, .files = files, .nfiles = 1};
        rc = cli_emit_settings(&common, recs.items, recs.count, "weights",
                               model ? model : o.weights, &in, NULL);
    }
    cli_records_free(&recs);
    return rc;
}
