"""``tse import`` on hostile records: payloads in every coding a crawl undoes, bombs, damaged chunked
bodies and codings, lying Content-Lengths, records warcio trips on, and bytes that must not reach a
terminal.  Each archive is a real file, written by warcio's WARCWriter, or by hand where warcio
cannot write the damage; the import runs as a command (this checkout's code), as a user runs it.
"""

from __future__ import annotations

import gzip
import io
import re
import resource
import struct
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import brotli
import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from tests.conftest import ROOT, clean_env
from tse_scrapy.webarchive import reader

try:
    from compression import zstd  # type: ignore[import-not-found]
except ImportError:
    from backports import zstd

HTML = ("Content-Type", "text/html")
# Enough for the import to run (about 200 MB do), far less than a bomb inflated whole.
MEMORY_LIMIT = 300 * 1024 * 1024
# A Python exception's name in a message is internal text, not the user's terms.
EXCEPTION_NAME = re.compile(r"\b[A-Z][A-Za-z]*(Error|Exception|File)\b")


def page(title: str) -> bytes:
    return b"<!doctype html><html><head><title>%s</title></head><body><p>%s</p></body></html>" % (
        title.encode(),
        title.encode() * 20,
    )


def write_warc(path: Path, records: list[tuple[str, list[tuple[str, str]], bytes]]) -> Path:
    """Response records (URL, HTTP headers, the payload as archived), written by warcio, gzipped."""
    with open(path, "wb") as output:
        writer = WARCWriter(output, gzip=True)
        for url, headers, payload in records:
            http = StatusAndHeaders("200 OK", headers, protocol="HTTP/1.1")
            writer.write_record(
                writer.create_warc_record(url, "response", payload=io.BytesIO(payload), http_headers=http)
            )
    return path


def raw_record(url: bytes | None, block: bytes, *, length: bytes | None = None) -> bytes:
    """A plain WARC response record written by hand: warcio writes none without a target URI or
    with a wrong Content-Length."""
    head = b"WARC/1.1\r\nWARC-Type: response\r\nWARC-Date: 2026-01-01T00:00:00Z\r\n"
    head += b"WARC-Record-ID: <urn:uuid:%d>\r\n" % len(block)
    head += b"Content-Type: application/http; msgtype=response\r\n"
    if url is not None:
        head += b"WARC-Target-URI: " + url + b"\r\n"
    head += b"Content-Length: " + (length if length is not None else str(len(block)).encode()) + b"\r\n"
    return head + b"\r\n" + block + b"\r\n\r\n"


def http_block(body: bytes, headers: bytes = b"Content-Type: text/html\r\n") -> bytes:
    return b"HTTP/1.1 200 OK\r\n" + headers + b"\r\n" + body


def tse_import(
    tmp_path: Path, *archives: Path, memory_limit: int | None = None
) -> tuple[subprocess.CompletedProcess, Path]:
    """``tse import ARCHIVE... PAGEDIR`` with this checkout's code, its address space bounded to
    *memory_limit* bytes when given."""
    pages = tmp_path / "pages"
    pages.mkdir(parents=True)

    def bounded() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))

    result = subprocess.run(
        [sys.executable, "-m", "tse_scrapy.cli", "import", *map(str, archives), str(pages)],
        capture_output=True,
        env=clean_env(),
        cwd=ROOT,  # -m: this checkout's tse_scrapy first
        timeout=300,
        preexec_fn=bounded if memory_limit else None,
    )
    return result, pages


def said(result: subprocess.CompletedProcess) -> list[str]:
    """The lines on stderr: no traceback, each one readable (no byte of the archive raw)."""
    err = result.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err, err
    lines = err.splitlines()
    assert all(line.isascii() and line.isprintable() for line in lines), lines
    return lines


def page_files(pages: Path) -> dict[str, bytes]:
    """URL -> body of every page file 1, 2, ..."""
    found = {}
    doc_id = 1
    while (pages / str(doc_id)).is_file():
        url, _, body = (pages / str(doc_id)).read_bytes().split(b"\n", 2)
        found[url.decode()] = body[:-1]
        doc_id += 1
    return found


def chunked(data: bytes, size: int = 100) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(data[i : i + size]), data[i : i + size]) for i in range(0, len(data), size))


