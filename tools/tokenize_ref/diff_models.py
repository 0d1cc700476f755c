"""Differential test of the tokenizer's models against the Python reference.

    /usr/bin/python3 tools/tokenize_ref/diff_models.py [FIRST_SEED [COUNT]]

Draws COUNT (default 300) random BPE, Unigram and WordPiece models — small
alphabets with multi-byte characters, random merges (duplicates, "#version"),
prefixes and suffixes, byte pieces, unk present, absent or missing from the
vocabulary, Unigram scores with ties — and 30 random pieces each (up to 600
characters: the long-piece path), runs tests/ref/hf_tokenizer.py's model and
the C model (tools/tokenize_ref/model_driver.c, built here against
build/libattngeom.a; set CC="cc -fsanitize=address,undefined" together with
an ASan build of the library to check memory too), and prints every piece
whose ids, or error, differ. Exit 1 when any does. Not part of `make test`
(minutes); run it after changing src/tokenizer/model_*.c.
"""
import json
import os
import random
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "ref"))
import hf_tokenizer as H  # noqa: E402

ALPHA = ["a", "b", "c", "d", "\u00e9", "\u4e2d", "\u2581", "#", "<", ">"]
SCORES = [0.0, -1.0, -2.0, -2.5, -3.0, -7.0, -0.5]  # few values: equal-score paths


def rand_piece(rng, chars, maxlen):
    n = rng.choice([0, 1, 2, 3, 5, 8, 20, maxlen])
    return "".join(rng.choice(chars) for _ in range(n))


def byte_tokens(rng, p):
    return ["<0x%02X>" % b for c in ALPHA for b in c.encode() if rng.random() < p]


def gen_bpe(rng):
    prefix = rng.choice([None, "", "##"])
    suffix = rng.choice([None, "", "</w>"])
    vocab = {}

    def add(t):
        vocab.setdefault(t, len(vocab))

    for c in rng.sample(ALPHA, rng.randint(2, len(ALPHA))):
        variants = [(c, 0.8), ((prefix or "") + c, 0.8 if prefix else 0),
                    (c + (suffix or ""), 0.6 if suffix else 0),
                    ((prefix or "") + c + (suffix or ""), 0.5 if prefix and suffix else 0)]
        for t, p in variants:
            if rng.random() < p:
                add(t)
    for t in byte_tokens(rng, 0.7):
        add(t)
    unk = rng.choice([None, "<unk>", "<unk>", "<missing>"])
    if unk == "<unk>":
        add(unk)
    merges, toks = [], list(vocab)
    for _ in range(rng.randint(0, 40)):
        x, y = rng.choice(toks), rng.choice(toks)
        if prefix and not y.startswith(prefix):
            continue
        new = x + (y[len(prefix):] if prefix else y)
        add(new)
        toks.append(new)
        merges.append([x, y])
    if merges and rng.random() < 0.3:
        merges.append(rng.choice(merges))  # a pair listed twice
    if rng.random() < 0.5 and all(" " not in a + b for a, b in merges):
        merges = ["%s %s" % (a, b) for a, b in merges]
        if rng.random() < 0.3:
            merges.insert(0, "#version: 0.2")
    return {"type": "BPE", "vocab": vocab, "merges": merges, "unk_token": unk,
            "continuing_subword_prefix": prefix, "end_of_word_suffix": suffix,
            "fuse_unk": rng.random() < 0.5, "byte_fallback": rng.random() < 0.5,
            "ignore_merges": rng.random() < 0.3, "dropout": rng.choice([None, 0.0])}, H.BPE


def gen_unigram(rng):
    chars = rng.sample(ALPHA, rng.randint(2, len(ALPHA)))
    pieces = [["".join(rng.choice(chars) for _ in range(rng.randint(1, 4))), rng.choice(SCORES)]
              for _ in range(rng.randint(1, 30))]
    pieces += [[t, 0.0] for t in byte_tokens(rng, 0.5)]
    if rng.random() < 0.8:
        pieces.append(["<unk>", 0.0])
    rng.shuffle(pieces)
    unk_id = next((i for i, (p, _) in enumerate(pieces) if p == "<unk>"), None)
    if rng.random() < 0.1:
        unk_id = None
    return {"type": "Unigram", "vocab": pieces, "unk_id": unk_id,
            "byte_fallback": rng.random() < 0.5}, H.Unigram


