/* npy.c — the figures of ag_run_plot (`attngeom plot`) drawn from a .npy:
 * one head's attention matrix (with the tokens of `tokenize --format json`
 * on its axes, or a ViT's patch positions), that matrix's singular values
 * on a log scale, one query's weights on the patch grid, and the
 * head-similarity matrix of `attngeom similarity -o S.npy`; the lens
 * figure of a scores file is lens.c's. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "figures_int.h"

#define TOKENS_FILE_MAX ((size_t)64 << 20)

/* --layer, --head: 0 when not given. */
static int layer_of(const ag_run_plot_spec *o)
{
    return o->layer < 0 ? 0 : o->layer;
}

static int head_of(const ag_run_plot_spec *o)
{
    return o->head < 0 ? 0 : o->head;
}

static void shape_text(const ag_array *a, char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < a->ndim && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, "%s%zu", d ? ", " : "", a->shape[d]);
    if (used < size)
        snprintf(buf + used, size - used, "]");
}

/* The (m, n) matrix of --layer/--head in a [L, H, m, n], [L, m, n]
 * (rollout's R.npy: layers only) or [m, n] array: m = n but for the
 * rectangular cross-attention of an encoder–decoder model (`attention
 * --cross`: [L_dec, H, n_target, n_source], issue 30). */
static int pick_rect(const ag_run_plot_spec *o, const ag_array *a, const double **M, size_t *m,
                     size_t *n, ag_error *err)
{
    char shape[160];
    shape_text(a, shape, sizeof shape);
    if (a->ndim < 2 || a->ndim > 4 || a->shape[a->ndim - 1] == 0 || a->shape[a->ndim - 2] == 0)
        return ag_error_set(err, AG_ESHAPE, "%s: holds %s, not attention [L, H, n, n], "
                            "[L, n, n] or [n, n]", o->input, shape);
    if (a->ndim < 4 && o->head >= 0)
        return ag_error_set(err, AG_ESHAPE, "%s: holds %s, which has no head axis (--head applies "
                            "to [L, H, n, n])", o->input, shape);
    if (a->ndim < 3 && o->layer >= 0)
        return ag_error_set(err, AG_ESHAPE, "%s: holds %s, which has no layer axis (--layer "
                            "applies to [L, H, n, n] and [L, n, n])", o->input, shape);
    size_t layer = (size_t)layer_of(o), head = (size_t)head_of(o);
    if (a->ndim >= 3 && layer >= a->shape[0])
        return ag_error_set(err, AG_ERANGE, "%s: --layer %zu is out of range: %s holds %zu layers",
                            o->input, layer, shape, a->shape[0]);
    if (a->ndim == 4 && head >= a->shape[1])
        return ag_error_set(err, AG_ERANGE, "%s: --head %zu is out of range: %s holds %zu heads",
                            o->input, head, shape, a->shape[1]);
    *m = a->shape[a->ndim - 2], *n = a->shape[a->ndim - 1];
    size_t index = a->ndim == 4 ? layer * a->shape[1] + head : a->ndim == 3 ? layer : 0;
    *M = a->data + index * *m * *n;
    return AG_OK;
}

/* The (n, n) matrix of --layer/--head: pick_rect's, square. */
int agp_pick_matrix(const ag_run_plot_spec *o, const ag_array *a, const double **M, size_t *n,
                       ag_error *err)
{
    size_t m;
    char shape[160];
    int rc = pick_rect(o, a, M, &m, n, err);
    shape_text(a, shape, sizeof shape);
    if (rc == AG_OK && m != *n)
        rc = ag_error_set(err, AG_ESHAPE, "%s: holds %s, not attention [L, H, n, n], "
                          "[L, n, n] or [n, n]", o->input, shape);
    return rc;
}

void agp_free_tokens(char **tokens, size_t n)
{
    for (size_t k = 0; tokens && k < n; k++)
        free(tokens[k]);
    free(tokens);
}

/* The labels of `attngeom tokenize --format json`, n of them, as new
 * strings (*tokens[n], free with agp_free_tokens): its "strings" (each token as
 * readable text, ag_tokenizer_token_strings) when present, else its
 * "tokens" (vocabulary strings, "Ġcat"). */
