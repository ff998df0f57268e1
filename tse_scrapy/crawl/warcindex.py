"""Reading a crawl's WARC file back: where its whole records end, and its CDXJ index."""

from __future__ import annotations

import io
import os
import warnings
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

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


def write_cdxj(warc: str | os.PathLike, *, fsync: bool = False) -> Path:
    """Index every response, revisit, resource and metadata record of *warc*, sorted (pywb's CDXJ);
    the index replaces ``cdxj_path(warc)`` whole or not at all."""
    # Imported here: surt and its dependencies take 0.2 s to load, and only a
    # crawl with a WARC file needs them.  py3amf, which cdxj-indexer imports,
    # tries pkg_resources first and works without it: its deprecation warning
    # would only be noise in the crawl's log.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "pkg_resources is deprecated", UserWarning)
        from cdxj_indexer.main import CDXJIndexer

    lines = io.StringIO()
    CDXJIndexer(lines, [os.fspath(warc)], sort=True).process_all()
    target = cdxj_path(warc)
    write_atomically(target, lines.getvalue().encode("utf-8"), fsync=fsync)
    return target
