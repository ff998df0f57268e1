import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tse_scrapy.index.storage import IndexReader, read_index, sidecar_path, write_index
from tse_scrapy.rules.files.indexfile import IndexFileError, format_index, looks_like_an_index, parse_index

INDEX = {b"dog": {2: 3, 1: 1}, b"cat": {3: 1, 1: 2}}


def test_text_format_is_sorted():
    assert format_index(INDEX) == b"cat 1 2 3 1\ndog 1 1 2 3\n"


@given(
    st.dictionaries(
        st.from_regex(rb"[a-z]{3,8}", fullmatch=True),
        st.dictionaries(st.integers(1, 10**6), st.integers(1, 10**6), min_size=1),
    )
)
def test_text_round_trip(index):
    assert parse_index(format_index(index)) == index


@pytest.mark.parametrize(
    "text, message",
    [
        (b"cat 1 2\nDog 1 1\n", "x.index:2: not a lowercase word: 'Dog'"),
        (b"cat 1\n", "x.index:1: expected docID count pairs"),
        (b"cat\n", "x.index:1: expected docID count pairs"),
        (b"cat 1 two\n", "x.index:1: not a positive integer: 'two'"),
        (b"cat 0 1\n", "x.index:1: not a positive integer: '0'"),
        (b"cat 1 2 1 3\n", "x.index:1: a docID appears twice"),
        (b"cat 1 2\n\ncat 2 2\n", "x.index:3: the word 'cat' appears on two lines"),
        # A word shown as the UTF-8 it is (decoded as ASCII: 'caf\ufffd\ufffd'), its control characters and the
        # bytes that are no UTF-8 percent-encoded, as a URL's
        ("caf\u00e9 1 1\n".encode(), "x.index:1: not a lowercase word: 'caf\u00e9'"),
        ("Ωμέγα 1 1\n".encode(), "x.index:1: not a lowercase word: 'Ωμέγα'"),
        (b"x\x1b[2J\x9b 1 1\n", "x.index:1: not a lowercase word: 'x%1B[2J%9B'"),
        ("x\u009b 1 1\n".encode(), "x.index:1: not a lowercase word: 'x%C2%9B'"),
        (b"caf\xe9 1 1\n", "x.index:1: not a lowercase word: 'caf%E9'"),
        # A right-to-left override would turn the rest of the line around; a literal % is no escape (a review's)
        ("\u202eevil 1 1\n".encode(), "x.index:1: not a lowercase word: '%E2%80%AEevil'"),
        (b"x%1B 1 1\n", "x.index:1: not a lowercase word: 'x%251B'"),
        ("cat 1 \u00e9\n".encode(), "x.index:1: not a positive integer: '\u00e9'"),
        # Past 18 digits, a page file name's (a review's find: 5,000 digits were a ValueError's traceback
        # from int(), 400 a float's OverflowError in rank=bm25, 30 a 500 of tse serve's SQLite)
        (b"cat 1 1 2 " + b"9" * 19 + b"\n", "x.index:1: a number of more than 18 digits: '9999"),
        (b"cat " + b"7" * 5000 + b" 1\n", "x.index:1: a number of more than 18 digits: '7777"),
    ],
)
def test_malformed_index_names_file_and_line(text, message):
    with pytest.raises(IndexFileError) as error:
        parse_index(text, "x.index")
    assert str(error.value).startswith(message)


def test_a_number_of_18_digits_is_read():
    assert parse_index(b"cat 999999999999999999 999999999999999999\n") == {b"cat": {10**18 - 1: 10**18 - 1}}


def test_blank_lines_and_spacing_are_tolerated():
    assert parse_index(b"cat  1 2\t3 1\n\n") == {b"cat": {1: 2, 3: 1}}


def test_sidecar_is_used_when_it_matches_and_ignored_otherwise(tmp_path):
    path = tmp_path / "x.index"
    write_index(path, INDEX)
    assert read_index(path) == INDEX
    reader = IndexReader(path)
    assert reader.from_sidecar
    assert reader.postings("cat") == {1: 2, 3: 1} and reader.postings("yak") == {}
    path.write_bytes(b"cat 1 5\n")  # the text changed: sidecar stale
    reader = IndexReader(path)
    assert not reader.from_sidecar and reader.postings("cat") == {1: 5}
    sidecar_path(path).write_bytes(b"garbage")
    assert IndexReader(path).postings("cat") == {1: 5}
    os.remove(sidecar_path(path))
    assert IndexReader(path).postings("cat") == {1: 5}


def test_large_numbers_use_four_bytes(tmp_path):
    index = {b"big": {70000: 1, 1: 100000}}
    write_index(tmp_path / "x.index", index)
    reader = IndexReader(tmp_path / "x.index")
    assert reader.from_sidecar and reader.postings("big") == {70000: 1, 1: 100000}


def test_write_is_atomic(tmp_path):
    path = tmp_path / "x.index"
    write_index(path, INDEX)
    (tmp_path / ".x.index.partial").mkdir()  # the temporary file cannot be written
    with pytest.raises(OSError):
        write_index(path, {b"yak": {1: 1}})
    assert read_index(path) == INDEX
    assert IndexReader(path).postings("cat") == {1: 2, 3: 1}


@pytest.mark.parametrize(
    ("start", "whole", "expected"),
    [
        (b"able 8 1\nzebra 2 3\n", True, True),
        (b"\n\n  able 1 2 3 4\n", True, True),  # blank lines first, as the reader skips them
        (b"", True, True),  # empty or blank: nothing to lose
        (b"  \n", True, True),
        (b"able 8 1 9", False, True),  # cut where the read stopped: "9" may go on
        (b"able 8 1 9", True, False),  # whole: an odd number of numbers
        (b"able 8", True, False),
        (b"able\n", True, False),
        (b"Able 8 1\n", True, False),  # not a lowercase word
        (b"able 0 1\n", True, False),  # docIDs from 1
        (b"http://h/1.html\n1\n<html>", True, False),  # a page file
        (b'{"url": "http://h/"}\n', True, False),  # a crawl record
        (b"\x1f\x8b\x08\x00", False, False),  # a gzip (a WARC)
        (b"WARC/1.1\r\nWARC-Type: warcinfo", False, False),
    ],
)
def test_looks_like_an_index(start, whole, expected):
    assert looks_like_an_index(start, whole) is expected


_WORDS = st.binary(min_size=1, max_size=8).map(lambda raw: bytes(97 + byte % 26 for byte in raw))
_POSTINGS = st.dictionaries(st.integers(1, 10**6), st.integers(1, 10**6), min_size=1, max_size=4)


@given(st.dictionaries(_WORDS, _POSTINGS, min_size=1, max_size=5), st.integers(0, 200))
def test_every_index_written_looks_like_one(index, past_its_first_line):
    written = format_index(index)
    assert looks_like_an_index(written, whole=True)
    cut = written[: written.find(b"\n") + 1 + past_its_first_line]  # (a read cut past its first line)
    assert looks_like_an_index(cut, whole=False)
