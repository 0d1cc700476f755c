/* test_figures.c — ag_run_plot (attngeom/plot.h), the figures of `attngeom
 * plot`: the bytes equal those of the renderer given the cell values the
 * figure should hold (one head picked from [L, H, n, n], a cell the mean of
 * its records), and the data errors carry the CLI's messages. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "attngeom.h"
#include "../util/test_plot_util.h"

TestSuite(figures, .fini = plot_test_fini);

/* A [2, 2, 3, 3] array whose entry (l, h, i, j) is (l·2 + h)·10 + i·3 + j. */
static const char *attention_npy(void)
{
    static double v[36];
    for (size_t k = 0; k < 36; k++)
        v[k] = (double)((k / 9) * 10 + k % 9);
    return plot_heads_npy("A.npy", v);
}

Test(figures, attention_draws_the_chosen_head)
{
    ag_run_plot_spec s = AG_RUN_PLOT_SPEC_DEFAULT;
    s.kind = AG_PLOT_ATTENTION;
    s.input = attention_npy();
    s.layer = 1;
    s.head = 0;
    ag_plot_output got = {0}, want = {0};
    ag_error err = {0};
    cr_assert_eq(ag_run_plot(&s, &got, &err), AG_OK, "%s", err.message);
    double M[9];
    for (int k = 0; k < 9; k++)
        M[k] = 20 + k; /* (l, h) = (1, 0) */
    ag_plot_grid g = plot_matrix_grid(3, 3, M, "attention, layer 1, head 0", "query", "key",
                                      "attention weight");
    ag_plot_page page = s.page;
    cr_assert_eq(ag_plot_grid_render(&g, &page, &want, &err), AG_OK, "%s", err.message);
    cr_expect(plot_same(&got, &want), "ag_run_plot's bytes differ from the grid of head (1, 0)");
    ag_plot_output_free(&got);
    ag_plot_output_free(&want);
}

Test(figures, array_errors_name_the_input)
{
    const char *path = tio_path("M.npy");
    size_t shape[2] = {3, 3};
    cr_assert_eq(tio_write_npy(path, "<f8", 0, 1, 2, shape, NULL), 0);
    ag_run_plot_spec s = AG_RUN_PLOT_SPEC_DEFAULT;
    s.kind = AG_PLOT_SPECTRUM;
    s.input = path;
    s.head = 0;
    ag_plot_output fig = {0};
    ag_error err = {0};
    char want[600];
    cr_assert_eq(ag_run_plot(&s, &fig, &err), AG_ESHAPE);
    snprintf(want, sizeof want, "%s: holds [3, 3], which has no head axis (--head applies to "
             "[L, H, n, n])", path);
    cr_expect_str_eq(err.message, want);
    cr_expect_null(fig.data);

    s.kind = AG_PLOT_ATTENTION;
    s.input = attention_npy();
    s.head = 2;
    cr_assert_eq(ag_run_plot(&s, &fig, &err), AG_ERANGE);
    snprintf(want, sizeof want, "%s: --head 2 is out of range: [2, 2, 3, 3] holds 2 heads",
             s.input);
    cr_expect_str_eq(err.message, want);
}

/* Records of one model: cell (0, 1) twice (its mean is drawn), (1, 0) once. */
static const char *records_jsonl(void)
{
    static const char text[] =
        "{\"model\": \"m\", \"layer\": 0, \"head\": 1, \"x\": 1.0}\n"
        "{\"model\": \"m\", \"layer\": 0, \"head\": 1, \"x\": 4.0}\n"
        "{\"model\": \"m\", \"layer\": 1, \"head\": 0, \"x\": 0.5}\n";
    const char *path = tio_path("r.jsonl");
    cr_assert_eq(tio_write_bytes(path, text, sizeof text - 1), 0);
    return path;
}

