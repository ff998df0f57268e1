"""``tse index --update`` holds the words of the pages new or changed in memory: past UPDATE_BYTES of
them it indexes every page instead, in bounded memory (a reviewer's find: 3,000 pages of 2,000 words,
74 % of them changed, took 1.77 GB where a full build takes 146 MB)."""

import os
import random
import string

from tests.conftest import run_tse
from tests.support.multilingual import write_fixture_directory
from tse_scrapy.index import update
from tse_scrapy.index.update import update_index


def _files(directory):
    return {name: (directory / name).read_bytes() for name in sorted(os.listdir(directory))}


def _indexed(tmp_path):
    """The multilingual fixture's pages indexed: their directory, the index's, and its files."""
    pages = write_fixture_directory(tmp_path / "pages")
    out = tmp_path / "out"
    out.mkdir()
    assert run_tse("index", pages, out / "index").returncode == 0
    return pages, out, _files(out)


def test_an_update_holding_more_words_than_it_keeps_in_memory_changes_nothing_and_says_why(tmp_path, monkeypatch):
    pages, out, before = _indexed(tmp_path)
    for doc_id in (2, 3, 5):
        (pages / str(doc_id)).write_bytes((pages / str(doc_id)).read_bytes() + b" <p>orchard</p>")
    monkeypatch.setattr(update, "UPDATE_BYTES", 5_000)
    problem = update_index(pages, out / "index")
    assert problem is not None and "MB of words, more than an update keeps in memory (0.0 MB)" in problem, problem
    assert "its 3 pages new or changed read so far hold about " in problem
    assert _files(out) == before  # nothing written: the caller indexes every page instead
    # Under the bound, the same update is made.
    monkeypatch.setattr(update, "UPDATE_BYTES", 10_000_000)
    assert update_index(pages, out / "index") is None
    assert _files(out) != before


def test_an_update_whose_pages_went_counts_their_words_and_their_share(tmp_path, monkeypatch):
    # A review's find: pages gone were counted neither in the share that makes a full build the
    # better way nor in the words held, which the update reads from the store (3,000 pages of 2,000
    # words, all but 200 gone: 791 MB).
    pages, out, before = _indexed(tmp_path)
    count = len([name for name in os.listdir(pages) if name.isdigit()])
    (pages / ".tse-gone").write_text("".join(f"{doc_id}\n" for doc_id in range(2, count + 1)))
    monkeypatch.setattr(update, "FULL_BUILD_PAGES", 2)
    problem = update_index(pages, out / "index")
    assert problem == (
        f"0 of its 1 page files are new or changed and {count - 1:,} of its {count:,} pages gone,"
        " which a full build indexes sooner"
    )
    assert _files(out) == before
    # A few gone, under the share: their words counted with those held.
    (pages / ".tse-gone").write_text("2\n3\n")
    monkeypatch.setattr(update, "UPDATE_BYTES", 2_000)
    problem = update_index(pages, out / "index")
    assert problem is not None and problem.startswith("its 0 pages new or changed and 2 gone hold "), problem
    assert _files(out) == before


def test_words_no_other_page_has_count_for_more_than_their_changes(tmp_path, monkeypatch):
    # A reviewer's find: pages of distinct words (gibberish, the letter runs of encoded data) were held at
    # about 240 bytes a word of a page, where the bound counted 27 for each: 2,400 such pages of 2,000
    # words took 2.4 GB under a bound meant to keep an update near a full build's memory.
    pages, out, _ = _indexed(tmp_path)
    count = len([name for name in os.listdir(pages) if name.isdigit()])
    monkeypatch.setattr(update, "UPDATE_BYTES", 400_000)
    # 100 pages of the same 30 words of a real page (3,000 words of a page, 30 distinct): an update.
    words = list(dict.fromkeys((pages / "1").read_text(errors="replace").split()))[:30]
    shared = ("<p>" + " ".join(words) + "</p>").encode()
    for doc_id in range(count + 1, count + 101):
        (pages / str(doc_id)).write_bytes(f"http://h/shared{doc_id}.html\n1\n".encode() + shared + b"\n")
    assert update_index(pages, out / "index") is None
    # One page of 3,000 words no other page has: as many words of a page, held whole, past the bound.
    rng = random.Random(7)
    gibberish = " ".join("".join(rng.choice(string.ascii_lowercase) for _ in range(10)) for _ in range(3_000))
    (pages / str(count + 101)).write_bytes(f"http://h/blob.html\n1\n<p>{gibberish}</p>\n".encode())
    problem = update_index(pages, out / "index")
    assert problem is not None and problem.startswith("its 1 pages new or changed read so far hold about "), problem
    assert "more than an update keeps in memory (0.4 MB)" in problem
