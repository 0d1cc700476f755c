/* test_model_util.h — assertions shared by the engine's tests
 * (test_model.c, test_model_archs.c, test_archs.c). Include after <criterion/criterion.h>
 * and attngeom/model.h. */
#ifndef ATTNGEOM_TEST_MODEL_UTIL_H
#define ATTNGEOM_TEST_MODEL_UTIL_H

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* The array `key` of a JSON file ({"ids": [...]}, {"src": ..., "tgt": ...})
 * as int32 (malloc'd, *n of them); fails the test when the file or a
 * non-empty array is missing. */
static inline int32_t *read_ids_key(const char *path, const char *key, size_t *n)
{
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    cr_assert_not_null(root, "%s: %s", path, je.text);
    json_t *ids = json_object_get(root, key);
    cr_assert(json_is_array(ids) && json_array_size(ids) > 0, "%s: no \"%s\" array", path, key);
    *n = json_array_size(ids);
    int32_t *out = malloc(*n * sizeof *out);
    cr_assert_not_null(out);
    for (size_t i = 0; i < *n; i++)
        out[i] = (int32_t)json_integer_value(json_array_get(ids, i));
    json_decref(root);
    return out;
}

/* The "ids" array of a JSON file ({"ids": [...]}) (read_ids_key). */
static inline int32_t *read_ids_json(const char *path, size_t *n)
{
    return read_ids_key(path, "ids", n);
}

/* ag_model_load(dir) fails with `status`, hands out no model, and its
 * message is one line containing `needle`. */
static inline void expect_load_error(const char *dir, int status, const char *needle)
{
    ag_model *m = NULL;
    ag_error err = {0};
    int rc = ag_model_load(dir, &m, &err);
    cr_assert_eq(rc, status, "status %d (%s), expected %d: %s", rc, ag_strerror(rc), status, err.message);
    cr_assert_null(m);
    cr_assert(strstr(err.message, needle), "message lacks \"%s\": %s", needle, err.message);
    cr_assert_null(strchr(err.message, '\n'));
}

#endif
