/* test_tk_decoders.c — the decoders (src/tokenizer/decoders.c) and the
 * public decoding API (ag_tokenizer_decode, ag_tokenizer_token_strings).
 *
 * Closed cases per decoder are the Rust library's own unit tests
 * (tokenizers/src/decoders/, pre_tokenizers/byte_level.rs and
 * metaspace.rs) plus hand-derived cases for what they leave out (lossy
 * UTF-8, cleanup per token, Strip's stop). The families' reference
 * decodings (tests/data/tokenize/decode/<family>.json.xz) come from the Rust
 * library itself (npm `tokenizers` 0.23.2, tools/tokenize_ref/decode_ref.mjs). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "attngeom/core.h"
#include "attngeom/tokenizer.h"
#include "tokenizer/tk.h"
#include "../util/tokenizer_families.h"

/* Decode `tokens` (NULL-terminated) with the decoder of JSON `dec` ("null"
 * for none) and compare with `want`. */
static void expect_decode(const char *dec, const char *const *tokens, const char *want)
{
    json_error_t je;
    json_t *j = json_loads(dec, JSON_DECODE_ANY, &je);
    cr_assert_not_null(j, "%s: %s", dec, je.text);
    ag_tk_decoder *d = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_tk_decoder_load("test", j, &d, &err), AG_OK, "%s: %s", dec, err.message);
    ag_tk_splits l = {0};
    for (size_t i = 0; tokens[i]; i++)
        cr_assert_eq(ag_tk_splits_push(&l, tokens[i], strlen(tokens[i]), 0, -1), AG_OK);
    ag_tk_buf out = {0};
    cr_assert_eq(ag_tk_decode(d, &l, &out, &err), AG_OK, "%s", err.message);
    cr_expect_str_eq(out.b, want, "%s", dec);
    free(out.b);
    ag_tk_splits_free(&l);
    ag_tk_decoder_free(d);
    json_decref(j);
}

#define TOKS(...) ((const char *const[]){__VA_ARGS__, NULL})

Test(tk_decoders, bytelevel)
{
    const char *bl = "{\"type\": \"ByteLevel\"}";
    /* byte_level.rs decoding test */
    expect_decode(bl, TOKS("Hello", "\xC4\xA0my", "\xC4\xA0" "friend", ",", "\xC4\xA0how", "\xC4\xA0is", "\xC4\xA0your",
                           "\xC4\xA0" "day", "\xC4\xA0going", "?"),
                  "Hello my friend, how is your day going?");
    /* "âĤ" is E2 82, a cut 3-byte sequence: one U+FFFD (maximal subpart), then A */
    expect_decode(bl, TOKS("\xC3\xA2\xC4\xA4", "A"), "\xEF\xBF\xBD" "A");
    /* C0 is never a lead byte, 0x80 never starts: two U+FFFD */
    expect_decode(bl, TOKS("\xC3\x80\xC4\xA2"), "\xEF\xBF\xBD\xEF\xBF\xBD");
    /* a token with a character outside the byte alphabet (€) is kept as it is */
    expect_decode(bl, TOKS("\xC4\xA0" "a", "\xE2\x82\xAC" "b"), " a" "\xE2\x82\xAC" "b");
    /* every byte's character decodes back to the byte: the whole alphabet round trips */
    ag_tk_buf all = {0};
    for (int b = 1; b < 128; b++)
        cr_assert_eq(ag_tk_buf_putc(&all, ag_tk_bytelevel_cp((uint8_t)b)), AG_OK);
    char want[128];
    for (int b = 1; b < 128; b++)
        want[b - 1] = (char)b;
    want[127] = '\0';
    expect_decode(bl, TOKS(all.b), want);
    free(all.b);
    for (int b = 0; b < 256; b++)
        cr_expect_eq(ag_tk_bytelevel_byte(ag_tk_bytelevel_cp((uint8_t)b)), b);
    cr_expect_eq(ag_tk_bytelevel_byte(0x20), -1);
    cr_expect_eq(ag_tk_bytelevel_byte(256 + 68), -1);
}

