"""`tse serve`'s routes, with Starlette's test client over a real index of real page files."""

import json
import math
import os
import random
import re
import shutil
import tempfile
from datetime import UTC, datetime
from html import unescape
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.testclient import TestClient

from tests.conftest import run_tse
from tests.support.inprocess import tse_here, tse_ok_here
from tests.support.pages import write_pages
from tests.support.reference import build_page_directory
from tests.support.searchsite import MANY, PAGES, damaged_fts, write_search_site
from tse_scrapy.index.engine import QueryEngine
from tse_scrapy.index.storage import IndexReader
from tse_scrapy.rules.crawling import secrets
from tse_scrapy.rules.crawling.secrets import mask_url
from tse_scrapy.search import app as app_module
from tse_scrapy.search.app import allowed_hosts, create_app


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return write_search_site(tmp_path_factory.mktemp("search"))


@pytest.fixture(scope="module")
def client(site):
    pages, index = site
    return TestClient(create_app(QueryEngine(pages, IndexReader(index))))


def test_home_page_has_a_labelled_search_box_in_a_get_form(client):
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    html = page.text
    assert re.search(r'<form action="/search" method="get"', html)
    assert re.search(r'<label class="label" for="q">[^<]+</label>\s*<input type="search" id="q" name="q"', html)
    assert '<meta name="viewport"' in html
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)  # no external assets
    assert "<script" not in html


@pytest.mark.parametrize("query", ["", " ", "%20%09"])
def test_an_empty_query_redirects_home(client, query):
    response = client.get(f"/search?q={query}", follow_redirects=False)
    assert response.status_code in (302, 303) and response.headers["location"] == "/"


