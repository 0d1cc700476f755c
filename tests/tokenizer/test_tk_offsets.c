/* test_tk_offsets.c — ag_tokenizer_encode_offsets against the offsets the
 * Rust library gives (npm `tokenizers` 0.23.2, encode(...).getOffsets():
 * tests/data/tokenize/decode/<family>.json.xz, "offsets", the first 80 texts of
 * every family; tools/tokenize_ref/decode_ref.mjs), plus closed cases.
 * Where this implementation does not track a normalizer's alignment it
 * must refuse (AG_EUNSUPPORTED naming the normalizer), never differ. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "attngeom/core.h"
#include "attngeom/tokenizer.h"
#include "../util/tokenizer_families.h"

/* Families whose normalizer keeps a per-character alignment on every text
 * of the reference: none may be refused there. */
static int always_tracked(const char *fam)
{
    static const char *const names[] = {"gpt2", "roberta", "llama3", "llama3-bos", "llama3.1", "starcoder",
                                        "llama2", "llama2-legacy", "gemma", "bert", "bpe-prefix", "openai-gpt", NULL};
    for (size_t i = 0; names[i]; i++)
        if (!strcmp(names[i], fam))
            return 1;
    return 0;
}

/* 1 when the offsets equal the reference's, 0 when they differ, -1 when refused. */
static int check_text(const ag_tokenizer *t, const char *fam, size_t k, const char *text, json_t *want)
{
    int32_t *ids = NULL;
    size_t *off = NULL, n = 0;
    ag_error err = {0};
    int rc = ag_tokenizer_encode_offsets(t, text, strlen(text), 0, &ids, &off, &n, &err);
    if (rc == AG_EUNSUPPORTED) {
        cr_expect_not_null(strstr(err.message, "offsets: normalizer"), "%s[%zu]: %s", fam, k, err.message);
        return -1;
    }
    cr_assert_eq(rc, AG_OK, "%s[%zu]: %s", fam, k, err.message);
    int same = n == json_array_size(want);
    for (size_t i = 0; same && i < n; i++) {
        json_t *p = json_array_get(want, i);
        size_t a = (size_t)json_integer_value(json_array_get(p, 0)), b = (size_t)json_integer_value(json_array_get(p, 1));
        if (off[2 * i] != a || off[2 * i + 1] != b) {
            cr_expect_fail("%s[%zu] token %zu (id %d): (%zu, %zu), Rust (%zu, %zu)", fam, k, i, ids[i], off[2 * i],
                           off[2 * i + 1], a, b);
            same = 0;
        }
    }
    cr_expect(n == json_array_size(want), "%s[%zu]: %zu offsets, Rust %zu", fam, k, n, json_array_size(want));
    free(ids);
    free(off);
    return same;
}

ParameterizedTestParameters(tk_offsets, reference)
{
    return cr_make_param_array(family, families, N_FAMILIES);
}

ParameterizedTest(family *f, tk_offsets, reference, .timeout = 120)
{
    char dir[512], tmp[64];
    family_dir(f->name, dir, sizeof dir, tmp, sizeof tmp);
    json_t *rows = family_json("decode/", f->name), *cases = family_json("", f->name);
    ag_tokenizer *t = family_tokenizer(dir);
    size_t same = 0, refused = 0, total = 0, i;
    json_t *row;
    json_array_foreach(rows, i, row) {
        json_t *want = json_object_get(row, "offsets");
        if (!want)
            continue;
        size_t k = (size_t)json_integer_value(json_object_get(row, "i"));
        int r = check_text(t, f->name, k, json_string_value(json_object_get(json_array_get(cases, k), "text")), want);
        same += r == 1;
        refused += r == -1;
        total++;
    }
    cr_expect_geq(total, 390, "%s: %zu texts with offsets", f->name, total);
    cr_expect_eq(same + refused, total, "%s: %zu of %zu texts give Rust's offsets, %zu refused", f->name, same, total,
                 refused);
    if (always_tracked(f->name))
        cr_expect_eq(refused, 0, "%s: %zu texts refused", f->name, refused);
    cr_log_info("%s: %zu of %zu texts give Rust's offsets, %zu refused", f->name, same, total, refused);
    ag_tokenizer_free(t);
    json_decref(rows);
    json_decref(cases);
    family_dir_done(tmp);
}

