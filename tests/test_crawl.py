"""End-to-end crawls of generated sites served on 127.0.0.1 by a real server."""

import itertools
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.conftest import BIN, ROOT, clean_env, crawl_site, popen, run_tse, scrapy_crawl_site
from tests.support.net import free_port
from tests.support.pages import saved_pages
from tests.support.sample import seeded_sample
from tests.support.sitegen import generate_site, model_crawl, shortest_depths, write_site
from tse_scrapy.devtools.siteserver import Rule, SiteServer
from tse_scrapy.rules.crawling.progress import progress_line

PROGRESS = re.compile(r"^[ 0-9]\d  *(Fetched|Scanning|Found|IgnExtrn|IgnDupl|Added|Failed): \S+$")


def crawl(server, pagedir, depth, *options, seed="index.html"):
    pagedir.mkdir(exist_ok=True)
    return crawl_site(server, pagedir, depth, *options, seed=seed)


def paths(server, pages):
    return [(url.removeprefix(server.url + "/"), depth) for url, depth in pages]


# A crawl of the seed only, a crawl cut short by its depth, the whole site. Cut short at depth 1 or at
# depth 3: the same kind (a level left unfetched, the model's cut at the same place): one of the two each
# run, drawn (tests/support/sample.py; TSE_TEST_SEED=all for both).  The seed only, in either order: one
# page, no link followed, nothing for the order to decide: one of the two orders each run, drawn too.
@pytest.mark.parametrize(
    "orders, depths",
    [(["tse", "bfs"], [0]), (["tse"], [1, 3]), (["bfs"], [1, 3]), (["tse"], [10]), (["bfs"], [10])],
    ids=["0-tse-or-bfs", "1-or-3-tse", "1-or-3-bfs", "10-tse", "10-bfs"],
)
def test_generated_site_matches_model(tmp_path, serve, orders, depths):
    site = generate_site(tmp_path / "site", pages=30, fanout=3, seed=7, external=3, dead=2)
    server = serve(site.root)
    (chosen_orders, orders_said), (chosen_depths, depths_said) = seeded_sample(orders, 1), seeded_sample(depths, 1)
    for order, depth in itertools.product(chosen_orders, chosen_depths):
        said = f"order {order}, depth {depth} (orders {orders_said}; depths {depths_said})"
        out = tmp_path / f"out-{order}-{depth}"
        server.hits.clear()
        result = crawl(server, out, depth, "--order", order)
        assert result.returncode == 0, (said, result.stderr.decode())
        expected = model_crawl(site, depth, order)
        assert paths(server, saved_pages(out)) == expected, said
        for doc_id, (name, _) in enumerate(expected, start=1):
            body = (out / str(doc_id)).read_bytes().split(b"\n", 2)[2]
            assert body == (site.root / name).read_bytes() + b"\n", said
        lines = result.stdout.decode().splitlines()
        assert all(PROGRESS.match(line) for line in lines), (said, lines)
        fetched = [line.split(": ", 1)[1] for line in lines if "Fetched:" in line]
        assert fetched == [f"{server.url}/{name}" for name, _ in expected], said
        failed = {line.split(": ", 1)[1] for line in lines if "Failed:" in line}
        assert failed <= {f"{server.url}/{name}" for name in site.dead}, said
        assert not any("external" in hit.key for hit in server.hits), said


