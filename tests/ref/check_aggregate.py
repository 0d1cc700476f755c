#!/usr/bin/python3
"""Check `attngeom aggregate`, `--aggregate` and `attngeom compare` against an
independent numpy/scipy computation on records attngeom wrote for a corpus.

Usage: /usr/bin/python3 tests/ref/check_aggregate.py path/to/attngeom

Records: `analyze models/tiny-gpt2 --text-file CORPUS` (the 14 sentences
below, one per line) written as JSON, JSONL, CSV and TSV; `residual` and
`rollout` on the same corpus; `weights` of tiny-gpt2 and tiny-bert; `matrix`
of examples/tiny_gpt2_attention.npy.

Reference, per group (model/layer/head as present, never text) and per key
K (every key but the group keys and text; booleans as 0/1, nulls dropped),
over the unit means (the unit: the record's text, or the record itself when
it has none; the mean of a unit's non-null values first; docs/metrics.md):
  K = numpy mean, K_std = numpy std(ddof=1), K_n = units, and the Student-t
  interval K ± q·K_std/sqrt(K_n) with q the (1+level)/2 quantile of t with
  K_n − 1 degrees of freedom, computed as sqrt(nu(1−x)/x),
  x = scipy.special.betaincinv(nu/2, 1/2, 1 − level) (accurate to ~1e-12);
  K_std and the interval null when K_n < 2, K null when K_n = 0; n = records,
  n_units = units, unit = "text" or "record".
Compared to 1e-9 relative (exact zeros exactly). scipy.stats.t.interval is
checked too, with its own error allowed: scipy 1.10's t.ppf (cephes
stdtrit) is off by up to 4.6e-9 relative (e.g. 4.302652729911275 for
nu = 2, p = 0.975, where the closed form gives 4.302652729749464), so the
bounds may differ from it by 5e-9 times the half-width.

Also: every input format and `analyze --aggregate` give the same table; the
aggregated records of three shards (in three formats), aggregated again,
and the per-text records of the shards read together, equal the whole to
1e-12 relative; --by layer, --by '' (pooled) and --ci 0.9; the --aggregate of
residual, rollout, weights and matrix equals `aggregate` of their records.

compare: weights of tiny-bert vs tiny-gpt2 (pooled) and analyze records of
two halves of the corpus (--by layer,head): t and p against
scipy.stats.ttest_ind(equal_var=False) to 1e-6 relative, df and the interval
against the Welch–Satterthwaite formulas (1e-9); p_perm (20000
relabellings) within 6 binomial standard deviations of the exact
permutation p, enumerated over all C(10, 5) = 252 relabellings of 5 + 5
records; the same seed gives the same p_perm.

Prints the worst errors and exits 1 on any failure.
"""
import csv
import itertools
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
from scipy import special, stats

CORPUS = [
    "The cat sat on the mat.",
    "A quick brown fox jumps over the lazy dog.",
    "In the beginning was the word.",
    "Colourless green ideas sleep furiously.",
    "She sells sea shells by the sea shore.",
    "Time flies like an arrow; fruit flies like a banana.",
    "It was the best of times, it was the worst of times.",
    "All happy families are alike.",
    "Call me Ishmael.",
    "The sky above the port was the colour of television.",
    "Many years later, as he faced the firing squad, he remembered.",
    "Whereof one cannot speak, thereof one must be silent.",
    "To be or not to be, that is the question.",
    "A journey of a thousand miles begins with a single step.",
]
IDENT = ("model", "layer", "head", "layer_a", "head_a", "layer_b", "head_b", "metric")
FAILS = []
WORST = {}


