/* test_image.c — images for ViTs (attngeom/image.h, docs/vision.md):
 * decoding against pixels known in closed form (PNGs crafted here byte by
 * byte, with stored deflate blocks, so no encoder is trusted), hostile files
 * (every prefix of a PNG and a JPEG, headers claiming huge or zero sizes,
 * other formats, CMYK), Pillow's resampling against closed forms (a
 * constant stays constant under every filter; the box filter halving is
 * the rounded mean of rounded pairs; nearest picks the centre pixels),
 * ViTImageProcessor's rescale and normalize, preprocessor_config.json, and
 * the .npy writer. The comparison with an independent numpy port and with
 * Pillow over every test image is tests/ref/check_image.py
 * (and check_image_pil.py). */
#include <criterion/criterion.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attngeom.h"
#include "../util/test_io_util.h"

#define IMAGES "tests/data/images/"

TestSuite(image, .fini = tio_cleanup);

/* ---- crafting PNGs ------------------------------------------------------ */

static uint32_t crc32_of(const unsigned char *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
    }
    return ~c;
}

static void put32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

typedef struct {
    unsigned char *b;
    size_t n;
} buf;

static void append(buf *o, const void *p, size_t n)
{
    o->b = realloc(o->b, o->n + n);
    cr_assert_not_null(o->b);
    if (n) /* an empty chunk's data may be NULL */
        memcpy(o->b + o->n, p, n);
    o->n += n;
}

static void add_chunk(buf *o, const char *type, const unsigned char *data, size_t n)
{
    unsigned char len[4], crc[4];
    put32(len, (uint32_t)n);
    append(o, len, 4);
    size_t at = o->n;
    append(o, type, 4);
    append(o, data, n);
    put32(crc, crc32_of(o->b + at, n + 4));
    append(o, crc, 4);
}

/* A zlib stream holding raw in one stored block (raw < 65536 bytes). */
static buf zlib_stored(const unsigned char *raw, size_t n)
{
    buf z = {0};
    uint32_t a = 1, b = 0;
    for (size_t i = 0; i < n; i++) {
        a = (a + raw[i]) % 65521;
        b = (b + a) % 65521;
    }
    unsigned char head[7] = {0x78, 0x01, 0x01, (unsigned char)n, (unsigned char)(n >> 8),
                             (unsigned char)~n, (unsigned char)(~n >> 8)};
    unsigned char adler[4];
    put32(adler, (b << 16) | a);
    append(&z, head, 7);
    append(&z, raw, n);
    append(&z, adler, 4);
    return z;
}

/* A PNG of w x h, bit depth / colour type as given, from its filtered
 * scanlines (each begins with its filter byte); plte/trns optional. */
static buf make_png(uint32_t w, uint32_t h, int depth, int color, const unsigned char *scan,
                    size_t scan_n, const unsigned char *plte, size_t plte_n)
{
    buf o = {0};
    append(&o, "\x89PNG\r\n\x1a\n", 8);
    unsigned char ihdr[13] = {0};
    put32(ihdr, w);
    put32(ihdr + 4, h);
    ihdr[8] = (unsigned char)depth;
    ihdr[9] = (unsigned char)color;
    add_chunk(&o, "IHDR", ihdr, 13);
    if (plte)
        add_chunk(&o, "PLTE", plte, plte_n);
    buf z = zlib_stored(scan, scan_n);
    add_chunk(&o, "IDAT", z.b, z.n);
    free(z.b);
    add_chunk(&o, "IEND", NULL, 0);
    return o;
}

static int decode_buf(const buf *b, const char *name, ag_image *img, ag_error *err)
{
    return ag_image_decode(b->b, b->n, name, img, err);
}

static void expect_pixel(const ag_image *img, size_t x, size_t y, int r, int g, int b)
{
    const unsigned char *p = img->rgb + (y * img->width + x) * 3;
    cr_expect(p[0] == r && p[1] == g && p[2] == b, "pixel (%zu, %zu) = (%d, %d, %d), want "
              "(%d, %d, %d)", x, y, p[0], p[1], p[2], r, g, b);
}

/* ---- decoding: closed forms -------------------------------------------- */

