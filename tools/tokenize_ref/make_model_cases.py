"""Writes tests/data/tokenize/model/<name>.json.xz (xz -9e): the model stage alone, for
every distinct "model" object of the family folders.

    /usr/bin/python3 tools/tokenize_ref/make_model_cases.py [--check]

Each file is {"families": [...], "cases": [[piece, [ids]], ...]}: the pieces
are what the model receives in the Python reference's pipeline
(tests/ref/hf_tokenizer.py: added tokens, normalizer, pre-tokenizer) for the
texts of texts_families.json, each distinct piece once, plus synthetic pieces
that only the model sees (long runs, random strings over the vocabulary's
alphabet, unknown characters, concatenations of many pieces) drawn with a
fixed seed; the ids are the
reference model's (hf_tokenizer.BPE / WordPiece / Unigram .tokenize).
Families whose model objects are identical share one file, named after the
first of them. tests/tokenizer/test_tk_models.c reads these files and the folders that
tools/tokenize_ref/materialize.py writes.

--check compares with the committed files instead of writing them.
"""
import hashlib
import json
import os
import random
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "ref"))
sys.path.insert(0, HERE)
import hf_tokenizer  # noqa: E402
import materialize  # noqa: E402

OUT = os.path.join(ROOT, "tests", "data", "tokenize", "model")
SKIP = {"tiny-llama"}  # GPT-2's model, already covered by gpt2
SYNTHETIC = 60         # random pieces per model
JOINED, JOINED_PARTS = 5, 25  # long pieces per model, made of that many pieces


def pipeline_pieces(tok, text):
    out = []
    for ns, tid in tok.added.extract_and_normalize(tok.normalizer, text):
        if tid is not None:
            continue
        subs = [ns] if tok.pre_tokenizer is None else tok.pre_tokenizer([ns])
        out.extend(s.get() for s in subs if len(s))
    return out


def alphabet(model_cfg):
    """Single characters of the vocabulary, in id order."""
    v = model_cfg["vocab"]
    toks = [p for p, _ in v] if isinstance(v, list) else sorted(v, key=v.get)
    return [t for t in toks if len(t) == 1]


def synthetic_pieces(model_cfg, seed):
    rng = random.Random(seed)
    chars = alphabet(model_cfg)
    strange = ["\u00e9", "\u4e2d", "\U0001F600", "\u0000", "\u2581", "#", "##"]
    out = []
    for k in range(SYNTHETIC):
        n = rng.choice([1, 2, 3, 5, 8, 13, 40, 70])
        pool = chars[:60] if k % 3 == 0 else chars  # frequent chars merge more
        s = "".join(rng.choice(pool) for _ in range(n))
        if k % 5 == 0:
            s += rng.choice(strange) * rng.choice([1, 2, 3])
        if k % 7 == 0:
            s = rng.choice(strange) + s
        out.append(s)
    if chars:  # long runs: the heap path and merges of merges
        out += [chars[0] * 300, (chars[-1] + chars[0]) * 90, "".join(chars[:200])]
    return out


def joined_pieces(pieces, seed):
    """Long pieces made of many pipeline pieces: what a SentencePiece layout
    without pre-tokenizer hands the model for a long text."""
    rng = random.Random(seed + "/joined")
    distinct = sorted(set(pieces))
    return ["".join(rng.choice(distinct) for _ in range(JOINED_PARTS)) for _ in range(JOINED)]


def model_key(cfg):
    return hashlib.sha256(json.dumps(cfg, sort_keys=True).encode()).hexdigest()


def build(tok_dir, texts):
    groups = {}  # model key -> [families]
    order = []
    cfgs = {}
    for fam in sorted(f for f in os.listdir(tok_dir) if f not in SKIP):
        with open(os.path.join(tok_dir, fam, "tokenizer.json"), encoding="utf-8") as f:
            cfg = json.load(f)["model"]
        key = model_key(cfg)
        if key not in groups:
            groups[key] = []
            order.append(key)
            cfgs[key] = cfg
        groups[key].append(fam)
    files = {}
    for key in order:
        fams = groups[key]
        model = hf_tokenizer.build_model(cfgs[key])
        seen, cases = set(), []
        pieces = []
        for fam in fams:
            tok = hf_tokenizer.Tokenizer.from_folder(os.path.join(tok_dir, fam))
            for t in texts:
                pieces.extend(pipeline_pieces(tok, t))
        pieces.extend(synthetic_pieces(cfgs[key], fams[0]))
        pieces.extend(joined_pieces(pieces, fams[0]))
        for p in pieces:
            if p in seen:
                continue
            seen.add(p)
            cases.append([p, model.tokenize(p)])
        body = ('{"families": %s,\n "cases": [\n' % json.dumps(fams)
                + ",\n".join("  " + json.dumps(c, ensure_ascii=False) for c in cases) + "\n]}\n")
        files[fams[0] + ".json.xz"] = body
    return files


def main(argv):
    check = "--check" in argv
    with open(os.path.join(HERE, "texts_families.json"), encoding="utf-8") as f:
        texts = json.load(f)
    with tempfile.TemporaryDirectory() as tmp:
        for fam in materialize.families():
            if fam not in SKIP:
                materialize.materialize(fam, tmp)
        files = build(tmp, texts)
    failures = 0
    if not check:
        os.makedirs(OUT, exist_ok=True)
    for name, body in sorted(files.items()):
        path = os.path.join(OUT, name)
        if check:
            same = os.path.exists(path) and materialize.read_text(path) == body
            failures += not same
            print("%s: %s" % (path, "up to date" if same else "DIFFERS"))
        else:
            materialize.write_xz(path, body)
            print("%s: %d bytes" % (path, len(body.encode())))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