int agp_read_tokens(const char *path, size_t n, char ***tokens, ag_error *err)
{
    char *text = NULL;
    size_t len = 0;
    *tokens = NULL;
    int rc = ag_read_file(path, TOKENS_FILE_MAX, &text, &len, err);
    if (rc != AG_OK)
        return rc;
    json_error_t jerr;
    json_t *root = json_loadb(text, len, 0, &jerr);
    free(text);
    if (!root)
        return ag_error_set(err, AG_EFORMAT, "%s: line %d: %s", path, jerr.line, jerr.text);
    json_t *arr = json_object_get(root, "strings");
    if (!json_is_array(arr))
        arr = json_object_get(root, "tokens");
    if (!json_is_array(arr))
        rc = ag_error_set(err, AG_EFORMAT, "%s: no \"tokens\" array (the JSON of `attngeom "
                          "tokenize --format json`)", path);
    else if (json_array_size(arr) != n)
        rc = ag_error_set(err, AG_ESHAPE, "%s: %zu tokens, but the matrix's axis has %zu", path,
                          json_array_size(arr), n);
    *tokens = rc ? NULL : calloc(n, sizeof **tokens);
    if (rc == AG_OK && !*tokens)
        rc = ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
    for (size_t k = 0; rc == AG_OK && k < n; k++) {
        json_t *t = json_array_get(arr, k);
        if (!json_is_string(t))
            rc = ag_error_set(err, AG_EFORMAT, "%s: token %zu is not a string", path, k);
        else if (!((*tokens)[k] = strdup(json_string_value(t))))
            rc = ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
    }
    json_decref(root);
    if (rc) { /* the strings copied before the error */
        agp_free_tokens(*tokens, n);
        *tokens = NULL;
    }
    return rc;
}

/* The patch grid R x C of a ViT's n = 1 + G + R·C tokens (G =
 * o->registers, DINOv2's register tokens after the CLS token): --grid, or
 * the square one (patches: when n − 1 − G is a square). */
static int patch_grid(const ag_run_plot_spec *o, size_t n, size_t *R, size_t *C, ag_error *err)
{
    size_t G = o->registers, np = n > 1 + G ? n - 1 - G : 0;
    *R = o->grid_rows, *C = o->grid_cols;
    if (!*R) {
        size_t g = (size_t)llround(sqrt((double)np));
        if (!np || g * g != np)
            return ag_error_set(err, AG_ESHAPE, "%s: %zu tokens are not a CLS token%s and a "
                                "square patch grid: give --grid RxC%s", o->input, n,
                                G ? ", the --registers" : "",
                                G ? "" : ", or --registers N for a model's register tokens (info's \"registers\")");
        *R = *C = g;
    }
    if (*R * *C != np || n < 1 + G)
        return ag_error_set(err, AG_ESHAPE, "%s: --grid %zux%zu means %zu tokens (CLS%s and the "
                            "patches), the matrix has %zu", o->input, *R, *C, *R * *C + 1 + G,
                            G ? ", the --registers" : "", n);
    return AG_OK;
}

/* ViT token labels: "CLS", then "(r,c)" row by row (modeling_vit.py
 * ViTEmbeddings: the CLS token, then the patches flattened row-major);
 * DINOv2's registers between them "[REG0]" ... (Dinov2WithRegistersEmbeddings). */
static int patch_labels(const ag_run_plot_spec *o, size_t n, char ***labels, ag_error *err)
{
    size_t R, C, G = o->registers;
    *labels = NULL;
    int rc = patch_grid(o, n, &R, &C, err);
    if (rc != AG_OK)
        return rc;
    if (!(*labels = calloc(n, sizeof **labels)))
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", o->input);
    for (size_t k = 0; k < n; k++)
        if ((k > G ? asprintf(&(*labels)[k], "(%zu,%zu)", (k - 1 - G) / C, (k - 1 - G) % C)
             : k   ? asprintf(&(*labels)[k], "[REG%zu]", k - 1)
                   : asprintf(&(*labels)[k], "CLS")) < 0) {
            (*labels)[k] = NULL;
            return ag_error_set(err, AG_ENOMEM, "%s: out of memory", o->input);
        }
    return AG_OK;
}

/* The axis labels of plot_attention: the columns' from --tokens (the
 * source of a cross-attention) or a ViT's patches, the rows' from
 * --target-tokens when given, else the columns' (a square matrix). */
