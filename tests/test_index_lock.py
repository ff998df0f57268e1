"""One `tse index` of an INDEXFILE at a time: a second one (a full build or --update, or `tse indextest`
writing it) started while one writes it exits at once in one line, changing nothing; real processes."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import tempfile
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import BIN, ROOT, clean_env, run_tse
from tests.support.inprocess import tse_here, tse_ok_here
from tests.support.pages import snapshot
from tests.support.searchsite import write_search_site
from tests.support.serving import tse_serve
from tests.support.wait import wait_until, while_running
from tse_scrapy.index.indexlock import IndexLocked, index_lock, lock_path

psutil = pytest.importorskip("psutil")


def refusal(command: str, indexfile: Path, pid: int) -> bytes:
    """The one line of a `tse COMMAND` refused while process *pid* writes *indexfile*."""
    return (
        f"tse {command}: another tse index is writing {indexfile} (process {pid}); try again once it is done\n".encode()
    )


def writers(pages: Path, indexfile: Path) -> list[tuple[str, list[object]]]:
    """Every command that writes *indexfile*, the full build last but one: (its name, its arguments).
    `tse indextest` copies a small index written beside it (made here)."""
    old = indexfile.with_name("old.index")
    old.write_bytes(b"cat 1 1\n")
    return [
        ("indextest", ["indextest", old, indexfile]),
        ("index", ["index", pages, indexfile]),
        ("index", ["index", pages, indexfile, "--update"]),
    ]


def assert_refused(pages: Path, indexfile: Path, holder: int, run=run_tse) -> None:
    """Each writer of *indexfile* exits 1 with one line naming *holder*, and no file beside the index
    changes (not even a time).  At once: a writer that waited for the lock would wait forever here.
    (*run*: ``run_tse``, a process each, or ``tse_here``, in the test's process, for a *holder* that is
    another process: its lock is the kernel's, whoever asks.)"""
    commands = writers(pages, indexfile)
    before = snapshot(indexfile.parent)
    for command, arguments in commands:
        result = run(*arguments, timeout=60) if run is run_tse else run(*arguments)
        assert (result.returncode, result.stdout, result.stderr) == (1, b"", refusal(command, indexfile, holder))
        assert snapshot(indexfile.parent) == before


def assert_whole(pages: Path, indexfile: Path) -> None:
    """*indexfile* is a whole index of *pages*: an update finds its files matching one another and the
    pages, and writes nothing (but its lock file: the update's process ID, then nothing)."""

    def files() -> dict:
        return {name: state for name, state in snapshot(indexfile.parent).items() if name != lock_path(indexfile).name}

    before = files()
    assert tse_ok_here("index", pages, indexfile, "--update") == ""  # (the command's code, in this process)
    assert files() == before


@pytest.fixture
def site(tmp_path) -> tuple[Path, Path]:
    """A small page directory and its index, alone in a directory of its own."""
    return write_search_site(tmp_path)


def write_pages(directory: Path, count: int) -> Path:
    """*count* pages of 5 KB of random words in *directory*/pages."""
    pages = directory / "pages"
    pages.mkdir()
    (pages / ".crawler").touch()
    rng = random.Random(7)
    vocabulary = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(3, 9))) for _ in range(4000)]
    for doc_id in range(1, count + 1):
        text = " ".join(rng.choices(vocabulary, k=700))
        (pages / str(doc_id)).write_bytes(f"http://h/{doc_id}\n1\n<p>{text}</p>\n".encode())
    return pages


@pytest.fixture(scope="module")
def many_pages() -> Iterator[Path]:
    """1,500 pages of 5 KB: `tse index --jobs 2` of them keeps both workers alive, one at work on a
    range, long enough to stop them there (ranges of 500 handed out two a worker at once: one worker
    has a second range still to do once the first ones have written their runs)."""
    with tempfile.TemporaryDirectory() as name:
        yield write_pages(Path(name), 1500)


