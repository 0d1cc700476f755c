/* test_tk_pipeline.c — what tokenizer.c, added_tokens.c and
 * post_processors.c add to the components: added-token matching
 * (single_word, lstrip, rstrip, normalized tokens), post-processors,
 * tokenizer_config.json (add_bos_token / add_eos_token of LlamaTokenizerFast
 * & co., add_prefix_space, BERT's options) and the slow tokenizers' files.
 *
 * The tokenizers are written here: a BPE without merges whose vocabulary is
 * printable ASCII at its code (space 32), "<unk>" 0 and "é" 1, so text
 * outside added tokens reads as its character codes. Expected ids of the
 * added-token cases were printed by the Python reference
 * (tests/ref/hf_tokenizer.py, Tokenizer(json).encode(text, False)) on the
 * same tokenizer.json; the others are closed forms of the rules cited. */
#include <criterion/criterion.h>

#include <jansson.h>

#include "attngeom/core.h"
#include "attngeom/tokenizer.h"
#include "../util/test_io_util.h"

/* A folder `name` holding tokenizer.json = the ASCII BPE plus `extra`
 * (JSON members after the model, e.g. "added_tokens": [...]) and, when
 * not NULL, tokenizer_config.json and special_tokens_map.json. */
static const char *folder(const char *name, const char *extra, const char *config, const char *map)
{
    const char *dir = tio_path(name);
    cr_assert_eq(mkdir(dir, 0700), 0, "%s", dir);
    char *doc = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&doc, &len);
    fputs("{\"model\": {\"type\": \"BPE\", \"merges\": [], \"unk_token\": \"<unk>\", \"vocab\": {\"<unk>\": 0, "
          "\"\\u00e9\": 1",
          f);
    for (int c = 32; c < 127; c++)
        fprintf(f, ", \"%s%c\": %d", c == '"' || c == '\\' ? "\\" : "", c, c);
    fprintf(f, "}}%s%s}", extra ? ", " : "", extra ? extra : "");
    fclose(f);
    char p[4400];
    snprintf(p, sizeof p, "%s/tokenizer.json", dir);
    cr_assert_eq(tio_write_bytes(p, doc, len), 0);
    free(doc);
    if (config) {
        snprintf(p, sizeof p, "%s/tokenizer_config.json", dir);
        cr_assert_eq(tio_write_bytes(p, config, strlen(config)), 0);
    }
    if (map) {
        snprintf(p, sizeof p, "%s/special_tokens_map.json", dir);
        cr_assert_eq(tio_write_bytes(p, map, strlen(map)), 0);
    }
    return dir;
}

static ag_tokenizer *load(const char *dir)
{
    ag_tokenizer *t = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_tokenizer_load(dir, &t, &err), AG_OK, "%s: %s", dir, err.message);
    return t;
}

static void expect_ids(const ag_tokenizer *t, unsigned flags, const char *text, const int32_t *want, size_t nw)
{
    int32_t *ids = NULL;
    size_t n = 0;
    ag_error err = {0};
    cr_assert_eq(ag_tokenizer_encode_ex(t, text, strlen(text), flags, &ids, &n, &err), AG_OK, "'%s': %s", text,
                 err.message);
    int eq = n == nw && (n == 0 || !memcmp(ids, want, n * sizeof *ids));
    char got[256] = "";
    for (size_t i = 0, w = 0; i < n && w < sizeof got - 12; i++)
        w += (size_t)snprintf(got + w, sizeof got - w, "%d ", ids[i]);
    cr_expect(eq, "'%s': got [%s], %zu ids, want %zu", text, got, n, nw);
    free(ids);
}
#define IDS(t, text, ...)                                                                           \
    do {                                                                                            \
        static const int32_t w_[] = {__VA_ARGS__};                                                  \
        expect_ids(t, AG_TOKENIZE_NO_SPECIAL, text, w_, sizeof w_ / sizeof *w_);                    \
    } while (0)
#define IDS_SPECIAL(t, text, ...)                                                                   \
    do {                                                                                            \
        static const int32_t w_[] = {__VA_ARGS__};                                                  \
        expect_ids(t, 0, text, w_, sizeof w_ / sizeof *w_);                                         \
    } while (0)

