"""A crawl survives hostile and broken servers: each fault below is injected by
the test server on one page; the crawl exits 0 and saves the page after it."""

import gzip
import tempfile
from pathlib import Path

import pytest

from tests.conftest import crawl_site
from tests.support.pages import saved_pages
from tests.support.sitegen import write_site
from tse_scrapy.crawl.downloader.robots import KEPT_ROBOTS_BYTES, kept_robots
from tse_scrapy.devtools.siteserver import Rule, SiteServer
from tse_scrapy.rules.crawling.progress import progress_line

PAGE = b"<html><body><p>A page with \xff\xfe invalid UTF-8 and a \0 NUL byte.</p></body></html>\n"


@pytest.fixture
def crawl(tmp_path, serve):
    """Crawl index -> after.html, target.html (fetched first) with rules on target."""
    site = write_site(
        tmp_path / "site", {"index.html": ["after.html", "target.html"], "after.html": [], "hop.html": []}
    )
    (site.root / "target.html").write_bytes(PAGE)
    server = serve(site.root)

    def run(rules, *settings, depth=1):
        server.rules.update(rules)
        out = tmp_path / "out"
        out.mkdir()
        options = [x for setting in settings for x in ("-s", setting)]
        result = crawl_site(server, out, depth, *options, timeout=120)
        assert result.returncode == 0, result.stderr.decode()[-3000:]
        assert b"Traceback" not in result.stderr
        pages = [url.removeprefix(server.url + "/") for url, _ in saved_pages(out)]
        return pages, result.stdout.decode(), server, out

    return run


def failed(server, name, depth=1):
    return progress_line(depth, "Failed", f"{server.url}/{name}")


# The faults a crawl meets under the default settings, each on a page of its own, in one crawl made once
# for the module's tests (each reads it): every page is linked from index.html before after.html, so is
# fetched before it (the crawl goes on past them); what each fault does to its page is the test's.
SAVED = {
    "/retried.html": Rule(status=500, times=1),  # 500, then 200: saved once
    "/gzip.html": Rule(body=gzip.compress(PAGE), headers={"Content-Encoding": "gzip"}),  # saved decoded
    "/chunked.html": Rule(body=PAGE * 50, chunked=True),
    # The server closes (cleanly) after two of its chunks: the page is not whole, so not saved as the page
    # (retried, then failed), whatever DOWNLOAD_FAIL_ON_DATALOSS says (Scrapy's default, True, here).
    "/cut.html": Rule(body=PAGE * 50, cut_chunks=2),
}
# Answers that fail their page under the default settings.
FAILING = {
    "/reset.html": Rule(reset_after=20),  # the connection reset mid-body
    "/loop.html": Rule(status=302, location="/hop.html"),  # a redirect loop
    "/hop.html": Rule(status=302, location="/loop.html"),
    "/chain.html": Rule(status=301, location="/out.html"),  # a redirect chain out of the prefix
    "/out.html": Rule(status=302, location="http://127.0.0.2:9/elsewhere.html"),
    # An image's bytes were saved as a page, and indexed as text: docs/crawling.md, "Answers that are no
    # page"; `--links tse` saves every 200 answer, as the reference: test_crawl_leftovers_types.
    "/image.html": Rule(body=b"\x89PNG\r\n\x1a\n" + bytes(range(256)), headers={"Content-Type": "image/png"}),
}
DEFAULT_TARGETS = ["reset.html", "loop.html", "chain.html", "image.html", "cut.html", *("retried.html", "gzip.html")]
DEFAULT_TARGETS += ["chunked.html", "target.html"]


