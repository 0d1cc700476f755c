/* access_model.c — attngeom/access.h, second half: model runs (attention,
 * analyze, weights), the heads of a layer's weights, corpus statistics and
 * tables, each through the library calls of the command it stands for. */
#include <stdlib.h>
#include <string.h>

#include "access_int.h"

/* ---- heads of a layer's weights ----------------------------------------- */

void ag_attn_weights_head_input(const ag_attn_weights *w, const double *x, size_t n, size_t d,
                                int h, ag_head_input *in)
{
    size_t hd = (size_t)w->head_dim, kv = (size_t)(h / (w->n_head / w->n_kv_head));
    *in = (ag_head_input){
        .x = x, .n = n, .d = d,
        .wq = w->wq.data + h * hd, .ldq = w->wq.shape[1],
        .wk = w->wk.data + kv * hd, .ldk = w->wk.shape[1],
        .bq = w->bq.data ? w->bq.data + h * hd : NULL,
        .bk = w->bk.data ? w->bk.data + kv * hd : NULL,
        .d_h = hd, .scale = w->scale, .causal = w->causal, .rope = w->rope,
        .softcap = w->softcap, .window = w->window};
}

void ag_attn_weights_head_factors(const ag_attn_weights *w, size_t d, int h, ag_head_factors *f)
{
    size_t hd = (size_t)w->head_dim, head = (size_t)h;
    size_t g = head / ((size_t)w->n_head / (size_t)w->n_kv_head); /* key/value head (GQA) */
    size_t d_out = w->wo.data ? w->wo.shape[1] : 0;
    *f = (ag_head_factors){
        .d = d, .d_h = hd, .d_out = d_out,
        .wq = w->wq.data + head * hd, .ldq = w->wq.shape[1],
        .wk = w->wk.data + g * hd, .ldk = w->wk.shape[1],
        .wv = w->wv.data ? w->wv.data + g * hd : NULL, .ldv = w->wv.data ? w->wv.shape[1] : 0,
        .wo = w->wo.data ? w->wo.data + head * hd * d_out : NULL, .ldo = d_out};
}

/* ---- model config and selections ---------------------------------------- */

/* A binding's closed handle arrives as NULL: refused, never dereferenced. */
static int no_model(ag_error *err)
{
    return ag_error_set(err, AG_EINVAL, "no model (NULL)");
}

int ag_model_dim(const ag_model *m, const char *name, long *value, ag_error *err)
{
    if (!m)
        return no_model(err);
    const ag_model_config *g = ag_model_get_config(m);
    const struct {
        const char *name;
        int value;
    } dims[] = {{"n_layer", g->n_layer}, {"n_head", g->n_head}, {"n_kv_head", g->n_kv_head},
                {"d_model", g->d_model}, {"head_dim", g->head_dim}, {"d_ff", g->d_ff},
                {"max_positions", g->max_positions}, {"max_tokens", g->max_tokens},
                {"vocab_size", g->vocab_size}, {"causal", g->causal},
                {"input_kind", (int)g->input_kind}, {"in_channels", g->in_channels},
                {"image_height", g->image_height}, {"image_width", g->image_width},
                {"patch_height", g->patch_height}, {"patch_width", g->patch_width},
                {"max_frames", g->max_frames}};
    for (size_t k = 0; name && k < sizeof dims / sizeof *dims; k++)
        if (strcmp(name, dims[k].name) == 0)
            return *value = dims[k].value, AG_OK;
    return ag_error_set(err, AG_ENOTFOUND, "no config value '%s'", name ? name : "(null)");
}

const char *ag_model_type(const ag_model *m)
{
    return m ? ag_model_get_config(m)->model_type : "";
}

/* The run's layer and head selections (attngeom/run.h; free with
 * selection_free): AG_ERANGE for an index the model lacks. */
typedef struct {
    ag_selection *layers, *heads;
    const unsigned char *layer_on, *head_on; /* their masks */
    size_t nl, nh;                           /* their counts */
} selection;

static int selection_new(const ag_model *m, const ag_run_options *opt, selection *s,
                         ag_error *err)
{
    const ag_model_config *g = ag_model_get_config(m);
    int status = ag_selection_from_list(opt ? opt->layers : NULL, opt ? opt->nlayers : 0,
                                        g->n_layer, "layers", &s->layers, err);
    if (status == AG_OK)
        status = ag_selection_from_list(opt ? opt->heads : NULL, opt ? opt->nheads : 0,
                                        g->n_head, "heads", &s->heads, err);
    s->layer_on = ag_selection_mask(s->layers);
    s->head_on = ag_selection_mask(s->heads);
    s->nl = ag_selection_count(s->layers);
    s->nh = ag_selection_count(s->heads);
    return status;
}

static void selection_free(selection *s)
{
    ag_selection_free(s->layers);
    ag_selection_free(s->heads);
}

