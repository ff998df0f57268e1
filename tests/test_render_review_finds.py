"""``tse crawl --render``'s review finds (revD), each against real headless Chromium (Debian's) and real
servers on 127.0.0.1 (``serve``: a SiteServer, which sends ``text/html`` without a charset, as python's
http.server does): a page's encoding given to the browser, a huge doctype against the size bound, the
proxy for loopback hosts, the render timeout's bound, a browser that cannot start, an untyped page,
an update's 304 that names another type, and the redirect hops the browser follows.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, clean_env, run_tse
from tests.support.inprocess import tse_here
from tests.test_render import pages_by_url
from tse_scrapy.devtools.siteserver import Rule
from tse_scrapy.rules.files.pagenotes import read_page_notes

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


# A crawl run by this Python in a process of its own, that says its peak memory (ru_maxrss, KB) last on stderr.
# The crawler's own peak: VmHWM, its memory's high-water mark since its exec. Not ru_maxrss, which Linux
# carries over an exec from the process forked (the test's pytest worker: 550 MB in the whole suite).
MEASURED = """
import atexit, sys
def peak():
    with open("/proc/self/status") as status:
        return next(line.split()[1] for line in status if line.startswith("VmHWM:"))
atexit.register(lambda: print("maxrss", peak(), file=sys.stderr))
from tse_scrapy.cli import main
sys.argv[0] = "tse"
sys.exit(main())
"""
HUGE_DOCTYPE = """<!DOCTYPE html><html><head><title>Doctype</title></head><body><p>small body</p><script>
var doctype = document.implementation.createDocumentType("html", "y".repeat(40 * (1 << 20)), "");
document.replaceChild(doctype, document.doctype);
</script></body></html>"""


def test_a_huge_doctype_counts_against_the_size_bound_before_it_is_read(serve, tmp_path):
    """A script makes the doctype's public id 40 MB, the page's element small: the size check measured the
    root element only, so the whole 40 MB came through Playwright's driver into the crawler (a 300 MB one
    crashed the driver) before the second check refused it.  Now the doctype counts in the first check:
    the document is refused unread and the crawler's peak memory stays near a plain crawl's (78 MB seen
    against 240 to 260 MB before)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text(HUGE_DOCTYPE)
    server = serve(site)
    pages = tmp_path / "pages"
    pages.mkdir()
    result = subprocess.run(
        [sys.executable, "-c", MEASURED, "crawl", f"{server.url}/index.html", pages, "0", "--prefix",
         f"{server.url}/", "--render", *BOUNDS, "-s", "DOWNLOAD_MAXSIZE=4000000"],
        capture_output=True, env=clean_env(), cwd=ROOT, timeout=HANG,
    )  # fmt: skip
    stderr = result.stderr.decode()
    assert result.returncode == 0, stderr[-3000:]
    assert "not kept (the rendered document is over DOWNLOAD_MAXSIZE (4000000 bytes))" in stderr, stderr[-3000:]
    assert b"small body" in pages_by_url(pages)["index.html"]  # kept as fetched
    peak_kb = int(stderr.strip().splitlines()[-1].split()[1])
    assert peak_kb < 150_000, peak_kb


def test_a_render_timeout_past_playwrights_timers_is_refused_and_the_most_allowed_renders(serve, tmp_path):
    """``-s TSE_RENDER_TIMEOUT=3000000`` was accepted, and overflowed Playwright's 32-bit millisecond timers:
    every page load was cut at 1 ms and saved unrendered (a TimeoutOverflowWarning on stderr).  Now it is
    refused before the crawl (one line, exit 2); the most allowed, 2147483 s, still renders a page."""
    pages = tmp_path / "refused"
    pages.mkdir()
    result = tse_here("crawl", "http://127.0.0.1:9/index.html", pages, "0", "--prefix", "http://127.0.0.1:9/",
                      "--render", "-s", "TSE_RENDER_TIMEOUT=3000000")  # fmt: skip
    lines = result.stderr.decode().splitlines()
    assert result.returncode == 2, lines
    assert lines == ["tse crawl: -s TSE_RENDER_TIMEOUT must be at most 2147483 seconds: 3000000"], lines
    assert list(pages.iterdir()) == []
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text(
        "<html><body><p id=p>static</p><script>document.getElementById('p').textContent = 'scripted wombat'"
        "</script></body></html>"
    )
    server = serve(site)
    result = crawl(server, tmp_path / "pages", "index.html", 0, "--render", "-s", "TSE_RENDER_TIMEOUT=2147483")
    stderr = result.stderr.decode()
    assert result.returncode == 0, stderr[-3000:]
    assert "TimeoutOverflowWarning" not in stderr and "rendered: 1 (0 cut at the timeout" in stderr, stderr[-3000:]
    assert b'<p id="p">scripted wombat</p>' in pages_by_url(tmp_path / "pages")["index.html"]


