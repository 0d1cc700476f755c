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
    "                           records (as `attngeom aggregate`; --by, --ci)\n"
    CLI_JOBS_HELP;

/* Family D of the selected heads of one layer's [in, out] projections, one
 * task per head. */
typedef struct {
    const ag_attn_weights *w;
    size_t d;
    int layer;
    const int *head;  /* (count) */
    ag_record_list *recs; /* head i's record is first + i */
    size_t first;
    ag_error *errs;   /* (count) */
    const ag_metric_set *sel;
} heads_job;

static int head_task(size_t i, int worker, void *user)
{
    (void)worker;
    const heads_job *j = user;
    int h = j->head[i];
    ag_head_factors f;
    ag_attn_weights_head_factors(j->w, j->d, h, &f);
    ag_record *r = ag_record_list_at(j->recs, j->first + i);
    ag_record_init(r, j->layer, h, j->d, j->d);
    return ag_weight_metrics(&f, j->sel, r, &j->errs[i]);
}

/* The layers to measure and where their records go: layer task k fills
 * recs[k * nh ...] with its nh selected heads. */
typedef struct {
    const cli_workers *workers;
    const cli_common *c;
    const ag_model *m;          /* NULL: the one layer `tensors` */
    const ag_attn_weights *tensors;
    const int *layer, *head;    /* (nl), (nh) */
    size_t nh, d;
    ag_record_list *recs;       /* (nl * nh) */
    ag_error *errs;             /* (nl): the layer's error, naming the head */
} layers_job;

static int layer_heads(const layers_job *j, size_t k, const ag_attn_weights *w)
{
    ag_error *errs = calloc(j->nh + 1, sizeof *errs);
    if (!errs)
        return ag_error_set(&j->errs[k], AG_ENOMEM, "out of memory");
    heads_job hj = {w, j->d, j->layer[k], j->head, j->recs, k * j->nh, errs, j->c->metrics};
    int status = cli_workers_run(j->workers, j->nh, head_task, &hj);
    if (status != AG_OK) {
        size_t i = cli_first_error(errs, j->nh);
        ag_error_set(&j->errs[k], status, "layer %d, head %d: %s", j->layer[k], j->head[i],
                     errs[i].message);
    }
    free(errs);
    return status;
}

static int layer_task(size_t k, int worker, void *user)
{
    (void)worker;
    const layers_job *j = user;
    if (!j->m)
        return layer_heads(j, k, j->tensors);
    ag_attn_weights w = {0};
    int status = ag_model_attn_weights(j->m, j->layer[k], &w, &j->errs[k]);
    if (status == AG_OK)
        status = layer_heads(j, k, &w);
    ag_attn_weights_free(&w);
    return status;
}

/* Every selected layer's heads: layers in parallel (heads in parallel when
 * there is one layer). 0, or 1 after printing the lowest layer's error. */
static int weights_records(layers_job *j, size_t nl, const char *src, ag_record_list **recs)
{
    cli_workers w = {0};
    j->recs = cli_records_new(nl * j->nh);
    j->errs = calloc(nl + 1, sizeof *j->errs);
    int rc = j->recs && j->errs ? cli_workers_new(j->c, &w) : cli_fail("out of memory");
    j->workers = &w;
    ag_run_options *o = NULL;
    if (rc == 0)
        rc = cli_run_options(j->c, AG_PRECISION_F32, &o);
    ag_run_tasks t = {sizeof t, nl, layer_task, j, j->recs, j->nh, j->errs, NULL};
    if (rc == 0 && ag_run_tasks_run(w.workers, &t, o, NULL) != AG_OK)
        rc = cli_fail("%s: %s", src, j->errs[cli_first_error(j->errs, nl)].message);
    ag_run_options_free(o);
    cli_workers_free(&w);
    if (rc == 0) {
        ag_record_list_free(*recs);
        *recs = j->recs;
    } else {
        ag_record_list_free(j->recs);
    }
    free(j->errs);
    return rc;
}

static int model_weights(const char *dir, const char *layers, const char *heads,
                         const cli_common *c, ag_record_list **recs)
{
    ag_model *m = NULL;
    ag_error err = {0};
    if (ag_model_load(dir, &m, &err) != AG_OK)
        return cli_fail_error(&err);
    const ag_model_config *g = ag_model_get_config(m);
    ag_selection *layer = NULL, *head = NULL;
    int rc = cli_selection("weights", layers, g->n_layer, "layers", dir, &layer);
    if (rc == 0)
        rc = cli_selection("weights", heads, g->n_head, "heads", dir, &head);
    layers_job j = {.c = c, .m = m, .layer = ag_selection_indices(layer),
                    .head = ag_selection_indices(head), .nh = ag_selection_count(head),
                    .d = (size_t)g->d_model};
    if (rc == 0)
        rc = weights_records(&j, ag_selection_count(layer), dir, recs);
    ag_selection_free(layer);
    ag_selection_free(head);
    ag_model_free(m);
    return rc;
}

/* The named-tensor path: one layer, heads counted by --heads H. */
static int tensor_weights(const cli_tensor_opts *o, const cli_common *c, ag_record_list **recs)
{
    cli_tensors t = {0};
    int rc = cli_tensors_load(o, &t, 0);
    if (rc == 0) {
        size_t hd = t.q.shape[1] / (size_t)o->heads;
        ag_attn_weights w = {.n_head = o->heads, .n_kv_head = (int)(t.k.shape[1] / hd),
                             .head_dim = (int)hd, .wq = t.q, .wk = t.k, .wv = t.v, .wo = t.o};
        int zero = 0;
        ag_selection *head = NULL;
        ag_error err = {0};
        rc = ag_selection_parse(NULL, o->heads, "heads", &head, &err) == AG_OK
                 ? 0 : cli_fail_error(&err);
        layers_job j = {.c = c, .tensors = &w, .layer = &zero,
                        .head = ag_selection_indices(head), .nh = ag_selection_count(head),
                        .d = t.q.shape[0]};
        if (rc == 0)
            rc = weights_records(&j, 1, o->weights, recs);
        ag_selection_free(head);
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
    if (cli_common_init(&common, AG_FAMILIES_WEIGHTS))
        return 1;
    common.agg.allowed = 1;
    common.jobs_allowed = 1;
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
    ag_record_list *recs = NULL;
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
        rc = cli_emit_settings(&common, recs, "weights",
                               model ? model : o.weights, &in, NULL);
    }
    ag_record_list_free(recs);
    return rc;
}
