import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tse_scrapy.rules.text.pagetext import page_title, snippet, visible_text

E = "\u2026"  # the ellipsis that marks a cut snippet

TITLES = [
    (b"<html><head><title>Home</title></head><body>x</body></html>", "Home"),
    (b"<title>Fish &amp; Chips &#8211; &quot;Best&quot; &#x41;</title>", 'Fish & Chips \u2013 "Best" A'),
    (b"<title>A <b>bold</b> <i>new</i>title</title>", "A bold new title"),
    (b"<title>\n   Line one\n\tline two  \r\n</title>", "Line one line two"),
    (b"<title>A&nbsp;&nbsp;B \xc2\xa0 C</title>", "A B C"),
    (b'<TITLE lang="en">Upper</TITLE>', "Upper"),
    (b"<TiTlE>Mixed</tItLe >", "Mixed"),
    (b"<title\n>Newline in the tag</title>", "Newline in the tag"),
    (b"<html><body><h1>No title</h1></body></html>", ""),
    (b"<title></title><p>body</p>", ""),
    (b"<title> &nbsp; \n</title>", ""),
    (b"", ""),
    (b"<title>Unclosed <b>title</b> and the page", "Unclosed title and the page"),
    (b"<title>First</title><title>Second</title>", "First"),
    (b"<!-- <title>Old</title> --><title>New</title>", "New"),
    (b'<script>document.write("<title>No</title>")</script><title>Yes</title>', "Yes"),
    (b"<noscript><title>No</title></noscript><title>Yes</title>", "Yes"),
    (b"<titles>Not it</titles><title>Real</title>", "Real"),
    (b"<title>a</titlex>b</title>", "a b"),
    (b"<title>1 < 2 > 0</title>", "1 < 2 > 0"),
    (b"<title>&lt;b&gt; is text</title>", "<b> is text"),
    (b"<title>Tag <b never closed</title>", "Tag"),
    (b"<title>caf\xc3\xa9</title>", "caf\xe9"),
    (b'<meta charset="iso-8859-1"><title>caf\xe9</title>', "caf\xe9"),
    # Bytes that are not UTF-8, declared nowhere: read as a browser in a Western locale reads them (windows-1252).
    (b"<title>bad \xff\xfe bytes</title>", "bad \xff\xfe bytes"),
    (b"<title>\x81\x8d bytes no code page has</title>", "\ufffd\ufffd bytes no code page has"),
    (b"<title>nul\x00byte</title>", "nul byte"),
    ("\ufeff<title>UTF-16</title>".encode("utf-16-le"), "UTF-16"),
    # a title of 80 words is cut at the last word that fits in 298 characters, then " …"
    (b"<title>" + b" ".join([b"word"] * 80) + b"</title>", " ".join(["word"] * 59) + " " + E),
    (b"<title>" + b"x" * 400 + b"</title>", "x" * 298 + " " + E),
    # </title> is looked for in the next 1,000 characters only
    (b"<title>" + b" " * 998 + b"ab</title>cd", "ab"),
    (b"<title>" + b" " * 999 + b"ab</title>cd", "a"),
    (b"<title>" + b" " * 998 + b"abcd", "ab"),
]


@pytest.mark.parametrize("body, title", TITLES)
def test_page_title(body, title):
    assert page_title(body) == title


