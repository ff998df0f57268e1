"""The indexer (SPEC 3): a page directory to an inverted index.

``write_index_files`` is ``tse index``: its memory does not grow with the
directory.  The pages are indexed a range of docIDs at a time (in worker
processes with ``jobs`` > 1), each range into a sorted run spilled to a
temporary directory beside the index (``index/runs.py``); the runs are then
merged by word into the text index and its sidecar, streamed out, while the
document store and the search index (``fulltext/store.py``: the workers
analyze each page's fields too, spilled to a file beside the run) receive each
range's rows in docID order.  The temporary directory is removed whatever
happens, and the index's files are put in place only once all of them are
ready (the search index written to its partial file before any is).  On an error or Ctrl-C the workers are
stopped at once (terminated, waited for) and later Ctrl-Cs are ignored until
that is done: none is left running, no temporary file is left behind.

``build_index`` indexes in memory (small directories, tests).
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import multiprocessing.connection
import os
import shutil
import signal
import sys
import tempfile
import threading
import traceback
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import NoReturn

from ..fulltext.store import SearchIndexWriter, packed, search_path, unpacked
from ..rules.files import pagedir
from ..rules.files.indexfile import Index
from ..rules.files.pagenotes import NotedPages, read_page_notes
from ..rules.text.pagefields import page_fields, page_text
from ..rules.text.words import word_counts
from .docstore import DocStoreWriter, Rows, docs_path, page_rows
from .pagecontent import readable
from .pagefiles import PageScan
from .runs import FieldsWriter, Run, RunPostings, RunTiers, highest_number, merge_runs, number_width, read_fields
from .storage import IndexFileWriter

# Pages a run holds, whose rows a worker sends at once (their search-index fields go to a file).
RUN_PAGES = 500
# Runs merged at once: open files and the merge's heap stay small (``runs.RunTiers``).
MERGE_FAN_IN = 64


class PageDirError(ValueError):
    """The page directory cannot be indexed; the message is for the user."""


class WorkerDied(RuntimeError):
    """A worker process died (killed, out of memory); the message is for the user."""


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
    notes = read_page_notes(scan.directory)
    index: Index = {}
    for found in scan.files():
        if on_page is not None:
            on_page(1)
        if found.page is None or found.page.url in notes.noindex:  # gone, or never an answer (noindex)
            continue
        doc_id = found.doc_id
        read = readable(found.page, notes)
        counts = word_counts(read.page.body)
        for word, occurrences in counts.items():
            postings = index.get(word)
            if postings is None:
                index[word] = {doc_id: occurrences}
            else:
                postings[doc_id] = occurrences
        if docs is not None:
            docs.add(doc_id, read.page, counts, found.key, read.charset)
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
    fields: Path | None  # the search index's fields file (runs.FieldsWriter: packed, no vocabulary), None for no page
    vocabulary: dict[str, str]  # the pages' words for typo tolerance (see PageFields), once a range
    warnings: list[tuple[int, str, str]] = dataclasses.field(default_factory=list)  # PDFs without text: docID, URL, why


def index_range(
    directory: str | os.PathLike, gone: frozenset[int], notes: NotedPages, start: int, stop: int, run: Path
) -> RangeIndexed:
    """Index pages *start* to *stop* - 1 (or to the directory's end) into the run file *run*, with what
    the crawl *notes* of them (read once, not once a range).

    A page that is not a page file raises ``pagedir.PageFileError``, naming it."""
    scan = PageScan(directory, gone)
    postings = RunPostings()
    rows, statuses, warnings = [], [], []
    vocabulary: dict[str, str] = {}
    with FieldsWriter(run.with_name(run.name + ".fields")) as fields:
        for found in scan.files(start=start, stop=stop):
            statuses.append((found.doc_id, found.status.st_size, found.status.st_mtime_ns))
            if found.page is None or found.page.url in notes.noindex:  # gone, or never an answer (noindex)
                continue
            read = readable(found.page, notes)  # a PDF as its text
            if read.warning:
                warnings.append((found.doc_id, found.page.url, read.warning))
            counts = word_counts(read.page.body)
            postings.add(found.doc_id, counts)
            shown = page_text(read.page.body, read.charset)  # decoded once, for the store and the search index
            row = page_rows(found.doc_id, read.page, counts, found.key, read.charset, shown)
            rows.append(row)
            page = page_fields(row.doc[1], read.page.body, read.charset, shown)
            for word, spelling in page.vocabulary:
                vocabulary.setdefault(word, spelling)
            fields.add(found.doc_id, row.doc[1], packed(dataclasses.replace(page, vocabulary=()), row.doc[4]))
    spilled = fields.path if fields.pages else None
    return RangeIndexed(postings.write(run), rows, statuses, scan.ended, spilled, vocabulary, warnings)


def write_index_files(
    directory: str | os.PathLike,
    indexfile: str | os.PathLike,
    *,
    jobs: int = 1,
    run_pages: int = RUN_PAGES,
    fan_in: int = MERGE_FAN_IN,
    on_page: Callable[[int], object] | None = None,
    on_warning: Callable[[int, str, str], object] | None = None,
) -> None:
    """Index the pages of *directory* into *indexfile*, its sidecar and its document store,
    with *jobs* worker processes (1: none); call *on_page* with the number of page files read,
    *on_warning* with (docID, URL, why) for each PDF that gave no text.

    A page that is not a page file raises ``pagedir.PageFileError``, naming it, and a
    worker process that dies or runs out of memory ``WorkerDied``; then, as on any error
    or interrupt, no file of the index is changed and no worker is left running."""
    indexfile = Path(indexfile)
    scan = PageScan(directory)  # the parent's record of the walk: its fingerprint and last docID
    scratch: Path | None = None
    workers: _Workers | None = None
    with _interrupts_during_cleanup_ignored() as ignore_interrupts:
        try:
            scratch = Path(tempfile.mkdtemp(prefix=f".{indexfile.name}.", suffix=".runs", dir=indexfile.parent))
            workers = _Workers(jobs, directory, scan.gone)
            canonicals = read_page_notes(directory).canonicals
            with (
                DocStoreWriter(docs_path(indexfile)) as docs,
                SearchIndexWriter(search_path(indexfile), canonicals) as search,
            ):
                tiers = RunTiers(scratch, fan_in)
                for indexed in _ranges_in_order(workers, run_pages, scratch):
                    for doc_id, size, mtime_ns in indexed.statuses:
                        scan.record(doc_id, size, mtime_ns)
                    for rows in indexed.rows:
                        docs.insert(rows)
                    if indexed.fields is not None:
                        for doc_id, url, fields in read_fields(indexed.fields):
                            search.add(doc_id, url, unpacked(fields))
                        indexed.fields.unlink()
                    search.add_vocabulary(indexed.vocabulary)
                    for warning in indexed.warnings if on_warning is not None else ():
                        on_warning(*warning)
                    if indexed.run is not None:
                        tiers.add(indexed.run)
                    if on_page is not None:
                        on_page(len(indexed.statuses))
                workers.stop()  # idle, or past the end: their memory is given back before the last merge
                # Written before the SPEC index is put in place: a search index that cannot be (a full
                # disk) leaves every file of the index as it was.
                search.prepare()
                runs = tiers.final()
                width = number_width(highest_number(runs))
                with IndexFileWriter(indexfile, width, scratch) as index:
                    for word, texts, numbers in merge_runs(runs, width):
                        index.add(word, texts, numbers)
                    size, digest = index.finish()
                docs.finish(size, digest, scan)
                search.finish(size, digest)
        except BaseException:
            ignore_interrupts()  # a second Ctrl-C must not cut the cleanup short and orphan the workers
            if workers is not None:
                workers.stop()
            raise
        finally:
            ignore_interrupts()
            if scratch is not None:
                shutil.rmtree(scratch, ignore_errors=True)


@contextmanager
def _interrupts_during_cleanup_ignored() -> Iterator[Callable[[], None]]:
    """Within: the first Ctrl-C raises KeyboardInterrupt and the ones after it are ignored, as they are
    once the function given is called (cleanup has begun); on leaving, Ctrl-C is as it was.

    Only in the main thread (where Python handles signals), and only when Ctrl-C raises
    KeyboardInterrupt there: an ignored or application-handled Ctrl-C is left alone."""
    if threading.current_thread() is not threading.main_thread():
        yield lambda: None
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is not signal.default_int_handler:
        yield lambda: None
        return

    def ignore() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    def interrupt(_signal: int, _frame: object) -> None:
        ignore()
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, interrupt)
    try:
        yield ignore
    finally:
        signal.signal(signal.SIGINT, previous)


def _ranges_in_order(workers: _Workers, run_pages: int, scratch: Path) -> Iterator[RangeIndexed]:
    """Each range of *run_pages* docIDs indexed, in docID order, until the one where the directory ends.

    Ranges are handed out ahead (two a worker) since the end is not known before
    it is reached; those past the end are dropped, their errors with them."""
    next_start = 1

    def hand_out() -> None:
        nonlocal next_start
        workers.hand_out(next_start, next_start + run_pages, scratch / f"run-{next_start}")
        next_start += run_pages

    for _ in range(workers.ahead):
        hand_out()
    while True:
        indexed = workers.next_result()
        yield indexed
        if indexed.ended:
            return
        hand_out()


class _Workers:
    """Worker processes indexing ranges of pages (*jobs* > 1), or the calling process itself (1).

    Each worker has a pipe of its own: a worker that dies, even halfway through
    sending a range's result, is seen at once (its pipe ends, its process exits),
    where a shared result queue (``ProcessPoolExecutor``) can wait for the rest
    of that result forever.  A range goes to the worker with the fewest to do.
    """

    def __init__(self, jobs: int, directory: str | os.PathLike, gone: frozenset[int]):
        self._directory = directory
        self._gone = gone
        self._notes = read_page_notes(directory)  # read here once; forked workers inherit it
        self._processes: list[BaseProcess] = []
        self._connections: list[Connection] = []
        self._to_do: list[int] = []  # ranges each worker was given and has not returned
        self._handed_out: deque[int] = deque()  # the first docID of the ranges not yet taken, in order
        self._returned: dict[int, tuple[RangeIndexed | None, Exception | None, str]] = {}
        self.ahead = 2 * jobs if jobs > 1 else 1
        if jobs == 1:
            return
        # Linux: fork, its default up to Python 3.13 (3.14's forkserver would add a server process to
        # stop); a worker starts at once, sharing the modules loaded.  Elsewhere the platform's default.
        context = multiprocessing.get_context("fork" if sys.platform == "linux" else None)
        try:
            for _ in range(jobs):
                ours, theirs = context.Pipe()
                # A forked worker has copies of the parent's ends of the pipes, its own included: it closes
                # them, so that its pipe ends when the parent does (killed, it leaves no worker behind).
                parent_ends = [*self._connections, ours] if context.get_start_method() == "fork" else []
                process = context.Process(
                    target=_index_ranges, args=(theirs, parent_ends, directory, gone, self._notes), daemon=True
                )
                # Ctrl-C held back until the worker is known to stop(); the worker inherits the mask
                # and ignores Ctrl-C before unblocking it.
                with _interrupts_blocked():
                    process.start()
                    self._processes.append(process)
                    self._connections.append(ours)
                    self._to_do.append(0)
                theirs.close()  # the worker's end is the worker's only: its pipe ends when it does
        except BaseException:
            self.stop()
            raise

    def hand_out(self, start: int, stop: int, run: Path) -> None:
        """Have pages *start* to *stop* - 1 indexed into the run file *run*; in this process, at once
        (its exception raised here)."""
        self._handed_out.append(start)
        if not self._processes:
            self._returned[start] = (index_range(self._directory, self._gone, self._notes, start, stop, run), None, "")
            return
        worker = min(range(len(self._processes)), key=self._to_do.__getitem__)
        try:
            self._connections[worker].send((start, stop, run))
        except OSError:  # its pipe is closed: it died
            self._died(worker)
        self._to_do[worker] += 1

    def next_result(self) -> RangeIndexed:
        """The result of the first range handed out and not yet taken, or its exception;
        ``WorkerDied`` when a worker died or ran out of memory."""
        start = self._handed_out.popleft()
        while start not in self._returned:
            self._receive()
        indexed, error, remote_traceback = self._returned.pop(start)
        if isinstance(error, MemoryError):
            raise WorkerDied("a worker process ran out of memory")
        if error is not None:
            raise error from _RemoteTraceback(remote_traceback)
        assert indexed is not None
        return indexed

    def _receive(self) -> None:
        """Wait for a result from any worker, or for a worker's death."""
        worker_of: dict[object, int] = {}
        for worker, (connection, process) in enumerate(zip(self._connections, self._processes, strict=True)):
            worker_of[connection] = worker_of[process.sentinel] = worker
        for ready in multiprocessing.connection.wait(list(worker_of)):
            worker = worker_of[ready]
            if ready is not self._connections[worker]:  # its process ended
                self._died(worker)
            try:
                start, *returned = self._connections[worker].recv()
            except (EOFError, OSError):  # its pipe ended, maybe halfway through a result
                self._died(worker)
            self._returned[start] = tuple(returned)
            self._to_do[worker] -= 1

    def _died(self, worker: int) -> NoReturn:
        process = self._processes[worker]
        process.join(5)  # its end is at hand: its pipe or its process said so
        raise WorkerDied(f"a worker process died: {_how_it_ended(process.exitcode)}")

    def stop(self) -> None:
        """Stop the workers at once, whatever they are doing (the work past the end, or all of it on
        an error), and wait for them."""
        for process in self._processes:
            process.terminate()
        for process in self._processes:
            process.join()
        for connection in self._connections:
            connection.close()
        self._processes, self._connections, self._to_do = [], [], []


def _how_it_ended(status: int | None) -> str:
    if status is not None and status < 0:
        return f"killed by {signal.Signals(-status).name}"
    if status is not None:
        return f"exit status {status}"
    return "its pipe closed"


class _RemoteTraceback(Exception):
    """Where in a worker process the exception it sent back was raised."""

    def __str__(self) -> str:
        return "\n" + str(self.args[0])


def _index_ranges(
    connection: Connection,
    parent_ends: list[Connection],
    directory: str | os.PathLike,
    gone: frozenset[int],
    notes: NotedPages,
) -> None:
    """A worker process: index the ranges it is sent, (start, stop, run file) each, and send back
    (start, what ``index_range`` gives, its exception, where it was raised) for each, until the
    parent stops it or is gone (its pipe ends)."""
    _leave_interrupts_to_parent()
    for parent_end in parent_ends:
        parent_end.close()
    try:
        while True:
            task = connection.recv()
            try:
                returned = (task[0], index_range(directory, gone, notes, *task), None, "")
            except Exception as error:  # the parent raises it if it needs the range (not past the end)
                returned = (task[0], None, error, traceback.format_exc())
            try:
                connection.send(returned)
            except MemoryError as error:  # pickling a result bigger than the memory left
                connection.send((task[0], None, error, ""))
    except (EOFError, OSError):  # the parent is gone: nobody to work for
        return


@contextmanager
def _interrupts_blocked() -> Iterator[None]:
    """SIGINT held back (pending) within, in this thread and in the processes it starts."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _leave_interrupts_to_parent() -> None:
    """Ctrl-C reaches the whole process group: the parent stops the workers and cleans up."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