Test(image, png_rgb8_exact)
{
    const unsigned char scan[] = {0, 1, 2, 3, 250, 251, 252, 0, 9, 8, 7, 6, 5, 4};
    buf p = make_png(2, 2, 8, 2, scan, sizeof scan, NULL, 0);
    ag_image img;
    ag_error err = {0};
    cr_assert_eq(decode_buf(&p, "t.png", &img, &err), AG_OK, "%s", err.message);
    cr_assert(img.width == 2 && img.height == 2);
    expect_pixel(&img, 0, 0, 1, 2, 3);
    expect_pixel(&img, 1, 0, 250, 251, 252);
    expect_pixel(&img, 0, 1, 9, 8, 7);
    expect_pixel(&img, 1, 1, 6, 5, 4);
    ag_image_free(&img);
    free(p.b);
}

/* PIL: 16-bit gray is mode I;16 (I in Pillow 9), whose RGB is min(v, 255);
 * 16-bit RGB and gray+alpha keep the high byte. */
Test(image, png_16bit_as_pil)
{
    const unsigned char gray[] = {0, 0x00, 0x07, 0x00, 0xff, 0x01, 0x00, 0xff, 0xff};
    buf p = make_png(4, 1, 16, 0, gray, sizeof gray, NULL, 0);
    ag_image img;
    ag_error err = {0};
    cr_assert_eq(decode_buf(&p, "g16.png", &img, &err), AG_OK, "%s", err.message);
    expect_pixel(&img, 0, 0, 7, 7, 7);
    expect_pixel(&img, 1, 0, 255, 255, 255);
    expect_pixel(&img, 2, 0, 255, 255, 255);  /* 256 clips */
    expect_pixel(&img, 3, 0, 255, 255, 255);
    ag_image_free(&img);
    free(p.b);
    const unsigned char rgb[] = {0, 0x12, 0x34, 0xab, 0xcd, 0x00, 0xff};
    p = make_png(1, 1, 16, 2, rgb, sizeof rgb, NULL, 0);
    cr_assert_eq(decode_buf(&p, "rgb16.png", &img, &err), AG_OK, "%s", err.message);
    expect_pixel(&img, 0, 0, 0x12, 0xab, 0x00);
    ag_image_free(&img);
    free(p.b);
    const unsigned char ga[] = {0, 0x80, 0x01, 0x00, 0x00};
    p = make_png(1, 1, 16, 4, ga, sizeof ga, NULL, 0);
    cr_assert_eq(decode_buf(&p, "ga16.png", &img, &err), AG_OK, "%s", err.message);
    expect_pixel(&img, 0, 0, 0x80, 0x80, 0x80);  /* alpha 0 is dropped, not composited */
    ag_image_free(&img);
    free(p.b);
}

/* Low bit depths scale by 255 / (2^d - 1), as PIL's "1", L;2, L;4;
 * palettes are PIL's. */
Test(image, png_low_depth_gray_and_palette)
{
    const unsigned char g2[] = {0, 0x1b};  /* 00 01 10 11 */
    buf p = make_png(4, 1, 2, 0, g2, sizeof g2, NULL, 0);
    ag_image img;
    ag_error err = {0};
    cr_assert_eq(decode_buf(&p, "g2.png", &img, &err), AG_OK, "%s", err.message);
    for (int x = 0; x < 4; x++)
        expect_pixel(&img, (size_t)x, 0, 85 * x, 85 * x, 85 * x);
    ag_image_free(&img);
    free(p.b);
    const unsigned char pal[] = {10, 20, 30, 40, 50, 60};
    const unsigned char idx[] = {0, 0x40};  /* 1-bit: 0 1 0 0 ... */
    p = make_png(2, 1, 1, 3, idx, sizeof idx, pal, sizeof pal);
    cr_assert_eq(decode_buf(&p, "p1.png", &img, &err), AG_OK, "%s", err.message);
    expect_pixel(&img, 0, 0, 10, 20, 30);
    expect_pixel(&img, 1, 0, 40, 50, 60);
    ag_image_free(&img);
    free(p.b);
    /* an index past the PLTE: Pillow's palette starts as the gray ramp */
    const unsigned char idx8[] = {0, 1, 5, 200};
    p = make_png(3, 1, 8, 3, idx8, sizeof idx8, pal, sizeof pal);
    cr_assert_eq(decode_buf(&p, "p8.png", &img, &err), AG_OK, "%s", err.message);
    expect_pixel(&img, 0, 0, 40, 50, 60);
    expect_pixel(&img, 1, 0, 5, 5, 5);
    expect_pixel(&img, 2, 0, 200, 200, 200);
    ag_image_free(&img);
    free(p.b);
}

