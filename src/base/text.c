/* text.c — strings from files (names, paths, config values) made safe to
 * show: valid UTF-8 for JSON, and free of terminal control characters for
 * messages and the human formats. Every byte that cannot be shown is written
 * as the four characters \xNN, as Python's 'backslashreplace' does. */
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "attngeom.h"

/* The length of the piece of s[0..len) at its start, and whether it must be
 * escaped (every byte as \xNN) or copied. */
static size_t next_piece(const char *s, size_t len, unsigned flags, int *escape)
{
    utf8proc_int32_t cp;
    utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)len, &cp);
    if (k <= 0) { /* not part of a valid character: this byte alone */
        *escape = 1;
        return 1;
    }
    /* C0, DEL and the C1 range U+0080–U+009F all drive terminals. */
    *escape = (flags & AG_TEXT_CONTROL) && (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F));
    return (size_t)k;
}

size_t ag_text_escape(char *dst, size_t size, const char *s, unsigned flags)
{
    static const char hex[] = "0123456789abcdef";
    size_t len = strlen(s), need = 0;
    int full = 0; /* once a piece does not fit, nothing after it is written */
    if (size)
        dst[0] = '\0';
    for (size_t i = 0; i < len;) {
        int escape;
        size_t k = next_piece(s + i, len - i, flags, &escape);
        size_t w = escape ? 4 * k : k;
        if (!full && need + w < size) {
            if (!escape)
                memcpy(dst + need, s + i, k);
            for (size_t b = 0; escape && b < k; b++) {
                unsigned char c = (unsigned char)s[i + b];
                memcpy(dst + need + 4 * b, (char[4]){'\\', 'x', hex[c >> 4], hex[c & 15]}, 4);
            }
            dst[need + w] = '\0';
        } else {
            full = 1;
        }
        need += w;
        i += k;
    }
    return need;
}

char *ag_text_escape_dup(const char *s, unsigned flags)
{
    size_t n = ag_text_escape(NULL, 0, s, flags);
    char *d = malloc(n + 1);
    if (d)
        ag_text_escape(d, n + 1, s, flags);
    return d;
}

/* The Damerau–Levenshtein distance in its unrestricted form (insertions,
 * deletions, substitutions and transpositions of adjacent characters, a
 * substring edited more than once allowed): the algorithm of Lowrance &
 * Wagner 1975 ("An extension of the string-to-string correction problem",
 * JACM 22(2)), over bytes. The restricted "optimal string alignment"
 * variant would give 3, not 2, for "ca" → "abc". */
long ag_text_distance(const char *a, const char *b)
{
    size_t m = strlen(a), n = strlen(b), w = n + 2;
    /* d[(i+1)*w + (j+1)]: distance of a[0..i) and b[0..j); row and column 0
     * hold the sentinel m + n, larger than any distance. */
    size_t *d = malloc((m + 2) * w * sizeof *d);
    if (!d)
        return -1;
    size_t inf = m + n, last_row[256] = {0}; /* last row (1-based) of each byte in a */
    d[0] = inf;
    for (size_t i = 0; i <= m; i++)
        d[(i + 1) * w] = inf, d[(i + 1) * w + 1] = i;
    for (size_t j = 0; j <= n; j++)
        d[j + 1] = inf, d[w + j + 1] = j;
    for (size_t i = 1; i <= m; i++) {
        size_t last_col = 0; /* last column (1-based) in this row where a[i-1] matched */
        for (size_t j = 1; j <= n; j++) {
            size_t k = last_row[(unsigned char)b[j - 1]], l = last_col;
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            if (!cost)
                last_col = j;
            size_t best = d[i * w + j] + cost;              /* substitution */
            size_t ins = d[(i + 1) * w + j] + 1, del = d[i * w + j + 1] + 1;
            size_t swap = d[k * w + l] + (i - k - 1) + 1 + (j - l - 1); /* transposition */
            best = ins < best ? ins : best;
            best = del < best ? del : best;
            best = swap < best ? swap : best;
            d[(i + 1) * w + j + 1] = best;
        }
        last_row[(unsigned char)a[i - 1]] = i;
    }
    long r = (long)d[(m + 1) * w + n + 1];
    free(d);
    return r;
}

long ag_text_closest(const char *word, const char *const *candidates, size_t n, long max)
{
    long best = -1, best_d = max + 1;
    for (size_t k = 0; k < n; k++) {
        if (!candidates[k])
            continue;
        long dist = ag_text_distance(word, candidates[k]);
        if (dist >= 0 && dist < best_d) /* strictly less: ties go to the first */
            best = (long)k, best_d = dist;
    }
    return best;
}
