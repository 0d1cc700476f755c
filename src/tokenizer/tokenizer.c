/* tokenizer/tokenizer.c — loading a model folder's tokenizer into Hugging
 * Face's pipeline (added tokens, normalizer, pre-tokenizer, model,
 * post-processor; tk.h), encoding, and the public API of
 * attngeom/tokenizer.h.
 *
 * Every format becomes one tokenizer.json document before anything is
 * built: tokenizer_config.json's overrides are written into it, and the
 * slow tokenizers' files (vocab.json + merges.txt, vocab.txt) are turned
 * into the document transformers' converters (GPT2Converter,
 * BertConverter) would write. The components are then loaded from it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>
#include <utf8proc.h>

#include "attngeom/core.h"
#include "attngeom/tokenizer.h"
#include "io/io_internal.h"
#include "json_scan.h"
#include "tk.h"

struct ag_tokenizer {
    ag_tokenizer_kind kind;
    ag_tk_normalizer *norm;
    ag_tk_pretok *pre;
    ag_tk_model *model;
    ag_tk_added *added;
    ag_tk_post *post;
    ag_tk_decoder *dec;
    size_t vocab_size;
};

/* Offset of the first byte that is not valid UTF-8 (no overlong forms,
 * surrogates or code points past U+10FFFF, as Python's codec), n if none. */
static size_t utf8_bad_offset(const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(n - i), &cp);
        if (k <= 0)
            return i;
        i += (size_t)k;
    }
    return n;
}

/* ======================================================================
 * files
 * ====================================================================== */

static int path_join(char **out, const char *dir, const char *name, ag_error *err)
{
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (!p)
        return ag_error_set(err, AG_ENOMEM, "out of memory");
    memcpy(p, dir, a);
    size_t k = a;
    if (k > 0 && p[k - 1] != '/')
        p[k++] = '/';
    memcpy(p + k, name, b + 1);
    *out = p;
    return AG_OK;
}

/* Any kind of file counts as present: a FIFO or device named like a
 * tokenizer file is then refused by the reader, never skipped in silence. */
static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static int load_json(const char *path, json_t **out, int optional, ag_error *err)
{
    *out = NULL;
    if (optional && !file_exists(path))
        return AG_OK;
    return agi_json_load(path, AG_TOKENIZER_FILE_MAX, JSON_ALLOW_NUL, out, err);
}

/* The side files of a folder, both optional (NULL when absent). */
typedef struct {
    char *cfg_path;
    json_t *cfg; /* tokenizer_config.json */
    json_t *map; /* special_tokens_map.json */
} side_files;

static int load_side_files(const char *dir, side_files *sf, ag_error *err)
{
    char *mp = NULL;
    memset(sf, 0, sizeof *sf);
    int rc = path_join(&sf->cfg_path, dir, "tokenizer_config.json", err);
    if (rc == AG_OK)
        rc = load_json(sf->cfg_path, &sf->cfg, 1, err);
    if (rc == AG_OK)
        rc = path_join(&mp, dir, "special_tokens_map.json", err);
    if (rc == AG_OK)
        rc = load_json(mp, &sf->map, 1, err);
    free(mp);
    return rc;
}

static void side_files_free(side_files *sf)
{
    free(sf->cfg_path);
    json_decref(sf->cfg);
    json_decref(sf->map);
}

/* A special token named by the side files ("bos_token": "<s>" or
 * {"content": "<s>", ...}). special_tokens_map.json wins, as transformers'
 * from_pretrained lets it override tokenizer_config.json. *set tells
 * whether either file has the key (a null value counts: no token). */
static const char *side_token(const side_files *sf, const char *key, int *set)
{
    json_t *v = json_object_get(sf->map, key);
    if (!v)
        v = json_object_get(sf->cfg, key);
    if (set)
        *set = v != NULL;
    if (json_is_object(v))
        v = json_object_get(v, "content");
    return json_string_value(v);
}

/* json_object_set_new that reports failure as AG_ENOMEM. */
static int jset(json_t *o, const char *k, json_t *v)
{
    return v && json_object_set_new(o, k, v) == 0 ? AG_OK : AG_ENOMEM;
}

/* ======================================================================
 * building the pipeline from a tokenizer.json document
 * ====================================================================== */

static ag_tokenizer_kind model_kind(const ag_tk_model *m)
{
    const char *type = ag_tk_model_type(m);
    return !strcmp(type, "WordPiece")   ? AG_TOKENIZER_WORDPIECE
           : !strcmp(type, "Unigram")   ? AG_TOKENIZER_UNIGRAM
           : !strcmp(type, "WordLevel") ? AG_TOKENIZER_WORDLEVEL
                                        : AG_TOKENIZER_BPE;
}

/* Id of a token string: added tokens first, as Rust's token_to_id. */
static int lookup(const ag_tokenizer *t, const char *s, int32_t *id)
{
    size_t n = strlen(s);
    return ag_tk_added_token_to_id(t->added, s, n, id) || ag_tk_model_token_to_id(t->model, s, n, id);
}

/* transformers' fast tokenizers of these classes rebuild the post-processor
 * in __init__ from add_bos_token / add_eos_token, whatever tokenizer.json
 * says (update_post_processor): the defaults and special tokens of each. */
