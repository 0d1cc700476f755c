/* stored.c — weight values as the safetensors file stores them (F32, F16,
 * BF16 inside the model's mapping), converted exactly to float or double on
 * demand, and scanned for NaN/Inf without converting (model_int.h). */
#include <string.h>

#include "io/io_internal.h"
#include "model_int.h"

static float float_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* BF16 is the top half of a float32: widening is a shift. F16 goes through
 * the library's exact half -> double conversion (its values are floats). */
float agm_at(const agm_tensor *t, size_t i)
{
    switch (t->dt) {
    case AG_DT_BF16:
        return float_from_bits((uint32_t)agi_le16(t->p + 2 * i) << 16);
    case AG_DT_F16:
        return (float)ag_half_to_double(agi_le16(t->p + 2 * i));
    default:
        return float_from_bits(agi_le32(t->p + 4 * i));
    }
}

agm_tensor agm_slice(const agm_tensor *t, size_t i0, size_t n)
{
    return (agm_tensor){t->p + i0 * (t->dt == AG_DT_F32 ? 4 : 2), t->dt, n};
}

/* The dtype switch is outside the loops so each loop is a plain widening. */
void agm_to_float(const agm_tensor *t, size_t i0, size_t cnt, float *dst)
{
    const unsigned char *p = agm_slice(t, i0, cnt).p;
    if (t->dt == AG_DT_BF16)
        for (size_t i = 0; i < cnt; i++)
            dst[i] = float_from_bits((uint32_t)agi_le16(p + 2 * i) << 16);
    else if (t->dt == AG_DT_F16)
        for (size_t i = 0; i < cnt; i++)
            dst[i] = (float)ag_half_to_double(agi_le16(p + 2 * i));
    else
        for (size_t i = 0; i < cnt; i++)
            dst[i] = float_from_bits(agi_le32(p + 4 * i));
}

/* Through float in chunks: float -> double is exact, and this reuses the
 * tight loops above. */
void agm_to_double(const agm_tensor *t, size_t i0, size_t cnt, double *dst)
{
    float buf[1024];
    for (size_t k = 0; k < cnt; k += 1024) {
        size_t c = cnt - k < 1024 ? cnt - k : 1024;
        agm_to_float(t, i0 + k, c, buf);
        for (size_t i = 0; i < c; i++)
            dst[k + i] = buf[i];
    }
}

const float *agm_f32_in_place(const agm_tensor *t)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (t->dt == AG_DT_F32 && (uintptr_t)t->p % _Alignof(float) == 0)
        return (const float *)(const void *)t->p;
#endif
    return NULL;
}

#define SCAN_CHUNK 4096

/* 1 when one of the SCAN_CHUNK values at p (each `size` bytes, exponent
 * mask e) is NaN/Inf. Branch-free loops of a fixed count, which the
 * compiler vectorises even at -O2 (its very-cheap cost model takes loops
 * without remainder): the load-time scan then runs at memory speed. Reads
 * the little-endian bits as host integers: the caller checks the host. */
static int chunk_nonfinite_le(const unsigned char *p, int size, uint32_t e)
{
    uint32_t bad = 0;
    if (size == 4)
        for (size_t i = 0; i < SCAN_CHUNK; i++) {
            uint32_t u;
            memcpy(&u, p + 4 * i, 4);
            bad |= (u & e) == e;
        }
    else
        for (size_t i = 0; i < SCAN_CHUNK; i++) {
            uint16_t u;
            memcpy(&u, p + 2 * i, 2);
            bad |= (uint32_t)((u & e) == e);
        }
    return bad != 0;
}

/* Index of the first NaN/Inf among the stored values (exponent bits all
 * ones), or t->n. Reads the stored bits only, a chunk at a time (above),
 * the values one by one only in a chunk that has one and in the last,
 * partial chunk. Equivalent to testing the converted floats: every finite
 * F16/BF16/F32 value is a finite float. */
size_t agm_first_nonfinite(const agm_tensor *t)
{
    int wide = t->dt == AG_DT_F32, size = wide ? 4 : 2;
    uint32_t e = wide ? 0x7f800000u : t->dt == AG_DT_F16 ? 0x7c00u : 0x7f80u;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const int le = 1;
#else
    const int le = 0;
#endif
    for (size_t i0 = 0; i0 < t->n; i0 += SCAN_CHUNK) {
        size_t end = t->n - i0 < SCAN_CHUNK ? t->n : i0 + SCAN_CHUNK;
        if (le && end - i0 == SCAN_CHUNK && !chunk_nonfinite_le(t->p + i0 * (size_t)size, size, e))
            continue;
        for (size_t i = i0; i < end; i++)
            if (((wide ? agi_le32(t->p + 4 * i) : agi_le16(t->p + 2 * i)) & e) == e)
                return i;
    }
    return t->n;
}
