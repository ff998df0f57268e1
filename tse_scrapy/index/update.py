"""``tse index --update``: bring an index up to date with its page directory, reading only what changed.

The document store beside the index (``INDEXFILE.docs``, format 2) records,
per page indexed, its file's size, mtime and inode and its distinct words.
A walk over the page directory (stat only) finds the pages that are new or
whose file changed (read and tokenized again) and those that are gone or
whose file went away (their rows and postings removed); the walk and the
reading are shared among ``--jobs`` worker processes as a full build's
(``index/workers.py``).  The new text index
is the old one with only the lines of the words those pages had or have
rebuilt, the others copied as they are; the sidecar likewise copies the
postings of untouched words from the old sidecar, and the store is written
anew with the unchanged pages' rows copied from the old one.  The result is
what a full ``tse index`` of the directory writes, byte for byte.  The search
index (``INDEXFILE.search``) loses the rows of the pages removed and gains
those of the pages read (``fulltext.store.prepare_update``): it answers every
query as a full build's does.  As in a full build, it is written before any
file is put in place and put in place last.

An index without a usable store (missing, of an older format, not written
with this text index), without a matching sidecar or without a matching
search index, or whose store or search index the update finds damaged, is not
updated: the caller indexes every page instead.
"""

from __future__ import annotations

import functools
import hashlib
import mmap
import os
import tempfile
from array import array
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import apsw

from ..atomicfile import open_partial, partial_path
from ..fulltext import store as search_store
from ..rules.files import pagedir
from ..rules.files.pagenotes import NotedPages, read_page_notes
from ..rules.text.pagefields import page_fields, page_text
from ..rules.text.wordpass import word_counts  # (typed where compiled: words.word_counts)
from .docstore import DamagedStore, DocStoreWriter, Rows, StoredPages, docs_path, page_rows
from .pagecontent import readable
from .pagefiles import FileKey, PageScan, file_key
from .runs import low_halves, number_type
from .storage import (
    GivenBack,
    PreparedIndexFiles,
    Sidecar,
    read_sidecar,
    restamp,
    sidecar_path,
    write_sidecar,
)
from .workers import Workers, interrupts_during_cleanup_ignored, ranges_in_order

_UINT32 = "I" if array("I").itemsize == 4 else "L"
# The new sidecar's numbers put together before they are written (``_Numbers``).
NUMBERS_PENDING = 1 << 16
# What an update holds (UPDATE_BYTES): a line's change in its word's array, a word changed besides
# (its array, its key and its entry: ``_Changes``), a page read besides its rows' and fields' bytes.
CHANGE_BYTES = 9
WORD_BYTES = 225
PAGE_BYTES = 1_000
# DocIDs a worker walks at once (as a full build's ranges): about 25 pages read in a 5 % update.
RANGE_PAGES = 500
# Past this share of its pages new or changed, an update costs a full build's time or more (it reads
# them all, as a build does, and deletes and rewrites their rows): a full build is made instead.  On the
# known-item bench's 2,256 pages, 44 % changed took half a full build's time, all of them 1.4 times it
# (a copy of the pages without their files' times, `cp -r`, changes every key).  A directory of fewer
# pages than FULL_BUILD_PAGES is updated whatever changed: either takes a moment.
FULL_BUILD_SHARE = 0.75
FULL_BUILD_PAGES = 200
# What an update holds of the pages it reads or removes, in bytes at most (about: their lines' changes,
# ``_Changes.size``, and the pages' rows and packed fields): past it, it indexes every page instead, in
# bounded memory.  The 20,000-page bench's 5 % changed holds about 70 MB (1,200,000 changes of 66,500
# words, and 1,000 pages' rows and fields: 196 MB at the peak in all; 641 MB when the changes were
# tuples and the new sidecar's numbers were held), 12 % a little more than this bound (a full build
# then, 228 MB at the peak).  A reviewer's 2,400 pages of 2,000 distinct random words each held 2.4 GB
# when every word of a page counted alike; they stop here.
UPDATE_BYTES = 150_000_000


