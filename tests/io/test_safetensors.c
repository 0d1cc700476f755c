/* test_safetensors.c — the safetensors reader (src/io/safetensors.c). */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "attngeom.h"
#include "../util/test_io_util.h"

TestSuite(safetensors, .fini = tio_cleanup);

static ag_safetensors *open_ok(const char *p)
{
    ag_safetensors *st = NULL;
    ag_error err = {0};
    int rc = ag_st_open(p, &st, &err);
    cr_assert_eq(rc, AG_OK, "open failed: %s", err.message);
    cr_assert_not_null(st);
    return st;
}

/* Open must fail with `status` and a message naming the file. */
static void open_fails(const char *p, int status, const char *substr)
{
    ag_safetensors *st = (ag_safetensors *)1;
    ag_error err = {0};
    TIO_ASSERT_FAILS(ag_st_open(p, &st, &err), &err, status, p);
    cr_assert_null(st);
    if (substr)
        TIO_ASSERT_MSG_HAS(&err, substr);
}

static void open_fails_hdr(const char *name, const char *hdr, size_t data_len,
                           int status, const char *substr)
{
    const char *p = tio_path(name);
    unsigned char *d = calloc(1, data_len + 1);
    cr_assert_eq(tio_write_safetensors(p, hdr, d, data_len), 0);
    free(d);
    open_fails(p, status, substr);
}

/* ---- values ---------------------------------------------------------------- */

