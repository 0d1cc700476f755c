/* fuzz_tokenizer_json.c — ag_tokenizer_load on an arbitrary tokenizer.json;
 * when it loads, encode a few fixed texts and look every id back up. */
#include <stdint.h>
#include <stdio.h>

#include "attngeom.h"
#include "fuzz_tokenizer.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char dir[600], path[700];
    if (!dir[0]) {
        fz_mkdir("tok", dir, sizeof dir);
        snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    }
    fz_write(path, data, size);

    ag_tokenizer *tok = fz_load(dir);
    if (tok) /* a post-processor's ids need not name a token */
        fz_exercise_tokenizer(tok, 0);
    ag_tokenizer_free(tok);
    return 0;
}
