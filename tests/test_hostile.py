"""A crawl survives hostile and broken servers: each fault below is injected by
the test server on one page; the crawl exits 0 and saves the page after it."""

import gzip

import pytest

from tests.conftest import crawl_site
from tests.support.pages import saved_pages
from tests.support.sitegen import write_site
from tse_scrapy.devtools.siteserver import Rule
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


def test_500_then_200_is_saved_once(crawl):
    pages, _, server, _ = crawl({"/target.html": Rule(status=500, times=1)})
    assert pages == ["index.html", "target.html", "after.html"]
    assert [hit.key for hit in server.hits].count("/target.html") == 2


def test_timeout(crawl):
    pages, out, server, _ = crawl({"/target.html": Rule(delay=3)}, "DOWNLOAD_TIMEOUT=1", "RETRY_TIMES=0")
    assert pages == ["index.html", "after.html"] and failed(server, "target.html") in out


def test_connection_reset_mid_body(crawl):
    pages, out, server, _ = crawl({"/target.html": Rule(reset_after=20)})
    assert pages == ["index.html", "after.html"] and failed(server, "target.html") in out


def test_slow_drip(crawl):
    pages, out, server, _ = crawl({"/target.html": Rule(drip=0.2)}, "DOWNLOAD_TIMEOUT=1", "RETRY_TIMES=0")
    assert pages == ["index.html", "after.html"] and failed(server, "target.html") in out


def test_body_over_the_size_limit(crawl):
    big = b"<html>" + b"x" * 200_000 + b"</html>"
    pages, out, server, _ = crawl({"/target.html": Rule(body=big)}, "DOWNLOAD_MAXSIZE=100000")
    assert pages == ["index.html", "after.html"] and failed(server, "target.html") in out


def test_redirect_loop(crawl):
    pages, out, server, _ = crawl(
        {"/target.html": Rule(status=302, location="/hop.html"), "/hop.html": Rule(status=302, location="/target.html")}
    )
    assert pages == ["index.html", "after.html"] and failed(server, "target.html") in out


def test_redirect_chain_out_of_the_prefix(crawl):
    pages, out, server, _ = crawl(
        {
            "/target.html": Rule(status=301, location="/hop.html"),
            "/hop.html": Rule(status=302, location="http://127.0.0.2:9/elsewhere.html"),
        }
    )
    assert pages == ["index.html", "after.html"] and failed(server, "target.html") in out
    assert not any("elsewhere" in hit.target for hit in server.hits)


def test_gzip_body_is_saved_decoded(crawl):
    rule = Rule(body=gzip.compress(PAGE), headers={"Content-Encoding": "gzip"})
    pages, _, _, out = crawl({"/target.html": rule})
    assert pages == ["index.html", "target.html", "after.html"]
    assert (out / "2").read_bytes().split(b"\n", 2)[2] == PAGE + b"\n"


def test_chunked_body(crawl):
    pages, _, _, out = crawl({"/target.html": Rule(body=PAGE * 50, chunked=True)})
    assert pages == ["index.html", "target.html", "after.html"]
    assert (out / "2").read_bytes().split(b"\n", 2)[2] == PAGE * 50 + b"\n"


def test_invalid_utf8_and_nul_bytes_are_saved_unchanged(crawl):
    pages, _, _, out = crawl({})
    assert pages == ["index.html", "target.html", "after.html"]
    assert (out / "2").read_bytes().split(b"\n", 2)[2] == PAGE + b"\n"


def test_an_image_answer_is_no_page_saved(crawl):
    # (An image's bytes were saved as a page, and indexed as text: docs/crawling.md, "Answers that
    # are no page"; `--links tse` saves every 200 answer, as the reference: test_crawl_leftovers_types.)
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
    pages, out, server, _ = crawl({"/target.html": Rule(body=png, headers={"Content-Type": "image/png"})})
    assert pages == ["index.html", "after.html"] and failed(server, "target.html") in out


@pytest.mark.parametrize("rule", [Rule(status=500), Rule(delay=3)], ids=["500", "timeout"])
def test_unreachable_robots_txt_means_stay_out(crawl, rule):
    pages, out, server, _ = crawl({"/robots.txt": rule}, "DOWNLOAD_TIMEOUT=1", "RETRY_TIMES=0")
    assert pages == [] and failed(server, "index.html", depth=0) in out
    assert [hit.key for hit in server.hits] == ["/robots.txt"]


def test_missing_robots_txt_means_no_rules(crawl):
    pages, _, server, _ = crawl({})
    assert pages == ["index.html", "target.html", "after.html"]
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
