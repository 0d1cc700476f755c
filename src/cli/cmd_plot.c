/* cmd_plot.c — `attngeom plot INPUT --kind KIND -o FIG.svg|.pdf|.png`:
 * figures of what the other commands write (docs/cli.md, "plot"). argv
 * becomes an ag_run_plot_spec, the library makes the figure's bytes
 * (ag_run_plot, attngeom/plot.h), and they are staged like every output
 * (outputs.c), so -o is replaced only when all went well. */
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* The spec plus what only the command line has: -o, and which options were
 * given (an option of another kind is a usage error). */
typedef struct {
    ag_run_plot_spec s;
    const char *out_path;
    int query_given;
    const char *forest_given; /* --ci, --ref or --unit (the last given): forest's options */
    const char *by;   /* --by as given */
    int order_given;
    double temperatures[AG_PLOT_MAX_PANELS]; /* lens: --temperatures */
} plot_opts;

static const char plot_help[] =
    "usage: attngeom plot INPUT --kind KIND -o FIG.svg|FIG.pdf|FIG.png [options]\n"
    "\n"
    "Draw a figure of what attngeom wrote; the format is the suffix of -o: SVG\n"
    "and PDF are vector graphics, PNG an image of --dpi pixels per inch. The same\n"
    "input gives the same bytes.\n"
    "\n"
    "kinds:\n"
    "  heatmap     a metric over layer x head (rows: layers, columns: heads), from\n"
    "              records (JSON, JSONL or CSV; aggregated or per text: the mean of\n"
    "              a cell's records); --metric K\n"
    "  depth       a metric against layer, one line per model, the mean of each\n"
    "              point's records; with the confidence band of aggregated records\n"
    "              (K_ci_low, K_ci_high); --metric K (--by head is refused: a line\n"
    "              would join unrelated heads of successive layers)\n"
    "  attention   one head's attention matrix from `attngeom attention -o A.npy`\n"
    "              ([L, H, n, n]; [H, n, n] and [n, n] too), rows the queries;\n"
    "              --tokens T.json (from `attngeom tokenize --format json`) puts\n"
    "              the token strings on both axes; a cross-attention [.., n_target,\n"
    "              n_source] (`attention --cross`): --tokens the source's (columns),\n"
    "              --target-tokens the target's (rows)\n"
    "  spectrum    the singular values of that matrix, largest first, log scale\n"
    "  similarity  the [K, K] matrix of `attngeom similarity -o S.npy`, the heads\n"
    "              ordered by average-linkage clustering, its dendrogram above\n"
    "  patches     one query's row of a ViT's attention as its patch grid\n"
    "              (--grid RxC, --query Q)\n"
    "  forest      a metric's mean and Student-t interval per head (or per group\n"
    "              of --by KEYS), grouped over units as `aggregate` does, one row\n"
    "              each, sorted by the mean; --metric K\n"
    "  lens        one query's row of `attngeom attention --scores S.npy` under\n"
    "              softmax at --temperatures (0.5,1,2), sparsemax and 1.5-entmax,\n"
    "              a panel each on one probability axis (--layer, --head, --query:\n"
    "              default 0, 0 and the last row; --normalizers, --tokens)\n";

