/* jpeg.c — JPEG files into RGB through libjpeg(-turbo), with the decoder
 * settings Pillow leaves as they are (libImaging/JpegDecode.c changes
 * nothing outside draft mode): the islow DCT, fancy upsampling, libjpeg's
 * own YCbCr -> RGB. Grayscale files are replicated to R = G = B, as PIL's
 * L -> RGB conversion does. CMYK and YCCK are refused.
 *
 * libjpeg reports errors through error_exit, which must not return: ours
 * longjmps back to decode_with_libjpeg. A file that ends early makes
 * libjpeg warn (JWRN_JPEG_EOF) and pad with gray; PIL refuses such a file
 * ("image file is truncated"), and so does this decoder.
 *
 * A progressive file's scans are counted by libjpeg's progress monitor,
 * called while it absorbs them: past AG_JPEG_SCANS_MAX it longjmps out as
 * error_exit does (attngeom/image.h says why). */
#include <setjmp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <jerror.h> /* JWRN_JPEG_EOF */

#include "media_int.h"

typedef struct {
    struct jpeg_error_mgr pub;  /* first: libjpeg hands back its address */
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
} jerr;

typedef struct {
    const char *name;
    struct jpeg_decompress_struct cinfo;
    jerr err;
    struct jpeg_progress_mgr progress;
    unsigned char *row;        /* (output_width * output_components) */
    int status;                /* AG_EFORMAT, or AG_EUNSUPPORTED / AG_ELIMIT */
} jpegctx;

static void on_error_exit(j_common_ptr cinfo)
{
    jerr *e = (jerr *)cinfo->err;
    (*cinfo->err->format_message)(cinfo, e->message);
    longjmp(e->jump, 1);
}

/* Warnings are ignored (PIL ignores them: "Corrupt JPEG data: N extraneous
 * bytes" is common in files from cameras) except the end of the data. */
static void on_message(j_common_ptr cinfo, int level)
{
    if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) {
        jerr *e = (jerr *)cinfo->err;
        snprintf(e->message, sizeof e->message, "file is truncated");
        longjmp(e->jump, 1);
    }
}

/* The scan cap: libjpeg numbers the scans it has started. */
static void on_progress(j_common_ptr cinfo)
{
    jpegctx *c = (jpegctx *)((char *)cinfo->progress - offsetof(jpegctx, progress));
    if (c->cinfo.input_scan_number <= AG_JPEG_SCANS_MAX)
        return;
    snprintf(c->err.message, sizeof c->err.message, "progressive JPEG with more than %d scans",
             AG_JPEG_SCANS_MAX);
    c->status = AG_ELIMIT;
    longjmp(c->err.jump, 1);
}

/* One output row (1 or 3 components) into RGB. */
static void row_to_rgb(const unsigned char *s, size_t width, int components, unsigned char *rgb)
{
    if (components == 3) {
        memcpy(rgb, s, width * 3);
        return;
    }
    for (size_t x = 0; x < width; x++, rgb += 3)
        rgb[0] = rgb[1] = rgb[2] = s[x];
}

/* The header's colour space, told to libjpeg as the output we want; a
 * message and a status in c for what is refused. */
static int choose_output(jpegctx *c)
{
    switch (c->cinfo.jpeg_color_space) {
    case JCS_GRAYSCALE:
        c->cinfo.out_color_space = JCS_GRAYSCALE;
        return 0;
    case JCS_YCbCr:
    case JCS_RGB:
        c->cinfo.out_color_space = JCS_RGB;
        return 0;
    case JCS_CMYK:
    case JCS_YCCK:
        snprintf(c->err.message, sizeof c->err.message, "CMYK JPEG is not supported "
                 "(convert it to RGB first)");
        break;
    default:
        snprintf(c->err.message, sizeof c->err.message, "JPEG colour space %d with %d "
                 "components is not supported", (int)c->cinfo.jpeg_color_space,
                 c->cinfo.num_components);
        break;
    }
    c->status = AG_EUNSUPPORTED;
    return 1;
}

/* Everything libjpeg does, under its setjmp. 0, or 1 after a failure
 * (c->err.message and c->status say which). */
static int decode_with_libjpeg(jpegctx *c, const unsigned char *bytes, size_t len, ag_image *out,
                               ag_error *err)
{
    if (setjmp(c->err.jump))
        return 1;
    jpeg_mem_src(&c->cinfo, bytes, (unsigned long)len);
    jpeg_read_header(&c->cinfo, TRUE);
    if (choose_output(c) != 0)
        return 1;
    size_t w = c->cinfo.image_width, h = c->cinfo.image_height;
    if (agmi_check_dims(c->name, w, h, err) != AG_OK) {
        c->status = AG_ELIMIT;
        c->err.message[0] = '\0';  /* err holds the message already */
        return 1;
    }
    jpeg_start_decompress(&c->cinfo);
    int comps = c->cinfo.output_components;
    if (c->cinfo.output_width != w || c->cinfo.output_height != h || (comps != 1 && comps != 3)) {
        snprintf(c->err.message, sizeof c->err.message, "unexpected output layout");
        return 1;
    }
    c->row = malloc(w * (size_t)comps);
    if (!c->row || agmi_image_alloc(c->name, w, h, out, err) != AG_OK) {
        c->status = ag_error_set(err, AG_ENOMEM, "%s: out of memory for %zu x %zu pixels",
                                 c->name, w, h);
        c->err.message[0] = '\0';  /* err holds the message already */
        return 1;
    }
    for (size_t y = 0; y < h; y++) {
        JSAMPROW rowp = c->row;
        if (jpeg_read_scanlines(&c->cinfo, &rowp, 1) != 1) {
            snprintf(c->err.message, sizeof c->err.message, "file is truncated");
            return 1;
        }
        row_to_rgb(c->row, w, comps, out->rgb + y * w * 3);
    }
    jpeg_finish_decompress(&c->cinfo);
    return 0;
}

int agmi_jpeg_decode(const unsigned char *bytes, size_t len, const char *name, ag_image *out,
                     ag_error *err)
{
    *out = (ag_image){0};
    jpegctx *c = calloc(1, sizeof *c);
    if (!c)
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory", name);
    c->name = name;
    c->status = AG_EFORMAT;
    c->cinfo.err = jpeg_std_error(&c->err.pub);
    c->err.pub.error_exit = on_error_exit;
    c->err.pub.emit_message = on_message;
    int rc = AG_OK;
    jpeg_create_decompress(&c->cinfo);  /* zeroes cinfo but for err */
    c->progress.progress_monitor = on_progress;
    c->cinfo.progress = &c->progress;
    if (decode_with_libjpeg(c, bytes, len, out, err) != 0) {
        if (c->err.message[0])
            rc = ag_error_set(err, c->status, "%s: %s%s", name,
                              c->status == AG_EFORMAT ? "corrupt or truncated JPEG: " : "",
                              c->err.message);
        else
            rc = c->status;  /* err was filled where it happened */
        ag_image_free(out);
    }
    jpeg_destroy_decompress(&c->cinfo);
    free(c->row);
    free(c);
    return rc;
}