/* ---- closed cases ------------------------------------------------------------- */

static void expect_offsets(const char *dir, const char *text, const size_t *want, size_t n_want)
{
    ag_tokenizer *t = family_tokenizer(dir);
    int32_t *ids = NULL;
    size_t *off = NULL, n = 0;
    ag_error err = {0};
    cr_assert_eq(ag_tokenizer_encode_offsets(t, text, strlen(text), 0, &ids, &off, &n, &err), AG_OK, "%s",
                 err.message);
    cr_assert_eq(n, n_want, "%s: %zu tokens", text, n);
    for (size_t i = 0; i < 2 * n; i++)
        cr_expect_eq(off[i], want[i], "%s: token %zu %s %zu, expected %zu", text, i / 2, i % 2 ? "end" : "start",
                     off[i], want[i]);
    int32_t *plain = NULL;
    size_t m = 0;
    cr_assert_eq(ag_tokenizer_encode(t, text, strlen(text), &plain, &m, &err), AG_OK);
    cr_expect(m == n && !memcmp(plain, ids, n * sizeof *ids), "%s: other ids than ag_tokenizer_encode", text);
    free(plain);
    free(ids);
    free(off);
    ag_tokenizer_free(t);
}

/* Values as the Rust library gives them (npm tokenizers 0.23.2,
 * encode(text).getOffsets(), on the same tokenizer.json files). */
Test(tk_offsets, closed_cases)
{
    /* GPT-2 (no trim: tiny-gpt2's ByteLevel processor has trim_offsets
     * false): "Hello" [0, 5), "Ġw" [5, 7), "Ã¶r" = "ör" [7, 9) in code
     * points though ö is 2 bytes, "ld" [9, 11) */
    size_t g[] = {0, 5, 5, 7, 7, 9, 9, 11};
    expect_offsets("models/tiny-gpt2", "Hello w\xC3\xB6rld", g, 4);
    /* BERT, lower-cased and accents stripped: "hell" "##o" span "Héll" "o" of
     * the original; [CLS] and [SEP] are (0, 0) */
    size_t b[] = {0, 0, 0, 4, 4, 5, 5, 6, 7, 12, 12, 13, 0, 0};
    ag_tokenizer *t = family_tokenizer("tests/data/models/tiny-bert");
    int32_t *ids = NULL;
    size_t n = 0, *off = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_tokenizer_encode_offsets(t, "H\xC3\xA9llo, WORLD!", 15, 0, &ids, &off, &n, &err), AG_OK);
    cr_assert_eq(n, 7, "%zu tokens", n);
    for (size_t i = 0; i < 14; i++)
        cr_expect_eq(off[i], b[i], "bert offset %zu: %zu", i, off[i]);
    free(ids);
    free(off);
    /* without special tokens: no (0, 0) entries */
    cr_assert_eq(ag_tokenizer_encode_offsets(t, "hello", 5, AG_TOKENIZE_NO_SPECIAL, &ids, &off, &n, &err), AG_OK);
    cr_expect(n == 2 && off[0] == 0 && off[1] == 4 && off[2] == 4 && off[3] == 5, "%zu tokens", n);
    free(ids);
    free(off);
    cr_expect_eq(ag_tokenizer_encode_offsets(t, "\xC3", 1, 0, &ids, &off, &n, &err), AG_EINVAL);
    cr_expect(ids == NULL && off == NULL && n == 0);
    cr_expect_eq(ag_tokenizer_encode_offsets(t, "x", 1, 0, &ids, NULL, &n, &err), AG_EINVAL);
    ag_tokenizer_free(t);
}
