import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tse_scrapy.rules.files.webarchive import page_links
from tse_scrapy.rules.web.links import _join_to_directory, extract_links_html, extract_links_tse, page_text

PAGE = "http://h/dir/page.html"

HTML_CASES = [
    ('<a href="a.html">x</a>', ["http://h/dir/a.html"]),
    ("<a href='a.html'>x</a>", ["http://h/dir/a.html"]),
    ("<a href=a.html id=g>x</a>", ["http://h/dir/a.html"]),
    ('<a href = " a.html ">x</a>', ["http://h/dir/a.html"]),
    ('<A HREF="/root.html">x</A>', ["http://h/root.html"]),
    ('<a href="../up.html">x</a>', ["http://h/up.html"]),
    ('<a href="b.html#frag">x</a>', ["http://h/dir/b.html"]),
    ('<a href="#top">x</a><a href="">self</a>', ["http://h/dir/page.html"]),
    ('<a href="mailto:a@b.c">m</a><a href="javascript:void(0)">j</a><a href="ftp://h/x">f</a>', []),
    ('<a href="HTTPS://Other.example/x">x</a>', ["HTTPS://Other.example/x"]),  # normalized later
    ('<a name="anchor">no href</a>', []),
    ('<map><area href="area.html"></map>', ["http://h/dir/area.html"]),
    ('<base href="http://o/base/"><a href="x.html">x</a>', ["http://o/base/x.html"]),
    ('<head><base href="/b2/"></head><a href="x.html">x</a>', ["http://h/b2/x.html"]),
    (
        '<a href="one.html">1</a><p><a href="two.html">2</a></p><area href="three.html">',
        ["http://h/dir/one.html", "http://h/dir/two.html", "http://h/dir/three.html"],
    ),
    ('<a href="a\nb.html">split by a newline</a>', ["http://h/dir/ab.html"]),
    ("<a href=x.html>foo: bar</a>", ["http://h/dir/x.html"]),
    ('<abbr href="no.html">not a link</abbr>', []),
    # A host Python cannot read: the link as written (the crawl logs it, never fetches it); no base.
    ('<a href="http://[::1:99/x.html#f">v6</a>', ["http://[::1:99/x.html"]),
    ('<base href="http://[bad/"><a href="x.html">x</a>', ["http://h/dir/x.html"]),
    # A <template>'s content is inert, a fragment of its own (HTML): a <base> or a link in it is none.
    ('<head><template><base href="http://o/t/"></template></head><a href="x.html">x</a>', ["http://h/dir/x.html"]),
    ('<template><base href="/t/"></template><base href="/b/"><a href="x.html">x</a>', ["http://h/b/x.html"]),
    (
        '<template><a href="in.html">i</a><template><a href="deeper.html">d</a></template></template>'
        '<a href="out.html">o</a><TEMPLATE><area href="in2.html"></TEMPLATE>',
        ["http://h/dir/out.html"],
    ),
    ("", []),
]


@pytest.mark.parametrize("html, expected", HTML_CASES)
def test_extract_links_html(html, expected):
    assert extract_links_html(html.encode(), PAGE) == expected


def test_extract_links_html_honours_declared_encoding():
    body = '<meta charset="iso-8859-1"><a href="caf\xe9.html">x</a>'.encode("latin-1")
    assert extract_links_html(body, PAGE) == ["http://h/dir/caf\xe9.html"]


def test_extract_links_html_survives_xml_declaration_and_nul():
    body = b'<?xml version="1.0" encoding="utf-8"?><html><a href="a.html">\0x</a></html>'
    assert extract_links_html(body, PAGE) == ["http://h/dir/a.html"]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b'<a href="a\0b.html">x</a>', "http://h/dir/a\ufffdb.html"),  # HTML's tokenizer: U+FFFD
        (b"<a href=a\0b.html>x</a>", "http://h/dir/a\ufffdb.html"),
        (b'<a href="&#0;b.html">x</a>', "http://h/dir/\ufffdb.html"),  # as the reference to it reads
    ],
)
def test_a_nul_byte_in_an_href_is_the_replacement_character_not_dropped(body, expected):
    # "a\0b.html" is not "ab.html", which may be another page: a browser asks for a%EF%BF%BDb.html.
    assert extract_links_html(body, PAGE) == [expected]
    assert page_links(body, PAGE) == [expected]  # tse import's reading of an archived page


# Pages nested deeper than libxml2 goes (256 elements: legacy pages' unclosed <font>s reach it), whose
# links past that depth were lost (a tester's find): each link found, in order, and no link of a comment
# or a script; in time linear in the page.
DEEP = "<a href=first.html>1</a>{}<a href=second.html>2</a><p><a href=third.html>3</a>"
LINKS = ["http://h/dir/first.html", "http://h/dir/second.html", "http://h/dir/third.html"]


