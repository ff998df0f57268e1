"""Reading web archives made by any tool: WARC (gzipped per record, gzipped whole, or plain) and WACZ.

warcio parses the records; the payload's transfer coding (chunked) and content codings (gzip,
deflate, brotli, zstd) are undone here, not by warcio: its decoders inflate a chunk whole (a gzip
bomb of a few KB costs GB), take a damaged coding for no coding, and its brotli decoder fails with
brotli 1.2.  What warcio lets pass is checked here: a record cut short (warcio reads a truncated
file to its end without an error, and takes a record cut before its block for the end of the file),
a record whose Content-Length is wrong, a payload over the size bound (never held whole: reading
stops past it), a damaged chunked body or coding, a file that is no archive at all.  A WARC gzipped
as one member, which warcio refuses after its first record, is read again through ``gzip``.  Each
problem is a ``BadArchive`` naming the file and where, in the user's terms (no bytes of the archive
quoted raw); what was read before it stays good.  warcio's own warnings never reach stderr.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import logging
import os
import re
import sys
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import IO, Any

from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed

from ..exitcodes import first_line
from ..rules.crawling.secrets import mask_url
from ..rules.files.webarchive import archived_url

try:  # brotli >= 1.2 (bounded output), as Scrapy requires it; brotlicffi on PyPy
    import brotli
except ImportError:  # pragma: no cover - PyPy
    import brotlicffi as brotli  # type: ignore[no-redef]

if sys.version_info >= (3, 14):  # pragma: no cover - the zstd Scrapy decodes, as Scrapy imports it
    from compression import zstd
else:
    from backports import zstd

# A payload (decoded) larger than this is skipped: the crawl's own bound on a page (DOWNLOAD_MAXSIZE).
MAX_PAYLOAD_BYTES = 32 * 1024 * 1024
# A WACZ holds its WARCs in archive/; datapackage.json is read only for their order.
WACZ_ARCHIVES = "archive/"
MAX_DATAPACKAGE_BYTES = 16 * 1024 * 1024
_CHUNK = 1 << 20
# A record's WARC and HTTP header lines together (warcio keeps them whole), at most.
MAX_HEADER_BYTES = 1024 * 1024
# A WARC field the import keeps for each record (its WARC-Date, WARC-Refers-To-Date, WARC-Payload-Digest,
# WARC-Record-ID, WARC-Concurrent-To), at most: a longer value is none.  The longest real one, a SHA-512
# digest in base 32, has 111 characters; a hostile archive's 1 MB values, gzipped to a KB each, were kept
# for every page, revisit or HEAD request (400 of them held 390 MB).
MAX_FIELD_CHARACTERS = 256
_TAIL_BYTES = 4096  # read past the last record: blank lines and padding, or the start of a record cut short
# A chunk-size line (with its extensions), and a chunked body's trailer fields, at most.
_CHUNK_LINE_BYTES = 4096
_TRAILER_BYTES = 64 * 1024
# The chunks of one chunked body, at most: 4 million chunks of a byte took 30 s and 379 MB (a piece
# each); a page under the payload bound in chunks of 128 bytes has fewer.  A body of more is damaged.
MAX_CHUNKS = 256 * 1024
# Content codings stacked on one payload, at most (each is a decoder in a chain of generators).
_MAX_CODINGS = 4
# The bytes of a payload looked at to tell a coded payload from one an archiver stored decoded.
_HEAD_BYTES = 64

# warcio logs "Replacing spaces in invalid WARC-Target-URI: ..." itself (to stderr, the URL's bytes
# raw) for a URL with a space, and replaces it with %20 as a browser would: nothing for the user.
logging.getLogger("warcio.recordloader").setLevel(logging.ERROR)


class BadArchive(Exception):
    """An archive that cannot be read (on): not an archive, damaged, cut short."""


class BadPayload(BadArchive):
    """A record whose payload cannot be taken (a damaged chunked body or content coding, a content
    coding not known) in an archive sound around it: its records after it can still be read."""


class _WholeFileGzip(Exception):
    """A WARC gzipped whole (one gzip member, as ``gzip`` makes it), not record by record: warcio
    stops after its first record; the file is read again through ``gzip``, past *records*."""

    def __init__(self, records: int):
        super().__init__(records)
        self.records = records


class _HeaderLinesOverBound(ArchiveLoadFailed):
    """A record whose header lines go past MAX_HEADER_BYTES."""


class _WrongLength(ArchiveLoadFailed):
    """A record not followed by its blank lines: its Content-Length is wrong."""


class _NoTargetURI(ArchiveLoadFailed):
    """A response, request or revisit record without a WARC-Target-URI (which warcio needs)."""


class _GzipCut(Exception):
    """A file gzipped whole that ends before its gzip stream does (not an EOFError: warcio takes
    that for the end of the file, and would read a cut file as a whole one)."""


class _PayloadDamage(Exception):
    """What is wrong with a payload's chunked body or content coding, in the user's words."""


class _Gunzipped(io.RawIOBase):
    """The bytes of a file gzipped whole, for warcio: read a block at a time (``read1``: a cut
    loses no byte read before it), and a stream cut short raising _GzipCut."""

    def __init__(self, stream: IO[bytes]):
        super().__init__()
        self.gunzip = gzip.GzipFile(fileobj=stream, mode="rb")

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        try:
            return self.gunzip.read1(size if size and size > 0 else _CHUNK)
        except EOFError:
            raise _GzipCut from None

    def tell(self) -> int:
        return self.gunzip.tell()

    def close(self) -> None:
        self.gunzip.close()
        super().close()


@dataclass
class Record:
    """What the import needs of one WARC record."""

    type: str  # WARC-Type: response, revisit, request, ...
    url: str  # WARC-Target-URI
    date: str  # WARC-Date
    status: int | None  # the HTTP status, None without HTTP headers
    headers: list[tuple[str, str]]  # the HTTP headers, in order
    payload_digest: str  # WARC-Payload-Digest, "" if none
    refers_to_url: str  # a revisit's WARC-Refers-To-Target-URI
    refers_to_date: str  # a revisit's WARC-Refers-To-Date
    archive: str  # the file (and WACZ member) it is in, for messages
    _record: Any  # warcio's record, to read the payload from before the next record
    _number: int = 0  # its place in the archive, for messages
    # Reads the rest of the record and checks that it ends where its Content-Length says (BadArchive).
    _check_end: Callable[[], None] = lambda: None
    record_id: str = ""  # WARC-Record-ID
    concurrent_to: tuple[str, ...] = ()  # its WARC-Concurrent-To values: the records of the same exchange
    method: str = ""  # a request record's HTTP method (GET, HEAD ...), upper case

    def header(self, name: str) -> str | None:
        """The HTTP header *name* (any case), the last of several, as a crawl reads it (Scrapy's
        ``Headers`` give the last value: a page's type and charset, a redirect's Location)."""
        name = name.lower()
        return next((value for key, value in reversed(self.headers) if key.lower() == name), None)

    def header_values(self, name: str) -> list[str]:
        name = name.lower()
        return [value for key, value in self.headers if key.lower() == name]

    def payload(self) -> bytes | None:
        """The payload, transfer and content codings undone; None when it is over MAX_PAYLOAD_BYTES.
        Raises BadArchive when the record is cut short or its Content-Length is wrong, BadPayload
        when its chunked body or content coding is damaged or not known."""
        payload = bytearray()
        block = _BlockBytes(self._record.raw_stream, self._archive_damage)
        try:
            with contextlib.closing(_decoded(block, self.headers)) as decoded:
                for piece in decoded:
                    payload += piece
                    if len(payload) > MAX_PAYLOAD_BYTES:
                        return None  # the rest is read (not decoded) before the next record
        except (_PayloadDamage, zlib.error, brotli.error, zstd.ZstdError) as error:
            # A record cut short, or whose Content-Length is wrong, damages its payload too: said first.
            self._check_end()
            why = str(error) if isinstance(error, _PayloadDamage) else "a damaged content coding"
            raise BadPayload(f"{self.archive}: the record for {readable_url(self.url)}: {why}, not taken") from None
        self._check_end()  # a payload cut short is never taken
        return bytes(payload)

    def _archive_damage(self, error: BaseException) -> BadArchive:
        return _said(self.archive, error, self._number, url=self.url)


class _BlockBytes:
    """A record's block after its HTTP headers (warcio's stream), the archive's own damage met in
    reading it (a damaged gzip member, a file cut short) raised as BadArchive: not a payload's damage."""

    def __init__(self, stream: Any, damage: Callable[[BaseException], BadArchive]):
        self.stream = stream
        self.damage = damage
        self.pending = b""  # bytes looked at (``head``) and not read yet

    def head(self, size: int) -> bytes:
        """The next *size* bytes (fewer at the end), still to be read."""
        while len(self.pending) < size:
            more = self._read(size - len(self.pending))
            if not more:
                break
            self.pending += more
        return self.pending[:size]

    def read(self, size: int) -> bytes:
        if self.pending:
            data, self.pending = self.pending[:size], self.pending[size:]
            return data
        return self._read(size)

    def readline(self, size: int) -> bytes:
        """A line of at most *size* bytes (its end included): shorter with no line end at the end."""
        line = b""
        if self.pending:
            end = self.pending.find(b"\n", 0, size)
            cut = end + 1 if end >= 0 else min(size, len(self.pending))
            line, self.pending = self.pending[:cut], self.pending[cut:]
            if line.endswith(b"\n") or len(line) >= size:
                return line
        try:
            return line + self.stream.readline(size - len(line))
        except _ARCHIVE_ERRORS as error:
            raise self.damage(error) from None

    def _read(self, size: int) -> bytes:
        try:
            return self.stream.read(size)
        except _ARCHIVE_ERRORS as error:
            raise self.damage(error) from None


