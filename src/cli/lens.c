/* lens.c — --normalizer N and --temperature T (issue 28, "Softmax as a
 * lens"): the normaliser a command measures the scores through
 * (attngeom/normalizers.h), for matrix --scores and analyze. */
#include <math.h>
#include <stdlib.h>

#include "cli.h"

int cli_lens_option(cli_lens *l, const char *cmd, int scores, int argc, char **argv, int *i)
{
    const char **dst = scores && cli_is_option(argv[*i], "--scores") ? &l->scores
                       : cli_is_option(argv[*i], "--normalizer")     ? &l->normalizer
                       : cli_is_option(argv[*i], "--temperature")    ? &l->temperature
                                                                     : NULL;
    if (!dst)
        return 0;
    return (*dst = cli_option_value(cmd, argv[*i], argc, argv, i)) ? 1 : -1;
}

int cli_lens_parsed(cli_lens *l, const char *cmd, cli_common *c)
{
    if (!l->normalizer && !l->temperature)
        return 0;
    return cli_lens_check(l, cmd, c);
}

int cli_lens_set(const cli_lens *l, ag_run_options *opt)
{
    ag_error err = {0};
    if (!l->normalizer && !l->temperature)
        return 0;
    if (ag_run_options_set_normalizer(opt, l->kind, l->param, &err) != AG_OK)
        return cli_fail_error(&err);
    return 0;
}

int cli_lens_check(cli_lens *l, const char *cmd, cli_common *c)
{
    ag_error err = {0};
    const char *name = l->normalizer ? l->normalizer : "softmax";
    if (ag_normalizer_parse(name, &l->kind, &l->param, &err) != AG_OK)
        return cli_usage_error(cmd, "--normalizer: %s", err.message);
    char *end = NULL;
    double T = l->temperature ? strtod(l->temperature, &end) : 1;
    if (l->temperature && (end == l->temperature || *end || !(T > 0) || !isfinite(T)))
        return cli_usage_error(cmd, "--temperature %s: expected a finite number > 0", l->temperature);
    if (l->temperature && l->kind != AG_NORMALIZER_SOFTMAX)
        return cli_usage_error(cmd, "--temperature applies to --normalizer softmax only");
    if (l->kind == AG_NORMALIZER_SOFTMAX)
        l->param = T;
    c->normalizer = name;
    c->temperature = T;
    return 0;
}
