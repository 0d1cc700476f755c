/* options.c — every command's options as one table (cli_usage: groups of
 * cli_option; issue 26, item 6). Its parser accepts exactly the table's
 * names (cli_usage_check), its --help prints its option list from it,
 * "did you mean" suggests from it, and `attngeom options-doc` writes from
 * it the option lists of the man page and docs/cli.md, so the four cannot
 * differ (tests/cli/help.sh). The shared groups are defined here, once. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* ---- the groups several commands share (docs/cli.md, "Options") -------- */

const cli_option_group cli_group_input = {"input", "Model inputs", (const cli_option[]){
    {"--text", "S", "a text, tokenized by the model's tokenizer"},
    {"--text-file", "F", "a corpus, one text a line ('-': standard input); records carry \"text\", the 0-based line"},
    {"--tokens", "1,2,3", "token ids as given, bypassing the tokenizer"},
    {"--tokens-file", "F", "a corpus tokenized elsewhere: one sequence of ids a line, separated by commas or spaces"},
    {NULL}}, 0};

const cli_option_group cli_group_target = {"target", "Encoder-decoder targets", (const cli_option[]){
    {"--target", "T", "t5, bart, whisper: the decoder's text, tokenized and shifted right after decoder_start_token_id (teacher forcing; whisper: its leading start token dropped first)"},
    {"--target-tokens", "1,2,3", "t5, bart, whisper: the decoder's input ids as given (decoder_input_ids, no shift; whisper: its prompt, special tokens included)"},
    {"--target-file", "F", "t5, bart, whisper: one target text a line, paired line by line with --text-file, --tokens-file or (whisper) --audio-file"},
    {NULL}}, 0};

const cli_option_group cli_group_select = {"select", "Layers and heads", (const cli_option[]){
    {"--layers", "LIST", "layers to report, e.g. 0,2-3 (default all)"},
    {"--heads", "LIST", "heads to report, e.g. 1,4-5 (default all)"},
    {NULL}}, 0};

const cli_option_group cli_group_precision = {"precision", "Precision", (const cli_option[]){
    {"--precision", "P", "f32 (default: float32 products, as Hugging Face) or f64"},
    {NULL}}, 0};

const cli_option_group cli_group_corpus = {"corpus", "Corpus runs", (const cli_option[]){
    {"--max-tokens", "N", "cut a longer text to N tokens as Hugging Face's truncation does (special tokens kept); a warning each"},
    {"--skip-long", NULL, "skip a text longer than the model takes, a warning each (without either, such a text stops the run before it starts)"},
    {"--progress", NULL, "texts done, rate and time left on stderr (default: when stderr is a terminal)"},
    {"--no-progress", NULL, "no progress line"},
    {NULL}}, 0};

const cli_option_group cli_group_media = {"media", "Images and audio", (const cli_option[]){
    {"--image", "FILE", "a ViT's input: a PNG or JPEG, preprocessed as preprocessor_config.json says"},
    {"--image-file", "LIST", "a file of image paths, one a line (relative to the current folder)"},
    {"--pixels", "P.npy", "a ViT's pixel_values[0], (3, H, W), as given"},
    {"--audio", "FILE", "a Whisper encoder's input: a 16 kHz mono sound file"},
    {"--audio-file", "LIST", "a file of sound file paths, one a line"},
    {"--features", "F.npy", "a Whisper encoder's input_features, (n_mels, T), as given"},
    {"--frames", "N", "audio and features: the first N frames only (even; N/2 positions)"},
    {"--save-input", "IN.npy", "the float32 tensor the model saw (one input)"},
    {NULL}}, 0};

