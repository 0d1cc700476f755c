/* registry.c — metric keys, families, selections, records and record
 * lists (their layouts: analysis/metrics_int.h). The table
 * below is the single source of the key names and of their order (docs/metrics.md),
 * which is also the CSV/TSV column order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "metrics_int.h"

/* Each key's one-line definition and null case are the cells of its row in
 * docs/metrics.md (that page's tables are the contract; tests/cli/help.sh
 * checks them against this table cell by cell, with `\\|` read as `|`), and
 * its reference the source its definition follows (or the page that
 * derives it, where the definition is attngeom's own). */
static const struct {
    const char *name;
    ag_family family;
    const char *definition, *null_when, *reference;
} metric_table[AG_M_COUNT] = {
    [AG_M_SIGMA_MAX] = {"sigma_max", AG_FAMILY_SPECTRUM,
        "σ₁, the spectral norm",
        "σ₁ > 1.8e308 (beyond the double range, see Range)",
        "Golub & Van Loan 2013, §2.3 (LAPACK dgesdd)"},
    [AG_M_SIGMA_GAP] = {"sigma_gap", AG_FAMILY_SPECTRUM,
        "1 − σ₂/σ₁",
        "q < 2 or σ₁ = 0",
        "Golub & Van Loan 2013, §2.4 (LAPACK dgesdd)"},
    [AG_M_EFFECTIVE_RANK] = {"effective_rank", AG_FAMILY_SPECTRUM,
        "exp(−Σ p_k ln p_k), p_k = σ_k / Σσ (terms with p_k = 0 dropped)",
        "σ₁ = 0",
        "Roy & Vetterli 2007"},
    [AG_M_STABLE_RANK] = {"stable_rank", AG_FAMILY_SPECTRUM,
        "Σσ² / σ₁² = ‖M‖_F² / ‖M‖₂²",
        "σ₁ = 0",
        "Rudelson & Vershynin 2007"},
    [AG_M_PARTICIPATION_RATIO] = {"participation_ratio", AG_FAMILY_SPECTRUM,
        "(Σσ²)² / Σσ⁴",
        "σ₁ = 0",
        "the inverse participation ratio of the σ² spectrum (Gao et al. 2017)"},
    [AG_M_NUMERICAL_RANK] = {"numerical_rank", AG_FAMILY_SPECTRUM,
        "#{k : σ_k > σ₁ · max(m,n) · ε} (an integer)",
        "—",
        "numpy.linalg.matrix_rank default tolerance (Press et al. 2007, §2.6)"},
    [AG_M_CAUSAL] = {"causal", AG_FAMILY_ATTENTION,
        "true iff n ≥ 2 and every entry above the diagonal is exactly 0",
        "not square",
        "docs/metrics.md, family B"},
    [AG_M_ROW_SUM_ERROR] = {"row_sum_error", AG_FAMILY_ATTENTION,
        "max_i |Σ_j A_ij − 1|",
        "a row sum beyond ±1.8e308",
        "Neumaier 1974 (compensated summation)"},
    [AG_M_ENTROPY_MEAN] = {"entropy_mean", AG_FAMILY_ATTENTION,
        "(1/m) Σ_i H_i over the m rows, H_i = −Σ_{j: A_ij>0} A_ij ln A_ij",
        "any entry < 0",
        "Clark et al. 2019, §3; Vig & Belinkov 2019"},
    [AG_M_ENTROPY_NORMALIZED] = {"entropy_normalized", AG_FAMILY_ATTENTION,
        "mean of H_i / ln s_i over the rows with s_i ≥ 2; s_i = i+1 (0-based i) if `causal`, else n",
        "any entry < 0, or no such row",
        "Clark et al. 2019, §3"},
    [AG_M_SINK_MASS] = {"sink_mass", AG_FAMILY_ATTENTION,
        "(1/m) Σ_i A_i0",
        "any entry < 0",
        "Xiao et al. 2023"},
    [AG_M_LAMBDA2_ABS] = {"lambda2_abs", AG_FAMILY_ATTENTION,
        "|λ₂|, eigenvalues sorted by modulus, largest first",
        "not square, or n < 2",
        "Levin, Peres & Wilmer 2009, ch. 12 (mixing of a Markov chain)"},
    [AG_M_SPECTRAL_GAP] = {"spectral_gap", AG_FAMILY_ATTENTION,
        "|λ₁| − |λ₂|",
        "not square, or n < 2",
        "Levin, Peres & Wilmer 2009, ch. 12"},
    [AG_M_FIEDLER] = {"fiedler", AG_FAMILY_ATTENTION,
        "second-smallest eigenvalue of L = I − D^{-1/2} W D^{-1/2}, W = (A + Aᵀ)/2 including its diagonal, D = diag(row sums of W); where a row sum is 0 that entry of D^{-1/2} is 0",
        "not square, n < 2 or any entry < 0",
        "Fiedler 1973; Chung 1997 (normalised Laplacian)"},
    [AG_M_ASYMMETRY] = {"asymmetry", AG_FAMILY_ATTENTION,
        "‖N‖_F / ‖A‖_F, N = (A − Aᵀ)/2",
        "not square, or ‖A‖_F = 0",
        "docs/metrics.md, family B (Frobenius antisymmetric part)"},
    [AG_M_SYMMETRY_SCORE] = {"symmetry_score", AG_FAMILY_ATTENTION,
        "‖S‖_F² / ‖A‖_F², S = (A + Aᵀ)/2",
        "not square, or ‖A‖_F = 0",
        "Saponati et al. 2025"},
    [AG_M_ATTENTION_DISTANCE] = {"attention_distance", AG_FAMILY_ATTENTION,
        "(1/n) Σ_i Σ_j A_ij |i − j|",
        "not square",
        "Vig & Belinkov 2019"},
    [AG_M_SELF_MASS] = {"self_mass", AG_FAMILY_ATTENTION,
        "(1/n) Σ_i A_ii",
        "not square",
        "Clark et al. 2019; Voita et al. 2019"},
    [AG_M_PREV_TOKEN_MASS] = {"prev_token_mass", AG_FAMILY_ATTENTION,
        "(1/(n−1)) Σ_{i≥1} A_{i,i−1}, the mean over rows i ≥ 1",
        "not square, or n < 2",
        "Clark et al. 2019; Voita et al. 2019"},
    [AG_M_MAX_MASS] = {"max_mass", AG_FAMILY_ATTENTION,
        "(1/m) Σ_i max_j A_ij",
        "—",
        "Voita et al. 2019 (\"confidence\")"},
    [AG_M_SINK_RATIO] = {"sink_ratio", AG_FAMILY_ATTENTION,
        "mean of A_i0 · k_i over the rows with k_i ≥ 2, k_i = i+1 (0-based i) if `causal`, else n",
        "no such row (n = 1)",
        "Xiao et al. 2023 (against uniform attention)"},
    [AG_M_MEAN_COSINE] = {"mean_cosine", AG_FAMILY_GEOMETRY,
        "mean of cos(x_i, x_j) over ordered pairs i ≠ j of non-zero rows",
        "fewer than 2 non-zero rows",
        "Ethayarajh 2019, §3.2"},
    [AG_M_PC1_SHARE] = {"pc1_share", AG_FAMILY_GEOMETRY,
        "σ₁² / Σσ² of the centred matrix X − 1x̄ᵀ (x̄ the mean row)",
        "the centred matrix is 0",
        "Ethayarajh 2019"},
    [AG_M_RES_RATIO] = {"res_ratio", AG_FAMILY_GEOMETRY,
        "‖X − 1x̄ᵀ‖_F / ‖X‖_F",
        "‖X‖_F = 0",
        "Dong, Cordonnier & Loukas 2021, §2"},
    [AG_M_QK_SIGMA_MAX] = {"qk_sigma_max", AG_FAMILY_WEIGHTS,
        "family A of M_QK",
        "as in family A",
        "Elhage et al. 2021 (QK circuit); Golub & Van Loan 2013, §2.3 (LAPACK dgesdd)"},
    [AG_M_QK_SIGMA_GAP] = {"qk_sigma_gap", AG_FAMILY_WEIGHTS,
        "family A of M_QK",
        "as in family A",
        "Elhage et al. 2021 (QK circuit); Golub & Van Loan 2013, §2.4 (LAPACK dgesdd)"},
    [AG_M_QK_EFFECTIVE_RANK] = {"qk_effective_rank", AG_FAMILY_WEIGHTS,
        "family A of M_QK",
        "as in family A",
        "Elhage et al. 2021 (QK circuit); Roy & Vetterli 2007"},
    [AG_M_QK_STABLE_RANK] = {"qk_stable_rank", AG_FAMILY_WEIGHTS,
        "family A of M_QK",
        "as in family A",
        "Elhage et al. 2021 (QK circuit); Rudelson & Vershynin 2007"},
    [AG_M_QK_PARTICIPATION_RATIO] = {"qk_participation_ratio", AG_FAMILY_WEIGHTS,
        "family A of M_QK",
        "as in family A",
        "Elhage et al. 2021 (QK circuit); the inverse participation ratio of the σ² spectrum (Gao et al. 2017)"},
    [AG_M_QK_NUMERICAL_RANK] = {"qk_numerical_rank", AG_FAMILY_WEIGHTS,
        "family A of M_QK",
        "as in family A",
        "Elhage et al. 2021 (QK circuit); numpy.linalg.matrix_rank default tolerance (Press et al. 2007, §2.6)"},
    [AG_M_QK_SYMMETRY_SCORE] = {"qk_symmetry_score", AG_FAMILY_WEIGHTS,
        "`symmetry_score` (family B) of M_QK",
        "M_QK = 0",
        "Saponati et al. 2025; Elhage et al. 2021"},
    [AG_M_OV_SIGMA_MAX] = {"ov_sigma_max", AG_FAMILY_WEIGHTS,
        "family A of M_OV",
        "as in family A",
        "Elhage et al. 2021 (OV circuit); Golub & Van Loan 2013, §2.3 (LAPACK dgesdd)"},
    [AG_M_OV_SIGMA_GAP] = {"ov_sigma_gap", AG_FAMILY_WEIGHTS,
        "family A of M_OV",
        "as in family A",
        "Elhage et al. 2021 (OV circuit); Golub & Van Loan 2013, §2.4 (LAPACK dgesdd)"},
    [AG_M_OV_EFFECTIVE_RANK] = {"ov_effective_rank", AG_FAMILY_WEIGHTS,
        "family A of M_OV",
        "as in family A",
        "Elhage et al. 2021 (OV circuit); Roy & Vetterli 2007"},
    [AG_M_OV_STABLE_RANK] = {"ov_stable_rank", AG_FAMILY_WEIGHTS,
        "family A of M_OV",
        "as in family A",
        "Elhage et al. 2021 (OV circuit); Rudelson & Vershynin 2007"},
    [AG_M_OV_PARTICIPATION_RATIO] = {"ov_participation_ratio", AG_FAMILY_WEIGHTS,
        "family A of M_OV",
        "as in family A",
        "Elhage et al. 2021 (OV circuit); the inverse participation ratio of the σ² spectrum (Gao et al. 2017)"},
    [AG_M_OV_NUMERICAL_RANK] = {"ov_numerical_rank", AG_FAMILY_WEIGHTS,
        "family A of M_OV",
        "as in family A",
        "Elhage et al. 2021 (OV circuit); numpy.linalg.matrix_rank default tolerance (Press et al. 2007, §2.6)"},
    [AG_M_OV_COPYING_SCORE] = {"ov_copying_score", AG_FAMILY_WEIGHTS,
        "Σ Re λ_i / Σ |λ_i| over the eigenvalues of M_OV (Elhage et al. 2021, on the residual stream)",
        "every λ is 0, or M_OV is not square (an output projection that changes the width)",
        "Elhage et al. 2021"},
    [AG_M_JACOBIAN_NORM] = {"jacobian_norm", AG_FAMILY_STABILITY,
        "‖J‖₂, J = ∂vec(A)/∂vec(X), the spectral norm (relative accuracy 1e-6)",
        "—",
        "docs/stability.md"},
    [AG_M_JACOBIAN_NORM_REL] = {"jacobian_norm_rel", AG_FAMILY_STABILITY,
        "‖J‖₂ · ‖X‖_F / ‖A‖_F",
        "—",
        "docs/stability.md"},
    [AG_M_SENSITIVITY] = {"sensitivity", AG_FAMILY_STABILITY,
        "mean over T trials of (‖A(X+E) − A(X)‖_F / ‖A(X)‖_F) / (‖E‖_F / ‖X‖_F), E Gaussian with ‖E‖_F = ε‖X‖_F; defaults ε = 1e-3 (`--epsilon`), T = 8 (`--trials`), GSL `gsl_rng_mt19937` seeded by `--seed` (default 1): the same seed gives the same value",
        "X = 0 (‖E‖/‖X‖ undefined)",
        "docs/stability.md"},
    [AG_M_Q_MEAN_COSINE] = {"q_mean_cosine", AG_FAMILY_STABILITY,
        "`mean_cosine` (family C) of the rows of Q = XW_Q + b_Q and K = XW_K + b_K",
        "fewer than 2 non-zero rows of Q (family C's rule)",
        "Ethayarajh 2019 (on Q)"},
    [AG_M_K_MEAN_COSINE] = {"k_mean_cosine", AG_FAMILY_STABILITY,
        "`mean_cosine` (family C) of the rows of Q = XW_Q + b_Q and K = XW_K + b_K",
        "fewer than 2 non-zero rows of K (family C's rule)",
        "Ethayarajh 2019 (on K)"},
    [AG_M_QK_COS_MEAN] = {"qk_cos_mean", AG_FAMILY_STABILITY,
        "mean of cos(q_i, k_j) = q̂_iᵀk̂_j over the pairs (i, j) the mask allows",
        "no pair (i, j) with q_i ≠ 0 and k_j ≠ 0 left",
        "docs/stability.md"},
    [AG_M_LAMBDA2_CONDITION] = {"lambda2_condition", AG_FAMILY_ATTENTION,
        "1/|y₂ᴴx₂|, the condition number of λ₂ (unit right and left eigenvectors x₂, y₂; what LAPACK `dgeevx` returns as RCONDE)",
        "not square, n < 2, or λ₂ not a simple eigenvalue: |y₂ᴴx₂| ≤ n·ε, or another eigenvalue within 8·n·ε·|λ₁|/|y₂ᴴx₂| of it, the radius within which rounding moves an eigenvalue of that condition (repeated: no unique eigenvectors; defective: split by rounding ~√ε apart)",
        "Wilkinson 1965; LAPACK dgeevx (RCONDE)"},
    [AG_M_EDGES] = {"edges", AG_FAMILY_CURVATURE,
        "number of edges",
        "no edge",
        "docs/curvature.md"},
    [AG_M_FORMAN_MEAN] = {"forman_mean", AG_FAMILY_CURVATURE,
        "over edges, F(i,j) = 2 − Σ_{k∈N(i)∖{j}} √(W_ij/W_ik) − Σ_{k∈N(j)∖{i}} √(W_ij/W_jk) (weighted Forman–Ricci, Sreejith et al. 2016, unit node weights)",
        "no edge",
        "Sreejith et al. 2016"},
    [AG_M_FORMAN_MIN] = {"forman_min", AG_FAMILY_CURVATURE,
        "over edges, F(i,j) = 2 − Σ_{k∈N(i)∖{j}} √(W_ij/W_ik) − Σ_{k∈N(j)∖{i}} √(W_ij/W_jk) (weighted Forman–Ricci, Sreejith et al. 2016, unit node weights)",
        "no edge",
        "Sreejith et al. 2016"},
    [AG_M_OLLIVIER_MEAN] = {"ollivier_mean", AG_FAMILY_CURVATURE,
        "over edges, κ(i,j) = 1 − W₁(m_i, m_j), m_i = ½δ_i + ½Σ_{k∈N(i)} (W_ik / Σ_{k'∈N(i)} W_ik') δ_k, ground cost the hop distance in the graph; W₁ solved exactly (no entropic smoothing) — Ollivier 2009",
        "no edge",
        "Ollivier 2009"},
    [AG_M_OLLIVIER_MIN] = {"ollivier_min", AG_FAMILY_CURVATURE,
        "over edges, κ(i,j) = 1 − W₁(m_i, m_j), m_i = ½δ_i + ½Σ_{k∈N(i)} (W_ik / Σ_{k'∈N(i)} W_ik') δ_k, ground cost the hop distance in the graph; W₁ solved exactly (no entropic smoothing) — Ollivier 2009",
        "no edge",
        "Ollivier 2009"},
    [AG_M_PREV_TOKEN_RATIO] = {"prev_token_ratio", AG_FAMILY_ATTENTION,
        "mean of A_{i,i−1} · k_i over the rows i ≥ 1 with k_i ≥ 2 (k_i as for `sink_ratio`)",
        "not square, or no such row (n = 1)",
        "Voita et al. 2019 (positional heads), against uniform attention"},
    [AG_M_SELF_RATIO] = {"self_ratio", AG_FAMILY_ATTENTION,
        "mean of A_ii · k_i over the rows with k_i ≥ 2",
        "not square, or no such row (n = 1)",
        "against uniform attention (docs/metrics.md)"},
    [AG_M_DUPLICATE_TOKEN_SCORE] = {"duplicate_token_score", AG_FAMILY_ATTENTION,
        "Σ_{i∈R} Σ_j A_ij D_ij / Σ_{i∈R} Σ_j A_ij, D the duplicate-token pattern: D_ij = 1 iff j < i and t_j = t_i (t the token ids); R the rows where D has a 1",
        "token ids unknown (`matrix`, `layer`, rollout, dumps), R empty (no id occurs twice), or Σ_{i∈R} Σ_j A_ij = 0",
        "TransformerLens head_detector (\"mul\" mode)"},
    [AG_M_DUPLICATE_TOKEN_BASELINE] = {"duplicate_token_baseline", AG_FAMILY_ATTENTION,
        "the same score for uniform attention over the allowed keys: mean over R of c_i/k_i, c_i = Σ_j D_ij",
        "token ids unknown, or R empty",
        "TransformerLens head_detector pattern, uniform attention"},
    [AG_M_INDUCTION_SCORE] = {"induction_score", AG_FAMILY_ATTENTION,
        "as `duplicate_token_score` with the induction pattern: D_ij = 1 iff 1 ≤ j ≤ i and t_{j−1} = t_i",
        "as `duplicate_token_score`",
        "Olsson et al. 2022; TransformerLens head_detector"},
    [AG_M_INDUCTION_BASELINE] = {"induction_baseline", AG_FAMILY_ATTENTION,
        "mean over R of c_i/k_i for the induction pattern (equal to `duplicate_token_baseline`: see below)",
        "as `duplicate_token_baseline`",
        "Olsson et al. 2022, uniform attention"},
    [AG_M_VALUE_NORM_MEAN] = {"value_norm_mean", AG_FAMILY_VALUES,
        "(1/n) Σ_j ‖f_h(x_j)‖₂, f_h(x) = (x W_V^h + b_V^h) W_O^h the vector head h writes for token j",
        "—",
        "Kobayashi et al. 2020, §3"},
    [AG_M_VALUE_NORM_CV] = {"value_norm_cv", AG_FAMILY_VALUES,
        "s / m of the n norms ‖f_h(x_j)‖₂: m their mean, s their standard deviation with divisor n",
        "m = 0",
        "Kobayashi et al. 2020, §3 (the dispersion of ‖f(x)‖)"},
    [AG_M_SINK_VALUE_RATIO] = {"sink_value_ratio", AG_FAMILY_VALUES,
        "‖f_h(x_0)‖₂ / m, m = `value_norm_mean`",
        "m = 0",
        "Kobayashi et al. 2020, §3; Xiao et al. 2023 (the sink token)"},
    [AG_M_NORM_ATTENTION_SHIFT] = {"norm_attention_shift", AG_FAMILY_VALUES,
        "mean over the rows i with Σ_j N_ij > 0 of ½ Σ_j |A_ij / Σ_k A_ik − N_ij / Σ_k N_ik|, N_ij = A_ij ‖f_h(x_j)‖₂ (the total-variation distance between weight- and norm-based attention)",
        "no such row (every attended f_h(x_j) is 0)",
        "Kobayashi et al. 2020, §3"},
    [AG_M_ACT_TOP1] = {"act_top1", AG_FAMILY_ACTIVATIONS,
        "max_{t,d} |h_td|, the largest magnitude in the hidden state",
        "—",
        "Sun et al. 2024, §2"},
    [AG_M_ACT_TOP1_TOKEN] = {"act_top1_token", AG_FAMILY_ACTIVATIONS,
        "the token t of `act_top1` (the first in row-major order on a tie; an integer)",
        "—",
        "Sun et al. 2024, §2"},
    [AG_M_ACT_TOP1_DIM] = {"act_top1_dim", AG_FAMILY_ACTIVATIONS,
        "the dimension d of `act_top1` (an integer)",
        "—",
        "Sun et al. 2024, §2"},
    [AG_M_ACT_MEDIAN] = {"act_median", AG_FAMILY_ACTIVATIONS,
        "the median of the n·d magnitudes |h_td| (an even count: the mean of the two middle ones)",
        "—",
        "Sun et al. 2024, §2 (GSL gsl_stats_median)"},
    [AG_M_ACT_RATIO] = {"act_ratio", AG_FAMILY_ACTIVATIONS,
        "`act_top1` / `act_median`",
        "`act_median` = 0",
        "Sun et al. 2024, §2"},
    [AG_M_ACT_MASSIVE] = {"act_massive", AG_FAMILY_ACTIVATIONS,
        "#{(t, d) : |h_td| ≥ a and |h_td| ≥ r · `act_median`}, a = 100 (`--massive-abs`), r = 1000 (`--massive-ratio`) (an integer)",
        "—",
        "Sun et al. 2024, §2"},
    [AG_M_CONTEXT_MIXING] = {"context_mixing", AG_FAMILY_MIXING,
        "(1/n) Σ_i m_i, m_i = 1 − C_ii with `--method alti`, m_i = r_i, Kobayashi et al.'s context-mixing ratio, with `norms-res`",
        "`--method norms` or `flow` (no per-token mixing)",
        "Ferrando et al. 2022, §3; Kobayashi et al. 2021, §5"},
    /* L. metric axioms */
    [AG_M_TRIANGLE_VIOLATION] = {"triangle_violation", AG_FAMILY_AXIOMS,
        "fraction of the ordered triples (i, j, k) of distinct tokens with d_ij, d_jk, d_ik finite where d_ik > (d_ij + d_jk)(1 + 1e-12); d_ij = max(0, −ln A_ij), finite iff A_ij > 0",
        "not square, any entry < 0, or no such triple (n < 3)",
        "the triangle inequality: Deza & Deza, Encyclopedia of Distances, §1.1"},
    [AG_M_SYMMETRY_GAP] = {"symmetry_gap", AG_FAMILY_AXIOMS,
        "mean over the pairs i < j with d_ij and d_ji finite of |d_ij − d_ji| / (d_ij + d_ji) (0 where d_ij + d_ji = 0)",
        "not square, any entry < 0, or no such pair (a causal matrix has none)",
        "symmetry: Deza & Deza, Encyclopedia of Distances, §1.1"},
    [AG_M_SELF_COST] = {"self_cost", AG_FAMILY_AXIOMS,
        "mean of d_ii over the i with A_ii > 0 (0 for a metric)",
        "not square, any entry < 0, or every A_ii = 0",
        "d(i, i) = 0: Deza & Deza, Encyclopedia of Distances, §1.1"},
    /* K. the lens */
    [AG_M_SCORE_STD] = {"score_std", AG_FAMILY_LENS,
        "mean over rows of the population standard deviation of the row's allowed (finite) scores",
        "no row has an allowed score",
        "the logit spread that sets softmax's sharpness (attngeom; docs/metrics.md, K)"},
    [AG_M_SPARSEMAX_SUPPORT] = {"sparsemax_support", AG_FAMILY_LENS,
        "mean over rows of #{j : s_j − τ > 10⁻¹²} / #allowed keys, τ sparsemax's threshold (1 dense, 1/k one key; a tie at τ is not kept)",
        "no row has an allowed score",
        "Martins & Astudillo 2016, §2.2, Algorithm 1"},
    [AG_M_ENTMAX_SUPPORT] = {"entmax_support", AG_FAMILY_LENS,
        "the same for 1.5-entmax: #{j : s_j/2 − τ > 10⁻¹²/2} / #allowed keys, τ its threshold",
        "no row has an allowed score",
        "Peters, Niculae & Martins 2019, §3.2"},
    [AG_M_SPARSEMAX_JS] = {"sparsemax_js", AG_FAMILY_LENS,
        "mean over rows of the Jensen–Shannon distance √JS(softmax(s), sparsemax(s)), natural log (in [0, √ln 2])",
        "no row has an allowed score",
        "Lin 1991, §4 (scipy.spatial.distance.jensenshannon)"},
    [AG_M_SCORE_EFFECTIVE_RANK] = {"score_effective_rank", AG_FAMILY_LENS,
        "`effective_rank` of the unmasked n×n form S° = c·QKᵀ (rank ≤ d_h)",
        "S° = 0",
        "Bhojanapalli et al. 2020, §3; Roy & Vetterli 2007"},
    [AG_M_SCORE_NUMERICAL_RANK] = {"score_numerical_rank", AG_FAMILY_LENS,
        "`numerical_rank` of S° (tolerance σ₁·n·ε; an integer)",
        "—",
        "Bhojanapalli et al. 2020, §3; Golub & Van Loan 2013, §5.4.1"},
    [AG_M_RANK_LIFT] = {"rank_lift", AG_FAMILY_LENS,
        "`effective_rank`(A) / `score_effective_rank`, A the matrix measured",
        "S° = 0",
        "Bhojanapalli et al. 2020, §3"},
    [AG_M_SCORE_ASYMMETRY] = {"score_asymmetry", AG_FAMILY_LENS,
        "‖(S° − S°ᵀ)/2‖_F / ‖S°‖_F",
        "S° = 0, or not square (cross-attention)",
        "attngeom (docs/metrics.md, K)"},
    /* M. cross-attention */
    [AG_M_ALIGNMENT_MONOTONICITY] = {"alignment_monotonicity", AG_FAMILY_CROSS,
        "Spearman's ρ of the pairs (i, a_i), i = 0..m−1 the target position, a_i = argmax_j A_ij (the smallest j on a tie); tied a_i get their average rank (scipy.stats.spearmanr)",
        "m < 2, or every a_i equal (a constant argmax)",
        "Bahdanau, Cho & Bengio 2014, §3.1 and Fig. 3 (alignment); Spearman 1904 (GSL gsl_stats_spearman)"},
    [AG_M_ALIGNMENT_KENDALL] = {"alignment_kendall", AG_FAMILY_CROSS,
        "Kendall's τ-b of the same pairs (i, a_i) (scipy.stats.kendalltau's default)",
        "m < 2, or every a_i equal",
        "Kendall 1945 (τ-b); Bahdanau, Cho & Bengio 2014, §3.1"},
    [AG_M_SOURCE_COVERAGE] = {"source_coverage", AG_FAMILY_CROSS,
        "fraction of the n sources j with c_j ≥ T/n, c_j = Σ_i A_ij, T = Σ_j c_j (m for a row-stochastic A); a tie within the sums' rounding, c_j ≥ (T/n)(1 − (m + n)·2⁻⁵²), counts",
        "any entry < 0, or T = 0",
        "Tu et al. 2016, §3 (coverage of the source in NMT)"},
    [AG_M_CROSS_ENTROPY_NORMALIZED] = {"cross_entropy_normalized", AG_FAMILY_CROSS,
        "(1/m) Σ_i H_i / ln n, H_i = −Σ_{j: A_ij>0} A_ij ln A_ij (natural log)",
        "n = 1, or any entry < 0",
        "Bahdanau, Cho & Bengio 2014, §3.1; Clark et al. 2019, §3 (attention entropy)"},
};

