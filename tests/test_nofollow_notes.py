"""A page whose answer says ``X-Robots-Tag: nofollow`` (or ``none``, or ``tse-scrapy: nofollow``) keeps
its links unfollowed when it is read again from its file, which keeps no header: an update's 304 that
does not repeat the header (RFC 9110 says it need not), a copy kept after a 503, a resume's page read
back.  The crawl notes it beside the page files (``PAGEDIR/.tse-follow/``: rules/files/pagenotes.py),
`tse import` notes it as a crawl does, and an update clears the note when a whole answer no longer says
it.  Real crawls of a site served on 127.0.0.1 by a server that sends the header on its 200s only (as
the RFC allows)."""

from __future__ import annotations

import hashlib
import shutil
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import crawl_site
from tests.support.inprocess import tse_here
from tests.support.pages import saved_pages
from tests.support.resumestate import uncommitted
from tse_scrapy.rules.files import pagedir
from tse_scrapy.rules.files.pagenotes import (
    CANONICAL,
    CHARSETS,
    FOLLOW,
    NOTE_KINDS,
    ROBOTS,
    TYPES,
    page_nofollow,
)

PAGES = {
    "/index.html": b"<html><head><title>Start</title></head><body><a href='nf.html'>nf</a></body></html>",
    "/nf.html": b"<html><head><title>Heron</title></head><body><a href='behind.html'>behind</a></body></html>",
    "/behind.html": b"<html><head><title>Marmot</title></head><body><p>behind</p></body></html>",
}
RETRY = ("-s", "RETRY_TIMES=0")


@dataclass
class Site:
    """PAGES, each sent with an ETag and its ``robots`` X-Robots-Tag on a 200; a 304 (its ETag asked
    for) carries the ETag alone.  ``failing``: paths answered 503.  ``asked``: (path, status, whether
    the request was conditional) of each request."""

    robots: dict[str, str] = field(default_factory=dict)
    failing: set[str] = field(default_factory=set)
    asked: list[tuple[str, int, bool]] = field(default_factory=list)
    url: str = ""


@pytest.fixture(scope="module")
def site():
    served = Site()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            body = PAGES.get(self.path)
            etag = f'"{hashlib.sha1(body).hexdigest()}"' if body is not None else ""
            conditional = self.headers.get("If-None-Match") is not None
            if self.path in served.failing:
                status, headers, body = 503, {}, b"busy"
            elif body is None:
                status, headers, body = 404, {}, b"none"
            elif self.headers.get("If-None-Match") == etag:
                status, headers, body = 304, {"ETag": etag}, b""
            else:
                status, headers = 200, {"Content-Type": "text/html", "ETag": etag}
                if self.path in served.robots:
                    headers["X-Robots-Tag"] = served.robots[self.path]
            served.asked.append((self.path, status, conditional))
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            if status != 304:
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    served.url = f"http://127.0.0.1:{server.server_port}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield served
    server.shutdown()
    server.server_close()
    thread.join()


def live_names(out) -> set[str]:
    """The names of the pages saved in *out* and not gone."""
    gone = pagedir.gone_docs(out)
    return {url.rsplit("/", 1)[1] for doc, (url, _) in enumerate(saved_pages(out), start=1) if doc not in gone}


def crawled(site, out, *options, validators: bool = True) -> None:
    done = crawl_site(site, out, 2, *(["--validators"] if validators else []), *options)
    assert done.returncode == 0, done.stderr.decode()[-2000:]


@pytest.fixture(scope="module")
def nofollow_crawl(site, tmp_path_factory):
    """The site crawled once (depth 2, its WARC kept) while nf.html said ``X-Robots-Tag: nofollow``: each
    test updates a copy of it (``crawl_copy``), or imports its WARC."""
    root = tmp_path_factory.mktemp("nofollow")
    out = root / "out"
    out.mkdir()
    site.robots = {"/nf.html": "nofollow"}
    crawled(site, out, "--warc", root / "crawl.warc.gz")
    assert live_names(out) == {"index.html", "nf.html"}
    return out


@pytest.fixture
def crawl_copy(site, nofollow_crawl, tmp_path):
    """A copy of the module's crawl, the site as it was crawled (nf.html nofollow, nothing failing)."""
    out = tmp_path / "out"
    shutil.copytree(nofollow_crawl, out)
    site.robots, site.failing = {"/nf.html": "nofollow"}, set()
    site.asked.clear()
    return out


def test_an_update_whose_nofollow_page_would_answer_304_without_the_header_follows_no_link(site, crawl_copy):
    # The 304 (the page's ETag asked for) carries no X-Robots-Tag: read from its file, the page's links
    # were followed, and behind.html saved.  Noted nofollow, it is asked for whole.
    crawled(site, crawl_copy, "--update")
    assert live_names(crawl_copy) == {"index.html", "nf.html"}
    assert [(status, conditional) for path, status, conditional in site.asked if path == "/nf.html"] == [(200, False)]
    assert "/behind.html" not in {path for path, *_ in site.asked}


