"""Writes the family folders of tests/data/tokenizers/ (run by hand, once).

    python3 tools/tokenize_ref/make_families.py

Each folder gets the small files Hugging Face writes (config.json with
model_type, tokenizer_config.json, special_tokens_map.json) and a
tokenizer.layout.json: the family's tokenizer.json, in the layout
transformers' converter for that family writes, with the vocabulary and
merges taken from a shared base (see materialize.py). Which converter each
layout follows is written next to each family below and in
tests/data/tokenize/README.md. The Unigram families (t5, xlm-roberta, albert)
come from make_unigram.py's vocabulary and charsmap, the synthetic ones
(openai-gpt, bpe-prefix, wordpiece-mix, split-mix) from make_synthetic.py.
"""
import json
import lzma
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
TOKENIZERS = os.path.join(ROOT, "tests", "data", "tokenizers")
SP = "\u2581"

LLAMA2 = "base/llama2-spm.tokenizer.json.xz"
CL100K = "base/cl100k-split.tokenizer.json.xz"
GPT2 = "../../../models/tiny-gpt2/tokenizer.json"
UNIGRAM = "base/unigram.json.xz"
# The two folders the base vocabularies were copied from (their small files are
# copied verbatim into llama2-legacy/ and llama3/).
SHARED = os.environ.get("AG_SHARED_TOKENIZERS", "/work/shared/tokenizers")
CHARSMAP = "base/nmt_nfkc.charsmap.bin.xz"


def load(path):
    full = os.path.normpath(os.path.join(TOKENIZERS, path))
    with open(full, "rb") as f:
        data = f.read()
    if full.endswith(".xz"):
        data = lzma.decompress(data)
    return json.loads(data)


def include(path, pointer="", rename=None):
    d = {"$include": path}
    if pointer:
        d["pointer"] = pointer
    if rename:
        d["rename"] = rename
    return d


def added(tid, content, special, normalized=None, lstrip=False, rstrip=False,
          single_word=False):
    return {"id": tid, "content": content, "single_word": single_word, "lstrip": lstrip,
            "rstrip": rstrip, "normalized": (not special) if normalized is None else normalized,
            "special": special}


def decoder_entry(t):
    return {k: t[k] for k in ("content", "lstrip", "normalized", "rstrip", "single_word",
                              "special")}


def template(single, special_ids):
    """TemplateProcessing as the converters write it: `single` is a list of
    "$A" and special-token names (type_id 0); the pair template repeats it with
    $B and type_id 1 ("<s>:0 $A:0 <s>:1 $B:1", "$A:0 </s>:0 $B:1 </s>:1")."""
    def piece(p, type_id):
        if p in ("$A", "$B"):
            return {"Sequence": {"id": p[1], "type_id": type_id}}
        return {"SpecialToken": {"id": p, "type_id": type_id}}
    return {"type": "TemplateProcessing",
            "single": [piece(p, 0) for p in single],
            "pair": [piece(p, 0) for p in single]
            + [piece("$B" if p == "$A" else p, 1) for p in single],
            "special_tokens": {name: {"id": name, "ids": [tid], "tokens": [name]}
                               for name, tid in special_ids}}


def tokenizer(added_tokens, normalizer, pre_tokenizer, post_processor, decoder, model):
    return {"version": "1.0", "truncation": None, "padding": None,
            "added_tokens": added_tokens, "normalizer": normalizer,
            "pre_tokenizer": pre_tokenizer, "post_processor": post_processor,
            "decoder": decoder, "model": model}


def bpe(vocab, merges, unk=None, prefix=None, suffix=None, fuse_unk=False,
        byte_fallback=False, ignore_merges=None):
    m = {"type": "BPE", "dropout": None, "unk_token": unk,
         "continuing_subword_prefix": prefix, "end_of_word_suffix": suffix,
         "fuse_unk": fuse_unk, "byte_fallback": byte_fallback}
    if ignore_merges is not None:
        m["ignore_merges"] = ignore_merges
    m["vocab"] = vocab
    m["merges"] = merges
    return m


def byte_level(add_prefix_space=False, trim_offsets=True, use_regex=True):
    return {"type": "ByteLevel", "add_prefix_space": add_prefix_space,
            "trim_offsets": trim_offsets, "use_regex": use_regex}


