/* test_fileio.c — inputs are refused unless they are regular files, without
 * ever blocking on a FIFO (every reader: .npy, safetensors, model and
 * tokenizer folders, ag_read_file), and the .npy writer's descriptor and
 * incremental (ag_npy_writer) forms.
 * A FIFO with no writer blocks an ordinary open forever, so each test has a
 * timeout: a regression fails instead of hanging. */
#include <criterion/criterion.h>

#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "attngeom.h"
#include "io/io_internal.h"
#include "../util/test_io_util.h"

TestSuite(fileio, .fini = tio_cleanup, .timeout = 20);

static const char *fifo(const char *name)
{
    const char *p = tio_path(name);
    cr_assert_eq(mkfifo(p, 0644), 0, "mkfifo %s: %s", p, strerror(errno));
    return p;
}

Test(fileio, fifo_npy_and_safetensors_refused)
{
    ag_array a = {0};
    ag_safetensors *st = NULL;
    ag_error err = {0};
    const char *p = fifo("x.npy");
    TIO_ASSERT_FAILS(ag_npy_read(p, &a, &err), &err, AG_EIO, p);
    TIO_ASSERT_MSG_HAS(&err, "is not a regular file");
    p = fifo("x.safetensors");
    TIO_ASSERT_FAILS(ag_st_open(p, &st, &err), &err, AG_EIO, p);
    TIO_ASSERT_MSG_HAS(&err, "is not a regular file");
    cr_assert_null(st);
}

Test(fileio, device_refused)
{
    char *buf = NULL;
    size_t len = 7;
    ag_error err = {0};
    TIO_ASSERT_FAILS(ag_read_file("/dev/zero", 100, &buf, &len, &err), &err, AG_EIO, "/dev/zero");
    TIO_ASSERT_MSG_HAS(&err, "is not a regular file");
    cr_assert_null(buf);
    cr_assert_eq(len, 0);
}

/* A model folder whose file `name` is a FIFO: loading names that file. */
static void folder_with_fifo(const char *dir, const char *name, const char *other)
{
    char p[4200];
    cr_assert_eq(mkdir(dir, 0755), 0);
    snprintf(p, sizeof p, "%s/%s", dir, name);
    cr_assert_eq(mkfifo(p, 0644), 0);
    if (other) {
        snprintf(p, sizeof p, "%s/%s", dir, other);
        cr_assert_eq(tio_write_bytes(p, "{}", 2), 0);
    }
}

Test(fileio, fifo_in_model_folder_refused)
{
    char dir[4200];
    ag_model *m = NULL;
    ag_error err = {0};
    snprintf(dir, sizeof dir, "%s", tio_path("cfg"));
    folder_with_fifo(dir, "config.json", NULL);
    TIO_ASSERT_FAILS(ag_model_load(dir, &m, &err), &err, AG_EIO, "config.json");
    TIO_ASSERT_MSG_HAS(&err, "is not a regular file");
    cr_assert_null(m);
}

Test(fileio, fifo_tokenizer_files_refused_not_skipped)
{
    static const char *const names[] = {"tokenizer.json", "vocab.txt", "vocab.json"};
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        char dir[4200];
        ag_tokenizer *t = NULL;
        ag_error err = {0};
        snprintf(dir, sizeof dir, "%s", tio_path(names[k]));
        strcat(dir, ".d");
        /* a vocab.txt beside the FIFO tokenizer.json must not be used instead */
        folder_with_fifo(dir, names[k], k == 0 ? "vocab.txt" : NULL);
        TIO_ASSERT_FAILS(ag_tokenizer_load(dir, &t, &err), &err, AG_EIO, names[k]);
        TIO_ASSERT_MSG_HAS(&err, "is not a regular file");
        cr_assert_null(t);
    }
}

