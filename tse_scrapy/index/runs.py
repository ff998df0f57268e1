"""Sorted runs: the postings of a range of pages, spilled to a temporary file, merged by word.

A worker indexes a contiguous range of docIDs into a ``Run``: its words,
sorted, each with its postings twice, as the text index writes them
(`` docID count docID count ...``) and as the sidecar stores them (docID and
count numbers, 2 or 4 bytes each).  The ranges are disjoint and ascending,
so a word's postings in the whole index are its postings in each run, in run
order: merging runs by word is concatenation, and no posting is ever parsed
or sorted again.

A run file is a sequence of records, one a word, in word order::

    <III: word bytes, text bytes, number bytes> word text numbers

(4 bytes each: a word may be any length, 70,000 letters as well as 3.)

``RunTiers`` merges the runs as they come, ``fan_in`` runs of a tier into one
run of the next, so each posting is rewritten once a tier: log_fan_in(runs)
times in all, never once a merge.

A range's search-index fields are spilled beside its run as they are made
(``FieldsWriter``) and read back a page at a time by the writer
(``read_fields``): a range's pages are never all in memory, whatever their
size, in the worker or the writer.  A fields file is a sequence of records,
one a page, in docID order::

    <III: docID, URL bytes, fields bytes> URL fields
"""

from __future__ import annotations

import heapq
import os
import struct
import sys
from array import array
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import groupby
from operator import itemgetter
from pathlib import Path

import msgpack

from ..rules.text.wordpass import add_counts

_RECORD = struct.Struct("<III")
_UINT32 = "I" if array("I").itemsize == 4 else "L"
_UINT16 = "H"
_BUFFER = 1 << 20
# The low 2 bytes of a 4-byte number, as 2-byte numbers (``RunPostings.write``): every other one, from
# the first in little-endian order.
_LOW_HALF = 0 if sys.byteorder == "little" else 1


def number_type(highest: int) -> str:
    """The array type code of a sidecar's numbers, the highest being *highest*."""
    return _UINT16 if highest < 1 << 16 else _UINT32


def number_width(highest: int) -> int:
    """The bytes of a sidecar's numbers, the highest being *highest*: 2 when they all fit, else 4."""
    return array(number_type(highest)).itemsize


@dataclass(frozen=True)
class Run:
    """A run file: its *path*, the *width* (2 or 4 bytes) of its numbers, the highest of them, and
    how many times its postings have been rewritten by a merge (0: as a worker wrote them)."""

    path: Path
    width: int
    highest: int
    merges: int = 0


class RunPostings:
    """The postings of a range of pages, in memory, as they are counted (the pages in docID order)."""

    def __init__(self) -> None:
        # word -> its docID and count numbers, in docID order (4 bytes each: compact, no object a posting)
        self._words: dict[bytes, array] = {}
        self.highest = 0

    def __len__(self) -> int:
        """The distinct words held."""
        return len(self._words)

    def add(self, doc_id: int, counts: dict[bytes, int]) -> None:
        """Add the word *counts* of page *doc_id*, higher than every docID added before."""
        if not counts:
            return
        # (typed: wordpass.pyx, 2.2x fewer instructions than this loop in Python)
        self.highest = max(self.highest, doc_id, add_counts(self._words, doc_id, counts))

    def write(self, path: Path) -> Run | None:
        """Write the run to *path*, words sorted; None when there is no word (no file written)."""
        if not self._words:
            return None
        typecode = number_type(self.highest)
        with open(path, "wb", buffering=_BUFFER) as out:
            for word in sorted(self._words):
                numbers = self._words[word]
                text = (b" %d" * len(numbers)) % tuple(numbers)  # formatted in C, not a posting at a time
                # Narrowed by taking each number's low half, not by ``array(typecode, numbers)``, which
                # converts a number at a time: a run of 500 wikipedia pages 0.355 -> 0.305 ms a page.
                data = numbers.tobytes() if typecode == numbers.typecode else low_halves(numbers)
                out.write(_RECORD.pack(len(word), len(text), len(data)))
                out.write(word)
                out.write(text)
                out.write(data)
        return Run(path, number_width(self.highest), self.highest)


def low_halves(numbers: array | bytes) -> bytes:
    """The 4-byte *numbers* (an array, or their bytes), each below 2**16, as 2-byte numbers."""
    return memoryview(numbers).cast("B").cast(_UINT16)[_LOW_HALF::2].tobytes()


def read_run(run: Run, width: int) -> Iterator[tuple[bytes, bytes, bytes]]:
    """The records of *run*, in word order: (word, text, numbers *width* bytes each)."""
    widen = width != run.width
    with open(run.path, "rb", buffering=_BUFFER) as data:
        read = data.read
        while header := read(_RECORD.size):
            word_size, text_size, numbers_size = _RECORD.unpack(header)
            record = read(word_size + text_size + numbers_size)
            text_end = word_size + text_size
            numbers = record[text_end:]
            if widen:  # a run of small numbers in an index of large ones
                numbers = array(_UINT32, array(_UINT16, numbers)).tobytes()
            yield record[:word_size], record[word_size:text_end], numbers


def merge_runs(runs: list[Run], width: int) -> Iterator[tuple[bytes, list[bytes], list[bytes]]]:
    """Every word of *runs* (in docID order), in word order, with its text and numbers from each
    run that has it, in run order: concatenated, they are the word's postings in the index."""
    # heapq.merge keeps the order of its inputs among equal keys: run order, docID order.
    records = heapq.merge(*(read_run(run, width) for run in runs), key=itemgetter(0))
    for word, group in groupby(records, key=itemgetter(0)):
        texts, numbers = [], []
        for _, text, number in group:
            texts.append(text)
            numbers.append(number)
        yield word, texts, numbers


