/* test_tk_models.c — the model stage of the tokenizer pipeline
 * (src/tokenizer/models.c, model_bpe.c, model_wordpiece.c, model_unigram.c)
 * through its internal interface (src/tokenizer/tk.h).
 *
 * Two kinds of checks:
 *  - closed forms on tiny vocabularies written here, each derived by hand
 *    from Hugging Face's Rust code (models/bpe/model.rs + word.rs,
 *    models/wordpiece/mod.rs, models/unigram/model.rs) and confirmed with the
 *    Python reference tests/ref/hf_tokenizer.py (BPE(...).tokenize etc. on
 *    the same JSON);
 *  - the real vocabularies of tests/data/tokenizers: for every distinct model
 *    object, tests/data/tokenize/model/<name>.json.xz lists the pieces the
 *    Python reference's pipeline hands its model for the 407 family texts,
 *    plus synthetic pieces, with the reference model's ids
 *    (tools/tokenize_ref/make_model_cases.py). The tokenizer.json is written
 *    into a temporary folder by tools/tokenize_ref/materialize.py (python3,
 *    standard library only).
 * Paths are relative to the project root (where `make` runs the tests). */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "attngeom/core.h"
#include "attngeom/tokenizer.h"
#include "../util/test_io_util.h"
#include "../util/xz_file.h"
#include "tokenizer/tk.h"

#define CASES_DIR "tests/data/tokenize/model/"

/* ---- helpers ---------------------------------------------------------------- */

static int try_load(const char *model_json, ag_tk_model **m, ag_error *err)
{
    json_error_t je;
    json_t *j = json_loads(model_json, 0, &je);
    cr_assert_not_null(j, "test JSON: %s", je.text);
    int rc = ag_tk_model_load("t.json", j, m, err);
    json_decref(j);
    return rc;
}

static ag_tk_model *load(const char *model_json)
{
    ag_tk_model *m = NULL;
    ag_error err = {0};
    int rc = try_load(model_json, &m, &err);
    cr_assert_eq(rc, AG_OK, "load: %s", err.message);
    cr_assert_not_null(m);
    return m;
}

static void expect_load_error(const char *model_json, int status, const char *needle)
{
    ag_tk_model *m = (ag_tk_model *)1;
    ag_error err = {0};
    int rc = try_load(model_json, &m, &err);
    cr_expect_eq(rc, status, "status %d (%s), expected %d for %s", rc, err.message, status, model_json);
    cr_expect_null(m);
    cr_expect(strstr(err.message, "t.json") != NULL, "message '%s' does not name the file", err.message);
    cr_expect(strstr(err.message, needle) != NULL, "message '%s' does not say '%s'", err.message, needle);
    cr_expect(strchr(err.message, '\n') == NULL);
}

/* ids of one piece (C string) */
static size_t run(const ag_tk_model *m, const char *piece, int32_t *got, size_t cap)
{
    ag_tk_ids out = {0};
    ag_error err = {0};
    int rc = ag_tk_model_tokenize(m, piece, strlen(piece), &out, &err);
    cr_assert_eq(rc, AG_OK, "tokenize '%s': %s", piece, err.message);
    cr_assert_leq(out.n, cap, "'%s': %zu ids", piece, out.n);
    if (out.n)
        memcpy(got, out.v, out.n * sizeof *got);
    free(out.v);
    return out.n;
}

#define EXPECT_IDS(m, piece, ...)                                                                  \
    do {                                                                                           \
        const int32_t want_[] = {__VA_ARGS__};                                                     \
        int32_t got_[64];                                                                          \
        size_t n_ = run(m, piece, got_, 64);                                                       \
        size_t w_ = sizeof want_ / sizeof *want_;                                                  \
        cr_expect_eq(n_, w_, "'%s': %zu ids, expected %zu", piece, n_, w_);                        \
        for (size_t i_ = 0; i_ < n_ && i_ < w_; i_++)                                              \
            cr_expect_eq(got_[i_], want_[i_], "'%s': id %zu is %d, expected %d", piece, i_,       \
                         got_[i_], want_[i_]);                                                     \
    } while (0)

#define EXPECT_NO_IDS(m, piece) cr_expect_eq(run(m, piece, NULL, 0), 0, "'%s' gives ids", piece)

static void expect_tokenize_error(const ag_tk_model *m, const char *piece, const char *needle)
{
    ag_tk_ids out = {0};
    ag_error err = {0};
    int rc = ag_tk_model_tokenize(m, piece, strlen(piece), &out, &err);
    cr_expect_neq(rc, AG_OK, "'%s' tokenized", piece);
    cr_expect(strstr(err.message, needle) != NULL, "message '%s' does not say '%s'", err.message, needle);
    free(out.v);
}

