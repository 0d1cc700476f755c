#!/bin/sh
# tests/arch/loops.sh — no per-head, per-layer or selection loop outside the
# run module (issue 25: "grep finds no per-head, per-layer or selection loop
# outside src/run/"). Run from the repository root (make arch-test does).
#
# Scanned: every .c file under src/ but src/run/ (the run module), src/engine/
# and src/kernel/ (the forward pass and its attention kernel, which define
# the per-layer and per-head work) and src/base/ (the thread pool); analysis/
# (which defines the metrics) is not scanned. python/attngeom/*.py is scanned
# for the same names. A finding is one of
#   selection  a use of layer_on, head_on or selection_mask (the layer/head
#              masks a loop walks; parsing a spec is ag_selection_parse's and
#              filling the options is ag_run_options_select's, both in
#              src/run/, so their callers — the CLI's cli_selection, Python's
#              keyword arguments — are not loops);
#   call       a call of a per-head or per-layer computation:
#              ag_matrix_metrics_work, ag_stability_metrics, ag_weight_metrics,
#              ag_residual_metrics, ag_rollout_step, ag_js_distance,
#              ag_pool_run, ag_model_forward_ex, ag_model_forward_values,
#              ag_attention_layer;
#   task       a function with the ag_task_fn signature
#              (size_t, int, void *): a fan-out over heads, layers or texts.
# Each is reported as FILE:FUNCTION KIND NAME, once per function.
#
# tests/arch/loops.baseline lists the findings of the code as it was when this
# check was written. A finding not in it fails ("new loop outside src/run/");
# a line of the baseline no longer found fails too, asking to delete the line:
# the baseline only shrinks. Its goal (issue 25, plan step 21) is to hold
# nothing but what the issue allows (cmd_info.c's window_layers report).
# Never add a line for new code: put the loop in src/run/.
set -u
cd "$(dirname "$0")/../.." || exit 1
BASELINE=tests/arch/loops.baseline
T=${TMPDIR:-/tmp}/ag-loops.$$
mkdir -p "$T" || exit 1
trap 'rm -rf "$T"' EXIT INT TERM

SEL='layer_on|head_on|selection_mask'
CALL='ag_matrix_metrics_work|ag_stability_metrics|ag_weight_metrics|ag_residual_metrics|ag_rollout_step|ag_js_distance|ag_pool_run|ag_model_forward_ex|ag_model_forward_values|ag_attention_layer'

find src -name '*.c' ! -path 'src/run/*' ! -path 'src/engine/*' \
    ! -path 'src/kernel/*' ! -path 'src/base/*' | LC_ALL=C sort >"$T/c"
ls python/attngeom/*.py 2>/dev/null | LC_ALL=C sort >"$T/py"

# C: the enclosing function is the last name followed by "(" on a line that
# starts at column 0 outside braces (strings, chars and comments removed
# before braces are counted).
{
    [ -s "$T/c" ] && awk -v sel="$SEL" -v call="$CALL" '
    FNR == 1 { depth = 0; fn = "(file scope)"; incomment = 0 }
    {
        line = $0
        if (incomment) {
            if (index(line, "*/") == 0) next
            sub(/^.*\*\//, "", line); incomment = 0
        }
        gsub(/\/\*([^*]|\*+[^*\/])*\*+\//, " ", line)
        if (match(line, /\/\*/)) { line = substr(line, 1, RSTART - 1); incomment = 1 }
        gsub(/\\./, "", line)
        gsub(/"[^"]*"/, "\"\"", line)
        gsub(/\047[^\047]*\047/, "0", line)
        sub(/\/\/.*$/, "", line)
        if (depth == 0 && line ~ /^[A-Za-z_]/ && line !~ /^(typedef|struct [A-Za-z_0-9]+ *[{;]|enum|union)/ \
            && match(line, /[A-Za-z_][A-Za-z_0-9]* *\(/)) {
            name = substr(line, RSTART, RLENGTH)
            sub(/ *\($/, "", name)
            fn = name
            if (line ~ /\( *size_t +[A-Za-z_0-9]+ *, *int +[A-Za-z_0-9]+ *, *void *\* *[A-Za-z_0-9]+ *\)/ \
                && line !~ /; *$/)
                print FILENAME ":" fn " task (size_t, int, void *)"
        }
        rest = line
        while (match(rest, "(^|[^A-Za-z_0-9])(" sel ")([^A-Za-z_0-9]|$)")) {
            w = substr(rest, RSTART, RLENGTH); gsub(/[^A-Za-z_0-9]/, "", w)
            print FILENAME ":" fn " selection " w
            rest = substr(rest, RSTART + RLENGTH - 1)
        }
        rest = line
        while (match(rest, "(^|[^A-Za-z_0-9])(" call ") *\\(")) {
            w = substr(rest, RSTART, RLENGTH); gsub(/[^A-Za-z_0-9]/, "", w)
            if (!(depth == 0 && w == fn))  # not its own definition
                print FILENAME ":" fn " call " w
            rest = substr(rest, RSTART + RLENGTH)
        }
        o = line; c = line
        depth += gsub(/\{/, "", o) - gsub(/\}/, "", c)
        if (depth < 0) depth = 0
    }' $(cat "$T/c")
    # Python: the enclosing function is the last def (or "(module)").
    [ -s "$T/py" ] && awk -v sel="$SEL" -v call="$CALL" '
    FNR == 1 { fn = "(module)" }
    /^[ \t]*#/ { next }
    match($0, /^[ \t]*def [A-Za-z_0-9]+/) { n = substr($0, RSTART, RLENGTH); sub(/^[ \t]*def /, "", n); fn = n }
    {
        rest = $0
        while (match(rest, "(^|[^A-Za-z_0-9])(" sel "|" call ")([^A-Za-z_0-9]|$)")) {
            w = substr(rest, RSTART, RLENGTH); gsub(/[^A-Za-z_0-9]/, "", w)
            kind = (w ~ "^(" sel ")$") ? "selection" : "call"
            print FILENAME ":" fn " " kind " " w
            rest = substr(rest, RSTART + RLENGTH - 1)
        }
    }' $(cat "$T/py")
    true
} | LC_ALL=C sort -u >"$T/found"

sed -e 's/#.*//' -e 's/[ \t]*$//' -e '/^$/d' "$BASELINE" 2>/dev/null | LC_ALL=C sort -u >"$T/base"

LC_ALL=C comm -23 "$T/found" "$T/base" >"$T/new"
LC_ALL=C comm -13 "$T/found" "$T/base" >"$T/gone"
st=0
if [ -s "$T/new" ]; then
    echo "FAIL: per-head, per-layer or selection loops outside src/run/ that $BASELINE does not list"
    echo "  (move the loop into src/run/; never add it to the baseline):"
    sed 's/^/    /' "$T/new"
    st=1
fi
if [ -s "$T/gone" ]; then
    echo "FAIL: $BASELINE lists loops that are gone; delete these lines (the baseline only shrinks):"
    sed 's/^/    /' "$T/gone"
    st=1
fi
[ "${1:-}" = -v ] && sed 's/^/  found: /' "$T/found"
if [ $st -eq 0 ]; then
    echo "loops: ok ($(wc -l <"$T/found") known finding(s) in $(cut -d' ' -f1 "$T/found" | sort -u | wc -l) function(s), all in $BASELINE; the goal is none)"
fi
exit $st
