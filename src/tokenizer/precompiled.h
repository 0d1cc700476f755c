/* Internal prefix: ag_tk (module src/tokenizer/: ag_tk_ and ag_tkm_). */
/* tokenizer/precompiled.h — SentencePiece's precompiled_charsmap, the rule
 * table of the `Precompiled` normalizer (T5, XLM-R, ALBERT, ...). Private to
 * normalizers.c. */
#ifndef ATTNGEOM_TK_PRECOMPILED_H
#define ATTNGEOM_TK_PRECOMPILED_H

#include <stddef.h>

#include "tk.h"

typedef struct ag_tk_charsmap ag_tk_charsmap;

/* Parse the base64 text of "precompiled_charsmap" (b64, n bytes). Every unit
 * a lookup can reach and every replacement string is checked here, so that
 * applying the map never reads out of bounds. A broken map: AG_EFORMAT, the
 * message naming `path`. */
int ag_tk_charsmap_load(const char *path, const char *b64, size_t n, ag_tk_charsmap **out,
                        ag_error *err);
/* Apply the map to n bytes of valid UTF-8 s, appending to out. */
int ag_tk_charsmap_apply(const ag_tk_charsmap *cm, const char *s, size_t n, ag_tk_buf *out);
void ag_tk_charsmap_free(ag_tk_charsmap *cm);

#endif