/* ---- BPE -------------------------------------------------------------------- */

/* Lowest rank first: "b c" (rank 0) beats "a b" (rank 1). */
Test(tk_bpe, lowest_rank_first)
{
    ag_tk_model *m = load("{\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"c\": 2, \"ab\": 3,"
                          " \"bc\": 4, \"abc\": 5}, \"merges\": [\"b c\", \"a b\", \"ab c\"]}");
    EXPECT_IDS(m, "abc", 0, 4);  /* a + bc: no merge "a bc" */
    EXPECT_IDS(m, "ab", 3);
    EXPECT_IDS(m, "cab", 2, 3);
    ag_tk_model_free(m);
    m = load("{\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"c\": 2, \"ab\": 3,"
             " \"bc\": 4, \"abc\": 5}, \"merges\": [\"a b\", \"b c\", \"ab c\"]}");
    EXPECT_IDS(m, "abc", 5);     /* ab, then ab + c */
    ag_tk_model_free(m);
}

/* Equal ranks: the leftmost pair merges first ("aaa" -> aa a, not a aa). */
Test(tk_bpe, equal_ranks_leftmost)
{
    ag_tk_model *m = load("{\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"aa\": 1, \"aaaa\": 2},"
                          " \"merges\": [[\"a\", \"a\"], [\"aa\", \"aa\"]]}");
    EXPECT_IDS(m, "a", 0);
    EXPECT_IDS(m, "aaa", 1, 0);
    EXPECT_IDS(m, "aaaa", 2);
    EXPECT_IDS(m, "aaaaa", 2, 0);
    EXPECT_IDS(m, "aaaaaa", 2, 1);
    EXPECT_NO_IDS(m, "");
    ag_tk_model_free(m);
}

/* A pair listed twice keeps its last rank (Rust collects the merges into a
 * HashMap: later entries overwrite). First-rank-wins would give a + bc. */
Test(tk_bpe, duplicate_merge_keeps_last_rank)
{
    ag_tk_model *m = load("{\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"c\": 2, \"ab\": 3,"
                          " \"bc\": 4}, \"merges\": [\"b c\", \"a b\", \"b c\"]}");
    EXPECT_IDS(m, "abc", 3, 2);
    ag_tk_model_free(m);
}

/* "#version" lines are not merges and take no rank. */
Test(tk_bpe, version_line_skipped)
{
    ag_tk_model *m = load("{\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2},"
                          " \"merges\": [\"#version: 0.2\", \"a b\"]}");
    EXPECT_IDS(m, "abab", 2, 2);
    ag_tk_model_free(m);
}

/* Unknown characters: dropped without unk_token; one unk each, or one per
 * run with fuse_unk (Rust tests test_unk_get_fused / test_unk_not_fused). */
Test(tk_bpe, unk_and_fuse_unk)
{
    ag_tk_model *m = load("{\"type\": \"BPE\", \"vocab\": {\"<unk>\": 0, \"a\": 1, \"b\": 2},"
                          " \"merges\": [], \"unk_token\": \"<unk>\", \"fuse_unk\": true}");
    EXPECT_IDS(m, "accb", 1, 0, 2);
    EXPECT_IDS(m, "cc", 0);
    ag_tk_model_free(m);
    m = load("{\"type\": \"BPE\", \"vocab\": {\"<unk>\": 0, \"a\": 1, \"b\": 2},"
             " \"merges\": [], \"unk_token\": \"<unk>\", \"fuse_unk\": false}");
    EXPECT_IDS(m, "accb", 1, 0, 0, 2);
    ag_tk_model_free(m);
    m = load("{\"type\": \"BPE\", \"vocab\": {\"a\": 1, \"b\": 2}, \"merges\": []}");
    EXPECT_IDS(m, "a\xC3\xA9" "b", 1, 2); /* é dropped: no unk_token */
    ag_tk_model_free(m);
}

/* An unk merges like any token when a merge names it. */
Test(tk_bpe, unk_takes_part_in_merges)
{
    ag_tk_model *m = load("{\"type\": \"BPE\", \"vocab\": {\"<unk>\": 0, \"a\": 1, \"<unk>a\": 2},"
                          " \"merges\": [\"<unk> a\"], \"unk_token\": \"<unk>\", \"fuse_unk\": true}");
    EXPECT_IDS(m, "xya", 2);
    ag_tk_model_free(m);
}

/* byte_fallback: a char not in the vocabulary becomes its UTF-8 bytes
 * "<0xNN>" when all exist, else unk. A pending unk is not flushed before
 * the bytes (Rust adds it at the next known char or at the end): "中é"
 * gives é's bytes, then unk. */