def test_an_update_keeping_a_nofollow_pages_copy_after_a_503_follows_no_link(site, crawl_copy):
    site.failing = {"/nf.html"}
    crawled(site, crawl_copy, "--update", *RETRY)
    assert live_names(crawl_copy) == {"index.html", "nf.html"}  # the copy kept, no page behind it
    assert "/behind.html" not in {path for path, *_ in site.asked}


def test_a_page_that_no_longer_says_nofollow_has_its_links_followed_again(site, crawl_copy):
    # A 503 first (its note kept: nothing behind it), then a whole answer without the header (followed,
    # its note cleared), then a 503 again: its kept copy's links are followed, behind.html stays.
    site.failing = {"/nf.html"}
    crawled(site, crawl_copy, "--update", *RETRY)
    assert live_names(crawl_copy) == {"index.html", "nf.html"}
    site.robots, site.failing = {}, set()
    crawled(site, crawl_copy, "--update")
    assert live_names(crawl_copy) == {"index.html", "nf.html", "behind.html"}
    notes = (crawl_copy / FOLLOW / "crawl.tsv").read_text().splitlines()
    assert notes == [f"{site.url}/nf.html\tnofollow", f"{site.url}/nf.html\tfollow"]
    site.failing = {"/nf.html"}
    site.asked.clear()
    crawled(site, crawl_copy, "--update", *RETRY)
    assert live_names(crawl_copy) == {"index.html", "nf.html", "behind.html"}
    assert ("/behind.html", 304, True) in site.asked


def test_an_imported_nofollow_page_keeps_its_links_unfollowed_by_an_update(site, nofollow_crawl, crawl_copy, tmp_path):
    # `tse import` notes what the crawl notes: an update of the import keeping nf.html's copy after a 503
    # follows no link of it.
    pages = tmp_path / "pages"
    pages.mkdir()
    assert tse_here("import", nofollow_crawl.parent / "crawl.warc.gz", pages).returncode == 0
    assert live_names(pages) == {"index.html", "nf.html"}
    site.failing = {"/nf.html"}
    crawled(site, pages, "--update", *RETRY)
    assert live_names(pages) == {"index.html", "nf.html"}
    assert "/behind.html" not in {path for path, *_ in site.asked}


@pytest.mark.parametrize("header", ["tse-scrapy: nofollow", "none"])
def test_a_resumed_crawl_reading_a_nofollow_page_back_follows_no_link(site, tmp_path, header):
    # A kill between nf.html's file and its commit: the resume reads the page back from its file, which
    # keeps no header (its links were followed, and behind.html saved).
    out, jobdir = tmp_path / "out", tmp_path / "job"
    out.mkdir()
    site.robots, site.failing = {"/nf.html": header}, set()
    crawled(site, out, "-s", f"JOBDIR={jobdir}", validators=False)
    assert live_names(out) == {"index.html", "nf.html"}
    last = 2
    assert saved_pages(out)[last - 1][0] == f"{site.url}/nf.html"
    uncommitted(jobdir, last)  # (as a kill between the page file's rename and its commit leaves it)
    site.asked.clear()
    crawled(site, out, "-s", f"JOBDIR={jobdir}", validators=False)
    assert live_names(out) == {"index.html", "nf.html"}
    assert [path for path, *_ in site.asked if path != "/robots.txt"] == []


# What the page's answer says of nofollow, the kinds of note it speaks to, its note -> nofollow.
@pytest.mark.parametrize(
    ("said", "answered", "noted", "nofollow"),
    [
        (NOTE_KINDS, False, False, False),  # a whole answer without it
        (NOTE_KINDS, True, False, True),  # a whole answer saying it (noted or not)
        (NOTE_KINDS, True, True, True),
        (NOTE_KINDS, False, True, False),  # a whole answer no longer saying it: followed again
        (frozenset({ROBOTS, FOLLOW}), False, True, False),  # a 304 carrying X-Robots-Tag without it
        (frozenset({CHARSETS, TYPES}), False, True, True),  # a 304 without X-Robots-Tag: as noted
        (frozenset({CANONICAL}), False, False, False),
        (frozenset(), False, True, True),  # a kept copy, a page read back: as noted
        (frozenset(), True, False, True),  # its saved body's <meta> says it
        (frozenset(), False, False, False),  # not noted (a page directory made before the notes)
    ],
)
def test_page_nofollow(said, answered, noted, nofollow):
    assert page_nofollow(said, answered, noted) == nofollow


@given(said=st.frozensets(st.sampled_from(sorted(NOTE_KINDS))), answered=st.booleans(), noted=st.booleans())
def test_a_note_counts_only_where_the_answer_says_nothing_of_nofollow(said, answered, noted):
    result = page_nofollow(said, answered, noted)
    assert result >= answered  # what the answer says always holds
    assert page_nofollow(said, answered, False) == answered  # no note: as before the notes were kept
    if FOLLOW in said:
        assert result == answered  # an answer that speaks to it: the note is nothing