Test(fileio, read_file_whole_and_capped)
{
    const char *p = tio_path("t.txt");
    cr_assert_eq(tio_write_bytes(p, "abc\0def", 7), 0);
    char *buf = NULL;
    size_t len = 0;
    ag_error err = {0};
    cr_assert_eq(ag_read_file(p, 7, &buf, &len, &err), AG_OK, "%s", err.message);
    cr_assert_eq(len, 7);
    cr_assert(memcmp(buf, "abc\0def", 8) == 0, "content or terminating NUL wrong");
    free(buf);
    TIO_ASSERT_FAILS(ag_read_file(p, 6, &buf, &len, &err), &err, AG_ELIMIT, p);
    cr_assert_null(buf);
    cr_assert_eq(tio_write_bytes(p, "", 0), 0);
    cr_assert_eq(ag_read_file(p, 6, &buf, &len, &err), AG_OK, "%s", err.message);
    cr_assert_eq(len, 0);
    cr_assert_eq(buf[0], '\0');
    free(buf);
}

/* ag_read_fd reads a pipe to its end, past its 64 KiB first buffer, and
 * stops one byte past the cap. */
Test(fileio, read_fd_pipe)
{
    static char data[200000];
    for (size_t k = 0; k < sizeof data; k++)
        data[k] = (char)('a' + k % 26);
    const char *p = tio_path("big.txt");
    cr_assert_eq(tio_write_bytes(p, data, sizeof data), 0);
    char *buf = NULL;
    size_t len = 0;
    ag_error err = {0};
    int fd = open(p, O_RDONLY);
    cr_assert_eq(ag_read_fd(fd, "big", sizeof data, &buf, &len, &err), AG_OK, "%s", err.message);
    close(fd);
    cr_assert_eq(len, sizeof data);
    cr_assert(memcmp(buf, data, len) == 0);
    free(buf);
    fd = open(p, O_RDONLY);
    TIO_ASSERT_FAILS(ag_read_fd(fd, "big", sizeof data - 1, &buf, &len, &err), &err, AG_ELIMIT,
                     "big");
    close(fd);
}

