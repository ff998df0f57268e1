"""Index files on disk: the text index and its binary sidecar, each written atomically.

Beside the text index (``rules.files.indexfile``) the indexer writes
``INDEXFILE.bin``, the same postings in a form the querier opens without
parsing: a table of words and offsets into one array of docID/count numbers.
It records the text file's size and BLAKE2b digest, and a digest of its own
header's counts and sections; a sidecar that does not match its text file, or
whose size, counts or sections are not as written (damaged), is ignored:
postings are then read from the text.

Hashing a large text index on every start would cost more than the rest of
the start, so ``tse index`` also writes ``INDEXFILE.stamp``: the text file's
size, modification time and inode as it was written, with its digest, and the
sidecar's size, time and inode.  A reader whose text file still has that
size, time and inode takes the digest from the stamp; otherwise (the text
replaced or rewritten, even to the same size, the stamp missing or of another
file) it hashes the text, as before.  Likewise a sidecar still as stamped is
taken as written; another one (copied, rewritten in place) has its sections
hashed first (0.1 s for the 20,000-page bench's 99 MB).

``IndexFileWriter`` writes an index streamed word by word (from merged runs,
``index/runs.py``): the text to its temporary file, hashed as it goes, the
sidecar's sections to temporary files put together at the end.
"""

from __future__ import annotations

import errno
import hashlib
import io
import mmap
import os
import struct
import sys
from array import array
from bisect import bisect_left
from collections.abc import ItemsView, Iterable, Iterator, KeysView, Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from functools import cached_property
from itertools import chain
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

from ..atomicfile import open_partial, partial_path, put_in_place, write_atomically, write_beside
from ..rules.files.indexfile import Index, format_index, parse_index
from ..rules.files.outputfile import REGULAR, file_type
from ..rules.files.pagedir import open_regular_file
from .pagefiles import FileKey, file_key
from .runs import number_type

SIDECAR_SUFFIX = ".bin"
STAMP_SUFFIX = ".stamp"
_MAGIC = b"TSEIDX02"
# magic, text digest, text size, words, bytes of words, pairs, bytes per number, and the digest of the
# header's fields before it and of the sections (``_sealed``): a count changed cuts the sections elsewhere
_HEADER = struct.Struct("<8s16sQQQQQ16s")
_SEAL = 16  # the header's last field
_UINT32 = "I" if array("I").itemsize == 4 else "L"
_UINT16 = "H"


def sidecar_path(path: str | os.PathLike) -> Path:
    return Path(str(path) + SIDECAR_SUFFIX)


def stamp_path(path: str | os.PathLike) -> Path:
    return Path(str(path) + STAMP_SUFFIX)


def read_index(path: str | os.PathLike) -> Index:
    """The text index at *path* (IndexFileError names the file and line of a fault; OSError when it is
    no regular file, ``open_regular``)."""
    with open_regular(path) as file:
        return parse_index(file.read(), str(path))


def open_regular(path: str | os.PathLike) -> BinaryIO:
    """*path* open for reading when it is a regular file, else OSError saying what it is: a device
    (/dev/zero) would be read without end, a FIFO's opening or reading would wait for ever."""
    try:
        return open_regular_file(path)
    except OSError as error:
        if error.errno != errno.EINVAL:
            raise
        try:
            found = file_type(os.stat(path).st_mode)
        except OSError:
            raise error from None
        if found == REGULAR:  # (another file in its place since)
            raise
        raise OSError(errno.EINVAL, f"{found}, not a regular file", os.fspath(path)) from None


def write_index(path: str | os.PathLike, index: Index, *, sidecar: bool = True) -> tuple[int, bytes]:
    """Write the text index (and its sidecar), each atomically; return the text's size and digest.

    Without the sidecar, a stamp left by ``tse index`` is removed first: it does not describe the new text."""
    text = format_index(index)
    if not sidecar:
        stamp_path(path).unlink(missing_ok=True)
    write_atomically(path, text)
    if sidecar:
        write_atomically(sidecar_path(path), _encode_sidecar(index, text))
        write_stamp(path, text_digest(text))
    return len(text), text_digest(text)


