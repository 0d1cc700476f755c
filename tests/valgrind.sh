#!/bin/sh
# tests/valgrind.sh CLI — runs `attngeom` under valgrind memcheck on a
# handful of small good and bad inputs (matrix with usage errors, -o,
# --expect; every model command on the embedded model; run from the
# repository root) and
# fails if valgrind reports a memory error or a definite leak.  Valgrind's own
# verdict is exit status 99 (--error-exitcode=99), told apart from the CLI's
# statuses 0-3, which are checked too so each run does what it is meant to.

CLI=${1:?usage: sh tests/valgrind.sh path/to/attngeom}
ROOT=$(pwd)
case $CLI in /*) ;; *) CLI=$(pwd)/$CLI ;; esac
if [ ! -x "$CLI" ]; then
    echo "valgrind.sh: $CLI is not executable" >&2
    exit 1
fi
if ! command -v valgrind >/dev/null 2>&1; then
    echo "valgrind.sh: valgrind is not installed" >&2
    exit 1
fi
PY=/usr/bin/python3
T=$(mktemp -d "${TMPDIR:-/tmp}/ag_valgrind.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
trap 'exit 1' INT TERM HUP
cd "$T" || exit 1
# one BLAS thread: faster under valgrind, and deterministic
OPENBLAS_NUM_THREADS=1
export OPENBLAS_NUM_THREADS

"$PY" - <<'EOF' || { echo "valgrind.sh: could not make test files" >&2; exit 1; }
import json, struct
import numpy as np
rng = np.random.default_rng(11)
def sm(L):
    E = np.exp(L - L.max(axis=-1, keepdims=True))
    return E / E.sum(axis=-1, keepdims=True)
def causal(n):
    L = rng.normal(size=(n, n)); L[np.triu_indices(n, 1)] = -np.inf
    return sm(L)
np.save("s2d.npy", sm(rng.normal(size=(9, 9))))
np.save("c3d_f2_fortran.npy", np.asfortranarray(np.stack([causal(7), causal(7)]).astype("<f2")))
np.save("l4d_f4.npy", np.stack([np.stack([causal(5), sm(rng.normal(size=(5, 5)))])] * 2).astype("<f4"))
np.save("tall.npy", rng.normal(size=(8, 3)))
np.save("one.npy", np.array([[0.5]]))
np.save("zero.npy", np.zeros((4, 4)))
a = np.eye(3); a[2, 1] = np.nan
np.save("nan.npy", a)
with open("trunc.npy", "wb") as f:
    b = open("s2d.npy", "rb").read()
    f.write(b[:len(b) - 20])
def st(name, header, data):
    h = header if isinstance(header, bytes) else json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    open(name, "wb").write(struct.pack("<Q", len(h)) + h + data)
x = causal(6)
f32 = x.astype("<f4").tobytes()
bf = ((x.astype("<f4").view("<u4") + 0x8000) >> 16).astype("<u2").tobytes()
f16 = x.astype("<f2").tobytes()
st("good.safetensors", {
    "__metadata__": {"format": "pt"},
    "a32": {"dtype": "F32", "shape": [6, 6], "data_offsets": [0, 144]},
    "abf": {"dtype": "BF16", "shape": [1, 6, 6], "data_offsets": [144, 216]},
    "a16": {"dtype": "F16", "shape": [6, 6], "data_offsets": [216, 288]},
    "ids": {"dtype": "I64", "shape": [2], "data_offsets": [288, 304]}},
    f32 + bf + f16 + np.array([1, 2], "<i8").tobytes())
st("badjson.safetensors", b'{"a": {"dtype": "F32", "shape": [6, 6], "data_offsets": [0, ', f32)
st("overlap.safetensors", {
    "a": {"dtype": "F32", "shape": [6, 6], "data_offsets": [0, 144]},
    "b": {"dtype": "F32", "shape": [2, 2], "data_offsets": [128, 144]}}, f32)
st("range.safetensors", {"a": {"dtype": "F32", "shape": [6, 6], "data_offsets": [0, 1440]}}, f32)
# the ends of the double range: scaled copies in the metrics, layer and weights
np.save("huge.npy", np.full((4, 4), 1e308) * np.eye(4)[::-1].clip(0.5, 1))
np.save("sub.npy", sm(rng.normal(size=(5, 5))) * 1e-310)
w = rng.normal(size=(4, 6)) * 2.0 ** 600
st("hw.safetensors", {"q": {"dtype": "F64", "shape": [4, 6], "data_offsets": [0, 192]},
                      "o": {"dtype": "F64", "shape": [6, 4], "data_offsets": [192, 384]}},
   w.astype("<f8").tobytes() + w.T.astype("<f8").tobytes())
np.save("hx.npy", rng.normal(size=(3, 4)))
EOF

FAILS=0
N=0
# vg WANT_CLI_STATUS ARGS...
vg() {
    want=$1
    shift
    N=$((N + 1))
    valgrind -q --error-exitcode=99 --leak-check=full \
        --errors-for-leak-kinds=definite --show-leak-kinds=definite \
        --log-file=vg.log "$CLI" "$@" >stdout 2>stderr </dev/null
    rc=$?
    if [ $rc -eq 99 ]; then
        echo "FAIL [attngeom $*]: valgrind reports errors:"
        head -n 40 vg.log
        FAILS=$((FAILS + 1))
    elif [ $rc -ne "$want" ]; then
        echo "FAIL [attngeom $*]: exit $rc under valgrind, expected $want: $(head -c 300 stderr)"
        FAILS=$((FAILS + 1))
    fi
}

vg 0 matrix s2d.npy --format json --metrics all
vg 0 matrix c3d_f2_fortran.npy --format csv
vg 0 matrix l4d_f4.npy --format table --metrics all
vg 0 matrix tall.npy --format md --metrics all
vg 0 matrix one.npy --format latex --metrics all
vg 0 matrix zero.npy --format tsv --metrics all
vg 0 matrix good.safetensors --tensor a32 --format json
vg 0 matrix good.safetensors --tensor abf --format json --metrics all -o out.json
vg 0 matrix good.safetensors --tensor a16 --format json --metrics sigma_max,entropy_mean
vg 0 matrix good.safetensors --tensor abf --format json --metrics all --expect out.json
"$PY" -c "
import json; d = json.load(open('out.json')); d['records'][0]['sigma_max'] += 1
json.dump(d, open('bad_gold.json', 'w'))"
vg 3 matrix good.safetensors --tensor abf --format json --metrics all --expect bad_gold.json
vg 0 matrix huge.npy --format json --metrics all
vg 0 matrix sub.npy --format json --metrics all
vg 0 weights --weights hw.safetensors --q q --k q --v q --o o --heads 2
vg 1 layer --x hx.npy --weights hw.safetensors --q q --k q --heads 2 --precision f64
vg 1 matrix good.safetensors --tensor ids
vg 1 matrix good.safetensors --tensor nope
vg 1 matrix badjson.safetensors --tensor a
vg 1 matrix overlap.safetensors --tensor a
vg 1 matrix range.safetensors --tensor a
vg 1 matrix nan.npy --format json -o never.json
vg 1 matrix trunc.npy
vg 1 matrix missing.npy
vg 2 matrix s2d.npy --format xml
vg 2 matrix s2d.npy --metrics sigma_max,nope
vg 2 matrix s2d.npy --bogus
vg 2 bogus

# The model commands on the embedded model (short inputs: valgrind is slow).
M=$ROOT/models/tiny-gpt2
BERT=$ROOT/tests/data/models/tiny-bert
USE=$ROOT/tests/data/use-lite/qkv.safetensors
QKV='module/Encoder_en/KonaTransformer/Encode/Layer_0/TransformerLayer/MultiheadAttention/qkv_transform_single/kernel/part_0'
printf 'In the beginning\n\nGod said\n' > texts.txt
vg 0 info "$M"
vg 0 tokenize "$M" --text "Don't panic: 42 cafés" --format json
vg 0 tokenize "$BERT" --text "Don't panic: 42 cafés"
# BertNormalizer's NFD on 13 four-byte characters (wrote one byte past its buffer)
vg 0 tokenize "$BERT" --text "😀😀😀😀😀😀😀😀😀😀😀😀😀"
# tokenizer families (tests/data/tokenizers/): Unigram + Precompiled +
# Metaspace, and a Sequence normalizer with Split/Digits/Punctuation
python3 "$ROOT/tools/tokenize_ref/materialize.py" fam t5 wordpiece-mix split-mix >/dev/null ||
    { echo "valgrind.sh: materialize.py failed" >&2; exit 1; }
vg 0 tokenize fam/t5 --text "ﬁ́ Héllo\r\n中文 😀 <extra_id_0> x" --format json
vg 0 tokenize fam/wordpiece-mix --text " New York <br> Grüße, 12 @@ [MASK]  x"
vg 0 tokenize fam/split-mix --text "ﬁx a=b --c d; e.<|endoftext|> 12"
# offsets and decoding (docs/tokenizers.md, "Offsets", "Decoders"): spans
# through every stage; an untracked normalizer refused (exit 1)
vg 0 tokenize fam/wordpiece-mix --text " New York <br> Grüße, 12 @@ [MASK]  x" --offsets --format json
vg 0 tokenize fam/split-mix --text "fix a=b  --c d; e.<|endoftext|> 12" --offsets
vg 0 tokenize fam/t5 --text "½ Héllo ﬁx…" --offsets
vg 1 tokenize fam/t5 --text "ﬁ́ Héllo" --offsets
vg 0 tokenize "$BERT" --text "Don't panic: 42 cafés" --offsets
vg 0 decode "$M" --tokens 15496,995,50256,220 --skip-special
vg 0 decode fam/t5 --tokens 100,395,697,1
printf '818, 262 3290\n\n40 50\n' > ids.txt
printf '1 2\n3 x\n' > ids_bad.txt
vg 0 analyze "$M" --tokens-file ids.txt --layers 1 --heads 0
vg 1 analyze "$M" --tokens-file ids_bad.txt
vg 0 analyze "$M" --text "In the beginning God" --metrics all --format json
vg 0 analyze "$BERT" --tokens 2,100,200,3 --metrics stability,spectrum --precision f64
vg 0 analyze "$M" --text-file texts.txt --layers 1 --heads 0-1 --metrics curvature
vg 0 attention "$M" --text "In the beginning" -o a.npy --hidden h.npy
vg 0 weights "$M" --layers 0 --format csv
vg 0 weights --weights "$USE" --qkv "$QKV" --heads 4 --metrics qk_symmetry_score
vg 0 residual "$M" --tokens 818,262,3726
vg 0 rollout "$M" --tokens 818,262,3726 -o r.npy --metrics all
vg 0 contributions "$M" --tokens 818,262,3726 --rollout -o c.npy --mixing m.npy
vg 0 contributions "$BERT" --tokens 2,100,200,3 --method norms-res --precision f64
vg 2 contributions "$M" --tokens 818,262 --method norms-res --rollout
vg 0 contributions "$M" --text-file texts.txt --method norms --layers 1,3 --heads 0,2 --format csv
vg 0 contributions "$M" --tokens 818,262,3726 --method norms -o n.npy
vg 0 contributions "$BERT" --tokens 2,100,200,3 --method flow -o f.npy -j 2
vg 1 contributions "$M" --tokens 818,262,3726 --method flow --flow-max-tokens 2
vg 0 similarity "$M" --text-file texts.txt --layers 1,3 -o sim.npy --format md
vg 1 similarity "$M" --tokens 818,99999999 -o sim.npy
vg 0 heads "$BERT" --probe induction --length 4 --repeats 3 --heads 1 --format json
vg 1 heads "$M" --probe induction --length 129
vg 0 layer --x "$ROOT/tests/data/fixtures/use-lite/x_0_layer0.npy" --weights "$USE" --qkv "$QKV" --heads 4 --scale 0.125 --metrics all --save-attention la.npy
# figures (cairo, fontconfig: their caches are released before exit)
"$CLI" tokenize "$M" --text "In the beginning" --format json > tok.json
vg 0 plot a.npy --kind attention --layer 1 --head 2 --tokens tok.json --values -o att.svg
vg 0 plot a.npy --kind spectrum --layer 0 -o spec.pdf
vg 0 plot sim.npy --kind similarity --heads-per-layer 4 -o sim.png
vg 1 plot a.npy --kind attention --layer 9 -o never.svg
vg 2 plot a.npy --kind attention -o fig.jpg
"$CLI" analyze "$M" --text-file texts.txt --metrics sink_ratio --format csv -o heads.csv
"$CLI" analyze "$M" --text-file texts.txt --metrics sink_ratio --aggregate --format json -o heads_agg.json
vg 0 plot heads.csv --kind heatmap --metric sink_ratio --values -o hm.pdf
vg 0 plot heads_agg.json --kind depth --metric sink_ratio -o depth.svg
vg 2 plot heads_agg.json --kind depth --by head --metric sink_ratio -o never.svg
vg 0 plot heads.csv --kind forest --metric sink_ratio --ref 1 -o forest.svg
vg 1 plot heads.csv --kind heatmap --metric nope -o never.svg
# outputs (docs/cli.md, "Outputs") and inputs that must not block
ln -s out.json link.json
mkfifo fifo.npy
echo '{"records": [' > broken.json
vg 0 matrix s2d.npy -o /dev/null
vg 0 matrix s2d.npy --format json -o link.json
vg 1 matrix s2d.npy -o s2d.npy
vg 1 matrix s2d.npy -o /dev/full
vg 1 matrix fifo.npy
vg 1 attention "$M" --text "In the beginning" -o a.npy --hidden /dev/full
vg 1 layer --x "$ROOT/tests/data/fixtures/use-lite/x_0_layer0.npy" --weights "$USE" --qkv "$QKV" --heads 4 --metrics sigma_max --save-attention la.npy --expect broken.json
vg 1 analyze "$M" --text-file -
vg 1 analyze "$M" --tokens 99999999
vg 1 analyze "$ROOT/tests" --text "x"
vg 1 weights --weights "$USE" --q nope --k nope --heads 4
vg 2 analyze "$M" --text "x" --epsilon -1
# corpus statistics: --aggregate, aggregate and compare, through every reader
vg 0 analyze "$M" --text-file texts.txt --layers 1 --aggregate --format md
vg 0 analyze "$M" --text-file texts.txt --layers 1 --format csv -o per.csv
vg 0 analyze "$M" --text-file texts.txt --layers 1 --format jsonl -o per.jsonl
vg 0 aggregate per.csv per.jsonl out.json --format latex
vg 0 aggregate per.jsonl --by head --format json
vg 0 compare per.csv per.jsonl --by layer --permutations 50 --format csv
vg 1 aggregate broken.json
vg 1 compare per.csv broken.json
vg 2 aggregate per.csv --by ,
# corpus runs (docs/cli.md, "Corpus runs"): streamed records, a stream
# dropped at a failure, cuts, skips, progress, settings, attention's {i}
python3 -c "print('In the beginning\n' + 'word ' * 300 + '\nGod said')" > long.txt
printf '818 262\n818 99999999\n' > ids_late.txt
vg 0 analyze "$M" --text-file long.txt --skip-long --progress --layers 1 --format jsonl
vg 0 rollout "$M" --text-file long.txt --max-tokens 8 --layers 1 --format latex
vg 0 residual "$M" --text-file long.txt --skip-long --layers 1 --format tsv -o res.tsv
vg 1 analyze "$M" --tokens-file ids_late.txt --layers 1 --format csv -o late.csv
vg 0 analyze "$BERT" --text "Don't panic: 42 cafés" --max-tokens 5 --label bert --layers 0 --format json
vg 0 attention "$M" --text-file long.txt --skip-long -o 'att_{i}.npy' --hidden 'hid_{i}.npy'
vg 2 attention "$M" --text-file texts.txt -o att.npy
vg 0 similarity "$M" --text-file long.txt --max-tokens 6 --layers 0 --format jsonl
vg 0 weights "$M" --layers 0 --format json

if [ $FAILS -ne 0 ]; then
    echo "valgrind.sh: $FAILS failure(s) in $N runs"
    exit 1
fi
echo "valgrind.sh: ok ($N runs, no memory errors or definite leaks)"
