"""Writes tests/data/tokenize/<family>.json.xz (xz -9e) from the Python reference and
compares it with transformers.js and the vocabulary packages.

    python3 tools/tokenize_ref/make_expected.py [--check]

Reads the folders materialize.py wrote into build/tokenize_ref/tokenizers and
the ids gen_families.mjs wrote into build/tokenize_ref/{tjs,pkg}. The expected
ids are the Python reference's (tests/ref/hf_tokenizer.py: Hugging Face's Rust
semantics); every text where transformers.js or a vocabulary package gives
other ids is listed in build/tokenize_ref/report.md, with the first
difference of each. --check compares with the committed files instead of
writing them (exit 1 when any differs); it materializes the folders itself
when regen.sh has not, so it needs neither node nor the npm packages:

    /usr/bin/python3 tools/tokenize_ref/make_expected.py --check
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "ref"))
sys.path.insert(0, HERE)
import hf_tokenizer  # noqa: E402
import materialize  # noqa: E402

BUILD = os.path.join(ROOT, "build", "tokenize_ref")
OUT = os.path.join(ROOT, "tests", "data", "tokenize")
# tiny-llama is the older GPT-2-tokenizer test folder, covered by tiny-llama.json.
SKIP = {"tiny-llama"}
SPECIAL_MARKERS = ("<s>", "</s>", "<unk>", "<pad>", "<|endoftext|>", "<|fim", "<|endofprompt|>")


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def dump_expected(texts, ids):
    return "[\n" + ",\n".join(" " + json.dumps({"text": t, "ids": i}, ensure_ascii=False)
                             for t, i in zip(texts, ids)) + "\n]\n"


def main(argv):
    check = "--check" in argv
    texts = load(os.path.join(HERE, "texts_families.json"))
    tok_dir = os.path.join(BUILD, "tokenizers")
    if not os.path.isdir(tok_dir):  # --check without regen.sh: no node needed
        for fam in materialize.families():
            materialize.materialize(fam, tok_dir)
    families = sorted(f for f in os.listdir(tok_dir) if f not in SKIP)
    report, summary, failures = [], [], 0
    for fam in families:
        tok = hf_tokenizer.Tokenizer.from_folder(os.path.join(tok_dir, fam))
        ids = [tok.encode(t) for t in texts]
        path = os.path.join(OUT, fam + ".json.xz")
        body = dump_expected(texts, ids)
        if check:
            same = os.path.exists(path) and materialize.read_text(path) == body
            failures += not same
            print("%s: %s" % (path, "up to date" if same else "DIFFERS"))
        else:
            materialize.write_xz(path, body)
        line = {"family": fam, "texts": len(texts)}
        for kind in ("tjs", "pkg"):
            p = os.path.join(BUILD, kind, fam + ".json")
            if not os.path.exists(p):
                continue
            other = load(p)
            diffs = [(t, a, b) for t, a, b in zip(texts, ids, other) if a != b]
            if kind == "pkg":
                diffs_special = [d for d in diffs if any(m in d[0] for m in SPECIAL_MARKERS)]
                line["pkg_special"] = len(diffs_special)
            line[kind] = len(texts) - len(diffs)
            for t, a, b in diffs:
                report.append("- %s / %s: %s\n  - reference: %s\n  - %s: %s" % (
                    fam, kind, json.dumps(t, ensure_ascii=False), a, kind, b))
        summary.append(line)
    os.makedirs(BUILD, exist_ok=True)
    with open(os.path.join(BUILD, "report.md"), "w", encoding="utf-8") as f:
        f.write("# agreement\n\n")
        for s in summary:
            f.write("- %s\n" % json.dumps(s))
        f.write("\n# differences\n\n" + "\n".join(report) + "\n")
    for s in summary:
        print(json.dumps(s))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
