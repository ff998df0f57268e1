"""Three crawl finds of a review, each shown by a crawl: a retried page's redirect skipped the dupefilter,
a backslash in a link resolved unlike a browser's, a sitemap named with a fragment was read again."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import crawl_site
from tests.support.browser import CHROMIUM, FLAGS, NO_CHROMIUM
from tests.support.pages import saved_pages
from tests.support.sitegen import write_site
from tse_scrapy.devtools.siteserver import Rule
from tse_scrapy.rules.crawling.progress import progress_line
from tse_scrapy.rules.web.links import extract_links_html, extract_links_tse
from tse_scrapy.rules.web.sitemaps import sitemap_key
from tse_scrapy.rules.web.urls import LinkResolver, backslashes_as_slashes


def _hits(server, path: str) -> int:
    return sum(hit.key == path for hit in server.hits)


# 1. Scrapy's retry sets dont_filter on the retried request, and Scrapy's redirect gives it to the next
# hop: the scheduler let the hop past the dupefilter.


def test_a_retried_page_redirecting_to_a_page_seen_is_not_saved_again(tmp_path, serve):
    site = write_site(tmp_path / "site" / "tse", {"index.html": ["b.html", "flaky2.html"], "b.html": []})
    server = serve(site.root.parent)
    server.rules["/tse/flaky2.html"] = Rule(status=503, times=1, then=Rule(status=302, location="/tse/index.html"))
    out = tmp_path / "out"
    out.mkdir()
    # The stack takes flaky2.html first: 503, retried, 302 to the seed.  Two pages to save: the seed, b.html.
    result = crawl_site(server, out, 1, "--max-pages", "2", seed="tse/index.html")
    assert result.returncode == 0, result.stderr.decode()
    # Before: pages 1 and 2 were both the seed, and the page limit, reached, left b.html out.
    assert saved_pages(out) == [(f"{server.url}/tse/index.html", 0), (f"{server.url}/tse/b.html", 1)]
    assert progress_line(1, "IgnDupl", f"{server.url}/tse/index.html") in result.stdout.decode()
    assert _hits(server, "/tse/flaky2.html") == 2 and _hits(server, "/tse/index.html") == 1


def test_a_redirect_loop_after_a_retry_is_caught_as_a_loop(tmp_path, serve):
    site = write_site(tmp_path / "site" / "tse", {"index.html": ["loop.html"]})
    server = serve(site.root.parent)
    server.rules["/tse/loop.html"] = Rule(status=503, times=1, then=Rule(status=302, location="/tse/loop2.html"))
    server.rules["/tse/loop2.html"] = Rule(status=302, location="/tse/loop.html")
    out = tmp_path / "out"
    out.mkdir()
    result = crawl_site(server, out, 1, "--record", tmp_path / "record.jsonl", seed="tse/index.html")
    assert result.returncode == 0, result.stderr.decode()
    assert saved_pages(out) == [(f"{server.url}/tse/index.html", 0)]
    assert progress_line(1, "Failed", f"{server.url}/tse/loop.html") in result.stdout.decode()
    # Before: loop.html and loop2.html asked in turn until REDIRECT_MAX_TIMES (20), "too many redirects".
    assert _hits(server, "/tse/loop.html") == 2 and _hits(server, "/tse/loop2.html") == 1
    assert "redirect loop" in (tmp_path / "record.jsonl").read_text()


# 2. A backslash in an http(s) URL is a slash to a browser (WHATWG URL: special schemes), before the query.
# The browser's answers, checked against Chromium's `new URL(href, base)` (test below); None: no link.
PAGE = "http://h/tse/bs.html"
BACKSLASH_CASES = [
    (PAGE, r"\tse\b.html", "http://h/tse/b.html"),  # was http://h/tse/\tse\b.html: asked as /tse//tse/b.html
    (PAGE, r"/\127.0.0.2:18701\tse\b.html", "http://127.0.0.2:18701/tse/b.html"),  # another host
    (PAGE, r"\\h2\x.html", "http://h2/x.html"),
    (PAGE, r"dir\c.html", "http://h/tse/dir/c.html"),
    (PAGE, r"dir\c.html?q=a\b", r"http://h/tse/dir/c.html?q=a\b"),  # the query keeps its own
    (PAGE, r"d.html#x\y", "http://h/tse/d.html"),
    (PAGE, r"http:\\h\tse\x.html", "http://h/tse/x.html"),
    (PAGE, r"HTTP:\\h\y.html", "http://h/y.html"),
    ("https://h/a/b.html", r"..\c.html", "https://h/c.html"),
    (PAGE, "plain.html", "http://h/tse/plain.html"),
    (PAGE, r"mailto:a\b@h", None),
]
# What --links tse reads (SPEC 1.3: joined to the page's directory by concatenation), kept as it was.
TSE_READS = {r"\tse\b.html": r"http://h/tse/\tse\b.html", r"dir\c.html?q=a\b": r"http://h/tse/dir\c.html?q=a\b"}


def _page_with(href: str) -> bytes:
    return f'<html><body><a href="{href}">x</a></body></html>'.encode()


@pytest.mark.parametrize("base, href, browser", BACKSLASH_CASES)
def test_a_backslash_resolves_as_a_browser_resolves_it(base, href, browser):
    assert extract_links_html(_page_with(href), base) == ([browser] if browser else [])
    # The same in the indexer's anchor texts and tse import's links (LinkResolver: "as the crawl resolves them").
    if browser is not None:
        assert LinkResolver(base)(href) == browser
    # --links tse, the reference's scanner, keeps what it read: joined to the directory as written.
    if href in TSE_READS:
        assert extract_links_tse(_page_with(href), base) == [TSE_READS[href]]


def test_a_base_href_with_backslashes_resolves_as_a_browser_resolves_it():
    page = rb'<html><head><base href="\other\"></head><body><a href="c.html">x</a></body></html>'
    assert extract_links_html(page, PAGE) == ["http://h/other/c.html"]


@pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)
def test_the_backslash_table_and_the_crawls_links_are_the_browsers():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            resolved = browser.new_page().evaluate(
                "cases => cases.map(([base, href]) => new URL(href, base).href.split('#')[0])",
                [[base, href] for base, href, _ in BACKSLASH_CASES],
            )
        finally:
            browser.close()
    # The table is the browser's, and so is each link the crawl follows.
    assert resolved == [browser or url for (_, _, browser), url in zip(BACKSLASH_CASES, resolved, strict=True)]
    for (base, href, browser), url in zip(BACKSLASH_CASES, resolved, strict=True):
        if browser is not None:
            assert extract_links_html(_page_with(href), base) == [url], href


_HREF = st.text(alphabet=st.sampled_from("ab\\/?#.:@%5C"), max_size=30)


@given(_HREF, st.sampled_from([PAGE, "https://h/", "ftp://h/d/", "mailto:x@h", "about:blank"]))
def test_backslashes_as_slashes_changes_only_backslashes_of_a_special_url_before_its_query(href, base):
    read = backslashes_as_slashes(href, base)
    assert len(read) == len(href)
    assert all(a == b or (a, b) == ("\\", "/") for a, b in zip(href, read, strict=True))
    assert backslashes_as_slashes(read, base) == read
    query = min((i for i in (href.find("?"), href.find("#")) if i != -1), default=len(href))
    assert read[query:] == href[query:]
    scheme = href.split(":", 1)[0].lower() if re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", href) else None
    special = (scheme or base.split(":", 1)[0]) in {"http", "https", "ftp"}
    assert ("\\" in read[:query]) == (not special and "\\" in href[:query])


@given(_HREF)
def test_a_link_of_an_http_page_resolves_to_no_backslash_before_its_query(href):
    for url in extract_links_html(_page_with(href.replace('"', "")), PAGE):
        assert "\\" not in url.split("?", 1)[0]


def test_a_crawl_asks_for_a_backslashed_link_as_a_browser_does(tmp_path, serve):
    links = {
        "bs.html": [r"\tse\b.html", r"/\127.0.0.2:18701\tse\b.html", r"dir\c.html"],
        "b.html": [],
        "dir/c.html": [],
    }
    site = write_site(tmp_path / "site" / "tse", links)
    server = serve(site.root.parent)
    out = tmp_path / "out"
    out.mkdir()
    result = crawl_site(server, out, 1, seed="tse/bs.html")
    assert result.returncode == 0, result.stderr.decode()
    tse = f"{server.url}/tse"
    # Before: /tse/tse/b.html (404) was asked, 127.0.0.2's page was this host's 404, and the log said
    # "Added: .../tse/dir\c.html" of the page saved as dir/c.html.
    assert saved_pages(out) == [(f"{tse}/bs.html", 0), (f"{tse}/dir/c.html", 1), (f"{tse}/b.html", 1)]
    log = result.stdout.decode()
    assert progress_line(0, "Added", f"{tse}/dir/c.html") in log
    assert progress_line(0, "IgnExtrn", "http://127.0.0.2:18701/tse/b.html") in log
    assert all(hit.status == 200 for hit in server.hits if hit.key != "/robots.txt"), server.hits


# 3. A sitemap file is read once, however an index names it: its seen-set keyed on the raw URL read
# "index.xml" and "index.xml#again" each (an index could have one 50 MB sitemap parsed 1,000 times).
SITEMAP_KEYS = [
    ("http://h/pages.xml", "http://h/pages.xml"),
    ("http://h/pages.xml#again", "http://h/pages.xml"),
    ("HTTP://H/pages.xml", "http://h/pages.xml"),
    ("http://h//pages.xml", "http://h/pages.xml"),
    ("http://h/d/../pages.xml#x", "http://h/pages.xml"),
    ("http://h/pages.xml?page=2#x", "http://h/pages.xml?page=2"),
    ("http://h/Pages.xml", "http://h/Pages.xml"),  # a path keeps its case
    ("http://h/sitemap.php", "http://h/sitemap.php"),  # any extension
    ("http://h#x", "http://h"),  # no path: not normalized, its fragment dropped all the same
]


@pytest.mark.parametrize("url, key", SITEMAP_KEYS)
def test_a_sitemap_is_known_by_its_url_normalized(url, key):
    assert sitemap_key(url) == key


@given(st.text(alphabet=st.sampled_from("ab/.#?:H"), max_size=20))
def test_a_sitemap_url_with_a_fragment_is_the_file_without_it(path):
    url = "http://h/" + path
    key = sitemap_key(url)
    assert "#" not in key and sitemap_key(key) == key
    assert sitemap_key(url + "#again") == sitemap_key(url.split("#", 1)[0]) == key


SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def test_a_sitemap_named_many_ways_is_read_once(tmp_path, serve):
    site = write_site(tmp_path / "site" / "tse", {"index.html": [], "only.html": []})
    root = site.root.parent
    server = serve(root)
    url = server.url
    (root / "robots.txt").write_text(f"User-agent: *\nAllow: /\n\nSitemap: {url}/index.xml\n")
    names = [f"{url}/pages.xml", f"{url}/pages.xml#again", f"HTTP://127.0.0.1:{server.port}//pages.xml"]
    names += [f"{url}/index.xml#again", f"{url}/tse/../pages.xml"]
    locs = "".join(f"<sitemap><loc>{name}</loc></sitemap>" for name in names)
    (root / "index.xml").write_text(f'<sitemapindex xmlns="{SITEMAP_NS}">{locs}</sitemapindex>')
    page = f"<url><loc>{url}/tse/only.html</loc></url>"
    (root / "pages.xml").write_text(f'<urlset xmlns="{SITEMAP_NS}">{page}</urlset>')
    out = tmp_path / "out"
    out.mkdir()
    result = crawl_site(server, out, 0, "--sitemaps", seed="tse/index.html")
    assert result.returncode == 0, result.stderr.decode()
    assert saved_pages(out) == [(f"{url}/tse/index.html", 0), (f"{url}/tse/only.html", 0)]
    asked = [hit.key for hit in server.hits]
    # Before: index.xml was asked twice, and pages.xml again under several of its other names.
    assert [key for key in asked if key.endswith(".xml")] == ["/index.xml", "/pages.xml"], asked
