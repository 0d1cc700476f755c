"""Families that exercise the components the real layouts leave out (run by hand).

    python3 tools/tokenize_ref/make_synthetic.py    # trains the small BPEs, then make_families.py

- openai-gpt: the layout of transformers' OpenAIGPTConverter (BertNormalizer
  lowercase, BertPreTokenizer, BPE with unk_token and end_of_word_suffix
  "</w>", no post-processor) over a small BPE trained here;
- bpe-prefix: BPE with continuing_subword_prefix "##" (merges "a ##b" make
  "ab"), unk_token without fuse_unk, merges written as [a, b] pairs, Whitespace
  pre-tokenizer, BertProcessing; small BPE trained here;
- wordpiece-mix: tiny-bert's WordPiece vocabulary behind NFD, StripAccents,
  Lowercase, Strip and a String Replace, then Whitespace, Digits and
  Punctuation pre-tokenizers, a short max_input_chars_per_word, BertProcessing,
  and added tokens with lstrip/rstrip/single_word/normalized;
- split-mix: GPT-2's byte-level vocabulary behind NFKC and a Regex Replace,
  then Split with every behaviour (Contiguous, MergedWithNext,
  MergedWithPrevious, Removed with invert) and ByteLevel without its regex,
  a TemplateProcessing special token of two ids, and a normalized added token
  whose content the normalizer changes.
None of these is a real model's file; each component's settings are ones real
files use.
"""
import collections
import json
import lzma
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
TOKENIZERS = os.path.join(ROOT, "tests", "data", "tokenizers")
sys.path.insert(0, os.path.join(ROOT, "tests", "ref"))
sys.path.insert(0, HERE)
import hf_tokenizer  # noqa: E402

SMALL = "base/small-bpe.json.xz"
N_MERGES = 1500


def corpus_lines():
    import glob
    lines = []
    for p in sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))) + [
            os.path.join(ROOT, "README.md")]:
        with open(p, encoding="utf-8") as f:
            lines += f.read().splitlines()
    with open(os.path.join(HERE, "texts_families.json"), encoding="utf-8") as f:
        lines += json.load(f)
    return lines


def words_of(lines, normalizer, pre_tokenizer):
    n = hf_tokenizer.build_normalizer(normalizer)
    p = hf_tokenizer.build_pre_tokenizer(pre_tokenizer)
    words = collections.Counter()
    for line in lines:
        ns = hf_tokenizer.NStr.from_str(line)
        if n:
            n(ns)
        if len(ns):
            for w in p([ns]):
                words[w.get()] += 1
    return words


def train_bpe(words, prefix=None, suffix=None, n_merges=N_MERGES):
    """Plain BPE training: most frequent pair first, ties by the pair's text."""
    def symbols(w):
        out = []
        for i, c in enumerate(w):
            s = c
            if i > 0 and prefix:
                s = prefix + s
            if i == len(w) - 1 and suffix:
                s = s + suffix
            out.append(s)
        return out
    corpus = {w: symbols(w) for w in words}
    alphabet = sorted({s for syms in corpus.values() for s in syms})
    merges = []
    plen = len(prefix) if prefix else 0
    for _ in range(n_merges):
        pairs = collections.Counter()
        for w, syms in corpus.items():
            for a, b in zip(syms, syms[1:]):
                pairs[(a, b)] += words[w]
        if not pairs:
            break
        (a, b), _ = min(pairs.items(), key=lambda kv: (-kv[1], kv[0]))
        new = a + (b[plen:] if prefix and b.startswith(prefix) else b)
        merges.append((a, b, new))
        for w, syms in corpus.items():
            i, out = 0, []
            while i < len(syms):
                if i + 1 < len(syms) and syms[i] == a and syms[i + 1] == b:
                    out.append(new)
                    i += 2
                else:
                    out.append(syms[i])
                    i += 1
            corpus[w] = out
    return alphabet, merges


def build():
    lines = corpus_lines()
    out = {}
    gpt_words = words_of(lines, {"type": "BertNormalizer", "lowercase": True},
                         {"type": "BertPreTokenizer"})
    alpha, merges = train_bpe(gpt_words, suffix="</w>")
    vocab = {"<unk>": 0}
    for s in alpha + [m[2] for m in merges]:
        vocab.setdefault(s, len(vocab))
    out["openai-gpt"] = {"vocab": vocab, "merges": ["%s %s" % (a, b) for a, b, _ in merges]}
    pre_words = words_of(lines, None, {"type": "Whitespace"})
    alpha, merges = train_bpe(pre_words, prefix="##")
    vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4}
    for s in alpha + [m[2] for m in merges]:
        vocab.setdefault(s, len(vocab))
    out["bpe-prefix"] = {"vocab": vocab, "merges": [[a, b] for a, b, _ in merges]}
    data = json.dumps(out, ensure_ascii=False, indent=0).encode("utf-8")
    with open(os.path.join(TOKENIZERS, SMALL), "wb") as f:
        f.write(lzma.compress(data, preset=9 | lzma.PRESET_EXTREME))
    print("make_synthetic: openai-gpt %d tokens, bpe-prefix %d tokens"
          % (len(out["openai-gpt"]["vocab"]), len(out["bpe-prefix"]["vocab"])))


