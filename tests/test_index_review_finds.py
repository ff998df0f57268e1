"""A reviewer's finds in `tse index`, `tse indextest` and `tse query`, each mended: real files, real
processes (a command that could read without end runs in a process of its own, under a memory bound
and a time-out).

1. A symbolic or hard link at the index's lock file or at one of its temporary ``.NAME.partial`` files
   was written through: the file it led to (a page file, anything) truncated or filled with the index.
2. An INDEXFILE (or OLDINDEX) that is a device or a FIFO was read without end or waited on for ever,
   and a file of NULs made a message of megabytes.
3. A directory at a name of the index's files (.bin, .stamp, .docs, .search) was found only when the
   files were renamed into place, others replaced already, and said as the search index's
   "connection has been closed"."""

from __future__ import annotations

import os
import resource
import shutil
import stat
from pathlib import Path

import pytest

from tests.conftest import run_tse
from tests.support.inprocess import tse_here, tse_ok_here
from tests.support.pages import snapshot
from tests.support.searchsite import write_search_site
from tse_scrapy.atomicfile import partial_path, write_atomically
from tse_scrapy.index.indexer import write_index_files
from tse_scrapy.rules.files import pagedir
from tse_scrapy.rules.files.indexfile import INDEX_FILE

PRECIOUS = b"precious: not the index's\n"
# The files of an index beside INDEXFILE, by their suffixes.
BESIDE = (".bin", ".stamp", ".docs", ".search")
# What a command that could read without end may take: the reader of /dev/zero stops at it.
MEMORY_BOUND = 1 << 30


@pytest.fixture(scope="module")
def built_site(tmp_path_factory) -> Path:
    """The directory of a small page directory and its index, made once (copied by ``site``)."""
    root = tmp_path_factory.mktemp("built")
    write_search_site(root)
    return root


@pytest.fixture
def site(built_site, tmp_path) -> tuple[Path, Path]:
    """A small page directory and its index (``index``), alone in a directory of their own."""
    root = shutil.copytree(built_site, tmp_path / "site", symlinks=True)
    return root / "pages", root / "index"


def link(kind: str, target: Path, name: Path) -> None:
    """A link of *kind* ("symbolic" or "hard") to *target* at *name*."""
    if kind == "symbolic":
        name.symlink_to(os.path.relpath(target, name.parent))
    else:
        os.link(target, name)


def assert_untouched(target: Path, before: bytes) -> None:
    assert target.read_bytes() == before
    assert target.stat().st_nlink == 1  # (the hard link made to it is gone, not written)


# 1. Links at the lock file and at the temporary files


@pytest.mark.parametrize("kind", ["symbolic", "hard"])
@pytest.mark.parametrize("command", ["index", "index --update", "indextest"])
def test_a_link_at_the_lock_file_is_refused_and_what_it_leads_to_is_left_as_it_is(site, kind, command):
    pages, built = site
    indexfile = built.parent / "x.idx"
    if command == "index --update":  # (an index there to update)
        tse_ok_here("index", pages, indexfile)
        (indexfile.parent / "x.idx.lock").unlink()
    page = pages / "1"
    before = page.read_bytes()
    link(kind, page, indexfile.parent / "x.idx.lock")
    arguments = {
        "index": ["index", pages, indexfile],
        "index --update": ["index", pages, indexfile, "--update"],
        "indextest": ["indextest", built, indexfile],
    }[command]
    files = snapshot(built.parent)
    done = tse_here(*arguments)
    what = (
        "a symbolic link" if kind == "symbolic" else "a regular file with 2 links (a hard link: another name of a file)"
    )
    name = command.split()[0]
    assert (done.returncode, done.stdout, done.stderr.decode()) == (
        1,
        b"",
        f"tse {name}: the index's lock file {indexfile}.lock is {what}, not written through: remove it, then run"
        " again\n",
    )
    assert snapshot(built.parent) == files  # nothing written, the page file neither
    assert page.read_bytes() == before


