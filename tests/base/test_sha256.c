/* test_sha256.c — SHA-256 (src/base/sha256.c) against the examples of FIPS 180-4
 * (NIST's "SHA256.pdf", "SHA256_2.pdf" and the long-message example of
 * csrc.nist.gov), messages around the padding boundaries (55, 56, 63, 64,
 * 65, 119, 120 bytes: digests from coreutils' sha256sum, an independent
 * implementation), feeding in pieces, and files. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attngeom.h"

static void digest_of(const void *msg, size_t len, char hex[65])
{
    ag_sha256 s;
    unsigned char d[32];
    ag_sha256_init(&s);
    ag_sha256_update(&s, msg, len);
    ag_sha256_final(&s, d);
    ag_sha256_hex(d, hex);
}

static void check(const char *msg, size_t len, const char *want)
{
    char hex[65];
    digest_of(msg, len, hex);
    cr_expect_str_eq(hex, want, "message of %zu bytes", len);
}

Test(sha256, fips_180_4_examples)
{
    check("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"; /* 448 bits */
    check(two, strlen(two), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    const char *four = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmn"
                       "hijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"; /* 896 bits */
    check(four, strlen(four), "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
    check("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

Test(sha256, one_million_a)
{
    size_t n = 1000000;
    char *a = malloc(n);
    cr_assert_not_null(a);
    memset(a, 'a', n);
    check(a, n, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(a);
}

/* The length field moves to a second padding block from 56 bytes on. */
Test(sha256, padding_boundaries)
{
    static const struct {
        size_t n;
        const char *hex;
    } cases[] = {
        {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
        {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
        {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
        {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
        {65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0"},
        {119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
        {120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c"},
        {1000, "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3"},
    };
    char a[1000];
    memset(a, 'a', sizeof a);
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++)
        check(a, cases[k].n, cases[k].hex);
}

/* Any split of the message into updates gives the one-shot digest. */
Test(sha256, pieces_equal_whole)
{
    unsigned char msg[300];
    for (size_t k = 0; k < sizeof msg; k++)
        msg[k] = (unsigned char)(k * 131 + 7);
    char whole[65], parts[65];
    digest_of(msg, sizeof msg, whole);
    for (size_t step = 1; step <= 130; step += 3) {
        ag_sha256 s;
        unsigned char d[32];
        ag_sha256_init(&s);
        for (size_t at = 0; at < sizeof msg; at += step)
            ag_sha256_update(&s, msg + at, sizeof msg - at < step ? sizeof msg - at : step);
        ag_sha256_final(&s, d);
        ag_sha256_hex(d, parts);
        cr_expect_str_eq(parts, whole, "pieces of %zu bytes", step);
    }
}

Test(sha256, file_and_errors)
{
    char path[] = "/tmp/ag_sha256_XXXXXX", hex[65];
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, "abc", 3), 3);
    close(fd);
    ag_error err = {0};
    cr_assert_eq(ag_sha256_file(path, hex, &err), AG_OK, "%s", err.message);
    cr_expect_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    unlink(path);
    cr_expect_eq(ag_sha256_file(path, hex, &err), AG_EIO);
    cr_expect(strstr(err.message, path) != NULL, "%s", err.message);
    cr_expect_eq(ag_sha256_file("/tmp", hex, &err), AG_EIO);
    /* the one regular-file check of every reader (agi_open_input) */
    cr_expect_str_eq(err.message, "/tmp: is a directory");
}