const cli_option_group cli_group_tensors = {"tensors", "Named tensors", (const cli_option[]){
    {"--weights", "F", "the safetensors file holding the tensors below"},
    {"--qkv", "NAME", "a fused [d, 3*d_a] tensor, column blocks Q|K|V; head h is a contiguous block of d_a/H columns in each"},
    {"--q", "NAME", "a separate [d, d_a] query tensor"},
    {"--k", "NAME", "a separate [d, d_a] key tensor"},
    {"--v", "NAME", "a separate [d, d_a] value tensor"},
    {"--o", "NAME", "the output projection [d_a, d_out] (checked; used by weights)"},
    {"--qkv-bias", "NAME", "the fused bias of --qkv"},
    {"--q-bias", "NAME", "the bias of --q"},
    {"--k-bias", "NAME", "the bias of --k"},
    {"--v-bias", "NAME", "the bias of --v"},
    {"--linear", NULL, "tensors are nn.Linear [out, in] (default [in, out], x -> xW)"},
    {NULL}}, 0};

const cli_option_group cli_group_records = {"records", "Records", (const cli_option[]){
    {"--metrics", "LIST", "metric keys and families (spectrum, attention, geometry, weights, stability, curvature, values, activations, mixing, axioms, lens, cross, all); see attngeom metrics"},
    {"--expect", "GOLDEN.json", "compare with a saved --format json output (exit 3 on a mismatch)"},
    {"--rtol", "R", "--expect's relative tolerance (default 1e-9)"},
    {"--atol", "A", "--expect's absolute tolerance (default 1e-12)"},
    {NULL}}, 0};

const cli_option_group cli_group_label = {"label", "Label", (const cli_option[]){
    {"--label", "NAME", "the records' \"model\" (default: the model folder's or input file's name)"},
    {NULL}}, 0};

const cli_option_group cli_group_stability = {"stability", "Stability", (const cli_option[]){
    {"--epsilon", "E", "stability: the perturbation's size, > 0 (default 1e-3)"},
    {"--trials", "T", "stability: random perturbations, 1 to 1000000 (default 8)"},
    {"--seed", "S", "stability: the perturbations' seed (default 1)"},
    {NULL}}, 0};

const cli_option_group cli_group_curvature = {"curvature", "Curvature", (const cli_option[]){
    {"--edge-threshold", "T", "curvature: edge {i,j} iff (A_ij + A_ji)/2 >= T, T in [0, 1] (default 1/n)"},
    {NULL}}, 0};

const cli_option_group cli_group_table = {"table", "Tables", (const cli_option[]){
    {"--sort", "KEY[:desc]", "order the rows by a column (stable; nulls last)"},
    {"--columns", "KEYS", "print these columns, in this order"},
    {"--caption", "TEXT", "LaTeX: put the table in a float with this \\caption"},
    {"--tex-label", "KEY", "LaTeX: the float's \\label"},
    {"--digits", "N", "significant digits of table, md, latex, 1 to 17 (default 6)"},
    {NULL}}, 0};

const cli_option_group cli_group_aggregate = {"aggregate", "Aggregate", (const cli_option[]){
    {"--aggregate", NULL, "print per group the mean, std, Student-t interval and count of every metric instead of the records, as attngeom aggregate does"},
    {"--by", "KEYS", "--aggregate's group keys (default: model, layer, head, ... as present)"},
    {"--unit", "KEYS", "--aggregate's unit of replication (default: text/input, else the record)"},
    {"--ci", "LEVEL", "--aggregate's confidence level (default 0.95)"},
    {NULL}}, 0};

const cli_option_group cli_group_jobs = {"jobs", "Threads", (const cli_option[]){
    {"-j", "N", "threads to run on (default: the CPUs the process may use); the output is the same bytes for any N"},
    {NULL}}, CLI_GROUP_ATTACHED};

const cli_option_group cli_group_output = {"output", "Output", (const cli_option[]){
    {"--format", "F", "table (default), json, jsonl, csv, tsv, md, latex"},
    {"-o", "FILE", "write there instead of standard output"},
    {"--output", "FILE", "the same as -o"},
    {NULL}}, 0};

