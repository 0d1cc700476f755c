"""Builds an nmt_nfkc-like SentencePiece precompiled_charsmap in Python.

    python3 tools/tokenize_ref/charsmap.py OUT.bin   # writes the blob, runs the checks

The rules follow sentencepiece's normalizer::Builder (builder.cc):
BuildNFKCMap -- every code point whose NFKC differs maps to its NFKC, and
every multi-character NFKD sequence whose NFC differs maps to that NFC (the
sequences themselves; builder.cc's ExpandUnnormalized variants of them are
left out, which keeps the blob near the size of the charsmaps T5 and XLM-R
ship) -- then BuildNmtNFKCMap's additions: TAB, LF, FF, CR, U+1680,
U+200B..U+200F, U+2028, U+2029, U+2581, U+FEFF and U+FFFD become a space; the
other C0 controls, DEL, U+008F and U+009F are deleted (data/nmt_nfkc.tsv);
FULLWIDTH TILDE keeps no rule. RemoveRedundantMap then drops the rules that
shorter rules already produce. Unicode data: Python's unicodedata.

The blob is sentencepiece's format: u32 little-endian byte size of the trie,
the darts-clone double array (32-bit units), then the replacement strings,
each NUL-terminated, sorted and deduplicated (a rule's value is the byte
offset of its string). DoubleArrayBuilder below follows darts-clone's
build-from-keyset path (XOR offsets, 256-unit blocks, unused units labelled
so that no traversal can match them).
"""
import os
import struct
import sys
import unicodedata

BLOCK_SIZE = 256
NUM_EXTRA_BLOCKS = 16
NUM_EXTRAS = BLOCK_SIZE * NUM_EXTRA_BLOCKS
UPPER_MASK = 0xFF << 21
LOWER_MASK = 0xFF

NMT_SPACES = [0x9, 0xA, 0xC, 0xD, 0x1680, 0x200B, 0x200C, 0x200D, 0x200E, 0x200F, 0x2028,
              0x2029, 0x2581, 0xFEFF, 0xFFFD]
NMT_DELETED = list(range(0x1, 0x9)) + [0xB] + list(range(0xE, 0x20)) + [0x7F, 0x8F, 0x9F]


def is_unicode_char(cp):
    """ICU's U_IS_UNICODE_CHAR: no surrogate, no noncharacter."""
    if 0xD800 <= cp <= 0xDFFF or cp > 0x10FFFF:
        return False
    return not (0xFDD0 <= cp <= 0xFDEF or (cp & 0xFFFE) == 0xFFFE)


def build_nfkc_map():
    rules = {}
    nfkd_multi = set()
    for cp in range(1, 0x110000):
        if not is_unicode_char(cp):
            continue
        c = chr(cp)
        nfkc = unicodedata.normalize("NFKC", c)
        if nfkc != c:
            rules[(cp,)] = tuple(ord(x) for x in nfkc)
        nfkd = unicodedata.normalize("NFKD", c)
        if len(nfkd) > 1:
            nfkd_multi.add(nfkd)
    for nfkd in nfkd_multi:
        nfc = unicodedata.normalize("NFC", nfkd)
        if nfc != nfkd:
            rules[tuple(ord(x) for x in nfkd)] = tuple(ord(x) for x in nfc)
    return rules


def apply_rules(rules, src, max_len):
    """builder.cc Normalize(): longest rule (up to max_len chars) at each position."""
    out, i = [], 0
    while i < len(src):
        hit = None
        for n in range(min(max_len, len(src) - i), 0, -1):
            key = tuple(src[i:i + n])
            if key in rules:
                hit = (key, rules[key])
                break
        if hit is None:
            out.append(src[i])
            i += 1
        else:
            out.extend(hit[1])
            i += len(hit[0])
    return tuple(out)


