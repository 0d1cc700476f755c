/* Internal prefix: cli_ (module src/cli/). */
/* cli.h — shared pieces of the attngeom command line. The CLI is built only on
 * the public API (attngeom.h); it owns all printing and exit codes:
 * 0 success, 1 failure (one line on stderr), 2 usage error, 3 failed --expect.
 *
 * Each file calls only files before it in this list, so that no call cycle
 * joins two of them (issue 25):
 *   progress.c text.c messages.c options.c args.c outputs.c blas.c input.c
 *   run_options.c run_paths.c tensors.c settings.c media.c workers.c
 *   records.c expect.c agg.c common.c emit.c sink.c model_run.c cmd_*.c command.c main.c
 */
#ifndef AG_CLI_H
#define AG_CLI_H

#include <stdio.h>

#include <jansson.h>

#include "attngeom.h"
#include "driver.h"

enum { EXIT_USAGE = 2, EXIT_EXPECT = 3 };

/* --aggregate, --by KEYS, --unit KEYS, --ci LEVEL (agg.c). */
typedef struct {
    int allowed;      /* the command takes --aggregate */
    int on;           /* --aggregate given */
    const char *by;   /* --by KEYS; NULL: the default grouping */
    const char *unit; /* --unit KEYS; NULL: the default unit (the input, else the record) */
    int ci_given;
    double ci;        /* --ci LEVEL, in (0, 1); default 0.95 */
} cli_agg;

/* Options every record-printing subcommand takes. */
typedef struct {
    ag_format format;
    const char *out_path;     /* -o FILE, or NULL for stdout */
    ag_metric_set *metrics;   /* --metrics (process-owned: cli_common_init) */
    int metrics_given;        /* --metrics given: no default depends on the input */
    const char *expect_path;  /* --expect GOLDEN.json */
    double rtol, atol;
    unsigned families;        /* what the command computes (AG_FAMILIES_*) */
    /* Options of the costly families (docs/metrics.md, families E, F), validated here. */
    double epsilon;           /* --epsilon, > 0 (default 1e-3) */
    int trials;               /* --trials, >= 1 (default 8) */
    unsigned long seed;       /* --seed (default 1) */
    double edge_threshold;    /* --edge-threshold in [0, 1]; < 0: 1/n */
    double massive_abs, massive_ratio; /* --massive-abs, --massive-ratio (residual,
                                 family I), >= 0 (defaults 100, 1000) */
    const char *label;        /* --label NAME: the records' "model" */
    const char *sort;         /* --sort KEY[:desc]: the column the rows sort by */
    int sort_desc;            /* :desc given */
    const char *columns;      /* --columns KEYS: the columns printed, in order */
    const char *caption;      /* --caption TEXT (LaTeX) */
    const char *tex_label;    /* --tex-label KEY (LaTeX; --label is the model's name) */
    int digits;               /* --digits N, 1..17; 0: the default */
    const char *table_cmd;    /* the command, for the usage error of a key
                                 neither option finds (known only at output) */
    char model_name[256];     /* else the model folder's (or input file's) name */
    cli_agg agg;              /* --aggregate (analyze, residual, rollout, weights, matrix) */
    int jobs_allowed;         /* the command takes -j */
    int jobs;                 /* -j N, 1..AG_POOL_THREADS_MAX; 0: not given (the CPUs) */
    /* image or audio inputs (media.c): the records' "input", the file a
     * record's "text" (line index, -1 for one input) names; NULL: none */
    const char *(*input_name)(const void *ctx, long text);
    const void *input_ctx;
    const ag_run_dist *dist;  /* the processes its runs spread over (cli_command's
                                 driver; borrowed); NULL: one process */
    const char *normalizer;   /* --normalizer N (matrix --scores): the records'
                                 "normalizer" and "temperature"; NULL: none */
    double temperature;       /* --temperature T, softmax's (1: the model's) */
    size_t ntemperatures;     /* --temperatures: > 0, each record's "temperature"
                                 is its own (ag_record_temperature) */
    const double *temperatures; /* (ntemperatures) in the order given, for the
                                 settings; borrowed from the command's cli_lens */
} cli_common;

/* --scores (matrix), --normalizer, --temperature and --temperatures as
 * given (lens.c). */
typedef struct {
    const char *scores, *normalizer, *temperature, *temperatures;
    ag_normalizer kind;
    double param; /* softmax: T; entmax: α */
    double temps[AG_TEMPERATURES_MAX]; /* --temperatures, in the order given */
    size_t ntemps;
} cli_lens;
/* One of the lens options at argv[*i] (--scores only when `scores`): 1
 * taken, 0 not one, -1 after a usage error. */
int cli_lens_option(cli_lens *l, const char *cmd, int scores, int argc, char **argv, int *i);
/* The normaliser and temperature checked (--temperature with softmax
 * only; --temperatures: softmax only, not with --temperature, each T
 * finite > 0, no repeats, at most AG_TEMPERATURES_MAX), c's "normalizer"
 * and "temperature" columns set. 0 or EXIT_USAGE after printing. */
int cli_lens_check(cli_lens *l, const char *cmd, cli_common *c);
/* cli_lens_check when --normalizer, --temperature or --temperatures was
 * given (a model run's), else 0. */
int cli_lens_parsed(cli_lens *l, const char *cmd, cli_common *c);
/* The run options' normaliser when one was given: 0, or 1 after printing. */
int cli_lens_set(const cli_lens *l, ag_run_options *opt);
/* c's "normalizer" and "temperature" columns appended to t when a lens was
 * given (records.c); AG_OK or err set. With --temperatures the caller
 * sets each row's temperature (cli_lens_row_temperature). */
