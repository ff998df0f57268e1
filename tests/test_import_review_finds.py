"""``tse import`` on a reviewer's finds: records whose URL no page can have, URLs longer than a crawl
keeps, a full disk while the archives are read, passwords in long URLs and in the record, memory
bombs in headers and chunked bodies, HEAD responses, revisits of what is no page, WACZ members named
twice or after a damaged one.  Each archive is a real file written by warcio's WARCWriter (by hand,
raw, where warcio cannot write the damage); the import runs as a user runs it.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import resource
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from tests.conftest import ROOT, clean_env
from tests.support.inprocess import tse_here, tse_ok_here
from tests.test_import_hostile_records import HTML, page, page_files, said, write_warc


def tse_import_here(tmp_path: Path, *archives: Path, options: tuple = ()) -> tuple[list[str], int, Path]:
    """``tse import [OPTIONS] ARCHIVE... PAGEDIR`` in this process: its lines on stderr (no traceback, each
    readable), its exit status, and PAGEDIR."""
    pages = tmp_path / "pages"
    pages.mkdir()
    done = tse_here("import", *options, *archives, pages)
    return said(done), done.returncode, pages


def indexed(tmp_path: Path, pages: Path) -> None:
    """``tse index`` reads the imported directory without a failure."""
    tse_ok_here("index", pages, tmp_path / "index")


def test_records_whose_url_no_page_can_have_are_skipped_and_said(tmp_path):
    """A URL urlsplit refuses (``http://[e.com/a``), a port that is no port, no host, not http(s): each
    record skipped with a line, counted; the import (with --record) and ``tse index`` of it read the
    rest.  They were imported: ``tse index`` then failed with a traceback, ``--record`` the import itself."""
    bad = ["http://[e.com/a", "http://e.com:99999999999/b", "http:///c", "ftp://e.com/d"]
    archive = write_warc(
        tmp_path / "urls.warc.gz",
        [("http://e.com/", [HTML], page("good") + b'<a href="/x">x</a>')] + [(url, [HTML], page(url)) for url in bad],
    )
    lines, status, pages = tse_import_here(tmp_path, archive, options=("--record", tmp_path / "record.jsonl"))
    assert lines == [
        f"tse import: {archive}: http://[e.com/a: no URL can be made of it: skipped",
        f"tse import: {archive}: http://e.com:99999999999/b: no URL can be made of it: skipped",
        f"tse import: {archive}: http:///c: not an http(s) URL with a host: skipped",
        f"tse import: {archive}: ftp://e.com/d: not an http(s) URL with a host: skipped",
        "tse import: 1 page saved; 5 records read; 4 records skipped (no http(s) URL with a host)",
    ]
    assert status == 0
    assert list(page_files(pages)) == ["http://e.com/"]
    indexed(tmp_path, pages)


def test_urls_longer_than_a_crawl_keeps_are_skipped_and_no_link(tmp_path):
    """A record at a URL over 2,083 characters (a crawl's bound) is skipped with a line, counted, and a
    link that long is not followed; ``tse query`` reads the index.  A URL of 70,000 characters was
    imported, over what a page file's URL line may hold: ``tse query`` refused the index."""
    long_link = "http://e.com/" + "a" * 2071  # 2,084 characters
    longest = "http://e.com/" + "b" * 70_000
    kept = "http://e.com/" + "c" * 2070  # 2,083 characters: kept, and followed
    archive = write_warc(
        tmp_path / "long.warc.gz",
        [
            ("http://e.com/", [HTML], page("good") + f'<a href="{long_link}">x</a><a href="{kept}">y</a>'.encode()),
            (long_link, [HTML], page("long")),
            (longest, [HTML], page("longest")),
            (kept, [HTML], page("kept")),
        ],
    )
    record = tmp_path / "record.jsonl"
    lines, status, pages = tse_import_here(tmp_path, archive, options=("--record", record))
    assert lines == [
        f"tse import: {archive}: http://e.com/{'a' * 187}...: a URL of 2,084 characters, over 2,083: skipped",
        f"tse import: {archive}: http://e.com/{'b' * 187}...: a URL of 70,013 characters, over 2,083: skipped",
        "tse import: 2 pages saved; 4 records read; 2 records skipped (a URL over 2,083 characters)",
    ]
    assert status == 0
    assert list(page_files(pages)) == ["http://e.com/", kept]
    first = json.loads(record.read_text().splitlines()[0])
    assert first["links"] == [kept]
    indexed(tmp_path, pages)
    done = tse_here("query", pages, tmp_path / "index", input=b"good\n")
    assert done.returncode == 0, done.stderr.decode()
    assert b"http://e.com/" in done.stdout


def test_a_full_disk_while_the_archives_are_read_stops_the_import_blaming_no_archive(tmp_path):
    """Files bounded to 1 MB (``ulimit -f``): the spool of the pages read cannot hold the second page of
    800 KB.  One line saying so, exit status 1, nothing in PAGEDIR.  The archive was blamed ("c1.warc.gz:
    File too large"), and the pages read before were written, with ``.crawler``: as if finished."""
    big = [(f"http://e.com/{n}", [HTML], page(str(n)) + b"<p>%d</p>" % n * 100_000) for n in range(3)]
    archive = write_warc(tmp_path / "c1.warc.gz", big)
    assert archive.stat().st_size < 1 << 20
    pages = tmp_path / "pages"
    pages.mkdir()

    def bounded() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))

    done = subprocess.run(
        [sys.executable, "-m", "tse_scrapy.cli", "import", archive, pages],
        capture_output=True,
        env=clean_env(),
        cwd=ROOT,  # -m: this checkout's tse_scrapy first
        timeout=120,
        preexec_fn=bounded,
    )
    assert said(done) == [
        f"tse import: {pages}: File too large, writing the pages read from the archives: "
        "the import stopped, nothing written"
    ]
    assert done.returncode == 1
    assert os.listdir(pages) == []


