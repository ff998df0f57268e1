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
import secrets
import socket
import ssl
import threading
import time
from typing import Any

import msgpack
import redis
from redis.backoff import ExponentialBackoff, NoBackoff
from redis.client import Pipeline
from redis.retry import Retry

from ..rules.crawling.crawlargs import ArgumentError
from ..rules.crawling.secrets import mask_secrets, shown_message
from ..rules.files.frontierentries import FINGERPRINT_SIZE
from .keys import CrawlKeys

# The layout of a crawl's keys and frontier entries (a 16-byte URL fingerprint,
# then the request as data, since 3): stored in the crawl's parameters when
# it is created, so a worker of another version refuses to join it rather
# than misread it.  Bump it with any change a worker of the previous version
# could not read.
CRAWL_FORMAT = 3
# Format 2 stored pickled requests (before 3: the request as data, rules/files/frontierentries.py).
PICKLED_FORMAT = 2
COMMAND_TIMEOUT = 10.0  # seconds: a Redis command that takes longer has failed
CONNECT_TIMEOUT = 10.0
FROM_ENVIRONMENT = "env"  # TSE_REDIS_URL=env: the URL is the environment variable's
URL_VARIABLE = "TSE_REDIS_URL"
QUARANTINE_SHOWN = 5  # the newest entries `tse status` shows
HEARTBEAT_BYTES = 1024  # a worker's mark is a few dozen
SHOWN_AT_MOST = 200  # characters of an entry, or of why it is unreadable, in a log line or a record's why
# A script's answer when the crawl's params are not the ones this worker joined (CrawlGone).
GONE_TAG = "TSE_CRAWL_GONE"

# Lua shared by the scripts that write a crawl's keys: they write nothing once the crawl's params are
# not the ones the worker joined (a Redis without persistence restarted empty, or the crawl's keys
# were removed or replaced): writing would make a new crawl of stray keys, its docIDs from 1 again.
# An empty expectation: no check (a client that joined no crawl: tests, tools).
GUARD_LUA = (
    r"""
local function guard(params, expected)
  if expected ~= '' and redis.call('GET', params) ~= expected then
    return redis.error_reply('"""
    + GONE_TAG
    + r""" ' .. params)
  end
  return nil
end
"""
)

# Lua shared by the scripts that read docIDs: a value that is not one (a client
# of the crawl's Redis wrote it) is moved to the quarantine, never trusted.
DOC_ID_LUA = r"""
local quarantined = {}  -- the keys whose entries this call moved to the quarantine (the worker logs them)
local function keep_aside(key, source, why, value)
  local t = redis.call('TIME')
  if #why > 200 then why = string.sub(why, 1, 197) .. '...' end  -- a forged entry's text, bounded
  redis.call('LPUSH', key, cmsgpack.pack({1, tonumber(t[1]), source, why, #value, string.sub(value, 1, 4096)}))
  redis.call('LTRIM', key, 0, 9999)
end
local function quarantine(key, source, why, value)
  quarantined[#quarantined + 1] = source
  keep_aside(key, source, why, value)
end
local function valid_doc_id(value)
  if value and #value <= 15 and string.match(value, '^[1-9][0-9]*$') then return tonumber(value) end
  return nil
end
local function doc_id_of(hash, field, q)
  local value = redis.call('HGET', hash, field)
  if not value then return nil end
  local id = valid_doc_id(value)
  if not id then
    quarantine(q, hash, 'not a docID', value)
    redis.call('HDEL', hash, field)
  end
  return id
end
local function free_doc_id(reserved, fingerprint, free, q)
  local id = fingerprint ~= '' and doc_id_of(reserved, fingerprint, q)
  if id then
    redis.call('HDEL', reserved, fingerprint)
    redis.call('ZADD', free, id, id)
  end
end
local function reserve_doc_id(reserved, fingerprint, free, counter, q)
  local id = doc_id_of(reserved, fingerprint, q)
  if id then return id end
  for _ = 1, 100 do
    local popped = redis.call('ZPOPMIN', free)
    if #popped == 0 then break end
    id = valid_doc_id(popped[1])
    if id then break end
    quarantine(q, free, 'not a docID', popped[1])
  end
  if not id then
    id = valid_doc_id(tostring(redis.call('INCR', counter)))
    if not id then return redis.error_reply('the docID counter ' .. counter .. ' is past any docID') end
  end
  redis.call('HSET', reserved, fingerprint, id)
  return id
end
"""

