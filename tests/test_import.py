"""``tse import``: web archives written by wget and by ``tse crawl --warc`` become page directories
that ``tse index`` and ``tse query`` search; bad archives give one line and keep what was imported.

The site is the real Debian Reference (package debian-reference-en: its HTML pages and its PDF
manual), served by nginx on 127.0.0.1; the archives are made by running wget and tse crawl on it.
Robots directives are checked on a small site served here, whose answers set X-Robots-Tag headers.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import re
import shutil
import subprocess
import threading
import zipfile
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from tests.conftest import clean_env, run_tse
from tests.support.inprocess import tse_ok_here
from tests.support.pdfs import pages_pdf, stream
from tests.support.sitecrawl import query_answers
from tse_scrapy.webarchive import reader
from tse_scrapy.webarchive.importer import import_archives

MANUAL = Path("/usr/share/debian-reference")  # debian-reference-en
PDF_MANUAL = MANUAL / "debian-reference.en.pdf"
WGET = ("wget", "-r", "-l", "2", "--no-parent", "-q", "--no-proxy", "-e", "robots=off")
START = ("index.en.html", "manual.pdf")

pytestmark = pytest.mark.skipif(
    not (MANUAL / "index.en.html").is_file() or shutil.which("wget") is None,
    reason="debian-reference-en or wget is missing (make test installs them)",
)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The manual served by nginx, for the whole module (wget and the crawls only read it)."""
    from tests.support.nginxserver import NginxServer, nginx_binary

    if nginx_binary() is None:
        pytest.skip("nginx is not installed (make test installs it)")
    site = tmp_path_factory.mktemp("site")
    for page in MANUAL.glob("*.en.html"):
        shutil.copy(page, site / page.name)
    shutil.copy(PDF_MANUAL, site / "manual.pdf")
    (site / "robots.txt").write_text("User-agent: *\nDisallow:\n")
    server = NginxServer(tmp_path_factory.mktemp("hosts"), tmp_path_factory.mktemp("nginx"), origin=site).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def wget_warc(served, tmp_path_factory):
    """A WARC written by wget -r (its own format: WARC/1.0, gzipped records, request records)."""
    work = tmp_path_factory.mktemp("wget")
    done = subprocess.run(
        [
            *WGET,
            "-P",
            str(work / "files"),
            "--warc-file",
            str(work / "site"),
            *(f"{served.url}/{name}" for name in START),
        ],
        env=clean_env(),
        capture_output=True,
        timeout=120,
    )
    assert done.returncode in (0, 8), done.stderr.decode()[-2000:]
    return work / "site.warc.gz"


def archived_pages(path: Path, types=("text/html",)) -> dict[str, bytes]:
    """The test's own reading: each 200 response of *types* in the archive, URL -> decoded payload."""
    found: dict[str, bytes] = {}
    with open(path, "rb") as stream:
        for record in ArchiveIterator(stream):
            if record.rec_type != "response" or record.http_headers.get_statuscode() != "200":
                continue
            kind = (record.http_headers.get_header("Content-Type") or "").split(";")[0].strip()
            if kind in types:
                url = record.rec_headers.get_header("WARC-Target-URI").strip("<>")
                found[url] = record.content_stream().read()
    return found


def page_files(pages: Path) -> dict[str, tuple[int, bytes]]:
    """URL -> (depth, bytes) of every page file 1, 2, ...; a URL twice fails."""
    found: dict[str, tuple[int, bytes]] = {}
    doc_id = 1
    while (pages / str(doc_id)).is_file():
        url, depth, body = (pages / str(doc_id)).read_bytes().split(b"\n", 2)
        assert url.decode() not in found, f"{url} twice"
        assert body.endswith(b"\n")  # SPEC 2: the page, then a newline
        found[url.decode()] = (int(depth), body[:-1])
        doc_id += 1
    assert not any(p.name.isdigit() and int(p.name) >= doc_id for p in pages.iterdir())
    return found


def imported(tmp_path: Path, *archives, options=()) -> tuple[subprocess.CompletedProcess, Path]:
    pages = tmp_path / "pages"
    pages.mkdir(exist_ok=True)
    return run_tse("import", *options, *archives, pages), pages


def one_line_failure(result: subprocess.CompletedProcess) -> list[str]:
    err = result.stderr.decode()
    assert "Traceback" not in err
    return [line for line in err.splitlines() if line]


@pytest.fixture(scope="module")
def wget_imported(wget_warc, tmp_path_factory):
    """`tse import` of wget_warc, run once for the tests that only read its result and pages."""
    return imported(tmp_path_factory.mktemp("wget-imported"), wget_warc)