/* How a paper's table heads each key (md and LaTeX headers): a display
 * name, and a LaTeX symbol only where the literature has a standard one
 * (σ₁ the largest singular value, |λ₂| the second eigenvalue modulus
 * [Levin & Peres, Markov Chains and Mixing Times, 2nd ed., §12], H the
 * Shannon entropy, λ₂(L) the Fiedler value [Fiedler 1973]). */
static const struct {
    const char *display, *symbol;
} metric_display[AG_M_COUNT] = {
    [AG_M_SIGMA_MAX] = {"Largest singular value", "$\\sigma_1$"},
    [AG_M_SIGMA_GAP] = {"Singular value gap", NULL},
    [AG_M_EFFECTIVE_RANK] = {"Effective rank", NULL},
    [AG_M_STABLE_RANK] = {"Stable rank", NULL},
    [AG_M_PARTICIPATION_RATIO] = {"Participation ratio", NULL},
    [AG_M_NUMERICAL_RANK] = {"Numerical rank", NULL},
    [AG_M_CAUSAL] = {"Causal", NULL},
    [AG_M_ROW_SUM_ERROR] = {"Row-sum error", NULL},
    [AG_M_ENTROPY_MEAN] = {"Mean entropy", "$\\bar H$"},
    [AG_M_ENTROPY_NORMALIZED] = {"Normalized entropy", NULL},
    [AG_M_SINK_MASS] = {"Sink mass", NULL},
    [AG_M_LAMBDA2_ABS] = {"Second eigenvalue modulus", "$|\\lambda_2|$"},
    [AG_M_SPECTRAL_GAP] = {"Spectral gap", "$1-|\\lambda_2|$"},
    [AG_M_FIEDLER] = {"Fiedler value", "$\\lambda_2(L)$"},
    [AG_M_ASYMMETRY] = {"Asymmetry", NULL},
    [AG_M_SYMMETRY_SCORE] = {"Symmetry score", NULL},
    [AG_M_ATTENTION_DISTANCE] = {"Attention distance", NULL},
    [AG_M_SELF_MASS] = {"Self mass", NULL},
    [AG_M_PREV_TOKEN_MASS] = {"Previous-token mass", NULL},
    [AG_M_MAX_MASS] = {"Max mass", NULL},
    [AG_M_SINK_RATIO] = {"Sink ratio", NULL},
    [AG_M_MEAN_COSINE] = {"Mean cosine", NULL},
    [AG_M_PC1_SHARE] = {"PC1 share", NULL},
    [AG_M_RES_RATIO] = {"Residual ratio", NULL},
    [AG_M_QK_SIGMA_MAX] = {"QK largest singular value", NULL},
    [AG_M_QK_SIGMA_GAP] = {"QK singular value gap", NULL},
    [AG_M_QK_EFFECTIVE_RANK] = {"QK effective rank", NULL},
    [AG_M_QK_STABLE_RANK] = {"QK stable rank", NULL},
    [AG_M_QK_PARTICIPATION_RATIO] = {"QK participation ratio", NULL},
    [AG_M_QK_NUMERICAL_RANK] = {"QK numerical rank", NULL},
    [AG_M_QK_SYMMETRY_SCORE] = {"QK symmetry score", NULL},
    [AG_M_OV_SIGMA_MAX] = {"OV largest singular value", NULL},
    [AG_M_OV_SIGMA_GAP] = {"OV singular value gap", NULL},
    [AG_M_OV_EFFECTIVE_RANK] = {"OV effective rank", NULL},
    [AG_M_OV_STABLE_RANK] = {"OV stable rank", NULL},
    [AG_M_OV_PARTICIPATION_RATIO] = {"OV participation ratio", NULL},
    [AG_M_OV_NUMERICAL_RANK] = {"OV numerical rank", NULL},
    [AG_M_OV_COPYING_SCORE] = {"OV copying score", NULL},
    [AG_M_JACOBIAN_NORM] = {"Jacobian norm", NULL},
    [AG_M_JACOBIAN_NORM_REL] = {"Relative Jacobian norm", NULL},
    [AG_M_SENSITIVITY] = {"Sensitivity", NULL},
    [AG_M_Q_MEAN_COSINE] = {"Query mean cosine", NULL},
    [AG_M_K_MEAN_COSINE] = {"Key mean cosine", NULL},
    [AG_M_QK_COS_MEAN] = {"Query-key mean cosine", NULL},
    [AG_M_LAMBDA2_CONDITION] = {"Condition of lambda2", NULL},
    [AG_M_EDGES] = {"Edges", NULL},
    [AG_M_FORMAN_MEAN] = {"Mean Forman curvature", NULL},
    [AG_M_FORMAN_MIN] = {"Min Forman curvature", NULL},
    [AG_M_OLLIVIER_MEAN] = {"Mean Ollivier curvature", NULL},
    [AG_M_OLLIVIER_MIN] = {"Min Ollivier curvature", NULL},
    [AG_M_PREV_TOKEN_RATIO] = {"Previous-token ratio", NULL},
    [AG_M_SELF_RATIO] = {"Self ratio", NULL},
    [AG_M_DUPLICATE_TOKEN_SCORE] = {"Duplicate-token score", NULL},
    [AG_M_DUPLICATE_TOKEN_BASELINE] = {"Duplicate-token baseline", NULL},
    [AG_M_INDUCTION_SCORE] = {"Induction score", NULL},
    [AG_M_INDUCTION_BASELINE] = {"Induction baseline", NULL},
    [AG_M_VALUE_NORM_MEAN] = {"Mean value norm", NULL},
    [AG_M_VALUE_NORM_CV] = {"Value norm CV", NULL},
    [AG_M_SINK_VALUE_RATIO] = {"Sink value ratio", NULL},
    [AG_M_NORM_ATTENTION_SHIFT] = {"Norm-attention shift", NULL},
    [AG_M_ACT_TOP1] = {"Top activation", NULL},
    [AG_M_ACT_TOP1_TOKEN] = {"Top activation token", NULL},
    [AG_M_ACT_TOP1_DIM] = {"Top activation dimension", NULL},
    [AG_M_ACT_MEDIAN] = {"Median activation", NULL},
    [AG_M_ACT_RATIO] = {"Top-to-median ratio", NULL},
    [AG_M_ACT_MASSIVE] = {"Massive activations", NULL},
    [AG_M_CONTEXT_MIXING] = {"Context mixing", NULL},
    [AG_M_TRIANGLE_VIOLATION] = {"Triangle violation", NULL},
    [AG_M_SYMMETRY_GAP] = {"Symmetry gap", NULL},
    [AG_M_SELF_COST] = {"Self cost", NULL},
    [AG_M_SCORE_STD] = {"Score std", NULL},
    [AG_M_SPARSEMAX_SUPPORT] = {"Sparsemax support", NULL},
    [AG_M_ENTMAX_SUPPORT] = {"Entmax support", NULL},
    [AG_M_SPARSEMAX_JS] = {"Sparsemax JS distance", NULL},
    [AG_M_SCORE_EFFECTIVE_RANK] = {"Score effective rank", NULL},
    [AG_M_SCORE_NUMERICAL_RANK] = {"Score numerical rank", NULL},
    [AG_M_RANK_LIFT] = {"Rank lift", NULL},
    [AG_M_SCORE_ASYMMETRY] = {"Score asymmetry", NULL},
    [AG_M_ALIGNMENT_MONOTONICITY] = {"Alignment monotonicity", "$\\rho$"},
    [AG_M_ALIGNMENT_KENDALL] = {"Alignment Kendall tau", "$\\tau_b$"},
    [AG_M_SOURCE_COVERAGE] = {"Source coverage", NULL},
    [AG_M_CROSS_ENTROPY_NORMALIZED] = {"Normalized cross-attention entropy", NULL},
};