Test(safetensors, all_float_dtypes_int_f8_and_metadata)
{
    /* data layout: f16[0,8) bf16[8,16) f32[16,32) f64[32,64) i64[64,80)
     * f8[80,84) */
    double vf16[4] = {0.5, -2.25, 65504.0, ldexp(1, -24)};
    double vbf[4] = {1.5, -3.0, ldexp(1, 100), ldexp(1, -133)};
    double vf32[4] = {0.1f, -2.25, ldexp(1, -149), 3.0e38f};
    double vf64[4] = {0.1, -1e-300, 1e300, -0.0};
    double vi64[2] = {-5, 7};
    unsigned char data[84];
    tio_encode_st("F16", vf16, 4, data);
    tio_encode_st("BF16", vbf, 4, data + 8);
    tio_encode_st("F32", vf32, 4, data + 16);
    tio_encode_st("F64", vf64, 4, data + 32);
    tio_encode_st("I64", vi64, 2, data + 64);
    memcpy(data + 80, "\x38\x40\xb8\x00", 4);
    const char *hdr =
        "{\"__metadata__\":{\"format\":\"pt\",\"note\":\"x\"},"
        "\"w64\":{\"dtype\":\"F64\",\"shape\":[2,2],\"data_offsets\":[32,64]},"
        "\"h\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[0,8]},"
        "\"ints\":{\"dtype\":\"I64\",\"shape\":[2],\"data_offsets\":[64,80]},"
        "\"b\":{\"dtype\":\"BF16\",\"shape\":[2,1,2],\"data_offsets\":[8,16]},"
        "\"f8\":{\"dtype\":\"F8_E4M3\",\"shape\":[2,2],\"data_offsets\":[80,84]},"
        "\"s\":{\"dtype\":\"F32\",\"shape\":[1,4],\"data_offsets\":[16,32]}}";
    const char *p = tio_path("all.safetensors");
    cr_assert_eq(tio_write_safetensors(p, hdr, data, sizeof data), 0);
    ag_safetensors *st = open_ok(p);
    cr_assert_str_eq(ag_st_path(st), p);
    cr_assert_eq(ag_st_count(st), 6);
    const char *order[6] = {"h", "b", "s", "w64", "ints", "f8"};
    size_t hdrlen = strlen(hdr);
    for (size_t i = 0; i < 6; i++) {
        const ag_tensor_info *t = ag_st_info(st, i);
        cr_assert_str_eq(t->name, order[i]);
        cr_assert_eq(ag_st_find(st, order[i]), t);
    }
    cr_assert_null(ag_st_info(st, 6));
    cr_assert_null(ag_st_find(st, "nope"));
    cr_assert_null(ag_st_find(st, "__metadata__"));
    cr_assert_str_eq(ag_st_metadata(st, "format"), "pt");
    cr_assert_str_eq(ag_st_metadata(st, "note"), "x");
    cr_assert_null(ag_st_metadata(st, "other"));

    const ag_tensor_info *b = ag_st_find(st, "b");
    cr_assert_eq(b->dtype, AG_DT_BF16);
    cr_assert_eq(b->ndim, 3);
    cr_assert_eq(b->shape[0], 2);
    cr_assert_eq(b->shape[1], 1);
    cr_assert_eq(b->shape[2], 2);
    cr_assert_eq(b->nelem, 4);
    cr_assert_eq(b->nbytes, 8);
    cr_assert_eq(b->offset, 8 + hdrlen + 8);
    const ag_tensor_info *f8 = ag_st_find(st, "f8");
    cr_assert_eq(f8->dtype, AG_DT_F8_E4M3);
    cr_assert_eq(f8->nbytes, 4);

    struct {
        const char *name;
        const double *v;
    } cases[4] = {{"h", vf16}, {"b", vbf}, {"s", vf32}, {"w64", vf64}};
    for (int c = 0; c < 4; c++) {
        ag_array a;
        ag_error err = {0};
        cr_assert_eq(ag_st_read(st, cases[c].name, &a, &err), AG_OK, "%s",
                     err.message);
        cr_assert_eq(ag_array_size(&a), 4);
        for (int i = 0; i < 4; i++)
            cr_assert_eq(a.data[i], cases[c].v[i], "%s[%d]: %.17g != %.17g",
                         cases[c].name, i, a.data[i], cases[c].v[i]);
        ag_array_free(&a);
    }
    /* float32 output */
    float f[4];
    ag_error err = {0};
    cr_assert_eq(ag_st_read_f32(st, ag_st_find(st, "b"), f, &err), AG_OK);
    cr_assert_eq(f[0], 1.5f);
    cr_assert_eq(f[3], (float)ldexp(1, -133));
    cr_assert_eq(ag_st_read_f32(st, ag_st_find(st, "w64"), f, &err), AG_OK);
    cr_assert_eq(f[0], 0.1f);
    cr_assert_eq(f[2], INFINITY); /* 1e300 overflows float */

    /* known, non-float dtypes open fine but cannot be read */
    ag_array a;
    TIO_ASSERT_FAILS(ag_st_read(st, "ints", &a, &err), &err, AG_EDTYPE, p);
    TIO_ASSERT_MSG_HAS(&err, "tensor 'ints' has dtype I64; only F16, BF16, F32, "
                             "F64 values can be read");
    cr_assert_null(a.data);
    TIO_ASSERT_FAILS(ag_st_read(st, "f8", &a, &err), &err, AG_EDTYPE, p);
    TIO_ASSERT_MSG_HAS(&err, "dtype F8_E4M3");
    TIO_ASSERT_FAILS(ag_st_read_f32(st, f8, f, &err), &err, AG_EDTYPE, p);
    ag_st_close(st);
}