Test(figures, heatmap_cells_are_means_of_records)
{
    ag_run_plot_spec s = AG_RUN_PLOT_SPEC_DEFAULT;
    s.kind = AG_PLOT_HEATMAP;
    s.input = records_jsonl();
    s.metric = "x";
    s.page.format = AG_PLOT_PNG;
    ag_plot_output got = {0}, want = {0};
    ag_error err = {0};
    cr_assert_eq(ag_run_plot(&s, &got, &err), AG_OK, "%s", err.message);
    const double cells[4] = {NAN, 2.5, 0.5, NAN};
    const char *const labels[2] = {"0", "1"};
    ag_plot_grid g = AG_PLOT_GRID_DEFAULT;
    g.rows = g.cols = 2;
    g.values = cells;
    g.row_labels = g.col_labels = labels;
    g.title = "x, m";
    g.row_title = "layer", g.col_title = "head", g.value_title = "x";
    cr_assert_eq(ag_plot_grid_render(&g, &s.page, &want, &err), AG_OK, "%s", err.message);
    cr_expect(plot_same(&got, &want), "the heatmap is not the grid of the records' means");
    ag_plot_output_free(&got);
    ag_plot_output_free(&want);
}

Test(figures, records_errors_and_bad_specs)
{
    ag_run_plot_spec s = AG_RUN_PLOT_SPEC_DEFAULT;
    s.kind = AG_PLOT_DEPTH;
    s.input = records_jsonl();
    s.metric = "y";
    ag_plot_output fig = {0};
    ag_error err = {0};
    char want[600];
    cr_assert_eq(ag_run_plot(&s, &fig, &err), AG_EFORMAT);
    snprintf(want, sizeof want, "%s: no record holds \"y\"", s.input);
    cr_expect_str_eq(err.message, want);

    s.metric = NULL;
    cr_expect_eq(ag_run_plot(&s, &fig, &err), AG_EINVAL);
    cr_expect_str_eq(err.message, "--kind depth needs --metric K");
    s.size = 0; /* not from AG_RUN_PLOT_SPEC_DEFAULT */
    cr_expect_eq(ag_run_plot(&s, &fig, &err), AG_EINVAL);
    cr_expect_eq(ag_plot_kind_from_name("patches"), AG_PLOT_PATCHES);
    cr_expect_eq(ag_plot_kind_from_name("bars"), -1);
    cr_expect_str_eq(ag_plot_kind_name(AG_PLOT_SIMILARITY), "similarity");
    cr_expect_null(ag_plot_kind_name(AG_PLOT_KIND_COUNT));
}

/* ---- forest ---- */

/* Three texts (the units) through four heads; head (l, h) has the values
 * base + s·t at text t, so its mean is base + s and its standard deviation
 * s. Head (0, 1)'s text 2 is two records (2 and 3) whose mean, 2.5, is the
 * unit's value: the interval is over 3 units, not 4 records. */
static const char *forest_jsonl(void)
{
    static const char text[] =
        "{\"model\":\"m\",\"text\":0,\"layer\":0,\"head\":0,\"x\":2}\n"
        "{\"model\":\"m\",\"text\":1,\"layer\":0,\"head\":0,\"x\":2.5}\n"
        "{\"model\":\"m\",\"text\":2,\"layer\":0,\"head\":0,\"x\":3}\n"
        "{\"model\":\"m\",\"text\":0,\"layer\":0,\"head\":1,\"x\":0.5}\n"
        "{\"model\":\"m\",\"text\":1,\"layer\":0,\"head\":1,\"x\":1.5}\n"
        "{\"model\":\"m\",\"text\":2,\"layer\":0,\"head\":1,\"x\":2}\n"
        "{\"model\":\"m\",\"text\":2,\"layer\":0,\"head\":1,\"x\":3}\n"
        "{\"model\":\"m\",\"text\":0,\"layer\":1,\"head\":0,\"x\":3}\n"
        "{\"model\":\"m\",\"text\":1,\"layer\":1,\"head\":0,\"x\":3.125}\n"
        "{\"model\":\"m\",\"text\":2,\"layer\":1,\"head\":0,\"x\":3.25}\n"
        "{\"model\":\"m\",\"text\":0,\"layer\":1,\"head\":1,\"x\":1}\n"
        "{\"model\":\"m\",\"text\":1,\"layer\":1,\"head\":1,\"x\":1}\n"
        "{\"model\":\"m\",\"text\":2,\"layer\":1,\"head\":1,\"x\":1}\n";
    const char *path = tio_path("forest.jsonl");
    cr_assert_eq(tio_write_bytes(path, text, sizeof text - 1), 0);
    return path;
}