const cli_option_group cli_group_printless = {"printless", NULL, (const cli_option[]){
    {"--expect", NULL, "--expect compares printed records; this command prints none"},
    {"--label", NULL, "--label names the model in records; this command prints none"},
    {"--sort", NULL, "--sort arranges printed records; this command prints none"},
    {"--columns", NULL, "--columns arranges printed records; this command prints none"},
    {NULL}}, CLI_GROUP_REFUSED};

const cli_option_group cli_group_help = {"help", "Help", (const cli_option[]){
    {"--help", NULL, "this text"},
    {NULL}}, 0};

/* ---- lookup ------------------------------------------------------------- */

/* 1 when arg names o of g: NAME, NAME=VALUE for an option with a value (a
 * refused one matches that too), NAMEVALUE in an attached group. */
static int names(const cli_option_group *g, const cli_option *o, const char *arg)
{
    size_t n = strlen(o->name);
    if (strncmp(arg, o->name, n) != 0)
        return 0;
    if (arg[n] == '\0' || (g->flags & CLI_GROUP_ATTACHED))
        return 1;
    return arg[n] == '=' && (o->value || (g->flags & CLI_GROUP_REFUSED));
}

/* The entry of u that arg names (NAME; NAME=VALUE for an option with a
 * value or a refused one; NAMEVALUE in an attached group), or NULL;
 * *group (may be NULL) its group. */
static const cli_option *find(const cli_usage *u, const char *arg,
                              const cli_option_group **group)
{
    for (const cli_option_group *const *g = u->groups; *g; g++)
        for (const cli_option *o = (*g)->opts; o->name; o++)
            if (names(*g, o, arg)) {
                if (group)
                    *group = *g;
                return o;
            }
    return NULL;
}

/* 1 when o of g is the entry of its name that u takes (shown, accepted):
 * not refused, not hidden by an earlier group's entry of the name. */
static int taken(const cli_usage *u, const cli_option_group *g, const cli_option *o)
{
    if (g->flags & CLI_GROUP_REFUSED)
        return 0;
    for (const cli_option_group *const *h = u->groups; *h; h++)
        for (const cli_option *e = (*h)->opts; e->name; e++)
            if (strcmp(e->name, o->name) == 0)
                return e == o;
    return 0;
}

int cli_usage_check(const cli_usage *u, const char *arg)
{
    if (arg[0] != '-' || arg[1] == '\0')
        return 0;
    const cli_option_group *g = NULL;
    const cli_option *o = find(u, arg, &g);
    if (o && (g->flags & CLI_GROUP_REFUSED))
        return cli_usage_error(u->cmd, "%s", o->help);
    if (o)
        return 0;
    enum { MAX = 128 };
    const char *cands[MAX];
    size_t n = 0;
    for (const cli_option_group *const *h = u->groups; *h; h++)
        for (const cli_option *c = (*h)->opts; c->name && n < MAX; c++)
            cands[n++] = taken(u, *h, c) ? c->name : NULL;
    return cli_unknown_option_among(u->cmd, cands, n, arg);
}

int cli_usage_unparsed(const cli_usage *u, const char *arg)
{
    return cli_fail("%s: option '%s' is in its table but no parser takes it (internal error)",
                    u->cmd, arg);
}

/* ---- --help --------------------------------------------------------------- */

/* text from column `at` (where the line is now) wrapped at 79 columns, the
 * lines after the first indented to `indent`. */
static void wrap(FILE *fp, const char *text, int at, int indent)
{
    enum { WIDTH = 79 };
    const char *p = text;
    while (*p) {
        size_t word = strcspn(p, " ");
        if (at > indent && at + 1 + (int)word > WIDTH) {
            fprintf(fp, "\n%*s", indent, "");
            at = indent;
        } else if (p != text) {
            fputc(' ', fp);
            at++;
        }
        fwrite(p, 1, word, fp);
        at += (int)word;
        p += word;
        p += strspn(p, " ");
    }
    fputc('\n', fp);
}

