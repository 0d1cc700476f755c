"""Independent numpy/scipy reference for docs/metrics.md, families A, B, C
(and F through check_curvature, M: cross-attention).

Written from the definitions of docs/metrics.md alone (not from the C sources).  Every function
returns a dict key -> value, where value is None (JSON null), a bool, an int
or a float.  Dense general-purpose routines are used throughout:
numpy.linalg.svd for singular values, scipy.linalg.eigvals for the eigenvalues
of A (the C code uses the diagonal for causal matrices, docs/metrics.md, family B; we
use eigvals unless told otherwise, see `eigen_values`), scipy.linalg.eigvalsh
for the normalised Laplacian.

Run this file directly for a self-test against closed forms.
"""
import math

import numpy as np
import scipy.linalg
from scipy import stats

EPS = 2.0 ** -52

SPECTRUM_KEYS = ["sigma_max", "sigma_gap", "effective_rank", "stable_rank",
                 "participation_ratio", "numerical_rank"]
ATTENTION_KEYS = ["causal", "row_sum_error", "entropy_mean",
                  "entropy_normalized", "sink_mass", "lambda2_abs",
                  "spectral_gap", "fiedler", "asymmetry", "symmetry_score",
                  "attention_distance", "self_mass", "prev_token_mass",
                  "max_mass", "sink_ratio"]
GEOMETRY_KEYS = ["mean_cosine", "pc1_share", "res_ratio"]
# lambda2_condition belongs to family B but is defined after family E in docs/metrics.md
# section 3, and takes that place in the CSV column order (after family C;
# the D and E keys are not printed by `matrix`); then family F.
CONDITION_KEYS = ["lambda2_condition"]
CURVATURE_KEYS = ["edges", "forman_mean", "forman_min", "ollivier_mean",
                  "ollivier_min"]
# Family B's head detectors, added after family F (the ABI rule of core.h);
# the token-pattern keys (duplicate_token_*, induction_*) need token ids:
# `matrix` does not compute them (only analyze does).
DETECTOR_KEYS = ["prev_token_ratio", "self_ratio"]
# Family M (cross-attention), added after K: on request (and by default for
# rectangular matrices)
CROSS_KEYS = ["alignment_monotonicity", "alignment_kendall", "source_coverage",
              "cross_entropy_normalized"]
DEFAULT_KEYS = SPECTRUM_KEYS + ATTENTION_KEYS + GEOMETRY_KEYS + CONDITION_KEYS + DETECTOR_KEYS
ALL_KEYS = (SPECTRUM_KEYS + ATTENTION_KEYS + GEOMETRY_KEYS + CONDITION_KEYS + CURVATURE_KEYS
            + DETECTOR_KEYS + CROSS_KEYS)
FAMILIES = {"spectrum": SPECTRUM_KEYS,
            "attention": ATTENTION_KEYS + CONDITION_KEYS + DETECTOR_KEYS,
            "geometry": GEOMETRY_KEYS, "curvature": CURVATURE_KEYS, "cross": CROSS_KEYS}
# Above this size the dense eig with eigenvectors of a causal matrix is
# replaced by triangular substitution (same definition, O(n^2) per vector).
CONDITION_EIG_MAX_N = 600
# Relative distance under which two eigenvalues count as tied for
# lambda2_condition (see lambda2_condition_info).
TIE_RTOL = 1e-9

# For a causal (lower triangular) A the eigenvalues are exactly its diagonal
# (docs/metrics.md, family B), so the expected lambda2_abs / spectral_gap of a causal matrix are
# taken from the diagonal: that is the exact value, whereas a dense
# eigensolver on a triangular matrix with nearly repeated diagonal entries can
# be off by far more than 1e-6.  To verify the shortcut independently,
# `causal_eigen_crosscheck` compares it with scipy.linalg.eigvals; the checker
# runs it on every causal matrix up to CROSSCHECK_MAX_N and `self_test` does
# too.
CROSSCHECK_MAX_N = 512


def singular_values(M):
    return np.linalg.svd(np.asarray(M, dtype=np.float64), compute_uv=False)


def spectrum(M, sigma=None):
    """Family A."""
    M = np.asarray(M, dtype=np.float64)
    m, n = M.shape
    s = singular_values(M) if sigma is None else np.asarray(sigma)
    s = np.sort(s)[::-1]
    q = min(m, n)
    s1 = float(s[0])
    out = {"sigma_max": s1}
    thr = s1 * max(m, n) * EPS
    out["numerical_rank"] = int(np.count_nonzero(s > thr))
    if s1 == 0.0:
        out.update(sigma_gap=None, effective_rank=None, stable_rank=None,
                   participation_ratio=None)
        return out
    out["sigma_gap"] = None if q < 2 else float(1.0 - s[1] / s1)
    p = s / s.sum()
    p = p[p > 0]
    out["effective_rank"] = float(math.exp(-float(np.sum(p * np.log(p)))))
    # in units of sigma_1 (mathematically identical; no overflow of sigma^4
    # for entries near 1e80, no underflow near 1e-80)
    t2 = (s / s1) ** 2
    out["stable_rank"] = float(t2.sum())
    out["participation_ratio"] = float(t2.sum() ** 2 / np.sum(t2 * t2))
    return out


