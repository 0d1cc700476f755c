/* test_npy.c — the .npy reader and writer (src/io/npy.c, src/io/dtype.c). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <string.h>

#include "attngeom.h"
#include "../util/test_io_util.h"

TestSuite(npy, .fini = tio_cleanup);

static size_t count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    size_t n = 0;
    struct dirent *e;
    cr_assert_not_null(d);
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

/* Write values with the helper and read them back; asserts success. */
static void write_read(const char *name, const char *descr, int fortran,
                       int version, int ndim, const size_t *shape,
                       const double *v, ag_array *out)
{
    const char *p = tio_path(name);
    ag_error err = {0};
    cr_assert_eq(tio_write_npy(p, descr, fortran, version, ndim, shape, v), 0);
    int rc = ag_npy_read(p, out, &err);
    cr_assert_eq(rc, AG_OK, "read failed: %s", err.message);
    cr_assert_eq(out->ndim, ndim);
    for (int k = 0; k < ndim; k++)
        cr_assert_eq(out->shape[k], shape[k]);
}

/* ---- values of every dtype ---------------------------------------------- */

Test(npy, f8_values_exact)
{
    double v[6] = {0.5, -2.25, 65504.0, ldexp(1, -24), 1e300, -0.0};
    size_t shape[2] = {2, 3};
    ag_array a;
    write_read("f8.npy", "<f8", 0, 1, 2, shape, v, &a);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(a.data[i], v[i], "element %d: %g != %g", i, a.data[i], v[i]);
    cr_assert(signbit(a.data[5]));
    ag_array_free(&a);
}

Test(npy, f4_values_exact)
{
    double v[6] = {0.5, -2.25, 65504.0, ldexp(1, -149), ldexp(1, 127), 0.1f};
    size_t shape[1] = {6};
    ag_array a;
    write_read("f4.npy", "<f4", 0, 1, 1, shape, v, &a);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(a.data[i], v[i], "element %d: %.17g != %.17g", i, a.data[i],
                     v[i]);
    ag_array_free(&a);
}

Test(npy, f2_values_exact_with_subnormals_inf_nan)
{
    double v[10] = {0.5,           -2.25,          65504.0,
                    ldexp(1, -24), /* smallest subnormal */
                    ldexp(1023, -24), /* largest subnormal */
                    ldexp(1, -14), /* smallest normal */
                    -0.0,          INFINITY,       -INFINITY,
                    NAN};
    size_t shape[2] = {5, 2};
    ag_array a;
    write_read("f2.npy", "<f2", 0, 1, 2, shape, v, &a);
    for (int i = 0; i < 9; i++)
        cr_assert_eq(a.data[i], v[i], "element %d: %.17g != %.17g", i, a.data[i],
                     v[i]);
    cr_assert(signbit(a.data[6]));
    cr_assert(isnan(a.data[9]));
    ag_array_free(&a);
}

Test(npy, half_conversion_every_bit_pattern)
{
    /* independent reference: sign * 2^(e-15) * (1 + m/1024), or subnormal */
    for (uint32_t h = 0; h < 65536; h++) {
        unsigned e = (h >> 10) & 31, m = h & 1023;
        double ref;
        if (e == 31)
            ref = m ? NAN : INFINITY;
        else if (e == 0)
            ref = ldexp((double)m, -24);
        else
            ref = ldexp(1024.0 + m, (int)e - 25);
        if (h & 0x8000)
            ref = -ref;
        double got = ag_half_to_double((uint16_t)h);
        if (isnan(ref)) {
            cr_assert(isnan(got), "0x%04x", h);
            cr_assert_eq(!!signbit(got), !!(h & 0x8000), "0x%04x sign", h);
        } else {
            cr_assert_eq(got, ref, "0x%04x: %.17g != %.17g", h, got, ref);
            cr_assert_eq(!!signbit(got), !!signbit(ref), "0x%04x sign", h);
        }
    }
}

