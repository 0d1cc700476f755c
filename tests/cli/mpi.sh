#!/bin/sh
# tests/cli/mpi.sh CLI — attngeom-mpi (docs/scaling.md) against attngeom: on
# 1, 2 and 3 ranks every split command writes the one-process run's bytes
# (standard output, -o files, stderr, exit status) — analyze (jsonl
# streaming, json with its settings, the aligned table, --aggregate,
# --aggregate --by text, --skip-long and --max-tokens with their warnings,
# -j 2 per rank, --tokens-file - from standard input), residual, rollout,
# contributions --method flow and norms (a corpus, --aggregate),
# similarity (and its -o S.npy), matrix over a 4-D .npy, weights (all layers,
# --layers, --heads; an encoder-decoder pair, stacks of different head
# counts); a corpus of unequal lengths with a blank line, so the
# texts are split by token count and the records still come in input order.
# Failures: a bad line (a token id outside the vocabulary) gives the one
# process's single stderr line and exit 1 on every rank, nothing under -o and
# an existing -o untouched; a rank that cannot read its input stops every
# rank with its one line; a rank killed with SIGKILL ends the job non-zero
# within seconds. Every mpirun runs under `timeout 60`.
# Skipped, with a note, when mpirun is not installed (scripts/install-deps.sh
# installs openmpi-bin). Run from the repository root.

. "$(dirname "$0")/lib.sh"
ag_setup "$@"
MPI=$(dirname "$CLI")/attngeom-mpi
if ! command -v mpirun >/dev/null 2>&1; then
    echo "mpi.sh: skipped: mpirun not found (scripts/install-deps.sh installs openmpi-bin)"
    exit 0
fi
[ -x "$MPI" ] || { echo "mpi.sh: $MPI not built (make mpi)" >&2; exit 1; }
need "$GPT2/config.json"
cd "$T" || exit 1
# Under make sanitize: Open MPI's own allocations (its libraries and the
# components it dlopens) are reported as leaks at exit, so leak detection
# is off for these runs; ASan's other checks and UBSan stay on (attngeom's
# own leaks are caught by every other script).
[ -n "${AG_SANITIZE:-}" ] && export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"
# -q: mpirun's own report of a failed rank left out; --oversubscribe: 3
# ranks on a 2-core machine; as root Open MPI wants --allow-run-as-root.
MPIRUN="mpirun -q --oversubscribe"
[ "$(id -u)" -eq 0 ] && MPIRUN="$MPIRUN --allow-run-as-root"

"$PY" - <<'EOF' || { echo "mpi.sh: could not make test files" >&2; exit 1; }
import numpy as np
rng = np.random.default_rng(14)
words = ("the of and to in a is that for it as was with be by on not he this are or his "
         "from at which but have an they you were her she there one all we their").split()
lines = []
for n in [40, 3, 90, 7, 0, 60, 12, 2, 75, 25, 5, 33]:  # unequal; one blank line
    lines.append(" ".join(rng.choice(words, n)))
open("corpus.txt", "w").write("\n".join(lines) + "\n")
# a text longer than tiny-gpt2's 256 positions, for --skip-long and --max-tokens
open("long.txt", "w").write("\n".join(lines[:3] + [" ".join(rng.choice(words, 400))] + lines[3:6]) + "\n")
ids = [[int(v) for v in rng.integers(0, 50257, n)] for n in [9, 30, 4, 17, 50, 2, 11]]
open("ids.txt", "w").write("".join(",".join(map(str, l)) + "\n" for l in ids))
bad = [list(l) for l in ids]
bad[4][3] = 99999                                 # outside the vocabulary (50257)
open("bad.txt", "w").write("".join(",".join(map(str, l)) + "\n" for l in bad))
def softmax(S):
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    return E / E.sum(axis=-1, keepdims=True)
np.save("attn.npy", softmax(2 * rng.normal(size=(3, 4, 12, 12))))  # [L, H, n, n]
EOF

# mrun K NAME ARGS... : attngeom-mpi on K ranks, stdout, stderr and status
# to $T/NAME.K, NAME.K.err, NAME.K.rc (standard input from $STDIN)
mrun() {
    k=$1 name=$2
    shift 2
    timeout 60 $MPIRUN -n "$k" "$MPI" "$@" >"$name.$k" 2>"$name.$k.err" <"${STDIN:-/dev/null}"
    echo $? >"$name.$k.rc"
}

