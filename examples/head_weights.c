/* head_weights.c — the weight-space metrics (docs/metrics.md, family D) of a head built in
 * C: a "copying" head whose OV circuit is 2·P, P the projection onto W_V's
 * columns, and whose QK circuit is symmetric (W_K = W_Q).
 *
 *   make examples && build/examples/head_weights
 *
 * Expected: qk_symmetry_score 1, ov_copying_score 1, ov_sigma_max 2,
 * ov_effective_rank = d_h. */
#include <stdio.h>

#include <attngeom.h>

enum { D = 6, DH = 2 };

int main(void)
{
    /* W_Q = W_K = W_V: the first two coordinate axes, scaled. (D, DH) */
    double wq[D * DH] = {0}, wo[DH * D] = {0};
    wq[0 * DH + 0] = 1.0;
    wq[1 * DH + 1] = 0.5;
    /* W_O = 2 W_V⁺ = 2 (W_VᵀW_V)⁻¹ W_Vᵀ: rows e₀ᵀ and 2e₁ᵀ, times 2. (DH, D) */
    wo[0 * D + 0] = 2.0;
    wo[1 * D + 1] = 4.0;

    ag_head_factors f = {.d = D, .d_h = DH, .d_out = D, .wq = wq, .ldq = DH,
                         .wk = wq, .ldk = DH, .wv = wq, .ldv = DH, .wo = wo, .ldo = D};
    /* The selection and the records are the library's (opaque: the ABI
     * rule of attngeom/core.h): the selection of every family-D key, and
     * a list holding the one record. */
    ag_error err = {0};
    ag_metric_set *sel = NULL;
    ag_record_list *recs = ag_record_list_new();
    ag_record *rec = recs ? ag_record_list_add(recs, &err) : NULL;
    int status = rec ? ag_metric_set_new(AG_FAMILIES_WEIGHTS, NULL, &sel, &err) : AG_ENOMEM;
    if (status == AG_OK) {
        ag_record_init(rec, 0, 0, D, D);
        status = ag_weight_metrics(&f, sel, rec, &err);
    }
    if (status == AG_OK) {
        ag_output_meta meta = AG_OUTPUT_META_DEFAULT;
        meta.command = "example";
        meta.source = "copying head";
        status = ag_records_write(stdout, AG_FORMAT_JSON, recs, sel, &meta);
    } else {
        fprintf(stderr, "head_weights: %s\n", err.message[0] ? err.message : ag_strerror(status));
    }
    ag_metric_set_free(sel);
    ag_record_list_free(recs);
    return status == AG_OK ? 0 : 1;
}