def _decoded(block: _BlockBytes, headers: list[tuple[str, str]]) -> Iterator[bytes]:
    """The payload of *block*, in pieces of at most about _CHUNK bytes, its chunked transfer coding
    and its content codings undone (as Scrapy undoes them for a crawl: gzip, x-gzip, deflate, br,
    zstd).  A body an archiver stored decoded under its coding's header (pywb and others keep
    ``Transfer-Encoding: chunked`` on a body they dechunked) is taken as it is, when its first bytes
    say so: a page's, not a coding's.  Raises _PayloadDamage, or a decoder's own error."""
    transfer = _codings(headers, "transfer-encoding")
    chunked = bool(transfer) and transfer[-1] == "chunked"
    codings = _codings(headers, "content-encoding") + (transfer[:-1] if chunked else transfer)
    unknown = [coding for coding in codings if coding not in _DECODERS]
    if unknown:
        raise _PayloadDamage(f"a content coding that cannot be undone ({readable_excerpt(unknown[0])})")
    if len(codings) > _MAX_CODINGS:
        raise _PayloadDamage(f"more than {_MAX_CODINGS} content codings")
    if chunked and _no_chunk_framing(block.head(_HEAD_BYTES)):
        chunked = False
    body = _dechunked(block) if chunked else _pieces(block)
    for coding in reversed(codings):  # the last applied is undone first
        body = _undone(coding, body)
    return body


