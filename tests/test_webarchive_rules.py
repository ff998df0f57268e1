"""rules/files/webarchive.py: which archived responses are pages, URL identity, redirects, depths."""

from __future__ import annotations

import re
from collections import deque

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from tse_scrapy.rules.files.webarchive import (
    HTML,
    MAX_REDIRECTS,
    PDF,
    archived_url,
    crawled_page_kind,
    landing,
    link_depths,
    may_be_page,
    page_hrefs,
    page_kind,
    page_links,
    url_key,
)
from tse_scrapy.rules.text.pdftext import looks_like_pdf
from tse_scrapy.rules.web.links import extract_links_html


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("http://example.com/a.html", "http://example.com/a.html"),
        ("<http://example.com/a.html>", "http://example.com/a.html"),  # WARC/1.0 as wget writes it
        ("  <http://example.com/a b>  ", "http://example.com/a%20b"),  # as a crawl writes it
        ("http://example.com/\x1b]0;title\x07\x1b[2J", "http://example.com/%1B]0;title%07%1B[2J"),
        ("http://example.com/tab\there\x7f\x9b", "http://example.com/tab%09here%7F%C2%9B"),
        ("http://example.com/caf\u00e9?q=\u00ff&x=%20", "http://example.com/caf\u00e9?q=\u00ff&x=%20"),  # as archived
        ("http://example.com/\udce9", "http://example.com/\udce9"),  # (a byte not UTF-8's, kept)
        ("", ""),
        (None, ""),
        ("<>", ""),
        ("<http://example.com/", "<http://example.com/"),  # unbalanced: left as it is
    ],
)
def test_archived_url(raw, expected):
    assert archived_url(raw) == expected


@pytest.mark.parametrize(
    ("url", "key"),
    [
        ("http://Example.COM/a.html", "http://example.com/a.html"),
        ("http://example.com//a/./b/../c.html#part", "http://example.com/a/c.html"),
        ("http://example.com/a.png", "http://example.com/a.png"),  # any extension
        ("http://example.com/a?q=1#x", "http://example.com/a?q=1"),
        ("not a url#x", "not a url"),
    ],
)
def test_url_key(url, key):
    assert url_key(url) == key


PAGE = "http://example.com/dir/page.html"
DIR = "http://example.com/dir/"


