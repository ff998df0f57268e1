"""revP's finds in what a crawl reads beyond links and what it keeps of it, each confirmed on the code
before its mend: a redirect answered to a retried request (a 503, then a 302) left the prefixes, fetched
and saved; a link or a redirect to ``/robots.txt`` saved robots.txt as a page, out of the prefixes (and
with ``--links tse``, against the reference); a page whose links hold one of 70,000 characters, or a
megabyte of CJK ones, had a crawl record line that ``parse_record`` (and so ``tse report``) refused.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_tse
from tests.support.pages import saved_pages
from tse_scrapy.devtools.siteserver import Rule, SiteServer
from tse_scrapy.rules.files.crawlrecord import MAX_LINE, parse_record


class _BusyThenMoved(SiteServer):
    """A site whose *moved* paths answer 503 the first time they are asked, and 302 to their target after."""

    def __init__(self, root: Path, moved: dict[str, str]):
        super().__init__(root)
        self.moved = moved
        self.answered: set[str] = set()

    def take_rule(self, key: str) -> Rule | None:
        if key not in self.moved:
            return super().take_rule(key)
        if key not in self.answered:
            self.answered.add(key)
            return Rule(status=503)
        return Rule(status=302, location=self.moved[key])


def _site(root: Path, pages: dict[str, str | bytes]) -> Path:
    for name, body in pages.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body if isinstance(body, bytes) else body.encode())
    return root


def _crawl(server: SiteServer, out: Path, seed: str, *options: str, depth: int = 1):
    out.mkdir()
    prefix = f"{server.url}/tse/"
    return run_tse("crawl", prefix + seed, out, depth, "--prefix", prefix, "-s", "DOWNLOAD_DELAY=0", *options)


def test_a_redirect_answered_to_a_retry_does_not_leave_the_prefixes(tmp_path):
    # Scrapy's retry of the 503 has dont_filter, which the redirect's hop inherits: the offsite check let
    # it pass, and /other/x.html, out of the prefix /tse/, was fetched and saved as page 2.
    root = _site(
        tmp_path / "site",
        {
            "tse/index.html": '<html><body><a href="busy.html">busy</a></body></html>',
            "other/x.html": "<html><body>out of the prefix</body></html>",
        },
    )
    server = _BusyThenMoved(root, {"/tse/busy.html": "/other/x.html"}).start()
    try:
        result = _crawl(server, tmp_path / "out", "index.html")
    finally:
        server.stop()
    assert result.returncode == 0, result.stderr
    assert saved_pages(tmp_path / "out") == [(f"{server.url}/tse/index.html", 0)]
    assert [hit.key for hit in server.hits].count("/tse/busy.html") == 2  # the 503, then the 302
    assert "/other/x.html" not in [hit.key for hit in server.hits]
    assert f" 1     Failed: {server.url}/tse/busy.html\n" in result.stdout.decode()
    assert f"failed: {server.url}/tse/busy.html (redirected out of the prefixes)" in result.stderr.decode()


@pytest.mark.parametrize("links", ["html", "tse"])
def test_a_link_or_a_redirect_to_robots_txt_is_no_page(serve, tmp_path, links):
    # robots.txt's URL was let through the prefix test (for its own fetch, which passes on its own): a
    # link to it was "Added" and saved as a page, a redirect to it too, with either scanner.
    root = _site(
        tmp_path / "site",
        {
            "robots.txt": "User-agent: *\nDisallow: /private/\n",
            "tse/index.html": '<html><body><a href="/robots.txt">r</a><a href="moved.html">m</a></body></html>',
            ".redirects": "/tse/moved.html 302 /robots.txt\n",
        },
    )
    server = serve(root)
    result = _crawl(server, tmp_path / "out", "index.html", "--links", links)
    assert result.returncode == 0, result.stderr
    assert saved_pages(tmp_path / "out") == [(f"{server.url}/tse/index.html", 0)]
    progress = result.stdout.decode()
    assert f" 0  IgnExtrn: {server.url}/robots.txt\n" in progress
    assert f" 1     Failed: {server.url}/tse/moved.html\n" in progress
    assert [hit.key for hit in server.hits].count("/robots.txt") == 1  # for its rules, once


def test_every_line_of_a_crawl_record_reads_back_whatever_links_a_page_holds(serve, tmp_path):
    # index.html links a URL of 70,000 characters, cjk.html 700 of 2,000 CJK characters each (1.4 million
    # characters, 8.4 MB as JSON writes them, \\uXXXX): each page's saved line was refused by
    # parse_record, and tse report skipped it (1 page saved of 3, "1 bad line skipped").
    long_link = "/tse/" + "a" * 70_000 + ".html"
    cjk_links = "".join(f'<a href="/tse/{chr(0x4E00 + n) * 2000}.html">c</a>' for n in range(700))
    root = _site(
        tmp_path / "site",
        {
            "tse/index.html": f'<html><body><a href="{long_link}">l</a><a href="cjk.html">c</a></body></html>',
            "tse/cjk.html": f'<html><body>{cjk_links}<a href="index.html">i</a></body></html>',
        },
    )
    server = serve(root)
    record = tmp_path / "record.jsonl"
    result = _crawl(server, tmp_path / "out", "index.html", "--record", str(record), depth=2)
    assert result.returncode == 0, result.stderr
    lines = record.read_bytes().splitlines()
    assert all(len(line) <= MAX_LINE for line in lines)
    saved = {r.url: r for r in map(parse_record, lines) if r.outcome == "saved"}
    index, cjk = saved[f"{server.url}/tse/index.html"], saved[f"{server.url}/tse/cjk.html"]
    assert (index.doc, cjk.doc) == (1, 2)
    assert index.links == (f"{server.url}/tse/cjk.html",) and index.more_links == 1  # the long one, not listed
    assert 0 < len(cjk.links) < 700 and len(cjk.links) + cjk.more_links == 701
    assert cjk.links[0] == f"{server.url}/tse/{chr(0x4E00) * 2000}.html"
