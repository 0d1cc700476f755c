/* attngeom/core.h — the version, exports and ABI rule, status codes, error
 * details and the dense array type.
 *
 * Conventions shared by the whole library (see attngeom.h for the overview):
 *  - Every fallible function returns an int status: AG_OK (0) or one of the
 *    AG_E* codes below. Library code never prints and never exits.
 *  - Functions that can fail on user data take an `ag_error *err` (may be NULL).
 *    On failure they fill err->status and a one-line, human-readable
 *    err->message that names the offending file/tensor/field when there is one.
 *    The CLI prints exactly that line.
 *  - Ownership: whatever a function hands out through an `out` pointer belongs
 *    to the caller and is released with the matching *_free / *_close.
 *    Inputs are borrowed and never retained after the call returns.
 *  - Threads: the library is thread-safe. It keeps no mutable global state
 *    (no static buffers, no shared random generator — family E seeds a
 *    generator of its own per call; errno texts come from strerror_r), so
 *    any ag_ function may run in several threads at once on different
 *    outputs, sharing read-only objects (attngeom/parallel.h gives the
 *    rules and a pool of worker threads).
 *  - BLAS threads belong to the caller: the library never sets OpenBLAS's
 *    thread count or any other process-wide state. A BLAS call split over
 *    OpenBLAS threads sums in an order that depends on their count, so
 *    results then differ in the last bits between thread counts. The
 *    attngeom CLI therefore runs OpenBLAS on one thread in every call and
 *    parallelises itself (-j: heads, layers, matrices, texts on its own
 *    threads), which gives the same bytes for any -j and any
 *    OPENBLAS_NUM_THREADS; a program of yours gets the same with
 *    openblas_set_num_threads(1) and its own threads. Under an address-space
 *    limit (RLIMIT_AS), OpenBLAS 0.3.21 maps a 128 MiB buffer for each
 *    thread inside a BLAS call at once and retries a failed mapping
 *    forever: the attngeom CLI guards against that (docs/cli.md, "BLAS
 *    threads and memory limits"); a program of yours must too.
 */
#ifndef ATTNGEOM_CORE_H
#define ATTNGEOM_CORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- version and exports ------------------------------------------------ */

/* The version, in this one place: the Makefile reads these three lines for
 * the file name of the shared library (libattngeom.so.0.MINOR.PATCH) and
 * attngeom.pc, the CLI prints ag_version() (--version, "version" in JSON).
 * The example output in docs/man/attngeom.3 shows it too: tests/cli/install.sh
 * fails until a new version is written there. */
#define AG_VERSION_MAJOR 0
#define AG_VERSION_MINOR 1
#define AG_VERSION_PATCH 0
#define AG_VERSION_STR_(x) #x
#define AG_VERSION_STR(x) AG_VERSION_STR_(x)
/* "MAJOR.MINOR.PATCH" of the headers compiled against. */
#define AG_VERSION_STRING AG_VERSION_STR(AG_VERSION_MAJOR) "." \
    AG_VERSION_STR(AG_VERSION_MINOR) "." AG_VERSION_STR(AG_VERSION_PATCH)

/* Marks what the shared library exports. The library is compiled with
 * -fvisibility=hidden, so every function declared in these headers carries
 * AG_EXPORT and nothing else is visible: `nm -D libattngeom.so` lists only
 * ag_ functions, and internal ones may change in any release. */
#if defined(__GNUC__) || defined(__clang__)
#define AG_EXPORT __attribute__((visibility("default")))
#else
#define AG_EXPORT
#endif

