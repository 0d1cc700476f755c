#!/bin/sh
# Regenerates tests/data/tokenize/<family>.json.xz for every folder of
# tests/data/tokenizers/ and the agreement report (run by hand, not in CI):
#   cd tools/tokenize_ref && npm install --ignore-scripts && sh regen.sh
# Needs node, /usr/bin/python3 with python3-regex. Writes only under build/
# and tests/data/tokenize/.
set -eu
cd "$(dirname "$0")"
out=../../build/tokenize_ref
rm -rf "$out/tokenizers"
/usr/bin/python3 -B materialize.py "$out/tokenizers"
node gen_families.mjs "$out/tokenizers"
/usr/bin/python3 -B make_expected.py "$@"
echo "report: $out/report.md"
