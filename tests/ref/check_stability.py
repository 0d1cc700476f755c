#!/usr/bin/python3
"""Check family E (docs/metrics.md, family E, `--metrics stability`) against an independent
numpy reference.

Usage: /usr/bin/python3 tests/ref/check_stability.py path/to/attngeom

For one head with input X [n, d] (the input of the Q/K projections):
  Q = X W_Q + b_Q,  K = X W_K + b_K              (unrotated)
  Qr, Kr = rotary rotation of Q, K (rotate-half over the first rotary_dim
           dims, rope_theta, positions 0..n-1) for LLaMA-family models and
           `layer --rotary-dim/--rope-theta`, else Q, K
  S = c Qr Kr^T,  T = cap tanh(S / cap) with `layer --softcap` (else T = S),
  A = softmax_rows(T + mask), the mask causal, or the band 0 <= i - j < W
  of `layer --window W`
The Jacobian J = d vec(A) / d vec(X) (n^2 x n d) is formed EXPLICITLY from
closed-form derivatives, independently of the C code's JVP/VJP route:
  dS_ij / dX_tm = c [delta_it (R_i W_Q[m]) . kr_j + delta_jt qr_i . (R_j W_K[m])]
  dT_ij = (1 - tanh^2(S_ij / cap)) dS_ij
  dA_ij = A_ij (dT_ij - sum_k A_ik dT_ik)
and, for the first head of every input, cross-checked against central finite
differences of A(X) (h = 1e-6).  Then
  jacobian_norm     = largest singular value of J (numpy SVD)
  jacobian_norm_rel = jacobian_norm * |X|_F / |A|_F
  q_mean_cosine, k_mean_cosine = mean cos over ordered pairs i != j of the
                      non-zero rows of the UNROTATED Q, K
  qk_cos_mean       = mean cos(qr_i, kr_j) over the pairs the mask allows
                      (ROTATED vectors, as the scores use them), zero rows skipped
  sensitivity       cannot be reproduced (GSL's mt19937 stream): checked to lie
                      in [0, jacobian_norm_rel (1 + 1e-2)], to be reproducible
                      with the same --seed and to change with another.

Inputs:
  * `attngeom analyze MODEL --text T --metrics stability --precision f64`
    on models/tiny-gpt2 (causal, biases) and tests/data/models/tiny-bert
    (non-causal, biases; X = block input), every layer and head, with X
    from the float64 forward pass of tests/ref/hf_forward.py;
  * tiny-llama (rotary, grouped-query) from $AG_TEST_MODELS/tiny-llama when
    that folder exists (skipped with a message otherwise);
  * the ALiBi folders tests/data/models/arch/bloom and mpt (token ids), S
    plus each head's bias row (slope·(j − off), hf_forward's slopes);
  * `attngeom layer` on USE-lite (tests/data/use-lite/qkv.safetensors, the
    X fixtures of tests/data/fixtures/use-lite; fused Q|K|V with biases,
    4 heads, scales 0.125 / 0.0883883461356163, non-causal), both layers;
  * `attngeom layer` on USE-lite layer 0 with the attention kernel's options
    (--window, --softcap, --rotary-dim with --rope-theta, and all together):
    the records as above and the probabilities of --save-attention against
    the reference's A (1e-12).

Tolerances: 1e-6 relative for jacobian_norm / jacobian_norm_rel, 1e-9
relative (plus 1e-12 absolute) for the cosines.  Prints the maximum errors
and exits 1 on any failure.
"""
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import hf_forward as HF  # noqa: E402

TEXT = "The quick brown fox jumps over the lazy dog while the cat sleeps."
NORM_RTOL = 1e-6
COS_RTOL, COS_ATOL = 1e-9, 1e-12
SENS_SLACK = 1e-2
NORM_KEYS = ["jacobian_norm", "jacobian_norm_rel"]
COS_KEYS = ["q_mean_cosine", "k_mean_cosine", "qk_cos_mean"]
USE_K = ("module/Encoder_en/KonaTransformer/Encode/Layer_%d/TransformerLayer/"
         "MultiheadAttention/qkv_transform_single/kernel/part_0")
