"""Known faults of the crawler, mended: each crawled from a real server on 127.0.0.1."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

import pytest

from tests.conftest import BIN, ROOT, clean_env, crawl_site, site_crawl_args
from tests.support.inprocess import tse_here
from tests.support.pages import saved_pages
from tse_scrapy.devtools.siteserver import Rule
from tse_scrapy.rules.crawling.progress import progress_line


def _record(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _failed_lines(result) -> list[str]:
    return [line for line in result.stderr.decode().splitlines() if line.startswith("tse crawl: failed: ")]


# A URL is crawled to 2,083 characters (TSE_MAX_URL_LENGTH), the bound `tse import` skips records past: the
# crawl kept no bound (Scrapy's UrlLengthMiddleware is off), and wrote page files and archive records at URLs
# the import of its own archive skipped.
URL_BOUND = 2083


def test_a_url_over_the_bound_is_not_crawled_and_the_import_of_the_crawl_skips_nothing(tmp_path, serve):
    root = tmp_path / "site"
    root.mkdir()
    server = serve(root)
    base = f"{server.url}/"
    # Paths that make URLs of exactly the bound, and one character over it.
    kept = "k.html?q=" + "k" * (URL_BOUND - len(base) - len("k.html?q="))
    over = "o.html?q=" + "o" * (URL_BOUND + 1 - len(base) - len("o.html?q="))
    assert (len(base + kept), len(base + over)) == (URL_BOUND, URL_BOUND + 1)
    (root / "index.html").write_text(f'<a href="{kept}">k</a> <a href="{over}">o</a> <a href="r.html">r</a>')
    (root / "k.html").write_text("<p>kept</p>")
    (root / "o.html").write_text("<p>over</p>")
    (root / "r.html").write_text("<p>r</p>")
    server.rules["/r.html"] = Rule(status=302, location=f"/{over}&r")
    out, record, warc = tmp_path / "out", tmp_path / "r.jsonl", tmp_path / "c.warc.gz"
    out.mkdir()
    result = crawl_site(server, out, 1, "--record", record, "--warc", warc)
    assert result.returncode == 0, result.stderr.decode()
    log = result.stdout.decode()
    assert progress_line(0, "Found", base + kept) + progress_line(0, "Added", base + kept) in log
    # The link over it is logged and counted as a denied link is, and never asked for.
    assert progress_line(0, "Found", base + over) + progress_line(0, "IgnDeny", base + over) in log
    asked = [hit.target for hit in server.hits]
    assert f"/{kept}" in asked and not any(target.startswith("/o.html") for target in asked), asked
    assert "1 failed, 1 link ignored (0 external, 0 duplicate, 1 denied)" in result.stderr.decode()
    # The redirect to a URL over it fails, said as what it is (it was said "redirected out of the prefixes").
    assert _failed_lines(result) == [f"tse crawl: failed: {base}r.html (redirected to a URL over 2,083 characters)"]
    failed = [line for line in _record(record) if line["outcome"] == "failed"]
    expected = [(f"{base}{over}&r", "URL too long", None)]  # never sent
    assert [(line["url"], line["failure"], line["start"]) for line in failed] == expected
    pages = saved_pages(out)
    assert sorted(url for url, _ in pages) == sorted([base + "index.html", base + kept])
    assert max(len(url) for url, _ in pages) == URL_BOUND
    # `tse import` of the crawl's own archive takes every page it saved, and skips no record for its URL.
    imported = tmp_path / "imported"
    imported.mkdir()
    done = tse_here("import", warc, imported)
    assert done.returncode == 0, done.stderr.decode()
    assert "skipped" not in done.stderr.decode(), done.stderr.decode()
    assert sorted(url for url, _ in saved_pages(imported)) == sorted(url for url, _ in pages)


# Runs a command and says on stdout the most memory it held, in KB: a process started by this small one,
# not by the test's (a child's peak resident size counts the memory of the process it was forked from).
_PEAK = (
    "import resource, subprocess, sys; done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL); "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(done.returncode)"
)


def _crawl_memory(server, out, *options) -> tuple[int, str, float]:
    """``tse crawl`` of *server*'s index.html to depth 0 in a process of its own: its exit status, its
    stderr, and the most memory it held (MB)."""
    out.mkdir()
    command = [str(BIN / "tse"), *map(str, site_crawl_args(server, out, 0)), *options]
    done = subprocess.run([sys.executable, "-c", _PEAK, *command], capture_output=True, env=clean_env(), cwd=ROOT)
    return done.returncode, done.stderr.decode(), int(done.stdout) / 1024


# A response's status line and headers are bounded (TSE_MAX_HEADER_BYTES, 1 MB), as its body is by
# DOWNLOAD_MAXSIZE: a server sending 60,000 header lines of 10 KB took the crawl to 754 MB.
def test_a_response_past_the_header_bound_fails_and_its_headers_are_not_held(tmp_path, serve):
    root = tmp_path / "site"
    root.mkdir()
    (root / "index.html").write_text("<p>a page</p>")
    server = serve(root)
    # The same crawl of a page with its usual headers: the memory a crawl holds here anyway.
    status, stderr, plain = _crawl_memory(server, tmp_path / "plain")
    assert status == 0 and "1 page saved" in stderr, stderr
    server.hits.clear()
    # 80 MB of header lines of 10 KB each (Twisted's parser refuses a line over 16 KB).
    server.rules["/index.html"] = Rule(headers={f"X-Pad-{i}": "p" * 10_000 for i in range(8_000)})
    record = tmp_path / "r.jsonl"
    status, stderr, held = _crawl_memory(server, tmp_path / "out", "--record", record)
    assert status == 0, stderr
    assert held < plain + 40, (held, plain)  # (it held the 80 MB, and Scrapy's copy of them: 139 MB in all)
    # A download error, said as what it is, and not tried again: the same answer would come.
    assert "the seed URL could not be fetched (headers larger than TSE_MAX_HEADER_BYTES)" in stderr, stderr
    assert [hit.key for hit in server.hits] == ["/robots.txt", "/index.html"]
    (line,) = [line for line in _record(record) if line["url"].endswith("/index.html")]
    assert (line["outcome"], line["status"], line["failure"]) == (
        "failed",
        None,
        "headers larger than TSE_MAX_HEADER_BYTES",
    )
    assert saved_pages(tmp_path / "out") == []


# Each failure said as what it is, in the summary's lines and in the record: a redirect past
# REDIRECT_MAX_TIMES was said "ignored", one to a port past 65535 "ValueError", one to a PDF in the
# prefixes (without --pdf) and one to a URL --deny refuses "redirected out of the prefixes".
def test_redirects_not_followed_are_said_as_what_they_are(tmp_path, serve):
    root = tmp_path / "site"
    root.mkdir()
    names = ["loop0.html", "badport.html", "topdf.html", "todenied.html", "tooff.html", "ok.html"]
    (root / "index.html").write_text("".join(f'<a href="{name}">{name}</a>' for name in names))
    for name in ("ok.html", "secret.html"):
        (root / name).write_text("<p>a page</p>")
    (root / "doc.pdf").write_bytes(b"%PDF-1.4\n%%EOF\n")
    server = serve(root)
    for hop in range(4):
        server.rules[f"/loop{hop}.html"] = Rule(status=302, location=f"/loop{hop + 1}.html")
    server.rules["/badport.html"] = Rule(status=302, location=f"{server.url.rsplit(':', 1)[0]}:99999/x.html")
    server.rules["/topdf.html"] = Rule(status=302, location="/doc.pdf")
    server.rules["/todenied.html"] = Rule(status=301, location="/secret.html")
    server.rules["/tooff.html"] = Rule(status=302, location="http://localhost:1/off.html")
    out, record = tmp_path / "out", tmp_path / "r.jsonl"
    out.mkdir()
    options = ("-s", "REDIRECT_MAX_TIMES=2", "--deny", "secret", "--record", record)
    result = crawl_site(server, out, 1, *options)
    assert result.returncode == 0, result.stderr.decode()
    base = server.url
    assert sorted(_failed_lines(result)) == [
        f"tse crawl: failed: {base}/badport.html (redirected to an invalid URL)",
        f"tse crawl: failed: {base}/loop0.html (too many redirects: more than 2)",
        f"tse crawl: failed: {base}/todenied.html (refused by --allow, --deny or --deny-ext)",
        f"tse crawl: failed: {base}/tooff.html (redirected out of the prefixes)",
        f"tse crawl: failed: {base}/topdf.html (redirected to a .pdf URL, not a page without --pdf)",
    ]
    failed = {line["url"]: (line["status"], line["failure"]) for line in _record(record) if line["outcome"] == "failed"}
    assert failed == {
        f"{base}/badport.html": (302, "invalid redirect"),
        f"{base}/loop2.html": (302, "too many redirects"),
        f"{base}/secret.html": (None, "denied"),
        "http://localhost:1/off.html": (None, "offsite"),
        f"{base}/doc.pdf": (None, "not a page: a .pdf URL, without --pdf"),
    }
    asked = {hit.key for hit in server.hits}
    assert not asked & {"/doc.pdf", "/secret.html", "/loop3.html"}, asked
    # Only the redirect off the site is counted as a link ignored (as Scrapy counts it): the others were
    # counted as external links too.
    assert "5 failed, 1 link ignored (1 external, 0 duplicate, 0 denied)" in result.stderr.decode()


@pytest.mark.parametrize("links", ["html", "tse"])
def test_a_redirect_whose_location_holds_dot_segments_is_under_robots_txt(tmp_path, serve, links):
    """An absolute Location with dot segments ("/d/ok/../no.html") was fetched as written, and robots.txt
    matches the path as requested: a page its "Disallow: /d/no" forbids was fetched and saved (a
    review's find).  The hop is asked with its dot segments removed, as a link naming it is."""
    root = tmp_path / "site"
    (root / "d").mkdir(parents=True)
    (root / "robots.txt").write_text("User-agent: *\nDisallow: /d/no\n")
    (root / "d" / "index.html").write_text('<a href="r.html">r</a> <a href="yes.html">y</a>')
    (root / "d" / "no.html").write_text("<p>secret words</p>")
    (root / "d" / "yes.html").write_text("<p>a page</p>")
    server = serve(root)
    server.rules["/d/r.html"] = Rule(status=302, location=f"{server.url}/d/ok/../no.html")
    server.rules["/d/yes.html"] = Rule(status=302, location=f"{server.url}/d/./ok/%2e%2e/yes2.html")
    (root / "d" / "yes2.html").write_text("<p>another page</p>")
    out = tmp_path / "out"
    out.mkdir()
    result = crawl_site(server, out, 1, "--links", links, seed="d/index.html")
    assert result.returncode == 0, result.stderr.decode()
    asked = [hit.key for hit in server.hits]
    assert not any("no.html" in key for key in asked), asked
    assert f"tse crawl: failed: {server.url}/d/r.html (robots.txt forbids it)" in _failed_lines(result)
    saved = [url.removeprefix(server.url) for url, _ in saved_pages(out)]
    assert saved == ["/d/index.html", "/d/yes2.html"], saved  # a hop's dot segments removed, fetched


@pytest.mark.parametrize("links", ["html", "tse"])
def test_a_robots_txt_redirected_to_another_path_is_read_there(tmp_path, serve, links):
    """A robots.txt that redirects (RFC 9309: followed, at least five hops, across authorities) to a path
    other than /robots.txt: the hop was refused as no page under the prefix, the robots.txt left
    unread, and the whole host crawled, its disallowed pages too (a review's find)."""
    root = tmp_path / "site"
    (root / "d").mkdir(parents=True)
    (root / "rules").mkdir()
    (root / "rules" / "main.txt").write_text("User-agent: *\nDisallow: /d/no\n")
    (root / "d" / "index.html").write_text('<a href="no.html">n</a> <a href="yes.html">y</a>')
    (root / "d" / "no.html").write_text("<p>secret words</p>")
    (root / "d" / "yes.html").write_text("<p>a page</p>")
    server = serve(root)
    server.rules["/robots.txt"] = Rule(status=301, location="/rules/main.txt")
    out = tmp_path / "out"
    out.mkdir()
    result = crawl_site(server, out, 1, "--links", links, "--prefix", f"{server.url}/d/", seed="d/index.html")
    assert result.returncode == 0, result.stderr.decode()
    asked = [hit.key for hit in server.hits]
    assert asked[:2] == ["/robots.txt", "/rules/main.txt"] and "/d/no.html" not in asked, asked
    assert [url.removeprefix(server.url) for url, _ in saved_pages(out)] == ["/d/index.html", "/d/yes.html"]
    assert f"tse crawl: failed: {server.url}/d/no.html (robots.txt forbids it)" in _failed_lines(result)


# A robots.txt larger than DOWNLOAD_MAXSIZE, as sent or once decompressed, keeps the crawl out of its
# host (as one that cannot be read), said in one line: each page it refused was said "larger than
# DOWNLOAD_MAXSIZE", as if the page were, and Scrapy's log said it twice more, naming a page.
@pytest.mark.parametrize("gzipped", [False, True])
def test_a_robots_txt_over_the_size_bound_is_said_once_as_what_it_is(tmp_path, serve, gzipped):
    root = tmp_path / "site"
    root.mkdir()
    for name in "abc":
        (root / f"{name}.html").write_text("<p>a page</p>")
    server = serve(root)
    robots = b"User-agent: *\nDisallow: /private/\n" + b"# a comment\n" * 400
    headers = {"Content-Encoding": "gzip"} if gzipped else {}
    server.rules["/robots.txt"] = Rule(body=gzip.compress(robots) if gzipped else robots, headers=headers)
    out = tmp_path / "out"
    out.mkdir()
    seeds = ",".join(f"{server.url}/{name}.html" for name in "abc")
    result = crawl_site(server, out, 0, "-s", "DOWNLOAD_MAXSIZE=4000", seed=seeds.removeprefix(f"{server.url}/"))
    assert result.returncode == 0, result.stderr.decode()
    lines = result.stderr.decode().splitlines()
    logged = [line for line in lines if not line.startswith("tse crawl: ")]
    assert [line.split("] ", 1)[-1] for line in logged] == [
        f"WARNING: robots.txt of {server.url.removeprefix('http://')} is larger than DOWNLOAD_MAXSIZE (4000 bytes): "
        "disallow all"
    ], logged
    told = ", ".join(f"{server.url}/{name}.html (robots.txt larger than DOWNLOAD_MAXSIZE)" for name in "acb")
    assert lines[-1] == f"tse crawl: 3 of 3 seed URLs could not be fetched: nothing was saved: {told}"
    assert [hit.key for hit in server.hits] == ["/robots.txt"]


# An update takes a known page that now redirects where no request can go as a lasting failure, as one
# past REDIRECT_MAX_TIMES was: said "ValueError", it was taken for a failure of a while, its saved copy
# kept and its links followed as the page's.
def test_an_update_keeps_no_saved_copy_of_a_page_redirected_to_an_invalid_url(tmp_path, serve):
    root = tmp_path / "site"
    root.mkdir()
    (root / "index.html").write_text('<a href="a.html">a</a>')
    (root / "a.html").write_text('<a href="b.html">b</a>')
    (root / "b.html").write_text("<p>b</p>")
    server = serve(root)
    out = tmp_path / "out"
    out.mkdir()
    first = crawl_site(server, out, 2, "--validators")
    assert first.returncode == 0, first.stderr.decode()
    server.rules["/a.html"] = Rule(status=301, location=f"{server.url.rsplit(':', 1)[0]}:99999/a.html")
    result = crawl_site(server, out, 2, "--update", "-s", "RETRY_TIMES=0")
    assert result.returncode == 0, result.stderr.decode()
    stderr = result.stderr.decode()
    assert f"tse crawl: failed: {server.url}/a.html (redirected to an invalid URL)\n" in stderr, stderr


def test_a_redirect_to_a_host_whose_robots_txt_fails_says_that_reason(tmp_path, serve):
    """A seed, or a page, redirected to a host whose robots.txt answers 503 was said "robots.txt forbids
    it": the reason was looked up under the first URL's host, whose robots.txt allows all (a review's
    find).  It is the last hop's host's."""
    first, other = tmp_path / "first", tmp_path / "other"
    first.mkdir()
    other.mkdir()
    (first / "index.html").write_text('<a href="r.html">r</a>')
    (other / "p.html").write_text("<p>a page</p>")
    a, b = serve(first), serve(other)
    b.rules["/robots.txt"] = Rule(status=503)
    a.rules["/r.html"] = Rule(status=302, location=f"{b.url}/p.html")
    a.rules["/seed.html"] = Rule(status=302, location=f"{b.url}/p.html")
    said = "(robots.txt answered HTTP 503)"
    for seed, failed in (("index.html", f"tse crawl: failed: {a.url}/r.html {said}"), ("seed.html", None)):
        out = tmp_path / f"out-{seed}"
        out.mkdir()
        result = crawl_site(a, out, 1, "--prefix", f"{a.url}/,{b.url}/", seed=seed)
        assert result.returncode == 0, result.stderr.decode()
        if failed:
            assert _failed_lines(result) == [failed]
        else:
            assert f"tse crawl: the seed URL could not be fetched {said}: nothing was saved" in result.stderr.decode()
    assert "/p.html" not in [hit.key for hit in b.hits]


def test_a_robots_txt_cut_short_is_said_with_its_reason(tmp_path, serve):
    """A robots.txt whose connection is reset: Scrapy's two ERROR lines ended in the exception's text,
    empty ("... (failed 3 times): " and "Error downloading <GET index.html>: "); a review's find."""
    root = tmp_path / "site"
    root.mkdir()
    (root / "index.html").write_text("<p>a page</p>")
    server = serve(root)
    server.rules["/robots.txt"] = Rule(reset_after=0)
    out = tmp_path / "out"
    out.mkdir()
    result = crawl_site(server, out, 1)
    assert result.returncode == 0, result.stderr.decode()
    errors = [line for line in result.stderr.decode().splitlines() if " ERROR: " in line]
    host = server.url.removeprefix("http://")
    assert [line.split(" ERROR: ", 1)[1] for line in errors] == [
        f"Gave up retrying <GET {server.url}/robots.txt> (failed 3 times): data loss",
        f"robots.txt of {host} could not be read (data loss): disallow all",
    ], errors
    assert saved_pages(out) == [] and [hit.key for hit in server.hits] == ["/robots.txt"] * 3


def test_a_redirect_to_a_url_not_http_is_said_out_of_the_prefixes(tmp_path, serve):
    """A redirect to a file:, data: or ftp: URL: Scrapy passes the 3xx on, and the page failed as "HTTP
    302" (a review's find); it leads out of the prefixes, said and counted so."""
    root = tmp_path / "site"
    root.mkdir()
    (root / "index.html").write_text('<a href="f.html">f</a> <a href="d.html">d</a> <a href="t.html">t</a>')
    server = serve(root)
    server.rules["/f.html"] = Rule(status=302, location="file:///etc/passwd")
    server.rules["/d.html"] = Rule(status=301, location="data:text/html,<p>hi</p>")
    server.rules["/t.html"] = Rule(status=307, location="ftp://127.0.0.1/t.html")
    out = tmp_path / "out"
    out.mkdir()
    result = crawl_site(server, out, 1)
    assert result.returncode == 0, result.stderr.decode()
    said = "(redirected out of the prefixes)"
    assert sorted(_failed_lines(result)) == [f"tse crawl: failed: {server.url}/{name}.html {said}" for name in "dft"]
    assert "3 failed, 3 links ignored (3 external, 0 duplicate, 0 denied)" in result.stderr.decode()
