"""Writes the tokenizer folders of tests/data/tokenizers/ in full into OUT_DIR.

    python3 tools/tokenize_ref/materialize.py OUT_DIR [FAMILY ...]

The repository keeps each large vocabulary once (tests/data/tokenizers/base/,
xz-compressed, and models/tiny-gpt2/tokenizer.json); a family folder holds its
small files (config.json, tokenizer_config.json, special_tokens_map.json) and
either a tokenizer.json (plain or a symlink) or a tokenizer.layout.json: the
family's tokenizer.json with its large parts replaced by

    {"$include": "PATH", "pointer": "/model/vocab", "rename": {"<s>": "<bos>"}}

PATH is relative to tests/data/tokenizers/ (".xz" files are decompressed),
"pointer" is a JSON pointer into that JSON file (whole file when absent),
"rename" renames keys of an included object, keeping their values and order;
"replace": {"POINTER": NODE, ...} puts NODE (itself resolved) at each JSON
pointer of the included value (a missing last key is added at the end). {"$concat": [A, B, ...]} is the concatenation
of the lists A, B, ... or the merge, in order, of the objects A, B, ... (each
possibly an "$include"; a key in two objects is an error), for vocabularies
made of a base plus a few entries. {"$tiktoken_merges": VOCAB} is the merge
list Hugging Face's tiktoken conversion derives from the vocabulary VOCAB
(tiktoken_merges below). A top-level "sha256" of a layout is the SHA-256 of
the tokenizer.json it must give (checked: a layout that derives data).
"$include" of a ".bin"/".bin.xz" file gives the file's bytes in base64 (a
Precompiled charsmap). OUT_DIR/FAMILY/ then holds exactly the files Hugging
Face writes for that family (tokenizer.json written with indent 2 and
ensure_ascii=False, as `tokenizers` does). Standard library only; writes
nothing outside OUT_DIR.

It is also where the Python scripts read and write the expected files of
tests/data/tokenize/ and tests/data/vocab/, stored `xz -9e` to keep the
repository's data small: read_text (any file, ".xz" decompressed) and
write_xz (what the generators write).
"""
import base64
import hashlib
import json
import lzma
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
TOKENIZERS = os.path.join(ROOT, "tests", "data", "tokenizers")
SMALL_FILES = ("config.json", "tokenizer_config.json", "special_tokens_map.json")

_cache = {}


def _read(path):
    full = os.path.normpath(os.path.join(TOKENIZERS, path))
    if full not in _cache:
        with open(full, "rb") as f:
            data = f.read()
        if full.endswith(".xz"):
            data = lzma.decompress(data)
        _cache[full] = data
    return full, _cache[full]


def read_text(path):
    """The UTF-8 text of the file at path (absolute or relative to the current
    folder); a ".xz" file is decompressed (lzma checks its integrity)."""
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".xz"):
        data = lzma.decompress(data)
    return data.decode("utf-8")


def write_xz(path, body):
    """Writes the text body to path compressed as `xz -9e` does (same bytes:
    preset 9 extreme, CRC64), so regenerating an unchanged file changes no
    byte of the repository."""
    with open(path, "wb") as f:
        f.write(lzma.compress(body.encode("utf-8"), preset=9 | lzma.PRESET_EXTREME))


def _json_of(path):
    full, data = _read(path)
    key = ("json", full)
    if key not in _cache:
        _cache[key] = json.loads(data.decode("utf-8"))
    return _cache[key]


def _parts(pointer):
    return [p.replace("~1", "/").replace("~0", "~") for p in pointer.lstrip("/").split("/")] if pointer else []


def _pointer(doc, pointer):
    for part in _parts(pointer):
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    return doc


def _replaced(doc, parts, new):
    """A copy of doc with the value at parts replaced by new (a missing last
    key of an object is added at its end); only the containers along the
    path are copied (doc may be a cached include)."""
    if not parts:
        return new
    out = list(doc) if isinstance(doc, list) else dict(doc)
    key = int(parts[0]) if isinstance(doc, list) else parts[0]
    out[key] = _replaced(doc[key], parts[1:], new) if len(parts) > 1 else new
    return out


