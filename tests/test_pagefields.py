"""What a page gives the search index (``pagefields``): the links to its own host, with their
anchor text's terms, and its words for typo tolerance."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from tests.support.twins import python_path
from tse_scrapy.rules.text import analysis, markuppass
from tse_scrapy.rules.text.pagefields import (
    REST_CHARACTERS,
    VOCABULARY_MIN,
    PageText,
    _elements,
    anchors,
    page_fields,
    url_language,
)
from tse_scrapy.rules.text.pagetext import _without_unclosed_tag

PAGE = "http://127.0.0.1:8080/docs/index.html"


@pytest.mark.parametrize(
    "href, target",
    [
        ("page.html", "http://127.0.0.1:8080/docs/page.html"),
        ("/top.html#part", "http://127.0.0.1:8080/top.html"),
        ("http://127.0.0.1:8080/docs/a.html", "http://127.0.0.1:8080/docs/a.html"),
        ("HTTP://127.0.0.1:8080/docs/a.html", "http://127.0.0.1:8080/docs/a.html"),  # urljoin's scheme
        ("  http://127.0.0.1:8080/docs/b.html  ", "http://127.0.0.1:8080/docs/b.html"),
        ("http://127.0.0.1:8080/docs/c&amp;d.html", "http://127.0.0.1:8080/docs/c&d.html"),
        ("http://127.0.0.1:80&#56;0/docs/e.html", "http://127.0.0.1:8080/docs/e.html"),  # a reference in the host
        ("http://127.0.0.1:8\t080/docs/f.html", "http://127.0.0.1:8080/docs/f.html"),  # a tab dropped inside
        ("http://en.wikipedia.org/wiki/Search", None),  # another host
        ("https://127.0.0.1:8080/docs/a.html", None),  # another scheme: another origin
        ("http://127.0.0.1:8081/docs/a.html", None),  # another port
        ("http://127.0.0.1:8080", None),  # the host without a path: not under its "/"
        ("mailto:someone@127.0.0.1", None),
        ("#top", None),
        ("index.html", None),  # the page itself
    ],
)
def test_links_to_the_pages_own_host_are_kept(href, target):
    found = anchors(f'<p><a class="x" href="{href}">Search <b>Engines</b></a></p>', PAGE, "en")
    assert found == ([(target, "search engin")] if target else [])


def test_a_target_is_kept_once_with_its_first_anchor_text():
    text = '<a href="a.html">First</a> <a href="/docs/a.html#x">Second</a> <a href=\'b.html\'>Third</a>'
    assert anchors(text, PAGE, None) == [
        ("http://127.0.0.1:8080/docs/a.html", "first"),
        ("http://127.0.0.1:8080/docs/b.html", "third"),
    ]


@pytest.mark.parametrize(
    "text, found",
    [
        ('<A HREF="a.html">Upper</A >', [("a.html", "upper")]),
        ("<a\nhref = a.html\n>Spaced</a\n>", [("a.html", "space")]),
        ('<a name="n" href="a.html" title="t">Attributes</a>', [("a.html", "attribut")]),
        ('<a href="a.html" href="b.html">First href</a>', [("a.html", "first href")]),
        ('<a href="c.html?x>y">A ">" in quotes</a>', [("c.html?x>y", "a in quot")]),
        ('<a href="a.html">Outer <a href="b.html">inner</a> after</a>', [("a.html", "outer inner")]),
        ('<a href="a.html">Never closed <a href="b.html">Closed</a>', [("a.html", "never close close")]),
        ("<a>No href</a><a href=a.html>Second</a>", [("a.html", "second")]),
        # An attribute whose name starts "href", or a word "href" before the href (a review's finds).
        ('<a hreflang="de" href="a.html">Deutsch</a>', [("a.html", "deutsch")]),
        ("<a class=\"btn href\" href='a.html'>Button</a>", [("a.html", "button")]),
        ('<a href data-x href="a.html">Late</a>', [("a.html", "late")]),
        ('<ab href="a.html">Not a link</ab>', []),
        # The end tag must start within 2,000 characters of the start tag's end; else the next one.
        ('<a href="a.html">' + "x" * 1998 + " y</a>", [("a.html", "x" * 1998 + " y")]),
        ('<a href="a.html">' + "x" * 1999 + " y</a>", []),
        ('<a href="a.html">' + "x" * 2000 + '<a href="b.html">z</a>', [("b.html", "z")]),
    ],
)
def test_a_links_anchor_text_is_up_to_its_end_tag(text, found):
    host = "http://127.0.0.1:8080/docs/"
    assert anchors(text, PAGE, "en") == [(host + href, terms[:200].strip()) for href, terms in found]


# Pages no one writes, whose links and headings took time growing with the square or the cube of the
# page's size (10,000 "<a href='x " in 110 KB: minutes): their links and headings, now found in one pass.
@pytest.mark.parametrize(
    "text, links",
    [
        ("<a href='x " * 10_000 + "<p><a href=k.html>Kept</a>", [("k.html", "kept")]),
        ("<a " * 20_000 + "<p><a href=k.html>Kept</a>", [("k.html", "kept")]),
        ("<a href='x.html'>" * 100_000 + "</a>", []),
        ("<a" + " href=x" * 100_000 + "<p>y</p></a>", []),
        ('<a href="' + ">" * 3000 + '">x</a><a href=k.html>Kept</a>', [(">" * 3000, "x"), ("k.html", "kept")]),
        ("<h1>" * 50_000 + "<a href=k.html>Kept</a>", [("k.html", "kept")]),
        # One start tag of 100,000 characters without its ">" (a review's find: seconds, quadratic).
        ("<a href=" + "x" * 100_000 + "<a href=k.html>Kept</a>", [("k.html", "kept")]),
        ('<a href="' + "x" * 100_000 + "<a href=k.html>Kept</a>", [("k.html", "kept")]),
    ],
)
def test_links_of_hostile_pages(text, links):
    host = "http://127.0.0.1:8080/docs/"
    assert anchors(text, PAGE, "en") == [(host + href, terms) for href, terms in links]
    assert page_fields(PAGE, text.encode()).links == tuple((host + href, terms) for href, terms in links)


# The one pattern links were found by before (start tag, text and end tag), which took time growing with
# the square or the cube of a hostile page's size: on markup whose start tags hold no "<" (where the two
# differ by design), the links found now are its, in time linear in the page.
_ONE_PATTERN = re.compile(
    r"<a(?=[\s>])[^>]*?\shref\s*=\s*(?:\"([^\"]*)\"|'([^']*)'|([^\s>]+))[^>]*>(.{0,2000}?)</a\s*>", re.I | re.S
)
_PIECES = st.sampled_from(
    [
        '<a href="a.html">',
        "<a href='b.html' class=x>",
        "<A HREF=c.html>",
        '<a hreflang="de" href="d.html">',
        "<a name=n>",
        "<a ",
        "<a href=",
        "</a>",
        "</A >",
        "</a",
        "<p>",
        "<h2>",
        "</h2>",
        ">",
        '"',
        "'",
        " ",
        "text",
        "x" * 700,
    ]
)


_PATTERNS = python_path(markuppass)  # (the links' patterns: the Python path's)


def _links_in(text):
    return _elements(text, _PATTERNS._ANCHOR_START, lambda _: _PATTERNS._ANCHOR_END)


@given(st.lists(_PIECES, max_size=30).map("".join))
def test_links_are_those_of_the_one_pattern_before(text):
    text = _without_unclosed_tag(text)
    if any("<" in tag[1:] for tag in re.findall(r"<a(?=[\s>])[^>]*>?", text, re.I)):
        return  # (a start tag holding a "<": the old pattern read on past it, by design no more)
    before = [
        (found.group(1) or found.group(2) or found.group(3) or "", found.group(4))
        for found in _ONE_PATTERN.finditer(text)
    ]
    now = [(start.group(2) or start.group(3) or start.group(4) or "", label) for start, label in _links_in(text)]
    assert now == before


@given(st.lists(_PIECES, max_size=40).map("".join))
@example("<a href=a>" + "x" * 1999 + "</a><a href=b>y</a>")
@example("<a href=a>" + "x" * 2000 + "</a><a href=b>y</a>")  # (the bound: ELEMENT_CHARACTERS)
@example("<a href=a>" + "x" * 2001 + "</a><a href=b>y</a>")
@example("<a href=a><a href=b>x</a>y</a><a href=c>z</a></a>")
def test_links_are_those_of_the_elements_loop(text):
    # ``markuppass.links`` is ``_elements`` with the links' patterns, written out for their 490 a page
    # (typed where compiled): the same hrefs and the same texts, on any markup.
    text = _without_unclosed_tag(text)
    expected = [(start.group(2) or start.group(3) or start.group(4) or "", label) for start, label in _links_in(text)]
    assert list(markuppass.links(text)) == list(_PATTERNS.links(text)) == expected


@pytest.mark.parametrize(
    "body, headings",
    [
        (b"<h1>One</h1><p>x</p><H2 class=c>Two</H2 >", "one two"),
        (b"<h1>Level one</h2> still one</h1>", "level one still one"),
        (b"<h3>Unclosed<h3>Closed</h3>", "unclos close"),  # the first's text runs to the end tag
        (b"<h1>" + b"x" * 1997 + b"</h1><h2>y</h2>", "x" * 1997 + " y"),
        (b"<h1>" + b"x" * 2001 + b"</h1><h2>y</h2>", "y"),
        (b"<h1><h1>" * 20_000 + b"z</h1>", "z"),
        (b"<h1 " * 20_000 + b"><p>z</p>", ""),
    ],
)
def test_a_pages_headings(body, headings):
    assert page_fields(PAGE, b"<html lang=en><body>" + body + b"</body></html>").headings == headings


_HREFS = st.sampled_from(
    [
        "a.html",
        "/b.html",
        "http://127.0.0.1:8080/c.html",
        "http://127.0.0.1:8080/c.html#d",
        "http://other.example/e.html",
        "https://127.0.0.1:8080/f.html",
        "HTTP://127.0.0.1:8080/g.html",
        "http://127.0.0.1:8080/h&amp;i.html",
        "http://other.example/&#35;",
        " http://other.example/j.html",
    ]
)


@given(st.lists(_HREFS, max_size=8))
def test_every_link_to_the_host_is_kept_in_order(hrefs):
    # Each href alone, then all of them on one page: the page keeps each target it links to first.
    alone = [anchors(f'<a href="{href}">word</a>', PAGE, None) for href in hrefs]
    expected = {}
    for found in alone:
        for target, terms in found:
            expected.setdefault(target, terms)
    together = anchors("".join(f'<a href="{href}">word</a>' for href in hrefs), PAGE, None)
    assert together == list(expected.items())


# The text past what the document store keeps (the search index's rests), in every script.
@pytest.mark.parametrize(
    "visible, limit, past",
    [
        ("one two three four", 7, "three four"),
        ("one two three four", 8, "three four"),  # (the store keeps "one two": cut before a space)
        ("one two", 20, ""),
        # Chinese with few spaces: the store keeps what comes before the last space within its limit.
        ("首页 新闻 关于我们 " + "中文文本没有空格。" * 3, 12, "中文文本没有空格。" * 3),
    ],
)
def test_the_text_past_the_stored_text(visible, limit, past):
    read = PageText("", "", visible)
    assert read.text_past(read.visible_text(limit)) == past


def test_the_text_past_is_bounded_and_cut_at_a_word():
    visible = "首页 新闻 关于我们 " + "中文文本没有空格。" * 5000  # (45,000 characters without a space)
    read = PageText("", "", visible)
    past = read.text_past(read.visible_text(5_000))
    assert past == visible[11 : 11 + REST_CHARACTERS]
    words = " ".join(["word"] * 20_000)
    read = PageText("", "", words)
    past = read.text_past(read.visible_text(5_000))
    assert len(past) <= REST_CHARACTERS and past.startswith("word") and past.endswith("word")


@given(st.text(alphabet=st.sampled_from("ab 中é"), max_size=300), st.integers(min_value=1, max_value=100))
def test_the_text_past_follows_the_stored_text(text, limit):
    visible = " ".join(text.split())  # (single-spaced, as visible text is)
    read = PageText("", "", visible)
    stored = read.visible_text(limit)
    past = read.text_past(stored)
    assert visible.startswith(stored) and visible[len(stored) :].lstrip(" ").startswith(past)
    assert bool(past) == bool(visible[len(stored) :].strip())


# A page's words for typo tolerance (5 characters or more, none of a bigram script), its title's first,
# each with how the page spells it where folding changes more than its case (accents, ß): the body's first
# such spelling, else the title's ("résumé" below: the body writes it only as the word).
@pytest.mark.parametrize(
    "body, vocabulary",
    [
        (
            b"<title>R\xc3\xa9sum\xc3\xa9</title><p>resume RESUME apples</p>",
            (("resume", "résumé"), ("apples", "apples")),
        ),
        ("<p>Straße STRASSE strasse</p>".encode(), (("strasse", "straße"),)),
        ("<p>ΛΌΓΟΣ λόγος</p>".encode(), (("λογοσ", "λόγοσ"),)),
        ("<p>日本語のテキスト tiếng</p>".encode(), (("tieng", "tiếng"),)),
        (b"<p>four five6 <script>hidden words</script></p>", (("five6", "five6"),)),
    ],
)
def test_a_pages_vocabulary(body, vocabulary):
    assert page_fields("http://h/p.html", body).vocabulary == vocabulary


# Its words one letter shorter that folding changes (a correction to one is spelled as the page does).
@pytest.mark.parametrize(
    "body, short",
    [
        ("<p>Иногда что-то идёт неправильно</p>".encode(), (("идет", "идёт"),)),
        ("<p>se passe très bien, très</p>".encode(), (("tres", "très"),)),
        ("<p>Maße Köln Straße tres</p>".encode(), (("koln", "köln"),)),  # ("maße" folds to five letters)
        ("<p>ДОМА дома Ёлка ёлки</p>".encode(), (("елка", "ёлка"), ("елки", "ёлки"))),
        ("<p>four tres cafés café 日本語</p>".encode(), (("cafe", "café"),)),
    ],
)
def test_a_pages_short_spellings(body, short):
    assert page_fields("http://h/p.html", body).short_spellings == short


@given(st.text(alphabet="aeéEÉßёЁеλόΟς日 ", max_size=80))  # noqa: RUF001 (Cyrillic and Greek letters that look Latin)
def test_a_short_spelling_is_a_word_of_the_page_that_folding_changes(text):
    fields = page_fields("http://h/p.html", f"<p>{text}</p>".encode())
    words = set(analysis.words(text))
    for word, spelling in fields.short_spellings:
        assert len(word) == VOCABULARY_MIN - 1 and word in words and spelling != word
        assert analysis.words(spelling) == [word]
    assert len(dict(fields.short_spellings)) == len(fields.short_spellings)  # (each word once)


# The language a URL names, for a page whose text is too short to tell (a table of contents).
@pytest.mark.parametrize(
    ("url", "language"),
    [
        ("http://127.0.0.1/installation-guide/da/ch07.html", "da"),
        ("http://127.0.0.1/debian-reference/ch01.es.html", "es"),  # (Debian's name.LANG.html)
        ("http://h/index.zh-cn.html", "zh"),
        ("http://h/pt-br/", "pt"),
        ("http://h/zh_CN/x.html", "zh"),
        ("http://h/zh-Hant/x.html", "zh"),
        ("http://h/en-US/a", "en"),
        ("http://h/fr", "fr"),
        ("http://h/de/x.fr.html", "fr"),  # (the one nearest the file)
        ("http://h/%64a/x.html", "da"),
        ("http://h/a/b.html", None),
        ("http://h/xx/a.html", None),  # (no language this code knows)
        ("http://h/ab-cdefg/a.html", None),
        ("http://h/deu/a.html", None),  # (three letters: "doc", "api", "img" are folders, not languages)
        ("http://h/", None),
        ("not a url", None),
        ("http://[e.com/da/a.html", None),  # (no parser takes it: a page of an archive held one)
    ],
)
def test_a_url_names_a_language(url, language):
    assert url_language(url) == language


@given(st.text(max_size=80))
def test_a_url_names_a_known_language_or_none(path):
    assert url_language("http://h/" + path) in {None, *analysis.KNOWN_LANGUAGES}


def test_a_page_too_short_to_tell_takes_its_urls_language():
    # installation-guide-da's ch07.html (Debian's package), its text whole: too few common words.
    body = (
        "<html><head><title>Kapitel 7. Start op i dit nye Debian-system</title></head><body>"
        "<h1>Kapitel 7. Start op i dit nye Debian-system</h1><p>Indholdsfortegnelse 7.1. Sandhedens øjeblik"
        " 7.2. Montering af krypterede diskenheder 7.2.1. Fejlsøgning 7.3. Log ind</p></body></html>"
    ).encode()
    assert page_fields("http://127.0.0.1/installation-guide/da/ch07.html", body).language == "da"
    assert page_fields("http://127.0.0.1/installation-guide/ch07.html", body).language == ""
    # A language the page declares, or its text says, comes first.
    declared = body.replace(b"<html>", b'<html lang="sv">')
    assert page_fields("http://127.0.0.1/installation-guide/da/ch07.html", declared).language == "sv"
    english = b"<p>This is the way the guide and the system of the project are written for you to read.</p>"
    assert page_fields("http://127.0.0.1/x/da/ch07.html", english).language == "en"
