/* fuzz_safetensors.c — ag_st_open on arbitrary bytes, then every lookup and
 * every float tensor's values (double and float readers). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attngeom.h"
#include "fuzz_util.h"

#define READ_CAP ((size_t)1 << 22) /* elements read per input, in all */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[600];
    if (!path[0])
        fz_path("input.safetensors", path, sizeof path);
    fz_write(path, data, size);

    ag_safetensors *st = NULL;
    ag_error err = {0};
    int rc = ag_st_open(path, &st, &err);
    if (rc != AG_OK) {
        if (st || err.status != rc || !err.message[0])
            abort();
        return 0;
    }
    size_t budget = READ_CAP;
    (void)ag_st_metadata(st, "format");
    for (size_t i = 0; i < ag_st_count(st); i++) {
        const ag_tensor_info *t = ag_st_info(st, i);
        if (!t || ag_st_find(st, t->name) != t)
            abort(); /* names are unique: lookup finds the same entry */
        if (t->offset + t->nbytes > size)
            abort(); /* offsets lie inside the file */
        if (!ag_dtype_is_float(t->dtype) || t->nelem > budget) {
            ag_array a;
            if (!ag_dtype_is_float(t->dtype) &&
                ag_st_read(st, t->name, &a, &err) != AG_EDTYPE)
                abort();
            continue;
        }
        budget -= t->nelem;
        ag_array a;
        if (ag_st_read(st, t->name, &a, &err) == AG_OK) {
            if (ag_array_size(&a) != t->nelem)
                abort();
            ag_array_free(&a);
        }
        float *f = malloc((t->nelem ? t->nelem : 1) * sizeof *f);
        if (f) {
            (void)ag_st_read_f32(st, t, f, &err);
            free(f);
        }
    }
    if (ag_st_info(st, ag_st_count(st)) != NULL)
        abort();
    ag_st_close(st);
    return 0;
}
