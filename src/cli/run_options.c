/* run_options.c — the CLI's options as the library's one options object
 * (attngeom/run.h): the CLI only fills it from argv. */
#include "cli.h"

int cli_run_options(const cli_common *c, ag_precision precision, ag_run_options **out)
{
    ag_run_options *o = ag_run_options_new();
    ag_error err = {0};
    int status = o ? AG_OK : AG_ENOMEM;
    if (status == AG_OK && c->jobs)
        status = ag_run_options_set(o, "threads", c->jobs, &err);
    if (status == AG_OK)
        status = ag_run_options_set(o, "precision", precision == AG_PRECISION_F64 ? 64 : 32, &err);
    if (status == AG_OK)
        status = ag_run_options_set(o, "edge_threshold", c->edge_threshold < 0 ? -1 : c->edge_threshold, &err);
    if (status == AG_OK)
        status = ag_run_options_set(o, "epsilon", c->epsilon, &err);
    if (status == AG_OK)
        status = ag_run_options_set(o, "trials", c->trials, &err);
    if (status == AG_OK)
        status = ag_run_options_set(o, "massive_abs", c->massive_abs, &err);
    if (status == AG_OK)
        status = ag_run_options_set(o, "massive_ratio", c->massive_ratio, &err);
    if (status != AG_OK) {
        ag_run_options_free(o);
        *out = NULL;
        return status == AG_ENOMEM ? cli_fail("out of memory") : cli_fail_error(&err);
    }
    ag_run_options_set_seed(o, c->seed);
    ag_run_options_set_metrics(o, c->metrics);
    ag_run_options_set_dist(o, c->dist);
    *out = o;
    return 0;
}

int cli_model_run_options(const cli_model_run *r, ag_run_options **out)
{
    int rc = cli_run_options(&r->common, r->input.precision, out);
    const ag_selection *sel[] = {r->layers, r->heads};
    const char *what[] = {"layers", "heads"};
    /* an encoder–decoder pair: what was not given selects all of each
     * stack (whose layer counts differ), not the encoder's indices */
    const char *given[] = {r->input.layers, r->input.heads};
    ag_error err = {0};
    for (int k = 0; rc == 0 && k < 2; k++)
        if ((!r->pair || given[k]) && ag_run_options_set_selection(*out, what[k], sel[k], &err) != AG_OK)
            rc = cli_fail_error(&err);
    if (rc && *out) {
        ag_run_options_free(*out);
        *out = NULL;
    }
    return rc;
}
