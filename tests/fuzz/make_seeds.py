#!/usr/bin/python3
"""Write the seed corpora of tests/fuzz/corpus/ (small valid and broken
inputs). Run from the repository root: /usr/bin/python3 tests/fuzz/make_seeds.py
The files are committed; this script only documents how they were made."""
import base64, io, json, os, struct
import numpy as np

OUT = "tests/fuzz/corpus"

def put(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)

def npy(a, version=None):
    b = io.BytesIO()
    if version:
        np.lib.format.write_array(b, a, version=version)
    else:
        np.save(b, a)
    return b.getvalue()

# ---- .npy ----
r = np.arange(6, dtype="<f8").reshape(2, 3) / 7
put("fuzz_npy", "f8_2x3", npy(r))
put("fuzz_npy", "f4_fortran", npy(np.asfortranarray(r.astype("<f4"))))
put("fuzz_npy", "f2_1d", npy(np.array([1, -2, np.inf, np.nan], dtype="<f2")))
put("fuzz_npy", "f8_scalar", npy(np.array(3.5)))
put("fuzz_npy", "f8_empty", npy(np.zeros((0, 4))))
put("fuzz_npy", "f8_3d_v2", npy(np.ones((2, 1, 2)), version=(2, 0)))
put("fuzz_npy", "f4_v3", npy(np.ones((2,), dtype="<f4"), version=(3, 0)))
put("fuzz_npy", "i4_dtype", npy(np.arange(3, dtype="<i4")))
good = npy(r)
put("fuzz_npy", "truncated", good[:-5])
put("fuzz_npy", "trailing", good + b"xx")
put("fuzz_npy", "bad_magic", b"\x93NUMPZ" + good[6:])
h = b"{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }"
put("fuzz_npy", "huge_shape", b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h) + 1) + h + b"\n")
h = b"{\"shape\":(1,),\"descr\":\"<f8\",\"fortran_order\":True}"
put("fuzz_npy", "reordered", b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h + b"\0" * 8)

# ---- safetensors ----
def st(entries, data, meta=None):
    hdr = dict(entries)
    if meta is not None:
        hdr["__metadata__"] = meta
    js = json.dumps(hdr, separators=(",", ":")).encode()
    return struct.pack("<Q", len(js)) + js + data

f32 = np.arange(6, dtype="<f4").tobytes()
f16 = np.array([1, 2, 3, 4], dtype="<f2").tobytes()
put("fuzz_safetensors", "two_tensors", st({
    "a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
    "b": {"dtype": "F16", "shape": [4], "data_offsets": [24, 32]}},
    f32 + f16, {"format": "pt"}))
put("fuzz_safetensors", "bf16_f64_i32", st({
    "w": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]},
    "x": {"dtype": "F64", "shape": [], "data_offsets": [4, 12]},
    "i": {"dtype": "I32", "shape": [1], "data_offsets": [12, 16]}},
    b"\x80\x3f\x00\x40" + struct.pack("<d", 2.5) + b"\x07\0\0\0"))
put("fuzz_safetensors", "empty_and_f4", st({
    "e": {"dtype": "F32", "shape": [0, 5], "data_offsets": [0, 0]},
    "q": {"dtype": "F4", "shape": [4], "data_offsets": [0, 2]}}, b"\x12\x34"))
put("fuzz_safetensors", "no_tensors", st({}, b"", {"k": "v"}))
put("fuzz_safetensors", "overlap", st({
    "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
    "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, f32))
put("fuzz_safetensors", "out_of_range", st({
    "a": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]}}, f32[:16]))
put("fuzz_safetensors", "bad_len", b"\xff" * 8 + b"{}")
put("fuzz_safetensors", "bad_json", struct.pack("<Q", 12) + b'{"a":{"dtype"')

# ---- tokenizer.json ----
bytes_vocab = {}
def b2u():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b); cs.append(256 + n); n += 1
    return [chr(c) for c in cs]
for i, c in enumerate(b2u()):
    bytes_vocab[c] = i
bpe_vocab = dict(bytes_vocab)
merges = ["\u0120 t", "h e", "\u0120t he", "i n", "l l", "e ll"]
for m in merges:
    a, b = m.split(" ")
    bpe_vocab.setdefault(a + b, len(bpe_vocab))