@pytest.fixture(scope="module")
def pages_for_a_second() -> Iterator[Path]:
    """300 pages of 5 KB: `tse index` of them writes for half a second of CPU or more (its lock is
    taken before it reads a page), time to stop it mid-work: the test looks every hundredth of a
    second.  (500 before: each of the test's four builds of them took two fifths longer.)"""
    with tempfile.TemporaryDirectory() as name:
        yield write_pages(Path(name), 300)


@contextlib.contextmanager
def tse_index_holding_the_lock(pages: Path, indexfile: Path, *flags: str) -> Iterator[subprocess.Popen]:
    """A real `tse index PAGES INDEXFILE` (and *flags*) in a process group of its own, stopped (SIGSTOP,
    its workers too) once its lock file names it: it holds the lock and is writing.  On leaving it goes
    on (SIGCONT); on an error its group is killed."""
    command = [str(BIN / "tse"), "index", str(pages), str(indexfile), *flags]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(), cwd=ROOT, start_new_session=True
    )
    holding = f"{process.pid} tse index\n".encode()

    def holds_the_lock() -> bool:
        return lock_path(indexfile).is_file() and lock_path(indexfile).read_bytes() == holding

    try:
        wait_until(while_running(process, holds_the_lock, "taking the lock"), 60, "tse index never took the lock")
        os.killpg(process.pid, signal.SIGSTOP)
        assert process.poll() is None and holds_the_lock()  # stopped before it was done
        yield process
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise
    with contextlib.suppress(ProcessLookupError):  # (killed by the test: its workers are)
        os.killpg(process.pid, signal.SIGCONT)


def test_while_tse_index_writes_another_one_is_refused_at_once_and_changes_nothing(pages_for_a_second, tmp_path):
    # The holder a full build, then an update of the index it wrote (one build fewer than an index made
    # for the update alone).
    pages = pages_for_a_second
    indexfile = tmp_path / "out" / "index"
    indexfile.parent.mkdir()
    for holder in ("a full build", "an update"):
        flags: list[str] = []
        if holder == "an update":  # of two pages in three: they look changed (more would be a full build)
            for page in pages.iterdir():
                if page.name != ".crawler" and int(page.name) % 3:
                    os.utime(page, ns=(0, page.stat().st_mtime_ns + 10**9))
            flags = ["--update"]
        other_index = tmp_path / f"other-{len(flags)}"
        with tse_index_holding_the_lock(pages, indexfile, *flags) as first:
            # The refusals of the full build's holder as processes; of the update's, in the test's process
            # (the same code: the holder is another process either way).
            assert_refused(pages, indexfile, first.pid, run_tse if holder == "a full build" else tse_here)
            # Another INDEXFILE is not held: its tse index runs meanwhile.
            assert tse_ok_here("index", pages, other_index, "--jobs", "1") == "", holder  # (in this process)
        assert first.communicate(timeout=120) == (b"", b""), holder
        assert first.returncode == 0, holder
        assert lock_path(indexfile).read_bytes() == b"", holder  # emptied, left in place
        assert_whole(pages, indexfile)  # the first run's index, whole; the next run succeeds
        assert indexfile.read_bytes() == other_index.read_bytes(), holder


def test_the_lock_held_through_the_module_refuses_every_writer_then_lets_the_next_one_write(site):
    pages, indexfile = site
    with index_lock(indexfile):
        assert lock_path(indexfile).read_bytes() == f"{os.getpid()} tse index\n".encode()
        assert_refused(pages, indexfile, os.getpid())
        with pytest.raises(IndexLocked) as refused, index_lock(indexfile):  # in this process too
            pass
        assert str(refused.value) == (
            f"another tse index is writing {indexfile} (process {os.getpid()}); try again once it is done"
        )
    assert lock_path(indexfile).read_bytes() == b""
    for _, arguments in writers(pages, indexfile):  # (the refusals were processes: these in the test's)
        result = tse_here(*arguments)
        assert (result.returncode, result.stderr) == (0, b"")
    assert_whole(pages, indexfile)


