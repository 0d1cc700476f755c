/* png.c — PNG files into RGB through libpng, with the pixels PIL's
 * Image.open(...).convert("RGB") gives (Pillow's PngImagePlugin._MODES and
 * libImaging/Convert.c):
 *   gray 1/2/4-bit  -> scaled to 8 bits (x 255, x 0x55, x 0x11: PIL's modes
 *                      "1", "L;2", "L;4"), replicated to R = G = B;
 *   gray 16-bit     -> PIL's mode I;16, whose RGB conversion clips:
 *                      min(v, 255) (Convert.c, I16_RGB / I16L_L);
 *   other 16-bit    -> the high byte of each sample ("RGB;16B", "LA;16B",
 *                      "RGBA;16B");
 *   alpha, tRNS     -> dropped, never composited;
 *   palette         -> looked up in PIL's palette: 256 entries, the gray
 *                      ramp (i, i, i) under the file's PLTE entries
 *                      (ImagingPaletteNew), so indices past the PLTE give
 *                      gray, as in Pillow (libpng would give black).
 * libpng reports errors through longjmp: everything that must be freed
 * after a failure lives in a pngctx reached through a pointer, and the
 * setjmp sits in decode_with_libpng alone. */
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "media_int.h"

typedef struct {
    const char *name;
    const unsigned char *bytes;
    size_t len, pos;
    png_structp png;
    png_infop info;
    unsigned char *rows;       /* (passes > 1 ? height : 1, rowbytes) */
    int paletted;
    unsigned char lut[256][3]; /* palette index -> RGB, when paletted */
    char message[200];         /* libpng's error text */
} pngctx;

static void on_error(png_structp png, png_const_charp msg)
{
    pngctx *c = png_get_error_ptr(png);
    snprintf(c->message, sizeof c->message, "%s", msg ? msg : "error");
    png_longjmp(png, 1);
}

/* Warnings (bad ancillary chunks, profiles) do not stop PIL either. */
static void on_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;
}

static void read_bytes(png_structp png, png_bytep dst, size_t n)
{
    pngctx *c = png_get_io_ptr(png);
    if (n > c->len - c->pos)
        png_error(png, "file is truncated");
    memcpy(dst, c->bytes + c->pos, n);
    c->pos += n;
}

static unsigned be16(const unsigned char *p)
{
    return ((unsigned)p[0] << 8) | p[1];
}

/* One decoded row (8 or 16 bits, 1-4 channels, after libpng's expansions;
 * palette indices when lut is given) into RGB, as PIL's unpackers and
 * convert("RGB") do. */
static void row_to_rgb(const unsigned char *s, size_t width, int channels, int depth,
                       const unsigned char (*lut)[3], unsigned char *rgb)
{
    size_t step = (size_t)channels * (depth == 16 ? 2 : 1);
    for (size_t x = 0; x < width; x++, s += step, rgb += 3) {
        if (lut) {
            memcpy(rgb, lut[s[0]], 3);
        } else if (channels >= 3) {
            for (int k = 0; k < 3; k++)
                rgb[k] = s[k * (depth / 8)];  /* the sample, or its high byte */
        } else {
            unsigned v = s[0];
            if (depth == 16 && channels == 1) {  /* I;16 -> RGB clips */
                v = be16(s);
                v = v > 255 ? 255 : v;
            }
            rgb[0] = rgb[1] = rgb[2] = (unsigned char)v;
        }
    }
}

/* The IHDR's sides, read before libpng so that the caps speak first
 * (libpng's own limit is a million per side, past ours). 0: no IHDR where
 * the format puts it (libpng will say what is wrong). */
static int ihdr_dims(const unsigned char *b, size_t len, size_t *w, size_t *h)
{
    if (len < 24 || memcmp(b + 12, "IHDR", 4) != 0)
        return 0;
    *w = ((size_t)b[16] << 24) | ((size_t)b[17] << 16) | ((size_t)b[18] << 8) | b[19];
    *h = ((size_t)b[20] << 24) | ((size_t)b[21] << 16) | ((size_t)b[22] << 8) | b[23];
    return 1;
}

/* PIL's palette for a P image: the gray ramp, then the PLTE's entries;
 * the indices are unpacked to a byte each (png_set_packing). */