def test_a_wget_warc_imports_to_exactly_its_200_html_responses(wget_warc, wget_imported):
    expected = archived_pages(wget_warc)
    assert len(expected) >= 12  # the manual's pages wget reached, none twice
    result, pages = wget_imported
    assert result.returncode == 0, result.stderr.decode()
    assert result.stderr.decode().startswith(f"tse import: {len(expected)} pages saved")
    found = page_files(pages)
    assert {url: body for url, (_, body) in found.items()} == expected
    assert (pages / ".crawler").is_file()
    assert not [p for p in pages.iterdir() if p.name.startswith(".tse-import")]  # the spool is gone
    # Depths: the first page archived is the root; the others are one link from it.
    depths = {url.rsplit("/", 1)[1]: depth for url, (depth, _) in found.items()}
    assert depths["index.en.html"] == 0
    assert {depth for name, depth in depths.items() if name != "index.en.html"} == {1}


def test_imported_pages_are_found_by_their_titles_and_reported(wget_warc, tmp_path):
    record = tmp_path / "import.jsonl"
    result, pages = imported(tmp_path, wget_warc, options=("--record", record))
    assert result.returncode == 0
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    saved = len(archived_pages(wget_warc))
    assert sorted(line["doc"] for line in lines if line["outcome"] == "saved") == list(range(1, saved + 1))
    assert all(line["start"] > 1.5e9 for line in lines)  # the times the archive says
    said = tse_ok_here("report", record, "--out", tmp_path / "report.html")  # (the record's reader: in process)
    assert str(saved) in said and (tmp_path / "report.html").stat().st_size > 1000
    index = tmp_path / "index"
    tse_ok_here("index", pages, index)  # (set-up: in this process)
    titles = {}
    for url, (_, body) in page_files(pages).items():
        titles[url] = re.search(rb"<title>(.*?)</title>", body, re.S).group(1).decode().strip()
    urls = list(titles)
    answers = query_answers(pages, index, [titles[url] for url in urls], "relevance")
    ranks = [[answer_url for _, answer_url in answer].index(url) + 1 for url, answer in zip(urls, answers, strict=True)]
    mrr = sum(1 / rank for rank in ranks) / len(ranks)
    assert mrr >= 0.9, list(zip(titles.values(), ranks, strict=True))


def test_with_pdf_the_pdf_is_imported_and_its_text_searched(wget_warc, tmp_path):
    result, pages = imported(tmp_path, wget_warc, options=("--pdf",))
    assert result.returncode == 0, result.stderr.decode()
    assert f"{len(archived_pages(wget_warc)) + 1} pages saved (1 PDF)" in result.stderr.decode()
    found = page_files(pages)
    pdf_url = next(url for url in found if url.endswith("/manual.pdf"))
    assert found[pdf_url][1] == PDF_MANUAL.read_bytes()
    assert found[pdf_url][0] == 0  # no page links to it: an entry point of its own
    index = tmp_path / "index"
    tse_ok_here("index", pages, index)  # (set-up: in this process)
    # Words of the PDF's own text (its colophon), found by tse query in the SPEC index.
    (answer,) = query_answers(pages, index, ["osamu aoki"], "tse")
    assert pdf_url in [url for _, url in answer]


