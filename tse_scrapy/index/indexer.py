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

The worker processes and their stopping are ``index/workers.py``'s.

``build_index`` indexes in memory (small directories, tests).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..fulltext.store import SearchIndexWriter, Spellings, packed, search_path, unpacked
from ..resume.statedb import CATALOG_UPDATE, STATE_NAME, UnreadableDatabase, stored_meta
from ..rules.files import pagedir
from ..rules.files.indexfile import Index
from ..rules.files.pagenotes import NotedPages, read_page_notes
from ..rules.text import wordpass
from ..rules.text.pagefields import page_fields, page_text
from ..rules.text.words import word_counts
from .docstore import DocStoreWriter, Rows, docs_path, page_rows
from .pagecontent import readable
from .pagefiles import PageScan
from .runs import (
    FieldsWriter,
    Run,
    RunPostings,
    RunTiers,
    highest_number,
    merge_runs,
    number_width,
    read_fields,
    read_vocabulary,
    write_vocabulary,
)
from .storage import IndexFileWriter
from .workers import Workers, interrupts_during_cleanup_ignored, ranges_in_order

# Pages a run holds, whose rows a worker sends at once (their search-index fields go to a file).
RUN_PAGES = 500
# Distinct words a range's postings hold before they are written as a run of their own: 500 real pages
# hold 20,000 to 45,000; a page of millions of distinct words (30 MB of random letters: 3.8 million, about
# 1 GB of postings) held to the range's end made each such page of it add as much (a tester's find).
RUN_WORDS = 500_000
# Runs merged at once: open files and the merge's heap stay small (``runs.RunTiers``).
MERGE_FAN_IN = 64
# The vocabulary's words a process indexing ranges remembers giving back for the ranges it indexed
# before (then it forgets them and starts again: about 15 MB): a word is given back once, not once a
# range, as the writer keeps a word's first spelling and takes each process's ranges in the order it
# indexed them.
# On the 20,000-page bench: 1,862,085 words given back -> 200,298, the writer's inserts 4.1 -> 0.4 s.
SENT_WORDS = 200_000
# The vocabulary's words a range holds before they are written to a file of their own, as its postings
# are (RUN_WORDS): a word and its first spelling and page take about 250 bytes, and pages of random words
# (hostile, or not words at all) held to the range's end grew a worker, and the parent it gave them to,
# by as much: 1,000 pages of 10,000 random 9-letter words, 2.4 GB.  500 real pages hold 20,000 to 45,000
# distinct words, fewer of 5 letters or more, so a real site's range never spills: 100,000 is about 25 MB
# a process, and at most SENT_WORDS, so that the words a range gives back last can all be remembered.
VOCABULARY_WORDS = 100_000


class PageDirError(ValueError):
    """The page directory cannot be indexed; the message is for the user."""


def check_page_directory(directory: str | os.PathLike, indexfile: str | os.PathLike | None = None) -> None:
    """PAGEDIR must hold a readable ``.crawler`` and a readable ``1``.

    *indexfile*: the command's INDEXFILE (``PAGEDIR INDEXFILE``), for a hint in the same line when the
    two look swapped (PAGEDIR a file, INDEXFILE a crawler directory)."""
    for name, problem in (
        (pagedir.MARKER, "is not a crawler directory (no readable .crawler)"),
        ("1", "has no readable page 1"),
    ):
        if not pagedir.is_readable_file(pagedir.page_path(directory, name)):
            if name == pagedir.MARKER and indexfile is not None and _swapped(directory, indexfile):
                problem += "; the arguments are PAGEDIR INDEXFILE: were they swapped?"
            raise PageDirError(f"{directory} {problem}")


def check_index_outside_crawl(directory: str | os.PathLike, indexfile: str | os.PathLike) -> None:
    """INDEXFILE must not be a file of the crawl PAGEDIR: a page file (``1``, ``2`` ...) or one of its
    records (``.crawler``, ``.tse-gone`` ...: its hidden files), which writing the index would
    overwrite, leaving a crawl that can no longer be indexed, updated or resumed.  Another name in
    PAGEDIR (``PAGEDIR/index``) is the user's choice."""
    name = Path(indexfile).name
    page_file = name.isascii() and name.isdigit() and name == str(int(name)) and name != "0"  # 1, 2 ... not 01
    if not (page_file or name.startswith(".")):
        return
    try:
        inside = Path(indexfile).parent.resolve().samefile(Path(directory).resolve())
    except OSError:  # (a parent that does not exist is no crawl's: the writer says so)
        return
    if inside:
        what = f"a page file of the crawl {directory}" if page_file else f"one of the crawl {directory}'s own files"
        raise PageDirError(f"{indexfile} is {what}: write the index elsewhere")


