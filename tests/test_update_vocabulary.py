"""`tse index --update` leaves the search index's vocabulary (the words for typo tolerance and "Did
you mean", each with how the first page holding it spells it) as a full build writes it: the words
of pages changed or gone leave it, and a word whose first page changed is spelled as its new first
page spells it, a page the update did not read among them."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.inprocess import tse_ok_here
from tests.support.pages import write_pages
from tests.support.searchrows import opened, search_rows
from tse_scrapy.index.engine import QueryEngine
from tse_scrapy.index.storage import IndexReader
from tse_scrapy.rules.files import pagedir

# Words pages spell in several ways that fold alike (accents, case, ß, a final sigma), in several scripts.
# fmt: off
SPELLINGS = [
    "Résumé", "resume", "RÉSUMÉ", "résume", "naïve", "naive", "Straße", "strasse", "STRASSE", "cafés", "cafes",
    "λόγος", "ΛΌΓΟΣ", "λογος", "tiếng", "tieng", "ёлочка", "елочка", "orchard", "Orchard", "نرم‌افزار",
    "ソフトウェア", "apples", "quince",
]
# fmt: on


def page(seed: int, words: int = 8) -> bytes:
    rng = random.Random(seed)
    title = " ".join(rng.choice(SPELLINGS) for _ in range(2))
    text = " ".join(rng.choice(SPELLINGS) for _ in range(words))
    return f"<html><head><title>{title}</title></head><body><p>{text}</p></body></html>".encode()


def tse(*args: object) -> None:
    """`tse ...` in this process; it must succeed and say nothing."""
    said = tse_ok_here(*args)
    assert said == "", said


def vocabulary(indexfile: Path) -> list[tuple]:
    with opened(indexfile) as db:
        return db.execute("SELECT word, spelling, doc_id FROM vocabulary ORDER BY word").fetchall()


def updated_and_fresh(pages: Path, index: Path, fresh: Path) -> None:
    """*index* updated, and the oracle: a full build of *pages* into *fresh* (no workers: the index is the
    same whatever the workers, tests/test_search_index.py)."""
    tse("index", pages, index, "--update")
    tse("index", pages, fresh, "--jobs", "1")


def test_a_word_whose_first_page_lost_it_is_spelled_as_the_next_page_holding_it(tmp_path):
    pages = write_pages(
        tmp_path / "pages",
        {
            1: ("http://h/1.html", 0, "<title>Résumé</title>Straße λόγος".encode()),
            2: ("http://h/2.html", 1, b"<title>other</title>apples"),
            3: ("http://h/3.html", 1, b"<title>resume</title>strasse"),
            4: ("http://h/4.html", 1, "<title>résume</title>STRASSE ΛΌΓΟΣ orchard".encode()),
        },
    )
    tse("index", pages, tmp_path / "index")
    assert ("resume", "résumé", 1) in vocabulary(tmp_path / "index")
    # Page 1 no longer holds its words, page 4 goes: the words' first pages are 3 (not read by the
    # update) and none; page 2 gains "orchard", before page 4 held it.
    write_pages(pages, {1: ("http://h/1.html", 0, b"<title>changed</title>quince")})
    write_pages(pages, {2: ("http://h/2.html", 1, b"<title>other</title>apples Orchard")})
    pagedir.write_gone(pages, [4])
    updated_and_fresh(pages, tmp_path / "index", tmp_path / "fresh")
    assert vocabulary(tmp_path / "index") == vocabulary(tmp_path / "fresh")
    assert vocabulary(tmp_path / "index") == [
        ("apples", "apples", 2),
        ("changed", "changed", 1),
        ("orchard", "orchard", 2),
        ("other", "other", 2),
        ("quince", "quince", 1),
        ("resume", "resume", 3),
        ("strasse", "strasse", 3),
    ]
    assert search_rows(tmp_path / "index") == search_rows(tmp_path / "fresh")
    # "Did you mean" offers what pages hold now, as they spell it.
    engine = QueryEngine(pages, IndexReader(tmp_path / "index"))
    assert engine.answer("resumee", "relevance").corrections == {"resumee": "resume"}
    assert engine.answer("λογοςς", "relevance").corrections == {}


# A round of changes: (what, docID, seed), each page file written at most once a round.
CHANGES = st.lists(
    st.tuples(st.sampled_from(["change", "add", "gone", "back"]), st.integers(1, 6), st.integers(0, 10**6)),
    max_size=5,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=st.lists(st.integers(0, 10**6), min_size=1, max_size=6), rounds=st.lists(CHANGES, min_size=1, max_size=3))
def test_any_changes_leave_the_vocabulary_of_a_full_build(first, rounds):
    with tempfile.TemporaryDirectory() as temporary:
        root = Path(temporary)
        pages = write_pages(
            root / "pages", {doc_id: (f"http://h/{doc_id}.html", 1, page(seed)) for doc_id, seed in enumerate(first, 1)}
        )
        tse("index", pages, root / "index", "--jobs", "1")  # (set-up: no workers)
        last, gone = len(first), set()
        for number, changes in enumerate(rounds):
            touched: set[int] = set()
            for kind, doc_id, seed in changes:
                if kind == "change" and doc_id <= last and doc_id not in touched:
                    write_pages(pages, {doc_id: (f"http://h/{doc_id}.html", 1, page(seed, seed % 12))})
                    touched.add(doc_id)
                elif kind == "add":
                    last += 1
                    write_pages(pages, {last: (f"http://h/{last}.html", 2, page(seed))})
                    touched.add(last)
                elif kind == "gone" and doc_id <= last:
                    gone.add(doc_id)
                elif kind == "back":
                    gone.discard(doc_id)
            pagedir.write_gone(pages, gone)
            updated_and_fresh(pages, root / "index", root / f"fresh{number}")
            assert vocabulary(root / "index") == vocabulary(root / f"fresh{number}")
            assert search_rows(root / "index") == search_rows(root / f"fresh{number}")
