/* test_tk_normalizers.c — the normalizers of src/tokenizer/normalizers.c and
 * the Precompiled charsmap of src/tokenizer/precompiled.c.
 *
 * Where an expected string is not a closed form (an ASCII identity, a
 * documented Rust test of huggingface/tokenizers or spm_precompiled), it was
 * obtained by running the Python reference of Hugging Face's Rust library,
 * tests/ref/hf_tokenizer.py (build_normalizer + NStr), on the same input with
 * /usr/bin/python3. The families test compares all 407 texts of
 * tools/tokenize_ref/texts_families.json with
 * tests/data/tokenize/normalized/<family>.json.xz, written by
 * tools/tokenize_ref/make_normalized.py from that same reference.
 *
 * A family's normalizer is read from its tokenizer.layout.json when that holds
 * it whole; one with the real charsmap (tests/data/tokenizers/base/, xz) from
 * the family folder tools/tokenize_ref/materialize.py writes into the
 * per-process temporary folder, or from $AG_TK_MATERIALIZED when set (a
 * folder that script already wrote). */
#include <criterion/criterion.h>

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../util/test_io_util.h"
#include "../util/xz_file.h"
#include "tokenizer/tk.h"

#define PATH "tk/tokenizer.json"

static ag_tk_normalizer *load_json(const char *text)
{
    json_error_t je;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &je);
    cr_assert_not_null(j, "bad test JSON %s: %s", text, je.text);
    ag_tk_normalizer *nm = NULL;
    ag_error err = {0};
    int rc = ag_tk_normalizer_load(PATH, j, &nm, &err);
    json_decref(j);
    cr_assert_eq(rc, AG_OK, "%s: %s", text, err.message);
    return nm;
}

/* The normalized s, compared with want byte for byte. */
static void expect_norm(const ag_tk_normalizer *nm, const char *s, const char *want)
{
    ag_tk_buf out = {0};
    ag_error err = {0};
    int rc = ag_tk_normalize(nm, s, strlen(s), &out, &err);
    cr_assert_eq(rc, AG_OK, "\"%s\": %s", s, err.message);
    cr_expect(out.n == strlen(want) && memcmp(out.b, want, out.n) == 0, "\"%s\" -> \"%.*s\", expected \"%s\"",
              s, (int)out.n, out.b, want);
    free(out.b);
}

static void check(const char *config, const char *s, const char *want)
{
    ag_tk_normalizer *nm = load_json(config);
    expect_norm(nm, s, want);
    ag_tk_normalizer_free(nm);
}

/* Loading config fails with status st and a message holding each of the
 * NULL-terminated fragments. */
static void expect_load_error(json_t *j, int st, ...)
{
    ag_tk_normalizer *nm = (ag_tk_normalizer *)1;
    ag_error err = {0};
    int rc = ag_tk_normalizer_load(PATH, j, &nm, &err);
    cr_assert_eq(rc, st, "status %d, expected %d (%s)", rc, st, err.message);
    cr_expect_null(nm);
    cr_expect_eq(strncmp(err.message, PATH ": ", strlen(PATH) + 2), 0, "message: %s", err.message);
    va_list ap;
    va_start(ap, st);
    for (const char *frag; (frag = va_arg(ap, const char *));)
        cr_expect(strstr(err.message, frag), "message \"%s\" lacks \"%s\"", err.message, frag);
    va_end(ap);
}

static void expect_load_error_text(const char *text, int st, const char *frag)
{
    json_error_t je;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &je);
    cr_assert_not_null(j, "bad test JSON %s: %s", text, je.text);
    expect_load_error(j, st, frag, NULL);
    json_decref(j);
}

/* ---- every kind ------------------------------------------------------------ */

Test(tk_normalizers, null_normalizes_nothing)
{
    ag_tk_normalizer *nm = (ag_tk_normalizer *)1;
    cr_assert_eq(ag_tk_normalizer_load(PATH, json_null(), &nm, NULL), AG_OK);
    cr_assert_null(nm);
    cr_assert_eq(ag_tk_normalizer_load(PATH, NULL, &nm, NULL), AG_OK);
    cr_assert_null(nm);
    expect_norm(NULL, "Héllo\r\n", "Héllo\r\n");
    expect_norm(NULL, "", "");
}

