/* test_table_fold.c — the terminal table folded to a width
 * (ag_output_meta.width, docs/cli.md "The terminal table"): no line wider
 * than the width, every column exactly once across the blocks and in table
 * order, the identifying columns (layer, head, text) at the start of every
 * block with the row's values, text cut with "…" only when it cannot fit,
 * and a table that fits (or width 0) written byte for byte as before. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "attngeom.h"

#define NMETRIC 12
#define NROW 5

static const char *const metric_keys[NMETRIC] = {
    "sigma_max",       "effective_rank",     "participation_ratio", "entropy_normalized",
    "symmetry_score",  "attention_distance", "prev_token_mass",     "duplicate_token_baseline",
    "induction_score", "lambda2_condition",  "row_sum_error",       "causal"};

/* layer, head, the metrics, text (a sentence, as a record read back from a
 * file can carry): the order ag_records_table gives, text last. */
static void make_table(ag_table *t, const char *text)
{
    const char *keys[NMETRIC + 3] = {"layer", "head"};
    for (int k = 0; k < NMETRIC; k++)
        keys[2 + k] = metric_keys[k];
    keys[NMETRIC + 2] = "text";
    cr_assert_eq(ag_table_init(t, keys, NMETRIC + 3, NULL), AG_OK);
    for (int r = 0; r < NROW; r++) {
        ag_cell *row = ag_table_add_row(t, NULL);
        cr_assert_not_null(row);
        row[0] = (ag_cell){.kind = AG_CELL_INTEGER, .value = r / 2};
        row[1] = (ag_cell){.kind = AG_CELL_INTEGER, .value = r % 2 + 10};
        for (int k = 0; k < NMETRIC - 1; k++)
            row[2 + k] = (ag_cell){.kind = AG_CELL_NUMBER, .value = (r + 1) * 1.234567e-3 * (k + 1)};
        row[NMETRIC + 1] = (ag_cell){.kind = AG_CELL_BOOL, .value = r % 2};
        cr_assert_eq(ag_table_set_text(t, &row[NMETRIC + 2], text, NULL), AG_OK);
    }
}

static char *write_width(const ag_table *t, size_t width)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    cr_assert_not_null(fp);
    ag_output_meta meta = AG_OUTPUT_META_DEFAULT;
    meta.width = width;
    cr_assert_eq(ag_table_write(fp, AG_FORMAT_TABLE, t, &meta), AG_OK);
    fclose(fp);
    return buf;
}

/* Characters of s[0..n): UTF-8 lead bytes. */
static size_t chars(const char *s, size_t n)
{
    size_t w = 0;
    for (size_t i = 0; i < n; i++)
        w += ((unsigned char)s[i] & 0xC0) != 0x80;
    return w;
}

/* The next line of *p (without its newline) into line, its length; -1 at the end. */
static long next_line(const char **p, char *line, size_t size)
{
    if (!**p)
        return -1;
    const char *nl = strchr(*p, '\n');
    cr_assert_not_null(nl, "every line ends in a newline");
    size_t n = (size_t)(nl - *p);
    cr_assert_lt(n, size);
    memcpy(line, *p, n);
    line[n] = 0;
    *p = nl + 1;
    return (long)n;
}

/* The blank-separated words of line into w (at most max); their count. */
static int words(char *line, char **w, int max)
{
    int n = 0;
    for (char *s = strtok(line, " "); s && n < max; s = strtok(NULL, " "))
        w[n++] = s;
    return n;
}

/* Check the folded table out for width: line widths, blocks, headers and
 * the identifying cells; text_shown is what the text cell must read. */
static void check_folded(const char *out, size_t width, const char *text_shown, int want_blocks)
{
    const char *p = out;
    char line[4096], *w[64];
    int metric_seen[NMETRIC] = {0}, next_metric = 0, blocks = 0;
    for (;;) {
        long n = next_line(&p, line, sizeof line);
        if (n < 0)
            break;
        cr_assert_leq(chars(line, (size_t)n), width, "line wider than %zu: \"%s\"", width, line);
        /* a header: layer head text, then this block's metrics */
        int nw = words(line, w, 64);
        cr_assert_geq(nw, 4, "a block holds the identifying columns and one more");
        cr_assert_str_eq(w[0], "layer");
        cr_assert_str_eq(w[1], "head");
        cr_assert_str_eq(w[2], "text");
        int cols = nw - 3;
        for (int i = 3; i < nw; i++) {
            cr_assert_lt(next_metric, NMETRIC, "a column twice: %s", w[i]);
            /* the key, or (too wide for the block) a prefix of it and "…" */
            const char *key = metric_keys[next_metric];
            size_t len = strlen(w[i]), dots = strlen("…");
            int cut = len > dots && strcmp(w[i] + len - dots, "…") == 0 &&
                      strncmp(w[i], key, len - dots) == 0 && len - dots >= 8;
            cr_assert(strcmp(w[i], key) == 0 || cut, "columns in table order: %s, not %s (width %zu)",
                      w[i], key, width);
            metric_seen[next_metric++]++;
        }
        for (int r = 0; r < NROW; r++) {
            n = next_line(&p, line, sizeof line);
            cr_assert_geq(n, 0, "a block has every row");
            cr_assert_leq(chars(line, (size_t)n), width, "row wider than %zu: \"%s\"", width, line);
            char *lead = line + strspn(line, " ");
            char want[64];
            snprintf(want, sizeof want, "%d    %d  %s", r / 2, r % 2 + 10, text_shown);
            cr_assert_eq(strncmp(lead, want, strlen(want)), 0, "row %d reads \"%s\", not \"%s…\"", r,
                         lead, want);
            char copy[4096];
            snprintf(copy, sizeof copy, "%s", lead + strlen(want));
            cr_assert_eq(words(copy, w, 64), cols, "a cell a column");
        }
        blocks++;
        n = next_line(&p, line, sizeof line);
        if (n < 0)
            break;
        cr_assert_eq(n, 0, "blocks are separated by one empty line");
    }
    for (int k = 0; k < NMETRIC; k++)
        cr_assert_eq(metric_seen[k], 1, "%s in %d blocks", metric_keys[k], metric_seen[k]);
    if (want_blocks)
        cr_assert_eq(blocks, want_blocks);
}

