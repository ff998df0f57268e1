"""WARC archiving (--warc): real crawls read back with warcio, kills and torn records, the CDXJ index,
and the middleware driven with real Scrapy objects for what a crawl cannot show yet (304 revisits)."""

from __future__ import annotations

import asyncio
import base64
import errno
import fcntl
import gzip
import ipaddress
import json
import os
import random
import shutil
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest
from scrapy import Request
from scrapy.exceptions import CloseSpider, DropItem
from scrapy.http import HtmlResponse, Response
from scrapy.utils.test import get_crawler

import tse_scrapy.settings as project_settings
from tests.conftest import BIN, ROOT, clean_env, crawl_site, popen, run_tse, scrapy_crawl_site
from tests.support.fulldisk import files_of_at_most
from tests.support.inprocess import tse_here
from tests.support.killat import run_tse_until
from tests.support.pages import saved_pages, snapshot
from tests.support.sample import seeded_sample
from tests.support.sitegen import generate_site, write_site
from tests.support.wait import wait_until, while_running
from tests.support.warcs import (
    assert_index_points_at_records,
    assert_valid,
    path_of,
    read_warc,
    responses,
    warcio_check,
)
from tse_scrapy import __version__
from tse_scrapy.crawl.downloader import warc as warc_module
from tse_scrapy.crawl.downloader.warc import NOT_MODIFIED_PROFILE, WarcMiddleware
from tse_scrapy.crawl.items import PageItem
from tse_scrapy.crawl.pipeline import PageDirPipeline
from tse_scrapy.crawl.warcindex import NotAWarcFile, cdxj_path, scan_warc
from tse_scrapy.devtools.siteserver import Rule, SiteServer
from tse_scrapy.exitcodes import WRITE_ERROR
from tse_scrapy.rules.files import pagedir

PROJECT_SETTINGS = {name: getattr(project_settings, name) for name in dir(project_settings) if name.isupper()}
HTML = b"<html><head><title>zipped</title></head><body><p>Compressed on the wire.</p></body></html>\n"


def page_files(directory):
    return {name: (directory / name).read_bytes() for name in os.listdir(directory) if pagedir.is_page_name(name)}


def test_warc_of_a_crawl_with_robots_redirect_errors_and_compression(tmp_path, serve):
    site = write_site(
        tmp_path / "site",
        {
            "index.html": [
                *("a.html", "old.html", "missing.html", "broken.html", "zipped.html", "chunked.html"),
                *("secret/x.html", "https://elsewhere.example/x.html"),
            ],
            "a.html": ["index.html"],
            "new.html": [],
            "chunked.html": [],
            "secret/x.html": [],
        },
    )
    (site.root / "robots.txt").write_text("User-agent: *\nDisallow: /secret/\n")
    chunked_body = (site.root / "chunked.html").read_bytes() + b"<!-- padding -->" * 200
    zipped = gzip.compress(HTML)
    server = serve(site.root)
    server.rules["/old.html"] = Rule(status=301, location="/new.html")
    server.rules["/broken.html"] = Rule(status=500)
    server.rules["/zipped.html"] = Rule(body=zipped, headers={"Content-Encoding": "gzip"})
    server.rules["/chunked.html"] = Rule(body=chunked_body, chunked=True)

    plain = tmp_path / "plain"
    plain.mkdir()
    assert crawl_site(server, plain, 1).returncode == 0
    server.hits.clear()
    out = tmp_path / "out"
    out.mkdir()
    warc = tmp_path / "crawl.warc.gz"
    result = crawl_site(server, out, 1, "--warc", warc)
    assert result.returncode == 0, result.stderr.decode()

    # The page directory is the one a crawl without --warc writes.
    assert page_files(out) == page_files(plain)
    assert not [name for name in os.listdir(out) if not name.startswith(".") and not pagedir.is_page_name(name)]
    u = server.url + "/"
    assert {url for url, _ in saved_pages(out)} == {u + name for name in ("index.html", "a.html", "new.html")} | {
        u + "zipped.html",
        u + "chunked.html",
    }

    records = assert_valid(warc)
    info = records[0]
    fields = dict(line.split(": ", 1) for line in info["decoded"].decode().splitlines())
    assert fields["software"] == f"tse-scrapy/{__version__}"
    assert fields["robots"] == "obey"
    assert fields["format"] == "WARC File Format 1.1"
    assert fields["http-header-user-agent"] == project_settings.USER_AGENT
    assert json.loads(fields["tse-arguments"])["seed"] == u + "index.html"
    assert info["warc"]["WARC-Filename"] == "crawl.warc.gz"

    # One response record for every request the server answered: robots.txt, the
    # redirect, the 404, the 500 and its two retries; never the disallowed page.
    answered = responses(records)
    assert Counter(map(path_of, answered)) == Counter(hit.key for hit in server.hits)
    assert Counter(map(path_of, answered))["/broken.html"] == 3
    assert "/secret/x.html" not in map(path_of, answered)
    status = {path_of(r): r["http"].get_statuscode() for r in answered}
    assert status["/robots.txt"] == "200" and status["/missing.html"] == "404" and status["/broken.html"] == "500"
    assert status["/old.html"] == "301"
    moved = next(r for r in answered if path_of(r) == "/old.html")
    assert moved["http"].get_header("Location") == "/new.html"
    for record in answered:
        assert record["warc"]["WARC-IP-Address"] == "127.0.0.1"
        assert record["http"].protocol == "HTTP/1.1"

    # Each saved page is the decoded payload of its URL's response record.
    by_url = {r["warc"]["WARC-Target-URI"]: r for r in answered}
    for _, page in pagedir.read_pages(out):
        assert by_url[page.url]["decoded"] == page.body, page.url

    # Content-Encoding is kept: the record holds the gzip bytes as served; the page file is decoded.
    compressed = by_url[u + "zipped.html"]
    assert compressed["http"].get_header("Content-Encoding") == "gzip"
    assert compressed["raw"] == zipped and compressed["decoded"] == HTML
    assert next(p for _, p in pagedir.read_pages(out) if p.url == u + "zipped.html").body == HTML
    # Scrapy has undone the chunked coding: the record has the body and no Transfer-Encoding.
    unchunked = by_url[u + "chunked.html"]
    assert unchunked["http"].get_header("Transfer-Encoding") is None
    assert unchunked["raw"] == chunked_body

    # Request records: the request line, Host, and the headers Scrapy's middlewares add.
    for request in (r for r in records if r["type"] == "request"):
        http = request["http"]
        method, target, version = f"{http.protocol} {http.statusline}".split(" ")
        assert (method, target, version) == ("GET", path_of(request), "HTTP/1.1")
        assert http.get_header("Host") == f"127.0.0.1:{server.port}"
        assert http.get_header("User-Agent") == project_settings.USER_AGENT
        assert "gzip" in http.get_header("Accept-Encoding")

    entries = assert_index_points_at_records(warc)
    assert len(entries) == len(answered)
    mime = {fields["url"]: fields.get("mime") for _, fields in entries}
    assert mime[u + "robots.txt"] == "text/plain" and mime[u + "index.html"] == "text/html"