@pytest.mark.parametrize("query", ["q=cat", "q=cat&rank=tse&page=2", "q=%C3%A9t%C3%A9", "q=deb%C3ian"])
def test_a_query_sent_to_the_home_page_goes_to_its_results(client, query):
    # A browser's site search or a URL typed by hand (/?q=...): the results, not the empty search page.
    response = client.get(f"/?{query}", follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == f"/search?{query}"


@pytest.mark.parametrize("query", ["", "q=", "q=%20", "page=2"])
def test_the_home_page_without_a_query_is_the_search_page(client, query):
    response = client.get(f"/?{query}", follow_redirects=False)
    assert response.status_code == 200 and '<input type="search" id="q" name="q"' in response.text


def test_results_in_rank_order_with_titles_snippets_and_saved_copies(client):
    page = client.get("/search", params={"q": "cat", "rank": "tse"})
    assert page.status_code == 200
    html = page.text
    assert "5 documents match" in html
    items = re.findall(r"<li>(.*?)</li>", html, re.S)
    assert len(items) == 5
    # SPEC 4 scores: cats.html and evil.html have "cat" twice, the others once; ties by docID
    assert [re.search(r'href="/saved/(\d+)"', item).group(1) for item in items] == ["1", "3", "2", "4", "5"]
    assert "score 2 " in items[0] and "score 2 " in items[1] and "score 1 " in items[2]
    assert '<a href="http://h/cats.html" rel="noreferrer nofollow">Cats &amp; Dogs</a>' in items[0]
    assert "A <mark>cat</mark> and a dog. The <mark>cat</mark> sleeps." in items[0]
    assert '<div class="title" dir="auto">http://h/untitled.html</div>' not in items[4]  # a live URL is a link
    assert ">http://h/untitled.html</a>" in items[4]  # no title: the URL stands for it


def test_hostile_pages_show_as_inert_text(client):
    html = client.get("/search", params={"q": "cat", "rank": "tse"}).text
    listed = re.findall(r"<li>(.*?)</li>", html, re.S)
    items = {re.search(r'href="/saved/(\d+)"', item).group(1): item for item in listed}
    evil, javascript = items["3"], items["4"]
    for item in (evil, javascript):
        assert "<script" not in item and "<img" not in item and "onerror" not in item
    assert ">alert(&#39;title&#39;) Evil cat</a>" in evil  # the title's markup, as text
    escaped_url = "http://h/evil.html?x=&#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"
    assert f'<a href="{escaped_url}" rel="noreferrer nofollow">' in evil  # the URL, escaped in the link
    assert f'<div class="url" dir="ltr">{escaped_url}</div>' in evil  # and in the text
    assert 'href="javascript:' not in html
    assert '<div class="title" dir="auto">javascript:alert(3)</div>' in javascript  # not a link
    # decoded, escaped again
    assert '<div class="snippet" dir="auto"><mark>cat</mark> &lt;b&gt;escaped&lt;/b&gt;</div>' in evil
    assert "document.title" not in html  # script text is not visible text


def test_query_errors_show_the_queriers_message(client):
    for query, message in [
        ("cat!", "Error: bad character &#39;!&#39; in query."),
        ("and cat", "Error: &#39;and&#39; cannot be first"),
        ("<b>", "Error: bad character &#39;&lt;&#39; in query."),
    ]:
        page = client.get("/search", params={"q": query, "rank": "tse"})
        assert page.status_code == 400 and message in page.text, page.text


def test_saved_copy_is_the_saved_bytes_sandboxed(client, site):
    response = client.get("/doc/3")
    assert response.status_code == 200
    # The saved bytes after a <base> naming the page's URL (escaped: it holds a script tag), so that
    # its relative links lead to the site's pages (the window's, framed under its banner); a
    # javascript: URL names none.
    base = b'<base href="http://h/evil.html?x=&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;" target="_top">'
    assert response.content == base + PAGES[3][1]
    assert client.get("/doc/4").content == PAGES[4][1]
    policy = response.headers["content-security-policy"]
    assert "sandbox" in policy and "default-src 'none'" in policy
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["content-type"] == "text/html; charset=utf-8"  # the charset it was indexed in
    for missing in ("/doc/0", f"/doc/{6 + MANY}", "/doc/99999999999999999999", "/doc/abc", "/doc/-1"):
        assert client.get(missing).status_code == 404, missing


def test_a_saved_copy_page_says_whose_copy_it_is_and_frames_it_sandboxed(client, site):
    pages, _ = site
    response = client.get("/saved/3")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    html = response.text
    # The copy in a frame of this server's, as sandboxed as the copy itself (no scripts, no forms).
    assert '<iframe class="copy" src="/doc/3" sandbox="allow-top-navigation-by-user-activation"' in html
    policy = response.headers["content-security-policy"]
    assert "frame-src 'self'" in policy and "default-src 'none'" in policy and "frame-ancestors 'none'" in policy
    # Its URL and title, escaped (the page holds a script in both), and when it was saved: its file's time.
    escaped_url = "http://h/evil.html?x=&#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"
    assert f'<a href="{escaped_url}" rel="noreferrer nofollow">{escaped_url}</a>' in html
    assert "alert(&#39;title&#39;) Evil cat" in html and "<script" not in html and "<img" not in html
    saved = datetime.fromtimestamp((pages / "3").stat().st_mtime, UTC)
    assert f'<time datetime="{saved:%Y-%m-%dT%H:%M:%SZ}">{saved:%Y-%m-%d %H:%M} UTC</time>' in html
    # A URL that is no web page's is shown, not linked.
    javascript = client.get("/saved/4").text
    assert "saved copy of <bdi>javascript:alert(3)</bdi>" in javascript and 'href="javascript:' not in javascript
    for missing in ("/saved/0", f"/saved/{6 + MANY}", "/saved/99999999999999999999", "/saved/abc", "/saved/-1"):
        answer = client.get(missing)
        assert answer.status_code == 404 and 'class="error" role="alert"' in answer.text, missing


def test_a_saved_copy_banner_shows_a_titles_direction_marks_and_a_time_no_date_can_say(tmp_path):
    # A reviewer's finds: a title of right-to-left overrides reversed the rest of the banner (the saved
    # date, "The copy alone"), and a page file's time past any date (set by hand, on a tmpfs: ext4 keeps
    # none past 2446) made the page a 500.
    shm = Path("/dev/shm")
    root = Path(tempfile.mkdtemp(dir=shm)) if shm.is_dir() and os.access(shm, os.W_OK) else tmp_path
    try:
        title = "\u202eevil.com \u2066x"
        pages = write_pages(root / "pages", {1: ("http://h/a.html", 0, f"<title>{title}</title>a cat".encode())})
        tse_ok_here("index", pages, root / "index")
        client = TestClient(create_app(QueryEngine(pages, IndexReader(root / "index"))))
        html = client.get("/saved/1").text
        banner = html[html.index('<div class="saved"') :]
        assert "\u202e" not in banner and "\u2066" not in banner and "U+202Eevil.com U+2066x" in banner
        os.utime(pages / "1", (0, 1e12))
        if (pages / "1").stat().st_mtime < 1e12:
            pytest.skip("this file system keeps no time past any date")
        answer = client.get("/saved/1")
        assert answer.status_code == 200 and "the page may have changed since" in answer.text
        assert "<time" not in answer.text and '<iframe class="copy" src="/doc/1"' in answer.text
    finally:
        if root != tmp_path:
            shutil.rmtree(root)


def test_a_path_of_no_route_is_a_page_with_the_search_box_or_json_under_api(client):
    # (Starlette's bare "Not Found", no way back: a tester's find.)
    for path in ("/whatsnew/changelog.html", "/doc/0", "/doc/99999999"):
        page = client.get(path)
        assert page.status_code == 404 and page.headers["content-type"].startswith("text/html")
        assert '<input type="search" id="q" name="q"' in page.text and 'class="error" role="alert"' in page.text
        assert "<title>Not found - tse search</title>" in page.text  # (" - tse search": a tester's find)
    assert "No such document: 0." in client.get("/doc/0").text
    answer = client.get("/api/nothing")
    assert answer.status_code == 404 and answer.json() == {"error": "no such path: /api/nothing"}


def test_healthz(client):
    response = client.get("/healthz")
    assert response.status_code == 200 and response.text == "ok"


def api(client, **params):
    response = client.get("/api/search", params=params)
    return response.status_code, response.json()


def test_api_shape_and_highlights(client):
    status, body = api(client, q="cat or emu", per_page=3, rank="tse")
    assert status == 200
    assert set(body) == {"query", "rank", "total", "page", "per_page", "results"}
    assert (body["query"], body["rank"], body["total"], body["page"], body["per_page"]) == (
        "cat or emu",
        "tse",
        30,
        1,
        3,
    )
    first = body["results"][0]
    assert set(first) == {"docid", "url", "score", "title", "snippet", "highlights"}
    assert (first["docid"], first["url"], first["score"], first["title"]) == (1, "http://h/cats.html", 2, "Cats & Dogs")
    for result in body["results"]:
        assert result["highlights"]
        for start, end in result["highlights"]:
            assert result["snippet"][start:end].lower() in ("cat", "emu")


def test_pagination(client):
    html = client.get("/search", params={"q": "emu", "rank": "tse"}).text
    assert "25 documents match" in html and "page 1 of 3" in html
    assert len(re.findall(r"<li>", html)) == 10
    assert 'rel="prev"' not in html
    next_url = unescape(re.search(r'<a rel="next" href="([^"]+)"', html).group(1))
    second = client.get(next_url).text
    assert 'rel="prev"' in second and 'rel="next"' in second and "&larr; Previous</a>" in second
    assert re.search(r'<ol class="results" start="11">', second)
    last = client.get("/search", params={"q": "emu", "page": 3, "rank": "tse"}).text
    assert len(re.findall(r"<li>", last)) == 5 and 'rel="next"' not in last
    for page in (4, 1_000_000):  # past the last page: its previous page is the last
        past = client.get("/search", params={"q": "emu", "page": page, "rank": "tse"})
        assert past.status_code == 200 and "<li>" not in past.text
        previous = unescape(re.search(r'<a rel="prev" href="([^"]+)"', past.text).group(1))
        assert "page=3" in previous and 'rel="next"' not in past.text
        assert f"page {page} of 3" not in past.text and "past the last page (3)" in past.text
        assert re.search(r'<a rel="prev" href="[^"]+">&larr; Last page</a>', past.text)
    nothing = client.get("/search", params={"q": "zzzqqqxx", "page": 2, "rank": "tse"}).text
    assert "0 documents match" in nothing and "past the last page" not in nothing
    # Each page of results links to the others by number, its own shown, not linked.
    numbers = re.search(r'<span class="numbers">(.*?)</span>\s*<a rel="next"', second, re.S).group(1)
    linked = [(unescape(url), number) for url, number in re.findall(r'<a href="([^"]+)">(\d+)</a>', numbers)]
    assert [number for _, number in linked] == ["1", "3"] and '<span aria-current="page">2</span>' in numbers
    assert all(f"page={number}" in url and "q=emu" in url and "rank=tse" in url for url, number in linked)
    assert '<span class="numbers">' not in past.text and '<span class="numbers">' not in nothing
    assert api(client, q="emu", page=3, per_page=10, rank="tse")[1]["results"][-1]["docid"] == 30
    status, body = api(client, q="emu", page=2, per_page=100, rank="tse")
    assert status == 200 and body["results"] == [] and body["total"] == 25


@pytest.mark.parametrize(
    ("page", "pages", "shown"),
    [
        (1, 1, []),
        (1, 3, [1, 2, 3]),
        (3, 3, [1, 2, 3]),
        (4, 3, []),
        (1, 40, list(range(1, 11))),
        (20, 40, list(range(15, 25))),
        (40, 40, list(range(31, 41))),
        (6, 12, list(range(1, 11))),
    ],
)
def test_a_results_page_links_to_ten_pages_around_its_own(page, pages, shown):
    assert list(app_module._page_numbers(page, pages)) == shown


def test_a_pages_direction_controls_reorder_nothing_around_them(tmp_path):
    """A page's right-to-left override (unclosed, as a hostile page leaves it) in its URL, title or
    snippet: on the results page each is in an element with a dir attribute (isolated by HTML's own
    style sheet, which ends an override at its end), the URL's controls percent-encoded (``url_as_shown``:
    an override in it would turn the URL around); the JSON keeps the text as it is; ``tse query``'s
    terminal lines show the URL percent-encoded."""
    from lxml import html as lxml_html

    controls = "\u202e\u202d\u202a\u2066\u2067"
    spoofed = "http://h/\u202elmth.exe"  # read as "http://h/exe.html" were the override let act
    pages = write_pages(
        tmp_path / "pages",
        {
            1: (spoofed, 0, f"<title>\u202eevil.com cat</title><p>cat \u202d{controls} left open".encode()),
            2: ("http://h/next.html", 0, b"<title>next cat</title><p>cat cat and more"),
        },
    )
    tse_ok_here("index", pages, tmp_path / "index")
    client = TestClient(create_app(QueryEngine(pages, IndexReader(tmp_path / "index"))))
    for rank in ("relevance", "tse"):
        page = lxml_html.fromstring(client.get("/search", params={"q": "cat", "rank": rank}).text)
        results = page.xpath("//ol[@class='results']/li")
        assert len(results) == 2
        shown = [text for text in page.xpath("//body//text()") if any(c in text for c in controls)]
        assert shown, "the title and snippet keep their controls"
        for text in shown:
            holder = text.getparent() if text.is_text else text.getparent().getparent()
            assert holder.xpath("ancestor-or-self::*[@dir]"), (text, lxml_html.tostring(holder))
        urls = page.xpath("//div[@class='url' and @dir='ltr']/text()")
        assert sorted(urls) == ["http://h/%E2%80%AElmth.exe", "http://h/next.html"], urls
    answer = client.get("/api/search", params={"q": "cat"}).json()
    first = next(result for result in answer["results"] if result["url"] == spoofed)
    assert first["title"] == "\u202eevil.com cat" and controls in first["snippet"]
    lines = run_tse("query", pages, tmp_path / "index", input=b"cat\n").stdout.decode()
    assert "http://h/%E2%80%AElmth.exe" in lines and not any(c in lines for c in controls), lines


@pytest.mark.parametrize("control", ["\u202e", "\u202b", "\u2067", "\u200f", "\u061c"])
def test_a_direction_control_typed_is_shown_by_its_code_point_in_the_title_and_the_error(client, control):
    # rank=tse refuses it as a bad character; relevance takes it as no word.  Either way the page's
    # title and message name it, and the text after it reads in its own direction.
    for rank in ("tse", "relevance"):
        html = client.get("/search", params={"q": f"cat{control}x", "rank": rank}).text
        title = re.search(r"<title>(.*?)</title>", html, re.S).group(1)
        assert control not in title and f"U+{ord(control):04X}" in title, title
        message = re.search(r'<p class="error" role="alert">(.*?)</p>', html, re.S)
        if message:
            assert control not in message.group(1) and f"U+{ord(control):04X}" in message.group(1)
    html = client.get("/search", params={"q": f"{control}cat", "rank": "tse"}).text
    assert re.search(r'<p class="error" role="alert">Error: bad character &#39;U\+[0-9A-F]{4}&#39;', html), html


@pytest.mark.parametrize("rank", ["tse", "relevance"])
def test_a_control_character_typed_is_never_echoed_into_the_page(client, rank):
    # A NUL (or another C0/C1 control) is a parse error in HTML: shown as U+FFFD wherever the query is.
    for typed in ("cat\x00emu", "cat \x01\x7f\x9b emu", "\x00"):
        response = client.get("/search", params={"q": typed, "rank": rank})
        assert response.status_code in (200, 400)
        assert not re.search("[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]", response.text), repr(response.text)
        assert "\ufffd" in response.text


@pytest.mark.parametrize(
    "params",
    [
        {"q": "cat", "page": "0"},
        {"q": "cat", "page": "x"},
        {"q": "cat", "page": "-1"},
        {"q": "cat", "page": "1.5"},
        {"q": "cat", "per_page": "0"},
        {"q": "cat", "per_page": "101"},
        {"q": "cat", "rank": "pagerank"},
        {"q": "cat!", "rank": "tse"},
        {"q": "or cat", "rank": "bm25"},
        {"q": "cat", "lang": "fr", "rank": "tse"},
        {"q": "cat", "lang": "French"},
        {"q": "!!!"},
        {"q": "-cat"},
        {"q": ""},
        {"q": "x" * 1001},
        {"q": " ".join(["cat"] * 101)},
    ],
)
def test_api_refuses_bad_input_with_400(client, params):
    status, body = api(client, **params)
    assert status == 400 and list(body) == ["error"] and body["error"], body


@pytest.mark.parametrize("rank", ["tse", "bm25"])
def test_a_word_in_another_alphabet_under_the_tse_rankings_says_why(client, rank):
    # "Error: bad character 'é' in query." alone read as a fault (a tester's find): it says which
    # ranking reads every language, and the querier's own message is kept in front.
    hint = f"rank={rank} reads words of ASCII letters only, as the TSE querier does: rank=relevance reads any language."
    status, body = api(client, q="réseau", rank=rank)
    assert (status, body) == (400, {"error": f"Error: bad character 'é' in query. {hint}"}), body
    page = client.get("/search", params={"q": "réseau", "rank": rank})
    assert page.status_code == 400 and hint in unescape(page.text)
    assert api(client, q="réseau", rank="relevance")[0] == 200
    assert api(client, q="réseau", rank="RELEVANCE")[1]["rank"] == "relevance"  # (in any case: a tester's find)
    # Another of the querier's errors says only itself.
    assert api(client, q="and cat", rank=rank)[1] == {"error": "Error: 'and' cannot be first"}


def test_a_query_string_that_is_not_utf8_is_refused_not_searched_with_replacement_characters(client):
    # "deb%C3ian": a byte that starts a character and no character after it; Starlette reads it as
    # U+FFFD, and "deb\ufffdian" was searched (0 results, no word of it said wrong).
    message = "the query string must be UTF-8: bytes of it, or a percent-escape in it, encode no character"
    for query in ("q=deb%C3ian", "q=cat&lang=%FF", "q=%E6%97%A5%E6%9C"):
        answer = client.get(f"/api/search?{query}")
        assert (answer.status_code, answer.json()) == (400, {"error": message}), query
        page = client.get(f"/search?{query}")
        assert page.status_code == 400 and message in unescape(page.text), query
    # A replacement character typed (its UTF-8, escaped), and any other character, are searched.
    assert client.get("/api/search?q=%EF%BF%BD%20cat").status_code == 200
    assert client.get("/api/search?q=%E6%97%A5%E6%9C%AC").status_code == 200


def test_limits_are_exact(client):
    longest = " ".join(["x" * 9] * 99 + ["x" * 10])  # 1,000 characters, 100 words
    assert len(longest) == 1000 and api(client, q=longest) == (200, {**api(client, q=longest)[1], "total": 0})
    assert api(client, q=longest + "x")[0] == 400  # 1,001 characters
    assert api(client, q=" ".join(["cat"] * 100))[0] == 200
    assert api(client, q=" ".join(["cat"] * 101))[0] == 400
    assert api(client, q=" ".join(["cat"] * 101))[1]["error"] == "Error: the query has too many words (at most 100)."


def test_a_query_over_a_limit_gets_one_message_from_the_api_the_page_and_the_querier(client, site):
    over = {
        "x" * 1001: "Error: the query is too long (at most 1,000 characters).",
        " ".join(["cat"] * 101): "Error: the query has too many words (at most 100).",
    }
    for line, message in over.items():
        for rank in ("relevance", "tse", "bm25"):
            assert api(client, q=line, rank=rank) == (400, {"error": message})
            page = client.get("/search", params={"q": line, "rank": rank})
            assert page.status_code == 400 and message in unescape(page.text)
    pages, index = site
    typed = "".join(f"{line}\n" for line in over).encode()
    result = run_tse("query", pages, index, "--rank", "relevance", input=typed)
    assert result.returncode == 0 and result.stdout.decode().splitlines() == list(over.values()), result


def test_an_or_with_nothing_to_join_is_left_out_by_the_api_and_the_querier(client, site):
    # "or" is on no page: as a required word, it made every answer a partial one.
    lines = {"cat OR": "cat", "OR cat": "cat", "-dog OR cat OR": "cat -dog", "cat OR ! dog": "cat OR dog"}
    for line, meant in lines.items():
        answer, expected = api(client, q=line)[1], api(client, q=meant)[1]
        assert answer == {**expected, "query": line} and answer["results"] and not answer["partial"], line
    pages, index = site
    typed = "".join(f"{line}\n" for line in lines).encode()
    result = run_tse("query", pages, index, "--rank", "relevance", input=typed)
    assert result.returncode == 0, result.stderr
    meant = run_tse(
        "query", pages, index, "--rank", "relevance", input="".join(f"{m}\n" for m in lines.values()).encode()
    )
    assert result.stdout == meant.stdout and result.stdout.decode().count("Query: cat\n") == 2


# BM25 worked by hand for "dog or cat" on PAGES + 25 emu pages: N = 30.
def test_bm25_by_hand(client, site):
    status, body = api(client, q="dog or cat", rank="bm25")
    assert status == 200 and body["rank"] == "bm25"
    scores = {result["docid"]: result["score"] for result in body["results"]}
    # Every page's dl, counted by hand (SPEC 3: runs of 3+ letters outside tags, entity names included):
    dl = {
        1: 9,  # cats amp dogs cat and dog the cat sleeps
        2: 7,  # dogs dog dog dog and one cat
        3: 9,  # alert title evil cat cat escaped document title ran
        4: 3,  # cat javascript url
        5: 3,  # title one cat
    }
    emu_dl = {d: d + 2 for d in range(6, 31)}  # emu, "filler" d times, emu
    average = (sum(dl.values()) + sum(emu_dl.values())) / 30
    assert average == 531 / 30

    def idf(n):
        return math.log(1 + (30 - n + 0.5) / (n + 0.5))

    def term(tf, length):
        return tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / average))

    expected = {
        1: idf(2) * term(1, dl[1]) + idf(5) * term(2, dl[1]),  # dog once; cat twice
        2: idf(2) * term(3, dl[2]) + idf(5) * term(1, dl[2]),
        3: idf(5) * term(2, dl[3]),
        4: idf(5) * term(1, dl[4]),
        5: idf(5) * term(1, dl[5]),
    }
    assert scores == pytest.approx(expected, rel=1e-12)
    assert [result["docid"] for result in body["results"]] == sorted(expected, key=lambda d: (-expected[d], d))