static const struct {
    const char *cls;
    int bos, eos; /* add_bos_token, add_eos_token defaults */
    const char *bos_tok, *eos_tok;
} bos_eos_classes[] = {
    {"LlamaTokenizer", 1, 0, "<s>", "</s>"},
    {"CodeLlamaTokenizer", 1, 0, "<s>", "</s>"},
    {"GemmaTokenizer", 1, 0, "<bos>", "<eos>"},
    {"GPTNeoXTokenizer", 0, 0, "<|endoftext|>", "<|endoftext|>"},
};

/* "{first}:0 $A:0 {last}:0" as TemplateProcessing's JSON (LLaMA's bos/eos,
 * BERT's [CLS]/[SEP]), either end possibly absent (id < 0). */
static json_t *frame_template(const char *bos, int32_t bos_id, const char *eos, int32_t eos_id)
{
    json_t *single = json_array(), *specials = json_object();
    const char *names[2] = {bos, eos};
    int32_t ids[2] = {bos_id, eos_id};
    for (int k = 0; k < 2; k++) {
        if (k == 1)
            json_array_append_new(single, json_pack("{s{sssi}}", "Sequence", "id", "A", "type_id", 0));
        if (ids[k] < 0)
            continue;
        json_array_append_new(single, json_pack("{s{sssi}}", "SpecialToken", "id", names[k], "type_id", 0));
        json_object_set_new(specials, names[k], json_pack("{sss[i]s[s]}", "id", names[k], "ids", (json_int_t)ids[k],
                                                          "tokens", names[k]));
    }
    return json_pack("{sssoso}", "type", "TemplateProcessing", "single", single, "special_tokens", specials);
}

/* The id of the bos or eos token when add_bos_token / add_eos_token asks
 * for it (flag absent: the class's default), else -1. */
static int bos_eos_id(const ag_tokenizer *t, const side_files *sf, const char *flag, int dflt, const char *key,
                      const char *dflt_tok, const char **tok, int32_t *id, ag_error *err)
{
    json_t *f = json_object_get(sf->cfg, flag);
    *id = -1;
    if (!(json_is_boolean(f) ? json_is_true(f) : dflt))
        return AG_OK;
    int set;
    *tok = side_token(sf, key, &set);
    if (!set)
        *tok = dflt_tok;
    if (!*tok || !lookup(t, *tok, id))
        return ag_error_set(err, AG_ENOTFOUND, "%s: %s is set but %s %s%s%s is not a token", sf->cfg_path, flag, key,
                            *tok ? "'" : "", *tok ? *tok : "(none)", *tok ? "'" : "");
    return AG_OK;
}

/* The post_processor to load: tokenizer.json's, or the template that
 * LlamaTokenizerFast & co. put in its place. *pp is a new reference. */
static int post_json(const ag_tokenizer *t, json_t *root, const side_files *sf, json_t **pp, ag_error *err)
{
    const char *cls = json_string_value(json_object_get(sf->cfg, "tokenizer_class"));
    *pp = json_incref(json_object_get(root, "post_processor"));
    for (size_t i = 0; cls && i < sizeof bos_eos_classes / sizeof *bos_eos_classes; i++) {
        size_t n = strlen(bos_eos_classes[i].cls);
        if (strncmp(cls, bos_eos_classes[i].cls, n) || (cls[n] && strcmp(cls + n, "Fast")))
            continue;
        const char *bos = NULL, *eos = NULL;
        int32_t bos_id, eos_id;
        int rc = bos_eos_id(t, sf, "add_bos_token", bos_eos_classes[i].bos, "bos_token", bos_eos_classes[i].bos_tok,
                            &bos, &bos_id, err);
        if (rc == AG_OK)
            rc = bos_eos_id(t, sf, "add_eos_token", bos_eos_classes[i].eos, "eos_token", bos_eos_classes[i].eos_tok,
                            &eos, &eos_id, err);
        if (rc != AG_OK)
            return rc;
        json_decref(*pp);
        *pp = frame_template(bos, bos_id, eos, eos_id);
        if (!*pp)
            return ag_error_set(err, AG_ENOMEM, "out of memory");
        break;
    }
    return AG_OK;
}

/* The components of root in pipeline order, the model first: the added
 * tokens and the bos/eos template look ids up in it. */
static int build(ag_tokenizer *t, const char *path, json_t *root, const ag_tk_scan *sc, const side_files *sf,
                 ag_error *err)
{
    json_t *model = json_object_get(root, "model"), *pp = NULL;
    if (!json_is_object(root) || !json_is_object(model))
        return ag_error_set(err, AG_EFORMAT, "%s: \"model\" is missing or not an object", path);
    int rc = ag_tk_model_load_scanned(path, model, sc, &t->model, err);
    if (rc == AG_OK)
        t->kind = model_kind(t->model);
    if (rc == AG_OK)
        rc = ag_tk_normalizer_load(path, json_object_get(root, "normalizer"), &t->norm, err);
    if (rc == AG_OK)
        rc = ag_tk_added_load(path, json_object_get(root, "added_tokens"), t->norm, &t->added, err);
    if (rc == AG_OK)
        rc = ag_tk_pretok_load(path, json_object_get(root, "pre_tokenizer"), &t->pre, err);
    if (rc == AG_OK)
        rc = post_json(t, root, sf, &pp, err);
    if (rc == AG_OK)
        rc = ag_tk_post_load(pp == json_object_get(root, "post_processor") ? path : sf->cfg_path, pp, &t->post, err);
    json_decref(pp);
    if (rc == AG_OK)
        rc = ag_tk_decoder_load(path, json_object_get(root, "decoder"), &t->dec, err);
    if (rc == AG_OK) {
        size_t a = ag_tk_model_vocab_size(t->model), b = ag_tk_added_id_end(t->added);
        t->vocab_size = a > b ? a : b;
    }
    return rc;
}