def test_a_tse_crawl_warc_imports_to_the_crawls_own_pages(served, tmp_path):
    crawl = tmp_path / "crawl"
    crawl.mkdir()
    warc = tmp_path / "crawl.warc.gz"
    done = run_tse(
        "crawl", f"{served.url}/index.en.html", crawl, "2", "--prefix", f"{served.url}/", "--warc", warc,
        "-s", "DOWNLOAD_DELAY=0",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    result, pages = imported(tmp_path, warc)
    assert result.returncode == 0, result.stderr.decode()
    crawled = sorted(p.name for p in crawl.iterdir() if p.name.isdigit())
    assert sorted(p.name for p in pages.iterdir() if p.name.isdigit()) == crawled
    for name in crawled:  # the same docIDs, URLs, depths and bytes
        assert (pages / name).read_bytes() == (crawl / name).read_bytes(), name

    # An update with nothing changed archives revisit records (304: server not modified), resolved
    # to the first archive's records; alone, they refer to records it does not hold.
    second = tmp_path / "update.warc.gz"
    done = run_tse(
        "crawl", f"{served.url}/index.en.html", crawl, "2", "--prefix", f"{served.url}/", "--warc", second,
        "--update", "-s", "DOWNLOAD_DELAY=0",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    both = tmp_path / "both"
    both.mkdir()
    result, pages = imported(both, warc, second)
    assert result.returncode == 0, result.stderr.decode()
    said = result.stderr.decode()
    assert re.search(rf"\b{len(crawled)} revisits resolved, 0 not found", said), said
    for name in crawled:
        assert (pages / name).read_bytes() == (crawl / name).read_bytes(), name
    alone = tmp_path / "alone"
    alone.mkdir()
    result, pages = imported(alone, second)
    assert result.returncode == 1  # no page to import: nothing written, the directory left empty
    assert "0 pages saved" in result.stderr.decode() and f"{len(crawled)} not found" in result.stderr.decode()
    assert list(pages.iterdir()) == []


def test_plain_warc_and_wacz_import_as_the_gzipped_warc(wget_warc, wget_imported, tmp_path):
    expected = page_files(wget_imported[1])
    plain = tmp_path / "site.warc"
    plain.write_bytes(gzip.decompress(wget_warc.read_bytes()))  # every member inflated: a plain WARC
    wacz = tmp_path / "site.wacz"
    with zipfile.ZipFile(wacz, "w") as archive:
        archive.write(wget_warc, "archive/data.warc.gz")
        archive.writestr("datapackage.json", json.dumps({"resources": [{"path": "archive/data.warc.gz"}]}))
        archive.writestr("pages/pages.jsonl", "")
    whole = tmp_path / "whole.warc.gz"  # gzipped as one member, as `gzip site.warc` makes it
    whole.write_bytes(gzip.compress(plain.read_bytes()))
    ended = tmp_path / "ended.warc.gz"  # an empty gzip member at the end, as a BGZF end block
    ended.write_bytes(wget_warc.read_bytes() + gzip.compress(b""))
    for name, archive in (("plain", plain), ("wacz", wacz), ("gzipped-whole", whole), ("empty-member-last", ended)):
        (tmp_path / name).mkdir()
        result, pages = imported(tmp_path / name, archive)
        assert result.returncode == 0, result.stderr.decode()
        assert page_files(pages) == expected, name


def response_starts(archive: Path) -> list[int]:
    """Where each response record of *archive* starts in it (warcio's offsets)."""
    with open(archive, "rb") as stream:
        records = ArchiveIterator(stream)
        return [records.get_record_offset() for record in records if record.rec_type == "response"]


@pytest.mark.parametrize(
    ("form", "past"),
    [
        ("gzipped", 600),
        ("gzipped", 10),
        ("plain", 600),
        ("plain", 20),
        ("gzipped-whole", 600),
        ("gzipped-whole", 20),
        ("wacz", 10),
    ],
    ids=[
        "in-a-payload",
        "in-a-gzip-member-header",
        "plain-in-a-payload",
        "plain-in-warc-headers",
        "gzipped-whole",
        "gzipped-whole-in-warc-headers",
        "a-wacz-member",
    ],
)
def test_a_truncated_archive_keeps_what_was_imported(wget_warc, tmp_path, form, past):
    expected = archived_pages(wget_warc)
    archive = tmp_path / f"site.{form}"
    gzipped = form in ("gzipped", "wacz")
    archive.write_bytes(wget_warc.read_bytes() if gzipped else gzip.decompress(wget_warc.read_bytes()))
    # Cut inside the 8th response record, *past* bytes after its start.
    end = response_starts(archive)[7] + past
    data = archive.read_bytes()
    if form == "gzipped-whole":  # one gzip member, cut where it has given the plain file's first *end* bytes
        deflate = zlib.compressobj(wbits=31)
        first = deflate.compress(data[:end]) + deflate.flush(zlib.Z_SYNC_FLUSH)
        data = first + deflate.compress(data[end:]) + deflate.flush()
        end = len(first)
    cut = tmp_path / "cut.warc"
    cut.write_bytes(data[:end])
    if form == "wacz":  # the cut WARC inside a whole zip file
        cut = tmp_path / "cut.wacz"
        with zipfile.ZipFile(cut, "w", zipfile.ZIP_DEFLATED) as wacz:
            wacz.writestr("archive/data.warc.gz", data[:end])
    result, pages = imported(tmp_path, cut)
    assert result.returncode == 1
    lines = one_line_failure(result)
    # A record cut in its WARC headers reads as one without Content-Length: "damaged at record N".
    assert len(lines) == 2 and str(cut) in lines[0] and re.search(r": (cut short|damaged at record)", lines[0]), lines
    assert lines[1].startswith("tse import: ") and lines[1].endswith("; 1 archive not read to the end")
    found = page_files(pages)
    assert 0 < len(found) < len(expected)
    assert all(expected[url] == body for url, (_, body) in found.items())


def damaged_inside_its_largest_member(data: bytes) -> bytes:
    """*data* (a WARC gzipped record by record) with 64 bytes in the middle of its largest gzip member
    damaged: past the member's first read, where warcio writes the error on stderr and reads on."""
    members = []
    for found in re.finditer(b"\x1f\x8b\x08", data):
        inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
        with contextlib.suppress(zlib.error):
            inflate.decompress(data[found.start() :])
            if inflate.eof:
                members.append((len(data) - found.start() - len(inflate.unused_data), found.start()))
    size, start = max(members)
    middle = start + size // 2
    return data[:middle] + bytes(b ^ 0x5A for b in data[middle : middle + 64]) + data[middle + 64 :]


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (lambda data: b"just some text, no archive\n" * 10, "not a WARC file"),
        (lambda data: data[:5000] + bytes(b ^ 0x5A for b in data[5000:5400]) + data[5400:], "damaged"),
        (damaged_inside_its_largest_member, "damaged"),
        (lambda data: b"", "not a WARC file"),
    ],
    ids=["not-a-warc", "corrupt-gzip", "damaged-inside-a-member", "empty"],
)
def test_a_bad_archive_is_one_line(wget_warc, tmp_path, damage, said):
    bad = tmp_path / "bad.warc.gz"
    bad.write_bytes(damage(wget_warc.read_bytes()))
    result, pages = imported(tmp_path, bad, wget_warc)  # the good one after it is still imported
    assert result.returncode == 1
    lines = one_line_failure(result)
    assert said in lines[0] and str(bad) in lines[0], lines
    assert len(lines) == 2 and lines[1].startswith("tse import: "), lines  # nothing else on stderr
    assert len(page_files(pages)) == len(archived_pages(wget_warc))