Test(image, read_committed_files)
{
    ag_image img;
    ag_error err = {0};
    cr_assert_eq(ag_image_read(IMAGES "rgb8_1x1.png", &img, &err), AG_OK, "%s", err.message);
    expect_pixel(&img, 0, 0, 200, 10, 99);
    ag_image_free(&img);
    cr_assert_eq(ag_image_read(IMAGES "gray1_33x17.png", &img, &err), AG_OK, "%s", err.message);
    int seen[2] = {0, 0};
    for (size_t i = 0; i < img.width * img.height * 3; i++) {
        cr_assert(img.rgb[i] == 0 || img.rgb[i] == 255, "1-bit gray decodes to 0 or 255");
        seen[img.rgb[i] == 255]++;
    }
    cr_expect(seen[0] > 0 && seen[1] > 0);
    ag_image_free(&img);
    cr_assert_eq(ag_image_read(IMAGES "gray_30x22.jpg", &img, &err), AG_OK, "%s", err.message);
    cr_assert(img.width == 30 && img.height == 22);
    for (size_t i = 0; i < img.width * img.height; i++)
        cr_assert(img.rgb[3 * i] == img.rgb[3 * i + 1] && img.rgb[3 * i] == img.rgb[3 * i + 2],
                  "gray JPEG replicated");
    ag_image_free(&img);
}

/* ---- hostile files ----------------------------------------------------- */

static void expect_failure(const char *path, int status, const char *needle)
{
    ag_image img = {(size_t)-1, (size_t)-1, (unsigned char *)&img};
    ag_error err = {0};
    int rc = ag_image_read(path, &img, &err);
    cr_expect_eq(rc, status, "%s: status %d, want %d (%s)", path, rc, status, err.message);
    cr_expect_eq(err.status, status);
    cr_expect(strstr(err.message, path) != NULL, "message names the file: %s", err.message);
    cr_expect(strstr(err.message, needle) != NULL, "'%s' in: %s", needle, err.message);
    cr_expect(!strchr(err.message, '\n'), "one line");
    cr_expect(img.rgb == NULL && img.width == 0, "output zeroed on failure");
}

static buf slurp(const char *path)
{
    buf b = {0};
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    unsigned char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        append(&b, chunk, n);
    fclose(f);
    return b;
}

/* Every prefix that stops before the image data ends fails cleanly. */
static void every_prefix_fails(const char *path, size_t tail)
{
    buf b = slurp(path);
    for (size_t n = 0; n + tail < b.n; n++) {
        ag_image img;
        ag_error err = {0};
        int rc = ag_image_decode(b.b, n, "cut", &img, &err);
        cr_assert_eq(rc, AG_EFORMAT, "%s cut to %zu bytes: status %d (%s)", path, n, rc,
                     err.message);
        cr_assert(img.rgb == NULL);
    }
    free(b.b);
}

Test(image, truncated_png_every_prefix)
{
    every_prefix_fails(IMAGES "rgb8_37x23.png", 12);  /* IEND need not be there */
    every_prefix_fails(IMAGES "rgb8_adam7_45x33.png", 12);
    const char *p = tio_path("cut.png");
    buf b = slurp(IMAGES "rgb8_37x23.png");
    cr_assert_eq(tio_write_bytes(p, b.b, b.n / 2), 0);
    free(b.b);
    expect_failure(p, AG_EFORMAT, "truncated");
}

Test(image, truncated_jpeg_every_prefix)
{
    every_prefix_fails(IMAGES "rgb420_40x30.jpg", 0);
    every_prefix_fails(IMAGES "progressive_48x36.jpg", 0);
    const char *p = tio_path("cut.jpg");
    buf b = slurp(IMAGES "rgb420_40x30.jpg");
    cr_assert_eq(tio_write_bytes(p, b.b, b.n - 100), 0);
    free(b.b);
    expect_failure(p, AG_EFORMAT, "truncated");
}

/* A progressive JPEG past AG_JPEG_SCANS_MAX scans (progressive_48x36.jpg
 * with a scan repeated, tests/ref/make_images.py) is refused before it is
 * decoded; cut to its first 100 scans it decodes. */
