/* cmd_layers.c — the commands that measure across layers (docs/metrics.md, family G):
 * `residual` (families A and C of every hidden state h_0 … h_L) and `rollout`
 * (attention rollout R_l, families A, B, C; -o writes the R_l as .npy).
 * Both stream one forward pass per text; rollout keeps only R (n×n) and the
 * layer in hand (-o writes each selected R_l as it comes). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* ---- residual ----------------------------------------------------------- */

static const char residual_help[] =
    "usage: attngeom residual MODEL (--text S | --text-file F | --tokens 1,2,3 | --tokens-file F) [options]\n"
    "\n"
    "Run the forward pass and print the metrics of every hidden state of the\n"
    "residual stream (families spectrum and geometry of the [n, d] matrix): one\n"
    "record per hidden state l = 0 ... L (\"head\": -1) in Hugging Face's\n"
    "output_hidden_states order: 0 the embeddings, l the output of block l-1,\n"
    "L (GPT-2, LLaMA) after the final norm. res_ratio falling with depth is rank\n"
    "collapse; mean_cosine and pc1_share rising is anisotropy (docs/layers.md).\n"
    "With --text-file or --tokens-file, one set of records per text (\"text\" =\n"
    "0-based line).\n"
    "\n"
    "options:\n"
    "  --layers 0,2-3     hidden states to report, 0 ... L (default all)\n"
    "  --precision P      f32 (default: float32 products, as Hugging Face) or f64\n"
    "  --metrics LIST     keys and families spectrum, geometry, all\n"
    "                     (default spectrum,geometry)\n"
    "  --format F         table (default), json, jsonl, csv, tsv, md, latex\n"
    "  -o FILE            write the records there instead of standard output\n"
    "  --expect GOLDEN    compare with a saved --format json output; exit 3 on a\n"
    "                     mismatch (--rtol R, default 1e-9; --atol A, default 1e-12)\n"
    "  --aggregate        print per layer the mean, std, Student-t\n"
    "                     interval and count of every metric instead of the records\n"
    "                     (as `attngeom aggregate` does; --by KEYS, --ci LEVEL)\n"
    CLI_CORPUS_HELP
    CLI_MEDIA_HELP
    CLI_JOBS_HELP
    "  --help             this text\n";

typedef struct {
    const cli_model_run *run;
    long text;
    ag_record_list **out;
    ag_error err; /* the metrics' failure */
} residual_ctx;

/* The records of hidden state l, measured as the pass hands it over: no
 * (L+1, n, d) array is held. */
static int residual_state(int l, size_t n, size_t d, const double *h, void *user)
{
    residual_ctx *c = user;
    if (!c->run->layer_on[l])
        return 0;
    ag_record *rec = cli_records_add(c->out);
    if (!rec)
        return ag_error_set(&c->err, AG_ENOMEM, "out of memory for records");
    ag_record_init(rec, l, -1, n, d);
    ag_record_set_text(rec, c->text);
    ag_error e = {0};
    int status = ag_residual_metrics(h, n, d, c->run->common.metrics, rec, &e);
    if (status != AG_OK)
        ag_error_set(&c->err, status, "hidden state %d: %s", l, e.message);
    return status;
}

static int residual_sequence(cli_model_run *r, const cli_seq *s, cli_text_out *out,
                             void *user)
{
    (void)user;
    residual_ctx c = {.run = r, .text = s->line, .out = &out->recs};
    ag_forward_options opt = cli_forward_options(r);
    opt.hidden_fn = residual_state;
    opt.hidden_user = &c;
    ag_error err = {0};
    if (cli_forward(r, s, &opt, NULL, NULL, NULL, &err) == AG_OK)
        return 0;
    return cli_model_run_fail(r, s, c.err.status ? &c.err : &err);
}

