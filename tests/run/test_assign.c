/* test_assign.c — how a distributed run splits the work over ranks
 * (src/run/assign.c, ag_run_assign; docs/scaling.md "How the work is split"): the
 * longest-processing-time rule on the costs given, items of cost 0 (skipped
 * texts) to no rank, ties to the lower index and the lower rank, so every
 * rank computes the same owners. Expected owners are worked out by hand. */
#include <criterion/criterion.h>

#include <stdint.h>
#include <stdlib.h>

#include "attngeom/run.h"

/* The largest load of an assignment. */
static uint64_t max_load(const uint64_t *cost, const int *owner, size_t count, int ranks)
{
    uint64_t load[8] = {0}, top = 0;
    for (size_t i = 0; i < count; i++)
        if (owner[i] >= 0)
            load[owner[i]] += cost[i];
    for (int q = 0; q < ranks; q++)
        top = load[q] > top ? load[q] : top;
    return top;
}

/* Token counts 10, 2 (x8), i.e. costs n^3 = 1000 and 8: by line number the
 * long text and three short ones would share rank 0; by cost the long one
 * is alone and the eight short ones go to rank 1. */
Test(run_assign, by_cost_not_by_line)
{
    uint64_t cost[9] = {1000, 8, 8, 8, 8, 8, 8, 8, 8};
    int owner[9];
    cr_assert_eq(ag_run_assign(cost, 9, 2, owner, NULL), AG_OK);
    cr_assert_eq(owner[0], 0);
    for (int i = 1; i < 9; i++)
        cr_assert_eq(owner[i], 1, "item %d: rank %d", i, owner[i]);
}

/* Costs 5 4 3 3 3 on 2 ranks, longest first to the less loaded rank:
 * loads (5, 0), (5, 4), (5, 7), (8, 7), (8, 10): owners 0 1 1 0 1 and a
 * largest load of 10 against the best 9 (5+4 | 3+3+3) — the rule's
 * textbook worst case, within Graham's 4/3 - 1/6. */
Test(run_assign, graham_example)
{
    uint64_t cost[5] = {5, 4, 3, 3, 3};
    int owner[5], want[5] = {0, 1, 1, 0, 1};
    cr_assert_eq(ag_run_assign(cost, 5, 2, owner, NULL), AG_OK);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(owner[i], want[i], "item %d: rank %d, expected %d", i, owner[i], want[i]);
    cr_assert_eq(max_load(cost, owner, 5, 2), 10);
}

/* Equal costs (weights' layers, matrix's matrices): item k to rank k mod K. */
Test(run_assign, equal_costs_round_robin)
{
    uint64_t cost[7] = {1, 1, 1, 1, 1, 1, 1};
    int owner[7];
    cr_assert_eq(ag_run_assign(cost, 7, 3, owner, NULL), AG_OK);
    for (int i = 0; i < 7; i++)
        cr_assert_eq(owner[i], i % 3, "item %d: rank %d", i, owner[i]);
}

/* Cost 0 (a skipped text) goes to no rank; ties in cost go by index, so
 * the lower line is placed first, on the lower rank. */
Test(run_assign, skipped_and_ties)
{
    uint64_t cost[5] = {0, 27, 0, 27, 64};
    int owner[5];
    cr_assert_eq(ag_run_assign(cost, 5, 2, owner, NULL), AG_OK);
    cr_assert_eq(owner[0], -1);
    cr_assert_eq(owner[2], -1);
    cr_assert_eq(owner[4], 0); /* 64 first */
    cr_assert_eq(owner[1], 1); /* then line 1 (27) on the empty rank */
    cr_assert_eq(owner[3], 1); /* line 3: loads 64 vs 27 */
}

/* One rank takes everything that runs; no items is fine. */
Test(run_assign, one_rank_and_empty)
{
    uint64_t cost[3] = {3, 0, 1};
    int owner[3];
    cr_assert_eq(ag_run_assign(cost, 3, 1, owner, NULL), AG_OK);
    cr_assert_eq(owner[0], 0);
    cr_assert_eq(owner[1], -1);
    cr_assert_eq(owner[2], 0);
    cr_assert_eq(ag_run_assign(cost, 0, 4, owner, NULL), AG_OK);
}
