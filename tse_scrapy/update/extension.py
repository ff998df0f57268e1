"""UpdateExtension: what a crawl that keeps a catalog (an update, or a crawl
with validators) knows of the pages before it, learns during it, and leaves
behind (``.tse-pages.sqlite``, ``.tse-gone``, the changes file).

At the start of a new crawl it copies the catalog (or, without one, what the
page files say) into the crawl state; everything the crawl learns goes into
the crawl state in the same commits as the pages; when the crawl has
finished, ``finish`` writes ``.tse-gone``, the changes file and the catalog,
each whole, before the crawl state is removed.  A crawl killed at any
instant therefore resumes to the same result (docs/updating.md).
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import sys
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.exceptions import NotConfigured

from ..atomicfile import write_atomically
from ..exitcodes import FINISHED, WRITE_ERROR, StartFailed
from ..resume.extension import crawl_state
from ..resume.statedb import (
    CATALOG_UPDATE,
    CATALOG_VALIDATORS,
    RESUMABLE,
    UnreadableDatabase,
    output_files,
    state_path,
    stored_meta,
)
from ..rules.crawling.changes import CHANGES, UNCHANGED
from ..rules.crawling.crawlargs import extension_rule, split_list
from ..rules.crawling.progress import found_link
from ..rules.files import pagedir
from ..rules.web.urls import normalize_url
from . import catalog
from .catalog import KnownPage, body_digest
from .merge import REDIRECT_LOOP, ROBOTS_TXT, merge

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

# Sent with ``lastmods=`` (URL -> its sitemap's lastmod) once the sitemaps are
# read (--sitemaps): the catalog keeps them, and an update in priority order
# scores its queued pages again by them (the scheduler).
sitemaps_read = object()

# Set in a request's meta by the robots.txt middleware when the site's robots.txt, as read, forbids
# the page (not when a robots.txt that could not be read is taken for "disallow all"): a known page
# refused so is gone, as a fresh crawl would not save it.
ROBOTS_FORBIDS = "tse_robots_forbids"

# Why a request failed (``failure_reason``) without an HTTP status when that says something of the
# page, not of the site's state for now: the update does not take its saved copy for the page.
_LASTING_FAILURES = frozenset(
    {
        "robots.txt",
        "offsite",
        "denied",
        "ignored",
        "larger than DOWNLOAD_MAXSIZE",  # (record.TOO_LARGE: that module imports this one)
        "cancelled (too large?)",
        "unsupported scheme",
    }
)
_TRANSIENT_STATUSES = (408, 429)  # and every 5xx


def transient_failure(status: int | None, reason: str | None) -> bool:
    """Whether a request that failed with HTTP *status* (None: no answer) for *reason* failed only for a
    while: a server error, a timeout, a refused or lost connection, a host not found.  (A robots.txt
    that cannot be read is judged by the spider, which knows why the page was refused.)"""
    if status is not None:
        return status >= 500 or status in _TRANSIENT_STATUSES
    return bool(reason) and reason not in _LASTING_FAILURES and not reason.startswith("not a page")


def redirect_chain(request: Request, normalize: Callable[[str], str | None]) -> tuple[tuple[str, int | None], ...]:
    """The redirects that led to *request*: each URL (normalized) and the HTTP status it answered
    with (None: no answer, a redirect followed as known from before)."""
    meta = request.meta
    urls = meta.get("redirect_urls") or ()
    reasons = meta.get("redirect_reasons") or ()
    statuses = [reason if isinstance(reason, int) else None for reason in reasons]
    statuses += [None] * (len(urls) - len(statuses))
    return tuple((normalize(url) or url, status) for url, status in zip(urls, statuses, strict=False))


def warc_date(moment: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(moment))


class UpdateExtension:
    """The catalog of the crawl: the pages before it, by docID and by URL, and their visits."""

    def __init__(self, crawler: Crawler):
        settings = crawler.settings
        if not settings.getbool("TSE_STATE_ENABLED"):
            raise NotConfigured
        # Recorded by the crawl state when the crawl began (resume/extension.py).
        self.mode = stored_meta(state_path(settings.get("TSE_PAGEDIR"), settings.get("JOBDIR")), "catalog")
        if self.mode not in (CATALOG_UPDATE, CATALOG_VALIDATORS):
            raise NotConfigured
        self.crawler = crawler
        self.directory = settings.get("TSE_PAGEDIR")
        self.tse_extensions = extension_rule(settings.get("TSE_DENY_EXT"), settings.getbool("TSE_PDF"))
        self.changes_path = settings.get("TSE_CHANGES")
        self.fsync = settings.getbool("TSE_FSYNC")
        self.is_update = self.mode == CATALOG_UPDATE
        # An update in priority order queues every live page at once (the scheduler's ``revisiting``):
        # which pages it saves are still reachable from the seeds is worked out at the end, from the
        # links found (``link_scheduled``, ``_unreached``).
        self.revisiting = self.is_update and settings.get("TSE_ORDER") == "priority"
        self.lastmods: dict[str, str] = {}  # URL -> its sitemap's lastmod, read in this crawl (--sitemaps)
        # For the crawl record (TSE_RECORD): the docIDs an update found as they were, until their line is written.
        self.recording = bool(settings.get("TSE_RECORD"))
        self.kept: set[int] = set()
        # docID -> why its fetch failed for a while, for the known pages whose saved copy stands in
        # for them in this crawl (``saved_copy``), until the copy is recorded (``saved``).
        self.failures_kept: dict[int, str] = {}
        self._ready = False

    def setup(self) -> UpdateExtension:
        """Load the pages before the crawl (once: the crawl state exists only once extensions are built)."""
        if self._ready:
            return self
        self._ready = True
        state_extension = crawl_state(self.crawler)
        self.state = state_extension.state
        if self.state.meta("update_id") is None:  # a new crawl (or one killed before this commit)
            # (Checked before the crawl began, and read then: ``crawlstart``.)
            before = self._pages_read_at_start()
            if before is None:
                if self.is_update:
                    before = catalog.pages_before_update(self.directory)
                else:
                    before = catalog.read_catalog(self.directory) or []
            try:
                self.state.set_before([page.record() for page in before], {"update_id": uuid.uuid4().hex})
            except sqlite3.Error as error:  # a full disk: the state stays as it was, for --resume
                self._ready = False
                raise StartFailed(f"cannot write the crawl state: {error}", resumable=True) from None
            del before  # (read back from the state next: not held twice)
        self.update_id = self.state.meta("update_id")
        self.before = {record["doc_id"]: KnownPage(**record) for record in self.state.before()}
        self.by_url = {page.url: page for page in self.before.values()}
        # URL -> the live page its redirect led to when that page was last fetched.
        self.redirected = {url: page for page in self.before.values() if page.live for url in page.redirects}
        self.first_new_id = max(self.before, default=0) + 1
        state_extension.closing.append(self.finish)
        return self

    def _pages_read_at_start(self) -> list[KnownPage] | None:
        """The pages ``crawlstart`` read as it checked them (the spider holds them until now, and no
        longer), when they are of this crawl's kind (an update's or not); None when it read none."""
        read = getattr(self.crawler.spider, "pages_before", None)
        if read is None:
            return None
        pages = read.take()
        return pages if read.update == self.is_update else None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> UpdateExtension:
        extension = cls(crawler)
        crawler.signals.connect(extension.setup, signal=signals.spider_opened)
        crawler.signals.connect(extension.sitemaps_read, signal=sitemaps_read)
        if extension.revisiting:
            crawler.signals.connect(extension.link_scheduled, signal=signals.request_scheduled)
        return extension

    def sitemaps_read(self, lastmods: dict[str, str]) -> None:
        self.lastmods = lastmods

    # -- during the crawl ----------------------------------------------------
    def known_page(self, url: str) -> KnownPage | None:
        """The page saved earlier under *url* (normalized), live or gone."""
        return self.by_url.get(url)

    def known_request(self, request: Request) -> KnownPage | None:
        """The page saved earlier under the URL *request* asks for."""
        return self.by_url.get(normalize_url(request.url, self.tse_extensions) or request.url)

    def saved_copy(self, request: Request, why: str) -> tuple[KnownPage, bytes] | None:
        """The live page an update knows under the URL *request* asks for, and its saved body, when the
        request has failed only for a while (*why*, said in the changes file): the update goes on as if
        the page had answered as before (a 304), its links followed from the copy.  None otherwise:
        not an update, a page it does not know or knows as gone, a page file it cannot read."""
        page = self.known_request(request) if self.is_update else None
        if page is None or not page.live:
            return None
        try:
            body = pagedir.read_page(self.directory, page.doc_id).body
        except (OSError, pagedir.PageFileError):
            return None  # a failure, as any other
        self.failures_kept[page.doc_id] = why
        return page, body

    def known_redirect(self, request: Request) -> KnownPage | None:
        """The live page that the URL *request* asks for redirected to when that page was last
        fetched, when the URL is no live page itself: an update that cannot fetch the URL now
        (a failure for a while) follows the redirect as it was, so the page is not lost."""
        url = normalize_url(request.url, self.tse_extensions) or request.url
        own = self.by_url.get(url)
        target = self.redirected.get(url) if self.is_update and (own is None or not own.live) else None
        return target if target is not None and target.url != url else None

    def redirects_seen(self, chain: tuple[tuple[str, int | None], ...], target: str, loop: bool = False) -> None:
        """Record the known pages of a redirect *chain* that answered with a redirect, now to *target*:
        gone, with that status (a fresh crawl saves the page they lead to, not them); with *loop*, the
        chain leads back to one of its pages: gone, a redirect loop (said "not reached", it was none).
        An update in priority order records that each URL of the chain leads to *target*
        (``_unreached``: a link to one of them reaches *target*, though *target* was saved from
        another request, its own revisit)."""
        if self.revisiting and self._ready:
            for url, _ in chain:
                if url != target:
                    self.state.add_link(url, target)
        for url, status in chain:
            page = self.by_url.get(url)
            if page is None or status is None or (url == target and not loop):
                continue
            if (self.state.visit_of(page.doc_id) or {}).get("saved"):
                continue  # saved from another request of this crawl (never both, but say so)
            visit = {"doc_id": page.doc_id, "url": page.url, "status": status, "saved": False}
            self.state.visit({**visit, "reason": REDIRECT_LOOP} if loop else {**visit, "redirect": target})

    def is_known_doc(self, doc_id: int) -> bool:
        return doc_id in self.before

    def saved(
        self,
        doc_id: int,
        url: str,
        depth: int,
        body: bytes,
        status: int,
        validators: dict[str, str | None],
        revisit: bool,
        replayed: bool = False,
        lastmod: str | None = None,
        redirected_from: tuple[tuple[str, int | None], ...] = (),
    ) -> bool:
        """Record page *doc_id* as saved now (committed with the page); True when its file must be (re)written."""
        if replayed and (self.state.visit_of(doc_id) or {}).get("saved"):
            # Read back on resume: recorded, with the validators of its fetch, when its file was written.
            return False
        digest = body_digest(body)
        old = self.before.get(doc_id)
        kept = self.failures_kept.pop(doc_id, None)
        visit = {
            "doc_id": doc_id,
            "url": url,
            "depth": depth,
            "digest": digest,
            "status": status,
            "saved": True,
            "revisit": revisit,
            "etag": validators.get("etag"),
            "last_modified": validators.get("last_modified"),
            "fetched": (validators.get("fetched") or warc_date(time.time())) if status == 200 else None,
            "lastmod": lastmod,
            "redirects": [source for source, _ in redirected_from if source != url],
        }
        if kept is not None and old is not None:
            # Its saved copy, the fetch having failed for a while (``saved_copy``): its validators stay.
            visit.update(kept=kept, etag=old.etag, last_modified=old.last_modified, fetched=old.fetched)
        self.state.visit(visit)
        self.redirects_seen(redirected_from, url)
        # A page back after being gone is rewritten under its old docID (docs/updating.md), like a
        # new one: its file is the last copy seen, which the crawl that found it gone kept as it was.
        changed = old is None or not old.live or old.url != url or old.depth != depth or old.digest != digest
        # (Or its file is gone: removed by hand, or no regular file; written again as a fresh crawl would.)
        changed = changed or not pagedir.page_path(self.directory, doc_id).is_file()
        if not changed and self.is_update and self.recording and kept is None:  # (else recorded as failed)
            self.kept.add(doc_id)
        return changed

    def take_kept(self, doc_id: int) -> bool:
        """Whether page *doc_id*, saved just now, was found as it was (its crawl record line says so once)."""
        if doc_id in self.kept:
            self.kept.discard(doc_id)
            return True
        return False

    def failed(self, request: Request, status: int | None) -> None:
        """A request that gave no page: recorded when it was for a known page."""
        page = self.known_request(request)
        if page is not None:
            visit = {"doc_id": page.doc_id, "url": page.url, "status": status, "saved": False}
            if request.meta.get(ROBOTS_FORBIDS):
                visit["reason"] = ROBOTS_TXT
            self.state.visit(visit)

    def link_scheduled(self, request: Request) -> None:
        """An update in priority order: record where *request* was found, a link of a page (from
        that page) or a start of the crawl (a seed, a sitemap's URL: from none), in the crawl state,
        with the pages (``_unreached``: a page saved is reached when a path of links leads to it from
        a start, not when any page links to it: two pages no longer linked from the site that link
        to each other, or one that links to itself, were kept live for ever)."""
        if not self._ready:
            return
        meta = request.meta
        if found_link(meta):  # a link found on a page (the spider's ``_link_request``)
            source = meta.get("tse_found_on") or ""
            if not source:
                return
        elif "tse_token" not in meta and meta.get("depth", 0) == 0 and not meta.get("tse_revisit"):
            source = ""  # a start: a seed or a sitemap's URL, not yet handed out
        else:
            return  # (a redirect's or a retry's hop, handed out before: not where a link led; a revisit)
        target = normalize_url(request.url, self.tse_extensions) or request.url
        self.state.add_link(source, target)

    def revisits(self) -> list[KnownPage]:
        """The live pages, to be queued at once by an update in priority order."""
        return [page for page in self.before.values() if page.live]

    # -- at the end ----------------------------------------------------------
    def finish(self, reason: str) -> None:
        """Write ``.tse-gone``, the changes file and the catalog (the crawl has succeeded)."""
        visits = {record["doc_id"]: record for record in self.state.visits()}
        complete = reason == FINISHED
        pages, changes = merge(
            self.before, visits, complete=complete, unreached=self._unreached(visits), now=time.time()
        )
        writing = os.path.join(self.directory, pagedir.GONE_NAME)  # the file being written, for the message
        try:
            if self.is_update or any(not page.live for page in pages):
                pagedir.write_gone(self.directory, (page.doc_id for page in pages if not page.live), fsync=self.fsync)
            if self.changes_path:
                writing = self.changes_path
                lines = "".join(json.dumps(change) + "\n" for change in changes)
                write_atomically(self.changes_path, lines.encode(), fsync=self.fsync)
            writing = str(catalog.catalog_path(self.directory))
            settings = self.crawler.settings
            synchronous = "FULL" if self.fsync else "NORMAL"
            if catalog.last_update(self.directory) != self.update_id:  # else merged by the run this one resumes
                catalog.write_catalog(
                    self.directory, pages, settings.getdict("TSE_ARGUMENTS"), self.update_id, synchronous=synchronous
                )
            outputs = output_files(settings.get)
            catalog.record_finished(self.directory, self.is_update, outputs, synchronous=synchronous)
        except OSError as error:  # (its file name, when it has one, is the temporary file's: not said)
            self._fail(f"cannot write {writing}: {error.strerror or error}")
            return
        except sqlite3.Error as error:
            self._fail(f"cannot write {writing}: {error}")
            return
        except UnreadableDatabase as error:  # made unreadable during the crawl (it was checked at the start)
            # Not to be resumed: a resume would read the same catalog (a review's find).
            self._fail(f"cannot read the page catalog: {error}", resumable=False)
            return
        counts = dict.fromkeys(CHANGES, 0)
        for change in changes:
            counts[change["change"]] += 1
        stats = self.crawler.stats
        for change, count in counts.items():
            stats.set_value(f"tse/update/{change}", count)
        if self.is_update:
            kept = sum(1 for c in changes if c["change"] == UNCHANGED and c["docid"] not in visits)
            line = ", ".join(f"{counts[change]} {change}" for change in CHANGES)
            if kept:
                line += f" ({kept} of the unchanged not revisited: page limit)"
            sys.stderr.write(f"tse crawl: updated {self.directory}: {line}\n")

    def _unreached(self, visits: dict[int, dict[str, Any]]) -> frozenset[int]:
        """The pages saved by an update in priority order that no path of links of this crawl leads to
        from its starts (its seeds, its sitemaps' URLs): a fresh crawl would not save them.

        The links found are in the crawl state (``link_scheduled``), each as its page's URL and its
        target's, and each redirect as its URL and the page it led to (``redirects_seen``); they are
        followed from the starts a URL at a time (a page whose links were not read, past the depth or
        nofollow, has none), the memory that of the URLs reached.  A link to a URL that redirects to a
        page saved reaches that page (a review's find: a new page so reached was listed gone, "not
        reached")."""
        saved = {v["url"]: v["doc_id"] for v in visits.values() if v.get("saved")}
        if not self.revisiting or not saved:
            return frozenset()
        redirected: dict[str, list[str]] = {}  # a URL -> the pages saved that its redirect led to
        for visit in visits.values():
            for source in (visit.get("redirects") or ()) if visit.get("saved") else ():
                redirected.setdefault(source, []).append(visit["url"])
        seeds = split_list(self.crawler.settings.getdict("TSE_ARGUMENTS").get("seed"))
        starts = [*self.state.links_from(""), *seeds, *(normalize_url(seed, self.tse_extensions) for seed in seeds)]
        reached: set[str] = set()
        waiting = [url for url in starts if url]
        while waiting:
            url = waiting.pop()
            if url in reached:
                continue
            reached.add(url)
            waiting += redirected.get(url, ())
            waiting += self.state.links_from(url)  # (a page's links, or where its redirect led)
        return frozenset(doc for url, doc in saved.items() if url not in reached)

    def _fail(self, message: str, resumable: bool = True) -> None:
        """The crawl has fetched what it had to, and its results cannot be written: its state stays,
        and (*resumable*: a file that could not be written) a resume writes them, fetching nothing
        (``statedb.ENDED``); the reason line says how (``outcome.crawl_failure``).  Logged at INFO: on a
        quiet terminal the reason is said once."""
        if resumable:
            what = "the update" if self.is_update else "the crawl"
            message = f"{message} ({what} has fetched its pages: only its results are left to write)"
        logger.info("%s", message)
        self.crawler.stats.set_value("tse/error", message)
        self.crawler.stats.set_value(RESUMABLE, resumable)
        self.crawler.stats.set_value("finish_reason", WRITE_ERROR)


def update_session(crawler: Crawler) -> UpdateExtension | None:
    """The crawl's catalog extension, set up, or None when the crawl keeps no catalog."""
    extension = crawler.get_extension(UpdateExtension)
    return extension.setup() if extension is not None else None