VISIBLE = [
    (
        b'<!DOCTYPE html><html><head><title>The title</title><meta charset="utf-8"><link rel="x" href="y">'
        b"<style>p { color: red }</style><script>var x = 1;</script></head>"
        b"<body><p>Hello, world!</p></body></html>",
        "Hello, world!",
    ),
    (b"<p>one</p><p>two</p>", "one two"),
    (b"a<b>b</b>c", "a b c"),  # a tag separates words, as for the indexer
    (b"<p>Fish &amp; chips &lt;3 &eacute;t&eacute; &#x263A; &copy</p>", "Fish & chips <3 \xe9t\xe9 \u263a \xa9"),
    (b"A&nbsp;&nbsp;B&#160;C\xc2\xa0D", "A B C D"),
    (b"  lots \n\t of\r\n   space\x0c ", "lots of space"),
    (b"<!-- hidden --><p>shown</p><!-- multi\nline <p>comment</p> -->", "shown"),
    (b"a <!-- x > y ---> b <!-- c --!> d", "a b d"),
    (b"a <!--> b <!---> c", "a b c"),
    (b"<noscript>Enable JavaScript</noscript>text", "text"),
    (b"<template><p>later</p></template>now", "now"),
    (b'<SCRIPT type="text/javascript">if (a < b && c > d) {}</SCRIPT>after', "after"),
    (b'<script>var s = "</p><p>not text";</script>after', "after"),
    (b"<script>x</scriptx> still script</script >after", "after"),
    (b"<style>a{}</style\n><p>ok", "ok"),
    (b"<scripts>visible</scripts>", "visible"),
    (b"before<script>unclosed script", "before"),
    (b"before<!-- unclosed comment", "before"),
    (b"<title>Not text</title>Body", "Body"),
    (b"<p>After an unclosed title</p><title>" + b"t" * 1000 + b" shown", "After an unclosed title shown"),
    # A title whose end is past those 1,000 characters is all the title's (its last words were text).
    (b"<title>" + b"word " * 300 + b"last</title><p>Body</p>", "Body"),
    (b"<title>" + b"t" * 1000 + b"</title>Body", "Body"),
    (b"<title>" + b"t" * 999 + b"</title>Body", "Body"),
    (b"<title>" + b"w " * 600 + b"<b>x</b></TITLE >Body<title>again</title>", "Body"),
    (b"no body here, <i>at all</i>", "no body here, at all"),
    # text a page puts in its head is shown, as browsers move it to the body
    (b"<head>stray<title>T</title></head><body>B</body>", "stray B"),
    (b'text <a href="x"', "text"),
    (b"text </p", "text"),
    (b"x < 3 and y > 2", "x < 3 and y > 2"),
    (b"<![CDATA[x]]>y<?php echo 1 ?>z", "y z"),
    (b"a\x00b <p>c\x00</p>\x01d\x7f", "a b c d"),
    (b"caf\xe9 ok \xff", "caf\xe9 ok \xff"),  # not UTF-8, declared nowhere: windows-1252
    (b'<meta charset="iso-8859-1"><p>caf\xe9</p>', "caf\xe9"),
    (
        b'<meta http-equiv="Content-Type" content="text/html; charset=windows-1251"><p>'
        + "\u041f\u0440\u0438\u0432\u0435\u0442".encode("cp1251")
        + b"</p>",
        "\u041f\u0440\u0438\u0432\u0435\u0442",
    ),
    ("\ufeff<p>hi</p>".encode("utf-16-le"), "hi"),
    (b"", ""),
    (b"</p><br/>", ""),
]


@pytest.mark.parametrize("body, text", VISIBLE)
def test_visible_text(body, text):
    assert visible_text(body) == text


LIMITED = [
    (b"one two three", 13, "one two three"),
    (b"one two three", 12, "one two"),
    (b"one two three", 8, "one two"),
    (b"one two three", 7, "one two"),
    (b"one two three", 6, "one"),
    (b"abcdefghij klm", 4, "abcd"),  # a single word longer than the limit is cut inside
    (b"one two", 0, ""),
    (b"one two", -1, ""),
    (b"a&amp;b c", 3, "a&b"),  # the limit counts decoded characters
    (b"<p>one</p>   <p>two</p>", 5, "one"),
    # the first 118 characters clean to 9, "aaaa bbbb"; the word goes on after them
    (b" " * 109 + b"aaaa bbbb&amp;cccc", 9, "aaaa"),
    # the visible text starts long after the characters first cleaned
    (b"<b></b>" * 10_000 + b"word " * 10, 9, "word word"),
    (b"x" * 130 + b"&amp;" + b"y" * 10, 140, "x" * 130 + "&" + "y" * 9),
]