def test_bfs_gives_shortest_depths_where_tse_order_does_not(tmp_path, serve):
    # c is 2 links away through d, but the stack pops a first (the last link
    # pushed) and reaches c through a and b, at depth 3: e is then not crawled.
    links = {
        "index.html": ["d.html", "a.html"],
        "a.html": ["b.html"],
        "b.html": ["c.html"],
        "c.html": ["e.html"],
        "d.html": ["c.html"],
        "e.html": [],
    }
    site = write_site(tmp_path / "site", links)
    server = serve(site.root)
    # The spider's arguments decide the order: a setting given with -s cannot contradict them.
    tse = crawl(server, tmp_path / "tse", 3, "-s", "TSE_ORDER=bfs")
    assert dict(paths(server, saved_pages(tmp_path / "tse")))["c.html"] == 3
    assert "e.html" not in dict(paths(server, saved_pages(tmp_path / "tse")))
    for concurrency in (1, 8):
        out = tmp_path / f"bfs{concurrency}"
        result = crawl(server, out, 3, "--order", "bfs", "-s", f"CONCURRENT_REQUESTS={concurrency}")
        assert result.returncode == 0 and tse.returncode == 0
        assert dict(paths(server, saved_pages(out))) == shortest_depths(site)


def test_bfs_with_concurrency_on_a_larger_site(tmp_path, serve):
    site = generate_site(tmp_path / "site", pages=60, fanout=4, seed=3)
    server = serve(site.root)
    for name in list(site.links)[::7]:
        server.rules["/" + name] = Rule(delay=0.05)  # uneven answer times
    result = crawl(server, tmp_path / "out", 4, "--order", "bfs", "-s", "CONCURRENT_REQUESTS=8")
    assert result.returncode == 0
    pages = paths(server, saved_pages(tmp_path / "out"))
    expected = {name: d for name, d in shortest_depths(site).items() if d <= 4 and name not in site.dead}
    assert dict(pages) == expected
    assert [d for _, d in pages] == sorted(d for _, d in pages)  # saved level by level
    assert server.max_active > 1  # really concurrent


def test_redirects_failures_robots_non_html_and_a_crawl_delay(tmp_path, serve):
    links = {
        "index.html": [
            "moved.html",
            "away.html",
            "dup.html",
            "gone.html",
            "broken.html",
            "partial.html",
            "bad.html",
            "secret/x.html",
            "doc.pdf",
            "ok.html",
            "mailto:a@b.c",
            "https://elsewhere.example/x.html",
        ],
        "target.html": ["index.html"],
        "ok.html": [],
        "secret/x.html": [],
        "dup.html": [],
        "bad.html": ["http://h:99999/x.html", "http://a:b:c/x.html", "ok.html"],
    }
    site = write_site(tmp_path / "site", links)
    (site.root / "doc.pdf").write_bytes(b"%PDF-1.4")
    # (A Crawl-delay of 0.1 s, longer than crawl_site's 0: said at the default log level, below.)
    (site.root / "robots.txt").write_text("User-agent: *\nCrawl-delay: 0.1\nDisallow: /secret/\n")
    server = serve(site.root)
    server.rules["/moved.html"] = Rule(status=301, location="/target.html")
    server.rules["/away.html"] = Rule(status=302, location="https://elsewhere.example/y.html")
    server.rules["/broken.html"] = Rule(status=500)
    server.rules["/partial.html"] = Rule(status=206, body=b"<html>part</html>")
    result = crawl(server, tmp_path / "out", 2)
    assert result.returncode == 0, result.stderr.decode()
    u = server.url + "/"
    assert saved_pages(tmp_path / "out") == [
        (u + "index.html", 0),
        (u + "ok.html", 1),
        (u + "bad.html", 1),
        (u + "dup.html", 1),
        (u + "target.html", 1),
    ]
    out = result.stdout.decode()
    for failed in ("broken.html", "partial.html", "gone.html", "away.html", "secret/x.html"):
        assert progress_line(1, "Failed", u + failed) in out
    assert progress_line(0, "IgnExtrn", u + "doc.pdf") in out
    assert progress_line(0, "IgnExtrn", "https://elsewhere.example/x.html") in out
    assert "mailto" not in out
    # links Scrapy cannot represent are logged in their place all the same
    assert (
        progress_line(1, "Found", "http://h:99999/x.html")
        + progress_line(1, "IgnExtrn", "http://h:99999/x.html")
        + progress_line(1, "Found", "http://a:b:c/x.html")
        + progress_line(1, "IgnExtrn", "http://a:b:c/x.html")
        in out
    )
    requested = [hit.key for hit in server.hits]
    assert "/secret/x.html" not in requested and "/doc.pdf" not in requested
    assert requested.count("/robots.txt") == 1
    assert requested.count("/broken.html") == 3  # Scrapy's two retries, then Failed
    # The seed saved, other pages failed: nothing to say about the seed (tse crawl's half of
    # test_a_failed_seed_is_said_by_scrapy_crawl_too_and_only_a_seed).
    assert "seed URL" not in result.stderr.decode()
    # An honoured Crawl-delay is said at the default log level: it was logged at INFO, and tse crawl's
    # terminal (from WARNING) never showed it, though the docs said so.
    said = [line for line in result.stderr.decode().splitlines() if "Crawl-delay" in line]
    host = server.url.removeprefix("http://")
    assert len(said) == 1 and said[0].endswith(f"robots.txt asks for a Crawl-delay of 0.1 s: honoured for {host}")


