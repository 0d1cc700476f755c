/* attngeom/tokenizer.h — Hugging Face compatible tokenizers.
 *
 * Gives exactly the token ids of a model folder's Hugging Face tokenizer, as
 * the Rust `tokenizers` library (Python transformers' fast tokenizers)
 * computes them, for the tokenizer.json files of GPT-2, BERT, RoBERTa,
 * LLaMA-2 / TinyLlama / Mistral, LLaMA-3, Qwen2, GPT-NeoX / Pythia,
 * StarCoder, Gemma, T5, XLM-R, ALBERT and the like. The pipeline of the file
 * is run as written (docs/tokenizers.md lists every component and family):
 *   - added tokens (special, normalized, lstrip, rstrip, single_word),
 *     matched first, leftmost-longest;
 *   - normalizers Sequence, NFC, NFD, NFKC, NFKD, Lowercase, Strip,
 *     StripAccents, Replace, Prepend, BertNormalizer, Precompiled
 *     (SentencePiece charsmaps), Nmt, ByteLevel;
 *   - pre-tokenizers Sequence, ByteLevel, Split (Oniguruma regexes, every
 *     behaviour, invert), Metaspace, Whitespace, WhitespaceSplit,
 *     BertPreTokenizer, Punctuation, Digits, CharDelimiterSplit, FixedLength;
 *   - models BPE (byte-level, byte_fallback, fuse_unk, continuing/end-of-word
 *     affixes, ignore_merges), WordPiece, WordLevel, Unigram;
 *   - post-processors TemplateProcessing, BertProcessing, RobertaProcessing,
 *     ByteLevel, Sequence;
 *   - decoders ByteLevel, Metaspace, WordPiece, ByteFallback, Fuse, Strip,
 *     Replace, Sequence, BPEDecoder, CTC (ag_tokenizer_decode).
 *
 * Loading: `model_dir/tokenizer.json` when present; otherwise `vocab.json` +
 * `merges.txt` (byte-level BPE, as GPT2Converter builds it) or `vocab.txt`
 * (BERT WordPiece, as BertConverter builds it, options from
 * tokenizer_config.json). `model_dir` may also name a tokenizer.json file
 * directly. As Python transformers' fast tokenizers do, tokenizer_config.json
 * overrides tokenizer.json where present: add_prefix_space (ByteLevel),
 * do_lower_case / strip_accents / tokenize_chinese_chars (BertNormalizer),
 * and for LlamaTokenizer, CodeLlamaTokenizer, GemmaTokenizer and
 * GPTNeoXTokenizer the bos/eos template of add_bos_token / add_eos_token.
 * Every file is size-checked before it is read. Loading and encoding take
 * near-linear time whatever the files hold (keyed hash maps, an
 * Aho–Corasick automaton for added tokens, heap-based BPE); see
 * docs/tokenizers.md, "Hostile folders".
 *
 * Fidelity: where transformers.js and the Rust library disagree
 * (Precompiled, Digits, Unicode whitespace and word classes, Punctuation,
 * lower-casing, ...), this follows Rust; docs/tokenizers.md lists the
 * differences. Not implemented: pair sequences, BPE dropout.
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
 * *out owns a new tokenizer. Errors (one line: err->message names the file
 * and the component or field):
 *   AG_EIO          folder or file cannot be opened/read (missing folder)
 *   AG_ENOTFOUND    no tokenizer files in the folder, merges.txt missing
 *                   next to vocab.json, or a bos/eos token that
 *                   tokenizer_config.json asks for is not a token
 *   AG_EFORMAT      malformed JSON, vocabulary, merges (also merges naming
 *                   tokens not in the vocabulary), regex, charsmap or
 *                   component field (a vocab.txt or merges.txt line that is
 *                   not UTF-8 is named by its number)
 *   AG_ELIMIT       a file above AG_TOKENIZER_FILE_MAX or an id above
 *                   AG_TOKENIZER_ID_MAX
 *   AG_EUNSUPPORTED a model/normalizer/pre-tokenizer/post-processor type
 *                   (or field value) this version does not implement
 *   AG_ENOMEM */
AG_EXPORT int ag_tokenizer_load(const char *model_dir, ag_tokenizer **out, ag_error *err);

/* Encode `len` bytes of UTF-8 `text` (need not be NUL-terminated; may be
 * NULL when len is 0) exactly as the HF tokenizer's encode() with its default
 * add_special_tokens=True. On success *ids is a malloc'ed array of *n ids
 * owned by the caller (free()); it may be NULL when *n is 0. On failure *ids
 * is NULL and *n is 0. Errors: AG_EINVAL (NULL arguments, invalid UTF-8 —
 * the message gives the byte offset), AG_EFORMAT (the model cannot cover the
 * text and its file names no usable unknown token: Rust fails too),
 * AG_ENOMEM, AG_ELIMIT (a Split regex past PCRE2's match limit). */
AG_EXPORT int ag_tokenizer_encode(const ag_tokenizer *tok, const char *text, size_t len,
                                  int32_t **ids, size_t *n, ag_error *err);

/* As ag_tokenizer_encode, with flags (AG_TOKENIZE_*). */
AG_EXPORT int ag_tokenizer_encode_ex(const ag_tokenizer *tok, const char *text, size_t len,
                                     unsigned flags, int32_t **ids, size_t *n, ag_error *err);

