"""Builds the Unigram vocabulary and the charsmap of the Unigram families (run by hand).

    python3 tools/tokenize_ref/make_unigram.py      # then make_families.py

No real Unigram vocabulary (T5's, XLM-R's, ALBERT's) is reachable here, so:

- tests/data/tokenizers/base/nmt_nfkc.charsmap.bin.xz: an nmt_nfkc-like
  precompiled_charsmap built by charsmap.py;
- tests/data/tokenizers/base/unigram.json.xz: {"pieces": [[piece, score]]},
  the LLaMA-2 SentencePiece pieces of id < 6000 (byte and control pieces
  left out) plus every single-character LLaMA-2 piece, scored by a few rounds
  of hard EM (Viterbi counts) on a small corpus -- this repository's docs and
  README and the test texts, normalized by the charsmap and split by
  Metaspace as the tokenizers do -- smoothed by a Zipf prior on the LLaMA-2
  rank, so pieces the corpus never uses still get plausible log-probs.
  Scores are rounded to float32 and the pieces listed by decreasing score,
  like SentencePiece's.

write_families() then writes t5/, xlm-roberta/ and albert/ in the layouts of
transformers' T5Converter, XLMRobertaConverter and AlbertConverter, and the
synthetic unigram-bytes/ (Unigram with byte_fallback).
"""
import collections
import glob
import json
import lzma
import math
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
TOKENIZERS = os.path.join(ROOT, "tests", "data", "tokenizers")
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "ref"))
import charsmap  # noqa: E402
import hf_tokenizer  # noqa: E402

SP = "\u2581"
MAX_ID = 6000
EM_ROUNDS = 3
PRIOR_WEIGHT = 0.5


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def corpus_words(blob):
    files = sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    files.append(os.path.join(ROOT, "README.md"))
    lines = []
    for p in files:
        with open(p, encoding="utf-8") as f:
            lines += f.read().splitlines()
    for p in ("texts_families.json", "texts.json"):
        with open(os.path.join(HERE, p), encoding="utf-8") as f:
            lines += json.load(f)
    pc = hf_tokenizer.Precompiled(blob)
    pre = hf_tokenizer.build_pre_tokenizer({"type": "Metaspace", "replacement": SP,
                                            "prepend_scheme": "always", "split": True})
    words = collections.Counter()
    for line in lines:
        ns = hf_tokenizer.NStr.from_str(line)
        pc.normalize(ns)
        if len(ns):
            for w in pre([ns]):
                words[w.get()] += 1
    return words


def seed_pieces():
    with open(os.path.join(TOKENIZERS, "base", "llama2-spm.tokenizer.json.xz"), "rb") as f:
        vocab = json.loads(lzma.decompress(f.read()))["model"]["vocab"]
    out = []
    for piece, i in sorted(vocab.items(), key=lambda x: x[1]):
        if piece.startswith("<") and piece.endswith(">") and (piece.startswith("<0x")
                                                              or i < 3):
            continue
        if i < MAX_ID or len(piece) == 1:
            out.append((piece, i))
    return out


def train(words, seeds):
    ranks = [r for _, r in seeds]
    zipf = [1.0 / (r + 10.0) for r in ranks]
    zsum = sum(zipf)
    n_words = sum(words.values())
    prior = [PRIOR_WEIGHT * 4 * n_words * z / zsum for z in zipf]
    scores = [math.log(p / sum(prior)) for p in prior]
    pieces = [p for p, _ in seeds]
    for _ in range(EM_ROUNDS):
        uni = hf_tokenizer.Unigram({"vocab": [["<unk>", 0.0]] + [[p, s] for p, s in
                                                                 zip(pieces, scores)],
                                    "unk_id": 0})
        counts = collections.Counter()
        for w, c in sorted(words.items()):
            for piece in uni.encode(w):
                counts[piece] += c
        mass = [counts.get(p, 0) + pr for p, pr in zip(pieces, prior)]
        total = sum(mass)
        scores = [f32(math.log(m / total)) for m in mass]
    # SentencePiece lists the pieces of a Unigram model by decreasing score
    order = sorted(range(len(pieces)), key=lambda i: (-scores[i], i))
    return [[pieces[i], scores[i]] for i in order]


