/* test_tk_pretok.c — the pre-tokenizers (src/tokenizer/pre_tokenizers.c).
 *
 * Expected pieces: unless a comment gives a closed form, they were printed by
 * the pre-tokenizer functions of the Python reference tests/ref/hf_tokenizer.py
 * (Hugging Face's Rust semantics) on the same input, e.g.
 *   python3 -c 'import sys; sys.path.insert(0, "tests/ref"); import hf_tokenizer as h;
 *     print([x.get() for x in h.build_pre_tokenizer(CFG)([h.NStr.from_str(TEXT)])])'
 * `families_match_reference` compares every family's pre-tokenizer over the
 * 407 texts of tools/tokenize_ref/texts_families.json with
 * tests/data/tokenize/pretok/pieces.json.xz (tools/tokenize_ref/make_pretok.py). */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "attngeom/core.h"
#include "tokenizer/tk.h"
#include "../util/xz_file.h"

#ifndef AG_TEST_DATA_DIR
#define AG_TEST_DATA_DIR "tests/data"
#endif
#define PIECES_FILE AG_TEST_DATA_DIR "/tokenize/pretok/pieces.json.xz"
#define TEXTS_FILE "tools/tokenize_ref/texts_families.json"

static ag_tk_pretok *load_cfg(const char *cfg)
{
    json_error_t je;
    json_t *j = json_loads(cfg, 0, &je);
    cr_assert_not_null(j, "bad test JSON %s: %s", cfg, je.text);
    ag_tk_pretok *p = NULL;
    ag_error err = {0};
    int rc = ag_tk_pretok_load("t.json", j, &p, &err);
    json_decref(j);
    cr_assert_eq(rc, AG_OK, "loading %s: %s", cfg, err.message);
    return p;
}

/* Pre-tokenize one text split (at_start as given) into out (cleared first). */
static void run_text(const ag_tk_pretok *p, const char *text, size_t n, int at_start,
                     ag_tk_splits *out)
{
    ag_tk_splits in = {0};
    ag_error err = {0};
    cr_assert_eq(ag_tk_splits_push(&in, text, n, at_start, -1), AG_OK);
    ag_tk_splits_clear(out);
    int rc = ag_tk_pretokenize(p, &in, out, &err);
    ag_tk_splits_free(&in);
    cr_assert_eq(rc, AG_OK, "pre-tokenizing '%s': %s", text, err.message);
}

static void check_pieces(const char *cfg, const char *text, int at_start, const char *const *want,
                         size_t nwant)
{
    ag_tk_pretok *p = load_cfg(cfg);
    ag_tk_splits out = {0};
    run_text(p, text, strlen(text), at_start, &out);
    cr_expect_eq(out.n, nwant, "%s on '%s': %zu pieces, want %zu", cfg, text, out.n, nwant);
    for (size_t k = 0; k < out.n && k < nwant; k++)
        cr_expect_str_eq(out.v[k].s, want[k], "%s on '%s': piece %zu", cfg, text, k);
    ag_tk_splits_free(&out);
    ag_tk_pretok_free(p);
}

#define PIECES(...)                                                                                \
    (const char *const[]){__VA_ARGS__},                                                            \
        sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *)
#define NO_PIECES NULL, 0

static json_t *load_file(const char *path)
{
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    cr_assert_not_null(j, "%s: %s", path, je.text);
    return j;
}

/* ---- components ----------------------------------------------------------------- */

Test(tk_pretok, bytelevel)
{
    check_pieces("{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"use_regex\":true}",
                 "Hello my friend, how is your day going?", 1,
                 PIECES("Hello", "\xc4\xa0my",
                        "\xc4\xa0"
                        "friend",
                        ",", "\xc4\xa0how", "\xc4\xa0is", "\xc4\xa0your",
                        "\xc4\xa0"
                        "day",
                        "\xc4\xa0going", "?"));
    check_pieces("{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"use_regex\":true}",
                 "Hello there       dear\nHello", 1,
                 PIECES("Hello", "\xc4\xa0there",
                        "\xc4\xa0\xc4\xa0\xc4\xa0\xc4\xa0\xc4\xa0\xc4\xa0",
                        "\xc4\xa0"
                        "dear",
                        "\xc4\x8a", "Hello"));
    check_pieces(
        "{\"type\":\"ByteLevel\",\"add_prefix_space\":true,\"use_regex\":true}",
        "Hello  world\n\n x", 1,
        PIECES("\xc4\xa0Hello", "\xc4\xa0", "\xc4\xa0world", "\xc4\x8a\xc4\x8a", "\xc4\xa0x"));
    check_pieces("{\"type\":\"ByteLevel\",\"add_prefix_space\":true,\"use_regex\":true}",
                 " already", 1,
                 PIECES("\xc4\xa0"
                        "already"));
    check_pieces("{\"type\":\"ByteLevel\",\"add_prefix_space\":true,\"use_regex\":false}",
                 "H\xc3\xa9llo w\xc3\xb6rld", 1,
                 PIECES("\xc4\xa0H\xc3\x83\xc2\xa9llo\xc4\xa0w\xc3\x83\xc2\xb6rld"));
    check_pieces("{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"use_regex\":false}",
                 "\x01 \x7f\xc2\xa0\xc2\xad\xc3\xbf\xf0\x9f\x98\x80", 1,
                 PIECES("\xc4\x81\xc4\xa0\xc4\xa1\xc3\x82\xc5\x82\xc3\x82\xc5\x83\xc3\x83\xc2\xbf"
                        "\xc3\xb0\xc5\x81\xc4\xba\xc4\xa2"));
    check_pieces("{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"use_regex\":true}",
                 "I'm 'S a\xc2\x85"
                 "b \xc2\xa0x \xef\xbb\xbfy \xe1\xa0\x8ez  \t",
                 1,
                 PIECES("I", "'m", "\xc4\xa0'", "S",
                        "\xc4\xa0"
                        "a",
                        "\xc3\x82\xc4\xa7", "b", "\xc4\xa0", "\xc3\x82\xc5\x82", "x",
                        "\xc4\xa0\xc3\xaf\xc2\xbb\xc2\xbf", "y", "\xc4\xa0\xc3\xa1\xc5\x82\xc4\xb0",
                        "z", "\xc4\xa0\xc4\xa0\xc4\x89"));
}

