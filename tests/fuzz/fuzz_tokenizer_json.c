/* fuzz_tokenizer_json.c — ag_tokenizer_load on an arbitrary tokenizer.json;
 * when it loads, encode a few fixed texts and look every id back up. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attngeom.h"
#include "fuzz_util.h"

static const char *const texts[] = {
    "Hello, world! It's 2024.",
    "  leading and trailing spaces  \n\t",
    "caf\xC3\xA9 na\xC3\xAFve \xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x98\x80 \xCE\xA3\xCE\xB1",
    "[CLS] [SEP] [UNK] [MASK] <|endoftext|> <s></s> <unk>",
    "a", "", "##ing unaffable don't I'll",
    "\xE2\x80\x85\xC2\xA0\xC2\x85 x\xCC\x81 \xC4\xB0",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char dir[600], path[700];
    if (!dir[0]) {
        fz_mkdir("tok", dir, sizeof dir);
        snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    }
    fz_write(path, data, size);

    ag_tokenizer *tok = NULL;
    ag_error err = {0};
    int rc = ag_tokenizer_load(dir, &tok, &err);
    if (rc != AG_OK) {
        if (tok || err.status != rc || !err.message[0])
            abort();
        return 0;
    }
    (void)ag_tokenizer_vocab_size(tok);
    (void)ag_tokenizer_get_kind(tok);
    for (size_t k = 0; k < sizeof texts / sizeof *texts; k++)
        for (unsigned flags = 0; flags <= AG_TOKENIZE_NO_SPECIAL; flags++) {
            int32_t *ids = NULL;
            size_t n = 0;
            if (ag_tokenizer_encode_ex(tok, texts[k], strlen(texts[k]), flags, &ids, &n,
                                       &err) == AG_OK) {
                for (size_t i = 0; i < n; i++) {
                    if (ids[i] < 0 || ids[i] >= AG_TOKENIZER_ID_MAX)
                        abort(); /* ids are capped at load */
                    const char *s = ag_tokenizer_token(tok, ids[i]);
                    if (s)
                        (void)ag_tokenizer_token_id(tok, s);
                }
            } else if (ids || n) {
                abort();
            }
            free(ids);
        }
    ag_tokenizer_free(tok);
    return 0;
}
