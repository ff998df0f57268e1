import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tse_scrapy.index.storage import IndexReader, read_index, sidecar_path, write_index
from tse_scrapy.rules.files.indexfile import IndexFileError, format_index, parse_index

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
    ],
)
def test_malformed_index_names_file_and_line(text, message):
    with pytest.raises(IndexFileError) as error:
        parse_index(text, "x.index")
    assert str(error.value).startswith(message)


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
