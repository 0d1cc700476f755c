/* model_run.c — what every command that runs a model folder shares (analyze,
 * attention, residual, rollout, similarity): parsing MODEL and the input
 * options, loading the model, the layer/head selections and the tokenized
 * inputs, and the loop over the texts of a corpus. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

void cli_model_run_free(cli_model_run *r)
{
    cli_workers_free(&r->workers);
    ag_model_free(r->model);
    cli_seqs_free(r->seqs, r->nseq);
    ag_selection_free(r->layers);
    ag_selection_free(r->heads);
}

int cli_model_run_finish(cli_model_run *r, int rc)
{
    rc = cli_outputs_finish(&r->save_input, rc);
    cli_model_run_free(r);
    return rc;
}

int cli_model_run_parse(cli_model_run *r, const char *cmd, const char *help, int argc,
                        char **argv, cli_extra_option extra, int allow_heads)
{
    r->common.jobs_allowed = 1;
    for (int i = 1; i < argc; i++) {
        int used = extra ? extra(r, argc, argv, &i) : 0;
        if (used == 0)
            used = cli_common_option(&r->common, cmd, argc, argv, &i);
        if (used == 0)
            used = cli_input_option(&r->input, cmd, 1, argc, argv, &i);
        if (used == 0)
            used = cli_media_option(&r->input, cmd, argc, argv, &i);
        if (used < 0)
            return EXIT_USAGE;
        if (used)
            continue;
        if (strcmp(argv[i], "--help") == 0) {
            fputs(help, stdout);
            return -1;
        }
        if (argv[i][0] == '-' && argv[i][1])
            return cli_usage_error(cmd, "unknown option '%s'", argv[i]);
        if (r->model_dir)
            return cli_usage_error(cmd, "one MODEL only ('%s' and '%s')", r->model_dir, argv[i]);
        r->model_dir = argv[i];
    }
    if (!r->model_dir)
        return cli_usage_error(cmd, "missing MODEL (a Hugging Face model folder)");
    cli_set_model_name(&r->common, r->model_dir);
    if (!allow_heads && r->input.heads)
        return cli_usage_error(cmd, "takes no --heads: its records are per layer (\"head\": -1)");
    return cli_common_check(&r->common, cmd);
}

/* Every sequence's ids against the vocabulary, before the first text is
 * computed: a bad id on the last line of a long --tokens-file fails the run
 * at once, with the message the forward pass would give there. */
static int check_corpus_ids(const cli_model_run *r)
{
    ag_error err = {0};
    for (size_t k = 0; k < r->nseq; k++) {
        const cli_seq *s = &r->seqs[k];
        if (!s->skip && s->ids && ag_model_check_ids(r->model, s->ids, s->n, &err) != AG_OK)
            return cli_model_run_fail(r, s, &err);
    }
    return 0;
}

int cli_model_run_prepare(cli_model_run *r, const char *cmd, int extra_layers)
{
    ag_error err = {0};
    if (ag_model_load(r->model_dir, &r->model, &err) != AG_OK)
        return cli_fail_error(&err);
    const ag_model_config *g = ag_model_get_config(r->model);
    r->nlayer_sel = g->n_layer + extra_layers;
    int rc = cli_selection(cmd, r->input.layers, r->nlayer_sel, "layers", r->model_dir,
                           &r->layers);
    if (rc == 0)
        rc = cli_selection(cmd, r->input.heads, g->n_head, "heads", r->model_dir, &r->heads);
    r->layer_on = ag_selection_mask(r->layers);
    r->head_on = ag_selection_mask(r->heads);
    if (rc == 0)
        rc = cli_model_inputs(r, cmd);
    if (rc == 0)
        rc = check_corpus_ids(r);
    if (rc == 0 && r->single && r->nseq != 1)
        rc = cli_fail("%s: %s takes one sequence, the file has %zu", r->input.tokens_file, r->single, r->nseq);
    if (rc == 0)
        rc = cli_workers_new(&r->common, &r->workers);
    return rc;
}

ag_forward_options cli_forward_options(const cli_model_run *r)
{
    return (ag_forward_options){.size = sizeof(ag_forward_options),
                                .precision = r->input.precision,
                                .pool = ag_workers_pool(r->workers.workers)};
}

int cli_model_run_fail(const cli_model_run *r, const cli_seq *s, const ag_error *err)
{
    if (s->source)
        return cli_fail("%s: %s: %s", r->model_dir, s->source, err->message);
    if (s->line >= 0 && r->input.tokens_file)
        return cli_fail("%s: %s: line %ld: %s", r->model_dir, r->input.tokens_file, s->line + 1, err->message);
    if (s->line >= 0)
        return cli_fail("%s: text line %ld: %s", r->model_dir, s->line + 1, err->message);
    return cli_fail("%s: %s", r->model_dir, err->message);
}