Test(tk_normalizers, unicode_forms)
{
    /* ASCII is the same in every form (the fast path). */
    for (const char *const *f = (const char *const[]){"NFC", "NFD", "NFKC", "NFKD", NULL}; *f; f++) {
        char cfg[64];
        snprintf(cfg, sizeof cfg, "{\"type\": \"%s\"}", *f);
        check(cfg, "Hello, world!\t\r\n~", "Hello, world!\t\r\n~");
        check(cfg, "", "");
    }
    /* The ASCII letter before a combining mark composes with it. */
    check("{\"type\": \"NFC\"}", "cafe\u0301 ok", "caf\u00e9 ok");
    check("{\"type\": \"NFC\"}", "a\u0301\u0328", "\u0105\u0301"); /* canonical order */
    check("{\"type\": \"NFC\"}", "\u1112\u1161\u11ab", "\ud55c");
    check("{\"type\": \"NFD\"}", "\ud55c \u00e9", "\u1112\u1161\u11ab e\u0301");
    check("{\"type\": \"NFKC\"}", "\ufb01\u0301 \u2460\u00bd \uff11\uff12\uff13 \uff76\uff9e",
          "f\u00ed 11\u20442 123 \u30ac");
    check("{\"type\": \"NFKD\"}", "\ufb01\u0301 \u2460\u00bd \uff76\uff9e", "fi\u0301 11\u20442 \u30ab\u3099");
    /* A long non-ASCII run between ASCII text (the scratch buffer grows). */
    char in[4096] = "x", want[8192] = "x";
    for (int i = 0; i < 300; i++) {
        strcat(in, "\ufb01");
        strcat(want, "fi");
    }
    strcat(in, "y");
    strcat(want, "y");
    check("{\"type\": \"NFKC\"}", in, want);
}

Test(tk_normalizers, lowercase)
{
    /* Per character (Rust char::to_lowercase): no final sigma, U+0130 gives
     * two characters, titlecase digraphs lower. */
    check("{\"type\": \"Lowercase\"}", "HeLLo \u039f\u0394\u039f\u03a3 \u0130stanbul \u01c5",
          "hello \u03bf\u03b4\u03bf\u03c3 i\u0307stanbul \u01c6");
    check("{\"type\": \"Lowercase\"}", "ABC xyz 123", "abc xyz 123");
}

Test(tk_normalizers, strip)
{
    const char *s = "\u3000 a b \xc2\x85\t";
    check("{\"type\": \"Strip\", \"strip_left\": true, \"strip_right\": true}", s, "a b");
    check("{\"type\": \"Strip\", \"strip_left\": true, \"strip_right\": false}", s, "a b \xc2\x85\t");
    check("{\"type\": \"Strip\", \"strip_left\": false, \"strip_right\": true}", s, "\u3000 a b");
    check("{\"type\": \"Strip\", \"strip_left\": false, \"strip_right\": false}", s, s);
    check("{\"type\": \"Strip\"}", " \u2003\u00a0 ", "");
    check("{\"type\": \"Strip\"}", "\u200bx\u200b", "\u200bx\u200b"); /* U+200B is not White_Space */
}

Test(tk_normalizers, strip_accents)
{
    /* Every mark (Mn, Mc, Me) goes; precomposed letters stay (tokenizers'
     * strip.rs tests: "e\u0304\u0304\u0304o" -> "eo"). */
    check("{\"type\": \"StripAccents\"}", "e\u0304\u0304\u0304o \u00e9 \u0915\u093e a\u20dd",
          "eo \u00e9 \u0915 a");
    /* tokenizers' test_vietnamese_bug, with NFKD and Lowercase first. */
    check("{\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"NFKD\"}, {\"type\": \"StripAccents\"},"
          " {\"type\": \"Lowercase\"}]}",
          "\u1ead\u2026 C\u1ee5 th\u1ec3", "a... cu the");
}

