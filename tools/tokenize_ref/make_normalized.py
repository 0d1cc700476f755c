"""Writes tests/data/tokenize/normalized/<family>.json.xz (xz -9e): every text of
texts_families.json through the normalizer of each distinct normalizer
configuration of the family folders, by the Python reference
(tests/ref/hf_tokenizer.py, Hugging Face's Rust semantics).

    /usr/bin/python3 tools/tokenize_ref/make_normalized.py [--check]

One file per distinct configuration, named after the first family (sorted)
that has it: {"families": [every family with that normalizer],
"normalized": [one string per text, in the order of texts_families.json]}.
tests/tokenizer/test_tk_normalizers.c reads the normalizer from the materialized
tokenizer.json of the first family and compares. --check compares with the
committed files instead of writing them (exit 1 when any differs).
"""
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "ref"))
sys.path.insert(0, HERE)
import hf_tokenizer  # noqa: E402
import materialize  # noqa: E402

OUT = os.path.join(ROOT, "tests", "data", "tokenize", "normalized")


def main(argv):
    check = "--check" in argv
    with open(os.path.join(HERE, "texts_families.json"), encoding="utf-8") as f:
        texts = json.load(f)
    groups = {}
    with tempfile.TemporaryDirectory() as tmp:
        for fam in materialize.families():
            folder = materialize.materialize(fam, tmp)
            with open(os.path.join(folder, "tokenizer.json"), encoding="utf-8") as f:
                cfg = json.load(f).get("normalizer")
            if cfg is None:
                continue
            groups.setdefault(json.dumps(cfg, sort_keys=True), (cfg, []))[1].append(fam)
    bad = 0
    for cfg, fams in groups.values():
        norm = hf_tokenizer.build_normalizer(cfg)
        out = []
        for t in texts:
            ns = hf_tokenizer.NStr.from_str(t)
            norm(ns)
            out.append(ns.get())
        doc = ("{\n \"families\": " + json.dumps(fams) + ",\n \"normalized\": [\n"
               + ",\n".join("  " + json.dumps(s, ensure_ascii=False) for s in out) + "\n ]\n}\n")
        path = os.path.join(OUT, fams[0] + ".json.xz")
        if check:
            if materialize.read_text(path) != doc:
                print("make_normalized: %s differs" % path)
                bad = 1
        else:
            os.makedirs(OUT, exist_ok=True)
            materialize.write_xz(path, doc)
    print("make_normalized: %d configurations, %d texts each" % (len(groups), len(texts)))
    return bad


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
