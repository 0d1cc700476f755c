/* test_text.c — ag_text_escape, ag_text_distance and ag_text_closest
 * (src/base/text.c) and the messages of ag_error_set:
 * bytes that are not UTF-8 and control characters written \xNN. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "attngeom.h"

static void expect_escape(const char *in, unsigned flags, const char *want)
{
    char buf[256];
    size_t n = ag_text_escape(buf, sizeof buf, in, flags);
    cr_assert_str_eq(buf, want, "escape of '%s' (flags %u)", in, flags);
    cr_assert_eq(n, strlen(want));
    char *dup = ag_text_escape_dup(in, flags);
    cr_assert_str_eq(dup, want);
    /* escaping escaped text changes nothing */
    cr_assert_eq(ag_text_escape(buf, sizeof buf, dup, flags), strlen(want));
    cr_assert_str_eq(buf, want);
    free(dup);
}

/* The invalid-byte cases give what Python's
 * bytes.decode('utf-8', 'backslashreplace') gives. */
Test(text, invalid_utf8_as_python_backslashreplace)
{
    expect_escape("plain", AG_TEXT_UTF8, "plain");
    expect_escape("", AG_TEXT_UTF8, "");
    expect_escape("caf\xe9.npy", AG_TEXT_UTF8, "caf\\xe9.npy");
    expect_escape("caf\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x98\x80", AG_TEXT_UTF8,
                  "caf\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x98\x80");
    expect_escape("\xe2\x82" "A", AG_TEXT_UTF8, "\\xe2\\x82A");      /* truncated sequence */
    expect_escape("\xc0\xaf", AG_TEXT_UTF8, "\\xc0\\xaf");           /* overlong '/' */
    expect_escape("\xed\xa0\x80", AG_TEXT_UTF8, "\\xed\\xa0\\x80");  /* surrogate U+D800 */
    expect_escape("\xf4\x90\x80\x80", AG_TEXT_UTF8, "\\xf4\\x90\\x80\\x80"); /* > U+10FFFF */
    expect_escape("\x80x\xff", AG_TEXT_UTF8, "\\x80x\\xff");
    expect_escape("a\\xffb", AG_TEXT_UTF8, "a\\xffb"); /* a backslash stays */
    /* control characters are valid UTF-8: JSON escapes them itself */
    expect_escape("a\x1b[31m\t\x7f", AG_TEXT_UTF8, "a\x1b[31m\t\x7f");
}

Test(text, control_characters)
{
    expect_escape("a\x1b[2Jb", AG_TEXT_CONTROL, "a\\x1b[2Jb");
    expect_escape("tab\tnl\ncr\r", AG_TEXT_CONTROL, "tab\\x09nl\\x0acr\\x0d");
    expect_escape("\x01\x1f\x7f", AG_TEXT_CONTROL, "\\x01\\x1f\\x7f");
    expect_escape("c1\xc2\x9b" "x\xc2\x80\xc2\x9f", AG_TEXT_CONTROL, "c1\\xc2\\x9bx\\xc2\\x80\\xc2\\x9f");
    /* U+00A0 and up are text */
    expect_escape("\xc2\xa0\xc3\xa9\xe2\x80\x94", AG_TEXT_CONTROL, "\xc2\xa0\xc3\xa9\xe2\x80\x94");
    expect_escape("caf\xe9\x1b", AG_TEXT_CONTROL, "caf\\xe9\\x1b");
}

/* The output is cut between characters and escapes, never inside one. */
Test(text, truncation)
{
    char buf[8];
    memset(buf, 'X', sizeof buf);
    cr_assert_eq(ag_text_escape(buf, 6, "ab\x1b" "cd", AG_TEXT_CONTROL), 8);
    cr_assert_str_eq(buf, "ab"); /* "\x1b" does not fit in the 3 bytes left */
    cr_assert_eq(ag_text_escape(buf, 3, "a\xc3\xa9", AG_TEXT_UTF8), 3);
    cr_assert_str_eq(buf, "a");
    cr_assert_eq(ag_text_escape(buf, 1, "abc", AG_TEXT_UTF8), 3);
    cr_assert_str_eq(buf, "");
    cr_assert_eq(ag_text_escape(NULL, 0, "\xff\xff", AG_TEXT_UTF8), 8);
}

/* A library message is one line of printable text whatever the names in it
 * hold, and escaping it again (as the CLI does) changes nothing. */
Test(text, error_messages_are_escaped)
{
    ag_error err = {0};
    cr_assert_eq(ag_error_set(&err, AG_EFORMAT, "%s: key '%s'", "f\xff.npy", "a\x1b]0;x\x07\nb"),
                 AG_EFORMAT);
    cr_assert_str_eq(err.message, "f\\xff.npy: key 'a\\x1b]0;x\\x07\\x0ab'");
    /* a long message is cut at an escape boundary */
    char name[600];
    memset(name, '\x1b', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    ag_error_set(&err, AG_EINVAL, "%s", name);
    size_t n = strlen(err.message);
    cr_assert(n % 4 == 0 && n + 4 >= sizeof err.message, "length %zu", n);
    cr_assert(strncmp(err.message + n - 4, "\\x1b", 4) == 0);
}

/* Damerau–Levenshtein distances worked by hand. */
Test(text, distance_hand_worked)
{
    cr_assert_eq(ag_text_distance("", ""), 0);
    cr_assert_eq(ag_text_distance("", "abc"), 3);           /* three insertions */
    cr_assert_eq(ag_text_distance("abc", ""), 3);
    cr_assert_eq(ag_text_distance("kitten", "sitting"), 3); /* k→s, e→i, +g */
    cr_assert_eq(ag_text_distance("sigma_max", "sigma_mx"), 1);  /* deletion */
    cr_assert_eq(ag_text_distance("matrix", "matirx"), 1);  /* one transposition, ri→ir */
    cr_assert_eq(ag_text_distance("analyze", "anaylze"), 1);
    cr_assert_eq(ag_text_distance("--format", "--fromat"), 1);
    /* Levenshtein alone would count the transposition as 2 substitutions */
    cr_assert_eq(ag_text_distance("ab", "ba"), 1);
    /* unrestricted: "ca" → "ac" (transpose) → "abc" (insert b) = 2; the
     * restricted optimal-string-alignment variant gives 3 */
    cr_assert_eq(ag_text_distance("ca", "abc"), 2);
    cr_assert_eq(ag_text_distance("flaw", "lawn"), 2);     /* -f, +n */
    cr_assert_eq(ag_text_distance("abc", "xyz"), 3);
}

Test(text, closest_within_two_ties_by_order)
{
    const char *c[] = {"sigma_max", "sigma_gap", NULL, "stable_rank"};
    cr_assert_eq(ag_text_closest("sigma_mx", c, 4, 2), 0);
    /* "sigma_map" is 1 from both sigma_max and sigma_gap: the first */
    cr_assert_eq(ag_text_closest("sigma_map", c, 4, 2), 0);
    cr_assert_eq(ag_text_closest("sigma_gp", c, 4, 2), 1);
    cr_assert_eq(ag_text_closest("stabel_rank", c, 4, 2), 3);
    cr_assert_eq(ag_text_closest("entropy", c, 4, 2), -1); /* nothing within 2 */
    cr_assert_eq(ag_text_closest("sigmamx", c, 4, 1), -1); /* 2 (two insertions) > max 1 */
    cr_assert_eq(ag_text_closest("sigmamx", c, 4, 2), 0);
}