def gzip_bomb(megabytes: int) -> bytes:
    """A gzip stream of *megabytes* MB of zeros, about 1 KB a MB, made in a second: after a full flush
    deflate refers to nothing before it, so one flushed MB repeats."""
    zeros = bytes(1 << 20)
    deflate = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    one_megabyte = deflate.compress(zeros) + deflate.flush(zlib.Z_FULL_FLUSH)
    last_block = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS).flush()
    crc = 0
    for _ in range(megabytes):
        crc = zlib.crc32(zeros, crc)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    return header + one_megabyte * megabytes + last_block + struct.pack("<II", crc, (megabytes << 20) & 0xFFFFFFFF)


def brotli_bomb(megabytes: int) -> bytes:
    compressor = brotli.Compressor(quality=5)
    zeros = bytes(1 << 20)
    return b"".join(compressor.process(zeros) for _ in range(megabytes)) + compressor.finish()


# Content codings a crawl undoes (Scrapy's HttpCompressionMiddleware), each on a page.
CODED = {
    "br": brotli.compress,
    "x-gzip": gzip.compress,
    "zstd": zstd.compress,
    "gzip, br": lambda data: brotli.compress(gzip.compress(data)),
}


@pytest.mark.parametrize("coding", list(CODED))
def test_every_content_coding_a_crawl_undoes_is_undone(tmp_path, coding):
    coded = page(f"coded {coding}")
    stored_decoded = page("stored decoded")
    warc = write_warc(tmp_path / "codings.warc.gz", [
        ("http://site.test/coded", [HTML, ("Content-Encoding", coding)], CODED[coding](coded)),
        # Chunked too, as a server sends it when it does not know the length.
        ("http://site.test/chunked", [HTML, ("Content-Encoding", coding), ("Transfer-Encoding", "chunked")],
         chunked(CODED[coding](coded))),
        # Archived decoded under the headers of the coded answer (pywb keeps Transfer-Encoding on a
        # body it dechunked): the bytes are the page, taken as they are.
        ("http://site.test/stored-decoded", [HTML, ("Content-Encoding", "gzip"), ("Transfer-Encoding", "chunked")],
         stored_decoded),
        ("http://site.test/stored-dechunked", [HTML, ("Content-Encoding", "gzip"), ("Transfer-Encoding", "chunked")],
         gzip.compress(stored_decoded)),
        # Stored dechunked, coded without a magic number (zlib's deflate, brotli), or text that does not
        # begin as markup: no chunk-size line begins it, so it was stored dechunked (as warcio judges it).
        ("http://site.test/dechunked-deflate",
         [HTML, ("Content-Encoding", "deflate"), ("Transfer-Encoding", "chunked")], zlib.compress(stored_decoded)),
        ("http://site.test/dechunked-br", [HTML, ("Content-Encoding", "br"), ("Transfer-Encoding", "chunked")],
         brotli.compress(stored_decoded)),
        ("http://site.test/dechunked-text", [HTML, ("Transfer-Encoding", "chunked")],
         b"Deprecated: a notice before the page\n" + stored_decoded),
    ])  # fmt: skip
    result, pages = tse_import(tmp_path, warc)
    assert result.returncode == 0, result.stderr.decode()
    assert said(result) == ["tse import: 7 pages saved; 7 records read"]
    assert page_files(pages) == {
        "http://site.test/coded": coded,
        "http://site.test/chunked": coded,
        "http://site.test/stored-decoded": stored_decoded,
        "http://site.test/stored-dechunked": stored_decoded,
        "http://site.test/dechunked-deflate": stored_decoded,
        "http://site.test/dechunked-br": stored_decoded,
        "http://site.test/dechunked-text": b"Deprecated: a notice before the page\n" + stored_decoded,
    }


