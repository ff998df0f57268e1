"""Politeness at default settings, measured on a real server's request log."""

import itertools
import json
import math

import pytest

from tests.conftest import run_tse
from tests.support.pages import saved_pages
from tests.support.sample import seeded_sample
from tests.support.sitegen import write_site
from tse_scrapy import settings as project_settings
from tse_scrapy.crawl.extensions.politeness import crawl_delay_said
from tse_scrapy.devtools.siteserver import Rule, SiteServer

# Three pages and robots.txt: three gaps of the default delay (1 s) to measure.
LINKS = {"index.html": ["a.html", "b.html"], "a.html": [], "b.html": []}


def gaps(server):
    times = [hit.time for hit in server.hits]
    return [later - earlier for earlier, later in itertools.pairwise(times)]


def _crawled(tmp_path, serve, links: dict, robots: str, *options: str, depth: int = 1):
    """(the server, the page directory, the crawl's stderr) of a site of *links* whose robots.txt is
    *robots*, crawled from its index.html at *depth* with *options*, the crawl's exit 0 checked."""
    site = write_site(tmp_path / "site", links)
    (site.root / "robots.txt").write_text(robots)
    server = serve(site.root)
    out = tmp_path / "out"
    out.mkdir()
    result = run_tse("crawl", f"{server.url}/index.html", out, depth, "--prefix", f"{server.url}/", *options)
    assert result.returncode == 0, result.stderr.decode()
    return server, out, result.stderr.decode()


# One crawl at the default delay (1 s) for the two tests below, each reading it: every answer takes
# 0.6 s (the rule, for the second), so a gap from one request's start to the next is at least the
# pause after the first's end, and the first's "1 s between requests" holds of it as of quick answers.
@pytest.fixture(scope="module")
def default_crawl(tmp_path_factory):
    """(the server, the page directory, the crawl's result) of LINKS, answered 0.6 s late, by default."""
    root = tmp_path_factory.mktemp("politeness")
    with SiteServer(write_site(root / "site", LINKS).root) as server:
        for path in ("/robots.txt", "/index.html", "/a.html", "/b.html"):
            server.rules[path] = Rule(delay=0.6)
        (root / "out").mkdir()
        result = run_tse("crawl", f"{server.url}/index.html", root / "out", 1, "--prefix", f"{server.url}/")
        yield server, root / "out", result


def test_one_second_between_requests_robots_txt_included(default_crawl):
    server, out, result = default_crawl
    assert result.returncode == 0, result.stderr.decode()
    assert len(saved_pages(out)) == 3
    assert server.hits[0].key == "/robots.txt"
    assert len(server.hits) == 4
    assert min(gaps(server)) >= 1.0, gaps(server)
    assert server.max_active == 1


def test_robots_crawl_delay_longer_than_the_delay_is_honoured(tmp_path, serve):
    # Longer than the default delay (1 s) by half a second: two gaps of 1.5 s, not of 2.
    links = {"index.html": ["a.html"], "a.html": []}
    server, _, _ = _crawled(tmp_path, serve, links, "User-agent: *\nCrawl-delay: 1.5\n")
    assert len(server.hits) == 3
    assert min(gaps(server)) >= 1.5, gaps(server)


def test_a_crawl_delay_outlives_scrapy_dropping_its_idle_slot(tmp_path, serve):
    # A review's find: Scrapy drops a download slot idle for a minute and makes a new one at
    # DOWNLOAD_DELAY; robots.txt is read once, so its Crawl-delay was lost for the rest of the crawl
    # (a multi-host crawl leaves hosts idle that long). The drop is forced once, at the seed's answer
    # (tests/support/slotgc.py): the chain's next pages must still be a Crawl-delay apart.
    extensions = {**project_settings.EXTENSIONS, "tests.support.slotgc.DropIdleSlotsOnce": 900}
    chain = {"index.html": ["a.html"], "a.html": ["b.html"], "b.html": ["c.html"], "c.html": []}
    options = ("-s", "DOWNLOAD_DELAY=0", "-s", f"EXTENSIONS={json.dumps(extensions)}", "-s", "LOG_LEVEL=INFO")
    server, _, said = _crawled(tmp_path, serve, chain, "User-agent: *\nCrawl-delay: 0.5\n", *options, depth=3)
    assert "dropped idle download slots: ['127.0.0.1']" in said
    assert [hit.key for hit in server.hits] == ["/robots.txt", "/index.html", "/a.html", "/b.html", "/c.html"]
    # From a.html on (the new slot's first request has no earlier one to wait for).
    assert min(gaps(server)[2:]) >= 0.5, gaps(server)


# Past the bound written as an exponent (the hostile find) or as a plain number of seconds: the same
# path (read as a float, capped), a crawl of its own each (a robots.txt each); one of the two each run,
# drawn (tests/support/sample.py; TSE_TEST_SEED=all for both).
def test_a_crawl_delay_past_the_bound_is_capped(tmp_path, serve):
    # A hostile robots.txt (a review's find): "Crawl-delay: 1e9" stalled its host's crawl for good.
    chosen, seed = seeded_sample(["1e9", "3600"], 1)
    for asked in chosen:
        said = f"Crawl-delay: {asked} ({seed})"
        site = write_site(tmp_path / asked / "site", {"index.html": ["a.html"], "a.html": []})
        (site.root / "robots.txt").write_text(f"User-agent: *\nCrawl-delay: {asked}\n")
        server = serve(site.root)
        (tmp_path / asked / "out").mkdir()
        seed_url, prefix = f"{server.url}/index.html", f"{server.url}/"
        result = run_tse(
            "crawl",
            seed_url,
            tmp_path / asked / "out",
            1,
            "--prefix",
            prefix,
            "-s",
            "TSE_MAX_CRAWL_DELAY=1.5",
            timeout=60,
        )
        assert result.returncode == 0, (said, result.stderr.decode())
        assert len(server.hits) == 3 and 1.5 <= min(gaps(server)) < 5, (said, gaps(server))
        host = prefix.split("/")[2]
        line = (
            f"robots.txt asks for a Crawl-delay of {float(asked):g} s: 1.5 s honoured for {host} (TSE_MAX_CRAWL_DELAY)"
        )
        assert line in result.stderr.decode(), said