USE_B = ("module_apply_default/Encoder_en/KonaTransformer/Encode/Layer_%d/TransformerLayer/"
         "MultiheadAttention/qkv_transform_single/bias/ConcatPartitions/concat")
USE_SCALE = [0.125, 0.0883883461356163]

failures = []
worst = {}


# ------------------------------------------------------------ reference ---

def rotate_half(x):
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def rope_tables(n, r, theta):
    """cos, sin [n, r/2]: angle i * theta^(-2j/r) of position i, pair j."""
    inv = 1.0 / (theta ** (np.arange(0, r, 2, dtype=np.float64) / r))
    ang = np.arange(n, dtype=np.float64)[:, None] * inv[None, :]
    return np.cos(ang), np.sin(ang)


def rotate_first(M, r, cos, sin):
    """Rotate-half over the first r dims of the last axis of M, with cos and
    sin broadcasting against M[..., :r/2]; the other dims unchanged."""
    out = M.copy()
    rot = M[..., :r]
    out[..., :r] = (rot * np.concatenate([cos, cos], axis=-1)
                    + rotate_half(rot) * np.concatenate([sin, sin], axis=-1))
    return out


def visible(n, causal, window):
    """Boolean [n, n]: key j visible from query i (not causal with a window:
    the band |i - j| < window of ModernBERT's local layers)."""
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    if not causal:
        return np.abs(i - j) < window if window else np.ones((n, n), dtype=bool)
    return (j <= i) & ((i - j < window) if window else True)


def softmax_masked(S, allowed):
    S = np.where(allowed, S, -np.inf)
    E = np.exp(S - S.max(axis=1, keepdims=True))
    return E / E.sum(axis=1, keepdims=True)


class Head:
    def __init__(self, X, wq, wk, bq, bk, scale, causal, theta=None, rotary_dim=None,
                 softcap=0.0, window=0, alibi=None):
        self.X, self.wq, self.wk = X, wq, wk
        self.bq = bq if bq is not None else np.zeros(wq.shape[1])
        self.bk = bk if bk is not None else np.zeros(wk.shape[1])
        self.c, self.causal, self.theta = scale, causal, theta
        self.r = rotary_dim or wq.shape[1]
        self.cap, self.window = softcap, window
        self.allowed = visible(X.shape[0], causal, window)
        # ALiBi: the bias row [n] added to every row of the scaled scores
        # (constant in X: S's derivatives are unchanged)
        self.alibi = np.zeros(X.shape[0]) if alibi is None else alibi

    def rot(self, M):
        """Row i of M [n, dh] rotated by position i (identity without rope)."""
        if self.theta is None:
            return M
        cos, sin = rope_tables(M.shape[0], self.r, self.theta)
        return rotate_first(M, self.r, cos, sin)

    def capped(self, S):
        return self.cap * np.tanh(S / self.cap) if self.cap else S

    def attention(self, X):
        Qr = self.rot(X @ self.wq + self.bq)
        Kr = self.rot(X @ self.wk + self.bk)
        return softmax_masked(self.capped(self.c * Qr @ Kr.T + self.alibi), self.allowed)

    def jacobian(self):
        X = self.X
        n, d = X.shape
        dh = self.wq.shape[1]
        Qr = self.rot(X @ self.wq + self.bq)
        Kr = self.rot(X @ self.wk + self.bk)
        S = self.c * Qr @ Kr.T + self.alibi
        A = softmax_masked(self.capped(S), self.allowed)
        if self.theta is None:
            WqR = np.broadcast_to(self.wq, (n, d, dh))
            WkR = np.broadcast_to(self.wk, (n, d, dh))
        else:  # W's rows turned as the row of position i: [n, d, dh]
            cos, sin = rope_tables(n, self.r, self.theta)
            WqR = rotate_first(np.broadcast_to(self.wq, (n, d, dh)), self.r, cos[:, None, :], sin[:, None, :])
            WkR = rotate_first(np.broadcast_to(self.wk, (n, d, dh)), self.r, cos[:, None, :], sin[:, None, :])
        Gq = self.c * np.einsum("imh,jh->ijm", WqR, Kr)  # dS_ij / dX_im
        Gk = self.c * np.einsum("ih,jmh->ijm", Qr, WkR)  # dS_ij / dX_jm
        dS = np.zeros((n, n, n, d))
        i = np.arange(n)
        dS[i[:, None], i[None, :], i[:, None], :] += Gq
        dS[i[:, None], i[None, :], i[None, :], :] += Gk
        if self.cap:  # d(cap tanh(s/cap))/ds = 1 - tanh^2(s/cap)
            dS *= (1 - np.tanh(S / self.cap) ** 2)[:, :, None, None]
        mean = np.einsum("ik,iktm->itm", A, dS)
        J = A[:, :, None, None] * (dS - mean[:, None, :, :])
        return J.reshape(n * n, n * d), A

    def fd_jacobian(self, h=1e-6):
        X = self.X.copy()
        n, d = X.shape
        J = np.zeros((n * n, n * d))
        for t in range(n):
            for m in range(d):
                x0 = X[t, m]
                X[t, m] = x0 + h
                ap = self.attention(X)
                X[t, m] = x0 - h
                am = self.attention(X)
                X[t, m] = x0
                J[:, t * d + m] = ((ap - am) / (2 * h)).ravel()
        return J

    def metrics(self):
        J, A = self.jacobian()
        s = np.linalg.svd(J, compute_uv=False)[0]
        out = {"jacobian_norm": s,
               "jacobian_norm_rel": s * np.linalg.norm(self.X) / np.linalg.norm(A)}
        Q = self.X @ self.wq + self.bq
        K = self.X @ self.wk + self.bk
        out["q_mean_cosine"] = mean_cosine(Q)
        out["k_mean_cosine"] = mean_cosine(K)
        out["qk_cos_mean"] = qk_cos_mean(self.rot(Q), self.rot(K), self.allowed)
        return out, J


