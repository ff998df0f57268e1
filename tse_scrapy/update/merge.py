"""The end of an update: from the pages before and what the crawl learnt, the
catalog after and the list of changes.  No Scrapy import.

A *visit* is what the crawl recorded of one docID: saved (its depth, digest,
HTTP status 200 or 304, validators), or failed (its HTTP status, or None
without an answer; ``reason`` ROBOTS_TXT when the site's robots.txt forbids it, REDIRECT_LOOP when
its redirects lead back to it; ``redirect``, the URL it redirects to, when it answered with a redirect
to another page of the crawl).
A known page whose fetch failed for a while is saved from its copy: its visit
is saved, with the failure's status and ``kept``, why it failed.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..rules.crawling.changes import CHANGED, GONE, GONE_STATUSES, Version, classify
from .catalog import KnownPage

ROBOTS_TXT = "robots.txt"  # a failed visit's reason: the site's robots.txt forbids the page
# Why a page is gone, in the changes file (``reason``): "http 404", "http 410", ROBOTS_TXT, or
UNREACHED = "not reached"  # no page of the crawl links to it within the depth any more
KEPT = "kept: "  # a live page's reason, before why its fetch failed for a while ("kept: http 503")
REDIRECTS = "redirects to "  # a gone page's reason, before the URL of the page it redirects to now
REDIRECT_LOOP = "redirect loop"  # its redirects lead back to it: a fresh crawl cannot fetch it


def merge(
    before: dict[int, KnownPage],
    visits: dict[int, dict[str, Any]],
    *,
    complete: bool,
    unreached: frozenset[int] = frozenset(),
    now: float,
) -> tuple[list[KnownPage], list[dict[str, Any]]]:
    """The catalog after the crawl, and one change record per page live before or after, by docID.

    *complete*: the crawl reached every page it could (no page limit), so a
    page live before and not saved now is gone.  *unreached*: docIDs saved
    by revisiting them directly that no page of the crawl links to (gone
    when *complete*)."""
    pages: list[KnownPage] = []
    changes: list[dict[str, Any]] = []
    for doc_id in sorted(before.keys() | visits.keys()):
        old, visit = before.get(doc_id), visits.get(doc_id)
        was = old.version if old is not None and old.live else None
        reason = UNREACHED
        if visit is not None and visit["saved"] and not (complete and doc_id in unreached):
            now_is: Version | None = Version(visit["depth"], bytes.fromhex(visit["digest"]))
        elif visit is not None and visit["saved"]:
            now_is = None  # no longer linked from the crawl
        elif visit is not None and visit["status"] in GONE_STATUSES:
            now_is, reason = None, f"http {visit['status']}"
        elif visit is not None and visit.get("redirect"):
            now_is, reason = None, REDIRECTS + visit["redirect"]  # a fresh crawl saves that page instead
        elif visit is not None and visit.get("reason") in (ROBOTS_TXT, REDIRECT_LOOP):
            now_is, reason = None, visit["reason"]  # a fresh crawl would not fetch it, or could not
        elif visit is None and complete:
            now_is = None  # no longer reachable within the depth
        else:
            now_is = was  # a failure that says nothing of the page, or not revisited: kept
        change = classify(was, now_is)
        if change is not None:
            entry = {
                "docid": doc_id,
                "url": visit["url"] if visit is not None else old.url,
                "change": change,
                "status": visit["status"] if visit is not None else None,
            }
            if change == GONE:
                entry["reason"] = reason
            elif visit is not None and visit.get("kept"):
                entry["reason"] = KEPT + visit["kept"]
            changes.append(entry)
        pages.append(_after(old, visit, now_is is not None, change, now))
    return pages, changes


def _after(
    old: KnownPage | None, visit: dict[str, Any] | None, live: bool, change: str | None, now: float
) -> KnownPage:
    if visit is None or not visit["saved"]:
        assert old is not None  # a failed visit is recorded only for a known page
        return replace(old, live=live)
    if visit.get("kept") and old is not None:
        # Its saved copy stood in for it (a failure for a while): no visit in its history, the same
        # validators; only the depth it was found at may differ.  The redirects known to lead to it
        # stay (followed as they were, when they could not be fetched either).
        redirects = tuple(dict.fromkeys([*old.redirects, *visit.get("redirects", ())]))
        return replace(old, depth=visit["depth"], digest=visit["digest"], live=live, redirects=redirects)
    fields = {
        "url": visit["url"],
        "depth": visit["depth"],
        "digest": visit["digest"],
        "live": live,
        "last_visit": now,
        "redirects": tuple(visit.get("redirects", ())),
    }
    if visit.get("lastmod"):  # a sitemap named the page this time
        fields["lastmod"] = visit["lastmod"]
    if visit["status"] == 304:
        # A 304 may repeat the validators or not: those it gives replace the old ones.
        fields.update({name: visit[name] for name in ("etag", "last_modified") if visit[name] is not None})
    else:
        fields.update(etag=visit["etag"], last_modified=visit["last_modified"], fetched=visit["fetched"])
    if old is None:
        return KnownPage(doc_id=visit["doc_id"], first_seen=now, **fields)
    changed = change == CHANGED
    return replace(
        old,
        visits=old.visits + 1,
        changes=old.changes + changed,
        last_change=now if changed else old.last_change,
        **fields,
    )
