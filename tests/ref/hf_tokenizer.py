"""Independent Python reference of Hugging Face's Rust `tokenizers` pipeline.

Written from the Rust sources of huggingface/tokenizers (tokenizers/src/...)
and of the spm_precompiled crate, read for this purpose; no code is shared
with the C implementation or with transformers.js. It loads a model folder
(tokenizer.json + tokenizer_config.json) and encodes text to ids exactly as
`tokenizers.Tokenizer.encode(text, add_special_tokens=True)` does:

    added tokens -> normalizer -> pre-tokenizer -> model -> post-processor

Components: normalizers Sequence, NFC, NFD, NFKC, NFKD, Lowercase, Strip,
StripAccents, Replace (String / Regex), Prepend, BertNormalizer, Precompiled;
pre-tokenizers Sequence, ByteLevel, Split, Metaspace, Whitespace,
WhitespaceSplit, BertPreTokenizer, Punctuation, Digits; models BPE, WordPiece,
Unigram; post-processors TemplateProcessing, BertProcessing,
RobertaProcessing, ByteLevel, Sequence; added tokens with special,
normalized, lstrip, rstrip, single_word.

Needs the `regex` module (Debian: python3-regex) for \\p{L}, \\X and
Oniguruma-compatible patterns. Usage:

    python3 hf_tokenizer.py FOLDER --text "Hello"        # prints the ids
    python3 hf_tokenizer.py FOLDER --texts texts.json     # JSON list of id lists
    python3 hf_tokenizer.py --self-test

Offsets: Rust keeps byte alignments between the normalized and the original
string; ids depend on them only through Metaspace(prepend_scheme="first"),
which asks whether a piece starts at original offset 0. This module keeps
per-character alignments with the same update rules as Rust's
`NormalizedString::transform_range`; after NFC/NFD/NFKC/NFKD only the first
character's alignment is exact (documented in tests/data/tokenize/README.md).
"""
import base64
import json
import os
import struct
import sys
import unicodedata

import regex

# ---------------------------------------------------------------- Unicode ---

# Rust char::is_whitespace: the Unicode White_Space property.
WHITE_SPACE = frozenset([0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680,
                         0x2028, 0x2029, 0x202F, 0x205F, 0x3000]
                        + list(range(0x2000, 0x200B)))


def is_whitespace(c):
    return ord(c) in WHITE_SPACE


def is_numeric(c):
    """Rust char::is_numeric: general categories Nd, Nl, No."""
    return unicodedata.category(c) in ("Nd", "Nl", "No")


def is_punctuation(c):
    """char::is_ascii_punctuation || unicode_categories is_punctuation (P*)."""
    o = ord(c)
    if o < 128 and (0x21 <= o <= 0x2F or 0x3A <= o <= 0x40 or 0x5B <= o <= 0x60
                    or 0x7B <= o <= 0x7E):
        return True
    return unicodedata.category(c).startswith("P")


def is_other(c):
    """unicode_categories is_other: Cc, Cf, Cn, Co, Cs."""
    return unicodedata.category(c) in ("Cc", "Cf", "Cn", "Co", "Cs")


def lowercase_chars(c):
    """Rust char::to_lowercase (no final-sigma context, unlike str.lower())."""
    return list(c.lower()) if len(c) == 1 else list(c)


# ------------------------------------------------------- NormalizedString ---

