/* test_abi.c — the ABI rule of attngeom/core.h: record lists built through
 * the opaque API hold what the private layouts say, and structs that carry
 * their size read an older caller's shorter struct with the library's
 * defaults for the fields it lacks, while a size 0 (never set) or a size
 * above the library's is refused with AG_EINVAL. The other half — a program
 * compiled against the public headers alone — is tests/cli/abi.sh. */
#include <math.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "attngeom.h"
#include "../../analysis/metrics_int.h" // the layouts, to check the getters against

/* A 4 x 4 causal attention matrix. Its graph W = (A + Aᵀ)/2 has W_01 =
 * 0.3, W_02 = 0.25 and every other pair below 0.2, so the edges are
 * {0,1}, {0,2} at τ = 1/n = 0.25 and {0,1} alone at τ = 0.28. (4, 4) */
static const double CAUSAL4[16] = {
    1.0, 0, 0, 0,
    0.6, 0.4, 0, 0,
    0.5, 0.2, 0.3, 0,
    0.1, 0.2, 0.3, 0.4,
};

Test(abi, record_list_builds_moves_and_clears)
{
    ag_error err = {0};
    ag_record_list *a = ag_record_list_new(), *b = ag_record_list_new();
    cr_assert(a && b);
    cr_assert_eq(ag_record_list_count(a), 0);
    cr_assert_eq(ag_record_list_count(NULL), 0);
    for (int i = 0; i < 100; i++) { /* past the first growth (64) */
        ag_record *r = ag_record_list_add(i < 70 ? a : b, &err);
        cr_assert_not_null(r);
        cr_assert_eq(r->text, -1, "a new record has no text");
        cr_assert_eq(r->kind[AG_M_SIGMA_MAX], AG_V_ABSENT);
        ag_record_init(r, i, i % 3, 2, 3);
        ag_record_set_text(r, 1000 + i);
        ag_record_set(r, AG_M_SINK_MASS, AG_V_NUMBER, 0.5 * i);
    }
    cr_assert_eq(ag_record_list_count(a), 70);
    cr_assert_eq(ag_record_list_move(a, b, &err), AG_OK);
    cr_assert_eq(ag_record_list_count(a), 100);
    cr_assert_eq(ag_record_list_count(b), 0);
    for (size_t i = 0; i < 100; i++) {
        const ag_record *r = ag_record_list_get(a, i);
        cr_assert_eq(ag_record_layer(r), (int)i);
        cr_assert_eq(ag_record_head(r), (int)i % 3);
        cr_assert_eq(ag_record_text(r), 1000 + (long)i);
        cr_assert_eq(ag_record_rows(r), 2);
        cr_assert_eq(ag_record_cols(r), 3);
        double v = -1;
        cr_assert_eq(ag_record_value(r, AG_M_SINK_MASS, &v), AG_V_NUMBER);
        cr_assert_eq(v, 0.5 * (double)i);
        cr_assert_eq(ag_record_value(r, AG_M_SIGMA_MAX, &v), AG_V_ABSENT);
        cr_assert_eq(v, 0);
        cr_assert_eq(ag_record_list_at(a, i), r, "at and get name the same record");
    }
    cr_assert_null(ag_record_list_get(a, 100));
    cr_assert_null(ag_record_list_at(a, 100));
    /* moving into an empty list takes the records whole, in order */
    cr_assert_eq(ag_record_list_move(b, a, &err), AG_OK);
    cr_assert_eq(ag_record_list_count(b), 100);
    cr_assert_eq(ag_record_list_count(a), 0);
    cr_assert_eq(ag_record_layer(ag_record_list_get(b, 99)), 99);
    ag_record_list_clear(b);
    cr_assert_eq(ag_record_list_count(b), 0);
    ag_record_list_free(a);
    ag_record_list_free(b);
    ag_record_list_free(NULL);
}

/* The table of a list: its columns follow the selection, "text" comes
 * when a record has one, and each cell is the record's value. */
Test(abi, records_table_of_a_list)
{
    ag_error err = {0};
    ag_metric_set *sel = NULL;
    cr_assert_eq(ag_metric_set_new(AG_FAMILIES_MATRIX, "sink_mass,edges", &sel, &err), AG_OK);
    ag_record_list *list = ag_record_list_new();
    ag_record *r = ag_record_list_add(list, &err);
    ag_record_init(r, 2, 1, 4, 4);
    ag_record_set(r, AG_M_SINK_MASS, AG_V_NUMBER, 0.25);
    ag_record_set(r, AG_M_EDGES, AG_V_INTEGER, 7);
    ag_table t;
    cr_assert_eq(ag_records_table(list, sel, &t, &err), AG_OK);
    const char *keys[] = {"layer", "head", "rows", "cols", "sink_mass", "edges"};
    cr_assert_eq(t.ncol, 6);
    cr_assert_eq(t.nrow, 1);
    for (size_t c = 0; c < 6; c++)
        cr_assert_str_eq(t.keys[c], keys[c]);
    cr_assert_eq(t.cells[4].value, 0.25);
    cr_assert_eq(t.cells[5].kind, AG_CELL_INTEGER);
    cr_assert_eq(t.cells[5].value, 7);
    ag_table_free(&t);
    ag_record_set_text(r, 3);
    cr_assert_eq(ag_records_table(list, sel, &t, &err), AG_OK);
    cr_assert_eq(t.ncol, 7);
    cr_assert_str_eq(t.keys[6], "text");
    ag_table_free(&t);
    /* no list: the header alone */
    cr_assert_eq(ag_records_table(NULL, sel, &t, &err), AG_OK);
    cr_assert_eq(t.nrow, 0);
    cr_assert_eq(t.ncol, 6);
    ag_table_free(&t);
    ag_record_list_free(list);
    ag_metric_set_free(sel);
}

