#!/bin/sh
# tests/cli/arrays.sh CLI — the arrays of `attention -o`, `--hidden` and
# `rollout -o` are streamed: written a layer at a time as the pass makes
# them (docs/cli.md, "Outputs"), with these guarantees:
#  - the bytes are NumPy's (np.save of the loaded array gives the same file),
#    and --layers/--heads select exactly the slices of the full array, at
#    both precisions, for a decoder and an encoder; a corpus's {i} files are
#    the single-text runs' files;
#  - standard output, /dev/fd/N into a pipe and a FIFO get the file's bytes;
#    a FIFO gets them as the layers come: a run that fails before layer 1
#    leaves its reader the header and layer 0, exactly;
#  - a run that fails mid-pass (a write refused with EFBIG; numerics.sh has
#    a float32 overflow) or is stopped by SIGTERM, SIGINT, SIGHUP or
#    SIGXFSZ, before or during the pass, leaves no file under the final name
#    and no temporary beside it.
# Run from the repository root. Exits non-zero if any check fails.

. "$(dirname "$0")/lib.sh"
ag_setup "$@"
BERT=$ROOT/tests/data/models/tiny-bert
need "$GPT2/config.json" "$BERT/config.json"
cd "$T" || exit 1
TXT="In the beginning God created the heaven and the earth, and the earth was without form."
LONG=$(yes word | head -n 200 | tr '\n' ' ') # 200 tokens: 5 MB of attention in tiny-gpt2

# launch.py LIMIT SIGNALS ARGS... : run ARGS (the CLI), with a file size
# limit of LIMIT bytes (0: none) and the signals of SIGNALS (a
# comma-separated list of NAME=ignore or NAME=default; sh sets SIGINT
# ignored in a background job, and a child cannot reset what its shell
# ignores) set so; SIGHUP, SIGINT and SIGTERM sent to it are passed on to
# the run (and SIGKILL 10 s later if it is still there). Its exit status is a shell's, 128 + N for a death by signal N,
# reported by Python so that the shell prints no "File size limit exceeded".
cat > launch.py <<'EOF'
import os, resource, signal, sys
limit, sigs, argv = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
pid = os.fork()
if pid == 0:
    if limit:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
    for item in filter(None, sigs.split(",")):
        name, how = item.split("=")
        signal.signal(getattr(signal, "SIG" + name), signal.SIG_IGN if how == "ignore" else signal.SIG_DFL)
    os.execv(argv[0], argv)
def forward(n, frame):
    os.kill(pid, n)
    signal.alarm(10) # a run that survives it is killed: the check fails, no hang
signal.signal(signal.SIGALRM, lambda n, f: os.kill(pid, signal.SIGKILL))
for s in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM):
    signal.signal(s, forward)
_, st = os.waitpid(pid, 0)
sys.exit(128 + os.WTERMSIG(st) if os.WIFSIGNALED(st) else os.WEXITSTATUS(st))
EOF

# nothing_left DIR NAME... : none of the NAMEs in DIR, and no temporary
nothing_left() {
    dir=$1
    shift
    for f in "$@"; do [ -e "$dir/$f" ] && fail "$dir/$f was written"; done
    left=$(find "$dir" -name '*.tmp*' | head -n 3)
    [ -z "$left" ] || fail "temporaries left: $left"
}

# wait_for CMD... : poll (10 s at most) until CMD succeeds; 1 if it never does
wait_for() {
    k=0
    until "$@"; do
        k=$((k + 1))
        [ $k -gt 100 ] && return 1
        sleep 0.1
    done
}
# stop SIG PID: send SIG to the background run PID and reap it; rc is its
# exit status. A watchdog kills it after 10 s, so a run that survives SIG
# fails the check instead of hanging the script.
stop() {
    kill -"$1" "$2"
    (sleep 10; kill -KILL "$2" 2>/dev/null) &
    dog=$!
    wait "$2" 2>/dev/null
    rc=$?
    kill "$dog" 2>/dev/null
}
has_temp() { [ -n "$(find "$1" -name '*.tmp*' | head -n 1)" ]; }
size_at_least() { [ -f "$1" ] && [ "$(wc -c <"$1")" -ge "$2" ]; }

# ---- the bytes: NumPy's, selections as slices --------------------------------
for p in f32 f64; do
    runj a_$p attention "$GPT2" --text "$TXT" --precision $p -o A_$p.npy --hidden H_$p.npy
    runj s_$p attention "$GPT2" --text "$TXT" --precision $p --layers 1,3 --heads 0,2 \
        -o S_$p.npy --hidden SH_$p.npy
    runj o_$p attention "$GPT2" --text "$TXT" --precision $p --layers 2 --heads 3 -o O_$p.npy
    runj b_$p attention "$BERT" --text "$TXT" --precision $p --heads 1 -o B_$p.npy --hidden BH_$p.npy
    runj bf_$p attention "$BERT" --text "$TXT" --precision $p -o BF_$p.npy
    runj r_$p rollout "$GPT2" --text "$TXT" --precision $p -o R_$p.npy --metrics sigma_max
    runj rs_$p rollout "$GPT2" --text "$TXT" --precision $p --layers 0,2 -o RS_$p.npy \
        --metrics sigma_max
