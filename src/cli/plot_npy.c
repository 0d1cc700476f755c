/* plot_npy.c — the figures of `attngeom plot` drawn from a .npy: one head's
 * attention matrix (with the tokens of `tokenize --format json` on its
 * axes), that matrix's singular values on a log scale, and the
 * head-similarity matrix of `attngeom similarity -o S.npy`. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "plot_cli.h"

#define TOKENS_FILE_MAX ((size_t)64 << 20)

const char *plot_title(const plot_opts *o, const char *dflt)
{
    if (o->title)
        return *o->title ? o->title : NULL;
    return dflt;
}

const char *plot_count(char buf[32], size_t n)
{
    char digits[24];
    int len = snprintf(digits, sizeof digits, "%zu", n), o = 0;
    for (int k = 0; k < len; k++) {
        if (k && (len - k) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = digits[k];
    }
    buf[o] = '\0';
    return buf;
}

int plot_grid_fits(const plot_opts *o, const char *what, size_t rows, const char *row_noun,
                   size_t cols, const char *col_noun, const char *advice)
{
    if (rows <= AG_PLOT_MAX_CELLS / cols)
        return 0;
    char cells[32], cap[32];
    /* rows·cols may overflow only past 2^64: say "more than" then */
    size_t n = rows > SIZE_MAX / cols ? SIZE_MAX : rows * cols;
    return cli_fail("%s: %s of %zu %s x %zu %s has %s%s cells, more than the %s a figure draws "
                    "(each cell is a shape in the file); %s", o->input, what, rows, row_noun, cols,
                    col_noun, n == SIZE_MAX ? "over " : "", plot_count(cells, n),
                    plot_count(cap, AG_PLOT_MAX_CELLS), advice);
}

static void shape_text(const ag_array *a, char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < a->ndim && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, "%s%zu", d ? ", " : "", a->shape[d]);
    if (used < size)
        snprintf(buf + used, size - used, "]");
}

/* The (n, n) matrix of --layer/--head in a [L, H, n, n], [L, n, n] (rollout's
 * R.npy: layers only) or [n, n] array. 0, or 1 after printing. */
static int pick_matrix(const plot_opts *o, const ag_array *a, const double **M, size_t *n)
{
    char shape[160];
    shape_text(a, shape, sizeof shape);
    if (a->ndim < 2 || a->ndim > 4 || a->shape[a->ndim - 1] != a->shape[a->ndim - 2] ||
        a->shape[a->ndim - 1] == 0)
        return cli_fail("%s: holds %s, not attention [L, H, n, n], [L, n, n] or [n, n]", o->input,
                        shape);
    if (a->ndim < 4 && o->head_given)
        return cli_fail("%s: holds %s, which has no head axis (--head applies to [L, H, n, n])",
                        o->input, shape);
    if (a->ndim < 3 && o->layer_given)
        return cli_fail("%s: holds %s, which has no layer axis (--layer applies to [L, H, n, n] "
                        "and [L, n, n])", o->input, shape);
    size_t layer = (size_t)o->layer, head = (size_t)o->head;
    if (a->ndim >= 3 && layer >= a->shape[0])
        return cli_fail("%s: --layer %zu is out of range: %s holds %zu layers", o->input, layer,
                        shape, a->shape[0]);
    if (a->ndim == 4 && head >= a->shape[1])
        return cli_fail("%s: --head %zu is out of range: %s holds %zu heads", o->input, head, shape,
                        a->shape[1]);
    *n = a->shape[a->ndim - 1];
    size_t index = a->ndim == 4 ? layer * a->shape[1] + head : a->ndim == 3 ? layer : 0;
    *M = a->data + index * *n * *n;
    return 0;
}

static void free_tokens(char **tokens, size_t n)
{
    for (size_t k = 0; tokens && k < n; k++)
        free(tokens[k]);
    free(tokens);
}

