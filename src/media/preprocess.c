/* preprocess.c — transformers' ViTImageProcessor
 * (models/vit/image_processing_vit.py) on one decoded RGB image:
 * preprocessor_config.json over __init__'s defaults, then preprocess():
 * resize (image_transforms.resize -> PIL Image.resize), rescale
 * (image_transforms.rescale: float64 product cast to float32), normalize
 * (image_transforms.normalize: float32, mean and std cast to float32),
 * channels first.
 * BitImageProcessor (models/bit/image_processing_bit.py @0195d72e1961) and
 * CLIPImageProcessor (models/clip/image_processing_clip.py @8f3e5ebe573f),
 * whose __init__, resize and preprocess are the same code ("Copied from
 * ...CLIPImageProcessor.resize"), add a shortest-edge resize
 * (image_utils.get_resize_output_image_size, default_to_square=False) and
 * image_transforms.center_crop between resize and rescale. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "io/io_internal.h"
#include "media_int.h"

/* preprocessor_config.json is a few hundred bytes; this is generous. */
#define CONFIG_MAX_BYTES (1u << 20)

/* transformers' image_utils.IMAGENET_STANDARD_MEAN / _STD. */
#define IMAGENET_STANDARD 0.5

/* transformers' image_utils.OPENAI_CLIP_MEAN / _STD, BiT's and CLIP's
 * defaults. */
static const double OPENAI_CLIP_MEAN[3] = {0.48145466, 0.4578275, 0.40821073};
static const double OPENAI_CLIP_STD[3] = {0.26862954, 0.26130258, 0.27577711};

/* BitImageProcessor.__init__'s defaults (CLIPImageProcessor's are the
 * same): size {"shortest_edge": 224}, BICUBIC, crop_size 224 x 224,
 * rescale 1/255, OPENAI_CLIP_MEAN/STD, do_convert_rgb True. */
static void crop_config_default(ag_image_config *cfg, ag_image_crop *crop)
{
    ag_image_config_default(cfg);
    *crop = (ag_image_crop){.shortest_edge = 224, .do_center_crop = 1, .crop_height = 224,
                            .crop_width = 224};
    cfg->resample = AG_RESAMPLE_BICUBIC;
    memcpy(cfg->image_mean, OPENAI_CLIP_MEAN, sizeof cfg->image_mean);
    memcpy(cfg->image_std, OPENAI_CLIP_STD, sizeof cfg->image_std);
    cfg->do_convert_rgb = 1;
}

void ag_image_config_default(ag_image_config *cfg)
{
    if (!cfg)
        return;
    *cfg = (ag_image_config){
        .do_resize = 1, .height = 224, .width = 224, .resample = AG_RESAMPLE_BILINEAR,
        .do_rescale = 1, .rescale_factor = 1.0 / 255, .do_normalize = 1,
        .image_mean = {IMAGENET_STANDARD, IMAGENET_STANDARD, IMAGENET_STANDARD},
        .image_std = {IMAGENET_STANDARD, IMAGENET_STANDARD, IMAGENET_STANDARD},
        .do_convert_rgb = 0,
    };
}

/* ---- preprocessor_config.json ------------------------------------------ */

typedef struct {
    const char *path;
    json_t *root;
    ag_error *err;
    int crops;        /* BiT / CLIP: shortest_edge sizes and crop_size read */
    ag_image_crop *crop;  /* where they go; NULL: ag_image_config_load */
    const char *key;  /* the size key get_side reports; NULL: "size" */
} cfgctx;

/* A do_* flag: true/false; null is Python's None, which preprocess() takes
 * as false (`if do_resize:`); absent keeps the default. */
static int get_flag(cfgctx *c, const char *key, int *out)
{
    json_t *v = json_object_get(c->root, key);
    if (!v)
        return AG_OK;
    if (!json_is_boolean(v) && !json_is_null(v))
        return ag_error_set(c->err, AG_EFORMAT, "%s: '%s' must be true or false", c->path, key);
    *out = json_is_true(v);
    return AG_OK;
}