def test_passwords_are_masked_in_messages_and_in_the_record(tmp_path):
    """A password longer than the 200 characters a message quotes of a URL is masked, not cut (cut
    first, the ``@`` the mask needs was gone: the password leaked); the record (``--record``, which
    ``tse report`` shows) masks a user's password and a query's (``password=``, ``api_key=``) in its
    URLs and links, as messages do: it wrote them raw."""
    secret = "hunter2" * 50  # 350 characters
    long_url = f"http://user:{secret}@e.com/" + "a" * 2100
    page_url = "http://bob:pagepw@e.com/p?api_key=k3yk3y"
    gone_url = "http://e.com/q?password=gonepw"
    with open(tmp_path / "secrets.warc.gz", "wb") as output:
        writer = WARCWriter(output, gzip=True)
        for url, status, body in [
            (long_url, "200 OK", page("long")),
            (
                page_url,
                "200 OK",
                page("page") + b'<a href="http://e.com/r?token=t0k3n">r</a><a href="/q?pass=1">q</a>',
            ),
            (gone_url, "404 Not Found", page("gone")),
        ]:
            http = StatusAndHeaders(status, [HTML], protocol="HTTP/1.1")
            writer.write_record(writer.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=http))
    record = tmp_path / "record.jsonl"
    lines, status, _ = tse_import_here(tmp_path, tmp_path / "secrets.warc.gz", options=("--record", record))
    assert status == 0
    assert lines[0].startswith(f"tse import: {tmp_path / 'secrets.warc.gz'}: http://user:***@e.com/aaa")
    assert "hunter2" not in "\n".join(lines)
    written = [json.loads(line) for line in record.read_text().splitlines()]
    assert [(line["url"], line["outcome"], line.get("links")) for line in written] == [
        (
            "http://bob:***@e.com/p?api_key=***",
            "saved",
            ["http://e.com/r?token=***", "http://bob:***@e.com/q?pass=***"],
        ),
        ("http://e.com/q?password=***", "failed", None),
    ]
    assert [word for word in ("pagepw", "k3yk3y", "t0k3n", "gonepw") if word in record.read_text()] == []