/* The "tokens" of `attngeom tokenize --format json`, n of them, as new
 * strings (*tokens[n], free with free_tokens). 0, or 1 after printing. */
static int read_tokens(const char *path, size_t n, char ***tokens)
{
    char *text = NULL;
    size_t len = 0;
    ag_error err = {0};
    if (ag_read_file(path, TOKENS_FILE_MAX, &text, &len, &err) != AG_OK)
        return cli_fail_error(&err);
    json_error_t jerr;
    json_t *root = json_loadb(text, len, 0, &jerr);
    free(text);
    if (!root)
        return cli_fail("%s: line %d: %s", path, jerr.line, jerr.text);
    json_t *arr = json_object_get(root, "tokens");
    int rc = 0;
    if (!json_is_array(arr))
        rc = cli_fail("%s: no \"tokens\" array (the JSON of `attngeom tokenize --format json`)",
                      path);
    else if (json_array_size(arr) != n)
        rc = cli_fail("%s: %zu tokens, but the matrix is %zu x %zu", path, json_array_size(arr), n,
                      n);
    *tokens = rc ? NULL : calloc(n, sizeof **tokens);
    if (rc == 0 && !*tokens)
        rc = cli_fail("%s: out of memory", path);
    for (size_t k = 0; rc == 0 && k < n; k++) {
        json_t *t = json_array_get(arr, k);
        if (!json_is_string(t))
            rc = cli_fail("%s: token %zu is not a string", path, k);
        else if (!((*tokens)[k] = strdup(json_string_value(t))))
            rc = cli_fail("%s: out of memory", path);
    }
    json_decref(root);
    if (rc) { /* the strings copied before the error */
        free_tokens(*tokens, n);
        *tokens = NULL;
    }
    return rc;
}

static int draw_grid(const plot_opts *o, const ag_plot_grid *g, ag_plot_output *fig)
{
    ag_error err = {0};
    return ag_plot_grid_render(g, &o->page, fig, &err) == AG_OK ? 0
           : cli_fail("%s: %s", o->out_path, err.message);
}

/* The patch grid R x C of a ViT's n = 1 + R·C tokens: --grid, or the
 * square one (patches: when n − 1 is a square). 0, or 1 after printing. */
static int patch_grid(const plot_opts *o, size_t n, size_t *R, size_t *C)
{
    *R = o->grid_rows, *C = o->grid_cols;
    if (!*R) {
        size_t g = (size_t)llround(sqrt((double)(n - 1)));
        if (n < 2 || g * g != n - 1)
            return cli_fail("%s: %zu tokens are not a CLS token and a square patch grid: give "
                            "--grid RxC", o->input, n);
        *R = *C = g;
    }
    if (*R * *C + 1 != n)
        return cli_fail("%s: --grid %zux%zu means %zu tokens (CLS and the patches), the matrix "
                        "has %zu", o->input, *R, *C, *R * *C + 1, n);
    return 0;
}

/* ViT token labels: "CLS", then "(r,c)" row by row (modeling_vit.py
 * ViTEmbeddings: the CLS token, then the patches flattened row-major). */
static int patch_labels(const plot_opts *o, size_t n, char ***labels)
{
    size_t R, C;
    *labels = NULL;
    if (patch_grid(o, n, &R, &C))
        return 1;
    if (!(*labels = calloc(n, sizeof **labels)))
        return cli_fail("%s: out of memory", o->input);
    for (size_t k = 0; k < n; k++)
        if ((k ? asprintf(&(*labels)[k], "(%zu,%zu)", (k - 1) / C, (k - 1) % C)
               : asprintf(&(*labels)[k], "CLS")) < 0) {
            (*labels)[k] = NULL;
            return cli_fail("%s: out of memory", o->input);
        }
    return 0;
}