static void palette_lut(pngctx *c)
{
    png_colorp plte = NULL;
    int n = 0;
    for (int i = 0; i < 256; i++)
        c->lut[i][0] = c->lut[i][1] = c->lut[i][2] = (unsigned char)i;
    if (png_get_PLTE(c->png, c->info, &plte, &n) == PNG_INFO_PLTE)
        for (int i = 0; i < n && i < 256; i++) {
            c->lut[i][0] = plte[i].red;
            c->lut[i][1] = plte[i].green;
            c->lut[i][2] = plte[i].blue;
        }
    c->paletted = 1;
    png_set_packing(c->png);
}

/* Everything libpng does, under its setjmp. Returns 0, or 1 after a libpng
 * error (c->message says which). */
static int decode_with_libpng(pngctx *c, ag_image *out)
{
    if (setjmp(png_jmpbuf(c->png)))
        return 1;
    png_set_read_fn(c->png, c, read_bytes);
    png_set_user_limits(c->png, AG_IMAGE_MAX_SIDE, AG_IMAGE_MAX_SIDE);
    png_read_info(c->png, c->info);
    png_uint_32 width = png_get_image_width(c->png, c->info);
    png_uint_32 height = png_get_image_height(c->png, c->info);
    if (width != out->width || height != out->height)
        png_error(c->png, "IHDR is not the first chunk");
    int color = png_get_color_type(c->png, c->info);
    int depth = png_get_bit_depth(c->png, c->info);
    if (color == PNG_COLOR_TYPE_PALETTE)
        palette_lut(c);
    else if (color == PNG_COLOR_TYPE_GRAY && depth < 8)
        png_set_expand_gray_1_2_4_to_8(c->png);
    int passes = png_set_interlace_handling(c->png);
    png_read_update_info(c->png, c->info);
    int channels = png_get_channels(c->png, c->info);
    depth = png_get_bit_depth(c->png, c->info);
    size_t rowbytes = png_get_rowbytes(c->png, c->info);
    if ((depth != 8 && depth != 16) || channels < 1 || channels > 4 ||
        rowbytes < (size_t)width * (size_t)channels * (size_t)(depth / 8))
        png_error(c->png, "unexpected layout after expansion");
    if (c->paletted && (channels != 1 || depth != 8))
        png_error(c->png, "unexpected palette layout");
    const unsigned char (*lut)[3] = c->paletted ? (const unsigned char (*)[3])c->lut : NULL;
    size_t nrows = passes > 1 ? height : 1;
    c->rows = malloc(rowbytes * nrows);
    if (!c->rows)
        png_error(c->png, "out of memory");
    if (passes > 1) {
        /* interlaced: every pass refines the whole image */
        for (int p = 0; p < passes; p++)
            for (png_uint_32 y = 0; y < height; y++)
                png_read_row(c->png, c->rows + y * rowbytes, NULL);
        for (png_uint_32 y = 0; y < height; y++)
            row_to_rgb(c->rows + y * rowbytes, width, channels, depth, lut,
                       out->rgb + (size_t)y * width * 3);
    } else {
        for (png_uint_32 y = 0; y < height; y++) {
            png_read_row(c->png, c->rows, NULL);
            row_to_rgb(c->rows, width, channels, depth, lut, out->rgb + (size_t)y * width * 3);
        }
    }
    return 0;
}

int agmi_png_decode(const unsigned char *bytes, size_t len, const char *name, ag_image *out,
                    ag_error *err)
{
    size_t w = 0, h = 0;
    int rc;
    *out = (ag_image){0};
    if (ihdr_dims(bytes, len, &w, &h)) {
        if (w == 0 || h == 0)
            return ag_error_set(err, AG_EFORMAT, "%s: PNG of %zu x %zu pixels (a side is 0)",
                                name, w, h);
        if ((rc = agmi_check_dims(name, w, h, err)) != AG_OK)
            return rc;
    }
    pngctx c = {.name = name, .bytes = bytes, .len = len};
    c.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &c, on_error, on_warning);
    c.info = c.png ? png_create_info_struct(c.png) : NULL;
    if (!c.info) {
        png_destroy_read_struct(c.png ? &c.png : NULL, NULL, NULL);
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", name);
    }
    rc = agmi_image_alloc(name, w ? w : 1, h ? h : 1, out, err);
    if (rc == AG_OK && decode_with_libpng(&c, out) != 0) {
        rc = ag_error_set(err, strcmp(c.message, "out of memory") == 0 ? AG_ENOMEM : AG_EFORMAT,
                          "%s: corrupt or truncated PNG: %s", name, c.message);
        ag_image_free(out);
    }
    png_destroy_read_struct(&c.png, &c.info, NULL);
    free(c.rows);
    return rc;
}