Test(tk_normalizers, replace_string)
{
    const char *cfg = "{\"type\": \"Replace\", \"pattern\": {\"String\": \"''\"}, \"content\": \"\\\"\"}";
    check(cfg, "This is a ''test''", "This is a \"test\""); /* tokenizers' test_replace */
    check("{\"type\": \"Replace\", \"pattern\": {\"String\": \"aaa\"}, \"content\": \"b\"}", "aaaab", "bab");
    check("{\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, \"content\": \"\u2581\"}", " a  b ",
          "\u2581a\u2581\u2581b\u2581");
    check("{\"type\": \"Replace\", \"pattern\": {\"String\": \".*\"}, \"content\": \"-\"}", "a.*b.*", "a-b-");
    /* Oniguruma's empty regex matches at every character boundary; nothing
     * matches in an empty string. */
    check("{\"type\": \"Replace\", \"pattern\": {\"String\": \"\"}, \"content\": \"x\"}", "a\u00e9", "xax\u00e9x");
    check("{\"type\": \"Replace\", \"pattern\": {\"String\": \"\"}, \"content\": \"x\"}", "", "");
}

Test(tk_normalizers, replace_regex)
{
    check("{\"type\": \"Replace\", \"pattern\": {\"Regex\": \"\\\\s+\"}, \"content\": \" \"}",
          "This     is   a         test", "This is a test"); /* tokenizers' test_replace_regex */
    check("{\"type\": \"Replace\", \"pattern\": {\"Regex\": \"\\\\s+\"}, \"content\": \" \"}",
          "a\u3000\xc2\x85" "b\n\n c", "a b c"); /* Unicode \s */
    check("{\"type\": \"Replace\", \"pattern\": {\"Regex\": \" {2,}\"}, \"content\": \" \"}", " a  b   c ",
          " a b c ");
    /* The content is literal: released tokenizers expand no $1. */
    check("{\"type\": \"Replace\", \"pattern\": {\"Regex\": \"(l)(e)\"}, \"content\": \"$1 $2\"}", "le travail",
          "$1 $2 travail");
    /* onig's find_iter: an empty match right after a non-empty one is
     * skipped ("xxab" matches at 0..2, 3..3 and 4..4; Python's re.sub would
     * give "--a-b-"). */
    check("{\"type\": \"Replace\", \"pattern\": {\"Regex\": \"x*\"}, \"content\": \"-\"}", "xxab", "-a-b-");
    /* Oniguruma's ^ and $ are line anchors; a line ends at LF. */
    check("{\"type\": \"Replace\", \"pattern\": {\"Regex\": \"^\"}, \"content\": \">\"}", "a\nb\r\nc",
          ">a\n>b\r\n>c");
    check("{\"type\": \"Replace\", \"pattern\": {\"Regex\": \"$\"}, \"content\": \"<\"}", "a\nb", "a<\nb<");
    check("{\"type\": \"Replace\", \"pattern\": {\"Regex\": \"^\"}, \"content\": \">\"}", "", "");
}

Test(tk_normalizers, prepend)
{
    const char *cfg = "{\"type\": \"Prepend\", \"prepend\": \"\u2581\"}";
    check(cfg, "Hello", "\u2581Hello"); /* tokenizers' test_prepend */
    check(cfg, " ", "\u2581 ");
    check(cfg, "", ""); /* only a non-empty string gets the prefix */
}

Test(tk_normalizers, bert)
{
    const char *in = "H\u00e9llo\tWorld \u4e2d\u6587\x01\u200b!\u3000\u00c4\xef\xbf\xbd";
    /* strip_accents null follows lowercase */
    check("{\"type\": \"BertNormalizer\", \"clean_text\": true, \"handle_chinese_chars\": true,"
          " \"strip_accents\": null, \"lowercase\": true}",
          in, "hello world  \u4e2d  \u6587 ! a");
    check("{\"type\": \"BertNormalizer\", \"clean_text\": true, \"handle_chinese_chars\": true,"
          " \"strip_accents\": null, \"lowercase\": false}",
          in, "H\u00e9llo World  \u4e2d  \u6587 ! \u00c4");
    check("{\"type\": \"BertNormalizer\", \"clean_text\": false, \"handle_chinese_chars\": false,"
          " \"strip_accents\": true, \"lowercase\": false}",
          in, "Hello\tWorld \u4e2d\u6587\x01\u200b!\u3000" "A\xef\xbf\xbd");
    /* Defaults: every option on. */
    check("{\"type\": \"BertNormalizer\"}", in, "hello world  \u4e2d  \u6587 ! a");
    check("{\"type\": \"BertNormalizer\"}", "\u0130", "i"); /* NFD + drop Mn, then lowercase */
}