static int plot_attention(const plot_opts *o, const ag_array *a, ag_plot_output *fig)
{
    const double *M;
    size_t n;
    char **tokens = NULL, title[96];
    int rc = pick_matrix(o, a, &M, &n);
    if (rc == 0 && o->tokens)
        rc = read_tokens(o->tokens, n, &tokens);
    else if (rc == 0 && o->grid_rows)
        rc = patch_labels(o, n, &tokens);
    if (rc == 0)
        rc = plot_grid_fits(o, "an attention matrix", n, "queries", n, "keys",
                            "plot the attention of a shorter text (at most 256 tokens)");
    if (rc) {
        free_tokens(tokens, tokens ? n : 0);
        return rc;
    }
    if (a->ndim == 4)
        snprintf(title, sizeof title, "attention, layer %d, head %d", o->layer, o->head);
    else
        snprintf(title, sizeof title, a->ndim == 3 ? "layer %d" : "attention", o->layer);
    ag_plot_grid g = {.size = sizeof(ag_plot_grid),
        .rows = n, .cols = n, .values = M,
        .row_labels = (const char *const *)tokens, .col_labels = (const char *const *)tokens,
        .title = plot_title(o, title), .row_title = "query", .col_title = "key",
        .value_title = "attention weight", .show_values = o->values, .square = 1,
        .vmin = isnan(o->vmin) ? 0 : o->vmin, .vmax = o->vmax};
    rc = draw_grid(o, &g, fig);
    free_tokens(tokens, n);
    return rc;
}

static int plot_spectrum(const plot_opts *o, const ag_array *a, ag_plot_output *fig)
{
    const double *M;
    size_t n;
    int rc = pick_matrix(o, a, &M, &n);
    if (rc)
        return rc;
    double *sigma = malloc(2 * n * sizeof *sigma), *index = sigma + n;
    if (!sigma)
        return cli_fail("%s: out of memory", o->input);
    int st = ag_svd_values(M, n, n, sigma);
    if (st != AG_OK)
        rc = cli_fail("%s: the singular values of the matrix: %s", o->input, ag_strerror(st));
    for (size_t k = 0; k < n; k++)
        index[k] = (double)(k + 1);
    char title[96];
    if (a->ndim == 4)
        snprintf(title, sizeof title, "singular values, layer %d, head %d", o->layer, o->head);
    else
        snprintf(title, sizeof title, a->ndim == 3 ? "singular values, layer %d"
                                                   : "singular values", o->layer);
    ag_plot_series s = {.count = n, .x = index, .y = sigma};
    ag_plot_lines p = {.size = sizeof(ag_plot_lines),
                       .nseries = 1, .series = &s, .title = plot_title(o, title),
                       .x_title = "index i", .y_title = "singular value \xcf\x83\xe1\xb5\xa2",
                       .log_y = 1, .integer_x = 1, .markers = 1};
    ag_error err = {0};
    if (rc == 0 && ag_plot_lines_render(&p, &o->page, fig, &err) != AG_OK)
        rc = cli_fail("%s: %s", o->out_path, err.message);
    free(sigma);
    return rc;
}

/* Labels L<l>H<h> of head k = l·H + h, or NULL (indices) without
 * --heads-per-layer. */
static int similarity_labels(const plot_opts *o, size_t K, char ***labels)
{
    *labels = NULL;
    if (!o->heads_per_layer)
        return 0;
    size_t H = (size_t)o->heads_per_layer;
    if (K % H != 0)
        return cli_fail("%s: %zu heads are not whole layers of --heads-per-layer %zu", o->input, K,
                        H);
    if (!(*labels = calloc(K, sizeof **labels)))
        return cli_fail("%s: out of memory", o->input);
    for (size_t k = 0; k < K; k++)
        if (asprintf(&(*labels)[k], "L%zuH%zu", k / H, k % H) < 0) {
            (*labels)[k] = NULL;
            return cli_fail("%s: out of memory", o->input);
        }
    return 0;
}

