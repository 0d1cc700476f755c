/* test_tokenizer_families.c — every tokenizer family of issue 9 gives the
 * reference ids on all of its texts.
 *
 * Families: the folders of tests/data/tokenizers/ (tests/data/tokenize/
 * README.md). Their tokenizer.json files are stored in pieces; the test
 * reads them written out in full by tools/tokenize_ref/materialize.py, from
 * $AG_TEST_TOKENIZERS when set (`make unit` materializes every family into
 * build/tokenizers once), else into a temporary folder per family.
 * Expected ids: tests/data/tokenize/<family>.json.xz ([{"text", "ids"}], 407
 * texts each, add_special_tokens=True), made by the Python port of Hugging
 * Face's Rust library tests/ref/hf_tokenizer.py and cross-checked with
 * transformers.js and the vocabulary packages (the README's tables). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "attngeom/core.h"
#include "attngeom/tokenizer.h"
#include "../util/tokenizer_families.h"


/* The folders of tests/data/tokenizers/ that are families: all but the
 * stored vocabularies (base) and tiny-llama (test_tokenizer.c's). */
Test(tokenizer_families, list_is_complete)
{
    DIR *d = opendir(AG_TEST_DATA_DIR "/tokenizers");
    cr_assert_not_null(d);
    struct dirent *e;
    size_t seen = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || !strcmp(e->d_name, "base") || !strcmp(e->d_name, "tiny-llama"))
            continue;
        int found = 0;
        for (size_t i = 0; i < N_FAMILIES; i++)
            found |= !strcmp(families[i].name, e->d_name);
        cr_expect(found, "tests/data/tokenizers/%s is not in this test's list of families", e->d_name);
        seen++;
    }
    closedir(d);
    cr_expect_eq(seen, N_FAMILIES);
}

/* Ids of text i against the expected ones; returns 1 when equal. */
static int same_ids(const ag_tokenizer *t, const char *fam, size_t i, json_t *c)
{
    json_t *text = json_object_get(c, "text"), *ids = json_object_get(c, "ids");
    int32_t *got = NULL;
    size_t n = 0, m = json_array_size(ids), k = 0;
    ag_error err = {0};
    int rc = ag_tokenizer_encode(t, json_string_value(text), json_string_length(text), &got, &n, &err);
    cr_expect_eq(rc, AG_OK, "%s[%zu]: %s", fam, i, err.message);
    if (rc != AG_OK)
        return 0;
    while (k < n && k < m && got[k] == (int32_t)json_integer_value(json_array_get(ids, k)))
        k++;
    int ok = n == m && k == n;
    if (!ok) {
        char *shown = json_dumps(text, JSON_ENCODE_ANY | JSON_ENSURE_ASCII);
        cr_expect_fail("%s[%zu] %.80s: %zu ids, expected %zu; first difference at %zu (got %d, expected %d)", fam, i,
                       shown, n, m, k, k < n ? got[k] : -1, k < m ? (int)json_integer_value(json_array_get(ids, k)) : -1);
        free(shown);
    }
    free(got);
    return ok;
}

ParameterizedTestParameters(tokenizer_families, reference_ids)
{
    return cr_make_param_array(family, families, N_FAMILIES);
}

ParameterizedTest(family *f, tokenizer_families, reference_ids, .timeout = 120)
{
    char dir[512], tmp[64];
    family_dir(f->name, dir, sizeof dir, tmp, sizeof tmp);
    json_t *cases = family_json("", f->name);
    cr_assert_eq(json_array_size(cases), 407, "%s: expected 407 texts", f->name);
    ag_tokenizer *t = family_tokenizer(dir);
    size_t good = 0, i;
    json_t *c;
    json_array_foreach(cases, i, c)
        good += (size_t)same_ids(t, f->name, i, c);
    cr_expect_eq(good, json_array_size(cases), "%s: %zu of %zu texts give the reference ids", f->name, good,
                 json_array_size(cases));
    ag_tokenizer_free(t);
    json_decref(cases);
    family_dir_done(tmp);
}