def tse_query(pages, index, queries, *options):
    """`tse query` on *queries*: each query's ranked (score text, docID) list, or None for an error."""
    result = run_tse("query", pages, index, *options, input="".join(q + "\n" for q in queries).encode())
    assert result.returncode == 0, result.stderr
    answers = []
    for line in result.stdout.decode().splitlines():
        if line.startswith(("Query: ", "Error: bad character")):
            answers.append([] if line.startswith("Query: ") else None)
        elif line.startswith("Error: "):
            answers[-1] = None
        elif found := re.match(r"score +(\S+) doc +(\d+): ", line):
            answers[-1].append(found.groups())
    return answers


def generated_queries(words, count, seed):
    rng = random.Random(seed)
    queries = []
    for _ in range(count):
        parts = [rng.choice(words)]
        for _ in range(rng.randrange(3)):
            parts += [rng.choice(["", "and", "or"]), rng.choice(words)]
        queries.append(" ".join(part for part in parts if part))
    return queries


def api_ranking(client, query, rank):
    """The API's ranked (docID, score) list for *query*, all pages of it, or None for a query error."""
    ranked, page = [], 1
    while True:
        status, body = api(client, q=query, rank=rank, page=page, per_page=100)
        if status == 400 and body["error"].startswith("Error: '"):
            return None
        assert status == 200, body
        ranked += [(result["docid"], result["score"]) for result in body["results"]]
        if page * 100 >= body["total"]:
            return ranked
        page += 1