Test(tk_normalizers, nmt)
{
    check("{\"type\": \"Nmt\"}", "a\x01" "b\tc\u200bd\u2581" "e\xef\xbf\xbd\x7f\u2028", "ab c d e  ");
}

Test(tk_normalizers, byte_level)
{
    /* tokenizers' test_byte_level_normalize */
    check("{\"type\": \"ByteLevel\"}", "Hello 我今天能为你做什么",
          "HelloĠæĪĳä»Ĭå¤©èĥ½ä¸ºä½łåģļä»Ģä¹Ī");
    /* LF, DEL and the soft hyphen are the shifted bytes 0x0A, 0x7F, 0xAD */
    check("{\"type\": \"ByteLevel\"}", "\n\x7f\xc2\xad", "\u010a\u0121\u00c2\u0143");
}

Test(tk_normalizers, sequence)
{
    const char *legacy = "{\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Prepend\", \"prepend\": "
                         "\"\u2581\"}, {\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, \"content\": "
                         "\"\u2581\"}]}";
    check(legacy, "Hello world", "\u2581Hello\u2581world");
    check(legacy, " ", "\u2581\u2581");
    check(legacy, "", "");
    check("{\"type\": \"Sequence\", \"normalizers\": []}", "As Is", "As Is");
    check("{\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Sequence\", \"normalizers\": ["
          "{\"type\": \"Lowercase\"}, {\"type\": \"Strip\"}]}, {\"type\": \"NFKC\"}]}",
          "  \uff21B  ", "ab");
    /* An empty step output feeds the next one. */
    check("{\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Strip\"}, {\"type\": \"Prepend\", "
          "\"prepend\": \"_\"}, {\"type\": \"Lowercase\"}]}",
          "   ", "");
}

Test(tk_normalizers, invalid_utf8_is_an_error)
{
    ag_tk_normalizer *nm = load_json("{\"type\": \"Lowercase\"}");
    ag_tk_buf out = {0};
    ag_error err = {0};
    cr_expect_eq(ag_tk_normalize(nm, "a\xff", 2, &out, &err), AG_EINVAL);
    cr_expect(strstr(err.message, "UTF-8"), "%s", err.message);
    cr_expect_eq(ag_tk_normalize(NULL, "\xed\xa0\x80", 3, &out, &err), AG_EINVAL); /* surrogate */
    free(out.b);
    ag_tk_normalizer_free(nm);
}

/* ---- load errors ----------------------------------------------------------- */

Test(tk_normalizers, unknown_type)
{
    expect_load_error_text("{\"type\": \"Foo\"}", AG_EUNSUPPORTED, "normalizer type 'Foo' is not supported");
    expect_load_error_text("{\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"NFC\"}, {\"type\": \"Bar\"}]}",
                           AG_EUNSUPPORTED, "normalizer type 'Bar' is not supported");
    expect_load_error_text("{\"normalizers\": []}", AG_EFORMAT, "\"type\"");
    expect_load_error_text("[1, 2]", AG_EFORMAT, "\"type\"");
    expect_load_error_text("{\"type\": \"Sequence\", \"normalizers\": [null]}", AG_EFORMAT, "\"type\"");
}

Test(tk_normalizers, bad_regex)
{
    json_t *j = json_pack("{s:s, s:{s:s}, s:s}", "type", "Replace", "pattern", "Regex", "a(b", "content", "x");
    /* PCRE2's own words for an unclosed group */
    expect_load_error(j, AG_EFORMAT, "normalizer Replace", "invalid regex 'a(b'", "missing closing parenthesis",
                      NULL);
    json_decref(j);
    expect_load_error_text("{\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Replace\", \"pattern\": "
                           "{\"Regex\": \"[z-a]\"}, \"content\": \"\"}]}",
                           AG_EFORMAT, "invalid regex '[z-a]'");
}