/* ======================================================================
 * tokenizer.json and tokenizer_config.json
 * ====================================================================== */

/* Python transformers' fast tokenizers apply tokenizer_config.json over
 * tokenizer.json: GPT2TokenizerFast & co. its add_prefix_space to a
 * ByteLevel pre-tokenizer, BertTokenizerFast & co. do_lower_case,
 * strip_accents and tokenize_chinese_chars to a BertNormalizer. Keys absent
 * from the config leave the file as it is. */
static int is_type(json_t *component, const char *type)
{
    const char *t = json_string_value(json_object_get(component, "type"));
    return t && !strcmp(t, type);
}

static int apply_config(json_t *root, json_t *cfg)
{
    json_t *pre = json_object_get(root, "pre_tokenizer"), *nm = json_object_get(root, "normalizer");
    json_t *v = json_object_get(cfg, "add_prefix_space");
    int rc = AG_OK;
    if (json_is_boolean(v) && is_type(pre, "ByteLevel"))
        rc = jset(pre, "add_prefix_space", json_boolean(json_is_true(v)));
    if (!is_type(nm, "BertNormalizer"))
        return rc;
    static const char *const keys[3][2] = {{"do_lower_case", "lowercase"},
                                           {"tokenize_chinese_chars", "handle_chinese_chars"},
                                           {"strip_accents", "strip_accents"}};
    for (int k = 0; rc == AG_OK && k < 3; k++) {
        v = json_object_get(cfg, keys[k][0]);
        if (json_is_boolean(v) || (k == 2 && json_is_null(v)))
            rc = jset(nm, keys[k][1], json_incref(v));
    }
    return rc;
}

static int load_tokenizer_json(ag_tokenizer *t, const char *path, const char *dir, ag_error *err)
{
    json_t *root;
    side_files sf;
    ag_tk_scan sc; /* model.vocab and model.merges, the bulk of the file */
    int rc = ag_tk_json_load_scanned(path, AG_TOKENIZER_FILE_MAX, JSON_ALLOW_NUL, &root, &sc, err);
    if (rc != AG_OK)
        return rc;
    rc = load_side_files(dir, &sf, err);
    if (rc == AG_OK && apply_config(root, sf.cfg) != AG_OK)
        rc = ag_error_set(err, AG_ENOMEM, "out of memory");
    if (rc == AG_OK)
        rc = build(t, path, root, &sc, &sf, err);
    side_files_free(&sf);
    ag_tk_scan_free(&sc);
    json_decref(root);
    return rc;
}

/* ======================================================================
 * the slow tokenizers' files
 * ====================================================================== */

/* transformers opens vocab.txt and merges.txt as UTF-8 text: a line that is
 * not is refused, naming it. */
static int check_line_utf8(const char *path, size_t line, const char *s, size_t n, ag_error *err)
{
    size_t bad = utf8_bad_offset(s, n);
    if (bad == n)
        return AG_OK;
    return ag_error_set(err, AG_EFORMAT, "%s: line %zu is not valid UTF-8 (byte %zu)", path, line, bad + 1);
}

/* The line of buf starting at *i, without its "\n" or "\r\n"; *i moves past
 * it. */
static const char *next_line(const char *buf, size_t n, size_t *i, size_t *len)
{
    size_t s = *i, e = s;
    while (e < n && buf[e] != '\n')
        e++;
    size_t le = e;
    if (le > s && buf[le - 1] == '\r')
        le--;
    *len = le - s;
    *i = e + 1;
    return buf + s;
}

/* The lines of a text file, each checked as UTF-8; line(ctx, k, s, n) gets
 * them in turn (k counts from 1). */
static int read_lines(const char *path, int (*line)(void *ctx, const char *path, size_t k, const char *s, size_t n,
                                                    ag_error *err),
                      void *ctx, ag_error *err)
{
    char *buf = NULL;
    size_t n = 0;
    int rc = ag_read_file(path, AG_TOKENIZER_FILE_MAX, &buf, &n, err);
    size_t k = 0;
    for (size_t i = 0; rc == AG_OK && i < n;) {
        size_t len;
        const char *s = next_line(buf, n, &i, &len);
        rc = check_line_utf8(path, ++k, s, len, err);
        if (rc == AG_OK)
            rc = line(ctx, path, k, s, len, err);
    }
    free(buf);
    return rc;
}

/* merges.txt: "a b" a line, rank in file order; blank lines and the
 * "#version:" header that starts GPT-2's file are skipped. */
static int merges_line(void *ctx, const char *path, size_t k, const char *s, size_t n, ag_error *err)
{
    if (n == 0 || (k == 1 && n >= 9 && !memcmp(s, "#version:", 9)))
        return AG_OK;
    const char *sp = memchr(s, ' ', n);
    if (!sp || memchr(sp + 1, ' ', n - (size_t)(sp + 1 - s)))
        return ag_error_set(err, AG_EFORMAT, "%s: line %zu is not \"a b\"", path, k);
    if (json_array_append_new(ctx, json_stringn(s, n)))
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
    return AG_OK;
}

