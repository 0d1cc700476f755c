/* test_archs.c — the engine on the random-weight architecture folders of
 * tests/data/models/arch/ (made by tools/make_arch_models.py): for each one,
 * ag_model_load and ag_model_forward in f64 and f32 on the ids of
 * tests/data/archref/<name>/ids.json, compared with the float64 references
 * attn.npy (L, H, n, n) and hidden.npy (L+1, n, d) of tests/ref/hf_forward.py,
 * an independent port of Hugging Face's modeling code:
 *   f64: |attn − ref| <= 1e-9,  |hidden − ref| <= 1e-9 · max(1, |ref|)
 *   f32: |attn − ref| <= 1e-5,  |hidden − ref| <= 1e-4 · max(1, |ref|)
 * and every probability the reference has at exactly 0 (a key the causal or
 * sliding-window mask hides) exactly 0. Run from the repository root. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "attngeom/core.h"
#include "attngeom/io.h"
#include "attngeom/model.h"
#include "../util/test_model_util.h"

#define ARCH_DIR "tests/data/models/arch"
#define REF_DIR "tests/data/archref"

static int32_t *arch_ids(const char *name, size_t *n)
{
    char p[512];
    snprintf(p, sizeof p, REF_DIR "/%s/ids.json", name);
    return read_ids_json(p, n);
}

typedef struct {
    const char *name;
    const ag_array *ref; /* (L, H, n, n) */
    double max_err;
    int layers_seen;
} arch_cmp;

static int arch_cmp_layer(const ag_layer_view *v, void *user)
{
    arch_cmp *c = user;
    const ag_array *a = c->ref;
    cr_assert_eq(v->layer, c->layers_seen, "%s: layers out of order", c->name);
    cr_assert_eq((size_t)v->n_head, a->shape[1], "%s layer %d: %d heads, reference %zu", c->name, v->layer,
                 v->n_head, a->shape[1]);
    size_t cnt = (size_t)v->n_head * v->n * v->n;
    const double *ref = a->data + (size_t)v->layer * cnt;
    for (size_t i = 0; i < cnt; i++) {
        double e = fabs(v->attn[i] - ref[i]);
        if (!(e <= c->max_err))
            c->max_err = e; /* NaN too */
        if (ref[i] == 0.0)
            cr_assert_eq(v->attn[i], 0.0, "%s layer %d head %zu query %zu key %zu: masked, yet %g", c->name,
                         v->layer, i / (v->n * v->n), i / v->n % v->n, i % v->n, v->attn[i]);
    }
    c->layers_seen++;
    return 0;
}

static void check_arch_precision(const ag_model *m, const char *name, const int32_t *ids, size_t n,
                                 const ag_array *attn, const ag_array *hid, ag_precision prec, double tol_a,
                                 double tol_h)
{
    const char *pn = prec == AG_PRECISION_F64 ? "f64" : "f32";
    ag_error err = {0};
    double *h = calloc(ag_array_size(hid), sizeof *h); // (L+1, n, d)
    arch_cmp c = {.name = name, .ref = attn};
    int rc = ag_model_forward(m, ids, n, prec, arch_cmp_layer, &c, h, &err);
    cr_assert_eq(rc, AG_OK, "%s %s: forward failed: %s", name, pn, err.message);
    cr_assert_eq(c.layers_seen, (int)attn->shape[0], "%s %s: %d layers, reference %zu", name, pn, c.layers_seen,
                 attn->shape[0]);
    double eh = 0;
    size_t worst = 0;
    for (size_t i = 0; i < ag_array_size(hid); i++) {
        double e = fabs(h[i] - hid->data[i]) / fmax(1.0, fabs(hid->data[i]));
        if (!(e <= eh)) {
            eh = e;
            worst = i;
        }
    }
    fprintf(stderr, "[archs] %-20s %s: max |attn err| %.3g, max hidden err %.3g\n", name, pn, c.max_err, eh);
    cr_expect_leq(c.max_err, tol_a, "%s %s: attention error %g > %g", name, pn, c.max_err, tol_a);
    cr_expect_leq(eh, tol_h, "%s %s: hidden error %g > %g at element %zu (got %.17g, expected %.17g)", name, pn, eh,
                  tol_h, worst, h[worst], hid->data[worst]);
    free(h);
}

static void check_arch(const char *name)
{
    char dir[512], p[512];
    ag_error err = {0};
    ag_array attn = {0}, hid = {0};
    snprintf(p, sizeof p, REF_DIR "/%s/attn.npy", name);
    cr_assert_eq(ag_npy_read(p, &attn, &err), AG_OK, "%s", err.message);
    snprintf(p, sizeof p, REF_DIR "/%s/hidden.npy", name);
    cr_assert_eq(ag_npy_read(p, &hid, &err), AG_OK, "%s", err.message);
    cr_assert_eq(attn.ndim, 4);
    cr_assert_eq(hid.ndim, 3);
    size_t n;
    int32_t *ids = arch_ids(name, &n);
    cr_assert_eq(attn.shape[2], n);

    snprintf(dir, sizeof dir, ARCH_DIR "/%s", name);
    ag_model *m = NULL;
    cr_assert_eq(ag_model_load(dir, &m, &err), AG_OK, "%s: load failed: %s", name, err.message);
    const ag_model_config *g = ag_model_get_config(m);
    cr_assert_eq((size_t)g->n_layer + 1, hid.shape[0], "%s: %d layers, reference %zu", name, g->n_layer,
                 hid.shape[0] - 1);
    cr_assert_eq((size_t)g->d_model, hid.shape[2], "%s: d_model %d, reference %zu", name, g->d_model, hid.shape[2]);

    check_arch_precision(m, name, ids, n, &attn, &hid, AG_PRECISION_F64, 1e-9, 1e-9);
    check_arch_precision(m, name, ids, n, &attn, &hid, AG_PRECISION_F32, 1e-5, 1e-4);
    ag_model_free(m);
    free(ids);
    ag_array_free(&attn);
    ag_array_free(&hid);
}

Test(archs, gpt_neox_parallel) { check_arch("gpt-neox-parallel"); }
Test(archs, gpt_neox_sequential) { check_arch("gpt-neox-sequential"); }
Test(archs, opt) { check_arch("opt"); }
Test(archs, opt_350m_like) { check_arch("opt-350m-like"); }
Test(archs, roberta) { check_arch("roberta"); }
Test(archs, xlm_roberta) { check_arch("xlm-roberta"); }
Test(archs, distilbert) { check_arch("distilbert"); }
Test(archs, gemma) { check_arch("gemma"); }
Test(archs, gemma2) { check_arch("gemma2"); }
Test(archs, phi3) { check_arch("phi3"); }
Test(archs, llama_linear) { check_arch("llama-linear"); }
Test(archs, llama_dynamic) { check_arch("llama-dynamic"); }
Test(archs, llama3) { check_arch("llama3"); }
Test(archs, mistral_window) { check_arch("mistral-window"); }
Test(archs, qwen2_window) { check_arch("qwen2-window"); }
Test(archs, gptj) { check_arch("gptj"); }
Test(archs, llama_yarn) { check_arch("llama-yarn"); }
Test(archs, qwen2_yarn) { check_arch("qwen2-yarn"); }
Test(archs, phi3_longrope) { check_arch("phi3-longrope"); }
Test(archs, phi3_longrope_short) { check_arch("phi3-longrope-short"); }
