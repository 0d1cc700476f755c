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

/* A \verb delimiter that does not occur in s, or 0. */
static char verb_delimiter(const char *s)
{
    static const char candidates[] = "|!+=@/:;\"'`~^.,?<>()[]-_0123456789";
    for (const char *c = candidates; *c; c++)
        if (!strchr(s, *c))
            return *c;
    return 0;
}

static void put_quoted(FILE *fp, const char *s, char special, const char *replacement)
{
    for (; *s; s++)
        if (*s == special)
            fputs(replacement, fp);
        else
            fputc(*s, fp);
}

int cli_put_cell(FILE *fp, ag_format fmt, const char *s)
{
    char *t = ag_text_escape_dup(s ? s : "", AG_TEXT_CONTROL);
    if (!t)
        return -1;
    if (fmt == AG_FORMAT_CSV) { /* RFC 4180 */
        fputc('"', fp);
        put_quoted(fp, t, '"', "\"\"");
        fputc('"', fp);
    } else if (fmt == AG_FORMAT_MD) { /* a bare | would end the cell */
        put_quoted(fp, t, '|', "\\|");
    } else if (fmt == AG_FORMAT_LATEX) {
        char d = verb_delimiter(t);
        fprintf(fp, "\\verb%c", d ? d : '|');
        put_quoted(fp, t, d ? d : '|', "\\x7c"); /* only when every candidate occurs */
        fputc(d ? d : '|', fp);
    } else {
        fputs(t, fp); /* escaped: no tab or newline can split a TSV or table row */
    }
    free(t);
    return ferror(fp) ? -1 : 0;
}