def numerical_rank_margin(M, sigma=None):
    """min over k of |log2(sigma_k / threshold)|: how far the singular values
    are from the numerical_rank threshold (in binary orders of magnitude).
    A small margin means numerical_rank depends on rounding of the SVD."""
    M = np.asarray(M, dtype=np.float64)
    m, n = M.shape
    s = singular_values(M) if sigma is None else np.asarray(sigma)
    s1 = float(np.max(s))
    thr = s1 * max(m, n) * EPS
    if thr == 0.0:
        return math.inf
    pos = s[s > 0]
    if pos.size == 0:
        return math.inf
    return float(np.min(np.abs(np.log2(pos / thr))))


def numerical_rank_band(M, sigma=None):
    """(lo, hi): numerical_rank counting only the singular values above
    2*threshold, and those above threshold/2.  lo == hi when no singular value
    lies within a factor 2 of the threshold; otherwise the count is decided by
    rounding in the SVD (two LAPACK SVDs of the same matrix, e.g. of M and of
    its transpose, differ by up to ~16 eps*sigma_1, which is a sizable part
    of the threshold max(m,n)*eps*sigma_1), and any value in [lo, hi] is a
    correct result of the definition evaluated in binary64."""
    M = np.asarray(M, dtype=np.float64)
    m, n = M.shape
    s = singular_values(M) if sigma is None else np.asarray(sigma)
    s1 = float(np.max(s))
    thr = s1 * max(m, n) * EPS
    return int(np.count_nonzero(s > 2 * thr)), int(np.count_nonzero(s > thr / 2))


def is_causal(A):
    n = A.shape[0]
    return n >= 2 and not np.any(np.triu(A, k=1) != 0.0)


def eigen_values(A, causal, use_diagonal=None, lam=None):
    """Eigenvalues of A, sorted by modulus, largest first.  lam: A's
    eigenvalues already computed (by the caller's scipy.linalg.eig), used
    instead of eigvals when the diagonal is not."""
    if use_diagonal is None:
        use_diagonal = causal
    if use_diagonal:
        if not causal:
            raise ValueError("diagonal eigenvalues only for causal matrices")
        lam = np.diag(A).astype(np.complex128)
    elif lam is None:
        lam = scipy.linalg.eigvals(A, check_finite=True)
    order = np.argsort(-np.abs(lam), kind="stable")
    return lam[order]


def causal_eigen_crosscheck(A):
    """For a causal A: max relative difference of (|lambda1|, |lambda2|)
    between the diagonal and scipy.linalg.eigvals (None if not causal)."""
    A = np.asarray(A, dtype=np.float64)
    if A.shape[0] != A.shape[1] or not is_causal(A):
        return None
    d = np.abs(eigen_values(A, True, True))[:2]
    e = np.abs(eigen_values(A, True, False))[:2]
    return float(np.max(np.abs(d - e) / np.maximum(np.abs(d), 1e-300)))


def fiedler(A):
    W = (A + A.T) / 2.0
    d = W.sum(axis=1)
    dinv = np.zeros_like(d)
    pos = d > 0
    dinv[pos] = 1.0 / np.sqrt(d[pos])
    n = A.shape[0]
    L = np.eye(n) - dinv[:, None] * W * dinv[None, :]
    L = (L + L.T) / 2.0  # exactly symmetric already; guard rounding anyway
    ev = scipy.linalg.eigvalsh(L)
    return float(np.sort(ev)[1])


def row_entropies(A):
    """H_i = -sum_{A_ij > 0} A_ij ln A_ij, each with math.fsum and math.log."""
    return [-math.fsum(a * math.log(a) for a in row if a > 0) for row in A]


def cross(A):
    """Family M of the m x n A (docs/metrics.md): a_i = numpy.argmax (the
    first maximum), scipy.stats.spearmanr / kendalltau (tau-b) of (i, a_i),
    null for m < 2 or a constant a; source_coverage from c = A.sum(axis=0),
    T = c.sum() with the rounding allowance (m + n) 2^-52; the mean of
    H_i / ln n."""
    A = np.asarray(A, dtype=np.float64)
    m, n = A.shape
    a = np.argmax(A, axis=1)
    out = {"alignment_monotonicity": None, "alignment_kendall": None}
    if m >= 2 and np.any(a != a[0]):
        x = np.arange(m)
        out["alignment_monotonicity"] = float(stats.spearmanr(x, a)[0])
        out["alignment_kendall"] = float(stats.kendalltau(x, a)[0])
    negative = bool(np.any(A < 0))
    c = A.sum(axis=0)
    T = c.sum()
    out["source_coverage"] = (None if negative or T == 0 else
                              float(np.sum(c >= T / n * (1 - (m + n) * EPS))) / n)
    out["cross_entropy_normalized"] = (None if negative or n == 1 else
                                       math.fsum(row_entropies(A)) / m / math.log(n))
    return out


