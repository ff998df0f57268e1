"""``tse crawl --render``'s review finds (revD), each against real headless Chromium (Debian's) and real
servers on 127.0.0.1 (``serve``: a SiteServer, which sends ``text/html`` without a charset, as python's
http.server does): a page's encoding given to the browser, a huge doctype against the size bound, the
proxy for loopback hosts, the render timeout's bound, a browser that cannot start, an untyped page,
an update's 304 that names another type, and the redirect hops the browser follows.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import run_tse
from tests.test_render import pages_by_url

CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (make test installs it)")

BOUNDS = ("-s", "TSE_RENDER_TIMEOUT=4", "-s", "DOWNLOAD_DELAY=0", "-s", "TSE_RENDER_RECYCLE=0")
HANG = 240  # generous: the crawls here take seconds


def crawl(server, pages: Path, seed: str, depth: int, *options: str, env=None):
    """``tse crawl`` of *server*'s site from *seed* into *pages* (made), without delay."""
    pages.mkdir()
    return run_tse(
        "crawl", f"{server.url}/{seed}", pages, str(depth), "--prefix", f"{server.url}/", *BOUNDS, *options,
        env=env, timeout=HANG,
    )  # fmt: skip


def test_a_page_without_a_charset_renders_in_the_encoding_the_crawl_reads_it_in(serve, tmp_path):
    """A UTF-8 page served as a bare ``text/html`` (no charset, no <meta charset>): the plain crawl reads
    it as UTF-8 (detection); the browser was given the header as it was and read windows-1252, so the
    rendered page's words were garbled and its link to café.html went to cafÃ©.html (a page lost)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_bytes(
        "<html><head><title>Crème brûlée</title></head><body><p>Naïve café señor</p>"
        '<a href="café.html">the café</a></body></html>'.encode()
    )
    (site / "café.html").write_bytes("<html><body><p>Ŝtupo déjà vu</p></body></html>".encode())
    server = serve(site)
    plain = crawl(server, tmp_path / "plain", "index.html", 1)
    rendered = crawl(server, tmp_path / "rendered", "index.html", 1, "--render")
    assert plain.returncode == 0 and rendered.returncode == 0, rendered.stderr.decode()[-3000:]
    plain_pages, rendered_pages = pages_by_url(tmp_path / "plain"), pages_by_url(tmp_path / "rendered")
    assert sorted(rendered_pages) == sorted(plain_pages) == ["caf%C3%A9.html", "index.html"], rendered_pages.keys()
    index = rendered_pages["index.html"].decode("utf-8-sig")
    assert "Crème brûlée" in index and "Naïve café señor" in index, index
    assert "Ŝtupo déjà vu" in rendered_pages["caf%C3%A9.html"].decode("utf-8-sig")