def assert_same_as_tse_query(client, pages, index, queries):
    for rank, options, shown in [("tse", (), str), ("bm25", ("--rank", "bm25"), lambda s: f"{s:.3f}")]:
        expected = tse_query(pages, index, queries, *options)
        assert len(expected) == len(queries)
        for query, answer in zip(queries, expected, strict=True):
            ranked = api_ranking(client, query, rank)
            if answer is None:
                assert ranked is None, query
            else:
                assert [(shown(score), str(doc_id)) for doc_id, score in ranked] == answer, query


def test_both_rankings_equal_tse_query(client, site):
    pages, index = site
    words = ["cat", "dog", "dogs", "emu", "filler", "title", "yak", "the", "and cat"]
    assert_same_as_tse_query(client, pages, index, generated_queries(words, 120, seed=1))


def test_both_rankings_equal_tse_query_on_a_reference_crawl(reference_dir, mirror, tmp_path):
    pages = build_page_directory(reference_dir, mirror, "toscrape-2", tmp_path / "toscrape-2")
    tse_ok_here("index", pages, tmp_path / "index")
    text = (tmp_path / "index").read_text().splitlines()
    rng = random.Random(2)
    words = [line.split()[0] for line in rng.sample(text, 60)] + ["book", "price", "stock", "the", "zzz"]
    client = TestClient(create_app(QueryEngine(pages, IndexReader(tmp_path / "index"))))
    assert_same_as_tse_query(client, pages, tmp_path / "index", generated_queries(words, 300, seed=3))