Test(image, jpeg_scan_cap)
{
    cr_assert_eq(AG_JPEG_SCANS_MAX, 100);
    expect_failure(IMAGES "scans_101_48x36.jpg", AG_ELIMIT,
                   "progressive JPEG with more than 100 scans");
    buf b = slurp(IMAGES "scans_101_48x36.jpg");
    size_t last = 0, scans = 0;
    for (size_t i = 0; i + 1 < b.n; i++)
        if (b.b[i] == 0xff && b.b[i + 1] == 0xda)
            last = i, scans++;
    cr_assert_eq(scans, 101);
    memmove(b.b + last, b.b + b.n - 2, 2); /* the EOI in place of scan 101 */
    ag_image img;
    ag_error err = {0};
    cr_assert_eq(ag_image_decode(b.b, last + 2, "scans_100", &img, &err), AG_OK, "%s", err.message);
    cr_expect(img.width == 48 && img.height == 36);
    ag_image_free(&img);
    free(b.b);
}

Test(image, huge_and_empty_headers)
{
    const unsigned char scan[] = {0, 1, 2, 3};
    buf p = make_png(100000, 100000, 8, 2, scan, sizeof scan, NULL, 0);
    const char *path = tio_path("huge.png");
    cr_assert_eq(tio_write_bytes(path, p.b, p.n), 0);
    expect_failure(path, AG_ELIMIT, "100000 x 100000");
    free(p.b);
    p = make_png(70000, 1, 8, 2, scan, sizeof scan, NULL, 0);  /* a side past the cap */
    path = tio_path("wide.png");
    cr_assert_eq(tio_write_bytes(path, p.b, p.n), 0);
    expect_failure(path, AG_ELIMIT, "70000 x 1");
    free(p.b);
    p = make_png(0, 5, 8, 2, scan, sizeof scan, NULL, 0);
    path = tio_path("zero.png");
    cr_assert_eq(tio_write_bytes(path, p.b, p.n), 0);
    expect_failure(path, AG_EFORMAT, "0 x 5");
    free(p.b);
    path = tio_path("empty.png");
    cr_assert_eq(tio_write_bytes(path, "", 0), 0);
    expect_failure(path, AG_EFORMAT, "empty");
}

Test(image, not_an_image_and_corrupt)
{
    const char *path = tio_path("text.png");
    cr_assert_eq(tio_write_bytes(path, "hello, not a picture\n", 21), 0);
    expect_failure(path, AG_EFORMAT, "not a PNG or JPEG");
    /* a flipped byte in the image data: libpng's CRC check */
    buf b = slurp(IMAGES "rgb8_37x23.png");
    b.b[60] ^= 0x55;
    path = tio_path("crc.png");
    cr_assert_eq(tio_write_bytes(path, b.b, b.n), 0);
    free(b.b);
    expect_failure(path, AG_EFORMAT, "corrupt or truncated PNG");
    /* wrong scanline length: zlib data one row short */
    const unsigned char scan[] = {0, 1, 2, 3};
    buf p = make_png(1, 2, 8, 2, scan, sizeof scan, NULL, 0);
    ag_image img;
    ag_error err = {0};
    cr_expect_eq(decode_buf(&p, "short.png", &img, &err), AG_EFORMAT, "%s", err.message);
    free(p.b);
    expect_failure(IMAGES "cmyk_8x6.jpg", AG_EUNSUPPORTED, "CMYK");
    expect_failure(tio_path("missing.png"), AG_EIO, "No such file");
}

/* ---- resampling: closed forms ------------------------------------------ */

static ag_image pattern(size_t w, size_t h, unsigned seed)
{
    ag_image img = {.width = w, .height = h, .rgb = malloc(w * h * 3)};
    cr_assert_not_null(img.rgb);
    uint32_t s = seed;
    for (size_t i = 0; i < w * h * 3; i++) {
        s = s * 1664525u + 1013904223u;
        img.rgb[i] = (unsigned char)(s >> 24);
    }
    return img;
}

Test(image, constant_stays_constant)
{
    for (int rs = 0; rs < AG_RESAMPLE_COUNT; rs++) {
        ag_image img = pattern(23, 17, 1), out;
        for (size_t i = 0; i < 23 * 17 * 3; i++)
            img.rgb[i] = (unsigned char)(i % 3 == 0 ? 0 : i % 3 == 1 ? 131 : 255);
        ag_error err = {0};
        const size_t sizes[][2] = {{5, 4}, {61, 40}, {9, 50}};
        for (int s = 0; s < 3; s++) {
            cr_assert_eq(ag_image_resize(&img, sizes[s][0], sizes[s][1], rs, &out, &err), AG_OK,
                         "%s", err.message);
            cr_assert(out.width == sizes[s][0] && out.height == sizes[s][1]);
            for (size_t i = 0; i < out.width * out.height; i++)
                cr_assert(out.rgb[3 * i] == 0 && out.rgb[3 * i + 1] == 131 &&
                          out.rgb[3 * i + 2] == 255, "%s at %zu x %zu", ag_resample_name(rs),
                          sizes[s][0], sizes[s][1]);
            ag_image_free(&out);
        }
        ag_image_free(&img);
    }
}