def import_measured(tmp_path: Path, archive: Path) -> tuple[list[str], int, Path, int]:
    """``tse import ARCHIVE PAGEDIR`` in a process of its own: its lines, exit status, PAGEDIR, and the
    most memory it held (its peak resident set size, VmHWM, in bytes: a forked process's ``ru_maxrss``
    starts at the test's own)."""
    pages = tmp_path / "pages"
    pages.mkdir()
    measured = (
        "import sys\n"
        "from tse_scrapy.cli import main\n"
        "status = main(sys.argv[1:])\n"
        "status_lines = open('/proc/self/status').read().splitlines()\n"
        "print(next(line.split()[1] for line in status_lines if line.startswith('VmHWM:')))\n"  # (in KB)
        "sys.exit(status)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", measured, "import", archive, pages],
        capture_output=True,
        env=clean_env(),
        cwd=ROOT,  # -c: this checkout's tse_scrapy first
        timeout=300,
    )
    return said(done), done.returncode, pages, int(done.stdout) * 1024


def test_link_and_x_robots_tag_headers_are_kept_bounded(tmp_path):
    """300 records of 840 KB of Link and X-Robots-Tag lines: the import holds under 100 MB (it kept every
    value: 240 MB, and 689 MB for the reviewer's); what the notes need of them is still read (a canonical
    Link among others, a noindex for this program after directives for another)."""
    with open(tmp_path / "headers.warc.gz", "wb") as output:
        writer = WARCWriter(output, gzip=True)
        for n in range(300):
            headers = [HTML]
            headers += [("Link", "<http://e.com/%s>; rel=preload" % (f"l{n}" * 10_000))] * 7
            headers += [("X-Robots-Tag", "googlebot: noindex, " + "x" * 60_000)] * 7
            if n == 0:
                headers += [
                    ("Link", "<http://e.com/canonical>; rel=canonical"),
                    ("X-Robots-Tag", "tse-scrapy: noindex"),
                ]
            http = StatusAndHeaders("200 OK", headers, protocol="HTTP/1.1")
            body = io.BytesIO(page(str(n)))
            writer.write_record(
                writer.create_warc_record(f"http://e.com/{n}", "response", payload=body, http_headers=http)
            )
    lines, status, pages, memory = import_measured(tmp_path, tmp_path / "headers.warc.gz")
    assert (lines, status) == (["tse import: 300 pages saved; 300 records read"], 0)
    assert memory < 100 * 1024 * 1024, f"{memory / 1024 / 1024:.0f} MB"
    assert (pages / ".tse-robots" / "import.tsv").read_text() == "http://e.com/0\tnoindex\n"
    assert (pages / ".tse-canonical" / "import.tsv").read_text() == "http://e.com/0\thttp://e.com/canonical\n"


def chunked_in(data: bytes, size: int) -> bytes:
    """*data* as a chunked body, in chunks of *size* bytes, the last chunk (0) ending it."""
    pieces = (data[start : start + size] for start in range(0, len(data), size))
    return b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in pieces) + b"0\r\n\r\n"


def test_chunked_bodies_of_millions_of_chunks_are_damaged_and_many_small_ones_gathered(tmp_path):
    """Two million chunks of a byte: a damaged body (past 262,144 chunks), one line, the import in
    under 100 MB (it took each chunk as a piece: 379 MB and 30 s for 4 million); 200,000 chunks of 10
    bytes make their page whole; the record after them is read."""
    small = page("small") + b"<p>" + b"0123456789" * 200_000 + b"</p>"
    archive = write_warc(
        tmp_path / "chunks.warc.gz",
        [
            ("http://e.com/bytes", [HTML, ("Transfer-Encoding", "chunked")], chunked_in(b"x" * 2_000_000, 1)),
            ("http://e.com/small", [HTML, ("Transfer-Encoding", "chunked")], chunked_in(small, 10)),
            ("http://e.com/after", [HTML], page("after")),
        ],
    )
    lines, status, pages, memory = import_measured(tmp_path, archive)
    assert lines == [
        f"tse import: {archive}: the record for http://e.com/bytes: "
        "a damaged chunked body (more than 262,144 chunks), not taken",
        "tse import: 2 pages saved; 3 records read; 1 damaged payload not taken",
    ]
    assert status == 1
    assert memory < 100 * 1024 * 1024, f"{memory / 1024 / 1024:.0f} MB"
    assert page_files(pages) == {"http://e.com/small": small, "http://e.com/after": page("after")}