/* The other keys records carry (docs/cli.md, docs/metrics.md): the
 * identifying ones, compare's statistics and the probe's sizes (T and R as
 * Olsson et al.'s block length and copies). */
static const struct {
    const char *key, *display, *symbol;
} key_display[] = {
    {"layer", "Layer", NULL},      {"head", "Head", NULL},
    {"rows", "Rows", NULL},        {"cols", "Columns", NULL},
    {"text", "Text", NULL},        {"input", "Input", NULL},
    {"model", "Model", NULL},      {"metric", "Metric", NULL},
    {"unit", "Unit", NULL},        {"n", "Records", "$n$"},
    {"n_units", "Units", NULL},    {"n_a", "Units A", "$n_A$"},
    {"n_b", "Units B", "$n_B$"}, {"mean_a", "Mean A", NULL},
    {"mean_b", "Mean B", NULL},    {"diff", "Difference", NULL},
    {"ci_low", "CI low", NULL},    {"ci_high", "CI high", NULL},
    {"t", "t statistic", "$t$"},   {"df", "Degrees of freedom", NULL},
    {"p", "p-value", "$p$"},       {"p_holm", "p (Holm)", NULL},
    {"q_bh", "q (BH)", NULL},      {"p_perm", "p (permutation)", NULL},
    {"hedges_g", "Hedges' g", "$g$"}, {"dz", "Cohen's dz", "$d_z$"},
    {"p_wilcoxon", "p (Wilcoxon)", NULL},
    {"hedges_g_ci_low", "g CI low", NULL}, {"hedges_g_ci_high", "g CI high", NULL},
    {"p_perm_holm", "p (permutation, Holm)", NULL}, {"q_perm_bh", "q (permutation, BH)", NULL},
    /* the induction probe's (`heads --probe induction`) */
    {"length", "Block length", "$T$"}, {"repeats", "Repeats", "$R$"}, {"seed", "Seed", NULL},
};

