/* input.c — model inputs shared by the commands that run a model: texts,
 * text files, explicit token ids and files of them, layer/head selections,
 * precision, and how a corpus run treats long texts (--max-tokens,
 * --skip-long) and shows its progress. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* A text file may hold at most this many bytes (a corpus belongs in several
 * runs, and the whole file is read into memory). */
#define TEXT_FILE_MAX CLI_TEXT_FILE_MAX

int cli_input_option(cli_input *in, const char *cmd, int selections, int argc,
                     char **argv, int *i)
{
    const char *a = argv[*i];
    const char **slot = NULL;
    const char *name = NULL;
    if (cli_is_option(a, "--text"))
        slot = &in->text, name = "--text";
    else if (cli_is_option(a, "--text-file"))
        slot = &in->text_file, name = "--text-file";
    else if (cli_is_option(a, "--tokens"))
        slot = &in->tokens, name = "--tokens";
    else if (cli_is_option(a, "--tokens-file"))
        slot = &in->tokens_file, name = "--tokens-file";
    else if (selections && cli_is_option(a, "--layers"))
        slot = &in->layers, name = "--layers";
    else if (selections && cli_is_option(a, "--heads"))
        slot = &in->heads, name = "--heads";
    else if (selections && (!strcmp(a, "--skip-long") || !strcmp(a, "--progress") ||
                            !strcmp(a, "--no-progress"))) {
        if (!strcmp(a, "--skip-long"))
            in->skip_long = 1;
        else
            in->progress = !strcmp(a, "--progress") ? 1 : -1;
        return 1;
    } else if (selections && cli_is_option(a, "--max-tokens")) {
        const char *v = cli_option_value(cmd, "--max-tokens", argc, argv, i);
        char *end;
        if (!v)
            return -1;
        errno = 0;
        unsigned long long n = strtoull(v, &end, 10);
        if (end == v || *end || errno || v[0] == '-' || n == 0 || n > (1ull << 31)) {
            cli_usage_error(cmd, "--max-tokens takes a number of tokens from 1 to 2^31, not '%s'", v);
            return -1;
        }
        in->max_tokens = (size_t)n;
        return 1;
    } else if (cli_is_option(a, "--precision")) {
        const char *v = cli_option_value(cmd, "--precision", argc, argv, i);
        if (!v)
            return -1;
        if (strcmp(v, "f32") == 0)
            in->precision = AG_PRECISION_F32;
        else if (strcmp(v, "f64") == 0)
            in->precision = AG_PRECISION_F64;
        else {
            cli_usage_error(cmd, "--precision takes f32 or f64, not '%s'", v);
            return -1;
        }
        return 1;
    }
    if (!slot)
        return 0;
    if (!(*slot = cli_option_value(cmd, name, argc, argv, i)))
        return -1;
    return 1;
}

int cli_target_option(cli_input *in, const char *cmd, int argc, char **argv, int *i)
{
    in->takes_target = 1;
    static const char *const names[] = {"--target", "--target-tokens", "--target-file"};
    const char **slots[] = {&in->target, &in->target_tokens, &in->target_file};
    for (int k = 0; k < 3; k++)
        if (cli_is_option(argv[*i], names[k]))
            return (*slots[k] = cli_option_value(cmd, names[k], argc, argv, i)) ? 1 : -1;
    return 0;
}

int cli_parse_tokens(const char *cmd, const char *list, cli_seq *seq)
{
    size_t cap = 16, n = 0;
    int32_t *ids = malloc(cap * sizeof *ids);
    const char *p = list;
    while (ids) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < 0 || v > INT32_MAX || (*end && *end != ',')) {
            free(ids);
            return cli_usage_error(cmd, "--tokens takes comma-separated non-negative ids, not '%s'", list);
        }
        if (n == cap) {
            int32_t *grown = realloc(ids, 2 * cap * sizeof *ids);
            if (!grown)
                break;
            ids = grown;
            cap *= 2;
        }
        ids[n++] = (int32_t)v;
        if (!*end) {
            seq->ids = ids;
            seq->n = n;
            seq->line = -1;
            return 0;
        }
        p = end + 1;
    }
    free(ids);
    return cli_fail("out of memory reading --tokens");
}

