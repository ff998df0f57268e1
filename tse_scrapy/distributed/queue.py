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
from typing import Any, NamedTuple

import redis
from scrapy import Request, Spider
from scrapy_redis.queue import PriorityQueue

from ..rules.files.frontierentries import (
    CALLBACKS,
    ERRBACKS,
    FINGERPRINT_SIZE,
    EntryError,
    RequestData,
    decode_entry,
    encode_entry,
)
from .keys import CrawlKeys
from .store import DOC_ID_LUA, GUARD_LUA, run_guarded, shorten, worker_name

logger = logging.getLogger(__name__)

# Scores are depth * LEVEL + push number.  Lua prints numbers with 14
# digits: depth <= 10 and 10**9 pushes per crawl stay exact.
LEVEL = 10**9
ANSWER_KEPT_AT_MOST = 86400.0  # seconds

# KEYS: 1 seen, 2 frontier, 3 push counter, 4 leases (id -> expiry ms),
# 5 leased (id -> request), 6 lease_scores (id -> frontier score),
# 7 quarantine, 8 pages, 9 reserved, 10 free_ids, 11 docID counter,
# 12 this queue's last settle (its token and result), 13 when a worker was last back after an outage,
# 14 params, 15 workers (their marks: each one's lease time).
# ARGV: 1 LEVEL, 2 lease ms, 3 key prefix of owned seen keys, 4 how many to
# lease, 5 number of links L, 6 number of finished pages F, 7 this call's
# token, 8 number of quarantined leases Q, 9 this call's lease prefix, 10 how
# long its answer is kept (ms: a call may be sent again after an outage),
# 11 the params the worker joined (nothing is written for another crawl: store.GUARD_LUA),
# then L times (seen-set fingerprint or '', frontier entry, depth),
# then F times (lease, fingerprint to record as saved or '', fingerprint to
# free or ''), then Q times (lease, fingerprint to free, why).
# Returns {requests reclaimed, {the key of each entry moved to the quarantine},
# then 1 (queued) or 0 (seen) per link, then lease id, frontier entry, docID
# and 1 if saved already, per request leased}.
_SETTLE = (
    GUARD_LUA
    + DOC_ID_LUA
    + r"""
local gone = guard(KEYS[14], ARGV[11])
if gone then return gone end
-- 0. A call run again (redis-py resends a command whose answer was lost, and
-- this script is not idempotent) answers what it answered the first time.
local token = ARGV[7] .. ' '
local last = redis.call('GET', KEYS[12])
if last and string.sub(last, 1, #token) == token then
  local ok, answer = pcall(cmsgpack.unpack, string.sub(last, #token + 1))
  if ok and type(answer) == 'table' then return answer end
end
local level = tonumber(ARGV[1])
local links, pages, bad = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[8])
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local result = {0, quarantined}
-- A lease is over: its request, score and owned seen keys go.
local function drop_lease(lease)
  redis.call('ZREM', KEYS[4], lease)
  redis.call('HDEL', KEYS[5], lease)
  redis.call('ZREM', KEYS[6], lease)
  redis.call('DEL', ARGV[3] .. lease)
end
-- A lease no worker took (no request behind it, or an expiry far past any lease
-- time: a worker sets and renews a lease its own lease time ahead) would hold the
-- crawl forever: its parts go to the quarantine.  Far is ten of the longest lease
-- times the crawl's workers say they use (their marks), at most a day each; the
-- marks are read only for an expiry past ten of this worker's own.
local own_far, far = now + 10 * tonumber(ARGV[2]), nil
local function untaken(expiry)
  if not expiry then return true end
  if expiry <= own_far then return false end
  if not far then
    local longest = tonumber(ARGV[2])
    for _, mark in ipairs(redis.call('HVALS', KEYS[15])) do
      local ok, said = pcall(cjson.decode, mark)
      local lease = ok and type(said) == 'table' and tonumber(said.lease)
      if lease and lease == lease and lease * 1000 > longest then longest = math.min(lease * 1000, 86400000) end
    end
    far = now + 10 * longest
  end
  return expiry > far
end
local function quarantine_untaken(lease)
  quarantine(KEYS[7], KEYS[4], 'a lease no worker took', lease)
  local request = redis.call('HGET', KEYS[5], lease)
  if request then quarantine(KEYS[7], KEYS[5], 'the request of a lease no worker took', request) end
  if redis.call('ZSCORE', KEYS[6], lease) then
    quarantine(KEYS[7], KEYS[6], 'the score of a lease no worker took', lease)
  end
  drop_lease(lease)
end
-- 1. Each link found is marked seen and queued in one step (an empty
-- fingerprint: a request that is not filtered, queued anyway).
local i = 12
for _ = 1, links do
  local queued = 1
  if ARGV[i] ~= '' and redis.call('SADD', KEYS[1], ARGV[i]) == 0 then
    queued = 0
  else
    redis.call('ZADD', KEYS[2], ARGV[i + 2] * level + redis.call('INCR', KEYS[3]), ARGV[i + 1])
  end
  result[#result + 1] = queued
  i = i + 3
end
-- 2. Each finished page: a docID reservation becomes a saved page (the page
-- file is written) or goes to the next page (the page failed, or was saved
-- under another URL); the page's lease is dropped.  Only if the lease is
-- still there: once it ran out and its request went back to the frontier,
-- the URL's reservation is its next lease's, which writes or frees it.
for _ = 1, pages do
  local lease, saved, freed = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  if redis.call('ZSCORE', KEYS[4], lease) then
    local id = saved ~= '' and doc_id_of(KEYS[9], saved, KEYS[7])
    if id then
      redis.call('HDEL', KEYS[9], saved)
      redis.call('HSET', KEYS[8], saved, id)
    elseif saved ~= '' and redis.call('HEXISTS', KEYS[8], saved) == 0 then
      -- Saved under a reservation Redis no longer has (lost writes): fetched again.
      local request, score = redis.call('HGET', KEYS[5], lease), redis.call('ZSCORE', KEYS[6], lease)
      if request and score then redis.call('ZADD', KEYS[2], score, request) end
    end
    if freed ~= saved then free_doc_id(KEYS[9], freed, KEYS[10], KEYS[7]) end
    drop_lease(lease)
  end
  i = i + 3
end
-- 2b. Each leased entry the worker could not read as a request (it logged it):
-- moved aside to the quarantine, its lease dropped.  The docID reserved for its
-- first 16 bytes stays: they may be a real URL's (a forged entry), whose
-- reservation it is; one that no page takes is freed at the end
-- (store.quarantine_leftovers).
for _ = 1, bad do
  local lease = ARGV[i]
  if redis.call('ZSCORE', KEYS[4], lease) then
    keep_aside(KEYS[7], KEYS[2], ARGV[i + 2], redis.call('HGET', KEYS[5], lease) or '')
    drop_lease(lease)
  end
  i = i + 3
end
if tonumber(ARGV[4]) > 0 then
  -- 3. Leases that ran out (their worker died): their requests go back where they were.
  -- Not within a lease time of a worker's return after Redis was away (the
  -- workers had no way to renew), but for leases handed back (expiry 0).
  local limit = now
  local resumed = redis.call('GET', KEYS[13])
  resumed = resumed and string.match(resumed, '^%d+$') and tonumber(resumed)
  if resumed and resumed <= now and now < resumed + tonumber(ARGV[2]) then limit = 0 end
  local expired = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', limit)
  for _, id in ipairs(expired) do
    local request, score = redis.call('HGET', KEYS[5], id), redis.call('ZSCORE', KEYS[6], id)
    if request and score then
      redis.call('ZADD', KEYS[2], score, request)
    elseif request then
      quarantine(KEYS[7], KEYS[5], 'a lease without its frontier score', request)
    end
    for _, key in ipairs(redis.call('SMEMBERS', ARGV[3] .. id)) do
      if #key == 16 then redis.call('SREM', KEYS[1], key) end
    end
    drop_lease(id)
  end
  result[1] = #expired
  -- 4. Lease the first requests of the frontier, but none deeper than a leased
  -- one, and reserve a docID for each URL (its own if it has one: a worker
  -- died saving it; the first freed one; or the next).
  local gate = math.huge
  for _ = 1, 100 do
    local shallowest = redis.call('ZRANGE', KEYS[6], 0, 0, 'WITHSCORES')
    if #shallowest == 0 then break end
    local lease = shallowest[1]
    local expiry = tonumber(redis.call('ZSCORE', KEYS[4], lease))
    local held = expiry and not untaken(expiry) and redis.call('HEXISTS', KEYS[5], lease) == 1
    if held and tonumber(shallowest[2]) then
      gate = math.floor(tonumber(shallowest[2]) / level)
      break
    end
    if expiry then
      -- A forged lease at depth 0 would gate every deeper request, and the frontier would never empty.
      quarantine_untaken(lease)
    else
      quarantine(KEYS[7], KEYS[6], 'a score without a lease', lease)
      redis.call('ZREM', KEYS[6], lease)
    end
  end
  local heads = redis.call('ZRANGE', KEYS[2], 0, tonumber(ARGV[4]) - 1, 'WITHSCORES')
  local leased = 0
  for j = 1, #heads, 2 do
    local request, score = heads[j], tonumber(heads[j + 1])
    if not score or #request <= 16 then  -- a score Lua cannot read (nan), or no request after the fingerprint
      quarantine(KEYS[7], KEYS[2], 'not a frontier entry (scored ' .. heads[j + 1] .. ')', request)
      redis.call('ZREM', KEYS[2], request)
    else
      local depth = math.floor(score / level)
      if depth > gate then break end
      gate = depth
      redis.call('ZREM', KEYS[2], request)
      leased = leased + 1
      -- Named by the worker and the call: unique even if Redis loses its last writes.
      local id = ARGV[9] .. leased
      redis.call('ZADD', KEYS[4], now + tonumber(ARGV[2]), id)
      redis.call('HSET', KEYS[5], id, request)
      redis.call('ZADD', KEYS[6], heads[j + 1], id)
      local fingerprint = string.sub(request, 1, 16)
      local doc, saved = doc_id_of(KEYS[8], fingerprint, KEYS[7]), 1
      if not doc then
        saved = 0
        doc = reserve_doc_id(KEYS[9], fingerprint, KEYS[10], KEYS[11], KEYS[7])
      end
      result[#result + 1] = id
      result[#result + 1] = request
      result[#result + 1] = doc
      result[#result + 1] = saved
    end
  end
  if leased == 0 and redis.call('ZCARD', KEYS[2]) == 0 then
    -- Idle at the end of a level or of the crawl: leases no worker took, that gate nothing.
    for _, id in ipairs(redis.call('ZRANGE', KEYS[4], 0, 99)) do
      local expiry = tonumber(redis.call('ZSCORE', KEYS[4], id))
      if redis.call('HEXISTS', KEYS[5], id) == 0 or untaken(expiry) then quarantine_untaken(id) end
    end
  end
end
-- Run again, a call that pushed, finished and leased nothing would change
-- nothing: only the others are kept (an idle worker's polls write nothing,
-- and none after the crawl's keys are removed).
if links + pages + bad + #quarantined > 0 or #result > 2 + links then
  redis.call('SET', KEYS[12], token .. cmsgpack.pack(result), 'PX', ARGV[10])
end
return result
"""
)

