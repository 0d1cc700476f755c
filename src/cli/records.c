/* records.c — a run's records as the table the writer prints: the
 * selected metrics, and the "model" and "input" columns that make them
 * stand alone. Below --expect and --aggregate, which both read it, and the
 * emit layer (emit.c). */
#include <string.h>

#include "cli.h"

/* "input": the image or sound file each row's "text" (its line in the
 * list) names; one input (no "text") names its file in every row. */
static int add_input_column(const cli_common *c, ag_table *t, ag_error *err)
{
    size_t tc = t->ncol, w = t->ncol + 1;
    for (size_t j = 0; j < t->ncol; j++)
        if (strcmp(t->keys[j], "text") == 0)
            tc = j;
    const char *one = tc == t->ncol ? c->input_name(c->input_ctx, -1) : "";
    int status = ag_table_add_text_column(t, "input", one ? one : "", err);
    for (size_t r = 0; status == AG_OK && tc < t->ncol && r < t->nrow; r++) {
        const ag_cell *text = &t->cells[r * w + tc];
        const char *name = text->kind == AG_CELL_INTEGER ? c->input_name(c->input_ctx, (long)text->value)
                                                         : NULL;
        if (name)
            status = ag_table_set_text(t, &t->cells[r * w + w - 1], name, err);
    }
    return status;
}

int cli_lens_columns(const cli_common *c, ag_table *t, ag_error *err)
{
    int status = AG_OK;
    if (c->normalizer) /* the lens the matrices were made through */
        status = ag_table_add_text_column(t, "normalizer", c->normalizer, err);
    if (status == AG_OK && c->normalizer)
        status = ag_table_add_column(t, "temperature",
                                     (ag_cell){.kind = AG_CELL_NUMBER, .value = c->temperature},
                                     err);
    return status;
}

void cli_lens_row_temperature(ag_table *t, size_t r, double T)
{
    t->cells[r * t->ncol + t->ncol - 1] = (ag_cell){.kind = AG_CELL_NUMBER, .value = T};
}

int cli_records_table(const cli_common *c, const ag_record_list *recs, ag_table *out)
{
    ag_error err = {0};
    int status = ag_records_table(recs, c->metrics, out, &err);
    if (status != AG_OK)
        return cli_fail_error(&err);
    if (cli_model(c))
        status = ag_table_add_text_column(out, "model", cli_model(c), &err);
    if (status == AG_OK && c->input_name)
        status = add_input_column(c, out, &err);
    if (status == AG_OK)
        status = cli_lens_columns(c, out, &err);
    /* --temperatures: a row per record, each at its own T */
    for (size_t r = 0; status == AG_OK && c->ntemperatures && r < out->nrow; r++)
        cli_lens_row_temperature(out, r, ag_record_temperature(ag_record_list_get(recs, r)));
    if (status != AG_OK)
        ag_table_free(out);
    return status == AG_OK ? 0 : cli_fail_error(&err);
}
