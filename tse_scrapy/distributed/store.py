"""A distributed crawl's record in Redis: its parameters, docIDs, workers and end.

DocIDs are handed out per URL: a page being saved holds a *reservation* (its
URL's fingerprint -> docID) until it is recorded in ``pages``, so a worker
that dies mid-save leaves its docID to whichever worker fetches the page
again, and a page is never saved under two docIDs.  A reservation whose page
then fails goes to ``free_ids`` and is given to the next page.  Reserving a
page's docID is part of leasing it, and recording or freeing it part of the
page's last step, with its links and its lease (``queue.LeasedLevelQueue.settle``);
only a redirected page, saved under another URL, reserves here
(``reserve_doc_id``).  The frontier and its leases are kept by ``queue``,
the seen set by ``dupefilter``; the key names by ``keys``.  No Scrapy
import: the ``tse`` command uses this before Scrapy starts.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import threading
from typing import Any

import redis
from redis.client import Pipeline

from ..rules.crawlargs import ArgumentError
from .keys import CrawlKeys

# The layout of a crawl's keys and frontier entries (a 16-byte URL fingerprint,
# then the pickled request, since 2): stored in the crawl's parameters when
# it is created, so a worker of another version refuses to join it rather
# than misread it.  Bump it with any change a worker of the previous version
# could not read.
CRAWL_FORMAT = 2

_RESERVE = """
local done = redis.call('HGET', KEYS[1], ARGV[1])
if done then return {tonumber(done), 1} end
local id = redis.call('HGET', KEYS[2], ARGV[1])
if not id then
  local free = redis.call('ZPOPMIN', KEYS[3])
  if #free > 0 then id = free[1] else id = redis.call('INCR', KEYS[4]) end
  redis.call('HSET', KEYS[2], ARGV[1], id)
end
return {tonumber(id), 0}
"""


class CountingRedis(redis.Redis):
    """A Redis client that counts its round trips (``round_trips``): what a
    worker pays per page, whatever the command, script or pipeline."""

    round_trips = 0
    _counting = threading.Lock()  # a worker settles in a thread of its own

    def count(self, round_trips: int) -> None:
        with self._counting:
            self.round_trips += round_trips

    def execute_command(self, *args: Any, **options: Any) -> Any:
        self.count(1)  # one command (a script's EVALSHA too) is one round trip
        return super().execute_command(*args, **options)

    def pipeline(self, transaction: bool = True, shard_hint: Any = None) -> CountingPipeline:
        return CountingPipeline(self, transaction, shard_hint)


class CountingPipeline(Pipeline):
    """A pipeline of a CountingRedis: one round trip when executed (two with a script in
    it: redis-py first asks SCRIPT EXISTS)."""

    def __init__(self, client: CountingRedis, transaction: bool, shard_hint: Any):
        super().__init__(client.connection_pool, client.response_callbacks, transaction, shard_hint)
        self.counted_client = client

    def execute(self, raise_on_error: bool = True) -> list[Any]:
        if self.command_stack:
            self.counted_client.count(2 if self.scripts else 1)
        return super().execute(raise_on_error)


def connect(url: str) -> CountingRedis:
    """A Redis client for *url*; ArgumentError (one line) when it cannot be reached."""
    try:
        server = CountingRedis.from_url(url, socket_timeout=30, socket_connect_timeout=10, retry_on_timeout=True)
        server.ping()
    except (ValueError, redis.RedisError) as error:
        raise ArgumentError(f"cannot use Redis at {url}: {error}") from None
    return server


class RedisCrawl:
    """One crawl's record, under ``tse:NAME:``."""

    def __init__(self, server: redis.Redis, name: str):
        self.server = server
        self.name = name
        self.keys = CrawlKeys(name)
        self._reserve = server.register_script(_RESERVE)

    # -- parameters --------------------------------------------------------
    def parameters(self) -> dict[str, Any] | None:
        raw = self.server.get(self.keys.params)
        return json.loads(raw) if raw else None

    def create(self, parameters: dict[str, Any]) -> dict[str, Any]:
        """Store *parameters* unless the crawl exists; return the crawl's parameters."""
        self.server.set(self.keys.params, json.dumps(parameters), nx=True)
        return self.parameters()

    def mark_seeded(self) -> None:
        self.server.set(self.keys.seeded, 1)

    # -- docIDs ------------------------------------------------------------
    def reserve_doc_id(self, fingerprint: bytes) -> tuple[int, bool]:
        """The docID to save the page of *fingerprint* as, and whether it is saved already."""
        k = self.keys
        doc_id, saved = self._reserve(keys=[k.pages, k.reserved, k.free_ids, k.doc_id], args=[fingerprint])
        return int(doc_id), bool(saved)

    def free_doc_ids(self) -> list[int]:
        return [int(doc) for doc in self.server.zrange(self.keys.free_ids, 0, -1)]

    def last_doc_id(self) -> int:
        return int(self.server.get(self.keys.doc_id) or 0)

    def move_last_doc(self, hole: int) -> int:
        """Give the last docID's page the free docID *hole*; return the old last docID."""
        last = self.last_doc_id()
        pipe = self.server.pipeline()
        pipe.zrem(self.keys.free_ids, hole)
        pipe.decr(self.keys.doc_id)
        pipe.execute()
        if last != hole:
            for fingerprint, doc in self.server.hscan_iter(self.keys.pages):
                if int(doc) == last:
                    self.server.hset(self.keys.pages, fingerprint, hole)
                    break
        return last

    # -- workers and the end -----------------------------------------------
    def register_worker(self, worker: str, lease_seconds: float) -> None:
        """Say *worker* is alive (again within *lease_seconds*, or it counts as gone)."""
        self.server.hset(self.keys.workers, worker, json.dumps({"seen": self.now(), "lease": lease_seconds}))

    def now(self) -> float:
        """Redis's clock: the one all workers, on any machine, agree on."""
        seconds, microseconds = self.server.time()
        return seconds + microseconds / 1e6

    def unregister_worker(self, worker: str) -> None:
        self.server.hdel(self.keys.workers, worker)

    def keep_when_finished(self) -> None:
        self.server.set(self.keys.keep, 1)

    def kept(self) -> bool:
        return bool(self.server.exists(self.keys.keep))

    def claim_finish(self) -> bool:
        """True for exactly one worker of a finished crawl: the one that cleans up."""
        return bool(self.server.set(self.keys.finishing, 1, nx=True))

    def remove(self) -> int:
        keys = list(self.server.scan_iter(match=self.keys.pattern, count=1000))
        return self.server.delete(*keys) if keys else 0

    def status(self) -> dict[str, Any]:
        k = self.keys
        pipe = self.server.pipeline()
        for command, key in (
            ("exists", k.params),
            ("zcard", k.frontier),
            ("zcard", k.leases),
            ("scard", k.seen),
            ("hlen", k.pages),
        ):
            getattr(pipe, command)(key)
        pipe.hvals(k.workers)
        exists, frontier, leases, seen, pages, workers = pipe.execute()
        now = self.now()
        alive = sum(1 for entry in map(json.loads, workers) if now - entry["seen"] < entry["lease"])
        return {
            "crawl": self.name,
            "exists": bool(exists),
            "frontier": frontier,
            "leased": leases,
            "seen": seen,
            "saved": pages,
            "workers": alive,
        }


def url_fingerprint(key: str) -> bytes:
    """What the seen set and the docID records store for a normalized URL."""
    return hashlib.blake2b(key.encode("utf-8", "surrogateescape"), digest_size=16).digest()


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"
