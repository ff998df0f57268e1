"""The Redis key names of distributed crawls: the one place that knows them.

Every key of crawl NAME begins with ``tse:NAME:``.  The politeness leases,
shared by every crawl on the server, are ``tse:polite:HOST``.
"""

from __future__ import annotations

from ..rules.crawling.crawlargs import POLITENESS_NAME  # (refused as a crawl's name by check_crawl_name)

# Every command a worker (and `tse status`, and --migrate) sends, for a Redis ACL user
# of least privilege (docs/distributed.md): ACL SETUSER NAME on >PASSWORD resetkeys
# ~tse:* resetchannels -@all +CMD ...  The scripts' own commands are checked too.
WORKER_COMMANDS = (
    *("ping", "info", "time", "multi", "exec", "discard"),
    *("evalsha", "eval", "script|load", "script|exists"),
    *("get", "set", "del", "exists", "incr", "decr", "pttl", "scan"),
    *("hget", "hset", "hdel", "hlen", "hvals", "hgetall", "hexists", "hscan"),
    *("zadd", "zrem", "zcard", "zrange", "zrangebyscore", "zscore", "zpopmin", "zscan"),
    *("sadd", "srem", "smembers", "scard"),
    *("llen", "lpush", "lrange", "ltrim"),
)


def worker_acl(pattern: str = "tse:*") -> str:
    """The ACL rules of a worker's Redis user: its commands, on keys matching *pattern* only."""
    return f"resetkeys ~{pattern} resetchannels -@all " + " ".join(f"+{command}" for command in WORKER_COMMANDS)


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
        self.finishing = prefix + "finishing"  # taken by the one worker that cleans up (its name)
        self.moving = prefix + "moving"  # "LAST HOLE": the clean-up is giving page LAST the docID HOLE
        self.workers = prefix + "workers"  # worker -> its last heartbeat
        self.doc_id = prefix + "doc_id"  # the last docID handed out
        self.reserved = prefix + "reserved"  # URL fingerprint -> docID, page leased or being saved
        self.pages = prefix + "pages"  # URL fingerprint -> docID, page saved
        self.free_ids = prefix + "free_ids"  # docIDs reserved by pages that failed
        self.delay = prefix + "delay"  # the crawl's politeness, JSON: every worker keeps it
        # The frontier and its leases (queue.py)
        self.frontier = prefix + "frontier"  # URL fingerprint + request (data) -> depth * LEVEL + push number
        self.push_id = prefix + "push_id"  # the push counter
        self.leases = prefix + "leases"  # lease -> expiry (ms, Redis clock)
        self.leased = prefix + "leased"  # lease -> request
        self.lease_scores = prefix + "lease_scores"  # lease -> its request's frontier score
        self.owned_prefix = prefix + "owned:"  # + lease: seen keys owned by the lease
        self.settle_prefix = prefix + "settle:"  # + a worker's queue: its last settle's token and answer
        # The seen set (dupefilter.py)
        self.seen = prefix + "seen"  # 16-byte digests of normalized URLs
        # What no worker could read (a client of Redis wrote it): moved aside, kept when the crawl ends
        self.quarantine = prefix + "quarantine"
        # Redis's clock when a worker last came back after Redis was unreachable: no
        # lease is taken from its worker until TSE_LEASE_SECONDS after it
        self.resumed = prefix + "resumed"

    def owned(self, lease: int | str) -> str:
        return f"{self.owned_prefix}{lease}"

    def last_settle(self, queue: str) -> str:
        return f"{self.settle_prefix}{queue}"


def politeness_key(host: str) -> str:
    """The lease every worker of every crawl takes before a request to *host*."""
    return f"tse:{POLITENESS_NAME}:{host}"