static const cli_option plot_own[] = {
    {"-o", "FIG", "the figure (.svg, .pdf or .png)"},
    {"--output", "FIG", "the same as -o"},
    {"--kind", "KIND", "what to draw (above)"},
    {"--metric", "K", "heatmap, depth, forest: the record key to draw"},
    {"--by", "KEYS", "depth: model (one line per model, the default); forest: the group keys (default: model, layer, head)"},
    {"--model", "NAME", "heatmap, depth: only the records of this model"},
    {"--layer", "L", "attention, spectrum, patches, lens: the layer (default 0)"},
    {"--head", "H", "attention, spectrum, patches, lens: the head (default 0)"},
    {"--tokens", "T.json", "attention, lens: the token strings (a cross-attention's: the source's, its columns)"},
    {"--target-tokens", "T.json", "attention: a cross-attention's target token strings, its rows (`tokenize --format json` of the target)"},
    {"--stack", "S", "heatmap, depth: the records of one stack of an encoder-decoder model (encoder, decoder, cross)"},
    {"--heads-per-layer", "H", "similarity: label head k as L<k/H>H<k%H> (when the matrix holds every head of every layer, the default)"},
    {"--relative", NULL, "depth: x = layer / the line's last layer (0 to 1)"},
    {"--grid", "RxC", "attention, patches: a ViT's patch grid (CLS, then R x C)"},
    {"--registers", "N", "attention, patches: N register tokens between CLS and the grid (DINOv2 with registers: info's \"registers\")"},
    {"--query", "Q", "patches: the query row (default 0, the CLS token); lens: the row (default: the last)"},
    {"--normalizers", "LIST", "lens: softmax, sparsemax, entmax15, entmax:ALPHA, comma-separated (default softmax,sparsemax,entmax15)"},
    {"--temperatures", "LIST", "lens: softmax's temperatures, a panel each (default 0.5,1,2)"},
    {"--values", NULL, "write each value in its cell (heatmap, attention, similarity)"},
    {"--vmin", "X", "the colour range's low end (default: the data's; 0 for attention and similarity)"},
    {"--vmax", "X", "the colour range's high end (default: the data's largest value)"},
    {"--title", "S", "the title (default: what the figure shows; '' for none)"},
    {"--size", "WxH", "the page in points, 72 to 14400 each (default: 432x324, larger where the labels, cells or legend need it)"},
    {"--dpi", "N", "PNG pixels per inch, 18 to 1200 (default 150)"},
    {"--order", "cluster|layer", "similarity: heads by clustering (default) or as in the matrix"},
    {"--ci", "LEVEL", "forest: the interval's confidence (default 0.95)"},
    {"--ref", "X", "forest: a reference line at X (1 for the ratio scores)"},
    {"--unit", "KEYS", "forest: the unit of replication (as aggregate's)"},
    {"-h", NULL, "the same as --help"},
    {NULL}};
static const cli_option_group *const plot_groups[] = {
    CLI_OWN("plot", plot_own), &cli_group_help, NULL};
const cli_usage cli_usage_plot = {"plot", plot_help, plot_groups, NULL};

/* A number option: finite, in [lo, hi]. */
static int number_option(const char *v, double lo, double hi, double *out)
{
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end || !isfinite(x) || x < lo || x > hi)
        return -1;
    *out = x;
    return 0;
}

static int index_option(const char *v, int *out)
{
    double x;
    if (number_option(v, 0, 1e9, &x) != 0 || x != floor(x))
        return -1;
    *out = (int)x;
    return 0;
}

static int size_option(const char *v, ag_run_plot_spec *o)
{
    char *x = strchr(v, 'x'), w[64];
    if (!x || (size_t)(x - v) >= sizeof w)
        return -1;
    memcpy(w, v, (size_t)(x - v));
    w[x - v] = '\0';
    return number_option(w, 72, 14400, &o->page.width) == 0 &&
                   number_option(x + 1, 72, 14400, &o->page.height) == 0
               ? 0 : -1;
}

/* --grid RxC: whole numbers from 1 to 4096 each. */
static int grid_option(const char *v, ag_run_plot_spec *o)
{
    char *x = strchr(v, 'x'), *end;
    if (!x || x == v)
        return -1;
    unsigned long r = strtoul(v, &end, 10), c;
    if (end != x || v[0] == '-' || x[1] == '-' || r < 1 || r > 4096)
        return -1;
    c = strtoul(x + 1, &end, 10);
    if (end == x + 1 || *end || c < 1 || c > 4096)
        return -1;
    o->grid_rows = r, o->grid_cols = c;
    return 0;
}

/* --temperatures T1,T2,...: finite numbers > 0, at most a panel each. */
static int temperatures_option(const char *v, plot_opts *po)
{
    ag_run_plot_spec *o = &po->s;
    char item[64];
    o->ntemperatures = 0;
    for (const char *p = v;; p++) {
        size_t len = strcspn(p, ",");
        double T;
        if (len == 0 || len >= sizeof item || o->ntemperatures == AG_PLOT_MAX_PANELS)
            return -1;
        memcpy(item, p, len);
        item[len] = '\0';
        if (number_option(item, 0, HUGE_VAL, &T) != 0 || T <= 0)
            return -1;
        po->temperatures[o->ntemperatures++] = T;
        if (!p[len])
            break;
        p += len;
    }
    o->temperatures = po->temperatures;
    return 0;
}

