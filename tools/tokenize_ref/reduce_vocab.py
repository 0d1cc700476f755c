"""A faithfully reduced copy of a real BPE tokenizer.json for a fixed set of
texts (tests/data/vocab/, issue 29 item 2).

    /usr/bin/python3 tools/tokenize_ref/reduce_vocab.py FULL_DIR OUT_DIR TEXTS_JSON

Keeps the normalizer, pre-tokenizer, post-processor, decoder, added_tokens
and model options of FULL_DIR/tokenizer.json unchanged and restricts
model.vocab and model.merges to the entries that can occur while encoding
the texts: a vocabulary entry is kept when it is a substring of some form of
some text (the text, its NFC/NFD/NFKC forms, with " " as "▁", and the
byte-level image of each, GPT-2's bytes_to_unicode), plus byte-fallback
<0xNN> tokens, the unk token and the added tokens' entries; a merge "a b" when a, b and ab all are.
Entries keep their ids and merges their relative rank order.

Why that is faithful: BPE applies, at each step, the lowest-ranked merge among
the pairs present (tokenizers/src/models/bpe/word.rs, Word::merge_all). Every
merge applied on the full file joins two pieces of a pre-tokenized word into
a piece of that word, so it is kept; the candidates of the reduced file are
a subset of the full file's, so the lowest of them is the same merge, step
by step, and encoding stops at the same point. Words found whole in the
vocabulary (ignore_merges) are substrings too. The reduction holds for the
given texts only: tests/ref/check_vocab.py also encodes them through the
reduced file with the Rust library and requires the full file's ids.

tokenizer_config.json is copied without added_tokens_decoder and
chat_template (transformers rebuilds the same added tokens from
tokenizer.json; neither changes encode's ids); special_tokens_map.json as is.
"""
import json
import os
import sys
import unicodedata

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "ref"))
from hf_tokenizer import BYTES_CHAR  # noqa: E402  GPT-2's bytes_to_unicode

MAX_LEN = 160  # longer than any vocabulary entry of the five files


def forms(text):
    out = set()
    for f in ("NFC", "NFD", "NFKC", "NFKD"):
        for t in (text, unicodedata.normalize(f, text)):
            for u in (t, t.replace(" ", "\u2581"), "\u2581" + t.replace(" ", "\u2581")):
                out.add(u)
                out.add("".join(BYTES_CHAR[b] for b in u.encode("utf-8")))
    return out


def substrings(texts):
    subs = set()
    for text in texts:
        for f in forms(text):
            for i in range(len(f)):
                for j in range(i + 1, min(len(f), i + MAX_LEN) + 1):
                    subs.add(f[i:j])
    return subs


def reduce_model(model, subs, added):
    keep = {k: v for k, v in model["vocab"].items()
            if k in subs or k in added or (k.startswith("<0x") and len(k) == 6 and k.endswith(">")) or k == model.get("unk_token")}
    merges = []
    for m in model["merges"]:
        a, b = m if isinstance(m, list) else m.split(" ", 1)
        if a in keep and b in keep and a + b in keep:
            merges.append(m)
    out = dict(model)
    out["vocab"] = keep
    out["merges"] = merges
    return out


def reduce_folder(full, out_dir, texts):
    """Writes the reduced tokenizer.json and tokenizer_config.json of the
    folder full into out_dir for the list of strings texts."""
    with open(os.path.join(full, "tokenizer.json"), encoding="utf-8") as f:
        tok = json.load(f)
    added = {a["content"] for a in tok["added_tokens"]}
    tok["model"] = reduce_model(tok["model"], substrings(texts), added)
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False, separators=(",", ":"))
    cfg_path = os.path.join(full, "tokenizer_config.json")
    if os.path.exists(cfg_path):
        with open(cfg_path, encoding="utf-8") as f:
            cfg = json.load(f)
        cfg.pop("added_tokens_decoder", None)
        cfg.pop("chat_template", None)
        with open(os.path.join(out_dir, "tokenizer_config.json"), "w", encoding="utf-8") as f:
            json.dump(cfg, f, ensure_ascii=False, indent=2)
            f.write("\n")
    print("%s: %d vocabulary entries, %d merges" % (out_dir, len(tok["model"]["vocab"]), len(tok["model"]["merges"])))


def main():
    full, out_dir, texts_file = sys.argv[1:4]
    with open(texts_file, encoding="utf-8") as f:
        reduce_folder(full, out_dir, json.load(f))


if __name__ == "__main__":
    main()
