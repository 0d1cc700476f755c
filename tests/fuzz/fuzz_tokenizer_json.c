/* fuzz_tokenizer_json.c — ag_tokenizer_load on an arbitrary tokenizer.json
 * (every normalizer, pre-tokenizer, model and post-processor it names) with
 * an optional tokenizer_config.json (add_prefix_space, BERT's options,
 * LlamaTokenizerFast & co.'s bos/eos template); when it loads, encode the
 * fixed texts and one from the input, and look every id back up.
 *
 * Input: tokenizer.json [SEP tokenizer_config.json [SEP text]], SEP being
 * FZ_SEP; without a config part the folder has none. */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "attngeom.h"
#include "fuzz_tokenizer.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char dir[600], path[700], cfg[700];
    if (!dir[0]) {
        fz_mkdir("tok", dir, sizeof dir);
        snprintf(path, sizeof path, "%s/tokenizer.json", dir);
        snprintf(cfg, sizeof cfg, "%s/tokenizer_config.json", dir);
    }
    const uint8_t *p = data, *end = data + size, *part = NULL;
    size_t len = 0;
    if (!fz_next_part(&p, end, &part, &len))
        return 0;
    fz_write(path, part, len);
    unlink(cfg);
    if (fz_next_part(&p, end, &part, &len))
        fz_write(cfg, part, len);
    int has_text = fz_next_part(&p, end, &part, &len);

    ag_tokenizer *tok = fz_load(dir);
    if (tok) { /* a post-processor's ids need not name a token */
        fz_exercise_tokenizer(tok, 0);
        if (has_text)
            fz_encode_check(tok, (const char *)part, len, 0);
    }
    ag_tokenizer_free(tok);
    return 0;
}