/* BOX halving: each output is its 2 x 2 block, rows first, each pass
 * rounding half up: ((a + b + 1) >> 1, then the same vertically). */
Test(image, box_halving_is_rounded_mean)
{
    ag_image img = pattern(10, 8, 7), out;
    ag_error err = {0};
    cr_assert_eq(ag_image_resize(&img, 5, 4, AG_RESAMPLE_BOX, &out, &err), AG_OK, "%s",
                 err.message);
    for (size_t y = 0; y < 4; y++)
        for (size_t x = 0; x < 5; x++)
            for (int c = 0; c < 3; c++) {
                const unsigned char *r0 = img.rgb + (2 * y * 10 + 2 * x) * 3 + c;
                const unsigned char *r1 = r0 + 10 * 3;
                int top = (r0[0] + r0[3] + 1) >> 1, bottom = (r1[0] + r1[3] + 1) >> 1;
                cr_assert_eq(out.rgb[(y * 5 + x) * 3 + (size_t)c], (top + bottom + 1) >> 1);
            }
    ag_image_free(&out);
    ag_image_free(&img);
}

/* NEAREST shrinking by 3 takes the centre pixel of each 3 x 3 block;
 * BILINEAR enlarging by 2 keeps a row of 1-pixel-wide stripes
 * symmetric, and equal sizes copy. */
Test(image, nearest_and_identity)
{
    ag_image img = pattern(9, 6, 3), out;
    ag_error err = {0};
    cr_assert_eq(ag_image_resize(&img, 3, 2, AG_RESAMPLE_NEAREST, &out, &err), AG_OK);
    for (size_t y = 0; y < 2; y++)
        for (size_t x = 0; x < 3; x++)
            cr_assert_eq(memcmp(out.rgb + (y * 3 + x) * 3, img.rgb + ((3 * y + 1) * 9 + 3 * x + 1) * 3,
                                3), 0);
    ag_image_free(&out);
    for (int rs = 0; rs < AG_RESAMPLE_COUNT; rs++) {
        cr_assert_eq(ag_image_resize(&img, 9, 6, rs, &out, &err), AG_OK);
        cr_assert_eq(memcmp(out.rgb, img.rgb, 9 * 6 * 3), 0);
        ag_image_free(&out);
    }
    ag_image_free(&img);
}

Test(image, resize_arguments)
{
    ag_image img = pattern(4, 4, 1), out;
    ag_error err = {0};
    cr_expect_eq(ag_image_resize(&img, 2, 2, 6, &out, &err), AG_EINVAL);
    cr_expect_eq(ag_image_resize(&img, 0, 2, 2, &out, &err), AG_EINVAL);
    cr_expect_eq(ag_image_resize(&img, 65501, 2, 2, &out, &err), AG_ELIMIT);
    cr_expect_eq(ag_image_resize(&img, 20000, 20000, 2, &out, &err), AG_ELIMIT);
    cr_expect(out.rgb == NULL);
    cr_expect_str_eq(ag_resample_name(AG_RESAMPLE_BICUBIC), "bicubic");
    cr_expect_str_eq(ag_resample_name(42), "unknown");
    ag_image_free(&img);
}

/* ---- rescale, normalize, config ---------------------------------------- */