/* Student's t quantiles t_{0.975, 2} and t_{0.95, 2} (scipy.stats.t.ppf). */
#define T975_2 4.302652729749464
#define T95_2 2.919985580355516

Test(figures, forest_rows_are_unit_intervals_sorted_by_mean)
{
    ag_run_plot_spec s = AG_RUN_PLOT_SPEC_DEFAULT;
    s.kind = AG_PLOT_FOREST;
    s.input = forest_jsonl();
    s.metric = "x";
    s.ref = 1;
    ag_plot_output got = {0}, want = {0};
    ag_error err = {0};
    cr_assert_eq(ag_run_plot(&s, &got, &err), AG_OK, "%s", err.message);
    /* means 2.5, 1.5, 3.125, 1; standard deviations 0.5, 1, 0.125, 0 */
    const char *const labels[4] = {"L1 H0", "L0 H0", "L0 H1", "L1 H1"};
    double half[4] = {0.125, 0.5, 1, 0}, mean[4] = {3.125, 2.5, 1.5, 1}, lo[4], hi[4];
    for (int k = 0; k < 4; k++) {
        lo[k] = mean[k] - T975_2 * half[k] / sqrt(3);
        hi[k] = mean[k] + T975_2 * half[k] / sqrt(3);
    }
    ag_plot_forest f = AG_PLOT_FOREST_DEFAULT;
    f.rows = 4, f.labels = labels, f.mean = mean, f.lo = lo, f.hi = hi, f.ref = 1;
    f.title = "x: mean and 95% interval per head, m";
    f.x_title = "x";
    cr_assert_eq(ag_plot_forest_render(&f, &s.page, &want, &err), AG_OK, "%s", err.message);
    cr_expect(plot_same(&got, &want), "the forest is not the sorted unit intervals");
    ag_plot_output_free(&got);
    ag_plot_output_free(&want);
    /* without the reference line the figure differs */
    s.ref = NAN;
    cr_assert_eq(ag_run_plot(&s, &got, &err), AG_OK, "%s", err.message);
    f.ref = NAN;
    cr_assert_eq(ag_plot_forest_render(&f, &s.page, &want, &err), AG_OK, "%s", err.message);
    cr_expect(plot_same(&got, &want));
    ag_plot_output_free(&want);
    f.ref = 1;
    cr_assert_eq(ag_plot_forest_render(&f, &s.page, &want, &err), AG_OK, "%s", err.message);
    cr_expect(!plot_same(&got, &want), "the reference line draws nothing");
    ag_plot_output_free(&got);
    ag_plot_output_free(&want);
}

