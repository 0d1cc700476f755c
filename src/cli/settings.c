/* settings.c — what makes a run's records reproducible, written with them
 * (docs/cli.md, "Records that stand alone"): the `model` name every record
 * carries, and the JSON `settings` object — the options in force, the
 * model's path and the SHA-256 of the files its numbers come from, the
 * token count of every text. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* The last component of path, without trailing slashes, into buf. */
static void last_component(const char *path, char *buf, size_t size)
{
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/')
        len--;
    size_t start = len;
    while (start > 0 && path[start - 1] != '/')
        start--;
    snprintf(buf, size, "%.*s", (int)(len - start), path + start);
}

void cli_set_model_name(cli_common *c, const char *path)
{
    char real[PATH_MAX];
    last_component(path, c->model_name, sizeof c->model_name);
    /* "." and ".." name the folder they are; a symlink keeps its own name
     * (a Hugging Face cache links its files to blobs named by hash) */
    if ((!strcmp(c->model_name, ".") || !strcmp(c->model_name, "..")) && realpath(path, real))
        last_component(real, c->model_name, sizeof c->model_name);
}

const char *cli_model(const cli_common *c)
{
    return c->label ? c->label : c->model_name[0] ? c->model_name : NULL;
}

/* ---- the weight files of a model folder ----------------------------------- */

static int add_digest(json_t *digests, const char *name, const char *path)
{
    char hex[65];
    ag_error err = {0};
    if (ag_sha256_file(path, hex, &err) != AG_OK)
        return cli_fail_error(&err);
    json_t *k = cli_json_text(name);
    int ok = k && json_object_set_new(digests, json_string_value(k), json_string(hex)) == 0;
    json_decref(k);
    return ok ? 0 : cli_fail("out of memory");
}

/* The files ag_model_load maps, as it chooses them (docs/engine.md):
 * model.safetensors when present, else every shard that
 * model.safetensors.index.json's weight_map names, in order of first
 * mention. Their digests into `digests`, by file name. */
static int weight_digests(const char *dir, json_t *digests)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (access(path, F_OK) == 0)
        return add_digest(digests, "model.safetensors", path);
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    json_t *index;
    if (cli_read_json(path, JSON_REJECT_DUPLICATES, &index) != 0)
        return 1;
    json_t *map = json_object_get(index, "weight_map");
    if (!json_is_object(map)) {
        json_decref(index);
        return cli_fail("%s: cannot list the weight files", path);
    }
    const char *key;
    json_t *file;
    int rc = 0;
    json_object_foreach(map, key, file) {
        const char *f = json_string_value(file);
        if (rc || !f || json_object_get(digests, f))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, f);
        rc = add_digest(digests, f, path);
    }
    json_decref(index);
    return rc;
}

/* ---- the object ----------------------------------------------------------------- */

static json_t *metric_list(const cli_common *c, const char *only)
{
    json_t *a = json_array();
    if (only)
        json_array_append_new(a, json_string(only));
    for (int m = 0; !only && m < ag_metric_count(); m++)
        if (ag_metric_set_has(c->metrics, m))
            json_array_append_new(a, json_string(ag_metric_name((ag_metric)m)));
    return a;
}

static json_t *text_list(const cli_model_run *r)
{
    json_t *a = json_array();
    for (size_t k = 0; a && k < r->nseq; k++) {
        const cli_seq *s = &r->seqs[k];
        json_array_append_new(a, json_pack("{s:o,s:I,s:I,s:b}", "text",
                                           s->line >= 0 ? json_integer(s->line) : json_null(),
                                           "tokens", (json_int_t)s->n, "tokenized",
                                           (json_int_t)s->tokens, "skipped", s->skip));
        if (s->source) /* an image or sound file: its name, its positions */
            json_object_set_new(json_array_get(a, k), "input", cli_json_text(s->source));
        if (s->target) /* --target-file: its line's decoder input, its length */
            json_object_set_new(json_array_get(a, k), "target_tokens",
                                json_integer((json_int_t)s->n_target));
    }
    return a;
}

static json_t *text_or_null(const char *s)
{
    return s ? cli_json_text(s) : json_null();
}