# The temporary directory of a run's runs, beside INDEXFILE: ``.INDEXFILE.XXXXXXXX.runs`` (tempfile.mkdtemp's
# 8 random characters).
RUNS_PREFIX, RUNS_SUFFIX = ".", ".runs"
_RANDOM_PART = re.compile(r"[a-z0-9_]{8}")


def remove_leftover_runs(indexfile: str | os.PathLike) -> list[str]:
    """Remove the temporary directories ``.INDEXFILE.XXXXXXXX.runs`` beside *indexfile* that a ``tse index``
    killed (``kill -9``: no cleanup) left behind; their names.  Only for a caller holding INDEXFILE's lock
    (``indexlock.index_lock``): then no other ``tse index`` of INDEXFILE runs, the only one that makes
    them (a full build, its own made after this), so none is in use.  (The workers of a killed one may
    still be finishing the range in hand: a run they cannot write ends them as their closed pipe would.)
    Best effort: what cannot be removed stays for the next run."""
    indexfile = Path(indexfile)
    prefix = f"{RUNS_PREFIX}{indexfile.name}."
    removed = []
    try:
        names = os.listdir(indexfile.parent)
    except OSError:
        return removed
    for name in sorted(names):
        if not (name.startswith(prefix) and name.endswith(RUNS_SUFFIX)):
            continue
        if not _RANDOM_PART.fullmatch(name[len(prefix) : -len(RUNS_SUFFIX)]):
            continue  # another INDEXFILE's (``.INDEXFILE.more.XXXXXXXX.runs``), or not a temporary directory
        path = indexfile.parent / name
        if path.is_symlink() or not path.is_dir():
            continue
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.lexists(path):
            removed.append(name)
    return removed


def unfinished_crawl(directory: str | os.PathLike) -> str | None:
    """What to say of PAGEDIR when it holds a crawl not finished (its durable state is there: a crawl
    running, or stopped before its end, which ``--resume`` finishes), else None.  Its pages saved so
    far are indexed all the same: the index is then of part of the crawl."""
    path = os.path.join(directory, STATE_NAME)
    if not os.path.exists(path):
        return None
    try:
        update = stored_meta(path, "catalog") == CATALOG_UPDATE
    except (UnreadableDatabase, OSError):  # (said as a crawl's: the crawl itself says what is wrong)
        update = False
    kind, again = ("an update", "tse crawl --update --resume") if update else ("a crawl", "tse crawl --resume")
    return (
        f"{directory} holds {kind} not finished (still running, or stopped: {again} goes on with"
        " it): indexing the pages saved so far"
    )


def _swapped(directory: str | os.PathLike, indexfile: str | os.PathLike) -> bool:
    """Whether PAGEDIR *directory* is a file and INDEXFILE *indexfile* a crawler directory."""
    return (
        os.path.isfile(directory)
        and os.path.isdir(indexfile)
        and pagedir.is_readable_file(pagedir.page_path(indexfile, pagedir.MARKER))
    )


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
    """What a worker gives back for a range of docIDs: its runs (none without words; more than one where
    its pages hold more than RUN_WORDS distinct words), the document store's rows and the page files'
    (docID, size, mtime_ns), in docID order, and whether the directory ended in the range."""

    runs: list[Run]
    rows: list[Rows]
    statuses: list[tuple[int, int, int]]
    ended: bool
    fields: Path | None  # the search index's fields file (runs.FieldsWriter: packed, respellings only), or None
    vocabulary: Spellings  # the pages' words for typo tolerance (PageFields) not given back before: SENT_WORDS
    # The pieces of the vocabulary written before ``vocabulary`` (runs.write_vocabulary), in the order the
    # pages were read: a range's words past VOCABULARY_WORDS; to be added before it, in that order.
    vocabulary_pieces: list[Path] = dataclasses.field(default_factory=list)
    warnings: list[tuple[int, str, str]] = dataclasses.field(default_factory=list)  # PDFs without text: docID, URL, why


