/* resample.c — Pillow's Image.resize on RGB images, bit for bit: a port of
 * libImaging/Resample.c (precompute_coeffs, normalize_coeffs_8bpc,
 * ImagingResampleHorizontal_8bpc / Vertical_8bpc, ImagingResampleInner)
 * and, for NEAREST, of _imaging.c's _resize -> Geometry.c's
 * ImagingScaleAffine. Image.resize with reducing_gap None and no box calls
 * exactly these. docs/vision.md writes the filters and the fixed-point
 * rounding out.
 *
 * The arithmetic is Pillow's to the letter (types included: the box edges
 * are floats, coefficients doubles, then ints with PRECISION_BITS
 * fractional bits), since one rounding done differently moves a uint8 by
 * one. This file is compiled with -ffp-contract=off (Makefile) so that no
 * multiply-add is fused where Pillow's build does not fuse it. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "media_int.h"

/* ---- the filters (Resample.c) ------------------------------------------ */

typedef struct {
    double (*fn)(double x);
    double support;  /* half-width at scale 1 */
} filter;

static double box_filter(double x)
{
    return x > -0.5 && x <= 0.5 ? 1.0 : 0.0;
}

static double bilinear_filter(double x)
{
    x = fabs(x);
    return x < 1.0 ? 1.0 - x : 0.0;
}

static double hamming_filter(double x)
{
    x = fabs(x);
    if (x == 0.0)
        return 1.0;
    if (x >= 1.0)
        return 0.0;
    x = x * M_PI;
    /* float constants promoted to double, as Pillow writes them */
    return sin(x) / x * (0.54f + 0.46f * cos(x));
}

/* Keys' cubic convolution with a = -0.5. */
static double bicubic_filter(double x)
{
    const double a = -0.5;
    x = fabs(x);
    if (x < 1.0)
        return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
    if (x < 2.0)
        return (((x - 5) * x + 8) * x - 4) * a;
    return 0.0;
}

static double sinc_filter(double x)
{
    if (x == 0.0)
        return 1.0;
    x = x * M_PI;
    return sin(x) / x;
}

static double lanczos_filter(double x)
{
    /* sinc windowed by sinc, 3 lobes */
    if (-3.0 <= x && x < 3.0)
        return sinc_filter(x) * sinc_filter(x / 3);
    return 0.0;
}

static const filter *filter_of(int resample)
{
    static const filter BOX = {box_filter, 0.5}, BILINEAR = {bilinear_filter, 1.0},
                        HAMMING = {hamming_filter, 1.0}, BICUBIC = {bicubic_filter, 2.0},
                        LANCZOS = {lanczos_filter, 3.0};
    switch (resample) {
    case AG_RESAMPLE_BOX: return &BOX;
    case AG_RESAMPLE_BILINEAR: return &BILINEAR;
    case AG_RESAMPLE_HAMMING: return &HAMMING;
    case AG_RESAMPLE_BICUBIC: return &BICUBIC;
    case AG_RESAMPLE_LANCZOS: return &LANCZOS;
    default: return NULL;
    }
}

const char *ag_resample_name(int resample)
{
    static const char *const names[AG_RESAMPLE_COUNT] = {"nearest", "lanczos", "bilinear",
                                                         "bicubic", "box", "hamming"};
    return resample >= 0 && resample < AG_RESAMPLE_COUNT ? names[resample] : "unknown";
}

/* ---- coefficients ------------------------------------------------------ */

/* 8 bits of result, 2 of headroom for negative lobes and sums above 1. */
#define PRECISION_BITS (32 - 8 - 2)

/* The coefficients of one axis: output pixel i reads input pixels
 * bounds[2i] .. bounds[2i] + bounds[2i+1] - 1 with weights
 * k[i * ksize + j], integers with PRECISION_BITS fractional bits. */
typedef struct {
    int ksize;
    int *bounds;  /* (out_size, 2): first input pixel, count */
    int32_t *k;   /* (out_size, ksize) */
} coeffs;

static void coeffs_free(coeffs *c)
{
    free(c->bounds);
    free(c->k);
    *c = (coeffs){0};
}

/* Normalised weights of output pixel xx (precompute_coeffs' loop body):
 * the filter centred on the output pixel's centre mapped into the input,
 * stretched by the scale when shrinking (the antialiasing), cut to the
 * input, divided by its sum. */
static void pixel_weights(int in_size, float in0, double scale, double filterscale,
                          double support, const filter *f, int xx, double *w, int *xmin_out,
                          int *count_out)
{
    double center = in0 + (xx + 0.5) * scale;
    double ww = 0.0, ss = 1.0 / filterscale;
    int xmin = (int)(center - support + 0.5);  /* rounds, as Pillow does */
    if (xmin < 0)
        xmin = 0;
    int xmax = (int)(center + support + 0.5);
    if (xmax > in_size)
        xmax = in_size;
    xmax -= xmin;
    for (int x = 0; x < xmax; x++) {
        w[x] = f->fn((x + xmin - center + 0.5) * ss);
        ww += w[x];
    }
    for (int x = 0; x < xmax; x++)
        if (ww != 0.0)
            w[x] /= ww;
    *xmin_out = xmin;
    *count_out = xmax;
}