Test(tk_normalizers, bad_fields)
{
    expect_load_error_text("{\"type\": \"Strip\", \"strip_left\": \"yes\"}", AG_EFORMAT,
                           "normalizer Strip: \"strip_left\"");
    expect_load_error_text("{\"type\": \"Replace\", \"pattern\": {\"String\": \"a\"}}", AG_EFORMAT,
                           "normalizer Replace: \"content\"");
    expect_load_error_text("{\"type\": \"Replace\", \"pattern\": {\"String\": \"a\", \"Regex\": \"b\"}, "
                           "\"content\": \"\"}",
                           AG_EFORMAT, "\"pattern\"");
    expect_load_error_text("{\"type\": \"Replace\", \"pattern\": \"a\", \"content\": \"\"}", AG_EFORMAT,
                           "\"pattern\"");
    expect_load_error_text("{\"type\": \"Prepend\"}", AG_EFORMAT, "normalizer Prepend: \"prepend\"");
    expect_load_error_text("{\"type\": \"Sequence\"}", AG_EFORMAT, "normalizer Sequence: \"normalizers\"");
    expect_load_error_text("{\"type\": \"BertNormalizer\", \"lowercase\": 1}", AG_EFORMAT,
                           "normalizer BertNormalizer: \"lowercase\"");
    expect_load_error_text("{\"type\": \"Precompiled\", \"precompiled_charsmap\": null}", AG_EFORMAT,
                           "normalizer Precompiled: \"precompiled_charsmap\"");
}

/* ---- Precompiled, hand-built ------------------------------------------------ */

static size_t b64_encode(const unsigned char *p, size_t n, char *dst)
{
    static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t w = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
        dst[w++] = A[v >> 18];
        dst[w++] = A[(v >> 12) & 63];
        dst[w++] = i + 1 < n ? A[(v >> 6) & 63] : '=';
        dst[w++] = i + 2 < n ? A[v & 63] : '=';
    }
    dst[w] = '\0';
    return w;
}

/* A charsmap from units and the strings area. */
static json_t *charsmap_json(const uint32_t *units, size_t n_units, uint32_t trie_size, const char *strings,
                             size_t slen)
{
    size_t n = 4 + 4 * n_units + slen;
    unsigned char *blob = malloc(n);
    char *b64 = malloc(n / 3 * 4 + 8);
    cr_assert(blob && b64);
    for (int k = 0; k < 4; k++)
        blob[k] = (unsigned char)(trie_size >> (8 * k));
    for (size_t i = 0; i < n_units; i++)
        for (int k = 0; k < 4; k++)
            blob[4 + 4 * i + k] = (unsigned char)(units[i] >> (8 * k));
    memcpy(blob + 4 + 4 * n_units, strings, slen);
    b64_encode(blob, n, b64);
    json_t *j = json_pack("{s:s, s:s}", "type", "Precompiled", "precompiled_charsmap", b64);
    free(blob);
    free(b64);
    return j;
}

/* The darts-clone unit of a label with offset `off` (< 2^21) to its children. */
static uint32_t unit(unsigned label, uint32_t off, int leaf)
{
    return label | (leaf ? 1u << 8 : 0) | off << 10;
}

/* 256 units: root base 0; "a" -> "x" (value 0), "ab" -> "y" (value 2),
 * "a" U+0300 -> "y". Keys: 'a' at 0^'a'=97, its children at 97^1=96 (the
 * leaf value), 'b' at 96^'b'=2 (value at 3), 0xCC at 96^0xCC=172 (no leaf,
 * children at 173), 0x80 at 173^0x80=45 (value at 44). */
static void overlap_units(uint32_t *u)
{
    memset(u, 0, 256 * sizeof *u);
    u['a'] = unit('a', 1, 1);
    u[96] = 0x80000000u | 0;
    u[2] = unit('b', 1, 1);
    u[3] = 0x80000000u | 2;
    u[172] = unit(0xCC, 1, 0);
    u[45] = unit(0x80, 1, 1);
    u[44] = 0x80000000u | 2;
}

static ag_tk_normalizer *load_charsmap_ok(json_t *j)
{
    ag_tk_normalizer *nm = NULL;
    ag_error err = {0};
    int rc = ag_tk_normalizer_load(PATH, j, &nm, &err);
    cr_assert_eq(rc, AG_OK, "%s", err.message);
    return nm;
}