# KEYS: 1 pages, 2 reserved, 3 free_ids, 4 docID counter, 5 quarantine, 6 params;
# ARGV: 1 the URL's fingerprint, 2 the params joined.
_RESERVE = (
    GUARD_LUA
    + DOC_ID_LUA
    + """
local gone = guard(KEYS[6], ARGV[2])
if gone then return gone end
local done = doc_id_of(KEYS[1], ARGV[1], KEYS[5])
if done then return {done, 1} end
return {reserve_doc_id(KEYS[2], ARGV[1], KEYS[3], KEYS[4], KEYS[5]), 0}
"""
)


# The finishing mark taken only while the crawl's keys are there: a worker that found the crawl over
# (RedisCrawl.status) while another was cleaning up would otherwise take it again once the other had
# removed the keys, mark and all, and clean up a crawl whose last docID then reads 0: every page
# file "past" it removed (seen, rarely, in tests/test_distributed_outage.py).  The mark names its
# owner and expires unless its owner renews it (ARGV[3] ms): a worker killed while it cleans up
# (kill -9, out of memory) leaves a mark that goes, and the next worker to find the crawl over takes
# the clean-up over.  Its owner asking again (after an outage) keeps it.
_CLAIM_FINISH = """
if redis.call('exists', KEYS[1]) == 0 then return 0 end
if ARGV[1] ~= '' and redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end
local holder = redis.call('get', KEYS[2])
if holder and holder ~= ARGV[2] then return 0 end
redis.call('set', KEYS[2], ARGV[2], 'PX', ARGV[3])
return 1
"""

# KEYS: 1 the finishing mark; ARGV: 1 its owner, 2 ms to expire in (0: never, the crawl's keys kept).
_RENEW_FINISH = """
if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == '0' then redis.call('set', KEYS[1], ARGV[1]) else redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2]) end
return 1
"""

# KEYS: 1 params, 2 the key to write; ARGV: 1 the params joined, 2 the command (SET, HSET), then its
# arguments.  A plain write, only while the crawl is the one joined (GUARD_LUA).
_GUARDED_WRITE = (
    GUARD_LUA
    + """
local gone = guard(KEYS[1], ARGV[1])
if gone then return gone end
return redis.call(ARGV[2], KEYS[2], unpack(ARGV, 3))
"""
)


class CrawlGone(redis.ResponseError):
    """Redis no longer holds the crawl this worker joined (its params are gone, or another crawl's):
    a script refused to write (GUARD_LUA)."""


def shorten(text: str, at_most: int = SHOWN_AT_MOST) -> str:
    """*text* in a log line: at most *at_most* characters, "…" when cut (a forged entry may be huge)."""
    return text if len(text) <= at_most else text[: at_most - 1] + "…"


def refused_line(crawl: RedisCrawl, error: redis.RedisError) -> str:
    """A refusal of Redis in one line, the password masked; a WRONGTYPE names the key (a client of
    Redis wrote it) so that its operator knows which to remove."""
    line = f"Redis refused: {error}"
    if "WRONGTYPE" in str(error):  # at its start, or after "Error running script ...", by version
        try:
            key = crawl.wrong_type_key()
        except redis.RedisError:
            key = None
        if key:
            line = f"Redis refused: key {key} holds the wrong type of value (a client of Redis wrote it): remove it"
    return mask_secrets(line)


def run_guarded(script: Any, keys: list[Any], args: list[Any]) -> Any:
    """Run *script* (its refusal to write to another crawl raised as CrawlGone)."""
    try:
        return script(keys=keys, args=args)
    except redis.ResponseError as error:
        if GONE_TAG in str(error):
            raise CrawlGone(str(error)) from None
        raise


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