/* Where a text came from, for messages: "F: line N" or "--text". */
static void text_place(char *buf, size_t size, const char *source, long line)
{
    if (line >= 0)
        snprintf(buf, size, "%s: line %ld", source, line + 1);
    else
        snprintf(buf, size, "--text");
}

static int encode(const ag_tokenizer *tok, const char *text, size_t len, long line,
                  const char *source, size_t max_tokens, cli_seq *seq)
{
    ag_error err = {0};
    char place[300];
    seq->line = line;
    if (ag_run_tokenize(tok, text, len, max_tokens, &seq->ids, &seq->n, &seq->tokens, &err) == AG_OK)
        return 0;
    text_place(place, sizeof place, source, line);
    return cli_fail("%s: %s", place, err.message);
}

int cli_read_text_file(const char **name, size_t max, char **buf, size_t *len)
{
    ag_error err = {0};
    int status;
    if (strcmp(*name, "-") == 0) {
        *name = "standard input";
        status = ag_read_fd(0, *name, max, buf, len, &err);
    } else {
        status = ag_read_file(*name, max, buf, len, &err);
    }
    return status == AG_OK ? 0 : cli_fail_error(&err);
}

/* A configuration file the CLI reads itself (config.json, a shard index):
 * through ag_read_file's regular-file check, so that a FIFO fails at once. */
#define CLI_JSON_FILE_MAX ((size_t)64 * 1024 * 1024)

int cli_read_json(const char *path, size_t flags, json_t **out)
{
    const char *name = path;
    char *buf = NULL;
    size_t len = 0;
    json_error_t je;
    *out = NULL;
    if (cli_read_text_file(&name, CLI_JSON_FILE_MAX, &buf, &len) != 0)
        return 1;
    *out = json_loadb(buf, len, flags, &je);
    free(buf);
    return *out ? 0 : cli_fail("%s: invalid JSON at line %d column %d: %s", path, je.line,
                               je.column, je.text);
}

/* The ids of one --tokens-file line: non-negative integers separated by
 * commas or blanks (spaces, tabs), blanks allowed around commas. */
static int parse_id_line(const char *path, long line, const char *s, size_t n, cli_seq *seq)
{
    size_t i = 0, cap = 0;
    seq->line = line;
    while (i < n && (s[i] == ' ' || s[i] == '\t'))
        i++;
    while (i < n) {
        size_t st = i;
        long long v = 0;
        for (; i < n && isdigit((unsigned char)s[i]); i++)
            if (v <= INT32_MAX)
                v = v * 10 + (s[i] - '0');
        size_t e = i;
        while (e < n && s[e] != ',' && s[e] != ' ' && s[e] != '\t')
            e++;
        if (i == st || e > i)
            return cli_fail("%s: line %ld: '%.*s' is not a token id (ids are non-negative integers separated by commas or spaces)",
                            path, line + 1, (int)(e - st > 40 ? 40 : e - st), s + st);
        if (v > INT32_MAX)
            return cli_fail("%s: line %ld: token id %.*s is above %d", path, line + 1, (int)(e - st > 40 ? 40 : e - st),
                            s + st, INT32_MAX);
        if (seq->n == cap) {
            int32_t *grown = realloc(seq->ids, (cap ? 2 * cap : 16) * sizeof *grown);
            if (!grown)
                return cli_fail("%s: out of memory", path);
            seq->ids = grown;
            cap = cap ? 2 * cap : 16;
        }
        seq->ids[seq->n++] = (int32_t)v;
        while (i < n && (s[i] == ' ' || s[i] == '\t'))
            i++;
        if (i < n && s[i] == ',') {
            for (i++; i < n && (s[i] == ' ' || s[i] == '\t'); i++)
                ;
            if (i == n || s[i] == ',')
                return cli_fail("%s: line %ld: a comma without a token id after it", path, line + 1);
        }
    }
    return 0;
}