/* Every behaviour, with and without invert, on matches at both ends and
 * next to each other (a String and a Regex pattern), and the Rust test of
 * split.rs (\w+|[^\w\s]+ inverted). */
static void check_split(const char *pattern, const char *behavior, int invert, const char *text,
                        const char *const *want, size_t nwant)
{
    char cfg[256];
    snprintf(cfg, sizeof cfg,
             "{\"type\":\"Split\",\"pattern\":%s,\"behavior\":\"%s\",\"invert\":%s}", pattern,
             behavior, invert ? "true" : "false");
    check_pieces(cfg, text, 1, want, nwant);
}

/* Metaspace with the usual replacement U+2581. */
static void check_metaspace(const char *scheme, int split, const char *text, int at_start,
                            const char *const *want, size_t nwant)
{
    char cfg[160];
    snprintf(cfg, sizeof cfg,
             "{\"type\":\"Metaspace\",\"replacement\":\"\xe2\x96\x81\",\"prepend_scheme\":\"%s\","
             "\"split\":%s}",
             scheme, split ? "true" : "false");
    check_pieces(cfg, text, at_start, want, nwant);
}

Test(tk_pretok, split_behaviors)
{
    static const char *const behavior[] = {"Removed", "Isolated", "MergedWithPrevious",
                                           "MergedWithNext", "Contiguous"};
    struct want {
        const char *const *v;
        size_t n;
    };
    const struct {
        const char *pattern, *text;
        struct want want[2][5]; /* [invert][behavior] */
    } cases[] = {
        {"{\"String\":\"-\"}",
         "--a-b--c-",
         {{{PIECES("a", "b", "c")},
           {PIECES("-", "-", "a", "-", "b", "-", "-", "c", "-")},
           {PIECES("-", "-", "a-", "b-", "-", "c-")},
           {PIECES("-", "-a", "-b", "-", "-c", "-")},
           {PIECES("--", "a", "-", "b", "--", "c", "-")}},
          {{PIECES("-", "-", "-", "-", "-", "-")},
           {PIECES("-", "-", "a", "-", "b", "-", "-", "c", "-")},
           {PIECES("-", "-a", "-b", "-", "-c", "-")},
           {PIECES("-", "-", "a-", "b-", "-", "c-")},
           {PIECES("--", "a", "-", "b", "--", "c", "-")}}}},
        {"{\"Regex\":\"\\\\s+\"}",
         "  a  bb c  ",
         {{{PIECES("a", "bb", "c")},
           {PIECES("  ", "a", "  ", "bb", " ", "c", "  ")},
           {PIECES("  ", "a  ", "bb ", "c  ")},
           {PIECES("  a", "  bb", " c", "  ")},
           {PIECES("  ", "a", "  ", "bb", " ", "c", "  ")}},
          {{PIECES("  ", "  ", " ", "  ")},
           {PIECES("  ", "a", "  ", "bb", " ", "c", "  ")},
           {PIECES("  a", "  bb", " c", "  ")},
           {PIECES("  ", "a  ", "bb ", "c  ")},
           {PIECES("  ", "a", "  ", "bb", " ", "c", "  ")}}}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int inv = 0; inv < 2; inv++)
            for (int b = 0; b < 5; b++)
                check_split(cases[c].pattern, behavior[b], inv, cases[c].text,
                            cases[c].want[inv][b].v, cases[c].want[inv][b].n);
    check_split("{\"Regex\":\"\\\\w+|[^\\\\w\\\\s]+\"}", "Removed", 1, "How are you doing?",
                PIECES("How", "are", "you", "doing", "?"));
    check_split("{\"Regex\":\"\\\\w+|[^\\\\w\\\\s]+\"}", "Isolated", 1, "How are you doing?",
                PIECES("How", " ", "are", " ", "you", " ", "doing", "?"));
    check_split("{\"Regex\":\"\\\\w+|[^\\\\w\\\\s]+\"}", "MergedWithPrevious", 1,
                "How are you doing?", PIECES("How ", "are ", "you ", "doing", "?"));
    check_split("{\"Regex\":\"\\\\w+|[^\\\\w\\\\s]+\"}", "MergedWithNext", 1, "How are you doing?",
                PIECES("How", " are", " you", " doing", "?"));
    check_split("{\"Regex\":\"\\\\w+|[^\\\\w\\\\s]+\"}", "Contiguous", 1, "How are you doing?",
                PIECES("How", " ", "are", " ", "you", " ", "doing?"));
    check_split("{\"String\":\".\"}", "Isolated", 0, "a.b*c..", PIECES("a", ".", "b*c", ".", "."));
    check_split("{\"String\":\"ab\"}", "Isolated", 0, "aabbab", PIECES("a", "ab", "b", "ab"));
    check_split("{\"Regex\":\"\\\\s+\"}", "Isolated", 0,
                "a\xe1\xa0\x8e"
                "b\xc2\x85"
                "c\xe2\x80\xa8"
                "d",
                PIECES("a\xe1\xa0\x8e"
                       "b",
                       "\xc2\x85", "c", "\xe2\x80\xa8", "d"));
}

Test(tk_pretok, metaspace)
{
    check_metaspace("always", 1, "Hey   friend!", 1,
                    PIECES("\xe2\x96\x81Hey", "\xe2\x96\x81", "\xe2\x96\x81",
                           "\xe2\x96\x81"
                           "friend!"));
    check_metaspace("always", 1,
                    " Hey \xe2\x96\x81"
                    "friend",
                    1,
                    PIECES("\xe2\x96\x81Hey", "\xe2\x96\x81",
                           "\xe2\x96\x81"
                           "friend"));
    check_metaspace("always", 1, "Hey you", 0, PIECES("\xe2\x96\x81Hey", "\xe2\x96\x81you"));
    check_metaspace("first", 1, "Hey you", 1, PIECES("\xe2\x96\x81Hey", "\xe2\x96\x81you"));
    check_metaspace("first", 1, "Hey you", 0, PIECES("Hey", "\xe2\x96\x81you"));
    check_metaspace("first", 0, "Hey you ", 1,
                    PIECES("\xe2\x96\x81Hey\xe2\x96\x81you\xe2\x96\x81"));
    check_metaspace("first", 0, "Hey you ", 0, PIECES("Hey\xe2\x96\x81you\xe2\x96\x81"));
    check_metaspace("first", 0, " Hey", 1, PIECES("\xe2\x96\x81Hey"));
    check_metaspace("never", 1, "Hey  you", 1, PIECES("Hey", "\xe2\x96\x81", "\xe2\x96\x81you"));
    check_pieces("{\"type\":\"Metaspace\",\"replacement\":\"_\",\"add_prefix_space\":true}",
                 "a b_c", 1, PIECES("_a", "_b", "_c"));
    check_pieces("{\"type\":\"Metaspace\",\"replacement\":\"_\",\"add_prefix_space\":false}",
                 "a b_c", 1, PIECES("a", "_b", "_c"));
    check_pieces("{\"type\":\"Metaspace\",\"replacement\":\"\xe2\x96\x81\"}", "a b", 1,
                 PIECES("\xe2\x96\x81"
                        "a",
                        "\xe2\x96\x81"
                        "b"));
}

Test(tk_pretok, whitespace)
{
    check_pieces("{\"type\":\"Whitespace\"}", "Hey man!", 1, PIECES("Hey", "man", "!"));
    check_pieces("{\"type\":\"Whitespace\"}",
                 "Gr\xc3\xbc\xc3\x9f"
                 "e, a\xe2\x80\x8d"
                 "b\xef\xb8\x8f! x_y--z \xe2\x91\xa0\xc2\xbd \xe2\x92\xb6\xd9\xa3",
                 1,
                 PIECES("Gr\xc3\xbc\xc3\x9f"
                        "e",
                        ",",
                        "a\xe2\x80\x8d"
                        "b\xef\xb8\x8f",
                        "!", "x_y", "--", "z", "\xe2\x91\xa0\xc2\xbd", "\xe2\x92\xb6\xd9\xa3"));
    check_pieces("{\"type\":\"Whitespace\"}", "\n", 1, NO_PIECES);
}

Test(tk_pretok, whitespace_split)
{
    check_pieces("{\"type\":\"WhitespaceSplit\"}", "Hey, man, Good?", 1,
                 PIECES("Hey,", "man,", "Good?"));
    check_pieces("{\"type\":\"WhitespaceSplit\"}",
                 "\xe3\x80\x80"
                 "a\xc2\xa0"
                 "b\xc2\x85"
                 "c\xe1\xa0\x8e"
                 "d ",
                 1,
                 PIECES("a", "b",
                        "c\xe1\xa0\x8e"
                        "d"));
}

Test(tk_pretok, bert)
{
    check_pieces("{\"type\":\"BertPreTokenizer\"}", "Hey friend!     How are you?!?", 1,
                 PIECES("Hey", "friend", "!", "How", "are", "you", "?", "!", "?"));
    check_pieces("{\"type\":\"BertPreTokenizer\"}",
                 "a$b\xc2\xbf"
                 "c\xe3\x80\x8c"
                 "d\xe3\x80\x8d"
                 "e\xe2\x82\xac"
                 "f^g",
                 1,
                 PIECES("a", "$", "b", "\xc2\xbf", "c", "\xe3\x80\x8c", "d", "\xe3\x80\x8d",
                        "e\xe2\x82\xac"
                        "f",
                        "^", "g"));
}

Test(tk_pretok, punctuation)
{
    check_pieces("{\"type\":\"Punctuation\",\"behavior\":\"Isolated\"}",
                 "Hey friend!     How are you?!?", 1,
                 PIECES("Hey friend", "!", "     How are you", "?", "!", "?"));
    check_pieces("{\"type\":\"Punctuation\"}", "Hey friend!     How are you?!?", 1,
                 PIECES("Hey friend", "!", "     How are you", "?", "!", "?"));
    check_pieces("{\"type\":\"Punctuation\",\"behavior\":\"Removed\"}",
                 "Hey friend!     How are you?!?", 1, PIECES("Hey friend", "     How are you"));
    check_pieces("{\"type\":\"Punctuation\",\"behavior\":\"MergedWithPrevious\"}",
                 "Hey friend!     How are you?!?", 1,
                 PIECES("Hey friend!", "     How are you?", "!", "?"));
    check_pieces("{\"type\":\"Punctuation\",\"behavior\":\"MergedWithNext\"}",
                 "Hey friend!     How are you?!?", 1,
                 PIECES("Hey friend", "!     How are you", "?", "!", "?"));
    check_pieces("{\"type\":\"Punctuation\",\"behavior\":\"Contiguous\"}",
                 "Hey friend!     How are you?!?", 1,
                 PIECES("Hey friend", "!", "     How are you", "?!?"));
}

Test(tk_pretok, digits)
{
    check_pieces("{\"type\":\"Digits\",\"individual_digits\":false}",
                 "Hey 123 friend! \xe2\x91\xa0\xc2\xbd\xd9\xa1\xd9\xa2\xd9\xa3x\xc2\xb2", 1,
                 PIECES("Hey ", "123", " friend! ", "\xe2\x91\xa0\xc2\xbd\xd9\xa1\xd9\xa2\xd9\xa3",
                        "x", "\xc2\xb2"));
    check_pieces("{\"type\":\"Digits\",\"individual_digits\":true}",
                 "Hey 123 friend! \xe2\x91\xa0\xc2\xbd\xd9\xa1\xd9\xa2\xd9\xa3x\xc2\xb2", 1,
                 PIECES("Hey ", "1", "2", "3", " friend! ", "\xe2\x91\xa0", "\xc2\xbd", "\xd9\xa1",
                        "\xd9\xa2", "\xd9\xa3", "x", "\xc2\xb2"));
    check_pieces("{\"type\":\"Digits\"}", "7a", 1, PIECES("7", "a"));
}

Test(tk_pretok, sequence)
{
    check_pieces("{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"WhitespaceSplit\"},{"
                 "\"type\":\"Metaspace\",\"replacement\":\"\xe2\x96\x81\",\"prepend_scheme\":"
                 "\"first\",\"split\":false}]}",
                 " Hey you", 1, PIECES("Hey", "you"));
    check_pieces("{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"WhitespaceSplit\"},{"
                 "\"type\":\"Metaspace\",\"replacement\":\"\xe2\x96\x81\",\"prepend_scheme\":"
                 "\"first\",\"split\":false}]}",
                 "Hey you", 1, PIECES("\xe2\x96\x81Hey", "you"));
    check_pieces(
        "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Digits\",\"individual_digits\":true}"
        ",{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"use_regex\":true}]}",
        "x = 42;  // \xc3\xa9", 1,
        PIECES("x", "\xc4\xa0=", "\xc4\xa0", "4", "2", ";", "\xc4\xa0", "\xc4\xa0//",
               "\xc4\xa0\xc3\x83\xc2\xa9"));
    check_pieces("{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Sequence\","
                 "\"pretokenizers\":[{\"type\":\"WhitespaceSplit\"}]},{\"type\":\"Digits\","
                 "\"individual_digits\":true},{\"type\":\"Metaspace\",\"replacement\":"
                 "\"\xe2\x96\x81\",\"prepend_scheme\":\"always\",\"split\":true}]}",
                 "ab12 c3", 1,
                 PIECES("\xe2\x96\x81"
                        "ab",
                        "\xe2\x96\x81"
                        "1",
                        "\xe2\x96\x81"
                        "2",
                        "\xe2\x96\x81"
                        "c",
                        "\xe2\x96\x81"
                        "3"));
}

/* The Split regexes of the family folders (tokenizer.layout.json keeps the
 * pre_tokenizer object verbatim) on contractions in any case (' + U+017F
 * folds to 's), digit runs, \r\n runs, trailing spaces, U+0085 and NBSP,
 * emoji, code. */
static void check_family(const char *family, const char *text, const char *const *want,
                         size_t nwant)
{
    char path[256];
    snprintf(path, sizeof path, AG_TEST_DATA_DIR "/tokenizers/%s/tokenizer.layout.json", family);
    json_t *doc = load_file(path);
    char *cfg = json_dumps(json_object_get(doc, "pre_tokenizer"), 0);
    check_pieces(cfg, text, 1, want, nwant);
    free(cfg);
    json_decref(doc);
}

Test(tk_pretok, family_regexes)
{
    /* LLaMA-3's and Qwen2's regexes differ only in digits (\p{N}{1,3}, \p{N}) */
    const struct {
        const char *text;
        const char *const *want;
        size_t n;
    } both[] = {
        {"I'M here, 'S 're HE'S it'\xc5\xbf IT'LL we'D",
         PIECES("I", "'M", "\xc4\xa0here", ",", "\xc4\xa0'", "S", "\xc4\xa0'", "re", "\xc4\xa0HE",
                "'S", "\xc4\xa0it", "'\xc3\x85\xc2\xbf", "\xc4\xa0IT", "'LL", "\xc4\xa0we", "'D")},
        {"a\r\n\r\nb  \n\n  x  ",
         PIECES("a", "\xc4\x8d\xc4\x8a\xc4\x8d\xc4\x8a", "b", "\xc4\xa0\xc4\xa0\xc4\x8a\xc4\x8a",
                "\xc4\xa0", "\xc4\xa0x", "\xc4\xa0\xc4\xa0")},
        {"hello\t\tworld \xc2\xa0 end\xc2\x85",
         PIECES("hello", "\xc4\x89", "\xc4\x89world", "\xc4\xa0\xc3\x82\xc5\x82",
                "\xc4\xa0"
                "end",
                "\xc3\x82\xc4\xa7")},
        {"foo//bar\r\n!!!\n\nok",
         PIECES("foo", "//", "bar", "\xc4\x8d\xc4\x8a", "!!!\xc4\x8a\xc4\x8a", "ok")},
        {"\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x92\xbb caf\xc3\xa9 na\xc3\xafve "
         "\xe4\xb8\xad\xe6\x96\x87",
         PIECES("\xc3\xb0\xc5\x81\xc4\xb3\xc2\xa9\xc3\xa2\xc4\xa2\xc4\xaf\xc3\xb0\xc5\x81\xc4\xb4"
                "\xc2\xbb",
                "\xc4\xa0"
                "caf\xc3\x83\xc2\xa9",
                "\xc4\xa0na\xc3\x83\xc2\xafve",
                "\xc4\xa0\xc3\xa4\xc2\xb8\xc5\x83\xc3\xa6\xc4\xb8\xc4\xa9")},
        {"    def f(x):\n        return x**2\n",
         PIECES("\xc4\xa0\xc4\xa0\xc4\xa0",
                "\xc4\xa0"
                "def",
                "\xc4\xa0"
                "f",
                "(x", "):\xc4\x8a", "\xc4\xa0\xc4\xa0\xc4\xa0\xc4\xa0\xc4\xa0\xc4\xa0\xc4\xa0",
                "\xc4\xa0return", "\xc4\xa0x", "**", "2", "\xc4\x8a")},
    };
    for (size_t k = 0; k < sizeof both / sizeof both[0]; k++) {
        check_family("llama3", both[k].text, both[k].want, both[k].n);
        check_family("qwen2", both[k].text, both[k].want, both[k].n);
    }
    check_family("llama3", "12345 1234567 \xd9\xa3\xd9\xa3\xd9\xa3\xd9\xa3 x1y22",
                 PIECES("123", "45", "\xc4\xa0", "123", "456", "7", "\xc4\xa0",
                        "\xc3\x99\xc2\xa3\xc3\x99\xc2\xa3\xc3\x99\xc2\xa3", "\xc3\x99\xc2\xa3",
                        "\xc4\xa0x", "1", "y", "22"));
    check_family("qwen2", "12345 1234567 \xd9\xa3\xd9\xa3\xd9\xa3\xd9\xa3 x1y22",
                 PIECES("1", "2", "3", "4", "5", "\xc4\xa0", "1", "2", "3", "4", "5", "6", "7",
                        "\xc4\xa0", "\xc3\x99\xc2\xa3", "\xc3\x99\xc2\xa3", "\xc3\x99\xc2\xa3",
                        "\xc3\x99\xc2\xa3", "\xc4\xa0x", "1", "y", "2", "2"));
    check_family("starcoder", "I'M here, 'S 're HE'S it'\xc5\xbf IT'LL we'D",
                 PIECES("I", "'", "M", "\xc4\xa0here", ",", "\xc4\xa0'", "S", "\xc4\xa0'", "re",
                        "\xc4\xa0HE", "'", "S", "\xc4\xa0it", "'", "\xc3\x85\xc2\xbf", "\xc4\xa0IT",
                        "'", "LL", "\xc4\xa0we", "'", "D"));
    check_family("starcoder", "12345 1234567 \xd9\xa3\xd9\xa3\xd9\xa3\xd9\xa3 x1y22",
                 PIECES("1", "2", "3", "4", "5", "\xc4\xa0", "1", "2", "3", "4", "5", "6", "7",
                        "\xc4\xa0", "\xc3\x99\xc2\xa3", "\xc3\x99\xc2\xa3", "\xc3\x99\xc2\xa3",
                        "\xc3\x99\xc2\xa3", "\xc4\xa0x", "1", "y", "2", "2"));
    check_family("starcoder", "a\r\n\r\nb  \n\n  x  ",
                 PIECES("a", "\xc4\x8d\xc4\x8a\xc4\x8d", "\xc4\x8a", "b",
                        "\xc4\xa0\xc4\xa0\xc4\x8a\xc4\x8a\xc4\xa0", "\xc4\xa0x",
                        "\xc4\xa0\xc4\xa0"));
    check_family("starcoder", "hello\t\tworld \xc2\xa0 end\xc2\x85",
                 PIECES("hello", "\xc4\x89", "\xc4\x89", "world", "\xc4\xa0\xc3\x82\xc5\x82",
                        "\xc4\xa0"
                        "end",
                        "\xc3\x82\xc4\xa7"));
    check_family(
        "starcoder", "foo//bar\r\n!!!\n\nok",
        PIECES("foo", "//", "bar", "\xc4\x8d", "\xc4\x8a", "!!!", "\xc4\x8a", "\xc4\x8a", "ok"));
    check_family("starcoder",
                 "\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x92\xbb caf\xc3\xa9 na\xc3\xafve "
                 "\xe4\xb8\xad\xe6\x96\x87",
                 PIECES("\xc3\xb0\xc5\x81\xc4\xb3\xc2\xa9\xc3\xa2\xc4\xa2\xc4\xaf\xc3\xb0\xc5\x81"
                        "\xc4\xb4\xc2\xbb",
                        "\xc4\xa0"
                        "caf\xc3\x83\xc2\xa9",
                        "\xc4\xa0na\xc3\x83\xc2\xafve",
                        "\xc4\xa0\xc3\xa4\xc2\xb8\xc5\x83\xc3\xa6\xc4\xb8\xc4\xa9"));
    check_family("starcoder", "    def f(x):\n        return x**2\n",
                 PIECES("\xc4\xa0\xc4\xa0\xc4\xa0",
                        "\xc4\xa0"
                        "def",
                        "\xc4\xa0"
                        "f",
                        "(", "x",
                        "):", "\xc4\x8a\xc4\xa0\xc4\xa0\xc4\xa0\xc4\xa0\xc4\xa0\xc4\xa0\xc4\xa0",
                        "\xc4\xa0return", "\xc4\xa0x", "**", "2", "\xc4\x8a"));
}

/* ---- the 407 texts, every family's pre-tokenizer ---------------------------- */

/* Returns the number of texts whose pieces differ. */
static size_t compare_config(json_t *conf, json_t *texts)
{
    char *cfg = json_dumps(json_object_get(conf, "pre_tokenizer"), 0);
    ag_tk_pretok *p = load_cfg(cfg);
    json_t *pieces = json_object_get(conf, "pieces");
    const char *name = json_string_value(json_array_get(json_object_get(conf, "families"), 0));
    cr_assert_eq(json_array_size(pieces), json_array_size(texts));
    ag_tk_splits out = {0};
    size_t bad = 0;
    for (size_t t = 0; t < json_array_size(texts); t++) {
        json_t *text = json_array_get(texts, t), *want = json_array_get(pieces, t);
        run_text(p, json_string_value(text), json_string_length(text), 1, &out);
        int same = out.n == json_array_size(want);
        for (size_t k = 0; same && k < out.n; k++) {
            json_t *w = json_array_get(want, k);
            same = out.v[k].n == json_string_length(w) &&
                   memcmp(out.v[k].s, json_string_value(w), out.v[k].n) == 0;
        }
        if (!same && bad++ < 5) {
            char *w = json_dumps(want, JSON_ENSURE_ASCII);
            cr_log_error("%s, text %zu: %zu pieces (first '%s'), want %s", name, t, out.n,
                         out.n ? out.v[0].s : "", w);
            free(w);
        }
    }
    ag_tk_splits_free(&out);
    ag_tk_pretok_free(p);
    free(cfg);
    return bad;
}

Test(tk_pretok, families_match_reference)
{
    json_error_t je;
    json_t *doc = xz_json_load(PIECES_FILE, 0, &je), *texts = load_file(TEXTS_FILE);
    cr_assert_not_null(doc, "%s: %s", PIECES_FILE, je.text);
    json_t *confs = json_object_get(doc, "configs");
    cr_assert_geq(json_array_size(confs), 13);
    for (size_t c = 0; c < json_array_size(confs); c++) {
        json_t *conf = json_array_get(confs, c);
        size_t bad = compare_config(conf, texts);
        cr_expect_eq(bad, 0, "%s: %zu of %zu texts differ",
                     json_string_value(json_array_get(json_object_get(conf, "families"), 0)), bad,
                     json_array_size(texts));
    }
    json_decref(doc);
    json_decref(texts);
}

/* ---- closed forms ---------------------------------------------------------------- */

/* No pre-tokenizer: text splits copied (empty ones dropped), tokens passed
 * through in order with their ids. */
Test(tk_pretok, null_copies_and_tokens_pass_through)
{
    ag_tk_pretok *p = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_tk_pretok_load("t.json", json_null(), &p, &err), AG_OK);
    cr_assert_null(p);
    ag_tk_pretok *ws = load_cfg("{\"type\":\"WhitespaceSplit\"}");
    for (int k = 0; k < 2; k++) {
        const ag_tk_pretok *pt = k ? ws : NULL;
        ag_tk_splits in = {0}, out = {0};
        cr_assert_eq(ag_tk_splits_push(&in, "a b", 3, 1, -1), AG_OK);
        cr_assert_eq(ag_tk_splits_push(&in, "", 0, 0, -1), AG_OK);
        cr_assert_eq(ag_tk_splits_push(&in, "<s>", 3, 0, 7), AG_OK);
        cr_assert_eq(ag_tk_splits_push(&in, " c", 2, 0, -1), AG_OK);
        cr_assert_eq(ag_tk_pretokenize(pt, &in, &out, &err), AG_OK, "%s", err.message);
        const char *want[2][4] = {{"a b", "<s>", " c"}, {"a", "b", "<s>", "c"}};
        int32_t ids[2][4] = {{-1, 7, -1}, {-1, -1, 7, -1}};
        int starts[2][4] = {{1, 0, 0}, {1, 0, 0, 0}};
        cr_assert_eq(out.n, (size_t)(k ? 4 : 3));
        for (size_t i = 0; i < out.n; i++) {
            cr_expect_str_eq(out.v[i].s, want[k][i]);
            cr_expect_eq(out.v[i].id, ids[k][i]);
            cr_expect_eq(out.v[i].at_start, starts[k][i], "piece %zu", i);
        }
        ag_tk_splits_free(&in);
        ag_tk_splits_free(&out);
    }
    ag_tk_pretok_free(ws);
}