def test_a_file_that_holds_no_page_writes_nothing_so_the_import_can_be_tried_again(wget_warc, tmp_path):
    # A newcomer's slip: `tse import README.md imp` wrote imp/.crawler with no page, and the import of
    # the right archive into imp was then refused ("already holds a crawl's or an import's files").
    readme = tmp_path / "README.md"
    readme.write_text("# A project\n\nSome words.\n")
    result, pages = imported(tmp_path, readme)
    assert result.returncode == 1
    lines = one_line_failure(result)
    assert lines[0] == f"tse import: {readme}: not a WARC file", lines
    assert lines[1].startswith("tse import: 0 pages saved") and lines[1].endswith("nothing written (no page to import)")
    assert list(pages.iterdir()) == []
    result, pages = imported(tmp_path, wget_warc)
    assert result.returncode == 0, result.stderr.decode()
    assert len(page_files(pages)) == len(archived_pages(wget_warc))


def test_refused_page_directories_and_missing_archives(wget_warc, tmp_path):
    missing = run_tse("import", wget_warc, tmp_path / "nowhere")
    assert missing.returncode == 2 and one_line_failure(missing) == [
        f"tse import: {tmp_path / 'nowhere'} is not a directory (make an empty one first, as for tse crawl)"
    ]
    full = tmp_path / "full"
    full.mkdir()
    (full / "1").write_bytes(b"http://x/\n0\nkept")
    result = run_tse("import", wget_warc, full)
    assert result.returncode == 2 and len(one_line_failure(result)) == 1
    assert (full / "1").read_bytes() == b"http://x/\n0\nkept"
    assert sorted(p.name for p in full.iterdir()) == ["1"]
    # An archive that cannot be read is a bad argument: refused before anything is written.
    result, pages = imported(tmp_path, tmp_path / "absent.warc.gz", wget_warc)
    assert result.returncode == 2
    assert one_line_failure(result) == [
        f"tse import: cannot read {tmp_path / 'absent.warc.gz'}: No such file or directory"
    ]
    assert list(pages.iterdir()) == []


def http_response(status: str, headers: list[tuple[str, str]], body: bytes) -> tuple[StatusAndHeaders, bytes]:
    return StatusAndHeaders(status, headers, protocol="HTTP/1.1"), body


def write_warc(path: Path, records: list[tuple[str, str, StatusAndHeaders, bytes, dict]]) -> None:
    """Write WARC records (type, URL, HTTP headers, the payload as sent, WARC headers) with warcio."""
    with open(path, "wb") as output:
        writer = WARCWriter(output, gzip=True)
        for kind, url, http, payload, warc_headers in records:
            record = writer.create_warc_record(
                url, kind, payload=io.BytesIO(payload), http_headers=http, warc_headers_dict=warc_headers
            )
            writer.write_record(record)


def chunked(data: bytes, size: int = 7) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(data[i : i + size]), data[i : i + size]) for i in range(0, len(data), size))


