/* fuzz_tokenize_text.c — arbitrary bytes as text for the embedded GPT-2
 * tokenizer (byte-level BPE) and tiny-bert's (WordPiece). Run from the
 * repository root. Invalid UTF-8 must be AG_EINVAL, never a crash. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "attngeom.h"

static ag_tokenizer *toks[2];

static ag_tokenizer *load(const char *dir)
{
    ag_tokenizer *t = NULL;
    ag_error err = {0};
    if (ag_tokenizer_load(dir, &t, &err) != AG_OK) {
        fprintf(stderr, "fuzz_tokenize_text: %s (run from the repository root)\n",
                err.message);
        exit(1);
    }
    return t;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    toks[0] = load("models/tiny-gpt2");
    toks[1] = load("tests/data/models/tiny-bert");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (int k = 0; k < 2; k++)
        for (unsigned flags = 0; flags <= AG_TOKENIZE_NO_SPECIAL; flags++) {
            int32_t *ids = NULL;
            size_t n = 0;
            ag_error err = {0};
            int rc = ag_tokenizer_encode_ex(toks[k], (const char *)data, size, flags,
                                            &ids, &n, &err);
            if (rc == AG_OK) {
                size_t vs = ag_tokenizer_vocab_size(toks[k]);
                for (size_t i = 0; i < n; i++)
                    if (ids[i] < 0 || (size_t)ids[i] >= vs || !ag_tokenizer_token(toks[k], ids[i]))
                        abort(); /* every id is a known token */
            } else if (ids || n || err.status != rc || !err.message[0]) {
                abort();
            }
            free(ids);
        }
    return 0;
}
