"""PageDirPipeline: saves each page as the next docID of the page directory."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import DropItem
from scrapy.utils.defer import deferred_from_coro

from ..exitcodes import PAGE_LIMIT, WRITE_ERROR
from ..resume.extension import crawl_state
from ..resume.statedb import RESUMABLE
from ..rules.files import pagedir
from ..rules.files.pagenotes import (
    CANONICAL,
    CHARSETS,
    FOLLOW,
    FOLLOWED,
    HTML,
    INDEX,
    NO_CANONICAL,
    NO_CHARSET,
    NOFOLLOW,
    NOINDEX,
    PDF,
    ROBOTS,
    TYPES,
    PageNotes,
    differing_notes,
    noted_value,
    read_page_notes,
)
from ..update.extension import update_session
from .downloader.warc import WarcMiddleware
from .items import PageItem
from .scheduling.engineturn import engine_turn
from .signals import page_writing

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

# Inline page writes are timed in groups of WRITES_LOOKED_AT: taking longer than
# SLOW_WRITE a file plus COPY_TIME a byte, on average, moves them to threads.
# Copying the bytes is work a thread would not save the reactor (a 117 kB page
# takes 0.2-0.25 ms to write on this machine's tmpfs or a quick ext4
# directory); what is beyond it is the file system blocking (ext4 just after
# thousands of files were freed: 0.3-0.9 ms to create one, a few of several ms).
WRITES_LOOKED_AT = 32
SLOW_WRITE = 0.0003
COPY_TIME = 1e-9

# The level of the log lines about a page not saved because the crawl is stopping on an error (Scrapy's
# "Dropped: ..." too): the reason is said once, as the crawl's last line (crawl/outcome.py); ``tse
# crawl``'s terminal, which shows the log from WARNING, shows nothing else but the summary
# (docs/progress.md), and a log file, or scrapy crawl's log, still has them, from INFO.
STOPPING = logging.INFO


class PageDirPipeline:
    """Writes ``PAGEDIR/.crawler`` at the start, then each page as docID 1, 2, 3 ...

    A page that cannot be written stops the crawl at once (``tse/error``);
    the files already written stay valid."""

    def __init__(self, crawler: Crawler):
        self.crawler = crawler
        self.directory = crawler.settings.get("TSE_PAGEDIR")
        self.fsync = crawler.settings.getbool("TSE_FSYNC")
        # Page files are written inline, once the next page's request has gone out
        # (``engine_turn``), so that its fetch hides the write. Handing a write to a
        # thread costs the reactor as much as writing to a quick file system (futex
        # wake-ups, the GIL going back and forth): 6 % of an order=tse crawl, 15 % of
        # an order=bfs crawl 8 at a time. Where writes block (TSE_FSYNC, or ext4
        # creating files just after thousands were freed: 0.3-0.9 ms each), they go to
        # asyncio's pool of threads for the rest of the crawl; a pool, not one
        # thread, as slow creations then overlap.
        self.write_in_threads = self.fsync
        self.write_seconds = 0.0  # the inline writes since the last look: time, bytes, count
        self.write_bytes = 0
        self.writes = 0
        extension = crawl_state(crawler)
        self.state = extension.state if extension else None
        self.update = update_session(crawler)
        self.next_id = self._first_free_id()
        self.max_pages = crawler.settings.getint("TSE_MAX_PAGES")
        # An update counts the pages it saves, not docIDs (known pages keep theirs).
        self.saved_pages = self.state.saved_count() if self.update else 0
        self.failed = False
        self.warc: WarcMiddleware | None = None
        # One notes file per process: the workers of a distributed crawl share the directory.
        notes_name = (crawler.settings.get("TSE_WORKER") or "crawl").replace(":", "-").replace("/", "-")
        # The pages as the notes said when this run began (what a page may no longer be): an update's,
        # and a resumed crawl's, whose page noted just before a kill, its file not yet written, is
        # fetched again and noted as it is now (the last note of a URL wins).
        resuming = extension is not None and extension.resuming
        self.noted_before = read_page_notes(self.directory) if self.update is not None or resuming else None
        kinds = (CHARSETS, ROBOTS, FOLLOW, TYPES, CANONICAL)
        self.notes = {kind: PageNotes(self.directory, kind, notes_name) for kind in kinds}

    def _first_free_id(self) -> int:
        if self.state is None:
            return 1
        first_new = self.update.first_new_id if self.update else 1
        return max([first_new, self.state.next_doc_id(), *(doc + 1 for doc in self.state.writing_docs())])

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PageDirPipeline:
        return cls(crawler)

    def open_spider(self) -> None:
        if self.crawler.settings.get("TSE_WARC"):
            # Its records are written by a thread: a page is saved once its exchange is in the file.
            self.warc = self.crawler.get_downloader_middleware(WarcMiddleware)
        try:
            pagedir.mark(self.directory)
        except OSError as error:
            self.fail(f"cannot create {self.directory}/{pagedir.MARKER}: {error.strerror}")

    async def process_item(self, item: Any) -> Any:
        if not isinstance(item, PageItem):
            return item
        if self.failed:
            raise DropItem("the page directory is not writable any more", log_level=STOPPING)
        if self.warc is not None:
            # Every exchange so far (this page's too) written, or the crawl stopped (tse/error).
            self.warc.wait_written()
        if self.crawler.stats.get_value("tse/error"):
            # The crawl has failed elsewhere (its WARC, say): this page is fetched again on resume.
            raise DropItem("the crawl is stopping on an error", log_level=STOPPING)
        if await self.save(item):
            self.crawler.stats.inc_value("tse/pages_saved")
        return item

    def close_spider(self) -> None:
        for notes in self.notes.values():
            notes.close()
        if self.warc is not None:
            # The last exchanges' records, before the crawl's outcome is decided (at spider_closed).
            self.warc.wait_written()

    async def save(self, item: PageItem) -> bool:
        """Write the page under its docID (and record it in the crawl state); True when saved here."""
        known = self.update.known_page(item.url) if self.update else None
        doc_id = item.doc_id if item.doc_id is not None else known.doc_id if known else self.next_id
        # Taken before the write: a page saved meanwhile (a write in a thread) gets the next one.
        self.next_id = max(self.next_id, doc_id + 1)
        try:
            # A page read back on resume is never written again; with a catalog,
            # a known page is rewritten only when it changed.
            write = not item.replayed
            if self.update is not None:
                changed = self.update.saved(
                    doc_id,
                    item.url,
                    item.depth,
                    item.body,
                    item.status,
                    item.validators,
                    item.revisit,
                    item.replayed,
                    item.lastmod,
                    item.redirected_from,
                )
                # (A page whose notes change is written again, with them: the indexer reads it anew.  So
                # is a known page whose write a kill cut short, fetched again under its docID: its notes
                # were written before its file, which may still be the one from before the update.)
                interrupted = item.doc_id is not None
                write = write and (changed or interrupted or self._notes_changed(item))
            if write:
                if self.state is not None:
                    # Committed before the next page goes: should its request fail at
                    # once (robots.txt), ``finished`` would commit the links held, this
                    # page's among them, before this page's row says it is being saved.
                    self.state.writing(item.state_row, doc_id)
                self.crawler.signals.send_catch_log(page_writing, token=item.token)
                # The next page's request goes out first: its fetch hides the writing.
                await engine_turn(self.crawler)
                await self.write(doc_id, item)
                self.crawler.stats.inc_value("tse/pages_written")  # (an update's unchanged pages are not)
            if self.state is not None:
                # A page not written now had no ``writing`` commit: its links are committed with it.
                self.state.saved(item.state_row, doc_id, with_links=not write)
        except sqlite3.Error as error:
            self.fail(f"cannot write the crawl state: {error}")
            raise DropItem(str(error), log_level=STOPPING) from None
        item.doc_id = doc_id  # for the crawl record
        self.saved_pages += 1
        saved = self.saved_pages if self.update else self.next_id - 1
        if self.max_pages and saved >= self.max_pages:
            deferred_from_coro(self.crawler.engine.close_spider_async(reason=PAGE_LIMIT))
        return True

    def _notes_changed(self, item: PageItem) -> bool:
        """Whether an update's page is no longer what the crawl noted of it, as far as its answer says
        (noindex, nofollow, PDF, canonical URL, HTTP charset: ``pagenotes.differing_notes``)."""
        before = self.noted_before
        if before is None or not item.said:
            return False
        differing = differing_notes(
            before, item.url, item.http_charset, item.noindex, item.pdf, item.canonical, item.nofollow
        )
        return bool(item.said & differing)

    async def write(self, doc_id: int, item: PageItem) -> None:
        """Write page file *doc_id* after its notes; on failure, stop the crawl and drop the item.

        The notes go first, handed to the kernel (and fsynced, with ``TSE_FSYNC``, before the page
        file is): a page file on disk always has its notes, whatever instant a crawl is killed at (a
        resume reads a page whose file was written back from the file, which keeps no header).  A
        note of a page whose file is not written (a kill, a failure in between) is of a page fetched
        again, by a resume, and noted again: the last note of a URL wins."""
        page = pagedir.Page(item.url, item.depth, item.body)
        noted = self._note(doc_id, item)
        try:
            if self.write_in_threads:
                await asyncio.to_thread(self._write_page, doc_id, page, noted)
            else:
                started = time.perf_counter()
                pagedir.write_page(self.directory, doc_id, page)
                self._timed_write(time.perf_counter() - started, len(item.body))
        except OSError as error:
            # (Resumable: the pages before it are whole, and a resume writes this one again.)
            self.fail(f"cannot write page file {self.directory}/{doc_id}: {error.strerror}", resumable=True)
            raise DropItem(str(error), log_level=STOPPING) from None

    def _write_page(self, doc_id: int, page: pagedir.Page, noted: list[PageNotes]) -> None:
        """Write page file *doc_id* (in a thread), its *noted* notes made to last first (``TSE_FSYNC``)."""
        if self.fsync:
            for notes in noted:
                try:
                    notes.sync()
                except OSError as error:  # (as a note that cannot be written)
                    logger.warning("Cannot note page %d in %s: %s", doc_id, notes.path, error)
        pagedir.write_page(self.directory, doc_id, page, fsync=self.fsync)

    def _note(self, doc_id: int, item: PageItem) -> list[PageNotes]:
        """Note what page *doc_id* is (written through to the kernel: ``PageNotes.note``); the notes
        files written to."""
        # An update notes what a page is now even when it is the usual (an HTML page, indexed, no
        # canonical URL) if it was noted otherwise before (a resume too): the last note of a URL wins.
        before = self.noted_before
        url = item.url
        noted = []
        for kind, value in (
            (
                CHARSETS,
                noted_value(url, item.http_charset) or (NO_CHARSET if before and url in before.charsets else None),
            ),
            (ROBOTS, NOINDEX if item.noindex else INDEX if before and url in before.noindex else None),
            (FOLLOW, NOFOLLOW if item.nofollow else FOLLOWED if before and url in before.nofollow else None),
            (TYPES, PDF if item.pdf else HTML if before and url in before.pdfs else None),
            (
                CANONICAL,
                noted_value(url, item.canonical, url_value=True)
                or (NO_CANONICAL if before and url in before.canonicals else None),
            ),
        ):
            notes = self.notes[kind]
            if value and kind in item.said:  # (a 304's page written again: only what its headers said)
                try:
                    notes.note(item.url, value)
                    noted.append(notes)
                except OSError as error:  # the page is saved: the indexer reads it without the note
                    logger.warning("Cannot note page %d in %s: %s", doc_id, notes.path, error)
        return noted

    def _timed_write(self, seconds: float, size: int) -> None:
        self.write_seconds += seconds
        self.write_bytes += size
        self.writes += 1
        if self.writes < WRITES_LOOKED_AT:
            return
        mean = self.write_seconds / self.writes
        slow = self.write_seconds > self.writes * SLOW_WRITE + self.write_bytes * COPY_TIME
        self.write_seconds, self.write_bytes, self.writes = 0.0, 0, 0
        if slow:
            self.write_in_threads = True
            logger.info("Page files take %.1f ms to write: writing them in threads from now on", mean * 1000)

    def fail(self, message: str, resumable: bool = False) -> None:
        """Stop the crawl at once; what was written stays valid.  *resumable*: the reason line says how to
        go on (``outcome.crawl_failure``)."""
        self.failed = True
        logger.log(STOPPING, "Stopping the crawl: %s", message)
        self.crawler.stats.set_value("tse/error", message)
        self.crawler.stats.set_value(RESUMABLE, resumable)
        deferred_from_coro(self.crawler.engine.close_spider_async(reason=WRITE_ERROR))
