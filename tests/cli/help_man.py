"""tests/cli/help_man.py MAN HELPDIR CMD... — used by tests/cli/help.sh.

--help and attngeom.1 agree per command: every option a command's --help
names is in its entry of the man page's COMMANDS section or in a shared
OPTIONS section that applies to it ("Options of every command"; "Options
of the record commands" for the commands that print records; "Inputs of
the model commands" for those that run a model), and every option its own
entry names is in its --help. Prints each disagreement; exit 1 if any.
"""
import re
import sys

man_path, helpdir, cmds = sys.argv[1], sys.argv[2], sys.argv[3:]
OPT = r"--?[A-Za-z][-A-Za-z0-9]*"


def help_opts(text):
    text = re.sub(r"`[^`]*`", "", text)  # another command's words
    return {m.group(2) for m in re.finditer(r"(^|[ \[(|,/])(" + OPT + ")", text, re.M)}


def man_opts(text):
    """The options named on the entry's macro lines (.B, .BI, .BR)."""
    found = set()
    for line in text.split("\n"):
        if re.match(r"\.B[IR]? ", line):
            # a quoted phrase that begins with a word is another command's
            # (.BR "tokenize --format json")
            line = re.sub(r"\"[a-z][^\"]*\"", "", line)
            found |= set(re.findall(r"(?:^|[ \"])(" + OPT + ")", line[3:]))
    return found


man = open(man_path, encoding="utf-8").read().replace("\\-", "-").replace("\\fR, \\fP", " ")
commands = man[man.index(".SH COMMANDS"):man.index(".SH OPTIONS")]
shared = man[man.index(".SH OPTIONS"):man.index(".SH MPI")]
# a command's entry: from ".TP\n.B[I] "name ..." to the next command's
starts = [(m.start(), m.group(1)) for m in
          re.finditer(r"\n\.TP\n\.B[IR]? \"?([a-z]+)\b", commands)]
entries = {}
for k, (pos, name) in enumerate(starts):
    end = starts[k + 1][0] if k + 1 < len(starts) else len(commands)
    body = commands[pos:end]
    # only the command entries (their name is a command), not option items
    if name in cmds:
        entries[name] = entries.get(name, "") + body
sections = {t.split("\n", 1)[0]: t for t in shared.split(".SS ")[1:]}
every = man_opts(sections["Options of every command"])
record = man_opts(sections["Options of the record commands"])
inputs = man_opts(sections["Inputs of the model commands"])
RECORD = {"matrix", "analyze", "layer", "weights", "residual", "rollout"}
# -j is described with the record commands and taken by these as well
JOBS = RECORD | {"attention", "similarity", "aggregate"}
record -= {"-j"}
# the table options are described with the record commands, "(also
# similarity, aggregate and compare)"
TABLE = {"--sort", "--columns", "--caption", "--tex-label", "--digits"}
TABLED = {"similarity", "aggregate", "compare"}
MODEL = {"attention", "analyze", "residual", "rollout", "similarity", "tokenize"}
bad = 0
for c in cmds:
    h = help_opts(open(f"{helpdir}/help.{c}", encoding="utf-8").read())
    if c not in entries:
        print(f"{c}: no entry in {man_path}'s COMMANDS")
        bad += 1
        continue
    own = man_opts(entries[c])
    avail = own | every | (record if c in RECORD else set()) | (inputs if c in MODEL else set())
    avail |= {"-j"} if c in JOBS else set()
    avail |= TABLE & record if c in TABLED else set()
    missing = sorted(h - avail)
    extra = sorted(own - h)
    if missing:
        print(f"{c}: --help names {missing}, which attngeom.1 does not give it")
        bad += 1
    if extra:
        print(f"{c}: attngeom.1 gives it {extra}, which its --help does not name")
        bad += 1
sys.exit(1 if bad else 0)
