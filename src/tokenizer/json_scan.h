/* Internal prefix: ag_tk (module src/tokenizer/). */
/* tokenizer/json_scan.h — tokenizer.json read with its two large members
 * scanned straight into arrays (json_scan.c). Private to src/tokenizer/.
 *
 * model.vocab (an object token -> id of 150 000 entries and more) and
 * model.merges (as many strings or pairs) are most of a tokenizer.json;
 * through jansson each entry becomes a tree node, a hash-table entry and
 * their frees, which made loading Qwen3's file slower than Hugging Face's
 * Rust library (serde deserializes into its maps directly). Here those two
 * members are decoded by a strict scanner into one buffer of strings, and
 * jansson parses the rest of the document with them left as {} and []. */
#ifndef ATTNGEOM_TK_JSON_SCAN_H
#define ATTNGEOM_TK_JSON_SCAN_H

#include <stddef.h>

#include <jansson.h>

#include "attngeom/core.h"

typedef struct {
    const char *s; /* in the scan's arena; may hold NUL bytes */
    size_t n;
} ag_tk_str;

typedef struct ag_tk_scan_s {
    char *arena;          /* every decoded string, back to back */
    int has_vocab;        /* model.vocab was scanned (and left as {}) */
    ag_tk_str *vocab_key; /* n_vocab tokens in file order */
    long long *vocab_id;
    size_t n_vocab;
    int merge_width; /* 0: model.merges not scanned; 1: "a b" strings; 2: [a, b] pairs */
    ag_tk_str *merge;    /* merge_width strings per merge */
    size_t n_merges;
} ag_tk_scan;

/* Parse the tokenizer.json at path (at most max_bytes) into *root, as
 * agi_json_load with `flags` would, with model.vocab (when an object whose
 * values are integers) and model.merges (when an array of strings or of
 * pairs of strings) moved into *sc and left as {} and [] in *root. A file
 * the scanner does not take whole (an escape it cannot decode, a number
 * that is not an integer, a key given twice, invalid JSON) is parsed by
 * jansson alone with *sc empty: the document is the same, only the time
 * differs, and so are the error messages (jansson's, with the file's own
 * lines and columns). On success *root and *sc are the caller's
 * (json_decref, ag_tk_scan_free). Errors as agi_json_load. */
int ag_tk_json_load_scanned(const char *path, size_t max_bytes, size_t flags, json_t **root, ag_tk_scan *sc,
                            ag_error *err);
void ag_tk_scan_free(ag_tk_scan *sc);

#endif
