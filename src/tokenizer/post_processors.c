/* tokenizer/post_processors.c — the special tokens around a single
 * sequence, as Hugging Face's post-processors (Rust) add them.
 *
 * Every supported processor is a template of pieces — the sequence, or a
 * special token of one or more ids: TemplateProcessing is one as written,
 * BertProcessing and RobertaProcessing are "cls $A sep", ByteLevel is none
 * (it only moves offsets), Sequence applies its processors in turn. As in
 * Rust's TemplateProcessing, without add_special the sequence pieces are
 * still laid out and the special tokens left out. */
#include <stdlib.h>
#include <string.h>

#include "attngeom/tokenizer.h"
#include "tk.h"

typedef struct {
    int32_t *ids; /* NULL for the sequence */
    size_t n;
} piece;

typedef struct {
    piece *v;
    size_t n, cap;
    int trim, prefix; /* offsets: trim_offsets and add_prefix_space first
                         (ByteLevel, RobertaProcessing) */
} template;

struct ag_tk_post {
    template *v; /* applied in order */
    size_t n, cap;
};

static void template_free(template *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->v[i].ids);
    free(t->v);
}

void ag_tk_post_free(ag_tk_post *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++)
        template_free(&p->v[i]);
    free(p->v);
    free(p);
}

static template *new_template(ag_tk_post *p)
{
    if (AGB_VEC_RESERVE(p->v, p->cap, p->n + 1) != 0)
        return NULL;
    template *t = &p->v[p->n++];
    memset(t, 0, sizeof *t);
    return t;
}

/* Appends a piece; ids (n of them, or NULL for the sequence) are copied. */
static int add_piece(template *t, const int32_t *ids, size_t n)
{
    if (AGB_VEC_RESERVE(t->v, t->cap, t->n + 1) != 0)
        return AG_ENOMEM;
    piece pc = {NULL, n};
    if (ids) {
        pc.ids = malloc((n ? n : 1) * sizeof *pc.ids);
        if (!pc.ids)
            return AG_ENOMEM;
        memcpy(pc.ids, ids, n * sizeof *ids);
    }
    t->v[t->n++] = pc;
    return AG_OK;
}

static int oom(const char *path, ag_error *err)
{
    return ag_error_set(err, AG_ENOMEM, "%s: out of memory", path);
}

static int valid_id(json_t *v, int32_t *id)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= AG_TOKENIZER_ID_MAX)
        return 0;
    *id = (int32_t)json_integer_value(v);
    return 1;
}

/* BertProcessing / RobertaProcessing: "cls": ["[CLS]", 101], "sep" too. */
/* trim_offsets and add_prefix_space (both true by default, as Rust's
 * ByteLevel and RobertaProcessing). */
static int trim_flags(const char *path, const char *where, const char *type, json_t *j, template *t,
                      ag_error *err)
{
    json_t *tr = json_object_get(j, "trim_offsets"), *ap = json_object_get(j, "add_prefix_space");
    if ((tr && !json_is_boolean(tr)) || (ap && !json_is_boolean(ap)))
        return ag_error_set(err, AG_EFORMAT, "%s: %s (%s): trim_offsets and add_prefix_space must be true or false",
                            path, where, type);
    t->trim = !json_is_false(tr);
    t->prefix = !json_is_false(ap);
    return AG_OK;
}

static int load_cls_sep(const char *path, const char *where, const char *type, json_t *j, ag_tk_post *p,
                        ag_error *err)
{
    static const char *const keys[2] = {"cls", "sep"};
    int32_t ids[2];
    for (int k = 0; k < 2; k++) {
        json_t *v = json_object_get(j, keys[k]);
        if (!json_is_array(v) || json_array_size(v) != 2 || !json_is_string(json_array_get(v, 0)))
            return ag_error_set(err, AG_EFORMAT, "%s: %s.%s (%s) is not [token, id]", path, where, keys[k], type);
        if (!valid_id(json_array_get(v, 1), &ids[k]))
            return ag_error_set(err, AG_ELIMIT, "%s: %s.%s (%s): the id is not in [0, %d)", path, where, keys[k],
                                type, AG_TOKENIZER_ID_MAX);
    }
    template *t = new_template(p);
    if (!t || add_piece(t, &ids[0], 1) != AG_OK || add_piece(t, NULL, 0) != AG_OK ||
        add_piece(t, &ids[1], 1) != AG_OK)
        return oom(path, err);
    return strcmp(type, "RobertaProcessing") ? AG_OK : trim_flags(path, where, type, j, t, err);
}