/* precompute_coeffs + normalize_coeffs_8bpc for in_size -> out_size over
 * the box [in0, in1) (the whole axis here). */
static int coeffs_make(int in_size, float in0, float in1, int out_size, const filter *f,
                       coeffs *c)
{
    double scale = (double)(in1 - in0) / out_size, filterscale = scale;
    if (filterscale < 1.0)
        filterscale = 1.0;
    double support = f->support * filterscale;
    int ksize = (int)ceil(support) * 2 + 1;
    *c = (coeffs){.ksize = ksize};
    c->bounds = malloc((size_t)out_size * 2 * sizeof *c->bounds);
    c->k = calloc((size_t)out_size * (size_t)ksize, sizeof *c->k);
    double *w = malloc((size_t)ksize * sizeof *w);
    if (!c->bounds || !c->k || !w) {
        free(w);
        coeffs_free(c);
        return AG_ENOMEM;
    }
    for (int xx = 0; xx < out_size; xx++) {
        int xmin, count;
        pixel_weights(in_size, in0, scale, filterscale, support, f, xx, w, &xmin, &count);
        int32_t *k = c->k + (size_t)xx * (size_t)ksize;
        for (int x = 0; x < count; x++)  /* round half away from zero */
            k[x] = w[x] < 0 ? (int)(-0.5 + w[x] * (1 << PRECISION_BITS))
                            : (int)(0.5 + w[x] * (1 << PRECISION_BITS));
        c->bounds[2 * xx] = xmin;
        c->bounds[2 * xx + 1] = count;
    }
    free(w);
    return AG_OK;
}

/* clip8: the sum's integer part, clamped to 0..255 (Pillow's table covers
 * -640..639; sums never leave it). >> of a negative int is an arithmetic
 * shift with gcc and clang, as in Pillow. */