def _pieces(block: _BlockBytes) -> Iterator[bytes]:
    while piece := block.read(_CHUNK):
        yield piece


def _codings(headers: list[tuple[str, str]], name: str) -> list[str]:
    """The codings a header names (given once or more, a list each time), in the order applied."""
    listed = ",".join(value for key, value in headers if key.lower() == name)
    return [coding for coding in (part.strip().lower() for part in listed.split(",")) if coding not in _NO_CODING]


# Names of no coding at all ("none" is not HTTP's, but some servers send it).
_NO_CODING = ("", "identity", "none")


def _stored_decoded(head: bytes) -> bool:
    """Whether a payload begins as a page does (markup or a PDF), which no chunk-size line, gzip,
    zlib or zstd stream does: an archiver stored it decoded."""
    return head.lstrip(b" \t\r\n").removeprefix(b"\xef\xbb\xbf").startswith((b"<", b"%PDF-"))


def _no_chunk_framing(head: bytes) -> bool:
    """Whether a payload under ``Transfer-Encoding: chunked`` was stored dechunked: it does not begin
    with a chunk-size line (hexadecimal digits, an extension, a line break), as warcio judges it; a
    page, a gzip, zlib, brotli or zstd stream, text.  Framing that begins so and breaks later is damage."""
    return _CHUNK_SIZE_LINE.match(head) is None