def index_range(
    directory: str | os.PathLike,
    gone: frozenset[int],
    notes: NotedPages,
    sent: set[str],
    start: int,
    stop: int,
    run: Path,
    *,
    run_words: int = RUN_WORDS,
    vocabulary_words: int = VOCABULARY_WORDS,
) -> RangeIndexed:
    """Index pages *start* to *stop* - 1 (or to the directory's end) into the run file *run* (and files
    named after it, a run each *run_words* distinct words, a piece of the vocabulary each
    *vocabulary_words* words), with what the crawl *notes* of them (read once, not once a range); *sent*:
    the vocabulary's words this process gave back for the ranges before this one of the same index (see
    SENT_WORDS), which it leaves out of this range's and adds this range's last piece to.

    A page that is not a page file raises ``pagedir.PageFileError``, naming it."""
    scan = PageScan(directory, gone)
    postings = RunPostings()
    runs: list[Run | None] = []
    rows, statuses, warnings = [], [], []
    vocabulary: Spellings = {}
    pieces: list[Path] = []
    with FieldsWriter(run.with_name(run.name + ".fields")) as fields:
        for found in scan.files(start=start, stop=stop):
            statuses.append((found.doc_id, found.status.st_size, found.status.st_mtime_ns))
            if found.page is None or found.page.url in notes.noindex:  # gone, or never an answer (noindex)
                continue
            read = readable(found.page, notes)  # a PDF as its text
            if read.warning:
                warnings.append((found.doc_id, found.page.url, read.warning))
            counts = wordpass.word_counts(read.page.body)  # (typed: a third of word_counts' instructions)
            postings.add(found.doc_id, counts)
            if len(postings) > run_words:  # written now, not held with the range's next pages
                runs.append(postings.write(run.with_name(f"{run.name}.{len(runs)}")))
                postings = RunPostings()
            shown = page_text(read.page.body, read.charset)  # decoded once, for the store and the search index
            row = page_rows(found.doc_id, read.page, counts, found.key, read.charset, shown)
            rows.append(row)
            page = page_fields(row.doc[1], read.page.body, read.charset, shown)
            # Each word's first spelling kept; a page's words are distinct, and most are held already
            # (found in C, not a word at a time in Python: 0.3 ms a wikipedia page).
            spelled = dict(page.vocabulary)
            first_met = set(spelled).difference(vocabulary)
            vocabulary.update((word, (spelled[word], found.doc_id)) for word in first_met)
            if len(vocabulary) >= vocabulary_words:  # written now, as postings are: the writer takes the
                # pieces in order, keeping a word's first spelling (one met again after is given again)
                piece = run.with_name(f"{run.name}.vocabulary.{len(pieces)}")
                pieces.append(write_vocabulary(piece, _not_sent(vocabulary, sent)))
                vocabulary = {}
            # (The vocabulary's words go back apart, once a range: SENT_WORDS; the page's respellings with it.)
            respelled = tuple(pair for pair in page.vocabulary if pair[0] != pair[1])
            fields.add(
                found.doc_id, row.doc[1], packed(dataclasses.replace(page, vocabulary=respelled), row.doc[4], shown)
            )
    spilled = fields.path if fields.pages else None
    runs.append(postings.write(run))
    fresh = _not_sent(vocabulary, sent)
    if len(sent) + len(fresh) > SENT_WORDS:
        sent.clear()
    # Last: once the range can no longer fail.  (Of a range that wrote pieces, the words of its last only:
    # the others are no longer held, and are given again by a later range that meets them.)
    sent.update(fresh)
    made = [written for written in runs if written is not None]
    return RangeIndexed(made, rows, statuses, scan.ended, spilled, fresh, warnings=warnings, vocabulary_pieces=pieces)


def _not_sent(vocabulary: Spellings, sent: set[str]) -> Spellings:
    """The words of *vocabulary* not in *sent*, with their spellings and pages."""
    return {word: vocabulary[word] for word in set(vocabulary).difference(sent)}


