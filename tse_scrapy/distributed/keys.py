"""The Redis key names of distributed crawls: the one place that knows them.

Every key of crawl NAME begins with ``tse:NAME:``.  The politeness leases,
shared by every crawl on the server, are ``tse:polite:HOST``.
"""

from __future__ import annotations

POLITENESS_NAME = "polite"  # no crawl may take this name


class CrawlKeys:
    """``keys.frontier`` is ``tse:NAME:frontier``, and so on."""

    def __init__(self, name: str):
        self.name = name
        prefix = f"tse:{name}:"
        self.pattern = prefix + "*"  # every key of the crawl
        # The crawl's record (store.py)
        self.params = prefix + "params"  # the crawl's arguments, JSON
        self.seeded = prefix + "seeded"  # set once every seed is queued
        self.keep = prefix + "keep"  # set: keep the keys when the crawl is over
        self.finishing = prefix + "finishing"  # taken by the one worker that cleans up
        self.workers = prefix + "workers"  # worker -> its last heartbeat
        self.doc_id = prefix + "doc_id"  # the last docID handed out
        self.reserved = prefix + "reserved"  # URL fingerprint -> docID, page leased or being saved
        self.pages = prefix + "pages"  # URL fingerprint -> docID, page saved
        self.free_ids = prefix + "free_ids"  # docIDs reserved by pages that failed
        # The frontier and its leases (queue.py)
        self.frontier = prefix + "frontier"  # URL fingerprint + request -> depth * LEVEL + push number
        self.push_id = prefix + "push_id"  # the push counter
        self.leases = prefix + "leases"  # lease -> expiry (ms, Redis clock)
        self.leased = prefix + "leased"  # lease -> request
        self.lease_scores = prefix + "lease_scores"  # lease -> its request's frontier score
        self.lease_id = prefix + "lease_id"  # the lease counter
        self.owned_prefix = prefix + "owned:"  # + lease: seen keys owned by the lease
        self.settle_prefix = prefix + "settle:"  # + a worker's queue: its last settle's token and answer
        # The seen set (dupefilter.py)
        self.seen = prefix + "seen"  # 16-byte digests of normalized URLs

    def owned(self, lease: int | str) -> str:
        return f"{self.owned_prefix}{lease}"

    def last_settle(self, queue: str) -> str:
        return f"{self.settle_prefix}{queue}"


def politeness_key(host: str) -> str:
    """The lease every worker of every crawl takes before a request to *host*."""
    return f"tse:{POLITENESS_NAME}:{host}"
