"""Writes tools/tokenize_ref/texts_families.json: the texts every tokenizer
family of tests/data/tokenize/<family>.json.xz is checked on (run by hand).

Hand-written texts by category, then systematic variants of some of them
(leading/trailing spaces, decomposed accents, upper case, special tokens
around and inside). Deterministic: the same list every run.
"""
import json
import os
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))

PROSE = [
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "In the beginning God created the heaven and the earth.",
    "It was the best of times, it was the worst of times, it was the age of wisdom.",
    "Attention is all you need: transformers compute weighted sums of value vectors.",
    "She sells sea shells by the sea shore; the shells she sells are surely seashells.",
    "I can't believe it's not butter! We'll see. They'd said they've gone. You're right, I'm sure.",
    "DON'T SHOUT. I'LL WAIT. IT'S FINE, WE'VE GOT TIME, YOU'RE EARLY, THEY'D AGREE.",
    "rock'n'roll and O'Neil's cat's toys aren't here",
    "Mr. Smith went to Washington D.C. on Jan. 3rd, 2024 at 4:30 p.m.",
    "e.g., i.e., etc., vs., cf. -- abbreviations everywhere...",
    "A sentence without a final period",
    "x",
    "a",
    "I",
    "ab",
    "Hello",
    "hello",
    "HELLO",
    "hElLo WoRlD",
    "the the the the the the the the",
    "Tokenization is the process of splitting text into tokens, which are mapped to integer ids.",
    "Once upon a midnight dreary, while I pondered, weak and weary, over many a quaint and curious volume of forgotten lore.",
    "To be, or not to be, that is the question: whether 'tis nobler in the mind to suffer the slings and arrows of outrageous fortune.",
    "The attention matrix A = softmax(QK^T / sqrt(d)) is row-stochastic; its spectrum tells us how tokens mix.",
    "We measured 12 heads across 24 layers and found 3 sink tokens.",
]

PUNCT = [
    "!!!???...,,,;;;:::",
    "\"quoted\" 'single' `backtick` «guillemets» „low“ “curly” ‘curly’",
    "(parens) [brackets] {braces} <angles>",
    "em—dash en–dash hyphen-minus ellipsis… bullet • middot ·",
    "#hashtag @mention $dollar %percent ^caret &amp *star _under +plus =eq |pipe \\back /slash ~tilde",
    "?!?!?! ... !!",
    "--- === *** ___ ~~~",
    "====================================================================================",
    "-> => <- <= >= != == === !== && || ?? ?. :: ... ..= ** // /* */ <!-- -->",
    "¡Hola! ¿Qué tal?",
    "§1 ¶2 †dagger ‡ © ® ™ ° ± × ÷ µ",
]

NUMBERS = [
    "0",
    "7",
    "42",
    "123",
    "1234",
    "12345",
    "1234567",
    "3.14159265358979323846264338327950288419716939937510",
    "12345678901234567890123456789012345678901234567890",
    "1,000,000 and 1.000.000 and 1 000 000",
    "Call +1 (555) 123-4567 or 555.987.6543",
    "v1.2.3-beta+build.45 0xDEADBEEF 0b1010 1e-9 6.022e23 -273.15",
    "2024-01-31T23:59:59Z 12:34:56.789",
    "$19.99 €5,00 £3 ¥1000 ₹250 ₿0.001",
    "50% of 200 is 100; 1/3 ≈ 0.333",
    "Room 101, floor 7, building 42B",
    "x1 x22 x333 x4444 a1b2c3d4e5",
    "½ ¼ ¾ ⅓ ² ³ ¹ ⁴ ₂ ₃",
    "① ② ③ ⑩ Ⅰ Ⅱ Ⅻ ⅻ",
    "١٢٣ ٤٥٦ ۱۲۳ १२३ ১২৩ ๑๒๓",
    "１２３ ４５６ full-width digits",
    "99 bottles of beer on the wall, 99 bottles of beer.",
]