/* at_start stays on a piece that begins the split: not after a removed
 * leading delimiter, never on later pieces, never without the input's. */
Test(tk_pretok, at_start_only_at_offset_zero)
{
    struct {
        const char *cfg, *text;
        int at_start;
        int want[4];
        size_t n;
    } cases[] = {
        {"{\"type\":\"WhitespaceSplit\"}", "a b", 1, {1, 0}, 2},
        {"{\"type\":\"WhitespaceSplit\"}", " a b", 1, {0, 0}, 2},
        {"{\"type\":\"WhitespaceSplit\"}", "a b", 0, {0, 0}, 2},
        {"{\"type\":\"Split\",\"pattern\":{\"String\":\"-\"},\"behavior\":\"Isolated\",\"invert\":"
         "false}",
         "-a",
         1,
         {1, 0},
         2},
        {"{\"type\":\"ByteLevel\",\"add_prefix_space\":true}", "a b", 1, {1, 0}, 2},
        {"{\"type\":\"Metaspace\",\"replacement\":\"_\",\"prepend_scheme\":\"first\"}",
         "a b",
         1,
         {1, 0},
         2},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        ag_tk_pretok *p = load_cfg(cases[c].cfg);
        ag_tk_splits out = {0};
        run_text(p, cases[c].text, strlen(cases[c].text), cases[c].at_start, &out);
        cr_assert_eq(out.n, cases[c].n, "%s", cases[c].cfg);
        for (size_t k = 0; k < out.n; k++)
            cr_expect_eq(out.v[k].at_start, cases[c].want[k], "%s on '%s': piece %zu", cases[c].cfg,
                         cases[c].text, k);
        ag_tk_splits_free(&out);
        ag_tk_pretok_free(p);
    }
}