Test(tk_bpe, byte_fallback)
{
    ag_tk_model *m = load("{\"type\": \"BPE\", \"vocab\": {\"<unk>\": 0, \"<0xC3>\": 1, \"<0xA9>\": 2,"
                          " \"a\": 3, \"<0xE4>\": 4, \"<0xC3><0xA9>\": 5},"
                          " \"merges\": [], \"unk_token\": \"<unk>\", \"fuse_unk\": true,"
                          " \"byte_fallback\": true}");
    EXPECT_IDS(m, "a\xC3\xA9", 3, 1, 2);
    EXPECT_IDS(m, "a\xE4\xB8\xAD", 3, 0);            /* 中: <0xB8> missing */
    EXPECT_IDS(m, "\xE4\xB8\xAD\xC3\xA9", 1, 2, 0);   /* the Rust order */
    EXPECT_IDS(m, "\xE4\xB8\xAD\xC3\xA9" "a", 1, 2, 0, 3);
    ag_tk_model_free(m);
    /* byte tokens merge like any other */
    m = load("{\"type\": \"BPE\", \"vocab\": {\"<0xC3>\": 1, \"<0xA9>\": 2, \"<0xC3><0xA9>\": 5},"
             " \"merges\": [\"<0xC3> <0xA9>\"], \"byte_fallback\": true}");
    EXPECT_IDS(m, "\xC3\xA9\xC3\xA9", 5, 5);
    ag_tk_model_free(m);
}

/* continuing_subword_prefix on every char but the first; a merge "a ##b"
 * makes "ab" (b's prefix dropped). */
Test(tk_bpe, continuing_subword_prefix)
{
    ag_tk_model *m = load("{\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"##b\": 1, \"##c\": 2, \"ab\": 3,"
                          " \"abc\": 4, \"[UNK]\": 5, \"##bc\": 6},"
                          " \"merges\": [\"a ##b\", \"ab ##c\", \"##b ##c\"],"
                          " \"continuing_subword_prefix\": \"##\", \"unk_token\": \"[UNK]\"}");
    EXPECT_IDS(m, "abc", 4);
    EXPECT_IDS(m, "ab", 3);
    EXPECT_IDS(m, "ba", 5, 5);   /* "b" and "##a" are unknown; not fused */
    EXPECT_IDS(m, "bc", 5, 2);
    ag_tk_model_free(m);
}

/* byte_fallback spells out the prefix too: "##é" -> <0x23> <0x23> <0xC3> <0xA9>. */
Test(tk_bpe, byte_fallback_includes_prefix)
{
    ag_tk_model *m = load("{\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"<0x23>\": 1, \"<0xC3>\": 2,"
                          " \"<0xA9>\": 3}, \"merges\": [], \"continuing_subword_prefix\": \"##\","
                          " \"byte_fallback\": true}");
    EXPECT_IDS(m, "a\xC3\xA9", 0, 1, 1, 2, 3);
    ag_tk_model_free(m);
}

/* end_of_word_suffix on the last char. */
Test(tk_bpe, end_of_word_suffix)
{
    ag_tk_model *m = load("{\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"b</w>\": 2,"
                          " \"ab</w>\": 3}, \"merges\": [\"a b</w>\"], \"end_of_word_suffix\": \"</w>\"}");
    EXPECT_IDS(m, "ab", 3);
    EXPECT_IDS(m, "ba", 1);      /* "a</w>" unknown, dropped */
    EXPECT_IDS(m, "bab", 1, 3);
    ag_tk_model_free(m);
}

/* Empty prefix and suffix (GPT-2's files) change nothing. */
Test(tk_bpe, empty_prefix_suffix)
{
    ag_tk_model *m = load("{\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2},"
                          " \"merges\": [\"a b\"], \"continuing_subword_prefix\": \"\","
                          " \"end_of_word_suffix\": \"\"}");
    EXPECT_IDS(m, "abab", 2, 2);
    ag_tk_model_free(m);
}

/* ignore_merges: a whole piece that is a token is taken as is. */
Test(tk_bpe, ignore_merges)
{
    const char *fmt = "{\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"c\": 2, \"bc\": 3, \"abc\": 4},"
                      " \"merges\": [\"b c\"], \"ignore_merges\": %s}";
    char buf[256];
    snprintf(buf, sizeof buf, fmt, "false");
    ag_tk_model *m = load(buf);
    EXPECT_IDS(m, "abc", 0, 3);
    ag_tk_model_free(m);
    snprintf(buf, sizeof buf, fmt, "true");
    m = load(buf);
    EXPECT_IDS(m, "abc", 4);
    EXPECT_IDS(m, "abcabc", 0, 3, 0, 3);
    ag_tk_model_free(m);
}