def gen_wordpiece(rng):
    vocab = {}
    if rng.random() < 0.8:
        vocab["[UNK]"] = 0
    chars = rng.sample(ALPHA, rng.randint(2, len(ALPHA)))
    for _ in range(rng.randint(1, 30)):
        p = "".join(rng.choice(chars) for _ in range(rng.randint(1, 4)))
        vocab.setdefault(p if rng.random() < 0.5 else "##" + p, len(vocab))
    return {"type": "WordPiece", "vocab": vocab, "unk_token": "[UNK]",
            "continuing_subword_prefix": "##",
            "max_input_chars_per_word": rng.choice([3, 10, 100])}, H.WordPiece


def py_run(cls, cfg, pieces):
    try:
        m = cls(cfg)
    except Exception:
        return "LOADERR"
    out = []
    for p in pieces:
        try:
            out.append(m.tokenize(p))
        except Exception:
            out.append(None)
    return out


def build_driver(tmp):
    exe = os.path.join(tmp, "model_driver")
    lib = os.environ.get("AG_LIB", os.path.join(ROOT, "build", "libattngeom.a"))
    libs = subprocess.run(["pkg-config", "--libs", "lapacke", "openblas", "gsl", "jansson",
                           "libpcre2-8", "libutf8proc"], capture_output=True, text=True).stdout.split()
    cc = shlex.split(os.environ.get("CC", "cc"))
    subprocess.run(cc + ["-O1", "-g", "-I" + os.path.join(ROOT, "include"),
                         "-I" + os.path.join(ROOT, "src"), "-o", exe,
                         os.path.join(HERE, "model_driver.c"), lib] + libs + ["-lm"], check=True)
    return exe


def check_one(driver, case, seed):
    """Number of differences (0 or 1) for the model of this seed."""
    rng = random.Random(seed)
    cfg, cls = rng.choice([gen_bpe, gen_bpe, gen_unigram, gen_wordpiece])(rng)
    pieces = [rand_piece(rng, ALPHA + ["x", "\U0001F600"], rng.choice([30, 300, 600]))
              for _ in range(30)]
    want = py_run(cls, cfg, pieces)
    with open(case, "w", encoding="utf-8") as f:
        json.dump({"model": cfg, "pieces": pieces}, f, ensure_ascii=False)
    r = subprocess.run([driver, case], capture_output=True, text=True)
    got = r.stdout.splitlines()
    if r.returncode != 0 or r.stderr:
        print("seed %d: driver failed: %s" % (seed, r.stderr[:2000]))
        return 1
    if want == "LOADERR" or (got and got[0].startswith("LOADERR")):
        same = want == "LOADERR" and got and got[0].startswith("LOADERR")
        if not same:
            print("seed %d: load differs: reference %s, C %s" % (seed, want == "LOADERR", got[:1]))
        return 0 if same else 1
    if len(got) != len(pieces):
        print("seed %d: %d lines for %d pieces" % (seed, len(got), len(pieces)))
        return 1
    for p, w, g in zip(pieces, want, got):
        g = None if g == "ERR" else json.loads(g)
        if w != g:
            k = next((i for i, (a, b) in enumerate(zip(w or [], g or [])) if a != b),
                     min(len(w or []), len(g or [])))
            print("seed %d %s %r: from id %d, reference %s, C %s" % (
                seed, cfg["type"], p[:60], k, None if w is None else w[k:k + 8],
                None if g is None else g[k:k + 8]))
            return 1
    return 0


def main(seed0, n):
    with tempfile.TemporaryDirectory() as tmp:
        driver = build_driver(tmp)
        case = os.path.join(tmp, "case.json")
        bad = sum(check_one(driver, case, seed) for seed in range(seed0, seed0 + n))
    print("diff_models: %d models, %d differ" % (n, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:3]]
    sys.exit(main(args[0] if args else 0, args[1] if len(args) > 1 else 300))