@pytest.mark.parametrize(
    ("body", "links"),
    [
        (b'<a href="a.html">a</a>', ["http://example.com/dir/a.html"]),
        (b"<A HREF='/b.html'>b</A>", ["http://example.com/b.html"]),
        (b"<a class=x href=../c.html>c</a>", ["http://example.com/c.html"]),
        (b'<area shape=rect href="http://other.example/x#top">', ["http://other.example/x"]),
        (b'<a href="a.html">1</a><a href="a.html#x">2</a><a href="./a.html">3</a>', ["http://example.com/dir/a.html"]),
        (b'<a href="#top">t</a><a href="">e</a><a href="page.html">self</a>', []),
        (b'<a href="javascript:void(0)">j</a><a href="mailto:x@example.com">m</a><a href="ftp://h/">f</a>', []),
        (b'<a href="?q=1&amp;r=2">q</a>', ["http://example.com/dir/page.html?q=1&r=2"]),
        (b'<a href=" \n /x\ny.html \t">w</a>', ["http://example.com/xy.html"]),
        (b'<base href="http://base.example/b/"><a href="c.html">c</a>', ["http://base.example/b/c.html"]),
        (b'<a href="caf\xc3\xa9.html">utf-8</a>', ["http://example.com/dir/caf\u00e9.html"]),
        (b"<abbr href=x>no</abbr><link href=style.css><img src=i.png>", []),
        (b"<a " + b"x" * 3000 + b' href="far.html">', []),  # past the 2,000 bytes a tag is read for
        (b"<a " * 20000, []),  # unclosed tags: linear
        (b"<a <a href=x.html>", ["http://example.com/dir/x.html"]),  # a tag in a tag: its href, once
        (b"<a " + b"x" * 1990 + b"<a " + b"y" * 100 + b" href=far.html>", ["http://example.com/dir/far.html"]),
        (b'<a href="x.html <a href=y.html">', ["http://example.com/dir/x.html <a href=y.html"]),
        (b"<a data-href=d.html>", ["http://example.com/dir/d.html"]),  # (as the expression always read it)
        (b"<a href=" + b"x" * 9000 + b"><a href=short.html>", ["http://example.com/dir/short.html"]),  # too long
        (b"<base href=/b/><base href=/c/><a href=x.html>", ["http://example.com/b/x.html"]),  # the first base
        (b"<a " * 600 + b'href="' + b"x" * 100_000, []),  # a quote never closed
        # What the crawl's parser reads as no link (inert: comments, raw text, a template's content):
        (b"<a href=1><!-- <a href=2> --><a href=3>", ["http://example.com/dir/1", "http://example.com/dir/3"]),
        (b"<!-- <a href=1> --!><a href=2><!--><a href=3><!---><a href=4>", [f"{DIR}{n}" for n in (2, 3, 4)]),
        (b"<!-- <a href=1>", []),  # a comment never closed runs to the end
        (b"<? <a href=1> ?><! <a href=2> ><![CDATA[<a href=3>]]></ <a href=4>><a href=5>", ["http://example.com/dir/5"]),
        (b"<template><a href=1><template><a href=2></template><a href=3></TEMPLATE><a href=4>", ["http://example.com/dir/4"]),
        (b"<template><base href=http://o.example/><a href=1></template><a href=2>", ["http://example.com/dir/2"]),
        (b"<template><!-- </template> --><script></template></script><a href=1></template><a href=2>", ["http://example.com/dir/2"]),
        (b"<template><a href=1>", []),
        (b"</template><a href=1>", ["http://example.com/dir/1"]),  # a stray end tag
        (b"<script>'<a href=1>'</scripts><a href=2></script ><a href=3>", ["http://example.com/dir/3"]),
        (b"<style><a href=1></style><textarea><a href=2></textarea><title><a href=3></title><a href=4>", ["http://example.com/dir/4"]),
        (b"<xmp><a href=1></xmp><iframe><a href=2></iframe><noembed><a href=3></noembed><a href=4>", ["http://example.com/dir/4"]),
        (b"<noscript><a href=1></noscript><plaintext></plaintext><a href=2>", ["http://example.com/dir/1"]),
        (b"<a href=1 title='<!--'><a href=2>-->", ["http://example.com/dir/1", "http://example.com/dir/2"]),  # in a tag
        # A tag whose name begins as an inert element's does (<strong, <time, <noscript): in it too
        (b'<strong title="<!--">x</strong><a href="/one">1</a>', ["http://example.com/one"]),
        (b'<TIME title="<!--">x</TIME><a href=1><Noscript title="<!--"><a href=2>', [f"{DIR}{n}" for n in (1, 2)]),
        (b'<nobr title="<script>">x</nobr><a href=1><stRong x=<template>><a href=2>', [f"{DIR}{n}" for n in (1, 2)]),
        (b'<strong title="<!--"', []),  # a tag never closed: all it holds is in it
    ],
)  # fmt: skip
def test_page_links(body, links):
    assert page_links(body, PAGE) == links


def test_page_links_take_the_first_links_up_to_a_limit():
    body = b"".join(b"<a href=#%d></a><a href=p%d.html>" % (i, i) for i in range(10))
    assert page_links(body, PAGE, 3) == [f"http://example.com/dir/p{i}.html" for i in range(3)]


# Hostile pages of 4 MB: the expression tried at each tag's start read 2,000 bytes past each (53 s for
# the first of them, 13 s a MB); each byte is now in one tag's reach (0.06 s a MB).
_HOSTILE = 4 << 20