Test(npy, bfloat16_conversion)
{
    cr_assert_eq(ag_bfloat16_to_double(0x3f80), 1.0);
    cr_assert_eq(ag_bfloat16_to_double(0xc010), -2.25);
    cr_assert_eq(ag_bfloat16_to_double(0x3f00), 0.5);
    cr_assert_eq(ag_bfloat16_to_double(0x7f7f), ldexp(255.0, 120));
    cr_assert_eq(ag_bfloat16_to_double(0x0001), ldexp(1, -133));
    cr_assert_eq(ag_bfloat16_to_double(0xff80), -INFINITY);
    cr_assert(isnan(ag_bfloat16_to_double(0x7fc0)));
    cr_assert(signbit(ag_bfloat16_to_double(0x8000)));
}

Test(npy, nonfinite_values_returned_as_is)
{
    double v[3] = {NAN, INFINITY, -INFINITY};
    size_t shape[1] = {3};
    ag_array a;
    write_read("nf.npy", "<f8", 0, 1, 1, shape, v, &a);
    cr_assert(isnan(a.data[0]));
    cr_assert_eq(a.data[1], INFINITY);
    cr_assert_eq(a.data[2], -INFINITY);
    ag_array_free(&a);
}

/* ---- order ----------------------------------------------------------------- */

/* value of element [i][j][k][l] */
static double f4d(size_t i, size_t j, size_t k, size_t l)
{
    return 1000.0 * (double)i + 100.0 * (double)j + 10.0 * (double)k + (double)l;
}

static void check_order(int ndim, const char *descr, int fortran)
{
    size_t shape4[4] = {2, 3, 4, 5};
    const size_t *shape = shape4 + (4 - ndim); /* trailing dims */
    size_t full[4] = {1, 1, 1, 1};
    for (int k = 0; k < ndim; k++)
        full[4 - ndim + k] = shape[k];
    size_t n = full[0] * full[1] * full[2] * full[3];
    double *v = malloc(n * sizeof *v);
    size_t c = 0;
    for (size_t i = 0; i < full[0]; i++)
        for (size_t j = 0; j < full[1]; j++)
            for (size_t k = 0; k < full[2]; k++)
                for (size_t l = 0; l < full[3]; l++)
                    v[c++] = f4d(i, j, k, l);
    ag_array a;
    char name[64];
    snprintf(name, sizeof name, "order_%d_%s_%d.npy", ndim, descr + 1, fortran);
    write_read(name, descr, fortran, 1, ndim, shape, v, &a);
    for (size_t t = 0; t < n; t++)
        cr_assert_eq(a.data[t], v[t], "rank %d fortran %d: [%zu] %g != %g", ndim,
                     fortran, t, a.data[t], v[t]);
    /* explicit index mapping of the last element and one in the middle */
    if (ndim == 2) {
        cr_assert_eq(a.data[2 * 5 + 3], f4d(0, 0, 2, 3)); /* [2][3] */
    } else if (ndim == 3) {
        cr_assert_eq(a.data[(2 * 4 + 1) * 5 + 3], f4d(0, 2, 1, 3)); /* [2][1][3] */
    } else {
        cr_assert_eq(a.data[((1 * 3 + 2) * 4 + 1) * 5 + 3],
                     f4d(1, 2, 1, 3)); /* [1][2][1][3] */
    }
    ag_array_free(&a);
    free(v);
}

Test(npy, c_and_fortran_order_rank2) { check_order(2, "<f8", 0); check_order(2, "<f8", 1); }
Test(npy, c_and_fortran_order_rank3) { check_order(3, "<f4", 0); check_order(3, "<f4", 1); }
Test(npy, c_and_fortran_order_rank4)
{
    check_order(4, "<f8", 0);
    check_order(4, "<f8", 1);
    check_order(4, "<f2", 1);
}

Test(npy, fortran_order_hand_written_bytes)
{
    /* 2x3 matrix A[i][j] = 10 i + j stored column-major, bytes written here
     * without the helper's transpose */
    double file_order[6] = {0, 10, 1, 11, 2, 12}; /* A00 A10 A01 A11 A02 A12 */
    unsigned char data[48];
    tio_encode_npy("<f8", file_order, 6, data);
    const char *p = tio_path("fhand.npy");
    cr_assert_eq(tio_write_npy_header(p, 1,
                                      "{'descr': '<f8', 'fortran_order': True, "
                                      "'shape': (2, 3), }\n",
                                      data, sizeof data),
                 0);
    ag_array a;
    ag_error err = {0};
    cr_assert_eq(ag_npy_read(p, &a, &err), AG_OK, "%s", err.message);
    double expect[6] = {0, 1, 2, 10, 11, 12};
    for (int i = 0; i < 6; i++)
        cr_assert_eq(a.data[i], expect[i]);
    ag_array_free(&a);
}