/* The ids of special_tokens[name] ({"id", "ids", "tokens"}, as many ids as
 * tokens, as Rust's SpecialToken requires) appended to t. */
static int template_special(const char *path, const char *where, json_t *specials, const char *name, template *t,
                            ag_error *err)
{
    json_t *sp = json_object_get(specials, name);
    json_t *ids = json_object_get(sp, "ids"), *toks = json_object_get(sp, "tokens");
    if (!json_is_object(sp))
        return ag_error_set(err, AG_EFORMAT, "%s: %s (TemplateProcessing): special token '%.60s' is not in special_tokens",
                            path, where, name);
    if (!json_is_array(ids) || !json_is_array(toks) || json_array_size(ids) != json_array_size(toks))
        return ag_error_set(err, AG_EFORMAT, "%s: %s.special_tokens['%.60s']: needs as many \"ids\" as \"tokens\"",
                            path, where, name);
    size_t n = json_array_size(ids);
    int32_t *v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return oom(path, err);
    for (size_t i = 0; i < n; i++) {
        if (!valid_id(json_array_get(ids, i), &v[i])) {
            free(v);
            return ag_error_set(err, AG_ELIMIT, "%s: %s.special_tokens['%.60s'].ids[%zu] is not in [0, %d)",
                                path, where, name, i, AG_TOKENIZER_ID_MAX);
        }
    }
    int rc = t ? add_piece(t, v, n) : AG_OK;
    free(v);
    return rc == AG_OK ? AG_OK : oom(path, err);
}

/* One template ("single" into t; "pair" only checked, t NULL): pieces
 * {"Sequence": {"id": "A"|"B"}} or {"SpecialToken": {"id": NAME}}. The
 * single template may use only $A, the pair template must use both, and
 * every special token must be defined (Rust's validation). */
static int template_pieces(const char *path, const char *where, const char *field, json_t *arr, json_t *specials,
                           template *t, ag_error *err)
{
    if (!json_is_array(arr))
        return ag_error_set(err, AG_EFORMAT, "%s: %s.%s (TemplateProcessing) is not an array", path, where, field);
    int seen[2] = {0, 0};
    for (size_t i = 0; i < json_array_size(arr); i++) {
        json_t *e = json_array_get(arr, i);
        json_t *seq = json_object_get(e, "Sequence"), *st = json_object_get(e, "SpecialToken");
        const char *id = json_string_value(json_object_get(seq ? seq : st, "id"));
        if (!id || json_object_size(e) != 1)
            return ag_error_set(err, AG_EFORMAT, "%s: %s.%s[%zu] (TemplateProcessing) is not a Sequence or SpecialToken piece",
                                path, where, field, i);
        int rc = AG_OK;
        if (st) {
            rc = template_special(path, where, specials, id, t, err);
        } else if (strcmp(id, "A") && strcmp(id, "B")) {
            rc = ag_error_set(err, AG_EFORMAT, "%s: %s.%s[%zu] (TemplateProcessing) names sequence '%.20s' (A or B)",
                              path, where, field, i, id);
        } else {
            seen[id[0] == 'B'] = 1;
            if (t && id[0] == 'B')
                rc = ag_error_set(err, AG_EFORMAT, "%s: %s.single (TemplateProcessing) uses $B", path, where);
            else if (t && add_piece(t, NULL, 0) != AG_OK)
                rc = oom(path, err);
        }
        if (rc != AG_OK)
            return rc;
    }
    if (!t && !(seen[0] && seen[1]))
        return ag_error_set(err, AG_EFORMAT, "%s: %s.pair (TemplateProcessing) must use both $A and $B", path, where);
    return AG_OK;
}

static int load_template(const char *path, const char *where, json_t *j, ag_tk_post *p, ag_error *err)
{
    json_t *specials = json_object_get(j, "special_tokens"), *pair = json_object_get(j, "pair");
    if (!json_is_object(specials))
        return ag_error_set(err, AG_EFORMAT, "%s: %s.special_tokens (TemplateProcessing) is not an object", path,
                            where);
    template *t = new_template(p);
    if (!t)
        return oom(path, err);
    int rc = template_pieces(path, where, "single", json_object_get(j, "single"), specials, t, err);
    if (rc == AG_OK && pair && !json_is_null(pair))
        rc = template_pieces(path, where, "pair", pair, specials, NULL, err);
    return rc;
}

/* The processor j, whose place in the file `where` names
 * ("post_processor", "post_processor.processors[1]"), into p. */
