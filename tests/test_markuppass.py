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


@settings(max_examples=400, deadline=None)
@given(markups, st.one_of(st.integers(-1, 40), st.just(2_000_000)), st.booleans())
def test_typed_cleaned_text_as_the_python_path(markup, limit, folding):
    assert markuppass.cleaned_text(markup, limit, folding) == python_path.cleaned_text(markup, limit, folding)


@settings(max_examples=400, deadline=None)
@given(markups)
def test_typed_links_as_the_python_path(text):
    assert list(markuppass.links(text)) == list(python_path.links(text))


@settings(max_examples=150, deadline=None)
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


# markup (pagetext._markup's): the [start, end) spans of its navigation elements, worked out by hand
NAVIGATIONS = [
    ("<nav>a</nav>b", [(0, 12)]),
    ("x<NAV>a<nav>b</nav>c</Nav >d", [(1, 27)]),  # nested, any case, an end tag's space
    ('<div role="navigation">a<div>b</div></div>c', [(0, 42)]),
    ("<ul role='NaviGation menu'>x</ul>", [(0, 33)]),  # ASCII case-insensitive, a role list's first
    ("<ul role='menu navigation'>x</ul>", []),
    ("<p title=' role=\"navigation\"'>x</p>", []),  # a value that reads like a role is none
    ('<a title="<nav>">x</a>y', []),  # a "<nav" inside another tag is that tag's
    ('<nav>a<b title="</nav>">c</nav>d', [(0, 31)]),  # nor does an end tag there count
    ("<nav>a", []),  # never closed: text
    ("<nav>a</nav><nav>b", [(0, 12)]),
    ("<nav/>x</nav>", [(0, 13)]),
    ("<nav><div role=navigation>x</div></nav>", [(0, 39)]),  # one inside the last is that one's
    ("a =navigation <p>x</p>", []),
    ("<div role=navigation>a</d\u0131v>b", [(0, 28)]),  # end tags' letters that fold to ASCII (re.I)
    ("<mark role=navigation>m</mar\u212a>", [(0, 30)]),
    ("<section role=navigation>s</\u017fection>", [(0, 36)]),
    ("<d\u0131v role=navigation>a</div>", []),  # a start tag's name is ASCII
    ("".join(f"<n{i} role=navigation></n{i}>" for i in range(1, 10)), [(25 * i, 25 * i + 25) for i in range(8)]),
]


@MODULES
@pytest.mark.parametrize(("markup", "spans"), NAVIGATIONS)
def test_navigation_spans(module, markup, spans):
    assert module.navigation_spans(markup) == spans


NAVIGATION_PIECES = [
    *["<nav", "<NaV", "<nav>", "</nav>", "</NAV >", "<nav/>", "<div", "<DIV", "</div>", "</d\u0131v>", "</D\u0130V>"],
    *[" role=", " ROLE = ", "'", '"', "navigation", "NAVIGATION", "naVigatioN", " menu", "\tnavigation"],
    *["<section role=navigation>", "</\u017fection>", "<mark role=navigation>", "</mar\u212a>", "<ul role='", "</ul>"],
    *["=navigation", "= 'navigation'>", "<p title='", "<a", "<!--", "<template>", "</template>", "<\u0131", "<\u017f>"],
    *["<n1 role=navigation>", "</n1>", "<n2 role=navigation>", "</n2>", "<n9 role=navigation>", "</n9>"],
]
navigation_markups = st.lists(
    st.one_of(st.sampled_from(NAVIGATION_PIECES), st.sampled_from(PIECES), st.characters()), max_size=80
).map("".join)


@settings(max_examples=700, deadline=None)
@given(navigation_markups)
def test_typed_navigation_spans_as_the_python_path(markup):
    assert markuppass.navigation_spans(markup) == python_path.navigation_spans(markup)


