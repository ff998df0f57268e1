"""The crawler's progress log on stdout (SPEC 2.3): one line per event.

A distributed worker learns whether a link it found was new (``Added``) or
seen (``IgnDupl``) only when it settles with Redis, a few pages later, while
an external or denied link's verdict is known at once.  So that its log keeps
link order as a single crawl's does, it *holds* the log (``hold_progress``):
every line goes into one ordered buffer, a link pushed to Redis keeps its
place there until its verdict comes (``await_verdict``, then ``log_link``),
and ``ProgressHold.flush`` prints what is complete.  A single-process crawl
never holds: each line is written as it happens.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable

from scrapy import Request

from ..rules.crawling.progress import found_link, progress_line
from ..rules.crawling.secrets import mask_url


class _AwaitedLink:
    """A found link's place in the held log, until its verdict is known."""

    __slots__ = ("depth", "url", "verdict")

    def __init__(self, depth: int, url: str):
        self.depth, self.url = depth, url
        self.verdict: str | None = None


class ProgressHold:
    """Progress lines in the order of their events, printed once every verdict before them is known."""

    def __init__(self) -> None:
        self.entries: list[str | _AwaitedLink] = []
        self.awaited: dict[Request, _AwaitedLink] = {}  # (by identity) the links whose verdict is to come

    def line(self, depth: int, word: str, url: str) -> None:
        self.entries.append(_line(depth, word, url))

    def link(self, request: Request, verdict: str) -> None:
        awaited = self.awaited.pop(request, None)
        if awaited is not None:
            awaited.verdict = verdict
        else:
            self.entries.append(_link_lines(request, verdict))

    def await_verdict(self, request: Request) -> None:
        before = _judged_before(request)
        if before:
            self.entries.append(before)
        awaited = _AwaitedLink(*_found_at(request))
        self.awaited[request] = awaited
        self.entries.append(awaited)

    def flush(self, drop_awaited: bool = False) -> None:
        """Print the lines up to the first link whose verdict is still to come; with
        *drop_awaited*, print them all but the links that never got one."""
        text = []
        for done, entry in enumerate(self.entries):
            if isinstance(entry, str):
                text.append(entry)
            elif entry.verdict is not None:
                text.append(_verdict_lines(entry.depth, entry.url, entry.verdict))
            elif not drop_awaited:
                del self.entries[:done]
                break
        else:
            self.entries.clear()
            if drop_awaited:
                self.awaited.clear()
        if text:
            _write("".join(text))


_hold: ProgressHold | None = None  # set while a distributed worker holds the log

# Request meta key: (url, verdict) of the links that the spider judged itself
# (external links: no Request made) just before this request's link, on its page.
# Scrapy takes a callback's output a few items ahead of scheduling them, so the
# spider cannot log them: they are logged with this link, in link order.
JUDGED_BEFORE = "tse_judged_before"


# What the crawl does when stdout cannot be written (``when_stdout_fails``), and whether it could not.
_when_failed: Callable[[OSError], None] | None = None
_failed = False


def when_stdout_fails(action: Callable[[OSError], None] | None) -> None:
    """Call *action* with the error, once, when the progress log cannot be written: its reader went
    away (``tse crawl ... | head``: a BrokenPipeError raised in Scrapy's tasks, which dropped it, and
    the crawl waited for good, Ctrl-C and SIGTERM ignored), a full disk.  Set for each crawl."""
    global _when_failed, _failed
    _when_failed, _failed = action, False


def _write(text: str) -> None:
    global _failed
    if _failed:
        return
    try:
        sys.stdout.write(text)
    except OSError as error:
        _failed = True
        _write_nowhere()
        if _when_failed is not None:
            _when_failed(error)


def flush_stdout() -> bool:
    """The progress log's last lines written (at the crawl's end: a pipe's are held until then); False
    when they could not be, or a line before them could not (stdout written nowhere from then on)."""
    global _failed
    if _failed:
        return False
    try:
        sys.stdout.flush()
    except OSError:
        _failed = True
        _write_nowhere()
        return False
    return True


def _write_nowhere() -> None:
    """stdout written to /dev/null from now on: the lines still buffered, and Python's flush at exit,
    raise nothing more."""
    try:
        descriptor = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # (not a file: a test's captured stream)
        return
    nowhere = os.open(os.devnull, os.O_WRONLY)
    os.dup2(nowhere, descriptor)
    os.close(nowhere)


def is_broken_pipe(error: OSError) -> bool:
    """Whether *error* says the reader of the output went away."""
    return isinstance(error, BrokenPipeError) or error.errno == errno.EPIPE


def hold_progress() -> ProgressHold:
    """Hold the progress log from now on (a distributed worker): see the module's docstring."""
    global _hold
    _hold = ProgressHold()
    return _hold


def release_progress() -> None:
    """Print what is held, but the links whose verdict never came, and write lines at once again."""
    global _hold
    if _hold is not None:
        _hold.flush(drop_awaited=True)
    _hold = None


def _line(depth: int, word: str, url: str) -> str:
    """The progress line of *url*, its password and query secrets masked (``token=***``): the log is
    output a user may share (a scrapyd job's log is served over HTTP), as the terminal's status line,
    a report and the stats Scrapy dumps mask them; a URL holding none is the reference's line."""
    return progress_line(depth, word, mask_url(url))


def log_progress(depth: int, word: str, url: str) -> None:
    if _hold is not None:
        _hold.line(depth, word, url)
    else:
        _write(_line(depth, word, url))


def log_link(request: Request, verdict: str) -> None:
    """Log ``Found`` and the verdict for a link found on a scanned page (after
    those of the links judged before it, ``JUDGED_BEFORE``)."""
    if _hold is not None:
        _hold.link(request, verdict)
    else:
        _write(_link_lines(request, verdict))


def _link_lines(request: Request, verdict: str) -> str:
    depth, url = _found_at(request)
    return _judged_before(request) + _verdict_lines(depth, url, verdict)


def _judged_before(request: Request) -> str:
    """The lines of the links that the spider judged itself just before *request*'s link."""
    depth = request.meta["tse_found_at"]  # they were found on the same page
    return "".join(_verdict_lines(depth, url, verdict) for url, verdict in request.meta.pop(JUDGED_BEFORE, ()))


def _verdict_lines(depth: int, url: str, verdict: str) -> str:
    """``Found`` and the verdict of one link."""
    return _line(depth, "Found", url) + _line(depth, verdict, url)


def await_verdict(request: Request) -> None:
    """Keep the place of a found link whose verdict ``log_link`` gives later (only while held)."""
    if _hold is not None:
        _hold.await_verdict(request)


def _found_at(request: Request) -> tuple[int, str]:
    return request.meta["tse_found_at"], request.meta.get("tse_link", request.url)


def is_found_link(request: Request) -> bool:
    """True for a request made from a link found while scanning a page, before
    it is handed out (a redirect or retry of it carries the scheduler's token,
    or the distributed scheduler's lease)."""
    return found_link(request.meta)
