# tests/cli/lib.sh — the set-up and helpers the scripts of tests/cli share.
# Not a test of its own (the Makefile's cli-test runs every other
# tests/cli/*.sh): a script run as `sh tests/cli/NAME.sh path/to/attngeom`
# from the repository root begins with
#     . "$(dirname "$0")/lib.sh"
#     ag_setup "$@"
# and ends with `finish`.

# ag_setup CLI : SCRIPT (the script's file name, for messages); CLI made
# absolute (exit 1 unless it is executable); ROOT (the folder it runs in: the
# repository root) and GPT2 (models/tiny-gpt2 there); PY (the python3 that
# has numpy); T, a new temporary folder removed at exit; the counters FAILS
# and N, and DESC, the check under way.
ag_setup() {
    SCRIPT=$(basename "$0")
    CLI=${1:?usage: sh tests/cli/$SCRIPT path/to/attngeom}
    case $CLI in /*) ;; *) CLI=$(pwd)/$CLI ;; esac
    if [ ! -x "$CLI" ]; then
        echo "$SCRIPT: $CLI is not executable" >&2
        exit 1
    fi
    ROOT=$(pwd)
    GPT2=$ROOT/models/tiny-gpt2
    PY=/usr/bin/python3
    T=$(mktemp -d "${TMPDIR:-/tmp}/ag_${SCRIPT%.sh}.XXXXXX") || exit 1
    trap 'rm -rf "$T"' EXIT
    trap 'exit 1' INT TERM HUP
    FAILS=0
    N=0
    DESC=
}

# need FILE... : exit 1 unless every FILE exists
need() {
    for f in "$@"; do
        [ -f "$f" ] || { echo "$SCRIPT: $f missing (run from the repository root)" >&2; exit 1; }
    done
}

# fail MESSAGE... : count a failure of the check DESC and print it
fail() {
    FAILS=$((FAILS + 1))
    printf 'FAIL [%s]: %s\n' "$DESC" "$*"
}

# check DESC [CMD...] : count a check named DESC; with CMD, the check is
# that CMD succeeds. Without, the lines that follow judge it through fail.
check() {
    DESC=$1
    shift
    N=$((N + 1))
    [ $# -eq 0 ] || "$@" || fail "$*"
}

# pycheck DESC ARGS... : the Python assertions in $PYSCRIPT, with a = ARGS,
# numpy as np, load(p) (a JSON file) and records(p) (its "records"), after
# the script's own helpers in $PYLIB; a failure prints Python's last lines.
pycheck() {
    DESC=$1
    shift
    N=$((N + 1))
    out=$("$PY" - "$@" 2>&1 <<EOF
import json, math, sys
import numpy as np
a = sys.argv[1:]
def load(p):
    with open(p) as f:
        return json.load(f)
def records(p):
    return load(p)["records"]
${PYLIB:-}
$PYSCRIPT
EOF
)
    [ $? -eq 0 ] || fail "$(printf '%s' "$out" | tail -n 3)"
}

# runj NAME ARGS... : run the CLI, stdout to $T/NAME, must exit 0
runj() {
    name=$1
    shift
    "$CLI" "$@" >"$T/$name" 2>"$T/$name.err" </dev/null
    rc=$?
    if [ $rc -ne 0 ]; then
        DESC="run $name"
        N=$((N + 1))
        fail "exit $rc from attngeom $*: $(head -c 300 "$T/$name.err")"
    fi
}

# judge_error WANT NEEDLES [LABEL] : the run that just ended with status $rc,
# its stdout in $T/stdout and stderr in $T/stderr, failed as it should: exit
# WANT, stdout empty, exactly one non-blank stderr line containing one of
# the |-separated NEEDLES (none when empty), nothing left in $T/o (but for
# the file named by $KEEP, which must still read "keep"). LABEL prefixes the
# failure messages.
judge_error() {
    want=$1 needles=$2 label=${3:-}
    [ $rc -eq "$want" ] || fail "${label}exit status $rc, expected $want; stderr: $(head -c 300 "$T/stderr")"
    [ -s "$T/stdout" ] && fail "${label}stdout not empty: $(head -c 200 "$T/stdout")"
    lines=$(wc -l <"$T/stderr")
    last=$(tail -c 1 "$T/stderr" | od -An -tx1 | tr -d ' \n')
    if [ "$lines" -ne 1 ] || [ "$last" != 0a ]; then
        fail "${label}stderr has $lines line(s), expected exactly 1: $(head -c 300 "$T/stderr")"
    elif [ -z "$(tr -d ' \t\n' <"$T/stderr")" ]; then
        fail "${label}stderr line is empty"
    fi
    if [ -n "$needles" ]; then
        found=no
        oldifs=$IFS
        IFS='|'
        for nd in $needles; do
            grep -qF -- "$nd" "$T/stderr" && found=yes
        done
        IFS=$oldifs
        [ $found = yes ] || fail "${label}stderr does not name '$needles': $(head -c 300 "$T/stderr")"
    fi
    if [ -n "${KEEP:-}" ]; then
        [ "$(cat "$T/o/$KEEP")" = keep ] || fail "${label}$KEEP was replaced"
        [ "$(ls -A "$T/o")" = "$KEEP" ] || fail "${label}left behind: $(ls -A "$T/o" | tr '\n' ' ')"
    else
        [ -n "$(ls -A "$T/o")" ] && fail "${label}left behind: $(ls -A "$T/o" | tr '\n' ' ')"
    fi
}

# run_case WANT NEEDLES DESC ARGS... : the CLI with ARGS fails as
# judge_error says (the case's output files point into $T/o). With KEEP set,
# $T/o/$KEEP is made first, holding "keep": an -o naming it must stay so.
run_case() {
    want=$1 needles=$2 DESC=$3
    shift 3
    N=$((N + 1))
    rm -rf "$T/o"
    mkdir "$T/o"
    [ -n "${KEEP:-}" ] && echo keep >"$T/o/$KEEP"
    "$CLI" "$@" >"$T/stdout" 2>"$T/stderr" </dev/null
    rc=$?
    judge_error "$want" "$needles"
}

# smallest_limit LO HI CMD... : the smallest `ulimit -v` (KB, within 50 of
# it, between LO and HI) under which CMD succeeds, found by bisection;
# empty when it fails even under HI.
smallest_limit() {
    lo=$1 hi=$2
    shift 2
    (ulimit -v "$hi" && exec timeout -k 5 60 "$@") >/dev/null 2>&1 </dev/null || return 0
    while [ $((hi - lo)) -gt 50 ]; do
        mid=$(((lo + hi) / 2))
        if (ulimit -v "$mid" && exec timeout -k 5 60 "$@") >/dev/null 2>&1 </dev/null; then
            hi=$mid
        else
            lo=$mid
        fi
    done
    echo "$hi"
}

# oom_line FILE : FILE (a failed run's stderr) is one line naming out of
# memory, as attngeom words it
oom_line() {
    [ "$(wc -l <"$1")" -eq 1 ] || fail "exit 1 with $(wc -l <"$1") stderr lines: $(head -c 300 "$1")"
    grep -q "^attngeom: .*out of memory" "$1" || fail "exit 1 without 'out of memory': $(head -c 200 "$1")"
}

# finish : the summary line; exit 1 if any check failed
finish() {
    if [ "$FAILS" -ne 0 ]; then
        echo "$SCRIPT: $FAILS of $N checks failed"
        exit 1
    fi
    echo "$SCRIPT: ok ($N checks)"
}
