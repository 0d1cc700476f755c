/* test_probe.c — attngeom/run.h, the induction probe: ag_run_probe_tokens
 * draws what TransformerLens's tutorial draws (uniform with replacement,
 * here GSL's MT19937 set to the seed, replayed below), never a special
 * token, the same ids for a seed, framed as the tokenizer frames a text,
 * sizes checked first; ag_run_probe_induction's records equal the stripe
 * of ag_run_attention's own matrices, for any thread count. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <gsl/gsl_rng.h>

#include "attngeom.h"
#include "../../analysis/metrics_int.h" // the layouts of records
#include "../util/test_io_util.h"

#define TINY_GPT2 "models/tiny-gpt2"
#define TINY_BERT "tests/data/models/tiny-bert"

TestSuite(run_probe, .fini = tio_cleanup);

typedef struct {
    ag_model *m;
    ag_tokenizer *tok;
} loaded;

static loaded load(const char *dir)
{
    loaded l = {0};
    ag_error err = {0};
    cr_assert_eq(ag_model_load(dir, &l.m, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_tokenizer_load(dir, &l.tok, &err), AG_OK, "%s", err.message);
    return l;
}

static void unload(loaded *l)
{
    ag_model_free(l->m);
    ag_tokenizer_free(l->tok);
}

typedef struct {
    int32_t *ids;
    size_t n, start;
} drawn;

static drawn draw(const loaded *l, size_t T, int R, unsigned long seed)
{
    drawn d = {0};
    ag_error err = {0};
    cr_assert_eq(ag_run_probe_tokens(l->m, l->tok, T, R, seed, &d.ids, &d.n, &d.start, &err),
                 AG_OK, "%s", err.message);
    return d;
}

/* R copies of the block from d.start, every one of them not special. */
static void expect_blocks(const loaded *l, const drawn *d, size_t T, int R)
{
    for (size_t i = d->start; i < d->start + (size_t)R * T; i++) {
        cr_assert(!ag_tokenizer_is_special(l->tok, d->ids[i]), "special id %d at %zu",
                  (int)d->ids[i], i);
        if (i >= d->start + T)
            cr_assert_eq(d->ids[i], d->ids[i - T], "position %zu", i);
    }
}

/* GPT-2's one special token is its last id (50256 <|endoftext|>), and its
 * post-processor adds nothing: the ids are the 0..50255 that MT19937 set
 * to the seed draws with gsl_rng_uniform_int, replayed here. */
Test(run_probe, gpt2_replays_mt19937)
{
    loaded l = load(TINY_GPT2);
    cr_assert(ag_tokenizer_is_special(l.tok, 50256));
    cr_assert(!ag_tokenizer_is_special(l.tok, 50255));
    drawn d = draw(&l, 40, 3, 7);
    cr_assert_eq(d.start, 0);
    cr_assert_eq(d.n, 120);
    expect_blocks(&l, &d, 40, 3);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 7);
    for (size_t t = 0; t < 40; t++)
        cr_assert_eq(d.ids[t], (int32_t)gsl_rng_uniform_int(rng, 50256), "draw %zu", t);
    gsl_rng_free(rng);
    /* the same seed, the same ids; another seed, others */
    drawn again = draw(&l, 40, 3, 7), other = draw(&l, 40, 3, 8);
    cr_assert(memcmp(again.ids, d.ids, d.n * sizeof *d.ids) == 0);
    cr_assert(memcmp(other.ids, d.ids, d.n * sizeof *d.ids) != 0);
    free(d.ids);
    free(again.ids);
    free(other.ids);
    unload(&l);
}

/* BERT's post-processor frames a text as [CLS] ... [SEP]: the probe too. */
Test(run_probe, bert_is_framed)
{
    loaded l = load(TINY_BERT);
    drawn d = draw(&l, 30, 2, 1);
    cr_assert_eq(d.start, 1);
    cr_assert_eq(d.n, 62);
    cr_assert_eq(d.ids[0], ag_tokenizer_token_id(l.tok, "[CLS]"));
    cr_assert_eq(d.ids[61], ag_tokenizer_token_id(l.tok, "[SEP]"));
    expect_blocks(&l, &d, 30, 2);
    free(d.ids);
    unload(&l);
}