def _dechunked(block: _BlockBytes) -> Iterator[bytes]:
    """The body of a chunked payload (RFC 9112 7.1), in pieces of about _CHUNK bytes (small chunks
    gathered: a piece each held millions of them): a chunk's size, however large, never makes it held
    whole.  Damaged framing, or more than MAX_CHUNKS chunks, raises _PayloadDamage."""
    gathered = bytearray()
    chunks = 0
    while True:
        line = block.readline(_CHUNK_LINE_BYTES + 1)
        if not line:
            # The block ends after a whole chunk, with no last chunk (0): taken, as warcio takes it
            # (and archives are written so: the chunks all there, the last one left out).
            if gathered:
                yield bytes(gathered)
            return
        if not line.endswith(b"\n"):
            if len(line) > _CHUNK_LINE_BYTES:
                raise _PayloadDamage(f"a damaged chunked body (a chunk-size line over {_CHUNK_LINE_BYTES} bytes)")
            raise _PayloadDamage("a damaged chunked body (it ends inside a chunk-size line)")
        size = line.split(b";", 1)[0].strip()
        if not _HEX.fullmatch(size):
            raise _PayloadDamage("a damaged chunked body (a chunk size that is no hexadecimal number)")
        left = int(size, 16)
        if not left:
            break
        chunks += 1
        if chunks > MAX_CHUNKS:
            raise _PayloadDamage(f"a damaged chunked body (more than {MAX_CHUNKS:,} chunks)")
        while left:
            data = block.read(min(left, _CHUNK))
            if not data:
                raise _PayloadDamage("a damaged chunked body (it ends inside a chunk)")
            left -= len(data)
            gathered += data
            if len(gathered) >= _CHUNK:
                yield bytes(gathered)
                gathered.clear()
        if block.readline(3) not in (b"\r\n", b"\n"):
            raise _PayloadDamage("a damaged chunked body (a chunk longer than its size)")
    if gathered:
        yield bytes(gathered)
    trailer = 0  # trailer fields, up to a blank line or the end of the block: not the payload's
    while (line := block.readline(_CHUNK_LINE_BYTES + 1)).strip():
        trailer += len(line)
        if trailer > _TRAILER_BYTES:
            raise _PayloadDamage(f"a damaged chunked body (trailer fields over {_TRAILER_BYTES // 1024} KB)")


_HEX = re.compile(rb"[0-9A-Fa-f]+")
# The first line of a chunked body, within the _HEAD_BYTES looked at (a size of 16 hexadecimal digits
# at most: more is no size a payload under the bound has).
_CHUNK_SIZE_LINE = re.compile(rb"[0-9A-Fa-f]{1,16}[ \t]*(?:;[^\r\n]*)?\r?\n")


def _undone(coding: str, body: Iterator[bytes]) -> Iterator[bytes]:
    """*body* with the content coding *coding* undone; as it is when it begins as a page, not as
    that coding (stored decoded: warcio's guess on a coding that fails, but not for a damaged one)."""
    head = b""
    for piece in body:
        head += piece
        if len(head) >= _HEAD_BYTES:
            break
    if not head:
        return
    rest = _prepended(head, body)
    if _stored_decoded(head) and not _starts_as(coding, head[:_HEAD_BYTES]):
        yield from rest
    else:
        yield from _DECODERS[coding](rest)


def _prepended(head: bytes, body: Iterator[bytes]) -> Iterator[bytes]:
    yield head
    yield from body


def _starts_as(coding: str, head: bytes) -> bool:
    """Whether *head*, which begins as a page does, may still begin a payload in *coding*: gzip and
    zstd streams begin with their own bytes, a zlib stream's first byte is never "<" nor "%"; a brotli
    or raw deflate stream may, and decoding its first bytes tells."""
    try:
        if coding == "br":
            brotli.Decompressor().process(head, output_buffer_limit=_CHUNK)
        elif coding == "deflate":
            zlib.decompressobj(-zlib.MAX_WBITS).decompress(head, _CHUNK)
        else:
            return False
    except (zlib.error, brotli.error):
        return False
    return True


def _gunzipped(body: Iterator[bytes]) -> Iterator[bytes]:
    """gzip: its members one after another; bytes after the last are ignored, as Scrapy does."""
    inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
    for piece in body:
        while piece:
            if inflate.eof:
                if not piece.startswith(b"\x1f"):  # no other member: the page is whole, its CRC checked
                    return
                inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
            yield from _inflated(inflate, piece)
            piece = inflate.unused_data
    if not inflate.eof:
        raise _PayloadDamage("a payload cut short in its content coding (gzip)")


def _deflated(body: Iterator[bytes]) -> Iterator[bytes]:
    """deflate: a zlib stream, or raw deflate as some servers send it (Scrapy reads both)."""
    inflate = None
    for piece in body:
        if inflate is None:
            zlib_header = len(piece) >= 2 and piece[0] & 0x0F == 8 and (piece[0] << 8 | piece[1]) % 31 == 0
            inflate = zlib.decompressobj(zlib.MAX_WBITS if zlib_header else -zlib.MAX_WBITS)
        if inflate.eof:
            return
        yield from _inflated(inflate, piece)
    if inflate is not None and not inflate.eof:
        raise _PayloadDamage("a payload cut short in its content coding (deflate)")


