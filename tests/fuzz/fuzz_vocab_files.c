/* fuzz_vocab_files.c — the slow tokenizers' folders: vocab.txt (BERT) or
 * vocab.json + merges.txt (GPT-2), with an optional tokenizer_config.json,
 * loaded by ag_tokenizer_load; when one loads, the fixed texts and a text
 * from the input are encoded and every id must name a token.
 *
 * Input: byte 0 picks the layout (bit 0: 0 = vocab.txt, 1 = vocab.json +
 * merges.txt); the rest is split on SEP into the files in order —
 *   vocab.txt:  vocab.txt SEP tokenizer_config.json SEP text
 *   BPE:        vocab.json SEP merges.txt SEP tokenizer_config.json SEP text
 * — a missing part leaves its file out (merges.txt missing is an error to
 * report), a missing text is no text. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "attngeom.h"
#include "fuzz_tokenizer.h"
#include "fuzz_util.h"

static const char *const txt_files[] = {"vocab.txt", "tokenizer_config.json", NULL};
static const char *const bpe_files[] = {"vocab.json", "merges.txt", "tokenizer_config.json", NULL};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char dir[600];
    if (!dir[0])
        fz_mkdir("vocab", dir, sizeof dir);
    if (size == 0)
        return 0;
    const char *const *files = data[0] & 1 ? bpe_files : txt_files;
    char path[700];
    static const char *const all[] = {"vocab.txt", "vocab.json", "merges.txt", "tokenizer_config.json"};
    for (size_t k = 0; k < sizeof all / sizeof *all; k++) { /* the last input's files */
        snprintf(path, sizeof path, "%s/%s", dir, all[k]);
        unlink(path);
    }

    const uint8_t *p = data + 1, *end = data + size, *part = NULL;
    size_t len = 0;
    for (; *files && fz_next_part(&p, end, &part, &len); files++) {
        snprintf(path, sizeof path, "%s/%s", dir, *files);
        fz_write(path, part, len);
    }
    int has_text = !*files && fz_next_part(&p, end, &part, &len);

    ag_tokenizer *tok = fz_load(dir);
    if (!tok)
        return 0;
    fz_exercise_tokenizer(tok, 1);
    if (has_text)
        fz_encode_check(tok, (const char *)part, len, 1);
    ag_tokenizer_free(tok);
    return 0;
}