int cli_usage_help(const cli_usage *u)
{
    enum { COLUMN = 21 }; /* where the help of every option begins */
    fputs(u->text, stdout);
    fputs("\noptions:\n", stdout);
    for (const cli_option_group *const *g = u->groups; *g; g++)
        for (const cli_option *o = (*g)->opts; o->name; o++) {
            if (!taken(u, *g, o))
                continue;
            int w = printf("  %s%s%s", o->name, o->value ? " " : "", o->value ? o->value : "");
            int pad = w < COLUMN - 1 ? COLUMN - w : 1;
            printf("%*s", pad, "");
            wrap(stdout, o->help, w + pad, COLUMN);
        }
    if (u->more) {
        fputc('\n', stdout);
        fputs(u->more, stdout);
    }
    return 0;
}

/* ---- the option lists of the man page and docs/cli.md --------------------- */

/* s for roff: backslashes as \e, every '-' as \- (an option's minus, not a
 * hyphen), a leading '.' or '\'' kept from being a request. */
static void roff(FILE *fp, const char *s)
{
    if (*s == '.' || *s == '\'')
        fputs("\\&", fp);
    for (; *s; s++)
        fputs(*s == '\\' ? "\\e" : *s == '-' ? "\\-" : (char[2]){*s, 0}, fp);
}

/* s in a Markdown table cell: '|' escaped. */
static void md(FILE *fp, const char *s)
{
    for (; *s; s++)
        fputs(*s == '|' ? "\\|" : (char[2]){*s, 0}, fp);
}

/* An option's name in running text: bold in roff, code in Markdown. */
static void roff_or_md(FILE *fp, const char *name, int man)
{
    if (man) {
        fputs("\\fB", fp);
        roff(fp, name);
        fputs("\\fP", fp);
    } else {
        fprintf(fp, "`%s`", name);
    }
}

/* The entries of g that u takes (all of a shared group's: u NULL), as man
 * page items or table rows. */
static void entries(FILE *fp, const cli_usage *u, const cli_option_group *g, int man)
{
    for (const cli_option *o = g->opts; o->name; o++) {
        if (u ? !taken(u, g, o) : (g->flags & CLI_GROUP_REFUSED) != 0)
            continue;
        if (man) {
            fputs(o->value ? ".TP\n.BI " : ".TP\n.B ", fp);
            roff(fp, o->name);
            if (o->value) {
                fputs(" \" ", fp);
                roff(fp, o->value);
                fputc('"', fp);
            }
            fputc('\n', fp);
            roff(fp, o->help);
            fputc('\n', fp);
        } else {
            fprintf(fp, "| `%s%s%s` | ", o->name, o->value ? " " : "", o->value ? o->value : "");
            md(fp, o->help);
            fputs(" |\n", fp);
        }
    }
}

/* 1 when u has options of its own (groups without a title) that it takes. */
static int has_own(const cli_usage *u)
{
    for (const cli_option_group *const *g = u->groups; *g; g++)
        for (const cli_option *o = (*g)->opts; o->name && !(*g)->title; o++)
            if (taken(u, *g, o))
                return 1;
    return 0;
}

/* The names of u's shared groups that an earlier entry hides: taken by
 * its own (refused 0: rollout's -o) or refused by name (refused 1: heads'
 * --metrics), after `lead`, then `tail`; nothing when there is none. */
static void hidden_names(FILE *fp, const cli_usage *u, int man, int refused, const char *lead,
                         const char *tail)
{
    int k = 0;
    for (const cli_option_group *const *g = u->groups; *g; g++)
        for (const cli_option *o = (*g)->opts; o->name && (*g)->title; o++) {
            const cli_option_group *by = NULL;
            if ((*g)->flags & CLI_GROUP_REFUSED || find(u, o->name, &by) == o ||
                !(by->flags & CLI_GROUP_REFUSED) != !refused)
                continue;
            fputs(k++ ? ", " : lead, fp);
            roff_or_md(fp, o->name, man);
        }
    if (k)
        fputs(tail, fp);
}