def test_a_browser_that_cannot_start_says_so_without_a_deprecation_warning(serve, tmp_path):
    """A program that answers --version as Chromium but does not start as one: the crawl stops with its
    warning, its summary and its one-line error, and nothing else (Scrapy's ScrapyDeprecationWarning for
    ExecutionEngine.close_spider() was two lines more)."""
    fake = tmp_path / "chromium"
    fake.write_text('#!/bin/sh\n[ "$1" = --version ] && echo "Chromium 1.0" && exit 0\nexit 1\n')
    fake.chmod(0o755)
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text('<html><body><a href="a.html">a</a></body></html>')
    (site / "a.html").write_text("<html><body>a</body></html>")
    server = serve(site)
    result = crawl(server, tmp_path / "pages", "index.html", 1, "--render", "-s", f"TSE_CHROMIUM={fake}")
    lines = result.stderr.decode().strip().splitlines()
    assert result.returncode == 1, lines
    assert len(lines) == 3, lines
    assert "WARNING: Cannot start the browser for " in lines[0], lines
    assert lines[1].startswith("tse crawl: 0 pages saved"), lines
    assert lines[2].startswith("tse crawl: --render: the browser cannot start: "), lines


SCRIPTED = "<html><head><title>{0}</title></head><body><p id=p>as sent</p><script>\ndocument.getElementById('p')" \
    ".textContent = 'scripted {0}';\n</script></body></html>"  # fmt: skip


def test_a_page_without_a_type_that_the_crawl_takes_for_html_is_rendered(serve, tmp_path):
    """An answer with an empty Content-Type, or application/octet-stream, whose bytes are HTML's: the crawl
    keeps it as an HTML page (sniffed), but it was never rendered (only a text/html header was), and
    nothing said so.  Now it is rendered, handed to the browser as text/html; a binary answer is not."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text(
        '<html><body><a href="untyped.html">u</a> <a href="octet">b</a> <a href="blob">x</a></body></html>'
    )
    (site / "octet").write_text(SCRIPTED.format("octet"))  # no extension: served as application/octet-stream
    (site / "blob").write_bytes(b"\x00\x01\x02binary")
    server = serve(site)
    server.rules["/untyped.html"] = Rule(body=SCRIPTED.format("untyped").encode(), headers={"Content-Type": ""})
    result = crawl(server, tmp_path / "pages", "index.html", 1, "--render")
    stderr = result.stderr.decode()
    assert result.returncode == 0, stderr[-3000:]
    pages = pages_by_url(tmp_path / "pages")
    assert sorted(pages) == ["index.html", "octet", "untyped.html"], pages.keys()
    # (the script's own text holds the words too: the paragraph's is what rendering wrote)
    assert b'<p id="p">scripted untyped</p>' in pages["untyped.html"], pages["untyped.html"]
    assert b'<p id="p">scripted octet</p>' in pages["octet"], pages["octet"]
    assert "rendered: 3 (0 cut at the timeout, 0 crashed, 0 failed" in stderr, stderr[-3000:]


def test_an_update_304_naming_another_type_keeps_the_saved_pages_type_and_charset(serve, tmp_path):
    """An --update's 304 whose headers say ``application/pdf`` (or drop the charset): the saved copy was
    replayed with the 304's headers, so a saved HTML page became a "PDF" (noted so, read as one by the
    indexer), and a Latin-1 page lost its charset.  Now the saved copy keeps the type and charset it was
    saved with."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text('<html><body><a href="page.html">p</a> <a href="latin.html">l</a></body></html>')
    (site / "page.html").write_text("<html><body><p>plain html aardvark</p></body></html>")
    (site / "latin.html").write_bytes("<html><body><p>café crème</p></body></html>".encode("latin-1"))
    server = serve(site)
    server.rules["/latin.html"] = Rule(headers={"Content-Type": "text/html; charset=iso-8859-1"})
    pages = tmp_path / "pages"
    first = crawl(server, pages, "index.html", 1, "--validators")
    assert first.returncode == 0, first.stderr.decode()[-3000:]
    page_url, latin_url = f"{server.url}/page.html", f"{server.url}/latin.html"
    before = read_page_notes(pages)
    assert before.charset(latin_url) == "cp1252" and page_url not in before.pdfs  # (w3lib's name for it)
    saved = {path.name: path.read_bytes() for path in pages.iterdir() if path.name.isdigit()}
    server.rules["/page.html"] = Rule(headers={"Content-Type": "application/pdf"})
    server.rules["/latin.html"] = Rule(headers={"Content-Type": "text/html"})
    del server.hits[:]
    update = run_tse(
        "crawl", f"{server.url}/index.html", pages, "1", "--prefix", f"{server.url}/", *BOUNDS, "--update",
        timeout=HANG,
    )  # fmt: skip
    assert update.returncode == 0, update.stderr.decode()[-3000:]
    assert sorted(hit.key for hit in server.hits if hit.status == 304) == ["/index.html", "/latin.html", "/page.html"]
    after = read_page_notes(pages)
    assert page_url not in after.pdfs, "the saved HTML page was taken for a PDF"
    assert after.charset(latin_url) == "cp1252"
    assert {path.name: path.read_bytes() for path in pages.iterdir() if path.name.isdigit()} == saved


