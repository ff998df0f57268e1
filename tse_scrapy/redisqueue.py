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

from scrapy_redis.queue import PriorityQueue

from .serialize import request_to_dict

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
    """Keys: ``KEY`` is the frontier; the leases live beside it (``KEY:leases`` ...)."""

    def __init__(self, server, spider, key, serializer=None, seen_key=None, lease_seconds: float = 30.0):
        super().__init__(server, spider, key, serializer)
        self.seen_key = seen_key or f"{self.key}:seen"
        self.lease_ms = int(lease_seconds * 1000)
        base = self.key.rsplit(":", 1)[0]
        self.leases_key, self.leased_key, self.lease_scores_key = (f"{base}:leases", f"{base}:leased",
                                                                   f"{base}:lease_scores")
        self.lease_counter_key, self.push_counter_key = f"{base}:lease_id", f"{base}:push_id"
        self.owned_prefix = f"{base}:owned:"
        self._push_unseen = server.register_script(_PUSH_UNSEEN)
        self._lease = server.register_script(_LEASE)
        self._renew = server.register_script(_RENEW)
        self._ack = server.register_script(_ACK)
        self._own_seen = server.register_script(_OWN_SEEN)

    def _encode_request(self, request):
        return self.serializer.dumps(request_to_dict(request, self.spider))

    def push(self, request) -> None:
        self.push_unseen(request, None)

    def push_unseen(self, request, fingerprint) -> bool:
        """Mark *fingerprint* seen and push *request*, atomically; False if it was seen.

        With no fingerprint (a request that is not filtered) it is just pushed."""
        depth = request.meta.get("depth", 0)
        return bool(self._push_unseen(keys=[self.seen_key, self.key, self.push_counter_key],
                                      args=[fingerprint or b"", self._encode_request(request), depth, LEVEL]))

    def pop(self, timeout=0):
        """Lease the next request (``meta['tse_lease']`` names the lease), or None."""
        reclaimed, *leased = self._lease(keys=[self.key, self.leases_key, self.leased_key,
                                               self.lease_scores_key, self.lease_counter_key, self.seen_key],
                                         args=[self.lease_ms, self.owned_prefix, LEVEL])
        if reclaimed:
            logger.warning("%d request(s) whose worker stopped renewing its lease are back in the frontier",
                           reclaimed)
        if not leased:
            return None
        lease, data = leased
        request = self._decode_request(data)
        request.meta["tse_lease"] = int(lease)
        return request

    def renew(self, leases) -> int:
        """Extend *leases* by the lease time; return how many were still held."""
        leases = list(leases)
        return int(self._renew(keys=[self.leases_key], args=[self.lease_ms, *leases])) if leases else 0

    def ack(self, lease) -> bool:
        """The leased page is over; False if the lease had expired (another worker has it)."""
        return bool(self._ack(keys=[self.leases_key, self.leased_key, self.lease_scores_key],
                              args=[lease, self.owned_prefix]))

    def give_back(self, leases) -> None:
        """Let *leases* expire now: their requests return to the frontier at the next pop."""
        leases = list(leases)
        if leases:
            self.server.zadd(self.leases_key, {lease: 0 for lease in leases}, xx=True)

    def own_seen(self, lease, fingerprint) -> bool:
        """Mark *fingerprint* seen on behalf of *lease*; False if it was seen already."""
        return bool(self._own_seen(keys=[self.seen_key, f"{self.owned_prefix}{lease}"], args=[fingerprint]))

    def leased_count(self) -> int:
        return self.server.zcard(self.leases_key)

    def clear(self) -> None:
        self.server.delete(self.key, self.leases_key, self.leased_key, self.lease_scores_key)