/* key's display name (which 0) or symbol (which 1); NULL when unknown. */
static const char *key_heading(const char *key, int which)
{
    int m = key ? ag_metric_from_name(key) : -1;
    if (m >= 0)
        return which ? metric_display[m].symbol : metric_display[m].display;
    for (size_t i = 0; key && i < sizeof key_display / sizeof *key_display; i++)
        if (strcmp(key_display[i].key, key) == 0)
            return which ? key_display[i].symbol : key_display[i].display;
    return NULL;
}

const char *ag_key_display_name(const char *key)
{
    return key_heading(key, 0);
}

const char *ag_key_symbol(const char *key)
{
    return key_heading(key, 1);
}

static const char *const family_names[AG_FAMILY_COUNT] = {
    [AG_FAMILY_SPECTRUM] = "spectrum",
    [AG_FAMILY_ATTENTION] = "attention",
    [AG_FAMILY_GEOMETRY] = "geometry",
    [AG_FAMILY_WEIGHTS] = "weights",
    [AG_FAMILY_STABILITY] = "stability",
    [AG_FAMILY_CURVATURE] = "curvature",
    [AG_FAMILY_VALUES] = "values",
    [AG_FAMILY_ACTIVATIONS] = "activations",
    [AG_FAMILY_MIXING] = "mixing",
    [AG_FAMILY_AXIOMS] = "axioms",
    [AG_FAMILY_LENS] = "lens",
    [AG_FAMILY_CROSS] = "cross",
};

