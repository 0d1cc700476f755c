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
    ag_metric_set sel;
    ag_metric_set_families(&sel, AG_FAMILIES_WEIGHTS);
    ag_record rec;
    ag_record_init(&rec, 0, 0, D, D);
    ag_error err = {0};
    if (ag_weight_metrics(&f, &sel, &rec, &err) != AG_OK) {
        fprintf(stderr, "head_weights: %s\n", err.message);
        return 1;
    }
    ag_output_meta meta = {.command = "example", .source = "copying head"};
    return ag_records_write(stdout, AG_FORMAT_JSON, &rec, 1, &sel, &meta) == AG_OK ? 0 : 1;
}