@pytest.mark.parametrize(
    ("delay", "at_most", "honoured"),
    [(2.0, 60.0, 2.0), (60.0, 60.0, 60.0), (61.0, 60.0, 60.0), (1e9, 60.0, 60.0), (math.inf, 60.0, 60.0)],
)
def test_crawl_delay_said(delay, at_most, honoured):
    found, line = crawl_delay_said(delay, at_most, "h")
    assert found == honoured and line.endswith("honoured for h" if delay <= at_most else "(TSE_MAX_CRAWL_DELAY)")


def test_the_delay_counts_from_the_end_of_the_previous_request(default_crawl):
    # Every answer takes 0.6 s: counted from the start of a request (Scrapy's own clock), the
    # next one would arrive ~0.4 s after the previous answer was sent; counted from its end, 1 s.
    server, out, result = default_crawl
    assert result.returncode == 0, result.stderr.decode()
    assert len(saved_pages(out)) == 3
    hits = sorted(server.hits, key=lambda hit: hit.time)
    assert [hit.key for hit in hits[:2]] == ["/robots.txt", "/index.html"]
    assert len(hits) == 4 and server.max_active == 1
    pauses = [later.time - earlier.done for earlier, later in itertools.pairwise(hits)]
    # The server notes an answer done once its write returns, which the crawler may have read a
    # moment before (a CI run saw 0.9986 s): 10 ms of slack, against the 0.4 s without the rule.
    assert min(pauses) >= 1.0 - 0.01, pauses


def test_a_crawl_delay_bound_below_the_delay_keeps_the_delay(tmp_path, serve):
    """``TSE_MAX_CRAWL_DELAY`` below ``DOWNLOAD_DELAY``: a host whose robots.txt asks for a Crawl-delay
    was crawled with the bound's (0: none at all, a review's find), less than a host asking nothing."""
    links = {"index.html": ["a.html", "b.html"], "a.html": [], "b.html": []}
    options = ("-s", "DOWNLOAD_DELAY=0.5", "-s", "TSE_MAX_CRAWL_DELAY=0")
    server, _, _ = _crawled(tmp_path, serve, links, "User-agent: *\nCrawl-delay: 2\n", *options)
    assert len(server.hits) == 4
    assert min(gaps(server)) >= 0.5, gaps(server)


def test_robots_txt_groups_are_matched_against_the_product_token(tmp_path, serve):
    """A group named by a word of the User-Agent string that is not its product token (``crawler`` of
    "tse-scrapy/0.1.0 (Tiny Search Engine crawler; ...)") is another crawler's (RFC 9309 2.2.1): it was
    taken for this one's, and its "Disallow: /" refused the whole site."""
    robots = "User-agent: crawler\nDisallow: /\n\nUser-agent: *\nDisallow: /a.html\n"
    _, out, _ = _crawled(tmp_path, serve, {"index.html": ["a.html"], "a.html": []}, robots, "-s", "DOWNLOAD_DELAY=0")
    # "*"'s rules are this crawler's: a.html disallowed, the rest crawled (the seed was refused).
    assert [url.rsplit("/", 1)[1] for url, _ in saved_pages(out)] == ["index.html"]


def test_robots_txt_groups_named_by_the_product_token_in_any_case_are_this_crawlers(tmp_path, serve):
    robots = "User-agent: *\nDisallow: /\n\nUser-agent: TSE-Scrapy\nAllow: /\n"
    _, out, _ = _crawled(tmp_path, serve, {"index.html": ["a.html"], "a.html": []}, robots, "-s", "DOWNLOAD_DELAY=0")
    assert [url.rsplit("/", 1)[1] for url, _ in saved_pages(out)] == ["index.html", "a.html"]


def test_a_redirect_to_another_host_is_asked_at_that_hosts_crawl_delay(tmp_path, serve):
    """A page of host A redirecting to host B (another server, named localhost): B's robots.txt
    Crawl-delay was set on A's download slot, which the hop had inherited, and B's pages came at A's
    delay (a review's find).  B's requests now come at least its Crawl-delay apart."""
    first = write_site(tmp_path / "a", {"index.html": ["go.html"]})
    second = write_site(tmp_path / "b", {"b.html": ["b1.html", "b2.html"], "b1.html": [], "b2.html": []})
    (second.root / "robots.txt").write_text("User-agent: *\nCrawl-delay: 0.8\n")
    a, b = serve(first.root), serve(second.root)
    other = f"http://localhost:{b.url.rsplit(':', 1)[1]}"
    a.rules["/go.html"] = Rule(status=302, location=f"{other}/b.html")
    (tmp_path / "out").mkdir()
    options = ("-s", "DOWNLOAD_DELAY=0.2")
    result = run_tse("crawl", f"{a.url}/index.html", tmp_path / "out", 2, "--prefix", f"{a.url}/,{other}/", *options)
    assert result.returncode == 0, result.stderr.decode()
    assert [hit.key for hit in b.hits][:2] == ["/robots.txt", "/b.html"], b.hits
    assert sorted(hit.key for hit in b.hits[2:]) == ["/b1.html", "/b2.html"], b.hits
    assert min(gaps(b)[1:]) >= 0.8, gaps(b)  # (its pages: the hop, then its two links)