def special_map(**tokens):
    return {k: v for k, v in tokens.items() if v is not None}


def write_json(path, doc, sort_keys):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2, ensure_ascii=False, sort_keys=sort_keys)
        f.write("\n")


def write_family(name, layout, tok_config, special_tokens, config, copy_from=None):
    """copy_from: a folder whose three small files are copied verbatim."""
    d = os.path.join(TOKENIZERS, name)
    os.makedirs(d, exist_ok=True)
    write_json(os.path.join(d, "tokenizer.layout.json"), layout, False)
    if copy_from:
        for f in ("config.json", "tokenizer_config.json", "special_tokens_map.json"):
            with open(os.path.join(copy_from, f), "rb") as src, \
                    open(os.path.join(d, f), "wb") as dst:
                dst.write(src.read())
        return
    tok_config = dict(tok_config)
    tok_config["added_tokens_decoder"] = {str(t["id"]): decoder_entry(t)
                                          for t in layout["added_tokens"]}
    write_json(os.path.join(d, "tokenizer_config.json"), tok_config, True)
    write_json(os.path.join(d, "special_tokens_map.json"), special_tokens, True)
    write_json(os.path.join(d, "config.json"), config, True)


def link_family(name, src_dir):
    """A folder of relative symlinks to an existing model folder's files."""
    d = os.path.join(TOKENIZERS, name)
    os.makedirs(d, exist_ok=True)
    for f in ("config.json", "tokenizer.json", "tokenizer_config.json",
              "special_tokens_map.json"):
        link = os.path.join(d, f)
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(os.path.relpath(os.path.join(src_dir, f), d), link)


def model_config(model_type, arch, vocab_size, bos=None, eos=None, pad=None):
    c = {"architectures": [arch], "model_type": model_type, "vocab_size": vocab_size}
    if bos is not None:
        c["bos_token_id"] = bos
    if eos is not None:
        c["eos_token_id"] = eos
    if pad is not None:
        c["pad_token_id"] = pad
    return c


# ------------------------------------------------------------ BPE families --

