"""The indexer's markup pass (tse_scrapy/rules/text/markuppass): its typed copy (``markuppass.pyx``,
built by ``make``) gives what its Python path gives (pagetext's and pagefields' patterns): on a table
worked out by hand, and on hostile markup of every script."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.twins import python_path as python_path_of
from tse_scrapy import compiled
from tse_scrapy.rules.text import markuppass, pagefields, pagetext

python_path = python_path_of(markuppass)
MODULES = pytest.mark.parametrize("module", [markuppass, python_path], ids=["typed", "python"])


def test_make_compiled_the_typed_copy():
    assert compiled.loaded_compiled(markuppass), "run make: it compiles markuppass.pyx"


# markup, limit, folding: its text
TEXTS = [
    ("<p>Hello <b>World</b></p>", 100, False, "Hello World"),
    ("<a href=x>link</a>text", 100, False, "link text"),
    ("a&amp;b &lt;tag&gt; &#65;&#x42; &notit; &amp", 100, False, "a&b <tag> AB \u00acit; &"),
    ("x&nbsp;y\x00z\x85w\u2028v", 100, False, "x y z w v"),
    ("a&#1;b a&#x81;b &#0; &#65\tB", 100, False, "ab a b \ufffd A B"),
    ("a&#;b &#xZ; & &&amp;", 100, False, "a&#;b &#xZ; & &&"),
    ("one<two <3 three", 100, False, "one<two <3 three"),
    ("one <b>two", 100, False, "one two"),
    ("a<\u017fpan>b", 100, True, "a b"),
    ("a<\u017fpan>b", 100, False, "a<\u017fpan>b"),
    ("  \t<i> </i>  ", 100, False, ""),
    ("alpha beta gamma", 10, False, "alpha beta"),
    ("alpha beta gamma", 12, False, "alpha beta"),
    ("abcdefghij", 4, False, "abcd"),
    ("alpha", 0, False, ""),
    ("\u65e5\u672c<br>\U0001d400 \ud800x", 100, False, "\u65e5\u672c \U0001d400 \ud800x"),
    ("x &#" + "1" * 5000 + "; y &#" + "0" * 5000 + "65;z", 100, False, "x \ufffd y Az"),
]


@MODULES
@pytest.mark.parametrize(("markup", "limit", "folding", "text"), TEXTS)
def test_cleaned_text(module, markup, limit, folding, text):
    assert module.cleaned_text(markup, limit, folding) == text


FAR = "x" * (markuppass.ELEMENT_CHARACTERS + 1)
# a page's text: its links (href as written, anchor text)
LINKS = [
    ('<a href="/x">X</a>', [("/x", "X")]),
    ("<A HREF='y' class=c>Y</A >", [("y", "Y")]),
    ("<a href=z>Z<b>!</b></a>", [("z", "Z<b>!</b>")]),
    ('<a name=n href = "q>r">Q</a>', [("q>r", "Q")]),
    ('<a hreflang=en href="h">H</a>', [("h", "H")]),
    ('<a href="unclosed>U</a>', [('"unclosed', "U")]),
    ('<a href="a<b">T</a>', []),
    ("<a class=x>no href</a><a href=/b>B</a>", [("/b", "B")]),
    ("<a href=/first href=/second>F</a>", [("/first", "F")]),
    ('<a\thref=""></a>', [("", "")]),
    ("<abbr href=/no>A</abbr><a href=/c>C</a\n>", [("/c", "C")]),
    (f"<a href=/far>{FAR}</a><a href=/near>N</a>", [("/near", "N")]),
    ("<a href=/open>never closed", []),
    ("<a href=/1>1<a href=/2>2</a>", [("/1", "1<a href=/2>2")]),
]


@MODULES
@pytest.mark.parametrize(("text", "links"), LINKS)
def test_links(module, text, links):
    assert list(module.links(text)) == links


# Markup's pieces that take each way through the passes, mixed with any character at all.
PIECES = [
    *"<>/!?\"'=&#;-x X09aAfF \t\n\f\r\x0b\x00\x1c\x1f\x7f\x85\x9f\xa0\u2028\u3000\u017f\u212a\u0130\u0131\ud800",
    *["<a", "<A ", " href", "HREF", "=", "</a>", "</A  >", "<a href=", "<a href='", '<a href="', "<b>", "</b>"],
    *["&amp;", "&amp", "&#", "&#x", "&#65", "&#x1F600;", "&#1;", "&#x81;", "&#99999999999;", "&not", "&nbsp;"],
    *["<!--", "-->", "<![CDATA[", "]]>", "<template>", "</template>", "<script>", "</script>", "<title>"],
    *["</", "</scr", "<script>if (a</b) x = '</p>'</script>", "<noscript>", "<!DOCTYPE html>", "<?xml ?>"],
    *["<nav>", "</nav>", '<div role="navigation">', "</div>", "<STYLE>p{}</STYLE >", "</title>", "<h1>"],
    *["\u65e5\u672c", "\u0416", "\u0627", "\U0001d400", "\u00e9", "&notin;", "&NotEqualTilde;", "&quot"],
]
markups = st.lists(st.one_of(st.sampled_from(PIECES), st.characters()), max_size=60).map("".join)


@settings(max_examples=1500, deadline=None)
@given(markups, st.one_of(st.integers(-1, 40), st.just(2_000_000)), st.booleans())
def test_typed_cleaned_text_as_the_python_path(markup, limit, folding):
    assert markuppass.cleaned_text(markup, limit, folding) == python_path.cleaned_text(markup, limit, folding)


@settings(max_examples=1500, deadline=None)
@given(markups)
def test_typed_links_as_the_python_path(text):
    assert list(markuppass.links(text)) == list(python_path.links(text))


@settings(max_examples=500, deadline=None)
@given(markups)
def test_a_pages_text_and_links_with_either_path(text):
    # The whole of what the indexer reads of a page: its shown markup and visible text, its title and
    # its links (the resolved and analyzed anchors), the same through either path.
    page = f"<html><title>t</title><body>{text}</body>".encode("utf-8", "surrogatepass")
    url = "http://127.0.0.1/a/b.html"
    typed = pagefields.page_text(page), pagefields.anchors(text, url, "en")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pagetext, "markuppass", python_path)
        patch.setattr(pagefields, "markuppass", python_path)
        assert (pagefields.page_text(page), pagefields.anchors(text, url, "en")) == typed
