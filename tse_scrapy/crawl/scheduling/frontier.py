"""In-memory frontiers: the order in which discovered requests are fetched."""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from typing import Protocol, TypeAlias

from scrapy import Request


class StoredRequest:
    """A queued request that lives in the crawl state on disk: only its row and
    depth stay in memory, so a large frontier costs little RAM."""

    __slots__ = ("depth", "row")

    def __init__(self, row: int, depth: int):
        self.row = row
        self.depth = depth


Queued: TypeAlias = Request | StoredRequest  # what a frontier holds


def request_depth(request: Queued) -> int:
    if isinstance(request, StoredRequest):
        return request.depth
    return request.meta.get("depth", 0)


class Frontier:
    """The queue of requests to fetch; subclasses decide the order."""

    def found(self, request: Request) -> None:
        """A link to ``request.url`` was found on ``meta['tse_found_on']``."""

    def __len__(self) -> int:
        raise NotImplementedError

    def push(self, request: Queued) -> None:
        raise NotImplementedError

    def next_depth(self) -> int | None:
        """The depth of the request ``pop`` would return, None when empty."""
        raise NotImplementedError

    def pop(self) -> Queued:
        raise NotImplementedError


class StackFrontier(Frontier):
    """The reference's "bag": the last request pushed is the next one fetched."""

    def __init__(self):
        self._stack: list[Queued] = []

    def __len__(self) -> int:
        return len(self._stack)

    def push(self, request: Queued) -> None:
        self._stack.append(request)

    def next_depth(self) -> int | None:
        return request_depth(self._stack[-1]) if self._stack else None

    def pop(self) -> Queued:
        return self._stack.pop()


class LevelFrontier(Frontier):
    """Breadth-first: shallowest depth first, first in first out within a depth."""

    def __init__(self):
        self._levels: dict[int, deque[Queued]] = {}
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def push(self, request: Queued) -> None:
        self._levels.setdefault(request_depth(request), deque()).append(request)
        self._size += 1

    def next_depth(self) -> int | None:
        return min(self._levels) if self._levels else None

    def pop(self) -> Queued:
        depth = min(self._levels)
        level = self._levels[depth]
        request = level.popleft()
        if not level:
            del self._levels[depth]
        self._size -= 1
        return request


class Prioritizer(Protocol):
    """What TSE_PRIORITIZER names: a class whose ``score`` ranks a queued URL (highest first)."""

    def score(self, request: Request, inlinks: int) -> float: ...


class InlinkPrioritizer:
    """Importance = how many crawled pages link to the URL (a cheap stand-in for PageRank)."""

    def score(self, request: Request, inlinks: int) -> float:
        return inlinks


class PriorityFrontier(Frontier):
    """Highest score first (see TSE_PRIORITIZER), ties by depth, then discovery order.

    A queued URL's score is recomputed each time another page links to it.
    """

    def __init__(self, prioritizer: Prioritizer | None = None):
        self.prioritizer = prioritizer or InlinkPrioritizer()
        self._heap: list[tuple] = []
        self._queued: dict[str, tuple] = {}  # URL -> its live heap entry
        self._inlinks: dict[str, set[str]] = {}  # URL -> pages linking to it
        self._discovery = itertools.count()

    def __len__(self) -> int:
        return len(self._queued)

    def found(self, request: Request) -> None:
        sources = self._inlinks.setdefault(request.url, set())
        source = request.meta.get("tse_found_on")
        if source in sources:
            return
        sources.add(source)
        entry = self._queued.get(request.url)
        if entry is not None:
            self._add(entry[4], entry[2])

    def push(self, request: Request) -> None:
        self._add(request, next(self._discovery))

    def next_depth(self) -> int | None:
        self._drop_stale()
        return self._heap[0][1] if self._heap else None

    def pop(self) -> Request:
        self._drop_stale()
        entry = heapq.heappop(self._heap)
        del self._queued[entry[3]]
        return entry[4]

    def _add(self, request: Request, discovery: int) -> None:
        inlinks = len(self._inlinks.get(request.url, ()))
        entry = (-self.prioritizer.score(request, inlinks), request_depth(request), discovery, request.url, request)
        self._queued[request.url] = entry
        heapq.heappush(self._heap, entry)

    def _drop_stale(self) -> None:
        while self._heap and self._queued.get(self._heap[0][3]) is not self._heap[0]:
            heapq.heappop(self._heap)


FRONTIERS = {"tse": StackFrontier, "bfs": LevelFrontier, "priority": PriorityFrontier}