def test_codings_revisits_redirects_and_captures(tmp_path):
    page = "<html><head><title>Café</title></head><body><a href='/b'>b</a> <a href='/old'>c</a></body></html>"
    encoded = page.encode("utf-8")
    gzipped = gzip.compress(encoded)
    html = [("Content-Type", "text/html; charset=utf-8")]
    records = [
        # Chunked and gzipped: the page file holds the page as written.
        ("response", "http://site.test/", *http_response(
            "200 OK", [*html, ("Content-Encoding", "gzip"), ("Transfer-Encoding", "chunked")], chunked(gzipped)
        ), {}),
        ("response", "http://site.test/b", *http_response("200 OK", html, b"<title>first b</title>"), {}),
        ("response", "http://site.test/img.png", *http_response("200 OK", [("Content-Type", "image/png")], b"x"), {}),
        # A redirect: the link to /old lands on /c.
        ("response", "http://site.test/old", *http_response("301 Moved", [("Location", "/c")], b""), {}),
        ("response", "http://site.test/c", *http_response("200 OK", [], b"<!doctype html><title>c</title>"), {}),
        ("response", "http://site.test/gone", *http_response("404 Not Found", html, b"<title>no</title>"), {}),
        # /b again, later: its last capture is the page, in its first capture's place.
        ("response", "http://SITE.test//b", *http_response("200 OK", html, b"<title>last b</title>"), {}),
        # Not linked from anywhere: its own part, depth 0.
        ("response", "http://site.test/alone", *http_response("200 OK", html, b"<title>alone</title>"), {}),
    ]  # fmt: skip
    warc = tmp_path / "made.warc.gz"
    write_warc(warc, records)
    # A revisit of /c under another URL (identical payload digest), in a second archive.
    with open(warc, "rb") as stream:
        digest = next(
            r.rec_headers.get_header("WARC-Payload-Digest")
            for r in ArchiveIterator(stream)
            if r.rec_headers.get_header("WARC-Target-URI") == "http://site.test/c"
        )
    revisit = tmp_path / "revisit.warc.gz"
    write_warc(revisit, [
        ("revisit", "http://site.test/copy-of-c", StatusAndHeaders("200 OK", [], protocol="HTTP/1.1"), b"",
         {"WARC-Payload-Digest": digest, "WARC-Profile":
          "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"}),
        ("revisit", "http://site.test/unknown", StatusAndHeaders("200 OK", [], protocol="HTTP/1.1"), b"",
         {"WARC-Payload-Digest": "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}),
    ])  # fmt: skip
    pages = tmp_path / "pages"
    pages.mkdir()
    summary = import_archives([str(warc), str(revisit)], str(pages))
    assert (summary.revisits, summary.unresolved, summary.recaptured) == (1, 1, 1)
    found = page_files(pages)
    assert list(found) == [
        "http://site.test/",
        "http://SITE.test//b",
        "http://site.test/c",
        "http://site.test/alone",
        "http://site.test/copy-of-c",
    ]
    assert found["http://site.test/"] == (0, encoded)
    assert found["http://SITE.test//b"] == (1, b"<title>last b</title>")
    assert found["http://site.test/c"] == (1, b"<!doctype html><title>c</title>")
    assert found["http://site.test/alone"] == (0, b"<title>alone</title>")
    assert found["http://site.test/copy-of-c"] == (0, b"<!doctype html><title>c</title>")
    assert (pages / ".tse-charsets" / "import.tsv").read_text().splitlines()[0] == "http://site.test/\tutf-8"


def test_a_revisit_under_another_url_links_from_its_own_url(tmp_path):
    """The same bytes under /y/ (an identical-payload-digest revisit of /x/page.html): its relative
    links are resolved against /y/page.html, as a browser there resolves them."""
    html = [("Content-Type", "text/html")]
    page = b"<title>page</title><a href='deep.html'>deeper</a>"
    warc = tmp_path / "moved.warc.gz"
    write_warc(warc, [("response", "http://site.test/x/page.html", *http_response("200 OK", html, page), {})])
    with open(warc, "rb") as stream:
        digest = next(ArchiveIterator(stream)).rec_headers.get_header("WARC-Payload-Digest")
    more = tmp_path / "more.warc.gz"
    write_warc(more, [
        ("revisit", "http://site.test/y/page.html", StatusAndHeaders("200 OK", html, protocol="HTTP/1.1"), b"",
         {"WARC-Payload-Digest": digest}),
        ("response", "http://site.test/y/deep.html", *http_response("200 OK", html, b"<title>deep</title>"), {}),
    ])  # fmt: skip
    pages = tmp_path / "pages"
    pages.mkdir()
    import_archives([str(warc), str(more)], str(pages))
    # /x/page.html links to /x/deep.html (not archived); /y/page.html, reached by no link, starts a
    # part of its own, and its link lands on /y/deep.html, one deeper.
    assert {url: depth for url, (depth, _) in page_files(pages).items()} == {
        "http://site.test/x/page.html": 0,
        "http://site.test/y/page.html": 0,
        "http://site.test/y/deep.html": 1,
    }


def test_a_payload_over_the_bound_is_skipped_unread(tmp_path, monkeypatch):
    monkeypatch.setattr(reader, "MAX_PAYLOAD_BYTES", 1000)
    html = [("Content-Type", "text/html")]
    warc = tmp_path / "big.warc.gz"
    write_warc(warc, [
        ("response", "http://site.test/big", *http_response("200 OK", html, b"<html>" + b"x" * 5000), {}),
        # A gzip bomb: 10 MB of zeros in 10 KB; never inflated past the bound.
        ("response", "http://site.test/bomb", *http_response(
            "200 OK", [*html, ("Content-Encoding", "gzip")], gzip.compress(bytes(10_000_000))), {}),
        ("response", "http://site.test/small", *http_response("200 OK", html, b"<html>small"), {}),
    ])  # fmt: skip
    pages = tmp_path / "pages"
    pages.mkdir()
    said = []
    summary = import_archives([str(warc)], str(pages), warn=said.append)
    assert summary.oversized == 2 and len(said) == 2 and "over the size bound" in said[0]
    assert list(page_files(pages)) == ["http://site.test/small"]


WARC_HEAD = "WARC/1.0\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:{n}>\r\nWARC-Date: 2026-12-01T00:00:00Z\r\n"
HTTP_PAGE = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<title>{title}</title>"


def raw_record(
    n: int,
    url: str | None,
    title: str,
    *,
    length: bool = True,
    status: bytes = b"200 OK",
    warc_header: str = "",
    http_header: bytes = b"",
) -> bytes:
    """A plain WARC record written by hand (warcio's writer always writes what a damaged one lacks),
    with *warc_header* and *http_header* lines added."""
    block = HTTP_PAGE.replace(b"200 OK", status).replace(b"{title}", title.encode())
    block = block.replace(b"\r\n\r\n", b"\r\n" + http_header + b"\r\n", 1)
    head = WARC_HEAD.format(n=n) + warc_header + "Content-Type: application/http; msgtype=response\r\n"
    if url is not None:
        head += f"WARC-Target-URI: {url}\r\n"
    if length:
        head += f"Content-Length: {len(block)}\r\n"
    return head.encode() + b"\r\n" + block + b"\r\n\r\n"


@pytest.mark.parametrize(
    ("bad", "said"),
    [
        (raw_record(2, "http://site.test/b", "b", length=False), "without a Content-Length"),
        # Cut just after the header's name: "Content-Length:" with no number.
        (raw_record(2, "http://site.test/b", "b", length=False, warc_header="Content-Length: \r\n"), "without a"),
        (raw_record(2, None, "b"), "damaged"),
        # Header lines are kept whole by warcio: a hostile line, or lines, past 1 MB stop the reading.
        (
            raw_record(2, "http://site.test/b", "b", warc_header="X-Long: " + "a" * 3_000_000 + "\r\n"),
            "header lines of more",
        ),
        (raw_record(2, "http://site.test/b", "b", http_header=b"X-A: b\r\n" * 300_000), "header lines of more"),
    ],
    ids=[
        "no-content-length",
        "an-empty-content-length",
        "no-target-uri",
        "an-endless-warc-header-line",
        "endless-http-header-lines",
    ],
)
def test_hand_made_damage_is_one_line_and_keeps_the_records_before(tmp_path, bad, said):
    warc = tmp_path / "hand.warc"
    warc.write_bytes(raw_record(1, "http://site.test/a", "first") + bad + raw_record(3, "http://site.test/c", "c"))
    result, pages = imported(tmp_path, warc)
    assert result.returncode == 1
    lines = one_line_failure(result)
    assert said in lines[0] and len(lines) == 2, lines
    assert page_files(pages) == {"http://site.test/a": (0, b"<title>first</title>")}


def test_odd_but_whole_archives_import(tmp_path):
    """A Location no URL can be made of, a target URI that is no URL, and a zip file's end marker
    inside a record of a plain WARC: imported, no traceback; the record at no URL skipped, with a line
    (``tse index`` failed on its page)."""
    zip_tail = io.BytesIO()
    with zipfile.ZipFile(zip_tail, "w") as inner:
        inner.writestr("x.txt", "x")
    warc = tmp_path / "odd.warc"
    warc.write_bytes(
        raw_record(1, "http://site.test/a", "first")
        + raw_record(2, "http://site.test/r", "moved", status=b"302 Found").replace(
            b"Content-Type: text/html", b"Location: http://[oops/"
        )
        + raw_record(3, "http://[oops/", "no url")
        + raw_record(4, "http://site.test/z", zip_tail.getvalue().decode("latin-1"))
    )
    result, pages = imported(tmp_path, warc)
    assert "Traceback" not in result.stderr.decode()
    assert result.returncode == 0, result.stderr.decode()
    assert set(page_files(pages)) == {"http://site.test/a", "http://site.test/z"}
    assert f"{warc}: http://[oops/: no URL can be made of it: skipped" in result.stderr.decode()


def word_pdf(word: str) -> bytes:
    return pages_pdf([4], [stream(b"BT /F1 12 Tf 72 720 Td (%s zebracorn) Tj ET" % word.encode())])


PDF_TYPE = ("Content-Type", "application/pdf")
HTML_TYPE = ("Content-Type", "text/html")
OCTETS = ("Content-Type", "application/octet-stream")
TO_DEEP = b"<a href=deep.html>d</a>"
# Path -> (the response headers, the body); /index.html links to all but b.html and deep.html.
ROBOTS_SITE = {
    "/noindex.pdf": ([PDF_TYPE, ("X-Robots-Tag", "noindex")], word_pdf("alpha")),
    "/none.pdf": ([PDF_TYPE, ("X-Robots-Tag", "none")], word_pdf("bravo")),
    "/nofollow.pdf": ([PDF_TYPE, ("X-Robots-Tag", "nofollow")], word_pdf("charlie")),
    "/scoped.pdf": ([PDF_TYPE, ("X-Robots-Tag", "tse-scrapy: noindex")], word_pdf("delta")),
    "/other-bot.pdf": ([PDF_TYPE, ("X-Robots-Tag", "googlebot: noindex")], word_pdf("echo")),
    "/two.pdf": (
        [PDF_TYPE, ("X-Robots-Tag", "googlebot: nofollow"), ("X-Robots-Tag", "noarchive, NoIndex")],
        word_pdf("foxtrot"),
    ),
    "/sniffed.pdf": ([OCTETS, ("X-Robots-Tag", "noindex")], word_pdf("golf")),  # a PDF by its bytes
    # A robots <meta> in a PDF's bytes is no directive: a PDF has no head.
    "/meta.pdf": ([PDF_TYPE], word_pdf("hotel").replace(b"\n", b"\n%<meta name=robots content=noindex>\n", 1)),
    "/sniffed.html": ([OCTETS, ("X-Robots-Tag", "none")], b"<!doctype html><title>india zebracorn</title>" + TO_DEEP),
    "/nofollow.html": ([HTML_TYPE, ("X-Robots-Tag", "nofollow")], b"<title>juliet zebracorn</title>" + TO_DEEP),
    "/scoped.html": ([HTML_TYPE, ("X-Robots-Tag", "tse-scrapy: nofollow")], b"<title>kilo</title>" + TO_DEEP),
    "/meta-nofollow.html": ([HTML_TYPE], b"<meta name=robots content=nofollow><title>lima</title>" + TO_DEEP),
    # deep.html is three links deep (index, a, b) when no nofollow page's link counts.
    "/a.html": ([HTML_TYPE], b"<title>mike</title><a href=b.html>b</a>"),
    "/b.html": ([HTML_TYPE], b"<title>november</title>" + TO_DEEP),
    "/deep.html": ([HTML_TYPE], b"<title>oscar zebracorn</title>"),
}  # fmt: skip
ROBOTS_SITE["/index.html"] = (
    [HTML_TYPE],
    b"<title>home</title>"
    + b"".join(b"<a href=%s>x</a>" % p[1:].encode() for p in ROBOTS_SITE if p not in ("/b.html", "/deep.html")),
)
NOINDEX_PATHS = {"/noindex.pdf", "/none.pdf", "/scoped.pdf", "/two.pdf", "/sniffed.pdf", "/sniffed.html"}


@pytest.fixture
def robots_site():
    """ROBOTS_SITE served on 127.0.0.1 with its headers (a header given twice sent twice); its URL."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            headers, body = ROBOTS_SITE.get(self.path, ([], b""))
            self.send_response(200 if self.path in ROBOTS_SITE else 404)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()
    thread.join()


def notes_of(pages: Path) -> dict[str, list[str]]:
    """Each kind of note a page directory holds (.tse-robots ...), its lines of every file, sorted."""
    return {
        kind.name: sorted(line for note in kind.iterdir() for line in note.read_text().splitlines())
        for kind in pages.iterdir()
        if kind.name.startswith(".tse-") and kind.is_dir()
    }


def noindex_paths(pages: Path, url: str) -> set[str]:
    lines = notes_of(pages).get(".tse-robots", [])
    return {line.split("\t")[0].removeprefix(url) for line in lines if line.endswith("\tnoindex")}


def saved_links(record: Path) -> dict[str, list[str]]:
    """URL -> the links its ``saved`` line lists, in a crawl record."""
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    return {line["url"]: line.get("links", []) for line in lines if line["outcome"] == "saved"}


def test_robots_directives_of_pdfs_and_other_answers_import_as_crawled(robots_site, tmp_path):
    """noindex of a PDF (X-Robots-Tag alone, none, bot-scoped, two headers, a PDF sniffed from its
    bytes) is noted as the crawl notes it, and a nofollow page's links count for no depth."""
    crawl = tmp_path / "crawl"
    crawl.mkdir()
    warc = tmp_path / "crawl.warc.gz"
    done = run_tse(
        "crawl", f"{robots_site}/index.html", crawl, "3", "--prefix", f"{robots_site}/", "--pdf", "--warc", warc,
        "--record", tmp_path / "crawl.jsonl", "-s", "DOWNLOAD_DELAY=0",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert noindex_paths(crawl, robots_site) == NOINDEX_PATHS
    result, pages = imported(tmp_path, warc, options=("--pdf", "--record", tmp_path / "import.jsonl"))
    assert result.returncode == 0, result.stderr.decode()
    assert notes_of(pages) == notes_of(crawl)
    crawled = sorted(p.name for p in crawl.iterdir() if p.name.isdigit())
    assert len(crawled) == len(ROBOTS_SITE)
    assert sorted(p.name for p in pages.iterdir() if p.name.isdigit()) == crawled
    for name in crawled:  # the same docIDs, URLs, depths (deep.html's 3) and bytes
        assert (pages / name).read_bytes() == (crawl / name).read_bytes(), name
    assert page_files(pages)[f"{robots_site}/deep.html"][0] == 3
    links = [saved_links(tmp_path / f"{name}.jsonl") for name in ("crawl", "import")]
    assert links[0] == links[1] and links[0][f"{robots_site}/nofollow.html"] == []
    # Searched, the import answers as the crawl does: no noindex page.
    answers = {}
    for directory in (crawl, pages):
        index = tmp_path / f"{directory.name}.index"
        tse_ok_here("index", directory, index)  # (set-up: in this process)
        (found,) = query_answers(directory, index, ["zebracorn"], "tse")
        answers[directory.name] = {url.removeprefix(robots_site) for _, url in found}
    assert (
        answers["pages"]
        == answers["crawl"]
        == {"/nofollow.pdf", "/other-bot.pdf", "/meta.pdf", "/nofollow.html", "/deep.html"}
    )


def test_a_wget_warc_keeps_a_pdfs_noindex(robots_site, tmp_path):
    """wget's archive of the site: the same noindex notes as the crawl's, PDFs' too."""
    work = tmp_path / "wget"
    done = subprocess.run(
        ["wget", "-r", "-l", "3", "--no-parent", "-q", "--no-proxy", "-e", "robots=off", "-P", str(work),
         "--warc-file", str(tmp_path / "site"), f"{robots_site}/index.html"],
        env=clean_env(), capture_output=True, timeout=120,
    )  # fmt: skip
    assert done.returncode in (0, 8), done.stderr.decode()[-2000:]
    result, pages = imported(tmp_path, tmp_path / "site.warc.gz", options=("--pdf",))
    assert result.returncode == 0, result.stderr.decode()
    assert {url.removeprefix(robots_site) for url in page_files(pages)} == set(ROBOTS_SITE)
    assert noindex_paths(pages, robots_site) == NOINDEX_PATHS


def test_hand_made_records_robots_directives(tmp_path):
    """Without a crawl: a PDF's X-Robots-Tag noindex is noted, and the links of a nofollow page (header,
    bot-scoped header, <meta>, none) count for no depth; another bot's nofollow does not stop them."""
    html = ("Content-Type", "text/html")
    to_x = b"<a href='/x'>x</a>"
    records = [
        ("/", [html], b"".join(b"<a href='/%s'>l</a>" % p.encode() for p in "12345a")),
        ("/1", [html, ("X-Robots-Tag", "nofollow")], to_x),
        ("/2", [html, ("X-Robots-Tag", "tse-scrapy: none")], to_x),
        ("/3", [html], b"<meta name='robots' content='nofollow'>" + to_x),
        ("/4", [html, ("x-robots-tag", "noarchive"), ("X-ROBOTS-TAG", "NoFollow")], to_x),
        ("/5", [html, ("X-Robots-Tag", "googlebot: nofollow")], b"<a href='/y'>y</a>"),
        ("/a", [html], b"<a href='/b'>b</a>"),
        ("/b", [html], to_x),
        ("/x", [html], b"<title>x</title>"),
        ("/y", [html], b"<title>y</title>"),
        ("/doc.pdf", [("Content-Type", "application/pdf"), ("X-Robots-Tag", "tse-scrapy: noindex")], word_pdf("p")),
    ]  # fmt: skip
    warc = tmp_path / "robots.warc.gz"
    write_warc(
        warc,
        [
            ("response", f"http://site.test{path}", *http_response("200 OK", headers, body), {})
            for path, headers, body in records
        ],
    )
    pages = tmp_path / "pages"
    pages.mkdir()
    import_archives([str(warc)], str(pages), pdf=True)
    depths = {url.removeprefix("http://site.test"): depth for url, (depth, _) in page_files(pages).items()}
    assert (depths["/x"], depths["/y"], depths["/doc.pdf"]) == (3, 2, 0)
    assert noindex_paths(pages, "http://site.test") == {"/2", "/doc.pdf"}
