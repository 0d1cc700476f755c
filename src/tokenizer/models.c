/* tokenizer/models.c — the model stage of the pipeline (tk.h): reads the
 * "model" object of tokenizer.json and dispatches by its type to BPE
 * (model_bpe.c), WordPiece (model_wordpiece.c) and Unigram
 * (model_unigram.c); WordLevel, a plain lookup, lives here. Also the
 * vocabulary and option helpers the model files share (models_int.h). */
#include <stdlib.h>
#include <string.h>

#include "attngeom/tokenizer.h"
#include "models_int.h"

/* ---- vocabulary ------------------------------------------------------------ */

static int vocab_set_id(ag_tkm_vocab *v, size_t id, const char *tok)
{
    if (id >= v->cap) {
        size_t nc = v->cap ? v->cap : 256;
        while (nc <= id)
            nc *= 2;
        const char **nt = realloc(v->tok, nc * sizeof *nt);
        if (!nt)
            return AG_ENOMEM;
        v->tok = nt;
        v->cap = nc;
    }
    for (; v->n <= id; v->n++)
        v->tok[v->n] = NULL;
    v->tok[id] = tok;
    return AG_OK;
}

int ag_tkm_vocab_add(ag_tkm_vocab *v, const char *path, const char *field, const char *key,
                     size_t len, long long id, int replace, ag_error *err)
{
    int shown = (int)(len > 40 ? 40 : len);
    if (id < 0 || id >= AG_TOKENIZER_ID_MAX)
        return ag_error_set(err, id < 0 ? AG_EFORMAT : AG_ELIMIT,
                            "%s: %s: id %lld of token '%.*s' is out of range [0, %d)", path, field,
                            id, shown, key, AG_TOKENIZER_ID_MAX);
    if (!replace && (size_t)id < v->n && v->tok[id])
        return ag_error_set(err, AG_EFORMAT, "%s: %s: tokens '%.40s' and '%.*s' both have id %lld",
                            path, field, v->tok[id], shown, key, id);
    const char *stored;
    int rc = agi_strmap_put(&v->map, key, len, (int32_t)id, &stored);
    if (rc == AG_OK)
        rc = vocab_set_id(v, (size_t)id, stored);
    if (rc != AG_OK)
        return ag_error_set(err, rc, "%s: %s: %s", path, field,
                            rc == AG_ELIMIT ? "token too long" : "out of memory");
    if (len > v->maxlen)
        v->maxlen = len;
    return AG_OK;
}

int ag_tkm_vocab_from_object(ag_tkm_vocab *v, const char *path, json_t *obj, ag_error *err)
{
    if (!json_is_object(obj))
        return ag_error_set(err, AG_EFORMAT, "%s: model.vocab is missing or not an object", path);
    const char *k;
    size_t len;
    json_t *val;
    /* the map sized once for the whole vocabulary (150 000 tokens and more) */
    if (agi_strmap_reserve(&v->map, json_object_size(obj)) != AG_OK)
        return ag_error_set(err, AG_ENOMEM, "%s: model.vocab: out of memory", path);
    /* keylen: a token may hold "\u0000" */
    json_object_keylen_foreach(obj, k, len, val) {
        if (!json_is_integer(val))
            return ag_error_set(err, AG_EFORMAT,
                                "%s: model.vocab: id of token '%.40s' is not an integer", path, k);
        int rc = ag_tkm_vocab_add(v, path, "model.vocab", k, len,
                                  (long long)json_integer_value(val), 0, err);
        if (rc != AG_OK)
            return rc;
    }
    return AG_OK;
}

/* A scanned vocabulary as jansson's object would hold it: a token listed
 * twice at its first place with its last id, every check of
 * ag_tkm_vocab_add in that order (the exact path; a second pass). */
static int vocab_from_scan_exact(ag_tkm_vocab *v, const char *path, const ag_tk_scan *sc, ag_error *err)
{
    agi_strmap last = {0}, seen = {0};
    int rc = AG_OK;
    for (size_t i = 0; rc == AG_OK && i < sc->n_vocab; i++)
        rc = agi_strmap_put(&last, sc->vocab_key[i].s, sc->vocab_key[i].n, (int32_t)i, NULL);
    if (rc != AG_OK)
        rc = ag_error_set(err, rc, "%s: model.vocab: out of memory", path);
    for (size_t i = 0; rc == AG_OK && i < sc->n_vocab; i++) {
        const ag_tk_str *k = &sc->vocab_key[i];
        int32_t at = (int32_t)i, dup;
        if (agi_strmap_get(&seen, k->s, k->n, &dup))
            continue;
        agi_strmap_get(&last, k->s, k->n, &at);
        if (agi_strmap_put(&seen, k->s, k->n, 0, NULL) != AG_OK)
            rc = ag_error_set(err, AG_ENOMEM, "%s: model.vocab: out of memory", path);
        else
            rc = ag_tkm_vocab_add(v, path, "model.vocab", k->s, k->n, sc->vocab_id[at], 0, err);
    }
    agi_strmap_free(&last);
    agi_strmap_free(&seen);
    return rc;
}

