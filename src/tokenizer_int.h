/* tokenizer_int.h — internals shared by tokenizer.c, tokenizer_bpe.c and
 * tokenizer_wordpiece.c. Not part of the public API. */
#ifndef ATTNGEOM_TOKENIZER_INT_H
#define ATTNGEOM_TOKENIZER_INT_H

#include <stddef.h>
#include <stdint.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "attngeom/core.h"
#include "attngeom/tokenizer.h"

/* ---- string -> int32 hash map (keys copied, may contain any byte) ------- */
typedef struct {
    char **keys;      /* NULL = empty slot */
    uint32_t *lens;
    int32_t *vals;
    size_t cap;       /* power of two */
    size_t count;
} ag_tk_smap;

/* Insert or replace. Returns AG_OK or AG_ENOMEM. *stored (optional) receives
 * the map's own copy of the key. */
int ag_tk_smap_put(ag_tk_smap *m, const char *key, size_t len, int32_t val,
                   const char **stored);
/* 1 and *val when found, else 0. */
int ag_tk_smap_get(const ag_tk_smap *m, const char *key, size_t len, int32_t *val);
void ag_tk_smap_free(ag_tk_smap *m);

/* ---- (id, id) -> (rank, merged id) hash map ------------------------------ */
typedef struct {
    uint64_t *keys;
    int32_t *ranks;   /* -1 = empty slot */
    int32_t *merged;
    size_t cap;
    size_t count;
} ag_tk_pmap;

int ag_tk_pmap_put(ag_tk_pmap *m, int32_t a, int32_t b, int32_t rank, int32_t merged);
int ag_tk_pmap_get(const ag_tk_pmap *m, int32_t a, int32_t b, int32_t *rank, int32_t *merged);
void ag_tk_pmap_free(ag_tk_pmap *m);

/* ---- growable id vector --------------------------------------------------- */
typedef struct {
    int32_t *v;
    size_t n, cap;
} ag_tk_ids;

int ag_tk_ids_push(ag_tk_ids *o, int32_t id);

/* ---- byte buffer ---------------------------------------------------------- */
typedef struct {
    char *b;
    size_t n, cap;
} ag_tk_buf;

int ag_tk_buf_put(ag_tk_buf *o, const char *s, size_t len);
int ag_tk_buf_putc(ag_tk_buf *o, int32_t cp); /* UTF-8 encode */

/* ---- the tokenizer -------------------------------------------------------- */
typedef struct {
    char *content;
    size_t len;
    char *match;      /* what is matched in the text: content, or its
                         normalized form when normalized (own allocation) */
    size_t mlen;
    int32_t id;
    int lstrip, rstrip, single_word, normalized, special;
} ag_tk_added;

enum { AG_TK_PRE_NONE = 0, AG_TK_PRE_BYTELEVEL, AG_TK_PRE_BERT };

struct ag_tokenizer {
    ag_tokenizer_kind kind;
    ag_tk_smap vocab;            /* model vocabulary */
    const char **id_to_tok;      /* borrowed strings, NULL for holes */
    size_t n_ids, cap_ids;       /* ids in use, slots allocated */

    ag_tk_added *added;
    size_t n_added;

    /* normalizer: BertNormalizer when bert_norm */
    int bert_norm;
    int clean_text, chinese, strip_accents /* -1 = follow lowercase */, lowercase;

    /* pre-tokenizer */
    int pre;
    int add_prefix_space, use_regex;
    pcre2_code *re;

    /* BPE */
    ag_tk_pmap merges;
    int32_t byte_id[256];        /* id of each byte's single-char token, -1 if none */
    char byte_char[256][3];      /* UTF-8 of the byte-level char of each byte */
    uint8_t byte_char_len[256];
    int ignore_merges;

    /* WordPiece */
    int32_t unk_id;              /* -1 when none */
    char *wp_prefix;             /* "##" */
    size_t max_chars;            /* max_input_chars_per_word */

    /* post-processor (single sequence): ids before and after the text */
    int32_t *post_pre, *post_post;
    size_t n_post_pre, n_post_post;
};

/* Byte-level BPE of one pre-token (raw UTF-8 bytes). */
int ag_tk_bpe_word(const ag_tokenizer *t, const unsigned char *p, size_t n, ag_tk_ids *out);
/* ByteLevel pre-tokenizer + BPE of one section of text. */
int ag_tk_bpe_section(const ag_tokenizer *t, const char *s, size_t n,
                      pcre2_match_data *md, ag_tk_ids *out, ag_error *err);
/* Compile the GPT-2 pre-tokenizer regex into t->re. */
int ag_tk_bpe_compile_regex(ag_tokenizer *t, ag_error *err);
/* Fill byte_char / byte_char_len and byte_id from the vocabulary. */
void ag_tk_bpe_init_bytes(ag_tokenizer *t);

/* BertNormalizer of s into out (out is reset first). */
int ag_tk_bert_normalize(const ag_tokenizer *t, const char *s, size_t n, ag_tk_buf *out);
/* BertPreTokenizer + WordPiece of one normalized section. */
int ag_tk_wordpiece_section(const ag_tokenizer *t, const char *s, size_t n, ag_tk_ids *out);

/* Unicode White_Space property (what Rust's char::is_whitespace and
 * Oniguruma's \s use). */
int ag_tk_is_whitespace(int32_t cp);

#endif