/* Empty matches follow Oniguruma's find_iter: an empty match is kept,
 * except the first one after a non-empty match. For x* on "axxb" the
 * matches are (0,0) (1,3) (4,4) — (3,3) is skipped — so MergedWithNext
 * joins "xx" with "b". (Python's re keeps (3,3), which would give
 * "a" "xx" "b": the reference does not model this, see its README.) An
 * empty String pattern is the empty regex (Split.rs escapes the string
 * into a regex): it matches between all characters. */
Test(tk_pretok, empty_matches_as_oniguruma)
{
    check_split("{\"Regex\":\"x*\"}", "MergedWithNext", 0, "axxb", PIECES("a", "xxb"));
    check_split("{\"Regex\":\"x*\"}", "MergedWithPrevious", 0, "axxb", PIECES("axx", "b"));
    check_split("{\"Regex\":\"x*\"}", "Isolated", 0, "axxb", PIECES("a", "xx", "b"));
    check_split("{\"String\":\"\"}", "Removed", 0, "ab\xc3\xa9", PIECES("a", "b", "\xc3\xa9"));
    check_split("{\"String\":\"\"}", "Removed", 1, "ab", NO_PIECES);
}

/* Oniguruma's syntax where PCRE2 reads it otherwise (closed forms from
 * Oniguruma's documentation: \w is Alphabetic, marks, Nd, Pc; \h a hex
 * digit; the m option lets . match \n; $ ends a line; \uHHHH), and
 * possessive quantifiers. */