def run(cli, args, stdin=None):
    p = subprocess.run([cli] + args, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        raise SystemExit("attngeom %s: exit %d: %s" % (" ".join(args), p.returncode,
                                                        p.stderr.decode(errors="replace")))
    return p.stdout.decode()


def records(cli, args):
    return json.loads(run(cli, args + ["--format", "json"]))["records"]


def fail(msg):
    FAILS.append(msg)
    if len(FAILS) <= 20:
        print("FAIL", msg)


def close(what, got, exp, rtol, slack=0.0):
    """|got - exp| <= rtol |exp| + slack; nulls must match."""
    if exp is None or got is None:
        if exp is not got:
            fail("%s: got %r, expected %r" % (what, got, exp))
        return
    err = abs(got - exp)
    rel = err / abs(exp) if exp else (0.0 if err == 0 else math.inf)
    key = what.split(":")[0]
    WORST[key] = max(WORST.get(key, 0.0), rel)
    if err > rtol * abs(exp) + slack:
        fail("%s: got %.17g, expected %.17g (rel %.3g)" % (what, got, exp, rel))


def value(v):
    if v is None or v == "" or v == "null":
        return None
    if v is True or v == "true":
        return 1.0
    if v is False or v == "false":
        return 0.0
    return float(v)


def t_quantile(level, nu):
    x = special.betaincinv(nu / 2.0, 0.5, 1.0 - level)
    return math.sqrt(nu * (1.0 - x) / x)


def reference(recs, by=None, level=0.95):
    """Groups in first-appearance order: (keys dict, n, {K: values})."""
    if by is None:
        by = [k for k in IDENT if any(k in r for r in recs)]
    groups = {}
    for i, r in enumerate(recs):
        gk = tuple(r.get(k) for k in by)
        g = groups.setdefault(gk, ({k: r.get(k) for k in by}, [], {}, {}))
        g[1].append(r)
        unit = ("text", r["text"]) if "text" in r else ("record", i)
        g[3][unit] = True
        for k, v in r.items():
            if k in by or k in IDENT or k == "text":
                continue
            units = g[2].setdefault(k, {})
            if value(v) is not None:
                units.setdefault(unit, []).append(value(v))
    out = []
    for keys, rs, per_unit, all_units in groups.values():
        rec = dict(keys)
        rec["unit"] = "text" if any("text" in r for r in recs) else "record"
        rec["n"] = len(rs)
        rec["n_units"] = len(all_units)
        metrics = {k: [float(np.mean(v)) for v in us.values()] for k, us in per_unit.items()}
        for k, vals in metrics.items():
            v = np.array(vals)
            n = len(v)
            rec[k] = float(v.mean()) if n else None
            if n >= 2:
                sd = float(v.std(ddof=1))
                half = t_quantile(level, n - 1) * sd / math.sqrt(n)
                rec[k + "_std"], rec[k + "_ci_low"], rec[k + "_ci_high"] = sd, rec[k] - half, rec[k] + half
            else:
                rec[k + "_std"] = rec[k + "_ci_low"] = rec[k + "_ci_high"] = None
            rec[k + "_n"] = n
        out.append((rec, metrics))
    return out


def check_aggregate(name, got, recs, by=None, level=0.95, scipy_check=True):
    ref = reference(recs, by, level)
    if len(got) != len(ref):
        fail("%s: %d groups, expected %d" % (name, len(got), len(ref)))
        return
    for g, (e, metrics) in zip(got, ref):
        if list(g.keys()) != list(e.keys()):
            fail("%s: keys %s, expected %s" % (name, list(g.keys())[:8], list(e.keys())[:8]))
            continue
        label = ",".join("%s" % g[k] for k in g if k in IDENT)
        for k in e:
            if k in IDENT or k.endswith("_n") or k in ("n", "unit", "n_units"):
                if g[k] != e[k]:
                    fail("%s %s %s: %r, expected %r" % (name, label, k, g[k], e[k]))
                continue
            # a std is known only to the rounding of the values it spreads
            # (ε·max|x| for any summation order): of values equal but for
            # their last bits, two correct sums differ by ~1e-17 relative
            # to the values and by any factor relative to each other
            base = k[:-4] if k.endswith("_std") else None
            slack = (1e-12 * max(abs(x) for x in metrics[base])
                     if base in metrics and metrics[base] else 0.0)
            close("%s:%s %s %s" % (k.split("_ci_")[0] if "_ci_" in k else "value", name, label, k),
                  g[k], e[k], 1e-9, slack)
        if not scipy_check:
            continue
        for k, vals in metrics.items():
            n = len(vals)
            if n < 2 or g[k + "_std"] == 0:
                continue
            lo, hi = stats.t.interval(level, n - 1, loc=np.mean(vals),
                                      scale=np.std(vals, ddof=1) / math.sqrt(n))
            half = hi - np.mean(vals)
            close("scipy.stats.t.interval:%s %s %s" % (name, label, k), g[k + "_ci_low"], lo, 1e-9, 5e-9 * half)
            close("scipy.stats.t.interval:%s %s %s" % (name, label, k), g[k + "_ci_high"], hi, 1e-9, 5e-9 * half)


def same_tables(name, got, exp, rtol=1e-12):
    if len(got) != len(exp):
        fail("%s: %d records, expected %d" % (name, len(got), len(exp)))
        return
    for g, e in zip(got, exp):
        if list(g.keys()) != list(e.keys()):
            fail("%s: keys differ" % name)
            return
        for k in e:
            if isinstance(e[k], (int, float)) and not isinstance(e[k], bool) and e[k] is not None \
                    and g[k] is not None and not (k.endswith("_n") or k in ("n", "n_units")):
                close("same:%s %s" % (name, k), g[k], e[k], rtol)
            elif g[k] != e[k]:
                fail("%s %s: %r, expected %r" % (name, k, g[k], e[k]))


def read_csv(path, sep=","):
    with open(path, newline="") as f:
        return [{k: value(v) if k != "model" else v for k, v in r.items()}
                for r in csv.DictReader(f, delimiter=sep)]


def check_analyze(cli, d, model):
    corpus = os.path.join(d, "corpus.txt")
    base = ["analyze", model, "--text-file", corpus]
    files = {}
    for fmt in ("json", "jsonl", "csv", "tsv"):
        files[fmt] = os.path.join(d, "per." + fmt)
        run(cli, base + ["--format", fmt, "-o", files[fmt]])
    recs = json.load(open(files["json"]))["records"]
    if [r for r in read_csv(files["csv"])] != [{k: value(v) if k != "model" else v for k, v in r.items()}
                                                for r in recs]:
        fail("analyze: the CSV records differ from the JSON ones")
    whole = None
    for fmt, path in files.items():
        got = records(cli, ["aggregate", path])
        check_aggregate("aggregate " + fmt, got, recs)
        if whole is None:
            whole = got
        elif got != whole:
            fail("aggregate %s differs from aggregate json" % fmt)
    got = records(cli, base + ["--aggregate"])
    if got != whole:
        fail("analyze --aggregate differs from aggregate of its records")
    with open(files["jsonl"], "rb") as f:
        if json.loads(run(cli, ["aggregate", "-", "--format", "json"], f.read()))["records"] != whole:
            fail("aggregate - (JSONL on standard input) differs")
    check_aggregate("--by layer", records(cli, ["aggregate", files["csv"], "--by", "layer"]), recs, ["layer"])
    check_aggregate("--by ''", records(cli, ["aggregate", files["json"], "--by", ""]), recs, [])
    check_aggregate("--ci 0.9", records(cli, base + ["--aggregate", "--ci", "0.9"]), recs, None, 0.9)
    check_shards(cli, d, model, whole)
    return recs


def check_shards(cli, d, model, whole):
    cuts = [0, 3, 8, len(CORPUS)]
    aggs, per = [], []
    for s, fmt in enumerate(("jsonl", "csv", "json")):
        path = os.path.join(d, "shard%d.txt" % s)
        with open(path, "w") as f:
            f.write("\n".join(CORPUS[cuts[s]:cuts[s + 1]]) + "\n")
        aggs.append(os.path.join(d, "agg%d.%s" % (s, fmt)))
        per.append(os.path.join(d, "per%d.%s" % (s, fmt)))
        run(cli, ["analyze", model, "--text-file", path, "--aggregate", "--format", fmt, "-o", aggs[-1]])
        run(cli, ["analyze", model, "--text-file", path, "--format", fmt, "-o", per[-1]])
    same_tables("shards aggregated again", records(cli, ["aggregate"] + aggs), whole)
    same_tables("shards' records together", records(cli, ["aggregate"] + per), whole)


def check_other_commands(cli, d, model):
    corpus = os.path.join(d, "corpus.txt")
    npy = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                       "tiny_gpt2_attention.npy")
    bert = os.path.join(os.path.dirname(model), "..", "tests", "data", "models", "tiny-bert")
    cases = [["residual", model, "--text-file", corpus],
             ["rollout", model, "--text-file", corpus, "--metrics", "all"],
             ["weights", model], ["weights", bert], ["matrix", npy]]
    for args in cases:
        recs = records(cli, args)
        got = records(cli, args + ["--aggregate"])
        check_aggregate(args[0] + " --aggregate", got, recs)
        path = os.path.join(d, "other.json")
        with open(path, "w") as f:
            json.dump({"records": recs}, f)
        if records(cli, ["aggregate", path]) != got:
            fail("%s --aggregate differs from aggregate of its records" % args[0])


