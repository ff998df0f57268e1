"""Reading a crawl's WARC file back: where its whole records end, and its CDXJ index."""

from __future__ import annotations

import functools
import io
import os
import threading
import warnings
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from ..atomicfile import write_atomically

CHUNK = 1 << 16
# Only a record's header block is kept while scanning; ours are a few hundred bytes.
HEAD_LIMIT = 1 << 16
# The records written in the same write as the record after them (a response
# before its request): the file is never cut between the two.
FIRST_OF_A_PAIR = ("response", "revisit")


class NotAWarcFile(ValueError):
    """The file does not begin with a gzipped WARC record: it is not ours to cut or to append to."""


@dataclass(frozen=True)
class WarcScan:
    """What ``scan_warc`` found in a file."""

    end: int  # where the last whole warcinfo or exchange ends: anything after it is a torn write
    size: int  # the file's size
    records: int  # the whole records before *end*


def scan_warc(path: str | os.PathLike) -> WarcScan:
    """Find where the whole records of the gzipped WARC *path* end.

    warcio's ArchiveIterator reads a gzip member cut short, or a record shorter
    than its Content-Length, without an error, so each member is inflated here:
    a record is whole when its member ends with a good CRC and it holds exactly
    Content-Length bytes after its header block, then CRLF CRLF.
    """
    end = records = offset = 0
    with open(path, "rb") as stream:
        size = os.fstat(stream.fileno()).st_size
        data = b""
        pending = 0  # records after *end* that wait for the rest of their pair
        while offset < size:
            state, rec_type, used, data = _next_member(stream, data)
            if state == "bad" and offset == 0:
                raise NotAWarcFile("it does not begin with a gzipped WARC record")
            if state != "whole":
                break
            offset += used
            pending += 1
            if rec_type not in FIRST_OF_A_PAIR:
                end, records, pending = offset, records + pending, 0
    return WarcScan(end=end, size=size, records=records)


def _next_member(stream: BinaryIO, data: bytes) -> tuple[str, str | None, int, bytes]:
    """Inflate the gzip member at the start of *data* (read on from *stream*).

    Returns ("whole" | "torn" | "bad", its WARC-Type, its compressed length,
    the bytes read past it).  "torn" is the beginning of a record (a write cut
    short), "bad" is not a gzipped WARC record at all."""
    inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
    used = total = 0
    head = tail = b""
    while not inflater.eof:
        if not data:
            data = stream.read(CHUNK)
            if not data:
                return ("torn" if b"WARC/".startswith(head[:5]) else "bad"), None, used, b""
        try:
            out = inflater.decompress(data)
        except zlib.error:
            return "bad", None, used, b""
        used += len(data) - len(inflater.unused_data)
        data = inflater.unused_data
        if len(head) < HEAD_LIMIT:
            head += out[: HEAD_LIMIT - len(head)]
        if len(head) >= 5 and not head.startswith(b"WARC/"):
            return "bad", None, used, b""
        total += len(out)
        tail = (tail + out)[-4:]
    rec_type, length = _warc_fields(head)
    if length is None:
        return "bad", None, used, data
    header_end = head.find(b"\r\n\r\n") + 4
    whole = total == header_end + length + 4 and tail == b"\r\n\r\n"
    return ("whole" if whole else "bad"), rec_type, used, data


def _warc_fields(head: bytes) -> tuple[str | None, int | None]:
    """WARC-Type and Content-Length of the header block at the start of *head* (None: no such block)."""
    block, found, _ = head.partition(b"\r\n\r\n")
    if not found:
        return None, None
    fields = {}
    for line in block.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        fields[name.strip().lower()] = value.strip()
    try:
        length = int(fields[b"content-length"])
    except (KeyError, ValueError):
        return None, None
    rec_type = fields.get(b"warc-type")
    return (rec_type.decode("latin-1") if rec_type else None), length


def cdxj_path(warc: str | os.PathLike) -> Path:
    """The index beside *warc*: ``crawl.warc.gz`` -> ``crawl.cdxj``."""
    path = Path(warc)
    name = path.name
    for suffix in (".warc.gz", ".warc"):
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
            break
    return path.with_name(name + ".cdxj")


_IMPORT_LOCK = threading.Lock()