SPACES = [
    "",
    " ",
    "  ",
    "   ",
    "    ",
    "\t",
    "\n",
    "\n\n",
    "\n\n\n",
    "\r\n",
    " \n ",
    "a b",
    "a  b",
    "a   b",
    "a    b",
    "a     b      c       d",
    "  leading two",
    " leading one",
    "trailing one ",
    "trailing two  ",
    "   both sides   ",
    "tab\tseparated\tvalues",
    "line one\nline two\nline three",
    "windows\r\nline\r\nendings",
    "old mac\rline\rendings",
    "mixed \t \n \r\n \t\t  spaces",
    "\t\tindented with tabs",
    "paragraph one.\n\nparagraph two.\n\n\nparagraph three.",
    "trailing newline\n",
    "\nleading newline",
    "word\n\n\n\n\n\nword",
    "a\u00a0b non-breaking\u00a0space",
    "thin\u2009space, en\u2002space, em\u2003space, ideographic\u3000space",
    "line\u2028separator and paragraph\u2029separator",
    "next\u0085line control",
    "vertical\u000btab and form\u000cfeed",
    "ogham\u1680space mark",
]

LATIN = [
    "café naïve résumé façade jalapeño",
    "Über schön Grüße Müller Straße ẞ",
    "ÉCOLE ÉLÈVE ÇA Å Ø Æ Œ",
    "Ångström, Øresund, Ærø, Œuvre",
    "İstanbul ısık IĞDIR ığdır",
    "Łódź, Kraków, Gdańsk, Wrocław, Żółć",
    "Čeština, Slovenčina, Hrvatski: č ć đ š ž",
    "Tiếng Việt có dấu: Cụ thể, bạn sẽ tham gia một nhóm các giám đốc điều hành",
    "Português: ação, coração, não, pão, irmã",
    "Español: año, niño, pingüino, cigüeña",
    "Français : « Ça va ? » — Oui, très bien !",
    "Íslenska: þetta er ðetta, Þór og Ðóra",
    "Română: ș ț ş ţ ă â î",
    "Esperanto: ĉ ĝ ĥ ĵ ŝ ŭ",
    "Māori: tēnā koe, whānau, kōrero",
    "ﬁnancial ﬂow eﬀect ﬃ ﬄ ﬅ ﬆ",
    "Ǆ ǅ ǆ Ǉ ǈ ǉ Ǌ ǋ ǌ",
]

SCRIPTS = [
    "Ελληνικά: Καλημέρα κόσμε, ΟΔΟΣ σοφός, ς σ Σ",
    "Ὀδυσσεύς ἄνδρα μοι ἔννεπε, Μοῦσα",
    "Привет, мир! Как дела? Ёлка, ёжик, Щука.",
    "Українська: ґанок, їжак, єнот; Беларуская: ў",
    "Српски: Љубав, Њива, Ђорђе, Џеп",
    "中文分词测试，你好世界。",
    "我爱北京天安门，天安门上太阳升。",
    "日本語のテキストです。カタカナとひらがなと漢字。",
    "東京都渋谷区、ＪＲ山手線で「新宿」へ。",
    "ｶﾀｶﾅ ﾊﾝｶｸ ｶﾞｷﾞｸﾞ ﾊﾟﾋﾟﾌﾟ",
    "한국어 텍스트입니다. 안녕하세요!",
    "Korean 한국어 text mixed",
    "العربية: مرحبا بالعالم، كيف حالك؟",
    "עברית: שלום עולם, מה שלומך?",
    "हिन्दी: नमस्ते दुनिया, आप कैसे हैं?",
    "ड़ी दुख क्षत्रिय",
    "বাংলা: হ্যালো বিশ্ব",
    "தமிழ்: வணக்கம் உலகம்",
    "ไทย: สวัสดีชาวโลก เขาไม่ได้พูดสักคำ",
    "ქართული: გამარჯობა მსოფლიო",
    "Հայերեն: Բարեւ աշխարհ",
    "ᚠᛇᚻ᛫ᛒᛦᚦ runes and ᠮᠣᠩᠭᠣᠯ script",
    "አማርኛ: ሰላም ለዓለም",
    "mixed: English, 中文, русский, العربية, हिन्दी, 日本語",
]

EMOJI = [
    "emoji 😀🎉 test 👍🏽 ok",
    "😀",
    "🎉🎉🎉",
    "👩‍💻 👨‍👩‍👧‍👦 🏳️‍🌈",
    "🇫🇷 🇯🇵 🇺🇸 flags",
    "1️⃣ #️⃣ keycaps",
    "❤️ ❤ ☺️ ✌🏿",
    "I ❤️ NY 🗽 and 🍕!",
    "🧑🏽‍🔬 scientists 🧬🔭🧪",
    "𝔾𝕠𝕠𝕕 𝕞𝕠𝕣𝕟𝕚𝕟𝕘 𝐁𝐨𝐥𝐝 𝑰𝒕𝒂𝒍𝒊𝒄",
    "ancient 𓀀 𓂀 𐍈 𝄞 music",
    "private use \ue000\uf8ff",
]

