"""The index file (SPEC 3) and its binary sidecar.

The text index, ``word docID count [docID count]...`` per line, is the
interchange format; it is written sorted (words, then docIDs ascending) so two
runs diff clean.  Beside it the indexer writes ``INDEXFILE.bin``, the same
postings in a form the querier can open without parsing: it records the text
file's size and BLAKE2b digest, and a sidecar that does not match its text
file is ignored.
"""

from __future__ import annotations

import hashlib
import os
import re
import struct
import sys
from array import array
from pathlib import Path

Postings = dict  # docID -> count
SIDECAR_SUFFIX = ".bin"
_MAGIC = b"TSEIDX01"
# magic, text digest, text size, words, bytes of words, pairs, bytes per number
_HEADER = struct.Struct("<8s16sQQQQQ")
_WORD = re.compile(rb"[a-z]+")
_INT = re.compile(rb"[1-9][0-9]*")
_UINT32 = "I" if array("I").itemsize == 4 else "L"
_UINT16 = "H"


class IndexFileError(ValueError):
    """A malformed index file: the message names the file and the line."""


def sidecar_path(path) -> Path:
    return Path(str(path) + SIDECAR_SUFFIX)


def format_index(index: dict[bytes, Postings]) -> bytes:
    """The text form of *index* (words as ASCII bytes), sorted."""
    lines = []
    for word in sorted(index):
        postings = index[word]
        pairs = " ".join(f"{doc_id} {postings[doc_id]}" for doc_id in sorted(postings))
        lines.append(f"{word.decode('ascii')} {pairs}\n")
    return "".join(lines).encode("ascii")


def parse_index(data: bytes, name: str = "index") -> dict[bytes, Postings]:
    """Parse the text form; raise IndexFileError naming *name* and the line."""
    index: dict[bytes, Postings] = {}
    for number, line in enumerate(data.split(b"\n"), start=1):
        fields = line.split()
        if not fields:
            continue
        word, numbers = fields[0], fields[1:]
        if not _WORD.fullmatch(word):
            raise IndexFileError(f"{name}:{number}: not a lowercase word: {_show(word)}")
        if not numbers or len(numbers) % 2:
            raise IndexFileError(f"{name}:{number}: expected docID count pairs after the word")
        if not all(_INT.fullmatch(n) for n in numbers):
            bad = next(n for n in numbers if not _INT.fullmatch(n))
            raise IndexFileError(f"{name}:{number}: not a positive integer: {_show(bad)}")
        postings = {int(numbers[i]): int(numbers[i + 1]) for i in range(0, len(numbers), 2)}
        if len(postings) * 2 != len(numbers):
            raise IndexFileError(f"{name}:{number}: a docID appears twice for {_show(word)}")
        if word in index:
            raise IndexFileError(f"{name}:{number}: the word {_show(word)} appears on two lines")
        index[word] = postings
    return index


def read_index(path) -> dict[bytes, Postings]:
    return parse_index(Path(path).read_bytes(), str(path))


def write_index(path, index: dict[bytes, Postings], *, sidecar: bool = True) -> None:
    """Write the text index (and its sidecar), each atomically."""
    text = format_index(index)
    _write_atomically(Path(path), text)
    if sidecar:
        _write_atomically(sidecar_path(path), _encode_sidecar(index, text))


class IndexReader:
    """Postings by word, from the sidecar when it matches the text, else from the text."""

    def __init__(self, path):
        self.path = Path(path)
        text = self.path.read_bytes()
        self.from_sidecar = self._open_sidecar(text)
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
        return dict(zip(pairs[0::2], pairs[1::2]))

    def _open_sidecar(self, text: bytes) -> bool:
        if sys.byteorder != "little":
            return False
        try:
            data = sidecar_path(self.path).read_bytes()
            magic, digest, size, words, words_bytes, pairs, width = _HEADER.unpack_from(data)
        except (OSError, struct.error):
            return False
        if magic != _MAGIC or size != len(text) or digest != _digest(text):
            return False
        position = _HEADER.size
        blob = data[position:position + words_bytes]
        position = _aligned(position + words_bytes)
        view = memoryview(data)
        self._offsets = view[position:position + 4 * (words + 1)].cast(_UINT32)
        position = _aligned(position + 4 * (words + 1))
        self._pairs = view[position:position + 2 * width * pairs].cast(_UINT16 if width == 2 else _UINT32)
        self._positions = dict(zip(blob.split(b"\n"), range(words))) if words else {}
        return True


def _encode_sidecar(index: dict[bytes, Postings], text: bytes) -> bytes:
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
    pairs = array(_UINT16 if max(numbers, default=0) < 1 << 16 else _UINT32, numbers)
    blob = b"\n".join(words)
    header = _HEADER.pack(_MAGIC, _digest(text), len(text), len(words), len(blob), len(numbers) // 2,
                          pairs.itemsize)
    parts = [header, blob]
    for section in (offsets.tobytes(), pairs.tobytes()):
        parts.append(b"\0" * (_aligned(sum(map(len, parts))) - sum(map(len, parts))))
        parts.append(section)
    return b"".join(parts)


def _digest(text: bytes) -> bytes:
    return hashlib.blake2b(text, digest_size=16).digest()


def _aligned(position: int) -> int:
    return (position + 7) // 8 * 8


def _write_atomically(path: Path, data: bytes) -> None:
    temporary = path.with_name(f".{path.name}.partial")
    try:
        with open(temporary, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _show(token: bytes) -> str:
    return repr(token.decode("ascii", "replace"))
