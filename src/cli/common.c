/* common.c — option parsing, messages and output shared by the subcommands. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

void cli_common_init(cli_common *c, unsigned families)
{
    memset(c, 0, sizeof *c);
    c->format = AG_FORMAT_TABLE;
    c->families = families;
    ag_metric_set_families(&c->metrics, families & AG_FAMILIES_DEFAULT ? families & AG_FAMILIES_DEFAULT
                                                                        : families);
    c->rtol = 1e-9;
    c->atol = 1e-12;
}

int cli_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("attngeom: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "attngeom %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (see attngeom %s --help)\n", cmd);
    va_end(ap);
    return EXIT_USAGE;
}

int cli_is_option(const char *arg, const char *name)
{
    size_t n = strlen(name);
    return strncmp(arg, name, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
}

const char *cli_option_value(const char *cmd, const char *name, int argc,
                             char **argv, int *i)
{
    const char *eq = strchr(argv[*i], '=');
    if (eq && argv[*i][1] == '-')
        return eq + 1;
    if (*i + 1 >= argc) {
        cli_usage_error(cmd, "option %s needs a value", name);
        return NULL;
    }
    return argv[++*i];
}

int cli_parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < 0)
        return -1;
    *out = v;
    return 0;
}

int cli_common_option(cli_common *c, const char *cmd, int argc, char **argv,
                      int *i)
{
    const char *a = argv[*i], *v;
    ag_error err = {0};
    if (cli_is_option(a, "--format")) {
        if (!(v = cli_option_value(cmd, "--format", argc, argv, i)))
            return -1;
        int f = ag_format_from_name(v);
        if (f < 0) {
            cli_usage_error(cmd, "unknown --format '%s' (table, json, csv, tsv, md, latex)", v);
            return -1;
        }
        c->format = (ag_format)f;
    } else if (cli_is_option(a, "-o") || cli_is_option(a, "--output")) {
        if (!(v = cli_option_value(cmd, "-o", argc, argv, i)))
            return -1;
        c->out_path = v;
    } else if (cli_is_option(a, "--metrics")) {
        if (!(v = cli_option_value(cmd, "--metrics", argc, argv, i)))
            return -1;
        if (ag_metric_set_parse_families(&c->metrics, v, c->families, &err) != AG_OK) {
            cli_usage_error(cmd, "%s", err.message);
            return -1;
        }
    } else if (cli_is_option(a, "--expect")) {
        if (!(v = cli_option_value(cmd, "--expect", argc, argv, i)))
            return -1;
        c->expect_path = v;
    } else if (cli_is_option(a, "--rtol") || cli_is_option(a, "--atol")) {
        int is_r = cli_is_option(a, "--rtol");
        if (!(v = cli_option_value(cmd, is_r ? "--rtol" : "--atol", argc, argv, i)))
            return -1;
        if (cli_parse_double(v, is_r ? &c->rtol : &c->atol) != 0) {
            cli_usage_error(cmd, "%s needs a non-negative number, not '%s'",
                            is_r ? "--rtol" : "--atol", v);
            return -1;
        }
    } else {
        return 0;
    }
    return 1;
}

/* Write buf to path through a temporary file in the same folder, renamed into
 * place only when everything was written. */
static int write_atomically(const char *path, const char *buf, size_t len)
{
    size_t n = strlen(path);
    char *tmp = malloc(n + 16);
    if (!tmp)
        return cli_fail("%s: out of memory", path);
    snprintf(tmp, n + 16, "%s.tmpXXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        int e = errno;
        free(tmp);
        return cli_fail("%s: cannot create: %s", path, strerror(e));
    }
    FILE *fp = fdopen(fd, "wb");
    int ok = fp && fwrite(buf, 1, len, fp) == len;
    ok = (fp ? fclose(fp) == 0 : (close(fd), 0)) && ok;
    if (ok && rename(tmp, path) != 0)
        ok = 0;
    int e = errno;
    if (!ok)
        unlink(tmp);
    free(tmp);
    return ok ? 0 : cli_fail("%s: cannot write: %s", path, strerror(e));
}

int cli_write_output(const char *path, const char *buf, size_t len)
{
    if (path)
        return write_atomically(path, buf, len);
    if (fwrite(buf, 1, len, stdout) != len || fflush(stdout) != 0)
        return cli_fail("cannot write to standard output");
    return 0;
}

int cli_emit(const cli_common *c, const ag_record *recs, size_t count,
             const ag_output_meta *meta)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if (!mem)
        return cli_fail("out of memory formatting the output");
    int status = ag_records_write(mem, c->format, recs, count, &c->metrics, meta);
    fclose(mem);
    if (status != AG_OK) {
        free(buf);
        return cli_fail("cannot format the output: %s", ag_strerror(status));
    }
    /* The golden file is read first, so that a broken one leaves no output. */
    int expect_rc = c->expect_path ? cli_expect(c, recs, count) : 0;
    if (expect_rc == 1) {
        free(buf);
        return 1;
    }
    int rc = cli_write_output(c->out_path, buf, len);
    free(buf);
    return rc ? rc : expect_rc;
}