Test(tk_decoders, metaspace)
{
    /* metaspace.rs: the first token loses every ▁, the others get spaces */
    expect_decode("{\"type\": \"Metaspace\", \"replacement\": \"\xE2\x96\x81\", \"prepend_scheme\": \"always\"}",
                  TOKS("\xE2\x96\x81" "Hey", "\xE2\x96\x81" "friend!"), "Hey friend!");
    expect_decode("{\"type\": \"Metaspace\", \"prepend_scheme\": \"first\"}",
                  TOKS("\xE2\x96\x81\xE2\x96\x81" "Hey", "\xE2\x96\x81\xE2\x96\x81"), "Hey  ");
    expect_decode("{\"type\": \"Metaspace\", \"prepend_scheme\": \"never\"}",
                  TOKS("\xE2\x96\x81" "Hey", "\xE2\x96\x81" "friend!"), " Hey friend!");
    expect_decode("{\"type\": \"Metaspace\", \"replacement\": \"_\", \"add_prefix_space\": false}",
                  TOKS("_a_b", "_c"), " a b c");
}

Test(tk_decoders, wordpiece)
{
    /* wordpiece.rs test */
    expect_decode("{\"type\": \"WordPiece\", \"prefix\": \"##\", \"cleanup\": false}",
                  TOKS("##uelo", "Ara", "##\xC3\xBA" "j", "##o", "No", "##guera"), "##uelo Ara\xC3\xBA" "jo Noguera");
    /* cleanup runs on each token: " ," is cleaned, " '" + " t" is not " ' " */
    expect_decode("{\"type\": \"WordPiece\"}", TOKS("Hello", ",", "don", "'", "t", "!", "do", "not"),
                  "Hello, don ' t! do not");
    expect_decode("{\"type\": \"WordPiece\"}", TOKS("it", "'s", "n't"), "it'sn't");
}

Test(tk_decoders, bytefallback)
{
    const char *bf = "{\"type\": \"ByteFallback\"}";
    /* byte_fallback.rs tests */
    expect_decode(bf, TOKS("Hey", "friend!"), "Heyfriend!");
    expect_decode(bf, TOKS("<0x61>"), "a");
    expect_decode(bf, TOKS("<0xE5>", "<0x8f>", "<0xab>", "a"), "\xE5\x8F\xAB" "a");
    expect_decode(bf, TOKS("<0xE5>", "<0x8f>", "a"), "\xEF\xBF\xBD\xEF\xBF\xBD" "a");
    /* Rust's u8::from_str_radix takes a sign; a 7-byte token is not a byte */
    expect_decode(bf, TOKS("<0x+9>", "<0x061>"), "\t<0x061>");
}

Test(tk_decoders, fuse_strip_replace_sequence)
{
    expect_decode("{\"type\": \"Fuse\"}", TOKS("Hey", " friend"), "Hey friend");
    /* strip.rs test: at most `start` leading copies */
    expect_decode("{\"type\": \"Strip\", \"content\": \"H\", \"start\": 1, \"stop\": 0}",
                  TOKS("Hey", " friend!", "HHH"), "ey friend!HH");
    expect_decode("{\"type\": \"Strip\", \"content\": \"y\", \"start\": 0, \"stop\": 2}", TOKS("Heyyy", "y", ""),
                  "Hey");
    expect_decode("{\"type\": \"Replace\", \"pattern\": {\"String\": \"\xE2\x96\x81\"}, \"content\": \" \"}",
                  TOKS("\xE2\x96\x81" "Hey", "\xE2\x96\x81" "friend"), " Hey friend");
    expect_decode("{\"type\": \"Replace\", \"pattern\": {\"Regex\": \"[0-9]+\"}, \"content\": \"#\"}",
                  TOKS("a12b3", "4"), "a#b##");
    /* LLaMA's chain */
    expect_decode("{\"type\": \"Sequence\", \"decoders\": [{\"type\": \"Replace\", \"pattern\": {\"String\": "
                  "\"\xE2\x96\x81\"}, \"content\": \" \"}, {\"type\": \"ByteFallback\"}, {\"type\": \"Fuse\"}, "
                  "{\"type\": \"Strip\", \"content\": \" \", \"start\": 1, \"stop\": 0}]}",
                  TOKS("\xE2\x96\x81" "Hey", "\xE2\x96\x81" "friend", "<0x21>"), "Hey friend!");
}