@pytest.mark.parametrize(
    ("html", "links"),
    [
        (DEEP.format('<font size="2">' * 260), LINKS),
        (DEEP.format("<div>" * 300 + "</div>" * 300), LINKS),
        (DEEP.format("<span><b>" * 200), LINKS),
        (DEEP.format("<font>" * 300 + "<script>w('<a href=no.html>')</script><!-- <a href=no2.html> -->"), LINKS),
        (DEEP.format("<font>" * 300 + "<style>a::after{content:'<a href=no.html>'}</style>"), LINKS),
        ('<base href="/b/">' + DEEP.format("<i>" * 300), [link.replace("/dir/", "/b/") for link in LINKS]),
        ('<template><base href="/t/"></template>' + DEEP.format("<i>" * 300), LINKS),
        (DEEP.format("<font>" * 1_000_000), LINKS),
    ],
)
def test_links_past_libxml2s_depth_are_found(html, links):
    assert extract_links_html(html.encode(), PAGE) == links


@pytest.mark.parametrize(
    "tail",
    [
        "<script>" * 100_000 + "<!--" * 100_000,
        "a<b " * 300_000,  # a "<" no ">" follows (a review's find: quadratic, 15 s for 322 KB)
        "<script>" + "</script " * 100_000,
    ],
)
def test_a_deep_page_of_unclosed_tags_scripts_and_comments_is_read_in_linear_time(tail):
    html = "<b>" * 300 + "<a href=a.html>a</a>" + tail
    assert extract_links_html(html.encode(), PAGE) == ["http://h/dir/a.html"]


TSE_CASES = [
    ('<a href="a.html">x</a>', ["http://h/dir/a.html"]),
    ("<a href='a.html'>x</a>", ["http://h/dir/a.html"]),
    # whitespace is deleted before scanning
    ('<a href = "a.html">x</a>', ["http://h/dir/a.html"]),
    ("<a href=G.html id=g>x</a>", ["http://h/dir/G.htmlid=g"]),
    ('<A HREF="/root.html">x</A>', ["http://h/root.html"]),
    ('<a href="../up.html">x</a>', ["http://h/dir/../up.html"]),  # normalized later
    ('<a href="b.html#frag">x</a>', ["http://h/dir/b.html"]),
    ('<a href="#top">x</a><a href="c.html">c</a>', ["http://h/dir/c.html"]),
    ('<a href="mailto:a@b.c">m</a>', []),
    ('<a href="HTTPS://Other/x">x</a>', ["HTTPS://Other/x"]),
    # any tag beginning with <a, including <area> and <abbr>
    ('<area href="area.html">', ["http://h/dir/area.html"]),
    ('<abbr href="abbr.html">x</abbr>', ["http://h/dir/abbr.html"]),
    # the next href= after the tag, unless the tag's > comes first
    ('<a name="n">x</a><p href="p.html">', []),
    ('<a name="n"><b href="b.html">', []),
    # no <base>: relative links join the page's directory
    ('<base href="http://o/"><a href="x.html">x</a>', ["http://h/dir/x.html"]),
    # the colon quirk: the first of : / ? # in the rest of the page decides
    ("<a href=x.html>foo: bar</a>", []),
    ("<a href=x.html>foo/bar: baz</a>", ["http://h/dir/x.html"]),
    ('<a href="x.html">Note: here</a>', []),
    # unterminated quote: skipped
    ('<a href="never-closed.html>x', []),
    # the scan stops at a NUL byte, like a C string
    ('<a href="a.html">a</a>\0<a href="b.html">b</a>', ["http://h/dir/a.html"]),
]


@pytest.mark.parametrize("html, expected", TSE_CASES)
def test_extract_links_tse(html, expected):
    assert extract_links_tse(html.encode(), PAGE) == expected


def test_extract_links_tse_joins_to_directory_of_page_url():
    assert extract_links_tse(b'<a href="x.html">', "http://h/page.html") == ["http://h/x.html"]
    assert extract_links_tse(b'<a href="x.html">', "http://h/a/b/?q=/z") == ["http://h/a/b/x.html"]


@given(st.binary(max_size=2000))
def test_extractors_never_raise_on_bytes(body):
    for extract in (extract_links_html, extract_links_tse):
        assert all(isinstance(url, str) for url in extract(body, PAGE))