def test_scrapy_crawl_with_the_setting(tmp_path, serve):
    site = write_site(tmp_path / "site", {"index.html": ["a.html"], "a.html": []})
    server = serve(site.root)
    out = tmp_path / "out"
    out.mkdir()
    warc = tmp_path / "s.warc.gz"
    result = scrapy_crawl_site(server, out, 1, "-s", f"TSE_WARC={warc}")
    assert result.returncode == 0, result.stderr.decode()
    records = assert_valid(warc)
    assert sorted(map(path_of, responses(records))) == ["/a.html", "/index.html", "/robots.txt"]
    assert (tmp_path / "s.cdxj").is_file()


def test_headers_that_are_not_ascii_are_written_percent_encoded(tmp_path, serve):
    # A header holding "; name=value" and bytes past ASCII outside them stopped the crawl with a traceback
    # (warcio encodes only the "=value" parts, then could not write the rest), and --resume failed the same.
    site = write_site(tmp_path / "site", {"index.html": ["a.html"], "a.html": []})
    server = serve(site.root)
    utf8 = "é".encode().decode("latin-1")  # (the server writes headers in latin-1: these are UTF-8's bytes)
    server.rules["/a.html"] = Rule(
        headers={
            "Link": f'<{server.url}/canon{utf8}.html>; rel="canonical"',
            "Set-Cookie": f"name=caf{utf8}; Path=/",
            "X-Note": f"plain {utf8}",
        }
    )
    out = tmp_path / "out"
    out.mkdir()
    warc = tmp_path / "crawl.warc.gz"
    result = crawl_site(server, out, 1, "--warc", warc)
    assert result.returncode == 0 and b"Traceback" not in result.stderr, result.stderr.decode()
    assert [url.removeprefix(server.url) for url, _ in saved_pages(out)] == ["/index.html", "/a.html"]
    (answer,) = [record for record in responses(assert_valid(warc)) if path_of(record) == "/a.html"]
    headers = answer["http"]
    assert headers.get_header("Link") == f'<{server.url}/canon%C3%A9.html>; rel="canonical"'
    assert headers.get_header("Set-Cookie") == "name=caf%C3%A9; Path=/"
    assert headers.get_header("X-Note") == "plain %C3%A9"