def test_api_body_is_json_with_the_query_as_typed(client):
    response = client.get("/api/search", params={"q": "  Cat  AND dog "})
    assert response.headers["content-type"] == "application/json"
    assert json.loads(response.content)["query"] == "  Cat  AND dog "


def test_the_document_store_follows_the_page_files(site, tmp_path):
    pages, _ = site
    copy = tmp_path / "pages"
    shutil.copytree(pages, copy)
    tse_ok_here("index", copy, tmp_path / "index")
    engine = QueryEngine(copy, IndexReader(tmp_path / "index"))
    assert engine.docs.from_file and engine.document(1).url == "http://h/cats.html"
    # The same page under another URL: the text index is the same, the store is stale.
    (copy / "1").write_bytes((copy / "1").read_bytes().replace(b"http://h/cats.html", b"http://h/moved.html"))
    engine = QueryEngine(copy, IndexReader(tmp_path / "index"))
    assert not engine.docs.from_file and engine.document(1).url == "http://h/moved.html"
    _, body = api(TestClient(create_app(engine)), q="sleeps")
    assert [result["url"] for result in body["results"]] == ["http://h/moved.html"]


def test_a_url_line_that_is_not_utf8_is_shown_as_the_querier_shows_it(tmp_path):
    pages = write_pages(tmp_path / "pages", {1: (b"http://h/caf\xe9.html", 0, b"<title>Caf\xe9</title>coffee")})
    tse_ok_here("index", pages, tmp_path / "index")
    client = TestClient(create_app(QueryEngine(pages, IndexReader(tmp_path / "index"))))
    (result,) = api(client, q="coffee")[1]["results"]
    assert result["url"] == "http://h/caf\ufffd.html"
    answer = run_tse("query", pages, tmp_path / "index", input=b"coffee\n").stdout.decode()
    assert "doc   1: http://h/caf\ufffd.html" in answer