/* A piece past the stack workspace (64 symbols) takes the heap path with
 * the same result: 200 'a' with merges a a, aa aa -> 50 "aaaa". */
Test(tk_bpe, long_piece)
{
    ag_tk_model *m = load("{\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"aa\": 1, \"aaaa\": 2},"
                          " \"merges\": [\"a a\", \"aa aa\"]}");
    char piece[202];
    memset(piece, 'a', 201);
    piece[201] = '\0';
    ag_tk_ids out = {0};
    ag_error err = {0};
    cr_assert_eq(ag_tk_model_tokenize(m, piece, 201, &out, &err), AG_OK, "%s", err.message);
    cr_assert_eq(out.n, 51);
    for (size_t i = 0; i < 50; i++)
        cr_expect_eq(out.v[i], 2);
    cr_expect_eq(out.v[50], 0);
    free(out.v);
    ag_tk_model_free(m);
}

/* Pieces over 256 bytes are cut only between characters no merge joins
 * (model_bpe.c, tokenize_long); the ids must be those of the whole piece.
 * "ab" * 150 with "b a" ranked first: a (ba) * 149 b — a cut anywhere
 * would change that. With "c" between two such runs (no merge touches c),
 * each run gives the same ids. 300 unknown chars fuse into one unk. */
static void expect_runs(const ag_tk_model *m, const char *piece, size_t runs)
{
    ag_tk_ids out = {0};
    ag_error err = {0};
    cr_assert_eq(ag_tk_model_tokenize(m, piece, strlen(piece), &out, &err), AG_OK, "%s", err.message);
    cr_assert_eq(out.n, runs * 151 + (runs - 1));
    for (size_t r = 0, k = 0; r < runs; r++) {
        cr_expect_eq(out.v[k++], 0);
        for (int i = 0; i < 149; i++)
            cr_expect_eq(out.v[k++], 3);
        cr_expect_eq(out.v[k++], 1);
        if (r + 1 < runs)
            cr_expect_eq(out.v[k++], 5);
    }
    free(out.v);
}

Test(tk_bpe, long_piece_cut_only_where_no_merge_joins)
{
    ag_tk_model *m = load("{\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2, \"ba\": 3,"
                          " \"<unk>\": 4, \"c\": 5}, \"merges\": [\"b a\", \"a b\"],"
                          " \"unk_token\": \"<unk>\", \"fuse_unk\": true}");
    char piece[1024] = "";
    for (int i = 0; i < 150; i++)
        strcat(piece, "ab");
    expect_runs(m, piece, 1);
    strcat(piece, "c");
    for (int i = 0; i < 150; i++)
        strcat(piece, "ab");
    expect_runs(m, piece, 2);
    memset(piece, 'x', 300);
    piece[300] = '\0';
    EXPECT_IDS(m, piece, 4);
    ag_tk_model_free(m);
}

/* unk_token absent from the vocabulary: Rust fails only when a piece needs it. */
Test(tk_bpe, missing_unk_token_fails_when_needed)
{
    ag_tk_model *m = load("{\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [],"
                          " \"unk_token\": \"<unk>\"}");
    EXPECT_IDS(m, "aa", 0, 0);
    expect_tokenize_error(m, "ab", "<unk>");
    ag_tk_model_free(m);
}

Test(tk_bpe, dropout)
{
    ag_tk_model *m = load("{\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [], \"dropout\": 0.0}");
    ag_tk_model_free(m);
    m = load("{\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [], \"dropout\": null}");
    ag_tk_model_free(m);
    expect_load_error("{\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [], \"dropout\": 0.1}",
                      AG_EUNSUPPORTED, "dropout");
    expect_load_error("{\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [], \"dropout\": 1.5}",
                      AG_EFORMAT, "dropout");
}

