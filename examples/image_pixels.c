/* image_pixels.c — the pixel_values a ViT sees for an image file: decode
 * (PNG or JPEG), ViTImageProcessor's (BitImageProcessor's,
 * CLIPImageProcessor's) preprocessing from a
 * preprocessor_config.json (attngeom/image.h, docs/vision.md), the float32
 * tensor (3, H, W) written as .npy.
 *
 *   build/examples/image_pixels IMAGE CONFIG.json OUT.npy [RESIZED.npy]
 *
 * CONFIG may be "-" for ViTImageProcessor's defaults. RESIZED, if given,
 * receives the uint8 image after resizing and any centre crop, (H, W, 3)
 * (before rescaling; the decoded image when neither applies).
 * tests/ref/check_image.py drives this program; on failure it prints the library's one line and
 * exits 1. */
#include <stdio.h>
#include <string.h>

#include <attngeom.h>

static int fail(const ag_error *err)
{
    fprintf(stderr, "image_pixels: %s\n", err->message);
    return 1;
}

/* The uint8 image as a (H, W, 3) .npy of exact values. */
static int write_rgb(const char *path, const ag_image *img, ag_error *err)
{
    size_t shape[3] = {img->height, img->width, 3};
    ag_array a = {0};
    int rc = ag_array_alloc(&a, 3, shape, err);
    if (rc != AG_OK)
        return rc;
    for (size_t i = 0; i < img->height * img->width * 3; i++)
        a.data[i] = img->rgb[i];
    rc = ag_npy_write(path, &a, err);
    ag_array_free(&a);
    return rc;
}

/* The uint8 image after ag_image_prepare: resized, then cropped for BiT
 * and CLIP (the decoded image when neither applies). */
static int write_resized(const char *path, const ag_image *img, const ag_image_config *cfg,
                         const ag_image_crop *crop, ag_error *err)
{
    ag_image prepared = {0};
    int rc = ag_image_prepare(img, cfg, crop, &prepared, err);
    if (rc == AG_OK)
        rc = write_rgb(path, &prepared, err);
    ag_image_free(&prepared);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: image_pixels IMAGE CONFIG.json|- OUT.npy [RESIZED.npy]\n");
        return 2;
    }
    ag_error err = {0};
    ag_image_config cfg;
    ag_image_crop crop = {0};
    ag_image img = {0};
    ag_image_tensor t = {0};
    if (strcmp(argv[2], "-") == 0)
        ag_image_config_default(&cfg);
    else if (ag_image_processor_load(argv[2], &cfg, &crop, &err) != AG_OK)
        return fail(&err);
    int rc = ag_image_read(argv[1], &img, &err);
    if (rc == AG_OK)
        rc = ag_image_preprocess_crop(&img, &cfg, &crop, &t, &err);
    if (rc == AG_OK)
        rc = ag_image_tensor_write_npy(argv[3], &t, &err);
    if (rc == AG_OK && argc == 5)
        rc = write_resized(argv[4], &img, &cfg, &crop, &err);
    ag_image_tensor_free(&t);
    ag_image_free(&img);
    return rc == AG_OK ? 0 : fail(&err);
}