Test(table_fold, every_line_fits_every_column_once)
{
    ag_table t;
    make_table(&t, "short");
    static const size_t widths[] = {200, 80, 60, 40, 34};
    for (size_t i = 0; i < sizeof widths / sizeof *widths; i++) {
        char *out = write_width(&t, widths[i]);
        check_folded(out, widths[i], "short", 0);
        free(out);
    }
    ag_table_free(&t);
}

/* Closed form: at width 40 the identifying columns take "layer  head  text
 * " with "short" (5+2 + 4+2 + 5+2 = 20 characters), leaving 20 for the
 * metrics: no two fit together (the narrowest pair, row_sum_error and
 * causal, takes 13+2+6 = 21), so there are 12 blocks, one metric each. */
Test(table_fold, width_40_one_metric_a_block)
{
    ag_table t;
    make_table(&t, "short");
    char *out = write_width(&t, 40);
    check_folded(out, 40, "short", NMETRIC);
    /* the first block, exactly */
    const char *first = "layer  head  text    sigma_max\n"
                        "    0    10  short  0.00123457\n"
                        "    0    11  short  0.00246913\n";
    cr_assert_eq(strncmp(out, first, strlen(first)), 0, "got:\n%s", out);
    free(out);
    ag_table_free(&t);
}

/* A width that holds the whole table, and width 0 (no limit), write the
 * table byte for byte as a writer without a width (an older caller's
 * shorter ag_output_meta, or none) does. */
Test(table_fold, a_table_that_fits_is_unchanged)
{
    ag_table t;
    make_table(&t, "short");
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    cr_assert_eq(ag_table_write(fp, AG_FORMAT_TABLE, &t, NULL), AG_OK);
    fclose(fp);
    size_t full = 0; /* the widest line (the header's last cell, text, may be shorter) */
    for (const char *l = buf, *nl; (nl = strchr(l, '\n')); l = nl + 1)
        if (chars(l, (size_t)(nl - l)) > full)
            full = chars(l, (size_t)(nl - l));
    cr_assert_gt(full, 200, "the test table is wide");
    char *zero = write_width(&t, 0), *exact = write_width(&t, full), *less = write_width(&t, full - 1);
    cr_assert_str_eq(zero, buf);
    cr_assert_str_eq(exact, buf);
    cr_assert_str_neq(less, buf, "one character narrower folds");
    check_folded(less, full - 1, "short", 2);
    free(zero);
    free(exact);
    free(less);
    free(buf);
    ag_table_free(&t);
}

/* A text too long for the width with the identifying columns and a number:
 * the text is cut (to no fewer than 8 characters), ending in "…", and every
 * line still fits; the numbers are never cut. */
Test(table_fold, long_text_is_cut_numbers_are_not)
{
    ag_table t;
    const char *text = "The quick brown fox jumps over the lazy dog, and then the dog wakes up.";
    make_table(&t, text);
    char *out = write_width(&t, 40);
    /* 40 = layer(5) head(4) text(w) + 3 separators of 2 + the widest
     * number column at its narrowest: "duplicate_token_baseline"'s cells
     * (10 characters), its header cut to them → w = 40 - 6 - 5 - 4 - 10 = 15 */
    check_folded(out, 40, "The quick brow…", 0);
    cr_assert_not_null(strstr(out, "duplicate…"), "a header wider than its cells is cut:\n%s", out);
    cr_assert_not_null(strstr(out, "0.0123457"), "numbers whole:\n%s", out);
    free(out);
    ag_table_free(&t);
}

/* Other formats ignore the width. */
Test(table_fold, other_formats_ignore_the_width)
{
    ag_table t;
    make_table(&t, "short");
    for (int f = 0; f < AG_FORMAT_COUNT; f++) {
        if (f == AG_FORMAT_TABLE)
            continue;
        char *a = NULL, *b = NULL;
        size_t la = 0, lb = 0;
        FILE *fa = open_memstream(&a, &la), *fb = open_memstream(&b, &lb);
        ag_output_meta m0 = AG_OUTPUT_META_DEFAULT, m40 = AG_OUTPUT_META_DEFAULT;
        m40.width = 40;
        cr_assert_eq(ag_table_write(fa, (ag_format)f, &t, &m0), AG_OK);
        cr_assert_eq(ag_table_write(fb, (ag_format)f, &t, &m40), AG_OK);
        fclose(fa);
        fclose(fb);
        cr_assert_str_eq(a, b, "format %d", f);
        free(a);
        free(b);
    }
    ag_table_free(&t);
}
