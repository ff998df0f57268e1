"""A page directory edited by hand, or written by another program: a catalog row, a catalog meta value
or a ``.tse-gone`` that this program does not write is refused in one line naming the file (and the
row's docID), exit 2, before anything is written or fetched.  (It was a 50-line asyncio traceback
once the crawl had begun, which left a crawl state that each --resume failed on the same way.)  The
refusals come before Scrapy starts: ``tse crawl`` is asked in the test's process (``cli.main``,
tests/support/inprocess.py); the crawl they refuse to update is a real one."""

from __future__ import annotations

import json
import shutil
import sqlite3
from contextlib import closing
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import crawl_site
from tests.support.inprocess import crawl_here
from tests.support.pages import snapshot
from tests.support.sitegen import write_site
from tse_scrapy.resume.statedb import CrawlStateDB
from tse_scrapy.update.catalog import KnownPage, known_page

SITE = {"index.html": ["a.html", "b.html", "c.html"], "a.html": [], "b.html": [], "c.html": []}


def _edit_record(path, doc_id, edit):
    with closing(sqlite3.connect(path)) as connection, connection:
        (record,) = connection.execute("SELECT record FROM pages WHERE doc_id = ?", (doc_id,)).fetchone()
        connection.execute("UPDATE pages SET record = ? WHERE doc_id = ?", (edit(record), doc_id))


def _set_meta(path, key, value):
    with closing(sqlite3.connect(path)) as connection, connection:
        connection.execute("UPDATE meta SET value = ? WHERE key = ?", (value, key))


def _with(**changed):
    return lambda record: json.dumps({**json.loads(record), **changed})


# (what is damaged, the refusal after "cannot read the page catalog: CATALOG: ", the options)
CATALOG_DAMAGE = [
    ("record", 3, lambda _: "garbage", "docID 3: its record is not JSON", ()),
    ("record", 3, _with(old=1), "docID 3: its record has a field this program does not write: 'old'", ()),
    (
        "record",
        2,
        _with(visits="many"),
        """docID 2: its record's 'visits' is not a count: "many\"""",
        ("--order", "priority"),
    ),
    ("record", 2, lambda _: "[1, 2]", "docID 2: its record is not a JSON object", ()),
    ("record", 4, _with(depth=-1), "docID 4: its record's 'depth' is not a depth (a whole number from 0): -1", ()),
    ("record", 4, _with(digest="xyz"), """docID 4: its record's 'digest' is not a digest (hex): "xyz\"""", ()),
    ("record", 4, _with(doc_id=5), "docID 4: its record names another page than its row", ()),
    (
        "record",
        1,
        lambda r: json.dumps({k: v for k, v in json.loads(r).items() if k != "url"}),
        "docID 1: its record has no 'url'",
        (),
    ),
    ("meta", "arguments", "{broken", "meta 'arguments': not JSON", ()),
    ("meta", "arguments", "[1]", "meta 'arguments': not a JSON object", ()),
    ("meta", "finished", '{"update": true}', "meta 'finished': its 'outputs' are not file names", ("--resume",)),
]


def test_a_damaged_catalog_or_gone_list_is_refused_in_one_line_before_anything_is_written(tmp_path, serve):
    site = write_site(tmp_path / "site", SITE)
    server = serve(site.root)
    crawled = tmp_path / "crawled"
    crawled.mkdir()
    assert crawl_site(server, crawled, 1, "--validators").returncode == 0
    copies = tmp_path / "copies"
    copies.mkdir()

    def refused(number: int, options: tuple, message: str, damage) -> None:
        out = copies / str(number)
        shutil.copytree(crawled, out)
        damage(out)
        before, hits = snapshot(copies), len(server.hits)
        done = crawl_here(server, out, 1, "--update", *options)
        assert (done.returncode, done.stderr.decode()) == (2, f"tse crawl: {message(out)}\n"), options
        assert snapshot(copies) == before and len(server.hits) == hits  # no .tse-state.sqlite left, nothing fetched

    for number, (table, key, value, reason, options) in enumerate(CATALOG_DAMAGE):
        if table == "record":

            def damage(out, key=key, value=value):
                _edit_record(out / ".tse-pages.sqlite", key, value)

        else:

            def damage(out, key=key, value=value):
                _set_meta(out / ".tse-pages.sqlite", key, value)

        refused(
            number,
            options,
            lambda out, reason=reason: f"cannot read the page catalog: {out}/.tse-pages.sqlite: {reason}",
            damage,
        )

    # A gone list that is no list of docIDs, which tse index refuses too.
    refused(
        len(CATALOG_DAMAGE) + 1,
        (),
        lambda out: f"cannot update: {out}/.tse-gone: not a list of docIDs, one a line",
        lambda out: (out / ".tse-gone").write_text("25\nabc\n"),
    )

    # An update stopped before it had read the catalog (its state made, not the pages before it):
    # --update --resume reads the catalog then, and refuses it the same way; the state stays.
    def stopped_at_its_start(out):
        _edit_record(out / ".tse-pages.sqlite", 3, lambda _: "garbage")
        with closing(sqlite3.connect(out / ".tse-pages.sqlite")) as catalog:
            (arguments,) = catalog.execute("SELECT value FROM meta WHERE key = 'arguments'").fetchone()
        outputs = json.dumps({"warc": None, "record": None, "changes": None})
        state = CrawlStateDB(out / ".tse-state.sqlite")
        state.set_arguments(json.loads(arguments), {"catalog": "update", "outputs": outputs})
        state.close()
        # Out of WAL mode: read, it is then left as it is (no -shm file made), for the snapshot.
        with closing(sqlite3.connect(out / ".tse-state.sqlite")) as written:
            written.execute("PRAGMA journal_mode=DELETE").fetchall()

    refused(
        len(CATALOG_DAMAGE),
        ("--resume",),
        lambda out: f"cannot read the page catalog: {out}/.tse-pages.sqlite: docID 3: its record is not JSON",
        stopped_at_its_start,
    )


