/* select.c — attngeom/run.h: the one implementation of layer and head
 * selection (issue 25). A spec "0,2-3" (the CLI's --layers/--heads) or an
 * index list (Python's select()) over `count` items becomes a mask and the
 * increasing list of the selected indices. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "attngeom/run.h"
#include "select_int.h"

struct ag_selection {
    int limit;
    size_t count;
    unsigned char *mask; /* [limit + 1] */
    int *index;          /* [count + 1], increasing */
};

static int selection_alloc(int count, ag_selection **out, ag_error *err)
{
    ag_selection *s = count >= 0 ? calloc(1, sizeof *s) : NULL;
    if (count < 0)
        return ag_error_set(err, AG_EINVAL, "a selection over %d items", count);
    if (s) {
        s->limit = count;
        s->mask = calloc((size_t)count + 1, 1);
        s->index = malloc(((size_t)count + 1) * sizeof *s->index);
    }
    if (!s || !s->mask || !s->index) {
        ag_selection_free(s);
        return ag_error_set(err, AG_ENOMEM, "out of memory");
    }
    *out = s;
    return AG_OK;
}

/* The index list from the mask. */
static ag_selection *selection_finish(ag_selection *s)
{
    s->count = 0;
    for (int i = 0; i < s->limit; i++)
        if (s->mask[i])
            s->index[s->count++] = i;
    return s;
}

static int selection_fail(ag_selection *s, int status)
{
    ag_selection_free(s);
    return status;
}

int ag_selection_parse(const char *spec, int count, const char *what, ag_selection **out,
                       ag_error *err)
{
    ag_selection *s = NULL;
    *out = NULL;
    const char *w = what ? what : "items";
    int status = selection_alloc(count, &s, err);
    if (status != AG_OK)
        return status;
    if (!spec) {
        memset(s->mask, 1, (size_t)count);
        *out = selection_finish(s);
        return AG_OK;
    }
    const char *p = spec;
    for (;;) {
        char *end;
        errno = 0;
        long lo = strtol(p, &end, 10), hi = lo;
        int bad = end == p || errno || lo < 0;
        if (!bad && *end == '-') {
            const char *q = end + 1;
            hi = strtol(q, &end, 10);
            bad = end == q || errno || hi < lo;
        }
        if (bad || (*end && *end != ','))
            return selection_fail(s, ag_error_set(err, AG_EINVAL,
                                                  "%s takes a list like 0,2-3, not '%s'", w, spec));
        if (hi >= count)
            return selection_fail(s, ag_error_set(err, AG_ERANGE,
                                                  "%s %s is out of range: there are %d %s (0-%d)",
                                                  w, spec, count, w, count - 1));
        memset(s->mask + lo, 1, (size_t)(hi - lo + 1));
        if (!*end)
            break;
        p = end + 1;
    }
    *out = selection_finish(s);
    return AG_OK;
}

static int compare_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int agr_select_unique(const int *idx, size_t n, const char *what, int **out, size_t *count,
                      ag_error *err)
{
    *out = NULL;
    *count = 0;
    for (size_t k = 0; k < n; k++)
        if (idx[k] < 0)
            return ag_error_set(err, AG_EINVAL, "%s: negative index %d", what, idx[k]);
    int *sorted = n ? malloc(n * sizeof *sorted) : NULL;
    if (n && !sorted)
        return ag_error_set(err, AG_ENOMEM, "out of memory");
    size_t m = 0;
    if (n) {
        memcpy(sorted, idx, n * sizeof *sorted);
        qsort(sorted, n, sizeof *sorted, compare_int);
        for (size_t k = 0; k < n; k++)
            if (m == 0 || sorted[m - 1] != sorted[k])
                sorted[m++] = sorted[k];
    }
    *out = sorted;
    *count = m;
    return AG_OK;
}

int ag_selection_from_list(const int *idx, size_t n, int count, const char *what,
                           ag_selection **out, ag_error *err)
{
    ag_selection *s = NULL;
    *out = NULL;
    const char *w = what ? what : "items";
    for (size_t k = 0; idx && k < n; k++)
        if (idx[k] < 0)
            return ag_error_set(err, AG_EINVAL, "%s: negative index %d", w, idx[k]);
    int status = selection_alloc(count, &s, err);
    if (status != AG_OK)
        return status;
    memset(s->mask, idx ? 0 : 1, (size_t)count);
    for (size_t k = 0; idx && k < n; k++) {
        if (idx[k] >= count)
            return selection_fail(s, ag_error_set(err, AG_ERANGE, "%s: %d is outside 0..%d", w,
                                                  idx[k], count - 1));
        s->mask[idx[k]] = 1;
    }
    *out = selection_finish(s);
    return AG_OK;
}

void ag_selection_free(ag_selection *s)
{
    if (s) {
        free(s->mask);
        free(s->index);
    }
    free(s);
}

int ag_selection_limit(const ag_selection *s)
{
    return s ? s->limit : 0;
}

size_t ag_selection_count(const ag_selection *s)
{
    return s ? s->count : 0;
}

const unsigned char *ag_selection_mask(const ag_selection *s)
{
    return s ? s->mask : NULL;
}

const int *ag_selection_indices(const ag_selection *s)
{
    return s ? s->index : NULL;
}

int ag_selection_index(const ag_selection *s, size_t i)
{
    return s && i < s->count ? s->index[i] : -1;
}

int ag_selection_last(const ag_selection *s)
{
    return s && s->count ? s->index[s->count - 1] : -1;
}
