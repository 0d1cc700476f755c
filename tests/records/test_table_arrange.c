/* test_table_arrange.c — ag_table_sort (--sort: stable, numbers by value
 * before text, nulls last in both directions) and ag_table_select
 * (--columns: a subset in the order asked; unknown and repeated keys
 * refused, the table left as it was). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "attngeom.h"

/* id (the row's place before sorting), x (numbers, two ties, a null, an
 * integer, a boolean), name (text, a null). */
static void make_table(ag_table *t)
{
    static const char *const keys[] = {"id", "x", "name"};
    static const double x[] = {2.5, -1, NAN, 2.5, 10, 1};
    static const ag_cell_kind kind[] = {AG_CELL_NUMBER, AG_CELL_NUMBER, AG_CELL_NULL,
                                        AG_CELL_NUMBER, AG_CELL_INTEGER, AG_CELL_BOOL};
    static const char *const name[] = {"b", "a", "c", NULL, "B", "a"};
    cr_assert_eq(ag_table_init(t, keys, 3, NULL), AG_OK);
    for (int r = 0; r < 6; r++) {
        ag_cell *row = ag_table_add_row(t, NULL);
        row[0] = (ag_cell){.kind = AG_CELL_INTEGER, .value = r};
        row[1] = (ag_cell){.kind = kind[r], .value = kind[r] == AG_CELL_NULL ? 0 : x[r]};
        if (name[r])
            cr_assert_eq(ag_table_set_text(t, &row[2], name[r], NULL), AG_OK);
    }
}

static void assert_ids(const ag_table *t, size_t idcol, const int *want, int n)
{
    cr_assert_eq(t->nrow, (size_t)n);
    for (int r = 0; r < n; r++)
        cr_assert_eq((int)t->cells[r * t->ncol + idcol].value, want[r], "row %d: id %g, want %d", r,
                     t->cells[r * t->ncol + idcol].value, want[r]);
}

/* The table sorted by key: the ids of its rows, in order, are want[0..6). */
static void check_sort(const char *key, int descending, const int *want)
{
    ag_table t;
    make_table(&t);
    cr_assert_eq(ag_table_sort(&t, key, descending, NULL), AG_OK);
    assert_ids(&t, 0, want, 6);
    ag_table_free(&t);
}

Test(table_arrange, sort_numbers_stable_nulls_last)
{
    /* -1, 1 (true), 2.5 (row 0 before row 3: stable), 2.5, 10, null */
    static const int asc[] = {1, 5, 0, 3, 4, 2};
    check_sort("x", 0, asc);
    /* 10, 2.5 (0 still before 3), 2.5, 1, -1, null still last */
    static const int desc[] = {4, 0, 3, 5, 1, 2};
    check_sort("x", 1, desc);
}

Test(table_arrange, sort_text_by_bytes)
{
    /* "B" < "a" (bytes), "a" row 1 before "a" row 5, "b", "c", null */
    static const int asc[] = {4, 1, 5, 0, 2, 3};
    check_sort("name", 0, asc);
    /* descending: "c", "b", "a" (1 before 5), "a", "B", null */
    static const int desc[] = {2, 0, 1, 5, 4, 3};
    check_sort("name", 1, desc);
}

Test(table_arrange, select_subset_in_order)
{
    ag_table t;
    make_table(&t);
    const char *keys[] = {"name", "id"};
    cr_assert_eq(ag_table_select(&t, keys, 2, NULL), AG_OK);
    cr_assert_eq(t.ncol, 2);
    cr_assert_str_eq(t.keys[0], "name");
    cr_assert_str_eq(t.keys[1], "id");
    static const int ids[] = {0, 1, 2, 3, 4, 5};
    assert_ids(&t, 1, ids, 6);
    cr_assert_str_eq(t.cells[2 * 2 + 0].text, "c");
    /* rows added after a select land in the new layout */
    ag_cell *row = ag_table_add_row(&t, NULL);
    cr_assert_not_null(row);
    row[1] = (ag_cell){.kind = AG_CELL_INTEGER, .value = 6};
    cr_assert_eq(t.nrow, 7);
    cr_assert_eq(t.cells[6 * 2 + 1].value, 6);
    cr_assert_str_eq(t.cells[4 * 2 + 0].text, "B");
    ag_table_free(&t);
}

Test(table_arrange, unknown_and_repeated_keys_refused_table_unchanged)
{
    ag_table t;
    ag_error err = {0};
    make_table(&t);
    const char *bad[] = {"id", "nope"};
    cr_assert_eq(ag_table_select(&t, bad, 2, &err), AG_ENOTFOUND);
    cr_assert_not_null(strstr(err.message, "'nope'"), "%s", err.message);
    const char *twice[] = {"x", "x"};
    cr_assert_eq(ag_table_select(&t, twice, 2, &err), AG_EINVAL);
    cr_assert_not_null(strstr(err.message, "'x'"), "%s", err.message);
    cr_assert_eq(ag_table_sort(&t, "nada", 0, &err), AG_ENOTFOUND);
    cr_assert_not_null(strstr(err.message, "'nada'"), "%s", err.message);
    cr_assert_eq(t.ncol, 3);
    static const int ids[] = {0, 1, 2, 3, 4, 5};
    assert_ids(&t, 0, ids, 6);
    ag_table_free(&t);
}