/* The added tokens GPT2Converter's tokenizer gets: tokenizer_config.json's
 * added_tokens_decoder ({"50256": {"content": ...}}), then GPT2Tokenizer's
 * bos/eos/unk/pad when the vocabulary has them (matched whole in text, as
 * its added tokens are). */
static int bpe_added(const side_files *sf, json_t *vocab, json_t *added, ag_error *err)
{
    json_t *atd = json_object_get(sf->cfg, "added_tokens_decoder");
    const char *k;
    json_t *e;
    json_object_foreach(atd, k, e) {
        char *endp;
        long long id = strtoll(k, &endp, 10);
        json_t *c = json_object_get(e, "content");
        if (!*k || *endp || id < 0 || id >= AG_TOKENIZER_ID_MAX || !json_is_string(c) || !json_string_length(c))
            return ag_error_set(err, AG_EFORMAT, "%s: added_tokens_decoder.%.40s is not a valid token", sf->cfg_path,
                                k);
        json_t *tok = json_deep_copy(e);
        if (!tok || jset(tok, "id", json_integer(id)) != AG_OK || json_array_append_new(added, tok))
            return ag_error_set(err, AG_ENOMEM, "out of memory");
    }
    static const char *const keys[] = {"bos_token", "eos_token", "unk_token", "pad_token"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        const char *s = side_token(sf, keys[i], NULL);
        json_t *id = s ? json_object_get(vocab, s) : NULL;
        if (json_is_integer(id) &&
            json_array_append_new(added, json_pack("{sOsssbsb}", "id", id, "content", s, "special", 1, "normalized", 1)))
            return ag_error_set(err, AG_ENOMEM, "out of memory");
    }
    return AG_OK;
}

/* vocab.json + merges.txt as GPT2Converter writes them into tokenizer.json. */
static int bpe_files_json(const char *dir, const char *vocab_path, const side_files *sf, json_t **root,
                          ag_error *err)
{
    char *mp;
    json_t *vocab = NULL, *merges = json_array(), *added = json_array();
    int rc = path_join(&mp, dir, "merges.txt", err);
    if (rc == AG_OK)
        rc = load_json(vocab_path, &vocab, 0, err);
    if (rc == AG_OK && !file_exists(mp))
        rc = ag_error_set(err, AG_ENOTFOUND, "%s: missing (needed with vocab.json)", mp);
    if (rc == AG_OK && (!merges || !added))
        rc = ag_error_set(err, AG_ENOMEM, "out of memory");
    if (rc == AG_OK)
        rc = read_lines(mp, merges_line, merges, err);
    if (rc == AG_OK)
        rc = bpe_added(sf, vocab, added, err);
    json_t *aps = json_object_get(sf->cfg, "add_prefix_space");
    if (rc == AG_OK) {
        *root = json_pack("{s:o, s:{s:s, s:b, s:b, s:b}, s:{s:s, s:O, s:o, s:s, s:s, s:b, s:b}, s:{s:s, s:b}, s:{s:s}}",
                          "added_tokens", added,
                          "pre_tokenizer", "type", "ByteLevel", "add_prefix_space", json_is_true(aps),
                          "trim_offsets", 1, "use_regex", 1,
                          "model", "type", "BPE", "vocab", vocab, "merges", merges, "continuing_subword_prefix", "",
                          "end_of_word_suffix", "", "fuse_unk", 0, "byte_fallback", 0,
                          "post_processor", "type", "ByteLevel", "trim_offsets", 0,
                          "decoder", "type", "ByteLevel");
        added = merges = NULL; /* "o" took them, also on failure */
        if (!*root)
            rc = ag_error_set(err, AG_ENOMEM, "out of memory");
    }
    json_decref(vocab);
    json_decref(merges);
    json_decref(added);
    free(mp);
    return rc;
}

/* vocab.txt: one token a line, the line number its id. HF's load_vocab
 * strips the line: trailing spaces and tabs go too. */
static int vocab_line(void *ctx, const char *path, size_t k, const char *s, size_t n, ag_error *err)
{
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    if (json_object_setn_new(ctx, s, n, json_integer((json_int_t)(k - 1))))
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
    return AG_OK;
}

enum { VT_PAD, VT_UNK, VT_CLS, VT_SEP, VT_MASK, VT_N };

/* vocab.txt as BertConverter writes it into tokenizer.json: BERT's five
 * special tokens (by the side files' names or BERT's defaults) that the
 * vocabulary has become special added tokens; [CLS] $A [SEP] when both
 * exist; the normalizer takes BertTokenizer's options. */