def _inflated(inflate: Any, data: bytes) -> Iterator[bytes]:
    """What zlib's *inflate* makes of *data*, _CHUNK bytes at a time (a bomb is never inflated whole)."""
    while True:
        out = inflate.decompress(data, _CHUNK)
        if out:
            yield out
        data = inflate.unconsumed_tail
        if inflate.eof or (not data and len(out) < _CHUNK):
            return


def _unbrotlied(body: Iterator[bytes]) -> Iterator[bytes]:
    """br, with brotli's own bound on its output (brotli >= 1.2): _CHUNK bytes or so at a time."""
    decompressor = brotli.Decompressor()
    for piece in body:
        out = decompressor.process(piece, output_buffer_limit=_CHUNK)
        while out:  # the rest of this piece's output, asked for with no more input
            yield out
            out = decompressor.process(b"", output_buffer_limit=_CHUNK)
        if decompressor.is_finished():  # bytes after the stream are ignored
            return
    raise _PayloadDamage("a payload cut short in its content coding (br)")


def _unzstded(body: Iterator[bytes]) -> Iterator[bytes]:
    """zstd: its frames one after another, _CHUNK bytes at a time."""
    decompressor = zstd.ZstdDecompressor()
    for piece in body:
        while piece:
            if decompressor.eof:
                decompressor = zstd.ZstdDecompressor()
            out = decompressor.decompress(piece, max_length=_CHUNK)
            while out:
                yield out
                if decompressor.eof or decompressor.needs_input:
                    break
                out = decompressor.decompress(b"", max_length=_CHUNK)
            piece = decompressor.unused_data if decompressor.eof else b""
    if not decompressor.eof:
        raise _PayloadDamage("a payload cut short in its content coding (zstd)")


_DECODERS: dict[str, Callable[[Iterator[bytes]], Iterator[bytes]]] = {
    "gzip": _gunzipped,
    "x-gzip": _gunzipped,
    "deflate": _deflated,
    "br": _unbrotlied,
    "zstd": _unzstded,
}


# A URL or a WACZ member's name in a message, at most (a content coding's name: 40 characters).
SHOWN_CHARACTERS = 200  # of a URL or a name from an archive, quoted in a message


def readable_excerpt(text: str, size: int = 40) -> str:
    """*text* from an archive, quoted in a message: at most *size* characters, anything but printable
    ASCII escaped (a terminal is not to be driven by an archive's bytes)."""
    shown = "".join(char if " " <= char <= "~" else ascii(char)[1:-1] for char in text[:size])
    return shown + ("..." if len(text) > size else "")


def readable_url(url: str) -> str:
    """*url* (or a member's name) from an archive, quoted in a message: its passwords masked, then its
    first SHOWN_CHARACTERS (cut first, a password longer than them lost the ``@`` its mask needs)."""
    return readable_excerpt(mask_url(url), SHOWN_CHARACTERS)


def archive_records(
    path: str | os.PathLike, bad_member: Callable[[BadArchive], None] | None = None
) -> Iterator[Record]:
    """The records of the archive file *path* (WARC, gzipped or not, or WACZ), in order.
    Raises BadArchive (with the file's name) when it cannot be read on, OSError when it cannot be opened.
    A WACZ member that cannot be read on is given to *bad_member*, if given, and the members after it
    are read (else it is raised)."""
    name = os.fspath(path)
    with ExitStack() as stack:
        file = stack.enter_context(open(name, "rb"))
        # A WACZ begins as a zip file does (a plain WARC may hold a zip's end marker in a record).
        wacz = file.read(4) == b"PK\x03\x04"
        file.seek(0)
        if wacz:
            try:
                archive = stack.enter_context(zipfile.ZipFile(file))
            except (zipfile.BadZipFile, OSError, ValueError) as error:
                raise BadArchive(f"{name}: a damaged zip file ({error})") from None
            yield from _wacz_records(name, archive, bad_member)
        else:

            def from_start() -> IO[bytes]:
                file.seek(0)
                return file

            yield from _records_of(name, from_start, os.fstat(file.fileno()).st_size)