# Links a browser and the crawl's parser read as none: in comments, scripts, raw text, templates.
INERT_LINKS = (
    '<!-- <a href="c.html">commented out</a> --><!--><a href="b.html">after an empty comment</a>'
    '<template><base href="http://elsewhere.example/"><a href="c.html">inert</a></template>'
    '<script>document.write(\'<a href="c.html">written</a>\')</script><style>/* <a href="c.html"> */</style>'
    '<textarea><a href="c.html">typed</a></textarea><title><a href="c.html"></title><? <a href="c.html"> ?>'
)


def test_an_import_of_a_crawls_warc_finds_the_links_the_crawl_found(tmp_path, serve):
    """c.html is two links deep, and one link deep only through links that are none (INERT_LINKS): the
    import writes the crawl's own page files (docIDs, URLs, depths, bytes) and records its links."""
    site = write_site(tmp_path / "site", {"index.html": ["b.html"], "b.html": ["c.html"], "c.html": []})
    index = site.root / "index.html"
    index.write_text(index.read_text().replace("</body>", INERT_LINKS + "</body>"))
    server = serve(site.root)
    out, pages = tmp_path / "out", tmp_path / "pages"
    out.mkdir()
    pages.mkdir()
    warc = tmp_path / "crawl.warc.gz"
    result = crawl_site(server, out, 2, "--warc", warc, "--record", tmp_path / "crawl.jsonl")
    assert result.returncode == 0, result.stderr.decode()
    assert [(url.removeprefix(server.url), depth) for url, depth in saved_pages(out)] == [
        ("/index.html", 0), ("/b.html", 1), ("/c.html", 2)
    ]  # fmt: skip
    # What the import writes is what is checked (not a process's end): in this process (cli.main).
    result = tse_here("import", warc, pages, "--record", tmp_path / "import.jsonl")
    assert result.returncode == 0, result.stderr.decode()
    assert page_files(pages) == page_files(out)
    crawled, imported = (
        {line["url"]: line.get("links", []) for line in map(json.loads, (tmp_path / name).read_text().splitlines())
         if line["outcome"] == "saved"}
        for name in ("crawl.jsonl", "import.jsonl")
    )  # fmt: skip
    for name, links in (("index.html", ["b.html"]), ("b.html", ["c.html"])):  # (the import's: each link once)
        url = f"{server.url}/{name}"
        assert imported[url] == list(dict.fromkeys(crawled[url])) == [f"{server.url}/{link}" for link in links]


