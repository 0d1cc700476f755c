#!/bin/sh
# tests/cli/help.sh CLI — help that cannot drift (issue 26, item 6):
#  - `attngeom metrics` lists exactly the keys of docs/metrics.md's tables
#    (their first column; "`qk_` + every family-A key" expanded), in the
#    records' column order, and each key's definition and null case are the
#    cells of its row there (`\|` read as `|`; families E and F have no
#    null column: their null cases are the prose's, checked as non-empty);
#  - `metrics FAMILY|KEY` and every format;
#  - "did you mean" (Damerau–Levenshtein ≤ 2) in the one error line for an
#    unknown metric, command and option of every command, and none when
#    nothing is that close;
#  - one option table per command (src/cli/options.c, `attngeom options-doc
#    names` lists it) and four lists that agree with it: the parser takes
#    every entry (never "unknown option" or "internal error"; a refused one
#    gives its reason) and nothing else (every option of every other
#    command is "unknown option" or a refusal); --help lists exactly the
#    entries; the man page's and docs/cli.md's lists, a command's own
#    options plus the groups it names, are exactly them too; and
#    scripts/options_docs.py, run on copies, leaves attngeom.1 and
#    docs/cli.md as committed (they are the tables' output);
#  - a file given to the wrong reader is named for what it is (.npy,
#    safetensors, PNG, WAV where records are expected, and vice versa).

. "$(dirname "$0")/lib.sh"
ag_setup "$@"
need docs/metrics.md

runj all metrics --format json
runj allcsv metrics --format csv
runj spectrum metrics spectrum --format json
runj one metrics sigma_max,geometry --format jsonl
runj table metrics

PYSCRIPT='
import csv, re
rows = {}
A = []
for line in open("docs/metrics.md", encoding="utf-8"):
    if line.startswith("## Null cases at a glance"):
        break
    if not line.startswith("| `"):
        continue
    cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.rstrip("\n"))[1:-1]]
    keys = re.findall(r"`([a-z0-9_]+)`", cells[0])
    if "family-A key" in cells[0]:
        keys = [keys[0] + k for k in A]
    elif len(A) < 6:
        A += keys
    for k in keys:
        assert k not in rows, "key twice in docs/metrics.md: " + k
        rows[k] = cells[1:]
got = load(a[0])["records"]
keys = [r["key"] for r in got]
assert len(keys) == len(set(keys)), "a key twice"
assert set(keys) == set(rows), ("registry only", sorted(set(keys) - set(rows)), "docs only", sorted(set(rows) - set(keys)))
assert len(keys) == 82
for r in got:
    doc = rows[r["key"]]
    assert r["definition"] == doc[0], (r["key"], r["definition"], doc[0])
    if len(doc) > 1:
        assert r["null_when"] == doc[1], (r["key"], r["null_when"], doc[1])
    assert r["null_when"] and r["reference"], r["key"]
    assert r["family"] in ("spectrum", "attention", "geometry", "weights", "stability", "curvature",
                           "values", "activations", "mixing", "axioms", "lens", "cross")
# the column order of the records (docs/metrics.md: A, B, C, D, E, lambda2_condition, F,
# detectors, H, I, J, L, K, M)
assert keys[:3] == ["sigma_max", "sigma_gap", "effective_rank"] and keys[-5] == "score_asymmetry"
assert keys[-4:] == ["alignment_monotonicity", "alignment_kendall", "source_coverage",
                     "cross_entropy_normalized"], keys[-4:]
assert keys[-15:-12] == ["triangle_violation", "symmetry_gap", "self_cost"]
assert keys.index("score_std") == keys.index("self_cost") + 1
assert keys.index("context_mixing") == keys.index("act_massive") + 1
assert keys.index("value_norm_mean") == keys.index("induction_baseline") + 1
assert keys.index("lambda2_condition") == keys.index("qk_cos_mean") + 1
# CSV carries the same cells
with open(a[1], encoding="utf-8", newline="") as f:
    c = list(csv.DictReader(f))
assert [r["key"] for r in c] == keys and [r["definition"] for r in c] == [r["definition"] for r in got]
# a family, and a list of a key and a family
sp = [r["key"] for r in load(a[2])["records"]]
assert sp == A == ["sigma_max", "sigma_gap", "effective_rank", "stable_rank", "participation_ratio", "numerical_rank"], sp
lines = [json.loads(l) for l in open(a[3])]
one = [l["key"] for l in lines if "key" in l]
assert one == ["sigma_max", "mean_cosine", "pc1_share", "res_ratio"], one
# the table: one block per key, its first line "key (family)"
heads = [l for l in open(a[4], encoding="utf-8") if l.strip() and not l.startswith(" ")]
assert [h.split(" (")[0] for h in heads] == keys
assert heads[0] == "sigma_max (spectrum)\n"
'
pycheck "metrics lists exactly docs/metrics.md's keys, definitions and null cases" \
    "$T/all" "$T/allcsv" "$T/spectrum" "$T/one" "$T/table"