/* ABI rule. A program compiled against the headers of release X.Y.Z runs
 * unchanged with the library of any later X.y.z (same MAJOR X).
 *  - Files: the shared library's SONAME is libattngeom.so.MAJOR
 *    (libattngeom.so.0); its file is libattngeom.so.MAJOR.MINOR.PATCH.
 *  - Functions and constants: a PATCH release changes no exported function,
 *    type or constant. A MINOR release keeps the name, parameters and
 *    meaning of every exported function and the values of existing
 *    enumerators (status codes, dtypes, formats, metric ids); it only adds
 *    functions, enumerators (before the *_COUNT ones) and fields at the end
 *    of the structs that allow it (below). Metric ids: a new metric comes
 *    just before AG_M_COUNT, so the tables' column order (the ids' order)
 *    puts it after the columns of earlier releases (as lambda2_condition's).
 *  - AG_M_COUNT and AG_FAMILY_COUNT are the header's counts, not the
 *    running library's: loop to ag_metric_count() instead, and size no
 *    array of your own by them across releases.
 *  - Structs, by who allocates them:
 *    1. Opaque — the library allocates, the caller holds a pointer and
 *       uses functions: ag_record, ag_record_list and ag_metric_set
 *       (metrics.h: they hold one entry per metric, so a new metric would
 *       change their size), and ag_model, ag_tokenizer, ag_safetensors,
 *       ag_aggregate, ag_pool, ag_workers, ag_matrix_work, ag_head_lin, ag_npy_writer,
 *       ag_run_options, ag_selection (run.h), ag_flow_graph (layers.h),
 *       ag_seq2seq (model.h). Nothing of their size
 *       or layout is public.
 *    2. Library memory handed out by const pointer — the caller reads
 *       fields, never allocates or copies one: ag_model_config
 *       (ag_model_get_config), ag_layer_view (a callback's view),
 *       ag_tensor_info (ag_st_info), ag_run_contrib_view (run.h); and
 *       ag_run_result (run.h), which the
 *       library zeroes and a corpus run's callbacks fill. They may gain
 *       fields at their end.
 *    3. Options the caller allocates and the library reads carry their own
 *       size in a leading `size_t size`, set by their *_DEFAULT initializer
 *       (start from it, then set fields): ag_matrix_options,
 *       ag_curvature_options, ag_stability_options, ag_head_extra (stability.h), ag_forward_options,
 *       ag_attn_layer_spec,
 *       ag_aggregate_options, ag_compare_options, ag_output_meta,
 *       ag_plot_page, ag_plot_grid, ag_plot_lines, ag_plot_forest, ag_plot_bars,
 *       ag_run_plot_spec (plot.h),
 *       ag_run_tasks, ag_run_input, ag_run_map, ag_run_dist, ag_run_layer_heads
 *       and ag_run_layer_spec (run.h), ag_contrib_input (contributions.h).
 *       They may gain fields at their end: the
 *       library reads only the `size` bytes the caller's
 *       header knew and takes its defaults for the rest, so an older
 *       program gets today's behaviour for what it never set. A size of 0
 *       (the macro not used) or larger than the library knows (headers
 *       newer than the library) is refused with AG_EINVAL, the message
 *       naming the struct.
 *    4. Fixed — structs the caller allocates that never change within a
 *       MAJOR, because their content is fixed by what they describe or the
 *       library writes them whole into the caller's memory: ag_error and
 *       ag_array (core.h), ag_cell, ag_row and ag_table (records.h), ag_moments
 *       and ag_welch (aggregate.h), ag_sha256 (io.h), ag_head_factors,
 *       ag_head_input, ag_head_qk_norm, ag_rope, ag_rope_extra, ag_attn_weights,
 *       ag_block_params,
 *       ag_contrib_output (contributions.h), ag_run_tensors, ag_lanczos_info,
 *       ag_curvature_edge, ag_plot_series, ag_plot_output, ag_plot_lens_panel; the decoded
 *       inputs ag_image and ag_image_tensor (image.h), ag_audio and
 *       ag_whisper_features (audio.h), ag_run_tensor (run.h); and the
 *       preprocessing settings ag_run_media_config (run.h),
 *       ag_image_config and ag_whisper_fe_config, which hold the fields of
 *       Hugging Face's ViTImageProcessor and WhisperFeatureExtractor that
 *       this MAJOR implements, and ag_image_crop (image.h: what
 *       BitImageProcessor and CLIPImageProcessor add, beside them) (an option beyond them is refused when a
 *       config file asks for it). What they lack
 *       comes as a new struct and new functions in a MINOR release (a new
 *       kind of position encoding: a new head description), never as a
 *       field; new enumerators (a cell kind, a RoPE type) may be added.
 *       What a head has beyond ag_head_input (QK-norm, yarn/longrope,
 *       ALiBi's kind and slope) is appended to ag_head_extra (kind 3).
 *    A new public struct joins one of these four kinds and is listed here
 *    (tests/base/test_abi.c and tests/cli/abi.sh check the rule). */

/* The version of the library running ("0.1.0"), which may differ from the
 * AG_VERSION_STRING the program was compiled with. Static string. */
AG_EXPORT const char *ag_version(void);