def rectangular_attention(A):
    """Family B of an m x n A, m != n (docs/metrics.md, family B): the keys
    of one row's distribution as written, means over the m rows, with
    s_i = k_i = n (a rectangular matrix is never causal); every key of a
    square matrix only null."""
    m, n = A.shape
    out = {k: None for k in ATTENTION_KEYS + DETECTOR_KEYS}
    out["row_sum_error"] = float(np.max(np.abs(A.sum(axis=1) - 1.0)))
    if not np.any(A < 0):
        H = np.array(row_entropies(A))
        out["entropy_mean"] = float(H.mean())
        out["entropy_normalized"] = float(np.mean(H / np.log(n))) if n >= 2 else None
        out["sink_mass"] = float(A[:, 0].mean())
    out["max_mass"] = float(np.mean(A.max(axis=1)))
    out["sink_ratio"] = float(np.mean(A[:, 0] * n)) if n >= 2 else None
    return out


def attention(A, use_diagonal=None, lam=None):
    """Family B.  lam: as for eigen_values."""
    A = np.asarray(A, dtype=np.float64)
    m, n = A.shape
    if m != n:
        return rectangular_attention(A)
    out = {}
    causal = is_causal(A)
    out["causal"] = bool(causal)
    out["row_sum_error"] = float(np.max(np.abs(A.sum(axis=1) - 1.0)))
    nonneg = not np.any(A < 0)
    if nonneg:
        H = np.zeros(n)
        for i in range(n):
            r = A[i]
            r = r[r > 0]
            H[i] = -float(np.sum(r * np.log(r)))
        out["entropy_mean"] = float(H.mean())
        s = np.arange(1, n + 1) if causal else np.full(n, n)
        rows = s >= 2
        if np.any(rows):
            out["entropy_normalized"] = float(np.mean(H[rows] / np.log(s[rows])))
        else:
            out["entropy_normalized"] = None
        out["sink_mass"] = float(A[:, 0].mean())
    else:
        out["entropy_mean"] = None
        out["entropy_normalized"] = None
        out["sink_mass"] = None
    if n >= 2:
        lam = eigen_values(A, causal, use_diagonal, lam)
        a1, a2 = float(abs(lam[0])), float(abs(lam[1]))
        out["lambda2_abs"] = a2
        out["spectral_gap"] = a1 - a2
        out["fiedler"] = fiedler(A) if nonneg else None
    else:
        out["lambda2_abs"] = None
        out["spectral_gap"] = None
        out["fiedler"] = None
    if not np.any(A != 0.0):
        out["asymmetry"] = None
        out["symmetry_score"] = None
    else:
        c = float(np.max(np.abs(A)))   # scale: no overflow/underflow of squares
        As = A / c
        N = (As - As.T) / 2.0
        S = (As + As.T) / 2.0
        fa = float(np.sqrt(np.sum(As * As)))
        out["asymmetry"] = float(np.sqrt(np.sum(N * N)) / fa)
        out["symmetry_score"] = float(np.sum(S * S) / np.sum(As * As))
    out.update(head_roles(A, causal))
    return out


def head_roles(A, causal):
    """The head-role keys of family B, from their definitions: weighted
    |i - j| (Vig & Belinkov 2019), diagonal, subdiagonal, row maxima
    (Voita et al. 2019's confidence), and A[i,0] * k_i over the rows with
    k_i >= 2 allowed keys (k_i = i + 1 if causal, else n)."""
    n = A.shape[0]
    i, j = np.indices((n, n))
    out = {"attention_distance": float(np.sum(A * np.abs(i - j)) / n),
           "self_mass": float(np.trace(A) / n),
           "prev_token_mass": float(np.mean(np.diag(A, k=-1))) if n >= 2 else None,
           "max_mass": float(np.mean(A.max(axis=1)))}
    k = np.arange(1, n + 1) if causal else np.full(n, n)
    rows = k >= 2
    out["sink_ratio"] = float(np.mean(A[rows, 0] * k[rows])) if np.any(rows) else None
    # the head detectors: A_ii k_i over the same rows, A_{i,i-1} k_i over
    # those with i >= 1
    out["self_ratio"] = float(np.mean(np.diag(A)[rows] * k[rows])) if np.any(rows) else None
    prev = rows & (np.arange(n) >= 1)
    out["prev_token_ratio"] = (float(np.mean(A[np.arange(1, n), np.arange(n - 1)] * k[1:]))
                               if np.any(prev) else None)
    return out