Test(tk_pretok, oniguruma_syntax)
{
    check_split("{\"Regex\":\"\\\\w+\"}", "Isolated", 0, "a_b-\xc3\xa7\xd9\xa1\xe2\x91\xa0",
                PIECES("a_b", "-", "\xc3\xa7\xd9\xa1", "\xe2\x91\xa0"));
    check_split("{\"Regex\":\"[\\\\w-]+\"}", "Removed", 0, "a-b c", PIECES(" "));
    check_split("{\"Regex\":\"\\\\W+\"}", "Removed", 0, "a, b", PIECES("a", "b"));
    check_split("{\"Regex\":\"\\\\h+\"}", "Isolated", 0, "0xBEEF g",
                PIECES("0", "x", "BEEF", " g"));
    check_split("{\"Regex\":\"(?m:a.b)\"}", "Removed", 0, "xa\nbx", PIECES("x", "x"));
    check_split("{\"Regex\":\"a.b\"}", "Removed", 0, "xa\nbx", PIECES("xa\nbx"));
    check_split("{\"Regex\":\"b$\"}", "Removed", 0, "ab\nab", PIECES("a", "\na"));
    check_split("{\"Regex\":\"\\\\u00e9\"}", "Removed", 0, "caf\xc3\xa9s", PIECES("caf", "s"));
    check_split("{\"Regex\":\"\\\\p{N}{1,3}+|\\\\p{L}++|\\\\s*+[\\\\r\\\\n]+\"}", "Isolated", 0,
                "12345ab \n", PIECES("123", "45", "ab", " \n"));
}

