"""Robots directives (rules/web/robotsmeta.py) by table and property, and a crawl of a real nginx that sends
X-Robots-Tag headers and serves pages with robots <meta>: noindex pages are saved but never an answer
(tse query, tse serve), nofollow pages' links are not followed, --ignore-robots-meta turns it off."""

import codecs

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from tests.conftest import run_tse
from tests.support.sitecrawl import crawl_served_site, query_answers
from tse_scrapy.rules.files.pagenotes import read_noindex
from tse_scrapy.rules.web.robotsmeta import NOFOLLOW, NOINDEX, product_token, robots_directives, utf16_as_utf8

BOTH = {NOINDEX, NOFOLLOW}


@pytest.mark.parametrize(
    ("headers", "body", "expected"),
    [
        ([], b'<meta name="robots" content="noindex">', {NOINDEX}),
        ([], b"<META NAME='ROBOTS' CONTENT='NoFollow'>", {NOFOLLOW}),
        ([], b'<meta content="none" name=robots>', BOTH),
        ([], b'<meta name="robots" content="index, follow">', set()),
        ([], b'<meta name="robots" content="all">', set()),
        ([], b'<meta name="description" content="noindex">', set()),  # another meta
        ([], b'<meta name="googlebot" content="noindex">', set()),  # another crawler's
        ([], b'<meta name="tse" content="noindex">', {NOINDEX}),  # this crawler's
        (["noindex"], b"", {NOINDEX}),
        (["NOINDEX, NOFOLLOW"], b"", BOTH),
        (["none"], b"", BOTH),
        (["noarchive", "nofollow"], b"", {NOFOLLOW}),  # two headers: both count
        (["googlebot: noindex"], b"", set()),
        (["tse: noindex"], b"", {NOINDEX}),
        (["*: nofollow"], b"", {NOFOLLOW}),
        (["max-snippet: 0, noindex"], b"", {NOINDEX}),  # a directive with a value, not a crawler
        (["unavailable_after: 25 Jun 2010 15:00:00 PST"], b"", set()),
        (["nofollow"], b'<meta name="robots" content="noindex">', BOTH),  # the most restrictive of both
        ([], b"<meta name=robots content=noindex", set()),  # no end to the tag
        ([], b"<html><body>no meta at all</body></html>", set()),
        # Where the head holds text, not tags: a commented-out directive (a tester's find: the page was
        # never indexed), a script's string, the title; after them, a tag again.
        ([], b'<head><!-- for staging only: <meta name="robots" content="noindex,nofollow"> --></head>', set()),
        ([], b'<head><script>var tag = \'<meta name="robots" content="noindex">\';</script></head>', set()),
        ([], b'<style>/* <meta name="robots" content="none"> */</style><title><meta name=robots content=none>', set()),
        (
            [],
            b'<!-- x --><meta name="robots" content="noindex"><!-- <meta name=robots content=nofollow> -->',
            {NOINDEX},
        ),
        ([], b'<script>x</script><meta name="robots" content="nofollow">', {NOFOLLOW}),
        # An unclosed comment runs to the end; a <noscript> directive counts (read without scripts).
        ([], b'<!-- <meta name="robots" content="noindex">', set()),
        ([], b'<noscript><meta name="robots" content="noindex"></noscript>', {NOINDEX}),
        # The head ends at its </head> or <body>, not at one in a comment or a text (a review's find: the
        # directive after it was never read); a real one ends it, and a tag after it is the body's.
        ([], b'<head><script>x="<body>"</script><meta name=robots content=noindex></head>', {NOINDEX}),
        ([], b"<head><!-- </head> --><meta name=robots content=nofollow></head>", {NOFOLLOW}),
        ([], b"<title></head></title><style><body></style><meta name=robots content=none>", BOTH),
        ([], b"<head><!-- </head> --></head><meta name=robots content=noindex>", set()),
        ([], b"<head><script>1</script><body><meta name=robots content=noindex>", set()),
    ],
)
def test_robots_directives(headers, body, expected):
    assert robots_directives(headers, body, "tse") == expected


HEAD = '<html><head><meta name="robots" content="noindex,nofollow"><title>x</title></head><body>y</body></html>'


@pytest.mark.parametrize(
    ("body", "encoding"),
    [
        (b"\xff\xfe" + HEAD.encode("utf-16-le"), None),  # by its byte order mark
        (b"\xfe\xff" + HEAD.encode("utf-16-be"), None),
        (b"\xff\xfe" + HEAD.encode("utf-16-le"), "utf-16-le"),
        (HEAD.encode("utf-16-le"), "utf-16-le"),  # by the HTTP charset alone (the page's codec)
        (HEAD.encode("utf-16-be"), "utf-16-be"),
        (b"\xff\xfe" + HEAD.encode("utf-16-le"), "cp1252"),  # (a byte order mark first, as a browser reads)
    ],
)
def test_a_utf16_pages_robots_meta_is_read(body, encoding):
    # Its bytes were scanned as they were: "<\0m\0e\0t\0a\0" is no <meta (a reviewer's find).
    assert robots_directives([], body, "tse", encoding) == BOTH


