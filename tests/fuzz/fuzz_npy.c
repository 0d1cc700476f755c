/* fuzz_npy.c — ag_npy_read on arbitrary bytes. */
#include <stdint.h>
#include <stdlib.h>

#include "attngeom.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[600];
    if (!path[0])
        fz_path("input.npy", path, sizeof path);
    fz_write(path, data, size);

    ag_array a;
    ag_error err = {0};
    int rc = ag_npy_read(path, &a, &err);
    if (rc == AG_OK) {
        /* touch every element: the array must be as large as its shape */
        size_t n = ag_array_size(&a);
        volatile double sink = 0;
        for (size_t i = 0; i < n; i++)
            sink += a.data[i];
        (void)sink;
    } else if (err.status != rc || !err.message[0]) {
        abort(); /* every failure carries its status and a message */
    }
    ag_array_free(&a);
    return 0;
}