static void expect_load_error(const char *dir, int status, const char *needle)
{
    ag_tokenizer *t = NULL;
    ag_error err = {0};
    cr_expect_eq(ag_tokenizer_load(dir, &t, &err), status, "%s: %s", dir, err.message);
    cr_expect_null(t);
    cr_expect(strstr(err.message, needle) != NULL, "'%s' lacks '%s'", err.message, needle);
    ag_tokenizer_free(t);
}

TestSuite(tk_pipeline, .fini = tio_cleanup);

#define TOKEN(id, content, flags) "{\"id\": " #id ", \"content\": \"" content "\", " flags "}"

/* single_word: a match touching a word character (regex \w: letters, marks,
 * digits, '_', ZWJ) is dropped, and shorter tokens at that place are not
 * tried ("abcd": "abc" is refused, "ab" not retried, "cd" overlapped). */
Test(tk_pipeline, added_single_word)
{
    ag_tokenizer *t = load(folder("sw", "\"added_tokens\": ["
        TOKEN(200, "ab", "\"special\": true, \"normalized\": false, \"single_word\": true") ", "
        TOKEN(201, "abc", "\"special\": true, \"normalized\": false, \"single_word\": true") ", "
        TOKEN(202, "cd", "\"special\": true, \"normalized\": false") "]", NULL, NULL));
    IDS(t, "ab cd", 200, 32, 202);
    IDS(t, "xab", 120, 97, 98);
    IDS(t, "ab_", 97, 98, 95);
    IDS(t, "ab-", 200, 45);
    IDS(t, "\xC3\xA9" "ab", 1, 97, 98);
    IDS(t, "abcd", 97, 98, 99, 100);
    IDS(t, "abc d", 201, 32, 100);
    IDS(t, "(ab)", 40, 200, 41);
    IDS(t, "ab\xE2\x80\x8D", 97, 98, 0);
    ag_tokenizer_free(t);
}

/* rstrip may run over the start of the next match, which still counts (as
 * Rust's find_matches); lstrip stops at the previous split; both take any
 * White_Space (tab, U+3000). */
Test(tk_pipeline, added_strip)
{
    ag_tokenizer *t = load(folder("strip", "\"added_tokens\": ["
        TOKEN(210, "<a>", "\"special\": true, \"normalized\": false, \"rstrip\": true") ", "
        TOKEN(211, "  <b>", "\"special\": true, \"normalized\": false") ", "
        TOKEN(220, "<m>", "\"special\": true, \"normalized\": false, \"lstrip\": true, \"rstrip\": true") "]",
        NULL, NULL));
    IDS(t, "<a>  <b>x", 210, 211, 120);
    IDS(t, "<a>   <b>x", 210, 211, 120);
    IDS(t, "x<a> y", 120, 210, 121);
    IDS(t, "<m>  <m>", 220, 220);
    IDS(t, " \t<m>\xE3\x80\x80x", 220, 120);
    ag_tokenizer_free(t);
}

/* A normalized token is matched in the normalized text, its content
 * normalized too ("HeLLo" under Lowercase matches "HELLO"); a
 * non-normalized one only in the raw text. */
Test(tk_pipeline, added_normalized)
{
    ag_tokenizer *t = load(folder("norm", "\"normalizer\": {\"type\": \"Lowercase\"}, \"added_tokens\": ["
        TOKEN(230, "HeLLo", "\"special\": false, \"normalized\": true") ", "
        TOKEN(231, "ABC", "\"special\": true, \"normalized\": false") "]", NULL, NULL));
    IDS(t, "say HELLO", 115, 97, 121, 32, 230);
    IDS(t, "ABC abc", 231, 32, 97, 98, 99);
    IDS(t, "hello", 230);
    cr_expect_eq(ag_tokenizer_token_id(t, "HeLLo"), 230);
    cr_expect_str_eq(ag_tokenizer_token(t, 231), "ABC");
    cr_expect_eq(ag_tokenizer_vocab_size(t), 232);
    ag_tokenizer_free(t);
}