int cli_lens_columns(const cli_common *c, ag_table *t, ag_error *err);
/* Row r's "temperature" (the last column cli_lens_columns added) set to T. */
void cli_lens_row_temperature(ag_table *t, size_t r, double T);
/* The usage error of --temperatures with an array output (option `out`,
 * which holds one temperature), or 0 when not both were given. */
int cli_lens_one_array(const cli_lens *l, const char *cmd, const char *out, const char *path);

/* Records of a run are an ag_record_list made on first use: a NULL list
 * is an empty one. */
/* Append a record to *list (made when NULL); NULL when out of memory. */
ag_record *cli_records_add(ag_record_list **list);
/* Move *src's records to the end of *dst (*src emptied). 0, or -1 when out
 * of memory (both unchanged). */
int cli_records_move(ag_record_list **dst, ag_record_list **src);

/* Defaults: table, stdout; selected: the default families (A, B, C) among
 * `families`, or all of `families` when it has none of them (weights); the
 * distribution of the command being run (cli_common_start). The selection
 * belongs to the process and is freed by cli_common_release at the end of
 * the command, so that every return path of a command may leave it. 0, or
 * 1 after printing (out of memory). */
int cli_common_init(cli_common *c, unsigned families);
/* Before a command (cli_command): the distribution its cli_common carry. */
void cli_common_start(const ag_run_dist *dist);
/* Free the selections cli_common_init made (after the command). */
void cli_common_release(void);

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

/* Keep OpenBLAS on one thread in every call (the CLI parallelises itself,
 * -j) and, under an address-space limit, map its work buffer before a
 * command that runs BLAS (runs_blas) so that a shortage is an error, not a
 * hang (blas.c). Returns 0 or the exit status after printing. Call once,
 * first thing in main. */
int cli_blas_setup(int runs_blas);
/* How many threads may call BLAS at once: 1 under an address-space limit
 * (each needs its own 128 MiB OpenBLAS buffer, and a mapping that fails is
 * retried forever), else INT_MAX. */
int cli_blas_callers_max(void);

/* c's options (threads = -j when given, precision, --edge-threshold,
 * --epsilon, --trials, --seed, --metrics and the distribution borrowed
 * from c) as the library's run options (attngeom/run.h); *out the caller's
 * (ag_run_options_free). 0, or 1 after printing. */
int cli_run_options(const cli_common *c, ag_precision precision, ag_run_options **out);
/* cli_run_options of r's common options and --precision, with r's
 * --layers and --heads selected. 0, or 1 after printing. */
struct cli_model_run;
int cli_model_run_options(const struct cli_model_run *r, ag_run_options **out);

/* ---- threads (workers.c; docs/cli.md, "Threads") ------------------------ */

/* The threads of one command run: a pool of -j threads (fewer under an
 * address-space limit). Work is split into tasks by a rule that ignores the
 * thread count (one per matrix, head, layer or text), and each task writes
 * its own slot, so the output is the same bytes for any -j. */
typedef struct {
    ag_workers *workers; /* the pool and a matrix workspace per thread
                            (parallel.h): a thread reuses its buffers */
} cli_workers;

/* A pool for c's -j. 0, or 1 after printing. */
int cli_workers_new(const cli_common *c, cli_workers *w);
void cli_workers_free(cli_workers *w);
/* ---- messages (messages.c) ---------------------------------------------- */

/* cli_held (driver.h): stderr lines of a task, printed at its turn so that
 * they come in input order and only up to the first failure, whatever the
 * thread count. */

/* Until cli_hold(NULL), this thread's messages (cli_fail, cli_note,
 * cli_usage_error) are appended to h instead of printed. Returns where
 * they went before (to put back). */
cli_held *cli_hold(cli_held *h);
/* Print h's lines on stderr and empty it. */
void cli_held_print(cli_held *h);

/* Print "attngeom: MESSAGE" (one line) and return 1. */
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print "attngeom CMD: MESSAGE (see attngeom CMD --help)" and return 2. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The usage error for an unknown option arg of cmd (returns 2), with "did
 * you mean" the closest (Damerau–Levenshtein distance ≤ 2) of the option
 * names cands[n] (NULLs skipped; cli_usage_check). */
int cli_unknown_option_among(const char *cmd, const char *const *cands, size_t n, const char *arg);

/* ---- option tables (options.c; issue 26, item 6) ------------------------- */

/* One option of a command. A command's table (cli_usage) is the one list
 * its parser accepts, its --help prints, "did you mean" suggests from and
 * the man page's and docs/cli.md's option lists are made from (attngeom
 * options-doc; tests/cli/help.sh checks the four agree). A group's list
 * ends with {NULL}. A command declares its table in three lines:
 *   static const cli_option own[] = {{"--hidden", "H.npy", "also write the hidden states"}, {NULL}};
 *   static const cli_option_group *const groups[] = {CLI_OWN("attention", own), &cli_group_output, &cli_group_help, NULL};
 *   const cli_usage cli_usage_attention = {"attention", attention_help, groups, NULL};
 * then its parser calls cli_usage_check on every argument before its own
 * handlers, --help is cli_usage_help, and command.c lists it. */
typedef struct {
    const char *name;  /* "--format", "-o" */
    const char *value; /* placeholder of its value ("F"), NULL for a flag */
    const char *help;  /* one line (--help wraps it); a refused one's: the usage error */
} cli_option;

enum {
    CLI_GROUP_ATTACHED = 1, /* a value may follow the name at once (-j4) */
    CLI_GROUP_REFUSED = 2   /* options not taken, each refused with its reason */
};
/* Options several commands share (a title; docs/cli.md, "Options"), or a
 * command's own (title NULL). */
