"""``tse import`` against a tester's hostile archives and directories: a record file that would
overwrite an archive, a page directory holding an earlier crawl's notes, an import that did not
finish, a page whose links cost hours to scan, URLs too long for a note or holding control bytes,
and a FIFO given as an archive.

Archives are written here byte for byte (the records' headers as a hostile file holds them) or with
warcio; every import is a real ``tse import`` run, but where a failure is forced in-process.
"""

from __future__ import annotations

import errno
import gzip
import io
import os
import resource
import subprocess
import uuid
import zlib
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from tests.conftest import run_tse
from tse_scrapy.rules.files import pagedir
from tse_scrapy.webarchive import importer
from tse_scrapy.webarchive.importer import import_archives

UNFINISHED_NAME = ".tse-import-unfinished"  # (importer.UNFINISHED_NAME)


def http_response(body: bytes, headers: list[tuple[bytes, bytes]] | None = None) -> bytes:
    headers = headers if headers is not None else [(b"Content-Type", b"text/html")]
    headers = [*headers, (b"Content-Length", str(len(body)).encode())]
    return b"HTTP/1.1 200 OK\r\n" + b"".join(k + b": " + v + b"\r\n" for k, v in headers) + b"\r\n" + body


def record(block: bytes, url: bytes) -> bytes:
    """A gzipped WARC response record whose WARC-Target-URI is *url*, as it is (any bytes)."""
    headers = [
        (b"WARC-Type", b"response"),
        (b"WARC-Target-URI", url),
        (b"WARC-Date", b"2024-01-01T00:00:00Z"),
        (b"WARC-Record-ID", b"<urn:uuid:" + str(uuid.uuid4()).encode() + b">"),
        (b"Content-Type", b"application/http; msgtype=response"),
        (b"Content-Length", str(len(block)).encode()),
    ]
    head = b"WARC/1.1\r\n" + b"".join(k + b": " + v + b"\r\n" for k, v in headers) + b"\r\n"
    return gzip.compress(head + block + b"\r\n\r\n")


def page(words: bytes, more: bytes = b"") -> bytes:
    return b"<!doctype html><html><head><title>" + words + b"</title></head><body><p>" + words + b"</p>" + more


def write_archive(path: Path, *pages: tuple[bytes, bytes]) -> Path:
    """An archive of HTML pages (URL, body)."""
    path.write_bytes(b"".join(record(http_response(body), url) for url, body in pages))
    return path


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    return write_archive(
        tmp_path / "site.warc.gz",
        (b"http://127.0.0.1/", page(b"start", b"<a href=/b>b</a>")),
        (b"http://127.0.0.1/b", page(b"second")),
    )


def one_line(result: subprocess.CompletedProcess) -> str:
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1 and "Traceback" not in lines[0], lines
    return lines[0]