# -- the reader, on its own ---------------------------------------------------------------------

PAGE = KnownPage(3, "http://h/a.html", 1, "00ff" * 8)
texts = st.none() | st.text(max_size=20)
times = st.floats(min_value=0, max_value=4e9, allow_nan=False)
pages = st.builds(
    KnownPage,
    doc_id=st.integers(1, 10**9),
    url=st.text(min_size=1, max_size=40),
    depth=st.integers(0, 100),
    digest=st.binary(min_size=1, max_size=32).map(bytes.hex),
    live=st.booleans(),
    etag=texts,
    last_modified=texts,
    fetched=texts,
    visits=st.integers(0, 10**6),
    changes=st.integers(0, 10**6),
    first_seen=times,
    last_visit=times,
    last_change=st.none() | times,
    lastmod=texts,
    redirects=st.lists(st.text(max_size=20), max_size=3).map(tuple),
)


@given(pages)
def test_every_page_as_the_catalog_writes_it_reads_back_the_same(page):
    assert known_page(page.doc_id, page.url, json.dumps(page.record())) == page


@given(pages, st.sampled_from(["doc_id", "url", "depth", "digest", "live", "visits", "first_seen", "redirects"]))
def test_a_field_of_another_type_is_refused(page, name):
    record = {**page.record(), name: {"a": "dict"}}
    with pytest.raises(ValueError, match=f"its record's '{name}' is not "):
        known_page(page.doc_id, page.url, json.dumps(record))


@pytest.mark.parametrize(
    ("record", "problem"),
    [
        (PAGE.record(), None),
        ({"doc_id": 3, "url": "http://h/a.html", "depth": 1, "digest": "ab"}, None),  # a catalog of an older version
        ({**PAGE.record(), "redirects": ["http://h/b"]}, None),
        ({**PAGE.record(), "last_change": 12}, None),  # a whole number of seconds
        ({**PAGE.record(), "live": 1}, "its record's 'live' is not true or false: 1"),
        ({**PAGE.record(), "visits": True}, "its record's 'visits' is not a count: true"),
        ({**PAGE.record(), "visits": -1}, "its record's 'visits' is not a count: -1"),
        ({**PAGE.record(), "digest": "ABCD"}, """its record's 'digest' is not a digest (hex): "ABCD\""""),
        ({**PAGE.record(), "digest": "abc"}, """its record's 'digest' is not a digest (hex): "abc\""""),
        ({**PAGE.record(), "digest": ""}, """its record's 'digest' is not a digest (hex): \"\""""),
        ({**PAGE.record(), "redirects": [1]}, "its record's 'redirects' is not a list of URLs: [1]"),
        ({**PAGE.record(), "etag": 5}, "its record's 'etag' is not text or null: 5"),
        ({**PAGE.record(), "url": "http://h/b.html"}, "its record names another page than its row"),
        ({k: v for k, v in PAGE.record().items() if k != "digest"}, "its record has no 'digest'"),
        ({**PAGE.record(), "old": None}, "its record has a field this program does not write: 'old'"),
        ("garbage", "its record is not JSON"),
        ("[" * 100_000, "its record is not JSON"),  # past Python's recursion limit (a review's find)
        ('{"redirects": ' + "[" * 100_000, "its record is not JSON"),
        ("null", "its record is not a JSON object"),
        (b"{}", "its record is not text"),
    ],
)
def test_the_catalog_reader_takes_only_what_this_program_writes(record, problem):
    text = json.dumps(record) if isinstance(record, dict) else record
    if problem is None:
        expected = replace(PAGE, **{k: v for k, v in record.items() if k != "redirects"})
        assert known_page(3, "http://h/a.html", text) == replace(expected, redirects=tuple(record.get("redirects", ())))
    else:
        with pytest.raises(ValueError) as raised:
            known_page(3, "http://h/a.html", text)
        assert str(raised.value) == problem
