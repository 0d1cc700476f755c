/* text.c — strings from files (paths, tensor names, config values, tokens) in
 * the CLI's outputs: JSON strings that are always valid UTF-8, and cells of
 * the text formats escaped for terminals and quoted for their format (see
 * ag_text_escape and docs/cli.md, "Names in outputs and messages"). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

json_t *cli_json_text(const char *s)
{
    char *t = ag_text_escape_dup(s, AG_TEXT_UTF8);
    json_t *j = t ? json_string(t) : NULL;
    free(t);
    return j;
}

int cli_put_cell(FILE *fp, ag_format fmt, const char *s)
{
    return ag_format_text(fp, fmt, s);
}
