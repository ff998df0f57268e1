"""--sitemaps end to end: a real nginx serves robots.txt (a Sitemap: line), a sitemap index, a gzipped
sitemap, a plain one with entities and whitespace, a gzip bomb, an endless index chain and URLs outside
the prefix; the pages only the sitemaps name are crawled from depth 0, the rest is cut and counted.
Also: PREFIX/sitemap.xml when robots.txt names none, lastmod in the catalog and in --update's order,
--resume and a distributed crawl (--redis)."""

from __future__ import annotations

import functools
import gzip
import json
import re
import shutil
import sqlite3
import zlib
from pathlib import Path

import pytest

from tests.conftest import run_tse
from tests.support.sitecrawl import interrupted_crawl

PAGE = "<html><head><title>{title}</title></head><body><p>{title}</p>{links}</body></html>"
SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def page(directory: Path, name: str, title: str, links: tuple[str, ...] = ()) -> None:
    anchors = "".join(f'<a href="{link}">{link}</a> ' for link in links)
    (directory / name).write_text(PAGE.format(title=title, links=anchors))


def urlset(*entries: tuple[str, str | None]) -> str:
    rows = "".join(
        f"<url>\n  <loc>\n    {loc}\n  </loc>{f'<lastmod>{lastmod}</lastmod>' if lastmod else ''}</url>\n"
        for loc, lastmod in entries
    )
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{SITEMAP_NS}">\n{rows}</urlset>\n'


def sitemap_index(*locs: str) -> str:
    rows = "".join(f"<sm:sitemap><sm:loc>{loc}</sm:loc></sm:sitemap>" for loc in locs)
    return f'<?xml version="1.0"?><sm:sitemapindex xmlns:sm="{SITEMAP_NS}">{rows}</sm:sitemapindex>'