def files_of(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


# 1. --record never overwrites a file


def test_a_record_naming_an_archive_or_an_existing_file_is_refused_before_anything_is_written(archive, tmp_path):
    pages = tmp_path / "pages"
    pages.mkdir()
    kept = archive.read_bytes()
    other = tmp_path / "other-name.warc.gz"
    os.link(archive, other)  # the same file under another name
    for target, said in (
        (archive, f"--record: {archive} is the archive {archive}: give a new file name"),
        (other, f"--record: {other} is the archive {archive}: give a new file name"),
    ):
        result = run_tse("import", "--record", target, archive, pages)
        assert result.returncode == 2 and one_line(result) == f"tse import: {said}"
        assert archive.read_bytes() == kept and list(pages.iterdir()) == []
    existing = tmp_path / "existing.jsonl"
    existing.write_bytes(b'{"kept": true}\n')
    result = run_tse("import", "--record", existing, archive, pages)
    assert result.returncode == 2
    assert one_line(result) == (
        f"tse import: --record: {existing} exists: an import writes a new record: give a new file name"
    )
    assert existing.read_bytes() == b'{"kept": true}\n' and list(pages.iterdir()) == []
    # A page directory's own name: page 1 would be the record, or the record page 1.
    result = run_tse("import", "--record", pages / "1", archive, pages)
    assert result.returncode == 2 and "is a file of the page directory" in one_line(result)
    assert list(pages.iterdir()) == []
    # Another crawl's page directory's (one holding .crawler), not there yet: its next page, a note
    # (before, the record was written there: as tse crawl --record refuses them).
    crawl = tmp_path / "crawl"
    crawl.mkdir()
    (crawl / ".crawler").touch()
    for name in ("7", ".tse-gone"):
        result = run_tse("import", "--record", crawl / name, archive, pages)
        said = f"tse import: --record: {crawl / name} is a file of the page directory {crawl}: give another name"
        assert (result.returncode, one_line(result)) == (2, said)
    assert list(pages.iterdir()) == [] and [path.name for path in crawl.iterdir()] == [".crawler"]
    # A new file beside the pages is the user's choice.
    result = run_tse("import", "--record", pages / "import.jsonl", archive, pages)
    assert result.returncode == 0, result.stderr.decode()
    assert (pages / "import.jsonl").read_bytes().count(b'"saved"') == 2


# 2. The imported directory says what the archives say


@pytest.mark.parametrize(
    "left",
    [
        ".tse-gone",
        ".crawler",
        ".tse-robots/import.tsv",
        ".tse-charsets/crawl.tsv",
        ".tse-types/import.tsv",
        ".tse-canonical/import.tsv",
        ".tse-state.sqlite",
        ".tse-pages.sqlite",
    ],
)
def test_a_page_directory_holding_a_crawls_files_is_refused_and_left_as_it_was(archive, tmp_path, left):
    pages = tmp_path / "pages"
    (pages / left).parent.mkdir(parents=True)
    (pages / left).write_bytes(b"1\n")
    before = files_of(pages)
    result = run_tse("import", archive, pages)
    assert result.returncode == 2
    shown = left.split("/")[0]
    assert one_line(result) == (
        f"tse import: {pages} already holds a crawl's or an import's files ({shown}): import into an empty directory"
    )
    assert files_of(pages) == before


def test_importing_again_after_removing_the_page_files_keeps_no_stale_note(tmp_path):
    """``rm pages/*`` leaves the dot files: the first import's noindex would hide the second's page."""
    noindex = [(b"Content-Type", b"text/html"), (b"X-Robots-Tag", b"noindex")]
    first = tmp_path / "first.warc.gz"
    first.write_bytes(record(http_response(page(b"old"), noindex), b"http://127.0.0.1/s"))
    second = write_archive(tmp_path / "second.warc.gz", (b"http://127.0.0.1/s", page(b"new")))
    pages = tmp_path / "pages"
    pages.mkdir()
    assert run_tse("import", first, pages).returncode == 0
    for name in pages.iterdir():
        if not name.name.startswith("."):
            name.unlink()
    result = run_tse("import", second, pages)
    assert result.returncode == 2
    assert one_line(result).startswith(f"tse import: {pages} already holds a crawl's or an import's files (.crawler, ")
    assert not (pages / "1").exists()


# 3. An import that did not finish is never taken for one that did


def test_an_import_stopped_by_a_full_disk_leaves_a_directory_said_unfinished(tmp_path):
    """The page files of an import cannot all be written (a file size limit stands for a full disk):
    no ``.crawler``, so ``tse index`` refuses the directory, and ``tse import`` says what it holds."""
    large = page(b"large", b"x" * 200_000)
    archive = write_archive(
        tmp_path / "site.warc.gz",
        (b"http://127.0.0.1/", b"<html>"),
        (b"http://127.0.0.1/" + b"long" * 50, large),
    )
    pages = tmp_path / "pages"
    pages.mkdir()
    # The spool holds both payloads (6 bytes more than the large one); page 2's file, its URL too.
    bound = len(large) + 50

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (bound, bound))

    result = run_tse("import", archive, pages, preexec_fn=limited)
    assert result.returncode == 1
    assert one_line(result).endswith(f"File too large: the import did not finish: empty {pages} and import again")
    assert (pages / "1").is_file() and not (pages / "2").exists()
    assert not (pages / pagedir.MARKER).exists() and (pages / UNFINISHED_NAME).is_file()
    indexed = run_tse("index", pages, tmp_path / "index")
    assert indexed.returncode != 0 and "no readable .crawler" in one_line(indexed)
    again = run_tse("import", archive, pages)
    assert again.returncode == 2
    assert one_line(again) == f"tse import: {pages} holds an import that did not finish: empty it and import again"
    # Emptied, it imports whole.
    for name in pages.iterdir():
        name.unlink()
    done = run_tse("import", archive, pages)
    assert done.returncode == 0 and (pages / pagedir.MARKER).is_file() and not (pages / UNFINISHED_NAME).exists()
    assert run_tse("index", pages, tmp_path / "index").returncode == 0


def test_an_interrupted_import_says_its_directory_did_not_finish(archive, tmp_path, monkeypatch):
    pages = tmp_path / "pages"
    pages.mkdir()
    write_page = pagedir.write_page

    def interrupted_at_page_2(directory, doc_id, page, **options):
        if doc_id == 2:
            raise KeyboardInterrupt
        write_page(directory, doc_id, page, **options)

    monkeypatch.setattr(pagedir, "write_page", interrupted_at_page_2)
    said: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        import_archives([str(archive)], str(pages), warn=said.append)
    assert said == [f"{pages} holds an import that did not finish: empty it and import again"]
    assert sorted(p.name for p in pages.iterdir()) == [UNFINISHED_NAME, "1"]


