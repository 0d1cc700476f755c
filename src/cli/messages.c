/* messages.c — the CLI's lowest layer: notes, errors and usage errors on
 * standard error, one escaped line each, or held back by a task of a corpus
 * run until its turn (cli_hold). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Where this thread's messages go: stderr, or a task's held lines. */
static _Thread_local cli_held *held;

cli_held *cli_hold(cli_held *h)
{
    cli_held *was = held;
    held = h;
    return was;
}

void cli_held_print(cli_held *h)
{
    if (h->len) {
        cli_progress_erase();
        fwrite(h->text, 1, h->len, stderr);
    }
    free(h->text);
    *h = (cli_held){0};
}

/* Append a line to the held ones; -1 when out of memory. */
static int hold_line(cli_held *h, const char *head, const char *msg, const char *tail)
{
    char *line = NULL;
    int n = asprintf(&line, "%s%s%s\n", head, msg, tail);
    char *grown = n < 0 ? NULL : realloc(h->text, h->len + (size_t)n);
    if (grown) {
        memcpy(grown + h->len, line, (size_t)n);
        h->text = grown;
        h->len += (size_t)n;
    }
    free(line);
    return grown ? 0 : -1;
}

/* head, the formatted message, tail: one escaped line on stderr (or held). */
static void message_line(const char *head, const char *fmt, va_list ap, const char *tail)
{
    char *raw = NULL, *safe = NULL;
    if (vasprintf(&raw, fmt, ap) >= 0)
        safe = ag_text_escape_dup(raw, AG_TEXT_CONTROL);
    const char *msg = safe ? safe : "out of memory formatting a message";
    if (!held || hold_line(held, head, msg, tail) != 0) {
        if (!held)
            cli_progress_erase();
        fprintf(stderr, "%s%s%s\n", head, msg, tail);
    }
    free(safe);
    free(raw);
}

void cli_note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    message_line("", fmt, ap, "");
    va_end(ap);
}

int cli_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    message_line("attngeom: ", fmt, ap, "");
    va_end(ap);
    return 1;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    char head[64], tail[80];
    snprintf(head, sizeof head, "attngeom %s: ", cmd);
    snprintf(tail, sizeof tail, " (see attngeom %s --help)", cmd);
    va_list ap;
    va_start(ap, fmt);
    message_line(head, fmt, ap, tail);
    va_end(ap);
    return EXIT_USAGE;
}

int cli_fail_error(const ag_error *err)
{
    return cli_fail("%s", err->message);
}

int cli_unknown_option_among(const char *cmd, const char *const *cands, size_t n, const char *arg)
{
    char word[32];
    /* --name=VALUE: the name alone is what was misspelt */
    size_t len = strcspn(arg, "=");
    snprintf(word, sizeof word, "%.*s", (int)(len < sizeof word ? len : sizeof word - 1), arg);
    /* a one- or two-letter name (-j) is within 2 of every short option:
     * no suggestion is better than a wrong one */
    long k = strlen(word + strspn(word, "-")) < 3 ? -1 : ag_text_closest(word, cands, n, 2);
    if (k >= 0 && strcmp(cands[k], word) != 0)
        return cli_usage_error(cmd, "unknown option '%s' (did you mean %s?)", arg, cands[k]);
    return cli_usage_error(cmd, "unknown option '%s'", arg);
}
