/* model_run.c — what every command that runs a model folder shares (analyze,
 * attention, residual, rollout, similarity): parsing MODEL and the input
 * options, loading the model, the layer/head selections and the tokenized
 * inputs, and the turns of a corpus run (the library's, ag_run_map_run). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

void cli_model_run_free(cli_model_run *r)
{
    cli_workers_free(&r->workers);
    ag_run_options_free(r->opt);
    r->opt = NULL;
    if (!r->pair) /* else the pair's encoder */
        ag_model_free(r->model);
    ag_seq2seq_free(r->pair);
    r->pair = NULL;
    free(r->target);
    r->target = NULL;
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

int cli_model_run_parse(cli_model_run *r, const cli_usage *u, int argc, char **argv,
                        cli_extra_option extra)
{
    const char *cmd = u->cmd;
    r->common.jobs_allowed = 1;
    for (int i = 1; i < argc; i++) {
        if (cli_usage_check(u, argv[i]))
            return EXIT_USAGE;
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
        if (strcmp(argv[i], "--help") == 0)
            return cli_usage_help(u) - 1;
        if (argv[i][0] == '-' && argv[i][1])
            return cli_usage_unparsed(u, argv[i]);
        if (r->model_dir)
            return cli_usage_error(cmd, "one MODEL only ('%s' and '%s')", r->model_dir, argv[i]);
        r->model_dir = argv[i];
    }
    if (!r->model_dir)
        return cli_usage_error(cmd, "missing MODEL (a Hugging Face model folder)");
    cli_set_model_name(&r->common, r->model_dir);
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

ag_input_kind cli_input_kind(const cli_input *in)
{
    if (in->pixels || in->image || in->image_file)
        return AG_INPUT_PIXELS;
    return in->features || in->audio || in->audio_file ? AG_INPUT_FEATURES : AG_INPUT_TOKENS;
}

int cli_refuse_seq2seq(const char *dir, const char *cmd, const char *why)
{
    if (!ag_model_dir_is_seq2seq(dir))
        return 0;
    ag_seq2seq *s = NULL;
    ag_error err = {0};
    if (ag_seq2seq_load(dir, &s, &err) != AG_OK) /* its own fault first (a missing tensor...) */
        return cli_fail_error(&err);
    int rc = cli_fail("%s: %s is an encoder-decoder model: %s %s", dir,
                      ag_model_type(ag_seq2seq_stack(s, AG_STACK_ENCODER)), cmd, why);
    ag_seq2seq_free(s);
    return rc;
}

/* The decoder's input ids of r's --target (tokenized, shifted right) or
 * --target-tokens (verbatim), checked against the decoder's vocabulary. */
static int target_ids(cli_model_run *r, const char *cmd)
{
    const cli_input *in = &r->input;
    ag_error err = {0};
    int status = AG_OK;
    if (in->target_tokens) {
        cli_seq s = {0};
        if (cli_parse_tokens(cmd, in->target_tokens, &s))
            return 2;
        r->target = s.ids;
        r->n_target = s.n;
    } else {
        ag_tokenizer *tok = NULL;
        status = ag_tokenizer_load(r->model_dir, &tok, &err);
        if (status == AG_ENOTFOUND)
            return cli_fail("%s: --target TEXT is tokenized by the folder's tokenizer and it has no "
                            "tokenizer files (tokenizer.json, vocab.json + merges.txt, or "
                            "vocab.txt): give the decoder's ids with --target-tokens IDS",
                            r->model_dir);
        if (status == AG_OK)
            status = ag_run_target_ids(r->model, tok, in->target, strlen(in->target), &r->target,
                                       &r->n_target, &err);
        ag_tokenizer_free(tok);
    }
    if (status == AG_OK)
        status = ag_model_check_ids(ag_seq2seq_stack(r->pair, AG_STACK_DECODER), r->target,
                                    r->n_target, &err);
    return status == AG_OK ? 0 : cli_fail("%s: --target: %s", r->model_dir, err.message);
}

/* A target on the model r->model of one stack: taken for Whisper's decoder
 * (r->model, its encoder as ag_model_load reads it, is replaced by the pair
 * of ag_seq2seq_load): --target-tokens verbatim, or --target TEXT through
 * the folder's tokenizer, whose saved template holds the prompt prefix
 * (<|startoftranscript|>, language, task, <|notimestamps|>: what
 * set_prefix_tokens wrote before save_pretrained; ag_run_target_ids). */
static int whisper_pair(cli_model_run *r)
{
    const cli_input *in = &r->input;
    ag_error err = {0};
    int whisper = strcmp(ag_model_type(r->model), "whisper") == 0;
    ag_model_free(r->model);
    r->model = NULL;
    if (!whisper)
        return cli_fail("%s: --target needs an encoder-decoder model: a t5, bart or whisper "
                        "folder", r->model_dir);
    if (ag_seq2seq_load(r->model_dir, &r->pair, &err) != AG_OK)
        return cli_fail("%s: %s runs Whisper's decoder: %s", r->model_dir,
                        in->target_tokens ? "--target-tokens"
                        : in->target      ? "--target"
                                          : "--target-file", err.message);
    return 0;
}

/* The model of r: an encoder–decoder folder's pair (r->model its encoder)
 * with its target, or one stack; a target and a folder that do not go
 * together are refused in one line. */
static int load_model(cli_model_run *r, const char *cmd)
{
    ag_error err = {0};
    const cli_input *in = &r->input;
    int target = !!in->target + !!in->target_tokens + !!in->target_file;
    if (target > 1)
        return cli_usage_error(cmd, "give one of --target, --target-tokens and --target-file");
    if (in->target_file && !in->text_file && !in->tokens_file && !in->audio_file)
        return cli_usage_error(cmd, "--target-file pairs with --text-file, --tokens-file or "
                               "--audio-file (one source: --target)");
    if (!ag_model_dir_is_seq2seq(r->model_dir)) {
        if (ag_model_load_tower(r->model_dir, cli_input_kind(in), &r->model, &err) != AG_OK)
            return cli_fail_error(&err);
        if (!target)
            return 0; /* a whisper folder without a target: its encoder alone */
        if (whisper_pair(r))
            return 1;
    } else if (!in->takes_target || !target)
        return cli_refuse_seq2seq(r->model_dir, cmd, in->takes_target
                                  ? "needs --target T or --target-tokens IDS (the decoder's input)"
                                  : "needs --target (not yet supported)");
    else if (ag_seq2seq_load(r->model_dir, &r->pair, &err) != AG_OK)
        return cli_fail_error(&err);
    r->model = (ag_model *)ag_seq2seq_stack(r->pair, AG_STACK_ENCODER);
    return in->target_file ? 0 : target_ids(r, cmd); /* a file's: with the sources */
}

/* The decoder's ids of one target text (tokenized, shifted right). */
static int line_target(const cli_model_run *r, const ag_tokenizer *tok, const char *text,
                       size_t n, cli_seq *s, ag_error *err)
{
    int status = ag_run_target_ids(r->model, tok, text, n, &s->target, &s->n_target, err);
    if (status == AG_OK)
        status = ag_model_check_ids(ag_seq2seq_stack(r->pair, AG_STACK_DECODER), s->target,
                                    s->n_target, err);
    return status;
}

/* Whether line [start, start + n) of a file holds only blanks. */
static int blank_line(const char *line, size_t n)
{
    size_t b = 0;
    while (b < n && (line[b] == ' ' || line[b] == '\t' || line[b] == '\r'))
        b++;
    return b == n;
}

/* The source file --target-file pairs with: "--text-file F" etc. */
static const char *source_option(const cli_input *in)
{
    return in->text_file ? "--text-file" : in->tokens_file ? "--tokens-file" : "--audio-file";
}

/* --target-file: line k of the file is the target of the source on line k
 * (the sources' "text"; an --audio-file list's line k the same way); a
 * source without its line, a blank one, or a target line past the last
 * source is refused naming both files. */
static int target_file(cli_model_run *r)
{
    const cli_input *in = &r->input;
    const char *name = in->target_file;
    const char *src = in->text_file ? in->text_file : in->tokens_file ? in->tokens_file
                                                                      : in->audio_file;
    char *buf = NULL;
    size_t len = 0, pos = 0, start = 0, n = 0, k = 0;
    long line = 0;
    ag_tokenizer *tok = NULL;
    ag_error err = {0};
    if (cli_read_text_file(&name, CLI_TEXT_FILE_MAX, &buf, &len) != 0)
        return 1;
    int status = ag_tokenizer_load(r->model_dir, &tok, &err);
    while (status == AG_OK && cli_next_line(buf, len, &pos, &start, &n)) {
        long at = line++;
        int blank = blank_line(buf + start, n);
        if (k == r->nseq && !blank)
            status = ag_error_set(&err, AG_EINVAL, "line %ld has no source: the last of %s %s "
                                  "is on line %ld", at + 1, source_option(in), src,
                                  r->seqs[r->nseq - 1].line + 1);
        else if (k < r->nseq && at == r->seqs[k].line)
            status = blank ? ag_error_set(&err, AG_EINVAL, "line %ld is blank: no target", at + 1)
                           : line_target(r, tok, buf + start, n, &r->seqs[k++], &err);
    }
    if (status == AG_OK && k < r->nseq)
        status = ag_error_set(&err, AG_EINVAL, "%ld lines: no target for source line %ld of "
                              "%s %s", line, r->seqs[k].line + 1, source_option(in), src);
    ag_tokenizer_free(tok);
    free(buf);
    return status == AG_OK ? 0 : cli_fail("%s: --target-file %s: %s", r->model_dir, name, err.message);
}

int cli_model_run_prepare(cli_model_run *r, const char *cmd, int extra_layers)
{
    int rc = load_model(r, cmd);
    if (rc)
        return rc;
    const ag_model_config *g = ag_model_get_config(r->model);
    r->nlayer_sel = g->n_layer + extra_layers;
    rc = cli_selection(cmd, r->input.layers, r->nlayer_sel, "layers", r->model_dir,
                           &r->layers);
    if (rc == 0)
        rc = cli_selection(cmd, r->input.heads, g->n_head, "heads", r->model_dir, &r->heads);
    if (rc == 0)
        rc = cli_model_inputs(r, cmd);
    if (rc == 0)
        rc = check_corpus_ids(r);
    if (rc == 0 && r->input.target_file)
        rc = target_file(r);
    if (rc == 0 && r->target && r->nseq != 1)
        rc = cli_fail("%s: --target pairs with one source (--text or --tokens), the input holds "
                      "%zu", r->model_dir, r->nseq);
    if (rc == 0 && r->single && r->nseq != 1)
        rc = cli_fail("%s: %s takes one sequence, the file has %zu", r->input.tokens_file, r->single, r->nseq);
    if (rc == 0)
        rc = cli_workers_new(&r->common, &r->workers);
    if (rc == 0)
        rc = cli_model_run_options(r, &r->opt);
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

/* One text at a time through the library's corpus run: a batch of one runs
 * its work on this thread, then its turn, so fn's outputs come in input
 * order as it writes them. */
typedef struct {
    cli_model_run *r;
    cli_text_fn fn;
    void *user;
    cli_progress progress;
    int rc; /* the status a text or its turn stopped the run with */
} each_run;

static int each_work(size_t k, int worker, ag_run_result *res, void *user)
{
    (void)worker;
    each_run *x = user;
    return res->status = x->fn(x->r, &x->r->seqs[k], x->user); /* printed its failure */
}

static int each_turn(size_t k, ag_run_result *res, void *user)
{
    (void)k;
    each_run *x = user;
    int rc = res->skipped ? 0 : res->status;
    if (rc == 0 && !res->skipped && x->r->sink)
        rc = cli_sink_text(x->r->sink);
    if (rc == 0)
        cli_progress_step(&x->progress, res->skipped);
    return x->rc = rc;
}

int cli_model_run_each(cli_model_run *r, const char *cmd, cli_text_fn fn, void *user)
{
    each_run x = {.r = r, .fn = fn, .user = user};
    uint64_t *cost = malloc((r->nseq + 1) * sizeof *cost);
    ag_run_options *o = NULL;
    int rc = cost ? cli_run_options(&r->common, r->input.precision, &o) : cli_fail("out of memory");
    for (size_t k = 0; rc == 0 && k < r->nseq; k++)
        cost[k] = r->seqs[k].skip ? 0 : 1;
    if (rc == 0)
        ag_run_options_set_dist(o, NULL); /* the texts write their own outputs here */
    cli_progress_start(&x.progress, cmd, r->input.progress, r->nseq);
    ag_run_map m = {.size = sizeof m, .count = r->nseq, .cost = cost, .batch = 1,
                    .work = each_work, .turn = each_turn, .user = &x};
    ag_error err = {0};
    if (rc == 0 && ag_run_map_run(r->workers.workers, &m, o, &err) != 0)
        rc = x.rc ? x.rc : cli_fail_error(&err);
    cli_progress_end(&x.progress);
    ag_run_options_free(o);
    free(cost);
    return rc;
}

/* ---- texts at once: the library's corpus run ------------------------------ */

typedef struct {
    cli_model_run *r;
    cli_text_work work;
    cli_text_turn turn;
    void *user;
    cli_progress progress;
    int rc; /* the status a turn stopped the run with */
} texts_run;

/* A text's work, its messages held in its result's notes. */
static int text_work(size_t k, int worker, ag_run_result *res, void *user)
{
    (void)worker;
    texts_run *x = user;
    cli_held held = {0};
    cli_held *was = cli_hold(&held);
    res->status = x->work(x->r, &x->r->seqs[k], res, x->user);
    cli_hold(was);
    res->notes = held.text;
    res->notes_len = held.len;
    return res->status;
}

/* Text k's turn: its messages, the command's turn, its records to the sink. */
static int text_turn(size_t k, ag_run_result *res, void *user)
{
    texts_run *x = user;
    cli_model_run *r = x->r;
    int rc = 0;
    if (!res->skipped) {
        cli_held held = {res->notes, res->notes_len};
        cli_held_print(&held);
        res->notes = NULL;
        res->notes_len = 0;
        rc = res->status;
        if (rc == 0 && x->turn)
            rc = x->turn(r, &r->seqs[k], res, x->user);
        if (rc == 0 && r->sink)
            rc = cli_records_move(&r->sink->recs, &res->recs) != 0
                     ? cli_fail("out of memory for records")
                     : cli_sink_text(r->sink);
    }
    if (rc == 0)
        cli_progress_step(&x->progress, res->skipped);
    return x->rc = rc;
}

int cli_model_run_texts(cli_model_run *r, const char *cmd, cli_text_work work,
                        cli_text_turn turn, void *user)
{
    texts_run x = {.r = r, .work = work, .turn = turn, .user = user};
    uint64_t *cost = malloc((r->nseq + 1) * sizeof *cost);
    ag_run_options *o = NULL;
    int rc = cost ? cli_run_options(&r->common, r->input.precision, &o) : cli_fail("out of memory");
    for (size_t k = 0; rc == 0 && k < r->nseq; k++)
        cost[k] = r->seqs[k].skip ? 0 : ag_run_input_cost(r->seqs[k].n);
    /* the root takes the turns: only its progress is drawn */
    int progress = rc == 0 && (!r->common.dist || r->common.dist->rank == 0);
    if (progress)
        cli_progress_start(&x.progress, cmd, r->input.progress, r->nseq);
    ag_run_map m = {.size = sizeof m, .count = r->nseq, .cost = cost, .work = text_work,
                    .turn = text_turn, .user = &x};
    ag_error err = {0};
    if (rc == 0 && ag_run_map_run(r->workers.workers, &m, o, &err) != 0)
        rc = x.rc ? x.rc : cli_fail_error(&err);
    if (progress)
        cli_progress_end(&x.progress);
    ag_run_options_free(o);
    free(cost);
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