/* A failed parse leaves the selection as it was. */
Test(abi, parse_failure_keeps_the_selection)
{
    ag_metric_set *sel = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_metric_set_new(AG_FAMILIES_MATRIX, "sink_mass", &sel, &err), AG_OK);
    cr_assert_eq(ag_metric_set_parse(sel, "entropy_mean,nope", &err), AG_EINVAL);
    cr_assert_eq(ag_metric_set_count(sel), 1);
    cr_assert(ag_metric_set_has(sel, AG_M_SINK_MASS));
    cr_assert_eq(ag_metric_set_parse(sel, "entropy_mean", &err), AG_OK);
    cr_assert_eq(ag_metric_set_count(sel), 1);
    cr_assert(ag_metric_set_has(sel, AG_M_ENTROPY_MEAN));
    ag_metric_set_free(sel);
}

/* Family F of CAUSAL4 under options opt, into *edges and *forman. */
static int curvature_with(const ag_matrix_options *opt, double *edges, double *forman,
                          ag_error *err)
{
    ag_metric_set *sel = NULL;
    ag_record *r = ag_record_new();
    int status = ag_metric_set_new(AG_FAMILIES_MATRIX, "edges,forman_mean", &sel, err);
    if (status == AG_OK)
        status = ag_matrix_metrics_ex(CAUSAL4, 4, 4, sel, opt, r, err);
    ag_record_value(r, AG_M_EDGES, edges);
    ag_record_value(r, AG_M_FORMAN_MEAN, forman);
    ag_record_free(r);
    ag_metric_set_free(sel);
    return status;
}

/* An older caller's ag_matrix_options knew the size field only: the
 * library's default threshold (1/n) fills in, whatever lies beyond the
 * size it gave. With the whole struct its own threshold counts. */
Test(abi, matrix_options_older_size_gets_defaults)
{
    ag_error err = {0};
    double e_def, f_def, e_old, f_old, e_new, f_new;
    cr_assert_eq(curvature_with(NULL, &e_def, &f_def, &err), AG_OK);
    /* F(0,1) = 2 − √(0.3/0.25), F(0,2) = 2 − √(0.25/0.3) (leaves 1 and 2
     * have no other neighbour) */
    cr_assert_eq(e_def, 2, "edges at 1/n: %g", e_def);
    cr_assert_float_eq(f_def, (4 - sqrt(0.3 / 0.25) - sqrt(0.25 / 0.3)) / 2, 1e-15);
    ag_matrix_options old = AG_MATRIX_OPTIONS_DEFAULT;
    old.size = offsetof(ag_matrix_options, edge_threshold);
    old.edge_threshold = 0.28; /* beyond the older size: not read */
    cr_assert_eq(curvature_with(&old, &e_old, &f_old, &err), AG_OK);
    cr_assert_eq(e_old, e_def);
    cr_assert_eq(f_old, f_def);
    ag_matrix_options now = AG_MATRIX_OPTIONS_DEFAULT;
    now.edge_threshold = 0.28;
    cr_assert_eq(curvature_with(&now, &e_new, &f_new, &err), AG_OK);
    cr_assert_eq(e_new, 1, "edges at 0.28: %g", e_new);
    cr_assert_eq(f_new, 2, "a lone edge: F = 2");
}

