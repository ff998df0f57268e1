"""Review Q's finds (SPEC fidelity, the SPEC index's programs), each mended and checked here."""

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import crawl_site, run_tse
from tests.support.sitegen import write_site
from tse_scrapy.rules.files import pagedir
from tse_scrapy.rules.files.indexfile import format_index, looks_like_an_index

# A run of letters longer than what is read of an existing INDEXFILE to tell an index (64 KiB): the
# first word of the sorted index, whole on its first line.
LONG_WORD = b"a" * 70_000


def test_tse_index_rewrites_its_own_index_whose_first_word_is_longer_than_the_read(tmp_path):
    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / ".crawler").touch()
    (pages / "1").write_bytes(b"http://h/\n0\n<p>" + LONG_WORD + b" kept</p>\n")
    index = tmp_path / "out.index"
    first = run_tse("index", pages, index)
    assert first.returncode == 0, first.stderr.decode()
    assert index.read_bytes() == LONG_WORD + b" 1 1\nkept 1 1\n"
    (pages / "2").write_bytes(b"http://h/2\n0\nkept again\n")
    # Indexed again (the crawl went on): it was refused as "not an index", left as it was.
    second = run_tse("index", pages, index)
    assert second.returncode == 0, second.stderr.decode()
    assert second.stderr == b""
    assert index.read_bytes() == LONG_WORD + b" 1 1\nagain 2 1\nkept 1 1 2 1\n"
    copied = run_tse("indextest", index, index)
    assert copied.returncode == 0, copied.stderr.decode()
    assert index.read_bytes() == LONG_WORD + b" 1 1\nagain 2 1\nkept 1 1 2 1\n"


_WORDS = st.binary(min_size=1, max_size=8).map(lambda raw: bytes(97 + byte % 26 for byte in raw))
_POSTINGS = st.dictionaries(st.integers(1, 10**6), st.integers(1, 10**6), min_size=1, max_size=4)


@given(st.dictionaries(_WORDS, _POSTINGS, min_size=1, max_size=5), st.integers(1, 400))
def test_every_start_of_an_index_written_looks_like_one(index, read):
    """However short the read of its start (in its first word, after it, in a number)."""
    written = format_index(index)
    start = written[:read]
    assert looks_like_an_index(start, whole=len(start) == len(written))


def test_tse_crawl_never_empties_the_file_a_crawler_marker_links_to(tmp_path, serve):
    server = serve(write_site(tmp_path / "site", {"index.html": ["a.html"], "a.html": []}).root)
    victim = tmp_path / "notes.txt"  # a user's file, elsewhere
    victim.write_text("precious\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / ".crawler").symlink_to(victim)  # (a directory others may write to, an archive unpacked)
    result = crawl_site(server, out, 1)
    assert victim.read_text() == "precious\n"  # it was emptied, and the crawl went on
    assert result.returncode == 2  # (refused with the arguments, before anything is written)
    assert result.stderr.decode().splitlines()[-1] == (
        f"tse crawl: cannot create {out}/.crawler: it is a symbolic link (the file it names is left as it is)"
    )
    assert not any(pagedir.is_page_name(name) for name in os.listdir(out))
    assert os.path.islink(out / ".crawler")


def test_mark_refuses_a_marker_that_is_a_link_and_keeps_a_regular_one(tmp_path):
    victim = tmp_path / "victim"
    victim.write_bytes(b"kept")
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / ".crawler").symlink_to(victim)
    with pytest.raises(OSError, match="symbolic link"):
        pagedir.mark(linked)
    assert victim.read_bytes() == b"kept"
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / ".crawler").write_bytes(b"junk")
    pagedir.mark(plain)  # emptied, as before
    assert (plain / ".crawler").read_bytes() == b""
    pagedir.mark(tmp_path)  # created
    assert (tmp_path / ".crawler").read_bytes() == b""
