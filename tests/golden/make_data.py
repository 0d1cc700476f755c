#!/usr/bin/python3
"""Make tests/golden/data/ (run once, from the repository root; committed).

    /usr/bin/python3 tests/golden/make_data.py

numpy with a fixed seed; the files are small inputs for tests/cli/golden.sh.
Rerunning it rewrites the same bytes (numpy 1.24's default_rng(25)); if a
future numpy gave other numbers, expected.txt would have to be regenerated,
so do not rerun it without a reason."""
import json
import os
import numpy as np

ROOT = os.getcwd()
D = os.path.join(ROOT, "tests", "golden", "data")
os.makedirs(D, exist_ok=True)
rng = np.random.default_rng(25)


def softmax(S):
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    return E / E.sum(axis=-1, keepdims=True)


def save(name, a):
    np.save(os.path.join(D, name), a)


def write(name, text):
    with open(os.path.join(D, name), "w") as f:
        f.write(text)


def ids_file(name, lines):
    write(name, "".join(",".join(map(str, l)) + "\n" for l in lines))


# matrices
save("A4.npy", softmax(2 * rng.normal(size=(2, 3, 10, 10))))      # [L, H, n, n]
save("A2.npy", softmax(2 * rng.normal(size=(12, 12))))             # [n, n]
S = 2 * rng.normal(size=(2, 2, 8, 8))
S[..., ~np.tril(np.ones((8, 8), bool))] = -np.inf
save("Ac.npy", softmax(S))                                         # causal [L, H, n, n]
N = softmax(rng.normal(size=(6, 6)))
N[2, 3] = np.nan
save("nan.npy", N)                                                 # a NaN inside
save("A5.npy", softmax(rng.normal(size=(1, 2, 2, 4, 4))))          # 5-D: refused
save("x.npy", rng.normal(size=(10, 128)))                          # tiny-gpt2 c_attn input
K = np.abs(rng.normal(size=(6, 6))) * 0.3
K = (K + K.T) / 2
np.fill_diagonal(K, 0)
save("S.npy", K)                                                   # a [K, K] similarity

# texts
words = ("the of and to in a is that for it as was with be by on not he this are or his "
         "from at which but have an they you were her she there one all we their").split()
lines = [" ".join(rng.choice(words, n)) for n in (7, 3, 0, 12, 5)]  # one blank line
write("corpus.txt", "\n".join(lines) + "\n")
write("long.txt", lines[0] + "\n" + " ".join(rng.choice(words, 400)) + "\n" + lines[1] + "\n")

# token ids (one sequence a line)
ids_file("gpt2_ids.txt", [list(rng.integers(0, 50257, n)) for n in (6, 11, 4)])
ids_file("bert_ids.txt", [[101] + list(rng.integers(1000, 4000, n)) + [102] for n in (5, 9, 3)])
bad = [list(rng.integers(0, 50257, n)) for n in (5, 7, 6, 4)]
bad[2][2] = 99999                                                  # outside the vocabulary, line 3
ids_file("bad_ids.txt", bad)
for arch in ("gemma2", "roberta"):
    g = json.load(open(os.path.join(ROOT, "tests/data/archref", arch, "ids.json")))["ids"]
    ids_file(arch + "_ids.txt", [g[:12], g[2:9], g[4:16]])

# media lists (paths relative to the repository root, where golden.sh runs)
write("images.txt", "tests/data/images/rgb8_37x23.png\ntests/data/images/gray_30x22.jpg\n")
write("bad_images.txt", "tests/data/images/rgb8_37x23.png\ntests/data/audio/chirp_1s.wav\n"
      "tests/data/images/gray_30x22.jpg\n")
write("audio.txt", "tests/data/audio/chirp_1s.wav\ntests/data/audio/tone_pcm8.wav\n")
write("bad_audio.txt", "tests/data/audio/chirp_1s.wav\ntests/data/audio/truncated.wav\n")


# saved records, for aggregate, compare and plot
def records(shift):
    out = []
    for t in range(3):
        for l in range(3):
            for h in range(2):
                out.append({"model": "m%d" % (h % 2), "text": t, "layer": l, "head": h,
                            "sigma_max": round(float(1 + 0.2 * l + shift + 0.05 * rng.normal()), 6),
                            "entropy_mean": round(float(2 - 0.3 * l + 0.1 * rng.normal()), 6),
                            "causal": bool(h == 0)})
    return out


write("h.jsonl", "".join(json.dumps(r) + "\n" for r in records(0.0)))
write("h2.jsonl", "".join(json.dumps(r) + "\n" for r in records(0.1)))
write("tok.json", json.dumps({"ids": list(range(10)),
                              "tokens": ["t%d" % i for i in range(10)]}) + "\n")

# pre-softmax scores of a causal model, for plot --kind lens (issue 28 item
# 5): a generator of its own, so that the files above keep their bytes
r28 = np.random.default_rng(28)
Sc = 2 * r28.normal(size=(2, 2, 8, 8))
Sc[..., ~np.tril(np.ones((8, 8), bool))] = -np.inf
save("scores.npy", Sc)                                             # [L, H, n, n], -inf masked

# cross-attention (issue 30): [L, H, m, n] = [2, 2, 6, 9], 6 targets over 9
# sources, a near-monotone alignment with masked (zero) source entries; a
# generator of its own, so that the files above keep their bytes
r30 = np.random.default_rng(30)
centre = np.arange(6)[:, None] * 9 / 6 + r30.normal(size=(2, 2, 6, 1))
Sr = -np.abs(np.arange(9) - centre) + r30.normal(size=(2, 2, 6, 9))
Sr[..., 7:] = -np.inf                                              # padding of the source
save("R.npy", softmax(Sr))