def geometry(X):
    """Family C."""
    X = np.asarray(X, dtype=np.float64)
    out = {}
    rowmax = np.max(np.abs(X), axis=1)
    nz = rowmax > 0
    k = int(np.count_nonzero(nz))
    if k < 2:
        out["mean_cosine"] = None
    else:
        Y = X[nz] / rowmax[nz][:, None]    # scale first: no overflow/underflow
        Y = Y / np.sqrt(np.sum(Y * Y, axis=1))[:, None]
        G = Y @ Y.T
        off = G.sum() - np.trace(G)
        out["mean_cosine"] = float(off / (k * (k - 1)))
    xbar = X.mean(axis=0)
    Xc = X - xbar[None, :]
    if not np.any(Xc != 0.0):
        out["pc1_share"] = None
    else:
        sc = singular_values(Xc)
        sc2 = (sc / sc[0]) ** 2
        out["pc1_share"] = float(1.0 / sc2.sum())
    if not np.any(X != 0.0):
        out["res_ratio"] = None
    else:
        c = float(np.max(np.abs(X)))
        out["res_ratio"] = float(np.sqrt(np.sum((Xc / c) ** 2) / np.sum((X / c) ** 2)))
    return out


def _eig_order(lam):
    """Indices sorting eigenvalues as the C code does: modulus descending,
    then real part descending, then imaginary part descending."""
    return sorted(range(len(lam)), key=lambda k: (-abs(lam[k]), -lam[k].real,
                                                  -lam[k].imag))


def _triangular_condition(L, k):
    """1/|y^H x| for the eigenvalue L[k,k] of the lower triangular L, unit
    right/left eigenvectors by forward/back substitution (None if another
    diagonal entry equals it: then the substitution divides by 0)."""
    n = L.shape[0]
    lam = L[k, k]
    d = np.diag(L)
    if np.any(np.delete(d, k) == lam):
        return None
    x = np.zeros(n)
    x[k] = 1.0
    for j in range(k + 1, n):   # row j of (L - lam I) x = 0
        x[j] = np.dot(L[j, k:j], x[k:j]) / (lam - L[j, j])
    y = np.zeros(n)
    y[k] = 1.0
    for j in range(k - 1, -1, -1):   # column j of y^T (L - lam I) = 0
        y[j] = np.dot(L[j + 1:k + 1, j], y[j + 1:k + 1]) / (lam - L[j, j])
    x /= np.linalg.norm(x)
    y /= np.linalg.norm(y)
    s = abs(float(np.dot(y, x)))
    return None if s == 0 else 1.0 / s


def lambda2_condition_info(A, eig=None):
    """(value, accepted, kind) for lambda2_condition.

    value: the reference 1/|y2^H x2| (unit left/right eigenvectors from
    scipy.linalg.eig(A, left=True, right=True); lambda_2 the second
    eigenvalue in the C code's order, see _eig_order), None when n < 2 or A
    is not square (or y2^H x2 = 0).  For a causal A with n above
    CONDITION_EIG_MAX_N, triangular substitution instead of eig.
    accepted: the list of values any of which is a correct result, or None
    for "any value >= 1" (kind "repeated").
    kind: "" (clear-cut), "modulus-tie" (|lambda_2| within TIE_RTOL of
    another eigenvalue's modulus that is not its conjugate: which one is
    "second" is decided by rounding; each candidate's condition is
    accepted), "repeated" (lambda_2 is a multiple eigenvalue up to TIE_RTOL
    relative plus 1e-10 |lambda_1| absolute:
    the condition of one eigenvalue of a cluster depends on the basis the
    solver picks, so only >= 1 is checked).
    eig: (lam, vl, vr) of scipy.linalg.eig(A, left=True, right=True), when
    the caller has it already."""
    A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2 or A.shape[0] != A.shape[1] or A.shape[0] < 2:
        return None, [None], ""
    n = A.shape[0]
    causal = is_causal(A)
    if causal and n > CONDITION_EIG_MAX_N:
        lam = np.diag(A).astype(np.complex128)
        conds = None
    else:
        lam, vl, vr = eig if eig is not None else \
            scipy.linalg.eig(A, left=True, right=True)
        vl = vl / np.linalg.norm(vl, axis=0)
        vr = vr / np.linalg.norm(vr, axis=0)
        s = np.abs(np.sum(np.conj(vl) * vr, axis=0))
        with np.errstate(over="ignore", divide="ignore"):
            conds = [None if not np.isfinite(1.0 / x) else float(1.0 / x) for x in s]
    order = _eig_order(lam)
    k2 = order[1]
    l2 = lam[k2]
    # eigenvalues of size ~1e-16 |lambda_1| are rounding noise (e.g. the
    # n-1 zero eigenvalues of a rank-1 matrix): absolute term 1e-10 |lambda_1|
    tol = TIE_RTOL * abs(l2) + 1e-10 * abs(lam[order[0]])

    def cond(k):
        if conds is not None:
            return conds[k]
        return _triangular_condition(A, k)

    repeated = [k for k in range(n) if k != k2 and abs(lam[k] - l2) <= tol]
    if repeated:
        return cond(k2) if conds is not None else None, None, "repeated"
    ties = [k for k in range(n) if k != k2
            and abs(abs(lam[k]) - abs(l2)) <= tol
            and abs(lam[k] - np.conj(l2)) > tol]
    if ties:
        return cond(k2), [cond(k) for k in [k2] + ties], "modulus-tie"
    v = cond(k2)
    return v, [v], ""


