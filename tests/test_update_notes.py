"""`tse crawl --update` of pages whose bytes stay as they were but whose answer says something new: an
`X-Robots-Tag: noindex` sent now, a canonical `Link:` header, a charset gone from the Content-Type.
The page is written again with its notes, and the updated index answers as a fresh crawl's does
(rules/files/pagenotes.py).  Real crawls of real files served on 127.0.0.1; the indexes that show what
they wrote made and asked in the test's process (``cli.main``: tests/support/inprocess.py)."""

from __future__ import annotations

import shutil

from tests.conftest import crawl_site, run_tse
from tests.support.inprocess import query_here, tse_here
from tests.support.pages import page_file_states
from tse_scrapy.devtools.siteserver import Rule
from tse_scrapy.rules.files.pagenotes import read_page_notes

PAGES = {
    "index.html": "<html><head><title>Orchard</title></head><body>"
    '<a href="a.html">a</a> <a href="b.html">b</a> <a href="c.html">c</a></body></html>',
    "a.html": "<html><head><title>Walrus</title></head><body><p>walrus page</p></body></html>",
    "b.html": "<html><head><title>Tapir</title></head><body><p>tapir page</p></body></html>",
}
# Russian in KOI8-R, no charset in the page: the HTTP header's is what reads it right.
RUSSIAN = "<html><head><title>Медведь</title></head><body><p>медведь живёт в лесу</p></body></html>"
QUERIES = ["walrus", "tapir", "медведь"]


def names(answers: list[list[tuple[int, str]]]) -> list[list[str]]:
    return [[url.rsplit("/", 1)[1] for _, url in found] for found in answers]


def test_a_page_that_turns_noindex_or_loses_its_charset_is_indexed_as_a_fresh_crawl_would(tmp_path, serve):
    site = tmp_path / "site"
    site.mkdir()
    for name, html in PAGES.items():
        (site / name).write_text(html)
    (site / "c.html").write_bytes(RUSSIAN.encode("koi8-r"))
    server = serve(site)
    server.rules["/c.html"] = Rule(status=200, headers={"Content-Type": "text/html; charset=koi8-r"})
    out, index = tmp_path / "out", tmp_path / "index"
    out.mkdir()
    assert crawl_site(server, out, 1).returncode == 0
    assert tse_here("index", out, index).returncode == 0
    assert names(query_here(out, index, QUERIES, "relevance")) == [["a.html"], ["b.html"], ["c.html"]]
    before = page_file_states(out)
    # The same bytes, answered now with noindex (a) and without a charset (c); b as it was.
    server.rules["/a.html"] = Rule(status=200, headers={"X-Robots-Tag": "noindex"})
    server.rules["/c.html"] = Rule(status=200, headers={"Content-Type": "text/html"})
    result = crawl_site(server, out, 1, "--update")
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    after = page_file_states(out)
    rewritten = {after[doc][0].rsplit("/", 1)[1] for doc in after if after[doc][1:3] != before[doc][1:3]}
    assert rewritten == {"a.html", "c.html"}
    assert all(after[doc][3] == before[doc][3] for doc in after)  # the same bytes
    url = f"{server.url}/c.html"
    notes = read_page_notes(out)
    assert {u.rsplit("/", 1)[1] for u in notes.noindex} == {"a.html"} and url not in notes.charsets
    # The updated index answers as the index of a fresh crawl of the site as it is now.
    assert tse_here("index", out, index, "--update").returncode == 0
    fresh_out, fresh_index = tmp_path / "fresh", tmp_path / "fresh.index"
    fresh_out.mkdir()
    assert crawl_site(server, fresh_out, 1).returncode == 0
    assert tse_here("index", fresh_out, fresh_index).returncode == 0
    updated = names(query_here(out, index, QUERIES, "relevance"))
    assert updated == names(query_here(fresh_out, fresh_index, QUERIES, "relevance"))
    assert updated[:2] == [[], ["b.html"]]
    # A second update finds the pages as noted: nothing written again.
    assert crawl_site(server, out, 1, "--update").returncode == 0
    assert page_file_states(out) == after
    # A page that fails for a while keeps its saved copy and what was noted of it (the copy's answer
    # says nothing of its headers).
    server.rules["/a.html"] = Rule(status=503)
    assert crawl_site(server, out, 1, "--update", "-s", "RETRY_TIMES=0").returncode == 0
    assert page_file_states(out) == after
    assert {u.rsplit("/", 1)[1] for u in read_page_notes(out).noindex} == {"a.html"}


