#!/bin/sh
# tests/cli/abi.sh CLI — the ABI rule of include/attngeom/core.h from the
# outside: a program compiled against the public headers alone (no src/)
# and linked with the shared library never needs the size of a record or a
# selection nor AG_M_COUNT (poisoned below), and measures what `attngeom
# matrix` measures, value for value; a program that asks for those sizes
# or layouts does not compile; the CLI (attngeom-mpi too), examples and
# benchmarks include no private header. Run from the repository root after `make build`.
. "$(dirname "$0")/lib.sh"
ag_setup "$@"
B=$(dirname "$CLI")
CC=${CC:-cc}
need "$B/libattngeom.so" include/attngeom.h

# Every metric of the matrix commands on A, by names counted at run time.
cat > "$T/prog.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>

#include <attngeom.h>
#pragma GCC poison AG_M_COUNT

int main(int argc, char **argv)
{
    (void)argv; /* any argument: write the records as JSON */
    size_t n = 5;
    double A[25] = {0}; /* (n, n) causal, row i uniform over keys 0..i */
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j <= i; j++)
            A[i * n + j] = 1.0 / (double)(i + 1);
    ag_error *err = ag_error_new();
    ag_metric_set *sel = NULL;
    ag_record_list *recs = ag_record_list_new();
    ag_record *rec = recs && err ? ag_record_list_add(recs, err) : NULL;
    int status = rec ? ag_metric_set_new(AG_FAMILIES_MATRIX, "all", &sel, err) : AG_ENOMEM;
    ag_matrix_options opt = AG_MATRIX_OPTIONS_DEFAULT;
    if (status == AG_OK) {
        ag_record_init(rec, 0, 0, n, n);
        status = ag_matrix_metrics_ex(A, n, n, sel, &opt, rec, err);
    }
    int selected = 0;
    for (int m = 0; status == AG_OK && m < ag_metric_count(); m++)
        selected += ag_metric_set_has(sel, m);
    if (status == AG_OK && argc > 1) {
        ag_output_meta meta = AG_OUTPUT_META_DEFAULT;
        meta.command = "abi";
        status = ag_records_write(stdout, AG_FORMAT_JSON, recs, sel, &meta);
    } else if (status == AG_OK) {
        printf("%d\n", selected);
    } else {
        fprintf(stderr, "prog: %s\n", ag_error_message(err));
    }
    ag_metric_set_free(sel);
    ag_record_list_free(recs);
    ag_error_free(err);
    return status == AG_OK ? 0 : 1;
}
EOF
check "a program on the public headers compiles and links"
# Under make sanitize the library is an ASan build: the program links the
# sanitizers' runtime too, which must come first.
SAN=
[ -n "${AG_SANITIZE:-}" ] && SAN="-fsanitize=address,undefined,float-cast-overflow"
"$CC" -std=c11 -Wall -Wextra -Werror $SAN -I"$ROOT/include" "$T/prog.c" -o "$T/prog" \
    -L"$B" -lattngeom -Wl,-rpath,"$B" 2> "$T/cc.err" || { fail "$(head -5 "$T/cc.err")"; finish; }

check "it measures what attngeom matrix measures"
# one BLAS thread, as the CLI runs it (core.h, "BLAS threads"): the same bits
OPENBLAS_NUM_THREADS=1 "$T/prog" json > "$T/prog.json" || fail "prog exited $?"
"$PY" -c "
import numpy as np
n = 5
A = np.zeros((n, n))
for i in range(n):
    A[i, :i + 1] = 1.0 / (i + 1)
np.save('$T/A.npy', A)
"
"$CLI" matrix "$T/A.npy" --metrics all --format json > "$T/cli.json" || fail "matrix exited $?"
"$PY" -c "
import json, sys
p = json.load(open(sys.argv[1]))['records'][0]
c = json.load(open(sys.argv[2]))['records'][0]
c.pop('model')
assert p == c, (p, c)
assert len(p) == 4 + int(sys.argv[3]), len(p)
" "$T/prog.json" "$T/cli.json" "$("$T/prog")" || fail "records differ"

# What the rule forbids: the size of an opaque type, its fields.
bad() {
    printf '#include <attngeom.h>\nint main(void) { %s }\n' "$2" > "$T/bad.c"
    check "$1 does not compile"
    "$CC" -std=c11 -I"$ROOT/include" -c "$T/bad.c" -o "$T/bad.o" 2> /dev/null &&
        fail "compiled: $2"
}
bad "sizeof(ag_record)" "return (int)sizeof(ag_record);"
bad "a record on the stack" "ag_record r; (void)r; return 0;"
bad "a selection's fields" "ag_metric_set *s = 0; return s->on[0];"
bad "sizeof(ag_record_list)" "return (int)sizeof(ag_record_list);"

check "user programs include no private header"
# the library's own headers: src/ and analysis/ but the CLI's
find "$ROOT/src" "$ROOT/analysis" -name '*.h' ! -path "$ROOT/src/cli/*" ! -path "$ROOT/src/mpi/*" -exec basename {} \; |
    sed 's/\./\\./g; s|^|[/"]|; s|$|"|' > "$T/private.pat"
grep -Hn '#include' "$ROOT"/src/cli/*.[ch] "$ROOT"/src/mpi/*.[ch] "$ROOT"/examples/*.c "$ROOT"/bench/*.c |
    grep -f "$T/private.pat" > "$T/private"
[ -s "$T/private.pat" ] || fail "no private header found to look for"
[ -s "$T/private" ] && fail "$(cat "$T/private")"

check "every public struct is named in core.h's ABI rule"
# struct typedefs: "typedef struct {" ... "} ag_x;", "typedef struct ag_x ag_x;"
awk '/^typedef struct ag_[a-z0-9_]* ag_[a-z0-9_]*;/ { sub(";.*", "", $4); print $4 }
     /^typedef struct *\{/ { open = 1 }
     /^typedef enum/ { open = 0 }
     open && /^} ag_[a-z0-9_]*;/ { sub("^} ", ""); sub(";.*", ""); print; open = 0 }' \
    "$ROOT"/include/attngeom/*.h | sort -u > "$T/structs"
sed -n '/ABI rule/,/check the rule/p' "$ROOT/include/attngeom/core.h" > "$T/rule"
[ "$(wc -l < "$T/structs")" -gt 30 ] || fail "found only $(wc -l < "$T/structs") structs"
while read -r s; do
    grep -q "\b$s\b" "$T/rule" || echo "$s" >> "$T/unlisted"
done < "$T/structs"
[ -s "$T/unlisted" ] && fail "not in the rule: $(tr '\n' ' ' < "$T/unlisted")"

finish