# Returns the leases that were no longer held (ran out and were taken back).
_RENEW = """
local t = redis.call('TIME')
local expiry = t[1] * 1000 + math.floor(t[2] / 1000) + tonumber(ARGV[1])
local lost = {}
for i = 2, #ARGV do
  if redis.call('ZSCORE', KEYS[1], ARGV[i]) then
    redis.call('ZADD', KEYS[1], 'XX', expiry, ARGV[i])
  else
    lost[#lost + 1] = ARGV[i]
  end
end
return lost
"""

_OWN_SEEN = (
    GUARD_LUA
    + """
local gone = guard(KEYS[3], ARGV[2])
if gone then return gone end
if redis.call('SADD', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('SADD', KEYS[2], ARGV[1])
return 1
"""
)

# A link as the settle script takes it: (seen-set fingerprint or b'', frontier entry, depth).
Link = Sequence[Any]
# A finished page as the settle script takes it: (lease, fingerprint saved or b'', fingerprint freed or b'').
FinishedPage = tuple[str, bytes, bytes]
# A leased entry no request could be read from: (lease, fingerprint, why).
Unreadable = tuple[str, bytes, str]


@dataclass(frozen=True)
class Reservation:
    """The docID reserved for a leased request's URL (*fingerprint*), or its docID if *saved* already."""

    fingerprint: bytes
    doc_id: int
    saved: bool


