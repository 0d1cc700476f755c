/* test_temperatures.c — attngeom/run.h, ag_run_options_set_temperatures
 * (issue 28, "Softmax as a lens": --temperatures): its errors; a run over
 * several T gives, bit for bit and in the order given, the records of one
 * run per T (ag_run_options_set_normalizer at softmax(S/T)), each stamped
 * with its T while a single run's carry none (NaN); ag_run_similarity's
 * blocks are the single runs' matrices; setting a normaliser clears the
 * list. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "attngeom.h"
#include "../../analysis/metrics_int.h" // the layout of records

#define TINY_GPT2 "models/tiny-gpt2"

static const int32_t ids[] = {464, 3290, 318, 257, 1332};
enum { NTOK = 5 };

Test(temperatures, errors)
{
    ag_run_options *o = ag_run_options_new();
    ag_error err = {0};
    double bad[][1] = {{0}, {-1}, {NAN}, {INFINITY}};
    for (size_t k = 0; k < 4; k++)
        cr_expect_eq(ag_run_options_set_temperatures(o, bad[k], 1, &err), AG_EINVAL, "T %g",
                     bad[k][0]);
    double many[AG_TEMPERATURES_MAX + 1];
    for (size_t k = 0; k <= AG_TEMPERATURES_MAX; k++)
        many[k] = 1.0 + (double)k;
    cr_expect_eq(ag_run_options_set_temperatures(o, many, AG_TEMPERATURES_MAX + 1, &err), AG_EINVAL);
    cr_expect(strstr(err.message, "at most 64") != NULL, "%s", err.message);
    cr_expect_eq(ag_run_options_set_temperatures(o, many, AG_TEMPERATURES_MAX, &err), AG_OK);
    cr_expect_eq(ag_run_options_set_temperatures(o, NULL, 1, &err), AG_EINVAL);
    cr_expect_eq(ag_run_options_set_temperatures(NULL, many, 1, &err), AG_EINVAL);
    cr_expect_eq(ag_run_options_set_temperatures(o, NULL, 0, &err), AG_OK); /* clears */
    ag_run_options_free(o);
}

static ag_record_list *analyze(const ag_model *m, const ag_run_options *o)
{
    ag_run_input in = AG_RUN_INPUT_DEFAULT;
    in.ids = ids;
    in.n = NTOK;
    ag_record_list *recs = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_run_analyze(m, &in, o, NULL, &recs, &err), AG_OK, "%s", err.message);
    return recs;
}

static void same_values(const ag_record *got, const ag_record *want)
{
    cr_assert(got->layer == want->layer && got->head == want->head && got->text == want->text);
    for (int m = 0; m < AG_M_COUNT; m++) {
        cr_assert_eq(got->kind[m], want->kind[m], "%s", ag_metric_name((ag_metric)m));
        if (want->kind[m] >= AG_V_NUMBER)
            cr_assert(memcmp(&got->value[m], &want->value[m], sizeof(double)) == 0, "%s",
                      ag_metric_name((ag_metric)m));
    }
}

Test(temperatures, analyze_is_one_run_per_t_in_order)
{
    ag_model *m = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_model_load(TINY_GPT2, &m, &err), AG_OK, "%s", err.message);
    const double T[] = {4, 0.25, 1};
    ag_run_options *multi = ag_run_options_new();
    cr_assert_eq(ag_run_options_set_temperatures(multi, T, 3, &err), AG_OK);
    ag_record_list *all = analyze(m, multi);
    size_t off = 0;
    for (size_t k = 0; k < 3; k++) {
        ag_run_options *one = ag_run_options_new();
        cr_assert_eq(ag_run_options_set_normalizer(one, AG_NORMALIZER_SOFTMAX, T[k], &err), AG_OK);
        ag_record_list *single = analyze(m, one);
        size_t n = ag_record_list_count(single);
        cr_assert_eq(n, 16); /* 4 layers x 4 heads */
        for (size_t r = 0; r < n; r++) {
            const ag_record *got = ag_record_list_get(all, off + r);
            same_values(got, ag_record_list_get(single, r));
            cr_assert_eq(ag_record_temperature(got), T[k]);
            cr_assert(isnan(ag_record_temperature(ag_record_list_get(single, r))));
        }
        off += n;
        ag_record_list_free(single);
        ag_run_options_free(one);
    }
    cr_assert_eq(ag_record_list_count(all), off);
    ag_record_list_free(all);
    /* a normaliser set afterwards is the run's: one set of records */
    cr_assert_eq(ag_run_options_set_normalizer(multi, AG_NORMALIZER_SPARSEMAX, 1, &err), AG_OK);
    all = analyze(m, multi);
    cr_assert_eq(ag_record_list_count(all), 16);
    cr_assert(isnan(ag_record_temperature(ag_record_list_get(all, 0))));
    ag_record_list_free(all);
    ag_run_options_free(multi);
    ag_model_free(m);
}

Test(temperatures, similarity_blocks_are_single_runs)
{
    ag_model *m = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_model_load(TINY_GPT2, &m, &err), AG_OK, "%s", err.message);
    ag_run_input in = AG_RUN_INPUT_DEFAULT;
    in.ids = ids;
    in.n = NTOK;
    const double T[] = {0.5, 2};
    enum { K = 16 };
    double multi[2 * K * K], one[K * K];
    ag_run_options *o = ag_run_options_new();
    cr_assert_eq(ag_run_options_set_temperatures(o, T, 2, &err), AG_OK);
    cr_assert_eq(ag_run_similarity(m, &in, o, NULL, multi, &err), AG_OK, "%s", err.message);
    for (size_t k = 0; k < 2; k++) {
        cr_assert_eq(ag_run_options_set_normalizer(o, AG_NORMALIZER_SOFTMAX, T[k], &err), AG_OK);
        cr_assert_eq(ag_run_similarity(m, &in, o, NULL, one, &err), AG_OK, "%s", err.message);
        cr_assert(memcmp(multi + k * K * K, one, sizeof one) == 0, "block %zu", k);
    }
    /* the blocks differ: T changes the rows compared */
    cr_assert(memcmp(multi, multi + K * K, sizeof one) != 0);
    ag_run_options_free(o);
    ag_model_free(m);
}