class IndexReader:
    """Postings by word, from the sidecar when it matches the text, else from the text."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        with open_regular(self.path) as file:
            status = os.fstat(file.fileno())
            self.size = status.st_size
            self.key = file_key(status)  # of the very file read: ``tse serve`` looks for another written in its place
            text = None
            digest = stamped_digest(self.path, status)
            if digest is None:  # no stamp of this very file: hash it
                text = file.read()
                digest = text_digest(text)
            self.digest = digest  # what the sidecars and the document store are checked against
            self.from_sidecar = self._open_sidecar()
            if not self.from_sidecar:
                self._index = parse_index(text if text is not None else file.read(), str(path))

    def postings(self, word: str) -> Mapping[int, int]:
        key = word.encode("ascii", "replace")
        if not self.from_sidecar:
            return self._index.get(key, {})
        position = self._positions.get(key)
        if position is None:
            return {}
        start, end = self._offsets[position] * 2, self._offsets[position + 1] * 2
        return SidecarPostings(self._pairs[start:end])

    def _open_sidecar(self) -> bool:
        sidecar = read_sidecar(self.path, self.size, self.digest)
        if sidecar is None:
            return False
        self._offsets, self._pairs = sidecar.offsets, sidecar.pairs
        self._sidecar = sidecar
        self._word_positions: dict[bytes, int] | None = None  # made at the first word looked up
        return True

    @property
    def _positions(self) -> dict[bytes, int]:
        # Made when first needed: a server ranking by relevance never looks a word up here.
        if self._word_positions is None:
            self._word_positions = {word: position for position, word in enumerate(self._sidecar.words)}
        return self._word_positions


class SidecarPostings(Mapping[int, int]):
    """A word's postings as the sidecar holds them (docID, count, ... by docID), read in place.

    An ``and`` of a rare word and a frequent one looks the rare word's few
    docIDs up in the frequent word's postings: found by bisection, without
    decoding them all.  Iterating, or many lookups, decodes them into a dict once.
    """

    def __init__(self, pairs: memoryview):
        self._doc_ids = pairs[0::2]
        self._counts = pairs[1::2]
        self._dict: dict[int, int] | None = None
        self._lookups_left = len(self._doc_ids) // 16  # then decoding them all is cheaper

    def __len__(self) -> int:
        return len(self._doc_ids)

    def __getitem__(self, doc_id: int) -> int:
        if self._dict is not None:
            return self._dict[doc_id]
        at = self._find(doc_id)
        if at is None:
            raise KeyError(doc_id)
        return self._counts[at] if at >= 0 else self._decode()[doc_id]

    def __contains__(self, doc_id: object) -> bool:
        if self._dict is not None:
            return doc_id in self._dict
        at = self._find(doc_id)  # type: ignore[arg-type]
        return at is not None and (at >= 0 or doc_id in self._decode())

    def _find(self, doc_id: int) -> int | None:
        """Where *doc_id* is (None: absent), or -1 once decoding them all is cheaper than looking up."""
        if self._lookups_left <= 0:
            return -1
        self._lookups_left -= 1
        at = bisect_left(self._doc_ids, doc_id)
        return at if at < len(self._doc_ids) and self._doc_ids[at] == doc_id else None

    def __iter__(self) -> Iterator[int]:
        return iter(self._decode())

    def keys(self) -> KeysView[int]:
        return self._decode().keys()

    def items(self) -> ItemsView[int, int]:
        return self._decode().items()

    def _decode(self) -> dict[int, int]:
        if self._dict is None:
            self._dict = dict(zip(self._doc_ids.tolist(), self._counts.tolist(), strict=True))
        return self._dict


def write_stamp(path: str | os.PathLike, digest: bytes) -> None:
    """Record that the text index at *path*, as it is now, has *digest*, and its sidecar is as it is
    now (see the module's doc)."""
    write_atomically(stamp_path(path), _stamp_line(path, sidecar_path(path), digest))


def _stamp_line(text: str | os.PathLike, sidecar: str | os.PathLike, digest: bytes) -> bytes:
    """The stamp of the text index file *text* with *digest* and of its *sidecar* file (where
    renaming them puts them: a rename keeps a file's size, modification time and inode)."""
    size, mtime_ns, inode = file_key(os.stat(text))
    line = b"%d %d %d %s" % (size, mtime_ns, inode, digest.hex().encode())
    try:
        line += b" %d %d %d" % file_key(os.stat(sidecar))
    except FileNotFoundError:  # (none: the text alone)
        pass
    return line + b"\n"


class PreparedIndexFiles:
    """A text index, its sidecar and its stamp written whole to their temporary files, not yet in
    place: ``put_in_place`` renames them (with the document store's and the search index's, once
    every file is written: a full disk then changes none), ``discard`` removes them."""

    def __init__(self, path: str | os.PathLike, text: Path, sidecar: Path, digest: bytes):
        self.path = Path(path)
        self._files = [(text, self.path), (sidecar, sidecar_path(self.path))]
        try:
            self._files.append(
                (write_beside(stamp_path(self.path), _stamp_line(text, sidecar, digest)), stamp_path(self.path))
            )
        except BaseException:
            self.discard()
            raise

    def put_in_place(self) -> None:
        """The text, then the sidecar, then the stamp (a reader checks the stamp against both)."""
        for temporary, path in self._files:
            put_in_place(temporary, path)
        self._files = []

    def discard(self) -> None:
        for temporary, _ in self._files:
            temporary.unlink(missing_ok=True)
        self._files = []


def stamped_digest(path: str | os.PathLike, status: os.stat_result) -> bytes | None:
    """The digest the stamp records for the text index at *path*, if it was written for the
    file that has *status* now (same size, modification time and inode), else None."""
    stamp = _stamp(path)
    return stamp[1] if stamp is not None and stamp[0] == file_key(status) else None


def restamp(path: str | os.PathLike, digest: bytes, status: os.stat_result) -> None:
    """Write the stamp of the text index at *path* again when it does not describe it and its sidecar
    as they are, if the text is still the file read with *status* and *digest* (else it is left for
    whoever changed it)."""
    try:
        now = os.stat(path)
        sidecar = file_key(os.stat(sidecar_path(path)))
    except FileNotFoundError:
        return
    if file_key(now) != file_key(status):
        return
    if _stamp(path) != (file_key(now), digest, sidecar):
        write_stamp(path, digest)


def stamped_sidecar(path: str | os.PathLike) -> FileKey | None:
    """The sidecar's size, modification time and inode the stamp of the text index at *path* records."""
    stamp = _stamp(path)
    return stamp[2] if stamp is not None else None


_STAMP_BYTES = 512  # more than a stamp's line ever takes


def _stamp(path: str | os.PathLike) -> tuple[FileKey, bytes, FileKey | None] | None:
    try:
        with open_regular_file(stamp_path(path)) as file:  # (a FIFO or a device there: no stamp)
            fields = file.read(_STAMP_BYTES).split()
        if len(fields) in (4, 7):
            numbers = tuple(map(int, fields[:3] + fields[4:]))
            return numbers[:3], bytes.fromhex(fields[3].decode("ascii")), numbers[3:] or None
    except (OSError, ValueError):
        pass
    return None


@dataclass(frozen=True)
class Sidecar:
    """A sidecar's sections: the sorted words (one a line), the offsets (in pairs) of each word's
    postings and the end, and the docID/count numbers, viewed in place (*width* bytes each)."""

    lines: bytes
    offsets: memoryview
    pairs: memoryview
    width: int

    @cached_property
    def words(self) -> list[bytes]:
        """The sorted words, split when first needed (4-8 ms for the 101,588 words of 20,000 pages, which a server
        ranking by relevance never looks up)."""
        return self.lines.split(b"\n") if self.lines else []


# A file mapped and read in order is given back to the system this many bytes at a time (``GivenBack``).
GIVEN_BACK_BYTES = 16 * 1024 * 1024


class GivenBack:
    """A file mapped read-only and read in order by one or more readings (one scanning ahead, one
    copying behind it, say): the pages each reading has passed are given back to the system a piece at
    a time, so that the process does not keep the file's pages (they stay the system's cache: a page
    one reading gave back and another reads is paged in again)."""

    def __init__(self, mapping: object):
        # (Python has no madvise where the system has none: nothing is given back there.)
        self._mapping = mapping if isinstance(mapping, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED") else None
        self._passed: dict[str, int] = {}  # each reading's bytes given back

    def passed(self, reading: str, end: int) -> None:
        """*reading* has read the bytes before *end*: given back once a piece or more since the last time."""
        if self._mapping is None or end - self._passed.get(reading, 0) < GIVEN_BACK_BYTES:
            return
        end = min(end, len(self._mapping)) // mmap.PAGESIZE * mmap.PAGESIZE
        self._mapping.madvise(mmap.MADV_DONTNEED, 0, end)
        self._passed[reading] = end


def read_sidecar(path: str | os.PathLike, size: int, digest: bytes) -> Sidecar | None:
    """The sidecar of the text index at *path*, when it matches the text's *size* and *digest* and is
    whole: its size what its header says, and its sections as written (hashed unless the file is the
    one the stamp records)."""
    if sys.byteorder != "little":
        return None
    try:
        with open_regular_file(sidecar_path(path)) as file:  # (a FIFO or a device there: no sidecar)
            # Mapped, not read: the postings are paged in as queries need them.
            data = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
            key = file_key(os.fstat(file.fileno()))
        magic, found_digest, found_size, words, words_bytes, pairs, width, seal = _HEADER.unpack_from(data)
    except (OSError, ValueError, struct.error):  # ValueError: an empty file cannot be mapped
        return None
    if magic != _MAGIC or found_size != size or found_digest != digest or width not in (2, 4):
        return None
    offsets_at = _aligned(_HEADER.size + words_bytes)
    numbers_at = _aligned(offsets_at + 4 * (words + 1))
    if len(data) != numbers_at + 2 * width * pairs:  # cut short, or more than it says
        return None
    view = memoryview(data)
    if key != stamped_sidecar(path):
        hashed, given_back = hashlib.blake2b(digest_size=16), GivenBack(data)
        for start in range(_HEADER.size, len(data), GIVEN_BACK_BYTES):
            hashed.update(view[start : start + GIVEN_BACK_BYTES])
            given_back.passed("hashed", start + GIVEN_BACK_BYTES)
        body = hashed.digest()
        if _sealed(data[: _HEADER.size - _SEAL], body) != seal:
            return None
    blob = data[_HEADER.size : _HEADER.size + words_bytes]
    offsets = view[offsets_at:numbers_at].cast(_UINT32)[: words + 1]
    numbers = view[numbers_at:].cast(_UINT16 if width == 2 else _UINT32)
    # (Cheap, whatever the stamp says: the sections agree with the counts.)
    if offsets[0] != 0 or offsets[words] != pairs or blob.count(b"\n") != max(words - 1, 0):
        return None
    return Sidecar(blob, offsets, numbers, width)


def _sealed(fields: bytes, sections: bytes) -> bytes:
    """The header's last field: the digest of its *fields* before it and of the *sections*' digest."""
    return hashlib.blake2b(fields + sections, digest_size=16).digest()


def _header(fields: tuple[object, ...], sections: bytes) -> bytes:
    """The header of a sidecar: its *fields* (magic to bytes per number), sealed with its *sections*' digest."""
    unsealed = _HEADER.pack(*fields, bytes(_SEAL))[: _HEADER.size - _SEAL]
    return _HEADER.pack(*fields, _sealed(unsealed, sections))


def _encode_sidecar(index: Index, text: bytes) -> bytes:
    words = sorted(index)
    offsets = array(_UINT32, [0])
    numbers = []
    for word in words:
        postings = index[word]
        for doc_id in sorted(postings):
            numbers.append(doc_id)
            numbers.append(postings[doc_id])
        offsets.append(len(numbers) // 2)
    # Two bytes a number when they all fit: the usual case, half the size.
    pairs = array(number_type(max(numbers, default=0)), numbers)
    return encode_sidecar(words, offsets, pairs, text_digest(text), len(text))


def encode_sidecar(words: list[bytes], offsets: array, pairs: array, digest: bytes, size: int) -> bytes:
    """The sidecar of the text index of *digest* (``text_digest``) and *size*: its sorted *words*, their
    *offsets* (uint32, one more than the words), and the docID/count *pairs* (typed by ``number_type``)."""
    out = io.BytesIO()
    write_sidecar(out, words, offsets, ([memoryview(pairs).cast("B")], len(pairs) // 2, pairs.itemsize), digest, size)
    return out.getvalue()


def write_sidecar(
    out: BinaryIO,
    words: list[bytes],
    offsets: array,
    pairs: tuple[Iterable[bytes | memoryview], int, int],
    digest: bytes,
    size: int,
) -> None:
    """``encode_sidecar`` written to *out* (a file at its start) section by section, not put together
    in memory first (an update's is the size of the index's postings); *pairs*: the docID/count
    numbers' bytes in pieces, how many pairs they are and the bytes of a number."""
    blob = b"\n".join(words)
    pieces, count, width = pairs
    fields = (_MAGIC, digest, size, len(words), len(blob), count, width)
    _write_sections(out, fields, [[blob], [memoryview(offsets).cast("B")], pieces])


def _write_sections(
    out: BinaryIO, fields: tuple[object, ...], sections: Iterable[Iterable[bytes | memoryview]]
) -> None:
    """A sidecar written to *out* (a file at its start): its header of *fields* (``_header``), then its
    *sections* (words, offsets, numbers: each given in pieces), each but the first at a multiple of 8
    bytes; the header sealed with their digest once they are written."""
    out.write(bytes(_HEADER.size))  # written again once the sections' digest is known
    digest = hashlib.blake2b(digest_size=16)
    written = _HEADER.size
    for number, pieces in enumerate(sections):
        padding = b"\0" * (_aligned(written) - written) if number else b""
        for data in chain((padding,), pieces):  # (the pieces as they come: a section may be 100 MB)
            out.write(data)
            digest.update(data)
            written += len(data)
    out.seek(0)
    out.write(_header(fields, digest.digest()))


def _pieces_of(path: Path) -> Iterator[bytes]:
    """The bytes of the file at *path*, a megabyte at a time."""
    with open(path, "rb") as file:
        while piece := file.read(1 << 20):
            yield piece


def text_digest(text: bytes) -> bytes:
    """What a sidecar records of the text index it was written with."""
    return hashlib.blake2b(text, digest_size=16).digest()


def _aligned(position: int) -> int:
    return (position + 7) // 8 * 8


class IndexFileWriter:
    """Writes a text index and its sidecar streamed, a word at a time, in word order; each file
    whole or not at all (temporary files renamed by ``finish``, removed on error).

    *width* is the bytes of every number (``number_type`` of the highest), known
    before the first word: the sidecar's numbers are written as they come.
    *scratch* is a directory for the sidecar's sections until they are put together.
    """

    def __init__(self, path: str | os.PathLike, width: int, scratch: Path):
        self.path = Path(path)
        self.width = width
        self._digest = hashlib.blake2b(digest_size=16)
        self._size = self._words = self._words_bytes = self._pairs = 0
        self._offsets = array(_UINT32, [0])
        self._pending: list[bytes] = []  # text lines not yet written (and hashed): written by the MB
        self._prepared: PreparedIndexFiles | None = None  # once ready
        self._pending_size = 0
        # The sections first, in the scratch directory (removed by the caller); the text's temporary
        # file beside the index last, so that a failure here leaves none.  The files opened before
        # one that cannot be are closed.
        self._sections = {name: scratch / f"sidecar.{name}" for name in ("words", "offsets", "numbers")}
        with ExitStack() as opened:
            self._words_file = opened.enter_context(open(self._sections["words"], "wb", buffering=1 << 20))
            self._offsets_file = opened.enter_context(open(self._sections["offsets"], "wb"))
            self._numbers_file = opened.enter_context(open(self._sections["numbers"], "wb", buffering=1 << 20))
            self._text = opened.enter_context(open_partial(self.path))
            opened.pop_all()  # kept open: closed by finish or __exit__

    def add(self, word: bytes, texts: list[bytes], numbers: list[bytes]) -> None:
        """Add *word*, sorting after the words added before, with its postings: *texts*
        (each `` docID count ...``) and *numbers* (``width`` bytes each), in docID order."""
        line = word + b"".join(texts) + b"\n"
        self._pending.append(line)
        self._pending_size += len(line)
        if self._pending_size >= 1 << 20:
            self._write_pending()
        self._words_file.write(word if not self._words else b"\n" + word)
        self._words_bytes += len(word) + (1 if self._words else 0)
        self._words += 1
        for data in numbers:
            self._numbers_file.write(data)
            self._pairs += len(data) // (2 * self.width)
        self._offsets.append(self._pairs)
        if len(self._offsets) >= 1 << 16:
            self._offsets.tofile(self._offsets_file)
            del self._offsets[:]

    def finish(self) -> tuple[int, bytes]:
        """Put the text, then the sidecar, then the stamp in place; return the text's size and digest."""
        size, digest, prepared = self.ready()
        prepared.put_in_place()
        return size, digest

    def ready(self) -> tuple[int, bytes, PreparedIndexFiles]:
        """The text, its sidecar and its stamp written whole, not yet in place; the text's size and digest."""
        self._write_pending()
        self._offsets.tofile(self._offsets_file)
        for file in (self._text, self._words_file, self._offsets_file, self._numbers_file):
            file.close()
        digest = self._digest.digest()
        sidecar = partial_path(sidecar_path(self.path))
        try:
            with open_partial(sidecar_path(self.path)) as out:
                fields = (_MAGIC, digest, self._size, self._words, self._words_bytes, self._pairs, self.width)
                names = ("words", "offsets", "numbers")
                _write_sections(out, fields, (_pieces_of(self._sections[name]) for name in names))
            self._prepared = PreparedIndexFiles(self.path, partial_path(self.path), sidecar, digest)
        except BaseException:
            sidecar.unlink(missing_ok=True)
            raise
        return self._size, digest, self._prepared

    def _write_pending(self) -> None:
        data = b"".join(self._pending)
        self._text.write(data)
        self._digest.update(data)
        self._size += len(data)
        self._pending.clear()
        self._pending_size = 0

    def __enter__(self) -> IndexFileWriter:
        return self

    def __exit__(self, kind: type | None, error: BaseException | None, traceback: TracebackType | None) -> None:
        if error is not None:
            # The temporary text removed whatever closing says: a close flushes what is buffered,
            # which a full disk refuses (the error that brought us here is the one to tell).
            partial_path(self.path).unlink(missing_ok=True)
            if self._prepared is not None:  # (ready, and an error before the files were put in place)
                self._prepared.discard()
            for file in (self._text, self._words_file, self._offsets_file, self._numbers_file):
                try:
                    file.close()
                except OSError:
                    pass