def exchange(
    writer: WARCWriter, url: str, method: str, status: str, headers: list, body: bytes, *, request_first: bool
):
    """A response to a *method* request of *url* and that request, linked by WARC-Concurrent-To as
    archivers link them: the request first, the response naming it (wget), or the response first, the
    request naming it (Heritrix, Browsertrix)."""
    http = StatusAndHeaders(status, headers, protocol="HTTP/1.1")
    response = writer.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=http)
    path = url.split("/", 3)[3]
    asked = StatusAndHeaders(f"{method} /{path} HTTP/1.1", [("Host", "e.com")], is_http_request=True)
    request = writer.create_warc_record(url, "request", payload=io.BytesIO(b""), http_headers=asked)
    if request_first:
        response.rec_headers.add_header("WARC-Concurrent-To", request.rec_headers.get_header("WARC-Record-ID"))
        writer.write_record(request)
        writer.write_record(response)
    else:
        request.rec_headers.add_header("WARC-Concurrent-To", response.rec_headers.get_header("WARC-Record-ID"))
        writer.write_record(response)
        writer.write_record(request)


def test_answers_to_head_requests_never_replace_a_page(tmp_path):
    """A page fetched with GET, then with HEAD (its answer archived with no payload, no Content-Length:
    only the request says it is a HEAD's): the GET's page stays, whether the HEAD request is written
    after its answer or before it; and an empty payload whose Content-Length says 48 bytes (the
    reviewer's HEAD answer, with no request) never replaces a page either.  The empty answers replaced
    the pages."""
    archive = tmp_path / "head.warc.gz"
    with open(archive, "wb") as output:
        writer = WARCWriter(output, gzip=True)
        for url in ("http://e.com/a", "http://e.com/b", "http://e.com/c"):
            exchange(writer, url, "GET", "200 OK", [HTML], page(url), request_first=False)
        said_length = [HTML, ("Content-Length", "48")]
        exchange(writer, "http://e.com/a", "HEAD", "200 OK", [HTML], b"", request_first=False)
        exchange(writer, "http://e.com/b", "HEAD", "200 OK", [HTML], b"", request_first=True)
        http = StatusAndHeaders("200 OK", said_length, protocol="HTTP/1.1")
        writer.write_record(
            writer.create_warc_record("http://e.com/c", "response", payload=io.BytesIO(b""), http_headers=http)
        )
    lines, status, pages = tse_import_here(tmp_path, archive)
    assert lines == [
        "tse import: 3 pages saved; 11 records read; "
        "3 empty answers skipped (a HEAD request's, or its Content-Length says more)"
    ]
    assert status == 0
    assert page_files(pages) == {url: page(url) for url in ("http://e.com/a", "http://e.com/b", "http://e.com/c")}