typedef struct {
    const char *id;         /* the docs' marker and anchor: options:group-ID */
    const char *title;
    const cli_option *opts;
    unsigned flags;         /* CLI_GROUP_* */
} cli_option_group;
/* A command's own options; options it refuses by name, with a reason. */
#define CLI_OWN(cmd, opts) (&(cli_option_group){cmd, NULL, opts, 0})
#define CLI_REFUSE(id, opts) (&(cli_option_group){id, NULL, opts, CLI_GROUP_REFUSED})

/* A command's --help and option table: its groups, NULL-terminated, its
 * own first (an entry hides a later one of the same name: rollout's -o). */
typedef struct {
    const char *cmd;
    const char *text;                      /* --help before the options */
    const cli_option_group *const *groups;
    const char *more;                      /* --help after the options, or NULL */
} cli_usage;

/* The shared groups (options.c): model inputs (--text ...), --layers and
 * --heads, --precision, corpus runs (--max-tokens ...), images and audio,
 * named tensors (layer, weights: --weights, --qkv ...), the record
 * commands' (--metrics, --expect, --rtol, --atol), --label,
 * family E's (--epsilon, --trials, --seed), family F's (--edge-threshold),
 * tables (--sort ...), --aggregate (--by, --unit, --ci), -j, output
 * (--format, -o, --output), --help; and printless: --expect, --label,
 * --sort and --columns refused with a reason (commands that print no
 * records). */
extern const cli_option_group cli_group_printless, cli_group_input, cli_group_target, cli_group_select,
    cli_group_precision, cli_group_corpus, cli_group_media, cli_group_records, cli_group_label,
    cli_group_stability, cli_group_curvature, cli_group_tensors, cli_group_table,
    cli_group_aggregate, cli_group_jobs, cli_group_output, cli_group_help;

/* 0 when arg is not an option ("-" is an input) or one u takes; else the
 * usage error (a refused entry's text, or "unknown option" with "did you
 * mean" the closest of u's names), returning 2. */
int cli_usage_check(const cli_usage *u, const char *arg);
/* An option u takes that no handler of its parser took: an internal error
 * (tests/cli/help.sh tries every entry). Returns 1. */
int cli_usage_unparsed(const cli_usage *u, const char *arg);
/* --help: u's text, "options:" with a line per entry u takes, then its
 * more. Returns 0. */
int cli_usage_help(const cli_usage *u);
/* `attngeom options-doc man|md|names` (not listed; docs/cli.md,
 * "Options"): the option list of every command of cmds[n] and of every shared group, each
 * between markers (roff: .\" options:ID ... .\" /options; Markdown:
 * <!-- options:ID --> ... <!-- /options -->), for
 * scripts/options_docs.py to put in place; names: every entry of every
 * command, "CMD NAME VALUE|- takes|refuses" a line, for tests/cli/help.sh.
 * Returns the exit status. */
int cli_options_doc(int argc, char **argv, const cli_usage *const *cmds, size_t n);
/* A file given to the wrong reader, named for what it is: when path's first
 * bytes are of one of the kinds in `wrong` (AG_FILE_BIT of ag_file_kind),
 * print "PATH is a .npy file; CMD takes TAKES" and return 1; else (also for
 * "-" and a file that cannot be read, which the reader reports) 0. */
#define AG_FILE_BIT(k) (1u << (k))
#define CLI_NOT_RECORDS (AG_FILE_BIT(AG_FILE_NPY) | AG_FILE_BIT(AG_FILE_SAFETENSORS) | \
                         AG_FILE_BIT(AG_FILE_PNG) | AG_FILE_BIT(AG_FILE_JPEG) | AG_FILE_BIT(AG_FILE_WAV))
#define CLI_NOT_TENSORS (AG_FILE_BIT(AG_FILE_PNG) | AG_FILE_BIT(AG_FILE_JPEG) | \
                         AG_FILE_BIT(AG_FILE_WAV) | AG_FILE_BIT(AG_FILE_JSON) | \
                         AG_FILE_BIT(AG_FILE_TEXT_TABLE))
int cli_wrong_reader(const char *cmd, const char *path, unsigned wrong, const char *takes);
/* Print a library error as one line and return 1. */
int cli_fail_error(const ag_error *err);

/* ---- records that stand alone (settings.c) ------------------------------ */

/* The records' "model": --label, else the name of the folder or file `path`
 * (its last component once resolved, so "." and "models/x/" name the
 * folder). */
void cli_set_model_name(cli_common *c, const char *path);
/* --label or the name set; NULL when neither. */
const char *cli_model(const cli_common *c);

/* 1 for the formats that write a run's settings (JSON, JSONL). */
int cli_format_has_settings(ag_format fmt);

/* What a run's settings name besides c's options. */
typedef struct {
    const char *model_dir;           /* MODEL folder: its path, its weight files' SHA-256 */
    const char *const *files;        /* (nfiles) input files whose SHA-256 to give; NULLs skipped */
    size_t nfiles;
    const struct cli_model_run *run; /* the texts and the pass's options, or NULL */
    const char *metric;              /* the one key a command computes outside --metrics */
    const char *precision;           /* without a run: "f32" or "f64", or NULL */
    const char *method;              /* contributions: its --method ("method", "rollout"), or NULL */
    int rollout;
} cli_settings_in;

/* The settings object's text (JSON, malloc'd) in *out, or NULL when c's
 * format writes none (nothing is hashed then). 0, or 1 after printing. */
int cli_settings_text(const cli_common *c, const cli_settings_in *in, char **out);

/* ---- outputs (outputs.c; the rules are docs/cli.md's "Outputs") ------- */

/* An option and its path, for messages ("-o", "a.npy"); path may be NULL
 * (option not given). "-" is standard output (or input). */
typedef struct {
    const char *option, *path;
} cli_path;

