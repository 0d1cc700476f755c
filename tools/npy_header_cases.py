#!/usr/bin/python3
"""Regenerate tests/io/npy_header_cases.h: .npy headers with the verdict NumPy
gives on them (np.load of a file holding the header and its data), for the
header grammar test in tests/io/test_npy.c. Run with Debian 12's python3-numpy
(1.24) from the repository root:

    /usr/bin/python3 tools/npy_header_cases.py > tests/io/npy_header_cases.h
"""
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "ref"))
from check_npy_header import npy_file, numpy_verdict  # noqa: E402


def d(body):
    return "{" + body + "}"


B = "'descr': '<f8', 'fortran_order': False"
S = "'shape': (2,)"
# (versions, header, what[, float64 elements of data: 2 unless given])
cases = [
    ((1, 2, 3), d(B + ", " + S + ", ") + "    \n", "numpy's own layout: trailing comma, spaces, \\n"),
    ((1, 3), d(B + ", " + S), "no padding, no newline"),
    ((1, 3), d("'shape': (2,), 'fortran_order': False, 'descr': '<f8'") + "\n", "any key order"),
    ((1, 3), '{"descr": "<f8", "fortran_order": False, "shape": (2,)}\n', "double quotes"),
    ((1, 3), "{'descr':'<f8','fortran_order':False,'shape':(2,)}", "no blanks"),
    ((1, 3), "{ 'descr' : '<f8' , 'fortran_order' : False , 'shape' : ( 2 , ) , }\n", "blanks around every token"),
    ((1, 3), "{'descr': '<f8',\n 'fortran_order': False,\r\n\t'shape': (2,)}\n", "line breaks inside the dict"),
    ((1, 3), "{'descr': '<f8', # the dtype\n 'fortran_order': False, 'shape': (2,)} # end\n", "comments"),
    ((1, 3), "{'descr': '<f8', \\\n'fortran_order': False, 'shape': (2,)}\n", "backslash-newline inside the dict"),
    ((1, 3), "  {" + B + ", " + S + "}\n", "leading spaces"),
    ((1, 3), "\n{" + B + ", " + S + "}\n", "a blank first line"),
    ((1, 3), "\n {" + B + ", " + S + "}\n", "an indented dict on a later line"),
    ((1, 3), "({" + B + ", " + S + "})\n", "the dict in parentheses"),
    ((1, 3), "({" + B + ", " + S + "},)\n", "a tuple holding the dict"),
    ((1, 3), d(B + ", " + S) + "\n\n   \n", "blank lines after"),
    ((1, 3), d(B + ", " + S) + "\n   ", "a last line of blanks without \\n"),
    ((1, 3), d(B + ", " + S) + "\n x", "text on a later line"),
    ((1, 3), d(B + ", " + S) + " x\n", "text after the dict"),
    ((1, 3), d(B + ", " + S) + ";\n", "a semicolon after the dict"),
    ((1, 3), d(B + ", " + S + ",,"), "two trailing commas"),
    ((1, 3), "{,}", "a lone comma"),
    ((1, 3), "", "empty header"),
    ((1, 3), "   \n", "blank header"),
    ((1, 3), "\x0b" + d(B + ", " + S), "vertical tab"),
    # keys
    ((1, 3), d(B), "no 'shape'"),
    ((1, 3), d(B + ", " + S + ", 'extra': 1"), "an extra key"),
    ((1, 3), d("'descr': '<f4', " + B + ", " + S), "'descr' twice: the last wins"),
    ((1, 3), d("'descr': [1, {2: 3}], " + B + ", " + S), "an earlier duplicate may be any literal"),
    ((1, 3), d("'descr': {[1]: 2}, " + B + ", " + S), "an unhashable key in a discarded value"),
    ((1, 3), d("'descr': {1, (2, 3)}, " + B + ", " + S), "a set in a discarded value"),
    ((1, 3), d("'descr': set(), " + B + ", " + S), "set()"),
    ((1, 3), d("'descr': set(1), " + B + ", " + S), "set(1) is a call"),
    ((1, 3), d("'descr': ..., " + B + ", " + S), "Ellipsis"),
    ((1, 3), d("'descr': None, " + B + ", " + S), "None"),
    ((1, 3), d("'descr': 1+2j, " + B + ", " + S), "a complex sum"),
    ((1, 3), d("'descr': -1.5-2j, " + B + ", " + S), "a signed complex sum"),
    ((1, 3), d("'descr': 1+2, " + B + ", " + S), "an integer sum"),
    ((1, 3), d("'descr': 1+-2j, " + B + ", " + S), "a sign on the imaginary part"),
    ((1, 3), d("'descr': 1j+2j, " + B + ", " + S), "two imaginary parts"),
    ((1, 3), d("'descr': 2*3, " + B + ", " + S), "a product"),
    ((1, 3), d("'descr': x, " + B + ", " + S), "a name"),
    ((1, 3), d("'descr': f'<f8', 'fortran_order': False, " + S), "an f-string"),
    ((1, 3), d("descr: '<f8', 'fortran_order': False, " + S), "a bare key"),
    ((1, 3), d("b'descr': '<f8', 'fortran_order': False, " + S), "a bytes key"),
    ((1, 3), d("u'descr': '<f8', 'fortran_order': False, " + S), "u prefix"),
    ((1, 3), d("r'descr': R'<f8', 'fortran_order': False, " + S), "r prefixes"),
    ((1, 3), d("'de' \"scr\": '<f8', 'fortran_order': False, " + S), "implicit concatenation"),
    ((1, 3), d("'de' b'scr': '<f8', 'fortran_order': False, " + S), "str and bytes concatenated"),
    ((1, 3), d("'''descr''': \"\"\"<f8\"\"\", 'fortran_order': False, " + S), "triple quotes"),
    ((1, 3), d("'''de\nscr''': '<f8', 'fortran_order': False, " + S), "a line break in a triple-quoted key"),
    ((1, 3), d("'de\nscr': '<f8', 'fortran_order': False, " + S), "a line break in a quoted string"),
    ((1, 3), d("'de\\\nscr': '<f8', 'fortran_order': False, " + S), "backslash-newline inside a string"),
    ((1, 3), d("'descr: '<f8', 'fortran_order': False, " + S), "an unterminated string"),
    # escapes
    ((1, 3), d("'descr': '<\\f8', 'fortran_order': False, " + S), "'<\\f8' is '<' formfeed '8'"),
    ((1, 3), d("'de\\scr': '<f8', 'fortran_order': False, " + S), "'de\\scr' keeps its backslash"),
    ((1, 3), d("'descr': '<\\x668', 'fortran_order': False, " + S), "\\x66 is f"),
    ((1, 3), d("'descr': '<\\1468', 'fortran_order': False, " + S), "octal \\146 is f"),
    ((1, 3), d("'descr': '<\\u00668', 'fortran_order': False, " + S), "\\u0066 is f"),
    ((1, 3), d("'descr': '<\\U000000668', 'fortran_order': False, " + S), "\\U00000066 is f"),
    ((1, 3), d("'descr': '<\\N{LATIN SMALL LETTER F}8', 'fortran_order': False, " + S), "\\N{...} is f"),
    ((1, 3), d("'descr': '<\\N{latin small letter f}8', 'fortran_order': False, " + S), "\\N{...} ignores case"),
    ((1, 3), d("'descr': '<\\N{NO SUCH NAME}8', 'fortran_order': False, " + S), "\\N{unknown name}"),
    ((1, 3), d("'descr': b'<\\x668', 'fortran_order': False, " + S), "a bytes descr"),
    ((1, 3), d("'descr': r'<\\x668', 'fortran_order': False, " + S), "no escapes in a raw string"),
    ((1, 3), d("'descr': '<\\x6', 'fortran_order': False, " + S), "a truncated \\x escape"),
    ((1, 3), d("'descr': '<f8\\0', 'fortran_order': False, " + S), "a NUL escape in the descr"),
    ((1, 3), d("'descr': '\\<f8', 'fortran_order': False, " + S), "\\< is no escape"),
    ((1, 3), d("'d\\x65scr': '<f8', 'fortran_order': False, " + S), "\\x65 in a key"),
    # fortran_order
    ((1, 3), d("'descr': '<f8', 'fortran_order': True, " + S), "True"),
    ((1, 3), d("'descr': '<f8', 'fortran_order': (False), " + S), "(False)"),
    ((1, 3), d("'descr': '<f8', 'fortran_order': 0, " + S), "0 is no bool"),
    ((1, 3), d("'descr': '<f8', 'fortran_order': false, " + S), "false"),
    ((1, 3), d("'descr': '<f8', 'fortran_order': Falsey, " + S), "Falsey"),
    # shape
    ((1, 3), d(B + ", 'shape': (2)"), "(2) is an int"),
    ((1, 3), d(B + ", 'shape': [2]"), "a list"),
    ((1, 3), d(B + ", 'shape': ((2,))"), "((2,))"),
    ((1, 3), d(B + ", 'shape': ((2),)"), "((2),)"),
    ((1, 3), d(B + ", 'shape': (2,,)"), "(2,,)"),
    ((1, 3), d(B + ", 'shape': (,)"), "(,)"),
    ((1, 3), d(B + ", 'shape': (1, 2)"), "(1, 2)"),
    ((1, 3), d(B + ", 'shape': (1, 2,)"), "(1, 2,)"),
    ((1, 3), d(B + ", 'shape': (2.0,)"), "a float"),
    ((1, 3), d(B + ", 'shape': (2j,)"), "an imaginary"),
    ((1, 3), d(B + ", 'shape': (True, 2)"), "a bool"),
    ((1, 3), d(B + ", 'shape': ('2',)"), "a string"),
    ((1, 3), d(B + ", 'shape': (+2,)"), "+2"),
    ((1, 3), d(B + ", 'shape': (--2,)"), "--2"),
    ((1, 3), d(B + ", 'shape': (-0, 2)"), "-0", 0),
    ((1, 3), d(B + ", 'shape': (0x2,)"), "hex"),
    ((1, 3), d(B + ", 'shape': (0o2,)"), "octal"),
    ((1, 3), d(B + ", 'shape': (0b1_0,)"), "binary with _"),
    ((1, 3), d(B + ", 'shape': (0_0_1, 2)"), "0_0_1 has a leading zero"),
    ((1, 3), d(B + ", 'shape': (02,)"), "02"),
    ((1, 3), d(B + ", 'shape': (00, 2)"), "00", 0),
    ((1, 3), d(B + ", 'shape': (2_,)"), "2_"),
    ((1, 3), d(B + ", 'shape': (2L,)"), "Python 2's 2L"),
    ((1, 2, 3), d(B + ", 'shape': (2 L,)"), "2 L"),
    ((1, 3), d(B + ", 'shape': (0x2L,)"), "0x2L"),
    ((1, 3), d(B + ", 'shape': (2l,)"), "2l"),
    ((1, 3), d(B + ", 'shape': (2LL,)"), "2LL"),
    ((1, 3), d(B + ", 'shape': (2\nL,)"), "L on the next line"),
    ((1, 3), d(B + ", 'shape': (1" + "0" * 4300 + ", 2)"), "a 4301-digit integer"),
    ((1, 3), d(B + ", 'shape': (" + "0" * 5000 + ", 2)"), "5000 zeros", 0),
    ((1, 3), d(B + ", 'shape': ()"), "()", 1),
    # nesting
    ((3,), d("'descr': " + "[" * 199 + "]" * 199 + ", " + B + ", " + S), "200 nested brackets"),
    ((3,), d("'descr': " + "[" * 200 + "]" * 200 + ", " + B + ", " + S), "201 nested brackets"),
    # whitespace quirks of numpy's two paths
    ((1, 3), "\f {" + B + ", " + S + "}\n", "form feed, space, dict"),
    ((1, 3), "\n\f{" + B + ", " + S + "}\n", "form feed before the dict on a later line"),
    ((1, 3), d(B + ", " + S) + "\n\t", "a tab on a last line without \\n"),
    ((1, 3), d(B + ", " + S) + "\n\f", "a form feed on a last line without \\n"),
    # text encodings
    ((1, 3), d(B + ", " + S) + " # caf\xe9\n", "non-ASCII in a comment"),
    ((1, 3), d("'descr': 'caf\xe9', " + B + ", " + S), "non-ASCII in a discarded string"),
    ((1, 3), d("'descr': b'caf\xe9', " + B + ", " + S), "non-ASCII in a bytes literal"),
    ((1, 3), d(B + ", " + S) + "\xa0", "a no-break space after the dict"),
]
raw_cases = [  # (version, bytes)
    (3, b"{'descr': '<f8', 'fortran_order': False, 'shape': (2,)} # \xff\n", "a version 3.0 header that is not UTF-8"),
    (1, b"{'descr': '<f8', 'fortran_order': False, 'shape': (2,)} # \xff\n", "a latin-1 comment in version 1.0"),
]