def test_a_document_store_that_cannot_be_written_is_one_line(site, tmp_path):
    pages, _ = site
    (tmp_path / ".index.docs.partial").mkdir()  # where the store is written first
    result = tse_here("index", pages, tmp_path / "index")  # (the command's code, in this process)
    lines = result.stderr.decode().splitlines()
    assert result.returncode == 1 and lines == [f"tse index: {tmp_path}/.index.docs.partial: Is a directory"]
    assert not (tmp_path / "index").exists()
    assert not (tmp_path / "index.docs").exists()


def test_a_server_on_loopback_answers_only_loopback_names(site):
    pages, index = site
    app = create_app(QueryEngine(pages, IndexReader(index)), allowed_hosts("127.0.0.1"))
    for host in ("127.0.0.1:8000", "localhost:8000", "127.0.0.1"):
        assert TestClient(app).get("/healthz", headers={"host": host}).status_code == 200, host
    for host in ("evil.example:8000", "attacker.test"):
        assert TestClient(app).get("/healthz", headers={"host": host}).status_code == 400, host
    assert allowed_hosts("0.0.0.0") is None and allowed_hosts("192.168.1.5") is None and allowed_hosts("::") is None


def test_a_server_on_ipv6_loopback_answers_only_loopback_names(site):
    # `tse serve --host ::1` took any Host header: a page elsewhere could read it through a name of its
    # own resolved to ::1 (DNS rebinding), which a server on 127.0.0.1 refuses.
    pages, index = site
    app = create_app(QueryEngine(pages, IndexReader(index)), allowed_hosts("::1"))
    for host in ("[::1]:8000", "[::1]", "localhost:8000", "LOCALHOST"):
        assert TestClient(app).get("/healthz", headers={"host": host}).status_code == 200, host
    for host in ("evil.example:8000", "[::2]:8000", "::1", "[::1", "attacker.test"):
        assert TestClient(app).get("/healthz", headers={"host": host}).status_code == 400, host