/* Display names (ag_key_display_name): every metric key has one, no two
 * alike; the md and LaTeX headers use them, LaTeX with the symbol. */
Test(table_headers, every_metric_named_once)
{
    int n = ag_metric_count();
    for (int m = 0; m < n; m++) {
        const char *d = ag_key_display_name(ag_metric_name((ag_metric)m));
        cr_assert_not_null(d, "%s has no display name", ag_metric_name((ag_metric)m));
        cr_assert(d[0] >= 'A' && d[0] <= 'Z', "%s: \"%s\" starts with a capital", ag_metric_name((ag_metric)m), d);
        for (int k = 0; k < m; k++)
            cr_assert_str_neq(d, ag_key_display_name(ag_metric_name((ag_metric)k)));
    }
    cr_assert_str_eq(ag_key_display_name("effective_rank"), "Effective rank");
    cr_assert_str_eq(ag_key_symbol("sigma_max"), "$\\sigma_1$");
    cr_assert_null(ag_key_symbol("effective_rank"));
    cr_assert_str_eq(ag_key_display_name("layer"), "Layer");
    cr_assert_null(ag_key_display_name("no_such_key"));
    cr_assert_null(ag_key_display_name(NULL));
}

Test(table_headers, md_and_latex_headers)
{
    static const char *const keys[] = {"layer", "sigma_max", "my_key"};
    ag_table t;
    cr_assert_eq(ag_table_init(&t, keys, 3, NULL), AG_OK);
    ag_cell *row = ag_table_add_row(&t, NULL);
    row[0] = (ag_cell){.kind = AG_CELL_INTEGER, .value = 1};
    row[1] = (ag_cell){.kind = AG_CELL_NUMBER, .value = 0.5};
    row[2] = (ag_cell){.kind = AG_CELL_NUMBER, .value = 2};
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    cr_assert_eq(ag_table_write(fp, AG_FORMAT_MD, &t, NULL), AG_OK);
    cr_assert_eq(ag_table_write(fp, AG_FORMAT_LATEX, &t, NULL), AG_OK);
    fclose(fp);
    cr_assert_not_null(strstr(buf, "| Layer | Largest singular value | my_key |\n"), "%s", buf);
    cr_assert_not_null(strstr(buf, "Layer & Largest singular value $\\sigma_1$ & my\\_key \\\\\n"), "%s", buf);
    free(buf);
    ag_table_free(&t);
}

/* LaTeX for a paper: booktabs rules in order, a table float with
 * \caption and \label when given, --digits significant digits. */
Test(table_headers, latex_caption_label_digits)
{
    static const char *const keys[] = {"layer", "effective_rank"};
    ag_table t;
    cr_assert_eq(ag_table_init(&t, keys, 2, NULL), AG_OK);
    ag_cell *row = ag_table_add_row(&t, NULL);
    row[0] = (ag_cell){.kind = AG_CELL_INTEGER, .value = 3};
    row[1] = (ag_cell){.kind = AG_CELL_NUMBER, .value = 2.0 / 3.0};
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    ag_output_meta meta = AG_OUTPUT_META_DEFAULT;
    meta.caption = "Heads of $M$";
    meta.tex_label = "tab:heads";
    meta.digits = 3;
    cr_assert_eq(ag_table_write(fp, AG_FORMAT_LATEX, &t, &meta), AG_OK);
    fclose(fp);
    const char *want = "% attngeom " AG_VERSION_STRING ": needs \\usepackage{booktabs}\n"
                       "\\begin{table}\n\\centering\n\\caption{Heads of $M$}\n\\label{tab:heads}\n"
                       "\\begin{tabular}{rr}\n\\toprule\n"
                       "Layer & Effective rank \\\\\n\\midrule\n"
                       "3 & 0.667 \\\\\n"
                       "\\bottomrule\n\\end{tabular}\n\\end{table}\n";
    cr_assert_str_eq(buf, want);
    free(buf);
    /* no caption nor label: the bare tabular; the default 6 digits */
    buf = NULL;
    fp = open_memstream(&buf, &len);
    cr_assert_eq(ag_table_write(fp, AG_FORMAT_LATEX, &t, NULL), AG_OK);
    fclose(fp);
    cr_assert_null(strstr(buf, "\\begin{table}"));
    cr_assert_not_null(strstr(buf, "3 & 0.666667 \\\\\n\\bottomrule\n\\end{tabular}\n"), "%s", buf);
    free(buf);
    /* digits out of range refused */
    meta.digits = 18;
    fp = open_memstream(&buf, &len);
    cr_assert_eq(ag_table_write(fp, AG_FORMAT_LATEX, &t, &meta), AG_EINVAL);
    fclose(fp);
    free(buf);
    ag_table_free(&t);
}