static int vocab_txt_json(const char *vpath, const side_files *sf, json_t **root, ag_error *err)
{
    static const char *const keys[VT_N] = {"pad_token", "unk_token", "cls_token", "sep_token", "mask_token"};
    static const char *const dflt[VT_N] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
    json_t *vocab = json_object(), *added = json_array(), *post = json_null();
    int rc = vocab && added ? read_lines(vpath, vocab_line, vocab, err) : ag_error_set(err, AG_ENOMEM, "out of memory");
    if (rc == AG_OK && json_object_size(vocab) == 0)
        rc = ag_error_set(err, AG_EFORMAT, "%s: empty vocabulary", vpath);
    const char *tok[VT_N];
    json_t *ids[VT_N];
    for (int i = 0; rc == AG_OK && i < VT_N; i++) {
        tok[i] = side_token(sf, keys[i], NULL);
        if (!tok[i])
            tok[i] = dflt[i];
        ids[i] = json_object_get(vocab, tok[i]);
        if (ids[i] && json_array_append_new(added, json_pack("{sOsssbsb}", "id", ids[i], "content", tok[i], "special", 1,
                                                             "normalized", 0)))
            rc = ag_error_set(err, AG_ENOMEM, "out of memory");
    }
    if (rc == AG_OK && ids[VT_CLS] && ids[VT_SEP])
        post = frame_template(tok[VT_CLS], (int32_t)json_integer_value(ids[VT_CLS]), tok[VT_SEP],
                                (int32_t)json_integer_value(ids[VT_SEP]));
    json_t *lc = json_object_get(sf->cfg, "do_lower_case"), *cc = json_object_get(sf->cfg, "tokenize_chinese_chars");
    json_t *sa = json_object_get(sf->cfg, "strip_accents");
    if (rc == AG_OK) {
        *root = json_pack("{s:o, s:{s:s, s:b, s:b, s:O, s:b}, s:{s:s}, s:{s:s, s:s, s:s, s:i, s:O}, s:o, "
                          "s:{s:s, s:s, s:b}}",
                          "added_tokens", added,
                          "normalizer", "type", "BertNormalizer", "clean_text", 1,
                          "handle_chinese_chars", !json_is_false(cc), "strip_accents",
                          json_is_boolean(sa) ? sa : json_null(), "lowercase", !json_is_false(lc),
                          "pre_tokenizer", "type", "BertPreTokenizer",
                          "model", "type", "WordPiece", "unk_token", tok[VT_UNK], "continuing_subword_prefix", "##",
                          "max_input_chars_per_word", 100, "vocab", vocab,
                          "post_processor", post,
                          "decoder", "type", "WordPiece", "prefix", "##", "cleanup", 1);
        added = post = NULL;
        if (!*root)
            rc = ag_error_set(err, AG_ENOMEM, "out of memory");
    }
    json_decref(vocab);
    json_decref(added);
    json_decref(post);
    return rc;
}

/* A slow tokenizer's files in folder dir: their tokenizer.json document,
 * built, with `label` naming them in messages. */
static int load_slow_files(ag_tokenizer *t, const char *dir, const char *vpath, int wordpiece, ag_error *err)
{
    side_files sf;
    json_t *root = NULL;
    char *label = NULL;
    int rc = load_side_files(dir, &sf, err);
    if (rc == AG_OK)
        rc = wordpiece ? vocab_txt_json(vpath, &sf, &root, err) : bpe_files_json(dir, vpath, &sf, &root, err);
    if (rc == AG_OK && !wordpiece && !(label = malloc(strlen(vpath) + 16)))
        rc = ag_error_set(err, AG_ENOMEM, "out of memory");
    if (rc == AG_OK && label)
        sprintf(label, "%s + merges.txt", vpath);
    if (rc == AG_OK)
        rc = build(t, label ? label : vpath, root, NULL, &sf, err);
    free(label);
    json_decref(root);
    side_files_free(&sf);
    return rc;
}

/* ======================================================================
 * loading
 * ====================================================================== */

/* A tokenizer.json named directly: its folder holds the side files. */
static int load_named_file(ag_tokenizer *t, const char *file, ag_error *err)
{
    char *dir = strdup(file);
    if (!dir)
        return ag_error_set(err, AG_ENOMEM, "out of memory");
    char *slash = strrchr(dir, '/');
    if (slash)
        slash[1] = '\0';
    else
        strcpy(dir, ".");
    int rc = load_tokenizer_json(t, file, dir, err);
    free(dir);
    return rc;
}

/* The first of tokenizer.json, vocab.json (+ merges.txt), vocab.txt present
 * in the folder decides the format: the fast tokenizer's file wins, as in
 * transformers. */
static int load_folder(ag_tokenizer *t, const char *dir, ag_error *err)
{
    static const char *const names[] = {"tokenizer.json", "vocab.json", "vocab.txt"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char *p;
        int rc = path_join(&p, dir, names[i], err);
        if (rc != AG_OK)
            return rc;
        if (!file_exists(p)) {
            free(p);
            continue;
        }
        rc = i == 0 ? load_tokenizer_json(t, p, dir, err) : load_slow_files(t, dir, p, i == 2, err);
        free(p);
        return rc;
    }
    return ag_error_set(err, AG_ENOTFOUND,
                        "%s: no tokenizer files (tokenizer.json, vocab.json + merges.txt, or vocab.txt)", dir);
}

int ag_tokenizer_load(const char *model_dir, ag_tokenizer **out, ag_error *err)
{
    if (!out)
        return ag_error_set(err, AG_EINVAL, "ag_tokenizer_load: out is NULL");
    *out = NULL;
    if (!model_dir || !*model_dir)
        return ag_error_set(err, AG_EINVAL, "ag_tokenizer_load: no model folder given");
    struct stat st;
    if (stat(model_dir, &st) != 0)
        return ag_error_set(err, AG_EIO, "%s: cannot open model folder: %s", model_dir, agi_strerror(errno));
    ag_tokenizer *t = calloc(1, sizeof *t);
    if (!t)
        return ag_error_set(err, AG_ENOMEM, "out of memory");
    int rc;
    if (S_ISREG(st.st_mode))
        rc = load_named_file(t, model_dir, err);
    else if (!S_ISDIR(st.st_mode))
        rc = ag_error_set(err, AG_EIO, "%s: not a folder or tokenizer.json file", model_dir);
    else
        rc = load_folder(t, model_dir, err);
    if (rc != AG_OK) {
        ag_tokenizer_free(t);
        return rc;
    }
    *out = t;
    return AG_OK;
}