int ag_model_selected(const ag_model *m, const ag_run_options *opt, size_t *layers,
                      size_t *heads, ag_error *err)
{
    selection s = {0};
    int status = m ? selection_new(m, opt, &s, err) : no_model(err);
    *layers = s.nl;
    *heads = s.nh;
    selection_free(&s);
    return status;
}

/* ---- attention and analyze: wrappers of attngeom/run.h ----------------- */

static int copy_heads(int layer, const double *attn, size_t heads, size_t n, void *user)
{
    (void)layer;
    double **next = user;
    memcpy(*next, attn, heads * n * n * sizeof **next);
    *next += heads * n * n;
    return 0;
}

int ag_model_attention_into(const ag_model *m, const int32_t *ids, size_t n,
                            const ag_run_options *opt, double *attn, double *hidden,
                            ag_error *err)
{
    ag_run_input in = {.size = sizeof in, .ids = ids, .n = n, .text = -1};
    return ag_run_attention(m, &in, opt, NULL, attn ? copy_heads : NULL, NULL, &attn, hidden,
                            err);
}

int ag_model_analyze(const ag_model *m, const int32_t *ids, size_t n, long text,
                     const ag_metric_set *sel, const ag_run_options *opt,
                     ag_record_list **out, ag_error *err)
{
    ag_run_options o = *agr_options(opt);
    o.metrics = sel;
    ag_run_input in = {.size = sizeof in, .ids = ids, .n = n, .text = text};
    return ag_run_analyze(m, &in, &o, NULL, out, err);
}

/* ---- weights (`attngeom weights MODEL`) --------------------------------- */

typedef struct {
    const ag_model *m;
    const ag_metric_set *sel;
    const int *layer, *head; /* (nl), (nh) */
    size_t nh, d;
    ag_record *recs;         /* (nl * nh) */
    ag_error *errs;          /* (nl) */
} weights_job;

/* One task per layer, its heads in order (the CLI's tasks compute the same
 * values: every head is one ag_weight_metrics call). */
static int weights_layer(size_t k, int worker, void *user)
{
    (void)worker;
    const weights_job *j = user;
    ag_attn_weights w = {0};
    ag_error e = {0};
    int status = ag_model_attn_weights(j->m, j->layer[k], &w, &j->errs[k]);
    for (size_t i = 0; status == AG_OK && i < j->nh; i++) {
        ag_head_factors f;
        ag_attn_weights_head_factors(&w, j->d, j->head[i], &f);
        ag_record *r = &j->recs[k * j->nh + i];
        ag_record_init(r, j->layer[k], j->head[i], j->d, j->d);
        if ((status = ag_weight_metrics(&f, j->sel, r, &e)) != AG_OK)
            ag_error_set(&j->errs[k], status, "layer %d, head %d: %s", j->layer[k], j->head[i],
                         e.message);
    }
    ag_attn_weights_free(&w);
    return status;
}

static int weights_run(weights_job *j, size_t nl, const ag_run_options *opt, ag_error *err)
{
    ag_workers *w = NULL;
    int status = ag_run_workers(opt, nl, &w, err);
    if (status == AG_OK &&
        (status = ag_pool_run(ag_workers_pool(w), nl, weights_layer, j)) != AG_OK) {
        size_t k = 0;
        while (k + 1 < nl && j->errs[k].status == AG_OK)
            k++;
        *err = j->errs[k];
    }
    ag_workers_free(w);
    return status;
}

int ag_model_weight_records(const ag_model *m, const ag_metric_set *sel,
                            const ag_run_options *opt, ag_record_list **out, ag_error *err)
{
    *out = NULL;
    if (!m)
        return no_model(err);
    const ag_model_config *g = ag_model_get_config(m);
    selection s = {0};
    ag_record_list *list = NULL;
    ag_error *errs = calloc((size_t)g->n_layer + 1, sizeof *errs);
    int status = errs ? selection_new(m, opt, &s, err)
                      : ag_error_set(err, AG_ENOMEM, "out of memory");
    if (status == AG_OK && !(list = ag_record_list_alloc(s.nl * s.nh, err)))
        status = AG_ENOMEM;
    if (status == AG_OK) {
        weights_job j = {m, sel, ag_selection_indices(s.layers), ag_selection_indices(s.heads), s.nh, (size_t)g->d_model, list->items, errs};
        status = weights_run(&j, s.nl, opt, err);
    }
    if (status == AG_OK)
        *out = list;
    else
        ag_record_list_free(list);
    selection_free(&s);
    free(errs);
    return status;
}

/* ---- corpus statistics -------------------------------------------------- */

/* A comma-separated list as an array of strings in one block (*out, free());
 * AG_EINVAL for an empty item. */