def unit_rows(M):
    nr = np.linalg.norm(M, axis=1)
    keep = nr > 0
    return M[keep] / nr[keep, None], keep


def mean_cosine(M):
    U, _ = unit_rows(M)
    k = U.shape[0]
    if k < 2:
        return None
    C = U @ U.T
    return float((C.sum() - np.trace(C)) / (k * (k - 1)))


def qk_cos_mean(Qr, Kr, mask):
    qn, kn = np.linalg.norm(Qr, axis=1), np.linalg.norm(Kr, axis=1)
    allowed = mask & (qn[:, None] > 0) & (kn[None, :] > 0)
    if not allowed.any():
        return None
    C = (Qr @ Kr.T) / np.where(allowed, np.outer(qn, kn), 1.0)
    return float(C[allowed].mean())


# ----------------------------------------------------------- comparison ---

def note(key, err):
    worst[key] = max(worst.get(key, 0.0), err)


def compare(where, got, exp, fd_check_head=None):
    for key in NORM_KEYS + COS_KEYS:
        g, e = got.get(key, "missing"), exp[key]
        if g == "missing":
            failures.append("%s: key %s missing" % (where, key))
            continue
        if e is None or g is None:
            if not (e is None and g is None):
                failures.append("%s: %s got %r, expected %r" % (where, key, g, e))
            continue
        err = abs(g - e)
        if key in NORM_KEYS:
            rel = err / abs(e)
            note(key, rel)
            if rel > NORM_RTOL:
                failures.append("%s: %s got %.12g, expected %.12g (rel %.2e)" % (where, key, g, e, rel))
        else:
            note(key, err / max(abs(e), 1e-300))
            if err > COS_RTOL * abs(e) + COS_ATOL:
                failures.append("%s: %s got %.17g, expected %.17g" % (where, key, g, e))
    s, rel = got.get("sensitivity"), got.get("jacobian_norm_rel")
    if s is None or rel is None or not (0 <= s <= rel * (1 + SENS_SLACK)):
        failures.append("%s: sensitivity %r outside [0, jacobian_norm_rel (1 + %g)] = %r"
                        % (where, s, SENS_SLACK, rel))
    elif rel:
        note("sensitivity / jacobian_norm_rel", s / rel)


def fd_check(where, head, J):
    F = head.fd_jacobian()
    err = np.max(np.abs(F - J)) / max(1.0, np.max(np.abs(J)))
    note("explicit J vs finite differences (max abs / max|J|)", err)
    if err > 1e-6:
        failures.append("%s: explicit Jacobian vs finite differences %.2e" % (where, err))
    sf = np.linalg.svd(F, compute_uv=False)[0]
    sj = np.linalg.svd(J, compute_uv=False)[0]
    note("|J_fd|_2 vs |J|_2 (rel)", abs(sf - sj) / sj)