def lambda2_condition(A):
    return lambda2_condition_info(A)[0]


def curvature(A, tau=None):
    """Family F (check_curvature.curvature: numpy graph, BFS hops, ot.emd2)."""
    import check_curvature
    return check_curvature.curvature(A, tau)


def metrics(M, use_diagonal=None, with_condition=True, with_curvature=True):
    """All keys of families A, B, C (and lambda2_condition, family F) for the
    matrix M (2-D, finite)."""
    M = np.asarray(M, dtype=np.float64)
    if M.ndim != 2 or M.size == 0:
        raise ValueError("need a non-empty 2-D matrix")
    if not np.all(np.isfinite(M)):
        raise ValueError("non-finite entries")
    out = {}
    out.update(spectrum(M))
    out.update(attention(M, use_diagonal))
    out.update(geometry(M))
    out.update(cross(M))
    if with_condition:
        out["lambda2_condition"] = lambda2_condition(M)
    if with_curvature:
        out.update(curvature(M))
    return out


# ---------------------------------------------------------------- self-test

def _close(a, b, rtol=1e-12, atol=1e-12):
    return abs(a - b) <= rtol * abs(b) + atol


def stochastic_example(rng, n=12):
    E = np.exp(rng.normal(size=(n, n)) * 2)
    return E / E.sum(axis=1, keepdims=True)