def test_a_server_on_an_ipv4_loopback_address_mapped_into_ipv6_answers_only_loopback_names(site):
    # `--host ::ffff:127.0.0.1` (which Python's ipaddress does not call loopback) took any Host header.
    pages, index = site
    app = create_app(QueryEngine(pages, IndexReader(index)), allowed_hosts("::ffff:127.0.0.1"))
    for host in ("[::ffff:127.0.0.1]:8000", "127.0.0.1:8000", "localhost"):
        assert TestClient(app).get("/healthz", headers={"host": host}).status_code == 200, host
    for host in ("evil.example:8000", "[::ffff:127.0.0.2]", "attacker.test"):
        assert TestClient(app).get("/healthz", headers={"host": host}).status_code == 400, host
    assert allowed_hosts("::ffff:192.168.1.5") is None


def _two_languages(root):
    """The app over pages in English and in French, each holding "debian"."""
    pages = write_pages(
        root / "pages",
        {
            1: ("http://h/en.html", 0, b"<html lang='en'><title>Debian</title><body>debian installer</body></html>"),
            2: ("http://h/fr.html", 0, b"<html lang='fr'><title>Debian</title><body>debian en fran\xc3\xa7ais</body>"),
            3: ("http://h/en2.html", 0, b"<html lang='en'><title>More</title><body>debian once more</body></html>"),
        },
    )
    tse_ok_here("index", pages, root / "index")
    return TestClient(create_app(QueryEngine(pages, IndexReader(root / "index"))))


LANGUAGE_IGNORED = "The language choice applies only to relevance ranking: these results are in all languages."


@pytest.mark.parametrize("rank", ["tse", "bm25"])
def test_the_page_says_a_language_chosen_applies_only_to_relevance_and_keeps_the_choice(tmp_path, rank):
    client = _two_languages(tmp_path)
    page = client.get("/search", params={"q": "debian", "rank": rank, "lang": "FR"})
    assert page.status_code == 200
    html = page.text
    assert re.findall(r'<p class="notice">([^<]*)</p>', html) == [LANGUAGE_IGNORED]
    assert "3 documents match" in html  # every language's pages
    assert '<option value="fr" selected>French (fr)</option>' in html  # the menu keeps the choice
    assert '<option value="" selected' not in html
    # relevance: the choice is used, and nothing to say; no choice: nothing to say
    for params in ({"rank": "relevance", "lang": "fr"}, {"rank": rank}):
        html = client.get("/search", params={"q": "debian", **params}).text
        assert LANGUAGE_IGNORED not in html and 'class="error"' not in html
    assert "1 document matches" in client.get("/search", params={"q": "debian", "lang": "fr"}).text
    # the API still refuses it
    assert api(client, q="debian", rank=rank, lang="fr") == (400, {"error": "lang= needs rank=relevance"})


def test_no_page_in_the_language_chosen_offers_every_language(tmp_path):
    # "installer" is on an English page only: kept to French, nothing, and a way out of the filter.
    client = _two_languages(tmp_path)
    html = client.get("/search", params={"q": "installer", "lang": "fr"}).text
    assert "0 documents match" in html
    link = re.search(r'<p>No page in French \(fr\) matches\. <a href="([^"]+)">1 in all languages</a></p>', html)
    every = client.get(unescape(link.group(1))).text
    assert "1 document matches" in every and "http://h/en.html" in every
    # With pages in the language, no language chosen, none in any language, or the choice ignored
    # (rank=tse, which says so): not said.
    for params in ({"q": "debian", "lang": "fr"}, {"q": "zzzqqq"}, {"q": "zzzqqq", "lang": "fr"}):
        assert "in all languages</a>" not in client.get("/search", params=params).text
    assert "in all languages</a>" not in client.get("/search", params={"q": "zzzqqq", "lang": "fr", "rank": "tse"}).text