# ---- did you mean ---------------------------------------------------------
"$PY" -c 'import numpy as np; np.save("'"$T"'/a.npy", np.full((3, 3), 1 / 3))'
run_case 2 "'sigma_mx' (did you mean sigma_max?)" "metric typo (deletion)" matrix "$T/a.npy" --metrics sigma_mx
run_case 2 "'entropy_maen' (did you mean entropy_mean?)" "metric typo (transposition)" \
    matrix "$T/a.npy" --metrics entropy_maen
run_case 2 "'spectrm' (did you mean spectrum?)" "family typo" matrix "$T/a.npy" --metrics spectrm
run_case 2 "(did you mean induction_score?)" "metric typo, analyze's keys" \
    analyze "$GPT2" --text hi --metrics inducton_score
run_case 2 "'nothing_like_it'" "no suggestion beyond distance 2" matrix "$T/a.npy" --metrics nothing_like_it
DESC="no suggestion beyond distance 2: none given"; N=$((N + 1))
grep -q "did you mean" "$T/stderr" && fail "$(cat "$T/stderr")"
run_case 2 "unknown command 'anaylze' (did you mean analyze?" "command typo" anaylze "$GPT2"
run_case 2 "unknown command 'metrcs' (did you mean metrics?" "command typo, metrics" metrcs
run_case 2 "unknown command 'frobnicate'" "unknown command, nothing close" frobnicate
DESC="unknown command, nothing close: no suggestion"; N=$((N + 1))
grep -q "did you mean" "$T/stderr" && fail "$(cat "$T/stderr")"

# an option typo for every command: --fromat is 1 from --format, which all
# but plot and attention (it writes .npy) take
for cmd in matrix info tokenize decode analyze layer weights residual rollout similarity \
    aggregate compare metrics; do
    run_case 2 "unknown option '--fromat' (did you mean --format?)" "option typo: $cmd" $cmd --fromat json
done
for cmd in plot attention; do
    run_case 2 "unknown option '--fromat'" "$cmd takes no --format: nothing suggested" $cmd --fromat svg
    DESC="$cmd --fromat: no suggestion"; N=$((N + 1))
    grep -q "did you mean" "$T/stderr" && fail "$(cat "$T/stderr")"
done
run_case 2 "(did you mean --tokens?)" "option typo, a command's own option" plot x.jsonl --tokesn 3
run_case 2 "(did you mean --query?)" "option typo, plot --query (now in its help)" plot x.jsonl --qeury 3
run_case 2 "(did you mean --aggregate?)" "option typo, --aggregate" analyze "$GPT2" --agregate
run_case 2 "unknown option '-j'" "a short option: nothing suggested" tokenize "$GPT2" --text hi -j 2
DESC="-j: no suggestion"; N=$((N + 1))
grep -q "did you mean" "$T/stderr" && fail "$(cat "$T/stderr")"
run_case 2 "'--frmat=jsn'" "--name=VALUE typo: the value is not the option" matrix "$T/a.npy" --frmat=jsn
DESC="--frmat=jsn suggests --format"; N=$((N + 1))
grep -qF "(did you mean --format?)" "$T/stderr" || fail "$(cat "$T/stderr")"

# ---- the commands whose parser and --help share one option table (info,
# metrics): an option their table lacks is unknown, where cli_common_option
# used to take it (info --metrics x was accepted and ignored)
run_case 2 "unknown option '--metrics'" "info takes no --metrics" info "$GPT2" --metrics sigma_max
run_case 2 "unknown option '--label'" "metrics takes no --label" metrics --label x
run_case 2 "unknown option '--expect' (see attngeom info --help)" "info takes no --expect" info "$GPT2" --expect x.json
runj infohelp info --help
check "info --help's option list is its table's"
[ "$(sed -n '/^options:/,$p' "$T/infohelp" | grep -oE '^  --?[a-z]+' | tr -d ' ' | tr '\n' ' ')" = "--format -o --output --help " ] ||
    fail "$(sed -n '/^options:/,$p' "$T/infohelp")"

# ---- a file given to the wrong reader ---------------------------------------
D=$ROOT/tests/golden/data PNG=$ROOT/tests/data/images/rgb8_37x23.png WAV=$ROOT/tests/data/audio/chirp_1s.wav
printf 'layer,head,sigma_max\n0,0,1\n' >"$T/r.csv"
run_case 1 "$D/A4.npy is a .npy file; plot takes records (JSON/JSONL/CSV/TSV) with --kind heatmap|depth, or an attention .npy with --kind attention|spectrum|similarity|patches" \
    "plot a .npy as records" plot "$D/A4.npy" --kind heatmap --metric sigma_max -o "$T/o/f.svg"