/* One option at argv[*i]: 1 consumed, -1 after a usage error. */
static int plot_option(plot_opts *po, int argc, char **argv, int *i)
{
    ag_run_plot_spec *o = &po->s;
    static const char *const valued[] = {"-o", "--output", "--kind", "--metric", "--by", "--model",
                                         "--layer", "--head", "--tokens", "--heads-per-layer",
                                         "--vmin", "--vmax", "--title", "--size", "--dpi",
                                         "--grid", "--query", "--ci", "--ref", "--unit",
                                         "--order", "--normalizers", "--temperatures",
                                         "--registers", "--target-tokens", "--stack"};
    const char *a = argv[*i], *name = NULL, *v;
    for (size_t k = 0; k < sizeof valued / sizeof *valued && !name; k++)
        if (cli_is_option(a, valued[k]))
            name = valued[k];
    if (!name) {
        if (strcmp(a, "--values") != 0 && strcmp(a, "--relative") != 0)
            return cli_usage_unparsed(&cli_usage_plot, a), -1;
        *(strcmp(a, "--values") ? &o->relative : &o->values) = 1;
        return 1;
    }
    if (!(v = cli_option_value("plot", name, argc, argv, i)))
        return -1;
    int bad = 0;
    if (!strcmp(name, "-o") || !strcmp(name, "--output"))
        po->out_path = v;
    else if (!strcmp(name, "--kind")) {
        if ((o->kind = ag_plot_kind_from_name(v)) < 0)
            return cli_usage_error("plot", "unknown --kind '%s' (heatmap, depth, attention, "
                                           "spectrum, similarity, patches, forest, lens)", v), -1;
    } else if (!strcmp(name, "--metric"))
        o->metric = v;
    /* forest's options (issue 26 item 7) */
    else if (!strcmp(name, "--ci"))
        bad = number_option(v, 0, 1, &o->level) || o->level <= 0 || o->level >= 1,
        po->forest_given = name;
    else if (!strcmp(name, "--ref"))
        bad = number_option(v, -HUGE_VAL, HUGE_VAL, &o->ref), po->forest_given = name;
    else if (!strcmp(name, "--unit"))
        o->unit = v, po->forest_given = name;
    else if (!strcmp(name, "--order")) { /* similarity */
        if (strcmp(v, "cluster") && strcmp(v, "layer"))
            return cli_usage_error("plot", "--order takes cluster or layer, not '%s'", v), -1;
        o->order_layer = !strcmp(v, "layer"), po->order_given = 1;
    }
    else if (!strcmp(name, "--by"))
        po->by = v; /* depth's model|head or forest's keys: checked once --kind is known */
    else if (!strcmp(name, "--model"))
        o->model = v;
    else if (!strcmp(name, "--layer"))
        bad = index_option(v, &o->layer);
    else if (!strcmp(name, "--head"))
        bad = index_option(v, &o->head);
    else if (!strcmp(name, "--tokens"))
        o->tokens = v;
    else if (!strcmp(name, "--target-tokens"))
        o->target_tokens = v;
    else if (!strcmp(name, "--stack")) {
        if (strcmp(v, "encoder") && strcmp(v, "decoder") && strcmp(v, "cross"))
            return cli_usage_error("plot", "--stack takes encoder, decoder or cross, not '%s'", v), -1;
        o->stack = v;
    }
    else if (!strcmp(name, "--heads-per-layer"))
        bad = index_option(v, &o->heads_per_layer) || o->heads_per_layer == 0;
    else if (!strcmp(name, "--vmin") || !strcmp(name, "--vmax"))
        bad = number_option(v, -HUGE_VAL, HUGE_VAL, !strcmp(name, "--vmin") ? &o->vmin : &o->vmax);
    else if (!strcmp(name, "--title"))
        o->title = v;
    else if (!strcmp(name, "--size"))
        bad = size_option(v, o);
    else if (!strcmp(name, "--grid"))
        bad = grid_option(v, o);
    else if (!strcmp(name, "--registers")) {
        int g = 0;
        bad = index_option(v, &g) || g > 4096;
        o->registers = (size_t)g;
    }
    else if (!strcmp(name, "--query"))
        bad = index_option(v, &o->query), po->query_given = 1;
    else if (!strcmp(name, "--normalizers"))
        o->normalizers = v;
    else if (!strcmp(name, "--temperatures"))
        bad = temperatures_option(v, po);
    else
        bad = number_option(v, 18, 1200, &o->page.dpi);
    if (bad)
        return cli_usage_error("plot", "bad value '%s' for %s", v, name), -1;
    return 1;
}

/* Which options belong to which kinds: one given to another kind is a
 * usage error rather than silently ignored. */