# Four kinds of link on one site, in one crawl made once for the module's tests (each reads it): a
# redirect to a page already seen, a page that says refresh, a link longer than Scrapy's limit, a
# directory asked for without its slash.
LONG_LINK = "page.html?q=" + "x" * 3000
COOKIE_SET = Rule(status=200, headers={"Set-Cookie": "session=42; Path=/"})
MOVED = b'<html><head><meta http-equiv="refresh" content="0; url=target.html"></head><body>Moved</body></html>\n'


@pytest.fixture(scope="module")
def links_crawl():
    """(the server, the page directory, the crawl's result) of index.html -> a.html, old.html (a 301 to
    a.html), sub (a directory), moved.html (a meta refresh to target.html), LONG_LINK; to depth 2."""
    with tempfile.TemporaryDirectory() as name:
        links = {"index.html": ["a.html", "old.html", "sub", "moved.html", LONG_LINK], "a.html": []}
        site = write_site(Path(name) / "site", {**links, "target.html": [], "page.html": []})
        write_site(site.root / "sub", {"index.html": []})
        (site.root / "moved.html").write_bytes(MOVED)
        with SiteServer(site.root) as server:
            server.rules["/old.html"] = Rule(status=301, location="/a.html")
            server.rules["/index.html"] = COOKIE_SET  # (for test_cookies_and_a_referer_are_sent_only_when_enabled)
            out = Path(name) / "out"
            out.mkdir()
            result = crawl_site(server, out, 2)
            assert result.returncode == 0, result.stderr.decode()
            yield server, out, result


def links_crawl_pages(links_crawl):
    server, out, _ = links_crawl
    pages = paths(server, saved_pages(out))
    # The stack pops the last link first; old.html's redirect brings a.html, its own link then a duplicate.
    assert pages == [("index.html", 0), ("moved.html", 1), ("sub/", 1), ("a.html", 1)]
    return pages


def test_redirect_to_a_page_already_seen_is_not_saved_twice(links_crawl):
    server, _, result = links_crawl
    assert [name for name, _ in links_crawl_pages(links_crawl)].count("a.html") == 1
    assert progress_line(1, "IgnDupl", server.url + "/a.html") in result.stdout.decode()


def test_meta_refresh_page_is_saved_as_fetched(links_crawl):
    # The reference saves what a 200 answered; a <meta http-equiv="refresh"> is
    # not a redirect, and its target is fetched only if a link leads there.
    server, out, _ = links_crawl
    pages = links_crawl_pages(links_crawl)
    doc_id = pages.index(("moved.html", 1)) + 1
    assert (out / str(doc_id)).read_bytes().split(b"\n", 2)[2] == MOVED + b"\n"
    assert "/target.html" not in {hit.key for hit in server.hits}