bpe_vocab["<|endoftext|>"] = len(bpe_vocab)
bpe = {"version": "1.0", "truncation": None, "padding": None,
       "added_tokens": [{"id": bpe_vocab["<|endoftext|>"], "content": "<|endoftext|>",
                         "single_word": False, "lstrip": False, "rstrip": False,
                         "normalized": True, "special": True}],
       "normalizer": None,
       "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False,
                         "trim_offsets": True, "use_regex": True},
       "post_processor": {"type": "ByteLevel", "add_prefix_space": True,
                          "trim_offsets": False, "use_regex": True},
       "decoder": {"type": "ByteLevel"},
       "model": {"type": "BPE", "dropout": None, "unk_token": None,
                 "continuing_subword_prefix": "", "end_of_word_suffix": "",
                 "fuse_unk": False, "byte_fallback": False, "vocab": bpe_vocab,
                 "merges": merges}}
put("fuzz_tokenizer_json", "bpe_bytelevel.json", json.dumps(bpe))
bpe2 = json.loads(json.dumps(bpe))
bpe2["model"]["merges"] = [m.split(" ") for m in merges]
bpe2["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
    {"type": "ByteLevel", "add_prefix_space": True, "use_regex": False}]}
bpe2["post_processor"] = {"type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}},
               {"Sequence": {"id": "A", "type_id": 0}}],
    "pair": [], "special_tokens": {"<|endoftext|>": {"id": "<|endoftext|>",
        "ids": [bpe_vocab["<|endoftext|>"]], "tokens": ["<|endoftext|>"]}}}
bpe2["added_tokens"][0].update({"lstrip": True, "rstrip": True})
put("fuzz_tokenizer_json", "bpe_template.json", json.dumps(bpe2))

wp_vocab = {t: i for i, t in enumerate(
    ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", ",", "!", "'", "s",
     "un", "##aff", "##able", "the", "##ing", "a", "caf", "##e", "\u4e2d", "\u6587",
     "na", "##ive", "2024", ".", "i", "don", "t", "ll"])}
wp = {"version": "1.0", "truncation": None, "padding": None,
      "added_tokens": [{"id": i, "content": t, "single_word": False, "lstrip": False,
                        "rstrip": False, "normalized": False, "special": True}
                       for t, i in wp_vocab.items() if t.startswith("[")],
      "normalizer": {"type": "BertNormalizer", "clean_text": True,
                     "handle_chinese_chars": True, "strip_accents": None,
                     "lowercase": True},
      "pre_tokenizer": {"type": "BertPreTokenizer"},
      "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]},
      "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
      "model": {"type": "WordPiece", "unk_token": "[UNK]",
                "continuing_subword_prefix": "##", "max_input_chars_per_word": 100,
                "vocab": wp_vocab}}
put("fuzz_tokenizer_json", "wordpiece_bert.json", json.dumps(wp))
wp2 = json.loads(json.dumps(wp))
wp2["normalizer"].update({"strip_accents": False, "lowercase": False,
                          "handle_chinese_chars": False})
wp2["model"]["max_input_chars_per_word"] = 3
wp2["post_processor"] = {"type": "RobertaProcessing", "sep": ["[SEP]", 3],
                         "cls": ["[CLS]", 2], "trim_offsets": True, "add_prefix_space": False}
put("fuzz_tokenizer_json", "wordpiece_cased.json", json.dumps(wp2))
put("fuzz_tokenizer_json", "bad_type.json", '{"model": {"type": "Unigram", "vocab": []}}')
put("fuzz_tokenizer_json", "bad_merge.json",
    '{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": ["a b"]},'
    ' "pre_tokenizer": {"type": "ByteLevel"}}')
put("fuzz_tokenizer_json", "truncated.json", json.dumps(wp)[:300])

# ---- tokenizer.json of every family (tests/data/tokenizers/), shrunk ----
# The family's layout and components as they are, its vocabulary cut to the
# first pieces (and the pieces of the first merges), at most 12 added tokens,
# a Precompiled charsmap replaced by a small one built like the real one
# (tools/tokenize_ref/charsmap.py): each seed stays under -max_len (8192).
import sys, tempfile
sys.path.insert(0, "tools/tokenize_ref")
import charsmap, materialize
SMALL_CHARSMAP = base64.b64encode(charsmap.compile_charsmap({
    (0xFB01,): (0x66, 0x69), (0x3000,): (0x20,), (0x0A,): (0x20,), (0x01,): (), (0xFF21,): (0x41,),
    (0x0041, 0x030A): (0x00C5,), (0x2581,): (0x20,), (0xFEFF,): (0x20,)})).decode()

