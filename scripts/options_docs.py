"""scripts/options_docs.py ATTNGEOM FILE... — put every command's option list
in the man page and docs/cli.md (issue 26, item 6; `make docs-options`).

`ATTNGEOM options-doc man|md` prints, from the option tables the parser and
--help use (src/cli/options.c), one block per command and per shared group,
each between markers: roff `.\\" options:ID` ... `.\\" /options`, Markdown
`<!-- options:ID -->` ... `<!-- /options -->`. In each FILE (a .1 takes the
roff blocks, anything else the Markdown ones) every marked region is
replaced by the block of its ID; a FILE must hold every ID once, and no ID
the tool does not print. tests/cli/help.sh runs this on copies and fails
when the committed files differ: the four lists then cannot drift apart.
"""
import re
import subprocess
import sys

MARK = {"man": (r'\.\\" options:([a-z-]+)\n', '.\\" /options\n'),
        "md": (r"<!-- options:([a-z-]+) -->\n", "<!-- /options -->\n")}


def blocks(tool, kind):
    out = subprocess.run([tool, "options-doc", kind], check=True, capture_output=True,
                         text=True).stdout
    start, end = MARK[kind]
    found = {}
    for m in re.finditer(start, out):
        stop = out.index(end, m.end()) + len(end)
        found[m.group(1)] = out[m.start():stop]
    return found


def update(path, found, kind):
    text = open(path, encoding="utf-8").read()
    start, end = MARK[kind]
    pieces, pos, seen = [], 0, []
    for m in re.finditer(start, text):
        if m.start() < pos:
            continue
        stop = text.find(end, m.end())
        if stop < 0:
            sys.exit(f"{path}: options:{m.group(1)} has no end marker")
        if m.group(1) not in found:
            sys.exit(f"{path}: options:{m.group(1)}: no such command or group")
        pieces += [text[pos:m.start()], found[m.group(1)]]
        seen.append(m.group(1))
        pos = stop + len(end)
    pieces.append(text[pos:])
    missing = sorted(set(found) - set(seen))
    twice = sorted({i for i in seen if seen.count(i) > 1})
    if missing or twice:
        sys.exit(f"{path}: option lists missing {missing}, given twice {twice}")
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(pieces))


def main():
    tool, files = sys.argv[1], sys.argv[2:]
    for path in files:
        kind = "man" if path.endswith(".1") else "md"
        update(path, blocks(tool, kind), kind)


main()
