"""`tse index` and `tse indextest` replace only an index (or an empty file, or nothing), and a `tse index`
holding the lock removes the temporary directories a killed one left beside its INDEXFILE; real
processes, real files."""

from __future__ import annotations

import contextlib
import gzip
import os
import signal
import subprocess
from pathlib import Path

import pytest

from tests.conftest import BIN, ROOT, clean_env, run_tse
from tests.support.inprocess import tse_here
from tests.support.pages import snapshot, write_many_pages, write_pages
from tests.support.wait import wait_until, while_running

PAGES = {1: ("http://h/a.html", 0, b"<p>hello world</p>"), 2: ("http://h/b.html", 1, b"<p>hello there</p>")}
# The index of PAGES, as SPEC 3 writes it (sorted).
PAGES_INDEX = b"hello 1 1 2 1\nthere 2 1\nworld 1 1\n"

WARC = gzip.compress(
    b"WARC/1.1\r\nWARC-Type: warcinfo\r\nWARC-Record-ID: <urn:uuid:1>\r\nContent-Length: 0\r\n\r\n\r\n\r\n"
)
# Files that are not indexes, which the index would have replaced: their name and bytes.
NOT_INDEXES = {
    "keep.warc.gz": WARC,
    "crawl.jsonl": b'{"url": "http://h/a.html", "status": 200}\n',
    "notes.txt": b"things to do\nindex the site\n",
    "words.txt": b"hello world\n",  # words, no docID count pairs
    "odd.txt": b"hello 1 1 2\n",  # a docID without its count
    "upper.txt": b"Hello 1 1\n",  # not a lowercase word
    "zero.txt": b"hello 0 1\n",  # not a positive docID
    "binary.bin": bytes(range(256)),
}


def refusal(command: str, path: Path) -> bytes:
    return (
        f"tse {command}: {path} exists and is not an index (its first line is no 'word docID count ...'): "
        "it is left as it is; write the index elsewhere, or remove it first\n"
    ).encode()


@pytest.fixture
def pages(tmp_path: Path) -> Path:
    return write_pages(tmp_path / "pages", PAGES)


@pytest.mark.parametrize("name", sorted(NOT_INDEXES))
def test_index_and_indextest_refuse_to_replace_a_file_that_is_not_an_index(tmp_path, pages, name):
    out = tmp_path / "out"
    out.mkdir()
    target = out / name
    target.write_bytes(NOT_INDEXES[name])
    old = tmp_path / "old.index"
    old.write_bytes(b"cat 1 1\n")
    before = snapshot(out)
    # The commands themselves for the first name; their code in this process for the others (the check of
    # what INDEXFILE may replace is the point, and it is the same code).
    run = run_tse if name == sorted(NOT_INDEXES)[0] else tse_here
    for command, arguments in (("index", [pages, target]), ("indextest", [old, target])):
        result = run(command, *arguments)
        assert (result.returncode, result.stdout, result.stderr) == (1, b"", refusal(command, target))
        assert snapshot(out) == before  # nothing written: not the file, no sidecar, store or lock beside it


def test_index_refuses_to_replace_a_page_of_another_crawl(tmp_path, pages):
    """`tse index p1 p2/1`: p2's page 1 stays, and nothing is added to p2.  (Said as what it is, a page
    file, since tse index checks INDEXFILE with indextest's rule: it was "exists and is not an index".)"""
    other = write_pages(tmp_path / "other", {1: ("http://h/other.html", 0, b"<p>other</p>")})
    before = snapshot(other)
    result = run_tse("index", pages, other / "1", timeout=60)
    said = f"tse index: {other / '1'} is a page file of the page directory {other}: write the index elsewhere\n"
    assert (result.returncode, result.stdout, result.stderr) == (1, b"", said.encode())
    assert snapshot(other) == before


def test_index_refuses_another_crawls_own_files_that_are_empty_or_not_there_yet(tmp_path, pages):
    """`tse index p1 p2/.crawler` (empty, as a crawl leaves it), `p2/3` (p2's next page) or `p2/.tse-charsets`
    (a directory a crawl makes there): refused as `tse indextest` refuses them, p2 left as it was (before,
    the index was written there: a tester's find)."""
    other = write_pages(tmp_path / "other", {1: ("http://h/", 0, b"<p>one</p>"), 2: ("http://h/2", 1, b"<p>2</p>")})
    before = snapshot(other)
    for name, said in (
        (".crawler", f"is the marker of the page directory {other}"),
        ("3", f"is a page file of the page directory {other}"),
        (".tse-charsets", f"is one of the page directory {other}'s own files"),
    ):
        for update in ([], ["--update"]):
            # (The command for the first; its code in this process for the others: the messages are the point.)
            first = name == ".crawler" and not update
            result = (
                run_tse("index", pages, other / name, timeout=60)
                if first
                else tse_here("index", pages, other / name, *update)
            )
            expected = f"tse index: {other / name} {said}: write the index elsewhere\n".encode()
            assert (result.returncode, result.stdout, result.stderr) == (1, b"", expected)
    assert snapshot(other) == before


