/* attngeom/image.h — images for vision transformers: PNG and JPEG decoding,
 * Pillow's resampling and Hugging Face's ViTImageProcessor preprocessing
 * (BitImageProcessor's and CLIPImageProcessor's too: shortest-edge resize
 * and centre crop)
 * (docs/vision.md gives every formula, the caps and what is refused).
 *
 * The pipeline, as transformers' ViTImageProcessor.preprocess runs it on
 * PIL.Image.open(FILE):
 *   decode    -> RGB uint8, as PIL's open + convert("RGB") gives it
 *                (grayscale replicated, alpha dropped, palettes looked up)
 *   resize    -> Pillow's Image.resize(..., resample) bit for bit (uint8)
 *   crop      -> BiT / CLIP only: image_transforms.center_crop (uint8)
 *   rescale   -> float32((double)u8 * rescale_factor)
 *   normalize -> float32: (x - float32(mean[c])) / float32(std[c])
 *   layout    -> channels first, (3, H, W): pixel_values[0]
 *
 * Ownership: ag_image and ag_image_tensor own their pixel buffers; release
 * them with ag_image_free / ag_image_tensor_free (both accept zeroed or
 * already freed objects). Inputs are borrowed for the duration of a call.
 * Messages name the image file (or the config file) at fault.
 */
#ifndef ATTNGEOM_IMAGE_H
#define ATTNGEOM_IMAGE_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Caps checked against a file's header before any pixel buffer is allocated
 * (AG_ELIMIT, naming the file and the dimensions it declares):
 *  - a side longer than AG_IMAGE_MAX_SIDE (65500, the largest JPEG side);
 *  - more than AG_IMAGE_MAX_PIXELS pixels (89478485, Pillow's
 *    MAX_IMAGE_PIXELS: 1024^3 / 4 / 3, a quarter GiB of RGB);
 *  - a file larger than AG_IMAGE_FILE_MAX bytes (read whole into memory).
 * The same side and pixel caps bound the size a preprocessor asks for. */
#define AG_IMAGE_MAX_SIDE   65500u
#define AG_IMAGE_MAX_PIXELS 89478485u
#define AG_IMAGE_FILE_MAX   (512u * 1024 * 1024)
/* A progressive JPEG may have at most this many scans. Each scan passes
 * over the whole image again, so a small file repeating its last scan
 * thousands of times decodes for minutes, while encoders emit about ten
 * (libjpeg's jpeg_simple_progression, cjpeg -progress: 10 for colour, 6
 * for gray). libjpeg-turbo's djpeg -maxscans and TurboJPEG's scan limit
 * stop such files the same way (AG_ELIMIT, "progressive JPEG with more
 * than 100 scans"). */
#define AG_JPEG_SCANS_MAX   100

/* An RGB image, 8 bits per channel, rows top to bottom, no padding. */
typedef struct {
    size_t width, height;
    unsigned char *rgb;  /* (height, width, 3), owned */
} ag_image;

/* Release img->rgb and zero *img. */
AG_EXPORT void ag_image_free(ag_image *img);

/* Decode the PNG or JPEG file at `path` (the format is told by its
 * signature, not its name) into RGB as PIL's Image.open(path).convert("RGB")
 * gives it:
 *  PNG  (libpng): every bit depth and colour type, interlaced or not.
 *       Gray 1/2/4/8-bit: scaled to 8 bits and replicated; 16-bit gray
 *       (PIL's mode I;16): each value v becomes min(v, 255), as Pillow's
 *       I;16 -> RGB conversion does; other 16-bit types keep the high byte
 *       of each sample (PIL's rawmodes RGB;16B, RGBA;16B, LA;16B). Alpha
 *       and tRNS are dropped, never composited; palettes are looked up in
 *       PIL's 256-entry palette (an index past the file's PLTE gives the
 *       gray (i, i, i), as in Pillow).
 *       No gamma or colour-profile correction (PIL applies none).
 *  JPEG (libjpeg, its default decoder settings as Pillow leaves them:
 *       islow DCT, fancy upsampling): grayscale and YCbCr/RGB. CMYK and
 *       YCCK are refused (AG_EUNSUPPORTED). EXIF orientation is ignored,
 *       as ViTImageProcessor ignores it.
 * Errors, each naming `path`: AG_EIO (cannot open or read), AG_EFORMAT (not
 * a PNG or JPEG, empty, truncated or corrupt; the decoder's own message is
 * quoted), AG_ELIMIT (caps above), AG_EUNSUPPORTED, AG_ENOMEM. On success
 * *out owns a new image; on failure *out is zeroed. */