def test_a_link_longer_than_the_url_bound_is_logged_and_denied(links_crawl):
    # Scrapy's UrlLengthMiddleware would drop it unlogged; SPEC 2.3 logs every link: a URL over 2,083
    # characters (TSE_MAX_URL_LENGTH, tse import's bound) is logged Found then IgnDeny, and never fetched.
    server, _, result = links_crawl
    url = f"{server.url}/{LONG_LINK}"
    assert progress_line(0, "Found", url) + progress_line(0, "IgnDeny", url) in result.stdout.decode()
    assert not any(hit.target.startswith("/page.html") for hit in server.hits)


# The cookie jar and the referer, each on request: one crawl with both; without either, links_crawl
# (its index.html sets a cookie too).
def test_cookies_and_a_referer_are_sent_only_when_enabled(tmp_path, serve, links_crawl):
    # The reference keeps no cookies, nor does a crawl by default; Scrapy's cookie jar on request.
    # The reference sends no Referer, nor does a crawl by default; Scrapy's RefererMiddleware on request.
    for crawled, options, cookie_sent, referer_sent in [
        (links_crawl, None, None, None),
        (None, ("-s", "COOKIES_ENABLED=True", "-s", "REFERER_ENABLED=True"), "session=42", "index.html"),
    ]:
        if crawled is None:
            site = write_site(tmp_path / "site", {"index.html": ["a.html"], "a.html": []})
            server = serve(site.root)
            server.rules["/index.html"] = COOKIE_SET
            # tldextract's cache empty, as on a fresh machine: Scrapy's cookie jar had it fetch the Public
            # Suffix List from publicsuffix.org (a host no crawl named), a WARNING and a traceback offline.
            (tmp_path / "out").mkdir()
            env = clean_env(TLDEXTRACT_CACHE=str(tmp_path / "tld"))
            result = crawl_site(server, tmp_path / "out", 1, *options, env=env)
            assert result.returncode == 0, result.stderr.decode()
            assert paths(server, saved_pages(tmp_path / "out")) == [("index.html", 0), ("a.html", 1)]
        else:
            server, _, result = crawled
        (page,) = [hit for hit in server.hits if hit.key == "/a.html"]
        assert page.header("Cookie") == cookie_sent, options
        expected = referer_sent and f"{server.url}/{referer_sent}"
        assert page.header("Referer") == expected, options
        # Nor does the redirect middleware warn that it found no Referer middleware.
        assert "WARNING" not in result.stderr.decode(), options


@pytest.mark.parametrize("options", [(), ("--order", "bfs", "-s", "CONCURRENT_REQUESTS=8")])
def test_every_link_is_logged_in_its_place_external_ones_too(tmp_path, serve, options):
    # The spider judges most external links itself (no request made): their lines
    # still come in link order, between those the scheduler and dupefilter write.
    ext = [f"https://elsewhere.example/{n}.html" for n in range(5)]
    links = {
        "index.html": ["a.html", ext[0], ext[1], "a.html", ext[2], "b.html", ext[3], ext[4]],
        "a.html": [],
        "b.html": [],
    }
    site = write_site(tmp_path / "site", links)
    server = serve(site.root)
    result = crawl(server, tmp_path / "out", 1, *options)
    assert result.returncode == 0, result.stderr.decode()
    u = server.url + "/"
    expected = [(0, "Fetched", u + "index.html"), (0, "Scanning", u + "index.html")]
    for url, verdict in [
        (u + "a.html", "Added"),
        (ext[0], "IgnExtrn"),
        (ext[1], "IgnExtrn"),
        (u + "a.html", "IgnDupl"),
        (ext[2], "IgnExtrn"),
        (u + "b.html", "Added"),
        (ext[3], "IgnExtrn"),
        (ext[4], "IgnExtrn"),
    ]:
        expected += [(0, "Found", url), (0, verdict, url)]
    out = result.stdout.decode()
    assert out.startswith("".join(progress_line(*line) for line in expected))
    assert sorted(out.splitlines()[len(expected) :]) == [
        progress_line(1, "Fetched", u + "a.html").rstrip("\n"),
        progress_line(1, "Fetched", u + "b.html").rstrip("\n"),
    ]
    assert "6 links ignored (5 external, 1 duplicate, 0 denied)" in result.stderr.decode()
    assert not any("elsewhere" in hit.key for hit in server.hits)


