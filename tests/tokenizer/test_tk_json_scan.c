/* test_tk_json_scan.c — tokenizer.json's model.vocab and model.merges read
 * by the scanner (src/tokenizer/json_scan.c) give exactly what jansson's
 * parse gives: the same strings (every JSON escape, surrogate pairs,
 * "\u0000" in merges, raw UTF-8), the same ids and order, the same rest of the
 * document; a file the scanner does not take (a real number as id, a lone
 * surrogate, invalid UTF-8, a key given twice, invalid JSON) is jansson's
 * alone, with jansson's error; a token listed twice in the vocabulary keeps
 * jansson's meaning (its last id) once loaded. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "attngeom/core.h"
#include "attngeom/tokenizer.h"
#include "io/io_internal.h"
#include "tokenizer/json_scan.h"
#include "../util/test_io_util.h"

/* The tokens of the escaped-vocabulary document below, as bytes. */
static const struct {
    const char *s;
    size_t n;
    int id;
} ESCAPED[] = {
    {"a", 1, 0},          {"b", 1, 1},           {"ab", 2, 2},           {"q\"u", 3, 3},
    {"b\\s", 3, 4},       {"/", 1, 5},           {"\b\f\n\r\t", 5, 6},   {"\xc3\xa9", 2, 7},
    {"\xf0\x9f\x98\x80", 4, 8}, {"\xe4\xbd\xa0", 3, 10},
    {"a b", 3, 11},       {"", 0, 12},
};

static const char ESCAPED_DOC[] =
    "{\"version\": \"1.0\", \"added_tokens\": [], \"normalizer\": null,\n"
    " \"model\": {\"type\": \"BPE\", \"unk_token\": null,\n"
    "  \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2, \"q\\\"u\": 3, \"b\\\\s\": 4, \"\\/\": 5,\n"
    "   \"\\b\\f\\n\\r\\t\": 6, \"\\u00e9\": 7, \"\\ud83d\\ude00\": 8, \"\xe4\xbd\xa0\": 10,\n"
    "   \"a b\": 11, \"\": 12},\n"
    "  \"merges\": [\"a b\", \"#version: 0.2\", \"\\u00e9 a\", \"n\\u0000l a\"]},\n"
    " \"decoder\": {\"type\": \"ByteLevel\"}}\n";

static const char *write_doc(const char *name, const char *doc, size_t len)
{
    const char *p = tio_path(name);
    cr_assert_eq(tio_write_bytes(p, doc, len), 0);
    return p;
}

/* Each of docs[n] read by the scanner gives what jansson alone gives: the
 * same status and message, nothing scanned, the same document; with
 * `invalid`, a format error. */
static void like_jansson(const char *stem, const char *const *docs, size_t n, int invalid)
{
    for (size_t i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "%s%zu.json", stem, i);
        const char *p = tio_path(name);
        cr_assert_eq(tio_write_bytes(p, docs[i], strlen(docs[i])), 0);
        json_t *root = NULL, *ref = NULL;
        ag_tk_scan sc;
        ag_error err = {0}, rerr = {0};
        int rrc = agi_json_load(p, 1 << 20, JSON_ALLOW_NUL, &ref, &rerr);
        int rc = ag_tk_json_load_scanned(p, 1 << 20, JSON_ALLOW_NUL, &root, &sc, &err);
        cr_expect_eq(rc, rrc, "%s %zu", stem, i);
        cr_expect(!invalid || rc == AG_EFORMAT, "%s %zu: %d", stem, i, rc);
        cr_expect_str_eq(err.message, rerr.message, "%s %zu", stem, i);
        cr_expect(!sc.has_vocab && !sc.merge_width, "%s %zu was scanned", stem, i);
        cr_expect(rc != AG_OK ? root == NULL : json_equal(root, ref), "%s %zu", stem, i);
        json_decref(root);
        json_decref(ref);
        ag_tk_scan_free(&sc);
    }
}

static void scan(const char *path, json_t **root, ag_tk_scan *sc, int want_rc, ag_error *err)
{
    *err = (ag_error){0};
    int rc = ag_tk_json_load_scanned(path, 1 << 20, JSON_ALLOW_NUL, root, sc, err);
    cr_assert_eq(rc, want_rc, "%s: %s", path, err->message);
}

static int same(const ag_tk_str *s, const char *b, size_t n)
{
    return s->n == n && !memcmp(s->s, b, n);
}

