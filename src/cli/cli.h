/* cli.h — shared pieces of the attngeom command line. The CLI is built only on
 * the public API (attngeom.h); it owns all printing and exit codes:
 * 0 success, 1 failure (one line on stderr), 2 usage error, 3 failed --expect. */
#ifndef AG_CLI_H
#define AG_CLI_H

#include <stdio.h>

#include <jansson.h>

#include "attngeom.h"

enum { EXIT_USAGE = 2, EXIT_EXPECT = 3 };

/* --aggregate, --by KEYS, --ci LEVEL (aggregate.c). */
typedef struct {
    int allowed;      /* the command takes --aggregate */
    int on;           /* --aggregate given */
    const char *by;   /* --by KEYS; NULL: the default grouping */
    int ci_given;
    double ci;        /* --ci LEVEL, in (0, 1); default 0.95 */
} cli_agg;

/* Options every record-printing subcommand takes. */
typedef struct {
    ag_format format;
    const char *out_path;     /* -o FILE, or NULL for stdout */
    ag_metric_set metrics;
    const char *expect_path;  /* --expect GOLDEN.json */
    double rtol, atol;
    unsigned families;        /* what the command computes (AG_FAMILIES_*) */
    /* Options of the costly families (docs/metrics.md, families E, F), validated here. */
    double epsilon;           /* --epsilon, > 0 (default 1e-3) */
    int trials;               /* --trials, >= 1 (default 8) */
    unsigned long seed;       /* --seed (default 1) */
    double edge_threshold;    /* --edge-threshold in [0, 1]; < 0: 1/n */
    cli_agg agg;              /* --aggregate (analyze, residual, rollout, weights, matrix) */
} cli_common;

/* Defaults: table, stdout; selected: the default families (A, B, C) among
 * `families`, or all of `families` when it has none of them (weights). */
void cli_common_init(cli_common *c, unsigned families);

/* Try to consume a common option at argv[*i] (advancing *i past its value).
 * Returns 1 if consumed, 0 if not a common option, -1 after printing a usage
 * error. `cmd` names the subcommand in messages. */
int cli_common_option(cli_common *c, const char *cmd, int argc, char **argv,
                      int *i);

/* The value of option argv[*i] ("--opt VALUE" or "--opt=VALUE"), advancing
 * *i; NULL (after printing a usage error) when it is missing. `name` is the
 * option without its value. */
const char *cli_option_value(const char *cmd, const char *name, int argc,
                             char **argv, int *i);
/* 1 if argv[i] is option `name` ("--x" or "--x=..."). */
int cli_is_option(const char *arg, const char *name);

/* After parsing: usage errors of option combinations (--by or --ci
 * without --aggregate, --aggregate with --expect). 0 or 2 after printing. */
int cli_common_check(const cli_common *c, const char *cmd);

/* Set OpenBLAS's thread count (AG_BLAS_THREADS, default 1) and, under an
 * address-space limit, map its work buffer before a command that runs BLAS
 * (runs_blas) so that a shortage is an error, not a hang (blas.c). Returns 0
 * or the exit status after printing. Call once, first thing in main. */
int cli_blas_setup(int runs_blas);