/* ---- versions, header variants, ranks ----------------------------------- */

Test(npy, versions_1_2_3)
{
    double v[4] = {1, 2, 3, 4.5};
    size_t shape[2] = {2, 2};
    for (int ver = 1; ver <= 3; ver++) {
        char name[32];
        snprintf(name, sizeof name, "v%d.npy", ver);
        ag_array a;
        write_read(name, "<f8", 0, ver, 2, shape, v, &a);
        for (int i = 0; i < 4; i++)
            cr_assert_eq(a.data[i], v[i]);
        ag_array_free(&a);
    }
}

Test(npy, header_key_order_and_quoting_variants)
{
    double v[3] = {1.5, -2.5, 3.25};
    unsigned char data[24];
    tio_encode_npy("<f8", v, 3, data);
    const char *dicts[] = {
        "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }",
        "{\"shape\": (3,), \"fortran_order\": False, \"descr\": \"<f8\"}",
        "{'fortran_order':False,'shape':(3,),'descr':'<f8',}   \n",
        "  { 'shape' : ( 3 , ) ,\t'descr' : '<f8' , 'fortran_order' : False }\n",
        "{'shape': (3L,), 'fortran_order': False, 'descr': '<f8'}", /* versions 1, 2 only */
    };
    for (size_t d = 0; d < sizeof dicts / sizeof dicts[0]; d++) {
        for (int ver = 1; ver <= (d == 4 ? 2 : 3); ver++) {
            char name[32];
            snprintf(name, sizeof name, "kv%zu_%d.npy", d, ver);
            const char *p = tio_path(name);
            cr_assert_eq(tio_write_npy_header(p, ver, dicts[d], data, 24), 0);
            ag_array a;
            ag_error err = {0};
            cr_assert_eq(ag_npy_read(p, &a, &err), AG_OK, "dict %zu: %s", d,
                         err.message);
            cr_assert_eq(a.ndim, 1);
            cr_assert_eq(a.shape[0], 3);
            cr_assert_eq(a.data[0], 1.5);
            cr_assert_eq(a.data[2], 3.25);
            ag_array_free(&a);
        }
    }
}

Test(npy, rank0_rank1_and_zero_size)
{
    double v = -7.75;
    ag_array a;
    write_read("r0.npy", "<f8", 0, 1, 0, NULL, &v, &a);
    cr_assert_eq(ag_array_size(&a), 1);
    cr_assert_eq(a.data[0], -7.75);
    ag_array_free(&a);

    size_t s1[1] = {5};
    double v5[5] = {1, 2, 3, 4, 5};
    write_read("r1.npy", "<f4", 0, 1, 1, s1, v5, &a);
    cr_assert_eq(a.data[4], 5.0);
    ag_array_free(&a);

    size_t s0[2] = {0, 3};
    write_read("zero.npy", "<f8", 1, 1, 2, s0, NULL, &a);
    cr_assert_eq(ag_array_size(&a), 0);
    ag_array_free(&a);
}

Test(npy, rank8_accepted_rank9_rejected)
{
    size_t s8[8] = {1, 2, 1, 2, 1, 2, 1, 2};
    double v[16];
    for (int i = 0; i < 16; i++)
        v[i] = i;
    ag_array a;
    write_read("r8.npy", "<f8", 1, 1, 8, s8, v, &a);
    for (int i = 0; i < 16; i++)
        cr_assert_eq(a.data[i], (double)i);
    ag_array_free(&a);

    const char *p = tio_path("r9.npy");
    unsigned char d[8] = {0};
    tio_write_npy_header(p, 1,
                         "{'descr': '<f8', 'fortran_order': False, "
                         "'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1), }",
                         d, 8);
    ag_error err = {0};
    TIO_ASSERT_FAILS(ag_npy_read(p, &a, &err), &err, AG_ESHAPE, p);
}

/* ---- writer ----------------------------------------------------------------- */