Test(tk_bpe, bad_merges)
{
    expect_load_error("{\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2},"
                      " \"merges\": [\"a b\", \"a x\"]}",
                      AG_EFORMAT, "model.merges[1]");
    expect_load_error("{\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2},"
                      " \"merges\": [\"a b\", \"x b\"]}",
                      AG_EFORMAT, "token 'x' is not in the vocabulary");
    expect_load_error("{\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": [\"a b\"]}",
                      AG_EFORMAT, "merged token 'ab' is not in the vocabulary");
    expect_load_error("{\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2},"
                      " \"merges\": [\"a  b\"]}",
                      AG_EFORMAT, "model.merges[0]");
    expect_load_error("{\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2},"
                      " \"merges\": [\"ab\"]}",
                      AG_EFORMAT, "model.merges[0]");
    expect_load_error("{\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2},"
                      " \"merges\": [\"a b\", [\"a\", \"b\"]]}",
                      AG_EFORMAT, "model.merges[1]");
    expect_load_error("{\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2},"
                      " \"merges\": [[\"a\", \"b\", \"c\"]]}",
                      AG_EFORMAT, "model.merges[0]");
    expect_load_error("{\"type\": \"BPE\", \"vocab\": {\"a\": 0}}", AG_EFORMAT, "model.merges");
    /* with a prefix, b must be at least as long as the prefix */
    expect_load_error("{\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": [\"a b\"],"
                      " \"continuing_subword_prefix\": \"##\"}",
                      AG_EFORMAT, "model.merges[0]");
}

Test(tk_bpe, bad_options)
{
    expect_load_error("{\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [], \"fuse_unk\": 1}",
                      AG_EFORMAT, "model.fuse_unk");
    expect_load_error("{\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [], \"unk_token\": 3}",
                      AG_EFORMAT, "model.unk_token");
}

/* ---- vocabularies ----------------------------------------------------------- */

Test(tk_vocab, bad_vocabularies)
{
    expect_load_error("{\"type\": \"BPE\", \"vocab\": {\"a\": \"0\"}, \"merges\": []}", AG_EFORMAT,
                      "model.vocab");
    expect_load_error("{\"type\": \"BPE\", \"vocab\": [[\"a\", 0]], \"merges\": []}", AG_EFORMAT,
                      "model.vocab");
    expect_load_error("{\"type\": \"BPE\", \"vocab\": {\"a\": 4194304}, \"merges\": []}", AG_ELIMIT,
                      "4194304");
    expect_load_error("{\"type\": \"BPE\", \"vocab\": {\"a\": -1}, \"merges\": []}", AG_EFORMAT, "-1");
    expect_load_error("{\"type\": \"WordPiece\", \"vocab\": {\"a\": 1, \"b\": 1}}", AG_EFORMAT,
                      "both have id 1");
    expect_load_error("{\"type\": \"WordPiece\"}", AG_EFORMAT, "model.vocab");
    expect_load_error("{\"type\": \"Unigram\", \"vocab\": [[\"a\", \"x\"]]}", AG_EFORMAT,
                      "model.vocab[0]");
    expect_load_error("{\"type\": \"Unigram\", \"vocab\": [[\"a\", 0.0]], \"unk_id\": 1}", AG_EFORMAT,
                      "model.unk_id");
    expect_load_error("{\"type\": \"Unigram\", \"vocab\": {\"a\": 0}}", AG_EFORMAT, "model.vocab");
}

Test(tk_vocab, unknown_model_type)
{
    expect_load_error("{\"type\": \"Backtracking\", \"vocab\": {}}", AG_EUNSUPPORTED,
                      "model type 'Backtracking' is not supported");
    expect_load_error("{\"type\": 7}", AG_EFORMAT, "model.type");
}

/* id -> token with holes; vocab_size = 1 + largest id. */
Test(tk_vocab, ids_and_tokens)
{
    ag_tk_model *m = load("{\"type\": \"WordPiece\", \"vocab\": {\"[UNK]\": 0, \"a\": 5, \"\\u00e9\": 2}}");
    cr_expect_eq(ag_tk_model_vocab_size(m), 6);
    cr_expect_str_eq(ag_tk_model_id_to_token(m, 5), "a");
    cr_expect_str_eq(ag_tk_model_id_to_token(m, 2), "\xC3\xA9");
    cr_expect_null(ag_tk_model_id_to_token(m, 3));
    cr_expect_null(ag_tk_model_id_to_token(m, 6));
    cr_expect_null(ag_tk_model_id_to_token(m, -1));
    int32_t id = -1;
    cr_expect_eq(ag_tk_model_token_to_id(m, "a", 1, &id), 1);
    cr_expect_eq(id, 5);
    cr_expect_eq(ag_tk_model_token_to_id(m, "b", 1, &id), 0);
    cr_expect_str_eq(ag_tk_model_type(m), "WordPiece");
    ag_tk_model_free(m);
}

/* Files older than "type": the fields tell the model. */
Test(tk_vocab, type_guessed_from_fields)
{
    ag_tk_model *m = load("{\"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2}, \"merges\": [\"a b\"]}");
    cr_expect_str_eq(ag_tk_model_type(m), "BPE");
    EXPECT_IDS(m, "ab", 2);
    ag_tk_model_free(m);
    m = load("{\"vocab\": [[\"<unk>\", 0.0], [\"a\", -1.0]], \"unk_id\": 0}");
    cr_expect_str_eq(ag_tk_model_type(m), "Unigram");
    ag_tk_model_free(m);
    m = load("{\"vocab\": {\"[UNK]\": 0, \"a\": 1}, \"unk_token\": \"[UNK]\","
             " \"continuing_subword_prefix\": \"##\", \"max_input_chars_per_word\": 100}");
    cr_expect_str_eq(ag_tk_model_type(m), "WordPiece");
    ag_tk_model_free(m);
}

/* ---- WordPiece / WordLevel -------------------------------------------------- */

Test(tk_wordpiece, greedy_longest_match)
{
    ag_tk_model *m = load("{\"type\": \"WordPiece\", \"vocab\": {\"[UNK]\": 0, \"un\": 1, \"##aff\": 2,"
                          " \"##able\": 3, \"a\": 4, \"##ff\": 5, \"##a\": 6, \"\\u00e9\": 7, \"##\\u00e9\": 8},"
                          " \"max_input_chars_per_word\": 9}");
    EXPECT_IDS(m, "unaffable", 1, 2, 3);
    EXPECT_IDS(m, "aff", 4, 5);      /* "aff", "af" unknown: "a", then "##ff" */
    EXPECT_IDS(m, "unx", 0);         /* "##x" unknown: the whole piece is unk */
    EXPECT_IDS(m, "unaffablea", 0);  /* 10 chars > 9 */
    EXPECT_IDS(m, "\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9",
               7, 8, 8, 8, 8, 8, 8, 8, 8); /* 9 chars (18 bytes) */
    EXPECT_NO_IDS(m, "");
    ag_tk_model_free(m);
}

/* Defaults: unk "[UNK]", prefix "##", 100 chars. */
Test(tk_wordpiece, defaults)
{
    ag_tk_model *m = load("{\"type\": \"WordPiece\", \"vocab\": {\"[UNK]\": 0, \"a\": 1, \"##a\": 2}}");
    char piece[102];
    memset(piece, 'a', 101);
    piece[100] = '\0';
    int32_t got[128];
    cr_expect_eq(run(m, piece, got, 128), 100);
    piece[100] = 'a';
    piece[101] = '\0';
    EXPECT_IDS(m, piece, 0);
    ag_tk_model_free(m);
    m = load("{\"type\": \"WordPiece\", \"vocab\": {\"a\": 1}, \"unk_token\": \"<unk>\"}");
    EXPECT_IDS(m, "a", 1);
    expect_tokenize_error(m, "b", "<unk>");
    ag_tk_model_free(m);
}

Test(tk_wordlevel, lookup_or_unk)
{
    ag_tk_model *m = load("{\"type\": \"WordLevel\", \"vocab\": {\"<unk>\": 0, \"hello\": 1}}");
    EXPECT_IDS(m, "hello", 1);
    EXPECT_IDS(m, "hell", 0);
    ag_tk_model_free(m);
    m = load("{\"type\": \"WordLevel\", \"vocab\": {\"hello\": 1}, \"unk_token\": \"[UNK]\"}");
    expect_tokenize_error(m, "hell", "[UNK]");
    ag_tk_model_free(m);
}

/* ---- Unigram ---------------------------------------------------------------- */

/* Rust's doc example (Unigram::encode): "abcdacdxx" -> abcd a cd xx. */
Test(tk_unigram, viterbi_doc_example)
{
    ag_tk_model *m = load("{\"type\": \"Unigram\", \"unk_id\": 0, \"vocab\": [[\"<unk>\", 0.0],"
                          " [\"a\", 0.0], [\"b\", 0.0], [\"c\", 0.0], [\"d\", 0.0], [\"cd\", 1.0],"
                          " [\"ab\", 2.0], [\"abc\", 5.0], [\"abcd\", 10.0]]}");
    EXPECT_IDS(m, "abcdacdxx", 8, 1, 5, 0);
    EXPECT_NO_IDS(m, "");
    cr_expect_eq(ag_tk_model_vocab_size(m), 9);
    cr_expect_str_eq(ag_tk_model_id_to_token(m, 7), "abc");
    ag_tk_model_free(m);
}

/* Scores chosen so the best path is plain arithmetic:
 *   "▁the": ▁the -3 > ▁ th e -9 > ▁t h e -14;
 *   "▁thee": ▁the e -6 > ▁ th ee -2-4-5 = -11;
 *   "the": th e -7 > t h e -15 (no "the"). */
Test(tk_unigram, viterbi_best_path)
{
    ag_tk_model *m = load("{\"type\": \"Unigram\", \"unk_id\": 0, \"vocab\": [[\"<unk>\", 0.0],"
                          " [\"\\u2581\", -2.0], [\"\\u2581the\", -3.0], [\"th\", -4.0], [\"e\", -3.0],"
                          " [\"\\u2581t\", -5.0], [\"h\", -6.0], [\"t\", -6.0], [\"ee\", -5.0]]}");
    EXPECT_IDS(m, "\xE2\x96\x81the", 2);
    EXPECT_IDS(m, "\xE2\x96\x81thee", 2, 4);
    EXPECT_IDS(m, "the", 3, 4);
    ag_tk_model_free(m);
}

/* Pieces sharing prefixes (the radix trie splits its edges at he, hel,
 * help): "helpe" = help e (-6) over hel p e (-14); "hell" = hel l (-9)
 * over he l l (-13). */
Test(tk_unigram, shared_prefixes)
{
    ag_tk_model *m = load("{\"type\": \"Unigram\", \"unk_id\": 0, \"vocab\": [[\"<unk>\", 0.0],"
                          " [\"hello\", -1.0], [\"help\", -1.0], [\"he\", -3.0], [\"h\", -5.0],"
                          " [\"e\", -5.0], [\"l\", -5.0], [\"p\", -5.0], [\"o\", -5.0],"
                          " [\"helper\", -1.5], [\"hel\", -4.0]]}");
    EXPECT_IDS(m, "hello", 1);
    EXPECT_IDS(m, "help", 2);
    EXPECT_IDS(m, "helper", 9);
    EXPECT_IDS(m, "helpe", 2, 5);
    EXPECT_IDS(m, "hell", 10, 6);
    EXPECT_IDS(m, "helo", 10, 8);
    EXPECT_IDS(m, "ohe", 8, 3);
    ag_tk_model_free(m);
}

/* Equal scores: the path found first stays (the earlier start): "ab" is one
 * piece (-2) against a + b (-1 + -1). */
Test(tk_unigram, ties_keep_earliest_start)
{
    ag_tk_model *m = load("{\"type\": \"Unigram\", \"unk_id\": 0, \"vocab\": [[\"<unk>\", 0.0],"
                          " [\"a\", -1.0], [\"b\", -1.0], [\"ab\", -2.0]]}");
    EXPECT_IDS(m, "ab", 3);
    EXPECT_IDS(m, "abab", 3, 3);
    ag_tk_model_free(m);
}

/* Unknown chars score min_score - 10 and fuse into one unk; "xa" (-12)
 * beats unk + a (-1 - 22). */
Test(tk_unigram, unknown_chars)
{
    ag_tk_model *m = load("{\"type\": \"Unigram\", \"unk_id\": 0, \"vocab\": [[\"<unk>\", 0.0],"
                          " [\"a\", -1.0], [\"xa\", -12.0]]}");
    EXPECT_IDS(m, "yzy", 0);
    EXPECT_IDS(m, "yay", 0, 1, 0);
    EXPECT_IDS(m, "xa", 2);
    EXPECT_IDS(m, "\xC3\xA9\xE4\xB8\xAD" "a", 0, 1);
    ag_tk_model_free(m);
    /* no unk_id: an unknown char is an error */
    m = load("{\"type\": \"Unigram\", \"vocab\": [[\"a\", -1.0]]}");
    EXPECT_IDS(m, "aa", 0, 0);
    expect_tokenize_error(m, "ab", "unk_id");
    ag_tk_model_free(m);
}

/* byte_fallback: a fused unknown run becomes its bytes when every byte
 * piece exists, else unk. The literal unk piece fuses with a following
 * unknown char ("<unk>é" -> bytes of the whole run). */
Test(tk_unigram, byte_fallback)
{
    ag_tk_model *m = load("{\"type\": \"Unigram\", \"unk_id\": 0, \"byte_fallback\": true, \"vocab\": ["
                          "[\"<unk>\", 0.0], [\"a\", -1.0], [\"<0xC3>\", 0.0], [\"<0xA9>\", 0.0],"
                          " [\"<\", -1.0], [\"u\", -1.0], [\"n\", -1.0], [\"k\", -1.0], [\">\", -1.0],"
                          " [\"<0x3C>\", 0.0], [\"<0x75>\", 0.0], [\"<0x6E>\", 0.0], [\"<0x6B>\", 0.0],"
                          " [\"<0x3E>\", 0.0]]}");
    EXPECT_IDS(m, "a\xC3\xA9" "a", 1, 2, 3, 1);
    EXPECT_IDS(m, "\xC3\xA9\xC3\xA9", 2, 3, 2, 3);
    EXPECT_IDS(m, "a\xE4\xB8\xAD", 1, 0);      /* <0xE4> missing */
    EXPECT_IDS(m, "<unk>", 0);                 /* the piece itself */
    EXPECT_IDS(m, "<unk>\xC3\xA9", 9, 10, 11, 12, 13, 2, 3);
    /* byte pieces compete in the Viterbi like any piece */
    EXPECT_IDS(m, "<0xC3>", 2);
    ag_tk_model_free(m);
}

/* A piece listed twice: the later id and score win (Rust's token_to_ids). */
Test(tk_unigram, duplicate_piece_later_wins)
{
    ag_tk_model *m = load("{\"type\": \"Unigram\", \"unk_id\": 0, \"vocab\": [[\"<unk>\", 0.0],"
                          " [\"ab\", -1.0], [\"a\", -2.0], [\"b\", -2.0], [\"ab\", -9.0]]}");
    EXPECT_IDS(m, "ab", 2, 3);
    cr_expect_str_eq(ag_tk_model_id_to_token(m, 1), "ab");
    int32_t id;
    cr_expect(ag_tk_model_token_to_id(m, "ab", 2, &id));
    cr_expect_eq(id, 4);
    ag_tk_model_free(m);
}

/* ---- real vocabularies ------------------------------------------------------ */

static ag_tk_model *load_family_model(const char *family)
{
    char cmd[8448], path[4352];
    snprintf(cmd, sizeof cmd, "python3 tools/tokenize_ref/materialize.py '%s' '%s' >/dev/null",
             tio_tmpdir(), family);
    cr_assert_eq(system(cmd), 0, "%s failed", cmd);
    snprintf(path, sizeof path, "%s/%s/tokenizer.json", tio_tmpdir(), family);
    json_error_t je;
    json_t *root = json_load_file(path, JSON_ALLOW_NUL, &je);
    cr_assert_not_null(root, "%s: %s", path, je.text);
    ag_tk_model *m = NULL;
    ag_error err = {0};
    int rc = ag_tk_model_load(path, json_object_get(root, "model"), &m, &err);
    json_decref(root);
    cr_assert_eq(rc, AG_OK, "%s: %s", path, err.message);
    return m;
}

static void check_cases(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, CASES_DIR "%s.json.xz", name);
    json_error_t je;
    json_t *doc = xz_json_load(path, JSON_ALLOW_NUL, &je);
    cr_assert_not_null(doc, "%s: %s", path, je.text);
    ag_tk_model *m = load_family_model(json_string_value(json_array_get(json_object_get(doc, "families"), 0)));
    json_t *cases = json_object_get(doc, "cases");
    cr_assert(json_array_size(cases) > 300, "%s: only %zu cases", path, json_array_size(cases));
    size_t i, bad = 0;
    json_t *c;
    ag_tk_ids out = {0};
    json_array_foreach(cases, i, c) {
        json_t *piece = json_array_get(c, 0), *ids = json_array_get(c, 1);
        ag_error err = {0};
        out.n = 0;
        int rc = ag_tk_model_tokenize(m, json_string_value(piece), json_string_length(piece), &out, &err);
        int same = rc == AG_OK && out.n == json_array_size(ids);
        for (size_t k = 0; same && k < out.n; k++)
            same = out.v[k] == json_integer_value(json_array_get(ids, k));
        if (!same && bad++ < 5) {
            char *want = json_dumps(ids, JSON_COMPACT);
            cr_log_error("%s case %zu '%.80s': rc %d (%s), %zu ids (first %d), expected %s", name, i,
                         json_string_value(piece), rc, err.message, out.n, out.n ? out.v[0] : -1, want);
            free(want);
        }
    }
    cr_expect_eq(bad, 0, "%s: %zu of %zu pieces differ", name, bad, json_array_size(cases));
    free(out.v);
    ag_tk_model_free(m);
    json_decref(doc);
}

TestSuite(tk_real, .fini = tio_cleanup, .timeout = 120);

Test(tk_real, gpt2) { check_cases("gpt2"); }
Test(tk_real, pythia) { check_cases("pythia"); }
Test(tk_real, starcoder) { check_cases("starcoder"); }
Test(tk_real, llama2) { check_cases("llama2"); }
Test(tk_real, gemma) { check_cases("gemma"); }
Test(tk_real, llama3) { check_cases("llama3"); }
Test(tk_real, qwen2) { check_cases("qwen2"); }
Test(tk_real, openai_gpt) { check_cases("openai-gpt"); }
Test(tk_real, bpe_prefix) { check_cases("bpe-prefix"); }
Test(tk_real, bert) { check_cases("bert"); }
Test(tk_real, wordpiece_mix) { check_cases("wordpiece-mix"); }
Test(tk_real, t5) { check_cases("t5"); }
Test(tk_real, xlm_roberta) { check_cases("xlm-roberta"); }
Test(tk_real, albert) { check_cases("albert"); }
Test(tk_real, unigram_bytes) { check_cases("unigram-bytes"); }