/* One side of "size": a positive integer within the caps. */
static int get_side(cfgctx *c, json_t *v, const char *what, size_t *out)
{
    const char *key = c->key ? c->key : "size";
    if (!json_is_integer(v))
        return ag_error_set(c->err, AG_EFORMAT, "%s: '%s' %s must be an integer", c->path, key,
                            what);
    json_int_t n = json_integer_value(v);
    if (n < 1)
        return ag_error_set(c->err, AG_EINVAL, "%s: '%s' %s = %lld must be at least 1", c->path,
                            key, what, (long long)n);
    if (n > AG_IMAGE_MAX_SIDE)
        return ag_error_set(c->err, AG_ELIMIT, "%s: '%s' %s = %lld exceeds the limit of %u",
                            c->path, key, what, (long long)n, AG_IMAGE_MAX_SIDE);
    *out = (size_t)n;
    return AG_OK;
}

/* A {"height": H, "width": W} or [H, W] value of c->key (get_size_dict's
 * list form is (height, width)); any other dict is refused, `why` says
 * what the processor does instead. */
static int get_hw(cfgctx *c, json_t *v, const char *why, size_t *h, size_t *w)
{
    int rc;
    const char *key = c->key ? c->key : "size";
    if (json_is_array(v) && json_array_size(v) == 2) {
        if ((rc = get_side(c, json_array_get(v, 0), "[0] (height)", h)) == AG_OK)
            rc = get_side(c, json_array_get(v, 1), "[1] (width)", w);
        return rc;
    }
    if (!json_is_object(v))
        return ag_error_set(c->err, AG_EFORMAT, "%s: '%s' must be an integer, [height, width] "
                            "or {\"height\": H, \"width\": W}", c->path, key);
    json_t *jh = json_object_get(v, "height"), *jw = json_object_get(v, "width");
    if (!jh || !jw || json_object_size(v) != 2)
        return ag_error_set(c->err, AG_EUNSUPPORTED, "%s: '%s' must be {\"height\": H, "
                            "\"width\": W} (%s)", c->path, key, why);
    if ((rc = get_side(c, jh, "height", h)) == AG_OK)
        rc = get_side(c, jw, "width", w);
    return rc;
}

/* BiT's / CLIP's "size" as get_size_dict(size, default_to_square=False)
 * reads it: an int S is {"shortest_edge": S}; their resize() takes
 * {"shortest_edge"} or {"height", "width"}. {"shortest_edge",
 * "longest_edge"} is refused: resize() would drop longest_edge silently. */
static int get_crop_kind_size(cfgctx *c, json_t *v, ag_image_config *cfg)
{
    json_t *se = json_is_object(v) ? json_object_get(v, "shortest_edge") : NULL;
    if (json_is_integer(v) || (se && json_object_size(v) == 1))
        return get_side(c, se ? se : v, se ? "shortest_edge" : "", &c->crop->shortest_edge);
    c->crop->shortest_edge = 0;
    return get_hw(c, v, "or {\"shortest_edge\": S}; longest_edge and other forms are not "
                  "supported", &cfg->height, &cfg->width);
}

/* "size": ViTImageProcessor's get_size_dict(size) (default_to_square): an
 * int S is {S, S}, [H, W] is {H, W}; a dict must have exactly the keys
 * height and width, since ViTImageProcessor.resize refuses the others. */
static int get_size(cfgctx *c, ag_image_config *cfg)
{
    json_t *v = json_object_get(c->root, "size");
    int rc;
    if (!v || json_is_null(v))
        return AG_OK;
    if (c->crops)
        rc = get_crop_kind_size(c, v, cfg);
    else if (json_is_integer(v)) {
        if ((rc = get_side(c, v, "", &cfg->height)) == AG_OK)
            cfg->width = cfg->height;
    } else
        rc = get_hw(c, v, "ViTImageProcessor resizes to a fixed size; shortest_edge and other "
                    "forms are not supported", &cfg->height, &cfg->width);
    if (rc == AG_OK && !(c->crops && c->crop->shortest_edge))
        rc = agmi_check_dims(c->path, cfg->width, cfg->height, c->err);
    return rc;
}