@functools.cache
def gzip_bomb(size: int = 64 * 1024 * 1024) -> bytes:
    """A gzip stream of *size* bytes of a urlset's spaces, compressed about 1,000 to 1 (0.3 s of CPU:
    made once, for every site that serves it)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    chunk = b" " * (1024 * 1024)
    parts = [compressor.compress(f'<urlset xmlns="{SITEMAP_NS}">'.encode())]
    parts += [compressor.compress(chunk) for _ in range(size // len(chunk))]
    return b"".join(parts) + compressor.flush()


def serve_site(nginx, tmp_path: Path, robots_names_sitemaps: bool = True):
    """The site under /docs/ (only index.html -> a.html by links), its sitemaps at the root."""
    root = tmp_path / "site"
    docs = root / "docs"
    docs.mkdir(parents=True)
    server = nginx(tmp_path / "hosts", origin=root)
    base = f"{server.url}/docs"
    page(docs, "index.html", "Home page", ("a.html",))
    page(docs, "a.html", "Linked alpha")
    for name, title in [("b.html", "Sitemap bravo"), ("c.html", "Gzipped charlie"), ("d.html", "Query delta")]:
        page(docs, name, title)
    page(docs, "denied.html", "Denied echo")
    page(root, "outside.html", "Outside foxtrot")
    if robots_names_sitemaps:
        (root / "robots.txt").write_text(f"User-agent: *\nAllow: /\n\nSitemap: {server.url}/sitemap-index.xml\n")
        (root / "sitemap-index.xml").write_text(
            sitemap_index(
                f"{server.url}/plain.xml",
                f"{server.url}/pages.xml.gz",
                f"{server.url}/bomb.xml.gz",
                f"{server.url}/chain-1.xml",
                f"{server.url}/sitemap-index.xml",  # itself: read once
                f"{server.url}/missing.xml",  # named, and 404: a fault, said (it was silent: a tester's find)
                "http://elsewhere.invalid/sitemap.xml",  # another host's: never fetched
            )
        )
        (root / "plain.xml").write_text(
            urlset(
                (f"{base}/b.html", "2024-05-01T10:00:00+02:00"),
                (f"{base}/d.html?x=1&amp;y=2", None),  # an entity in a URL
                (f"{server.url}/outside.html", None),  # outside the prefix: counted, ignored
                (f"{base}/denied.html", None),  # refused by --deny
                ("http://elsewhere.invalid/docs/x.html", None),
            )
        )
        (root / "pages.xml.gz").write_bytes(gzip.compress(urlset((f"{base}/c.html", "2024-06-01")).encode()))
        (root / "bomb.xml.gz").write_bytes(gzip_bomb())
        for level in range(1, 6):  # an index chain deeper than the bound
            (root / f"chain-{level}.xml").write_text(sitemap_index(f"{server.url}/chain-{level + 1}.xml"))
        (root / "chain-6.xml").write_text(urlset((f"{base}/never.html", None)))
    else:
        (root / "robots.txt").write_text("User-agent: *\nAllow: /\n")
        (docs / "sitemap.xml").write_text(urlset((f"{base}/b.html", None)))
    return server, base


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """The site with its sitemaps (serve_site), served by one nginx for the module's tests, and its crawl
    with --sitemaps and --validators, made once: (the site's root, its base URL, that crawl's page
    directory, the crawl's result).  The tests read the site; the one that changes it puts it back."""
    from tests.support.nginxserver import NginxServer, nginx_binary

    if nginx_binary() is None:
        pytest.skip("nginx is not installed: run make nginx as root (make test does)")
    tmp = tmp_path_factory.mktemp("sitemaps")
    servers = []

    def start(root, **options):
        servers.append(NginxServer(root, tmp_path_factory.mktemp("nginx"), **options).start())
        return servers[-1]

    try:
        _, base = serve_site(start, tmp)
        pages = tmp / "pages"
        done = crawl(base, pages, "--validators")
        yield tmp / "site", base, pages, done
    finally:
        for server in servers:
            server.stop()


def crawl(base: str, pages: Path, *options: str):
    pages.mkdir(exist_ok=True)
    args = ("crawl", f"{base}/index.html", pages, 1, "--prefix", f"{base}/", "-s", "DOWNLOAD_DELAY=0")
    return run_tse(*args, "--sitemaps", "--deny", "denied", *options)


def saved_urls(pages: Path) -> dict[str, int]:
    found = {}
    for path in pages.iterdir():
        if path.name.isdigit():
            found[path.read_bytes().split(b"\n", 1)[0].decode()] = int(path.name)
    return found


def test_the_pages_only_sitemaps_name_are_crawled_and_the_hostile_ones_are_cut(shared):
    _, base, pages, done = shared
    stderr = done.stderr.decode()
    assert done.returncode == 0, stderr[-2000:]
    urls = saved_urls(pages)
    assert set(urls) == {f"{base}/{name}" for name in ("index.html", "a.html", "b.html", "c.html", "d.html?x=1&y=2")}
    # The depth of the pages the sitemaps name is 0, as a seed's.
    for name in ("b.html", "c.html"):
        assert (pages / str(urls[f"{base}/{name}"])).read_bytes().split(b"\n")[1] == b"0"
    # Cut and counted: the bomb (too large), the chain (too deep); told in the summary line.
    # (64 MB of spaces, past the 50 MB bound: libxml2 refuses a text node that big before it is reached)
    assert re.search(r"bomb\.xml\.gz: (too large|bad XML)", stderr)
    assert "nested more than 3 deep" in stderr
    assert re.search(r"WARNING: Sitemap http://\S+/missing\.xml: http 404", stderr), stderr[-1500:]
    assert "sitemaps: 6 read, 3 cut, 3 URLs taken, 3 ignored" in stderr, stderr[-1500:]
    # lastmod is kept in the catalog, in UTC.
    catalog = sqlite3.connect(pages / ".tse-pages.sqlite")
    records = {json.loads(r)["url"]: json.loads(r) for (r,) in catalog.execute("SELECT record FROM pages")}
    assert records[f"{base}/b.html"]["lastmod"] == "2024-05-01T08:00:00Z"
    assert records[f"{base}/c.html"]["lastmod"] == "2024-06-01T00:00:00Z"
    assert records[f"{base}/a.html"]["lastmod"] is None
    catalog.close()  # (the crawl is the module's: test_an_update_fetches_first_what_the_sitemap_says_changed copies it)


# Sitemaps' URLs are bounded in number and in characters (TSE_SITEMAP_PAGES, TSE_SITEMAP_CHARACTERS), and
# a URL of 2,048 characters or more is none (sitemaps.org's bound): 2.2 MB of gzipped sitemaps of
# 8,000-character URLs made 3 GB of crawl state (a tester's find).
def test_the_sitemaps_urls_are_bounded_in_number_and_characters(nginx, tmp_path):
    _, base = serve_site(nginx, tmp_path, robots_names_sitemaps=False)
    docs = tmp_path / "site" / "docs"
    names = [f"p{number}.html" for number in range(6)]
    for name in names:
        page(docs, name, f"Listed {name}")
    longest = f"{base}/{'l' * (2047 - len(base) - 1)}"  # 2,047 characters: taken (and a 404)
    too_long = longest + "x"
    (docs / "sitemap.xml").write_text(
        urlset(*[(url, None) for url in (too_long, longest, *[f"{base}/{n}" for n in names])])
    )
    room = len(longest) + 3 * len(f"{base}/p0.html")  # the longest and three pages
    for option, taken in (("TSE_SITEMAP_CHARACTERS", room), ("TSE_SITEMAP_PAGES", 4)):
        pages = tmp_path / f"pages-{option}"
        done = crawl(base, pages, "-s", f"{option}={taken}")
        stderr = done.stderr.decode()
        assert done.returncode == 0, stderr[-2000:]
        expected = {f"{base}/{name}" for name in ("index.html", "a.html", *names[:3])}
        assert set(saved_urls(pages)) == expected, stderr[-3000:]
        said = "characters of page URLs" if option == "TSE_SITEMAP_CHARACTERS" else "page URLs"
        assert re.search(rf"WARNING: Sitemap \S+/sitemap\.xml: more than {taken} {said} in the sitemaps", stderr)
        assert "sitemaps: 1 read, 1 cut, 4 URLs taken" in stderr, stderr[-1500:]


def test_without_a_sitemap_line_prefix_sitemap_xml_is_read(nginx, tmp_path):
    _, base = serve_site(nginx, tmp_path, robots_names_sitemaps=False)
    pages = tmp_path / "pages"
    done = crawl(base, pages)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert set(saved_urls(pages)) == {f"{base}/index.html", f"{base}/a.html", f"{base}/b.html"}


@pytest.mark.parametrize("missing", ["a 404", "a soft 404"])
def test_a_missing_prefix_sitemap_xml_is_no_fault(nginx, tmp_path, missing):
    _, base = serve_site(nginx, tmp_path, robots_names_sitemaps=False)
    sitemap = tmp_path / "site" / "docs" / "sitemap.xml"  # looked for, as robots.txt names none
    if missing == "a 404":
        sitemap.unlink()
    else:  # the site's "not found" page sent with a 200 (it was "bad XML", counted cut: a review's find)
        sitemap.write_text("<!DOCTYPE html>\n<html><head><title>Page not found</title></head><body>Sorry</body></html>")
    done = crawl(base, tmp_path / "pages")
    stderr = done.stderr.decode()
    assert done.returncode == 0 and "Sitemap " not in stderr and "sitemaps: 0 read, 0 cut" in stderr, stderr[-1500:]


def test_without_sitemaps_only_linked_pages_are_crawled(shared, tmp_path):
    _, base, _, _ = shared
    pages = tmp_path / "pages"
    pages.mkdir()
    args = ("crawl", f"{base}/index.html", pages, 1, "--prefix", f"{base}/", "-s", "DOWNLOAD_DELAY=0")
    assert run_tse(*args).returncode == 0
    assert set(saved_urls(pages)) == {f"{base}/index.html", f"{base}/a.html"}


def test_an_update_fetches_first_what_the_sitemap_says_changed(shared, tmp_path):
    # From a copy of the module's crawl (--sitemaps --validators), on its site changed, then put back.
    root, base, crawled, first = shared
    assert first.returncode == 0, first.stderr.decode()[-2000:]
    pages = tmp_path / "pages"
    shutil.copytree(crawled, pages)
    before = saved_urls(pages)
    # The sitemap now says c.html changed after this crawl; b.html keeps its old lastmod.
    changed = [root / "pages.xml.gz", root / "docs" / "c.html"]
    kept = {path: path.read_bytes() for path in changed}
    try:
        changed[0].write_bytes(gzip.compress(urlset((f"{base}/c.html", "2999-01-01")).encode()))
        changed[1].write_text(PAGE.format(title="Gzipped charlie changed", links=""))
        prioritizer = "TSE_PRIORITIZER=tse_scrapy.update.prioritizer.ChangeRatePrioritizer"
        done = crawl(base, pages, "--update", "--order", "priority", "-s", prioritizer, "--max-pages", "1")
    finally:
        for path, data in kept.items():
            path.write_bytes(data)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    # One page revisited: the one the sitemap said changed, rewritten under its docID.
    assert b"Gzipped charlie changed" in (pages / str(before[f"{base}/c.html"])).read_bytes()
    assert "1 changed" in done.stderr.decode()


def test_a_resumed_crawl_reads_the_sitemaps_again(shared, tmp_path):
    _, base, _, _ = shared
    pages = tmp_path / "pages"
    pages.mkdir()
    args = ("crawl", f"{base}/index.html", pages, 1, "--prefix", f"{base}/", "--sitemaps", "--deny", "denied")
    # Interrupted (Ctrl-C) once two pages are saved, 0.3 s apart.
    status = interrupted_crawl(args, lambda: len(saved_urls(pages)), 2)
    assert status != 0 and (pages / ".tse-state.sqlite").is_file()
    assert len(saved_urls(pages)) < 5
    done = run_tse(*args, "--resume", "-s", "DOWNLOAD_DELAY=0")
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    urls = saved_urls(pages)
    assert set(urls) == {f"{base}/{name}" for name in ("index.html", "a.html", "b.html", "c.html", "d.html?x=1&y=2")}
    assert sorted(urls.values()) == [1, 2, 3, 4, 5]


def test_a_distributed_crawl_reads_the_sitemaps(shared, tmp_path, redis_url):
    _, base, _, _ = shared
    pages = tmp_path / "pages"
    done = crawl(base, pages, "--redis", redis_url)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert set(saved_urls(pages)) == {
        f"{base}/{name}" for name in ("index.html", "a.html", "b.html", "c.html", "d.html?x=1&y=2")
    }