Test(tk_precompiled, first_shortest_key_replaces_the_cluster)
{
    uint32_t u[256];
    overlap_units(u);
    json_t *j = charsmap_json(u, 256, 256 * 4, "x\0y\0", 4);
    ag_tk_normalizer *nm = load_charsmap_ok(j);
    expect_norm(nm, "a", "x");
    expect_norm(nm, "ab", "xb");                                  /* two clusters */
    expect_norm(nm, "a\u0300", "x");                              /* "a" is found first: the whole cluster */
    expect_norm(nm, "a\u0300\u0300", "x");                        /* 5 bytes: still one lookup */
    expect_norm(nm, "a\u0300\u0300\u0300", "x\u0300\u0300\u0300"); /* 7 bytes: per character */
    expect_norm(nm, "b\u0300 c", "b\u0300 c");
    expect_norm(nm, "", "");
    ag_tk_normalizer_free(nm);
    json_decref(j);
}

Test(tk_precompiled, broken_charsmaps_are_errors)
{
    uint32_t u[256];
    struct {
        const char *why;
        uint32_t trie_size;
        size_t n_units;
        const char *strings;
        size_t slen;
        void (*patch)(uint32_t *);
    } cases[] = {
        {"runs past the end", 258 * 4, 256, "x\0y\0", 4, NULL},
        {"trie is empty", 0, 0, "x\0", 2, NULL},
        {"not NUL-terminated", 256 * 4, 256, "x\0y", 3, NULL},
        {"lies past the strings", 256 * 4, 256, "x\0", 2, NULL},
        {"not valid UTF-8", 256 * 4, 256, "x\0\xff\0", 4, NULL},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        overlap_units(u);
        json_t *j = charsmap_json(u, cases[k].n_units, cases[k].trie_size, cases[k].strings, cases[k].slen);
        expect_load_error(j, AG_EFORMAT, "normalizer Precompiled", "broken precompiled_charsmap", cases[k].why, NULL);
        json_decref(j);
    }
    /* A child offset outside the array. */
    overlap_units(u);
    u['a'] = unit('a', 300, 1);
    json_t *j = charsmap_json(u, 256, 256 * 4, "x\0y\0", 4);
    expect_load_error(j, AG_EFORMAT, "outside the trie", NULL);
    json_decref(j);
    /* The root's offset outside the array. */
    overlap_units(u);
    u[0] = unit(0, 1000, 0);
    j = charsmap_json(u, 256, 256 * 4, "x\0y\0", 4);
    expect_load_error(j, AG_EFORMAT, "outside the trie", NULL);
    json_decref(j);
    /* A value inside a UTF-8 character. */
    overlap_units(u);
    u[96] = 0x80000000u | 1;
    j = charsmap_json(u, 256, 256 * 4, "\u00e9\0", 3);
    expect_load_error(j, AG_EFORMAT, "inside a UTF-8 character", NULL);
    json_decref(j);
    /* A cycle in a corrupted array ends the walk (no hang) and loads. */
    overlap_units(u);
    u[2] = unit('b', 2 ^ 96, 0); /* 'b' leads back to 'a''s children */
    j = charsmap_json(u, 256, 256 * 4, "x\0y\0", 4);
    ag_tk_normalizer *nm = load_charsmap_ok(j);
    expect_norm(nm, "abab", "xbxb");
    ag_tk_normalizer_free(nm);
    json_decref(j);
    /* A blob shorter than its header, and bad base64. */
    const char *b64s[] = {"AAA=", "AAAAAA", "AAAA*AAA", "AB==", "AAB=", "=AAA"};
    const char *whys[] = {"shorter than its 4-byte header", "not valid base64", "not valid base64",
                          "not valid base64", "not valid base64", "not valid base64"};
    for (size_t k = 0; k < 6; k++) {
        j = json_pack("{s:s, s:s}", "type", "Precompiled", "precompiled_charsmap", b64s[k]);
        expect_load_error(j, AG_EFORMAT, whys[k], NULL);
        json_decref(j);
    }
}

/* ---- the families' real normalizers ---------------------------------------- */

/* A "$include" directive of materialize.py anywhere in j. */
static int has_include(json_t *j)
{
    const char *k;
    size_t i;
    json_t *v;
    if (json_is_object(j)) {
        json_object_foreach(j, k, v) if (!strcmp(k, "$include") || has_include(v)) return 1;
    } else if (json_is_array(j)) {
        json_array_foreach(j, i, v) if (has_include(v)) return 1;
    }
    return 0;
}

