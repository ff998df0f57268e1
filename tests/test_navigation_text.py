"""Navigation is no page's text: a <nav> element, or an element whose role is "navigation", is left
out of the visible text (what results show, the body the search index scores, the headings), on
hand-made markup, on hostile pages, and on real pages of Python's documentation (python3.11-doc),
whose sidebars and breadcrumbs made every snippet start "Table of Contents"."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from tse_scrapy.rules.text import cleaning, pagetext
from tse_scrapy.rules.text.pagefields import page_fields
from tse_scrapy.rules.text.pagetext import visible_text

PYTHON_DOCS = Path("/usr/share/doc/python3.11/html")


def shown(markup: str) -> str:
    return visible_text(f"<html><body>{markup}</body></html>".encode(), 3_000_000)


@pytest.mark.parametrize(
    ("markup", "text"),
    [
        ("<p>Before</p><nav><a href=a.html>Menu</a></nav><p>After</p>", "Before After"),
        ("<NAV class=top><ul><li>Menu</li></ul></NAV>Text", "Text"),
        ('<div role="navigation"><div><div>Menu</div></div><p>More menu</p></div><div>Text</div>', "Text"),
        ("<div role=navigation>Menu</div>Text", "Text"),
        ("<ul role='Navigation'><li>Menu</li></ul>Text", "Text"),
        # Roles compared as browsers compare them: ASCII case-insensitively, split on ASCII whitespace.
        ('<div role="NaviGation">Menu</div>Text', "Text"),
        ("<div role=nAVIGATIOn>Menu</div>Text", "Text"),
        ('<div role="\tNAVIGATIon\fmenubar">Menu</div>Text', "Text"),
        ('<div role="nav\u0131gation">Shown</div>Text', "Shown Text"),  # a dotless i: no ASCII letter
        ('<div role="navigation\u00a0menubar">Shown</div>Text', "Shown Text"),  # a no-break space splits no roles
        ('<div role="\u00a0navigation">Shown</div>Text', "Shown Text"),
        ('<div ROLE = " navigation menubar">Menu</div>Text', "Text"),  # its first role is navigation
        ('<div role="presentation navigation">Shown</div>', "Shown"),  # its first role is another
        ('<div role="navigations">Shown</div>', "Shown"),
        ('<div class="navigation">Shown</div>', "Shown"),  # a class is no role
        ('<div title="role=navigation">Shown</div>', "Shown"),
        # Another attribute's value that reads as a role is no role; the first role attribute is the tag's.
        ('<div title="the role=navigation menu">Shown</div>Text', "Shown Text"),
        ("<div data-x='x role=\"navigation\"'>Shown</div>Text", "Shown Text"),
        ('<div role="main" data-y=" role=navigation">Shown</div>Text', "Shown Text"),
        ('<div role="main" role="navigation">Shown</div>Text', "Shown Text"),
        ('<div title="x" role="navigation" data-y="role=main">Menu</div>Text', "Text"),
        ("<div hidden role = navigation>Menu</div>Text", "Text"),
        ("<p>The word navigation is text</p>", "The word navigation is text"),
        ("<nav>Outer <nav>inner</nav> still outer</nav>Text", "Text"),
        ('<div role="navigation">Outer <nav>inner</nav> still</div>Text', "Text"),
        # Never closed: it, and what follows it, stay text.
        ("<nav>Menu <p>Text", "Menu Text"),
        ('<div role="navigation"><div>Menu</div>Text', "Menu Text"),
        ("<nav>One</nav><nav>Two <p>Text", "Two Text"),
        # Tags inside comments and hidden elements do not count, nor open or close anything.
        ("<!-- <nav> -->Text<p>More</p>", "Text More"),
        ("<script>x = '<nav>'</script>Text", "Text"),
        ("<nav>Menu<!-- </nav> --> more menu</nav>Text", "Text"),
        ('<div role="navigation">Menu<script>document.write("</div>")</script> more</div>Text', "Text"),
        ('<div role="navigation"><div>Menu</div><!-- <div> --></div>Text', "Text"),
        # A "<!--" or "<script" inside an attribute's value is the tag's, as the visible text reads it.
        ('<a title="<!--">Kept</a><nav>Menu</nav><p>Text --></p>', "Kept Text -->"),
        ('<a title="<script>">Kept</a><nav>Menu</nav>Text</script>', '">Kept Text'),  # (its first ">" ends it)
        # The word "navigation" in the text just before a navigation element (a review's find: it hid it).
        ('<p>Site navigation<div role="navigation">Menu</div><p>Body', "Site navigation Body"),
        # A tag runs to its first ">": its name's tags inside another tag's attribute do not count.
        ('<div role="navigation"><a data-tip="<div>">Menu</a></div><p>Body text</p></div><p>End', "Body text End"),
        ('<div title="a<b" role="navigation">Menu</div>Text', "Text"),
        ('<p title="<nav>">Kept</p>Text</nav>', '">Kept Text'),  # (the tag ends at the ">" of "<nav>")
        ('<my-menu role="navigation">Menu</my-menu><p>Body', "Body"),  # a custom element
        # Letters that fold to ASCII ones start a tag, as they do where no navigation is looked for.
        ("<p>Navigation <\u0131x> here</p><nav>Menu</nav>", "Navigation here"),
        ("<p>Navigation <\u017fcript>hidden</\u017fcript> here</p>", "Navigation here"),
        # A page that is all navigation (a site map) keeps its text.
        ("<nav><ul><li>Home</li><li>About</li></ul></nav>", "Home About"),
        ("<nav>Menu &amp; more</nav>Caf&eacute;", "Café"),
    ],
)
def test_navigation_is_not_the_pages_text(markup, text):
    assert shown(markup) == text


def test_headings_inside_navigation_are_not_the_pages():
    body = b'<div role="navigation"><h3>Table of Contents</h3></div><h1>Sorting HOW TO</h1><nav><h2>Menu</h2></nav>'
    assert page_fields("http://127.0.0.1/sorting.html", body).headings == "sorting how to"


@pytest.mark.parametrize("word", ["", "navigation"])
def test_headings_inside_comments_and_scripts_are_not_the_pages_whatever_its_words(word):
    """(A review's find: they were headings only where the page did not hold the word "navigation".)"""
    body = f'<!-- <h2>Obsolete</h2> --><script>s="<h3>Scripted</h3>"</script><h1>Cats</h1><p>Cats {word}</p>'
    assert page_fields("http://127.0.0.1/a.html", body.encode()).headings == "cats"


# Pages no one writes: each ends in time that grows with its size, never its square, and keeps the text
# that is not navigation.
@pytest.mark.parametrize(
    ("markup", "text"),
    [
        ('<div role="navigation">' * 50_000 + "Text", "Text"),
        ("<nav>" * 50_000 + "</nav>" * 50_000 + "Text", "Text"),
        ("<nav>" * 50_000 + "</nav>" * 49_999 + "Text", "Text"),  # one never closed: all stays (no text)
        ("navigation " * 200_000 + "<nav>Menu</nav>Text", ("navigation " * 200_000).strip() + " Text"),
        ('<p role="navigation "' + " navigation" * 100_000 + ">Menu</p>Text", "Text"),
        ("".join(f'<x{n} role="navigation">Menu</x{n}>' for n in range(20_000)) + "Text", None),
        ('<div role="navigation">' + "<div>" * 100_000 + "</div>" * 100_001 + "Text", "Text"),
        # A review's finds, each quadratic in the first version (seconds to hours):
        ('<p>navigation</p><b a="<!--">' + "x</b><b a='<!--'>" * 50_000 + "Text", None),
        ('<p>navigation</p><b a="<script>">' + "x</b><b a='<script>'>" * 50_000 + "Text", None),
        ("<div navigation role=" + " " * 500_000 + ">Text", "Text"),
        ("<p>" + "navigation " * 200_000, ("navigation " * 200_000).strip()),
        ('<div role="navigation">' + '<a data-tip="<div>">m</a>' * 50_000 + "</div>Text", "Text"),
    ],
)
def test_navigation_of_hostile_pages(markup, text):
    found = shown(markup)
    if text is None and "Menu" in markup:  # a page's navigation names are bounded: past the first few, text
        assert found.endswith("Menu Text") and found.count("Menu") == 20_000 - 8
    elif text is None:  # (the attributes' "<!--" and "<script>" are the tags', which end at their ">")
        assert found.startswith("navigation ") and found.endswith("Text") and found.count("x") == 50_001
    else:
        assert found == text


# Markup made of pieces with no navigation word (tags, comments, hidden elements, a "<" in an
# attribute's value, text): a navigation element put in it leaves the same text as an empty element
# there, whatever comes before or after (the ">" first closes any tag left open).
PIECES = st.sampled_from(
    [
        "<p>",
        "</p>",
        "<div>",
        "</div>",
        "word",
        " ",
        "&amp;",
        "<!--",
        "-->",
        "<script>",
        "</script>",
        "<style>",
        "</style>",
        "<title>",
        "</title>",
        '<a title="<!--">',
        "<a title='<script>'>",
        "<",
        ">",
        "<b",
        "Ünïcödé",
        "<\u0131>",  # a letter that folds to an ASCII one: a tag
        "<\u017fcript>",
        "role=navigation",  # as text
    ]
)


@given(
    st.lists(PIECES, max_size=30).map("".join),
    st.lists(PIECES, max_size=30).map("".join),
    st.lists(st.booleans(), min_size=10, max_size=10),
)
def test_a_navigation_element_is_left_out_and_nothing_else(before, after, capitals):
    empty = shown(before + "><i></i>" + after)
    assume(empty)  # (a page that is all navigation keeps it)
    assert shown(before + "><nav><p>Menu</p><div>more</div></nav>" + after) == empty
    assert shown(before + '><div role="navigation"><div>Menu</div></div>' + after) == empty
    role = "".join(c.upper() if up else c for c, up in zip("navigation", capitals, strict=True))  # in any case
    assert shown(before + f"><div role={role}><div>Menu</div></div>" + after) == empty


def python_pages() -> list[Path]:
    if not (PYTHON_DOCS / "library" / "dbm.html").is_file():
        pytest.skip("python3.11-doc is not installed (make test installs it as root)")
    return sorted((PYTHON_DOCS / "library").glob("*.html"))[:60]


def test_python_docs_pages_show_their_own_text_not_their_navigation():
    """Each page's text starts with its first heading (read with a plain pattern), and holds none of
    the sidebar's and the breadcrumbs' words, on 60 real pages of Python's library reference."""
    for path in python_pages():
        body = path.read_bytes()
        source = body.decode()
        heading = re.search(r"<h1>(.*?)</h1>", source, re.S)
        if heading is None:
            continue
        first = " ".join(html.unescape(re.sub(r"<[^>]*>", " ", heading.group(1))).split())
        text = visible_text(body, 20_000)
        assert text.startswith(first), (path, text[:200])
        for navigation in ("Table of Contents", "Previous topic", "Next topic", "Report a Bug", "Show Source"):
            assert navigation not in text, (path, navigation)
        # The breadcrumbs' last step is the page's own heading; the others are gone.
        assert "The Python Standard Library »" not in text, path


@given(st.lists(PIECES, max_size=40).map("".join))
def test_a_page_without_navigation_shows_what_it_showed(markup):
    """The visible text read as markup first is the text _NOT_VISIBLE leaves, whatever the page."""
    text = pagetext._without_unclosed_tag(markup)
    before = cleaning.cleaned(pagetext._NOT_VISIBLE.sub(" ", pagetext._without_long_title(text)), 100_000)
    assume("<nav" not in text.lower() and "role" not in text)
    assert pagetext.shown_text(text, 100_000)[1] == before