def welch_reference(a, b, level):
    a, b = np.array(a), np.array(b)
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    half = t_quantile(level, df) * math.sqrt(va + vb)
    diff = a.mean() - b.mean()
    return df, diff - half, diff + half


def check_compare_rows(name, rows, side_a, side_b, by):
    checked = 0
    for r in rows:
        key = tuple(r[k] for k in by)
        a = [value(x[r["metric"]]) for x in side_a if tuple(x.get(k) for k in by) == key]
        b = [value(x[r["metric"]]) for x in side_b if tuple(x.get(k) for k in by) == key]
        a = [x for x in a if x is not None]
        b = [x for x in b if x is not None]
        label = "%s %s %s" % (name, key, r["metric"])
        if (r["n_a"], r["n_b"]) != (len(a), len(b)):
            fail("%s: n %s, expected %s" % (label, (r["n_a"], r["n_b"]), (len(a), len(b))))
            continue
        close("mean:" + label, r["mean_a"], float(np.mean(a)), 1e-12)
        close("mean:" + label, r["mean_b"], float(np.mean(b)), 1e-12)
        if np.var(a) == 0 and np.var(b) == 0:
            if r["t"] is not None or r["p"] is not None:
                fail("%s: no spread, t and p must be null" % label)
            continue
        t, p = stats.ttest_ind(a, b, equal_var=False)
        df, lo, hi = welch_reference(a, b, 0.95)
        close("t:" + label, r["t"], float(t), 1e-6)
        close("p:" + label, r["p"], float(p), 1e-6)
        close("df:" + label, r["df"], df, 1e-9)
        close("welch_ci:" + label, r["ci_low"], lo, 1e-9, 1e-12 * abs(hi - lo))
        close("welch_ci:" + label, r["ci_high"], hi, 1e-9, 1e-12 * abs(hi - lo))
        checked += 1
    return checked


