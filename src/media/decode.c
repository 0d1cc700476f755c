/* decode.c — image files into RGB: the format told by its signature, the
 * caps of attngeom/image.h, the buffer everything decodes into. The PNG and
 * JPEG decoders themselves are png.c and jpeg.c. */
#include <stdlib.h>
#include <string.h>

#include "media_int.h"

static const unsigned char PNG_SIGNATURE[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
/* SOI followed by the first byte of a marker: every JPEG (JFIF, Exif, raw
 * baseline or progressive) begins so; PIL's JpegImagePlugin accepts
 * FF D8 FF too. */
static const unsigned char JPEG_SIGNATURE[3] = {0xff, 0xd8, 0xff};

int agmi_check_dims(const char *name, size_t width, size_t height, ag_error *err)
{
    if (width > AG_IMAGE_MAX_SIDE || height > AG_IMAGE_MAX_SIDE ||
        (double)width * (double)height > (double)AG_IMAGE_MAX_PIXELS)
        return ag_error_set(err, AG_ELIMIT,
                            "%s: image of %zu x %zu pixels exceeds the limits (sides up to %u, "
                            "%u pixels)", name, width, height, AG_IMAGE_MAX_SIDE,
                            AG_IMAGE_MAX_PIXELS);
    return AG_OK;
}

int agmi_image_alloc(const char *name, size_t width, size_t height, ag_image *out, ag_error *err)
{
    *out = (ag_image){0};
    unsigned char *rgb = malloc(width * height * 3 + 1); /* + 1: never malloc(0) */
    if (!rgb)
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory for %zu x %zu pixels", name,
                            width, height);
    *out = (ag_image){.width = width, .height = height, .rgb = rgb};
    return AG_OK;
}

void ag_image_free(ag_image *img)
{
    if (!img)
        return;
    free(img->rgb);
    *img = (ag_image){0};
}

int ag_image_decode(const void *bytes, size_t len, const char *name, ag_image *out, ag_error *err)
{
    if (!out)
        return ag_error_set(err, AG_EINVAL, "ag_image_decode: no output");
    *out = (ag_image){0};
    if (!name)
        name = "image";
    if (!bytes && len > 0)
        return ag_error_set(err, AG_EINVAL, "%s: no bytes", name);
    if (len == 0)
        return ag_error_set(err, AG_EFORMAT, "%s: empty file, not an image", name);
    const unsigned char *b = bytes;
    if (len >= sizeof PNG_SIGNATURE && memcmp(b, PNG_SIGNATURE, sizeof PNG_SIGNATURE) == 0)
        return agmi_png_decode(b, len, name, out, err);
    if (len >= sizeof JPEG_SIGNATURE && memcmp(b, JPEG_SIGNATURE, sizeof JPEG_SIGNATURE) == 0)
        return agmi_jpeg_decode(b, len, name, out, err);
    ag_file_kind kind = ag_file_kind_of(b, len); /* say what it is when it is known */
    if (kind != AG_FILE_UNKNOWN)
        return ag_error_set(err, AG_EFORMAT, "%s: not a PNG or JPEG image: it is %s", name,
                            ag_file_kind_name(kind));
    return ag_error_set(err, AG_EFORMAT, "%s: not a PNG or JPEG image (unknown signature)", name);
}

int ag_image_read(const char *path, ag_image *out, ag_error *err)
{
    if (!out)
        return ag_error_set(err, AG_EINVAL, "ag_image_read: no output");
    *out = (ag_image){0};
    char *buf = NULL;
    size_t len = 0;
    int rc = ag_read_file(path, AG_IMAGE_FILE_MAX, &buf, &len, err);
    if (rc != AG_OK)
        return rc;
    rc = ag_image_decode(buf, len, path, out, err);
    free(buf);
    return rc;
}