const char *ag_metric_name(ag_metric m)
{
    return (unsigned)m < AG_M_COUNT ? metric_table[m].name : NULL;
}

int ag_metric_from_name(const char *name)
{
    for (int m = 0; m < AG_M_COUNT; m++)
        if (strcmp(metric_table[m].name, name) == 0)
            return m;
    return -1;
}

ag_family ag_metric_family(ag_metric m)
{
    return metric_table[m].family;
}

const char *ag_metric_definition(ag_metric m)
{
    return (unsigned)m < AG_M_COUNT ? metric_table[m].definition : NULL;
}

const char *ag_metric_null_when(ag_metric m)
{
    return (unsigned)m < AG_M_COUNT ? metric_table[m].null_when : NULL;
}

const char *ag_metric_reference(ag_metric m)
{
    return (unsigned)m < AG_M_COUNT ? metric_table[m].reference : NULL;
}

int ag_family_from_name(const char *name)
{
    for (int f = 0; f < AG_FAMILY_COUNT; f++)
        if (strcmp(family_names[f], name) == 0)
            return f;
    return -1;
}

const char *ag_family_name(ag_family f)
{
    return (unsigned)f < AG_FAMILY_COUNT ? family_names[f] : NULL;
}

/* 1 when key m is computed by a command of these families: its family is
 * one of them and, for a key that needs token ids, the command knows them
 * (AG_FAMILIES_TOKEN_IDS). */