done
PYSCRIPT='
import io
def same_bits(x, y):
    return x.shape == y.shape and np.array_equal(x.view(np.uint64), y.view(np.uint64))
for p in ("f32", "f64"):
    for name in ("A", "H", "S", "SH", "O", "B", "BH", "BF", "R", "RS"):
        path = "%s_%s.npy" % (name, p)
        raw = open(path, "rb").read()
        buf = io.BytesIO()
        np.save(buf, np.load(path))
        assert raw == buf.getvalue(), path + ": not the bytes np.save writes"
    A, H, S, SH = (np.load("%s_%s.npy" % (k, p)) for k in ("A", "H", "S", "SH"))
    n = A.shape[2]
    assert A.shape == (4, 4, n, n) and H.shape == (5, n, 128) and n > 10, (A.shape, H.shape)
    assert np.allclose(A.sum(axis=3), 1.0, atol=1e-12), "rows are not distributions"
    assert same_bits(S, A[[1, 3]][:, [0, 2]]), p + ": --layers 1,3 --heads 0,2 is not the slice"
    assert same_bits(np.load("O_%s.npy" % p), A[2:3, 3:4]), p + ": --layers 2 --heads 3"
    assert same_bits(SH, H), p + ": --hidden depends on the selection"
    B, BF = np.load("B_%s.npy" % p), np.load("BF_%s.npy" % p)
    assert same_bits(B, BF[:, 1:2]), p + ": bert --heads 1 is not the slice"
    R, RS = np.load("R_%s.npy" % p), np.load("RS_%s.npy" % p)
    assert R.shape == (4, n, n) and same_bits(RS, R[[0, 2]]), p + ": rollout --layers 0,2"
'
pycheck "np.save's bytes; selections are slices of the full arrays (f32, f64, gpt2, bert, rollout)"

printf '%s\n\nthe cat sat\n' "$TXT" > corpus.txt
runj corpus attention "$GPT2" --text-file corpus.txt -o C_{i}.npy --hidden CH_{i}.npy --layers 0,3
runj one attention "$GPT2" --text "the cat sat" -o one.npy --hidden oneh.npy --layers 0,3
"$CLI" attention "$GPT2" --text "$TXT" --layers 0,3 -o first.npy --hidden firsth.npy
check "C_0 is the first line's run" cmp -s C_0.npy first.npy
check "CH_0 is the first line's hidden states" cmp -s CH_0.npy firsth.npy
check "C_2 is the third line's run" cmp -s C_2.npy one.npy
check "CH_2 is the third line's hidden states" cmp -s CH_2.npy oneh.npy
check "no file for the blank line" test ! -e C_1.npy

# ---- in place: standard output, a pipe, a FIFO -----------------------------------
"$CLI" attention "$GPT2" --text "$TXT" -o - > dash.npy
check "-o - writes the file's bytes" cmp -s dash.npy A_f32.npy
"$CLI" attention "$GPT2" --text "$TXT" -o /dev/fd/3 --hidden piped_h.npy 3>&1 | cat > piped.npy
check "-o /dev/fd/3 into a pipe" cmp -s piped.npy A_f32.npy
check "--hidden beside a piped -o" cmp -s piped_h.npy H_f32.npy
mkfifo fifo
timeout 20 cat fifo > from_fifo &
"$CLI" attention "$GPT2" --text "$TXT" -o fifo 2>err
rc=$?
wait
check "-o FIFO: exit 0" test $rc -eq 0
check "-o FIFO: the file's bytes" cmp -s from_fifo A_f32.npy
timeout 20 cat fifo > roll_fifo &
"$CLI" rollout "$GPT2" --text "$TXT" -o fifo --metrics sigma_max >/dev/null 2>err
rc=$?
wait
check "rollout -o FIFO: the file's bytes" test $rc -eq 0 -a "$(cmp roll_fifo R_f32.npy && echo y)" = y

# The FIFO is written as the layers come. With a file size limit of 100 KiB
# (SIGXFSZ ignored), --hidden's second state ((60, 128) doubles after one
# of 61 KB) fails with EFBIG — after hidden state 0 and layer 0, before
# layer 1 — so the FIFO's reader gets the header and layer 0 (4 heads of
# 60 x 60), then the end; the limit does not apply to the FIFO.
IDS=$(seq 1 60 | paste -sd, -)
runj ids60 attention "$GPT2" --tokens "$IDS" -o ids60.npy
mkdir o
timeout 20 cat fifo > cut.npy &
"$PY" launch.py 102400 XFSZ=ignore "$CLI" attention "$GPT2" --tokens "$IDS" -o fifo --hidden o/H.npy \
    >out 2>err