/* The options of a model run: precision, selections, cuts, texts. */
static void run_settings(json_t *o, const cli_model_run *r)
{
    json_object_set_new(o, "precision",
                        json_string(r->input.precision == AG_PRECISION_F64 ? "f64" : "f32"));
    json_object_set_new(o, "layers", text_or_null(r->input.layers));
    json_object_set_new(o, "heads", text_or_null(r->input.heads));
    json_object_set_new(o, "max_tokens", r->input.max_tokens ? json_integer((json_int_t)r->input.max_tokens)
                                                             : json_null());
    json_object_set_new(o, "skip_long", json_boolean(r->input.skip_long));
    json_object_set_new(o, "texts", text_list(r));
    if (r->target) { /* an encoder–decoder run: the decoder's input ids */
        json_t *ids = json_array();
        for (size_t k = 0; ids && k < r->n_target; k++)
            json_array_append_new(ids, json_integer(r->target[k]));
        json_object_set_new(o, "target_tokens", ids);
    }
}

/* --normalizer, and --temperature T or --temperatures' list. */
static void lens_settings(json_t *o, const cli_common *c)
{
    json_object_set_new(o, "normalizer", json_string(c->normalizer));
    if (!c->ntemperatures) {
        json_object_set_new(o, "temperature", json_real(c->temperature));
        return;
    }
    json_t *a = json_array();
    for (size_t k = 0; k < c->ntemperatures; k++)
        json_array_append_new(a, json_real(c->temperatures[k]));
    json_object_set_new(o, "temperatures", a);
}

int cli_format_has_settings(ag_format fmt)
{
    return fmt == AG_FORMAT_JSON || fmt == AG_FORMAT_JSONL;
}

int cli_settings_text(const cli_common *c, const cli_settings_in *in, char **out)
{
    *out = NULL;
    if (!cli_format_has_settings(c->format))
        return 0; /* nowhere to write them: no file is hashed for nothing */
    json_t *o = json_object(), *digests = json_object();
    char real[PATH_MAX];
    int rc = o && digests ? 0 : cli_fail("out of memory");
    if (rc == 0) {
        json_object_set_new(o, "model", text_or_null(cli_model(c)));
        if (in->model_dir)
            json_object_set_new(o, "model_path",
                                cli_json_text(realpath(in->model_dir, real) ? real : in->model_dir));
        rc = in->model_dir ? weight_digests(in->model_dir, digests) : 0;
    }
    for (size_t k = 0; rc == 0 && k < in->nfiles; k++)
        if (in->files[k])
            rc = add_digest(digests, in->files[k], in->files[k]);
    if (rc == 0) {
        json_object_set_new(o, "sha256", digests);
        digests = NULL;
        json_object_set_new(o, "metrics", metric_list(c, in->metric));
        json_object_set_new(o, "seed", c->seed <= LLONG_MAX ? json_integer((json_int_t)c->seed)
                                                            : json_real((double)c->seed));
        json_object_set_new(o, "epsilon", json_real(c->epsilon));
        json_object_set_new(o, "trials", json_integer(c->trials));
        json_object_set_new(o, "edge_threshold",
                            c->edge_threshold >= 0 ? json_real(c->edge_threshold) : json_null());
        if (ag_metric_set_has(c->metrics, AG_M_ACT_MASSIVE)) { /* the count's thresholds */
            json_object_set_new(o, "massive_abs", json_real(c->massive_abs));
            json_object_set_new(o, "massive_ratio", json_real(c->massive_ratio));
        }
        if (c->normalizer) /* the lens: every record says it too */
            lens_settings(o, c);
        if (in->method) { /* what the matrices are: the records alone do not say */
            json_object_set_new(o, "method", json_string(in->method));
            json_object_set_new(o, "rollout", json_boolean(in->rollout));
        }
        if (in->run)
            run_settings(o, in->run);
        else if (in->precision)
            json_object_set_new(o, "precision", json_string(in->precision));
        *out = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
        if (!*out)
            rc = cli_fail("out of memory");
    }
    json_decref(digests);
    json_decref(o);
    return rc;
}
