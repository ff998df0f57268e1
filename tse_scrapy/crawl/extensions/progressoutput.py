"""ProgressOutput: a crawl whose progress log (stdout, SPEC 2.3) cannot be written stops, resumable.

``tse crawl ... | head`` closes the crawl's stdout once ``head`` has its lines:
the BrokenPipeError was raised in Scrapy's tasks, which dropped it, and the
crawl waited for good (no page saved, Ctrl-C and SIGTERM ignored).  Now the
first line that cannot be written (a reader gone, a full disk) stops the crawl
as a write error does: what was saved stays, ``--resume`` goes on, and the
reason is one line (exit 141 for a reader gone, as ``tse query`` and a
process killed by SIGPIPE; else 1).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.utils.defer import deferred_from_coro

from ...exitcodes import STDOUT_CLOSED, WRITE_ERROR
from ...resume.statedb import RESUMABLE
from .. import progresslog

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


class ProgressOutput:
    """An extension that stops the crawl when its progress log cannot be written (see the module)."""

    def __init__(self, crawler: Crawler):
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ProgressOutput:
        extension = cls(crawler)
        progresslog.when_stdout_fails(extension.failed)
        crawler.signals.connect(extension.engine_stopped, signal=signals.engine_stopped)
        return extension

    def failed(self, error: OSError) -> None:
        broken = progresslog.is_broken_pipe(error)
        why = "stdout was closed (its reader went away)" if broken else f"stdout failed ({error.strerror or error})"
        message = f"the progress log cannot be written: {why}"
        logger.info("Stopping the crawl: %s", message)  # (said once, at the end: crawl/outcome.py)
        stats = self.crawler.stats
        stats.set_value("tse/error", message)
        stats.set_value(RESUMABLE, True)
        engine = self.crawler.engine
        if engine is not None and engine.running:
            deferred_from_coro(engine.close_spider_async(reason=STDOUT_CLOSED if broken else WRITE_ERROR))

    def engine_stopped(self) -> None:
        progresslog.when_stdout_fails(None)