def shrink_model(m, keep):
    if m.get("type") == "Unigram":
        m["vocab"] = m["vocab"][:keep]
        m["unk_id"] = min(m.get("unk_id") or 0, keep - 1)
        return
    items = sorted(m["vocab"].items(), key=lambda kv: kv[1])
    v = dict(items[:keep])
    if "merges" in m:
        prefix = m.get("continuing_subword_prefix") or ""
        kept = []
        for mg in m["merges"][:400]:
            a, b = mg.split(" ", 1) if isinstance(mg, str) else mg
            ab = a + (b[len(prefix):] if prefix and b.startswith(prefix) else b)
            if a in v and b in v and ab in m["vocab"] and len(kept) < 40:
                v[ab] = m["vocab"][ab]
                kept.append(mg)
        m["merges"] = kept
    m["vocab"] = v

def shrink_normalizer(n):
    if isinstance(n, dict):
        if n.get("type") == "Precompiled":
            n["precompiled_charsmap"] = SMALL_CHARSMAP
        for sub in n.get("normalizers", []):
            shrink_normalizer(sub)

tmp = tempfile.mkdtemp()
for fam in materialize.families():
    if fam == "tiny-llama":  # GPT-2's tokenizer.json again
        continue
    with open(os.path.join(materialize.materialize(fam, tmp), "tokenizer.json"), encoding="utf-8") as f:
        doc = json.load(f)
    for keep in (260, 200, 140, 90):
        d = json.loads(json.dumps(doc))
        shrink_model(d["model"], keep)
        shrink_normalizer(d.get("normalizer"))
        d["added_tokens"] = d.get("added_tokens", [])[:12]
        data = json.dumps(d, ensure_ascii=False, separators=(",", ":")).encode()
        if len(data) <= 8000:
            break
    put("fuzz_tokenizer_json", "family_%s.json" % fam, data)
    # tokenizer.json SEP tokenizer_config.json SEP text (fuzz_tokenizer_json.c)
    config = {"llama2": {"tokenizer_class": "LlamaTokenizerFast", "add_bos_token": True,
                         "add_eos_token": True, "bos_token": "<s>", "eos_token": {"content": "</s>"}},
              "gemma": {"tokenizer_class": "GemmaTokenizer", "add_bos_token": False, "add_eos_token": True},
              "gpt2": {"add_prefix_space": True, "tokenizer_class": "GPT2Tokenizer"},
              "bert": {"do_lower_case": False, "strip_accents": True, "tokenize_chinese_chars": False}}.get(fam)
    if config:
        put("fuzz_tokenizer_json", "config_%s" % fam, data + b"\n@@@\n" + json.dumps(config).encode() +
            "\n@@@\n Hello <s> w\u00f6rld</s>\u4e2d\U0001F600".encode())

# ---- vocab.txt / vocab.json + merges.txt folders ----
# byte 0: 0 = vocab.txt, 1 = vocab.json + merges.txt; then the files and the
# text, separated by SEP (fuzz_vocab_files.c).
SEP = b"\n@@@\n"
def folder(bpe, *parts):
    return bytes([1 if bpe else 0]) + SEP.join(p.encode() if isinstance(p, str) else p for p in parts)
wp_txt = "\n".join(wp_vocab) + "\n"
put("fuzz_vocab_files", "bert", folder(0, wp_txt, "", "Hello, world! unaffable [MASK] caf\u00e9"))
put("fuzz_vocab_files", "bert_cased", folder(0, wp_txt.replace("\n", "\r\n"),
    json.dumps({"do_lower_case": False, "strip_accents": False, "tokenize_chinese_chars": False,
                "unk_token": "[UNK]", "cls_token": "[CLS]"}), "Na\u00efve \u4e2d\u6587 [SEP]"))