@pytest.mark.parametrize("body, limit, text", LIMITED)
def test_visible_text_limit(body, limit, text):
    assert visible_text(body, limit) == text


def terms(count, first=1):
    return " ".join(f"t{i}" for i in range(first, first + count))


SNIPPETS = [
    ("the cat sat", ["cat"], 30, "the cat sat", [(4, 7)]),
    ("the dog sat", ["cat"], 30, "the dog sat", []),
    (terms(40), ["cat"], 5, "t1 t2 t3 t4 t5 " + E, []),
    ("a b c", [], 2, "a b " + E, []),
    ("cat " + terms(10), ["cat"], 4, "cat t1 t2 t3 " + E, [(0, 3)]),
    # 6 terms starting 6 // 3 = 2 before the occurrence
    (terms(10) + " cat " + terms(10, 11), ["cat"], 6, E + " t9 t10 cat t11 t12 t13 " + E, [(9, 12)]),
    # near the end, the window shifts back to hold 5 terms
    (terms(10) + " cat", ["cat"], 5, E + " t7 t8 t9 t10 cat", [(15, 18)]),
    (terms(10) + " cat t11", ["cat"], 5, E + " t8 t9 t10 cat t11", [(12, 15)]),
    # near the start, no cut before
    ("t1 cat " + terms(10, 2), ["cat"], 4, "t1 cat t2 t3 " + E, [(3, 6)]),
    ("a cat b", ["cat"], 1, E + " cat " + E, [(2, 5)]),
    ("The CAT and the Cat", ["cat"], 30, "The CAT and the Cat", [(4, 7), (16, 19)]),
    (
        "concatenate cat's (cat) cats scat cat1 caf\xe9",
        ["cat"],
        30,
        "concatenate cat's (cat) cats scat cat1 caf\xe9",
        [(12, 15), (19, 22), (34, 37)],
    ),
    ("un caf\xe9 noir", ["caf"], 30, "un caf\xe9 noir", [(3, 6)]),
    ("red fish blue fish", ["fish", "blue"], 30, "red fish blue fish", [(4, 8), (9, 13), (14, 18)]),
    ("fishfish fish-fish", ["fish"], 30, "fishfish fish-fish", [(9, 13), (14, 18)]),
    # the first occurrence of any word places the window
    (terms(5) + " dog " + terms(10, 6) + " cat", ["cat", "dog"], 4, E + " t5 dog t6 t7 " + E, [(5, 8)]),
    # the occurrence inside a term at the window's start: the whole term is shown
    ("t1 t2 t3 (cat) t4", ["cat"], 2, E + " (cat) t4", [(3, 6)]),
    ("a\n\ncat\tb  c", ["cat"], 30, "a cat b c", [(2, 5)]),
    ("it's cat", ["it's", "cat", ""], 30, "it's cat", [(5, 8)]),  # a word with a non-letter never occurs
    ("a Cat", ["CAT"], 30, "a Cat", [(2, 5)]),
    ("\u212aelvin kelvin", ["kelvin"], 30, "\u212aelvin kelvin", [(7, 13)]),  # the Kelvin sign is no k
    ("", ["cat"], 30, "", []),
    (" \n\t ", ["cat"], 30, "", []),
    ("cat", ["cat"], 0, "", []),
]


@pytest.mark.parametrize("text, words, size, shown, ranges", SNIPPETS)
def test_snippet(text, words, size, shown, ranges):
    assert snippet(text, words, size) == (shown, ranges)


def test_snippet_default_size_shows_ten_terms_before():
    shown, ranges = snippet(terms(50) + " cat " + terms(50, 51), ["cat"])
    assert shown == E + " " + terms(10, 41) + " cat " + terms(19, 51) + " " + E
    assert ranges == [(len(E + " " + terms(10, 41) + " "), len(E + " " + terms(10, 41) + " cat"))]