def remove_redundant(rules):
    max_len = max(len(k) for k in rules)
    kept = {k: v for k, v in rules.items() if len(k) == 1}
    for n in range(2, max_len + 1):
        for k, v in sorted(rules.items()):
            if len(k) == n and v != apply_rules(kept, k, n - 1):
                kept[k] = v
    for k, v in rules.items():
        assert apply_rules(kept, k, max_len) == v, (k, v)
    return kept


def build_nmt_nfkc_rules():
    rules = build_nfkc_map()
    for cp in NMT_SPACES:
        rules[(cp,)] = (0x20,)
    for cp in NMT_DELETED:
        rules[(cp,)] = ()
    rules.pop((0xFF5E,), None)
    return remove_redundant(rules)


class DoubleArrayBuilder:
    """darts-clone's DoubleArrayBuilder::build_from_keyset, unit for unit."""

    def __init__(self):
        self.units = []
        self.is_fixed = [False] * NUM_EXTRAS
        self.is_used = [False] * NUM_EXTRAS
        self.next = [0] * NUM_EXTRAS
        self.prev = [0] * NUM_EXTRAS
        self.head = 0
        self.labels = []

    # --- units ---
    def _set_offset(self, i, offset):
        if offset >= 1 << 29:
            raise ValueError("darts: too large offset")
        u = self.units[i] & ((1 << 31) | (1 << 8) | 0xFF)
        if offset < 1 << 21:
            u |= offset << 10
        else:
            u |= (offset << 2) | (1 << 9)
        self.units[i] = u

    def _set_label(self, i, label):
        self.units[i] = (self.units[i] & ~0xFF) | (label & 0xFF)

    # --- free list of unfixed units (the "extras") ---
    def _expand(self):
        src = len(self.units)
        dest = src + BLOCK_SIZE
        blocks = src // BLOCK_SIZE + 1
        if blocks > NUM_EXTRA_BLOCKS:
            self._fix_block(src // BLOCK_SIZE - NUM_EXTRA_BLOCKS)
        self.units.extend([0] * BLOCK_SIZE)
        if blocks > NUM_EXTRA_BLOCKS:
            for i in range(src, dest):
                self.is_used[i % NUM_EXTRAS] = False
                self.is_fixed[i % NUM_EXTRAS] = False
        for i in range(src + 1, dest):
            self.next[(i - 1) % NUM_EXTRAS] = i
            self.prev[i % NUM_EXTRAS] = i - 1
        self.prev[src % NUM_EXTRAS] = dest - 1
        self.next[(dest - 1) % NUM_EXTRAS] = src
        h = self.head % NUM_EXTRAS
        self.prev[src % NUM_EXTRAS] = self.prev[h]
        self.next[(dest - 1) % NUM_EXTRAS] = self.head
        self.next[self.prev[h] % NUM_EXTRAS] = src
        self.prev[h] = dest - 1

    def _reserve(self, i):
        if i >= len(self.units):
            self._expand()
        e = i % NUM_EXTRAS
        if i == self.head:
            self.head = self.next[e]
            if self.head == i:
                self.head = len(self.units)
        self.next[self.prev[e] % NUM_EXTRAS] = self.next[e]
        self.prev[self.next[e] % NUM_EXTRAS] = self.prev[e]
        self.is_fixed[e] = True

    def _fix_block(self, block):
        begin, end = block * BLOCK_SIZE, (block + 1) * BLOCK_SIZE
        unused = 0
        for off in range(begin, end):
            if not self.is_used[off % NUM_EXTRAS]:
                unused = off
                break
        for i in range(begin, end):
            if not self.is_fixed[i % NUM_EXTRAS]:
                self._reserve(i)
                self._set_label(i, i ^ unused)

    def _valid_offset(self, i, offset):
        if self.is_used[offset % NUM_EXTRAS]:
            return False
        rel = i ^ offset
        if (rel & LOWER_MASK) and (rel & UPPER_MASK):
            return False
        for label in self.labels[1:]:
            if self.is_fixed[(offset ^ label) % NUM_EXTRAS]:
                return False
        return True

    def _find_offset(self, i):
        if self.head >= len(self.units):
            return len(self.units) | (i & LOWER_MASK)
        unfixed = self.head
        while True:
            offset = unfixed ^ self.labels[0]
            if self._valid_offset(i, offset):
                return offset
            unfixed = self.next[unfixed % NUM_EXTRAS]
            if unfixed == self.head:
                break
        return len(self.units) | (i & LOWER_MASK)

    # --- keyset ---
    @staticmethod
    def _byte(key, depth):
        return key[depth] if depth < len(key) else 0

    def _arrange(self, keys, values, begin, end, depth, dic_id):
        self.labels = []
        value = -1
        for k in range(begin, end):
            label = self._byte(keys[k], depth)
            if label == 0 and value == -1:
                if values[k] < 0:
                    raise ValueError("darts: negative value")
                value = values[k]
            if not self.labels or label != self.labels[-1]:
                if self.labels and label < self.labels[-1]:
                    raise ValueError("darts: wrong key order")
                self.labels.append(label)
        offset = self._find_offset(dic_id)
        self._set_offset(dic_id, dic_id ^ offset)
        for label in self.labels:
            child = offset ^ label
            self._reserve(child)
            if label == 0:
                self.units[dic_id] |= 1 << 8
                self.units[child] = value | (1 << 31)
            else:
                self._set_label(child, label)
        self.is_used[offset % NUM_EXTRAS] = True
        return offset

    def _build(self, keys, values, begin, end, depth, dic_id):
        stack = [(begin, end, depth, dic_id)]
        while stack:
            begin, end, depth, dic_id = stack.pop()
            offset = self._arrange(keys, values, begin, end, depth, dic_id)
            while begin < end and self._byte(keys[begin], depth) == 0:
                begin += 1
            if begin == end:
                continue
            groups = []
            last_begin, last_label = begin, self._byte(keys[begin], depth)
            for k in range(begin + 1, end):
                label = self._byte(keys[k], depth)
                if label != last_label:
                    groups.append((last_begin, k, depth + 1, offset ^ last_label))
                    last_begin, last_label = k, label
            groups.append((last_begin, end, depth + 1, offset ^ last_label))
            stack.extend(reversed(groups))  # depth-first, in key order, as darts recurses

    def build(self, keys, values):
        """keys: sorted distinct byte strings without NUL; values: ints >= 0."""
        self._reserve(0)
        self.is_used[0] = True
        self._set_offset(0, 1)
        self._set_label(0, 0)
        if keys:
            self._build(keys, values, 0, len(keys), 0, 0)
        n_blocks = len(self.units) // BLOCK_SIZE
        for block in range(max(0, n_blocks - NUM_EXTRA_BLOCKS), n_blocks):
            self._fix_block(block)
        return self.units


def compile_charsmap(rules):
    """sentencepiece Builder::CompileCharsMap."""
    targets = sorted(set(rules.values()))
    pos, normalized = {}, bytearray()
    for t in targets:
        pos[t] = len(normalized)
        normalized += "".join(chr(c) for c in t).encode("utf-8") + b"\0"
    kv = sorted(("".join(chr(c) for c in k).encode("utf-8"), pos[v]) for k, v in rules.items())
    units = DoubleArrayBuilder().build([k for k, _ in kv], [v for _, v in kv])
    trie = struct.pack("<%dI" % len(units), *units)
    return struct.pack("<I", len(trie)) + trie + bytes(normalized)


def decompile(blob):
    """Every (key, replacement) the trie holds, by walking it the way
    Builder::DecompileCharsMap does (an independent check of the builder)."""
    (size,) = struct.unpack_from("<I", blob, 0)
    units = struct.unpack_from("<%dI" % (size // 4), blob, 4)
    normalized = blob[4 + size:]

    def offset(u):
        return (u >> 10) << ((u & (1 << 9)) >> 6)

    out = {}
    stack = [(0, b"")]
    while stack:
        pos, key = stack.pop()
        base = pos ^ offset(units[pos])
        for c in range(1, 256):
            child = base ^ c
            if child >= len(units):
                continue
            u = units[child]
            if (u & ((1 << 31) | 0xFF)) != c:
                continue
            if (u >> 8) & 1:
                v = units[child ^ offset(u)] & 0x7FFFFFFF
                end = normalized.index(b"\0", v)
                out[key + bytes([c])] = normalized[v:end].decode("utf-8")
            stack.append((child, key + bytes([c])))
    return out


def check(blob, rules):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "..", "tests", "ref"))
    from hf_tokenizer import Precompiled  # the reader, written from spm_precompiled
    want = {"".join(chr(c) for c in k).encode("utf-8"): "".join(chr(c) for c in v)
            for k, v in rules.items()}
    got = decompile(blob)
    assert got == want, "decompiled trie differs from the rules (%d vs %d)" % (len(got),
                                                                               len(want))
    pc = Precompiled(blob)
    for k, v in want.items():
        res = pc.common_prefix_search(k)
        assert res and pc.normalized_at(res[-1]) == v, k
    # the spm_precompiled crate's own expectations on the real nmt_nfkc
    assert pc.transform("\ufb01") == "fi"
    assert pc.transform("\U0001D53E") == "G" and pc.transform("\U0001D560") == "o"
    assert pc.transform("\u200d") == " " and pc.transform(" ") is None
    assert pc.transform("\u0627\u0653") == "\u0622"
    # the crate's Thai and Hindi cases (composition exclusions stay decomposed)
    thai = "\u0e40\u0e02\u0e32\u0e44\u0e21\u0e48\u0e44\u0e14\u0e49\u0e1e\u0e39\u0e14\u0e2a\u0e31\u0e01\u0e04\u0e33"
    assert longest_match_normalize(pc, thai) == (
        "\u0e40\u0e02\u0e32\u0e44\u0e21\u0e48\u0e44\u0e14\u0e49\u0e1e\u0e39\u0e14"
        "\u0e2a\u0e31\u0e01\u0e04\u0e4d\u0e32")
    assert longest_match_normalize(pc, "\u095c\u0940 \u0926\u0941\u0916") == (
        "\u0921\u093c\u0940 \u0926\u0941\u0916")
    return len(got)


def longest_match_normalize(pc, s):
    """spm_precompiled normalize_string: the longest trie key at each position."""
    data, out, i = s.encode("utf-8"), [], 0
    while i < len(data):
        for j in range(len(data), i, -1):
            if _is_full_key(pc, data[i:j]):
                out.append(pc.normalized_at(pc.common_prefix_search(data[i:j])[-1]))
                i = j
                break
        else:
            n = 1
            while i + n < len(data) and (data[i + n] & 0xC0) == 0x80:
                n += 1
            out.append(data[i:i + n].decode("utf-8"))
            i += n
    return "".join(out)


def _is_full_key(pc, key):
    """Whether `key` itself (not only a prefix of it) is a trie key."""
    units, pos = pc.units, 0
    pos ^= pc._offset(units[0])
    for c in key:
        pos ^= c
        if pos >= len(units) or pc._label(units[pos]) != c:
            return False
        last = units[pos]
        pos ^= pc._offset(last)
    return pc._has_leaf(last)


def main(argv):
    if len(argv) != 1:
        print("usage: charsmap.py OUT.bin", file=sys.stderr)
        return 2
    rules = build_nmt_nfkc_rules()
    blob = compile_charsmap(rules)
    n = check(blob, rules)
    with open(argv[0], "wb") as f:
        f.write(blob)
    (size,) = struct.unpack_from("<I", blob, 0)
    print("charsmap: %d rules, trie %d units, strings %d bytes, blob %d bytes (Unicode %s)"
          % (n, size // 4, len(blob) - 4 - size, len(blob), unicodedata.unidata_version))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
