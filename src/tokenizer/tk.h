/* Internal prefix: ag_tk (module src/tokenizer/: ag_tk_ and ag_tkm_; aho_corasick.h's agi_ac becomes ag_tk_ac in a later step). */
/* tokenizer/tk.h — the tokenizer's internal interfaces: shared containers
 * and the five kinds of component of Hugging Face's pipeline (added tokens,
 * normalizer, pre-tokenizer, model, post-processor). Private to the library.
 *
 * Data flow (HF tokenizers, Rust, TokenizerImpl::encode_single_sequence):
 * added tokens that are not `normalized` are matched in the raw text; every
 * remaining segment is normalized on its own; `normalized` added tokens are
 * matched in the normalized segments; the pre-tokenizer splits what is left
 * into pieces; the model turns each piece into ids; the post-processor adds
 * the special tokens.
 *
 * Offsets: ids depend on original offsets only through Metaspace's
 * prepend_scheme "first" (prepend to a split whose original offset is 0).
 * Each split carries that one fact, `at_start`. For the offsets themselves
 * (ag_tokenizer_encode_offsets) a split also carries the original span of
 * each of its bytes (`al`), and the ids their spans (ag_tk_ids.track);
 * without offsets both stay NULL and cost nothing. */
#ifndef ATTNGEOM_TK_H
#define ATTNGEOM_TK_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "attngeom/core.h"
#include "base/vec.h"

/* ---- containers (containers.c) ------------------------------------------ */

/* Growable arrays use base/vec.h (AGB_VEC_RESERVE). */

/* Growable id vector; with `track` set (offsets: ag_tokenizer_encode_offsets),
 * off[4 i .. 4 i + 3] are id i's span [start, end) and the counts of
 * leading and trailing spaces of its token string (the post-processors'
 * trim_offsets; ag_tk_ids_push_span sets them 0). */
typedef struct {
    int32_t *v;
    size_t n, cap;
    size_t *off, ocap;
    int track;
} ag_tk_ids;

/* AG_OK or AG_ENOMEM; ag_tk_ids_push records the span (0, 0). */
int ag_tk_ids_push(ag_tk_ids *o, int32_t id);
int ag_tk_ids_push_span(ag_tk_ids *o, int32_t id, size_t start, size_t end);
void ag_tk_ids_free(ag_tk_ids *o);

/* Growable byte buffer, kept NUL-terminated after every put (base/vec.h). */
typedef agb_buf ag_tk_buf;

/* agb_buf_put with the library's status: AG_OK or AG_ENOMEM. */
int ag_tk_buf_put(ag_tk_buf *o, const char *s, size_t len);
int ag_tk_buf_putc(ag_tk_buf *o, int32_t cp); /* UTF-8 encode */

/* One piece of text between two stages. */
typedef struct {
    char *s;        /* UTF-8, owned by the list (NUL-terminated) */
    size_t n;
    int at_start;   /* starts at offset 0 of the original input */
    int32_t id;     /* >= 0: already a token (an added token); -1: text */
    size_t *al;     /* offsets only, else NULL: al[2 k], al[2 k + 1] the byte
                       span of the original character byte k comes from (HF's
                       NormalizedString alignments), owned by the list */
} ag_tk_split;

typedef struct {
    ag_tk_split *v;
    size_t n, cap;
} ag_tk_splits;

/* Append a copy of s. AG_OK or AG_ENOMEM. */
int ag_tk_splits_push(ag_tk_splits *l, const char *s, size_t n, int at_start, int32_t id);
/* The same with a copy of its alignment al (2 n values; NULL: none). */
int ag_tk_splits_push_al(ag_tk_splits *l, const char *s, size_t n, int at_start, int32_t id,
                         const size_t *al);
/* Free the strings, keep the array for reuse. */
void ag_tk_splits_clear(ag_tk_splits *l);
void ag_tk_splits_free(ag_tk_splits *l);