int ag_tkm_vocab_from_scan(ag_tkm_vocab *v, const char *path, const ag_tk_scan *sc, ag_error *err)
{
    if (agi_strmap_reserve(&v->map, sc->n_vocab) != AG_OK)
        return ag_error_set(err, AG_ENOMEM, "%s: model.vocab: out of memory", path);
    /* the common case in one pass: every token once, every id once */
    int rc = AG_OK;
    for (size_t i = 0; rc == AG_OK && i < sc->n_vocab; i++)
        rc = ag_tkm_vocab_add(v, path, "model.vocab", sc->vocab_key[i].s, sc->vocab_key[i].n, sc->vocab_id[i], 1,
                              err);
    size_t ids = 0;
    for (size_t i = 0; rc == AG_OK && i < v->n; i++)
        ids += v->tok[i] != NULL;
    if (rc == AG_OK && v->map.count == sc->n_vocab && ids == sc->n_vocab)
        return AG_OK;
    ag_tkm_vocab_free(v);
    if (err)
        *err = (ag_error){0};
    return vocab_from_scan_exact(v, path, sc, err);
}

void ag_tkm_vocab_free(ag_tkm_vocab *v)
{
    agi_strmap_free(&v->map);
    free(v->tok);
    memset(v, 0, sizeof *v);
}

void ag_tkm_byte_ids(const ag_tkm_vocab *v, int32_t ids[256])
{
    static const char hex[] = "0123456789ABCDEF";
    for (int b = 0; b < 256; b++) {
        char code[6] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
        if (!ag_tkm_vocab_get(v, code, sizeof code, &ids[b]))
            ids[b] = -1;
    }
}

/* ---- options --------------------------------------------------------------- */

int ag_tkm_opt_bool(const char *path, json_t *model, const char *key, int *out, ag_error *err)
{
    json_t *x = json_object_get(model, key);
    if (!x || json_is_null(x))
        return AG_OK;
    if (!json_is_boolean(x))
        return ag_error_set(err, AG_EFORMAT, "%s: model.%s is not true or false", path, key);
    *out = json_is_true(x);
    return AG_OK;
}

int ag_tkm_opt_string(const char *path, json_t *model, const char *key, const char *dflt,
                      char **out, ag_error *err)
{
    json_t *x = json_object_get(model, key);
    const char *s = dflt;
    size_t n = dflt ? strlen(dflt) : 0;
    *out = NULL;
    if (x && !json_is_null(x)) {
        if (!json_is_string(x))
            return ag_error_set(err, AG_EFORMAT, "%s: model.%s is not a string", path, key);
        s = json_string_value(x);
        n = json_string_length(x);
        if (memchr(s, '\0', n))
            return ag_error_set(err, AG_EFORMAT, "%s: model.%s holds a NUL character", path, key);
    }
    if (!s)
        return AG_OK;
    *out = strdup(s);
    return *out ? AG_OK : ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
}

/* ---- the model ------------------------------------------------------------- */

typedef enum { MODEL_BPE, MODEL_WORDPIECE, MODEL_WORDLEVEL, MODEL_UNIGRAM } model_type;

static const char *const TYPE_NAMES[] = {"BPE", "WordPiece", "WordLevel", "Unigram"};

struct ag_tk_model {
    model_type type;
    char *path;          /* for messages */
    ag_tkm_vocab vocab;
    ag_tkm_bpe *bpe;
    ag_tkm_wordpiece *wordpiece;
    ag_tkm_unigram *unigram;
    char *wordlevel_unk; /* WordLevel's unk_token */
};

/* Files written before "type" existed: Rust tries each model's fields in
 * turn (untagged); these are the fields that tell them apart. */
static model_type guess_type(json_t *j)
{
    if (json_object_get(j, "merges"))
        return MODEL_BPE;
    if (json_is_array(json_object_get(j, "vocab")))
        return MODEL_UNIGRAM;
    if (json_object_get(j, "continuing_subword_prefix") ||
        json_object_get(j, "max_input_chars_per_word"))
        return MODEL_WORDPIECE;
    return MODEL_WORDLEVEL;
}

static int model_type_of(const char *path, json_t *j, model_type *t, ag_error *err)
{
    json_t *ty = json_object_get(j, "type");
    if (!ty || json_is_null(ty)) {
        *t = guess_type(j);
        return AG_OK;
    }
    if (!json_is_string(ty))
        return ag_error_set(err, AG_EFORMAT, "%s: model.type is not a string", path);
    for (size_t i = 0; i < sizeof TYPE_NAMES / sizeof *TYPE_NAMES; i++)
        if (!strcmp(json_string_value(ty), TYPE_NAMES[i])) {
            *t = (model_type)i;
            return AG_OK;
        }
    return ag_error_set(err, AG_EUNSUPPORTED, "%s: model type '%.60s' is not supported", path,
                        json_string_value(ty));
}

/* model.vocab as an object token -> id: scanned, or jansson's. */
static int vocab_of(ag_tk_model *m, const char *path, json_t *j, const ag_tk_scan *sc, ag_error *err)
{
    return sc && sc->has_vocab ? ag_tkm_vocab_from_scan(&m->vocab, path, sc, err)
                               : ag_tkm_vocab_from_object(&m->vocab, path, json_object_get(j, "vocab"), err);
}