/* BiT's / CLIP's "crop_size": get_size_dict(crop_size,
 * default_to_square=True): an int S is S x S; center_crop() wants height
 * and width. */
static int get_crop_size(cfgctx *c)
{
    ag_image_crop *cfg = c->crop;
    json_t *v = json_object_get(c->root, "crop_size");
    int rc;
    if (!v || json_is_null(v))
        return AG_OK;
    c->key = "crop_size";
    if (json_is_integer(v)) {
        if ((rc = get_side(c, v, "", &cfg->crop_height)) == AG_OK)
            cfg->crop_width = cfg->crop_height;
    } else
        rc = get_hw(c, v, "center_crop takes no other form", &cfg->crop_height,
                    &cfg->crop_width);
    c->key = NULL;
    if (rc == AG_OK)
        rc = agmi_check_dims(c->path, cfg->crop_width, cfg->crop_height, c->err);
    return rc;
}

static int get_resample(cfgctx *c, ag_image_config *cfg)
{
    json_t *v = json_object_get(c->root, "resample");
    if (!v || json_is_null(v))  /* None: image_transforms.resize uses BILINEAR */
        return AG_OK;
    if (!json_is_integer(v))
        return ag_error_set(c->err, AG_EFORMAT, "%s: 'resample' must be an integer (PIL's "
                            "Resampling: 0 nearest ... 5 hamming)", c->path);
    json_int_t r = json_integer_value(v);
    if (r < 0 || r >= AG_RESAMPLE_COUNT)
        return ag_error_set(c->err, AG_EINVAL, "%s: 'resample' = %lld is not one of PIL's "
                            "filters 0-5", c->path, (long long)r);
    cfg->resample = (int)r;
    return AG_OK;
}

static int get_number(cfgctx *c, json_t *v, const char *key, double *out)
{
    if (!json_is_number(v) || !isfinite(json_number_value(v)))
        return ag_error_set(c->err, AG_EFORMAT, "%s: '%s' must be a finite number or a list "
                            "of 3", c->path, key);
    *out = json_number_value(v);
    return AG_OK;
}

/* image_mean / image_std: one number for every channel, or one per
 * channel (normalize() wants as many as the image has: 3). */
static int get_triple(cfgctx *c, const char *key, double out[3])
{
    json_t *v = json_object_get(c->root, key);
    int rc = AG_OK;
    if (!v || json_is_null(v))
        return AG_OK;
    if (json_is_array(v)) {
        if (json_array_size(v) != 3)
            return ag_error_set(c->err, AG_EFORMAT, "%s: '%s' has %zu values; an RGB image "
                                "needs 3", c->path, key, json_array_size(v));
        for (size_t i = 0; i < 3 && rc == AG_OK; i++)
            rc = get_number(c, json_array_get(v, i), key, &out[i]);
        return rc;
    }
    if ((rc = get_number(c, v, key, &out[0])) == AG_OK)
        out[1] = out[2] = out[0];
    return rc;
}

/* The processors whose preprocess() this is: ViT's (cfg->crops 0) and
 * BiT's / CLIP's (1; CLIPFeatureExtractor is CLIPImageProcessor under its
 * old name). Others (DeiT, BEiT, the torchvision "...Fast" ones, ...)
 * crop, resize or convert differently. */