class NStr:
    """Rust NormalizedString at character granularity.

    norm: list of normalized chars; align[i]: (start, end) byte offsets in
    this string's original text of normalized char i; shift: byte offset of
    this string's original inside the whole input.
    """
    __slots__ = ("norm", "align", "shift", "orig_len")

    def __init__(self, norm, align, shift, orig_len):
        self.norm, self.align, self.shift, self.orig_len = norm, align, shift, orig_len

    @classmethod
    def from_str(cls, s):
        align, b = [], 0
        for c in s:
            n = len(c.encode("utf-8"))
            align.append((b, b + n))
            b += n
        return cls(list(s), align, 0, b)

    def get(self):
        return "".join(self.norm)

    def __len__(self):
        return len(self.norm)

    def offsets_original_start(self):
        return self.shift

    def transform_range(self, start, end, dest, initial_offset):
        """Rust transform_range: dest yields (char, change), change 1 = inserted,
        0 = replaces the next original char, -N = replaces it and removes N more."""
        idx = start + initial_offset
        chars, aligns = [], []
        for c, change in dest:
            if change > 0:
                al = (0, 0) if idx < 1 else self.align[idx - 1]
            else:
                al = self.align[idx]
                idx += 1
                if change < 0:
                    idx += -change
            chars.append(c)
            aligns.append(al)
        self.norm[start:end] = chars
        self.align[start:end] = aligns

    def transform(self, dest, initial_offset=0):
        self.transform_range(0, len(self.norm), list(dest), initial_offset)

    def slice(self, start, end):
        """Sub-string of normalized chars [start, end) (Rust slice(Range::Normalized))."""
        if start >= end:
            return NStr([], [], self.shift, 0)
        o_start, o_end = self.align[start][0], self.align[end - 1][1]
        al = [(a - o_start, b - o_start) for a, b in self.align[start:end]]
        return NStr(self.norm[start:end], al, self.shift + o_start, o_end - o_start)

    # --- operations used by normalizers and pre-tokenizers ---
    def filter(self, keep):
        out, removed = [], 0
        for c in reversed(self.norm):
            if keep(c):
                out.append((c, -removed) if removed else (c, 0))
                removed = 0
            else:
                removed += 1
        out.reverse()
        self.transform(out, removed)

    def map(self, f):
        self.transform([(f(c), 0) for c in self.norm])

    def prepend(self, s):
        if not self.norm:
            return
        nxt = self.norm[0]
        dest = [(c, 0 if i == 0 else 1) for i, c in enumerate(s)] + [(nxt, 1)]
        self.transform_range(0, 1, dest, 0)

    def lowercase(self):
        dest = []
        for c in self.norm:
            for i, lc in enumerate(lowercase_chars(c)):
                dest.append((lc, 1 if i else 0))
        self.transform(dest)

    def replace(self, matches, content):
        """matches: list of ((start, end), is_match) in normalized chars."""
        offset = 0
        for (s, e), is_match in matches:
            if not is_match:
                continue
            s2, e2 = s + offset, e + offset
            self.transform_range(s2, e2, [(c, 1) for c in content], e2 - s2)
            offset += len(content) - (e - s)

    def lrstrip(self, left, right):
        n = len(self.norm)
        lead = 0
        if left:
            while lead < n and is_whitespace(self.norm[lead]):
                lead += 1
        trail = 0
        if right:
            while trail < n and is_whitespace(self.norm[n - 1 - trail]):
                trail += 1
        if lead == 0 and trail == 0:
            return
        dest = []
        for i, c in enumerate(self.norm):
            if i < lead or i >= n - trail:
                continue
            dest.append((c, -trail if i == n - trail - 1 else 0))
        self.transform(dest, lead)

    def unicode_normalize(self, form):
        """NFC/NFD/NFKC/NFKD. The string is exact; alignments are exact for the
        first char only (ids never depend on the others, see module doc)."""
        new = unicodedata.normalize(form, self.get())
        old_n, new_n = len(self.norm), len(new)
        if new_n == 0:
            self.transform([], old_n)
            return
        if new_n <= old_n:
            dest = [(c, 0) for c in new]
            dest[-1] = (new[-1], -(old_n - new_n))
        else:
            dest = [(c, 0) for c in new[:old_n]] + [(c, 1) for c in new[old_n:]]
        self.transform(dest)


# --------------------------------------------------------------- Patterns ---

def regex_matches(rx, s):
    """Pattern::find_matches for a regex: [((start, end), is_match)] covering s."""
    if not s:
        return [((0, 0), False)]
    out, prev = [], 0
    for m in rx.finditer(s):
        if prev != m.start():
            out.append(((prev, m.start()), False))
        out.append(((m.start(), m.end()), True))
        prev = m.end()
    if prev != len(s):
        out.append(((prev, len(s)), False))
    return out


def char_matches(pred, s):
    """Pattern::find_matches for a Fn(char) -> bool (and for a single char)."""
    if not s:
        return [((0, 0), False)]
    out, last = [], 0
    for i, c in enumerate(s):
        if pred(c):
            if last < i:
                out.append(((last, i), False))
            out.append(((i, i + 1), True))
            last = i + 1
    if len(s) > last:
        out.append(((last, len(s)), False))
    return out


def compile_pattern(pat):
    """A tokenizer.json pattern {"String": s} or {"Regex": r} (Oniguruma syntax;
    the patterns found in real files mean the same in the `regex` module)."""
    if "String" in pat:
        if pat["String"] == "":
            return None
        return regex.compile(regex.escape(pat["String"]))
    if "Regex" in pat:
        return regex.compile(pat["Regex"])
    raise ValueError("pattern %r" % (pat,))


def pattern_matches(rx, s):
    if rx is None:  # empty String pattern matches nothing
        return [((0, len(s)), False)]
    return regex_matches(rx, s)


def split_nstr(ns, matches, behavior):
    """NormalizedString::split with a SplitDelimiterBehavior."""
    b = behavior.lower()
    if b == "isolated":
        splits = [(o, False) for o, _ in matches]
    elif b == "removed":
        splits = matches
    elif b == "contiguous":
        splits, prev = [], False
        for o, m in matches:
            if m == prev and splits:
                splits[-1] = ((splits[-1][0][0], o[1]), False)
            else:
                splits.append((o, False))
            prev = m
    elif b == "mergedwithprevious" or b == "merged_with_previous":
        splits, prev = [], False
        for o, m in matches:
            if m and not prev and splits:
                splits[-1] = ((splits[-1][0][0], o[1]), False)
            else:
                splits.append((o, False))
            prev = m
    elif b == "mergedwithnext" or b == "merged_with_next":
        splits, prev = [], False
        for o, m in reversed(matches):
            if m and not prev and splits:
                splits[-1] = ((o[0], splits[-1][0][1]), False)
            else:
                splits.append((o, False))
            prev = m
        splits.reverse()
    else:
        raise ValueError("split behavior %r" % behavior)
    return [ns.slice(s, e) for (s, e), remove in splits if not remove]


# ------------------------------------------------------------ Precompiled ---

