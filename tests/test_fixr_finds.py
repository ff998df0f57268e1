"""Three crawl finds of a review, each shown by a crawl: a retried page's redirect skipped the dupefilter,
a backslash in a link resolved unlike a browser's, a sitemap named with a fragment was read again."""

from __future__ import annotations

from tests.conftest import crawl_site
from tests.support.pages import saved_pages
from tests.support.sitegen import write_site
from tse_scrapy.devtools.siteserver import Rule
from tse_scrapy.rules.crawling.progress import progress_line


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