Test(image, rescale_normalize_closed_forms)
{
    ag_image img = pattern(2, 1, 1);
    const unsigned char px[6] = {0, 255, 128, 51, 1, 254};
    memcpy(img.rgb, px, 6);
    ag_image_config cfg;
    ag_image_config_default(&cfg);
    cfg.do_resize = 0;
    ag_image_tensor t;
    ag_error err = {0};
    cr_assert_eq(ag_image_preprocess(&img, &cfg, &t, &err), AG_OK, "%s", err.message);
    cr_assert(t.channels == 3 && t.height == 1 && t.width == 2);
    /* channels first: R plane (0, 51), G plane (255, 1), B plane (128, 254) */
    cr_expect_eq(t.data[0], -1.0f);
    cr_expect_eq(t.data[2], 1.0f);  /* (1 - 0.5) / 0.5, exact */
    float r128 = (float)(128.0 * (1.0 / 255)), want = (r128 - 0.5f) / 0.5f;
    cr_expect_eq(t.data[4], want);
    cr_expect_eq(t.data[3], ((float)(1.0 / 255) - 0.5f) / 0.5f);
    ag_image_tensor_free(&t);
    cfg.do_rescale = 0;
    cfg.image_mean[1] = 100;
    cfg.image_std[1] = 4;
    cr_assert_eq(ag_image_preprocess(&img, &cfg, &t, &err), AG_OK);
    cr_expect_eq(t.data[2], (255.0f - 100.0f) / 4.0f);  /* G plane */
    cr_expect_eq(t.data[3], (1.0f - 100.0f) / 4.0f);
    cr_expect_eq(t.data[1], (51.0f - 0.5f) / 0.5f);
    ag_image_tensor_free(&t);
    cfg.do_normalize = 0;
    cr_assert_eq(ag_image_preprocess(&img, &cfg, &t, &err), AG_OK);
    cr_expect_eq(t.data[5], 254.0f);
    ag_image_tensor_free(&t);
    ag_image_free(&img);
}

static const char *config_file(const char *json)
{
    const char *p = tio_path("preprocessor_config.json");
    cr_assert_eq(tio_write_bytes(p, json, strlen(json)), 0);
    return p;
}

/* json fails with status, the message naming the file and needle: through
 * ag_image_config_load, and (with_crop) ag_image_processor_load. */
static void load_fails(const char *json, int status, const char *needle, int with_crop)
{
    ag_image_config cfg;
    ag_image_crop crop;
    ag_error err = {0};
    const char *p = config_file(json);
    int rc = with_crop ? ag_image_processor_load(p, &cfg, &crop, &err)
                       : ag_image_config_load(p, &cfg, &err);
    cr_expect_eq(rc, status, "%s -> %s", json, err.message);
    cr_expect(strstr(err.message, p) && strstr(err.message, needle), "%s", err.message);
}

static void config_fails(const char *json, int status, const char *needle)
{
    load_fails(json, status, needle, 0);
}

Test(image, config_values)
{
    ag_image_config cfg;
    ag_error err = {0};
    /* google/vit-base-patch16-224's file */
    const char *p = config_file("{\"do_normalize\": true, \"do_resize\": true, "
                                "\"feature_extractor_type\": \"ViTFeatureExtractor\", "
                                "\"image_mean\": [0.5, 0.5, 0.5], \"image_std\": [0.5, 0.5, 0.5],"
                                " \"resample\": 2, \"size\": 224}");
    cr_assert_eq(ag_image_config_load(p, &cfg, &err), AG_OK, "%s", err.message);
    cr_expect(cfg.height == 224 && cfg.width == 224 && cfg.resample == 2 && cfg.do_rescale);
    cr_expect_eq(cfg.rescale_factor, 1.0 / 255);
    p = config_file("{\"image_processor_type\": \"ViTImageProcessor\", \"size\": {\"height\": "
                    "384, \"width\": 320}, \"resample\": 3, \"rescale_factor\": 0.00392156862745098,"
                    " \"image_mean\": [0.485, 0.456, 0.406], \"image_std\": 0.25, "
                    "\"do_rescale\": false}");
    cr_assert_eq(ag_image_config_load(p, &cfg, &err), AG_OK, "%s", err.message);
    cr_expect(cfg.height == 384 && cfg.width == 320 && cfg.resample == 3 && !cfg.do_rescale);
    cr_expect(cfg.image_mean[2] == 0.406 && cfg.image_std[0] == 0.25 && cfg.image_std[2] == 0.25);
    p = config_file("{}");
    cr_assert_eq(ag_image_config_load(p, &cfg, &err), AG_OK);
    cr_expect(cfg.do_resize && cfg.height == 224 && cfg.resample == AG_RESAMPLE_BILINEAR &&
              cfg.image_mean[0] == 0.5 && cfg.image_std[2] == 0.5);
}