static int split_keys(const char *option, const char *list, char ***out, size_t *n,
                      ag_error *err)
{
    size_t count = *list ? 1 : 0, len = strlen(list);
    for (const char *p = list; *p; p++)
        count += *p == ',';
    char **items = malloc((count + 1) * sizeof *items + len + 1);
    if (!items)
        return ag_error_set(err, AG_ENOMEM, "out of memory");
    char *text = memcpy((char *)(items + count + 1), list, len + 1);
    for (size_t k = 0; k < count; k++) {
        items[k] = text;
        char *comma = strchr(text, ',');
        if (comma)
            *comma = '\0';
        if (!*items[k]) {
            free(items);
            return ag_error_set(err, AG_EINVAL, "%s '%s': an empty key", option, list);
        }
        text = comma ? comma + 1 : text + strlen(text);
    }
    *out = items;
    *n = count;
    return AG_OK;
}

int ag_aggregate_create(const char *by, double level, int keep_values, ag_aggregate **out,
                        ag_error *err)
{
    *out = NULL;
    ag_aggregate_options opt = {.size = sizeof(ag_aggregate_options),
                                .level = level, .keep_values = keep_values, .by_default = !by};
    char **keys = NULL;
    int status = by ? split_keys("--by", by, &keys, &opt.nby, err) : AG_OK;
    opt.by = (const char *const *)keys;
    if (status == AG_OK)
        status = ag_aggregate_new(&opt, out, err);
    free(keys);
    return status;
}

int ag_aggregate_add_cells(ag_aggregate *a, size_t count, const char *const *keys,
                           const int *kinds, const double *values, const char *const *texts,
                           ag_error *err)
{
    ag_cell *cells = calloc(count + 1, sizeof *cells);
    if (!cells)
        return ag_error_set(err, AG_ENOMEM, "out of memory");
    int status = AG_OK;
    for (size_t k = 0; status == AG_OK && k < count; k++) {
        if (kinds[k] < AG_CELL_NULL || kinds[k] > AG_CELL_TEXT)
            status = ag_error_set(err, AG_EINVAL, "key '%s': cell kind %d", keys[k], kinds[k]);
        cells[k] = (ag_cell){.kind = (ag_cell_kind)kinds[k], .value = values ? values[k] : 0,
                             .text = kinds[k] == AG_CELL_TEXT && texts ? texts[k] : NULL};
        if (status == AG_OK && cells[k].kind == AG_CELL_TEXT && !cells[k].text)
            status = ag_error_set(err, AG_EINVAL, "key '%s': text cell without text", keys[k]);
    }
    ag_row row = {count, keys, cells};
    if (status == AG_OK)
        status = ag_aggregate_add(a, &row, err);
    free(cells);
    return status;
}

static int table_out(int status, ag_table *t, ag_table **out)
{
    if (status == AG_OK)
        *out = t;
    else
        ag_table_delete(t);
    return status;
}

int ag_aggregate_result(const ag_aggregate *a, ag_table **out, ag_error *err)
{
    *out = NULL;
    ag_table *t = calloc(1, sizeof *t);
    if (!t)
        return ag_error_set(err, AG_ENOMEM, "out of memory");
    return table_out(ag_aggregate_table(a, 0, t, err), t, out);
}

int ag_compare_result(const ag_aggregate *a, const ag_aggregate *b, const char *metrics,
                      double level, unsigned long permutations, unsigned long seed,
                      const char *name_a, const char *name_b, ag_table **out, ag_error *err)
{
    *out = NULL;
    ag_compare_options opt = {.size = sizeof(ag_compare_options),
                              .level = level, .permutations = permutations, .seed = seed,
                              .name_a = name_a ? name_a : "a", .name_b = name_b ? name_b : "b"};
    char **keys = NULL;
    ag_table *t = calloc(1, sizeof *t);
    int status = t ? AG_OK : ag_error_set(err, AG_ENOMEM, "out of memory");
    if (status == AG_OK && metrics)
        status = split_keys("--metrics", metrics, &keys, &opt.nmetrics, err);
    opt.metrics = (const char *const *)keys;
    if (status == AG_OK)
        status = ag_compare_table(a, b, &opt, t, err);
    free(keys);
    return table_out(status, t, out);
}

/* ---- tables ------------------------------------------------------------- */

size_t ag_table_columns(const ag_table *t)
{
    return t ? t->ncol : 0;
}

size_t ag_table_rows(const ag_table *t)
{
    return t ? t->nrow : 0;
}

const char *ag_table_key(const ag_table *t, size_t c)
{
    return t && c < t->ncol ? t->keys[c] : NULL;
}

int ag_table_cell(const ag_table *t, size_t r, size_t c, double *value, const char **text)
{
    const ag_cell *cell = t && r < t->nrow && c < t->ncol ? &t->cells[r * t->ncol + c] : NULL;
    if (value)
        *value = cell && cell->kind != AG_CELL_NULL && cell->kind != AG_CELL_TEXT ? cell->value : 0;
    if (text)
        *text = cell && cell->kind == AG_CELL_TEXT ? cell->text : NULL;
    return cell ? (int)cell->kind : AG_CELL_NULL;
}

void ag_table_delete(ag_table *t)
{
    if (t)
        ag_table_free(t);
    free(t);
}