static int computed(int m, unsigned families)
{
    int needs_ids = m >= AG_M_DUPLICATE_TOKEN_SCORE && m <= AG_M_INDUCTION_BASELINE;
    return (families & AG_FAMILY_BIT(metric_table[m].family)) &&
           (!needs_ids || (families & AG_FAMILIES_TOKEN_IDS));
}

static void select_family(ag_metric_set *set, ag_family f, unsigned families)
{
    for (int m = 0; m < AG_M_COUNT; m++)
        if (metric_table[m].family == f && computed(m, families))
            set->on[m] = 1;
}

void ag_metric_set_families(ag_metric_set *set, unsigned families)
{
    memset(set, 0, sizeof *set);
    for (int f = 0; f < AG_FAMILY_COUNT; f++)
        if (families & AG_FAMILY_BIT(f))
            select_family(set, (ag_family)f, families);
}

void ag_metric_set_default(ag_metric_set *set)
{
    ag_metric_set_families(set, AG_FAMILIES_DEFAULT);
}

/* Select one key or family name within `families`: 1 done, 0 unknown,
 * -1 known but outside the families. */
static int select_item(ag_metric_set *set, const char *item, unsigned families)
{
    if (strcmp(item, "all") == 0) {
        for (int m = 0; m < AG_M_COUNT; m++)
            if (computed(m, families))
                set->on[m] = 1;
        return 1;
    }
    for (int f = 0; f < AG_FAMILY_COUNT; f++)
        if (strcmp(item, family_names[f]) == 0) {
            if (!(families & AG_FAMILY_BIT(f)))
                return -1;
            select_family(set, (ag_family)f, families);
            return 1;
        }
    int m = ag_metric_from_name(item);
    if (m < 0)
        return 0;
    if (!computed(m, families))
        return -1;
    set->on[m] = 1;
    return 1;
}