/* As ag_tokenizer_encode_ex, with each token's span in the text: Hugging
 * Face's return_offsets_mapping (the Rust library's encode_char_offsets):
 * (*offsets)[2 i], (*offsets)[2 i + 1] are token i's start and end in
 * Unicode code points of `text` (Python str indices), the span of the
 * original characters its normalized bytes come from, trimmed of
 * surrounding spaces where the post-processor's trim_offsets says so, and
 * (0, 0) for the special tokens the post-processor adds. A normalizer whose
 * alignment is not tracked on this text (Precompiled's whole-cluster rules
 * or a deletion of the first character, a Replace of several characters:
 * docs/tokenizers.md, "Offsets"): AG_EUNSUPPORTED naming it, never a wrong
 * span. On success *ids and
 * *offsets (2 n values) are malloc'ed and owned by the caller (free()).
 * Other errors as ag_tokenizer_encode. */
AG_EXPORT int ag_tokenizer_encode_offsets(const ag_tokenizer *tok, const char *text, size_t len, unsigned flags,
                                          int32_t **ids, size_t **offsets, size_t *n, ag_error *err);

/* The vocabulary string of `id` as HF's convert_ids_to_tokens gives it
 * (an added token's content first, then the model's: byte-level BPE tokens
 * in their mapped form, e.g. "\xC4\xA0the" = "Ġthe"; "##" continuations;
 * "▁" word starts; "<0x41>" byte pieces), or NULL for an unknown id. Owned
 * by tok. */
AG_EXPORT const char *ag_tokenizer_token(const ag_tokenizer *tok, int32_t id);

/* Id of a token string (vocabulary or added token), or -1. */
AG_EXPORT int32_t ag_tokenizer_token_id(const ag_tokenizer *tok, const char *token);

/* One more than the largest id (vocabulary and added tokens). */
AG_EXPORT size_t ag_tokenizer_vocab_size(const ag_tokenizer *tok);

/* 1 when id is a special token: an added token with "special": true in
 * tokenizer.json (for vocab.json/vocab.txt folders, the special tokens the
 * converters add: BERT's [PAD] [UNK] [CLS] [SEP] [MASK], GPT-2's bos, eos,
 * unk, pad and tokenizer_config.json's special added_tokens_decoder); 0
 * otherwise, also for an unknown id or tok NULL. Hugging Face's
 * tokenizer.all_special_ids for the tokenizers this library loads. */
AG_EXPORT int ag_tokenizer_is_special(const ag_tokenizer *tok, int32_t id);

/* ids[n] as the tokenizer's post-processor frames a text's tokens: its
 * special tokens added (BOS, CLS before; EOS, SEP after), as
 * ag_tokenizer_encode does after the model and as transformers'
 * build_inputs_with_special_tokens does; the ids unchanged when it adds
 * none. *out (malloc'd, *n_out ids; NULL for none) is the caller's:
 * free(). Errors: AG_EINVAL (NULL arguments), AG_ENOMEM. */
AG_EXPORT int ag_tokenizer_with_special(const ag_tokenizer *tok, const int32_t *ids, size_t n,
                                        int32_t **out, size_t *n_out, ag_error *err);

/* The model's kind (AG_TOKENIZER_*). */
AG_EXPORT ag_tokenizer_kind ag_tokenizer_get_kind(const ag_tokenizer *tok);

/* Flags for ag_tokenizer_decode. */
#define AG_DECODE_SKIP_SPECIAL 1u /* leave special added tokens out (HF
                                     skip_special_tokens=True) */

/* The text of n token ids, as the Rust tokenizers library's
 * Tokenizer::decode(ids, skip_special_tokens) gives it (Python: the fast
 * tokenizer's backend_tokenizer.decode; transformers' decode() may then
 * also apply clean_up_tokenization_spaces, which this does not): each id's
 * token string (ag_tokenizer_token; ids without one are left out, and
 * special added tokens too with AG_DECODE_SKIP_SPECIAL) through the file's
 * "decoder" (docs/tokenizers.md, "Decoders"), or joined with spaces when it
 * has none. On success *text is a malloc'ed NUL-terminated UTF-8 string
 * owned by the caller (free()). Errors: AG_EINVAL (NULL arguments),
 * AG_ENOMEM. */
AG_EXPORT int ag_tokenizer_decode(const ag_tokenizer *tok, const int32_t *ids, size_t n, unsigned flags,
                                  char **text, ag_error *err);

/* A readable string for each of n token ids (plot labels, tokenize's
 * "strings"): the first is decode([ids[0]]); every other is the text that
 * ids[i] adds after its predecessor, decode([ids[i-1], ids[i]]) less its
 * prefix decode([ids[i-1]]) (Hugging Face's DecodeStream with a one-token
 * window), or decode([ids[i]]) when that is not a prefix. So GPT-2's "Ġcat"
 * is " cat", BERT's "##ing" after "play" is "ing", a Metaspace "▁the" is
 * "the" first and " the" later; a byte token that is part of a character is
 * U+FFFD. No token is skipped. On success *strings is ONE malloc'ed block
 * (free() it once) holding n pointers to NUL-terminated strings, then a
 * NULL. Errors: AG_EINVAL (NULL arguments), AG_ENOMEM. */
AG_EXPORT int ag_tokenizer_token_strings(const ag_tokenizer *tok, const int32_t *ids, size_t n, char ***strings,
                                         ag_error *err);

/* Release a tokenizer. NULL is allowed. */
AG_EXPORT void ag_tokenizer_free(ag_tokenizer *tok);

#ifdef __cplusplus
}
#endif
#endif