static json_t *load_json_path(const char *path)
{
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    cr_assert_not_null(j, "%s: %s", path, je.text);
    return j;
}

/* The normalizer of a family's tokenizer.json. When the layout file holds it
 * whole, it is read from there; otherwise (a charsmap to include) the family
 * folder is materialized first, into this process's temporary folder or
 * found in $AG_TK_MATERIALIZED. *root owns the result. */
static json_t *family_normalizer(const char *family, json_t **root)
{
    char path[4400];
    snprintf(path, sizeof path, "tests/data/tokenizers/%s/tokenizer.json", family);
    if (access(path, R_OK) != 0) {
        snprintf(path, sizeof path, "tests/data/tokenizers/%s/tokenizer.layout.json", family);
        *root = load_json_path(path);
        if (!has_include(json_object_get(*root, "normalizer")))
            return json_object_get(*root, "normalizer");
        json_decref(*root);
        const char *dir = getenv("AG_TK_MATERIALIZED");
        if (!dir || !*dir) {
            dir = tio_path("tk");
            snprintf(path, sizeof path, "%s/%s/tokenizer.json", dir, family);
            if (access(path, R_OK) != 0) {
                char cmd[8800];
                snprintf(cmd, sizeof cmd, "/usr/bin/python3 tools/tokenize_ref/materialize.py '%s' '%s' >/dev/null",
                         dir, family);
                cr_assert_eq(system(cmd), 0, "%s failed", cmd);
            }
        }
        snprintf(path, sizeof path, "%s/%s/tokenizer.json", dir, family);
    }
    *root = load_json_path(path);
    return json_object_get(*root, "normalizer");
}

static void suite_fini(void)
{
    tio_cleanup();
}

TestSuite(tk_families, .fini = suite_fini);
TestSuite(tk_charsmap_real, .fini = suite_fini);

/* Tricky strings through the charsmap T5, XLM-R and ALBERT share
 * (tests/data/tokenizers/base/nmt_nfkc.charsmap.bin.xz). */
Test(tk_charsmap_real, tricky_strings)
{
    json_t *root;
    ag_tk_normalizer *nm = load_charsmap_ok(family_normalizer("t5", &root));
    expect_norm(nm, "\ufb01\u0301", "fi");                /* the accent goes with the cluster */
    expect_norm(nm, "A\u0308\u0304", "\u00c4");           /* the macron too */
    expect_norm(nm, "e\u0302\u0301", "\u00ea");
    expect_norm(nm, "\r\n", " ");                          /* one cluster, one space */
    expect_norm(nm, "a\r\nb", "a b");
    expect_norm(nm, "\u1112\u1161\u11ab", "\u1112\u1161\u11ab"); /* 9 bytes: per character */
    expect_norm(nm, "a\u0301\u0302\u0303\u0304", "a\u0301\u0302\u0303\u0304");
    expect_norm(nm, "\uff11\uff12\uff13", "123");
    expect_norm(nm, "a\x01" "b\x7f" "c\xc2\x8f", "abc");
    expect_norm(nm, "\uff76\uff9e", "\u30ab\u3099");
    expect_norm(nm, "\U0001d53e\U0001d560\U0001d560\U0001d555", "Good"); /* spm_precompiled's test */
    expect_norm(nm, "\u200d", " ");
    expect_norm(nm, "\u0627\u0653", "\u0622");
    expect_norm(nm, "\U0001f44d\U0001f3fd \U0001f1eb\U0001f1f7", "\U0001f44d\U0001f3fd \U0001f1eb\U0001f1f7");
    expect_norm(nm, "x\u00a0y\u3000z", "x y z");
    expect_norm(nm, "\ufeff" "A\ufffd", " A ");
    ag_tk_normalizer_free(nm);
    json_decref(root);
}

/* Random corruptions of the real charsmap: each one loads or fails cleanly,
 * and a loaded one normalizes every family text without error. */