class Settled(NamedTuple):
    """What one settle did: whether each link was queued, the requests leased, and the
    leased entries that are no request (to be quarantined by the next settle)."""

    queued: list[bool]
    leased: list[Request]
    unreadable: list[Unreadable]


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
        patience: float = 0.0,
        joined: bytes = b"",
        max_depth: int | None = None,
    ):
        super().__init__(server, spider, key, serializer)
        self.keys = keys
        # The crawl's maxDepth: a leased entry must be a request tse queues in it (frontierentries.tse_request).
        self.max_depth = max_depth
        self.joined = joined  # the crawl's params as joined (store.RedisCrawl.joined)
        self.lease_ms = int(lease_seconds * 1000)
        # A settle's answer is kept as long as the worker may send it again: through an
        # outage it waits out (*patience*), and a lease time after (at most a day).
        self.answer_ms = int(1000 * min(lease_seconds + patience, ANSWER_KEPT_AT_MOST))
        self._settle = server.register_script(_SETTLE)
        self._renew = server.register_script(_RENEW)
        self._own_seen = server.register_script(_OWN_SEEN)
        # Where settle keeps its last token and answer, and what its leases are named
        # after: one per queue (so per worker and start).
        self.name = f"{worker_name()}:{secrets.token_hex(4)}"
        self.settle_record = keys.last_settle(self.name)
        self.settles = itertools.count(1)  # each settle's token

    def link(self, request: Request, fingerprint: bytes, filtered: bool = True) -> Link:
        """*request* as ``settle`` pushes it: *fingerprint* (its URL's) is marked seen unless not *filtered*."""
        return (
            fingerprint if filtered else b"",
            encode_entry(fingerprint, request_data(request, self.spider)),
            request.meta.get("depth", 0),
        )

    def settle(
        self,
        links: Sequence[Link] = (),
        finished: Sequence[FinishedPage] = (),
        lease: int = 0,
        unreadable: Sequence[Unreadable] = (),
        token: int | None = None,
    ) -> Settled:
        """In one round trip: push *links*, finish the *finished* pages, quarantine the
        *unreadable* leased entries, then lease up to *lease* requests of the shallowest
        level that may be handed out (``meta['tse_lease']`` names each one's lease,
        ``meta['tse_reserved']`` its Reservation).  A call sent again with its *token*
        answers what it answered (the default token is the next one).  One call at a time
        per queue (the scheduler makes them in one thread): the answer kept for a call
        sent again is the last call's."""
        k = self.keys
        token = next(self.settles) if token is None else token
        reclaimed, moved, *result = run_guarded(
            self._settle,
            [
                *(k.seen, self.key, k.push_id),
                *(k.leases, k.leased, k.lease_scores, k.quarantine),
                *(k.pages, k.reserved, k.free_ids, k.doc_id),
                *(self.settle_record, k.resumed, k.params, k.workers),
            ],
            [
                *(LEVEL, self.lease_ms, k.owned_prefix, lease, len(links), len(finished), token),
                *(len(unreadable), f"{self.name}:{token}:", self.answer_ms, self.joined),
                *itertools.chain(*links, *finished, *unreadable),
            ],
        )
        if reclaimed:
            logger.warning("%d request(s) whose worker stopped renewing its lease are back in the frontier", reclaimed)
        for key in moved:
            logger.warning(
                "An entry of %s no worker wrote: moved to %s", shorten(key.decode(errors="replace")), k.quarantine
            )
        queued, leased = result[: len(links)], result[len(links) :]
        settled = Settled([bool(flag) for flag in queued], [], [])
        for lease_id, entry, doc_id, saved in zip(*(leased[i::4] for i in range(4)), strict=True):
            lease_id = lease_id.decode()
            try:
                fingerprint, data = decode_entry(entry, self.max_depth)
                request = request_from_data(data, self.spider)
            except (EntryError, ValueError, TypeError) as error:  # Request() refuses some URLs decoding lets by
                why = shorten(str(error))  # a forged entry's field may be any size
                logger.warning("An entry of %s is no request (%s): moved to %s", self.key, why, k.quarantine)
                settled.unreadable.append((lease_id, entry[:FINGERPRINT_SIZE], why))
                continue
            request.meta["tse_lease"] = lease_id
            request.meta["tse_reserved"] = Reservation(fingerprint, int(doc_id), bool(saved))
            settled.leased.append(request)
        return settled

    def push(self, request: Request) -> None:
        raise NotImplementedError("a request is pushed with its URL's fingerprint: push_unseen")

    def pop(self, timeout: int = 0) -> Request | None:
        raise NotImplementedError("a request is leased, with its docID, by settle(lease=N)")

    def push_unseen(self, request: Request, fingerprint: bytes, filtered: bool = True) -> bool:
        """Mark *fingerprint* (the URL's) seen and push *request*, atomically; False if it was seen
        (a seed: the links found go with ``settle``).  A request that is not *filtered* is just pushed."""
        return self.settle(links=[self.link(request, fingerprint, filtered)])[0] == [True]

    def renew(self, leases: Iterable[str]) -> set[str]:
        """Extend *leases* by the lease time; return those no longer held."""
        leases = list(leases)
        lost = self._renew(keys=[self.keys.leases], args=[self.lease_ms, *leases]) if leases else []
        return {lease.decode() for lease in lost}

    def give_back(self, leases: Iterable[str]) -> None:
        """Let *leases* expire now: their requests return to the frontier at the next settle
        that leases (any worker's)."""
        leases = list(leases)
        if leases:
            self.server.zadd(self.keys.leases, dict.fromkeys(leases, 0), xx=True)

    def own_seen(self, lease: str, fingerprint: bytes) -> bool:
        """Mark *fingerprint* seen on behalf of *lease*; False if it was seen already."""
        keys = [self.keys.seen, self.keys.owned(lease), self.keys.params]
        return bool(run_guarded(self._own_seen, keys, [fingerprint, self.joined]))

    def clear(self) -> None:
        k = self.keys
        self.server.delete(self.key, k.leases, k.leased, k.lease_scores)


