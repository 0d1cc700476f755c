#!/usr/bin/python3
"""Check `attngeom weights` (docs/metrics.md, family D) against an independent DENSE reference.

Usage: /usr/bin/python3 tests/ref/check_weights.py path/to/attngeom

The C side works in factored form (thin QR cores, W_O W_V, trace identities).
Here every head's d x d matrices are formed explicitly in float64 and
decomposed with numpy's dense SVD / eigensolver:

  M_QK = W_Q W_K^T   (biases ignored; rotary models at offset 0 = plain product)
  M_OV = W_V W_O     (W_O = rows h*d_h .. (h+1)*d_h - 1 of the [in, out] output
                      projection; d x d_out)

  qk_/ov_ + family A (sigma_max, sigma_gap, effective_rank, stable_rank,
  participation_ratio, numerical_rank with threshold sigma_1 * max(m,n) * 2^-52),
  qk_symmetry_score = |S|_F^2 / |M|_F^2, S = (M + M^T) / 2,
  ov_copying_score = sum Re(lambda) / sum |lambda| over the eigenvalues of the
  dense M_OV (null when all are 0 or M_OV is not square).
  Grouped-query attention: query head h uses kv head h // (H / H_kv).

Inputs:
  * models/tiny-gpt2 and tests/data/models/tiny-bert (always), via
    `attngeom weights MODEL --format json --metrics weights`;
  * tiny-llama and use-lite only from $AG_TEST_MODELS/<name> (use-lite through
    the named-tensor path: --weights F --qkv NAME --o NAME --heads 4, one run
    per layer; layer 0's output kernel is 256 -> 512, so M_OV is not square);
  * the encoder-decoder folders t5, t5-v1_1, bart and whisper-seq2seq of
    tests/data/models/arch (every stack: the encoder's, the decoder's self-
    and cross-attention heads, records with "stack" in pass order), and bart
    with 2 decoder heads (stacks of different head counts);
  * tests/data/use-lite/qkv.safetensors (QK keys; no output kernel, so every
    ov_ key must be null);
  * synthetic safetensors written here (d = 64, d_h = 8, 4 heads): random
    factors (fused qkv, F32); W_K = W_Q (score 1, qk sigmas = sigma(W_Q)^2);
    W_K = W_Q J with J antisymmetric (score 0); W_O = c pinv(W_V), c = 2 and
    -0.5 (copying +1 / -1); rank-deficient W_Q (qk_numerical_rank = r); GQA via
    --q/--k/--v with K/V narrower than Q; an output kernel 64 -> 96 with
    leading singleton dimensions; --q/--k without --v (ov keys null); and --linear ([out, in]) files that must give
    exactly the records of the transposed [in, out] files.  For these the
    dense reference is also checked against the closed-form values.

Comparison: records for every (layer, head), rows = cols = d, exactly the 14
family-D keys; null exactly where the reference is null; numbers within
|got - exp| <= 1e-6 |exp| (+ an absolute 1e-12 only for the values that are
mathematically 0, listed per synthetic case with the reason); numerical_rank
equal, unless a singular value lies within a factor 2 of the threshold (then
the count depends on rounding: the accepted range is printed, as in
check_matrix.py).  The dense SVD's noise singular values of the d - d_h null
directions must fall under the threshold (else the dense reference itself
could not define the rank; reported as a failure).

Prints a summary (heads per model, max rel err per key) and exits 1 on any
failure; mismatching inputs are saved under /tmp/ag_weights_mismatch/.
"""
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import hf_forward as HF  # noqa: E402  (safetensors reader, name prefixes)

EPS = 2.0 ** -52
RTOL = 1e-6
ZERO_ATOL = 1e-12
MISMATCH_DIR = "/tmp/ag_weights_mismatch"

A_KEYS = ["sigma_max", "sigma_gap", "effective_rank", "stable_rank",
          "participation_ratio", "numerical_rank"]
KEYS = (["qk_" + k for k in A_KEYS] + ["qk_symmetry_score"] +
        ["ov_" + k for k in A_KEYS] + ["ov_copying_score"])
