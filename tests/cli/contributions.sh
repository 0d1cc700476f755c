#!/bin/sh
# tests/cli/contributions.sh CLI — end-to-end checks of `attngeom
# contributions` (docs/metrics.md, "Contributions") on models/tiny-gpt2 and
# tiny-bert: -o C.npy's ALTI rows sum to 1 and are causal, --mixing is
# 1 − C_ii (alti) or Kobayashi's ratio in [0, 1] (norms-res), --rollout's R_l
# is C_l R_(l-1) of the layers' C, --layers picks those layers, the records
# are `matrix`'s on the same matrices; the usage errors: exit 2, one stderr
# line, no file left behind. (The values themselves are checked against the
# authors' code by tests/ref/check_alti.py.) Run from the repository root.
. "$(dirname "$0")/lib.sh"
ag_setup "$@"
need "$GPT2/config.json"
BERT=$ROOT/tests/data/models/tiny-bert
IDS=464,2068,7586,21831,11687,625

runj c.json contributions "$GPT2" --tokens $IDS --precision f64 -o "$T/C.npy" --mixing "$T/M.npy" --format json
runj r.json contributions "$GPT2" --tokens $IDS --precision f64 --rollout -o "$T/R.npy" --format json
runj sub.json contributions "$GPT2" --tokens $IDS --precision f64 --layers 1,3 -o "$T/C13.npy" --format json
runj m.json matrix "$T/C.npy" --format json
runj n.json contributions "$BERT" --tokens 2,50,60,70,3 --precision f64 --method norms-res -o "$T/N.npy" --mixing "$T/K.npy" --format json
PYSCRIPT='
C, M, R, C13 = (np.load(a[k]) for k in range(4))
L, n, _ = C.shape
assert (L, n) == (4, 6) and M.shape == (4, 6) and R.shape == C.shape, (C.shape, M.shape, R.shape)
assert np.all(C >= 0) and np.allclose(C.sum(axis=2), 1, atol=1e-12), C.sum(axis=2)
assert np.all(np.triu(C, 1) == 0), "C of a causal model is lower-triangular"
assert np.array_equal(M, 1 - np.einsum("lii->li", C)), "--mixing is 1 - C_ii"
want = [C[0]]
for l in range(1, L):
    want.append(C[l] @ want[-1])
assert np.allclose(R, np.array(want), atol=1e-14, rtol=0), np.abs(R - np.array(want)).max()
assert np.array_equal(C13, C[[1, 3]]), "--layers 1,3"
c, r, s, m = (records(a[k]) for k in range(4, 8))
assert [x["layer"] for x in c] == [0, 1, 2, 3] and all(x["head"] == -1 for x in c), c
assert [x["layer"] for x in s] == [1, 3], s
assert all(x["rows"] == n and x["cols"] == n for x in c + r)
for x, y in zip(c, m):
    for k in ("sigma_max", "entropy_mean", "effective_rank", "mean_cosine"):
        assert x[k] == y[k] or abs(x[k] - y[k]) <= 1e-12 * max(1, abs(y[k])), (k, x[k], y[k])
N, K = np.load(a[8]), np.load(a[9])
assert N.shape == (4, 5, 5) and K.shape == (4, 5), (N.shape, K.shape)
assert np.all(N > 0) and np.all((K >= 0) & (K <= 1)), "norms positive (bidirectional), ratio in [0, 1]"
'
pycheck "alti -o/--mixing/--rollout/--layers, norms-res, records = matrix's" \
    "$T/C.npy" "$T/M.npy" "$T/R.npy" "$T/C13.npy" "$T/c.json" "$T/r.json" "$T/sub.json" "$T/m.json" \
    "$T/N.npy" "$T/K.npy"

printf 'In the beginning\nGod created\n' >"$T/two.txt"
run_case 2 "--rollout composes ALTI: it needs --method alti" "--rollout with norms-res" \
    contributions "$GPT2" --tokens $IDS --method norms-res --rollout -o "$T/o/C.npy"
run_case 2 "--method takes norms-res or alti, not 'flow'" "unknown method" \
    contributions "$GPT2" --tokens $IDS --method flow
run_case 2 "-o and --mixing take one input, not --text-file" "-o with a corpus" \
    contributions "$GPT2" --text-file "$T/two.txt" --mixing "$T/o/M.npy"
run_case 2 "takes no --heads" "per-layer records" contributions "$GPT2" --tokens $IDS --heads 0
run_case 2 "(did you mean --method?)" "option typo" contributions "$GPT2" --tokens $IDS --mehtod alti
finish