/* A tokenizer whose vocabulary is mostly special: of ids 0..4, <s> <pad>
 * </s> are special added tokens, x a token and y a token added but not
 * special. Only x (2) and y (4) may be drawn, both come in 64 draws (all
 * one: probability 2^-63), and the template puts <s> first. The model is
 * tiny-gpt2's (its 50257 ids cover the five). */
Test(run_probe, only_ordinary_tokens)
{
    static const char tokenizer_json[] =
        "{\"version\":\"1.0\",\"added_tokens\":["
        "{\"id\":0,\"content\":\"<s>\",\"special\":true},"
        "{\"id\":1,\"content\":\"<pad>\",\"special\":true},"
        "{\"id\":3,\"content\":\"</s>\",\"special\":true},"
        "{\"id\":4,\"content\":\"y\",\"special\":false}],"
        "\"normalizer\":null,\"pre_tokenizer\":{\"type\":\"WhitespaceSplit\"},"
        "\"post_processor\":{\"type\":\"TemplateProcessing\","
        "\"single\":[{\"SpecialToken\":{\"id\":\"<s>\",\"type_id\":0}},"
        "{\"Sequence\":{\"id\":\"A\",\"type_id\":0}}],"
        "\"pair\":[{\"Sequence\":{\"id\":\"A\",\"type_id\":0}},"
        "{\"Sequence\":{\"id\":\"B\",\"type_id\":1}}],"
        "\"special_tokens\":{\"<s>\":{\"id\":\"<s>\",\"ids\":[0],\"tokens\":[\"<s>\"]}}},"
        "\"decoder\":null,\"model\":{\"type\":\"WordLevel\",\"unk_token\":\"<pad>\","
        "\"vocab\":{\"<s>\":0,\"<pad>\":1,\"x\":2,\"</s>\":3,\"y\":4}}}";
    char cwd[4096];
    cr_assert_not_null(getcwd(cwd, sizeof cwd));
    const char *dir = tio_path("special");
    cr_assert_eq(mkdir(dir, 0700), 0);
    char src[8192], dst[8192];
    static const char *const files[] = {"config.json", "model.safetensors"};
    for (int k = 0; k < 2; k++) {
        snprintf(src, sizeof src, "%s/" TINY_GPT2 "/%s", cwd, files[k]);
        snprintf(dst, sizeof dst, "%s/%s", dir, files[k]);
        cr_assert_eq(symlink(src, dst), 0);
    }
    snprintf(dst, sizeof dst, "%s/tokenizer.json", dir);
    cr_assert_eq(tio_write_bytes(dst, tokenizer_json, strlen(tokenizer_json)), 0);
    loaded l = load(dir);
    drawn d = draw(&l, 64, 2, 3);
    cr_assert_eq(d.start, 1);
    cr_assert_eq(d.ids[0], 0);
    cr_assert_eq(d.n, 129);
    size_t seen[5] = {0};
    for (size_t i = 1; i < d.n; i++) {
        cr_assert(d.ids[i] == 2 || d.ids[i] == 4, "id %d at %zu", (int)d.ids[i], i);
        seen[d.ids[i]]++;
    }
    cr_assert(seen[2] && seen[4]);
    expect_blocks(&l, &d, 64, 2);
    free(d.ids);
    unload(&l);
}

static void expect_fails(const loaded *l, size_t T, int R, int status, const char *needle)
{
    int32_t *ids = (int32_t *)&ids;
    size_t n = 9, start = 9;
    ag_error err = {0};
    cr_assert_eq(ag_run_probe_tokens(l->m, l->tok, T, R, 1, &ids, &n, &start, &err), status,
                 "T %zu R %d: %s", T, R, err.message);
    cr_assert(strstr(err.message, needle), "%s", err.message);
    cr_assert(ids == NULL && n == 0 && start == 0);
}

/* tiny-bert takes 256 positions: 127·2 + [CLS] + [SEP] fit, 128·2 do not
 * once framed (the block alone, 256, would). */