/* CharDelimiterSplit removes its character; FixedLength cuts every
 * `length` characters (closed forms; the Rust tests of fixed_length.rs). */
Test(tk_pretok, delimiter_and_fixed_length)
{
    check_pieces("{\"type\":\"CharDelimiterSplit\",\"delimiter\":\"x\"}", "axbxxcx", 1,
                 PIECES("a", "b", "c"));
    check_pieces("{\"type\":\"FixedLength\",\"length\":5}", "Hello world", 1,
                 PIECES("Hello", " worl", "d"));
    check_pieces("{\"type\":\"FixedLength\"}", "Short", 1, PIECES("Short"));
    check_pieces("{\"type\":\"FixedLength\",\"length\":3}", "Hello \xf0\x9f\x91\x8b world", 1,
                 PIECES("Hel", "lo ", "\xf0\x9f\x91\x8b w", "orl", "d"));
}

/* ---- errors ----------------------------------------------------------------------- */

static void check_error(const char *cfg, int status, const char *const *parts, size_t nparts)
{
    json_error_t je;
    json_t *j = json_loads(cfg, JSON_DECODE_ANY, &je);
    cr_assert_not_null(j, "bad test JSON %s: %s", cfg, je.text);
    ag_tk_pretok *p = (ag_tk_pretok *)1;
    ag_error err = {0};
    int rc = ag_tk_pretok_load("dir/tokenizer.json", j, &p, &err);
    json_decref(j);
    cr_expect_eq(rc, status, "%s: status %d (%s)", cfg, rc, err.message);
    cr_expect_null(p, "%s", cfg);
    cr_expect_null(strchr(err.message, '\n'), "one line: %s", err.message);
    for (size_t k = 0; k < nparts; k++)
        cr_expect_not_null(strstr(err.message, parts[k]), "%s: '%s' lacks '%s'", cfg, err.message,
                           parts[k]);
}