rc=$?
wait
check "EFBIG on --hidden mid-pass, -o FIFO: exit 1, one line naming the file"
[ $rc -eq 1 ] || fail "exit $rc"
[ "$(wc -l <err)" -eq 1 ] && grep -q "o/H.npy: cannot write: File too large" err ||
    fail "stderr: $(head -c 300 err)"
nothing_left o H.npy
PYSCRIPT='
raw, full = open("cut.npy", "rb").read(), open("ids60.npy", "rb").read()
layer = 4 * 60 * 60 * 8
head = len(full) - 4 * layer
assert len(raw) == head + layer, "%d bytes, expected the header and layer 0" % len(raw)
assert raw == full[:head + layer], "not the header and layer 0 of the whole file"
'
pycheck "the FIFO's reader got the header and layer 0, then the end"

# ---- failures mid-pass leave nothing ---------------------------------------------
# The arrays are 5 MB: with SIGXFSZ ignored the write that crosses the limit
# fails (EFBIG) in the middle of the pass; by default SIGXFSZ kills the run.
rm -rf o && mkdir o
"$PY" launch.py 102400 XFSZ=ignore "$CLI" attention "$GPT2" --text "$LONG" -o o/A.npy --hidden o/H.npy \
    >out 2>err
rc=$?
check "EFBIG mid-pass: exit 1, one line naming the file, no file, no temporary"
[ $rc -eq 1 ] || fail "exit $rc"
[ "$(wc -l <err)" -eq 1 ] && grep -Eq "o/[AH].npy: cannot write: File too large" err ||
    fail "stderr: $(head -c 300 err)"
nothing_left o A.npy H.npy
"$PY" launch.py 102400 XFSZ=ignore "$CLI" rollout "$GPT2" --text "$LONG" -o o/R.npy >out 2>err
rc=$?
check "rollout, EFBIG mid-pass: exit 1, no file, no temporary, no records"
[ $rc -eq 1 ] && grep -q "o/R.npy: cannot write: File too large" err || fail "exit $rc: $(head -c 300 err)"
[ -s out ] && fail "records written"
nothing_left o R.npy
"$PY" launch.py 102400 XFSZ=default "$CLI" attention "$GPT2" --text "$LONG" -o o/A.npy --hidden o/H.npy \
    >out 2>err
rc=$?
check "SIGXFSZ mid-pass: killed by it, no file, no temporary"
[ $rc -eq 153 ] || fail "exit $rc, expected 153 (SIGXFSZ)"
nothing_left o A.npy H.npy

# ---- signals: the temporaries go ---------------------------------------------------
# Stopped before the pass: -o's temporary exists, --hidden's FIFO waits for
# a reader. SIGINT is reset to its default in the run (launch.py).
for sig in TERM:143 INT:130 HUP:129; do
    rm -rf o && mkdir o && mkfifo o/hfifo
    "$PY" launch.py 0 INT=default "$CLI" attention "$GPT2" --text "$TXT" -o o/A.npy --hidden o/hfifo \
        >out 2>err &
    pid=$!
    check "SIG${sig%:*} while a FIFO waits for its reader: the temporary goes"
    wait_for has_temp o || fail "no temporary appeared"
    stop "${sig%:*}" $pid
    [ $rc -eq "${sig#*:}" ] || fail "exit $rc, expected ${sig#*:}"
    nothing_left o A.npy
done

# Stopped in the middle of the pass: the reader of -o's FIFO takes 4 KiB
# and stops reading, so the pass waits on a full pipe with --hidden's
# temporary written up to its layer.
rm -rf o && mkdir o && mkfifo o/afifo
(head -c 4096 > first.bin; exec sleep 30) < o/afifo &
reader=$!
"$CLI" attention "$GPT2" --text "$LONG" -o o/afifo --hidden o/H.npy >out 2>err &
pid=$!
check "SIGTERM in the middle of the pass: no file, no temporary"
wait_for size_at_least first.bin 4096 || fail "the reader got nothing"
wait_for has_temp o || fail "no temporary appeared"
kill -0 $pid 2>/dev/null || fail "the run ended before the reader read it all"
stop TERM $pid
[ $rc -eq 143 ] || fail "exit $rc, expected 143 (SIGTERM)"
nothing_left o H.npy
kill $reader 2>/dev/null
wait $reader 2>/dev/null
check "the reader got the header first" test "$(head -c 6 first.bin | tail -c 5)" = NUMPY

finish