# What a worker waits out (unreachable, or not serving for now: LOADING is a
# BusyLoadingError, a ConnectionError; a replica whose master is down answers
# MASTERDOWN, one not promoted yet READONLY); any other error stops it (a refused
# password, a command the user may not run, a script error ...).
_NOT_SERVING = (
    redis.exceptions.MasterDownError,
    redis.exceptions.ReadOnlyError,
    redis.exceptions.TryAgainError,
    redis.exceptions.ClusterDownError,
)


def is_outage(error: BaseException) -> bool:
    """True for an error that says Redis is unreachable or not serving now, not that it refused
    (a TLS certificate that does not verify is a refusal: asking again changes nothing)."""
    if isinstance(error, redis.exceptions.AuthenticationError | redis.exceptions.AuthorizationError):
        return False
    if certificate_refused(error) is not None:
        return False
    return isinstance(error, (redis.ConnectionError, redis.TimeoutError, *_NOT_SERVING))


def certificate_refused(error: BaseException) -> ssl.SSLCertVerificationError | None:
    """The TLS certificate verification error under *error* (redis-py's ConnectionError), or None."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, ssl.SSLCertVerificationError):
            return cause
        cause = cause.__cause__ or cause.__context__
    return None


def certificate_line(error: BaseException, shown_url: str) -> str | None:
    """A TLS certificate *error* refused (``certificate_refused``), in words, or None."""
    refused = certificate_refused(error)
    if refused is None:
        return None
    reason = _reason(refused.verify_message or refused.reason or str(refused))
    return (
        f"Redis at {shown_url}: its TLS certificate is not verified ({reason}): give the CA that signed it"
        " in the URL (?ssl_ca_certs=FILE)"
    )


def tls_hint(error: BaseException, url: str) -> str:
    """What to say after a timeout of a rediss:// URL: the port may be plain Redis's (no TLS answer)."""
    if isinstance(error, redis.TimeoutError) and url.lower().startswith("rediss://"):
        return " (no TLS answer: is that port's server plain Redis, redis://?)"
    return ""


def outage_line(error: redis.RedisError, shown_url: str) -> str:
    """What an outage (``is_outage``) is, in words, from the type of redis-py's *error* and the OS
    error under it, not from its message's wording: "cannot reach Redis at URL: connection refused",
    not "Error 111 connecting to HOST:PORT. Connection refused."; "Redis at URL is not serving: ..."
    with the server's answer (``LOADING``, ``MASTERDOWN`` ...).  *shown_url*: the URL, its password
    masked."""
    # An answer of the server's: MASTERDOWN, READONLY ..., and LOADING (a ConnectionError for redis-py).
    if isinstance(error, redis.exceptions.BusyLoadingError) or not isinstance(
        error, redis.ConnectionError | redis.TimeoutError
    ):
        return f"Redis at {shown_url} is not serving: {str(error).strip() or type(error).__name__}"
    return f"cannot reach Redis at {shown_url}: {unreachable_reason(error)}"


def login_refusal(error: BaseException, shown_url: str) -> str | None:
    """What Redis said of the credentials it was given, in words, or None when *error* says nothing
    of them.  Read from the server's answer (redis-py raises one AuthenticationError for all, its code
    cut off): NOAUTH, or HELLO refused, is a password missing; WRONGPASS (``invalid ...``) one that is
    wrong, or a user unknown or disabled.  *shown_url*: the URL, its password masked."""
    text = str(error).strip()
    if text.startswith(("NOAUTH", "Authentication required", "HELLO must be called")):
        return f"Redis at {shown_url} wants a password: give it in the URL, before the host and an @ (user:password@)"
    if text.startswith(("WRONGPASS", "invalid username-password pair", "invalid password")):
        return (
            f"Redis at {shown_url} refused the password given (WRONGPASS): it is wrong, or the user is "
            "unknown or disabled"
        )
    if "without any password configured" in text or "no password is set" in text:
        return f"Redis at {shown_url} wants no password, but one is given: leave it out of the URL"
    return None


