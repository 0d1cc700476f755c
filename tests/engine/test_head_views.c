/* test_head_views.c — one head's view of a layer's weights
 * (ag_attn_weights_head_input, ag_attn_weights_head_factors, engine/
 * attn_weights.c): the column blocks of query head h and of its key/value
 * head h / (H / H_kv) under grouped and multi-query attention, read in
 * place with the full row strides; the layer's scale, mask, RoPE, soft cap
 * and window passed on; absent biases, W_V and W_O as NULL. */
#include <criterion/criterion.h>

#include "attngeom.h"

enum { D = 3, HD = 2, H = 4, D_OUT = 5 };

/* An [rows, cols] array whose element (r, c) is 1000·tag + 100·r + c. */
static ag_array filled(size_t rows, size_t cols, int tag, double *buf)
{
    ag_array a = {.ndim = 2, .shape = {rows, cols}, .data = buf};
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            buf[r * cols + c] = 1000.0 * tag + 100.0 * (double)r + (double)c;
    return a;
}

Test(head_views, grouped_query_input)
{
    double q[D * H * HD], k[D * 2 * HD], bq[H * HD], bk[2 * HD], x[D];
    ag_attn_weights w = {.layer = 1, .n_head = H, .n_kv_head = 2, .head_dim = HD, .causal = 1,
                         .rope = {.rotary_dim = 2, .theta = 10000}, .scale = 0.25,
                         .softcap = 30, .window = 7};
    w.wq = filled(D, H * HD, 1, q);
    w.wk = filled(D, 2 * HD, 2, k);
    w.bq = filled(1, H * HD, 3, bq);
    w.bk = filled(1, 2 * HD, 4, bk);
    for (int h = 0; h < H; h++) {
        ag_head_input in;
        ag_attn_weights_head_input(&w, x, 1, D, h, &in);
        size_t g = (size_t)h / 2; /* heads 0, 1 share kv head 0; 2, 3 kv head 1 */
        cr_assert(in.x == x && in.n == 1 && in.d == D && in.d_h == HD, "head %d", h);
        cr_assert(in.ldq == H * HD && in.ldk == 2 * HD, "head %d: full row strides", h);
        for (size_t r = 0; r < D; r++)
            for (size_t c = 0; c < HD; c++) {
                cr_assert_eq(in.wq[r * in.ldq + c], 1000 + 100.0 * r + (double)(h * HD + c));
                cr_assert_eq(in.wk[r * in.ldk + c], 2000 + 100.0 * r + (double)(g * HD + c));
            }
        cr_assert_eq(in.bq[0], 3000 + h * HD);
        cr_assert_eq(in.bk[1], 4000 + g * HD + 1);
        cr_assert(in.scale == 0.25 && in.causal == 1 && in.softcap == 30 && in.window == 7);
        cr_assert(in.rope.rotary_dim == 2 && in.rope.theta == 10000);
    }
    w.bq.data = w.bk.data = NULL;
    ag_head_input in;
    ag_attn_weights_head_input(&w, x, 1, D, 3, &in);
    cr_assert(in.bq == NULL && in.bk == NULL, "no biases: NULL, not an offset of NULL");
}

Test(head_views, multi_query_factors)
{
    double q[D * H * HD], k[D * HD], v[D * HD], o[H * HD * D_OUT];
    ag_attn_weights w = {.n_head = H, .n_kv_head = 1, .head_dim = HD};
    w.wq = filled(D, H * HD, 1, q);
    w.wk = filled(D, HD, 2, k);
    w.wv = filled(D, HD, 3, v);
    w.wo = filled(H * HD, D_OUT, 4, o);
    for (int h = 0; h < H; h++) {
        ag_head_factors f;
        ag_attn_weights_head_factors(&w, D, h, &f);
        cr_assert(f.d == D && f.d_h == HD && f.d_out == D_OUT, "head %d", h);
        cr_assert(f.wq == q + h * HD && f.ldq == H * HD, "head %d: its query block", h);
        cr_assert(f.wk == k && f.ldk == HD && f.wv == v && f.ldv == HD,
                  "head %d: the one key/value head", h);
        cr_assert(f.wo == o + h * HD * D_OUT && f.ldo == D_OUT, "head %d: its rows of W_O", h);
        cr_assert_eq(f.wo[1 * f.ldo + 4], 4000 + 100.0 * (h * HD + 1) + 4);
    }
    w.wv.data = w.wo.data = NULL;
    ag_head_factors f;
    ag_attn_weights_head_factors(&w, D, 2, &f);
    cr_assert(f.wv == NULL && f.ldv == 0 && f.wo == NULL && f.ldo == 0 && f.d_out == 0,
              "no W_V or W_O: the OV keys' factors are absent");
}