def _wacz_records(
    name: str, wacz: zipfile.ZipFile, bad_member: Callable[[BadArchive], None] | None = None
) -> Iterator[Record]:
    """The records of the WACZ's WARCs, each member read once by its own zip entry (two entries may
    bear one name: by name, zipfile opens the last, twice); a member that cannot be read on given to
    *bad_member*, the next ones read."""
    members = [info for info in wacz.infolist() if _is_warc_member(info.filename)]
    if not members:
        raise BadArchive(f"{name}: a zip file with no WARC in {WACZ_ARCHIVES}: not a WACZ")
    for member in _wacz_order(wacz, members):
        shown = f"{name}: {readable_url(member.filename)}"
        with ExitStack() as opened:

            def member_stream(member: zipfile.ZipInfo = member, shown: str = shown) -> IO[bytes]:
                try:
                    return opened.enter_context(wacz.open(member))
                except (zipfile.BadZipFile, NotImplementedError, RuntimeError) as error:  # encrypted, unknown method
                    raise BadArchive(f"{shown}: {error}") from None

            try:
                yield from _records_of(shown, member_stream, member.file_size)
            except BadArchive as error:
                if bad_member is None:
                    raise
                bad_member(error)


def _is_warc_member(member: str) -> bool:
    return member.startswith(WACZ_ARCHIVES) and member.endswith((".warc", ".warc.gz"))


def _wacz_order(wacz: zipfile.ZipFile, members: list[zipfile.ZipInfo]) -> list[zipfile.ZipInfo]:
    """The WARCs in the order datapackage.json lists its resources, else by name (entries of one name
    in their order in the zip file)."""
    try:
        info = wacz.getinfo("datapackage.json")
        if info.file_size > MAX_DATAPACKAGE_BYTES:
            raise ValueError("too large")
        listed = [resource.get("path") for resource in json.loads(wacz.read(info)).get("resources", [])]
    except (KeyError, ValueError, AttributeError, TypeError, RecursionError, zipfile.BadZipFile):
        return sorted(members, key=lambda member: member.filename)  # RecursionError: arrays nested too deep
    order = {path: index for index, path in enumerate(listed) if isinstance(path, str)}
    return sorted(members, key=lambda member: (order.get(member.filename, len(order)), member.filename))


class _QuietArchiveIterator(ArchiveIterator):
    """warcio's iterator, but a record not followed by its blank lines (a wrong Content-Length: the
    file is damaged there) stops the reading, instead of a warning on stderr and a guess; header
    lines are bounded (``_bound_header_lines``); and a record without the target URI warcio needs is
    said as such (warcio fails on it with an AttributeError)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._new_header_budget = _bound_header_lines(self.reader)
        _damage_raised(self.reader)
        self.cut_in_a_member = False  # set on closing
        load_http_headers = self.loader.load_http_headers

        def http_headers(rec_type: str | None, uri: str | None, stream: Any, length: int | None) -> Any:
            if uri is None and length != 0 and rec_type in self.loader.HTTP_RECORDS:
                raise _NoTargetURI(f"a {rec_type} record without a WARC-Target-URI")
            return load_http_headers(rec_type, uri, stream, length)

        self.loader.load_http_headers = http_headers

    def _next_record(self, next_line: Any) -> Any:
        self._new_header_budget()  # each record's headers have the whole bound
        return super()._next_record(next_line)

    def close(self) -> None:
        # A gzip member still open at the end of the file: cut before its end (warcio takes the end
        # of the bytes for the end of the archive, even inside a member).
        decompressor = getattr(self.reader, "decompressor", None)
        self.cut_in_a_member = decompressor is not None and not getattr(decompressor, "eof", True)
        super().close()

    def _consume_blanklines(self) -> Any:
        errors = self.err_count
        with contextlib.redirect_stderr(io.StringIO()):
            found = super()._consume_blanklines()
        if self.err_count > errors:
            raise _WrongLength("its Content-Length is wrong (no blank line after its block)")
        return found


def _damage_raised(reader: Any) -> None:
    """A gzip member that cannot be decompressed raises ``zlib.error`` from warcio's *reader* (the file
    is damaged there): past the member's start warcio writes the error on stderr and reads on as if
    the member had ended; at its start it takes the member's bytes for a plain stream (to read a
    plain WARC), and quotes them raw as a record's first line.  That guess stays for bytes that are
    no gzip member: a gzip member begins with 1f 8b."""
    decompress = getattr(reader, "_decompress", None)
    if decompress is None:
        return

    def checked(data: bytes) -> bytes:
        if reader.decompressor and data and (reader.num_block_read != 0 or data.startswith(b"\x1f\x8b")):
            return reader.decompressor.decompress(data)
        return decompress(data)

    reader._decompress = checked


def _bound_header_lines(reader: Any) -> Callable[[], None]:
    """At most MAX_HEADER_BYTES of lines read from warcio's *reader* for a record's headers, or between
    two reads of its block (the chunk-size lines of a chunked payload): warcio reads a record's WARC
    and HTTP headers line by line and keeps them whole, so a hostile file of one endless line, or of
    endless header lines, would be held in memory.  Returns what starts a record's bound anew."""
    readline, read = reader.readline, reader.read
    left = [MAX_HEADER_BYTES]

    def anew() -> None:
        left[0] = MAX_HEADER_BYTES

    def bounded_readline(length: int | None = None) -> bytes:
        allowed = left[0] + 1
        line = readline(allowed if not length or length > allowed else length)
        left[0] -= len(line)
        if left[0] < 0:
            raise _HeaderLinesOverBound(f"header lines of more than {MAX_HEADER_BYTES // 1024} KB")
        return line

    def reading(*args: Any) -> bytes:
        anew()
        return read(*args)

    reader.readline, reader.read = bounded_readline, reading
    return anew