def unreachable_reason(error: BaseException) -> str:
    """Why Redis could not be reached, short ("connection refused", "timed out"): the OS error
    redis-py raised its error from (``__cause__``, else ``__context__``), else its own reason."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, redis.TimeoutError | TimeoutError):  # (socket.timeout is TimeoutError)
            return "timed out"
        if isinstance(cause, OSError):
            return _reason(cause.strerror or str(cause)) or type(cause).__name__
        cause = cause.__cause__ or cause.__context__
    return _reason(str(error)) or type(error).__name__  # redis-py's own ("Connection closed by server.")


def _reason(text: str) -> str:
    """*text* as a reason after a colon: stripped, no final full stop, a sentence's capital lowered."""
    text = text.strip().rstrip(".")
    return text[:1].lower() + text[1:] if text[1:2].islower() else text


def redis_url(given: str) -> str:
    """The Redis URL *given* stands for: ``env`` is the environment variable TSE_REDIS_URL's
    (so that a password need not appear in a process list)."""
    if given != FROM_ENVIRONMENT:
        return given
    url = os.environ.get(URL_VARIABLE, "").strip()
    if not url:
        raise ArgumentError(f"the Redis URL is to come from the environment, but {URL_VARIABLE} is not set")
    return url


def connect(url: str, check: bool = True) -> CountingRedis:
    """A Redis client for *url* (``redis_url``); ArgumentError (one line, the password masked)
    when it cannot be reached (*check*: asked at once)."""
    url = redis_url(url)
    # A few quick retries for a dropped connection; a worker rides out an outage (outage.py).
    retry = Retry(ExponentialBackoff(cap=0.5, base=0.05), 3)
    try:
        server = CountingRedis.from_url(
            url,
            socket_timeout=COMMAND_TIMEOUT,
            socket_connect_timeout=CONNECT_TIMEOUT,
            retry_on_timeout=True,
            # The first question asked once: a server that does not answer it (a TLS handshake with a
            # plain port, rediss:// for redis://) is said so after one timeout, not four (41 s).
            retry=Retry(NoBackoff(), 0) if check else retry,
        )
        if check:
            server.ping()
            server.set_retry(retry)
    except (ValueError, TypeError, redis.RedisError) as error:  # TypeError: a query option the scheme does not take
        raise ArgumentError(mask_secrets(f"cannot use Redis at {url}: {error}{tls_hint(error, url)}")) from None
    return server


