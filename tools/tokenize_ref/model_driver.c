/* model_driver.c — runs the tokenizer's model stage (src/tokenizer/tk.h) on
 * the pieces of a JSON file {"model": {...}, "pieces": [...]}: one line per
 * piece, its ids as a JSON list or ERR; a single line LOADERR <message> when
 * the model does not load. Built and used by diff_models.py. */
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "tokenizer/tk.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: model_driver CASE.json\n");
        return 2;
    }
    json_error_t je;
    json_t *root = json_load_file(argv[1], JSON_ALLOW_NUL, &je);
    if (!root) {
        fprintf(stderr, "model_driver: %s: %s\n", argv[1], je.text);
        return 2;
    }
    ag_tk_model *m;
    ag_error err = {0};
    if (ag_tk_model_load("case", json_object_get(root, "model"), &m, &err) != AG_OK) {
        printf("LOADERR %s\n", err.message);
        json_decref(root);
        return 0;
    }
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(root, "pieces"), i, p) {
        ag_tk_ids out = {0};
        if (ag_tk_model_tokenize(m, json_string_value(p), json_string_length(p), &out, &err) != AG_OK) {
            printf("ERR\n");
        } else {
            printf("[");
            for (size_t k = 0; k < out.n; k++)
                printf(k ? ", %d" : "%d", out.v[k]);
            printf("]\n");
        }
        free(out.v);
    }
    ag_tk_model_free(m);
    json_decref(root);
    return 0;
}
