"""A finished crawl's outcome: success, or the one-line reason it failed.

``scrapy crawl`` exits 0 even when a callback raised or a page could not be
written; both ``tse crawl`` and the project's ``scrapy crawl`` turn the
outcome into their exit status with ``report``.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..exitcodes import BROKEN_PIPE, FAILED, OK, STDOUT_CLOSED, SUCCESS_REASONS, StartFailed
from ..resume.statedb import RESUMABLE
from ..rules.crawling.crawlargs import is_yes
from ..rules.crawling.eta import format_clock
from ..rules.crawling.secrets import shown_message
from ..rules.crawling.units import format_size
from .seeds import seed_failure_line

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


# Scrapy's finish reason when a signal (Ctrl-C, SIGTERM) stopped the crawl gracefully.
SHUTDOWN = "shutdown"


def interrupts_ignored_from_now() -> None:
    """Ignore Ctrl-C and SIGTERM until the process ends, once Scrapy's crawl has returned.

    Scrapy's handlers stay installed after the crawl (a second Ctrl-C would ask a stopped reactor to
    stop), and Python's exit puts back the default action of a signal that has a Python handler,
    before it has finished (its modules freed, 0.1 s for a crawl's): a Ctrl-C then ended the process
    by the signal (-2, 130 in a shell) instead of the crawl's status (docs/robustness.md: "both exit
    1").  An ignored signal stays ignored to the end, and what is left is saying the outcome."""
    import signal

    for name in ("SIGINT", "SIGTERM", "SIGBREAK"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_IGN)


def crawl_failure(crawler: Crawler, program: str = "tse crawl") -> str | None:
    """Why the finished crawl failed, in one line, or None if it succeeded.

    A crawl stopped by Ctrl-C says how *program* goes on with it."""
    stats = crawler.stats
    error = stats.get_value("tse/error")
    if error and stats.get_value(RESUMABLE):
        return f"{error}: {how_to_go_on(crawler, program)}"
    if error:
        return error
    reason = stats.get_value("finish_reason")
    if reason is None:
        # A second Ctrl-C, or a first (or SIGTERM) as Scrapy was starting: the crawl never closed.
        said = "the crawl was stopped at once (a second Ctrl-C, or one as it started)"
        return f"{said}: {how_to_go_on(crawler, program)}"
    if reason == SHUTDOWN:
        return f"the crawl was stopped by Ctrl-C (or SIGTERM): {how_to_go_on(crawler, program)}"
    if reason not in SUCCESS_REASONS:
        return f"crawl stopped: {reason}"
    exceptions = stats.get_value("spider_exceptions/count")
    if exceptions:
        return f"the spider raised {exceptions} exception(s); see the log above"
    return None


def how_to_go_on(crawler: Crawler, program: str) -> str:
    """How *program* goes on with the interrupted crawl of *crawler* (docs/robustness.md)."""
    settings = crawler.settings
    if settings.get("TSE_REDIS_URL"):
        return "start the worker again: it joins the distributed crawl where it is"
    if not settings.getbool("TSE_STATE_ENABLED", True):
        return "it kept no crawl state (TSE_STATE_ENABLED=False), so it cannot be resumed"
    if settings.get("JOBDIR"):
        return "run the same command again to go on (its state is in JOBDIR)"
    update = is_yes(getattr(getattr(crawler, "spider", None), "update", None))
    if program.startswith("scrapy"):
        return "go on with " + ("-a update=yes -a resume=yes" if update else "-a resume=yes")
    return "go on with " + ("--update --resume" if update else "--resume")


def say_start_failure(program: str, started: object, crawler: Crawler) -> None:
    """On *started* (what ``crawl`` of *crawler* returns: an asyncio task, or a Deferred) failing with
    ``StartFailed``, its one line on stderr (how *program* goes on, for one that can be resumed), the
    failure taken (asyncio logged a traceback of it)."""

    def said(error: BaseException) -> bool:
        if not isinstance(error, StartFailed):
            return False
        _say_failure(program, f"{error}: {how_to_go_on(crawler, program)}" if error.resumable else str(error))
        return True

    def done(task: asyncio.Future) -> None:
        error = None if task.cancelled() else task.exception()  # (taken: asyncio says nothing more of it)
        if error is not None and not said(error):
            # Another failure is told as asyncio would have told it.
            context = {"message": "Task exception was never retrieved", "exception": error, "future": task}
            task.get_loop().call_exception_handler(context)

    if isinstance(started, asyncio.Future):
        started.add_done_callback(done)
    elif hasattr(started, "addErrback"):
        started.addErrback(lambda failure: None if said(failure.value) else failure)


def report(program: str, crawler: Crawler) -> int:
    """Say on stderr, in one line each, which seeds could not be fetched (if any) and why the crawl
    failed (if it did); return the exit status."""
    stats = crawler.stats
    seeds = len(getattr(getattr(crawler, "spider", None), "seeds", ()) or ())
    seed_line = seed_failure_line(stats.get_stats(), seeds)
    if seed_line:
        sys.stderr.write(f"{program}: {shown_message(seed_line)}\n")
    failure = crawl_failure(crawler, program)
    if failure is None:
        return OK
    _say_failure(program, failure)
    return BROKEN_PIPE if stats.get_value("finish_reason") == STDOUT_CLOSED else FAILED


def _say_failure(program: str, failure: str) -> None:
    """Why the crawl failed: last in the log (scrapyd shows a failed job as "finished": its log says
    why), and one plain line on stderr: the same line once when the log is on stderr too."""
    if not _log_reaches_stderr():
        logging.getLogger("tse").critical("The crawl failed: %s", failure)
    sys.stderr.write(f"{program}: {shown_message(failure)}\n")


def _log_reaches_stderr() -> bool:
    """Whether a CRITICAL log record would be written to stderr (Scrapy's log without LOG_FILE)."""
    for handler in logging.getLogger().handlers:
        if (
            isinstance(handler, logging.StreamHandler)
            and not isinstance(handler, logging.FileHandler)
            and handler.stream in (sys.stderr, sys.__stderr__)
            and handler.level <= logging.CRITICAL
        ):
            return True
    return False


def summary_line(stats: Mapping[str, Any], update: bool = False) -> str:
    """The crawl in one line, from its stats: pages, links ignored, requests, bytes, time, pace.

    An *update* says the pages it checked (fetched, or found not modified) and, of those, the
    page files it wrote (new and changed pages): its unchanged pages keep their files."""
    saved = stats.get("tse/pages_saved", 0)
    pages = f"{_count(saved, 'page')} saved"
    if update:
        pages = f"{_count(saved, 'page')} checked, {stats.get('tse/pages_written', 0)} written"
    seconds = stats.get("elapsed_time_seconds") or 0.0
    ignored = {
        "external": stats.get("offsite/filtered", 0),
        "duplicate": stats.get("dupefilter/filtered", 0),
        "denied": stats.get("tse/denied", 0),
    }
    per_minute = saved / seconds * 60 if seconds else 0.0
    line = (
        f"{pages}, {stats.get('tse/pages_failed', 0)} failed, "
        f"{_count(sum(ignored.values()), 'link')} ignored ({', '.join(f'{n} {kind}' for kind, n in ignored.items())}); "
        f"{_count(stats.get('downloader/request_count', 0), 'request')}, "
        f"{format_size(stats.get('downloader/response_bytes', 0))} in {format_clock(seconds, floor=True)}, "
        f"{per_minute:.1f} pages/min"
    )
    if any(name.startswith("tse/sitemap") for name in stats):  # --sitemaps
        line += (
            f"; sitemaps: {stats.get('tse/sitemaps_read', 0)} read, {stats.get('tse/sitemaps_cut', 0)} cut, "
            f"{_count(stats.get('tse/sitemap_urls', 0), 'URL')} taken, "
            f"{stats.get('tse/sitemap_urls_ignored', 0)} ignored"
        )
    if stats.get("tse/pdfs"):
        line += f"; {_count(stats['tse/pdfs'], 'PDF')}"
    if stats.get("tse/not_pages"):  # images, binary data ... (--links html): neither saved nor indexed
        line += f"; {_count(stats['tse/not_pages'], 'answer')} not a page, left out"
    if any(name.startswith("tse/render") for name in stats):  # --render
        line += (
            f"; rendered: {stats.get('tse/rendered', 0)} ({stats.get('tse/render_timeouts', 0)} cut at the timeout, "
            f"{stats.get('tse/render_crashes', 0)} crashed, {stats.get('tse/render_failed', 0)} failed; "
            f"{_count(stats.get('tse/render_requests', 0), 'browser request')}, "
            f"{stats.get('tse/render_robots_blocked', 0)} blocked by robots.txt, "
            f"{stats.get('tse/render_private_blocked', 0)} to hosts not public, "
            f"{stats.get('tse/render_requests_cut', 0)} over the bound; "
            f"browser started anew {stats.get('tse/render_recycled', 0)} times by rule, "
            f"{stats.get('tse/render_browser_restarts', 0)} after a failure)"
        )
    return line


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"