def kill_mid_crawl(server, out, warc):
    """Start a crawl with --warc and SIGKILL it once it has saved a few pages."""
    command = [str(BIN / "tse"), "crawl", f"{server.url}/index.html", str(out), "10"]
    command += ["--prefix", f"{server.url}/", "-s", "DOWNLOAD_DELAY=0", "--warc", str(warc)]
    process = popen(command, env=clean_env(), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(while_running(process, lambda: len(page_files(out)) >= 8, "saving 8 pages"), 60, "no pages")
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL


@pytest.fixture(scope="module")
def killed_crawl(tmp_path_factory):
    """A crawl with --warc of a slow site, SIGKILLed once it has saved a few pages: made once for the
    module, and given to each test as it was left (its page directory and WARC copied back in place, at
    the paths the crawl's state names).  (The server, the page directory, the WARC.)"""
    base = tmp_path_factory.mktemp("killed")
    # 30 pages: killed at 8, each resume has some 20 left to fetch (each had 50: no assertion needs them).
    site = generate_site(base / "site", pages=30, fanout=3, seed=5, external=2, dead=2)
    server = SiteServer(site.root).start()
    for name in site.links:
        server.rules["/" + name] = Rule(delay=0.03)
    run, kept = base / "run", base / "kept"
    (run / "out").mkdir(parents=True)
    kill_mid_crawl(server, run / "out", run / "crawl.warc.gz")
    shutil.copytree(run, kept)

    def as_killed():
        shutil.rmtree(run)
        shutil.copytree(kept, run)
        return server, run / "out", run / "crawl.warc.gz"

    yield as_killed
    server.stop()


@pytest.mark.parametrize("torn", ["killed", "garbage appended", "half a record appended"])
def test_killed_crawl_resumed_with_the_same_warc(killed_crawl, torn):
    server, out, warc = killed_crawl()
    first_run = read_warc(warc)  # warcio reads a torn tail without complaint: only whole records matter here
    assert first_run[0]["type"] == "warcinfo" and len(responses(first_run)) >= 9
    whole = scan_warc(warc).end
    if torn == "garbage appended":
        with open(warc, "ab") as stream:
            stream.write(b"garbage\r\n\r\n")
        assert warcio_check(warc)[0] != 0
    elif torn == "half a record appended":
        # What a write cut short leaves: the first half of a record's gzip member.
        # warcio check passes such a file (it reads the torn member as the end of
        # the file); the middleware's scan finds it.
        with open(warc, "rb") as stream:
            stream.seek(first_run[1]["offset"])
            member = stream.read(first_run[2]["offset"] - first_run[1]["offset"])
        with open(warc, "ab") as stream:
            stream.write(member[: len(member) // 2])
        assert scan_warc(warc).end == whole < warc.stat().st_size
    before = warc.read_bytes()[:whole]

    result = crawl_site(server, out, 10, "--resume", "--warc", warc)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    stderr = result.stderr.decode()
    assert "Traceback" not in stderr
    if torn != "killed":
        assert "removed the last" in stderr
    assert warc.read_bytes().startswith(before)  # the first run's whole records are kept as they were

    records = assert_valid(warc)  # one warcinfo: the resumed crawl appended without a second one
    answered = responses(records)
    # Both runs are there: each fetched robots.txt; the seed was fetched by the first only.
    assert Counter(map(path_of, answered))["/robots.txt"] == 2
    assert Counter(map(path_of, answered))["/index.html"] == 1
    assert len(answered) > len(responses(first_run))
    # Every saved page has a response record with its bytes (a page fetched again after
    # the kill has two).
    payloads = {}
    for record in answered:
        payloads.setdefault(record["warc"]["WARC-Target-URI"], set()).add(record["decoded"])
    pages = list(pagedir.read_pages(out))
    assert len(pages) > 8
    for _, page in pages:
        assert page.body in payloads[page.url], page.url
    # The index covers both runs.
    assert len(assert_index_points_at_records(warc)) == len(answered)


def whole_responses(warc):
    """URL -> the decoded payloads of the response records that end before a torn tail."""
    end = scan_warc(warc).end
    payloads = {}
    for record in read_warc(warc):
        if record["type"] == "response" and record["offset"] < end:
            payloads.setdefault(record["warc"]["WARC-Target-URI"], set()).add(record["decoded"])
    return payloads


def test_every_page_saved_before_a_kill_has_its_record(tmp_path, serve):
    """The pipeline saves a page only once the writer thread has appended its exchange: a crawl
    killed at any moment leaves no page file without its response record."""
    site = generate_site(tmp_path / "site", pages=80, fanout=3, seed=11, external=0, dead=1)
    rng = random.Random(11)
    for name in site.links:
        # ~200 kB of noise each: a record takes milliseconds to compress, as long as a page takes to parse.
        noise = base64.b64encode(rng.randbytes(150_000))
        path = site.root / name
        path.write_bytes(path.read_bytes().replace(b"</body>", b"<p>" + noise + b"</p></body>"))
    server = serve(site.root)
    # Two kill points, the fewest and the most pages of five drawn: every point exercises the same code
    # (the pipeline waits for the writer thread), the two ends of the crawl show it holds throughout.
    drawn = sorted(rng.sample(range(1, 60), 5))
    for attempt, pages in enumerate((drawn[0], drawn[-1])):
        out = tmp_path / f"out{attempt}"
        out.mkdir()
        warc = tmp_path / f"crawl{attempt}.warc.gz"
        command = [str(BIN / "tse"), "crawl", f"{server.url}/index.html", str(out), "10", "--warc", str(warc)]
        command += ["--prefix", f"{server.url}/", "-s", "DOWNLOAD_DELAY=0"]
        process = popen(command, env=clean_env(), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            saved = while_running(process, lambda out=out, pages=pages: len(page_files(out)) >= pages, "the kill")
            wait_until(saved, 60, f"{pages} pages", interval=0.001)
        finally:
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=30)
        recorded = whole_responses(warc)
        saved_pages = list(pagedir.read_pages(out))
        assert len(saved_pages) >= pages
        for _, page in saved_pages:
            assert page.body in recorded.get(page.url, ()), (attempt, page.url)


LIMIT = 256 * 1024


def test_a_warc_that_cannot_be_written_stops_the_crawl_and_resume_repairs_it(tmp_path, serve):
    names = [f"p{i}.html" for i in range(12)]
    site = write_site(tmp_path / "site", {"index.html": names, **{name: [] for name in names}})
    # ~130 KB pages that gzip cannot shrink much: the WARC outgrows LIMIT at the
    # third page, before any page file or the crawl state does.
    for name in names:
        noise = base64.b64encode(os.urandom(100_000))
        (site.root / name).write_bytes(b"<html><body><p>" + noise + b"</p></body></html>\n")
    server = serve(site.root)
    out = tmp_path / "out"
    out.mkdir()
    warc = tmp_path / "full.warc.gz"
    result = crawl_site(server, out, 1, "--warc", warc, preexec_fn=files_of_at_most(LIMIT), timeout=120)
    assert result.returncode == 1
    stderr = result.stderr.decode()
    assert "Traceback" not in stderr
    # (It did not say how to go on: the resume below is what it says.)
    assert (
        stderr.splitlines()[-1] == f"tse crawl: cannot write the WARC file {warc}: File too large: go on with --resume"
    )
    assert 0 < len(page_files(out)) < 13
    assert not cdxj_path(warc).exists()  # not indexed: its end may be torn

    again = crawl_site(server, out, 1, "--resume", "--warc", warc)
    assert again.returncode == 0, again.stderr.decode()[-2000:]
    records = assert_valid(warc)
    answered = responses(records)
    assert Counter(map(path_of, answered))["/robots.txt"] == 2
    by_url = {r["warc"]["WARC-Target-URI"]: r["decoded"] for r in answered}
    missing = [page.url for _, page in pagedir.read_pages(out) if by_url.get(page.url) != page.body]
    # The page whose exchange could not be written was not saved: fetched again, it has its record.
    assert missing == []
    assert len(list(pagedir.read_pages(out))) == 13
    assert_index_points_at_records(warc)


def test_a_warc_path_that_cannot_be_opened_stops_the_crawl(tmp_path, serve):
    site = write_site(tmp_path / "site", {"index.html": ["a.html"], "a.html": []})
    server = serve(site.root)
    (tmp_path / "file").write_text("a regular file\n")
    out = tmp_path / "out"
    out.mkdir()
    # Refused with the arguments: nothing fetched, one line, exit 2.
    refused = tse_here(  # a refusal, its message what is checked: in this process (cli.main)
        "crawl",
        f"{server.url}/index.html",
        out,
        1,
        "--prefix",
        f"{server.url}/",
        "--warc",
        tmp_path / "file" / "x.warc.gz",
    )
    assert refused.returncode == 2
    assert len(refused.stderr.decode().splitlines()) == 1
    # A link that passes that check but leads under the regular file: the
    # middleware cannot open it and stops the crawl before any page.
    link = tmp_path / "link.warc.gz"
    link.symlink_to(tmp_path / "file" / "x.warc.gz")
    result = crawl_site(server, out, 1, "--warc", link)
    assert result.returncode == 1
    stderr = result.stderr.decode()
    assert "Traceback" not in stderr
    message = f"cannot write the WARC file {link}: Not a directory"
    assert stderr.splitlines()[-1] == f"tse crawl: {message}"
    # Said once, by the reason line (it was logged as an ERROR before it, too); no resume to speak of: it
    # did not begin.
    assert stderr.count(message) == 1 and "ERROR" not in stderr
    assert page_files(out) == {}
    assert [hit.key for hit in server.hits] == []


# The middleware with real Scrapy objects.


@pytest.fixture
def middleware(tmp_path):
    crawlers = []

    def build(warc=tmp_path / "unit.warc.gz", **settings):
        crawler = get_crawler(
            settings_dict={
                **PROJECT_SETTINGS,
                "EXTENSIONS": {},
                "TSE_WARC": str(warc),
                "TSE_ARGUMENTS": {"seed": "http://h/"},
                **settings,
            }
        )
        crawler.stats.open_spider()
        crawlers.append(crawler)
        return WarcMiddleware.from_crawler(crawler), crawler

    return build


def exchange(mw, url, status=200, body=b"", headers=None, meta=None, request_headers=None, flags=None):
    request = Request(url, headers=request_headers, meta=meta or {})
    assert mw.process_request(request) is None
    response = Response(
        url,
        status=status,
        body=body,
        headers=headers,
        request=request,
        flags=flags,
        protocol="HTTP/1.1",
        ip_address=ipaddress.ip_address("192.0.2.7"),
    )
    assert mw.process_response(request, response) is response
    return request


def test_a_304_is_a_revisit_record_paired_with_its_request(tmp_path, middleware):
    mw, crawler = middleware()
    mw.spider_opened()
    url = "http://h/page.html"
    earlier = {"uri": url, "date": "2026-01-02T03:04:05.123456Z"}
    validators = {"If-None-Match": '"v1"', "If-Modified-Since": "Fri, 02 Jan 2026 03:04:05 GMT"}
    exchange(mw, url, 304, headers={"ETag": '"v1"'}, meta={"tse_revisit_of": earlier}, request_headers=validators)
    exchange(mw, "http://h/other.html", 304, headers={"ETag": '"v2"'})  # the copy is not named: no Refers-To
    exchange(mw, url, 200, body=b"<html>changed</html>", headers={"Content-Type": "text/html"})
    mw.spider_closed()

    warc = tmp_path / "unit.warc.gz"
    records = assert_valid(warc)
    types = ["warcinfo", "revisit", "request", "revisit", "request", "response", "request"]
    assert [r["type"] for r in records] == types
    revisit, request = records[1], records[2]
    assert revisit["warc"]["WARC-Profile"] == NOT_MODIFIED_PROFILE
    assert revisit["warc"]["WARC-Refers-To-Target-URI"] == url
    assert revisit["warc"]["WARC-Refers-To-Date"] == earlier["date"]
    assert "WARC-Payload-Digest" not in revisit["warc"]
    assert revisit["warc"]["WARC-IP-Address"] == "192.0.2.7"
    assert revisit["http"].get_statuscode() == "304" and revisit["http"].get_header("ETag") == '"v1"'
    assert revisit["decoded"] == b""
    assert request["warc"]["WARC-Concurrent-To"] == revisit["warc"]["WARC-Record-ID"]
    assert request["http"].get_header("If-None-Match") == '"v1"'
    assert request["http"].get_header("Host") == "h"
    unnamed = records[3]
    assert "WARC-Refers-To-Target-URI" not in unnamed["warc"] and "WARC-Refers-To-Date" not in unnamed["warc"]
    assert unnamed["warc"]["WARC-Profile"] == NOT_MODIFIED_PROFILE
    entries = assert_index_points_at_records(warc)
    assert sorted(fields.get("mime") for _, fields in entries) == ["text/html", "warc/revisit", "warc/revisit"]
    assert crawler.stats.get_value("tse/warc_exchanges") == 3


def stub_engine(crawler, mw):
    """What the middleware and the pipeline use of the engine: the downloader middlewares (where
    the pipeline finds the WARC middleware) and close_spider_async; returns the close reasons."""
    closed = []

    def close_spider_async(reason):
        closed.append(reason)  # no coroutine: deferred_from_coro returns None as it is

    downloader = SimpleNamespace(middleware=SimpleNamespace(middlewares=[mw]))
    crawler.engine = SimpleNamespace(downloader=downloader, close_spider_async=close_spider_async)
    return closed


def slow_gzip(monkeypatch, seconds):
    """The writer thread's compression takes *seconds* more (what a large page costs)."""
    original = warc_module._gzip

    def gzip_slowly(record):
        time.sleep(seconds)
        return original(record)

    monkeypatch.setattr(warc_module, "_gzip", gzip_slowly)


def test_the_pipeline_saves_a_page_once_its_exchange_is_in_the_file(tmp_path, middleware, monkeypatch):
    (tmp_path / "pages").mkdir()
    mw, crawler = middleware(TSE_PAGEDIR=str(tmp_path / "pages"))
    stub_engine(crawler, mw)
    mw.spider_opened()
    pipeline = PageDirPipeline.from_crawler(crawler)
    pipeline.open_spider()
    assert pipeline.warc is mw
    warc = tmp_path / "unit.warc.gz"
    slow_gzip(monkeypatch, 0.3)
    exchange(mw, "http://h/a.html", body=b"<html>a</html>")
    # Handed to the writer thread: the spider goes on meanwhile.
    assert scan_warc(warc).records == 1
    asyncio.run(pipeline.process_item(PageItem("http://h/a.html", 0, b"<html>a</html>")))
    assert scan_warc(warc).records == 3  # warcinfo, response, request: written before the page file
    assert pagedir.read_page(tmp_path / "pages", 1).body == b"<html>a</html>"
    mw.spider_closed()
    assert_index_points_at_records(warc)


def test_a_record_that_cannot_be_written_drops_its_page_and_stops_the_crawl(tmp_path, middleware, monkeypatch):
    (tmp_path / "pages").mkdir()
    mw, crawler = middleware(TSE_PAGEDIR=str(tmp_path / "pages"))
    closed = stub_engine(crawler, mw)
    mw.spider_opened()
    pipeline = PageDirPipeline.from_crawler(crawler)
    pipeline.open_spider()
    warc = tmp_path / "unit.warc.gz"
    exchange(mw, "http://h/a.html", body=b"<html>a</html>")
    asyncio.run(pipeline.process_item(PageItem("http://h/a.html", 0, b"<html>a</html>")))

    def full_disk(file, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(mw, "_append", full_disk)
    exchange(mw, "http://h/b.html", body=b"<html>b</html>")
    with pytest.raises(DropItem):
        asyncio.run(pipeline.process_item(PageItem("http://h/b.html", 0, b"<html>b</html>")))
    assert crawler.stats.get_value("tse/error") == f"cannot write the WARC file {warc}: No space left on device"
    assert closed == [WRITE_ERROR]
    assert [page.url for _, page in pagedir.read_pages(tmp_path / "pages")] == ["http://h/a.html"]
    # Nothing more is written; closing drains the writer thread and writes no index.
    exchange(mw, "http://h/c.html", body=b"<html>c</html>")
    mw.spider_closed()
    assert [path_of(r) for r in responses(read_warc(warc))] == ["/a.html"]
    assert not cdxj_path(warc).exists()
    assert crawler.stats.get_value("tse/warc_exchanges") == 1


def test_a_bug_in_the_writer_thread_stops_the_crawl_with_its_traceback(tmp_path, middleware, monkeypatch, caplog):
    mw, crawler = middleware()
    closed = stub_engine(crawler, mw)
    mw.spider_opened()

    def broken(exchange):
        raise KeyError("oops")

    monkeypatch.setattr(mw, "_response_record", broken)
    exchange(mw, "http://h/a.html", body=b"<html>a</html>")  # the hand-over returns all the same
    mw.wait_written()
    assert crawler.stats.get_value("tse/error") == f"cannot write the WARC file {tmp_path / 'unit.warc.gz'}: 'oops'"
    assert any(record.exc_info and record.exc_info[0] is KeyError for record in caplog.records)
    assert closed == [WRITE_ERROR]
    mw.spider_closed()


def test_only_http_exchanges_are_recorded(tmp_path, middleware):
    mw, _ = middleware()
    mw.spider_opened()
    # A page read back from its file on resume: ReplayMiddleware answers before
    # the request reaches this middleware, and flags the response.
    replayed_request = Request("http://h/replayed.html")
    replayed = HtmlResponse(replayed_request.url, body=b"<html>", request=replayed_request, flags=["replayed"])
    assert mw.process_response(replayed_request, replayed) is replayed
    exchange(mw, "http://h/flagged.html", body=b"<html>", flags=["replayed"])  # flagged: skipped all the same
    exchange(mw, "data:,", body=b"")  # not HTTP
    exchange(mw, "https://h/secure.html", body=b"<html>secure</html>")
    # A proxy's credentials are not archived; the header Scrapy gives is.
    exchange(mw, "http://h/proxied.html", request_headers={"Proxy-Authorization": "Basic c2VjcmV0", "X-Kept": "1"})
    mw.spider_closed()
    records = assert_valid(tmp_path / "unit.warc.gz")
    assert [r["warc"]["WARC-Target-URI"] for r in responses(records)] == [
        "https://h/secure.html",
        "http://h/proxied.html",
    ]
    proxied = records[-1]["http"]
    assert proxied.get_header("Proxy-Authorization") is None and proxied.get_header("X-Kept") == "1"


def test_a_second_run_appends_without_a_second_warcinfo(tmp_path, middleware):
    for run in range(2):
        mw, _ = middleware()
        mw.spider_opened()
        exchange(mw, f"http://h/run{run}.html", body=b"<html>run</html>")
        exchange(mw, f"http://h/run{run}-304.html", 304)
        mw.spider_closed()
    cdxj_path(tmp_path / "unit.warc.gz").unlink()  # a third run indexes the earlier records again, from the file
    mw, _ = middleware()
    mw.spider_opened()
    exchange(mw, "http://h/run2.html", body=b"<html>run</html>")
    mw.spider_closed()
    records = assert_valid(tmp_path / "unit.warc.gz")
    assert [r["type"] for r in records] == ["warcinfo"] + ["response", "request", "revisit", "request"] * 2 + [
        "response",
        "request",
    ]
    assert len(assert_index_points_at_records(tmp_path / "unit.warc.gz")) == 5


def test_a_file_that_is_not_a_warc_is_left_alone(tmp_path, middleware):
    warc = tmp_path / "other.warc.gz"
    for content in (b"some notes, not a WARC\n", gzip.compress(b"a gzipped file that is no WARC " * 10)):
        warc.write_bytes(content)
        mw, crawler = middleware(warc)
        with pytest.raises(CloseSpider):
            mw.spider_opened()
        assert warc.read_bytes() == content
        assert "does not begin with a gzipped WARC record" in crawler.stats.get_value("tse/error")
        mw.spider_closed()
        assert not cdxj_path(warc).exists()


def test_two_crawls_cannot_write_one_warc(tmp_path, middleware):
    first, _ = middleware()
    first.spider_opened()
    second, crawler = middleware()
    with pytest.raises(CloseSpider):
        second.spider_opened()
    assert crawler.stats.get_value("tse/error").endswith("another crawl is writing it")
    first.spider_closed()
    # Held by another process (a distributed worker given the same file), the same.
    warc = tmp_path / "unit.warc.gz"
    with open(warc, "ab") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        third, _ = middleware()
        with pytest.raises(CloseSpider):
            third.spider_opened()
    assert_valid(warc)


def test_scan_finds_the_end_of_the_last_whole_exchange(tmp_path, middleware):
    mw, _ = middleware()
    mw.spider_opened()
    for i in range(3):
        exchange(mw, f"http://h/{i}.html", body=b"<html>%d</html>" % i * 50)
    mw.spider_closed()
    warc = tmp_path / "unit.warc.gz"
    data = warc.read_bytes()
    records = read_warc(warc)
    starts = [r["offset"] for r in records] + [len(data)]
    # A file may be cut between the warcinfo and a pair, or between two pairs, never inside a pair.
    boundaries = [starts[0], starts[1], starts[3], starts[5], starts[7]]
    assert scan_warc(warc).end == len(data) and scan_warc(warc).records == 7
    cut = tmp_path / "cut.warc.gz"
    # Every cut at, just before and just after each record's start and the file's end (each kind of
    # place a cut can fall), and a seeded sample of the other offsets: every byte inside a gzip member
    # runs the same code (the member does not inflate whole); TSE_TEST_SEED=all tries every offset.
    edges = sorted({size for start in starts for size in (start - 1, start, start + 1) if 0 <= size <= len(data)})
    others, said = seeded_sample([size for size in range(len(data) + 1) if size not in edges], 150)
    for size in sorted({*edges, *others}):
        cut.write_bytes(data[:size])
        assert scan_warc(cut).end == max(b for b in boundaries if b <= size), (size, said)
    cut.write_bytes(data + b"\x1f\x8b\x08garbage")
    assert scan_warc(cut).end == len(data)
    cut.write_bytes(b"")
    assert scan_warc(cut).end == 0
    cut.write_bytes(b"WARC/1.1\r\n")  # not gzipped: not ours
    with pytest.raises(NotAWarcFile):
        scan_warc(cut)


def test_cdxj_path():
    assert cdxj_path("/d/crawl.warc.gz") == Path("/d/crawl.cdxj")
    assert cdxj_path("a.b.warc.gz") == Path("a.b.cdxj")


def test_an_update_archives_a_304_as_a_revisit_of_the_first_crawl(tmp_path, serve):
    site = write_site(tmp_path / "site", {"index.html": ["a.html", "b.html"], "a.html": [], "b.html": []})
    server = serve(site.root)
    out = tmp_path / "out"
    out.mkdir()
    first, second = tmp_path / "first.warc.gz", tmp_path / "second.warc.gz"
    assert crawl_site(server, out, 1, "--warc", first).returncode == 0
    assert (out / ".tse-pages.sqlite").is_file()  # --warc keeps the validators
    (site.root / "b.html").write_text("<html><body>B, changed</body></html>\n")
    result = crawl_site(server, out, 1, "--update", "--warc", second)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert b"0 new, 1 changed, 2 unchanged, 0 gone" in result.stderr
    fetched = {r["warc"]["WARC-Target-URI"]: r for r in responses(assert_valid(first))}
    records = assert_valid(second)
    answers = {r["warc"]["WARC-Target-URI"]: r for r in records if r["type"] in ("response", "revisit")}
    for name in ("index.html", "a.html"):
        revisit = answers[f"{server.url}/{name}"]
        assert revisit["type"] == "revisit"
        assert revisit["warc"]["WARC-Profile"] == NOT_MODIFIED_PROFILE
        assert revisit["warc"]["WARC-Refers-To-Target-URI"] == f"{server.url}/{name}"
        # The date of the first crawl's response record.
        assert revisit["warc"]["WARC-Refers-To-Date"] == fetched[f"{server.url}/{name}"]["warc"]["WARC-Date"]
    changed = answers[f"{server.url}/b.html"]
    saved = {page.url: page.body for _, page in pagedir.read_pages(out)}
    assert changed["type"] == "response" and changed["decoded"] == saved[f"{server.url}/b.html"]


def test_a_crawl_killed_as_it_indexes_its_warc_resumes_to_the_index_and_then_has_nothing_to_do(tmp_path, serve):
    """The crawl state goes last: a crawl killed once its pages are saved, as it writes the CDXJ,
    is still an interrupted crawl; its resume writes the index of the whole file.  Resumed again,
    the finished crawl says so, and touches neither its pages nor its WARC."""
    site = generate_site(tmp_path / "site", pages=12, fanout=2, seed=3, external=0, dead=1)
    server = serve(site.root)
    out, warc = tmp_path / "out", tmp_path / "crawl.warc.gz"
    out.mkdir()
    arguments = ["crawl", f"{server.url}/index.html", str(out), "10", "--prefix", f"{server.url}/"]
    arguments += ["-s", "DOWNLOAD_DELAY=0", "--warc", str(warc)]
    killed = run_tse_until(["open", str(tmp_path / ".crawl.cdxj.partial"), "1"], arguments)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()[-2000:]
    assert (out / ".tse-state.sqlite").is_file() and not cdxj_path(warc).exists()
    resumed = run_tse(*arguments, "--resume")
    assert resumed.returncode == 0, resumed.stderr.decode()
    assert not (out / ".tse-state.sqlite").exists()
    assert len(assert_index_points_at_records(warc)) == len(responses(assert_valid(warc)))

    before, hits = snapshot(tmp_path), len(server.hits)
    again = tse_here(*arguments, "--resume")  # a one-line answer, before any crawl: in this process
    assert (again.returncode, again.stderr.decode()) == (
        0,
        f"tse crawl: {out} holds a finished crawl: nothing to resume\n",
    )
    assert snapshot(tmp_path) == before and len(server.hits) == hits