# The host alone in no_proxy, or in a list after others (one with a port): the same path (urllib's
# proxy_bypass, asked once per host), a crawl each; one of the two each run, drawn
# (tests/support/sample.py; TSE_TEST_SEED=all for both).
def test_no_proxy_hosts_are_fetched_directly(tmp_path, serve):
    site = write_site(tmp_path / "site", {"index.html": ["a.html", "b.html"], "a.html": [], "b.html": []})
    server = serve(site.root)
    proxy = serve(tmp_path / "empty")  # records every request sent through it
    chosen, said = seeded_sample(["127.0.0.1", "localhost,127.0.0.1:1,127.0.0.1"], 1)
    for number, no_proxy in enumerate(chosen):
        env = clean_env(http_proxy=proxy.url, no_proxy=no_proxy)
        (tmp_path / f"out{number}").mkdir()
        result = crawl_site(server, tmp_path / f"out{number}", 1, env=env)
        assert result.returncode == 0, (no_proxy, said, result.stderr.decode())
        assert len(saved_pages(tmp_path / f"out{number}")) == 3, (no_proxy, said)
        assert proxy.hits == [], (no_proxy, said)


def test_hosts_not_in_no_proxy_go_through_the_proxy(tmp_path, serve):
    site = write_site(tmp_path / "site", {"index.html": ["a.html"], "a.html": []})
    server = serve(site.root)
    proxy = serve(tmp_path / "empty")
    env = clean_env(http_proxy=proxy.url, no_proxy="example.invalid")
    (tmp_path / "out").mkdir()
    crawl_site(server, tmp_path / "out", 1, env=env)
    # The proxy knows no such site: every request, robots.txt first, reached it and failed there.
    assert [hit.target for hit in proxy.hits][:2] == [f"{server.url}/robots.txt", f"{server.url}/index.html"]
    assert server.hits == []


def test_directory_without_slash_is_redirected(links_crawl):
    assert ("sub/", 1) in links_crawl_pages(links_crawl)


# Runs ``tse crawl`` with the pipeline's page writes watched: how many requests
# the downloader holds when each page file is about to be written.
WATCHED_CRAWL = """
import json, sys
from tse_scrapy.cli import main
from tse_scrapy.crawl import pipeline

in_downloader = []
write = pipeline.PageDirPipeline.write

async def watched_write(self, doc_id, item):
    in_downloader.append(len(self.crawler.engine.downloader.active))
    await write(self, doc_id, item)

pipeline.PageDirPipeline.write = watched_write
code = main(sys.argv[2:])
with open(sys.argv[1], "w") as out:
    json.dump(in_downloader, out)
sys.exit(code)
"""


def test_the_next_page_is_on_its_way_before_a_page_file_is_written(tmp_path, serve):
    # order=tse fetches one page at a time, after every link of the previous
    # one is queued; the fetch of the next then hides the writing of this one.
    site = generate_site(tmp_path / "site", pages=30, fanout=3, seed=7)
    server = serve(site.root)
    (tmp_path / "out").mkdir()
    watched = tmp_path / "in-downloader.json"
    arguments = ["crawl", f"{server.url}/index.html", tmp_path / "out", 10, "--prefix", f"{server.url}/"]
    result = subprocess.run(
        [sys.executable, "-c", WATCHED_CRAWL, watched, *map(str, arguments), "-s", "DOWNLOAD_DELAY=0"],
        capture_output=True,
        env=clean_env(),
        timeout=300,
    )
    assert result.returncode == 0, result.stderr.decode()
    pages = paths(server, saved_pages(tmp_path / "out"))
    assert pages == model_crawl(site, 10, "tse")
    # Each page but the last: the next one has been handed to the downloader.
    assert json.loads(watched.read_text()) == [1] * (len(pages) - 1) + [0]


