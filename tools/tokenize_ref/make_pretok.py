"""Writes tests/data/tokenize/pretok/pieces.json.xz (xz -9e): the pieces each family's
pre-tokenizer makes of the 407 texts of texts_families.json, computed by the
pre-tokenizer functions of the Python reference (tests/ref/hf_tokenizer.py,
Hugging Face's Rust semantics).

    /usr/bin/python3 tools/tokenize_ref/make_pretok.py [--check]

Each text goes to the pre-tokenizer alone (no normalizer, no added tokens),
as one split at offset 0. Families sharing a pre_tokenizer object share one
entry. Two configurations no family uses are added: o200k_base's Split regex
(tiktoken's, as Hugging Face's tiktoken converter writes it) and Metaspace
with prepend_scheme "never". tests/tokenizer/test_tk_pretok.c compares the C
pre-tokenizers with this file. --check compares instead of writing (exit 1
when it differs). Needs Debian's python3-regex.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "ref"))
import hf_tokenizer  # noqa: E402
import materialize  # noqa: E402

TOKENIZERS = os.path.join(ROOT, "tests", "data", "tokenizers")
OUT = os.path.join(ROOT, "tests", "data", "tokenize", "pretok", "pieces.json.xz")
SKIP = {"tiny-llama", "base"}
O200K = ("[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+"
         "(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+"
         "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}|"
         " ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")
EXTRA = {
    "o200k": {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": O200K}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
         "use_regex": False}]},
    "metaspace-never": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "never",
                        "split": True},
}


def family_config(fam):
    for name in ("tokenizer.layout.json", "tokenizer.json"):
        p = os.path.join(TOKENIZERS, fam, name)
        if os.path.exists(p):
            with open(p, encoding="utf-8") as f:
                return json.load(f).get("pre_tokenizer")
    raise FileNotFoundError(fam)


def configs():
    """[(names, cfg)] for every distinct non-null pre_tokenizer."""
    seen = {}
    for fam in sorted(os.listdir(TOKENIZERS)):
        if fam in SKIP or not os.path.isdir(os.path.join(TOKENIZERS, fam)):
            continue
        cfg = family_config(fam)
        if cfg is not None:
            seen.setdefault(json.dumps(cfg, sort_keys=True), ([], cfg))[0].append(fam)
    out = list(seen.values())
    out.extend(([name], cfg) for name, cfg in EXTRA.items())
    return out


def pieces(cfg, text):
    run = hf_tokenizer.build_pre_tokenizer(cfg)
    return [ns.get() for ns in run([hf_tokenizer.NStr.from_str(text)]) if len(ns)]


def dump(entries):
    lines = ['{"texts": "tools/tokenize_ref/texts_families.json", "configs": [']
    for k, (names, cfg, per_text) in enumerate(entries):
        lines.append(' {"families": %s,' % json.dumps(names))
        lines.append('  "pre_tokenizer": %s,' % json.dumps(cfg, ensure_ascii=False))
        lines.append('  "pieces": [')
        lines.append(",\n".join("   " + json.dumps(p, ensure_ascii=False, separators=(",", ":"))
                                for p in per_text))
        lines.append("  ]}" + ("," if k + 1 < len(entries) else ""))
    lines.append("]}")
    return "\n".join(lines) + "\n"


def main(argv):
    with open(os.path.join(HERE, "texts_families.json"), encoding="utf-8") as f:
        texts = json.load(f)
    entries = [(names, cfg, [pieces(cfg, t) for t in texts]) for names, cfg in configs()]
    body = dump(entries)
    if "--check" in argv:
        same = os.path.exists(OUT) and materialize.read_text(OUT) == body
        print("pretok pieces: %s" % ("same" if same else "DIFFERENT"))
        return 0 if same else 1
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    materialize.write_xz(OUT, body)
    print("wrote %s (%d configurations, %d bytes)" % (OUT, len(entries), len(body.encode())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
