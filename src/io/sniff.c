/* sniff.c — what a file looks like from its first bytes, so that a file
 * given to the wrong reader is named for what it is ("dog.npy is a .npy
 * file; plot takes records ...") instead of failing deep in a parser
 * ("line 1: a NUL byte in a cell"). The signatures:
 *  - .npy: "\x93NUMPY" (numpy/lib/format.py, NEP 1);
 *  - safetensors: an 8-byte little-endian header length, then the JSON
 *    header's '{' (huggingface/safetensors, "Format");
 *  - PNG: the 8-byte signature 89 50 4E 47 0D 0A 1A 0A (PNG spec, §5.2);
 *  - JPEG: FF D8 FF, SOI and the first marker's prefix (ITU T.81, B.1.1.3);
 *  - WAV: "RIFF" size "WAVE" (Microsoft RIFF, the WAVE form);
 *  - records as attngeom writes them: JSON (a '{' or '[' first, after
 *    blanks) or CSV/TSV (a first line of keys and ',' or tab separators). */
#include <ctype.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io_internal.h"

ag_file_kind ag_file_kind_of(const void *head, size_t n)
{
    const unsigned char *b = head;
    if (n >= 6 && memcmp(b, "\x93NUMPY", 6) == 0)
        return AG_FILE_NPY;
    if (n >= 8 && memcmp(b, "\x89PNG\r\n\x1a\n", 8) == 0)
        return AG_FILE_PNG;
    if (n >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF)
        return AG_FILE_JPEG;
    if (n >= 12 && memcmp(b, "RIFF", 4) == 0 && memcmp(b + 8, "WAVE", 4) == 0)
        return AG_FILE_WAV;
    if (n >= 9 && b[8] == '{') {
        unsigned long long len = 0;
        for (int k = 7; k >= 0; k--)
            len = len << 8 | b[k];
        /* a header of at least "{}" and below the 100 MB safetensors
         * allows; a JSON or text file cannot begin so (its byte 7 would
         * be a NUL or its length absurd) */
        if (len >= 2 && len <= 100000000ull)
            return AG_FILE_SAFETENSORS;
    }
    size_t k = 0;
    while (k < n && strchr(" \t\r\n", b[k]) && b[k])
        k++;
    if (k < n && (b[k] == '{' || b[k] == '['))
        return AG_FILE_JSON;
    /* a header line as the records' writers give it: keys (letters,
     * digits, '_', '.', '-', quoted or not) and at least one separator; a
     * sentence with a comma is not one */
    int sep = 0;
    for (k = 0; k < n && b[k] != '\n' && !(b[k] == '\r' && k + 1 < n && b[k + 1] == '\n'); k++) {
        if (b[k] == ',' || b[k] == '\t')
            sep = 1;
        else if (!isalnum(b[k]) && !strchr("_.-\"", b[k]))
            return AG_FILE_UNKNOWN;
    }
    return sep ? AG_FILE_TEXT_TABLE : AG_FILE_UNKNOWN;
}

const char *ag_file_kind_name(ag_file_kind k)
{
    switch (k) {
    case AG_FILE_NPY: return "a .npy file";
    case AG_FILE_SAFETENSORS: return "a safetensors file";
    case AG_FILE_PNG: return "a PNG image";
    case AG_FILE_JPEG: return "a JPEG image";
    case AG_FILE_WAV: return "a WAV audio file";
    case AG_FILE_JSON: return "a JSON file";
    case AG_FILE_TEXT_TABLE: return "a CSV/TSV file";
    default: return "of an unknown kind";
    }
}

int ag_file_kind_read(const char *path, ag_file_kind *out, ag_error *err)
{
    *out = AG_FILE_UNKNOWN;
    int fd;
    struct stat st;
    int status = agi_open_input(path, &fd, &st, err);
    if (status != AG_OK)
        return status;
    unsigned char head[256]; /* enough for a CSV header's first cells */
    ssize_t n;
    do
        n = read(fd, head, sizeof head);
    while (n < 0 && errno == EINTR);
    int saved = errno;
    close(fd);
    if (n < 0)
        return ag_error_set(err, AG_EIO, "%s: %s", path, strerror(saved));
    *out = ag_file_kind_of(head, (size_t)n);
    return AG_OK;
}