Test(figures, forest_by_layer_averages_each_unit_over_its_heads)
{
    ag_run_plot_spec s = AG_RUN_PLOT_SPEC_DEFAULT;
    s.kind = AG_PLOT_FOREST;
    s.input = forest_jsonl();
    s.metric = "x";
    s.group_by = "layer";
    s.level = 0.9;
    s.page.format = AG_PLOT_PNG;
    ag_plot_output got = {0}, want = {0};
    ag_error err = {0};
    cr_assert_eq(ag_run_plot(&s, &got, &err), AG_OK, "%s", err.message);
    /* a unit's value is the mean of its records (aggregate's rule): layer 0,
     * texts 0..2: (2 + 0.5)/2, (2.5 + 1.5)/2, (3 + 2 + 3)/3; layer 1: (3 +
     * 1)/2, (3.125 + 1)/2, (3.25 + 1)/2 = 2, 2.0625, 2.125 (mean 2.0625, sd
     * 0.0625, above layer 0's mean 71/36) */
    const double units[2][3] = {{2, 2.0625, 2.125}, {1.25, 2, 8.0 / 3}};
    const char *const labels[2] = {"L1", "L0"};
    double mean[2], lo[2], hi[2];
    for (int k = 0; k < 2; k++) {
        const double *u = units[k];
        mean[k] = (u[0] + u[1] + u[2]) / 3;
        double sd = sqrt((pow(u[0] - mean[k], 2) + pow(u[1] - mean[k], 2) +
                          pow(u[2] - mean[k], 2)) / 2);
        lo[k] = mean[k] - T95_2 * sd / sqrt(3);
        hi[k] = mean[k] + T95_2 * sd / sqrt(3);
    }
    cr_expect_float_eq(mean[1], 71.0 / 36, 1e-15);
    ag_plot_forest f = AG_PLOT_FOREST_DEFAULT;
    f.rows = 2, f.labels = labels, f.mean = mean, f.lo = lo, f.hi = hi;
    f.title = "x: mean and 90% interval per layer"; /* model is no group key */
    f.x_title = "x";
    cr_assert_eq(ag_plot_forest_render(&f, &s.page, &want, &err), AG_OK, "%s", err.message);
    cr_expect(plot_same(&got, &want), "the forest by layer is not the layers' unit intervals");
    ag_plot_output_free(&got);
    ag_plot_output_free(&want);
}

Test(figures, forest_errors)
{
    ag_run_plot_spec s = AG_RUN_PLOT_SPEC_DEFAULT;
    s.kind = AG_PLOT_FOREST;
    s.input = forest_jsonl();
    s.metric = "y";
    ag_plot_output fig = {0};
    ag_error err = {0};
    char want[600];
    cr_assert_eq(ag_run_plot(&s, &fig, &err), AG_EFORMAT);
    snprintf(want, sizeof want, "%s: no record holds \"y\" as a number", s.input);
    cr_expect_str_eq(err.message, want);
    s.metric = "x";
    s.level = 1;
    cr_expect_eq(ag_run_plot(&s, &fig, &err), AG_EINVAL);
    cr_expect_str_eq(err.message, "--ci takes a level in (0, 1), not 1");
    s.level = 0.95;
    s.group_by = "layer,,head"; /* an empty key is refused, not skipped */
    cr_expect_eq(ag_run_plot(&s, &fig, &err), AG_EINVAL);
    cr_expect(strstr(err.message, "empty") != NULL, "%s", err.message);
    s.group_by = NULL;
    cr_expect_str_eq(ag_plot_kind_name(AG_PLOT_FOREST), "forest");
    /* the renderer: no rows, too many rows, a page too short for them */
    ag_plot_forest f = AG_PLOT_FOREST_DEFAULT;
    ag_plot_page page = AG_PLOT_PAGE_DEFAULT;
    cr_expect_eq(ag_plot_forest_render(&f, &page, &fig, &err), AG_EINVAL);
    static double v[AG_PLOT_MAX_FOREST_ROWS + 1];
    f.mean = v;
    f.rows = AG_PLOT_MAX_FOREST_ROWS + 1;
    cr_expect_eq(ag_plot_forest_render(&f, &page, &fig, &err), AG_ELIMIT);
    f.rows = 100; /* 324 points hold 324 - 58 points of rows: 1.9 points a row */
    cr_expect_eq(ag_plot_forest_render(&f, &page, &fig, &err), AG_EINVAL);
    cr_expect(strstr(err.message, "too small for 100 rows") != NULL, "%s", err.message);
    page.width = page.height = 0; /* fitted: every row has room */
    cr_expect_eq(ag_plot_forest_render(&f, &page, &fig, &err), AG_OK, "%s", err.message);
    ag_plot_output_free(&fig);
}

