#!/usr/bin/env python3
"""CLIP's tokenizer (CLIPTokenizerFast's tokenizer.json: NFC + whitespace
Replace + Lowercase, Split regex (removed, inverted) + ByteLevel, BPE with
the end-of-word suffix </w>, RobertaProcessing <|startoftext|> $A
<|endoftext|>) in the clip-text folder, against the ids of Hugging Face's
Rust `tokenizers` library (its Node binding):

    NODE_PATH=.../node_modules node tools/tokenize_ref/rust_vocab.mjs \\
        tests/data/models/arch/clip-text tools/tokenize_ref/texts_clip.json

wrote tests/data/tokenize/clip-text.json, stored as clip-text.json.xz
(`tokenizers` 0.23.2). The folder and its tokenizer come from tools/make_arch_models.py (clip_tokenizer).

Usage: /usr/bin/python3 tests/ref/check_clip_tokenizer.py path/to/attngeom
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FOLDER = os.path.join(ROOT, "tests", "data", "models", "arch", "clip-text")
EXPECTED = os.path.join(ROOT, "tests", "data", "tokenize", "clip-text.json.xz")
sys.path.insert(0, os.path.join(ROOT, "tools", "tokenize_ref"))
import materialize  # noqa: E402  (reads the .xz expected file)


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    cases = json.loads(materialize.read_text(EXPECTED))
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "texts.jsonl")
        with open(src, "w", encoding="utf-8") as f:
            for c in cases:
                f.write(json.dumps({"text": c["text"]}) + "\n")
        out = subprocess.run([argv[1], "tokenize", FOLDER, "--jsonl", src, "--format", "jsonl"],
                             capture_output=True, text=True, check=True).stdout.splitlines()
    fails = 0
    if len(out) != len(cases):
        print("%d lines for %d texts" % (len(out), len(cases)))
        fails += 1
    for c, line in zip(cases, out):
        got = json.loads(line)["ids"]
        if got != c["ids"]:
            print("FAIL %r: %s, Rust %s" % (c["text"], got, c["ids"]))
            fails += 1
    # The expected ids are not trivial: </w> merges, unknown bytes and the
    # template all occur.
    flat = [i for c in cases for i in c["ids"]]
    if not (83 in flat and 96 in flat[1:-1] and all(c["ids"][0] == 95 for c in cases)):
        print("FAIL the expected ids miss the cases they are meant to hold")
        fails += 1
    print("check_clip_tokenizer.py: %d texts, %s" % (len(cases), "ok" if not fails else "%d FAILED" % fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