@pytest.mark.parametrize("encoding", [None, "utf-8", "cp932", "utf-16-le"])
def test_a_head_in_another_encoding_is_read_as_its_bytes(encoding):
    body = HEAD.replace("<title>x", "<title>日本語").encode("cp932" if encoding == "cp932" else "utf-8")
    expected = set() if encoding == "utf-16-le" else BOTH  # (those bytes read as UTF-16: no tag at all)
    assert robots_directives([], body, "tse", encoding) == expected


@given(st.lists(st.text(max_size=60), max_size=4), st.binary(max_size=500), st.text(max_size=20))
def test_any_input_gives_known_directives(headers, body, agent):
    assert robots_directives(headers, body, agent) <= BOTH


@given(st.sampled_from(["noindex", "nofollow", "none"]), st.sampled_from([str.lower, str.upper, str.title]))
def test_case_does_not_matter(directive, case):
    body = f'<meta name="{case("robots")}" content="{case(directive)}">'.encode()
    assert (
        robots_directives([case(directive)], b"") == robots_directives([], body) == robots_directives([directive], b"")
    )


LOCATIONS = """
        location = /header-noindex.html { add_header X-Robots-Tag "NoIndex"; }
        location = /header-none.html { add_header X-Robots-Tag "googlebot: noindex"; add_header X-Robots-Tag "none"; }
"""
PAGES = {
    "index.html": (
        "Robots directives",
        "",
        ["meta-noindex", "meta-nofollow", "header-noindex", "header-none", "plain"],
    ),
    "meta-noindex.html": ("Zebra meta noindex", '<meta name="robots" content="noindex">', ["behind-noindex"]),
    "meta-nofollow.html": ("Yak meta nofollow", '<meta name="ROBOTS" content="nofollow">', ["behind-nofollow"]),
    "header-noindex.html": ("Walrus header noindex", "", []),
    "header-none.html": ("Vole header none", "", ["behind-none"]),
    "plain.html": ("Tapir plain page", "", []),
    "behind-noindex.html": ("Shrew behind noindex", "", []),
    "behind-nofollow.html": ("Robin behind nofollow", "", []),
    "behind-none.html": ("Quail behind none", "", []),
}


def write_site(directory):
    for name, (title, meta, links) in PAGES.items():
        anchors = "".join(f'<a href="{link}.html">{link}</a> ' for link in links)
        html = f"<html><head><title>{title}</title>{meta}</head><body><p>{title}</p>{anchors}</body></html>"
        (directory / name).write_text(html)


def crawl(nginx, tmp_path, *options):
    server, pages, _ = crawl_served_site(nginx, tmp_path, write_site, LOCATIONS, 3, *options)
    saved = {}
    for path in pages.iterdir():
        if path.name.isdigit():
            saved[path.read_bytes().split(b"\n", 1)[0].decode().rsplit("/", 1)[1]] = int(path.name)
    return server, pages, saved


def answers(pages, index, queries, rank):
    """Each query's answers, by page name."""
    return [[url.rsplit("/", 1)[1] for _, url in found] for found in query_answers(pages, index, queries, rank)]


def test_noindex_pages_are_saved_but_never_answers_and_nofollow_links_are_not_followed(nginx, tmp_path):
    _, pages, saved = crawl(nginx, tmp_path)
    # Every page is saved (SPEC 2), but no link of a nofollow page (meta, or a header's none) is followed;
    # a noindex page's links are.
    assert set(saved) == set(PAGES) - {"behind-nofollow.html", "behind-none.html"}
    noted = {url.rsplit("/", 1)[1] for url in read_noindex(pages)}
    assert noted == {"meta-noindex.html", "header-noindex.html", "header-none.html"}
    index = tmp_path / "index"
    assert run_tse("index", pages, index).returncode == 0
    words = ["zebra", "walrus", "vole", "tapir", "shrew", "yak"]
    for rank in ("relevance", "tse", "bm25"):
        found = answers(pages, index, words, rank)
        assert found == [[], [], [], ["plain.html"], ["behind-noindex.html"], ["meta-nofollow.html"]], (rank, found)
    # The search page and API do not show them either.
    from starlette.testclient import TestClient

    from tse_scrapy.index.engine import QueryEngine
    from tse_scrapy.index.storage import IndexReader
    from tse_scrapy.search.app import create_app

    client = TestClient(create_app(QueryEngine(pages, IndexReader(index))))
    for rank in ("relevance", "tse", "bm25"):
        response = client.get("/api/search", params={"q": "zebra", "rank": rank}).json()
        assert response["total"] == 0, (rank, response)
    assert client.get(f"/doc/{saved['meta-noindex.html']}").status_code == 404
    # Without its document store, the engine reads the pages again: the same pages are left out.
    (tmp_path / "index.docs").unlink()
    rebuilt = TestClient(create_app(QueryEngine(pages, IndexReader(index))))
    assert rebuilt.get(f"/doc/{saved['meta-noindex.html']}").status_code == 404
    assert rebuilt.get(f"/doc/{saved['plain.html']}").status_code == 200
    assert rebuilt.get("/api/search", params={"q": "zebra", "rank": "bm25"}).json()["total"] == 0