/* The code point at s[*i] (n bytes in all), *i moved past it. Input is
 * validated UTF-8 (ag_tokenizer_encode checks it); a bad byte still gives
 * U+FFFD and one byte of progress, never a loop. */
int32_t ag_tk_next_cp(const char *s, size_t n, size_t *i);

/* JIT-compile a PCRE2 pattern (pcre2_code *), an optional speed-up: not
 * under valgrind, where the JIT's aligned SIMD loads past the end of the
 * subject (harmless) would be reported; the interpreter matches the same. */
struct pcre2_real_code_8;
void ag_tk_regex_jit(struct pcre2_real_code_8 *re);

/* Unicode White_Space (Rust's char::is_whitespace, Oniguruma's \s). */
int ag_tk_is_whitespace(int32_t cp);
/* HF's is_punctuation: ASCII punctuation and symbols (char::is_ascii_punctuation)
 * or a P* category (BertPreTokenizer, Punctuation). */
int ag_tk_is_punctuation(int32_t cp);
/* Rust's char::is_numeric: Nd, Nl, No (Digits). */
int ag_tk_is_numeric(int32_t cp);
/* The regex crate's \w: Alphabetic, M*, Nd, Pc, Join_Control (Whitespace
 * pre-tokenizer, added tokens' single_word). */
int ag_tk_is_word(int32_t cp);

/* ---- normalizers (normalizers.c) ----------------------------------------- */

typedef struct ag_tk_normalizer ag_tk_normalizer;

/* j: the "normalizer" object of tokenizer.json; JSON null (or j NULL) gives
 * *out = NULL, which normalizes nothing. An unknown type, a bad field or a
 * broken charsmap: AG_EUNSUPPORTED / AG_EFORMAT, the message naming `path`
 * and the component. */
int ag_tk_normalizer_load(const char *path, json_t *j, ag_tk_normalizer **out, ag_error *err);
/* Normalize n bytes of UTF-8 s into out (out->n reset to 0 first; out->b
 * is NUL-terminated, also when empty). nm may be NULL (a copy). Text that is
 * not valid UTF-8: AG_EINVAL. */
int ag_tk_normalize(const ag_tk_normalizer *nm, const char *s, size_t n, ag_tk_buf *out,
                    ag_error *err);
/* ag_tk_normalize with Hugging Face's alignments (offsets): al gives the
 * original span of each of the n bytes of s (2 values a byte), *out_al
 * (malloc'ed, 2 values for each byte of out; NULL when out is empty) that
 * of each normalized byte. A normalizer whose alignment is not tracked on
 * this text: AG_EUNSUPPORTED naming it (normalizers.c says which). */
int ag_tk_normalize_aligned(const ag_tk_normalizer *nm, const char *s, size_t n, const size_t *al,
                            ag_tk_buf *out, size_t **out_al, ag_error *err);
void ag_tk_normalizer_free(ag_tk_normalizer *nm);
/* Appends n bytes of s to out with every non-overlapping occurrence of pat
 * (leftmost first; an empty pat matches at every character boundary, as
 * Rust's str::replace) replaced by rep. AG_OK or AG_ENOMEM. */
int ag_tk_replace_all(const char *s, size_t n, const char *pat, size_t pn, const char *rep, size_t rn,
                      ag_tk_buf *out);

/* ---- pre-tokenizers (pre_tokenizers.c) ----------------------------------- */

typedef struct ag_tk_pretok ag_tk_pretok;

/* j: the "pre_tokenizer" object; null gives *out = NULL (no splitting).
 * An unknown type: AG_EUNSUPPORTED "PATH: pre_tokenizer type 'X' is not
 * supported"; a bad field or an invalid regex: AG_EFORMAT naming the path,
 * the component and PCRE2's message. Split regexes are Oniguruma's (HF's
 * engine), translated for PCRE2. */
