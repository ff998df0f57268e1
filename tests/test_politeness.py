"""Politeness at default settings, measured on a real server's request log."""

import itertools
import math

import pytest

from tests.conftest import run_tse
from tests.support.pages import saved_pages
from tests.support.sitegen import write_site
from tse_scrapy.crawl.extensions.politeness import crawl_delay_said
from tse_scrapy.devtools.siteserver import Rule

# Three pages and robots.txt: three gaps of the default delay (1 s) to measure.
LINKS = {"index.html": ["a.html", "b.html"], "a.html": [], "b.html": []}


def gaps(server):
    times = [hit.time for hit in server.hits]
    return [later - earlier for earlier, later in itertools.pairwise(times)]


def test_one_second_between_requests_robots_txt_included(tmp_path, serve):
    server = serve(write_site(tmp_path / "site", LINKS).root)
    (tmp_path / "out").mkdir()
    result = run_tse("crawl", f"{server.url}/index.html", tmp_path / "out", 1, "--prefix", f"{server.url}/")
    assert result.returncode == 0, result.stderr.decode()
    assert len(saved_pages(tmp_path / "out")) == 3
    assert server.hits[0].key == "/robots.txt"
    assert len(server.hits) == 4
    assert min(gaps(server)) >= 1.0, gaps(server)
    assert server.max_active == 1


def test_robots_crawl_delay_longer_than_the_delay_is_honoured(tmp_path, serve):
    site = write_site(tmp_path / "site", {"index.html": ["a.html"], "a.html": []})
    # Longer than the default delay (1 s) by half a second: two gaps of 1.5 s, not of 2.
    (site.root / "robots.txt").write_text("User-agent: *\nCrawl-delay: 1.5\n")
    server = serve(site.root)
    (tmp_path / "out").mkdir()
    result = run_tse("crawl", f"{server.url}/index.html", tmp_path / "out", 1, "--prefix", f"{server.url}/")
    assert result.returncode == 0, result.stderr.decode()
    assert len(server.hits) == 3
    assert min(gaps(server)) >= 1.5, gaps(server)


@pytest.mark.parametrize("asked", ["1e9", "3600"])
def test_a_crawl_delay_past_the_bound_is_capped(tmp_path, serve, asked):
    # A hostile robots.txt (a review's find): "Crawl-delay: 1e9" stalled its host's crawl for good.
    site = write_site(tmp_path / "site", {"index.html": ["a.html"], "a.html": []})
    (site.root / "robots.txt").write_text(f"User-agent: *\nCrawl-delay: {asked}\n")
    server = serve(site.root)
    (tmp_path / "out").mkdir()
    seed, prefix = f"{server.url}/index.html", f"{server.url}/"
    result = run_tse(
        "crawl", seed, tmp_path / "out", 1, "--prefix", prefix, "-s", "TSE_MAX_CRAWL_DELAY=1.5", timeout=60
    )
    assert result.returncode == 0, result.stderr.decode()
    assert len(server.hits) == 3 and 1.5 <= min(gaps(server)) < 5, gaps(server)
    host = prefix.split("/")[2]
    said = f"robots.txt asks for a Crawl-delay of {float(asked):g} s: 1.5 s honoured for {host} (TSE_MAX_CRAWL_DELAY)"
    assert said in result.stderr.decode()


@pytest.mark.parametrize(
    ("delay", "at_most", "honoured"),
    [(2.0, 60.0, 2.0), (60.0, 60.0, 60.0), (61.0, 60.0, 60.0), (1e9, 60.0, 60.0), (math.inf, 60.0, 60.0)],
)
def test_crawl_delay_said(delay, at_most, honoured):
    found, line = crawl_delay_said(delay, at_most, "h")
    assert found == honoured and line.endswith("honoured for h" if delay <= at_most else "(TSE_MAX_CRAWL_DELAY)")


def test_the_delay_counts_from_the_end_of_the_previous_request(tmp_path, serve):
    # Every answer takes 0.6 s: counted from the start of a request (Scrapy's own clock), the
    # next one would arrive ~0.4 s after the previous answer was sent; counted from its end, 1 s.
    site = write_site(tmp_path / "site", {"index.html": ["a.html", "b.html"], "a.html": [], "b.html": []})
    server = serve(site.root)
    for path in ("/robots.txt", "/index.html", "/a.html", "/b.html"):
        server.rules[path] = Rule(delay=0.6)
    (tmp_path / "out").mkdir()
    result = run_tse("crawl", f"{server.url}/index.html", tmp_path / "out", 1, "--prefix", f"{server.url}/")
    assert result.returncode == 0, result.stderr.decode()
    assert len(saved_pages(tmp_path / "out")) == 3
    hits = sorted(server.hits, key=lambda hit: hit.time)
    assert [hit.key for hit in hits[:2]] == ["/robots.txt", "/index.html"]
    assert len(hits) == 4 and server.max_active == 1
    pauses = [later.time - earlier.done for earlier, later in itertools.pairwise(hits)]
    # The server notes an answer done once its write returns, which the crawler may have read a
    # moment before (a CI run saw 0.9986 s): 10 ms of slack, against the 0.4 s without the rule.
    assert min(pauses) >= 1.0 - 0.01, pauses