static int attention_labels(const ag_run_plot_spec *o, size_t m, size_t n, char ***rows,
                            char ***cols, ag_error *err)
{
    int rc = AG_OK;
    *rows = *cols = NULL;
    if (o->tokens)
        rc = agp_read_tokens(o->tokens, n, cols, err);
    else if (o->grid_rows || o->registers)
        rc = patch_labels(o, n, cols, err);
    if (rc == AG_OK && o->target_tokens)
        rc = agp_read_tokens(o->target_tokens, m, rows, err);
    else if (rc == AG_OK && m != n && *cols)
        rc = ag_error_set(err, AG_ESHAPE, "%s: a %zu x %zu cross-attention: --tokens labels its "
                          "%zu source tokens, --target-tokens T.json its %zu target tokens",
                          o->input, m, n, n, m);
    else if (rc == AG_OK)
        *rows = *cols;
    return rc;
}

static int plot_attention(const ag_run_plot_spec *o, const ag_array *a, ag_plot_output *fig,
                          ag_error *err)
{
    const double *M;
    size_t m = 0, n = 0;
    char **rows = NULL, **cols = NULL, title[96];
    int rc = pick_rect(o, a, &M, &m, &n, err);
    if (rc == AG_OK && (o->grid_rows || o->registers) && m != n)
        rc = ag_error_set(err, AG_ESHAPE, "%s: --grid/--registers label a ViT's square "
                          "attention, not a %zu x %zu matrix", o->input, m, n);
    if (rc == AG_OK)
        rc = attention_labels(o, m, n, &rows, &cols, err);
    if (rc == AG_OK)
        rc = agp_grid_fits(o, "an attention matrix", m, "queries", n, "keys",
                           "plot the attention of a shorter text (at most 256 tokens)", err);
    int cross = m != n || o->target_tokens;
    if (a->ndim == 4)
        snprintf(title, sizeof title, "%sattention, layer %d, head %d", cross ? "cross-" : "",
                 layer_of(o), head_of(o));
    else
        /* [L, n, n] is rollout's R (`rollout -o`): R_l is the attention
         * flow through layers 0..l (Abnar & Zuidema 2020) */
        snprintf(title, sizeof title, a->ndim == 3 && !cross ? "rollout through layer %d"
                                      : cross ? "cross-attention" : "attention", layer_of(o));
    /* a cross-attention's rows are the decoder's (target) queries, its
     * columns the encoder's (source) keys: A is [n_target, n_source] */
    ag_plot_grid g = {.size = sizeof(ag_plot_grid),
        .rows = m, .cols = n, .values = M,
        .row_labels = (const char *const *)rows, .col_labels = (const char *const *)cols,
        .title = agp_title(o, title), .row_title = cross ? "target (query)" : "query",
        .col_title = cross ? "source (key)" : "key",
        .value_title = a->ndim == 3 && !cross ? "rollout weight" : "attention weight",
        .show_values = o->values, .square = 1,
        .vmin = isnan(o->vmin) ? 0 : o->vmin, .vmax = o->vmax};
    if (rc == AG_OK)
        rc = agp_draw_grid(o, &g, fig, err);
    if (rows != cols)
        agp_free_tokens(rows, rows ? m : 0);
    agp_free_tokens(cols, cols ? n : 0);
    return rc;
}

static int plot_spectrum(const ag_run_plot_spec *o, const ag_array *a, ag_plot_output *fig,
                         ag_error *err)
{
    const double *M;
    size_t n;
    int rc = agp_pick_matrix(o, a, &M, &n, err);
    if (rc != AG_OK)
        return rc;
    double *sigma = malloc(2 * n * sizeof *sigma), *index = sigma + n;
    if (!sigma)
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", o->input);
    int st = ag_svd_values(M, n, n, sigma);
    if (st != AG_OK)
        rc = ag_error_set(err, st, "%s: the singular values of the matrix: %s", o->input,
                          ag_strerror(st));
    for (size_t k = 0; k < n; k++)
        index[k] = (double)(k + 1);
    char title[96];
    if (a->ndim == 4)
        snprintf(title, sizeof title, "singular values, layer %d, head %d", layer_of(o),
                 head_of(o));
    else
        snprintf(title, sizeof title, a->ndim == 3 ? "singular values, rollout through layer %d"
                                                   : "singular values", layer_of(o));
    ag_plot_series s = {.count = n, .x = index, .y = sigma};
    ag_plot_lines p = {.size = sizeof(ag_plot_lines),
                       .nseries = 1, .series = &s, .title = agp_title(o, title),
                       .x_title = "index i", .y_title = "singular value \xcf\x83\xe1\xb5\xa2",
                       .log_y = 1, .integer_x = 1, .markers = 1};
    if (rc == AG_OK)
        rc = agp_draw_lines(o, &p, fig, err);
    free(sigma);
    return rc;
}