AG_EXPORT int ag_image_read(const char *path, ag_image *out, ag_error *err);

/* The same from `len` bytes in memory; `name` names them in messages. */
AG_EXPORT int ag_image_decode(const void *bytes, size_t len, const char *name, ag_image *out,
                              ag_error *err);

/* ---- Pillow's resampling filters --------------------------------------- */

/* The values of PIL.Image.Resampling (what preprocessor_config.json's
 * "resample" holds). */
typedef enum {
    AG_RESAMPLE_NEAREST = 0,
    AG_RESAMPLE_LANCZOS = 1,
    AG_RESAMPLE_BILINEAR = 2,
    AG_RESAMPLE_BICUBIC = 3,
    AG_RESAMPLE_BOX = 4,
    AG_RESAMPLE_HAMMING = 5,
    AG_RESAMPLE_COUNT
} ag_resample;

/* "nearest", "lanczos", "bilinear", "bicubic", "box", "hamming"; "unknown"
 * for any other value. Static string. */
AG_EXPORT const char *ag_resample_name(int resample);

/* Resize `in` to width x height as Pillow's Image.resize((width, height),
 * resample) does on an RGB image (reducing_gap None, no box), bit for bit:
 * separable fixed-point convolution with antialiasing when shrinking
 * (docs/vision.md), or Pillow's nearest-neighbour scaling. A size equal to
 * the input's copies it. Errors: AG_EINVAL (unknown filter, empty input),
 * AG_ELIMIT (a side or the pixel count above the caps), AG_ENOMEM. On
 * success *out owns a new image. */
AG_EXPORT int ag_image_resize(const ag_image *in, size_t width, size_t height, int resample,
                              ag_image *out, ag_error *err);

/* ---- ViTImageProcessor ------------------------------------------------- */

/* The fields of preprocessor_config.json that ViTImageProcessor reads. */
typedef struct {
    int do_resize;          /* resize to (height, width) first */
    size_t height, width;   /* target size */
    int resample;           /* an ag_resample value */
    int do_rescale;         /* multiply by rescale_factor */
    double rescale_factor;
    int do_normalize;       /* subtract image_mean, divide by image_std */
    double image_mean[3], image_std[3];  /* per channel R, G, B */
    int do_convert_rgb;     /* recorded; images are always converted to RGB */
} ag_image_config;

/* What BitImageProcessor and CLIPImageProcessor add to ag_image_config
 * (a new struct, as core.h's ABI rule has fixed structs grow). Zeroed:
 * none of it (ViTImageProcessor's pipeline). */
typedef struct {
    size_t shortest_edge;   /* > 0: resize so the shorter side is this, the
                               aspect ratio kept; cfg's height/width unused */
    int do_center_crop;     /* then crop (crop_height, crop_width) centred */
    size_t crop_height, crop_width;
} ag_image_crop;

/* ViTImageProcessor.__init__'s defaults: resize to 224 x 224 bilinear,
 * rescale by 1/255, normalize with IMAGENET_STANDARD_MEAN/STD (0.5 each),
 * do_convert_rgb unset (0). */
AG_EXPORT void ag_image_config_default(ag_image_config *cfg);

/* Read preprocessor_config.json at `path` into cfg and crop (zeroed for
 * ViT's) over the defaults of its processor: ViTImageProcessor's (as
 * ag_image_config_load) when "image_processor_type" /
 * "feature_extractor_type" is ViT's or absent; BitImageProcessor's and
 * CLIPImageProcessor's (also "CLIPFeatureExtractor") when it names them:
 * "size" {"shortest_edge": 224} (an int S is {"shortest_edge": S}),
 * bicubic, centre crop "crop_size" 224 x 224 (an int, [H, W] or
 * {"height", "width"}), rescale 1/255, OPENAI_CLIP_MEAN/STD,
 * do_convert_rgb. For those, "size" may also be {"height", "width"} or
 * [H, W]; {"shortest_edge", "longest_edge"} and "use_square_size": true
 * are refused (AG_EUNSUPPORTED). Other errors as ag_image_config_load's. */