Test(tk_pretok, errors)
{
    check_error("{\"type\":\"UnicodeScripts\"}", AG_EUNSUPPORTED,
                PIECES("dir/tokenizer.json: pre_tokenizer type 'UnicodeScripts' is not supported"));
    check_error("{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"WhitespaceSplit\"},"
                "{\"type\":\"Foo\"}]}",
                AG_EUNSUPPORTED, PIECES("pre_tokenizer type 'Foo' is not supported"));
    check_error("{\"type\":\"Split\",\"pattern\":{\"Regex\":\"(a\"},\"behavior\":\"Isolated\","
                "\"invert\":false}",
                AG_EFORMAT,
                PIECES("dir/tokenizer.json", "pre_tokenizer Split", "invalid regex '(a'",
                       "PCRE2: missing closing parenthesis"));
    check_error("{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"WhitespaceSplit\"},"
                "{\"type\":\"Split\",\"pattern\":{\"Regex\":\"a{2,1}\"},\"behavior\":\"Isolated\","
                "\"invert\":false}]}",
                AG_EFORMAT, PIECES("pre_tokenizer.pretokenizers[1] Split", "PCRE2"));
    check_error(
        "{\"type\":\"Split\",\"pattern\":{\"Regex\":\"[\\\\W]\"},\"behavior\":\"Isolated\"}",
        AG_EUNSUPPORTED, PIECES("\\W inside a character class"));
    check_error("{\"type\":\"Split\",\"pattern\":{\"Regex\":\"[a[b]]\"},\"behavior\":\"Isolated\"}",
                AG_EUNSUPPORTED, PIECES("nested character class"));
    check_error(
        "{\"type\":\"Split\",\"pattern\":{\"Regex\":\"[a-z&&b]\"},\"behavior\":\"Isolated\"}",
        AG_EUNSUPPORTED, PIECES("class intersection"));
    check_error("{\"type\":\"Split\",\"pattern\":{\"Regex\":\"a\"},\"behavior\":\"isolated\"}",
                AG_EFORMAT, PIECES("Split: 'behavior' must be"));
    check_error("{\"type\":\"Split\",\"pattern\":{\"Regex\":\"a\"}}", AG_EFORMAT,
                PIECES("'behavior'"));
    check_error("{\"type\":\"Split\",\"pattern\":\"a\",\"behavior\":\"Isolated\"}", AG_EFORMAT,
                PIECES("'pattern' must be"));
    check_error("{\"type\":\"Split\",\"pattern\":{\"String\":\"a\"},\"behavior\":\"Isolated\","
                "\"invert\":1}",
                AG_EFORMAT, PIECES("'invert' must be true or false"));
    check_error("{\"type\":\"Metaspace\",\"replacement\":\"ab\"}", AG_EFORMAT,
                PIECES("Metaspace: 'replacement' must be a string of one character"));
    check_error("{\"type\":\"Metaspace\",\"replacement\":\"_\",\"add_prefix_space\":false,"
                "\"prepend_scheme\":\"always\"}",
                AG_EFORMAT, PIECES("contradicts prepend_scheme 'always'"));
    check_error("{\"type\":\"Metaspace\",\"replacement\":\"_\",\"prepend_scheme\":\"sometimes\"}",
                AG_EFORMAT, PIECES("'prepend_scheme' must be"));
    check_error("{\"type\":\"ByteLevel\",\"add_prefix_space\":\"yes\"}", AG_EFORMAT,
                PIECES("ByteLevel: 'add_prefix_space' must be true or false"));
    check_error("{\"type\":\"Digits\",\"individual_digits\":\"yes\"}", AG_EFORMAT,
                PIECES("'individual_digits'"));
    check_error("{\"type\":\"Punctuation\",\"behavior\":3}", AG_EFORMAT, PIECES("'behavior'"));
    check_error("{\"type\":\"CharDelimiterSplit\"}", AG_EFORMAT, PIECES("'delimiter'"));
    check_error("{\"type\":\"FixedLength\",\"length\":0}", AG_EFORMAT,
                PIECES("'length' must be a positive integer"));
    check_error("{\"type\":\"Sequence\"}", AG_EFORMAT, PIECES("'pretokenizers' must be an array"));
    check_error("{\"pretokenizers\":[]}", AG_EFORMAT, PIECES("pre_tokenizer has no \"type\""));
    check_error("3", AG_EFORMAT, PIECES("pre_tokenizer must be an object or null"));
}

