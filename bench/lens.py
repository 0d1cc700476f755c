#!/usr/bin/python3
"""bench/lens.py — what family K (`lens`, docs/metrics.md) adds to `analyze`
at n = 512 (issue 28's target: at most 25 % over the default metrics).

Usage: /usr/bin/python3 bench/lens.py path/to/attngeom

A GPT-2-small-shaped model cut to 2 layers and 512 positions (12 heads,
d_h = 64, random weights: bench/peers.py's write_gpt2_small), one input of
512 random ids; `analyze` with the default metrics and with the default
families plus lens (`--metrics spectrum,attention,geometry,lens`, the same
keys + the 8 of K), run alternately BENCH_REPS times (default 3) on one
thread (-j 1, pinned as bench/peers.py's per-core runs: the per-head cost,
least disturbed by a shared machine),
with bench/peers.py's tuned environment (OpenBLAS's core type). The table
gives the best and median wall time of each and the added share of
the best runs, and "MISSED" past the target. Exits 1 when the two outputs
differ in anything but K's columns.
"""
import os
import resource
import shutil
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import peers  # noqa: E402

N = 512
TARGET = 0.25
SHAPE = dict(peers.GPT2_SMALL, n_layer=2, n_positions=N, n_ctx=N)
LENS = ["score_std", "sparsemax_support", "entmax_support", "sparsemax_js",
        "score_effective_rank", "score_numerical_rank", "rank_lift", "score_asymmetry"]


def run(cli, model, tokens, out, metrics, tmp):
    """One run; its wall time replaced by its CPU time (user + system, from
    the children's rusage): on a shared machine the CPU time of a one-thread
    run is what it costs, its wall time also what the others take."""
    argv = [cli, "analyze", model, "--tokens-file", tokens, "--format", "csv",
            "--no-progress", "-j", "1"] + (["--metrics", metrics] if metrics else [])
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = peers.run_measured(argv, out, os.path.join(tmp, "stderr.txt"), peers.MODES[0])
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    r.wall = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return r


def same_keys(default_csv, lens_csv):
    """The lens run's records are the default's plus K's columns."""
    a, b = peers.read_csv(default_csv), peers.read_csv(lens_csv)
    if len(a) != len(b) or set(b[0]) - set(a[0]) != set(LENS):
        return "columns differ: %s" % sorted(set(b[0]) ^ set(a[0]))
    for ra, rb in zip(a, b):
        if any(ra[k] != rb[k] for k in ra):
            return "a default key differs with lens selected (layer %s head %s)" % (
                ra["layer"], ra["head"])
    return None


def main():
    if len(sys.argv) != 2:
        print("usage: lens.py path/to/attngeom", file=sys.stderr)
        return 2
    cli = os.path.abspath(sys.argv[1])
    reps = peers.env_int("BENCH_REPS", 3)
    for line in peers.tune_env():  # the BLAS kernels bench/peers.py runs with
        peers.say(line)
    tmp = tempfile.mkdtemp(prefix="ag_bench_lens.")
    try:
        rng = np.random.default_rng(peers.SEED)
        model = os.path.join(tmp, "gpt2-2layer-512")
        peers.write_gpt2_small(model, rng, SHAPE)
        tokens = os.path.join(tmp, "tokens.txt")
        with open(tokens, "w") as f:
            f.write(",".join(map(str, rng.integers(0, SHAPE["vocab_size"], size=N))) + "\n")
        outs = [os.path.join(tmp, "default.csv"), os.path.join(tmp, "lens.csv")]
        base, lens = peers.Series(), peers.Series()
        for rep in range(reps):  # alternating: a shared machine disturbs both alike
            base.add(run(cli, model, tokens, outs[0], None, tmp))
            lens.add(run(cli, model, tokens, outs[1], "spectrum,attention,geometry,lens", tmp))
            peers.say("analyze n=%d rep %d/%d: default %.2f s, default + lens %.2f s CPU"
                      % (N, rep + 1, reps, base.runs[-1].wall, lens.runs[-1].wall))
        problem = same_keys(*outs)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    best = [min(r.wall for r in s.runs) for s in (base, lens)]
    added = best[1] / best[0] - 1
    print("%-46s %-10s %-10s" % ("analyze, n = %d, 2 layers x 12 heads, -j 1, CPU" % N, "best",
                                  "median"))
    print("%-46s %-10s %-10s" % ("default metrics", "%.2f s" % best[0], "%.2f s" % base.wall))
    print("%-46s %-10s %-10s" % ("default + lens", "%.2f s" % best[1], "%.2f s" % lens.wall))
    print("lens adds %.1f %% (target <= %.0f %%): %s"
          % (100 * added, 100 * TARGET, "ok" if added <= TARGET else "MISSED"))
    if problem:
        print("lens bench: " + problem, file=sys.stderr)
    return 1 if problem else 0  # a missed target is printed, as bench/peers.py's


if __name__ == "__main__":
    sys.exit(main())