static int plot_similarity(const plot_opts *o, const ag_array *a, ag_plot_output *fig)
{
    char shape[160];
    shape_text(a, shape, sizeof shape);
    if (a->ndim != 2 || a->shape[0] != a->shape[1] || a->shape[0] == 0)
        return cli_fail("%s: holds %s, not the [K, K] matrix of `attngeom similarity -o`",
                        o->input, shape);
    size_t K = a->shape[0];
    char **labels = NULL;
    int rc = plot_grid_fits(o, "a similarity matrix", K, "heads", K, "heads",
                            "compute it over fewer heads (`similarity --layers/--heads`, at most "
                            "256 heads)");
    if (rc == 0)
        rc = similarity_labels(o, K, &labels);
    ag_plot_grid g = {.size = sizeof(ag_plot_grid),
        .rows = K, .cols = K, .values = a->data,
        .row_labels = (const char *const *)labels, .col_labels = (const char *const *)labels,
        .title = plot_title(o, "head similarity"),
        .row_title = o->heads_per_layer ? "head" : "head (selection order)",
        .col_title = o->heads_per_layer ? "head" : "head (selection order)",
        .value_title = "Jensen\xe2\x80\x93Shannon distance", .show_values = o->values,
        .square = 1, .vmin = isnan(o->vmin) ? 0 : o->vmin, .vmax = o->vmax};
    if (rc == 0)
        rc = draw_grid(o, &g, fig);
    free_tokens(labels, labels ? K : 0);
    return rc;
}

/* One query's row of a ViT head, its weights on the patches laid out as
 * the R x C grid (the CLS key's weight is not drawn: it is in the title). */
static int plot_patches(const plot_opts *o, const ag_array *a, ag_plot_output *fig)
{
    const double *M;
    size_t n, R, C, q = (size_t)o->query;
    int rc = pick_matrix(o, a, &M, &n);
    if (rc == 0)
        rc = patch_grid(o, n, &R, &C);
    if (rc == 0)
        rc = plot_grid_fits(o, "a patch grid", R, "rows", C, "columns",
                            "the image has too many patches to draw one by one");
    if (rc == 0 && q >= n)
        rc = cli_fail("%s: --query %zu is out of range: the matrix has %zu tokens", o->input, q, n);
    if (rc)
        return rc;
    char who[64], title[192];
    if (q)
        snprintf(who, sizeof who, "patch (%zu,%zu)", (q - 1) / C, (q - 1) % C);
    else
        snprintf(who, sizeof who, "CLS");
    if (a->ndim == 4)
        snprintf(title, sizeof title, "layer %d, head %d: %s \xe2\x86\x92 patches (CLS key %.3g)",
                 o->layer, o->head, who, M[q * n]);
    else
        snprintf(title, sizeof title, "%s \xe2\x86\x92 patches (CLS key %.3g)", who, M[q * n]);
    ag_plot_grid g = {.size = sizeof(ag_plot_grid),
        .rows = R, .cols = C, .values = M + q * n + 1,
        .title = plot_title(o, title), .row_title = "patch row", .col_title = "patch column",
        .value_title = "attention weight", .show_values = o->values, .square = 1,
        .vmin = isnan(o->vmin) ? 0 : o->vmin, .vmax = o->vmax};
    return draw_grid(o, &g, fig);
}

int plot_npy(const plot_opts *o, ag_plot_output *fig)
{
    ag_array a = {0};
    ag_error err = {0};
    if (ag_npy_read(o->input, &a, &err) != AG_OK)
        return cli_fail_error(&err);
    int rc = o->kind == PLOT_ATTENTION ? plot_attention(o, &a, fig)
           : o->kind == PLOT_SPECTRUM ? plot_spectrum(o, &a, fig)
           : o->kind == PLOT_PATCHES ? plot_patches(o, &a, fig)
           : plot_similarity(o, &a, fig);
    ag_array_free(&a);
    return rc;
}