def exact_permutation_p(a, b):
    pool = np.array(a + b)
    obs = abs(np.mean(a) - np.mean(b))
    count = total = 0
    for idx in itertools.combinations(range(len(pool)), len(a)):
        mask = np.zeros(len(pool), bool)
        mask[list(idx)] = True
        d = abs(pool[mask].mean() - pool[~mask].mean())
        count += d >= obs * (1 - 1e-12)
        total += 1
    return count / total


def check_compare(cli, d, model, recs):
    bert = os.path.join(os.path.dirname(model), "..", "tests", "data", "models", "tiny-bert")
    wa, wb = os.path.join(d, "wbert.json"), os.path.join(d, "wgpt2.csv")
    run(cli, ["weights", bert, "--format", "json", "-o", wa])
    run(cli, ["weights", model, "--format", "csv", "-o", wb])
    rows = records(cli, ["compare", wa, wb])
    n = check_compare_rows("weights bert vs gpt2", rows, json.load(open(wa))["records"], read_csv(wb), [])
    # two halves of the corpus, head by head; five texts each for the exact
    # permutation p
    halves = []
    for s, lines in enumerate((CORPUS[:5], CORPUS[5:10])):
        path = os.path.join(d, "half%d.txt" % s)
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        halves.append(os.path.join(d, "half%d.jsonl" % s))
        run(cli, ["analyze", model, "--text-file", path, "--format", "jsonl", "-o", halves[-1]])
    side = [[json.loads(l) for l in open(h) if "settings" not in l] for h in halves]
    perms = 20000
    args = ["compare", halves[0], halves[1], "--by", "layer,head", "--metrics",
            "entropy_mean,sink_mass,effective_rank", "--permutations", str(perms), "--seed", "5"]
    rows = records(cli, args)
    n += check_compare_rows("halves", rows, side[0], side[1], ["layer", "head"])
    if records(cli, args) != rows:
        fail("compare --permutations: the same seed gave another p_perm")
    worst_z = 0.0
    for r in rows:
        key = (r["layer"], r["head"])
        a = [value(x[r["metric"]]) for x in side[0] if (x["layer"], x["head"]) == key]
        b = [value(x[r["metric"]]) for x in side[1] if (x["layer"], x["head"]) == key]
        p = exact_permutation_p(a, b)
        # p_perm = (1 + k) / (1 + N) with k ~ Binomial(N, p)
        k = r["p_perm"] * (perms + 1) - 1
        z = abs(k - perms * p) / math.sqrt(max(perms * p * (1 - p), 1.0))
        worst_z = max(worst_z, z)
        if z > 6:
            fail("p_perm %s %s: %g, exact permutation p %g (z = %.1f)" % (key, r["metric"], r["p_perm"], p, z))
    print("compare: %d (group, metric) rows against scipy; p_perm vs exact: worst z = %.2f over %d rows"
          % (n, worst_z, len(rows)))


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    cli = os.path.abspath(sys.argv[1])
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    model = os.path.normpath(os.path.join(root, "models", "tiny-gpt2"))
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "corpus.txt"), "w") as f:
            f.write("\n".join(CORPUS) + "\n")
        recs = check_analyze(cli, d, model)
        check_other_commands(cli, d, model)
        check_compare(cli, d, model, recs)
    for k in sorted(WORST):
        print("  worst rel err %-28s %.3g" % (k, WORST[k]))
    if FAILS:
        print("check_aggregate.py: %d failures" % len(FAILS))
        sys.exit(1)
    print("check_aggregate.py: ok")


if __name__ == "__main__":
    main()
