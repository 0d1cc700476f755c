/* fuzz_image.c — ag_image_decode (PNG through libpng, JPEG through
 * libjpeg; attngeom/image.h) on arbitrary bytes; a decoded image is then
 * preprocessed as ViTImageProcessor does, at a small size, with the filter
 * picked by the input's length. Every failure must carry its status and a
 * message; a success must give an image whose every byte is readable. The
 * decoder's caps apply here as in the library (a progressive JPEG past
 * AG_JPEG_SCANS_MAX scans fails with AG_ELIMIT: seed scans_101_48x36.jpg),
 * so a file repeating a scan cannot make an input run for minutes. */
#include <stdint.h>
#include <stdlib.h>

#include "attngeom.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ag_image img;
    ag_error err = {0};
    int rc = ag_image_decode(data, size, "input", &img, &err);
    if (rc != AG_OK) {
        if (err.status != rc || !err.message[0] || img.rgb)
            abort();
        return 0;
    }
    if (img.width == 0 || img.height == 0)
        abort();
    volatile unsigned sink = 0;
    for (size_t i = 0; i < img.width * img.height * 3; i++)
        sink += img.rgb[i];
    (void)sink;
    ag_image_config cfg;
    ag_image_config_default(&cfg);
    cfg.height = 1 + size % 13;
    cfg.width = 1 + size % 11;
    cfg.resample = (int)(size % AG_RESAMPLE_COUNT);
    ag_image_tensor t;
    if (ag_image_preprocess(&img, &cfg, &t, &err) != AG_OK)
        abort();  /* a decoded image always preprocesses */
    ag_image_tensor_free(&t);
    ag_image_free(&img);
    return 0;
}