html_soup = st.lists(
    st.sampled_from(
        [
            "<a ",
            "<A ",
            "<area ",
            "href=",
            'href="',
            "href='",
            '"',
            "'",
            ">",
            "</a>",
            "#",
            ":",
            "/",
            "?",
            " ",
            "\n",
            "x.html",
            "http://o/p.html",
            "mailto:m",
            "<base href=",
            "\0",
            "\xe9",
        ]
    )
).map("".join)


@given(html_soup)
def test_html_extractor_yields_absolute_http_urls_without_fragment(text):
    for url in extract_links_html(text.encode("utf-8"), PAGE):
        assert url.split(":", 1)[0].lower() in ("http", "https")
        assert "#" not in url


@given(html_soup)
def test_tse_extractor_yields_http_urls_without_fragment(text):
    for url in extract_links_tse(text.encode("utf-8"), PAGE):
        assert url[:4].lower() == "http"
        assert "#" not in url
        assert not any(c in url for c in " \t\n\r")


@pytest.mark.parametrize("extract", [extract_links_html, extract_links_tse])
@pytest.mark.parametrize(
    ("encoding", "mark"),
    [("cp932", b""), ("cp949", b""), ("gb18030", b""), ("cp1251", b""), ("utf-16-le", b""), ("utf-16-le", b"\xff\xfe")],
)
def test_links_are_read_in_the_encoding_given(extract, encoding, mark):
    # The codec the crawl reads the page with (its HTTP charset, as the indexer reads it): the link is
    # the path the page names, not its bytes read as UTF-8 (U+FFFD) or Latin-1 letters.
    link = "ссылка/страница.html" if encoding == "cp1251" else "ссылка/日本.html"
    body = mark + f'<p>x</p><a href="{link}">a</a><a href="/b.html">b</a>'.encode(encoding)
    assert extract(body, PAGE, encoding) == [f"http://h/dir/{link}", "http://h/b.html"]


def _quadratic_extract_links_tse(body: bytes, page_url: str, encoding: str | None = None) -> list[str]:
    """``extract_links_tse`` as it was before its searches kept what they found (each link's searched
    to the page's end: quadratic), copied as the reference of what it finds."""
    if encoding is not None:
        body = page_text(body, encoding).encode("utf-8", "surrogatepass")
    html = body.split(b"\0", 1)[0].translate(None, b" \t\n\v\f\r")
    lowered = html.lower()
    links = []
    pos = 0
    while True:
        tag = lowered.find(b"<a", pos)
        if tag == -1:
            break
        href = lowered.find(b"href=", tag)
        if href == -1:
            break
        tag_end = html.find(b">", tag)
        pos = tag + 1
        if tag_end != -1 and tag_end < href:
            continue
        start = href + 5
        delimiter = html[start : start + 1]
        if delimiter in (b'"', b"'"):
            start += 1
            end = html.find(delimiter, start)
        else:
            end = html.find(b">", start)
        if end == -1:
            continue
        fragment = html.find(b"#", start, end)
        if fragment != -1:
            end = fragment
        if html[start : start + 1] == b"#":
            continue
        pos = end
        link = html[start:end].decode("utf-8" if encoding is not None else "latin-1")
        found = re.compile(rb"[:/?#]").search(html, start)
        if found is not None and found.group() == b":":
            if link[:4].lower() != "http":
                pos = tag + 1
                continue
            links.append(link)
        else:
            links.append(_join_to_directory(page_url, link))
    return links


# What the C scanner's searches meet: tags, hrefs, delimiters, the characters that end a scheme or a
# link, whitespace it deletes, the NUL it stops at, letters past ASCII.
tse_soup = st.lists(
    st.sampled_from(
        [
            *("<a", "<A", "<abbr ", "href=", "HREF=", '"', "'", ">", "#", ":", "/", "?", " ", "\n", "\0"),
            *("x.html", "http", "HTTP://o/p.html", "mailto:", "é", "日本", "\ufeff", "<ahref=x>", "<a href='y'#z>"),
        ]
    ),
    max_size=40,
).map("".join)


@given(tse_soup, st.sampled_from([None, "utf-8", "cp1252", "utf-16-le", "cp932"]))
def test_the_tse_scanner_finds_what_it_found_when_it_was_quadratic(text, encoding):
    # Each "<a" searched for its href, and each link for its scheme's end, to the page's end: 10,000
    # "<a href=x.html>" took 10 s (a reviewer's find).  Its searches now keep what they found ahead;
    # what it finds is the same, in the same order.
    body = text.encode(encoding or "utf-8", "replace")
    assert extract_links_tse(body, PAGE, encoding) == _quadratic_extract_links_tse(body, PAGE, encoding)
    page = "http://h/page.html"  # (links joined to another directory)
    assert extract_links_tse(body, page, encoding) == _quadratic_extract_links_tse(body, page, encoding)
