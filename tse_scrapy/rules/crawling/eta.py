"""When a polite crawl will end: an estimate from the frontier and each host's politeness.

Politeness fixes each host's pace: a request starts a delay after the end of
the one before (Crawl-delay, or DOWNLOAD_DELAY), so with ``n`` requests left
for a host, a response time ``r`` and a delay ``d``, one at a time, the host's
last request ends ``ready + (n - 1)(d + r) + r`` seconds from now, where
``ready`` is how long the host must still wait before its next request.
With ``c`` requests allowed at once, a new one may start while another
outlasts the delay: the pace is then ``max(d, (d + r) / c)``; without a
delay, ``c`` at a time back to back, ``ceil(n / c) r``.  Hosts are crawled
side by side, so the crawl ends with its slowest host; but at most
``concurrency`` requests are in the air at once, so it cannot end before
the whole work (``n r`` over every host) divided by that.  While a queued
page can still add links (its depth is below the crawl's maximum), more
requests may come: the estimate is then a lower bound, unless a page limit
leaves fewer requests than are queued (each host then gets its share).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace
from urllib.parse import urlsplit


@dataclass(frozen=True)
class HostWork:
    """What is left to do on one host, and its pace."""

    requests: float  # queued, and sent but not answered (a share of a page limit may be a fraction)
    delay: float  # seconds from the end of a request to the start of the next
    response_time: float  # measured seconds a request takes
    concurrency: int = 1  # requests to this host at once
    ready: float = 0.0  # seconds before the host may be sent its next request


@dataclass(frozen=True)
class Estimate:
    """Seconds left, and whether the crawl may still grow (the estimate is then a lower bound)."""

    seconds: float
    lower_bound: bool


def host_seconds(work: HostWork) -> float:
    """Seconds until *work*'s host has answered its last request."""
    requests = work.requests
    if requests <= 0:
        return 0.0
    delay, response, at_once = max(work.delay, 0.0), max(work.response_time, 0.0), max(work.concurrency, 1)
    ready = max(work.ready, 0.0)
    if not delay:
        return ready + math.ceil(requests / at_once) * response
    return ready + (requests - 1) * max(delay, (delay + response) / at_once) + response


def estimate(
    hosts: Iterable[HostWork], *, concurrency: int = 1, growing: bool = False, limit: float | None = None
) -> Estimate:
    """The crawl's remaining time: its slowest host, and no less than its whole work over *concurrency*.

    *limit*: at most this many requests are still to be answered (a page limit)."""
    hosts = [work for work in hosts if work.requests > 0]
    queued = sum(work.requests for work in hosts)
    if limit is not None and queued >= limit:
        share = max(limit, 0) / queued if queued else 0.0
        hosts = [replace(work, requests=work.requests * share) for work in hosts]
        growing = False  # the limit ends the crawl before the frontier does
    slowest = max((host_seconds(work) for work in hosts), default=0.0)
    work = sum(h.requests * max(h.response_time, 0.0) for h in hosts) / max(concurrency, 1)
    return Estimate(max(slowest, work), growing)


def format_clock(seconds: float, *, floor: bool = False) -> str:
    """``m:ss`` below an hour, ``h:mm:ss`` from an hour; to the nearest second, or down with
    *floor* (a time so far never shows a second not yet over)."""
    if not math.isfinite(seconds) or seconds < 0:
        seconds = 0.0
    whole = math.floor(seconds) if floor else math.floor(seconds + 0.5)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def format_eta(found: Estimate, at_least: str = "\u2265") -> str:
    """``ETA 1:05``, or ``ETA ≥ 1:05`` for a lower bound (*at_least* for terminals without ≥)."""
    return (
        f"ETA {at_least} {format_clock(found.seconds)}" if found.lower_bound else f"ETA {format_clock(found.seconds)}"
    )


class FrontierCensus:
    """How many requests are queued, by host and by depth (kept beside a frontier, cheaply)."""

    def __init__(self):
        self.by_host: Counter[str] = Counter()
        self.by_depth: Counter[int] = Counter()
        self._hosts: dict[str, str] = {}  # netloc -> host: one parse per server, not per URL

    def host(self, url: str) -> str:
        """The host of *url* as Scrapy names a download slot (the hostname, no port)."""
        netloc = url.partition("://")[2].partition("/")[0]
        host = self._hosts.get(netloc)
        if host is None:
            try:
                host = urlsplit(url).hostname or ""
            except ValueError:
                host = ""
            if len(self._hosts) < 10_000:
                self._hosts[netloc] = host
        return host

    def add(self, url: str, depth: int) -> None:
        self.by_host[self.host(url)] += 1
        self.by_depth[depth] += 1

    def remove(self, url: str, depth: int) -> None:
        host = self.host(url)
        for counter, key in ((self.by_host, host), (self.by_depth, depth)):
            if counter[key] > 1:
                counter[key] -= 1
            else:
                counter.pop(key, None)

    def __len__(self) -> int:
        return sum(self.by_depth.values())

    def shallowest(self) -> int | None:
        """The smallest depth queued, None when nothing is."""
        return min(self.by_depth) if self.by_depth else None