static unsigned char clip8(int ss)
{
    int v = ss >> PRECISION_BITS;
    return (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* ---- the two passes ---------------------------------------------------- */

/* One output pixel: the taps first[j * stride] (j < count, 3 bands each)
 * weighted by k[j], summed from a half (the rounding) and clipped. */
static void convolve_pixel(const unsigned char *first, size_t stride, const int32_t *k,
                           int count, unsigned char *o)
{
    int ss0 = 1 << (PRECISION_BITS - 1), ss1 = ss0, ss2 = ss0;
    for (int j = 0; j < count; j++) {
        const unsigned char *p = first + (size_t)j * stride;
        ss0 += p[0] * k[j];
        ss1 += p[1] * k[j];
        ss2 += p[2] * k[j];
    }
    o[0] = clip8(ss0);
    o[1] = clip8(ss1);
    o[2] = clip8(ss2);
}

/* ImagingResampleHorizontal_8bpc, 3 bands: out rows y take in rows
 * y + offset. in (in_h, in_w, 3), out (out_h, out_w, 3). */
static void pass_horizontal(const unsigned char *in, size_t in_w, unsigned char *out,
                            size_t out_w, size_t out_h, int offset, const coeffs *c)
{
    for (size_t yy = 0; yy < out_h; yy++) {
        const unsigned char *row = in + (yy + (size_t)offset) * in_w * 3;
        for (size_t xx = 0; xx < out_w; xx++)
            convolve_pixel(row + (size_t)c->bounds[2 * xx] * 3, 3, c->k + xx * (size_t)c->ksize,
                           c->bounds[2 * xx + 1], out + (yy * out_w + xx) * 3);
    }
}

/* ImagingResampleVertical_8bpc, 3 bands. in (*, w, 3), out (out_h, w, 3). */
static void pass_vertical(const unsigned char *in, size_t w, unsigned char *out, size_t out_h,
                          const coeffs *c)
{
    for (size_t yy = 0; yy < out_h; yy++) {
        const unsigned char *top = in + (size_t)c->bounds[2 * yy] * w * 3;
        for (size_t xx = 0; xx < w; xx++)
            convolve_pixel(top + xx * 3, w * 3, c->k + yy * (size_t)c->ksize,
                           c->bounds[2 * yy + 1], out + (yy * w + xx) * 3);
    }
}

/* ImagingResampleInner with the whole image as box: the vertical
 * coefficients first (they say which input rows matter), the horizontal
 * pass over those rows only, then the vertical pass. An axis whose size
 * does not change is not resampled. */
static int resample_convolution(const ag_image *in, int out_w, int out_h, const filter *f,
                                ag_image *out, ag_error *err)
{
    int in_w = (int)in->width, in_h = (int)in->height;
    int need_h = out_w != in_w, need_v = out_h != in_h;
    coeffs cv = {0}, ch = {0};
    ag_image tmp = {0};
    const ag_image *src = in;
    int rc = coeffs_make(in_h, 0.0f, (float)in_h, out_h, f, &cv);
    if (rc != AG_OK)
        goto oom;
    int ybox_first = cv.bounds[0];
    int ybox_last = cv.bounds[2 * out_h - 2] + cv.bounds[2 * out_h - 1];
    if (need_h) {
        if ((rc = coeffs_make(in_w, 0.0f, (float)in_w, out_w, f, &ch)) != AG_OK)
            goto oom;
        for (int i = 0; i < out_h; i++)
            cv.bounds[2 * i] -= ybox_first;
        if ((rc = agmi_image_alloc("resize", (size_t)out_w, (size_t)(ybox_last - ybox_first),
                                   &tmp, err)) != AG_OK)
            goto done;
        pass_horizontal(in->rgb, in->width, tmp.rgb, tmp.width, tmp.height, ybox_first, &ch);
        src = &tmp;
    }
    if (need_v) {
        if ((rc = agmi_image_alloc("resize", src->width, (size_t)out_h, out, err)) != AG_OK)
            goto done;
        pass_vertical(src->rgb, src->width, out->rgb, (size_t)out_h, &cv);
    } else if (src == &tmp) {
        *out = tmp;  /* the horizontal pass was all (its rows are all rows) */
        tmp = (ag_image){0};
    }
    goto done;
oom:
    rc = ag_error_set(err, AG_ENOMEM, "resize: out of memory");
done:
    coeffs_free(&cv);
    coeffs_free(&ch);
    ag_image_free(&tmp);
    return rc;
}

/* ---- nearest ----------------------------------------------------------- */

/* Pillow's index of a source coordinate: truncation, -1 below 0. */
static int coord(double v)
{
    return v < 0.0 ? -1 : (int)v;
}

/* _resize's affine map a = (in/out, 0, 0; 0, in/out, 0) through
 * ImagingScaleAffine: sample positions accumulated by repeated addition
 * from the first pixel's centre; a position outside the input leaves the
 * pixel 0 (fill). */
static int resample_nearest(const ag_image *in, int out_w, int out_h, ag_image *out,
                            ag_error *err)
{
    double a0 = (double)(float)in->width / out_w, a4 = (double)(float)in->height / out_h;
    int *xin = malloc((size_t)out_w * sizeof *xin);
    int rc = xin ? agmi_image_alloc("resize", (size_t)out_w, (size_t)out_h, out, err)
                 : ag_error_set(err, AG_ENOMEM, "resize: out of memory");
    if (rc != AG_OK) {
        free(xin);
        return rc;
    }
    memset(out->rgb, 0, (size_t)out_w * (size_t)out_h * 3);
    double xo = 0.0 + a0 * 0.5, yo = 0.0 + a4 * 0.5;
    for (int x = 0; x < out_w; x++, xo += a0)
        xin[x] = coord(xo);
    for (int y = 0; y < out_h; y++, yo += a4) {
        int yi = coord(yo);
        if (yi < 0 || yi >= (int)in->height)
            continue;
        const unsigned char *row = in->rgb + (size_t)yi * in->width * 3;
        unsigned char *o = out->rgb + (size_t)y * (size_t)out_w * 3;
        for (int x = 0; x < out_w; x++)
            if (xin[x] >= 0 && xin[x] < (int)in->width)
                memcpy(o + (size_t)x * 3, row + (size_t)xin[x] * 3, 3);
    }
    free(xin);
    return AG_OK;
}

/* ---- Image.resize ------------------------------------------------------ */

int ag_image_resize(const ag_image *in, size_t width, size_t height, int resample, ag_image *out,
                    ag_error *err)
{
    if (!out)
        return ag_error_set(err, AG_EINVAL, "ag_image_resize: no output");
    *out = (ag_image){0};
    if (!in || !in->rgb || in->width == 0 || in->height == 0)
        return ag_error_set(err, AG_EINVAL, "resize: empty input image");
    if (width == 0 || height == 0)
        return ag_error_set(err, AG_EINVAL, "resize: target size %zu x %zu has a side of 0",
                            width, height);
    int rc = agmi_check_dims("resize target", width, height, err);
    if (rc == AG_OK)
        rc = agmi_check_dims("resize input", in->width, in->height, err);
    if (rc != AG_OK)
        return rc;
    const filter *f = filter_of(resample);
    if (resample != AG_RESAMPLE_NEAREST && !f)
        return ag_error_set(err, AG_EINVAL, "resize: unknown resampling filter %d (Pillow's "
                            "are 0-5)", resample);
    if (width == in->width && height == in->height) {  /* _resize's crop: a copy */
        if ((rc = agmi_image_alloc("resize", width, height, out, err)) == AG_OK)
            memcpy(out->rgb, in->rgb, width * height * 3);
        return rc;
    }
    if (resample == AG_RESAMPLE_NEAREST)
        return resample_nearest(in, (int)width, (int)height, out, err);
    return resample_convolution(in, (int)width, (int)height, f, out, err);
}