def synthetic_page(size):
    """A page with the parts of real ones: head, scripts, styles, comments, links, entities."""
    parts = [b'<!DOCTYPE html><html><head><meta charset="utf-8"><title>Big &amp; page</title>']
    parts.append(b"<style>" + b"p { color: red }\n" * 2000 + b"</style>")
    parts.append(b"<script>" + b'var a = 1 < 2 ? "<b>" : 3;\n' * 2000 + b"</script></head><body>")
    block = (
        b'<div class="nav"><a href="/x/1.html" title="t">The caf\xc3\xa9 &amp; the na\xc3\xafve fox</a></div>\n'
        b"<p>The quick brown fox jumps over the lazy dog&nbsp;again and again, r\xc3\xa9sum\xc3\xa9.</p>\n"
        b"<!-- a comment between blocks -->\n"
        b"<script>function f() { return 1 < 2; }</script>\n"
    )
    parts.append(block * (size // len(block)))
    parts.append(b"</body></html>")
    return b"".join(parts)


PATHOLOGICAL = {
    "synthetic": synthetic_page(1_000_000),
    "no tags": b"word " * 200_000,
    "tags only": b"<b>" * 330_000,
    "title attribute spam": b"<title " * 140_000 + b">",
    "title spam": b"<title>" * 140_000,
    "comment spam": b"<!--" * 250_000,
    "script spam": b"<script>" * 125_000,
    "unclosed tags": b"<a " * 330_000,
    "lt spam": b"< " * 500_000,
    "entity spam": b"&amp;" * 200_000,
    "nul and invalid UTF-8": b"\0\xff" * 500_000,
    "lt in a script": b"<script>" + b"a</scrip<" * 110_000 + b"</script>",
}


@pytest.mark.parametrize("name", sorted(PATHOLOGICAL))
def test_a_hostile_megabyte_page_gives_bounded_results(name):
    # Each takes 1 to 50 ms (bench/RESULTS.md measures the indexer over real pages).
    body = PATHOLOGICAL[name]
    text = visible_text(body)
    assert len(text) <= 20_000 and "  " not in text
    assert len(page_title(body)) <= 300
    shown, ranges = snippet(text, ["fox", "zebra", "word", "amp"])
    assert len(shown) <= 404 and len(shown.split()) <= 32
    check_ranges(shown, {"fox", "zebra", "word", "amp"}, ranges)


def test_a_snippet_of_huge_terms_is_cut_around_its_first_word():
    text = "x" * 1000 + " " + "y" * 300 + " cat " + "z" * 1000
    shown, ranges = snippet(text, ["cat"])
    # 100 characters before "cat" (99 y and a space), 400 in all
    assert shown == E + " " + "y" * 99 + " cat " + "z" * 296 + " " + E
    assert ranges == [(102, 105)] and shown[102:105] == "cat"


def test_the_synthetic_page():
    body = synthetic_page(100_000)
    assert page_title(body) == "Big & page"
    text = visible_text(body)
    assert text.startswith("The caf\xe9 & the na\xefve fox The quick brown fox jumps over the lazy dog again and")
    shown, ranges = snippet(text, ["lazy"], 12)
    assert shown == E + " fox jumps over the lazy dog again and again, r\xe9sum\xe9. The caf\xe9 " + E
    assert ranges == [(21, 25)]
    shown, ranges = snippet(text, ["dog"], 6)
    assert shown == E + " the lazy dog again and again, " + E
    assert ranges == [(11, 14)]


# --- properties ---------------------------------------------------------------

# Page fragments and the text a reader sees of each.
SHOWN_FRAGMENTS = [
    (b"word", "word"),
    (b"Caf\xc3\xa9", "Caf\xe9"),
    (b" ", " "),
    (b"\n\t", " "),
    (b"&amp;", "&"),
    (b"&lt;", "<"),
    (b"&nbsp;", " "),
    (b"&#65;", "A"),
    (b"a < b", "a < b"),
    (b">", ">"),
    (b"\0", " "),
    (b"<p>", " "),
    (b"</div>", " "),
    (b'<a href="x.html">', " "),
    (b"<br/>", " "),
    (b"<!DOCTYPE html>", " "),
]
HIDDEN_FRAGMENTS = [
    b"<script>SECRET < 1 </p></script>",
    b"<SCRIPT type=x>SECRET</script >",
    b"<style>SECRET</style>",
    b"<!-- SECRET <p> -->",
    b"<noscript>SECRET</noscript>",
    b"<template><p>SECRET</p></template>",
    b"<title>SECRET</title>",
    b"<head><title>SECRET</title><style>SECRET</style></head>",
]
pages = st.lists(st.sampled_from(SHOWN_FRAGMENTS + [(hidden, " ") for hidden in HIDDEN_FRAGMENTS]))


@given(pages)
def test_visible_text_is_the_text_outside_tags_and_hidden_elements(fragments):
    body = b"".join(page for page, _ in fragments)
    shown = " ".join("".join(text for _, text in fragments).split())
    assert visible_text(body, 10**9) == shown
    assert "SECRET" not in visible_text(body)


MARKUP_PIECES = [b"<", b">", b"</", b"<!--", b"-->", b"--!>", b"-", b"!", b"<?", b"<!", b"/", b'"', b"'", b"="]
ELEMENT_PIECES = [b"<script", b"</script", b"<style>", b"</style>", b"<title", b"<title>", b"</title>"]
ELEMENT_PIECES += [b"<noscript>", b"<template>", b"<head>", b"<body>", b"<meta charset=latin-1>"]
TEXT_PIECES = [b"&", b"#", b";", b"amp", b"&nbsp;", b"&#x", b" ", b"\n", b"\r", b"\0", b"a", b"Bc", b"caf\xc3\xa9"]
TEXT_PIECES += [b"\xc3", b"\xa9", b"\xff", b"\xe2\x80\xa8"]
hostile_bytes = st.one_of(
    st.binary(max_size=2000),
    st.lists(st.sampled_from(MARKUP_PIECES + ELEMENT_PIECES + TEXT_PIECES), max_size=60).map(b"".join),
)


@given(hostile_bytes, st.integers(-5, 200))
def test_visible_text_is_single_spaced_and_within_the_limit(body, limit):
    text = visible_text(body, limit)
    assert len(text) <= max(limit, 0)
    assert text == " ".join(text.split())  # no leading, trailing or double spaces, only " "
    assert not re.search(r"[\x00-\x08\x0e-\x1f\x7f-\x9f]", text)


@given(hostile_bytes, st.integers(1, 200))
def test_visible_text_is_cut_at_a_word_boundary(body, limit):
    whole = visible_text(body, 10**9)
    text = visible_text(body, limit)
    if len(whole) <= limit:
        assert text == whole
    elif " " in whole[: limit + 1]:
        assert text == whole[: whole.rfind(" ", 0, limit + 1)]  # the longest run of whole words that fits
    else:
        assert text == whole[:limit]  # a first word longer than the limit is cut inside


@given(hostile_bytes)
def test_page_title_is_short_and_single_spaced(body):
    title = page_title(body)
    assert len(title) <= 300
    assert title == " ".join(title.split())


# At most 60 parts: the title stays within its 300 characters (and its 1,000 to </title>).
title_texts = st.lists(
    st.sampled_from(["word", "Caf\xe9", " ", "\n", "&amp;", "<b>", "</b>", "a < b", "&#65;"]), max_size=60
)


@given(title_texts, st.sampled_from(["title", "TITLE", "Title"]), st.sampled_from(["", " lang=en"]))
def test_page_title_is_the_title_elements_text(parts, name, attributes):
    decoded = {"&amp;": "&", "<b>": " ", "</b>": " ", "&#65;": "A"}
    expected = " ".join("".join(decoded.get(part, part) for part in parts).split())
    body = f"<html><head><{name}{attributes}>{''.join(parts)}</{name}></head><body>Body</body></html>".encode()
    assert page_title(body) == expected


query_words = st.lists(st.text("abcdeABC", min_size=1, max_size=3).map(str.lower), max_size=4)
snippet_texts = st.lists(
    st.sampled_from(["a", "ab", "abc", "Abc", "b", "cab", "x-ab", "(abc)", "ab's", "caf\xe9", "1ab2", " ", "\n", "  "]),
    max_size=80,
).map(" ".join)


def check_ranges(shown, words, ranges):
    """Sorted, non-overlapping ranges of whole letter runs that are words."""
    previous_end = 0
    for start, end in ranges:
        assert previous_end <= start < end <= len(shown)
        assert shown[start:end].lower() in words
        assert not re.fullmatch("[A-Za-z]", shown[start - 1 : start])
        assert not re.fullmatch("[A-Za-z]", shown[end : end + 1])
        previous_end = end


@given(st.text(), st.lists(st.text()), st.integers(-2, 40))
def test_snippet_never_raises_and_its_ranges_are_valid(text, words, size):
    shown, ranges = snippet(text, words, size)
    letter_words = {word.lower() for word in words if re.fullmatch("[A-Za-z]+", word)}
    check_ranges(shown, letter_words, ranges)
    assert len(shown.split()) <= max(size, 0) + 2
    if size > 0 and any(run.lower() in letter_words for run in re.findall("[A-Za-z]+", text)):
        assert ranges


@given(snippet_texts, query_words, st.integers(1, 40))
def test_snippet_is_a_window_of_the_texts_terms(text, words, size):
    shown, ranges = snippet(text, words, size)
    check_ranges(shown, set(words), ranges)
    all_terms = text.split()
    cut_before, cut_after = shown.startswith(E + " "), shown.endswith(" " + E)
    window = shown.split()[1 if cut_before else 0 : -1 if cut_after else None]
    assert len(window) == min(size, len(all_terms))
    assert any(
        all_terms[first : first + len(window)] == window
        and (first > 0) == cut_before
        and (first + len(window) < len(all_terms)) == cut_after
        for first in range(len(all_terms) - len(window) + 1)
    )
    # every occurrence in the snippet is highlighted
    highlighted = [found.span() for found in re.finditer("[A-Za-z]+", shown) if found.group().lower() in words]
    assert ranges == highlighted
    occurs = any(run.lower() in words for run in re.findall("[A-Za-z]+", text))
    assert bool(ranges) == occurs


# Control characters are no more visible than whitespace: made spaces, whether the page holds them as
# they are or as character references; characters that only look empty stay.
@pytest.mark.parametrize(
    "body, expected",
    [
        (b"<p>a\x01b</p>", "a b"),
        (b"<p>nul\x00l \x7fdel</p>", "nul l del"),
        (b"<p>x\xc2\x85y</p>", "x y"),  # NEL, a C1 control and whitespace
        (b"<p>a&#x9f;b</p>", "a\u0178b"),  # a reference to 0x9F is windows-1252's: a letter
        (b"<p>so\xc2\xadft zero\xe2\x80\x8bwidth</p>", "so\u00adft zero\u200bwidth"),  # unprintable, kept
        (b"<p>tab\there\n\xe2\x80\xa8sep</p>", "tab here sep"),
    ],
)
def test_control_characters_are_spaces(body, expected):
    assert visible_text(body) == expected


_CONTROLS_AND_SPACES = list("ab &;#x19\x00\x01\x1b\x1c\x7f\x85\x9f\xa0\xad\u200b\u2028<>p")


@given(st.text(alphabet=st.sampled_from(_CONTROLS_AND_SPACES), max_size=60))
def test_control_characters_are_spaces_property(text):
    # Written plainly: every control character made a space, then whitespace collapsed.
    shown = visible_text(text.encode("utf-8"), 10_000)
    expected = visible_text(re.sub(r"[\x00-\x08\x0e-\x1b\x7f-\x9f]", " ", text).encode("utf-8"), 10_000)
    if "&" not in text:  # a reference may name a control character, made a space after it is decoded
        assert shown == expected
    assert not re.search(r"[\x00-\x08\x0e-\x1b\x7f-\x9f]", shown)