static int load_typed(ag_tk_model *m, const char *path, json_t *j, const ag_tk_scan *sc, ag_error *err)
{
    switch (m->type) {
    case MODEL_BPE: {
        int rc = vocab_of(m, path, j, sc, err);
        return rc != AG_OK ? rc : ag_tkm_bpe_load(path, j, sc, &m->vocab, &m->bpe, err);
    }
    case MODEL_WORDPIECE: {
        int rc = vocab_of(m, path, j, sc, err);
        return rc != AG_OK ? rc : ag_tkm_wordpiece_load(path, j, &m->vocab, &m->wordpiece, err);
    }
    case MODEL_WORDLEVEL: {
        int rc = vocab_of(m, path, j, sc, err);
        return rc != AG_OK ? rc
                           : ag_tkm_opt_string(path, j, "unk_token", "<unk>", &m->wordlevel_unk, err);
    }
    case MODEL_UNIGRAM:
        return ag_tkm_unigram_load(path, j, &m->vocab, &m->unigram, err);
    }
    return ag_error_set(err, AG_EINVAL, "%s: bad model type", path);
}

int ag_tk_model_load(const char *path, json_t *j, ag_tk_model **out, ag_error *err)
{
    return ag_tk_model_load_scanned(path, j, NULL, out, err);
}

int ag_tk_model_load_scanned(const char *path, json_t *j, const ag_tk_scan *sc, ag_tk_model **out, ag_error *err)
{
    *out = NULL;
    if (!json_is_object(j))
        return ag_error_set(err, AG_EFORMAT, "%s: model is missing or not an object", path);
    model_type t = MODEL_BPE;
    int rc = model_type_of(path, j, &t, err);
    if (rc != AG_OK)
        return rc;
    ag_tk_model *m = calloc(1, sizeof *m);
    if (!m || !(m->path = strdup(path))) {
        free(m);
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
    }
    m->type = t;
    rc = load_typed(m, path, j, sc, err);
    if (rc != AG_OK) {
        ag_tk_model_free(m);
        return rc;
    }
    *out = m;
    return AG_OK;
}

/* WordLevel: the whole piece, else unk (Rust: WordLevel::tokenize). */
static int wordlevel_tokenize(const ag_tk_model *m, const char *s, size_t n, ag_tk_ids *out,
                              ag_error *err)
{
    int32_t id;
    if (!ag_tkm_vocab_get(&m->vocab, s, n, &id) &&
        !ag_tkm_vocab_get(&m->vocab, m->wordlevel_unk, strlen(m->wordlevel_unk), &id))
        return ag_error_set(err, AG_EFORMAT,
                            "%s: model.unk_token '%.40s' is not in the vocabulary (needed for '%.*s')",
                            m->path, m->wordlevel_unk, (int)(n > 40 ? 40 : n), s);
    return ag_tk_ids_push_span(out, id, 0, n) == AG_OK
               ? AG_OK
               : ag_error_set(err, AG_ENOMEM, "out of memory while tokenizing");
}

int ag_tk_model_tokenize(const ag_tk_model *m, const char *s, size_t n, ag_tk_ids *out,
                         ag_error *err)
{
    switch (m->type) {
    case MODEL_BPE:
        return ag_tkm_bpe_tokenize(m->bpe, &m->vocab, m->path, s, n, out, err);
    case MODEL_WORDPIECE:
        return ag_tkm_wordpiece_tokenize(m->wordpiece, &m->vocab, m->path, s, n, out, err);
    case MODEL_WORDLEVEL:
        return wordlevel_tokenize(m, s, n, out, err);
    case MODEL_UNIGRAM:
        return ag_tkm_unigram_tokenize(m->unigram, &m->vocab, m->path, s, n, out, err);
    }
    return ag_error_set(err, AG_EINVAL, "%s: bad model type", m->path);
}

int ag_tk_model_token_to_id(const ag_tk_model *m, const char *s, size_t n, int32_t *id)
{
    return ag_tkm_vocab_get(&m->vocab, s, n, id);
}

const char *ag_tk_model_id_to_token(const ag_tk_model *m, int32_t id)
{
    return id >= 0 && (size_t)id < m->vocab.n ? m->vocab.tok[id] : NULL;
}

size_t ag_tk_model_vocab_size(const ag_tk_model *m)
{
    return m->vocab.n;
}

const char *ag_tk_model_type(const ag_tk_model *m)
{
    return TYPE_NAMES[m->type];
}

int ag_tk_model_unk_is_text(const ag_tk_model *m, int32_t id)
{
    return m->unigram && id >= 0 && id == ag_tkm_unigram_unk_id(m->unigram);
}

void ag_tk_model_free(ag_tk_model *m)
{
    if (!m)
        return;
    ag_tkm_bpe_free(m->bpe);
    ag_tkm_wordpiece_free(m->wordpiece);
    ag_tkm_unigram_free(m->unigram);
    ag_tkm_vocab_free(&m->vocab);
    free(m->wordlevel_unk);
    free(m->path);
    free(m);
}