put("fuzz_vocab_files", "bert_no_unk", folder(0, "hello\nworld\n", "{}", "hello"))
put("fuzz_vocab_files", "bert_bad_utf8", folder(0, b"[UNK]\nwor\xffld\n\xed\xa0\x80\n"))
put("fuzz_vocab_files", "bert_duplicates", folder(0, "[UNK]\na\na  \n##a\n\n[UNK]\n", "", "aaa a"))
bpe_merges = "#version: 0.2\n" + "\n".join(merges) + "\n"
put("fuzz_vocab_files", "gpt2", folder(1, json.dumps(bpe_vocab), bpe_merges,
    json.dumps({"add_prefix_space": False, "bos_token": "<|endoftext|>",
                "added_tokens_decoder": {str(bpe_vocab["<|endoftext|>"]): {
                    "content": "<|endoftext|>", "special": True, "lstrip": False, "rstrip": False,
                    "normalized": False, "single_word": False}}}),
    "the hell<|endoftext|> in  the \u00e9"))
put("fuzz_vocab_files", "gpt2_prefix_space", folder(1, json.dumps(bpe_vocab), bpe_merges.replace("\n", "\r\n"),
    json.dumps({"add_prefix_space": True, "added_tokens_decoder": {
        "900": {"content": "<mask>", "lstrip": True, "rstrip": True, "special": True},
        "901": {"content": "<mas", "normalized": True}}}), " <mask>  the <mas"))
put("fuzz_vocab_files", "gpt2_no_merges", folder(1, json.dumps(bpe_vocab)))
put("fuzz_vocab_files", "gpt2_bad_merge", folder(1, json.dumps(bpe_vocab), "a b c\nzz q\n"))
put("fuzz_vocab_files", "gpt2_bad_utf8", folder(1, json.dumps(bpe_vocab), b"#version: 0.2\nh e\n\xc3\x28 e\n"))

# ---- text ----
for i, t in enumerate([
        "In the beginning God created the heaven and the earth.",
        "Hello, world! It's 2024 \u2014 caf\u00e9 na\u00efve \u4e2d\u6587 \U0001F600",
        "[CLS] hello [SEP] <|endoftext|> [MASK]   \t\n x\u0301 \u0130 \u03a3",
        " \u2005\u00a0\u0085 's 've 're 123 ... ---"]):
    put("fuzz_tokenize_text", "text%d" % i, t)
put("fuzz_tokenize_text", "invalid_utf8", b"ok \xc3\x28 \xed\xa0\x80 \xf8\x88\x80\x80\x80 \xc0\xaf end\xe2\x82")

# ---- config.json (weights are d = 8, 2 layers, 2 heads, vocab 11, 6 positions) ----
cfgs = {
    "gpt2": {"model_type": "gpt2", "n_layer": 2, "n_head": 2, "n_embd": 8, "n_positions": 6,
             "vocab_size": 11, "layer_norm_epsilon": 1e-05, "activation_function": "gelu_new",
             "n_inner": None, "scale_attn_by_inverse_layer_idx": True},
    "gpt2_relu": {"model_type": "gpt2", "n_layer": 1, "n_head": 4, "n_embd": 8, "n_positions": 6,
                  "vocab_size": 11, "n_inner": 16, "activation_function": "relu",
                  "scale_attn_weights": False},
    "bert": {"model_type": "bert", "num_hidden_layers": 2, "num_attention_heads": 2,
             "hidden_size": 8, "intermediate_size": 16, "max_position_embeddings": 6,
             "vocab_size": 11, "type_vocab_size": 2, "layer_norm_eps": 1e-12,
             "hidden_act": "gelu", "position_embedding_type": "absolute"},
    "llama": {"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 2,
              "num_key_value_heads": 1, "hidden_size": 8, "intermediate_size": 16,
              "max_position_embeddings": 6, "vocab_size": 11, "rms_norm_eps": 1e-05,
              "rope_theta": 10000.0, "hidden_act": "silu", "rope_scaling": None,
              "attention_bias": True, "mlp_bias": True},
    "qwen2": {"model_type": "qwen2", "num_hidden_layers": 2, "num_attention_heads": 2,
              "num_key_value_heads": 1, "hidden_size": 8, "intermediate_size": 16,
              "max_position_embeddings": 6, "vocab_size": 11, "rope_theta": 1e6,
              "use_sliding_window": True, "sliding_window": 2},
    "mistral": {"model_type": "mistral", "num_hidden_layers": 1, "num_attention_heads": 2,
                "num_key_value_heads": 2, "hidden_size": 8, "intermediate_size": 16,
                "max_position_embeddings": 6, "vocab_size": 11, "head_dim": 4,
                "sliding_window": 4, "hidden_act": "gelu"},
}
for k, v in cfgs.items():
    put("fuzz_model_config", k + ".json", json.dumps(v))