def merge_into_run(runs: list[Run], path: Path) -> Run:
    """One run holding what *runs* (consecutive, in docID order) hold: fewer files to merge at the end."""
    highest = max(run.highest for run in runs)
    width = number_width(highest)
    with open(path, "wb", buffering=_BUFFER) as out:
        for word, texts, numbers in merge_runs(runs, width):
            text, data = b"".join(texts), b"".join(numbers)
            out.write(_RECORD.pack(len(word), len(text), len(data)))
            out.write(word)
            out.write(text)
            out.write(data)
    for run in runs:
        os.unlink(run.path)
    return Run(path, width, highest, 1 + max(run.merges for run in runs))


class RunTiers:
    """Runs added in docID order, merged as they come so that at most *fan_in* are left to merge at
    the end, each posting rewritten at most log_fan_in(runs) times (merged files in *directory*).

    A worker's run is of tier 0; *fan_in* runs of a tier are merged into one
    run of the next.  Merging the merged run again every *fan_in* runs would
    rewrite the first postings once a merge: quadratic in the runs.
    """

    def __init__(self, directory: Path, fan_in: int):
        if fan_in < 2:
            raise ValueError(f"a merge takes at least 2 runs, not {fan_in}")
        self.directory = directory
        self.fan_in = fan_in
        # The runs of each tier, in docID order; a higher tier's runs all come before a lower one's.
        self._tiers: list[list[Run]] = []
        self._merged = 0  # merged runs written: their file names

    def add(self, run: Run) -> None:
        """Add *run*, whose docIDs follow those of every run added before."""
        tier = 0
        while True:
            if tier == len(self._tiers):
                self._tiers.append([])
            self._tiers[tier].append(run)
            if len(self._tiers[tier]) < self.fan_in:
                return
            run = self._merge(self._tiers[tier])
            self._tiers[tier] = []
            tier += 1

    def final(self) -> list[Run]:
        """Every run's postings in at most *fan_in* runs, in docID order (the last, smallest ones merged)."""
        runs = [run for tier in reversed(self._tiers) for run in tier]
        while len(runs) > self.fan_in:
            merged = min(self.fan_in, len(runs) - self.fan_in + 1)
            runs[-merged:] = [self._merge(runs[-merged:])]
        return runs

    def _merge(self, runs: list[Run]) -> Run:
        self._merged += 1
        return merge_into_run(runs, self.directory / f"merged-{self._merged}")


def highest_number(runs: Iterable[Run]) -> int:
    return max((run.highest for run in runs), default=0)


class FieldsWriter:
    """A range's fields file at *path*, written a page at a time (``with``: closed on leaving)."""

    def __init__(self, path: Path):
        self.path = path
        self._file = open(path, "wb", buffering=_BUFFER)  # noqa: SIM115 -- closed by __exit__
        self.pages = 0

    def add(self, doc_id: int, url: str, fields: bytes) -> None:
        """Add page *doc_id*'s *fields* (``fulltext.store.packed``), the pages in docID order."""
        encoded = url.encode("utf-8", "surrogatepass")
        with self._named_in_errors():
            self._file.write(_RECORD.pack(doc_id, len(encoded), len(fields)))
            self._file.write(encoded)
            self._file.write(fields)
        self.pages += 1

    def __enter__(self) -> FieldsWriter:
        return self

    def __exit__(self, *_: object) -> None:
        with self._named_in_errors():
            self._file.close()

    @contextmanager
    def _named_in_errors(self) -> Iterator[None]:
        # A buffered file's write or close that fails (a full disk) does not say which file it was.
        try:
            yield
        except OSError as error:
            if error.filename is not None:
                raise
            raise OSError(error.errno, error.strerror, str(self.path)) from error


def read_fields(path: Path) -> Iterator[tuple[int, str, bytes]]:
    """The records of the fields file *path*: (docID, URL, fields), in docID order."""
    with open(path, "rb", buffering=_BUFFER) as data:
        read = data.read
        while header := read(_RECORD.size):
            doc_id, url_size, fields_size = _RECORD.unpack(header)
            yield doc_id, read(url_size).decode("utf-8", "surrogatepass"), read(fields_size)


def write_vocabulary(path: Path, spellings: dict[str, tuple[str, int]]) -> Path:
    """A piece of a range's vocabulary for typo tolerance (word: its spelling and the docID of the page
    it was met on first) written to *path* as msgpack (read back whole: a piece is bounded; no pickle,
    which loading runs); *path*."""
    try:
        with open(path, "wb", buffering=_BUFFER) as data:
            data.write(msgpack.packb(spellings, unicode_errors="surrogatepass"))
    except OSError as error:  # (a full disk: named, as a run's file is)
        if error.filename is not None:
            raise
        raise OSError(error.errno, error.strerror, str(path)) from error
    return path


def read_vocabulary(path: Path) -> dict[str, tuple[str, int]]:
    """The piece of vocabulary ``write_vocabulary`` wrote to *path* (by a worker of this indexer)."""
    with open(path, "rb", buffering=_BUFFER) as data:
        found = msgpack.unpackb(data.read(), unicode_errors="surrogatepass", strict_map_key=True)
    return {word: (spelling, doc_id) for word, (spelling, doc_id) in found.items()}