def write_index_files(
    directory: str | os.PathLike,
    indexfile: str | os.PathLike,
    *,
    jobs: int = 1,
    run_pages: int = RUN_PAGES,
    run_words: int = RUN_WORDS,
    vocabulary_words: int = VOCABULARY_WORDS,
    fan_in: int = MERGE_FAN_IN,
    on_page: Callable[[int], object] | None = None,
    on_warning: Callable[[int, str, str], object] | None = None,
    on_end: Callable[[int], object] | None = None,
) -> None:
    """Index the pages of *directory* into *indexfile*, its sidecar and its document store,
    with *jobs* worker processes (1: none); call *on_page* with the number of page files read,
    *on_warning* with (docID, URL, why) for each PDF that gave no text, *on_end* with the docID
    where the walk ended (the first page file that could not be opened) once every page is read.

    A page that is not a page file raises ``pagedir.PageFileError``, naming it, and a
    worker process that dies or runs out of memory ``WorkerDied``; then, as on any error
    or interrupt, no file of the index is changed and no worker is left running."""
    indexfile = Path(indexfile)
    scan = PageScan(directory)  # the parent's record of the walk: its fingerprint and last docID
    scratch: Path | None = None
    workers: Workers | None = None
    with interrupts_during_cleanup_ignored() as ignore_interrupts:
        try:
            try:
                scratch = Path(
                    tempfile.mkdtemp(prefix=f"{RUNS_PREFIX}{indexfile.name}.", suffix=RUNS_SUFFIX, dir=indexfile.parent)
                )
            except OSError as error:  # (a directory that takes no entry, /proc's: it named the temporary one)
                told = f"cannot make its temporary directory in {indexfile.parent} ({error.strerror})"
                raise OSError(error.errno, told, str(indexfile)) from None
            notes = read_page_notes(directory)  # read here once; forked workers inherit it
            work = functools.partial(
                index_range, directory, scan.gone, notes, set(), run_words=run_words, vocabulary_words=vocabulary_words
            )
            workers = Workers(jobs, work)
            with (
                DocStoreWriter(docs_path(indexfile)) as docs,
                SearchIndexWriter(search_path(indexfile), notes.canonicals) as search,
            ):
                tiers = RunTiers(scratch, fan_in)
                for indexed in ranges_in_order(workers, run_pages, lambda start: (scratch / f"run-{start}",)):
                    for doc_id, size, mtime_ns in indexed.statuses:
                        scan.record(doc_id, size, mtime_ns)
                    for rows in indexed.rows:
                        docs.insert(rows)
                    if indexed.fields is not None:
                        for doc_id, url, fields in read_fields(indexed.fields):
                            search.add(doc_id, url, unpacked(fields))
                        indexed.fields.unlink()
                    for piece in indexed.vocabulary_pieces:  # (in the order written, before the last)
                        search.add_vocabulary(read_vocabulary(piece))
                        piece.unlink()
                    search.add_vocabulary(indexed.vocabulary)
                    for warning in indexed.warnings if on_warning is not None else ():
                        on_warning(*warning)
                    for run in indexed.runs:
                        tiers.add(run)
                    if on_page is not None:
                        on_page(len(indexed.statuses))
                workers.stop()  # idle, or past the end: their memory is given back before the last merge
                if on_end is not None:
                    on_end(scan.last + 1)
                # The search index's last work beside the SPEC index's merge (the 20,000-page bench: the
                # build's end 8 -> 6 s).  It is written before the SPEC index is put in place: a search
                # index that cannot be (a full disk) leaves every file of the index as it was.
                with search.preparing(on_error=ignore_interrupts) as search_prepared:
                    runs = tiers.final()
                    width = number_width(highest_number(runs))
                    with IndexFileWriter(indexfile, width, scratch) as index:
                        for word, texts, numbers in merge_runs(runs, width):
                            index.add(word, texts, numbers)
                        search_prepared()
                        size, digest, index_files = index.ready()
                        # Every file written whole before any is put in place (a full disk changes
                        # none of them), then all renamed, in a moment: a Ctrl-C is ignored from here.
                        docs.ready(size, digest, scan)
                        search.ready(size, digest)
                        ignore_interrupts()
                        index_files.put_in_place()
                        docs.put_in_place()
                        search.put_in_place()
        except BaseException:
            ignore_interrupts()  # a second Ctrl-C must not cut the cleanup short and orphan the workers
            if workers is not None:
                workers.stop()
            raise
        finally:
            ignore_interrupts()
            if scratch is not None:
                shutil.rmtree(scratch, ignore_errors=True)