/* The descriptor form writes exactly the bytes of the file form. */
Test(fileio, npy_write_fd_matches_npy_write)
{
    double v[6] = {1, -2.5, 3e300, 0, 5, 6};
    ag_array a = {.ndim = 2, .shape = {2, 3}, .data = v};
    ag_error err = {0};
    const char *p = tio_path("w.npy"), *q = tio_path("fd.npy");
    cr_assert_eq(ag_npy_write(p, &a, &err), AG_OK, "%s", err.message);
    int fd = open(q, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cr_assert_eq(ag_npy_write_fd(fd, q, &a, &err), AG_OK, "%s", err.message);
    close(fd);
    char *x, *y;
    size_t nx, ny;
    cr_assert_eq(ag_read_file(p, 1 << 20, &x, &nx, &err), AG_OK);
    cr_assert_eq(ag_read_file(q, 1 << 20, &y, &ny, &err), AG_OK);
    cr_assert_eq(nx, 128 + 48);
    cr_assert(nx == ny && memcmp(x, y, nx) == 0, "the two writers differ");
    free(x);
    free(y);
}

/* /dev/full: the error is reported, naming the destination. */
Test(fileio, npy_write_fd_reports_errors)
{
    double v[2] = {1, 2};
    ag_array a = {.ndim = 1, .shape = {2}, .data = v};
    ag_error err = {0};
    int fd = open("/dev/full", O_WRONLY);
    cr_assert_geq(fd, 0);
    TIO_ASSERT_FAILS(ag_npy_write_fd(fd, "/dev/full", &a, &err), &err, AG_EIO, "/dev/full");
    TIO_ASSERT_MSG_HAS(&err, "No space left on device");
    close(fd);
}

/* ag_npy_write renames over its path: a device or FIFO there is refused,
 * never replaced (as root it would replace /dev/null itself). */
Test(fileio, npy_write_refuses_special_files)
{
    double v = 1;
    ag_array a = {.ndim = 0, .data = &v};
    ag_error err = {0};
    struct stat sb;
    TIO_ASSERT_FAILS(ag_npy_write("/dev/null", &a, &err), &err, AG_EIO, "/dev/null");
    cr_assert_eq(stat("/dev/null", &sb), 0);
    cr_assert(S_ISCHR(sb.st_mode), "/dev/null is no longer a character device");
    const char *p = fifo("out.npy");
    TIO_ASSERT_FAILS(ag_npy_write(p, &a, &err), &err, AG_EIO, p);
    cr_assert_eq(lstat(p, &sb), 0);
    cr_assert(S_ISFIFO(sb.st_mode), "the FIFO was replaced");
}

/* ---- the incremental writer (ag_npy_writer) ---- */

/* The bytes at path, in *len; the caller frees them. */
static char *file_bytes(const char *path, size_t *len)
{
    char *buf = NULL;
    ag_error err = {0};
    cr_assert_eq(ag_read_file(path, 1 << 24, &buf, len, &err), AG_OK, "%s", err.message);
    return buf;
}

/* Pieces of any size — empty, one value, across the writer's 64 KiB buffer
 * (8192 values) — give byte for byte what the whole-array writer gives, and
 * the values read back exactly. */
Test(fileio, npy_writer_pieces_match_whole_array)
{
    enum { COUNT = 4 * 8192 + 5 };
    double *v = malloc(COUNT * sizeof *v);
    cr_assert_not_null(v);
    for (size_t i = 0; i < COUNT; i++)
        v[i] = (i % 3 ? -1.0 : 1.0) * ldexp((double)i + 0.25, (int)(i % 41) - 20);
    v[1] = -0.0;
    ag_array a = {.ndim = 3, .shape = {1, COUNT, 1}, .data = v};
    ag_error err = {0};
    const char *p = tio_path("whole.npy"), *q = tio_path("pieces.npy");
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cr_assert_eq(ag_npy_write_fd(fd, p, &a, &err), AG_OK, "%s", err.message);
    close(fd);
    fd = open(q, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ag_npy_writer *w = NULL;
    cr_assert_eq(ag_npy_writer_open(fd, q, a.ndim, a.shape, &w, &err), AG_OK, "%s", err.message);
    static const size_t pieces[] = {0, 1, 7, 8191, 8192, 8193, 0};
    size_t done = 0;
    for (size_t k = 0; k < sizeof pieces / sizeof *pieces; k++, done += pieces[k - 1])
        cr_assert_eq(ag_npy_writer_write(w, v + done, pieces[k], &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_npy_writer_write(w, v + done, COUNT - done, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_npy_writer_close(w, &err), AG_OK, "%s", err.message);
    close(fd);
    size_t nx, ny;
    char *x = file_bytes(p, &nx), *y = file_bytes(q, &ny);
    cr_assert_eq(nx, 128 + (size_t)COUNT * 8);
    cr_assert(nx == ny && memcmp(x, y, nx) == 0, "pieces and whole array differ");
    ag_array back = {0};
    cr_assert_eq(ag_npy_read(q, &back, &err), AG_OK, "%s", err.message);
    cr_assert(memcmp(back.data, v, COUNT * sizeof *v) == 0, "values differ");
    ag_array_free(&back);
    free(x);
    free(y);
    free(v);
}

/* One value too many is refused (nothing of it written) and sticks; close
 * reports it. Too few values: close says how many came. */
Test(fileio, npy_writer_counts_values)
{
    double v[4] = {1, 2, 3, 4};
    size_t shape[2] = {1, 3};
    ag_error err = {0};
    int fd = open("/dev/null", O_WRONLY);
    ag_npy_writer *w = NULL;
    cr_assert_eq(ag_npy_writer_open(fd, "x.npy", 2, shape, &w, &err), AG_OK, "%s", err.message);
    cr_assert_eq(ag_npy_writer_write(w, v, 2, &err), AG_OK);
    TIO_ASSERT_FAILS(ag_npy_writer_write(w, v, 2, &err), &err, AG_ESHAPE, "x.npy");
    TIO_ASSERT_MSG_HAS(&err, "1 more values than the shape's 3");
    TIO_ASSERT_FAILS(ag_npy_writer_write(w, v, 1, &err), &err, AG_ESHAPE, "x.npy");
    cr_assert_eq(ag_npy_writer_close(w, &err), AG_ESHAPE);
    cr_assert_eq(ag_npy_writer_open(fd, "y.npy", 2, shape, &w, &err), AG_OK);
    cr_assert_eq(ag_npy_writer_write(w, v, 2, &err), AG_OK);
    TIO_ASSERT_FAILS(ag_npy_writer_close(w, &err), &err, AG_ESHAPE, "y.npy");
    TIO_ASSERT_MSG_HAS(&err, "2 of the shape's 3 values written");
    close(fd);
}

/* A device that takes nothing: the header fails at open, naming it; a
 * failed write sticks, and close returns it. */
Test(fileio, npy_writer_reports_errors)
{
    double v[2] = {1, 2};
    size_t shape[1] = {2};
    ag_error err = {0};
    ag_npy_writer *w = (ag_npy_writer *)&err; /* set to NULL on failure */
    int fd = open("/dev/full", O_WRONLY);
    cr_assert_geq(fd, 0);
    TIO_ASSERT_FAILS(ag_npy_writer_open(fd, "/dev/full", 1, shape, &w, &err), &err, AG_EIO,
                     "/dev/full");
    TIO_ASSERT_MSG_HAS(&err, "No space left on device");
    cr_assert_null(w);
    close(fd);
    int pipefd[2];
    cr_assert_eq(pipe(pipefd), 0);
    cr_assert_eq(ag_npy_writer_open(pipefd[1], "pipe", 1, shape, &w, &err), AG_OK);
    close(pipefd[0]); /* no reader: EPIPE (SIGPIPE ignored here) */
    void (*was)(int) = signal(SIGPIPE, SIG_IGN);
    TIO_ASSERT_FAILS(ag_npy_writer_write(w, v, 2, &err), &err, AG_EIO, "pipe");
    TIO_ASSERT_MSG_HAS(&err, "Broken pipe");
    TIO_ASSERT_FAILS(ag_npy_writer_write(w, v, 0, &err), &err, AG_EIO, "pipe");
    cr_assert_eq(ag_npy_writer_close(w, &err), AG_EIO);
    signal(SIGPIPE, was);
    close(pipefd[1]);
}

/* Hugging Face writes Python ints of any size (LLaMA-3's tokenizer_config.json:
 * "model_max_length": int(1e30)); jansson alone refuses the whole file. Beyond
 * int64 a literal reads as a real; within it, as the integer it is; text in
 * strings is never touched. */
Test(fileio, json_integers_beyond_64_bits)
{
    static const char doc[] =
        "{\"big\": 1000000000000000019884624838656, \"neg\": -99999999999999999999,"
        " \"max\": 9223372036854775807, \"min\": -9223372036854775808,"
        " \"over\": 9223372036854775808,"
        " \"s\": \"123456789012345678901234 \\\" 99999999999999999999\","
        " \"r\": 1.5e300, \"a\": [18446744073709551616, 7]}";
    const char *p = tio_path("big.json");
    cr_assert_eq(tio_write_bytes(p, doc, sizeof doc - 1), 0);
    json_t *root = NULL;
    ag_error err = {0};
    cr_assert_eq(agi_json_load(p, 1 << 20, JSON_REJECT_DUPLICATES, &root, &err), AG_OK, "%s", err.message);
    cr_assert(json_is_real(json_object_get(root, "big")));
    cr_assert_eq(json_real_value(json_object_get(root, "big")), 1e30);
    cr_assert_eq(json_real_value(json_object_get(root, "neg")), -1e20);
    cr_assert(json_is_integer(json_object_get(root, "max")));
    cr_assert_eq(json_integer_value(json_object_get(root, "max")), INT64_MAX);
    cr_assert(json_is_integer(json_object_get(root, "min")));
    cr_assert_eq(json_integer_value(json_object_get(root, "min")), INT64_MIN);
    cr_assert(json_is_real(json_object_get(root, "over")));
    cr_assert_eq(json_real_value(json_object_get(root, "over")), 9223372036854775808.0);
    cr_assert_str_eq(json_string_value(json_object_get(root, "s")),
                     "123456789012345678901234 \" 99999999999999999999");
    cr_assert_eq(json_real_value(json_object_get(root, "r")), 1.5e300);
    json_t *a = json_object_get(root, "a");
    cr_assert_eq(json_real_value(json_array_get(a, 0)), 18446744073709551616.0);
    cr_assert_eq(json_integer_value(json_array_get(a, 1)), 7);
    json_decref(root);
}

/* ag_file_kind_of: the signatures of src/io/sniff.c on hand-built heads. */
Test(fileio, file_kind_signatures)
{
    static const unsigned char st[] = {0x10, 0, 0, 0, 0, 0, 0, 0, '{', '"'};
    static const unsigned char st_huge[] = {0, 0, 0, 0, 0, 0, 0, 1, '{', '"'}; /* 2^56 bytes */
    cr_assert_eq(ag_file_kind_of("\x93NUMPY\x01\x00", 8), AG_FILE_NPY);
    cr_assert_eq(ag_file_kind_of(st, sizeof st), AG_FILE_SAFETENSORS);
    cr_assert_eq(ag_file_kind_of(st_huge, sizeof st_huge), AG_FILE_UNKNOWN);
    cr_assert_eq(ag_file_kind_of("\x89PNG\r\n\x1a\n\0\0", 10), AG_FILE_PNG);
    cr_assert_eq(ag_file_kind_of("\x89PNG\r\n", 6), AG_FILE_UNKNOWN); /* cut short */
    cr_assert_eq(ag_file_kind_of("\xff\xd8\xff\xe0", 4), AG_FILE_JPEG);
    cr_assert_eq(ag_file_kind_of("RIFF\x24\0\0\0WAVEfmt ", 16), AG_FILE_WAV);
    cr_assert_eq(ag_file_kind_of("RIFF\x24\0\0\0AVI LIST", 16), AG_FILE_UNKNOWN);
    cr_assert_eq(ag_file_kind_of(" \n{\"records\": []}", 17), AG_FILE_JSON);
    cr_assert_eq(ag_file_kind_of("[1, 2]", 6), AG_FILE_JSON);
    cr_assert_eq(ag_file_kind_of("layer,head,sigma_max\n0,0,1\n", 27), AG_FILE_TEXT_TABLE);
    cr_assert_eq(ag_file_kind_of("layer\thead\n", 11), AG_FILE_TEXT_TABLE);
    cr_assert_eq(ag_file_kind_of("hello world\n", 12), AG_FILE_UNKNOWN); /* no separator */
    cr_assert_eq(ag_file_kind_of("a,b\x01", 4), AG_FILE_UNKNOWN);        /* a control byte */
    cr_assert_eq(ag_file_kind_of("\"model\",\"layer\"\r\n", 17), AG_FILE_TEXT_TABLE);
    /* a sentence with a comma is not a header */
    cr_assert_eq(ag_file_kind_of("this is text, not a RIFF file\n", 30), AG_FILE_UNKNOWN);
    cr_assert_eq(ag_file_kind_of("", 0), AG_FILE_UNKNOWN);
    cr_assert_str_eq(ag_file_kind_name(AG_FILE_NPY), "a .npy file");
    cr_assert_str_eq(ag_file_kind_name(AG_FILE_WAV), "a WAV audio file");
}
