/* cluster.c — average-linkage hierarchical clustering (UPGMA; Sokal &
 * Michener 1958) of a distance matrix, for the order of the heads in the
 * similarity figure and its dendrogram (ag_plot_cluster_order).
 *
 * The result is scipy's: scipy.cluster.hierarchy.linkage(method="average")
 * gives the linkage matrix Z (its rows sorted by height, a stable sort, and
 * the clusters renumbered by a union-find in that order, so that row i
 * makes cluster n + i and names the smaller cluster id first:
 * scipy/cluster/_hierarchy.pyx, nn_chain and label), and leaves_list(Z) the
 * leaves in the pre-order of the tree from its root, the first-named child
 * first. The merges themselves come from the plain O(n³) algorithm: merge
 * the two clusters at the least average distance, the distance of the new
 * cluster u = s ∪ t to any v being (|s|·d(s,v) + |t|·d(t,v)) / (|s| + |t|)
 * (Lance & Williams 1967), which gives the same tree as scipy's
 * nearest-neighbour chain whenever no two distances tie. Ties are broken
 * deterministically: the pair of least (smaller id, larger id). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plot_int.h"

typedef struct {
    size_t a, b; /* a leaf of each merged cluster */
    double h, size;
} merge;

static size_t uf_find(size_t *parent, size_t x)
{
    size_t r = x;
    while (parent[r] != r)
        r = parent[r];
    while (parent[x] != r) { /* path compression */
        size_t next = parent[x];
        parent[x] = r;
        x = next;
    }
    return r;
}

int ag_plot_cluster_order(const double *dist, size_t n, size_t *order, double *linkage,
                          ag_error *err)
{
    if (n == 0 || !dist || !order)
        return ag_error_set(err, AG_EINVAL, "clustering needs a distance matrix of 1 item or more");
    if (n > AG_PLOT_MAX_CLUSTER)
        return ag_error_set(err, AG_ELIMIT, "clustering takes at most %d items, not %zu",
                            AG_PLOT_MAX_CLUSTER, n);
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (!isfinite(dist[i * n + j]) || dist[i * n + j] != dist[j * n + i])
                return ag_error_set(err, AG_EINVAL, "the distance matrix is not finite and "
                                    "symmetric at (%zu, %zu)", i, j);
    if (n == 1) {
        order[0] = 0;
        return AG_OK;
    }
    /* slots 0..n-1 hold the active clusters: their distances (d, copied),
     * id, size and a leaf; a merged cluster takes the slot of its first part */
    double *d = malloc(n * n * sizeof *d), *size = malloc(n * sizeof *size);
    size_t *id = malloc(n * sizeof *id), *leaf = malloc(n * sizeof *leaf);
    size_t *parent = malloc((2 * n - 1) * sizeof *parent), *stack = malloc(2 * n * sizeof *stack);
    merge *m = malloc((n - 1) * sizeof *m);
    double *Z = linkage ? linkage : malloc((n - 1) * 4 * sizeof *Z);
    unsigned char *active = malloc(n);
    if (!d || !size || !id || !leaf || !parent || !stack || !m || !Z || !active) {
        free(d), free(size), free(id), free(leaf), free(parent), free(stack), free(m);
        free(active);
        if (!linkage)
            free(Z);
        return ag_error_set(err, AG_ENOMEM, "out of memory clustering %zu items", n);
    }
    memcpy(d, dist, n * n * sizeof *d);
    for (size_t i = 0; i < n; i++)
        size[i] = 1, id[i] = leaf[i] = i, active[i] = 1;
    for (size_t k = 0, next_id = n; k + 1 < n; k++, next_id++) {
        size_t bi = 0, bj = 0, blo = 0, bhi = 0;
        double best = INFINITY;
        int found = 0;
        for (size_t i = 0; i < n; i++) {
            if (!active[i])
                continue;
            for (size_t j = i + 1; j < n; j++) {
                if (!active[j])
                    continue;
                double v = d[i * n + j];
                size_t lo = id[i] < id[j] ? id[i] : id[j], hi = id[i] < id[j] ? id[j] : id[i];
                if (!found || v < best || (v == best && (lo < blo || (lo == blo && hi < bhi)))) {
                    best = v, bi = i, bj = j, blo = lo, bhi = hi;
                    found = 1;
                }
            }
        }
        m[k] = (merge){leaf[bi], leaf[bj], best, size[bi] + size[bj]};
        for (size_t v = 0; v < n; v++) /* Lance–Williams, average */
            if (active[v] && v != bi && v != bj) {
                double nv = (size[bi] * d[bi * n + v] + size[bj] * d[bj * n + v]) /
                            (size[bi] + size[bj]);
                d[bi * n + v] = d[v * n + bi] = nv;
            }
        size[bi] += size[bj];
        id[bi] = next_id;
        active[bj] = 0;
    }
    /* rows by height (stable: insertion sort), then scipy's labelling */
    for (size_t k = 1; k + 1 < n; k++)
        for (size_t j = k; j > 0 && m[j - 1].h > m[j].h; j--) {
            merge t = m[j - 1];
            m[j - 1] = m[j];
            m[j] = t;
        }
    for (size_t k = 0; k < 2 * n - 1; k++)
        parent[k] = k;
    for (size_t k = 0; k + 1 < n; k++) {
        size_t ra = uf_find(parent, m[k].a), rb = uf_find(parent, m[k].b);
        Z[4 * k] = (double)(ra < rb ? ra : rb);
        Z[4 * k + 1] = (double)(ra < rb ? rb : ra);
        Z[4 * k + 2] = m[k].h;
        Z[4 * k + 3] = m[k].size;
        parent[ra] = parent[rb] = n + k;
    }
    /* leaves_list: pre-order from the root, Z[., 0] before Z[., 1] */
    size_t top = 0, out = 0;
    stack[top++] = 2 * n - 2;
    while (top > 0) {
        size_t c = stack[--top];
        if (c < n) {
            order[out++] = c;
            continue;
        }
        const double *row = &Z[4 * (c - n)];
        stack[top++] = (size_t)row[1];
        stack[top++] = (size_t)row[0];
    }
    free(d), free(size), free(id), free(leaf), free(parent), free(stack), free(m), free(active);
    if (!linkage)
        free(Z);
    return AG_OK;
}
