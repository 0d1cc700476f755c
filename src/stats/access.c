/* access.c — attngeom/access.h's corpus statistics: an aggregate built from
 * plain arrays, and the tables of `attngeom aggregate` and `compare` behind
 * pointers the library allocates (why: access.h). The work is aggregate.c's
 * and compare.c's; this file only converts. */
#include <stdlib.h>
#include <string.h>

#include "aggregate_int.h"

/* A comma-separated list as an array of strings in one block (*out, free());
 * AG_EINVAL for an empty item. */
static int split_keys(const char *option, const char *list, char ***out, size_t *n,
                      ag_error *err)
{
    size_t count = *list ? 1 : 0, len = strlen(list);
    for (const char *p = list; *p; p++)
        count += *p == ',';
    char **items = malloc((count + 1) * sizeof *items + len + 1);
    if (!items)
        return ag_error_set(err, AG_ENOMEM, "out of memory");
    char *text = memcpy((char *)(items + count + 1), list, len + 1);
    for (size_t k = 0; k < count; k++) {
        items[k] = text;
        char *comma = strchr(text, ',');
        if (comma)
            *comma = '\0';
        if (!*items[k]) {
            free(items);
            return ag_error_set(err, AG_EINVAL, "%s '%s': an empty key", option, list);
        }
        text = comma ? comma + 1 : text + strlen(text);
    }
    *out = items;
    *n = count;
    return AG_OK;
}

int ag_aggregate_create(const char *by, double level, int keep_values, ag_aggregate **out,
                        ag_error *err)
{
    *out = NULL;
    ag_aggregate_options opt = {.size = sizeof(ag_aggregate_options),
                                .level = level, .keep_values = keep_values, .by_default = !by};
    char **keys = NULL;
    int status = by ? split_keys("--by", by, &keys, &opt.nby, err) : AG_OK;
    opt.by = (const char *const *)keys;
    if (status == AG_OK)
        status = ag_aggregate_new(&opt, out, err);
    free(keys);
    return status;
}

int ag_aggregate_add_cells(ag_aggregate *a, size_t count, const char *const *keys,
                           const int *kinds, const double *values, const char *const *texts,
                           ag_error *err)
{
    ag_cell *cells = calloc(count + 1, sizeof *cells);
    if (!cells)
        return ag_error_set(err, AG_ENOMEM, "out of memory");
    int status = AG_OK;
    for (size_t k = 0; status == AG_OK && k < count; k++) {
        if (kinds[k] < AG_CELL_NULL || kinds[k] > AG_CELL_TEXT)
            status = ag_error_set(err, AG_EINVAL, "key '%s': cell kind %d", keys[k], kinds[k]);
        cells[k] = (ag_cell){.kind = (ag_cell_kind)kinds[k], .value = values ? values[k] : 0,
                             .text = kinds[k] == AG_CELL_TEXT && texts ? texts[k] : NULL};
        if (status == AG_OK && cells[k].kind == AG_CELL_TEXT && !cells[k].text)
            status = ag_error_set(err, AG_EINVAL, "key '%s': text cell without text", keys[k]);
    }
    ag_row row = {count, keys, cells};
    if (status == AG_OK)
        status = ag_aggregate_add(a, &row, err);
    free(cells);
    return status;
}

static int table_out(int status, ag_table *t, ag_table **out)
{
    if (status == AG_OK)
        *out = t;
    else
        ag_table_delete(t);
    return status;
}

int ag_aggregate_result(const ag_aggregate *a, ag_table **out, ag_error *err)
{
    *out = NULL;
    ag_table *t = calloc(1, sizeof *t);
    if (!t)
        return ag_error_set(err, AG_ENOMEM, "out of memory");
    return table_out(ag_aggregate_table(a, 0, t, err), t, out);
}

int ag_compare_result(const ag_aggregate *a, const ag_aggregate *b, const char *metrics,
                      double level, unsigned long permutations, unsigned long seed,
                      const char *name_a, const char *name_b, ag_table **out, ag_error *err)
{
    return ag_compare_result_paired(a, b, metrics, level, permutations, seed, 0, name_a, name_b,
                                    out, err);
}

int ag_compare_result_paired(const ag_aggregate *a, const ag_aggregate *b, const char *metrics,
                             double level, unsigned long permutations, unsigned long seed,
                             int paired, const char *name_a, const char *name_b, ag_table **out,
                             ag_error *err)
{
    *out = NULL;
    ag_compare_options opt = {.size = sizeof(ag_compare_options),
                              .level = level, .permutations = permutations, .seed = seed,
                              .name_a = name_a ? name_a : "a", .name_b = name_b ? name_b : "b",
                              .paired = paired};
    char **keys = NULL;
    ag_table *t = calloc(1, sizeof *t);
    int status = t ? AG_OK : ag_error_set(err, AG_ENOMEM, "out of memory");
    if (status == AG_OK && metrics)
        status = split_keys("--metrics", metrics, &keys, &opt.nmetrics, err);
    opt.metrics = (const char *const *)keys;
    if (status == AG_OK)
        status = ag_compare_table(a, b, &opt, t, err);
    free(keys);
    return table_out(status, t, out);
}

int ag_aggregate_set_unit(ag_aggregate *a, const char *keys, ag_error *err)
{
    char **list = NULL;
    size_t n = 0;
    int status = keys ? split_keys("--unit", keys, &list, &n, err) : AG_OK;
    if (status == AG_OK)
        status = agg_set_units(a, (const char *const *)list, n, err);
    free(list);
    return status;
}
