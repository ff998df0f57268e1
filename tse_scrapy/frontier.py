"""In-memory frontiers: the order in which discovered requests are fetched."""

from __future__ import annotations

from collections import deque


def request_depth(request) -> int:
    return request.meta.get("depth", 0)


class StackFrontier:
    """The reference's "bag": the last request pushed is the next one fetched."""

    def __init__(self):
        self._stack = []

    def __len__(self):
        return len(self._stack)

    def push(self, request) -> None:
        self._stack.append(request)

    def next_depth(self) -> int | None:
        return request_depth(self._stack[-1]) if self._stack else None

    def pop(self):
        return self._stack.pop()


class LevelFrontier:
    """Breadth-first: shallowest depth first, first in first out within a depth."""

    def __init__(self):
        self._levels: dict[int, deque] = {}
        self._size = 0

    def __len__(self):
        return self._size

    def push(self, request) -> None:
        self._levels.setdefault(request_depth(request), deque()).append(request)
        self._size += 1

    def next_depth(self) -> int | None:
        return min(self._levels) if self._levels else None

    def pop(self):
        depth = min(self._levels)
        level = self._levels[depth]
        request = level.popleft()
        if not level:
            del self._levels[depth]
        self._size -= 1
        return request


FRONTIERS = {"tse": StackFrontier, "bfs": LevelFrontier}