def write_families(mf):
    small = mf.load(SMALL)

    # OpenAI GPT (OpenAIGPTConverter)
    n = len(small["openai-gpt"]["vocab"])
    layout = mf.tokenizer(
        [mf.added(0, "<unk>", True, normalized=False)],
        {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
         "strip_accents": None, "lowercase": True},
        {"type": "BertPreTokenizer"}, None, {"type": "BPEDecoder", "suffix": "</w>"},
        mf.bpe(mf.include(SMALL, "/openai-gpt/vocab"), mf.include(SMALL, "/openai-gpt/merges"),
               unk="<unk>", suffix="</w>", fuse_unk=False))
    mf.write_family("openai-gpt", layout, {
        "tokenizer_class": "OpenAIGPTTokenizer", "unk_token": "<unk>",
        "model_max_length": 512, "clean_up_tokenization_spaces": True},
        mf.special_map(unk_token="<unk>"),
        mf.model_config("openai-gpt", "OpenAIGPTLMHeadModel", n))

    # BPE with a continuing-subword prefix, merges as pairs
    n = len(small["bpe-prefix"]["vocab"])
    toks = [mf.added(i, t, True, normalized=False)
            for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])]
    layout = mf.tokenizer(
        toks, None, {"type": "Whitespace"},
        {"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]},
        {"type": "WordPiece", "prefix": "##", "cleanup": True},
        mf.bpe(mf.include(SMALL, "/bpe-prefix/vocab"), mf.include(SMALL, "/bpe-prefix/merges"),
               unk="[UNK]", prefix="##", fuse_unk=False, ignore_merges=False))
    mf.write_family("bpe-prefix", layout, {
        "tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "[UNK]",
        "cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]",
        "mask_token": "[MASK]", "model_max_length": 512},
        mf.special_map(unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]",
                       pad_token="[PAD]", mask_token="[MASK]"),
        mf.model_config("bert", "BertForMaskedLM", n))

    # WordPiece behind the normalizers and pre-tokenizers BERT's layout skips
    bert = os.path.join("..", "models", "tiny-bert", "tokenizer.json")
    bert_vocab = json.load(open(os.path.join(TOKENIZERS, bert), encoding="utf-8"))["model"]["vocab"]
    n = len(bert_vocab)
    toks = [mf.added(0, "[PAD]", True, normalized=False),
            mf.added(1, "[UNK]", True, normalized=False),
            mf.added(2, "[CLS]", True, normalized=False),
            mf.added(3, "[SEP]", True, normalized=False),
            mf.added(4, "[MASK]", True, normalized=False, lstrip=True, rstrip=True),
            mf.added(n, "new york", False, normalized=True),
            mf.added(n + 1, "<br>", False, normalized=False, single_word=True, rstrip=True),
            mf.added(n + 2, "@@", False, normalized=False, single_word=True)]
    layout = mf.tokenizer(
        toks, {"type": "Sequence", "normalizers": [
            {"type": "NFD"}, {"type": "StripAccents"}, {"type": "Lowercase"},
            {"type": "Strip", "strip_left": True, "strip_right": True},
            {"type": "Replace", "pattern": {"String": "\u2019"}, "content": "'"}]},
        {"type": "Sequence", "pretokenizers": [
            {"type": "Whitespace"}, {"type": "Digits", "individual_digits": False},
            {"type": "Punctuation", "behavior": "Isolated"}]},
        {"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]},
        {"type": "WordPiece", "prefix": "##", "cleanup": True},
        {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
         "max_input_chars_per_word": 20, "vocab": mf.include(bert, "/model/vocab")})
    mf.write_family("wordpiece-mix", layout, {
        "tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "[UNK]",
        "cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]",
        "mask_token": "[MASK]", "model_max_length": 256},
        mf.special_map(unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]",
                       pad_token="[PAD]", mask_token="[MASK]"),
        mf.model_config("bert", "BertForMaskedLM", n + 3))

    # Byte-level BPE behind every Split behaviour
    gpt2 = mf.load(mf.GPT2)
    n = len(gpt2["model"]["vocab"])
    toks = [mf.added(n - 1, "<|endoftext|>", True, normalized=False, rstrip=True),
            mf.added(n, "\ufb01x", False, normalized=True)]
    two = {"type": "TemplateProcessing",
           "single": [{"Sequence": {"id": "A", "type_id": 0}},
                      {"SpecialToken": {"id": "<|eot|>", "type_id": 0}}],
           "pair": [{"Sequence": {"id": "A", "type_id": 0}},
                    {"Sequence": {"id": "B", "type_id": 1}},
                    {"SpecialToken": {"id": "<|eot|>", "type_id": 1}}],
           "special_tokens": {"<|eot|>": {"id": "<|eot|>", "ids": [n - 1, 198],
                                          "tokens": ["<|endoftext|>", "\u010a"]}}}
    layout = mf.tokenizer(
        toks, {"type": "Sequence", "normalizers": [
            {"type": "NFKC"}, {"type": "Replace", "pattern": {"Regex": "\\s+"},
                               "content": " "}]},
        {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"String": "="}, "behavior": "Contiguous",
             "invert": False},
            {"type": "Split", "pattern": {"String": "-"}, "behavior": "MergedWithNext",
             "invert": False},
            {"type": "Split", "pattern": {"Regex": "[.,;:!?]"},
             "behavior": "MergedWithPrevious", "invert": False},
            {"type": "Split", "pattern": {"Regex": "\\p{L}+|\\p{N}+|[^\\s\\p{L}\\p{N}]+"},
             "behavior": "Removed", "invert": True},
            mf.byte_level(add_prefix_space=True, use_regex=False)]},
        two, mf.byte_level(),
        mf.bpe(mf.include(mf.GPT2, "/model/vocab"), mf.include(mf.GPT2, "/model/merges"),
               prefix="", suffix=""))
    mf.write_family("split-mix", layout, {
        "tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|endoftext|>",
        "model_max_length": 1024},
        mf.special_map(eos_token="<|endoftext|>"),
        mf.model_config("gpt2", "GPT2LMHeadModel", n + 1, eos=n - 1))


if __name__ == "__main__":
    build()