Test(npy, write_roundtrip_and_layout)
{
    size_t shape[3] = {2, 3, 4};
    ag_array a, b;
    ag_error err = {0};
    cr_assert_eq(ag_array_alloc(&a, 3, shape, &err), AG_OK);
    for (size_t i = 0; i < 24; i++)
        a.data[i] = (double)i * 0.25 - 3.0;
    a.data[5] = NAN;
    const char *p = tio_path("w.npy");
    cr_assert_eq(ag_npy_write(p, &a, &err), AG_OK, "%s", err.message);
    cr_assert_eq(count_entries(tio_tmpdir()), 1, "temporary file left behind");

    FILE *f = fopen(p, "rb");
    unsigned char buf[256];
    size_t n = fread(buf, 1, sizeof buf, f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    cr_assert(n >= 10);
    cr_assert_eq(memcmp(buf, "\x93NUMPY\x01\x00", 8), 0);
    size_t hlen = buf[8] | (buf[9] << 8);
    cr_assert_eq((10 + hlen) % 64, 0, "data not 64-aligned");
    cr_assert_eq(buf[10 + hlen - 1], '\n');
    cr_assert_eq((size_t)size, 10 + hlen + 24 * 8);
    cr_assert(memmem(buf, 10 + hlen, "'shape': (2, 3, 4)", 18) != NULL);
    cr_assert(memmem(buf, 10 + hlen, "'descr': '<f8'", 14) != NULL);

    cr_assert_eq(ag_npy_read(p, &b, &err), AG_OK, "%s", err.message);
    cr_assert_eq(b.ndim, 3);
    for (size_t i = 0; i < 24; i++) {
        if (i == 5)
            cr_assert(isnan(b.data[i]));
        else
            cr_assert_eq(b.data[i], a.data[i]);
    }
    ag_array_free(&a);
    ag_array_free(&b);
}

Test(npy, write_replaces_existing_file)
{
    const char *p = tio_path("rep.npy");
    tio_write_bytes(p, "old", 3);
    double v = 42.0;
    ag_array a = {.ndim = 0, .data = &v};
    ag_error err = {0};
    cr_assert_eq(ag_npy_write(p, &a, &err), AG_OK, "%s", err.message);
    ag_array b;
    cr_assert_eq(ag_npy_read(p, &b, &err), AG_OK, "%s", err.message);
    cr_assert_eq(b.data[0], 42.0);
    ag_array_free(&b);
}

Test(npy, write_failure_leaves_nothing)
{
    double v[2] = {1, 2};
    size_t shape[1] = {2};
    ag_array a = {.ndim = 1, .shape = {2}, .data = v};
    (void)shape;
    ag_error err = {0};
    const char *p = tio_path("nodir/x.npy");
    TIO_ASSERT_FAILS(ag_npy_write(p, &a, &err), &err, AG_EIO, p);

    /* destination is a directory: rename fails, the temporary is removed */
    const char *d = tio_path("adir");
    cr_assert_eq(mkdir(d, 0755), 0);
    TIO_ASSERT_FAILS(ag_npy_write(d, &a, &err), &err, AG_EIO, d);
    cr_assert_eq(count_entries(tio_tmpdir()), 1, "temporary file left behind");
    cr_assert_eq(count_entries(d), 0);
}

/* A shape whose size overflows size_t is refused by every writer before a
 * byte goes out (the only guard on `attention --hidden`'s (L + 1, n, d)
 * arrays, streamed a state at a time): AG_ELIMIT naming the destination, no
 * file or temporary left, nothing on the descriptor. Cases: the product of
 * the dims overflows; an (L + 1, n, d) product overflows; the elements fit
 * but their bytes (8 each; 4 for '<f4') do not. */
Test(npy, write_refuses_shapes_beyond_size_t)
{
    const size_t d = 512, n = SIZE_MAX / 13 / d + 1;
    const struct {
        int ndim;
        size_t shape[3];
        int f4; /* also too large as '<f4' */
    } cases[] = {
        {2, {SIZE_MAX / 2 + 1, 2}, 1},
        {3, {13, n, d}, 1},
        {1, {SIZE_MAX / 8 + 1}, 0},
        {1, {SIZE_MAX / 4 + 1}, 1},
    };
    const char *p = tio_path("big.npy"), *q = tio_path("fd.npy");
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ag_array a = {.ndim = cases[i].ndim};
        memcpy(a.shape, cases[i].shape, sizeof cases[i].shape);
        ag_error err = {0};
        TIO_ASSERT_FAILS(ag_npy_write(p, &a, &err), &err, AG_ELIMIT, p);
        if (cases[i].f4)
            TIO_ASSERT_FAILS(ag_npy_write_f32(p, a.ndim, a.shape, NULL, &err), &err, AG_ELIMIT,
                             p);
        cr_assert_eq(count_entries(tio_tmpdir()), 0, "case %zu: a file was left", i);

        int fd = open(q, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        cr_assert_geq(fd, 0);
        ag_npy_writer *w = (ag_npy_writer *)&err; /* set to NULL on failure */
        TIO_ASSERT_FAILS(ag_npy_writer_open(fd, q, a.ndim, a.shape, &w, &err), &err, AG_ELIMIT,
                         q);
        cr_assert_null(w);
        TIO_ASSERT_FAILS(ag_npy_write_fd(fd, q, &a, &err), &err, AG_ELIMIT, q);
        if (cases[i].f4)
            TIO_ASSERT_FAILS(ag_npy_write_f32_fd(fd, q, a.ndim, a.shape, NULL, &err), &err,
                             AG_ELIMIT, q);
        struct stat sb;
        cr_assert_eq(fstat(fd, &sb), 0);
        cr_assert_eq(sb.st_size, 0, "case %zu: %lld bytes written", i, (long long)sb.st_size);
        close(fd);
        cr_assert_eq(unlink(q), 0);
    }
}

/* ---- errors: one per class ------------------------------------------------ */

Test(npy, err_missing_file)
{
    const char *p = tio_path("missing.npy");
    ag_array a;
    ag_error err = {0};
    TIO_ASSERT_FAILS(ag_npy_read(p, &a, &err), &err, AG_EIO, p);
    TIO_ASSERT_MSG_HAS(&err, "No such file or directory");
    cr_assert_null(a.data);
}

Test(npy, err_directory)
{
    const char *p = tio_path("dir.npy");
    cr_assert_eq(mkdir(p, 0755), 0);
    ag_array a;
    ag_error err = {0};
    TIO_ASSERT_FAILS(ag_npy_read(p, &a, &err), &err, AG_EIO, p);
    TIO_ASSERT_MSG_HAS(&err, "is a directory");
}

Test(npy, err_empty_file)
{
    const char *p = tio_path("empty.npy");
    tio_write_bytes(p, "", 0);
    ag_array a;
    ag_error err = {0};
    TIO_ASSERT_FAILS(ag_npy_read(p, &a, &err), &err, AG_EFORMAT, p);
    TIO_ASSERT_MSG_HAS(&err, "empty file");
}

Test(npy, err_truncated_data)
{
    double v[6] = {1, 2, 3, 4, 5, 6};
    size_t shape[2] = {2, 3};
    const char *p = tio_path("trunc.npy");
    cr_assert_eq(tio_write_npy(p, "<f8", 0, 1, 2, shape, v), 0);
    cr_assert_eq(truncate(p, 128 + 40), 0); /* header is 128 bytes here */
    ag_array a;
    ag_error err = {0};
    TIO_ASSERT_FAILS(ag_npy_read(p, &a, &err), &err, AG_EFORMAT, p);
    TIO_ASSERT_MSG_HAS(&err,
                       "truncated: shape (2, 3) needs 48 bytes of data, file has 40");
    cr_assert_null(a.data);
}

Test(npy, err_trailing_bytes)
{
    double v[2] = {1, 2};
    unsigned char data[17] = {0};
    tio_encode_npy("<f8", v, 2, data);
    const char *p = tio_path("trail.npy");
    tio_write_npy_header(p, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }",
                         data, 17);
    ag_array a;
    ag_error err = {0};
    TIO_ASSERT_FAILS(ag_npy_read(p, &a, &err), &err, AG_EFORMAT, p);
    TIO_ASSERT_MSG_HAS(&err, "1 unexpected bytes after the data");
}