INT_KEYS = {"qk_numerical_rank", "ov_numerical_rank"}


# ------------------------------------------------------------ reference ---

def family_a(M, rank_bound):
    """Family A of the dense matrix M.  Returns (values, band, noise_ratio):
    band = (lo, hi) for numerical_rank (singular values above 2*thr / thr/2),
    noise_ratio = max of the singular values beyond rank_bound over thr."""
    m, n = M.shape
    s = np.linalg.svd(M, compute_uv=False)
    s1 = float(s[0]) if len(s) else 0.0
    thr = s1 * max(m, n) * EPS
    v = {"sigma_max": s1, "numerical_rank": int(np.count_nonzero(s > thr))}
    if s1 == 0.0:
        v.update(sigma_gap=None, effective_rank=None, stable_rank=None,
                 participation_ratio=None)
    else:
        v["sigma_gap"] = 1.0 - float(s[1]) / s1 if len(s) >= 2 else None
        p = s / s.sum()
        p = p[p > 0]
        v["effective_rank"] = float(np.exp(-np.sum(p * np.log(p))))
        t = s / s1                                  # scaled: no overflow
        s2, s4 = float(np.sum(t * t)), float(np.sum(t ** 4))
        v["stable_rank"] = s2
        v["participation_ratio"] = s2 * s2 / s4
    band = (int(np.count_nonzero(s > 2 * thr)), int(np.count_nonzero(s > thr / 2)))
    tail = s[rank_bound:]
    noise = float(tail.max()) / thr if len(tail) and thr > 0 else 0.0
    return v, band, noise


def head_reference(wq, wk, wv, wo):
    """Dense family D of one head: wq, wk, wv (d, d_h), wo (d_h, d_out) or None."""
    d_h = wq.shape[1]
    out, bands, noise = {}, {}, {}
    M = wq @ wk.T
    a, bands["qk_numerical_rank"], noise["qk"] = family_a(M, d_h)
    out.update({"qk_" + k: x for k, x in a.items()})
    fro2 = float(np.sum(M * M))
    S = (M + M.T) / 2
    out["qk_symmetry_score"] = float(np.sum(S * S)) / fro2 if fro2 > 0 else None
    if wv is None or wo is None:
        for k in A_KEYS + ["copying_score"]:
            out["ov_" + k] = None
        return out, bands, noise, {"M_QK": M}
    V = wv @ wo
    a, bands["ov_numerical_rank"], noise["ov"] = family_a(V, d_h)
    out.update({"ov_" + k: x for k, x in a.items()})
    out["ov_copying_score"] = None
    if V.shape[0] == V.shape[1]:
        lam = np.linalg.eigvals(V)
        sabs = float(np.sum(np.abs(lam)))
        if sabs > 0:
            out["ov_copying_score"] = float(np.sum(lam.real)) / sabs
    return out, bands, noise, {"M_QK": M, "M_OV": V}


# --------------------------------------------------- heads of each input ---

def model_heads(folder):
    """[(layer, head, wq, wk, wv, wo)] of a HF model folder, all [in, out]."""
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    mt = cfg["model_type"]
    W = HF.Weights(HF.load_weights(folder), HF._MODELS[mt][1])
    heads = []
    if mt == "gpt2":
        L, H, d = cfg["n_layer"], cfg["n_head"], cfg["n_embd"]
        dh, Hkv = d // H, H
        for l in range(L):
            c = W("h.%d.attn.c_attn.weight" % l)          # Conv1D [d, 3d]
            q, k, v = c[:, :d], c[:, d:2 * d], c[:, 2 * d:]
            o = W("h.%d.attn.c_proj.weight" % l)          # [in, out]
            heads.append((q, k, v, o))
    elif mt == "bert":
        L, H, d = cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["hidden_size"]
        dh, Hkv = d // H, H
        for l in range(L):
            p = "encoder.layer.%d.attention." % l
            heads.append(tuple(W(p + n + ".weight").T for n in     # nn.Linear [out, in]
                               ("self.query", "self.key", "self.value", "output.dense")))
    elif mt in ("llama", "mistral", "qwen2"):
        L, H, d = cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["hidden_size"]
        dh = cfg.get("head_dim") or d // H
        Hkv = cfg.get("num_key_value_heads", H)
        for l in range(L):
            p = "layers.%d.self_attn." % l
            heads.append(tuple(W(p + n + "_proj.weight").T for n in "qkvo"))
    else:
        raise ValueError("unsupported model_type %r" % mt)
    out = []
    for l, (q, k, v, o) in enumerate(heads):
        out += split_heads(q, k, v, o, H, dh, Hkv, layer=l)
    return out