def _records_of(name: str, open_stream: Callable[[], IO[bytes]], size: int | None = None) -> Iterator[Record]:
    """The records of the WARC *open_stream* gives (from its start each time it is called, *size*
    bytes when known), whether gzipped record by record, gzipped whole, or plain."""
    try:
        yield from _warc_records(name, open_stream(), size=size)
    except _WholeFileGzip as whole:
        with _Gunzipped(open_stream()) as stream:
            yield from _warc_records(name, stream, skip=whole.records)


def _warc_records(name: str, stream: IO[bytes], skip: int = 0, size: int | None = None) -> Iterator[Record]:
    """The records of *stream* after the first *skip* (each still checked whole); raises
    _WholeFileGzip when the stream is a WARC gzipped whole and *skip* is 0.  With the stream's
    *size*, bytes left after the last record warcio read (a record cut before its block: warcio
    takes that for the end of the file) make it a BadArchive."""
    iterator = _QuietArchiveIterator(stream, ensure_http_headers=False)
    count = 0
    try:
        for record in iterator:
            count += 1
            if not (record.format or "").startswith("warc"):  # ARC, or text warcio took for ARC
                raise BadArchive(f"{name}: not a WARC file")
            length = (record.rec_headers.get_header("Content-Length") or "").strip()
            if not length:  # warcio would read to the end of the file
                raise BadArchive(f"{name}: damaged at record {count}: a record without a Content-Length")
            if not (length.isascii() and length.isdigit()):  # warcio would read nothing, or take fullwidth digits
                raise BadArchive(
                    f"{name}: damaged at record {count}: "
                    f"a Content-Length that is no number ({readable_excerpt(length)})"
                )
            if count <= skip:  # yielded by the reading that found the file gzipped whole
                _read_to_end(record, name)
                continue
            headers = record.rec_headers
            http = record.http_headers
            status = None
            if http is not None and record.rec_type in ("response", "revisit"):
                try:
                    status = int(http.get_statuscode())
                except (TypeError, ValueError):
                    status = None

            url = archived_url(headers.get_header("WARC-Target-URI"))
            method = ""
            if http is not None and record.rec_type == "request":
                method = str(http.protocol or "").strip().upper()

            def check_end(record: Any = record, number: int = count, url: str = url) -> None:
                """The record read to its end, and that end where its Content-Length says."""
                try:
                    _read_to_end(record, name)
                    iterator.read_to_end()  # its blank lines (``_consume_blanklines``); once a record
                except _ARCHIVE_ERRORS as error:
                    raise _said(name, error, number, url=url) from None

            yield Record(
                type=record.rec_type or "",
                url=url,
                date=_field(headers.get_header("WARC-Date")),
                status=status,
                headers=list(http.headers) if http is not None else [],
                payload_digest=_field(headers.get_header("WARC-Payload-Digest")),
                refers_to_url=archived_url(headers.get_header("WARC-Refers-To-Target-URI")),
                refers_to_date=_field(headers.get_header("WARC-Refers-To-Date")),
                archive=name,
                _record=record,
                _number=count,
                _check_end=check_end,
                record_id=_field(headers.get_header("WARC-Record-ID")).strip(),
                concurrent_to=tuple(
                    _field(value).strip()
                    for field, value in headers.headers
                    if field.lower() == "warc-concurrent-to" and _field(value).strip()
                ),
                method=method,
            )
            # A record not read by the caller is still checked whole before the next one.
            _read_to_end(record, name)
        if count == 0:
            raise BadArchive(f"{name}: not a WARC file (no record)")
        if iterator.cut_in_a_member:
            raise BadArchive(f"{name}: cut short after record {count}")
        if size is not None and iterator.offset < size:
            stream.seek(iterator.offset)
            if not _holds_no_record(stream.read(_TAIL_BYTES)):
                raise BadArchive(f"{name}: cut short after record {count}")
    except ArchiveLoadFailed as error:
        if "non-chunked gzip" in str(error) and not skip:
            raise _WholeFileGzip(count) from None
        raise _said(name, error, count, at_start=count == 0 and not skip) from None
    except _ARCHIVE_ERRORS as error:
        raise _said(name, error, count, at_start=count == 0 and not skip) from None