def test_ignore_robots_meta(nginx, tmp_path):
    _, pages, saved = crawl(nginx, tmp_path, "--ignore-robots-meta")
    assert set(saved) == set(PAGES)
    assert read_noindex(pages) == frozenset()
    index = tmp_path / "index"
    assert run_tse("index", pages, index).returncode == 0
    assert answers(pages, index, ["zebra"], "relevance") == [["meta-noindex.html"]]


def test_the_reference_scanner_obeys_no_robots_meta(nginx, tmp_path):
    _, pages, saved = crawl(nginx, tmp_path, "--links", "tse")
    assert set(saved) == set(PAGES)
    assert read_noindex(pages) == frozenset()


@pytest.mark.parametrize(
    ("user_agent", "token"),
    [
        ("tse-scrapy/0.1.0 (Tiny Search Engine crawler; 1 request/s, obeys robots.txt)", "tse-scrapy"),
        ("Mozilla/5.0 (compatible; Googlebot/2.1)", "Mozilla"),
        ("  mybot", "mybot"),
        ("mybot 1.0", "mybot"),
        ("", ""),
    ],
)
def test_product_token(user_agent, token):
    assert product_token(user_agent) == token


@given(st.from_regex(r"[A-Za-z][A-Za-z0-9_-]{0,20}", fullmatch=True), st.text(max_size=40))
def test_the_product_token_is_the_first_word_whatever_follows(token, rest):
    assert product_token(f"{token}/{rest}") == token == product_token(f"{token} {rest}")


@pytest.mark.parametrize(
    ("body", "encoding", "characters", "expected"),
    [
        ("<a href=é>".encode("utf-16"), None, None, "<a href=é>".encode()),  # by its byte order mark
        ("<a>".encode("utf-16-be"), "utf-16be", None, b"<a>"),  # by its encoding, no mark
        (b"\xfe\xff" + "<a>".encode("utf-16-be"), "utf-16le", None, b"<a>"),  # the mark first, as a browser
        ("<a><b>".encode("utf-16-le"), "utf-16le", 3, b"<a>"),  # its first characters only
        ("<a>".encode("cp1251"), "cp1251", None, "<a>".encode("cp1251")),  # ASCII where markup is: as it is
        (b"<a>", "no-such-codec", None, b"<a>"),
        ("\ufeff<a>".encode("utf-16-le"), "utf-16le", None, b"<a>"),  # U+FEFF first is a byte order mark
        # A UTF-32 byte order mark is UTF-32's, as page_encoding reads it, not a UTF-16 mark and a NUL:
        ("\x00<a>".encode("utf-16"), None, None, "\x00<a>".encode("utf-16")),
        ("\x00\ufeff<a>".encode("utf-16-be"), "utf-16be", None, "\x00\ufeff<a>".encode("utf-16-be")),
    ],
)
def test_utf16_as_utf8(body, encoding, characters, expected):
    assert utf16_as_utf8(body, encoding, characters) == expected


@given(st.text(), st.sampled_from(["utf-16", "utf-16-le", "utf-16-be"]))
@example("\x00", "utf-16")  # (CI's find: b"\xff\xfe\x00\x00")
def test_utf16_as_utf8_reads_any_text_as_its_utf8(text, codec):
    # With a byte order mark ("utf-16" writes one) or told the encoding (none written): the text's UTF-8.
    told = None if codec == "utf-16" else codec
    # (A U+FEFF first, with no mark written, is one: its bytes are a byte order mark, as a browser reads them.)
    expected = text[1:] if told and text.startswith("\ufeff") else text
    body = text.encode(codec)
    if body.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        # (A NUL next to the mark makes it UTF-32's: the page is UTF-32, as the page's encoding reads it.)
        assert utf16_as_utf8(body, told) == body
    else:
        assert utf16_as_utf8(body, told) == expected.encode("utf-8")