int ag_tk_pretok_load(const char *path, json_t *j, ag_tk_pretok **out, ag_error *err);
/* Split every text split of `in` (id < 0) into pieces appended to `out`;
 * splits with id >= 0 are copied through, in order. Never emits an empty
 * text piece. A piece keeps at_start when its split had it and the piece
 * begins at the split's first byte (Rust: its original offset is 0), so the
 * first piece keeps it unless a removed delimiter led the split. p may be
 * NULL (a copy). Text must be valid UTF-8 (PCRE2 runs without its check). */
int ag_tk_pretokenize(const ag_tk_pretok *p, const ag_tk_splits *in, ag_tk_splits *out,
                      ag_error *err);
void ag_tk_pretok_free(ag_tk_pretok *p);
/* GPT-2's bytes_to_unicode: the code point byte b stands for in byte-level
 * vocabularies (ByteLevel pre-tokenizer output). */
int32_t ag_tk_bytelevel_cp(uint8_t b);
/* The byte a byte-level character stands for, -1 for any other code point
 * (ag_tk_bytelevel_cp's inverse). */
int ag_tk_bytelevel_byte(int32_t cp);
/* The first Metaspace stage of p: its replacement (UTF-8, *rep_len bytes)
 * and whether its prepend_scheme is "never"; nothing is written when p has
 * none. The Metaspace decoder reads its fields through this. */
void ag_tk_pretok_metaspace(const ag_tk_pretok *p, char rep[4], size_t *rep_len, int *never);
/* Appends every byte of s as its byte-level character (UTF-8) to out:
 * ByteLevel's mapping, for the ByteLevel normalizer too. */
int ag_tk_bytelevel_map(const char *s, size_t n, ag_tk_buf *out);

/* ---- models (models.c) ---------------------------------------------------- */

typedef struct ag_tk_model ag_tk_model;

/* j: the "model" object. The model owns its vocabulary. */
int ag_tk_model_load(const char *path, json_t *j, ag_tk_model **out, ag_error *err);
/* As ag_tk_model_load, with model.vocab and model.merges taken from sc when
 * the scan holds them (json_scan.h; sc may be NULL). */
struct ag_tk_scan_s;
int ag_tk_model_load_scanned(const char *path, json_t *j, const struct ag_tk_scan_s *sc, ag_tk_model **out,
                             ag_error *err);
/* Append the ids of one pre-tokenized piece to out. */
int ag_tk_model_tokenize(const ag_tk_model *m, const char *s, size_t n, ag_tk_ids *out,
                         ag_error *err);
/* 1 and *id when s is in the vocabulary, else 0. */
int ag_tk_model_token_to_id(const ag_tk_model *m, const char *s, size_t n, int32_t *id);
/* The token string of id, or NULL. Owned by the model. */
const char *ag_tk_model_id_to_token(const ag_tk_model *m, int32_t id);
/* One more than the largest id. */
size_t ag_tk_model_vocab_size(const ag_tk_model *m);
/* 1 when the model's token of that id carries the text it covers rather
 * than its vocabulary string: Unigram's unk (Rust's Unigram::tokenize gives
 * the unknown text as the token's value; the post-processors' trim_offsets
 * reads it). */
int ag_tk_model_unk_is_text(const ag_tk_model *m, int32_t id);
/* "BPE", "WordPiece", "WordLevel" or "Unigram". */
const char *ag_tk_model_type(const ag_tk_model *m);
void ag_tk_model_free(ag_tk_model *m);

/* ---- added tokens (added_tokens.c) --------------------------------------- */

typedef struct ag_tk_added ag_tk_added;

/* arr: the "added_tokens" array of tokenizer.json (NULL or null: none).
 * The ids are the file's; a repeated content keeps its first entry; an
 * empty content is skipped (as Rust's AddedVocabulary::add_tokens). The
 * contents of `normalized` tokens are normalized by nm, which must outlive
 * nothing (it is only used here). */
int ag_tk_added_load(const char *path, json_t *arr, const ag_tk_normalizer *nm, ag_tk_added **out,
                     ag_error *err);