static int check_type(cfgctx *c, const char *key)
{
    static const char *const crops[] = {"BitImageProcessor", "CLIPImageProcessor",
                                        "CLIPFeatureExtractor"};
    json_t *v = json_object_get(c->root, key);
    if (!v || json_is_null(v))
        return AG_OK;
    const char *t = json_string_value(v);
    if (t && (strcmp(t, "ViTImageProcessor") == 0 || strcmp(t, "ViTFeatureExtractor") == 0))
        return AG_OK;
    for (size_t i = 0; t && i < sizeof crops / sizeof *crops; i++)
        if (strcmp(t, crops[i]) == 0 && c->crop) {
            c->crops = 1;
            return AG_OK;
        } else if (strcmp(t, crops[i]) == 0) {
            return ag_error_set(c->err, AG_EUNSUPPORTED, "%s: '%s' is '%s'; "
                                "ag_image_config_load reads ViTImageProcessor's only "
                                "(ag_image_processor_load reads it)", c->path, key, t);
        }
    return ag_error_set(c->err, AG_EUNSUPPORTED, "%s: '%s' is %s%s%s; only ViTImageProcessor's, "
                        "BitImageProcessor's and CLIPImageProcessor's preprocessing is "
                        "implemented", c->path, key, t ? "'" : "", t ? t : "not a string",
                        t ? "'" : "");
}

static int check_values(cfgctx *c, const ag_image_config *cfg)
{
    json_t *crop = json_object_get(c->root, "do_center_crop");
    json_t *square = json_object_get(c->root, "use_square_size");
    if (!c->crops && crop && json_is_true(crop))
        return ag_error_set(c->err, AG_EUNSUPPORTED, "%s: 'do_center_crop' is true; "
                            "ViTImageProcessor does not crop", c->path);
    /* CLIPImageProcessor.__init__'s Kosmos-2 switch to a square resize. */
    if (square && json_is_true(square))
        return ag_error_set(c->err, AG_EUNSUPPORTED, "%s: 'use_square_size' is true; not "
                            "supported", c->path);
    for (int k = 0; k < 3; k++)
        if (cfg->do_normalize && cfg->image_std[k] == 0)
            return ag_error_set(c->err, AG_EINVAL, "%s: 'image_std'[%d] is 0", c->path, k);
    return AG_OK;
}

static int read_fields(cfgctx *c, ag_image_config *cfg)
{
    int rc;
    json_t *rf = json_object_get(c->root, "rescale_factor");
    if ((rc = check_type(c, "image_processor_type")) != AG_OK ||
        (rc = check_type(c, "feature_extractor_type")) != AG_OK)
        return rc;
    if (c->crops)
        crop_config_default(cfg, c->crop);
    if ((rc = get_flag(c, "do_resize", &cfg->do_resize)) != AG_OK ||
        (rc = get_flag(c, "do_rescale", &cfg->do_rescale)) != AG_OK ||
        (rc = get_flag(c, "do_normalize", &cfg->do_normalize)) != AG_OK ||
        (rc = get_flag(c, "do_convert_rgb", &cfg->do_convert_rgb)) != AG_OK ||
        (c->crops && (rc = get_flag(c, "do_center_crop", &c->crop->do_center_crop)) != AG_OK) ||
        (rc = get_size(c, cfg)) != AG_OK || (rc = get_resample(c, cfg)) != AG_OK ||
        (c->crops && (rc = get_crop_size(c)) != AG_OK) ||
        (rc = get_triple(c, "image_mean", cfg->image_mean)) != AG_OK ||
        (rc = get_triple(c, "image_std", cfg->image_std)) != AG_OK)
        return rc;
    if (rf && !json_is_null(rf) && (rc = get_number(c, rf, "rescale_factor",
                                                     &cfg->rescale_factor)) != AG_OK)
        return rc;
    if (rf && json_is_null(rf) && cfg->do_rescale)
        return ag_error_set(c->err, AG_EFORMAT, "%s: 'rescale_factor' is null while "
                            "do_rescale is true", c->path);
    return check_values(c, cfg);
}