Test(tk_charsmap_real, corrupted_real_charsmap)
{
    json_t *root;
    json_t *j = family_normalizer("t5", &root);
    const char *b64 = json_string_value(json_object_get(j, "precompiled_charsmap"));
    size_t n = strlen(b64);
    char *buf = malloc(n + 1);
    json_t *texts = load_json_path("tools/tokenize_ref/texts_families.json");
    cr_assert(buf && json_is_array(texts));
    srand(12345);
    int loaded = 0, failed = 0;
    for (int round = 0; round < 60; round++) {
        memcpy(buf, b64, n + 1);
        size_t len = n;
        if (round % 3 == 0) {
            len = (size_t)rand() % n / 4 * 4; /* truncated */
            buf[len] = '\0';
        } else {
            for (int k = 0; k < 1 + round % 5; k++) /* a few base64 digits changed */
                buf[(size_t)rand() % (n - 4)] = "AQgw/+9z"[rand() % 8];
        }
        json_t *cfg = json_pack("{s:s, s:s%}", "type", "Precompiled", "precompiled_charsmap", buf, len);
        ag_tk_normalizer *nm = NULL;
        ag_error err = {0};
        int rc = ag_tk_normalizer_load(PATH, cfg, &nm, &err);
        json_decref(cfg);
        if (rc != AG_OK) {
            cr_expect_eq(rc, AG_EFORMAT, "%s", err.message);
            failed++;
            continue;
        }
        loaded++;
        size_t i;
        json_t *t;
        ag_tk_buf out = {0};
        json_array_foreach(texts, i, t) {
            rc = ag_tk_normalize(nm, json_string_value(t), json_string_length(t), &out, &err);
            cr_expect_eq(rc, AG_OK, "%s", err.message);
        }
        free(out.b);
        ag_tk_normalizer_free(nm);
    }
    cr_expect(loaded > 0 && failed > 0, "loaded %d, failed %d", loaded, failed);
    free(buf);
    json_decref(texts);
    json_decref(root);
}

/* Every distinct normalizer of the families on every family text, against
 * the Python reference (tests/data/tokenize/normalized/, xz). */
Test(tk_families, all_texts_match_the_reference)
{
    json_t *texts = load_json_path("tools/tokenize_ref/texts_families.json");
    cr_assert(json_is_array(texts) && json_array_size(texts) >= 400);
    DIR *d = opendir("tests/data/tokenize/normalized");
    cr_assert_not_null(d);
    size_t total = 0, good = 0, files = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 9 || strcmp(e->d_name + len - 8, ".json.xz") != 0)
            continue;
        char path[512], family[256];
        snprintf(path, sizeof path, "tests/data/tokenize/normalized/%s", e->d_name);
        snprintf(family, sizeof family, "%.*s", (int)(len - 8), e->d_name);
        json_error_t je;
        json_t *exp = xz_json_load(path, 0, &je);
        cr_assert_not_null(exp, "%s: %s", path, je.text);
        json_t *want = json_object_get(exp, "normalized");
        cr_assert_eq(json_array_size(want), json_array_size(texts), "%s", path);
        json_t *root;
        ag_tk_normalizer *nm = NULL;
        ag_error err = {0};
        cr_assert_eq(ag_tk_normalizer_load(family, family_normalizer(family, &root), &nm, &err), AG_OK, "%s",
                     err.message);
        ag_tk_buf out = {0};
        size_t i;
        json_t *t;
        json_array_foreach(texts, i, t) {
            json_t *w = json_array_get(want, i);
            int rc = ag_tk_normalize(nm, json_string_value(t), json_string_length(t), &out, &err);
            int ok = rc == AG_OK && out.n == json_string_length(w) && memcmp(out.b, json_string_value(w), out.n) == 0;
            cr_expect(ok, "%s[%zu] \"%s\" -> \"%.*s\", expected \"%s\"", family, i, json_string_value(t),
                      (int)out.n, out.b, json_string_value(w));
            good += (size_t)ok;
            total++;
        }
        free(out.b);
        ag_tk_normalizer_free(nm);
        json_decref(root);
        json_decref(exp);
        files++;
    }
    closedir(d);
    cr_expect_geq(files, 9, "%zu normalizer configurations", files);
    cr_expect_eq(good, total, "%zu of %zu normalized texts match", good, total);
    json_decref(texts);
}