/* ---- similarity: the clustered order and its dendrogram ---- */

Test(figures, similarity_is_ordered_by_average_linkage)
{
    /* two tight pairs far apart: {0, 2} at 1, {1, 3} at 2, between them 10;
     * average linkage joins (0, 2), then (1, 3), then both at 10, and its
     * leaves are 0, 2, 1, 3 (scipy's leaves_list) */
    double S[16];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            S[i * 4 + j] = i == j ? 0 : 10;
    S[0 * 4 + 2] = S[2 * 4 + 0] = 1;
    S[1 * 4 + 3] = S[3 * 4 + 1] = 2;
    const char *path = tio_path("S4.npy");
    size_t shape[2] = {4, 4};
    cr_assert_eq(tio_write_npy(path, "<f8", 0, 1, 2, shape, S), 0);
    size_t order[4];
    double Z[12];
    ag_error err = {0};
    cr_assert_eq(ag_plot_cluster_order(S, 4, order, Z, &err), AG_OK, "%s", err.message);
    const size_t want_order[4] = {0, 2, 1, 3};
    const double want_Z[12] = {0, 2, 1, 2, 1, 3, 2, 2, 4, 5, 10, 4};
    for (int k = 0; k < 4; k++)
        cr_expect_eq(order[k], want_order[k]);
    for (int k = 0; k < 12; k++)
        cr_expect_eq(Z[k], want_Z[k], "Z[%d] = %g", k, Z[k]);

    ag_run_plot_spec s = AG_RUN_PLOT_SPEC_DEFAULT;
    s.kind = AG_PLOT_SIMILARITY;
    s.input = path;
    s.heads_per_layer = 2;
    ag_plot_output got = {0}, want = {0};
    cr_assert_eq(ag_run_plot(&s, &got, &err), AG_OK, "%s", err.message);
    double P[16];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            P[i * 4 + j] = S[want_order[i] * 4 + want_order[j]];
    const char *const labels[4] = {"L0H0", "L1H0", "L0H1", "L1H1"};
    ag_plot_grid g = plot_matrix_grid(4, 4, P, "Jensen\xe2\x80\x93Shannon distance between heads",
                                      "head (average-linkage order)", "head (average-linkage order)",
                                      "Jensen\xe2\x80\x93Shannon distance");
    g.row_labels = g.col_labels = labels;
    g.linkage = want_Z;
    cr_assert_eq(ag_plot_grid_render(&g, &s.page, &want, &err), AG_OK, "%s", err.message);
    cr_expect(plot_same(&got, &want), "not the clustered matrix with its dendrogram");
    ag_plot_output_free(&got);
    ag_plot_output_free(&want);

    /* --order layer: the matrix as it is, no dendrogram */
    s.order_layer = 1;
    cr_assert_eq(ag_run_plot(&s, &got, &err), AG_OK, "%s", err.message);
    const char *const in_order[4] = {"L0H0", "L0H1", "L1H0", "L1H1"};
    g.values = S;
    g.row_labels = g.col_labels = in_order;
    g.row_title = g.col_title = "head";
    g.linkage = NULL;
    cr_assert_eq(ag_plot_grid_render(&g, &s.page, &want, &err), AG_OK, "%s", err.message);
    cr_expect(plot_same(&got, &want), "--order layer is not the matrix as it is");
    ag_plot_output_free(&got);
    ag_plot_output_free(&want);

    /* a linkage that is not a tree is refused */
    const double bad[12] = {0, 2, 1, 2, 0, 3, 2, 2, 4, 5, 10, 4}; /* leaf 0 twice */
    g.linkage = bad;
    cr_expect_eq(ag_plot_grid_render(&g, &s.page, &want, &err), AG_EINVAL);
    /* an asymmetric matrix cannot be clustered: the message says what to do */
    S[1] = 3;
    cr_assert_eq(tio_write_npy(path, "<f8", 0, 1, 2, shape, S), 0);
    s.order_layer = 0;
    cr_expect_eq(ag_run_plot(&s, &got, &err), AG_EINVAL);
    cr_expect(strstr(err.message, "--order layer") != NULL, "%s", err.message);
}

