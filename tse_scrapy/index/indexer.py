"""The indexer (SPEC 3): a page directory to an inverted index.

``write_index_files`` is ``tse index``: its memory does not grow with the
directory.  The pages are indexed a range of docIDs at a time (in worker
processes with ``jobs`` > 1), each range into a sorted run spilled to a
temporary directory beside the index (``index/runs.py``); the runs are then
merged by word into the text index and its sidecar, streamed out, while the
document store receives each range's rows in docID order.  The temporary
directory is removed whatever happens, and the index's files are put in place
only once all of them are ready.

``build_index`` indexes in memory (small directories, tests).
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from ..rules import pagedir
from ..rules.indexfile import Index
from ..rules.words import word_counts
from .docstore import DocStoreWriter, Rows, docs_path, page_rows
from .pagefiles import PageScan
from .runs import Run, RunPostings, highest_number, merge_into_run, merge_runs, number_width
from .storage import IndexFileWriter

# Pages a run holds: a worker's memory is about 30 MB for 1,000 wikipedia pages.
RUN_PAGES = 1_000
# Runs merged at once: more are merged into one first (open files and the merge's heap stay small).
MERGE_FAN_IN = 64


class PageDirError(ValueError):
    """The page directory cannot be indexed; the message is for the user."""


def check_page_directory(directory: str | os.PathLike) -> None:
    """PAGEDIR must hold a readable ``.crawler`` and a readable ``1``."""
    for name, problem in (
        (pagedir.MARKER, "is not a crawler directory (no readable .crawler)"),
        ("1", "has no readable page 1"),
    ):
        try:
            with open(pagedir.page_path(directory, name), "rb"):
                pass
        except OSError:
            raise PageDirError(f"{directory} {problem}") from None


def build_index(
    pages: str | os.PathLike | PageScan,
    docs: DocStoreWriter | None = None,
    on_page: Callable[[int], object] | None = None,
) -> Index:
    """Index pages 1, 2, ... until the first one that cannot be opened, without the gone ones
    (of a directory, or of a scan not yet walked); record each in *docs*; call *on_page*
    with 1 after each page file (a progress bar's update).

    A page that is not a page file raises ``pagedir.PageFileError``, naming it.
    """
    scan = pages if isinstance(pages, PageScan) else PageScan(pages)
    index: Index = {}
    for found in scan.files():
        if on_page is not None:
            on_page(1)
        if found.page is None:  # gone
            continue
        doc_id = found.doc_id
        counts = word_counts(found.page.body)
        for word, occurrences in counts.items():
            postings = index.get(word)
            if postings is None:
                index[word] = {doc_id: occurrences}
            else:
                postings[doc_id] = occurrences
        if docs is not None:
            docs.add(doc_id, found.page, counts, found.key)
    return index


@dataclass(frozen=True)
class RangeIndexed:
    """What a worker gives back for a range of docIDs: its run (None without words), the document
    store's rows and the page files' (docID, size, mtime_ns), in docID order, and whether the
    directory ended in the range."""

    run: Run | None
    rows: list[Rows]
    statuses: list[tuple[int, int, int]]
    ended: bool


def index_range(directory: str | os.PathLike, gone: frozenset[int], start: int, stop: int, run: Path) -> RangeIndexed:
    """Index pages *start* to *stop* - 1 (or to the directory's end) into the run file *run*.

    A page that is not a page file raises ``pagedir.PageFileError``, naming it."""
    scan = PageScan(directory, gone)
    postings = RunPostings()
    rows, statuses = [], []
    for found in scan.files(start=start, stop=stop):
        statuses.append((found.doc_id, found.status.st_size, found.status.st_mtime_ns))
        if found.page is None:  # gone
            continue
        counts = word_counts(found.page.body)
        postings.add(found.doc_id, counts)
        rows.append(page_rows(found.doc_id, found.page, counts, found.key))
    return RangeIndexed(postings.write(run), rows, statuses, scan.ended)


def write_index_files(
    directory: str | os.PathLike,
    indexfile: str | os.PathLike,
    *,
    jobs: int = 1,
    run_pages: int = RUN_PAGES,
    fan_in: int = MERGE_FAN_IN,
    on_page: Callable[[int], object] | None = None,
) -> None:
    """Index the pages of *directory* into *indexfile*, its sidecar and its document store,
    with *jobs* worker processes (1: none); call *on_page* with the number of page files read.

    A page that is not a page file raises ``pagedir.PageFileError``, naming it;
    then, as on any error or interrupt, no file of the index is changed."""
    indexfile = Path(indexfile)
    scan = PageScan(directory)  # the parent's record of the walk: its fingerprint and last docID
    scratch = Path(tempfile.mkdtemp(prefix=f".{indexfile.name}.", suffix=".runs", dir=indexfile.parent))
    try:
        with _Workers(jobs) as workers, DocStoreWriter(docs_path(indexfile)) as docs:
            runs: list[Run] = []
            for indexed in _ranges_in_order(workers, directory, scan.gone, run_pages, scratch):
                for doc_id, size, mtime_ns in indexed.statuses:
                    scan.record(doc_id, size, mtime_ns)
                for rows in indexed.rows:
                    docs.insert(rows)
                if indexed.run is not None:
                    runs.append(indexed.run)
                if len(runs) >= fan_in:
                    runs = [merge_into_run(runs, scratch / f"merged-{scan.last}")]
                if on_page is not None:
                    on_page(len(indexed.statuses))
            width = number_width(highest_number(runs))
            with IndexFileWriter(indexfile, width, scratch) as index:
                for word, texts, numbers in merge_runs(runs, width):
                    index.add(word, texts, numbers)
                size, digest = index.finish()
            docs.finish(size, digest, scan)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _ranges_in_order(
    workers: _Workers, directory: str | os.PathLike, gone: frozenset[int], run_pages: int, scratch: Path
):
    """Each range of *run_pages* docIDs indexed, in docID order, until the one where the directory ends.

    Ranges are handed out ahead (two a worker) since the end is not known before
    it is reached; those past the end are dropped, their errors with them."""
    in_flight: deque[Future[RangeIndexed]] = deque()
    next_start = 1

    def hand_out() -> None:
        nonlocal next_start
        run = scratch / f"run-{next_start}"
        in_flight.append(workers.submit(index_range, directory, gone, next_start, next_start + run_pages, run))
        next_start += run_pages

    for _ in range(workers.ahead):
        hand_out()
    while True:
        indexed = in_flight.popleft().result()
        yield indexed
        if indexed.ended:
            return
        hand_out()


class _Workers:
    """Worker processes (*jobs* > 1), or the calling process itself, running one range at a time."""

    def __init__(self, jobs: int):
        self._pool = ProcessPoolExecutor(jobs, initializer=_leave_interrupts_to_parent) if jobs > 1 else None
        self.ahead = 2 * jobs if self._pool else 1

    def submit(self, function: Callable[..., RangeIndexed], *arguments: object) -> Future[RangeIndexed]:
        if self._pool is not None:
            return self._pool.submit(function, *arguments)
        future: Future[RangeIndexed] = Future()
        future.set_result(function(*arguments))  # its exception is raised here, at once
        return future

    def __enter__(self) -> _Workers:
        return self

    def __exit__(self, *exception: object) -> None:
        if self._pool is not None:
            # Wait for the ranges being indexed (they write into the temporary directory), drop the others.
            self._pool.shutdown(wait=True, cancel_futures=True)


def _leave_interrupts_to_parent() -> None:
    """Ctrl-C reaches the whole process group: the parent stops the workers and cleans up."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