/* AG_EINVAL for an unknown item, with the closest key or family name the
 * command computes (Damerau–Levenshtein distance ≤ 2) as "did you mean". */
static int unknown_item(const char *item, unsigned families, ag_error *err)
{
    const char *names[AG_M_COUNT + AG_FAMILY_COUNT + 1];
    size_t n = 0;
    for (int m = 0; m < AG_M_COUNT; m++)
        names[n++] = computed(m, families) ? metric_table[m].name : NULL;
    for (int f = 0; f < AG_FAMILY_COUNT; f++)
        names[n++] = families & AG_FAMILY_BIT(f) ? family_names[f] : NULL;
    names[n++] = "all";
    long k = ag_text_closest(item, names, n, 2);
    if (k >= 0)
        return ag_error_set(err, AG_EINVAL,
                            "--metrics: unknown metric or family '%s' (did you mean %s?)",
                            item, names[k]);
    return ag_error_set(err, AG_EINVAL, "--metrics: unknown metric or family '%s'", item);
}

int ag_metric_set_parse_families(ag_metric_set *out, const char *list,
                                 unsigned families, ag_error *err)
{
    ag_metric_set parsed = {{0}}, *set = &parsed; /* *out changes on success only */
    const char *p = list;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char item[64];
        if (len == 0 || len >= sizeof item)
            return ag_error_set(err, AG_EINVAL, "--metrics: %s item in '%s'",
                                len ? "overlong" : "empty", list);
        memcpy(item, p, len);
        item[len] = '\0';
        int found = select_item(set, item, families);
        if (found == 0)
            return unknown_item(item, families, err);
        if (found < 0)
            return ag_error_set(err, AG_EINVAL,
                                "--metrics: '%s' is not computed by this command", item);
        if (!end)
            break;
        p = end + 1;
    }
    *out = parsed;
    return AG_OK;
}

int ag_metric_set_parse(ag_metric_set *set, const char *list, ag_error *err)
{
    return ag_metric_set_parse_families(set, list, ~0u, err);
}

size_t ag_metric_set_count(const ag_metric_set *set)
{
    size_t c = 0;
    for (int m = 0; m < AG_M_COUNT; m++)
        c += set->on[m] != 0;
    return c;
}

void ag_record_init(ag_record *r, int layer, int head, size_t rows, size_t cols)
{
    memset(r, 0, sizeof *r);
    r->layer = layer;
    r->head = head;
    r->text = -1;
    r->temperature = NAN;
    r->rows = rows;
    r->cols = cols;
}

void ag_record_set_temperature(ag_record *r, double T)
{
    r->temperature = T;
}

double ag_record_temperature(const ag_record *r)
{
    return r->temperature;
}

void ag_record_set_stack(ag_record *r, int stack)
{
    r->stack = stack;
}

int ag_record_stack(const ag_record *r)
{
    return r->stack;
}

const char *ag_stack_name(int stack)
{
    static const char *const names[] = {NULL, "encoder", "decoder", "cross"};
    return stack > 0 && stack < (int)(sizeof names / sizeof *names) ? names[stack] : NULL;
}