def pair_heads(folder):
    """{(stack, layer): (wq, wk, wv, wo)} of an encoder-decoder folder, all
    [in, out] (nn.Linear [out, in] transposed), in the order `attngeom
    weights` gives them: the encoder's layers, then per decoder layer its
    self-attention and its cross-attention (W_Q of the decoder, W_K, W_V
    applied to the encoder's output). T5 (modeling_t5.py T5Block:
    layer.0.SelfAttention, a decoder's layer.1.EncDecAttention; q, k, v, o)
    and BART or Whisper (modeling_bart.py, modeling_whisper.py: self_attn,
    encoder_attn; q_proj, k_proj, v_proj, out_proj), with the head counts
    of each stack."""
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    t5 = cfg["model_type"] == "t5"
    W = HF.Weights(HF.load_weights(folder), [] if t5 else ["model."])
    if t5:
        H = {"encoder": cfg["num_heads"], "decoder": cfg["num_heads"]}
        L = {"encoder": cfg["num_layers"],
             "decoder": cfg.get("num_decoder_layers") or cfg["num_layers"]}
        names = ("q", "k", "v", "o")
        where = {"encoder": "encoder.block.%d.layer.0.SelfAttention.",
                 "decoder": "decoder.block.%d.layer.0.SelfAttention.",
                 "cross": "decoder.block.%d.layer.1.EncDecAttention."}
    else:
        H = {s: cfg[s + "_attention_heads"] for s in ("encoder", "decoder")}
        L = {s: cfg[s + "_layers"] for s in ("encoder", "decoder")}
        names = ("q_proj", "k_proj", "v_proj", "out_proj")
        where = {"encoder": "encoder.layers.%d.self_attn.",
                 "decoder": "decoder.layers.%d.self_attn.",
                 "cross": "decoder.layers.%d.encoder_attn."}
    H["cross"] = H["decoder"]
    order = [("encoder", l) for l in range(L["encoder"])]
    order += [(s, l) for l in range(L["decoder"]) for s in ("decoder", "cross")]
    out = []
    for stack, l in order:
        q, k, v, o = (W(where[stack] % l + n + ".weight").T for n in names)
        dh = q.shape[1] // H[stack]
        out.append((stack, split_heads(q, k, v, o, H[stack], dh, H[stack], layer=l)))
    return out


def check_pair(cli, name, folder):
    """`weights` on an encoder-decoder folder: records in pass order, each
    with its stack, every stack's heads against the dense reference."""
    recs, cmd = cli_records(cli, [folder], name, [folder])
    if recs is None:
        return
    want = [(s, h[0], h[1]) for s, heads in pair_heads(folder) for h in heads]
    got = [(r.get("stack"), r.get("layer"), r.get("head")) for r in recs]
    if got != want:
        ST.fails.append("%s: records (stack, layer, head) %s, expected %s" % (name, got, want))
        print("FAIL", ST.fails[-1])
    for stack, heads in pair_heads(folder):
        l = heads[0][0]
        mine = [{k: v for k, v in r.items() if k != "stack"} for r in recs
                if r.get("stack") == stack and r.get("layer") == l]
        compare("%s %s" % (name, stack), mine, heads, (), [folder], cmd)


