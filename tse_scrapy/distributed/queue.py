"""LeasedLevelQueue: scrapy-redis's priority queue, breadth-first, with leases.

The frontier is scrapy-redis's sorted set, scored by depth (then push
order), so the shallowest request comes first.  Taking a request does not
just remove it: it *leases* it to the worker, which renews its leases while
it works and finishes each one when the page is over.  A lease that is not
renewed (its worker died) expires, and the next lease by any worker puts its
request back where it was; a worker that finishes a page after that has no
say over it any more (its reservation is the next lease's).  Leasing also
keeps depths exact across workers: it hands out depth d only while no
shallower request is leased.

A worker's Redis work goes through one Lua script, ``settle``, in one round
trip however much it carries: push the links found (each marked seen and
queued in one step), finish the pages that are over (record or free their
docID reservation, drop their lease), then lease the next requests and
reserve a docID for each (``store.py``: a URL keeps its docID until saved).
It is not idempotent, and redis-py sends a command again when its answer is
lost (a timeout, a dropped connection): each call carries a token, and a
call whose token is the last one run answers what it answered then.

A frontier entry is the 16-byte fingerprint of the request's URL (what the
docID is reserved for) followed by the pickled request: the crawl format
``store.CRAWL_FORMAT``, which a worker checks when it joins.

A lease may also own seen-set keys (a redirect target marked seen on behalf
of the leased page); they are forgotten when the lease expires, so the
page's second fetch can follow the redirect again.
"""

from __future__ import annotations

import itertools
import logging
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import redis
from scrapy import Request, Spider
from scrapy_redis.queue import PriorityQueue

from ..crawl.serialize import request_to_dict
from .keys import CrawlKeys
from .store import worker_name

logger = logging.getLogger(__name__)

# Scores are depth * LEVEL + push number.  Lua prints numbers with 14
# digits: depth <= 10 and 10**9 pushes per crawl stay exact.
LEVEL = 10**9

FINGERPRINT_SIZE = 16  # store.url_fingerprint's