class _Mismatch(Exception):
    """The store's words and the index's postings disagree: only a full index is safe."""


def update_index(
    directory: str | os.PathLike,
    indexfile: str | os.PathLike,
    on_warning: Callable[[int, str, str], object] | None = None,
    jobs: int = 1,
    on_end: Callable[[int], object] | None = None,
) -> str | None:
    """Update *indexfile*, its sidecar and its document store to the pages of *directory*, the pages
    new or changed read by *jobs* worker processes (1: none); call *on_end* with the docID where the
    walk ended (the first page file that could not be opened) once every page is walked.

    Returns None when done (or when nothing changed: then nothing is written),
    else why the index cannot be updated (nothing written: index every page).
    A page that is not a page file raises ``pagedir.PageFileError``, a worker
    process that dies or runs out of memory ``workers.WorkerDied``, and
    nothing is written either.
    """
    try:
        with open(indexfile, "rb") as file:
            status = os.fstat(file.fileno())
            text = _OldText(file)
    except FileNotFoundError:
        return f"no index {indexfile} to update"
    with text:
        digest = text.digest()
        stored = StoredPages.open(indexfile, len(text), digest)
        if isinstance(stored, str):
            return stored
        problem = search_store.check(search_store.search_path(indexfile), len(text), digest)
        if problem:
            stored.close()
            return problem
        try:
            sidecar = read_sidecar(indexfile, len(text), digest)
            if sidecar is None:
                return f"no sidecar {sidecar_path(indexfile)} matches {indexfile}"
            problem = _update(directory, Path(indexfile), text, digest, sidecar, stored, on_warning, jobs, on_end)
            if problem is None:
                # The files just read and checked (the text hashed, the sidecar matched), or written: a
                # stamp that is missing or does not describe them (a copy, a stamp removed) is written
                # again, as a build leaves one, so that a reader need not hash the text at each start.
                restamp(indexfile, digest, status)
            return problem
        finally:
            stored.close()


# The old text index is read a piece of this many bytes at a time, and the pieces read given back to
# the system (``_OldText``): an update's memory does not grow with the index (the 20,000-page bench's
# text is 183 MB; read whole, split into lines and joined again it took several times that).
TEXT_PIECE_BYTES = 16 * 1024 * 1024