def test_a_lock_file_that_does_not_say_who_holds_it_is_a_refusal_all_the_same(site):
    pages, indexfile = site
    with index_lock(indexfile):
        lock_path(indexfile).write_bytes(b"\xff not a process\n")
        result = run_tse("index", pages, indexfile, "--update")
    assert (result.returncode, result.stderr.decode()) == (
        1,
        f"tse index: another process is writing {indexfile}; try again once it is done\n",
    )


def test_indexes_of_two_indexfiles_do_not_block_each_other(site, tmp_path):
    pages, indexfile = site
    other = tmp_path / "other.index"
    with index_lock(indexfile), index_lock(other.with_name("third.index")):  # two locks at once in one process
        result = tse_here("index", pages, other)  # (in the test's process; the refusal below a process)
        assert (result.returncode, result.stderr) == (0, b"")
        assert run_tse("index", pages, indexfile).stderr == refusal("index", indexfile, os.getpid())
    assert other.read_bytes() == indexfile.read_bytes()


def get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.loads(response.read())


def test_readers_take_no_lock(site):
    pages, indexfile = site
    with index_lock(indexfile):
        query = run_tse("query", pages, indexfile, input=b"cat\n")
        assert query.returncode == 0 and b"Matches" in query.stdout, query.stderr
        serve = [str(BIN / "tse"), "serve", str(pages), str(indexfile), "--workers", "1"]
        with tse_serve(serve, clean_env(), ROOT) as run:
            assert get_json(f"{run.base}/api/search?q=cat")["total"] > 0
    assert run.process.returncode == 0, run.stderr


def _workers_without_the_lock(pid: int, indexfile: Path, seen: list[str]) -> list | None:
    """The two worker processes of the tse index *pid*, once a range is at work and neither has
    *indexfile*'s lock file open; else None, and what was seen instead last in *seen*."""
    try:
        children = psutil.Process(pid).children()
        runs = list(indexfile.parent.glob(".index.*.runs/run-*"))
        lock = str(lock_path(indexfile))
        holding = [child.pid for child in children if lock in (file.path for file in child.open_files())]
        statuses = [child.status() for child in children]
    except psutil.Error as error:  # (one ending or starting)
        seen[:] = [repr(error)]
        return None
    if len(children) == 2 and runs and not holding:
        return children
    seen[:] = [f"{len(children)} children {statuses}, {len(runs)} run files, {holding=}"]
    return None


def test_a_tse_index_killed_leaves_no_lock_even_with_its_workers_alive(many_pages, tmp_path):
    # A forked worker has a copy of the lock's descriptor: it must not keep the lock once its parent is gone.
    indexfile = tmp_path / "out" / "index"
    indexfile.parent.mkdir()
    with tse_index_holding_the_lock(many_pages, indexfile, "--jobs", "2") as first:
        try:
            os.killpg(first.pid, signal.SIGCONT)
            # Both workers started and at work, their copies of the lock dropped (a worker stopped between its
            # fork and that would keep the lock: the test's doing, not tse index's).
            seen: list[str] = []

            def at_work() -> list | None:
                # (Continued again each time: the test's stop can land on a worker as it is forked, after
                # its parent has taken it, which left it stopped for good under load.)
                os.killpg(first.pid, signal.SIGCONT)
                return _workers_without_the_lock(first.pid, indexfile, seen)

            try:
                workers = wait_until(at_work, 60, "no two workers")
            except AssertionError as error:
                raise AssertionError(f"{error}; last seen: {seen}") from None
            os.killpg(first.pid, signal.SIGSTOP)  # the workers stay, stopped, as long as the test needs
            first.kill()  # kill -9 of tse index itself
            assert first.wait(timeout=30) == -signal.SIGKILL
            assert all(worker.is_running() for worker in workers)
            result = run_tse("index", many_pages, indexfile, "--jobs", "1", timeout=120)
            assert (result.returncode, result.stderr) == (0, b"")
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(first.pid, signal.SIGKILL)  # the workers
    first.communicate(timeout=30)  # (its pipes, once its workers are gone too)
    assert_whole(many_pages, indexfile)