static int check_usage(const plot_opts *po)
{
    const ag_run_plot_spec *o = &po->s;
    int records = o->kind == AG_PLOT_HEATMAP || o->kind == AG_PLOT_DEPTH ||
                  o->kind == AG_PLOT_FOREST;
    int matrix = o->kind == AG_PLOT_ATTENTION || o->kind == AG_PLOT_SPECTRUM ||
                 o->kind == AG_PLOT_PATCHES || o->kind == AG_PLOT_LENS;
    int lens = o->kind == AG_PLOT_LENS;
    int layer_head = o->layer >= 0 || o->head >= 0;
    const char *wrong = records && layer_head ? "--layer/--head"
                      : !records && o->metric ? "--metric"
                      : !records && o->model ? "--model"
                      : !records && po->by ? "--by"
                      : o->kind != AG_PLOT_FOREST && po->forest_given ? po->forest_given
                      : o->kind == AG_PLOT_FOREST && (o->values || o->relative) ? "--values/--relative"
                      : o->kind == AG_PLOT_FOREST && (!isnan(o->vmin) || !isnan(o->vmax))
                          ? "--vmin/--vmax"
                      : o->kind != AG_PLOT_DEPTH && o->by_head ? "--by"
                      : o->kind != AG_PLOT_ATTENTION && !lens && o->tokens ? "--tokens"
                      : o->kind != AG_PLOT_ATTENTION && o->target_tokens ? "--target-tokens"
                      : o->kind != AG_PLOT_HEATMAP && o->kind != AG_PLOT_DEPTH && o->stack
                          ? "--stack"
                      : !lens && o->normalizers ? "--normalizers"
                      : !lens && o->ntemperatures ? "--temperatures"
                      : lens && (o->values || !isnan(o->vmin) || !isnan(o->vmax))
                          ? "--values/--vmin/--vmax"
                      : !matrix && !records && layer_head ? "--layer/--head"
                      : o->kind != AG_PLOT_SIMILARITY && o->heads_per_layer ? "--heads-per-layer"
                      : o->kind != AG_PLOT_SIMILARITY && po->order_given ? "--order"
                      : o->kind != AG_PLOT_ATTENTION && o->kind != AG_PLOT_PATCHES && o->grid_rows
                          ? "--grid"
                      : o->kind != AG_PLOT_ATTENTION && o->kind != AG_PLOT_PATCHES && o->registers
                          ? "--registers"

                      : o->kind != AG_PLOT_PATCHES && !lens && po->query_given ? "--query"
                      : o->kind != AG_PLOT_DEPTH && o->relative ? "--relative"
                      : o->kind == AG_PLOT_ATTENTION && o->grid_rows && o->tokens
                          ? "--grid with --tokens"
                      : o->kind == AG_PLOT_ATTENTION && o->registers && o->tokens
                          ? "--registers with --tokens"
                      : (o->kind == AG_PLOT_DEPTH || o->kind == AG_PLOT_SPECTRUM) && o->values
                          ? "--values"
                      : (o->kind == AG_PLOT_DEPTH || o->kind == AG_PLOT_SPECTRUM) &&
                                (!isnan(o->vmin) || !isnan(o->vmax)) ? "--vmin/--vmax"
                      : NULL;
    const char *kind = ag_plot_kind_name(o->kind);
    if (wrong)
        return cli_usage_error("plot", "%s does not apply to --kind %s", wrong, kind);
    if (records && !o->metric)
        return cli_usage_error("plot", "--kind %s needs --metric K", kind);
    return 0;
}