/* Print "attngeom: MESSAGE" (one line) and return 1. */
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print "attngeom CMD: MESSAGE (see attngeom CMD --help)" and return 2. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- outputs (outputs.c; the rules are docs/cli.md's "Outputs") ------- */

/* An option and its path, for messages ("-o", "a.npy"); path may be NULL
 * (option not given). "-" is standard output. */
typedef struct {
    const char *option, *path;
} cli_path;

/* Before anything runs: refuse (one line, returns 1) an output that is a
 * directory, a read-only file, a missing folder's file, the same file as an
 * input (an existing file, or a model file of an input folder) or as
 * another output (or the same descriptor). At most 8 outputs. */
int cli_paths_check(const cli_path *outs, size_t nout, const cli_path *ins, size_t nin);

/* The outputs of one command, committed together. */
typedef struct cli_staged cli_staged;
typedef struct {
    cli_staged *items;
    size_t count;
} cli_outputs;

/* Stage an output: a file is written to a temporary beside it now; a
 * device, FIFO or descriptor is opened now and written at commit (bytes
 * are copied; the array must live until then). Returns 0 or 1 after
 * printing; on failure call cli_outputs_abort (or cli_outputs_finish). */
int cli_outputs_add(cli_outputs *tx, const char *path, const char *buf, size_t len);
int cli_outputs_add_npy(cli_outputs *tx, const char *path, const ag_array *a);
/* Write the in-place outputs, then rename every temporary into place; on
 * the first failure nothing more is written and the temporaries go.
 * Returns 0 or 1; tx is emptied either way. */
int cli_outputs_commit(cli_outputs *tx);
/* Remove the temporaries and close what was opened: no target touched. */
void cli_outputs_abort(cli_outputs *tx);
/* Commit when rc is 0, abort otherwise; returns the command's status. */
int cli_outputs_finish(cli_outputs *tx, int rc);

/* Format the records, run --expect, then commit them (to -o or stdout)
 * together with what tx holds already (NULL: nothing). A malformed golden
 * file commits nothing; a mismatch (3) still writes. Returns the exit
 * status; tx is emptied. */
int cli_emit_outputs(const cli_common *c, const ag_record *recs, size_t count,
                     const ag_output_meta *meta, cli_outputs *tx);

/* Print one line on stderr as it is formatted, with control characters and
 * bytes that are not UTF-8 escaped (ag_text_escape): what every message of
 * the CLI goes through. */
void cli_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A JSON string of s with its non-UTF-8 bytes escaped; NULL when out of
 * memory. */
json_t *cli_json_text(const char *s);
/* Write one text cell of the human and delimited formats: s escaped with
 * AG_TEXT_CONTROL, then quoted for fmt (CSV "" quoting, Markdown \|, LaTeX
 * \verb). Returns 0 or -1 on a write error or when out of memory. */
int cli_put_cell(FILE *fp, ag_format fmt, const char *s);

/* cli_emit_outputs without staged outputs. */
int cli_emit(const cli_common *c, const ag_record *recs, size_t count,
             const ag_output_meta *meta);

/* Write buf to path by the rules above or, when path is NULL, to stdout.
 * Returns 0 or 1 after printing the error. */
int cli_write_output(const char *path, const char *buf, size_t len);

/* ---- aggregates (aggregate.c) ------------------------------------------ */

/* Consume --by, --ci and, when g->allowed, --aggregate. 1 consumed, 0 not
 * ours, -1 usage error printed. */
int cli_agg_option(cli_agg *g, const char *cmd, int argc, char **argv, int *i);
/* A new aggregate grouped as g says (pooled: no --by means one group, for
 * compare). Returns 0 or the exit status after printing. */
int cli_agg_new(const cli_agg *g, const char *cmd, int pooled, int keep_values,
                ag_aggregate **out);
/* Format an aggregate's (or compare's) table in c's format and stage it for
 * c's -o (or stdout) into tx, then commit tx. Returns the exit status. */
int cli_emit_table(const cli_common *c, const ag_table *t, const ag_output_meta *meta,
                   cli_outputs *tx);
/* The run's records aggregated (--aggregate) into a table for c's format.
 * 0 or 1 after printing. */
int cli_aggregate_records(const cli_common *c, const ag_record *recs, size_t count,
                          ag_table *out);

/* Usage error (returns 2) when --expect was given to a command that prints no
 * records (attention, tokenize, info); 0 otherwise. */
int cli_reject_expect(const cli_common *c, const char *cmd);

/* Compare records with a golden JSON output (--expect). Prints each mismatch
 * on stderr. Returns 0 (all match), 3 (mismatch) or 1 (golden unreadable). */
int cli_expect(const cli_common *c, const ag_record *recs, size_t count);

/* Parse a non-negative number; 0 on success. */
int cli_parse_double(const char *s, double *out);

/* ---- model inputs (analyze, attention, residual, rollout) -------------- */

typedef struct {
    const char *text;       /* --text S */
    const char *text_file;  /* --text-file F */
    const char *tokens;     /* --tokens 1,2,3 */
    const char *tokens_file; /* --tokens-file F */
    const char *layers;     /* --layers 0,2-3 */
    const char *heads;      /* --heads 1,4-5 */
    ag_precision precision; /* --precision f32|f64 */
} cli_input;

/* One tokenized text. `line` is its 0-based line in --text-file or
 * --tokens-file, else -1. */
typedef struct {
    int32_t *ids;
    size_t n;
    long line;
} cli_seq;

/* Consume --text, --text-file, --tokens, --tokens-file, --precision (and --layers/--heads
 * when `selections` is set). 1 consumed, 0 not ours, -1 usage error printed. */
int cli_input_option(cli_input *in, const char *cmd, int selections, int argc,
                     char **argv, int *i);
/* The sequences to run: tokenized with the model folder's tokenizer, or
 * --tokens / --tokens-file as given. Returns 0, or an exit status after
 * printing. */
int cli_input_sequences(const cli_input *in, const char *cmd,
                        const char *model_dir, cli_seq **seqs, size_t *count);
void cli_seqs_free(cli_seq *seqs, size_t count);

/* Parse a selection "0,2-5" over 0..limit-1 into mask[limit] (all selected
 * when spec is NULL). Returns 0, 2 after a usage error (syntax), 1 after an
 * out-of-range error. `what` is "layers" or "heads". */
int cli_selection(const char *cmd, const char *spec, int limit, const char *what,
                  const char *source, unsigned char *mask);

/* A command that runs a model folder: options, model, inputs, selections. */
typedef struct cli_model_run {
    cli_common common;
    cli_input input;
    const char *model_dir;
    ag_model *model;
    cli_seq *seqs;
    size_t nseq;
    unsigned char *layer_on; /* (nlayer_sel) --layers */
    unsigned char *head_on;  /* (n_head) --heads */
    int nlayer_sel;          /* indices --layers ranges over: n_layer + extra */
    cli_path outs[2];        /* checked by prepare when set (default: -o) */
    const char *single;      /* set: what takes one sequence only (a --tokens-file of one line) */
} cli_model_run;

/* A command's own options: 1 consumed, 0 not its, -1 usage error printed. */
typedef int (*cli_extra_option)(cli_model_run *r, int argc, char **argv, int *i);

/* Parse MODEL, the common and input options, then `extra` ones. Returns 0,
 * an exit status, or -1 after printing --help. Without allow_heads,
 * --heads is a usage error (per-layer commands). */
int cli_model_run_parse(cli_model_run *r, const char *cmd, const char *help, int argc,
                        char **argv, cli_extra_option extra, int allow_heads);
/* Load the model, the selections (--layers over n_layer + extra_layers
 * indices) and the tokenized inputs. Returns 0 or an exit status. */
int cli_model_run_prepare(cli_model_run *r, const char *cmd, int extra_layers);
void cli_model_run_free(cli_model_run *r);
/* Print a forward-pass error for sequence s (naming the line of
 * --text-file or --tokens-file) and return 1. */
int cli_model_run_fail(const cli_model_run *r, const cli_seq *s, const ag_error *err);

/* A growable array of records. */
typedef struct {
    ag_record *items;
    size_t count, cap;
} cli_records;
/* Append a zeroed record; NULL when out of memory. */
ag_record *cli_records_add(cli_records *r);
void cli_records_free(cli_records *r);

/* Print a library error as one line and return 1. */
int cli_fail_error(const ag_error *err);

/* ---- named tensors (layer, weights) ------------------------------------ */

typedef struct {
    const char *x, *weights, *qkv, *q, *k, *v, *o, *qkv_bias, *q_bias, *k_bias,
        *v_bias, *save;
    int heads, causal, linear;
    double scale;
    ag_precision precision;
} cli_tensor_opts;

typedef struct {
    ag_array x, q, k, v, o, bq, bk, bv;
} cli_tensors;

/* Consume one of the tensor options (--x, --weights, --qkv, --q, --k, --v,
 * --o, biases, --heads H, --scale, --causal, --linear, --save-attention).
 * 1 consumed, 0 not ours, -1 usage error printed. */
int cli_tensor_option(cli_tensor_opts *o, const char *cmd, int argc, char **argv, int *i);
/* Check the combination of options; returns 0 or 2 after a usage error. */
int cli_tensor_check_usage(const cli_tensor_opts *o, const char *cmd, int need_x);
/* Read X (when need_x) and the named tensors as [in, out] doubles, and check
 * their shapes (grouped-query K/V widths are allowed without X). Returns 0
 * or 1 after printing the error. */
int cli_tensors_load(const cli_tensor_opts *o, cli_tensors *t, int need_x);
void cli_tensors_free(cli_tensors *t);

/* Subcommands. */
int cmd_matrix(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_attention(int argc, char **argv);
int cmd_analyze(int argc, char **argv);
int cmd_layer(int argc, char **argv);
int cmd_weights(int argc, char **argv);
int cmd_residual(int argc, char **argv);
int cmd_rollout(int argc, char **argv);
int cmd_similarity(int argc, char **argv);
int cmd_aggregate(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_plot(int argc, char **argv);

#endif