class _OldText:
    """The text index an update reads: the file mapped, each piece given back once read (a file's
    pages, not memory of the process's own); its lines found one after another, not split."""

    def __init__(self, file: BinaryIO):
        size = os.fstat(file.fileno()).st_size
        # (An empty file cannot be mapped: an index of no word.)
        self.data: mmap.mmap | bytes = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        self.view = memoryview(self.data)
        self.line = 0  # the line that starts at ``self.at``
        self.at = 0
        self._given_back = GivenBack(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def __enter__(self) -> _OldText:
        return self

    def __exit__(self, *_: object) -> None:
        try:
            self.view.release()
            if isinstance(self.data, mmap.mmap):
                self.data.close()
        except BufferError:  # a piece still held (by an error's traceback): unmapped once it is let go
            pass

    def digest(self) -> bytes:
        """``text_digest`` of the text, read a piece at a time."""
        hashed = hashlib.blake2b(digest_size=16)
        for start in range(0, len(self.data), TEXT_PIECE_BYTES):
            hashed.update(self.view[start : start + TEXT_PIECE_BYTES])
            self._given_back.passed("digest", start + TEXT_PIECE_BYTES)
        return hashed.digest()

    def start_of(self, line: int) -> int:
        """Where line *line* starts (lines are asked for in order): its byte offset."""
        while self.line < line:
            end = self.data.find(b"\n", self.at)
            if end == -1:
                raise _Mismatch("the sidecar's words are not the text's lines")
            self.at = end + 1
            self.line += 1
            self._given_back.passed("lines", self.at)  # (a copy may scan the whole file before it reads it)
        return self.at

    def piece(self, start: int, end: int) -> memoryview:
        """Bytes *start* to *end* (at or after those asked before), those before given back."""
        self._given_back.passed("pieces", start)
        return self.view[start:end]


def _update(
    directory: str | os.PathLike,
    indexfile: Path,
    text: _OldText,
    digest: bytes,
    sidecar: Sidecar,
    stored: StoredPages,
    on_warning: Callable[[int, str, str], object] | None,
    jobs: int,
    on_end: Callable[[int], object] | None = None,
) -> str | None:
    scan = PageScan(directory)  # the record of the walk (its fingerprint and last docID), from the ranges'
    read_pages, pages, gone_pages = _pages_to_read(directory, scan.gone, stored.keys)
    indexed = max(pages, len(stored.keys))
    # (Pages gone count too: their words are read from the store and taken out of every line they are in.)
    if indexed >= FULL_BUILD_PAGES and read_pages + gone_pages > FULL_BUILD_SHARE * indexed:
        gone = f" and {gone_pages:,} of its {len(stored.keys):,} pages gone" if gone_pages else ""
        return f"{read_pages:,} of its {pages:,} page files are new or changed{gone}, which a full build indexes sooner"
    notes = read_page_notes(directory)  # read here once; forked workers inherit it
    present: list[int] = []
    pages_held = 0  # the bytes of the rows and fields of the pages read (UPDATE_BYTES)
    changes = _Changes()  # each page's, as it is read (its words before from the store: none if new)
    rows: dict[int, Rows] = {}
    fields: dict[int, tuple[str, bytes]] = {}  # packed, compressed: a large update holds them all
    # The pages new or changed read and analyzed in worker processes, a range of docIDs each, as a
    # full build reads every page; the results taken in docID order.
    workers: Workers | None = None
    with interrupts_during_cleanup_ignored() as ignore_interrupts:
        try:
            # Forked with the store's connection open: the workers never use it (only its keys, read
            # already), and they leave by os._exit or a signal, never closing it.
            workers = Workers(jobs, functools.partial(read_range, directory, scan.gone, notes, stored.keys))
            for ranged in ranges_in_order(workers, RANGE_PAGES):
                for doc_id, size, mtime_ns in ranged.statuses:
                    scan.record(doc_id, size, mtime_ns)
                present += ranged.present
                for page in ranged.read:
                    try:
                        old = stored.words(page.doc_id) if page.doc_id in stored.keys else []
                    except DamagedStore as error:
                        workers.stop()
                        return f"{docs_path(indexfile)} is damaged ({error})"
                    changes.page(page.doc_id, old, page.counts)
                    rows[page.doc_id] = page.rows
                    fields[page.doc_id] = (page.url, page.fields)
                    pages_held += _bytes_of(page)
                for warning in ranged.warnings if on_warning is not None else ():
                    on_warning(*warning)
                if changes.size + pages_held > UPDATE_BYTES:
                    workers.stop()
                    read_so_far = f"its {len(rows):,} pages new or changed read so far"
                    return _too_many_words(read_so_far, changes.size + pages_held)
            workers.stop()  # idle, or past the end
        except BaseException:
            ignore_interrupts()  # a second Ctrl-C must not cut the cleanup short and orphan the workers
            if workers is not None:
                workers.stop()
            raise
    if on_end is not None:
        on_end(scan.last + 1)
    kept = set(present)
    gone = sorted(doc_id for doc_id in stored.keys if doc_id not in kept)  # (a page read is present)
    removed = sorted([*gone, *(doc_id for doc_id in rows if doc_id in stored.keys)])  # gone or changed
    if not (removed or rows) and scan.fingerprint() == stored.fingerprint and scan.last == stored.last:
        return None
    # The words the pages gone had, counted with those read (UPDATE_BYTES).
    for doc_id in gone:
        try:
            old = stored.words(doc_id)
        except DamagedStore as error:
            return f"{docs_path(indexfile)} is damaged ({error})"
        changes.page(doc_id, old, {})
        if changes.size + pages_held > UPDATE_BYTES:
            pages = f"its {len(rows):,} pages new or changed and {len(gone):,} gone"
            return _too_many_words(pages, changes.size + pages_held)
    # The new text index and sidecar written to their temporary files as they are merged (``merge``),
    # removed unless put in place.
    text_file, sidecar_file = partial_path(indexfile), partial_path(sidecar_path(indexfile))
    try:
        read = (present, rows, fields)
        written = (text_file, sidecar_file)
        return _write_update(indexfile, text, digest, sidecar, stored, scan, notes, read, changes, removed, written)
    finally:
        text_file.unlink(missing_ok=True)
        sidecar_file.unlink(missing_ok=True)


def _write_update(
    indexfile: Path,
    text: _OldText,
    digest: bytes,
    sidecar: Sidecar,
    stored: StoredPages,
    scan: PageScan,
    notes: NotedPages,
    pages_read: tuple[list[int], dict[int, Rows], dict[int, tuple[str, bytes]]],
    changes: _Changes,
    removed: list[int],
    written: tuple[Path, Path],
) -> str | None:
    """``_update``'s writing: *pages_read* the pages present, and the rows and fields of those read;
    *changes* their lines' changes, *removed* the pages gone or changed (ascending); *written*: the
    temporary files of the new text index and sidecar (the caller removes them)."""
    present, rows, fields = pages_read
    text_file, sidecar_file = written
    try:
        with (
            # (Made anew: a link left at their names is not written through.)
            open_partial(indexfile) as out,
            open_partial(sidecar_path(indexfile)) as sidecar_out,
            tempfile.TemporaryFile(dir=text_file.parent) as numbers,  # (the new sidecar's, until it is written)
        ):
            new_size, new_digest = merge(text, sidecar, changes, out, sidecar_out, numbers)
        changes.clear()  # (not needed by the search index's and the store's writing, which hold more)
    except _Mismatch as error:
        return f"{docs_path(indexfile)} does not match {indexfile} ({error})"
    # The search index written first, to its partial file, as a full index writes it: a full disk
    # there changes no file.  It is put in place last: changed before it is, it is not taken as the
    # new index's (its record of the index it belongs with says the old one).
    old = (len(text), digest)  # (worked out by update_index)
    try:
        search = search_store.prepare_update(indexfile, old, (new_size, new_digest), removed, fields, notes.canonicals)
    except (apsw.CorruptError, apsw.NotADBError) as error:
        # Damaged past what its check reads (a page of rows the update deletes or reads): a full build
        # writes it anew, as it does for a damaged store (it stopped the update before, exit 1).
        return f"{search_store.search_path(indexfile)} is damaged ({error})"
    if isinstance(search, str):
        return search
    index_files: PreparedIndexFiles | None = None
    try:
        # The store is written anew, row by row in the order of a full index (the unchanged rows
        # copied from the old store): the same file, byte for byte, at the cost of a copy.  The files
        # are put in place only once every one is written whole (a full disk changes none of them),
        # then in the order of a full index, a Ctrl-C ignored: a store that does not match its text
        # is never taken as valid.
        with DocStoreWriter(docs_path(indexfile)) as docs:
            for doc_id in present:
                docs.insert(rows[doc_id] if doc_id in rows else stored.rows(doc_id))
            docs.ready(new_size, new_digest, scan)
            index_files = PreparedIndexFiles(indexfile, text_file, sidecar_file, new_digest)
            with interrupts_during_cleanup_ignored() as ignore_interrupts:
                ignore_interrupts()
                index_files.put_in_place()
                docs.put_in_place()
                search.put_in_place()
    except DamagedStore as error:  # (an old row unreadable: nothing is in place; the caller indexes every page)
        return f"{docs_path(indexfile)} is damaged ({error})"
    finally:
        if index_files is not None:
            index_files.discard()  # (none left once in place)
        search.discard()
    return None


def _pages_to_read(
    directory: str | os.PathLike, gone: frozenset[int], keys: dict[int, FileKey]
) -> tuple[int, int, int]:
    """How many of the page files of *directory* (not *gone*) are not those of *keys* (new or
    changed), how many there are, and how many of *keys* are no page file now (gone): a walk of
    their status only (a millisecond a hundred pages)."""
    doc_id = read = pages = kept = 0
    while True:
        doc_id += 1
        try:
            key = file_key(os.stat(pagedir.page_path(directory, doc_id)))
        except OSError:  # the walk's end (SPEC 3): where the update's own walk ends too
            return read, pages, len(keys) - kept
        if doc_id not in gone:
            pages += 1
            read += keys.get(doc_id) != key
            kept += doc_id in keys


def _bytes_of(page: PageRead) -> int:
    """About what an update holds of *page* besides its lines' changes: its rows and packed fields."""
    rows = [*page.rows.doc, *(page.rows.file or ())]
    return PAGE_BYTES + len(page.fields) + sum(len(value) for value in rows if isinstance(value, str | bytes))


def _too_many_words(pages: str, held: int) -> str:
    return (
        f"{pages} hold about {held / 1e6:,.1f} MB of words, more than an update keeps in memory"
        f" ({UPDATE_BYTES / 1e6:,.1f} MB),"
        " which a full build indexes in bounded memory"
    )


@dataclass(frozen=True)
class PageRead:
    """A page new or changed, as an update keeps it: its word counts, its rows in the document store,
    and its URL and search-index fields (``fulltext.store.packed``, compressed)."""

    doc_id: int
    counts: Counter[bytes]
    rows: Rows
    url: str
    fields: bytes


@dataclass(frozen=True)
class RangeRead:
    """What a worker gives back for a range of docIDs: the page files walked ((docID, size, mtime)),
    the docIDs of the pages to keep, those new or changed read, the PDFs that gave no text
    ((docID, URL, why)), and whether the directory ended in the range."""

    statuses: list[tuple[int, int, int]]
    present: list[int]
    read: list[PageRead]
    warnings: list[tuple[int, str, str]]
    ended: bool


def read_range(
    directory: str | os.PathLike,
    gone: frozenset[int],
    notes: NotedPages,
    keys: dict[int, FileKey],
    start: int,
    stop: int,
) -> RangeRead:
    """Walk pages *start* to *stop* - 1 of *directory* (or to its end), reading only those whose file
    is not the one of *keys* (the store's record: new or changed), with what the crawl *notes* of them.

    A page that is not a page file raises ``pagedir.PageFileError``, naming it."""
    scan = PageScan(directory, gone)
    statuses, present, read, warnings = [], [], [], []
    for found in scan.files(lambda found: keys.get(found.doc_id) != found.key, start, stop):
        statuses.append((found.doc_id, found.status.st_size, found.status.st_mtime_ns))
        if found.gone or (found.page is not None and found.page.url in notes.noindex):
            continue  # gone, or never an answer (noindex): as a full build leaves it out
        present.append(found.doc_id)
        if found.page is None:  # unchanged
            continue
        readable_page = readable(found.page, notes)  # a PDF as its text
        if readable_page.warning:
            warnings.append((found.doc_id, found.page.url, readable_page.warning))
        page, charset = readable_page.page, readable_page.charset
        counts = word_counts(page.body)
        # The rows, not the page: a large update keeps only what the store keeps.
        shown = page_text(page.body, charset)  # decoded once, as a full build does
        row = page_rows(found.doc_id, page, counts, found.key, charset, shown)
        packed = search_store.packed(
            page_fields(row.doc[1], page.body, charset, shown), row.doc[4], shown, compressed=True
        )
        read.append(PageRead(found.doc_id, counts, row, row.doc[1], packed))
    return RangeRead(statuses, present, read, warnings, scan.ended)


class _Changes:
    """What the pages an update reads or removes change in the text index's lines, word by word: for
    each word a page had or has, the page's docID, whether the word's line holds it now, and the
    word's new count on it (0: none).  Held compactly, in one typed array a word (a 5 % update of the
    20,000-page bench makes 1,200,000 of them: as a tuple each they took about 75 bytes, here 9)."""

    def __init__(self) -> None:
        self._numbers: dict[bytes, int] = {}  # a word's place in _changes
        # A word's changes, each (docID * 2 + 1 when its line holds the page, else docID * 2) << 32 | count.
        self._changes: list[array] = []
        self._unordered: set[int] = set()  # the words whose changes did not come in docID order
        self.highest = 0  # the highest docID or count a page has now (the old ones fit the old sidecar)
        self._count = 0

    @property
    def size(self) -> int:
        """About the bytes they take (measured: a change 9 in its word's array, a word 225 besides)."""
        return CHANGE_BYTES * self._count + WORD_BYTES * len(self._changes)

    def clear(self) -> None:
        """Their memory given back (once merged)."""
        self._numbers, self._changes, self._unordered = {}, [], set()

    def page(self, doc_id: int, old: list[bytes], counts: Mapping[bytes, int]) -> None:
        """The changes of page *doc_id*, whose distinct words were *old* (none: a page new) and whose
        word counts are *counts* now (none: a page gone)."""
        held, not_held = (2 * doc_id + 1) << 32, 2 * doc_id << 32
        numbers, changes, unordered = self._numbers, self._changes, self._unordered
        old_words = set(old)
        made = [(word, held | counts.get(word, 0)) for word in old]
        made += [(word, not_held | count) for word, count in counts.items() if word not in old_words]
        for word, change in made:
            number = numbers.get(word)
            if number is None:
                number = numbers[word] = len(changes)
                changes.append(array("Q"))
            word_changes = changes[number]
            if word_changes and word_changes[-1] > change:
                unordered.add(number)
            word_changes.append(change)
        self._count += len(made)
        self.highest = max(self.highest, doc_id, *counts.values())

    def words(self) -> list[bytes]:
        """The words changed, sorted."""
        return sorted(self._numbers)

    def of(self, word: bytes) -> list[tuple[int, bool, int]]:
        """*word*'s changes: (docID, whether its line holds the page, its new count or 0), ascending docIDs."""
        number = self._numbers[word]
        changes = sorted(self._changes[number]) if number in self._unordered else self._changes[number]
        return [(change >> 33, bool(change >> 32 & 1), change & 0xFFFFFFFF) for change in changes]


def merge(
    text: _OldText,
    sidecar: Sidecar,
    changes: _Changes,
    out: BinaryIO,
    sidecar_out: BinaryIO,
    scratch: BinaryIO,
) -> tuple[int, bytes]:
    """The text index and sidecar *text* and *sidecar* become once the pages changed, gone or new
    bring their *changes*, written to *out* and *sidecar_out*; the new text's size and digest.
    *scratch*: an empty temporary file, for the new sidecar's numbers until they are written.

    Only the lines of the words of those pages can change, and only where
    those pages are in them (a word on a changed page as often as before
    leaves its pair, and most often its line, as it was): everything else is
    copied as byte slices of the old text and sidecar, so the Python work is
    per posting of those pages, not per posting."""
    old_words, offsets, pairs = sidecar.words, sidecar.offsets, sidecar.pairs
    positions = {word: position for position, word in enumerate(old_words)}
    # Numbers of 2 bytes while they fit, as a full index writes them; 4-byte ones are narrowed at the end.
    numbers = _Numbers(number_type(changes.highest) if sidecar.width == 2 else _UINT32, scratch)
    # The old sidecar's numbers are read in order, as the text's lines are (the words' whose lines
    # change, then copied): their pages given back likewise (else the process holds the whole file's,
    # 100 MB on the bench, as a word's numbers are looked at for a line that does not change).
    given_back = GivenBack(pairs.obj)
    numbers_at = len(pairs.obj) - pairs.nbytes if isinstance(pairs.obj, mmap.mmap) else 0  # (they end the file)
    piece_numbers = TEXT_PIECE_BYTES // pairs.itemsize

    written = _Written(out)

    new_words: list[bytes] = []
    new_offsets = array(_UINT32, [0])
    cursor = 0  # the first old word (line i is word i's: both are sorted) not yet copied or merged

    def copy(end: int) -> None:
        """Copy old words cursor..end-1, untouched."""
        if end <= cursor:
            return
        start, stop = text.start_of(cursor), text.start_of(end)
        for at in range(start, stop, TEXT_PIECE_BYTES):  # (a piece at a time: each given back once written)
            written.write(text.piece(at, min(at + TEXT_PIECE_BYTES, stop)))
        new_words.extend(old_words[cursor:end])
        shift = new_offsets[-1] - offsets[cursor]
        new_offsets.extend([offset + shift for offset in offsets[cursor + 1 : end + 1]])
        first, last = 2 * offsets[cursor], 2 * offsets[end]
        for at in range(first, last, piece_numbers):  # (a piece at a time: each given back once copied)
            numbers.copy(pairs[at : min(at + piece_numbers, last)])
            given_back.passed("copied", numbers_at + at * pairs.itemsize)

    for word in changes.words():
        position = positions.get(word)
        if position is None:  # a new word: before the first old word that sorts after it
            copy(end := bisect_left(old_words, word, cursor))
            line, postings = word, pairs[0:0]
            word_changes = changes.of(word)
        else:
            postings = pairs[2 * offsets[position] : 2 * offsets[position + 1]]
            given_back.passed("looked at", numbers_at + 2 * offsets[position] * pairs.itemsize)
            # Most words of a page that changed are on it as often as before: their lines stay as
            # they are, copied with the untouched ones.
            word_changes = _changing(postings, changes.of(word))
            if not word_changes:
                continue
            copy(end := position)
            line = bytes(text.piece(text.start_of(position), text.start_of(position + 1) - 1))
            if not line.startswith(word + b" "):
                raise _Mismatch(f"the sidecar's word {word!r} is not its line's")
            end += 1
        cursor = end
        merged, left = _merge_line(word, line, postings, word_changes, numbers)
        if left:  # a word whose pages are all gone has no line
            written.write(merged + b"\n")
            new_words.append(word)
            new_offsets.append(new_offsets[-1] + left)
    copy(len(old_words))
    if text.start_of(len(old_words)) != len(text):
        raise _Mismatch("the sidecar's words are not the text's lines")
    new_digest = written.digest.digest()
    write_sidecar(sidecar_out, new_words, new_offsets, numbers.written(), new_digest, written.size)
    return written.size, new_digest


class _Written:
    """The new text index as it is written: its size and digest (``text_digest``)."""

    def __init__(self, out: BinaryIO):
        self.out = out
        self.size = 0
        self.digest = hashlib.blake2b(digest_size=16)

    def write(self, data: bytes | memoryview) -> None:
        self.out.write(data)
        self.digest.update(data)
        self.size += len(data)


class _Numbers:
    """The new sidecar's docID/count numbers, written to a temporary file as they are put together
    (the 20,000-page bench's are 100 MB)."""

    def __init__(self, typecode: str, file: BinaryIO):
        self._file = file
        self._pending = array(typecode)  # added, not yet written
        self._count = 0  # written
        self._highest = 0  # of 4-byte numbers (narrowed at the end if they all fit 2 bytes)

    def copy(self, old: memoryview) -> None:
        if self._pending.itemsize == 4:
            self._highest = max(self._highest, max(old, default=0))
        if old.format == self._pending.typecode:
            self._flush()
            self._file.write(old.cast("B"))
            self._count += len(old)
        else:  # 2-byte numbers where there are 4-byte ones now
            self._pending.extend(old)
            if len(self._pending) >= NUMBERS_PENDING:
                self._flush()

    def add(self, doc_id: int, count: int) -> None:
        self._pending.append(doc_id)
        self._pending.append(count)
        if self._pending.itemsize == 4:
            self._highest = max(self._highest, doc_id, count)
        if len(self._pending) >= NUMBERS_PENDING:
            self._flush()

    def _flush(self) -> None:
        self._file.write(memoryview(self._pending).cast("B"))
        self._count += len(self._pending)
        del self._pending[:]

    def written(self) -> tuple[Iterator[bytes], int, int]:
        """Their bytes, in pieces; how many pairs they are; the bytes of each (2 when all fit now)."""
        self._flush()
        self._file.seek(0)
        narrowed = self._pending.itemsize == 4 and number_type(self._highest) != self._pending.typecode
        return self._pieces(narrowed), self._count // 2, 2 if narrowed else self._pending.itemsize

    def _pieces(self, narrowed: bool) -> Iterator[bytes]:
        while piece := self._file.read(1 << 20):
            yield low_halves(piece) if narrowed else piece  # (every number fits 2 bytes now)


def _changing(postings: memoryview, changes: list[tuple[int, bool, int]]) -> list[tuple[int, bool, int]]:
    """The *changes* (ascending docIDs) that change a word's line, whose sidecar numbers are
    *postings*: not those of a page the line holds with the same count (a change the line does not
    bear out is kept: ``_merge_line`` finds it wrong)."""
    doc_ids, counts = postings[0::2], postings[1::2]
    size = len(doc_ids)
    changing = []
    start = 0
    for change in changes:
        doc_id, held, count = change
        if held:
            start = bisect_left(doc_ids, doc_id, start)
            if start < size and doc_ids[start] == doc_id and counts[start] == count:
                continue
        changing.append(change)
    return changing


def _merge_line(
    word: bytes, line: bytes, postings: memoryview, changes: list[tuple[int, bool, int]], numbers: _Numbers
) -> tuple[bytes, int]:
    """Word *word*'s *line* (``word docID count ...``, ascending; *postings*: its sidecar numbers)
    with its *changes* (docID, whether the line holds it, its new count or 0), ascending.

    The line's new numbers go to *numbers*; returns the new line and its number of pairs."""
    doc_ids, counts = postings[0::2], postings[1::2]
    size = left = len(doc_ids)
    texts = [word]
    start = 0  # the first old pair not yet copied
    at = len(word)  # where it starts in the line (its leading space)
    for doc_id, held, count in changes:
        found = bisect_left(doc_ids, doc_id, start)
        if (found < size and doc_ids[found] == doc_id) != held:
            raise _Mismatch(f"the postings of page {doc_id} are not what the store says")
        if found > start:  # copy the pairs before it, as they are
            end = _pair_start(line, at, doc_ids[found], counts[found]) if found < size else len(line)
            texts.append(line[at:end])
            numbers.copy(postings[2 * start : 2 * found])
            at = end
        if held:  # skip its old pair
            at += len(b" %d %d" % (doc_id, counts[found]))
            found += 1
            left -= 1
        if count:
            texts.append(b" %d %d" % (doc_id, count))
            numbers.add(doc_id, count)
            left += 1
        start = found
    texts.append(line[at:])
    numbers.copy(postings[2 * start :])
    return b"".join(texts), left


def _pair_start(line: bytes, at: int, doc_id: int, count: int) -> int:
    """Where pair (*doc_id*, *count*) starts (its leading space) in *line*, at or after *at*, a pair's start.

    Found as bytes: a match is the pair only if an even number of spaces
    precedes it from *at* (else it straddles a count and the next docID) and
    it ends at a space or the line's end (else it is a longer number's start)."""
    needle = b" %d %d" % (doc_id, count)
    found = line.find(needle, at)
    while found >= 0:
        after = found + len(needle)
        if line.count(b" ", at, found) % 2 == 0 and (after == len(line) or line[after] == 0x20):
            return found
        found = line.find(needle, found + 1)
    raise _Mismatch(f"no pair{needle.decode()} where the sidecar has it")