void ag_tokenizer_free(ag_tokenizer *t)
{
    if (!t)
        return;
    ag_tk_normalizer_free(t->norm);
    ag_tk_pretok_free(t->pre);
    ag_tk_model_free(t->model);
    ag_tk_added_free(t->added);
    ag_tk_post_free(t->post);
    ag_tk_decoder_free(t->dec);
    free(t);
}

/* ======================================================================
 * encoding
 * ====================================================================== */

/* The model's ids of every piece; added tokens' ids as they are. */
static int run_model(const ag_tokenizer *t, const ag_tk_splits *pieces, ag_tk_ids *out, ag_error *err)
{
    for (size_t i = 0; i < pieces->n; i++) {
        const ag_tk_split *p = &pieces->v[i];
        int rc = p->id >= 0 ? ag_tk_ids_push(out, p->id) : ag_tk_model_tokenize(t->model, p->s, p->n, out, err);
        if (rc != AG_OK)
            return p->id >= 0 ? ag_error_set(err, rc, "out of memory while tokenizing") : rc;
    }
    return AG_OK;
}

int ag_tokenizer_encode_ex(const ag_tokenizer *t, const char *text, size_t len, unsigned flags, int32_t **ids,
                           size_t *n, ag_error *err)
{
    if (ids)
        *ids = NULL;
    if (n)
        *n = 0;
    if (!t || !ids || !n || (!text && len > 0))
        return ag_error_set(err, AG_EINVAL, "ag_tokenizer_encode: NULL argument");
    size_t bad = text ? utf8_bad_offset(text, len) : len;
    if (bad < len)
        return ag_error_set(err, AG_EINVAL, "text: invalid UTF-8 at byte %zu", bad);
    ag_tk_splits segs = {0}, pieces = {0};
    ag_tk_ids out = {0};
    int rc = ag_tk_added_extract(t->added, t->norm, text ? text : "", len, &segs, err);
    if (rc == AG_OK)
        rc = ag_tk_pretokenize(t->pre, &segs, &pieces, err);
    ag_tk_splits_free(&segs);
    if (rc == AG_OK)
        rc = run_model(t, &pieces, &out, err);
    ag_tk_splits_free(&pieces);
    if (rc == AG_OK)
        rc = ag_tk_post_process(t->post, &out, !(flags & AG_TOKENIZE_NO_SPECIAL), err);
    if (rc != AG_OK) {
        free(out.v);
        return rc;
    }
    *ids = out.v;
    *n = out.n;
    return AG_OK;
}

int ag_tokenizer_encode(const ag_tokenizer *t, const char *text, size_t len, int32_t **ids, size_t *n,
                        ag_error *err)
{
    return ag_tokenizer_encode_ex(t, text, len, 0, ids, n, err);
}

/* ======================================================================
 * offsets (Rust: encode_char_offsets)
 * ====================================================================== */

/* Each byte's span: that of its character (NormalizedString::from). */
static size_t *char_spans(const char *s, size_t n)
{
    size_t *al = malloc((2 * n + 2) * sizeof *al);
    for (size_t i = 0; al && i < n;) {
        size_t j = i;
        ag_tk_next_cp(s, n, &j);
        for (size_t k = i; k < j; k++) {
            al[2 * k] = i;
            al[2 * k + 1] = j;
        }
        i = j;
    }
    return al;
}

/* Spaces (Ġ or Unicode White_Space) at the start (end) of token string s:
 * what byte_level.rs's process_offsets counts. */
static size_t space_run(const char *s, size_t n, int from_end)
{
    size_t count = 0;
    while (n > 0) {
        size_t st = 0, i;
        if (from_end) {
            st = n - 1;
            while (st > 0 && ((unsigned char)s[st] & 0xC0) == 0x80)
                st--;
        }
        i = st;
        int32_t c = ag_tk_next_cp(s, n, &i);
        if (c != 0x120 && !ag_tk_is_whitespace(c))
            break;
        count++;
        if (from_end)
            n = st;
        else {
            s += i;
            n -= i;
        }
    }
    return count;
}

/* The model's tokens of one piece (an added token: itself) with their
 * original byte spans (the spans of their first and last bytes, as
 * NormalizedString::convert_offsets) and space counts. */