NOTHING_SAVED = "the seed URL could not be fetched ({why}): nothing was saved"


# The seed redirecting in a loop (through another page) or to itself: the same path (the dupefilter
# finds the next hop in the redirect chain), a crawl each; one of the two each run, drawn
# (tests/support/sample.py; TSE_TEST_SEED=all for both).
REDIRECT_LOOPS = ["the seed redirects in a loop", "the seed redirects to itself"]


@pytest.mark.parametrize(
    "case, why",
    [
        ("nothing listens", "connection refused"),
        ("the seed is missing", "HTTP 404"),
        ("robots.txt answers 503", "robots.txt answered HTTP 503"),
        ("robots.txt forbids it", "robots.txt forbids it"),
        # (A tester's find: a loop, or a page redirecting to itself, gave no line.)
        ("the seed redirects in a loop or to itself", "redirect loop"),
        ("the seed is too large", "larger than DOWNLOAD_MAXSIZE"),  # (not "cancelled (too large?)")
    ],
)
def test_a_seed_that_cannot_be_fetched_is_said_once_at_the_end(tmp_path, serve, case, why):
    # It was "0 pages saved, 1 failed" and exit 0, with only Scrapy's robots.txt errors to say why.
    cases, said = seeded_sample(REDIRECT_LOOPS, 1) if "redirects" in case else ([case], case)
    for number, case in enumerate(cases):
        site = write_site(tmp_path / f"site{number}", {"index.html": ["a.html"], "a.html": []})
        server = serve(site.root)
        url = server.url
        if case == "nothing listens":
            url = f"http://127.0.0.1:{free_port()}"
        elif case == "the seed is missing":
            server.rules["/index.html"] = Rule(status=404)
        elif case == "robots.txt answers 503":
            server.rules["/robots.txt"] = Rule(status=503)
        elif case == "the seed redirects in a loop":
            server.rules["/index.html"] = Rule(status=302, location="/a.html")
            server.rules["/a.html"] = Rule(status=301, location="/index.html")
        elif case == "the seed redirects to itself":
            server.rules["/index.html"] = Rule(status=302, location="/index.html")
        elif case == "the seed is too large":
            server.rules["/index.html"] = Rule(body=b"<html>" + b"x" * 200_000 + b"</html>")
        else:
            server.rules["/robots.txt"] = Rule(status=200, body=b"User-agent: *\nDisallow: /index.html\n")
        out = tmp_path / f"out{number}"
        out.mkdir()
        fast = ("--prefix", f"{url}/", "-s", "DOWNLOAD_DELAY=0", "-s", "RETRY_TIMES=0", "-s", "DOWNLOAD_MAXSIZE=100000")
        result = run_tse("crawl", f"{url}/index.html", out, 1, *fast, timeout=120)
        # SPEC 2.4: a failed fetch is no error; stdout is the reference's log.
        assert result.returncode == 0, (case, said, result.stderr.decode())
        assert result.stdout.decode() == f" 0    Failed: {url}/index.html\n", (case, said)
        lines = result.stderr.decode().splitlines()
        assert lines[-1] == "tse crawl: " + NOTHING_SAVED.format(why=why), (case, said, lines)
        assert sum("seed URL" in line for line in lines) == 1, (case, said)
        assert sorted(os.listdir(out)) == [".crawler"], (case, said)