Test(figures, rollout_is_titled_by_its_layer)
{
    /* rollout's R [L, n, n]: R_l is the flow through layers 0..l */
    double R[2 * 9];
    for (int k = 0; k < 18; k++)
        R[k] = (double)k / 17;
    const char *path = tio_path("R.npy");
    size_t shape[3] = {2, 3, 3};
    cr_assert_eq(tio_write_npy(path, "<f8", 0, 1, 3, shape, R), 0);
    ag_run_plot_spec s = AG_RUN_PLOT_SPEC_DEFAULT;
    s.kind = AG_PLOT_ATTENTION;
    s.input = path;
    s.layer = 1;
    ag_plot_output got = {0}, want = {0};
    ag_error err = {0};
    cr_assert_eq(ag_run_plot(&s, &got, &err), AG_OK, "%s", err.message);
    ag_plot_grid g = plot_matrix_grid(3, 3, R + 9, "rollout through layer 1", "query", "key",
                                      "rollout weight");
    cr_assert_eq(ag_plot_grid_render(&g, &s.page, &want, &err), AG_OK, "%s", err.message);
    cr_expect(plot_same(&got, &want), "not titled 'rollout through layer 1'");
    ag_plot_output_free(&got);
    ag_plot_output_free(&want);
}

/* ---- encoder–decoder models (issue 30) ---- */

/* A cross-attention [L_dec, H, n_tgt, n_src] = [1, 2, 2, 3]: head 1 is drawn
 * as the rectangle of its 2 target rows by 3 source columns, labelled by
 * the target's and the source's tokens files, and a labels file of the
 * other axis's length is refused naming its count. */
Test(figures, cross_attention_is_target_rows_by_source_columns)
{
    const char *path = tio_path("C.npy"), *src = tio_path("src.json"), *tgt = tio_path("tgt.json");
    size_t shape[4] = {1, 2, 2, 3};
    const double v[12] = {1, 0, 0, 0, 1, 0, 0.5, 0.25, 0.25, 0.125, 0.375, 0.5};
    cr_assert_eq(tio_write_npy(path, "<f8", 0, 1, 4, shape, v), 0);
    static const char s_json[] = "{\"ids\":[4,5,6],\"tokens\":[\"a\",\"b\",\"c\"]}";
    static const char t_json[] = "{\"ids\":[0,7],\"tokens\":[\"<s>\",\"x\"]}";
    cr_assert_eq(tio_write_bytes(src, s_json, sizeof s_json - 1), 0);
    cr_assert_eq(tio_write_bytes(tgt, t_json, sizeof t_json - 1), 0);
    ag_run_plot_spec s = AG_RUN_PLOT_SPEC_DEFAULT;
    s.kind = AG_PLOT_ATTENTION;
    s.input = path, s.tokens = src, s.target_tokens = tgt;
    s.head = 1;
    ag_plot_output got = {0}, want = {0};
    ag_error err = {0};
    cr_assert_eq(ag_run_plot(&s, &got, &err), AG_OK, "%s", err.message);
    const char *const rows[2] = {"<s>", "x"}, *const cols[3] = {"a", "b", "c"};
    ag_plot_grid g = plot_matrix_grid(2, 3, v + 6 /* head 1 */, "cross-attention, layer 0, head 1",
                                      "target (query)", "source (key)", "attention weight");
    g.row_labels = rows, g.col_labels = cols;
    ag_plot_page page = s.page;
    cr_assert_eq(ag_plot_grid_render(&g, &page, &want, &err), AG_OK, "%s", err.message);
    cr_expect(plot_same(&got, &want), "not the 2 x 3 grid of head 1, target rows by source columns");
    ag_plot_output_free(&got);
    ag_plot_output_free(&want);

    char msg[600];
    s.target_tokens = src; /* 3 labels for 2 target rows */
    cr_assert_eq(ag_run_plot(&s, &got, &err), AG_ESHAPE);
    snprintf(msg, sizeof msg, "%s: 3 tokens, but the matrix's axis has 2", src);
    cr_expect_str_eq(err.message, msg);
    s.target_tokens = NULL; /* source labels alone: which axis is which? */
    cr_assert_eq(ag_run_plot(&s, &got, &err), AG_ESHAPE);
    snprintf(msg, sizeof msg, "%s: a 2 x 3 cross-attention: --tokens labels its 3 source tokens, "
             "--target-tokens T.json its 2 target tokens", path);
    cr_expect_str_eq(err.message, msg);
    s.kind = AG_PLOT_SPECTRUM, s.tokens = NULL;
    cr_expect_eq(ag_run_plot(&s, &got, &err), AG_ESHAPE);
    cr_expect_null(got.data);
}

