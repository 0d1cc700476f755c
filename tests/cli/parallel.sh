#!/bin/sh
# tests/cli/parallel.sh CLI — the same bytes for any thread count (docs/cli.md,
# "Threads" and "BLAS threads and memory limits"): every command that takes -j
# run at -j 1, 2, 3, each with OPENBLAS_NUM_THREADS = OMP_NUM_THREADS = 1 and
# 2, gives byte-identical standard output, stderr, exit status and output
# files — both precisions, --metrics all (every family, stability and
# curvature included), on tiny-gpt2, tiny-bert and random-weight architectures
# (Gemma-2: grouped-query heads, soft-capping and a sliding window; RoBERTa:
# bidirectional; Qwen2-MoE: routed and shared experts), on one text (heads
# in parallel) and on corpora (texts in parallel, records in input order; 9
# texts make batches of uneven size). A
# corpus whose second text fails ends the same way for every -j: the same one
# line, exit 1, the first text's records on standard output, no -o file.
# Sizes are small so that the 150-odd runs take seconds. Run from the
# repository root.

. "$(dirname "$0")/lib.sh"
ag_setup "$@"
BERT=$ROOT/tests/data/models/tiny-bert
ARCH=$ROOT/tests/data/models/arch
need "$GPT2/config.json" "$BERT/config.json" "$ARCH/gemma2/config.json" "$ARCH/roberta/config.json" \
    "$ARCH/qwen2-moe/config.json" \
    "$ROOT/tests/data/archref/gemma2/ids.json" "$ROOT/tests/data/archref/roberta/ids.json"
cd "$T" || exit 1

"$PY" - "$ROOT/tests/data/archref" <<'EOF' || { echo "parallel.sh: could not make test files" >&2; exit 1; }
import json, sys
import numpy as np
rng = np.random.default_rng(12)
def softmax(S):
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    return E / E.sum(axis=-1, keepdims=True)
S = 2 * rng.normal(size=(2, 3, 10, 10))
S[..., ~np.tril(np.ones((10, 10), bool))] = -np.inf
np.save("causal.npy", softmax(S))                          # [L, H, n, n], lower triangular
np.save("bidir.npy", softmax(2 * rng.normal(size=(5, 9, 9))))  # [H, n, n], full
np.save("x.npy", rng.normal(size=(10, 128)))              # a layer input for tiny-gpt2's c_attn
open("corpus.txt", "w").write("In the beginning God created the heaven\n"
                              "and the earth was without form\n"
                              "and void and darkness was upon the face of the deep\n")
def ids_file(name, lines):
    open(name, "w").write("".join(" ".join(map(str, l)) + "\n" for l in lines))
g = json.load(open(sys.argv[1] + "/gemma2/ids.json"))["ids"]
ids_file("gemma2.txt", [g[:16], g[:9], g[3:15]])
r = json.load(open(sys.argv[1] + "/roberta/ids.json"))["ids"]
ids_file("roberta.txt", [r[k % 5:k % 5 + 4 + k] for k in range(9)])
ids_file("bad.txt", [[464, 3290, 318], [818, 50257, 262], [818, 99999]])
EOF

# tiny-gpt2's corpus as ids: its tokenizer takes most of a short run's time
while read -r line; do
    "$CLI" tokenize "$GPT2" --text "$line" --format csv | sed 1d | cut -d, -f2 | paste -sd' ' -
done <corpus.txt >gpt2.txt
[ "$(wc -l <gpt2.txt)" -eq 3 ] || { echo "parallel.sh: could not tokenize the corpus" >&2; exit 1; }

