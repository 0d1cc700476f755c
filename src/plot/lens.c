/* lens.c — `attngeom plot --kind lens` (issue 28, "Softmax as a lens"):
 * one head's query row of the pre-softmax scores (`attention --scores`)
 * under softmax at several temperatures, sparsemax (Martins & Astudillo
 * 2016) and 1.5-entmax (Peters, Niculae & Martins 2019), as small
 * multiples of bars on one probability axis (bars.c). The rows are
 * ag_plot_lens_rows's, the normalisers attngeom/normalizers.h's: the figure
 * draws exactly what the metrics measure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "figures_int.h"

/* softmax at these temperatures when none are given: sharper, the model's,
 * flatter */
static const double default_temperatures[] = {0.5, 1, 2};
#define DEFAULT_NORMALIZERS "softmax,sparsemax,entmax15"
static const char linear_refusal[] = "linear attention is formed from the head's Q and K, not "
                                     "from its scores: the lens draws softmax, sparsemax, "
                                     "entmax15 and entmax:ALPHA";

int ag_plot_lens_rows(const double *s, size_t n, const ag_plot_lens_panel *panels, size_t count,
                      double *P, size_t *kept, size_t *allowed, ag_error *err)
{
    if (!s || !panels || !P || !kept || !allowed || n == 0 || count == 0)
        return ag_error_set(err, AG_EINVAL, "ag_plot_lens_rows: no scores or no panels");
    *allowed = 0;
    for (size_t j = 0; j < n; j++)
        *allowed += s[j] != -INFINITY;
    if (*allowed == 0)
        return ag_error_set(err, AG_EINVAL, "the row has no allowed key (every score is -inf)");
    for (size_t k = 0; k < count; k++) {
        const char *name = ag_normalizer_name(panels[k].kind);
        if (panels[k].kind == AG_NORMALIZER_LINEAR)
            return ag_error_set(err, AG_EINVAL, "%s", linear_refusal);
        ag_error inner = {0};
        double *p = P + k * n;
        int st = ag_normalize_row(panels[k].kind, panels[k].param, s, n, p, &inner);
        if (st != AG_OK)
            return ag_error_set(err, st, "%s: %s", name ? name : "normalizer", inner.message);
        kept[k] = ag_normalizer_support(panels[k].kind, panels[k].param, p, n);
        for (size_t j = 0; j < n; j++)
            if (s[j] == -INFINITY)
                p[j] = NAN; /* masked: absent, not a probability of 0 */
    }
    return AG_OK;
}

/* The panels of o: each normaliser of o->normalizers, softmax once per
 * temperature. AG_EINVAL for a name ag_normalizer_parse refuses, or
 * temperatures without softmax; AG_ELIMIT past AG_PLOT_MAX_PANELS. */
static int lens_panels(const ag_run_plot_spec *o, ag_plot_lens_panel *out, size_t *count,
                       ag_error *err)
{
    const char *list = o->normalizers ? o->normalizers : DEFAULT_NORMALIZERS;
    const double *T = o->ntemperatures ? o->temperatures : default_temperatures;
    size_t nT = o->ntemperatures ? o->ntemperatures : 3, softmax = 0;
    char name[64];
    *count = 0;
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1), p);
        ag_normalizer kind;
        double param;
        ag_error inner = {0};
        if (ag_normalizer_parse(name, &kind, &param, &inner) != AG_OK)
            return ag_error_set(err, AG_EINVAL, "--normalizers: %s", inner.message);
        if (kind == AG_NORMALIZER_LINEAR)
            return ag_error_set(err, AG_EINVAL, "--normalizers: %s", linear_refusal);
        softmax += kind == AG_NORMALIZER_SOFTMAX;
        for (size_t t = 0; t < (kind == AG_NORMALIZER_SOFTMAX ? nT : 1); t++) {
            if (*count == AG_PLOT_MAX_PANELS)
                return ag_error_set(err, AG_ELIMIT, "the lens figure stacks at most %d panels "
                                    "(normalisers, and softmax once per temperature)",
                                    AG_PLOT_MAX_PANELS);
            out[(*count)++] = (ag_plot_lens_panel){kind, kind == AG_NORMALIZER_SOFTMAX ? T[t]
                                                                                         : param};
        }
        p += len + (p[len] == ',');
    }
    for (size_t t = 0; t < nT; t++)
        if (!(T[t] > 0) || !isfinite(T[t]))
            return ag_error_set(err, AG_EINVAL, "--temperatures: %g is not a finite number > 0",
                                T[t]);
    if (*count == 0)
        return ag_error_set(err, AG_EINVAL, "--normalizers: no normaliser named");
    if (o->ntemperatures && !softmax)
        return ag_error_set(err, AG_EINVAL, "--temperatures apply to softmax, which "
                            "--normalizers does not name");
    return AG_OK;
}

