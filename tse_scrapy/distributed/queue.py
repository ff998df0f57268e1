"""LeasedLevelQueue: scrapy-redis's priority queue, breadth-first, with leases.

The frontier is scrapy-redis's sorted set, scored by depth (then push
order), so the shallowest request comes first.  ``pop`` does not just remove
a request: it *leases* it to the worker, which renews its leases while it
works and acknowledges each one when the page is over.  A lease that is not
renewed (its worker died) expires, and the next ``pop`` by any worker puts
its request back where it was.  ``pop`` also keeps depths exact across
workers: it hands out depth d only while no shallower request is leased.

A lease may also own seen-set keys (a redirect target marked seen on behalf
of the leased page); they are forgotten when the lease expires, so the
page's second fetch can follow the redirect again.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

import redis
from scrapy import Request, Spider
from scrapy_redis.queue import PriorityQueue

from ..crawl.serialize import request_to_dict
from .keys import CrawlKeys

logger = logging.getLogger(__name__)

# Scores are depth * LEVEL + push number.  Lua prints numbers with 14
# digits: depth <= 10 and 10**9 pushes per crawl stay exact.
LEVEL = 10**9

_PUSH_UNSEEN = """
if ARGV[1] ~= '' and redis.call('SADD', KEYS[1], ARGV[1]) == 0 then return 0 end
local n = redis.call('INCR', KEYS[3])
redis.call('ZADD', KEYS[2], ARGV[3] * ARGV[4] + n, ARGV[2])
return 1
"""

# KEYS: frontier, leases (id -> expiry ms), leased (id -> request),
# lease_scores (id -> frontier score), lease counter, seen.
# ARGV: lease milliseconds, key prefix of owned seen keys, LEVEL.
_LEASE = """
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)
for _, id in ipairs(expired) do
  local data = redis.call('HGET', KEYS[3], id)
  if data then redis.call('ZADD', KEYS[1], redis.call('ZSCORE', KEYS[4], id), data) end
  local owned = ARGV[2] .. id
  for _, key in ipairs(redis.call('SMEMBERS', owned)) do redis.call('SREM', KEYS[6], key) end
  redis.call('DEL', owned)
  redis.call('ZREM', KEYS[2], id)
  redis.call('HDEL', KEYS[3], id)
  redis.call('ZREM', KEYS[4], id)
end
local head = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if #head == 0 then return {#expired} end
local level = tonumber(ARGV[3])
local shallowest = redis.call('ZRANGE', KEYS[4], 0, 0, 'WITHSCORES')
if #shallowest > 0 and math.floor(tonumber(shallowest[2]) / level) < math.floor(tonumber(head[2]) / level) then
  return {#expired}
end
redis.call('ZREM', KEYS[1], head[1])
local id = redis.call('INCR', KEYS[5])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[1]), id)
redis.call('HSET', KEYS[3], id, head[1])
redis.call('ZADD', KEYS[4], head[2], id)
return {#expired, id, head[1]}
"""

_RENEW = """
local t = redis.call('TIME')
local expiry = t[1] * 1000 + math.floor(t[2] / 1000) + tonumber(ARGV[1])
local kept = 0
for i = 2, #ARGV do kept = kept + redis.call('ZADD', KEYS[1], 'XX', 'CH', expiry, ARGV[i]) end
return kept
"""

_ACK = """
local gone = redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('DEL', ARGV[2] .. ARGV[1])
return gone
"""

_OWN_SEEN = """
if redis.call('SADD', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('SADD', KEYS[2], ARGV[1])
return 1
"""


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
        self._push_unseen = server.register_script(_PUSH_UNSEEN)
        self._lease = server.register_script(_LEASE)
        self._renew = server.register_script(_RENEW)
        self._ack = server.register_script(_ACK)
        self._own_seen = server.register_script(_OWN_SEEN)

    def _encode_request(self, request: Request) -> bytes:
        return self.serializer.dumps(request_to_dict(request, self.spider))

    def push(self, request: Request) -> None:
        self.push_unseen(request, None)

    def push_unseen(self, request: Request, fingerprint: bytes | None) -> bool:
        """Mark *fingerprint* seen and push *request*, atomically; False if it was seen.

        With no fingerprint (a request that is not filtered) it is just pushed."""
        depth = request.meta.get("depth", 0)
        return bool(
            self._push_unseen(
                keys=[self.keys.seen, self.key, self.keys.push_id],
                args=[fingerprint or b"", self._encode_request(request), depth, LEVEL],
            )
        )

    def pop(self, timeout: int = 0) -> Request | None:
        """Lease the next request (``meta['tse_lease']`` names the lease), or None."""
        k = self.keys
        reclaimed, *leased = self._lease(
            keys=[self.key, k.leases, k.leased, k.lease_scores, k.lease_id, k.seen],
            args=[self.lease_ms, k.owned_prefix, LEVEL],
        )
        if reclaimed:
            logger.warning("%d request(s) whose worker stopped renewing its lease are back in the frontier", reclaimed)
        if not leased:
            return None
        lease, data = leased
        request = self._decode_request(data)
        request.meta["tse_lease"] = int(lease)
        return request

    def renew(self, leases: Iterable[int]) -> int:
        """Extend *leases* by the lease time; return how many were still held."""
        leases = list(leases)
        return int(self._renew(keys=[self.keys.leases], args=[self.lease_ms, *leases])) if leases else 0

    def ack(self, lease: int) -> bool:
        """The leased page is over; False if the lease had expired (another worker has it)."""
        k = self.keys
        return bool(self._ack(keys=[k.leases, k.leased, k.lease_scores], args=[lease, k.owned_prefix]))

    def give_back(self, leases: Iterable[int]) -> None:
        """Let *leases* expire now: their requests return to the frontier at the next pop."""
        leases = list(leases)
        if leases:
            self.server.zadd(self.keys.leases, dict.fromkeys(leases, 0), xx=True)

    def own_seen(self, lease: int, fingerprint: bytes) -> bool:
        """Mark *fingerprint* seen on behalf of *lease*; False if it was seen already."""
        return bool(self._own_seen(keys=[self.keys.seen, self.keys.owned(lease)], args=[fingerprint]))

    def clear(self) -> None:
        k = self.keys
        self.server.delete(self.key, k.leases, k.leased, k.lease_scores)