def tiktoken_merges(vocab):
    """The merges of a byte-level BPE whose merge ranks are its token ids, as
    Hugging Face's tiktoken conversion writes them (transformers,
    convert_slow_tokenizer.py, TikTokenConverter.extract_vocab_merges_from_model,
    after xenova's gist a452a6474428de0182b17605a98631ee): for each token in
    id order, every split into two tokens of the vocabulary, those ordered by
    the left then the right piece's id. LLaMA-3.1's tokenizer.json is exactly
    this function of its vocabulary (280,147 merges)."""
    out = []
    for tok, rank in sorted(vocab.items(), key=lambda kv: kv[1]):
        splits = [(vocab[tok[:i]], vocab[tok[i:]], i) for i in range(1, len(tok))
                  if tok[:i] in vocab and tok[i:] in vocab]
        out.extend(tok[:i] + " " + tok[i:] for _, _, i in sorted(splits))
    return out


def _concat(parts):
    """Lists concatenated, or objects merged in order (a key twice is an
    error: the parts of a vocabulary never overlap)."""
    if not all(isinstance(p, dict) for p in parts):
        return [x for p in parts for x in p]
    out = {}
    for p in parts:
        for k, v in p.items():
            if k in out:
                raise SystemExit("materialize: $concat: key %r twice" % k)
            out[k] = v
    return out


def resolve(node):
    if isinstance(node, dict):
        if "$concat" in node:
            return _concat([resolve(part) for part in node["$concat"]])
        if "$tiktoken_merges" in node:
            return tiktoken_merges(resolve(node["$tiktoken_merges"]))
        if "$include" in node:
            path = node["$include"]
            if path.endswith(".bin") or path.endswith(".bin.xz"):
                return base64.b64encode(_read(path)[1]).decode("ascii")
            value = _pointer(_json_of(path), node.get("pointer", ""))
            for pointer, part in node.get("replace", {}).items():
                value = _replaced(value, _parts(pointer), resolve(part))
            rename = node.get("rename")
            if rename:
                value = {rename.get(k, k): v for k, v in value.items()}
            return value
        return {k: resolve(v) for k, v in node.items()}
    if isinstance(node, list):
        return [resolve(v) for v in node]
    return node


def families():
    return sorted(d for d in os.listdir(TOKENIZERS)
                  if d != "base" and os.path.isdir(os.path.join(TOKENIZERS, d)))


def materialize(family, out_dir):
    src = os.path.join(TOKENIZERS, family)
    dst = os.path.join(out_dir, family)
    os.makedirs(dst, exist_ok=True)
    for name in SMALL_FILES + ("tokenizer.json",):
        p = os.path.join(src, name)
        if os.path.exists(p):
            shutil.copyfile(p, os.path.join(dst, name))  # follows symlinks
    layout = os.path.join(src, "tokenizer.layout.json")
    if os.path.exists(layout):
        with open(layout, encoding="utf-8") as f:
            spec = json.load(f)
        want = spec.pop("sha256", None) if isinstance(spec, dict) else None
        body = json.dumps(resolve(spec), indent=2, ensure_ascii=False)
        if want and hashlib.sha256(body.encode("utf-8")).hexdigest() != want:
            raise SystemExit("materialize: %s does not give the tokenizer.json of its sha256" % layout)
        with open(os.path.join(dst, "tokenizer.json"), "w", encoding="utf-8") as f:
            f.write(body)
    if not os.path.exists(os.path.join(dst, "tokenizer.json")):
        raise SystemExit("materialize: %s has neither tokenizer.json nor tokenizer.layout.json"
                         % src)
    return dst


def main(argv):
    if not argv:
        print("usage: materialize.py OUT_DIR [FAMILY ...]", file=sys.stderr)
        return 2
    out_dir = argv[0]
    names = argv[1:] or families()
    for name in names:
        materialize(name, out_dir)
    print("materialize: %d tokenizer folders in %s" % (len(names), out_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