Test(npy, err_bad_magic)
{
    const char *p = tio_path("magic.npy");
    tio_write_npy_raw(p, "\x93NUMPZ", 1, 0, 4, "{}  ", 4, NULL, 0);
    ag_array a;
    ag_error err = {0};
    TIO_ASSERT_FAILS(ag_npy_read(p, &a, &err), &err, AG_EFORMAT, p);
    TIO_ASSERT_MSG_HAS(&err, "bad magic");

    const char *q = tio_path("short.npy");
    tio_write_bytes(q, "\x93NU", 3);
    TIO_ASSERT_FAILS(ag_npy_read(q, &a, &err), &err, AG_EFORMAT, q);
}

Test(npy, err_bad_version)
{
    const char *p = tio_path("ver.npy");
    const char *dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (), }";
    tio_write_npy_raw(p, NULL, 4, 0, (uint32_t)strlen(dict), dict, strlen(dict),
                      "\0\0\0\0\0\0\0\0", 8);
    ag_array a;
    ag_error err = {0};
    TIO_ASSERT_FAILS(ag_npy_read(p, &a, &err), &err, AG_EFORMAT, p);
    TIO_ASSERT_MSG_HAS(&err, "version 4.0");
}

Test(npy, err_header_length_beyond_file)
{
    const char *p = tio_path("hlen.npy");
    const char *dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (), }";
    tio_write_npy_raw(p, NULL, 1, 0, 5000, dict, strlen(dict), NULL, 0);
    ag_array a;
    ag_error err = {0};
    TIO_ASSERT_FAILS(ag_npy_read(p, &a, &err), &err, AG_EFORMAT, p);
    TIO_ASSERT_MSG_HAS(&err, "beyond the end of the file");
}