Test(safetensors, every_known_dtype_opens)
{
    /* name, bits: from the upstream safetensors Dtype enum */
    static const struct {
        const char *n;
        ag_dtype dt;
        unsigned bits;
    } k[] = {{"BOOL", AG_DT_BOOL, 8},       {"U8", AG_DT_U8, 8},
             {"I8", AG_DT_I8, 8},           {"I16", AG_DT_I16, 16},
             {"U16", AG_DT_U16, 16},        {"I32", AG_DT_I32, 32},
             {"U32", AG_DT_U32, 32},        {"I64", AG_DT_I64, 64},
             {"U64", AG_DT_U64, 64},        {"F4", AG_DT_F4, 4},
             {"F6_E2M3", AG_DT_F6_E2M3, 6}, {"F6_E3M2", AG_DT_F6_E3M2, 6},
             {"F8_E5M2", AG_DT_F8_E5M2, 8}, {"F8_E4M3", AG_DT_F8_E4M3, 8},
             {"F8_E8M0", AG_DT_F8_E8M0, 8}, {"F16", AG_DT_F16, 16},
             {"BF16", AG_DT_BF16, 16},      {"F32", AG_DT_F32, 32},
             {"F64", AG_DT_F64, 64},        {"C64", AG_DT_C64, 64},
             {"F8_E4M3FNUZ", AG_DT_F8_E4M3FNUZ, 8},
             {"F8_E5M2FNUZ", AG_DT_F8_E5M2FNUZ, 8}};
    cr_assert_eq(sizeof k / sizeof k[0], AG_DT_COUNT);
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        cr_assert_str_eq(ag_dtype_name(k[i].dt), k[i].n);
        cr_assert_eq(ag_dtype_bits(k[i].dt), k[i].bits, "%s", k[i].n);
        cr_assert_eq(ag_dtype_is_float(k[i].dt),
                     k[i].dt == AG_DT_F16 || k[i].dt == AG_DT_BF16 ||
                         k[i].dt == AG_DT_F32 || k[i].dt == AG_DT_F64);
        /* 8 elements of the dtype: 8 * bits / 8 = bits bytes */
        char hdr[160], name[48];
        snprintf(hdr, sizeof hdr,
                 "{\"t\":{\"dtype\":\"%s\",\"shape\":[2,4],\"data_offsets\":[0,%u]}}",
                 k[i].n, k[i].bits);
        snprintf(name, sizeof name, "dt_%s.safetensors", k[i].n);
        const char *p = tio_path(name);
        unsigned char d[64] = {0};
        tio_write_safetensors(p, hdr, d, k[i].bits);
        ag_safetensors *st = open_ok(p);
        const ag_tensor_info *t = ag_st_find(st, "t");
        cr_assert_eq(t->dtype, k[i].dt);
        cr_assert_eq(t->nbytes, k[i].bits);
        ag_array a;
        ag_error err = {0};
        int rc = ag_st_read(st, "t", &a, &err);
        cr_assert_eq(rc, ag_dtype_is_float(k[i].dt) ? AG_OK : AG_EDTYPE, "%s: %s",
                     k[i].n, err.message);
        if (rc == AG_OK) {
            cr_assert_eq(a.data[7], 0.0);
            ag_array_free(&a);
        }
        ag_st_close(st);
    }
}