Test(run_probe, sizes)
{
    loaded g = load(TINY_GPT2), b = load(TINY_BERT);
    expect_fails(&g, 0, 2, AG_EINVAL, "--length 0");
    expect_fails(&g, 4, 1, AG_EINVAL, "--repeats 1");
    expect_fails(&g, 129, 2, AG_ERANGE, "258 tokens with the special ones, more than the 256 "
                                        "the model takes (n_positions = 256)");
    expect_fails(&b, 128, 2, AG_ERANGE, "258 tokens");
    drawn d = draw(&b, 127, 2, 1);
    cr_assert_eq(d.n, 256);
    free(d.ids);
    unload(&g);
    unload(&b);
}

/* ---- the records --------------------------------------------------------- */

typedef struct {
    double *A; /* (layers, heads, n, n) */
    size_t count;
} kept;

static int keep(int layer, const double *attn, size_t heads, size_t n, void *user)
{
    kept *k = user;
    memcpy(k->A + k->count, attn, heads * n * n * sizeof *attn);
    k->count += heads * n * n;
    return 0;
}

static ag_record_list *records(const loaded *l, const drawn *d, size_t T, int R, int threads)
{
    ag_run_options *o = ag_run_options_new();
    ag_error err = {0};
    static const int heads[] = {1, 3};
    cr_assert_eq(ag_run_options_set(o, "threads", threads, &err), AG_OK);
    cr_assert_eq(ag_run_options_select(o, "heads", heads, 2, &err), AG_OK);
    ag_record_list *out = NULL;
    cr_assert_eq(ag_run_probe_induction(l->m, d->ids, d->n, d->start, T, R, o, NULL, &out, &err),
                 AG_OK, "%s", err.message);
    ag_run_options_free(o);
    return out;
}

/* Heads 1 and 3 of every layer, in layer order: the mean of A[i, i−T+1]
 * over the rows of blocks 2 and 3 of the pass's own attention, and the
 * mean of 1/(i + 1) (GPT-2 is causal); the same bits on 1 and 3 threads. */
Test(run_probe, records_are_the_stripe)
{
    loaded l = load(TINY_GPT2);
    size_t T = 6;
    drawn d = draw(&l, T, 3, 5);
    size_t n = d.n;
    kept k = {.A = malloc(4 * 4 * n * n * sizeof(double))};
    ag_run_input in = {.size = sizeof in, .ids = d.ids, .n = n, .text = -1};
    ag_error err = {0};
    cr_assert_eq(ag_run_attention(l.m, &in, NULL, NULL, keep, NULL, &k, NULL, &err), AG_OK);
    ag_record_list *one = records(&l, &d, T, 3, 1), *three = records(&l, &d, T, 3, 3);
    cr_assert_eq(ag_record_list_count(one), 8);
    for (size_t r = 0; r < 8; r++) {
        const ag_record *got = ag_record_list_get(one, r), *also = ag_record_list_get(three, r);
        int layer = (int)r / 2, head = r % 2 ? 3 : 1;
        cr_assert(got->layer == layer && got->head == head && got->rows == n && got->cols == n);
        const double *A = k.A + ((size_t)layer * 4 + (size_t)head) * n * n;
        double s = 0, b = 0;
        for (size_t i = T; i < 3 * T; i++) {
            s += A[i * n + i - T + 1];
            b += 1.0 / (double)(i + 1);
        }
        /* the same terms summed in the same order: the same bits */
        cr_assert_eq(got->value[AG_M_INDUCTION_SCORE], s / (double)(2 * T));
        cr_assert_eq(got->value[AG_M_INDUCTION_BASELINE], b / (double)(2 * T));
        cr_assert(memcmp(got->value, also->value, sizeof got->value) == 0, "record %zu", r);
    }
    /* a sequence that does not repeat is refused, naming the first place */
    d.ids[d.start + T + 2] ^= 1;
    ag_record_list *bad = NULL;
    cr_assert_eq(ag_run_probe_induction(l.m, d.ids, n, d.start, T, 3, NULL, NULL, &bad, &err),
                 AG_EINVAL);
    cr_assert(strstr(err.message, "token 8 "), "%s", err.message);
    cr_assert_null(bad);
    ag_record_list_free(one);
    ag_record_list_free(three);
    free(k.A);
    free(d.ids);
    unload(&l);
}
