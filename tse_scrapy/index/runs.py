"""Sorted runs: the postings of a range of pages, spilled to a temporary file, merged by word.

A worker indexes a contiguous range of docIDs into a ``Run``: its words,
sorted, each with its postings twice, as the text index writes them
(`` docID count docID count ...``) and as the sidecar stores them (docID and
count numbers, 2 or 4 bytes each).  The ranges are disjoint and ascending,
so a word's postings in the whole index are its postings in each run, in run
order: merging runs by word is concatenation, and no posting is ever parsed
or sorted again.

A run file is a sequence of records, one a word, in word order::

    <HII: word bytes, text bytes, number bytes> word text numbers
"""

from __future__ import annotations

import heapq
import os
import struct
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import groupby
from operator import itemgetter
from pathlib import Path

_RECORD = struct.Struct("<HII")
_UINT32 = "I" if array("I").itemsize == 4 else "L"
_UINT16 = "H"
_BUFFER = 1 << 20


def number_type(highest: int) -> str:
    """The array type code of a sidecar's numbers, the highest being *highest*."""
    return _UINT16 if highest < 1 << 16 else _UINT32


def number_width(highest: int) -> int:
    """The bytes of a sidecar's numbers, the highest being *highest*: 2 when they all fit, else 4."""
    return array(number_type(highest)).itemsize


@dataclass(frozen=True)
class Run:
    """A run file: its *path*, the *width* (2 or 4 bytes) of its numbers, and the highest of them."""

    path: Path
    width: int
    highest: int


class RunPostings:
    """The postings of a range of pages, in memory, as they are counted (the pages in docID order)."""

    def __init__(self) -> None:
        # word -> its docID and count numbers, in docID order (4 bytes each: compact, no object a posting)
        self._words: dict[bytes, array] = {}
        self.highest = 0

    def add(self, doc_id: int, counts: dict[bytes, int]) -> None:
        """Add the word *counts* of page *doc_id*, higher than every docID added before."""
        if not counts:
            return
        words = self._words
        for word, occurrences in counts.items():
            numbers = words.get(word)
            if numbers is None:
                numbers = words[word] = array(_UINT32)
            numbers.append(doc_id)
            numbers.append(occurrences)
        self.highest = max(self.highest, doc_id, max(counts.values()))

    def write(self, path: Path) -> Run | None:
        """Write the run to *path*, words sorted; None when there is no word (no file written)."""
        if not self._words:
            return None
        typecode = number_type(self.highest)
        with open(path, "wb", buffering=_BUFFER) as out:
            for word in sorted(self._words):
                numbers = self._words[word]
                text = (b" %d" * len(numbers)) % tuple(numbers)  # formatted in C, not a posting at a time
                if typecode != numbers.typecode:
                    numbers = array(typecode, numbers)
                data = numbers.tobytes()
                out.write(_RECORD.pack(len(word), len(text), len(data)))
                out.write(word)
                out.write(text)
                out.write(data)
        return Run(path, number_width(self.highest), self.highest)


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
    return Run(path, width, highest)


def highest_number(runs: Iterable[Run]) -> int:
    return max((run.highest for run in runs), default=0)