def test_an_import_failing_as_it_writes_says_it_did_not_finish(archive, tmp_path, monkeypatch):
    pages = tmp_path / "pages"
    pages.mkdir()

    def full(directory, doc_id, page, **options):
        raise OSError(errno.ENOSPC, "No space left on device", f"{directory}/{doc_id}")

    monkeypatch.setattr(pagedir, "write_page", full)
    with pytest.raises(OSError, match=r"No space left on device: the import did not finish: empty .* and import again"):
        import_archives([str(archive)], str(pages))
    assert not (pages / pagedir.MARKER).exists()


# 4. The link scan


@pytest.mark.timeout(60)
def test_a_page_of_unclosed_tags_imports_in_linear_time(tmp_path):
    """4 MB of ``<a `` (600 bytes of archive): 53 s of link scan before, 0.1 s now."""
    body = b"<html><body>" + b"<a " * ((4 << 20) // 3)
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    encoded = compressor.compress(body) + compressor.flush()
    headers = [(b"Content-Type", b"text/html"), (b"Content-Encoding", b"gzip")]
    archive = tmp_path / "linkscan.warc.gz"
    archive.write_bytes(
        record(http_response(encoded, headers), b"http://127.0.0.1/")
        + record(http_response(page(b"second")), b"http://127.0.0.1/second")
    )
    pages = tmp_path / "pages"
    pages.mkdir()
    result = run_tse("import", archive, pages, timeout=60)
    assert result.returncode == 0 and one_line(result).startswith("tse import: 2 pages saved")
    assert (pages / "1").stat().st_size > len(body)


def revisited_archive(tmp_path: Path, body: bytes) -> Path:
    """A page at site.test/x/page.html and three revisits of its payload under /y, /z and /w."""
    warc = tmp_path / "revisits.warc.gz"
    with open(warc, "wb") as output:
        writer = WARCWriter(output, gzip=True)
        http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
        writer.write_record(
            writer.create_warc_record(
                "http://site.test/x/page.html", "response", payload=io.BytesIO(body), http_headers=http
            )
        )
        output.flush()
        with open(warc, "rb") as stream:
            digest = next(ArchiveIterator(stream)).rec_headers.get_header("WARC-Payload-Digest")
        for place in ("y", "z", "w"):
            revisit = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
            writer.write_record(
                writer.create_warc_record(
                    f"http://site.test/{place}/page.html",
                    "revisit",
                    payload=io.BytesIO(b""),
                    http_headers=revisit,
                    warc_headers_dict={"WARC-Payload-Digest": digest},
                )
            )
    return warc


REVISITED_BODY = b"<title>p</title><a href='deep.html'>d</a><a href='/top.html'>t</a>"


@pytest.mark.parametrize("kept", [importer.SCANNED_HREF_BYTES, 0], ids=["kept", "past the bound"])
def test_a_payload_revisited_under_other_urls_is_scanned_once(tmp_path, monkeypatch, kept):
    """Its hrefs are kept for the pages that hold it, within SCANNED_HREF_BYTES (past it, scanned again
    for each), and forgotten once the last of them has them."""
    body = REVISITED_BODY
    warc = revisited_archive(tmp_path, body)
    monkeypatch.setattr(importer, "SCANNED_HREF_BYTES", kept)
    scans: list[int] = []
    scan = importer.page_hrefs

    def counted(payload: bytes):
        scans.append(len(payload))
        return scan(payload)

    monkeypatch.setattr(importer, "page_hrefs", counted)
    pages = tmp_path / "pages"
    pages.mkdir()
    record_file = tmp_path / "import.jsonl"
    job = importer.ArchiveImport(str(pages), record=str(record_file))  # (--record scans every page)
    job.read(str(warc))
    job.write()
    assert scans == [len(body)] * (1 if kept else 4)
    assert (job.scanned, job.scanned_bytes, job.shared_payloads) == ({}, 0, {})  # nothing left held
    lines = record_file.read_text()
    for place in ("x", "y", "z", "w"):  # each resolved against its own URL
        assert f'"http://site.test/{place}/deep.html"' in lines


# 5. A URL too long for a note's line


def test_a_noindex_page_whose_url_no_note_can_hold_is_skipped_and_said(tmp_path):
    noindex = [(b"Content-Type", b"text/html; charset=iso-8859-1"), (b"X-Robots-Tag", b"noindex")]
    long_url = b"http://127.0.0.1/long?" + b"a" * 100_000
    archive = tmp_path / "longurl.warc.gz"
    archive.write_bytes(
        record(http_response(page(b"plain start")), b"http://127.0.0.1/start")
        + record(http_response(page(b"noindexword long"), noindex), long_url)
        + record(http_response(page(b"noindexword tab"), noindex), b"http://127.0.0.1/tab\there")
        + record(http_response(page(b"noindexword normal"), noindex), b"http://127.0.0.1/normal")
        + record(http_response(page(b"long but no note")), b"http://127.0.0.1/plain?" + b"b" * 20_000)
    )
    pages = tmp_path / "pages"
    pages.mkdir()
    result = run_tse("import", archive, pages)
    assert result.returncode == 0
    lines = result.stderr.decode().splitlines()
    # URLs over the 2,083 characters a crawl keeps are skipped before their notes are weighed.
    assert len(lines) == 3, lines
    assert lines[0].startswith(f"tse import: {archive}: http://127.0.0.1/long?aaaa") and lines[0].endswith(
        "...: a URL of 100,022 characters, over 2,083: skipped"
    )
    assert lines[1].startswith(f"tse import: {archive}: http://127.0.0.1/plain?bbbb") and lines[1].endswith(
        "...: a URL of 20,023 characters, over 2,083: skipped"
    )
    assert lines[2] == "tse import: 3 pages saved; 5 records read; 2 records skipped (a URL over 2,083 characters)"
    urls = [pagedir.read_page(pages, doc_id).url for doc_id in range(1, 4)]
    assert urls == ["http://127.0.0.1/start", "http://127.0.0.1/tab%09here", "http://127.0.0.1/normal"]
    noted = (pages / ".tse-robots" / "import.tsv").read_text().splitlines()
    assert noted == ["http://127.0.0.1/tab%09here\tnoindex", "http://127.0.0.1/normal\tnoindex"]


# 6. A FIFO


def test_an_archive_that_is_no_regular_file_is_refused_without_waiting(archive, tmp_path):
    fifo = tmp_path / "fifo.warc"
    os.mkfifo(fifo)
    pages = tmp_path / "pages"
    pages.mkdir()
    result = run_tse("import", fifo, pages, timeout=30)  # (opened for reading, it waited for ever)
    assert result.returncode == 2
    assert one_line(result) == f"tse import: cannot read {fifo}: not a regular file (a FIFO)"
    result = run_tse("import", archive, "/dev/zero", pages, timeout=30)
    assert result.returncode == 2
    assert one_line(result) == "tse import: cannot read /dev/zero: not a regular file (a character device)"
    assert list(pages.iterdir()) == []


# 7. Control characters in an archived URL


def test_control_characters_and_spaces_of_an_archived_url_are_percent_encoded(tmp_path):
    evil = b"http://127.0.0.1/\x1b]0;PWNED\x07\x1b[2J a\x7f"
    archive = write_archive(
        tmp_path / "ansi.warc.gz", (evil, page(b"escapeword")), (b"http://127.0.0.1/ok", page(b"ok"))
    )
    pages = tmp_path / "pages"
    pages.mkdir()
    result = run_tse("import", "--record", tmp_path / "r.jsonl", archive, pages)
    assert result.returncode == 0, result.stderr.decode()
    assert pagedir.read_page(pages, 1).url == "http://127.0.0.1/%1B]0;PWNED%07%1B[2J%20a%7F"
    assert pagedir.read_page(pages, 2).url == "http://127.0.0.1/ok"  # as archived
    assert b"\x1b" not in (tmp_path / "r.jsonl").read_bytes()


# 8. A page is saved when it was archived


def test_an_imported_page_was_saved_when_it_was_archived(archive, tmp_path):
    """The page file's time is its capture's WARC-Date, so that tse serve's saved copy says when the page
    was what it shows (not when it was imported)."""
    from starlette.testclient import TestClient

    from tse_scrapy.index.engine import QueryEngine
    from tse_scrapy.index.storage import IndexReader
    from tse_scrapy.search.app import create_app

    pages = tmp_path / "pages"
    pages.mkdir()
    assert run_tse("import", archive, pages).returncode == 0
    archived = 1704067200  # 2024-01-01T00:00:00Z, each record's WARC-Date
    assert [(pages / name).stat().st_mtime for name in ("1", "2")] == [archived, archived]
    assert run_tse("index", pages, tmp_path / "index").returncode == 0
    client = TestClient(create_app(QueryEngine(pages, IndexReader(tmp_path / "index"))))
    assert '<time datetime="2024-01-01T00:00:00Z">2024-01-01 00:00 UTC</time>' in client.get("/saved/1").text