/* Steps 1–3 of the pipeline on n bytes of s: the non-normalized tokens are
 * matched in s, every text between them is normalized by nm, the normalized
 * tokens are matched in that. Appends the splits to out: tokens (id >= 0)
 * and non-empty normalized text (id -1), at_start on a text starting at
 * offset 0 of s. a may be NULL (no added tokens). */
int ag_tk_added_extract(const ag_tk_added *a, const ag_tk_normalizer *nm, const char *s, size_t n,
                        ag_tk_splits *out, ag_error *err);
/* The same keeping Hugging Face's alignments (offsets): al gives the
 * original span of each byte of s (2 values a byte); every split gets the
 * spans of its bytes (ag_tk_split.al; a matched token those of its match,
 * stripped whitespace included). A normalizer whose alignment is not
 * tracked: AG_EUNSUPPORTED (ag_tk_normalize_aligned). */
int ag_tk_added_extract_aligned(const ag_tk_added *a, const ag_tk_normalizer *nm, const char *s, size_t n,
                                const size_t *al, ag_tk_splits *out, ag_error *err);
/* 1 and *id when s is an added token's content, else 0. */
int ag_tk_added_token_to_id(const ag_tk_added *a, const char *s, size_t n, int32_t *id);
/* 1 when s is the content of a special added token (Rust's
 * AddedVocabulary::is_special_token, by string), else 0. a may be NULL. */
int ag_tk_added_is_special(const ag_tk_added *a, const char *s, size_t n);
/* The string decoding uses for the added token of that id, or NULL: its
 * normalized content when it is a `normalized` token (Rust's
 * AddedVocabulary::simple_id_to_token, normalized_cache), else its content. */
const char *ag_tk_added_decode_token(const ag_tk_added *a, int32_t id);
/* The content of the added token of that id, or NULL. */
const char *ag_tk_added_id_to_token(const ag_tk_added *a, int32_t id);
/* 1 when id is an added token marked "special" (its first entry), else 0. */
int ag_tk_added_id_is_special(const ag_tk_added *a, int32_t id);
/* One more than the largest added id, 0 when none. */
size_t ag_tk_added_id_end(const ag_tk_added *a);
void ag_tk_added_free(ag_tk_added *a);

/* ---- decoders (decoders.c) ---------------------------------------------- */

typedef struct ag_tk_decoder ag_tk_decoder;

/* j: the "decoder" object of tokenizer.json; null (or j NULL) gives
 * *out = NULL, which joins tokens with spaces (Rust, Tokenizer::decode). An
 * unknown type: AG_EUNSUPPORTED naming `path`; a bad field: AG_EFORMAT. */
int ag_tk_decoder_load(const char *path, json_t *j, ag_tk_decoder **out, ag_error *err);
/* Decoder::decode: the token strings (text splits) through the decoder's
 * decode_chain, joined with "" into out (out->n reset first). d may be
 * NULL. AG_OK, AG_ENOMEM, or a Replace regex's match error. */
int ag_tk_decode(const ag_tk_decoder *d, const ag_tk_splits *tokens, ag_tk_buf *out, ag_error *err);
void ag_tk_decoder_free(ag_tk_decoder *d);

/* ---- post-processors (post_processors.c) ---------------------------------- */

typedef struct ag_tk_post ag_tk_post;

/* j: the "post_processor" object; null gives *out = NULL (adds nothing). */
int ag_tk_post_load(const char *path, json_t *j, ag_tk_post **out, ag_error *err);
/* The sequence's ids become the post-processed ids (special tokens added
 * when add_special). */
int ag_tk_post_process(const ag_tk_post *p, ag_tk_ids *ids, int add_special, ag_error *err);
/* HF's trim of one token's offsets (byte_level.rs, process_offsets): off as
 * in ag_tk_ids (4 values), i its index in the sequence. */
void ag_tk_trim_offsets(size_t *off, size_t i, int add_prefix_space);
void ag_tk_post_free(ag_tk_post *p);

#endif
