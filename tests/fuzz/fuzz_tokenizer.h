/* fuzz_tokenizer.h — what the tokenizer-file harnesses do with a tokenizer
 * that loaded: encode fixed ASCII / UTF-8 / special-token texts (and one
 * from the input) with and without special tokens; every id must be in
 * range and, where the harness says so, name a token. Public API only. */
#ifndef ATTNGEOM_FUZZ_TOKENIZER_H
#define ATTNGEOM_FUZZ_TOKENIZER_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attngeom.h"

static const char *const fz_texts[] = {
    "Hello, world! It's 2024.",
    "  leading and trailing spaces  \n\t",
    "caf\xC3\xA9 na\xC3\xAFve \xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x98\x80 \xCE\xA3\xCE\xB1",
    "[CLS] [SEP] [UNK] [MASK] <|endoftext|> <s></s> <unk>",
    "a", "", "##ing unaffable don't I'll",
    "\xE2\x80\x85\xC2\xA0\xC2\x85 x\xCC\x81 \xC4\xB0",
    /* Metaspace / byte fallback / Precompiled material */
    "\xE2\x96\x81 <0x41> \r\n \xEF\xAC\x81\xCC\x81 \xEF\xBD\x88\xEF\xBD\x89 \x01\x7F 12345 \xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD",
};

/* Encode text both ways; aborts on an id out of range (or without a token
 * when `named`) and on a failure that is not reported properly. Invalid
 * UTF-8 must be AG_EINVAL; AG_EFORMAT is a file whose model cannot cover
 * the text (no unk token: Rust fails the encode too). */
static inline void fz_encode_check(const ag_tokenizer *tok, const char *text, size_t len, int named)
{
    for (unsigned flags = 0; flags <= AG_TOKENIZE_NO_SPECIAL; flags++) {
        int32_t *ids = NULL;
        size_t n = 0;
        ag_error err = {0};
        int rc = ag_tokenizer_encode_ex(tok, text, len, flags, &ids, &n, &err);
        if (rc == AG_OK) {
            for (size_t i = 0; i < n; i++) {
                if (ids[i] < 0 || ids[i] >= AG_TOKENIZER_ID_MAX)
                    abort(); /* ids are capped at load */
                const char *s = ag_tokenizer_token(tok, ids[i]);
                if (named && !s)
                    abort();
                if (s)
                    (void)ag_tokenizer_token_id(tok, s);
            }
        } else if (ids || n || err.status != rc || !err.message[0] ||
                   (rc != AG_EINVAL && rc != AG_ENOMEM && rc != AG_ELIMIT && rc != AG_EFORMAT)) {
            abort();
        }
        free(ids);
    }
}

static inline void fz_exercise_tokenizer(const ag_tokenizer *tok, int named)
{
    (void)ag_tokenizer_vocab_size(tok);
    (void)ag_tokenizer_get_kind(tok);
    for (size_t k = 0; k < sizeof fz_texts / sizeof *fz_texts; k++)
        fz_encode_check(tok, fz_texts[k], strlen(fz_texts[k]), named);
}

/* The tokenizer of dir, or NULL when loading fails (which must be reported
 * properly: a status, a message, no tokenizer). */
static inline ag_tokenizer *fz_load(const char *dir)
{
    ag_tokenizer *tok = NULL;
    ag_error err = {0};
    int rc = ag_tokenizer_load(dir, &tok, &err);
    if (rc != AG_OK && (tok || err.status != rc || !err.message[0]))
        abort();
    return tok;
}

/* Inputs of several files are split on FZ_SEP. */
#define FZ_SEP "\n@@@\n"

/* The next part of [*p, end) up to FZ_SEP (or the end); *p moves past it,
 * NULL after the last part. 0 when there is no part left. */
static inline int fz_next_part(const uint8_t **p, const uint8_t *end, const uint8_t **part, size_t *len)
{
    if (!*p)
        return 0;
    *part = *p;
    const uint8_t *s = memmem(*p, (size_t)(end - *p), FZ_SEP, sizeof FZ_SEP - 1);
    *len = (size_t)((s ? s : end) - *p);
    *p = s ? s + sizeof FZ_SEP - 1 : NULL;
    return 1;
}

#endif