Test(safetensors, scalar_zero_size_and_empty_data_area)
{
    double v = -6.5;
    unsigned char d[4];
    tio_encode_st("F32", &v, 1, d);
    const char *p = tio_path("scalar.safetensors");
    tio_write_safetensors(p,
                          "{\"z\":{\"dtype\":\"F64\",\"shape\":[0,4],\"data_offsets\":[4,4]},"
                          "\"s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}}",
                          d, 4);
    ag_safetensors *st = open_ok(p);
    ag_array a;
    ag_error err = {0};
    cr_assert_eq(ag_st_read(st, "s", &a, &err), AG_OK, "%s", err.message);
    cr_assert_eq(a.ndim, 0);
    cr_assert_eq(ag_array_size(&a), 1);
    cr_assert_eq(a.data[0], -6.5);
    ag_array_free(&a);
    cr_assert_eq(ag_st_read(st, "z", &a, &err), AG_OK, "%s", err.message);
    cr_assert_eq(a.ndim, 2);
    cr_assert_eq(a.shape[0], 0);
    cr_assert_eq(a.shape[1], 4);
    cr_assert_eq(ag_array_size(&a), 0);
    ag_array_free(&a);
    ag_st_close(st);

    /* no data area at all */
    const char *q = tio_path("nodata.safetensors");
    tio_write_safetensors(q, "{\"e\":{\"dtype\":\"BF16\",\"shape\":[3,0],\"data_offsets\":[0,0]}}",
                          NULL, 0);
    st = open_ok(q);
    cr_assert_eq(ag_st_count(st), 1);
    cr_assert_eq(ag_st_read(st, "e", &a, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_array_size(&a), 0);
    ag_array_free(&a);
    ag_st_close(st);

    /* empty header "{}" padded with spaces, as upstream pads to 8 bytes */
    const char *r = tio_path("empty_hdr.safetensors");
    tio_write_safetensors(r, "{}      ", NULL, 0);
    st = open_ok(r);
    cr_assert_eq(ag_st_count(st), 0);
    cr_assert_null(ag_st_info(st, 0));
    ag_st_close(st);
}

Test(safetensors, read_of_missing_tensor_is_enotfound)
{
    const char *p = tio_path("nf.safetensors");
    unsigned char d[8] = {0};
    tio_write_safetensors(p, "{\"a\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}}",
                          d, 8);
    ag_safetensors *st = open_ok(p);
    ag_array a;
    ag_error err = {0};
    TIO_ASSERT_FAILS(ag_st_read(st, "b", &a, &err), &err, AG_ENOTFOUND, p);
    TIO_ASSERT_MSG_HAS(&err, "no tensor 'b' in ");
    ag_st_close(st);
}

Test(safetensors, close_null_is_safe)
{
    ag_st_close(NULL);
    cr_assert_eq(ag_st_count(NULL), 0);
}

/* ---- errors: one per class -------------------------------------------------- */

Test(safetensors, err_missing_file)
{
    const char *p = tio_path("missing.safetensors");
    open_fails(p, AG_EIO, "No such file or directory");
}

Test(safetensors, err_directory)
{
    const char *p = tio_path("d.safetensors");
    cr_assert_eq(mkdir(p, 0755), 0);
    open_fails(p, AG_EIO, "is a directory");
}

Test(safetensors, err_empty_file)
{
    const char *p = tio_path("empty.safetensors");
    tio_write_bytes(p, "", 0);
    open_fails(p, AG_EFORMAT, "empty file");
}

Test(safetensors, err_shorter_than_length_field)
{
    const char *p = tio_path("short.safetensors");
    tio_write_bytes(p, "\x02\0\0", 3);
    open_fails(p, AG_EFORMAT, "too short");
}

Test(safetensors, err_truncated_data)
{
    /* the header says 16 bytes of data, the file has 12 */
    open_fails_hdr("trunc.safetensors",
                   "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}",
                   12, AG_EFORMAT, "out of range (data area is 12 bytes)");
}

Test(safetensors, err_header_length_beyond_file)
{
    const char *p = tio_path("hlen.safetensors");
    tio_write_safetensors_raw(p, 1000, "{}", 2, NULL, 0);
    open_fails(p, AG_EFORMAT, "beyond the end of the file");
}

Test(safetensors, err_header_length_over_cap)
{
    const char *p = tio_path("hcap.safetensors");
    tio_write_safetensors_raw(p, (uint64_t)AG_ST_HEADER_MAX + 1, "{}", 2, NULL, 0);
    open_fails(p, AG_ELIMIT, "exceeds the cap");
    const char *q = tio_path("hhuge.safetensors");
    tio_write_safetensors_raw(q, UINT64_MAX, "{}", 2, NULL, 0);
    open_fails(q, AG_ELIMIT, NULL);
}

Test(safetensors, err_header_length_too_small)
{
    const char *p = tio_path("hsmall.safetensors");
    tio_write_safetensors_raw(p, 1, "{}", 2, NULL, 0);
    open_fails(p, AG_EFORMAT, "too small");
}

Test(safetensors, err_broken_json)
{
    const char *bad[] = {"{\"a\":", "{'a': 1}", "[]", "\"str\"", "{} x", "{\"a\":{\"dtype\":\"F32\",}}",
                         "\xff\xfe{}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "json%zu.safetensors", i);
        open_fails_hdr(name, bad[i], 0, AG_EFORMAT, NULL);
    }
}

Test(safetensors, err_duplicate_keys)
{
    open_fails_hdr("dup.safetensors",
                   "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                   "\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}",
                   2, AG_EFORMAT, "duplicate");
    open_fails_hdr("dupfield.safetensors",
                   "{\"a\":{\"dtype\":\"U8\",\"dtype\":\"U8\",\"shape\":[1],"
                   "\"data_offsets\":[0,1]}}",
                   1, AG_EFORMAT, "duplicate");
}