typedef struct {
    const ag_tokenizer *tok; /* NULL: the lines are token ids */
    const char *path;
    size_t max_tokens;
} line_source;

/* Token ids given as they are: --max-tokens keeps the first N (no special
 * tokens are known to keep). */
static void cut_ids(cli_seq *seq, size_t max_tokens)
{
    seq->tokens = seq->n;
    if (max_tokens && seq->n > max_tokens)
        seq->n = max_tokens;
}

static int line_sequence(const line_source *src, long line, const char *s, size_t n, cli_seq *seq)
{
    if (src->tok)
        return encode(src->tok, s, n, line, src->path, src->max_tokens, seq);
    int rc = parse_id_line(src->path, line, s, n, seq);
    cut_ids(seq, src->max_tokens);
    return rc;
}

int cli_next_line(const char *buf, size_t len, size_t *pos, size_t *start, size_t *n)
{
    if (*pos >= len)
        return 0;
    const char *nl = memchr(buf + *pos, '\n', len - *pos);
    size_t end = nl ? (size_t)(nl - buf) : len;
    *start = *pos;
    *pos = end + 1;
    if (end > *start && buf[end - 1] == '\r')
        end--;
    *n = end - *start;
    return 1;
}

/* One sequence per non-blank line (of --text-file, or --tokens-file when
 * src->tok is NULL); "text" in the records is the 0-based line index, so
 * blank lines are skipped but still counted. */
static int file_sequences(line_source *src, cli_seq **seqs, size_t *count)
{
    char *buf = NULL;
    size_t len = 0, lines = 1;
    if (cli_read_text_file(&src->path, TEXT_FILE_MAX, &buf, &len) != 0)
        return 1;
    for (size_t k = 0; k < len; k++)
        lines += buf[k] == '\n';
    cli_seq *s = calloc(lines, sizeof *s);
    if (!s) {
        free(buf);
        return cli_fail("%s: out of memory", src->path);
    }
    size_t used = 0, pos = 0, start, n;
    long line = 0;
    int rc = 0;
    while (rc == 0 && cli_next_line(buf, len, &pos, &start, &n)) {
        int blank = 1;
        for (size_t j = start; j < start + n; j++)
            blank &= buf[j] == ' ' || buf[j] == '\t';
        if (!blank)
            rc = line_sequence(src, line, buf + start, n, &s[used++]);
        line++;
    }
    free(buf);
    if (rc == 0 && used == 0)
        rc = cli_fail("%s: no %s (every line is blank)", src->path, src->tok ? "text" : "token ids");
    if (rc) {
        cli_seqs_free(s, used);
        return rc;
    }
    *seqs = s;
    *count = used;
    return 0;
}

static int read_sequences(const cli_input *in, const char *cmd, const char *model_dir,
                          cli_seq **seqs, size_t *count)
{
    if (in->tokens_file) {
        line_source src = {NULL, in->tokens_file, in->max_tokens};
        return file_sequences(&src, seqs, count);
    }
    if (in->tokens) {
        cli_seq *s = calloc(1, sizeof *s);
        if (!s)
            return cli_fail("out of memory");
        int rc = cli_parse_tokens(cmd, in->tokens, s);
        if (rc) {
            free(s);
            return rc;
        }
        cut_ids(s, in->max_tokens);
        *seqs = s;
        *count = 1;
        return 0;
    }
    ag_tokenizer *tok = NULL;
    ag_error err = {0};
    if (ag_tokenizer_load(model_dir, &tok, &err) != AG_OK)
        return cli_fail_error(&err);
    int rc;
    if (in->text_file) {
        line_source src = {tok, in->text_file, in->max_tokens};
        rc = file_sequences(&src, seqs, count);
    } else {
        cli_seq *s = calloc(1, sizeof *s);
        rc = s ? encode(tok, in->text, strlen(in->text), -1, NULL, in->max_tokens, s)
               : cli_fail("out of memory");
        if (rc == 0) {
            *seqs = s;
            *count = 1;
        } else {
            free(s);
        }
    }
    ag_tokenizer_free(tok);
    return rc;
}