LONG = [
    "Pneumonoultramicroscopicsilicovolcanoconiosis",
    "Supercalifragilisticexpialidocious antidisestablishmentarianism floccinaucinihilipilification",
    "Donaudampfschifffahrtselektrizitätenhauptbetriebswerkbauunterbeamtengesellschaft",
    "a" * 150,
    "ab" * 80,
    "xyzzy" * 30,
    "Lopadotemachoselachogaleokranioleipsanodrimhypotrimmatosilphiokarabomelitokatakechymenokichlepikossyphophattoperisteralektryonoptokephalliokigklopeleiolagoiosiraiobaphetraganopterygon",
    "https://example.com/a/very/long/path/segment/that/keeps/going/and/going?query=string&with=parameters#and-a-fragment",
    "averyveryveryveryveryveryveryveryveryveryveryveryveryveryveryveryveryveryveryveryveryveryveryveryveryverylongword",
    "汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字汉字",
    "😀" * 20,
    "-" * 120,
    "0123456789" * 8,
]

CODE = [
    "def f(x):\n    return x**2\n",
    "def add(a, b):\n    \"\"\"Add two numbers.\"\"\"\n    return a + b\n\nprint(add(1, 2))\n",
    "#include <stdio.h>\n\nint main(void) {\n\tprintf(\"hello, world\\n\");\n\treturn 0;\n}\n",
    "for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }",
    "const xs = [1, 2, 3].map((x) => x * 2).filter(Boolean);",
    "fn main() {\n    let v: Vec<u32> = (0..10).collect();\n    println!(\"{:?}\", v);\n}",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name;",
    "<html><body><p class=\"x\">Hello</p><br/></body></html>",
    "<table><tr><td>a</td><td>b</td></tr></table>",
    "{\"key\": \"value\", \"list\": [1, 2.5, null, true], \"nested\": {\"a\": \"b\"}}",
    "git commit -m \"fix: off-by-one\" && make -j2 test",
    "if x == None:\n\tpass\nelif x != 0:\n\t\treturn -1",
    "    four spaces\n        eight spaces\n            twelve",
    "// comment\n/* block\n   comment */\nint x = 0x1F; // hex",
    "$ ls -la | grep '.py$' | wc -l",
    "regex: ^[a-zA-Z0-9_.+-]+@[a-zA-Z0-9-]+\\.[a-zA-Z0-9-.]+$",
    "email: someone@example.com, url: http://localhost:8080/api/v1",
    "a_b_c __init__ __main__ snake_case camelCase PascalCase kebab-case SCREAMING_CASE",
    "x+=1;y-=2;z*=3;w/=4;",
    "LaTeX: $\\sum_{i=1}^{n} x_i^2 = \\alpha$ and \\begin{equation}E=mc^2\\end{equation}",
    "Markdown: # Title\n\n* item one\n* item two\n\n**bold** _italic_ `code`",
]

SPECIAL = [
    "<s>",
    "</s>",
    "<unk>",
    "<pad>",
    "<mask>",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "<|endoftext|>",
    "<s>Hello</s>",
    "Hello <s> world </s> again",
    "<s><s></s></s>",
    "<<s>> </s > < s> <s",
    "Hello<unk>world<pad>",
    "The capital of France is <mask>.",
    "The capital of France is<mask>.",
    "Paris <mask>   <mask> and <mask>",
    "[CLS] hello [SEP] world [SEP]",
    "[cls] lower [sep] case [mask]",
    "<|endoftext|>Once upon a time<|endoftext|>",
    "text <|endoftext|> text",
    "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n",
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>",
    "<bos>hello<eos>",
    "<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n4<end_of_turn>",
    "Fill in: <extra_id_0> went to <extra_id_1> yesterday.",
    "<|padding|><|padding|> pad pad",
    "<fim_prefix>def f():<fim_suffix>\n<fim_middle>",
    "<table> and <tr> tags",
    "\u2581\u2581 two metaspaces \u2581 one",
    "\u2581leading metaspace and trailing\u2581",
    "Ġ and Ċ are GPT-2 byte symbols",
    "<0x41> <0x0A> look like byte tokens",
    "  <s>  spaced special  </s>  ",
    "\n<s>\n",
    "<s> ",
    " <s>",
    "<|endoftext|> ",
    " <mask>",
    "<mask> ",
    "<mask>",
    "line<br>break and a <br> b and <br>",
    "x@@y @@ z @@",
    "[MASK]",
    "a  [MASK]  b[MASK]c",
    "New York new york NEW YORK newyork",
    "fix \ufb01x prefix suffix",
    "<|endoftext|>   after the end",
    "a==b --x y-z end. ok;go",
]