def check_head(where, head, rec, fd):
    """Record rec (None: missing) against head's reference metrics, and when
    fd head's explicit Jacobian against finite differences; 1 if compared."""
    if rec is None:
        failures.append("%s: no record" % where)
        return 0
    exp, J = head.metrics()
    if fd:
        fd_check(where, head, J)
    compare(where, rec, exp)
    return 1


def run_cli(cli, args):
    p = subprocess.run([cli] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if p.returncode != 0:
        raise RuntimeError("attngeom %s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr.strip()))
    return json.loads(p.stdout)["records"]


def check_seed(cli, args, base, where):
    """Same seed: identical sensitivity; --seed 2: a different one."""
    again = run_cli(cli, args + ["--metrics", "sensitivity", "--seed", "1"])
    other = run_cli(cli, args + ["--metrics", "sensitivity", "--seed", "2"])
    same = all(a["sensitivity"] == b["sensitivity"] for a, b in zip(again, base))
    differ = sum(a["sensitivity"] != b["sensitivity"] for a, b in zip(other, base))
    if not same:
        failures.append("%s: sensitivity differs between two runs with --seed 1" % where)
    if differ != len(base):
        failures.append("%s: --seed 2 leaves %d of %d sensitivities unchanged"
                        % (where, len(base) - differ, len(base)))


# ---------------------------------------------------------------- models ---

def model_inputs(model, folder, ids):
    """Per layer: X (the Q/K input) and per query head (wq, wk, bq, bk, scale,
    causal, theta), from the float64 reference forward pass."""
    _, hidden = model.forward(ids)
    cfg, W = model.cfg, model.W
    mt = cfg["model_type"]
    out = []
    if mt == "gpt2":
        L, H, d = cfg["n_layer"], cfg["n_head"], cfg["n_embd"]
        dh = d // H
        for l in range(L):
            p = "h.%d." % l
            X = HF.layer_norm(hidden[l], W(p + "ln_1.weight"), W(p + "ln_1.bias"),
                              cfg.get("layer_norm_epsilon", 1e-5))
            Wc, bc = W(p + "attn.c_attn.weight"), W(p + "attn.c_attn.bias")
            scale = 1.0
            if cfg.get("scale_attn_weights", True):
                scale /= math.sqrt(dh)
            if cfg.get("scale_attn_by_inverse_layer_idx", False):
                scale /= float(l + 1)
            heads = [(Wc[:, h * dh:(h + 1) * dh], Wc[:, d + h * dh:d + (h + 1) * dh],
                      bc[h * dh:(h + 1) * dh], bc[d + h * dh:d + (h + 1) * dh], scale, True, None)
                     for h in range(H)]
            out.append((X, heads))
    elif mt == "bert":
        L, H, d = cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["hidden_size"]
        dh = d // H
        for l in range(L):
            p = "encoder.layer.%d.attention.self." % l
            wq, wk = W(p + "query.weight").T, W(p + "key.weight").T
            bq, bk = W(p + "query.bias"), W(p + "key.bias")
            heads = [(wq[:, h * dh:(h + 1) * dh], wk[:, h * dh:(h + 1) * dh],
                      bq[h * dh:(h + 1) * dh], bk[h * dh:(h + 1) * dh], 1 / math.sqrt(dh), False, None)
                     for h in range(H)]
            out.append((hidden[l], heads))
    else:  # llama family
        L, H, d = cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["hidden_size"]
        Hkv = cfg.get("num_key_value_heads") or H
        dh = cfg.get("head_dim") or d // H
        theta = float(cfg.get("rope_theta", 10000.0))
        qkv_bias = cfg.get("attention_bias", False) or mt == "qwen2"
        for l in range(L):
            p = "layers.%d." % l
            X = HF.rms_norm(hidden[l], W(p + "input_layernorm.weight"), cfg.get("rms_norm_eps", 1e-6))
            wq, wk = W(p + "self_attn.q_proj.weight").T, W(p + "self_attn.k_proj.weight").T
            bq = W(p + "self_attn.q_proj.bias", required=False) if qkv_bias else None
            bk = W(p + "self_attn.k_proj.bias", required=False) if qkv_bias else None
            heads = []
            for h in range(H):
                g = h // (H // Hkv)
                heads.append((wq[:, h * dh:(h + 1) * dh], wk[:, g * dh:(g + 1) * dh],
                               None if bq is None else bq[h * dh:(h + 1) * dh],
                               None if bk is None else bk[g * dh:(g + 1) * dh], dh ** -0.5, True, theta))
            out.append((X, heads))
    return out


def alibi_inputs(model, ids):
    """Per layer: X and per head (wq, wk, bq, bk, scale, alibi row) of the
    ALiBi folders bloom (query_key_value per head q|k|v, bias slope·j) and
    mpt (Wqkv blocks Q|K|V, no biases, softmax_scale, bias slope·(j − (n−1))),
    from hf_forward's float64 pass and slopes."""
    _, hidden = model.forward(ids)
    cfg, W, n = model.cfg, model.W, len(ids)
    out = []
    if cfg["model_type"] == "bloom":
        H, d = cfg["n_head"], cfg["hidden_size"]
        dh, eps = d // H, cfg.get("layer_norm_epsilon", 1e-5)
        slopes = HF.bloom_alibi_slopes(H)
        for l in range(cfg["n_layer"]):
            p = "h.%d." % l
            X = HF.layer_norm(hidden[l], W(p + "input_layernorm.weight"), W(p + "input_layernorm.bias"), eps)
            Wc = W(p + "self_attention.query_key_value.weight").reshape(H, 3, dh, d)
            bc = W(p + "self_attention.query_key_value.bias").reshape(H, 3, dh)
            out.append((X, [(Wc[h, 0].T, Wc[h, 1].T, bc[h, 0], bc[h, 1], dh ** -0.5,
                             slopes[h] * np.arange(n)) for h in range(H)]))
    else:
        H, d = cfg["n_heads"], cfg["d_model"]
        dh, eps = d // H, cfg.get("layer_norm_epsilon", 1e-5)
        scale = (cfg.get("attn_config") or {}).get("softmax_scale") or dh ** -0.5
        slopes = HF.mpt_alibi_slopes(H)
        for l in range(cfg["n_layers"]):
            p = "blocks.%d." % l
            X = HF.layer_norm(hidden[l], W(p + "norm_1.weight"), 0.0, eps)
            Wc = W(p + "attn.Wqkv.weight").T
            out.append((X, [(Wc[:, h * dh:(h + 1) * dh], Wc[:, d + h * dh:d + (h + 1) * dh], None, None,
                             scale, slopes[h] * (np.arange(n) - (n - 1))) for h in range(H)]))
    return out


def check_alibi(cli, name):
    """Family E on an ALiBi folder (token ids: the folders have no tokenizer)."""
    folder = os.path.join("tests/data/models/arch", name)
    ids = [3, 11, 29, 7, 52, 11, 29, 60, 4, 17]
    args = ["analyze", folder, "--tokens", ",".join(map(str, ids)), "--precision", "f64", "--format", "json"]
    by = {(r["layer"], r["head"]): r for r in run_cli(cli, args + ["--metrics", "stability"])}
    count = 0
    for l, (X, heads) in enumerate(alibi_inputs(HF.Model(folder), ids)):
        for h, (wq, wk, bq, bk, scale, row) in enumerate(heads):
            where = "%s layer %d head %d" % (name, l, h)
            head = Head(X, wq, wk, bq, bk, scale, True, alibi=row)
            count += check_head(where, head, by.get((l, h)), l == 0 and h == 0)
    print("  %-10s %d heads, n = %d (ALiBi)" % (name, count, len(ids)))
# ------------------------------------------------------ QK-norm models ---
# Qwen3, OLMo-2 and Gemma-3 norm q and k between the projection and RoPE.
# The head's map X -> A is taken from hf_forward's decoder classes (their
# own qkv, qk_norm, per-layer RoPE, scale, cap and window), written for
# complex X as well, and J = dvec(A)/dvec(X) by the complex step
# (Squire & Trapp 1998: Im f(X + i h e_k) / h, h = 1e-30, exact to
# rounding: no subtraction), independently of the C code's closed-form
# tangents through the norm.

QK_FOLDERS = ["qwen3", "olmo2", "gemma3", "olmoe", "qwen3-yarn"]  # the last: QK-norm and yarn in one head


def softmax_complex(S, allowed):
    """softmax over the allowed keys, analytic in S (the shift by the real
    row maximum leaves it unchanged)."""
    S = np.where(allowed, S, 0)
    m = np.where(allowed, S.real, -np.inf).max(axis=1, keepdims=True)
    E = np.where(allowed, np.exp(S - m), 0)
    return E / E.sum(axis=1, keepdims=True)


class QKHead:
    def __init__(self, dec, l, h, X, n):
        self.dec, self.p, self.h, self.X = dec, "layers.%d." % l, h, X
        self.cos, self.sin = dec.rope_of_layer(n)(l)
        self.allowed = visible(n, True, dec.window(l))
        self.g = h // (dec.H // dec.Hkv)

    def qk(self, X):
        """The head's normed, unrotated q and k [n, dh]."""
        d, dh = self.dec, self.dec.dh
        q, k, _ = d.qkv(X, self.p)
        q, k = d.qk_norm(q, k, self.p)
        return q[:, self.h * dh:(self.h + 1) * dh], k[:, self.g * dh:(self.g + 1) * dh]

    def rotated(self, X):
        q, k = self.qk(X)
        return (HF.apply_rope(q[None], self.cos, self.sin)[0],
                HF.apply_rope(k[None], self.cos, self.sin)[0])

    def attention(self, X):
        qr, kr = self.rotated(X)
        S = self.dec.scale() * qr @ kr.T
        cap = self.dec.softcap()
        return softmax_complex(cap * np.tanh(S / cap) if cap else S, self.allowed)

    def metrics(self):
        X = self.X.astype(complex)
        n, d = X.shape
        J = np.zeros((n * n, n * d))
        for t in range(n):
            for m in range(d):
                X[t, m] += 1e-30j
                J[:, t * d + m] = self.attention(X).imag.ravel() / 1e-30
                X[t, m] -= 1e-30j
        A = self.attention(self.X).real
        s = np.linalg.svd(J, compute_uv=False)[0]
        q, k = self.qk(self.X)
        qr, kr = self.rotated(self.X)
        return {"jacobian_norm": s, "jacobian_norm_rel": s * np.linalg.norm(self.X) / np.linalg.norm(A),
                "q_mean_cosine": mean_cosine(q), "k_mean_cosine": mean_cosine(k),
                "qk_cos_mean": qk_cos_mean(qr, kr, self.allowed)}, J


def check_qk_model(cli, name):
    folder = os.path.join("tests", "data", "models", "arch", name)
    with open(os.path.join("tests", "data", "archref", name, "ids.json")) as f:
        ids = json.load(f)["ids"][:10]
    args = ["analyze", folder, "--tokens", ",".join(map(str, ids)), "--precision", "f64",
            "--format", "json"]
    recs = run_cli(cli, args + ["--metrics", "stability"])
    model = HF.Model(folder)
    _, hidden = model.forward(ids)
    dec = HF._DECODER_CLASSES[model.cfg["model_type"]](model.cfg, model.W)
    by = {(r["layer"], r["head"]): r for r in recs}
    count = 0
    for l in range(dec.L):
        X = dec.pre_norm(hidden[l], "layers.%d.input_layernorm" % l)
        for h in range(dec.H):
            where = "%s layer %d head %d" % (name, l, h)
            # the complex-step J is exact to rounding: no finite differences
            count += check_head(where, QKHead(dec, l, h, X, len(ids)), by.get((l, h)), False)
    check_seed(cli, args, recs, name)
    print("  %-10s %d heads, n = %d (QK-norm, complex-step Jacobian)" % (name, count, len(ids)))


def check_model(cli, folder, name):
    tok = subprocess.run([cli, "tokenize", folder, "--text", TEXT, "--format", "json"],
                         stdout=subprocess.PIPE, universal_newlines=True, check=True)
    ids = json.loads(tok.stdout)["ids"]
    args = ["analyze", folder, "--text", TEXT, "--precision", "f64", "--format", "json"]
    recs = run_cli(cli, args + ["--metrics", "stability"])
    model = HF.Model(folder)
    inputs = model_inputs(model, folder, ids)
    by = {(r["layer"], r["head"]): r for r in recs}
    count = 0
    for l, (X, heads) in enumerate(inputs):
        for h, (wq, wk, bq, bk, scale, causal, theta) in enumerate(heads):
            where = "%s layer %d head %d" % (name, l, h)
            head = Head(X, wq, wk, bq, bk, scale, causal, theta)
            count += check_head(where, head, by.get((l, h)), l == 0 and h == 0)
    check_seed(cli, args, recs, name)
    print("  %-10s %d heads, n = %d" % (name, count, len(ids)))


def check_band(cli, name):
    """ModernBERT (tests/data/models/arch/<name>): every head's X from
    hf_forward's ModernBert trace, W_Q, W_K the Q and K column blocks of
    Wqkv, the layer's RoPE base, and on the local layers the bidirectional
    band |i - j| <= local_attention // 2 (Head's window = that + 1)."""
    folder = os.path.join("tests", "data", "models", "arch", name)
    with open(os.path.join("tests", "data", "archref", name, "ids.json")) as f:
        ids = json.load(f)["ids"]
    recs = run_cli(cli, ["analyze", folder, "--tokens", ",".join(map(str, ids)), "--precision", "f64",
                         "--format", "json", "--metrics", "stability"])
    by = {(r["layer"], r["head"]): r for r in recs}
    model = HF.Model(folder)
    dec = HF.ModernBert(model.cfg, model.W)
    _, _, layers = HF.trace(dec, ids)
    d, dh, count = dec.d, dec.dh, 0
    for l, t in enumerate(layers):
        W = model.W("layers.%d.attn.Wqkv.weight" % l).T  # [d, 3d]: Q | K | V columns
        b = model.W("layers.%d.attn.Wqkv.bias" % l) if dec.attn_bias else np.zeros(3 * d)
        half = dec.window(l)
        for h in range(dec.H):
            where = "%s layer %d head %d" % (name, l, h)
            q, k = slice(h * dh, (h + 1) * dh), slice(d + h * dh, d + (h + 1) * dh)
            head = Head(t["x"], W[:, q], W[:, k], b[q], b[k], dh ** -0.5, False,
                        dec.thetas[1 if half else 0], window=half + 1 if half else 0)
            count += check_head(where, head, by.get((l, h)), l == 1 and h == 0)
    print("  %-10s %d heads, n = %d (bidirectional bands)" % (name, count, len(ids)))


def check_use_lite(cli):
    st = HF.read_safetensors(os.path.join(ROOT, "tests/data/use-lite/qkv.safetensors"))
    fixdir = os.path.join(ROOT, "tests/data/fixtures/use-lite")
    count = 0
    for k in range(2):
        for l in range(2):
            xpath = os.path.join(fixdir, "x_%d_layer%d.npy" % (k, l))
            X = np.load(xpath)
            Wf = st[USE_K % l].reshape(st[USE_K % l].shape[-2:])
            bf = st[USE_B % l]
            da = Wf.shape[1] // 3
            dh = da // 4
            args = ["layer", "--x", xpath, "--weights", os.path.join(ROOT, "tests/data/use-lite/qkv.safetensors"),
                    "--qkv", USE_K % l, "--qkv-bias", USE_B % l, "--heads", "4",
                    "--scale", repr(USE_SCALE[l]), "--precision", "f64", "--format", "json"]
            recs = run_cli(cli, args + ["--metrics", "stability"])
            for h in range(4):
                where = "use-lite sentence %d layer %d head %d" % (k, l, h)
                head = Head(X, Wf[:, h * dh:(h + 1) * dh], Wf[:, da + h * dh:da + (h + 1) * dh],
                            bf[h * dh:(h + 1) * dh], bf[da + h * dh:da + (h + 1) * dh],
                            USE_SCALE[l], False)
                count += check_head(where, head, recs[h], k == 0 and h == 0)
            check_seed(cli, args, recs, "use-lite sentence %d layer %d" % (k, l))
    print("  %-10s %d heads (layer command, 2 sentences x 2 layers)" % ("use-lite", count))


KERNEL_CASES = [
    # (layer options, Head keywords); softcap 3 is well inside USE-lite's
    # scores (|S| up to 15), so the cap bends them
    (["--window", "4"], dict(causal=True, window=4)),
    (["--softcap", "3"], dict(softcap=3.0)),
    (["--rotary-dim", "32", "--rope-theta", "100"], dict(theta=100.0, rotary_dim=32)),
    (["--rotary-dim", "64", "--rope-theta", "50", "--softcap", "3", "--window", "5"],
     dict(causal=True, window=5, theta=50.0, rotary_dim=64, softcap=3.0)),
]


def check_use_lite_kernel(cli):
    """`layer` with the kernel's options on USE-lite sentence 0, layer 0."""
    st_path = os.path.join(ROOT, "tests/data/use-lite/qkv.safetensors")
    st = HF.read_safetensors(st_path)
    xpath = os.path.join(ROOT, "tests/data/fixtures/use-lite/x_0_layer0.npy")
    X = np.load(xpath)
    Wf, bf = st[USE_K % 0].reshape(st[USE_K % 0].shape[-2:]), st[USE_B % 0]
    da = Wf.shape[1] // 3
    dh = da // 4
    count = 0
    with tempfile.TemporaryDirectory() as tmp:
        for opts, kw in KERNEL_CASES:
            save = os.path.join(tmp, "a.npy")
            args = ["layer", "--x", xpath, "--weights", st_path, "--qkv", USE_K % 0,
                    "--qkv-bias", USE_B % 0, "--heads", "4", "--scale", repr(USE_SCALE[0]),
                    "--precision", "f64", "--format", "json"] + opts
            recs = run_cli(cli, args + ["--metrics", "stability", "--save-attention", save])
            A = np.load(save)
            kw = dict(kw)
            causal = kw.pop("causal", False)
            for h in range(4):
                where = "use-lite %s head %d" % (" ".join(opts), h)
                head = Head(X, Wf[:, h * dh:(h + 1) * dh], Wf[:, da + h * dh:da + (h + 1) * dh],
                            bf[h * dh:(h + 1) * dh], bf[da + h * dh:da + (h + 1) * dh],
                            USE_SCALE[0], causal, **kw)
                aerr = np.max(np.abs(A[h] - head.attention(X)))
                note("layer --save-attention vs reference A (kernel options)", aerr)
                if aerr > 1e-12 or np.any(A[h][~head.allowed] != 0):
                    failures.append("%s: attention differs from the reference by %.2e" % (where, aerr))
                count += check_head(where, head, recs[h], h == 0)
            check_seed(cli, args, recs, "use-lite " + " ".join(opts))
    print("  %-10s %d heads (layer command with --window, --softcap, --rotary-dim)" % ("use-lite", count))


def main(argv):
    if len(argv) != 2:
        print(__doc__.split("\n\n")[1])
        return 2
    cli = os.path.abspath(argv[1])
    os.chdir(ROOT)
    print("check_stability: family E against an explicit numpy Jacobian")
    check_model(cli, "models/tiny-gpt2", "tiny-gpt2")
    check_model(cli, "tests/data/models/tiny-bert", "tiny-bert")
    env = os.environ.get("AG_TEST_MODELS")
    llama = os.path.join(env, "tiny-llama") if env else None
    if llama and os.path.isdir(llama):
        check_model(cli, llama, "tiny-llama")
    else:
        print("  tiny-llama skipped: set AG_TEST_MODELS to a folder holding tiny-llama/ "
              "(rotary, grouped-query) to check it")
    check_alibi(cli, "bloom")
    check_alibi(cli, "mpt")
    check_use_lite(cli)
    check_use_lite_kernel(cli)
    for name in QK_FOLDERS:
        check_qk_model(cli, name)
    for name in ("modernbert", "modernbert-v5-bias"):
        check_band(cli, name)
    for key in sorted(worst):
        print("  max %-52s %.2e" % (key, worst[key]))
    if failures:
        for f in failures[:40]:
            print("FAIL " + f)
        print("check_stability: %d failure(s)" % len(failures))
        return 1
    print("check_stability: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