def test_a_304_speaks_to_the_headers_it_carries_and_a_noindex_page_is_asked_for_whole(tmp_path, serve):
    # As nginx's add_header: the header on the file's 200 and 304 alike (the server sends validators).
    site = tmp_path / "site"
    site.mkdir()
    for name, html in PAGES.items():
        (site / name).write_text(html)
    (site / "c.html").write_text("<html><head><title>Bison</title></head><body><p>bison page</p></body></html>")
    server = serve(site)
    out, index = tmp_path / "out", tmp_path / "index"
    out.mkdir()
    assert crawl_site(server, out, 1, "--validators").returncode == 0
    before = page_file_states(out)
    # Noindex sent now, on a 304 too: the page is written again, noted noindex.
    server.rules["/a.html"] = Rule(headers={"X-Robots-Tag": "noindex"})
    asked = len(server.hits)
    assert crawl_site(server, out, 1, "--update", "--validators").returncode == 0
    statuses = {hit.key: hit.status for hit in server.hits[asked:]}
    assert statuses["/a.html"] == statuses["/b.html"] == 304
    after = page_file_states(out)
    written = {after[doc][0].rsplit("/", 1)[1] for doc in after if after[doc][1:3] != before[doc][1:3]}
    assert written == {"a.html"}
    assert {url.rsplit("/", 1)[1] for url in read_page_notes(out).noindex} == {"a.html"}
    assert tse_here("index", out, index).returncode == 0
    assert names(query_here(out, index, ["walrus", "tapir"], "relevance")) == [[], ["b.html"]]
    # Withdrawn: a noindex page is asked for whole (a 304 need not repeat the header), and is a page again.
    del server.rules["/a.html"]
    asked = len(server.hits)
    assert crawl_site(server, out, 1, "--update", "--validators").returncode == 0
    statuses = {hit.key: hit.status for hit in server.hits[asked:]}
    assert statuses["/a.html"] == 200 and statuses["/b.html"] == 304
    assert read_page_notes(out).noindex == frozenset()
    assert tse_here("index", out, index, "--update").returncode == 0
    assert names(query_here(out, index, ["walrus", "tapir"], "relevance")) == [["a.html"], ["b.html"]]
    # A 304 that carries none of those headers changes nothing.
    settled = page_file_states(out)
    assert crawl_site(server, out, 1, "--update", "--validators").returncode == 0
    assert page_file_states(out) == settled


def test_a_304_says_what_its_saved_body_says_and_an_import_reads_a_304_as_the_crawl_does(tmp_path, serve):
    # A robots <meta> noindex the notes lost (a directory crawled before they were kept): a 304's body,
    # the saved one, says it for certain.  And `tse import` of the crawl's archives notes what the crawl
    # noted of a 304 that carried X-Robots-Tag (it took only the referred record's headers).
    site = tmp_path / "site"
    site.mkdir()
    for name, html in PAGES.items():
        (site / name).write_text(html)
    (site / "c.html").write_text(
        '<html><head><title>Bison</title><meta name="robots" content="noindex"></head><body>bison</body></html>'
    )
    server = serve(site)
    out = tmp_path / "out"
    out.mkdir()
    assert crawl_site(server, out, 1, "--validators", "--warc", tmp_path / "c1.warc.gz").returncode == 0
    c_url = f"{server.url}/c.html"
    assert read_page_notes(out).noindex == {c_url}
    shutil.rmtree(out / ".tse-robots")
    server.rules["/a.html"] = Rule(headers={"X-Robots-Tag": "noindex"})
    asked = len(server.hits)
    update = crawl_site(server, out, 1, "--update", "--validators", "--warc", tmp_path / "c2.warc.gz")
    assert update.returncode == 0, update.stderr.decode()[-2000:]
    assert {hit.key: hit.status for hit in server.hits[asked:]}["/c.html"] == 304
    assert read_page_notes(out).noindex == {c_url, f"{server.url}/a.html"}
    imported = tmp_path / "imported"
    imported.mkdir()
    result = run_tse("import", tmp_path / "c1.warc.gz", tmp_path / "c2.warc.gz", imported)
    assert result.returncode == 0, result.stderr.decode()
    assert read_page_notes(imported).noindex == read_page_notes(out).noindex
