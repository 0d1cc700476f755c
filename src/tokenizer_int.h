/* tokenizer_int.h — internals shared by tokenizer.c, tokenizer_bpe.c and
 * tokenizer_wordpiece.c. Not part of the public API. */
#ifndef ATTNGEOM_TOKENIZER_INT_H
#define ATTNGEOM_TOKENIZER_INT_H

#include <stddef.h>
#include <stdint.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "aho_corasick.h"
#include "attngeom/core.h"
#include "attngeom/tokenizer.h"
#include "hashmap.h"
#include "tokenizer/tk.h"

/* ---- the tokenizer -------------------------------------------------------- */
typedef struct {
    const char *content; /* added_index's copy of the key */
    size_t len;
    const char *match;   /* what is matched in the text: content, or norm */
    size_t mlen;
    char *norm;          /* content normalized, when normalized (own allocation) */
    int32_t id;
    int lstrip, rstrip, single_word, normalized, special;
} ag_tk_old_added;

enum { AG_TK_PRE_NONE = 0, AG_TK_PRE_BYTELEVEL, AG_TK_PRE_BERT };

struct ag_tokenizer {
    ag_tokenizer_kind kind;
    agi_strmap vocab;            /* model vocabulary */
    size_t vocab_maxlen;         /* bytes of its longest token */
    const char **id_to_tok;      /* borrowed strings, NULL for holes */
    size_t n_ids, ids_cap;

    ag_tk_old_added *added;
    size_t n_added, added_cap;
    agi_strmap added_index;      /* content -> index in added */
    agi_ac added_ac[2];          /* match strings by `normalized`, value = index */

    /* normalizer: BertNormalizer when bert_norm */
    int bert_norm;
    int clean_text, chinese, strip_accents /* -1 = follow lowercase */, lowercase;

    /* pre-tokenizer */
    int pre;
    int add_prefix_space, use_regex;
    pcre2_code *re;

    /* BPE */
    agi_u64map merges;           /* (id, id) -> (rank, merged id) */
    int32_t byte_id[256];        /* id of each byte's single-char token, -1 if none */
    char byte_char[256][3];      /* UTF-8 of the byte-level char of each byte */
    uint8_t byte_char_len[256];
    int ignore_merges;

    /* WordPiece */
    int32_t unk_id;              /* -1 when none */
    char *wp_prefix;             /* "##" */
    size_t max_chars;            /* max_input_chars_per_word */

    /* post-processor (single sequence): ids before and after the text */
    ag_tk_ids post_pre, post_post;
};

/* The merge of ids a and b: rank (lower first) and resulting id. The first
 * of duplicate merges is kept. */
int ag_tk_merge_put(ag_tokenizer *t, int32_t a, int32_t b, int32_t rank, int32_t merged);
int ag_tk_merge_get(const ag_tokenizer *t, int32_t a, int32_t b, int32_t *rank, int32_t *merged);

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

#endif
