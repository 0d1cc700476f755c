/* fuzz_matrix_metrics.c — ag_matrix_metrics_ex with every matrix family
 * (AG_FAMILIES_MATRIX: spectrum, attention, geometry, curvature) on an
 * arbitrary small matrix. Input: byte 0 -> m = 1 + b % 16, byte 1 ->
 * n = 1 + b % 16, then m·n little-endian doubles (missing bytes are zero),
 * then optionally 8 more bytes: the edge threshold (else the default).
 * A NaN/Inf entry must give AG_ENONFINITE. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attngeom.h"
#include "../../analysis/metrics_int.h" // the layouts of records and selections

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t m = 1 + data[0] % 16, n = 1 + data[1] % 16, cnt = m * n;
    double M[256];
    memset(M, 0, sizeof M);
    size_t avail = size - 2, take = avail < cnt * 8 ? avail : cnt * 8;
    memcpy(M, data + 2, take);
    ag_matrix_options opt = AG_MATRIX_OPTIONS_DEFAULT;
    int bad_tau = 0;
    if (avail >= cnt * 8 + 8) {
        memcpy(&opt.edge_threshold, data + 2 + cnt * 8, 8);
        bad_tau = isnan(opt.edge_threshold) || opt.edge_threshold > 1;
    }
    int nonfinite = 0;
    for (size_t i = 0; i < cnt; i++)
        nonfinite |= !isfinite(M[i]);

    ag_metric_set sel;
    ag_metric_set_families(&sel, AG_FAMILIES_MATRIX);
    ag_record rec;
    ag_record_init(&rec, 0, 0, m, n);
    ag_error err = {0};
    int rc = ag_matrix_metrics_ex(M, m, n, &sel, &opt, &rec, &err);
    if (nonfinite && !bad_tau && rc != AG_ENONFINITE)
        abort();
    if (!nonfinite && (rc == AG_ENONFINITE))
        abort();
    if (bad_tau && !nonfinite && rc != AG_EINVAL)
        abort();
    if (rc != AG_OK && (err.status != rc || !err.message[0]))
        abort();
    if (rc == AG_OK)
        for (int k = 0; k < AG_M_COUNT; k++)
            if (rec.kind[k] >= AG_V_NUMBER && !isfinite(rec.value[k]))
                abort(); /* numbers in a record are finite */
    return 0;
}
