"""URL filters, the priority order and an exact page limit, end to end."""

import os
import re

import pytest

from tests.conftest import crawl_site
from tests.support.pages import saved_pages
from tests.support.sitegen import generate_site, write_site
from tse_scrapy.rules.crawling.progress import progress_line


def crawl(server, out, depth, *options):
    out.mkdir()
    result = crawl_site(server, out, depth, *options)
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    return [url.removeprefix(server.url + "/") for url, _ in saved_pages(out)], result.stdout.decode()


def test_deny_and_allow(tmp_path, serve):
    site = generate_site(tmp_path / "site", pages=40, fanout=3, seed=4)
    server = serve(site.root)
    denied = re.compile(r"p1\d\.html|p3")
    pages, out = crawl(server, tmp_path / "deny", 10, "--deny", r"p1\d\.html,p3")
    assert pages and not any(denied.search(page) for page in pages)
    assert not any(denied.search(hit.key) for hit in server.hits)
    ignored = {line.split(": ", 1)[1] for line in out.splitlines() if "IgnDeny:" in line}
    assert ignored and all(denied.search(url) for url in ignored)
    server.hits.clear()
    allowed = re.compile(r"/index\.html$|/p[0-9]\.html$")
    pages, out = crawl(server, tmp_path / "allow", 10, "--allow", allowed.pattern.replace("|", ","))
    assert pages and all(allowed.search("/" + page) for page in pages)
    assert all(allowed.search(hit.key) for hit in server.hits if hit.key != "/robots.txt")


def test_deny_ext_replaces_the_tse_extension_rule(tmp_path, serve):
    site = write_site(tmp_path / "site", {"index.html": ["page.php", "doc.pdf", "a.html"], "a.html": []})
    (site.root / "page.php").write_text("<html>php</html>")
    (site.root / "doc.pdf").write_bytes(b"%PDF")
    server = serve(site.root)
    u = server.url + "/"
    pages, out = crawl(server, tmp_path / "tse", 1)
    assert pages == ["index.html", "a.html"]
    assert progress_line(0, "IgnExtrn", u + "page.php") in out
    pages, out = crawl(server, tmp_path / "ext", 1, "--deny-ext", "pdf,zip")
    assert pages == ["index.html", "a.html", "page.php"]
    assert progress_line(0, "IgnDeny", u + "doc.pdf") in out
    pages, out = crawl(server, tmp_path / "scrapy", 1, "--deny-ext", "scrapy")
    assert pages == ["index.html", "a.html", "page.php"]
    assert "/doc.pdf" not in {hit.key for hit in server.hits}


# In-link counts worked by hand: index -> a b c d; a -> c d; c -> d e; d -> b e; b -> f.
LINKS = {
    "index.html": ["a.html", "b.html", "c.html", "d.html"],
    "a.html": ["c.html", "d.html"],
    "b.html": ["f.html"],
    "c.html": ["d.html", "e.html"],
    "d.html": ["b.html", "e.html"],
    "e.html": [],
    "f.html": [],
}


def test_priority_order_follows_in_link_counts(tmp_path, serve):
    server = serve(write_site(tmp_path / "site", LINKS).root)
    # a, b, c, d start with 1 in-link each (ties: discovery order), so a; then
    # c and d have 2: c; then d has 3; then b and e have 2, b is shallower; e; f.
    pages, _ = crawl(server, tmp_path / "priority", 10, "--order", "priority")
    assert pages == ["index.html", "a.html", "c.html", "d.html", "b.html", "e.html", "f.html"]
    pages, _ = crawl(
        server,
        tmp_path / "fewest",
        10,
        "--order",
        "priority",
        "-s",
        "TSE_PRIORITIZER=tests.support.prioritizers.FewestInlinks",
    )
    assert pages == ["index.html", "a.html", "b.html", "f.html", "c.html", "e.html", "d.html"]


@pytest.mark.parametrize("order", ["tse", "bfs", "priority"])
def test_max_pages_is_exact_under_concurrency(tmp_path, serve, order):
    site = generate_site(tmp_path / "site", pages=150, fanout=4, seed=9)
    server = serve(site.root)
    out = tmp_path / "out"
    pages, _ = crawl(server, out, 10, "--order", order, "--max-pages", "50", "-s", "CONCURRENT_REQUESTS=8")
    assert len(pages) == 50
    assert sorted(os.listdir(out), key=lambda n: (not n.isdigit(), int(n) if n.isdigit() else 0)) == [
        str(i) for i in range(1, 51)
    ] + [".crawler"]
