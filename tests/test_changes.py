"""The rules of an update: what changed (rules/crawling/changes.py), how likely a page is
to change, and the catalog after an update (update/merge.py)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tse_scrapy.rules.crawling.changes import PRIOR, Version, change_probability, classify
from tse_scrapy.update.catalog import KnownPage
from tse_scrapy.update.merge import merge

A, B = Version(1, b"\x01"), Version(1, b"\x02")


@pytest.mark.parametrize(
    "before, after, change",
    [
        (None, A, "new"),
        (A, None, "gone"),
        (A, A, "unchanged"),
        (A, B, "changed"),
        (A, Version(2, b"\x01"), "changed"),  # the same body at another depth
        (None, None, None),  # gone before and after: not part of the update
    ],
)
def test_classify(before, after, change):
    assert classify(before, after) == change


@pytest.mark.parametrize(
    "visits, changes, since_last, interval, probability",
    [
        (0, 0, 1, 1, PRIOR),
        (1, 0, 5, 1, PRIOR),  # one visit says nothing of change
        (4, 0, 1, 1, 0.0),  # never changed in three intervals
        (4, 3, 1, 1, 1 - 0.5 / 3.5),  # changed every time
        (4, 1, 1, 1, 1 - 2.5 / 3.5),
        (4, 3, 2, 1, 1 - (0.5 / 3.5) ** 2),  # twice the usual interval since the last visit
        (4, 3, 7, 0, 1 - 0.5 / 3.5),  # visits in one instant: one interval
        (4, 9, 1, 1, 1 - 0.5 / 3.5),  # more changes than intervals: capped
        (3, 0, 4, 2.2250738585072014e-308, 0.0),  # never changed, an interval so short the elapsed is infinite
        (3, 1, 4, 2.2250738585072014e-308, 1.0),  # changed once: certainly by now
    ],
)
def test_change_probability(visits, changes, since_last, interval, probability):
    assert math.isclose(change_probability(visits, changes, since_last, interval), probability, abs_tol=1e-12)


@given(
    st.integers(0, 1000),
    st.integers(0, 1000),
    st.floats(0, 1e7, allow_nan=False),
    st.floats(0, 1e7, allow_nan=False),
)
def test_a_probability_grows_with_changes_and_time(visits, changes, since_last, interval):
    p = change_probability(visits, changes, since_last, interval)
    assert 0.0 <= p <= 1.0
    assert change_probability(visits, changes + 1, since_last, interval) >= p
    assert change_probability(visits, changes, since_last * 2, interval) >= p - 1e-12


def page(doc_id, url, depth=1, digest="01", live=True, **fields):
    return KnownPage(doc_id, url, depth, digest, live=live, **fields)


def saved(doc_id, url, depth=1, digest="01", status=200, revisit=False, etag=None):
    return {
        "doc_id": doc_id,
        "url": url,
        "depth": depth,
        "digest": digest,
        "status": status,
        "saved": True,
        "revisit": revisit,
        "etag": etag,
        "last_modified": None,
        "fetched": "2026-11-30T00:00:00Z" if status == 200 else None,
    }


def failed(doc_id, url, status):
    return {"doc_id": doc_id, "url": url, "status": status, "saved": False}


BEFORE = {
    1: page(1, "u1", 0, etag='"a"'),
    2: page(2, "u2", digest="02"),
    3: page(3, "u3"),
    4: page(4, "u4"),
    5: page(5, "u5"),
    6: page(6, "u6", live=False),  # gone before
}


def test_merge_a_complete_update():
    visits = {
        1: saved(1, "u1", 0, status=304),
        2: saved(2, "u2", digest="99"),
        3: failed(3, "u3", 404),
        4: failed(4, "u4", 503),
        7: saved(7, "u7"),
    }  # 5: not reached; 6: still gone
    pages, changes = merge(BEFORE, visits, complete=True, now=100.0)
    assert [(c["docid"], c["change"], c["status"]) for c in changes] == [
        (1, "unchanged", 304),
        (2, "changed", 200),
        (3, "gone", 404),
        (4, "unchanged", 503),  # a failure that says nothing of the page keeps it
        (5, "gone", None),  # no longer reachable
        (7, "new", 200),
    ]
    after = {p.doc_id: p for p in pages}
    assert [d for d, p in after.items() if not p.live] == [3, 5, 6]
    assert after[1].etag == '"a"' and after[1].visits == 2 and after[1].changes == 0  # a 304 keeps the validators
    assert after[2].digest == "99" and after[2].changes == 1 and after[2].last_change == 100.0
    assert after[4] == BEFORE[4]
    assert after[7].first_seen == 100.0 and after[7].visits == 1


def test_merge_a_partial_update_takes_nothing_unvisited_for_gone():
    pages, changes = merge(BEFORE, {2: saved(2, "u2", digest="99")}, complete=False, now=1.0)
    assert [(c["docid"], c["change"], c["status"]) for c in changes] == [
        (1, "unchanged", None),
        (2, "changed", 200),
        (3, "unchanged", None),
        (4, "unchanged", None),
        (5, "unchanged", None),
    ]
    assert [p.doc_id for p in pages if not p.live] == [6]


def test_merge_revives_a_gone_page_and_drops_unreached_revisits():
    visits = {6: saved(6, "u6"), 5: saved(5, "u5", revisit=True)}
    pages, changes = merge(BEFORE, visits, complete=True, unreached=frozenset({5}), now=1.0)
    kinds = {c["docid"]: c["change"] for c in changes}
    assert kinds[6] == "new" and kinds[5] == "gone"
    assert {p.doc_id for p in pages if not p.live} == {1, 2, 3, 4, 5}


def test_merge_takes_a_page_robots_txt_forbids_for_gone_and_says_why():
    visits = {
        2: {**failed(2, "u2", None), "reason": "robots.txt"},  # the site's robots.txt forbids it now
        3: failed(3, "u3", None),  # no answer (a timeout): kept
        4: failed(4, "u4", 410),
    }
    _, changes = merge({n: BEFORE[n] for n in (2, 3, 4, 5)}, visits, complete=True, now=1.0)
    assert [(c["docid"], c["change"], c["status"], c.get("reason")) for c in changes] == [
        (2, "gone", None, "robots.txt"),
        (3, "unchanged", None, None),
        (4, "gone", 410, "http 410"),
        (5, "gone", None, "not reached"),
    ]