static int load_into(const char *path, const char *where, json_t *j, ag_tk_post *p, ag_error *err)
{
    if (!json_is_object(j))
        return ag_error_set(err, AG_EFORMAT, "%s: %s is not an object", path, where);
    const char *type = json_string_value(json_object_get(j, "type"));
    if (!type)
        return ag_error_set(err, AG_EFORMAT, "%s: %s has no \"type\"", path, where);
    if (!strcmp(type, "ByteLevel")) { /* the sequence as it is, offsets trimmed */
        template *t = new_template(p);
        if (!t || add_piece(t, NULL, 0) != AG_OK)
            return oom(path, err);
        return trim_flags(path, where, type, j, t, err);
    }
    if (!strcmp(type, "BertProcessing") || !strcmp(type, "RobertaProcessing"))
        return load_cls_sep(path, where, type, j, p, err);
    if (!strcmp(type, "TemplateProcessing"))
        return load_template(path, where, j, p, err);
    if (strcmp(type, "Sequence"))
        return ag_error_set(err, AG_EUNSUPPORTED, "%s: %s type '%.40s' is not supported", path, where, type);
    json_t *ps = json_object_get(j, "processors");
    if (!json_is_array(ps))
        return ag_error_set(err, AG_EFORMAT, "%s: %s.processors (Sequence) is not an array", path, where);
    int rc = AG_OK;
    for (size_t i = 0; rc == AG_OK && i < json_array_size(ps); i++) {
        size_t n = strlen(where) + 40;
        char *sub = malloc(n);
        if (!sub)
            return oom(path, err);
        snprintf(sub, n, "%s.processors[%zu]", where, i);
        rc = load_into(path, sub, json_array_get(ps, i), p, err);
        free(sub);
    }
    return rc;
}

int ag_tk_post_load(const char *path, json_t *j, ag_tk_post **out, ag_error *err)
{
    *out = NULL;
    if (!j || json_is_null(j))
        return AG_OK;
    ag_tk_post *p = calloc(1, sizeof *p);
    if (!p)
        return oom(path, err);
    int rc = load_into(path, "post_processor", j, p, err);
    if (rc != AG_OK) {
        ag_tk_post_free(p);
        return rc;
    }
    *out = p;
    return AG_OK;
}

void ag_tk_trim_offsets(size_t *off, size_t i, int add_prefix_space)
{
    size_t lead = off[2], trail = off[3];
    if (lead > 0) {
        /* a first token keeps the one space add_prefix_space put there */
        if ((i == 0 || off[0] == 0) && add_prefix_space && lead == 1)
            lead = 0;
        off[0] = off[0] + lead < off[1] ? off[0] + lead : off[1];
    }
    if (trail > 0 && off[1] >= trail)
        off[1] = off[1] - trail > off[0] ? off[1] - trail : off[0];
}

/* One template over ids, into out (reset first): offsets (when tracked)
 * trimmed first when it says so, the sequence's kept, (0, 0) for its
 * special tokens, as Rust's processors give them. */
static int apply(const template *t, ag_tk_ids *ids, int add_special, ag_tk_ids *out)
{
    out->n = 0;
    out->track = ids->track;
    for (size_t i = 0; ids->track && t->trim && i < ids->n; i++)
        ag_tk_trim_offsets(ids->off + 4 * i, i, t->prefix);
    for (size_t i = 0; i < t->n; i++) {
        const piece *pc = &t->v[i];
        const int32_t *src = pc->ids ? pc->ids : ids->v;
        size_t n = pc->ids ? (add_special ? pc->n : 0) : ids->n;
        for (size_t k = 0; k < n; k++) {
            if (ag_tk_ids_push(out, src[k]) != AG_OK)
                return AG_ENOMEM;
            if (ids->track && !pc->ids)
                memcpy(out->off + 4 * (out->n - 1), ids->off + 4 * k, 4 * sizeof *ids->off);
        }
    }
    return AG_OK;
}

int ag_tk_post_process(const ag_tk_post *p, ag_tk_ids *ids, int add_special, ag_error *err)
{
    for (size_t i = 0; p && i < p->n; i++) {
        ag_tk_ids next = {0};
        if (apply(&p->v[i], ids, add_special, &next) != AG_OK) {
            ag_tk_ids_free(&next);
            return ag_error_set(err, AG_ENOMEM, "out of memory while adding special tokens");
        }
        ag_tk_ids_free(ids);
        *ids = next;
    }
    return AG_OK;
}
