"""``--migrate``: a crawl begun when requests were stored pickled (crawl format 2) is
converted to requests as data (format 3), and no pickle is ever run.

Each entry of the frontier and of the leased requests is read by
``rules/files/legacyentries.read_legacy_request``, which checks every opcode before
anything is loaded and loads only plain values (so a planted pickle runs
nothing), then checked as a request of the tse spider and written again as
data (``rules/files/frontierentries``).  An entry that cannot be converted goes to
the quarantine.  An entry that is data already stays (a conversion cut short
can be run again).  Every lease
is handed back (the workers that held them are stopped), and the crawl's
format becomes 3.  Only when no worker is alive, and one worker at a time.
No Scrapy import: ``tse crawl`` does this before Scrapy starts.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from ..rules.crawling.crawlargs import ArgumentError
from ..rules.files.frontierentries import (
    FINGERPRINT_SIZE,
    META_TYPES,
    EntryError,
    RequestData,
    decode_entry,
    encode_entry,
)
from ..rules.files.legacyentries import LegacyEntryError, read_legacy_request
from .store import CRAWL_FORMAT, RedisCrawl

logger = logging.getLogger(__name__)

MIGRATION_LOCK_SECONDS = 3600


def migrate_crawl(crawl: RedisCrawl, parameters: dict[str, Any]) -> dict[str, Any]:
    """Convert *crawl* (format 2, *parameters* its record) to format 3; return its new record.
    ArgumentError (one line) if a worker is alive or another is migrating it."""
    server, keys = crawl.server, crawl.keys
    alive = crawl.status()["workers"]
    if alive:
        raise ArgumentError(f"crawl {crawl.name} has {alive} worker(s) alive: stop them, then --migrate")
    lock = keys.params + ":migrating"
    if not server.set(lock, 1, nx=True, ex=MIGRATION_LOCK_SECONDS):
        raise ArgumentError(f"another worker is converting crawl {crawl.name} (--migrate): join it once it is done")
    try:
        converted = quarantined = 0
        for entry, score in list(server.zscan_iter(keys.frontier, count=1000)):
            new, why = converted_entry(entry)
            pipe = server.pipeline()
            pipe.zrem(keys.frontier, entry)
            if new is not None:
                pipe.zadd(keys.frontier, {new: score})
            pipe.execute()
            if new is None:
                crawl.quarantine(keys.frontier, why, entry)
            converted += new is not None
            quarantined += new is None
        for lease, entry in list(server.hscan_iter(keys.leased, count=1000)):
            new, why = converted_entry(entry)
            if new is not None:
                server.hset(keys.leased, lease, new)
                converted += 1
                continue
            crawl.quarantine(keys.leased, why, entry)
            quarantined += 1
            _drop_lease(crawl, lease)
        # Their workers are stopped: every page leased returns to the frontier at the next lease.
        leases = server.zrange(keys.leases, 0, -1)
        if leases:
            server.zadd(keys.leases, dict.fromkeys(leases, 0), xx=True)
        # The last answers kept for settles sent again hold pickles too.
        settles = list(server.scan_iter(match=keys.settle_prefix + "*", count=1000))
        if settles:
            server.delete(*settles)
        parameters = {**parameters, "format": CRAWL_FORMAT}
        server.set(keys.params, json.dumps(parameters))
    finally:
        server.delete(lock)
    logger.warning(
        "Crawl %s converted to requests stored as data: %d entries converted, %d moved to %s",
        crawl.name,
        converted,
        quarantined,
        keys.quarantine,
    )
    return parameters


def converted_entry(entry: bytes) -> tuple[bytes | None, str]:
    """The format-3 entry for a format-2 *entry* (fingerprint + pickle), or None and why not.
    An entry that is format 3 already (a conversion cut short, run again) stays as it is."""
    try:
        decode_entry(entry)
        return entry, ""
    except EntryError:
        pass
    try:
        fields = read_legacy_request(entry[FINGERPRINT_SIZE:])
        headers = fields.get("headers", {})
        request = RequestData(
            url=fields["url"],
            method=fields.get("method", "GET"),
            headers=tuple((name, value) for name, values in headers.items() for value in values),
            body=fields.get("body", b""),
            meta={key: value for key, value in fields.get("meta", {}).items() if key in META_TYPES},
            priority=fields.get("priority", 0),
            dont_filter=fields.get("dont_filter", False),
            callback=fields.get("callback"),
            errback=fields.get("errback"),
        )
        if len(entry) < FINGERPRINT_SIZE:
            raise EntryError("shorter than a fingerprint")
        new = encode_entry(entry[:FINGERPRINT_SIZE], request)
        decode_entry(new)  # every check a worker makes, now
    except (LegacyEntryError, EntryError, TypeError, ValueError) as error:
        return None, f"not a request of an earlier version ({error})"
    return new, ""


def _drop_lease(crawl: RedisCrawl, lease: bytes) -> None:
    """A leased entry that was no request: its lease goes (the docID reserved for its first
    16 bytes stays, as a worker leaves it: store.quarantine_leftovers frees it at the end)."""
    keys = crawl.keys
    pipe = crawl.server.pipeline()
    pipe.zrem(keys.leases, lease)
    pipe.zrem(keys.lease_scores, lease)
    pipe.hdel(keys.leased, lease)
    pipe.execute()