Test(image, config_refusals)
{
    config_fails("{\"size\": {\"shortest_edge\": 224}}", AG_EUNSUPPORTED, "shortest_edge");
    config_fails("{\"do_center_crop\": true}", AG_EUNSUPPORTED, "do_center_crop");
    config_fails("{\"image_processor_type\": \"CLIPImageProcessor\"}", AG_EUNSUPPORTED,
                 "ag_image_processor_load");
    config_fails("{\"image_processor_type\": \"CLIPImageProcessorFast\"}", AG_EUNSUPPORTED,
                 "CLIPImageProcessorFast");
    config_fails("{\"image_processor_type\": \"DeiTImageProcessor\"}", AG_EUNSUPPORTED,
                 "DeiTImageProcessor");
    load_fails("{\"image_processor_type\": \"BitImageProcessorFast\"}", AG_EUNSUPPORTED,
               "BitImageProcessorFast", 1);
    load_fails("{\"image_processor_type\": \"BitImageProcessor\", \"size\": "
               "{\"shortest_edge\": 224, \"longest_edge\": 300}}", AG_EUNSUPPORTED,
               "shortest_edge", 1);
    load_fails("{\"image_processor_type\": \"CLIPImageProcessor\", \"use_square_size\": "
               "true}", AG_EUNSUPPORTED, "use_square_size", 1);
    load_fails("{\"image_processor_type\": \"BitImageProcessor\", \"crop_size\": "
               "{\"shortest_edge\": 224}}", AG_EUNSUPPORTED, "crop_size", 1);
    load_fails("{\"image_processor_type\": \"BitImageProcessor\", \"crop_size\": 0}",
               AG_EINVAL, "crop_size", 1);
    config_fails("{\"resample\": 7}", AG_EINVAL, "resample");
    config_fails("{\"resample\": \"bilinear\"}", AG_EFORMAT, "resample");
    config_fails("{\"image_mean\": [0.5, 0.5]}", AG_EFORMAT, "image_mean");
    config_fails("{\"image_std\": [0.5, 0, 0.5]}", AG_EINVAL, "image_std");
    config_fails("{\"size\": 0}", AG_EINVAL, "size");
    config_fails("{\"size\": {\"height\": 100000, \"width\": 2}}", AG_ELIMIT, "size");
    config_fails("{\"do_resize\": \"yes\"}", AG_EFORMAT, "do_resize");
    config_fails("[1, 2]", AG_EFORMAT, "not a JSON object");
    config_fails("{\"size\": ", AG_EFORMAT, "invalid JSON");
}

/* BitImageProcessor.__init__'s defaults and facebook/dinov2-small's file. */
Test(image, config_bit_clip)
{
    ag_image_config cfg;
    ag_image_crop crop;
    ag_error err = {0};
    const char *p = config_file("{\"image_processor_type\": \"BitImageProcessor\"}");
    cr_assert_eq(ag_image_processor_load(p, &cfg, &crop, &err), AG_OK, "%s", err.message);
    cr_expect(cfg.do_resize && crop.shortest_edge == 224 && cfg.resample == AG_RESAMPLE_BICUBIC);
    cr_expect(crop.do_center_crop && crop.crop_height == 224 && crop.crop_width == 224);
    cr_expect(cfg.image_mean[0] == 0.48145466 && cfg.image_std[2] == 0.27577711);
    cr_expect(cfg.do_convert_rgb && cfg.do_rescale && cfg.rescale_factor == 1.0 / 255);
    p = config_file("{\"crop_size\": {\"height\": 224, \"width\": 224}, "
                    "\"do_center_crop\": true, \"do_convert_rgb\": true, \"do_normalize\": "
                    "true, \"do_rescale\": true, \"do_resize\": true, \"image_mean\": [0.485,"
                    " 0.456, 0.406], \"image_processor_type\": \"BitImageProcessor\", "
                    "\"image_std\": [0.229, 0.224, 0.225], \"resample\": 3, "
                    "\"rescale_factor\": 0.00392156862745098, \"size\": {\"shortest_edge\": "
                    "256}}");
    cr_assert_eq(ag_image_processor_load(p, &cfg, &crop, &err), AG_OK, "%s", err.message);
    cr_expect(crop.shortest_edge == 256 && crop.crop_height == 224 && cfg.image_std[1] == 0.224);
    p = config_file("{\"feature_extractor_type\": \"CLIPFeatureExtractor\", \"size\": 20, "
                    "\"crop_size\": [6, 9]}");
    cr_assert_eq(ag_image_processor_load(p, &cfg, &crop, &err), AG_OK, "%s", err.message);
    cr_expect(crop.shortest_edge == 20 && crop.crop_height == 6 && crop.crop_width == 9);
    p = config_file("{\"image_processor_type\": \"CLIPImageProcessor\", \"size\": "
                    "{\"height\": 5, \"width\": 7}}");
    cr_assert_eq(ag_image_processor_load(p, &cfg, &crop, &err), AG_OK, "%s", err.message);
    cr_expect(crop.shortest_edge == 0 && cfg.height == 5 && cfg.width == 7);
}