run_case 1 "$D/h.jsonl is a JSON file; plot takes an attention .npy" "plot records as a matrix" \
    plot "$D/h.jsonl" --kind attention -o "$T/o/f.svg"
run_case 1 "$D/A4.npy is a .npy file; aggregate takes records (JSON/JSONL/CSV/TSV)" "aggregate a .npy" aggregate "$D/A4.npy"
run_case 1 "$GPT2/model.safetensors is a safetensors file; aggregate takes records" "aggregate a safetensors" \
    aggregate "$GPT2/model.safetensors"
run_case 1 "$PNG is a PNG image; compare takes records" "compare a PNG" compare "$D/h.jsonl" "$PNG"
run_case 1 "$WAV is a WAV audio file; matrix takes a .npy or .safetensors file" "matrix a WAV" matrix "$WAV"
run_case 1 "$T/r.csv is a CSV/TSV file; matrix takes a .npy or .safetensors file" "matrix records" matrix "$T/r.csv"
run_case 1 "$D/A4.npy: not a sound file: it is a .npy file" "--audio a .npy" \
    analyze "$ROOT/tests/data/models/tiny-whisper" --audio "$D/A4.npy" --frames 40
run_case 1 "$WAV: not a PNG or JPEG image: it is a WAV audio file" "--image a WAV" \
    analyze "$ROOT/tests/data/models/tiny-vit" --image "$WAV"
runj csvok aggregate "$T/r.csv" --format csv
check "a CSV of records still aggregates"
grep -q "^layer,head" "$T/csvok" || fail "$(head -c 200 "$T/csvok")"

# ---- one option table per command, four lists --------------------------------
# the table of every command: "CMD NAME VALUE|- takes|refuses" a line
"$CLI" options-doc names >"$T/names" || fail "options-doc names: exit $?"
# the commands of `attngeom --help` (its "  name ARGS  what" lines), every one with a table
"$CLI" --help | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p' | sort -u >"$T/commands"
check "options-doc names lists the $(wc -l <"$T/commands") commands of --help"
[ "$(wc -l <"$T/commands")" -ge 17 ] || fail "--help lists $(wc -l <"$T/commands") commands"
cut -d' ' -f1 "$T/names" | sort -u | cmp -s - "$T/commands" ||
    fail "$(cut -d' ' -f1 "$T/names" | sort -u | diff - "$T/commands")"
mkdir -p "$T/cwd"
# the parser takes every entry it lists (alone, as NAME VALUE and NAME=VALUE),
# refuses the refused ones with their reason, and takes no option another
# command's table has and its own lacks
while read -r cmd name value kind; do
    check "$cmd $name: the parser $kind it"
    for form in 1 2; do
        if [ "$value" = - ]; then
            [ $form = 2 ] && break
            set -- "$name"
        elif [ $form = 1 ]; then
            set -- "$name" "$value"
        else
            set -- "$name=$value"
        fi
        (cd "$T/cwd" && "$CLI" $cmd "$@" >"$T/o.opt" 2>&1 </dev/null)
        rc=$?
        if [ $kind = takes ]; then
            grep -qE "unknown option|internal error" "$T/o.opt" && fail "$*: $(head -c 300 "$T/o.opt")"
        else
            [ $rc -eq 2 ] && ! grep -q "unknown option" "$T/o.opt" && grep -qF -- "$name" "$T/o.opt" ||
                fail "$*: exit $rc, $(head -c 300 "$T/o.opt")"
        fi
    done
done <"$T/names"
for cmd in $(cut -d' ' -f1 "$T/names" | sort -u); do
    check "$cmd takes no option its table lacks"
    for name in $(cut -d' ' -f2 "$T/names" | sort -u); do
        grep -q "^$cmd $name " "$T/names" && continue
        (cd "$T/cwd" && "$CLI" $cmd "$name" >"$T/o.opt" 2>&1 </dev/null)
        rc=$?
        [ $rc -eq 2 ] && grep -qF "unknown option '$name'" "$T/o.opt" ||
            fail "$cmd $name: exit $rc, $(head -c 300 "$T/o.opt")"
    done
done
for cmd in $(cut -d' ' -f1 "$T/names" | sort -u); do
    "$CLI" $cmd --help >"$T/help.$cmd" 2>&1 || { check "$cmd --help"; fail "exit $?"; }