int cmd_residual(int argc, char **argv)
{
    cli_model_run r = {0};
    if (cli_common_init(&r.common, AG_FAMILIES_RESIDUAL))
        return 1;
    r.common.agg.allowed = 1;
    int rc = cli_model_run_parse(&r, "residual", residual_help, argc, argv, NULL, 0);
    if (rc)
        return rc < 0 ? 0 : rc;
    rc = cli_model_run_prepare(&r, "residual", 1);
    if (rc == 0)
        rc = cli_model_run_records(&r, "residual", residual_sequence);
    return cli_model_run_finish(&r, rc);
}

/* ---- rollout ------------------------------------------------------------ */

static const char rollout_help[] =
    "usage: attngeom rollout MODEL (--text S | --text-file F | --tokens 1,2,3 | --tokens-file F)\n"
    "                             [-o R.npy] [options]\n"
    "\n"
    "Attention rollout (Abnar & Zuidema 2020): with A_l the mean over the query\n"
    "heads of layer l and B_l = A_l/2 + I/2, R_0 = B_0 and R_l = B_l R_(l-1).\n"
    "Prints the metrics of every R_l (families spectrum, attention, geometry):\n"
    "one record per layer (\"head\": -1), per text with --text-file or\n"
    "--tokens-file (\"text\" = 0-based line). R_l[i][j]: how much of token j's input reaches position i\n"
    "after layer l (docs/layers.md).\n"
    "\n"
    "Here -o is not the records' destination: -o R.npy writes the rollout\n"
    "matrices [L, n, n] as <f8 .npy (the selected layers, all by default), as\n"
    "`attention -o` does, and the records still go to standard output. -o takes\n"
    "one text (--text, --tokens, or a --tokens-file of one line), not --text-file.\n"
    "\n"
    "options:\n"
    "  -o R.npy           also write R_l of the selected layers, [count, n, n]\n"
    "  --layers 0,2-3     layers to report (default all; every layer up to the\n"
    "                     last selected one is still composed)\n"
    "  --precision P      f32 (default: float32 products, as Hugging Face) or f64\n"
    "  --metrics LIST     keys and families (default spectrum,attention,geometry)\n"
    "  --format F         table (default), json, jsonl, csv, tsv, md, latex\n"
    "  --expect GOLDEN    compare with a saved --format json output; exit 3 on a\n"
    "                     mismatch (--rtol R, default 1e-9; --atol A, default 1e-12)\n"
    "  --aggregate        print per layer the mean, std, Student-t\n"
    "                     interval and count of every metric instead of the records\n"
    "                     (as `attngeom aggregate` does; --by KEYS, --ci LEVEL)\n"
    CLI_CORPUS_HELP
    CLI_MEDIA_HELP
    CLI_JOBS_HELP
    "  --help             this text\n";

/* Returned by the callback after the last selected layer: stops the pass. */
#define ROLLOUT_DONE 1000

typedef struct {
    const cli_model_run *run;
    long text;
    int last;            /* last selected layer */
    double *R;           /* (n, n) */
    ag_npy_writer *save; /* -o: R_l of the selected layers as they come, or NULL */
    int save_failed;     /* err is that write's */
    ag_record_list **out;
    ag_error err;
} rollout_ctx;

static int rollout_layer(const ag_layer_view *v, void *user)
{
    rollout_ctx *c = user;
    ag_error e = {0};
    int status = ag_rollout_step(c->R, v->attn, v->n_head, v->n, v->layer == 0, &e);
    if (status != AG_OK)
        return ag_error_set(&c->err, status, "layer %d: %s", v->layer, e.message);
    if (!c->run->layer_on[v->layer])
        return 0;
    ag_record *rec = cli_records_add(c->out);
    if (!rec)
        return ag_error_set(&c->err, AG_ENOMEM, "out of memory for records");
    ag_record_init(rec, v->layer, -1, v->n, v->n);
    ag_record_set_text(rec, c->text);
    status = cli_matrix_metrics(&c->run->workers, &c->run->common, c->R, v->n, v->n, rec, &e);
    if (status != AG_OK)
        return ag_error_set(&c->err, status, "rollout R_%d: %s", v->layer, e.message);
    if (c->save && ag_npy_writer_write(c->save, c->R, v->n * v->n, &c->err) != AG_OK) {
        c->save_failed = 1;
        return c->err.status;
    }
    return v->layer == c->last ? ROLLOUT_DONE : 0;
}