@pytest.mark.parametrize("kind", ["symbolic", "hard"])
@pytest.mark.parametrize(
    "name", [".x.idx.partial", ".x.idx.bin.partial", ".x.idx.stamp.partial", ".x.idx.search.partial"]
)
def test_a_link_at_a_temporary_file_of_a_build_is_not_written_through(site, kind, name):
    pages, built = site
    precious = built.parent / "precious.txt"
    precious.write_bytes(PRECIOUS)
    link(kind, precious, built.parent / name)
    indexfile = built.parent / "x.idx"
    tse_ok_here("index", pages, indexfile)
    assert_untouched(precious, PRECIOUS)
    assert not os.path.lexists(built.parent / name)
    for suffix in ("", *BESIDE):
        assert stat.S_ISREG(os.lstat(f"{indexfile}{suffix}").st_mode), suffix
    # The index is the pages' (the reference build beside it, of the same pages).
    assert indexfile.read_bytes() == built.read_bytes()
    assert Path(f"{indexfile}.bin").read_bytes() == Path(f"{built}.bin").read_bytes()
    assert tse_ok_here("index", pages, indexfile, "--update") == ""  # its files match one another and the pages


@pytest.mark.parametrize("kind", ["symbolic", "hard"])
def test_a_link_at_the_search_index_s_temporary_copy_of_an_update_is_not_written_through(site, kind):
    pages, built = site
    precious = built.parent / "precious.txt"
    precious.write_bytes(PRECIOUS)
    page = pages / "3"
    page.write_bytes(page.read_bytes() + b"<p>zebra</p>")  # (a change for the update to make)
    link(kind, precious, built.parent / ".index.search.partial")
    tse_ok_here("index", pages, built, "--update")
    assert_untouched(precious, PRECIOUS)
    assert stat.S_ISREG(os.lstat(f"{built}.search").st_mode)
    assert tse_here("query", pages, built, "--rank", "relevance", input=b"zebra\n").stdout.count(b"doc   3:") == 1


@pytest.mark.parametrize("kind", ["symbolic", "hard"])
def test_a_link_at_indextest_s_temporary_file_is_not_written_through(site, kind):
    _, built = site
    precious = built.parent / "precious.txt"
    precious.write_bytes(PRECIOUS)
    link(kind, precious, built.parent / ".new.idx.partial")
    tse_ok_here("indextest", built, built.parent / "new.idx")
    assert_untouched(precious, PRECIOUS)
    assert (built.parent / "new.idx").read_bytes() == built.read_bytes()


@pytest.mark.parametrize("kind", ["symbolic", "hard"])
def test_the_crawler_s_page_files_do_not_write_through_a_link_at_their_temporary_name(tmp_path, kind):
    # The crawler's writer of page files (and of .tse-gone, changes files ...): write_atomically.
    directory = tmp_path / "pages"
    directory.mkdir()
    precious = tmp_path / "precious.txt"
    precious.write_bytes(PRECIOUS)
    link(kind, precious, partial_path(directory / "1"))
    page = pagedir.Page(url="http://h/a.html", depth=0, body=b"<p>a</p>")
    pagedir.write_page(directory, 1, page)
    assert_untouched(precious, PRECIOUS)
    assert pagedir.read_page(directory, 1) == page
    assert not os.path.lexists(partial_path(directory / "1"))
    # and a directory there is an error, nothing written
    os.mkdir(partial_path(directory / "2"))
    with pytest.raises(IsADirectoryError):
        write_atomically(directory / "2", b"two")
    assert not (directory / "2").exists()


# 2. An index that is a device or a FIFO


def bounded() -> None:
    """(In the child, before it runs tse:) its memory bounded."""
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BOUND, MEMORY_BOUND))


@pytest.mark.parametrize("command", ["indextest", "query"])
def test_an_index_that_is_a_device_is_refused_in_one_line(site, command):
    pages, built = site
    arguments = (
        ["indextest", "/dev/zero", built.parent / "out.idx"]
        if command == "indextest"
        else ["query", pages, "/dev/zero"]
    )
    done = run_tse(*arguments, input=b"cat\n", timeout=60, preexec_fn=bounded)
    assert (done.returncode, done.stdout, done.stderr) == (
        1,
        b"",
        f"tse {command}: /dev/zero: a character device, not a regular file\n".encode(),
    )
    assert not os.path.lexists(built.parent / "out.idx")


@pytest.mark.parametrize("command", ["indextest", "query"])
def test_an_index_that_is_a_fifo_is_refused_at_once(site, command):
    pages, built = site
    fifo = built.parent / "fifo"
    os.mkfifo(fifo)
    arguments = ["indextest", fifo, built.parent / "out.idx"] if command == "indextest" else ["query", pages, fifo]
    done = run_tse(*arguments, input=b"cat\n", timeout=60, preexec_fn=bounded)
    assert (done.returncode, done.stdout, done.stderr) == (
        1,
        b"",
        f"tse {command}: {fifo}: a FIFO, not a regular file\n".encode(),
    )