Test(tk_decoders, bpe_ctc_none)
{
    expect_decode("{\"type\": \"BPEDecoder\", \"suffix\": \"</w>\"}", TOKS("Hello</w>", "wor", "ld</w>"),
                  "Hello world");
    /* ctc.rs tests */
    expect_decode("{\"type\": \"CTC\", \"pad_token\": \"<pad>\", \"word_delimiter_token\": \"|\", \"cleanup\": true}",
                  TOKS("<pad>", "<pad>", "h", "e", "e", "l", "l", "<pad>", "l", "o", "o", "o", "<pad>"), "hello");
    expect_decode("{\"type\": \"CTC\"}",
                  TOKS("<pad>", "<pad>", "h", "e", "e", "l", "l", "<pad>", "l", "o", "o", "o", "<pad>", "<pad>", "|",
                       "<pad>", "w", "o", "o", "o", "r", "<pad>", "<pad>", "l", "l", "d", "<pad>", "<pad>", "<pad>",
                       "<pad>"),
                  "hello world");
    expect_decode("null", TOKS("a", "##b", "c"), "a ##b c");
}

Test(tk_decoders, load_errors)
{
    static const char *const bad[] = {"{\"type\": \"Nope\"}", "{\"type\": \"Strip\", \"content\": \"ab\", \"start\": 1, \"stop\": 0}",
                                      "{\"type\": \"Sequence\", \"decoders\": 3}", "{\"type\": \"WordPiece\", \"cleanup\": 1}",
                                      "{\"decoders\": []}"};
    static const int code[] = {AG_EUNSUPPORTED, AG_EFORMAT, AG_EFORMAT, AG_EFORMAT, AG_EFORMAT};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        json_t *j = json_loads(bad[i], 0, NULL);
        ag_tk_decoder *d = NULL;
        ag_error err = {0};
        cr_expect_eq(ag_tk_decoder_load("x.json", j, &d, &err), code[i], "%s", bad[i]);
        cr_expect_null(d);
        cr_expect_not_null(strstr(err.message, "x.json"), "%s: %s", bad[i], err.message);
        json_decref(j);
    }
}

/* ---- the public API on real tokenizers -------------------------------------- */

static void expect_strings(const ag_tokenizer *t, const int32_t *ids, size_t n, const char *const *want)
{
    char **s = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_tokenizer_token_strings(t, ids, n, &s, &err), AG_OK, "%s", err.message);
    for (size_t i = 0; i < n; i++)
        cr_expect_str_eq(s[i], want[i], "token %zu", i);
    cr_expect_null(s[n]);
    free(s);
}

Test(tk_decoders, api_gpt2_bert)
{
    ag_tokenizer *t = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_tokenizer_load("models/tiny-gpt2", &t, &err), AG_OK, "%s", err.message);
    const char *text = "Hello world, caf\xC3\xA9!";
    int32_t *ids = NULL;
    size_t n = 0;
    cr_assert_eq(ag_tokenizer_encode(t, text, strlen(text), &ids, &n, &err), AG_OK);
    char *back = NULL;
    cr_assert_eq(ag_tokenizer_decode(t, ids, n, 0, &back, &err), AG_OK);
    cr_expect_str_eq(back, text);
    free(back);
    int32_t hw[] = {15496, 995, 50256, 999999};
    expect_strings(t, hw, 4, TOKS("Hello", " world", "<|endoftext|>", ""));
    cr_assert_eq(ag_tokenizer_decode(t, hw, 4, AG_DECODE_SKIP_SPECIAL, &back, &err), AG_OK);
    cr_expect_str_eq(back, "Hello world");
    free(back);
    cr_expect_eq(ag_tokenizer_decode(t, NULL, 1, 0, &back, &err), AG_EINVAL);
    cr_assert_eq(ag_tokenizer_decode(t, NULL, 0, 0, &back, &err), AG_OK);
    cr_expect_str_eq(back, "");
    free(back);
    free(ids);
    ag_tokenizer_free(t);

    cr_assert_eq(ag_tokenizer_load("tests/data/models/tiny-bert", &t, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_tokenizer_encode(t, "Playing, don't!", 15, &ids, &n, &err), AG_OK);
    cr_assert_eq(ag_tokenizer_decode(t, ids, n, AG_DECODE_SKIP_SPECIAL, &back, &err), AG_OK);
    cr_expect_str_eq(back, "playing, don ' t!"); /* the WordPiece cleanup is per token */
    free(back);
    free(ids);
    ag_tokenizer_free(t);
}