static int piece_offsets(const ag_tokenizer *t, const ag_tk_split *p, ag_tk_ids *out, ag_error *err)
{
    ag_tk_ids tmp = {.track = 1};
    int rc = p->id >= 0 ? ag_tk_ids_push_span(&tmp, p->id, 0, p->n) : ag_tk_model_tokenize(t->model, p->s, p->n, &tmp, err);
    for (size_t k = 0; rc == AG_OK && k < tmp.n; k++) {
        size_t a = tmp.off[4 * k], b = tmp.off[4 * k + 1];
        size_t s0 = a < p->n ? p->al[2 * a] : p->al[2 * p->n - 1], s1 = b > a ? p->al[2 * (b - 1) + 1] : s0;
        /* the token's value, as the trim reads it: an added token's text, the
         * covered text for Unigram's unk, else the vocabulary string */
        const char *v = ag_tk_model_id_to_token(t->model, tmp.v[k]);
        size_t vn = v ? strlen(v) : 0;
        if (p->id >= 0 || ag_tk_model_unk_is_text(t->model, tmp.v[k])) {
            v = p->s + a;
            vn = b - a;
        }
        if (ag_tk_ids_push_span(out, tmp.v[k], s0, s1) != AG_OK) {
            rc = ag_error_set(err, AG_ENOMEM, "out of memory while tokenizing");
        } else {
            out->off[4 * (out->n - 1) + 2] = space_run(v, vn, 0);
            out->off[4 * (out->n - 1) + 3] = space_run(v, vn, 1);
        }
    }
    ag_tk_ids_free(&tmp);
    return rc;
}

/* Byte offsets to code points (BytesToCharOffsetConverter: an end inside a
 * character counts that character's index; the text's end one past the
 * last). */
static void to_chars(const char *s, size_t n, size_t *off, size_t count)
{
    size_t *ci = malloc((n + 1) * sizeof *ci), c = 0;
    if (!ci)
        return;
    for (size_t i = 0; i < n; c++) {
        size_t j = i;
        ag_tk_next_cp(s, n, &j);
        for (; i < j; i++)
            ci[i] = c;
    }
    ci[n] = c;
    for (size_t k = 0; k < count; k++) {
        size_t *o = off + 4 * k;
        if (o[0] >= n) /* Rust leaves a span starting at the end in bytes */
            continue;
        o[0] = ci[o[0]];
        o[1] = o[1] < n ? ci[o[1]] : c;
    }
    free(ci);
}

const char *ag_tokenizer_token(const ag_tokenizer *t, int32_t id)
{
    if (!t || id < 0)
        return NULL;
    const char *s = ag_tk_added_id_to_token(t->added, id);
    return s ? s : ag_tk_model_id_to_token(t->model, id);
}

int32_t ag_tokenizer_token_id(const ag_tokenizer *t, const char *token)
{
    int32_t id;
    return t && token && lookup(t, token, &id) ? id : -1;
}

size_t ag_tokenizer_vocab_size(const ag_tokenizer *t)
{
    return t ? t->vocab_size : 0;
}

int ag_tokenizer_is_special(const ag_tokenizer *t, int32_t id)
{
    return t && id >= 0 && ag_tk_added_id_is_special(t->added, id);
}

int ag_tokenizer_with_special(const ag_tokenizer *t, const int32_t *ids, size_t n, int32_t **out,
                              size_t *n_out, ag_error *err)
{
    if (out)
        *out = NULL;
    if (n_out)
        *n_out = 0;
    if (!t || !out || !n_out || (!ids && n > 0))
        return ag_error_set(err, AG_EINVAL, "ag_tokenizer_with_special: NULL argument");
    ag_tk_ids seq = {0};
    for (size_t i = 0; i < n; i++)
        if (ag_tk_ids_push(&seq, ids[i]) != AG_OK) {
            free(seq.v);
            return ag_error_set(err, AG_ENOMEM, "out of memory for %zu token ids", n);
        }
    int rc = ag_tk_post_process(t->post, &seq, 1, err);
    if (rc != AG_OK) {
        free(seq.v);
        return rc;
    }
    *out = seq.v;
    *n_out = seq.n;
    return AG_OK;
}

ag_tokenizer_kind ag_tokenizer_get_kind(const ag_tokenizer *t)
{
    return t ? t->kind : AG_TOKENIZER_BPE;
}

/* ======================================================================
 * decoding
 * ====================================================================== */

/* Tokenizer::decode (tokenizer/mod.rs): the token string of every id (an
 * added token's as simple_id_to_token gives it, else the model's; ids
 * without one are left out; special added tokens too when asked), through
 * the decoder. */
static int decode_into(const ag_tokenizer *t, const int32_t *ids, size_t n, unsigned flags, ag_tk_buf *out,
                       ag_error *err)
{
    ag_tk_splits toks = {0};
    int rc = AG_OK;
    for (size_t i = 0; rc == AG_OK && i < n; i++) {
        const char *s = ids[i] < 0 ? NULL : ag_tk_added_decode_token(t->added, ids[i]);
        if (!s && ids[i] >= 0)
            s = ag_tk_model_id_to_token(t->model, ids[i]);
        size_t len = s ? strlen(s) : 0;
        if (s && !((flags & AG_DECODE_SKIP_SPECIAL) && ag_tk_added_is_special(t->added, s, len)))
            rc = ag_tk_splits_push(&toks, s, len, 0, -1) == AG_OK ? AG_OK
                                                                   : ag_error_set(err, AG_ENOMEM, "decode: out of memory");
    }
    if (rc == AG_OK)
        rc = ag_tk_decode(t->dec, &toks, out, err);
    ag_tk_splits_free(&toks);
    return rc;
}