# same NAME ARGS... : attngeom ARGS (exit $RC, default 0), then attngeom-mpi
# ARGS on 1, 2 and 3 ranks: the same stdout, stderr and status (and with OUT
# set, the same bytes in the file $OUT, which every run writes anew).
same() {
    name=$1
    shift
    [ -n "${OUT:-}" ] && rm -f "$OUT"
    "$CLI" "$@" >"$name.s" 2>"$name.s.err" <"${STDIN:-/dev/null}"
    echo $? >"$name.s.rc"
    [ -n "${OUT:-}" ] && mv "$OUT" "$name.s.out"
    for k in ${RANKS:-1 2 3}; do
        check "$name: $k rank(s)"
        mrun "$k" "$name" "$@"
        # progress lines: the same counts, their own rates and times
        for f in "$name.s.err" "$name.$k.err"; do
            sed 's/, [0-9.]* texts\/s, .*/, RATE/' "$f" >"$f.n" && mv "$f.n" "$f"
        done
        for part in "" .err .rc; do
            cmp -s "$name.s$part" "$name.$k$part" ||
                fail "$name.$k$part differs from one process's: $(diff "$name.s$part" "$name.$k$part" | head -c 300)"
        done
        if [ -n "${OUT:-}" ]; then
            cmp -s "$name.s.out" "$OUT" || fail "$OUT differs from one process's"
            rm -f "$OUT"
        fi
    done
    [ "$(cat "$name.s.rc")" = "${RC:-0}" ] || { check "$name: one process"; fail "exit $(cat "$name.s.rc"): $(head -c 300 "$name.s.err")"; }
}

same analyze-jsonl analyze "$GPT2" --text-file corpus.txt --format jsonl
same analyze-table analyze "$GPT2" --text-file corpus.txt
OUT=o.json same analyze-json analyze "$GPT2" --text-file corpus.txt --format json -o o.json
same analyze-agg analyze "$GPT2" --text-file corpus.txt --aggregate --format json
same analyze-agg-table analyze "$GPT2" --text-file corpus.txt --aggregate
same analyze-agg-text analyze "$GPT2" --text-file corpus.txt --aggregate --by text --format csv
same analyze-skip analyze "$GPT2" --text-file long.txt --skip-long --format jsonl --progress
same analyze-cut analyze "$GPT2" --text-file long.txt --max-tokens 100 --format csv --layers 1
same analyze-j2 analyze "$GPT2" --tokens-file ids.txt --format jsonl -j 2 --heads 0,1
STDIN=ids.txt same analyze-stdin analyze "$GPT2" --tokens-file - --format json
same residual residual "$GPT2" --text-file corpus.txt --format jsonl
same residual-agg residual "$GPT2" --text-file corpus.txt --aggregate --format json
same rollout rollout "$GPT2" --tokens-file ids.txt --format csv
same contributions-flow contributions "$GPT2" --text-file corpus.txt --method flow --flow-max-tokens 90 --format jsonl
same contributions-norms contributions "$GPT2" --tokens-file ids.txt --method norms --heads 1,2 --format csv
same contributions-flow-agg contributions "$GPT2" --tokens-file ids.txt --method flow --aggregate --format json
OUT=R.npy same rollout-npy rollout "$GPT2" --text "In the beginning" -o R.npy --format json
OUT=S.npy same similarity similarity "$GPT2" --text-file corpus.txt --format json -o S.npy
same matrix matrix attn.npy --format jsonl --metrics all
same matrix-agg matrix attn.npy --aggregate --format json
same weights weights "$GPT2" --format json
same weights-layers weights "$GPT2" --layers 1 --heads 0,1 --format csv
same weights-agg weights "$GPT2" --aggregate --by head --format json
# an encoder-decoder pair's weights: the encoder's layer tasks, then each
# decoder layer's self- and cross-attention tasks; stacks of different head
# counts (bart read with 2 decoder heads): the records still in task order
AR=$ROOT/tests/data/models/arch
mkdir bart2 && ln -s "$AR/bart/model.safetensors" bart2/ &&
    sed 's/"decoder_attention_heads": 4/"decoder_attention_heads": 2/' "$AR/bart/config.json" >bart2/config.json
grep -q '"decoder_attention_heads": 2' bart2/config.json || fail "bart2: the head count was not changed"
same weights-pair weights "$AR/t5" --format json
same weights-pair-heads weights bart2 --format csv --metrics qk_sigma_max

# --aggregate: the one process's numbers (to 1e-12; the bytes above are equal)
PYSCRIPT='
s, m = records(a[0]), records(a[1])
assert len(s) == len(m) and len(s) > 0, (len(s), len(m))
for x, y in zip(s, m):
    assert list(x) == list(y)
    for k in x:
        if isinstance(x[k], float):
            assert abs(x[k] - y[k]) <= 1e-12 * max(1.0, abs(x[k])), (k, x[k], y[k])
        else:
            assert x[k] == y[k], (k, x[k], y[k])
'
pycheck "aggregate of 3 ranks within 1e-12" analyze-agg.s analyze-agg.3
pycheck "weights of 2 ranks within 1e-12" weights.s weights.2

# ---- failures ----