AG_EXPORT int ag_image_processor_load(const char *path, ag_image_config *cfg, ag_image_crop *crop,
                                      ag_error *err);

/* Read ViTImageProcessor's preprocessor_config.json at `path` over the
 * defaults. Accepted:
 * "size" as {"height": H, "width": W}, a single int S (S x S) or [H, W];
 * "resample" 0-5; "image_mean"/"image_std" a number or a list of 3;
 * booleans for the do_* keys. Refused, naming the file and the key
 * (AG_EUNSUPPORTED): "size" as {"shortest_edge": ...} or other forms
 * ViTImageProcessor.resize rejects, "do_center_crop": true, and an
 * "image_processor_type" / "feature_extractor_type" other than ViT's (their
 * pipelines differ; ag_image_processor_load reads BiT's and CLIP's). AG_EFORMAT for wrong JSON types, AG_EINVAL for values
 * out of range (a std of 0, a size of 0), AG_ELIMIT for a size above the
 * caps, AG_EIO / AG_ENOTFOUND when the file cannot be read. */
AG_EXPORT int ag_image_config_load(const char *path, ag_image_config *cfg, ag_error *err);

/* pixel_values of one image: float32, channels first. */
typedef struct {
    size_t channels, height, width;  /* 3, H, W */
    float *data;                     /* (channels, height, width), owned */
} ag_image_tensor;

AG_EXPORT void ag_image_tensor_free(ag_image_tensor *t);

/* Preprocess `img` as ViTImageProcessor.preprocess does with `cfg`:
 * resize (if do_resize), rescale (if do_rescale), normalize (if
 * do_normalize), channels first. With neither rescale nor normalize the
 * values are the uint8 ones, as floats. Errors: AG_EINVAL (bad arguments),
 * AG_ELIMIT, AG_ENOMEM. On success *out owns a new tensor. */
AG_EXPORT int ag_image_preprocess(const ag_image *img, const ag_image_config *cfg,
                                  ag_image_tensor *out, ag_error *err);

/* The uint8 stage of BitImageProcessor.preprocess: resize if do_resize
 * (to cfg's (height, width), or by crop->shortest_edge as transformers'
 * get_resize_output_image_size with default_to_square=False: the short
 * side S, the long one int(S * long / short)), then
 * image_transforms.center_crop if crop->do_center_crop (zero padding where
 * the crop is larger). crop NULL: none (ViT's resize alone). Errors as
 * ag_image_resize's. On success *out owns a new image. */
AG_EXPORT int ag_image_prepare(const ag_image *img, const ag_image_config *cfg,
                               const ag_image_crop *crop, ag_image *out, ag_error *err);

/* ag_image_preprocess with BiT's / CLIP's crop (NULL: none): ag_image_prepare,
 * then rescale, normalize and channels first as ag_image_preprocess. */
AG_EXPORT int ag_image_preprocess_crop(const ag_image *img, const ag_image_config *cfg,
                                       const ag_image_crop *crop, ag_image_tensor *out,
                                       ag_error *err);

/* ag_image_read then ag_image_preprocess: the tensor the model sees for the
 * image file at `path`. */
AG_EXPORT int ag_image_load_pixels(const char *path, const ag_image_config *cfg,
                                   ag_image_tensor *out, ag_error *err);
/* The same with BiT's / CLIP's crop (NULL: none). */
AG_EXPORT int ag_image_load_pixels_crop(const char *path, const ag_image_config *cfg,
                                        const ag_image_crop *crop, ag_image_tensor *out,
                                        ag_error *err);

/* Write `t` as a float32 .npy ('<f4') of shape (channels, height, width)
 * through ag_npy_write_f32 (attngeom/io.h): np.load(path) equals
 * pixel_values[0] bit for bit. Errors as ag_npy_write_f32's. */
AG_EXPORT int ag_image_tensor_write_npy(const char *path, const ag_image_tensor *t,
                                        ag_error *err);

#ifdef __cplusplus
}
#endif
#endif