def c_string(b):
    """b as the body of a C string literal."""
    out = ""
    for c in b:
        if c == 0x5C:
            out += "\\\\"
        elif c == 0x22:
            out += '\\"'
        elif c == 0x0A:
            out += "\\n"
        elif 0x20 <= c < 0x7F:
            out += chr(c)
        else:
            out += "\\%03o" % c
    return out


def main():
    rows = []
    for c in cases:
        for v in c[0]:
            rows.append((v, c[1].encode("latin1" if v < 3 else "utf8"), c[2], c[3] if len(c) > 3 else 2))
    rows += [(v, hb, why, 2) for v, hb, why in raw_cases]
    path = os.path.join(tempfile.mkdtemp(prefix="npy_cases."), "case.npy")
    print("/* npy_header_cases.h — made by tools/npy_header_cases.py with NumPy %s:" % np.__version__)
    print(" * {version, float64 elements of data, NumPy reads it, header, what}. */")
    for v, hb, why, nelem in rows:
        body = c_string(hb)
        if len(body) > 300:  # tests/io/test_npy.c builds the long ones (header_grammar_limits)
            continue
        data = np.arange(nelem, dtype="<f8").tobytes()
        with open(path, "wb") as f:
            f.write(npy_file(hb, v, data))
        verdict = numpy_verdict(path, hb, v, len(data))[0]
        assert verdict in ("read", "refused"), (verdict, hb)  # a case both readers judge
        print('    {%d, %d, %d, "%s",\n     "%s"},' % (v, nelem, verdict == "read", body,
                                                  why.replace("\\", "\\\\").replace('"', '\\"')))
    os.remove(path)
    os.rmdir(os.path.dirname(path))


if __name__ == "__main__":
    main()
