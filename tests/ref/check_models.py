#!/usr/bin/python3
"""Check `attngeom tokenize` and `attngeom attention` on the tiny models.

Usage: /usr/bin/python3 tests/ref/check_models.py path/to/attngeom

1. Validates the reference itself: hf_forward.py (independent float64 numpy
   forward passes) must reproduce the PyTorch fixtures
   tests/data/fixtures/<model>/{attn,hidden}_k.npy to 1e-12 for every model
   whose folder is available.
2. For each available model folder
     tiny-gpt2   models/tiny-gpt2 (always in the repository)
     tiny-bert   tests/data/models/tiny-bert, else $AG_TEST_MODELS/tiny-bert
     tiny-llama  $AG_TEST_MODELS/tiny-llama only
   and each text of tests/data/tokenize/<model>.json.xz (ids made by
   transformers.js; texts with 0 ids or more ids than the model's maximum
   positions are skipped):
     a. `tokenize MODEL --text T --format json` gives exactly the expected ids
        (not run for a text holding NUL, which no argv can carry);
     b. `attention MODEL --tokens IDS -o A.npy --hidden H.npy --precision f64`
        agrees with hf_forward: max |attn diff| <= 1e-9 and
        |hidden diff| <= 1e-9 * max(1, |ref|);
     c. the same with the default f32: 1e-5 and 1e-4 * max(1, |ref|).
   Causal models must have exact zeros above the diagonal in both precisions.
   Constructed id sequences complete the texts: one token, >= 200 tokens
   (a passage's ids repeated) and exactly the maximum number of positions.
Prints a summary table and exits 1 on any failure; the inputs of every
failing case are saved under /tmp/ag_model_mismatch/.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools", "tokenize_ref"))
import hf_forward as R  # noqa: E402
import materialize  # noqa: E402  (reads the .xz expected files)

TOL = {"f64": (1e-9, 1e-9), "f32": (1e-5, 1e-4)}  # (attention, hidden relative)
FIXTURE_TOL = 1e-12
MISMATCH_DIR = "/tmp/ag_model_mismatch"


def model_folders():
    env = os.environ.get("AG_TEST_MODELS", "")
    out = [("tiny-gpt2", os.path.join(ROOT, "models", "tiny-gpt2"))]
    bert = [os.path.join(ROOT, "tests", "data", "models", "tiny-bert")]
    if env:
        bert.append(os.path.join(env, "tiny-bert"))
    folder = next((b for b in bert if os.path.isfile(os.path.join(b, "config.json"))), None)
    if folder:
        out.append(("tiny-bert", folder))
    else:
        print("skipped tiny-bert: no tests/data/models/tiny-bert (or set AG_TEST_MODELS)")
    llama = os.path.join(env, "tiny-llama") if env else None
    if llama and os.path.isfile(os.path.join(llama, "config.json")):
        out.append(("tiny-llama", llama))
    else:
        print("skipped tiny-llama: set AG_TEST_MODELS")
    return out


class Checker:
    def __init__(self, cli, tmp):
        self.cli = cli
        self.tmp = tmp
        self.failures = []

    def run(self, args):
        p = subprocess.run([self.cli] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           stdin=subprocess.DEVNULL)
        return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")

    def fail(self, model, case, what, saved):
        msg = "%s %s: %s" % (model, case["name"], what)
        self.failures.append(msg)
        print("FAIL", msg)
        d = os.path.join(MISMATCH_DIR, "%s_%s" % (model, case["name"]))
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "case.json"), "w") as f:
            json.dump({"model": model, "name": case["name"], "text": case.get("text"),
                       "ids": [int(i) for i in case["ids"]], "problem": what}, f,
                      ensure_ascii=False, indent=1)
        for name, val in saved.items():
            if isinstance(val, np.ndarray):
                np.save(os.path.join(d, name), val)
            elif isinstance(val, str) and os.path.exists(val):
                shutil.copy(val, os.path.join(d, name))
            else:
                with open(os.path.join(d, name), "w") as f:
                    f.write(str(val))
        print("     saved to", d)

    def tokenize(self, model, folder, case):
        rc, out, err = self.run(["tokenize", folder, "--text", case["text"], "--format", "json"])
        if rc != 0:
            self.fail(model, case, "tokenize exit %d: %s" % (rc, err.strip()), {})
            return
        try:
            got = json.loads(out)["ids"]
        except (ValueError, KeyError) as e:
            self.fail(model, case, "tokenize output not {\"ids\": ...} JSON (%s)" % e,
                      {"stdout.txt": out.decode("utf-8", "replace")})
            return
        if got != case["ids"]:
            self.fail(model, case, "tokenize ids %s, expected %s" % (got, case["ids"]), {})

    def attention(self, model, folder, case, ref_a, ref_h, prec, masked):
        """masked: None, or a bool array broadcastable to the attention of the
        entries that must be exactly 0 (causal or sliding-window masks)."""
        a_path = os.path.join(self.tmp, "a.npy")
        h_path = os.path.join(self.tmp, "h.npy")
        for p in (a_path, h_path):
            if os.path.exists(p):
                os.remove(p)
        ids = ",".join(str(int(i)) for i in case["ids"])
        args = ["attention", folder, "--tokens", ids, "-o", a_path, "--hidden", h_path]
        if prec == "f64":
            args += ["--precision", "f64"]
        rc, out, err = self.run(args)
        cmd = " ".join([self.cli, "attention", folder, "--tokens", ids, "-o", "A.npy", "--hidden", "H.npy"]
                       + (["--precision", "f64"] if prec == "f64" else [])) + "\n"
        if rc != 0:
            self.fail(model, case, "%s: exit %d: %s" % (prec, rc, err.strip()), {"command.txt": cmd})
            return None
        try:
            a = np.load(a_path)
            h = np.load(h_path)
        except Exception as e:  # noqa: BLE001
            self.fail(model, case, "%s: unreadable output (%s)" % (prec, e), {"command.txt": cmd})
            return None
        problems = []
        if a.dtype != np.dtype("<f8") or h.dtype != np.dtype("<f8"):
            problems.append("dtypes %s %s, expected <f8" % (a.dtype.str, h.dtype.str))
        if a.shape != ref_a.shape or h.shape != ref_h.shape:
            problems.append("shapes %s %s, expected %s %s" % (a.shape, h.shape, ref_a.shape, ref_h.shape))
            ea = eh = float("inf")
        else:
            ea = float(np.max(np.abs(a - ref_a)))
            eh = R.hidden_err(h, ref_h)
            ta, th = TOL[prec]
            if not ea <= ta:
                i = np.unravel_index(np.argmax(np.abs(a - ref_a)), a.shape)
                problems.append("max |attn diff| %.3g > %g at [l,h,i,j]=%s (got %.17g, expected %.17g)"
                                % (ea, ta, tuple(int(x) for x in i), a[i], ref_a[i]))
            if not eh <= th:
                r = np.abs(h - ref_h) / np.maximum(1.0, np.abs(ref_h))
                i = np.unravel_index(np.argmax(r), h.shape)
                problems.append("max hidden err %.3g > %g at [l,i,k]=%s (got %.17g, expected %.17g)"
                                % (eh, th, tuple(int(x) for x in i), h[i], ref_h[i]))
            if masked is not None and np.any(a[np.broadcast_to(masked, a.shape)] != 0):
                problems.append("non-zero probability on a masked key")
        if problems:
            self.fail(model, case, prec + ": " + "; ".join(problems),
                      {"command.txt": cmd, "got_attn.npy": a, "got_hidden.npy": h,
                       "ref_attn.npy": ref_a, "ref_hidden.npy": ref_h})
        return ea, eh


def make_cases(model, ref, texts):
    maxp = ref.max_positions
    cases, skipped = [], []
    for k, t in enumerate(texts):
        ids = t["ids"]
        if len(ids) == 0:
            skipped.append("text %d: 0 ids" % k)
        elif len(ids) > maxp:
            skipped.append("text %d: %d ids > %d positions" % (k, len(ids), maxp))
        else:
            cases.append({"name": "text%02d" % k, "text": t["text"], "ids": list(ids)})
    longest = max((t["ids"] for t in texts), key=len)
    if not any(len(c["ids"]) == 1 for c in cases):
        cases.append({"name": "one_token", "text": None, "ids": [longest[0]]})
    if not any(len(c["ids"]) >= 200 for c in cases):
        rep = (longest * (200 // len(longest) + 1))[:200]
        cases.append({"name": "long200", "text": None, "ids": rep})
    if not any(len(c["ids"]) == maxp for c in cases):
        rep = (longest * (maxp // len(longest) + 1))[:maxp]
        cases.append({"name": "max_positions", "text": None, "ids": rep})
    return cases, skipped


def main(argv):
    if len(argv) < 2:
        print("usage: check_models.py path/to/attngeom", file=sys.stderr)
        return 2
    cli = os.path.abspath(argv[1])
    t0 = time.time()
    if os.path.isdir(MISMATCH_DIR):
        shutil.rmtree(MISMATCH_DIR)
    folders = model_folders()
    models = {}
    bad_ref = False
    # 1. the reference against PyTorch
    for name, folder in folders:
        ref = R.Model(folder)
        models[name] = ref
        k, ea, eh, probs = R.check_fixtures(ref, folder, os.path.join(ROOT, "tests", "data", "fixtures", name),
                                            FIXTURE_TOL)
        print("reference vs PyTorch fixtures: %-10s %d texts, attn %.2e, hidden %.2e  %s"
              % (name, k, ea, eh, "ok" if not probs else "FAIL"))
        for p in probs:
            print("   ", p)
        bad_ref |= bool(probs)
    if bad_ref:
        print("check_models.py: the reference does not reproduce the PyTorch fixtures; stopping")
        return 1

    rows = []
    tmp = tempfile.mkdtemp(prefix="ag_models.")
    try:
        ch = Checker(cli, tmp)
        for name, folder in folders:
            ref = models[name]
            causal = ref.causal
            texts = json.loads(materialize.read_text(
                os.path.join(ROOT, "tests", "data", "tokenize", name + ".json.xz")))
            cases, skipped = make_cases(name, ref, texts)
            for s in skipped:
                print("  %s: skipped %s" % (name, s))
            err = {"f64": [0.0, 0.0], "f32": [0.0, 0.0]}
            n_tok = n_tok_skipped = 0
            nfail0 = len(ch.failures)
            for case in cases:
                if case["text"] is not None:
                    if "\x00" in case["text"]:
                        n_tok_skipped += 1
                        print("  %s %s: tokenize not run (the text holds NUL, which argv cannot carry)"
                              % (name, case["name"]))
                    else:
                        n_tok += 1
                        ch.tokenize(name, folder, case)
                ra, rh = ref.forward(case["ids"])
                masked = np.triu(np.ones(ra.shape[-2:], dtype=bool), 1) if causal else None
                for prec in ("f64", "f32"):
                    r = ch.attention(name, folder, case, ra, rh, prec, masked)
                    if r is not None:
                        err[prec][0] = max(err[prec][0], r[0])
                        err[prec][1] = max(err[prec][1], r[1])
            lens = sorted(len(c["ids"]) for c in cases)
            rows.append((name, len(cases), n_tok, lens[0], lens[-1], err["f64"][0], err["f32"][0],
                         err["f64"][1], err["f32"][1], len(ch.failures) - nfail0))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print()
    print("%-10s %5s %5s %9s %12s %12s %12s %12s %6s"
          % ("model", "cases", "tok", "n", "attn f64", "attn f32", "hidden f64", "hidden f32", "fails"))
    for r in rows:
        print("%-10s %5d %5d %4d..%-4d %12.2e %12.2e %12.2e %12.2e %6d" % r)
    print("tolerances: f64 attn %g, hidden %g*max(1,|ref|); f32 attn %g, hidden %g*max(1,|ref|)"
          % (TOL["f64"] + TOL["f32"]))
    print("time %.1f s" % (time.time() - t0))
    if ch.failures:
        print("check_models.py: %d failure(s); inputs saved under %s" % (len(ch.failures), MISMATCH_DIR))
        return 1
    print("check_models.py: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
