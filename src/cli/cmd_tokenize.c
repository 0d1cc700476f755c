/* cmd_tokenize.c — tokenize: the token ids of one text (--text) or of a
 * corpus (--text-file, --jsonl) as the model folder's Hugging Face tokenizer
 * gives them (docs/cli.md, docs/tokenizers.md). A corpus loads the tokenizer
 * once and writes one JSON object a line, as each text is done. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

static const char tokenize_help[] =
    "usage: attngeom tokenize MODEL (--text S | --text-file F | --jsonl F)\n"
    "                         [--format table|json|jsonl|csv|tsv|md|latex] [-o FILE]\n"
    "\n"
    "Token ids of S exactly as the model folder's Hugging Face tokenizer gives\n"
    "them (tokenizer.json, or vocab.json + merges.txt, or vocab.txt), special\n"
    "tokens included. MODEL may be a folder holding only the tokenizer files.\n"
    "--format json prints {\"ids\": [...], \"tokens\": [...],\n"
    "\"strings\": [...]}: the vocabulary string of each token (\"\u0120cat\") and its\n"
    "text as the tokenizer's decoder gives it (\" cat\"; docs/tokenizers.md,\n"
    "\"Decoders\"); the table formats have the columns index, id, token, string.\n"
    "--offsets adds each token's span in S: \"offsets\": [[start, end], ...]\n"
    "(columns start, end), in Unicode code points as Hugging Face's\n"
    "return_offsets_mapping ((0, 0) for added special tokens); a normalizer whose\n"
    "alignment is not tracked on S is an error (docs/tokenizers.md, \"Offsets\").\n"
    "A corpus loads the tokenizer once: --text-file F has one text a line (a\n"
    "\"\\r\" before the \"\\n\" is not part of it; a blank line is the text it\n"
    "holds), --jsonl F one JSON object a line with a \"text\" string (which may\n"
    "hold newlines); '-' reads standard input. Either writes, with --format jsonl\n"
    "(or json), one object as above a line, line k for text k, as each is done.\n";

static const cli_option tokenize_own[] = {
    {"--text", "S", "the text to tokenize"},
    {"--text-file", "F", "a corpus: one text a line ('-': standard input); one JSON object a line out"},
    {"--jsonl", "F", "a corpus: one JSON object a line with a \"text\" string; one JSON object a line out"},
    {"--offsets", NULL, "also each token's span in S, in Unicode code points (\"offsets\"; columns start, end)"},
    {NULL}};
static const cli_option_group *const tokenize_groups[] = {
    CLI_OWN("tokenize", tokenize_own), &cli_group_printless, &cli_group_output,
    &cli_group_help, NULL};
const cli_usage cli_usage_tokenize = {"tokenize", tokenize_help, tokenize_groups, NULL};

/* What tokenize prints of each token: its id, its vocabulary string and its
 * readable string (ag_tokenizer_token_strings). */
typedef struct {
    const ag_tokenizer *tok;
    int32_t *ids;
    char **strings;
    size_t *offsets; /* --offsets: 2 per token, code points; else NULL */
    size_t n;
} token_rows;

static void rows_free(token_rows *r)
{
    free(r->strings);
    free(r->offsets);
    free(r->ids);
    *r = (token_rows){0};
}