/* "softmax, T = 0.5: 7 of 9 keys kept" */
static void panel_title(char *buf, size_t size, const ag_plot_lens_panel *p, size_t kept,
                        size_t allowed)
{
    char what[64];
    if (p->kind == AG_NORMALIZER_SOFTMAX)
        snprintf(what, sizeof what, "softmax, T = %g", p->param);
    else if (p->kind == AG_NORMALIZER_ENTMAX)
        snprintf(what, sizeof what, "entmax, \xce\xb1 = %g", p->param);
    else
        snprintf(what, sizeof what, "%s", p->kind == AG_NORMALIZER_ENTMAX15 ? "1.5-entmax"
                                          : ag_normalizer_name(p->kind));
    snprintf(buf, size, "%s: %zu of %zu key%s kept", what, kept, allowed, allowed == 1 ? "" : "s");
}

/* The row of --layer/--head/--query: the array must be [L, H, n, n] or
 * [n, n] (what `attention --scores` writes, or one head of it). */
static int lens_row(const ag_run_plot_spec *o, const ag_array *a, const double **row, size_t *n,
                    size_t *q, ag_error *err)
{
    if (a->ndim != 4 && a->ndim != 2)
        return ag_error_set(err, AG_ESHAPE, "%s: holds a %d-dimensional array, not the scores "
                            "[L, H, n, n] of `attngeom attention --scores` or one head's [n, n]",
                            o->input, a->ndim);
    const double *M;
    int st = agp_pick_matrix(o, a, &M, n, err);
    if (st != AG_OK)
        return st;
    *q = o->query < 0 ? *n - 1 : (size_t)o->query;
    if (*q >= *n)
        return ag_error_set(err, AG_ERANGE, "%s: --query %zu is out of range: the scores have "
                            "%zu queries (0 to %zu)", o->input, *q, *n, *n - 1);
    *row = M + *q * *n;
    return AG_OK;
}

typedef struct {
    ag_plot_lens_panel panels[AG_PLOT_MAX_PANELS];
    char titles[AG_PLOT_MAX_PANELS][96];
    const char *title_ptr[AG_PLOT_MAX_PANELS];
    int colours[AG_PLOT_MAX_PANELS];
    size_t kept[AG_PLOT_MAX_PANELS], count, allowed;
    double *P;
} lens_fig;

/* The figure's rows, titles and colours (one per normaliser kind). */
static int lens_data(const ag_run_plot_spec *o, const double *row, size_t n, lens_fig *f,
                     ag_error *err)
{
    int st = lens_panels(o, f->panels, &f->count, err);
    if (st == AG_OK && n > AG_PLOT_MAX_BARS / f->count)
        st = ag_error_set(err, AG_ELIMIT, "%s: %zu keys in %zu panels are more than the %d bars "
                          "a figure draws; plot the scores of a shorter text", o->input, n,
                          f->count, AG_PLOT_MAX_BARS);
    if (st == AG_OK && !(f->P = malloc(f->count * n * sizeof *f->P)))
        st = ag_error_set(err, AG_ENOMEM, "%s: out of memory", o->input);
    ag_error inner = {0};
    if (st == AG_OK &&
        (st = ag_plot_lens_rows(row, n, f->panels, f->count, f->P, f->kept, &f->allowed,
                                &inner)) != AG_OK)
        ag_error_set(err, st, "%s: query %d: %s", o->input, o->query, inner.message);
    for (size_t k = 0; st == AG_OK && k < f->count; k++) {
        panel_title(f->titles[k], sizeof f->titles[k], &f->panels[k], f->kept[k], f->allowed);
        f->title_ptr[k] = f->titles[k];
        f->colours[k] = (int)f->panels[k].kind;
    }
    return st;
}

int agp_plot_lens(const ag_run_plot_spec *o, const ag_array *a, ag_plot_output *fig,
                  ag_error *err)
{
    const double *row = NULL;
    size_t n = 0, q = 0;
    char **tokens = NULL, title[128];
    lens_fig f = {0};
    int st = lens_row(o, a, &row, &n, &q, err);
    ag_run_plot_spec at = *o;
    at.query = (int)q; /* the row's index in messages */
    if (st == AG_OK)
        st = lens_data(&at, row, n, &f, err);
    if (st == AG_OK && o->tokens)
        st = agp_read_tokens(o->tokens, n, &tokens, err);
    if (st == AG_OK) {
        char who[64] = "";
        if (a->ndim == 4)
            snprintf(who, sizeof who, "layer %d, head %d, ", o->layer < 0 ? 0 : o->layer,
                     o->head < 0 ? 0 : o->head);
        /* the query's token, when known, to its first 24 bytes (a title is one line) */
        snprintf(title, sizeof title, tokens ? "%squery %zu (\"%.24s\") under each normaliser"
                                             : "%squery %zu under each normaliser",
                 who, q, tokens ? tokens[q] : "");
        ag_plot_bars b = {.size = sizeof(ag_plot_bars), .panels = f.count, .bars = n,
                          .values = f.P, .panel_titles = f.title_ptr, .colours = f.colours,
                          .labels = (const char *const *)tokens, .title = agp_title(o, title),
                          .x_title = f.allowed < n ? "key (grey: masked for this query)" : "key",
                          .y_title = "probability", .ymin = 0, .ymax = 1};
        st = agp_draw_bars(o, &b, fig, err);
    }
    agp_free_tokens(tokens, tokens ? n : 0);
    free(f.P);
    return st;
}
