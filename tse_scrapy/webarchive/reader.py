"""Reading web archives made by any tool: WARC (gzipped per record, gzipped whole, or plain) and WACZ.

warcio parses the records and undoes the transfer and content codings.  What warcio lets pass is
checked here: a record cut short (warcio reads a truncated file to its end without an error, and
takes a record cut before its block for the end of the file), a payload over the size bound (never
held whole: reading stops one byte past it), a file that is no archive at all.  A WARC gzipped as
one member, which warcio refuses after its first record, is read again through ``gzip``.  Each
problem is a ``BadArchive`` naming the file and where; what was read before it stays good.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import IO, Any

from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed

from ..exitcodes import first_line
from ..rules.files.webarchive import archived_url

# A payload (decoded) larger than this is skipped: the crawl's own bound on a page (DOWNLOAD_MAXSIZE).
MAX_PAYLOAD_BYTES = 32 * 1024 * 1024
# A WACZ holds its WARCs in archive/; datapackage.json is read only for their order.
WACZ_ARCHIVES = "archive/"
MAX_DATAPACKAGE_BYTES = 16 * 1024 * 1024
_CHUNK = 1 << 20
# A record's WARC and HTTP header lines together (warcio keeps them whole), at most.
MAX_HEADER_BYTES = 1024 * 1024
_TAIL_BYTES = 4096  # read past the last record: blank lines and padding, or the start of a record cut short


class BadArchive(Exception):
    """An archive that cannot be read (on): not an archive, damaged, cut short."""


class _WholeFileGzip(Exception):
    """A WARC gzipped whole (one gzip member, as ``gzip`` makes it), not record by record: warcio
    stops after its first record; the file is read again through ``gzip``, past *records*."""

    def __init__(self, records: int):
        super().__init__(records)
        self.records = records


class _HeaderLinesOverBound(ArchiveLoadFailed):
    """A record whose header lines go past MAX_HEADER_BYTES."""


class _GzipCut(Exception):
    """A file gzipped whole that ends before its gzip stream does (not an EOFError: warcio takes
    that for the end of the file, and would read a cut file as a whole one)."""


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

    def header(self, name: str) -> str | None:
        """The first HTTP header *name* (any case)."""
        name = name.lower()
        return next((value for key, value in self.headers if key.lower() == name), None)

    def header_values(self, name: str) -> list[str]:
        name = name.lower()
        return [value for key, value in self.headers if key.lower() == name]

    def payload(self) -> bytes | None:
        """The payload, transfer and content codings undone; None when it is over MAX_PAYLOAD_BYTES.
        Raises BadArchive when the record is cut short."""
        stream = self._record.content_stream()
        pieces = []
        size = 0
        try:
            while size <= MAX_PAYLOAD_BYTES:
                piece = stream.read(min(_CHUNK, MAX_PAYLOAD_BYTES + 1 - size))
                if not piece:
                    break
                pieces.append(piece)
                size += len(piece)
        except _GzipCut:  # the gzip stream of an archive gzipped whole ends in this record
            raise BadArchive(f"{self.archive}: cut short in the record for {self.url}") from None
        except (zlib.error, OSError, ValueError, zipfile.BadZipFile) as error:  # a damaged coding
            raise BadArchive(f"{self.archive}: a damaged record for {self.url}: {error}") from None
        if size > MAX_PAYLOAD_BYTES:
            return None
        _read_to_end(self._record, self.archive)  # a payload cut short is never taken
        return b"".join(pieces)


def archive_records(path: str | os.PathLike) -> Iterator[Record]:
    """The records of the archive file *path* (WARC, gzipped or not, or WACZ), in order.
    Raises BadArchive (with the file's name) when it cannot be read on, OSError when it cannot be opened."""
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
            yield from _wacz_records(name, archive)
        else:

            def from_start() -> IO[bytes]:
                file.seek(0)
                return file

            yield from _records_of(name, from_start, os.fstat(file.fileno()).st_size)


def _wacz_records(name: str, wacz: zipfile.ZipFile) -> Iterator[Record]:
    members = [info.filename for info in wacz.infolist() if _is_warc_member(info.filename)]
    if not members:
        raise BadArchive(f"{name}: a zip file with no WARC in {WACZ_ARCHIVES}: not a WACZ")
    for member in _wacz_order(wacz, members):
        with ExitStack() as opened:

            def member_stream(member: str = member) -> IO[bytes]:
                try:
                    return opened.enter_context(wacz.open(member))
                except (zipfile.BadZipFile, NotImplementedError, RuntimeError) as error:  # encrypted, unknown method
                    raise BadArchive(f"{name}: {member}: {error}") from None

            yield from _records_of(f"{name}: {member}", member_stream, wacz.getinfo(member).file_size)


def _is_warc_member(member: str) -> bool:
    return member.startswith(WACZ_ARCHIVES) and member.endswith((".warc", ".warc.gz"))


def _wacz_order(wacz: zipfile.ZipFile, members: list[str]) -> list[str]:
    """The WARCs in the order datapackage.json lists its resources, else by name."""
    try:
        info = wacz.getinfo("datapackage.json")
        if info.file_size > MAX_DATAPACKAGE_BYTES:
            raise ValueError("too large")
        listed = [resource.get("path") for resource in json.loads(wacz.read(info)).get("resources", [])]
    except (KeyError, ValueError, AttributeError, TypeError, zipfile.BadZipFile):
        return sorted(members)
    order = {path: index for index, path in enumerate(listed) if isinstance(path, str)}
    return sorted(members, key=lambda member: (order.get(member, len(order)), member))


class _QuietArchiveIterator(ArchiveIterator):
    """warcio's iterator, but a record not followed by its blank lines (a wrong Content-Length: the
    file is damaged there) stops the reading, instead of a warning on stderr and a guess; and header
    lines are bounded (``_bound_header_lines``)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._new_header_budget = _bound_header_lines(self.reader)
        _damage_raised(self.reader)
        self.cut_in_a_member = False  # set on closing

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
            raise ArchiveLoadFailed("a record not followed by a blank line (its Content-Length is wrong)")
        return found


def _damage_raised(reader: Any) -> None:
    """A gzip member that cannot be decompressed past its start raises ``zlib.error`` from warcio's
    *reader* (the file is damaged there): warcio writes the error on stderr, once a read, and reads on
    as if the member had ended.  At a member's start warcio's own guess stays (a plain stream)."""
    decompress = getattr(reader, "_decompress", None)
    if decompress is None:
        return

    def checked(data: bytes) -> bytes:
        if reader.decompressor and data and reader.num_block_read != 0:
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
            length = record.rec_headers.get_header("Content-Length")
            if length is None or not length.strip().isdigit():  # warcio would read to the end, or nothing
                raise BadArchive(f"{name}: damaged at record {count}: a record without a Content-Length")
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
            yield Record(
                type=record.rec_type or "",
                url=archived_url(headers.get_header("WARC-Target-URI")),
                date=headers.get_header("WARC-Date") or "",
                status=status,
                headers=list(http.headers) if http is not None else [],
                payload_digest=headers.get_header("WARC-Payload-Digest") or "",
                refers_to_url=archived_url(headers.get_header("WARC-Refers-To-Target-URI")),
                refers_to_date=headers.get_header("WARC-Refers-To-Date") or "",
                archive=name,
                _record=record,
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
    except _HeaderLinesOverBound as error:
        raise BadArchive(f"{name}: damaged at record {count + 1}: {error}") from None
    except _GzipCut:
        raise BadArchive(f"{name}: cut short after record {count}") from None
    except ArchiveLoadFailed as error:
        if "non-chunked gzip" in str(error) and not skip:
            raise _WholeFileGzip(count) from None
        what = "not a WARC file" if count == 0 and not skip else f"damaged after record {count}"
        raise BadArchive(f"{name}: {what} ({first_line(error)})") from None
    except (
        zlib.error,
        EOFError,
        OSError,
        ValueError,
        IndexError,
        UnicodeDecodeError,
        AttributeError,  # warcio on a record without a WARC-Target-URI
        zipfile.BadZipFile,  # a WACZ member that fails its CRC
    ) as error:
        if isinstance(error, EOFError) and count:  # a gzip stream that ends before its end marker
            raise BadArchive(f"{name}: cut short after record {count} ({first_line(error)})") from None
        what = "not a WARC file" if count == 0 and not skip else f"damaged after record {count}"
        raise BadArchive(f"{name}: {what} ({type(error).__name__}: {first_line(error)})") from None


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
        raise BadArchive(f"{name}: cut short in the record for {url}")
