"""`tse index`'s memory does not grow with the distinct words of a range of pages: the vocabulary for
typo tolerance a range gathers is written in pieces of VOCABULARY_WORDS words (as its postings are
written in runs of RUN_WORDS), which the search index's writer adds in order, a word's first spelling
kept, and the index answers as one built with the range's vocabulary held whole."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from tests.support.o_hostile import write_random_word_pages
from tests.support.searchrows import opened, search_rows
from tse_scrapy.index.engine import QueryEngine
from tse_scrapy.index.indexer import write_index_files
from tse_scrapy.index.storage import IndexReader

PAGES, WORDS = 50, 1_000  # 50,000 distinct random words in one range
SMALL = 2_000  # the words held before a piece (and a run) is written, in these tests


@pytest.fixture(scope="module")
def hostile_pages(tmp_path_factory):
    """Pages of random 9-letter words, and words met on several of them spelled otherwise (accents):
    "Gâteaux" first on page 2, "gateaux" on page 40 (after pieces were written), "crèmes" only
    on page 50."""
    directory = write_random_word_pages(tmp_path_factory.mktemp("hostile") / "pages", PAGES, WORDS)
    for doc_id, words in ((2, "G\u00e2teaux".encode()), (40, b"gateaux"), (50, "cr\u00e8mes".encode())):
        page = directory / str(doc_id)
        page.write_bytes(page.read_bytes().replace(b"<p>", b"<p>" + words + b" ", 1))
    return directory


@pytest.fixture(scope="module")
def held_whole(hostile_pages, tmp_path_factory):
    """The pages indexed with the range's vocabulary held whole (no piece written)."""
    indexfile = tmp_path_factory.mktemp("whole") / "index"
    write_index_files(hostile_pages, indexfile, jobs=1, run_words=SMALL, vocabulary_words=10 * PAGES * WORDS)
    return indexfile


def test_a_ranges_vocabulary_is_not_held_whole(hostile_pages, tmp_path):
    # 50,000 words, each with its spelling and page, held to the range's end (and copied to give back)
    # took 13.9 MB; in pieces of 2,000 the pages are read, and their words given to the search index, in
    # 3.6 MB, whatever the words.  (Until the last merge: ``on_end``, where the FTS5 tables' segments
    # are merged by SQLite, whose memory is its own.)
    peaks = []
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        write_index_files(
            hostile_pages,
            tmp_path / "index",
            jobs=1,
            run_words=SMALL,
            vocabulary_words=SMALL,
            on_end=lambda _: (peaks.append(tracemalloc.get_traced_memory()[1] - before), tracemalloc.stop()),
        )
    finally:
        tracemalloc.stop()
    assert peaks[0] < 8_000_000, peaks
    with opened(tmp_path / "index") as db:
        assert db.execute("SELECT count(*) FROM vocabulary").fetchone()[0] >= PAGES * WORDS


@pytest.mark.parametrize("jobs, run_pages, vocabulary_words", [(2, 20, SMALL), (1, 7, 999)])
def test_a_vocabulary_written_in_pieces_gives_the_same_index(
    hostile_pages, held_whole, tmp_path, jobs, run_pages, vocabulary_words
):
    indexfile = tmp_path / "index"
    write_index_files(
        hostile_pages, indexfile, jobs=jobs, run_pages=run_pages, run_words=SMALL, vocabulary_words=vocabulary_words
    )
    # Every table of the search index, row for row (the vocabulary's: each word's first spelling and page).
    assert search_rows(indexfile) == search_rows(held_whole)
    assert indexfile.read_bytes() == held_whole.read_bytes()
    with opened(indexfile) as db:
        spelled = dict(
            db.execute("SELECT word, spelling || ' ' || doc_id FROM vocabulary WHERE word IN ('gateaux', 'cremes')")
        )
        count = db.execute("SELECT count(*) FROM vocabulary").fetchone()[0]
    assert spelled["gateaux"] == "g\u00e2teaux 2"
    assert spelled["cremes"] == "cr\u00e8mes 50"
    assert count >= PAGES * WORDS


def test_typos_are_corrected_to_the_same_words(hostile_pages, held_whole, tmp_path):
    indexfile = tmp_path / "index"
    write_index_files(hostile_pages, indexfile, jobs=2, run_pages=20, run_words=SMALL, vocabulary_words=SMALL)
    # A word of the last page, of a page in the middle, and of the first, each with a letter changed.
    words = [_words_of(hostile_pages / str(doc_id))[index] for doc_id, index in ((PAGES, -1), (31, 500), (1, 3))]
    queries = [word[:4] + ("a" if word[4] != "a" else "b") + word[5:] for word in words] + ["cremess"]
    engines = [QueryEngine(hostile_pages, IndexReader(built)) for built in (indexfile, held_whole)]
    for query, word, doc_id in zip(queries, [*words, "cr\u00e8mes"], (PAGES, 31, 1, 50), strict=True):
        answers = [engine.answer(query, "relevance") for engine in engines]
        assert answers[0].corrections == answers[1].corrections == {query: word}
        assert answers[0].ranked == answers[1].ranked and doc_id in [found for found, _ in answers[0].ranked]


def _words_of(page: Path) -> list[str]:
    return page.read_bytes().split(b"<p>", 1)[1].split(b"</p>", 1)[0].decode().split()