class Precompiled:
    """SentencePiece's precompiled_charsmap, read as the spm_precompiled crate
    does: u32 LE trie size in bytes, the darts-clone units, then the
    NUL-terminated replacement strings."""

    def __init__(self, blob):
        if len(blob) < 4:
            raise ValueError("precompiled_charsmap shorter than its header")
        (size,) = struct.unpack_from("<I", blob, 0)
        n_units = size // 4
        if 4 + 4 * n_units > len(blob):
            raise ValueError("precompiled_charsmap trie runs past the blob")
        self.units = struct.unpack_from("<%dI" % n_units, blob, 4)
        self.normalized = blob[4 + 4 * n_units:]
        self.normalized.decode("utf-8")  # the crate refuses invalid UTF-8

    @staticmethod
    def _has_leaf(u):
        return (u >> 8) & 1 == 1

    @staticmethod
    def _value(u):
        return u & ((1 << 31) - 1)

    @staticmethod
    def _label(u):
        return u & ((1 << 31) | 0xFF)

    @staticmethod
    def _offset(u):
        return (u >> 10) << ((u & (1 << 9)) >> 6)

    def common_prefix_search(self, key):
        """Values of every trie key that is a prefix of `key` (bytes), shortest first."""
        units = self.units
        pos = 0
        pos ^= self._offset(units[pos])
        results = []
        for c in key:
            if c == 0:
                break
            pos ^= c
            if pos >= len(units):  # the crate would panic; a valid trie never gets here
                return results
            u = units[pos]
            if self._label(u) != c:
                return results
            pos ^= self._offset(u)
            if self._has_leaf(u):
                results.append(self._value(units[pos]))
        return results

    def normalized_at(self, index):
        end = self.normalized.find(b"\0", index)
        if end < 0:
            end = len(self.normalized)
        return self.normalized[index:end].decode("utf-8")

    def transform(self, chunk):
        """spm_precompiled Precompiled::transform: the replacement of the FIRST
        (shortest) trie key that is a prefix of `chunk`, or None."""
        res = self.common_prefix_search(chunk.encode("utf-8"))
        if not res:
            return None
        return self.normalized_at(res[0])

    def normalize(self, ns):
        """tokenizers' Normalizer for Precompiled: per extended grapheme
        cluster of fewer than 6 bytes first, else per char."""
        dest, modified = [], False
        for g in regex.findall(r"\X", ns.get()):
            if len(g.encode("utf-8")) < 6:
                norm = self.transform(g)
                if norm is not None:
                    modified = True
                    old_n, new_n = len(g), len(norm)
                    for i, c in enumerate(norm):
                        dest.append((c, new_n - old_n if i == 0 else i))
                    continue
            for c in g:
                norm = self.transform(c)
                if norm is not None:
                    modified = True
                    for i, nc in enumerate(norm):
                        dest.append((nc, len(norm) - 1 if i == 0 else i))
                else:
                    dest.append((c, 0))
        if modified:
            ns.transform(dest, 0)


# ------------------------------------------------------------ Normalizers ---

def build_normalizer(cfg):
    if cfg is None:
        return None
    t = cfg.get("type")
    if t == "Sequence":
        subs = [build_normalizer(c) for c in cfg["normalizers"]]
        subs = [s for s in subs if s is not None]

        def seq(ns):
            for s in subs:
                s(ns)
        return seq
    if t in ("NFC", "NFD", "NFKC", "NFKD"):
        return lambda ns: ns.unicode_normalize(t)
    if t == "Lowercase":
        return lambda ns: ns.lowercase()
    if t == "Strip":
        left, right = cfg.get("strip_left", True), cfg.get("strip_right", True)
        return lambda ns: ns.lrstrip(left, right)
    if t == "StripAccents":
        return lambda ns: ns.filter(lambda c: not unicodedata.category(c).startswith("M"))
    if t == "Replace":
        rx = compile_pattern(cfg["pattern"])
        content = cfg["content"]
        if "Regex" in cfg["pattern"] and "$" in content:
            raise ValueError("Replace with regex group references is not modelled")
        return lambda ns: ns.replace(pattern_matches(rx, ns.get()), content)
    if t == "Prepend":
        p = cfg["prepend"]
        return lambda ns: ns.prepend(p)
    if t == "BertNormalizer":
        return bert_normalizer(cfg)
    if t == "Precompiled":
        pc = Precompiled(base64.b64decode(cfg["precompiled_charsmap"]))
        return pc.normalize
    raise ValueError("normalizer type %r is not supported" % t)


def is_chinese_char(c):
    o = ord(c)
    return (0x4E00 <= o <= 0x9FFF or 0x3400 <= o <= 0x4DBF or 0x20000 <= o <= 0x2A6DF
            or 0x2A700 <= o <= 0x2B73F or 0x2B740 <= o <= 0x2B81F
            or 0x2B920 <= o <= 0x2CEAF or 0xF900 <= o <= 0xFAFF
            or 0x2F800 <= o <= 0x2FA1F)


def bert_normalizer(cfg):
    clean = cfg.get("clean_text", True)
    chinese = cfg.get("handle_chinese_chars", True)
    lower = cfg.get("lowercase", True)
    strip = cfg.get("strip_accents")
    if strip is None:
        strip = lower

    def norm(ns):
        if clean:
            ns.filter(lambda c: not (ord(c) == 0 or ord(c) == 0xFFFD
                                     or (c not in "\t\n\r" and is_other(c))))
            ns.map(lambda c: " " if (c in "\t\n\r" or is_whitespace(c)) else c)
        if chinese:
            dest = []
            for c in ns.norm:
                if is_chinese_char(c):
                    dest += [(" ", 1), (c, 0), (" ", 1)]
                else:
                    dest.append((c, 0))
            ns.transform(dest)
        if strip:
            ns.unicode_normalize("NFD")
            ns.filter(lambda c: unicodedata.category(c) != "Mn")
        if lower:
            ns.lowercase()
    return norm


# --------------------------------------------------------- Pre-tokenizers ---