# same_bytes DESC ARGS... : the CLI with ARGS, run in a folder of its own
# for each -j and BLAS thread count, exits 0 and leaves the same files
# (stdout, stderr, status and whatever ARGS write there) byte for byte.
runs() {
    rm -rf runs
    mkdir runs
    for j in 1 2 3; do
        for b in 1 2; do
            d=runs/j$j.blas$b
            mkdir "$d"
            (cd "$d" && OPENBLAS_NUM_THREADS=$b OMP_NUM_THREADS=$b "$CLI" "$@" -j $j \
                >stdout 2>stderr </dev/null; echo $? >status)
        done
    done
}
compare_runs() {
    ref=runs/j1.blas1
    for d in runs/*; do
        [ "$d" = $ref ] && continue
        diff -rq $ref "$d" >diffs 2>&1 || fail "${d#runs/} against j1.blas1: $(head -c 300 diffs)"
    done
}
same_bytes() {
    DESC=$1
    shift
    N=$((N + 1))
    runs "$@"
    ref=runs/j1.blas1
    [ "$(cat $ref/status)" = 0 ] || fail "exit $(cat $ref/status): $(head -c 300 $ref/stderr)"
    [ -s $ref/stderr ] && fail "stderr: $(head -c 300 $ref/stderr)"
    [ "$(ls $ref | wc -l)" -gt 3 ] || [ -s $ref/stdout ] || fail "no output"
    compare_runs
}

# ---- matrix: one task per matrix -------------------------------------------------
same_bytes "matrix, causal [2, 3, 10, 10], --metrics all" matrix "$T/causal.npy" --metrics all --format json
same_bytes "matrix, bidirectional [5, 9, 9], --metrics all" matrix "$T/bidir.npy" --metrics all --format csv
same_bytes "matrix --aggregate" matrix "$T/causal.npy" --aggregate --format csv

# ---- the model commands, both precisions ------------------------------------------
ALL="--metrics all --trials 2"
for p in f32 f64; do
    # the text file once (tokenizing takes most of such a short run), then ids
    [ $p = f32 ] && in="--text-file $T/corpus.txt" || in="--tokens-file $T/gpt2.txt"
    # shellcheck disable=SC2086
    same_bytes "analyze tiny-gpt2, 3 texts, $p" analyze "$GPT2" $in $ALL --precision $p --format jsonl
    same_bytes "analyze tiny-bert, 3 texts, $p" analyze "$BERT" --text-file "$T/corpus.txt" $ALL \
        --precision $p --format csv
    same_bytes "analyze tiny-gpt2, one text (heads in parallel), $p" analyze "$GPT2" \
        --tokens "$(head -1 gpt2.txt | tr ' ' ,)" $ALL --precision $p --format json
    same_bytes "analyze gemma2 (GQA, softcap, window), 3 texts, $p" analyze "$ARCH/gemma2" \
        --tokens-file "$T/gemma2.txt" $ALL --precision $p --format json
    same_bytes "analyze roberta (bidirectional), 9 texts, $p" analyze "$ARCH/roberta" \
        --tokens-file "$T/roberta.txt" $ALL --precision $p --format tsv
    [ $p = f64 ] && same_bytes "analyze --aggregate, 9 texts" analyze "$ARCH/roberta" \
        --tokens-file "$T/roberta.txt" --aggregate --format csv
    same_bytes "residual tiny-gpt2, 3 texts, $p" residual "$GPT2" --tokens-file "$T/gpt2.txt" \
        --metrics all --precision $p --format jsonl
    same_bytes "rollout tiny-gpt2, 3 texts, $p" rollout "$GPT2" --tokens-file "$T/gpt2.txt" \
        --metrics all --precision $p --format csv
    same_bytes "rollout tiny-bert -o R.npy, one text, $p" rollout "$BERT" --text "and the earth was" \
        -o R.npy --metrics all --precision $p --format json
    same_bytes "similarity tiny-gpt2 -o S.npy, 3 texts, $p" similarity "$GPT2" \
        --tokens-file "$T/gpt2.txt" -o S.npy --precision $p --format csv
    same_bytes "similarity roberta, 9 texts, $p" similarity "$ARCH/roberta" \
        --tokens-file "$T/roberta.txt" --precision $p --format json
    same_bytes "attention tiny-gpt2 -o a_{i}.npy --hidden h_{i}.npy, 3 texts, $p" attention "$GPT2" \
        --tokens-file "$T/gpt2.txt" -o 'a_{i}.npy' --hidden 'h_{i}.npy' --precision $p
    same_bytes "attention qwen2-moe (experts, shared expert) --hidden, $p" attention "$ARCH/qwen2-moe" \
        --tokens 3,11,29,7,52,11,29,60,4,17,33 -o A.npy --hidden H.npy --precision $p
    same_bytes "layer on tiny-gpt2's c_attn, --save-attention, $p" layer --x "$T/x.npy" \
        --weights "$GPT2/model.safetensors" --qkv h.0.attn.c_attn.weight \
        --qkv-bias h.0.attn.c_attn.bias --heads 4 --causal $ALL --precision $p \
        --save-attention A.npy --format json
done

# ---- weights: layers (or one layer's heads) as tasks ------------------------------
same_bytes "weights tiny-gpt2 (layers in parallel)" weights "$GPT2" --format json
same_bytes "weights gemma2, one layer (heads in parallel)" weights "$ARCH/gemma2" --layers 1 --format csv
same_bytes "weights --weights (one layer of named tensors)" weights --weights "$GPT2/model.safetensors" \
    --qkv h.1.attn.c_attn.weight --o h.1.attn.c_proj.weight --heads 4 --format json

# ---- a corpus whose second text fails --------------------------------------------
# Line 2 holds an id outside the vocabulary, line 3 another: every -j names
# line 2 (the lowest failure), before any text is computed: nothing on stdout.
check "analyze: the 2nd text fails: one line naming it, exit 1, for every -j"
runs analyze "$GPT2" --tokens-file "$T/bad.txt" --format csv --metrics sigma_max
compare_runs
ref=runs/j1.blas1
[ "$(cat $ref/status)" = 1 ] || fail "exit $(cat $ref/status), expected 1"
[ "$(wc -l <$ref/stderr)" -eq 1 ] && grep -q "bad.txt: line 2: token id 50257" $ref/stderr ||
    fail "stderr: $(cat $ref/stderr)"
[ ! -s $ref/stdout ] || fail "stdout: $(wc -l <$ref/stdout) lines, expected none (the ids are checked before the first text)"
check "analyze -o FILE: the 2nd text fails: no file, no temporary, for every -j"
runs analyze "$GPT2" --tokens-file "$T/bad.txt" --format jsonl -o out.jsonl
compare_runs
[ "$(cat $ref/status)" = 1 ] && [ ! -s $ref/stdout ] || fail "exit $(cat $ref/status), stdout $(wc -c <$ref/stdout) bytes"
[ "$(ls $ref | tr '\n' ' ')" = "status stderr stdout " ] || fail "left: $(ls $ref | tr '\n' ' ')"
for cmd in residual rollout similarity; do
    check "$cmd: the 2nd text fails the same way for every -j"
    runs $cmd "$GPT2" --tokens-file "$T/bad.txt" --format csv
    compare_runs
    [ "$(cat $ref/status)" = 1 ] && grep -q "bad.txt: line 2: token id 50257" $ref/stderr ||
        fail "exit $(cat $ref/status): $(cat $ref/stderr)"
done

# ---- the thread options ------------------------------------------------------------
check "AG_BLAS_THREADS (no longer read) changes nothing"
"$CLI" matrix "$T/causal.npy" --format csv >plain.csv 2>err || fail "exit $?"
AG_BLAS_THREADS=4 "$CLI" matrix "$T/causal.npy" --format csv >four.csv 2>err || fail "exit $?: $(cat err)"
AG_BLAS_THREADS=x "$CLI" matrix "$T/causal.npy" --format csv >x.csv 2>err || fail "exit $?: $(cat err)"
cmp -s plain.csv four.csv && cmp -s plain.csv x.csv || fail "the output changed"
check "-j 2, -j2 and -j=2 are one option"
for a in "-j 2" -j2 -j=2; do
    # shellcheck disable=SC2086
    "$CLI" matrix "$T/causal.npy" --format csv $a >j.csv 2>err || fail "$a: exit $?: $(cat err)"
    cmp -s plain.csv j.csv || fail "$a: the output differs"
done
for bad in 0 257 -1 x 2x ""; do
    run_case 2 "-j takes a number of threads from 1 to 256|option -j needs a value" \
        "-j '$bad': usage error" matrix "$T/causal.npy" -j $bad
done
run_case 2 "unknown option '-j'" "tokenize takes no -j" tokenize "$GPT2" --text hi -j 2
check "every command that takes -j says so in --help"
for cmd in matrix analyze layer weights residual rollout similarity attention; do
    "$CLI" $cmd --help | grep -q -- "-j N  " || fail "$cmd --help does not list -j"
done

finish
