"""CrawlStateExtension: opens the crawl's durable state (``statedb``) for the
scheduler, the dupefilter and the pipeline, and removes it when the crawl has
finished (unless it lives in a JOBDIR, as Scrapy's job state does).

The state is the crawl's only mark of being unfinished, so it is removed
last, once every other component has closed its files (the WARC's index, the
crawl record): a crawl killed before then resumes and finishes them; one
killed after has nothing left to do.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING

from scrapy import Spider, signals
from scrapy.exceptions import NotConfigured

from ..exitcodes import SUCCESS_REASONS
from .statedb import (
    CATALOG_UPDATE,
    CATALOG_VALIDATORS,
    ENDED,
    OUTPUTS,
    CrawlStateDB,
    output_files,
    state_path,
)

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import Settings

logger = logging.getLogger(__name__)


class CrawlStateExtension:
    """Holds the crawl's ``CrawlStateDB``; ``resuming`` when it was there already."""

    def __init__(self, crawler: Crawler):
        settings = crawler.settings
        if not settings.getbool("TSE_STATE_ENABLED"):
            raise NotConfigured
        self.crawler = crawler
        self.keep = bool(settings.get("JOBDIR"))
        self.state = CrawlStateDB(
            state_path(settings.get("TSE_PAGEDIR"), settings.get("JOBDIR")),
            synchronous=settings.get("TSE_STATE_SYNCHRONOUS", "NORMAL"),
        )
        self.resuming = self.state.arguments() is not None
        # Run when the crawl has succeeded, before the state is removed
        # (the update's results are made from it); they may set tse/error.
        self.closing: list[Callable[[str], None]] = []
        if not self.resuming:
            # Its output files too: a resume must go on writing the same ones (crawlstart.py).
            meta = {"catalog": catalog_mode(settings), OUTPUTS: json.dumps(output_files(settings.get))}
            self.state.set_arguments(settings.getdict("TSE_ARGUMENTS"), meta)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CrawlStateExtension:
        extension = cls(crawler)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        return extension

    def spider_opened(self) -> None:
        # Receivers run in the order they were connected: connected now, once every component
        # has been built and has connected its own, close_state runs after all of them.
        self.crawler.signals.connect(self.close_state, signal=signals.spider_closed)

    def spider_closed(self, spider: Spider, reason: str) -> None:
        """Run the closing hooks (the update's results) if the crawl has succeeded.

        The crawl's end is recorded first (``ENDED``): should its clean-up fail (a full disk) or be
        killed, a resume does only that, with the reason of this end.  (Not in a JOBDIR, whose state
        stays once the crawl has finished, for it to go on with a higher page limit, say.)"""
        stats = self.crawler.stats
        if reason in SUCCESS_REASONS and not stats.get_value("tse/error"):
            ended = self.state.meta(ENDED)
            try:
                if ended is None and not self.keep:
                    self.state.ended(reason)
                else:
                    self.state.commit()
            except sqlite3.Error as error:  # a full disk: the state stays for --resume, as it was
                stats.set_value("tse/error", f"cannot write the crawl state: {error}")
                return
            for hook in self.closing:
                try:
                    hook(ended or reason)
                except Exception as error:  # a bug: the state stays, for --resume to do what the hook did not
                    logger.exception("A closing step of the crawl failed")
                    stats.set_value("tse/error", f"cannot finish the crawl: {error}")
                    return

    def close_state(self, spider: Spider, reason: str) -> None:
        """Close the state, and remove it if the crawl and every component's close have succeeded."""
        stats = self.crawler.stats
        finished = reason in SUCCESS_REASONS and not stats.get_value("tse/error")
        try:
            self.state.close(remove=finished and not self.keep)
        except sqlite3.Error as error:  # the state could not be written (a full disk): it stays for --resume
            if not stats.get_value("tse/error"):
                stats.set_value("tse/error", f"cannot write the crawl state: {error}")


def crawl_state(crawler: Crawler) -> CrawlStateExtension | None:
    """The crawl's state extension, or None when the crawl keeps no state."""
    return crawler.get_extension(CrawlStateExtension)


def catalog_mode(settings: Settings) -> str:
    """What the crawl keeps beyond SPEC 2 (``CATALOG_UPDATE``, ``CATALOG_VALIDATORS`` or ``none``);
    recorded in the state, so a resumed crawl does the same."""
    if settings.getbool("TSE_UPDATE"):
        return CATALOG_UPDATE
    if settings.getbool("TSE_VALIDATORS") or settings.get("TSE_WARC"):
        return CATALOG_VALIDATORS
    return "none"
