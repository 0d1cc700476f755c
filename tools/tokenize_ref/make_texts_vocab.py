"""Writes tools/tokenize_ref/texts_vocab.json: the hard texts run through the
real tokenizer.json files of Qwen3, Gemma-3, LLaMA-3.1, DeepSeek-V3 and
GPT-4o's o200k (tests/data/tokenize/vocab/, issue 29 item 2).

    /usr/bin/python3 tools/tokenize_ref/make_texts_vocab.py

Each text stresses one rule of the pipelines: script classes of the Split
regexes (\\p{L}, \\p{N}, \\p{M}, CJK, Hangul, Arabic, Devanagari, Thai),
digit runs of every length 1..20 (\\p{N}{1,3} splits), whitespace runs of
every length 1..20 (\\s+(?!\\S)), leading and trailing spaces, tabs and CRLF
in code, emoji ZWJ sequences, flags and keycaps (byte-level fallback), the
special-token strings of every family inside text, NFC against NFD forms and
stacked combining marks.
"""
import json
import os
import unicodedata

SPECIALS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<start_of_turn>", "<end_of_turn>", "<bos>", "<eos>",
            "<pad>", "<|begin_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<｜begin▁of▁sentence｜>",
            "<｜end▁of▁sentence｜>", "<|endofprompt|>", "<think>", "</think>", "<image_soft_token>", "<mask>",
            "<|fim_prefix|>", "<unused0>", "[multimodal]", "<start_of_image>"]

TEXTS = [
    "",
    " ",
    "Hello world",
    " Hello world ",
    "   leading and trailing   ",
    "The quick brown fox jumps over the lazy dog.",
    "I'm sure they'll say we'd've DONE IT'S fine, 'tis O'Neil's.",
    "你好，世界！今天天气很好。我们去公园散步吧。",
    "日本語のテキスト：カタカナ、ひらがな、漢字が混在しています。",
    "한국어 텍스트입니다. 안녕하세요, 반갑습니다!",
    "مرحبا بالعالم! هذا نص عربي مع أرقام ١٢٣٤٥٦٧٨٩٠ وعلامات.",
    "नमस्ते दुनिया। यह हिन्दी पाठ है, संख्याएँ १२३४५ के साथ।",
    "สวัสดีชาวโลก ภาษาไทยไม่มีช่องว่างระหว่างคำ",
    "Ελληνικά και Кириллица вместе: Привет, мир! Γειά σου κόσμε.",
    "שלום עולם, זה טקסט בעברית.",
    "Emoji: 👨‍👩‍👧‍👦 family, 👩🏽‍💻 coder, 🏳️‍🌈 flag, 🇯🇵🇺🇸🇩🇪 flags, 1️⃣ keycap, ❤️‍🔥.",
    "😀😃😄😁😆😅😂🤣☺️😊",
    "def f(x):\n\treturn x  # tab\r\n\tif x:\r\n\t\tpass\r\n",
    "int main(void) {\n    printf(\"%d\\n\", 42);\n    return 0;\n}\n",
    "    indented\n        more\n\n\n\nblank lines\n \n \t \n",
    "x=1;y=22;z=333;w=4444;",
    "3.14159 2,718 1e-10 0x1F 0b1010 -42 +7 1/2 ½ ² ³ ⅓ Ⅻ",
    "Full-width: ＡＢＣ１２３ ｱｲｳ　全角スペース",
    "Café naïve résumé Ångström",
    unicodedata.normalize("NFD", "Café naïve résumé Ångström"),
    "Z̤͔ͧ̑̓ä͖̭̈̇lͮ̒ͫǧ̗͚̚o̙̔ͮ̇͐̇ stacked combining marks",
    "a\u0301\u0302\u0303 e\u0308 n\u0303 \u1100\u1161\u11a8 (conjoining jamo)",
    "Zero\u200bwidth\u200cjoin\u200dnon\u2060joiner\ufeffbom",
    "Mixed\u00a0nbsp\u2009thin\u3000ideographic\u2028line\u2029para\u0085nel",
    "Control chars \x01\x02\x07\x1b[0m\x7f end",
    "https://example.com/path?q=1&r=two#frag user@example.org",
    "CamelCaseIdentifier snake_case_name SCREAMING_CASE kebab-case",
    "!!!??? ... --- *** ### $$$ %%% ^^^ &&& (((",
    "\"quoted\" 'single' «guillemets» „German“ 「括弧」",
    "Tab\tseparated\tvalues\t\t\tend",
    "Windows\r\nline\r\n\r\nendings\r\n",
    "Mac\rclassic\r\rreturns",
    "ends with newline\n",
    "\n\nstarts with newlines",
    "tokenization tokenizer tokenizers detokenize untokenizable",
    "supercalifragilisticexpialidocious pneumonoultramicroscopicsilicovolcanoconiosis",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕞𝕒𝕥𝕙 𝒶𝓁𝓅𝒽𝒶 ∀x∈ℝ: x²≥0 ∑∫∂∇",
    "Private use \ue000\uf8ff and noncharacters \ufdd0 and supplementary \U0001F9EC\U00020000\U0002A6D6",
    "ÀÁÂÃÄÅ àáâãäå İıŞşĞğ ß ẞ ﬁ ﬂ ǅ",
    "The year 2024 had 366 days; 1000000 people; 007; 0000000000.",
]
for n in range(1, 21):
    TEXTS.append("".join(str((i + 1) % 10) for i in range(n)))
    TEXTS.append("a" + "9" * n + "b")
for n in range(1, 21):
    TEXTS.append("x" + " " * n + "y")
    TEXTS.append("x" + " " * n)
    TEXTS.append(" " * n + "y")
for ws in ["\t", "\n", "\r\n", "\u3000", " \n"]:
    for n in (1, 2, 3, 5, 8):
        TEXTS.append("a" + ws * n + "b")
for s in SPECIALS:
    TEXTS.append("before" + s + "after")
    TEXTS.append(" " + s + " spaced " + s)
TEXTS.append("<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n")
TEXTS.append("<start_of_turn>user\nHi there<end_of_turn>\n<start_of_turn>model\n")
TEXTS.append("<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>")
TEXTS.append("<|im_start|<|im_start||im_start|> partial <start_of_turn <|endoftext")
TEXTS.append("<think>\nreasoning\n</think>\n\nanswer")

# Invalid UTF-8 is not a text: the CLI must reject it with a clear error
# (tests/cli/tokenize_corpus.sh); it is not in this list.

if __name__ == "__main__":
    seen, out = set(), []
    for t in TEXTS:
        if t not in seen:
            seen.add(t)
            out.append(t)
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "texts_vocab.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=0)
        f.write("\n")
    print("%s: %d texts" % (path, len(out)))