def test_the_query_is_quoted_in_the_sentences_direction_and_isolated(client):
    # Quote marks outside an isolate (<bdi>): a right-to-left query or a direction control typed
    # neither turns them around nor carries the sentence after it (a tester's find).
    html = client.get("/search", params={"q": "\u062a\u062b\u0628\u064a\u062a cat", "rank": "relevance"}).text
    typed = "\u062a\u062b\u0628\u064a\u062a cat"
    count = rf'<p class="count">\d+ documents? match(es)?( some words of)? “<bdi>{typed}</bdi>”'
    assert re.search(count, html)
    assert "<q" not in html


def test_a_search_index_damaged_where_a_search_reads_is_503_not_400(site, tmp_path):
    pages, built = site
    for path in built.parent.iterdir():  # a copy of the module's index, to damage (its pages only read)
        if path.is_file():
            shutil.copy2(path, tmp_path / path.name)
    index = tmp_path / built.name
    engine = QueryEngine(pages, IndexReader(index))
    client = TestClient(create_app(engine))
    assert api(client, q="emu", rank="relevance")[0] == 200  # opened, its checks passed
    damaged_fts(index)  # then damaged in place (a disk's fault: the server takes the file as never changing) ...
    # ... where a search reads it from the file, not from its cache (as a large index's pages past it are)
    engine.search_index.db.execute("PRAGMA shrink_memory")
    message = (
        "rank=relevance cannot read the search index (database disk image is malformed):"
        " run tse index again without --update"
    )
    assert api(client, q="cat", rank="relevance") == (503, {"error": message})
    page = client.get("/search", params={"q": "cat", "rank": "relevance"})
    assert page.status_code == 503 and f'<p class="error" role="alert">{message}</p>' in page.text
    # the query's own errors are still 400, and the SPEC index still answers
    assert api(client, q="-cat", rank="relevance")[0] == 400
    assert api(client, q="cat", rank="tse")[0] == 200


def test_a_url_of_megabytes_is_shown_cut_and_not_linked(tmp_path):
    # A page file made by hand may hold a URL line of megabytes (a crawl keeps URLs to 2,083 characters):
    # 5 MB made each results page 15 MB (the title, the link and the URL shown) and the saved copy's 25 MB
    # (a tester's find).  Shown cut, linked only when short enough; the API gives it whole.
    long_url = "http://h/" + "x" * 100_000
    pages = write_pages(
        tmp_path / "pages",
        {
            1: (long_url, 0, b"<p>lemurs of Madagascar</p>"),
            2: ("http://h/short.html", 0, b"<title>Short</title>lemurs"),
        },
    )
    index = tmp_path / "index"
    tse_ok_here("index", pages, index)
    client = TestClient(create_app(QueryEngine(pages, IndexReader(index))))
    html = client.get("/search", params={"q": "lemurs"}).text
    shown = long_url[:300] + " \u2026"
    assert len(html) < 20_000 and "x" * 301 not in html
    assert f'<div class="title" dir="auto">{shown}</div>' in html  # no title: the URL, cut, not linked
    assert f'<div class="url" dir="ltr">{shown}</div>' in html
    assert '<a href="http://h/short.html" rel="noreferrer nofollow">Short</a>' in html
    saved = client.get("/saved/1").text
    assert len(saved) < 10_000 and f"<bdi>{shown}</bdi>" in saved
    assert [result["url"] for result in client.get("/api/search", params={"q": "lemurs"}).json()["results"]] == [
        long_url,
        "http://h/short.html",
    ]


# A result's URL is masked (``mask_url``), its patterns tried only where they may match (an "@", a "="):
# what the page and the API show is the same as with both tried everywhere.
@pytest.mark.parametrize(
    "url, shown",
    [
        ("http://127.0.0.1/a.html", "http://127.0.0.1/a.html"),
        ("http://user:s3cret@127.0.0.1/a.html", "http://user:***@127.0.0.1/a.html"),
        ("http://127.0.0.1/a?password=s3cret", "http://127.0.0.1/a?password=***"),
        ("http://127.0.0.1/a?q=1&PWD=x", "http://127.0.0.1/a?q=1&PWD=***"),
        ("", ""),
    ],
)
def test_a_results_url_is_masked(url, shown):
    assert mask_url(url) == shown


@given(st.lists(st.sampled_from(["http://", "u", ":", "@", "pw", "/", "?", "&", "password", "=", "x", " ", "é"])))
def test_a_url_masked_is_what_both_patterns_tried_everywhere_give(pieces):
    url = "".join(pieces)
    everywhere = secrets._CREDENTIALS.sub(lambda m: m["head"] + secrets.MASK + m["at"], url)
    everywhere = secrets._QUERY_PASSWORD.sub(
        lambda m: m["head"] + secrets._masked_query_password(m, secrets.MASK), everywhere
    )
    assert mask_url(url) == everywhere
