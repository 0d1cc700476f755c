/* cmd_decode.c — `attngeom decode MODEL --tokens 1,2,3 [--skip-special]`:
 * the text of token ids as the model folder's Hugging Face tokenizer
 * decodes them (ag_tokenizer_decode: the Rust library's Tokenizer::decode),
 * and the tokenizer loader tokenize and decode share. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

static const char decode_usage[] =
    "usage: attngeom decode MODEL --tokens 1,2,3 [--skip-special] [--format table|json|jsonl] [-o FILE]\n"
    "\n"
    "The text of the token ids as the model folder's Hugging Face tokenizer\n"
    "decodes them (its \"decoder\": ByteLevel, Metaspace, WordPiece, ByteFallback,\n"
    "Fuse, Strip, Replace, Sequence, ...; the Rust library's decode(ids,\n"
    "skip_special_tokens), without transformers' clean_up_tokenization_spaces).\n"
    "The table format prints the text and a newline; json prints\n"
    "{\"ids\": [...], \"text\": \"...\"}. An id the tokenizer does not have is an error.\n";

/* The parser's and the help's one list (options.c). */
static const cli_option decode_own[] = {
    {"--tokens", "1,2,3", "the token ids, comma-separated"},
    {"--skip-special", NULL, "leave the special tokens out (skip_special_tokens=True)"},
    {"--format", "F", "table (default: the text), json, jsonl"},
    {NULL}};
static const cli_option_group *const decode_groups[] = {
    CLI_OWN("decode", decode_own), &cli_group_printless, &cli_group_output, &cli_group_help,
    NULL};
const cli_usage cli_usage_decode = {"decode", decode_usage, decode_groups, NULL};

int cli_load_tokenizer(const char *cmd, const char *model, ag_tokenizer **tok)
{
    *tok = NULL;
    char type[32];
    int tensors = cli_model_takes_tensors(model, type);
    if (tensors < 0)
        return 1;
    ag_error err = {0};
    int status = tensors && strcmp(type, "whisper") ? AG_ENOTFOUND
                                                    : ag_tokenizer_load(model, tok, &err);
    /* a whisper folder's tokenizer is its decoder's (the prompt of --target) */
    if (tensors && status == AG_ENOTFOUND)
        return cli_usage_error(cmd, "%s is a %s model: its input is %s, not token ids", model, type,
                               strcmp(type, "vit") ? "audio features" : "an image");
    return status == AG_OK ? 0 : cli_fail_error(&err);
}

/* Every id must be one of the tokenizer's: HF's decode would drop it in
 * silence. */
static int check_ids(const ag_tokenizer *tok, const char *model, const cli_seq *s)
{
    for (size_t i = 0; i < s->n; i++)
        if (!ag_tokenizer_token(tok, s->ids[i]))
            return cli_fail("--tokens: id %d is not a token of %s (%zu ids)", (int)s->ids[i], model,
                            ag_tokenizer_vocab_size(tok));
    return 0;
}

static int write_text(const cli_common *c, const cli_seq *s, const char *text)
{
    if (c->format == AG_FORMAT_TABLE) {
        size_t n = strlen(text);
        char *line = malloc(n + 2);
        if (!line)
            return cli_fail("out of memory");
        memcpy(line, text, n);
        memcpy(line + n, "\n", 2);
        int rc = cli_write_output(c->out_path, line, n + 1);
        free(line);
        return rc;
    }
    json_t *root = json_object(), *a = json_array();
    for (size_t i = 0; i < s->n; i++)
        json_array_append_new(a, json_integer(s->ids[i]));
    json_object_set_new(root, "ids", a);
    json_object_set_new(root, "text", cli_json_text(text));
    char *js = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(root);
    size_t n = js ? strlen(js) : 0;
    char *line = js ? realloc(js, n + 2) : NULL;
    if (!line) {
        free(js);
        return cli_fail("out of memory");
    }
    memcpy(line + n, "\n", 2);
    int rc = cli_write_output(c->out_path, line, n + 1);
    free(line);
    return rc;
}

/* The options into *model, *list, *skip, c; 0, or the exit status. */
static int parse(int argc, char **argv, cli_common *c, const char **model, const char **list, int *skip)
{
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] != '-' || !argv[i][1]) {
            if (*model)
                return cli_usage_error("decode", "one MODEL only");
            *model = argv[i];
            continue;
        }
        if (cli_usage_check(&cli_usage_decode, argv[i]))
            return EXIT_USAGE;
        if (cli_is_option(argv[i], "--help")) {
            cli_usage_help(&cli_usage_decode);
            return -1;
        }
        if (cli_is_option(argv[i], "--skip-special"))
            *skip = 1;
        else if (cli_is_option(argv[i], "--tokens")) {
            if (!(*list = cli_option_value("decode", "--tokens", argc, argv, &i)))
                return EXIT_USAGE;
        } else { /* --format, -o, --output */
            int used = cli_common_option(c, "decode", argc, argv, &i);
            if (used < 0)
                return EXIT_USAGE;
            if (used == 0)
                return cli_usage_unparsed(&cli_usage_decode, argv[i]);
        }
    }
    if (!*model || !*list)
        return cli_usage_error("decode", *model ? "missing --tokens 1,2,3" : "missing MODEL");
    if (c->format != AG_FORMAT_TABLE && c->format != AG_FORMAT_JSON && c->format != AG_FORMAT_JSONL)
        return cli_usage_error("decode", "--format takes table, json or jsonl here");
    return 0;
}

int cmd_decode(int argc, char **argv)
{
    cli_common common;
    if (cli_common_init(&common, AG_FAMILIES_MATRIX))
        return 1;
    const char *model = NULL, *list = NULL;
    int skip = 0, rc = parse(argc, argv, &common, &model, &list, &skip);
    if (rc)
        return rc < 0 ? 0 : rc;
    cli_path outs[] = {{"-o", common.out_path}}, ins[] = {{"MODEL", model}};
    cli_seq seq = {0};
    if (cli_paths_check(outs, 1, ins, 1))
        return 1;
    if ((rc = cli_parse_tokens("decode", list, &seq)) != 0)
        return rc;
    ag_tokenizer *tok = NULL;
    char *text = NULL;
    ag_error err = {0};
    rc = cli_load_tokenizer("decode", model, &tok);
    if (rc == 0)
        rc = check_ids(tok, model, &seq);
    if (rc == 0 && ag_tokenizer_decode(tok, seq.ids, seq.n, skip ? AG_DECODE_SKIP_SPECIAL : 0, &text, &err) != AG_OK)
        rc = cli_fail_error(&err);
    if (rc == 0)
        rc = write_text(&common, &seq, text);
    free(text);
    free(seq.ids);
    ag_tokenizer_free(tok);
    return rc;
}