static char *paper(ag_format fmt, const ag_table *t, const ag_output_meta *meta)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    cr_assert_eq(ag_table_write(fp, fmt, t, meta), AG_OK);
    fclose(fp);
    return buf;
}

/* md and latex leave out the identifying columns with one label in every
 * row (model, rows, cols here; head varies, so it stays; a metric that is
 * constant is a result, so it stays) and name them in a comment; named
 * columns (keep_constant) all stay. */
Test(table_headers, constant_identifying_columns_left_out)
{
    static const char *const keys[] = {"model", "head", "rows", "cols", "entropy_mean"};
    ag_table t;
    cr_assert_eq(ag_table_init(&t, keys, 5, NULL), AG_OK);
    for (int r = 0; r < 2; r++) {
        ag_cell *row = ag_table_add_row(&t, NULL);
        cr_assert_eq(ag_table_set_text(&t, &row[0], "m", NULL), AG_OK);
        row[1] = (ag_cell){.kind = AG_CELL_INTEGER, .value = r};
        row[2] = row[3] = (ag_cell){.kind = AG_CELL_INTEGER, .value = 7};
        row[4] = (ag_cell){.kind = AG_CELL_NUMBER, .value = 0.5};
    }
    char *md = paper(AG_FORMAT_MD, &t, NULL);
    cr_assert_str_eq(md, "<!-- constant: model = m, rows = 7, cols = 7 -->\n"
                         "| Head | Mean entropy |\n| ---: | ---: |\n| 0 | 0.5 |\n| 1 | 0.5 |\n");
    free(md);
    char *tex = paper(AG_FORMAT_LATEX, &t, NULL);
    cr_assert_not_null(strstr(tex, "booktabs}\n% constant: model = m, rows = 7, cols = 7\n"
                                   "\\begin{tabular}{rr}\n\\toprule\nHead & Mean entropy $\\bar H$ \\\\\n"),
                       "%s", tex);
    free(tex);
    ag_output_meta keep = AG_OUTPUT_META_DEFAULT;
    keep.keep_constant = 1;
    md = paper(AG_FORMAT_MD, &t, &keep);
    cr_assert(strncmp(md, "| Model | Head | Rows | Columns | Mean entropy |\n", 46) == 0, "%s", md);
    free(md);
    /* other formats are unchanged: every column */
    char *csv = paper(AG_FORMAT_CSV, &t, NULL);
    cr_assert(strncmp(csv, "model,head,rows,cols,entropy_mean\n", 34) == 0, "%s", csv);
    free(csv);
    /* a model name with "--" would close the Markdown comment: it stays */
    cr_assert_eq(ag_table_set_text(&t, &t.cells[0], "a--b", NULL), AG_OK);
    cr_assert_eq(ag_table_set_text(&t, &t.cells[5], "a--b", NULL), AG_OK);
    md = paper(AG_FORMAT_MD, &t, NULL);
    cr_assert(strncmp(md, "<!-- constant: rows = 7, cols = 7 -->\n| Model | Head |", 52) == 0, "%s", md);
    free(md);
    ag_table_free(&t);
}

/* A table of nothing but constant identifying columns keeps them; so does
 * a table of one row (its labels say which record it is). */
Test(table_headers, only_identifying_columns_stay)
{
    static const char *const keys[] = {"layer", "head"};
    ag_table t;
    cr_assert_eq(ag_table_init(&t, keys, 2, NULL), AG_OK);
    for (int r = 0; r < 2; r++) {
        ag_cell *row = ag_table_add_row(&t, NULL);
        row[0] = row[1] = (ag_cell){.kind = AG_CELL_INTEGER, .value = 2};
    }
    char *md = paper(AG_FORMAT_MD, &t, NULL);
    cr_assert_str_eq(md, "| Layer | Head |\n| ---: | ---: |\n| 2 | 2 |\n| 2 | 2 |\n");
    free(md);
    ag_table_free(&t);
    /* one row of model "m", head 0 and a metric: nothing left out */
    static const char *const one_keys[] = {"model", "head", "entropy_mean"};
    cr_assert_eq(ag_table_init(&t, one_keys, 3, NULL), AG_OK);
    ag_cell *row = ag_table_add_row(&t, NULL);
    cr_assert_eq(ag_table_set_text(&t, &row[0], "m", NULL), AG_OK);
    row[1] = (ag_cell){.kind = AG_CELL_INTEGER, .value = 0};
    row[2] = (ag_cell){.kind = AG_CELL_NUMBER, .value = 0.25};
    md = paper(AG_FORMAT_MD, &t, NULL);
    cr_assert_str_eq(md, "| Model | Head | Mean entropy |\n| --- | ---: | ---: |\n| m | 0 | 0.25 |\n");
    free(md);
    ag_table_free(&t);
}