def gpt2_families():
    link_family("gpt2", os.path.join(ROOT, "models", "tiny-gpt2"))
    link_family("bert", os.path.join(ROOT, "tests", "data", "models", "tiny-bert"))
    gpt2 = load(GPT2)
    n = len(gpt2["model"]["vocab"])  # 50257, <|endoftext|> = 50256 inside the vocab
    vocab, merges = include(GPT2, "/model/vocab"), include(GPT2, "/model/merges")

    # RoBERTa: RobertaConverter (ByteLevel + RobertaProcessing). roberta-base's own
    # vocabulary is GPT-2's reordered by fairseq; here GPT-2's order is kept and the
    # five special tokens are appended (<mask> lstrip like roberta-base's).
    toks = [added(n, "<s>", True, normalized=True), added(n + 1, "<pad>", True, normalized=True),
            added(n + 2, "</s>", True, normalized=True), added(n + 3, "<unk>", True, normalized=True),
            added(n + 4, "<mask>", True, normalized=False, lstrip=True)]
    layout = tokenizer(
        toks, None, byte_level(), {"type": "RobertaProcessing", "sep": ["</s>", n + 2],
                                   "cls": ["<s>", n], "trim_offsets": True,
                                   "add_prefix_space": False},
        byte_level(), bpe(vocab, merges, prefix="", suffix=""))
    write_family("roberta", layout, {
        "tokenizer_class": "RobertaTokenizer", "add_prefix_space": False, "errors": "replace",
        "trim_offsets": True, "bos_token": "<s>", "eos_token": "</s>", "sep_token": "</s>",
        "cls_token": "<s>", "unk_token": "<unk>", "pad_token": "<pad>",
        "mask_token": "<mask>", "model_max_length": 512, "clean_up_tokenization_spaces": False},
        special_map(bos_token="<s>", eos_token="</s>", sep_token="</s>", cls_token="<s>",
                    unk_token="<unk>", pad_token="<pad>",
                    mask_token={"content": "<mask>", "lstrip": True, "normalized": False,
                                "rstrip": False, "single_word": False}),
        model_config("roberta", "RobertaForMaskedLM", n + 5, bos=n, eos=n + 2, pad=n + 1))

    # GPT-NeoX / Pythia: the layout of EleutherAI's tokenizer.json (NFC + ByteLevel,
    # older BPE fields without fuse_unk/byte_fallback, <|padding|> and the 23
    # whitespace-run added tokens, normalized and not special). NeoX's own
    # vocabulary is not reachable: GPT-2's stands in.
    toks = [added(n - 1, "<|endoftext|>", True, normalized=False),
            added(n, "<|padding|>", True, normalized=False)]
    for i, k in enumerate(range(24, 1, -1)):
        toks.append(added(n + 1 + i, " " * k, False, normalized=True))
    model = {"type": "BPE", "dropout": None, "unk_token": None,
             "continuing_subword_prefix": None, "end_of_word_suffix": None,
             "vocab": vocab, "merges": merges}
    layout = tokenizer(toks, {"type": "NFC"}, byte_level(), byte_level(), byte_level(), model)
    write_family("pythia", layout, {
        "tokenizer_class": "GPTNeoXTokenizer", "add_bos_token": False, "add_eos_token": False,
        "add_prefix_space": False, "bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
        "unk_token": "<|endoftext|>", "pad_token": None, "model_max_length": 2048,
        "clean_up_tokenization_spaces": True},
        special_map(bos_token="<|endoftext|>", eos_token="<|endoftext|>",
                    unk_token="<|endoftext|>"),
        model_config("gpt_neox", "GPTNeoXForCausalLM", n + 24, bos=n - 1, eos=n - 1))

    modernbert_family(n, vocab, merges, toks)

    # StarCoder: Digits(individual_digits) then ByteLevel, the layout of
    # bigcode/starcoder's tokenizer.json; GPT-2's vocabulary stands in.
    toks = [added(n - 1, "<|endoftext|>", True, normalized=False),
            added(n, "<fim_prefix>", True, normalized=False),
            added(n + 1, "<fim_middle>", True, normalized=False),
            added(n + 2, "<fim_suffix>", True, normalized=False)]
    layout = tokenizer(
        toks, None,
        {"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": True},
                                               byte_level()]},
        byte_level(trim_offsets=False), byte_level(),
        bpe(vocab, merges, prefix="", suffix="", ignore_merges=False))
    write_family("starcoder", layout, {
        "tokenizer_class": "GPT2Tokenizer", "add_prefix_space": False,
        "bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
        "unk_token": "<|endoftext|>", "model_max_length": 8192,
        "clean_up_tokenization_spaces": True},
        special_map(bos_token="<|endoftext|>", eos_token="<|endoftext|>",
                    unk_token="<|endoftext|>"),
        model_config("gpt_bigcode", "GPTBigCodeForCausalLM", n + 3, bos=n - 1, eos=n - 1))


def modernbert_family(n, vocab, merges, neox_toks):
    """ModernBERT (answerdotai/ModernBERT-base's tokenizer.json): GPT-NeoX's
    layout (NFC + ByteLevel, the NeoX added tokens) with the BERT specials
    after them ([MASK] lstrip) and TemplateProcessing "[CLS] $A [SEP]";
    tokenizer_class PreTrainedTokenizerFast, so the template of tokenizer.json
    is the one applied. GPT-2's vocabulary stands in for NeoX's (as pythia)."""
    m = n + 24
    names = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]
    toks = list(neox_toks) + [added(m + i, t, True, normalized=False, lstrip=t == "[MASK]")
                              for i, t in enumerate(names)]
    model = {"type": "BPE", "dropout": None, "unk_token": None,
             "continuing_subword_prefix": "", "end_of_word_suffix": "", "fuse_unk": False,
             "byte_fallback": False, "vocab": vocab, "merges": merges}
    layout = tokenizer(toks, {"type": "NFC"}, byte_level(),
                       template(["[CLS]", "$A", "[SEP]"], [("[CLS]", m + 1), ("[SEP]", m + 2)]),
                       byte_level(), model)
    write_family("modernbert", layout, {
        "tokenizer_class": "PreTrainedTokenizerFast", "clean_up_tokenization_spaces": True,
        "cls_token": "[CLS]", "sep_token": "[SEP]", "unk_token": "[UNK]", "pad_token": "[PAD]",
        "mask_token": "[MASK]", "model_input_names": ["input_ids", "attention_mask"],
        "model_max_length": 8192},
        special_map(cls_token="[CLS]", sep_token="[SEP]", unk_token="[UNK]", pad_token="[PAD]",
                    mask_token={"content": "[MASK]", "lstrip": True, "normalized": False,
                                "rstrip": False, "single_word": False}),
        model_config("modernbert", "ModernBertForMaskedLM", m + 5, bos=m + 1, eos=m + 2, pad=m + 3))