Test(abi, unset_and_newer_sizes_are_refused)
{
    ag_error err = {0};
    double e, f;
    ag_matrix_options zero = {.edge_threshold = 0.1}; /* no macro: size 0 */
    cr_assert_eq(curvature_with(&zero, &e, &f, &err), AG_EINVAL);
    cr_assert_str_eq(err.message, "ag_matrix_options: size 0: the size is not set (start "
                                  "from its _DEFAULT initializer)");
    /* a newer header's larger struct: the bytes past ours are unknown */
    struct {
        ag_matrix_options o;
        double newer_field;
    } newer = {AG_MATRIX_OPTIONS_DEFAULT, 1.0};
    newer.o.size = sizeof newer;
    cr_assert_eq(curvature_with(&newer.o, &e, &f, &err), AG_EINVAL);
    char want[AG_ERROR_MESSAGE_MAX];
    snprintf(want, sizeof want, "ag_matrix_options: size %zu is larger than the %zu bytes this "
             "library (attngeom %s) knows: the program was built against newer headers",
             sizeof newer, sizeof(ag_matrix_options), ag_version());
    cr_assert_str_eq(err.message, want);

    /* the same rule in every sized struct: a few through their functions */
    ag_forward_options fo = {.precision = AG_PRECISION_F64};
    cr_assert_eq(ag_model_forward_ex(NULL, NULL, 0, &fo, NULL, NULL, NULL, &err), AG_EINVAL);
    cr_assert(strstr(err.message, "ag_forward_options: size 0"), "%s", err.message);
    ag_attn_layer_spec spec = {.n = 1};
    ag_array out;
    cr_assert_eq(ag_attention_layer(&spec, &out, &err), AG_EINVAL);
    cr_assert(strstr(err.message, "ag_attn_layer_spec: size 0"), "%s", err.message);
    ag_plot_page page = {.format = AG_PLOT_SVG, .width = 300, .height = 200};
    double v[1] = {1};
    ag_plot_grid g = AG_PLOT_GRID_DEFAULT;
    g.rows = g.cols = 1;
    g.values = v;
    ag_plot_output po;
    cr_assert_eq(ag_plot_grid_render(&g, &page, &po, &err), AG_EINVAL);
    cr_assert(strstr(err.message, "ag_plot_page: size 0"), "%s", err.message);
    ag_table t;
    const char *keys[] = {"a"};
    cr_assert_eq(ag_table_init(&t, keys, 1, &err), AG_OK);
    ag_output_meta meta = {.command = "x"};
    char buf[256];
    FILE *fp = fmemopen(buf, sizeof buf, "w");
    cr_assert_eq(ag_table_write(fp, AG_FORMAT_JSON, &t, &meta), AG_EINVAL);
    ag_output_meta ok = AG_OUTPUT_META_DEFAULT;
    ok.command = "x";
    cr_assert_eq(ag_table_write(fp, AG_FORMAT_JSON, &t, &ok), AG_OK);
    fclose(fp);
    ag_table_free(&t);
}

/* Family E's sensitivity with options opt on a fixed head. */
static double sensitivity_with(const ag_stability_options *opt)
{
    static const double x[12] = {0.3, -0.2, 0.5, 0.1, -0.4, 0.2, 0.7, 0.0, -0.1, 0.2, 0.3, -0.6};
    static const double w[6] = {0.5, -0.3, 0.2, 0.8, -0.6, 0.1};
    ag_head_input in = {.x = x, .n = 4, .d = 3, .wq = w, .wk = w + 3, .d_h = 1, .causal = 1};
    ag_metric_set *sel = NULL;
    ag_record *r = ag_record_new();
    ag_error err = {0};
    cr_assert_eq(ag_metric_set_new(AG_FAMILIES_HEADS, "sensitivity", &sel, &err), AG_OK);
    cr_assert_eq(ag_stability_metrics(&in, opt, sel, r, &err), AG_OK, "%s", err.message);
    double s = NAN;
    cr_assert_eq(ag_record_value(r, AG_M_SENSITIVITY, &s), AG_V_NUMBER);
    ag_record_free(r);
    ag_metric_set_free(sel);
    return s;
}

/* An older ag_stability_options that knew epsilon only: trials and seed
 * are the defaults (8, 1), not the garbage past its size. */
Test(abi, stability_options_older_size_gets_defaults)
{
    ag_stability_options full = AG_STABILITY_OPTIONS_DEFAULT;
    full.epsilon = 1e-2;
    ag_stability_options old = full;
    old.size = offsetof(ag_stability_options, trials);
    old.trials = 99;
    old.seed = 12345;
    ag_stability_options other = full;
    other.seed = 12345;
    double s_full = sensitivity_with(&full), s_old = sensitivity_with(&old);
    cr_assert_eq(s_old, s_full, "%.17g vs %.17g", s_old, s_full);
    /* and the seed matters, so the comparison above could fail */
    cr_assert_neq(sensitivity_with(&other), s_full);
    /* ag_stability_options_init sets the size too */
    ag_stability_options init;
    ag_stability_options_init(&init);
    cr_assert_eq(init.size, sizeof init);
    cr_assert_eq(sensitivity_with(&init), sensitivity_with(NULL));
}

/* An older ag_aggregate_options without level: the default 0.95 fills in
 * (a zero level would be refused). */
Test(abi, aggregate_options_older_size_gets_defaults)
{
    ag_aggregate_options old = AG_AGGREGATE_OPTIONS_DEFAULT;
    old.size = offsetof(ag_aggregate_options, level);
    old.level = 0;
    ag_aggregate *a = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_aggregate_new(&old, &a, &err), AG_OK, "%s", err.message);
    ag_aggregate_free(a);
    ag_aggregate_options now = AG_AGGREGATE_OPTIONS_DEFAULT;
    now.level = 0;
    cr_assert_eq(ag_aggregate_new(&now, &a, &err), AG_EINVAL);
}