def _bytes_to_unicode():
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD))
          + list(range(0xAE, 0x100)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


BYTES_CHAR = _bytes_to_unicode()
GPT2_RE = regex.compile(
    r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")
# Rust `regex` crate \w and \s (Unicode), used by Whitespace and added tokens.
RUST_W = r"[\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}]"
RUST_S = r"\p{White_Space}"
WHITESPACE_RE = regex.compile(r"%s+|[^%s%s]+" % (RUST_W, RUST_W[1:-1], RUST_S))


def _byte_level_chars(ns):
    dest = []
    for c in ns.norm:
        for i, b in enumerate(c.encode("utf-8")):
            dest.append((BYTES_CHAR[b], 1 if i else 0))
    ns.transform(dest)


def build_pre_tokenizer(cfg):
    """Returns f(list of NStr) -> list of NStr (splits without tokens)."""
    if cfg is None:
        return None
    t = cfg.get("type")

    def per_split(fn):
        def run(splits):
            out = []
            for ns in splits:
                out.extend(x for x in fn(ns) if len(x))
            return out
        return run

    if t == "Sequence":
        subs = [build_pre_tokenizer(c) for c in cfg["pretokenizers"]]

        def seq(splits):
            for s in subs:
                if s is not None:
                    splits = s(splits)
            return splits
        return seq
    if t == "ByteLevel":
        add_prefix = cfg.get("add_prefix_space", True)
        use_regex = cfg.get("use_regex", True)

        def bl_split(ns):
            if add_prefix and not ns.get().startswith(" "):
                ns.prepend(" ")
            if use_regex:
                return split_nstr(ns, regex_matches(GPT2_RE, ns.get()), "isolated")
            return [ns]
        split_run = per_split(bl_split)

        def bl(splits):
            splits = split_run(splits)
            for ns in splits:
                _byte_level_chars(ns)
            return splits
        return bl
    if t == "Split":
        rx = compile_pattern(cfg["pattern"])
        behavior, invert = cfg["behavior"], cfg.get("invert", False)

        def sp(ns):
            m = pattern_matches(rx, ns.get())
            if invert:
                m = [(o, not f) for o, f in m]
            return split_nstr(ns, m, behavior)
        return per_split(sp)
    if t == "Metaspace":
        rep = cfg.get("replacement", "\u2581")
        scheme = cfg.get("prepend_scheme")
        aps = cfg.get("add_prefix_space")
        if scheme is None:
            scheme = "always"
        if aps is False:
            if scheme != "never" and "prepend_scheme" in cfg:
                raise ValueError("add_prefix_space does not match declared prepend_scheme")
            scheme = "never"
        do_split = cfg.get("split", True)
        rep_rx = regex.compile(regex.escape(" "))

        def ms(ns):
            ns.replace(regex_matches(rep_rx, ns.get()), rep)
            starts = ns.get().startswith(rep)
            if scheme == "always" and not starts:
                ns.prepend(rep)
            elif scheme == "first" and not starts and ns.offsets_original_start() == 0:
                ns.prepend(rep)
            if do_split:
                return split_nstr(ns, char_matches(lambda c: c == rep, ns.get()),
                                  "merged_with_next")
            return [ns]
        return per_split(ms)
    if t == "Whitespace":
        return per_split(lambda ns: split_nstr(
            ns, [(o, not f) for o, f in regex_matches(WHITESPACE_RE, ns.get())], "removed"))
    if t == "WhitespaceSplit":
        return per_split(lambda ns: split_nstr(ns, char_matches(is_whitespace, ns.get()),
                                               "removed"))
    if t == "BertPreTokenizer":
        ws = per_split(lambda ns: split_nstr(ns, char_matches(is_whitespace, ns.get()),
                                             "removed"))
        pu = per_split(lambda ns: split_nstr(ns, char_matches(is_punctuation, ns.get()),
                                             "isolated"))
        return lambda splits: pu(ws(splits))
    if t == "Punctuation":
        behavior = cfg.get("behavior", "Isolated")
        return per_split(lambda ns: split_nstr(ns, char_matches(is_punctuation, ns.get()),
                                               behavior))
    if t == "Digits":
        behavior = "isolated" if cfg.get("individual_digits", False) else "contiguous"
        return per_split(lambda ns: split_nstr(ns, char_matches(is_numeric, ns.get()),
                                               behavior))
    raise ValueError("pre_tokenizer type %r is not supported" % t)


# ----------------------------------------------------------------- Models ---

class BPE:
    def __init__(self, cfg):
        self.vocab = dict(cfg["vocab"])
        self.unk = cfg.get("unk_token")
        self.prefix = cfg.get("continuing_subword_prefix")
        self.suffix = cfg.get("end_of_word_suffix")
        self.fuse_unk = bool(cfg.get("fuse_unk", False))
        self.byte_fallback = bool(cfg.get("byte_fallback", False))
        self.ignore_merges = bool(cfg.get("ignore_merges", False))
        if cfg.get("dropout") not in (None, 0, 0.0):
            raise ValueError("BPE dropout is not deterministic")
        merges = []
        raw = cfg["merges"]
        lines = [m for m in raw if not (isinstance(m, str) and m.startswith("#version"))]
        for rank, m in enumerate(lines):
            if isinstance(m, str):
                parts = m.split(" ")
                if len(parts) != 2:
                    raise ValueError("merge %d %r is not two tokens" % (rank + 1, m))
            else:
                parts = list(m)
                if len(parts) != 2:
                    raise ValueError("merge %d is not a pair" % (rank + 1))
            merges.append(parts)
        plen = len(self.prefix.encode("utf-8")) if self.prefix else 0
        self.merges = {}
        for rank, (a, b) in enumerate(merges):
            if a not in self.vocab:
                raise ValueError("merge token %r is not in the vocabulary" % a)
            if b not in self.vocab:
                raise ValueError("merge token %r is not in the vocabulary" % b)
            new = a + b.encode("utf-8")[plen:].decode("utf-8", "replace")
            if new not in self.vocab:
                raise ValueError("merged token %r is not in the vocabulary" % new)
            self.merges[(self.vocab[a], self.vocab[b])] = (rank, self.vocab[new])

    def tokenize(self, seq):
        if not seq:
            return []
        if self.ignore_merges and seq in self.vocab:
            return [self.vocab[seq]]
        syms = []  # [id, byte_len]
        unk = None
        n = len(seq)
        for i, c in enumerate(seq):
            s = c
            if i > 0 and self.prefix is not None:
                s = self.prefix + s
            if i == n - 1 and self.suffix is not None:
                s = s + self.suffix
            blen = len(c.encode("utf-8"))
            if s in self.vocab:
                if unk is not None:
                    syms.append(unk)
                    unk = None
                syms.append([self.vocab[s], blen])
                continue
            if self.byte_fallback:
                codes = ["<0x%02X>" % b for b in s.encode("utf-8")]
                if all(code in self.vocab for code in codes):
                    for code in codes:
                        syms.append([self.vocab[code], 1])
                    continue
            if self.unk is not None:
                if self.unk not in self.vocab:
                    raise ValueError("unk token %r is not in the vocabulary" % self.unk)
                uid = self.vocab[self.unk]
                if unk is not None and self.fuse_unk:
                    unk = [unk[0], unk[1] + blen]
                else:
                    if unk is not None:
                        syms.append(unk)
                    unk = [uid, blen]
        if unk is not None:
            syms.append(unk)
        return self._merge_all(syms)

    def _merge_all(self, syms):
        import heapq
        # symbols: c, prev, next, len
        S = [[c, i - 1, i + 1 if i + 1 < len(syms) else -1, ln]
             for i, (c, ln) in enumerate(syms)]
        heap = []
        for i in range(len(S) - 1):
            m = self.merges.get((S[i][0], S[i + 1][0]))
            if m:
                heapq.heappush(heap, (m[0], i, m[1]))
        while heap:
            rank, pos, new_id = heapq.heappop(heap)
            cur = S[pos]
            if cur[3] == 0 or cur[2] == -1:
                continue
            nxt_pos = cur[2]
            right = S[nxt_pos]
            m = self.merges.get((cur[0], right[0]))
            if m is None or m[1] != new_id:
                continue
            cur[0] = new_id
            cur[3] += right[3]
            cur[2] = right[2]
            right[3] = 0
            if right[2] > -1 and right[2] < len(S):
                S[right[2]][1] = pos
            if cur[1] >= 0:
                prev = S[cur[1]]
                m = self.merges.get((prev[0], cur[0]))
                if m:
                    heapq.heappush(heap, (m[0], cur[1], m[1]))
            if 0 <= cur[2] < len(S):
                m = self.merges.get((cur[0], S[cur[2]][0]))
                if m:
                    heapq.heappush(heap, (m[0], pos, m[1]))
        return [s[0] for s in S if s[3] != 0]


class WordPiece:
    def __init__(self, cfg):
        self.vocab = dict(cfg["vocab"])
        self.unk = cfg.get("unk_token", "[UNK]")
        self.prefix = cfg.get("continuing_subword_prefix", "##")
        self.max_chars = cfg.get("max_input_chars_per_word", 100)

    def tokenize(self, seq):
        if len(seq) > self.max_chars:
            return [self._unk_id()]
        out, start = [], 0
        while start < len(seq):
            end = len(seq)
            cur = None
            while start < end:
                sub = seq[start:end]
                if start > 0:
                    sub = self.prefix + sub
                if sub in self.vocab:
                    cur = self.vocab[sub]
                    break
                end -= 1
            if cur is None:
                return [self._unk_id()]
            out.append(cur)
            start = end
        return out

    def _unk_id(self):
        if self.unk not in self.vocab:
            raise ValueError("WordPiece unk token %r is not in the vocabulary" % self.unk)
        return self.vocab[self.unk]


class Unigram:
    K_UNK_PENALTY = 10.0

    def __init__(self, cfg):
        self.pieces = [(p, float(s)) for p, s in cfg["vocab"]]
        self.unk_id = cfg.get("unk_id")
        self.byte_fallback = bool(cfg.get("byte_fallback", False))
        if self.unk_id is not None:
            if not self.pieces:
                raise ValueError("Unigram vocabulary is empty but unk_id is set")
            if self.unk_id >= len(self.pieces):
                raise ValueError("Unigram unk_id is larger than the vocabulary")
        self.ids = {}
        for i, (p, _) in enumerate(self.pieces):
            self.ids[p] = i
        self.min_score = min((s for _, s in self.pieces), default=float("inf"))
        # byte trie over the pieces: dict of dicts, key None marks a piece end
        self.trie = {}
        for p, _ in self.pieces:
            node = self.trie
            for b in p.encode("utf-8"):
                node = node.setdefault(b, {})
            node[None] = True

    def _prefixes(self, data, start):
        node, out = self.trie, []
        for j in range(start, len(data)):
            node = node.get(data[j])
            if node is None:
                break
            if None in node:
                out.append(j + 1)
        return out

    def encode(self, sentence):
        """Unigram::encode_optimized: Viterbi over byte positions; returns strings."""
        if not sentence:
            return []
        data = sentence.encode("utf-8")
        size = len(data)
        unk_score = self.min_score - self.K_UNK_PENALTY
        best = [[0, 0.0, None] for _ in range(size + 1)]  # id, score, starts_at
        pos = 0
        while pos < size:
            till = best[pos][1]
            mblen = _utf8_len(data[pos])
            single = False
            for end in self._prefixes(data, pos):
                tok = data[pos:end].decode("utf-8")
                pid = self.ids[tok]
                cand = self.pieces[pid][1] + till
                tgt = best[end]
                if tgt[2] is None or cand > tgt[1]:
                    tgt[0], tgt[1], tgt[2] = pid, cand, pos
                if end - pos == mblen:
                    single = True
            if not single:
                tgt = best[pos + mblen]
                cand = unk_score + till
                if tgt[2] is None or cand > tgt[1]:
                    if self.unk_id is None:
                        raise ValueError("Unigram met an unknown char but has no unk_id")
                    tgt[0], tgt[1], tgt[2] = self.unk_id, cand, pos
            pos += mblen
        results, pending = [], []
        end = size
        while end > 0:
            pid, _, st = best[end]
            piece = data[st:end].decode("utf-8")
            if self.unk_id is not None and pid == self.unk_id:
                pending.append(piece)
            else:
                if pending:
                    results.append("".join(reversed(pending)))
                    pending = []
                results.append(piece)
            end = st
        if pending:
            results.append("".join(reversed(pending)))
        results.reverse()
        return results

    def tokenize(self, seq):
        out = []
        for s in self.encode(seq):
            if s in self.ids:
                out.append(self.ids[s])
                continue
            if self.byte_fallback:
                codes = ["<0x%02X>" % b for b in s.encode("utf-8")]
                if all(c in self.ids for c in codes):
                    out.extend(self.ids[c] for c in codes)
                    continue
            if self.unk_id is None:
                raise ValueError("Unigram met an unknown piece but has no unk_id")
            out.append(self.unk_id)
        return out


def _utf8_len(b):
    if b < 0x80:
        return 1
    if b >> 5 == 0x6:
        return 2
    if b >> 4 == 0xE:
        return 3
    return 4


def build_model(cfg):
    t = cfg.get("type")
    if t is None:  # old files without "type": guess from the fields, as Rust does
        if "merges" in cfg:
            t = "BPE"
        elif "unk_id" in cfg:
            t = "Unigram"
        else:
            t = "WordPiece"
    if t == "BPE":
        return BPE(cfg)
    if t == "WordPiece":
        return WordPiece(cfg)
    if t == "Unigram":
        return Unigram(cfg)
    raise ValueError("model.type %r is not supported" % t)


# -------------------------------------------------------- Post-processors ---

def build_post_processor(cfg):
    """Returns f(ids, add_special_tokens) -> ids (single sequence)."""
    if cfg is None:
        return None
    t = cfg.get("type")
    if t == "ByteLevel":
        return lambda ids, add: ids
    if t == "BertProcessing":
        cls_id, sep_id = cfg["cls"][1], cfg["sep"][1]
        return lambda ids, add: [cls_id] + ids + [sep_id] if add else ids
    if t == "RobertaProcessing":
        cls_id, sep_id = cfg["cls"][1], cfg["sep"][1]
        return lambda ids, add: [cls_id] + ids + [sep_id] if add else ids
    if t == "TemplateProcessing":
        specials = cfg.get("special_tokens", {})
        single = _template_pieces(cfg["single"])

        def tp(ids, add):
            if not add:
                return ids
            out = []
            for kind, name in single:
                if kind == "seq":
                    if name != "A":
                        raise ValueError("single template uses sequence %r" % name)
                    out.extend(ids)
                else:
                    if name not in specials:
                        raise ValueError("template special token %r is not defined" % name)
                    out.extend(specials[name]["ids"])
            return out
        return tp
    if t == "Sequence":
        subs = [build_post_processor(c) for c in cfg["processors"]]

        def seq(ids, add):
            for s in subs:
                ids = s(ids, add)
            return ids
        return seq
    raise ValueError("post_processor type %r is not supported" % t)


def _template_pieces(tpl):
    """A template as tokenizer.json stores it ([{"Sequence": {"id": "A"}},
    {"SpecialToken": {"id": "</s>"}}]) or as the Python API's strings
    ("$A </s>", ["$A:0", "</s>:0"]), parsed like Rust's Piece::try_from."""
    if isinstance(tpl, str):
        tpl = tpl.split()
    out = []
    for p in tpl:
        if isinstance(p, dict):
            if "Sequence" in p:
                out.append(("seq", p["Sequence"]["id"]))
            elif "SpecialToken" in p:
                out.append(("special", p["SpecialToken"]["id"]))
            else:
                raise ValueError("template piece %r" % (p,))
            continue
        parts = p.split(":")
        if len(parts) > 2:
            raise ValueError("template piece %r" % p)
        name = parts[0]
        if name.startswith("$"):
            rest = name[1:]
            if rest in ("", "A", "a") or rest.isdigit():
                out.append(("seq", "A"))
            elif rest in ("B", "b"):
                out.append(("seq", "B"))
            else:
                raise ValueError("template piece %r" % p)
        else:
            out.append(("special", name))
    return out


# ----------------------------------------------------------- Added tokens ---

STARTS_WITH_WORD = regex.compile(r"^" + RUST_W)
ENDS_WITH_WORD = regex.compile(RUST_W + r"$")


class AddedVocabulary:
    def __init__(self, added, model_vocab, model_size, normalizer, honour_json_ids=True):
        """added: the tokenizer.json added_tokens list. Rust re-assigns ids
        itself (a token already in the model keeps the model's id, a new one
        gets the next free id after the model) and only warns when the file
        disagrees; honour_json_ids=True keeps the file's ids instead (they are
        equal in every file Rust wrote)."""
        self.tokens = {}  # content -> (id, token dict)
        self.by_id = {}
        special, classic = [], []
        for tok in added:
            content = tok["content"]
            if not content:
                continue
            if content in self.tokens:
                tid = self.tokens[content][0]
            elif honour_json_ids:
                tid = tok["id"]
            elif content in model_vocab:
                tid = model_vocab[content]
            else:
                mx = max((v[0] for v in self.tokens.values()), default=None)
                if mx is None or not (mx >= model_size or model_size == 0):
                    tid = model_size
                else:
                    tid = mx + 1
            self.tokens[content] = (tid, tok)
            self.by_id[tid] = tok
            (special if tok.get("special") else classic).append(tok)
        seen, ordered = set(), []
        for tok in special + classic:  # special tokens first, then classic
            if tok["content"] and tok["content"] not in seen:
                seen.add(tok["content"])
                ordered.append(tok)
        self.raw = [(t["content"], self.tokens[t["content"]][0], t)
                    for t in ordered if not t.get("normalized", not t.get("special"))]
        self.norm = []
        for t in ordered:
            if t.get("normalized", not t.get("special")):
                ns = NStr.from_str(t["content"])
                if normalizer is not None:
                    normalizer(ns)
                self.norm.append((ns.get(), self.tokens[t["content"]][0], t))

    @staticmethod
    def _find_matches(s, patterns):
        """aho-corasick LeftmostLongest over the patterns, then single_word,
        lstrip and rstrip as in AddedVocabulary::find_matches. Char offsets."""
        if not s:
            return [(None, (0, 0))]
        pats = [(p, tid, tok) for p, tid, tok in patterns if p]
        by_first = {}
        for p, tid, tok in pats:
            by_first.setdefault(p[0], []).append((p, tid, tok))
        matches = []
        i = 0
        while i < len(s):
            best = None
            for p, tid, tok in by_first.get(s[i], ()):
                if s.startswith(p, i) and (best is None or len(p) > len(best[0])):
                    best = (p, tid, tok)
            if best is None:
                i += 1
                continue
            matches.append((i, i + len(best[0]), best[1], best[2]))
            i += len(best[0])
        splits, start_offset = [], 0
        for start, stop, tid, tok in matches:
            if tok.get("single_word"):
                start_space = start == 0 or not ENDS_WITH_WORD.search(s[:start])
                stop_space = stop == len(s) or not STARTS_WITH_WORD.search(s[stop:])
                if not stop_space or not start_space:
                    continue
            if tok.get("lstrip"):
                k = start
                while k > 0 and is_whitespace(s[k - 1]):
                    k -= 1
                start = max(k, start_offset)
            if tok.get("rstrip"):
                while stop < len(s) and is_whitespace(s[stop]):
                    stop += 1
            if start_offset < start:
                splits.append((None, (start_offset, start)))
            splits.append((tid, (start, stop)))
            start_offset = stop
        if start_offset != len(s):
            splits.append((None, (start_offset, len(s))))
        return splits

    def extract_and_normalize(self, normalizer, text):
        """Returns [(NStr, id or None)] (PreTokenizedString splits)."""
        pieces = []
        root = NStr.from_str(text)
        for tid, (a, b) in self._find_matches(root.get(), self.raw):
            ns = root.slice(a, b)
            if len(ns):
                pieces.append((ns, tid))
        out = []
        for ns, tid in pieces:
            if tid is not None:
                out.append((ns, tid))
                continue
            if normalizer is not None:
                normalizer(ns)
            for tid2, (a, b) in self._find_matches(ns.get(), self.norm):
                sub = ns.slice(a, b)
                if len(sub):
                    out.append((sub, tid2))
        return out


# -------------------------------------------------------------- Tokenizer ---

# transformers' fast tokenizers whose __init__ rebuilds the post-processor
# from add_bos_token / add_eos_token (LlamaTokenizerFast, GemmaTokenizerFast,
# CodeLlamaTokenizerFast: update_post_processor()).
BOS_EOS_CLASSES = {"LlamaTokenizer", "LlamaTokenizerFast", "GemmaTokenizer",
                   "GemmaTokenizerFast", "CodeLlamaTokenizer", "CodeLlamaTokenizerFast"}


def _token_content(v):
    if isinstance(v, dict):
        return v.get("content")
    return v


class Tokenizer:
    def __init__(self, tok_json, tok_config=None, honour_json_ids=True):
        self.normalizer = build_normalizer(tok_json.get("normalizer"))
        self.pre_tokenizer = build_pre_tokenizer(tok_json.get("pre_tokenizer"))
        self.model = build_model(tok_json["model"])
        self.post = build_post_processor(tok_json.get("post_processor"))
        mv = getattr(self.model, "vocab", None)
        if mv is None:
            mv = self.model.ids
        self.added = AddedVocabulary(tok_json.get("added_tokens", []), mv, len(mv),
                                     self.normalizer, honour_json_ids)
        cfg = tok_config or {}
        if cfg.get("tokenizer_class") in BOS_EOS_CLASSES and (
                "add_bos_token" in cfg or "add_eos_token" in cfg):
            self._llama_post(cfg, mv)

    def _token_id(self, content, mv):
        if content in self.added.tokens:
            return self.added.tokens[content][0]
        return mv.get(content)

    def _llama_post(self, cfg, mv):
        add_bos = cfg.get("add_bos_token", True)
        add_eos = cfg.get("add_eos_token", False)
        bos = _token_content(cfg.get("bos_token"))
        eos = _token_content(cfg.get("eos_token"))
        pre, post = [], []
        if add_bos:
            if bos is None or self._token_id(bos, mv) is None:
                raise ValueError("add_bos_token is set but bos_token is undefined")
            pre = [self._token_id(bos, mv)]
        if add_eos:
            if eos is None or self._token_id(eos, mv) is None:
                raise ValueError("add_eos_token is set but eos_token is undefined")
            post = [self._token_id(eos, mv)]
        self.post = lambda ids, add: (pre + ids + post) if add else ids

    @classmethod
    def from_folder(cls, folder, honour_json_ids=True):
        with open(os.path.join(folder, "tokenizer.json"), encoding="utf-8") as f:
            tj = json.load(f)
        cfg = None
        p = os.path.join(folder, "tokenizer_config.json")
        if os.path.exists(p):
            with open(p, encoding="utf-8") as f:
                cfg = json.load(f)
        return cls(tj, cfg, honour_json_ids)

    def encode(self, text, add_special_tokens=True):
        splits = self.added.extract_and_normalize(self.normalizer, text)
        ids = []
        # pre-tokenize the runs of splits that carry no token, keeping order
        out = []
        for ns, tid in splits:
            if tid is not None:
                out.append((None, tid))
            else:
                subs = [ns]
                if self.pre_tokenizer is not None:
                    subs = self.pre_tokenizer(subs)
                out.extend((s, None) for s in subs if len(s))
        for ns, tid in out:
            if tid is not None:
                ids.append(tid)
            else:
                ids.extend(self.model.tokenize(ns.get()))
        if self.post is not None:
            ids = self.post(ids, add_special_tokens)
        return ids


# ------------------------------------------------------------------- CLI ---

def _self_test():
    # Split behaviours (the Rust docs' example on "the-final--countdown")
    ns = NStr.from_str("the-final--countdown")
    m = char_matches(lambda c: c == "-", ns.get())
    got = {b: [x.get() for x in split_nstr(NStr.from_str(ns.get()), m, b)]
           for b in ("removed", "isolated", "merged_with_previous", "merged_with_next",
                     "contiguous")}
    assert got["removed"] == ["the", "final", "countdown"], got
    assert got["isolated"] == ["the", "-", "final", "-", "-", "countdown"], got
    assert got["merged_with_previous"] == ["the-", "final-", "-", "countdown"], got
    assert got["merged_with_next"] == ["the", "-final", "-", "-countdown"], got
    assert got["contiguous"] == ["the", "-", "final", "--", "countdown"], got
    # Unigram example from the Rust docs
    u = Unigram({"vocab": [["<unk>", 0.0], ["a", 0.0], ["b", 0.0], ["c", 0.0], ["d", 0.0],
                           ["cd", 1.0], ["ab", 2.0], ["abc", 5.0], ["abcd", 10.0]],
                 "unk_id": 0})
    assert u.encode("abcdacdxx") == ["abcd", "a", "cd", "xx"]
    # Metaspace "first" with added-token splits (Rust test non_legacy_meta_space)
    pt = build_pre_tokenizer({"type": "Metaspace", "replacement": "\u2581",
                              "prepend_scheme": "first", "split": False})
    root = NStr.from_str(" Hey <s>how <s>are <s> you")
    parts = split_nstr(root, regex_matches(regex.compile("<s>"), root.get()), "isolated")
    res = []
    for p in parts:
        res.extend([x.get() for x in pt([p])] if p.get() != "<s>" else ["<s>"])
    assert res == ["\u2581Hey\u2581", "<s>", "how\u2581", "<s>", "are\u2581", "<s>",
                   "\u2581you"], res
    # BPE unk fusing (Rust tests test_unk_get_fused / test_unk_not_fused)
    for fuse, want in ((True, [1, 0, 2]), (False, [1, 0, 0, 2])):
        b = BPE({"vocab": {"<unk>": 0, "a": 1, "b": 2}, "merges": [], "unk_token": "<unk>",
                 "fuse_unk": fuse})
        assert b.tokenize("accb") == want
    print("hf_tokenizer self-test: ok")


def main(argv):
    if len(argv) >= 1 and argv[0] == "--self-test":
        _self_test()
        return 0
    if len(argv) != 3 or argv[1] not in ("--text", "--texts"):
        print("usage: hf_tokenizer.py FOLDER --text TEXT | --texts FILE.json | --self-test",
              file=sys.stderr)
        return 2
    tok = Tokenizer.from_folder(argv[0])
    if argv[1] == "--text":
        print(json.dumps(tok.encode(argv[2])))
    else:
        with open(argv[2], encoding="utf-8") as f:
            texts = json.load(f)
        print(json.dumps([tok.encode(t) for t in texts]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