typedef struct {
    ag_npy_writer *save; /* -o R.npy, or NULL */
} rollout_run;

static int rollout_sequence(cli_model_run *r, const cli_seq *s, cli_text_out *text, void *user)
{
    ag_npy_writer *save = ((rollout_run *)user)->save;
    ag_record_list **out = &text->recs;
    size_t n = s->n;
    if (n > (size_t)-1 / sizeof(double) / n)
        return cli_fail("%s: %zu tokens: rollout matrix too large", r->model_dir, n);
    rollout_ctx c = {.run = r, .text = s->line, .save = save, .out = out};
    c.last = ag_selection_last(r->layers);
    c.R = malloc(n * n * sizeof *c.R);
    if (!c.R)
        return cli_fail("%s: out of memory for the %zux%zu rollout", r->model_dir, n, n);
    ag_error err = {0};
    int rc = 0;
    ag_forward_options opt = cli_forward_options(r);
    int status = cli_forward(r, s, &opt, rollout_layer, &c, NULL, &err);
    if (status != AG_OK && status != ROLLOUT_DONE)
        rc = c.save_failed ? cli_fail_error(&c.err)
                           : cli_model_run_fail(r, s, c.err.status ? &c.err : &err);
    free(c.R);
    return rc;
}

int cmd_rollout(int argc, char **argv)
{
    cli_model_run r = {0};
    if (cli_common_init(&r.common, AG_FAMILIES_ROLLOUT))
        return 1;
    r.common.agg.allowed = 1;
    int rc = cli_model_run_parse(&r, "rollout", rollout_help, argc, argv, NULL, 0);
    if (rc)
        return rc < 0 ? 0 : rc;
    /* -o is the rollout array; the records go to standard output. */
    const char *npy_path = r.common.out_path;
    r.common.out_path = NULL;
    if (npy_path && (r.input.text_file || r.input.image_file || r.input.audio_file))
        return cli_usage_error("rollout", "-o R.npy takes one input, not %s",
                               r.input.text_file ? "--text-file" : r.input.image_file ? "--image-file"
                                                                  : "--audio-file");
    if (npy_path && r.input.tokens_file)
        r.single = "rollout -o R.npy";
    r.outs[0] = (cli_path){"-o", npy_path};
    r.outs[1] = (cli_path){"the records", "-"};
    rc = cli_model_run_prepare(&r, "rollout", 0);
    /* -o R.npy is written as the layers come (a skipped text writes no R),
     * and committed with the records: both, or neither */
    cli_outputs tx = {0};
    ag_npy_writer *save = NULL;
    if (rc == 0 && npy_path && !r.seqs[0].skip) {
        size_t shape[3] = {ag_selection_count(r.layers), r.seqs[0].n, r.seqs[0].n};
        rc = cli_outputs_npy(&tx, npy_path, 3, shape, &save);
    }
    /* -o R.npy: one text, whose records are kept to be written with R */
    cli_sink sink = {0};
    cli_settings_in in = {.model_dir = r.model_dir, .run = &r};
    if (rc == 0)
        rc = cli_sink_open(&sink, &r.common, "rollout", r.model_dir, &in, !npy_path);
    r.sink = &sink;
    rollout_run run = {save};
    if (rc == 0)
        rc = cli_model_run_texts(&r, "rollout", rollout_sequence, NULL, &run);
    rc = cli_sink_close(&sink, rc, &tx);
    return cli_model_run_finish(&r, rc);
}
