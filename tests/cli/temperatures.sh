#!/bin/sh
# tests/cli/temperatures.sh CLI — `--temperatures T1,T2,...` (issue 28,
# "Softmax as a lens"; docs/cli.md, "Several temperatures"): one set of
# records per T, in the order given, each carrying normalizer softmax and
# its own temperature, byte for byte the rows of one run per --temperature
# T (analyze on one text and on a corpus with -j, streamed jsonl, rollout,
# similarity, matrix --scores, contributions; --expect against them);
# contributions --method norms under sparsemax is the sparsemax A times the
# value norms; --aggregate gives one group per (T, head), the same as
# aggregating the single runs' records together; the usage errors (with
# --temperature, another normaliser, a bad or repeated T, more than 64, an
# array output that holds one T).

. "$(dirname "$0")/lib.sh"
ag_setup "$@"
need "$GPT2/config.json"
cd "$T" || exit 1
printf 'the cat sat on the mat\nhello world\na b c d e f g\n' >texts.txt
TS="0.25,0.5,1,2,4"

# same A B : files A and B hold the same bytes
same() { cmp -s "$1" "$2" || fail "$1 and $2 differ: $(diff "$1" "$2" | head -c 400)"; }

# singles OUT CMD ARGS... : the header of one run, then each T's rows in turn
singles() {
    out=$1
    shift
    first=1
    for t in 0.25 0.5 1 2 4; do
        "$CLI" "$@" --temperature $t >one.txt 2>err || fail "--temperature $t: $(head -c 300 err)"
        if [ $first = 1 ]; then cat one.txt; else tail -n +2 one.txt; fi
        first=0
    done >"$out"
}

# as_singles NAME CMD ARGS... : CMD --temperatures $TS is, byte for byte,
# the five --temperature runs in turn
as_singles() {
    name=$1
    shift
    "$CLI" "$@" --temperatures $TS >"$name.csv" 2>err || fail "exit: $(head -c 300 err)"
    singles "${name}1.csv" "$@"
    same "$name.csv" "${name}1.csv"
}

# ---- analyze: one text, the rows of five runs in order ---------------------
check "analyze --temperatures = five --temperature runs, in order (csv)"
A="analyze $GPT2 --text The_cat_sat --metrics entropy_mean,sink_mass,effective_rank,stable_rank --format csv"
as_singles multi $A
check "each row carries softmax and its own T, in the order given"
got=$(awk -F, 'NR > 1 {print $(NF-1) "," $NF}' multi.csv | uniq | tr '\n' ' ')
[ "$got" = '"softmax",0.25 "softmax",0.5 "softmax",1 "softmax",2 "softmax",4 ' ] || fail "got $got"
check "the order given is kept (4,0.5 is not sorted)"
"$CLI" $A --temperatures 4,0.5 >rev.csv 2>err || fail "exit: $(head -c 300 err)"
{ "$CLI" $A --temperature 4; "$CLI" $A --temperature 0.5 | tail -n +2; } >rev1.csv
same rev.csv rev1.csv

# ---- a corpus: per text, per T; -j does not change the bytes --------------
check "corpus (--text-file, -j 2): per text the five T's rows, streamed jsonl"
C="analyze $GPT2 --text-file texts.txt --metrics entropy_mean,sink_mass"
"$CLI" $C --temperatures $TS --format csv -j 2 >corpus.csv 2>err || fail "exit: $(head -c 300 err)"
"$CLI" $C --temperatures $TS --format csv -j 1 >corpus1.csv 2>err || fail "exit: $(head -c 300 err)"
same corpus.csv corpus1.csv
# the single runs' rows, reordered per text then T, are the same bytes
: >expect.csv
for t in 0.25 0.5 1 2 4; do "$CLI" $C --temperature $t --format csv >"c$t.csv" || fail "T=$t"; done
head -n 1 c1.csv >expect.csv
for line in 0 1 2; do
    for t in 0.25 0.5 1 2 4; do
        awk -F, -v L=$line 'NR > 1 && $(NF-3) == L' "c$t.csv" >>expect.csv
    done