/* Labels L<l>H<h> of head k = l·H + h, or NULL (indices) without
 * --heads-per-layer. */
static int similarity_labels(const ag_run_plot_spec *o, size_t K, char ***labels, ag_error *err)
{
    *labels = NULL;
    if (!o->heads_per_layer)
        return AG_OK;
    size_t H = (size_t)o->heads_per_layer;
    if (K % H != 0)
        return ag_error_set(err, AG_ESHAPE, "%s: %zu heads are not whole layers of "
                            "--heads-per-layer %zu", o->input, K, H);
    if (!(*labels = calloc(K, sizeof **labels)))
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", o->input);
    for (size_t k = 0; k < K; k++)
        if (asprintf(&(*labels)[k], "L%zuH%zu", k / H, k % H) < 0) {
            (*labels)[k] = NULL;
            return ag_error_set(err, AG_ENOMEM, "%s: out of memory", o->input);
        }
    return AG_OK;
}

/* The clustered order (ag_plot_cluster_order): the matrix permuted into
 * *P (malloc'd), the labels (given, or the selection indices) into
 * *labels in that order, the linkage into *Z (malloc'd). */
static int cluster_similarity(const ag_run_plot_spec *o, const double *S, size_t K,
                              char ***labels, double **P, double **Z, ag_error *err)
{
    size_t *order = malloc(K * sizeof *order);
    char **named = calloc(K, sizeof *named);
    *P = malloc(K * K * sizeof **P);
    *Z = malloc((K > 1 ? K - 1 : 1) * 4 * sizeof **Z);
    ag_error inner = {0};
    int rc = order && named && *P && *Z ? AG_OK
           : ag_error_set(err, AG_ENOMEM, "%s: out of memory", o->input);
    if (rc == AG_OK && (rc = ag_plot_cluster_order(S, K, order, *Z, &inner)) != AG_OK)
        ag_error_set(err, rc, "%s: cannot order the heads by clustering: %s (--order layer "
                     "draws the matrix as it is)", o->input, inner.message);
    for (size_t i = 0; rc == AG_OK && i < K; i++) {
        for (size_t j = 0; j < K; j++)
            (*P)[i * K + j] = S[order[i] * K + order[j]];
        if (*labels)
            named[i] = (*labels)[order[i]], (*labels)[order[i]] = NULL;
        else if (asprintf(&named[i], "%zu", order[i]) < 0)
            named[i] = NULL, rc = ag_error_set(err, AG_ENOMEM, "%s: out of memory", o->input);
    }
    if (*labels)
        agp_free_tokens(*labels, K);
    *labels = named;
    free(order);
    return rc;
}

static int plot_similarity(const ag_run_plot_spec *o, const ag_array *a, ag_plot_output *fig,
                           ag_error *err)
{
    char shape[160];
    shape_text(a, shape, sizeof shape);
    if (a->ndim != 2 || a->shape[0] != a->shape[1] || a->shape[0] == 0)
        return ag_error_set(err, AG_ESHAPE, "%s: holds %s, not the [K, K] matrix of `attngeom "
                            "similarity -o`", o->input, shape);
    size_t K = a->shape[0];
    char **labels = NULL;
    double *P = NULL, *Z = NULL;
    int clustered = !o->order_layer && K > 1;
    int rc = agp_grid_fits(o, "a similarity matrix", K, "heads", K, "heads",
                           "compute it over fewer heads (`similarity --layers/--heads`, at most "
                           "256 heads)", err);
    if (rc == AG_OK)
        rc = similarity_labels(o, K, &labels, err);
    if (rc == AG_OK && clustered)
        rc = cluster_similarity(o, a->data, K, &labels, &P, &Z, err);
    const char *axis = o->heads_per_layer ? (clustered ? "head (average-linkage order)" : "head")
                     : clustered ? "head index (average-linkage order)" : "head (selection order)";
    ag_plot_grid g = {.size = sizeof(ag_plot_grid),
        .rows = K, .cols = K, .values = clustered ? P : a->data,
        .row_labels = (const char *const *)labels, .col_labels = (const char *const *)labels,
        .title = agp_title(o, "Jensen\xe2\x80\x93Shannon distance between heads"),
        .row_title = axis, .col_title = axis,
        .value_title = "Jensen\xe2\x80\x93Shannon distance", .show_values = o->values,
        .square = 1, .vmin = isnan(o->vmin) ? 0 : o->vmin, .vmax = o->vmax,
        .linkage = clustered ? Z : NULL};
    if (rc == AG_OK)
        rc = agp_draw_grid(o, &g, fig, err);
    agp_free_tokens(labels, labels ? K : 0);
    free(P);
    free(Z);
    return rc;
}