def _cdxj_indexer() -> Any:
    """cdxj-indexer's module and ``PlacedIndexer``, made on first use (by the writer thread or the
    thread that indexes a file's earlier records, whichever comes first)."""
    with _IMPORT_LOCK:
        return _load_cdxj_indexer()


@functools.cache
def _load_cdxj_indexer() -> Any:
    # surt and its dependencies take 0.2 s to load, and only a crawl with a
    # WARC file needs them.  py3amf, which cdxj-indexer imports, tries
    # pkg_resources first and works without it: its deprecation warning would
    # only be noise in the crawl's log.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "pkg_resources is deprecated", UserWarning)
        from cdxj_indexer import main

    class PlacedIndexer(main.CDXJIndexer):
        """cdxj-indexer, told where in the file the record it indexes lies (``index_built``)."""

        place: tuple[int, int] | None = None  # offset, length

        def __init__(self, *args: Any, **kwargs: Any):
            super().__init__(*args, **kwargs)
            self.curr_filename = self.force_filename  # set by process_one, which index_built does not call

        def get_field(self, record: Any, name: str, it: Any, filename: str) -> Any:
            if self.place is not None and name in ("offset", "length"):
                return str(self.place[0] if name == "offset" else self.place[1])
            return super().get_field(record, name, it, filename)

    return main, PlacedIndexer


class IndexingStopped(Exception):
    """``CdxjIndexer.index_file`` was told to stop."""


class CdxjIndexer:
    """The CDXJ lines of one WARC file, made by cdxj-indexer's own code (pywb's format), a record
    or a part of the file at a time: the writer indexes each record as it appends it, so the index
    needs no second reading of the file.

    Each line is ``SURT-key timestamp {json}`` for a response, revisit, resource or metadata
    record, exactly as ``cdxj-indexer`` makes it for the whole file."""

    def __init__(self, filename: str):
        self.filename = filename  # the "filename" field: the WARC file's name
        _, indexer = _cdxj_indexer()
        self.indexer = indexer(None, [], filename=filename)

    def index_built(self, record: Any, offset: int, length: int) -> list[str]:
        """The lines for *record* (warcio's ArcWarcRecord, as written), stored in the file as the
        *length* bytes at *offset*: cdxj-indexer's code for a record it has read."""
        self.indexer.place = (offset, length)
        out = io.StringIO()
        if self.indexer.filter_record(record):
            self.indexer.process_index_entry(None, record, self.filename, out)
        return out.getvalue().splitlines(keepends=True)

    def index_file(self, path: str | os.PathLike, end: int, stop: threading.Event | None = None) -> list[str]:
        """The lines for the first *end* bytes of the gzipped WARC *path* (whole records);
        raises IndexingStopped once *stop* is set."""
        self.indexer.place = None
        out = io.StringIO()
        with open(path, "rb") as stream:
            self.indexer.process_one(_Prefix(stream, end, stop), out, self.filename)
        return out.getvalue().splitlines(keepends=True)


class _Prefix:
    """The first *end* bytes of *stream*, for cdxj-indexer to read (it counts offsets with tell)."""

    def __init__(self, stream: BinaryIO, end: int, stop: threading.Event | None):
        self.stream = stream
        self.left = end
        self.position = 0
        self.stop = stop

    def read(self, size: int | None = -1) -> bytes:
        if self.stop is not None and self.stop.is_set():
            raise IndexingStopped
        if size is None or size < 0 or size > self.left:
            size = self.left
        data = self.stream.read(size)
        self.left -= len(data)
        self.position += len(data)
        return data

    def tell(self) -> int:
        return self.position


def write_cdxj(warc: str | os.PathLike, lines: Iterable[str], *, fsync: bool = False) -> Path:
    """Write the index of *warc* from its lines (``CdxjIndexer``), sorted as cdxj-indexer sorts them;
    the index replaces ``cdxj_path(warc)`` whole or not at all."""
    main, _ = _cdxj_indexer()
    out = io.StringIO()
    sorter = main.SortingWriter(out)
    for line in lines:
        sorter.write(line)
    sorter.flush()
    target = cdxj_path(warc)
    write_atomically(target, out.getvalue().encode("utf-8"), fsync=fsync)
    return target