@pytest.mark.parametrize(
    ("others", "lt", "gt"),
    [
        ("\u00e9\u00bc", "", ""),
        ("\u043c\u3d3d\u013d\u013e", "\u3c3c", "\u3e3e"),
        ("\u043c\u3c3c\U00103d3e", "\U0001003c", "\U00013e00"),
    ],
    ids=["one-byte", "two-byte", "four-byte"],
)
def test_navigation_spans_of_a_long_page_in_every_kind_of_string(others, lt, gt):
    # memchr reads a two- and a four-byte string's bytes: a code point holding the byte of "<", "=" or
    # ">" (*lt* before "nav ", *gt* inside a start tag before its role) is none of them.
    page = "".join(
        f"<p>{others}{lt}nav {others}</p>"
        f"<div title={others}{gt} id=d{i} role=navigation>{others}<div>{others}</div></div>"
        for i in range(300)
    )
    spans = markuppass.navigation_spans(page)
    assert spans == python_path.navigation_spans(page)
    assert len(spans) == 300 and all(page[start:end].endswith(f"{others}</div></div>") for start, end in spans)


# text, folding: the [start, end) spans of what pagetext._markup drops whole, worked out by hand
DROPPED = [
    ("a<!--c-->b", False, [(1, 9)]),
    ("<p title='<!--'>x<!--y-->", False, [(17, 25)]),  # a "<!--" in a tag is the tag's
    ("<p <!--x-->", False, []),
    ("<SCRIPT>a<b</SCRIPT >c", False, [(0, 21)]),
    ("<scripts>x</scripts>", False, []),
    ("<\u017fcript>x</\u017fcript>y", True, [(0, 18)]),  # letters that fold to ASCII, where the text holds them
    ("<\u017fcript>x</script>y", True, [(0, 19)]),  # (its end tag repeats its name: a backreference, no folding)
    ("<\u017fcript>x</script>y", False, []),
    ("<t\u0131tle>t</title>x", True, [(0, 16)]),
    ("<t\u0131tle>t</title>x", False, []),
    ("<style>a</style><template><p>b</template>c", False, [(0, 16), (16, 41)]),
    ("<noscript>n", False, [(0, 11)]),  # never closed: to the end
    ("<titles>x<title>x</title>", False, [(9, 25)]),
    ("<!->x<!-->", False, [(5, 10)]),
]


@MODULES
@pytest.mark.parametrize(("text", "folding", "spans"), DROPPED)
def test_dropped_spans(module, text, folding, spans):
    assert module.dropped_spans(text, folding, pagetext._DROPPED_WHOLE.match) == spans


DROPPED_PIECES = [
    *["<\u017fcript>", "<SCR\u0130PT>", "<scr\u0131pt ", "</script>", "<t\u0131tle>", "</TITLE>", "<\u017fTYLE>"],
    *[
        "<noscript",
        "<NOSCRIPT>",
        "</noscript>",
        "<template ",
        "<TEMPLATE>",
        "<title/>",
        "<!--",
        "--!>",
        "<!-",
        "'<!--'",
    ],
    *["<p title='", "<s", "<t", "<n", "<\u017f", "<\u212a", "</style>", "<style>"],
]
dropped_markups = st.lists(
    st.one_of(st.sampled_from(DROPPED_PIECES), st.sampled_from(PIECES), st.characters()), max_size=80
).map("".join)


@settings(max_examples=700, deadline=None)
@given(dropped_markups, st.booleans())
def test_typed_dropped_spans_as_the_python_path(text, folding):
    match = pagetext._DROPPED_WHOLE.match
    assert markuppass.dropped_spans(text, folding, match) == python_path.dropped_spans(text, folding, match)


# The typed copy's buffer is sized by the limit, not the page: a 40-million-character page asked for
# 160 MB whatever the limit (a review's find). Run under an address-space limit that leaves room for the
# page and the interpreter, not for such a buffer.
_UNDER_A_MEMORY_LIMIT = """
import resource, sys
from tse_scrapy.rules.text import markuppass
page = "<p>" + "word " * 8_000_000
with open("/proc/self/status") as status:
    size = next(int(line.split()[1]) for line in status if line.startswith("VmSize:")) * 1024
resource.setrlimit(resource.RLIMIT_AS, (size + 64 * 2**20, resource.RLIM_INFINITY))
print(len(markuppass.cleaned_text(page, 1000, False)))
"""


def test_the_typed_copy_takes_memory_by_the_limit_not_the_page():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _UNDER_A_MEMORY_LIMIT], capture_output=True, timeout=120)
    assert (done.returncode, done.stdout.strip()) == (0, b"999"), done.stderr.decode()[-500:]