Test(safetensors, err_unknown_dtype)
{
    open_fails_hdr("dt.safetensors",
                   "{\"a\":{\"dtype\":\"Q7\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1,
                   AG_EDTYPE, "tensor 'a' has unknown dtype 'Q7'");
}

Test(safetensors, err_bad_entry_fields)
{
    struct {
        const char *hdr;
        int status;
    } c[] = {
        {"{\"a\":[1,2]}", AG_EFORMAT},
        {"{\"a\":{\"shape\":[1],\"data_offsets\":[0,1]}}", AG_EFORMAT},
        {"{\"a\":{\"dtype\":5,\"shape\":[1],\"data_offsets\":[0,1]}}", AG_EFORMAT},
        {"{\"a\":{\"dtype\":\"U8\",\"data_offsets\":[0,1]}}", AG_EFORMAT},
        {"{\"a\":{\"dtype\":\"U8\",\"shape\":[-1],\"data_offsets\":[0,1]}}", AG_EFORMAT},
        {"{\"a\":{\"dtype\":\"U8\",\"shape\":[1.0],\"data_offsets\":[0,1]}}", AG_EFORMAT},
        {"{\"a\":{\"dtype\":\"U8\",\"shape\":\"1\",\"data_offsets\":[0,1]}}", AG_EFORMAT},
        {"{\"a\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,1]}}",
         AG_ESHAPE},
        {"{\"a\":{\"dtype\":\"U8\",\"shape\":[1]}}", AG_EFORMAT},
        {"{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0]}}", AG_EFORMAT},
        {"{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1,2]}}", AG_EFORMAT},
        {"{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[-1,0]}}", AG_EFORMAT},
        {"{\"a\":{\"dtype\":\"U8\",\"shape\":[4294967296,4294967296,4294967296],"
         "\"data_offsets\":[0,1]}}",
         AG_ELIMIT},
        {"{\"__metadata__\":{\"k\":1}}", AG_EFORMAT},
        {"{\"__metadata__\":[\"k\"]}", AG_EFORMAT},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "entry%zu.safetensors", i);
        open_fails_hdr(name, c[i].hdr, 8, c[i].status, NULL);
    }
}

Test(safetensors, err_offsets_out_of_range)
{
    open_fails_hdr("range.safetensors",
                   "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[6,10]}}", 8,
                   AG_EFORMAT, "data_offsets [6, 10] out of range");
    open_fails_hdr("reversed.safetensors",
                   "{\"a\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[4,2]}}", 8,
                   AG_EFORMAT, "data_offsets [4, 2] out of range");
}

Test(safetensors, err_offsets_inconsistent_with_shape)
{
    open_fails_hdr("incons.safetensors",
                   "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,20]}}",
                   24, AG_EFORMAT,
                   "data_offsets [0, 20] span 20 bytes but shape (2, 3) of F32 needs 24");
    /* three 4-bit values do not fill whole bytes */
    open_fails_hdr("f4odd.safetensors",
                   "{\"a\":{\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,2]}}", 2,
                   AG_EFORMAT, "do not fill whole bytes");
    /* four 6-bit values are exactly 3 bytes */
    const char *p = tio_path("f6.safetensors");
    tio_write_safetensors(p,
                          "{\"a\":{\"dtype\":\"F6_E2M3\",\"shape\":[4],\"data_offsets\":[0,3]}}",
                          "\0\0\0", 3);
    ag_safetensors *st = open_ok(p);
    cr_assert_eq(ag_st_find(st, "a")->nbytes, 3);
    ag_st_close(st);
}

Test(safetensors, err_overlapping_tensors)
{
    open_fails_hdr("overlap.safetensors",
                   "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                   "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
                   12, AG_EFORMAT, "overlap");
    open_fails_hdr("same.safetensors",
                   "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
                   "\"b\":{\"dtype\":\"I8\",\"shape\":[4],\"data_offsets\":[0,4]}}",
                   4, AG_EFORMAT, "overlap");
}