static void warn(const char *line, void *user)
{
    (void)user;
    cli_note("attngeom: warning: %s", line);
}

/* One warning line per text --max-tokens cut or --skip-long skips; a text
 * longer than the model's positions without either is an error before
 * anything runs, naming both options. */
static int fit_sequences(const cli_input *in, const ag_model *m, const char *model_dir,
                         cli_seq *seqs, size_t count)
{
    const char *file = in->text_file ? in->text_file : in->tokens_file;
    const char *source = file && strcmp(file, "-") == 0 ? "standard input" : file;
    char place[300];
    ag_error err = {0};
    for (size_t k = 0; k < count; k++) {
        cli_seq *s = &seqs[k];
        text_place(place, sizeof place, source, s->line);
        if (s->line < 0 && in->tokens)
            snprintf(place, sizeof place, "--tokens");
        if (ag_run_fit(m, place, s->tokens, s->n, in->skip_long, warn, NULL, &s->skip, &err) != AG_OK)
            return cli_fail("%s: %s", model_dir, err.message);
    }
    return 0;
}

int cli_input_sequences(const cli_input *in, const char *cmd, const ag_model *m,
                        const char *model_dir, cli_seq **seqs, size_t *count)
{
    ag_error err = {0};
    int given = !!in->text + !!in->text_file + !!in->tokens + !!in->tokens_file;
    if (given != 1)
        return cli_usage_error(cmd, given ? "give only one of --text, --text-file, --tokens, --tokens-file"
                                          : "missing input: --text S, --text-file F, --tokens 1,2,3 or --tokens-file F");
    *seqs = NULL;
    *count = 0;
    if (ag_run_check_max_tokens(m, in->max_tokens, &err) != AG_OK)
        return cli_fail("%s: %s", model_dir, err.message);
    int rc = read_sequences(in, cmd, model_dir, seqs, count);
    if (rc == 0 && (rc = fit_sequences(in, m, model_dir, *seqs, *count)) != 0) {
        cli_seqs_free(*seqs, *count);
        *seqs = NULL;
        *count = 0;
    }
    return rc;
}

void cli_seqs_free(cli_seq *seqs, size_t count)
{
    for (size_t k = 0; seqs && k < count; k++) {
        free(seqs[k].ids);
        free(seqs[k].target);
        free(seqs[k].source);
        free(seqs[k].tensor.values);
    }
    free(seqs);
}

int cli_selection(const char *cmd, const char *spec, int limit, const char *what,
                  const char *source, ag_selection **out)
{
    ag_error err = {0};
    int status = ag_selection_parse(spec, limit, what, out, &err);
    if (status == AG_EINVAL)
        return cli_usage_error(cmd, "--%s", err.message);
    if (status == AG_ERANGE)
        return cli_fail("%s: --%s", source, err.message);
    return status == AG_OK ? 0 : cli_fail_error(&err);
}

ag_record *cli_records_add(ag_record_list **list)
{
    if (!*list && !(*list = ag_record_list_new()))
        return NULL;
    return ag_record_list_add(*list, NULL);
}

int cli_records_move(ag_record_list **dst, ag_record_list **src)
{
    if (!*dst) { /* take src's list whole */
        *dst = *src;
        *src = NULL;
        return 0;
    }
    return *src && ag_record_list_move(*dst, *src, NULL) != AG_OK ? -1 : 0;
}

int cli_wrong_reader(const char *cmd, const char *path, unsigned wrong, const char *takes)
{
    ag_file_kind kind;
    ag_error err = {0};
    if (!path || strcmp(path, "-") == 0 || ag_file_kind_read(path, &kind, &err) != AG_OK)
        return 0; /* standard input is read once, by the reader; an unreadable
                     file is the reader's to report */
    if (!(wrong & AG_FILE_BIT(kind)))
        return 0;
    return cli_fail("%s is %s; %s takes %s", path, ag_file_kind_name(kind), cmd, takes);
}