/* center_crop on a 3 x 1 image (values 10, 20, 30) without a resize:
 * crop 5 x 2 pads ceil((2 - 1) / 2) = 1 row above, ceil((5 - 3) / 2) = 1
 * column left; crop 1 x 1 takes column (3 - 1) // 2 = 1. */
Test(image, center_crop_closed_form)
{
    unsigned char px[9] = {10, 10, 10, 20, 20, 20, 30, 30, 30};
    ag_image img = {.width = 3, .height = 1, .rgb = px}, out = {0};
    ag_image_config cfg;
    ag_image_crop crop = {0};
    ag_error err = {0};
    ag_image_config_default(&cfg);
    cfg.do_resize = 0;
    crop.do_center_crop = 1;
    crop.crop_width = 5;
    crop.crop_height = 2;
    cr_assert_eq(ag_image_prepare(&img, &cfg, &crop, &out, &err), AG_OK, "%s", err.message);
    cr_assert(out.width == 5 && out.height == 2);
    static const unsigned char want[10] = {0, 0, 0, 0, 0, 0, 10, 20, 30, 0};
    for (size_t i = 0; i < 10; i++)
        cr_expect_eq(out.rgb[i * 3], want[i], "pixel %zu", i);
    ag_image_free(&out);
    crop.crop_width = crop.crop_height = 1;
    cr_assert_eq(ag_image_prepare(&img, &cfg, &crop, &out, &err), AG_OK, "%s", err.message);
    cr_expect(out.width == 1 && out.height == 1 && out.rgb[0] == 20);
    ag_image_free(&out);
}

/* get_resize_output_image_size: a 3 x 1 image by shortest edge 2 is
 * int(2 * 3 / 1) = 6 wide; a 2 x 7 one by 3 is int(3 * 7 / 2) = 10 tall. */
Test(image, shortest_edge_size)
{
    unsigned char px[14 * 3] = {0};
    ag_image img = {.width = 3, .height = 1, .rgb = px}, out = {0};
    ag_image_config cfg;
    ag_image_crop crop = {0};
    ag_error err = {0};
    ag_image_config_default(&cfg);
    crop.shortest_edge = 2;
    cr_assert_eq(ag_image_prepare(&img, &cfg, &crop, &out, &err), AG_OK, "%s", err.message);
    cr_expect(out.width == 6 && out.height == 2, "%zu x %zu", out.width, out.height);
    ag_image_free(&out);
    img = (ag_image){.width = 2, .height = 7, .rgb = px};
    crop.shortest_edge = 3;
    cr_assert_eq(ag_image_prepare(&img, &cfg, &crop, &out, &err), AG_OK, "%s", err.message);
    cr_expect(out.width == 3 && out.height == 10, "%zu x %zu", out.width, out.height);
    ag_image_free(&out);
}

Test(image, pixels_to_npy)
{
    ag_image_config cfg;
    ag_image_config_default(&cfg);
    cfg.height = 7;
    cfg.width = 5;
    ag_image_tensor t;
    ag_error err = {0};
    cr_assert_eq(ag_image_load_pixels(IMAGES "rgba8_29x41.png", &cfg, &t, &err), AG_OK, "%s",
                 err.message);
    const char *p = tio_path("pixels.npy");
    cr_assert_eq(ag_image_tensor_write_npy(p, &t, &err), AG_OK, "%s", err.message);
    ag_array a = {0};
    cr_assert_eq(ag_npy_read(p, &a, &err), AG_OK, "%s", err.message);
    cr_assert(a.ndim == 3 && a.shape[0] == 3 && a.shape[1] == 7 && a.shape[2] == 5);
    for (size_t i = 0; i < 3 * 7 * 5; i++) {
        cr_assert_eq(a.data[i], (double)t.data[i]);
        cr_assert(t.data[i] >= -1.0f && t.data[i] <= 1.0f);
    }
    ag_array_free(&a);
    ag_image_tensor_free(&t);
    ag_image_tensor_free(&t);  /* twice is harmless */
    cr_expect_eq(ag_image_load_pixels(IMAGES "cmyk_8x6.jpg", &cfg, &t, &err), AG_EUNSUPPORTED);
    cr_expect(t.data == NULL);
}