def split_heads(q, k, v, o, H, dh, Hkv, layer=0):
    group = H // Hkv
    res = []
    for h in range(H):
        g = h // group
        cols = slice(h * dh, (h + 1) * dh)
        kv = slice(g * dh, (g + 1) * dh)
        res.append((layer, h, q[:, cols], k[:, kv],
                    None if v is None else v[:, kv],
                    None if o is None else o[h * dh:(h + 1) * dh, :]))
    return res


def squeeze_lead(a):
    while a.ndim > 2 and a.shape[0] == 1:
        a = a[0]
    return a


def named_heads(path, H, qkv=None, q=None, k=None, v=None, o=None, linear=False):
    """Heads of the named-tensor path (one layer, layer index 0)."""
    T = HF.read_safetensors(path)

    def get(name):
        if name is None:
            return None
        a = squeeze_lead(T[name])
        return a.T if linear else a
    if qkv:
        c = get(qkv)
        da = c.shape[1] // 3
        Q, K, V = c[:, :da], c[:, da:2 * da], c[:, 2 * da:]
    else:
        Q, K, V = get(q), get(k), get(v)
    dh = Q.shape[1] // H
    return split_heads(Q, K, V, get(o), H, dh, K.shape[1] // dh)


# --------------------------------------------------------------- running ---

class Stats:
    def __init__(self):
        self.maxrel = {k: 0.0 for k in KEYS}
        self.where = {k: "" for k in KEYS}
        self.maxabs_zero = {k: 0.0 for k in KEYS}
        self.nulls = {k: 0 for k in KEYS}
        self.heads = []          # (label, count)
        self.banded = []
        self.noise = 0.0
        self.fails = []
        self.theory = 0


ST = Stats()


def run_cli(cli, args):
    p = subprocess.run([cli] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=600)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def save_mismatch(label, inputs, cmd, lines):
    d = os.path.join(MISMATCH_DIR, label.replace("/", "_").replace(" ", "_"))
    os.makedirs(d, exist_ok=True)
    for src in inputs:
        dst = os.path.join(d, os.path.basename(src.rstrip("/")))
        if os.path.isdir(src):
            shutil.copytree(src, dst, dirs_exist_ok=True)
        else:
            shutil.copy(src, dst)
    with open(os.path.join(d, "mismatch.txt"), "a") as f:
        f.write("command: %s\n" % " ".join(cmd))
        for line in lines:
            f.write(line + "\n")
    return d


def is_num(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def compare(label, recs, heads, zero_keys=(), inputs=(), cmd=()):
    """Compare the CLI records with the dense reference of `heads`."""
    bad = []
    want_ids = [(l, h) for (l, h, *_r) in heads]
    got_ids = [(r.get("layer"), r.get("head")) for r in recs]
    if got_ids != want_ids:
        bad.append("records (layer, head) %s, expected %s" % (got_ids, want_ids))
    byid = {(r.get("layer"), r.get("head")): r for r in recs}
    refs = {}
    for (l, h, wq, wk, wv, wo) in heads:
        rec = byid.get((l, h))
        if rec is None:
            continue
        exp, bands, noise, mats = head_reference(wq, wk, wv, wo)
        refs[(l, h)] = (exp, mats)
        where = "%s L%d H%d" % (label, l, h)
        d = wq.shape[0]
        for part, r in noise.items():
            ST.noise = max(ST.noise, r)
            if r >= 1.0:
                bad.append("%s: dense SVD noise of M_%s's null directions reaches "
                           "%.3g x the rank threshold" % (where, part.upper(), r))
        if rec.get("rows") != d or rec.get("cols") != d:
            bad.append("%s: rows/cols %r/%r, expected %d" % (where, rec.get("rows"),
                                                            rec.get("cols"), d))
        extra = set(rec) - set(KEYS) - {"layer", "head", "rows", "cols", "model"}
        if extra:
            bad.append("%s: unexpected keys %s" % (where, sorted(extra)))
        for key in KEYS:
            if key not in rec:
                bad.append("%s: %s missing" % (where, key))
                continue
            got, want = rec[key], exp[key]
            if want is None:
                ST.nulls[key] += 1
                if got is not None:
                    bad.append("%s: %s got %r, expected null" % (where, key, got))
                continue
            if key in INT_KEYS:
                lo, hi = bands[key]
                if not (is_num(got) and float(got).is_integer()):
                    bad.append("%s: %s got %r, expected %d" % (where, key, got, want))
                elif lo == hi and got != want:
                    bad.append("%s: %s got %d, expected %d" % (where, key, got, want))
                elif lo != hi:
                    ST.banded.append((where, key, got, want, lo, hi))
                    if not lo <= got <= hi:
                        bad.append("%s: %s got %d, expected %d (rounding-dependent "
                                   "range %d..%d)" % (where, key, got, want, lo, hi))
                continue
            if not is_num(got):
                bad.append("%s: %s got %r, expected %.17g" % (where, key, got, want))
                continue
            err = abs(got - want)
            # ZERO_ATOL only where the value is mathematically 0 (zero_keys,
            # each justified where the synthetic case is built): the dense
            # and factored results are then both rounding noise ~1e-16.
            atol = ZERO_ATOL if key in zero_keys else 0.0
            if key in zero_keys:
                ST.maxabs_zero[key] = max(ST.maxabs_zero[key], err)
            else:
                rel = err / abs(want) if want != 0 else (0.0 if err == 0 else math.inf)
                if rel > ST.maxrel[key]:
                    ST.maxrel[key], ST.where[key] = rel, where
            if err > RTOL * abs(want) + atol:
                bad.append("%s: %s expected %.17g, got %.17g (rel err %.3g)"
                           % (where, key, want, got, err / abs(want) if want else math.inf))
    ST.heads.append((label, len(recs)))
    if bad:
        saved = save_mismatch(label, inputs, cmd, bad)
        for b in bad:
            ST.fails.append(b)
            print("FAIL", b)
        print("  command:", " ".join(cmd))
        print("  inputs saved in", saved)
    return refs


def cli_records(cli, args, label, inputs):
    cmd = [cli, "weights"] + args + ["--format", "json", "--metrics", "weights"]
    rc, out, err = run_cli(cli, cmd[1:])
    if rc != 0:
        msg = "%s: exit %d: %s" % (label, rc, err.strip())
        ST.fails.append(msg)
        print("FAIL", msg)
        save_mismatch(label, inputs, cmd, [msg])
        return None, cmd
    if "NaN" in out or "Infinity" in out:
        ST.fails.append("%s: non-finite token in JSON" % label)
    return json.loads(out)["records"], cmd


def check(cli, label, args, heads, inputs, zero_keys=()):
    recs, cmd = cli_records(cli, args, label, inputs)
    if recs is None:
        return None, None
    return recs, compare(label, recs, heads, zero_keys, inputs, cmd)


def theory(label, cond, what):
    ST.theory += 1
    if not cond:
        msg = "%s: dense reference contradicts the closed form: %s" % (label, what)
        ST.fails.append(msg)
        print("FAIL", msg)


# -------------------------------------------------------------- synthetic ---

def write_safetensors(path, tensors):
    """tensors: [(name, array, 'F32'|'F64')]."""
    header, blobs, off = {}, [], 0
    for name, a, dt in tensors:
        raw = np.ascontiguousarray(a, dtype="<f4" if dt == "F32" else "<f8").tobytes()
        header[name] = {"dtype": dt, "shape": list(a.shape),
                        "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def synthetic(cli, tmp):
    rng = np.random.default_rng(20250607)
    d, dh, H = 64, 8, 4
    da = dh * H

    def rnd(*shape):
        return rng.standard_normal(shape) / math.sqrt(shape[0])

    def sv(a):
        return np.linalg.svd(a, compute_uv=False)

    def case(name, tensors, args, zero_keys=(), linear_of=None):
        path = os.path.join(tmp, name + ".safetensors")
        write_safetensors(path, tensors)
        full = ["--weights", path, "--heads", str(H)] + args
        kw = {}
        it = iter(args)
        for a in it:
            kw[a.lstrip("-")] = next(it) if a != "--linear" else True
        heads = named_heads(path, H, **kw)
        recs, refs = check(cli, "synthetic " + name, full, heads, [path], zero_keys)
        return heads, recs, refs

    # 1. random factors, fused [d, 3d_a] kernel, F32 storage
    qkv, o = rnd(d, 3 * da), rnd(da, d)
    case("random", [("qkv", qkv, "F32"), ("o", o, "F32")], ["--qkv", "qkv", "--o", "o"])

    # 2. W_K = W_Q: M_QK = W_Q W_Q^T symmetric PSD -> score 1, sigmas = sigma(W_Q)^2
    q = rnd(d, da)
    heads, recs, refs = case("wk_eq_wq", [("q", q, "F64"), ("k", q, "F64"), ("v", rnd(d, da), "F64"),
                                          ("o", rnd(da, d), "F64")],
                             ["--q", "q", "--k", "k", "--v", "v", "--o", "o"])
    for (l, h, wq, *_r) in heads:
        exp = refs[(l, h)][0]
        s = sv(wq) ** 2
        theory("wk_eq_wq H%d" % h, abs(exp["qk_symmetry_score"] - 1) < 1e-12
               and abs(exp["qk_sigma_max"] - s[0]) < 1e-12 * s[0]
               and abs(exp["qk_stable_rank"] - np.sum(s ** 2) / s[0] ** 2) < 1e-10,
               "score %r, sigma_max %r vs sigma(W_Q)^2 %r" % (exp["qk_symmetry_score"],
                                                            exp["qk_sigma_max"], s[0]))

    # 3. W_K = W_Q J, J antisymmetric: M_QK = W_Q J^T W_Q^T is antisymmetric.
    # Mathematically 0: qk_symmetry_score (S = 0) and qk_sigma_gap (a real
    # antisymmetric matrix is normal with eigenvalues +-i mu, so its singular
    # values come in equal pairs: sigma_1 = sigma_2).
    q = rnd(d, da)
    k = np.empty_like(q)
    for h in range(H):
        J = rng.standard_normal((dh, dh))
        J = J - J.T
        k[:, h * dh:(h + 1) * dh] = q[:, h * dh:(h + 1) * dh] @ J
    zk = {"qk_symmetry_score", "qk_sigma_gap"}
    heads, recs, refs = case("wk_antisym", [("q", q, "F64"), ("k", k, "F64"), ("v", rnd(d, da), "F64"),
                                            ("o", rnd(da, d), "F64")],
                             ["--q", "q", "--k", "k", "--v", "v", "--o", "o"], zk)
    for (l, h, *_r) in heads:
        exp = refs[(l, h)][0]
        theory("wk_antisym H%d" % h, exp["qk_symmetry_score"] < 1e-14
               and exp["qk_sigma_gap"] < 1e-12 and exp["qk_numerical_rank"] == dh,
               "score %r, gap %r" % (exp["qk_symmetry_score"], exp["qk_sigma_gap"]))

    # 4. W_O = c pinv(W_V): W_O W_V = c I, M_OV = c P (P the orthogonal
    # projection on range(W_V)) -> copying score sign(c), every non-zero
    # singular value |c|.  Mathematically 0: ov_sigma_gap (sigma_1 = sigma_2 = |c|).
    for c, tag in ((2.0, "copy_pos2"), (-0.5, "copy_neg0.5")):
        v = rnd(d, da)
        o = np.vstack([c * np.linalg.pinv(v[:, h * dh:(h + 1) * dh]) for h in range(H)])
        heads, recs, refs = case(tag, [("qkv", np.hstack([rnd(d, da), rnd(d, da), v]), "F64"),
                                       ("o", o, "F64")], ["--qkv", "qkv", "--o", "o"],
                                 {"ov_sigma_gap"})
        for (l, h, *_r) in heads:
            exp = refs[(l, h)][0]
            theory("%s H%d" % (tag, h), abs(exp["ov_copying_score"] - math.copysign(1, c)) < 1e-12
                   and abs(exp["ov_sigma_max"] - abs(c)) < 1e-12
                   and abs(exp["ov_effective_rank"] - dh) < 1e-9
                   and exp["ov_numerical_rank"] == dh,
                   "copying %r, sigma_max %r, effective_rank %r"
                   % (exp["ov_copying_score"], exp["ov_sigma_max"], exp["ov_effective_rank"]))

    # 5. rank-deficient W_Q: head h has rank r_h, so qk_numerical_rank = r_h
    ranks = [1, 3, 5, 7]
    q = np.hstack([rnd(d, r) @ rng.standard_normal((r, dh)) for r in ranks])
    heads, recs, refs = case("rank_deficient", [("q", q, "F64"), ("k", rnd(d, da), "F64"),
                                                ("v", rnd(d, da), "F64"), ("o", rnd(da, d), "F64")],
                             ["--q", "q", "--k", "k", "--v", "v", "--o", "o"])
    for (l, h, *_r) in heads:
        exp = refs[(l, h)][0]
        theory("rank_deficient H%d" % h, exp["qk_numerical_rank"] == ranks[h],
               "numerical_rank %r, want %d" % (exp["qk_numerical_rank"], ranks[h]))

    # 6. GQA: 4 query heads, 2 key/value heads (K, V [64, 16] vs Q [64, 32])
    gq, gk, gv, go = rnd(d, da), rnd(d, da // 2), rnd(d, da // 2), rnd(da, d)
    g_heads, g_recs, _ = case("gqa", [("q", gq, "F64"), ("k", gk, "F64"), ("v", gv, "F64"),
                                      ("o", go, "F64")],
                              ["--q", "q", "--k", "k", "--v", "v", "--o", "o"])

    # 7. output kernel 64 -> 96 with leading singleton dims (as USE-lite's
    # [1, 1, d, d_out]): M_OV 64 x 96 is not square -> ov_copying_score null
    case("wide_out", [("qkv", rnd(d, 3 * da)[None, None], "F64"),
                      ("o", rnd(da, 96)[None, None], "F64")], ["--qkv", "qkv", "--o", "o"])

    # 8. --q/--k only (no --v, no --o): every ov_ key null
    case("qk_only", [("q", rnd(d, da), "F64"), ("k", rnd(d, da), "F64")], ["--q", "q", "--k", "k"])

    # 9. --linear: nn.Linear [out, in] files = the transposes; the records must
    # be identical (bit for bit) to those of the [in, out] file
    r_qkv, r_o = rnd(d, 3 * da), rnd(da, d)
    _, ref_recs, _ = case("fused_inout", [("qkv", r_qkv, "F64"), ("o", r_o, "F64")],
                          ["--qkv", "qkv", "--o", "o"])
    _, lin_recs, _ = case("fused_linear", [("qkv", r_qkv.T, "F64"), ("o", r_o.T, "F64")],
                          ["--qkv", "qkv", "--o", "o", "--linear"])
    _, glin_recs, _ = case("gqa_linear", [("q", gq.T, "F64"), ("k", gk.T, "F64"),
                                          ("v", gv.T, "F64"), ("o", go.T, "F64")],
                           ["--q", "q", "--k", "k", "--v", "v", "--o", "o", "--linear"])
    def metrics_of(recs):  # "model" names each case's file
        return [{k: v for k, v in r.items() if k != "model"} for r in recs]
    for name, a, b in (("fused", ref_recs, lin_recs), ("gqa", g_recs, glin_recs)):
        ST.theory += 1
        if a is None or b is None or metrics_of(a) != metrics_of(b):
            msg = "--linear (%s): records differ from the [in, out] file's" % name
            ST.fails.append(msg)
            print("FAIL", msg)


# ------------------------------------------------------------------ main ---

def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    cli = os.path.abspath(argv[1])
    t0 = time.time()
    tmp = tempfile.mkdtemp(prefix="ag_weights_")
    try:
        synthetic(cli, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    for name, folder in (("tiny-gpt2", os.path.join(ROOT, "models", "tiny-gpt2")),
                         ("tiny-bert", os.path.join(ROOT, "tests", "data", "models", "tiny-bert"))):
        check(cli, name, [folder], model_heads(folder), [folder])

    for name in ("t5", "t5-v1_1", "bart", "whisper-seq2seq"):
        check_pair(cli, name, os.path.join(ROOT, "tests", "data", "models", "arch", name))
    # stacks of different head counts (the decoder's 2 heads of width 8 read
    # from the same [16, 16] projections): records of 4 and of 2 heads a layer
    with tempfile.TemporaryDirectory() as tmp2:
        bart = os.path.join(ROOT, "tests", "data", "models", "arch", "bart")
        with open(os.path.join(bart, "config.json")) as f:
            cfg = json.load(f)
        cfg["decoder_attention_heads"] = 2
        with open(os.path.join(tmp2, "config.json"), "w") as f:
            json.dump(cfg, f)
        os.symlink(os.path.join(bart, "model.safetensors"), os.path.join(tmp2, "model.safetensors"))
        check_pair(cli, "bart, 2 decoder heads", tmp2)

    use_names = {l: ("module/Encoder_en/KonaTransformer/Encode/Layer_%d/TransformerLayer/"
                     "MultiheadAttention/%s_transform_single/kernel/part_0")
                 for l in (0, 1)}
    qkv_file = os.path.join(ROOT, "tests", "data", "use-lite", "qkv.safetensors")
    for l in (0, 1):
        qkv = use_names[l] % (l, "qkv")
        heads = named_heads(qkv_file, 4, qkv=qkv)
        check(cli, "use-lite qkv.safetensors layer %d (no --o)" % l,
              ["--weights", qkv_file, "--qkv", qkv, "--heads", "4"], heads, [qkv_file])

    models = os.environ.get("AG_TEST_MODELS")
    if not models:
        print("skipped tiny-llama and use-lite/model.safetensors: AG_TEST_MODELS not set")
    else:
        folder = os.path.join(models, "tiny-llama")
        if os.path.isdir(folder):
            check(cli, "tiny-llama", [folder], model_heads(folder), [folder])
        else:
            print("skipped tiny-llama: no %s" % folder)
        f = os.path.join(models, "use-lite", "model.safetensors")
        if os.path.exists(f):
            for l in (0, 1):
                qkv, o = use_names[l] % (l, "qkv"), use_names[l] % (l, "output")
                check(cli, "use-lite layer %d" % l,
                      ["--weights", f, "--qkv", qkv, "--o", o, "--heads", "4"],
                      named_heads(f, 4, qkv=qkv, o=o), [f])
        else:
            print("skipped use-lite: no %s" % f)

    print()
    print("check_weights: %d inputs, %d heads compared, %d closed-form checks (%.1f s)"
          % (len(ST.heads), sum(n for _, n in ST.heads), ST.theory, time.time() - t0))
    for label, n in ST.heads:
        print("  %-48s %3d heads" % (label, n))
    print("  max rel err over non-zero expected values; max abs err over the values "
          "that are mathematically 0 (synthetic cases; atol %g)" % ZERO_ATOL)
    print("  %-26s %12s %12s %6s  %s" % ("key", "max rel err", "max abs err", "nulls",
                                         "max rel err at"))
    for k in KEYS:
        if k in INT_KEYS:
            print("  %-26s %12s %12s %6d" % (k, "exact", "", ST.nulls[k]))
            continue
        print("  %-26s %12.3g %12.3g %6d  %s" % (k, ST.maxrel[k], ST.maxabs_zero[k],
                                                ST.nulls[k], ST.where[k]))
    print("  largest dense-SVD noise singular value of the null directions: "
          "%.3g x the numerical_rank threshold" % ST.noise)
    for where, key, got, want, lo, hi in ST.banded:
        print("note: %s of %s is rounding-dependent (a singular value within a factor 2 "
              "of the threshold): accepted range %d..%d, dense %d, got %d"
              % (key, where, lo, hi, want, got))
    if ST.fails:
        print("check_weights: FAILED, %d failure(s); inputs saved in %s"
              % (len(ST.fails), MISMATCH_DIR))
        return 1
    print("check_weights: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