/* Both loaders: crop NULL refuses BiT's and CLIP's types. */
static int config_load(const char *path, ag_image_config *cfg, ag_image_crop *crop,
                       ag_error *err)
{
    if (!path || !cfg)
        return ag_error_set(err, AG_EINVAL, "ag_image_config_load: no path or config");
    ag_image_config_default(cfg);
    if (crop)
        *crop = (ag_image_crop){0};
    json_t *root = NULL;
    int rc = agi_json_load(path, CONFIG_MAX_BYTES, 0, &root, err);
    if (rc != AG_OK)
        return rc;
    if (!json_is_object(root))
        rc = ag_error_set(err, AG_EFORMAT, "%s: not a JSON object", path);
    else
        rc = read_fields(&(cfgctx){.path = path, .root = root, .err = err, .crop = crop}, cfg);
    json_decref(root);
    if (rc != AG_OK) {
        ag_image_config_default(cfg);
        if (crop)
            *crop = (ag_image_crop){0};
    }
    return rc;
}

int ag_image_config_load(const char *path, ag_image_config *cfg, ag_error *err)
{
    return config_load(path, cfg, NULL, err);
}

int ag_image_processor_load(const char *path, ag_image_config *cfg, ag_image_crop *crop,
                            ag_error *err)
{
    if (!crop)
        return ag_error_set(err, AG_EINVAL, "ag_image_processor_load: no crop");
    return config_load(path, cfg, crop, err);
}

/* ---- rescale, normalize, channels first -------------------------------- */

void ag_image_tensor_free(ag_image_tensor *t)
{
    if (!t)
        return;
    free(t->data);
    *t = (ag_image_tensor){0};
}

/* The uint8 image (H, W, 3) into the float32 tensor (3, H, W):
 *   rescale:   r = float32((double)u * rescale_factor)   [rescale()]
 *   normalize: (r - float32(mean[c])) / float32(std[c])  [normalize(), in
 *              float32; without rescale r = float32(u)] */
static void to_tensor(const ag_image *img, const ag_image_config *cfg, float *dst)
{
    size_t hw = img->width * img->height;
    for (int ch = 0; ch < 3; ch++) {
        float mean = (float)cfg->image_mean[ch], std = (float)cfg->image_std[ch];
        float *plane = dst + (size_t)ch * hw;
        for (size_t i = 0; i < hw; i++) {
            unsigned char u = img->rgb[i * 3 + (size_t)ch];
            float r = cfg->do_rescale ? (float)((double)u * cfg->rescale_factor) : (float)u;
            plane[i] = cfg->do_normalize ? (r - mean) / std : r;
        }
    }
}

/* get_resize_output_image_size(image, S, default_to_square=False): the
 * short side becomes S, the long one int(S * long / short). S * long is
 * below 2^53, so the double quotient is Python's correctly rounded one and
 * the cast truncates as int() does. */
static void shortest_edge_size(size_t w, size_t h, size_t s, size_t *ow, size_t *oh)
{
    size_t shorter = w <= h ? w : h, longer = w <= h ? h : w;
    size_t n = (size_t)((double)(s * longer) / (double)shorter);
    *ow = w <= h ? s : n;
    *oh = w <= h ? n : s;
}

/* One axis of image_transforms.center_crop: a crop inside the image starts
 * at (orig - crop) // 2; a larger one pads orig with zeros, ceil((crop -
 * orig) / 2) before it. */
static void crop_axis(size_t orig, size_t crop, size_t *src0, size_t *dst0, size_t *n)
{
    *src0 = orig >= crop ? (orig - crop) / 2 : 0;
    *dst0 = orig >= crop ? 0 : (crop - orig + 1) / 2;
    *n = orig >= crop ? crop : orig;
}

static int center_crop(const ag_image *in, size_t w, size_t h, ag_image *out, ag_error *err)
{
    size_t sx, sy, dx, dy, nx, ny;
    int rc = agmi_check_dims("center_crop", w, h, err);
    if (rc != AG_OK)
        return rc;
    unsigned char *rgb = calloc(w * h * 3, 1);
    if (!rgb)
        return ag_error_set(err, AG_ENOMEM, "center_crop: out of memory");
    crop_axis(in->width, w, &sx, &dx, &nx);
    crop_axis(in->height, h, &sy, &dy, &ny);
    for (size_t y = 0; y < ny; y++)
        memcpy(rgb + ((dy + y) * w + dx) * 3, in->rgb + ((sy + y) * in->width + sx) * 3,
               nx * 3);
    *out = (ag_image){.width = w, .height = h, .rgb = rgb};
    return AG_OK;
}