def self_test():
    rng = np.random.default_rng(7)
    fails = []

    def check(name, got, exp, rtol=1e-12, atol=1e-12):
        if exp is None or isinstance(exp, bool):
            ok = got is exp
        else:
            ok = got is not None and not isinstance(got, bool) and _close(got, exp, rtol, atol)
        if not ok:
            fails.append("%s: got %r expected %r" % (name, got, exp))

    # uniform n x n: rank 1, effective rank 1, row-stochastic, symmetric
    for n in (2, 5, 8):
        U = np.full((n, n), 1.0 / n)
        r = metrics(U)
        check("uniform%d sigma_max" % n, r["sigma_max"], 1.0)
        check("uniform%d effective_rank" % n, r["effective_rank"], 1.0, atol=1e-9)
        check("uniform%d stable_rank" % n, r["stable_rank"], 1.0)
        check("uniform%d numerical_rank" % n, r["numerical_rank"], 1, 0, 0)
        check("uniform%d sigma_gap" % n, r["sigma_gap"], 1.0)
        check("uniform%d causal" % n, r["causal"], False)
        check("uniform%d entropy_mean" % n, r["entropy_mean"], math.log(n))
        check("uniform%d entropy_normalized" % n, r["entropy_normalized"], 1.0)
        check("uniform%d sink_mass" % n, r["sink_mass"], 1.0 / n)
        check("uniform%d lambda2" % n, r["lambda2_abs"], 0.0, atol=1e-12)
        check("uniform%d spectral_gap" % n, r["spectral_gap"], 1.0)
        # W = U, D = I, L = I - U: eigenvalues 0, 1 (n-1 times)
        check("uniform%d fiedler" % n, r["fiedler"], 1.0)
        check("uniform%d asymmetry" % n, r["asymmetry"], 0.0)
        check("uniform%d symmetry_score" % n, r["symmetry_score"], 1.0)
        check("uniform%d mean_cosine" % n, r["mean_cosine"], 1.0)
        check("uniform%d pc1_share" % n, r["pc1_share"], None)   # n power of 2 or exact
        check("uniform%d res_ratio" % n, r["res_ratio"], 0.0, atol=1e-15)
    # identity: effective rank n, causal (lower triangular), entropy 0
    for n in (1, 2, 6):
        r = metrics(np.eye(n))
        check("eye%d effective_rank" % n, r["effective_rank"], float(n))
        check("eye%d participation_ratio" % n, r["participation_ratio"], float(n))
        check("eye%d stable_rank" % n, r["stable_rank"], float(n))
        check("eye%d numerical_rank" % n, r["numerical_rank"], n)
        check("eye%d causal" % n, r["causal"], n >= 2)
        check("eye%d entropy_mean" % n, r["entropy_mean"], 0.0)
        check("eye%d sink_mass" % n, r["sink_mass"], 1.0 / n)
        check("eye%d symmetry_score" % n, r["symmetry_score"], 1.0)
        check("eye%d asymmetry" % n, r["asymmetry"], 0.0)
        check("eye%d mean_cosine" % n, r["mean_cosine"], None if n < 2 else 0.0)
        if n == 1:
            for key in ("sigma_gap", "lambda2_abs", "spectral_gap", "fiedler",
                        "entropy_normalized", "pc1_share"):
                check("eye1 %s" % key, r[key], None)
            check("eye1 res_ratio", r["res_ratio"], 0.0)
        else:
            check("eye%d entropy_normalized" % n, r["entropy_normalized"], 0.0)
            check("eye%d lambda2" % n, r["lambda2_abs"], 1.0)
            check("eye%d spectral_gap" % n, r["spectral_gap"], 0.0)
            # W = I, D = I, L = 0
            check("eye%d fiedler" % n, r["fiedler"], 0.0)
            check("eye%d sigma_gap" % n, r["sigma_gap"], 0.0)
            # centred I: n-1 equal singular values
            check("eye%d pc1_share" % n, r["pc1_share"], 1.0 / (n - 1))
            check("eye%d res_ratio" % n, r["res_ratio"], math.sqrt((n - 1) / n))
    # head roles: the identity reads itself; the causal shift reads the
    # previous token; uniform attention, causal or not, has sink_ratio 1
    for n in (1, 2, 6):
        r = metrics(np.eye(n))
        check("eye%d self_mass" % n, r["self_mass"], 1.0)
        check("eye%d attention_distance" % n, r["attention_distance"], 0.0)
        check("eye%d max_mass" % n, r["max_mass"], 1.0)
        check("eye%d prev_token_mass" % n, r["prev_token_mass"], None if n < 2 else 0.0)
        check("eye%d sink_ratio" % n, r["sink_ratio"], None if n < 2 else 0.0)
    for n in (2, 5, 33):
        P = np.zeros((n, n))
        P[0, 0] = 1
        P[np.arange(1, n), np.arange(n - 1)] = 1
        r = metrics(P)
        check("shift%d prev_token_mass" % n, r["prev_token_mass"], 1.0)
        check("shift%d attention_distance" % n, r["attention_distance"], (n - 1) / n)
        check("shift%d sink_ratio" % n, r["sink_ratio"], 2 / (n - 1))
        L = np.tril(np.ones((n, n)))
        L /= L.sum(axis=1, keepdims=True)
        check("causal%d sink_ratio" % n, metrics(L)["sink_ratio"], 1.0)
        check("causal%d attention_distance" % n, metrics(L)["attention_distance"],
              (n - 1) / 4)
        U = np.full((n, n), 1.0 / n)
        check("uniform%d sink_ratio" % n, metrics(U)["sink_ratio"], 1.0)
        check("uniform%d attention_distance" % n, metrics(U)["attention_distance"],
              (n * n - 1) / (3 * n))
        # the ratios: 1 for uniform attention, causal or not; the shift
        # gives mean over i >= 1 of (i + 1) = (n + 2)/2
        for name, M in (("causal", L), ("uniform", U)):
            check("%s%d prev_token_ratio" % (name, n), metrics(M)["prev_token_ratio"], 1.0)
            check("%s%d self_ratio" % (name, n), metrics(M)["self_ratio"], 1.0)
        check("shift%d prev_token_ratio" % n, r["prev_token_ratio"], (n + 2) / 2)
        check("shift%d self_ratio" % n, r["self_ratio"], 0.0)
    r = metrics(np.array([[0.5, 0.3, 0.2], [0.1, 0.6, 0.3], [0.6, 0.2, 0.2]]))
    for key, want in (("attention_distance", 5 / 6), ("self_mass", 13 / 30),
                      ("prev_token_mass", 0.15), ("max_mass", 17 / 30),
                      ("sink_ratio", 1.2), ("self_ratio", 1.3),
                      ("prev_token_ratio", 0.45)):
        check("3x3 %s" % key, r[key], want)
    # zero matrix
    for shape in ((1, 1), (3, 3), (2, 5)):
        r = metrics(np.zeros(shape))
        check("zero%s sigma_max" % (shape,), r["sigma_max"], 0.0)
        check("zero%s numerical_rank" % (shape,), r["numerical_rank"], 0)
        for key in ("sigma_gap", "effective_rank", "stable_rank",
                    "participation_ratio", "pc1_share", "res_ratio",
                    "mean_cosine"):
            check("zero%s %s" % (shape, key), r[key], None)
        if shape == (3, 3):
            check("zero causal", r["causal"], True)
            check("zero entropy_mean", r["entropy_mean"], 0.0)
            check("zero entropy_normalized", r["entropy_normalized"], 0.0)
            check("zero row_sum_error", r["row_sum_error"], 1.0)
            check("zero lambda2", r["lambda2_abs"], 0.0)
            check("zero fiedler", r["fiedler"], 1.0)  # L = I
            check("zero asymmetry", r["asymmetry"], None)
        if shape == (2, 5):  # rectangular: the row keys of zero rows, the rest null
            rows = {"row_sum_error": 1.0, "entropy_mean": 0.0, "entropy_normalized": 0.0,
                    "sink_mass": 0.0, "max_mass": 0.0, "sink_ratio": 0.0}
            for key in ATTENTION_KEYS + DETECTOR_KEYS:
                check("zero(2,5) %s" % key, r[key], rows.get(key))
    # permutation (cyclic shift): eigenvalues = n-th roots of unity
    n = 5
    P = np.roll(np.eye(n), 1, axis=1)
    r = metrics(P)
    check("perm lambda2", r["lambda2_abs"], 1.0)
    check("perm spectral_gap", r["spectral_gap"], 0.0)
    check("perm entropy", r["entropy_mean"], 0.0)
    check("perm causal", r["causal"], False)
    check("perm effective_rank", r["effective_rank"], float(n))
    # W = (P + P^T)/2 is the cycle graph / 2, D = I: L = I - W, eigenvalues
    # 1 - cos(2 pi k / n); the second smallest is 1 - cos(2 pi / n)
    check("perm fiedler", r["fiedler"], 1 - math.cos(2 * math.pi / n))
    check("perm asymmetry", r["asymmetry"], math.sqrt(0.5))
    check("perm symmetry_score", r["symmetry_score"], 0.5)
    check("perm mean_cosine", r["mean_cosine"], 0.0)
    # 2x2 closed form [[1-a, a], [b, 1-b]]: eigenvalues 1 and 1-a-b
    a, b = 0.3, 0.1
    A = np.array([[1 - a, a], [b, 1 - b]])
    r = metrics(A)
    check("2x2 lambda2", r["lambda2_abs"], abs(1 - a - b))
    check("2x2 spectral_gap", r["spectral_gap"], 1 - abs(1 - a - b))
    h = lambda p: -sum(x * math.log(x) for x in p if x > 0)
    check("2x2 entropy_mean", r["entropy_mean"], (h([1 - a, a]) + h([b, 1 - b])) / 2)
    check("2x2 entropy_normalized", r["entropy_normalized"],
          (h([1 - a, a]) + h([b, 1 - b])) / 2 / math.log(2))
    check("2x2 sink_mass", r["sink_mass"], (1 - a + b) / 2)
    # asymmetry: N = [[0, (a-b)/2], [-(a-b)/2, 0]]
    fa = math.sqrt((1 - a) ** 2 + a ** 2 + b ** 2 + (1 - b) ** 2)
    check("2x2 asymmetry", r["asymmetry"], math.sqrt(2) * abs(a - b) / 2 / fa)
    # block diagonal of two stochastic blocks: lambda2 = 1, fiedler = 0
    B = np.zeros((6, 6))
    B[:3, :3] = 1.0 / 3
    B[3:, 3:] = 1.0 / 3
    r = metrics(B)
    check("block lambda2", r["lambda2_abs"], 1.0)
    check("block fiedler", r["fiedler"], 0.0, atol=1e-12)
    check("block effective_rank", r["effective_rank"], 2.0)
    # causal: diagonal shortcut equals eigvals; normalised entropy of a
    # uniform causal matrix is 1 and its s_i run 1..n
    for n in (2, 3, 7, 40):
        L = np.tril(np.ones((n, n)))
        L /= L.sum(axis=1, keepdims=True)
        r = metrics(L)
        check("causal%d causal" % n, r["causal"], True)
        check("causal%d entropy_normalized" % n, r["entropy_normalized"], 1.0)
        check("causal%d entropy_mean" % n, r["entropy_mean"],
              sum(math.log(i + 1) for i in range(n)) / n)
        check("causal%d sink_mass" % n, r["sink_mass"],
              sum(1.0 / (i + 1) for i in range(n)) / n)
        # eigenvalues 1, 1/2, ..., 1/n
        check("causal%d lambda2" % n, r["lambda2_abs"], 0.5)
        logits = rng.normal(size=(n, n)) * 3
        logits[np.triu_indices(n, 1)] = -np.inf
        S = np.exp(logits - logits.max(axis=1, keepdims=True))
        S /= S.sum(axis=1, keepdims=True)
        d1 = attention(S, use_diagonal=True)
        d2 = attention(S, use_diagonal=False)
        check("causal%d diag-vs-eigvals lambda2" % n, d1["lambda2_abs"],
              d2["lambda2_abs"], rtol=1e-9)
        check("causal%d diag-vs-eigvals gap" % n, d1["spectral_gap"],
              d2["spectral_gap"], rtol=1e-9)
        check("causal%d crosscheck" % n, causal_eigen_crosscheck(S), 0.0, 0, 1e-9)
    # signed entries: the non-negative-only keys are null
    X = rng.normal(size=(4, 4))
    r = metrics(X)
    for key in ("entropy_mean", "entropy_normalized", "sink_mass", "fiedler"):
        check("signed %s" % key, r[key], None)
    assert r["lambda2_abs"] is not None and r["asymmetry"] is not None
    # rank k: numerical rank k, effective/stable ranks from explicit sigma
    U, _ = np.linalg.qr(rng.normal(size=(30, 30)))
    V, _ = np.linalg.qr(rng.normal(size=(20, 20)))
    sig = np.array([5.0, 3.0, 2.0, 1.0] + [0.0] * 16)
    M = U[:, :20] @ np.diag(sig) @ V.T
    r = metrics(M)
    check("rank4 numerical_rank", r["numerical_rank"], 4)
    s = sig[:4]
    p = s / s.sum()
    check("rank4 effective_rank", r["effective_rank"],
          math.exp(-float(np.sum(p * np.log(p)))), rtol=1e-9)
    check("rank4 stable_rank", r["stable_rank"], float(np.sum(s ** 2) / 25), rtol=1e-9)
    check("rank4 participation_ratio", r["participation_ratio"],
          float(np.sum(s ** 2) ** 2 / np.sum(s ** 4)), rtol=1e-9)
    check("rank4 sigma_gap", r["sigma_gap"], 1 - 3 / 5, rtol=1e-9)
    # rectangular and signed: of family B only the row keys that need no
    # masses (row_sum_error, max_mass, sink_ratio: 20 times the mean M_i0)
    for key in ATTENTION_KEYS + DETECTOR_KEYS:
        if key not in ("row_sum_error", "max_mass", "sink_ratio"):
            check("30x20 %s" % key, r[key], None)
    check("30x20 max_mass", r["max_mass"], math.fsum(max(row) for row in M) / 30, rtol=1e-12)
    check("30x20 sink_ratio", r["sink_ratio"], math.fsum(M[:, 0]) * 20 / 30, rtol=1e-12)
    # mean_cosine with a zero row: zero rows are ignored
    X = np.array([[1.0, 0.0], [0.0, 0.0], [1.0, 1.0], [0.0, 2.0]])
    c = [1 / math.sqrt(2), 0.0, 1 / math.sqrt(2)]
    check("cos zero-row", geometry(X)["mean_cosine"], 2 * sum(c) / 6)
    # scale invariance (no overflow or underflow in the reference)
    base_s = metrics(stochastic_example(np.random.default_rng(7)))
    for c in (1e100, 1e-100, 1e150, 1e-150):
        r = metrics(stochastic_example(np.random.default_rng(7)) * c)
        for key in ("effective_rank", "stable_rank", "participation_ratio",
                    "asymmetry", "symmetry_score", "mean_cosine", "pc1_share",
                    "res_ratio", "sigma_gap", "numerical_rank"):
            check("scale %g %s" % (c, key), r[key], base_s[key], rtol=1e-12)
    # lambda2_condition, 2x2 closed form: lambda_2 = 1-a-b, x ~ (a, -b),
    # y ~ (1, -1): 1/|y^T x| = sqrt(2) sqrt(a^2+b^2) / (a+b)
    a, b = 0.3, 0.1
    check("2x2 lambda2_condition", lambda2_condition(np.array([[1 - a, a], [b, 1 - b]])),
          math.sqrt(2) * math.hypot(a, b) / (a + b), rtol=1e-12)
    check("1x1 lambda2_condition", lambda2_condition(np.eye(1)), None)
    check("2x3 lambda2_condition", lambda2_condition(np.ones((2, 3))), None)
    # triangular substitution agrees with eig on a causal matrix
    n = 40
    logits = rng.normal(size=(n, n)) * 2
    logits[np.triu_indices(n, 1)] = -np.inf
    S = np.exp(logits - logits.max(axis=1, keepdims=True))
    S /= S.sum(axis=1, keepdims=True)
    k2 = _eig_order(np.diag(S).astype(complex))[1]
    check("causal40 condition tri-vs-eig", _triangular_condition(S, k2),
          lambda2_condition(S), rtol=1e-8)
    # curvature of K_n (uniform attention, tau = 1/n): kappa = n/(2(n-1)),
    # F = 6 - 2n (docs/curvature.md)
    try:
        import ot  # noqa: F401
        for n in (2, 3, 6):
            c = curvature(np.full((n, n), 1.0 / n))
            check("K%d edges" % n, c["edges"], n * (n - 1) // 2, 0, 0)
            check("K%d ollivier" % n, c["ollivier_min"], n / (2.0 * (n - 1)))
            check("K%d forman" % n, c["forman_mean"], 6.0 - 2 * n)
    except ImportError:
        pass
    # pc1 of two rows: centred matrix has rank 1
    check("pc1 two rows", geometry(np.array([[1.0, 2.0], [3.0, 5.0]]))["pc1_share"], 1.0)
    return fails


if __name__ == "__main__":
    f = self_test()
    for line in f:
        print("FAIL", line)
    print("reference self-test: %s" % ("FAILED (%d)" % len(f) if f else "ok"))
    raise SystemExit(1 if f else 0)