def _crawl_once(site_links: dict, rules: dict, *settings):
    """A crawl of the site of *site_links* (each page PAGE), served with *rules* by a server of its own:
    (the saved pages' names, stdout, the server, the page directory), for a module fixture."""
    with tempfile.TemporaryDirectory() as name:
        site = write_site(Path(name) / "site", site_links)
        for page in site_links["index.html"]:
            if page != "after.html":
                (site.root / page).write_bytes(PAGE)
        for extra in ("hop.html", "out.html"):
            (site.root / extra).write_bytes(PAGE)
        with SiteServer(site.root) as server:
            server.rules.update(rules)
            out = Path(name) / "out"
            out.mkdir()
            options = [x for setting in settings for x in ("-s", setting)]
            result = crawl_site(server, out, 1, *options, timeout=120)
            assert result.returncode == 0, result.stderr.decode()[-3000:]
            assert b"Traceback" not in result.stderr
            pages = [url.removeprefix(server.url + "/") for url, _ in saved_pages(out)]
            yield pages, result.stdout.decode(), server, out


@pytest.fixture(scope="module")
def default_crawl():
    yield from _crawl_once({"index.html": ["after.html", *DEFAULT_TARGETS], "after.html": []}, {**SAVED, **FAILING})


def saved_body(out, pages, name) -> bytes:
    return (out / str(pages.index(name) + 1)).read_bytes().split(b"\n", 2)[2]


SAVED_PAGES = {"index.html", "retried.html", "gzip.html", "chunked.html", "target.html", "after.html"}


def test_500_then_200_is_saved_once(default_crawl):
    pages, _, server, _ = default_crawl
    assert set(pages) == SAVED_PAGES and len(pages) == len(SAVED_PAGES) and pages[-1] == "after.html"
    assert [hit.key for hit in server.hits].count("/retried.html") == 2


# Answers that fail their page, with a second's patience and no retry: each page of its own, in one crawl.
PATIENCE = {
    "/timeout.html": Rule(delay=3),
    "/drip.html": Rule(drip=0.2),
    "/big.html": Rule(body=b"<html>" + b"x" * 200_000 + b"</html>"),  # over DOWNLOAD_MAXSIZE
}


@pytest.fixture(scope="module")
def impatient_crawl():
    links = {"index.html": ["after.html", "timeout.html", "drip.html", "big.html"], "after.html": []}
    yield from _crawl_once(links, PATIENCE, "DOWNLOAD_TIMEOUT=1", "RETRY_TIMES=0", "DOWNLOAD_MAXSIZE=100000")


def test_timeout(impatient_crawl):
    pages, out, server, _ = impatient_crawl
    assert pages == ["index.html", "after.html"] and failed(server, "timeout.html") in out


def test_slow_drip(impatient_crawl):
    pages, out, server, _ = impatient_crawl
    assert pages == ["index.html", "after.html"] and failed(server, "drip.html") in out


def test_body_over_the_size_limit(impatient_crawl):
    pages, out, server, _ = impatient_crawl
    assert pages == ["index.html", "after.html"] and failed(server, "big.html") in out


@pytest.mark.parametrize(
    ("name", "body"),
    [("gzip.html", PAGE), ("chunked.html", PAGE * 50), ("target.html", PAGE)],
    ids=["gzip-saved-decoded", "chunked", "invalid-utf8-and-nul-bytes-saved-unchanged"],
)
def test_a_body_is_saved_as_the_page_is(default_crawl, name, body):
    pages, _, _, out = default_crawl
    assert set(pages) == SAVED_PAGES and pages[-1] == "after.html"
    assert saved_body(out, pages, name) == body + b"\n"


def test_a_reset_a_redirect_loop_or_chain_out_of_the_prefix_and_an_image_answer_fail_their_page(default_crawl):
    pages, out, server, _ = default_crawl
    for name in ["reset.html", "loop.html", "chain.html", "image.html"]:
        assert name not in pages, name
        assert failed(server, name) in out, name
    assert not any("elsewhere" in hit.target for hit in server.hits)


@pytest.mark.parametrize("rule", [Rule(status=500), Rule(delay=3)], ids=["500", "timeout"])
def test_unreachable_robots_txt_means_stay_out(crawl, rule):
    pages, out, server, _ = crawl({"/robots.txt": rule}, "DOWNLOAD_TIMEOUT=1", "RETRY_TIMES=0")
    assert pages == [] and failed(server, "index.html", depth=0) in out
    assert [hit.key for hit in server.hits] == ["/robots.txt"]