Test(npy, err_header_length_over_cap)
{
    const char *p = tio_path("hcap.npy");
    tio_write_npy_raw(p, NULL, 2, 0, AG_NPY_HEADER_MAX + 1, "{}", 2, NULL, 0);
    ag_array a;
    ag_error err = {0};
    TIO_ASSERT_FAILS(ag_npy_read(p, &a, &err), &err, AG_ELIMIT, p);
}

Test(npy, err_shape_larger_than_data)
{
    const char *p = tio_path("huge.npy");
    unsigned char d[16] = {0};
    tio_write_npy_header(p, 1,
                         "{'descr': '<f4', 'fortran_order': False, "
                         "'shape': (1000000000, 1000000000), }",
                         d, 16);
    ag_array a;
    ag_error err = {0};
    TIO_ASSERT_FAILS(ag_npy_read(p, &a, &err), &err, AG_EFORMAT, p);
    TIO_ASSERT_MSG_HAS(&err, "needs 4000000000000000000 bytes of data, file has 16");

    /* product overflows size_t: refused before any allocation */
    const char *q = tio_path("overflow.npy");
    tio_write_npy_header(q, 1,
                         "{'descr': '<f8', 'fortran_order': False, "
                         "'shape': (4294967296, 4294967296, 2), }",
                         d, 16);
    TIO_ASSERT_FAILS(ag_npy_read(q, &a, &err), &err, AG_ELIMIT, q);
    const char *r = tio_path("bigdim.npy");
    tio_write_npy_header(r, 1,
                         "{'descr': '<f8', 'fortran_order': False, "
                         "'shape': (99999999999999999999999,), }",
                         d, 16);
    TIO_ASSERT_FAILS(ag_npy_read(r, &a, &err), &err, AG_ELIMIT, r);
}

Test(npy, err_unsupported_dtype)
{
    const char *bad[] = {">i4", "<i8", ">f8", "|u1", "<c16", "|b1", "<f16", "<U5"};
    unsigned char d[64] = {0};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char name[32], dict[128], want[32];
        snprintf(name, sizeof name, "dt%zu.npy", i);
        snprintf(dict, sizeof dict,
                 "{'descr': '%s', 'fortran_order': False, 'shape': (2,), }", bad[i]);
        const char *p = tio_path(name);
        tio_write_npy_header(p, 1, dict, d, 2 * (tio_npy_itemsize(bad[i]) ? tio_npy_itemsize(bad[i]) : 8));
        ag_array a;
        ag_error err = {0};
        TIO_ASSERT_FAILS(ag_npy_read(p, &a, &err), &err, AG_EDTYPE, p);
        snprintf(want, sizeof want, "unsupported dtype '%s'", bad[i]);
        TIO_ASSERT_MSG_HAS(&err, want);
    }
    /* structured dtype */
    const char *p = tio_path("struct.npy");
    tio_write_npy_header(p, 1,
                         "{'descr': [('a', '<f8')], 'fortran_order': False, "
                         "'shape': (2,), }",
                         d, 16);
    ag_array a;
    ag_error err = {0};
    TIO_ASSERT_FAILS(ag_npy_read(p, &a, &err), &err, AG_EDTYPE, p);
}