static int plot_parse(plot_opts *po, int argc, char **argv)
{
    /* no --size: the page that fits the figure (0 x 0, attngeom/plot.h) */
    *po = (plot_opts){.s = AG_RUN_PLOT_SPEC_DEFAULT};
    ag_run_plot_spec *o = &po->s;
    o->kind = -1;
    for (int i = 1; i < argc; i++) {
        if (cli_usage_check(&cli_usage_plot, argv[i]))
            return EXIT_USAGE;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return cli_usage_help(&cli_usage_plot) - 1;
        if (argv[i][0] == '-' && argv[i][1] != '\0') {
            if (plot_option(po, argc, argv, &i) < 0)
                return EXIT_USAGE;
        } else if (o->input) {
            return cli_usage_error("plot", "more than one INPUT ('%s', '%s')", o->input, argv[i]);
        } else {
            o->input = argv[i];
        }
    }
    if (!o->input)
        return cli_usage_error("plot", "missing INPUT");
    if (o->kind < 0)
        return cli_usage_error("plot", "missing --kind (heatmap, depth, attention, spectrum, "
                                       "similarity, patches, forest, lens)");
    if (!po->out_path)
        return cli_usage_error("plot", "missing -o FIG.svg|FIG.pdf|FIG.png");
    int fmt = ag_plot_format_from_path(po->out_path);
    if (fmt < 0)
        return cli_usage_error("plot", "-o %s: unknown figure format (the name must end in .svg, "
                                       ".pdf or .png)", po->out_path);
    o->page.format = (ag_plot_format)fmt;
    if (po->by && o->kind == AG_PLOT_FOREST)
        o->group_by = po->by;
    else if (po->by && strcmp(po->by, "model") && strcmp(po->by, "head"))
        return cli_usage_error("plot", "--by takes model or head, not '%s'", po->by);
    else if (po->by && o->kind == AG_PLOT_DEPTH && !strcmp(po->by, "head"))
        return cli_usage_error("plot", "%s", ag_plot_by_head_refusal);
    else if (po->by)
        o->by_head = !strcmp(po->by, "head");
    o->name = po->out_path;
    if (!isnan(o->vmin) && !isnan(o->vmax) && !(o->vmin < o->vmax))
        return cli_usage_error("plot", "--vmin %g is not below --vmax %g", o->vmin, o->vmax);
    return check_usage(po);
}

/* fontconfig writes its diagnostics on stderr: when memory runs out while
 * it parses its configuration, dozens of "Fontconfig error" lines before
 * attngeom's one. Its initialisation is done here, once, before anything
 * is drawn, with fd 2 on /dev/null; then stderr is attngeom's again (a
 * sanitizer's report of a later fault still shows). 0, or 1 after
 * printing. */
static int fonts_init(const plot_opts *o)
{
    fflush(stderr);
    int saved = dup(STDERR_FILENO), null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    int quiet = saved >= 0 && null >= 0 && dup2(null, STDERR_FILENO) >= 0;
    ag_error err = {0};
    int st = ag_plot_fonts_init(&err);
    if (quiet)
        dup2(saved, STDERR_FILENO);
    if (saved >= 0)
        close(saved);
    if (null >= 0)
        close(null);
    return st == AG_OK ? 0 : cli_fail("%s: %s", o->out_path, err.message);
}

int cmd_plot(int argc, char **argv)
{
    plot_opts o;
    int rc = plot_parse(&o, argc, argv);
    if (rc)
        return rc < 0 ? 0 : rc;
    cli_path out = {"-o", o.out_path};
    cli_path ins[3] = {{"INPUT", o.s.input}, {"--tokens", o.s.tokens},
                       {"--target-tokens", o.s.target_tokens}};
    /* a file of the other kind: say what it is, and which kinds draw it */
    int records = o.s.kind == AG_PLOT_HEATMAP || o.s.kind == AG_PLOT_DEPTH ||
                  o.s.kind == AG_PLOT_FOREST;
    unsigned wrong = records ? CLI_NOT_RECORDS : CLI_NOT_TENSORS | AG_FILE_BIT(AG_FILE_SAFETENSORS);
    const char *takes = records ? "records (JSON/JSONL/CSV/TSV) with --kind heatmap|depth|forest, "
                                  "or an attention .npy with --kind attention|spectrum|similarity|"
                                  "patches|lens"
                                : "an attention .npy with --kind attention|spectrum|similarity|"
                                  "patches|lens, or records (JSON/JSONL/CSV/TSV) with --kind "
                                  "heatmap|depth|forest";
    if ((rc = cli_paths_check(&out, 1, ins, 3)) != 0 ||
        (rc = cli_wrong_reader("plot", o.s.input, wrong, takes)) != 0 || (rc = fonts_init(&o)) != 0)
        return rc;
    ag_plot_output fig = {0};
    ag_error err = {0};
    if (ag_run_plot(&o.s, &fig, &err) != AG_OK)
        rc = cli_fail_error(&err);
    cli_outputs tx = {0};
    if (rc == 0)
        rc = cli_outputs_add(&tx, o.out_path, (const char *)fig.data, fig.len);
    ag_plot_output_free(&fig);
    ag_plot_release_caches(); /* the process ends here: valgrind sees no font cache */
    return cli_outputs_finish(&tx, rc);
}
