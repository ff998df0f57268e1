"""Index files on disk: the text index and its binary sidecar, each written atomically.

Beside the text index (``rules.indexfile``) the indexer writes
``INDEXFILE.bin``, the same postings in a form the querier opens without
parsing: a table of words and offsets into one array of docID/count numbers.
It records the text file's size and BLAKE2b digest; a sidecar that does not
match its text file is ignored.
"""

from __future__ import annotations

import hashlib
import os
import struct
import sys
from array import array
from dataclasses import dataclass
from pathlib import Path

from ..atomicfile import write_atomically
from ..rules.indexfile import Index, Postings, format_index, parse_index

SIDECAR_SUFFIX = ".bin"
_MAGIC = b"TSEIDX01"
# magic, text digest, text size, words, bytes of words, pairs, bytes per number
_HEADER = struct.Struct("<8s16sQQQQQ")
_UINT32 = "I" if array("I").itemsize == 4 else "L"
_UINT16 = "H"


def sidecar_path(path: str | os.PathLike) -> Path:
    return Path(str(path) + SIDECAR_SUFFIX)


def read_index(path: str | os.PathLike) -> Index:
    """The text index at *path* (IndexFileError names the file and line of a fault)."""
    return parse_index(Path(path).read_bytes(), str(path))


def write_index(path: str | os.PathLike, index: Index, *, sidecar: bool = True) -> tuple[int, bytes]:
    """Write the text index (and its sidecar), each atomically; return the text's size and digest."""
    text = format_index(index)
    write_atomically(path, text)
    if sidecar:
        write_atomically(sidecar_path(path), _encode_sidecar(index, text))
    return len(text), text_digest(text)


class IndexReader:
    """Postings by word, from the sidecar when it matches the text, else from the text."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        text = self.path.read_bytes()
        self.size, self.digest = len(text), text_digest(text)  # what the sidecars are checked against
        self.from_sidecar = self._open_sidecar()
        if not self.from_sidecar:
            self._index = parse_index(text, str(path))

    def postings(self, word: str) -> Postings:
        key = word.encode("ascii", "replace")
        if not self.from_sidecar:
            return self._index.get(key, {})
        position = self._positions.get(key)
        if position is None:
            return {}
        start, end = self._offsets[position] * 2, self._offsets[position + 1] * 2
        pairs = self._pairs[start:end].tolist()
        return dict(zip(pairs[0::2], pairs[1::2], strict=True))

    def _open_sidecar(self) -> bool:
        sidecar = read_sidecar(self.path, self.size, self.digest)
        if sidecar is None:
            return False
        self._offsets, self._pairs = sidecar.offsets, sidecar.pairs
        self._positions = {word: position for position, word in enumerate(sidecar.words)}
        return True


@dataclass(frozen=True)
class Sidecar:
    """A sidecar's sections: the sorted words, the offsets (in pairs) of each word's postings and
    the end, and the docID/count numbers, viewed in place (*width* bytes each)."""

    words: list[bytes]
    offsets: memoryview
    pairs: memoryview
    width: int


def read_sidecar(path: str | os.PathLike, size: int, digest: bytes) -> Sidecar | None:
    """The sidecar of the text index at *path*, when it matches the text's *size* and *digest*."""
    if sys.byteorder != "little":
        return None
    try:
        data = sidecar_path(path).read_bytes()
        magic, found_digest, found_size, words, words_bytes, pairs, width = _HEADER.unpack_from(data)
    except (OSError, struct.error):
        return None
    if magic != _MAGIC or found_size != size or found_digest != digest:
        return None
    position = _HEADER.size
    blob = data[position : position + words_bytes]
    position = _aligned(position + words_bytes)
    view = memoryview(data)
    offsets = view[position : position + 4 * (words + 1)].cast(_UINT32)
    position = _aligned(position + 4 * (words + 1))
    numbers = view[position : position + 2 * width * pairs].cast(_UINT16 if width == 2 else _UINT32)
    return Sidecar(blob.split(b"\n") if words else [], offsets, numbers, width)


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
    return encode_sidecar(words, offsets, pairs, text)


def number_type(highest: int) -> str:
    """The array type code of a sidecar's numbers, the highest being *highest*."""
    return _UINT16 if highest < 1 << 16 else _UINT32


def encode_sidecar(words: list[bytes], offsets: array, pairs: array, text: bytes) -> bytes:
    """The sidecar of *text*: its sorted *words*, their *offsets* (uint32, one more than the words),
    and the docID/count *pairs* (typed by ``number_type``)."""
    blob = b"\n".join(words)
    header = _HEADER.pack(_MAGIC, text_digest(text), len(text), len(words), len(blob), len(pairs) // 2, pairs.itemsize)
    parts = [header, blob]
    for section in (offsets.tobytes(), pairs.tobytes()):
        parts.append(b"\0" * (_aligned(sum(map(len, parts))) - sum(map(len, parts))))
        parts.append(section)
    return b"".join(parts)


def text_digest(text: bytes) -> bytes:
    """What a sidecar records of the text index it was written with."""
    return hashlib.blake2b(text, digest_size=16).digest()


def _aligned(position: int) -> int:
    return (position + 7) // 8 * 8