def big_first_line() -> bytes:
    """An index whose first line is longer than what is read of it (a word in 20,000 pages)."""
    return b"aaa " + b" ".join(b"%d 1" % doc_id for doc_id in range(1, 20_001)) + b"\nzebra 3 2\n"


# Existing files the index replaces: its own output, the reference's (unsorted, blank line, spaces), one
# whose first line is long, and an empty one.
INDEXES = {
    "ours.index": b"pear 1 1\nplum 2 3\n",
    "reference.index": b"\nworld 9 1 \nhello  2 1 1 3\n",
    "long.index": big_first_line(),
    "empty.index": b"",
    "blank.index": b"\n\n",
}


@pytest.mark.parametrize("name", sorted(INDEXES))
def test_an_index_or_an_empty_file_is_replaced_as_before(tmp_path, pages, name):
    target = tmp_path / name
    target.write_bytes(INDEXES[name])
    # The commands themselves for the first name; their code in this process for the others (what INDEXFILE
    # may replace is the point, and it is the same code).
    run = run_tse if name == sorted(INDEXES)[0] else tse_here
    result = run("index", pages, target)
    assert (result.returncode, result.stderr) == (0, b"")
    assert target.read_bytes() == PAGES_INDEX
    target.write_bytes(INDEXES[name])
    old = tmp_path / "old.index"
    old.write_bytes(b"cat 1 1\n")
    result = run("indextest", old, target)
    assert (result.returncode, result.stderr) == (0, b"")
    assert target.read_bytes() == b"cat 1 1\n"


def test_an_index_of_another_page_directory_is_rebuilt(tmp_path, pages):
    other = write_pages(tmp_path / "other", {1: ("http://h/other.html", 0, b"<p>other words</p>")})
    target = tmp_path / "shared.index"
    assert run_tse("index", other, target, timeout=60).returncode == 0
    assert target.read_bytes() == b"other 1 1\nwords 1 1\n"
    result = run_tse("index", pages, target, timeout=60)
    assert (result.returncode, result.stderr) == (0, b"")
    assert target.read_bytes() == PAGES_INDEX
    result = run_tse("index", pages, target, timeout=60)  # and again, over its own
    assert (result.returncode, result.stderr) == (0, b"")
    assert target.read_bytes() == PAGES_INDEX


@pytest.fixture(scope="module")
def many_pages(tmp_path_factory) -> Path:
    """2,000 pages of 6 KB: `tse index --jobs 2` takes a second or more, time to kill it mid-work (it is
    killed once a run is written: after a worker's first range of 500, with three more to go)."""
    return write_many_pages(tmp_path_factory.mktemp("many") / "pages", 2000)


def killed_mid_work(pages: Path, indexfile: Path) -> None:
    """`tse index --jobs 2` killed with SIGKILL (it and its workers) once it has written a run (in a
    temporary directory of its own: not one left before)."""
    before = set(runs_directories(indexfile.parent))

    def its_run() -> bool:
        try:
            runs = list(indexfile.parent.glob(f".{indexfile.name}.*.runs/run-*"))
        except FileNotFoundError:  # (the killed one's directory, removed by this one as the glob read it)
            return False
        return any(path.parent.name not in before for path in runs)

    process = subprocess.Popen(
        [str(BIN / "tse"), "index", str(pages), str(indexfile), "--jobs", "2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=clean_env(),
        cwd=ROOT,
        start_new_session=True,
    )
    try:
        wait_until(
            while_running(process, its_run, "a run"),
            60,
            "tse index never wrote a run",
        )
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)


def runs_directories(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.iterdir() if path.name.endswith(".runs"))


def test_the_next_index_removes_what_killed_ones_left_beside_its_indexfile(tmp_path, many_pages, pages):
    out = tmp_path / "out"
    out.mkdir()
    indexfile = out / "index"
    killed_mid_work(many_pages, indexfile)
    first = runs_directories(out)
    assert len(first) == 1 and any((out / first[0]).iterdir()), first
    # Killed again: that one had removed the first one's before making its own (they used to pile up).
    killed_mid_work(many_pages, indexfile)
    second = runs_directories(out)
    assert len(second) == 1 and second != first and any((out / second[0]).iterdir()), (first, second)
    # Not its own: another INDEXFILE's (index.more, other.index), and names not made by tse index.
    others = [".index.more.abcd1234.runs", ".other.index.abcd1234.runs", ".index.mine.runs", ".index.ABCD1234.runs"]
    for name in others:
        (out / name).mkdir()
        (out / name / "run-1").write_bytes(b"kept")
    (out / ".index.file1234.runs").write_bytes(b"a file, not a directory")
    result = run_tse("index", pages, indexfile, timeout=60)  # (the small directory: the same INDEXFILE)
    assert (result.returncode, result.stderr) == (0, b"")  # (silently)
    assert indexfile.read_bytes() == PAGES_INDEX
    assert runs_directories(out) == sorted([*others, ".index.file1234.runs"])
    for name in others:
        assert (out / name / "run-1").read_bytes() == b"kept"
    assert sorted(path.name for path in out.iterdir() if not path.name.endswith(".runs")) == [
        "index",
        "index.bin",
        "index.docs",
        "index.lock",
        "index.search",
        "index.stamp",
    ]