@pytest.mark.parametrize(
    ("headers", "payload", "why"),
    [
        # A gzip stream whose bytes past its header are overwritten.
        ([("Content-Encoding", "gzip")], gzip.compress(page("x"))[:10] + b"\xff" * 50 + gzip.compress(page("x"))[60:],
         "a damaged content coding"),
        # A gzip stream cut short (the record whole: its Content-Length is the cut payload's).
        ([("Content-Encoding", "gzip")], gzip.compress(page("x") * 50)[:-40], "cut short in its content coding (gzip)"),
        ([("Content-Encoding", "br")], brotli.compress(page("x") * 50)[:-5], "cut short in its content coding (br)"),
        ([("Content-Encoding", "bogus")], page("x"), "a content coding that cannot be undone (bogus)"),
        # A damaged chunked body: a chunk longer than the data, a size that is no number, a chunk
        # longer than its size.
        ([("Transfer-Encoding", "chunked")], b"ffff\r\n" + page("x") + b"\r\n0\r\n\r\n", "ends inside a chunk"),
        ([("Transfer-Encoding", "chunked")], b"5\r\n<html\r\nzz\r\n" + page("x") + b"\r\n0\r\n\r\n",
         "a chunk size that is no hexadecimal number"),
        ([("Transfer-Encoding", "chunked")], b"10\r\n" + page("x") + b"\r\n0\r\n\r\n", "a chunk longer than its size"),
    ],
    ids=["gzip-damaged", "gzip-cut", "br-cut", "unknown-coding", "chunk-short", "chunk-size-no-hex", "chunk-long"],
)  # fmt: skip
def test_a_damaged_payload_is_one_line_and_no_page(tmp_path, headers, payload, why):
    warc = write_warc(tmp_path / "damaged.warc.gz", [
        ("http://site.test/a", [HTML], page("first")),
        ("http://site.test/bad", [HTML, *headers], payload),
        ("http://site.test/c", [HTML], page("last")),
    ])  # fmt: skip
    result, pages = tse_import(tmp_path, warc)
    assert result.returncode == 1
    lines = said(result)
    assert lines[0].startswith(f"tse import: {warc}: the record for http://site.test/bad: "), lines
    assert why in lines[0] and lines[0].endswith(", not taken"), lines
    assert len(lines) == 2 and lines[1].startswith("tse import: 2 pages saved; "), lines
    assert "1 damaged payload not taken" in lines[1] and "not read to the end" not in lines[1], lines
    found = page_files(pages)  # the archive is read on past the damaged payload
    assert found == {"http://site.test/a": page("first"), "http://site.test/c": page("last")}


def test_bombs_are_inflated_only_to_the_size_bound(tmp_path):
    """A gzip bomb in one chunk (1 GB from a 2 KB archive: warcio inflates a chunk whole) and a
    brotli bomb (512 MB): each skipped as over the bound, the import in 300 MB of address space."""
    bombs = write_warc(tmp_path / "bombs.warc.gz", [
        ("http://site.test/gzip-bomb", [HTML, ("Content-Encoding", "gzip"), ("Transfer-Encoding", "chunked")],
         chunked(gzip_bomb(1024), size=1 << 30)),
        ("http://site.test/good", [HTML], page("good")),
        ("http://site.test/br-bomb", [HTML, ("Content-Encoding", "br")], brotli_bomb(512)),
    ])  # fmt: skip
    assert bombs.stat().st_size < 10_000
    result, pages = tse_import(tmp_path, bombs, memory_limit=MEMORY_LIMIT)
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    assert said(result) == [
        f"tse import: {bombs}: http://site.test/gzip-bomb: a payload over the size bound, skipped",
        f"tse import: {bombs}: http://site.test/br-bomb: a payload over the size bound, skipped",
        "tse import: 1 page saved; 3 records read; 2 over the size bound",
    ]
    assert page_files(pages) == {"http://site.test/good": page("good")}