LLAMA_DECODER = {"type": "Sequence", "decoders": [
    {"type": "Replace", "pattern": {"String": SP}, "content": " "},
    {"type": "ByteFallback"}, {"type": "Fuse"},
    {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}


def llama_families():
    base = load(LLAMA2)
    n = len(base["model"]["vocab"])  # 32000
    vocab, merges = include(LLAMA2, "/model/vocab"), include(LLAMA2, "/model/merges")
    shared = SHARED + "/llama2-spm"
    llama_config = model_config("llama", "LlamaForCausalLM", n, bos=1, eos=2)
    tok_cfg = {"tokenizer_class": "LlamaTokenizer", "add_bos_token": True,
               "add_eos_token": False, "bos_token": "<s>", "eos_token": "</s>",
               "unk_token": "<unk>", "pad_token": None, "legacy": True,
               "model_max_length": 4096, "clean_up_tokenization_spaces": False,
               "spaces_between_special_tokens": False, "sp_model_kwargs": {}}
    smap = {k: {"content": v, "lstrip": False, "normalized": False, "rstrip": False,
                "single_word": False}
            for k, v in (("bos_token", "<s>"), ("eos_token", "</s>"), ("unk_token", "<unk>"))}

    # LLaMA-2 legacy layout: the shared llama2-spm folder's tokenizer.json as is
    # (LlamaConverter with legacy=True: Prepend("▁") + Replace(" ", "▁")).
    layout = dict(base)
    layout["model"] = dict(base["model"], vocab=vocab, merges=merges)
    write_family("llama2-legacy", layout, None, None, None, copy_from=shared)

    # LLaMA-2 non-legacy layout (LlamaConverter with legacy=False): no normalizer,
    # Metaspace(prepend_scheme="first", split=False).
    layout = dict(layout, normalizer=None,
                  pre_tokenizer={"type": "Metaspace", "replacement": SP,
                                 "prepend_scheme": "first", "split": False})
    write_family("llama2", layout, dict(tok_cfg, legacy=False, add_prefix_space=None), smap,
                 llama_config)

    # Gemma (GemmaConverter): Replace(" ", "▁") normalizer, no pre-tokenizer,
    # byte-fallback BPE with fuse_unk, <bos> by TemplateProcessing, user-defined
    # symbols as non-special added tokens matched on the raw text. Gemma's own
    # vocabulary is not reachable: LLaMA-2's stands in, <s>/</s> renamed.
    rename = {"<s>": "<bos>", "</s>": "<eos>"}
    # An added token already in the vocabulary keeps its vocabulary id ("▁▁"),
    # as Rust's AddedVocabulary assigns it (Gemma's user-defined pieces too).
    toks = [added(0, "<unk>", True, normalized=False), added(1, "<bos>", True, normalized=False),
            added(2, "<eos>", True, normalized=False),
            added(base["model"]["vocab"][SP + SP], SP + SP, False, normalized=False),
            added(n, "<pad>", True, normalized=False),
            added(n + 1, "<start_of_turn>", True, normalized=False),
            added(n + 2, "<end_of_turn>", True, normalized=False),
            added(n + 3, "\n", False, normalized=False),
            added(n + 4, "\n\n", False, normalized=False),
            added(n + 5, "<table>", False, normalized=False)]
    layout = tokenizer(
        toks, {"type": "Replace", "pattern": {"String": " "}, "content": SP}, None,
        template(["<bos>", "$A"], [("<bos>", 1)]),
        {"type": "Sequence", "decoders": LLAMA_DECODER["decoders"][:3]},
        bpe(include(LLAMA2, "/model/vocab", rename), merges, unk="<unk>", fuse_unk=True,
            byte_fallback=True, ignore_merges=False))
    write_family("gemma", layout, {
        "tokenizer_class": "GemmaTokenizer", "add_bos_token": True, "add_eos_token": False,
        "bos_token": "<bos>", "eos_token": "<eos>", "unk_token": "<unk>", "pad_token": "<pad>",
        "additional_special_tokens": ["<start_of_turn>", "<end_of_turn>"],
        "model_max_length": 8192, "clean_up_tokenization_spaces": False,
        "spaces_between_special_tokens": False, "sp_model_kwargs": {}},
        special_map(bos_token="<bos>", eos_token="<eos>", unk_token="<unk>", pad_token="<pad>",
                    additional_special_tokens=["<start_of_turn>", "<end_of_turn>"]),
        model_config("gemma", "GemmaForCausalLM", n + 6, bos=1, eos=2, pad=n))


QWEN2_RE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
            r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def cl100k_families():
    base = load(CL100K)
    n = len(base["model"]["vocab"])  # 100256
    vocab, merges = include(CL100K, "/model/vocab"), include(CL100K, "/model/merges")
    shared = SHARED + "/cl100k-split"

    # LLaMA-3 layout as the shared cl100k-split folder has it (Split + ByteLevel,
    # post-processor ByteLevel, cl100k's special tokens at their tiktoken ids).
    layout = dict(base)
    layout["model"] = dict(base["model"], vocab=vocab, merges=merges)
    write_family("llama3", layout, None, None, None, copy_from=shared)

    # LLaMA-3 as Meta ships it: <|begin_of_text|> added by a Sequence post-processor
    # (ByteLevel then TemplateProcessing); special tokens right after the vocabulary.
    names = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
             "<|end_header_id|>", "<|eot_id|>"]
    toks = [added(n + i, t, True, normalized=False) for i, t in enumerate(names)]
    post = {"type": "Sequence", "processors": [
        byte_level(add_prefix_space=True, trim_offsets=False),
        template(["<|begin_of_text|>", "$A"], [("<|begin_of_text|>", n)])]}
    layout = dict(layout, added_tokens=toks, post_processor=post)
    write_family("llama3-bos", layout, {
        "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<|begin_of_text|>",
        "eos_token": "<|end_of_text|>", "model_max_length": 131072,
        "clean_up_tokenization_spaces": True,
        "model_input_names": ["input_ids", "attention_mask"]},
        special_map(bos_token="<|begin_of_text|>", eos_token="<|end_of_text|>"),
        model_config("llama", "LlamaForCausalLM", n + len(names), bos=n, eos=n + 1))

    # Qwen2 (Qwen2Converter): NFC, Split(Qwen2's regex, single digits, Isolated)
    # then ByteLevel without regex; BPE without ignore_merges. cl100k stands in
    # for Qwen2's own vocabulary.
    names = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    toks = [added(n + i, t, True, normalized=False) for i, t in enumerate(names)]
    nob = byte_level(add_prefix_space=False, trim_offsets=False, use_regex=False)
    layout = tokenizer(
        toks, {"type": "NFC"},
        {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": QWEN2_RE}, "behavior": "Isolated",
             "invert": False}, nob]},
        nob, nob,
        bpe(vocab, merges, prefix="", suffix="", ignore_merges=False))
    write_family("qwen2", layout, {
        "tokenizer_class": "Qwen2Tokenizer", "add_prefix_space": False, "bos_token": None,
        "eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>", "unk_token": None,
        "errors": "replace", "split_special_tokens": False, "model_max_length": 32768,
        "clean_up_tokenization_spaces": False},
        special_map(eos_token="<|endoftext|>", pad_token="<|endoftext|>",
                    additional_special_tokens=["<|im_start|>", "<|im_end|>"]),
        model_config("qwen2", "Qwen2ForCausalLM", n + 3, bos=n, eos=n))


def main():
    gpt2_families()
    llama_families()
    cl100k_families()
    if os.path.exists(os.path.join(TOKENIZERS, UNIGRAM)):
        import make_unigram
        make_unigram.write_families(sys.modules[__name__])
    import make_synthetic
    if os.path.exists(os.path.join(TOKENIZERS, make_synthetic.SMALL)):
        make_synthetic.write_families(sys.modules[__name__])
    print("make_families: wrote", ", ".join(sorted(
        d for d in os.listdir(TOKENIZERS) if d != "base"
        and os.path.isdir(os.path.join(TOKENIZERS, d)))))


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    main()