Test(npy, err_broken_header_dict)
{
    const char *broken[] = {
        "",
        "   ",
        "'descr': '<f8', 'fortran_order': False, 'shape': (2,)",
        "{'descr': '<f8', 'fortran_order': False, 'shape': (2,)",
        "{'descr': '<f8' 'fortran_order': False, 'shape': (2,)}",
        "{'descr': '<f8', 'fortran_order': false, 'shape': (2,)}",
        "{'descr': '<f8', 'fortran_order': False, 'shape': [2]}",
        "{'descr': '<f8', 'fortran_order': False, 'shape': (2)}",
        "{'descr': '<f8', 'fortran_order': False, 'shape': (2,,)}",
        "{'descr': '<f8', 'fortran_order': False, 'shape': (2.0,)}",
        "{'descr': '<f8, 'fortran_order': False, 'shape': (2,)}",
        "{'descr': '<f8', 'fortran_order': False}",
        "{'descr': '<f8', 'shape': (2,)}",
        "{'fortran_order': False, 'shape': (2,)}",
        "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), 'extra': 1}",
        "{'descr': '<f8', 'fortran_order': False, 'shape': (2,)} x",
        "{'descr': '<f8', 'fortran_order': Falsey, 'shape': (2,)}",
        "{descr: '<f8', 'fortran_order': False, 'shape': (2,)}",
    };
    unsigned char d[16] = {0};
    for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "broken%zu.npy", i);
        const char *p = tio_path(name);
        tio_write_npy_header(p, 1, broken[i], d, 16);
        ag_array a;
        ag_error err = {0};
        int rc = ag_npy_read(p, &a, &err);
        cr_assert_eq(rc, AG_EFORMAT, "dict %zu (%s): status %d: %s", i, broken[i],
                     rc, err.message);
        cr_assert(strstr(err.message, p), "%s", err.message);
        cr_assert_null(a.data);
    }
    /* a NUL byte inside the header */
    const char *p = tio_path("nul.npy");
    tio_write_npy_raw(p, NULL, 1, 0, 8, "{'a\0b':}", 8, NULL, 0);
    ag_array a;
    ag_error err = {0};
    TIO_ASSERT_FAILS(ag_npy_read(p, &a, &err), &err, AG_EFORMAT, p);
}

Test(npy, err_negative_dimension)
{
    const char *p = tio_path("neg.npy");
    unsigned char d[16] = {0};
    tio_write_npy_header(p, 1,
                         "{'descr': '<f8', 'fortran_order': False, 'shape': (-2,), }",
                         d, 16);
    ag_array a;
    ag_error err = {0};
    TIO_ASSERT_FAILS(ag_npy_read(p, &a, &err), &err, AG_ESHAPE, p);
}

/* ---- the header grammar, as NumPy reads it --------------------------------- */

static const struct {
    int version, nelem, numpy_reads;
    const char *header, *what;
} numpy_cases[] = {
#include "npy_header_cases.h"
};

/* Write `header` (version v) with nelem float64s and read it. */
static int read_header_case(const char *name, int v, const char *header, size_t header_len,
                            int nelem, ag_array *a, ag_error *err)
{
    double vals[2] = {0, 1};
    const char *p = tio_path(name);
    cr_assert_eq(tio_write_npy_raw(p, NULL, v, 0, (uint32_t)header_len, header, header_len, vals,
                                   (size_t)nelem * 8), 0);
    return ag_npy_read(p, a, err);
}