Test(tk_json_scan, escapes_ids_and_order_as_jansson)
{
    const char *p = write_doc("escaped.json", ESCAPED_DOC, sizeof ESCAPED_DOC - 1);
    json_t *root, *ref;
    ag_tk_scan sc;
    ag_error err;
    scan(p, &root, &sc, AG_OK, &err);
    cr_assert(sc.has_vocab && sc.merge_width == 1, "the scanner took this file");
    /* jansson's parse of the same file: the same tokens in the same order */
    cr_assert_eq(agi_json_load(p, 1 << 20, JSON_ALLOW_NUL, &ref, &err), AG_OK, "%s", err.message);
    json_t *model = json_object_get(ref, "model"), *vocab = json_object_get(model, "vocab"), *v;
    const char *k;
    size_t kl, i = 0;
    cr_assert_eq(sc.n_vocab, json_object_size(vocab));
    json_object_keylen_foreach(vocab, k, kl, v) {
        cr_expect(same(&sc.vocab_key[i], k, kl), "token %zu", i);
        cr_expect_eq(sc.vocab_id[i], json_integer_value(v), "token %zu", i);
        i++;
    }
    /* and the bytes written out above (the table is independent of both) */
    for (size_t t = 0; t < sizeof ESCAPED / sizeof *ESCAPED; t++) {
        cr_expect(same(&sc.vocab_key[t], ESCAPED[t].s, ESCAPED[t].n), "token %zu", t);
        cr_expect_eq(sc.vocab_id[t], ESCAPED[t].id);
    }
    json_t *merges = json_object_get(model, "merges");
    cr_assert_eq(sc.n_merges, json_array_size(merges));
    for (size_t m = 0; m < sc.n_merges; m++)
        cr_expect(same(&sc.merge[m], json_string_value(json_array_get(merges, m)),
                       json_string_length(json_array_get(merges, m))),
                  "merge %zu", m);
    cr_expect(same(&sc.merge[2], "\xc3\xa9 a", 4));
    cr_expect(same(&sc.merge[3], "n\0l a", 5));
    /* the rest of the document: jansson's, with the two members emptied */
    json_object_set_new(model, "vocab", json_object());
    json_object_set_new(model, "merges", json_array());
    cr_expect(json_equal(root, ref));
    json_decref(ref);
    json_decref(root);
    ag_tk_scan_free(&sc);
}

Test(tk_json_scan, pairs_and_empty_members)
{
    static const char doc[] = "{\"model\": {\"merges\": [ [\"a\", \"b\"] , [\"\\u00e9\",\"a\"]], \"vocab\": {}}}";
    json_t *root;
    ag_tk_scan sc;
    ag_error err;
    scan(write_doc("pairs.json", doc, sizeof doc - 1), &root, &sc, AG_OK, &err);
    cr_assert(sc.has_vocab);
    cr_expect_eq(sc.n_vocab, 0);
    cr_assert_eq(sc.merge_width, 2);
    cr_assert_eq(sc.n_merges, 2);
    cr_expect(same(&sc.merge[0], "a", 1) && same(&sc.merge[1], "b", 1));
    cr_expect(same(&sc.merge[2], "\xc3\xa9", 2) && same(&sc.merge[3], "a", 1));
    json_decref(root);
    ag_tk_scan_free(&sc);
}

/* Files the scanner leaves to jansson: parsed all the same (*sc empty). */
Test(tk_json_scan, unscanned_files_are_jansson_s)
{
    static const char *const docs[] = {
        "{\"model\": {\"vocab\": {\"a\": 1.0}, \"merges\": []}}",            /* a real id */
        "{\"model\": {\"vocab\": {\"a\": 1e2}, \"merges\": []}}",            /* an exponent */
        "{\"model\": {\"vocab\": {\"a\": 12345678901234567890}}}",          /* beyond int64 */
        "{\"model\": {\"vocab\": {\"a\": 1}}, \"model\": {\"vocab\": {}}}", /* "model" twice */
        "{\"model\": {\"vocab\": {\"a\": 1}, \"vocab\": {\"b\": 2}}}",       /* "vocab" twice */
        "{\"model\": {\"merges\": [\"a b\", [\"a\", \"b\"]]}}",             /* two merge forms */
        "{\"model\": {\"vocab\": [[\"a\", 0.5]]}}",                         /* Unigram's list */
        "{\"model\": {\"vocab\": {\"\\uD800\\uD800\": 1}}}",               /* not a pair */
        /* "vocab" spelled with an escape: jansson's last "vocab" is this one */
        "{\"model\": {\"vocab\": {\"a\": 1}, \"vo\\u0063ab\": {\"b\": 2}, \"merges\": []}}",
    };
    like_jansson("unscanned", docs, sizeof docs / sizeof *docs, 0);
}