def test_a_failed_seed_is_said_by_scrapy_crawl_too_and_only_a_seed(tmp_path, serve):
    site = write_site(tmp_path / "site", {"index.html": ["a.html", "gone.html"], "a.html": []})
    server = serve(site.root)
    server.rules["/index.html"] = Rule(status=404, times=1)
    out = tmp_path / "out"
    out.mkdir()
    result = scrapy_crawl_site(server, out, 1, "-s", "LOG_LEVEL=WARNING", timeout=120)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stderr.decode().splitlines()[-1] == "scrapy crawl tse: " + NOTHING_SAVED.format(why="HTTP 404")
    # The seed saved, another page failed: nothing to say about the seed (by tse crawl: in
    # test_redirects_failures_robots_non_html_and_a_crawl_delay, whose seed is saved and other pages fail).


def test_of_several_seeds_the_failed_ones_are_named(tmp_path, serve):
    # One seed saved, three failed, named as given in the one line.  Those three are asked for
    # percent-encoded: Scrapy asks for "a b.html" as "a%20b.html", and its failure was not known as the
    # seed's (a tester's find).
    site = write_site(tmp_path / "site", {"index.html": ["a.html"], "a.html": []})
    server = serve(site.root)
    out = tmp_path / "out"
    out.mkdir()
    failing = [f"{server.url}/{name}" for name in ("a b.html", "a[b.html", "caf\u00e9.html")]
    seeds = ",".join([f"{server.url}/index.html", *failing])
    result = run_tse("crawl", seeds, out, 0, "--prefix", f"{server.url}/", "-s", "DOWNLOAD_DELAY=0", timeout=120)
    assert result.returncode == 0, result.stderr.decode()
    last = result.stderr.decode().splitlines()[-1]
    start = "tse crawl: 3 of 4 seed URLs could not be fetched: "
    assert last.startswith(start), last
    assert sorted(last.removeprefix(start).split(", ")) == sorted(f"{seed} (HTTP 404)" for seed in failing), last


def test_a_worker_joining_a_crawl_under_way_shows_no_deprecation_warning(tmp_path, serve, redis_url):
    # scrapy_redis's scheduler says "Resuming crawl" with Spider.log(), deprecated by Scrapy: the
    # warning appeared on the joining worker's otherwise quiet stderr.
    import redis

    from tests.support.wait import wait_until, while_running

    names = [f"p{i}.html" for i in range(6)]
    server = serve(write_site(tmp_path / "site", {"index.html": names, **{name: [] for name in names}}).root)
    out = tmp_path / "out"
    out.mkdir()
    distributed = ("--redis", redis_url, "--name", "joining", "--no-progress", "-s", "TSE_LEASE_SECONDS=1")
    command = [str(BIN / "tse"), "crawl", f"{server.url}/index.html", str(out), "1", "--prefix", f"{server.url}/"]
    # A delay the joiner keeps (the crawl's): long enough that the first worker is killed with the
    # seed's links still queued (6 more requests: at least 2.5 s), short enough for the joiner's 6.
    first = popen(
        [*command, *distributed, "-s", "DOWNLOAD_DELAY=0.5"],
        cwd=ROOT,
        env=clean_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    frontier = redis.Redis.from_url(redis_url)
    try:
        # The seed saved: its links wait in the shared frontier.
        queued = while_running(first, lambda: frontier.zcard("tse:joining:frontier") > 1, "queueing the seed's links")
        wait_until(queued, 60, "the seed's links never reached the frontier", 0.02)
    finally:
        first.kill()
        first.wait()
    second = run_tse("crawl", *distributed, "-s", "DOWNLOAD_DELAY=0", timeout=120)
    assert second.returncode == 0, second.stderr.decode()
    assert sorted(int(name) for name in os.listdir(out) if name.isdigit()) == list(range(1, 8))  # all saved
    stderr = second.stderr.decode()
    assert "Warning" not in stderr and "deprecated" not in stderr, stderr
    assert stderr.splitlines()[-1].startswith("tse crawl: "), stderr