/* The identity rule (docs/cli.md, "Outputs"): no output is a file the run
 * reads. The files of inputs `ins` are looked up once — each one's device
 * and inode (through symlinks), or its canonical path while nothing is
 * there; a folder (MODEL) stands for the files it is read from. 0, or 1
 * after printing (out of memory). */
typedef struct cli_inputs cli_inputs;
int cli_inputs_new(const cli_path *ins, size_t nin, cli_inputs **set);
/* One more input: `path`, a line of list file `list` given as `option`
 * ("--image-file"); the strings must outlive set. 0, or 1 after printing. */
int cli_inputs_add_listed(cli_inputs *set, const char *option, const char *list, const char *path);
void cli_inputs_free(cli_inputs *set);
/* Before anything runs: refuse (one line naming both, returns 1) an output
 * that is a directory, a read-only file, a missing folder's file, one of
 * `set`'s files (the same device and inode, or the same path while neither
 * exists) or the same file as another output (or the same descriptor). At
 * most 8 outputs. */
int cli_outputs_check(const cli_path *outs, size_t nout, const cli_inputs *set);
/* cli_outputs_check against the inputs ins[nin]. */
int cli_paths_check(const cli_path *outs, size_t nout, const cli_path *ins, size_t nin);

/* The outputs of one command, committed together. */
typedef struct cli_staged cli_staged;
typedef struct {
    cli_staged *items;
    size_t count, cap;
} cli_outputs;

/* Stage an output: a file is written to a temporary beside it now; a
 * device, FIFO or descriptor is opened now and written at commit (bytes
 * are copied; the array must live until then). Returns 0 or 1 after
 * printing; on failure call cli_outputs_abort (or cli_outputs_finish). */
int cli_outputs_add(cli_outputs *tx, const char *path, const char *buf, size_t len);
int cli_outputs_add_npy(cli_outputs *tx, const char *path, const ag_array *a);
/* Stage an output the command writes as it runs (records that stream):
 * *fp writes to a file's temporary, renamed over the file at commit and
 * removed at abort, so the file is still written whole or not at all; a
 * device, FIFO or descriptor ("-": standard output) is written in place as
 * the command goes. 0, or 1 after printing. */
int cli_outputs_stream(cli_outputs *tx, const char *path, FILE **fp);
/* A streamed .npy of the given shape (known before the run): its header is
 * written now, the command appends the values with ag_npy_writer_write as
 * it produces them (a layer at a time), commit checks that all came. Lands
 * as cli_outputs_stream's output does: a file whole or not at all, a FIFO,
 * device or descriptor as the values come (a failed run leaves a reader
 * of a FIFO a truncated array). *w belongs to tx. 0, or 1 after printing. */