done
# --help, the man page and docs/cli.md: per command, exactly the entries it
# takes (a command's block: its own options, and the groups it names, each
# listed once in its own block)
PYSCRIPT='
import re
T, man, md = a[0], open(a[1], encoding="utf-8").read(), open(a[2], encoding="utf-8").read()
table = {}
for line in open(T + "/names"):
    cmd, name, value, kind = line.split()
    if kind == "takes":
        table.setdefault(cmd, []).append((name, None if value == "-" else value))
def blocks(text, start, end):
    return {m.group(1): text[m.end():text.index(end, m.end())]
            for m in re.finditer(start, text)}
bad = []
for cmd, want in table.items():
    # --help: the lines of its "options:" list, in the table order
    text = open(T + "/help." + cmd, encoding="utf-8").read()
    lines = text.split("\noptions:\n", 1)[1].split("\n\n", 1)[0].split("\n")
    got = [l.split()[0] for l in lines if l.startswith("  -")]
    if got != [n for n, v in want]:
        bad.append((cmd, "--help", got))
    for l in lines:
        if l.startswith("  -"):
            name = l.split()[0]
            v = dict(want)[name]
            if v and not l.startswith("  %s %s " % (name, v)):
                bad.append((cmd, "--help value", l))
# docs/cli.md: the own table, then the groups linked
mdb = blocks(md, r"<!-- options:([a-z-]+) -->\n", "<!-- /options -->")
def md_rows(b):
    return [tuple(m.group(1).split(" ", 1)) if " " in m.group(1) else (m.group(1), None)
            for m in re.finditer(r"^\| `([^`]+)` \|", b, re.M)]
# the man page: .TP items, and the groups named by the title of their .SS
manb = blocks(man, r"\.\\\" options:([a-z-]+)\n", ".\\\" /options")
def man_rows(b):
    b = b.replace("\\-", "-")
    rows = re.findall(r"^\.TP\n\.BI? (\S+)(?: \" (.*)\")?\n", b, re.M)
    return [(n, v or None) for n, v in rows]
def refused(b):
    """the names a block says the command refuses ("It refuses `--metrics` ...")"""
    m = re.search(r"It refuses (.*?) \(see its --help\)", b.replace("\\-", "-"), re.S)
    return set(re.findall(r"--?[A-Za-z][-A-Za-z0-9]*", m.group(1))) if m else set()
def first(rows):
    """rows without the later ones of a name (an own entry hides a group one)"""
    seen = set()
    return [(n, v) for n, v in rows if not (n in seen or seen.add(n))]
titles = {}
for m in re.finditer(r"\.SS (.+)\n\.\\\" options:group-([a-z-]+)\n", man):
    titles[m.group(1)] = m.group(2)
for cmd, want in table.items():
    # md: own rows, then the rows of every linked group, the first of a name kept
    b = mdb[cmd]
    got = first(md_rows(b) + [r for g in re.findall(r"\(#options-([a-z-]+)\)", b)
                              for r in md_rows(mdb["group-" + g])])
    got = [r for r in got if r[0] not in refused(b)]
    if sorted(got) != sorted(want):
        bad.append((cmd, "docs/cli.md", sorted(set(got) ^ set(want))))
    b = manb[cmd]
    head = b.split("\n.RS\n", 1)[0].replace("\n", " ")
    named = [titles[t] for t in titles if re.search(r"(of|,) " + re.escape(t) + r"[,.]", head)]
    got = first(man_rows(b) + [r for g in named for r in man_rows(manb["group-" + g])])
    got = [r for r in got if r[0] not in refused(b)]
    if sorted(got) != sorted(want):
        bad.append((cmd, "attngeom.1", sorted(set(got) ^ set(want))))
assert not bad, bad
'
pycheck "--help, attngeom.1 and docs/cli.md list exactly every command's table" \
    "$T" "$ROOT/docs/man/attngeom.1" "$ROOT/docs/cli.md"
check "attngeom.1 and docs/cli.md are the tables' output (make docs-options)"
cp "$ROOT/docs/man/attngeom.1" "$T/attngeom.1"
cp "$ROOT/docs/cli.md" "$T/cli.md"
"$PY" "$ROOT/scripts/options_docs.py" "$CLI" "$T/attngeom.1" "$T/cli.md" >"$T/docs.out" 2>&1 ||
    fail "$(cat "$T/docs.out")"
cmp -s "$T/attngeom.1" "$ROOT/docs/man/attngeom.1" || fail "attngeom.1: $(diff "$ROOT/docs/man/attngeom.1" "$T/attngeom.1" | head -c 400)"
cmp -s "$T/cli.md" "$ROOT/docs/cli.md" || fail "docs/cli.md: $(diff "$ROOT/docs/cli.md" "$T/cli.md" | head -c 400)"

finish