/* The shared groups u takes, named (linked in Markdown), and the names its
 * own entries take from them (rollout's -o) or it refuses (heads'
 * --metrics). */
static void group_names(FILE *fp, const cli_usage *u, int man)
{
    int k = 0;
    for (const cli_option_group *const *g = u->groups; *g; g++)
        if ((*g)->title && man)
            fprintf(fp, "%s%s", k++ ? ", " : "", (*g)->title);
        else if ((*g)->title)
            fprintf(fp, "%s[%s](#options-%s)", k++ ? ", " : "", (*g)->title, (*g)->id);
    fputc('.', fp);
    hidden_names(fp, u, man, 0, man ? "\nIts own " : " Its own ", " take the place of the group's.");
    hidden_names(fp, u, man, 1, man ? "\nIt refuses " : " It refuses ", " (see its --help).");
    fputc('\n', fp);
}

/* One command's block: the shared groups it takes, then its own options. */
static void command_block(FILE *fp, const cli_usage *u, int man)
{
    fprintf(fp, man ? ".\\\" options:%s\n" : "<!-- options:%s -->\n", u->cmd);
    int own = has_own(u);
    fputs(own ? "Options: its own, below, and those of " : "Options: those of ", fp);
    group_names(fp, u, man);
    if (own)
        fputs(man ? ".RS\n" : "\n| option | meaning |\n|---|---|\n", fp);
    for (const cli_option_group *const *g = u->groups; *g; g++)
        if (!(*g)->title)
            entries(fp, u, *g, man);
    if (own && man)
        fputs(".RE\n", fp);
    fputs(man ? ".\\\" /options\n\n" : "<!-- /options -->\n\n", fp);
}

static void group_block(FILE *fp, const cli_option_group *g, int man)
{
    if (man)
        fprintf(fp, ".\\\" options:group-%s\n", g->id);
    else
        fprintf(fp, "<!-- options:group-%s -->\n<a id=\"options-%s\"></a>\n\n", g->id, g->id);
    if (!man)
        fputs("| option | meaning |\n|---|---|\n", fp);
    entries(fp, NULL, g, man);
    fputs(man ? ".\\\" /options\n\n" : "<!-- /options -->\n\n", fp);
}

/* Every entry of u, a line each: CMD, NAME, VALUE ("-" for a flag) and
 * "takes" or "refuses" (tests/cli/help.sh runs the parser on each). */
static void names_list(FILE *fp, const cli_usage *u)
{
    for (const cli_option_group *const *g = u->groups; *g; g++)
        for (const cli_option *o = (*g)->opts; o->name; o++)
            if (taken(u, *g, o) || ((*g)->flags & CLI_GROUP_REFUSED))
                fprintf(fp, "%s %s %s %s\n", u->cmd, o->name, o->value ? o->value : "-",
                        taken(u, *g, o) ? "takes" : "refuses");
}

int cli_options_doc(int argc, char **argv, const cli_usage *const *cmds, size_t n)
{
    int man = argc == 2 && strcmp(argv[1], "man") == 0;
    if (argc == 2 && strcmp(argv[1], "names") == 0) {
        for (size_t c = 0; c < n; c++)
            names_list(stdout, cmds[c]);
        return 0;
    }
    if (argc != 2 || (!man && strcmp(argv[1], "md") != 0))
        return cli_usage_error(argv[0], "takes man, md or names");
    const cli_option_group *seen[64];
    size_t nseen = 0;
    for (size_t c = 0; c < n; c++) {
        command_block(stdout, cmds[c], man);
        for (const cli_option_group *const *g = cmds[c]->groups; *g; g++) {
            size_t k = 0;
            while (k < nseen && seen[k] != *g)
                k++;
            if ((*g)->title && k == nseen && nseen < 64)
                seen[nseen++] = *g;
        }
    }
    for (size_t k = 0; k < nseen; k++)
        group_block(stdout, seen[k], man);
    return 0;
}
