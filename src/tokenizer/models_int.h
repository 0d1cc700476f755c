/* Internal prefix: ag_tk (module src/tokenizer/: ag_tk_ and ag_tkm_). */
/* tokenizer/models_int.h — what the model files share (models.c dispatches
 * to model_bpe.c, model_wordpiece.c, model_unigram.c). Private to them.
 *
 * Every model keeps its vocabulary in an ag_tkm_vocab: a keyed hash map
 * token -> id (src/base/hashmap.h: a file choosing its tokens cannot make loading
 * quadratic) and the reverse array id -> token. */
#ifndef ATTNGEOM_TK_MODELS_INT_H
#define ATTNGEOM_TK_MODELS_INT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "attngeom/core.h"
#include "base/hashmap.h"
#include "json_scan.h"
#include "tk.h"

typedef struct {
    agi_strmap map;   /* token -> id */
    const char **tok; /* id -> token (the map's copies); NULL for an id no token has */
    size_t n;         /* one more than the largest id */
    size_t cap;
    size_t maxlen;    /* bytes of the longest token */
} ag_tkm_vocab;

/* Add token -> id. When `replace`, a token seen before takes the new id
 * (Unigram's list: the later entry wins, as Rust's HashMap insert); else a
 * second token with an id already taken is an error (AG_EFORMAT naming
 * `field`), as is an id outside [0, AG_TOKENIZER_ID_MAX) (AG_ELIMIT). */
int ag_tkm_vocab_add(ag_tkm_vocab *v, const char *path, const char *field, const char *key,
                     size_t len, long long id, int replace, ag_error *err);
/* A JSON object token -> id (BPE, WordPiece, WordLevel). */
int ag_tkm_vocab_from_object(ag_tkm_vocab *v, const char *path, json_t *obj, ag_error *err);
/* The same from a scanned model.vocab (json_scan.h), with jansson's
 * meaning of a token listed twice: its first place, its last id. */
int ag_tkm_vocab_from_scan(ag_tkm_vocab *v, const char *path, const ag_tk_scan *sc, ag_error *err);
void ag_tkm_vocab_free(ag_tkm_vocab *v);

static inline int ag_tkm_vocab_get(const ag_tkm_vocab *v, const char *s, size_t n, int32_t *id)
{
    return agi_strmap_get(&v->map, s, n, id);
}

/* Optional fields of the model object; absent or null keep the default.
 * A value of another type is AG_EFORMAT naming "model.KEY". */
int ag_tkm_opt_bool(const char *path, json_t *model, const char *key, int *out, ag_error *err);
/* *out: a copy of the string, or NULL when absent/null and dflt is NULL. */
int ag_tkm_opt_string(const char *path, json_t *model, const char *key, const char *dflt,
                      char **out, ag_error *err);

/* The ids of the byte tokens "<0xNN>" (upper-case hex), -1 when absent. */
void ag_tkm_byte_ids(const ag_tkm_vocab *v, int32_t ids[256]);

/* Bytes of the UTF-8 sequence led by byte c (1 for a stray byte). */
static inline size_t ag_tkm_utf8_len(unsigned char c)
{
    return c < 0xC0 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}

/* ---- the models ------------------------------------------------------------ */

typedef struct ag_tkm_bpe ag_tkm_bpe;
typedef struct ag_tkm_wordpiece ag_tkm_wordpiece;
typedef struct ag_tkm_unigram ag_tkm_unigram;

/* Each reads its fields of the "model" object into a new model sharing the
 * vocabulary v (filled by the loader for BPE/WordPiece, by the model itself
 * for Unigram, whose vocabulary is a list). */
/* sc (may be NULL): model.merges when the scan holds them (json_scan.h). */
int ag_tkm_bpe_load(const char *path, json_t *j, const ag_tk_scan *sc, ag_tkm_vocab *v, ag_tkm_bpe **out,
                    ag_error *err);
int ag_tkm_bpe_tokenize(const ag_tkm_bpe *b, const ag_tkm_vocab *v, const char *path,
                        const char *s, size_t n, ag_tk_ids *out, ag_error *err);
void ag_tkm_bpe_free(ag_tkm_bpe *b);

int ag_tkm_wordpiece_load(const char *path, json_t *j, const ag_tkm_vocab *v,
                          ag_tkm_wordpiece **out, ag_error *err);
int ag_tkm_wordpiece_tokenize(const ag_tkm_wordpiece *w, const ag_tkm_vocab *v, const char *path,
                              const char *s, size_t n, ag_tk_ids *out, ag_error *err);
void ag_tkm_wordpiece_free(ag_tkm_wordpiece *w);

int ag_tkm_unigram_load(const char *path, json_t *j, ag_tkm_vocab *v, ag_tkm_unigram **out,
                        ag_error *err);
int ag_tkm_unigram_tokenize(const ag_tkm_unigram *u, const ag_tkm_vocab *v, const char *path,
                            const char *s, size_t n, ag_tk_ids *out, ag_error *err);
void ag_tkm_unigram_free(ag_tkm_unigram *u);
/* The unk id, -1 when none. */
int32_t ag_tkm_unigram_unk_id(const ag_tkm_unigram *u);

#endif