# A robots.txt that forbids everything, then 40 MB of comments, sent gzipped (40 KB): past DOWNLOAD_MAXSIZE
# once decompressed, Scrapy refuses it as it refuses a page it ignores, and every page was then asked
# for (a tester's find).  Not read, it forbids everything, as one too large sent as it is does.
@pytest.mark.parametrize("encoding", ["gzip", None], ids=["gzipped", "as it is"])
def test_a_robots_txt_too_large_means_stay_out(crawl, encoding):
    rules = b"User-agent: *\nDisallow: /\n" + b"#" * 40_000_000
    body = gzip.compress(rules, 9) if encoding else rules
    headers = {"Content-Encoding": encoding} if encoding else {}
    pages, out, server, _ = crawl({"/robots.txt": Rule(body=body, headers=headers)}, "LOG_LEVEL=WARNING")
    assert pages == [] and failed(server, "index.html", depth=0) in out
    assert [hit.key for hit in server.hits] == ["/robots.txt"]


# A robots.txt of 600 KiB: its first 512 KiB are read, to their last whole line (21 MB of rules took 14 s
# and 1 GB to parse, 0.3 s a page to check): a rule past them is not one, a rule before them is.
def test_a_robots_txt_is_read_to_its_first_512_kib(crawl):
    rules = b"User-agent: *\nDisallow: /after.html\n" + b"# " + b"x" * (600 * 1024) + b"\nDisallow: /target.html\n"
    pages, _, server, _ = crawl({"/robots.txt": Rule(body=rules)})
    assert pages == ["index.html", "target.html"]
    assert "/after.html" not in [hit.key for hit in server.hits]