@pytest.mark.parametrize(
    ("length", "why"),
    [
        (lambda block: str(len(block) - 40).encode(), "damaged at record 2: its Content-Length is wrong"),
        # Fullwidth digits, which Python's int() reads (and warcio with it), are no WARC number.
        (lambda block: str(len(block)).translate({ord(d): 0xFF10 + int(d) for d in "0123456789"}).encode(),
         "damaged at record 2: a Content-Length that is no number (\\uff"),
        (lambda block: b"-5", "damaged at record 2: a Content-Length that is no number (-5)"),
    ],
    ids=["too-short", "fullwidth-digits", "negative"],
)  # fmt: skip
@pytest.mark.parametrize("gzipped", [False, True], ids=["plain", "gzipped"])
def test_a_record_whose_content_length_lies_is_never_taken(tmp_path, length, why, gzipped):
    def archive(name: str, liar_length: bytes | None) -> Path:
        records = [
            raw_record(b"http://site.test/a", http_block(page("first"))),
            raw_record(b"http://site.test/liar", http_block(page("liar")), length=liar_length),
            raw_record(b"http://site.test/c", http_block(page("last"))),
        ]
        warc = tmp_path / (f"{name}.warc.gz" if gzipped else f"{name}.warc")
        warc.write_bytes(b"".join(gzip.compress(record) for record in records) if gzipped else b"".join(records))
        return warc

    # The same records, the Content-Length right: three pages.
    result, pages = tse_import(tmp_path / "right", archive("right", None))
    assert result.returncode == 0 and len(page_files(pages)) == 3, said(result)
    warc = archive("lying", length(http_block(page("liar"))))
    result, pages = tse_import(tmp_path, warc)
    assert result.returncode == 1
    lines = said(result)
    assert lines[0].startswith(f"tse import: {warc}: {why}"), lines
    assert page_files(pages) == {"http://site.test/a": page("first")}


