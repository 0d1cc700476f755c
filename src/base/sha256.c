/* sha256.c — SHA-256 as FIPS 180-4 (August 2015) defines it, §4.1.2 (the
 * functions), §4.2.2 (the constants), §5.1.1 (padding), §5.3.3 (the initial
 * hash value) and §6.2.2 (the computation). For the settings of a run (the
 * weight files' digests): none of the libraries attngeom links (jansson, GSL,
 * LAPACKE/OpenBLAS, PCRE2, utf8proc, cairo) offers a hash; GLib has one but
 * comes only with cairo's development package, and one hash is not worth
 * linking GLib or a crypto library into the library. Tested against the standard's examples
 * (tests/base/test_sha256.c) and sha256sum (tests/cli/stream.sh). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attngeom.h"
#include "io/io_internal.h"

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static uint32_t rotr(uint32_t x, int n)
{
    return (x >> n) | (x << (32 - n));
}

/* §6.2.2 on one 512-bit block. */
static void compress(uint32_t h[8], const unsigned char *block)
{
    uint32_t w[64];
    for (int t = 0; t < 16; t++)
        w[t] = (uint32_t)block[4 * t] << 24 | (uint32_t)block[4 * t + 1] << 16 |
               (uint32_t)block[4 * t + 2] << 8 | block[4 * t + 3];
    for (int t = 16; t < 64; t++) {
        uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
        uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
        w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (int t = 0; t < 64; t++) {
        uint32_t t1 = k + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[t] + w[t];
        uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        k = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += k;
}

void ag_sha256_init(ag_sha256 *s)
{
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, h0, sizeof h0);
    s->bytes = 0;
    s->fill = 0;
}

void ag_sha256_update(ag_sha256 *s, const void *data, size_t len)
{
    const unsigned char *p = data;
    s->bytes += len;
    if (s->fill) {
        size_t take = 64 - s->fill < len ? 64 - s->fill : len;
        memcpy(s->block + s->fill, p, take);
        s->fill += take;
        p += take;
        len -= take;
        if (s->fill < 64)
            return;
        compress(s->h, s->block);
        s->fill = 0;
    }
    for (; len >= 64; p += 64, len -= 64)
        compress(s->h, p);
    memcpy(s->block, p, len);
    s->fill = len;
}

void ag_sha256_final(ag_sha256 *s, unsigned char digest[32])
{
    /* §5.1.1: a 1 bit, zeros to 448 mod 512 bits, the length in bits */
    uint64_t bits = s->bytes * 8;
    unsigned char pad[72] = {0x80};
    size_t npad = (s->fill < 56 ? 56 : 120) - s->fill;
    for (int k = 0; k < 8; k++)
        pad[npad + k] = (unsigned char)(bits >> (56 - 8 * k));
    ag_sha256_update(s, pad, npad + 8);
    for (int k = 0; k < 32; k++)
        digest[k] = (unsigned char)(s->h[k / 4] >> (24 - 8 * (k % 4)));
}

void ag_sha256_hex(const unsigned char digest[32], char hex[65])
{
    static const char digits[] = "0123456789abcdef";
    for (int k = 0; k < 32; k++) {
        hex[2 * k] = digits[digest[k] >> 4];
        hex[2 * k + 1] = digits[digest[k] & 15];
    }
    hex[64] = '\0';
}

int ag_sha256_file(const char *path, char hex[65], ag_error *err)
{
    int fd;
    struct stat st;
    /* the regular-file check every input goes through: a FIFO must not block */
    int rc = agi_open_input(path, &fd, &st, err);
    if (rc != AG_OK)
        return rc;
    enum { CHUNK = 1 << 20 };
    unsigned char *buf = malloc(CHUNK), digest[32];
    if (!buf) {
        close(fd);
        return ag_error_set(err, AG_ENOMEM, "%s: out of memory for hashing", path);
    }
    ag_sha256 s;
    ag_sha256_init(&s);
    ssize_t got;
    while ((got = read(fd, buf, CHUNK)) != 0) {
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            break;
        ag_sha256_update(&s, buf, (size_t)got);
    }
    int e = errno;
    free(buf);
    close(fd);
    if (got < 0)
        return ag_error_set(err, AG_EIO, "%s: cannot read: %s", path, agi_strerror(e));
    ag_sha256_final(&s, digest);
    ag_sha256_hex(digest, hex);
    return AG_OK;
}
