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