class RedisCrawl:
    """One crawl's record, under ``tse:NAME:``."""

    def __init__(self, server: redis.Redis, name: str):
        self.server = server
        self.name = name
        self.keys = CrawlKeys(name)
        # What this worker's finishing mark holds (claim_finish): its name, unique to this object.
        self.finisher = f"{worker_name()}:{secrets.token_hex(4)}"
        # The raw params of the crawl this worker joined (``join``): its scripts write only while
        # Redis holds them.  b"": no check (a tool, a test).
        self.joined = b""
        self._reserve = server.register_script(_RESERVE)
        self._claim_finish = server.register_script(_CLAIM_FINISH)
        self._renew_finish = server.register_script(_RENEW_FINISH)
        self._guarded_write = server.register_script(_GUARDED_WRITE)

    # -- parameters --------------------------------------------------------
    def parameters(self) -> dict[str, Any] | None:
        """The crawl's parameters (None: no crawl); ValueError when they are not a JSON object (a client
        of Redis wrote them: a list made the joining worker's check a traceback)."""
        raw = self.server.get(self.keys.params)
        return read_parameters(raw) if raw else None

    def parameters_problem(self) -> str | None:
        """Why this version cannot tell what the crawl's counts mean, in words (its parameters are no
        crawl's, or another version's: ``tse status``), or None.  Only reads."""
        try:
            stored = self.parameters()
        except redis.ResponseError as error:  # (WRONGTYPE: not a string)
            return f"its record ({self.keys.params}) cannot be read: {error}"
        except ValueError as error:
            return f"its record ({self.keys.params}) is {error}"
        if stored is None or stored.get("format") in (CRAWL_FORMAT, PICKLED_FORMAT):
            # (A format-2 crawl's keys are counted as this version's: only its frontier entries differ.)
            return None
        return (
            f"begun by another version of tse-scrapy (crawl format {stored.get('format', 1)}, this one reads "
            f"{CRAWL_FORMAT}): this version cannot read its counts; ask that version's tse status"
        )

    def create(self, parameters: dict[str, Any]) -> dict[str, Any]:
        """Store *parameters* unless the crawl exists; return the crawl's parameters."""
        self.server.set(self.keys.params, json.dumps(parameters), nx=True)
        return self.parameters()

    def join(self) -> bool:
        """Remember the crawl's params as they are now: this worker's scripts write only while
        Redis holds them.  False if the crawl is gone already (its last worker removed it)."""
        raw = self.server.get(self.keys.params)
        self.joined = raw if raw else b"\0gone"  # never matches: writes nothing
        return bool(raw)

    def holds_crawl(self) -> bool:
        """Whether Redis still holds the crawl this worker joined."""
        return not self.joined or self.server.get(self.keys.params) == self.joined

    def leftover_keys(self) -> list[str]:
        """The crawl's keys, but its quarantine (kept on purpose), when it has no params: what a
        crawl whose state was lost left (a Redis without persistence restarted mid-crawl)."""
        return sorted(
            key.decode(errors="replace")
            for key in self.server.scan_iter(match=self.keys.pattern, count=1000)
            if key != self.quarantine_key
        )

    def guarded_write(self, command: str, key: str, *args: Any) -> Any:
        """*command* on *key*, only while Redis holds the crawl joined (CrawlGone else)."""
        return run_guarded(self._guarded_write, [self.keys.params, key], [self.joined, command, *args])

    def set_delay(self, delay: float, max_crawl_delay: float) -> None:
        """Store the crawl's politeness (its first worker's): every worker keeps it (``delay``)."""
        self.guarded_write("SET", self.keys.delay, json.dumps({"delay": delay, "max_crawl_delay": max_crawl_delay}))

    def delay(self, wait: float = 10.0) -> tuple[float, float] | None:
        """The crawl's (delay, max Crawl-delay), waiting up to *wait* s for its first worker to store
        it while the crawl is not seeded; None for a crawl begun without it (an earlier version)."""
        deadline = time.monotonic() + wait
        while True:
            raw = self.server.get(self.keys.delay)
            if raw or self.server.exists(self.keys.seeded) or time.monotonic() >= deadline:
                break
            time.sleep(0.1)
        try:
            stored = json.loads(raw) if raw else None
            return float(stored["delay"]), float(stored["max_crawl_delay"])
        except (ValueError, TypeError, KeyError, OverflowError):
            return None  # none, or not a worker's (a forged one: an integer of 400 digits): it keeps its own

    def mark_seeded(self) -> None:
        self.guarded_write("SET", self.keys.seeded, 1)

    def wrong_type_key(self) -> str | None:
        """The first of the crawl's keys that holds the wrong type (a client of Redis wrote it), or None."""
        k = self.keys
        probes = {"get": (k.params, k.seeded, k.keep, k.finishing, k.doc_id, k.push_id, k.resumed, k.delay, k.moving)}
        probes["hlen"] = (k.workers, k.reserved, k.pages, k.leased)
        probes["zcard"] = (k.free_ids, k.frontier, k.leases, k.lease_scores)
        probes["scard"] = (k.seen,)
        probes["llen"] = (k.quarantine,)
        for command, keys in probes.items():
            for key in keys:
                try:
                    getattr(self.server, command)(key)
                except redis.ResponseError as error:
                    if "WRONGTYPE" in str(error):
                        return key
        return None

    # -- docIDs ------------------------------------------------------------
    def reserve_doc_id(self, fingerprint: bytes) -> tuple[int, bool]:
        """The docID to save the page of *fingerprint* as, and whether it is saved already."""
        k = self.keys
        doc_id, saved = run_guarded(
            self._reserve,
            [k.pages, k.reserved, k.free_ids, k.doc_id, k.quarantine, k.params],
            [fingerprint, self.joined],
        )
        return int(doc_id), bool(saved)

    def free_doc_ids(self) -> list[int]:
        return [int(doc) for doc in self.server.zrange(self.keys.free_ids, 0, -1) if _is_doc_id(doc)]

    def quarantine_leftovers(self) -> int:
        """At the end (nothing leased, nothing queued): move aside whatever no worker wrote
        that is left in the crawl's hashes and sorted sets; return how many."""
        k = self.keys
        moved = 0
        for field, value in self.server.hgetall(k.leased).items():
            self.quarantine(k.leased, "a request without a lease", field + b" " + value)
            self.server.hdel(k.leased, field)
            moved += 1
        # A docID reserved and never saved (an entry quarantined when leased): freed, so the
        # last pages fill it; unless it is no docID, or a saved page's (a forged reservation).
        taken = set(self.server.hvals(k.pages))
        last = self.last_doc_id()
        for field, value in self.server.hgetall(k.reserved).items():
            self.server.hdel(k.reserved, field)
            if _is_doc_id(value) and value not in taken and int(value) <= last:
                self.server.zadd(k.free_ids, {value: int(value)})
                taken.add(value)
            else:
                self.quarantine(k.reserved, "a reservation that is no free docID", field + b" " + value)
                moved += 1
        for member in self.server.zrange(k.lease_scores, 0, -1):
            self.quarantine(k.lease_scores, "a score without a lease", member)
            self.server.zrem(k.lease_scores, member)
            moved += 1
        for member in self.server.zrange(k.free_ids, 0, -1):
            if not _is_doc_id(member):
                self.quarantine(k.free_ids, "not a docID", member)
                self.server.zrem(k.free_ids, member)
                moved += 1
        for field, value in self.server.hscan_iter(k.pages, count=1000):
            if len(field) != FINGERPRINT_SIZE or not _is_doc_id(value):
                self.quarantine(k.pages, "not a page's docID", field + b" " + value)
                self.server.hdel(k.pages, field)
                moved += 1
        self.tidy_workers()
        return moved

    def last_doc_id(self) -> int:
        return int(self.server.get(self.keys.doc_id) or 0)

    def move_last_doc(self, hole: int) -> int:
        """Give the last docID's page the free docID *hole*; return the old last docID.  The move is
        recorded (``keys.moving``) with the counter's change, in one transaction, until the caller
        moved the page file and called ``moved_last_doc``: a clean-up cut short finishes it
        (``unfinished_move``)."""
        last = self.last_doc_id()
        pipe = self.server.pipeline()
        pipe.zrem(self.keys.free_ids, hole)
        # DECR itself: redis-py's decr() sends DECRBY, which the least-privileged user's ACL
        # (keys.WORKER_COMMANDS) does not grant: the crawl's last page was not moved (a CI run's find).
        pipe.execute_command("DECR", self.keys.doc_id)
        pipe.set(self.keys.moving, f"{last} {hole}")
        pipe.execute()
        self._give_doc_id(last, hole)
        return last

    def _give_doc_id(self, last: int, hole: int) -> None:
        """The saved page of docID *last* has docID *hole* (nothing to do when none has *last* any more)."""
        if last != hole:
            for fingerprint, doc in self.server.hscan_iter(self.keys.pages):
                if doc == str(last).encode():
                    self.server.hset(self.keys.pages, fingerprint, hole)
                    break

    def moved_last_doc(self) -> None:
        """The page file of the move under way is where it goes (``move_last_doc``)."""
        self.server.delete(self.keys.moving)

    def unfinished_move(self) -> tuple[int, int] | None:
        """(last, hole) of a move a clean-up cut short began (its docIDs changed in Redis, maybe not
        the page's record, maybe not its file), its record made right again; None if none."""
        value = self.server.get(self.keys.moving)
        try:
            last, hole = (int(part) for part in (value or b"").split())
        except ValueError:
            if value is not None:
                self.quarantine(self.keys.moving, "not a move of a page", value)
                self.server.delete(self.keys.moving)
            return None
        self._give_doc_id(last, hole)
        return last, hole

    # -- workers and the end -----------------------------------------------
    def register_worker(self, worker: str, lease_seconds: float) -> None:
        """Say *worker* is alive (again within *lease_seconds*, or it counts as gone)."""
        self.guarded_write("HSET", self.keys.workers, worker, json.dumps({"seen": self.now(), "lease": lease_seconds}))

    def now(self) -> float:
        """Redis's clock: the one all workers, on any machine, agree on."""
        seconds, microseconds = self.server.time()
        return seconds + microseconds / 1e6

    def unregister_worker(self, worker: str) -> None:
        self.server.hdel(self.keys.workers, worker)

    def keep_when_finished(self) -> None:
        self.guarded_write("SET", self.keys.keep, 1)

    def kept(self) -> bool:
        return bool(self.server.exists(self.keys.keep))

    def claim_finish(self, seconds: float = 30.0) -> bool:
        """True for exactly one worker of a finished crawl, while its keys are there: the one that
        cleans up (see _CLAIM_FINISH), again if it asks again.  The mark (``finisher``) expires in
        *seconds* unless renewed (``renew_finish``)."""
        keys = [self.keys.params, self.keys.finishing]
        return bool(self._claim_finish(keys=keys, args=[self.joined, self.finisher, max(1, int(seconds * 1000))]))

    def renew_finish(self, seconds: float | None) -> bool:
        """Keep this worker's finishing mark *seconds* more (None: for good, the crawl's keys kept);
        False if the mark is not this worker's (any more)."""
        ms = 0 if seconds is None else max(1, int(seconds * 1000))
        return bool(self._renew_finish(keys=[self.keys.finishing], args=[self.finisher, ms]))

    def remove(self) -> int:
        """Remove the crawl's keys, but its quarantine (what no worker could read stays for its operator)."""
        keys = [key for key in self.server.scan_iter(match=self.keys.pattern, count=1000) if key != self.quarantine_key]
        return self.server.delete(*keys) if keys else 0

    @property
    def quarantine_key(self) -> bytes:
        return self.keys.quarantine.encode()

    def status(self) -> dict[str, Any]:
        k = self.keys
        pipe = self.server.pipeline()
        for command, key in (
            ("exists", k.finishing),  # the crawl is over: its last worker is cleaning up
            ("exists", k.keep),
            ("exists", k.params),
            ("zcard", k.frontier),
            ("zcard", k.leases),
            ("scard", k.seen),
            ("hlen", k.pages),
            ("llen", k.quarantine),
        ):
            getattr(pipe, command)(key)
        pipe.hvals(k.workers)
        pipe.lrange(k.quarantine, 0, QUARANTINE_SHOWN - 1)
        finishing, keep, exists, frontier, leases, seen, pages, quarantined, workers, newest = pipe.execute()
        now = self.now()
        return {
            "crawl": self.name,
            "exists": bool(exists),
            "finishing": bool(exists and finishing),
            "kept": bool(keep),
            "frontier": frontier,
            "leased": leases,
            "seen": seen,
            "saved": pages,
            "workers": sum(1 for entry in workers if _alive(entry, now)),
            "quarantined": quarantined,
            "quarantine": [_quarantined(entry) for entry in newest],
        }

    def server_run_id(self) -> str | None:
        """Redis's ``run_id``, new at each start (None when this user may not ask: INFO).  (As
        ``outage.server_run_id``, which imports Scrapy: ``tse status`` does not need it.)"""
        try:
            return str(self.server.info("server").get("run_id"))
        except redis.ResponseError:
            return None

    def tidy_workers(self) -> None:
        """Move aside the ``workers`` entries no worker wrote (a client of Redis did)."""
        for worker, entry in self.server.hgetall(self.keys.workers).items():
            if _heartbeat(entry) is None:
                self.server.hdel(self.keys.workers, worker)
                self.quarantine(self.keys.workers, "not a worker's heartbeat", entry)

    def quarantine(self, source: str, why: str, entry: bytes) -> None:
        """Keep *entry* of *source* aside (as the Lua scripts do: queue.py, DOC_ID_LUA)."""
        seconds, _ = self.server.time()
        record = msgpack.packb([1, seconds, source, shorten(why), len(entry), entry[:4096]], use_bin_type=False)
        pipe = self.server.pipeline()
        pipe.lpush(self.keys.quarantine, record)
        pipe.ltrim(self.keys.quarantine, 0, 9999)
        pipe.execute()