# a bad line (text 5 of 7): the one process's single line, exit 1, nothing
# under -o, an -o that exists untouched
"$CLI" analyze "$GPT2" --tokens-file bad.txt --format jsonl >bad.s 2>bad.s.err
for k in 1 2 3; do
    check "bad line: $k rank(s)"
    rm -f o.jsonl
    start=$(date +%s)
    mrun "$k" bad analyze "$GPT2" --tokens-file bad.txt --format jsonl -o o.jsonl
    [ "$(cat "bad.$k.rc")" = 1 ] || fail "exit $(cat "bad.$k.rc"), expected 1"
    [ "$(wc -l <"bad.$k.err")" = 1 ] || fail "stderr: $(cat "bad.$k.err")"
    cmp -s bad.s.err "bad.$k.err" || fail "not the one process's line: $(cat "bad.$k.err")"
    grep -q "line 5: token id 99999" "bad.$k.err" || fail "does not name line 5: $(cat "bad.$k.err")"
    [ -e o.jsonl ] && fail "-o o.jsonl written"
    [ "$(ls -A | grep -c 'o\.jsonl\.tmp')" = 0 ] || fail "temporaries left: $(ls -A | grep tmp)"
    [ $(($(date +%s) - start)) -le 30 ] || fail "took over 30 s"
    echo keep >kept.csv
    mrun "$k" bad-kept analyze "$GPT2" --tokens-file bad.txt --format csv -o kept.csv
    [ "$(cat "bad-kept.$k.rc")" = 1 ] && [ "$(cat kept.csv)" = keep ] || fail "-o kept.csv replaced"
done

# every rank exits 1 (each rank's status written by a wrapper)
check "bad line: status 1 on every rank"
rm -f rank.*
timeout 60 $MPIRUN -n 3 sh -c '"$0" "$@" 2>/dev/null; echo $? >"rank.$OMPI_COMM_WORLD_RANK"' \
    "$MPI" analyze "$GPT2" --tokens-file bad.txt --format jsonl >/dev/null 2>&1
for r in 0 1 2; do
    [ "$(cat "rank.$r" 2>/dev/null)" = 1 ] || fail "rank $r: status '$(cat "rank.$r" 2>/dev/null)'"
done

# a rank whose input is missing (mpirun's MPMD form: rank 1 alone is given
# another file): its one line at rank 0, exit 1, no -o
check "a rank's unreadable input"
rm -f o.jsonl
A="$MPI analyze $GPT2 --format jsonl -o o.jsonl"
timeout 60 $MPIRUN -n 1 $A --text-file corpus.txt : -n 1 $A --text-file gone.txt : \
    -n 1 $A --text-file corpus.txt >gone.out 2>gone.err
rc=$?
[ $rc = 1 ] || fail "exit $rc"
[ "$(cat gone.err)" = "attngeom: gone.txt: No such file or directory" ] || fail "stderr: $(cat gone.err)"
[ -s gone.out ] && fail "stdout: $(head -c 200 gone.out)"
[ -e o.jsonl ] && fail "-o o.jsonl written"

# usage: the one process's line and status 2; a command it does not split
RC=2 same usage analyze "$GPT2" --text-file corpus.txt --bogus
check "a command attngeom-mpi does not run"
mrun 2 attention attention "$GPT2" --text hi -o a.npy
[ "$(cat attention.2.rc)" = 2 ] && [ "$(wc -l <attention.2.err)" = 1 ] ||
    fail "exit $(cat attention.2.rc): $(cat attention.2.err)"

# a rank killed with SIGKILL (rank 1, then rank 0) while the job runs: a
# long corpus keeps it busy; mpirun ends it non-zero within seconds
"$PY" -c '
import random
random.seed(5)
w = open("corpus.txt").read().split()
open("big.txt", "w").write("".join(" ".join(random.choice(w) for _ in range(150)) + "\n" for _ in range(3000)))'
for victim in 1 0; do
    check "rank $victim killed"
    timeout 60 $MPIRUN -n 2 "$MPI" analyze "$GPT2" --text-file big.txt --format jsonl -o big.jsonl \
        >kill.out 2>kill.err &
    job=$!
    pid=
    for _ in $(seq 100); do # up to 20 s for the ranks to start
        for p in $(pgrep -f "$MPI analyze"); do # this run's ranks only
            tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$victim" && pid=$p
        done
        [ -n "$pid" ] && break
        sleep 0.2
    done
    if [ -z "$pid" ]; then
        fail "rank $victim never started"
        wait $job
        continue
    fi
    sleep 1
    kill -9 "$pid"
    start=$(date +%s)
    wait $job
    rc=$?
    took=$(($(date +%s) - start))
    [ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "exit $rc after the kill"
    [ $took -le 15 ] || fail "the job took $took s to end"
    [ -e big.jsonl ] && fail "-o big.jsonl written"
done

finish