int cli_model_run_each(cli_model_run *r, const char *cmd, cli_text_fn fn, void *user)
{
    cli_progress p;
    int rc = 0;
    cli_progress_start(&p, cmd, r->input.progress, r->nseq);
    for (size_t k = 0; rc == 0 && k < r->nseq; k++) {
        if (!r->seqs[k].skip)
            rc = fn(r, &r->seqs[k], user);
        if (rc == 0 && !r->seqs[k].skip && r->sink)
            rc = cli_sink_text(r->sink);
        if (rc == 0)
            cli_progress_step(&p, r->seqs[k].skip);
    }
    cli_progress_end(&p);
    return rc;
}

/* ---- texts at once ------------------------------------------------------ */

/* Texts a batch holds per thread: enough that a thread seldom waits for the
 * batch's slowest text, few enough that records stream soon after theirs
 * is done. With one thread a batch is one text. */
#define TEXTS_PER_THREAD 4

typedef struct {
    cli_model_run *r;
    cli_text_work work;
    void *user;
    const size_t *seq;  /* (count) the batch's texts to run: indices into r->seqs */
    cli_text_out *outs; /* (count) */
} text_batch;

static int text_task(size_t i, int worker, void *user)
{
    (void)worker;
    text_batch *b = user;
    cli_text_out *o = &b->outs[i];
    cli_hold(&o->held);
    o->rc = b->work(b->r, &b->r->seqs[b->seq[i]], o, b->user);
    cli_hold(NULL);
    return o->rc;
}

void cli_text_out_clear(cli_text_out *o)
{
    ag_record_list_free(o->recs);
    free(o->data);
    free(o->held.text);
    memset(o, 0, sizeof *o);
}

int cli_text_take_turn(cli_model_run *r, const cli_seq *s, cli_text_out *o, cli_text_turn turn,
                       void *user)
{
    cli_held_print(&o->held);
    int rc = o->rc;
    if (rc == 0 && turn)
        rc = turn(r, s, o, user);
    if (rc == 0 && r->sink)
        rc = cli_records_move(&r->sink->recs, &o->recs) != 0 ? cli_fail("out of memory for records")
                                                             : cli_sink_text(r->sink);
    return rc;
}

/* The batch from text k on: up to cap texts to run (their indices in seq,
 * *count of them) and the skipped ones between; returns the index after it. */
static size_t next_batch(const cli_model_run *r, size_t k, size_t cap, size_t *seq,
                         size_t *count)
{
    for (*count = 0; k < r->nseq && *count < cap; k++)
        if (!r->seqs[k].skip)
            seq[(*count)++] = k;
    return k;
}

size_t cli_texts_per_batch(const cli_model_run *r)
{
    int threads = ag_pool_threads(ag_workers_pool(r->workers.workers));
    return threads == 1 ? 1 : (size_t)threads * TEXTS_PER_THREAD;
}

void cli_texts_run(cli_model_run *r, cli_text_work work, void *user, const size_t *seq,
                   size_t count, cli_text_out *outs)
{
    text_batch b = {r, work, user, seq, outs};
    cli_workers_run(&r->workers, count, text_task, &b); /* each text's status is its out's */
}

int cli_model_run_texts(cli_model_run *r, const char *cmd, cli_text_work work,
                        cli_text_turn turn, void *user)
{
    if (cli_dist_hook)
        return cli_dist_hook->texts(r, cmd, work, turn, user);
    size_t cap = cli_texts_per_batch(r);
    size_t *seq = malloc(cap * sizeof *seq);
    cli_text_out *outs = calloc(cap, sizeof *outs);
    if (!seq || !outs) {
        free(seq);
        free(outs);
        return cli_fail("out of memory");
    }
    cli_progress p;
    int rc = 0;
    cli_progress_start(&p, cmd, r->input.progress, r->nseq);
    for (size_t k = 0; rc == 0 && k < r->nseq;) {
        size_t count, end = next_batch(r, k, cap, seq, &count);
        cli_texts_run(r, work, user, seq, count, outs);
        for (size_t t = 0; k < end; k++) {
            const cli_seq *s = &r->seqs[k];
            if (!s->skip) {
                if (rc == 0)
                    rc = cli_text_take_turn(r, s, &outs[t], turn, user);
                cli_text_out_clear(&outs[t++]);
            }
            if (rc == 0)
                cli_progress_step(&p, s->skip);
        }
    }
    cli_progress_end(&p);
    free(seq);
    free(outs);
    return rc;
}

int cli_model_run_records(cli_model_run *r, const char *cmd, cli_text_work work)
{
    cli_sink sink;
    cli_settings_in in = {.model_dir = r->model_dir, .run = r};
    int rc = cli_sink_open(&sink, &r->common, cmd, r->model_dir, &in, 1);
    r->sink = &sink;
    if (rc == 0)
        rc = cli_model_run_texts(r, cmd, work, NULL, NULL);
    r->sink = NULL;
    return cli_sink_close(&sink, rc, NULL);
}