def test_a_datapackage_nested_too_deep_leaves_the_warcs_in_name_order(tmp_path):
    warc = write_warc(tmp_path / "a.warc.gz", [("http://site.test/w", [HTML], page("in a wacz"))])
    wacz = tmp_path / "deep.wacz"
    with zipfile.ZipFile(wacz, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("archive/a.warc.gz", warc.read_bytes())
        archive.writestr("datapackage.json", "[" * 100_000 + "]" * 100_000)
    result, pages = tse_import(tmp_path, wacz)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert said(result) == ["tse import: 1 page saved; 1 record read"]
    assert page_files(pages) == {"http://site.test/w": page("in a wacz")}


def wacz_failing_its_crc(tmp_path: Path) -> Path:
    """A WACZ whose WARC member is stored with a CRC-32 (local and central) that does not match."""
    warc = write_warc(tmp_path / "a.warc.gz", [("http://site.test/w", [HTML], page("in a wacz"))])
    wacz = tmp_path / "badcrc.wacz"
    with zipfile.ZipFile(wacz, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("archive/a.warc.gz", warc.read_bytes())
    data = bytearray(wacz.read_bytes())
    data[data.find(b"PK\x01\x02") + 16] ^= 0xFF
    data[data.find(b"PK\x03\x04") + 14] ^= 0xFF
    wacz.write_bytes(bytes(data))
    return wacz


def wacz_member_named_with_escapes(tmp_path: Path) -> Path:
    wacz = tmp_path / "escapes.wacz"
    with zipfile.ZipFile(wacz, "w") as archive:
        archive.writestr("archive/\x1b[2J\x1b[31mred.warc", b"not a warc at all\n")
    return wacz


@pytest.mark.parametrize(
    ("archive", "message"),
    [
        (lambda tmp_path: raw_record(b"http://site.test/a", http_block(page("first")))
         + raw_record(None, http_block(page("no uri"))),
         "damaged at record 2: a response record without a WARC-Target-URI"),
        (wacz_failing_its_crc, "archive/a.warc.gz: damaged: a damaged zip member (its CRC-32 does not match)"),
        (wacz_member_named_with_escapes, "archive/\\x1b[2J\\x1b[31mred.warc: not a WARC file"),
    ],
    ids=["no-target-uri", "wacz-member-crc", "wacz-member-name"],
)  # fmt: skip
def test_messages_say_what_is_wrong_in_the_users_terms(tmp_path, archive, message):
    made = archive(tmp_path)
    if isinstance(made, bytes):
        path = tmp_path / "bad.warc"
        path.write_bytes(made)
        made = path
    result, _ = tse_import(tmp_path, made)
    assert result.returncode == 1
    lines = said(result)
    assert lines[0] == f"tse import: {made}: {message}", lines
    assert not EXCEPTION_NAME.search(lines[0])


# A line of terminal escapes where a record should begin: warcio quotes such a line in its error.
ESCAPES = b"\x1b]0;PWNED\x07\x1b[2J\x1b[1;31mYOUR ARCHIVE IS FINE\x1b[0m\r\n\r\n"


def gzip_member_cut(tmp_path: Path) -> bytes:
    return gzip.compress(raw_record(b"http://site.test/bad", http_block(page("cut") * 30)))[:-30]


def gzip_member_damaged(tmp_path: Path) -> bytes:
    member = bytearray(gzip.compress(raw_record(b"http://site.test/bad", http_block(page("x") * 100)), 1))
    member[len(member) // 2 : len(member) // 2 + 2] = bytes(
        b ^ 0xFF for b in member[len(member) // 2 : len(member) // 2 + 2]
    )
    return bytes(member)


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        (lambda tmp_path: gzip.compress(ESCAPES), "damaged after record 1: no WARC record where the next one begins"),
        (gzip_member_cut, "damaged after record 1: a damaged gzip member"),
        (gzip_member_damaged, "damaged after record 1: a damaged gzip member"),
    ],
    ids=["escapes-for-a-record", "a-member-cut", "a-member-damaged"],
)  # fmt: skip
def test_damage_is_told_without_the_archives_bytes(tmp_path, bad, why):
    first = gzip.compress(raw_record(b"http://site.test/a", http_block(page("first"))))
    last = gzip.compress(raw_record(b"http://site.test/c", http_block(page("last"))))
    warc = tmp_path / "bytes.warc.gz"
    warc.write_bytes(first + bad(tmp_path) + last)
    result, pages = tse_import(tmp_path, warc)
    assert result.returncode == 1
    lines = said(result)
    assert lines[0] == f"tse import: {warc}: {why}", lines
    assert len(lines) == 2 and page_files(pages) == {"http://site.test/a": page("first")}


def test_nothing_of_warcio_reaches_stderr(tmp_path):
    """warcio logs a URL with a space itself ("Replacing spaces in invalid WARC-Target-URI: ...",
    the URL's bytes raw) and reads it as %20, as a browser would: only the summary is said."""
    warc = tmp_path / "space.warc.gz"
    warc.write_bytes(gzip.compress(raw_record(b"http://site.test/a b\x1b[2J", http_block(page("space")))))
    result, pages = tse_import(tmp_path, warc)
    assert result.returncode == 0
    assert said(result) == ["tse import: 1 page saved; 1 record read"]
    assert page_files(pages) == {"http://site.test/a%20b%1B[2J": page("space")}  # as a crawl writes a URL


def test_after_a_damaged_payload_the_records_after_it_can_be_read(tmp_path):
    """The reader's side of going on past a damaged payload (the archive sound around it): the
    records after it are read, each payload whole."""
    warc = write_warc(tmp_path / "on.warc.gz", [
        ("http://site.test/a", [HTML], page("first")),
        ("http://site.test/bad", [HTML, ("Transfer-Encoding", "chunked")], b"ffff\r\n" + page("x")),
        ("http://site.test/bad-coding", [HTML, ("Content-Encoding", "gzip")], b"\x1f\x8b" + bytes(100)),
        ("http://site.test/c", [HTML], page("last")),
    ])  # fmt: skip
    taken, refused = {}, []
    for record in reader.archive_records(warc):
        try:
            taken[record.url] = record.payload()
        except reader.BadPayload as error:
            refused.append(str(error))
    assert taken == {"http://site.test/a": page("first"), "http://site.test/c": page("last")}
    assert [line.split(": ", 2)[1] for line in refused] == [
        "the record for http://site.test/bad",
        "the record for http://site.test/bad-coding",
    ]


def test_damaged_payloads_past_the_first_ten_are_counted_not_said(tmp_path):
    """A hostile archive of a million damaged records is no million lines: the first ten said, the
    rest counted, the pages among them taken."""
    damaged = [(f"http://site.test/bad{n}", [HTML, ("Content-Encoding", "bogus")], page("x")) for n in range(12)]
    warc = write_warc(tmp_path / "many.warc.gz", [*damaged, ("http://site.test/good", [HTML], page("good"))])
    result, pages = tse_import(tmp_path, warc)
    assert result.returncode == 1
    lines = said(result)
    assert all(f"the record for http://site.test/bad{n}: " in lines[n] for n in range(10)), lines
    assert lines[10] == "tse import: more damaged payloads are counted, not said one by one (the first 10 are)"
    assert lines[11] == "tse import: 1 page saved; 13 records read; 12 damaged payloads not taken", lines
    assert page_files(pages) == {"http://site.test/good": page("good")}