def _field(value: str | None) -> str:
    """A WARC field's value as the import keeps it: "" for none, or for one over MAX_FIELD_CHARACTERS."""
    return value if value is not None and len(value) <= MAX_FIELD_CHARACTERS else ""


# What reading an archive raises where it is damaged or cut: warcio's own errors, its reader's
# zlib.error (``_damage_raised``), and what it lets through from a record's headers it cannot read.
_ARCHIVE_ERRORS = (
    ArchiveLoadFailed,
    _GzipCut,
    zlib.error,
    EOFError,
    OSError,  # gzip.BadGzipFile (a file gzipped whole), a disk's read error
    zipfile.BadZipFile,  # a WACZ member that fails its CRC
    ValueError,
    IndexError,
    UnicodeDecodeError,
    AttributeError,  # warcio on headers it does not expect
)


def _said(name: str, error: BaseException, count: int, *, at_start: bool = False, url: str | None = None) -> BadArchive:
    """*error*, met in the archive *name* after its record *count* (in that record's block, for *url*,
    when given), told in the user's terms: what is wrong and where, no internal text nor raw bytes of
    the archive.  *at_start*: before any record."""
    if isinstance(error, BadArchive):
        return error
    if isinstance(error, _HeaderLinesOverBound | _NoTargetURI):  # in the headers of the next record
        return BadArchive(f"{name}: damaged at record {count + 1}: {error}")
    if isinstance(error, _WrongLength):
        return BadArchive(f"{name}: damaged at record {count}: {error}")
    if isinstance(error, _GzipCut | EOFError):  # a gzip stream that ends before its end marker
        return BadArchive(
            f"{name}: cut short "
            + (f"in the record for {readable_url(url)}" if url is not None else f"after record {count}")
        )
    where = "not a WARC file" if at_start else f"damaged after record {count}"
    if url is not None:
        where = f"damaged in the record for {readable_url(url)}"
    if isinstance(error, zlib.error | gzip.BadGzipFile):
        why = "a damaged gzip member"
    elif isinstance(error, zipfile.BadZipFile):
        why = "a damaged zip member (its CRC-32 does not match)" if "CRC" in str(error) else "a damaged zip member"
        where = where if count else "damaged"
    elif isinstance(error, OSError):
        return BadArchive(f"{name}: cannot be read after record {count}: {error.strerror or first_line(error)}")
    elif isinstance(error, ArchiveLoadFailed):  # "Invalid WARC record, first line: " and the bytes there
        if at_start:
            return BadArchive(f"{name}: not a WARC file")
        why = "no WARC record where the next one begins"
    else:
        why = "a record whose headers cannot be read"
    return BadArchive(f"{name}: {where}: {why}")


def _holds_no_record(tail: bytes) -> bool:
    """Whether the bytes after the last record warcio read hold no record: blank lines and padding,
    or empty gzip members (a BGZF end block); a partial gzip member or any other byte is a record cut."""
    if tail.startswith(b"\x1f\x8b"):
        try:
            tail = gzip.decompress(tail)
        except (OSError, EOFError, zlib.error):
            return False
    return not tail.strip(b"\r\n\t \x00")


def _read_to_end(record: Any, name: str) -> None:
    """Read what is left of the record's block; raise BadArchive when it ends before its Content-Length."""
    raw = record.raw_stream
    while raw.read(_CHUNK):
        pass
    if getattr(raw, "limit", 0) > 0:
        url = archived_url(record.rec_headers.get_header("WARC-Target-URI"))
        raise BadArchive(f"{name}: cut short in the record for {readable_url(url)}")