put("fuzz_model_config", "bad_heads.json", '{"model_type": "gpt2", "n_layer": 2, "n_head": 3,'
    ' "n_embd": 8, "n_positions": 6, "vocab_size": 11}')
put("fuzz_model_config", "not_object.json", "[1, 2, 3]")

# ---- matrices: m, n bytes then doubles ----
def mat(a, tau=None):
    a = np.asarray(a, dtype="<f8")
    b = bytes([a.shape[0] - 1, a.shape[1] - 1]) + a.tobytes()
    return b + (struct.pack("<d", tau) if tau is not None else b"")
rng = np.random.default_rng(1)
x = rng.random((5, 5)); x /= x.sum(1, keepdims=True)
put("fuzz_matrix_metrics", "stochastic5", mat(x))
put("fuzz_matrix_metrics", "causal4", mat(np.tril(np.ones((4, 4))) / np.arange(1, 5)[:, None]))
put("fuzz_matrix_metrics", "rect3x7", mat(rng.standard_normal((3, 7))))
put("fuzz_matrix_metrics", "identity6_tau0", mat(np.eye(6), 0.0))
put("fuzz_matrix_metrics", "zeros2", mat(np.zeros((2, 2))))
put("fuzz_matrix_metrics", "nan3", mat([[1, 0, 0], [0, np.nan, 0], [0, 0, 1]]))
put("fuzz_matrix_metrics", "single", mat([[1.0]]))

# ---- sound files: the small WAVs of tests/data/audio/ (tests/ref/make_wavs.py) ----
for name in ["truncated", "huge_rf64", "empty", "rate_8k", "tone_pcm8", "stereo"]:
    put("fuzz_audio", name, open("tests/data/audio/%s.wav" % name, "rb").read())
put("fuzz_audio", "float_cut", open("tests/data/audio/tone_float.wav", "rb").read()[:3044])

# ---- images (fuzz_image): the small test images, one truncated, one with too many scans ----
IMG = "tests/data/images"
for name in ["rgb8_3x2.png", "gray2_19x13.png", "pal2_adam7_11x10.png", "gray16_26x18.png",
             "rgb444_33x17.jpg", "gray_30x22.jpg", "progressive_48x36.jpg",
             "scans_101_48x36.jpg"]:  # past AG_JPEG_SCANS_MAX: refused at scan 101
    with open(os.path.join(IMG, name), "rb") as f:
        put("fuzz_image", name, f.read())
with open(os.path.join(IMG, "rgb420_40x30.jpg"), "rb") as f:
    put("fuzz_image", "cut_rgb420.jpg", f.read()[:700])

# ---- array intake: ndim, dtype, byte offset, (size, stride + 4) per dim, values ----
def intake(values, dtype, shift, dims):
    head = bytes([len(dims), {"<f2": 0, "<f4": 1, "<f8": 2}[dtype], shift])
    return head + bytes(b for s, st in dims for b in (s, st + 4)) + \
        np.asarray(values, dtype=dtype).tobytes()
y = np.random.default_rng(2).random((4, 4)); y /= y.sum(1, keepdims=True)
put("fuzz_array_intake", "c_order_f8", intake(y, "<f8", 0, [(4, 4), (4, 1)]))
put("fuzz_array_intake", "unaligned_f8", intake(y, "<f8", 1, [(4, 4), (4, 1)]))
put("fuzz_array_intake", "transposed_f4", intake(y, "<f4", 0, [(4, 1), (4, 4)]))
put("fuzz_array_intake", "reversed_3d_f2", intake(y, "<f2", 0, [(2, 4), (2, -2), (2, -1)]))
put("fuzz_array_intake", "zero_stride_4d", intake(y, "<f8", 0, [(1, 0), (2, 4), (2, 0), (4, 1)]))
put("fuzz_array_intake", "empty", intake([], "<f8", 0, [(0, 1), (3, 1)]))
put("fuzz_array_intake", "nan_f2", intake([1, np.nan, 0, 1], "<f2", 0, [(2, 2), (2, 1)]))