/* Invalid JSON inside the scanned members: jansson's error, with the
 * file's own line and column. */
Test(tk_json_scan, invalid_json_gives_jansson_s_error)
{
    static const char *const docs[] = {
        "{\"model\": {\n\"vocab\": {\"a\": 1,}}}",           /* trailing comma */
        "{\"model\": {\n\"vocab\": {\"a\": 01}}}",           /* leading zero */
        "{\"model\": {\n\"vocab\": {\"\\ude00\": 1}}}",      /* lone low surrogate */
        "{\"model\": {\n\"vocab\": {\"a\xff\": 1}}}",        /* invalid UTF-8 */
        "{\"model\": {\n\"vocab\": {\"a\tb\": 1}}}",         /* raw control character */
        "{\"model\": {\n\"vocab\": {\"n\\u0000l\": 1}}}",   /* NUL in a key: jansson refuses it */
        "{\"model\": {\n\"merges\": [\"a b\" \"c d\"]}}",    /* missing comma */
        "{\"model\": {\n\"merges\": [\"a b\"]}} trailing",   /* after the document */
        "{\"model\": {\n\"vocab\": {\"a\": 1}",              /* unterminated */
    };
    like_jansson("invalid", docs, sizeof docs / sizeof *docs, 1);
}

/* A tokenizer folder of one tokenizer.json. */
static int load_doc(const char *name, const char *doc, ag_tokenizer **t, ag_error *err)
{
    char dir[4200], file[4300];
    snprintf(dir, sizeof dir, "%s", tio_path(name));
    cr_assert_eq(mkdir(dir, 0700), 0);
    snprintf(file, sizeof file, "%s/tokenizer.json", dir);
    cr_assert_eq(tio_write_bytes(file, doc, strlen(doc)), 0);
    *err = (ag_error){0};
    return ag_tokenizer_load(dir, t, err);
}

#define WL_HEAD "{\"model\": {\"type\": \"WordLevel\", \"unk_token\": \"u\", \"vocab\": "
#define WL_TAIL "}, \"pre_tokenizer\": {\"type\": \"WhitespaceSplit\"}}"

/* A token listed twice: jansson keeps its first place and its last id. */
Test(tk_json_scan, token_listed_twice_keeps_its_last_id)
{
    ag_tokenizer *t;
    ag_error err;
    cr_assert_eq(load_doc("dup", WL_HEAD "{\"u\": 0, \"a\": 1, \"b\": 2, \"a\": 3}" WL_TAIL, &t, &err), AG_OK, "%s",
                 err.message);
    int32_t *ids;
    size_t n;
    cr_assert_eq(ag_tokenizer_encode(t, "a b", 3, &ids, &n, &err), AG_OK, "%s", err.message);
    cr_assert_eq(n, 2);
    cr_expect_eq(ids[0], 3);
    cr_expect_eq(ids[1], 2);
    cr_expect_null(ag_tokenizer_token(t, 1), "id 1 has no token once 'a' took 3");
    cr_expect_str_eq(ag_tokenizer_token(t, 3), "a");
    free(ids);
    ag_tokenizer_free(t);
}

/* Two tokens with one id: the same error as through jansson's object. */
Test(tk_json_scan, two_tokens_one_id_is_an_error)
{
    ag_tokenizer *t = NULL;
    ag_error err;
    cr_expect_eq(load_doc("twoid", WL_HEAD "{\"u\": 0, \"x\": 1, \"y\": 1}" WL_TAIL, &t, &err), AG_EFORMAT);
    cr_expect(strstr(err.message, "model.vocab: tokens 'x' and 'y' both have id 1") != NULL, "%s", err.message);
    cr_expect_eq(load_doc("negid", WL_HEAD "{\"u\": 0, \"x\": -1}" WL_TAIL, &t, &err), AG_EFORMAT);
    cr_expect(strstr(err.message, "model.vocab: id -1 of token 'x' is out of range") != NULL, "%s", err.message);
    tio_cleanup();
}