void ag_record_set(ag_record *r, ag_metric m, ag_value_kind kind, double v)
{
    if ((unsigned)m >= AG_M_COUNT)
        return;
    if (kind != AG_V_NULL && kind != AG_V_ABSENT && !isfinite(v)) {
        kind = AG_V_NULL;
        v = 0.0;
    }
    r->kind[m] = (unsigned char)kind;
    r->value[m] = kind == AG_V_NULL ? 0.0 : v;
}

void ag_record_set_text(ag_record *r, long text)
{
    r->text = text;
}

/* ---- on the heap (the opaque forms of metrics.h) ------------------------ */

int ag_metric_count(void)
{
    return AG_M_COUNT;
}

unsigned ag_command_families(const char *command)
{
    static const struct {
        const char *name;
        unsigned families;
    } commands[] = {{"matrix", AG_FAMILIES_MATRIX}, {"attention", AG_FAMILIES_MATRIX},
                    {"analyze", AG_FAMILIES_ANALYZE}, {"layer", AG_FAMILIES_HEADS}, {"weights", AG_FAMILIES_WEIGHTS},
                    {"residual", AG_FAMILIES_RESIDUAL}, {"rollout", AG_FAMILIES_ROLLOUT},
                    {"contributions", AG_FAMILIES_CONTRIBUTIONS}};
    for (size_t k = 0; command && k < sizeof commands / sizeof *commands; k++)
        if (strcmp(command, commands[k].name) == 0)
            return commands[k].families;
    return 0;
}

/* Every command's default (J: contributions only, cheap). */
static unsigned default_families(unsigned families)
{
    return families & AG_FAMILIES_DEFAULT
               ? families & (AG_FAMILIES_DEFAULT | AG_FAMILIES_TOKEN_IDS |
                             AG_FAMILY_BIT(AG_FAMILY_MIXING))
               : families;
}

void ag_metric_set_default_shape(ag_metric_set *set, unsigned families, size_t rows,
                                 size_t cols)
{
    unsigned cross = rows != cols ? families & AG_FAMILY_BIT(AG_FAMILY_CROSS) : 0;
    ag_metric_set_families(set, default_families(families) | cross);
}

int ag_metric_set_new(unsigned families, const char *list, ag_metric_set **out, ag_error *err)
{
    *out = NULL;
    ag_metric_set *set = calloc(1, sizeof *set);
    if (!set)
        return ag_error_set(err, AG_ENOMEM, "out of memory");
    int status = AG_OK;
    if (list)
        status = ag_metric_set_parse_families(set, list, families, err);
    else
        ag_metric_set_families(set, default_families(families));
    if (status != AG_OK) {
        free(set);
        return status;
    }
    *out = set;
    return AG_OK;
}

void ag_metric_set_free(ag_metric_set *set)
{
    free(set);
}

int ag_metric_set_has(const ag_metric_set *set, int m)
{
    return set && m >= 0 && m < AG_M_COUNT && set->on[m] != 0;
}

ag_record *ag_record_new(void)
{
    ag_record *r = malloc(sizeof *r);
    if (r)
        ag_record_init(r, 0, 0, 0, 0);
    return r;
}

void ag_record_free(ag_record *r)
{
    free(r);
}

int ag_record_layer(const ag_record *r)
{
    return r->layer;
}

int ag_record_head(const ag_record *r)
{
    return r->head;
}

long ag_record_text(const ag_record *r)
{
    return r->text;
}

size_t ag_record_rows(const ag_record *r)
{
    return r->rows;
}

size_t ag_record_cols(const ag_record *r)
{
    return r->cols;
}

int ag_record_value(const ag_record *r, int m, double *value)
{
    int kind = m >= 0 && m < AG_M_COUNT ? r->kind[m] : AG_V_ABSENT;
    if (value)
        *value = kind == AG_V_NUMBER || kind == AG_V_INTEGER || kind == AG_V_BOOL ? r->value[m] : 0;
    return kind;
}

/* ---- record lists ------------------------------------------------------- */

/* Room for `more` records after the last; 0 or -1 (list unchanged). */
static int list_reserve(ag_record_list *l, size_t more)
{
    if (l->cap - l->count >= more)
        return 0;
    size_t need = l->count + more;
    if (need < l->count || need > SIZE_MAX / sizeof *l->items / 2)
        return -1;
    size_t cap = l->cap ? 2 * l->cap : 64;
    if (cap < need)
        cap = need;
    ag_record *grown = realloc(l->items, cap * sizeof *grown);
    if (!grown)
        return -1;
    l->items = grown;
    l->cap = cap;
    return 0;
}

ag_record_list *ag_record_list_new(void)
{
    return calloc(1, sizeof(ag_record_list));
}

ag_record_list *ag_record_list_alloc(size_t count, ag_error *err)
{
    ag_record_list *l = ag_record_list_new();
    if (!l || list_reserve(l, count + 1) != 0) {
        ag_record_list_free(l);
        ag_error_set(err, AG_ENOMEM, "out of memory for %zu records", count);
        return NULL;
    }
    for (l->count = 0; l->count < count; l->count++)
        ag_record_init(&l->items[l->count], 0, 0, 0, 0);
    return l;
}

void ag_record_list_free(ag_record_list *list)
{
    if (list)
        free(list->items);
    free(list);
}

ag_record *ag_record_list_add(ag_record_list *list, ag_error *err)
{
    if (list_reserve(list, 1) != 0) {
        ag_error_set(err, AG_ENOMEM, "out of memory for %zu records", list->count + 1);
        return NULL;
    }
    ag_record *r = &list->items[list->count++];
    ag_record_init(r, 0, 0, 0, 0);
    return r;
}

int ag_record_list_move(ag_record_list *dst, ag_record_list *src, ag_error *err)
{
    if (dst->count == 0) { /* take src's array whole */
        ag_record_list kept = *dst;
        *dst = *src;
        *src = kept;
        return AG_OK;
    }
    if (list_reserve(dst, src->count) != 0)
        return ag_error_set(err, AG_ENOMEM, "out of memory for %zu records",
                            dst->count + src->count);
    memcpy(dst->items + dst->count, src->items, src->count * sizeof *src->items);
    dst->count += src->count;
    src->count = 0;
    return AG_OK;
}

void ag_record_list_clear(ag_record_list *list)
{
    list->count = 0;
}

size_t ag_record_list_count(const ag_record_list *list)
{
    return list ? list->count : 0;
}

const ag_record *ag_record_list_get(const ag_record_list *list, size_t i)
{
    return list && i < list->count ? &list->items[i] : NULL;
}

ag_record *ag_record_list_at(ag_record_list *list, size_t i)
{
    return list && i < list->count ? &list->items[i] : NULL;
}
