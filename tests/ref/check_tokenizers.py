"""Cross-check of the tokenizer families against the independent Python
reference of Hugging Face's Rust pipeline (tests/ref/hf_tokenizer.py).

    /usr/bin/python3 tests/ref/check_tokenizers.py path/to/attngeom [TEXTS_PER_FAMILY]

For every family of tests/data/tokenizers/ (written out in full into a
temporary folder by tools/tokenize_ref/materialize.py):
  1. the committed expected ids tests/data/tokenize/<family>.json.xz are what the
     reference gives now (the unit tests compare the C code with that file);
  2. TEXTS_PER_FAMILY (default 60) fresh texts, drawn with a fixed seed from
     pieces of the test texts, the family's own added-token strings, runs of
     whitespace and code points of many scripts (controls, combining marks,
     CJK, emoji, byte-fallback material), give the same ids in attngeom
     (libattngeom.so next to the CLI, through ctypes) as in the reference,
     with and without special tokens.
AG_TOKREF_SEED picks another seed (default 9). Needs Debian's python3-regex.
Exits 1 on any difference, listing the first ones.
"""
import ctypes
import json
import os
import random
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tools", "tokenize_ref"))
import hf_tokenizer  # noqa: E402
import libattngeom  # noqa: E402
import materialize  # noqa: E402

R = random.Random(int(os.environ.get("AG_TOKREF_SEED", "9")))
RANGES = [(0x20, 0x7E), (0x20, 0x7E), (0x20, 0x7E), (0x00A0, 0x024F), (0x0300, 0x036F), (0x0370, 0x03FF),
          (0x0400, 0x04FF), (0x0590, 0x06FF), (0x0900, 0x097F), (0x0E00, 0x0E7F), (0x1100, 0x11FF),
          (0x2000, 0x206F), (0x3000, 0x30FF), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3), (0xFF00, 0xFFEF),
          (0x1F300, 0x1F6FF), (0x1F900, 0x1F9FF), (0x01, 0x1F), (0x7F, 0x9F)]
SPACES = [" ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", "\u00a0", "\u3000", "\u2009", "\u0085", "\u000b"]


def fragment(texts, specials):
    k = R.random()
    if k < 0.35:
        t = R.choice(texts)
        if not t:
            return ""
        a = R.randrange(len(t))
        return t[a:a + R.randint(1, 24)]
    if k < 0.5 and specials:
        return R.choice(specials)
    if k < 0.65:
        return R.choice(SPACES)
    lo, hi = R.choice(RANGES)
    out = []
    for _ in range(R.randint(1, 6)):
        c = R.randint(lo, hi)
        if not 0xD800 <= c <= 0xDFFF and c != 0:
            out.append(chr(c))
    return "".join(out)


def random_text(texts, specials):
    return "".join(fragment(texts, specials) for _ in range(R.randint(0, 8)))


class CTokenizer:
    def __init__(self, lib, folder):
        self.lib, self.tok = lib, ctypes.c_void_p()
        err = libattngeom.Error()
        if lib.ag_tokenizer_load(folder.encode(), ctypes.byref(self.tok), ctypes.byref(err)) != 0:
            raise RuntimeError(err.message.decode(errors="replace"))

    def encode(self, text, special):
        b = text.encode("utf-8")
        ids, n, err = ctypes.POINTER(ctypes.c_int32)(), ctypes.c_size_t(), libattngeom.Error()
        rc = self.lib.ag_tokenizer_encode_ex(self.tok, b, ctypes.c_size_t(len(b)), ctypes.c_uint(0 if special else 1),
                                             ctypes.byref(ids), ctypes.byref(n), ctypes.byref(err))
        if rc != 0:
            return "error: " + err.message.decode(errors="replace")
        out = [ids[i] for i in range(n.value)]
        self.lib.free(ids)
        return out

    def close(self):
        self.lib.ag_tokenizer_free(self.tok)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    lib = libattngeom.load(sys.argv[1], "check_tokenizers")
    if lib is None:
        return 0
    per_family = int(sys.argv[2]) if len(sys.argv) > 2 else 60
    with open(os.path.join(ROOT, "tools", "tokenize_ref", "texts_families.json"), encoding="utf-8") as f:
        texts = json.load(f)
    tmp = tempfile.mkdtemp(prefix="ag_tokref.")
    bad, checked = [], 0
    try:
        for fam in materialize.families():
            if fam == "tiny-llama":
                continue
            folder = os.path.join(tmp, fam)
            materialize.materialize(fam, tmp)
            ref = hf_tokenizer.Tokenizer.from_folder(folder)
            expected = json.loads(materialize.read_text(
                os.path.join(ROOT, "tests", "data", "tokenize", fam + ".json.xz")))
            stale = [e["text"] for e in expected if ref.encode(e["text"]) != e["ids"]]
            if stale:
                bad.append((fam, stale[0], "tests/data/tokenize/%s.json.xz differs from the reference on %d texts"
                            % (fam, len(stale))))
            with open(os.path.join(folder, "tokenizer.json"), encoding="utf-8") as f:
                specials = [t["content"] for t in json.load(f).get("added_tokens", [])][:40]
            ct = CTokenizer(lib, folder)
            for _ in range(per_family):
                text = random_text(texts, specials)
                for special in (True, False):
                    want, got = ref.encode(text, special), ct.encode(text, special)
                    checked += 1
                    if got != want:
                        bad.append((fam, text, "attngeom %s, reference %s" % (got, want)))
            ct.close()
            shutil.rmtree(folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for fam, text, what in bad[:10]:
        print("check_tokenizers: %s %s: %s" % (fam, json.dumps(text, ensure_ascii=True), what))
    if bad:
        print("check_tokenizers: %d differences" % len(bad))
        return 1
    print("check_tokenizers: %d encodings equal to the Python reference; expected ids current" % checked)
    return 0


if __name__ == "__main__":
    sys.exit(main())