done
same corpus.csv expect.csv
check "corpus jsonl: records stream with their own temperature"
"$CLI" $C --temperatures 0.5,2 --format jsonl >c.jsonl 2>err || fail "exit: $(head -c 300 err)"
"$PY" - c.jsonl <<'PY' || fail "jsonl records"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
recs = [r for r in recs if "layer" in r]
ts = [(r["text"], r["temperature"]) for r in recs]
want = [(t, T) for t in (0, 1, 2) for T in (0.5, 2.0) for _ in range(16)]
assert ts == want, ts[:20]
assert all(r["normalizer"] == "softmax" for r in recs)
PY

# ---- --aggregate: one group per (T, head), as the single runs together ----
check "--aggregate groups by temperature (one row per T and head, not pooled)"
"$CLI" $C --temperatures 0.5,2 --aggregate --format csv >agg.csv 2>err || fail "exit: $(head -c 300 err)"
head -n 1 agg.csv | grep -q '^model,normalizer,temperature,layer,head,' || fail "header $(head -n 1 agg.csv)"
[ "$(tail -n +2 agg.csv | wc -l)" -eq 32 ] || fail "$(tail -n +2 agg.csv | wc -l) groups, want 2 x 16"
"$CLI" $C --temperatures 0.5,2 --format csv >two.csv 2>err
"$CLI" aggregate two.csv --format csv >agg2.csv 2>err || fail "aggregate: $(head -c 300 err)"
same agg.csv agg2.csv
check "--aggregate at T = 2 alone is the T = 2 group of the run over both"
"$CLI" $C --temperature 2 --aggregate --format csv >agg_one.csv 2>err || fail "exit: $(head -c 300 err)"
grep ',"softmax",2,' agg.csv >agg_t2.csv
tail -n +2 agg_one.csv >agg_one_rows.csv
same agg_t2.csv agg_one_rows.csv

# ---- --expect: the records in order, each with its temperature -------------
check "--expect passes on the same run and fails (3) with the T's swapped"
"$CLI" $C --temperatures 0.5,2 --format json -o g.json 2>err || fail "exit: $(head -c 300 err)"
"$PY" - g.json <<'PY' || fail "settings: the lens"
import json, sys
s = json.load(open(sys.argv[1]))["settings"]
assert s["normalizer"] == "softmax" and s["temperatures"] == [0.5, 2.0], s
assert "temperature" not in s
PY
"$CLI" $C --temperatures 0.5,2 --expect g.json >out 2>err; rc=$?
[ $rc -eq 0 ] || fail "same run: exit $rc $(head -c 300 err)"
"$CLI" $C --temperatures 2,0.5 --expect g.json >out 2>err; rc=$?
[ $rc -eq 3 ] && grep -q temperature err || fail "swapped: exit $rc $(head -c 300 err)"

# ---- rollout, similarity, matrix --scores ----------------------------------
check "rollout --temperatures = five --temperature runs"
as_singles r rollout "$GPT2" --text The_cat_sat --metrics entropy_mean,effective_rank --format csv
check "similarity --temperatures = five --temperature runs (pairs per T)"
as_singles s similarity "$GPT2" --text The_cat_sat --layers 0,1 --heads 0,1 --format csv
check "similarity over a corpus (-j 2): each T's distances averaged over the texts apart"
as_singles sc similarity "$GPT2" --text-file texts.txt --layers 0,1 --heads 0,1 -j 2 --format csv
check "matrix --scores --temperatures = five --temperature runs"
"$CLI" attention "$GPT2" --text The_cat_sat --precision f64 -o a.npy --scores sc.npy 2>err || fail "attention: $(head -c 300 err)"
as_singles m matrix --scores sc.npy --metrics entropy_mean,effective_rank --format csv
check "matrix --scores at T = 1 is attention's own A (f64 pass)"
"$CLI" matrix a.npy --metrics entropy_mean,effective_rank --format csv | cut -d, -f1-6 >mA.csv
awk -F, 'NR == 1 || $NF == 1' m.csv | cut -d, -f1-6 >m1only.csv
"$PY" - mA.csv m1only.csv <<'PY' || fail "T = 1 differs from A"
import sys, numpy as np
a, b = (np.genfromtxt(p, delimiter=",", skip_header=1) for p in sys.argv[1:3])
assert a.shape == b.shape and np.allclose(a, b, rtol=1e-12, atol=1e-14), (a, b)
PY