# KEYS: 1 seen, 2 frontier, 3 push counter, 4 leases (id -> expiry ms),
# 5 leased (id -> request), 6 lease_scores (id -> frontier score),
# 7 lease counter, 8 pages, 9 reserved, 10 free_ids, 11 docID counter,
# 12 this queue's last settle (its token and result).
# ARGV: 1 LEVEL, 2 lease ms, 3 key prefix of owned seen keys, 4 how many to
# lease, 5 number of links L, 6 number of finished pages F, 7 this call's
# token, then L times (seen-set fingerprint or '', frontier entry, depth),
# then F times (lease, fingerprint to record as saved or '', fingerprint to
# free or '').
# Returns {requests reclaimed, then 1 (queued) or 0 (seen) per link, then
# lease id, frontier entry, docID and 1 if saved already, per request leased}.
_SETTLE = """
-- 0. A call run again (redis-py resends a command whose answer was lost, and
-- this script is not idempotent) answers what it answered the first time.
local token = ARGV[7] .. ' '
local last = redis.call('GET', KEYS[12])
if last and string.sub(last, 1, #token) == token then return cmsgpack.unpack(string.sub(last, #token + 1)) end
local level = tonumber(ARGV[1])
local links, pages = tonumber(ARGV[5]), tonumber(ARGV[6])
local result = {0}
-- 1. Each link found is marked seen and queued in one step (an empty
-- fingerprint: a request that is not filtered, queued anyway).
for i = 8, 7 + 3 * links, 3 do
  local queued = 1
  if ARGV[i] ~= '' and redis.call('SADD', KEYS[1], ARGV[i]) == 0 then
    queued = 0
  else
    redis.call('ZADD', KEYS[2], ARGV[i + 2] * level + redis.call('INCR', KEYS[3]), ARGV[i + 1])
  end
  result[#result + 1] = queued
end
-- 2. Each finished page: a docID reservation becomes a saved page (the page
-- file is written) or goes to the next page (the page failed, or was saved
-- under another URL); the page's lease is dropped.  Only if the lease is
-- still there: once it ran out and its request went back to the frontier,
-- the URL's reservation is its next lease's, which writes or frees it.
for i = 8 + 3 * links, 7 + 3 * links + 3 * pages, 3 do
  local lease, saved, freed = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  if redis.call('ZREM', KEYS[4], lease) == 1 then
    local id = saved ~= '' and redis.call('HGET', KEYS[9], saved)
    if id then
      redis.call('HDEL', KEYS[9], saved)
      redis.call('HSET', KEYS[8], saved, id)
    end
    id = freed ~= '' and freed ~= saved and redis.call('HGET', KEYS[9], freed)
    if id then
      redis.call('HDEL', KEYS[9], freed)
      redis.call('ZADD', KEYS[10], id, id)
    end
    redis.call('HDEL', KEYS[5], lease)
    redis.call('ZREM', KEYS[6], lease)
    redis.call('DEL', ARGV[3] .. lease)
  end
end
if tonumber(ARGV[4]) > 0 then
  -- 3. Leases that ran out (their worker died): their requests go back where they were.
  local t = redis.call('TIME')
  local now = t[1] * 1000 + math.floor(t[2] / 1000)
  local expired = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now)
  for _, id in ipairs(expired) do
    local request = redis.call('HGET', KEYS[5], id)
    if request then redis.call('ZADD', KEYS[2], redis.call('ZSCORE', KEYS[6], id), request) end
    local owned = ARGV[3] .. id
    for _, key in ipairs(redis.call('SMEMBERS', owned)) do redis.call('SREM', KEYS[1], key) end
    redis.call('DEL', owned)
    redis.call('ZREM', KEYS[4], id)
    redis.call('HDEL', KEYS[5], id)
    redis.call('ZREM', KEYS[6], id)
  end
  result[1] = #expired
  -- 4. Lease the first requests of the frontier, but none deeper than a leased
  -- one, and reserve a docID for each URL (its own if it has one: a worker
  -- died saving it; the first freed one; or the next).
  local gate = math.huge
  local shallowest = redis.call('ZRANGE', KEYS[6], 0, 0, 'WITHSCORES')
  if #shallowest > 0 then gate = math.floor(tonumber(shallowest[2]) / level) end
  local heads = redis.call('ZRANGE', KEYS[2], 0, tonumber(ARGV[4]) - 1, 'WITHSCORES')
  for i = 1, #heads, 2 do
    local request, score = heads[i], heads[i + 1]
    local depth = math.floor(tonumber(score) / level)
    if depth > gate then break end
    gate = depth
    redis.call('ZREM', KEYS[2], request)
    local id = redis.call('INCR', KEYS[7])
    redis.call('ZADD', KEYS[4], now + tonumber(ARGV[2]), id)
    redis.call('HSET', KEYS[5], id, request)
    redis.call('ZADD', KEYS[6], score, id)
    local fingerprint = string.sub(request, 1, 16)
    local doc, saved = redis.call('HGET', KEYS[8], fingerprint), 1
    if not doc then
      saved = 0
      doc = redis.call('HGET', KEYS[9], fingerprint)
      if not doc then
        local free = redis.call('ZPOPMIN', KEYS[10])
        if #free > 0 then doc = free[1] else doc = redis.call('INCR', KEYS[11]) end
        redis.call('HSET', KEYS[9], fingerprint, doc)
      end
    end
    result[#result + 1] = id
    result[#result + 1] = request
    result[#result + 1] = tonumber(doc)
    result[#result + 1] = saved
  end
end
-- Run again, a call that pushed, finished and leased nothing would change
-- nothing: only the others are kept (an idle worker's polls write nothing,
-- and none after the crawl's keys are removed).
if links + pages > 0 or #result > 1 + links then
  redis.call('SET', KEYS[12], token .. cmsgpack.pack(result), 'PX', ARGV[2])
end
return result
"""

_RENEW = """
local t = redis.call('TIME')
local expiry = t[1] * 1000 + math.floor(t[2] / 1000) + tonumber(ARGV[1])
local kept = 0
for i = 2, #ARGV do kept = kept + redis.call('ZADD', KEYS[1], 'XX', 'CH', expiry, ARGV[i]) end
return kept
"""

_OWN_SEEN = """
if redis.call('SADD', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('SADD', KEYS[2], ARGV[1])
return 1
"""

# A link as the settle script takes it: (seen-set fingerprint or b'', frontier entry, depth).
Link = Sequence[Any]
# A finished page as the settle script takes it: (lease, fingerprint saved or b'', fingerprint freed or b'').
FinishedPage = tuple[int, bytes, bytes]


@dataclass(frozen=True)
class Reservation:
    """The docID reserved for a leased request's URL (*fingerprint*), or its docID if *saved* already."""

    fingerprint: bytes
    doc_id: int
    saved: bool