@pytest.mark.timeout(20)
@pytest.mark.parametrize(
    "body",
    [
        b"<html><body>" + b"<a " * (_HOSTILE // 3),
        b"<area " * (_HOSTILE // 6),
        (b"<a " + b"x" * 1997) * (_HOSTILE // 2000),
        (b"<a " * 600 + b">") * (_HOSTILE // 1801),
        b"<a " * 600 + b'href="' + b"x" * _HOSTILE,
        b"<base " * (_HOSTILE // 6),
        b"<template>" * (_HOSTILE // 10),
        b"<x" + b"<!--" * (_HOSTILE // 4),
        b"<!-->" * (_HOSTILE // 5),
        b"<x y=<!-->" * (_HOSTILE // 10),
        b"<script>" * (_HOSTILE // 8),
        b"<template><script>" * (_HOSTILE // 18),
    ],
    ids=[
        *("unclosed a", "unclosed area", "long unclosed", "closed late", "unclosed quote", "unclosed base"),
        *("unclosed templates", "comments in a tag", "empty comments", "tags of comments", "scripts", "nested"),
    ],
)
def test_page_links_of_hostile_pages_take_linear_time(body):
    assert page_links(body, PAGE) == []


# Pages of 8 MB of comments or scripts and no link tag: the 1.4 million parts between the comments of
# "<!-->x", each searched for links, took 3.9 s (the scripts 1.2 s, on a loaded machine); a page without
# a link tag is now not split at all (0.03 s).
@pytest.mark.timeout(1)
@pytest.mark.parametrize(
    "body", [b"<!-->x" * (_HOSTILE // 3), b"<script></script>x" * (_HOSTILE // 9)], ids=["comments", "scripts"]
)
def test_page_links_of_pages_without_link_tags_are_quick(body):
    assert page_links(body, PAGE) == []


# The expression the links were read by: the new one (``_tag_pattern``) must find the same hrefs.
def _old_hrefs(body: bytes, tag: bytes, window: int) -> list[bytes]:
    old = re.compile(rb"<(?:%s)\s[^>]{0,%d}?\bhref\s*=\s*(?:\"([^\"]*)\"|'([^']*)'|([^\s\"'>]+))" % (tag, window), re.I)
    return [double or single or bare for double, single, bare in old.findall(body)]


_PIECES = [b"<a ", b"<A\n", b"<area ", b"<base ", b"<abbr ", b"href", b"HREF", b"=", b" ", b'"', b"'", b">", b"x"]
_PIECES += [b"-", b"<", b"a", b"\t", b"data-href="]


@given(st.lists(st.sampled_from(_PIECES), max_size=60), st.integers(0, 40))
def test_hrefs_are_those_the_expression_without_bounds_read(pieces, window):
    """A tag's bytes are read only up to the next tag's start: the hrefs found are the same."""
    from tse_scrapy.rules.files.webarchive import _tag_hrefs

    body = b"".join(pieces)
    assert list(_tag_hrefs(body, b"a|area", window=window)) == _old_hrefs(body, rb"a|area", window)
    assert list(_tag_hrefs(body, b"base", window=window)) == _old_hrefs(body, b"base", window)
    first_base = _old_hrefs(body, b"base", 2000)[:1]
    assert page_hrefs(body).base == (first_base[0] if first_base else None)


_names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_", min_size=1, max_size=12)
_hrefs = st.one_of(
    _names.map(lambda name: f"{name}.html"),
    _names.map(lambda name: f"/{name}/index.html"),
    _names.map(lambda name: f"http://{name}.example/{name}"),
    _names.map(lambda name: f"../{name}.htm#{name}"),
    _names.map(lambda name: f"#{name}"),
)


# (No other element: libxml2 closes a template open in a <p> at its </p>, where a browser keeps the rest
# in the template, as the import does.)
_INERT_PIECES = [
    *(b"<!--", b"-->", b"--!>", b"<!-->", b"<? ", b"<!x ", b"</ ", b">", b" x "),
    *(b"<template>", b"</template>", b"<TEMPLATE>", b"<script>", b"</script>", b"</Script >", b"<style>"),
    *(b"</style>", b"<textarea>", b"</textarea>", b"<title>", b"</title>", b"<base href=http://b.example/>"),
    *(b'<strong title="<!--">', b"<TIME title='<script>'>", b"<noscript x=<template>>", b"<nobr>", b"</time>"),
]


def _known_difference(pieces: list[bytes]) -> bool:
    """docs/import.md's known differences from the crawl's parser, met by this strategy: a
    ``<template>`` opened inside ``<time>`` before a ``</time>`` (the scan reads it to its own end tag,
    as a browser does; libxml2 closes it there), and a ``<script>`` holding ``<!--`` then ``<script``
    (the scan ends it at its first ``</script>``; HTML's tokenizer and lxml read on)."""
    in_time = in_template = in_script = escaped = False
    for piece in pieces:
        lowered = piece.lower()
        if in_script:
            if lowered.startswith(b"</script"):
                in_script = escaped = False
            elif b"<!--" in lowered:
                escaped = True
            elif escaped and b"<script" in lowered:
                return True
        elif lowered == b"<script>":
            in_script = True
        elif lowered.startswith(b"<time"):
            in_time = True
        elif lowered == b"<template>" and in_time:
            in_template = True
        elif lowered == b"</template>":
            in_template = False
        elif lowered == b"</time>":
            if in_template:
                return True
            in_time = False
    return False


@given(st.lists(st.sampled_from(_INERT_PIECES) | st.integers(0, 9).map(b"<a href=%d.html>".__mod__), max_size=30))
def test_page_links_skip_what_the_crawls_html_parser_reads_as_no_markup(pieces):
    """Comments, scripts and the other raw text, templates' content: the links the crawl's lxml
    extractor reads (each once, the page itself left out), an independent reading of the same page."""
    assume(not _known_difference(pieces))
    body = b"<html><body>" + b"".join(pieces)
    expected = [url for url in dict.fromkeys(extract_links_html(body, PAGE)) if url != PAGE]
    assert page_links(body, PAGE) == expected


@given(st.lists(st.tuples(_hrefs, st.sampled_from(["a", "A", "area"]), st.sampled_from(['"', "'", ""])), max_size=15))
def test_page_links_agree_with_the_crawls_html_parser(links):
    """On plain markup, the regular expression reads the links the crawl's lxml extractor reads
    (each once, the page itself left out): an independent reading of the same page."""
    body = "<html><body>" + "".join(f"<{tag} href={q}{href}{q}>x</{tag}> " for href, tag, q in links)
    body = (body + "</body></html>").encode()
    expected = [url for url in dict.fromkeys(extract_links_html(body, PAGE)) if url != PAGE]
    assert page_links(body, PAGE) == expected


@pytest.mark.parametrize(
    ("content_type", "first", "pdf", "kind"),
    [
        ("text/html", b"", False, HTML),
        ("text/html; charset=Shift_JIS", b"anything", False, HTML),
        ("TEXT/HTML", b"", False, HTML),
        ("application/xhtml+xml", b"<?xml ?>", False, HTML),
        ("text/plain", b"<html>", False, None),  # the server's word stands
        ("image/png", b"\x89PNG", True, None),
        ("text/css", b"", False, None),
        ("application/pdf", b"%PDF-1.7", False, None),  # not without --pdf
        ("application/pdf", b"%PDF-1.7", True, PDF),
        ("application/x-pdf", b"", True, PDF),
        ("application/octet-stream", b"%PDF-1.4\n", True, PDF),
        ("application/octet-stream", b"%PDF-1.4\n", False, None),
        (None, b"<!DOCTYPE html><title>%PDF-1.7 explained</title>", True, HTML),  # a page about PDFs
        (None, b"<!DOCTYPE html><html>", False, HTML),
        ("", b"\xef\xbb\xbf  <html lang=fr>", False, HTML),
        ("application/octet-stream", b"<!-- built --><!doctype html>", False, HTML),
        (None, b"<HEAD><TITLE>x</TITLE>", False, HTML),
        (None, b"GIF89a", False, None),
        (None, b"<?xml version='1.0'?><rss>", False, None),
        (None, b"<!-- never closed", False, None),
        (None, b"", False, None),
    ],
)
def test_page_kind(content_type, first, pdf, kind):
    assert page_kind(content_type, first, pdf) == kind
    if kind is not None:
        assert may_be_page(content_type, pdf)  # a page is never skipped unread


@pytest.mark.parametrize(
    ("content_type", "pdf", "read"),
    [
        ("image/jpeg", True, False),
        ("text/javascript", False, False),
        ("application/pdf", False, False),
        ("application/pdf", True, True),
        ("text/html", False, True),
        (None, False, True),
    ],
)
def test_may_be_page(content_type, pdf, read):
    assert may_be_page(content_type, pdf) == read


def test_landing_follows_redirects_and_stops_on_loops():
    redirects = {"a": "b", "b": "c", "loop1": "loop2", "loop2": "loop1", "self": "self"}
    assert landing("a", redirects) == "c"
    assert landing("c", redirects) == "c"
    assert landing("self", redirects) == "self"
    assert landing("loop1", redirects) in ("loop1", "loop2")
    chain = {f"u{i}": f"u{i + 1}" for i in range(MAX_REDIRECTS * 2)}
    assert landing("u0", chain) == f"u{MAX_REDIRECTS}"


@pytest.mark.parametrize(
    ("links", "depths"),
    [
        ([], []),
        ([[]], [0]),
        ([[1, 2], [3], [3], []], [0, 1, 1, 2]),
        ([[1], [2], [0]], [0, 1, 2]),  # a cycle
        ([[0, 1], [1]], [0, 1]),  # links to themselves
        ([[1], [], [1], [2]], [0, 1, 0, 0]),  # 2 is reached from no earlier part: its own; 3 too
        ([[], [2], []], [0, 0, 1]),
        ([[3], [], [], [1]], [0, 2, 0, 1]),  # 2: its own part
    ],
)
def test_link_depths(links, depths):
    assert link_depths(links) == depths


class _ReadLog(list):
    """A list of links that notes which pages' links were read."""

    def __init__(self, links):
        super().__init__(links)
        self.read: list[int] = []

    def __getitem__(self, index):
        self.read.append(index)
        return super().__getitem__(index)


@pytest.mark.parametrize(
    ("links", "read"),
    [
        # Page 0 reaches every page: the links of the pages at depth 1 are never needed.
        ([[1, 2], [0, 2], [1]], [0]),
        # 1 reaches 2 and 3, which are then all the pages left: 2's and 3's links are not read.
        ([[1], [2, 3], [0], [0]], [0, 1]),
        # 3 is reached from no page: the first part is walked whole, then 3 is a root of its own.
        ([[1], [2], [], []], [0, 1, 2]),
    ],
)
def test_link_depths_reads_no_links_once_every_page_has_its_depth(links, read):
    log = _ReadLog(links)
    link_depths(log)
    assert log.read == read


@st.composite
def graphs(draw):
    size = draw(st.integers(0, 30))
    return [draw(st.lists(st.integers(0, size - 1), max_size=6)) if size else [] for _ in range(size)]


@given(graphs())
def test_link_depths_are_shortest_distances_from_the_root_of_each_part(links):
    depths = link_depths(links)
    assert len(depths) == len(links)
    roots = [page for page, depth in enumerate(depths) if depth == 0]
    assert not links or roots[0] == 0
    # Each root is a page no earlier root reaches; every page's depth is its distance from the last
    # root before it that reaches it (its part's root), computed here by a plain BFS of each part.
    seen: dict[int, int] = {}
    for root in roots:
        assert root not in seen
        distance = {root: 0}
        queue = deque([root])
        while queue:
            page = queue.popleft()
            for target in links[page]:
                if target not in distance and target not in seen:
                    distance[target] = distance[page] + 1
                    queue.append(target)
        seen.update(distance)
    assert seen == dict(enumerate(depths))


@given(graphs())
def test_link_depths_read_each_page_at_most_once_and_what_they_read_places_every_page(links):
    log = _ReadLog(links)
    depths = link_depths(log)
    assert len(log.read) == len(set(log.read))
    placed = {page for page, depth in enumerate(depths) if depth == 0}
    placed.update(target for page in log.read for target in links[page])
    assert placed == set(range(len(links)))


@pytest.mark.parametrize(
    ("content_type", "first_bytes", "kind"),
    [
        ("text/html; charset=utf-8", b"<!doctype html>", HTML),
        ("text/plain", b"notes", HTML),  # any text is a page of the crawl
        ("application/json", b"{}", HTML),
        ("image/png", b"\x89PNG\r\n\x1a\n", None),
        ("image/svg+xml", b"<svg xmlns='http://www.w3.org/2000/svg'/>", None),  # an image, though +xml
        ("application/pdf", b"%PDF-1.7", PDF),
        ("application/octet-stream", b"%PDF-1.7", PDF),
        # An untyped page that opens as HTML, about PDFs (a review's find: it was taken for a PDF).
        ("application/octet-stream", b"<!DOCTYPE html><title>Every PDF starts with %PDF-1.7</title>", HTML),
        (None, b"<html><body>%PDF-1.4 magic</body></html>", HTML),
        (None, b"junk before %PDF-1.4", PDF),  # a PDF readers take, junk first
        ("application/octet-stream", b"<p>An untyped paragraph</p>", HTML),  # sniffed as browsers do
        ("application/octet-stream", b"  <!-- x --> <A HREF=x>", HTML),
        ("application/octet-stream", b"<abbr>x</abbr>", None),  # "<a" not followed by a space or ">"
        ("application/octet-stream", b"plain words", None),  # binary data said so: not text
        ("application/x-gzip", b"\x1f\x8b\x08", None),
        (None, b"<p>Hello</p>", HTML),  # no type at all: sniffed
        (None, b'<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml">', HTML),
        (None, b"Plain text, no markup.\n", HTML),
        (None, b"GIF89a\x01\x00\x01\x00\x00\x00", None),  # binary bytes
        (None, b"\x00\x01\x02zebrafish", None),
    ],
)
def test_crawled_page_kind(content_type, first_bytes, kind):
    assert crawled_page_kind(content_type, first_bytes) == kind


@given(st.sampled_from(["application/octet-stream", None]), st.binary(max_size=500), st.binary(max_size=200))
def test_an_untyped_document_opening_as_html_is_html_whatever_follows(content_type, before, after):
    # ("%PDF-" further on, in its text, makes it no PDF.)
    assert crawled_page_kind(content_type, b"<!DOCTYPE html>" + before + b"%PDF-1.7" + after) == HTML


@given(st.sampled_from(["image/png", "image/svg+xml", "audio/ogg", "video/mp4", "font/woff2"]), st.binary(max_size=64))
def test_media_is_never_a_page_of_the_crawl(content_type, first_bytes):
    assert crawled_page_kind(content_type, first_bytes) is None


@given(st.binary(max_size=64))
def test_an_untyped_answer_starting_with_a_nul_is_no_page(first_bytes):
    kind = crawled_page_kind(None, b"\x00" + first_bytes)  # (binary data: not HTML, a PDF nor text)
    # ... but a PDF, as PDF readers take one whose "%PDF-" comes after a few bytes of junk (found by
    # hypothesis: b"\x00%PDF-").
    assert kind == (PDF if looks_like_pdf(b"\x00" + first_bytes) else None)