def read_parameters(raw: bytes) -> dict[str, Any]:
    """A crawl's parameters from their JSON; ValueError saying what they are instead ("not JSON", "not a
    JSON object")."""
    try:
        stored = json.loads(raw)
    except (ValueError, RecursionError):
        raise ValueError("not JSON") from None
    if not isinstance(stored, dict):
        raise ValueError("not a JSON object") from None
    return stored


def _is_doc_id(value: bytes) -> bool:
    return value.isdigit() and not value.startswith(b"0") and len(value) <= 15


def _heartbeat(entry: bytes) -> dict[str, float] | None:
    """A ``workers`` entry as a worker writes it, its times as floats, or None.  (An integer too large
    for a float, ``"seen": 1000...0``, which JSON reads as one, made the end of every worker's crawl
    and ``tse status`` an OverflowError: a traceback, the crawl never cleaned up.)"""
    if len(entry) > HEARTBEAT_BYTES:
        return None
    try:
        beat = json.loads(entry)
        if not isinstance(beat, dict) or not {type(beat.get(k)) for k in ("seen", "lease")} <= {float, int}:
            return None
        return {**beat, "seen": float(beat["seen"]), "lease": float(beat["lease"])}
    except (ValueError, RecursionError, OverflowError):
        return None


# The longest lease time a worker's mark counts for, as the lease script reads the marks (queue.py).
MOST_LEASE_SECONDS = 86_400