def request_data(request: Request, spider: Spider) -> RequestData:
    """What is stored of *request* (a request of the tse spider, as tse makes them)."""
    return RequestData(
        url=request.url,
        method=request.method,
        headers=tuple((name, value) for name, values in request.headers.items() for value in values),
        body=request.body,
        meta=request.meta,
        priority=request.priority,
        dont_filter=request.dont_filter,
        callback=_method_name(request.callback, spider, CALLBACKS),
        errback=_method_name(request.errback, spider, ERRBACKS),
    )


def request_from_data(data: RequestData, spider: Spider) -> Request:
    """The request *data* stands for; EntryError if it names a method the spider has not."""
    headers: dict[bytes, list[bytes]] = {}
    for name, value in data.headers:
        headers.setdefault(name, []).append(value)
    return Request(
        data.url,
        callback=_spider_method(data.callback, spider, CALLBACKS),
        errback=_spider_method(data.errback, spider, ERRBACKS),
        method=data.method,
        headers=headers,
        body=data.body,
        meta=dict(data.meta),
        priority=data.priority,
        dont_filter=data.dont_filter,
    )


def _method_name(method: Any, spider: Spider, allowed: frozenset[str]) -> str | None:
    if method is None:
        return None
    name = getattr(method, "__name__", method)
    if name not in allowed or getattr(method, "__self__", spider) is not spider:
        raise ValueError(f"a request of a distributed crawl calls back {name!r}, not one of {sorted(allowed)}")
    return name


def _spider_method(name: str | None, spider: Spider, allowed: frozenset[str]) -> Any:
    if name is None:
        return None
    method = getattr(spider, name, None) if name in allowed else None
    if method is None:
        raise EntryError(f"the spider has no method {name} to call back")
    return method
