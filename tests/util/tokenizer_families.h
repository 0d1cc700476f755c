/* tokenizer_families.h — the tokenizer families of tests/data/tokenizers/
 * (tests/data/tokenize/README.md) and where a test finds each written out in
 * full, shared by tests/tokenizer/test_tokenizer_families.c (ids) and
 * test_tk_decoders.c (decoding, offsets). Header-only, Criterion asserts. */
#ifndef ATTNGEOM_TOKENIZER_FAMILIES_H
#define ATTNGEOM_TOKENIZER_FAMILIES_H

#include <stdio.h>
#include <stdlib.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "attngeom/tokenizer.h"
#include "xz_file.h"

#ifndef AG_TEST_DATA_DIR
#define AG_TEST_DATA_DIR "tests/data"
#endif

typedef struct {
    char name[24];
} family;

static family families[] = {
    {"albert"}, {"bert"},       {"bpe-prefix"}, {"gemma"},       {"gpt2"},       {"llama2"},   {"llama2-legacy"},
    {"llama3"}, {"llama3-bos"}, {"llama3.1"}, {"openai-gpt"}, {"pythia"},      {"qwen2"},      {"roberta"},  {"split-mix"},
    {"starcoder"}, {"t5"},      {"unigram-bytes"}, {"wordpiece-mix"}, {"xlm-roberta"},
    {"modernbert"}, /* NeoX BPE with TemplateProcessing [CLS] $A [SEP] (issue 29) */
};
#define N_FAMILIES (sizeof families / sizeof *families)

/* The folder of a family written out in full: under $AG_TEST_TOKENIZERS,
 * or materialized into *tmp (to be removed by family_dir_done; "" when not
 * made). */
static inline void family_dir(const char *name, char *dir, size_t n, char *tmp, size_t tn)
{
    const char *root = getenv("AG_TEST_TOKENIZERS");
    tmp[0] = '\0';
    if (root && *root) {
        snprintf(dir, n, "%s/%s", root, name);
        return;
    }
    snprintf(tmp, tn, "/tmp/ag_fam.XXXXXX");
    cr_assert_not_null(mkdtemp(tmp));
    char cmd[512];
    snprintf(cmd, sizeof cmd, "python3 tools/tokenize_ref/materialize.py '%s' '%s' >/dev/null", tmp, name);
    cr_assert_eq(system(cmd), 0, "%s failed", cmd);
    snprintf(dir, n, "%s/%s", tmp, name);
}

static inline void family_dir_done(const char *tmp)
{
    if (tmp[0]) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
        cr_expect_eq(system(cmd), 0);
    }
}

/* tests/data/tokenize/<sub><name>.json.xz, parsed (asserts). */
static inline json_t *family_json(const char *sub, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, AG_TEST_DATA_DIR "/tokenize/%s%s.json.xz", sub, name);
    json_error_t je;
    json_t *j = xz_json_load(path, 0, &je);
    cr_assert_not_null(j, "%s: %s", path, je.text);
    return j;
}

/* The tokenizer of folder dir (asserts). */
static inline ag_tokenizer *family_tokenizer(const char *dir)
{
    ag_tokenizer *t = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_tokenizer_load(dir, &t, &err), AG_OK, "%s: %s", dir, err.message);
    return t;
}

#endif