int ag_tokenizer_decode(const ag_tokenizer *t, const int32_t *ids, size_t n, unsigned flags, char **text,
                        ag_error *err)
{
    if (text)
        *text = NULL;
    if (!t || !text || (!ids && n > 0))
        return ag_error_set(err, AG_EINVAL, "ag_tokenizer_decode: NULL argument");
    ag_tk_buf b = {0};
    int rc = decode_into(t, ids, n, flags, &b, err);
    if (rc == AG_OK && !b.b)
        rc = ag_tk_buf_put(&b, "", 0) == AG_OK ? AG_OK : ag_error_set(err, AG_ENOMEM, "decode: out of memory");
    if (rc != AG_OK) {
        free(b.b);
        return rc;
    }
    *text = b.b;
    return AG_OK;
}

/* Token i's string: decode([ids[i]]) for the first; for the others what
 * decode([ids[i-1], ids[i]]) adds to decode([ids[i-1]]) when that is its
 * prefix, else decode([ids[i]]). */
static int token_string(const ag_tokenizer *t, const int32_t *ids, size_t i, ag_tk_buf *pair, ag_tk_buf *prev,
                        size_t *skip, ag_error *err)
{
    *skip = 0;
    int rc = decode_into(t, ids + i - (i > 0), 1 + (i > 0), 0, pair, err);
    if (rc != AG_OK || i == 0)
        return rc;
    rc = decode_into(t, ids + i - 1, 1, 0, prev, err);
    if (rc == AG_OK && prev->n <= pair->n && memcmp(prev->b, pair->b, prev->n) == 0) {
        *skip = prev->n;
        return AG_OK;
    }
    return rc == AG_OK ? decode_into(t, ids + i, 1, 0, pair, err) : rc;
}

int ag_tokenizer_token_strings(const ag_tokenizer *t, const int32_t *ids, size_t n, char ***strings, ag_error *err)
{
    if (strings)
        *strings = NULL;
    if (!t || !strings || (!ids && n > 0))
        return ag_error_set(err, AG_EINVAL, "ag_tokenizer_token_strings: NULL argument");
    ag_tk_buf all = {0}, pair = {0}, prev = {0};
    size_t *at = calloc(n + 1, sizeof *at);
    int rc = at ? AG_OK : ag_error_set(err, AG_ENOMEM, "out of memory");
    for (size_t i = 0, skip; rc == AG_OK && i < n; i++) {
        at[i] = all.n;
        rc = token_string(t, ids, i, &pair, &prev, &skip, err);
        if (rc == AG_OK && (ag_tk_buf_put(&all, pair.b + skip, pair.n - skip) != AG_OK || ag_tk_buf_put(&all, "", 1) != AG_OK))
            rc = ag_error_set(err, AG_ENOMEM, "out of memory");
    }
    char **block = rc == AG_OK ? malloc((n + 1) * sizeof(char *) + all.n) : NULL;
    if (rc == AG_OK && !block)
        rc = ag_error_set(err, AG_ENOMEM, "out of memory");
    if (rc == AG_OK) {
        char *data = (char *)(block + n + 1);
        if (all.n)
            memcpy(data, all.b, all.n);
        for (size_t i = 0; i < n; i++)
            block[i] = data + at[i];
        block[n] = NULL;
        *strings = block;
    }
    free(at);
    free(all.b);
    free(pair.b);
    free(prev.b);
    return rc;
}

int ag_tokenizer_encode_offsets(const ag_tokenizer *t, const char *text, size_t len, unsigned flags, int32_t **ids,
                                size_t **offsets, size_t *n, ag_error *err)
{
    if (ids)
        *ids = NULL;
    if (offsets)
        *offsets = NULL;
    if (n)
        *n = 0;
    if (!t || !ids || !offsets || !n || (!text && len > 0))
        return ag_error_set(err, AG_EINVAL, "ag_tokenizer_encode_offsets: NULL argument");
    text = text ? text : "";
    size_t bad = utf8_bad_offset(text, len);
    if (bad < len)
        return ag_error_set(err, AG_EINVAL, "text: invalid UTF-8 at byte %zu", bad);
    ag_tk_splits segs = {0}, pieces = {0};
    ag_tk_ids out = {.track = 1};
    size_t *al = char_spans(text, len);
    int rc = al ? ag_tk_added_extract_aligned(t->added, t->norm, text, len, al, &segs, err)
                : ag_error_set(err, AG_ENOMEM, "out of memory while tokenizing");
    if (rc == AG_OK)
        rc = ag_tk_pretokenize(t->pre, &segs, &pieces, err);
    for (size_t i = 0; rc == AG_OK && i < pieces.n; i++)
        rc = piece_offsets(t, &pieces.v[i], &out, err);
    ag_tk_splits_free(&segs);
    ag_tk_splits_free(&pieces);
    free(al);
    if (rc == AG_OK)
        to_chars(text, len, out.off, out.n);
    if (rc == AG_OK)
        rc = ag_tk_post_process(t->post, &out, !(flags & AG_TOKENIZE_NO_SPECIAL), err);
    size_t *o = rc == AG_OK ? malloc((2 * out.n + 1) * sizeof *o) : NULL;
    if (rc == AG_OK && !o)
        rc = ag_error_set(err, AG_ENOMEM, "out of memory while tokenizing");
    if (rc != AG_OK) {
        ag_tk_ids_free(&out);
        return rc;
    }
    for (size_t k = 0; k < out.n; k++) {
        o[2 * k] = out.off[4 * k];
        o[2 * k + 1] = out.off[4 * k + 1];
    }
    *ids = out.v;
    *offsets = o;
    *n = out.n;
    free(out.off);
    return AG_OK;
}