/* ---- status codes and errors -------------------------------------------- */

enum {
    AG_OK = 0,
    AG_EINVAL,     /* invalid argument or option value */
    AG_ENOMEM,     /* allocation failed */
    AG_EIO,        /* file cannot be opened, read or written */
    AG_EFORMAT,    /* malformed or truncated file */
    AG_EDTYPE,     /* unsupported dtype */
    AG_ESHAPE,     /* unsupported rank or inconsistent shape */
    AG_ENONFINITE, /* NaN or Inf where finite values are needed */
    AG_ENOTFOUND,  /* named tensor / field / file not present */
    AG_ELIMIT,     /* a header asks for more than the compile-time caps allow */
    AG_ELAPACK,    /* a LAPACK routine reported failure (did not converge) */
    AG_ERANGE,     /* selection out of range */
    AG_EUNSUPPORTED, /* valid input this version does not handle */
    AG_STATUS_COUNT
};

/* Short description of a status code ("malformed file", ...). Never NULL. */
AG_EXPORT const char *ag_strerror(int status);

#define AG_ERROR_MESSAGE_MAX 512

typedef struct {
    int status;                          /* AG_OK when nothing failed */
    char message[AG_ERROR_MESSAGE_MAX];  /* one line, no trailing newline */
} ag_error;

/* Record a failure in err (if non-NULL) and return status. printf-style. */
AG_EXPORT int ag_error_set(ag_error *err, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- text to show ------------------------------------------------------ */

/* Strings taken from files (file and tensor names, config values, tokens) may
 * hold bytes that are not UTF-8, which JSON cannot carry, and control
 * characters, which drive terminals. ag_text_escape writes every such byte as
 * the four characters \xNN (lower-case hex), as Python's
 * bytes.decode('utf-8', 'backslashreplace') does for invalid bytes:
 *  - always: each byte that is not part of a valid UTF-8 character (overlong
 *    forms, surrogates and code points above U+10FFFF are invalid);
 *  - with AG_TEXT_CONTROL: also each byte of a control character: U+0000–
 *    U+001F, U+007F and U+0080–U+009F (C1, written \xc2\xNN).
 * A backslash is kept as it is, so escaping escaped text changes nothing.
 * Error messages (ag_error_set) are escaped with AG_TEXT_CONTROL. */
enum { AG_TEXT_UTF8 = 0, AG_TEXT_CONTROL = 1 };

/* Write the escaped s into dst[size] (NUL-terminated when size > 0; cut only
 * between characters or escapes) and return the length the whole escaped
 * text needs, without the NUL (as snprintf does). dst may be NULL if size is
 * 0. */
AG_EXPORT size_t ag_text_escape(char *dst, size_t size, const char *s, unsigned flags);
/* The escaped s as a new string (free()); NULL when out of memory. */
AG_EXPORT char *ag_text_escape_dup(const char *s, unsigned flags);

/* For "did you mean ...": the Damerau–Levenshtein distance between a and b
 * (unrestricted: insertions, deletions, substitutions and transpositions of
 * adjacent bytes, each costing 1; Lowrance & Wagner 1975), -1 when out of
 * memory. */
AG_EXPORT long ag_text_distance(const char *a, const char *b);
/* The index of the candidate closest to word at a distance of at most max
 * (ties: the first in order), or -1 when none is that close. NULL
 * candidates are skipped. */
AG_EXPORT long ag_text_closest(const char *word, const char *const *candidates, size_t n,
                               long max);

/* ---- dense arrays ------------------------------------------------------ */

#define AG_MAX_DIMS 8

/* A dense, C-ordered (row-major) array of doubles. `data` is owned by the
 * array and released by ag_array_free. */
typedef struct {
    int ndim;
    size_t shape[AG_MAX_DIMS];
    double *data;
} ag_array;

/* Allocate an array of the given shape, zero-filled. Fails with AG_ELIMIT if
 * the element count overflows size_t. */
AG_EXPORT int ag_array_alloc(ag_array *a, int ndim, const size_t *shape, ag_error *err);
/* Number of elements (product of the shape; 1 for ndim 0). */
AG_EXPORT size_t ag_array_size(const ag_array *a);
/* Release a->data and reset *a. Safe on a zeroed or already freed array. */
AG_EXPORT void ag_array_free(ag_array *a);

#ifdef __cplusplus
}
#endif
#endif