def build():
    blob = charsmap.compile_charsmap(charsmap.build_nmt_nfkc_rules())
    charsmap.check(blob, charsmap.build_nmt_nfkc_rules())
    base = os.path.join(TOKENIZERS, "base")
    with open(os.path.join(base, "nmt_nfkc.charsmap.bin.xz"), "wb") as f:
        f.write(lzma.compress(blob, preset=9 | lzma.PRESET_EXTREME))
    words = corpus_words(blob)
    pieces = train(words, seed_pieces())
    doc = {"about": "Unigram pieces for the t5, xlm-roberta and albert test families: "
                    "LLaMA-2 SentencePiece pieces scored by hard EM on a small corpus "
                    "(tools/tokenize_ref/make_unigram.py)",
           "pieces": pieces}
    data = json.dumps(doc, ensure_ascii=False, indent=0).encode("utf-8")
    with open(os.path.join(base, "unigram.json.xz"), "wb") as f:
        f.write(lzma.compress(data, preset=9 | lzma.PRESET_EXTREME))
    print("make_unigram: %d pieces, %d corpus words, charsmap %d bytes"
          % (len(pieces), sum(words.values()), len(blob)))


# ------------------------------------------------------------- families --

def write_families(mf):
    pieces = mf.load(mf.UNIGRAM)["pieces"]
    n = len(pieces)
    inc = mf.include(mf.UNIGRAM, "/pieces")
    cmap = {"type": "Precompiled", "precompiled_charsmap": mf.include(mf.CHARSMAP)}
    meta_old = {"type": "Metaspace", "replacement": SP, "add_prefix_space": True}
    meta_new = {"type": "Metaspace", "replacement": SP, "prepend_scheme": "always",
                "split": True}

    # T5 (T5Converter, as t5-small's tokenizer.json was written): Precompiled
    # normalizer only, WhitespaceSplit + Metaspace in the older add_prefix_space
    # form, "$A </s>", 100 <extra_id_N> after the pieces.
    extra = ["<extra_id_%d>" % i for i in range(99, -1, -1)]
    vocab = {"$concat": [[["<pad>", 0.0], ["</s>", 0.0], ["<unk>", 0.0]], inc,
                         [[e, 0.0] for e in extra]]}
    toks = [mf.added(0, "<pad>", True, normalized=False),
            mf.added(1, "</s>", True, normalized=False),
            mf.added(2, "<unk>", True, normalized=False)]
    toks += [mf.added(3 + n + i, e, True, normalized=False) for i, e in enumerate(extra)]
    layout = mf.tokenizer(
        toks, cmap, {"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"},
                                                            meta_old]},
        mf.template(["$A", "</s>"], [("</s>", 1)]), dict(meta_old),
        {"type": "Unigram", "unk_id": 2, "vocab": vocab})
    mf.write_family("t5", layout, {
        "tokenizer_class": "T5Tokenizer", "eos_token": "</s>", "unk_token": "<unk>",
        "pad_token": "<pad>", "extra_ids": 100, "additional_special_tokens": extra[::-1],
        "model_max_length": 512, "legacy": True, "clean_up_tokenization_spaces": True,
        "sp_model_kwargs": {}},
        mf.special_map(eos_token="</s>", unk_token="<unk>", pad_token="<pad>",
                       additional_special_tokens=extra[::-1]),
        mf.model_config("t5", "T5ForConditionalGeneration", 3 + n + 100, eos=1, pad=0))

    # XLM-R (XLMRobertaConverter; transformers 4.x SpmConverter normalizer
    # Precompiled + Replace(" {2,}" -> " "), Metaspace in the prepend_scheme
    # form): fairseq ids <s>=0 <pad>=1 </s>=2 <unk>=3, <mask> last (lstrip), and
    # RobertaProcessing.
    vocab = {"$concat": [[["<s>", 0.0], ["<pad>", 0.0], ["</s>", 0.0], ["<unk>", 0.0]],
                         inc, [["<mask>", 0.0]]]}
    toks = [mf.added(0, "<s>", True, normalized=False),
            mf.added(1, "<pad>", True, normalized=False),
            mf.added(2, "</s>", True, normalized=False),
            mf.added(3, "<unk>", True, normalized=False),
            mf.added(4 + n, "<mask>", True, normalized=False, lstrip=True)]
    layout = mf.tokenizer(
        toks, {"type": "Sequence", "normalizers": [
            cmap, {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]},
        meta_new, {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0],
                   "trim_offsets": True, "add_prefix_space": True},
        dict(meta_new), {"type": "Unigram", "unk_id": 3, "vocab": vocab,
                         "byte_fallback": False})
    mf.write_family("xlm-roberta", layout, {
        "tokenizer_class": "XLMRobertaTokenizer", "bos_token": "<s>", "eos_token": "</s>",
        "sep_token": "</s>", "cls_token": "<s>", "unk_token": "<unk>", "pad_token": "<pad>",
        "mask_token": "<mask>", "model_max_length": 512,
        "clean_up_tokenization_spaces": True},
        mf.special_map(bos_token="<s>", eos_token="</s>", sep_token="</s>", cls_token="<s>",
                       unk_token="<unk>", pad_token="<pad>",
                       mask_token={"content": "<mask>", "lstrip": True, "normalized": False,
                                   "rstrip": False, "single_word": False}),
        mf.model_config("xlm-roberta", "XLMRobertaForMaskedLM", 5 + n, bos=0, eos=2, pad=1))

    # ALBERT (AlbertConverter, do_lower_case, keep_accents=False): Replace ``
    # and '' by ", NFKD, StripAccents, Lowercase, Precompiled, Replace(" {2,}"),
    # Metaspace, [CLS] $A [SEP]; pieces ending in digit + "," lose 100.
    def albert_score(p, s):
        return s if len(p) < 2 or p[-1] != "," or not p[-2].isdigit() else f32(s - 100)
    body = [[p, albert_score(p, s)] for p, s in pieces]
    vocab = {"$concat": [[["<pad>", 0.0], ["<unk>", 0.0], ["[CLS]", 0.0], ["[SEP]", 0.0],
                          ["[MASK]", 0.0]], inc if body == pieces else body]}
    toks = [mf.added(0, "<pad>", True, normalized=False),
            mf.added(1, "<unk>", True, normalized=False),
            mf.added(2, "[CLS]", True, normalized=False),
            mf.added(3, "[SEP]", True, normalized=False),
            mf.added(4, "[MASK]", True, normalized=False, lstrip=True)]
    layout = mf.tokenizer(
        toks, {"type": "Sequence", "normalizers": [
            {"type": "Replace", "pattern": {"String": "``"}, "content": "\""},
            {"type": "Replace", "pattern": {"String": "''"}, "content": "\""},
            {"type": "NFKD"}, {"type": "StripAccents"}, {"type": "Lowercase"}, cmap,
            {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]},
        meta_new, mf.template(["[CLS]", "$A", "[SEP]"], [("[CLS]", 2), ("[SEP]", 3)]),
        dict(meta_new), {"type": "Unigram", "unk_id": 1, "vocab": vocab})
    mf.write_family("albert", layout, {
        "tokenizer_class": "AlbertTokenizer", "do_lower_case": True, "keep_accents": False,
        "remove_space": True, "bos_token": "[CLS]", "eos_token": "[SEP]",
        "unk_token": "<unk>", "sep_token": "[SEP]", "pad_token": "<pad>",
        "cls_token": "[CLS]", "mask_token": "[MASK]", "model_max_length": 512,
        "clean_up_tokenization_spaces": True},
        mf.special_map(bos_token="[CLS]", eos_token="[SEP]", unk_token="<unk>",
                       sep_token="[SEP]", pad_token="<pad>", cls_token="[CLS]",
                       mask_token={"content": "[MASK]", "lstrip": True, "normalized": False,
                                   "rstrip": False, "single_word": False}),
        mf.model_config("albert", "AlbertForMaskedLM", 5 + n, bos=2, eos=3, pad=0))


    # Unigram with byte_fallback (the layout of transformers' MoshiConverter /
    # HeliumConverter family: Precompiled, Metaspace(prepend_scheme="first",
    # split=False), SentencePiece byte pieces <0x00>..<0xFF> scored 0 like
    # SentencePiece's), <s> by TemplateProcessing. Synthetic: no such real
    # vocabulary is reachable.
    byte_pieces = [["<0x%02X>" % b, 0.0] for b in range(256)]
    vocab = {"$concat": [[["<unk>", 0.0], ["<s>", 0.0], ["</s>", 0.0]], byte_pieces, inc]}
    toks = [mf.added(0, "<unk>", True, normalized=False),
            mf.added(1, "<s>", True, normalized=False),
            mf.added(2, "</s>", True, normalized=False)]
    layout = mf.tokenizer(
        toks, cmap, {"type": "Metaspace", "replacement": SP, "prepend_scheme": "first",
                     "split": False},
        mf.template(["<s>", "$A"], [("<s>", 1)]),
        {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": SP}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        {"type": "Unigram", "unk_id": 0, "vocab": vocab, "byte_fallback": True})
    mf.write_family("unigram-bytes", layout, {
        "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>", "eos_token": "</s>",
        "unk_token": "<unk>", "model_max_length": 4096},
        mf.special_map(bos_token="<s>", eos_token="</s>", unk_token="<unk>"),
        mf.model_config("llama", "LlamaForCausalLM", 3 + 256 + n, bos=1, eos=2))


if __name__ == "__main__":
    build()