/* A regex that backtracks past PCRE2's match limit fails the call with
 * AG_ELIMIT and a message, instead of running for ever. */
Test(tk_pretok, regex_limit_is_an_error)
{
    ag_tk_pretok *p = load_cfg("{\"type\":\"Split\",\"pattern\":{\"Regex\":\"(a|aa)+$\"},"
                               "\"behavior\":\"Isolated\",\"invert\":false}");
    char text[64];
    memset(text, 'a', 60);
    text[60] = 'b';
    text[61] = '\0';
    ag_tk_splits in = {0}, out = {0};
    ag_error err = {0};
    cr_assert_eq(ag_tk_splits_push(&in, text, 61, 1, -1), AG_OK);
    cr_expect_eq(ag_tk_pretokenize(p, &in, &out, &err), AG_ELIMIT);
    cr_expect_not_null(strstr(err.message, "pre-tokenizer regex failed"), "%s", err.message);
    ag_tk_splits_free(&in);
    ag_tk_splits_free(&out);
    ag_tk_pretok_free(p);
}

/* GPT-2's bytes_to_unicode (closed form: printable Latin-1 bytes stand for
 * themselves, the 68 others for U+0100.. in byte order): a bijection onto
 * 256 code points; the map appends. */
Test(tk_pretok, bytelevel_alphabet)
{
    cr_expect_eq(ag_tk_bytelevel_cp(' '), 0x120);  /* Ġ */
    cr_expect_eq(ag_tk_bytelevel_cp('\n'), 0x10A); /* Ċ */
    cr_expect_eq(ag_tk_bytelevel_cp(0), 0x100);
    cr_expect_eq(ag_tk_bytelevel_cp('!'), '!');
    cr_expect_eq(ag_tk_bytelevel_cp(0x7F), 0x121);
    cr_expect_eq(ag_tk_bytelevel_cp(0xA0), 0x142);
    cr_expect_eq(ag_tk_bytelevel_cp(0xAD), 0x143);
    cr_expect_eq(ag_tk_bytelevel_cp(0xFF), 0xFF);
    int seen[0x144] = {0};
    for (int b = 0; b < 256; b++) {
        int32_t cp = ag_tk_bytelevel_cp((uint8_t)b);
        cr_assert(cp >= 0x21 && cp < 0x144, "byte %d -> %d", b, cp);
        cr_expect_eq(seen[cp]++, 0, "code point %d twice", cp);
    }
    ag_tk_buf o = {0};
    cr_assert_eq(ag_tk_buf_put(&o, "x", 1), AG_OK);
    cr_assert_eq(ag_tk_bytelevel_map("\xc3\xa9 ", 3, &o), AG_OK);
    cr_expect_str_eq(o.b, "x\xc3\x83\xc2\xa9\xc4\xa0");
    free(o.b);
}