@pytest.mark.parametrize("suffix", [".bin", ".stamp"])
def test_a_fifo_at_the_sidecar_or_the_stamp_is_no_sidecar_nor_stamp(site, suffix):
    pages, built = site
    Path(f"{built}{suffix}").unlink()
    os.mkfifo(f"{built}{suffix}")
    done = run_tse("query", pages, built, input=b"dog\n", timeout=60, preexec_fn=bounded)
    assert done.returncode == 0, done.stderr
    assert b"doc   2: http://h/dogs.html" in done.stdout


def test_a_bad_token_is_shown_cut(site):
    _, built = site
    nuls = built.parent / "nuls"
    nuls.write_bytes(bytes(3_000_000))
    done = tse_here("indextest", nuls, built.parent / "out.idx")
    # Its first 40 characters, each percent-encoded, then "…".
    shown = "%00" * 40 + "…"
    assert (done.returncode, done.stderr.decode()) == (1, f"tse indextest: {nuls}:1: not a lowercase word: '{shown}'\n")
    # A token of 40 characters is shown whole, one of 41 cut; a character is not cut within its bytes.
    for token, said in [("é" * 40, "é" * 40), ("é" * 41, "é" * 40 + "…"), ("a" * 39 + "Ω" * 3, "a" * 39 + "Ω…")]:
        nuls.write_bytes(f"cat 1 1\n{token} 1 1\n".encode())
        done = tse_here("indextest", nuls, built.parent / "out.idx")
        assert done.stderr.decode() == f"tse indextest: {nuls}:2: not a lowercase word: '{said}'\n"


# 3. A directory at a name of the index's files


@pytest.mark.parametrize("suffix", BESIDE)
@pytest.mark.parametrize("update", [False, True])
def test_a_directory_at_a_name_of_the_index_s_files_is_refused_before_anything_is_written(site, suffix, update):
    pages, built = site
    page = pages / "3"
    page.write_bytes(page.read_bytes() + b"<p>zebra</p>")  # (a change for an update to make)
    Path(f"{built}{suffix}").unlink()
    os.mkdir(f"{built}{suffix}")
    files = snapshot(built.parent)
    done = tse_here("index", pages, built, *(["--update"] if update else []))
    assert (done.returncode, done.stdout, done.stderr.decode()) == (
        1,
        b"",
        f"tse index: {built}{suffix} is a directory, where a file of the index goes: remove it first\n",
    )
    assert snapshot(built.parent) == files


def test_the_index_s_files_beside_it_are_its_sidecar_stamp_store_and_search_index():
    from tse_scrapy.fulltext.store import SEARCH_SUFFIX
    from tse_scrapy.index.docstore import DOCS_SUFFIX
    from tse_scrapy.index.storage import SIDECAR_SUFFIX, STAMP_SUFFIX

    assert set(INDEX_FILE.beside) == {SIDECAR_SUFFIX, STAMP_SUFFIX, DOCS_SUFFIX, SEARCH_SUFFIX}


def test_a_file_that_cannot_be_put_in_place_is_named_with_its_error(site):
    # A directory made at the sidecar's name after tse index's check (here: the indexer called as it
    # calls it, without the check): the error is the rename's, naming the sidecar, not the search
    # index's closed connection.
    pages, built = site
    indexfile = built.parent / "z.idx"
    os.mkdir(f"{indexfile}.bin")
    with pytest.raises(IsADirectoryError) as raised:
        write_index_files(pages, indexfile)
    assert raised.value.filename == f"{indexfile}.bin"
    assert not [name for name in os.listdir(built.parent) if name.endswith(".partial")]


@pytest.mark.parametrize("kind", ["symbolic", "hard"])
@pytest.mark.parametrize("name", [".index.partial", ".index.bin.partial"])
def test_a_link_at_a_temporary_file_of_an_update_is_not_written_through(site, kind, name):
    pages, built = site
    precious = built.parent / "precious.txt"
    precious.write_bytes(PRECIOUS)
    page = pages / "3"
    page.write_bytes(page.read_bytes() + b"<p>zebra</p>")  # (a change for the update to make)
    link(kind, precious, built.parent / name)
    tse_ok_here("index", pages, built, "--update")
    assert_untouched(precious, PRECIOUS)
    for suffix in ("", *BESIDE):
        assert stat.S_ISREG(os.lstat(f"{built}{suffix}").st_mode), suffix
    assert b"zebra 3 1\n" in built.read_bytes()