# ---- contributions under a lens ---------------------------------------------
check "contributions --temperatures = five --temperature runs (alti)"
as_singles k contributions "$GPT2" --text The_cat_sat --metrics entropy_mean,context_mixing --format csv
check "contributions --method norms under sparsemax = sparsemax A times the value norms"
W="--text The_cat_sat_on_the_mat --precision f64"
"$CLI" contributions "$GPT2" $W --method norms -o n_soft.npy >/dev/null 2>err || fail "norms: $(head -c 300 err)"
"$CLI" contributions "$GPT2" $W --method norms --normalizer sparsemax -o n_sp.npy >/dev/null 2>err ||
    fail "norms sparsemax: $(head -c 300 err)"
"$CLI" attention "$GPT2" $W -o a_soft.npy 2>err || fail "attention: $(head -c 300 err)"
"$CLI" attention "$GPT2" $W --normalizer sparsemax -o a_sp.npy 2>err || fail "attention sparsemax: $(head -c 300 err)"
"$PY" - <<'PY' || fail "N' != A' |f(x_j)|"
import numpy as np
N, A = np.load("n_soft.npy"), np.load("a_soft.npy")    # [L, H, n, n]
Ns, As = np.load("n_sp.npy"), np.load("a_sp.npy")
# the value norms |f_h(x_j)| from the model's own N = A |f(x_j)|: the last
# query row sees every key of a causal head, with A > 0 under softmax
vn = N[:, :, -1, :] / A[:, :, -1, :]
want = As * vn[:, :, None, :]
assert np.allclose(Ns, want, rtol=1e-12, atol=1e-12 * np.abs(N).max()), np.abs(Ns - want).max()
assert (As == 0).any() and np.abs(Ns - N).max() > 1e-3  # sparsemax zeroes keys: the lens acts
PY
check "contributions refuses --temperatures with -o and --mixing"
WANT="--temperature T"
"$CLI" contributions "$GPT2" --text x --temperatures 1,2 -o c.npy >out 2>err; rc=$?
[ $rc -eq 2 ] && grep -q -- "$WANT" err || fail "-o: exit $rc $(cat err)"
"$CLI" contributions "$GPT2" --text x --temperatures 1,2 --mixing m.npy >out 2>err; rc=$?
[ $rc -eq 2 ] && grep -q -- "$WANT" err || fail "--mixing: exit $rc $(cat err)"

# ---- usage errors -----------------------------------------------------------
# refused ARGS... : exit 2 with a message holding $WANT
refused() {
    "$CLI" "$@" >out 2>err; rc=$?
    [ $rc -eq 2 ] || fail "exit $rc, want 2: $*"
    grep -q -- "$WANT" err || fail "message $(cat err), want '$WANT'"
}
B="analyze $GPT2 --text x"
check "with --temperature";   WANT="give one of them";   refused $B --temperatures 1,2 --temperature 2
check "with sparsemax";       WANT="softmax only";       refused $B --temperatures 1,2 --normalizer sparsemax
check "T = 0";                WANT="finite numbers > 0"; refused $B --temperatures 1,0
check "T = inf";              WANT="finite numbers > 0"; refused $B --temperatures inf
check "empty item";           WANT="finite numbers > 0"; refused $B --temperatures 1,,2
check "trailing comma";       WANT="finite numbers > 0"; refused $B --temperatures 1,
check "repeated T";           WANT="given twice";        refused $B --temperatures 1,2,1
many=$(seq 1 65 | tr '\n' , | sed 's/,$//')
check "65 temperatures";      WANT="at most 64";         refused $B --temperatures "$many"
check "64 temperatures run"
"$CLI" $B --temperatures "$(seq 1 64 | tr '\n' , | sed 's/,$//')" --heads 0 --layers 0 --metrics entropy_mean --format csv >m64.csv 2>err || fail "exit: $(head -c 300 err)"
[ "$(tail -n +2 m64.csv | wc -l)" -eq 64 ] || fail "$(tail -n +2 m64.csv | wc -l) rows"
check "attention refuses (one array)";  WANT="--temperature T"; refused attention "$GPT2" --text x -o x.npy --temperatures 1,2
check "rollout -o refuses";             WANT="--temperature T"; refused rollout "$GPT2" --text x -o r.npy --temperatures 1,2
check "similarity -o refuses";          WANT="--temperature T"; refused similarity "$GPT2" --text x -o s.npy --temperatures 1,2
check "matrix without --scores";        WANT="need --scores";   refused matrix a.npy --temperatures 1,2

finish