/* Records of two stacks: depth draws --stack's alone (its line the mean of
 * that stack's heads), and without --stack refuses them naming it. */
Test(figures, depth_draws_one_stack)
{
    static const char text[] =
        "{\"model\":\"m\",\"stack\":\"encoder\",\"layer\":0,\"head\":0,\"x\":5}\n"
        "{\"model\":\"m\",\"stack\":\"cross\",\"layer\":0,\"head\":0,\"x\":1}\n"
        "{\"model\":\"m\",\"stack\":\"cross\",\"layer\":0,\"head\":1,\"x\":2}\n"
        "{\"model\":\"m\",\"stack\":\"cross\",\"layer\":1,\"head\":0,\"x\":0.5}\n"
        "{\"model\":\"m\",\"stack\":\"encoder\",\"layer\":1,\"head\":0,\"x\":7}\n";
    const char *path = tio_path("stacks.jsonl");
    cr_assert_eq(tio_write_bytes(path, text, sizeof text - 1), 0);
    ag_run_plot_spec s = AG_RUN_PLOT_SPEC_DEFAULT;
    s.kind = AG_PLOT_DEPTH;
    s.input = path, s.metric = "x", s.stack = "cross";
    ag_plot_output got = {0}, want = {0};
    ag_error err = {0};
    cr_assert_eq(ag_run_plot(&s, &got, &err), AG_OK, "%s", err.message);
    const double x[2] = {0, 1}, y[2] = {1.5, 0.5}, nan2[2] = {NAN, NAN};
    ag_plot_series line = {.count = 2, .x = x, .y = y, .lo = nan2, .hi = nan2};
    ag_plot_lines p = AG_PLOT_LINES_DEFAULT;
    p.nseries = 1, p.series = &line;
    p.title = "x by layer, m, cross";
    p.x_title = "layer", p.y_title = "x";
    p.integer_x = 1, p.markers = 1;
    ag_plot_page page = s.page;
    cr_assert_eq(ag_plot_lines_render(&p, &page, &want, &err), AG_OK, "%s", err.message);
    cr_expect(plot_same(&got, &want), "not the line of the cross records' layer means");
    ag_plot_output_free(&got);
    ag_plot_output_free(&want);

    char msg[600];
    s.stack = NULL;
    cr_assert_eq(ag_run_plot(&s, &got, &err), AG_EFORMAT);
    snprintf(msg, sizeof msg, "%s: line 2: records of the stacks encoder and cross (an "
             "encoder-decoder model): a figure draws one; choose it with --stack "
             "encoder|decoder|cross", path);
    cr_expect_str_eq(err.message, msg);
    s.stack = "decoder";
    cr_assert_eq(ag_run_plot(&s, &got, &err), AG_EFORMAT);
    snprintf(msg, sizeof msg, "%s: no record holds \"x\" in --stack decoder", path);
    cr_expect_str_eq(err.message, msg);
}