static int copy_image(const ag_image *in, ag_image *out, ag_error *err)
{
    return center_crop(in, in->width, in->height, out, err);
}

int ag_image_prepare(const ag_image *img, const ag_image_config *cfg, const ag_image_crop *crop,
                     ag_image *out, ag_error *err)
{
    static const ag_image_crop none = {0};
    if (!out)
        return ag_error_set(err, AG_EINVAL, "ag_image_prepare: no output");
    *out = (ag_image){0};
    if (!img || !img->rgb || img->width == 0 || img->height == 0 || !cfg)
        return ag_error_set(err, AG_EINVAL, "ag_image_prepare: no image or config");
    ag_image resized = {0};
    size_t w = cfg->width, h = cfg->height;
    crop = crop ? crop : &none;
    if (cfg->do_resize && crop->shortest_edge)
        shortest_edge_size(img->width, img->height, crop->shortest_edge, &w, &h);
    int rc = cfg->do_resize ? ag_image_resize(img, w, h, cfg->resample, &resized, err)
                            : copy_image(img, &resized, err);
    if (rc != AG_OK || !crop->do_center_crop) {
        *out = resized;
        return rc;
    }
    rc = center_crop(&resized, crop->crop_width, crop->crop_height, out, err);
    ag_image_free(&resized);
    return rc;
}

int ag_image_preprocess(const ag_image *img, const ag_image_config *cfg, ag_image_tensor *out,
                        ag_error *err)
{
    return ag_image_preprocess_crop(img, cfg, NULL, out, err);
}

int ag_image_preprocess_crop(const ag_image *img, const ag_image_config *cfg,
                             const ag_image_crop *crop, ag_image_tensor *out, ag_error *err)
{
    if (!out)
        return ag_error_set(err, AG_EINVAL, "ag_image_preprocess: no output");
    *out = (ag_image_tensor){0};
    ag_image src = {0};
    int rc = ag_image_prepare(img, cfg, crop, &src, err);
    if (rc != AG_OK)
        return rc;
    float *data = malloc(src.width * src.height * 3 * sizeof *data);
    if (!data) {
        ag_image_free(&src);
        return ag_error_set(err, AG_ENOMEM, "preprocess: out of memory");
    }
    to_tensor(&src, cfg, data);
    *out = (ag_image_tensor){.channels = 3, .height = src.height, .width = src.width,
                             .data = data};
    ag_image_free(&src);
    return AG_OK;
}

int ag_image_load_pixels(const char *path, const ag_image_config *cfg, ag_image_tensor *out,
                         ag_error *err)
{
    return ag_image_load_pixels_crop(path, cfg, NULL, out, err);
}

int ag_image_load_pixels_crop(const char *path, const ag_image_config *cfg,
                              const ag_image_crop *crop, ag_image_tensor *out, ag_error *err)
{
    ag_image img = {0};
    if (out)
        *out = (ag_image_tensor){0};
    int rc = ag_image_read(path, &img, err);
    if (rc == AG_OK)
        rc = ag_image_preprocess_crop(&img, cfg, crop, out, err);
    ag_image_free(&img);
    return rc;
}

int ag_image_tensor_write_npy(const char *path, const ag_image_tensor *t, ag_error *err)
{
    if (!path || !t || !t->data)
        return ag_error_set(err, AG_EINVAL, "ag_image_tensor_write_npy: no path or tensor");
    size_t shape[3] = {t->channels, t->height, t->width};
    return ag_npy_write_f32(path, 3, shape, t->data, err); /* <f4: what the model saw */
}
