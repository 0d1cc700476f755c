/* test_tk_special.c — the special tokens of a tokenizer
 * (ag_tokenizer_is_special: the added tokens marked "special") and the
 * post-processor's frame around given ids (ag_tokenizer_with_special, as
 * transformers' build_inputs_with_special_tokens): BERT's [CLS] … [SEP],
 * GPT-2's nothing, the same frame ag_tokenizer_encode puts around a text. */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "attngeom.h"

static ag_tokenizer *load(const char *dir)
{
    ag_tokenizer *t = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_tokenizer_load(dir, &t, &err), AG_OK, "%s", err.message);
    return t;
}

Test(tk_special, which_are_special)
{
    ag_tokenizer *b = load("tests/data/models/tiny-bert"), *g = load("models/tiny-gpt2");
    static const char *const special[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
    for (int k = 0; k < 5; k++)
        cr_assert(ag_tokenizer_is_special(b, ag_tokenizer_token_id(b, special[k])), "%s",
                  special[k]);
    cr_assert(!ag_tokenizer_is_special(b, ag_tokenizer_token_id(b, "the")));
    cr_assert(ag_tokenizer_is_special(g, ag_tokenizer_token_id(g, "<|endoftext|>")));
    cr_assert(!ag_tokenizer_is_special(g, 464));
    cr_assert(!ag_tokenizer_is_special(g, -1));
    cr_assert(!ag_tokenizer_is_special(g, 1 << 30));
    cr_assert(!ag_tokenizer_is_special(NULL, 0));
    ag_tokenizer_free(b);
    ag_tokenizer_free(g);
}

/* The frame of given ids is the frame encode puts around a text's own. */
static void expect_frame(const char *dir, const char *text)
{
    ag_tokenizer *t = load(dir);
    ag_error err = {0};
    int32_t *own = NULL, *full = NULL, *framed = NULL;
    size_t n_own = 0, n_full = 0, n_framed = 0;
    cr_assert_eq(ag_tokenizer_encode_ex(t, text, strlen(text), AG_TOKENIZE_NO_SPECIAL, &own,
                                        &n_own, &err), AG_OK);
    cr_assert_eq(ag_tokenizer_encode(t, text, strlen(text), &full, &n_full, &err), AG_OK);
    cr_assert_eq(ag_tokenizer_with_special(t, own, n_own, &framed, &n_framed, &err), AG_OK);
    cr_assert_eq(n_framed, n_full);
    cr_assert(memcmp(framed, full, n_full * sizeof *full) == 0);
    free(own);
    free(full);
    free(framed);
    ag_tokenizer_free(t);
}

Test(tk_special, frame_is_encode_s)
{
    expect_frame("tests/data/models/tiny-bert", "the cat sat");
    expect_frame("models/tiny-gpt2", "The cat sat");
    ag_tokenizer *b = load("tests/data/models/tiny-bert");
    int32_t one = 1000, *out = NULL;
    size_t n = 0;
    ag_error err = {0};
    cr_assert_eq(ag_tokenizer_with_special(b, &one, 1, &out, &n, &err), AG_OK);
    cr_assert_eq(n, 3);
    cr_assert(out[0] == ag_tokenizer_token_id(b, "[CLS]") && out[1] == 1000 &&
              out[2] == ag_tokenizer_token_id(b, "[SEP]"));
    free(out);
    cr_assert_eq(ag_tokenizer_with_special(b, NULL, 1, &out, &n, &err), AG_EINVAL);
    cr_assert(out == NULL && n == 0);
    ag_tokenizer_free(b);
}
