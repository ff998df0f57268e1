import os

import pytest
from hypothesis import given, strategies as st

from tse_scrapy import pagedir
from tse_scrapy.pagedir import Page


def test_page_file_format(tmp_path):
    pagedir.write_page(tmp_path, 1, Page("http://h/x.html", 2, b"<html>\r\nbody"))
    assert (tmp_path / "1").read_bytes() == b"http://h/x.html\n2\n<html>\r\nbody\n"


@given(st.text(alphabet=st.characters(blacklist_characters="\n", blacklist_categories=["Cs"])),
       st.integers(0, 10), st.binary())
def test_encode_decode_round_trip(url, depth, body):
    assert pagedir.decode_page(pagedir.encode_page(Page(url, depth, body))) == Page(url, depth, body)


@pytest.mark.parametrize("data", [b"", b"http://h/\n", b"http://h/\nx\nbody\n", b"http://h/\n1\nno newline"])
def test_decode_rejects_malformed(data):
    with pytest.raises(ValueError):
        pagedir.decode_page(data)


def test_marker_and_count(tmp_path):
    assert not pagedir.is_page_directory(tmp_path)
    pagedir.mark(tmp_path)
    assert pagedir.is_page_directory(tmp_path)
    assert (tmp_path / ".crawler").read_bytes() == b""
    for i in (1, 2, 4):
        pagedir.write_page(tmp_path, i, Page("u", 0, b""))
    assert pagedir.page_count(tmp_path) == 2
    assert pagedir.read_page(tmp_path, 2) == Page("u", 0, b"")


def test_failed_write_leaves_no_file(tmp_path):
    (tmp_path / "3").mkdir()   # the final name cannot be replaced
    with pytest.raises(OSError):
        pagedir.write_page(tmp_path, 3, Page("u", 0, b"x" * 1000))
    assert sorted(os.listdir(tmp_path)) == ["3"]
    assert (tmp_path / "3").is_dir()


def test_write_replaces_atomically(tmp_path):
    pagedir.write_page(tmp_path, 1, Page("old", 0, b"old"))
    pagedir.write_page(tmp_path, 1, Page("new", 1, b"new"), fsync=True)
    assert pagedir.read_page(tmp_path, 1) == Page("new", 1, b"new")
    assert os.listdir(tmp_path) == ["1"]