/* ---- every family against the Rust library ------------------------------------ */

/* Display strings from the reference's decode([id]) ("one") and
 * decode([ids[i-1], ids[i]]) ("pair"), by ag_tokenizer_token_strings's rule. */
static const char *want_string(json_t *one, json_t *pair, size_t i, size_t *skip)
{
    *skip = 0;
    if (i == 0)
        return json_string_value(json_array_get(one, 0));
    const char *p = json_string_value(json_array_get(pair, i - 1)), *o = json_string_value(json_array_get(one, i - 1));
    size_t on = strlen(o);
    if (strncmp(p, o, on) == 0) {
        *skip = on;
        return p;
    }
    return json_string_value(json_array_get(one, i));
}

static int check_row(const ag_tokenizer *t, const char *fam, json_t *row, json_t *idsj)
{
    size_t n = json_array_size(idsj), k = (size_t)json_integer_value(json_object_get(row, "i"));
    int32_t *ids = malloc((n + 1) * sizeof *ids);
    for (size_t i = 0; i < n; i++)
        ids[i] = (int32_t)json_integer_value(json_array_get(idsj, i));
    char *text = NULL, *skip = NULL, **s = NULL;
    ag_error err = {0};
    int ok = ag_tokenizer_decode(t, ids, n, 0, &text, &err) == AG_OK &&
             ag_tokenizer_decode(t, ids, n, AG_DECODE_SKIP_SPECIAL, &skip, &err) == AG_OK;
    ok = ok && !strcmp(text, json_string_value(json_object_get(row, "text")));
    cr_expect(!text || !strcmp(text, json_string_value(json_object_get(row, "text"))), "%s[%zu]: decode gives '%s'",
              fam, k, text ? text : err.message);
    ok = ok && !strcmp(skip, json_string_value(json_object_get(row, "skip")));
    cr_expect(!skip || !strcmp(skip, json_string_value(json_object_get(row, "skip"))),
              "%s[%zu]: decode(skip special) gives '%s'", fam, k, skip ? skip : err.message);
    json_t *one = json_object_get(row, "one"), *pair = json_object_get(row, "pair");
    if (one && ag_tokenizer_token_strings(t, ids, n, &s, &err) == AG_OK) {
        for (size_t i = 0, sk; i < n; i++) {
            const char *w = want_string(one, pair, i, &sk);
            int same = !strcmp(s[i], w + sk);
            ok &= same;
            cr_expect(same, "%s[%zu] token %zu: '%s', expected '%s'", fam, k, i, s[i], w + sk);
        }
    } else if (one) {
        ok = 0;
        cr_expect_fail("%s[%zu]: %s", fam, k, err.message);
    }
    free(s);
    free(text);
    free(skip);
    free(ids);
    return ok;
}

ParameterizedTestParameters(tk_decoders, reference)
{
    return cr_make_param_array(family, families, N_FAMILIES);
}

ParameterizedTest(family *f, tk_decoders, reference, .timeout = 120)
{
    char dir[512], tmp[64];
    family_dir(f->name, dir, sizeof dir, tmp, sizeof tmp);
    json_t *rows = family_json("decode/", f->name), *cases = family_json("", f->name);
    cr_expect_geq(json_array_size(rows), 390, "%s: the reference covers few texts", f->name);
    ag_tokenizer *t = family_tokenizer(dir);
    size_t good = 0, i;
    json_t *row;
    json_array_foreach(rows, i, row) {
        json_t *c = json_array_get(cases, (size_t)json_integer_value(json_object_get(row, "i")));
        good += (size_t)check_row(t, f->name, row, json_object_get(c, "ids"));
    }
    cr_expect_eq(good, json_array_size(rows), "%s: %zu of %zu texts decode as the Rust library", f->name, good,
                 json_array_size(rows));
    ag_tokenizer_free(t);
    json_decref(rows);
    json_decref(cases);
    family_dir_done(tmp);
}