/* Every header of tools/npy_header_cases.py gets NumPy 1.24's verdict. */
Test(npy, header_grammar_as_numpy)
{
    for (size_t k = 0; k < sizeof numpy_cases / sizeof *numpy_cases; k++) {
        ag_array a = {0};
        ag_error err = {0};
        char name[32];
        snprintf(name, sizeof name, "g%zu.npy", k);
        int rc = read_header_case(name, numpy_cases[k].version, numpy_cases[k].header,
                                  strlen(numpy_cases[k].header), numpy_cases[k].nelem, &a, &err);
        cr_expect_eq(rc == AG_OK, numpy_cases[k].numpy_reads,
                     "case %zu (%s, version %d.0): numpy %s, ag_npy_read status %d: %s", k,
                     numpy_cases[k].what, numpy_cases[k].version,
                     numpy_cases[k].numpy_reads ? "reads it" : "refuses it", rc, err.message);
        if (rc == AG_OK)
            cr_expect_eq(ag_array_size(&a), (size_t)numpy_cases[k].nelem, "case %zu", k);
        ag_array_free(&a);
    }
}

/* Cases too long for the table: CPython's limits, which numpy inherits. */
Test(npy, header_grammar_limits)
{
    static const char head[] = "{'descr': ", tail[] = ", 'descr': '<f8', 'fortran_order': False, 'shape': (2,)}";
    char h[1200];
    ag_array a = {0};
    ag_error err = {0};
    /* the dict and 199 brackets are 200 levels: read; 201 are not */
    for (int depth = 199; depth <= 200; depth++) {
        int n = snprintf(h, sizeof h, "%s", head);
        for (int k = 0; k < depth; k++)
            h[n++] = '[';
        for (int k = 0; k < depth; k++)
            h[n++] = ']';
        n += snprintf(h + n, sizeof h - (size_t)n, "%s", tail);
        int rc = read_header_case("deep.npy", 3, h, (size_t)n, 2, &a, &err);
        cr_expect_eq(rc, depth == 199 ? AG_OK : AG_EFORMAT, "depth %d: %s", depth, err.message);
        ag_array_free(&a);
    }
    /* A decimal integer of more than 4300 digits (int_max_str_digits) is a
     * syntax error; 4300 digits parse (and are too large a dimension); zeros
     * alone are no conversion at all. */
    static const struct {
        char lead;
        int zeros, nelem, status;
    } num[] = {{'1', 4299, 0, AG_ELIMIT}, {'1', 4300, 0, AG_EFORMAT}, {'0', 5000, 0, AG_OK}};
    static char big[6000];
    for (size_t k = 0; k < sizeof num / sizeof *num; k++) {
        int n = snprintf(big, sizeof big, "{'descr': '<f8', 'fortran_order': False, 'shape': (%c", num[k].lead);
        memset(big + n, '0', (size_t)num[k].zeros);
        n += num[k].zeros;
        n += snprintf(big + n, sizeof big - (size_t)n, ", 2)}");
        cr_expect_eq(read_header_case("digits.npy", 1, big, (size_t)n, num[k].nelem, &a, &err),
                     num[k].status, "%d digits: %s", num[k].zeros + 1, err.message);
        ag_array_free(&a);
    }
}

/* Where ag_npy_read and NumPy 1.24 differ on purpose (docs/formats.md). */
Test(npy, header_documented_differences)
{
    static const struct {
        const char *header;
        int status;
    } cases[] = {
        /* numpy reads a negative dimension as "all the data" */
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (-1,)}", AG_ESHAPE},
        /* a backslash-newline outside the dict */
        {"\\\n{'descr': '<f8', 'fortran_order': False, 'shape': (2,)}", AG_EFORMAT},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (2,)}\\\n\n", AG_EFORMAT},
        /* \N{} of a character outside printable ASCII, in a replaced value */
        {"{'descr': '\\N{EM DASH}', 'descr': '<f8', 'fortran_order': False, 'shape': (2,)}", AG_EFORMAT},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        ag_array a = {0};
        ag_error err = {0};
        cr_expect_eq(read_header_case("diff.npy", 1, cases[k].header, strlen(cases[k].header), 2, &a, &err),
                     cases[k].status, "case %zu: %s", k, err.message);
        ag_array_free(&a);
    }
}

Test(npy, null_error_pointer_is_allowed)
{
    ag_array a;
    cr_assert_eq(ag_npy_read(tio_path("nothing.npy"), &a, NULL), AG_EIO);
}