/* One query's row of a ViT head, its weights on the patches laid out as
 * the R x C grid (the CLS key's weight is not drawn: it is in the title,
 * with the registers' total when --registers). */
static int plot_patches(const ag_run_plot_spec *o, const ag_array *a, ag_plot_output *fig,
                        ag_error *err)
{
    const double *M;
    size_t n, R, C, q = o->query < 0 ? 0 : (size_t)o->query;
    int rc = agp_pick_matrix(o, a, &M, &n, err);
    if (rc == AG_OK)
        rc = patch_grid(o, n, &R, &C, err);
    if (rc == AG_OK)
        rc = agp_grid_fits(o, "a patch grid", R, "rows", C, "columns",
                           "the image has too many patches to draw one by one", err);
    if (rc == AG_OK && q >= n)
        rc = ag_error_set(err, AG_ERANGE, "%s: --query %zu is out of range: the matrix has %zu "
                          "tokens", o->input, q, n);
    if (rc != AG_OK)
        return rc;
    size_t G = o->registers; /* the keys 1..G are registers: in the title, not the grid */
    char who[64], keys[96], title[256];
    double reg = 0;
    for (size_t k = 1; k <= G; k++)
        reg += M[q * n + k];
    if (q > G)
        snprintf(who, sizeof who, "patch (%zu,%zu)", (q - 1 - G) / C, (q - 1 - G) % C);
    else if (q)
        snprintf(who, sizeof who, "[REG%zu]", q - 1);
    else
        snprintf(who, sizeof who, "CLS");
    if (G)
        snprintf(keys, sizeof keys, "CLS key %.3g, registers %.3g", M[q * n], reg);
    else
        snprintf(keys, sizeof keys, "CLS key %.3g", M[q * n]);
    if (a->ndim == 4)
        snprintf(title, sizeof title, "layer %d, head %d: %s \xe2\x86\x92 patches (%s)",
                 layer_of(o), head_of(o), who, keys);
    else
        snprintf(title, sizeof title, "%s \xe2\x86\x92 patches (%s)", who, keys);
    ag_plot_grid g = {.size = sizeof(ag_plot_grid),
        .rows = R, .cols = C, .values = M + q * n + 1 + G,
        .title = agp_title(o, title), .row_title = "patch row", .col_title = "patch column",
        .value_title = "attention weight", .show_values = o->values, .square = 1,
        .vmin = isnan(o->vmin) ? 0 : o->vmin, .vmax = o->vmax};
    return agp_draw_grid(o, &g, fig, err);
}

int agp_plot_npy(const ag_run_plot_spec *o, ag_plot_output *fig, ag_error *err)
{
    ag_array a = {0};
    int rc = ag_npy_read(o->input, &a, err);
    if (rc != AG_OK)
        return rc;
    rc = o->kind == AG_PLOT_ATTENTION ? plot_attention(o, &a, fig, err)
       : o->kind == AG_PLOT_SPECTRUM ? plot_spectrum(o, &a, fig, err)
       : o->kind == AG_PLOT_PATCHES ? plot_patches(o, &a, fig, err)
       : o->kind == AG_PLOT_LENS ? agp_plot_lens(o, &a, fig, err)
       : plot_similarity(o, &a, fig, err);
    ag_array_free(&a);
    return rc;
}