static int write_tokens_json(FILE *fp, const token_rows *r)
{
    json_t *root = json_object(), *a = json_array(), *t = json_array(), *s = json_array();
    for (size_t i = 0; i < r->n; i++) {
        const char *v = ag_tokenizer_token(r->tok, r->ids[i]);
        json_array_append_new(a, json_integer(r->ids[i]));
        json_array_append_new(t, v ? cli_json_text(v) : json_null());
        json_array_append_new(s, cli_json_text(r->strings[i]));
    }
    json_object_set_new(root, "ids", a);
    json_object_set_new(root, "tokens", t);
    json_object_set_new(root, "strings", s);
    if (r->offsets) { /* --offsets */
        json_t *o = json_array();
        for (size_t i = 0; i < r->n; i++)
            json_array_append_new(o, json_pack("[II]", (json_int_t)r->offsets[2 * i], (json_int_t)r->offsets[2 * i + 1]));
        json_object_set_new(root, "offsets", o);
    }
    int rc = json_dumpf(root, fp, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(root);
    fputc('\n', fp);
    return rc;
}

static int write_tokens(FILE *fp, ag_format fmt, const token_rows *r)
{
    if (fmt == AG_FORMAT_JSON || fmt == AG_FORMAT_JSONL) /* one line: JSONL too */
        return write_tokens_json(fp, r);
    /* the other formats: a table through the one writer, ag_table_write */
    static const char *const cols[] = {"index", "id", "token", "string", "start", "end"};
    ag_table t = {0};
    ag_error err = {0};
    int status = ag_table_init(&t, cols, r->offsets ? 6 : 4, &err);
    for (size_t i = 0; status == AG_OK && i < r->n; i++) {
        ag_cell *row = ag_table_add_row(&t, &err);
        const char *s = ag_tokenizer_token(r->tok, r->ids[i]);
        if (!row)
            status = AG_ENOMEM;
        else {
            row[0] = (ag_cell){.kind = AG_CELL_INTEGER, .value = (double)i};
            row[1] = (ag_cell){.kind = AG_CELL_INTEGER, .value = r->ids[i]};
            if (s)
                status = ag_table_set_text(&t, &row[2], s, &err);
            if (status == AG_OK)
                status = ag_table_set_text(&t, &row[3], r->strings[i], &err);
            for (int k = 0; r->offsets && k < 2; k++) /* --offsets */
                row[4 + k] = (ag_cell){.kind = AG_CELL_INTEGER, .value = (double)r->offsets[2 * i + k]};
        }
    }
    if (status == AG_OK)
        status = ag_table_write(fp, fmt, &t, NULL);
    ag_table_free(&t);
    return status == AG_OK ? 0 : -1;
}

/* The ids of text[len], their strings and (offsets) their spans into r;
 * place ("--text", "F: line N") starts an error message. 0 or 1 after
 * printing the error. */
static int encode_rows(const ag_tokenizer *tok, const char *model, const char *place, const char *text, size_t len,
                       int offsets, token_rows *r)
{
    ag_error err = {0};
    *r = (token_rows){tok, NULL, NULL, NULL, 0};
    int rc = offsets ? ag_tokenizer_encode_offsets(tok, text, len, 0, &r->ids, &r->offsets, &r->n, &err)
                     : ag_tokenizer_encode(tok, text, len, &r->ids, &r->n, &err);
    if (rc != AG_OK)
        return rc == AG_EUNSUPPORTED ? cli_fail("%s: --%s", model, err.message) /* "--offsets: normalizer ..." */
                                     : cli_fail("%s: %s", place, err.message);
    if (ag_tokenizer_token_strings(tok, r->ids, r->n, &r->strings, &err) != AG_OK)
        return cli_fail_error(&err);
    return 0;
}

/* The text of one --jsonl line: its object's "text" string (*owner keeps
 * it; json_decref it). 0, or 1 after printing "F: line N: ...". */
static int jsonl_text(const char *path, long line, const char *s, size_t n, json_t **owner, const char **text,
                      size_t *len)
{
    json_error_t je;
    json_t *o = json_loadb(s, n, JSON_REJECT_DUPLICATES, &je);
    json_t *t = json_object_get(o, "text");
    *owner = o;
    if (!o)
        return cli_fail("%s: line %ld: invalid JSON at column %d: %s", path, line + 1, je.column, je.text);
    if (!json_is_object(o))
        return cli_fail("%s: line %ld: not a JSON object", path, line + 1);
    if (!json_is_string(t))
        return cli_fail("%s: line %ld: no \"text\" string", path, line + 1);
    *text = json_string_value(t);
    *len = json_string_length(t);
    return 0;
}

typedef struct {
    const ag_tokenizer *tok;
    const char *model, *option, *path; /* option: "--text-file" or "--jsonl" */
    int offsets;
} corpus_run;

/* One line of the corpus encoded and written to fp. 0, or 1 after printing. */
static int corpus_line(const corpus_run *c, long line, const char *s, size_t n, FILE *fp)
{
    json_t *owner = NULL;
    const char *text = s;
    size_t len = n;
    char place[300];
    snprintf(place, sizeof place, "%s: line %ld", c->path, line + 1);
    int rc = strcmp(c->option, "--jsonl") == 0 ? jsonl_text(c->path, line, s, n, &owner, &text, &len) : 0;
    token_rows rows = {0};
    if (rc == 0 && (rc = encode_rows(c->tok, c->model, place, text, len, c->offsets, &rows)) == 0 &&
        (write_tokens_json(fp, &rows) != 0 || ferror(fp)))
        rc = cli_fail("%s: cannot write", place);
    rows_free(&rows);
    json_decref(owner);
    return rc;
}

/* Every line of the corpus through the tokenizer, written to -o (or
 * standard output) as it is done; a file is written whole or not at all. */
static int tokenize_corpus(const corpus_run *c, const char *out_path)
{
    const char *name = c->path;
    char *buf = NULL;
    size_t len = 0, pos = 0, start, n;
    if (cli_read_text_file(&name, CLI_TEXT_FILE_MAX, &buf, &len) != 0)
        return 1;
    corpus_run named = *c;
    named.path = name; /* "standard input" for '-' */
    cli_outputs tx = {0};
    FILE *fp = NULL;
    int rc = cli_outputs_stream(&tx, out_path ? out_path : "-", &fp);
    for (long line = 0; rc == 0 && cli_next_line(buf, len, &pos, &start, &n); line++)
        rc = corpus_line(&named, line, buf + start, n, fp);
    if (rc == 0 && fflush(fp) != 0)
        rc = cli_fail("%s: cannot write", out_path ? out_path : "standard output");
    free(buf);
    return cli_outputs_finish(&tx, rc);
}

/* tokenize's one text: the whole output formatted, then written. */
static int tokenize_text(const ag_tokenizer *tok, const char *model, const char *text, int offsets,
                         const cli_common *common)
{
    token_rows rows;
    char *buf = NULL;
    size_t len = 0;
    int rc = encode_rows(tok, model, "--text", text, strlen(text), offsets, &rows);
    if (rc == 0) {
        FILE *mem = open_memstream(&buf, &len);
        rc = mem ? write_tokens(mem, common->format, &rows) : -1;
        if (mem)
            fclose(mem);
        rc = rc ? cli_fail("cannot format the tokens") : cli_write_output(common->out_path, buf, len);
    }
    rows_free(&rows);
    free(buf);
    return rc;
}

/* The one input of tokenize: --text, --text-file or --jsonl (an option
 * given twice or two of them: a usage error). 0, or the exit status. */
static int take_input(int argc, char **argv, int *i, const char **text, corpus_run *c)
{
    static const char *const names[] = {"--text", "--text-file", "--jsonl"};
    for (int k = 0; k < 3; k++) {
        if (!cli_is_option(argv[*i], names[k]))
            continue;
        if (*text || c->path)
            return cli_usage_error("tokenize", "one of --text, --text-file, --jsonl, once");
        const char *v = cli_option_value("tokenize", names[k], argc, argv, i);
        if (!v)
            return EXIT_USAGE;
        if (k == 0)
            *text = v;
        else
            c->option = names[k], c->path = v;
        return 0;
    }
    return -1; /* not an input option */
}

int cmd_tokenize(int argc, char **argv)
{
    cli_common common;
    if (cli_common_init(&common, AG_FAMILIES_MATRIX))
        return 1;
    const char *model = NULL, *text = NULL;
    corpus_run corpus = {0};
    for (int i = 1; i < argc; i++) {
        if (cli_usage_check(&cli_usage_tokenize, argv[i]))
            return EXIT_USAGE;
        if (cli_is_option(argv[i], "--offsets")) { /* --offsets: the spans too */
            corpus.offsets = 1;
            continue;
        }
        int used = cli_common_option(&common, "tokenize", argc, argv, &i);
        if (used < 0)
            return EXIT_USAGE;
        if (used)
            continue;
        if (strcmp(argv[i], "--help") == 0)
            return cli_usage_help(&cli_usage_tokenize);
        int taken = take_input(argc, argv, &i, &text, &corpus);
        if (taken > 0)
            return taken;
        if (taken == 0)
            continue;
        if (argv[i][0] == '-' && argv[i][1])
            return cli_usage_unparsed(&cli_usage_tokenize, argv[i]);
        if (model)
            return cli_usage_error("tokenize", "one MODEL only");
        model = argv[i];
    }
    if (!model || (!text && !corpus.path))
        return cli_usage_error("tokenize", model ? "missing --text S (or --text-file F, --jsonl F)" : "missing MODEL");
    if (corpus.path && common.format != AG_FORMAT_JSONL && common.format != AG_FORMAT_JSON)
        return cli_usage_error("tokenize", "%s writes one JSON object a line: --format jsonl", corpus.option);
    cli_path outs[] = {{"-o", common.out_path}}, ins[] = {{"MODEL", model}, {corpus.option, corpus.path}};
    if (cli_paths_check(outs, 1, ins, 2))
        return 1;
    ag_tokenizer *tok = NULL;
    int rc = cli_load_tokenizer("tokenize", model, &tok);
    if (rc)
        return rc;
    corpus.tok = tok, corpus.model = model;
    rc = corpus.path ? tokenize_corpus(&corpus, common.out_path) : tokenize_text(tok, model, text, corpus.offsets, &common);
    ag_tokenizer_free(tok);
    return rc;
}