def _alive(entry: bytes, now: float) -> bool:
    """Whether *entry* is the mark of a worker seen within its lease time (at most a day) of *now*, on
    either side (Redis's clock stepped back): a mark "seen" in the year 10^300, or with a lease of
    10^308 seconds, written by any client of Redis, counted a worker alive for ever (``--migrate`` refused)."""
    beat = _heartbeat(entry)
    if beat is None:
        return False
    lease = min(beat["lease"], MOST_LEASE_SECONDS)
    return -lease < now - beat["seen"] < lease  # (NaN: False)


QUARANTINE_SHOWN = 300  # characters of a quarantine record's source and reason `tse status` shows


def _quarantined(record: bytes) -> str:
    """One quarantine record, as `tse status` shows it: when, from where, why, how big."""
    try:
        version, when, source, why, size, _ = msgpack.unpackb(record[: 1 << 16], raw=True)
        if version != 1 or type(size) is not int or type(when) not in (int, float):
            raise ValueError(version)
        # Written by any client of Redis: control characters shown encoded (no terminal sequence runs), cut.
        source, why = (shown_message(part.decode("utf-8", "replace"))[:QUARANTINE_SHOWN] for part in (source, why))
        return f"{source}: {why} ({size} bytes, at {int(when)})"
    except Exception:  # a record itself written by a client of Redis: shown as such
        return f"(a record of {len(record)} bytes that is not one of tse's)"


def url_fingerprint(key: str) -> bytes:
    """What the seen set and the docID records store for a normalized URL."""
    return hashlib.blake2b(key.encode("utf-8", "surrogateescape"), digest_size=16).digest()


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"
