/* attngeom/tokenizer.h — Hugging Face compatible tokenizers.
 *
 * Gives exactly the token ids of a model folder's Hugging Face tokenizer for
 * the two families the supported models use:
 *   - byte-level BPE (GPT-2 and models reusing its tokenizer): GPT-2's
 *     pre-tokenizer regex, byte-to-unicode mapping, merges by rank;
 *   - WordPiece (BERT): BertNormalizer (clean text, CJK spacing, accent
 *     stripping, lower case), BertPreTokenizer, greedy longest-match-first
 *     with "##" continuations, [UNK] for words that cannot be covered.
 * Added tokens (e.g. "<|endoftext|>", "[CLS]") that appear literally in the
 * text are matched first (leftmost-longest, honouring lstrip/rstrip and
 * "normalized") and the post-processor's special tokens are added
 * (TemplateProcessing, BertProcessing, RobertaProcessing; ByteLevel adds none).
 *
 * Loading: `model_dir/tokenizer.json` when present (HF `tokenizers` format,
 * model.type "BPE" or "WordPiece"); otherwise `vocab.json` + `merges.txt`
 * (byte-level BPE) or `vocab.txt` (uncased-by-default BERT WordPiece, options
 * from `tokenizer_config.json`). `model_dir` may also name a tokenizer.json
 * file directly. Every file is size-checked before it is read. Loading takes
 * near-linear time whatever the files hold (keyed hash maps), and so does
 * encoding (an Aho–Corasick automaton for added tokens), except WordPiece
 * on words longer than max_input_chars_per_word's default; see
 * docs/engine.md. As Python
 * transformers' fast tokenizers do, keys present in tokenizer_config.json
 * override tokenizer.json: add_prefix_space (BPE), do_lower_case,
 * strip_accents, tokenize_chinese_chars (BERT).
 *
 * Fidelity: where transformers.js and HF tokenizers (Rust, used by Python
 * transformers) disagree, this follows Rust: U+0085 is whitespace in GPT-2's
 * regex (Oniguruma \s = White_Space), astral CJK ideographs are spaced by
 * BertNormalizer, lower-casing is per character (Greek capital sigma always
 * becomes σ, 'İ' becomes "i\u0307" when accents are kept). Not implemented:
 * an added token's single_word flag (treated as false), BPE dropout, and
 * model/normalizer/pre-tokenizer types other than the ones above.
 *
 * Ownership and threads: ag_tokenizer_load hands out a tokenizer owned by the
 * caller, released by ag_tokenizer_free (NULL allowed). A loaded tokenizer is
 * never modified: any number of threads may encode with it concurrently. The
 * id array returned by ag_tokenizer_encode belongs to the caller (free()).
 * Strings returned by ag_tokenizer_token are owned by the tokenizer and live
 * until ag_tokenizer_free.
 */
#ifndef ATTNGEOM_TOKENIZER_H
#define ATTNGEOM_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Caps against hostile files. */
#define AG_TOKENIZER_FILE_MAX ((size_t)64 * 1024 * 1024) /* bytes of one tokenizer file */
#define AG_TOKENIZER_ID_MAX   (1 << 22)                  /* token ids must be below this */

typedef struct ag_tokenizer ag_tokenizer;

typedef enum {
    AG_TOKENIZER_BPE = 1,       /* BPE (byte-level or with byte fallback) */
    AG_TOKENIZER_WORDPIECE = 2, /* WordPiece (BERT) */
    AG_TOKENIZER_UNIGRAM = 3,   /* Unigram (T5, XLM-R, ALBERT) */
    AG_TOKENIZER_WORDLEVEL = 4  /* WordLevel (a token per pre-token) */
} ag_tokenizer_kind;

/* Flags for ag_tokenizer_encode_ex. */
#define AG_TOKENIZE_NO_SPECIAL 1u  /* do not add the post-processor's special
                                      tokens (HF add_special_tokens=False) */

/* Load the tokenizer of a Hugging Face model folder (see above). On success
 * *out owns a new tokenizer. Errors (err->message names the file or field):
 *   AG_EIO          folder or file cannot be opened/read (missing folder)
 *   AG_ENOTFOUND    no tokenizer files in the folder, or merges.txt missing
 *                   next to vocab.json, or a required field/token is absent
 *   AG_EFORMAT      malformed JSON, vocab or merges (a vocab.txt or merges.txt
 *                   line that is not UTF-8 is named by its number)
 *   AG_ELIMIT       a file above AG_TOKENIZER_FILE_MAX or an id above
 *                   AG_TOKENIZER_ID_MAX
 *   AG_EUNSUPPORTED a model/normalizer/pre-tokenizer/post-processor type
 *                   this version does not implement
 *   AG_ENOMEM */
int ag_tokenizer_load(const char *model_dir, ag_tokenizer **out, ag_error *err);

/* Encode `len` bytes of UTF-8 `text` (need not be NUL-terminated; may be
 * NULL when len is 0) exactly as the HF tokenizer's encode() with its default
 * add_special_tokens=True. On success *ids is a malloc'ed array of *n ids
 * owned by the caller (free()); it may be NULL when *n is 0. On failure *ids
 * is NULL and *n is 0. Errors: AG_EINVAL (NULL arguments, invalid UTF-8 —
 * the message gives the byte offset), AG_ENOMEM, AG_ELIMIT. */
int ag_tokenizer_encode(const ag_tokenizer *tok, const char *text, size_t len,
                        int32_t **ids, size_t *n, ag_error *err);

/* As ag_tokenizer_encode, with flags (AG_TOKENIZE_*). */
int ag_tokenizer_encode_ex(const ag_tokenizer *tok, const char *text, size_t len,
                           unsigned flags, int32_t **ids, size_t *n, ag_error *err);

/* The vocabulary string of `id` as HF's convert_ids_to_tokens gives it
 * (byte-level BPE tokens in their mapped form, e.g. "\xC4\xA0the" = "Ġthe";
 * continuation pieces with "##"), or NULL for an unknown id. Owned by tok. */
const char *ag_tokenizer_token(const ag_tokenizer *tok, int32_t id);

/* Id of a token string (vocabulary or added token), or -1. */
int32_t ag_tokenizer_token_id(const ag_tokenizer *tok, const char *token);

/* One more than the largest id (vocabulary and added tokens). */
size_t ag_tokenizer_vocab_size(const ag_tokenizer *tok);

/* AG_TOKENIZER_BPE or AG_TOKENIZER_WORDPIECE. */
ag_tokenizer_kind ag_tokenizer_get_kind(const ag_tokenizer *tok);

/* Release a tokenizer. NULL is allowed. */
void ag_tokenizer_free(ag_tokenizer *tok);

#ifdef __cplusplus
}
#endif
#endif