int cli_outputs_npy(cli_outputs *tx, const char *path, int ndim, const size_t *shape,
                    ag_npy_writer **w);
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
int cli_emit_outputs(const cli_common *c, const ag_record_list *recs,
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

/* The table of the records as every format prints them: ag_records_table,
 * then "model" (cli_model) when there is one. 0, or 1 after printing. */
int cli_records_table(const cli_common *c, const ag_record_list *recs, ag_table *out);

/* cli_emit_outputs with the records' settings (commands that run no
 * corpus: matrix, layer, weights). */
int cli_emit_settings(const cli_common *c, const ag_record_list *recs, const char *command,
                      const char *source, const cli_settings_in *in, cli_outputs *tx);

/* cli_emit_outputs without staged outputs. */
int cli_emit(const cli_common *c, const ag_record_list *recs, const ag_output_meta *meta);

/* Write buf to path by the rules above or, when path is NULL, to stdout.
 * Returns 0 or 1 after printing the error. */
int cli_write_output(const char *path, const char *buf, size_t len);
/* c's -o as messages name it: the path, or "standard output". */
const char *cli_output_name(const cli_common *c);
/* Print that the output could not be formatted: "out of memory" for
 * AG_ENOMEM, naming the output; returns 1. */
int cli_format_fail(const cli_common *c, int status);

/* ---- aggregates (agg.c; cli_emit_table is emit.c's) -------------------- */

/* The width the terminal table fits (docs/cli.md, "The terminal table"):
 * COLUMNS when it is a positive integer, else the width of the terminal
 * standard output is, else 80. */
size_t cli_terminal_width(void);

/* Consume --by, --unit, --ci and, when g->allowed, --aggregate. 1 consumed, 0 not
 * ours, -1 usage error printed. */
int cli_agg_option(cli_agg *g, const char *cmd, int argc, char **argv, int *i);
/* A new aggregate grouped as g says (pooled: no --by means one group, for
 * compare). Returns 0 or the exit status after printing. */
int cli_agg_new(const cli_agg *g, const char *cmd, int pooled, int keep_values,
                ag_aggregate **out);
/* 1 for the formats read by people (table, md, latex), which get an
 * aggregate's table in their form. */
int cli_agg_human_format(ag_format f);
/* Format an aggregate's (or compare's) table in c's format and stage it for
 * c's -o (or stdout) into tx, then commit tx. t is first arranged by
 * --sort and --columns (cli_table_arrange). Returns the exit status. */
int cli_emit_table(const cli_common *c, ag_table *t, const ag_output_meta *meta,
                   cli_outputs *tx);
/* t's rows sorted by c's --sort, then its columns chosen by --columns
 * (docs/cli.md, "Choosing and ordering rows and columns"). 0, or the exit
 * status after printing: 2 for a key t lacks (a usage error naming it). */
int cli_table_arrange(const cli_common *c, ag_table *t);
/* m with c's table settings: the terminal width (--format table),
 * --caption, --tex-label, --digits. */
void cli_output_meta_apply(const cli_common *c, ag_output_meta *m);
/* The run's records aggregated (--aggregate) into a table for c's format.
 * 0 or 1 after printing. */
int cli_aggregate_records(const cli_common *c, const ag_record_list *recs, ag_table *out);


/* Compare records with a golden JSON output (--expect). Prints each mismatch
 * on stderr. Returns 0 (all match), 3 (mismatch) or 1 (golden unreadable). */
int cli_expect(const cli_common *c, const ag_record_list *recs);
/* The same for the rows of a table (a command whose records carry keys of
 * their own: heads). */
int cli_expect_table(const cli_common *c, const ag_table *t);

/* Parse a non-negative number; 0 on success. */
int cli_parse_double(const char *s, double *out);

/* ---- model inputs (analyze, attention, residual, rollout) -------------- */

typedef struct {
    const char *text;       /* --text S */
    const char *text_file;  /* --text-file F */
    const char *tokens;     /* --tokens 1,2,3 */
    const char *tokens_file; /* --tokens-file F */
    const char *target;     /* --target T (analyze, attention: t5, bart) */
    const char *target_tokens; /* --target-tokens 1,2,3 */
    const char *target_file; /* --target-file F: line k the target of source line k */
    int takes_target;       /* the command runs encoder–decoder folders */
    const char *layers;     /* --layers 0,2-3 */
    const char *heads;      /* --heads 1,4-5 */
    ag_precision precision; /* --precision f32|f64 */
    size_t max_tokens;      /* --max-tokens N: cut longer texts to N tokens (0: none) */
    int skip_long;          /* --skip-long: skip a text longer than the model's positions */
    int progress;           /* --progress 1, --no-progress -1; 0 (default): when
                               stderr is a terminal and there are several texts */
    /* inputs of ViT and Whisper models (media.c; docs/cli.md, "Images and audio") */
    const char *pixels;     /* --pixels P.npy: pixel_values[0], (3, H, W) */
    const char *image;      /* --image FILE (PNG, JPEG) */
    const char *image_file; /* --image-file LIST: one image path a line */
    const char *features;   /* --features F.npy: input_features, (n_mels, T) */
    const char *audio;      /* --audio FILE.wav */
    const char *audio_file; /* --audio-file LIST: one sound file a line */
    const char *save_input; /* --save-input IN.npy: the float32 tensor the model saw */
    size_t frames;          /* --frames N: the first N feature frames (0: all) */
    ag_run_media_config media; /* set by cli_model_inputs: the preprocessing */
    ag_image_crop crop;        /* and BiT's / CLIP's resize and crop */
} cli_input;

/* One tokenized text. `line` is its 0-based line in --text-file or
 * --tokens-file, else -1. */
typedef struct {
    int32_t *ids;
    size_t n;
    long line;
    size_t tokens;          /* its tokens before --max-tokens cut them (>= n) */
    int skip;               /* --skip-long: longer than the model's positions, not run */
    /* an image or audio input (media.c): ids NULL, n its positions */
    char *source;           /* the file as given (a list's line), owned */
    ag_run_tensor tensor;   /* the model's input; values NULL: read again at its pass */
    int32_t *target;        /* --target-file: its line's decoder input ids (owned) */
    size_t n_target;
} cli_seq;


/* Consume --text, --text-file, --tokens, --tokens-file, --precision (and, when
 * `selections` is set — a command that runs a model on texts — --layers,
 * --heads, --max-tokens, --skip-long, --progress, --no-progress). 1
 * consumed, 0 not ours, -1 usage error printed. */
int cli_input_option(cli_input *in, const char *cmd, int selections, int argc,
                     char **argv, int *i);
/* The files of `attention` on an encoder–decoder folder (NULL: not
 * written): -o the encoder's [L_enc, H, n_src, n_src], --decoder
 * [L_dec, H, n_tgt, n_tgt], --cross [L_dec, H, n_tgt, n_src], --hidden and
 * --decoder-hidden each stack's hidden states (L + 1, n, d); --scores,
 * --decoder-scores and --cross-scores the pre-softmax scores in the shapes
 * of -o, --decoder and --cross. */
typedef struct {
    const char *out, *decoder, *cross, *hidden, *decoder_hidden;
    const char *scores, *decoder_scores, *cross_scores;
} cli_s2s_paths;
struct cli_model_run;
/* One source's (s) and r's target's arrays into p's files (staged, renamed
 * together on success; seq2seq.c). 0, or 1 after printing. */
int cli_attention_seq2seq(struct cli_model_run *r, const cli_seq *s, const cli_s2s_paths *p);
/* An encoder–decoder pass's arrays, one writer per stack (indexed by
 * ag_stack: [1] -o, [2] --decoder, [3] --cross; NULL: not written), the
 * same of their scores (attention's --scores, --decoder-scores,
 * --cross-scores), the hidden states' ([0] --hidden the encoder's, [1]
 * --decoder-hidden) with the encoder's count L_enc + 1 and the states seen
 * so far (which stack a streamed state is of), and the write that failed. */
typedef struct {
    ag_npy_writer *w[4];
    ag_npy_writer *ws[4];
    ag_npy_writer *wh[2];
    int n_enc_states, states;
    ag_error err;
} cli_s2s_writers;
/* ag_run_stack_heads_fn appending a matrix to its stack's writer (user a
 * cli_s2s_writers); non-zero after a failed write (in its err). */
int cli_s2s_write(int stack, int layer, const double *attn, size_t heads, size_t n, size_t n_kv,
                  void *user);
/* `rollout`'s files on an encoder–decoder folder for source s and its
 * target, staged in tx (p's out, decoder and cross): -o the encoder's R_l
 * [L_enc selected, n_src, n_src], --decoder the decoder's
 * [L_dec selected, n_tgt, n_tgt], --cross R_cross [n_tgt, n_src] (refused
 * when --layers leaves out the decoder's last layer, where it is
 * composed). 0, or 1 after printing. */
int cli_rollout_seq2seq_open(struct cli_model_run *r, const cli_seq *s, const cli_s2s_paths *p,
                             cli_outputs *tx, cli_s2s_writers *w);
/* The decoder's selections of r->pair (--layers, --heads over its own
 * layers and heads) for cmd: their counts, and whether its last layer is
 * selected (last may be NULL). 0, or 1 after printing. */
int cli_s2s_decoder_counts(const struct cli_model_run *r, const char *cmd, size_t *nl, size_t *nh,
                           int *last);
/* 0, or on a run without an encoder–decoder pair (r->pair) given p's
 * decoder, cross or decoder_hidden: "DIR: <options> need an
 * encoder-decoder model (t5, bart, whisper) and its target" printed, 1. */
int cli_s2s_need_pair(const struct cli_model_run *r, const cli_s2s_paths *p, const char *options);
/* Consume --decoder and --cross into p's decoder and cross (rollout,
 * similarity). 1 consumed, 0 not ours, -1 usage error printed. */
int cli_s2s_option(cli_s2s_paths *p, const char *cmd, int argc, char **argv, int *i);
/* -o, --decoder and --cross as the command's arrays, the records going to
 * standard output: -o's path moves from r->common.out_path to p->out,
 * r->outs names the three and the records. Returns the first of them
 * given (NULL: none), *opt its option. */
const char *cli_s2s_arrays(struct cli_model_run *r, cli_s2s_paths *p, const char **opt);

/* Consume --target and --target-tokens (and mark in as taking them). 1
 * consumed, 0 not ours, -1 usage error printed. */
int cli_target_option(cli_input *in, const char *cmd, int argc, char **argv, int *i);
/* The sequences to run on m: tokenized with the model folder's tokenizer,
 * or --tokens / --tokens-file as given, cut to --max-tokens (as Hugging
 * Face's truncation=True, max_length=N: the special tokens stay) and
 * checked against m's positions: a longer one is skipped with --skip-long
 * (marked skip, one warning line each), an error otherwise (ag_run_fit).
 * Every cut prints one warning line. Returns 0, or an exit status after
 * printing. */
int cli_input_sequences(const cli_input *in, const char *cmd, const ag_model *m,
                        const char *model_dir, cli_seq **seqs, size_t *count);
void cli_seqs_free(cli_seq *seqs, size_t count);
/* --tokens LIST (comma-separated non-negative ids) into seq (line -1; ids
 * owned by seq). 0, or 2 after a usage error naming cmd. */
int cli_parse_tokens(const char *cmd, const char *list, cli_seq *seq);
/* The tokenizer of a text model folder for cmd (tokenize, decode): a ViT or
 * Whisper folder is a usage error (2), a tokenizer that does not load an
 * error (1, printed); 0 and *tok (ag_tokenizer_free) on success. */
int cli_load_tokenizer(const char *cmd, const char *model, ag_tokenizer **tok);
/* The whole of a text or list file, at most `max` bytes: a regular file (a
 * FIFO or device is refused, not waited on), or standard input for "-"
 * (*name becomes "standard input"). 0, or 1 after printing. */
int cli_read_text_file(const char **name, size_t max, char **buf, size_t *len);
/* The cap on a --text-file, --tokens-file or --jsonl corpus (bytes). */
#define CLI_TEXT_FILE_MAX ((size_t)256 * 1024 * 1024)
/* The next line of buf[len] from *pos: its start and length without the
 * "\n" (and a "\r" before it); *pos moves past it. 0 when none is left (a
 * final "\n" ends the last line, it does not start an empty one). */
int cli_next_line(const char *buf, size_t len, size_t *pos, size_t *start, size_t *n);

/* A JSON file the CLI reads itself, parsed with jansson `flags`, through
 * the same regular-file check (cli_read_text_file). 0 (*out the caller's),
 * or 1 after printing. */
int cli_read_json(const char *path, size_t flags, json_t **out);

/* The selection spec "0,2-5" over 0..limit-1 (attngeom/run.h; all when
 * spec is NULL) into *out (ag_selection_free). Returns 0, 2 after a usage
 * error (syntax), 1 after an out-of-range error, naming `source`. `what` is
 * "layers" or "heads". */
int cli_selection(const char *cmd, const char *spec, int limit, const char *what,
                  const char *source, ag_selection **out);

/* The most outputs a model command names: attention's -o, --hidden,
 * --scores, --decoder, --cross, --decoder-hidden, --decoder-scores,
 * --cross-scores. */
#define CLI_RUN_OUTS 8
/* A command that runs a model folder: options, model, inputs, selections. */
typedef struct cli_model_run {
    cli_common common;
    cli_input input;
    const char *model_dir;
    ag_model *model;
    cli_seq *seqs;
    size_t nseq;
    ag_selection *layers, *heads;  /* --layers (over nlayer_sel), --heads */
    int nlayer_sel;          /* indices --layers ranges over: n_layer + extra */
    cli_path outs[CLI_RUN_OUTS]; /* checked by prepare when set, the first ones
                                    (default: -o) */
    struct cli_sink *sink;   /* set: where cli_model_run_texts sends each text's records */
    cli_workers workers;     /* -j: made by cli_model_run_prepare */
    ag_run_options *opt;     /* the run's options (cli_model_run_options), made once by
                                cli_model_run_prepare for every text's run */
    const char *single;      /* set: what takes one sequence only (a --tokens-file of one line) */
    cli_outputs save_input;  /* --save-input, staged by cli_model_inputs */
    ag_seq2seq *pair;        /* an encoder–decoder folder: both stacks (model is
                                its encoder, borrowed) */
    int32_t *target;         /* (n_target) the decoder's input ids, or NULL */
    size_t n_target;
} cli_model_run;

/* A command's own options: 1 consumed, 0 not its, -1 usage error printed. */
typedef int (*cli_extra_option)(cli_model_run *r, int argc, char **argv, int *i);

/* Parse MODEL and the options of u's table: `extra` ones first, then the
 * common, input and media options. Returns 0, an exit status, or -1 after
 * printing --help. */
int cli_model_run_parse(cli_model_run *r, const cli_usage *u, int argc, char **argv,
                        cli_extra_option extra);
/* Load the model, the selections (--layers over n_layer + extra_layers
 * indices) and the tokenized inputs. Returns 0 or an exit status. */
int cli_model_run_prepare(cli_model_run *r, const char *cmd, int extra_layers);
void cli_model_run_free(cli_model_run *r);
/* Commit --save-input when rc is 0 (drop it otherwise), then free r.
 * Returns the command's status. */
int cli_model_run_finish(cli_model_run *r, int rc);
/* The identity rule (run_paths.c) over r's whole run (docs/cli.md, "Outputs"): every
 * output — the command's own or -o, --save-input, and for a name with {i}
 * the file of each text — against every file the run reads: MODEL's files,
 * the text, token, image and audio files, each line of a list, --expect.
 * Called once the sequences are known, before any is run or decoded. 0, or
 * 1 after printing. */
int cli_model_run_check_paths(const cli_model_run *r);
/* The file of text s: every {i} of pattern replaced by its line index (0
 * for a single input); NULL for a NULL pattern or out of memory. */
char *cli_text_path(const char *pattern, const cli_seq *s);
/* Print a forward-pass error for sequence s (naming the line of
 * --text-file or --tokens-file) and return 1. */
int cli_model_run_fail(const cli_model_run *r, const cli_seq *s, const ag_error *err);

/* ---- image and audio inputs (media.c; docs/cli.md, "Images and audio") -- */


/* Consume --pixels, --image, --image-file, --features, --audio,
 * --audio-file, --frames, --save-input. 1 consumed, 0 not ours, -1 usage
 * error printed. */
int cli_media_option(cli_input *in, const char *cmd, int argc, char **argv, int *i);
/* 1 when an image or audio option was given. */
int cli_media_given(const cli_input *in);
/* The input kind the options give (--pixels/--image*: pixels, --features/
 * --audio*: features, else tokens): the tower ag_model_load_tower takes
 * from a `clip` folder. */
ag_input_kind cli_input_kind(const cli_input *in);
/* 0, or (an encoder–decoder folder: t5) the one-line refusal "DIR: t5 is
 * an encoder-decoder model: CMD WHY" printed and 1. */
int cli_refuse_seq2seq(const char *dir, const char *cmd, const char *why);
/* r's sequences once its model is loaded: tokenized texts for a token
 * model (cli_input_sequences), else the image or audio inputs, each read
 * and checked against the model now (a single one kept, a list's read again
 * at its pass); options of the other kind are a usage error. The records
 * name the inputs ("input"). 0, or an exit status after printing. */
int cli_model_inputs(cli_model_run *r, const char *cmd);
/* s as a run's input (attngeom/run.h): its token ids, or its tensor, read
 * again when not kept (then *owned, the caller frees it; else NULL). A
 * failure to read it is AG_EIO etc. with err naming the file. */
int cli_seq_input(const cli_model_run *r, const cli_seq *s, ag_run_input *in, double **owned,
                  ag_error *err);
/* Run r's forward pass on s (ag_run_forward on cli_seq_input's input). */
int cli_forward(const cli_model_run *r, const cli_seq *s, const ag_forward_options *opt,
                ag_layer_fn fn, void *user, double *hidden, ag_error *err);
/* A library run of one text: fn on r's run options (r->opt) and s's input
 * (cli_seq_input). Returns fn's status (err set when not AG_OK; the caller
 * prints it). */
typedef int (*cli_run_fn)(const cli_model_run *r, const ag_run_options *opt,
                          const ag_run_input *in, void *user, ag_error *err);
int cli_run_text(const cli_model_run *r, const cli_seq *s, cli_run_fn fn, void *user,
                 ag_error *err);
/* 1 when MODEL's config.json names a model whose input is a tensor (vit,
 * whisper); its model_type in type[32]. 0 when it names another or is
 * absent; -1 after printing when it cannot be read (a FIFO, bad JSON). */
int cli_model_takes_tensors(const char *model_dir, char type[32]);

/* ---- progress of a corpus run (progress.c; docs/cli.md, "Corpus runs") -- */

typedef struct {
    const char *cmd;
    size_t total, done, skipped;
    int on, tty;
    double start, last; /* monotonic seconds: the run's start, the last line */
} cli_progress;

/* mode: cli_input.progress (1 on, -1 off, 0 on a terminal for more than
 * one text). */
void cli_progress_start(cli_progress *p, const char *cmd, int mode, size_t total);
/* One more text done (skipped: not run, --skip-long). */
void cli_progress_step(cli_progress *p, int skipped);
/* The last line when every text is done; else the terminal's line erased. */
void cli_progress_end(cli_progress *p);
/* Erase a progress line drawn on the terminal, so that a message starts on
 * a clean line (every message of the CLI calls it). */
void cli_progress_erase(void);

/* Run fn on every sequence of r that is not skipped, one after the other in
 * input order, with progress on stderr; stops at the first non-zero return,
 * which it returns. For a command whose texts write their own outputs
 * (attention). */
typedef int (*cli_text_fn)(cli_model_run *r, const cli_seq *s, void *user);
int cli_model_run_each(cli_model_run *r, const char *cmd, cli_text_fn fn, void *user);

/* What one text of a corpus run leaves for its turn (attngeom/run.h):
 * recs, its records, handed to r->sink; data (data_size bytes), the
 * command's own result; its messages are held in notes. */
typedef ag_run_result cli_text_out;

/* One text's work: records to out->recs, anything else to out->data; runs
 * on any thread, its messages held back (cli_hold). Returns 0 or an exit
 * status after printing. */
typedef int (*cli_text_work)(cli_model_run *r, const cli_seq *s, cli_text_out *out,
                             void *user);
/* A text's turn, in input order in the calling thread, before its records go
 * to r->sink: 0 or an exit status after printing. */
typedef int (*cli_text_turn)(cli_model_run *r, const cli_seq *s, cli_text_out *out,
                             void *user);

/* Run work on every sequence of r that is not skipped — the library's
 * corpus run (ag_run_map_run) on r->workers' threads, over r's processes
 * when the command runs on several — and take each text's turn in input
 * order: its held messages printed, turn (may be NULL) called, its records
 * handed to r->sink (cli_sink_text), progress stepped. The first text that
 * fails stops the run: the texts before it have had their turn, no text
 * after it has; its status is returned. The same output for any -j and
 * any process count (docs/cli.md, "Corpus runs"). */
int cli_model_run_texts(cli_model_run *r, const char *cmd, cli_text_work work,
                        cli_text_turn turn, void *user);
/* A run that prints records and nothing else (analyze, residual): its sink
 * opened (streaming when the format allows), work run on every text, the
 * sink closed. Returns the exit status. */
int cli_model_run_records(cli_model_run *r, const char *cmd, cli_text_work work);
/* The options of r's forward passes: --precision and the run's threads. */
ag_forward_options cli_forward_options(const cli_model_run *r);

/* ---- the records of a corpus run (sink.c; docs/cli.md, "Corpus runs") -- */

typedef struct cli_sink {
    const cli_common *c;
    ag_output_meta meta;  /* command, source and the run's settings */
    char *settings;       /* meta.settings (owned) */
    ag_record_list *recs; /* the records of the text in hand, or all of them */
    ag_aggregate *agg;    /* --aggregate: the running aggregate */
    cli_outputs tx;       /* the streamed output */
    FILE *fp;             /* where the records stream; NULL: written at the end */
    int head;             /* the format's head is written */
} cli_sink;

/* Start the output of a run: its settings (cli_settings_text) and, when
 * may_stream and c's format streams (ag_format_streams) without --expect or
 * --aggregate, the streamed output (-o, or standard output). Add records
 * to k->recs; call cli_sink_close in any case. 0, or 1 after printing. */
int cli_sink_open(cli_sink *k, const cli_common *c, const char *command, const char *source,
                  const cli_settings_in *in, int may_stream);
/* The records added since the last call are one text's: written and
 * flushed when the run streams, added to the aggregate with --aggregate,
 * else kept. 0, or 1 after printing. */
int cli_sink_text(cli_sink *k);
/* rc 0: the rest written (the tail, or every kept record through
 * cli_emit_outputs with `more`, the command's other staged outputs, or the
 * aggregate) and committed; else everything staged is dropped. Frees k.
 * Returns the exit status. */
int cli_sink_close(cli_sink *k, int rc, cli_outputs *more);


/* ---- named tensors (layer, weights) ------------------------------------ */

typedef struct {
    const char *x, *weights, *qkv, *q, *k, *v, *o, *qkv_bias, *q_bias, *k_bias,
        *v_bias, *save;
    int heads, causal, linear;
    double scale;
    ag_precision precision;
} cli_tensor_opts;

typedef ag_run_tensors cli_tensors;

/* Consume one of the tensor options (--x, --weights, --qkv, --q, --k, --v,
 * --o, biases, --heads H, --scale, --causal, --linear, --save-attention).
 * 1 consumed, 0 not ours, -1 usage error printed. */
int cli_tensor_option(cli_tensor_opts *o, const char *cmd, int argc, char **argv, int *i);
/* Check the combination of options; returns 0 or 2 after a usage error. */
int cli_tensor_check_usage(const cli_tensor_opts *o, const char *cmd, int need_x);
/* The named-tensor fields of s from o (X only when need_x); s's kernel
 * options are left as they are. */
void cli_tensor_spec(const cli_tensor_opts *o, int need_x, ag_run_layer_spec *s);
/* ag_run_tensors_load of o's spec: X (when need_x) and the named tensors as
 * [in, out] doubles, shapes checked (grouped-query K/V widths are allowed
 * without X). Returns 0 or 1 after printing the error. */
int cli_tensors_load(const cli_tensor_opts *o, cli_tensors *t, int need_x);
void cli_tensors_free(cli_tensors *t);

/* Subcommands, and their option tables (command.c lists both). */
extern const cli_usage cli_usage_matrix, cli_usage_info, cli_usage_metrics, cli_usage_tokenize,
    cli_usage_attention, cli_usage_analyze, cli_usage_layer, cli_usage_weights,
    cli_usage_residual, cli_usage_rollout, cli_usage_similarity, cli_usage_aggregate,
    cli_usage_compare, cli_usage_plot, cli_usage_heads, cli_usage_contributions, cli_usage_decode;
int cmd_matrix(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_metrics(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_decode(int argc, char **argv);
int cmd_attention(int argc, char **argv);
int cmd_analyze(int argc, char **argv);
int cmd_layer(int argc, char **argv);
int cmd_weights(int argc, char **argv);
int cmd_residual(int argc, char **argv);
int cmd_rollout(int argc, char **argv);
int cmd_contributions(int argc, char **argv);
int cmd_similarity(int argc, char **argv);
int cmd_aggregate(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_heads(int argc, char **argv);

#endif
