/* flow.h — inside attention flow (analysis/flow.c): one maximum flow by
 * igraph, under the lock every igraph call takes. The unit tests reach it
 * to check that igraph's failures come back as statuses. */
#ifndef AG_FLOW_H
#define AG_FLOW_H

#include <stdint.h>

#include "attngeom/layers.h"

/* A flow network: n_nodes nodes, n_edges directed edges (edges[2e],
 * edges[2e + 1]) of capacity cap[e] (n_cap values: igraph refuses a count
 * other than n_edges), source and sink node numbers. */
typedef struct {
    int64_t n_nodes, n_edges, n_cap, source, sink;
    int64_t *edges;
    double *cap;
} aga_flow_net;

/* igraph_maxflow_value of net into *value, under the lock, igraph's error
 * handler replaced for the call. AG_OK; AG_ENOMEM or AG_EINVAL "igraph:
 * <reason> (<igraph's error text>)" for what igraph reports. */
int aga_flow_igraph(const aga_flow_net *net, double *value, ag_error *err);

#endif