/* Rust's AddedVocabulary skips a token with empty content; a repeated
 * content keeps its first id. */
Test(tk_pipeline, added_empty_and_repeated)
{
    ag_tokenizer *t = load(folder("rep", "\"added_tokens\": ["
        TOKEN(240, "", "\"special\": true") ", " TOKEN(241, "zz", "\"special\": true") ", "
        TOKEN(242, "zz", "\"special\": true") "]", NULL, NULL));
    IDS(t, "azz", 97, 241);
    cr_expect_eq(ag_tokenizer_token_id(t, "zz"), 241);
    cr_expect_null(ag_tokenizer_token(t, 240));
    ag_tokenizer_free(t);
}

/* TemplateProcessing lays out its pieces in order, a special token may have
 * several ids, $A may come twice (Rust copies the sequence); without special
 * tokens the sequence pieces stay. Sequence applies its processors in turn
 * (Roberta's cls/sep, then the template around that). */
Test(tk_pipeline, post_processors)
{
    ag_tokenizer *t = load(folder("tpl", "\"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": ["
        "{\"SpecialToken\": {\"id\": \"X\", \"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}},"
        "{\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}, {\"SpecialToken\": {\"id\": \"Y\", \"type_id\": 0}}],"
        "\"special_tokens\": {\"X\": {\"id\": \"X\", \"ids\": [5, 6], \"tokens\": [\"x\", \"y\"]},"
        "\"Y\": {\"id\": \"Y\", \"ids\": [7], \"tokens\": [\"z\"]}}}", NULL, NULL));
    IDS_SPECIAL(t, "ab", 5, 6, 97, 98, 97, 98, 7);
    IDS(t, "ab", 97, 98, 97, 98);
    IDS_SPECIAL(t, "", 5, 6, 7);
    ag_tokenizer_free(t);
    t = load(folder("seq", "\"post_processor\": {\"type\": \"Sequence\", \"processors\": ["
        "{\"type\": \"ByteLevel\"}, {\"type\": \"RobertaProcessing\", \"cls\": [\"<s>\", 3], \"sep\": [\"</s>\", 4]},"
        "{\"type\": \"TemplateProcessing\", \"single\": [{\"Sequence\": {\"id\": \"A\", \"type_id\": 0}},"
        "{\"SpecialToken\": {\"id\": \"Z\", \"type_id\": 0}}],"
        "\"special_tokens\": {\"Z\": {\"id\": \"Z\", \"ids\": [9], \"tokens\": [\"z\"]}}}]}", NULL, NULL));
    IDS_SPECIAL(t, "a", 3, 97, 4, 9);
    IDS(t, "a", 97);
    ag_tokenizer_free(t);
    t = load(folder("bert", "\"post_processor\": {\"type\": \"BertProcessing\", \"cls\": [\"[CLS]\", 101],"
                            " \"sep\": [\"[SEP]\", 102]}", NULL, NULL));
    IDS_SPECIAL(t, "a", 101, 97, 102);
    ag_tokenizer_free(t);
}

/* Rust's TemplateProcessing validation: every special token defined, as
 * many ids as tokens, $B only in the pair template, which needs both. */
Test(tk_pipeline, post_processor_errors)
{
    expect_load_error(folder("e1", "\"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": ["
        "{\"Sequence\": {\"id\": \"B\", \"type_id\": 0}}], \"special_tokens\": {}}", NULL, NULL),
        AG_EFORMAT, "post_processor.single (TemplateProcessing) uses $B");
    expect_load_error(folder("e2", "\"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": ["
        "{\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}], \"pair\": [{\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}],"
        " \"special_tokens\": {}}", NULL, NULL),
        AG_EFORMAT, "post_processor.pair (TemplateProcessing) must use both");
    expect_load_error(folder("e3", "\"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": ["
        "{\"SpecialToken\": {\"id\": \"X\", \"type_id\": 0}}], \"special_tokens\": {\"X\": {\"id\": \"X\","
        " \"ids\": [1, 2], \"tokens\": [\"x\"]}}}", NULL, NULL),
        AG_EFORMAT, "special_tokens['X']: needs as many");
    expect_load_error(folder("e4", "\"post_processor\": {\"type\": \"Sequence\", \"processors\": [{\"type\":"
        " \"ByteLevel\"}, {\"type\": \"BertProcessing\", \"cls\": [\"[CLS]\", 1], \"sep\": \"[SEP]\"}]}", NULL, NULL),
        AG_EFORMAT, "post_processor.processors[1].sep (BertProcessing) is not [token, id]");
}

#define SPECIALS "\"added_tokens\": [" TOKEN(300, "<s>", "\"special\": true, \"normalized\": false") ", " \
    TOKEN(301, "</s>", "\"special\": true, \"normalized\": false") ", "                              \
    TOKEN(302, "<eos>", "\"special\": true, \"normalized\": false") "], "                            \
    "\"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": \"<s>\","  \
    " \"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}], \"special_tokens\": {\"<s>\":"        \
    " {\"id\": \"<s>\", \"ids\": [300], \"tokens\": [\"<s>\"]}}}"

/* LlamaTokenizerFast, GemmaTokenizerFast, CodeLlamaTokenizerFast and
 * GPTNeoXTokenizerFast rebuild the post-processor in __init__
 * (update_post_processor): "bos $A eos" by add_bos_token / add_eos_token,
 * whose defaults are the class's (true/false; NeoX false/false), with the
 * bos/eos tokens of the configs (special_tokens_map.json first, as
 * from_pretrained reads it last). Other classes keep tokenizer.json's. */
Test(tk_pipeline, config_bos_eos)
{
    ag_tokenizer *t = load(folder("llama_eos", SPECIALS, "{\"tokenizer_class\": \"LlamaTokenizerFast\","
        " \"add_bos_token\": false, \"add_eos_token\": true, \"bos_token\": \"<s>\", \"eos_token\": \"</s>\"}", NULL));
    IDS_SPECIAL(t, "a", 97, 301);
    IDS(t, "a", 97);
    ag_tokenizer_free(t);
    t = load(folder("llama_default", SPECIALS, "{\"tokenizer_class\": \"LlamaTokenizer\"}", NULL));
    IDS_SPECIAL(t, "a", 300, 97);
    ag_tokenizer_free(t);
    t = load(folder("gemma", SPECIALS, "{\"tokenizer_class\": \"GemmaTokenizerFast\", \"add_eos_token\": true,"
        " \"bos_token\": \"<s>\", \"eos_token\": {\"content\": \"</s>\", \"special\": true}}",
        "{\"eos_token\": {\"content\": \"<eos>\"}}"));
    IDS_SPECIAL(t, "a", 300, 97, 302);
    ag_tokenizer_free(t);
    t = load(folder("neox", SPECIALS, "{\"tokenizer_class\": \"GPTNeoXTokenizer\"}", NULL));
    IDS_SPECIAL(t, "a", 97);
    ag_tokenizer_free(t);
    t = load(folder("other", SPECIALS, "{\"tokenizer_class\": \"PreTrainedTokenizerFast\", \"add_bos_token\": false,"
        " \"add_eos_token\": true, \"eos_token\": \"</s>\"}", NULL));
    IDS_SPECIAL(t, "a", 300, 97);
    ag_tokenizer_free(t);
    expect_load_error(folder("no_eos", SPECIALS, "{\"tokenizer_class\": \"LlamaTokenizerFast\", \"add_eos_token\": true,"
        " \"bos_token\": \"<s>\", \"eos_token\": null}", NULL), AG_ENOTFOUND, "tokenizer_config.json: add_eos_token");
    expect_load_error(folder("bad_eos", SPECIALS, "{\"tokenizer_class\": \"CodeLlamaTokenizer\", \"add_eos_token\": true,"
        " \"eos_token\": \"<nope>\"}", NULL), AG_ENOTFOUND, "eos_token '<nope>' is not a token");
}

/* GPT2TokenizerFast & co. write the config's add_prefix_space into a
 * ByteLevel pre-tokenizer: "a" becomes "Ġa", and "Ġ" (U+0120, the
 * byte-level space) is <unk> in this vocabulary. */
Test(tk_pipeline, config_add_prefix_space)
{
    const char *pre = "\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": true}";
    ag_tokenizer *t = load(folder("aps_off", pre, "{\"add_prefix_space\": false}", NULL));
    IDS(t, "a", 97);
    ag_tokenizer_free(t);
    t = load(folder("aps_on", pre, "{\"add_prefix_space\": true}", NULL));
    IDS(t, "a", 0, 97);
    ag_tokenizer_free(t);
}

/* vocab.txt becomes BertConverter's tokenizer.json: do_lower_case false
 * keeps case, tokenize_chinese_chars false keeps CJK runs whole, [CLS] and
 * [SEP] frame the text when the vocabulary has both. */
Test(tk_pipeline, vocab_txt_options)
{
    const char *dir = tio_path("vt");
    cr_assert_eq(mkdir(dir, 0700), 0);
    char p[4400];
    static const char vocab[] = "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\nHello\n\xE4\xB8\xAD\n\xE4\xB8\xAD\xE6\x96\x87\n";
    snprintf(p, sizeof p, "%s/vocab.txt", dir);
    cr_assert_eq(tio_write_bytes(p, vocab, strlen(vocab)), 0);
    ag_tokenizer *t = load(dir);
    cr_expect_eq(ag_tokenizer_get_kind(t), AG_TOKENIZER_WORDPIECE);
    IDS_SPECIAL(t, "Hello \xE4\xB8\xAD\xE6\x96\x87", 2, 4, 6, 1, 3);
    ag_tokenizer_free(t);
    snprintf(p, sizeof p, "%s/tokenizer_config.json", dir);
    static const char cfg[] = "{\"do_lower_case\": false, \"tokenize_chinese_chars\": false}";
    cr_assert_eq(tio_write_bytes(p, cfg, strlen(cfg)), 0);
    t = load(dir);
    IDS_SPECIAL(t, "Hello \xE4\xB8\xAD\xE6\x96\x87", 2, 5, 7, 3);
    ag_tokenizer_free(t);
}

/* vocab.json + merges.txt become GPT2Converter's tokenizer.json: byte-level
 * BPE over the merges in file order, the config's added_tokens_decoder
 * (with its flags) and its special tokens the vocabulary has matched whole;
 * a bad added_tokens_decoder entry is an error naming tokenizer_config.json. */
Test(tk_pipeline, slow_bpe_files)
{
    const char *dir = tio_path("slow");
    cr_assert_eq(mkdir(dir, 0700), 0);
    char p[4400];
    static const char vocab[] = "{\"a\": 0, \"b\": 1, \"ab\": 2, \"\\u0120\": 3, \"\\u0120ab\": 4, \"<eot>\": 5}";
    static const char merges[] = "#version: 0.2\na b\n\n\xC4\xA0 ab\n";
    snprintf(p, sizeof p, "%s/vocab.json", dir);
    cr_assert_eq(tio_write_bytes(p, vocab, strlen(vocab)), 0);
    snprintf(p, sizeof p, "%s/merges.txt", dir);
    cr_assert_eq(tio_write_bytes(p, merges, strlen(merges)), 0);
    snprintf(p, sizeof p, "%s/tokenizer_config.json", dir);
    static const char cfg[] = "{\"eos_token\": \"<eot>\", \"added_tokens_decoder\": {\"9\": {\"content\": \"<m>\","
                              " \"lstrip\": true, \"special\": true}}}";
    cr_assert_eq(tio_write_bytes(p, cfg, strlen(cfg)), 0);
    ag_tokenizer *t = load(dir);
    IDS(t, "ab ab<eot> <m>", 2, 4, 5, 9);
    cr_expect_eq(ag_tokenizer_vocab_size(t), 10);
    ag_tokenizer_free(t);
    static const char bad[] = "{\"added_tokens_decoder\": {\"9\": {\"content\": \"\"}}}";
    cr_assert_eq(tio_write_bytes(p, bad, strlen(bad)), 0);
    expect_load_error(dir, AG_EFORMAT, "tokenizer_config.json: added_tokens_decoder.9 is not a valid token");
}