@pytest.mark.parametrize(
    ("body", "kept"),
    [
        (b"Disallow: /a\n", b"Disallow: /a\n"),
        (b"Disallow: /a\n" + b"x" * KEPT_ROBOTS_BYTES, b"Disallow: /a\n"),  # a line cut in two: left out
        (b"Disallow: /a\r" + b"x" * KEPT_ROBOTS_BYTES, b"Disallow: /a\r"),
        (b"x" * (KEPT_ROBOTS_BYTES + 1), b"x" * KEPT_ROBOTS_BYTES),  # no line break at all: the bound
        (b"a\n" * (KEPT_ROBOTS_BYTES // 2), b"a\n" * (KEPT_ROBOTS_BYTES // 2)),  # the bound exactly
    ],
)
def test_what_is_read_of_a_robots_txt(body, kept):
    assert kept_robots(body) == kept


# A link's URL holding terminal escapes (clear the screen, set the title, CSI, backspace) is printed
# percent-encoded in the progress log, not as the bytes a terminal obeys.
def test_a_links_control_characters_are_not_printed(tmp_path, serve):
    escapes = "/e\x1b[2J\x1b]0;OWNED\x07x\x9b\x08.html"
    site = write_site(tmp_path / "site", {"index.html": []})
    (site.root / "index.html").write_text(f'<html><body><a href="{escapes}">e</a></body></html>', "utf-8")
    server = serve(site.root)
    (tmp_path / "out").mkdir()
    result = crawl_site(server, tmp_path / "out", 1)
    assert result.returncode == 0
    found = [line for line in result.stdout.decode().splitlines() if "Found:" in line]
    assert found == [f" 0     Found: {server.url}/e%1B[2J%1B]0;OWNED%07x%C2%9B%08.html"]
    assert not any(ord(c) < 32 or 0x7F <= ord(c) <= 0x9F for c in result.stdout.decode().replace("\n", ""))


def test_missing_robots_txt_means_no_rules(default_crawl):
    pages, _, server, _ = default_crawl
    assert set(pages) == SAVED_PAGES and pages[-1] == "after.html"
    assert server.hits[0].key == "/robots.txt"


def test_thousands_of_links_on_one_page(tmp_path, serve):
    targets = [f"p{i}.html" for i in range(200)]
    links = (
        [targets[i % 200] for i in range(3000)]
        + [f"missing{i}.html" for i in range(50)]
        + [f"https://x{i}.example/" for i in range(1950)]
    )
    site = write_site(tmp_path / "site", {"index.html": links, **{t: [] for t in targets}})
    server = serve(site.root)
    (tmp_path / "out").mkdir()
    result = crawl_site(server, tmp_path / "out", 1, "-s", "LOG_LEVEL=WARNING")
    assert result.returncode == 0
    assert len(saved_pages(tmp_path / "out")) == 201
    lines = result.stdout.decode().splitlines()
    assert sum("Found:" in line for line in lines) == 5000
    assert sum("Failed:" in line for line in lines) == 50


# A page's links are followed to TSE_PAGE_LINKS (50,000), its first in order, the rest said in one line: a
# page of a million links (1.7 MB gzipped) took 80 s of CPU and 500 MB of crawl state (a tester's find).
def test_a_pages_links_are_followed_to_the_bound(tmp_path, serve):
    targets = [f"p{i}.html" for i in range(60)]
    site = write_site(tmp_path / "site", {"index.html": targets, **{t: [] for t in targets}})
    server = serve(site.root)
    (tmp_path / "out").mkdir()
    result = crawl_site(server, tmp_path / "out", 1, "-s", "TSE_PAGE_LINKS=40", "-s", "LOG_LEVEL=WARNING")
    assert result.returncode == 0
    found = [line.split(": ", 1)[1] for line in result.stdout.decode().splitlines() if "Found:" in line]
    assert found == [f"{server.url}/{target}" for target in targets[:40]]
    assert len(saved_pages(tmp_path / "out")) == 41
    assert (
        f"{server.url}/index.html holds 60 links: its first 40 are followed (TSE_PAGE_LINKS)" in result.stderr.decode()
    )


# A <base href> whose host Python cannot read raised out of the link scan (the page's links and the page
# itself lost, a traceback logged), and a link whose host it cannot read was dropped unsaid: the base is
# none, as a browser takes it, and the link is logged where it stands, never fetched.  A <template>'s
# content is inert (a fragment of its own): the <base> and the link in it are none.
def test_a_base_or_link_of_an_unreadable_host(tmp_path, serve):
    site = write_site(tmp_path / "site", {"index.html": [], "a.html": []})
    links = '<a href="http://[::1:99/x.html">v6</a><template><a href="inert.html">t</a></template>'
    links += '<a href="a.html">a</a>'
    head = '<head><template><base href="/t/"></template><base href="http://[bad/"></head>'
    (site.root / "index.html").write_text(f"<html>{head}<body>{links}</body></html>")
    server = serve(site.root)
    (tmp_path / "out").mkdir()
    result = crawl_site(server, tmp_path / "out", 1)
    assert result.returncode == 0 and b"Traceback" not in result.stderr, result.stderr.decode()[-2000:]
    assert [url for url, _ in saved_pages(tmp_path / "out")] == [f"{server.url}/index.html", f"{server.url}/a.html"]
    out = result.stdout.decode()
    assert (
        progress_line(0, "Found", "http://[::1:99/x.html") + progress_line(0, "IgnExtrn", "http://[::1:99/x.html")
        in out
    )
    assert "inert.html" not in out and "/t/" not in out, out


def test_a_chunked_answer_cut_before_its_last_chunk(default_crawl):
    # DOWNLOAD_FAIL_ON_DATALOSS=True (Scrapy's default): default_crawl's cut.html.
    pages, out, server, _ = default_crawl
    assert "cut.html" not in pages and "after.html" in pages and failed(server, "cut.html") in out
    assert [hit.key for hit in server.hits].count("/cut.html") == 3  # (RETRY_TIMES: 2)


def test_a_chunked_answer_cut_before_its_last_chunk_without_failing_on_data_loss(crawl):
    # Off, Scrapy hands the cut body on: it is retried, then failed ('data loss'), not saved.
    rule = Rule(body=PAGE * 50, cut_chunks=2)
    pages, out, server, _ = crawl({"/target.html": rule}, "DOWNLOAD_FAIL_ON_DATALOSS=False")
    assert pages == ["index.html", "after.html"] and failed(server, "target.html") in out
    assert [hit.key for hit in server.hits].count("/target.html") == 3  # (RETRY_TIMES: 2)