def test_the_redirect_hops_the_browser_follows_are_counted_as_browser_requests(serve, tmp_path):
    """A script fetches a URL that redirects twice: the browser makes three requests, each one of the page
    load's TSE_RENDER_MAX_REQUESTS (docs/crawling.md), but the summary's "N browser requests" counted
    the first only."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text(
        "<html><body><p id=p>waiting</p><script>\nfetch('/first').then(r => r.json()).then(data => "
        "{ document.getElementById('p').textContent = data.word; });\n</script></body></html>"
    )
    (site / "data.json").write_text('{"word": "redirected pangolin"}')
    server = serve(site)
    server.rules["/first"] = Rule(location="/second")
    server.rules["/second"] = Rule(location="/data.json")
    result = crawl(server, tmp_path / "pages", "index.html", 0, "--render")
    stderr = result.stderr.decode()
    assert result.returncode == 0, stderr[-3000:]
    assert b'<p id="p">redirected pangolin</p>' in pages_by_url(tmp_path / "pages")["index.html"]
    browser = [hit.key for hit in server.hits if hit.key in ("/first", "/second", "/data.json")]
    assert browser == ["/first", "/second", "/data.json"], browser
    assert "rendered: 1 (0 cut at the timeout, 0 crashed, 0 failed; 3 browser requests," in stderr, stderr[-3000:]


@pytest.mark.parametrize("no_proxy", ["", "127.0.0.1"], ids=["proxied", "no_proxy"])
def test_behind_a_proxy_a_loopback_pages_own_requests_go_through_it(serve, tmp_path, no_proxy):
    """docs/crawling.md says the browser's requests go through the crawl's proxy, loopback hosts included,
    as the plain crawl's do; but Chromium never hands a loopback URL to a PAC script (its implicit bypass
    comes first; ``--proxy-bypass-list=<-loopback>`` holds for fixed proxy rules only), so a page on
    127.0.0.1 came through the proxy (fetched by Scrapy) while its script's JSON went straight to the
    site.  Now each page load's context has the proxy as fixed rules, loopback included; with
    ``no_proxy=127.0.0.1`` neither goes through it."""
    site = tmp_path / "site"
    site.mkdir()
    page = (
        "<html><body><p id=p>waiting</p><script>\nfetch('/data.json').then(r => r.json()).then(data => "
        "{ document.getElementById('p').textContent = data.word; });\n</script></body></html>"
    )
    (site / "index.html").write_text(page)
    (site / "data.json").write_text('{"word": "direct okapi"}')
    origin = serve(site)
    mirror = tmp_path / "mirror" / f"127.0.0.1:{origin.port}"  # the proxy answers DIR/host/path
    mirror.mkdir(parents=True)
    (mirror / "index.html").write_text(page)
    (mirror / "data.json").write_text('{"word": "proxied okapi"}')
    proxy = serve(tmp_path / "mirror")
    env = clean_env(http_proxy=proxy.url, no_proxy=no_proxy)
    result = crawl(origin, tmp_path / "pages", "index.html", 0, "--render", env=env)
    stderr = result.stderr.decode()
    assert result.returncode == 0, stderr[-3000:]
    paths = ["/robots.txt", "/index.html", "/data.json"]
    site_host = f"127.0.0.1:{origin.port}"
    if no_proxy:
        assert b'<p id="p">direct okapi</p>' in pages_by_url(tmp_path / "pages")["index.html"]
        assert proxy.hits == [] and [hit.key for hit in origin.hits] == paths
    else:
        assert b'<p id="p">proxied okapi</p>' in pages_by_url(tmp_path / "pages")["index.html"]
        assert [hit.key for hit in proxy.hits] == [site_host + path for path in paths], proxy.hits
        assert origin.hits == []  # nothing went around the proxy


def test_a_robots_meta_a_script_removes_is_obeyed_as_served(serve, tmp_path):
    """A page served with ``<meta name="robots" content="noindex, nofollow">`` whose script removes it:
    the rendered page no longer said it, so the page was noted as an answer and the page behind it saved.
    Search engines obey the HTML served; so does the crawl now: noted noindex, its link not followed."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text('<html><body><a href="hidden.html">hidden</a></body></html>')
    (site / "hidden.html").write_text(
        '<html><head><meta name="robots" content="noindex, nofollow">'
        '<script>document.querySelector("meta[name=robots]").remove()</script></head>'
        '<body><p>secret words</p><a href="behind.html">behind</a></body></html>'
    )
    (site / "behind.html").write_text("<html><body><p>behind the hidden page</p></body></html>")
    server = serve(site)
    result = crawl(server, tmp_path / "pages", "index.html", 2, "--render")
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    pages = pages_by_url(tmp_path / "pages")
    assert sorted(pages) == ["hidden.html", "index.html"], pages.keys()
    assert b"secret words" in pages["hidden.html"] and b'name="robots"' not in pages["hidden.html"]  # rendered
    assert read_page_notes(tmp_path / "pages").noindex == {f"{server.url}/hidden.html"}
