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
                       : cli_is_option(argv[*i], "--temperatures")   ? &l->temperatures
                                                                     : NULL;
    if (!dst)
        return 0;
    return (*dst = cli_option_value(cmd, argv[*i], argc, argv, i)) ? 1 : -1;
}

int cli_lens_parsed(cli_lens *l, const char *cmd, cli_common *c)
{
    if (!l->normalizer && !l->temperature && !l->temperatures)
        return 0;
    return cli_lens_check(l, cmd, c);
}

int cli_lens_set(const cli_lens *l, ag_run_options *opt)
{
    ag_error err = {0};
    if (l->ntemps)
        return ag_run_options_set_temperatures(opt, l->temps, l->ntemps, &err) != AG_OK
                   ? cli_fail_error(&err) : 0;
    if (!l->normalizer && !l->temperature)
        return 0;
    if (ag_run_options_set_normalizer(opt, l->kind, l->param, &err) != AG_OK)
        return cli_fail_error(&err);
    return 0;
}

/* --temperatures T1,T2,...: each finite > 0, no repeats, at most
 * AG_TEMPERATURES_MAX; softmax only, not with --temperature. 0 or
 * EXIT_USAGE after printing. */
static int parse_temperatures(cli_lens *l, const char *cmd)
{
    const char *v = l->temperatures;
    if (l->temperature)
        return cli_usage_error(cmd, "--temperatures and --temperature: give one of them");
    if (l->kind != AG_NORMALIZER_SOFTMAX)
        return cli_usage_error(cmd, "--temperatures applies to --normalizer softmax only");
    l->ntemps = 0;
    for (const char *p = v;; p++) {
        char *end = NULL;
        double T = strtod(p, &end);
        if (end == p || (*end && *end != ',') || !(T > 0) || !isfinite(T))
            return cli_usage_error(cmd, "--temperatures %s: expected finite numbers > 0 "
                                   "separated by commas", v);
        for (size_t k = 0; k < l->ntemps; k++)
            if (l->temps[k] == T)
                return cli_usage_error(cmd, "--temperatures %s: %g is given twice", v, T);
        if (l->ntemps == AG_TEMPERATURES_MAX)
            return cli_usage_error(cmd, "--temperatures %s: at most %d temperatures", v,
                                   AG_TEMPERATURES_MAX);
        l->temps[l->ntemps++] = T;
        if (!*(p = end))
            return 0;
    }
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
    if (l->temperatures && parse_temperatures(l, cmd))
        return EXIT_USAGE;
    c->normalizer = name;
    c->temperature = l->ntemps ? l->temps[0] : T;
    c->ntemperatures = l->ntemps;
    c->temperatures = l->temps;
    return 0;
}

int cli_lens_one_array(const cli_lens *l, const char *cmd, const char *out, const char *path)
{
    if (!l->temperatures || !path)
        return 0;
    return cli_usage_error(cmd, "--temperatures with %s %s: the array holds one temperature "
                           "(give --temperature T, one run per T)", out, path);
}