/* Upstream's rule: sorted by offset, the tensors tile the data area; a
 * zero-size tensor may sit at any boundary, first and last included. */
Test(safetensors, tensors_tile_the_data_area)
{
    const char *p = tio_path("tile.safetensors");
    unsigned char d[8] = {0};
    tio_write_safetensors(p,
                          "{\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[4,8]},"
                          "\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
                          "\"z\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[4,4]},"
                          "\"y\":{\"dtype\":\"F32\",\"shape\":[0,3],\"data_offsets\":[0,0]},"
                          "\"w\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[8,8]}}",
                          d, 8);
    ag_safetensors *st = open_ok(p);
    const char *order[5] = {"y", "a", "z", "b", "w"};
    for (size_t k = 0; k < 5; k++)
        cr_assert_str_eq(ag_st_info(st, k)->name, order[k]);
    ag_st_close(st);
    /* only zero-size tensors, or none, and no data */
    p = tio_path("empty.safetensors");
    tio_write_safetensors(p, "{\"e\":{\"dtype\":\"F64\",\"shape\":[0],\"data_offsets\":[0,0]}}", "", 0);
    ag_st_close(open_ok(p));
}

/* A zero-size tensor inside another's bytes, a gap, bytes before the first
 * tensor or after the last: upstream refuses each (InvalidOffset,
 * MetadataIncompleteBuffer), and so does ag_st_open, naming the place. */
Test(safetensors, err_tensors_not_tiling)
{
    open_fails_hdr("inside.safetensors",
                   "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
                   "\"z\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,8]}}",
                   16, AG_EFORMAT, "tensor 'z' [8, 8] begins inside 'a' [0, 16]");
    open_fails_hdr("hole.safetensors",
                   "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
                   "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[8,12]}}",
                   12, AG_EFORMAT, "bytes [4, 8) of the data area belong to no tensor (before 'b'");
    open_fails_hdr("lead.safetensors",
                   "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[4,8]}}",
                   8, AG_EFORMAT, "bytes [0, 4) of the data area belong to no tensor (before 'a'");
    open_fails_hdr("tail.safetensors",
                   "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}",
                   6, AG_EFORMAT, "bytes [4, 6) of the data area belong to no tensor");
    open_fails_hdr("nothing.safetensors", "{\"__metadata__\":{\"k\":\"v\"}}", 3, AG_EFORMAT,
                   "bytes [0, 3) of the data area belong to no tensor");
}

Test(safetensors, err_name_too_long)
{
    size_t n = AG_ST_NAME_MAX + 1;
    char *hdr = malloc(n + 128);
    memset(hdr, 'x', n + 128);
    hdr[0] = '{';
    hdr[1] = '"';
    snprintf(hdr + 2 + n, 126, "\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}");
    open_fails_hdr("longname.safetensors", hdr, 1, AG_ELIMIT, "exceeds the cap");
    /* exactly at the cap is accepted */
    memset(hdr, 'x', n + 128);
    hdr[0] = '{';
    hdr[1] = '"';
    snprintf(hdr + 2 + n - 1, 126, "\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}");
    const char *p = tio_path("capname.safetensors");
    tio_write_safetensors(p, hdr, "\0", 1);
    ag_safetensors *st = open_ok(p);
    cr_assert_eq(strlen(ag_st_info(st, 0)->name), AG_ST_NAME_MAX);
    ag_st_close(st);
    free(hdr);
}

Test(safetensors, read_f32_rejects_inconsistent_info)
{
    const char *p = tio_path("inf.safetensors");
    unsigned char d[8] = {0};
    tio_write_safetensors(p, "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
                          d, 8);
    ag_safetensors *st = open_ok(p);
    ag_tensor_info forged = *ag_st_find(st, "a");
    forged.nelem = 1000;
    float f[2];
    ag_error err = {0};
    TIO_ASSERT_FAILS(ag_st_read_f32(st, &forged, f, &err), &err, AG_EINVAL, p);
    ag_st_close(st);
}