TRICKY = [
    "e\u0301",
    "E\u0301cole with a decomposed E\u0301",
    "cafe\u0301 decomposed vs café composed",
    "\u0301 leading combining mark",
    "a\u0301\u0302\u0303\u0304 stacked marks",
    "\ufb01\u0301 ligature with an accent",
    "\u212b angstrom sign and \u2126 ohm sign and \u212a kelvin",
    "\u1100\u1161\u11a8 decomposed hangul jamo \u1112\u1161\u11ab\u1100\u116e\u11af",
    "\uff76\uff9e half-width voiced",
    "zero\u200bwidth\u200cnon\u200djoiner",
    "word\ufeffwith BOM\ufeff",
    "soft\u00adhyphen",
    "left\u200eto\u200fright marks",
    "control\x01chars\x02here\x07bell\x1bescape",
    "delete\x7fchar and \x8f \x9f C1",
    "replacement \ufffd char",
    "\u2581 lower one eighth block",
    "ｈｅｌｌｏ ｗｏｒｌｄ ＡＢＣ ！？",
    "㍻ ㌔ ㍿ ㎏ ㎡ ℃ ℉ № ℡ ™",
    "ﾟ･✿ヾ╲(｡◕‿◕｡)╱✿･ﾟ",
    "\u0130\u0131 \u00df\u1e9e \u01c5 \u1f88",
    "ΣΑΣ σας ΌΣΟΣ",
    "x\u00b2+y\u00b2=z\u00b2",
    "＄１００ ～ ￥５００",
    "\u3000ideographic leading space",
    "\u00a0leading nbsp",
    "A\u0308\u0304 and \u01de",
    "\u0915\u094d\u0937 \u0915\u093c",
    "\u0627\u0653 alef madda",
    "\u00c5 vs A\u030a vs \u212b",
    "'s 's 'S 'LL 'll 'Ve 're 'D 'M 't",
    "'\u017f long s after an apostrophe",
    "\u2018single\u2019 \u201cdouble\u201d",
    "x'y'z ''double'' ``tex quotes``",
    "\r",
    "\r\n\r\n",
    "\t\n\r\x0b\x0c",
]


def variants():
    out = []
    seeds = ["The quick brown fox jumps over the lazy dog.",
             "café naïve résumé", "Привет, мир!", "中文分词测试", "emoji 😀 ok",
             "Hello, world!", "1234567", "def f(x): return x"]
    for s in seeds:
        out += [" " + s, s + " ", "  " + s + "  ", "\n" + s, s + "\n", s.upper(),
                s.lower(), "<s>" + s, s + "</s>", "<|endoftext|>" + s, s + " <mask>",
                "[CLS] " + s]
    for s in LATIN[:8]:
        out.append(unicodedata.normalize("NFD", s))
        out.append(unicodedata.normalize("NFKD", s))
    for s in ["ﬁ ① ｈｅｌｌｏ ＡＢＣ ㍻ ½", "Ｔｏｋｙｏ　２０２４年"]:
        out.append(unicodedata.normalize("NFKC", s))
        out.append(s)
    for w in ["tokenizer", "attention", "geometry", "Hugging Face", "transformers"]:
        out += [w, " " + w, w.capitalize(), w.upper(), w + "s", w + "'s", "un" + w]
    return out


def main():
    texts = []
    seen = set()
    for group in (PROSE, PUNCT, NUMBERS, SPACES, LATIN, SCRIPTS, EMOJI, LONG, CODE, SPECIAL,
                  TRICKY, variants()):
        for t in group:
            if t not in seen:
                seen.add(t)
                texts.append(t)
    for t in texts:
        assert "\x00" not in t and all(not 0xD800 <= ord(c) <= 0xDFFF for c in t), repr(t)
    path = os.path.join(HERE, "texts_families.json")
    with open(path, "w", encoding="utf-8") as f:
        f.write("[\n" + ",\n".join(" " + json.dumps(t, ensure_ascii=False) for t in texts)
                + "\n]\n")
    print("make_texts: %d texts in %s" % (len(texts), path))


if __name__ == "__main__":
    main()
