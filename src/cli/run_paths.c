/* run_paths.c — the files a model run names, checked before anything is
 * read or written (docs/cli.md, "Outputs"): MODEL and the inputs against
 * the outputs, and a name with {i} as one file per text. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* The file of text s: every {i} of pattern replaced by its line index (0
 * for --text or --tokens); NULL for a NULL pattern or out of memory. */
char *cli_text_path(const char *pattern, const cli_seq *s)
{
    if (!pattern)
        return NULL;
    char index[24];
    snprintf(index, sizeof index, "%ld", s->line >= 0 ? s->line : 0L);
    size_t marks = 0, len = strlen(pattern);
    for (const char *p = strstr(pattern, "{i}"); p; p = strstr(p + 3, "{i}"))
        marks++;
    char *out = malloc(len + marks * strlen(index) + 1), *o = out;
    for (const char *p = pattern; out && *p;) {
        if (strncmp(p, "{i}", 3) == 0) {
            o = stpcpy(o, index);
            p += 3;
        } else {
            *o++ = *p++;
        }
    }
    if (out)
        *o = '\0';
    return out;
}

/* The outputs of r (at most CLI_RUN_OUTS + 1): the command's own (those of r->outs set)
 * or -o, and --save-input with, when the records go to standard output,
 * those. */
static size_t run_outputs(const cli_model_run *r, cli_path outs[CLI_RUN_OUTS + 1])
{
    size_t n = 0;
    if (r->outs[0].option)
        for (size_t k = 0; k < CLI_RUN_OUTS && r->outs[k].option; k++)
            outs[n++] = r->outs[k];
    else if (r->common.out_path)
        outs[n++] = (cli_path){"-o", r->common.out_path};
    else if (r->input.save_input)
        outs[n++] = (cli_path){"the records", "-"};
    if (r->input.save_input)
        outs[n++] = (cli_path){"--save-input", r->input.save_input};
    return n;
}

/* outs with {i} replaced by s's line (s NULL: as given), checked. */
static int check_text_outputs(const cli_path *outs, size_t nout, const cli_seq *s,
                              const cli_inputs *set)
{
    cli_path named[CLI_RUN_OUTS + 1];
    char *own[CLI_RUN_OUTS + 1] = {NULL};
    int rc = 0;
    for (size_t k = 0; k < nout; k++) {
        named[k] = outs[k];
        if (s && outs[k].path && !(named[k].path = own[k] = cli_text_path(outs[k].path, s)))
            rc = cli_fail("out of memory");
    }
    if (rc == 0)
        rc = cli_outputs_check(named, nout, set);
    for (size_t k = 0; k < nout; k++)
        free(own[k]);
    return rc;
}

int cli_model_run_check_paths(const cli_model_run *r)
{
    const cli_input *in = &r->input;
    cli_path ins[] = {{"MODEL", r->model_dir}, {"--text-file", in->text_file},
                      {"--tokens-file", in->tokens_file}, {"--expect", r->common.expect_path},
                      {"--image-file", in->image_file}, {"--audio-file", in->audio_file},
                      {"--pixels", in->pixels}, {"--features", in->features},
                      {"--image", in->image}, {"--audio", in->audio}};
    const char *list = in->image_file ? in->image_file : in->audio_file;
    cli_inputs *set;
    cli_path outs[CLI_RUN_OUTS + 1];
    size_t nout = run_outputs(r, outs);
    int pattern = 0;
    int rc = cli_inputs_new(ins, sizeof ins / sizeof *ins, &set);
    for (size_t k = 0; rc == 0 && list && k < r->nseq; k++)
        rc = cli_inputs_add_listed(set, in->image_file ? "--image-file" : "--audio-file", list,
                                   r->seqs[k].source);
    /* a name with {i} is a file per text, each checked; without, one */
    for (size_t k = 0; k < nout; k++)
        pattern |= outs[k].path && strstr(outs[k].path, "{i}");
    for (size_t k = 0; rc == 0 && k < (pattern ? r->nseq : 1); k++)
        rc = check_text_outputs(outs, nout, pattern ? &r->seqs[k] : NULL, set);
    cli_inputs_free(set);
    return rc;
}
