"""A ``RedisGap`` (tests/support/redisgap.py) that cuts Redis at the *nth* command holding its trigger,
not the first: a worker asks some things twice (``PING``: its join before Scrapy starts, then its
distributed extension's new connection), and the instant a test wants can be the second."""

from __future__ import annotations

from tests.support.redisgap import RedisGap


class NthRedisGap(RedisGap):
    def __init__(self, target_port: int, trigger: bytes, nth: int, away: float = 0.0):
        self.nth = nth
        self.seen = 0  # the commands that held the trigger, so far
        super().__init__(target_port, trigger, away=away)

    def _triggered(self, chunk: bytes) -> bool:
        with self._lock:
            self.seen += chunk.count(self.trigger)
            return self.seen >= self.nth