def test_revisits_of_what_is_no_page_are_skipped_not_missing(tmp_path):
    """Revisits of an image (by digest), of robots.txt (a 304, by URL and date), of a PDF imported
    without --pdf (no type of its own), of a stylesheet read after its revisit, and a 200 revisit whose
    own type is an image's (its record in no archive): no page, and not missing: skipped, counted apart.
    They were all "not found", which the docs explain as archives missing (give the earlier archives
    too).  A page's revisit is resolved, and one of a page in no archive still not found."""
    archive = tmp_path / "revisits.warc.gz"
    with open(archive, "wb") as output:
        writer = WARCWriter(output, gzip=True)

        def response(url: str, content_type: str, body: bytes) -> str:
            http = StatusAndHeaders("200 OK", [("Content-Type", content_type)], protocol="HTTP/1.1")
            said = {"WARC-Date": "2026-01-02T00:00:00Z"}
            done = writer.create_warc_record(
                url, "response", payload=io.BytesIO(body), http_headers=http, warc_headers_dict=said
            )
            writer.write_record(done)
            return done.rec_headers.get_header("WARC-Payload-Digest")

        def revisit(url: str, digest: str, status: str, headers: list, refers: tuple | None = None) -> None:
            """A revisit record referring to *refers* (URL and date), or by its payload *digest* alone."""
            http = StatusAndHeaders(status, headers, protocol="HTTP/1.1")
            done = writer.create_revisit_record(url, digest, *(refers or ("", "")), http_headers=http)
            if refers is None:
                done.rec_headers.remove_header("WARC-Refers-To-Target-URI")
                done.rec_headers.remove_header("WARC-Refers-To-Date")
            writer.write_record(done)

        image = response("http://e.com/i.png", "image/png", b"\x89PNG\r\n\x1a\n" + bytes(100))
        revisit("http://e.com/i.png", image, "200 OK", [])
        response("http://e.com/robots.txt", "text/plain", b"User-agent: *\nDisallow:\n")
        referred = ("http://e.com/robots.txt", "2026-01-02T00:00:00Z")  # (its digest no record's)
        revisit("http://e.com/robots.txt", "sha1:" + "D" * 32, "304 Not Modified", [], refers=referred)
        pdf = response("http://e.com/d.pdf", "application/pdf", b"%PDF-1.4\n%%EOF\n")
        revisit("http://e.com/d.pdf", pdf, "200 OK", [])
        css = b"p { color: red }"  # (its record written after its revisit; its digest as WARC writers write it)
        stylesheet = "sha1:" + base64.b32encode(hashlib.sha1(css).digest()).decode()
        revisit("http://e.com/s.css", stylesheet, "200 OK", [])
        revisit("http://e.com/gone.gif", "sha1:" + "B" * 32, "200 OK", [("Content-Type", "image/gif")])
        home = response("http://e.com/", "text/html", page("home"))
        revisit("http://e.com/", home, "200 OK", [HTML])
        revisit("http://e.com/missing", "sha1:" + "C" * 32, "200 OK", [HTML])
        assert response("http://e.com/s.css", "text/css", css) == stylesheet
    lines, status, pages = tse_import_here(tmp_path, archive)
    assert lines == [
        "tse import: 1 page saved; 12 records read; 1 earlier capture replaced; 1 revisit resolved, 1 not found; "
        "5 revisits of no page skipped"
    ]
    assert status == 0
    assert page_files(pages) == {"http://e.com/": page("home")}


def test_wacz_members_are_each_read_once_and_past_a_bad_one(tmp_path):
    """A WACZ holding archive/x.warc.gz twice (two entries of one name: a WACZ appended to), then a member
    that is no WARC, then another WARC: each entry read once, in its place, the bad member said in one
    line and the WARC after it read.  The second x.warc.gz was read twice and the first never, and
    nothing after the bad member was read."""
    warcs = {
        name: write_warc(tmp_path / f"{name}.warc.gz", [(f"http://e.com/{name}", [HTML], page(name))])
        for name in ("first", "second", "last")
    }
    wacz = tmp_path / "site.wacz"
    with zipfile.ZipFile(wacz, "w") as archive, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # zipfile's "Duplicate name": what is tested
        archive.writestr("archive/x.warc.gz", warcs["first"].read_bytes())
        archive.writestr("archive/x.warc.gz", warcs["second"].read_bytes())
        archive.writestr("archive/y.warc.gz", b"no WARC at all\n" * 10)
        archive.writestr("archive/z.warc.gz", warcs["last"].read_bytes())
    lines, status, pages = tse_import_here(tmp_path, wacz)
    assert lines == [
        f"tse import: {wacz}: archive/y.warc.gz: not a WARC file",
        "tse import: 3 pages saved; 3 records read; 1 archive not read to the end",
    ]
    assert status == 1
    assert page_files(pages) == {f"http://e.com/{name}": page(name) for name in ("first", "second", "last")}
    assert list(page_files(pages)) == ["http://e.com/first", "http://e.com/second", "http://e.com/last"]