class LeasedLevelQueue(PriorityQueue):
    """The crawl's frontier (``keys.frontier``) with its leases beside it (``keys.leases`` ...)."""

    def __init__(
        self,
        server: redis.Redis,
        spider: Spider,
        key: str,
        serializer: Any = None,
        *,
        keys: CrawlKeys,
        lease_seconds: float = 30.0,
    ):
        super().__init__(server, spider, key, serializer)
        self.keys = keys
        self.lease_ms = int(lease_seconds * 1000)
        self._settle = server.register_script(_SETTLE)
        self._renew = server.register_script(_RENEW)
        self._own_seen = server.register_script(_OWN_SEEN)
        # Where settle keeps its last token and answer: one per queue (so per worker).
        self.settle_record = keys.last_settle(f"{worker_name()}:{secrets.token_hex(4)}")
        self.settles = itertools.count(1)  # each settle's token

    def _encode_request(self, request: Request) -> bytes:
        return self.serializer.dumps(request_to_dict(request, self.spider))

    def link(self, request: Request, fingerprint: bytes, filtered: bool = True) -> Link:
        """*request* as ``settle`` pushes it: *fingerprint* (its URL's) is marked seen unless not *filtered*."""
        return (
            fingerprint if filtered else b"",
            fingerprint + self._encode_request(request),
            request.meta.get("depth", 0),
        )

    def settle(
        self, links: Sequence[Link] = (), finished: Sequence[FinishedPage] = (), lease: int = 0
    ) -> tuple[list[bool], list[Request]]:
        """In one round trip: push *links*, finish the *finished* pages, then lease up to
        *lease* requests of the shallowest level that may be handed out.  Returns whether
        each link was queued (False: seen already) and the requests leased
        (``meta['tse_lease']`` names each one's lease, ``meta['tse_reserved']`` its Reservation).
        One call at a time per queue (the scheduler makes them in one thread): the answer
        kept for a call sent again is the last call's."""
        k = self.keys
        reclaimed, *result = self._settle(
            keys=[
                *(k.seen, self.key, k.push_id),
                *(k.leases, k.leased, k.lease_scores, k.lease_id),
                *(k.pages, k.reserved, k.free_ids, k.doc_id),
                self.settle_record,
            ],
            args=[
                *(LEVEL, self.lease_ms, k.owned_prefix, lease, len(links), len(finished), next(self.settles)),
                *itertools.chain(*links, *finished),
            ],
        )
        if reclaimed:
            logger.warning("%d request(s) whose worker stopped renewing its lease are back in the frontier", reclaimed)
        queued, leased = result[: len(links)], result[len(links) :]
        requests = []
        for lease_id, entry, doc_id, saved in zip(*(leased[i::4] for i in range(4)), strict=True):
            request = self._decode_request(entry[FINGERPRINT_SIZE:])
            request.meta["tse_lease"] = int(lease_id)
            request.meta["tse_reserved"] = Reservation(entry[:FINGERPRINT_SIZE], int(doc_id), bool(saved))
            requests.append(request)
        return [bool(flag) for flag in queued], requests

    def push(self, request: Request) -> None:
        raise NotImplementedError("a request is pushed with its URL's fingerprint: push_unseen")

    def pop(self, timeout: int = 0) -> Request | None:
        raise NotImplementedError("a request is leased, with its docID, by settle(lease=N)")

    def push_unseen(self, request: Request, fingerprint: bytes, filtered: bool = True) -> bool:
        """Mark *fingerprint* (the URL's) seen and push *request*, atomically; False if it was seen
        (a seed: the links found go with ``settle``).  A request that is not *filtered* is just pushed."""
        return self.settle(links=[self.link(request, fingerprint, filtered)])[0] == [True]

    def renew(self, leases: Iterable[int]) -> int:
        """Extend *leases* by the lease time; return how many were still held."""
        leases = list(leases)
        return int(self._renew(keys=[self.keys.leases], args=[self.lease_ms, *leases])) if leases else 0

    def give_back(self, leases: Iterable[int]) -> None:
        """Let *leases* expire now: their requests return to the frontier at the next settle
        that leases (any worker's)."""
        leases = list(leases)
        if leases:
            self.server.zadd(self.keys.leases, dict.fromkeys(leases, 0), xx=True)

    def own_seen(self, lease: int, fingerprint: bytes) -> bool:
        """Mark *fingerprint* seen on behalf of *lease*; False if it was seen already."""
        return bool(self._own_seen(keys=[self.keys.seen, self.keys.owned(lease)], args=[fingerprint]))

    def clear(self) -> None:
        k = self.keys
        self.server.delete(self.key, k.leases, k.leased, k.lease_scores)
